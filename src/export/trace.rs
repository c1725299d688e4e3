//! Traces: a recorded connection as the event stream of the ACP conductor's trace viewer.
//!
//! `agent-client-protocol-trace-viewer` draws a sequence diagram from a `.jsons` file that
//! `agent-client-protocol-conductor --trace FILE` writes. This module writes the same format from
//! what acptap recorded, so a recording can be looked at with that viewer.
//!
//! # The format
//!
//! As published in `agent-client-protocol-conductor` 5.0.0 (crates.io; `src/trace.rs`, types
//! `TraceEvent`, `RequestEvent`, `ResponseEvent`, `NotificationEvent`, `MessageProtocol`; built
//! from github.com/agentclientprotocol/rust-sdk commit `1b1399ab4a281ea6fccbdc3722a64fe35c816399`,
//! path `src/agent-client-protocol-conductor/src/trace.rs`), read by
//! `agent-client-protocol-trace-viewer` 5.0.0 (`src/lib.rs` reads the file, `src/viewer.html`
//! draws it); described in the repository's `md/trace-viewer.md`.
//!
//! One JSON object a line, tagged by `type`:
//!
//! ```text
//! {"type":"request",      "ts", "protocol", "from", "to", "id", "method", ["session"], "params"}
//! {"type":"response",     "ts", "from", "to", "id", "is_error", ["error_domain"], "payload"}
//! {"type":"notification", "ts", "protocol", "from", "to", "method", ["session"], "params"}
//! ```
//!
//! - `ts`: seconds (a float) since the capture began, monotonic.
//! - `protocol`, `error_domain`: `"acp"` or `"mcp"`. `error_domain` (added in 5.0.0, optional)
//!   says whether an error is the ACP response's own or an inner MCP error.
//! - `from`, `to`: free-form component names; the viewer makes one swimlane per name, in order of
//!   appearance, except that it puts `"client"` first and `"agent"` last.
//! - `id`: the JSON-RPC id as it was (number, string, or null); never rewritten.
//! - `session`: the ACP session id, omitted (not `null`) when unknown.
//! - `params`, `payload`: the request's params (`null` when absent); the response's `result`, or
//!   its `error` object when `is_error`.
//!
//! The viewer pairs a response with the request whose `to` is the response's `from` and whose
//! `id` is the same (`${to}:${JSON.stringify(id)}`), and draws the request's active span between
//! them; it ignores fields it does not know. It also reads `params.prompt[0].text` of
//! `session/prompt` and `params.update` of `session/update` for previews.
//!
//! # The mapping
//!
//! The conductor with no proxies between one client and one agent traces each message once, as
//! travelling directly between the two components, with no lane for itself. acptap is exactly that
//! kind of transparent middle, so it is modelled the same way: a `c2a` line is an event from
//! `"client"` to `"agent"`, an `a2c` line one from `"agent"` to `"client"`. The names are lower
//! case (the conductor writes `Client`/`Agent`): those are the names the viewer sorts to the left
//! and right edges, so the diagram reads client-to-agent as the conductor's own traces are meant
//! to.
//!
//! acptap appears only where it took part: a permission request its policy withheld goes from
//! `"agent"` to `"acptap"` (the client never saw it), and the answer acptap wrote
//! (`origin = 'acptap'`) goes from `"acptap"` to `"agent"`; the viewer pairs the two. A recording
//! without `--policy` has no `"acptap"` lane.
//!
//! Line by line, in `seq` order:
//!
//! | recorded line (`kind`) | trace |
//! |---|---|
//! | `request` | one `request` event |
//! | `notification` | one `notification` event |
//! | `response` | one `response` event, also when no request was seen for it (the conductor drops those; a recording keeps them) |
//! | `batch` | one event per element that is a request, response or notification, all at the line's time; other elements are skipped |
//! | `invalid` (not JSON-RPC, empty, or truncated) | skipped: the format has no event for it |
//! | `stderr` | skipped: the format does not carry stderr |
//!
//! - `ts` is the line's recorded time minus the connection's `started_at`. Lines of the two
//!   directions are timed on different threads, so a line can carry a time a few microseconds
//!   before the line numbered just before it; such a time is raised to the previous one, which
//!   keeps the trace monotonic as the format promises.
//! - `session` is the message's `params.sessionId` (an elicitation's `params.scope.sessionId`)
//!   when it is a string.
//! - `mcp/message` (MCP-over-ACP) is shown as the format defines it: a request or notification
//!   whose params carry a string `method` and object (or absent) `params` becomes that inner
//!   method with protocol `"mcp"`; the answer to such a request carries the inner `result`, or
//!   the inner `error` with `is_error` and `error_domain: "mcp"`. An error response of ACP itself
//!   has `error_domain: "acp"`.
//! - Params and payloads are the recorded bytes re-parsed. They are not redacted here: what
//!   acptap records has already been through its redaction (`record::redact`).
//! - `_proxy/successor` / `proxy/successor` envelopes are not unwrapped: they travel between a
//!   conductor and its proxies, never between a client and an agent.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::protocol::{Direction, MessageKind};
use crate::query::{self, Reader};

/// The editor's swimlane.
pub(crate) const CLIENT: &str = "client";
/// The agent's swimlane.
pub(crate) const AGENT: &str = "agent";
/// acptap's swimlane: only for what its policy withheld or wrote.
pub(crate) const ACPTAP: &str = "acptap";

/// Whether a message is ACP's own or an MCP message carried over ACP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Protocol {
    Acp,
    Mcp,
}

/// One event of the trace, serialised as the viewer reads it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum TraceEvent {
    Request {
        ts: f64,
        protocol: Protocol,
        from: &'static str,
        to: &'static str,
        id: Value,
        method: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        session: Option<String>,
        params: Value,
    },
    Response {
        ts: f64,
        from: &'static str,
        to: &'static str,
        id: Value,
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        error_domain: Option<Protocol>,
        payload: Value,
    },
    Notification {
        ts: f64,
        protocol: Protocol,
        from: &'static str,
        to: &'static str,
        method: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        session: Option<String>,
        params: Value,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("no connection {0} in the database")]
    NoConnection(i64),
    #[error(transparent)]
    Query(#[from] crate::query::QueryError),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// The connection's trace, one NDJSON line each (without the `\n`), in `seq` order.
pub fn export(reader: &Reader, connection_id: i64) -> Result<Vec<String>, TraceError> {
    events(reader, connection_id)?
        .iter()
        .map(|event| serde_json::to_string(event).map_err(TraceError::from))
        .collect()
}

/// The connection's trace events, in `seq` order (see the module documentation).
pub(crate) fn events(reader: &Reader, connection_id: i64) -> Result<Vec<TraceEvent>, TraceError> {
    let started_at = query::connection_started_at(reader, connection_id)
        .map_err(query::QueryError::from)?
        .ok_or(TraceError::NoConnection(connection_id))?;
    let mut tracer = Tracer::default();
    let mut last_us = 0;
    query::for_each_protocol_line(reader, connection_id, |line| {
        last_us = (line.ts - started_at).max(last_us);
        let (sender, receiver) = if line.direction == Direction::ClientToAgent {
            (CLIENT, AGENT)
        } else {
            (AGENT, CLIENT)
        };
        let from = if line.origin == "acptap" {
            ACPTAP
        } else {
            sender
        };
        let to = if line.forwarded { receiver } else { ACPTAP };
        let at = Hop {
            ts: last_us as f64 / 1e6,
            from,
            to,
        };
        // The recorder classified the line from these bytes, so they parse; if they somehow do
        // not, there is nothing to show.
        let Ok(value) = serde_json::from_slice::<Value>(line.raw.trim_ascii()) else {
            return;
        };
        match (line.kind, value) {
            (MessageKind::Batch, Value::Array(items)) => {
                for item in items {
                    tracer.message(&at, item);
                }
            }
            (_, value) => tracer.message(&at, value),
        }
    })
    .map_err(query::QueryError::from)?;
    Ok(tracer.events)
}

/// When and between whom a line travelled.
struct Hop {
    ts: f64,
    from: &'static str,
    to: &'static str,
}

#[derive(Default)]
struct Tracer {
    events: Vec<TraceEvent>,
    /// Requests not answered yet: (the lane that received it, its id as JSON text) -> protocol.
    pending: HashMap<(&'static str, String), Protocol>,
}

impl Tracer {
    /// Adds the event for one JSON-RPC message; anything else adds nothing.
    fn message(&mut self, at: &Hop, value: Value) {
        let Value::Object(mut message) = value else {
            return;
        };
        let method = match message.get("method") {
            Some(Value::String(method)) => Some(method.clone()),
            _ => None,
        };
        let id = message.remove("id").filter(|id| !id.is_null());
        match (method, id) {
            (Some(method), id) => {
                let params = message.remove("params").unwrap_or(Value::Null);
                // An elicitation names its session in its scope (v2).
                let session = params
                    .get("sessionId")
                    .or_else(|| params.get("scope")?.get("sessionId"))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                let (protocol, method, params) = unwrap_mcp(method, params);
                self.events.push(match id {
                    Some(id) => {
                        self.pending.insert((at.to, id.to_string()), protocol);
                        TraceEvent::Request {
                            ts: at.ts,
                            protocol,
                            from: at.from,
                            to: at.to,
                            id,
                            method,
                            session,
                            params,
                        }
                    }
                    None => TraceEvent::Notification {
                        ts: at.ts,
                        protocol,
                        from: at.from,
                        to: at.to,
                        method,
                        session,
                        params,
                    },
                });
            }
            (None, id) if message.contains_key("result") || message.contains_key("error") => {
                let id = id.unwrap_or(Value::Null);
                let protocol = self.pending.remove(&(at.from, id.to_string()));
                let (error_domain, payload) = outcome(protocol, message);
                self.events.push(TraceEvent::Response {
                    ts: at.ts,
                    from: at.from,
                    to: at.to,
                    id,
                    is_error: error_domain.is_some(),
                    error_domain,
                    payload,
                });
            }
            (None, _) => {}
        }
    }
}

/// An `mcp/message` carrying a well-formed inner MCP message becomes that message.
fn unwrap_mcp(method: String, params: Value) -> (Protocol, String, Value) {
    if method == "mcp/message"
        && let Some(Value::String(inner)) = params.get("method")
    {
        match params.get("params") {
            None | Some(Value::Null) => return (Protocol::Mcp, inner.clone(), Value::Null),
            Some(inner_params @ Value::Object(_)) => {
                return (Protocol::Mcp, inner.clone(), inner_params.clone());
            }
            // Malformed inner params: shown as the envelope it is.
            Some(_) => {}
        }
    }
    (Protocol::Acp, method, params)
}

/// A response's error domain (none when it succeeded) and payload. For an answer to an
/// `mcp/message` request, the inner MCP outcome (`result` preferred when both are there).
fn outcome(
    request: Option<Protocol>,
    mut message: Map<String, Value>,
) -> (Option<Protocol>, Value) {
    match message.remove("error") {
        Some(error) if !error.is_null() => return (Some(Protocol::Acp), error),
        _ => {}
    }
    let result = message.remove("result").unwrap_or(Value::Null);
    if request == Some(Protocol::Mcp)
        && let Value::Object(mut carrier) = result
    {
        if let Some(inner) = carrier.remove("result") {
            return (None, inner);
        }
        match carrier.remove("error") {
            Some(error @ Value::Object(_)) => return (Some(Protocol::Mcp), error),
            Some(other) => {
                carrier.insert("error".into(), other);
            }
            None => {}
        }
        return (None, Value::Object(carrier));
    }
    (None, result)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const HOP: Hop = Hop {
        ts: 1.5,
        from: AGENT,
        to: CLIENT,
    };

    fn one(tracer: &mut Tracer, at: &Hop, value: Value) -> Option<TraceEvent> {
        let before = tracer.events.len();
        tracer.message(at, value);
        assert!(tracer.events.len() <= before + 1);
        tracer.events.get(before).cloned()
    }

    #[test]
    fn serialises_the_three_event_shapes() {
        let mut t = Tracer::default();
        let request = one(
            &mut t,
            &HOP,
            json!({"jsonrpc":"2.0","id":"r-1","method":"fs/read_text_file","params":{"sessionId":"s","path":"/x"}}),
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(&request).unwrap(),
            json!({"type":"request","ts":1.5,"protocol":"acp","from":"agent","to":"client",
                   "id":"r-1","method":"fs/read_text_file","session":"s",
                   "params":{"sessionId":"s","path":"/x"}})
        );
        let back = Hop {
            ts: 2.0,
            from: CLIENT,
            to: AGENT,
        };
        let response = one(
            &mut t,
            &back,
            json!({"jsonrpc":"2.0","id":"r-1","error":{"code":-32603,"message":"no"}}),
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(&response).unwrap(),
            json!({"type":"response","ts":2.0,"from":"client","to":"agent","id":"r-1",
                   "is_error":true,"error_domain":"acp","payload":{"code":-32603,"message":"no"}})
        );
        let notification = one(
            &mut t,
            &back,
            json!({"jsonrpc":"2.0","method":"session/cancel"}),
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(&notification).unwrap(),
            json!({"type":"notification","ts":2.0,"protocol":"acp","from":"client","to":"agent",
                   "method":"session/cancel","params":null})
        );
    }

    #[test]
    fn an_elicitation_is_traced_in_the_session_its_scope_names() {
        let mut t = Tracer::default();
        let request = one(
            &mut t,
            &HOP,
            json!({"jsonrpc":"2.0","id":4,"method":"elicitation/create",
                   "params":{"mode":"form","message":"Which?","scope":{"sessionId":"s"}}}),
        );
        assert!(
            matches!(request, Some(TraceEvent::Request { session: Some(ref s), .. }) if s == "s"),
            "{request:?}"
        );
    }

    #[test]
    fn a_null_id_response_keeps_its_null_id_and_non_messages_are_skipped() {
        let mut t = Tracer::default();
        let e = one(
            &mut t,
            &HOP,
            json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}),
        );
        assert!(matches!(
            e,
            Some(TraceEvent::Response {
                id: Value::Null,
                is_error: true,
                ..
            })
        ));
        for junk in [
            json!({"jsonrpc":"2.0","id":3}),
            json!(42),
            json!("x"),
            json!([1]),
        ] {
            assert_eq!(one(&mut t, &HOP, junk), None);
        }
        // A method with a null id is a notification, as the recorder classifies it.
        let e = one(&mut t, &HOP, json!({"method":"m","id":null}));
        assert!(matches!(e, Some(TraceEvent::Notification { .. })));
    }

    #[test]
    fn mcp_over_acp_is_unwrapped_and_its_answer_too() {
        let mut t = Tracer::default();
        let e = one(
            &mut t,
            &HOP,
            json!({"id":7,"method":"mcp/message","params":{"sessionId":"s","serverId":"srv",
                   "requestId":1,"method":"tools/call","params":{"name":"x"}}}),
        )
        .unwrap();
        assert_eq!(
            e,
            TraceEvent::Request {
                ts: 1.5,
                protocol: Protocol::Mcp,
                from: AGENT,
                to: CLIENT,
                id: json!(7),
                method: "tools/call".into(),
                session: Some("s".into()),
                params: json!({"name":"x"}),
            }
        );
        let back = Hop {
            ts: 2.0,
            from: CLIENT,
            to: AGENT,
        };
        let e = one(
            &mut t,
            &back,
            json!({"id":7,"result":{"error":{"code":1,"message":"m"}}}),
        );
        assert!(matches!(
            e,
            Some(TraceEvent::Response { is_error: true, error_domain: Some(Protocol::Mcp), ref payload, .. })
                if payload == &json!({"code":1,"message":"m"})
        ));
        // The same id again, answered with a result: the inner result is the payload.
        one(
            &mut t,
            &HOP,
            json!({"id":7,"method":"mcp/message","params":{"method":"ping"}}),
        );
        let e = one(
            &mut t,
            &back,
            json!({"id":7,"result":{"result":{"ok":true},"_meta":{}}}),
        );
        assert!(matches!(
            e,
            Some(TraceEvent::Response { is_error: false, error_domain: None, ref payload, .. })
                if payload == &json!({"ok":true})
        ));
        // Malformed inner params stay an ACP envelope; an ACP answer's result is not looked into.
        let e = one(
            &mut t,
            &HOP,
            json!({"method":"mcp/message","params":{"method":"n","params":[1]}}),
        );
        assert!(
            matches!(e, Some(TraceEvent::Notification { protocol: Protocol::Acp, ref method, .. }) if method == "mcp/message")
        );
        one(
            &mut t,
            &HOP,
            json!({"id":8,"method":"session/prompt","params":{}}),
        );
        let e = one(&mut t, &back, json!({"id":8,"result":{"result":1}}));
        assert!(
            matches!(e, Some(TraceEvent::Response { ref payload, .. }) if payload == &json!({"result":1}))
        );
    }
}
