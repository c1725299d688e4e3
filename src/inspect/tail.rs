//! `acptap tail`: follows a database while other acptap processes record into it, one line per
//! event: tool call started / updated / finished, permission decided, turn ended. The events come
//! from `query::follow`; this file renders them.

use std::fmt::Write as _;

use super::one_line;
pub use crate::query::follow::{Cursor, Event};

/// One line for a person; `color` adds ANSI colours by status.
pub fn render(event: &Event, color: bool) -> String {
    // Every recorded string is made safe (on one line, cut) before any colour is added.
    let safe = |v: &Option<String>| {
        v.as_deref()
            .map(|v| super::terminal_line(v, super::NAME_BYTES).into_owned())
    };
    let event = &Event {
        session_id: safe(&event.session_id),
        tool_call_id: safe(&event.tool_call_id),
        kind: safe(&event.kind),
        title: event
            .title
            .as_deref()
            .map(|v| super::terminal_line(v, super::VALUE_BYTES).into_owned()),
        status: safe(&event.status),
        decided_by: safe(&event.decided_by),
        option_kind: safe(&event.option_kind),
        stop_reason: safe(&event.stop_reason),
        ..event.clone()
    };
    let paint = |code: &str, text: &str| {
        if color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    };
    let time = &super::format_time(event.ts)[11..];
    let millis = event.ts.rem_euclid(1_000_000) / 1000;
    let mut out = format!(
        "{time}.{millis:03} c{} {:<10} ",
        event.connection_id,
        one_line(event.session_id.as_deref().unwrap_or("-"), 10)
    );
    let title = one_line(
        event
            .title
            .as_deref()
            .or(event.tool_call_id.as_deref())
            .unwrap_or(""),
        60,
    );
    let kind = event.kind.as_deref().unwrap_or("-");
    let status = event.status.as_deref().unwrap_or("-");
    let status_color = match status {
        "completed" | "selected" => "32",
        "failed" | "cancelled" => "31",
        _ => "33",
    };
    let _ = match event.event {
        "tool_call_started" => write!(out, "{} {kind:<9} {title}", paint("36", "tool started ")),
        "tool_call_finished" => write!(
            out,
            "{} {kind:<9} {title} {}",
            paint("36", "tool finished"),
            paint(status_color, status)
        ),
        "tool_call_updated" => write!(
            out,
            "{} {kind:<9} {title} {}",
            paint("36", "tool updated "),
            paint(status_color, status)
        ),
        "permission_decided" => write!(
            out,
            "{} {title}: {} by {}",
            paint("35", "permission   "),
            paint(
                if event
                    .option_kind
                    .as_deref()
                    .is_some_and(|k| k.starts_with("allow"))
                {
                    "32"
                } else {
                    "31"
                },
                event.option_kind.as_deref().unwrap_or(status)
            ),
            event.decided_by.as_deref().unwrap_or("-")
        ),
        _ => write!(
            out,
            "{} {}",
            paint("1", "turn ended   "),
            event.stop_reason.as_deref().unwrap_or("-")
        ),
    };
    out
}
