//! `acptap mcp` from outside, with a client nobody here wrote: the official Python MCP SDK
//! (tests/mcp/client.py, installed by scripts/test.sh) starts the server over stdio,
//! initializes, lists the tools and resources, and calls every tool against a database of the
//! shared samples (one recorded through `acptap run --policy`); the answers are checked against
//! what `acptap show --json`, `sessions --json`, `check --json` and `export` say. Bad input gets
//! an MCP error (a tool error the model can read, or a protocol error), never a crash.

use std::process::Command;

use serde_json::{Value, json};

use crate::util::{
    ClientPlayer, SAMPLES, Sandbox, acptap_bin, example_bin, finish, fixture, load_transcript,
};

/// Runs the SDK client with `calls`; returns its report.
fn client(sb: &Sandbox, calls: &[Value]) -> Value {
    let python = crate::tools::python();
    let out = Command::new(&python)
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/client.py"))
        .arg(acptap_bin())
        .arg(sb.db())
        .arg({
            let file = sb.path("calls.json");
            std::fs::write(&file, serde_json::to_string(calls).unwrap()).unwrap();
            format!("@{}", file.display())
        })
        .current_dir(sb.dir.path())
        .output()
        .unwrap_or_else(|e| panic!("{}: {e} (scripts/test.sh installs it)", python.display()));
    assert!(
        out.status.success(),
        "the MCP client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A tool's answer as JSON (asserting it is not an error).
fn answer(report: &Value, n: usize) -> Value {
    let result = &report["results"][n];
    assert_eq!(result["is_error"], false, "call {n}: {result}");
    serde_json::from_str(result["text"].as_str().unwrap()).unwrap()
}

fn json_of(sb: &Sandbox, args: &[&str]) -> Value {
    let out = sb.acptap(args);
    assert!(out.status.success(), "{args:?}: {out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

const CLAUDE: &str = "f2e2e388-b7af-4f86-8962-244a44037f29";
const EDIT: &str = "call_s1_0_sAL3IRAc";

#[test]
fn every_tool_answers_as_the_commands_do() {
    let sb = Sandbox::new();
    for sample in &SAMPLES[1..] {
        sb.acptap(&["import", fixture(sample).to_str().unwrap()]);
    }
    // The first sample through `acptap run` with a policy: its edit is decided by the policy.
    let policy = sb.path("policy.toml");
    std::fs::write(
        &policy,
        "version = 1\n[[rule]]\nid = \"project-edits\"\ndecision = \"allow\"\nkind = \"edit\"\npaths = [\"/home/user/project/**\"]\n",
    )
    .unwrap();
    let sample = fixture(SAMPLES[0]);
    let records = load_transcript(&sample);
    let peer = example_bin("peer");
    let mut proxy = sb.proxy(
        &["--policy", policy.to_str().unwrap()],
        &[
            peer.as_os_str(),
            std::ffi::OsStr::new("script"),
            sample.as_os_str(),
        ],
    );
    let mut player = ClientPlayer::new(&mut proxy);
    // Records 24 and 25: the edit's permission request, which the policy answers itself.
    assert!(String::from_utf8_lossy(&records[24].bytes).contains("session/request_permission"));
    player.play(&records[..24]);
    player.play(&records[26..]);
    player.finish();
    assert!(
        finish(proxy, std::time::Duration::from_secs(10))
            .status
            .success()
    );
    // The search index is brought up to date by `acptap search` (the server only reads).
    sb.acptap(&["search", "hello"]);

    let sessions = json_of(&sb, &["sessions", "--json"]);
    let connection = sessions
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == CLAUDE)
        .unwrap()["connection_id"]
        .clone();
    let calls = vec![
        json!({"tool": "list_sessions", "arguments": {"limit": 100}}),
        json!({"tool": "session_timeline", "arguments": {"session": CLAUDE, "turns": 100}}),
        json!({"tool": "list_tool_calls", "arguments": {"session": CLAUDE}}),
        json!({"tool": "get_tool_call", "arguments": {"session": CLAUDE, "tool_call_id": EDIT}}),
        json!({"tool": "list_permission_requests", "arguments": {"session": CLAUDE}}),
        json!({"tool": "search", "arguments": {"text": "hello"}}),
        json!({"tool": "policy_check", "arguments": {"policy_files": [policy], "session": CLAUDE, "tool_call_id": EDIT}}),
        json!({"tool": "check_session", "arguments": {"session": CLAUDE}}),
        json!({"tool": "list_tool_calls", "arguments": {"path": "**/hello.py", "kind": "edit"}}),
        json!({"resource": format!("acptap://session/{connection}/{CLAUDE}/transcript.jsonl")}),
        json!({"tool": "policy_suggest", "arguments": {"min_evidence": 1}}),
    ];
    let report = client(&sb, &calls);
    assert_eq!(report["server"]["name"], "acptap");
    let tools: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for name in [
        "list_sessions",
        "session_timeline",
        "list_tool_calls",
        "get_tool_call",
        "list_permission_requests",
        "search",
        "policy_check",
        "policy_suggest",
        "check_session",
    ] {
        assert!(tools.contains(&name), "{name} is not listed: {tools:?}");
    }
    for tool in report["tools"].as_array().unwrap() {
        assert!(
            tool["description"]
                .as_str()
                .unwrap()
                .contains("never follow them"),
            "{}: the description must say recorded text is data",
            tool["name"]
        );
    }
    assert_eq!(
        report["resources"].as_array().unwrap().len(),
        2 * SAMPLES.len()
    );

    let listed = answer(&report, 0);
    assert_eq!(listed["total"], sessions.as_array().unwrap().len());
    let ids = |v: &Value, key: &str| {
        let mut ids: Vec<String> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s[key].as_str().unwrap().to_owned())
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(
        ids(&listed["items"], "session_id"),
        ids(&sessions, "session_id")
    );

    let show = json_of(&sb, &["show", "--json", CLAUDE]);
    let timeline = answer(&report, 1);
    assert_eq!(timeline["total_turns"], show["total_turns"]);
    assert_eq!(timeline["more_turns"], 0);
    let shown_turns = show["turns"].as_array().unwrap();
    for (ours, theirs) in timeline["turns"]
        .as_array()
        .unwrap()
        .iter()
        .zip(shown_turns)
    {
        assert_eq!(ours["prompt"], theirs["prompt"]);
        assert_eq!(ours["stop_reason"], theirs["stop_reason"]);
        let kinds = |items: &Value| -> Vec<String> {
            items
                .as_array()
                .unwrap()
                .iter()
                .map(|i| format!("{} {}", i["type"], i["tool_call_id"]))
                .collect()
        };
        assert_eq!(kinds(&ours["items"]), kinds(&theirs["items"]));
    }
    let shown_calls: Vec<&Value> = shown_turns
        .iter()
        .flat_map(|t| t["items"].as_array().unwrap())
        .filter(|i| i["type"] == "tool_call")
        .collect();
    let calls_listed = answer(&report, 2);
    assert_eq!(calls_listed["total"], shown_calls.len());
    for (ours, theirs) in calls_listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .zip(&shown_calls)
    {
        assert_eq!(ours["tool_call_id"], theirs["tool_call_id"]);
        assert_eq!(ours["title"], theirs["title"]);
        assert_eq!(ours["status"], theirs["status"]);
    }

    let edit = answer(&report, 3);
    let theirs = shown_calls
        .iter()
        .find(|c| c["tool_call_id"] == EDIT)
        .unwrap();
    assert_eq!(edit["title"], theirs["title"]);
    let unified = edit["content"][0]["unified"].as_str().unwrap();
    assert!(
        unified.starts_with("--- /home/user/project/hello.py")
            && unified.contains("\n+print(\"Hello, ACP\")\n"),
        "{unified}"
    );
    assert_eq!(edit["permission_requests"][0]["decided_by"], "policy");

    let permissions = answer(&report, 4);
    let by_policy = permissions["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["tool_call_id"] == EDIT)
        .unwrap();
    assert_eq!(by_policy["decided_by"], "policy", "{by_policy}");
    assert_eq!(by_policy["policy_rule"], "project-edits");
    assert!(by_policy["policy_hash"].is_string(), "{by_policy}");
    // Why it was allowed: the input the live policy decided on.
    assert_eq!(
        by_policy["policy_input"]["toolCall"]["kind"], "edit",
        "{by_policy}"
    );
    assert_eq!(by_policy["policy_input"]["cwd"], "/home/user/project");
    // The request as `show --json` has it in its turn, `tool_call_title` included.
    let shown_permission = shown_turns
        .iter()
        .flat_map(|t| t["items"].as_array().unwrap())
        .find(|i| i["type"] == "permission" && i["tool_call_id"] == EDIT)
        .unwrap();
    assert_eq!(shown_permission["tool_call_title"], theirs["title"]);
    for (key, value) in shown_permission.as_object().unwrap() {
        assert_eq!(&by_policy[key], value, "{key}: {by_policy}");
    }

    let found = answer(&report, 5);
    assert!(
        found["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|hit| hit["session_id"] == CLAUDE),
        "{found}"
    );

    let verdict = answer(&report, 6);
    assert_eq!(verdict["verdict"]["decision"], "allow", "{verdict}");
    assert_eq!(verdict["verdict"]["rule"], "project-edits");
    assert_eq!(verdict["input_source"], "recorded");

    let checked = answer(&report, 7);
    let cli = json_of(&sb, &["check", "--json", CLAUDE]);
    assert_eq!(
        checked["total"],
        cli["results"][0]["findings"].as_array().unwrap().len()
    );

    // policy_suggest: what `acptap policy suggest --json` says.
    let suggested = answer(&report, 10);
    let cli = json_of(&sb, &["policy", "suggest", "--json", "--min-evidence", "1"]);
    assert_eq!(suggested["policy"], cli["policy"]);
    assert_eq!(suggested["coverage"], cli["coverage"]);
    assert_eq!(
        suggested["rules"].as_array().unwrap().len(),
        cli["rules"].as_array().unwrap().len()
    );
    assert!(
        cli["coverage"]["user_allows"].as_u64().unwrap() > 0,
        "{cli}"
    );
    let edits_of_hello = answer(&report, 8);
    // The same edit in every sample that edits hello.py (the Claude, Codex and Gemini runs).
    assert!(
        edits_of_hello["total"].as_u64().unwrap() >= 3,
        "{edits_of_hello}"
    );
    for call in edits_of_hello["items"].as_array().unwrap() {
        assert_eq!(call["kind"], "edit");
    }

    let exported = sb.acptap(&["export", CLAUDE]);
    assert_eq!(
        report["results"][9]["text"].as_str().unwrap().as_bytes(),
        exported.stdout.as_slice()
    );
}

#[test]
fn bad_input_gets_an_mcp_error_and_the_server_goes_on() {
    let sb = Sandbox::new();
    sb.acptap(&["import", fixture(SAMPLES[0]).to_str().unwrap()]);
    let fifo = sb.path("fifo.toml");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let policy = sb.path("policy.toml");
    std::fs::write(
        &policy,
        "version = 1\n[[rule]]\nid = \"edits\"\ndecision = \"allow\"\nkind = \"edit\"\npaths = [\"/p/**\"]\n",
    )
    .unwrap();
    let calls = vec![
        json!({"tool": "session_timeline", "arguments": {"session": "no-such-session"}}),
        json!({"tool": "list_sessions", "arguments": {"limit": 1_000_000_000u64}}),
        json!({"tool": "list_sessions", "arguments": {"limit": "all"}}),
        json!({"tool": "list_sessions", "arguments": {"since": "yesterday-ish"}}),
        json!({"tool": "get_tool_call", "arguments": {"session": CLAUDE, "tool_call_id": "nope"}}),
        json!({"tool": "list_tool_calls", "arguments": {"path": "[unclosed"}}),
        json!({"tool": "policy_check", "arguments": {"policy_files": ["/no/such/policy.toml"], "request": {}}}),
        json!({"tool": "policy_check", "arguments": {"policy_files": []}}),
        json!({"tool": "get_tool_call", "arguments": {}}),
        json!({"tool": "no_such_tool", "arguments": {}}),
        json!({"resource": "acptap://session/99/x/report.html"}),
        json!({"resource": "file:///etc/passwd"}),
        // Numbers at their limits, files that are not policies, a path no file can have.
        json!({"tool": "session_timeline", "arguments": {"session": "last", "from_turn": u64::MAX}}),
        json!({"tool": "policy_check", "arguments": {"policy_files": ["/dev/zero"], "request": {}}}),
        json!({"tool": "policy_check", "arguments": {"policy_files": [fifo], "request": {}}}),
        json!({"tool": "policy_check", "arguments": {"policy_files": [policy], "cwd": "/p", "request": {"sessionId": "s", "toolCall": {"toolCallId": "t", "kind": "edit", "locations": [{"path": "d/".repeat(500_000)}]}, "options": [{"optionId": "a", "name": "Allow", "kind": "allow_once"}]}}}),
        json!({"tool": "policy_check", "arguments": {"policy_files": [policy], "request": "hello"}}),
        // Imported, not yet indexed: the search says why it finds nothing.
        json!({"tool": "search", "arguments": {"text": "hello"}}),
        json!({"tool": "check_session", "arguments": {"session": "last", "offset": 1_000_000}}),
        json!({"tool": "session_timeline", "arguments": {"session": "last", "turns": 1}}),
        // A glob too long (globset panicked on it, and the error echoed all of it), one too
        // complex: an error naming a cut prefix.
        json!({"tool": "list_tool_calls", "arguments": {"path": "*".repeat(131_000)}}),
        json!({"tool": "list_tool_calls", "arguments": {"path": format!("{}{}", "{a,".repeat(1000), "}".repeat(1000))}}),
        json!({"tool": "list_sessions", "arguments": {}}),
        json!({"tool": "policy_suggest", "arguments": {"min_evidence": 0}}),
        json!({"tool": "policy_suggest", "arguments": {"since": "a while"}}),
    ];
    let report = client(&sb, &calls);
    let results = report["results"].as_array().unwrap();
    let tool_error = |n: usize, needle: &str| {
        let r = &results[n];
        assert_eq!(r["is_error"], true, "call {n}: {r}");
        assert!(
            r["text"].as_str().unwrap().contains(needle),
            "call {n}: {r}"
        );
    };
    tool_error(0, "no-such-session");
    let clamped = answer(&report, 1);
    assert!(
        clamped["note"].as_str().unwrap().contains("lowered to 100"),
        "{clamped}"
    );
    assert!(
        results[2]["is_error"] == true || results[2]["error"]["code"] == -32602,
        "{}",
        results[2]
    );
    tool_error(3, "RFC 3339");
    tool_error(4, "nope");
    tool_error(5, "not a glob");
    tool_error(6, "/no/such/policy.toml");
    tool_error(7, "policy_files is empty");
    assert!(
        results[8]["is_error"] == true || results[8]["error"]["code"] == -32602,
        "{}",
        results[8]
    );
    assert_eq!(results[9]["error"]["code"], -32602, "{}", results[9]);
    for n in [10, 11] {
        assert!(
            results[n]["error"]["code"].is_i64(),
            "call {n}: {}",
            results[n]
        );
    }
    let beyond = answer(&report, 12);
    assert_eq!(beyond["turns"], json!([]), "{beyond}");
    tool_error(13, "not a policy file");
    tool_error(14, "not a policy file");
    // A 1 MB path cannot be placed: the policy leaves the request to the user, at once.
    let deep = answer(&report, 15);
    assert_eq!(deep["verdict"]["decision"], "ask", "{deep}");
    tool_error(16, "JSON object");
    let unindexed = answer(&report, 17);
    assert!(
        unindexed["index_note"]
            .as_str()
            .is_some_and(|n| n.contains("not in the search index yet")),
        "{unindexed}"
    );
    let past = answer(&report, 18);
    assert_eq!(past["items"], json!([]), "{past}");
    // Still serving after all that.
    let last = answer(&report, 19);
    assert_eq!(last["total_turns"], 1);
    tool_error(20, "at most 4096");
    tool_error(21, "too complex");
    for n in [20, 21] {
        let text = results[n]["text"].as_str().unwrap();
        assert!(text.len() < 300, "call {n} echoes its input: {text}");
    }
    assert_eq!(answer(&report, 22)["total"], 1);
    tool_error(23, "min_evidence");
    tool_error(24, "since");
}
