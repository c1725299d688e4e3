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
//! to place relative paths and `${cwd}`.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use memchr::memmem;
use serde_json::Value;

use super::pump::{Disposition, LineTap};
use crate::policy::{Context, Decision, DecisionInput, Policy};
use crate::protocol::toolcall::{self, ToolCalls, UpdateKind};
use crate::protocol::{Message, MessageKind, parse_line};
use crate::record::{Annotation, PolicyNote};

/// Each session's cwd, learned from the client's `session/new` (completed by the agent's answer)
/// and `session/load`. Shared by the two taps.
#[derive(Debug, Default)]
pub struct SessionDirectory {
    inner: Mutex<Directory>,
}

#[derive(Debug, Default)]
struct Directory {
    /// `session/new` requests waiting for their answer: JSON-RPC id -> cwd.
    pending_new: HashMap<String, PathBuf>,
    cwd: HashMap<String, PathBuf>,
}

impl SessionDirectory {
    fn lock(&self) -> std::sync::MutexGuard<'_, Directory> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn waiting_for_new_session(&self) -> bool {
        !self.lock().pending_new.is_empty()
    }
}

fn contains(line: &[u8], needle: &[u8]) -> bool {
    memmem::find(line, needle).is_some()
}

/// Watches the client's lines for session cwds. Never withholds anything.
pub struct ClientTap {
    pub sessions: Arc<SessionDirectory>,
}

impl LineTap for ClientTap {
    fn inspect(&mut self, line: &Bytes) -> Disposition {
        if contains(line, b"session/new") || contains(line, b"session/load") {
            let msg = parse_line(line);
            let cwd = msg
                .params()
                .and_then(|p| p.get("cwd"))
                .and_then(Value::as_str)
                .map(PathBuf::from);
            if let (MessageKind::Request, Some(cwd)) = (msg.kind, cwd) {
                let mut directory = self.sessions.lock();
                match (msg.method.as_deref(), msg.session_id(), &msg.id) {
                    (Some("session/load"), Some(session), _) => {
                        directory.cwd.insert(session.to_owned(), cwd);
                    }
                    (Some("session/new"), _, Some(id)) => {
                        directory.pending_new.insert(id.clone(), cwd);
                    }
                    _ => {}
                }
            }
        }
        Disposition::Forward(Annotation::default())
    }
}

/// Decides the agent's permission requests by the policy.
pub struct PolicyTap {
    policy: Policy,
    shadow: bool,
    sessions: Arc<SessionDirectory>,
    /// Every tool call's state so far, per (session, toolCallId): requests are often partial.
    tool_calls: ToolCalls,
    /// `agentInfo.name` from the answer to `initialize`.
    agent: Option<String>,
    /// Tool calls a line acptap could not read may have changed: what the client shows of them
    /// is unknown here, so their permission requests go to the user.
    unreadable: HashSet<(String, String)>,
}

impl PolicyTap {
    pub fn new(policy: Policy, shadow: bool, sessions: Arc<SessionDirectory>) -> PolicyTap {
        PolicyTap {
            policy,
            shadow,
            sessions,
            tool_calls: ToolCalls::default(),
            agent: None,
            unreadable: HashSet::new(),
        }
    }
}

impl LineTap for PolicyTap {
    fn inspect(&mut self, line: &Bytes) -> Disposition {
        // A key may be written with escapes (`"toolCall\u0049d"`): such a line is read too.
        let relevant = contains(line, b"toolCallId")
            || contains(line, b"\\u")
            || contains(line, b"agentInfo")
            || (contains(line, b"sessionId") && self.sessions.waiting_for_new_session());
        if !relevant {
            return Disposition::Forward(Annotation::default());
        }
        let msg = parse_line(line);
        match msg.batch() {
            Some(messages) => {
                // A batch is forwarded whole; what it says about tool calls still counts.
                for message in &messages {
                    self.observe(message);
                }
            }
            None if msg.value.is_none() && !line.trim_ascii().is_empty() => {
                self.cannot_read(line);
            }
            None => {
                if msg.kind == MessageKind::Request
                    && msg.method.as_deref() == Some("session/request_permission")
                {
                    return self.decide(&msg);
                }
                self.observe(&msg);
            }
        }
        Disposition::Forward(Annotation::default())
    }
}

impl PolicyTap {
    /// Follows what a readable line says: the agent's name, a new session's id, tool calls.
    fn observe(&mut self, msg: &Message) {
        match (msg.kind, msg.method.as_deref()) {
            (MessageKind::Response, _) => {
                let result = msg.result();
                if let Some(name) = result
                    .and_then(|r| r.get("agentInfo"))
                    .and_then(|i| i.get("name"))
                    .and_then(Value::as_str)
                {
                    self.agent = Some(name.to_owned());
                }
                if let (Some(id), Some(session)) = (&msg.id, msg.session_id()) {
                    let mut directory = self.sessions.lock();
                    if let Some(cwd) = directory.pending_new.remove(id) {
                        directory.cwd.insert(session.to_owned(), cwd);
                    }
                }
            }
            (MessageKind::Notification, Some("session/update")) => {
                if let (Some(session), Some((update, how))) = (
                    msg.session_id(),
                    msg.params().and_then(toolcall::from_session_update),
                ) {
                    self.tool_calls.apply(session, update, how);
                }
            }
            (MessageKind::Request, Some("session/request_permission")) => {
                if let (Some(session), Some(Value::Object(update))) = (
                    msg.session_id(),
                    msg.params().and_then(|p| p.get("toolCall")),
                ) {
                    self.tool_calls
                        .apply(session, update, UpdateKind::PermissionRequest);
                }
            }
            _ => {}
        }
    }

    /// A line that could not be read may have updated any tool call it names, and with escapes
    /// it can name one without its bytes showing: fail closed for those calls.
    fn cannot_read(&mut self, line: &[u8]) {
        let escapes = line.contains(&b'\\');
        for key in self.tool_calls.keys() {
            if escapes || contains(line, key.1.as_bytes()) {
                self.unreadable.insert(key.clone());
            }
        }
    }

    fn decide(&mut self, msg: &Message) -> Disposition {
        let (Some(id), Some(params)) = (msg.id.as_deref(), msg.params()) else {
            return Disposition::Forward(Annotation::default());
        };
        let session = msg.session_id().unwrap_or_default().to_owned();
        let tool_call_id = msg.tool_call_id().unwrap_or_default().to_owned();
        let key = (session, tool_call_id);
        let unknown = if self.unreadable.contains(&key) {
            Some("was changed by a line acptap could not read")
        } else if self.tool_calls.forgotten(&key.0, &key.1) {
            Some("is older than the tool calls acptap holds in memory")
        } else {
            None
        };
        let cwd = self.sessions.lock().cwd.get(&key.0).cloned();
        let input = DecisionInput::new(
            params,
            self.tool_calls.get(&key.0, &key.1),
            Context {
                cwd: cwd.as_deref(),
                agent: self.agent.as_deref(),
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
