//! The tool-call state machine: one tool call's current state, and how each update changes it.
//!
//! Pure: `apply(state, update) -> changed fields`, no I/O. The recorder and the policy tap each
//! keep one [`ToolCall`] per (session, toolCallId); the recorder stores the fields each update
//! changed (their full values, taken from the message) and the store applies them to its row.
//!
//! # Memory
//!
//! The state holds what the policy needs, not what the database holds: long strings in
//! `content` and `rawOutput` are cut to [`KEPT_TEXT`] bytes and long content lists to
//! [`KEPT_ITEMS`] items (a cut list ends with a diff item without a path, so no path rule can
//! allow it), and a digest of each field's full value tells a change from a repeat. When a call
//! reaches `completed` or `failed`, its `rawInput` is cut the same way and it is marked
//! [`ToolCall::finished`]: a permission request for it is left to the user.
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
use std::hash::{Hash, Hasher};

use serde_json::{Map, Value};

/// The fields that make up a tool call's state, by their wire names.
pub(crate) const FIELDS: [&str; 7] = [
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
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            UpdateKind::ToolCall => "tool_call",
            UpdateKind::ToolCallUpdate => "tool_call_update",
            UpdateKind::ContentChunk => "tool_call_content_chunk",
            UpdateKind::PermissionRequest => "request_permission",
        }
    }

    /// The kind for a `sessionUpdate` value, if it is about a tool call.
    pub(crate) fn from_session_update(tag: &str) -> Option<UpdateKind> {
        match tag {
            "tool_call" => Some(UpdateKind::ToolCall),
            "tool_call_update" => Some(UpdateKind::ToolCallUpdate),
            "tool_call_content_chunk" => Some(UpdateKind::ContentChunk),
            _ => None,
        }
    }
}

/// Longest string kept in a compacted field (bytes; cut at a character boundary).
pub(crate) const KEPT_TEXT: usize = 1024;

/// Most content items kept.
pub(crate) const KEPT_ITEMS: usize = 256;

/// One tool call's current state: each field as the wire last set it (`None`: unset or cleared),
/// the heavy ones compacted (see the module docs).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolCall {
    pub fields: [Option<Value>; FIELDS.len()],
    /// A digest of each field's full value (`None`: unset or cleared).
    digests: [Option<u64>; FIELDS.len()],
    /// Completed or failed: its rawInput was compacted too.
    pub finished: bool,
    /// A message gave a field a value of a type the schema refuses (`content: "x"`, `kind: 5`).
    /// Clients read such a value differently (typed ones built on the schema crate as "unchanged",
    /// others as the new value), so what a client shows of this call is unknown. Sticky: the
    /// field and why.
    pub ambiguous: Option<String>,
    /// A `null` cleared `content` or `locations` (v2 clears; the v1 crate reads `null` as
    /// "unchanged"): under v1 what a client shows of this call is unknown.
    pub cleared_by_null: bool,
}

/// The type the schema gives each field (`None`: any JSON value).
fn well_typed(name: &str, value: &Value) -> bool {
    match name {
        "title" | "kind" | "status" => value.is_string() || value.is_null(),
        "content" | "locations" => value.is_array() || value.is_null(),
        _ => true,
    }
}

impl ToolCall {
    pub(crate) fn get(&self, name: &str) -> Option<&Value> {
        let i = FIELDS.iter().position(|f| *f == name)?;
        self.fields[i].as_ref()
    }

    /// The state as a JSON object of its set fields.
    pub(crate) fn to_object(&self) -> Map<String, Value> {
        FIELDS
            .iter()
            .zip(&self.fields)
            .filter_map(|(name, value)| Some(((*name).to_owned(), value.clone()?)))
            .collect()
    }

    /// A field as text: strings as they are, anything else as JSON.
    pub(crate) fn text(&self, name: &str) -> Option<String> {
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
    pub(crate) fn apply(
        &mut self,
        update: &Map<String, Value>,
        how: UpdateKind,
    ) -> Vec<&'static str> {
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
            items.push(compact(item));
            self.fields[i] = Some(Value::Array(limit_items(items)));
            let mut hasher = std::hash::DefaultHasher::new();
            (self.digests[i], digest(item)).hash(&mut hasher);
            self.digests[i] = Some(hasher.finish());
            return vec!["content"];
        }
        let mut changed = Vec::new();
        for (i, name) in FIELDS.iter().enumerate() {
            let Some(incoming) = update.get(*name) else {
                continue;
            };
            if !well_typed(name, incoming) && self.ambiguous.is_none() {
                self.ambiguous = Some(format!(
                    "`{name}` was given {incoming}, which clients read differently"
                ));
            }
            if incoming.is_null() && matches!(*name, "content" | "locations") {
                self.cleared_by_null = true;
            }
            let next = (!incoming.is_null()).then(|| digest(incoming));
            if self.digests[i] != next || (next.is_some() && self.fields[i].is_none()) {
                self.digests[i] = next;
                self.fields[i] = (!incoming.is_null()).then(|| match *name {
                    "content" => match compact(incoming) {
                        Value::Array(items) => Value::Array(limit_items(items)),
                        other => other,
                    },
                    "rawOutput" => compact(incoming),
                    "rawInput" if self.finished => compact(incoming),
                    _ => incoming.clone(),
                });
                changed.push(*name);
            }
        }
        if !self.finished && matches!(self.text("status").as_deref(), Some("completed" | "failed"))
        {
            self.finished = true;
            let i = index_of("rawInput");
            self.fields[i] = self.fields[i].as_ref().map(compact);
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
        let i = index_of(name);
        self.digests[i] = value.as_ref().map(digest);
        self.fields[i] = value;
    }
}

/// A digest of a value's full content (strings, numbers, structure and keys).
fn digest(value: &Value) -> u64 {
    fn feed(value: &Value, hasher: &mut std::hash::DefaultHasher) {
        match value {
            Value::Null => 0u8.hash(hasher),
            Value::Bool(b) => (1u8, b).hash(hasher),
            Value::Number(n) => (2u8, n.to_string()).hash(hasher),
            Value::String(s) => (3u8, s).hash(hasher),
            Value::Array(items) => {
                (4u8, items.len()).hash(hasher);
                items.iter().for_each(|v| feed(v, hasher));
            }
            Value::Object(map) => {
                (5u8, map.len()).hash(hasher);
                for (k, v) in map {
                    k.hash(hasher);
                    feed(v, hasher);
                }
            }
        }
    }
    let mut hasher = std::hash::DefaultHasher::new();
    feed(value, &mut hasher);
    hasher.finish()
}

/// `value` with every string longer than [`KEPT_TEXT`] cut (paths are kept whole).
fn compact(value: &Value) -> Value {
    match value {
        Value::String(s) if s.len() > KEPT_TEXT => {
            let mut end = KEPT_TEXT;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            Value::String(format!("{}…", &s[..end]))
        }
        Value::Array(items) => Value::Array(items.iter().map(compact).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let kept = if k == "path" { v.clone() } else { compact(v) };
                    (k.clone(), kept)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// At most [`KEPT_ITEMS`] content items; a cut list ends with a diff without a path, which no
/// path rule allows.
fn limit_items(mut items: Vec<Value>) -> Vec<Value> {
    if items.len() > KEPT_ITEMS {
        items.truncate(KEPT_ITEMS - 1);
        items.push(
            serde_json::json!({"type": "diff", "_acptap": "more content items were not kept"}),
        );
    }
    items
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

/// Most tool calls held per connection; past it the oldest are let go (and remembered as such).
pub(crate) const MAX_TOOL_CALLS: usize = 10_000;

/// The tool calls of a connection so far, by session and toolCallId. At most
/// [`MAX_TOOL_CALLS`] are held: the oldest go first, and a digest of each id let go is kept so
/// that [`ToolCalls::forgotten`] can say so.
#[derive(Debug, Default)]
pub struct ToolCalls {
    calls: HashMap<(String, String), Option<ToolCall>>,
    /// Creation order, for letting the oldest go.
    order: std::collections::VecDeque<(String, String)>,
    forgotten: std::collections::HashSet<u64>,
    /// Drop what a finished call no longer needs (the tap's state: a permission request for a
    /// finished call goes to the user whatever it holds).
    shed_finished: bool,
}

impl ToolCalls {
    /// The state the policy tap keeps: a finished call keeps only its title, kind, status and
    /// that it finished (a long session's finished calls were most of the tap's memory).
    pub(crate) fn shedding_finished() -> Self {
        ToolCalls {
            shed_finished: true,
            ..Self::default()
        }
    }

    /// The (session, toolCallId) of every tool call known.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &(String, String)> {
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
        let key = (session_id.to_owned(), tool_call_id.to_owned());
        if !self.calls.contains_key(&key) {
            while self.calls.len() >= MAX_TOOL_CALLS {
                let Some(oldest) = self.order.pop_front() else {
                    break;
                };
                if self.calls.remove(&oldest).is_some() {
                    self.forgotten.insert(key_digest(&oldest.0, &oldest.1));
                }
            }
            self.order.push_back(key.clone());
        }
        let slot = self.calls.entry(key).or_default();
        let (created, changed) = ToolCall::upsert(slot, update, how);
        if let Some(call) = slot.as_mut().filter(|c| self.shed_finished && c.finished) {
            for (i, name) in FIELDS.iter().enumerate() {
                if !matches!(*name, "title" | "kind" | "status") {
                    call.fields[i] = None;
                }
            }
        }
        Some((slot.as_ref()?, created, changed))
    }

    /// Whether this tool call was held once and let go to bound memory.
    pub(crate) fn forgotten(&self, session_id: &str, tool_call_id: &str) -> bool {
        self.forgotten
            .contains(&key_digest(session_id, tool_call_id))
    }
}

fn key_digest(session_id: &str, tool_call_id: &str) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    (session_id, tool_call_id).hash(&mut hasher);
    hasher.finish()
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

    #[test]
    fn heavy_fields_are_kept_short_and_a_change_is_still_seen() {
        let big = "x".repeat(100_000);
        let mut call = created(json!({"kind": "edit", "rawInput": {"new_string": big},
            "content": [{"type": "diff", "path": "/p/a", "newText": big}]}));
        let kept = call.get("content").unwrap().to_string();
        assert!(
            kept.len() < 2 * KEPT_TEXT && kept.contains("/p/a"),
            "{kept}"
        );
        // The policy still sees the whole rawInput of a call that is not finished.
        assert_eq!(call.get("rawInput").unwrap()["new_string"], json!(big));
        // A change beyond the kept prefix is a change.
        let other = format!("{big}y");
        let changed = call.apply(
            &map(json!({"content": [{"type": "diff", "path": "/p/a", "newText": other}]})),
            UpdateKind::ToolCallUpdate,
        );
        assert_eq!(changed, vec!["content"]);
        let changed = call.apply(
            &map(json!({"content": [{"type": "diff", "path": "/p/a", "newText": other}]})),
            UpdateKind::ToolCallUpdate,
        );
        assert!(changed.is_empty());
        // Finished: rawInput is cut too, and the call says so.
        assert!(!call.finished);
        call.apply(
            &map(json!({"status": "completed"})),
            UpdateKind::ToolCallUpdate,
        );
        assert!(call.finished);
        assert!(call.get("rawInput").unwrap().to_string().len() < 2 * KEPT_TEXT);
    }

    #[test]
    fn a_long_content_list_ends_with_an_item_no_path_rule_allows() {
        let items: Vec<Value> = (0..KEPT_ITEMS + 10)
            .map(|i| json!({"type": "diff", "path": format!("/p/{i}")}))
            .collect();
        let call = created(json!({"content": items}));
        let kept = call.get("content").unwrap().as_array().unwrap();
        assert_eq!(kept.len(), KEPT_ITEMS);
        assert!(kept.last().unwrap().get("path").is_none());
    }

    #[test]
    fn the_taps_state_keeps_only_the_names_and_status_of_a_finished_call() {
        let call = json!({"toolCallId": "t", "title": "Edit", "kind": "edit",
            "content": [{"type": "text", "text": "x".repeat(900)}], "rawInput": {"cmd": "y"}});
        let done = map(json!({"toolCallId": "t", "status": "completed"}));
        let mut tap = ToolCalls::shedding_finished();
        let mut recorder = ToolCalls::default();
        for calls in [&mut tap, &mut recorder] {
            calls.apply("s", &map(call.clone()), UpdateKind::ToolCall);
            assert!(
                calls.get("s", "t").unwrap().get("content").is_some(),
                "before it finished"
            );
            calls.apply("s", &done, UpdateKind::ToolCallUpdate);
        }
        let shed = tap.get("s", "t").unwrap();
        assert!(shed.finished);
        assert_eq!(shed.text("title").as_deref(), Some("Edit"));
        assert_eq!(shed.text("status").as_deref(), Some("completed"));
        assert!(shed.get("content").is_none() && shed.get("rawInput").is_none());
        assert!(recorder.get("s", "t").unwrap().get("content").is_some());
    }

    #[test]
    fn the_oldest_tool_calls_are_let_go_and_remembered_as_such() {
        let mut calls = ToolCalls::default();
        for i in 0..MAX_TOOL_CALLS + 5 {
            calls.apply(
                "s",
                &map(json!({"toolCallId": format!("t{i}")})),
                UpdateKind::ToolCall,
            );
        }
        assert_eq!(calls.keys().count(), MAX_TOOL_CALLS);
        assert!(calls.get("s", "t0").is_none() && calls.forgotten("s", "t0"));
        assert!(calls.get("s", "t6").is_some() && !calls.forgotten("s", "t6"));
        assert!(!calls.forgotten("s", "never-seen"));
    }
}
