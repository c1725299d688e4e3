//! `acptap show`: one session as a readable timeline of prompt turns, with the agent's text,
//! its tool calls (final status and duration) and every permission decision, in the order they
//! happened.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use super::{format_duration, format_time, one_line};
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
/// shows. The lines, tool calls and permission requests of other turns are not read.
pub fn timeline_of_turns(
    reader: &Reader,
    session: &SessionRef,
    turns: std::ops::Range<usize>,
) -> rusqlite::Result<Timeline> {
    let summary = queries::session_summary_of(reader, session)?;
    let all_turns = queries::turns(reader, session)?;
    let total_turns = all_turns.len();
    let first = turns.start.min(total_turns);
    let end = turns.end.clamp(first, total_turns);
    let turns = &all_turns[first..end];
    // The lines of these turns: from the first one's prompt to the next turn's.
    let seqs = match (turns.first(), all_turns.get(end)) {
        (Some(t), Some(next)) => t.request_seq..next.request_seq,
        (Some(t), None) => t.request_seq..i64::MAX,
        (None, _) => 0..0,
    };
    let wanted = (first > 0 || end < total_turns)
        .then(|| queries::tool_call_ids_between(reader, session, seqs.clone()))
        .transpose()?;
    let mut tool_calls: HashMap<String, ToolCallRow> = HashMap::new();
    let filter = queries::ToolFilter {
        session: Some(session.clone()),
        ..queries::ToolFilter::default()
    };
    queries::for_each_tool_call(reader, &filter, |call| {
        if wanted
            .as_ref()
            .is_none_or(|w| w.contains(&call.tool_call_id))
        {
            tool_calls.insert(call.tool_call_id.clone(), call);
        }
    })?;
    // Titles stay at hand for permission requests after their call moved into the timeline.
    let titles: HashMap<String, Option<String>> = tool_calls
        .values()
        .map(|c| (c.tool_call_id.clone(), c.title.clone()))
        .collect();
    let mut permissions: HashMap<i64, PermissionRow> =
        queries::permission_requests(reader, session)?
            .into_iter()
            .filter(|p| seqs.contains(&p.request_seq))
            .map(|p| (p.request_seq, p))
            .collect();

    let mut views: Vec<TurnView> = turns
        .iter()
        .enumerate()
        .map(|(i, t)| TurnView {
            index: first + i + 1,
            prompt: String::new(),
            started_at: t.started_at,
            duration_us: t.duration_us,
            stop_reason: t.stop_reason.clone(),
            error: t.error.clone(),
            cancel_requested: t.cancel_requested_at.is_some(),
            items: Vec::new(),
        })
        .collect();
    queries::for_each_session_line(reader, session, seqs, |line| {
        // A line belongs to the last turn that started before it (turns are in seq order).
        let turn = turns.partition_point(|t| t.request_seq <= line.seq);
        let Some(turn) = turn.checked_sub(1) else {
            return;
        };
        let Ok(value) = serde_json::from_slice::<Value>(&line.raw) else {
            return;
        };
        let view = &mut views[turn];
        let params = value.get("params");
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
                    _ => {
                        let id = update.get("toolCallId").and_then(Value::as_str);
                        show_tool_call(view, id, &mut tool_calls);
                    }
                }
            }
            ("a2c", Some("session/request_permission")) => {
                let id = params
                    .and_then(|p| p.get("toolCall"))
                    .and_then(|t| t.get("toolCallId"))
                    .and_then(Value::as_str);
                let title = id.and_then(|id| titles.get(id).cloned()).flatten();
                show_tool_call(view, id, &mut tool_calls);
                if let Some(request) = permissions.remove(&line.seq) {
                    view.items.push(Item::Permission { title, request });
                }
            }
            _ => {}
        }
    })?;
    Ok(Timeline {
        session: summary,
        total_turns,
        turns: views,
    })
}

/// Shows tool call `id` where it is first mentioned: it moves from `tool_calls` into the turn, so
/// each call is held once.
fn show_tool_call(
    view: &mut TurnView,
    id: Option<&str>,
    tool_calls: &mut HashMap<String, ToolCallRow>,
) {
    if let Some(call) = id.and_then(|id| tool_calls.remove(id)) {
        view.items.push(Item::ToolCall(call));
    }
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

fn render_unescaped(t: &Timeline) -> String {
    let s = &t.session;
    let mut out = String::new();
    let _ = writeln!(out, "Session {}  ({} turns)", s.session_id, t.turns.len());
    let _ = writeln!(
        out,
        "  agent {} · cwd {} · connection {} · started {} UTC{}",
        s.agent,
        s.cwd.as_deref().unwrap_or("?"),
        s.connection_id,
        format_time(s.created_at),
        s.label
            .as_ref()
            .map(|l| format!(" · label {l}"))
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
    for turn in &t.turns {
        let _ = writeln!(
            out,
            "\nTurn {} · {} · {}{}",
            turn.index,
            turn.stop_reason
                .as_deref()
                .or(turn.error.as_ref().map(|_| "error"))
                .unwrap_or("unfinished"),
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
                            format!("  [{}]", paths.join(", "))
                        }
                    );
                }
                Item::Permission { title, request } => {
                    let decision = match (&request.outcome, &request.option_id) {
                        (None, _) => "no answer".to_owned(),
                        (Some(outcome), None) => outcome.clone(),
                        (Some(_), Some(option)) => format!(
                            "{option} ({})",
                            request.option_kind.as_deref().unwrap_or("?")
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
                        request.decided_by.as_deref().unwrap_or("-"),
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
    super::terminal_safe(&render_unescaped(t)).into_owned()
}
