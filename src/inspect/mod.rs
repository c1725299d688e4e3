//! Rendering recordings for people (`sessions`, `show`, `tools`) and for scripts (`--json`).
//! The data comes from `query`; this module only shapes and prints it.

pub mod report;
pub(crate) mod show;
pub mod stats;
pub(crate) mod tail;

use std::fmt::Write as _;

use crate::query::{SessionSummary, ToolCallRow};

/// `2026-11-21 12:03:04` (UTC) from microseconds since the epoch, by `humantime` (RFC 3339 without
/// its `T` and `Z`). A time outside what RFC 3339 writes (before 1970, after 9999: only a
/// damaged database holds one) is shown at the nearest end.
pub(crate) fn format_time(us: i64) -> String {
    /// 9999-12-31 23:59:59, the last second RFC 3339 can write.
    const LAST: u64 = 253_402_300_799;
    let secs = u64::try_from(us.div_euclid(1_000_000))
        .unwrap_or(0)
        .min(LAST);
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
    let text = humantime::format_rfc3339_seconds(at).to_string();
    text.trim_end_matches('Z').replacen('T', " ", 1)
}

/// `850ms`, `12.3s`, `2m05s`.
pub(crate) fn format_duration(us: i64) -> String {
    let ms = us / 1000;
    match ms {
        _ if us < 1000 => format!("{us}µs"),
        0..=999 => format!("{ms}ms"),
        1000..=59_999 => format!("{:.1}s", ms as f64 / 1000.0),
        _ => format!("{}m{:02}s", ms / 60_000, ms % 60_000 / 1000),
    }
}

/// The one sanitiser of what a recording holds on its way to a terminal (see
/// [`crate::terminal`]): `terminal_safe` for text of several lines, `terminal_line` for one field
/// of a one-line message.
pub use crate::terminal::{NAME_BYTES, VALUE_BYTES, cut_text, terminal_line, terminal_safe};

/// Every string in `value` longer than `max` bytes cut, with `…[N more bytes]` after it: a
/// recorded value sized for a page or a model, its structure kept.
pub(crate) fn cut_json_strings(value: &mut serde_json::Value, max: usize) {
    use serde_json::Value;
    match value {
        Value::String(text) => {
            let (kept, was_cut) = cut_text(text, max);
            if was_cut {
                *text = format!("{kept}…[{} more bytes]", text.len() - kept.len());
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| cut_json_strings(v, max)),
        Value::Object(map) => map.values_mut().for_each(|v| cut_json_strings(v, max)),
        _ => {}
    }
}

/// A connection's protocol version as a person reads it: `v1`, `v2 (draft)`, `v7 (unknown)`,
/// or the JSON as recorded when it is not a version number.
pub(crate) fn protocol_label(version: &serde_json::Value) -> String {
    match crate::protocol::Version::from_value(version) {
        Some(known) => known.to_string(),
        None => version.to_string(),
    }
}

/// The bytes of base64 `text` (the standard alphabet; padding optional, whitespace skipped), or
/// `None` when it is not base64. For the output a v2 agent sends of its terminals.
pub(crate) fn decode_base64(text: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    const LENIENT: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    let compact: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    LENIENT.decode(compact).ok()
}

/// `text` as one column of a table: on one line (newline, tab and CR read as spaces, as in
/// prose), made safe by [`terminal_line`], and cut to `max` characters with `…`.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let text = text.trim_start();
    // A character is at most 4 bytes: this keeps more than `max` characters, and a 100 MB
    // string costs no more than a short one.
    let (text, _) = cut_text(text, max.saturating_mul(4).saturating_add(4));
    let flat: String = text
        .chars()
        .map(|c| {
            if matches!(c, '\n' | '\r' | '\t') {
                ' '
            } else {
                c
            }
        })
        .collect();
    let flat = terminal_line(flat.trim_end(), usize::MAX);
    if flat.chars().count() <= max {
        flat.into_owned()
    } else {
        let cut: String = flat.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

fn render_sessions_unescaped(sessions: &[SessionSummary]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<38} {:>5} {:<19} {:<22} {:>5} {:>5} {:>5}  LABEL",
        "SESSION", "CONN", "STARTED (UTC)", "AGENT", "TURNS", "TOOLS", "PERMS"
    );
    for s in sessions {
        // The recorded label cut first, so the state after it is always seen.
        let mut label = one_line(s.label.as_deref().unwrap_or_default(), 60);
        match s.state {
            "live" => label.push_str(" [live]"),
            "interrupted" => label.push_str(" [interrupted]"),
            _ if !s.complete => label.push_str(" [incomplete]"),
            _ => {}
        }
        let _ = writeln!(
            out,
            "{:<38} {:>5} {:<19} {:<22} {:>5} {:>5} {:>5}  {}",
            // Whole (up to NAME_BYTES), not cut to the column: it is what `show` takes.
            terminal_line(&s.session_id, NAME_BYTES),
            s.connection_id,
            format_time(s.created_at),
            one_line(&s.agent, 22),
            s.turns,
            s.tool_calls,
            s.permission_requests,
            label.trim()
        );
    }
    out
}

fn render_tools_unescaped(rows: &[ToolCallRow]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<12} {:<28} {:<10} {:<11} {:>8} {:>4}  TITLE",
        "SESSION", "TOOL CALL", "KIND", "STATUS", "TIME", "UPD"
    );
    for t in rows {
        let _ = writeln!(
            out,
            "{:<12} {:<28} {:<10} {:<11} {:>8} {:>4}  {}",
            one_line(&t.session_id, 12),
            one_line(&t.tool_call_id, 28),
            one_line(t.kind.as_deref().unwrap_or("-"), 10),
            one_line(t.status.as_deref().unwrap_or("-"), 11),
            t.duration_us()
                .map(format_duration)
                .unwrap_or_else(|| "-".into()),
            t.update_count,
            one_line(t.title.as_deref().unwrap_or(""), 60),
        );
    }
    out
}

/// Safe for a terminal: every recorded string goes through [`terminal_safe`].
pub(crate) fn render_sessions(sessions: &[SessionSummary]) -> String {
    terminal_safe(&render_sessions_unescaped(sessions)).into_owned()
}

/// Safe for a terminal: every recorded string goes through [`terminal_safe`].
pub(crate) fn render_tools(rows: &[ToolCallRow]) -> String {
    terminal_safe(&render_tools_unescaped(rows)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_keeps_whole_characters_and_says_how_much_is_gone() {
        assert_eq!(cut_text("héllo", 2), ("h", true));
        assert_eq!(cut_text("héllo", 3), ("hé", true));
        assert_eq!(cut_text("hi", 5), ("hi", false));
        let mut value = serde_json::json!({"a": ["x".repeat(10)], "b": 3});
        cut_json_strings(&mut value, 4);
        assert_eq!(value["a"][0], "xxxx…[6 more bytes]");
        assert_eq!(value["b"], 3);
    }

    #[test]
    fn formats_times_and_durations() {
        assert_eq!(format_time(0), "1970-01-01 00:00:00");
        assert_eq!(format_time(1_795_262_584_000_000), "2026-11-21 12:03:04");
        assert_eq!(format_duration(850), "850µs");
        assert_eq!(format_duration(12_345), "12ms");
        assert_eq!(format_duration(12_345_000), "12.3s");
        assert_eq!(format_duration(125_000_000), "2m05s");
    }

    #[test]
    fn base64_decodes_with_and_without_padding() {
        assert_eq!(decode_base64("aGVsbG8K").unwrap(), b"hello\n");
        assert_eq!(decode_base64("Zm9vYmE=").unwrap(), b"fooba");
        assert_eq!(decode_base64("Zm9vYmE").unwrap(), b"fooba");
        assert_eq!(decode_base64("Zg==\n").unwrap(), b"f");
        assert_eq!(decode_base64("").unwrap(), b"");
        assert_eq!(decode_base64("not base64!"), None);
    }

    #[test]
    fn protocol_versions_read_as_words() {
        assert_eq!(protocol_label(&serde_json::json!(2)), "v2 (draft)");
        assert_eq!(protocol_label(&serde_json::json!(1)), "v1");
        assert_eq!(protocol_label(&serde_json::json!("2025-06")), "\"2025-06\"");
    }

    #[test]
    fn one_line_flattens_and_cuts() {
        assert_eq!(one_line("a\nb", 10), "a b");
        assert_eq!(one_line("abcdefghijkl", 5), "abcd…");
        assert_eq!(
            one_line(" \u{1b}[2J\u{202e}x\r\n", 10),
            "\u{FFFD}[2J\u{FFFD}x"
        );
        assert_eq!(one_line(&"é".repeat(1_000_000), 3), "éé…");
    }
}
