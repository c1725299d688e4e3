//! `acptap diff`: two sessions side by side, turn by turn.
//!
//! Each session is read into a [`Shape`]: per prompt turn its prompt, stop reason, duration,
//! tool calls (kind, title, status, paths, a digest of their content) and permission decisions.
//! Ids differ between runs (tool call ids, request ids), so turns, tool calls and permission
//! requests are aligned by their order; and each session's cwd is written `<cwd>` in titles,
//! paths and content, so the same work in another directory compares equal.

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::Reader;
use super::queries::{self, SessionRef};
use crate::protocol::conversation::{ChatMessage, Conversation, Role};
use crate::protocol::relocate::Relocation;

/// What is compared of one session.
#[derive(Debug, Clone, Serialize)]
pub struct Shape {
    pub session_id: String,
    pub turns: Vec<TurnShape>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TurnShape {
    pub prompt: String,
    /// The agent's message text in the turn (the final text of each of its messages, joined),
    /// cwd written `<cwd>`. Compared only when asked (`acptap replay --compare text`): a model's words differ
    /// from run to run, a deterministic agent's do not.
    pub agent_text: String,
    pub stop_reason: Option<String>,
    pub error: Option<String>,
    pub duration_us: Option<i64>,
    pub tool_calls: Vec<CallShape>,
    pub permissions: Vec<PermissionShape>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CallShape {
    pub kind: Option<String>,
    pub title: Option<String>,
    pub status: Option<String>,
    pub paths: Vec<String>,
    /// A digest of the call's content (diffs, terminal output, text), cwd written `<cwd>`.
    pub content: Option<String>,
    /// Its `rawInput` without what changes from run to run (ids, times, `_meta`), cwd written
    /// `<cwd>`.
    pub raw_input: Value,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PermissionShape {
    /// What a v2 request asks: its title and its subject in one line, cwd written `<cwd>`
    /// (`None` for a v1 request).
    pub asks: Option<String>,
    /// The title of the tool call it asks about.
    pub tool_call: Option<String>,
    /// That tool call's kind.
    pub tool_kind: Option<String>,
    pub decided_by: Option<String>,
    pub outcome: Option<String>,
    pub option_kind: Option<String>,
}

/// Keys whose values change from run to run: ids, times, `_meta`, cwd.
fn is_volatile(key: &str) -> bool {
    let lower = key.to_ascii_lowercase();
    key == "_meta"
        || lower == "cwd"
        || lower == "id"
        || lower.ends_with("_id")
        || key.ends_with("Id")
        || lower.contains("time")
        || lower.ends_with("_at")
        || lower.ends_with("_ms")
}

/// `value` without its volatile keys, and `cwd` written `<cwd>` in its strings: values and
/// object keys (Codex names the files it edits as keys: `rawInput.changes["/abs/p/a.py"]`).
fn stable(value: &Value, to_cwd: Option<&Relocation>) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !is_volatile(k))
                .map(|(k, v)| (relative(k, to_cwd), stable(v, to_cwd)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| stable(v, to_cwd)).collect()),
        Value::String(text) => Value::String(relative(text, to_cwd)),
        other => other.clone(),
    }
}

/// What writes a session's `cwd` as `<cwd>` wherever it stands as a path (see
/// [`crate::protocol::relocate`], the one mapping replay also uses); `None` where nothing is
/// written (no cwd, or `/`).
fn to_cwd(cwd: Option<&str>) -> Option<Relocation> {
    cwd.and_then(|cwd| Relocation::new(cwd, "<cwd>"))
}

fn relative(text: &str, to_cwd: Option<&Relocation>) -> String {
    to_cwd
        .and_then(|relocation| relocation.text(text))
        .unwrap_or_else(|| text.to_owned())
}

/// `text` with the session's `cwd` written `<cwd>`, as the comparison writes every string.
pub fn cwd_written(text: &str, cwd: Option<&str>) -> String {
    relative(text, to_cwd(cwd).as_ref())
}

/// The text of a prompt: its text blocks, joined.
fn prompt_text(raw: &[u8]) -> String {
    let value: Value = serde_json::from_slice(raw).unwrap_or(Value::Null);
    value["params"]["prompt"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// The agent's text of each turn (`turn_starts`: the turns' request seqs, in order): the final
/// text of each agent message that began in it (chunks and v2 upserts applied, see
/// `protocol::conversation`), joined in order. Never the concatenation of a message's upserts.
fn agent_text_of_turns(turn_starts: &[i64], messages: &[ChatMessage]) -> Vec<String> {
    let mut texts = vec![String::new(); turn_starts.len()];
    for message in messages.iter().filter(|m| m.role == Role::Agent) {
        if let Some(turn) = turn_starts
            .partition_point(|start| *start <= message.first_seq)
            .checked_sub(1)
        {
            texts[turn].push_str(&message.text());
        }
    }
    texts
}

/// Reads a recorded session's shape.
pub fn shape(reader: &Reader, session: &SessionRef) -> rusqlite::Result<Shape> {
    let summary = queries::session_summary_of(reader, session)?;
    let cwd_relocation = to_cwd(summary.cwd.as_deref());
    let cwd = cwd_relocation.as_ref();
    let turns = queries::turns(reader, session)?;
    let turn_of = |seq: Option<i64>| {
        seq.and_then(|seq| {
            turns
                .partition_point(|t| t.request_seq <= seq)
                .checked_sub(1)
        })
    };
    let mut shapes: Vec<TurnShape> = Vec::with_capacity(turns.len());
    for turn in &turns {
        let prompt = queries::connection_messages(
            reader,
            session.connection_id,
            turn.request_seq..turn.request_seq + 1,
            1,
        )?
        .first()
        .map(|m| prompt_text(&m.raw))
        .unwrap_or_default();
        shapes.push(TurnShape {
            prompt: relative(&prompt, cwd),
            agent_text: String::new(),
            stop_reason: turn.stop_reason.clone(),
            error: turn.error.clone(),
            duration_us: turn.duration_us,
            tool_calls: Vec::new(),
            permissions: Vec::new(),
        });
    }
    let mut conversation = Conversation::new();
    queries::for_each_session_line(reader, session, 0..i64::MAX, |line| {
        if line.session_id.as_deref() != Some(session.session_id.as_str()) {
            return;
        }
        if line.direction == "a2c" && line.method.as_deref() == Some("session/update") {
            if let Ok(message) = serde_json::from_slice::<Value>(&line.raw) {
                conversation.apply(line.seq, &message["params"]);
            }
        } else {
            // Any other line of the session (a prompt, a permission request) ends a v1 message.
            conversation.interrupt(&session.session_id);
        }
    })?;
    let turn_starts: Vec<i64> = turns.iter().map(|t| t.request_seq).collect();
    for (shape, text) in shapes
        .iter_mut()
        .zip(agent_text_of_turns(&turn_starts, conversation.messages()))
    {
        shape.agent_text = relative(&text, cwd);
    }
    let calls = queries::session_tool_calls(reader, session)?;
    let mut titles = std::collections::HashMap::new();
    for call in &calls {
        let title = call.title.as_deref().map(|t| relative(t, cwd));
        titles.insert(
            call.tool_call_id.clone(),
            (title.clone(), call.kind.clone()),
        );
        let Some(turn) = turn_of(call.first_seq) else {
            continue;
        };
        let content = call.content.as_ref().map(|c| {
            let text = relative(&c.to_string(), cwd);
            let digest = Sha256::digest(text.as_bytes());
            digest[..8].iter().map(|b| format!("{b:02x}")).collect()
        });
        shapes[turn].tool_calls.push(CallShape {
            kind: call.kind.clone(),
            title,
            status: call.status.clone(),
            paths: call.paths().iter().map(|p| relative(p, cwd)).collect(),
            content,
            raw_input: call
                .raw_input
                .as_ref()
                .map_or(Value::Null, |v| stable(v, cwd)),
        });
    }
    for request in queries::permission_requests(reader, session)? {
        let Some(turn) = turn_of(Some(request.request_seq)) else {
            continue;
        };
        let (tool_call, tool_kind) = request
            .tool_call_id
            .as_ref()
            .and_then(|id| titles.get(id).cloned())
            .unwrap_or_default();
        let asks = match (&request.title, &request.subject_summary) {
            (None, None) => None,
            (title, subject) => Some(relative(
                &format!(
                    "{} · {}",
                    title.as_deref().unwrap_or("-"),
                    subject.as_deref().unwrap_or("no subject")
                ),
                cwd,
            )),
        };
        shapes[turn].permissions.push(PermissionShape {
            asks,
            tool_call,
            tool_kind,
            decided_by: request.decided_by.clone(),
            outcome: request.outcome.clone(),
            option_kind: request.option_kind.clone(),
        });
    }
    Ok(Shape {
        session_id: session.session_id.clone(),
        turns: shapes,
    })
}

/// One difference: where (a turn, numbered from 1), what, and the two sides.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Difference {
    pub turn: usize,
    pub what: String,
    pub a: Value,
    pub b: Value,
}

fn json<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// The differences between `a` and `b`; a turn's duration counts when it moved by more than
/// `timing_threshold_us`.
pub fn compare(a: &Shape, b: &Shape, timing_threshold_us: i64) -> Vec<Difference> {
    let mut out = Vec::new();
    for i in 0..a.turns.len().max(b.turns.len()) {
        let turn = i + 1;
        let (ta, tb) = match (a.turns.get(i), b.turns.get(i)) {
            (Some(ta), Some(tb)) => (ta, tb),
            (ta, tb) => {
                out.push(Difference {
                    turn,
                    what: "turn".into(),
                    a: ta.map_or(Value::Null, |t| json(&t.prompt)),
                    b: tb.map_or(Value::Null, |t| json(&t.prompt)),
                });
                continue;
            }
        };
        let mut differ = |what: String, x: Value, y: Value| {
            if x != y {
                out.push(Difference {
                    turn,
                    what,
                    a: x,
                    b: y,
                });
            }
        };
        differ("prompt".into(), json(&ta.prompt), json(&tb.prompt));
        differ(
            "stop reason".into(),
            json(&ta.stop_reason),
            json(&tb.stop_reason),
        );
        differ("error".into(), json(&ta.error), json(&tb.error));
        if let (Some(x), Some(y)) = (ta.duration_us, tb.duration_us)
            && (x - y).abs() > timing_threshold_us
        {
            differ("duration (µs)".into(), json(&x), json(&y));
        }
        for j in 0..ta.tool_calls.len().max(tb.tool_calls.len()) {
            let n = j + 1;
            match (ta.tool_calls.get(j), tb.tool_calls.get(j)) {
                (Some(x), Some(y)) => {
                    differ(format!("tool call {n} kind"), json(&x.kind), json(&y.kind));
                    differ(
                        format!("tool call {n} title"),
                        json(&x.title),
                        json(&y.title),
                    );
                    differ(
                        format!("tool call {n} status"),
                        json(&x.status),
                        json(&y.status),
                    );
                    differ(
                        format!("tool call {n} paths"),
                        json(&x.paths),
                        json(&y.paths),
                    );
                    differ(
                        format!("tool call {n} content"),
                        json(&x.content),
                        json(&y.content),
                    );
                    differ(
                        format!("tool call {n} rawInput"),
                        x.raw_input.clone(),
                        y.raw_input.clone(),
                    );
                }
                (x, y) => differ(
                    format!("tool call {n}"),
                    x.map_or(Value::Null, json),
                    y.map_or(Value::Null, json),
                ),
            }
        }
        for j in 0..ta.permissions.len().max(tb.permissions.len()) {
            let n = j + 1;
            match (ta.permissions.get(j), tb.permissions.get(j)) {
                (Some(x), Some(y)) => {
                    differ(format!("permission {n} asks"), json(&x.asks), json(&y.asks));
                    differ(
                        format!("permission {n} tool call"),
                        json(&x.tool_call),
                        json(&y.tool_call),
                    );
                    differ(
                        format!("permission {n} decided by"),
                        json(&x.decided_by),
                        json(&y.decided_by),
                    );
                    differ(
                        format!("permission {n} outcome"),
                        json(&x.outcome),
                        json(&y.outcome),
                    );
                    differ(
                        format!("permission {n} option"),
                        json(&x.option_kind),
                        json(&y.option_kind),
                    );
                }
                (x, y) => differ(
                    format!("permission {n}"),
                    x.map_or(Value::Null, json),
                    y.map_or(Value::Null, json),
                ),
            }
        }
    }
    out
}

/// The differences as text, one a line, for a terminal: every recorded string on its line, made
/// safe and cut (`terminal_line`).
pub fn render(a: &Shape, b: &Shape, differences: &[Difference]) -> String {
    use crate::terminal::{NAME_BYTES, VALUE_BYTES, terminal_line};
    let value = |v: &Value| terminal_line(&v.to_string(), VALUE_BYTES).into_owned();
    let mut out = format!(
        "A: session {} ({} turns)\nB: session {} ({} turns)\n",
        terminal_line(&a.session_id, NAME_BYTES),
        a.turns.len(),
        terminal_line(&b.session_id, NAME_BYTES),
        b.turns.len()
    );
    if differences.is_empty() {
        out.push_str("same: every turn, tool call and decision\n");
    }
    for d in differences {
        out.push_str(&format!(
            "turn {}: {}: {} -> {}\n",
            d.turn,
            terminal_line(&d.what, NAME_BYTES),
            value(&d.a),
            value(&d.b)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Codex's edit (its real rawInput shape): the file it edits is a key of `changes`. The same
    /// session recorded in two projects reads the same.
    #[test]
    fn paths_in_object_keys_are_written_relative_to_the_cwd() {
        let raw_input = |project: &str| {
            serde_json::json!({"call_id": "call_1", "changes": {
                format!("{project}/hello.py"): {"type": "update", "unified_diff": "@@ -1 +1 @@\n", "move_path": null}
            }})
        };
        let recorded = stable(
            &raw_input("/home/user/project"),
            to_cwd(Some("/home/user/project")).as_ref(),
        );
        let live = stable(&raw_input("/tmp/live"), to_cwd(Some("/tmp/live")).as_ref());
        assert_eq!(recorded, live);
        assert!(
            recorded["changes"].get("<cwd>/hello.py").is_some(),
            "{recorded}"
        );
    }

    #[test]
    fn volatile_fields_are_ignored() {
        let a = serde_json::json!({"command": "ls /w/p", "call_id": "x1", "turn_id": "t", "started_at_ms": 5, "cwd": "/a", "_meta": {}, "toolCallId": "c"});
        assert_eq!(
            stable(&a, to_cwd(Some("/w/p")).as_ref()),
            serde_json::json!({"command": "ls <cwd>"})
        );
    }

    #[test]
    fn a_turns_agent_text_is_the_final_text_of_each_message() {
        use serde_json::json;
        let update = |update: Value| json!({"sessionId": "s", "update": update});
        let chunk = |id: &str, text: &str| {
            update(
                json!({"sessionUpdate": "agent_message_chunk", "messageId": id,
                          "content": {"type": "text", "text": text}}),
            )
        };
        let mut conversation = Conversation::new();
        // Turn 1 (from seq 10): two messages streamed interleaved, then the first replaced.
        conversation.apply(11, &chunk("m1", "Draft "));
        conversation.apply(12, &chunk("m2", "Second."));
        conversation.apply(13, &chunk("m1", "answer."));
        conversation.apply(
            14,
            &update(json!({"sessionUpdate": "agent_message", "messageId": "m1",
                           "content": [{"type": "text", "text": "Final answer. "}]})),
        );
        // A thought is not the agent's text.
        conversation.apply(
            15,
            &update(json!({"sessionUpdate": "agent_thought", "messageId": "t1",
                           "content": [{"type": "text", "text": "hmm"}]})),
        );
        // Turn 2 (from seq 20): v1 chunks, joined.
        for (seq, text) in [(21, "Hel"), (22, "lo")] {
            conversation.apply(
                seq,
                &update(json!({"sessionUpdate": "agent_message_chunk",
                               "content": {"type": "text", "text": text}})),
            );
        }
        assert_eq!(
            agent_text_of_turns(&[10, 20], conversation.messages()),
            ["Final answer. Second.", "Hello"]
        );
    }

    #[test]
    fn the_cwd_is_written_the_same_way_on_both_sides() {
        assert_eq!(
            cwd_written("Edit /home/a/p/x.py", Some("/home/a/p")),
            "Edit <cwd>/x.py"
        );
        assert_eq!(
            cwd_written("Edit /home/a/p/x.py", Some("/home/a/p/")),
            "Edit <cwd>/x.py"
        );
        assert_eq!(cwd_written("ls /", Some("/")), "ls /");
        assert_eq!(cwd_written("x", None), "x");
    }
}
