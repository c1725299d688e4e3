//! `acptap show`: one session as a readable timeline of prompt turns, with the agent's text,
//! its tool calls (final status and duration) and every permission decision, in the order they
//! happened.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use super::{NAME_BYTES, VALUE_BYTES, format_duration, format_time, one_line, terminal_line};
use crate::record::Reader;
use crate::record::queries::{self, PermissionRow, SessionRef, SessionSummary, ToolCallRow};

#[derive(Debug, Serialize)]
pub struct Timeline {
    pub session: SessionSummary,
    /// The session's turns, of which `turns` may be a page.
    pub total_turns: usize,
    pub turns: Vec<TurnView>,
}

#[derive(Debug, Serialize)]
pub struct TurnView {
    pub index: usize,
    pub prompt: String,
    pub started_at: i64,
    pub duration_us: Option<i64>,
    pub stop_reason: Option<String>,
    pub error: Option<String>,
    pub cancel_requested: bool,
    pub items: Vec<Item>,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Item {
    AgentText {
        text: String,
    },
    Thought {
        text: String,
    },
    Plan {
        entries: Vec<String>,
    },
    ToolCall(ToolCallRow),
    Permission {
        title: Option<String>,
        #[serde(flatten)]
        request: PermissionRow,
    },
}

pub fn timeline(reader: &Reader, session: &SessionRef) -> rusqlite::Result<Timeline> {
    timeline_of_turns(reader, session, 0..usize::MAX)
}

/// The timeline of the turns numbered `turns` (from 0) only: what a page of a long session
/// shows.
pub fn timeline_of_turns(
    reader: &Reader,
    session: &SessionRef,
    turns: std::ops::Range<usize>,
) -> rusqlite::Result<Timeline> {
    let head = head(reader, session)?;
    let mut views = Vec::new();
    for_each_turn(reader, session, turns, |view| views.push(view))?;
    Ok(Timeline {
        session: head.session,
        total_turns: head.total_turns,
        turns: views,
    })
}

/// What a timeline says before its turns.
pub struct Head {
    pub session: SessionSummary,
    pub total_turns: usize,
}

pub fn head(reader: &Reader, session: &SessionRef) -> rusqlite::Result<Head> {
    Ok(Head {
        session: queries::session_summary_of(reader, session)?,
        total_turns: queries::turns(reader, session)?.len(),
    })
}

/// Builds the turns numbered `turns` (from 0) one at a time, in order, and hands each to `each`
/// once it is complete: memory stays that of one turn, however long the session. The lines,
/// tool calls and permission requests of other turns are not read.
pub fn for_each_turn(
    reader: &Reader,
    session: &SessionRef,
    turns: std::ops::Range<usize>,
    mut each: impl FnMut(TurnView),
) -> rusqlite::Result<()> {
    let all_turns = queries::turns(reader, session)?;
    let first = turns.start.min(all_turns.len());
    let end = turns.end.clamp(first, all_turns.len());
    let turns = &all_turns[first..end];
    // The lines of these turns: from the first one's prompt to the next turn's.
    let seqs = match (turns.first(), all_turns.get(end)) {
        (Some(t), Some(next)) => t.request_seq..next.request_seq,
        (Some(t), None) => t.request_seq..i64::MAX,
        (None, _) => 0..0,
    };
    let mut permissions: HashMap<i64, PermissionRow> =
        queries::permission_requests_between(reader, session, seqs.clone())?
            .into_iter()
            .map(|p| (p.request_seq, p))
            .collect();
    let view_of = |i: usize| {
        let t = &turns[i];
        TurnView {
            index: first + i + 1,
            prompt: String::new(),
            started_at: t.started_at,
            duration_us: t.duration_us,
            stop_reason: t.stop_reason.clone(),
            error: t.error.clone(),
            cancel_requested: t.cancel_requested_at.is_some(),
            items: Vec::new(),
        }
    };
    // The turn being built, and the calls already shown (each once) with their titles.
    let mut current: Option<(usize, TurnView)> = None;
    let mut shown: HashMap<String, Option<String>> = HashMap::new();
    let mut failed = None;
    queries::for_each_session_line(reader, session, seqs, |line| {
        if failed.is_some() {
            return;
        }
        // A line belongs to the last turn that started before it (turns are in seq order).
        let Some(turn) = turns
            .partition_point(|t| t.request_seq <= line.seq)
            .checked_sub(1)
        else {
            return;
        };
        // Turns before this one are complete, those without a line of their own included.
        let next = current.as_ref().map_or(0, |(i, _)| i + 1);
        if current.as_ref().is_none_or(|(i, _)| *i != turn) {
            if let Some((_, done)) = current.take() {
                each(done);
            }
            for i in next..turn {
                each(view_of(i));
            }
            current = Some((turn, view_of(turn)));
        }
        let Some((_, view)) = current.as_mut() else {
            return;
        };
        let Ok(value) = serde_json::from_slice::<Value>(&line.raw) else {
            return;
        };
        let params = value.get("params");
        let mut show = |view: &mut TurnView, id: Option<&str>| {
            if let Err(e) = show_tool_call(reader, session, view, id, &mut shown) {
                failed = Some(e);
            }
        };
        match (line.direction.as_str(), line.method.as_deref()) {
            ("c2a", Some("session/prompt")) if line.seq == turns[turn].request_seq => {
                view.prompt = prompt_text(params.and_then(|p| p.get("prompt")));
            }
            ("a2c", Some("session/update")) => {
                let Some(update) = params.and_then(|p| p.get("update")) else {
                    return;
                };
                let tag = update
                    .get("sessionUpdate")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let text = || {
                    update
                        .get("content")
                        .and_then(|c| c.get("text"))
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned()
                };
                match tag {
                    "agent_message_chunk" => append_text(&mut view.items, text(), false),
                    "agent_thought_chunk" => append_text(&mut view.items, text(), true),
                    "plan" => view.items.push(Item::Plan {
                        entries: update
                            .get("entries")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                            .map(|e| {
                                let status = e.get("status").and_then(Value::as_str).unwrap_or("");
                                let content =
                                    e.get("content").and_then(Value::as_str).unwrap_or("");
                                format!("[{status}] {content}")
                            })
                            .collect(),
                    }),
                    _ => show(view, update.get("toolCallId").and_then(Value::as_str)),
                }
            }
            ("a2c", Some("session/request_permission")) => {
                let id = params
                    .and_then(|p| p.get("toolCall"))
                    .and_then(|t| t.get("toolCallId"))
                    .and_then(Value::as_str);
                show(view, id);
                if let Some(request) = permissions.remove(&line.seq) {
                    let title = id.and_then(|id| shown.get(id).cloned()).flatten();
                    view.items.push(Item::Permission { title, request });
                }
            }
            _ => {}
        }
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    let next = current.as_ref().map_or(0, |(i, _)| i + 1);
    if let Some((_, done)) = current {
        each(done);
    }
    for i in next..turns.len() {
        each(view_of(i));
    }
    Ok(())
}

/// Shows tool call `id` where it is first mentioned (read from the database then, so a long
/// session's calls are never all held), and remembers its title.
fn show_tool_call(
    reader: &Reader,
    session: &SessionRef,
    view: &mut TurnView,
    id: Option<&str>,
    shown: &mut HashMap<String, Option<String>>,
) -> rusqlite::Result<()> {
    let Some(id) = id.filter(|id| !shown.contains_key(*id)) else {
        return Ok(());
    };
    if let Some(call) = queries::tool_call(reader, session, id)? {
        shown.insert(call.tool_call_id.clone(), call.title.clone());
        view.items.push(Item::ToolCall(call));
    }
    Ok(())
}

fn append_text(items: &mut Vec<Item>, chunk: String, thought: bool) {
    match (items.last_mut(), thought) {
        (Some(Item::AgentText { text }), false) | (Some(Item::Thought { text }), true) => {
            text.push_str(&chunk)
        }
        _ if chunk.is_empty() => {}
        (_, false) => items.push(Item::AgentText { text: chunk }),
        (_, true) => items.push(Item::Thought { text: chunk }),
    }
}

fn prompt_text(prompt: Option<&Value>) -> String {
    prompt
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|block| match block.get("type").and_then(Value::as_str) {
            Some("text") => block.get("text").and_then(Value::as_str).map(str::to_owned),
            Some(other) => Some(format!("[{other}]")),
            None => None,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn render_head_unescaped(s: &SessionSummary, total_turns: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Session {}  ({} turns)",
        terminal_line(&s.session_id, NAME_BYTES),
        total_turns
    );
    let _ = writeln!(
        out,
        "  agent {} · cwd {} · connection {} · started {} UTC{}",
        terminal_line(&s.agent, NAME_BYTES),
        terminal_line(s.cwd.as_deref().unwrap_or("?"), VALUE_BYTES),
        s.connection_id,
        format_time(s.created_at),
        s.label
            .as_ref()
            .map(|l| format!(" · label {}", one_line(l, 60)))
            .unwrap_or_default()
    );
    // An import has no exit status to tell.
    let exit = s
        .exit_code
        .map(|code| format!(", exit {code}"))
        .unwrap_or_default();
    let state = match (s.state, s.complete) {
        ("live", _) => "still recording".to_owned(),
        ("interrupted", _) => "interrupted: the process recording it is gone".to_owned(),
        (_, true) => format!("ended{exit}"),
        (_, false) => format!(
            "ended{exit} · INCOMPLETE: {} line(s) not recorded",
            s.lost_messages
        ),
    };
    let _ = writeln!(out, "  {state}");
    out
}

fn render_turn_unescaped(turn: &TurnView) -> String {
    let mut out = String::new();
    {
        let _ = writeln!(
            out,
            "\nTurn {} · {} · {}{}",
            turn.index,
            one_line(
                turn.stop_reason
                    .as_deref()
                    .or(turn.error.as_ref().map(|_| "error"))
                    .unwrap_or("unfinished"),
                40
            ),
            turn.duration_us
                .map(format_duration)
                .unwrap_or_else(|| "-".into()),
            if turn.cancel_requested {
                " · cancel requested"
            } else {
                ""
            }
        );
        let _ = writeln!(out, "  > {}", one_line(&turn.prompt, 100));
        if let Some(error) = &turn.error {
            let _ = writeln!(out, "  ! error: {}", one_line(error, 100));
        }
        for item in &turn.items {
            match item {
                Item::AgentText { text } => {
                    let _ = writeln!(out, "  agent: {}", one_line(text, 100));
                }
                Item::Thought { text } => {
                    let _ = writeln!(out, "  thinks: {}", one_line(text, 100));
                }
                Item::Plan { entries } => {
                    let _ = writeln!(out, "  plan:");
                    for entry in entries {
                        let _ = writeln!(out, "    {}", one_line(entry, 96));
                    }
                }
                Item::ToolCall(call) => {
                    let paths = call.paths();
                    let _ = writeln!(
                        out,
                        "  tool {:<9} {:<10} {:>7}  {}{}",
                        one_line(call.kind.as_deref().unwrap_or("-"), 9),
                        one_line(call.status.as_deref().unwrap_or("-"), 10),
                        call.duration_us()
                            .map(format_duration)
                            .unwrap_or_else(|| "-".into()),
                        one_line(call.title.as_deref().unwrap_or(&call.tool_call_id), 60),
                        if paths.is_empty() {
                            String::new()
                        } else {
                            let paths: Vec<_> = paths
                                .iter()
                                .map(|p| terminal_line(p, VALUE_BYTES))
                                .collect();
                            format!("  [{}]", paths.join(", "))
                        }
                    );
                }
                Item::Permission { title, request } => {
                    let decision = match (&request.outcome, &request.option_id) {
                        (None, _) => "no answer".to_owned(),
                        (Some(outcome), None) => one_line(outcome, 40),
                        (Some(_), Some(option)) => format!(
                            "{} ({})",
                            one_line(option, 40),
                            one_line(request.option_kind.as_deref().unwrap_or("?"), 40)
                        ),
                    };
                    let _ = writeln!(
                        out,
                        "  permission for {}: {} · by {}{}",
                        one_line(
                            title
                                .as_deref()
                                .or(request.tool_call_id.as_deref())
                                .unwrap_or("?"),
                            50
                        ),
                        decision,
                        one_line(request.decided_by.as_deref().unwrap_or("-"), 20),
                        request
                            .decision_us
                            .map(|d| format!(" after {}", format_duration(d)))
                            .unwrap_or_default()
                    );
                }
            }
        }
    }
    out
}

/// Safe for a terminal: every recorded string goes through [`super::terminal_safe`].
pub fn render(t: &Timeline) -> String {
    let mut out = render_head(&t.session, t.total_turns);
    for turn in &t.turns {
        out.push_str(&render_turn(turn));
    }
    out
}

/// The timeline's header, safe for a terminal.
pub fn render_head(session: &SessionSummary, total_turns: usize) -> String {
    super::terminal_safe(&render_head_unescaped(session, total_turns)).into_owned()
}

/// One turn, safe for a terminal.
pub fn render_turn(turn: &TurnView) -> String {
    super::terminal_safe(&render_turn_unescaped(turn)).into_owned()
}
