//! `acptap replay SESSION --as agent`: plays a recorded agent to a live client on stdin/stdout.
//!
//! The recording is a script. Walking it in order:
//!
//! - a recorded client line is something to wait for: a request of the same method (its live id
//!   is remembered), or the client's answer to a request the replay sent; a recorded client
//!   notification (`session/cancel`) is not waited for, so a client that never cancels still gets
//!   the rest of the recorded turn;
//! - a recorded agent line is sent: a response with the live client's id in place of the recorded
//!   one, requests (fs, terminal, permission) and notifications as they were, byte for byte but
//!   for the id and, with `--session-ids rewrite`, the session ids.
//!
//! A client request the script does not expect gets a JSON-RPC error saying what the recording
//! expected at that point (logged on stderr too); with `--strict` the replay ends instead.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::time::Duration;

use anyhow::bail;
use serde_json::json;

use super::script::{ScriptLine, with_id, with_renamed_strings};
use crate::protocol::{Direction, Message, MessageKind, parse_line};

#[derive(Debug, Clone)]
pub struct AgentReplayOptions {
    /// Replay with the recorded timing divided by this; `None`: as fast as the client reads.
    pub speed: Option<f64>,
    pub strict: bool,
    pub rewrite_session_ids: bool,
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

struct Replayer<R, W> {
    input: R,
    output: W,
    options: AgentReplayOptions,
    turn: usize,
    /// Recorded client request id -> the live client's id for the same request.
    ids: HashMap<String, String>,
    sessions: HashMap<String, String>,
}

impl<R: BufRead, W: Write> Replayer<R, W> {
    fn send(&mut self, bytes: &[u8]) -> anyhow::Result<()> {
        self.output.write_all(bytes)?;
        self.output.flush()?;
        Ok(())
    }

    /// The next live line from the client; `None` at end of input.
    fn read(&mut self) -> anyhow::Result<Option<Message>> {
        let mut line = Vec::new();
        loop {
            line.clear();
            if self.input.read_until(b'\n', &mut line)? == 0 {
                return Ok(None);
            }
            let message = parse_line(&line);
            if message.kind != MessageKind::Invalid {
                return Ok(Some(message));
            }
            eprintln!("acptap replay: ignoring a client line that is not JSON-RPC");
        }
    }

    /// Answers a client request the recording cannot answer here.
    fn refuse(&mut self, live: &Message, expected: &str) -> anyhow::Result<()> {
        let method = live.method.as_deref().unwrap_or("?");
        let why = format!(
            "acptap replay: the recording has no answer for `{method}` at turn {}: it expects {expected} next",
            self.turn
        );
        eprintln!("{why}");
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

    /// Waits for the live client's counterpart of a recorded client line.
    fn expect(&mut self, recorded: &ScriptLine) -> anyhow::Result<()> {
        let expected = describe(recorded);
        loop {
            let Some(live) = self.read()? else {
                bail!(
                    "the client closed its output while the replay waited for {expected} (turn {})",
                    self.turn
                );
            };
            let same_method = live.method == recorded.message.method;
            match (recorded.message.kind, live.kind) {
                (MessageKind::Request, MessageKind::Request) if same_method => {
                    if let (Some(recorded_id), Some(live_id)) = (&recorded.message.id, &live.id) {
                        self.ids.insert(recorded_id.clone(), live_id.clone());
                    }
                    if live.method.as_deref() == Some("session/prompt") {
                        self.turn += 1;
                    }
                    return Ok(());
                }
                (MessageKind::Notification, MessageKind::Notification) if same_method => {
                    return Ok(());
                }
                // The client's notifications are never waited for (see `replay_as_agent`).
                (_, MessageKind::Notification) => {}
                // Our own requests keep the recorded ids, so the answer comes with the same id.
                (MessageKind::Response, MessageKind::Response)
                    if live.id == recorded.message.id =>
                {
                    return Ok(());
                }
                (_, MessageKind::Request) => self.refuse(&live, &expected)?,
                _ => eprintln!(
                    "acptap replay: ignoring a client {} while waiting for {expected}",
                    live.method
                        .as_deref()
                        .map(|m| format!("`{m}`"))
                        .unwrap_or_else(|| "response".into())
                ),
            }
        }
    }

    fn emit(&mut self, recorded: &ScriptLine) -> anyhow::Result<()> {
        let mut bytes = recorded.raw.clone();
        if recorded.message.kind == MessageKind::Response
            && let Some(live) = recorded.message.id.as_ref().and_then(|id| self.ids.get(id))
            && let Some(swapped) = with_id(&bytes, live)
        {
            bytes = swapped;
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
}

/// Plays `script` (one recorded connection) as the agent.
pub fn replay_as_agent(
    script: &[ScriptLine],
    input: impl BufRead,
    output: impl Write,
    options: AgentReplayOptions,
) -> anyhow::Result<()> {
    let mut replayer = Replayer {
        input,
        output,
        options,
        turn: 0,
        ids: HashMap::new(),
        sessions: HashMap::new(),
    };
    let mut previous_ts = script.first().map(|l| l.ts).unwrap_or(0);
    for line in script {
        match line.direction {
            // A recorded client notification (`session/cancel`) is not waited for: a client that
            // never cancels would wait forever for the rest of the turn. The agent's side of the
            // cancelled turn is played as recorded; a live cancel that comes is read and let be.
            Direction::ClientToAgent if line.message.kind == MessageKind::Notification => {}
            Direction::ClientToAgent => replayer.expect(line)?,
            _ => {
                if let Some(speed) = replayer.options.speed.filter(|s| *s > 0.0) {
                    let gap = (line.ts - previous_ts).max(0) as f64 / 1e6 / speed;
                    // A recorded gap is at most a day of waiting, whatever the recording says.
                    let gap = Duration::try_from_secs_f64(gap)
                        .unwrap_or(Duration::MAX)
                        .min(Duration::from_secs(86_400));
                    std::thread::sleep(gap);
                }
                replayer.emit(line)?;
            }
        }
        previous_ts = line.ts;
    }
    // The script is over: answer whatever else the client asks with an error, until it leaves.
    while let Some(live) = replayer.read()? {
        if live.kind == MessageKind::Request {
            replayer.refuse(&live, "nothing more (the recording has ended)")?;
        }
    }
    Ok(())
}
