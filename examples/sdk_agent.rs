//! `sdk_agent`: a scripted ACP agent built on the official ACP Rust SDK
//! (`agent-client-protocol`), speaking newline-delimited JSON-RPC on its own
//! stdin/stdout.
//!
//! acptap's integration tests run it behind the proxy as an independently
//! written agent: none of its protocol handling is ours, so a session that
//! works through acptap shows the proxy interoperates with a real SDK peer.
//!
//! Each `session/prompt` plays the same turn: an agent message chunk, a `read`
//! tool call that completes, an `execute` tool call that needs permission
//! (`session/request_permission`) and completes or fails according to the
//! client's choice, a closing message chunk, then `stopReason: end_turn`.
//! The process exits when stdin closes. Stdout carries only protocol; the rare
//! diagnostics go to stderr.
//!
//! Run: `cargo run --example sdk_agent` (usually spawned by a client instead).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, ContentBlock, ContentChunk, Implementation,
    InitializeRequest, InitializeResponse, NewSessionRequest, NewSessionResponse, PermissionOption,
    PermissionOptionKind, PromptRequest, PromptResponse, RequestPermissionOutcome,
    RequestPermissionRequest, SessionId, SessionNotification, SessionUpdate, StopReason, ToolCall,
    ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
    ToolKind,
};
use agent_client_protocol::{Agent, Channel, Client};

#[path = "common/line_transport.rs"]
mod line_transport;
use line_transport::pump_lines;

/// Working directory of each session, so tool call locations can name real paths.
type Sessions = Arc<Mutex<HashMap<SessionId, PathBuf>>>;

#[tokio::main]
async fn main() {
    let code = match run().await {
        Ok(()) => 0,
        Err(err) => {
            eprintln!("sdk_agent: {err:#}");
            1
        }
    };
    // Exit without dropping the runtime: tokio reads stdin with a blocking
    // read that cannot be cancelled, and dropping the runtime would wait on it.
    std::process::exit(code);
}

async fn run() -> anyhow::Result<()> {
    let (sdk_end, io_end) = Channel::duplex();
    let writer = pump_lines(tokio::io::stdin(), tokio::io::stdout(), io_end);

    let sessions: Sessions = Arc::default();
    let next_session = Arc::new(AtomicU64::new(1));

    let connection = Agent
        .v1()
        .name("sdk-agent")
        .on_receive_request(
            async move |_request: InitializeRequest, responder, _cx| {
                // We only speak v1; answering with it lets a newer client downgrade.
                responder.respond(
                    InitializeResponse::new(ProtocolVersion::V1)
                        .agent_capabilities(AgentCapabilities::new())
                        .agent_info(Implementation::new("sdk-agent", env!("CARGO_PKG_VERSION"))),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let sessions = sessions.clone();
                async move |request: NewSessionRequest, responder, _cx| {
                    let n = next_session.fetch_add(1, Ordering::Relaxed);
                    let session_id = SessionId::new(format!("sdk-session-{n}"));
                    sessions
                        .lock()
                        .expect("sessions lock")
                        .insert(session_id.clone(), request.cwd);
                    responder.respond(NewSessionResponse::new(session_id))
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, cx: ConnectionTo<Client>| {
                let cwd = sessions
                    .lock()
                    .expect("sessions lock")
                    .get(&request.session_id)
                    .cloned()
                    .unwrap_or_else(|| PathBuf::from("/"));
                // The turn waits on the client's permission answer, which the
                // dispatch loop must stay free to deliver: run it in a task.
                cx.clone().spawn(async move {
                    match play_turn(&cx, request.session_id, &cwd).await {
                        Ok(stop_reason) => responder.respond(PromptResponse::new(stop_reason)),
                        Err(err) => responder.respond_with_error(err),
                    }
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            // Every turn finishes on its own almost at once, so there is
            // nothing to interrupt; accepting the notification is enough.
            async move |_cancel: CancelNotification, _cx| Ok(()),
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

/// The scripted prompt turn; returns the stop reason for the prompt response.
async fn play_turn(
    cx: &ConnectionTo<Client>,
    session_id: SessionId,
    cwd: &Path,
) -> agent_client_protocol::Result<StopReason> {
    let update = |update: SessionUpdate| {
        cx.send_notification(SessionNotification::new(session_id.clone(), update))
    };

    update(message_chunk("working on it"))?;

    // `pending` is the protocol default, so the SDK leaves `status` out of
    // these `tool_call`s on the wire; a reader sees pending all the same.
    update(SessionUpdate::ToolCall(
        ToolCall::new("call_1", "Read README.md")
            .kind(ToolKind::Read)
            .status(ToolCallStatus::Pending)
            .locations(vec![ToolCallLocation::new(cwd.join("README.md"))]),
    ))?;
    update(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
        "call_1",
        ToolCallUpdateFields::new()
            .status(ToolCallStatus::Completed)
            .content(vec![ToolCallContent::from("file contents")]),
    )))?;

    update(SessionUpdate::ToolCall(
        ToolCall::new("call_2", "Run cargo test")
            .kind(ToolKind::Execute)
            .status(ToolCallStatus::Pending)
            .raw_input(serde_json::json!({ "command": "cargo test" })),
    ))?;
    let answer = cx
        .send_request(RequestPermissionRequest::new(
            session_id.clone(),
            ToolCallUpdate::new(
                "call_2",
                ToolCallUpdateFields::new().title("Run cargo test".to_string()),
            ),
            vec![
                PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
                PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
            ],
        ))
        .block_task()
        .await?;
    let allowed = matches!(
        &answer.outcome,
        RequestPermissionOutcome::Selected(selected) if &*selected.option_id.0 == "allow"
    );
    let status = if allowed {
        ToolCallStatus::Completed
    } else {
        ToolCallStatus::Failed
    };
    update(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
        "call_2",
        ToolCallUpdateFields::new().status(status),
    )))?;

    update(message_chunk("done"))?;
    Ok(StopReason::EndTurn)
}

fn message_chunk(text: &str) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::from(text)))
}
