//! A recording is untrusted input: every command that reads one prints its recorded strings
//! made safe for a terminal. One hostile recording (terminal escapes, an OSC 52 clipboard write,
//! BEL, a C1 CSI, bidi overrides, a carriage return and a newline in every field that takes a
//! string, and a 300 KB agent name) goes through every command of `acptap --help` that reads a
//! recording, with and without `--json`; none may put a control character, a bidi control, a
//! forged line or a line longer than `LONGEST_LINE` on stdout or stderr.
//!
//! `--json` is exact data: its strings parse back to the recorded bytes (checked below), with
//! DEL, the C1 and the bidi controls written as `\u` escapes, so the JSON text itself is clean
//! too (see docs/cli.md, "Output from recordings is sanitised").
//!
//! `replay --as agent` writes the protocol on stdout, byte for byte: only its stderr is judged.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::util::{Sandbox, acptap_bin, example_bin};

/// ESC [2J (clear the screen), OSC 52 (write the clipboard), BEL, a C1 CSI (U+009B), DEL, the
/// right-to-left override and isolate, then CR LF and text that would start a forged line.
const HOSTILE: &str =
    "\u{1b}[2J\u{1b}]52;c;cm0gLXJmIH4=\u{7}\u{9b}31m\u{7f}\u{202e}gnp.exe\u{2066}\r\nFORGED";

/// The text after the newline of [`HOSTILE`]: no output line may start with it.
const FORGED: &str = "FORGED";

/// The longest line a person's output may have: a recorded string in a one-line message is cut.
const LONGEST_LINE: usize = 16 * 1024;

/// Why a terminal would act on `c`; `None` for a character it only shows.
fn control(c: char) -> Option<&'static str> {
    match c {
        '\n' | '\t' => None,
        '\u{1b}' => Some("ESC"),
        '\u{7}' => Some("BEL"),
        '\r' => Some("CR"),
        '\0'..='\u{1f}' | '\u{7f}' => Some("a C0 control"),
        '\u{80}'..='\u{9f}' => Some("a C1 control"),
        '\u{061c}'
        | '\u{200e}'
        | '\u{200f}'
        | '\u{202a}'..='\u{202e}'
        | '\u{2066}'..='\u{2069}' => Some("a bidi control"),
        _ => None,
    }
}

/// What is wrong with `bytes` as terminal output, if anything.
fn unsafe_output(bytes: &[u8], json: bool) -> Option<String> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Some("bytes that are not UTF-8".into());
    };
    if let Some((at, c)) = text.char_indices().find(|(_, c)| control(*c).is_some()) {
        let from = text[..at]
            .char_indices()
            .rev()
            .nth(40)
            .map_or(0, |(i, _)| i);
        return Some(format!(
            "{} ({c:?}) at byte {at}, after {:?}",
            control(c).unwrap(),
            &text[from..at]
        ));
    }
    if let Some(line) = text.lines().find(|l| l.trim_start().starts_with(FORGED)) {
        return Some(format!("a forged line: {line:?}"));
    }
    // JSON is data: a recorded string is whole in it, however long.
    if !json && let Some(line) = text.lines().find(|l| l.chars().count() > LONGEST_LINE) {
        return Some(format!(
            "a line of {} characters: {:?}…",
            line.chars().count(),
            line.chars().take(80).collect::<String>()
        ));
    }
    None
}

/// The commands' outputs, judged together so one run names every command that leaks.
#[derive(Default)]
struct Judge {
    failures: Vec<String>,
}

impl Judge {
    /// `output` of `what`: its exit status one of `codes`, stdout and stderr clean.
    fn judge(&mut self, what: &str, output: &Output, codes: &[i32], json: bool) {
        let code = output.status.code().unwrap_or(-1);
        if !codes.contains(&code) {
            self.failures.push(format!(
                "{what}: exit status {code}, expected one of {codes:?}; stderr: {}",
                String::from_utf8_lossy(&output.stderr)
                    .chars()
                    .take(500)
                    .collect::<String>()
            ));
        }
        self.stream(what, "stdout", &output.stdout, json);
        self.stream(what, "stderr", &output.stderr, false);
    }

    fn stream(&mut self, what: &str, stream: &str, bytes: &[u8], json: bool) {
        if let Some(why) = unsafe_output(bytes, json) {
            self.failures.push(format!("{what}: {stream} holds {why}"));
        }
    }

    /// That `output`'s stdout shows that a hostile string was there (and so was judged).
    fn shows_replacement(&mut self, what: &str, output: &Output) {
        if !String::from_utf8_lossy(&output.stdout).contains('\u{FFFD}') {
            self.failures.push(format!(
                "{what}: stdout shows no U+FFFD, so no hostile string was printed:\n{}",
                String::from_utf8_lossy(&output.stdout)
            ));
        }
    }

    fn fail(&mut self, what: String) {
        self.failures.push(what);
    }

    fn verdict(self) {
        assert!(
            self.failures.is_empty(),
            "{} failure(s):\n\n{}",
            self.failures.len(),
            self.failures.join("\n\n")
        );
    }
}

/// The hostile session ids: two, with a common prefix (`evil`), so a prefix is ambiguous and the
/// error lists both.
fn session_id(n: u32) -> String {
    format!("evil{HOSTILE}{n}")
}

/// A transcript (docs/replay.md, "Transcripts") where every string a view prints is hostile:
/// the client's and the agent's names and version (the agent's 300 KB long), the cwd, two session
/// ids, a tool call's id, title, kind, status and paths (one outside the cwd), a permission
/// option's id and name, an agent-to-client request with a hostile method and the client's error
/// answer, an extension notification, agent text, stderr, a stop reason.
fn hostile_lines() -> Vec<(&'static str, String)> {
    let (s1, s2) = (session_id(1), session_id(2));
    let h = HOSTILE;
    let cwd = format!("/tmp/{h}");
    let call = format!("tc{h}");
    let option = format!("opt{h}");
    let long_name = format!("agent{h}{}", "A".repeat(300_000));
    let update = |session: &str, update: Value| {
        json!({"jsonrpc": "2.0", "method": "session/update",
               "params": {"sessionId": session, "update": update}})
    };
    let lines = vec![
        (
            "c2a",
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                       "params": {"protocolVersion": 1, "clientInfo": {"name": h, "version": h}}}),
        ),
        (
            "a2c",
            json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1,
                       "agentInfo": {"name": long_name, "version": h}}}),
        ),
        (
            "c2a",
            json!({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                       "params": {"cwd": cwd, "mcpServers": []}}),
        ),
        (
            "a2c",
            json!({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": s1}}),
        ),
        (
            "c2a",
            json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                       "params": {"sessionId": s1, "prompt": [{"type": "text", "text": h}]}}),
        ),
        (
            "a2c",
            update(
                &s1,
                json!({"sessionUpdate": "tool_call", "toolCallId": call, "title": h,
                                   "kind": h, "status": "pending",
                                   "rawInput": {"command": h, "path": format!("{cwd}/f")},
                                   "locations": [{"path": format!("{cwd}/f")},
                                                 {"path": format!("/elsewhere/{h}")}]}),
            ),
        ),
        (
            "a2c",
            json!({"jsonrpc": "2.0", "id": 7, "method": "session/request_permission",
                       "params": {"sessionId": s1, "toolCall": {"toolCallId": call, "title": h},
                                  "options": [{"optionId": option, "name": h, "kind": "allow_once"},
                                              {"optionId": "no", "name": h, "kind": "reject_once"}]}}),
        ),
        (
            "c2a",
            json!({"jsonrpc": "2.0", "id": 7,
                       "result": {"outcome": {"outcome": "selected", "optionId": option}}}),
        ),
        (
            "a2c",
            update(
                &s1,
                json!({"sessionUpdate": "tool_call_update", "toolCallId": call,
                                   "status": h, "title": format!("{h} again")}),
            ),
        ),
        (
            "a2c",
            json!({"jsonrpc": "2.0", "id": 8, "method": format!("evil/{h}"),
                       "params": {"sessionId": s1}}),
        ),
        (
            "c2a",
            json!({"jsonrpc": "2.0", "id": 8, "error": {"code": -32601, "message": h}}),
        ),
        (
            "a2c",
            json!({"jsonrpc": "2.0", "method": format!("_evil{h}"), "params": {"x": h}}),
        ),
        (
            "a2c",
            update(
                &s1,
                json!({"sessionUpdate": "agent_message_chunk",
                                   "content": {"type": "text", "text": format!("done {h}")}}),
            ),
        ),
        (
            "a2c",
            update(
                &s1,
                json!({"sessionUpdate": "plan",
                                   "entries": [{"content": h, "status": h, "priority": h}]}),
            ),
        ),
        (
            "a2c",
            json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": h}}),
        ),
        (
            "c2a",
            json!({"jsonrpc": "2.0", "id": 3, "method": "session/new",
                       "params": {"cwd": cwd, "mcpServers": []}}),
        ),
        (
            "a2c",
            json!({"jsonrpc": "2.0", "id": 3, "result": {"sessionId": s2}}),
        ),
        (
            "c2a",
            json!({"jsonrpc": "2.0", "id": 4, "method": "session/prompt",
                       "params": {"sessionId": s2, "prompt": [{"type": "text", "text": "again"}]}}),
        ),
        (
            "a2c",
            json!({"jsonrpc": "2.0", "id": 4, "result": {"stopReason": format!("end{h}")}}),
        ),
    ];
    let mut lines: Vec<(&str, String)> = lines
        .into_iter()
        .map(|(dir, message)| (dir, message.to_string()))
        .collect();
    lines.insert(9, ("stderr", h.replace(['\r', '\n'], " ")));
    lines
}

/// The transcript file of [`hostile_lines`], its first record dated in 2020 (so `prune` lists it).
fn write_transcript(sb: &Sandbox) -> std::path::PathBuf {
    let mut text = String::new();
    for (n, (dir, line)) in hostile_lines().iter().enumerate() {
        let mut record =
            json!({"seq": n, "t": n as f64 * 0.01, "dir": dir, "eol": true, "text": line});
        if n == 0 {
            record["start"] = json!("2020-01-01T00:00:00Z");
        }
        text.push_str(&record.to_string());
        text.push('\n');
    }
    let path = sb.path("hostile.jsonl");
    std::fs::write(&path, text).unwrap();
    path
}

/// `acptap ARGS` against the sandbox's database, from the sandbox's directory.
fn acptap(sb: &Sandbox, args: &[&str]) -> Output {
    Command::new(acptap_bin())
        .args(args)
        .env("ACPTAP_DB", sb.db())
        .env("XDG_CONFIG_HOME", sb.dir.path())
        .current_dir(sb.dir.path())
        .stdin(Stdio::null())
        .output()
        .expect("run acptap")
}

/// `acptap ARGS` with `input` on its stdin; its output read while it runs (a hostile agent
/// name alone fills a pipe), and killed if it runs past a minute.
fn acptap_with_stdin(sb: &Sandbox, args: &[&OsStr], input: &[u8]) -> Output {
    let mut child = Command::new(acptap_bin())
        .args(args)
        .env("ACPTAP_DB", sb.db())
        .env("XDG_CONFIG_HOME", sb.dir.path())
        .current_dir(sb.dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start acptap");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let pid = child.id() as i32;
    let (done, outcome) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    match outcome.recv_timeout(Duration::from_secs(60)) {
        Ok(output) => output.expect("collect the output"),
        Err(_) => {
            // SAFETY: sending a signal to the child this test started has no memory-safety
            // preconditions.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            let output = outcome.recv().unwrap().unwrap();
            panic!(
                "acptap {args:?} still ran after a minute; stderr:\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
    }
}

#[test]
fn no_command_prints_a_recorded_control_character() {
    let sb = Sandbox::new();
    let transcript = write_transcript(&sb);
    let file = transcript.to_str().unwrap();
    let (s1, s2) = (session_id(1), session_id(2));
    let policy = sb.path("policy.toml");
    std::fs::write(
        &policy,
        "version = 1\ndefault = \"ask\"\n\n[[rule]]\nid = \"deny-all\"\ndecision = \"deny\"\nreason = \"no\"\n",
    )
    .unwrap();
    let policy = policy.to_str().unwrap();
    let mut judge = Judge::default();

    let import = acptap(&sb, &["import", file, "--label", HOSTILE]);
    judge.judge("import", &import, &[0], false);
    judge.shows_replacement("import", &import);

    // The views, for a person and for a script.
    let views: &[(&[&str], &[i32])] = &[
        (&["sessions"], &[0]),
        (&["show", &s1], &[0]),
        (&["show", "last"], &[0]),
        (&["tools"], &[0]),
        (&["tools", &s1], &[0]),
        (&["stats"], &[0]),
        (&["stats", &s1], &[0]),
        (&["search", "--path", "**"], &[0]),
        (&["search", "done"], &[0]),
        (&["search", "--tool", HOSTILE], &[0]),
        (&["check", &s1], &[0, 1]),
        (&["check", file], &[0, 1]),
        (&["diff", &s1, &s2], &[1]),
        (&["diff", file, &s2], &[1]),
        (&["redact", "--check", &s1], &[0, 1]),
        (&["redact", "--check", file], &[0, 1]),
        (&["policy", "replay", "--policy", policy], &[0]),
        (&["policy", "replay", "--policy", policy, &s1], &[0]),
    ];
    for (args, codes) in views {
        let text = acptap(&sb, args);
        judge.judge(&format!("{args:?}"), &text, codes, false);
        if !args.contains(&"redact") {
            judge.shows_replacement(&format!("{args:?}"), &text);
        }
        let json_args = [*args, &["--json"]].concat();
        let json = acptap(&sb, &json_args);
        judge.judge(&format!("{json_args:?}"), &json, codes, true);
        if serde_json::from_slice::<Value>(&json.stdout).is_err() {
            judge.fail(format!(
                "{json_args:?}: stdout is not JSON:\n{}",
                String::from_utf8_lossy(&json.stdout)
            ));
        }
    }

    // `--json` is exact data: the hostile strings parse back whole.
    let sessions: Value =
        serde_json::from_slice(&acptap(&sb, &["sessions", "--json"]).stdout).unwrap_or_default();
    let ids: Vec<&str> = sessions
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["session_id"].as_str())
        .collect();
    if !ids.contains(&s1.as_str()) || !ids.contains(&s2.as_str()) {
        judge.fail(format!("sessions --json lost the exact ids: {ids:?}"));
    }
    let tools: Value =
        serde_json::from_slice(&acptap(&sb, &["tools", "--json"]).stdout).unwrap_or_default();
    if tools[0]["kind"] != HOSTILE {
        judge.fail(format!(
            "tools --json lost the exact kind: {}",
            tools[0]["kind"]
        ));
    }

    // Errors that quote a session id: one given on the command line, ambiguous recorded ones.
    let given = format!("nothing{HOSTILE}");
    for args in [
        &["show", given.as_str()][..],
        &["show", "evil"],
        &["diff", "evil", &s1],
    ] {
        let error = acptap(&sb, args);
        judge.judge(&format!("{args:?}"), &error, &[2], false);
    }
    let ambiguous = acptap(&sb, &["show", "evil"]);
    if !String::from_utf8_lossy(&ambiguous.stderr).contains("several sessions") {
        judge.fail(format!(
            "show evil: not the ambiguous error: {}",
            String::from_utf8_lossy(&ambiguous.stderr)
        ));
    }

    // Files written (the files are data, not judged), and the database kept: what the command
    // says on the terminal is clean.
    let report = sb.path("report.html");
    let export = sb.path("export.jsonl");
    let junit = sb.path("junit.xml");
    for (args, codes) in [
        (
            vec!["report", &s1, "-o", report.to_str().unwrap()],
            &[0][..],
        ),
        (vec!["report", &s1, "--turns", "5-"], &[2]),
        (vec!["export", &s1, "-o", export.to_str().unwrap()], &[0]),
        (
            vec![
                "export",
                &s1,
                "--format",
                "trace",
                "-o",
                export.to_str().unwrap(),
            ],
            &[0],
        ),
        (
            vec![
                "export",
                &s1,
                "--format",
                "otlp-json",
                "-o",
                export.to_str().unwrap(),
            ],
            &[0],
        ),
        (
            vec!["check", &s1, "--junit", junit.to_str().unwrap()],
            &[0, 1],
        ),
        (vec!["prune", "--older-than", "1d", "--dry-run"], &[0]),
        (vec!["migrate"], &[0]),
        (vec!["vacuum"], &[0]),
    ] {
        let output = acptap(&sb, &args);
        judge.judge(&format!("{args:?}"), &output, codes, false);
    }

    // policy check: a recorded permission request, a hostile agent name and cwd.
    let request = sb.path("request.json");
    let asked = hostile_lines()
        .into_iter()
        .find(|(_, line)| line.contains("session/request_permission"))
        .unwrap()
        .1;
    std::fs::write(&request, asked).unwrap();
    let cwd = format!("/tmp/{HOSTILE}");
    for json in [false, true] {
        let mut args = vec![
            "policy",
            "check",
            "--policy",
            policy,
            "--request",
            request.to_str().unwrap(),
            "--agent",
            HOSTILE,
            "--cwd",
            &cwd,
        ];
        if json {
            args.push("--json");
        }
        let output = acptap(&sb, &args);
        judge.judge(&format!("{args:?}"), &output, &[0], json);
    }

    // replay --as client against the demo agent: the divergence report quotes the recording.
    let bin = acptap_bin();
    let as_client = acptap_with_stdin(
        &sb,
        &[
            OsStr::new("replay"),
            OsStr::new(&s1),
            OsStr::new("--as"),
            OsStr::new("client"),
            OsStr::new("--cwd"),
            sb.dir.path().as_os_str(),
            OsStr::new("--grace"),
            OsStr::new("2s"),
            OsStr::new("--compare"),
            OsStr::new("text"),
            OsStr::new("--"),
            bin.as_os_str(),
            OsStr::new("demo-agent"),
        ],
        b"",
    );
    judge.judge("replay --as client", &as_client, &[1], false);
    judge.shows_replacement("replay --as client", &as_client);

    // replay --as agent: stdout is the protocol (exact bytes), stderr is for a person. The
    // client sends the recorded client's lines and a request the recording cannot answer, with
    // a hostile method.
    let mut client = String::new();
    for (dir, line) in hostile_lines() {
        if dir == "c2a" {
            client.push_str(&line);
            client.push('\n');
        }
    }
    client.push_str(
        &json!({"jsonrpc": "2.0", "id": 99, "method": format!("live{HOSTILE}"), "params": {}})
            .to_string(),
    );
    client.push('\n');
    let as_agent = acptap_with_stdin(
        &sb,
        &[
            OsStr::new("replay"),
            OsStr::new(&s1),
            OsStr::new("--as"),
            OsStr::new("agent"),
        ],
        client.as_bytes(),
    );
    // Depends on src/replay/agent.rs routing its stderr messages (the "not sent" lines, the
    // unexpected request, the summary) through the sanitiser.
    let code = as_agent.status.code();
    if !matches!(code, Some(0 | 1)) {
        judge.fail(format!("replay --as agent: exit status {code:?}"));
    }
    judge.stream("replay --as agent", "stderr", &as_agent.stderr, false);

    // run --check: the findings on stderr quote what the agent wrote.
    let emit = sb.path("emit");
    let capture = sb.path("capture");
    let mut to_client = String::new();
    for (dir, line) in hostile_lines() {
        if dir == "a2c" {
            to_client.push_str(&line);
            to_client.push('\n');
        }
    }
    std::fs::write(&emit, to_client).unwrap();
    let peer = example_bin("peer");
    let run = acptap_with_stdin(
        &sb,
        &[
            OsStr::new("run"),
            OsStr::new("--check"),
            OsStr::new("--"),
            peer.as_os_str(),
            OsStr::new("sink"),
            emit.as_os_str(),
            capture.as_os_str(),
        ],
        b"",
    );
    // stdout is the agent's bytes, unchanged: only stderr is acptap's.
    judge.stream("run --check", "stderr", &run.stderr, false);
    if !String::from_utf8_lossy(&run.stderr).contains("acptap check:") {
        judge.fail(format!(
            "run --check printed no findings: {}",
            String::from_utf8_lossy(&run.stderr)
        ));
    }

    // tail, for a person and for a script, while the transcript is imported again.
    let tail = |extra: &[&str]| {
        Command::new(acptap_bin())
            .args(["tail", "--interval", "50ms", "--color", "never"])
            .args(extra)
            .env("ACPTAP_DB", sb.db())
            .env("XDG_CONFIG_HOME", sb.dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut tails = [(tail(&[]), false), (tail(&["--json"]), true)];
    std::thread::sleep(Duration::from_millis(400));
    let again = acptap(&sb, &["import", file]);
    judge.judge("import (again)", &again, &[0], false);
    std::thread::sleep(Duration::from_millis(800));
    for (child, json) in &mut tails {
        child.kill().unwrap();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
        child.stderr.take().unwrap().read_to_end(&mut err).unwrap();
        let _ = child.wait();
        let what = if *json { "tail --json" } else { "tail" };
        if out.is_empty() {
            judge.fail(format!("{what} printed nothing"));
        }
        judge.stream(what, "stdout", &out, *json);
        judge.stream(what, "stderr", &err, false);
    }

    judge.verdict();
}

#[test]
fn the_judge_sees_what_a_terminal_would_act_on() {
    for bad in [
        "\u{1b}[2J",
        "\u{7}",
        "a\rb",
        "\u{9b}",
        "\u{202e}",
        "\u{2067}",
        "\u{61c}",
        "x\nFORGED",
    ] {
        assert!(unsafe_output(bad.as_bytes(), true).is_some(), "{bad:?}");
    }
    assert!(unsafe_output(&[0x9b], false).is_some(), "a raw C1 byte");
    assert!(unsafe_output("a".repeat(LONGEST_LINE + 1).as_bytes(), false).is_some());
    assert!(unsafe_output("a".repeat(LONGEST_LINE + 1).as_bytes(), true).is_none());
    assert!(unsafe_output("tab\tnew\n\u{FFFD}\u{FFFD}FORGED\n".as_bytes(), false).is_none());
}
