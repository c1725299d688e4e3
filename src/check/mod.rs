//! `acptap check`: does a conversation follow the Agent Client Protocol?
//!
//! The input is the lines of one connection in order (a recording, or a transcript file); the
//! output is a list of [`Finding`]s, each naming a rule of [`RULES`], the line, and why. Two kinds
//! of checks:
//!
//! - each message against the protocol's types, with the official Rust crate
//!   (`agent-client-protocol-schema`, `schema.rs`): what a peer built on the SDKs would refuse;
//! - the rules of the conversation on top (`Conversation`): ids answered once and only when
//!   asked, sessions used after they exist, turns that end with nothing left pending,
//!   capabilities used only when negotiated, extensions named with `_`.
//!
//! Pure: no I/O, no database. The command line feeds it and prints what it finds (`output.rs`).

pub mod output;
mod schema;

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use serde_json::Value;

/// How bad a finding is. Ordered: `Info < Warning < Error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// A rule: its id, how bad breaking it is, what it says, and where the protocol says so.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Rule {
    pub id: &'static str,
    pub severity: Severity,
    pub summary: &'static str,
    pub spec: &'static str,
}

macro_rules! rules {
    ($($name:ident = $id:literal, $severity:ident, $spec:literal, $summary:literal;)*) => {
        $(pub const $name: Rule = Rule {
            id: $id,
            severity: Severity::$severity,
            summary: $summary,
            spec: $spec,
        };)*
        /// Every rule, in the order of docs/check.md.
        pub const RULES: &[Rule] = &[$($name),*];
    };
}

rules! {
    NOT_JSON = "rpc/not-json", Error, "https://www.jsonrpc.org/specification",
        "a line on the protocol streams is not a JSON object (or batch)";
    LENIENT_JSON = "rpc/lenient-json", Warning, "https://www.rfc-editor.org/rfc/rfc8259#section-8",
        "a line strict JSON refuses but JavaScript and Python peers read (a lone surrogate escape, invalid UTF-8, NaN or Infinity): checked as they read it";
    NOT_JSONRPC = "rpc/not-jsonrpc", Error, "https://www.jsonrpc.org/specification#request_object",
        "a message without \"jsonrpc\": \"2.0\", or neither request, notification nor response";
    RESULT_AND_ERROR = "rpc/result-and-error", Error, "https://www.jsonrpc.org/specification#response_object",
        "a response with both `result` and `error` (exactly one of them is required)";
    UNKNOWN_RESPONSE = "rpc/unknown-response", Error, "https://www.jsonrpc.org/specification#response_object",
        "a response to an id the other side never sent a request with (or answered already)";
    DUPLICATE_ID = "rpc/duplicate-id", Error, "https://www.jsonrpc.org/specification#request_object",
        "a request reuses an id that is still waiting for its response";
    UNANSWERED = "rpc/unanswered", Warning, "https://www.jsonrpc.org/specification#response_object",
        "a request that never got a response before the conversation ended";
    SCHEMA = "acp/schema", Error, "https://agentclientprotocol.com/protocol/schema",
        "a message that does not match the protocol's types for its method";
    UNKNOWN_METHOD = "acp/unknown-method", Error, "https://agentclientprotocol.com/protocol/extensibility",
        "a method the protocol does not define and whose name does not start with `_` (extensions must)";
    WRONG_DIRECTION = "acp/wrong-direction", Error, "https://agentclientprotocol.com/protocol/overview",
        "a method sent by the side that should receive it (e.g. the agent sending session/prompt)";
    BEFORE_INITIALIZE = "acp/before-initialize", Error, "https://agentclientprotocol.com/protocol/initialization",
        "a request other than initialize before the connection was initialized";
    UNKNOWN_SESSION = "acp/unknown-session", Error, "https://agentclientprotocol.com/protocol/session-setup",
        "a message for a session id that no session/new or session/load created";
    UPDATE_OUTSIDE_TURN = "acp/update-outside-turn", Warning, "https://agentclientprotocol.com/protocol/prompt-turn",
        "turn content (message chunks, tool calls, plans) sent when no prompt turn of that session is running";
    PERMISSION_LEFT_OPEN = "acp/permission-left-open", Error, "https://agentclientprotocol.com/protocol/tool-calls#requesting-permission",
        "a prompt turn ended while its permission request was still unanswered";
    TOOL_CALL_UNANNOUNCED = "acp/tool-call-unannounced", Warning, "https://agentclientprotocol.com/protocol/tool-calls#updating",
        "a tool_call_update (v1) for a toolCallId that no tool_call announced";
    CAPABILITY = "acp/capability-not-negotiated", Error, "https://agentclientprotocol.com/protocol/initialization#capabilities",
        "a method used although the other side did not advertise the capability for it in initialize";
    AGENT_STDOUT_NOISE = "acp/agent-stdout-noise", Error, "https://agentclientprotocol.com/protocol/transports#stdio",
        "the agent wrote something that is not a message on stdout (logs belong on stderr)";
    UNCHECKED_VERSION = "acp/unchecked-version", Info, "https://agentclientprotocol.com/protocol/initialization#protocol-version",
        "the negotiated protocol version (neither 1 nor the v2 draft) has no schema here: messages were checked by the conversation rules only";
}

/// The rule with this id.
pub fn rule(id: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.id == id)
}

/// Which way a line went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Direction {
    #[serde(rename = "c2a")]
    ClientToAgent,
    #[serde(rename = "a2c")]
    AgentToClient,
}

impl Direction {
    /// The direction a recording names (`c2a`, `a2c`); `None` for `stderr`, which is not
    /// protocol.
    pub fn of_recorded(name: &str) -> Option<Direction> {
        match name {
            "c2a" => Some(Direction::ClientToAgent),
            "a2c" => Some(Direction::AgentToClient),
            _ => None,
        }
    }
}

impl Direction {
    pub fn name(self) -> &'static str {
        match self {
            Direction::ClientToAgent => "c2a",
            Direction::AgentToClient => "a2c",
        }
    }
    fn other(self) -> Direction {
        match self {
            Direction::ClientToAgent => Direction::AgentToClient,
            Direction::AgentToClient => Direction::ClientToAgent,
        }
    }
}

/// One line of the conversation, as recorded (stderr lines are not given).
#[derive(Debug, Clone)]
pub struct Line<'a> {
    pub seq: i64,
    pub direction: Direction,
    pub raw: &'a [u8],
}

/// A rule broken at a line.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub rule: &'static str,
    pub severity: Severity,
    pub seq: i64,
    pub direction: Direction,
    pub message: String,
    pub spec: &'static str,
}

/// Who sends which method: the protocol's methods and the side that sends them.
fn sender_of(method: &str) -> Option<Direction> {
    use Direction::*;
    Some(match method {
        "initialize"
        | "authenticate"
        | "logout"
        | "session/new"
        | "session/load"
        | "session/list"
        | "session/delete"
        | "session/set_mode"
        | "session/set_model"
        | "session/set_config_option"
        | "session/prompt"
        | "session/cancel"
        | "session/fork"
        | "session/resume"
        | "session/close"
        | "session/archive"
        | "session/unarchive"
        | "session/status"
        | "session/set_title"
        | "auth/status"
        | "providers/list"
        | "providers/set"
        | "providers/disable" => ClientToAgent,
        "session/update"
        | "session/request_permission"
        | "fs/read_text_file"
        | "fs/write_text_file"
        | "terminal/create"
        | "terminal/output"
        | "terminal/release"
        | "terminal/wait_for_exit"
        | "terminal/kill"
        | "elicitation/create" => AgentToClient,
        _ => return None,
    })
}

/// Methods either side may send.
fn either_side(method: &str) -> bool {
    matches!(method, "$/cancel_request" | "mcp/message")
}

/// A request waiting for its response.
struct Pending {
    seq: i64,
    method: String,
    session: Option<String>,
}

/// The state of the conversation so far: what the rules need to remember.
#[derive(Default)]
struct Conversation {
    findings: Vec<Finding>,
    /// Requests waiting for a response, by the direction they went and their id (as JSON).
    pending: HashMap<(Direction, String), Pending>,
    initialized: bool,
    version: Option<i64>,
    client_capabilities: Value,
    agent_capabilities: Value,
    sessions: HashSet<String>,
    /// Running prompt turns: session → the seq of its session/prompt.
    turns: HashMap<String, i64>,
    /// Tool call ids announced, per session.
    tool_calls: HashSet<(String, String)>,
    /// Sessions being loaded (their history replays as updates before the load answers).
    loading: HashSet<String>,
    said_unchecked_version: bool,
    /// The agent's name (and version) from initialize.
    agent: Option<String>,
}

impl Conversation {
    fn find(&mut self, rule: Rule, line: &Line, message: String) {
        self.findings.push(Finding {
            rule: rule.id,
            severity: rule.severity,
            seq: line.seq,
            direction: line.direction,
            message,
            spec: rule.spec,
        });
    }

    fn capability(&self, side: Direction, path: &[&str]) -> bool {
        let mut value = match side {
            Direction::ClientToAgent => &self.client_capabilities,
            Direction::AgentToClient => &self.agent_capabilities,
        };
        for key in path {
            value = &value[*key];
        }
        value.as_bool() == Some(true)
    }

    fn line(&mut self, line: &Line) {
        let strict = serde_json::from_slice::<Value>(line.raw);
        // What `acptap import` and the recorder read (the peers' leniency), checked as read.
        let lenient = match &strict {
            Ok(_) => None,
            Err(_) => crate::protocol::message::decode(line.raw),
        };
        let value = match (strict, lenient) {
            (Ok(value), _) => value,
            (Err(error), Some(value)) => {
                let what = if std::str::from_utf8(line.raw).is_err() {
                    "invalid UTF-8 (read as U+FFFD)"
                } else if error.to_string().contains("escape") {
                    "a lone surrogate escape such as \"\\ud800\" (read as U+FFFD)"
                } else {
                    "`NaN` or `Infinity` (read as null)"
                };
                self.find(
                    LENIENT_JSON,
                    line,
                    format!("the line holds {what}: strict JSON parsers refuse it"),
                );
                value
            }
            (Err(error), None) => {
                let text = String::from_utf8_lossy(line.raw);
                let shown: String = text.trim_end().chars().take(60).collect();
                let why = if error.to_string().contains("recursion limit") {
                    " (nested deeper than 128 levels)"
                } else {
                    ""
                };
                if line.direction == Direction::AgentToClient && why.is_empty() {
                    self.find(
                        AGENT_STDOUT_NOISE,
                        line,
                        format!("the agent wrote `{shown}` on stdout"),
                    );
                } else {
                    self.find(NOT_JSON, line, format!("`{shown}` is not JSON{why}"));
                }
                return;
            }
        };
        match value {
            Value::Array(messages) if !messages.is_empty() => {
                for message in &messages {
                    self.message(line, message);
                }
            }
            Value::Object(_) => self.message(line, &value),
            _ => self.find(
                NOT_JSON,
                line,
                "the line is JSON but not an object or a non-empty batch".into(),
            ),
        }
    }

    fn message(&mut self, line: &Line, message: &Value) {
        if message["jsonrpc"] != "2.0" {
            self.find(NOT_JSONRPC, line, "no \"jsonrpc\": \"2.0\" member".into());
        }
        let id = message.get("id").filter(|id| !id.is_null());
        if let Some(id) = id
            && !(id.is_string() || id.is_i64() || id.is_u64())
        {
            self.find(
                NOT_JSONRPC,
                line,
                format!("the id {id} is neither a string nor an integer"),
            );
        }
        match (message["method"].as_str(), id) {
            (Some(method), Some(id)) => self.request(line, method, id, &message["params"]),
            (Some(method), None) => self.notification(line, method, &message["params"]),
            (None, Some(id)) if message.get("result").is_some() || message.get("error").is_some() => {
                if message.get("result").is_some() && message.get("error").is_some() {
                    self.find(
                        RESULT_AND_ERROR,
                        line,
                        format!("the response to id {id} has both `result` and `error`"),
                    );
                }
                self.response(line, id, message)
            }
            _ => self.find(
                NOT_JSONRPC,
                line,
                "neither a request (method and id), a notification (method) nor a response (id and result or error)"
                    .into(),
            ),
        }
    }

    /// Checks what every request and notification has in common: a known method (or `_`),
    /// sent by the right side, after initialize, matching its type.
    fn method(&mut self, line: &Line, method: &str, params: &Value, is_request: bool) -> bool {
        if method.starts_with('_') {
            return false;
        }
        match sender_of(method) {
            None if either_side(method) => {}
            None => {
                self.find(
                    UNKNOWN_METHOD,
                    line,
                    format!(
                        "`{method}` is not an ACP method; an extension method must start with `_`"
                    ),
                );
                return false;
            }
            Some(sender) if sender != line.direction => {
                self.find(
                    WRONG_DIRECTION,
                    line,
                    format!(
                        "`{method}` is sent {} only",
                        if sender == Direction::ClientToAgent {
                            "by the client"
                        } else {
                            "by the agent"
                        }
                    ),
                );
                return false;
            }
            Some(_) => {}
        }
        if is_request && method != "initialize" && !self.initialized && method != "authenticate" {
            self.find(
                BEFORE_INITIALIZE,
                line,
                format!("`{method}` before initialize was answered"),
            );
        }
        self.schema(
            line,
            || schema::params(method, params),
            || schema::params_v2(method, params),
        );
        true
    }

    /// Validates with the protocol's types of the negotiated version: v1 (and before the
    /// version is known), the v2 draft for the methods the crate types there.
    fn schema(
        &mut self,
        line: &Line,
        v1: impl FnOnce() -> Option<Result<(), String>>,
        v2: impl FnOnce() -> Option<Result<(), String>>,
    ) {
        let checked = match self.version {
            Some(1) | None => v1(),
            Some(2) => v2(),
            Some(version) => {
                if !self.said_unchecked_version {
                    self.said_unchecked_version = true;
                    self.find(
                        UNCHECKED_VERSION,
                        line,
                        format!("protocol version {version} was negotiated; only versions 1 and 2 (the draft) are checked against the schema"),
                    );
                }
                None
            }
        };
        if let Some(Err(error)) = checked {
            self.find(SCHEMA, line, error);
        }
    }

    fn session_of(params: &Value) -> Option<String> {
        params["sessionId"].as_str().map(str::to_owned)
    }

    fn known_session(&mut self, line: &Line, method: &str, params: &Value) {
        if let Some(session) = Self::session_of(params)
            && !self.sessions.contains(&session)
            && !self.loading.contains(&session)
        {
            self.find(
                UNKNOWN_SESSION,
                line,
                format!("`{method}` for session `{session}`, which no session/new or session/load created"),
            );
        }
    }

    fn request(&mut self, line: &Line, method: &str, id: &Value, params: &Value) {
        let key = (line.direction, id.to_string());
        let session = Self::session_of(params);
        // A reused id: the earlier request keeps it (its answer is the one that will come).
        if let Some(earlier) = self.pending.get(&key) {
            let earlier = earlier.seq;
            self.find(
                DUPLICATE_ID,
                line,
                format!("id {id} is still waiting for the answer to the request at seq {earlier}"),
            );
        } else {
            self.pending.insert(
                key,
                Pending {
                    seq: line.seq,
                    method: method.to_owned(),
                    session: session.clone(),
                },
            );
        }
        if !self.method(line, method, params, true) {
            return;
        }
        let capability: Option<(&[&str], &str)> = match method {
            "fs/read_text_file" => Some((&["fs", "readTextFile"], "fs.readTextFile")),
            "fs/write_text_file" => Some((&["fs", "writeTextFile"], "fs.writeTextFile")),
            m if m.starts_with("terminal/") => Some((&["terminal"], "terminal")),
            "session/load" => Some((&["loadSession"], "loadSession")),
            _ => None,
        };
        if let Some((path, name)) = capability {
            // The agent's requests need the client's capability, and the other way round.
            let holder = line.direction.other();
            if self.initialized && !self.capability(holder, path) {
                self.find(
                    CAPABILITY,
                    line,
                    format!(
                        "`{method}` although the {} did not advertise `{name}`",
                        if holder == Direction::ClientToAgent {
                            "client"
                        } else {
                            "agent"
                        }
                    ),
                );
            }
        }
        match method {
            "initialize" => {
                self.client_capabilities = params["clientCapabilities"].clone();
            }
            "session/load" => {
                if let Some(session) = session {
                    self.loading.insert(session);
                }
            }
            "session/prompt" => {
                self.known_session(line, method, params);
                if let Some(session) = session {
                    self.turns.insert(session, line.seq);
                }
            }
            "session/new" | "authenticate" | "session/list" => {}
            _ => self.known_session(line, method, params),
        }
    }

    fn notification(&mut self, line: &Line, method: &str, params: &Value) {
        if !self.method(line, method, params, false) {
            return;
        }
        match method {
            "session/update" => {
                self.known_session(line, method, params);
                let Some(session) = Self::session_of(params) else {
                    return;
                };
                let update = &params["update"];
                let kind = update["sessionUpdate"].as_str().unwrap_or_default();
                let turn_content = matches!(
                    kind,
                    "agent_message_chunk"
                        | "agent_thought_chunk"
                        | "tool_call"
                        | "tool_call_update"
                        | "plan"
                );
                if turn_content
                    && !self.turns.contains_key(&session)
                    && !self.loading.contains(&session)
                {
                    self.find(
                        UPDATE_OUTSIDE_TURN,
                        line,
                        format!("a `{kind}` update for session `{session}` while none of its prompt turns runs"),
                    );
                }
                if let Some(call) = update["toolCallId"].as_str() {
                    let key = (session, call.to_owned());
                    match kind {
                        "tool_call" => {
                            self.tool_calls.insert(key);
                        }
                        "tool_call_update" if !self.tool_calls.contains(&key) => {
                            if self.version.is_none_or(|v| v < 2) && !self.loading.contains(&key.0)
                            {
                                self.find(
                                    TOOL_CALL_UNANNOUNCED,
                                    line,
                                    format!("a tool_call_update for `{call}`, which no tool_call announced"),
                                );
                            }
                            self.tool_calls.insert(key);
                        }
                        _ => {}
                    }
                }
            }
            "session/cancel" => self.known_session(line, method, params),
            _ => {}
        }
    }

    fn response(&mut self, line: &Line, id: &Value, message: &Value) {
        let Some(request) = self
            .pending
            .remove(&(line.direction.other(), id.to_string()))
        else {
            self.find(
                UNKNOWN_RESPONSE,
                line,
                format!("a response to id {id}, which the other side has no request waiting with"),
            );
            return;
        };
        let result = &message["result"];
        let succeeded = message.get("error").is_none();
        if succeeded && !request.method.starts_with('_') {
            let method = request.method.clone();
            self.schema(
                line,
                || schema::result(&method, result),
                || schema::result_v2(&method, result),
            );
        } else if let Some(error) = message.get("error") {
            self.schema(line, || schema::error(error), || schema::error_v2(error));
        }
        match request.method.as_str() {
            "initialize" if succeeded => {
                self.initialized = true;
                self.agent_capabilities = result["agentCapabilities"].clone();
                let info = &result["agentInfo"];
                self.agent =
                    info["title"]
                        .as_str()
                        .or(info["name"].as_str())
                        .map(|name| match info["version"].as_str() {
                            Some(version) => format!("{name} {version}"),
                            None => name.to_owned(),
                        });
                self.version = result["protocolVersion"].as_i64();
            }
            "session/new" if succeeded => {
                if let Some(session) = result["sessionId"].as_str() {
                    self.sessions.insert(session.to_owned());
                }
            }
            "session/load" | "session/resume" | "session/fork" => {
                if let Some(session) = request.session {
                    self.loading.remove(&session);
                    if succeeded {
                        self.sessions.insert(session);
                    }
                }
                if let Some(session) = result["sessionId"].as_str() {
                    self.sessions.insert(session.to_owned());
                }
            }
            "session/prompt" => {
                if let Some(session) = request.session {
                    self.turns.remove(&session);
                    self.turn_ended(line, &session);
                }
            }
            _ => {}
        }
    }

    /// A turn ended: its permission requests must have been answered.
    fn turn_ended(&mut self, line: &Line, session: &str) {
        let open: Vec<i64> = self
            .pending
            .iter()
            .filter(|(_, p)| {
                p.method == "session/request_permission" && p.session.as_deref() == Some(session)
            })
            .map(|(_, p)| p.seq)
            .collect();
        for seq in open {
            self.find(
                PERMISSION_LEFT_OPEN,
                line,
                format!("the turn of session `{session}` ended while the permission request at seq {seq} was unanswered"),
            );
        }
    }

    fn end(mut self, last: Option<&Line>) -> Outcome {
        let mut open: Vec<(Direction, Pending)> = self
            .pending
            .drain()
            .map(|((direction, _), pending)| (direction, pending))
            .collect();
        open.sort_by_key(|(_, p)| p.seq);
        for (direction, pending) in open {
            let at = Line {
                seq: pending.seq,
                direction,
                raw: &[],
            };
            self.find(
                UNANSWERED,
                &at,
                format!(
                    "`{}` never got a response{}",
                    pending.method,
                    if last.is_some() {
                        " before the conversation ended"
                    } else {
                        ""
                    }
                ),
            );
        }
        self.findings.sort_by_key(|f| f.seq);
        Outcome {
            findings: self.findings,
            agent: self.agent,
        }
    }
}

/// What checking a conversation found.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub findings: Vec<Finding>,
    /// The agent's name and version, as it answered initialize.
    pub agent: Option<String>,
}

/// Checks a conversation, given its lines in order.
pub fn check<'a>(lines: impl IntoIterator<Item = Line<'a>>) -> Outcome {
    let mut conversation = Conversation::default();
    let mut last = None;
    for line in lines {
        if line.raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        conversation.line(&line);
        last = Some(line);
    }
    conversation.end(last.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &[(&'static str, &'static str)]) -> Vec<Finding> {
        check(text.iter().enumerate().map(|(i, (dir, raw))| Line {
            seq: i as i64,
            direction: if *dir == "c2a" {
                Direction::ClientToAgent
            } else {
                Direction::AgentToClient
            },
            raw: raw.as_bytes(),
        }))
        .findings
    }

    #[test]
    fn rule_ids_are_unique_and_found() {
        let ids: HashSet<&str> = RULES.iter().map(|r| r.id).collect();
        assert_eq!(ids.len(), RULES.len());
        assert_eq!(rule("acp/schema").unwrap().severity, Severity::Error);
    }

    #[test]
    fn what_peers_read_leniently_is_checked_as_read_and_named() {
        let found = check(
            [
                &br#"{"jsonrpc":"2.0","method":"_x","params":{"t":"\ud800"}}"#[..],
                br#"{"jsonrpc":"2.0","method":"_x","params":{"t":NaN}}"#,
                b"{\"jsonrpc\":\"2.0\",\"method\":\"_x\",\"params\":{\"t\":\"\xff\"}}",
                br#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}"#,
            ]
            .into_iter()
            .enumerate()
            .map(|(i, raw)| Line {
                seq: i as i64,
                direction: Direction::AgentToClient,
                raw,
            }),
        )
        .findings;
        let said: Vec<(&str, &str)> = found.iter().map(|f| (f.rule, f.message.as_str())).collect();
        assert!(said[0].1.contains("lone surrogate"), "{said:?}");
        assert!(said[1].1.contains("NaN"), "{said:?}");
        assert!(said[2].1.contains("invalid UTF-8"), "{said:?}");
        assert_eq!(
            said.iter().map(|s| s.0).collect::<Vec<_>>(),
            [
                "rpc/lenient-json",
                "rpc/lenient-json",
                "rpc/lenient-json",
                "rpc/result-and-error",
                "rpc/unknown-response"
            ]
        );
    }

    #[test]
    fn a_clean_exchange_has_no_finding() {
        let found = lines(&[
            (
                "c2a",
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#,
            ),
            (
                "a2c",
                r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{}}}"#,
            ),
            (
                "c2a",
                r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/p","mcpServers":[]}}"#,
            ),
            (
                "a2c",
                r#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s"}}"#,
            ),
            (
                "c2a",
                r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}"#,
            ),
            (
                "a2c",
                r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hello"}}}}"#,
            ),
            (
                "a2c",
                r#"{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}"#,
            ),
        ]);
        assert!(found.is_empty(), "{found:#?}");
    }
}
