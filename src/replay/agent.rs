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
//! - a live `session/cancel` ends the turn at once: the rest of its recorded traffic is not sent,
//!   and the prompt is answered with `stopReason: "cancelled"`; the replay goes on with the next
//!   turn;
//! - a recorded agent line is sent: a response with the live client's id in place of the recorded
//!   one, requests (fs, terminal, permission) and notifications as they were, but for the id,
//!   with `--session-ids rewrite` the session ids, and the paths: every path in a field ACP
//!   defines as one (`fs/*` `path`, `terminal/create` `cwd`, tool-call `locations`, diff `path`)
//!   that lies under the recorded cwd is moved to the live session's cwd, and a line with an
//!   absolute path outside it is not sent at all (a replay never touches other files).
//!
//! A client request the script does not expect gets a JSON-RPC error saying what the recording
//! expected at that point (logged on stderr too); with `--strict` the replay ends instead.

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, Write};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::Duration;

use anyhow::bail;
use serde_json::{Value, json};

use super::outbound::{Allowances, Gate};
use super::say;
use super::script::{ScriptLine, with_id, with_renamed_strings};
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
/// ones, and the lines not sent because a path lay outside the recorded cwd.
#[derive(Debug, Default)]
pub struct AgentReplayReport {
    pub differences: Vec<String>,
    pub refused: Vec<String>,
}

impl AgentReplayReport {
    /// In the format of replay as client's report.
    pub fn render(&self) -> String {
        let mut out =
            String::from("recorded: the agent of the recording\nlive:     the client on stdin\n");
        for line in self.differences.iter().chain(&self.refused) {
            out.push_str(&format!(
                "  {}\n",
                crate::terminal::terminal_line(line, crate::terminal::VALUE_BYTES)
            ));
        }
        out.push_str(&match self.differences.len() {
            0 => "no divergence\n".to_owned(),
            1 => "1 divergence\n".to_owned(),
            n => format!("{n} divergences\n"),
        });
        out
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

/// The turn being played: the prompt's recorded and live ids.
struct Turn {
    recorded_id: String,
    live_id: String,
    /// The live client sent `session/cancel` for it.
    cancelled: bool,
    /// The recording has the client cancel it (said once).
    recorded_cancel_said: bool,
}

struct Replayer<W> {
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
    sessions: HashMap<String, String>,
    /// What may be sent to the live client (it knows the sessions' cwds).
    gate: Gate,
    /// Recorded `session/new` id -> its entry in the gate's cwds, until its answer names the
    /// session.
    opening: HashMap<String, usize>,
    /// Recorded terminal id -> the live client's id for the same terminal.
    terminals: HashMap<String, String>,
    /// The requests the replay sent, by id: their method and params (to compare the answers).
    sent: HashMap<String, (String, Value)>,
    /// Recorded agent requests the gate held back, by id, with their method: their answers are
    /// not waited for.
    not_sent: HashMap<String, String>,
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

impl<W: Write> Replayer<W> {
    fn send(&mut self, bytes: &[u8]) -> anyhow::Result<()> {
        self.output.write_all(bytes)?;
        self.output.flush()?;
        Ok(())
    }

    /// The next live line from the client; `None` at end of input.
    fn read(&mut self) -> Option<Message> {
        if let Some(message) = self.pending.pop_front() {
            return Some(message);
        }
        let message = self.incoming.recv().ok()?;
        self.note_cancel(&message);
        Some(message)
    }

    /// Marks the turn cancelled when `message` is the live client's `session/cancel`.
    fn note_cancel(&mut self, message: &Message) {
        if message.kind == MessageKind::Notification
            && message.method.as_deref() == Some("session/cancel")
            && let Some(turn) = &mut self.turn
        {
            turn.cancelled = true;
        }
    }

    /// Takes in what the client sent meanwhile, without waiting: a cancel is noted at once.
    fn look(&mut self) {
        loop {
            match self.incoming.try_recv() {
                Ok(message) => {
                    self.note_cancel(&message);
                    self.pending.push_back(message);
                }
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => return,
            }
        }
    }

    fn cancelled(&self) -> bool {
        self.turn.as_ref().is_some_and(|t| t.cancelled)
    }

    /// Answers a client request the recording cannot answer here.
    fn refuse(&mut self, live: &Message, expected: &str) -> anyhow::Result<()> {
        let method = live.method.as_deref().unwrap_or("?");
        let why = format!(
            "the recording has no answer for `{method}` at turn {}: it expects {expected} next",
            self.turn_number
        );
        say(&why);
        let why = format!("acptap replay: {why}");
        if let Some(id) = &live.id {
            let error = json!({"code": -32603, "message": why});
            self.send(
                format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{error}}}\n").as_bytes(),
            )?;
        }
        if self.options.strict {
            bail!("{why} (--strict)");
        }
        Ok(())
    }

    /// A difference between the live client and the recording: said now, summed up at the end.
    fn differ(&mut self, what: String) -> anyhow::Result<()> {
        say(&format!("divergence: {what}"));
        self.report.differences.push(what);
        if self.options.strict {
            // Ends with the summary and exit status 1 (divergent), not as an error.
            self.stopped = true;
            say("--strict: ending at the first divergence");
        }
        Ok(())
    }

    /// Waits for the live client's counterpart of a recorded client line. Returns early when
    /// the live client cancels the turn.
    fn expect(&mut self, recorded: &ScriptLine) -> anyhow::Result<()> {
        let expected = describe(recorded);
        if recorded.message.kind == MessageKind::Response
            && recorded
                .message
                .id
                .as_ref()
                .is_some_and(|id| self.not_sent.contains_key(id))
        {
            return Ok(());
        }
        loop {
            if recorded.message.kind == MessageKind::Response && self.cancelled() {
                // The turn is over: its answers are not waited for.
                return Ok(());
            }
            let Some(live) = self.read() else {
                bail!(
                    "the client closed its output while the replay waited for {expected} (turn {})",
                    self.turn_number
                );
            };
            let same_method = live.method == recorded.message.method;
            match (recorded.message.kind, live.kind) {
                (MessageKind::Request, MessageKind::Request) if same_method => {
                    if let (Some(recorded_id), Some(live_id)) = (&recorded.message.id, &live.id) {
                        self.ids.insert(recorded_id.clone(), live_id.clone());
                        if live.method.as_deref() == Some("session/prompt") {
                            self.turn_number += 1;
                            self.turn = Some(Turn {
                                recorded_id: recorded_id.clone(),
                                live_id: live_id.clone(),
                                cancelled: false,
                                recorded_cancel_said: false,
                            });
                        }
                    }
                    if matches!(live.method.as_deref(), Some("session/new" | "session/load")) {
                        let cwd = |m: &Message| {
                            m.params()
                                .and_then(|p| p.get("cwd"))
                                .and_then(Value::as_str)
                                .map(|c| c.trim_end_matches('/').to_owned())
                        };
                        if let (Some(recorded_cwd), Some(live_cwd)) =
                            (cwd(&recorded.message), cwd(&live))
                        {
                            self.gate.cwds.push((recorded_cwd, live_cwd));
                            // The session the cwd is for: named by session/load, or by the
                            // recorded answer to session/new when it is sent.
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

    /// Compares the live client's answer to a request of the replay with the recorded answer.
    fn compare_answer(&mut self, recorded: &ScriptLine, live: &Message) -> anyhow::Result<()> {
        let Some(id) = &recorded.message.id else {
            return Ok(());
        };
        let Some((method, params)) = self.sent.get(id).cloned() else {
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

    fn emit(&mut self, recorded: &ScriptLine) -> anyhow::Result<()> {
        if recorded.message.kind == MessageKind::Response
            && let Some(at) = recorded
                .message
                .id
                .as_ref()
                .and_then(|id| self.opening.remove(id))
            && let Some(session) = recorded.message.session_id()
        {
            self.gate.sessions.insert(session.to_owned(), at);
        }
        let judged = self.gate.judge(&recorded.raw);
        for held in judged.held {
            let what = format!(
                "turn {}: recorded line {}{} not sent: {}",
                self.turn_number,
                recorded.seq,
                held.method
                    .as_deref()
                    .map(|m| format!(" (`{m}`)"))
                    .unwrap_or_default(),
                held.reason
            );
            say(&what);
            self.report.refused.push(what);
            if let Some(id) = held.id {
                self.not_sent.insert(id, held.method.unwrap_or_default());
            }
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
            && let Some(live) = recorded.message.id.as_ref().and_then(|id| self.ids.get(id))
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
        self.send(&bytes)
    }

    /// Ends the turn the live client cancelled: its prompt answered `cancelled`; returns where
    /// the script goes on (after the turn's recorded answer).
    fn end_cancelled_turn(&mut self, script: &[ScriptLine], from: usize) -> anyhow::Result<usize> {
        let Some(turn) = self.turn.take() else {
            return Ok(from);
        };
        let end = script[from..]
            .iter()
            .position(|l| {
                l.direction == Direction::AgentToClient
                    && l.message.kind == MessageKind::Response
                    && l.message.id.as_deref() == Some(turn.recorded_id.as_str())
            })
            .map_or(script.len(), |at| from + at + 1);
        say(&format!(
            "the client cancelled turn {}: its recorded rest ({} line(s)) is not sent, the prompt is answered `cancelled`",
            self.turn_number,
            end - from
        ));
        let answer =
            json!({"jsonrpc": "2.0", "id": Value::Null, "result": {"stopReason": "cancelled"}});
        let mut bytes = serde_json::to_vec(&answer)?;
        bytes.push(b'\n');
        let bytes = with_id(&bytes, &turn.live_id).unwrap_or(bytes);
        self.send(&bytes)?;
        Ok(end)
    }
}

/// Plays `script` (one recorded connection) as the agent; returns how the live client's answers
/// compared with the recorded ones.
pub fn replay_as_agent(
    script: &[ScriptLine],
    input: impl BufRead + Send + 'static,
    output: impl Write,
    options: AgentReplayOptions,
) -> anyhow::Result<AgentReplayReport> {
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
    let mut replayer = Replayer {
        incoming,
        pending: VecDeque::new(),
        output,
        options,
        turn_number: 0,
        turn: None,
        ids: HashMap::new(),
        sessions: HashMap::new(),
        gate: Gate::new(allow),
        terminals: HashMap::new(),
        opening: HashMap::new(),
        sent: HashMap::new(),
        not_sent: HashMap::new(),
        report: AgentReplayReport::default(),
        stopped: false,
    };
    let mut previous_ts = script.first().map(|l| l.ts).unwrap_or(0);
    let mut at = 0;
    while at < script.len() {
        if replayer.stopped {
            return Ok(replayer.report);
        }
        replayer.look();
        if replayer.cancelled() {
            at = replayer.end_cancelled_turn(script, at)?;
            continue;
        }
        let line = &script[at];
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
            Direction::ClientToAgent => replayer.expect(line)?,
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
                        replayer.look();
                    }
                    if replayer.cancelled() {
                        at -= 1;
                        continue;
                    }
                }
                let ends_turn = line.message.kind == MessageKind::Response
                    && replayer.turn.as_ref().is_some_and(|t| {
                        line.message.id.as_deref() == Some(t.recorded_id.as_str())
                    });
                replayer.emit(line)?;
                if ends_turn {
                    replayer.turn = None;
                }
            }
        }
        previous_ts = line.ts;
    }
    // The script is over: answer whatever else the client asks with an error, until it leaves.
    while let Some(live) = replayer.read() {
        if live.kind == MessageKind::Request {
            replayer.refuse(&live, "nothing more (the recording has ended)")?;
        }
    }
    Ok(replayer.report)
}
