//! The messages of a conversation, assembled from its `session/update` notifications the way a
//! client shows them. The one place that knows how message updates combine; every view (show,
//! report, UI, MCP, transcript, OTLP, compare) builds its text from here.
//!
//! # Rules (v1, and the v2 draft's `messageId`)
//!
//! - `*_chunk` updates (`user_message_chunk`, `agent_message_chunk`, `agent_thought_chunk`) append
//!   their one content block. With a `messageId` (v2, and v1 peers that send one) the block goes
//!   to that message, created on first sight; chunks of different messages may interleave.
//!   Without one (v1), it goes to the session's last message of the same role when nothing else
//!   happened in the session since, else it starts a new message.
//! - `user_message`, `agent_message` and `agent_thought` (v2) create or update the message with
//!   their `messageId`: an omitted `content` leaves it unchanged, `null` clears it, an array
//!   replaces it whole. So a turn's text is the final text of each message, never the
//!   concatenation of its upserts.
//! - Messages are keyed by (session, role, messageId) and kept in the order they were created.
//! - The history a `session/resume` or `session/load` replays (until its answer) of a session
//!   whose messages are already held is those messages again: it changes nothing. A session
//!   first seen in its replay keeps the history as its messages.
//!
//! Pure and sans-IO.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

/// Whose words a message holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Role {
    User,
    Agent,
    /// The agent's thoughts (reasoning).
    Thought,
}

/// How a `sessionUpdate` speaks about a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// Appends one content block.
    Chunk,
    /// Creates or patches the whole message (v2).
    Upsert,
}

fn shape_of(tag: &str) -> Option<(Role, Shape)> {
    Some(match tag {
        "user_message_chunk" => (Role::User, Shape::Chunk),
        "agent_message_chunk" => (Role::Agent, Shape::Chunk),
        "agent_thought_chunk" => (Role::Thought, Shape::Chunk),
        "user_message" => (Role::User, Shape::Upsert),
        "agent_message" => (Role::Agent, Shape::Upsert),
        "agent_thought" => (Role::Thought, Shape::Upsert),
        _ => return None,
    })
}

/// One message as it stands.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ChatMessage {
    pub session_id: String,
    pub role: Role,
    /// The `messageId`, when the peer sent one.
    pub message_id: Option<String>,
    /// Its content blocks, as the wire gave them.
    pub content: Vec<Value>,
    /// The sequence numbers of the update that created it and of the last one that changed it.
    pub first_seq: i64,
    pub last_seq: i64,
    /// How many updates made it (chunks and upserts).
    pub updates: usize,
}

impl ChatMessage {
    /// The text of its text blocks, joined; other blocks as `[type]`.
    pub(crate) fn text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            match block.get("type").and_then(Value::as_str) {
                Some("text") | None => {
                    if let Some(text) = block.get("text").and_then(Value::as_str) {
                        out.push_str(text);
                    }
                }
                Some(other) => {
                    out.push('[');
                    out.push_str(other);
                    out.push(']');
                }
            }
        }
        out
    }
}

/// The messages of one or more sessions, as their updates arrive.
#[derive(Debug, Default)]
pub(crate) struct Conversation {
    messages: Vec<ChatMessage>,
    by_id: HashMap<(String, Role, String), usize>,
    /// Per session: the message a v1 chunk (no `messageId`) may still append to.
    open: HashMap<String, usize>,
    /// Sessions with messages held whose history a `session/resume` or `session/load` is
    /// replaying.
    replaying: HashSet<String>,
}

impl Conversation {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Applies one `session/update`'s params (`sessionId` and `update`), numbered `seq`.
    /// Returns the index (in [`Conversation::messages`]) of the message it created or changed;
    /// `None` when it is not about a message (any such update in a session ends its open v1 run
    /// of chunks).
    pub(crate) fn apply(&mut self, seq: i64, params: &Value) -> Option<usize> {
        let session_id = params.get("sessionId").and_then(Value::as_str)?;
        let update = params.get("update")?;
        let tag = update.get("sessionUpdate").and_then(Value::as_str);
        let Some((role, shape)) = tag.and_then(shape_of) else {
            self.interrupt(session_id);
            return None;
        };
        // History a resume or load replays of a session whose messages are already held is
        // those messages again, not more of them (chunks would be appended twice). A session
        // first seen in its replay has only the history: that is kept.
        if self.replaying.contains(session_id) {
            return None;
        }
        let message_id = update
            .get("messageId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let index = match &message_id {
            Some(id) => {
                let key = (session_id.to_owned(), role, id.clone());
                match self.by_id.get(&key) {
                    Some(&i) => i,
                    None => {
                        let i = self.create(session_id, role, message_id.clone(), seq);
                        self.by_id.insert(key, i);
                        i
                    }
                }
            }
            None => match self.open.get(session_id) {
                Some(&i)
                    if shape == Shape::Chunk
                        && self.messages[i].role == role
                        && self.messages[i].message_id.is_none() =>
                {
                    i
                }
                _ => self.create(session_id, role, None, seq),
            },
        };
        let message = &mut self.messages[index];
        message.last_seq = seq;
        message.updates += 1;
        match shape {
            Shape::Chunk => {
                if let Some(block) = update.get("content") {
                    message.content.push(block.clone());
                }
            }
            Shape::Upsert => match update.get("content") {
                None => {}
                Some(Value::Array(blocks)) => message.content = blocks.clone(),
                Some(Value::Null) => message.content.clear(),
                // Not what the schema allows: kept as one block, so nothing is lost.
                Some(other) => message.content = vec![other.clone()],
            },
        }
        if message_id.is_none() {
            self.open.insert(session_id.to_owned(), index);
        } else {
            self.open.remove(session_id);
        }
        Some(index)
    }

    /// Feeds one recorded request or notification (its method and params), as a view reads a
    /// session's lines: a `session/update` is [applied](Conversation::apply); any other line of
    /// a session (a permission request, a prompt, a cancel) is something else happening in it
    /// and [interrupts](Conversation::interrupt) its open v1 run of chunks.
    pub(crate) fn observe(
        &mut self,
        seq: i64,
        method: Option<&str>,
        params: Option<&Value>,
    ) -> Option<usize> {
        let Some(params) = params else {
            if matches!(method, Some("session/resume" | "session/load")) {
                self.replay_answered();
            }
            return None;
        };
        if method == Some("session/update") {
            return self.apply(seq, params);
        }
        if let Some(session_id) = params.get("sessionId").and_then(Value::as_str) {
            self.interrupt(session_id);
            // Only a session whose messages are held: one first seen in its replay keeps it.
            if matches!(method, Some("session/resume" | "session/load"))
                && self.messages.iter().any(|m| m.session_id == session_id)
            {
                self.replaying.insert(session_id.to_owned());
            }
        }
        None
    }

    /// The answer to a `session/resume` or `session/load`: the history it replayed is over (for
    /// every session replaying: an answer names none).
    pub(crate) fn replay_answered(&mut self) {
        self.replaying.clear();
    }

    /// Something else happened in a session (a tool call, the end of a turn): its next v1 chunk
    /// starts a new message.
    pub(crate) fn interrupt(&mut self, session_id: &str) {
        self.open.remove(session_id);
    }

    fn create(
        &mut self,
        session_id: &str,
        role: Role,
        message_id: Option<String>,
        seq: i64,
    ) -> usize {
        self.messages.push(ChatMessage {
            session_id: session_id.to_owned(),
            role,
            message_id,
            content: Vec::new(),
            first_seq: seq,
            last_seq: seq,
            updates: 0,
        });
        self.messages.len() - 1
    }

    /// Every message, in the order they were created.
    pub(crate) fn messages(&self) -> &[ChatMessage] {
        &self.messages
    }

    pub(crate) fn into_messages(self) -> Vec<ChatMessage> {
        self.messages
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn update(update: Value) -> Value {
        json!({"sessionId": "s", "update": update})
    }

    fn text(t: &str) -> Value {
        json!({"type": "text", "text": t})
    }

    #[test]
    fn v1_chunks_join_until_something_else_happens() {
        let mut c = Conversation::new();
        c.apply(
            0,
            &update(json!({"sessionUpdate": "agent_message_chunk", "content": text("Hel")})),
        );
        c.apply(
            1,
            &update(json!({"sessionUpdate": "agent_message_chunk", "content": text("lo")})),
        );
        c.apply(
            2,
            &update(json!({"sessionUpdate": "tool_call", "toolCallId": "t"})),
        );
        c.apply(
            3,
            &update(json!({"sessionUpdate": "agent_message_chunk", "content": text("Done")})),
        );
        let texts: Vec<_> = c.messages().iter().map(ChatMessage::text).collect();
        assert_eq!(texts, ["Hello", "Done"]);
        assert_eq!(
            (c.messages()[0].first_seq, c.messages()[0].last_seq),
            (0, 1)
        );
    }

    #[test]
    fn a_resumed_sessions_history_is_not_appended_to_what_is_held() {
        let mut c = Conversation::new();
        let chunk = |t: &str| {
            update(
                json!({"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": text(t)}),
            )
        };
        c.observe(0, Some("session/update"), Some(&chunk("Plan.")));
        c.observe(
            1,
            Some("session/resume"),
            Some(&json!({"sessionId": "s", "cwd": "/p"})),
        );
        c.observe(2, Some("session/update"), Some(&chunk("Plan.")));
        c.observe(3, Some("session/resume"), None);
        c.observe(4, Some("session/update"), Some(&chunk(" More.")));
        let texts: Vec<_> = c.messages().iter().map(ChatMessage::text).collect();
        assert_eq!(texts, ["Plan. More."]);
        // A session first seen in its resume: the history is all there is.
        let mut c = Conversation::new();
        c.observe(
            1,
            Some("session/resume"),
            Some(&json!({"sessionId": "s", "cwd": "/p"})),
        );
        c.observe(2, Some("session/update"), Some(&chunk("Plan.")));
        assert_eq!(c.messages()[0].text(), "Plan.");
    }

    #[test]
    fn v2_upserts_replace_and_chunks_interleave_by_message_id() {
        let mut c = Conversation::new();
        let chunk = |id: &str, t: &str| {
            update(
                json!({"sessionUpdate": "agent_message_chunk", "messageId": id, "content": text(t)}),
            )
        };
        c.apply(0, &chunk("a", "one "));
        c.apply(1, &chunk("b", "other"));
        c.apply(2, &chunk("a", "two"));
        assert_eq!(c.messages()[0].text(), "one two");
        // A whole-message upsert replaces, an omitted content keeps, null clears.
        c.apply(
            3,
            &update(json!({"sessionUpdate": "agent_message", "messageId": "a", "content": [text("final")]})),
        );
        c.apply(
            4,
            &update(json!({"sessionUpdate": "agent_message", "messageId": "a"})),
        );
        assert_eq!(c.messages()[0].text(), "final");
        c.apply(
            5,
            &update(json!({"sessionUpdate": "agent_message", "messageId": "b", "content": null})),
        );
        assert_eq!(c.messages()[1].text(), "");
        assert_eq!(c.messages().len(), 2);
        // The same id in another role is another message.
        c.apply(
            6,
            &update(json!({"sessionUpdate": "agent_thought", "messageId": "a", "content": [text("hmm")]})),
        );
        assert_eq!(c.messages().len(), 3);
        assert_eq!(c.messages()[2].role, Role::Thought);
        assert_eq!(c.messages()[0].updates, 4);
    }

    #[test]
    fn observe_applies_updates_and_other_lines_of_the_session_interrupt() {
        let mut c = Conversation::new();
        let chunk =
            |t: &str| update(json!({"sessionUpdate": "agent_message_chunk", "content": text(t)}));
        c.observe(0, Some("session/update"), Some(&chunk("a")));
        c.observe(
            1,
            Some("session/request_permission"),
            Some(&json!({"sessionId": "s"})),
        );
        c.observe(2, Some("session/update"), Some(&chunk("b")));
        // A line of another session, or one without params, changes nothing here.
        c.observe(
            3,
            Some("session/cancel"),
            Some(&json!({"sessionId": "other"})),
        );
        c.observe(4, Some("$/cancel_request"), None);
        c.observe(5, Some("session/update"), Some(&chunk("c")));
        let texts: Vec<_> = c.messages().iter().map(ChatMessage::text).collect();
        assert_eq!(texts, ["a", "bc"]);
    }
}
