//! `acptap stats`: what happened, counted. Tool calls per kind and status with their durations,
//! permission decisions by who decided, turns by stop reason, bytes per direction.

use std::fmt::Write as _;

use super::{format_duration, one_line};
pub use crate::query::stats::{ByteStat, Count, Scope, Stats, ToolStat, stats};

fn render_unescaped(stats: &Stats) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} session(s), {} turn(s)\n",
        stats.sessions, stats.turns
    );
    let _ = writeln!(
        out,
        "{:<12} {:<12} {:>6} {:>9} {:>9}",
        "TOOL KIND", "STATUS", "COUNT", "AVG", "MAX"
    );
    for t in &stats.tools {
        let _ = writeln!(
            out,
            "{:<12} {:<12} {:>6} {:>9} {:>9}",
            one_line(&t.kind, 40),
            one_line(&t.status, 40),
            t.count,
            t.avg_us.map(format_duration).unwrap_or_else(|| "-".into()),
            t.max_us.map(format_duration).unwrap_or_else(|| "-".into())
        );
    }
    let _ = writeln!(out, "\nPERMISSIONS DECIDED BY");
    for c in &stats.permissions {
        let _ = writeln!(out, "  {:<12} {:>6}", one_line(&c.key, 40), c.count);
    }
    let _ = writeln!(out, "\nSTOP REASONS");
    for c in &stats.stop_reasons {
        let _ = writeln!(out, "  {:<12} {:>6}", one_line(&c.key, 40), c.count);
    }
    let _ = writeln!(
        out,
        "\n{:<10} {:>9} {:>12}",
        "DIRECTION", "MESSAGES", "BYTES"
    );
    for b in &stats.bytes {
        let _ = writeln!(
            out,
            "{:<10} {:>9} {:>12}",
            one_line(&b.direction, 10),
            b.messages,
            b.bytes
        );
    }
    out
}

/// Safe for a terminal: every recorded string goes through [`super::terminal_safe`].
pub fn render(stats: &Stats) -> String {
    super::terminal_safe(&render_unescaped(stats)).into_owned()
}
