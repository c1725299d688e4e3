//! Every view reads an ACP v2 recording right: `show`, `report`, the ui's JSON, the MCP
//! timeline and the OTLP spans, over a transcript (tests/fixtures/v2_views/) with a prompt turn
//! whose two agent messages stream interleaved by `messageId` before the first is replaced by an
//! `agent_message` upsert; a thought and a user message; state, plan and terminal updates; a
//! tool call created by a `tool_call_update`; a permission request with a command subject; an
//! elicitation answered `accept`; `tool_call/cancel`, `terminal/cancel`, and a `$/cancel_request`
//! of a pending `session/status`; a `session/resume` with `replayFrom`. A second connection
//! resumes another session and replays its history before its first prompt.
//!
//! Each view must show a message's final text (never the concatenation of its updates), the
//! permission's title, description and subject, the elicitation's answer, and what each
//! cancellation cancelled.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

use crate::util::{Sandbox, acptap_bin, fixture};

const SESSION: &str = "sess-v2";
const RESUMED: &str = "sess-resumed";
/// The first agent message, as its upsert left it.
const FINAL_TEXT: &str = "I will run the tests now.";
/// What its chunks said before the upsert replaced them.
const STREAMED: &str = "Let me look around.";
const SECOND: &str = "Side note: the tree is clean.";

/// A database holding both v2 transcripts: connection 1 (`sess-v2`), connection 2 (the resume).
fn recorded() -> Sandbox {
    let sb = Sandbox::new();
    for name in ["v2-session.jsonl", "v2-resume.jsonl"] {
        let path = fixture(&format!("v2_views/{name}"));
        sb.acptap(&["import", path.to_str().unwrap()]);
    }
    sb
}

fn stdout(sb: &Sandbox, args: &[&str]) -> String {
    String::from_utf8(sb.acptap(args).stdout).unwrap()
}

/// The seq of the first recorded line of connection 1 holding `text`.
fn seq_of(sb: &Sandbox, text: &str) -> i64 {
    sb.conn()
        .query_row(
            "SELECT seq FROM messages WHERE connection_id = 1 AND instr(raw, ?1) ORDER BY seq",
            [text],
            |r| r.get(0),
        )
        .unwrap()
}

#[test]
fn show_tells_final_messages_permissions_elicitations_and_cancellations() {
    let sb = recorded();
    let shown = stdout(&sb, &["show", SESSION]);
    let status_seq = seq_of(&sb, "\"session/status\"");
    for expected in [
        "protocol v2 (draft)",
        "  user: Run the tests, then push",
        "  thinks: The suite runs with cargo test.",
        &format!("  agent: {FINAL_TEXT}\n"),
        &format!("  agent: {SECOND}\n"),
        "  state: running",
        "    [in_progress] Run the tests",
        "  tool execute   completed",
        "  permission for Run cargo test?: allow (allow_once) · by client",
        "    The agent wants to run the test suite.",
        "    subject: command: cargo test (in /abs/project)",
        "  terminal term_1: cargo test (in /abs/project) · exit 0 · 42 byte(s) of output",
        "    output ends: test result: ok. 3 passed",
        "  elicitation (form): Which branch should I push to? · accept by client",
        "    accepted: {\"branch\":\"main\"}",
        "  terminal term_2: git push origin main (in /abs/project) · signal SIGTERM",
        "  tool_call/cancel (from client): tool call call_2 (Push to main) → ok",
        "  terminal/cancel (from client): terminal term_2 (git push origin main) → ok",
        "  session/status (from client) → error: Request cancelled",
        &format!("  $/cancel_request (from client): request 5: session/status (line {status_seq})"),
        "  state: idle (end_turn)",
        "  session/resume (from client): replay from the start in /abs/project → ok",
        "  session/set_title (from client): title \"Tests and push\" → ok",
    ] {
        assert!(
            shown.contains(expected),
            "missing {expected:?} in:\n{shown}"
        );
    }
    // A message is its final text, shown once where it began: not its streamed chunks, not the
    // chunks and the upsert together, and not again for the resume's replay of it.
    assert!(!shown.contains(STREAMED), "{shown}");
    assert!(!shown.contains("Let me "), "{shown}");
    assert_eq!(shown.matches(FINAL_TEXT).count(), 1, "{shown}");
    assert_eq!(shown.matches("user: Run the tests").count(), 1, "{shown}");

    // The same as data: message ids, and the permission's v2 fields.
    let timeline: Value = serde_json::from_str(&stdout(&sb, &["show", "--json", SESSION])).unwrap();
    assert_eq!(timeline["session"]["protocol_version"], 2);
    let items = timeline["turns"][0]["items"].as_array().unwrap();
    let said: Vec<(&str, &str)> = items
        .iter()
        .filter(|i| i["type"] == "agent_text")
        .map(|i| {
            (
                i["message_id"].as_str().unwrap(),
                i["text"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(said, [("m1", FINAL_TEXT), ("m2", SECOND)]);
    let permission = items.iter().find(|i| i["type"] == "permission").unwrap();
    assert_eq!(permission["title"], "Run cargo test?");
    assert_eq!(
        permission["description"],
        "The agent wants to run the test suite."
    );
    assert_eq!(permission["subject"]["type"], "command");
    assert_eq!(
        permission["subject_summary"],
        "command: cargo test (in /abs/project)"
    );
    assert_eq!(permission["tool_call_id"], "call_1");
    assert_eq!(permission["tool_call_title"], "Run cargo test");
    let elicitation = items.iter().find(|i| i["type"] == "elicitation").unwrap();
    assert_eq!(elicitation["action"], "accept");
    assert_eq!(elicitation["answered_by"], "client");
    let cancel = items
        .iter()
        .find(|i| i["type"] == "request" && i["method"] == "$/cancel_request")
        .unwrap();
    assert_eq!(cancel["cancels_seq"], status_seq);
    let terminal = items
        .iter()
        .find(|i| i["type"] == "terminal" && i["terminal_id"] == "term_1")
        .unwrap();
    assert_eq!(
        terminal["output"],
        "running 3 tests\ntest result: ok. 3 passed\n"
    );

    // The transcript export carries the v2 lines as they were: imported again, it shows the same.
    let exported = stdout(&sb, &["export", SESSION]);
    let again = Sandbox::new();
    let path = again.path("again.jsonl");
    std::fs::write(&path, exported).unwrap();
    again.acptap(&["import", path.to_str().unwrap()]);
    let shown_again = stdout(&again, &["show", SESSION]);
    let turns = |text: &str| text[text.find("\nTurn 1").unwrap()..].to_owned();
    assert_eq!(turns(&shown_again), turns(&shown));
}

#[test]
fn the_report_shows_the_same() {
    let sb = recorded();
    let report = sb.path("report.html");
    sb.acptap(&["report", SESSION, "-o", report.to_str().unwrap()]);
    let html = std::fs::read_to_string(&report).unwrap();
    for expected in [
        "<dt>Protocol</dt><dd>v2 (draft)</dd>",
        &format!("<span class=\"who\">agent</span><pre class=\"text\">{FINAL_TEXT}</pre>"),
        &format!("<span class=\"who\">agent</span><pre class=\"text\">{SECOND}</pre>"),
        "<span class=\"who\">user</span><pre class=\"text\">Run the tests, then push</pre>",
        "Run cargo test?</a>",
        "<div class=\"meta\">The agent wants to run the test suite.</div>",
        "<div class=\"meta\">subject: <code>command: cargo test (in /abs/project)</code></div>",
        "<code>cargo test</code> in <code>/abs/project</code> <span class=\"status st-completed\">exit 0</span>",
        "Elicitation (form): Which branch should I push to? · <span class=\"decision allow\">accept by client</span>",
        "<code>tool_call/cancel</code> from client: tool call call_2 (Push to main) → ok",
        "<code>$/cancel_request</code> from client: request 5: session/status (<a class=\"msglink\"",
        "<code>session/resume</code> from client: replay from the start in /abs/project → ok",
    ] {
        assert!(html.contains(expected), "missing {expected:?}");
    }
    let timeline =
        &html[html.find("id=\"timeline\"").unwrap()..html.find("id=\"messages\"").unwrap()];
    assert!(!timeline.contains(STREAMED), "{timeline}");

    // The resumed session: its replayed history before its first turn, each message once, final.
    sb.acptap(&["report", RESUMED, "-o", report.to_str().unwrap()]);
    let html = std::fs::read_to_string(&report).unwrap();
    let opening = &html[html.find("id=\"opening\"").expect("an opening section")
        ..html.find("id=\"turn-1\"").unwrap()];
    assert!(
        opening.contains("<code>session/resume</code> from client: replay from the start"),
        "{opening}"
    );
    assert!(
        opening.contains("<pre class=\"text\">We renamed the config loader.</pre>"),
        "{opening}"
    );
    assert!(
        opening.contains("<pre class=\"text\">What did we change yesterday?</pre>"),
        "{opening}"
    );
    assert_eq!(opening.matches("We renamed").count(), 1, "{opening}");
}

/// `acptap ui` on the sandbox's database; killed when dropped.
struct Ui {
    child: Child,
    port: u16,
    token: String,
}

impl Drop for Ui {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Ui {
    fn start(sb: &Sandbox) -> Ui {
        let mut child = Command::new(acptap_bin())
            .args(["ui", "--db"])
            .arg(sb.db())
            .env("XDG_CONFIG_HOME", sb.dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let rest = line
            .trim()
            .strip_prefix("http://127.0.0.1:")
            .expect(&line)
            .to_owned();
        let (port, token) = rest.split_once("/?token=").expect(&line);
        Ui {
            port: port.parse().unwrap(),
            token: token.to_owned(),
            child,
        }
    }

    /// A JSON endpoint's answer (asserting 200).
    fn get(&self, path: &str) -> Value {
        let at = format!("127.0.0.1:{}", self.port);
        let mut stream = TcpStream::connect(&at).unwrap();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: {at}\r\nCookie: acptap_ui_{}={}\r\nConnection: close\r\n\r\n",
            self.port, self.token
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 200"), "{path}: {answer}");
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))
    }
}

#[test]
fn the_ui_api_serves_the_same() {
    let sb = recorded();
    let ui = Ui::start(&sb);
    let base = format!("/api/sessions/1/{SESSION}");
    let head = ui.get(&base);
    assert_eq!(head["protocol"], "v2 (draft)");

    let turn = ui.get(&format!("{base}/turns/1"));
    let items = turn["items"].as_array().unwrap();
    let texts: Vec<&str> = items
        .iter()
        .filter(|i| i["type"] == "agent_text")
        .map(|i| i["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, [FINAL_TEXT, SECOND]);
    let permission = items.iter().find(|i| i["type"] == "permission").unwrap();
    assert_eq!(permission["title"], "Run cargo test?");
    assert_eq!(
        permission["subject_summary"],
        "command: cargo test (in /abs/project)"
    );
    let elicitation = items.iter().find(|i| i["type"] == "elicitation").unwrap();
    assert_eq!(elicitation["action"], "accept", "{elicitation}");
    let terminal = items.iter().find(|i| i["type"] == "terminal").unwrap();
    assert_eq!(terminal["command"], "cargo test");
    assert_eq!(terminal["exit_code"], 0);
    let requests: Vec<(&str, &str)> = items
        .iter()
        .filter(|i| i["type"] == "request")
        .map(|i| (i["method"].as_str().unwrap(), i["about"].as_str().unwrap()))
        .collect();
    assert!(
        requests.contains(&("tool_call/cancel", "tool call call_2 (Push to main)")),
        "{requests:?}"
    );
    assert!(
        requests.contains(&("$/cancel_request", "request 5: session/status")),
        "{requests:?}"
    );
    assert!(
        requests.contains(&("session/resume", "replay from the start in /abs/project")),
        "{requests:?}"
    );

    let permissions = ui.get(&format!("{base}/permissions"));
    let listed = &permissions["items"][0];
    assert_eq!(listed["title"], "Run cargo test?");
    assert_eq!(listed["tool_call_title"], "Run cargo test");
    assert_eq!(
        listed["description"],
        "The agent wants to run the test suite."
    );
    assert_eq!(
        listed["subject_summary"],
        "command: cargo test (in /abs/project)"
    );

    // What the resumed session replayed before its first turn.
    let opening = ui.get(&format!("/api/sessions/2/{RESUMED}/opening"));
    let kinds: Vec<(&str, &str)> = opening["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["type"].as_str().unwrap(),
                i["text"].as_str().or(i["method"].as_str()).unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("request", "session/resume"),
            ("user_text", "What did we change yesterday?"),
            ("agent_text", "We renamed the config loader."),
        ]
    );
}

/// Runs the MCP test client (the official Python SDK, tests/mcp/client.py) with `calls`.
fn mcp(sb: &Sandbox, calls: &[Value]) -> Vec<Value> {
    let python = crate::tools::python();
    let file = sb.path("calls.json");
    std::fs::write(&file, serde_json::to_string(calls).unwrap()).unwrap();
    let out = Command::new(&python)
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/client.py"))
        .arg(acptap_bin())
        .arg(sb.db())
        .arg(format!("@{}", file.display()))
        .current_dir(sb.dir.path())
        .output()
        .unwrap_or_else(|e| panic!("{}: {e} (scripts/test.sh installs it)", python.display()));
    assert!(
        out.status.success(),
        "the MCP client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|result| {
            assert_eq!(result["is_error"], false, "{result}");
            serde_json::from_str(result["text"].as_str().unwrap()).unwrap()
        })
        .collect()
}

#[test]
fn the_mcp_timeline_tells_the_same() {
    let sb = recorded();
    let answers = mcp(
        &sb,
        &[
            json!({"tool": "session_timeline", "arguments": {"session": SESSION}}),
            json!({"tool": "list_permission_requests", "arguments": {"session": SESSION}}),
            json!({"tool": "session_timeline", "arguments": {"session": RESUMED}}),
        ],
    );
    let timeline = &answers[0];
    assert_eq!(timeline["session"]["protocol"], "v2 (draft)");
    let items = timeline["turns"][0]["items"].as_array().unwrap();
    let texts: Vec<&str> = items
        .iter()
        .filter(|i| i["type"] == "agent_text")
        .map(|i| i["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, [FINAL_TEXT, SECOND]);
    assert!(!timeline.to_string().contains(STREAMED));
    let permission = items.iter().find(|i| i["type"] == "permission").unwrap();
    assert_eq!(permission["title"], "Run cargo test?");
    assert_eq!(
        permission["description"],
        "The agent wants to run the test suite."
    );
    assert_eq!(
        permission["subject_summary"],
        "command: cargo test (in /abs/project)"
    );
    let elicitation = items.iter().find(|i| i["type"] == "elicitation").unwrap();
    assert_eq!(elicitation["action"], "accept");
    assert!(
        items.iter().any(|i| i["method"] == "$/cancel_request"
            && i["about"] == "request 5: session/status"),
        "{items:?}"
    );
    assert!(
        items
            .iter()
            .any(|i| i["method"] == "tool_call/cancel" && i["answer"] == "ok"),
        "{items:?}"
    );

    let permissions = &answers[1]["items"][0];
    assert_eq!(permissions["title"], "Run cargo test?");
    assert_eq!(permissions["subject"]["command"], "cargo test");

    let resumed = &answers[2];
    let before = resumed["opening"].as_array().unwrap();
    assert_eq!(before[0]["method"], "session/resume", "{before:?}");
    assert_eq!(before[2]["text"], "We renamed the config loader.");
}

/// The string value of a span attribute in OTLP/JSON.
fn attribute<'a>(span: &'a Value, key: &str) -> Option<&'a str> {
    span["attributes"]
        .as_array()?
        .iter()
        .find(|a| a["key"] == key)?["value"]["stringValue"]
        .as_str()
}

#[test]
fn otlp_spans_carry_the_final_messages_and_the_permission_asked() {
    let sb = recorded();
    let exported: Value = serde_json::from_str(&stdout(
        &sb,
        &["export", SESSION, "--format", "otlp-json", "--tool-content"],
    ))
    .unwrap();
    let spans: Vec<&Value> = exported["resourceSpans"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["scopeSpans"].as_array().unwrap())
        .flat_map(|s| s["spans"].as_array().unwrap())
        .collect();
    let turn = spans
        .iter()
        .find(|s| s["name"].as_str().unwrap().starts_with("invoke_agent"))
        .unwrap();
    let output: Value =
        serde_json::from_str(attribute(turn, "gen_ai.output.messages").unwrap()).unwrap();
    let said: Vec<(&str, &str)> = output
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["parts"][0]["type"].as_str().unwrap(),
                m["parts"][0]["content"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        said,
        [
            ("reasoning", "The suite runs with cargo test."),
            ("text", FINAL_TEXT),
            ("text", SECOND),
        ]
    );
    assert_eq!(output[1]["role"], "assistant");
    assert_eq!(output[1]["finish_reason"], "end_turn");
    let input: Value =
        serde_json::from_str(attribute(turn, "gen_ai.input.messages").unwrap()).unwrap();
    assert_eq!(input[0]["parts"][0]["content"], "Run the tests, then push");

    let permission = spans
        .iter()
        .find(|s| s["name"] == "acp.permission")
        .unwrap();
    assert_eq!(
        attribute(permission, "acp.permission.title"),
        Some("Run cargo test?")
    );
    assert_eq!(
        attribute(permission, "acp.permission.subject"),
        Some("command: cargo test (in /abs/project)")
    );
    assert_eq!(
        attribute(permission, "acp.permission.subject.type"),
        Some("command")
    );
    assert_eq!(attribute(permission, "gen_ai.tool.call.id"), Some("call_1"));

    // Without --tool-content the spans carry no message text.
    let plain = stdout(&sb, &["export", SESSION, "--format", "otlp-json"]);
    assert!(!plain.contains("gen_ai.output.messages"));
    assert!(!plain.contains(FINAL_TEXT));
}
