//! `sdk_client`: a one-shot ACP client built on the official ACP Rust SDK
//! (`agent-client-protocol`).
//!
//! acptap's integration tests use it as an independently written client: it
//! spawns an agent command (typically acptap wrapping `sdk_agent`), runs one
//! prompt turn through the SDK and writes a JSON summary of what it saw, so
//! the tests can check the proxy interoperates with real SDK peers.
//!
//! Usage: `sdk_client [--out SUMMARY.json] [--reject] -- AGENT_PROGRAM [ARGS...]`
//!
//! It initializes (protocol v1, clientInfo `sdk-client`), opens a session in
//! the current directory, prompts `hello`, collects `session/update`s and
//! answers `session/request_permission` with the `allow_once` option (or
//! `reject_once` with `--reject`). Other agent requests (fs, terminal) get the
//! SDK's method-not-found error. After the turn it closes the agent's stdin,
//! waits for it to exit and writes the summary to `--out` or stdout:
//!
//! ```json
//! {"stopReason": "end_turn", "sessionId": "...", "agentMessages": ["..."],
//!  "toolCalls": {"call_1": {"title": "...", "kind": "read", "status": "completed",
//!                "locations": ["/abs/path"]}},
//!  "permissionRequests": [{"toolCallId": "call_2", "chosenOptionId": "allow"}],
//!  "agentExitCode": 0}
//! ```
//!
//! Exits 0 on success; on any error (including the overall timeout) it
//! prints the reason on stderr and exits non-zero.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, ContentBlock, Implementation, InitializeRequest, NewSessionRequest,
    PermissionOptionKind, PromptRequest, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome, SessionId, SessionNotification,
    SessionUpdate, StopReason, ToolCall,
};
use agent_client_protocol::{Agent, Channel, Client};

#[path = "common/line_transport.rs"]
mod line_transport;
use anyhow::{Context, anyhow, bail};
use line_transport::pump_lines;
use serde_json::{Value, json};

/// Upper bound on the whole run, so a broken proxy fails a test instead of hanging it.
const TIMEOUT: Duration = Duration::from_secs(30);

struct Args {
    out: Option<PathBuf>,
    reject: bool,
    agent: Vec<String>,
}

/// What the client saw during the turn, filled in by the SDK's handlers.
#[derive(Default)]
struct Observed {
    agent_messages: Vec<String>,
    /// Tool calls by id, in order of first appearance.
    tool_calls: Vec<ToolCall>,
    permission_requests: Vec<Value>,
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
            eprintln!("sdk_client: error: {err:#}");
            1
        }
    };
    // Exit without dropping the runtime, which would wait for any blocking
    // read still parked on a pipe that some leftover process holds open.
    std::process::exit(code);
}

fn parse_args() -> anyhow::Result<Args> {
    const USAGE: &str =
        "usage: sdk_client [--out SUMMARY.json] [--reject] -- AGENT_PROGRAM [ARGS...]";
    let mut out = None;
    let mut reject = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--out" => out = Some(PathBuf::from(args.next().context(USAGE)?)),
            "--reject" => reject = true,
            "--" => break,
            other => bail!("unexpected argument {other:?}\n{USAGE}"),
        }
    }
    let agent: Vec<String> = args.collect();
    if agent.is_empty() {
        bail!("no agent command given\n{USAGE}");
    }
    Ok(Args { out, reject, agent })
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
        PermissionOptionKind::RejectOnce
    } else {
        PermissionOptionKind::AllowOnce
    };

    let outcome = Client
        .v1()
        .name("sdk-client")
        .on_receive_notification(
            {
                let observed = observed.clone();
                async move |notification: SessionNotification, _cx| {
                    record_update(
                        &mut observed.lock().expect("observed lock"),
                        notification.update,
                    );
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            {
                let observed = observed.clone();
                async move |request: RequestPermissionRequest, responder, _cx| {
                    let answer = answer_permission(
                        &mut observed.lock().expect("observed lock"),
                        choose,
                        &request,
                    );
                    responder.respond(answer)
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(sdk_end, async move |cx: ConnectionTo<Agent>| {
            cx.send_request(
                InitializeRequest::new(ProtocolVersion::V1)
                    .client_capabilities(ClientCapabilities::new())
                    .client_info(Implementation::new("sdk-client", env!("CARGO_PKG_VERSION"))),
            )
            .block_task()
            .await?;
            let session = cx
                .send_request(NewSessionRequest::new(cwd))
                .block_task()
                .await?;
            let response = cx
                .send_request(PromptRequest::new(
                    session.session_id.clone(),
                    vec![ContentBlock::from("hello")],
                ))
                .block_task()
                .await?;
            Ok((session.session_id, response.stop_reason))
        })
        .await
        .map_err(|err| anyhow!("ACP session failed: {err}"));

    // The SDK has released its end; once the writer has flushed it closes the
    // agent's stdin, which is the agent's cue to exit.
    let written = writer.await.context("writer task")?;
    let (session_id, stop_reason) = outcome?;
    written.context("writing to the agent")?;
    let status = child.wait().await.context("waiting for the agent")?;

    let summary = summarize(
        &observed.lock().expect("observed lock"),
        &session_id,
        stop_reason,
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

/// The summary document the integration tests read.
fn summarize(
    observed: &Observed,
    session_id: &SessionId,
    stop_reason: StopReason,
    agent_exit_code: Option<i32>,
) -> Value {
    let tool_calls: serde_json::Map<String, Value> = observed
        .tool_calls
        .iter()
        .map(|call| {
            let state = json!({
                "title": call.title,
                "kind": call.kind,
                "status": call.status,
                "locations": call.locations.iter().map(|l| &l.path).collect::<Vec<_>>(),
            });
            (call.tool_call_id.0.to_string(), state)
        })
        .collect();
    json!({
        "stopReason": stop_reason,
        "sessionId": session_id,
        "agentMessages": observed.agent_messages,
        "toolCalls": tool_calls,
        "permissionRequests": observed.permission_requests,
        "agentExitCode": agent_exit_code,
    })
}

/// Picks the option of kind `choose` and records the request and the choice.
fn answer_permission(
    observed: &mut Observed,
    choose: PermissionOptionKind,
    request: &RequestPermissionRequest,
) -> RequestPermissionResponse {
    let chosen = request
        .options
        .iter()
        .find(|option| option.kind == choose)
        .map(|option| option.option_id.clone());
    observed.permission_requests.push(json!({
        "toolCallId": request.tool_call.tool_call_id,
        "chosenOptionId": chosen,
    }));
    // Without a matching option the only honest answer is "cancelled".
    let outcome = match chosen {
        Some(id) => RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id)),
        None => RequestPermissionOutcome::Cancelled,
    };
    RequestPermissionResponse::new(outcome)
}

/// Folds one `session/update` into the observed state: a tool call starts (or
/// replaces) an entry, a tool call update applies its fields on top.
fn record_update(observed: &mut Observed, update: SessionUpdate) {
    match update {
        SessionUpdate::AgentMessageChunk(chunk) => {
            let text = match chunk.content {
                ContentBlock::Text(text) => text.text,
                other => serde_json::to_string(&other).unwrap_or_default(),
            };
            observed.agent_messages.push(text);
        }
        SessionUpdate::ToolCall(call) => {
            let known = observed
                .tool_calls
                .iter_mut()
                .find(|known| known.tool_call_id == call.tool_call_id);
            if let Some(known) = known {
                *known = call;
            } else {
                observed.tool_calls.push(call);
            }
        }
        SessionUpdate::ToolCallUpdate(update) => {
            let known = observed
                .tool_calls
                .iter_mut()
                .find(|known| known.tool_call_id == update.tool_call_id);
            if let Some(known) = known {
                known.update(update.fields);
            } else {
                // An update for an unannounced call still tells us its state;
                // start from the protocol defaults (kind other, status pending).
                let mut call = ToolCall::new(update.tool_call_id, "");
                call.update(update.fields);
                observed.tool_calls.push(call);
            }
        }
        _ => {}
    }
}
