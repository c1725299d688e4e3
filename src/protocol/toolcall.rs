//! The tool-call state machine: one tool call's current state, and how each update changes it.
//!
//! Pure: `apply(state, update) -> changed fields`, no I/O. The recorder keeps one [`ToolCall`] per
//! (session, toolCallId) and stores the state after every update that changed it.
//!
//! # Rules (ACP tool calls, v1 and the v2 draft; see `shared/spec/`)
//!
//! - A tool call is created by whichever message about its id comes first: `tool_call`,
//!   `tool_call_update`, `tool_call_content_chunk`, or the `toolCall` of a
//!   `session/request_permission`. On creation `kind` defaults to `other` and `status` to
//!   `pending`, as the spec says, unless the message carries them.
//! - Every later message is an upsert of the fields it carries (v1 `tool_call_update`, v2
//!   `tool_call_update`, and a repeated `tool_call`): an omitted field is unchanged, `null`
//!   clears it, any other value replaces it. `content` and `locations` are replaced as whole
//!   arrays.
//! - `tool_call_content_chunk` appends its one `content` item to the current content.
//! - Values are kept as they came: unknown and `_`-prefixed kinds, statuses and content types,
//!   and even a title that is not a string, are stored verbatim.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// The fields that make up a tool call's state, by their wire names.
pub const FIELDS: [&str; 7] = [
    "title",
    "kind",
    "status",
    "content",
    "locations",
    "rawInput",
    "rawOutput",
];

/// How a message speaks about a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateKind {
    /// `session/update` with `sessionUpdate: tool_call`.
    ToolCall,
    /// `session/update` with `sessionUpdate: tool_call_update`.
    ToolCallUpdate,
    /// `session/update` with `sessionUpdate: tool_call_content_chunk` (v2).
    ContentChunk,
    /// The `toolCall` of a `session/request_permission` request.
    PermissionRequest,
}

impl UpdateKind {
    pub fn as_str(self) -> &'static str {
        match self {
            UpdateKind::ToolCall => "tool_call",
            UpdateKind::ToolCallUpdate => "tool_call_update",
            UpdateKind::ContentChunk => "tool_call_content_chunk",
            UpdateKind::PermissionRequest => "request_permission",
        }
    }

    /// The kind for a `sessionUpdate` value, if it is about a tool call.
    pub fn from_session_update(tag: &str) -> Option<UpdateKind> {
        match tag {
            "tool_call" => Some(UpdateKind::ToolCall),
            "tool_call_update" => Some(UpdateKind::ToolCallUpdate),
            "tool_call_content_chunk" => Some(UpdateKind::ContentChunk),
            _ => None,
        }
    }
}

/// One tool call's current state: each field as the wire last set it (`None`: unset or cleared).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolCall {
    pub fields: [Option<Value>; FIELDS.len()],
}

impl ToolCall {
    pub fn get(&self, name: &str) -> Option<&Value> {
        let i = FIELDS.iter().position(|f| *f == name)?;
        self.fields[i].as_ref()
    }

    /// A field as text: strings as they are, anything else as JSON.
    pub fn text(&self, name: &str) -> Option<String> {
        self.get(name).map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    }

    /// Creates a tool call from its first message.
    pub fn create(update: &Map<String, Value>, how: UpdateKind) -> (ToolCall, Vec<&'static str>) {
        let mut call = ToolCall::default();
        let mut changed = call.apply(update, how);
        for (name, default) in [("kind", "other"), ("status", "pending")] {
            if !update.contains_key(name) {
                call.set(name, Some(Value::String(default.to_owned())));
                changed.push(name);
            }
        }
        (call, changed)
    }

    /// Applies one later message. Returns the fields whose value changed, in [`FIELDS`] order
    /// (empty: the message changed nothing).
    pub fn apply(&mut self, update: &Map<String, Value>, how: UpdateKind) -> Vec<&'static str> {
        if how == UpdateKind::ContentChunk {
            let Some(item) = update.get("content") else {
                return Vec::new();
            };
            let i = index_of("content");
            let mut items = match self.fields[i].take() {
                Some(Value::Array(items)) => items,
                None | Some(Value::Null) => Vec::new(),
                // A content that is not an array cannot be appended to: keep it as the first item.
                Some(other) => vec![other],
            };
            items.push(item.clone());
            self.fields[i] = Some(Value::Array(items));
            return vec!["content"];
        }
        let mut changed = Vec::new();
        for (i, name) in FIELDS.iter().enumerate() {
            let Some(incoming) = update.get(*name) else {
                continue;
            };
            let next = (!incoming.is_null()).then(|| incoming.clone());
            if self.fields[i] != next {
                self.fields[i] = next;
                changed.push(*name);
            }
        }
        changed
    }

    /// Applies one message to what is known of a tool call, creating it when nothing is. Returns
    /// whether it was created, and the fields that changed.
    pub fn upsert(
        known: &mut Option<ToolCall>,
        update: &Map<String, Value>,
        how: UpdateKind,
    ) -> (bool, Vec<&'static str>) {
        match known {
            Some(call) => (false, call.apply(update, how)),
            None => {
                let (call, changed) = ToolCall::create(update, how);
                *known = Some(call);
                (true, changed)
            }
        }
    }

    fn set(&mut self, name: &str, value: Option<Value>) {
        self.fields[index_of(name)] = value;
    }
}

/// The tool-call update a `session/update`'s params carry, if they carry one.
pub fn from_session_update(params: &Value) -> Option<(&Map<String, Value>, UpdateKind)> {
    let Some(Value::Object(update)) = params.get("update") else {
        return None;
    };
    let how = update
        .get("sessionUpdate")
        .and_then(Value::as_str)
        .and_then(UpdateKind::from_session_update)?;
    Some((update, how))
}

/// The tool calls of a connection so far, by session and toolCallId.
#[derive(Debug, Default)]
pub struct ToolCalls {
    calls: HashMap<(String, String), Option<ToolCall>>,
}

impl ToolCalls {
    /// The (session, toolCallId) of every tool call known.
    pub fn keys(&self) -> impl Iterator<Item = &(String, String)> {
        self.calls.keys()
    }

    pub fn get(&self, session_id: &str, tool_call_id: &str) -> Option<&ToolCall> {
        self.calls
            .get(&(session_id.to_owned(), tool_call_id.to_owned()))?
            .as_ref()
    }

    /// Applies one message (see [`ToolCall::upsert`]). Returns the tool call after it, whether it
    /// was created, and the fields that changed; `None` if the message names no toolCallId.
    pub fn apply(
        &mut self,
        session_id: &str,
        update: &Map<String, Value>,
        how: UpdateKind,
    ) -> Option<(&ToolCall, bool, Vec<&'static str>)> {
        let tool_call_id = update.get("toolCallId").and_then(Value::as_str)?;
        let slot = self
            .calls
            .entry((session_id.to_owned(), tool_call_id.to_owned()))
            .or_default();
        let (created, changed) = ToolCall::upsert(slot, update, how);
        Some((slot.as_ref()?, created, changed))
    }
}

fn index_of(name: &str) -> usize {
    FIELDS
        .iter()
        .position(|f| *f == name)
        .expect("a known tool call field")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("an object")
    }

    fn created(v: Value) -> ToolCall {
        ToolCall::create(&map(v), UpdateKind::ToolCall).0
    }

    #[test]
    fn creation_applies_spec_defaults_only_when_absent() {
        let call = created(json!({"toolCallId": "c", "title": "Read"}));
        assert_eq!(call.text("kind").as_deref(), Some("other"));
        assert_eq!(call.text("status").as_deref(), Some("pending"));
        let call = created(json!({"toolCallId": "c", "kind": "read", "status": "in_progress"}));
        assert_eq!(call.text("kind").as_deref(), Some("read"));
        assert_eq!(call.text("status").as_deref(), Some("in_progress"));
    }

    #[test]
    fn omitted_field_is_unchanged() {
        let mut call = created(json!({"title": "Read", "kind": "read", "rawInput": {"p": 1}}));
        let changed = call.apply(
            &map(json!({"status": "completed"})),
            UpdateKind::ToolCallUpdate,
        );
        assert_eq!(changed, vec!["status"]);
        assert_eq!(call.text("title").as_deref(), Some("Read"));
        assert_eq!(call.get("rawInput"), Some(&json!({"p": 1})));
    }

    #[test]
    fn null_clears() {
        let mut call = created(json!({"title": "Read", "rawOutput": "x", "content": [1]}));
        let changed = call.apply(
            &map(json!({"rawOutput": null, "content": null})),
            UpdateKind::ToolCallUpdate,
        );
        assert_eq!(changed, vec!["content", "rawOutput"]);
        assert_eq!(call.get("rawOutput"), None);
        assert_eq!(call.get("content"), None);
    }

    #[test]
    fn arrays_are_replaced_whole() {
        let mut call =
            created(json!({"content": [{"a": 1}, {"b": 2}], "locations": [{"path": "/a"}]}));
        call.apply(
            &map(json!({"content": [{"c": 3}], "locations": []})),
            UpdateKind::ToolCallUpdate,
        );
        assert_eq!(call.get("content"), Some(&json!([{"c": 3}])));
        assert_eq!(call.get("locations"), Some(&json!([])));
    }

    #[test]
    fn chunk_is_appended_and_a_later_update_replaces_the_chunks() {
        let mut call = created(json!({"content": [{"type": "content", "n": 1}]}));
        let changed = call.apply(
            &map(json!({"content": {"type": "content", "n": 2}})),
            UpdateKind::ContentChunk,
        );
        assert_eq!(changed, vec!["content"]);
        assert_eq!(
            call.get("content"),
            Some(&json!([{"type": "content", "n": 1}, {"type": "content", "n": 2}]))
        );
        call.apply(
            &map(json!({"content": [{"n": 9}]})),
            UpdateKind::ToolCallUpdate,
        );
        call.apply(
            &map(json!({"content": {"n": 10}})),
            UpdateKind::ContentChunk,
        );
        assert_eq!(call.get("content"), Some(&json!([{"n": 9}, {"n": 10}])));
    }

    #[test]
    fn chunk_before_any_content_starts_the_list() {
        let (call, _) = ToolCall::create(
            &map(json!({"toolCallId": "c", "content": {"type": "_custom", "x": 1}})),
            UpdateKind::ContentChunk,
        );
        assert_eq!(
            call.get("content"),
            Some(&json!([{"type": "_custom", "x": 1}]))
        );
    }

    #[test]
    fn update_before_create_creates_with_defaults() {
        let (call, changed) = ToolCall::create(
            &map(json!({"toolCallId": "c", "status": "completed", "title": "t"})),
            UpdateKind::ToolCallUpdate,
        );
        assert_eq!(call.text("status").as_deref(), Some("completed"));
        assert_eq!(call.text("kind").as_deref(), Some("other"));
        assert!(changed.contains(&"title") && changed.contains(&"kind"));
    }

    #[test]
    fn custom_kind_status_and_content_type_are_kept_verbatim() {
        let mut call = created(json!({"kind": "_deploy", "status": "_queued"}));
        call.apply(
            &map(json!({"content": [{"type": "_hologram", "payload": [1, 2]}]})),
            UpdateKind::ToolCallUpdate,
        );
        assert_eq!(call.text("kind").as_deref(), Some("_deploy"));
        assert_eq!(call.text("status").as_deref(), Some("_queued"));
        assert_eq!(
            call.get("content"),
            Some(&json!([{"type": "_hologram", "payload": [1, 2]}]))
        );
    }

    #[test]
    fn an_update_that_repeats_the_state_changes_nothing() {
        let mut call = created(json!({"title": "t", "kind": "read", "status": "pending"}));
        let changed = call.apply(
            &map(json!({"title": "t", "status": "pending"})),
            UpdateKind::ToolCallUpdate,
        );
        assert!(changed.is_empty());
    }
}
