//! Rendering recordings for people (`sessions`, `show`, `tools`) and for scripts (`--json`).
//! The data comes from `record::queries`; this module only shapes and prints it.

pub mod report;
pub mod show;
pub mod stats;
pub mod tail;

use std::fmt::Write as _;

use crate::record::queries::{SessionSummary, ToolCallRow};

/// `2026-11-21 12:03:04` (UTC) from microseconds since the epoch.
pub fn format_time(us: i64) -> String {
    let secs = us.div_euclid(1_000_000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// `850ms`, `12.3s`, `2m05s`.
pub fn format_duration(us: i64) -> String {
    let ms = us / 1000;
    match ms {
        _ if us < 1000 => format!("{us}µs"),
        0..=999 => format!("{ms}ms"),
        1000..=59_999 => format!("{:.1}s", ms as f64 / 1000.0),
        _ => format!("{}m{:02}s", ms / 60_000, ms % 60_000 / 1000),
    }
}

/// Cuts `text` to `max` characters on one line.
/// What a terminal must not receive from a recording: every control character but newline and
/// tab (ESC starts CSI and OSC sequences: clipboard writes, title changes, screen clears; C1
/// controls are their 8-bit forms), and the bidirectional controls that make text read in another
/// order than it is stored (U+202E). Each becomes U+FFFD, so a reader sees that something was there.
pub fn terminal_safe(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
    };
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(
        text.chars()
            .map(|c| if unsafe_char(c) { '\u{FFFD}' } else { c })
            .collect(),
    )
}

/// `text` cut to at most `max` bytes on a character boundary, and whether it was cut.
pub fn cut_text(text: &str, max: usize) -> (&str, bool) {
    if text.len() <= max {
        return (text, false);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], true)
}

/// Every string in `value` longer than `max` bytes cut, with `…[N more bytes]` after it: a
/// recorded value sized for a page or a model, its structure kept.
pub fn cut_json_strings(value: &mut serde_json::Value, max: usize) {
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

pub fn one_line(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let flat = terminal_safe(flat.trim()).into_owned();
    let flat = flat.as_str();
    if flat.chars().count() <= max {
        flat.to_owned()
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
        let mut label = s.label.clone().unwrap_or_default();
        match s.state {
            "live" => label.push_str(" [live]"),
            "interrupted" => label.push_str(" [interrupted]"),
            _ if !s.complete => label.push_str(" [incomplete]"),
            _ => {}
        }
        let _ = writeln!(
            out,
            "{:<38} {:>5} {:<19} {:<22} {:>5} {:>5} {:>5}  {}",
            s.session_id,
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
pub fn render_sessions(sessions: &[SessionSummary]) -> String {
    terminal_safe(&render_sessions_unescaped(sessions)).into_owned()
}

/// Safe for a terminal: every recorded string goes through [`terminal_safe`].
pub fn render_tools(rows: &[ToolCallRow]) -> String {
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
    fn one_line_flattens_and_cuts() {
        assert_eq!(one_line("a\nb", 10), "a b");
        assert_eq!(one_line("abcdefghijkl", 5), "abcd…");
    }
}
