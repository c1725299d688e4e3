//! `acptap stats`: what happened, counted. Tool calls per kind and status with their durations,
//! permission decisions by who decided, turns by stop reason, bytes per direction; with
//! `--by-method`, the latency of one session's requests per method and of its tool calls per kind.

use std::fmt::Write as _;

use super::{format_duration, one_line};
pub use crate::query::latency::{
    HISTOGRAM_BOUNDS_US, Latency, MethodLatency, ToolLatency, by_method,
};
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

/// The bar of one histogram: a block character per bucket, its height the bucket's count against
/// the fullest bucket's (` ` for none, `▁` for at least one, `█` for the fullest), between
/// brackets so that empty buckets at either end are seen.
fn distribution(histogram: &[i64]) -> String {
    const LEVELS: [char; 9] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let most = histogram.iter().copied().max().unwrap_or(0).max(1);
    let bar: String = histogram
        .iter()
        .map(|&count| {
            let level = count.max(0).saturating_mul(8).saturating_add(most - 1) / most;
            LEVELS[level.clamp(0, 8) as usize]
        })
        .collect();
    format!("[{bar}]")
}

/// The buckets of [`distribution`], said once under the tables.
fn buckets_legend() -> String {
    let said = |us: i64| match us {
        _ if us >= 1_000_000 && us % 1_000_000 == 0 => format!("{}s", us / 1_000_000),
        _ if us >= 1_000 && us % 1_000 == 0 => format!("{}ms", us / 1_000),
        _ => format!("{us}µs"),
    };
    let mut bounds: Vec<String> = HISTOGRAM_BOUNDS_US
        .iter()
        .map(|&b| format!("<{}", said(b)))
        .collect();
    if let Some(&last) = HISTOGRAM_BOUNDS_US.last() {
        bounds.push(format!(">={}", said(last)));
    }
    bounds.join(" ")
}

fn render_latency_unescaped(latency: &Latency) -> String {
    const MOST: usize = 40;
    // A figure of nothing (no request answered, no call ended) is `-`.
    let figure = |count: i64, us: Option<i64>| match us {
        Some(us) if count > 0 => format_duration(us),
        _ => "-".to_owned(),
    };
    let left_out = |n: i64, what: &str| {
        if n == 0 {
            String::new()
        } else {
            format!("  +{n} {what}")
        }
    };
    let mut out = String::new();
    let methods: Vec<String> = latency
        .methods
        .iter()
        .map(|m| one_line(&m.method, MOST))
        .collect();
    let width = methods
        .iter()
        .map(|m| m.chars().count())
        .chain(["REQUEST METHOD".len()])
        .max()
        .unwrap_or(0);
    let _ = writeln!(
        out,
        "{:<width$}  {:<3}  {:>6}  {:>6}  {:>8}  {:>8}  {:>8}  {:>8}  DISTRIBUTION",
        "REQUEST METHOD", "DIR", "COUNT", "FAILED", "P50", "P99", "MAX", "TOTAL"
    );
    for (m, method) in latency.methods.iter().zip(&methods) {
        let _ = writeln!(
            out,
            "{method:<width$}  {:<3}  {:>6}  {:>6}  {:>8}  {:>8}  {:>8}  {:>8}  {}{}",
            one_line(&m.direction, 10),
            m.count,
            m.failed,
            figure(m.count, m.figures.p50_us),
            figure(m.count, m.figures.p99_us),
            figure(m.count, m.figures.max_us),
            figure(m.count, Some(m.figures.total_us)),
            distribution(&m.figures.histogram),
            left_out(m.unanswered, "unanswered"),
        );
    }
    if latency.methods.is_empty() {
        let _ = writeln!(out, "(no requests)");
    }
    let kinds: Vec<String> = latency
        .tools
        .iter()
        .map(|t| one_line(&t.kind, MOST))
        .collect();
    let width = kinds
        .iter()
        .map(|k| k.chars().count())
        .chain(["TOOL KIND".len()])
        .max()
        .unwrap_or(0);
    let _ = writeln!(
        out,
        "\n{:<width$}  {:>6}  {:>6}  {:>8}  {:>8}  {:>8}  {:>8}  DISTRIBUTION",
        "TOOL KIND", "COUNT", "FAILED", "P50", "P99", "MAX", "TOTAL"
    );
    for (t, kind) in latency.tools.iter().zip(&kinds) {
        let _ = writeln!(
            out,
            "{kind:<width$}  {:>6}  {:>6}  {:>8}  {:>8}  {:>8}  {:>8}  {}{}",
            t.count,
            t.failed,
            figure(t.count, t.figures.p50_us),
            figure(t.count, t.figures.p99_us),
            figure(t.count, t.figures.max_us),
            figure(t.count, Some(t.figures.total_us)),
            distribution(&t.figures.histogram),
            left_out(t.unfinished, "unfinished"),
        );
    }
    if latency.tools.is_empty() {
        let _ = writeln!(out, "(no tool calls)");
    }
    let _ = writeln!(out, "\nDISTRIBUTION buckets: {}", buckets_legend());
    out
}

/// `acptap stats SESSION --by-method`: the request methods, then the tool kinds, the slowest and
/// the failed first. Safe for a terminal: every recorded string goes through
/// [`super::terminal_safe`].
pub fn render_latency(latency: &Latency) -> String {
    super::terminal_safe(&render_latency_unescaped(latency)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_distribution_is_scaled_to_its_fullest_bucket() {
        assert_eq!(distribution(&[0, 1, 8, 4, 0, 0, 0]), "[ ▁█▄   ]");
        assert_eq!(distribution(&[0; 7]), "[       ]");
        assert_eq!(distribution(&[1, 1000, 0, 0, 0, 0, 2]), "[▁█    ▁]");
    }

    #[test]
    fn the_legend_names_every_bucket() {
        assert_eq!(buckets_legend(), "<1ms <10ms <100ms <1s <10s <60s >=60s");
    }
}
