//! Nothing an agent writes reaches a terminal as a control sequence: every recorded string that
//! `show`, `tools`, `stats`, `sessions` and `tail` print goes through one sanitizer (escape
//! sequences such as OSC 52 clipboard writes, OSC 0 title changes and CSI 2J screen clears, C1
//! controls, and bidirectional overrides become U+FFFD).

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::util::{Sandbox, acptap_bin};

/// The hostile strings: an OSC 52 clipboard write, an OSC 0 title, a screen clear, a C1 CSI and
/// a right-to-left override.
const OSC52: &str = "\u{1b}]52;c;cm0gLXJmIH4=\u{7}";
const EVIL: &str = "x\u{1b}]0;owned\u{7}\u{1b}[2J\u{9b}31m\u{202e}gnp.exe";

fn hostile_transcript(sb: &Sandbox) -> std::path::PathBuf {
    let lines = [
        (
            "c2a",
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}),
        ),
        (
            "a2c",
            json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1, "agentInfo": {"name": format!("agent{OSC52}"), "version": EVIL}}}),
        ),
        (
            "c2a",
            json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/p", "mcpServers": []}}),
        ),
        (
            "a2c",
            json!({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s1"}}),
        ),
        (
            "c2a",
            json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": "s1", "prompt": []}}),
        ),
        (
            "a2c",
            json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "ok", "kind": EVIL, "status": EVIL, "locations": [{"path": format!("/p/{EVIL}")}]}}}),
        ),
        (
            "a2c",
            json!({"jsonrpc": "2.0", "id": 7, "method": "session/request_permission", "params": {"sessionId": "s1", "toolCall": {"toolCallId": "t1"}, "options": [{"optionId": EVIL, "name": EVIL, "kind": "allow_once"}]}}),
        ),
        (
            "c2a",
            json!({"jsonrpc": "2.0", "id": 7, "result": {"outcome": {"outcome": "selected", "optionId": EVIL}}}),
        ),
        (
            "a2c",
            json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": format!("done{OSC52}")}}}}),
        ),
        (
            "a2c",
            json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": EVIL}}),
        ),
    ];
    let text: Vec<String> = lines
        .iter()
        .map(|(dir, m)| json!({"dir": dir, "text": m.to_string()}).to_string())
        .collect();
    let path = sb.path("hostile.jsonl");
    std::fs::write(&path, text.join("\n")).unwrap();
    path
}

fn assert_clean(what: &str, out: &[u8]) {
    let text = String::from_utf8_lossy(out);
    let bad = text
        .chars()
        .find(|c| (c.is_control() && *c != '\n' && *c != '\t') || *c == '\u{202e}');
    assert!(bad.is_none(), "{what} printed {bad:?}:\n{text}");
}

#[test]
fn recorded_control_sequences_never_reach_the_terminal() {
    let sb = Sandbox::new();
    let transcript = hostile_transcript(&sb);
    sb.acptap(&["import", transcript.to_str().unwrap()]);
    for view in [&["sessions"][..], &["show", "last"], &["tools"], &["stats"]] {
        let out = sb.acptap(view);
        assert_clean(&format!("{view:?}"), &out.stdout);
    }
    // tail, following while the same transcript is imported again.
    let mut tail = Command::new(acptap_bin())
        .args(["tail", "--interval", "50ms", "--color", "always"])
        .env("ACPTAP_DB", sb.db())
        .env("XDG_CONFIG_HOME", sb.dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    sb.acptap(&["import", transcript.to_str().unwrap()]);
    std::thread::sleep(Duration::from_millis(600));
    tail.kill().unwrap();
    let mut out = Vec::new();
    tail.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    let _ = tail.wait();
    // tail's own colours are the only escape sequences: strip them, then nothing may be left.
    let text = String::from_utf8_lossy(&out);
    let without_colours = regex::Regex::new("\u{1b}\\[[0-9;]*m")
        .unwrap()
        .replace_all(&text, "");
    assert!(without_colours.contains("tool started"), "{text}");
    assert_clean("tail", without_colours.as_bytes());
}
