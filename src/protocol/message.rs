//! A tolerant view of one line: what kind of JSON-RPC message it is and the few fields the
//! recorder indexes.
//!
//! Nothing here rejects input. A line that is not JSON, or JSON that is not a JSON-RPC message,
//! is [`MessageKind::Invalid`] and keeps its bytes; unknown methods and fields are simply not
//! looked at. The typed structs of the official SDK are not used on purpose: they drop what they
//! do not know.

use serde_json::Value;

/// Which way a line travelled: `c2a`, `a2c` or `stderr`, as recordings, transcripts and JSON
/// output name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Direction {
    /// Client to agent: the agent's stdin.
    #[serde(rename = "c2a")]
    ClientToAgent,
    /// Agent to client: the agent's stdout.
    #[serde(rename = "a2c")]
    AgentToClient,
    /// The agent's stderr: not protocol, recorded as its own stream.
    #[serde(rename = "stderr")]
    Stderr,
}

impl Direction {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Direction::ClientToAgent => "c2a",
            Direction::AgentToClient => "a2c",
            Direction::Stderr => "stderr",
        }
    }

    /// The direction a recording names; `None` for a name no acptap writes.
    pub(crate) fn from_recorded(name: &str) -> Option<Direction> {
        match name {
            "c2a" => Some(Direction::ClientToAgent),
            "a2c" => Some(Direction::AgentToClient),
            "stderr" => Some(Direction::Stderr),
            _ => None,
        }
    }

    /// The direction when the line is protocol (either way on the pipe); `None` for the agent's
    /// stderr.
    pub(crate) fn on_the_pipe(self) -> Option<Direction> {
        (self != Direction::Stderr).then_some(self)
    }

    /// The direction a response to a request sent this way travels.
    pub(crate) fn reverse(self) -> Direction {
        match self {
            Direction::ClientToAgent => Direction::AgentToClient,
            Direction::AgentToClient => Direction::ClientToAgent,
            Direction::Stderr => Direction::Stderr,
        }
    }
}

/// What a line is, as recordings and JSON output name it (`request`, `response`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
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
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            MessageKind::Request => "request",
            MessageKind::Response => "response",
            MessageKind::Notification => "notification",
            MessageKind::Batch => "batch",
            MessageKind::Invalid => "invalid",
            MessageKind::Stderr => "stderr",
        }
    }

    /// The kind a recording names; `None` for a name no acptap writes.
    pub(crate) fn from_recorded(name: &str) -> Option<MessageKind> {
        [
            MessageKind::Request,
            MessageKind::Response,
            MessageKind::Notification,
            MessageKind::Batch,
            MessageKind::Invalid,
            MessageKind::Stderr,
        ]
        .into_iter()
        .find(|kind| kind.as_str() == name)
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
    pub(crate) fn params(&self) -> Option<&Value> {
        self.value.as_ref()?.get("params")
    }

    pub(crate) fn result(&self) -> Option<&Value> {
        self.value.as_ref()?.get("result")
    }

    pub(crate) fn error(&self) -> Option<&Value> {
        self.value.as_ref()?.get("error")
    }

    /// `params.sessionId` (or an elicitation's `params.scope.sessionId`), or `result.sessionId`
    /// for a `session/new` or `session/fork` answer.
    pub(crate) fn session_id(&self) -> Option<&str> {
        let params = self.params();
        params
            .and_then(|p| p.get("sessionId"))
            .or_else(|| params.and_then(|p| p.get("scope")?.get("sessionId")))
            .or_else(|| self.result().and_then(|r| r.get("sessionId")))
            .and_then(Value::as_str)
    }

    /// The messages of a batch, each classified; `None` for a message that is not a batch.
    pub(crate) fn batch(&self) -> Option<Vec<Message>> {
        match (&self.kind, &self.value) {
            (MessageKind::Batch, Some(Value::Array(items))) => {
                Some(items.iter().cloned().map(from_value).collect())
            }
            _ => None,
        }
    }

    /// The tool call a message is about: a `session/update`'s, a permission request's (its v2
    /// subject's, else its v1 `toolCall`'s), `tool_call/cancel`'s, an elicitation scope's.
    pub(crate) fn tool_call_id(&self) -> Option<&str> {
        let params = self.params()?;
        if let Some(update) = params.get("update") {
            return update.get("toolCallId").and_then(Value::as_str);
        }
        if self.method.as_deref() == Some("session/request_permission") {
            return crate::protocol::state::PermissionShapes::of(Some(params)).tool_call_id();
        }
        params
            .get("toolCallId")
            .or_else(|| params.get("scope")?.get("toolCallId"))
            .or_else(|| params.get("toolCall")?.get("toolCallId"))
            .and_then(Value::as_str)
    }
}

/// Above this size a line's params are parsed only when a method the recorder reads needs them:
/// building a `Value` of a 64 MiB custom notification would double the memory for nothing.
const LARGE_LINE: usize = 1024 * 1024;

/// The methods whose params the session state reads.
const METHODS_WITH_FACTS: &[&str] = &[
    "initialize",
    "session/new",
    "session/load",
    "session/resume",
    "session/fork",
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
    classify(line, decode)
}

/// [`parse_line`], and whether the line names a key twice in one object, in the same single
/// parse (the policy tap's reading: peers disagree on such a line).
pub(crate) fn parse_line_noting_duplicates(line: &[u8]) -> (Message, bool) {
    let mut duplicates = false;
    let message = classify(line, |text| {
        let (value, found) = decode_noting_duplicates(text)?;
        duplicates = found;
        Some(value)
    });
    (message, duplicates)
}

/// Classifies one line, its JSON read by `decode`.
fn classify(line: &[u8], mut decode: impl FnMut(&[u8]) -> Option<Value>) -> Message {
    let invalid = Message {
        kind: MessageKind::Invalid,
        id: None,
        method: None,
        value: None,
    };
    let trimmed = line.trim_ascii();
    match trimmed.first() {
        Some(b'[') => {
            return match decode(trimmed) {
                Some(value @ Value::Array(_)) => Message {
                    kind: MessageKind::Batch,
                    value: Some(value),
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
    match decode(trimmed) {
        Some(value @ Value::Object(_)) => from_value(value),
        _ => invalid,
    }
}

/// The `sessionUpdate` kinds that only carry a message's content: no fact of the session state
/// reads more of them than the session and the kind (issue 31: parsing their text into a JSON
/// value was a sixth of the recorder's time at 1 KiB lines).
const CONTENT_UPDATES: &[&str] = &[
    "agent_message_chunk",
    "user_message_chunk",
    "agent_thought_chunk",
    "agent_message",
    "user_message",
    "agent_thought",
];

/// [`parse_line`] for the recorder, which reads a line only for its columns and its facts: a
/// `session/update` notification of a [`CONTENT_UPDATES`] kind is read as deep as those go (the
/// method, the session, the update's kind and tool call) and its value is that skeleton;
/// every other line, and any line the skeleton cannot be read from exactly (a repeated key, an
/// escape the strict reader refuses, a value of another type), is [`parse_line`]'s. The
/// recorder's columns and facts are the same either way (a test compares them on every
/// recorded sample); replay and the views, which compare and show content, use [`parse_line`].
pub(crate) fn parse_line_for_facts(line: &[u8]) -> Message {
    content_update_skeleton(line.trim_ascii()).unwrap_or_else(|| parse_line(line))
}

/// The skeleton of a content-only `session/update` notification, or `None` (see
/// [`parse_line_for_facts`]).
fn content_update_skeleton(text: &[u8]) -> Option<Message> {
    // Most lines that are not content updates do not name the method at all (spelt with an
    // escape, it is left to the full reading, which is always right).
    static METHOD: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"session/update\""));
    if text.first() != Some(&b'{') || METHOD.find(text).is_none() {
        return None;
    }
    let mut reader = serde_json::Deserializer::from_slice(text);
    let ContentRead::Fields(ContentFields {
        session_id,
        scope,
        update: Some((kind, tool_call_id)),
    }) =
        serde::de::DeserializeSeed::deserialize(ContentReader(ContentLevel::Envelope), &mut reader)
            .ok()?
    else {
        return None;
    };
    reader.end().ok()?;
    let mut skeleton_update = serde_json::Map::new();
    skeleton_update.insert("sessionUpdate".into(), Value::String(kind.into_owned()));
    if let Some(value) = tool_call_id {
        skeleton_update.insert("toolCallId".into(), value);
    }
    let mut skeleton_params = serde_json::Map::new();
    if let Some(value) = session_id {
        skeleton_params.insert("sessionId".into(), value);
    }
    if let Some(value) = scope {
        skeleton_params.insert("scope".into(), value);
    }
    skeleton_params.insert("update".into(), Value::Object(skeleton_update));
    let mut skeleton = serde_json::Map::new();
    skeleton.insert("method".into(), Value::String("session/update".into()));
    skeleton.insert("params".into(), Value::Object(skeleton_params));
    Some(Message {
        kind: MessageKind::Notification,
        id: None,
        method: Some("session/update".into()),
        value: Some(Value::Object(skeleton)),
    })
}

/// What the recorder reads of a content-only `session/update` notification (see
/// [`parse_line_for_facts`]): its `params` and their `update`, read in one pass that stops as
/// soon as the line is something else: a `method` other than `session/update`, an `id`, an update
/// of another kind (the common case for the lines that are not content: they are given up on at
/// their first keys). A key the reading uses that comes twice also stops it: a JSON value keeps
/// the last, and such a line is left to the full reading. A field given as `null` is there
/// (`Some(Value::Null)`), as it is in a JSON value: `"sessionId": null` hides `scope.sessionId`
/// from `Message::session_id`. What it does not keep it still reads as a JSON value is read
/// ([`Skip`]), so it takes exactly the lines the full reading takes: an out-of-range number or
/// nesting past serde_json's depth limit anywhere in the line makes it `invalid` either way.
#[derive(Default)]
struct ContentFields<'a> {
    session_id: Option<Value>,
    scope: Option<Value>,
    update: Option<(std::borrow::Cow<'a, str>, Option<Value>)>,
}

/// Which object of the line a [`ContentReader`] reads.
#[derive(Clone, Copy)]
enum ContentLevel {
    Envelope,
    Params,
    Update,
}

/// Reads one object of a content update (a map only: an array is not an object).
struct ContentReader(ContentLevel);

/// What a [`ContentReader`] made of its object: the fields (of the envelope, of its `params`),
/// or the update's kind and tool call.
enum ContentRead<'a> {
    Fields(ContentFields<'a>),
    Update(std::borrow::Cow<'a, str>, Option<Value>),
}

impl<'de> serde::de::DeserializeSeed<'de> for ContentReader {
    type Value = ContentRead<'de>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for ContentReader {
    type Value = ContentRead<'de>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        use serde::de::Error;
        use std::borrow::Cow;
        let other = || A::Error::custom("not a content update");
        let mut fields = ContentFields::default();
        let (mut method, mut id, mut kind, mut tool_call_id) = (false, false, None, None);
        let once = |seen: bool| if seen { Err(other()) } else { Ok(()) };
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match (self.0, key.as_ref()) {
                (ContentLevel::Envelope, "method") => {
                    once(method)?;
                    method = true;
                    if map.next_value::<Option<Cow<str>>>()?.as_deref() != Some("session/update") {
                        return Err(other());
                    }
                }
                (ContentLevel::Envelope, "id") => {
                    once(id)?;
                    id = true;
                    if !map.next_value::<Value>()?.is_null() {
                        return Err(other());
                    }
                }
                (ContentLevel::Envelope, "params") => {
                    once(fields.update.is_some())?;
                    let ContentRead::Fields(params) =
                        map.next_value_seed(ContentReader(ContentLevel::Params))?
                    else {
                        return Err(other());
                    };
                    fields = params;
                    // A `params` without an update is not a content update.
                    if fields.update.is_none() {
                        return Err(other());
                    }
                }
                (ContentLevel::Params, "sessionId") => {
                    once(fields.session_id.is_some())?;
                    fields.session_id = Some(map.next_value()?);
                }
                (ContentLevel::Params, "scope") => {
                    once(fields.scope.is_some())?;
                    fields.scope = Some(map.next_value()?);
                }
                (ContentLevel::Params, "update") => {
                    once(fields.update.is_some())?;
                    let ContentRead::Update(kind, tool_call_id) =
                        map.next_value_seed(ContentReader(ContentLevel::Update))?
                    else {
                        return Err(other());
                    };
                    fields.update = Some((kind, tool_call_id));
                }
                (ContentLevel::Update, "sessionUpdate") => {
                    once(kind.is_some())?;
                    let read: Cow<str> = map.next_value()?;
                    if !CONTENT_UPDATES.contains(&read.as_ref()) {
                        return Err(other());
                    }
                    kind = Some(read);
                }
                (ContentLevel::Update, "toolCallId") => {
                    once(tool_call_id.is_some())?;
                    tool_call_id = Some(map.next_value()?);
                }
                _ => map.next_value_seed(Skip::ANY)?,
            }
        }
        Ok(match self.0 {
            ContentLevel::Envelope if !method || fields.update.is_none() => return Err(other()),
            ContentLevel::Envelope | ContentLevel::Params => ContentRead::Fields(fields),
            ContentLevel::Update => ContentRead::Update(kind.ok_or_else(other)?, tool_call_id),
        })
    }
}

/// A JSON value read and dropped: every number, string and nesting depth a [`Value`] takes and no
/// other (serde_json's `IgnoredAny` takes an out-of-range number, `1e999`, which a `Value`
/// refuses), without building it. [`Skip::ONE_WAY`] also refuses an object that names a key
/// twice, which readers resolve differently (replay's `reads_one_way`).
#[derive(Clone, Copy)]
pub(crate) struct Skip {
    refuse_repeated_keys: bool,
}

impl Skip {
    pub(crate) const ANY: Skip = Skip {
        refuse_repeated_keys: false,
    };
    pub(crate) const ONE_WAY: Skip = Skip {
        refuse_repeated_keys: true,
    };
}

impl<'de> serde::de::DeserializeSeed<'de> for Skip {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Skip {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("JSON")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(self)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        if !self.refuse_repeated_keys {
            while map.next_key_seed(self)?.is_some() {
                map.next_value_seed(self)?;
            }
            return Ok(());
        }
        let mut keys = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !keys.insert(key) {
                return Err(serde::de::Error::custom("a key written twice"));
            }
            map.next_value_seed(self)?;
        }
        Ok(())
    }
}

/// Parses JSON as the peers do. Strict first; when that fails, once more with what JavaScript
/// and Python accept and serde_json does not: invalid UTF-8 (as U+FFFD), a lone UTF-16 surrogate escape (`"\ud83d"`, read
/// as U+FFFD) and Python's `NaN`, `Infinity` and `-Infinity` (read as `null`). Duplicate keys
/// resolve to the last, as serde_json, `JSON.parse` and Python's `json` read them (typed Rust
/// structs refuse them: [`decode_noting_duplicates`] tells).
pub fn decode(text: &[u8]) -> Option<Value> {
    decode_with(text, |text| serde_json::from_slice(text).ok())
}

/// [`decode`], and whether an object in the text names a key twice; `None` when it cannot be
/// read at all.
pub(crate) fn decode_noting_duplicates(text: &[u8]) -> Option<(Value, bool)> {
    decode_with(text, |text| {
        let mut de = serde_json::Deserializer::from_slice(text);
        let read = serde::de::DeserializeSeed::deserialize(NotingDuplicates, &mut de).ok()?;
        de.end().ok()?;
        Some(read)
    })
}

/// Whether a JSON text names a key twice in one object, read as [`decode`] reads it.
pub(crate) fn has_duplicate_keys(text: &[u8]) -> Option<bool> {
    decode_noting_duplicates(text).map(|(_, found)| found)
}

/// Strict `parse`, then `parse` of the text made lenient, then of its lossy UTF-8 (see
/// [`decode`]).
fn decode_with<T>(text: &[u8], parse: impl Fn(&[u8]) -> Option<T>) -> Option<T> {
    let strict_then_lenient = |text: &[u8]| parse(text).or_else(|| parse(&leniently(text)?));
    strict_then_lenient(text).or_else(|| {
        // Node decodes its input with replacement characters for invalid UTF-8.
        let lossy = String::from_utf8_lossy(text);
        matches!(lossy, std::borrow::Cow::Owned(_))
            .then(|| strict_then_lenient(lossy.as_bytes()))
            .flatten()
    })
}

/// Builds a JSON value as serde_json does (the last of a repeated key wins) and notes whether
/// any object repeated a key.
#[derive(Clone, Copy)]
struct NotingDuplicates;

impl<'de> serde::de::DeserializeSeed<'de> for NotingDuplicates {
    type Value = (Value, bool);
    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<(Value, bool), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for NotingDuplicates {
    type Value = (Value, bool);
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("JSON")
    }
    fn visit_bool<E>(self, b: bool) -> Result<(Value, bool), E> {
        Ok((Value::Bool(b), false))
    }
    fn visit_i64<E>(self, n: i64) -> Result<(Value, bool), E> {
        Ok((Value::from(n), false))
    }
    fn visit_u64<E>(self, n: u64) -> Result<(Value, bool), E> {
        Ok((Value::from(n), false))
    }
    fn visit_f64<E>(self, n: f64) -> Result<(Value, bool), E> {
        Ok((Value::from(n), false))
    }
    fn visit_str<E>(self, s: &str) -> Result<(Value, bool), E> {
        Ok((Value::String(s.to_owned()), false))
    }
    fn visit_string<E>(self, s: String) -> Result<(Value, bool), E> {
        Ok((Value::String(s), false))
    }
    fn visit_unit<E>(self) -> Result<(Value, bool), E> {
        Ok((Value::Null, false))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> Result<(Value, bool), A::Error> {
        let (mut items, mut found) = (Vec::new(), false);
        while let Some((item, inner)) = seq.next_element_seed(self)? {
            items.push(item);
            found |= inner;
        }
        Ok((Value::Array(items), found))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> Result<(Value, bool), A::Error> {
        let (mut object, mut found) = (serde_json::Map::new(), false);
        while let Some(key) = map.next_key::<String>()? {
            let (value, inner) = map.next_value_seed(self)?;
            found |= inner | object.insert(key, value).is_some();
        }
        Ok((Value::Object(object), found))
    }
}

/// `text` with lone surrogate escapes replaced by `\ufffd` and non-finite number literals
/// outside strings by `null`; `None` when there is nothing to replace.
fn leniently(text: &[u8]) -> Option<Vec<u8>> {
    let hex = |at: usize| -> Option<u16> {
        let digits = std::str::from_utf8(text.get(at..at + 4)?).ok()?;
        u16::from_str_radix(digits, 16).ok()
    };
    let mut out = Vec::with_capacity(text.len());
    let mut changed = false;
    let mut in_string = false;
    let mut i = 0;
    while i < text.len() {
        let c = text[i];
        if in_string {
            match c {
                b'"' => in_string = false,
                b'\\' if text.get(i + 1) == Some(&b'u') => {
                    let unit = hex(i + 2);
                    let high = unit.is_some_and(|u| (0xD800..0xDC00).contains(&u));
                    let low = unit.is_some_and(|u| (0xDC00..0xE000).contains(&u));
                    let paired = high
                        && text.get(i + 6..i + 8) == Some(b"\\u")
                        && hex(i + 8).is_some_and(|u| (0xDC00..0xE000).contains(&u));
                    if paired {
                        out.extend_from_slice(&text[i..i + 12]);
                        i += 12;
                        continue;
                    }
                    if high || low {
                        out.extend_from_slice(b"\\ufffd");
                        changed = true;
                        i += 6;
                        continue;
                    }
                }
                b'\\' => {
                    out.extend_from_slice(text.get(i..i + 2).unwrap_or(&text[i..]));
                    i += 2;
                    continue;
                }
                _ => {}
            }
        } else if c == b'"' {
            in_string = true;
        } else {
            let rest = &text[i..];
            if let Some(word) = [&b"-Infinity"[..], b"Infinity", b"NaN"]
                .into_iter()
                .find(|w| rest.starts_with(w))
            {
                out.extend_from_slice(b"null");
                changed = true;
                i += word.len();
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    changed.then_some(out)
}

/// Classifies a decoded JSON object (a line, or one element of a batch).
pub(crate) fn from_value(value: Value) -> Message {
    if !value.is_object() {
        return Message {
            kind: MessageKind::Invalid,
            id: None,
            method: None,
            value: None,
        };
    }
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

    /// What the recorder keeps of a line: its columns and what the session state learns.
    fn recorded_reading(
        state: &mut crate::protocol::SessionState,
        direction: Direction,
        seq: i64,
        message: &Message,
    ) -> impl PartialEq + std::fmt::Debug + use<> {
        (
            message.kind,
            message.id.clone(),
            message.method.clone(),
            message.session_id().map(str::to_owned),
            message.tool_call_id().map(str::to_owned),
            state.observe(direction, seq, message),
        )
    }

    /// The recorder's reading of a line gives the columns and facts of the full reading, for
    /// every line of every transcript in tests/fixtures (real agents' and clients' traffic, v1
    /// and v2, hostile corpora), each connection observed in order.
    #[test]
    fn the_recorders_reading_learns_what_the_full_reading_learns_on_every_fixture() {
        fn transcripts(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    transcripts(&path, out);
                } else if path.extension().is_some_and(|e| e == "jsonl") {
                    out.push(path);
                }
            }
        }
        let mut files = Vec::new();
        transcripts(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"),
            &mut files,
        );
        let (mut lines, mut skeletons) = (0, 0);
        for file in &files {
            let (mut full, mut shallow) = (
                crate::protocol::SessionState::new(),
                crate::protocol::SessionState::new(),
            );
            for (seq, record) in std::fs::read_to_string(file).unwrap().lines().enumerate() {
                let Ok(record) = serde_json::from_str::<Value>(record) else {
                    continue;
                };
                let (Some(text), Some(direction)) = (
                    record.get("text").and_then(Value::as_str),
                    record
                        .get("dir")
                        .and_then(Value::as_str)
                        .and_then(Direction::from_recorded),
                ) else {
                    continue;
                };
                let read = parse_line_for_facts(text.as_bytes());
                lines += 1;
                skeletons += usize::from(content_update_skeleton(text.trim().as_bytes()).is_some());
                assert_eq!(
                    recorded_reading(&mut shallow, direction, seq as i64, &read),
                    recorded_reading(
                        &mut full,
                        direction,
                        seq as i64,
                        &parse_line(text.as_bytes())
                    ),
                    "{}: {text}",
                    file.display()
                );
            }
        }
        // The fixtures hold both kinds of line.
        assert!(
            lines > 1000 && skeletons > 100,
            "{lines} lines, {skeletons} skeletons"
        );
    }

    /// Lines a value refuses anywhere in them (an out-of-range number, nesting past serde_json's
    /// depth limit, in the skipped content or in a field it keeps) are `invalid` to the recorder
    /// too, as they were before the short reading (found by an outsider's differential test).
    #[test]
    fn the_recorders_reading_refuses_what_a_json_value_refuses() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        let chunk = |params_extra: &str, update_extra: &str, extra: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s9"{params_extra},"update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"hi"}}{update_extra}}}}}{extra}}}"#
            )
        };
        let big = format!("1{}", "0".repeat(400));
        for (line, valid) in [
            (chunk("", "", r#","x":1e999"#), false),
            (chunk("", "", r#","x":-1e999999"#), false),
            (chunk("", &format!(r#","n":{big}"#), ""), false),
            (chunk(r#","y":1e999"#, "", ""), false),
            (chunk("", &format!(r#","deep":{}"#, deep(127)), ""), false),
            (chunk(&format!(r#","scope":{}"#, deep(126)), "", ""), false),
            (chunk("", &format!(r#","deep":{}"#, deep(100)), ""), true),
            (chunk("", "", r#","x":1e300"#), true),
        ] {
            let (mut full, mut shallow) = (
                crate::protocol::SessionState::new(),
                crate::protocol::SessionState::new(),
            );
            let read = parse_line_for_facts(line.as_bytes());
            assert_eq!(read.kind != MessageKind::Invalid, valid, "{line}");
            assert_eq!(
                recorded_reading(&mut shallow, Direction::AgentToClient, 1, &read),
                recorded_reading(
                    &mut full,
                    Direction::AgentToClient,
                    1,
                    &parse_line(line.as_bytes())
                ),
                "{line}"
            );
        }
    }

    proptest::proptest! {
        /// The same on lines made to trip a shallow reader: each update kind, keys repeated or
        /// spelled with escapes, values of other types, bytes inserted anywhere.
        #[test]
        fn the_recorders_reading_learns_what_the_full_reading_learns_on_crafted_lines(
            kind in proptest::sample::select(vec!["agent_message_chunk", "agent_thought", "tool_call", "state_update", "plan"]),
            session in proptest::sample::select(vec![r#""s""#, "7", "null", r#"{"x":1}"#, r#""s\u0031""#]),
            extra in proptest::sample::select(vec![
                "", r#","sessionId":"other""#, r#","update":{"sessionUpdate":"tool_call","toolCallId":"t"}"#,
                r#","sessi\u006fnId":"esc""#, r#","scope":{"sessionId":"sc"}"#, r#","id":1"#, r#","id":null"#,
                r#"},"params":["s",null,{"sessionUpdate":"agent_message_chunk"}],"x":{"#,
            ]),
            inner in proptest::sample::select(vec![
                "", r#","toolCallId":"t1""#, r#","sessionUpdate":"tool_call""#, r#","toolCallId":5"#,
                r#","content":{"type":"text","text":"\ud83d NaN"}"#,
                r#"},"update":["agent_message_chunk","t"],"x":{"#,
            ]),
            insert in proptest::option::of((0usize..400, proptest::sample::select(vec![
                &b"\\xff"[..], b"\xff", b"NaN", b"}", b"\\ud800", b"\"", b",", b"\\u0000", b"\x01",
                b"1e999,", b"-1e999", b"12345678901234567890123456789012345678901234567890e300",
            ]))),
        ) {
            let line = format!(
                r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":{session},"update":{{"sessionUpdate":"{kind}","content":{{"type":"text","text":"hi"}}{inner}}}{extra}}}}}"#
            );
            let mut line = line.into_bytes();
            if let Some((at, bytes)) = insert {
                let at = at.min(line.len());
                line.splice(at..at, bytes.iter().copied());
            }
            let (mut full, mut shallow) = (
                crate::protocol::SessionState::new(),
                crate::protocol::SessionState::new(),
            );
            for direction in [Direction::AgentToClient, Direction::ClientToAgent] {
                proptest::prop_assert_eq!(
                    recorded_reading(&mut shallow, direction, 1, &parse_line_for_facts(&line)),
                    recorded_reading(&mut full, direction, 1, &parse_line(&line)),
                    "{}", String::from_utf8_lossy(&line)
                );
            }
        }
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
    fn reads_what_javascript_and_python_peers_write() {
        // A lone surrogate (JSON.parse and Python keep it; serde_json refuses it).
        let m = parse_line(br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"toolCallId":"t","title":"\ud83d x \udc00"}}}"#);
        assert_eq!(m.kind, MessageKind::Notification);
        assert_eq!(
            m.params().unwrap()["update"]["title"],
            "\u{fffd} x \u{fffd}"
        );
        // A proper pair stays what it is; an escape in a key is the key.
        let m = parse_line(br#"{"jsonrpc":"2.0","method":"m","params":{"toolCall\u0049d":"\ud83d\ude00","n":NaN}}"#);
        assert_eq!(m.params().unwrap()["toolCallId"], "\u{1f600}");
        assert_eq!(m.params().unwrap()["n"], Value::Null);
        // Duplicate keys: the last one, as every peer reads it.
        let m = parse_line(
            br#"{"jsonrpc":"2.0","method":"m","params":{"kind":"read","kind":"execute"}}"#,
        );
        assert_eq!(m.params().unwrap()["kind"], "execute");
        // Inside strings, the words are text.
        let m = parse_line(
            br#"{"jsonrpc":"2.0","method":"m","params":{"t":"NaN \\ud83d","x":-Infinity}}"#,
        );
        assert_eq!(m.params().unwrap()["t"], "NaN \\ud83d");
        // A batch is looked into.
        let m =
            parse_line(br#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":1,"result":{}}]"#);
        let batch = m.batch().unwrap();
        assert_eq!(
            batch.iter().map(|m| m.kind).collect::<Vec<_>>(),
            [MessageKind::Notification, MessageKind::Response]
        );
        assert!(parse_line(b"{\"a\":\"\\ud83d\"").value.is_none());
        let m = parse_line(b"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{\"t\":\"a\xffb\"}}");
        assert_eq!(m.params().unwrap()["t"], "a\u{fffd}b");
    }

    #[test]
    fn duplicate_keys_are_found_at_any_depth_and_through_escapes() {
        assert_eq!(
            has_duplicate_keys(br#"{"a":1,"b":{"c":[{"d":1}]}}"#),
            Some(false)
        );
        assert_eq!(has_duplicate_keys(br#"{"a":1,"a":2}"#), Some(true));
        assert_eq!(
            has_duplicate_keys(br#"{"p":{"subject":[{"type":"command","type":"tool_call"}]}}"#),
            Some(true)
        );
        assert_eq!(
            has_duplicate_keys(br#"{"toolCallId":1,"toolCall\u0049d":2}"#),
            Some(true)
        );
        // Read as the decoder reads: a lone surrogate, NaN.
        assert_eq!(
            has_duplicate_keys(br#"{"t":"\ud83d","n":NaN,"n":1}"#),
            Some(true)
        );
        assert_eq!(has_duplicate_keys(b"not json"), None);
        // The value is decode's, the last of a repeated key winning.
        let text = br#"{"a":[1,-2,3.5,"x",null,true],"b":{"c":1,"c":{"d":"\ud83d"}}}"#;
        let (value, found) = decode_noting_duplicates(text).unwrap();
        assert_eq!((Some(value), found), (decode(text), true));
        let (message, found) = parse_line_noting_duplicates(br#"{"id":1,"method":"m","id":2}"#);
        assert_eq!((message.id.as_deref(), found), (Some("2"), true));
    }

    #[test]
    fn error_response_with_null_id_is_a_response() {
        let r = parse_line(br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#);
        assert_eq!((r.kind, r.id), (MessageKind::Response, None));
    }
}
