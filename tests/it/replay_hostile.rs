//! A recording is untrusted input: `replay --as agent` of a hostile transcript toward a real
//! client that acts on what an agent asks (acpx runs terminal commands and writes files), and a
//! property over any transcript: what reaches the client names no path outside the live cwd and
//! asks it to run nothing, unless the user opted in.

use std::io::Cursor;
use std::path::Path;
use std::process::Command;

use acptap::protocol::{Direction, parse_line};
use acptap::replay::agent::{AgentReplayOptions, replay_as_agent};
use acptap::replay::outbound::Allowances;
use acptap::replay::script::ScriptLine;
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::util::{Sandbox, acptap_bin};

/// The hostile transcript: recorded in `/rec`, with a command to run, writes into version
/// control and editor configuration, a batch and an extension request aimed outside, a write
/// through a symbolic link, and one ordinary write.
fn hostile_lines(outside: &Path) -> Vec<(&'static str, Value)> {
    let outside = outside.display();
    let write = |id: u64, path: String| {
        json!({"jsonrpc": "2.0", "id": id, "method": "fs/write_text_file",
               "params": {"sessionId": "s1", "path": path, "content": "#!/bin/sh\ntouch pwned\n"}})
    };
    let done = |id: u64| ("c2a", json!({"jsonrpc": "2.0", "id": id, "result": null}));
    vec![
        (
            "c2a",
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                       "params": {"protocolVersion": 1, "clientCapabilities":
                                  {"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true}}}),
        ),
        (
            "a2c",
            json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}}),
        ),
        (
            "c2a",
            json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/rec", "mcpServers": []}}),
        ),
        (
            "a2c",
            json!({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s1"}}),
        ),
        (
            "c2a",
            json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                       "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "hi"}]}}),
        ),
        (
            "a2c",
            json!({"jsonrpc": "2.0", "id": 10, "method": "terminal/create",
                       "params": {"sessionId": "s1", "command": "sh", "args": ["-c", "touch RAN_BY_REPLAY"],
                                  "env": [{"name": "GREETING", "value": "hello"}], "cwd": "/rec"}}),
        ),
        (
            "c2a",
            json!({"jsonrpc": "2.0", "id": 10, "result": {"terminalId": "term-1"}}),
        ),
        (
            "a2c",
            json!({"jsonrpc": "2.0", "id": 11, "method": "terminal/wait_for_exit",
                       "params": {"sessionId": "s1", "terminalId": "term-1"}}),
        ),
        (
            "c2a",
            json!({"jsonrpc": "2.0", "id": 11, "result": {"exitCode": 0}}),
        ),
        ("a2c", write(12, "/rec/.git/hooks/post-checkout".into())),
        done(12),
        ("a2c", write(13, "/rec/.vscode/tasks.json".into())),
        done(13),
        (
            "a2c",
            json!([
                {"jsonrpc": "2.0", "id": 14, "method": "fs/write_text_file",
                 "params": {"sessionId": "s1", "path": format!("{outside}/batch.txt"), "content": "x"}},
            ]),
        ),
        (
            "a2c",
            json!({"jsonrpc": "2.0", "id": 15, "method": "_zed/write_file",
                       "params": {"sessionId": "s1", "path": format!("{outside}/ext.txt"), "content": "x"}}),
        ),
        ("a2c", write(16, "/rec/link/through.txt".into())),
        done(16),
        // Through a link that stays inside the cwd but leads into .git.
        ("a2c", write(18, "/rec/gl/hooks/pre-commit".into())),
        done(18),
        ("a2c", write(19, "/rec/.pre-commit-config.yaml".into())),
        done(19),
        (
            "a2c",
            json!({"jsonrpc": "2.0", "id": 17, "method": "fs/write_text_file",
                       "params": {"sessionId": "s1", "path": "/rec/notes.md", "content": "fine\n"}}),
        ),
        done(17),
        (
            "a2c",
            json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1",
                       "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "done"}}}}),
        ),
        (
            "a2c",
            json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}),
        ),
    ]
}

/// acpx, with every permission approved, against `acptap replay last --as agent EXTRA`, in
/// `project`. Returns acpx's stdout (`--format json`: every JSON-RPC message it exchanged).
fn acpx_against_replay(sb: &Sandbox, project: &Path, extra: &str) -> String {
    let agent = format!(
        "{} replay last --as agent --db {} {extra}",
        acptap_bin().display(),
        sb.db().display()
    );
    let output = crate::util::finish(
        crate::tools::acpx_in(project)
            .args(["--agent", &agent, "exec", "hi"])
            .spawn()
            .unwrap(),
        std::time::Duration::from_secs(90),
    );
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "acpx failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[test]
fn a_hostile_recording_replayed_to_acpx_runs_nothing_and_writes_nothing_dangerous() {
    let sb = Sandbox::new();
    let project = sb.path("project");
    let outside = sb.path("outside");
    std::fs::create_dir_all(project.join(".git/hooks")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, project.join("link")).unwrap();
    std::os::unix::fs::symlink(".git", project.join("gl")).unwrap();
    crate::util::import_lines(&sb, &hostile_lines(&outside));

    let traffic = acpx_against_replay(&sb, &project, "");
    // The one ordinary write arrives, so the client really acts on what the replay sends.
    assert_eq!(
        std::fs::read_to_string(project.join("notes.md")).unwrap(),
        "fine\n"
    );
    assert!(
        !project.join("RAN_BY_REPLAY").exists(),
        "a recorded command ran: {traffic}"
    );
    assert!(!project.join(".git/hooks/post-checkout").exists());
    assert!(!project.join(".git/hooks/pre-commit").exists());
    assert!(!project.join(".pre-commit-config.yaml").exists());
    assert!(!project.join(".vscode").exists());
    let outside_files: Vec<_> = std::fs::read_dir(&outside).unwrap().collect();
    assert!(outside_files.is_empty(), "{outside_files:?}");
    // Nothing of it even reached the client.
    assert!(!traffic.contains("terminal/"), "{traffic}");
    assert!(
        !traffic.contains(&outside.display().to_string()),
        "{traffic}"
    );
    assert!(!traffic.contains("post-checkout"), "{traffic}");
    assert!(!traffic.contains("through.txt"), "{traffic}");

    // With the opt-in that names the risk, the command runs, in the live cwd; the guards hold.
    std::fs::remove_file(project.join("notes.md")).unwrap();
    let traffic = acpx_against_replay(&sb, &project, "--run-recorded-commands");
    assert!(
        project.join("RAN_BY_REPLAY").exists(),
        "the opted-in command did not run: {traffic}"
    );
    assert!(!project.join(".git/hooks/post-checkout").exists());
    assert!(std::fs::read_dir(&outside).unwrap().next().is_none());

    // --no-writes: no write at all.
    std::fs::remove_file(project.join("notes.md")).unwrap();
    let traffic = acpx_against_replay(&sb, &project, "--no-writes");
    assert!(!project.join("notes.md").exists(), "{traffic}");
    assert!(!traffic.contains("fs/write_text_file"), "{traffic}");
}

#[test]
fn held_lines_are_named_on_stderr_and_the_opted_in_command_is_shown_first() {
    let sb = Sandbox::new();
    let project = sb.path("project");
    let outside = sb.path("outside");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, project.join("link")).unwrap();
    std::os::unix::fs::symlink(".git", project.join("gl")).unwrap();
    let live = project.display().to_string();
    crate::util::import_lines(&sb, &hostile_lines(&outside));
    let client = [
        // A client that serves files and terminals (replay never asks one that does not).
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true}}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": live, "mcpServers": []}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": "s1", "prompt": []}}),
    ];
    let run = |extra: &[&str]| {
        let mut input = String::new();
        for line in &client {
            input.push_str(&format!("{line}\n"));
        }
        let output = Command::new(acptap_bin())
            .args(["replay", "last", "--as", "agent"])
            .args(extra)
            .env("ACPTAP_DB", sb.db())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                use std::io::Write;
                child.stdin.take().unwrap().write_all(input.as_bytes())?;
                child.wait_with_output()
            })
            .unwrap();
        (
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    // The client answers nothing: the replay ends when it waits for the first answer (to the
    // write of notes.md, the first request it sends).
    let (stdout, stderr) = run(&[]);
    for held in [
        "(`terminal/create`) not sent: `terminal/create` asks the client to run something (replay with --run-recorded-commands to allow it)",
        "(`terminal/wait_for_exit`) not sent",
        "(`fs/write_text_file`) not sent: a write to version-control or tool configuration (guard:git-dir",
        &format!(
            "(`fs/write_text_file`) not sent: a write to version-control or tool configuration (guard:startup-file: {live}/.vscode/tasks.json"
        ),
        "(`_zed/write_file`) not sent:",
        "through.txt leads outside the live cwd through a symbolic link",
        "gl/hooks/pre-commit leads)",
        ".pre-commit-config.yaml runs as code",
    ] {
        assert!(stderr.contains(held), "{held}\n{stderr}");
    }
    // The batch's one element was held, so no batch was sent at all.
    assert!(!stdout.contains("batch.txt"), "{stdout}");
    assert!(stdout.contains(&format!("\"{live}/notes.md\"")), "{stdout}");

    let (stdout, stderr) = run(&["--run-recorded-commands"]);
    let notice = stderr
        .find(&format!("the client is asked to run the recorded command `sh -c touch RAN_BY_REPLAY` in {live} with the recorded environment: GREETING=[REDACTED:terminal-env]"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(notice > 0);
    let create: Value = stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|m| m["method"] == "terminal/create")
        .unwrap();
    assert_eq!(create["params"]["cwd"], live.as_str());
}

// ---- the property: whatever the transcript, nothing outside the live cwd, nothing run --------

const LIVE: &str = "/live";

/// Paths a hostile transcript could name, recorded in `/rec`.
const PATHS: &[&str] = &[
    "/rec/a.txt",
    "/rec",
    "/rec/sub/./b/../c.rs",
    "/rec/../etc/passwd",
    "/etc/passwd",
    "/rec-other/x",
    "/live/x",
    "/",
    "//etc/x",
    "/rec//x",
    "~/x",
    "~root/.ssh/authorized_keys",
    "file:///etc/x",
    "C:\\Windows\\x",
    "c:/x",
    "\\\\server\\share",
    "..",
    "../x",
    "sub/../../x",
    "rel/x",
    "/rec/.git/hooks/pre-commit",
    "/rec/\u{202e}x",
    "/REC/x",
    "http://example.com/a",
];

const METHODS: &[&str] = &[
    "fs/read_text_file",
    "fs/write_text_file",
    "terminal/create",
    "terminal/output",
    "terminal/kill",
    "mcp/message",
    "session/update",
    "session/request_permission",
    "elicitation/create",
    "_zed/write_file",
    "_x/open",
    "FS/write_text_file",
    "fs/write_text_file ",
];

/// One agent line's text: a message of a random method naming random paths in random places,
/// perhaps with a key written twice, perhaps in a batch.
fn hostile_line() -> impl Strategy<Value = String> {
    let path = proptest::sample::select(PATHS);
    let method = proptest::sample::select(METHODS);
    let message = (
        method,
        path.clone(),
        path.clone(),
        path,
        0..6usize,
        any::<bool>(),
        prop_oneof![Just(None), (0..100u32).prop_map(Some)],
    )
        .prop_map(|(method, a, b, c, shape, twice, id)| {
            let id = id.map(|id| format!("\"id\":{id},")).unwrap_or_default();
            let s = |p: &str| serde_json::to_string(p).unwrap();
            let params = match shape {
                0 => format!("{{\"path\":{},\"cwd\":{}}}", s(a), s(b)),
                1 => format!("{{\"nested\":{{\"list\":[{},{{\"deep\":{}}}]}}}}", s(a), s(b)),
                2 => format!("{{{}:\"key\",\"text\":{}}}", s(a), s(&format!("cat {b} > {c}"))),
                3 => format!(
                    "{{\"update\":{{\"locations\":[{{\"path\":{}}}],\"content\":[{{\"type\":\"diff\",\"path\":{}}}]}},\"toolCall\":{{\"locations\":[{{\"path\":{}}}]}}}}",
                    s(a),
                    s(b),
                    s(c)
                ),
                4 => format!("{{\"mode\":\"url\",\"url\":{}}}", s(a)),
                _ => format!("{{\"command\":\"sh\",\"args\":[\"-c\",{}],\"path\":{}}}", s(&format!("rm -rf {a}")), s(b)),
            };
            // A key written twice: a client keeping the first sees another message.
            let first = if twice {
                format!("\"params\":{{\"path\":{}}},\"method\":\"fs/write_text_file\",", s(c))
            } else {
                String::new()
            };
            format!("{{\"jsonrpc\":\"2.0\",{id}{first}\"method\":{},\"params\":{params}}}", s(method))
        });
    (proptest::collection::vec(message, 1..4), any::<bool>()).prop_map(|(messages, batch)| {
        if batch || messages.len() > 1 {
            format!("[{}]", messages.join(","))
        } else {
            messages[0].clone()
        }
    })
}

/// Whether `word`, as a client on the live machine would take it, stays inside the live cwd:
/// written independently of the gate.
fn stays_inside_live(word: &str) -> bool {
    if word.starts_with('~')
        || word.contains('\\')
        || word.contains("://")
        || word.starts_with("file:")
    {
        return false;
    }
    let mut depth: Vec<&str> = Vec::new();
    for part in word.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if depth.pop().is_none() {
                    return false;
                }
            }
            other => depth.push(other),
        }
    }
    if !word.starts_with('/') {
        return true;
    }
    depth.first() == Some(&"live")
}

/// The words of free text that name a path (after a separator: `/`, `~`, `\`, `..`).
fn path_words(text: &str) -> Vec<&str> {
    text.split(|c: char| c.is_whitespace() || "\"'`=,;:()[]{}<>|&".contains(c))
        .filter(|w| w.starts_with(['/', '~', '\\']) || w.starts_with(".."))
        .collect()
}

fn every_path_word(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.extend(path_words(s).into_iter().map(str::to_owned)),
        Value::Array(items) => items.iter().for_each(|i| every_path_word(i, out)),
        Value::Object(map) => {
            for (k, v) in map {
                out.extend(path_words(k).into_iter().map(str::to_owned));
                every_path_word(v, out);
            }
        }
        _ => {}
    }
}

/// What a client would find wrong with one message the replay sent.
fn violation(message: &Value, run_commands: bool) -> Option<String> {
    let method = message.get("method")?.as_str()?;
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    if method.starts_with("terminal/") || method == "mcp/message" {
        if !run_commands {
            return Some(format!("`{method}` sent without --run-recorded-commands"));
        }
        // Opted in: the command is the user's risk, where it runs is not.
        return params["cwd"]
            .as_str()
            .filter(|cwd| !stays_inside_live(cwd) || !cwd.starts_with('/'))
            .map(|cwd| format!("a terminal in {cwd}"));
    }
    let mut words = Vec::new();
    match method {
        "session/update" | "session/request_permission" => {
            // Where ACP puts the tool call of each: free text in it is shown, never acted on.
            let call = if method == "session/update" {
                &params["update"]
            } else {
                &params["toolCall"]
            };
            {
                for list in ["locations", "content"] {
                    for item in call[list].as_array().into_iter().flatten() {
                        if let Some(p) = item["path"].as_str() {
                            words.push(p.to_owned());
                        }
                    }
                }
            }
        }
        _ => {
            for (key, value) in message.as_object()? {
                if !matches!(key.as_str(), "jsonrpc" | "id" | "method") {
                    every_path_word(value, &mut words);
                }
            }
        }
    }
    if matches!(method, "fs/read_text_file" | "fs/write_text_file")
        && !params["path"]
            .as_str()
            .is_some_and(|p| p.starts_with("/live"))
    {
        return Some(format!("`{method}` with no absolute path in the live cwd"));
    }
    let into_git = |w: &String| {
        let w = w.to_lowercase();
        w.contains("/.git/") || w.ends_with("/.git")
    };
    if method != "fs/read_text_file"
        && !method.starts_with("session/")
        && words.iter().any(into_git)
    {
        return Some(format!("`{method}` names a place in .git: {message}"));
    }
    if method == "elicitation/create" && (params["mode"] == "url" || params.get("url").is_some()) {
        return Some("a URL elicitation".into());
    }
    words
        .into_iter()
        .find(|w| !stays_inside_live(w))
        .map(|w| format!("`{method}` names {w}"))
}

fn script_of(agent_lines: &[String]) -> Vec<ScriptLine> {
    let mut lines = vec![
        (Direction::ClientToAgent, json!({"jsonrpc": "2.0", "id": "new", "method": "session/new", "params": {"cwd": "/rec", "mcpServers": []}}).to_string()),
        (Direction::AgentToClient, json!({"jsonrpc": "2.0", "id": "new", "result": {"sessionId": "s"}}).to_string()),
        (Direction::ClientToAgent, json!({"jsonrpc": "2.0", "id": "p", "method": "session/prompt", "params": {"sessionId": "s", "prompt": []}}).to_string()),
    ];
    lines.extend(
        agent_lines
            .iter()
            .map(|l| (Direction::AgentToClient, l.clone())),
    );
    lines.push((
        Direction::AgentToClient,
        json!({"jsonrpc": "2.0", "id": "p", "result": {"stopReason": "end_turn"}}).to_string(),
    ));
    lines
        .into_iter()
        .enumerate()
        .map(|(seq, (direction, text))| {
            let raw = format!("{text}\n").into_bytes();
            ScriptLine {
                seq: seq as i64,
                ts: seq as i64,
                direction,
                message: parse_line(&raw),
                raw,
            }
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn any_transcript_replayed_as_agent_sends_nothing_outside_the_live_cwd_and_runs_nothing(
        before_session in proptest::collection::vec(hostile_line(), 0..2),
        in_turn in proptest::collection::vec(hostile_line(), 1..6),
        run_commands in any::<bool>(),
    ) {
        // Lines before the session opens too: there is no live cwd for their paths yet.
        let mut script = script_of(&in_turn);
        let early: Vec<ScriptLine> = script_of(&before_session)
            .into_iter()
            .skip(3)
            .filter(|l| l.direction == Direction::AgentToClient && l.message.method.is_some() || l.raw.starts_with(b"["))
            .collect();
        script.splice(0..0, early);
        let client = format!(
            "{}\n{}\n",
            json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": LIVE, "mcpServers": []}}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": "s", "prompt": []}}),
        );
        let mut sent = Vec::new();
        let options = AgentReplayOptions {
            speed: None,
            strict: false,
            rewrite_session_ids: false,
            allow: Allowances { run_commands, writes: true },
        };
        replay_as_agent(&script, Cursor::new(client.into_bytes()), &mut sent, options).unwrap();
        for line in sent.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            // The client reads each line one way only: strict JSON, no key twice.
            prop_assert!(acptap::replay::outbound::reads_one_way(line), "{}", String::from_utf8_lossy(line));
            let value: Value = serde_json::from_slice(line).unwrap();
            let messages = match value {
                Value::Array(items) => items,
                other => vec![other],
            };
            for message in &messages {
                if let Some(wrong) = violation(message, run_commands) {
                    prop_assert!(false, "{wrong}: {message}");
                }
            }
        }
    }
}
