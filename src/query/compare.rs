//! Two sessions compared: one reading of a session's shape, one engine that walks two shapes
//! side by side, and the comparisons that use it (`acptap diff`: [`compare`] and [`render`], in
//! `compare/diff.rs`; replay's divergence report: `replay::divergence`).
//!
//! Each session is read into a [`Shape`] ([`shape`]): per prompt turn its prompt, stop reason,
//! duration, tool calls (kind, title, status, paths, a digest of their content, `rawInput`) and
//! permission decisions. Ids differ between runs (tool call ids, request ids) and are left out,
//! and each session's cwd is written `<cwd>` in titles, paths and content, so the same work in
//! another directory compares equal.
//!
//! The engine ([`walk`]) pairs turns and permission requests by their order, and the tool calls
//! of two paired turns with a [`Matcher`]: `acptap diff` pairs them by order ([`ByOrder`]),
//! replay by what they do (kind and title, command, paths). It reports every difference it
//! finds as a [`Change`]; each comparison keeps its own tolerances (which changes count) and its
//! own wording.

mod diff;

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::Reader;
use super::SessionRef;
use crate::protocol::relocate::Relocation;

pub use diff::{DEFAULT_TIMING_THRESHOLD_US, DiffReport, Difference, compare, render, report};

/// What is compared of one session.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Shape {
    pub session_id: String,
    pub turns: Vec<TurnShape>,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct TurnShape {
    pub prompt: String,
    /// The agent's message text in the turn, cwd written `<cwd>`: empty as [`shape`] reads it.
    /// Only replay reads and compares it, when asked (`acptap replay --compare text`; a model's
    /// words differ from run to run, a deterministic agent's do not), by its own reading of a
    /// turn's messages (`replay::divergence`).
    pub agent_text: String,
    pub stop_reason: Option<String>,
    pub error: Option<String>,
    pub duration_us: Option<i64>,
    pub tool_calls: Vec<CallShape>,
    pub permissions: Vec<PermissionShape>,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
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

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
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
pub(crate) fn cwd_written(text: &str, cwd: Option<&str>) -> String {
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

/// Reads a recorded session's shape.
pub(crate) fn shape(reader: &Reader, session: &SessionRef) -> rusqlite::Result<Shape> {
    let summary = super::session_summary_of(reader, session)?;
    let cwd_relocation = to_cwd(summary.cwd.as_deref());
    let cwd = cwd_relocation.as_ref();
    let turns = super::turns(reader, session)?;
    let turn_of = |seq: Option<i64>| {
        seq.and_then(|seq| {
            turns
                .partition_point(|t| t.request_seq <= seq)
                .checked_sub(1)
        })
    };
    let mut shapes: Vec<TurnShape> = Vec::with_capacity(turns.len());
    for turn in &turns {
        let prompt = super::connection_messages(
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
    let calls = super::session_tool_calls(reader, session)?;
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
    for request in super::permission_requests(reader, session)? {
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

/// Pairs the tool calls of two paired turns: for each call of `a`, the call of `b` (an index
/// into `b`) that stands for it, if any; no call of `b` stands for two.
pub(crate) trait Matcher {
    fn pair_calls(&self, a: &[CallShape], b: &[CallShape]) -> Vec<Option<usize>>;
}

/// The n-th call of one side with the n-th of the other (`acptap diff`).
pub(crate) struct ByOrder;

impl Matcher for ByOrder {
    fn pair_calls(&self, a: &[CallShape], b: &[CallShape]) -> Vec<Option<usize>> {
        (0..a.len()).map(|i| (i < b.len()).then_some(i)).collect()
    }
}

/// What is compared of two paired turns, in the order it is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TurnField {
    Prompt,
    StopReason,
    Error,
    Duration,
    AgentText,
}

impl TurnField {
    const ALL: [Self; 5] = [
        Self::Prompt,
        Self::StopReason,
        Self::Error,
        Self::Duration,
        Self::AgentText,
    ];

    fn differs(self, a: &TurnShape, b: &TurnShape) -> bool {
        match self {
            Self::Prompt => a.prompt != b.prompt,
            Self::StopReason => a.stop_reason != b.stop_reason,
            Self::Error => a.error != b.error,
            Self::Duration => a.duration_us != b.duration_us,
            Self::AgentText => a.agent_text != b.agent_text,
        }
    }
}

/// What is compared of two paired tool calls, in the order it is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallField {
    Kind,
    Title,
    Status,
    Paths,
    Content,
    RawInput,
}

impl CallField {
    const ALL: [Self; 6] = [
        Self::Kind,
        Self::Title,
        Self::Status,
        Self::Paths,
        Self::Content,
        Self::RawInput,
    ];

    fn differs(self, a: &CallShape, b: &CallShape) -> bool {
        match self {
            Self::Kind => a.kind != b.kind,
            Self::Title => a.title != b.title,
            Self::Status => a.status != b.status,
            Self::Paths => a.paths != b.paths,
            Self::Content => a.content != b.content,
            Self::RawInput => a.raw_input != b.raw_input,
        }
    }
}

/// What is compared of two paired permission requests, in the order it is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PermissionField {
    Asks,
    ToolCall,
    ToolKind,
    DecidedBy,
    Outcome,
    OptionKind,
}

impl PermissionField {
    const ALL: [Self; 6] = [
        Self::Asks,
        Self::ToolCall,
        Self::ToolKind,
        Self::DecidedBy,
        Self::Outcome,
        Self::OptionKind,
    ];

    fn differs(self, a: &PermissionShape, b: &PermissionShape) -> bool {
        match self {
            Self::Asks => a.asks != b.asks,
            Self::ToolCall => a.tool_call != b.tool_call,
            Self::ToolKind => a.tool_kind != b.tool_kind,
            Self::DecidedBy => a.decided_by != b.decided_by,
            Self::Outcome => a.outcome != b.outcome,
            Self::OptionKind => a.option_kind != b.option_kind,
        }
    }
}

/// The side of the one item of a change that only one side has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    A,
    B,
}

/// One difference the engine found. `turn` is numbered from 1; `n` is an item's position on
/// its side, from 1 (for two paired items, that of `a`'s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Change<'s> {
    /// A turn only one side has.
    Turn {
        turn: usize,
        side: Side,
        shape: &'s TurnShape,
    },
    /// A field of two paired turns.
    TurnField {
        turn: usize,
        field: TurnField,
        a: &'s TurnShape,
        b: &'s TurnShape,
    },
    /// A tool call the matcher paired with none of the other side's.
    Call {
        turn: usize,
        n: usize,
        side: Side,
        call: &'s CallShape,
    },
    /// A field of two paired tool calls.
    CallField {
        turn: usize,
        n: usize,
        field: CallField,
        a: &'s CallShape,
        b: &'s CallShape,
    },
    /// A permission request only one side has.
    Permission {
        turn: usize,
        n: usize,
        side: Side,
        permission: &'s PermissionShape,
    },
    /// A field of two paired permission requests.
    PermissionField {
        turn: usize,
        n: usize,
        field: PermissionField,
        a: &'s PermissionShape,
        b: &'s PermissionShape,
    },
}

/// The one of `a` and `b` there is (at an index below one side's length), and its side.
fn only<'s, T>(a: Option<&'s T>, b: Option<&'s T>) -> (Side, &'s T) {
    match (a, b) {
        (Some(a), _) => (Side::A, a),
        (None, Some(b)) => (Side::B, b),
        (None, None) => unreachable!("an index below neither side's length"),
    }
}

/// Every difference between `a` and `b`, turn by turn: a turn's own fields, then its tool calls
/// (`a`'s in order, each paired by `matcher` or alone, then `b`'s left alone), then its
/// permission requests; a turn on one side only is one change.
pub(crate) fn walk<'s>(a: &'s Shape, b: &'s Shape, matcher: &dyn Matcher) -> Vec<Change<'s>> {
    let mut out = Vec::new();
    for i in 0..a.turns.len().max(b.turns.len()) {
        let turn = i + 1;
        let (ta, tb) = match (a.turns.get(i), b.turns.get(i)) {
            (Some(ta), Some(tb)) => (ta, tb),
            (ta, tb) => {
                let (side, shape) = only(ta, tb);
                out.push(Change::Turn { turn, side, shape });
                continue;
            }
        };
        for field in TurnField::ALL.into_iter().filter(|f| f.differs(ta, tb)) {
            out.push(Change::TurnField {
                turn,
                field,
                a: ta,
                b: tb,
            });
        }
        let pairs = matcher.pair_calls(&ta.tool_calls, &tb.tool_calls);
        let mut paired = vec![false; tb.tool_calls.len()];
        for (j, (x, pair)) in ta.tool_calls.iter().zip(&pairs).enumerate() {
            let n = j + 1;
            let Some(k) = *pair else {
                out.push(Change::Call {
                    turn,
                    n,
                    side: Side::A,
                    call: x,
                });
                continue;
            };
            debug_assert!(!paired[k], "a call of b paired twice");
            paired[k] = true;
            let y = &tb.tool_calls[k];
            for field in CallField::ALL.into_iter().filter(|f| f.differs(x, y)) {
                out.push(Change::CallField {
                    turn,
                    n,
                    field,
                    a: x,
                    b: y,
                });
            }
        }
        for (k, y) in tb.tool_calls.iter().enumerate() {
            if !paired[k] {
                out.push(Change::Call {
                    turn,
                    n: k + 1,
                    side: Side::B,
                    call: y,
                });
            }
        }
        for j in 0..ta.permissions.len().max(tb.permissions.len()) {
            let n = j + 1;
            match (ta.permissions.get(j), tb.permissions.get(j)) {
                (Some(x), Some(y)) => {
                    for field in PermissionField::ALL.into_iter().filter(|f| f.differs(x, y)) {
                        out.push(Change::PermissionField {
                            turn,
                            n,
                            field,
                            a: x,
                            b: y,
                        });
                    }
                }
                (x, y) => {
                    let (side, permission) = only(x, y);
                    out.push(Change::Permission {
                        turn,
                        n,
                        side,
                        permission,
                    });
                }
            }
        }
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

    fn call(kind: &str, title: &str) -> CallShape {
        CallShape {
            kind: Some(kind.into()),
            title: Some(title.into()),
            ..CallShape::default()
        }
    }

    fn one_turn(calls: &[CallShape], permissions: usize) -> Shape {
        Shape {
            session_id: "s".into(),
            turns: vec![TurnShape {
                prompt: "go".into(),
                tool_calls: calls.to_vec(),
                permissions: vec![PermissionShape::default(); permissions],
                ..TurnShape::default()
            }],
        }
    }

    /// A turn's fields, then its calls (paired, then the first side's alone, then the second's),
    /// then its permission requests; a turn on one side only is one change.
    #[test]
    fn the_engine_walks_turn_by_turn_in_one_order() {
        let mut a = one_turn(&[call("read", "Read a"), call("edit", "Edit b")], 1);
        let b = one_turn(&[call("read", "Read c")], 2);
        a.turns[0].stop_reason = Some("end_turn".into());
        a.turns.push(TurnShape::default());
        let changes = walk(&a, &b, &ByOrder);
        let turn = &b.turns[0];
        assert_eq!(
            changes,
            [
                Change::TurnField {
                    turn: 1,
                    field: TurnField::StopReason,
                    a: &a.turns[0],
                    b: turn
                },
                Change::CallField {
                    turn: 1,
                    n: 1,
                    field: CallField::Title,
                    a: &a.turns[0].tool_calls[0],
                    b: &turn.tool_calls[0]
                },
                Change::Call {
                    turn: 1,
                    n: 2,
                    side: Side::A,
                    call: &a.turns[0].tool_calls[1]
                },
                Change::Permission {
                    turn: 1,
                    n: 2,
                    side: Side::B,
                    permission: &turn.permissions[1]
                },
                Change::Turn {
                    turn: 2,
                    side: Side::A,
                    shape: &a.turns[1]
                },
            ]
        );
    }

    /// The tool calls are paired by the matcher given: the same two turns differ by order, and
    /// are the same paired by title.
    #[test]
    fn the_engine_pairs_tool_calls_with_the_matcher_it_is_given() {
        struct ByTitle;
        impl Matcher for ByTitle {
            fn pair_calls(&self, a: &[CallShape], b: &[CallShape]) -> Vec<Option<usize>> {
                a.iter()
                    .map(|x| b.iter().position(|y| y.title == x.title))
                    .collect()
            }
        }
        let a = one_turn(&[call("read", "Read a"), call("edit", "Edit b")], 0);
        let b = one_turn(&[call("edit", "Edit b"), call("read", "Read a")], 0);
        assert_eq!(walk(&a, &b, &ByOrder).len(), 4, "kind and title, twice");
        assert_eq!(walk(&a, &b, &ByTitle), []);
        let c = one_turn(&[call("edit", "Edit b"), call("read", "Read z")], 0);
        assert_eq!(
            walk(&a, &c, &ByTitle),
            [
                Change::Call {
                    turn: 1,
                    n: 1,
                    side: Side::A,
                    call: &a.turns[0].tool_calls[0]
                },
                Change::Call {
                    turn: 1,
                    n: 2,
                    side: Side::B,
                    call: &c.turns[0].tool_calls[1]
                },
            ]
        );
    }
}
