//! One recorded session as OpenTelemetry spans, after the GenAI semantic conventions (agent and
//! tool spans), with an `acp.*` namespace for what they lack. This is the model only: which
//! spans, their parents, times and attributes. Sending them (OTLP) is another module's job.
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

use crate::record::Reader;
use crate::record::queries::{self, SessionRef};

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
}

/// The trace id of a session: a digest of its id and its connection's start.
pub fn trace_id(session_id: &str, connection_started_at: i64) -> [u8; 16] {
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
pub fn span_id(trace: &[u8; 16], what: &str) -> [u8; 8] {
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

/// Text attribute, if there is a value.
fn text(key: &'static str, value: Option<&str>) -> Option<(&'static str, Attribute)> {
    value.map(|v| (key, Attribute::Text(v.to_owned())))
}

/// The spans of one session, parents before their children.
pub fn session_spans(reader: &Reader, session: &SessionRef) -> rusqlite::Result<Vec<Span>> {
    let summary = queries::session_summary_of(reader, session)?;
    let (started_at, _) = queries::connection_start_and_signal(reader, session.connection_id)?;
    let trace = trace_id(
        &session.session_id,
        started_at.unwrap_or(summary.created_at),
    );
    let turns = queries::turns(reader, session)?;
    let calls = queries::session_tool_calls(reader, session)?;
    let permissions = queries::permission_requests(reader, session)?;

    // The session lasts from its creation to the last thing recorded of it.
    let last_seen = turns
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
        .max(summary.created_at);
    let root = span_id(&trace, "session");
    let common = |attributes: &mut Vec<(&'static str, Attribute)>| {
        attributes.push((
            "gen_ai.conversation.id",
            Attribute::Text(session.session_id.clone()),
        ));
        attributes.push(("gen_ai.agent.name", Attribute::Text(summary.agent.clone())));
    };
    let mut spans = Vec::new();
    let mut attributes = Vec::new();
    common(&mut attributes);
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
    spans.push(Span {
        trace_id: trace,
        span_id: root,
        parent_span_id: None,
        name: "acp.session".into(),
        kind: SpanKind::Internal,
        start_us: summary.created_at,
        end_us: last_seen,
        attributes,
        status: Status::Unset,
    });

    let turn_span = |i: usize| span_id(&trace, &format!("turn {}", turns[i].request_seq));
    for (i, turn) in turns.iter().enumerate() {
        let mut attributes = Vec::new();
        common(&mut attributes);
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
        spans.push(Span {
            trace_id: trace,
            span_id: turn_span(i),
            parent_span_id: Some(root),
            name: format!("invoke_agent {}", summary.agent),
            kind: SpanKind::Internal,
            start_us: turn.started_at,
            end_us: turn.ended_at.unwrap_or(last_seen).max(turn.started_at),
            attributes,
            status: match (&turn.error, &turn.stop_reason) {
                (Some(error), _) => Status::Error(error.clone()),
                (None, Some(_)) => Status::Ok,
                (None, None) => Status::Unset,
            },
        });
    }

    // A tool call belongs to the last turn that started before it was first seen.
    let parent_of = |seq: Option<i64>| {
        seq.and_then(|seq| {
            turns
                .partition_point(|t| t.request_seq <= seq)
                .checked_sub(1)
        })
        .map_or(root, turn_span)
    };
    let call_span = |id: &str| span_id(&trace, &format!("tool call {id}"));
    for call in &calls {
        let kind = call.kind.as_deref().unwrap_or("other");
        let mut attributes = Vec::new();
        common(&mut attributes);
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
        spans.push(Span {
            trace_id: trace,
            span_id: call_span(&call.tool_call_id),
            parent_span_id: Some(parent_of(call.first_seq)),
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
        });
    }

    for request in &permissions {
        let known_call = request
            .tool_call_id
            .as_deref()
            .filter(|id| calls.iter().any(|c| c.tool_call_id == *id));
        let decided_by = request.decided_by.as_deref().unwrap_or("unanswered");
        let mut attributes = Vec::new();
        common(&mut attributes);
        attributes.extend(text("gen_ai.tool.call.id", request.tool_call_id.as_deref()));
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
        if let Some(wait) = request.decision_us {
            attributes.push(("acp.permission.wait_us", Attribute::Int(wait)));
        }
        spans.push(Span {
            trace_id: trace,
            span_id: span_id(&trace, &format!("permission {}", request.request_seq)),
            parent_span_id: Some(
                known_call.map_or_else(|| parent_of(Some(request.request_seq)), call_span),
            ),
            name: "acp.permission".into(),
            kind: SpanKind::Client,
            start_us: request.requested_at,
            end_us: request
                .decided_at
                .unwrap_or(last_seen)
                .max(request.requested_at),
            attributes,
            status: Status::Unset,
        });
    }
    for request in queries::client_requests(reader, session)? {
        let value: serde_json::Value =
            serde_json::from_slice(&request.raw).unwrap_or(serde_json::Value::Null);
        let params = &value["params"];
        let mut attributes = Vec::new();
        common(&mut attributes);
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
        spans.push(Span {
            trace_id: trace,
            span_id: span_id(&trace, &format!("client request {}", request.seq)),
            parent_span_id: Some(parent_of(Some(request.seq))),
            name: request.method.clone(),
            kind: SpanKind::Client,
            start_us: request.ts,
            end_us: answer.map_or(last_seen, |(ts, _)| ts).max(request.ts),
            attributes,
            status,
        });
    }
    Ok(spans)
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
}
