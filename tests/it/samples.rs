//! Real traffic (shared/samples, copied to tests/fixtures) through the binary, with a fake peer
//! on each side: the bytes come out identical, and the recording says what the transcript shows.

use crate::util::{SAMPLES, Sandbox, fixture, load_transcript, play_sample};

/// Runs one sample through `acptap run` and returns the sandbox holding its recording.
fn record_sample(name: &str) -> Sandbox {
    let sandbox = Sandbox::new();
    let (output, _) = play_sample(&sandbox, name, &[]);
    let records = load_transcript(&fixture(name));
    assert!(
        output.status.success(),
        "{name}: acptap/peer failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    // Every line recorded once, and each direction's bytes exactly as sent.
    assert_eq!(
        sandbox.count("SELECT count(*) FROM messages WHERE direction != 'stderr'"),
        records.len() as i64,
        "{name}"
    );
    for dir in ["c2a", "a2c"] {
        let sent: Vec<u8> = records
            .iter()
            .filter(|r| r.dir == dir)
            .flat_map(|r| r.bytes.clone())
            .collect();
        assert!(
            sandbox.recorded_stream(1, dir) == sent,
            "{name}: recorded {dir} bytes differ"
        );
    }
    sandbox
}

fn tool(sandbox: &Sandbox, id: &str) -> (String, String, String) {
    sandbox
        .conn()
        .query_row(
            "SELECT kind, status, created_by FROM tool_calls WHERE tool_call_id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap_or_else(|e| panic!("tool call {id}: {e}"))
}

fn permissions(sandbox: &Sandbox) -> Vec<(String, String, String, String, String)> {
    let conn = sandbox.conn();
    let mut stmt = conn
        .prepare(
            "SELECT tool_call_id, outcome, option_id, option_kind, decided_by
             FROM permission_requests ORDER BY request_seq",
        )
        .unwrap();
    stmt.query_map([], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

fn turn(sandbox: &Sandbox) -> (String, bool) {
    sandbox
        .conn()
        .query_row(
            "SELECT stop_reason, cancel_requested_at IS NOT NULL FROM prompt_turns",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap()
}

fn s(x: &str) -> String {
    x.to_owned()
}

#[test]
fn claude_basic_tool_calls_and_permissions() {
    let sb = record_sample(SAMPLES[0]);
    assert_eq!(
        tool(&sb, "call_s0_0_phfrzrRo"),
        (s("read"), s("completed"), s("tool_call"))
    );
    assert_eq!(
        tool(&sb, "call_s0_1_1yYFcVV9"),
        (s("execute"), s("completed"), s("tool_call"))
    );
    assert_eq!(
        tool(&sb, "call_s1_0_sAL3IRAc"),
        (s("edit"), s("completed"), s("tool_call"))
    );
    assert_eq!(
        tool(&sb, "call_s2_0_b0NICoGt"),
        (s("execute"), s("completed"), s("tool_call"))
    );
    let allow = |id: &str| {
        (
            s(id),
            s("selected"),
            s("allow"),
            s("allow_once"),
            s("client"),
        )
    };
    assert_eq!(
        permissions(&sb),
        vec![allow("call_s1_0_sAL3IRAc"), allow("call_s2_0_b0NICoGt")]
    );
    assert_eq!(turn(&sb), (s("end_turn"), false));
    // The update that filled in rawInput after the empty one of tool_call.
    let raw_input: String = sb
        .conn()
        .query_row(
            "SELECT raw_input FROM tool_calls WHERE tool_call_id = 'call_s0_1_1yYFcVV9'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(raw_input.contains(r#""command":"ls -la""#), "{raw_input}");
    let info: String = sb
        .conn()
        .query_row("SELECT agent_info FROM connections", [], |r| r.get(0))
        .unwrap();
    assert!(info.contains("claude-agent-acp"), "{info}");
}

#[test]
fn claude_slow_cancelled_turn() {
    let sb = record_sample(SAMPLES[1]);
    assert_eq!(turn(&sb), (s("cancelled"), true));
    assert_eq!(sb.count("SELECT count(*) FROM permission_requests"), 0);
}

#[test]
fn codex_permission_before_tool_call_and_string_ids() {
    let sb = record_sample(SAMPLES[2]);
    // The shell call is first heard of in its permission request.
    assert_eq!(
        tool(&sb, "call_s2_0_aJqSMNSr"),
        (s("execute"), s("completed"), s("request_permission"))
    );
    assert_eq!(
        tool(&sb, "call_s1_0_QiX5wQEs"),
        (s("edit"), s("completed"), s("tool_call"))
    );
    let approved = |id: &str| {
        (
            s(id),
            s("selected"),
            s("approved"),
            s("allow_once"),
            s("client"),
        )
    };
    assert_eq!(
        permissions(&sb),
        vec![
            approved("call_s1_0_QiX5wQEs"),
            approved("call_s2_0_aJqSMNSr")
        ]
    );
    // The prompt's response has its id written last and still closes the turn.
    assert_eq!(turn(&sb), (s("end_turn"), false));
}

#[test]
fn codex_deny_all_rejected_and_cancelled() {
    let sb = record_sample(SAMPLES[3]);
    assert_eq!(
        permissions(&sb),
        vec![(
            s("call_s1_0_kZP6YJxp"),
            s("selected"),
            s("abort"),
            s("reject_once"),
            s("client")
        )]
    );
    assert_eq!(turn(&sb), (s("cancelled"), false));
}

#[test]
fn gemini_updates_for_unannounced_ids_and_fs_requests() {
    let sb = record_sample(SAMPLES[4]);
    assert_eq!(
        tool(&sb, "replace__call_s1_0_j6M9nNae"),
        (s("edit"), s("completed"), s("request_permission"))
    );
    // Never announced by a tool_call: created by the permission request, completed by a
    // tool_call_update.
    assert_eq!(
        tool(&sb, "run_shell_command__call_s2_0_mbL4IWF3"),
        (s("execute"), s("completed"), s("request_permission"))
    );
    let decisions: Vec<_> = permissions(&sb)
        .into_iter()
        .map(|(_, outcome, option, kind, by)| (outcome, option, kind, by))
        .collect();
    let proceed = (
        s("selected"),
        s("proceed_once"),
        s("allow_once"),
        s("client"),
    );
    assert_eq!(decisions, vec![proceed.clone(), proceed]);
    // fs/* requests from the agent are paired with the client's responses.
    assert_eq!(
        sb.count("SELECT count(*) FROM messages WHERE kind = 'response' AND method = 'fs/read_text_file' AND direction = 'c2a'"),
        2
    );
}

#[test]
fn show_sessions_and_tools_read_the_recording() {
    let sb = record_sample(SAMPLES[0]);
    let shown = String::from_utf8(sb.acptap(&["show", "last"]).stdout).unwrap();
    assert!(shown.contains("Turn 1 · end_turn"), "{shown}");
    assert!(shown.contains("permission for"), "{shown}");
    assert!(shown.contains("allow (allow_once) · by client"), "{shown}");
    let json: serde_json::Value =
        serde_json::from_slice(&sb.acptap(&["show", "f2e2", "--json"]).stdout).unwrap();
    assert_eq!(
        json["session"]["session_id"],
        "f2e2e388-b7af-4f86-8962-244a44037f29"
    );
    assert_eq!(json["turns"][0]["stop_reason"], "end_turn");
    let tools: serde_json::Value =
        serde_json::from_slice(&sb.acptap(&["tools", "--kind", "execute", "--json"]).stdout)
            .unwrap();
    assert_eq!(tools.as_array().unwrap().len(), 2);
    let sessions: serde_json::Value =
        serde_json::from_slice(&sb.acptap(&["sessions", "--json"]).stdout).unwrap();
    assert_eq!(sessions[0]["tool_calls"], 4);
    assert_eq!(sessions[0]["permission_requests"], 2);
}

/// Every shared sample, imported by this acptap, exports the bytes the acptap before issue 31's
/// recorder changes exported (tests/fixtures/exports: each sample as that acptap exported it,
/// which is also what an export must give back, and its trace).
#[test]
fn shared_samples_export_the_bytes_they_exported_before() {
    let dir = fixture("exports");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(sample) = name
            .strip_suffix(".jsonl")
            .filter(|n| !n.ends_with(".trace"))
        else {
            continue;
        };
        let sandbox = Sandbox::new();
        sandbox.acptap(&["import", path.to_str().unwrap()]);
        for (format, expected) in [
            ("jsonl", path.clone()),
            ("trace", dir.join(format!("{sample}.trace.jsonl"))),
        ] {
            let out = sandbox.path(&format!("{sample}.{format}"));
            sandbox.acptap(&[
                "export",
                "last",
                "--format",
                format,
                "-o",
                out.to_str().unwrap(),
            ]);
            assert!(
                std::fs::read(&out).unwrap() == std::fs::read(&expected).unwrap(),
                "{sample}: the {format} export differs from {}",
                expected.display()
            );
        }
        checked += 1;
    }
    assert_eq!(checked, SAMPLES.len(), "one export per shared sample");
}
