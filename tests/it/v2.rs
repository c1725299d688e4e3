//! The ACP protocol-v2 test peers (examples/v2_client.rs and examples/v2_agent.rs, both on the
//! official SDK's v2 API) talking to each other directly: before acptap sits between them, the
//! pair must agree on its own.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::util::{Sandbox, example_bin, finish};

#[test]
fn v2_sdk_client_and_agent_talk_directly() {
    let sandbox = Sandbox::new();
    let summary_path = sandbox.path("summary.json");
    let child = Command::new(example_bin("v2_client"))
        .current_dir(sandbox.dir.path())
        .arg("--out")
        .arg(&summary_path)
        .args(["--resume", "--cancel-tool-call", "--cancel-request", "--"])
        .arg(example_bin("v2_agent"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let output = finish(child, Duration::from_secs(60));
    assert!(
        output.status.success(),
        "v2_client failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: Value = serde_json::from_slice(&std::fs::read(&summary_path).unwrap()).unwrap();
    let cwd = std::fs::canonicalize(sandbox.dir.path()).unwrap();
    let under_cwd = |name: &str| json!(cwd.join(name));

    assert_eq!(summary["protocolVersion"], 2, "{summary:#}");
    assert_eq!(summary["stopReason"], "end_turn");
    assert_eq!(summary["userMessageId"], "t1-user");
    assert_eq!(summary["agentExitCode"], 0);

    // M1's chunks said "Looking around..."; its upsert replaced them all.
    assert_eq!(
        summary["agentMessages"],
        json!({
            "t1-m1": "Fixed the off-by-one in src/lib.rs; the tests pass.",
            "t1-m2": "Plan: read, test, edit.",
        })
    );
    assert_eq!(
        summary["agentThoughts"]["t1-thought"],
        "Read the project first, then run the tests."
    );

    let calls = &summary["toolCalls"];
    assert_eq!(calls["t1-read"]["kind"], "read");
    assert_eq!(calls["t1-read"]["status"], "completed");
    assert_eq!(
        calls["t1-read"]["locations"],
        json!([under_cwd("README.md")])
    );
    // A later patch replaced the whole locations array and cleared the raw input.
    assert_eq!(
        calls["t1-search"]["locations"],
        json!([under_cwd("src/lib.rs")])
    );
    assert_eq!(calls["t1-search"]["rawInput"], Value::Null);
    assert_eq!(calls["t1-watch"]["kind"], "_watch");
    assert_eq!(calls["t1-watch"]["status"], "cancelled");
    for id in ["t1-build", "t1-test", "t1-edit"] {
        assert_eq!(calls[id]["status"], "completed", "{id}");
    }

    let requests = summary["permissionRequests"].as_array().unwrap();
    let of_type = |subject: &str| {
        requests
            .iter()
            .find(|request| request["subjectType"] == subject)
            .unwrap_or_else(|| panic!("no {subject} permission request in {requests:#?}"))
    };
    let command = of_type("command");
    assert_eq!(command["command"], "cargo test");
    assert_eq!(command["cwd"], json!(cwd));
    assert_eq!(command["chosenOptionId"], "allow");
    assert_eq!(of_type("tool_call")["toolCallId"], "t1-edit");

    assert_eq!(
        summary["elicitations"],
        json!([{"message": "How should the commit read?", "mode": "form", "action": "accept"}])
    );

    // The resume replayed the turn: the same messages, rebuilt from the replay alone.
    assert!(summary["replayedUpdateCount"].as_u64().unwrap() > 0);
    assert_eq!(summary["replayedAgentMessages"], summary["agentMessages"]);

    assert_eq!(
        summary["toolCallCancel"],
        json!({"toolCallId": "t1-watch", "answer": "ok"})
    );
    // The agent withdraws a prompt cancelled before its admission (-32800); one admitted first
    // is cancelled as a turn instead.
    let cancel = &summary["cancelRequest"];
    assert!(
        (cancel["answer"] == "error" && cancel["code"] == -32800)
            || (cancel["answer"] == "admitted" && cancel["stopReason"] == "cancelled"),
        "{cancel:#}"
    );
}
