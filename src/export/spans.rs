//! One recorded session as OpenTelemetry spans, after the GenAI semantic conventions (agent and
//! tool spans), with an `acp.*` namespace for what they lack. This is the model only: which
//! spans, their parents, times and attributes. Sending them (OTLP) is another module's job.
//!
//! With [`SpanOptions::tool_content`], a turn's span also carries its prompt and the agent's
//! messages, each with the text it ended with (`protocol::conversation`: v2 upserts replace a
//! message, they do not add to it).
//!
//! The tree: one trace per session; its root span `acp.session`; an `invoke_agent` span per
//! prompt turn; an `execute_tool` span per tool call, under the turn it started in (or the root);
//! an `acp.permission` span per permission request, under its tool call's span; a span per
//! request the agent made of the client (`fs/read_text_file`, `terminal/create`, ...), under its
//! turn.
//!
//! # Ids are derived from the recording
//!
//! The trace id is a digest of the session id and its connection's start time, and each span id
//! a digest of the trace id and what the span stands for (a turn's request, a tool call's id). So
//! the same recording, exported twice or from two copies of the database, gives the same ids,
//! and a backend that receives it again can tell.

use sha2::{Digest, Sha256};

use crate::query::Reader;
use crate::query::Result;
use crate::query::{self, SessionRef, Window};

/// What a span says: a flat list of typed attributes, as OpenTelemetry has them.
#[derive(Debug, Clone, PartialEq)]
pub enum Attribute {
    Text(String),
    Int(i64),
    Bool(bool),
    Texts(Vec<String>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    /// The session and the turns: work inside the agent, seen from the client's side.
    Internal,
    /// A permission request: the agent asks the client (or acptap's policy).
    Client,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    Unset,
    Ok,
    Error(String),
}

/// One span, ready for an exporter.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub parent_span_id: Option<[u8; 8]>,
    pub name: String,
    pub kind: SpanKind,
    /// Microseconds since the Unix epoch.
    pub start_us: i64,
    pub end_us: i64,
    pub attributes: Vec<(&'static str, Attribute)>,
    pub status: Status,
    /// Whether the recording holds the span's end (a turn answered, a tool call completed or
    /// failed, a permission decided, a request answered, the connection ended). An unfinished
    /// span ends at the last thing recorded of its session; live export waits for the end.
    pub finished: bool,
}

/// Which spans, and what goes into them beyond their structure.
#[derive(Debug, Clone, Copy, Default)]
pub struct SpanOptions {
    /// The content of the session, as recorded (redacted like the database): tool calls'
    /// arguments (`rawInput`) and results (`rawOutput`, else their content), and each turn's
    /// prompt and the agent's messages (`gen_ai.input.messages`, `gen_ai.output.messages`).
    /// Off, spans carry names, kinds, statuses and decisions only.
    pub tool_content: bool,
    /// Every span (the default), or (for live export) those whose end was recorded at or after
    /// `since`, plus with `open` the unfinished ones and the session's own span.
    pub window: Window,
}

/// A tool call's arguments or result is cut to this many bytes in a span attribute.
pub(crate) const MAX_CONTENT_BYTES: usize = 16 * 1024;

/// A W3C trace context (`traceparent`) a client put in a request's `_meta`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TraceParent {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
}

/// Parses a `traceparent` value as W3C Trace Context level 1 defines it:
/// `VERSION-TRACEID-PARENTID-FLAGS` in lowercase hex; version `ff` and all-zero ids are invalid;
/// a version above 00 may carry more fields after the flags.
pub(crate) fn parse_traceparent(text: &str) -> Option<TraceParent> {
    fn hex<const N: usize>(text: &str) -> Option<[u8; N]> {
        if text.len() != 2 * N || !text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return None;
        }
        let mut out = [0; N];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(out)
    }
    let mut parts = text.split('-');
    let version = hex::<1>(parts.next()?)?[0];
    let trace_id = hex::<16>(parts.next()?)?;
    let span_id = hex::<8>(parts.next()?)?;
    hex::<1>(parts.next()?)?;
    let more = parts.next().is_some();
    if version == 0xff || (version == 0 && more) || trace_id == [0; 16] || span_id == [0; 8] {
        return None;
    }
    Some(TraceParent { trace_id, span_id })
}

/// The `_meta.traceparent` of a recorded request line, when valid.
fn traceparent_of(raw: &[u8]) -> Option<TraceParent> {
    let value: serde_json::Value = serde_json::from_slice(raw).ok()?;
    parse_traceparent(value["params"]["_meta"]["traceparent"].as_str()?)
}

/// A JSON value as an attribute, cut to [`MAX_CONTENT_BYTES`].
fn content(value: &serde_json::Value) -> Attribute {
    let mut text = value.to_string();
    if text.len() > MAX_CONTENT_BYTES {
        let total = text.len();
        let mut cut = MAX_CONTENT_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str(&format!("…[cut: {total} bytes in all]"));
    }
    Attribute::Text(text)
}

/// The trace id of a session: a digest of its id and its connection's start.
pub(crate) fn trace_id(session_id: &str, connection_started_at: i64) -> [u8; 16] {
    let digest = Sha256::new()
        .chain_update(b"acptap trace\0")
        .chain_update(session_id.as_bytes())
        .chain_update(b"\0")
        .chain_update(connection_started_at.to_be_bytes())
        .finalize();
    let mut id = [0; 16];
    id.copy_from_slice(&digest[..16]);
    // An all-zero id is invalid in W3C trace context.
    if id == [0; 16] {
        id[15] = 1;
    }
    id
}

/// The id of the span that stands for `what` in trace `trace`.
pub(crate) fn span_id(trace: &[u8; 16], what: &str) -> [u8; 8] {
    let digest = Sha256::new()
        .chain_update(trace)
        .chain_update(what.as_bytes())
        .finalize();
    let mut id = [0; 8];
    id.copy_from_slice(&digest[..8]);
    if id == [0; 8] {
        id[7] = 1;
    }
    id
}

/// A message's text in a span: cut to [`MAX_CONTENT_BYTES`], saying so.
fn message_text(text: &str) -> String {
    let (kept, cut) = crate::terminal::cut_text(text, MAX_CONTENT_BYTES);
    if cut {
        format!("{kept}…[cut: {} bytes in all]", text.len())
    } else {
        kept.to_owned()
    }
}

/// A turn's messages as the GenAI conventions write them (`gen_ai.input.messages`,
/// `gen_ai.output.messages`): the prompt, and each message the agent sent in the turn (`seqs`:
/// its lines) with the text it ended with, chunks and v2 upserts applied
/// (`protocol::conversation`); thoughts as `reasoning` parts.
fn turn_messages(
    reader: &Reader,
    session: &SessionRef,
    seqs: std::ops::Range<i64>,
    finish_reason: &str,
) -> Result<(serde_json::Value, serde_json::Value)> {
    use crate::protocol::conversation::{Conversation, Role};
    use serde_json::{Value, json};
    let mut prompt = Vec::new();
    let mut conversation = Conversation::new();
    query::for_each_session_line(reader, session, seqs.clone(), |line| {
        if line.session_id.as_deref() != Some(session.session_id.as_str()) {
            return;
        }
        let Ok(message) = serde_json::from_slice::<Value>(&line.raw) else {
            return;
        };
        if line.seq == seqs.start && line.method.as_deref() == Some("session/prompt") {
            for block in message["params"]["prompt"].as_array().into_iter().flatten() {
                prompt.push(match (block["type"].as_str(), block["text"].as_str()) {
                    (Some("text"), Some(text)) => {
                        json!({"type": "text", "content": message_text(text)})
                    }
                    // Images, resources, audio: named, not carried.
                    (kind, _) => json!({"type": kind.unwrap_or("unknown")}),
                });
            }
        }
        conversation.observe(line.seq, line.method.as_deref(), message.get("params"));
    })?;
    let input = json!([{"role": "user", "parts": prompt}]);
    let output: Vec<Value> = conversation
        .messages()
        .iter()
        .filter_map(|m| {
            let part = match m.role {
                Role::Agent => "text",
                Role::Thought => "reasoning",
                Role::User => return None,
            };
            Some(json!({
                "role": "assistant",
                "parts": [{"type": part, "content": message_text(&m.text())}],
                "finish_reason": finish_reason,
            }))
        })
        .collect();
    Ok((input, Value::Array(output)))
}

/// Text attribute, if there is a value.
fn text(key: &'static str, value: Option<&str>) -> Option<(&'static str, Attribute)> {
    value.map(|v| (key, Attribute::Text(v.to_owned())))
}

/// The spans of one session, parents before their children.
///
/// Where the client sent a W3C `traceparent` in the `_meta` of the request that opened the
/// session (else of its first prompt), the spans join that trace: the root span's
/// parent is the client's span, and a turn whose prompt names a span of the same trace is that
/// span's child. Span ids stay derived from the recording.
pub fn session_spans(
    reader: &Reader,
    session: &SessionRef,
    options: SpanOptions,
) -> Result<Vec<Span>> {
    let summary = query::session_summary_of(reader, session)?;
    let (started_at, _) = query::connection_start_and_signal(reader, session.connection_id)?;
    // Span ids come from the recording's own trace id, so two sessions in one client trace
    // never share one.
    let ids = trace_id(
        &session.session_id,
        started_at.unwrap_or(summary.created_at),
    );
    let window = options.window;
    let turns = query::turns(reader, session)?;
    let marks = TurnMarks::read(reader, session, window)?;
    let client_parent = client_trace_parent(reader, session, &summary)?;
    let calls = query::session_tool_calls_in(reader, session, window, options.tool_content)?;
    let known_calls = query::session_tool_call_ids(reader, session)?;
    let permissions = query::permission_requests_in(reader, session, window)?;
    let last_seen = session_last_seen(&summary, &turns, &calls, &permissions);
    let tree = SessionTree {
        session,
        trace: client_parent.map_or(ids, |p| p.trace_id),
        root: span_id(&ids, "session"),
        ids,
        summary,
        turns,
        last_seen,
    };

    let mut spans = Vec::new();
    if window.since.is_none() || window.open {
        spans.push(tree.session_span(client_parent));
    }
    for (i, turn) in tree.turns.iter().enumerate() {
        if in_window(window, turn.ended_at) {
            spans.push(tree.turn_span(reader, i, &marks, options.tool_content)?);
        }
    }
    for call in &calls {
        spans.push(tree.tool_call_span(call, options.tool_content));
    }
    for request in &permissions {
        spans.push(tree.permission_span(request, &known_calls));
    }
    for request in query::client_requests_in(reader, session, window)? {
        spans.push(tree.client_request_span(&request));
    }
    Ok(spans)
}

/// Whether a span that ended at `end` (`None`: not yet) is in the window.
fn in_window(window: Window, end: Option<i64>) -> bool {
    match (window.since, end) {
        (None, _) => true,
        (Some(since), Some(end)) => end >= since,
        (Some(_), None) => window.open,
    }
}

/// What the turns' request and response lines say beyond the turns' rows, by the turn's
/// request line: the client's trace context of a prompt, the token usage of its answer.
struct TurnMarks {
    prompt_parents: std::collections::HashMap<i64, TraceParent>,
    usages: std::collections::HashMap<i64, serde_json::Value>,
}

impl TurnMarks {
    /// Reads only the turns whose lines mention them (`traceparent`, `"usage"`).
    fn read(reader: &Reader, session: &SessionRef, window: Window) -> Result<TurnMarks> {
        let mut prompt_parents = std::collections::HashMap::new();
        let mut usages = std::collections::HashMap::new();
        for (request_seq, request, response) in
            query::turn_lines_mentioning(reader, session, "traceparent", "\"usage\"", window)?
        {
            if let Some(parent) = traceparent_of(&request) {
                prompt_parents.insert(request_seq, parent);
            }
            let usage = response
                .and_then(|raw| serde_json::from_slice::<serde_json::Value>(&raw).ok())
                .map(|mut v| v["result"]["usage"].take());
            if let Some(usage @ serde_json::Value::Object(_)) = usage {
                usages.insert(request_seq, usage);
            }
        }
        Ok(TurnMarks {
            prompt_parents,
            usages,
        })
    }
}

/// The client's trace context: that of the request that opened the session, else that of
/// its first prompt. (A session only seen in passing has no opening request to look for.)
fn client_trace_parent(
    reader: &Reader,
    session: &SessionRef,
    summary: &query::SessionSummary,
) -> Result<Option<TraceParent>> {
    let opening = if summary.origin == "seen" {
        None
    } else {
        query::session_opening_request(reader, session)?
    };
    Ok(match opening.and_then(|raw| traceparent_of(&raw)) {
        Some(parent) => Some(parent),
        None => query::first_prompt_request(reader, session)?.and_then(|raw| traceparent_of(&raw)),
    })
}

/// The session lasts from its creation to the last thing recorded of it: where its unfinished
/// spans end.
fn session_last_seen(
    summary: &query::SessionSummary,
    turns: &[query::Turn],
    calls: &[query::ToolCallRow],
    permissions: &[query::PermissionRow],
) -> i64 {
    turns
        .iter()
        .map(|t| t.ended_at.unwrap_or(t.started_at))
        .chain(calls.iter().map(|c| c.last_updated_at))
        .chain(
            permissions
                .iter()
                .map(|p| p.decided_at.unwrap_or(p.requested_at)),
        )
        .chain(summary.connection_ended_at)
        .max()
        .unwrap_or(summary.created_at)
        .max(summary.created_at)
}

/// A session's trace as its spans need it: the ids, the turns a span may hang under, and when
/// the session was last seen.
struct SessionTree<'a> {
    session: &'a SessionRef,
    summary: query::SessionSummary,
    /// The recording's own trace id, which every span id is derived from.
    ids: [u8; 16],
    /// The trace the spans are in: the client's, where it sent one, else `ids`.
    trace: [u8; 16],
    /// The session's span.
    root: [u8; 8],
    turns: Vec<query::Turn>,
    last_seen: i64,
}

impl SessionTree<'_> {
    /// Attributes with what every span of the session carries: the session and the agent.
    fn attributes(&self) -> Vec<(&'static str, Attribute)> {
        vec![
            (
                "gen_ai.conversation.id",
                Attribute::Text(self.session.session_id.clone()),
            ),
            (
                "gen_ai.agent.name",
                Attribute::Text(self.summary.agent.clone()),
            ),
        ]
    }

    fn turn_span_id(&self, i: usize) -> [u8; 8] {
        span_id(&self.ids, &format!("turn {}", self.turns[i].request_seq))
    }

    fn call_span_id(&self, id: &str) -> [u8; 8] {
        span_id(&self.ids, &format!("tool call {id}"))
    }

    /// The span of the line at `seq`: the last turn that started before it, else the root.
    fn parent_of(&self, seq: Option<i64>) -> [u8; 8] {
        seq.and_then(|seq| {
            self.turns
                .partition_point(|t| t.request_seq <= seq)
                .checked_sub(1)
        })
        .map_or(self.root, |i| self.turn_span_id(i))
    }

    /// The root span `acp.session`: the connection, the agent, the protocol version.
    fn session_span(&self, client_parent: Option<TraceParent>) -> Span {
        let summary = &self.summary;
        let mut attributes = self.attributes();
        attributes.push(("acp.connection.id", Attribute::Int(summary.connection_id)));
        attributes.extend(text("acp.session.cwd", summary.cwd.as_deref()));
        attributes.push((
            "acp.session.origin",
            Attribute::Text(summary.origin.clone()),
        ));
        attributes.push((
            "acp.agent.command",
            Attribute::Texts(summary.command.clone()),
        ));
        attributes.push(("acp.recording.complete", Attribute::Bool(summary.complete)));
        // The negotiated protocol version (1, or 2 for the v2 draft), when it is a number.
        if let Some(version) = summary
            .protocol_version
            .as_ref()
            .and_then(serde_json::Value::as_i64)
        {
            attributes.push(("acp.protocol.version", Attribute::Int(version)));
        }
        Span {
            trace_id: self.trace,
            span_id: self.root,
            parent_span_id: client_parent.map(|p| p.span_id),
            name: "acp.session".into(),
            kind: SpanKind::Internal,
            start_us: summary.created_at,
            end_us: self.last_seen,
            attributes,
            status: Status::Unset,
            finished: summary.connection_ended_at.is_some(),
        }
    }

    /// The `invoke_agent` span of turn `i`, under the client's span where its prompt named
    /// one in this trace.
    fn turn_span(
        &self,
        reader: &Reader,
        i: usize,
        marks: &TurnMarks,
        tool_content: bool,
    ) -> Result<Span> {
        let turn = &self.turns[i];
        let mut attributes = self.attributes();
        attributes.push((
            "gen_ai.operation.name",
            Attribute::Text("invoke_agent".into()),
        ));
        attributes.push(("acp.turn.index", Attribute::Int(i as i64 + 1)));
        if let Some(reason) = &turn.stop_reason {
            attributes.push((
                "gen_ai.response.finish_reasons",
                Attribute::Texts(vec![reason.clone()]),
            ));
        }
        attributes.push((
            "acp.turn.cancel_requested",
            Attribute::Bool(turn.cancel_requested_at.is_some()),
        ));
        if let Some(duration) = turn.duration_us {
            attributes.push(("acp.turn.duration_us", Attribute::Int(duration)));
        }
        if tool_content {
            self.push_turn_messages(reader, i, &mut attributes)?;
        }
        if let Some(usage) = marks.usages.get(&turn.request_seq) {
            push_usage(usage, &mut attributes);
        }
        let parent = marks
            .prompt_parents
            .get(&turn.request_seq)
            .filter(|p| p.trace_id == self.trace)
            .map_or(self.root, |p| p.span_id);
        Ok(Span {
            trace_id: self.trace,
            span_id: self.turn_span_id(i),
            parent_span_id: Some(parent),
            name: format!("invoke_agent {}", self.summary.agent),
            kind: SpanKind::Internal,
            start_us: turn.started_at,
            end_us: turn.ended_at.unwrap_or(self.last_seen).max(turn.started_at),
            attributes,
            status: match (&turn.error, &turn.stop_reason) {
                (Some(error), _) => Status::Error(error.clone()),
                (None, Some(_)) => Status::Ok,
                (None, None) => Status::Unset,
            },
            finished: turn.ended_at.is_some(),
        })
    }

    /// Turn `i`'s prompt and the agent's messages: the lines from its request to the next
    /// turn's.
    fn push_turn_messages(
        &self,
        reader: &Reader,
        i: usize,
        attributes: &mut Vec<(&'static str, Attribute)>,
    ) -> Result<()> {
        let turn = &self.turns[i];
        let lines = turn.request_seq..self.turns.get(i + 1).map_or(i64::MAX, |t| t.request_seq);
        let finish = turn
            .stop_reason
            .as_deref()
            .or(turn.error.as_ref().map(|_| "error"))
            .unwrap_or("unfinished");
        let (input, output) = turn_messages(reader, self.session, lines, finish)?;
        attributes.push(("gen_ai.input.messages", Attribute::Text(input.to_string())));
        attributes.push((
            "gen_ai.output.messages",
            Attribute::Text(output.to_string()),
        ));
        Ok(())
    }

    /// The `execute_tool` span of a tool call, under the turn it was first seen in.
    fn tool_call_span(&self, call: &query::ToolCallRow, tool_content: bool) -> Span {
        let kind = call.kind.as_deref().unwrap_or("other");
        let mut attributes = self.attributes();
        attributes.push((
            "gen_ai.operation.name",
            Attribute::Text("execute_tool".into()),
        ));
        attributes.push((
            "gen_ai.tool.call.id",
            Attribute::Text(call.tool_call_id.clone()),
        ));
        attributes.push(("gen_ai.tool.name", Attribute::Text(kind.to_owned())));
        attributes.extend(text("acp.tool_call.title", call.title.as_deref()));
        attributes.push(("acp.tool_call.kind", Attribute::Text(kind.to_owned())));
        attributes.extend(text("acp.tool_call.status", call.status.as_deref()));
        let paths = call.paths();
        if !paths.is_empty() {
            attributes.push(("acp.tool_call.locations", Attribute::Texts(paths)));
        }
        attributes.push(("acp.tool_call.updates", Attribute::Int(call.update_count)));
        if tool_content {
            if let Some(input) = &call.raw_input {
                attributes.push(("gen_ai.tool.call.arguments", content(input)));
            }
            if let Some(result) = call.raw_output.as_ref().or(call.content.as_ref()) {
                attributes.push(("gen_ai.tool.call.result", content(result)));
            }
        }
        let finished = matches!(call.status.as_deref(), Some("completed" | "failed"));
        Span {
            trace_id: self.trace,
            span_id: self.call_span_id(&call.tool_call_id),
            parent_span_id: Some(self.parent_of(call.first_seq)),
            name: format!("execute_tool {kind}"),
            kind: SpanKind::Internal,
            start_us: call.first_seen_at,
            end_us: call.last_updated_at.max(call.first_seen_at),
            attributes,
            status: match call.status.as_deref() {
                Some("failed") => Status::Error("the tool call failed".into()),
                Some("completed") => Status::Ok,
                _ => Status::Unset,
            },
            finished,
        }
    }

    /// The `acp.permission` span of a permission request, under its tool call's span where
    /// the session has that call, else under its turn.
    fn permission_span(
        &self,
        request: &query::PermissionRow,
        known_calls: &std::collections::HashSet<String>,
    ) -> Span {
        let known_call = request
            .tool_call_id
            .as_deref()
            .filter(|id| known_calls.contains(*id));
        Span {
            trace_id: self.trace,
            span_id: span_id(&self.ids, &format!("permission {}", request.request_seq)),
            parent_span_id: Some(known_call.map_or_else(
                || self.parent_of(Some(request.request_seq)),
                |id| self.call_span_id(id),
            )),
            name: "acp.permission".into(),
            kind: SpanKind::Client,
            start_us: request.requested_at,
            end_us: request
                .decided_at
                .unwrap_or(self.last_seen)
                .max(request.requested_at),
            attributes: self.permission_attributes(request),
            status: Status::Unset,
            finished: request.decided_at.is_some(),
        }
    }

    /// What a permission span says: what was asked, who decided what, and the policy's part.
    fn permission_attributes(
        &self,
        request: &query::PermissionRow,
    ) -> Vec<(&'static str, Attribute)> {
        // Who decided, in the words of the telemetry: acptap's policy, the user (whatever the
        // client answered, by its user or its own setting), or nobody (the turn was cancelled).
        let decided_by = match request.decided_by.as_deref() {
            Some("client") => "user",
            Some(other) => other,
            None => "unanswered",
        };
        let mut attributes = self.attributes();
        attributes.extend(text("gen_ai.tool.call.id", request.tool_call_id.as_deref()));
        // v2: what the agent asked, and about what.
        attributes.extend(text("acp.permission.title", request.title.as_deref()));
        attributes.extend(text(
            "acp.permission.description",
            request.description.as_deref(),
        ));
        attributes.extend(text(
            "acp.permission.subject",
            request.subject_summary.as_deref(),
        ));
        attributes.extend(text(
            "acp.permission.subject.type",
            request
                .subject
                .as_ref()
                .and_then(|s| s.get("type"))
                .and_then(serde_json::Value::as_str),
        ));
        attributes.push((
            "acp.permission.decided_by",
            Attribute::Text(decided_by.to_owned()),
        ));
        attributes.extend(text("acp.permission.outcome", request.outcome.as_deref()));
        attributes.extend(text(
            "acp.permission.option_id",
            request.option_id.as_deref(),
        ));
        attributes.extend(text(
            "acp.permission.option_kind",
            request.option_kind.as_deref(),
        ));
        attributes.extend(text(
            "acp.permission.policy.decision",
            request.policy_decision.as_deref(),
        ));
        attributes.extend(text(
            "acp.permission.policy.rule",
            request.policy_rule.as_deref(),
        ));
        attributes.extend(text(
            "acp.permission.policy.hash",
            request.policy_hash.as_deref(),
        ));
        if request.policy_shadow {
            attributes.push(("acp.permission.policy.shadow", Attribute::Bool(true)));
        }
        if let Some(wait) = request.decision_us {
            attributes.push(("acp.permission.wait_us", Attribute::Int(wait)));
        }
        attributes
    }

    /// The span of a request the agent made of the client (`fs/*`, `terminal/*`), under its
    /// turn; an error answer is the span's error.
    fn client_request_span(&self, request: &query::ClientRequest) -> Span {
        let value: serde_json::Value =
            serde_json::from_slice(&request.raw).unwrap_or(serde_json::Value::Null);
        let params = &value["params"];
        let mut attributes = self.attributes();
        attributes.push((
            "acp.client_request.method",
            Attribute::Text(request.method.clone()),
        ));
        attributes.extend(text("acp.fs.path", params["path"].as_str()));
        attributes.extend(text("acp.terminal.command", params["command"].as_str()));
        attributes.extend(text("acp.terminal.id", params["terminalId"].as_str()));
        let answer = request.answer.as_ref().and_then(|(ts, raw)| {
            Some((*ts, serde_json::from_slice::<serde_json::Value>(raw).ok()?))
        });
        let status = match &answer {
            Some((_, a)) if a.get("error").is_some() => Status::Error(
                a["error"]["message"]
                    .as_str()
                    .unwrap_or("the client answered with an error")
                    .to_owned(),
            ),
            Some(_) => Status::Ok,
            None => Status::Unset,
        };
        Span {
            trace_id: self.trace,
            span_id: span_id(&self.ids, &format!("client request {}", request.seq)),
            parent_span_id: Some(self.parent_of(Some(request.seq))),
            name: request.method.clone(),
            kind: SpanKind::Client,
            start_us: request.ts,
            finished: answer.is_some(),
            end_us: answer.map_or(self.last_seen, |(ts, _)| ts).max(request.ts),
            attributes,
            status,
        }
    }
}

/// A turn's token usage (the answer's `usage`), in the GenAI conventions' names where they
/// have one.
fn push_usage(usage: &serde_json::Value, attributes: &mut Vec<(&'static str, Attribute)>) {
    for (field, key) in [
        ("inputTokens", "gen_ai.usage.input_tokens"),
        ("outputTokens", "gen_ai.usage.output_tokens"),
        ("cachedReadTokens", "gen_ai.usage.cache_read.input_tokens"),
        (
            "cachedWriteTokens",
            "gen_ai.usage.cache_creation.input_tokens",
        ),
        ("thoughtTokens", "acp.usage.thought_tokens"),
        ("totalTokens", "acp.usage.total_tokens"),
    ] {
        if let Some(n) = usage[field].as_i64() {
            attributes.push((key, Attribute::Int(n)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_depend_on_the_recording_only() {
        let a = trace_id("sess", 1_700_000_000_000_000);
        assert_eq!(a, trace_id("sess", 1_700_000_000_000_000));
        assert_ne!(a, trace_id("sess", 1_700_000_000_000_001));
        assert_ne!(a, trace_id("sesS", 1_700_000_000_000_000));
        assert_ne!(span_id(&a, "turn 3"), span_id(&a, "turn 4"));
        assert_eq!(span_id(&a, "session"), span_id(&a, "session"));
        assert_ne!(a, [0; 16]);
    }

    #[test]
    fn traceparent_is_read_as_w3c_trace_context_says() {
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let parsed = parse_traceparent(good).unwrap();
        assert_eq!(parsed.trace_id[0], 0x4b);
        assert_eq!(parsed.span_id[7], 0xb7);
        // A later version may add fields; version 00 may not.
        assert!(parse_traceparent(&format!("01{}-more", &good[2..])).is_some());
        for bad in [
            "",
            &format!("{good}-more"),
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
            "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-+bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert_eq!(parse_traceparent(bad), None, "{bad}");
        }
    }

    #[test]
    fn long_content_is_cut_on_a_character_boundary_and_says_so() {
        let long = serde_json::Value::String("é".repeat(MAX_CONTENT_BYTES));
        let Attribute::Text(text) = content(&long) else {
            panic!("not text")
        };
        assert!(text.len() < MAX_CONTENT_BYTES + 64);
        assert!(text.ends_with(&format!("[cut: {} bytes in all]", long.to_string().len())));
        let short = serde_json::json!({"command": "ls"});
        assert_eq!(
            content(&short),
            Attribute::Text(r#"{"command":"ls"}"#.into())
        );
    }
}
