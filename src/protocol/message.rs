//! A tolerant view of one line: what kind of JSON-RPC message it is and the few fields the
//! recorder indexes.
//!
//! Nothing here rejects input. A line that is not JSON, or JSON that is not a JSON-RPC message,
//! is [`MessageKind::Invalid`] and keeps its bytes; unknown methods and fields are simply not
//! looked at. The typed structs of the official SDK are not used on purpose: they drop what they
//! do not know.

use serde_json::Value;

/// Which way a line travelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Client to agent: the agent's stdin.
    ClientToAgent,
    /// Agent to client: the agent's stdout.
    AgentToClient,
    /// The agent's stderr: not protocol, recorded as its own stream.
    Stderr,
}

impl Direction {
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::ClientToAgent => "c2a",
            Direction::AgentToClient => "a2c",
            Direction::Stderr => "stderr",
        }
    }

    /// The direction a response to a request sent this way travels.
    pub fn reverse(self) -> Direction {
        match self {
            Direction::ClientToAgent => Direction::AgentToClient,
            Direction::AgentToClient => Direction::ClientToAgent,
            Direction::Stderr => Direction::Stderr,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageKind {
    Request,
    Response,
    Notification,
    /// A JSON array: a JSON-RPC batch, forwarded and recorded but not looked into.
    Batch,
    /// Not JSON, or JSON that is not a JSON-RPC message (empty lines included).
    Invalid,
    /// A line of the agent's stderr.
    Stderr,
}

impl MessageKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MessageKind::Request => "request",
            MessageKind::Response => "response",
            MessageKind::Notification => "notification",
            MessageKind::Batch => "batch",
            MessageKind::Invalid => "invalid",
            MessageKind::Stderr => "stderr",
        }
    }
}

/// One parsed line.
#[derive(Debug, Clone)]
pub struct Message {
    pub kind: MessageKind,
    /// The JSON-RPC id as its JSON text (`3`, `"abc"`), so numbers and strings stay distinct.
    pub id: Option<String>,
    pub method: Option<String>,
    /// The parsed line, when it is a JSON object.
    pub value: Option<Value>,
}

impl Message {
    pub fn params(&self) -> Option<&Value> {
        self.value.as_ref()?.get("params")
    }

    pub fn result(&self) -> Option<&Value> {
        self.value.as_ref()?.get("result")
    }

    pub fn error(&self) -> Option<&Value> {
        self.value.as_ref()?.get("error")
    }

    /// `params.sessionId`, or `result.sessionId` for a `session/new` answer.
    pub fn session_id(&self) -> Option<&str> {
        self.params()
            .and_then(|p| p.get("sessionId"))
            .or_else(|| self.result().and_then(|r| r.get("sessionId")))
            .and_then(Value::as_str)
    }

    /// The tool call a `session/update` or `session/request_permission` is about.
    pub fn tool_call_id(&self) -> Option<&str> {
        let params = self.params()?;
        params
            .get("update")
            .or_else(|| params.get("toolCall"))
            .and_then(|u| u.get("toolCallId"))
            .and_then(Value::as_str)
    }
}

/// Above this size a line's params are parsed only when a method the recorder reads needs them:
/// building a `Value` of a 64 MiB custom notification would double the memory for nothing.
const LARGE_LINE: usize = 1024 * 1024;

/// The methods whose params the observer reads.
const METHODS_WITH_FACTS: &[&str] = &[
    "initialize",
    "session/new",
    "session/load",
    "session/prompt",
    "session/update",
    "session/request_permission",
    "session/cancel",
];

/// A large request or notification of a method whose params nobody reads: its kind, id and
/// method, without the params. `None`: parse it fully.
fn parse_large(line: &[u8]) -> Option<Message> {
    #[derive(serde::Deserialize)]
    struct Envelope<'a> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
        #[serde(borrow, default)]
        id: Option<&'a serde_json::value::RawValue>,
    }
    let envelope: Envelope = serde_json::from_slice(line).ok()?;
    let method = envelope.method?;
    if METHODS_WITH_FACTS.contains(&method.as_ref()) {
        return None;
    }
    let id = envelope
        .id
        .map(|id| id.get().to_owned())
        .filter(|id| id != "null");
    Some(Message {
        kind: if id.is_some() {
            MessageKind::Request
        } else {
            MessageKind::Notification
        },
        id,
        method: Some(method.into_owned()),
        value: None,
    })
}

/// Classifies one line (with or without its line ending).
pub fn parse_line(line: &[u8]) -> Message {
    let invalid = Message {
        kind: MessageKind::Invalid,
        id: None,
        method: None,
        value: None,
    };
    let trimmed = line.trim_ascii();
    match trimmed.first() {
        Some(b'[') => {
            return match serde_json::from_slice::<Value>(trimmed) {
                Ok(Value::Array(_)) => Message {
                    kind: MessageKind::Batch,
                    ..invalid
                },
                _ => invalid,
            };
        }
        Some(b'{') => {}
        _ => return invalid,
    }
    if trimmed.len() > LARGE_LINE
        && let Some(message) = parse_large(trimmed)
    {
        return message;
    }
    let Ok(value @ Value::Object(_)) = serde_json::from_slice::<Value>(trimmed) else {
        return invalid;
    };
    let method = value
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let id = value
        .get("id")
        .filter(|id| !id.is_null())
        .map(|id| id.to_string());
    let is_reply = value.get("result").is_some() || value.get("error").is_some();
    let kind = match (&method, &id, is_reply) {
        (Some(_), Some(_), _) => MessageKind::Request,
        (Some(_), None, _) => MessageKind::Notification,
        (None, _, true) => MessageKind::Response,
        (None, _, false) => MessageKind::Invalid,
    };
    Message {
        kind,
        id,
        method,
        value: Some(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_requests_responses_notifications() {
        let r = parse_line(br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#);
        assert_eq!((r.kind, r.id.as_deref()), (MessageKind::Request, Some("0")));
        let r = parse_line(br#"{"jsonrpc":"2.0","result":{"stopReason":"end_turn"},"id":"a-1"}"#);
        assert_eq!(
            (r.kind, r.id.as_deref()),
            (MessageKind::Response, Some("\"a-1\""))
        );
        let r = parse_line(
            br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"toolCallId":"t"}}}"#,
        );
        assert_eq!(r.kind, MessageKind::Notification);
        assert_eq!((r.session_id(), r.tool_call_id()), (Some("s"), Some("t")));
    }

    #[test]
    fn tolerates_garbage() {
        for line in [
            &b""[..],
            b"\n",
            b"not json\n",
            b"\xff\xfe\n",
            b"{\"a\":1}\n",
            b"42\n",
        ] {
            assert_eq!(parse_line(line).kind, MessageKind::Invalid, "{line:?}");
        }
        assert_eq!(parse_line(b"[{\"id\":1}]\r\n").kind, MessageKind::Batch);
    }

    #[test]
    fn a_large_custom_notification_is_classified_without_its_params() {
        let mut line = br#"{"jsonrpc":"2.0","method":"_x/big","params":{"blob":""#.to_vec();
        line.resize(line.len() + LARGE_LINE, b'a');
        line.extend_from_slice(br#""}}"#);
        let m = parse_line(&line);
        assert_eq!(
            (m.kind, m.method.as_deref(), m.value.is_none()),
            (MessageKind::Notification, Some("_x/big"), true)
        );
        // A method the recorder reads is parsed whole, however large.
        let big_update = String::from_utf8(line)
            .unwrap()
            .replace("_x/big", "session/update");
        assert!(parse_line(big_update.as_bytes()).value.is_some());
    }

    #[test]
    fn error_response_with_null_id_is_a_response() {
        let r = parse_line(br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#);
        assert_eq!((r.kind, r.id), (MessageKind::Response, None));
    }
}
