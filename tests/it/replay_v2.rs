//! `acptap replay` of ACP v2 recordings, both ways: as the agent toward a live client (no
//! `fs/*` or `terminal/*` request is sent, `session/resume` with `replayFrom`, `$/cancel_request`,
//! `tool_call/cancel`, a v2 turn ending with `idle`), and as the client toward a live v2 agent
//! (divergences read on v2 shapes: messages by `messageId`, permission requests by title and
//! subject). The recording is `tests/fixtures/v2/basic.jsonl`, a v2 turn whose agent still asks
//! the client for a file and a terminal; and, end to end, the official-SDK v2 peers
//! (`examples/v2_client.rs`, `examples/v2_agent.rs`).

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use serde_json::{Value, json};

use crate::util::{SAMPLES, Sandbox, acptap_bin, example_bin, finish, fixture};

const RECORDED_SESSION: &str = "v2-session";

fn v2_fixture() -> std::path::PathBuf {
    fixture("v2/basic.jsonl")
}

/// The fixture's lines, as (direction, message).
fn fixture_lines() -> Vec<(String, Value)> {
    std::fs::read_to_string(v2_fixture())
        .unwrap()
        .lines()
        .map(|l| {
            let record: Value = serde_json::from_str(l).unwrap();
            let text = record["text"].as_str().unwrap();
            (
                record["dir"].as_str().unwrap().to_owned(),
                serde_json::from_str(text).unwrap(),
            )
        })
        .collect()
}

/// A test acting as the live client of `acptap replay last --as agent`: it logs every line the
/// replay sends, and fails rather than hangs when one does not come.
struct LiveClient {
    child: Child,
    to_replay: Option<ChildStdin>,
    from_replay: Receiver<Value>,
    /// Every line the replay sent, in order.
    log: Vec<Value>,
}

impl LiveClient {
    fn start(sb: &Sandbox, extra: &[&str]) -> LiveClient {
        let mut child = Command::new(acptap_bin())
            .args(["replay", "last", "--as", "agent"])
            .args(extra)
            .env("ACPTAP_DB", sb.db())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, from_replay) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let value = serde_json::from_str(&line).unwrap_or_else(|e| {
                    panic!("the replay sent a line that is not JSON ({e}): {line}")
                });
                if tx.send(value).is_err() {
                    return;
                }
            }
        });
        LiveClient {
            to_replay: child.stdin.take(),
            child,
            from_replay,
            log: Vec::new(),
        }
    }

    fn send(&mut self, message: Value) {
        self.send_text(&format!("{message}\n"));
    }

    fn send_text(&mut self, text: &str) {
        let to = self.to_replay.as_mut().expect("stdin open");
        to.write_all(text.as_bytes()).unwrap();
        to.flush().unwrap();
    }

    fn read(&mut self) -> Value {
        let line = self
            .from_replay
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("no line from the replay; it sent so far: {:#?}", self.log));
        self.log.push(line.clone());
        line
    }

    /// The lines up to and including the first for which `last` holds.
    fn read_until(&mut self, last: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut lines = Vec::new();
        loop {
            let line = self.read();
            let done = last(&line);
            lines.push(line);
            if done {
                return lines;
            }
        }
    }

    /// `initialize` (v2, no capability) and `session/new` in `cwd`; returns the session id.
    fn open(&mut self, cwd: &std::path::Path) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                         "params": {"protocolVersion": 2, "clientCapabilities": {}}}));
        assert_eq!(self.read()["result"]["protocolVersion"], 2);
        self.send(
            json!({"jsonrpc": "2.0", "id": "new", "method": "session/new",
                         "params": {"cwd": cwd, "mcpServers": []}}),
        );
        self.read()["result"]["sessionId"].clone()
    }

    fn prompt(&mut self, id: &str, session: &Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
                         "params": {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}}));
    }

    /// Closes the replay's stdin and waits for it to end.
    fn finish(mut self) -> (Output, Vec<Value>) {
        drop(self.to_replay.take());
        let output = finish(self.child, Duration::from_secs(20));
        while let Ok(line) = self.from_replay.recv_timeout(Duration::from_millis(200)) {
            self.log.push(line);
        }
        (output, self.log)
    }
}

fn is_idle(line: &Value) -> bool {
    line["params"]["update"]["sessionUpdate"] == "state_update"
        && line["params"]["update"]["state"] == "idle"
}

fn is_permission_request(line: &Value) -> bool {
    line["method"] == "session/request_permission"
}

fn allow(id: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}})
}

fn stderr_text(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A v2 recording whose agent asked the client for a file and a terminal, replayed to a client
/// that logs every line: neither request reaches it (the gate holds them, once said why), the
/// turn plays to its `idle`, paths are moved to the live cwd, and the replay exits 0 with no
/// divergence (the client never answered what it was never asked).
#[test]
fn a_v2_recording_replayed_as_agent_asks_the_client_for_no_file_or_terminal() {
    let sb = Sandbox::new();
    sb.acptap(&["import", v2_fixture().to_str().unwrap()]);
    let live = sb.path("live");
    let mut client = LiveClient::start(&sb, &[]);
    let session = client.open(&live);
    assert_eq!(session, RECORDED_SESSION);
    client.prompt("p-1", &session);
    let before_permission = client.read_until(is_permission_request);
    let permission = before_permission.last().unwrap().clone();
    assert_eq!(
        permission["params"]["subject"]["cwd"],
        live.to_str().unwrap(),
        "the subject's cwd moved: {permission}"
    );
    client.send(allow(&permission["id"]));
    let rest = client.read_until(is_idle);
    assert_eq!(
        rest.last().unwrap()["params"]["update"]["stopReason"],
        "end_turn"
    );
    let (output, log) = client.finish();
    let stderr = stderr_text(&output);
    assert!(output.status.success(), "{stderr}");
    for line in &log {
        let method = line["method"].as_str().unwrap_or_default();
        assert!(
            !method.starts_with("fs/") && !method.starts_with("terminal/"),
            "sent to the client: {line}"
        );
    }
    let prompt_answer = log.iter().find(|l| l["id"] == "p-1").unwrap();
    assert_eq!(prompt_answer["result"]["messageId"], "t1-user");
    let location = log
        .iter()
        .find_map(|l| l["params"]["update"]["locations"][0]["path"].as_str())
        .unwrap();
    assert_eq!(location, format!("{}/notes.txt", live.display()));
    // Said once, counted in the summary; no divergence.
    assert_eq!(
        stderr.matches("nor any other for this reason").count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("ACP v2 (draft)"), "{stderr}");
    assert!(
        stderr.contains("2 recorded request(s) not sent"),
        "{stderr}"
    );
    assert!(stderr.contains("no divergence"), "{stderr}");
}

/// The fixture, then the recorded client resuming its session after the turn: the recorded
/// agent replays two updates of its history and answers with a `_meta` of its own.
fn import_with_recorded_resume(sb: &Sandbox) {
    let mut lines: Vec<(String, String)> = fixture_lines()
        .into_iter()
        .map(|(dir, message)| (dir, message.to_string()))
        .collect();
    let update = |update: Value| {
        json!({"jsonrpc": "2.0", "method": "session/update",
               "params": {"sessionId": RECORDED_SESSION, "update": update}})
        .to_string()
    };
    lines.extend([
        ("c2a".to_owned(), json!({"jsonrpc": "2.0", "id": 3, "method": "session/resume", "params": {"sessionId": RECORDED_SESSION, "cwd": "/rec/project", "replayFrom": {"type": "start"}}}).to_string()),
        ("a2c".to_owned(), update(json!({"sessionUpdate": "agent_message", "messageId": "t1-m1", "content": [{"type": "text", "text": "I read the notes."}]}))),
        ("a2c".to_owned(), update(json!({"sessionUpdate": "state_update", "state": "idle"}))),
        ("a2c".to_owned(), json!({"jsonrpc": "2.0", "id": 3, "result": {"_meta": {"recordedResume": true}}}).to_string()),
    ]);
    let pairs: Vec<(&str, &String)> = lines.iter().map(|(d, l)| (d.as_str(), l)).collect();
    crate::util::import_lines(sb, &pairs);
}

/// A live client that resumes the recorded session instead of creating one (v2 has no
/// `session/load`): an unsupported `replayFrom` is refused (-32602); with `{"type": "start"}`
/// it gets the session's recorded conversation (no recorded state, and not the history the
/// recorded agent replayed itself), the current state (`idle`), then the recorded answer to a
/// resume; the resume stands for the recorded `session/new`, so the turn plays next. Resumed
/// again after the turn, as recorded, it gets the recorded resume.
#[test]
fn a_live_resume_from_the_start_gets_the_recorded_history_then_the_answer() {
    let sb = Sandbox::new();
    import_with_recorded_resume(&sb);
    let live = sb.path("live");
    let mut client = LiveClient::start(&sb, &[]);
    client.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 2}}));
    client.read();
    let resume = |id: &str, from: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "session/resume",
               "params": {"sessionId": RECORDED_SESSION, "cwd": live, "replayFrom": from}})
    };
    client.send(resume("r-0", json!({"type": "_somewhere"})));
    let refused = client.read();
    assert_eq!(refused["id"], "r-0");
    assert_eq!(refused["error"]["code"], -32602, "{refused}");

    client.send(resume("r-1", json!({"type": "start"})));
    let served = client.read_until(|l| l["id"] == "r-1");
    let (answer, history) = served.split_last().unwrap();
    assert_eq!(
        answer["result"],
        json!({"_meta": {"recordedResume": true}}),
        "{answer}"
    );
    let (current_state, history) = history.split_last().unwrap();
    assert!(is_idle(current_state), "{current_state}");
    let recorded: Vec<Value> = fixture_lines()
        .into_iter()
        .filter(|(dir, m)| {
            dir == "a2c"
                && m["method"] == "session/update"
                && m["params"]["update"]["sessionUpdate"] != "state_update"
        })
        .map(|(_, m)| m)
        .collect();
    assert_eq!(history.len(), recorded.len(), "{history:#?}");
    for (sent, recorded) in history.iter().zip(&recorded) {
        assert_eq!(sent["params"]["sessionId"], RECORDED_SESSION);
        assert_eq!(
            sent["params"]["update"]["sessionUpdate"],
            recorded["params"]["update"]["sessionUpdate"]
        );
    }
    assert!(
        history
            .iter()
            .any(|l| l["params"]["update"]["locations"][0]["path"]
                == format!("{}/notes.txt", live.display())),
        "paths moved to the live cwd: {history:#?}"
    );

    // The turn plays next, as after the recorded session/new.
    client.prompt("p-1", &json!(RECORDED_SESSION));
    let permission = client.read_until(is_permission_request).pop().unwrap();
    client.send(allow(&permission["id"]));
    client.read_until(is_idle);
    // And the recorded resume, resumed live at its point: the recorded agent's own history.
    client.send(resume("r-2", json!({"type": "start"})));
    let again = client.read_until(|l| l["id"] == "r-2");
    assert_eq!(again.len(), 3, "{again:#?}");
    let (output, _) = client.finish();
    let stderr = stderr_text(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("no divergence"), "{stderr}");
    assert!(
        stderr.contains("resumed the recorded session `v2-session`"),
        "{stderr}"
    );
}

/// `$/cancel_request` for the live client's pending prompt: under v2, a prompt withdrawn before
/// it was inserted is answered with -32800 and its turn is not played; under v1 the turn ends as
/// with `session/cancel` (`stopReason: "cancelled"`).
#[test]
fn a_cancel_request_for_the_pending_prompt_cancels_its_turn() {
    let sb = Sandbox::new();
    sb.acptap(&["import", v2_fixture().to_str().unwrap()]);
    // At the recorded pace: the recording took half a second to admit the prompt.
    let mut client = LiveClient::start(&sb, &["--speed", "1"]);
    let session = client.open(&sb.path("live"));
    let prompt = json!({"jsonrpc": "2.0", "id": "p-1", "method": "session/prompt",
                        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}});
    let cancel =
        json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": "p-1"}});
    client.send_text(&format!("{prompt}\n{cancel}\n"));
    let answer = client.read();
    assert_eq!(answer["id"], "p-1", "{answer}");
    assert_eq!(answer["error"]["code"], -32800, "{answer}");
    let (output, log) = client.finish();
    let stderr = stderr_text(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("the client cancelled turn 1"), "{stderr}");
    assert_eq!(log.len(), 3, "nothing of the turn was sent: {log:#?}");

    // v1: the recorded claude session, its prompt cancelled by request id.
    let sb = Sandbox::new();
    sb.acptap(&["import", fixture(SAMPLES[0]).to_str().unwrap()]);
    let mut client = LiveClient::start(&sb, &[]);
    client.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}));
    client.read();
    client.send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": sb.path("live"), "mcpServers": []}}));
    let session = client.read()["result"]["sessionId"].clone();
    client.prompt("p-7", &session);
    assert_eq!(client.read()["method"], "session/update");
    client.send(
        json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": "p-7"}}),
    );
    let lines = client.read_until(|l| l["id"] == "p-7");
    assert_eq!(
        lines.last().unwrap()["result"]["stopReason"],
        "cancelled",
        "{lines:#?}"
    );
    let (output, _) = client.finish();
    let stderr = stderr_text(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("the client cancelled turn 1"), "{stderr}");
}

/// A live `session/cancel` in a v2 turn (after its prompt was answered): the rest of the turn is
/// not sent, and it ends with an `idle` update of stop reason `cancelled`. A `$/cancel_request`
/// for the replay's own pending permission request ends the wait for its answer.
#[test]
fn a_live_session_cancel_ends_a_v2_turn_with_idle_cancelled() {
    let sb = Sandbox::new();
    sb.acptap(&["import", v2_fixture().to_str().unwrap()]);
    let mut client = LiveClient::start(&sb, &[]);
    let session = client.open(&sb.path("live"));
    client.prompt("p-1", &session);
    client.read_until(is_permission_request);
    client.send(
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}),
    );
    let end = client.read_until(is_idle);
    assert_eq!(end.len(), 1, "nothing more of the turn: {end:#?}");
    assert_eq!(end[0]["params"]["update"]["stopReason"], "cancelled");
    assert_eq!(end[0]["params"]["sessionId"], session);
    let (output, log) = client.finish();
    let stderr = stderr_text(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(
        !log.iter()
            .any(|l| l["params"]["update"]["messageId"] == "t1-m2")
    );

    // The replay's permission request withdrawn by the client: the turn goes on.
    let mut client = LiveClient::start(&sb, &[]);
    let session = client.open(&sb.path("live"));
    client.prompt("p-1", &session);
    let permission = client.read_until(is_permission_request).pop().unwrap();
    client.send(json!({"jsonrpc": "2.0", "method": "$/cancel_request",
                       "params": {"requestId": permission["id"]}}));
    let rest = client.read_until(is_idle);
    assert_eq!(
        rest.last().unwrap()["params"]["update"]["stopReason"],
        "end_turn"
    );
    let (output, _) = client.finish();
    let stderr = stderr_text(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("its answer is not waited for"), "{stderr}");
}

/// A live `tool_call/cancel` (v2): answered `{}` for a running call, which gets one final
/// update (`cancelled`: the recording has no cancel of it) and none of its recorded ones after;
/// a call already final is answered -32602, as v2 has an agent answer.
#[test]
fn a_live_tool_call_cancel_is_answered_and_ends_the_call() {
    let sb = Sandbox::new();
    sb.acptap(&["import", v2_fixture().to_str().unwrap()]);
    let mut client = LiveClient::start(&sb, &[]);
    let session = client.open(&sb.path("live"));
    client.prompt("p-1", &session);
    // The replay waits for the permission answer: `t1-test` is pending, `t1-read` completed.
    let permission = client.read_until(is_permission_request).pop().unwrap();
    let cancel = |id: u64, call: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tool_call/cancel",
               "params": {"sessionId": session, "toolCallId": call}})
    };
    client.send(cancel(50, "t1-test"));
    let answer = client.read();
    assert_eq!(
        (answer["id"].clone(), answer["result"].clone()),
        (json!(50), json!({})),
        "{answer}"
    );
    let update = client.read();
    assert_eq!(
        update["params"]["update"],
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1-test", "status": "cancelled"})
    );
    client.send(cancel(51, "t1-read"));
    let refused = client.read();
    assert_eq!(refused["id"], 51);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    client.send(allow(&permission["id"]));
    let rest = client.read_until(is_idle);
    assert!(
        !rest
            .iter()
            .any(|l| l["params"]["update"]["toolCallId"] == "t1-test"),
        "{rest:#?}"
    );
    let (output, _) = client.finish();
    let stderr = stderr_text(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("no divergence"), "{stderr}");
}

/// A scripted v2 agent that plays the fixture's turn (without asking for a file or a terminal:
/// v2 agents own those): `ALTERED=1` makes its final upsert of message `t1-m1` say something
/// else, though its chunks stay the same.
const SCRIPTED_V2_AGENT: &str = r#"
import json, os, sys
altered = os.environ.get("ALTERED") == "1"
def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()
def update(s, u):
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": s, "update": u}})
def text(t):
    return {"type": "text", "text": t}
cwds = {}
lines = iter(sys.stdin)
for line in lines:
    m = json.loads(line)
    method, rid = m.get("method"), m.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 2, "agentInfo": {"name": "scripted-v2", "version": "1"}}})
    elif method == "session/new":
        cwds["live-v2"] = m["params"]["cwd"]
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "live-v2"}})
    elif method == "session/prompt":
        s = m["params"]["sessionId"]
        cwd = cwds[s]
        update(s, {"sessionUpdate": "user_message", "messageId": "t1-user", "content": m["params"]["prompt"]})
        send({"jsonrpc": "2.0", "id": rid, "result": {"messageId": "t1-user"}})
        update(s, {"sessionUpdate": "state_update", "state": "running"})
        update(s, {"sessionUpdate": "agent_message_chunk", "messageId": "t1-m1", "content": text("Reading ")})
        update(s, {"sessionUpdate": "agent_message_chunk", "messageId": "t1-m1", "content": text("the notes.")})
        update(s, {"sessionUpdate": "tool_call_update", "toolCallId": "t1-read", "title": "Read notes.txt", "kind": "read", "status": "in_progress", "locations": [{"path": cwd + "/notes.txt"}]})
        update(s, {"sessionUpdate": "tool_call_update", "toolCallId": "t1-read", "status": "completed"})
        update(s, {"sessionUpdate": "tool_call_update", "toolCallId": "t1-test", "title": "cargo test", "kind": "execute", "status": "pending"})
        send({"jsonrpc": "2.0", "id": 0, "method": "session/request_permission", "params": {"sessionId": s, "title": "Run cargo test", "subject": {"type": "command", "command": "cargo test", "cwd": cwd, "toolCallId": "t1-test"}, "options": [{"optionId": "yes", "name": "Allow", "kind": "allow_once"}, {"optionId": "no", "name": "Reject", "kind": "reject_once"}]}})
        answer = json.loads(next(lines))
        allowed = answer.get("result", {}).get("outcome", {}).get("optionId") == "yes"
        update(s, {"sessionUpdate": "tool_call_update", "toolCallId": "t1-test", "status": "in_progress"})
        update(s, {"sessionUpdate": "tool_call_content_chunk", "toolCallId": "t1-test", "content": {"type": "content", "content": text("test result: ok. 3 passed")}})
        update(s, {"sessionUpdate": "tool_call_update", "toolCallId": "t1-test", "status": "completed" if allowed else "failed"})
        update(s, {"sessionUpdate": "agent_message", "messageId": "t1-m2", "content": [text("All 3 tests pass.")]})
        update(s, {"sessionUpdate": "agent_message", "messageId": "t1-m1", "content": [text("I skimmed the notes." if altered else "I read the notes.")]})
        update(s, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})
    elif rid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})
"#;

/// `acptap replay last --as client --cwd DIR --compare text -- python3 -c AGENT`.
fn replay_against_scripted_agent(sb: &Sandbox, altered: bool) -> Output {
    let project = sb.path("project");
    std::fs::create_dir_all(&project).unwrap();
    let child = Command::new(acptap_bin())
        .args([
            "replay",
            "last",
            "--as",
            "client",
            "--grace",
            "2s",
            "--compare",
            "text",
            "--cwd",
        ])
        .arg(&project)
        .args(["--", "python3", "-c", SCRIPTED_V2_AGENT])
        .env("ACPTAP_DB", sb.db())
        .env("ALTERED", if altered { "1" } else { "0" })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    finish(child, Duration::from_secs(60))
}

/// Replayed as the client against a v2 agent that does the recorded work in another cwd: the v2
/// handshake goes as recorded, the turn is waited for to its `idle`, the permission request is
/// answered from the recording by its title and subject, and nothing diverges (the recorded
/// agent's file and terminal requests were the recording's, not the client's to compare). An
/// agent whose final upsert of a message says something else diverges in that turn's text,
/// though every chunk it sent was the recorded one.
#[test]
fn replay_as_client_compares_v2_messages_by_their_final_text() {
    let sb = Sandbox::new();
    sb.acptap(&["import", v2_fixture().to_str().unwrap()]);
    let same = replay_against_scripted_agent(&sb, false);
    let report = String::from_utf8_lossy(&same.stdout);
    assert_eq!(
        same.status.code(),
        Some(0),
        "{report}\n{}",
        stderr_text(&same)
    );
    assert!(report.contains("no divergence"), "{report}");
    assert_eq!(
        sb.count(
            "SELECT count(*) FROM permission_requests WHERE connection_id = 2 AND option_kind = 'allow_once'"
        ),
        1
    );

    let altered = replay_against_scripted_agent(&sb, true);
    let report = String::from_utf8_lossy(&altered.stdout);
    assert_eq!(
        altered.status.code(),
        Some(1),
        "{report}\n{}",
        stderr_text(&altered)
    );
    assert!(
        report.contains(r#"turn 1: agent text "I read the notes.All 3 tests pass." -> "I skimmed the notes.All 3 tests pass.""#),
        "{report}"
    );
    assert!(report.contains("1 divergence"), "{report}");
}

/// Runs `v2_client ARGS -- AGENT...` in `cwd`; returns its summary and stderr (the agent's
/// stderr passes through it).
fn run_v2_client(
    cwd: &std::path::Path,
    args: &[&str],
    agent: &[&OsStr],
    db: &std::path::Path,
) -> (Value, String) {
    std::fs::create_dir_all(cwd).unwrap();
    let summary = cwd.join("summary.json");
    let child = Command::new(example_bin("v2_client"))
        .arg("--out")
        .arg(&summary)
        .args(args)
        .arg("--")
        .args(agent)
        .current_dir(cwd)
        .env("ACPTAP_DB", db)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let output = finish(child, Duration::from_secs(60));
    let stderr = stderr_text(&output);
    assert!(output.status.success(), "v2_client failed: {stderr}");
    (
        serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap(),
        stderr,
    )
}

/// End to end with the official-SDK v2 peers: `v2_client --resume --cancel-tool-call
/// --cancel-request` records, through `acptap run`, a turn of `v2_agent`, a resume of its
/// session, the cancel of a tool call left running, and a prompt withdrawn at once; replayed as
/// the agent to the same client (in another directory), and as the client against the same
/// agent, both exit 0 with no divergence.
#[test]
fn the_sdk_v2_peers_replay_both_ways_without_divergence() {
    let sb = Sandbox::new();
    let acptap = acptap_bin();
    let agent = example_bin("v2_agent");
    let db = sb.db();
    let modes = ["--resume", "--cancel-tool-call", "--cancel-request"];
    let (recorded, _) = run_v2_client(
        &sb.path("project"),
        &modes,
        &[
            acptap.as_os_str(),
            OsStr::new("run"),
            OsStr::new("--db"),
            db.as_os_str(),
            OsStr::new("--"),
            agent.as_os_str(),
        ],
        &db,
    );
    assert_eq!(recorded["agentExitCode"], 0, "{recorded}");

    let elsewhere = sb.path("elsewhere");
    let (replayed, stderr) = run_v2_client(
        &elsewhere,
        &modes,
        &[
            acptap.as_os_str(),
            OsStr::new("replay"),
            OsStr::new("last"),
            OsStr::new("--as"),
            OsStr::new("agent"),
        ],
        &db,
    );
    assert_eq!(replayed["agentExitCode"], 0, "{replayed}\n{stderr}");
    assert!(stderr.contains("no divergence"), "{stderr}");
    for key in [
        "stopReason",
        "agentMessages",
        "updateKinds",
        "replayedAgentMessages",
        "toolCallCancel",
        "cancelRequest",
    ] {
        assert_eq!(replayed[key], recorded[key], "{key}: {stderr}");
    }
    assert_eq!(replayed["toolCallCancel"]["answer"], "ok", "{replayed}");
    // Every path the recorded agent named under its cwd is named under the live one.
    for call in replayed["toolCalls"].as_object().unwrap().values() {
        for location in call["locations"].as_array().unwrap() {
            let location = location.as_str().unwrap();
            assert!(
                location.starts_with(elsewhere.to_str().unwrap()),
                "{location}"
            );
        }
    }

    let project = sb.path("project");
    let child = Command::new(&acptap)
        .args([
            "replay",
            "last",
            "--as",
            "client",
            "--grace",
            "2s",
            "--compare",
            "text",
            "--cwd",
        ])
        .arg(&project)
        .arg("--")
        .arg(&agent)
        .env("ACPTAP_DB", &db)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let output = finish(child, Duration::from_secs(60));
    let report = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{report}\n{}",
        stderr_text(&output)
    );
    assert!(report.contains("no divergence"), "{report}");
}
