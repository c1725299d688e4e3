//! `acptap replay`: as the agent toward a scripted client and the official SDK client, and as
//! the client toward live agents, with the divergence report as a CI gate.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use acptap::replay::script::with_id;

use crate::util::{SAMPLES, Sandbox, acptap_bin, example_bin, finish, fixture, load_transcript};

/// The live client's id for a recorded one: numbers move up by 1000, strings get a prefix, so
/// a replay that forgot to map ids cannot pass.
fn live_id(recorded: &serde_json::Value) -> serde_json::Value {
    match recorded {
        serde_json::Value::Number(n) => serde_json::json!(n.as_i64().unwrap() + 1000),
        serde_json::Value::String(s) => serde_json::json!(format!("live-{s}")),
        other => other.clone(),
    }
}

fn replay_as_agent(sb: &Sandbox, extra: &[&str]) -> std::process::Child {
    Command::new(acptap_bin())
        .args(["replay", "last", "--as", "agent"])
        .args(extra)
        .env("ACPTAP_DB", sb.db())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn every_sample_replays_as_the_agent_byte_for_byte_once_ids_are_mapped() {
    for sample in SAMPLES {
        let sb = Sandbox::new();
        sb.acptap(&["import", fixture(sample).to_str().unwrap()]);
        let mut child = replay_as_agent(&sb, &[]);
        let mut to_agent = child.stdin.take().unwrap();
        let mut from_agent = BufReader::new(child.stdout.take().unwrap());
        // The client's requests, by recorded id, so the agent's responses can be mapped.
        let mut client_requests = std::collections::HashSet::new();
        for (n, record) in load_transcript(&fixture(sample)).iter().enumerate() {
            let message: serde_json::Value = serde_json::from_slice(&record.bytes).unwrap();
            match record.dir.as_str() {
                "c2a" if message.get("method").is_some() && message.get("id").is_some() => {
                    client_requests.insert(message["id"].to_string());
                    let line =
                        with_id(&record.bytes, &live_id(&message["id"]).to_string()).unwrap();
                    to_agent.write_all(&line).unwrap();
                }
                "c2a" => to_agent.write_all(&record.bytes).unwrap(),
                _ => {
                    let expected = match message.get("id") {
                        Some(id)
                            if message.get("method").is_none()
                                && client_requests.contains(&id.to_string()) =>
                        {
                            with_id(&record.bytes, &live_id(id).to_string()).unwrap()
                        }
                        _ => record.bytes.clone(),
                    };
                    let mut got = Vec::new();
                    from_agent.read_until(b'\n', &mut got).unwrap();
                    assert!(
                        got == expected,
                        "{sample} record {n}: got\n{}\nexpected\n{}",
                        String::from_utf8_lossy(&got),
                        String::from_utf8_lossy(&expected)
                    );
                }
            }
        }
        drop(to_agent);
        let mut rest = Vec::new();
        from_agent.read_to_end(&mut rest).unwrap();
        assert!(
            rest.is_empty(),
            "{sample}: extra output {}",
            String::from_utf8_lossy(&rest)
        );
        let output = finish(child, Duration::from_secs(30));
        assert!(
            output.status.success(),
            "{sample}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

#[test]
fn an_unexpected_client_request_gets_an_error_that_says_why_and_strict_ends_the_replay() {
    let sb = Sandbox::new();
    sb.acptap(&["import", fixture(SAMPLES[0]).to_str().unwrap()]);
    let mut child = replay_as_agent(&sb, &[]);
    let mut to_agent = child.stdin.take().unwrap();
    let mut from_agent = BufReader::new(child.stdout.take().unwrap());
    to_agent
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"session/list\",\"params\":{}}\n")
        .unwrap();
    let mut line = String::new();
    from_agent.read_line(&mut line).unwrap();
    let error: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(error["id"], 9);
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("session/list")
            && message.contains("turn 0")
            && message.contains("`initialize` request"),
        "{message}"
    );
    drop(to_agent);
    let output = finish(child, Duration::from_secs(30));
    assert!(String::from_utf8_lossy(&output.stderr).contains("session/list"));

    let mut strict = replay_as_agent(&sb, &["--strict"]);
    strict
        .stdin
        .take()
        .unwrap()
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"session/list\",\"params\":{}}\n")
        .unwrap();
    let output = finish(strict, Duration::from_secs(30));
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--strict"));
}

#[test]
fn the_sdk_client_completes_a_turn_against_a_replayed_agent() {
    let sb = Sandbox::new();
    let summary_live = sb.path("live.json");
    let summary_replay = sb.path("replay.json");
    let run = |out: &std::path::Path, agent: &[&OsStr]| {
        let child = Command::new(example_bin("sdk_client"))
            .arg("--out")
            .arg(out)
            .arg("--")
            .args(agent)
            .env("ACPTAP_DB", sb.db())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let output = finish(child, Duration::from_secs(60));
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let summary: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out).unwrap()).unwrap();
        summary
    };
    let acptap = acptap_bin();
    let agent = example_bin("sdk_agent");
    let live = run(
        &summary_live,
        &[
            acptap.as_os_str(),
            OsStr::new("run"),
            OsStr::new("--"),
            agent.as_os_str(),
        ],
    );
    let replayed = run(
        &summary_replay,
        &[
            acptap.as_os_str(),
            OsStr::new("replay"),
            OsStr::new("last"),
            OsStr::new("--as"),
            OsStr::new("agent"),
        ],
    );
    // The SDK client numbers its requests with fresh UUIDs: the replay had to map every id.
    assert_eq!(replayed["stopReason"], "end_turn");
    assert_eq!(replayed["toolCalls"], live["toolCalls"]);
    assert_eq!(replayed["agentMessages"], live["agentMessages"]);
    assert_eq!(
        replayed["permissionRequests"],
        serde_json::json!([{"toolCallId": "call_2", "chosenOptionId": "allow"}])
    );
}

fn replay_as_client(sb: &Sandbox, session: &str, agent: &[&OsStr]) -> std::process::Output {
    let child = Command::new(acptap_bin())
        .args(["replay", session, "--as", "client", "--"])
        .args(agent)
        .env("ACPTAP_DB", sb.db())
        .current_dir(sb.dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    finish(child, Duration::from_secs(60))
}

/// `acptap replay last --as client ARGS -- python3 AGENT` with `env` for the agent, given
/// `limit` to end; returns the replay's output and the JSON lines the agent logged to `log`
/// (removed first).
fn replay_to_logging_agent(
    sb: &Sandbox,
    args: &[&OsStr],
    agent: impl AsRef<OsStr>,
    env: &[(&str, &OsStr)],
    log: &std::path::Path,
    limit: Duration,
) -> (std::process::Output, Vec<serde_json::Value>) {
    let _ = std::fs::remove_file(log);
    let child = Command::new(acptap_bin())
        .args(["replay", "last", "--as", "client", "--grace", "2s"])
        .args(args)
        .arg("--")
        .arg("python3")
        .arg(agent)
        .env("ACPTAP_DB", sb.db())
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let output = finish(child, limit);
    let logged = std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (output, logged)
}

#[test]
fn replay_as_client_against_the_demo_agent_is_a_ci_gate() {
    let sb = Sandbox::new();
    let session = record_demo(&sb);
    let acptap = acptap_bin();

    let same = replay_as_client(
        &sb,
        &session,
        &[acptap.as_os_str(), OsStr::new("demo-agent")],
    );
    let report = String::from_utf8_lossy(&same.stdout);
    assert_eq!(
        same.status.code(),
        Some(0),
        "{report}\n{}",
        String::from_utf8_lossy(&same.stderr)
    );
    assert!(report.contains("no divergence"), "{report}");
    // The live run is recorded as a connection of its own, linked to the original; the failed
    // tool call and the permission the recording answered replayed faithfully.
    assert_eq!(
        sb.count("SELECT count(*) FROM connections WHERE replay_of = 1"),
        1
    );
    assert_eq!(
        sb.count("SELECT count(*) FROM tool_calls WHERE connection_id = 2 AND status = 'failed'"),
        1
    );
    assert_eq!(sb.count("SELECT count(*) FROM permission_requests WHERE connection_id = 2 AND option_kind = 'allow_once'"), 1);

    let altered = replay_as_client(
        &sb,
        &session,
        &[
            acptap.as_os_str(),
            OsStr::new("demo-agent"),
            OsStr::new("--altered"),
        ],
    );
    let report = String::from_utf8_lossy(&altered.stdout);
    assert_eq!(altered.status.code(), Some(1), "{report}");
    for expected in [
        "turn 1: stop reason end_turn -> max_tokens",
        "turn 1: tool call search \"Search for TODO\": title -> \"Search for FIXME\"",
        "turn 1: missing tool call: execute \"cargo test\"",
        "3 divergences",
    ] {
        assert!(
            report.contains(expected),
            "missing `{expected}` in\n{report}"
        );
    }

    let broken = replay_as_client(&sb, &session, &[OsStr::new("/nonexistent/agent")]);
    assert_eq!(
        broken.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&broken.stdout)
    );
}

#[test]
fn every_sample_replays_as_the_client_faithfully_including_the_cancelled_turn() {
    for sample in SAMPLES {
        let sb = Sandbox::new();
        sb.acptap(&["import", fixture(sample).to_str().unwrap()]);
        let peer = example_bin("peer");
        let path = fixture(sample);
        // The peer plays the recorded agent and fails on any byte the replayed client gets wrong,
        // the session/cancel included.
        let output = replay_as_client(
            &sb,
            "last",
            &[peer.as_os_str(), OsStr::new("script"), path.as_os_str()],
        );
        let report = String::from_utf8_lossy(&output.stdout);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{sample}: {report}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(
            sb.count("SELECT exit_code FROM connections WHERE id = 2"),
            0,
            "{sample}: the peer saw a difference"
        );
    }
}

/// A client that never cancels still gets the whole recorded turn that was cancelled: the replay
/// does not wait for a `session/cancel` (it used to wait forever, printing nothing).
#[test]
fn a_recorded_cancel_is_not_waited_for() {
    let sample = "claude-acpx-slow-approve-all.jsonl";
    let sb = Sandbox::new();
    sb.acptap(&["import", fixture(sample).to_str().unwrap()]);
    let records = load_transcript(&fixture(sample));
    assert!(
        records
            .iter()
            .any(|r| String::from_utf8_lossy(&r.bytes).contains("session/cancel")),
        "the sample has a cancelled turn"
    );
    let mut child = replay_as_agent(&sb, &[]);
    let mut to_agent = child.stdin.take().unwrap();
    // Every client line but the cancel, written up front; the ids stay as recorded.
    for record in records.iter().filter(|r| r.dir == "c2a") {
        if !String::from_utf8_lossy(&record.bytes).contains("session/cancel") {
            to_agent.write_all(&record.bytes).unwrap();
        }
    }
    drop(to_agent);
    let expected = records.iter().filter(|r| r.dir == "a2c").count();
    let output = finish(child, Duration::from_secs(30));
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines = output.stdout.iter().filter(|b| **b == b'\n').count();
    assert_eq!(
        lines,
        expected,
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("\"cancelled\""));
}

/// Records `acptap demo` into the sandbox's database; returns its session id.
/// A replay whose live agent dies (at once, or after its session is made) is a replay from its
/// first row: `last` still names the original, and the next `replay last` compares against it
/// (the broken run's connection had no `replay_of`, and became `last`).
#[test]
fn a_replay_whose_agent_dies_is_still_a_replay_and_never_last() {
    let sb = Sandbox::new();
    let session = record_demo(&sb);
    let dies_after_its_session = r#"
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("method") == "initialize":
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": 1}}), flush=True)
    elif m.get("method") == "session/new":
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {"sessionId": "broken"}}), flush=True)
    else:
        sys.exit(3)
"#;
    let agents: [&[&OsStr]; 2] = [
        &[OsStr::new("false")],
        &[
            OsStr::new("python3"),
            OsStr::new("-c"),
            OsStr::new(dies_after_its_session),
        ],
    ];
    for agent in agents {
        let broken = replay_as_client(&sb, "last", agent);
        assert_eq!(
            broken.status.code(),
            Some(2),
            "{}",
            String::from_utf8_lossy(&broken.stderr)
        );
    }
    assert_eq!(
        sb.count("SELECT count(*) FROM connections WHERE id > 1 AND replay_of IS NOT 1"),
        0
    );
    assert_eq!(
        sb.count("SELECT count(*) FROM sessions WHERE session_id = 'broken'"),
        1
    );
    let acptap = acptap_bin();
    let again = replay_as_client(&sb, "last", &[acptap.as_os_str(), OsStr::new("demo-agent")]);
    let report = String::from_utf8_lossy(&again.stdout);
    assert_eq!(
        again.status.code(),
        Some(0),
        "{report}\n{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert!(
        report.contains(&format!("recorded: session {session} (connection 1)")),
        "{report}"
    );
}

fn record_demo(sb: &Sandbox) -> String {
    let demo = Command::new(acptap_bin())
        .args(["demo", "--db"])
        .arg(sb.db())
        .current_dir(sb.dir.path())
        .output()
        .unwrap();
    assert!(demo.status.success());
    sb.conn()
        .query_row("SELECT session_id FROM sessions", [], |r| r.get(0))
        .unwrap()
}

/// Replay as the client in another directory (`--cwd`, the CI recipe): the same agent doing the
/// same work there is no divergence, since the comparison writes each session's cwd `<cwd>`; a
/// real change still is.
#[test]
fn replay_as_client_in_another_cwd_is_not_a_divergence() {
    let sb = Sandbox::new();
    let session = record_demo(&sb);
    let elsewhere = sb.path("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let acptap = acptap_bin();
    let run = |altered: bool| {
        let mut command = Command::new(acptap_bin());
        command
            .args(["replay", &session, "--as", "client", "--cwd"])
            .arg(&elsewhere)
            .arg("--")
            .arg(&acptap)
            .arg("demo-agent");
        if altered {
            command.arg("--altered");
        }
        let child = command
            .env("ACPTAP_DB", sb.db())
            .current_dir(sb.dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        finish(child, Duration::from_secs(60))
    };
    let same = run(false);
    let report = String::from_utf8_lossy(&same.stdout);
    assert_eq!(same.status.code(), Some(0), "{report}");
    assert!(report.contains("no divergence"), "{report}");
    // The live run really worked in the other directory.
    assert!(
        sb.count(&format!(
            "SELECT count(*) FROM sessions WHERE cwd = '{}'",
            elsewhere.display()
        )) >= 1
    );
    let altered = run(true);
    assert_eq!(
        altered.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&altered.stdout)
    );
}

/// Runs the official SDK's example client (`examples/sdk_client.rs`) in `cwd` against
/// `acptap replay last --as agent`; returns acptap's exit code and stderr, and the client's
/// summary.
fn sdk_client_against_replay(
    sb: &Sandbox,
    cwd: &std::path::Path,
    extra: &[&str],
) -> (Option<i32>, String, serde_json::Value) {
    std::fs::create_dir_all(cwd).unwrap();
    let summary = sb.path("summary.json");
    let stderr = sb.path("replay-stderr.txt");
    // acptap's stderr into a file (the client passes it through otherwise).
    let wrapper = sb.path("replay.sh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\n'{}' replay last --as agent \"$@\" 2>'{}'\necho $? > '{}.status'\n",
            acptap_bin().display(),
            stderr.display(),
            stderr.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let child = Command::new(example_bin("sdk_client"))
        .arg("--out")
        .arg(&summary)
        .args(extra)
        .arg("--")
        .arg(&wrapper)
        .current_dir(cwd)
        .env("ACPTAP_DB", sb.db())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let output = finish(child, Duration::from_secs(60));
    assert!(
        output.status.success(),
        "the SDK client failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let status = std::fs::read_to_string(format!("{}.status", stderr.display()))
        .ok()
        .and_then(|s| s.trim().parse().ok());
    (
        status,
        std::fs::read_to_string(&stderr).unwrap_or_default(),
        serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap(),
    )
}

/// Replayed to the SDK client in another directory: every path the recorded agent names under
/// its cwd is named under the live one, no other is sent, and the client's answers being the
/// recorded ones, the replay reports no divergence (exit 0).
#[test]
fn a_replay_into_another_cwd_names_the_live_cwd() {
    let sb = Sandbox::new();
    sb.acptap(&["import", fixture(SAMPLES[0]).to_str().unwrap()]);
    let live = sb.path("elsewhere/project");
    let (status, stderr, summary) = sdk_client_against_replay(&sb, &live, &[]);
    assert_eq!(status, Some(0), "{stderr}");
    assert!(stderr.contains("no divergence"), "{stderr}");
    let mut paths = 0;
    for call in summary["toolCalls"].as_object().unwrap().values() {
        for path in call["locations"].as_array().unwrap() {
            paths += 1;
            let path = path.as_str().unwrap();
            assert!(
                path.starts_with(live.to_str().unwrap()),
                "{path} is not under the live cwd"
            );
        }
    }
    assert!(paths >= 2, "{summary}");
}

/// A client that answers differently from the recorded one (the SDK client with `--reject`
/// rejects what was allowed): each difference is said, the summary counts them, exit 1.
#[test]
fn live_answers_that_differ_from_the_recording_are_divergences() {
    let sb = Sandbox::new();
    sb.acptap(&["import", fixture(SAMPLES[0]).to_str().unwrap()]);
    let (status, stderr, _) = sdk_client_against_replay(&sb, &sb.path("live"), &["--reject"]);
    assert_eq!(status, Some(1), "{stderr}");
    assert!(
        stderr.contains("`session/request_permission` (request 0): the recording answered selected allow_once, the live client selected reject_once"),
        "{stderr}"
    );
    assert!(stderr.contains("2 divergences"), "{stderr}");
}

/// The recorded agent read and wrote files through the client (gemini), and the live client's
/// `initialize` advertises no `fs` capability (the SDK example client): the replay does not ask
/// it (it would answer -32601, and the replay used to end with exit 1 on that), says why once
/// per capability, and counts what it held in the summary; no divergence.
#[test]
fn fs_requests_go_only_to_a_client_that_advertised_them() {
    let sb = Sandbox::new();
    sb.acptap(&["import", fixture(SAMPLES[4]).to_str().unwrap()]);
    let (status, stderr, _) = sdk_client_against_replay(&sb, &sb.path("live"), &[]);
    assert_eq!(status, Some(0), "{stderr}");
    assert!(!stderr.contains("-32601"), "{stderr}");
    for capability in ["fs.readTextFile", "fs.writeTextFile"] {
        let why = format!("the live client did not advertise `{capability}` in its `initialize`");
        assert_eq!(
            stderr
                .matches(&format!("nor any other for this reason: {why}"))
                .count(),
            1,
            "{stderr}"
        );
    }
    assert!(
        stderr.contains(
            "2 recorded request(s) not sent: the live client did not advertise `fs.readTextFile`"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("no divergence"), "{stderr}");
}

/// A live `session/cancel` mid-turn: the rest of the recorded turn is not sent, the prompt is
/// answered `cancelled` at once, and the replay goes on.
#[test]
fn a_live_cancel_ends_the_turn() {
    let sb = Sandbox::new();
    sb.acptap(&["import", fixture(SAMPLES[0]).to_str().unwrap()]);
    let records = load_transcript(&fixture(SAMPLES[0]));
    let recorded_turn = records.iter().skip(5).filter(|r| r.dir == "a2c").count();
    let mut child = replay_as_agent(&sb, &[]);
    let mut to_agent = child.stdin.take().unwrap();
    let mut from_agent = BufReader::new(child.stdout.take().unwrap());
    let cwd = sb.path("live");
    let send = |to: &mut std::process::ChildStdin, v: serde_json::Value| {
        to.write_all(format!("{v}\n").as_bytes()).unwrap();
    };
    let mut read = || {
        let mut line = String::new();
        from_agent.read_line(&mut line).unwrap();
        serde_json::from_str::<serde_json::Value>(&line).unwrap()
    };
    send(
        &mut to_agent,
        serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}),
    );
    assert_eq!(read()["id"], 0);
    send(
        &mut to_agent,
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}}),
    );
    let session = read()["result"]["sessionId"].clone();
    let _commands = read();
    send(
        &mut to_agent,
        serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}}),
    );
    assert_eq!(read()["method"], "session/update");
    send(
        &mut to_agent,
        serde_json::json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}),
    );
    // What arrives until the prompt's answer: fewer lines than the recorded turn has.
    let mut seen = 1;
    let answer = loop {
        let line = read();
        seen += 1;
        if line["id"] == 7 {
            break line;
        }
        // A permission request sent before the cancel: the client answers it `cancelled`.
        if line["method"] == "session/request_permission" {
            send(
                &mut to_agent,
                serde_json::json!({"jsonrpc": "2.0", "id": line["id"], "result": {"outcome": {"outcome": "cancelled"}}}),
            );
        }
    };
    assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
    assert!(
        seen < recorded_turn,
        "{seen} lines of a {recorded_turn}-line turn were sent"
    );
    drop(to_agent);
    let output = finish(child, Duration::from_secs(10));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("the client cancelled turn 1"), "{stderr}");
}

/// A recorded cancelled turn, replayed to a client that never cancels (the SDK client): the
/// turn still ends as recorded (`cancelled`), stderr says why, and nothing hangs.
#[test]
fn a_recorded_cancelled_turn_ends_for_a_client_that_never_cancels() {
    let sb = Sandbox::new();
    sb.acptap(&["import", fixture(SAMPLES[1]).to_str().unwrap()]);
    let (status, stderr, summary) = sdk_client_against_replay(&sb, &sb.path("live"), &[]);
    assert_eq!(summary["stopReason"], "cancelled", "{summary}");
    assert!(stderr.contains("the live client has not"), "{stderr}");
    assert_eq!(status, Some(0), "{stderr}");
}

/// `acptap replay last --as client [extra] --cwd LIVE -- python3 AGENT` on `sb`'s database, with
/// `env` for the agent; its output once it ended (within a minute).
fn replay_last_as_client_against_python(
    sb: &Sandbox,
    live: &std::path::Path,
    agent: &std::path::Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> std::process::Output {
    let child = Command::new(acptap_bin())
        .args(["replay", "last", "--as", "client"])
        .args(extra)
        .arg("--cwd")
        .arg(live)
        .args(["--grace", "2s", "--", "python3"])
        .arg(agent)
        .env("ACPTAP_DB", sb.db())
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    finish(child, Duration::from_secs(60))
}

/// Gemini CLI's cancelled turn, replayed as the client with `--compare text` against an agent
/// that behaves as Gemini did (tests/fixtures/replay_real/): the recording
/// (gemini-acpx-slow-cancelled.jsonl, a real one) has the agent's `available_commands_update`,
/// sent right after `session/new`, recorded before the prompt, and the client's cancel after
/// the turn's first chunk. The live agent's report arrived after the replay had sent the prompt,
/// was counted as the turn's first line, and the cancel went at once: the turn lost its text
/// (`agent text "This answer " -> ""`). Now only the turn's own lines count, on both sides: lines
/// recorded after the prompt (by seq) or arrived after it was sent, the session's reports left
/// out. Tried with the live report before and after the prompt (`early`, `late`), and with the
/// recording's report moved after the prompt (the other way the two cross).
#[test]
fn a_replayed_cancel_waits_for_the_turns_own_lines_not_the_sessions_reports() {
    let agent = fixture("replay_real/gemini_like_agent.py");
    let recorded: Vec<serde_json::Value> =
        std::fs::read_to_string(fixture("replay_real/gemini-acpx-slow-cancelled.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    let method = |record: &serde_json::Value| {
        serde_json::from_str::<serde_json::Value>(record["text"].as_str().unwrap()).unwrap()
            ["method"]
            .as_str()
            .map(str::to_owned)
    };
    let report = recorded
        .iter()
        .position(|r| {
            r["text"]
                .as_str()
                .unwrap()
                .contains("available_commands_update")
        })
        .unwrap();
    assert_eq!(
        method(&recorded[report + 1]).as_deref(),
        Some("session/prompt"),
        "the fixture: the commands reported, then the prompt"
    );
    // The same recording with the report read 50 us after the prompt.
    let mut crossed = recorded.clone();
    crossed.swap(report, report + 1);
    crossed[report + 1]["t"] = serde_json::json!(crossed[report]["t"].as_f64().unwrap() + 0.000_05);
    for (seq, record) in crossed.iter_mut().enumerate() {
        record["seq"] = serde_json::json!(seq);
    }

    for (recording, records) in [
        ("as recorded", &recorded),
        ("report after the prompt", &crossed),
    ] {
        let sb = Sandbox::new();
        let transcript = sb.path("recording.jsonl");
        let text: String = records.iter().map(|r| format!("{r}\n")).collect();
        std::fs::write(&transcript, text).unwrap();
        sb.acptap(&["import", transcript.to_str().unwrap()]);
        let live = sb.path("live");
        std::fs::create_dir_all(&live).unwrap();
        for commands in ["early", "late"] {
            let output = replay_last_as_client_against_python(
                &sb,
                &live,
                &agent,
                &["--compare", "text"],
                &[("GEMINI_LIKE_COMMANDS", commands)],
            );
            let report = String::from_utf8_lossy(&output.stdout);
            assert_eq!(
                output.status.code(),
                Some(0),
                "{recording}, commands reported {commands}:\n{report}\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
            assert!(report.contains("no divergence"), "{report}");
        }
    }
}

/// A recorded `fs/*` request for a file outside the recorded cwd is never sent to the live
/// client (and its recorded answer not waited for); one inside is sent under the live cwd.
#[test]
fn a_path_outside_the_recorded_cwd_is_never_sent() {
    let sb = Sandbox::new();
    let lines = [
        (
            "c2a",
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/rec", "mcpServers": []}}),
        ),
        (
            "a2c",
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s"}}),
        ),
        (
            "c2a",
            serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": "s", "prompt": []}}),
        ),
        (
            "a2c",
            serde_json::json!({"jsonrpc": "2.0", "id": 50, "method": "fs/read_text_file", "params": {"sessionId": "s", "path": "/etc/passwd"}}),
        ),
        (
            "c2a",
            serde_json::json!({"jsonrpc": "2.0", "id": 50, "result": {"content": "root:x:0:0"}}),
        ),
        (
            "a2c",
            serde_json::json!({"jsonrpc": "2.0", "id": 52, "method": "fs/read_text_file", "params": {"sessionId": "s", "path": "/rec/../etc/shadow"}}),
        ),
        (
            "c2a",
            serde_json::json!({"jsonrpc": "2.0", "id": 52, "result": {"content": "x"}}),
        ),
        (
            "a2c",
            serde_json::json!({"jsonrpc": "2.0", "id": 53, "method": "fs/read_text_file", "params": {"sessionId": "s", "path": "/rec-other/b.txt"}}),
        ),
        (
            "c2a",
            serde_json::json!({"jsonrpc": "2.0", "id": 53, "result": {"content": "x"}}),
        ),
        (
            "a2c",
            serde_json::json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Read", "locations": [{"path": "file:///etc/passwd"}]}}}),
        ),
        (
            "a2c",
            serde_json::json!({"jsonrpc": "2.0", "id": 51, "method": "fs/read_text_file", "params": {"sessionId": "s", "path": "/rec/./sub/../a.txt"}}),
        ),
        (
            "c2a",
            serde_json::json!({"jsonrpc": "2.0", "id": 51, "result": {"content": "a"}}),
        ),
        (
            "a2c",
            serde_json::json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}),
        ),
    ];
    crate::util::import_lines(&sb, &lines);
    let mut child = replay_as_agent(&sb, &[]);
    let mut to_agent = child.stdin.take().unwrap();
    let mut from_agent = BufReader::new(child.stdout.take().unwrap());
    let mut read = || {
        let mut line = String::new();
        from_agent.read_line(&mut line).unwrap();
        serde_json::from_str::<serde_json::Value>(&line).unwrap()
    };
    to_agent.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session/new\",\"params\":{\"cwd\":\"/live\",\"mcpServers\":[]}}\n").unwrap();
    assert_eq!(read()["result"]["sessionId"], "s");
    to_agent.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"s\",\"prompt\":[]}}\n").unwrap();
    let request = read();
    assert_eq!(request["params"]["path"], "/live/a.txt", "{request}");
    to_agent
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":51,\"result\":{\"content\":\"a\"}}\n")
        .unwrap();
    assert_eq!(read()["result"]["stopReason"], "end_turn");
    drop(to_agent);
    let output = finish(child, Duration::from_secs(10));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    for path in [
        "/etc/passwd",
        "/rec/../etc/shadow",
        "/rec-other/b.txt",
        "file:///etc/passwd",
    ] {
        assert!(
            stderr.contains(&format!("not sent: {path} ")),
            "{path}: {stderr}"
        );
    }
}

/// Replay as client with `--fs real` against a real agent process that reads and writes files
/// (tests/replay/fs_agent.py): a read takes ACP's `line` (1-based) and `limit` (in lines), a
/// missing file is resource-not-found (-32002), a path outside `--cwd` is refused and nothing
/// outside is read, a write lands inside `--cwd`. With `--fs recorded` (the default) the same
/// requests, recorded in another cwd, are answered from the recording by their path relative to
/// the cwd.
#[test]
fn replay_as_client_answers_fs_as_acp_says_inside_the_cwd_only() {
    let sb = Sandbox::new();
    let agent = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/replay/fs_agent.py");
    // The recording: a client answered the agent in /original.
    let original = sb.path("original");
    std::fs::create_dir_all(&original).unwrap();
    std::fs::write(original.join("notes.txt"), "a\nb\nc\nd\n").unwrap();
    let mut transcript = crate::util::opening_lines(&original, "fs-session", "read");
    transcript.extend([
        (
            "a2c",
            serde_json::json!({"jsonrpc": "2.0", "id": 101, "method": "fs/read_text_file", "params": {"sessionId": "fs-session", "path": original.join("notes.txt"), "line": 2, "limit": 2}}),
        ),
        (
            "c2a",
            serde_json::json!({"jsonrpc": "2.0", "id": 101, "result": {"content": "b\nc\n"}}),
        ),
        (
            "a2c",
            serde_json::json!({"jsonrpc": "2.0", "id": 102, "method": "fs/read_text_file", "params": {"sessionId": "fs-session", "path": original.join("missing.txt")}}),
        ),
        (
            "c2a",
            serde_json::json!({"jsonrpc": "2.0", "id": 102, "error": {"code": -32002, "message": "Resource not found"}}),
        ),
        // A recorded answer for a file outside the recorded cwd: never handed to the live agent.
        (
            "a2c",
            serde_json::json!({"jsonrpc": "2.0", "id": 106, "method": "fs/read_text_file", "params": {"sessionId": "fs-session", "path": format!("{}/../secret.txt", original.display())}}),
        ),
        (
            "c2a",
            serde_json::json!({"jsonrpc": "2.0", "id": 106, "result": {"content": "RECORDED SECRET"}}),
        ),
        (
            "a2c",
            serde_json::json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}),
        ),
    ]);
    crate::util::import_lines(&sb, &transcript);

    let live = sb.path("live");
    std::fs::create_dir_all(&live).unwrap();
    std::fs::write(live.join("notes.txt"), "one\ntwo\nthree\nfour\n").unwrap();
    // A symlink inside the cwd to a file outside it (that does not exist yet: dangling).
    let outside = sb.path("outside.txt");
    std::os::unix::fs::symlink(&outside, live.join("link.txt")).unwrap();
    let log = sb.path("answers.jsonl");
    let replay = |fs: &str| {
        replay_to_logging_agent(
            &sb,
            &[
                "--fs".as_ref(),
                fs.as_ref(),
                "--cwd".as_ref(),
                live.as_ref(),
            ],
            agent,
            &[("FS_AGENT_LOG", log.as_ref())],
            &log,
            Duration::from_secs(60),
        )
    };

    let (output, answers) = replay("real");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(answers.len(), 6, "{stderr}");
    assert!(
        answers[4]["answer"].get("error").is_some(),
        "written through a link: {answers:?}"
    );
    assert!(answers[5]["answer"].get("error").is_some(), "{answers:?}");
    assert!(
        !outside.exists(),
        "a file outside the cwd was written through a symlink"
    );
    assert_eq!(
        answers[0]["answer"]["result"]["content"], "two\nthree\n",
        "{answers:?}"
    );
    assert_eq!(answers[1]["answer"]["error"]["code"], -32002, "{answers:?}");
    let elsewhere = &answers[2]["answer"];
    assert!(
        elsewhere.get("error").is_some(),
        "/etc/hostname was read: {elsewhere}"
    );
    assert!(
        elsewhere["error"]["message"]
            .as_str()
            .unwrap()
            .contains("outside the replay's cwd")
    );
    assert!(answers[3]["answer"].get("result").is_some(), "{answers:?}");
    assert_eq!(
        std::fs::read_to_string(live.join("new.txt")).unwrap(),
        "written"
    );

    // From the recording: the recorded answers, found by their path relative to the cwd; what
    // the recording has no answer for comes from the real file under --cwd, and says so.
    std::fs::remove_file(live.join("new.txt")).unwrap();
    let (output, answers) = replay("recorded");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(answers.len(), 6, "{stderr}");
    assert!(
        answers[4]["answer"].get("error").is_some(),
        "written through a link: {answers:?}"
    );
    assert!(
        !outside.exists(),
        "a file outside the cwd was written through a symlink"
    );
    assert!(
        answers[5]["answer"].get("error").is_some(),
        "the recorded contents of a file outside the cwd were handed over: {answers:?}"
    );
    assert_eq!(
        answers[0]["answer"]["result"]["content"], "b\nc\n",
        "the recorded answer: {answers:?}"
    );
    assert_eq!(answers[1]["answer"]["error"]["code"], -32002);
    assert!(answers[2]["answer"].get("error").is_some(), "{answers:?}");
    // The file served is named as served: the live path under --cwd, not the recorded one
    // (which is named as what the recording was searched for).
    assert!(
        stderr.contains(&format!(
            "`fs/write_text_file` request ({} in the recording): answered from the real file {} instead",
            original.join("new.txt").display(),
            live.join("new.txt").display()
        )),
        "{stderr}"
    );
    assert!(
        !stderr.contains(&format!(
            "answered from the real file {}",
            original.display()
        )),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(live.join("new.txt")).unwrap(),
        "written"
    );
}

/// `--fs real` touches regular files with one name only, and reads what is asked: a write through
/// a hard link to a file outside the cwd is refused (it went through), a named pipe in the cwd
/// is refused at once for a read and a write (the replay hung for ever reading it), a 3 GB
/// sparse file read with `limit: 1` answers its first line (it was read whole), and a read with
/// no limit stops at 64 MiB with an error that says to ask for fewer lines.
#[test]
fn replay_as_client_real_fs_refuses_hard_links_and_pipes_and_reads_only_what_is_asked() {
    let sb = Sandbox::new();
    let agent = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/replay/fs_agent.py");
    let live = sb.path("live");
    std::fs::create_dir_all(&live).unwrap();
    let mut transcript = crate::util::opening_lines(&live, "fs-session", "go");
    transcript.extend([(
        "a2c",
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}),
    )]);
    crate::util::import_lines(&sb, &transcript);

    let outside = sb.path("outside.txt");
    std::fs::write(&outside, "outside\n").unwrap();
    std::fs::hard_link(&outside, live.join("hard.txt")).unwrap();
    let status = Command::new("mkfifo")
        .arg(live.join("pipe"))
        .status()
        .unwrap();
    assert!(status.success());
    let sparse = live.join("sparse.txt");
    std::fs::write(&sparse, "first\nsecond\n").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&sparse)
        .unwrap()
        .set_len(3 << 30)
        .unwrap();
    let requests = serde_json::json!([
        ["fs/read_text_file", "pipe", {}],
        ["fs/write_text_file", "pipe", {"content": "x"}],
        ["fs/write_text_file", "hard.txt", {"content": "overwritten"}],
        ["fs/read_text_file", "sparse.txt", {"limit": 1}],
        ["fs/read_text_file", "sparse.txt", {"line": 2, "limit": 1}],
        ["fs/read_text_file", "sparse.txt", {}],
        ["fs/write_text_file", "new.txt", {"content": "written"}],
    ]);
    let log = sb.path("answers.jsonl");
    let requests = requests.to_string();
    let (output, logged) = replay_to_logging_agent(
        &sb,
        &["--fs".as_ref(), "real".as_ref()],
        agent,
        &[
            ("FS_AGENT_LOG", log.as_ref()),
            ("FS_AGENT_REQUESTS", requests.as_ref()),
        ],
        &log,
        // Generous: only a hang (on the pipe) or a whole read of 3 GB can take this long.
        Duration::from_secs(120),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    let answers: Vec<serde_json::Value> = logged.iter().map(|l| l["answer"].clone()).collect();
    assert_eq!(answers.len(), 7, "{stderr}");
    let error = |n: usize, needle: &str| {
        let message = answers[n]["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(needle), "answer {n}: {}", answers[n]);
    };
    error(0, "a named pipe, refused");
    error(1, "a named pipe, refused");
    error(2, "2 hard links, refused");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "outside\n");
    assert_eq!(answers[3]["result"]["content"], "first\n", "{}", answers[3]);
    assert_eq!(
        answers[4]["result"]["content"], "second\n",
        "{}",
        answers[4]
    );
    error(5, "more than 64 MiB");
    assert!(answers[6].get("result").is_some(), "{}", answers[6]);
    assert_eq!(
        std::fs::read_to_string(live.join("new.txt")).unwrap(),
        "written"
    );
}

/// `--compare text`: the agent's message text of each turn is compared too, so a transcript
/// whose answers were changed to "WRONG" diverges from the same deterministic agent (exit 1),
/// where without it only tool calls, stop reasons and permissions count (exit 0); the same
/// recording against the same agent in another cwd does not diverge.
#[test]
fn compare_text_catches_changed_agent_words() {
    let sb = Sandbox::new();
    let session = record_demo(&sb);
    let elsewhere = sb.path("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let run = |session: &str, compare: bool| {
        let mut command = Command::new(acptap_bin());
        command
            .args(["replay", session, "--as", "client", "--cwd"])
            .arg(&elsewhere);
        if compare {
            command.args(["--compare", "text"]);
        }
        let child = command
            .arg("--")
            .arg(acptap_bin())
            .arg("demo-agent")
            .env("ACPTAP_DB", sb.db())
            .current_dir(sb.dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let output = finish(child, Duration::from_secs(60));
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
        )
    };
    let (code, report) = run(&session, true);
    assert_eq!(code, Some(0), "the same agent's words: {report}");
    // The same recording (the same session id: it becomes the latest) with every agent
    // message chunk saying WRONG.
    let exported = sb.acptap(&["export", &session]);
    let mut changed = Vec::new();
    for line in String::from_utf8(exported.stdout).unwrap().lines() {
        let mut record: serde_json::Value = serde_json::from_str(line).unwrap();
        if let Some(text) = record["text"].as_str()
            && text.contains("agent_message_chunk")
        {
            let mut message: serde_json::Value = serde_json::from_str(text).unwrap();
            message["params"]["update"]["content"]["text"] = serde_json::json!("WRONG");
            record["text"] = serde_json::json!(message.to_string());
        }
        changed.push(record.to_string());
    }
    let wrong = sb.path("wrong.jsonl");
    std::fs::write(&wrong, changed.join("\n")).unwrap();
    let imported = sb.acptap(&["import", wrong.to_str().unwrap()]);
    assert!(imported.status.success());
    let wrong_session: String = sb
        .conn()
        .query_row(
            "SELECT session_id FROM sessions ORDER BY id DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let (code, report) = run(&wrong_session, false);
    assert_eq!(code, Some(0), "text is not compared by default: {report}");
    let (code, report) = run(&wrong_session, true);
    assert_eq!(code, Some(1), "{report}");
    assert!(report.contains("agent text \"WRONG"), "{report}");
}

/// What the parse of a line and its bytes say differently, and paths that are not paths under
/// the cwd: a key written twice (a client may keep the first), `~`, a Windows path, a relative
/// `fs/*` path, a path that is not a string: none of these lines is sent.
#[test]
fn ambiguous_or_foreign_paths_are_never_sent() {
    let sb = Sandbox::new();
    let raw_lines = [
        ("c2a", r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/rec","mcpServers":[]}}"#.to_owned()),
        ("a2c", r#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s"}}"#.to_owned()),
        ("c2a", r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}"#.to_owned()),
        ("a2c", r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"a","title":"x","locations":[{"path":"/etc/passwd","path":"/rec/ok"}]}}}"#.to_owned()),
        ("a2c", r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"b","title":"x","locations":[{"path":"~/.ssh/id_rsa"}]}}}"#.to_owned()),
        ("a2c", r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c","title":"x","locations":[{"path":"C:\\Windows\\x"}]}}}"#.to_owned()),
        ("a2c", r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"d","title":"x","locations":[{"path":["/etc/passwd"]}]}}}"#.to_owned()),
        ("a2c", r#"{"jsonrpc":"2.0","id":60,"method":"fs/read_text_file","params":{"sessionId":"s","path":"rel.txt"}}"#.to_owned()),
        ("c2a", r#"{"jsonrpc":"2.0","id":60,"result":{"content":"x"}}"#.to_owned()),
        ("a2c", r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"e","title":"ok","locations":[{"path":"/rec/fine.txt"}]}}}"#.to_owned()),
        ("a2c", r#"{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}"#.to_owned()),
    ];
    crate::util::import_lines(&sb, &raw_lines);
    let mut child = replay_as_agent(&sb, &[]);
    let mut to_agent = child.stdin.take().unwrap();
    let mut from_agent = BufReader::new(child.stdout.take().unwrap());
    to_agent.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session/new\",\"params\":{\"cwd\":\"/rec\",\"mcpServers\":[]}}\n").unwrap();
    to_agent.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"s\",\"prompt\":[]}}\n").unwrap();
    let mut received = Vec::new();
    loop {
        let mut line = String::new();
        from_agent.read_line(&mut line).unwrap();
        let value: serde_json::Value = serde_json::from_str(&line).unwrap();
        received.push(line);
        if value["id"] == 2 {
            break;
        }
    }
    drop(to_agent);
    let output = finish(child, Duration::from_secs(10));
    let all = received.join("");
    for foreign in ["/etc/passwd", "~/.ssh", "Windows", "rel.txt"] {
        assert!(!all.contains(foreign), "{foreign} was sent: {all}");
    }
    assert!(all.contains("/rec/fine.txt"), "{all}");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// An ACP agent that does what a real one does with `session/new` and `session/load`: it starts
/// the stdio MCP servers it is given (in the session's cwd). It logs the params of each to
/// `$SESSION_LOG`, one JSON line each.
const MCP_STARTING_AGENT: &str = r#"
import json, os, subprocess, sys
def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    method, rid = m.get("method"), m.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 1, "agentCapabilities": {"loadSession": True}}})
    elif method in ("session/new", "session/load"):
        params = m["params"]
        with open(os.environ["SESSION_LOG"], "a") as f:
            f.write(json.dumps({"method": method, "params": params}) + "\n")
        for server in params.get("mcpServers", []):
            if "command" in server:
                subprocess.run([server["command"], *server.get("args", [])], cwd=params["cwd"], timeout=10)
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "live-session"} if method == "session/new" else {}})
    elif method == "session/prompt":
        send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
    elif rid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})
"#;

/// A recording is untrusted input: replayed as the client against a live agent, its
/// `session/new` and `session/load` go without the recorded MCP servers (an agent starts the
/// stdio ones: any command), without `_meta` and `additionalDirectories`; stderr names each
/// server left out, once. `--run-recorded-commands` gives the agent the recorded servers (the
/// command then runs). Without `--cwd`, a recorded cwd of `/`, the home directory or a
/// directory above it, or a relative one, is refused before the agent starts (it would be the
/// fence of `--fs real`); with `--cwd` the same recording replays.
#[test]
fn replay_as_client_gives_the_agent_no_recorded_mcp_server_or_fence_widening() {
    let sb = Sandbox::new();
    let agent = sb.path("mcp_agent.py");
    std::fs::write(&agent, MCP_STARTING_AGENT).unwrap();
    let marker = sb.path("MARKER");
    let evil = serde_json::json!({"name": "evil", "command": "/bin/sh", "args": ["-c", format!("touch '{}'", marker.display())], "env": []});
    let remote = serde_json::json!({"type": "http", "name": "remote", "url": "https://evil.example/mcp", "headers": [{"name": "Authorization", "value": "Bearer x"}]});
    let recording = |cwd: &str| {
        vec![
            (
                "c2a",
                serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}),
            ),
            (
                "a2c",
                serde_json::json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1, "agentCapabilities": {"loadSession": true}}}),
            ),
            (
                "c2a",
                serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": cwd, "mcpServers": [evil], "_meta": {"additionalDirectories": ["/etc"]}, "additionalDirectories": ["/etc"]}}),
            ),
            (
                "a2c",
                serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "rec-session"}}),
            ),
            (
                "c2a",
                serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": "rec-session", "prompt": [{"type": "text", "text": "hi"}]}}),
            ),
            (
                "a2c",
                serde_json::json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}),
            ),
            (
                "c2a",
                serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "session/load", "params": {"sessionId": "rec-session", "cwd": cwd, "mcpServers": [remote], "_meta": {"additionalDirectories": ["/etc"]}}}),
            ),
            (
                "a2c",
                serde_json::json!({"jsonrpc": "2.0", "id": 3, "result": {}}),
            ),
        ]
    };
    let log = sb.path("sessions.jsonl");
    let replay = |extra: &[&OsStr]| {
        replay_to_logging_agent(
            &sb,
            extra,
            &agent,
            &[("SESSION_LOG", log.as_ref())],
            &log,
            Duration::from_secs(60),
        )
    };

    let recorded_cwd = sb.path("project");
    std::fs::create_dir_all(&recorded_cwd).unwrap();
    crate::util::import_lines(&sb, &recording(recorded_cwd.to_str().unwrap()));

    // By default: no server, no `_meta`, no `additionalDirectories`; the command never ran.
    let (output, received) = replay(&[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}\n{stderr}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert_eq!(received.len(), 2, "{stderr}");
    assert_eq!(received[0]["method"], "session/new");
    assert_eq!(received[1]["method"], "session/load");
    for session in &received {
        let params = &session["params"];
        assert_eq!(params["mcpServers"], serde_json::json!([]), "{session}");
        assert!(params.get("_meta").is_none(), "{session}");
        assert!(params.get("additionalDirectories").is_none(), "{session}");
        assert_eq!(params["cwd"], recorded_cwd.to_str().unwrap(), "{session}");
    }
    assert_eq!(received[1]["params"]["sessionId"], "live-session");
    assert!(!marker.exists(), "the recorded MCP server's command ran");
    for named in [
        "the recorded MCP server `evil` (/bin/sh -c",
        "the recorded MCP server `remote` (https://evil.example/mcp)",
    ] {
        assert_eq!(stderr.matches(named).count(), 1, "`{named}` in\n{stderr}");
    }
    assert!(stderr.contains("--run-recorded-commands"), "{stderr}");
    assert!(!stderr.contains("Bearer x"), "{stderr}");

    // Opted in: the recorded servers, as recorded; the agent starts the stdio one.
    let (output, received) = replay(&[OsStr::new("--run-recorded-commands")]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(received.len(), 2, "{stderr}");
    assert_eq!(
        received[0]["params"]["mcpServers"],
        serde_json::json!([evil])
    );
    // (The header's value was redacted when the transcript was imported.)
    let given = &received[1]["params"]["mcpServers"][0];
    assert_eq!(
        (&given["name"], &given["url"]),
        (&remote["name"], &remote["url"]),
        "{given}"
    );
    assert!(marker.exists(), "the opted-in server did not start");
    assert!(!stderr.contains("is not given to the agent"), "{stderr}");

    // A recorded cwd that would make the whole disk, or the home directory, the fence: refused
    // before the agent starts, unless --cwd says where to work.
    let home = sb.path("home/me");
    std::fs::create_dir_all(&home).unwrap();
    let home_parent = sb.path("home");
    for refused in [
        "/",
        "/tmp/..",
        home.to_str().unwrap(),
        home_parent.to_str().unwrap(),
        "project",
    ] {
        let fresh = Sandbox::new();
        crate::util::import_lines(&fresh, &recording(refused));
        let run = |extra: &[&OsStr]| {
            let _ = std::fs::remove_file(&log);
            let child = Command::new(acptap_bin())
                .args(["replay", "last", "--as", "client", "--grace", "2s"])
                .args(extra)
                .arg("--")
                .arg("python3")
                .arg(&agent)
                .env("ACPTAP_DB", fresh.db())
                .env("HOME", &home)
                .env("SESSION_LOG", &log)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            finish(child, Duration::from_secs(60))
        };
        let output = run(&[]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{refused}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{refused}: {stderr}");
        assert!(
            stderr.contains(&format!("`{refused}`")) && stderr.contains("give --cwd DIR"),
            "{refused}: {stderr}"
        );
        assert!(!log.exists(), "{refused}: the agent was started");
        assert_eq!(
            fresh.count("SELECT count(*) FROM connections"),
            1,
            "{refused}: a live run was recorded"
        );

        let live = fresh.path("live");
        std::fs::create_dir_all(&live).unwrap();
        let output = run(&[OsStr::new("--cwd"), live.as_os_str()]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{refused}: {stderr}");
        let received = std::fs::read_to_string(&log).unwrap();
        assert!(
            received.contains(&format!("\"cwd\": \"{}\"", live.display())),
            "{refused}: {received}"
        );
    }
}

/// A client that ends the replayed agent with SIGTERM (the Python SDK's example client does, on
/// every run) still gets the summary and the documented exit status (0: no divergence so far),
/// not a death by signal.
#[test]
fn a_replay_ended_by_sigterm_gives_its_summary_and_exit_status() {
    let sb = Sandbox::new();
    sb.acptap(&["import", fixture(SAMPLES[0]).to_str().unwrap()]);
    let mut child = replay_as_agent(&sb, &[]);
    let mut to_agent = child.stdin.take().unwrap();
    let mut from_agent = BufReader::new(child.stdout.take().unwrap());
    to_agent
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n")
        .unwrap();
    let mut line = String::new();
    from_agent.read_line(&mut line).unwrap();
    assert!(line.contains("\"result\""), "{line}");
    // The replay now waits for the client's next request; the client ends it.
    let pid = child.id() as i32;
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let output = finish(child, Duration::from_secs(30));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("ended by signal 15") && stderr.contains("no divergence"),
        "{stderr}"
    );
    drop(to_agent);
}

/// Replay as client under `--cwd`: what the recorded client said about its project names the
/// live one (a prompt's text, a `resource_link`'s `file://` URI), with the relocation that
/// `acptap diff` and replay as agent use; a file's text (an embedded resource) stays the file's.
/// Gemini CLI's real recording, its prompt given paths under the recorded cwd.
#[test]
fn replay_as_client_names_the_live_cwd_in_what_the_client_says() {
    let agent = fixture("replay_real/gemini_like_agent.py");
    let mut records: Vec<serde_json::Value> =
        std::fs::read_to_string(fixture("replay_real/gemini-acpx-slow-cancelled.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    let recorded_cwd = "/home/user/project";
    let prompt = records
        .iter_mut()
        .find(|r| r["text"].as_str().unwrap().contains("\"session/prompt\""))
        .unwrap();
    let mut message: serde_json::Value =
        serde_json::from_str(prompt["text"].as_str().unwrap()).unwrap();
    message["params"]["prompt"] = serde_json::json!([
        {"type": "text", "text": format!("Please improve {recorded_cwd}/hello.py")},
        {"type": "resource_link", "name": "hello.py", "uri": format!("file://{recorded_cwd}/hello.py")},
        {"type": "resource", "resource": {"uri": format!("file://{recorded_cwd}/notes.txt"),
                                          "text": format!("root = {recorded_cwd}")}},
    ]);
    prompt["text"] = serde_json::json!(message.to_string());
    let sb = Sandbox::new();
    let transcript = sb.path("recording.jsonl");
    let text: String = records.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&transcript, text).unwrap();
    sb.acptap(&["import", transcript.to_str().unwrap()]);
    let live = sb.path("live");
    std::fs::create_dir_all(&live).unwrap();
    let output = replay_last_as_client_against_python(&sb, &live, &agent, &[], &[]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // The live run is recorded beside the recording: its prompt, as the agent got it.
    let sent: String = sb
        .conn()
        .query_row(
            "SELECT CAST(m.raw AS TEXT) FROM messages m JOIN connections c ON c.id = m.connection_id \
             WHERE c.replay_of IS NOT NULL AND m.method = 'session/prompt' AND m.kind = 'request'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let sent: serde_json::Value = serde_json::from_str(&sent).unwrap();
    let live = live.to_str().unwrap();
    let blocks = &sent["params"]["prompt"];
    assert_eq!(
        blocks[0]["text"],
        format!("Please improve {live}/hello.py"),
        "{sent}"
    );
    assert_eq!(
        blocks[1]["uri"],
        format!("file://{live}/hello.py"),
        "{sent}"
    );
    assert_eq!(
        blocks[2]["resource"]["uri"],
        format!("file://{live}/notes.txt")
    );
    assert_eq!(
        blocks[2]["resource"]["text"],
        format!("root = {recorded_cwd}"),
        "a file's text is the file's"
    );
}

/// opencode's cancelled turn (tests/fixtures/replay_real/opencode-acpx-slow-cancelled.jsonl, a
/// real recording): the client cancelled 1.7 s into a turn in which opencode had said nothing.
/// Zero lines is no point in the turn, so the replay waits the recorded time before it sends the
/// cancel; sent 3 ms after the prompt (as it was), the live opencode failed the turn with an
/// error instead of cancelling it (found by scripts/real-peers.sh). The agent here fails a
/// cancel that comes within 0.5 s as opencode did.
#[test]
fn a_cancel_recorded_before_any_line_of_its_turn_waits_for_its_time() {
    let sb = Sandbox::new();
    sb.acptap(&[
        "import",
        fixture("replay_real/opencode-acpx-slow-cancelled.jsonl")
            .to_str()
            .unwrap(),
    ]);
    let live = sb.path("live");
    std::fs::create_dir_all(&live).unwrap();
    let agent = fixture("replay_real/opencode_like_agent.py");
    let output =
        replay_last_as_client_against_python(&sb, &live, &agent, &["--compare", "text"], &[]);
    let report = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{report}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(report.contains("no divergence"), "{report}");
}
