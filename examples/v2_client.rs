//! `v2_client`: a one-shot ACP client speaking protocol v2 (the draft in the schema crate's `v2`
//! module), built on the official ACP Rust SDK (`Client.v2()`).
//!
//! acptap's integration tests use it as an independently written v2 client: it spawns an agent
//! command (`v2_agent`, or acptap wrapping it), plays one prompt turn through the SDK and writes
//! a JSON summary of what it saw.
//!
//! Usage: `v2_client [--out SUMMARY.json] [--reject] [--resume] [--cancel-tool-call]
//! [--cancel-request] -- AGENT_PROGRAM [ARGS...]`
//!
//! It initializes (protocol v2, clientInfo `v2-client`, form elicitations), opens a session in
//! its current directory, prompts `hello` and, since a v2 prompt's answer only acknowledges it,
//! waits for the `idle` state update that carries the turn's stop reason. Meanwhile it folds
//! every `session/update` into a view (message chunks append, `agent_message` upserts replace,
//! tool call updates patch), answers `session/request_permission` with the `allow_once` option
//! (`reject_once` with `--reject`) and `elicitation/create` forms with `accept` and a value per
//! field. Other agent requests get the SDK's method-not-found error. After the turn:
//!
//! - `--resume`: `session/resume` of the same session with `replayFrom: start`; the replayed
//!   updates go to a view of their own;
//! - `--cancel-tool-call`: `tool_call/cancel` for a call that advertised cancellation (else the
//!   last call seen);
//! - `--cancel-request`: a second `session/prompt`, and at once `$/cancel_request` for it; if the
//!   agent admitted the prompt anyway, `session/cancel`, then waits for that turn's end.
//!
//! Then it closes the agent's stdin, waits for it to exit and writes the summary to `--out` or
//! stdout:
//!
//! ```json
//! {"protocolVersion": 2, "sessionId": "...", "userMessageId": "t1-user",
//!  "stopReason": "end_turn", "updateCount": 42, "updateKinds": {"agent_message": 1, ...},
//!  "agentMessages": {"t1-m1": "final text", ...}, "agentThoughts": {"t1-thought": "..."},
//!  "toolCalls": {"t1-read": {"title": "...", "kind": "read", "status": "completed",
//!                "locations": ["/abs/path"]}},
//!  "permissionRequests": [{"title": "...", "subjectType": "command", "command": "cargo test",
//!                          "cwd": "/abs", "toolCallId": "t1-test", "chosenOptionId": "allow"}],
//!  "elicitations": [{"message": "...", "mode": "form", "action": "accept"}],
//!  "replayedUpdateCount": 40, "replayedAgentMessages": {...},
//!  "toolCallCancel": {"toolCallId": "t1-watch", "answer": "ok"},
//!  "cancelRequest": {"answer": "error", "code": -32800},
//!  "agentExitCode": 0}
//! ```
//!
//! Exits 0 on success; on any error (including the 30 s overall timeout) it prints the reason on
//! stderr and exits non-zero.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::{MaybeUndefined, ProtocolVersion};
use agent_client_protocol::v2::schema;
use agent_client_protocol::v2::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Channel, Client};
use anyhow::{Context, anyhow, bail};
use schema::{ContentBlock, MessageId, SessionId, SessionUpdate, StopReason, ToolCallUpdate};
use serde_json::{Value, json};
use tokio::sync::mpsc;

#[path = "common/line_transport.rs"]
mod line_transport;
use line_transport::pump_lines;

/// Upper bound on the whole run, so a broken peer fails a test instead of hanging it.
const TIMEOUT: Duration = Duration::from_secs(30);

struct Args {
    out: Option<PathBuf>,
    reject: bool,
    resume: bool,
    cancel_tool_call: bool,
    cancel_request: bool,
    agent: Vec<String>,
}

/// What the client saw, filled in by the SDK's handlers.
#[derive(Default)]
struct Observed {
    /// Set while `session/resume` replays: its updates go to `replay`, not `live`.
    replaying: bool,
    live: View,
    replay: View,
    permission_requests: Vec<Value>,
    elicitations: Vec<Value>,
}

/// A session as its updates build it.
#[derive(Default)]
struct View {
    updates: usize,
    kinds: BTreeMap<String, usize>,
    /// Agent messages and thoughts by id: chunks append, an upsert's `content` replaces.
    messages: HashMap<MessageId, Vec<ContentBlock>>,
    thoughts: HashMap<MessageId, Vec<ContentBlock>>,
    /// Each tool call as its updates patch it, in order of first appearance.
    tool_calls: Vec<ToolCallUpdate>,
}

#[tokio::main]
async fn main() {
    let result = match parse_args() {
        Ok(args) => match tokio::time::timeout(TIMEOUT, run(args)).await {
            Ok(result) => result,
            Err(_) => Err(anyhow!("timed out after {}s", TIMEOUT.as_secs())),
        },
        Err(err) => Err(err),
    };
    let code = match result {
        Ok(()) => 0,
        Err(err) => {
            eprintln!("v2_client: error: {err:#}");
            1
        }
    };
    // Exit without dropping the runtime, which would wait for any blocking
    // read still parked on a pipe that some leftover process holds open.
    std::process::exit(code);
}

fn parse_args() -> anyhow::Result<Args> {
    const USAGE: &str = "usage: v2_client [--out SUMMARY.json] [--reject] [--resume] \
                         [--cancel-tool-call] [--cancel-request] -- AGENT_PROGRAM [ARGS...]";
    let mut parsed = Args {
        out: None,
        reject: false,
        resume: false,
        cancel_tool_call: false,
        cancel_request: false,
        agent: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--out" => parsed.out = Some(PathBuf::from(args.next().context(USAGE)?)),
            "--reject" => parsed.reject = true,
            "--resume" => parsed.resume = true,
            "--cancel-tool-call" => parsed.cancel_tool_call = true,
            "--cancel-request" => parsed.cancel_request = true,
            "--" => break,
            other => bail!("unexpected argument {other:?}\n{USAGE}"),
        }
    }
    parsed.agent = args.collect();
    if parsed.agent.is_empty() {
        bail!("no agent command given\n{USAGE}");
    }
    Ok(parsed)
}

/// What the connection's foreground task found out, for the summary.
struct Outcome {
    session_id: SessionId,
    user_message_id: MessageId,
    stop_reason: StopReason,
    tool_call_cancel: Option<Value>,
    cancel_request: Option<Value>,
}

async fn run(args: Args) -> anyhow::Result<()> {
    let mut child = tokio::process::Command::new(&args.agent[0])
        .args(&args.agent[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("spawning agent {:?}", args.agent[0]))?;
    let agent_stdin = child.stdin.take().context("agent stdin")?;
    let agent_stdout = child.stdout.take().context("agent stdout")?;

    let (sdk_end, io_end) = Channel::duplex();
    let writer = pump_lines(agent_stdout, agent_stdin, io_end);

    let observed = Arc::new(Mutex::new(Observed::default()));
    let cwd = std::env::current_dir().context("current directory")?;
    let choose = if args.reject {
        schema::PermissionOptionKind::RejectOnce
    } else {
        schema::PermissionOptionKind::AllowOnce
    };
    // Each turn's stop reason, from the live `idle` updates that carry one.
    let (turn_ends, mut turn_ended) = mpsc::unbounded_channel::<StopReason>();

    let outcome = Client
        .v2()
        .name("v2-client")
        .on_receive_notification(
            {
                let observed = observed.clone();
                async move |notification: schema::UpdateSessionNotification,
                            _cx: ConnectionTo<Agent>| {
                    let mut observed = observed.lock().expect("observed lock");
                    let replaying = observed.replaying;
                    if !replaying
                        && let SessionUpdate::StateUpdate(schema::StateUpdate::Idle(idle)) =
                            &notification.update
                        && let Some(stop_reason) = &idle.stop_reason
                    {
                        // The receiver only goes away with the connection.
                        drop(turn_ends.send(stop_reason.clone()));
                    }
                    let view = if replaying {
                        &mut observed.replay
                    } else {
                        &mut observed.live
                    };
                    view.apply(notification.update);
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            {
                let observed = observed.clone();
                async move |request: schema::RequestPermissionRequest,
                            responder: Responder<schema::RequestPermissionResponse>,
                            _cx: ConnectionTo<Agent>| {
                    let answer = answer_permission(
                        &mut observed.lock().expect("observed lock"),
                        &choose,
                        &request,
                    );
                    responder.respond(answer)
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let observed = observed.clone();
                async move |request: schema::CreateElicitationRequest,
                            responder: Responder<schema::CreateElicitationResponse>,
                            _cx: ConnectionTo<Agent>| {
                    let answer =
                        answer_elicitation(&mut observed.lock().expect("observed lock"), &request);
                    responder.respond(answer)
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(sdk_end, {
            let observed = observed.clone();
            async move |cx: ConnectionTo<Agent>| {
                let fail = |why: String| agent_client_protocol::Error::internal_error().data(why);
                let initialized = cx
                    .send_request(
                        schema::InitializeRequest::new(
                            ProtocolVersion::V2,
                            schema::Implementation::new("v2-client", env!("CARGO_PKG_VERSION")),
                        )
                        .capabilities(schema::ClientCapabilities::new().elicitation(
                            schema::ElicitationCapabilities::new()
                                .form(schema::ElicitationFormCapabilities::new()),
                        )),
                    )
                    .block_task()
                    .await?;
                if initialized.protocol_version != ProtocolVersion::V2 {
                    return Err(fail(format!(
                        "the agent answered protocol version {:?}",
                        initialized.protocol_version
                    )));
                }
                let session_id = cx
                    .send_request(schema::NewSessionRequest::new(cwd.clone()))
                    .block_task()
                    .await?
                    .session_id;
                let accepted = cx
                    .send_request(schema::PromptRequest::new(
                        session_id.clone(),
                        vec!["hello".into()],
                    ))
                    .block_task()
                    .await?;
                let stop_reason = turn_ended
                    .recv()
                    .await
                    .ok_or_else(|| fail("the agent left before the turn ended".into()))?;

                if args.resume {
                    // The agent replays before it answers, and the dispatch loop hands this task
                    // the answer only after the updates before it: all of them are the replay's.
                    observed.lock().expect("observed lock").replaying = true;
                    let resumed = cx
                        .send_request(
                            schema::ResumeSessionRequest::new(session_id.clone(), cwd.clone())
                                .replay_from(schema::ReplayFrom::Start(
                                    schema::ReplayFromStart::new(),
                                )),
                        )
                        .block_task()
                        .await;
                    observed.lock().expect("observed lock").replaying = false;
                    resumed?;
                }

                let tool_call_cancel = if args.cancel_tool_call {
                    let target = observed
                        .lock()
                        .expect("observed lock")
                        .live
                        .cancel_target()
                        .ok_or_else(|| fail("no tool call to cancel".into()))?;
                    let answer = cx
                        .send_request(schema::CancelToolCallRequest::new(
                            session_id.clone(),
                            target.clone(),
                        ))
                        .block_task()
                        .await;
                    Some(json!({ "toolCallId": target, "answer": answer_of(&answer) }))
                } else {
                    None
                };

                let cancel_request = if args.cancel_request {
                    let sent = cx.send_request(schema::PromptRequest::new(
                        session_id.clone(),
                        vec!["never mind".into()],
                    ));
                    sent.cancel()?;
                    Some(match sent.block_task().await {
                        Err(err) => {
                            json!({ "answer": "error", "code": i32::from(err.code), "message": err.message })
                        }
                        Ok(accepted) => {
                            // Admitted before the cancel arrived: cancel the turn instead.
                            cx.send_notification(schema::CancelSessionNotification::new(
                                session_id.clone(),
                            ))?;
                            let stop_reason = turn_ended.recv().await.ok_or_else(|| {
                                fail("the agent left before the cancelled turn ended".into())
                            })?;
                            json!({
                                "answer": "admitted",
                                "userMessageId": accepted.message_id,
                                "stopReason": stop_reason_name(&stop_reason),
                            })
                        }
                    })
                } else {
                    None
                };

                Ok(Outcome {
                    session_id,
                    user_message_id: accepted.message_id,
                    stop_reason,
                    tool_call_cancel,
                    cancel_request,
                })
            }
        })
        .await
        .map_err(|err| anyhow!("ACP session failed: {err}"));

    // The SDK has released its end; once the writer has flushed it closes the
    // agent's stdin, which is the agent's cue to exit.
    let written = writer.await.context("writer task")?;
    let outcome = outcome?;
    written.context("writing to the agent")?;
    let status = child.wait().await.context("waiting for the agent")?;

    let summary = summarize(
        &observed.lock().expect("observed lock"),
        outcome,
        status.code(),
    );
    let text = serde_json::to_string_pretty(&summary)? + "\n";
    match &args.out {
        Some(path) => {
            std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
        }
        None => print!("{text}"),
    }
    Ok(())
}

/// `"ok"`, or the error the agent answered with.
fn answer_of<T>(answer: &agent_client_protocol::Result<T>) -> Value {
    match answer {
        Ok(_) => json!("ok"),
        Err(err) => json!({ "code": i32::from(err.code), "message": err.message }),
    }
}

/// The summary document the integration tests read.
fn summarize(observed: &Observed, outcome: Outcome, agent_exit_code: Option<i32>) -> Value {
    let live = &observed.live;
    let mut summary = json!({
        "protocolVersion": ProtocolVersion::V2,
        "sessionId": outcome.session_id,
        "userMessageId": outcome.user_message_id,
        "stopReason": stop_reason_name(&outcome.stop_reason),
        "updateCount": live.updates,
        "updateKinds": live.kinds,
        "agentMessages": texts(&live.messages),
        "agentThoughts": texts(&live.thoughts),
        "toolCalls": live.tool_call_states(),
        "permissionRequests": observed.permission_requests,
        "elicitations": observed.elicitations,
        "replayedUpdateCount": observed.replay.updates,
        "replayedAgentMessages": texts(&observed.replay.messages),
        "agentExitCode": agent_exit_code,
    });
    if let Some(cancel) = outcome.tool_call_cancel {
        summary["toolCallCancel"] = cancel;
    }
    if let Some(cancel) = outcome.cancel_request {
        summary["cancelRequest"] = cancel;
    }
    summary
}

/// A stop reason's wire name (`end_turn`...): the schema writes the reason as an object
/// (`{"stopReason": "end_turn"}`, flattened into the idle update), not a bare string.
fn stop_reason_name(stop_reason: &StopReason) -> Value {
    serde_json::to_value(stop_reason)
        .map(|value| value["stopReason"].clone())
        .unwrap_or_default()
}

fn texts(messages: &HashMap<MessageId, Vec<ContentBlock>>) -> BTreeMap<String, String> {
    messages
        .iter()
        .map(|(id, content)| (id.0.to_string(), content.iter().map(text_of).collect()))
        .collect()
}

fn text_of(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

impl View {
    fn apply(&mut self, update: SessionUpdate) {
        self.updates += 1;
        // The wire name of the update's kind, as the schema's serializer writes it.
        let kind = serde_json::to_value(&update)
            .ok()
            .and_then(|value| value["sessionUpdate"].as_str().map(str::to_string))
            .unwrap_or_else(|| "?".to_string());
        *self.kinds.entry(kind).or_default() += 1;
        match update {
            SessionUpdate::AgentMessageChunk(chunk) => self
                .messages
                .entry(chunk.message_id)
                .or_default()
                .push(chunk.content),
            SessionUpdate::AgentMessage(message) => {
                upsert(
                    self.messages.entry(message.message_id).or_default(),
                    message.content,
                );
            }
            SessionUpdate::AgentThoughtChunk(chunk) => self
                .thoughts
                .entry(chunk.message_id)
                .or_default()
                .push(chunk.content),
            SessionUpdate::AgentThought(thought) => {
                upsert(
                    self.thoughts.entry(thought.message_id).or_default(),
                    thought.content,
                );
            }
            SessionUpdate::ToolCallUpdate(patch) => {
                match self
                    .tool_calls
                    .iter_mut()
                    .find(|call| call.tool_call_id == patch.tool_call_id)
                {
                    Some(call) => call.apply_update(patch),
                    // A call id not seen before starts at the protocol defaults.
                    None => self.tool_calls.push(patch),
                }
            }
            SessionUpdate::ToolCallContentChunk(chunk) => {
                let call = self
                    .tool_calls
                    .iter_mut()
                    .find(|call| call.tool_call_id == chunk.tool_call_id);
                if let Some(call) = call {
                    match &mut call.content {
                        MaybeUndefined::Value(content) => content.push(chunk.content),
                        _ => call.content = MaybeUndefined::Value(vec![chunk.content]),
                    }
                }
            }
            _ => {}
        }
    }

    /// A call that advertised cancellation and has not ended, else the last call seen.
    fn cancel_target(&self) -> Option<schema::ToolCallId> {
        let ended = |call: &ToolCallUpdate| {
            matches!(
                call.status,
                MaybeUndefined::Value(
                    schema::ToolCallStatus::Completed
                        | schema::ToolCallStatus::Failed
                        | schema::ToolCallStatus::Cancelled
                )
            )
        };
        self.tool_calls
            .iter()
            .find(|call| {
                !ended(call)
                    && matches!(&call.capabilities, MaybeUndefined::Value(caps) if caps.cancel.is_some())
            })
            .or(self.tool_calls.last())
            .map(|call| call.tool_call_id.clone())
    }

    /// Each call's final title, kind, status and locations, `null` and unset fields read as the
    /// protocol's defaults (kind `other`, status `pending`, no title, no locations).
    fn tool_call_states(&self) -> serde_json::Map<String, Value> {
        self.tool_calls
            .iter()
            .map(|call| {
                let title = match &call.title {
                    MaybeUndefined::Value(title) => json!(title),
                    _ => Value::Null,
                };
                let kind = match &call.kind {
                    MaybeUndefined::Value(kind) => kind.clone(),
                    _ => schema::ToolKind::default(),
                };
                let status = match &call.status {
                    MaybeUndefined::Value(status) => status.clone(),
                    _ => schema::ToolCallStatus::default(),
                };
                let locations: Vec<_> = match &call.locations {
                    MaybeUndefined::Value(locations) => {
                        locations.iter().map(|location| &location.path).collect()
                    }
                    _ => Vec::new(),
                };
                let state = json!({
                    "title": title,
                    "kind": kind,
                    "status": status,
                    "locations": locations,
                    "rawInput": call.raw_input.value(),
                });
                (call.tool_call_id.0.to_string(), state)
            })
            .collect()
    }
}

/// An upsert's `content`: a value replaces the message, `null` clears it, absence keeps it.
fn upsert(message: &mut Vec<ContentBlock>, content: MaybeUndefined<Vec<ContentBlock>>) {
    match content {
        MaybeUndefined::Value(content) => *message = content,
        MaybeUndefined::Null => message.clear(),
        MaybeUndefined::Undefined => {}
    }
}

/// Picks the option of kind `choose` and records the request and the choice.
fn answer_permission(
    observed: &mut Observed,
    choose: &schema::PermissionOptionKind,
    request: &schema::RequestPermissionRequest,
) -> schema::RequestPermissionResponse {
    let chosen = request
        .options
        .iter()
        .find(|option| option.kind == *choose)
        .map(|option| option.option_id.clone());
    let mut seen = json!({
        "title": request.title,
        "description": request.description,
        "chosenOptionId": chosen,
    });
    match &request.subject {
        Some(schema::RequestPermissionSubject::Command(command)) => {
            seen["subjectType"] = json!("command");
            seen["command"] = json!(command.command);
            seen["cwd"] = json!(command.cwd);
            seen["toolCallId"] = json!(command.tool_call_id);
        }
        Some(schema::RequestPermissionSubject::ToolCall(subject)) => {
            seen["subjectType"] = json!("tool_call");
            seen["toolCallId"] = json!(subject.tool_call.tool_call_id);
        }
        Some(schema::RequestPermissionSubject::Other(other)) => {
            seen["subjectType"] = json!(other.type_);
        }
        Some(_) | None => seen["subjectType"] = Value::Null,
    }
    observed.permission_requests.push(seen);
    // Without a matching option the only honest answer is "cancelled".
    let outcome = match chosen {
        Some(id) => {
            schema::RequestPermissionOutcome::Selected(schema::SelectedPermissionOutcome::new(id))
        }
        None => schema::CancelledPermissionOutcome::new().into(),
    };
    schema::RequestPermissionResponse::new(outcome)
}

/// Accepts a form with a plausible value for each field; declines anything else (a URL).
fn answer_elicitation(
    observed: &mut Observed,
    request: &schema::CreateElicitationRequest,
) -> schema::CreateElicitationResponse {
    let (mode, action) = match &request.mode {
        schema::ElicitationMode::Form(form) => {
            let content: BTreeMap<String, schema::ElicitationContentValue> = form
                .requested_schema
                .properties
                .iter()
                .map(|(name, property)| (name.clone(), sample_value(property)))
                .collect();
            (
                "form",
                schema::ElicitationAction::Accept(
                    schema::ElicitationAcceptAction::new().content(content),
                ),
            )
        }
        schema::ElicitationMode::Url(_) => ("url", schema::ElicitationAction::Decline),
        _ => ("other", schema::ElicitationAction::Decline),
    };
    let answer = schema::CreateElicitationResponse::new(action);
    observed.elicitations.push(json!({
        "message": request.message,
        "mode": mode,
        "action": serde_json::to_value(&answer.action).map(|action| action["action"].clone()).unwrap_or_default(),
    }));
    answer
}

fn sample_value(property: &schema::ElicitationPropertySchema) -> schema::ElicitationContentValue {
    use schema::ElicitationPropertySchema as Property;
    match property {
        Property::Boolean(_) => false.into(),
        Property::Integer(integer) => integer.minimum.unwrap_or(1).into(),
        Property::Number(number) => number.minimum.unwrap_or(1.0).into(),
        Property::Array(array) => array.default.clone().unwrap_or_default().into(),
        _ => "from v2-client".into(),
    }
}
