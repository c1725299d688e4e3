//! `acptap demo`: a complete recorded session with no editor and no model.
//!
//! The demo client here runs the real proxy in this process (`proxy::InProcess`: the same
//! framing, pumps, recorder and database as `acptap run`) in front of `acptap demo-agent`, a
//! child process, drives one prompt turn, answers the agent's permission request, then prints the
//! `show` view of what was recorded.

pub(crate) mod agent;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use crate::inspect::show;
use crate::proxy::{InProcess, ProxyError, RunOptions};
use crate::query;
use crate::query::Reader;
use crate::record::Destination;
use crate::record::redact::Redactor;
use crate::record::store::StoreError;

/// What can stop the demo.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DemoError {
    /// The temporary directory of the demo's database.
    #[error("cannot create {}", dir.display())]
    CreateDir {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The demo agent is this executable: it must know where it is.
    #[error("cannot find the acptap executable")]
    Executable(#[source] std::io::Error),
    #[error("the agent closed its output before answering {method}")]
    AgentClosed { method: String },
    #[error("the agent answered {method} with an error: {error}")]
    AgentError { method: String, error: Value },
    #[error("the agent's session/new answer has no sessionId")]
    NoSessionId,
    #[error("the demo agent ended with exit code {0}")]
    AgentExit(i32),
    #[error("the demo session could not be recorded (see the message above)")]
    NotRecorded,
    #[error(transparent)]
    Proxy(#[from] ProxyError),
    /// The recording, opened to show it.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The recording, read to show it.
    #[error(transparent)]
    Query(#[from] crate::query::QueryError),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The pipes to the proxy, the working directory, stdout.
    /// Said as the I/O error itself, which stays in the chain as its source (not `transparent`):
    /// the command edge finds a closed stdout (`BrokenPipe`) there, and says the text once.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

pub(crate) fn run_demo(db: Option<PathBuf>) -> Result<i32, DemoError> {
    let db = match db.filter(|p| !p.as_os_str().is_empty()) {
        Some(path) => path,
        None => {
            let dir = std::env::temp_dir().join(format!("acptap-demo-{}", std::process::id()));
            if let Err(source) = std::fs::create_dir_all(&dir) {
                return Err(DemoError::CreateDir { dir, source });
            }
            dir.join("demo.db")
        }
    };
    let exe = std::env::current_exe().map_err(DemoError::Executable)?;
    let cwd = std::env::current_dir()?.to_string_lossy().into_owned();
    let proxy = InProcess::start(RunOptions {
        agent: vec![exe.to_string_lossy().into_owned(), "demo-agent".into()],
        destination: Destination::Database(db.clone()),
        label: Some("demo".into()),
        eof_grace: Duration::from_secs(5),
        kill_grace: Duration::from_secs(5),
        policy: None,
        shadow: false,
        redactor: Redactor::default_only(),
        recorded_as: None,
        replay_of: None,
    })?;
    let InProcess {
        mut to_agent,
        from_agent,
        proxy,
    } = proxy;
    let mut from_agent = BufReader::new(from_agent);

    let mut call = |id: u64, method: &str, params: Value| -> Result<Value, DemoError> {
        send(
            &mut to_agent,
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        )?;
        loop {
            let message = receive(&mut from_agent)?.ok_or_else(|| DemoError::AgentClosed {
                method: method.to_owned(),
            })?;
            match (
                message.get("method").and_then(Value::as_str),
                message.get("id"),
            ) {
                (Some(request), Some(request_id)) => {
                    let answer = answer_agent_request(request, message.get("params"));
                    send(
                        &mut to_agent,
                        &json!({"jsonrpc": "2.0", "id": request_id, "result": answer}),
                    )?;
                }
                (None, Some(reply_id)) if reply_id == &json!(id) => {
                    if let Some(error) = message.get("error") {
                        return Err(DemoError::AgentError {
                            method: method.to_owned(),
                            error: error.clone(),
                        });
                    }
                    return Ok(message.get("result").cloned().unwrap_or(Value::Null));
                }
                _ => {} // notifications: recorded by the proxy, nothing to do here
            }
        }
    };
    call(
        0,
        "initialize",
        json!({
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false},
            "clientInfo": {"name": "acptap-demo-client", "version": env!("CARGO_PKG_VERSION")},
        }),
    )?;
    let session = call(1, "session/new", json!({"cwd": cwd, "mcpServers": []}))?;
    let session_id = session
        .get("sessionId")
        .and_then(Value::as_str)
        .ok_or(DemoError::NoSessionId)?
        .to_owned();
    call(
        2,
        "session/prompt",
        json!({
            "sessionId": session_id,
            "prompt": [{"type": "text", "text": "Fix the TODO in this project and run the tests."}],
        }),
    )?;
    drop(to_agent); // end of the session: the proxy closes the agent's stdin
    drop(from_agent);
    let outcome = proxy.wait()?;
    if outcome.exit_code != 0 {
        return Err(DemoError::AgentExit(outcome.exit_code));
    }
    let connection_id = outcome.connection_id.ok_or(DemoError::NotRecorded)?;

    let reader = Reader::open(&db)?;
    let session = query::SessionRef {
        connection_id,
        session_id: session_id.clone(),
    };
    let timeline = show::timeline(&reader, &session)?;
    let mut out = std::io::stdout().lock();
    write!(out, "{}", show::render(&timeline))?;
    writeln!(out, "\nRecorded into {}", db.display())?;
    writeln!(
        out,
        "Look further: acptap tools --db {}   (or: acptap show last --json --db ...)",
        db.display()
    )
    .ok();
    Ok(0)
}

/// The demo client's answers: allow once when asked, and nothing else is offered.
fn answer_agent_request(method: &str, params: Option<&Value>) -> Value {
    match method {
        "session/request_permission" => {
            let option = params
                .and_then(|p| p.get("options"))
                .and_then(Value::as_array)
                .and_then(|options| {
                    options
                        .iter()
                        .find(|o| o.get("kind").and_then(Value::as_str) == Some("allow_once"))
                })
                .and_then(|o| o.get("optionId").cloned());
            match option {
                Some(option_id) => {
                    json!({"outcome": {"outcome": "selected", "optionId": option_id}})
                }
                None => json!({"outcome": {"outcome": "cancelled"}}),
            }
        }
        _ => Value::Null,
    }
}

fn send(to: &mut impl Write, message: &Value) -> Result<(), DemoError> {
    let mut line = serde_json::to_vec(message)?;
    line.push(b'\n');
    to.write_all(&line)?;
    to.flush()?;
    Ok(())
}

fn receive(from: &mut impl BufRead) -> std::io::Result<Option<Value>> {
    let mut line = Vec::new();
    loop {
        line.clear();
        if from.read_until(b'\n', &mut line)? == 0 {
            return Ok(None);
        }
        if let Ok(value) = serde_json::from_slice(&line) {
            return Ok(Some(value));
        }
    }
}
