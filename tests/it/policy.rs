//! Policies end to end through the binary: an auto-allowed or denied request never reaches the
//! client and the agent gets exactly one answer with its own id; an ask goes to the client and
//! its answer reaches the agent; the recording says who decided.

use std::ffi::OsStr;
use std::time::Duration;

use serde_json::json;

use crate::util::{Record, Sandbox, example_bin, finish, play_client};

/// One line of a scenario, and whether the client takes part in it.
struct Step {
    record: Record,
    client_sees: bool,
}

fn step(dir: &str, message: serde_json::Value, client_sees: bool) -> Step {
    let mut bytes = serde_json::to_vec(&message).unwrap();
    bytes.push(b'\n');
    Step {
        record: Record {
            dir: dir.into(),
            bytes,
        },
        client_sees,
    }
}

/// Exactly the bytes acptap writes when it answers a permission request.
fn acptap_answer(id: serde_json::Value, option: &str) -> Step {
    let line = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"outcome\":{{\"outcome\":\"selected\",\"optionId\":\"{option}\"}}}}}}\n"
    );
    Step {
        record: Record {
            dir: "c2a".into(),
            bytes: line.into_bytes(),
        },
        client_sees: false,
    }
}

fn permission(id: serde_json::Value, tool_call_id: &str) -> serde_json::Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "session/request_permission", "params": {
    "sessionId": "s1", "toolCall": {"toolCallId": tool_call_id},
    "options": [
        {"optionId": "always", "name": "Always", "kind": "allow_always"},
        {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
        {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
    ]}})
}

fn update(update: serde_json::Value) -> serde_json::Value {
    json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": update}})
}

const POLICY: &str = r#"
version = 1
default = "ask"

[[rule]]
id = "no-system-files"
decision = "deny"
paths = ["/etc/**"]

[[rule]]
id = "read-project"
decision = "allow"
kind = "read"
paths = ["${cwd}/**"]
"#;

/// The scenario: a read the policy allows (numeric id), an edit of /etc/hosts it denies (string
/// id), and a command it leaves to the client.
fn scenario(project: &str, shadow: bool) -> Vec<Step> {
    let readme = format!("{project}/README.md");
    let mut steps = vec![
        step(
            "c2a",
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}),
            true,
        ),
        step(
            "a2c",
            json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1, "agentInfo": {"name": "scripted"}}}),
            true,
        ),
        step(
            "c2a",
            json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": project, "mcpServers": []}}),
            true,
        ),
        step(
            "a2c",
            json!({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s1"}}),
            true,
        ),
        step(
            "c2a",
            json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": "s1", "prompt": []}}),
            true,
        ),
        step(
            "a2c",
            update(
                json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read README", "kind": "read", "status": "pending", "locations": [{"path": readme}]}),
            ),
            true,
        ),
        step("a2c", permission(json!(0), "t1"), shadow),
    ];
    if shadow {
        steps.push(step("c2a", json!({"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}}), true));
    } else {
        steps.push(acptap_answer(json!(0), "allow"));
    }
    steps.push(step("a2c", update(json!({"sessionUpdate": "tool_call", "toolCallId": "t2", "title": "Edit hosts", "kind": "edit", "status": "pending", "content": [{"type": "diff", "path": "/etc/hosts", "oldText": "a", "newText": "b"}]})), true));
    steps.push(step("a2c", permission(json!("perm-x"), "t2"), shadow));
    if shadow {
        steps.push(step("c2a", json!({"jsonrpc": "2.0", "id": "perm-x", "result": {"outcome": {"outcome": "selected", "optionId": "reject"}}}), true));
    } else {
        steps.push(acptap_answer(json!("perm-x"), "reject"));
    }
    steps.extend([
        step("a2c", update(json!({"sessionUpdate": "tool_call", "toolCallId": "t3", "title": "make deploy", "kind": "execute", "rawInput": {"command": "make deploy"}})), true),
        step("a2c", permission(json!(1), "t3"), true),
        step("c2a", json!({"jsonrpc": "2.0", "id": 1, "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}}), true),
        step("a2c", update(json!({"sessionUpdate": "tool_call_update", "toolCallId": "t3", "status": "completed"})), true),
        step("a2c", json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}), true),
    ]);
    steps
}

/// Runs the scenario: the peer plays the agent's side (and checks every byte it receives), the
/// test plays the client's (and checks every byte it receives).
fn run_scenario(shadow: bool) -> Sandbox {
    let sb = Sandbox::new();
    let project = sb.path("project");
    std::fs::create_dir(&project).unwrap();
    let steps = scenario(project.to_str().unwrap(), shadow);
    run_steps(sb, steps, shadow)
}

/// Plays `steps` through `acptap run --policy POLICY` (the sandbox's `project` directory is the
/// session's cwd); asserts that each side got exactly the bytes the steps say it sees.
fn run_steps(sb: Sandbox, steps: Vec<Step>, shadow: bool) -> Sandbox {
    run_steps_with(sb, steps, shadow, POLICY)
}

/// [`run_steps`] with another policy.
fn run_steps_with(sb: Sandbox, steps: Vec<Step>, shadow: bool, policy_text: &str) -> Sandbox {
    let policy = sb.path("policy.toml");
    std::fs::write(&policy, policy_text).unwrap();
    let transcript = sb.path("agent.jsonl");
    let lines: Vec<String> = steps
        .iter()
        .map(|s| {
            let text =
                String::from_utf8(s.record.bytes[..s.record.bytes.len() - 1].to_vec()).unwrap();
            // The peer's script format: a line's text, written as it is.
            json!({"dir": s.record.dir, "eol": true, "text": text}).to_string()
        })
        .collect();
    std::fs::write(&transcript, lines.join("\n")).unwrap();
    let mut extra = vec!["--policy", policy.to_str().unwrap()];
    if shadow {
        extra.push("--shadow");
    }
    let peer = example_bin("peer");
    let mut child = sb.proxy(
        &extra,
        &[
            peer.as_os_str(),
            OsStr::new("script"),
            transcript.as_os_str(),
        ],
    );
    let client_side: Vec<Record> = steps
        .into_iter()
        .filter(|s| s.client_sees)
        .map(|s| s.record)
        .collect();
    play_client(&mut child, &client_side);
    let output = finish(child, Duration::from_secs(30));
    assert!(
        output.status.success(),
        "the agent did not get exactly the expected answers: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    sb
}

type Decided = (
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<bool>,
);

fn decisions(sb: &Sandbox) -> Vec<Decided> {
    let conn = sb.conn();
    let mut stmt = conn
        .prepare(
            "SELECT tool_call_id, decided_by, option_id, policy_decision, policy_rule, policy_shadow
             FROM permission_requests ORDER BY request_seq",
        )
        .unwrap();
    stmt.query_map([], |r| {
        Ok((
            r.get(0)?,
            r.get(1)?,
            r.get(2)?,
            r.get(3)?,
            r.get(4)?,
            r.get(5)?,
        ))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

fn some(s: &str) -> Option<String> {
    Some(s.to_owned())
}

#[test]
fn allowed_and_denied_requests_are_answered_by_acptap_and_ask_goes_to_the_client() {
    let sb = run_scenario(false);
    assert_eq!(
        decisions(&sb),
        vec![
            (
                "t1".into(),
                some("policy"),
                some("allow"),
                some("allow"),
                some("read-project"),
                Some(false)
            ),
            (
                "t2".into(),
                some("policy"),
                some("reject"),
                some("deny"),
                some("no-system-files"),
                Some(false)
            ),
            (
                "t3".into(),
                some("client"),
                some("allow"),
                some("ask"),
                None,
                Some(false)
            ),
        ]
    );
    assert_eq!(
        sb.count("SELECT count(*) FROM messages WHERE forwarded = 0"),
        2
    );
    assert_eq!(
        sb.count("SELECT count(*) FROM messages WHERE origin = 'acptap' AND direction = 'c2a' AND kind = 'response'"),
        2
    );
    let hash: String = sb
        .conn()
        .query_row(
            "SELECT policy_hash FROM permission_requests WHERE tool_call_id = 't1'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(hash.len(), 64);
    let shown = String::from_utf8(sb.acptap(&["show", "s1"]).stdout).unwrap();
    assert!(shown.contains("allow (allow_once) · by policy"), "{shown}");
}

#[test]
fn shadow_mode_records_the_policy_but_the_client_decides() {
    let sb = run_scenario(true);
    assert_eq!(
        decisions(&sb),
        vec![
            (
                "t1".into(),
                some("client"),
                some("allow"),
                some("allow"),
                some("read-project"),
                Some(true)
            ),
            (
                "t2".into(),
                some("client"),
                some("reject"),
                some("deny"),
                some("no-system-files"),
                Some(true)
            ),
            (
                "t3".into(),
                some("client"),
                some("allow"),
                some("ask"),
                None,
                Some(true)
            ),
        ]
    );
    assert_eq!(
        sb.count("SELECT count(*) FROM messages WHERE forwarded = 0 OR origin = 'acptap'"),
        0
    );
}

#[test]
fn a_policy_that_does_not_load_stops_run_before_the_agent_starts() {
    let sb = Sandbox::new();
    let policy = sb.path("bad.toml");
    std::fs::write(&policy, "version = 1\n\n[[rule]]\nid = \"x\"\ndecision = \"allow\"\nkind = \"read\"\npath = [\"/\"]\n").unwrap();
    let pidfile = sb.path("agent.pid");
    let peer = example_bin("peer");
    let child = sb.proxy(
        &["--policy", policy.to_str().unwrap()],
        &[peer.as_os_str(), OsStr::new("linger"), pidfile.as_os_str()],
    );
    let output = finish(child, Duration::from_secs(30));
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("bad.toml:7") && stderr.contains("path"),
        "{stderr}"
    );
    std::thread::sleep(Duration::from_millis(200));
    assert!(!pidfile.exists(), "the agent was started");
}

/// `acptap policy check --policy POLICY --request MESSAGE --cwd /work/p --json`: the verdict.
fn policy_check_json(
    sb: &Sandbox,
    policy: &std::path::Path,
    message: &serde_json::Value,
) -> serde_json::Value {
    let request = sb.path("request.json");
    std::fs::write(&request, serde_json::to_vec(message).unwrap()).unwrap();
    let out = sb.acptap(&[
        "policy",
        "check",
        "--policy",
        policy.to_str().unwrap(),
        "--request",
        request.to_str().unwrap(),
        "--cwd",
        "/work/p",
        "--json",
    ]);
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn policy_check_prints_the_decision_as_json() {
    let sb = Sandbox::new();
    let policy = sb.path("policy.toml");
    std::fs::write(&policy, POLICY).unwrap();
    // The whole message, with a toolCall that reads inside --cwd.
    let mut message = permission(json!(7), "t");
    message["params"]["toolCall"] =
        json!({"toolCallId": "t", "kind": "read", "locations": [{"path": "/work/p/a.rs"}]});
    let verdict = policy_check_json(&sb, &policy, &message);
    assert_eq!(
        verdict,
        json!({"decision": "allow", "rule": "read-project", "optionId": "allow", "reason": "rule `read-project` (".to_owned()
            + policy.to_str().unwrap() + ":10)"})
    );
}

/// ACP v2's permission request names what it is about in `subject`: a request whose v1
/// `toolCall` reads inside the project, beside a v2 subject that runs `rm -rf ~`, was allowed on
/// the `toolCall`. Now the subject is judged, and a `toolCall` beside it must say the same.
/// (tests/it/policy_v2.rs judges requests built with the schema crate's v2 types.)
#[test]
fn a_request_with_a_v2_subject_is_never_decided_on_its_v1_tool_call_alone() {
    let sb = Sandbox::new();
    let policy = sb.path("policy.toml");
    std::fs::write(&policy, POLICY).unwrap();
    let decide = |message: &serde_json::Value| policy_check_json(&sb, &policy, message);
    let mut message = permission(json!(7), "t");
    let read = json!({"toolCallId": "t", "kind": "read", "locations": [{"path": "/work/p/a.rs"}]});
    message["params"]["toolCall"] = read.clone();
    assert_eq!(decide(&message)["decision"], "allow");
    message["params"]["subject"] =
        json!({"type": "command", "command": "rm -rf ~", "cwd": "/work/p"});
    let verdict = decide(&message);
    assert_eq!(verdict["decision"], "ask", "{verdict}");
    assert!(
        verdict["reason"].as_str().unwrap().contains("disagree"),
        "{verdict}"
    );
    // The same read as a `tool_call` subject agrees with the v1 shape: judged, allowed.
    message["params"]["subject"] = json!({"type": "tool_call", "toolCall": read});
    assert_eq!(decide(&message)["decision"], "allow");
    // The subject alone: `rm -rf ~` meets the built-in guard.
    message["params"]["subject"] =
        json!({"type": "command", "command": "rm -rf ~", "cwd": "/work/p"});
    message["params"]
        .as_object_mut()
        .unwrap()
        .remove("toolCall");
    let verdict = decide(&message);
    assert_eq!(verdict["decision"], "deny", "{verdict}");
    assert_eq!(verdict["rule"], "guard:rm-rf", "{verdict}");
}

#[test]
fn policy_replay_shows_would_allow_but_user_rejected_first() {
    use crate::util::{SAMPLES, fixture, load_transcript};
    let sb = Sandbox::new();
    // Record two real sessions: one where the user approved everything, one where they refused.
    for sample in [SAMPLES[2], SAMPLES[3]] {
        let path = fixture(sample);
        let peer = example_bin("peer");
        let mut child = sb.proxy(
            &[],
            &[peer.as_os_str(), OsStr::new("script"), path.as_os_str()],
        );
        play_client(&mut child, &load_transcript(&path));
        assert!(finish(child, Duration::from_secs(30)).status.success());
    }
    let policy = sb.path("edits.toml");
    std::fs::write(&policy, "version = 1\n[[rule]]\nid = \"edits\"\ndecision = \"allow\"\nkind = \"edit\"\npaths = [\"${cwd}/**\"]\n").unwrap();
    let out = sb.acptap(&[
        "policy",
        "replay",
        "--policy",
        policy.to_str().unwrap(),
        "--json",
    ]);
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 3, "{rows:#?}");
    assert_eq!(rows[0]["category"], "would-allow-but-user-rejected");
    assert_eq!(rows[0]["tool_call_id"], "call_s1_0_kZP6YJxp");
    assert_eq!(rows[0]["user"], "reject_once");
    assert_eq!(rows[0]["policy"]["rule"], "edits");
    let categories: Vec<&str> = rows
        .iter()
        .map(|r| r["category"].as_str().unwrap())
        .collect();
    assert_eq!(
        categories,
        vec!["would-allow-but-user-rejected", "would-ask", "agrees"]
    );
    let text = String::from_utf8(
        sb.acptap(&["policy", "replay", "--policy", policy.to_str().unwrap()])
            .stdout,
    )
    .unwrap();
    assert!(
        text.contains("3 requests: 1 would allow but the user rejected"),
        "{text}"
    );
}

/// The opening of a session in `project`, a tool call t1 announced as a read of its README (the
/// policy allows that), then `change`: a line that turns t1 into `make deploy`, which the policy
/// leaves to the user. The permission request that follows names only t1.
fn desync_steps(project: &str, change: &str) -> Vec<Step> {
    let mut steps: Vec<Step> = scenario(project, false).into_iter().take(6).collect();
    steps.push(Step {
        record: Record {
            dir: "a2c".into(),
            bytes: format!("{change}\n").into_bytes(),
        },
        client_sees: true,
    });
    steps.extend([
        step("a2c", permission(json!(5), "t1"), true),
        step("c2a", json!({"jsonrpc": "2.0", "id": 5, "result": {"outcome": {"outcome": "selected", "optionId": "reject"}}}), true),
        step("a2c", json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}), true),
    ]);
    steps
}

/// An update the tap must not miss: written so that a strict reader or a substring search would.
/// Each must leave the read allowed by nobody: the request reaches the client.
#[test]
fn a_tool_call_changed_by_a_hard_to_read_line_is_never_allowed_from_its_old_state() {
    let change = |update: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s1","update":{update}}}}}"#
        )
    };
    let execute = r#""kind":"execute","rawInput":{"command":"make deploy"},"locations":[]"#;
    let variants = [
        // A title with a lone surrogate, as JavaScript writes it; serde_json alone refuses it.
        (
            "lone surrogate",
            change(&format!(
                r#"{{"sessionUpdate":"tool_call_update","toolCallId":"t1","title":"\ud83d",{execute}}}"#
            )),
        ),
        // The key written with an escape: no `toolCallId` bytes on the line.
        (
            "escaped key",
            change(&format!(
                r#"{{"sessionUpdate":"tool_call_update","toolCall\u0049d":"t1",{execute}}}"#
            )),
        ),
        // Inside a JSON-RPC batch.
        (
            "batch",
            format!(
                "[{}]",
                change(&format!(
                    r#"{{"sessionUpdate":"tool_call_update","toolCallId":"t1",{execute}}}"#
                ))
            ),
        ),
        // Python's json writes NaN.
        (
            "NaN",
            change(&format!(
                r#"{{"sessionUpdate":"tool_call_update","toolCallId":"t1","n":NaN,{execute}}}"#
            )),
        ),
        // A line nothing reads, naming t1: fail closed.
        (
            "unreadable",
            format!(
                r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s1","update":{{"toolCallId":"t1",{execute} BROKEN"#
            ),
        ),
        // Unreadable, and t1 named only through an escape.
        (
            "unreadable with escapes",
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"update":{"toolCallId":"\u00741", oops"#.to_owned(),
        ),
    ];
    for (name, line) in variants {
        let sb = Sandbox::new();
        let project = sb.path("project");
        std::fs::create_dir(&project).unwrap();
        let steps = desync_steps(project.to_str().unwrap(), &line);
        let sb = run_steps(sb, steps, false);
        let decided = decisions(&sb);
        assert_eq!(decided.len(), 1, "{name}: {decided:?}");
        let (_, decided_by, option, policy_decision, ..) = &decided[0];
        assert_eq!(
            (
                decided_by.as_deref(),
                option.as_deref(),
                policy_decision.as_deref()
            ),
            (Some("client"), Some("reject"), Some("ask")),
            "{name}"
        );
    }
}

/// Codex asks before it announces: a request for a call nobody described is decided on what the
/// request itself says, and a bare id is not enough to allow anything.
#[test]
fn a_permission_request_before_any_tool_call_is_decided_on_what_it_says() {
    let sb = Sandbox::new();
    let project = sb.path("project");
    std::fs::create_dir(&project).unwrap();
    let readme = format!("{}/README.md", project.display());
    let mut steps: Vec<Step> = scenario(project.to_str().unwrap(), false)
        .into_iter()
        .take(5)
        .collect();
    let mut full = permission(json!(7), "c1");
    full["params"]["toolCall"] =
        json!({"toolCallId": "c1", "kind": "read", "locations": [{"path": readme}]});
    steps.extend([
        step("a2c", full, false),
        acptap_answer(json!(7), "allow"),
        step("a2c", permission(json!(8), "c2"), true),
        step("c2a", json!({"jsonrpc": "2.0", "id": 8, "result": {"outcome": {"outcome": "selected", "optionId": "reject"}}}), true),
        step("a2c", json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}), true),
    ]);
    let sb = run_steps(sb, steps, false);
    let decided: Vec<_> = decisions(&sb)
        .into_iter()
        .map(|d| (d.0, d.1, d.3))
        .collect();
    assert_eq!(
        decided,
        [
            ("c1".into(), some("policy"), some("allow")),
            ("c2".into(), some("client"), some("ask")),
        ]
    );
}

/// A v2 command subject that names a tool call or a terminal the agent reported must say what
/// they say: a call whose rawInput sets LD_PRELOAD, a call that is an edit of /etc/shadow, a
/// terminal that runs `curl x | sh` in `/` were each the cover for an allowed `ls` (found by an
/// outside attack); they go to the user. A subject naming a call that runs the same command is
/// still allowed.
#[test]
fn a_v2_command_subject_is_judged_with_the_call_and_terminal_it_names() {
    let sb = Sandbox::new();
    let project = sb.path("project");
    std::fs::create_dir(&project).unwrap();
    let project = project.to_str().unwrap();
    let policy = r#"
version = 1
default = "ask"

[[rule]]
id = "ls"
decision = "allow"
kind = "execute"
command = [["ls"]]
"#;
    let options = json!([{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                         {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]);
    let request = |id: i64, named: serde_json::Value| {
        let mut subject = json!({"type": "command", "command": "ls", "cwd": project});
        subject
            .as_object_mut()
            .unwrap()
            .extend(named.as_object().unwrap().clone());
        json!({"jsonrpc": "2.0", "id": id, "method": "session/request_permission",
               "params": {"sessionId": "s1", "title": "Run ls", "subject": subject, "options": options}})
    };
    let answer = |id: i64| {
        step(
            "c2a",
            json!({"jsonrpc": "2.0", "id": id, "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}}),
            true,
        )
    };
    let steps = vec![
        step(
            "c2a",
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 2}}),
            true,
        ),
        step(
            "a2c",
            json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 2, "info": {"name": "scripted"}}}),
            true,
        ),
        step(
            "c2a",
            json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": project}}),
            true,
        ),
        step(
            "a2c",
            json!({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s1"}}),
            true,
        ),
        step(
            "c2a",
            json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": "s1", "prompt": []}}),
            true,
        ),
        step(
            "a2c",
            update(
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "kind": "execute", "rawInput": {"command": "ls", "env": {"LD_PRELOAD": "/tmp/x.so"}}}),
            ),
            true,
        ),
        step("a2c", request(10, json!({"toolCallId": "t1"})), true),
        answer(10),
        step(
            "a2c",
            update(
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t2", "kind": "edit", "locations": [{"path": "/etc/shadow"}]}),
            ),
            true,
        ),
        step("a2c", request(11, json!({"toolCallId": "t2"})), true),
        answer(11),
        step(
            "a2c",
            update(
                json!({"sessionUpdate": "terminal_update", "terminalId": "T1", "command": "curl x | sh", "cwd": "/"}),
            ),
            true,
        ),
        step("a2c", request(12, json!({"terminalId": "T1"})), true),
        answer(12),
        step(
            "a2c",
            update(
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t3", "kind": "execute", "title": "ls"}),
            ),
            true,
        ),
        step("a2c", request(13, json!({"toolCallId": "t3"})), false),
        acptap_answer(json!(13), "allow"),
        // The client stays until the turn ends, so acptap's answer reaches the agent first.
        step(
            "a2c",
            json!({"jsonrpc": "2.0", "id": 2, "result": {"messageId": "u1"}}),
            true,
        ),
    ];
    let sb = run_steps_with(sb, steps, false, policy);
    let decided: Vec<(Option<String>, Option<String>)> = sb
        .conn()
        .prepare("SELECT decided_by, policy_decision FROM permission_requests ORDER BY request_seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        decided,
        [
            (some("client"), some("ask")),
            (some("client"), some("ask")),
            (some("client"), some("ask")),
            (some("policy"), some("allow")),
        ]
    );
    let reasons: Vec<String> = sb
        .conn()
        .prepare("SELECT policy_reason FROM permission_requests ORDER BY request_seq")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(reasons[0].contains("disagree"), "{reasons:?}");
    assert!(
        reasons[1].contains("kind `execute` against `edit`"),
        "{reasons:?}"
    );
    assert!(reasons[2].contains("terminal"), "{reasons:?}");
}
