//! Where a live run departed from the recording it replayed: per turn, tool calls added,
//! missing or changed (kind, title, status, paths, rawInput), stop reasons, and permission
//! requests. Both sessions are read by the engine of `acptap diff` (`record::compare`), so
//! volatile fields (ids, timestamps, `_meta`) are ignored and each session's cwd is written
//! `<cwd>`; tool calls are then matched by kind and title, as a replay reorders little.

use std::fmt::Write as _;

use crate::record::Reader;
use serde_json::Value;

use crate::record::compare;
use crate::record::queries::{self, SessionRef};
use crate::terminal::{NAME_BYTES, VALUE_BYTES, terminal_line};

/// The most of one difference said: it quotes two recorded values (each cut to `VALUE_BYTES`)
/// and what is around them.
const DIFFERENCE_BYTES: usize = 3 * VALUE_BYTES;

#[derive(Debug, Default)]
pub struct Report {
    pub original: Option<SessionRef>,
    pub live: Option<SessionRef>,
    pub differences: Vec<String>,
}

impl Report {
    pub fn is_empty(&self) -> bool {
        self.differences.is_empty()
    }

    /// For a terminal: each difference on its line, whatever the recording holds
    /// (`terminal_line`).
    pub fn render(&self) -> String {
        let mut out = String::new();
        let name = |s: &Option<SessionRef>| {
            s.as_ref()
                .map(|s| {
                    format!(
                        "session {} (connection {})",
                        terminal_line(&s.session_id, NAME_BYTES),
                        s.connection_id
                    )
                })
                .unwrap_or_else(|| "no session".into())
        };
        let _ = writeln!(
            out,
            "recorded: {}\nlive:     {}",
            name(&self.original),
            name(&self.live)
        );
        for difference in &self.differences {
            let _ = writeln!(out, "  {}", terminal_line(difference, DIFFERENCE_BYTES));
        }
        let _ = writeln!(
            out,
            "{}",
            match self.differences.len() {
                0 => "no divergence".to_owned(),
                1 => "1 divergence".to_owned(),
                n => format!("{n} divergences"),
            }
        );
        out
    }
}

/// A tool call with what is compared of it.
#[derive(Debug, Clone, PartialEq)]
struct Call {
    kind: String,
    title: String,
    status: String,
    paths: Vec<String>,
    raw_input: Value,
}

#[derive(Debug, Default)]
struct Turn {
    stop_reason: Option<String>,
    agent_text: String,
    calls: Vec<Call>,
    /// (tool kind, tool title, option kind chosen) per permission request.
    permissions: Vec<(String, String, String)>,
}

/// A session's turns as the comparison engine reads them (`record::compare::shape`: the same
/// reading as `acptap diff`, each session's cwd written `<cwd>`, volatile fields of `rawInput`
/// dropped), for the replay's own matching of tool calls by kind and title.
fn turns(reader: &Reader, session: &SessionRef) -> rusqlite::Result<Vec<Turn>> {
    let shape = compare::shape(reader, session)?;
    Ok(shape
        .turns
        .into_iter()
        .map(|t| Turn {
            agent_text: t.agent_text,
            stop_reason: t
                .stop_reason
                .or_else(|| t.error.map(|e| format!("error: {e}"))),
            calls: t
                .tool_calls
                .into_iter()
                .map(|c| Call {
                    kind: c.kind.unwrap_or_default(),
                    title: c.title.unwrap_or_default(),
                    status: c.status.unwrap_or_default(),
                    paths: c.paths,
                    raw_input: c.raw_input,
                })
                .collect(),
            permissions: t
                .permissions
                .into_iter()
                .map(|p| {
                    (
                        p.tool_kind.unwrap_or_default(),
                        p.tool_call.unwrap_or_default(),
                        p.option_kind
                            .or(p.outcome)
                            .unwrap_or_else(|| "no answer".into()),
                    )
                })
                .collect(),
        })
        .collect())
}

/// The live session that stands for `original`: the one created in the same position.
fn live_session(
    reader: &Reader,
    original: &SessionRef,
    live_connection: i64,
) -> rusqlite::Result<Option<SessionRef>> {
    let sessions = |connection: i64| queries::announced_sessions(reader, connection);
    let position = sessions(original.connection_id)?
        .iter()
        .position(|s| s == &original.session_id)
        .unwrap_or(0);
    Ok(sessions(live_connection)?
        .into_iter()
        .nth(position)
        .map(|session_id| SessionRef {
            connection_id: live_connection,
            session_id,
        }))
}

/// `compare_text`: the agent's message text of each turn is compared too (`--compare text`).
pub fn compare(
    reader: &Reader,
    original: &SessionRef,
    live_connection: i64,
    compare_text: bool,
) -> rusqlite::Result<Report> {
    let mut report = Report {
        original: Some(original.clone()),
        ..Report::default()
    };
    let Some(live) = live_session(reader, original, live_connection)? else {
        report
            .differences
            .push("the live agent created no session".into());
        return Ok(report);
    };
    report.live = Some(live.clone());
    let recorded = turns(reader, original)?;
    let observed = turns(reader, &live)?;
    for (i, pair) in recorded
        .iter()
        .zip(observed.iter().map(Some).chain(std::iter::repeat(None)))
        .enumerate()
    {
        let n = i + 1;
        let (was, now) = pair;
        let Some(now) = now else {
            report
                .differences
                .push(format!("turn {n}: missing in the live run"));
            continue;
        };
        if was.stop_reason != now.stop_reason {
            report.differences.push(format!(
                "turn {n}: stop reason {} -> {}",
                terminal_line(was.stop_reason.as_deref().unwrap_or("none"), NAME_BYTES),
                terminal_line(now.stop_reason.as_deref().unwrap_or("none"), NAME_BYTES)
            ));
        }
        if compare_text && was.agent_text != now.agent_text {
            let cut = |t: &str| {
                let kept: String = t.chars().take(120).collect();
                if kept.len() < t.len() {
                    format!("{kept}…")
                } else {
                    kept
                }
            };
            report.differences.push(format!(
                "turn {n}: agent text {:?} -> {:?}",
                cut(&was.agent_text),
                cut(&now.agent_text)
            ));
        }
        compare_calls(n, &was.calls, &now.calls, &mut report.differences);
        if was.permissions != now.permissions {
            let list = |permissions: &[(String, String, String)]| {
                let items: Vec<String> = permissions
                    .iter()
                    .map(|(kind, title, answer)| {
                        format!(
                            "{} `{}` -> {}",
                            terminal_line(kind, NAME_BYTES),
                            terminal_line(title, NAME_BYTES),
                            terminal_line(answer, NAME_BYTES)
                        )
                    })
                    .collect();
                if items.is_empty() {
                    "none".to_owned()
                } else {
                    items.join(", ")
                }
            };
            report.differences.push(format!(
                "turn {n}: permission requests differ: recorded {}, live {}",
                list(&was.permissions),
                list(&now.permissions)
            ));
        }
    }
    for extra in recorded.len()..observed.len() {
        report
            .differences
            .push(format!("turn {}: not in the recording", extra + 1));
    }
    Ok(report)
}

fn compare_calls(turn: usize, recorded: &[Call], live: &[Call], out: &mut Vec<String>) {
    let mut live_left: Vec<Option<&Call>> = live.iter().map(Some).collect();
    let mut unmatched = Vec::new();
    // The same kind and title, in order; then the same kind, in order (a changed title).
    for was in recorded {
        match live_left
            .iter()
            .position(|c| c.is_some_and(|c| c.kind == was.kind && c.title == was.title))
        {
            Some(i) => describe_changes(turn, was, live_left[i].take().expect("some"), out),
            None => unmatched.push(was),
        }
    }
    for was in unmatched {
        match live_left
            .iter()
            .position(|c| c.is_some_and(|c| c.kind == was.kind))
        {
            Some(i) => describe_changes(turn, was, live_left[i].take().expect("some"), out),
            None => out.push(format!(
                "turn {turn}: missing tool call: {} {:?}",
                terminal_line(&was.kind, NAME_BYTES),
                terminal_line(&was.title, NAME_BYTES)
            )),
        }
    }
    for now in live_left.into_iter().flatten() {
        out.push(format!(
            "turn {turn}: added tool call: {} {:?}",
            terminal_line(&now.kind, NAME_BYTES),
            terminal_line(&now.title, NAME_BYTES)
        ));
    }
}

fn describe_changes(turn: usize, was: &Call, now: &Call, out: &mut Vec<String>) {
    let what = format!(
        "turn {turn}: tool call {} {:?}",
        terminal_line(&was.kind, NAME_BYTES),
        terminal_line(&was.title, NAME_BYTES)
    );
    if was.title != now.title {
        out.push(format!(
            "{what}: title -> {:?}",
            terminal_line(&now.title, NAME_BYTES)
        ));
    }
    if was.status != now.status {
        out.push(format!(
            "{what}: status {} -> {}",
            terminal_line(&was.status, NAME_BYTES),
            terminal_line(&now.status, NAME_BYTES)
        ));
    }
    if was.paths != now.paths {
        out.push(format!("{what}: paths {:?} -> {:?}", was.paths, now.paths));
    }
    if was.raw_input != now.raw_input {
        out.push(format!(
            "{what}: rawInput {} -> {}",
            was.raw_input, now.raw_input
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(kind: &str, title: &str, status: &str) -> Call {
        Call {
            kind: kind.into(),
            title: title.into(),
            status: status.into(),
            paths: vec![],
            raw_input: Value::Null,
        }
    }

    #[test]
    fn calls_are_matched_by_kind_and_title_then_kind() {
        let mut out = Vec::new();
        compare_calls(
            1,
            &[
                c("read", "Read a", "completed"),
                c("search", "Find x", "completed"),
                c("execute", "cargo test", "failed"),
            ],
            &[
                c("read", "Read a", "completed"),
                c("search", "Find y", "completed"),
                c("edit", "Edit b", "completed"),
            ],
            &mut out,
        );
        assert_eq!(
            out,
            vec![
                "turn 1: tool call search \"Find x\": title -> \"Find y\"",
                "turn 1: missing tool call: execute \"cargo test\"",
                "turn 1: added tool call: edit \"Edit b\"",
            ]
        );
    }
}
