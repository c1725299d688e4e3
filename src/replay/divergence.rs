//! Where a live run departed from the recording it replayed: per turn, tool calls added, missing or
//! changed (title, status, paths, rawInput), stop reasons, and permission requests. Both sessions
//! are read and walked by the comparison engine `acptap diff` uses too (`query::compare`), so
//! volatile fields (ids, timestamps, `_meta`) are ignored and each session's cwd is written
//! `<cwd>`; tool calls are paired (`ByWhatItDoes`) with the live call that does the same thing (the
//! same title, else the same command, `rawInput` or paths, else most words of the title in common;
//! by kind alone only where one call of the kind is left on each side), and what is not paired is a
//! missing or added call. Of what the engine finds, the replay counts a turn's stop reason, its
//! agent text when asked (`--compare text`), a tool call's title, status, paths and `rawInput`, and
//! a permission request's question and answer, in its own words.
//!
//! What is compared follows each connection's negotiated protocol version:
//!
//! - a turn's agent text is the final text of each agent message the turn created or changed,
//!   as `protocol::conversation` assembles them (v1 chunks joined; v2 messages by `messageId`,
//!   an upsert replacing what came before), in the order they were created; updates outside a
//!   turn (the history a v2 `session/resume` replays) count for no turn;
//! - tool calls are read in their final state, after v1 updates or v2 upserts and content
//!   chunks (`protocol::toolcall`, as recorded);
//! - a turn's stop reason is, under v2, that of the `idle` that ended it; else as recorded, or
//!   the error that refused its prompt;
//! - a permission request is the tool call it asks about (kind and title) under v1; under v2,
//!   its `title` and its `subject`: a command with its cwd, a tool call by kind and title, or
//!   the subject's type;
//! - two connections that negotiated different versions are a divergence of their own.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::query::Reader;
use serde_json::Value;

use super::script::{ScriptLine, negotiated_version};
use crate::protocol::conversation::{Conversation, Role};
use crate::protocol::message::decode;
use crate::protocol::state::PermissionShapes;
use crate::protocol::version::Version;
use crate::protocol::{Direction, parse_line};
use crate::query::compare::{
    self, CallField, CallShape, Change, Matcher, PermissionShape, Shape, Side, TurnField,
};
use crate::query::{self, SessionRef};
use crate::terminal::{NAME_BYTES, VALUE_BYTES, terminal_line};

/// The most of one difference said: it quotes two recorded values (each cut to `VALUE_BYTES`)
/// and what is around them.
const DIFFERENCE_BYTES: usize = 3 * VALUE_BYTES;

#[derive(Debug, Default)]
pub(crate) struct Report {
    pub original: Option<SessionRef>,
    pub live: Option<SessionRef>,
    pub differences: Vec<String>,
}

impl Report {
    pub(crate) fn is_empty(&self) -> bool {
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

/// The protocol version a recorded connection negotiated, read as the replay reads its script
/// (the session state of its first lines: `initialize` and its answer come first).
fn connection_version(reader: &Reader, connection_id: i64) -> query::Result<Option<Version>> {
    /// Enough lines to reach the answer to `initialize` of any real connection.
    const OPENING_LINES: usize = 64;
    let opening: Vec<ScriptLine> =
        query::connection_messages(reader, connection_id, 0..i64::MAX, OPENING_LINES)?
            .into_iter()
            .filter_map(|row| {
                let direction = row.direction.on_the_pipe()?;
                Some(ScriptLine {
                    seq: row.seq,
                    ts: row.ts,
                    direction,
                    message: parse_line(&row.raw),
                    raw: row.raw,
                })
            })
            .collect();
    Ok(negotiated_version(&opening))
}

/// The turn (index into `turns`) a line numbered `seq` falls in: the last prompt before it, as
/// the comparison engine attributes tool calls and permission requests.
fn turn_of(turns: &[query::Turn], seq: i64) -> Option<usize> {
    turns
        .partition_point(|t| t.request_seq <= seq)
        .checked_sub(1)
}

/// What the replay reads of a turn's own lines.
#[derive(Debug, Default)]
struct TurnLines {
    /// The final text of every agent message the turn created or changed, in the order they
    /// were created, the cwd written `<cwd>`.
    agent_text: String,
    /// v2: the stop reason of the `idle` that ended the turn.
    idle_stop_reason: Option<String>,
}

/// Each turn's [`TurnLines`]. A turn runs from its prompt to its answer (v1) or to the
/// session's `idle` `state_update` once its work was seen running (v2; an `idle` before that is
/// the state the agent reported unasked, see `replay::session_state`): what comes between turns
/// (a resumed session's history) is no turn's.
fn turn_lines(
    reader: &Reader,
    session: &SessionRef,
    turns: &[query::Turn],
    version: Option<Version>,
    cwd: Option<&str>,
) -> query::Result<Vec<TurnLines>> {
    let v2 = version.is_some_and(Version::is_v2);
    let mut conversation = Conversation::new();
    let mut touched: Vec<Vec<usize>> = vec![Vec::new(); turns.len()];
    let mut stop_reasons: Vec<Option<String>> = vec![None; turns.len()];
    let mut next_turn = 0;
    let mut open: Option<usize> = None;
    // v2: the open turn's work was seen running (an `idle` before that is a stale state).
    let mut started = false;
    query::for_each_session_line(reader, session, 0..i64::MAX, |line| {
        while turns
            .get(next_turn)
            .is_some_and(|t| t.request_seq <= line.seq)
        {
            open = Some(next_turn);
            next_turn += 1;
            started = false;
        }
        if !v2
            && let Some(turn) = open
            && turns[turn].response_seq.is_some_and(|end| line.seq > end)
        {
            open = None;
        }
        if line.direction != Direction::AgentToClient
            || line.method.as_deref() != Some("session/update")
        {
            return;
        }
        let Some(turn) = open else {
            return;
        };
        let Some(params) = decode(&line.raw).and_then(|v| v.get("params").cloned()) else {
            return;
        };
        if let Some(message) = conversation.apply(line.seq, &params)
            && !touched[turn].contains(&message)
        {
            touched[turn].push(message);
        }
        if v2 {
            match super::session_state(&params) {
                Some("idle") if started => {
                    open = None;
                    stop_reasons[turn] = params
                        .pointer("/update/stopReason")
                        .map(|r| r.as_str().map_or_else(|| r.to_string(), str::to_owned));
                }
                Some("idle") | None => {}
                Some(_) => started = true,
            }
        }
    })?;
    let messages = conversation.messages();
    Ok(touched
        .into_iter()
        .zip(stop_reasons)
        .map(|(mut indices, idle_stop_reason)| {
            indices.sort_unstable();
            let text: String = indices
                .into_iter()
                .map(|i| &messages[i])
                .filter(|m| m.role == Role::Agent)
                .map(|m| m.text())
                .collect();
            TurnLines {
                agent_text: compare::cwd_written(&text, cwd),
                idle_stop_reason,
            }
        })
        .collect())
}

/// What each turn's permission requests ask under v2: the request's `title` and its `subject`;
/// the requests of a turn in the order `compare::shape` reads them (the same rows, the same
/// turns).
fn v2_asks(
    reader: &Reader,
    session: &SessionRef,
    turns: &[query::Turn],
    cwd: Option<&str>,
) -> query::Result<Vec<Vec<String>>> {
    let calls: HashMap<String, (String, String)> = query::session_tool_calls(reader, session)?
        .into_iter()
        .map(|c| {
            let title = compare::cwd_written(c.title.as_deref().unwrap_or_default(), cwd);
            (c.tool_call_id, (c.kind.unwrap_or_default(), title))
        })
        .collect();
    let call = |id: Option<&str>| {
        let (kind, title) = id.and_then(|id| calls.get(id)).cloned().unwrap_or_default();
        format!("tool call {kind} `{title}`")
    };
    let mut out = vec![Vec::new(); turns.len()];
    for row in query::permission_requests(reader, session)? {
        let Some(turn) = turn_of(turns, row.request_seq) else {
            continue;
        };
        let request = query::connection_messages(
            reader,
            session.connection_id,
            row.request_seq..row.request_seq + 1,
            1,
        )?
        .into_iter()
        .next()
        .and_then(|m| decode(&m.raw));
        let params = request.as_ref().and_then(|r| r.get("params"));
        let text = |value: Option<&Value>| {
            compare::cwd_written(value.and_then(Value::as_str).unwrap_or_default(), cwd)
        };
        let shapes = PermissionShapes::of(params);
        let subject = shapes.subject;
        let field = |name: &str| subject.and_then(|s| s.get(name));
        let about_subject = match shapes.subject_type() {
            Some("tool_call") => call(shapes.tool_call_id()),
            Some("command") => {
                let mut described = format!(
                    "command `{}` in {}",
                    text(field("command")),
                    text(field("cwd"))
                );
                if let Some(id) = shapes.tool_call_id() {
                    described.push_str(&format!(" for {}", call(Some(id))));
                }
                described
            }
            Some(other) => format!("a `{other}` subject"),
            None if shapes.v1_tool_call.is_some() => call(shapes.tool_call_id()),
            None => "no subject".to_owned(),
        };
        out[turn].push(format!(
            "`{}` about {about_subject}",
            text(params.and_then(|p| p.get("title")))
        ));
    }
    Ok(out)
}

/// A session's shape as the replay compares it: the engine's reading (`compare::shape`: the
/// same reading as `acptap diff`, each session's cwd written `<cwd>`, volatile fields of
/// `rawInput` dropped), with a tool call's kind, title and status read as empty where it has
/// none, and the agent text, the stop reason and what a permission request asks read as the
/// module's comment says.
fn shape(reader: &Reader, session: &SessionRef, version: Option<Version>) -> query::Result<Shape> {
    let mut shape = compare::shape(reader, session)?;
    let prompts = query::turns(reader, session)?;
    let cwd = query::session_summary_of(reader, session)?.cwd;
    let mut lines = turn_lines(reader, session, &prompts, version, cwd.as_deref())?.into_iter();
    let mut v2 = match version {
        Some(Version::V2) => Some(v2_asks(reader, session, &prompts, cwd.as_deref())?.into_iter()),
        _ => None,
    };
    for turn in &mut shape.turns {
        let own = lines.next().unwrap_or_default();
        turn.agent_text = own.agent_text;
        // v2: the idle that ended the turn by the rule above (the recorder may have taken an
        // earlier one), else as recorded (a prompt refused with an error).
        turn.stop_reason = own
            .idle_stop_reason
            .or(turn.stop_reason.take())
            .or_else(|| turn.error.as_ref().map(|e| format!("error: {e}")));
        for call in &mut turn.tool_calls {
            for field in [&mut call.kind, &mut call.title, &mut call.status] {
                field.get_or_insert_default();
            }
        }
        match v2.as_mut() {
            Some(v2) => {
                let asks = v2.next().unwrap_or_default();
                debug_assert_eq!(asks.len(), turn.permissions.len());
                for (permission, asks) in turn.permissions.iter_mut().zip(asks) {
                    permission.asks = Some(asks);
                }
            }
            None => {
                for permission in &mut turn.permissions {
                    permission.asks = Some(format!(
                        "{} `{}`",
                        permission.tool_kind.as_deref().unwrap_or_default(),
                        permission.tool_call.as_deref().unwrap_or_default()
                    ));
                }
            }
        }
    }
    Ok(shape)
}

/// The live session that stands for `original`: the one created in the same position.
fn live_session(
    reader: &Reader,
    original: &SessionRef,
    live_connection: i64,
) -> query::Result<Option<SessionRef>> {
    let sessions = |connection: i64| query::announced_sessions(reader, connection);
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
) -> query::Result<Report> {
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
    let recorded_version = connection_version(reader, original.connection_id)?;
    let live_version = connection_version(reader, live_connection)?;
    if recorded_version != live_version {
        let name = |v: Option<Version>| v.map_or_else(|| "none".to_owned(), |v| v.to_string());
        report.differences.push(format!(
            "protocol version {} -> {}",
            name(recorded_version),
            name(live_version)
        ));
    }
    let recorded = shape(reader, original, recorded_version)?;
    let observed = shape(reader, &live, live_version)?;
    report
        .differences
        .extend(divergences(&recorded, &observed, compare_text));
    Ok(report)
}

/// What a permission request is compared by: what it asks, and its answer (the kind of the
/// option chosen, else the outcome).
fn asks_and_answer(permission: &PermissionShape) -> (&str, &str) {
    (
        permission.asks.as_deref().unwrap_or_default(),
        permission
            .option_kind
            .as_deref()
            .or(permission.outcome.as_deref())
            .unwrap_or("no answer"),
    )
}

/// The engine's changes from `recorded` to `live` (tool calls paired by [`ByWhatItDoes`]), in
/// the replay's words, those it counts: not a turn's prompt (the recorded one was sent), its
/// error (in the stop reason) or its duration, the agent text only with `compare_text`, not a
/// tool call's content, and a turn's permission requests once, listed whole, where what one asks
/// or its answer changed (not who decided).
fn divergences(recorded: &Shape, live: &Shape, compare_text: bool) -> Vec<String> {
    let mut out = Vec::new();
    let call = |call: &CallShape| {
        format!(
            "{} {:?}",
            terminal_line(call.kind.as_deref().unwrap_or_default(), NAME_BYTES),
            terminal_line(call.title.as_deref().unwrap_or_default(), NAME_BYTES)
        )
    };
    // The last turn whose permission requests were said.
    let mut permissions_said = None;
    for change in compare::walk(recorded, live, &ByWhatItDoes) {
        match change {
            Change::Turn { turn, side, .. } => out.push(match side {
                Side::A => format!("turn {turn}: missing in the live run"),
                Side::B => format!("turn {turn}: not in the recording"),
            }),
            Change::TurnField {
                turn,
                field: TurnField::StopReason,
                a,
                b,
            } => out.push(format!(
                "turn {turn}: stop reason {} -> {}",
                terminal_line(a.stop_reason.as_deref().unwrap_or("none"), NAME_BYTES),
                terminal_line(b.stop_reason.as_deref().unwrap_or("none"), NAME_BYTES)
            )),
            Change::TurnField {
                turn,
                field: TurnField::AgentText,
                a,
                b,
            } if compare_text => {
                let cut = |t: &str| {
                    let kept: String = t.chars().take(120).collect();
                    if kept.len() < t.len() {
                        format!("{kept}…")
                    } else {
                        kept
                    }
                };
                out.push(format!(
                    "turn {turn}: agent text {:?} -> {:?}",
                    cut(&a.agent_text),
                    cut(&b.agent_text)
                ));
            }
            Change::TurnField { .. } => {}
            Change::Call {
                turn,
                side,
                call: c,
                ..
            } => out.push(match side {
                Side::A => format!("turn {turn}: missing tool call: {}", call(c)),
                Side::B => format!("turn {turn}: added tool call: {}", call(c)),
            }),
            Change::CallField {
                turn,
                field,
                a: was,
                b: now,
                ..
            } => {
                let what = format!("turn {turn}: tool call {}", call(was));
                match field {
                    CallField::Title => out.push(format!(
                        "{what}: title -> {:?}",
                        terminal_line(now.title.as_deref().unwrap_or_default(), NAME_BYTES)
                    )),
                    CallField::Status => out.push(format!(
                        "{what}: status {} -> {}",
                        terminal_line(was.status.as_deref().unwrap_or_default(), NAME_BYTES),
                        terminal_line(now.status.as_deref().unwrap_or_default(), NAME_BYTES)
                    )),
                    CallField::Paths => {
                        out.push(format!("{what}: paths {:?} -> {:?}", was.paths, now.paths))
                    }
                    CallField::RawInput => out.push(format!(
                        "{what}: rawInput {} -> {}",
                        was.raw_input, now.raw_input
                    )),
                    // The kind: calls are paired with one of their kind only.
                    CallField::Kind | CallField::Content => {}
                }
            }
            Change::Permission { turn, .. } | Change::PermissionField { turn, .. } => {
                let counts = match change {
                    Change::PermissionField { a, b, .. } => {
                        asks_and_answer(a) != asks_and_answer(b)
                    }
                    _ => true,
                };
                if counts && permissions_said != Some(turn) {
                    permissions_said = Some(turn);
                    let list = |shape: &Shape| {
                        let items: Vec<String> = shape.turns[turn - 1]
                            .permissions
                            .iter()
                            .map(|p| {
                                let (asks, answer) = asks_and_answer(p);
                                format!(
                                    "{} -> {}",
                                    terminal_line(asks, VALUE_BYTES),
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
                    out.push(format!(
                        "turn {turn}: permission requests differ: recorded {}, live {}",
                        list(recorded),
                        list(live)
                    ));
                }
            }
        }
    }
    out
}

/// Replay's pairing of tool calls: a live call stands for a recorded one when it does the same
/// thing ([`pair_calls`]).
struct ByWhatItDoes;

impl Matcher for ByWhatItDoes {
    fn pair_calls(&self, recorded: &[CallShape], live: &[CallShape]) -> Vec<Option<usize>> {
        pair_calls(recorded, live)
    }
}

/// The live call (index into `live`) that stands for each recorded call, if any. A call is
/// paired only with one of its kind that does the same thing, surest first:
///
/// 1. the same title (the cwd written `<cwd>` on both sides), in order;
/// 2. the same command (`rawInput.command`), the same `rawInput`, or the same paths, in order;
/// 3. titles and commands that share most of their words (`touch created_by_agent.txt` and
///    `touch created_by_agent.txt && echo created`, not `ls -la`), best first;
/// 4. by kind alone only when that is unambiguous: one call of the kind left on each side.
///
/// What is left is a missing (recorded) or added (live) call: two unrelated calls of one kind
/// are not reported as one call whose title changed.
fn pair_calls(recorded: &[CallShape], live: &[CallShape]) -> Vec<Option<usize>> {
    let mut pairs: Vec<Option<usize>> = vec![None; recorded.len()];
    let mut taken = vec![false; live.len()];
    pair_in_order(recorded, live, &mut pairs, &mut taken, |was, now| {
        was.title == now.title
    });
    pair_in_order(recorded, live, &mut pairs, &mut taken, acts_alike);

    // Shared words, the best pairs first.
    let mut scored: Vec<(f64, usize, usize)> = Vec::new();
    for (r, was) in recorded
        .iter()
        .enumerate()
        .filter(|(r, _)| pairs[*r].is_none())
    {
        let words = words_of(was);
        for (i, now) in live.iter().enumerate() {
            if taken[i] || now.kind != was.kind {
                continue;
            }
            let score = shared_words(&words, &words_of(now));
            if score > 0.5 {
                scored.push((score, r, i));
            }
        }
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    for (_, r, i) in scored {
        if pairs[r].is_none() && !taken[i] {
            taken[i] = true;
            pairs[r] = Some(i);
        }
    }

    // The kind alone, where one call of it is left on each side.
    for (r, was) in recorded.iter().enumerate() {
        if pairs[r].is_some() {
            continue;
        }
        let recorded_left = recorded
            .iter()
            .enumerate()
            .filter(|(k, c)| pairs[*k].is_none() && c.kind == was.kind)
            .count();
        let live_left: Vec<usize> = (0..live.len())
            .filter(|&i| !taken[i] && live[i].kind == was.kind)
            .collect();
        if let ([i], 1) = (live_left.as_slice(), recorded_left) {
            taken[*i] = true;
            pairs[r] = Some(*i);
        }
    }
    pairs
}

/// Pairs each recorded call not yet paired with the first live call left of its kind for which
/// `same` holds.
fn pair_in_order(
    recorded: &[CallShape],
    live: &[CallShape],
    pairs: &mut [Option<usize>],
    taken: &mut [bool],
    same: impl Fn(&CallShape, &CallShape) -> bool,
) {
    for (was, pair) in recorded.iter().zip(pairs.iter_mut()) {
        if pair.is_some() {
            continue;
        }
        if let Some(i) =
            (0..live.len()).find(|&i| !taken[i] && live[i].kind == was.kind && same(was, &live[i]))
        {
            taken[i] = true;
            *pair = Some(i);
        }
    }
}

/// The command a call runs, as its `rawInput` names it (a string, or an argument list).
fn command_of(call: &CallShape) -> Option<String> {
    match call.raw_input.get("command")? {
        Value::String(command) => Some(command.clone()),
        Value::Array(words) => Some(
            words
                .iter()
                .map(|w| w.as_str().map_or_else(|| w.to_string(), str::to_owned))
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => None,
    }
}

/// Whether two calls of one kind act on the same thing: the same command, the same `rawInput`,
/// or the same paths (none of them empty).
fn acts_alike(was: &CallShape, now: &CallShape) -> bool {
    let empty = |v: &Value| match v {
        Value::Null => true,
        Value::Object(map) => map.is_empty(),
        _ => false,
    };
    match (command_of(was), command_of(now)) {
        (Some(a), Some(b)) if a == b => return true,
        _ => {}
    }
    (!empty(&was.raw_input) && was.raw_input == now.raw_input)
        || (!was.paths.is_empty() && was.paths == now.paths)
}

/// The words of a call's title and command: no bare `<cwd>`, no operator (`&&`, `|`, `=>`), no
/// quotes or brackets around a word.
fn words_of(call: &CallShape) -> std::collections::HashSet<String> {
    let command = command_of(call).unwrap_or_default();
    call.title
        .as_deref()
        .unwrap_or_default()
        .split_whitespace()
        .chain(command.split_whitespace())
        .map(|w| w.trim_matches(|c: char| "\"'`()[]{},;:".contains(c)))
        .filter(|w| *w != "<cwd>" && w.chars().any(char::is_alphanumeric))
        .map(str::to_owned)
        .collect()
}

/// How much two sets of words share: the words in both, over the smaller set (0 when either is
/// empty).
fn shared_words(
    a: &std::collections::HashSet<String>,
    b: &std::collections::HashSet<String>,
) -> f64 {
    let smaller = a.len().min(b.len());
    if smaller == 0 {
        return 0.0;
    }
    a.intersection(b).count() as f64 / smaller as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn c(kind: &str, title: &str, status: &str) -> CallShape {
        CallShape {
            kind: Some(kind.into()),
            title: Some(title.into()),
            status: Some(status.into()),
            ..CallShape::default()
        }
    }

    /// The divergences of one turn's calls.
    fn compare_calls(
        turn: usize,
        recorded: &[CallShape],
        live: &[CallShape],
        out: &mut Vec<String>,
    ) {
        let shape = |calls: &[CallShape]| {
            let mut shape = Shape::default();
            shape.turns.resize(turn, compare::TurnShape::default());
            shape.turns[turn - 1].tool_calls = calls.to_vec();
            shape
        };
        out.extend(divergences(&shape(recorded), &shape(live), false));
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

    /// Two execute calls, recorded in one order and run live in the other, one of them changed:
    /// each is paired with the call that does the same thing, not with the first of its kind.
    #[test]
    fn execute_calls_pair_with_the_call_that_runs_the_same_command() {
        let recorded = [
            c("execute", "ls -la", "completed"),
            c(
                "execute",
                "touch created_by_agent.txt && echo created",
                "completed",
            ),
        ];
        // Another order, the touch's title reworded, the listing failed.
        let live = [
            c("execute", "touch created_by_agent.txt", "completed"),
            c("execute", "ls -la", "failed"),
        ];
        assert_eq!(pair_calls(&recorded, &live), [Some(1), Some(0)]);
        let mut out = Vec::new();
        compare_calls(1, &recorded, &live, &mut out);
        assert_eq!(
            out,
            [
                "turn 1: tool call execute \"ls -la\": status completed -> failed",
                "turn 1: tool call execute \"touch created_by_agent.txt && echo created\": title -> \"touch created_by_agent.txt\"",
            ]
        );

        // The finding: the recorded touch against a live run that listed first. The listing is
        // an added call, not the touch renamed `ls -la` with the touch added.
        let mut out = Vec::new();
        compare_calls(
            1,
            &recorded[1..],
            &live[1..]
                .iter()
                .chain(&live[..1])
                .cloned()
                .collect::<Vec<_>>(),
            &mut out,
        );
        assert_eq!(
            out,
            [
                "turn 1: tool call execute \"touch created_by_agent.txt && echo created\": title -> \"touch created_by_agent.txt\"",
                "turn 1: added tool call: execute \"ls -la\"",
            ]
        );

        // Two calls of a kind left on one side and nothing in common: no pairing by kind.
        let mut out = Vec::new();
        compare_calls(
            1,
            &[c("execute", "cargo test", "completed")],
            &[
                c("execute", "ls -la", "completed"),
                c("execute", "pwd", "completed"),
            ],
            &mut out,
        );
        assert_eq!(
            out,
            [
                "turn 1: missing tool call: execute \"cargo test\"",
                "turn 1: added tool call: execute \"ls -la\"",
                "turn 1: added tool call: execute \"pwd\"",
            ]
        );
    }

    /// A command named by `rawInput` (the cwd written `<cwd>` by the comparison engine) pairs calls
    /// whose titles say nothing alike, and so do the same paths.
    #[test]
    fn calls_that_run_the_same_command_or_touch_the_same_paths_pair_whatever_their_titles() {
        let with = |title: &str, raw_input: Value, paths: &[&str]| CallShape {
            raw_input,
            paths: paths.iter().map(|p| (*p).to_owned()).collect(),
            ..c("execute", title, "completed")
        };
        let recorded = [
            with("Run the tests", json!({"command": "cargo test"}), &[]),
            with(
                "Terminal",
                json!({"command": ["bash", "-lc", "ls <cwd>"]}),
                &[],
            ),
            with("Look", Value::Null, &["<cwd>/a.txt"]),
        ];
        let live = [
            with("Look again", Value::Null, &["<cwd>/a.txt"]),
            with(
                "Shell",
                json!({"command": ["bash", "-lc", "ls <cwd>"]}),
                &[],
            ),
            with("cargo test", json!({"command": "cargo test"}), &[]),
        ];
        assert_eq!(pair_calls(&recorded, &live), [Some(2), Some(1), Some(0)]);
    }

    /// A turn's permission requests are said once, listed whole, where what one asks or its
    /// answer changed; who decided is not compared. A turn on one side only is said as such.
    #[test]
    fn permission_requests_differ_by_what_they_ask_and_their_answer() {
        let permission = |asks: &str, decided_by: &str, answer: Option<&str>| PermissionShape {
            asks: Some(asks.into()),
            decided_by: Some(decided_by.into()),
            outcome: Some("selected".into()),
            option_kind: answer.map(Into::into),
            ..PermissionShape::default()
        };
        let shape = |turns: Vec<Vec<PermissionShape>>| Shape {
            turns: turns
                .into_iter()
                .map(|permissions| compare::TurnShape {
                    permissions,
                    ..compare::TurnShape::default()
                })
                .collect(),
            ..Shape::default()
        };
        let recorded = shape(vec![vec![
            permission("execute `ls`", "client", Some("allow_once")),
            permission("edit `x`", "client", Some("allow_once")),
        ]]);
        let by_policy = shape(vec![vec![
            permission("execute `ls`", "policy", Some("allow_once")),
            permission("edit `x`", "policy", Some("allow_once")),
        ]]);
        assert_eq!(
            divergences(&recorded, &by_policy, false),
            Vec::<String>::new()
        );
        let changed = shape(vec![
            vec![
                permission("execute `ls`", "client", Some("reject_once")),
                permission("edit `y`", "client", None),
            ],
            vec![],
        ]);
        assert_eq!(
            divergences(&recorded, &changed, false),
            [
                "turn 1: permission requests differ: recorded execute `ls` -> allow_once, edit `x` -> allow_once, live execute `ls` -> reject_once, edit `y` -> selected",
                "turn 2: not in the recording",
            ]
        );
        assert_eq!(
            divergences(&changed, &shape(vec![vec![]]), false),
            [
                "turn 1: permission requests differ: recorded execute `ls` -> reject_once, edit `y` -> selected, live none",
                "turn 2: missing in the live run",
            ]
        );
    }
}
