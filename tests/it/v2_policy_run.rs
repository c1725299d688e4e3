//! The policy on a live v2 connection: the official SDK's v2 client (examples/v2_client.rs) and
//! v2 agent (examples/v2_agent.rs) with `acptap run --policy docs/policies/project.toml` between
//! them. The agent's requests carry v2 subjects; what the policy allows never reaches the client,
//! what it does not reaches it unchanged.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::util::{Sandbox, acptap_bin, example_bin, finish};

/// Runs `v2_client -- acptap run --policy project.toml -- v2_agent --scenario S` in a project
/// directory; returns the client's summary.
fn run_with_policy(sb: &Sandbox, scenario: &str) -> Value {
    let project = sb.path("project");
    std::fs::create_dir_all(project.join("src")).unwrap();
    let summary = sb.path(&format!("summary-{scenario}.json"));
    let policy = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/policies/project.toml");
    let child = Command::new(example_bin("v2_client"))
        .current_dir(&project)
        .arg("--out")
        .arg(&summary)
        .arg("--")
        .arg(acptap_bin())
        .args(["run", "--db"])
        .arg(sb.db())
        .arg("--policy")
        .arg(&policy)
        .arg("--")
        .arg(example_bin("v2_agent"))
        .args(["--scenario", scenario])
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
    serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap()
}

/// (subject type, decided_by, policy decision, policy rule) of each recorded request, in order.
fn recorded_decisions(sb: &Sandbox) -> Vec<(String, String, String, String)> {
    let conn = sb.conn();
    let mut stmt = conn
        .prepare(
            "SELECT coalesce(json_extract(subject, '$.type'), '-'), coalesce(decided_by, '-'),
                    coalesce(policy_decision, '-'), coalesce(policy_rule, '-')
             FROM permission_requests ORDER BY request_seq",
        )
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn a_v2_project_command_and_edit_are_allowed_by_the_policy_on_a_live_connection() {
    let sb = Sandbox::new();
    let summary = run_with_policy(&sb, "default");
    assert_eq!(summary["stopReason"], "end_turn", "{summary:#}");
    // Both requests were answered by acptap: the client saw none of them.
    assert_eq!(
        summary["permissionRequests"].as_array().map(Vec::len),
        Some(0),
        "{summary:#}"
    );
    let decisions = recorded_decisions(&sb);
    assert_eq!(
        decisions
            .iter()
            .map(|(t, by, d, r)| (t.as_str(), by.as_str(), d.as_str(), r.as_str()))
            .collect::<Vec<_>>(),
        [
            ("command", "policy", "allow", "project-checks"),
            ("tool_call", "policy", "allow", "project-edit"),
        ],
        "{decisions:?}"
    );
    // What was judged is recorded: the subject, as an execute call running `cargo test`.
    let judged: String = sb
        .conn()
        .query_row(
            "SELECT policy_input FROM permission_requests ORDER BY request_seq LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let judged: Value = serde_json::from_str(&judged).unwrap();
    assert_eq!(judged["judged"], "subject:command", "{judged}");
    assert_eq!(judged["toolCall"]["rawInput"]["command"], "cargo test");
    // The calls the allowed requests were about completed.
    assert_eq!(summary["toolCalls"]["t1-edit"]["status"], "completed");
}

#[test]
fn hostile_v2_requests_are_never_allowed_on_a_live_connection() {
    let sb = Sandbox::new();
    let summary = run_with_policy(&sb, "hostile");
    let decisions = recorded_decisions(&sb);
    assert!(decisions.len() >= 5, "{decisions:?}");
    for (subject, decided_by, decision, rule) in &decisions {
        assert_ne!(
            decision, "allow",
            "{subject} allowed by {rule}: {decisions:?}"
        );
        // acptap answers only what it denies.
        assert!(
            decided_by != "policy" || decision == "deny",
            "{subject}: {decisions:?}"
        );
    }
    // `rm -rf ~` meets the built-in guard; every other request went to the client.
    let asked = summary["permissionRequests"].as_array().unwrap();
    assert!(asked.len() >= 4, "{summary:#}");
    assert!(
        decisions
            .iter()
            .any(|(t, _, d, r)| t == "command" && d == "deny" && r == "guard:rm-rf"),
        "{decisions:?}"
    );
}
