//! The report's static picture of a turn: its spans (`query::waterfall`) as an inline SVG, one
//! row a span (the turn's own span on top), no script.
//!
//! Each bar is `<rect class="wf-bar wf-LANE wf-is-STATE">` (plus `wf-failed`, `wf-open`) with
//! `data-start-us` and `data-end-us` (absent while open) as recorded, and a `<title>` saying
//! what it is; the span's label is text next to it. The live inspector loads the same
//! `report.css`, so these class names are shared: [`lane_class`], [`state_class`].
//!
//! Escaping: labels, states, kinds and rules are recorded strings. They reach the SVG only as
//! text through [`esc`]; a state reaches a class only through [`state_class`], which keeps
//! `[a-z0-9_-]` and nothing else.

use std::fmt::Write as _;

use super::esc;
use crate::inspect::{format_duration, one_line};
use crate::query::waterfall::{Lane, Span, TurnSpans};

/// The bars' width in the viewBox's units: a turn's time scaled to it.
pub(crate) const WIDTH: f64 = 1000.0;
/// Left of the bars: the lane labels.
const GUTTER: f64 = 76.0;
/// Right of the bars: room for a bar drawn at the very end.
const PAD: f64 = 4.0;
const ROW: f64 = 16.0;
const BAR: f64 = 11.0;
/// A bar shorter than this (a span of a few microseconds in a long turn) is drawn this wide.
const MIN_BAR: f64 = 2.0;
/// A label next to its bar is cut to this many characters (the title has more).
const LABEL_CHARS: usize = 60;
const TITLE_LABEL_CHARS: usize = 300;
/// About the width of a character of the labels, to place them where they fit.
const CHAR_WIDTH: f64 = 6.2;
/// The rows one turn's picture draws at most: a turn with more spans says how many were left.
pub(crate) const MAX_ROWS: usize = 500;

/// The class of a lane: `turn`, `model`, `tool_call`, `permission`, `request` (`wf-` before it).
pub(crate) fn lane_class(lane: Lane) -> &'static str {
    match lane {
        Lane::Turn => "turn",
        Lane::Model => "model",
        Lane::ToolCall => "tool_call",
        Lane::Permission => "permission",
        Lane::Request => "request",
    }
}

/// The lane's name at the left of its rows.
fn lane_name(lane: Lane) -> &'static str {
    match lane {
        Lane::Turn => "turn",
        Lane::Model => "model",
        Lane::ToolCall => "tool",
        Lane::Permission => "permission",
        Lane::Request => "request",
    }
}

/// A state made safe for a class name: lowercase ASCII letters, digits, `_` and `-` kept,
/// anything else dropped; nothing left is `other`.
pub(crate) fn state_class(state: &str) -> String {
    let kept: String = state
        .chars()
        .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-'))
        .collect();
    if kept.is_empty() {
        "other".to_owned()
    } else {
        kept
    }
}

/// `+1.2s` (or `-3ms` for a span recorded before its turn's start).
fn offset(us: i64) -> String {
    if us < 0 {
        format!("-{}", format_duration(-us))
    } else {
        format!("+{}", format_duration(us))
    }
}

/// The picture of one turn: an `<svg class="waterfall">`, and a line saying how many spans it
/// left out, if any.
pub(crate) fn turn(out: &mut String, turn: &TurnSpans) {
    let start = turn.start_us;
    // A span that ended after its turn (a late update) widens the axis rather than being cut.
    let end = turn
        .spans
        .iter()
        .filter_map(|s| s.end_us)
        .chain([turn.end_us])
        .max()
        .unwrap_or(turn.end_us);
    let length = (end - start).max(1);
    let scale = WIDTH / length as f64;
    let x_of = |t: i64| GUTTER + (t - start).clamp(0, length) as f64 * scale;
    let rows = turn.spans.len().min(MAX_ROWS);
    let total_width = GUTTER + WIDTH + PAD;
    let height = rows as f64 * ROW + 4.0;
    let _ = write!(
        out,
        "<svg class=\"waterfall\" viewBox=\"0 0 {total_width} {height}\" width=\"{total_width}\" \
         height=\"{height}\" role=\"img\" aria-label=\"where turn {} spent its time\">",
        turn.index
    );
    for (row, span) in turn.spans.iter().take(MAX_ROWS).enumerate() {
        let y = 2.0 + row as f64 * ROW;
        let x = x_of(span.start_us);
        let x_end = x_of(span.end_us.unwrap_or(turn.end_us).max(span.start_us));
        let width = (x_end - x).max(MIN_BAR);
        let x = x.min(GUTTER + WIDTH + PAD - width);
        bar(out, span, turn, x, y, width);
        let label = one_line(&span.label, LABEL_CHARS);
        let text_width = label.chars().count() as f64 * CHAR_WIDTH;
        let text_y = y + BAR - 2.0;
        let (text_x, class) = if x + width + 4.0 + text_width <= total_width {
            (x + width + 4.0, "wf-label")
        } else if x - 4.0 - text_width >= GUTTER {
            (x - 4.0, "wf-label wf-before")
        } else {
            (x + 3.0, "wf-label wf-inside")
        };
        let _ = write!(
            out,
            "<text class=\"wf-lane\" x=\"4\" y=\"{text_y:.1}\">{}</text>\
             <text class=\"{class}\" x=\"{text_x:.1}\" y=\"{text_y:.1}\">{}</text>",
            lane_name(span.lane),
            esc(&label),
        );
    }
    out.push_str("</svg>\n");
    let left = turn.cut + turn.spans.len() - rows;
    if left > 0 {
        let _ = writeln!(
            out,
            "<p class=\"hint\">{left} more span(s) of this turn are not drawn.</p>"
        );
    }
}

/// One span's `<rect>`, with its `<title>`.
fn bar(out: &mut String, span: &Span, turn: &TurnSpans, x: f64, y: f64, width: f64) {
    let state = state_class(&span.state);
    let _ = write!(
        out,
        "<rect class=\"wf-bar wf-{} wf-is-{state}{}{}\" x=\"{x:.1}\" y=\"{y:.1}\" \
         width=\"{width:.1}\" height=\"{BAR}\" data-start-us=\"{}\"",
        lane_class(span.lane),
        // The state's class is `wf-is-…`: a recorded state cannot take a lane's or a flag's.
        if span.failed { " wf-failed" } else { "" },
        if span.end_us.is_none() {
            " wf-open"
        } else {
            ""
        },
        span.start_us,
    );
    if let Some(end) = span.end_us {
        let _ = write!(out, " data-end-us=\"{end}\"");
    }
    let mut title = format!(
        "{} · {} · {}",
        lane_name(span.lane),
        one_line(&span.label, TITLE_LABEL_CHARS),
        span.state
    );
    if let Some(kind) = &span.kind {
        let _ = write!(title, " · kind {kind}");
    }
    if let Some(rule) = &span.rule {
        let _ = write!(title, " · rule {rule}");
    }
    match span.end_us {
        Some(end) => {
            let _ = write!(
                title,
                " · {}",
                format_duration((end - span.start_us).max(0))
            );
        }
        None => title.push_str(" · never ended (drawn to the end of the turn)"),
    }
    let _ = write!(title, " · from {}", offset(span.start_us - turn.start_us));
    let _ = write!(out, "><title>{}</title></rect>", esc(&title));
}

/// What the colours mean: once a page, above its turns.
pub(crate) fn legend(out: &mut String) {
    const KEYS: &[(&str, &str)] = &[
        ("wf-turn", "turn"),
        ("wf-model wf-is-thinking", "model"),
        ("wf-tool_call wf-is-completed", "tool call"),
        ("wf-tool_call wf-failed", "tool failed"),
        ("wf-permission wf-is-user", "permission: user"),
        ("wf-permission wf-is-policy", "policy"),
        ("wf-permission wf-is-cancelled", "cancelled"),
        ("wf-permission wf-is-waiting", "waiting"),
        ("wf-request wf-is-answered", "request"),
        ("wf-request wf-is-error wf-failed", "request error"),
        ("wf-tool_call wf-is-pending wf-open", "never ended"),
    ];
    let width = GUTTER + WIDTH + PAD;
    let mut x = 4.0;
    let mut body = String::new();
    for (class, name) in KEYS {
        let _ = write!(
            body,
            "<rect class=\"wf-key {class}\" x=\"{x:.1}\" y=\"4\" width=\"16\" height=\"{BAR}\">\
             </rect><text class=\"wf-label\" x=\"{:.1}\" y=\"{:.1}\">{name}</text>",
            x + 20.0,
            4.0 + BAR - 2.0,
        );
        x += 20.0 + name.chars().count() as f64 * CHAR_WIDTH + 14.0;
    }
    let _ = writeln!(
        out,
        "<div class=\"wf-legend\"><svg class=\"wf-legend\" viewBox=\"0 0 {width} 19\" \
         width=\"{width}\" height=\"19\" role=\"img\" aria-label=\"the colours of the waterfalls\">\
         {body}</svg></div>"
    );
    debug_assert!(x <= width, "the legend fits one line");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_classes_keep_only_safe_characters() {
        assert_eq!(state_class("completed"), "completed");
        assert_eq!(state_class("in_progress"), "in_progress");
        assert_eq!(state_class("\"><script>x-1"), "scriptx-1");
        assert_eq!(state_class("END"), "other");
        assert_eq!(state_class(""), "other");
    }

    #[test]
    fn every_span_is_a_bar_with_its_recorded_times() {
        let span = |lane, start, end: Option<i64>, state: &str| Span {
            lane,
            start_us: start,
            end_us: end,
            label: format!("<{state}>"),
            state: state.to_owned(),
            kind: None,
            rule: Some("r<1>".to_owned()),
            failed: state == "failed",
            target: None,
        };
        let t = TurnSpans {
            index: 3,
            start_us: 1_000_000,
            end_us: 2_000_000,
            spans: vec![
                span(Lane::Turn, 1_000_000, Some(2_000_000), "end_turn"),
                span(Lane::ToolCall, 1_100_000, Some(1_100_001), "failed"),
                span(Lane::Request, 1_900_000, None, "unanswered"),
            ],
            cut: 0,
        };
        let mut out = String::new();
        turn(&mut out, &t);
        assert_eq!(out.matches("<rect ").count(), 3);
        assert!(out.contains(
            "<rect class=\"wf-bar wf-tool_call wf-is-failed wf-failed\" x=\"176.0\" y=\"18.0\" \
             width=\"2.0\" height=\"11\" data-start-us=\"1100000\" data-end-us=\"1100001\">"
        ));
        assert!(out.contains(
            "class=\"wf-bar wf-request wf-is-unanswered wf-open\" x=\"976.0\" y=\"34.0\" \
             width=\"100.0\" height=\"11\" data-start-us=\"1900000\"><title>"
        ));
        assert!(out.contains(
            "<title>tool · &lt;failed&gt; · failed · rule r&lt;1&gt; · 1µs · from +100ms</title>"
        ));
        assert!(!out.contains("<failed>") && !out.contains("r<1>"));
    }
}
