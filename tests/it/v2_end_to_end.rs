//! One ACP v2 session through every door of acptap, with the official SDK's v2 peers
//! (examples/v2_client.rs, examples/v2_agent.rs): recorded by `acptap run` (every v2 update kind,
//! two permission requests with subjects, an elicitation, `tool_call/cancel`, a prompt cancelled
//! by `$/cancel_request`, `session/resume` with `replayFrom`), shown by `show` and `report`,
//! exported, checked clean by `acptap check`, and replayed both ways against the same peers.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::util::{Sandbox, acptap_bin, example_bin, finish};

const CLIENT_FLAGS: [&str; 3] = ["--resume", "--cancel-tool-call", "--cancel-request"];

/// Runs the v2 client with `CLIENT_FLAGS` in `cwd` against `agent` (a command line); returns
/// its summary.
fn v2_client(sb: &Sandbox, cwd: &std::path::Path, name: &str, agent: &[&std::ffi::OsStr]) -> Value {
    let summary = sb.path(name);
    let child = Command::new(example_bin("v2_client"))
        .current_dir(cwd)
        .env("ACPTAP_DB", sb.db())
        .arg("--out")
        .arg(&summary)
        .args(CLIENT_FLAGS)
        .arg("--")
        .args(agent)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let output = finish(child, Duration::from_secs(90));
    assert!(
        output.status.success(),
        "v2_client against {agent:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap()
}

fn text(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_v2_session_is_recorded_shown_exported_checked_and_replayed_both_ways() {
    let sb = Sandbox::new();
    let project = sb.path("project");
    std::fs::create_dir_all(project.join("src")).unwrap();
    let agent = example_bin("v2_agent");
    let acptap = acptap_bin();
    let live = v2_client(
        &sb,
        &project,
        "live.json",
        &[
            acptap.as_os_str(),
            "run".as_ref(),
            "--".as_ref(),
            agent.as_os_str(),
        ],
    );
    assert_eq!(live["stopReason"], "end_turn", "{live:#}");
    let session = live["sessionId"].as_str().unwrap().to_owned();

    // Recorded: the negotiated version, the turn ended by the idle state update, the requests
    // with their subjects, the elicitation and the cancellations tied to the session.
    let conn = sb.conn();
    let version: String = conn
        .query_row("SELECT protocol_version FROM connections", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, "2");
    let stop: String = conn
        .query_row(
            "SELECT stop_reason FROM prompt_turns WHERE session_id = ?1 ORDER BY request_seq LIMIT 1",
            [&session],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(stop, "end_turn");
    let subjects: Vec<String> = conn
        .prepare(
            "SELECT json_extract(subject, '$.type') FROM permission_requests ORDER BY request_seq",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(subjects, ["command", "tool_call"]);
    for method in [
        "elicitation/create",
        "tool_call/cancel",
        "$/cancel_request",
        "session/resume",
    ] {
        let tied: i64 = conn
            .query_row(
                "SELECT count(*) FROM messages WHERE method = ?1 AND session_id = ?2",
                [method, &session],
                |r| r.get(0),
            )
            .unwrap();
        assert!(tied >= 1, "{method} is not tied to the session");
    }

    // Shown: the first message's final text (its upsert), not the concatenation of its chunks.
    let final_text = live["agentMessages"]["t1-m1"].as_str().unwrap().to_owned();
    let show = text(&sb.acptap(&["show", &session]));
    assert!(show.contains(&final_text), "{show}");
    assert!(!show.contains("Looking around..."), "{show}");
    assert!(show.contains("cargo test"), "{show}");
    let report = sb.path("report.html");
    sb.acptap(&["report", &session, "-o", report.to_str().unwrap()]);
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.contains(&final_text));

    // Exported and checked: the transcript imports back, and the conversation is clean.
    let exported = sb.path("session.jsonl");
    sb.acptap(&["export", &session, "-o", exported.to_str().unwrap()]);
    assert!(std::fs::metadata(&exported).unwrap().len() > 0);
    let spans = sb.path("spans.json");
    sb.acptap(&[
        "export",
        &session,
        "--format",
        "otlp-json",
        "--tool-content",
        "-o",
        spans.to_str().unwrap(),
    ]);
    assert!(
        std::fs::read_to_string(&spans)
            .unwrap()
            .contains(&final_text)
    );
    let check = sb.acptap_status(&["check", &session]);
    assert!(
        check.status.success(),
        "check found something:\n{}{}",
        text(&check),
        String::from_utf8_lossy(&check.stderr)
    );

    // Replayed as the agent to the same client: the same conversation.
    let replay_dir = sb.path("replay-as-agent");
    std::fs::create_dir_all(&replay_dir).unwrap();
    let replayed = v2_client(
        &sb,
        &replay_dir,
        "replayed.json",
        &[
            acptap.as_os_str(),
            "replay".as_ref(),
            session.as_ref(),
            "--as".as_ref(),
            "agent".as_ref(),
        ],
    );
    assert_eq!(
        replayed["agentMessages"], live["agentMessages"],
        "{replayed:#}"
    );
    assert_eq!(replayed["stopReason"], "end_turn");

    // Replayed as the client against the same agent: exit 0, no divergence.
    let client_dir = sb.path("replay-as-client");
    std::fs::create_dir_all(client_dir.join("src")).unwrap();
    let out = sb.acptap_status(&[
        "replay",
        &session,
        "--as",
        "client",
        "--cwd",
        client_dir.to_str().unwrap(),
        "--",
        agent.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "replay as client: {}\n{}",
        text(&out),
        String::from_utf8_lossy(&out.stderr)
    );
}
