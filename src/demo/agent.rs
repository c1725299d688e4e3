//! The built-in demo agent (`acptap demo-agent`): a scripted ACP agent with no model behind it.
//!
//! Each prompt plays the same turn, chosen to exercise what the recorder materialises: a v1
//! `tool_call` then `tool_call_update`s, a v2 upsert for an id never announced with content
//! chunks appended, a diff guarded by a permission request, a failed command, a custom `_kind`,
//! a field cleared with `null`, agent text, a thought and a plan.

use std::io::{self, BufRead, Write};

use serde_json::{Value, json};

/// A line-based JSON-RPC peer over blocking stdio.
struct Peer<R, W> {
    input: R,
    output: W,
    next_id: u64,
}

impl<R: BufRead, W: Write> Peer<R, W> {
    fn send(&mut self, message: Value) -> io::Result<()> {
        let mut line = serde_json::to_vec(&message)?;
        line.push(b'\n');
        self.output.write_all(&line)?;
        self.output.flush()
    }

    fn update(&mut self, session_id: &str, update: Value) -> io::Result<()> {
        self.send(json!({
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": session_id, "update": update},
        }))
    }

    fn read(&mut self) -> io::Result<Option<Value>> {
        let mut line = String::new();
        loop {
            line.clear();
            if self.input.read_line(&mut line)? == 0 {
                return Ok(None);
            }
            if let Ok(value) = serde_json::from_str(&line) {
                return Ok(Some(value));
            }
        }
    }

    /// Sends a request to the client and waits for its answer (other messages meanwhile are
    /// ignored: the demo client sends none).
    fn request(&mut self, method: &str, params: Value) -> io::Result<Option<Value>> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        while let Some(message) = self.read()? {
            if message.get("id") == Some(&json!(id)) && message.get("method").is_none() {
                return Ok(message.get("result").cloned());
            }
        }
        Ok(None)
    }
}

/// Serves ACP on `input`/`output` until end of input. `altered` plays a slightly different turn
/// (no failing test run, another search title, stop reason `max_tokens`), to test replays.
pub(crate) fn run(input: impl BufRead, output: impl Write, altered: bool) -> io::Result<()> {
    let mut peer = Peer {
        input,
        output,
        next_id: 0,
    };
    let mut sessions = 0u32;
    let mut cwd = String::from("/");
    while let Some(message) = peer.read()? {
        let (Some(id), Some(method)) = (
            message.get("id").cloned(),
            message.get("method").and_then(Value::as_str),
        ) else {
            continue; // notifications (session/cancel) and stray responses need no answer
        };
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        let result = match method {
            "initialize" => json!({
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": false},
                "agentInfo": {"name": "acptap-demo-agent", "version": env!("CARGO_PKG_VERSION")},
                "authMethods": [],
            }),
            "session/new" => {
                sessions += 1;
                cwd = params
                    .get("cwd")
                    .and_then(Value::as_str)
                    .unwrap_or("/")
                    .to_owned();
                json!({"sessionId": format!("demo-{}-{sessions}", unique_suffix())})
            }
            "session/prompt" => {
                let session_id = params
                    .get("sessionId")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                play_turn(&mut peer, &session_id, &cwd, altered)?;
                json!({"stopReason": if altered { "max_tokens" } else { "end_turn" }})
            }
            _ => {
                peer.send(json!({
                    "jsonrpc": "2.0", "id": id,
                    "error": {"code": -32601, "message": format!("the demo agent does not implement {method}")},
                }))?;
                continue;
            }
        };
        peer.send(json!({"jsonrpc": "2.0", "id": id, "result": result}))?;
    }
    Ok(())
}

/// Distinguishes demo sessions recorded into one database.
fn unique_suffix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{:08x}",
        (nanos as u64 ^ u64::from(std::process::id()).rotate_left(32)) as u32
    )
}

fn text(t: &str) -> Value {
    json!({"type": "content", "content": {"type": "text", "text": t}})
}

/// Plays the demo's one turn in session `sid`, step by step, each step showing the recorder
/// something else (see the module's doc). `altered` changes it slightly, for replays.
fn play_turn<R: BufRead, W: Write>(
    peer: &mut Peer<R, W>,
    sid: &str,
    cwd: &str,
    altered: bool,
) -> io::Result<()> {
    think_and_plan(peer, sid)?;
    read_readme(peer, sid, cwd)?;
    search_for_todo(peer, sid, cwd, altered)?;
    let allowed = edit_with_permission(peer, sid, cwd)?;
    // A command that fails (the altered agent skips it).
    if !altered {
        run_failing_tests(peer, sid)?;
    }
    notify_the_team(peer, sid)?;
    peer.update(
        sid,
        json!({"sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": if allowed {
            "Done: I fixed the TODO, but one test still fails."
        } else {
            "I could not edit src/main.rs without your permission."
        }}}),
    )
}

/// A thought, a plan, and agent text in two chunks.
fn think_and_plan<R: BufRead, W: Write>(peer: &mut Peer<R, W>, sid: &str) -> io::Result<()> {
    peer.update(
        sid,
        json!({"sessionUpdate": "agent_thought_chunk",
        "content": {"type": "text", "text": "Start with the README, then find the TODO."}}),
    )?;
    peer.update(
        sid,
        json!({"sessionUpdate": "plan", "entries": [
            {"content": "Read the README", "priority": "high", "status": "in_progress"},
            {"content": "Fix the TODO in src/main.rs", "priority": "high", "status": "pending"},
            {"content": "Run the tests", "priority": "medium", "status": "pending"},
        ]}),
    )?;
    peer.update(
        sid,
        json!({"sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "Let me look at the project "}}),
    )?;
    peer.update(
        sid,
        json!({"sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "first."}}),
    )
}

/// v1: `tool_call` creates, `tool_call_update` sets the fields it carries.
fn read_readme<R: BufRead, W: Write>(
    peer: &mut Peer<R, W>,
    sid: &str,
    cwd: &str,
) -> io::Result<()> {
    let readme = format!("{cwd}/README.md");
    peer.update(
        sid,
        json!({"sessionUpdate": "tool_call", "toolCallId": "demo_read",
        "title": "Read README.md", "kind": "read", "status": "pending",
        "locations": [{"path": readme}], "rawInput": {"path": readme}}),
    )?;
    peer.update(
        sid,
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "demo_read",
        "status": "in_progress"}),
    )?;
    peer.update(
        sid,
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "demo_read",
        "status": "completed", "content": [text("# Demo project\nA tiny crate with one TODO.")],
        "rawOutput": {"bytes": 42}}),
    )
}

/// v2: an upsert for an id never announced, then content chunks appended.
fn search_for_todo<R: BufRead, W: Write>(
    peer: &mut Peer<R, W>,
    sid: &str,
    cwd: &str,
    altered: bool,
) -> io::Result<()> {
    peer.update(
        sid,
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "demo_search",
        "title": if altered { "Search for FIXME" } else { "Search for TODO" }, "kind": "search", "status": "in_progress",
        "rawInput": {"pattern": "TODO", "path": cwd}}),
    )?;
    peer.update(
        sid,
        json!({"sessionUpdate": "tool_call_content_chunk", "toolCallId": "demo_search",
        "content": text("src/main.rs:3: // TODO: greet by name")}),
    )?;
    peer.update(
        sid,
        json!({"sessionUpdate": "tool_call_content_chunk", "toolCallId": "demo_search",
        "content": text("1 match")}),
    )?;
    peer.update(
        sid,
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "demo_search",
        "status": "completed"}),
    )
}

/// An edit with a diff, which needs the user's permission: asks, then completes or fails by
/// the answer. Returns whether the edit was allowed.
fn edit_with_permission<R: BufRead, W: Write>(
    peer: &mut Peer<R, W>,
    sid: &str,
    cwd: &str,
) -> io::Result<bool> {
    let main_rs = format!("{cwd}/src/main.rs");
    peer.update(sid, json!({"sessionUpdate": "tool_call", "toolCallId": "demo_edit",
        "title": "Edit src/main.rs", "kind": "edit", "status": "pending",
        "locations": [{"path": main_rs, "line": 3}],
        "content": [{"type": "diff", "path": main_rs,
            "oldText": "fn main() {\n    // TODO: greet by name\n    eprintln!(\"Hello\");\n}\n",
            "newText": "fn main() {\n    let name = std::env::args().nth(1).unwrap_or(\"world\".into());\n    eprintln!(\"Hello, {name}\");\n}\n"}],
        "rawInput": {"file_path": main_rs}}))?;
    let answer = peer.request(
        "session/request_permission",
        json!({
            "sessionId": sid,
            "toolCall": {"toolCallId": "demo_edit", "title": "Edit src/main.rs", "kind": "edit"},
            "options": [
                {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                {"optionId": "always", "name": "Always allow", "kind": "allow_always"},
                {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
                {"optionId": "never", "name": "Always reject", "kind": "reject_always"},
            ],
        }),
    )?;
    let outcome = answer.as_ref().and_then(|r| r.get("outcome"));
    let allowed = outcome
        .and_then(|o| o.get("optionId"))
        .and_then(Value::as_str)
        .is_some_and(|o| o == "allow" || o == "always");
    if allowed {
        peer.update(
            sid,
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "demo_edit",
            "status": "in_progress"}),
        )?;
        peer.update(
            sid,
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "demo_edit",
            "status": "completed", "rawOutput": "1 file changed"}),
        )?;
    } else {
        peer.update(
            sid,
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "demo_edit",
            "status": "failed", "rawOutput": "rejected by the user"}),
        )?;
    }
    Ok(allowed)
}

/// A command that fails.
fn run_failing_tests<R: BufRead, W: Write>(peer: &mut Peer<R, W>, sid: &str) -> io::Result<()> {
    peer.update(
        sid,
        json!({"sessionUpdate": "tool_call", "toolCallId": "demo_test",
        "title": "cargo test", "kind": "execute", "status": "in_progress",
        "rawInput": {"command": "cargo test"}}),
    )?;
    peer.update(
        sid,
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "demo_test",
        "status": "failed", "content": [text("test greets_by_name ... FAILED")],
        "rawOutput": {"exit_code": 101, "stderr": "1 test failed"}}),
    )
}

/// A custom kind and status, kept verbatim; then a field cleared with null.
fn notify_the_team<R: BufRead, W: Write>(peer: &mut Peer<R, W>, sid: &str) -> io::Result<()> {
    peer.update(
        sid,
        json!({"sessionUpdate": "tool_call", "toolCallId": "demo_notify",
        "title": "Notify the team", "kind": "_notify", "status": "_queued",
        "rawInput": {"channel": "#dev"}, "rawOutput": {"draft": true}}),
    )?;
    peer.update(
        sid,
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "demo_notify",
        "status": "completed", "rawOutput": null}),
    )
}
