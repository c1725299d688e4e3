//! `acptap check` over a recording: a connection's lines read from the database one at a time
//! and given to the (pure) checker, and its findings placed in the session and the prompt turn
//! of their line (`acptap ui`'s findings of a session).
//!
//! `acptap check SESSION`, `acptap run --check`, MCP's `check_session` and the UI read a
//! recording through [`check_connection`], and the command line and the UI silence rules the
//! same way ([`check::Outcome::silence`]), so what the UI shows is what `acptap check SESSION
//! --json` prints.

// `session_findings` is for `acptap ui` (src/ui/api.rs), which calls it from its own change:
// until then nothing outside the tests does.

use std::collections::HashMap;

use rusqlite::{OptionalExtension, params};
use serde::Serialize;

use super::{Reader, SessionRef, Turn};
use crate::check::{self, Checker, Direction, Finding, Line, Outcome};

/// A recorded connection, checked.
#[derive(Debug, Clone)]
pub(crate) struct CheckedConnection {
    /// The findings (none silenced yet) and the agent's name and version.
    pub outcome: Outcome,
    /// The lines checked: those of the two protocol streams (the agent's stderr is not).
    pub lines: usize,
}

/// Checks a recorded connection: its protocol lines (both directions, not stderr), in order,
/// read one at a time (a connection of hundreds of thousands of lines is never held whole).
pub(crate) fn check_connection(
    reader: &Reader,
    connection_id: i64,
) -> rusqlite::Result<CheckedConnection> {
    let mut statement = reader.conn().prepare(
        "SELECT seq, direction, raw FROM messages
         WHERE connection_id = ?1 AND direction IN ('c2a', 'a2c') ORDER BY seq",
    )?;
    let mut rows = statement.query([connection_id])?;
    let mut checker = Checker::default();
    let mut lines = 0;
    while let Some(row) = rows.next()? {
        let name = row.get_ref(1)?.as_str()?;
        let Some(direction) = Direction::from_recorded(name).and_then(Direction::on_the_pipe)
        else {
            continue;
        };
        let raw = match row.get_ref(2)? {
            rusqlite::types::ValueRef::Blob(bytes) | rusqlite::types::ValueRef::Text(bytes) => {
                bytes
            }
            _ => &[],
        };
        lines += 1;
        checker.line(&Line {
            seq: row.get(0)?,
            direction,
            raw,
        });
    }
    Ok(CheckedConnection {
        outcome: checker.finish(),
        lines,
    })
}

/// What `acptap check SESSION --json` finds, placed in the sessions and turns of the recording.
#[derive(Debug, Serialize)]
pub(crate) struct SessionFindings {
    /// The findings of the session's whole connection (every session of it: a check reads a
    /// connection), in the order `acptap check --json` prints them (by seq), silenced ones left
    /// out.
    pub findings: Vec<PlacedFinding>,
    /// How many findings the silences left out.
    pub silenced: usize,
    /// The agent's name and version as it answered `initialize` ("Gemini CLI 0.61.0"): what
    /// `[check.silence]` matches.
    pub agent: Option<String>,
}

/// A finding, and where it is in the recording.
#[derive(Debug, Serialize)]
pub(crate) struct PlacedFinding {
    /// `rule`, `severity`, `seq`, `direction`, `message`, `spec`: exactly what `acptap check
    /// --json` prints of it.
    #[serde(flatten)]
    pub finding: Finding,
    /// What the rule is about, in one sentence (the rule's summary, as `acptap check` lists it).
    pub summary: &'static str,
    /// The session of the line at `seq` (`messages.session_id`, or for a response its
    /// request's); `None` for a line of the connection (`initialize`, a response to an id
    /// nobody sent, a line that is not JSON).
    pub session_id: Option<String>,
    /// The prompt turn of that session the line falls in, numbered from 1 as `acptap show`
    /// numbers them (the session's turns by their `session/prompt`): the turn whose request is
    /// at or before the line and whose response is at or after it (or not yet recorded);
    /// `None` for a line outside every turn (before the first, between two). A line that names
    /// no session is placed among the turns of the session asked for.
    pub turn: Option<i64>,
}

/// The findings `acptap check SESSION --json` prints: the session's whole connection checked,
/// without the findings `silenced(agent, rule)` names (the command line passes its config's
/// `check.silenced`), each placed in its line's session and prompt turn.
pub(crate) fn session_findings(
    reader: &Reader,
    session: &SessionRef,
    silenced: impl Fn(Option<&str>, &str) -> bool,
) -> rusqlite::Result<SessionFindings> {
    let CheckedConnection { mut outcome, .. } = check_connection(reader, session.connection_id)?;
    let silenced = outcome.silence(silenced);
    let mut session_of = reader
        .conn()
        // A response names no session of its own (but for a permission's): its request's.
        .prepare_cached(
            "SELECT coalesce(m.session_id, q.session_id) FROM messages m
             LEFT JOIN messages q ON q.connection_id = m.connection_id AND q.seq = m.reply_to_seq
             WHERE m.connection_id = ?1 AND m.seq = ?2",
        )?;
    let mut turns: HashMap<String, Vec<Turn>> = HashMap::new();
    let mut findings = Vec::with_capacity(outcome.findings.len());
    for finding in outcome.findings {
        let session_id: Option<String> = session_of
            .query_row(params![session.connection_id, finding.seq], |r| r.get(0))
            .optional()?
            .flatten();
        // A line that names no session, nor does its request (a response to an unknown id, a
        // line that is not JSON), is placed in the turn of the session asked for that it falls
        // in.
        let id = session_id.as_ref().unwrap_or(&session.session_id);
        if !turns.contains_key(id) {
            let of = SessionRef {
                connection_id: session.connection_id,
                session_id: id.clone(),
            };
            turns.insert(id.clone(), super::turns(reader, &of)?);
        }
        let turn = turn_of(&turns[id], finding.seq);
        findings.push(PlacedFinding {
            summary: check::rule(finding.rule).map_or("", |r| r.summary),
            finding,
            session_id,
            turn,
        });
    }
    Ok(SessionFindings {
        findings,
        silenced,
        agent: outcome.agent,
    })
}

/// The number (from 1) of the turn of `turns` (in request order) that `seq` falls in.
fn turn_of(turns: &[Turn], seq: i64) -> Option<i64> {
    let i = turns
        .partition_point(|t| t.request_seq <= seq)
        .checked_sub(1)?;
    let within = turns[i].response_seq.is_none_or(|end| seq <= end);
    within.then(|| i64::try_from(i + 1).unwrap_or(i64::MAX))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn turn(request_seq: i64, response_seq: Option<i64>) -> Turn {
        Turn {
            request_seq,
            response_seq,
            started_at: 0,
            ended_at: None,
            duration_us: None,
            stop_reason: None,
            error: None,
            cancel_requested_at: None,
        }
    }

    #[test]
    fn a_line_falls_in_the_turn_that_spans_it() {
        let turns = [turn(5, Some(10)), turn(12, Some(20)), turn(25, None)];
        let at = |seq| turn_of(&turns, seq);
        assert_eq!(at(4), None);
        assert_eq!((at(5), at(7), at(10)), (Some(1), Some(1), Some(1)));
        assert_eq!(at(11), None);
        assert_eq!((at(12), at(20)), (Some(2), Some(2)));
        assert_eq!(at(21), None);
        assert_eq!((at(25), at(1_000)), (Some(3), Some(3)));
        assert_eq!(turn_of(&[], 3), None);
    }

    /// The Gemini sample with three deviations: noise on stdout before the turn, a response to
    /// an id never sent within the turn, and the client sending `session/update` after it.
    pub(crate) fn broken_gemini() -> String {
        let sample = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/gemini-acpx-basic-approve-all.jsonl"
        ))
        .unwrap();
        let mut lines: Vec<(String, String)> = sample
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                (
                    v["dir"].as_str().unwrap().to_owned(),
                    v["text"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let session = "e6553fe2-7256-4d49-be2a-0bb86f3084ff";
        lines.push((
            "c2a".into(),
            serde_json::json!({"jsonrpc": "2.0", "method": "session/update", "params": {
                "sessionId": session,
                "update": {"sessionUpdate": "agent_message_chunk",
                           "content": {"type": "text", "text": "hi"}}}})
            .to_string(),
        ));
        lines.insert(
            8,
            (
                "a2c".into(),
                r#"{"jsonrpc":"2.0","id":99,"result":{}}"#.into(),
            ),
        );
        lines.insert(5, ("a2c".into(), "Loading model weights...".into()));
        lines
            .iter()
            .enumerate()
            .map(|(i, (dir, text))| {
                serde_json::json!({"seq": i, "t": i as f64 / 1000.0, "dir": dir, "eol": true, "text": text})
                    .to_string()
                    + "\n"
            })
            .collect()
    }

    #[test]
    fn findings_are_placed_in_their_session_and_turn() {
        let (_dir, reader, connection_id) = crate::query::testing::imported(&broken_gemini());
        let session = SessionRef {
            connection_id,
            session_id: "e6553fe2-7256-4d49-be2a-0bb86f3084ff".into(),
        };
        let found = session_findings(&reader, &session, |_, _| false).unwrap();
        assert_eq!(found.agent.as_deref(), Some("Gemini CLI 0.61.0"));
        assert_eq!(found.silenced, 0);
        let placed: Vec<(&str, i64, Option<&str>, Option<i64>)> = found
            .findings
            .iter()
            .map(|f| {
                (
                    f.finding.rule,
                    f.finding.seq,
                    f.session_id.as_deref(),
                    f.turn,
                )
            })
            .collect();
        let s = Some(session.session_id.as_str());
        assert_eq!(
            placed,
            [
                ("acp/agent-stdout-noise", 5, None, None),
                // A line of no session, in the turn of the session asked for.
                ("rpc/unknown-response", 9, None, Some(1)),
                ("acp/tool-call-unannounced", 22, s, Some(1)),
                ("acp/tool-call-unannounced", 26, s, Some(1)),
                // After the turn's answer (seq 28).
                ("acp/wrong-direction", 29, s, None),
            ]
        );
    }

    #[test]
    fn a_response_is_placed_in_its_requests_session() {
        use serde_json::json;
        let new = |id: i64| json!({"jsonrpc": "2.0", "id": id, "method": "session/new", "params": {"cwd": "/p", "mcpServers": []}});
        let made =
            |id: i64, s: &str| json!({"jsonrpc": "2.0", "id": id, "result": {"sessionId": s}});
        let transcript = crate::query::testing::transcript_in_seconds(&[
            (
                "c2a",
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": true}}}}),
            ),
            (
                "a2c",
                json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}}),
            ),
            ("c2a", new(1)),
            ("a2c", made(1, "a")),
            ("c2a", new(2)),
            ("a2c", made(2, "b")),
            (
                "c2a",
                json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": "a", "prompt": []}}),
            ),
            (
                "c2a",
                json!({"jsonrpc": "2.0", "id": 4, "method": "session/prompt", "params": {"sessionId": "b", "prompt": []}}),
            ),
            (
                "a2c",
                json!({"jsonrpc": "2.0", "id": 9, "method": "fs/read_text_file", "params": {"sessionId": "b", "path": "/p/x"}}),
            ),
            // Both a result and an error: a finding on a line of b's, though it names no session.
            (
                "c2a",
                json!({"jsonrpc": "2.0", "id": 9, "result": {"content": ""}, "error": {"code": 1, "message": "x"}}),
            ),
            (
                "a2c",
                json!({"jsonrpc": "2.0", "id": 4, "result": {"stopReason": "end_turn"}}),
            ),
            (
                "a2c",
                json!({"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "end_turn"}}),
            ),
        ]);
        let (_dir, reader, connection_id) = crate::query::testing::imported(&transcript);
        let a = SessionRef {
            connection_id,
            session_id: "a".into(),
        };
        let found = session_findings(&reader, &a, |_, _| false).unwrap();
        let placed: Vec<_> = found
            .findings
            .iter()
            .filter(|f| f.finding.rule == "rpc/result-and-error")
            .map(|f| (f.session_id.as_deref(), f.turn))
            .collect();
        // b's turn 1, not a's.
        assert_eq!(placed, [(Some("b"), Some(1))]);
    }
}
