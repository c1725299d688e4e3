//! The official ACP Rust SDK on both sides (examples/sdk_client.rs and examples/sdk_agent.rs),
//! talking through `acptap run`: an independent implementation must interoperate, and the
//! recording must match what the SDK client saw.

use std::process::Command;
use std::time::Duration;

use crate::util::{Sandbox, acptap_bin, example_bin, finish};

fn session_through_proxy(extra: &[&str]) -> (Sandbox, serde_json::Value) {
    let sandbox = Sandbox::new();
    let summary = sandbox.path("summary.json");
    let child = Command::new(example_bin("sdk_client"))
        .arg("--out")
        .arg(&summary)
        .args(extra)
        .arg("--")
        .arg(acptap_bin())
        .arg("run")
        .arg("--db")
        .arg(sandbox.db())
        .arg("--")
        .arg(example_bin("sdk_agent"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let output = finish(child, Duration::from_secs(60));
    assert!(
        output.status.success(),
        "sdk_client failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary = serde_json::from_slice(&std::fs::read(summary).unwrap()).unwrap();
    (sandbox, summary)
}

fn recorded_tool(sandbox: &Sandbox, id: &str) -> (String, String, String) {
    sandbox
        .conn()
        .query_row(
            "SELECT title, kind, status FROM tool_calls WHERE tool_call_id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap()
}

#[test]
fn sdk_client_and_sdk_agent_through_the_proxy() {
    let (sb, summary) = session_through_proxy(&[]);
    assert_eq!(summary["stopReason"], "end_turn");
    assert_eq!(
        summary["agentMessages"],
        serde_json::json!(["working on it", "done"])
    );
    assert_eq!(summary["toolCalls"]["call_2"]["status"], "completed");
    assert_eq!(summary["agentExitCode"], 0);
    // The recording agrees with what the client saw.
    for (id, call) in summary["toolCalls"].as_object().unwrap() {
        let (title, kind, status) = recorded_tool(&sb, id);
        assert_eq!(
            serde_json::json!([title, kind, status]),
            serde_json::json!([call["title"], call["kind"], call["status"]])
        );
    }
    let (outcome, option, kind, by): (String, String, String, String) = sb
        .conn()
        .query_row(
            "SELECT outcome, option_id, option_kind, decided_by FROM permission_requests WHERE tool_call_id = 'call_2'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap();
    assert_eq!(
        (
            outcome.as_str(),
            option.as_str(),
            kind.as_str(),
            by.as_str()
        ),
        ("selected", "allow", "allow_once", "client")
    );
    let (client, agent, complete): (String, String, bool) = sb
        .conn()
        .query_row(
            "SELECT client_info, agent_info, complete FROM connections",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert!(
        client.contains("sdk-client") && agent.contains("sdk-agent"),
        "{client} {agent}"
    );
    assert!(complete);
    assert_eq!(
        sb.count("SELECT count(*) FROM prompt_turns WHERE stop_reason = 'end_turn'"),
        1
    );
    // The SDK numbers requests with UUID strings: every response found its request.
    assert_eq!(
        sb.count("SELECT count(*) FROM messages WHERE kind = 'response' AND reply_to_seq IS NULL"),
        0
    );
}

#[test]
fn sdk_client_rejection_is_recorded_as_the_clients_decision() {
    let (sb, summary) = session_through_proxy(&["--reject"]);
    assert_eq!(summary["toolCalls"]["call_2"]["status"], "failed");
    assert_eq!(recorded_tool(&sb, "call_2").2, "failed");
    assert_eq!(
        sb.count("SELECT count(*) FROM permission_requests WHERE option_kind = 'reject_once' AND decided_by = 'client'"),
        1
    );
}
