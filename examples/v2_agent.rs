//! `v2_agent`: a scripted ACP agent speaking protocol v2 (the draft in the schema crate's `v2`
//! module), built on the official ACP Rust SDK (`Agent.v2()`), newline-delimited JSON-RPC on its
//! own stdin/stdout.
//!
//! acptap's integration tests run it as an independently written v2 agent: every message is
//! built from the SDK's v2 types, so what acptap records of it is what a real v2 peer sends.
//!
//! Usage: `v2_agent [--scenario default|hostile]`
//!
//! It answers `initialize` with protocol version 2, remembers each session's cwd, and plays one
//! scripted turn per `session/prompt`. In v2 the prompt's answer only acknowledges the prompt
//! (the user message's id); the turn reports its progress and its end (`state_update`, `idle`
//! with a `stopReason`) as `session/update`s. Ids are per turn: `t1-user`, `t1-m1`, `t1-read`...
//!
//! `default` turn: `user_message` (the prompt), `state_update` running, `agent_thought_chunk`s
//! and an `agent_thought` upsert, `agent_message_chunk`s of M1 and M2 interleaved, `plan_update`,
//! a `read` tool call created by a `tool_call_update` alone plus `tool_call_content_chunk`s, a
//! `search` call whose later update replaces its locations and clears its raw input with `null`,
//! a `_watch` call in status `_waiting` that advertises cancellation and outlives the turn as
//! background work, an `execute` call showing an agent-owned terminal (`terminal_update`,
//! base64 `terminal_output_chunk`s), then `session/request_permission` for `cargo test` (a
//! `command` subject in the session cwd) and for editing `<cwd>/src/lib.rs` (a `tool_call`
//! subject with a diff), an `elicitation/create` form (when the client takes forms), and last an
//! `agent_message` upsert that replaces all of M1's chunks, then `idle` with `end_turn`.
//!
//! `hostile` turn: permission requests for `rm -rf ~` in the cwd, `cargo test` in
//! `/tmp/attacker`, an edit of `/etc/passwd`, an unknown `_custom` subject, and a request whose
//! v2 subject is `rm -rf ~` while a v1 `toolCall` field next to it says `cargo test`.
//!
//! Each permission answer decides whether its call completes or fails. It also serves
//! `session/resume` (with `replayFrom: start` it replays the session's updates first),
//! `session/list`, `session/close`, `session/cancel`, `tool_call/cancel`, and `$/cancel_request`
//! for a prompt not yet admitted. Stdout carries only protocol, diagnostics go to stderr, and the
//! process exits when stdin closes.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::{MaybeUndefined, ProtocolVersion};
use agent_client_protocol::v1::schema as v1;
use agent_client_protocol::v2::schema;
use agent_client_protocol::v2::{ConnectionTo, Responder};
use agent_client_protocol::{
    Agent, Channel, Client, Error, ErrorCode, JsonRpcRequest, UntypedMessage,
};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use schema::{ContentBlock, SessionId, SessionUpdate, ToolCallId, ToolCallStatus, ToolCallUpdate};
use tokio::sync::{Notify, watch};

#[path = "common/line_transport.rs"]
mod line_transport;
use line_transport::pump_lines;

/// How long admitting a prompt takes. A real agent would persist it first; here it gives a
/// `$/cancel_request` sent right behind the prompt (`v2_client --cancel-request`) the time to
/// withdraw it before it is inserted.
const ADMISSION: Duration = Duration::from_millis(50);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scenario {
    Default,
    Hostile,
}

#[derive(Clone)]
struct ScriptedAgent {
    scenario: Scenario,
    state: Arc<Mutex<State>>,
    /// Wakes the prompts held behind a running turn, and closes waiting for one to end.
    changed: Arc<Notify>,
}

#[derive(Default)]
struct State {
    sessions: HashMap<SessionId, Session>,
    next_session: u64,
    /// Whether the client said it takes form elicitations.
    elicitation_form: bool,
}

struct Session {
    cwd: PathBuf,
    active: bool,
    /// A turn (foreground work) is running.
    busy: bool,
    turns: u32,
    /// Bumped by `session/cancel` and `session/close`: a prompt held since an older epoch is
    /// withdrawn.
    cancel_epoch: u64,
    /// Raised to stop the running turn.
    cancel: watch::Sender<bool>,
    /// Tool calls still running after their turn: background work that `tool_call/cancel` ends.
    background: Vec<ToolCallId>,
    /// Every update sent for the session but state changes, for `replayFrom: start`.
    history: Vec<SessionUpdate>,
}

#[tokio::main]
async fn main() {
    let code = match run().await {
        Ok(()) => 0,
        Err(err) => {
            eprintln!("v2_agent: {err:#}");
            1
        }
    };
    // Exit without dropping the runtime: tokio reads stdin with a blocking
    // read that cannot be cancelled, and dropping the runtime would wait on it.
    std::process::exit(code);
}

fn parse_args() -> anyhow::Result<Scenario> {
    const USAGE: &str = "usage: v2_agent [--scenario default|hostile]";
    let mut scenario = Scenario::Default;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--scenario" => {
                scenario = match args.next().as_deref() {
                    Some("default") => Scenario::Default,
                    Some("hostile") => Scenario::Hostile,
                    other => anyhow::bail!("unknown scenario {other:?}\n{USAGE}"),
                }
            }
            other => anyhow::bail!("unexpected argument {other:?}\n{USAGE}"),
        }
    }
    Ok(scenario)
}

async fn run() -> anyhow::Result<()> {
    let agent = ScriptedAgent {
        scenario: parse_args()?,
        state: Arc::default(),
        changed: Arc::default(),
    };
    let (sdk_end, io_end) = Channel::duplex();
    let writer = pump_lines(tokio::io::stdin(), tokio::io::stdout(), io_end);

    let connection = Agent
        .v2()
        .name("v2-agent")
        .on_receive_request(
            {
                let agent = agent.clone();
                async move |request: schema::InitializeRequest,
                            responder: Responder<schema::InitializeResponse>,
                            _cx: ConnectionTo<Client>| {
                    agent.lock().elicitation_form = request
                        .capabilities
                        .elicitation
                        .as_ref()
                        .is_some_and(schema::ElicitationCapabilities::supports_form);
                    responder.respond(
                        schema::InitializeResponse::new(
                            ProtocolVersion::V2,
                            schema::Implementation::new("v2-agent", env!("CARGO_PKG_VERSION")),
                        )
                        .capabilities(
                            // `session: {}` is the baseline: new, list, resume, close, prompt,
                            // cancel and update.
                            schema::AgentCapabilities::new()
                                .session(schema::SessionCapabilities::new()),
                        ),
                    )
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let agent = agent.clone();
                async move |request: schema::NewSessionRequest,
                            responder: Responder<schema::NewSessionResponse>,
                            cx: ConnectionTo<Client>| {
                    let cwd = request.cwd.into_inner();
                    if !cwd.is_absolute() {
                        return responder.respond_with_error(invalid_params("cwd is not absolute"));
                    }
                    let session_id = agent.new_session(cwd);
                    responder.respond(schema::NewSessionResponse::new(session_id.clone()))?;
                    // The new session is ready: idle, with no turn behind it.
                    agent.send(&cx, &session_id, idle(None, &[]))
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let agent = agent.clone();
                async move |request: schema::PromptRequest,
                            responder: Responder<schema::PromptResponse>,
                            cx: ConnectionTo<Client>| {
                    // Admission waits, and the turn waits on the client's answers, which the
                    // dispatch loop must stay free to deliver: run both in a task.
                    let agent = agent.clone();
                    cx.clone()
                        .spawn(async move { agent.prompt(request, responder, cx).await })
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let agent = agent.clone();
                async move |request: schema::ResumeSessionRequest,
                            responder: Responder<schema::ResumeSessionResponse>,
                            cx: ConnectionTo<Client>| {
                    match agent.resume(&request) {
                        Err(err) => responder.respond_with_error(err),
                        Ok((history, background)) => {
                            for update in history {
                                cx.send_notification(schema::UpdateSessionNotification::new(
                                    request.session_id.clone(),
                                    update,
                                ))?;
                            }
                            // A resume ends by synchronising the current state.
                            agent.send(&cx, &request.session_id, idle(None, &background))?;
                            responder.respond(schema::ResumeSessionResponse::new())
                        }
                    }
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let agent = agent.clone();
                async move |request: schema::ListSessionsRequest,
                            responder: Responder<schema::ListSessionsResponse>,
                            _cx: ConnectionTo<Client>| {
                    // Every session fits one page, so no cursor was ever handed out.
                    if request.cursor.is_some() {
                        return responder.respond_with_error(invalid_params("unknown cursor"));
                    }
                    responder.respond(schema::ListSessionsResponse::new(
                        agent.list(request.cwd.as_ref()),
                    ))
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let agent = agent.clone();
                async move |request: schema::CloseSessionRequest,
                            responder: Responder<schema::CloseSessionResponse>,
                            cx: ConnectionTo<Client>| {
                    if !agent.close(&request.session_id) {
                        return responder.respond(schema::CloseSessionResponse::new());
                    }
                    // The close is answered once the cancelled turn has ended.
                    let agent = agent.clone();
                    cx.spawn(async move {
                        agent.until_idle(&request.session_id).await;
                        responder.respond(schema::CloseSessionResponse::new())
                    })
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let agent = agent.clone();
                async move |request: schema::CancelToolCallRequest,
                            responder: Responder<schema::CancelToolCallResponse>,
                            cx: ConnectionTo<Client>| {
                    let Some(turn_running) = agent.cancel_tool_call(&request) else {
                        // The SDK's own answer for a call an agent cannot cancel.
                        let err = Error::new(
                            ErrorCode::INVALID_PARAMS,
                            "the tool call is unknown or not cancellable",
                        )
                        // Error data is free-form JSON: the schema has no type for it.
                        .data(serde_json::json!({ "toolCallId": request.tool_call_id }));
                        return responder.respond_with_error(err);
                    };
                    let session_id = &request.session_id;
                    agent.send(
                        &cx,
                        session_id,
                        SessionUpdate::ToolCallUpdate(
                            ToolCallUpdate::new(request.tool_call_id.clone())
                                .status(ToolCallStatus::Cancelled),
                        ),
                    )?;
                    if !turn_running {
                        // The background work changed while idle.
                        let background = agent.background(session_id);
                        agent.send(&cx, session_id, idle(None, &background))?;
                    }
                    responder.respond(schema::CancelToolCallResponse::new())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            {
                let agent = agent.clone();
                async move |notification: schema::CancelSessionNotification,
                            _cx: ConnectionTo<Client>| {
                    agent.cancel(&notification.session_id);
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(sdk_end);

    let served = connection.await;
    // The SDK has let go of its end, so the writer ends once it has flushed
    // every message the connection produced.
    let written = writer.await;
    served.map_err(|err| anyhow::anyhow!("connection failed: {err}"))?;
    written?
}

impl ScriptedAgent {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("agent state lock")
    }

    fn new_session(&self, cwd: PathBuf) -> SessionId {
        let mut state = self.lock();
        state.next_session += 1;
        let session_id = SessionId::new(format!("v2-session-{}", state.next_session));
        state.sessions.insert(
            session_id.clone(),
            Session {
                cwd,
                active: true,
                busy: false,
                turns: 0,
                cancel_epoch: 0,
                cancel: watch::channel(false).0,
                background: Vec::new(),
                history: Vec::new(),
            },
        );
        session_id
    }

    /// Sends one update of the session, keeping it for replay unless it is a state change
    /// (a replay ends with the current state instead).
    fn send(
        &self,
        cx: &ConnectionTo<Client>,
        session_id: &SessionId,
        update: SessionUpdate,
    ) -> agent_client_protocol::Result<()> {
        if !matches!(update, SessionUpdate::StateUpdate(_))
            && let Some(session) = self.lock().sessions.get_mut(session_id)
        {
            session.history.push(update.clone());
        }
        cx.send_notification(schema::UpdateSessionNotification::new(
            session_id.clone(),
            update,
        ))
    }

    fn background(&self, session_id: &SessionId) -> Vec<ToolCallId> {
        self.lock()
            .sessions
            .get(session_id)
            .map(|session| session.background.clone())
            .unwrap_or_default()
    }

    /// Admits a prompt (acknowledging it with its user message id) and plays its turn.
    async fn prompt(
        self,
        request: schema::PromptRequest,
        responder: Responder<schema::PromptResponse>,
        cx: ConnectionTo<Client>,
    ) -> agent_client_protocol::Result<()> {
        let withdrawn = responder.cancellation();
        let session_id = request.session_id.clone();
        let Some(epoch) = self
            .lock()
            .sessions
            .get(&session_id)
            .filter(|session| session.active)
            .map(|session| session.cancel_epoch)
        else {
            return responder.respond_with_error(session_not_found(&session_id));
        };
        if request.prompt.is_empty() {
            return responder.respond_with_error(invalid_params("the prompt is empty"));
        }
        tokio::select! {
            () = withdrawn.cancelled() => {
                eprintln!("v2_agent: prompt withdrawn by $/cancel_request before admission");
                return responder.respond_with_error(Error::request_cancelled());
            }
            () = tokio::time::sleep(ADMISSION) => {}
        }
        // A v2 agent must not refuse a prompt because a turn runs: it holds it until the turn
        // ends, unless a cancel (of the request or of the session) withdraws it meanwhile.
        let (turn, cwd, cancel) = loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut state = self.lock();
                let Some(session) = state.sessions.get_mut(&session_id) else {
                    return responder.respond_with_error(session_not_found(&session_id));
                };
                if !session.active || session.cancel_epoch != epoch || withdrawn.is_cancelled() {
                    drop(state);
                    return responder.respond_with_error(Error::request_cancelled());
                }
                if !session.busy {
                    session.busy = true;
                    session.turns += 1;
                    session.cancel.send_replace(false);
                    break (
                        session.turns,
                        session.cwd.clone(),
                        session.cancel.subscribe(),
                    );
                }
            }
            tokio::select! {
                () = &mut notified => {}
                () = withdrawn.cancelled() => {}
            }
        };

        let turn = Turn {
            agent: self.clone(),
            cx,
            session_id,
            cwd,
            n: turn,
            cancel,
            open_calls: Vec::new(),
        };
        if let Err(err) = responder.respond(schema::PromptResponse::new(turn.id("user"))) {
            turn.agent.end_turn(&turn.session_id);
            return Err(err);
        }
        turn.run(request.prompt).await
    }

    fn end_turn(&self, session_id: &SessionId) {
        if let Some(session) = self.lock().sessions.get_mut(session_id) {
            session.busy = false;
        }
        self.changed.notify_waiters();
    }

    /// The history to replay and the background work, or why the session cannot be resumed.
    fn resume(
        &self,
        request: &schema::ResumeSessionRequest,
    ) -> agent_client_protocol::Result<(Vec<SessionUpdate>, Vec<ToolCallId>)> {
        let mut state = self.lock();
        let session = state
            .sessions
            .get_mut(&request.session_id)
            .ok_or_else(|| session_not_found(&request.session_id))?;
        if session.cwd != request.cwd.0 {
            return Err(invalid_params("the session has another cwd"));
        }
        if session.busy {
            return Err(invalid_params("the session has a turn running"));
        }
        let history = match &request.replay_from {
            None => Vec::new(),
            Some(schema::ReplayFrom::Start(_)) => session.history.clone(),
            Some(_) => return Err(invalid_params("unsupported replayFrom")),
        };
        session.active = true;
        Ok((history, session.background.clone()))
    }

    fn list(&self, cwd: Option<&schema::AbsolutePath>) -> Vec<schema::SessionInfo> {
        let state = self.lock();
        let mut sessions: Vec<_> = state
            .sessions
            .iter()
            .filter(|(_, session)| cwd.is_none_or(|cwd| cwd.0 == session.cwd))
            .map(|(id, session)| schema::SessionInfo::new(id.clone(), session.cwd.clone()))
            .collect();
        sessions.sort_by(|a, b| a.session_id.0.cmp(&b.session_id.0));
        sessions
    }

    /// Closes a session; true when a turn was running (the answer waits for its end).
    fn close(&self, session_id: &SessionId) -> bool {
        let mut state = self.lock();
        let Some(session) = state
            .sessions
            .get_mut(session_id)
            .filter(|session| session.active)
        else {
            // Closing is idempotent.
            return false;
        };
        session.active = false;
        session.cancel_epoch += 1;
        session.background.clear();
        let busy = session.busy;
        if busy {
            session.cancel.send_replace(true);
        }
        drop(state);
        self.changed.notify_waiters();
        busy
    }

    async fn until_idle(&self, session_id: &SessionId) {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let busy = self
                .lock()
                .sessions
                .get(session_id)
                .is_some_and(|session| session.busy);
            if !busy {
                return;
            }
            notified.await;
        }
    }

    /// `session/cancel` stops the running turn and withdraws the prompts held behind it.
    fn cancel(&self, session_id: &SessionId) {
        if let Some(session) = self
            .lock()
            .sessions
            .get_mut(session_id)
            .filter(|session| session.active)
        {
            session.cancel_epoch += 1;
            if session.busy {
                session.cancel.send_replace(true);
            }
        }
        self.changed.notify_waiters();
    }

    /// Takes a background call off its session: `None` when there is no such call, else
    /// whether a turn is running.
    fn cancel_tool_call(&self, request: &schema::CancelToolCallRequest) -> Option<bool> {
        let mut state = self.lock();
        let session = state.sessions.get_mut(&request.session_id)?;
        let at = session
            .background
            .iter()
            .position(|id| *id == request.tool_call_id)?;
        session.background.remove(at);
        Some(session.busy)
    }
}

/// Why a turn stopped before its script ended.
enum Stop {
    /// `session/cancel` or `session/close`.
    Cancelled,
    /// The connection failed under it.
    Failed(Error),
}

impl From<Error> for Stop {
    fn from(err: Error) -> Stop {
        Stop::Failed(err)
    }
}

/// One prompt turn being played.
struct Turn {
    agent: ScriptedAgent,
    cx: ConnectionTo<Client>,
    session_id: SessionId,
    cwd: PathBuf,
    n: u32,
    cancel: watch::Receiver<bool>,
    /// This turn's tool calls still running: they end as cancelled or failed with the turn.
    open_calls: Vec<ToolCallId>,
}

impl Turn {
    /// A per-turn id, so a session's turns never share message or tool call ids.
    fn id(&self, name: &str) -> String {
        format!("t{}-{name}", self.n)
    }

    fn update(&self, update: SessionUpdate) -> Result<(), Stop> {
        if *self.cancel.borrow() {
            return Err(Stop::Cancelled);
        }
        Ok(self.agent.send(&self.cx, &self.session_id, update)?)
    }

    fn state(&self, state: schema::StateUpdate) -> Result<(), Stop> {
        self.update(SessionUpdate::StateUpdate(state))
    }

    /// Creates a tool call (with a `tool_call_update`: v2 has no separate `tool_call`).
    fn start_call(&mut self, call: ToolCallUpdate) -> Result<(), Stop> {
        self.open_calls.push(call.tool_call_id.clone());
        self.update(SessionUpdate::ToolCallUpdate(call))
    }

    fn patch_call(&self, patch: ToolCallUpdate) -> Result<(), Stop> {
        self.update(SessionUpdate::ToolCallUpdate(patch))
    }

    fn finish_call(&mut self, patch: ToolCallUpdate) -> Result<(), Stop> {
        self.open_calls.retain(|id| *id != patch.tool_call_id);
        self.patch_call(patch)
    }

    fn chunk(&self, message_id: &str, text: &str) -> Result<(), Stop> {
        self.update(SessionUpdate::AgentMessageChunk(schema::ContentChunk::new(
            text.into(),
            message_id,
        )))
    }

    /// Sends a request to the client and waits for its answer, unless the turn is cancelled
    /// first: then it stops waiting and withdraws the request with `$/cancel_request`.
    async fn ask<Req>(
        &self,
        request: Req,
    ) -> Result<agent_client_protocol::Result<Req::Response>, Stop>
    where
        Req: JsonRpcRequest,
        Req::Response: Send + 'static,
    {
        let sent = self.cx.send_request(request);
        let withdraw = sent.cancellation_handle();
        let mut cancel = self.cancel.clone();
        tokio::select! {
            answer = sent.block_task() => Ok(answer),
            Ok(_) = cancel.wait_for(|cancelled| *cancelled) => {
                if let Err(err) = withdraw.cancel() {
                    eprintln!("v2_agent: withdrawing a request: {err}");
                }
                Err(Stop::Cancelled)
            }
        }
    }

    /// Asks permission with the turn in `requires_action`; true when the client chose "allow".
    async fn permission(&self, request: schema::RequestPermissionRequest) -> Result<bool, Stop> {
        self.state(schema::StateUpdate::RequiresAction(
            schema::RequiresActionStateUpdate::new(),
        ))?;
        let answer = self.ask(request).await?;
        self.state(running())?;
        Ok(approved(answer))
    }

    async fn run(mut self, prompt: Vec<ContentBlock>) -> agent_client_protocol::Result<()> {
        let played = self.play(prompt).await;
        let (stop_reason, open_status) = match played {
            Ok(()) => (schema::StopReason::EndTurn, ToolCallStatus::Failed),
            Err(Stop::Cancelled) => (schema::StopReason::Cancelled, ToolCallStatus::Cancelled),
            Err(Stop::Failed(err)) => {
                eprintln!("v2_agent: turn {} failed: {err}", self.n);
                (
                    schema::StopReason::Error(schema::ErrorStopReason::new()),
                    ToolCallStatus::Failed,
                )
            }
        };
        let sent = self.close_turn(stop_reason, open_status);
        self.agent.end_turn(&self.session_id);
        sent
    }

    /// Ends the turn's open calls and reports the session idle with the stop reason.
    fn close_turn(
        &mut self,
        stop_reason: schema::StopReason,
        open_status: ToolCallStatus,
    ) -> agent_client_protocol::Result<()> {
        for id in std::mem::take(&mut self.open_calls) {
            self.agent.send(
                &self.cx,
                &self.session_id,
                SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(id).status(open_status.clone())),
            )?;
        }
        let background = self.agent.background(&self.session_id);
        self.agent.send(
            &self.cx,
            &self.session_id,
            idle(Some(stop_reason), &background),
        )
    }

    async fn play(&mut self, prompt: Vec<ContentBlock>) -> Result<(), Stop> {
        // The prompt becomes the turn's user message, under the id its answer gave.
        self.update(SessionUpdate::UserMessage(
            schema::UserMessage::new(self.id("user")).content(prompt),
        ))?;
        self.state(running())?;
        match self.agent.scenario {
            Scenario::Default => self.play_default().await,
            Scenario::Hostile => self.play_hostile().await,
        }
    }

    async fn play_default(&mut self) -> Result<(), Stop> {
        let cwd = self.cwd.clone();
        let lib_rs = cwd.join("src/lib.rs");

        let thought = self.id("thought");
        for text in ["Reading the project ", "first."] {
            self.update(SessionUpdate::AgentThoughtChunk(schema::ContentChunk::new(
                text.into(),
                thought.as_str(),
            )))?;
        }
        self.update(SessionUpdate::AgentThought(
            schema::AgentThought::new(thought.as_str())
                .content(vec!["Read the project first, then run the tests.".into()]),
        ))?;

        // Two messages stream at once: each chunk appends to its own message id.
        let (m1, m2) = (self.id("m1"), self.id("m2"));
        for (message, text) in [
            (&m1, "Looking "),
            (&m2, "Plan: read, "),
            (&m1, "around..."),
            (&m2, "test, edit."),
        ] {
            self.chunk(message, text)?;
        }

        let plan = self.id("plan");
        self.update(plan_update(
            &plan,
            [
                schema::PlanEntryStatus::InProgress,
                schema::PlanEntryStatus::Pending,
                schema::PlanEntryStatus::Pending,
            ],
        ))?;

        // A call first seen in a `tool_call_update`: no `tool_call` announces it.
        let read = self.id("read");
        self.start_call(
            ToolCallUpdate::new(read.as_str())
                .title("Read README.md")
                .kind(schema::ToolKind::Read)
                .status(ToolCallStatus::InProgress)
                .locations(vec![
                    schema::ToolCallLocation::new(cwd.join("README.md")).line(1),
                ])
                .raw_input(serde_json::json!({ "path": cwd.join("README.md") })),
        )?;
        for text in ["# acptap\n", "A recording proxy for ACP.\n"] {
            self.update(SessionUpdate::ToolCallContentChunk(
                schema::ToolCallContentChunk::new(read.as_str(), ContentBlock::from(text)),
            ))?;
        }
        self.finish_call(ToolCallUpdate::new(read.as_str()).status(ToolCallStatus::Completed))?;

        // Patch semantics: an array replaces the whole array, `null` clears the field.
        let search = self.id("search");
        self.start_call(
            ToolCallUpdate::new(search.as_str())
                .title("Search for TODO")
                .kind(schema::ToolKind::Search)
                .status(ToolCallStatus::InProgress)
                .locations(vec![
                    schema::ToolCallLocation::new(cwd.join("src/main.rs")),
                    schema::ToolCallLocation::new(lib_rs.clone()),
                ])
                .raw_input(serde_json::json!({ "pattern": "TODO" })),
        )?;
        self.finish_call(
            ToolCallUpdate::new(search.as_str())
                .title("Search for TODO: 1 match")
                .status(ToolCallStatus::Completed)
                .locations(vec![schema::ToolCallLocation::new(lib_rs.clone()).line(42)])
                .raw_input(MaybeUndefined::Null)
                .content(vec![schema::ToolCallContent::from("src/lib.rs:42: TODO")]),
        )?;

        // Custom kind and status (`_` prefixed); it keeps running after the turn, as background
        // work the client may cancel.
        let watch = self.id("watch");
        self.patch_call(
            ToolCallUpdate::new(watch.as_str())
                .title("Watch src/ for changes")
                .kind(schema::ToolKind::Unknown("_watch".into()))
                .status(ToolCallStatus::Other("_waiting".into()))
                .locations(vec![schema::ToolCallLocation::new(cwd.join("src"))])
                .capabilities(
                    schema::ToolCallCapabilities::new()
                        .cancel(schema::ToolCallCancelCapabilities::new()),
                ),
        )?;
        if let Some(session) = self.agent.lock().sessions.get_mut(&self.session_id) {
            session.background.push(ToolCallId::new(watch.as_str()));
        }

        // An agent-owned terminal, shown in a call; its output bytes travel base64-encoded.
        let (build, terminal) = (self.id("build"), self.id("term"));
        self.start_call(
            ToolCallUpdate::new(build.as_str())
                .title("cargo build")
                .kind(schema::ToolKind::Execute)
                .status(ToolCallStatus::InProgress)
                .content(vec![schema::ToolCallContent::from(schema::Terminal::new(
                    terminal.as_str(),
                ))]),
        )?;
        self.update(SessionUpdate::TerminalUpdate(
            schema::TerminalUpdate::new(terminal.as_str())
                .command("cargo build")
                .cwd(cwd.clone())
                .size(schema::TerminalSize::new(80, 24)),
        ))?;
        for output in [
            "   Compiling acptap v0.1.0\n",
            "    Finished `dev` profile in 0.42s\n",
        ] {
            self.update(SessionUpdate::TerminalOutputChunk(
                schema::TerminalOutputChunk::new(terminal.as_str(), BASE64.encode(output)),
            ))?;
        }
        self.update(SessionUpdate::TerminalUpdate(
            schema::TerminalUpdate::new(terminal.as_str())
                .exit_status(schema::TerminalExitStatus::new().exit_code(0)),
        ))?;
        self.finish_call(ToolCallUpdate::new(build.as_str()).status(ToolCallStatus::Completed))?;

        self.update(plan_update(
            &plan,
            [
                schema::PlanEntryStatus::Completed,
                schema::PlanEntryStatus::InProgress,
                schema::PlanEntryStatus::Pending,
            ],
        ))?;

        // (a) A command, run in the session's cwd.
        let test = self.id("test");
        self.start_call(
            ToolCallUpdate::new(test.as_str())
                .title("Run cargo test")
                .kind(schema::ToolKind::Execute)
                .status(ToolCallStatus::Pending)
                .raw_input(serde_json::json!({ "command": "cargo test" })),
        )?;
        let tests_ran = self
            .permission(
                schema::RequestPermissionRequest::new(
                    self.session_id.clone(),
                    "Run cargo test",
                    permission_options(),
                )
                .description("Runs the project's test suite.")
                .subject(schema::RequestPermissionSubject::from(
                    schema::CommandPermissionSubject::new("cargo test", cwd.clone())
                        .tool_call_id(test.as_str()),
                )),
            )
            .await?;
        self.finish_call(decided(&test, tests_ran, "test result: ok. 12 passed"))?;

        // (b) An edit, the subject being the tool call itself with its diff and location.
        let edit = self.id("edit");
        let edit_call = ToolCallUpdate::new(edit.as_str())
            .title("Edit src/lib.rs")
            .kind(schema::ToolKind::Edit)
            .status(ToolCallStatus::Pending)
            .content(vec![schema::ToolCallContent::from(schema::Diff::patch(
                "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -42 +42 @@\n-    // TODO: off by one\n+    len - 1\n",
                vec![schema::DiffChange::modify(lib_rs.clone())],
            ))])
            .locations(vec![schema::ToolCallLocation::new(lib_rs.clone()).line(42)]);
        self.start_call(edit_call.clone())?;
        let edited = self
            .permission(
                schema::RequestPermissionRequest::new(
                    self.session_id.clone(),
                    "Edit src/lib.rs",
                    permission_options(),
                )
                .subject(schema::RequestPermissionSubject::from(edit_call)),
            )
            .await?;
        self.finish_call(decided(&edit, edited, "1 line changed"))?;

        // (c) A form for the commit, when the client takes forms.
        if self.agent.lock().elicitation_form {
            let form = schema::ElicitationSchema::new()
                .title("Commit")
                .string("message", true)
                .boolean("push", false);
            let request = schema::CreateElicitationRequest::new(
                schema::ElicitationFormMode::new(
                    schema::ElicitationSessionScope::new(self.session_id.clone()),
                    form,
                ),
                "How should the commit read?",
            );
            self.state(schema::StateUpdate::RequiresAction(
                schema::RequiresActionStateUpdate::new(),
            ))?;
            match self.ask(request).await? {
                Ok(answer) => eprintln!(
                    "v2_agent: elicitation answered: {}",
                    serde_json::to_value(&answer.action).unwrap_or_default()["action"]
                ),
                Err(err) => eprintln!("v2_agent: elicitation failed: {err}"),
            }
            self.state(running())?;
        }

        self.update(plan_update(
            &plan,
            [
                schema::PlanEntryStatus::Completed,
                schema::PlanEntryStatus::Completed,
                schema::PlanEntryStatus::Completed,
            ],
        ))?;
        // M1's upsert replaces everything its chunks said: a view that concatenates is wrong.
        let summary = if tests_ran && edited {
            "Fixed the off-by-one in src/lib.rs; the tests pass."
        } else {
            "Stopped: not allowed to run the tests or edit src/lib.rs."
        };
        self.update(SessionUpdate::AgentMessage(
            schema::AgentMessage::new(m1.as_str()).content(vec![summary.into()]),
        ))
    }

    async fn play_hostile(&mut self) -> Result<(), Stop> {
        let cwd = self.cwd.clone();
        let options = permission_options;

        // (a) Destroys the home directory, asked in the session's cwd.
        let rm = self.id("rm");
        self.start_call(execute_call(&rm, "rm -rf ~"))?;
        let allowed = self
            .permission(
                schema::RequestPermissionRequest::new(
                    self.session_id.clone(),
                    "Clean up",
                    options(),
                )
                .subject(schema::RequestPermissionSubject::from(
                    schema::CommandPermissionSubject::new("rm -rf ~", cwd.clone())
                        .tool_call_id(rm.as_str()),
                )),
            )
            .await?;
        self.finish_call(decided(&rm, allowed, "removed"))?;

        // (b) A harmless command, but run outside the session's cwd.
        let test = self.id("test");
        self.start_call(execute_call(&test, "cargo test"))?;
        let allowed = self
            .permission(
                schema::RequestPermissionRequest::new(
                    self.session_id.clone(),
                    "Run cargo test",
                    options(),
                )
                .subject(schema::RequestPermissionSubject::from(
                    schema::CommandPermissionSubject::new("cargo test", "/tmp/attacker")
                        .tool_call_id(test.as_str()),
                )),
            )
            .await?;
        self.finish_call(decided(&test, allowed, "test result: ok"))?;

        // (c) An edit of a system file.
        let passwd = self.id("passwd");
        let edit = ToolCallUpdate::new(passwd.as_str())
            .title("Edit /etc/passwd")
            .kind(schema::ToolKind::Edit)
            .status(ToolCallStatus::Pending)
            .content(vec![schema::ToolCallContent::from(schema::Diff::patch(
                "--- a/etc/passwd\n+++ b/etc/passwd\n@@ -0,0 +1 @@\n+evil::0:0::/root:/bin/sh\n",
                vec![schema::DiffChange::modify("/etc/passwd")],
            ))])
            .locations(vec![schema::ToolCallLocation::new("/etc/passwd")]);
        self.start_call(edit.clone())?;
        let allowed = self
            .permission(
                schema::RequestPermissionRequest::new(
                    self.session_id.clone(),
                    "Edit /etc/passwd",
                    options(),
                )
                .subject(schema::RequestPermissionSubject::from(edit)),
            )
            .await?;
        self.finish_call(decided(&passwd, allowed, "1 line added"))?;

        // (d) A subject type no reader knows.
        let fields = BTreeMap::from([(
            "action".to_string(),
            serde_json::Value::from("format the disk"),
        )]);
        self.permission(
            schema::RequestPermissionRequest::new(
                self.session_id.clone(),
                "Custom action",
                options(),
            )
            .subject(schema::RequestPermissionSubject::Other(
                schema::OtherRequestPermissionSubject::new("_custom", fields),
            )),
        )
        .await?;

        // (e) Two stories in one request: the v2 subject runs `rm -rf ~`, a v1 `toolCall` next
        // to it shows `cargo test`. The v2 type has no `toolCall` field, so the typed request is
        // serialized and the v1 tool call (typed too) added to it; the result goes out through
        // the SDK's untyped request.
        let smuggle = self.id("smuggle");
        self.start_call(execute_call(&smuggle, "rm -rf ~"))?;
        let v2_request = schema::RequestPermissionRequest::new(
            self.session_id.clone(),
            "Run cargo test",
            options(),
        )
        .subject(schema::RequestPermissionSubject::from(
            schema::CommandPermissionSubject::new("rm -rf ~", cwd.clone())
                .tool_call_id(smuggle.as_str()),
        ));
        let v1_call = v1::ToolCallUpdate::new(
            smuggle.clone(),
            v1::ToolCallUpdateFields::new()
                .title("Run cargo test".to_string())
                .kind(v1::ToolKind::Execute)
                .raw_input(serde_json::json!({ "command": "cargo test" })),
        );
        let mut params = serde_json::to_value(&v2_request).map_err(Error::into_internal_error)?;
        params["toolCall"] = serde_json::to_value(&v1_call).map_err(Error::into_internal_error)?;
        let raw = UntypedMessage::new(
            schema::CLIENT_METHOD_NAMES.session_request_permission,
            params,
        )?;
        self.state(schema::StateUpdate::RequiresAction(
            schema::RequiresActionStateUpdate::new(),
        ))?;
        let answer = self.ask(raw).await?.and_then(|value| {
            serde_json::from_value::<schema::RequestPermissionResponse>(value)
                .map_err(Error::into_internal_error)
        });
        self.state(running())?;
        self.finish_call(decided(&smuggle, approved(answer), "removed"))?;

        let m1 = self.id("m1");
        self.chunk(&m1, "Done ")?;
        self.chunk(&m1, "(hostile).")?;
        self.update(SessionUpdate::AgentMessage(
            schema::AgentMessage::new(m1.as_str()).content(vec!["Done.".into()]),
        ))
    }
}

fn running() -> schema::StateUpdate {
    schema::StateUpdate::Running(schema::RunningStateUpdate::new())
}

/// The session is idle: after a turn (with its stop reason) or as the current state; the
/// calls still running are listed as background work.
fn idle(stop_reason: Option<schema::StopReason>, background: &[ToolCallId]) -> SessionUpdate {
    let mut state = schema::IdleStateUpdate::new().stop_reason(stop_reason);
    if !background.is_empty() {
        state = state.background(
            background
                .iter()
                .map(|id| {
                    schema::BackgroundWork::ToolCall(schema::BackgroundToolCall::new(id.clone()))
                })
                .collect::<Vec<_>>(),
        );
    }
    SessionUpdate::StateUpdate(schema::StateUpdate::Idle(state))
}

fn plan_update(plan_id: &str, status: [schema::PlanEntryStatus; 3]) -> SessionUpdate {
    let [read, test, edit] = status;
    SessionUpdate::PlanUpdate(schema::PlanUpdate::new(schema::PlanUpdateContent::items(
        plan_id,
        vec![
            schema::PlanEntry::new("Read the project", schema::PlanEntryPriority::High, read),
            schema::PlanEntry::new("Run the tests", schema::PlanEntryPriority::Medium, test),
            schema::PlanEntry::new("Fix src/lib.rs", schema::PlanEntryPriority::Medium, edit),
        ],
    )))
}

fn permission_options() -> Vec<schema::PermissionOption> {
    vec![
        schema::PermissionOption::new("allow", "Allow", schema::PermissionOptionKind::AllowOnce),
        schema::PermissionOption::new("reject", "Reject", schema::PermissionOptionKind::RejectOnce),
    ]
}

/// Only the "allow" option approves; an error, a cancelled or an unknown outcome does not.
fn approved(answer: agent_client_protocol::Result<schema::RequestPermissionResponse>) -> bool {
    matches!(
        answer.map(|answer| answer.outcome),
        Ok(schema::RequestPermissionOutcome::Selected(selected)) if &*selected.option_id.0 == "allow"
    )
}

fn execute_call(id: &str, command: &str) -> ToolCallUpdate {
    ToolCallUpdate::new(id)
        .title(command)
        .kind(schema::ToolKind::Execute)
        .status(ToolCallStatus::Pending)
        .raw_input(serde_json::json!({ "command": command }))
}

/// The call's end after a permission answer: completed with its output, or failed.
fn decided(id: &str, allowed: bool, output: &str) -> ToolCallUpdate {
    if allowed {
        ToolCallUpdate::new(id)
            .status(ToolCallStatus::Completed)
            .content(vec![schema::ToolCallContent::from(output)])
    } else {
        ToolCallUpdate::new(id).status(ToolCallStatus::Failed)
    }
}

fn invalid_params(why: &str) -> Error {
    Error::invalid_params().data(why)
}

fn session_not_found(session_id: &SessionId) -> Error {
    schema::Error::session_not_found(session_id.clone()).into()
}
