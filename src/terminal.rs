//! Text from a recording, made safe for a terminal. A recording is untrusted input: an agent
//! (or a transcript someone sent) chooses every string in it, and a terminal acts on some
//! characters instead of showing them. This is the one sanitiser for every byte of a recording
//! that acptap prints; `inspect` re-exports it as `inspect::terminal_safe`, and the modules that
//! may not name `inspect` (`record`, `check`, `replay`) name it here. A leaf: it uses nothing
//! else of the crate.
//!
//! Replaced by U+FFFD, so a reader sees that something was there:
//! - every C0 control but newline and tab (ESC starts the CSI and OSC sequences: clipboard writes
//!   with OSC 52, title changes, screen clears; BEL ends an OSC; CR rewrites the line), and DEL;
//! - the C1 controls U+0080..U+009F (U+009B is CSI, U+009D OSC: the 8-bit forms of the above);
//! - the bidirectional controls U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069, which
//!   make text read in another order than it is stored (`U+202E gnp.exe` reads `exe.png`).
//!
//! In one field of a one-line message ([`terminal_line`]) newline, tab and the Unicode line and
//! paragraph separators are replaced too, so a recorded value cannot forge a line of output, and
//! the value is cut to a length given by the caller.
//!
//! JSON for scripts (`--json`) stays exact data: [`json_terminal_safe`] writes DEL, the C1 and
//! the bidi controls as `\u` escapes (serde_json already escapes the C0 ones), which parse back
//! to the same string, so a terminal that shows the JSON gets none of them.

use std::borrow::Cow;

/// At most this many bytes of a recorded name, id, kind or method in a one-line message: more is
/// not a name, and a 100 MB agent name must not fill the screen.
pub const NAME_BYTES: usize = 200;

/// At most this many bytes of a recorded value (a title, a JSON value, a finding's message)
/// quoted in a one-line message.
pub const VALUE_BYTES: usize = 1024;

/// What the bidirectional controls are: the marks and embeddings, overrides and isolates.
fn bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
    )
}

/// A character a terminal would act on instead of showing: every control (C0, DEL, C1: Rust's
/// `is_control` is exactly these) and the bidi controls. Newline and tab are the caller's to
/// allow.
fn acts_on_terminal(c: char) -> bool {
    c.is_control() || bidi_control(c)
}

fn replace_where(text: &str, unsafe_char: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(&unsafe_char) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| if unsafe_char(c) { '\u{FFFD}' } else { c })
            .collect(),
    )
}

/// `text` (several lines allowed: an agent's message, a rendered view) with every character a
/// terminal would act on shown as U+FFFD; newline and tab kept.
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    replace_where(text, |c| acts_on_terminal(c) && c != '\n' && c != '\t')
}

/// One recorded field of a one-line message (a session id, an agent's name, a kind, a method):
/// as [`terminal_safe`], and newline, tab and U+2028/U+2029 replaced too, so it cannot start a
/// line of its own; cut to at most `max_bytes` (on a character boundary) with
/// `…[N more bytes]` after it.
pub fn terminal_line(text: &str, max_bytes: usize) -> Cow<'_, str> {
    let (kept, cut) = cut_text(text, max_bytes);
    let safe = replace_where(kept, |c| {
        acts_on_terminal(c) || matches!(c, '\u{2028}' | '\u{2029}')
    });
    if cut {
        Cow::Owned(format!("{safe}…[{} more bytes]", text.len() - kept.len()))
    } else if kept.len() == text.len() {
        safe
    } else {
        Cow::Owned(safe.into_owned())
    }
}

/// JSON text (as serde_json writes it) with DEL, the C1 and the bidi controls written as `\u`
/// escapes:
/// the same data for a parser, nothing a terminal acts on for a person. Outside its strings JSON
/// is ASCII, so every such character is inside a string, where its escape means the same.
pub fn json_terminal_safe(json: String) -> String {
    // serde_json escapes U+0000..U+001F itself; the controls from DEL on are left to this.
    let escaped = |c: char| (c.is_control() && c >= '\u{7f}') || bidi_control(c);
    if !json.chars().any(escaped) {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if escaped(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every character the brief of issue 25 names, one at a time.
    const ACTED_ON: &[char] = &[
        '\u{0}', '\u{7}', '\u{8}', '\u{b}', '\u{c}', '\r', '\u{1b}', '\u{1f}', '\u{7f}', '\u{80}',
        '\u{85}', '\u{9b}', '\u{9d}', '\u{9f}', '\u{61c}', '\u{200e}', '\u{200f}', '\u{202a}',
        '\u{202b}', '\u{202c}', '\u{202d}', '\u{202e}', '\u{2066}', '\u{2067}', '\u{2068}',
        '\u{2069}',
    ];

    #[test]
    fn every_control_and_bidi_character_is_replaced() {
        for &c in ACTED_ON {
            let text = format!("a{c}b");
            assert_eq!(terminal_safe(&text), "a\u{FFFD}b", "{c:?}");
            assert_eq!(terminal_line(&text, 100), "a\u{FFFD}b", "{c:?}");
        }
        let osc52 = "\u{1b}]52;c;cm0gLXJmIH4=\u{7}";
        assert_eq!(terminal_safe(osc52), "\u{FFFD}]52;c;cm0gLXJmIH4=\u{FFFD}");
    }

    #[test]
    fn text_keeps_its_lines_and_a_field_does_not() {
        assert_eq!(terminal_safe("a\n\tb"), "a\n\tb");
        assert!(matches!(terminal_safe("plain é ✓"), Cow::Borrowed(_)));
        assert_eq!(
            terminal_line("id\nFORGED\tx\u{2028}y", 100),
            "id\u{FFFD}FORGED\u{FFFD}x\u{FFFD}y"
        );
        assert!(matches!(terminal_line("plain", 100), Cow::Borrowed(_)));
    }

    #[test]
    fn a_long_field_is_cut_on_a_character_boundary_and_says_so() {
        assert_eq!(terminal_line("héllo", 2), "h…[5 more bytes]");
        assert_eq!(
            terminal_line(&"A".repeat(1000), 10),
            "AAAAAAAAAA…[990 more bytes]"
        );
        assert_eq!(terminal_line("short", 5), "short");
    }

    #[test]
    fn json_stays_the_same_data_with_nothing_a_terminal_acts_on() {
        let value = serde_json::json!({
            "id": "a\u{1b}[2J\u{7f}\u{9b}31m\u{202e}gnp.exe\u{2066}\n",
            "plain": "é ✓",
        });
        let text = json_terminal_safe(serde_json::to_string(&value).unwrap());
        assert!(text.chars().all(|c| !acts_on_terminal(c)), "{text}");
        assert!(text.contains("\\u009b") && text.contains("\\u202e") && text.contains("é ✓"));
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, value);
    }
}
