//! `acptap replay SESSION --as agent`: plays a recorded agent to a live client on stdin/stdout,
//! reacting to what the live client does.
//!
//! The recording is a script. Walking it in order:
//!
//! - a recorded client request is something to wait for: a request of the same method (its live
//!   id is remembered); a recorded answer of the client to a request the replay sent is waited
//!   for, and compared with the recorded one (a permission's outcome and option kind, success or
//!   error of `fs/*` and `terminal/*`): each difference is said on stderr and in the summary at
//!   the end, and with `--strict` the replay ends at the first;
//! - a recorded client notification (`session/cancel`) is not waited for: a client that never
//!   cancels gets the recorded end of the turn (`stopReason: "cancelled"`), and stderr says so;
//!   nor is a recorded v2 `tool_call/cancel` (the recorded agent's reaction is played);
//! - a live `session/cancel`, or a live `$/cancel_request` naming the pending prompt, ends the
//!   turn at once: the rest of its recorded traffic is not sent, and the prompt is answered with
//!   `stopReason: "cancelled"`; the replay goes on with the next turn. A `$/cancel_request`
//!   naming a request the replay sent (a permission request) ends the wait for its answer;
//! - under ACP v2 a turn runs from its prompt to the session's `idle` `state_update` (the
//!   prompt's answer only says the prompt was inserted): a cancelled turn ends with an `idle`
//!   update of stop reason `cancelled`, and a prompt cancelled before its recorded answer was
//!   sent is answered with the error v2 has for a withdrawn request (-32800);
//! - a recorded agent line is sent: a response with the live client's id in place of the recorded
//!   one, requests (fs, terminal, permission) and notifications as they were, but for the id,
//!   with `--session-ids rewrite` the session ids, and the paths: every path in a field ACP
//!   defines as one (`fs/*` `path`, `terminal/create` `cwd`, tool-call `locations`, diff `path`)
//!   that lies under the recorded cwd is moved to the live session's cwd, and a line with an
//!   absolute path outside it is not sent at all (a replay never touches other files). A request
//!   the live client does not serve (`fs/*`, `terminal/*` under ACP v2, or not advertised in its
//!   `initialize`) is not sent either (`outbound::Served`).
//!
//! Under ACP v2 (the recording's negotiated version, `script::negotiated_version`), the replay
//! also serves what a v2 client may ask of the agent at any point: `session/resume` of a
//! recorded session (its recorded updates as the history when `replayFrom` asks for it, then the
//! recorded answer to a resume, else `{}`), and `tool_call/cancel` (answered `{}`; the call gets
//! one final update, and none of its recorded ones after that).
//!
//! A client request the script does not expect gets a JSON-RPC error saying what the recording
//! expected at that point (logged on stderr too); with `--strict` the replay ends instead.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::{BufRead, Write};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::Duration;

use serde_json::{Value, json};

use super::outbound::{Allowances, Gate};
use super::script::{ScriptLine, negotiated_version, with_id, with_renamed_strings};
use super::{ReplayError, say};
use crate::protocol::state::PermissionShapes;
use crate::protocol::toolcall;
use crate::protocol::version::Version;
use crate::protocol::{Direction, Message, MessageKind, parse_line};

#[derive(Debug, Clone)]
pub struct AgentReplayOptions {
    /// Replay with the recorded timing divided by this; `None`: as fast as the client reads.
    pub speed: Option<f64>,
    pub strict: bool,
    pub rewrite_session_ids: bool,
    /// What the replay may ask of the live client beyond the safe default.
    pub allow: Allowances,
}

/// How a replay as the agent went: the live client's answers that differed from the recorded
/// ones, the lines not sent because of what they ask (a path outside the recorded cwd, a
/// command), and the requests not sent because the live client does not serve them.
#[derive(Debug, Default)]
pub struct AgentReplayReport {
    pub differences: Vec<String>,
    pub refused: Vec<String>,
    /// Why, and how many recorded requests: no divergence, the live client just does not serve
    /// them (ACP v2, or a capability its `initialize` did not advertise).
    pub not_served: Vec<(String, usize)>,
    /// The signal that ended the replay (the client ended it with SIGTERM, say): an end like
    /// any other, with the summary and the exit status of what was compared.
    pub ended_by_signal: Option<i32>,
}

impl AgentReplayReport {
    /// In the format of replay as client's report.
    pub fn render(&self) -> String {
        let mut out =
            String::from("recorded: the agent of the recording\nlive:     the client on stdin\n");
        let not_served = self
            .not_served
            .iter()
            .map(|(why, n)| format!("{n} recorded request(s) not sent: {why}"));
        for line in self
            .differences
            .iter()
            .cloned()
            .chain(self.refused.iter().cloned())
            .chain(not_served)
        {
            out.push_str(&format!(
                "  {}\n",
                crate::terminal::terminal_line(&line, crate::terminal::VALUE_BYTES)
            ));
        }
        if let Some(signal) = self.ended_by_signal {
            out.push_str(&format!(
                "  ended by signal {signal}: compared up to there\n"
            ));
        }
        out.push_str(&match self.differences.len() {
            0 => "no divergence\n".to_owned(),
            1 => "1 divergence\n".to_owned(),
            n => format!("{n} divergences\n"),
        });
        out
    }

    /// Counts a request not sent for `why`; `true` the first time for that reason.
    fn not_served(&mut self, why: &str) -> bool {
        match self.not_served.iter_mut().find(|(w, _)| w == why) {
            Some((_, n)) => {
                *n += 1;
                false
            }
            None => {
                self.not_served.push((why.to_owned(), 1));
                true
            }
        }
    }
}

/// What the replay waits for next.
fn describe(line: &ScriptLine) -> String {
    match (line.message.kind, line.message.method.as_deref()) {
        (MessageKind::Request, Some(m)) => format!("a `{m}` request"),
        (MessageKind::Notification, Some(m)) => format!("a `{m}` notification"),
        (MessageKind::Response, _) => format!(
            "the answer to request {}",
            line.message.id.as_deref().unwrap_or("?")
        ),
        _ => "a line the recording could not parse".into(),
    }
}

/// JSON-RPC's error for invalid params: what v2 has an agent answer for a tool call it cannot
/// cancel, and for a `replayFrom` it does not support.
const INVALID_PARAMS: i64 = -32602;

/// JSON-RPC's error for a request its sender cancelled (`$/cancel_request`): how a v2 agent
/// answers a prompt withdrawn before it was inserted.
const REQUEST_CANCELLED: i64 = -32800;

/// A tool call, by its recorded session id and its `toolCallId`.
type CallKey = (String, String);

/// The statuses after which a tool call changes no more.
fn is_final_status(status: &str) -> bool {
    matches!(status, "completed" | "failed" | "cancelled")
}

/// The turn being played: the prompt's recorded and live ids.
struct Turn {
    recorded_id: String,
    live_id: String,
    /// The session, as recorded and as the live client names it.
    recorded_session: Option<String>,
    live_session: Option<String>,
    /// The prompt's answer was sent (v2: the turn runs on until `idle`).
    answered: bool,
    /// v2: a state other than `idle` was reported for the session since the prompt.
    started: bool,
    /// Something of the turn was sent to the client.
    lines_sent: bool,
    /// The live client cancelled it (`session/cancel`, or `$/cancel_request` for the prompt).
    cancelled: bool,
    /// The recording has the client cancel it (said once).
    recorded_cancel_said: bool,
}

/// What the replay knows of the tool calls it played, for a live `tool_call/cancel` (v2).
#[derive(Default)]
struct PlayedCalls {
    /// Every call the live client has been told about.
    sent: HashSet<CallKey>,
    /// Those whose last status sent is final.
    finished: HashSet<CallKey>,
    /// Those the live client cancelled: none of their recorded lines is sent any more.
    cancelled: HashSet<CallKey>,
    /// The status the recorded agent gave a call after the recorded client cancelled it.
    recorded_cancel_status: HashMap<CallKey, String>,
}

/// A line from the live client, as the replay's wait sees it.
enum Incoming {
    Line(Message),
    /// Something the replay serves whenever it comes (a cancel, `tool_call/cancel`) was handled:
    /// what the caller waits for may be over.
    Handled,
    Closed,
}

struct Replayer<'a, W> {
    script: &'a [ScriptLine],
    /// The recording's negotiated protocol version.
    version: Option<Version>,
    /// The live client's lines, read by a thread so that a cancel is seen while lines are sent.
    incoming: Receiver<Message>,
    /// Lines read while looking for a cancel, not yet handled.
    pending: VecDeque<Message>,
    output: W,
    options: AgentReplayOptions,
    turn_number: usize,
    turn: Option<Turn>,
    /// Recorded client request id -> the live client's id for the same request.
    ids: HashMap<String, String>,
    /// Recorded session id -> the id the live client knows it by (`--session-ids rewrite`).
    sessions: HashMap<String, String>,
    /// What may be sent to the live client (it knows the sessions' cwds).
    gate: Gate,
    /// Recorded `session/new` id -> its entry in the gate's cwds, until its answer names the
    /// session.
    opening: HashMap<String, usize>,
    /// Recorded terminal id -> the live client's id for the same terminal.
    terminals: HashMap<String, String>,
    /// The requests the replay sent whose answers are still to come, by id: their method and
    /// params (to compare the answers).
    sent: HashMap<String, (String, Value)>,
    /// Recorded agent requests the gate held back, by id, with their method: their answers are
    /// not waited for.
    not_sent: HashMap<String, String>,
    /// Requests the replay sent that the live client withdrew (`$/cancel_request`): their
    /// answers are not waited for.
    withdrawn: HashSet<String>,
    /// Live request ids a `$/cancel_request` named before the replay took the request up.
    cancelled_early: HashSet<String>,
    /// Recorded client request ids whose recorded answers are not sent: the live client did not
    /// send the request (a recorded `tool_call/cancel`), or sent another in its place (a
    /// `session/resume` standing for the recorded `session/new`).
    unsent_answers: HashSet<String>,
    calls: PlayedCalls,
    report: AgentReplayReport,
    /// `--strict` met a divergence: the replay ends.
    stopped: bool,
}

/// The answer's shape that is compared: `ok`, or `error CODE`; for a permission, its outcome and
/// the kind of the option chosen.
fn answer_shape(method: &str, request: &Value, answer: &Value) -> String {
    if let Some(error) = answer.get("error") {
        // The code, not the message: two clients word the same error differently.
        return format!(
            "error {}",
            error.get("code").map(Value::to_string).unwrap_or_default()
        );
    }
    if method == "session/request_permission" {
        let outcome = answer
            .pointer("/result/outcome/outcome")
            .and_then(Value::as_str);
        let chosen = answer
            .pointer("/result/outcome/optionId")
            .and_then(Value::as_str);
        let kind = chosen.and_then(|id| {
            request
                .get("options")?
                .as_array()?
                .iter()
                .find(|o| o.get("optionId").and_then(Value::as_str) == Some(id))?
                .get("kind")?
                .as_str()
        });
        return match (outcome, kind) {
            (Some("selected"), Some(kind)) => format!("selected {kind}"),
            (Some(outcome), _) => outcome.to_owned(),
            (None, _) => "no outcome".to_owned(),
        };
    }
    "ok".to_owned()
}

/// The tool call a recorded line is about: a `session/update` about a tool call, or a
/// permission request (v1 `toolCall`, v2 `subject`).
fn tool_call_of(message: &Message) -> Option<CallKey> {
    let session = message.session_id()?;
    let params = message.params()?;
    let call = match message.method.as_deref()? {
        "session/update" => toolcall::from_session_update(params)?
            .0
            .get("toolCallId")?
            .as_str()?,
        "session/request_permission" => PermissionShapes::of(Some(params)).tool_call_id()?,
        _ => return None,
    };
    Some((session.to_owned(), call.to_owned()))
}

/// The status a recorded `session/update` gives a tool call, if it gives one.
fn status_of(message: &Message) -> Option<&str> {
    toolcall::from_session_update(message.params()?)?
        .0
        .get("status")?
        .as_str()
}

/// For each tool call the recorded client cancelled (`tool_call/cancel`), the status the
/// recorded agent gave it next: what a live cancel of the same call ends it with.
fn recorded_tool_call_cancels(script: &[ScriptLine]) -> HashMap<CallKey, String> {
    let mut statuses = HashMap::new();
    for (at, line) in script.iter().enumerate() {
        if line.direction != Direction::ClientToAgent
            || line.message.method.as_deref() != Some("tool_call/cancel")
        {
            continue;
        }
        let params = line.message.params();
        let field = |name: &str| params?.get(name)?.as_str().map(str::to_owned);
        let (Some(session), Some(call)) = (field("sessionId"), field("toolCallId")) else {
            continue;
        };
        let key = (session, call);
        let next = script[at + 1..].iter().find_map(|later| {
            (later.direction == Direction::AgentToClient
                && tool_call_of(&later.message).as_ref() == Some(&key))
            .then(|| status_of(&later.message))
            .flatten()
        });
        if let Some(status) = next {
            statuses.entry(key).or_insert_with(|| status.to_owned());
        }
    }
    statuses
}

impl<W: Write> Replayer<'_, W> {
    fn send(&mut self, bytes: &[u8]) -> Result<(), ReplayError> {
        self.output.write_all(bytes)?;
        self.output.flush()?;
        Ok(())
    }

    /// The replay's own answer to a live request: `{"jsonrpc":"2.0","id":ID,KEY:VALUE}` with
    /// the live id as the client wrote it (JSON text).
    fn reply(&mut self, live_id: &str, key: &str, value: Value) -> Result<(), ReplayError> {
        let line = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{live_id},{}:{value}}}\n",
            Value::from(key)
        );
        self.send(line.as_bytes())
    }

    /// A `session/update` of the replay's own, in the session the live client names.
    fn send_update(&mut self, live_session: &Value, update: Value) -> Result<(), ReplayError> {
        let notification = json!({"jsonrpc": "2.0", "method": "session/update",
                                  "params": {"sessionId": live_session, "update": update}});
        let mut bytes = serde_json::to_vec(&notification)?;
        bytes.push(b'\n');
        self.send(&bytes)
    }

    /// The state a recorded line reports for the session of `turn` (v2 `state_update`).
    fn state_of<'l>(&self, turn: &Turn, line: &'l ScriptLine) -> Option<&'l str> {
        if line.message.kind != MessageKind::Notification
            || line.message.session_id() != turn.recorded_session.as_deref()
        {
            return None;
        }
        super::session_state(line.message.params()?)
    }

    fn is_v2(&self) -> bool {
        self.version.is_some_and(Version::is_v2)
    }

    /// Whether the recorded `line` ends `turn`: the answer to its prompt (v1), or the idle
    /// `state_update` of its session once the turn was answered or started (v2, where the answer
    /// only says the prompt was inserted, unless it is an error: then no turn ran).
    fn ends(&self, turn: &Turn, line: &ScriptLine) -> bool {
        if line.direction != Direction::AgentToClient {
            return false;
        }
        let answers_prompt = line.message.kind == MessageKind::Response
            && line.message.id.as_deref() == Some(turn.recorded_id.as_str());
        if !self.is_v2() {
            return answers_prompt;
        }
        (answers_prompt && line.message.error().is_some())
            || ((turn.answered || turn.started) && self.state_of(turn, line) == Some("idle"))
    }

    /// The next live line from the client.
    fn read(&mut self) -> Result<Incoming, ReplayError> {
        if let Some(message) = self.pending.pop_front() {
            return Ok(Incoming::Line(message));
        }
        let message = loop {
            self.signalled()?;
            match self.incoming.recv_timeout(SIGNAL_LOOK) {
                Ok(message) => break message,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Ok(Incoming::Closed);
                }
            }
        };
        Ok(match self.take_in(message)? {
            Some(message) => Incoming::Line(message),
            None => Incoming::Handled,
        })
    }

    /// A signal asked the replay to end: noted in the report, and an `Err` that ends the play
    /// (the summary follows, not as an error).
    fn signalled(&mut self) -> Result<(), ReplayError> {
        let signal = ENDING_SIGNAL.load(std::sync::atomic::Ordering::SeqCst);
        if signal == 0 {
            return Ok(());
        }
        if self.report.ended_by_signal.is_none() {
            say(&format!("ended by signal {signal}: the summary follows"));
            self.report.ended_by_signal = Some(signal);
        }
        Err(ReplayError::Signalled(signal))
    }

    /// Serves at once what a client may send at any point: cancels, and under v2
    /// `tool_call/cancel`; learns the live client's capabilities from its `initialize`.
    /// Returns the message when it is still to be handled in the script's order.
    fn take_in(&mut self, message: Message) -> Result<Option<Message>, ReplayError> {
        match (message.kind, message.method.as_deref()) {
            (MessageKind::Notification, Some("session/cancel")) => {
                if let Some(turn) = &mut self.turn {
                    turn.cancelled = true;
                }
            }
            (MessageKind::Notification, Some("$/cancel_request")) => {
                self.cancel_request(&message);
                return Ok(None);
            }
            (MessageKind::Request, Some("initialize")) => {
                let capabilities = message
                    .params()
                    .and_then(|p| p.get("clientCapabilities"))
                    .cloned()
                    .unwrap_or_else(|| json!({}));
                self.gate.served.client_capabilities = Some(capabilities);
                // A live client that proposes another version than v1 serves no files or
                // terminals either, whatever the recording negotiated.
                self.gate.served.live_version = message
                    .params()
                    .and_then(|p| p.get("protocolVersion"))
                    .map(|v| Version::from_value(v).unwrap_or(Version::Other(u64::MAX)));
            }
            (MessageKind::Request, Some("tool_call/cancel")) if self.is_v2() => {
                self.cancel_tool_call(&message)?;
                return Ok(None);
            }
            _ => {}
        }
        Ok(Some(message))
    }

    /// A live `$/cancel_request`: the pending prompt ends as by `session/cancel`; a request the
    /// replay sent is no longer waited for.
    fn cancel_request(&mut self, message: &Message) {
        let Some(target) = message
            .params()
            .and_then(|p| p.get("requestId"))
            .filter(|id| !id.is_null())
            .map(Value::to_string)
        else {
            say("ignoring a `$/cancel_request` that names no request");
            return;
        };
        if let Some(turn) = &mut self.turn
            && turn.live_id == target
            && !turn.answered
        {
            turn.cancelled = true;
            return;
        }
        if let Some((method, _)) = self.sent.remove(&target) {
            say(&format!(
                "the client cancelled request {target} (`{method}`) with `$/cancel_request`: its answer is not waited for"
            ));
            self.withdrawn.insert(target);
            return;
        }
        if self
            .pending
            .iter()
            .any(|m| m.kind == MessageKind::Request && m.id.as_deref() == Some(target.as_str()))
        {
            // The prompt the replay has not taken up yet: its turn starts cancelled.
            self.cancelled_early.insert(target);
            return;
        }
        say(&format!(
            "ignoring a `$/cancel_request` for request {target}: nothing of that id is pending"
        ));
    }

    /// A live `tool_call/cancel` (v2): answered `{}` for a call the replay has sent and not
    /// finished, which then gets one final update (the status the recorded agent gave it after
    /// a recorded cancel, else `cancelled`) and none of its recorded ones; `-32602` for a call
    /// the client cannot cancel (unknown, or already final), as v2 has an agent answer.
    fn cancel_tool_call(&mut self, live: &Message) -> Result<(), ReplayError> {
        let Some(live_id) = live.id.clone() else {
            return Ok(());
        };
        let field = |name: &str| {
            live.params()
                .and_then(|p| p.get(name))
                .and_then(Value::as_str)
        };
        let (Some(live_session), Some(call)) = (field("sessionId"), field("toolCallId")) else {
            let error = json!({"code": INVALID_PARAMS, "message": "acptap replay: `tool_call/cancel` needs a sessionId and a toolCallId"});
            return self.reply(&live_id, "error", error);
        };
        let session = self
            .recorded_session(live_session)
            .unwrap_or_else(|| live_session.to_owned());
        let key = (session, call.to_owned());
        let why_not = if !self.calls.sent.contains(&key) {
            Some("the replay has not sent it")
        } else if self.calls.finished.contains(&key) {
            Some("it is already final")
        } else {
            None
        };
        if let Some(why_not) = why_not {
            let why = format!("the client asked to cancel tool call `{call}`, but {why_not}");
            say(&why);
            let error = json!({"code": INVALID_PARAMS, "message": format!("acptap replay: {why}")});
            return self.reply(&live_id, "error", error);
        }
        self.reply(&live_id, "result", json!({}))?;
        let status = self
            .calls
            .recorded_cancel_status
            .get(&key)
            .cloned()
            .unwrap_or_else(|| "cancelled".to_owned());
        self.send_update(
            &Value::from(live_session),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": call, "status": status}),
        )?;
        say(&format!(
            "the client cancelled tool call `{call}`: answered, its status sent as `{status}`, and none of its recorded updates from here on is sent"
        ));
        self.calls.finished.insert(key.clone());
        self.calls.cancelled.insert(key);
        Ok(())
    }

    /// Takes in what the client sent meanwhile, without waiting: a cancel is noted at once.
    fn look(&mut self) -> Result<(), ReplayError> {
        self.signalled()?;
        loop {
            match self.incoming.try_recv() {
                Ok(message) => {
                    if let Some(message) = self.take_in(message)? {
                        self.pending.push_back(message);
                    }
                }
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => return Ok(()),
            }
        }
    }

    fn cancelled(&self) -> bool {
        self.turn.as_ref().is_some_and(|t| t.cancelled)
    }

    /// Answers a client request the recording cannot answer here.
    fn refuse(&mut self, live: &Message, expected: &str) -> Result<(), ReplayError> {
        let method = live.method.as_deref().unwrap_or("?");
        let why = format!(
            "the recording has no answer for `{method}` at turn {}: it expects {expected} next",
            self.turn_number
        );
        say(&why);
        let why = format!("acptap replay: {why}");
        if let Some(id) = &live.id {
            let error = json!({"code": -32603, "message": why});
            self.reply(id, "error", error)?;
        }
        if self.options.strict {
            return Err(ReplayError::Strict(why));
        }
        Ok(())
    }

    /// A difference between the live client and the recording: said now, summed up at the end.
    fn differ(&mut self, what: String) -> Result<(), ReplayError> {
        say(&format!("divergence: {what}"));
        self.report.differences.push(what);
        if self.options.strict {
            // Ends with the summary and exit status 1 (divergent), not as an error.
            self.stopped = true;
            say("--strict: ending at the first divergence");
        }
        Ok(())
    }

    /// Whether `recorded` is a client `tool_call/cancel` whose call the live client cancelled.
    fn live_cancel_served(&self, recorded: &ScriptLine) -> bool {
        if recorded.message.method.as_deref() != Some("tool_call/cancel") {
            return false;
        }
        let params = recorded.message.params();
        let field = |name: &str| params?.get(name)?.as_str().map(str::to_owned);
        match (field("sessionId"), field("toolCallId")) {
            (Some(session), Some(call)) => self.calls.cancelled.contains(&(session, call)),
            _ => false,
        }
    }

    /// Whether the replay no longer waits for the answer to its own request `id`.
    fn answer_not_awaited(&self, id: &str) -> bool {
        self.not_sent.contains_key(id) || self.withdrawn.contains(id)
    }

    /// Waits for the live client's counterpart of the recorded client line at `index`. Returns
    /// early when the live client cancels the turn.
    fn expect(&mut self, index: usize) -> Result<(), ReplayError> {
        let script = self.script;
        let recorded = &script[index];
        let expected = describe(recorded);
        loop {
            if recorded.message.kind == MessageKind::Response
                && (self.cancelled()
                    || recorded
                        .message
                        .id
                        .as_ref()
                        .is_some_and(|id| self.answer_not_awaited(id)))
            {
                // The turn is over, or the request was never sent or was withdrawn: its answer
                // is not waited for.
                return Ok(());
            }
            if self.live_cancel_served(recorded) {
                return Ok(());
            }
            let live = match self.read()? {
                Incoming::Line(live) => live,
                Incoming::Handled => continue,
                Incoming::Closed => {
                    return Err(ReplayError::ClientClosed {
                        expected,
                        turn: self.turn_number,
                    });
                }
            };
            let same_method = live.method == recorded.message.method;
            match (recorded.message.kind, live.kind) {
                (MessageKind::Request, MessageKind::Request) if same_method => {
                    self.take_up(recorded, &live);
                    return Ok(());
                }
                (MessageKind::Notification, MessageKind::Notification) if same_method => {
                    return Ok(());
                }
                // The client's notifications are never waited for (see the module's comment).
                (_, MessageKind::Notification) => {}
                // Our own requests keep the recorded ids, so the answer comes with the same id.
                (MessageKind::Response, MessageKind::Response)
                    if live.id == recorded.message.id =>
                {
                    self.compare_answer(recorded, &live)?;
                    return Ok(());
                }
                (_, MessageKind::Request)
                    if self.is_v2() && live.method.as_deref() == Some("session/resume") =>
                {
                    if self.serve_resume(&live, index, &expected)? {
                        return Ok(());
                    }
                }
                (_, MessageKind::Request) => self.refuse(&live, &expected)?,
                _ => say(&format!(
                    "ignoring a client {} while waiting for {expected}",
                    live.method
                        .as_deref()
                        .map(|m| format!("`{m}`"))
                        .unwrap_or_else(|| "response".into())
                )),
            }
        }
    }

    /// The live client sent the request the script waited for: its id is remembered, a prompt
    /// starts a turn, a session's cwd is learned.
    fn take_up(&mut self, recorded: &ScriptLine, live: &Message) {
        if let (Some(recorded_id), Some(live_id)) = (&recorded.message.id, &live.id) {
            self.ids.insert(recorded_id.clone(), live_id.clone());
            if live.method.as_deref() == Some("session/prompt") {
                self.turn_number += 1;
                self.turn = Some(Turn {
                    recorded_id: recorded_id.clone(),
                    live_id: live_id.clone(),
                    recorded_session: recorded.message.session_id().map(str::to_owned),
                    live_session: live.session_id().map(str::to_owned),
                    answered: false,
                    started: false,
                    lines_sent: false,
                    cancelled: self.cancelled_early.remove(live_id),
                    recorded_cancel_said: false,
                });
            }
        }
        if matches!(
            live.method.as_deref(),
            Some("session/new" | "session/load" | "session/resume")
        ) {
            let cwd = |m: &Message| {
                m.params()
                    .and_then(|p| p.get("cwd"))
                    .and_then(Value::as_str)
                    .map(|c| c.trim_end_matches('/').to_owned())
            };
            if let (Some(recorded_cwd), Some(live_cwd)) = (cwd(&recorded.message), cwd(live)) {
                self.gate.cwds.push((recorded_cwd, live_cwd));
                // The session the cwd is for: named by session/load and session/resume, or by
                // the recorded answer to session/new when it is sent.
                let at = self.gate.cwds.len() - 1;
                match recorded.message.session_id() {
                    Some(session) => {
                        self.gate.sessions.insert(session.to_owned(), at);
                    }
                    None => {
                        if let Some(id) = &recorded.message.id {
                            self.opening.insert(id.clone(), at);
                        }
                    }
                }
            }
        }
    }

    /// The recorded session a live session id stands for: the id itself when the recording has
    /// it, or the recorded one that `--session-ids rewrite` renamed (in this replay, or in an
    /// earlier one: `replay-<pid>-<id>`). The live id is then the one the replay uses for it.
    fn recorded_session(&mut self, live: &str) -> Option<String> {
        if let Some((recorded, _)) = self.sessions.iter().find(|(_, named)| *named == live) {
            return Some(recorded.clone());
        }
        let in_script = |id: &str| {
            self.script
                .iter()
                .any(|l| l.message.session_id() == Some(id))
        };
        let recorded = if in_script(live) {
            live.to_owned()
        } else {
            let earlier = live
                .strip_prefix("replay-")
                .and_then(|rest| rest.split_once('-'))
                .filter(|(pid, _)| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
                .map(|(_, id)| id)?;
            if !in_script(earlier) {
                return None;
            }
            earlier.to_owned()
        };
        if self.options.rewrite_session_ids {
            self.sessions.insert(recorded.clone(), live.to_owned());
        }
        Some(recorded)
    }

    /// A live `session/resume` (v2) the script does not have here. For a recorded session, the
    /// replay serves it: its cwd is learned, its recorded updates are sent as the history when
    /// `replayFrom` is `{"type": "start"}` (all of them when the resume stands for the session's
    /// recorded opening, which the script is waiting for; else those played so far), then the
    /// recorded answer to a resume of it, else `{}`. Returns whether it stood for the recorded
    /// request at `waiting` (the script then goes on past it).
    fn serve_resume(
        &mut self,
        live: &Message,
        waiting: usize,
        expected: &str,
    ) -> Result<bool, ReplayError> {
        let Some(live_id) = live.id.clone() else {
            return Ok(false);
        };
        let params = live.params();
        let Some(session) = params
            .and_then(|p| p.get("sessionId"))
            .and_then(Value::as_str)
            .and_then(|s| self.recorded_session(s))
        else {
            self.refuse(live, expected)?;
            return Ok(false);
        };
        let history = match history_asked(params) {
            Ok(history) => history,
            Err(why) => {
                say(&why);
                return self
                    .reply(
                        &live_id,
                        "error",
                        json!({"code": INVALID_PARAMS, "message": why}),
                    )
                    .map(|()| false);
            }
        };
        let script = self.script;
        let opening = recorded_opening(script, &session);
        self.learn_resumed_cwd(&session, opening.map(|(_, line)| line), live);
        let stands_for_opening = opening.is_some_and(|(at, _)| at == waiting);
        if stands_for_opening && let Some(id) = &script[waiting].message.id {
            self.unsent_answers.insert(id.clone());
        }
        let played = if stands_for_opening {
            script.len()
        } else {
            waiting
        };
        let updates = if history {
            resume_history(script, played, &session)
        } else {
            Vec::new()
        };
        say(&format!(
            "the client resumed the recorded session `{session}`: {} recorded update(s) sent as its history, then {}",
            updates.len(),
            if stands_for_opening {
                "the replay goes on with its first turn"
            } else {
                "the replay goes on where it was"
            }
        ));
        for line in updates {
            self.emit(line, None)?;
        }
        self.answer_resume(&live_id, params, &session)?;
        Ok(stands_for_opening)
    }

    /// Learns the cwd of a resumed session the gate does not know yet: the live resume's, for
    /// the cwd of the session's recorded opening.
    fn learn_resumed_cwd(&mut self, session: &str, opening: Option<&ScriptLine>, live: &Message) {
        if self.gate.sessions.contains_key(session) {
            return;
        }
        let cwd = |m: &Message| {
            m.params()?
                .get("cwd")?
                .as_str()
                .map(|c| c.trim_end_matches('/').to_owned())
        };
        if let Some(recorded_cwd) = opening.and_then(|line| cwd(&line.message))
            && let Some(live_cwd) = cwd(live)
        {
            self.gate.cwds.push((recorded_cwd, live_cwd));
            self.gate
                .sessions
                .insert(session.to_owned(), self.gate.cwds.len() - 1);
        }
    }

    /// Answers a served resume: first the session's current state (v2 has the agent report it
    /// before it answers a resume), then the recorded answer to a resume of the session, else
    /// `{}` (v2's ResumeSessionResponse: every field optional).
    fn answer_resume(
        &mut self,
        live_id: &str,
        params: Option<&Value>,
        session: &str,
    ) -> Result<(), ReplayError> {
        let running = self
            .turn
            .as_ref()
            .is_some_and(|t| t.recorded_session.as_deref() == Some(session));
        let live_session = params
            .and_then(|p| p.get("sessionId"))
            .cloned()
            .unwrap_or(Value::Null);
        self.send_update(
            &live_session,
            json!({"sessionUpdate": "state_update", "state": if running { "running" } else { "idle" }}),
        )?;
        let script = self.script;
        let recorded_answer = script.iter().enumerate().find_map(|(at, line)| {
            (line.direction == Direction::ClientToAgent
                && line.message.method.as_deref() == Some("session/resume")
                && line.message.session_id() == Some(session))
            .then(|| answer_to(script, at))
            .flatten()
        });
        match recorded_answer {
            Some(answer) => self.emit(answer, Some(live_id)),
            None => self.reply(live_id, "result", json!({})),
        }
    }

    /// Compares the live client's answer to a request of the replay with the recorded answer.
    fn compare_answer(&mut self, recorded: &ScriptLine, live: &Message) -> Result<(), ReplayError> {
        let Some(id) = &recorded.message.id else {
            return Ok(());
        };
        let Some((method, params)) = self.sent.remove(id) else {
            return Ok(());
        };
        if method == "terminal/create" {
            // The terminal the replay had created: the recorded agent may ask about it, by the
            // live client's id.
            let terminal = |m: &Message| {
                m.result()
                    .and_then(|r| r.get("terminalId"))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            };
            if let Some(recorded_terminal) = terminal(&recorded.message) {
                self.gate
                    .created_terminals
                    .insert(recorded_terminal.clone());
                if let Some(live_terminal) = terminal(live)
                    && recorded_terminal != live_terminal
                {
                    self.terminals.insert(recorded_terminal, live_terminal);
                }
            }
        }
        if self.cancelled() {
            // Answers to a cancelled turn's requests differ by design (`cancelled`).
            return Ok(());
        }
        let null = Value::Null;
        let recorded_shape = answer_shape(
            &method,
            &params,
            recorded.message.value.as_ref().unwrap_or(&null),
        );
        let live_shape = answer_shape(&method, &params, live.value.as_ref().unwrap_or(&null));
        if recorded_shape != live_shape {
            self.differ(format!(
                "turn {}: `{method}` (request {id}): the recording answered {recorded_shape}, the live client {live_shape}",
                self.turn_number
            ))?;
        }
        Ok(())
    }

    /// Sends a recorded agent line, as the gate lets it go. A response goes with the live id of
    /// the request it answers: `answering` when given, else the one the script took up.
    fn emit(&mut self, recorded: &ScriptLine, answering: Option<&str>) -> Result<(), ReplayError> {
        if recorded.message.kind == MessageKind::Response {
            if let Some(id) = &recorded.message.id
                && answering.is_none()
                && self.unsent_answers.remove(id)
            {
                return Ok(());
            }
            if let Some(at) = recorded
                .message
                .id
                .as_ref()
                .and_then(|id| self.opening.remove(id))
                && let Some(session) = recorded.message.session_id()
            {
                self.gate.sessions.insert(session.to_owned(), at);
            }
        }
        let call = tool_call_of(&recorded.message);
        if let Some(key) = &call
            && self.calls.cancelled.contains(key)
        {
            // The live client cancelled this tool call: it got its final update already.
            if let Some(id) = &recorded.message.id {
                let method = recorded.message.method.clone().unwrap_or_default();
                self.not_sent.insert(id.clone(), method);
            }
            return Ok(());
        }
        let judged = self.gate.judge(&recorded.raw);
        for held in judged.held {
            if let Some(id) = &held.id {
                self.not_sent
                    .insert(id.clone(), held.method.clone().unwrap_or_default());
            }
            let method = held
                .method
                .as_deref()
                .map(|m| format!(" (`{m}`)"))
                .unwrap_or_default();
            if held.not_served {
                if self.report.not_served(&held.reason) {
                    say(&format!(
                        "turn {}: recorded line {}{method} not sent, nor any other for this reason: {}",
                        self.turn_number, recorded.seq, held.reason
                    ));
                }
                continue;
            }
            let what = format!(
                "turn {}: recorded line {}{method} not sent: {}",
                self.turn_number, recorded.seq, held.reason
            );
            say(&what);
            self.report.refused.push(what);
        }
        let Some(mut bytes) = judged.bytes else {
            return Ok(());
        };
        for notice in &judged.notices {
            say(&format!("turn {}: {notice}", self.turn_number));
        }
        for (id, method, params) in judged.requests {
            self.sent.insert(id, (method, params));
        }
        if recorded.message.kind == MessageKind::Response
            && let Some(live) = answering.or_else(|| {
                recorded
                    .message
                    .id
                    .as_ref()
                    .and_then(|id| self.ids.get(id))
                    .map(String::as_str)
            })
            && let Some(swapped) = with_id(&bytes, live)
        {
            bytes = swapped;
        }
        if !self.terminals.is_empty() {
            bytes = with_renamed_strings(&bytes, &self.terminals);
        }
        if self.options.rewrite_session_ids {
            if let Some(session) = recorded.message.session_id()
                && !self.sessions.contains_key(session)
            {
                let renamed = format!("replay-{}-{session}", std::process::id());
                self.sessions.insert(session.to_owned(), renamed);
            }
            bytes = with_renamed_strings(&bytes, &self.sessions);
        }
        self.send(&bytes)?;
        if let Some(turn) = &mut self.turn {
            turn.lines_sent = true;
        }
        if let Some(key) = call {
            if status_of(&recorded.message).is_some_and(is_final_status) {
                self.calls.finished.insert(key.clone());
            }
            self.calls.sent.insert(key);
        }
        Ok(())
    }

    /// A recorded client `tool_call/cancel` (v2) inside a running turn is not waited for: the
    /// recorded agent's side is played as it was (the call's final status included), and stderr
    /// says the live client has not cancelled.
    fn pass_recorded_tool_call_cancel(&mut self, line: &ScriptLine) {
        let params = line.message.params();
        let field = |name: &str| params?.get(name)?.as_str().map(str::to_owned);
        let (Some(session), Some(call)) = (field("sessionId"), field("toolCallId")) else {
            return;
        };
        if !self.calls.cancelled.contains(&(session, call.clone())) {
            say(&format!(
                "the recorded client cancelled tool call `{call}` here (turn {}); the live client has not: the recorded rest of the call is played",
                self.turn_number
            ));
        }
    }

    /// Ends the turn the live client cancelled; returns where the script goes on (after the
    /// turn's recorded end). v1: its prompt is answered `cancelled`. v2: a prompt not answered yet
    /// is answered as withdrawn (-32800), and a turn the client has seen anything of ends with
    /// an `idle` update of stop reason `cancelled`.
    fn end_cancelled_turn(&mut self, from: usize) -> Result<usize, ReplayError> {
        let script = self.script;
        let Some(turn) = self.turn.take() else {
            return Ok(from);
        };
        let end = script[from..].iter().enumerate().find_map(|(at, l)| {
            if self.ends(&turn, l) {
                Some(from + at + 1)
            } else {
                // v2: a turn whose end was not recorded ends at the next prompt.
                (self.is_v2()
                    && l.direction == Direction::ClientToAgent
                    && l.message.kind == MessageKind::Request
                    && l.message.method.as_deref() == Some("session/prompt"))
                .then_some(from + at)
            }
        });
        let end = end.unwrap_or(script.len());
        let how = if !self.is_v2() {
            "the prompt is answered `cancelled`"
        } else if turn.answered {
            "the turn ends `cancelled`"
        } else {
            "the prompt is answered as withdrawn (-32800)"
        };
        say(&format!(
            "the client cancelled turn {}: its recorded rest ({} line(s)) is not sent, {how}",
            self.turn_number,
            end - from
        ));
        if !self.is_v2() {
            self.reply(&turn.live_id, "result", json!({"stopReason": "cancelled"}))?;
            return Ok(end);
        }
        if !turn.answered {
            let error = json!({"code": REQUEST_CANCELLED, "message": "Request cancelled"});
            self.reply(&turn.live_id, "error", error)?;
        }
        if turn.answered || turn.lines_sent {
            let session = turn.live_session.map_or(Value::Null, Value::from);
            self.send_update(
                &session,
                json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"}),
            )?;
        }
        Ok(end)
    }
}

/// Whether a live `session/resume` asks for the session's history: `replayFrom` absent or
/// `null` (no), `{"type": "start"}` (yes); `Err(why)` for any other point, which a replay
/// cannot resume from.
fn history_asked(params: Option<&Value>) -> Result<bool, String> {
    match params.and_then(|p| p.get("replayFrom")) {
        None | Some(Value::Null) => Ok(false),
        Some(from) if from.get("type").and_then(Value::as_str) == Some("start") => Ok(true),
        Some(from) => Err(format!(
            "acptap replay: a replay resumes from the start only (`replayFrom: {{\"type\": \"start\"}}`), not from {from}"
        )),
    }
}

/// The request that opened a recorded session, and where: the client's `session/new` whose
/// recorded answer names it, or a `session/load` or `session/resume` of it.
fn recorded_opening<'s>(
    script: &'s [ScriptLine],
    session: &str,
) -> Option<(usize, &'s ScriptLine)> {
    script.iter().enumerate().find_map(|(at, line)| {
        let opens = line.direction == Direction::ClientToAgent
            && line.message.kind == MessageKind::Request
            && match line.message.method.as_deref() {
                Some("session/new") => answer_to(script, at)
                    .is_some_and(|answer| answer.message.session_id() == Some(session)),
                Some("session/load" | "session/resume") => {
                    line.message.session_id() == Some(session)
                }
                _ => false,
            };
        opens.then_some((at, line))
    })
}

/// The history a served resume sends: the session's recorded updates among the first `played`
/// lines. The conversation, not the states it went through (the current state follows it),
/// nor the history the recorded agent replayed itself for a recorded resume or load.
fn resume_history<'s>(
    script: &'s [ScriptLine],
    played: usize,
    session: &str,
) -> Vec<&'s ScriptLine> {
    let replayed_by_the_recording: Vec<std::ops::Range<usize>> = script
        .iter()
        .enumerate()
        .filter(|(_, l)| {
            l.direction == Direction::ClientToAgent
                && matches!(
                    l.message.method.as_deref(),
                    Some("session/resume" | "session/load")
                )
                && l.message.session_id() == Some(session)
        })
        .map(|(at, _)| {
            let end = answer_to(script, at).map_or(script.len(), |answer| {
                script.partition_point(|l| l.seq <= answer.seq)
            });
            at..end
        })
        .collect();
    script[..played]
        .iter()
        .enumerate()
        .filter(|(at, l)| {
            l.direction == Direction::AgentToClient
                && l.message.kind == MessageKind::Notification
                && l.message.method.as_deref() == Some("session/update")
                && l.message.session_id() == Some(session)
                && l.message
                    .params()
                    .and_then(|p| p.pointer("/update/sessionUpdate"))
                    != Some(&Value::from("state_update"))
                && !replayed_by_the_recording.iter().any(|r| r.contains(at))
        })
        .map(|(_, l)| l)
        .collect()
}

/// The recorded answer to the request at `request` (the first response of the other side with
/// its id).
fn answer_to(script: &[ScriptLine], request: usize) -> Option<&ScriptLine> {
    let line = &script[request];
    let id = line.message.id.as_deref()?;
    script[request + 1..].iter().find(|l| {
        l.direction != line.direction
            && l.message.kind == MessageKind::Response
            && l.message.id.as_deref() == Some(id)
    })
}

/// Plays `script` (one recorded connection) as the agent; returns how the live client's answers
/// compared with the recorded ones.
pub fn replay_as_agent(
    script: &[ScriptLine],
    input: impl BufRead + Send + 'static,
    output: impl Write,
    options: AgentReplayOptions,
) -> Result<AgentReplayReport, ReplayError> {
    let allow = options.allow;
    let (tx, incoming) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut input = input;
        let mut line = Vec::new();
        loop {
            line.clear();
            match input.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let message = parse_line(&line);
            if message.kind == MessageKind::Invalid {
                say("ignoring a client line that is not JSON-RPC");
                continue;
            }
            if tx.send(message).is_err() {
                return;
            }
        }
    });
    watch_signals();
    let version = negotiated_version(script);
    let mut gate = Gate::new(allow);
    gate.served.version = version;
    let mut replayer = Replayer {
        script,
        version,
        incoming,
        pending: VecDeque::new(),
        output,
        options,
        turn_number: 0,
        turn: None,
        ids: HashMap::new(),
        sessions: HashMap::new(),
        gate,
        terminals: HashMap::new(),
        opening: HashMap::new(),
        sent: HashMap::new(),
        not_sent: HashMap::new(),
        withdrawn: HashSet::new(),
        cancelled_early: HashSet::new(),
        unsent_answers: HashSet::new(),
        calls: PlayedCalls {
            recorded_cancel_status: recorded_tool_call_cancels(script),
            ..PlayedCalls::default()
        },
        report: AgentReplayReport::default(),
        stopped: false,
    };
    let played = play(&mut replayer, script);
    match played {
        Ok(()) => Ok(replayer.report),
        // A signal ends the replay where it was (a pipe may be gone already): the summary of
        // what was compared, not an error.
        Err(_) if replayer.report.ended_by_signal.is_some() => Ok(replayer.report),
        Err(error) => Err(error),
    }
}

/// The signal (SIGTERM, SIGINT, SIGHUP) that asked the replay to end; 0 while none did.
static ENDING_SIGNAL: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// How often a replay waiting on the client looks for [`ENDING_SIGNAL`].
const SIGNAL_LOOK: std::time::Duration = std::time::Duration::from_millis(50);

/// Notes a SIGTERM, SIGINT or SIGHUP in [`ENDING_SIGNAL`], so the replay ends where it is with
/// its summary. A replay that does not look within 3 s (waiting out the recorded timing) exits
/// with the signal's status.
fn watch_signals() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP]) else {
        return;
    };
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            ENDING_SIGNAL.store(signal, std::sync::atomic::Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_secs(3));
            std::process::exit(128 + signal);
        }
    });
}

/// Plays the script, then serves the client until it leaves.
fn play<W: Write>(
    replayer: &mut Replayer<'_, W>,
    script: &[ScriptLine],
) -> Result<(), ReplayError> {
    let mut previous_ts = script.first().map(|l| l.ts).unwrap_or(0);
    let mut at = 0;
    while at < script.len() {
        if replayer.stopped {
            return Ok(());
        }
        replayer.look()?;
        if replayer.cancelled() {
            at = replayer.end_cancelled_turn(at)?;
            continue;
        }
        let index = at;
        let line = &script[index];
        at += 1;
        match line.direction {
            Direction::ClientToAgent if line.message.kind == MessageKind::Notification => {
                // Not waited for: a client that never cancels gets the recorded end of the turn.
                if line.message.method.as_deref() == Some("session/cancel")
                    && let Some(turn) = &mut replayer.turn
                    && !turn.recorded_cancel_said
                {
                    turn.recorded_cancel_said = true;
                    say(&format!(
                        "the recorded client cancelled turn {} here; the live client has not: the recorded end of the turn is played (stopReason `cancelled`)",
                        replayer.turn_number
                    ));
                }
            }
            Direction::ClientToAgent
                if replayer.is_v2()
                    && line.message.kind == MessageKind::Request
                    && line.message.method.as_deref() == Some("tool_call/cancel") =>
            {
                // The live client's own is answered by `take_in`, never by the recorded answer.
                if let Some(id) = &line.message.id {
                    replayer.unsent_answers.insert(id.clone());
                }
                if replayer.turn.is_some() {
                    // Not waited for inside a running turn, as a recorded session/cancel.
                    replayer.pass_recorded_tool_call_cancel(line);
                } else {
                    // Between turns it is the client's next move, waited for as any request.
                    replayer.expect(index)?;
                }
            }
            Direction::ClientToAgent => replayer.expect(index)?,
            _ => {
                if let Some(speed) = replayer.options.speed.filter(|s| *s > 0.0) {
                    let gap = (line.ts - previous_ts).max(0) as f64 / 1e6 / speed;
                    // A recorded gap is at most a day of waiting, whatever the recording says.
                    let gap = Duration::try_from_secs_f64(gap)
                        .unwrap_or(Duration::MAX)
                        .min(Duration::from_secs(86_400));
                    // In slices, so that a live cancel ends the wait too.
                    let until = std::time::Instant::now() + gap;
                    while !replayer.cancelled() {
                        let left = until.saturating_duration_since(std::time::Instant::now());
                        if left.is_zero() {
                            break;
                        }
                        std::thread::sleep(left.min(Duration::from_millis(50)));
                        replayer.look()?;
                    }
                    if replayer.cancelled() {
                        at -= 1;
                        continue;
                    }
                }
                let ends_turn = replayer
                    .turn
                    .as_ref()
                    .is_some_and(|t| replayer.ends(t, line));
                let answers_prompt = line.message.kind == MessageKind::Response
                    && replayer.turn.as_ref().is_some_and(|t| {
                        line.message.id.as_deref() == Some(t.recorded_id.as_str())
                    });
                let starts = replayer
                    .turn
                    .as_ref()
                    .and_then(|t| replayer.state_of(t, line))
                    .is_some_and(|state| state != "idle");
                replayer.emit(line, None)?;
                if let Some(turn) = &mut replayer.turn {
                    turn.answered |= answers_prompt;
                    turn.started |= starts;
                }
                if ends_turn {
                    replayer.turn = None;
                }
            }
        }
        previous_ts = line.ts;
    }
    // The script is over: answer whatever else the client asks (a v2 resume is still served,
    // the whole session being played), else with an error, until it leaves.
    let ended = "nothing more (the recording has ended)";
    loop {
        let live = match replayer.read()? {
            Incoming::Line(live) => live,
            Incoming::Handled => continue,
            Incoming::Closed => break,
        };
        if live.kind != MessageKind::Request {
            continue;
        }
        if replayer.is_v2() && live.method.as_deref() == Some("session/resume") {
            replayer.serve_resume(&live, script.len(), ended)?;
        } else {
            replayer.refuse(&live, ended)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(direction: Direction, text: &str) -> ScriptLine {
        ScriptLine {
            seq: 0,
            ts: 0,
            direction,
            raw: text.as_bytes().to_vec(),
            message: parse_line(text.as_bytes()),
        }
    }

    #[test]
    fn a_recorded_tool_call_cancel_ends_the_call_with_the_status_the_agent_gave_it_next() {
        let script = [
            line(
                Direction::ClientToAgent,
                r#"{"jsonrpc":"2.0","id":5,"method":"tool_call/cancel","params":{"sessionId":"s","toolCallId":"t"}}"#,
            ),
            // Another call's update, then one of `t` without a status, then its final one.
            line(
                Direction::AgentToClient,
                r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"u","status":"completed"}}}"#,
            ),
            line(
                Direction::AgentToClient,
                r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_content_chunk","toolCallId":"t","content":{"type":"content","content":{"type":"text","text":"x"}}}}}"#,
            ),
            line(
                Direction::AgentToClient,
                r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t","status":"failed"}}}"#,
            ),
        ];
        let statuses = recorded_tool_call_cancels(&script);
        assert_eq!(
            statuses,
            HashMap::from([(("s".to_owned(), "t".to_owned()), "failed".to_owned())])
        );
        // A v2 permission request names its call by its subject.
        let permission = line(
            Direction::AgentToClient,
            r#"{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"s","title":"Run","subject":{"type":"command","command":"make","cwd":"/p","toolCallId":"t"},"options":[]}}"#,
        );
        assert_eq!(
            tool_call_of(&permission.message),
            Some(("s".to_owned(), "t".to_owned()))
        );
    }
}
