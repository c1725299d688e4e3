//! `report`: one session as a single self-contained HTML file, to open from disk and to share.
//!
//! It renders, in this order: a header (session, agent, protocol version, cwd, connection, start,
//! label, how the connection ended); filters (direction, method, tool kind, status, a text
//! search); what happened before the first turn (a resume or load and the history it replayed);
//! the timeline of prompt turns (a legend, then each turn's waterfall: a static SVG of its spans,
//! see [`waterfall`]; prompt, stop reason, duration, the agent's and the user's
//! messages with their final text, thoughts and plans, states, every tool call with its kind
//! icon, status, duration, paths, diffs and expandable rawInput / rawOutput / content, terminals
//! with their command, end and output, every permission request with its title, description and
//! subject, the options offered, the choice, who made it and how long it took, elicitations and
//! their answers, cancellations and the session's other requests); what happened outside any
//! turn; and every message of the connection, each
//! response linked to its request (`#msg-<seq>`), each raw line expandable. Payloads over
//! [`TRUNCATE_AT`] bytes show their beginning, with the whole text one click away.
//!
//! The file needs nothing else: the CSS and the script are inline ([`CSS`], [`GUARD_JS`],
//! [`FILTER_JS`]), and a Content-Security-Policy with `default-src 'none'` lets the page fetch
//! nothing at all.
//!
//! **Escaping invariant.** A recording is untrusted input. Every recorded string (ids, titles,
//! kinds, statuses, methods, paths, JSON, raw lines, option names, the prompt...) reaches the
//! output only through [`esc`], which escapes `& < > " '` and so is safe in text and inside the
//! double-quoted attributes this module writes. Recorded data never goes into a `<script>`, a
//! `<style>`, an `on*=` attribute, a URL or a class name: class names come from fixed tables (the
//! waterfall's state classes keep only `[a-z0-9_-]` of a recorded state), links
//! are `#anchors` built from numbers, and the script reads recorded values only as DOM text and
//! `data-*` attributes (never with `innerHTML`). As a second line of defence, the CSP allows only
//! this module's own script and style (by hash), so an injected script or handler would not run.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;

use serde_json::Value;
use sha2::Digest;

pub(crate) mod diff;
pub(crate) mod waterfall;

use super::show::{self, Item, TurnView};
use super::{format_duration, format_time, one_line, protocol_label};
use crate::protocol::{Direction, MessageKind};
use crate::query::Reader;
use crate::query::Result;
use crate::query::waterfall::TurnSpans;
use crate::query::{self, MessageRow, PermissionRow, SessionRef, ToolCallRow};
use diff::diff;

/// Payloads longer than this (in bytes) are shown truncated, with an expander for the rest.
pub(crate) const TRUNCATE_AT: usize = 4096;

/// The raw lines shown in the Messages section at most.
pub const MAX_MESSAGE_ROWS: usize = 10_000;

/// The page's style. No recorded data in it.
pub(crate) const CSS: &str = include_str!("report.css");
/// Runs first: records script errors and CSP violations on `<html data-errors>`, so a reader (or
/// a test) can see that the page ran cleanly.
pub(crate) const GUARD_JS: &str = include_str!("guard.js");
/// The filters: each `<select data-attr=X>` keeps the `.row`s whose `data-X` matches (rows
/// without `data-X` are not its business); the search box keeps rows containing the text. The
/// state lives in the URL (`#f:dir=c2a&q=...`) so a filtered view can be linked. Ends by setting
/// `<body data-ready="1">`.
pub(crate) const FILTER_JS: &str = include_str!("filter.js");

/// Escapes `& < > " '` for HTML text and double-quoted attribute values, and shows the
/// characters that would make text read in another order or hide in it (bidi controls such as
/// U+202E, other control characters but line breaks and tabs) as U+FFFD, as the terminal views do.
/// Every recorded string goes through here.
pub(crate) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for c in super::terminal_safe(text).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// What the policy said about a permission request, beyond `PermissionRow`.
struct PolicyRemark {
    decision: Option<String>,
    reason: Option<String>,
    shadow: bool,
}

/// How many turns one report shows by default: a page that a browser opens in a second or two.
/// A longer session is paged (`acptap report --turns FROM-TO`).
pub const TURNS_PER_PAGE: usize = 1_000;

/// Renders the report of one session: a complete HTML document. `turns` (numbered from 0) are
/// the turns it shows; the page's tool calls, permission requests and raw lines are those of
/// these turns (the first page also has what came before the first turn).
pub fn render(
    reader: &Reader,
    session: &SessionRef,
    turns: std::ops::Range<usize>,
) -> Result<String> {
    let timeline = show::timeline_of_turns(reader, session, turns.clone())?;
    let all_turns = query::turns(reader, session)?;
    let span = PageSpan::new(turns, &all_turns);
    // The page's turns' spans, read at once for its range of turns.
    let spans = query::waterfall::turn_spans(reader, session, span.first..span.end)?;
    let calls = calls_of_page(reader, session, &timeline, &all_turns, &span)?;
    let permissions: Vec<PermissionRow> = query::permission_requests(reader, session)?
        .into_iter()
        .filter(|p| span.seqs.contains(&p.request_seq))
        .collect();
    // The raw lines of a large connection are most of a report: the first MAX_MESSAGE_ROWS are
    // shown, and the rest are one `acptap export` away.
    let messages = query::connection_messages(
        reader,
        session.connection_id,
        span.seqs.clone(),
        MAX_MESSAGE_ROWS,
    )?;
    let message_count =
        query::connection_message_count(reader, session.connection_id, span.seqs.clone())?;
    let (started_at, exit_signal) =
        query::connection_start_and_signal(reader, session.connection_id)?;

    let page = Page::new(session, &calls, &permissions, &messages);
    let mut body = String::new();
    page.header(
        &mut body,
        &timeline.session,
        started_at,
        exit_signal,
        message_count,
    );
    page.filters(&mut body, &calls, &messages);
    body.push_str("<main>\n");
    let shown = page.timeline(
        &mut body,
        &timeline,
        &all_turns[span.first..span.end],
        &spans,
        &span,
    );
    page.outside(&mut body, &calls, &permissions, &shown);
    page.messages(&mut body, &messages, message_count);
    body.push_str("</main>\n");
    Ok(document(session, &body))
}

/// Which of the session's turns a page shows, and the lines they span.
struct PageSpan {
    /// The turns shown, `first..end` of the session's (numbered from 0, clamped to those
    /// recorded).
    first: usize,
    end: usize,
    /// The size of a page as asked (a short last page keeps its neighbours' size).
    size: usize,
    /// Whether the page is the whole session (no page commands, every tool call).
    whole: bool,
    /// The lines of this page: from the first turn's prompt (from the start on the first page)
    /// to the next page's first prompt.
    seqs: std::ops::Range<i64>,
}

impl PageSpan {
    fn new(asked: std::ops::Range<usize>, all_turns: &[query::Turn]) -> PageSpan {
        let size = asked.end.saturating_sub(asked.start).max(1);
        let first = asked.start.min(all_turns.len());
        let end = asked.end.clamp(first, all_turns.len());
        let seqs = (if first == 0 {
            0
        } else {
            all_turns.get(first).map_or(i64::MAX, |t| t.request_seq)
        })..all_turns.get(end).map_or(i64::MAX, |t| t.request_seq);
        PageSpan {
            first,
            end,
            size,
            whole: first == 0 && end == all_turns.len(),
            seqs,
        }
    }
}

/// The tool calls a page shows: those its timeline shows, and on the first page those outside
/// any turn (all of them when the page is the whole session), in the order of the read.
fn calls_of_page(
    reader: &Reader,
    session: &SessionRef,
    timeline: &show::Timeline,
    all_turns: &[query::Turn],
    span: &PageSpan,
) -> Result<Vec<ToolCallRow>> {
    let shown: HashSet<&str> = timeline
        .turns
        .iter()
        .flat_map(|t| &t.items)
        .chain(&timeline.opening)
        .filter_map(|item| match item {
            show::Item::ToolCall(call) => Some(call.tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    let mut calls = Vec::new();
    let filter = query::ToolFilter {
        session: Some(session.clone()),
        ..query::ToolFilter::default()
    };
    query::for_each_tool_call(reader, &filter, |call| {
        let outside = span.first == 0
            && call
                .first_seq
                .is_none_or(|seq| all_turns.first().is_none_or(|t| seq < t.request_seq));
        if span.whole || outside || shown.contains(call.tool_call_id.as_str()) {
            calls.push(call);
        }
    })?;
    Ok(calls)
}

/// The complete document around `body`: the head (the CSP with the hashes of the inline style
/// and scripts, the style, the guard script), then the body, then the filter script.
fn document(session: &SessionRef, body: &str) -> String {
    let mut out = String::with_capacity(body.len() + CSS.len() + FILTER_JS.len() + 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src '{}'; script-src '{}' '{}'; base-uri 'none'; form-action 'none'\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>acptap report · {}</title>\n<style>{CSS}</style>\n<script>{GUARD_JS}</script>\n\
         </head>\n<body>\n",
        csp_hash(CSS),
        csp_hash(GUARD_JS),
        csp_hash(FILTER_JS),
        esc(&session.session_id),
    );
    out.push_str(body);
    let _ = write!(out, "<script>{FILTER_JS}</script>\n</body>\n</html>\n");
    out
}

/// The tool calls and permission requests the timeline showed: the rest go to the section of
/// what happened outside any turn.
#[derive(Default)]
struct Shown {
    calls: HashSet<String>,
    permissions: HashSet<i64>,
}

/// What the parts of the page share.
struct Page<'a> {
    session: &'a SessionRef,
    /// Tool call id to the number in its anchor, `#tool-<n>`.
    call_anchor: HashMap<String, usize>,
    notes: HashMap<i64, PolicyRemark>,
    /// The first message's time: message times are shown relative to it.
    base_ts: i64,
}

impl<'a> Page<'a> {
    /// What the parts of the page share, from the rows it shows: the tool calls' anchors, the
    /// policy's remarks on the permission requests, the first message's time.
    fn new(
        session: &'a SessionRef,
        calls: &[ToolCallRow],
        permissions: &[PermissionRow],
        messages: &[MessageRow],
    ) -> Page<'a> {
        Page {
            session,
            call_anchor: calls
                .iter()
                .enumerate()
                .map(|(i, c)| (c.tool_call_id.clone(), i))
                .collect(),
            notes: permissions
                .iter()
                .map(|p| {
                    (
                        p.request_seq,
                        PolicyRemark {
                            decision: p.policy_decision.clone(),
                            reason: p.policy_reason.clone(),
                            shadow: p.policy_shadow,
                        },
                    )
                })
                .collect(),
            base_ts: messages.first().map(|m| m.ts).unwrap_or(0),
        }
    }

    /// The timeline section: what came before the first turn, then the turns, between the
    /// commands for the neighbouring pages on a page that is not the whole session. Returns
    /// what it showed.
    fn timeline(
        &self,
        out: &mut String,
        timeline: &show::Timeline,
        turns: &[query::Turn],
        spans: &[TurnSpans],
        span: &PageSpan,
    ) -> Shown {
        out.push_str("<section id=\"timeline\"><h2>Timeline</h2>\n");
        if !span.whole {
            self.pages(out, span.first..span.end, span.size, timeline.total_turns);
        }
        if !timeline.turns.is_empty() {
            waterfall::legend(out);
        }
        let mut shown = Shown::default();
        if !timeline.opening.is_empty() {
            self.opening(
                out,
                &timeline.opening,
                &mut shown.calls,
                &mut shown.permissions,
            );
        }
        if timeline.turns.is_empty() {
            out.push_str("<p class=\"empty\">No prompt turn was recorded.</p>\n");
        }
        for (view, turn) in timeline.turns.iter().zip(turns) {
            let picture = spans
                .binary_search_by_key(&view.index, |s| s.index)
                .ok()
                .map(|at| &spans[at]);
            self.turn(
                out,
                view,
                turn,
                picture,
                &mut shown.calls,
                &mut shown.permissions,
            );
        }
        if !span.whole {
            self.pages(out, span.first..span.end, span.size, timeline.total_turns);
        }
        out.push_str("</section>\n");
        shown
    }

    /// The page's tool calls and permission requests that no turn showed (nothing when every
    /// one was): each appears once on the page.
    fn outside(
        &self,
        out: &mut String,
        calls: &[ToolCallRow],
        permissions: &[PermissionRow],
        shown: &Shown,
    ) {
        let loose_calls: Vec<&ToolCallRow> = calls
            .iter()
            .filter(|c| !shown.calls.contains(&c.tool_call_id))
            .collect();
        let loose_permissions: Vec<&PermissionRow> = permissions
            .iter()
            .filter(|p| !shown.permissions.contains(&p.request_seq))
            .collect();
        if loose_calls.is_empty() && loose_permissions.is_empty() {
            return;
        }
        out.push_str(
            "<section id=\"outside\"><h2>Outside any prompt turn</h2>\n<div class=\"items\">\n",
        );
        for call in loose_calls {
            self.tool_call(out, call);
        }
        for request in loose_permissions {
            let title = request
                .tool_call_id
                .as_ref()
                .and_then(|id| calls.iter().find(|c| &c.tool_call_id == id))
                .and_then(|c| c.title.clone());
            self.permission(out, title.as_deref(), request);
        }
        out.push_str("</div>\n</section>\n");
    }

    /// Which turns this page shows (`shown`, from 0), and the commands for the pages of `size`
    /// turns before and after it (a short last page does not shorten the others).
    fn pages(&self, out: &mut String, shown: std::ops::Range<usize>, size: usize, total: usize) {
        let (first, end) = (shown.start, shown.end);
        let command = |from: usize, to: usize| {
            format!(
                "<code>acptap report {} --turns {from}-{to}</code>",
                esc(&self.session.session_id)
            )
        };
        let _ = write!(
            out,
            "<p class=\"fold\">This page shows turns {}–{} of {total}; its tool calls, decisions \
             and lines are those of these turns.",
            first + 1,
            end
        );
        if first > 0 {
            let from = first.saturating_sub(size) + 1;
            let _ = write!(out, " Previous: {}.", command(from, first));
        }
        if end < total {
            let to = end.saturating_add(size).min(total);
            let _ = write!(out, " Next: {}.", command(end + 1, to));
        }
        out.push_str("</p>\n");
    }

    fn header(
        &self,
        out: &mut String,
        s: &query::SessionSummary,
        started_at: Option<i64>,
        exit_signal: Option<i64>,
        message_count: i64,
    ) {
        let _ = write!(
            out,
            "<header>\n<h1>Session <code>{}</code></h1>\n<dl class=\"meta\">\n",
            esc(&s.session_id)
        );
        let mut field = |name: &str, value_html: String| {
            let _ = writeln!(out, "<dt>{name}</dt><dd>{value_html}</dd>");
        };
        field("Agent", esc(&s.agent));
        if !s.command.is_empty() {
            field(
                "Command",
                format!("<code>{}</code>", esc(&s.command.join(" "))),
            );
        }
        field(
            "cwd",
            format!("<code>{}</code>", esc(s.cwd.as_deref().unwrap_or("?"))),
        );
        field(
            "Connection",
            format!("#{} · session {}", s.connection_id, esc(&s.origin)),
        );
        field(
            "Started",
            format!(
                "{} UTC (session {} UTC)",
                started_at.map(format_time).unwrap_or_else(|| "?".into()),
                format_time(s.created_at)
            ),
        );
        if let Some(label) = &s.label {
            field("Label", esc(label));
        }
        if let Some(version) = &s.protocol_version {
            field("Protocol", esc(&protocol_label(version)));
        }
        let exit = match (exit_signal, s.exit_code) {
            (Some(signal), _) => format!("killed by signal {signal}"),
            (None, Some(code)) => format!("exit {code}"),
            (None, None) => "no exit code".to_owned(),
        };
        let state = match (s.connection_ended_at, s.complete) {
            (None, _) => "<span class=\"warn\">still recording (or acptap died)</span>".to_owned(),
            (Some(_), true) => format!("<span class=\"ok\">ended, {exit} · complete</span>"),
            (Some(_), false) => format!(
                "<span class=\"bad\">ended, {exit} · INCOMPLETE: {} line(s) not recorded</span>",
                s.lost_messages
            ),
        };
        field("Status", state);
        field(
            "Recorded",
            format!(
                "{} turn(s) · {} tool call(s) · {} permission request(s) · {} message(s) on the \
                 connection",
                s.turns, s.tool_calls, s.permission_requests, message_count
            ),
        );
        out.push_str("</dl>\n</header>\n");
    }

    fn filters(&self, out: &mut String, calls: &[ToolCallRow], messages: &[MessageRow]) {
        let dirs: BTreeSet<&str> = messages.iter().map(|m| m.direction.as_str()).collect();
        let methods: BTreeSet<&str> = messages
            .iter()
            .filter_map(|m| m.method.as_deref())
            .collect();
        let kinds: BTreeSet<&str> = calls.iter().map(kind_of).collect();
        let statuses: BTreeSet<&str> = calls.iter().map(status_of).collect();
        out.push_str("<nav id=\"filters\">\n");
        let mut select =
            |label: &str, attr: &str, values: &BTreeSet<&str>, show: &dyn Fn(&str) -> String| {
                let _ = write!(
                    out,
                    "<label>{label} <select data-attr=\"{attr}\"><option value=\"\">all</option>"
                );
                for v in values {
                    let _ = write!(out, "<option value=\"{}\">{}</option>", esc(v), show(v));
                }
                out.push_str("</select></label>\n");
            };
        select("Direction", "dir", &dirs, &|d| {
            esc(Direction::from_recorded(d).map_or(d, |d| direction_label(d)))
        });
        select("Method", "method", &methods, &|m| esc(m));
        select("Tool kind", "kind", &kinds, &|k| {
            format!("{} {}", kind_icon(k), esc(k))
        });
        select("Status", "status", &statuses, &|s| esc(s));
        out.push_str(
            "<label>Search <input id=\"f-q\" type=\"search\" placeholder=\"text in any row\"></label>\n\
             <button type=\"button\" id=\"f-reset\">Reset</button>\n\
             <span id=\"f-count\"></span>\n\
             <span class=\"hint\">Direction and method filter messages; kind and status filter \
             tool calls; the search filters every row.</span>\n</nav>\n",
        );
    }

    fn turn(
        &self,
        out: &mut String,
        view: &TurnView,
        turn: &query::Turn,
        picture: Option<&TurnSpans>,
        shown_calls: &mut HashSet<String>,
        shown_permissions: &mut HashSet<i64>,
    ) {
        let outcome = view
            .stop_reason
            .as_deref()
            .or(view.error.as_ref().map(|_| "error"))
            .unwrap_or("unfinished");
        let _ = write!(
            out,
            "<section class=\"turn\" id=\"turn-{}\">\n<h3>Turn {} <span class=\"stop {}\">{}</span> \
             <span class=\"dur\">{}</span>{} <a class=\"msglink\" href=\"#msg-{}\">request #{}</a>",
            view.index,
            view.index,
            if view.error.is_some() { "bad" } else { "" },
            esc(outcome),
            view.duration_us
                .map(format_duration)
                .unwrap_or_else(|| "-".into()),
            if view.cancel_requested {
                " <span class=\"warn\">cancel requested</span>"
            } else {
                ""
            },
            turn.request_seq,
            turn.request_seq,
        );
        if let Some(response) = turn.response_seq {
            let _ = write!(
                out,
                " <a class=\"msglink\" href=\"#msg-{response}\">response #{response}</a>"
            );
        }
        let _ = writeln!(
            out,
            " <span class=\"when\">{} UTC</span></h3>",
            format_time(view.started_at)
        );
        if let Some(picture) = picture {
            waterfall::turn(out, picture);
        }
        out.push_str(
            "<div class=\"items\">\n<div class=\"row prompt\"><span class=\"who\">prompt</span>",
        );
        text_block(out, &view.prompt, "text");
        out.push_str("</div>\n");
        if let Some(error) = &view.error {
            out.push_str("<div class=\"row error\"><span class=\"who\">error</span>");
            text_block(out, error, "text");
            out.push_str("</div>\n");
        }
        self.items(out, &view.items, shown_calls, shown_permissions);
        out.push_str("</div>\n</section>\n");
    }

    /// What happened before the first turn: a resume or load and the history it replayed.
    fn opening(
        &self,
        out: &mut String,
        items: &[Item],
        shown_calls: &mut HashSet<String>,
        shown_permissions: &mut HashSet<i64>,
    ) {
        out.push_str(
            "<section class=\"turn\" id=\"opening\">\n<h3>Before the first turn</h3>\n\
             <div class=\"items\">\n",
        );
        self.items(out, items, shown_calls, shown_permissions);
        out.push_str("</div>\n</section>\n");
    }

    /// The rows of a turn's (or the opening's) items, in order.
    fn items(
        &self,
        out: &mut String,
        items: &[Item],
        shown_calls: &mut HashSet<String>,
        shown_permissions: &mut HashSet<i64>,
    ) {
        let said = |out: &mut String, class: &str, who: &str, text: &str| {
            let _ = write!(
                out,
                "<div class=\"row {class}\"><span class=\"who\">{who}</span>"
            );
            text_block(out, text, "text");
            out.push_str("</div>\n");
        };
        for item in items {
            match item {
                Item::AgentText { text, .. } => said(out, "say", "agent", text),
                Item::Thought { text, .. } => said(out, "thought", "thinks", text),
                Item::UserText { text, .. } => said(out, "say", "user", text),
                Item::Plan { entries } => {
                    out.push_str("<div class=\"row plan\"><span class=\"who\">plan</span><ul>");
                    for entry in entries {
                        let _ = write!(out, "<li>{}</li>", esc(entry));
                    }
                    out.push_str("</ul></div>\n");
                }
                Item::State { state, stop_reason } => {
                    let _ = writeln!(
                        out,
                        "<div class=\"row state\"><span class=\"who\">state</span>{}{}</div>",
                        esc(state),
                        stop_reason
                            .as_deref()
                            .map(|r| format!(" <span class=\"meta\">({})</span>", esc(r)))
                            .unwrap_or_default()
                    );
                }
                Item::Terminal(view) => self.terminal(out, view),
                Item::ToolCall(call) => {
                    shown_calls.insert(call.tool_call_id.clone());
                    self.tool_call(out, call);
                }
                Item::Permission {
                    tool_call_title,
                    request,
                } => {
                    shown_permissions.insert(request.request_seq);
                    self.permission(out, tool_call_title.as_deref(), request);
                }
                Item::Elicitation(view) => self.elicitation(out, view),
                Item::Request(view) => self.request(out, view),
            }
        }
    }

    /// An agent-owned terminal (v2): its command, where it ran, how it ended, its output.
    fn terminal(&self, out: &mut String, view: &show::TerminalView) {
        let end_class = match (view.exit_code, view.exited) {
            (Some(0), _) => "st-completed",
            (_, true) => "st-failed",
            (_, false) => "st-in_progress",
        };
        let _ = write!(
            out,
            "<div class=\"row terminal\" data-terminal-id=\"{}\">\n<div class=\"line\">\
             <span class=\"icon\" title=\"terminal\">🖥️</span> terminal <code>{}</code>: \
             <code>{}</code>{} <span class=\"status {end_class}\">{}</span> \
             <span class=\"meta\">{} of output</span></div>\n",
            esc(&view.terminal_id),
            esc(&view.terminal_id),
            esc(view.command.as_deref().unwrap_or("?")),
            view.cwd
                .as_deref()
                .map(|cwd| format!(" in <code>{}</code>", esc(cwd)))
                .unwrap_or_default(),
            esc(&show::terminal_end(view)),
            format_size(view.output_bytes as i64),
        );
        if !view.output.is_empty() {
            let _ = write!(
                out,
                "<details class=\"payload\"><summary>output{}</summary>",
                if view.output.len() < view.output_bytes {
                    " (its end)"
                } else {
                    ""
                }
            );
            text_block(out, &view.output, "code");
            out.push_str("</details>\n");
        }
        out.push_str("</div>\n");
    }

    /// An elicitation (v2): what the agent asked, and the client's answer.
    fn elicitation(&self, out: &mut String, view: &show::ElicitationView) {
        let class = match view.action.as_deref() {
            Some("accept") => "allow",
            Some(_) => "reject",
            None => "none",
        };
        let _ = write!(
            out,
            "<div class=\"row elicitation\" id=\"elicitation-{seq}\">\n<div class=\"line\">\
             <span class=\"icon\" title=\"elicitation\">❓</span> Elicitation ({}): {} · \
             <span class=\"decision {class}\">{}</span> · <a class=\"msglink\" \
             href=\"#msg-{seq}\">request #{seq}</a></div>\n",
            esc(view.mode.as_deref().unwrap_or("?")),
            esc(&view.message),
            esc(&show::elicitation_answer(view)),
            seq = view.seq,
        );
        if let Some(url) = &view.url {
            let _ = writeln!(
                out,
                "<div class=\"meta\">url <code>{}</code>{}</div>",
                esc(url),
                if view.completed { " · completed" } else { "" }
            );
        }
        if let Some(call) = &view.tool_call_id {
            let _ = writeln!(
                out,
                "<div class=\"meta\">for tool call <code>{}</code></div>",
                esc(call)
            );
        }
        if let Some(content) = &view.content {
            out.push_str("<details class=\"payload\"><summary>accepted</summary>");
            text_block(out, &json_text(content), "code");
            out.push_str("</details>\n");
        }
        out.push_str("</div>\n");
    }

    /// Another request of the session: a cancellation, a resume, a fork, a title set...
    fn request(&self, out: &mut String, view: &show::RequestView) {
        let _ = write!(
            out,
            "<div class=\"row request\">\n<div class=\"line\">\
             <span class=\"icon\" title=\"request\">↪</span> <code>{}</code> from {}",
            esc(&view.method),
            view.from,
        );
        if !view.about.is_empty() {
            let _ = write!(out, ": {}", esc(&view.about));
        }
        if let Some(cancelled) = view.cancels_seq {
            let _ = write!(
                out,
                " (<a class=\"msglink\" href=\"#msg-{cancelled}\">request #{cancelled}</a>)"
            );
        }
        if let Some(answer) = &view.answer {
            let _ = write!(out, " → {}", esc(answer));
        }
        let _ = writeln!(
            out,
            " · <a class=\"msglink\" href=\"#msg-{seq}\">line #{seq}</a></div>\n</div>",
            seq = view.seq
        );
    }

    fn tool_call(&self, out: &mut String, call: &ToolCallRow) {
        let kind = kind_of(call);
        let status = status_of(call);
        let anchor = self
            .call_anchor
            .get(&call.tool_call_id)
            .copied()
            .unwrap_or(0);
        let _ = write!(
            out,
            "<div class=\"row tool\" id=\"tool-{anchor}\" data-tool-call-id=\"{}\" data-kind=\"{}\" \
             data-status=\"{}\">\n<div class=\"line\"><span class=\"icon\" title=\"{}\">{}</span>\
             <span class=\"kind\">{}</span> <span class=\"title\">{}</span> \
             <span class=\"status {}\">{}</span> <span class=\"dur\">{}</span> \
             <code class=\"tcid\">{}</code></div>\n",
            esc(&call.tool_call_id),
            esc(kind),
            esc(status),
            esc(kind),
            kind_icon(kind),
            esc(kind),
            esc(call.title.as_deref().unwrap_or(&call.tool_call_id)),
            status_class(status),
            esc(status),
            call.duration_us()
                .map(format_duration)
                .unwrap_or_else(|| "-".into()),
            esc(&call.tool_call_id),
        );
        let paths = call.paths();
        if !paths.is_empty() {
            out.push_str("<div class=\"paths\">");
            for path in &paths {
                let _ = write!(out, "<code>{}</code> ", esc(path));
            }
            out.push_str("</div>\n");
        }
        let items: Vec<&Value> = call
            .content
            .as_ref()
            .and_then(Value::as_array)
            .map(|a| a.iter().collect())
            .unwrap_or_default();
        for item in &items {
            if item.get("type").and_then(Value::as_str) == Some("diff") {
                diff(out, item);
            }
        }
        let _ = write!(
            out,
            "<div class=\"meta\">created by {} · {} update(s) · first seen {}",
            esc(&call.created_by),
            call.update_count,
            format_time(call.first_seen_at)
        );
        if let Some(seq) = call.first_seq {
            let _ = write!(
                out,
                " · <a class=\"msglink\" href=\"#msg-{seq}\">message #{seq}</a>"
            );
        }
        out.push_str("</div>\n");
        if let Some(input) = &call.raw_input {
            out.push_str("<details class=\"payload\"><summary>rawInput</summary>");
            text_block(out, &json_text(input), "code");
            out.push_str("</details>\n");
        }
        if let Some(output) = &call.raw_output {
            out.push_str("<details class=\"payload\"><summary>rawOutput</summary>");
            text_block(out, &json_text(output), "code");
            out.push_str("</details>\n");
        }
        if !items.is_empty() {
            let _ = write!(
                out,
                "<details class=\"payload\"><summary>content ({} item(s))</summary>",
                items.len()
            );
            for item in &items {
                content_item(out, item);
            }
            out.push_str("</details>\n");
        }
        out.push_str("</div>\n");
    }

    fn permission(&self, out: &mut String, title: Option<&str>, request: &PermissionRow) {
        let options: Vec<&Value> = request
            .options
            .as_ref()
            .and_then(Value::as_array)
            .map(|a| a.iter().collect())
            .unwrap_or_default();
        let _ = write!(
            out,
            "<div class=\"row perm\" id=\"perm-{}\" data-tool-call-id=\"{}\" \
             data-decided-by=\"{}\" data-option-id=\"{}\">\n<div class=\"line\">\
             <span class=\"icon\" title=\"permission\">🔐</span> Permission for ",
            request.request_seq,
            esc(request.tool_call_id.as_deref().unwrap_or("")),
            esc(request.decided_by.as_deref().unwrap_or("")),
            esc(request.option_id.as_deref().unwrap_or("")),
        );
        self.permission_line(out, title, request, &options);
        // v2: what the agent says it asks, and about what.
        if let Some(description) = &request.description {
            let _ = writeln!(out, "<div class=\"meta\">{}</div>", esc(description));
        }
        if let Some(subject) = &request.subject_summary {
            let _ = writeln!(
                out,
                "<div class=\"meta\">subject: <code>{}</code></div>",
                esc(subject)
            );
        }
        offered_options(out, request, &options);
        self.policy_remark(out, request);
        out.push_str("</div>\n");
    }

    /// The rest of a permission request's first line: what it is for (a link to its tool call
    /// when the page shows it), the decision, who made it, by which rule, how long it took, and
    /// a link to the request's line.
    fn permission_line(
        &self,
        out: &mut String,
        title: Option<&str>,
        request: &PermissionRow,
        options: &[&Value],
    ) {
        let label = esc(show::permission_label(title, request));
        match request
            .tool_call_id
            .as_ref()
            .and_then(|id| self.call_anchor.get(id))
        {
            Some(n) => {
                let _ = write!(out, "<a href=\"#tool-{n}\">{label}</a>");
            }
            None => out.push_str(&label),
        }
        let (decision_class, decision) = decision_html(request, options);
        let _ = write!(
            out,
            ": <span class=\"decision {decision_class}\">{decision}</span> · by <span \
             class=\"by\">{}</span>",
            esc(request.decided_by.as_deref().unwrap_or("nobody yet"))
        );
        if let Some(rule) = &request.policy_rule {
            let _ = write!(out, " (rule <code>{}</code>)", esc(rule));
        }
        if let Some(us) = request.decision_us {
            let _ = write!(out, " · after {}", format_duration(us));
        }
        let _ = writeln!(
            out,
            " · <a class=\"msglink\" href=\"#msg-{seq}\">request #{seq}</a></div>",
            seq = request.request_seq
        );
    }

    /// What the policy said about a permission request, when it decided or gave a reason.
    fn policy_remark(&self, out: &mut String, request: &PermissionRow) {
        if let Some(note) = self.notes.get(&request.request_seq)
            && (note.decision.is_some() || note.reason.is_some())
        {
            let _ = writeln!(
                out,
                "<div class=\"meta\">policy: {}{}{}</div>",
                esc(note.decision.as_deref().unwrap_or("-")),
                note.reason
                    .as_deref()
                    .map(|r| format!(" · {}", esc(r)))
                    .unwrap_or_default(),
                if note.shadow { " · shadow mode" } else { "" }
            );
        }
    }

    fn messages(&self, out: &mut String, messages: &[MessageRow], total: i64) {
        let replies: HashMap<i64, i64> = messages
            .iter()
            .filter_map(|m| Some((m.reply_to_seq?, m.seq)))
            .collect();
        let _ = write!(
            out,
            "<section id=\"messages\"><h2>Messages</h2>\n<p class=\"hint\">Every line of \
             connection #{} (all its sessions and the agent's stderr), in the order acptap read \
             them. Times are from the first line.</p>\n<table class=\"msgs\">\n<thead><tr><th>#</th>\
             <th>time</th><th>dir</th><th>kind</th><th>method</th><th>id</th><th>size</th>\
             <th>pair</th><th>line</th></tr></thead>\n<tbody>\n",
            self.session.connection_id
        );
        for m in messages {
            let text = String::from_utf8_lossy(&m.raw);
            let other_session = m
                .session_id
                .as_ref()
                .is_some_and(|s| s != &self.session.session_id);
            let _ = write!(
                out,
                "<tr class=\"row msg {}{}\" id=\"msg-{}\" data-dir=\"{}\" data-method=\"{}\">\
                 <td class=\"seq\"><a href=\"#msg-{}\">{}</a></td><td title=\"{} UTC\">+{:.3}s</td>\
                 <td>{}</td><td>{}</td><td>{}",
                direction_class(m.direction),
                if other_session { " other" } else { "" },
                m.seq,
                m.direction.as_str(),
                esc(m.method.as_deref().unwrap_or("")),
                m.seq,
                m.seq,
                format_time(m.ts),
                (m.ts - self.base_ts) as f64 / 1e6,
                direction_label(m.direction),
                m.kind.as_str(),
                esc(m.method.as_deref().unwrap_or("")),
            );
            if other_session {
                out.push_str(" <span class=\"badge\">other session</span>");
            }
            if m.origin != "peer" {
                let _ = write!(out, " <span class=\"badge\">by {}</span>", esc(&m.origin));
            }
            if !m.forwarded {
                out.push_str(" <span class=\"badge\">withheld</span>");
            }
            let _ = write!(
                out,
                "</td><td><code>{}</code></td><td>{}</td><td>",
                esc(m.rpc_id.as_deref().unwrap_or("")),
                format_size(m.size)
            );
            if let Some(request) = m.reply_to_seq {
                let _ = write!(
                    out,
                    "<a class=\"pair\" href=\"#msg-{request}\">↩ #{request}</a>"
                );
            } else if let Some(response) = replies.get(&m.seq) {
                let _ = write!(
                    out,
                    "<a class=\"pair\" href=\"#msg-{response}\">→ #{response}</a>"
                );
            } else if m.kind == MessageKind::Request {
                out.push_str("<span class=\"warn\">no reply</span>");
            }
            let _ = write!(
                out,
                "</td><td><details><summary>{}</summary>",
                esc(&one_line(&text, 120))
            );
            if m.truncated {
                let _ = write!(
                    out,
                    "<p class=\"warn\">recorded only the first {} of {}</p>",
                    format_size(m.raw.len() as i64),
                    format_size(m.size)
                );
            }
            text_block(out, text.trim_end_matches(['\n', '\r']), "code");
            out.push_str("</details></td></tr>\n");
        }
        let hidden = total - messages.len() as i64;
        if hidden > 0 {
            let _ = writeln!(
                out,
                "<tr class=\"fold\"><td colspan=\"9\">⋯ {hidden} more line(s) are not shown here; \
                 <code>acptap export {}</code> writes every line</td></tr>",
                esc(&self.session.session_id)
            );
        }
        out.push_str("</tbody>\n</table>\n</section>\n");
    }
}

/// A permission request's decision: its class (`allow`, `reject`, `none`, from the chosen
/// option's kind) and its HTML: the chosen option's name and kind, the outcome without an
/// option, or `no answer`.
fn decision_html(request: &PermissionRow, options: &[&Value]) -> (&'static str, String) {
    let option_name = |id: &str| {
        options
            .iter()
            .find(|o| o.get("optionId").and_then(Value::as_str) == Some(id))
            .and_then(|o| o.get("name").and_then(Value::as_str))
            .map(str::to_owned)
    };
    let class = match request.option_kind.as_deref() {
        Some(k) if k.starts_with("allow") => "allow",
        Some(k) if k.starts_with("reject") => "reject",
        _ => "none",
    };
    let html = match (&request.outcome, &request.option_id) {
        (None, _) => "no answer".to_owned(),
        (Some(outcome), None) => esc(outcome),
        (Some(_), Some(id)) => format!(
            "{} <span class=\"okind\">{}</span>",
            esc(&option_name(id).unwrap_or_else(|| id.clone())),
            esc(request.option_kind.as_deref().unwrap_or("?"))
        ),
    };
    (class, html)
}

/// The options a permission request offered, the chosen one marked.
fn offered_options(out: &mut String, request: &PermissionRow, options: &[&Value]) {
    out.push_str("<ul class=\"options\">");
    for option in options {
        let field = |name: &str| option.get(name).and_then(Value::as_str).unwrap_or("");
        let chosen = request.option_id.is_some()
            && request.option_id.as_deref() == option.get("optionId").and_then(Value::as_str);
        let _ = write!(
            out,
            "<li{}>{}<span class=\"oname\">{}</span> <span class=\"okind\">{}</span> \
             <code>{}</code></li>",
            if chosen { " class=\"chosen\"" } else { "" },
            if chosen { "✓ " } else { "" },
            esc(field("name")),
            esc(field("kind")),
            esc(field("optionId")),
        );
    }
    out.push_str("</ul>\n");
}

/// A text as a `<pre>`; past [`TRUNCATE_AT`] bytes, its beginning with the whole in a `<details>`
/// (the CSS hides the beginning while the whole is open). `class` is one of this module's names.
fn text_block(out: &mut String, text: &str, class: &str) {
    if text.len() <= TRUNCATE_AT {
        let _ = write!(out, "<pre class=\"{class}\">{}</pre>", esc(text));
        return;
    }
    let mut cut = TRUNCATE_AT;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let _ = write!(
        out,
        "<div class=\"trunc\"><pre class=\"{class} preview\">{}…</pre><details class=\"more\">\
         <summary>show all {} ({} more)</summary><pre class=\"{class}\">{}</pre></details></div>",
        esc(&text[..cut]),
        format_size(text.len() as i64),
        format_size((text.len() - cut) as i64),
        esc(text),
    );
}

/// A JSON value for reading: a string as itself, anything else pretty-printed.
fn json_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_else(|_| other.to_string()),
    }
}

fn content_item(out: &mut String, item: &Value) {
    let tag = item.get("type").and_then(Value::as_str).unwrap_or("");
    let inner = item.get("content");
    match (
        tag,
        inner.and_then(|c| c.get("text")).and_then(Value::as_str),
    ) {
        ("content", Some(text)) => text_block(out, text, "code"),
        ("diff", _) => {
            let path = item.get("path").and_then(Value::as_str).unwrap_or("?");
            let _ = write!(
                out,
                "<p class=\"meta\">diff of <code>{}</code> (shown above)</p>",
                esc(path)
            );
        }
        ("terminal", _) => {
            let id = item
                .get("terminalId")
                .and_then(Value::as_str)
                .unwrap_or("?");
            let _ = write!(
                out,
                "<p class=\"meta\">terminal <code>{}</code></p>",
                esc(id)
            );
        }
        _ => text_block(out, &json_text(item), "code"),
    }
}

fn kind_of(call: &ToolCallRow) -> &str {
    call.kind.as_deref().unwrap_or("other")
}

fn status_of(call: &ToolCallRow) -> &str {
    call.status.as_deref().unwrap_or("pending")
}

/// The symbol of a tool kind; custom kinds (`_x`, or any the protocol does not name) share one.
fn kind_icon(kind: &str) -> &'static str {
    match kind {
        "read" => "📖",
        "edit" => "✏️",
        "delete" => "🗑️",
        "move" => "📦",
        "search" => "🔍",
        "execute" => "▶️",
        "think" => "💭",
        "fetch" => "🌐",
        "switch_mode" => "🔀",
        "other" => "⚙️",
        _ => "✳️",
    }
}

fn status_class(status: &str) -> &'static str {
    match status {
        "pending" => "st-pending",
        "in_progress" => "st-in_progress",
        "completed" => "st-completed",
        "failed" => "st-failed",
        _ => "st-custom",
    }
}

fn direction_class(direction: Direction) -> &'static str {
    match direction {
        Direction::ClientToAgent => "dir-c2a",
        Direction::AgentToClient => "dir-a2c",
        Direction::Stderr => "dir-stderr",
    }
}

fn direction_label(direction: Direction) -> &'static str {
    match direction {
        Direction::ClientToAgent => "client → agent",
        Direction::AgentToClient => "agent → client",
        Direction::Stderr => "agent stderr",
    }
}

/// `532 B`, `4.1 KiB`, `2.3 MiB`.
fn format_size(bytes: i64) -> String {
    match bytes {
        _ if bytes < 1024 => format!("{bytes} B"),
        _ if bytes < 1024 * 1024 => format!("{:.1} KiB", bytes as f64 / 1024.0),
        _ => format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0)),
    }
}

/// `sha256-<base64>` of an inline script or style, for the Content-Security-Policy.
fn csp_hash(text: &str) -> String {
    format!("sha256-{}", base64(&sha2::Sha256::digest(text.as_bytes())))
}

fn base64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn esc_escapes_the_five_characters() {
        assert_eq!(
            esc(r#"<a href="x" title='y'>&</a>"#),
            "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;"
        );
        assert_eq!(esc("plain é"), "plain é");
        // Bidi overrides and escape sequences are shown, not obeyed.
        assert_eq!(esc("a\u{202e}gnp.exe"), "a\u{fffd}gnp.exe");
        assert_eq!(esc("x\u{1b}[2Jy\nz"), "x\u{fffd}[2Jy\nz");
    }

    #[test]
    fn long_text_is_cut_on_a_character_boundary() {
        let text = "é".repeat(TRUNCATE_AT); // two bytes each
        let mut out = String::new();
        text_block(&mut out, &text, "code");
        assert!(out.contains("class=\"code preview\""), "{}", &out[..200]);
        assert!(out.contains("<details class=\"more\"><summary>show all 8.0 KiB"));
        let mut short = String::new();
        text_block(&mut short, "<b>", "code");
        assert_eq!(short, "<pre class=\"code\">&lt;b&gt;</pre>");
    }

    #[test]
    fn base64_matches_the_rfc_examples() {
        for (input, expected) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(input.as_bytes()), expected);
        }
    }

    #[test]
    fn page_code_holds_no_closing_tags() {
        for code in [CSS, GUARD_JS, FILTER_JS] {
            assert!(!code.to_ascii_lowercase().contains("</"), "{code}");
        }
    }
}
