//! `acptap demo` end to end: the built-in client and agent through the real proxy, and the
//! tool-call rules of both protocol versions as the database materialises them.

use std::process::Command;

use crate::util::{Sandbox, acptap_bin};

#[test]
fn demo_records_every_tool_call_rule_and_shows_the_session() {
    let sb = Sandbox::new();
    let output = Command::new(acptap_bin())
        .args(["demo", "--db"])
        .arg(sb.db())
        .current_dir(sb.dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("Turn 1 · end_turn"), "{stdout}");
    assert!(
        stdout.contains("permission for Edit src/main.rs: allow (allow_once) · by client"),
        "{stdout}"
    );
    assert!(stdout.contains(&sb.db().display().to_string()), "{stdout}");

    let conn = sb.conn();
    let call = |id: &str, column: &str| -> Option<String> {
        conn.query_row(
            &format!("SELECT {column} FROM tool_calls WHERE tool_call_id = ?1"),
            [id],
            |r| r.get(0),
        )
        .unwrap_or_else(|e| panic!("{id}.{column}: {e}"))
    };
    // v1: created by tool_call, then updated field by field; rawInput left as it was.
    assert_eq!(call("demo_read", "status").as_deref(), Some("completed"));
    assert_eq!(
        call("demo_read", "created_by").as_deref(),
        Some("tool_call")
    );
    assert!(
        call("demo_read", "raw_input")
            .unwrap()
            .contains("README.md")
    );
    // v2: an upsert for an unannounced id creates it; two chunks appended to no content.
    assert_eq!(
        call("demo_search", "created_by").as_deref(),
        Some("tool_call_update")
    );
    let content: serde_json::Value =
        serde_json::from_str(&call("demo_search", "content").unwrap()).unwrap();
    assert_eq!(content.as_array().map(Vec::len), Some(2), "{content}");
    assert_eq!(content[1]["content"]["text"], "1 match");
    // A diff kept whole; a failed command; a custom kind and status; null cleared rawOutput.
    assert!(
        call("demo_edit", "content")
            .unwrap()
            .contains("\"type\":\"diff\"")
    );
    assert_eq!(call("demo_test", "status").as_deref(), Some("failed"));
    assert_eq!(call("demo_notify", "kind").as_deref(), Some("_notify"));
    assert_eq!(call("demo_notify", "raw_output"), None);
    assert_eq!(call("demo_notify", "status").as_deref(), Some("completed"));
    // Each update that changed something is an event naming what changed.
    let changes: Vec<String> = conn
        .prepare(
            "SELECT e.changed FROM tool_call_events e JOIN tool_calls t ON t.id = e.tool_call_row
             WHERE t.tool_call_id = 'demo_notify' ORDER BY e.id",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        changes.last().map(String::as_str),
        Some(r#"["status","rawOutput"]"#)
    );
    assert_eq!(
        sb.count("SELECT count(*) FROM connections WHERE label = 'demo' AND complete = 1"),
        1
    );
}
