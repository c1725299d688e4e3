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
//! Both read the version `initialize` negotiated ([`Version`]: the client's proposal until the
//! agent answers): v1's types and rules, or the v2 draft's. Which methods a version has and who
//! sends them is [`crate::protocol::version::sender_of`], the one table of that for all of
//! acptap; a method of the other version is `acp/wrong-version`.
//!
//! Pure: no I/O, no database. The command line feeds it and prints what it finds (`output.rs`).

pub(crate) mod output;
mod schema;

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use serde_json::Value;

use crate::protocol::Version;
use crate::protocol::version::{Side, is_v1_only_update, other_version_defining, sender_of};

/// How bad a finding is. Ordered: `Info < Warning < Error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub(crate) fn name(self) -> &'static str {
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
    WRONG_VERSION = "acp/wrong-version", Error, "https://agentclientprotocol.com/protocol/v2/initialization#version-negotiation",
        "a method or session update of another protocol version than the one negotiated (fs/*, terminal/*, session/load or a `tool_call` update under v2; tool_call/cancel, terminal/cancel, auth/login under v1)";
    BEFORE_INITIALIZE = "acp/before-initialize", Error, "https://agentclientprotocol.com/protocol/initialization",
        "a request other than initialize before the connection was initialized";
    UNKNOWN_SESSION = "acp/unknown-session", Error, "https://agentclientprotocol.com/protocol/session-setup",
        "a message for a session id that no session/new, session/load (v1) or session/resume (v2) created";
    UPDATE_OUTSIDE_TURN = "acp/update-outside-turn", Warning, "https://agentclientprotocol.com/protocol/prompt-turn",
        "turn content (message chunks, tool calls, plans) sent when no prompt turn of that session is running (protocol v1)";
    PERMISSION_LEFT_OPEN = "acp/permission-left-open", Error, "https://agentclientprotocol.com/protocol/tool-calls#requesting-permission",
        "a prompt turn ended while its permission request was still unanswered (protocol v1)";
    CANCEL_UNKNOWN_REQUEST = "acp/cancel-unknown-request", Warning, "https://agentclientprotocol.com/protocol/v2/cancellation",
        "a $/cancel_request for an id its sender never sent a request with (cancelling one already answered is fine)";
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
pub(crate) fn rule(id: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.id == id)
}

/// Which way a line went: the protocol's own (a line of the agent's stderr is never checked; were
/// one given, it would count as the agent's).
pub use crate::protocol::Direction;

/// One line of the conversation, as recorded (stderr lines are not given).
#[derive(Debug, Clone)]
pub(crate) struct Line<'a> {
    pub seq: i64,
    pub direction: Direction,
    pub raw: &'a [u8],
}

/// A rule broken at a line.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Finding {
    pub rule: &'static str,
    pub severity: Severity,
    pub seq: i64,
    pub direction: Direction,
    pub message: String,
    pub spec: &'static str,
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
    /// Requests ever sent, by direction and id (as JSON): what a `$/cancel_request` may name.
    sent: HashSet<(Direction, String)>,
    initialized: bool,
    /// The negotiated version: the client's proposal in `initialize` until the agent answers.
    version: Option<Version>,
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

    /// The version whose types and rules apply: the negotiated one; v1 before `initialize`, and
    /// for a version acptap has no rules for (`sender_of` reads that one as v1 too).
    fn rules(&self) -> Version {
        match self.version {
            Some(Version::V2) => Version::V2,
            _ => Version::V1,
        }
    }

    fn capability(&self, side: Direction, path: &[&str]) -> bool {
        let mut value = match side {
            Direction::ClientToAgent => &self.client_capabilities,
            Direction::AgentToClient | Direction::Stderr => &self.agent_capabilities,
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

    /// Checks what every request and notification has in common: a known method (or `_`) of the
    /// negotiated version, sent by the right side, after initialize, matching its type.
    fn method(&mut self, line: &Line, method: &str, params: &Value, is_request: bool) -> bool {
        if method.starts_with('_') {
            return false;
        }
        let version = self.version.unwrap_or(Version::V1);
        match sender_of(version, method) {
            None => {
                if let Some(other) = other_version_defining(version, method) {
                    let said = wrong_version(version, other, method);
                    self.find(WRONG_VERSION, line, said);
                } else {
                    self.find(
                        UNKNOWN_METHOD,
                        line,
                        format!(
                            "`{method}` is not an ACP method; an extension method must start with `_`"
                        ),
                    );
                }
                return false;
            }
            Some(Side::Either) => {}
            Some(sender) => {
                let sent_by = match line.direction {
                    Direction::ClientToAgent => Side::Client,
                    Direction::AgentToClient | Direction::Stderr => Side::Agent,
                };
                if sender != sent_by {
                    self.find(
                        WRONG_DIRECTION,
                        line,
                        format!(
                            "`{method}` is sent {} only",
                            if sender == Side::Client {
                                "by the client"
                            } else {
                                "by the agent"
                            }
                        ),
                    );
                    return false;
                }
            }
        }
        if is_request
            && !self.initialized
            && !matches!(method, "initialize" | "authenticate" | "auth/login")
        {
            self.find(
                BEFORE_INITIALIZE,
                line,
                format!("`{method}` before initialize was answered"),
            );
        }
        self.schema(line, |version| {
            schema::params(version, method, params, is_request)
        });
        true
    }

    /// Validates with the protocol's types of the negotiated version: v1 (and before the version
    /// is known), or the v2 draft. Another negotiated version is not checked, and said once.
    fn schema(&mut self, line: &Line, check: impl FnOnce(Version) -> Option<Result<(), String>>) {
        let checked = match self.version {
            None | Some(Version::V1) => check(Version::V1),
            Some(Version::V2) => check(Version::V2),
            // A proposal the agent has not answered yet: wait for what it answers.
            Some(Version::Other(_)) if !self.initialized => None,
            Some(Version::Other(version)) => {
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
            let creators = if self.rules() == Version::V2 {
                "session/new or session/resume"
            } else {
                "session/new or session/load"
            };
            self.find(
                UNKNOWN_SESSION,
                line,
                format!("`{method}` for session `{session}`, which no {creators} created"),
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
            self.sent.insert(key.clone());
            self.pending.insert(
                key,
                Pending {
                    seq: line.seq,
                    method: method.to_owned(),
                    session: session.clone(),
                },
            );
        }
        // The client's proposal is the version until the agent answers: its own initialize is
        // read with the types of the version it proposes.
        if method == "initialize"
            && line.direction == Direction::ClientToAgent
            && !self.initialized
            && let Some(proposed) = Version::from_value(&params["protocolVersion"])
        {
            self.version = Some(proposed);
        }
        if !self.method(line, method, params, true) {
            return;
        }
        // v1's negotiated capabilities (these methods are v1's only; v2's `terminal/cancel` needs
        // the terminal's own `capabilities.cancel`, not one of initialize).
        let capability: Option<(&[&str], &str)> = match method {
            "fs/read_text_file" => Some((&["fs", "readTextFile"], "fs.readTextFile")),
            "fs/write_text_file" => Some((&["fs", "writeTextFile"], "fs.writeTextFile")),
            "terminal/create"
            | "terminal/output"
            | "terminal/release"
            | "terminal/wait_for_exit"
            | "terminal/kill" => Some((&["terminal"], "terminal")),
            "session/load" => Some((&["loadSession"], "loadSession")),
            _ => None,
        };
        if let Some((path, name)) = capability {
            // The agent's requests need the client's capability, and the other way round.
            let holder = line.direction.reverse();
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
            // v2 names them `capabilities` and `info` (v1: `clientCapabilities`, `clientInfo`).
            "initialize" if self.rules() == Version::V2 => {
                self.client_capabilities = params["capabilities"].clone();
            }
            "initialize" => {
                self.client_capabilities = params["clientCapabilities"].clone();
            }
            // v1's load replays the history before its answer; so does v2's resume (from
            // `replayFrom`, then a state snapshot). v1's resume replays nothing.
            "session/load" => {
                if let Some(session) = session {
                    self.loading.insert(session);
                }
            }
            "session/resume" if self.rules() == Version::V2 => {
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
            // Methods that name a stored session, not one of this connection (any session
            // `session/list` returns): resumed, forked, deleted, archived, retitled, asked after.
            "session/new" | "authenticate" | "auth/login" | "session/list" | "session/resume"
            | "session/fork" | "session/delete" | "session/archive" | "session/unarchive"
            | "session/status" | "session/options" | "session/set_title" | "session/close" => {}
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
                if self.rules() == Version::V2 {
                    self.update_v2(line, kind);
                } else {
                    self.update_v1(line, session, kind, update);
                }
            }
            "session/cancel" => self.known_session(line, method, params),
            "$/cancel_request" => {
                // It names a request its sender issued (the receiver matches it against the
                // requests it received from that sender). One already answered is fine: the
                // two cross on the wire.
                let id = &params["requestId"];
                if (id.is_string() || id.is_i64() || id.is_u64())
                    && !self.sent.contains(&(line.direction, id.to_string()))
                {
                    self.find(
                        CANCEL_UNKNOWN_REQUEST,
                        line,
                        format!(
                            "`$/cancel_request` for id {id}, which the {} never sent a request with",
                            side_name(line.direction)
                        ),
                    );
                }
            }
            _ => {}
        }
    }

    /// A v1 `session/update`: turn content belongs in a prompt turn, and a `tool_call_update`
    /// follows the `tool_call` that announced it.
    fn update_v1(&mut self, line: &Line, session: String, kind: &str, update: &Value) {
        let turn_content = matches!(
            kind,
            "agent_message_chunk"
                | "agent_thought_chunk"
                | "tool_call"
                | "tool_call_update"
                | "plan"
        );
        if turn_content && !self.turns.contains_key(&session) && !self.loading.contains(&session) {
            self.find(
                UPDATE_OUTSIDE_TURN,
                line,
                format!(
                    "a `{kind}` update for session `{session}` while none of its prompt turns runs"
                ),
            );
        }
        if let Some(call) = update["toolCallId"].as_str() {
            let key = (session, call.to_owned());
            match kind {
                "tool_call" => {
                    self.tool_calls.insert(key);
                }
                "tool_call_update" if !self.tool_calls.contains(&key) => {
                    if !self.loading.contains(&key.0) {
                        self.find(
                            TOOL_CALL_UNANNOUNCED,
                            line,
                            format!(
                                "a tool_call_update for `{call}`, which no tool_call announced"
                            ),
                        );
                    }
                    self.tool_calls.insert(key);
                }
                _ => {}
            }
        }
    }

    /// A v2 `session/update`. The draft lets the agent report at any time (agent-initiated and
    /// background work, a `state_update` says when foreground work runs), `tool_call_update` is
    /// an upsert that may create a call, and messages are upserts by `messageId` (the schema
    /// requires it): what is left to check is that no v1 kind is used, which v2's schema reads as
    /// a future kind.
    fn update_v2(&mut self, line: &Line, kind: &str) {
        if is_v1_only_update(kind) {
            let instead = match kind {
                "tool_call" => "v2 creates and updates a tool call with `tool_call_update`",
                "plan" => "v2 reports plans with `plan_update`",
                _ => "v2 has config options (`config_option_update`) instead of modes",
            };
            self.find(
                WRONG_VERSION,
                line,
                format!("a `{kind}` update is protocol v1's, but v2 was negotiated: {instead}"),
            );
        }
    }

    fn response(&mut self, line: &Line, id: &Value, message: &Value) {
        let Some(request) = self
            .pending
            .remove(&(line.direction.reverse(), id.to_string()))
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
        // The agent's answer to initialize is the negotiated version, and is read with its types.
        if request.method == "initialize" && succeeded {
            self.initialized = true;
            if let Some(answered) = Version::from_value(&result["protocolVersion"]) {
                self.version = Some(answered);
            }
        }
        if succeeded && !request.method.starts_with('_') {
            let method = request.method.as_str();
            self.schema(line, |version| schema::result(version, method, result));
        } else if let Some(error) = message.get("error") {
            self.schema(line, |version| schema::error(version, error));
        }
        match request.method.as_str() {
            "initialize" if succeeded => {
                let (capabilities, info) = if self.rules() == Version::V2 {
                    (&result["capabilities"], &result["info"])
                } else {
                    (&result["agentCapabilities"], &result["agentInfo"])
                };
                self.agent_capabilities = capabilities.clone();
                self.agent =
                    info["title"]
                        .as_str()
                        .or(info["name"].as_str())
                        .map(|name| match info["version"].as_str() {
                            Some(version) => format!("{name} {version}"),
                            None => name.to_owned(),
                        });
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
            // v1: the answer ends the turn. v2: it says the prompt was inserted; the turn's end is
            // an idle `state_update`, and a permission request may outlive it (background work
            // may ask too), so nothing is left to check here.
            "session/prompt" => {
                if let Some(session) = request.session {
                    self.turns.remove(&session);
                    if self.rules() == Version::V1 {
                        self.turn_ended(line, &session);
                    }
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

    /// What the conversation broke, once its last line is read; `any_line`: whether it had one.
    fn end(mut self, any_line: bool) -> Outcome {
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
                    if any_line {
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

/// Who sends on a direction, in words.
fn side_name(direction: Direction) -> &'static str {
    match direction {
        Direction::ClientToAgent => "client",
        Direction::AgentToClient | Direction::Stderr => "agent",
    }
}

/// What `acp/wrong-version` says of `method`, which `other` defines and `negotiated` does not.
fn wrong_version(negotiated: Version, other: Version, method: &str) -> String {
    let instead = match method {
        "fs/read_text_file" | "fs/write_text_file" => {
            "the v2 draft moved files to the agent: the client no longer serves fs/*"
        }
        m if m.starts_with("terminal/") && other == Version::V1 => {
            "the v2 draft moved terminals to the agent: the client no longer serves terminal/*"
        }
        "session/load" => "v2 loads a session with session/resume and `replayFrom`",
        "authenticate" => "v2 authenticates with auth/login",
        "logout" => "v2 logs out with auth/logout",
        "session/set_mode" | "session/set_model" => "v2 uses session/set_config_option",
        "tool_call/cancel" | "terminal/cancel" => "v1 cancels a whole turn with session/cancel",
        "auth/login" => "v1 authenticates with authenticate",
        "auth/logout" => "v1 logs out with logout",
        _ => "",
    };
    let head = match negotiated {
        Version::V2 => format!("`{method}` is not a v2 method (v2 was negotiated)"),
        Version::V1 => format!("`{method}` is not a v1 method (it is the v2 draft's)"),
        Version::Other(n) => format!(
            "`{method}` is a {} method, and protocol version {n} was negotiated",
            if other == Version::V2 { "v2" } else { "v1" }
        ),
    };
    if instead.is_empty() {
        head
    } else {
        format!("{head}: {instead}")
    }
}

/// What checking a conversation found.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    pub findings: Vec<Finding>,
    /// The agent's name and version, as it answered initialize.
    pub agent: Option<String>,
}

impl Outcome {
    /// Leaves out the findings `silenced(agent, rule)` names (the config file's `[check.silence]`,
    /// for the agent of this conversation) and says how many.
    pub(crate) fn silence(&mut self, silenced: impl Fn(Option<&str>, &str) -> bool) -> usize {
        let before = self.findings.len();
        let agent = self.agent.as_deref();
        self.findings.retain(|f| !silenced(agent, f.rule));
        before - self.findings.len()
    }
}

/// A conversation checked one line at a time, in order: what [`check`] does, for lines read one
/// after the other (a recording read from the database, never held whole).
#[derive(Default)]
pub(crate) struct Checker {
    conversation: Conversation,
    any_line: bool,
}

impl Checker {
    /// The next line of the conversation.
    pub(crate) fn line(&mut self, line: &Line) {
        if line.raw.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        self.conversation.line(line);
        self.any_line = true;
    }

    /// What the conversation broke, its last line read.
    pub(crate) fn finish(self) -> Outcome {
        self.conversation.end(self.any_line)
    }
}

/// Checks a conversation, given its lines in order.
pub(crate) fn check<'a>(lines: impl IntoIterator<Item = Line<'a>>) -> Outcome {
    let mut checker = Checker::default();
    for line in lines {
        checker.line(&line);
    }
    checker.finish()
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

    /// The findings of lines given as (direction, text).
    fn owned(text: &[(&str, String)]) -> Vec<Finding> {
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

    /// v2 lines built from the schema crate's own v2 types.
    mod v2_lines {
        use agent_client_protocol_schema::{ProtocolVersion, v2};
        use serde::Serialize;
        use serde_json::json;

        pub(crate) const SESSION: &str = "s";

        pub(crate) fn request(id: i64, method: &str, params: impl Serialize) -> String {
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
        }
        pub(crate) fn notification(method: &str, params: impl Serialize) -> String {
            json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string()
        }
        pub(crate) fn answer(id: i64, result: impl Serialize) -> String {
            json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
        }
        pub(crate) fn update(session: &str, update: v2::SessionUpdate) -> String {
            notification(
                "session/update",
                v2::UpdateSessionNotification::new(session, update),
            )
        }
        pub(crate) fn state(session: &str, state: v2::StateUpdate) -> String {
            update(session, v2::SessionUpdate::StateUpdate(state))
        }
        pub(crate) fn idle(session: &str) -> String {
            state(
                session,
                v2::StateUpdate::Idle(
                    v2::IdleStateUpdate::new().stop_reason(v2::StopReason::EndTurn),
                ),
            )
        }
        /// initialize with protocol version 2 both ways, and a session `s`.
        pub(crate) fn opening() -> Vec<(&'static str, String)> {
            let version = ProtocolVersion::V2;
            vec![
                (
                    "c2a",
                    request(
                        0,
                        "initialize",
                        v2::InitializeRequest::new(
                            version,
                            v2::Implementation::new("client", "1.0"),
                        ),
                    ),
                ),
                (
                    "a2c",
                    answer(
                        0,
                        v2::InitializeResponse::new(
                            version,
                            v2::Implementation::new("agent", "1.0"),
                        ),
                    ),
                ),
                (
                    "c2a",
                    request(1, "session/new", v2::NewSessionRequest::new("/p")),
                ),
                ("a2c", answer(1, v2::NewSessionResponse::new(SESSION))),
            ]
        }
        pub(crate) fn permission(id: i64) -> v2::RequestPermissionRequest {
            v2::RequestPermissionRequest::new(
                SESSION,
                "Run ls",
                vec![
                    v2::PermissionOption::new(
                        "allow",
                        "Allow",
                        v2::PermissionOptionKind::AllowOnce,
                    ),
                    v2::PermissionOption::new(
                        "reject",
                        "Reject",
                        v2::PermissionOptionKind::RejectOnce,
                    ),
                ],
            )
            .description(format!("request {id}: list the project"))
            .subject(v2::RequestPermissionSubject::from(
                v2::CommandPermissionSubject::new("ls", "/p").tool_call_id("call1"),
            ))
        }
    }

    #[test]
    fn a_clean_v2_exchange_has_no_finding() {
        use agent_client_protocol_schema::v2;
        use v2_lines::*;
        let text = |t: &str| -> v2::ContentBlock { t.into() };
        let mut lines = opening();
        lines.extend([
            (
                "c2a",
                request(
                    2,
                    "session/prompt",
                    v2::PromptRequest::new(SESSION, vec![text("list the files")]),
                ),
            ),
            (
                "a2c",
                state(
                    SESSION,
                    v2::StateUpdate::Running(v2::RunningStateUpdate::new()),
                ),
            ),
            (
                "a2c",
                update(
                    SESSION,
                    v2::SessionUpdate::UserMessage(
                        v2::UserMessage::new("u1").content(vec![text("list the files")]),
                    ),
                ),
            ),
            // The prompt's answer may come before the turn ends: it says the message was inserted.
            ("a2c", answer(2, v2::PromptResponse::new("u1"))),
            (
                "a2c",
                update(
                    SESSION,
                    v2::SessionUpdate::AgentThought(
                        v2::AgentThought::new("t1").content(vec![text("ls will do")]),
                    ),
                ),
            ),
            (
                "a2c",
                update(
                    SESSION,
                    v2::SessionUpdate::AgentMessageChunk(v2::ContentChunk::new(
                        text("Let me "),
                        "m1",
                    )),
                ),
            ),
            // An upsert of the same message by its messageId.
            (
                "a2c",
                update(
                    SESSION,
                    v2::SessionUpdate::AgentMessage(
                        v2::AgentMessage::new("m1").content(vec![text("Let me look.")]),
                    ),
                ),
            ),
            // No `tool_call` first: in v2 the upsert creates the call.
            (
                "a2c",
                update(
                    SESSION,
                    v2::SessionUpdate::ToolCallUpdate(
                        v2::ToolCallUpdate::new("call1")
                            .title("ls")
                            .kind(v2::ToolKind::Execute)
                            .status(v2::ToolCallStatus::Pending),
                    ),
                ),
            ),
            (
                "a2c",
                state(
                    SESSION,
                    v2::StateUpdate::RequiresAction(v2::RequiresActionStateUpdate::new()),
                ),
            ),
            (
                "a2c",
                request(10, "session/request_permission", permission(10)),
            ),
            (
                "c2a",
                answer(
                    10,
                    v2::RequestPermissionResponse::new(v2::RequestPermissionOutcome::Selected(
                        v2::SelectedPermissionOutcome::new("allow"),
                    )),
                ),
            ),
            (
                "a2c",
                request(
                    11,
                    "elicitation/create",
                    v2::CreateElicitationRequest::new(
                        v2::ElicitationFormMode::new(
                            v2::ElicitationSessionScope::new(SESSION),
                            v2::ElicitationSchema::new(),
                        ),
                        "Which branch?",
                    ),
                ),
            ),
            (
                "c2a",
                answer(
                    11,
                    v2::CreateElicitationResponse::new(v2::ElicitationAction::Accept(
                        v2::ElicitationAcceptAction::new(),
                    )),
                ),
            ),
            (
                "a2c",
                state(
                    SESSION,
                    v2::StateUpdate::Running(v2::RunningStateUpdate::new()),
                ),
            ),
            (
                "c2a",
                request(
                    3,
                    "tool_call/cancel",
                    v2::CancelToolCallRequest::new(SESSION, "call1"),
                ),
            ),
            ("a2c", answer(3, v2::CancelToolCallResponse::new())),
            (
                "c2a",
                request(
                    6,
                    "terminal/cancel",
                    v2::CancelTerminalRequest::new(SESSION, "term1"),
                ),
            ),
            ("a2c", answer(6, v2::CancelTerminalResponse::new())),
            (
                "a2c",
                update(
                    SESSION,
                    v2::SessionUpdate::ToolCallUpdate(
                        v2::ToolCallUpdate::new("call1").status(v2::ToolCallStatus::Cancelled),
                    ),
                ),
            ),
            ("a2c", idle(SESSION)),
            // Cancelling a request already answered is fine: the two cross on the wire.
            (
                "c2a",
                notification(
                    "$/cancel_request",
                    v2::CancelRequestNotification::new(v2::RequestId::Number(2)),
                ),
            ),
            // A stored session, resumed with its history replayed before the answer.
            (
                "c2a",
                request(
                    4,
                    "session/resume",
                    v2::ResumeSessionRequest::new("old", "/p")
                        .replay_from(v2::ReplayFrom::from(v2::ReplayFromStart::new())),
                ),
            ),
            (
                "a2c",
                update(
                    "old",
                    v2::SessionUpdate::UserMessage(
                        v2::UserMessage::new("o1").content(vec![text("earlier")]),
                    ),
                ),
            ),
            (
                "a2c",
                update(
                    "old",
                    v2::SessionUpdate::AgentMessage(
                        v2::AgentMessage::new("o2").content(vec![text("done")]),
                    ),
                ),
            ),
            ("a2c", idle("old")),
            ("a2c", answer(4, v2::ResumeSessionResponse::new())),
            // A prompt cancelled with $/cancel_request, answered with the cancelled error.
            (
                "c2a",
                request(
                    5,
                    "session/prompt",
                    v2::PromptRequest::new("old", vec![text("again")]),
                ),
            ),
            (
                "c2a",
                notification(
                    "$/cancel_request",
                    v2::CancelRequestNotification::new(v2::RequestId::Number(5)),
                ),
            ),
            (
                "a2c",
                serde_json::json!({"jsonrpc": "2.0", "id": 5,
                    "error": v2::Error::new(-32800, "Request cancelled")})
                .to_string(),
            ),
        ]);
        let outcome = check(lines.iter().enumerate().map(|(i, (dir, raw))| Line {
            seq: i as i64,
            direction: if *dir == "c2a" {
                Direction::ClientToAgent
            } else {
                Direction::AgentToClient
            },
            raw: raw.as_bytes(),
        }));
        assert!(outcome.findings.is_empty(), "{:#?}", outcome.findings);
        // v2's initialize answer names the agent in `info`.
        assert_eq!(outcome.agent.as_deref(), Some("agent 1.0"));
    }

    #[test]
    fn a_v1_method_under_v2_is_a_finding() {
        use v2_lines::*;
        let mut lines = opening();
        lines.extend([
            (
                "a2c",
                request(
                    7,
                    "fs/read_text_file",
                    serde_json::json!({"sessionId": SESSION, "path": "/p/a.txt"}),
                ),
            ),
            (
                "c2a",
                serde_json::json!({"jsonrpc": "2.0", "id": 7,
                    "error": {"code": -32601, "message": "Method not found"}})
                .to_string(),
            ),
            (
                "c2a",
                request(
                    8,
                    "session/load",
                    serde_json::json!({"sessionId": SESSION, "cwd": "/p", "mcpServers": []}),
                ),
            ),
            (
                "a2c",
                serde_json::json!({"jsonrpc": "2.0", "id": 8,
                    "error": {"code": -32601, "message": "Method not found"}})
                .to_string(),
            ),
        ]);
        let found = owned(&lines);
        let said: Vec<(&str, &str)> = found.iter().map(|f| (f.rule, f.message.as_str())).collect();
        assert_eq!(said[0].0, "acp/wrong-version", "{said:#?}");
        assert!(
            said[0].1.contains("not a v2 method") && said[0].1.contains("fs/read_text_file"),
            "{said:#?}"
        );
        assert_eq!(said[1].0, "acp/wrong-version", "{said:#?}");
        assert!(said[1].1.contains("session/resume"), "{said:#?}");
        assert_eq!(
            said.iter().map(|s| s.0).collect::<Vec<_>>(),
            ["acp/wrong-version", "acp/wrong-version"]
        );
    }

    #[test]
    fn a_v2_permission_request_without_a_title_is_a_schema_finding() {
        use v2_lines::*;
        let mut params = serde_json::to_value(permission(9)).unwrap();
        params.as_object_mut().unwrap().remove("title");
        let mut lines = opening();
        lines.extend([
            ("a2c", request(9, "session/request_permission", params)),
            (
                "c2a",
                answer(9, serde_json::json!({"outcome": {"outcome": "cancelled"}})),
            ),
        ]);
        let found = owned(&lines);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(found[0].rule, "acp/schema");
        assert!(found[0].message.contains("title"), "{found:#?}");
        // A v1 request (a toolCall, no title) is refused under v2 the same way.
        let v1_shaped = serde_json::json!({"sessionId": SESSION,
            "toolCall": {"toolCallId": "c1", "title": "ls"},
            "options": [{"optionId": "a", "name": "Allow", "kind": "allow_once"}]});
        let mut lines = opening();
        lines.extend([
            ("a2c", request(9, "session/request_permission", v1_shaped)),
            (
                "c2a",
                answer(
                    9,
                    serde_json::json!({"outcome": {"outcome": "selected", "optionId": "a"}}),
                ),
            ),
        ]);
        let rules: Vec<&str> = owned(&lines).iter().map(|f| f.rule).collect();
        assert_eq!(rules, ["acp/schema"]);
    }

    #[test]
    fn v1_kinds_under_v2_and_v2_methods_under_v1_are_the_wrong_version() {
        use v2_lines::*;
        let mut lines = opening();
        lines.push((
            "a2c",
            notification(
                "session/update",
                serde_json::json!({"sessionId": SESSION, "update":
                    {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "ls"}}),
            ),
        ));
        let found = owned(&lines);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(found[0].rule, "acp/wrong-version");
        assert!(found[0].message.contains("tool_call_update"), "{found:#?}");

        let found = lines_v1_then(&[
            r#"{"jsonrpc":"2.0","id":3,"method":"tool_call/cancel","params":{"sessionId":"s","toolCallId":"c1"}}"#,
            r#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":77}}"#,
        ]);
        let said: Vec<(&str, &str)> = found.iter().map(|f| (f.rule, f.message.as_str())).collect();
        assert_eq!(
            said.iter().map(|s| s.0).collect::<Vec<_>>(),
            [
                "acp/wrong-version",
                "rpc/unanswered",
                "acp/cancel-unknown-request"
            ],
            "{said:#?}"
        );
        assert!(
            said[0].1.contains("not a v1 method") && said[0].1.contains("session/cancel"),
            "{said:#?}"
        );
    }

    /// A v1 opening (initialize, a session `s`), then these client lines.
    fn lines_v1_then(client: &[&'static str]) -> Vec<Finding> {
        let mut text = vec![
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
        ];
        text.extend(client.iter().map(|line| ("c2a", *line)));
        lines(&text)
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
