//! The policy on the data path: the taps that let `acptap run --policy` answer the agent's
//! `session/request_permission` itself.
//!
//! [`PolicyTap`] looks at each line the agent writes. Lines that cannot matter are recognised by
//! a substring search and forwarded without being parsed; the few that can (tool-call updates,
//! permission requests, the `initialize` and `session/new` answers) are parsed on the side. A
//! permission request the policy allows or denies is withheld from the client and answered on the
//! agent's stdin (the priority lane of `sink.rs`); anything else is forwarded as it came, so the
//! client still sees every `session/update` and keeps a truthful UI.
//!
//! [`ClientTap`] looks at the client's lines for the cwd of each session, which the policy needs
//! to place relative paths and `${cwd}`. Both feed one [`SharedState`]: the recorder's state
//! machine (`protocol::SessionState`) in its tap mode, so the tap and the recorder follow the
//! same rules.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use memchr::memmem;
use serde_json::Value;

use super::pump::{Disposition, LineTap};
use crate::policy::{Context, Decision, DecisionInput, Policy};
use crate::protocol::message::parse_line_noting_duplicates;
use crate::protocol::{Direction, Message, MessageKind, SessionState, parse_line};
use crate::record::{Annotation, PolicyNote};

/// The connection's state as the taps follow it: the same state machine as the recorder's
/// (`protocol::SessionState`), in its tap mode. Both taps feed it: the client's `session/new` and
/// `session/load` (cwds), the agent's lines that can matter.
#[derive(Debug)]
pub(crate) struct SharedState(Mutex<SessionState>);

impl Default for SharedState {
    fn default() -> Self {
        SharedState(Mutex::new(SessionState::for_tap()))
    }
}

impl SharedState {
    fn lock(&self) -> MutexGuard<'_, SessionState> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn contains(line: &[u8], needle: &[u8]) -> bool {
    memmem::find(line, needle).is_some()
}

/// Watches the client's lines for session cwds. Never withholds anything.
pub(crate) struct ClientTap {
    pub state: Arc<SharedState>,
}

impl LineTap for ClientTap {
    fn inspect(&mut self, line: &Bytes) -> Disposition {
        // `initialize` too: its answer (the agent's name) is matched to it.
        if contains(line, b"session/new")
            || contains(line, b"session/load")
            || contains(line, b"session/resume")
            || contains(line, b"session/fork")
            || contains(line, b"initialize")
            || contains(line, b"\\u")
        {
            let msg = parse_line(line);
            self.state.lock().observe(Direction::ClientToAgent, 0, &msg);
        }
        Disposition::Forward(Annotation::default())
    }
}

/// Decides the agent's permission requests by the policy.
pub(crate) struct PolicyTap {
    policy: Policy,
    shadow: bool,
    state: Arc<SharedState>,
    /// Tool calls a line acptap could not read may have changed: what the client shows of them
    /// is unknown here, so their permission requests go to the user.
    unreadable: HashSet<(String, String)>,
}

impl PolicyTap {
    pub(crate) fn new(policy: Policy, shadow: bool, state: Arc<SharedState>) -> PolicyTap {
        PolicyTap {
            policy,
            shadow,
            state,
            unreadable: HashSet::new(),
        }
    }
}

impl LineTap for PolicyTap {
    fn inspect(&mut self, line: &Bytes) -> Disposition {
        // A key may be written with escapes (`"toolCall\u0049d"`): such a line is read too.
        // A v2 `command` subject names no toolCallId; `protocolVersion`: the negotiated version.
        let relevant = contains(line, b"toolCallId")
            || contains(line, b"terminalId")
            || contains(line, b"\\u")
            || contains(line, b"agentInfo")
            || contains(line, b"protocolVersion")
            || contains(line, b"session/request_permission")
            || (contains(line, b"sessionId") && self.state.lock().waiting_for_new_session());
        if !relevant {
            return Disposition::Forward(Annotation::default());
        }
        // A key named twice: peers read such a line differently (most keep the last value, typed
        // Rust structs refuse it), so what the client shows is unknown here. Noted in the one
        // parse of the line.
        let (msg, ambiguous) = parse_line_noting_duplicates(line);
        if msg.value.is_none() && msg.kind != MessageKind::Batch && !line.trim_ascii().is_empty() {
            self.cannot_read(line);
        } else if msg.kind == MessageKind::Request
            && msg.method.as_deref() == Some("session/request_permission")
        {
            return self.decide(&msg, ambiguous);
        } else {
            // Batches included: the state reads each of their messages.
            self.observe(&msg);
            if ambiguous {
                self.cannot_read(line);
            }
        }
        Disposition::Forward(Annotation::default())
    }
}

impl PolicyTap {
    fn observe(&self, msg: &Message) {
        self.state.lock().observe(Direction::AgentToClient, 0, msg);
    }

    /// A line that could not be read may have updated any tool call it names, and with escapes
    /// it can name one without its bytes showing: fail closed for those calls.
    fn cannot_read(&mut self, line: &[u8]) {
        let escapes = line.contains(&b'\\');
        let state = self.state.lock();
        for key in state.tool_call_keys() {
            if escapes || contains(line, key.1.as_bytes()) {
                self.unreadable.insert(key.clone());
            }
        }
    }

    fn decide(&mut self, msg: &Message, ambiguous: bool) -> Disposition {
        let (Some(id), Some(params)) = (msg.id.as_deref(), msg.params()) else {
            return Disposition::Forward(Annotation::default());
        };
        let session = msg.session_id().unwrap_or_default().to_owned();
        let tool_call_id = msg.tool_call_id().unwrap_or_default().to_owned();
        let key = (session, tool_call_id);
        let input = {
            let state = self.state.lock();
            let unknown = if self.unreadable.contains(&key) {
                Some("was changed by a line acptap could not read")
            } else if state.forgotten(&key.0, &key.1) {
                Some("is older than the tool calls acptap holds in memory")
            } else {
                None
            };
            let mut input = DecisionInput::new(
                params,
                state.tool_call(&key.0, &key.1),
                Context {
                    cwd: state.cwd(&key.0).map(Path::new),
                    agent: state.agent_name(),
                    version: state.version(),
                },
                unknown.map(|why| {
                    (
                        "guard:unknown-tool-call".to_owned(),
                        format!(
                            "tool call `{}` {why}, so what the client shows of it is unknown here",
                            key.1
                        ),
                    )
                }),
            );
            let terminal = params
                .get("subject")
                .and_then(|s| s.get("terminalId"))
                .and_then(Value::as_str)
                .and_then(|id| state.terminal(&key.0, id))
                .map(|t| (t.command.as_ref(), t.cwd.as_ref()));
            input.check_terminal(params, terminal, state.terminals_forgotten());
            if ambiguous {
                input
                    .left_to_user
                    .get_or_insert((None, crate::policy::DUPLICATE_KEYS.into()));
            }
            input
        };
        let verdict = self.policy.decide_input(&input, params.get("options"));
        self.observe(msg);
        let note = Arc::new(PolicyNote {
            decision: verdict.decision.as_str(),
            rule: verdict.rule,
            reason: verdict.reason,
            option_id: verdict.option_id.clone(),
            policy_hash: self.policy.hash().to_owned(),
            shadow: self.shadow,
            input: serde_json::to_string(&input).unwrap_or_default(),
        });
        let option = verdict.option_id;
        match option {
            Some(option) if !self.shadow && verdict.decision != Decision::Ask => {
                Disposition::Answer {
                    request: Annotation {
                        withheld: true,
                        policy: Some(note.clone()),
                        ..Annotation::default()
                    },
                    reply: answer(id, &option),
                    reply_annotation: Annotation {
                        written_by_acptap: true,
                        policy: Some(note),
                        ..Annotation::default()
                    },
                }
            }
            _ => Disposition::Forward(Annotation {
                policy: Some(note),
                ..Annotation::default()
            }),
        }
    }
}

/// The answer to a permission request: `id` is the request's id as JSON text, so a string id
/// stays a string and a number a number.
fn answer(id: &str, option_id: &str) -> Bytes {
    let option = Value::String(option_id.to_owned());
    Bytes::from(format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"outcome\":{{\"outcome\":\"selected\",\"optionId\":{option}}}}}}}\n"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_keep_the_id_type() {
        let a: Value = serde_json::from_slice(&answer("\"77c2-ab\"", "approved")).unwrap();
        assert_eq!(a["id"], "77c2-ab");
        assert_eq!(a["result"]["outcome"]["optionId"], "approved");
        let b: Value = serde_json::from_slice(&answer("7", "allow\"x")).unwrap();
        assert_eq!(b["id"], 7);
        assert_eq!(b["result"]["outcome"]["optionId"], "allow\"x");
    }
}
