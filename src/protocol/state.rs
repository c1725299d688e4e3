//! The one state of a connection, worked out from its lines: requests waiting for their answer
//! (by direction and id), sessions and their cwd, the agent's name, tool calls (v1 and v2 rules,
//! `toolcall.rs`). The recorder and the policy tap each keep one [`SessionState`] and feed it the
//! same way ([`SessionState::observe`]), so they follow the same rules; the recorder stores the
//! [`Fact`]s it returns, the tap asks it questions ([`SessionState::tool_call`],
//! [`SessionState::cwd`], [`SessionState::agent_name`]).
//!
//! Pure and sans-IO. It sees a copy of the traffic and can never alter or delay forwarding.
//!
//! # Correlation
//!
//! Each direction has its own id space (both peers count from 0). A response is paired with the
//! request of the same id (compared as JSON text, so `1` and `"1"` differ) that went the other
//! way. Requests are remembered by the sequence number of their line, which is how the store
//! finds the row a response completes.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::message::{Direction, Message, MessageKind};
use super::toolcall::{self, ToolCall, ToolCalls, UpdateKind};
use super::version::Version;

/// Something learned from one line, for the store.
#[derive(Debug, Clone, PartialEq)]
pub enum Fact {
    /// The client's `initialize` request.
    ClientInitialize {
        protocol_version: Option<Value>,
        client_info: Option<Value>,
    },
    /// The agent's answer to `initialize`.
    AgentInitialize {
        protocol_version: Option<Value>,
        agent_info: Option<Value>,
    },
    /// A session exists: from `session/new`'s answer, `session/load`, `session/resume`,
    /// `session/fork`'s answer, or an id seen in traffic.
    Session {
        session_id: String,
        cwd: Option<String>,
        origin: &'static str,
    },
    TurnStarted {
        session_id: Option<String>,
    },
    TurnEnded {
        request_seq: i64,
        stop_reason: Option<String>,
        error: Option<String>,
    },
    /// The client sent `session/cancel`.
    CancelRequested {
        session_id: Option<String>,
    },
    /// What a message changed of a tool call.
    ToolCall {
        session_id: String,
        tool_call_id: String,
        how: UpdateKind,
        created: bool,
        /// The fields the message changed, with their full new values (`None`: cleared). For a
        /// `tool_call_content_chunk`, `content` is the one item to append.
        changed: Vec<(&'static str, Option<Value>)>,
        /// The status after the message.
        status: Option<String>,
    },
    PermissionRequested {
        session_id: Option<String>,
        tool_call_id: Option<String>,
        options: Option<Value>,
        /// v2: the prompt's `title` and `description`, and the `subject` as it came (any type).
        title: Option<String>,
        description: Option<String>,
        subject: Option<Value>,
    },
    PermissionDecided {
        request_seq: i64,
        outcome: String,
        option_id: Option<String>,
        option_kind: Option<String>,
        decided_by: &'static str,
    },
}

/// Most terminals a connection's state holds.
pub(crate) const MAX_TERMINALS: usize = 10_000;

/// A terminal the agent reported (v2 `terminal_update`): its `command` and `cwd` as last set
/// (`None`: never set, or cleared).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct TerminalSeen {
    pub command: Option<Value>,
    pub cwd: Option<Value>,
}

/// A prompt whose turn has not ended.
#[derive(Debug, Clone, Copy)]
struct OpenTurn {
    request_seq: i64,
    /// v2: the prompt was answered or the session reported work since: its next `idle` ends it.
    started: bool,
}

/// A request waiting for its response.
#[derive(Debug, Clone)]
struct Pending {
    method: String,
    seq: i64,
    /// The session the request was about, for its answer and for a `$/cancel_request` of it.
    session_id: Option<String>,
    /// What the response needs from the request: the cwd of `session/new`, the options of a
    /// permission request.
    params: Option<Value>,
}

/// What the session state adds to a line's own fields.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observed {
    /// For a response: the method of the request it answers.
    pub method: Option<String>,
    /// For a response: the sequence number of the request it answers.
    pub reply_to_seq: Option<i64>,
    /// For a response: the session its request was about.
    pub session_id: Option<String>,
    pub facts: Vec<Fact>,
}

#[derive(Debug, Default)]
pub struct SessionState {
    pending: HashMap<(Direction, String), Pending>,
    /// Every session seen, with its cwd once known.
    sessions: HashMap<String, Option<String>>,
    tool_calls: ToolCalls,
    /// `agentInfo.name` from the agent's answer to `initialize`.
    agent_name: Option<String>,
    /// The protocol version: the client's proposal until the agent answers `initialize`, then the
    /// negotiated one.
    version: Option<Version>,
    /// The agent's terminals (v2 `terminal_update`), by (session, terminalId), bounded.
    terminals: HashMap<(String, String), TerminalSeen>,
    /// More terminals were reported than [`MAX_TERMINALS`]: some were not kept.
    terminals_forgotten: bool,
    /// Per session, the prompt whose turn is open: a v2 turn ends with the session's `idle`
    /// state update, not with the prompt's answer.
    open_turns: HashMap<String, OpenTurn>,
    /// For the tap: no facts (and no copies of tool-call values for them), and only the requests
    /// whose answers it reads (`initialize`, `session/new`) are remembered.
    tap: bool,
}

impl SessionState {
    /// The recorder's state: every fact.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// The policy tap's state: the same rules, without the facts.
    pub(crate) fn for_tap() -> Self {
        SessionState {
            tap: true,
            tool_calls: ToolCalls::shedding_finished(),
            ..Self::default()
        }
    }

    /// What is known of a tool call.
    pub(crate) fn tool_call(&self, session_id: &str, tool_call_id: &str) -> Option<&ToolCall> {
        self.tool_calls.get(session_id, tool_call_id)
    }

    /// Whether a tool call was let go to bound memory (see [`ToolCalls`]).
    pub(crate) fn forgotten(&self, session_id: &str, tool_call_id: &str) -> bool {
        self.tool_calls.forgotten(session_id, tool_call_id)
    }

    /// Every tool call known, as (session, toolCallId).
    pub(crate) fn tool_call_keys(&self) -> impl Iterator<Item = &(String, String)> {
        self.tool_calls.keys()
    }

    /// A terminal the agent reported in a session.
    pub(crate) fn terminal(&self, session_id: &str, terminal_id: &str) -> Option<&TerminalSeen> {
        self.terminals
            .get(&(session_id.to_owned(), terminal_id.to_owned()))
    }

    /// Whether terminals were reported past [`MAX_TERMINALS`] (an unknown one may be one).
    pub(crate) fn terminals_forgotten(&self) -> bool {
        self.terminals_forgotten
    }

    /// A session's cwd, from `session/new` (with the agent's answer) or `session/load`.
    pub(crate) fn cwd(&self, session_id: &str) -> Option<&str> {
        self.sessions.get(session_id)?.as_deref()
    }

    pub(crate) fn agent_name(&self) -> Option<&str> {
        self.agent_name.as_deref()
    }

    /// The connection's protocol version: negotiated (the agent's answer to `initialize`), else
    /// proposed (the client's `initialize`), else `None` (no `initialize` seen).
    pub(crate) fn version(&self) -> Option<Version> {
        self.version
    }

    /// Whether a `session/new` or `session/fork` waits for the agent's answer (which names the
    /// new session).
    pub(crate) fn waiting_for_new_session(&self) -> bool {
        self.pending
            .values()
            .any(|p| matches!(p.method.as_str(), "session/new" | "session/fork"))
    }

    /// Observes one line, numbered `seq`, that went `direction`.
    pub(crate) fn observe(&mut self, direction: Direction, seq: i64, msg: &Message) -> Observed {
        if let Some(messages) = msg.batch() {
            // The facts of every message of a batch, as if each had its own line.
            let mut out = Observed::default();
            for message in &messages {
                out.facts
                    .extend(self.observe(direction, seq, message).facts);
            }
            return out;
        }
        let mut out = Observed::default();
        if let Some(session_id) = msg.session_id() {
            self.note_session(session_id, None, "seen", &mut out.facts);
        }
        match msg.kind {
            MessageKind::Request => self.request(direction, seq, msg, &mut out),
            MessageKind::Notification => {
                out.session_id = self.notification(direction, msg, &mut out.facts);
            }
            MessageKind::Response => self.response(direction, msg, &mut out),
            _ => {}
        }
        out
    }

    fn note_session(
        &mut self,
        session_id: &str,
        cwd: Option<String>,
        origin: &'static str,
        facts: &mut Vec<Fact>,
    ) {
        // A known session is announced again only when there is something new to say.
        let known = self.sessions.contains_key(session_id);
        if cwd.is_some() || !known {
            let slot = self.sessions.entry(session_id.to_owned()).or_default();
            if cwd.is_some() {
                slot.clone_from(&cwd);
            }
        }
        if !known || origin != "seen" {
            facts.push(Fact::Session {
                session_id: session_id.to_owned(),
                cwd,
                origin,
            });
        }
    }

    fn request(&mut self, direction: Direction, seq: i64, msg: &Message, out: &mut Observed) {
        let (Some(id), Some(method)) = (&msg.id, &msg.method) else {
            return;
        };
        let params = msg.params();
        let mut keep_params = false;
        match (direction, method.as_str()) {
            (Direction::ClientToAgent, "initialize") => {
                let proposed = params.and_then(|p| p.get("protocolVersion"));
                if self.version.is_none() {
                    self.version = proposed.and_then(Version::from_value);
                }
                out.facts.push(Fact::ClientInitialize {
                    protocol_version: proposed.cloned(),
                    client_info: info(params, "clientInfo"),
                })
            }
            (Direction::ClientToAgent, "session/new" | "session/fork") => keep_params = true,
            (Direction::ClientToAgent, "session/load" | "session/resume") => {
                if let Some(session_id) = msg.session_id() {
                    let cwd = str_field(params, "cwd");
                    let origin = if method == "session/load" {
                        "load"
                    } else {
                        "resume"
                    };
                    self.note_session(session_id, cwd, origin, &mut out.facts);
                }
            }
            (Direction::ClientToAgent, "session/prompt") => {
                if let Some(session_id) = msg.session_id() {
                    self.open_turns.insert(
                        session_id.to_owned(),
                        OpenTurn {
                            request_seq: seq,
                            started: false,
                        },
                    );
                }
                out.facts.push(Fact::TurnStarted {
                    session_id: msg.session_id().map(str::to_owned),
                })
            }
            (Direction::AgentToClient, "session/request_permission") => {
                keep_params = true;
                let request = PermissionShapes::of(params);
                // Both shapes update the call as the client applies them: v1's `toolCall`, and
                // v2's `tool_call` subject ("exactly like a `tool_call_update`").
                for update in [request.v1_tool_call, request.subject_tool_call]
                    .into_iter()
                    .flatten()
                {
                    if let Some(session_id) = msg.session_id() {
                        self.apply_tool_call(
                            session_id,
                            update,
                            UpdateKind::PermissionRequest,
                            &mut out.facts,
                        );
                    }
                }
                out.facts.push(Fact::PermissionRequested {
                    session_id: msg.session_id().map(str::to_owned),
                    tool_call_id: request.tool_call_id().map(str::to_owned),
                    options: field(params, "options"),
                    title: str_field(params, "title"),
                    description: str_field(params, "description"),
                    subject: params
                        .and_then(|p| p.get("subject"))
                        .filter(|s| !s.is_null())
                        .cloned(),
                });
            }
            _ => {}
        }
        if self.tap
            && !matches!(
                method.as_str(),
                "initialize" | "session/new" | "session/fork"
            )
        {
            return;
        }
        self.pending.insert(
            (direction, id.clone()),
            Pending {
                method: method.clone(),
                seq,
                session_id: msg.session_id().map(str::to_owned),
                params: if keep_params { params.cloned() } else { None },
            },
        );
    }

    /// Returns the session a notification without `sessionId` is about (a `$/cancel_request`'s).
    fn notification(
        &mut self,
        direction: Direction,
        msg: &Message,
        facts: &mut Vec<Fact>,
    ) -> Option<String> {
        let mut session_of_cancelled = None;
        match (direction, msg.method.as_deref()) {
            (Direction::AgentToClient, Some("session/update")) => {
                if let (Some(session_id), Some((update, how))) = (
                    msg.session_id(),
                    msg.params().and_then(toolcall::from_session_update),
                ) {
                    self.apply_tool_call(session_id, update, how, facts);
                }
                if let (Some(session_id), Some(update)) =
                    (msg.session_id(), msg.params().and_then(|p| p.get("update")))
                    && update.get("sessionUpdate").and_then(Value::as_str)
                        == Some("terminal_update")
                {
                    self.note_terminal(session_id, update);
                }
                // v2: foreground work ends with an `idle` state update, which ends the turn. An
                // agent also reports `idle` unasked (after `session/new`, in a resume), and such a
                // line may come just after the next prompt: only an `idle` after the prompt was
                // answered, or after the session reported work, ends the turn.
                let update = msg.params().and_then(|p| p.get("update"));
                let state = update
                    .filter(|u| {
                        u.get("sessionUpdate").and_then(Value::as_str) == Some("state_update")
                    })
                    .and_then(|u| u.get("state"))
                    .and_then(Value::as_str);
                let turn = msg
                    .session_id()
                    .filter(|_| self.version == Some(Version::V2))
                    .and_then(|s| self.open_turns.get_mut(s));
                match (state, turn) {
                    (Some("idle"), Some(turn)) if turn.started => {
                        let request_seq = turn.request_seq;
                        if let Some(session_id) = msg.session_id() {
                            self.open_turns.remove(session_id);
                        }
                        facts.push(Fact::TurnEnded {
                            request_seq,
                            stop_reason: update
                                .and_then(|u| u.get("stopReason"))
                                .map(|r| r.as_str().map_or_else(|| r.to_string(), str::to_owned)),
                            error: None,
                        });
                    }
                    (Some("idle") | None, _) => {}
                    (Some(_), Some(turn)) => turn.started = true,
                    (Some(_), None) => {}
                }
            }
            // A cancelled request's session is the cancellation's (the request went the same
            // way: each side cancels its own requests).
            (_, Some("$/cancel_request")) => {
                let id = msg.params().and_then(|p| p.get("requestId"));
                if let Some(pending) =
                    id.and_then(|id| self.pending.get(&(direction, id.to_string())))
                {
                    session_of_cancelled.clone_from(&pending.session_id);
                }
            }
            (Direction::ClientToAgent, Some("session/cancel")) => {
                facts.push(Fact::CancelRequested {
                    session_id: msg.session_id().map(str::to_owned),
                })
            }
            _ => {}
        }
        session_of_cancelled
    }

    /// A `terminal_update`: an upsert of the terminal's command and cwd.
    fn note_terminal(&mut self, session_id: &str, update: &Value) {
        let Some(id) = update.get("terminalId").and_then(Value::as_str) else {
            return;
        };
        let key = (session_id.to_owned(), id.to_owned());
        if !self.terminals.contains_key(&key) && self.terminals.len() >= MAX_TERMINALS {
            self.terminals_forgotten = true;
            return;
        }
        let terminal = self.terminals.entry(key).or_default();
        for (name, slot) in [
            ("command", &mut terminal.command),
            ("cwd", &mut terminal.cwd),
        ] {
            match update.get(name) {
                None => {}
                Some(Value::Null) => *slot = None,
                Some(value) => *slot = Some(value.clone()),
            }
        }
    }

    fn apply_tool_call(
        &mut self,
        session_id: &str,
        update: &Map<String, Value>,
        how: UpdateKind,
        facts: &mut Vec<Fact>,
    ) {
        let Some(tool_call_id) = update.get("toolCallId").and_then(Value::as_str) else {
            return;
        };
        let Some((state, created, changed)) = self.tool_calls.apply(session_id, update, how) else {
            return;
        };
        if self.tap {
            return;
        }
        // Full values come from the message: the state keeps only what the policy needs.
        let changed = changed
            .into_iter()
            .map(|name| {
                let value = match update.get(name) {
                    Some(Value::Null) => None,
                    Some(value) => Some(value.clone()),
                    // A default set on creation (`kind`, `status`).
                    None => state.get(name).cloned(),
                };
                (name, value)
            })
            .collect();
        facts.push(Fact::ToolCall {
            session_id: session_id.to_owned(),
            tool_call_id: tool_call_id.to_owned(),
            how,
            created,
            changed,
            status: state.text("status"),
        });
    }

    fn response(&mut self, direction: Direction, msg: &Message, out: &mut Observed) {
        let Some(id) = &msg.id else { return };
        let Some(request) = self.pending.remove(&(direction.reverse(), id.clone())) else {
            return;
        };
        out.method = Some(request.method.clone());
        out.reply_to_seq = Some(request.seq);
        out.session_id.clone_from(&request.session_id);
        let result = msg.result();
        let error = msg.error().map(|e| {
            e.get("message")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| e.to_string())
        });
        let params = request.params.as_ref();
        match request.method.as_str() {
            "initialize" if direction == Direction::AgentToClient => {
                self.agent_name = str_field(info(result, "agentInfo").as_ref(), "name");
                if let Some(version) = result
                    .and_then(|r| r.get("protocolVersion"))
                    .and_then(Version::from_value)
                {
                    self.version = Some(version);
                }
                out.facts.push(Fact::AgentInitialize {
                    protocol_version: field(result, "protocolVersion"),
                    agent_info: info(result, "agentInfo"),
                })
            }
            "session/new" | "session/fork" => {
                if let Some(session_id) = result
                    .and_then(|r| r.get("sessionId"))
                    .and_then(Value::as_str)
                {
                    let cwd = str_field(params, "cwd");
                    let origin = if request.method == "session/new" {
                        "new"
                    } else {
                        "fork"
                    };
                    self.note_session(session_id, cwd, origin, &mut out.facts);
                }
            }
            // v2 answers a prompt when the message is accepted (`messageId`); the turn ends with
            // the session's `idle` state update (see `notification`). An error ends it here.
            "session/prompt" if self.version == Some(Version::V2) && error.is_none() => {
                if let Some(turn) = self
                    .open_turns
                    .values_mut()
                    .find(|t| t.request_seq == request.seq)
                {
                    turn.started = true;
                }
            }
            "session/prompt" => {
                let session_id = self
                    .open_turns
                    .iter()
                    .find(|(_, t)| t.request_seq == request.seq)
                    .map(|(session, _)| session.clone());
                if let Some(session_id) = session_id {
                    self.open_turns.remove(&session_id);
                }
                out.facts.push(Fact::TurnEnded {
                    request_seq: request.seq,
                    stop_reason: str_field(result, "stopReason"),
                    error,
                })
            }
            "session/request_permission" if direction == Direction::ClientToAgent => {
                out.session_id = str_field(params, "sessionId");
                let outcome = result.and_then(|r| r.get("outcome"));
                let outcome_name = match (str_field(outcome, "outcome"), &error) {
                    (Some(name), _) => name,
                    (None, Some(_)) => "error".to_owned(),
                    (None, None) => "unknown".to_owned(),
                };
                let option_id = str_field(outcome, "optionId");
                let option_kind = option_id.as_deref().and_then(|chosen| {
                    params?
                        .get("options")?
                        .as_array()?
                        .iter()
                        .find(|o| o.get("optionId").and_then(Value::as_str) == Some(chosen))
                        .and_then(|o| o.get("kind"))
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                });
                let decided_by = if outcome_name == "cancelled" {
                    "cancelled"
                } else {
                    "client"
                };
                out.facts.push(Fact::PermissionDecided {
                    request_seq: request.seq,
                    outcome: outcome_name,
                    option_id,
                    option_kind,
                    decided_by,
                });
            }
            _ => {}
        }
    }
}

/// The two shapes a `session/request_permission` may carry: v1's `toolCall`, and v2's `subject`
/// (`tool_call` with a `toolCall` update, `command` with a command and cwd, or another type).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PermissionShapes<'a> {
    /// v1: `params.toolCall`, when it is an object.
    pub v1_tool_call: Option<&'a Map<String, Value>>,
    /// v2: `params.subject`, when present and not `null`.
    pub subject: Option<&'a Value>,
    /// v2: `params.subject.toolCall` of a `tool_call` subject, when it is an object.
    pub subject_tool_call: Option<&'a Map<String, Value>>,
}

impl<'a> PermissionShapes<'a> {
    pub(crate) fn of(params: Option<&'a Value>) -> Self {
        let object = |v: Option<&'a Value>| match v {
            Some(Value::Object(map)) => Some(map),
            _ => None,
        };
        let subject = params
            .and_then(|p| p.get("subject"))
            .filter(|s| !s.is_null());
        let subject_tool_call = subject
            .filter(|s| s.get("type").and_then(Value::as_str) == Some("tool_call"))
            .and_then(|s| object(s.get("toolCall")));
        PermissionShapes {
            v1_tool_call: object(params.and_then(|p| p.get("toolCall"))),
            subject,
            subject_tool_call,
        }
    }

    /// The subject's `type`, as text (`None`: no subject, or a type that is not a string).
    pub(crate) fn subject_type(&self) -> Option<&'a str> {
        self.subject?.get("type")?.as_str()
    }

    /// The tool call the request is about: the subject's (a `tool_call` subject's update, a
    /// `command` subject's `toolCallId`), else v1's.
    pub(crate) fn tool_call_id(&self) -> Option<&'a str> {
        let id = |m: &'a Map<String, Value>| m.get("toolCallId").and_then(Value::as_str);
        self.subject_tool_call
            .and_then(id)
            .or_else(|| {
                self.subject
                    .filter(|_| self.subject_type() == Some("command"))
                    .and_then(|s| s.get("toolCallId"))
                    .and_then(Value::as_str)
            })
            .or_else(|| self.v1_tool_call.and_then(id))
    }
}

/// A peer's `initialize` info: v1's `clientInfo` / `agentInfo`, v2's `info`.
fn info(object: Option<&Value>, v1_name: &str) -> Option<Value> {
    field(object, v1_name).or_else(|| field(object, "info"))
}

fn field(object: Option<&Value>, name: &str) -> Option<Value> {
    object.and_then(|o| o.get(name)).cloned()
}

fn str_field(object: Option<&Value>, name: &str) -> Option<String> {
    object
        .and_then(|o| o.get(name))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::message::parse_line;
    use serde_json::json;

    fn run(lines: &[(Direction, &str)]) -> Vec<Observed> {
        let mut observer = SessionState::new();
        lines
            .iter()
            .enumerate()
            .map(|(seq, (dir, line))| {
                observer.observe(*dir, seq as i64, &parse_line(line.as_bytes()))
            })
            .collect()
    }

    const C2A: Direction = Direction::ClientToAgent;
    const A2C: Direction = Direction::AgentToClient;

    #[test]
    fn same_id_in_both_directions_is_paired_by_direction() {
        let out = run(&[
            (
                C2A,
                r#"{"id":2,"method":"session/prompt","params":{"sessionId":"s"}}"#,
            ),
            (
                A2C,
                r#"{"id":2,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"t"},"options":[{"optionId":"ok","kind":"allow_once"}]}}"#,
            ),
            (
                C2A,
                r#"{"id":2,"result":{"outcome":{"outcome":"selected","optionId":"ok"}}}"#,
            ),
            (A2C, r#"{"id":2,"result":{"stopReason":"end_turn"}}"#),
        ]);
        assert_eq!(out[2].reply_to_seq, Some(1));
        assert_eq!(out[2].method.as_deref(), Some("session/request_permission"));
        assert!(out[2].facts.contains(&Fact::PermissionDecided {
            request_seq: 1,
            outcome: "selected".into(),
            option_id: Some("ok".into()),
            option_kind: Some("allow_once".into()),
            decided_by: "client",
        }));
        assert_eq!(out[3].reply_to_seq, Some(0));
        assert!(out[3].facts.contains(&Fact::TurnEnded {
            request_seq: 0,
            stop_reason: Some("end_turn".into()),
            error: None
        }));
    }

    #[test]
    fn numeric_and_string_ids_do_not_pair() {
        let out = run(&[
            (C2A, r#"{"id":1,"method":"session/prompt","params":{}}"#),
            (A2C, r#"{"id":"1","result":{}}"#),
        ]);
        assert_eq!(out[1].reply_to_seq, None);
    }

    #[test]
    fn permission_request_creates_the_tool_call_before_any_tool_call_update() {
        let out = run(&[
            (
                A2C,
                r#"{"id":"u","method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"t","kind":"edit","title":"Edit"},"options":[]}}"#,
            ),
            (
                A2C,
                r#"{"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t","status":"in_progress"}}}"#,
            ),
        ]);
        let Fact::ToolCall {
            created, changed, ..
        } = &out[0].facts[1]
        else {
            panic!("{:?}", out[0].facts)
        };
        assert!(created);
        assert!(changed.contains(&("kind", Some(json!("edit")))));
        assert!(changed.contains(&("status", Some(json!("pending")))));
        let Fact::ToolCall {
            created,
            changed,
            status,
            ..
        } = &out[1].facts[0]
        else {
            panic!()
        };
        assert!(!created);
        assert_eq!(changed, &vec![("status", Some(json!("in_progress")))]);
        assert_eq!(status.as_deref(), Some("in_progress"));
    }

    #[test]
    fn cancelled_outcome_is_decided_by_cancellation() {
        let out = run(&[
            (
                A2C,
                r#"{"id":0,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"t"},"options":[]}}"#,
            ),
            (
                C2A,
                r#"{"id":0,"result":{"outcome":{"outcome":"cancelled"}}}"#,
            ),
        ]);
        assert!(
            matches!(&out[1].facts[0], Fact::PermissionDecided { decided_by: "cancelled", outcome, .. } if outcome == "cancelled")
        );
    }

    #[test]
    fn a_v2_turn_ends_with_the_idle_state_update_and_subjects_update_the_call() {
        let out = run(&[
            (
                C2A,
                r#"{"id":0,"method":"initialize","params":{"protocolVersion":2}}"#,
            ),
            (A2C, r#"{"id":0,"result":{"protocolVersion":2}}"#),
            (
                C2A,
                r#"{"id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}"#,
            ),
            (
                A2C,
                r#"{"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle"}}}"#,
            ),
            (A2C, r#"{"id":1,"result":{"messageId":"u1"}}"#),
            (
                A2C,
                r#"{"id":9,"method":"session/request_permission","params":{"sessionId":"s","title":"Edit","subject":{"type":"tool_call","toolCall":{"toolCallId":"t","kind":"edit"}},"options":[]}}"#,
            ),
            (
                A2C,
                r#"{"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}}}"#,
            ),
        ]);
        // The idle sent before the prompt was answered (a stale one) ends nothing.
        assert!(out[3].facts.is_empty(), "{:?}", out[3].facts);
        assert!(out[4].facts.is_empty(), "{:?}", out[4].facts);
        // The subject's tool call is created like a tool_call_update, then the request recorded.
        assert!(
            matches!(&out[5].facts[0], Fact::ToolCall { created: true, tool_call_id, .. } if tool_call_id == "t")
        );
        assert!(matches!(&out[5].facts[1],
            Fact::PermissionRequested { tool_call_id: Some(t), title: Some(title), subject: Some(_), .. }
            if t == "t" && title == "Edit"));
        assert_eq!(
            out[6].facts,
            vec![Fact::TurnEnded {
                request_seq: 2,
                stop_reason: Some("end_turn".into()),
                error: None
            }]
        );
    }

    #[test]
    fn answers_and_cancellations_are_tied_to_their_requests_session() {
        let out = run(&[
            (
                C2A,
                r#"{"id":"p","method":"session/prompt","params":{"sessionId":"s","prompt":[]}}"#,
            ),
            (
                C2A,
                r#"{"method":"$/cancel_request","params":{"requestId":"p"}}"#,
            ),
            (
                A2C,
                r#"{"id":"p","error":{"code":-32800,"message":"cancelled"}}"#,
            ),
        ]);
        assert_eq!(out[1].session_id.as_deref(), Some("s"));
        assert_eq!(out[2].session_id.as_deref(), Some("s"));
    }

    #[test]
    fn session_new_answer_creates_the_session_with_the_requested_cwd() {
        let out = run(&[
            (
                C2A,
                r#"{"id":1,"method":"session/new","params":{"cwd":"/p","mcpServers":[]}}"#,
            ),
            (A2C, r#"{"id":1,"result":{"sessionId":"abc"}}"#),
        ]);
        assert!(out[1].facts.contains(&Fact::Session {
            session_id: "abc".into(),
            cwd: Some("/p".into()),
            origin: "new"
        }));
    }
}
