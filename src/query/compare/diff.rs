//! `acptap diff`'s comparison: the engine's changes with every item paired by its order
//! ([`ByOrder`]), each said as a [`Difference`] (where, what, the two sides as JSON). Its one
//! tolerance is the timing threshold; the agent's text and a permission's tool kind are not
//! compared.

use serde::Serialize;
use serde_json::Value;

use super::{ByOrder, CallField, Change, PermissionField, Shape, Side, TurnField, walk};

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

/// `acptap diff --json`'s answer, which the inspector's diff shows as it is.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DiffReport {
    pub a: String,
    pub b: String,
    pub same: bool,
    pub differences: Vec<Difference>,
}

/// A turn whose duration moved by more than this is a difference, unless told otherwise.
pub const DEFAULT_TIMING_THRESHOLD_US: i64 = 5_000_000;

/// The differences between `a` and `b` with the two sessions' ids.
pub fn report(a: &Shape, b: &Shape, timing_threshold_us: i64) -> DiffReport {
    let differences = compare(a, b, timing_threshold_us);
    DiffReport {
        a: a.session_id.clone(),
        b: b.session_id.clone(),
        same: differences.is_empty(),
        differences,
    }
}

/// The differences between `a` and `b`; a turn's duration counts when it moved by more than
/// `timing_threshold_us`.
pub fn compare(a: &Shape, b: &Shape, timing_threshold_us: i64) -> Vec<Difference> {
    walk(a, b, &ByOrder)
        .into_iter()
        .filter_map(|change| difference(change, timing_threshold_us))
        .collect()
}

/// A change as a difference, `None` for one `acptap diff` does not count.
fn difference(change: Change, timing_threshold_us: i64) -> Option<Difference> {
    // An item one side only has: it, and null on the other side.
    fn lone<T: Serialize>(side: Side, item: &T) -> (Value, Value) {
        match side {
            Side::A => (json(item), Value::Null),
            Side::B => (Value::Null, json(item)),
        }
    }
    let (turn, what, (a, b)) = match change {
        Change::Turn { turn, side, shape } => (turn, "turn".to_owned(), lone(side, &shape.prompt)),
        Change::TurnField { turn, field, a, b } => {
            let (what, a, b) = match field {
                TurnField::Prompt => ("prompt", json(&a.prompt), json(&b.prompt)),
                TurnField::StopReason => {
                    ("stop reason", json(&a.stop_reason), json(&b.stop_reason))
                }
                TurnField::Error => ("error", json(&a.error), json(&b.error)),
                TurnField::Duration => match (a.duration_us, b.duration_us) {
                    (Some(x), Some(y)) if (x - y).abs() > timing_threshold_us => {
                        ("duration (µs)", json(&x), json(&y))
                    }
                    _ => return None,
                },
                TurnField::AgentText => return None,
            };
            (turn, what.to_owned(), (a, b))
        }
        Change::Call {
            turn,
            n,
            side,
            call,
        } => (turn, format!("tool call {n}"), lone(side, call)),
        Change::CallField {
            turn,
            n,
            field,
            a,
            b,
        } => {
            let (what, a, b) = match field {
                CallField::Kind => ("kind", json(&a.kind), json(&b.kind)),
                CallField::Title => ("title", json(&a.title), json(&b.title)),
                CallField::Status => ("status", json(&a.status), json(&b.status)),
                CallField::Paths => ("paths", json(&a.paths), json(&b.paths)),
                CallField::Content => ("content", json(&a.content), json(&b.content)),
                CallField::RawInput => ("rawInput", a.raw_input.clone(), b.raw_input.clone()),
            };
            (turn, format!("tool call {n} {what}"), (a, b))
        }
        Change::Permission {
            turn,
            n,
            side,
            permission,
        } => (turn, format!("permission {n}"), lone(side, permission)),
        Change::PermissionField {
            turn,
            n,
            field,
            a,
            b,
        } => {
            let (what, a, b) = match field {
                PermissionField::Asks => ("asks", json(&a.asks), json(&b.asks)),
                PermissionField::ToolCall => ("tool call", json(&a.tool_call), json(&b.tool_call)),
                PermissionField::ToolKind => return None,
                PermissionField::DecidedBy => {
                    ("decided by", json(&a.decided_by), json(&b.decided_by))
                }
                PermissionField::Outcome => ("outcome", json(&a.outcome), json(&b.outcome)),
                PermissionField::OptionKind => {
                    ("option", json(&a.option_kind), json(&b.option_kind))
                }
            };
            (turn, format!("permission {n} {what}"), (a, b))
        }
    };
    Some(Difference { turn, what, a, b })
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
