//! Where a session's time went, as spans on a time line: the inspector's waterfall and the HTML
//! report's picture of a turn.
//!
//! A turn's spans, one lane each:
//! - `turn`: the prompt turn, from `session/prompt` to its answer;
//! - `tool_call`: each tool call first seen in the turn, from its first report to the update
//!   that made it `completed` or `failed` (still open when it never did);
//! - `permission`: each permission request, from asked to answered, its `state` saying who
//!   decided (`user`, `policy`, `cancelled`, or `waiting`);
//! - `request`: every other request sent during the turn, either way (the client's answers to
//!   `fs/*` and `terminal/*`, a mode set, an extension), from the request to its response;
//! - `model`: the stretches of the turn during which none of the above was open, at least
//!   [`MODEL_MIN_US`] long: the agent thinking (or writing) with nothing else to wait for.
//!
//! A turn holds what was recorded from its `session/prompt` up to the next turn's (as
//! `acptap show` numbers and fills turns); a tool call belongs to the turn during which it was
//! first seen. A session's picture is its turns on one axis whose idle stretches (no turn
//! running for at least [`IDLE_MIN_US`]) the page draws compressed.
//!
//! Reads are bounded by the turns asked for: a page of 100 turns of a 60,000-turn session reads
//! those turns' lines, tool calls and permission requests, and the session's turn rows.

use std::ops::Range;

use rusqlite::params;
use serde::Serialize;
use serde_json::Value;

use super::{Reader, SessionRef, Turn, turns, turns_from};

/// A stretch with no turn running at least this long is idle: the page compresses it.
pub const IDLE_MIN_US: i64 = 1_000_000;
/// The longest idle stretches kept (the others are drawn at their length).
pub const MAX_IDLE: usize = 1_000;
/// A model stretch shorter than this is not drawn (the time between two lines read together).
pub const MODEL_MIN_US: i64 = 1_000;
/// The spans of one turn are cut after this many (the page says how many were left out).
pub const MAX_SPANS_PER_TURN: usize = 5_000;

/// A session's time line: from its first turn's start to its last turn's end, and the idle
/// stretches between turns.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Axis {
    pub start_us: i64,
    pub end_us: i64,
    pub turns: usize,
    /// The longest idle stretches, in order of time.
    pub idle: Vec<Stretch>,
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct Stretch {
    pub start_us: i64,
    pub end_us: i64,
}

/// One turn and its spans.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TurnSpans {
    /// From 1, as `acptap show` numbers turns.
    pub index: usize,
    pub start_us: i64,
    /// The end of the turn's answer, else of the last thing recorded in it.
    pub end_us: i64,
    pub spans: Vec<Span>,
    /// Spans left out past [`MAX_SPANS_PER_TURN`].
    pub cut: usize,
}

/// The lane a span is drawn in.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Lane {
    Turn,
    Model,
    ToolCall,
    Permission,
    Request,
}

/// What a click on a span opens: a row of one of the session's lists.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "tab", rename_all = "snake_case")]
pub enum Target {
    /// The Timeline's turn (from 1).
    Turns { index: usize },
    /// The Tool calls list's call.
    Tools { tool_call_id: String },
    /// The Permissions list's request, by the seq of its line.
    Permissions { request_seq: i64 },
    /// The Raw lines list's line.
    Lines { seq: i64 },
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Span {
    pub lane: Lane,
    pub start_us: i64,
    /// `None` while it never ended (a tool call never completed, a request never answered).
    pub end_us: Option<i64>,
    pub label: String,
    /// A turn's stop reason (`error`, `unfinished`); a tool call's status; who decided a
    /// permission (`user`, `policy`, `cancelled`, `waiting`); a request's `answered`, `error`
    /// or `unanswered`; `thinking` for the model.
    pub state: String,
    /// A tool call's kind, a permission's chosen option kind, a request's sender (`client`,
    /// `agent`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The policy rule that decided a permission.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// A failed tool call, an error response, a turn that ended in an error.
    pub failed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
}

impl Span {
    fn end_or(&self, open_until: i64) -> i64 {
        self.end_us.unwrap_or(open_until).max(self.start_us)
    }
}

/// A session's axis: its turns' extent and the idle stretches between them.
pub fn axis(reader: &Reader, session: &SessionRef) -> rusqlite::Result<Axis> {
    Ok(axis_of(&turns(reader, session)?))
}

fn turn_end(turn: &Turn) -> i64 {
    turn.ended_at
        .unwrap_or(turn.started_at)
        .max(turn.started_at)
}

fn axis_of(all: &[Turn]) -> Axis {
    let start_us = all.first().map_or(0, |t| t.started_at);
    let mut end_us = start_us;
    let mut idle = Vec::new();
    for turn in all {
        if turn.started_at - end_us >= IDLE_MIN_US {
            idle.push(Stretch {
                start_us: end_us,
                end_us: turn.started_at,
            });
        }
        end_us = end_us.max(turn_end(turn));
    }
    if idle.len() > MAX_IDLE {
        idle.sort_by_key(|s| std::cmp::Reverse(s.end_us - s.start_us));
        idle.truncate(MAX_IDLE);
        idle.sort_by_key(|s| s.start_us);
    }
    Axis {
        start_us,
        end_us,
        turns: all.len(),
        idle,
    }
}

/// The spans of the session's turns numbered `range` (from 0), in order.
pub fn turn_spans(
    reader: &Reader,
    session: &SessionRef,
    range: Range<usize>,
) -> rusqlite::Result<Vec<TurnSpans>> {
    // The turns asked for and the one after them; their numbers are from `range.start`.
    let offset = range.start;
    let wanted = range.end.saturating_sub(range.start);
    let as_sql = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    let all = turns_from(
        reader,
        session,
        as_sql(offset),
        as_sql(wanted).saturating_add(1),
    )?;
    // The turns asked for; the one after them, if any, is where the last one's lines end.
    let (turns, next) = all.split_at(wanted.min(all.len()));
    let Some(first) = turns.first() else {
        return Ok(Vec::new());
    };
    let (seq_from, time_from) = (first.request_seq, first.started_at);
    let (seq_to, time_to) = next
        .first()
        .map_or((i64::MAX, i64::MAX), |t| (t.request_seq, t.started_at));
    let place_by_seq = |seq: i64| {
        let at = turns.partition_point(|t| t.request_seq <= seq);
        at.checked_sub(1)
    };
    let place_by_time = |ts: i64| {
        let at = turns.partition_point(|t| t.started_at <= ts);
        at.checked_sub(1)
    };
    let mut out: Vec<TurnSpans> = turns
        .iter()
        .enumerate()
        .map(|(i, t)| TurnSpans {
            index: offset + i + 1,
            start_us: t.started_at,
            end_us: turn_end(t),
            spans: vec![turn_span(t, offset + i + 1)],
            cut: 0,
        })
        .collect();
    let conn = reader.conn();

    let mut tool_calls = conn.prepare_cached(
        "SELECT tool_call_id, title, kind, status, first_seen_at, last_updated_at FROM tool_calls
         WHERE connection_id = ?1 AND session_id = ?2 AND first_seen_at >= ?3 AND first_seen_at < ?4
         ORDER BY first_seen_at, id",
    )?;
    let mut rows = tool_calls.query(params![
        session.connection_id,
        session.session_id,
        time_from,
        time_to
    ])?;
    while let Some(row) = rows.next()? {
        let id: String = row.get(0)?;
        let status: Option<String> = row.get(3)?;
        let start: i64 = row.get(4)?;
        let ended = matches!(status.as_deref(), Some("completed" | "failed"));
        let span = Span {
            lane: Lane::ToolCall,
            start_us: start,
            end_us: ended.then(|| row.get::<_, i64>(5)).transpose()?,
            label: row
                .get::<_, Option<String>>(1)?
                .unwrap_or_else(|| id.clone()),
            failed: status.as_deref() == Some("failed"),
            state: status.unwrap_or_else(|| "pending".to_owned()),
            kind: row.get(2)?,
            rule: None,
            target: Some(Target::Tools { tool_call_id: id }),
        };
        if let Some(at) = place_by_time(start) {
            out[at].spans.push(span);
        }
    }

    let mut permissions = conn.prepare_cached(
        "SELECT p.request_seq, p.requested_at, p.decided_at, p.outcome, p.option_kind,
                p.decided_by, p.policy_rule, p.title, k.title, p.tool_call_id
         FROM permission_requests p
         LEFT JOIN tool_calls k ON k.connection_id = p.connection_id
              AND k.session_id = p.session_id AND k.tool_call_id = p.tool_call_id
         WHERE p.connection_id = ?1 AND p.session_id = ?2 AND p.request_seq >= ?3 AND p.request_seq < ?4
         ORDER BY p.request_seq",
    )?;
    let mut rows = permissions.query(params![
        session.connection_id,
        session.session_id,
        seq_from,
        seq_to
    ])?;
    while let Some(row) = rows.next()? {
        let seq: i64 = row.get(0)?;
        let outcome: Option<String> = row.get(3)?;
        let decided_by: Option<String> = row.get(5)?;
        let state = match decided_by.as_deref() {
            Some("client") => "user".to_owned(),
            Some(other) => other.to_owned(),
            None if outcome.as_deref() == Some("cancelled") => "cancelled".to_owned(),
            None => "waiting".to_owned(),
        };
        let label: Option<String> = [row.get::<_, Option<String>>(7)?, row.get(8)?, row.get(9)?]
            .into_iter()
            .flatten()
            .next();
        let label = label.unwrap_or_else(|| "permission".to_owned());
        let span = Span {
            lane: Lane::Permission,
            start_us: row.get(1)?,
            end_us: row.get(2)?,
            label,
            state,
            kind: row.get(4)?,
            rule: row.get(6)?,
            failed: outcome.as_deref() == Some("error"),
            target: Some(Target::Permissions { request_seq: seq }),
        };
        if let Some(at) = place_by_seq(seq) {
            out[at].spans.push(span);
        }
    }

    // Every other request of the session during these turns, and the responses in the same
    // stretch of lines (a response recorded after the next turn began is not looked for: the
    // request shows as unanswered).
    let mut lines = conn.prepare_cached(
        "SELECT seq, ts, kind, direction, method, reply_to_seq, CAST(raw AS TEXT) FROM messages
         WHERE connection_id = ?1 AND seq >= ?2 AND seq < ?3 AND kind IN ('request', 'response')
           AND (method IS NULL OR method NOT IN ('session/prompt', 'session/request_permission'))
         ORDER BY seq",
    )?;
    let mut rows = lines.query(params![session.connection_id, seq_from, seq_to])?;
    let mut open: std::collections::HashMap<i64, (usize, usize)> = Default::default();
    while let Some(row) = rows.next()? {
        let seq: i64 = row.get(0)?;
        let ts: i64 = row.get(1)?;
        let kind: String = row.get(2)?;
        let raw: Option<String> = row.get(6)?;
        let json = raw
            .as_deref()
            .and_then(|r| serde_json::from_str::<Value>(r).ok());
        if kind == "response" {
            let Some(request) = row.get::<_, Option<i64>>(5)? else {
                continue;
            };
            if let Some((turn, index)) = open.remove(&request) {
                let span = &mut out[turn].spans[index];
                let failed = json.as_ref().is_some_and(|j| j.get("error").is_some());
                span.end_us = Some(ts);
                span.failed = failed;
                span.state = if failed { "error" } else { "answered" }.to_owned();
            }
            continue;
        }
        let Some(json) = json else { continue };
        let params = json.get("params");
        // A request that names no session (`initialize`, a `session/new` of another session)
        // is the connection's, not the turn's.
        let for_this_session = params
            .and_then(|p| p.get("sessionId"))
            .and_then(Value::as_str)
            .is_some_and(|s| s == session.session_id);
        let Some(at) = place_by_seq(seq).filter(|_| for_this_session) else {
            continue;
        };
        let method: String = row.get::<_, Option<String>>(4)?.unwrap_or_default();
        let about = params
            .and_then(|p| {
                ["path", "command", "modeId", "terminalId"]
                    .iter()
                    .find_map(|k| p.get(*k).and_then(Value::as_str))
            })
            .map(|a| format!("{method} {a}"));
        let direction: String = row.get(3)?;
        out[at].spans.push(Span {
            lane: Lane::Request,
            start_us: ts,
            end_us: None,
            label: about.unwrap_or(method),
            state: "unanswered".to_owned(),
            kind: Some(
                if direction == "a2c" {
                    "agent"
                } else {
                    "client"
                }
                .to_owned(),
            ),
            rule: None,
            failed: false,
            target: Some(Target::Lines { seq }),
        });
        open.insert(seq, (at, out[at].spans.len() - 1));
    }

    for turn in &mut out {
        finish(turn);
    }
    Ok(out)
}

fn turn_span(turn: &Turn, index: usize) -> Span {
    let state = match (&turn.stop_reason, &turn.error) {
        (Some(reason), _) => reason.clone(),
        (None, Some(_)) => "error".to_owned(),
        (None, None) => "unfinished".to_owned(),
    };
    Span {
        lane: Lane::Turn,
        start_us: turn.started_at,
        end_us: turn.ended_at,
        label: format!("turn {index}"),
        failed: turn.error.is_some(),
        state,
        kind: None,
        rule: None,
        target: Some(Target::Turns { index }),
    }
}

/// Adds the model's stretches (the turn's time during which nothing else was open), sorts the
/// spans by start (the turn first), and cuts them at [`MAX_SPANS_PER_TURN`].
fn finish(turn: &mut TurnSpans) {
    let open_until = turn
        .spans
        .iter()
        .map(|s| s.end_us.unwrap_or(s.start_us))
        .chain([turn.end_us])
        .max()
        .unwrap_or(turn.start_us);
    if turn.spans[0].end_us.is_none() {
        turn.end_us = open_until;
    }
    let mut busy: Vec<(i64, i64)> = turn.spans[1..]
        .iter()
        .map(|s| (s.start_us, s.end_or(open_until)))
        .collect();
    busy.sort_unstable();
    let mut model = Vec::new();
    let mut free_from = turn.start_us;
    // The model's stretches lie within the turn, whatever was recorded after its answer.
    for (start, end) in busy.into_iter().chain([(turn.end_us, turn.end_us)]) {
        let start = start.min(turn.end_us);
        if start - free_from >= MODEL_MIN_US {
            model.push(Span {
                lane: Lane::Model,
                start_us: free_from,
                end_us: Some(start),
                label: "model".to_owned(),
                state: "thinking".to_owned(),
                kind: None,
                rule: None,
                failed: false,
                target: None,
            });
        }
        free_from = free_from.max(end);
    }
    turn.spans.extend(model);
    turn.spans[1..].sort_by_key(|s| (s.start_us, s.lane));
    if turn.spans.len() > MAX_SPANS_PER_TURN {
        turn.cut = turn.spans.len() - MAX_SPANS_PER_TURN;
        turn.spans.truncate(MAX_SPANS_PER_TURN);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(start: i64, end: Option<i64>) -> Turn {
        Turn {
            request_seq: start,
            response_seq: end,
            started_at: start,
            ended_at: end,
            duration_us: end.map(|e| e - start),
            stop_reason: end.map(|_| "end_turn".to_owned()),
            error: None,
            cancel_requested_at: None,
        }
    }

    #[test]
    fn idle_stretches_are_the_long_gaps_between_turns() {
        let axis = axis_of(&[
            turn(0, Some(10)),
            turn(10 + IDLE_MIN_US - 1, Some(2 * IDLE_MIN_US)),
            turn(5 * IDLE_MIN_US, None),
        ]);
        assert_eq!(axis.start_us, 0);
        assert_eq!(axis.end_us, 5 * IDLE_MIN_US);
        assert_eq!(
            axis.idle,
            vec![Stretch {
                start_us: 2 * IDLE_MIN_US,
                end_us: 5 * IDLE_MIN_US
            }]
        );
    }

    #[test]
    fn only_the_longest_idle_stretches_are_kept_in_order() {
        let mut all = Vec::new();
        let mut at = 0;
        for i in 0..(MAX_IDLE as i64 + 10) {
            all.push(turn(at, Some(at + 1)));
            at += 1 + IDLE_MIN_US + i;
        }
        let axis = axis_of(&all);
        assert_eq!(axis.idle.len(), MAX_IDLE);
        assert!(axis.idle.windows(2).all(|w| w[0].start_us < w[1].start_us));
        // MAX_IDLE + 9 gaps between the turns: the nine shortest (the first nine) are left out.
        assert_eq!(axis.idle[0].end_us - axis.idle[0].start_us, IDLE_MIN_US + 9);
    }

    #[test]
    fn model_time_is_what_nothing_else_covers() {
        let span = |lane, start, end| Span {
            lane,
            start_us: start,
            end_us: end,
            label: String::new(),
            state: String::new(),
            kind: None,
            rule: None,
            failed: false,
            target: None,
        };
        let mut t = TurnSpans {
            index: 1,
            start_us: 0,
            end_us: 100_000,
            spans: vec![
                span(Lane::Turn, 0, Some(100_000)),
                span(Lane::ToolCall, 10_000, Some(30_000)),
                span(Lane::Permission, 20_000, Some(40_000)),
                span(Lane::Request, 40_500, Some(41_000)),
                span(Lane::ToolCall, 90_000, None),
                // Recorded after the turn's answer: no model time after the turn.
                span(Lane::Request, 150_000, Some(160_000)),
            ],
            cut: 0,
        };
        finish(&mut t);
        let model: Vec<_> = t
            .spans
            .iter()
            .filter(|s| s.lane == Lane::Model)
            .map(|s| (s.start_us, s.end_us.unwrap()))
            .collect();
        // 40,000..40,500 is shorter than MODEL_MIN_US; the open tool call runs to the end.
        assert_eq!(model, vec![(0, 10_000), (41_000, 90_000)]);
        assert_eq!(t.spans[0].lane, Lane::Turn);
        assert!(
            t.spans[1..]
                .windows(2)
                .all(|w| w[0].start_us <= w[1].start_us)
        );
    }

    #[test]
    fn a_turn_holds_its_own_sessions_requests_and_no_model_time_past_its_answer() {
        use serde_json::json;
        let prompt = |id: i64, s: &str| json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt", "params": {"sessionId": s, "prompt": []}});
        let (_dir, reader, connection_id) = crate::query::testing::imported(
            &crate::query::testing::transcript(&[
                (
                    0.0,
                    "c2a",
                    json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/p", "mcpServers": []}}),
                ),
                (
                    0.01,
                    "a2c",
                    json!({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "a"}}),
                ),
                (1.0, "c2a", prompt(2, "a")),
                (
                    1.02,
                    "a2c",
                    json!({"jsonrpc": "2.0", "id": 7, "method": "fs/read_text_file", "params": {"sessionId": "a", "path": "/p/x"}}),
                ),
                (
                    1.03,
                    "c2a",
                    json!({"jsonrpc": "2.0", "id": 7, "result": {"content": ""}}),
                ),
                (
                    1.1,
                    "a2c",
                    json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}),
                ),
                // Another session made after turn 1's answer: not turn 1's.
                (
                    1.2,
                    "c2a",
                    json!({"jsonrpc": "2.0", "id": 3, "method": "session/new", "params": {"cwd": "/p", "mcpServers": []}}),
                ),
                (
                    1.25,
                    "a2c",
                    json!({"jsonrpc": "2.0", "id": 3, "result": {"sessionId": "b"}}),
                ),
                (
                    1.3,
                    "a2c",
                    json!({"jsonrpc": "2.0", "id": 8, "method": "fs/read_text_file", "params": {"sessionId": "b", "path": "/p/y"}}),
                ),
                (
                    1.31,
                    "c2a",
                    json!({"jsonrpc": "2.0", "id": 8, "error": {"code": -32002, "message": "no"}}),
                ),
            ]),
        );
        let a = SessionRef {
            connection_id,
            session_id: "a".into(),
        };
        let turns = turn_spans(&reader, &a, 0..10).unwrap();
        assert_eq!(turns.len(), 1);
        let t = &turns[0];
        let lanes: Vec<(Lane, &str, &str)> = t
            .spans
            .iter()
            .map(|s| (s.lane, s.label.as_str(), s.state.as_str()))
            .collect();
        assert_eq!(
            lanes,
            [
                (Lane::Turn, "turn 1", "end_turn"),
                (Lane::Model, "model", "thinking"),
                (Lane::Request, "fs/read_text_file /p/x", "answered"),
                (Lane::Model, "model", "thinking"),
            ]
        );
        for s in &t.spans {
            assert!(
                s.start_us >= t.start_us && s.end_us.unwrap() <= t.end_us,
                "{s:?}"
            );
        }
        let request = &t.spans[2];
        assert_eq!(request.kind.as_deref(), Some("agent"));
        assert_eq!(request.target, Some(Target::Lines { seq: 3 }));
        assert_eq!(request.end_us.unwrap() - request.start_us, 10_000);
    }
}
