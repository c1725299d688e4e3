//! `report`: one session as a single self-contained HTML file, to open from disk and to share.
//!
//! It renders, in this order: a header (session, agent, cwd, connection, start, label, how the
//! connection ended); filters (direction, method, tool kind, status, a text search); the timeline
//! of prompt turns (prompt, stop reason, duration, the agent's text, thoughts and plans, every tool
//! call with its kind icon, status, duration, paths, diffs and expandable rawInput / rawOutput /
//! content, every permission request with the options offered, the choice, who made it and how
//! long it took); what happened outside any turn; and every message of the connection, each
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
//! `<style>`, an `on*=` attribute, a URL or a class name: class names come from fixed tables, links
//! are `#anchors` built from numbers, and the script reads recorded values only as DOM text and
//! `data-*` attributes (never with `innerHTML`). As a second line of defence, the CSP allows only
//! this module's own script and style (by hash), so an injected script or handler would not run.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;

use serde_json::Value;
use sha2::Digest;

use super::show::{self, Item, TurnView};
use super::{format_duration, format_time, one_line};
use crate::record::Reader;
use crate::record::queries::{self, MessageRow, PermissionRow, SessionRef, ToolCallRow};

/// Payloads longer than this (in bytes) are shown truncated, with an expander for the rest.
pub const TRUNCATE_AT: usize = 4096;

/// A diff with more rows than this starts collapsed.
const DIFF_OPEN_ROWS: usize = 200;

/// Unchanged lines kept on each side of a change; longer unchanged runs are folded.
const DIFF_CONTEXT: usize = 3;

/// Past this many cells, the line diff falls back to "all old lines removed, all new added".
const LCS_MAX_CELLS: usize = 4_000_000;

/// Escapes `& < > " '` for HTML text and double-quoted attribute values, and shows the
/// characters that would make text read in another order or hide in it (bidi controls such as
/// U+202E, other control characters but line breaks and tabs) as U+FFFD, as the terminal views do.
/// Every recorded string goes through here.
pub fn esc(text: &str) -> String {
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
struct PolicyNote {
    decision: Option<String>,
    reason: Option<String>,
    shadow: bool,
}

/// Renders the report of one session: a complete HTML document.
pub fn render(reader: &Reader, session: &SessionRef) -> rusqlite::Result<String> {
    let timeline = show::timeline(reader, session)?;
    let turns = queries::turns(reader, session)?;
    let calls = queries::session_tool_calls(reader, session)?;
    let permissions = queries::permission_requests(reader, session)?;
    let notes: HashMap<i64, PolicyNote> = permissions
        .iter()
        .map(|p| {
            (
                p.request_seq,
                PolicyNote {
                    decision: p.policy_decision.clone(),
                    reason: p.policy_reason.clone(),
                    shadow: p.policy_shadow,
                },
            )
        })
        .collect();
    let messages = queries::connection_messages(reader, session.connection_id)?;
    let (started_at, exit_signal) =
        queries::connection_start_and_signal(reader, session.connection_id)?;

    let page = Page {
        session,
        call_anchor: calls
            .iter()
            .enumerate()
            .map(|(i, c)| (c.tool_call_id.clone(), i))
            .collect(),
        notes,
        base_ts: messages.first().map(|m| m.ts).unwrap_or(0),
    };

    let mut body = String::new();
    page.header(
        &mut body,
        &timeline.session,
        started_at,
        exit_signal,
        &messages,
    );
    page.filters(&mut body, &calls, &messages);
    body.push_str("<main>\n<section id=\"timeline\"><h2>Timeline</h2>\n");
    if timeline.turns.is_empty() {
        body.push_str("<p class=\"empty\">No prompt turn was recorded.</p>\n");
    }
    let mut shown_calls = HashSet::new();
    let mut shown_permissions = HashSet::new();
    for (view, turn) in timeline.turns.iter().zip(&turns) {
        page.turn(
            &mut body,
            view,
            turn,
            &mut shown_calls,
            &mut shown_permissions,
        );
    }
    body.push_str("</section>\n");

    let loose_calls: Vec<&ToolCallRow> = calls
        .iter()
        .filter(|c| !shown_calls.contains(&c.tool_call_id))
        .collect();
    let loose_permissions: Vec<&PermissionRow> = permissions
        .iter()
        .filter(|p| !shown_permissions.contains(&p.request_seq))
        .collect();
    if !loose_calls.is_empty() || !loose_permissions.is_empty() {
        body.push_str(
            "<section id=\"outside\"><h2>Outside any prompt turn</h2>\n<div class=\"items\">\n",
        );
        for call in loose_calls {
            page.tool_call(&mut body, call);
        }
        for request in loose_permissions {
            let title = request
                .tool_call_id
                .as_ref()
                .and_then(|id| calls.iter().find(|c| &c.tool_call_id == id))
                .and_then(|c| c.title.clone());
            page.permission(&mut body, title.as_deref(), request);
        }
        body.push_str("</div>\n</section>\n");
    }
    page.messages(&mut body, &messages);
    body.push_str("</main>\n");

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
    out.push_str(&body);
    let _ = write!(out, "<script>{FILTER_JS}</script>\n</body>\n</html>\n");
    Ok(out)
}

/// What the parts of the page share.
struct Page<'a> {
    session: &'a SessionRef,
    /// Tool call id to the number in its anchor, `#tool-<n>`.
    call_anchor: HashMap<String, usize>,
    notes: HashMap<i64, PolicyNote>,
    /// The first message's time: message times are shown relative to it.
    base_ts: i64,
}

impl Page<'_> {
    fn header(
        &self,
        out: &mut String,
        s: &queries::SessionSummary,
        started_at: Option<i64>,
        exit_signal: Option<i64>,
        messages: &[MessageRow],
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
            field("Protocol", esc(&version.to_string()));
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
                s.turns,
                s.tool_calls,
                s.permission_requests,
                messages.len()
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
        select("Direction", "dir", &dirs, &|d| esc(direction_label(d)));
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
        turn: &queries::Turn,
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
        let _ = write!(
            out,
            " <span class=\"when\">{} UTC</span></h3>\n<div class=\"items\">\n\
             <div class=\"row prompt\"><span class=\"who\">prompt</span>",
            format_time(view.started_at)
        );
        text_block(out, &view.prompt, "text");
        out.push_str("</div>\n");
        if let Some(error) = &view.error {
            out.push_str("<div class=\"row error\"><span class=\"who\">error</span>");
            text_block(out, error, "text");
            out.push_str("</div>\n");
        }
        for item in &view.items {
            match item {
                Item::AgentText { text } => {
                    out.push_str("<div class=\"row say\"><span class=\"who\">agent</span>");
                    text_block(out, text, "text");
                    out.push_str("</div>\n");
                }
                Item::Thought { text } => {
                    out.push_str("<div class=\"row thought\"><span class=\"who\">thinks</span>");
                    text_block(out, text, "text");
                    out.push_str("</div>\n");
                }
                Item::Plan { entries } => {
                    out.push_str("<div class=\"row plan\"><span class=\"who\">plan</span><ul>");
                    for entry in entries {
                        let _ = write!(out, "<li>{}</li>", esc(entry));
                    }
                    out.push_str("</ul></div>\n");
                }
                Item::ToolCall(call) => {
                    shown_calls.insert(call.tool_call_id.clone());
                    self.tool_call(out, call);
                }
                Item::Permission { title, request } => {
                    shown_permissions.insert(request.request_seq);
                    self.permission(out, title.as_deref(), request);
                }
            }
        }
        out.push_str("</div>\n</section>\n");
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
        let option_name = |id: &str| {
            options
                .iter()
                .find(|o| o.get("optionId").and_then(Value::as_str) == Some(id))
                .and_then(|o| o.get("name").and_then(Value::as_str))
                .map(str::to_owned)
        };
        let decision_class = match request.option_kind.as_deref() {
            Some(k) if k.starts_with("allow") => "allow",
            Some(k) if k.starts_with("reject") => "reject",
            _ => "none",
        };
        let decision = match (&request.outcome, &request.option_id) {
            (None, _) => "no answer".to_owned(),
            (Some(outcome), None) => esc(outcome),
            (Some(_), Some(id)) => format!(
                "{} <span class=\"okind\">{}</span>",
                esc(&option_name(id).unwrap_or_else(|| id.clone())),
                esc(request.option_kind.as_deref().unwrap_or("?"))
            ),
        };
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
        let label = esc(title.or(request.tool_call_id.as_deref()).unwrap_or("?"));
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
        let _ = write!(
            out,
            " · <a class=\"msglink\" href=\"#msg-{seq}\">request #{seq}</a></div>\n<ul \
             class=\"options\">",
            seq = request.request_seq
        );
        for option in &options {
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
        out.push_str("</div>\n");
    }

    fn messages(&self, out: &mut String, messages: &[MessageRow]) {
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
                direction_class(&m.direction),
                if other_session { " other" } else { "" },
                m.seq,
                esc(&m.direction),
                esc(m.method.as_deref().unwrap_or("")),
                m.seq,
                m.seq,
                format_time(m.ts),
                (m.ts - self.base_ts) as f64 / 1e6,
                esc(direction_label(&m.direction)),
                esc(&m.kind),
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
            } else if m.kind == "request" {
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
        out.push_str("</tbody>\n</table>\n</section>\n");
    }
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

/// One step of a line diff: indexes into the old and new lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DiffOp {
    Same(usize, usize),
    Removed(usize),
    Added(usize),
}

/// A line diff: the common prefix and suffix, and a longest common subsequence between them
/// (or, when that would take too much memory, everything between them removed then added).
fn line_diff(old: &[&str], new: &[&str]) -> Vec<DiffOp> {
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let (a, b) = (
        &old[prefix..old.len() - suffix],
        &new[prefix..new.len() - suffix],
    );
    let mut ops: Vec<DiffOp> = (0..prefix).map(|i| DiffOp::Same(i, i)).collect();
    if (a.len() + 1) * (b.len() + 1) <= LCS_MAX_CELLS {
        // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
        let width = b.len() + 1;
        let mut lcs = vec![0u32; (a.len() + 1) * width];
        for i in (0..a.len()).rev() {
            for j in (0..b.len()).rev() {
                lcs[i * width + j] = if a[i] == b[j] {
                    lcs[(i + 1) * width + j + 1] + 1
                } else {
                    lcs[(i + 1) * width + j].max(lcs[i * width + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < a.len() || j < b.len() {
            if i < a.len() && j < b.len() && a[i] == b[j] {
                ops.push(DiffOp::Same(prefix + i, prefix + j));
                i += 1;
                j += 1;
            } else if j == b.len()
                || (i < a.len() && lcs[(i + 1) * width + j] >= lcs[i * width + j + 1])
            {
                ops.push(DiffOp::Removed(prefix + i));
                i += 1;
            } else {
                ops.push(DiffOp::Added(prefix + j));
                j += 1;
            }
        }
    } else {
        ops.extend((0..a.len()).map(|i| DiffOp::Removed(prefix + i)));
        ops.extend((0..b.len()).map(|j| DiffOp::Added(prefix + j)));
    }
    let (old_end, new_end) = (old.len() - suffix, new.len() - suffix);
    ops.extend((0..suffix).map(|k| DiffOp::Same(old_end + k, new_end + k)));
    ops
}

/// A `"type":"diff"` content item as a table of old and new lines with their numbers.
fn diff(out: &mut String, item: &Value) {
    let path = item.get("path").and_then(Value::as_str).unwrap_or("?");
    let old_text = item.get("oldText").and_then(Value::as_str);
    let new_text = item.get("newText").and_then(Value::as_str).unwrap_or("");
    let old: Vec<&str> = old_text.map(|t| t.lines().collect()).unwrap_or_default();
    let new: Vec<&str> = new_text.lines().collect();
    let ops = line_diff(&old, &new);
    let (removed, added) = ops.iter().fold((0, 0), |(r, a), op| match op {
        DiffOp::Removed(_) => (r + 1, a),
        DiffOp::Added(_) => (r, a + 1),
        DiffOp::Same(..) => (r, a),
    });
    let _ = write!(
        out,
        "<details class=\"diff\"{}><summary>diff <code>{}</code>{} <span class=\"del\">−{removed}</span> \
         <span class=\"add\">+{added}</span></summary>\n<table class=\"diff\"><tbody>\n",
        if ops.len() <= DIFF_OPEN_ROWS {
            " open"
        } else {
            ""
        },
        esc(path),
        if old_text.is_none() {
            " (new file)"
        } else {
            ""
        },
    );
    // Unchanged lines farther than DIFF_CONTEXT from any change are folded.
    let near_change = |k: usize| {
        let lo = k.saturating_sub(DIFF_CONTEXT);
        let hi = (k + DIFF_CONTEXT + 1).min(ops.len());
        ops[lo..hi].iter().any(|op| !matches!(op, DiffOp::Same(..)))
    };
    let mut folded = 0;
    for (k, op) in ops.iter().enumerate() {
        if matches!(op, DiffOp::Same(..)) && !near_change(k) {
            folded += 1;
            continue;
        }
        if folded > 0 {
            let _ = writeln!(
                out,
                "<tr class=\"fold\"><td class=\"ln\"></td><td class=\"ln\"></td><td class=\"sign\">\
                 </td><td class=\"code\">⋯ {folded} unchanged line(s)</td></tr>"
            );
            folded = 0;
        }
        let (class, old_no, new_no, sign, text) = match *op {
            DiffOp::Same(i, j) => ("ctx", Some(i), Some(j), " ", old[i]),
            DiffOp::Removed(i) => ("del", Some(i), None, "-", old[i]),
            DiffOp::Added(j) => ("add", None, Some(j), "+", new[j]),
        };
        let number = |n: Option<usize>| n.map(|n| (n + 1).to_string()).unwrap_or_default();
        let _ = writeln!(
            out,
            "<tr class=\"{class}\"><td class=\"ln\">{}</td><td class=\"ln\">{}</td><td \
             class=\"sign\">{sign}</td><td class=\"code\">{}</td></tr>",
            number(old_no),
            number(new_no),
            esc(text)
        );
    }
    if folded > 0 {
        let _ = writeln!(
            out,
            "<tr class=\"fold\"><td class=\"ln\"></td><td class=\"ln\"></td><td class=\"sign\">\
             </td><td class=\"code\">⋯ {folded} unchanged line(s)</td></tr>"
        );
    }
    out.push_str("</tbody></table></details>\n");
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

fn direction_class(direction: &str) -> &'static str {
    match direction {
        "c2a" => "dir-c2a",
        "a2c" => "dir-a2c",
        "stderr" => "dir-stderr",
        _ => "dir-other",
    }
}

fn direction_label(direction: &str) -> &str {
    match direction {
        "c2a" => "client → agent",
        "a2c" => "agent → client",
        "stderr" => "agent stderr",
        other => other,
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
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(chunk.get(1).copied().unwrap_or(0)) << 8)
            | u32::from(chunk.get(2).copied().unwrap_or(0));
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * k)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The page's style. No recorded data in it.
pub const CSS: &str = r#"
:root { --fg: #1d232b; --muted: #66707c; --bg: #fff; --panel: #f5f7fa; --line: #dde2e8;
  --add: #e6f7ea; --add-fg: #116329; --del: #fdecec; --del-fg: #a4161a; --accent: #0b62c4;
  --warn: #9a6700; font-family: system-ui, sans-serif; font-size: 14px; color: var(--fg);
  background: var(--bg); }
@media (prefers-color-scheme: dark) {
  :root { --fg: #dfe3e8; --muted: #98a2ad; --bg: #15191e; --panel: #1e242b; --line: #333c46;
    --add: #15321f; --add-fg: #7ee09a; --del: #3a1a1c; --del-fg: #ff9b9b; --accent: #6cb0ff;
    --warn: #e0b050; }
}
body { margin: 0 auto; max-width: 1200px; padding: 1em 1.5em 4em; }
h1 { font-size: 1.4em; margin: .2em 0 .6em; }
h2 { font-size: 1.2em; border-bottom: 1px solid var(--line); padding-bottom: .2em; margin-top: 1.6em; }
h3 { font-size: 1.05em; margin: 0 0 .5em; }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
pre { margin: .3em 0; padding: .5em .7em; background: var(--panel); border: 1px solid var(--line);
  border-radius: 4px; white-space: pre-wrap; overflow-wrap: anywhere; max-height: 40em; overflow: auto; }
pre.text { font-family: inherit; font-size: inherit; background: none; border: none; padding: 0; max-height: none; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: .2em 1em; margin: 0; }
dl.meta dt { color: var(--muted); }
dl.meta dd { margin: 0; overflow-wrap: anywhere; }
.ok { color: var(--add-fg); } .bad { color: var(--del-fg); } .warn { color: var(--warn); }
.hint, .meta, .when, .dur, .tcid, .kind { color: var(--muted); font-size: .9em; }
#filters { position: sticky; top: 0; z-index: 2; background: var(--bg); border-bottom: 1px solid var(--line);
  padding: .6em 0; margin-top: 1em; display: flex; flex-wrap: wrap; gap: .5em 1em; align-items: center; }
#filters select, #filters input { font: inherit; max-width: 16em; }
#f-count { font-weight: 600; }
.turn { border: 1px solid var(--line); border-radius: 6px; padding: .7em 1em; margin: 1em 0; }
.turn h3 .stop { background: var(--panel); border: 1px solid var(--line); border-radius: 3px; padding: 0 .4em; }
.items > .row { display: block; padding: .35em 0; border-top: 1px dashed var(--line); }
.who { display: inline-block; min-width: 5.5em; color: var(--muted); font-size: .85em;
  text-transform: uppercase; letter-spacing: .04em; vertical-align: top; }
.row.prompt pre.text, .row.say pre.text, .row.thought pre.text, .row.error pre.text { display: inline-block;
  vertical-align: top; width: calc(100% - 6.5em); margin: 0; }
.row.thought pre.text { font-style: italic; color: var(--muted); }
.row.error pre.text { color: var(--del-fg); }
.row.plan ul { display: inline-block; margin: 0; padding-left: 1.2em; vertical-align: top; }
.row.tool .line, .row.perm .line { font-weight: 500; }
.icon { display: inline-block; width: 1.6em; text-align: center; }
.status { border-radius: 3px; padding: 0 .45em; font-size: .85em; border: 1px solid var(--line); }
.st-pending { background: #eef0f3; color: #4b5563; }
.st-in_progress { background: #fff4d6; color: #7a5200; }
.st-completed { background: var(--add); color: var(--add-fg); }
.st-failed { background: var(--del); color: var(--del-fg); font-weight: 700; }
.st-custom { background: #efe6ff; color: #5b2a9e; font-style: italic; }
.paths code { background: var(--panel); padding: 0 .3em; border-radius: 3px; }
.row.tool > .paths, .row.tool > .meta, .row.perm > .meta { margin-left: 2.2em; }
details > summary { cursor: pointer; color: var(--accent); }
details.payload { margin: .2em 0 .2em 1.6em; }
details.diff { margin: .3em 0 .3em 1.6em; }
table.diff { border-collapse: collapse; width: 100%; font-family: ui-monospace, monospace; font-size: 12.5px; }
table.diff td { padding: 0 .5em; vertical-align: top; }
table.diff td.ln { color: var(--muted); text-align: right; width: 3.5em; user-select: none; border-right: 1px solid var(--line); }
table.diff td.sign { width: 1em; user-select: none; }
table.diff td.code { white-space: pre-wrap; overflow-wrap: anywhere; }
tr.add { background: var(--add); color: var(--add-fg); }
tr.del { background: var(--del); color: var(--del-fg); }
tr.fold td { color: var(--muted); font-style: italic; }
span.add { color: var(--add-fg); } span.del { color: var(--del-fg); }
ul.options { margin: .2em 0 .2em 1.6em; padding-left: 1.2em; }
ul.options li.chosen { font-weight: 700; }
.okind { color: var(--muted); font-size: .85em; }
.decision.allow { color: var(--add-fg); font-weight: 600; }
.decision.reject { color: var(--del-fg); font-weight: 600; }
.trunc:has(> details.more[open]) > pre.preview { display: none; }
table.msgs { border-collapse: collapse; width: 100%; table-layout: fixed; }
table.msgs th, table.msgs td { text-align: left; padding: .2em .4em; border-bottom: 1px solid var(--line);
  vertical-align: top; overflow-wrap: anywhere; }
table.msgs th:nth-child(1) { width: 3em; } table.msgs th:nth-child(2) { width: 5.5em; }
table.msgs th:nth-child(3) { width: 7.5em; } table.msgs th:nth-child(4) { width: 6.5em; }
table.msgs th:nth-child(5) { width: 13em; } table.msgs th:nth-child(6) { width: 4em; }
table.msgs th:nth-child(7) { width: 5.5em; } table.msgs th:nth-child(8) { width: 4.5em; }
table.msgs summary { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; color: var(--fg);
  font-family: ui-monospace, monospace; font-size: 12px; }
tr.dir-c2a td:nth-child(3) { color: var(--accent); }
tr.dir-a2c td:nth-child(3) { color: var(--add-fg); }
tr.dir-stderr td:nth-child(3) { color: var(--warn); }
tr.other { opacity: .6; }
.badge { font-size: .75em; border: 1px solid var(--line); border-radius: 3px; padding: 0 .3em; color: var(--muted); }
:target { outline: 2px solid var(--accent); outline-offset: 2px; }
[hidden] { display: none !important; }
"#;

/// Runs first: records script errors and CSP violations on `<html data-errors>`, so a reader (or
/// a test) can see that the page ran cleanly.
pub const GUARD_JS: &str = r#"
(() => {
  const note = (text) => {
    const root = document.documentElement;
    root.dataset.errors = (root.dataset.errors || '') + text + '\n';
  };
  window.addEventListener('error', (e) => note('error: ' + e.message));
  document.addEventListener('securitypolicyviolation', (e) => note('csp: ' + e.violatedDirective));
})();
"#;

/// The filters: each `<select data-attr=X>` keeps the `.row`s whose `data-X` matches (rows
/// without `data-X` are not its business); the search box keeps rows containing the text. The
/// state lives in the URL (`#f:dir=c2a&q=...`) so a filtered view can be linked. Ends by setting
/// `<body data-ready="1">`.
pub const FILTER_JS: &str = r#"
(() => {
  'use strict';
  const selects = Array.from(document.querySelectorAll('#filters select'));
  const search = document.getElementById('f-q');
  const count = document.getElementById('f-count');
  const rows = Array.from(document.querySelectorAll('.row'));
  const PREFIX = '#f:';

  const apply = () => {
    const q = search.value.trim().toLowerCase();
    let shown = 0;
    for (const row of rows) {
      let keep = selects.every((s) => {
        const attr = s.dataset.attr;
        return s.value === '' || !(attr in row.dataset) || row.dataset[attr] === s.value;
      });
      if (keep && q !== '') keep = row.textContent.toLowerCase().includes(q);
      row.hidden = !keep;
      if (keep) shown += 1;
    }
    count.textContent = shown + ' of ' + rows.length + ' rows shown';
  };

  const save = () => {
    const params = new URLSearchParams();
    for (const s of selects) if (s.value !== '') params.set(s.dataset.attr, s.value);
    if (search.value !== '') params.set('q', search.value);
    const state = params.toString();
    try {
      history.replaceState(null, '', state === '' ? location.pathname : PREFIX + state);
    } catch (e) {
      // Some browsers refuse history changes for file: pages; the filters work all the same.
    }
  };

  const load = () => {
    const params = new URLSearchParams(location.hash.slice(PREFIX.length));
    for (const s of selects) {
      s.value = params.get(s.dataset.attr) || '';
      if (s.selectedIndex < 0) s.value = '';
    }
    search.value = params.get('q') || '';
  };

  const reset = () => {
    for (const s of selects) s.value = '';
    search.value = '';
    apply();
    save();
  };

  for (const s of selects) s.addEventListener('change', () => { apply(); save(); });
  search.addEventListener('input', () => { apply(); save(); });
  document.getElementById('f-reset').addEventListener('click', reset);

  // A link to a row the filters hide shows everything again.
  window.addEventListener('hashchange', () => {
    if (location.hash.startsWith(PREFIX)) {
      load();
      apply();
      return;
    }
    let id = location.hash.slice(1);
    try {
      id = decodeURIComponent(id);
    } catch (e) {
      // Not percent-encoded: use it as it is.
    }
    const target = document.getElementById(id);
    if (target && target.closest('[hidden]')) {
      const hash = location.hash;
      reset();
      history.replaceState(null, '', hash);
      target.scrollIntoView();
    }
  });

  if (location.hash.startsWith(PREFIX)) load();
  apply();
  document.body.dataset.ready = '1';
})();
"#;

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
    fn line_diff_finds_changed_lines() {
        use DiffOp::*;
        let old = ["a", "b", "c", "d"];
        let new = ["a", "B", "c", "d", "e"];
        assert_eq!(
            line_diff(&old, &new),
            vec![
                Same(0, 0),
                Removed(1),
                Added(1),
                Same(2, 2),
                Same(3, 3),
                Added(4)
            ]
        );
        assert_eq!(line_diff(&[], &["x"]), vec![Added(0)]);
        assert_eq!(line_diff(&["x"], &[]), vec![Removed(0)]);
        // An insertion in the middle keeps what follows as context.
        assert_eq!(
            line_diff(&["1", "2", "3"], &["1", "x", "2", "3"]),
            vec![Same(0, 0), Added(1), Same(1, 2), Same(2, 3)]
        );
        // Reordered lines: one is kept, the other removed and added.
        let ops = line_diff(&["p", "q"], &["q", "p"]);
        assert_eq!(ops.iter().filter(|o| matches!(o, Same(..))).count(), 1);
        assert_eq!(ops.len(), 3);
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
