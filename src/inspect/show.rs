//! `acptap show`: one session as a readable timeline of prompt turns, with the agent's messages,
//! its tool calls (final status and duration), terminals, every permission decision, and the
//! session's other requests (elicitations, cancellations, resume, fork, ...), in the order they
//! happened; what happened before the first turn (a resume or load and the history it replayed)
//! comes first.
//!
//! Messages are assembled by [`Conversation`] (v1 chunks, v2 `messageId` chunks and upserts): a
//! message is shown where it began, with the text it ended with.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use super::{
    NAME_BYTES, VALUE_BYTES, decode_base64, format_duration, format_time, one_line, protocol_label,
    terminal_line,
};
use crate::protocol::conversation::{Conversation, Role};
use crate::protocol::state::PermissionShapes;
use crate::protocol::{Direction, MessageKind};
use crate::query::Reader;
use crate::query::Result;
use crate::query::{self, PermissionRow, SessionLine, SessionRef, SessionSummary, ToolCallRow};

#[derive(Debug, Serialize)]
pub(crate) struct Timeline {
    pub session: SessionSummary,
    /// What the session's lines held before its first turn (all of them when it has none): a
    /// `session/resume` or `session/load` and the history it replayed, a title set. Empty on a
    /// page that does not start at the first turn.
    pub opening: Vec<Item>,
    /// The session's turns, of which `turns` may be a page.
    pub total_turns: usize,
    pub turns: Vec<TurnView>,
}

#[derive(Debug, Serialize)]
pub(crate) struct TurnView {
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
pub(crate) enum Item {
    /// One message of the agent, with the text it ended with (its chunks and upserts applied).
    AgentText {
        text: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
    },
    Thought {
        text: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
    },
    /// A user message the agent sent: v2's `user_message`, or one a load or resume replayed.
    UserText {
        text: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
    },
    Plan {
        entries: Vec<String>,
    },
    /// v2 `state_update`: `running`, `idle` (with its stop reason), `requires_action`, or
    /// another state; shown when it changes.
    State {
        state: String,
        stop_reason: Option<String>,
    },
    Terminal(TerminalView),
    ToolCall(ToolCallRow),
    Permission {
        /// The title of the tool call it asks about (the request's own v2 title is
        /// `request.title`).
        tool_call_title: Option<String>,
        #[serde(flatten)]
        request: PermissionRow,
    },
    Elicitation(ElicitationView),
    Request(RequestView),
}

/// An agent-owned terminal (v2 `terminal_update` and `terminal_output_chunk`) as it ended up.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct TerminalView {
    pub terminal_id: String,
    pub command: Option<String>,
    pub cwd: Option<String>,
    /// Whether an `exitStatus` said it exited (with a code, a signal, or neither known).
    pub exited: bool,
    pub exit_code: Option<i64>,
    pub signal: Option<String>,
    /// The last [`TERMINAL_OUTPUT_KEPT`] bytes of its output (base64 on the wire), read as UTF-8.
    pub output: String,
    /// How many bytes of output it had in all.
    pub output_bytes: usize,
}

/// A terminal's output shown at most: its end, where a command says how it went.
pub(crate) const TERMINAL_OUTPUT_KEPT: usize = 16 * 1024;

/// An `elicitation/create` of the agent (v2): what it asked and how it was answered.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct ElicitationView {
    pub seq: i64,
    /// `form`, `url`, or another mode as sent.
    pub mode: Option<String>,
    pub message: String,
    pub url: Option<String>,
    pub elicitation_id: Option<String>,
    /// The tool call its scope names.
    pub tool_call_id: Option<String>,
    /// The answer's `action`: `accept`, `decline`, `cancel` (or another the client sent);
    /// `error` for an error answer; `None` while unanswered.
    pub action: Option<String>,
    /// What was accepted (the answer's `content`).
    pub content: Option<Value>,
    /// The error's message, for an error answer.
    pub error: Option<String>,
    /// Who answered: the client (acptap's policy answers permission requests, never an
    /// elicitation); `None` while unanswered.
    pub answered_by: Option<String>,
    /// Whether the agent said (`elicitation/complete`) that the URL interaction ended.
    pub completed: bool,
}

/// Another request or notification of the session: a cancellation (`tool_call/cancel`,
/// `terminal/cancel`, `$/cancel_request`) or a session method (`session/resume`,
/// `session/fork`, `session/set_title`, ...).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RequestView {
    pub seq: i64,
    pub method: String,
    /// Who sent it: `client` or `agent`.
    pub from: &'static str,
    /// What it is about, in one line: the tool call or terminal it cancels, the request a
    /// `$/cancel_request` names, a resume's replay, a title.
    pub about: String,
    /// For `$/cancel_request`: the line of the request it cancels.
    pub cancels_seq: Option<i64>,
    /// Its answer in one line (`ok`, `error: ...`, a fork's new session); `None` for a
    /// notification, or while unanswered.
    pub answer: Option<String>,
}

/// The requests of a session shown as [`Item::Request`]: every session method that is not a
/// turn's (`session/new` answers with the session, `session/prompt` is the turn,
/// `session/cancel` marks it), and the v2 cancellations.
const SESSION_REQUESTS: [&str; 12] = [
    "session/resume",
    "session/load",
    "session/fork",
    "session/close",
    "session/set_title",
    "session/status",
    "session/list",
    "session/delete",
    "session/archive",
    "session/unarchive",
    "tool_call/cancel",
    "terminal/cancel",
];

pub(crate) fn timeline(reader: &Reader, session: &SessionRef) -> Result<Timeline> {
    timeline_of_turns(reader, session, 0..usize::MAX)
}

/// The timeline of the turns numbered `turns` (from 0) only: what a page of a long session
/// shows (the opening with the first page).
pub(crate) fn timeline_of_turns(
    reader: &Reader,
    session: &SessionRef,
    turns: std::ops::Range<usize>,
) -> Result<Timeline> {
    let head = head(reader, session)?;
    let opening = if turns.start == 0 {
        opening(reader, session)?
    } else {
        Vec::new()
    };
    let mut views = Vec::new();
    for_each_turn(reader, session, turns, |view| views.push(view))?;
    Ok(Timeline {
        session: head.session,
        opening,
        total_turns: head.total_turns,
        turns: views,
    })
}

/// What a timeline says before its turns.
pub(crate) struct Head {
    pub session: SessionSummary,
    pub total_turns: usize,
}

pub(crate) fn head(reader: &Reader, session: &SessionRef) -> Result<Head> {
    Ok(Head {
        session: query::session_summary_of(reader, session)?,
        total_turns: query::turns(reader, session)?.len(),
    })
}

/// The items of the session's lines before its first turn (all its lines when it has none):
/// a resume or load and the history it replayed, a title set, a plan.
pub(crate) fn opening(reader: &Reader, session: &SessionRef) -> Result<Vec<Item>> {
    let first_turn = query::turns(reader, session)?
        .first()
        .map_or(i64::MAX, |t| t.request_seq);
    let mut builder = Builder::new(reader, session, 0..first_turn)?;
    let mut items = Items::default();
    let mut failed = None;
    query::for_each_session_line(reader, session, 0..first_turn, |line| {
        if failed.is_none()
            && let Err(e) = builder.line(&mut items, &line)
        {
            failed = Some(e);
        }
    })?;
    match failed {
        Some(e) => Err(e),
        None => Ok(items.finish()),
    }
}

/// Builds the turns numbered `turns` (from 0) one at a time, in order, and hands each to `each`
/// once it is complete: memory stays that of one turn, however long the session. The lines,
/// tool calls and permission requests of other turns are not read.
pub(crate) fn for_each_turn(
    reader: &Reader,
    session: &SessionRef,
    turns: std::ops::Range<usize>,
    each: impl FnMut(TurnView),
) -> Result<()> {
    let all_turns = query::turns(reader, session)?;
    let first = turns.start.min(all_turns.len());
    let end = turns.end.clamp(first, all_turns.len());
    let turns = &all_turns[first..end];
    // The lines of these turns: from the first one's prompt to the next turn's.
    let seqs = match (turns.first(), all_turns.get(end)) {
        (Some(t), Some(next)) => t.request_seq..next.request_seq,
        (Some(t), None) => t.request_seq..i64::MAX,
        (None, _) => 0..0,
    };
    let mut builder = Builder::new(reader, session, seqs.clone())?;
    let mut cursor = TurnCursor {
        turns,
        first,
        current: None,
        each,
    };
    let mut failed = None;
    query::for_each_session_line(reader, session, seqs, |line| {
        if failed.is_some() {
            return;
        }
        let Some(items) = cursor.items_for(&line) else {
            return;
        };
        if let Err(e) = builder.line(items, &line) {
            failed = Some(e);
        }
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    cursor.finish();
    Ok(())
}

/// The turns of [`for_each_turn`] while their lines are read: the one being built, and where
/// each goes once complete. Every turn is handed over once, in order, those without a line of
/// their own included.
struct TurnCursor<'t, F> {
    turns: &'t [query::Turn],
    /// The number of `turns[0]` among the session's turns (from 0).
    first: usize,
    /// The turn being built: its index in `turns`, its view, its items so far.
    current: Option<(usize, TurnView, Items)>,
    each: F,
}

impl<F: FnMut(TurnView)> TurnCursor<'_, F> {
    /// The items of the turn `line` belongs to: the last turn that started before it (turns are
    /// in seq order); `None` for a line before the first. A turn's first line completes the
    /// turns before it, and its own `session/prompt` gives the turn its prompt.
    fn items_for(&mut self, line: &SessionLine) -> Option<&mut Items> {
        let turn = self
            .turns
            .partition_point(|t| t.request_seq <= line.seq)
            .checked_sub(1)?;
        if self.current.as_ref().is_none_or(|(i, ..)| *i != turn) {
            self.hand_over_until(turn);
            self.current = Some((turn, self.view_of(turn), Items::default()));
        }
        let (_, view, items) = self.current.as_mut()?;
        if line.direction == Direction::ClientToAgent
            && line.method.as_deref() == Some("session/prompt")
            && line.seq == self.turns[turn].request_seq
        {
            let params = serde_json::from_slice::<Value>(&line.raw).ok();
            view.prompt = prompt_text(
                params
                    .as_ref()
                    .and_then(|v| v.get("params"))
                    .and_then(|p| p.get("prompt")),
            );
        }
        Some(items)
    }

    /// Hands over the turn being built, then the turns after it and before `end`: those have
    /// no line of their own (they are complete as they are).
    fn hand_over_until(&mut self, end: usize) {
        let next = self.current.as_ref().map_or(0, |(i, ..)| i + 1);
        if let Some((_, mut done, items)) = self.current.take() {
            done.items = items.finish();
            (self.each)(done);
        }
        for i in next..end {
            let view = self.view_of(i);
            (self.each)(view);
        }
    }

    /// Hands over the turn being built and every turn after it.
    fn finish(mut self) {
        let end = self.turns.len();
        self.hand_over_until(end);
    }

    /// Turn `i`'s view as the turn's row gives it, before its lines add the prompt and items.
    fn view_of(&self, i: usize) -> TurnView {
        let t = &self.turns[i];
        TurnView {
            index: self.first + i + 1,
            prompt: String::new(),
            started_at: t.started_at,
            duration_us: t.duration_us,
            stop_reason: t.stop_reason.clone(),
            error: t.error.clone(),
            cancel_requested: t.cancel_requested_at.is_some(),
            items: Vec::new(),
        }
    }
}

/// What the lines of a timeline build, across its turns: the reads, and what one turn learns
/// that a later one needs.
struct Builder<'r> {
    reader: &'r Reader,
    session: &'r SessionRef,
    /// The permission requests of the lines read, by their request's seq.
    permissions: HashMap<i64, PermissionRow>,
    /// The tool calls already shown (each once in a timeline), with their titles.
    shown: HashMap<String, Option<String>>,
    /// The elicitations of the session seen so far, for the `elicitation/complete` (which
    /// names no session) that ends one.
    elicitations: HashSet<String>,
}

/// The items of one turn (or of the opening) while its lines are read.
#[derive(Default)]
struct Items {
    items: Vec<Item>,
    conversation: Conversation,
    /// The item showing each message of `conversation`, by the message's index.
    message_items: HashMap<usize, usize>,
    /// Each terminal's item, and the end of its output so far.
    terminals: HashMap<String, (usize, TerminalOutput)>,
    /// Each v2 plan's item, by its `planId`: an update replaces the plan where it was first shown.
    plans: HashMap<String, usize>,
    /// Each elicitation's item, by its `elicitationId`.
    elicitations: HashMap<String, usize>,
    /// The last state shown (a `state_update` that repeats it is not shown again).
    state: Option<(String, Option<String>)>,
}

/// The end of a terminal's output, and how long it was in all.
#[derive(Default)]
struct TerminalOutput {
    tail: Vec<u8>,
    total: usize,
}

impl TerminalOutput {
    fn replace(&mut self, bytes: Vec<u8>) {
        self.total = bytes.len();
        self.tail = bytes;
        self.trim();
    }

    fn append(&mut self, bytes: &[u8]) {
        self.total += bytes.len();
        self.tail.extend_from_slice(bytes);
        // Trimmed now and then, not at every chunk: a long run of small chunks stays linear.
        if self.tail.len() > 2 * TERMINAL_OUTPUT_KEPT {
            self.trim();
        }
    }

    fn trim(&mut self) {
        let excess = self.tail.len().saturating_sub(TERMINAL_OUTPUT_KEPT);
        self.tail.drain(..excess);
    }
}

impl Items {
    /// The items, with each message's final text (a message whose text ended empty is not
    /// shown) and each terminal's output.
    fn finish(mut self) -> Vec<Item> {
        let messages = self.conversation.into_messages();
        for (message, item) in &self.message_items {
            if let Some(
                Item::AgentText { text, .. }
                | Item::Thought { text, .. }
                | Item::UserText { text, .. },
            ) = self.items.get_mut(*item)
            {
                *text = messages[*message].text();
            }
        }
        for (item, mut output) in self.terminals.into_values() {
            if let Some(Item::Terminal(view)) = self.items.get_mut(item) {
                output.trim();
                view.output = String::from_utf8_lossy(&output.tail).into_owned();
                view.output_bytes = output.total;
            }
        }
        let message_items: HashSet<usize> = self.message_items.into_values().collect();
        self.items
            .into_iter()
            .enumerate()
            .filter(|(i, item)| {
                !message_items.contains(i)
                    || !matches!(
                        item,
                        Item::AgentText { text, .. }
                            | Item::Thought { text, .. }
                            | Item::UserText { text, .. } if text.is_empty()
                    )
            })
            .map(|(_, item)| item)
            .collect()
    }

    /// The item of terminal `id`, created on first sight.
    fn terminal(&mut self, id: &str) -> (&mut TerminalView, &mut TerminalOutput) {
        let (item, output) = self.terminals.entry(id.to_owned()).or_insert_with(|| {
            self.items.push(Item::Terminal(TerminalView {
                terminal_id: id.to_owned(),
                ..TerminalView::default()
            }));
            (self.items.len() - 1, TerminalOutput::default())
        });
        match &mut self.items[*item] {
            Item::Terminal(view) => (view, output),
            _ => unreachable!("a terminal's item is a terminal"),
        }
    }
}

/// A string field; `Some(None)` when it is `null` (cleared), `None` when absent (unchanged).
fn patch(object: &Value, name: &str) -> Option<Option<String>> {
    match object.get(name)? {
        Value::Null => Some(None),
        Value::String(s) => Some(Some(s.clone())),
        other => Some(Some(other.to_string())),
    }
}

fn str_of<'v>(object: Option<&'v Value>, name: &str) -> Option<&'v str> {
    object?.get(name)?.as_str()
}

impl<'r> Builder<'r> {
    fn new(
        reader: &'r Reader,
        session: &'r SessionRef,
        seqs: std::ops::Range<i64>,
    ) -> Result<Self> {
        Ok(Builder {
            reader,
            session,
            permissions: query::permission_requests_between(reader, session, seqs)?
                .into_iter()
                .map(|p| (p.request_seq, p))
                .collect(),
            shown: HashMap::new(),
            elicitations: HashSet::new(),
        })
    }

    /// What one line adds to `items`.
    fn line(&mut self, items: &mut Items, line: &SessionLine) -> Result<()> {
        let Ok(value) = serde_json::from_slice::<Value>(&line.raw) else {
            return Ok(());
        };
        let params = value.get("params");
        let method = line.method.as_deref();
        let ours = line.session_id.as_deref() == Some(self.session.session_id.as_str());
        if ours && let Some(message) = items.conversation.observe(line.seq, method, params) {
            if let std::collections::hash_map::Entry::Vacant(slot) =
                items.message_items.entry(message)
            {
                let chat = &items.conversation.messages()[message];
                let (text, message_id) = (String::new(), chat.message_id.clone());
                items.items.push(match chat.role {
                    Role::Agent => Item::AgentText { text, message_id },
                    Role::Thought => Item::Thought { text, message_id },
                    Role::User => Item::UserText { text, message_id },
                });
                slot.insert(items.items.len() - 1);
            }
            return Ok(());
        }
        let from = if line.direction == Direction::ClientToAgent {
            "client"
        } else {
            "agent"
        };
        match (line.direction, method) {
            (Direction::AgentToClient, Some("session/update")) if ours => {
                if let Some(update) = params.and_then(|p| p.get("update")) {
                    self.update(items, update)?;
                }
            }
            (Direction::AgentToClient, Some("session/request_permission")) if ours => {
                let request = self.permissions.remove(&line.seq);
                let id = match &request {
                    Some(r) => r.tool_call_id.clone(),
                    None => PermissionShapes::of(params)
                        .tool_call_id()
                        .map(str::to_owned),
                };
                self.show_tool_call(items, id.as_deref())?;
                if let Some(request) = request {
                    let tool_call_title = id.and_then(|id| self.shown.get(&id).cloned()).flatten();
                    items.items.push(Item::Permission {
                        tool_call_title,
                        request,
                    });
                }
            }
            (Direction::AgentToClient, Some("elicitation/create"))
                if ours && line.kind == MessageKind::Request =>
            {
                self.elicitation(items, line, params)?;
            }
            (_, Some("elicitation/complete")) => {
                let Some(id) = str_of(params, "elicitationId") else {
                    return Ok(());
                };
                if let Some(&item) = items.elicitations.get(id) {
                    if let Item::Elicitation(view) = &mut items.items[item] {
                        view.completed = true;
                    }
                } else if ours || self.elicitations.contains(id) {
                    // Asked in an earlier turn: said where it happens.
                    items.items.push(Item::Request(RequestView {
                        seq: line.seq,
                        method: "elicitation/complete".into(),
                        from,
                        about: format!("elicitation {id}"),
                        cancels_seq: None,
                        answer: None,
                    }));
                }
            }
            (_, Some("$/cancel_request")) => self.cancel_request(items, line, params, from)?,
            (_, Some(method))
                if ours
                    && line.kind == MessageKind::Request
                    && SESSION_REQUESTS.contains(&method) =>
            {
                self.request(items, line, method, params, from)?;
            }
            _ => {}
        }
        Ok(())
    }

    /// A `session/update` that is not about a message.
    fn update(&mut self, items: &mut Items, update: &Value) -> Result<()> {
        let tag = update
            .get("sessionUpdate")
            .and_then(Value::as_str)
            .unwrap_or("");
        match tag {
            "plan" => items.items.push(Item::Plan {
                entries: plan_entries(update.get("entries")),
            }),
            "plan_update" => {
                let plan = update.get("plan");
                let entries = match str_of(plan, "type") {
                    Some("items") => plan_entries(plan.and_then(|p| p.get("entries"))),
                    Some("markdown") => vec![str_of(plan, "content").unwrap_or("").to_owned()],
                    Some("file") => vec![format!("file {}", str_of(plan, "uri").unwrap_or("?"))],
                    _ => vec![plan.map(Value::to_string).unwrap_or_default()],
                };
                match str_of(plan, "planId").and_then(|id| items.plans.get(id)) {
                    Some(&item) => items.items[item] = Item::Plan { entries },
                    None => {
                        items.items.push(Item::Plan { entries });
                        if let Some(id) = str_of(plan, "planId") {
                            items.plans.insert(id.to_owned(), items.items.len() - 1);
                        }
                    }
                }
            }
            "state_update" => {
                let state = (
                    str_of(Some(update), "state").unwrap_or("?").to_owned(),
                    str_of(Some(update), "stopReason").map(str::to_owned),
                );
                if items.state.as_ref() != Some(&state) {
                    items.state = Some(state.clone());
                    items.items.push(Item::State {
                        state: state.0,
                        stop_reason: state.1,
                    });
                }
            }
            "terminal_update" => {
                let Some(id) = str_of(Some(update), "terminalId") else {
                    return Ok(());
                };
                let (view, output) = items.terminal(id);
                if let Some(command) = patch(update, "command") {
                    view.command = command;
                }
                if let Some(cwd) = patch(update, "cwd") {
                    view.cwd = cwd;
                }
                match update.get("exitStatus") {
                    None => {}
                    Some(Value::Null) => {
                        view.exited = false;
                        view.exit_code = None;
                        view.signal = None;
                    }
                    Some(status) => {
                        view.exited = true;
                        view.exit_code = status.get("exitCode").and_then(Value::as_i64);
                        view.signal = str_of(Some(status), "signal").map(str::to_owned);
                    }
                }
                match update.get("output") {
                    None => {}
                    Some(Value::Null) => output.replace(Vec::new()),
                    Some(snapshot) => output.replace(
                        str_of(Some(snapshot), "data")
                            .and_then(decode_base64)
                            .unwrap_or_default(),
                    ),
                }
            }
            "terminal_output_chunk" => {
                if let Some(id) = str_of(Some(update), "terminalId") {
                    let bytes = str_of(Some(update), "data")
                        .and_then(decode_base64)
                        .unwrap_or_default();
                    items.terminal(id).1.append(&bytes);
                }
            }
            _ => self.show_tool_call(items, str_of(Some(update), "toolCallId"))?,
        }
        Ok(())
    }

    fn elicitation(
        &mut self,
        items: &mut Items,
        line: &SessionLine,
        params: Option<&Value>,
    ) -> Result<()> {
        let mut view = ElicitationView {
            seq: line.seq,
            mode: str_of(params, "mode").map(str::to_owned),
            message: str_of(params, "message").unwrap_or("").to_owned(),
            url: str_of(params, "url").map(str::to_owned),
            elicitation_id: str_of(params, "elicitationId").map(str::to_owned),
            tool_call_id: str_of(params.and_then(|p| p.get("scope")), "toolCallId")
                .map(str::to_owned),
            ..ElicitationView::default()
        };
        if let Some(answer) = query::answer_to(self.reader, self.session.connection_id, line.seq)? {
            let answer_value: Value = serde_json::from_slice(&answer.raw).unwrap_or(Value::Null);
            view.answered_by = Some(answered_by(&answer.origin).to_owned());
            match (answer_value.get("result"), answer_value.get("error")) {
                (Some(result), _) => {
                    view.action = Some(str_of(Some(result), "action").unwrap_or("?").to_owned());
                    view.content = result.get("content").filter(|c| !c.is_null()).cloned();
                }
                (None, Some(error)) => {
                    view.action = Some("error".into());
                    view.error = Some(error_text(error));
                }
                (None, None) => view.action = Some("?".into()),
            }
        }
        if let Some(id) = &view.elicitation_id {
            self.elicitations.insert(id.clone());
            items.elicitations.insert(id.clone(), items.items.len());
        }
        items.items.push(Item::Elicitation(view));
        Ok(())
    }

    /// A `$/cancel_request`: shown when the request it names is the session's.
    fn cancel_request(
        &mut self,
        items: &mut Items,
        line: &SessionLine,
        params: Option<&Value>,
        from: &'static str,
    ) -> Result<()> {
        let Some(id) = params.and_then(|p| p.get("requestId")) else {
            return Ok(());
        };
        let cancelled = query::cancelled_request(
            self.reader,
            self.session.connection_id,
            line.seq,
            line.direction,
            &id.to_string(),
        )?;
        let ours = |session: Option<&str>| session == Some(self.session.session_id.as_str());
        let about = match &cancelled {
            Some(request)
                if ours(request.session_id.as_deref()) || ours(line.session_id.as_deref()) =>
            {
                format!("request {id}: {}", request.method.as_deref().unwrap_or("?"))
            }
            None if ours(line.session_id.as_deref()) => format!("request {id} (not recorded)"),
            // Another session's request, or one of no session.
            _ => return Ok(()),
        };
        items.items.push(Item::Request(RequestView {
            seq: line.seq,
            method: "$/cancel_request".into(),
            from,
            about,
            cancels_seq: cancelled.map(|r| r.seq),
            answer: None,
        }));
        Ok(())
    }

    /// One of [`SESSION_REQUESTS`], with what it names and its answer.
    fn request(
        &mut self,
        items: &mut Items,
        line: &SessionLine,
        method: &str,
        params: Option<&Value>,
        from: &'static str,
    ) -> Result<()> {
        let in_cwd = |about: &mut String| {
            if let Some(cwd) = str_of(params, "cwd") {
                if !about.is_empty() {
                    about.push(' ');
                }
                about.push_str(&format!("in {cwd}"));
            }
        };
        let mut about = String::new();
        match method {
            "tool_call/cancel" => {
                let id = str_of(params, "toolCallId");
                self.show_tool_call(items, id)?;
                about = format!("tool call {}", id.unwrap_or("?"));
                if let Some(Some(title)) = id.and_then(|id| self.shown.get(id)) {
                    about.push_str(&format!(" ({title})"));
                }
            }
            "terminal/cancel" => {
                let id = str_of(params, "terminalId").unwrap_or("?");
                about = format!("terminal {id}");
                let command =
                    items
                        .terminals
                        .get(id)
                        .and_then(|(item, _)| match &items.items[*item] {
                            Item::Terminal(view) => view.command.clone(),
                            _ => None,
                        });
                if let Some(command) = command {
                    about.push_str(&format!(" ({command})"));
                }
            }
            "session/resume" => {
                about = match params.and_then(|p| p.get("replayFrom")) {
                    None | Some(Value::Null) => "no replay".into(),
                    Some(cursor) => match str_of(Some(cursor), "type") {
                        Some("start") => "replay from the start".into(),
                        _ => format!("replay from {cursor}"),
                    },
                };
                in_cwd(&mut about);
            }
            "session/load" | "session/fork" | "session/list" => in_cwd(&mut about),
            "session/set_title" => {
                about = format!("title {:?}", str_of(params, "title").unwrap_or(""));
            }
            _ => {}
        }
        let answer =
            query::answer_to(self.reader, self.session.connection_id, line.seq)?.map(|answer| {
                let value: Value = serde_json::from_slice(&answer.raw).unwrap_or(Value::Null);
                answer_summary(method, &value)
            });
        items.items.push(Item::Request(RequestView {
            seq: line.seq,
            method: method.to_owned(),
            from,
            about,
            cancels_seq: None,
            answer,
        }));
        Ok(())
    }

    /// Shows tool call `id` where it is first mentioned (read from the database then, so a
    /// long session's calls are never all held), and remembers its title.
    fn show_tool_call(&mut self, items: &mut Items, id: Option<&str>) -> Result<()> {
        let Some(id) = id.filter(|id| !self.shown.contains_key(*id)) else {
            return Ok(());
        };
        if let Some(call) = query::tool_call(self.reader, self.session, id)? {
            self.shown
                .insert(call.tool_call_id.clone(), call.title.clone());
            items.items.push(Item::ToolCall(call));
        }
        Ok(())
    }
}

/// Who wrote an answer: the client, unless acptap wrote it itself.
fn answered_by(origin: &str) -> &str {
    if origin == "peer" { "client" } else { origin }
}

/// A JSON-RPC error's message (else the error as JSON).
fn error_text(error: &Value) -> String {
    error
        .get("message")
        .and_then(Value::as_str)
        .map_or_else(|| error.to_string(), str::to_owned)
}

/// A response to one of [`SESSION_REQUESTS`] in one line.
fn answer_summary(method: &str, answer: &Value) -> String {
    if let Some(error) = answer.get("error") {
        return format!("error: {}", error_text(error));
    }
    let result = answer.get("result");
    match method {
        "session/fork" => match str_of(result, "sessionId") {
            Some(id) => format!("new session {id}"),
            None => "ok".into(),
        },
        "session/status" => match result.and_then(|r| r.get("status")) {
            Some(Value::String(status)) => format!("status {status}"),
            Some(status) => format!("status {status}"),
            None => "ok".into(),
        },
        "session/list" => match result
            .and_then(|r| r.get("sessions"))
            .and_then(Value::as_array)
        {
            Some(sessions) => format!("{} session(s)", sessions.len()),
            None => "ok".into(),
        },
        _ => "ok".into(),
    }
}

/// A plan's entries as `[status] content`.
fn plan_entries(entries: Option<&Value>) -> Vec<String> {
    entries
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| {
            let status = e.get("status").and_then(Value::as_str).unwrap_or("");
            let content = e.get("content").and_then(Value::as_str).unwrap_or("");
            format!("[{status}] {content}")
        })
        .collect()
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
        "  agent {}{} · cwd {} · connection {} · started {} UTC{}",
        terminal_line(&s.agent, NAME_BYTES),
        s.protocol_version
            .as_ref()
            .map(|v| format!(" · protocol {}", one_line(&protocol_label(v), 40)))
            .unwrap_or_default(),
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
    render_items_unescaped(&mut out, &turn.items);
    out
}

/// The label of a permission request: its v2 title, else its tool call's title or id.
pub(crate) fn permission_label<'a>(
    tool_call_title: Option<&'a str>,
    request: &'a PermissionRow,
) -> &'a str {
    request
        .title
        .as_deref()
        .or(tool_call_title)
        .or(request.tool_call_id.as_deref())
        .unwrap_or("?")
}

/// A terminal's end in one line: `exit 0`, `signal SIGKILL`, `exited`, or `running`.
pub(crate) fn terminal_end(view: &TerminalView) -> String {
    match (&view.exit_code, &view.signal, view.exited) {
        (Some(code), _, _) => format!("exit {code}"),
        (None, Some(signal), _) => format!("signal {signal}"),
        (None, None, true) => "exited".into(),
        (None, None, false) => "running".into(),
    }
}

/// An elicitation's answer in one line: `accept by client`, `error: ...`, `no answer`.
pub(crate) fn elicitation_answer(view: &ElicitationView) -> String {
    match (&view.action, &view.error) {
        (None, _) => "no answer".into(),
        (Some(_), Some(error)) => format!("error: {error}"),
        (Some(action), None) => {
            format!("{action} by {}", view.answered_by.as_deref().unwrap_or("?"))
        }
    }
}

fn render_items_unescaped(out: &mut String, items: &[Item]) {
    for item in items {
        match item {
            Item::AgentText { text, .. } => {
                let _ = writeln!(out, "  agent: {}", one_line(text, 100));
            }
            Item::Thought { text, .. } => {
                let _ = writeln!(out, "  thinks: {}", one_line(text, 100));
            }
            Item::UserText { text, .. } => {
                let _ = writeln!(out, "  user: {}", one_line(text, 100));
            }
            Item::Plan { entries } => {
                let _ = writeln!(out, "  plan:");
                for entry in entries {
                    let _ = writeln!(out, "    {}", one_line(entry, 96));
                }
            }
            Item::State { state, stop_reason } => {
                let _ = writeln!(
                    out,
                    "  state: {}{}",
                    one_line(state, 40),
                    stop_reason
                        .as_deref()
                        .map(|r| format!(" ({})", one_line(r, 40)))
                        .unwrap_or_default()
                );
            }
            Item::Terminal(view) => render_terminal_unescaped(out, view),
            Item::ToolCall(call) => render_tool_call_unescaped(out, call),
            Item::Permission {
                tool_call_title,
                request,
            } => render_permission_unescaped(out, tool_call_title.as_deref(), request),
            Item::Elicitation(view) => render_elicitation_unescaped(out, view),
            Item::Request(view) => render_request_unescaped(out, view),
        }
    }
}

/// A terminal: its command, where it ran, how it ended, how much it wrote, and its last line
/// of output that is not blank.
fn render_terminal_unescaped(out: &mut String, view: &TerminalView) {
    let _ = writeln!(
        out,
        "  terminal {}: {}{} · {} · {} byte(s) of output",
        one_line(&view.terminal_id, 30),
        one_line(view.command.as_deref().unwrap_or("?"), 80),
        view.cwd
            .as_deref()
            .map(|cwd| format!(" (in {})", one_line(cwd, 80)))
            .unwrap_or_default(),
        one_line(&terminal_end(view), 40),
        view.output_bytes
    );
    if let Some(last) = view.output.lines().rev().find(|l| !l.trim().is_empty()) {
        let _ = writeln!(out, "    output ends: {}", one_line(last, 96));
    }
}

/// A tool call in one line: kind, status, duration, title and the paths it touches.
fn render_tool_call_unescaped(out: &mut String, call: &ToolCallRow) {
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

/// A permission request: what it was for, the decision, who made it and when, and (v2) what
/// the agent says it asks and about what.
fn render_permission_unescaped(
    out: &mut String,
    tool_call_title: Option<&str>,
    request: &PermissionRow,
) {
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
        one_line(permission_label(tool_call_title, request), 60),
        decision,
        one_line(request.decided_by.as_deref().unwrap_or("-"), 20),
        request
            .decision_us
            .map(|d| format!(" after {}", format_duration(d)))
            .unwrap_or_default()
    );
    if let Some(description) = &request.description {
        let _ = writeln!(out, "    {}", one_line(description, 96));
    }
    if let Some(subject) = &request.subject_summary {
        let _ = writeln!(out, "    subject: {}", one_line(subject, 96));
    }
}

/// An elicitation: its mode, its message and answer, its URL and what was accepted.
fn render_elicitation_unescaped(out: &mut String, view: &ElicitationView) {
    let _ = writeln!(
        out,
        "  elicitation ({}): {} · {}",
        one_line(view.mode.as_deref().unwrap_or("?"), 20),
        one_line(&view.message, 80),
        one_line(&elicitation_answer(view), 80)
    );
    if let Some(url) = &view.url {
        let _ = writeln!(
            out,
            "    url: {}{}",
            one_line(url, 90),
            if view.completed { " · completed" } else { "" }
        );
    }
    if let Some(content) = &view.content {
        let _ = writeln!(out, "    accepted: {}", one_line(&content.to_string(), 90));
    }
}

/// One of the session's other requests: its method, who sent it, what it is about, the line it
/// cancels, and its answer (a notification has none to miss).
fn render_request_unescaped(out: &mut String, view: &RequestView) {
    let _ = writeln!(
        out,
        "  {} (from {}){}{}{}",
        one_line(&view.method, 40),
        view.from,
        if view.about.is_empty() {
            String::new()
        } else {
            format!(": {}", one_line(&view.about, 80))
        },
        view.cancels_seq
            .map(|seq| format!(" (line {seq})"))
            .unwrap_or_default(),
        match &view.answer {
            Some(answer) => format!(" → {}", one_line(answer, 60)),
            None if view.method.starts_with("$/") || view.method == "elicitation/complete" => {
                String::new()
            }
            None => " → no answer".to_owned(),
        }
    );
}

/// Safe for a terminal: every recorded string goes through [`super::terminal_safe`].
pub fn render(t: &Timeline) -> String {
    let mut out = render_head(&t.session, t.total_turns);
    out.push_str(&render_opening(&t.opening));
    for turn in &t.turns {
        out.push_str(&render_turn(turn));
    }
    out
}

/// The timeline's header, safe for a terminal.
pub(crate) fn render_head(session: &SessionSummary, total_turns: usize) -> String {
    super::terminal_safe(&render_head_unescaped(session, total_turns)).into_owned()
}

/// What happened before the first turn (nothing when `items` is empty), safe for a terminal.
pub(crate) fn render_opening(items: &[Item]) -> String {
    if items.is_empty() {
        return String::new();
    }
    let mut out = "\nBefore the first turn\n".to_owned();
    render_items_unescaped(&mut out, items);
    super::terminal_safe(&out).into_owned()
}

/// One turn, safe for a terminal.
pub(crate) fn render_turn(turn: &TurnView) -> String {
    super::terminal_safe(&render_turn_unescaped(turn)).into_owned()
}
