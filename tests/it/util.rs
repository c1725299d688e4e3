//! Shared helpers for the integration tests: where the binaries are, a scratch directory with a
//! database, launching `acptap run` between the test (as the client) and a peer process (as the
//! agent), and reading back what was recorded. Failures print full context.

#![allow(dead_code)]

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use serde_json::{Value, json};

pub fn acptap_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_acptap"))
}

/// An example program (test peer), which `cargo test` builds next to the binary.
pub fn example_bin(name: &str) -> PathBuf {
    let path = acptap_bin()
        .parent()
        .expect("target dir")
        .join("examples")
        .join(name);
    assert!(
        path.exists(),
        "{} is missing: run the tests with `cargo test`, which builds the examples",
        path.display()
    );
    path
}

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

pub const SAMPLES: [&str; 5] = [
    "claude-acpx-basic-approve-all.jsonl",
    "claude-acpx-slow-approve-all.jsonl",
    "codex-acpx-basic-approve-all.jsonl",
    "codex-acpx-basic-deny-all.jsonl",
    "gemini-acpx-basic-approve-all.jsonl",
];

/// A scratch directory holding the test's database.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        Sandbox {
            dir: tempfile::tempdir().expect("a temporary directory"),
        }
    }

    pub fn db(&self) -> PathBuf {
        self.dir.path().join("acptap.db")
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn conn(&self) -> Connection {
        let conn = Connection::open(self.db()).expect("open the recorded database");
        conn.busy_timeout(Duration::from_secs(10)).unwrap();
        conn
    }

    /// `acptap run --db <db> [extra] -- agent...`, with all three stdio piped.
    pub fn proxy(&self, extra: &[&str], agent: &[&OsStr]) -> Child {
        self.proxy_into(&self.db(), extra, agent)
    }

    pub fn proxy_into(&self, db: &Path, extra: &[&str], agent: &[&OsStr]) -> Child {
        Command::new(acptap_bin())
            .arg("run")
            .arg("--db")
            .arg(db)
            .args(extra)
            .arg("--")
            .args(agent)
            .env_remove("ACPTAP_DB")
            .env("XDG_CONFIG_HOME", self.dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start acptap run")
    }

    /// `acptap run` with the `sink` peer as the agent: it writes `to_client`, and keeps what it
    /// receives in the returned file once it has read to the end.
    pub fn proxy_to_sink(&self, to_client: &[u8]) -> (Child, PathBuf) {
        let emit = self.path("emit");
        let capture = self.path("capture");
        std::fs::write(&emit, to_client).unwrap();
        let peer = example_bin("peer");
        let child = self.proxy(
            &[],
            &[
                peer.as_os_str(),
                OsStr::new("sink"),
                emit.as_os_str(),
                capture.as_os_str(),
            ],
        );
        (child, capture)
    }

    /// Runs an acptap command (not `run`) against the sandbox database.
    /// `acptap ARGS` against this sandbox's database, whatever its exit status.
    pub fn acptap_status(&self, args: &[&str]) -> Output {
        Command::new(acptap_bin())
            .args(args)
            .env("ACPTAP_DB", self.db())
            .env("XDG_CONFIG_HOME", self.dir.path())
            .output()
            .expect("run acptap")
    }

    pub fn acptap(&self, args: &[&str]) -> Output {
        let output = Command::new(acptap_bin())
            .args(args)
            .env("ACPTAP_DB", self.db())
            .env("XDG_CONFIG_HOME", self.dir.path())
            .output()
            .expect("run acptap");
        assert!(
            output.status.success(),
            "acptap {args:?} failed: {}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    pub fn count(&self, sql: &str) -> i64 {
        self.conn()
            .query_row(sql, [], |r| r.get(0))
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// The recorded bytes of one direction, in order, concatenated.
    pub fn recorded_stream(&self, connection_id: i64, direction: &str) -> Vec<u8> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT raw FROM messages WHERE connection_id = ?1 AND direction = ?2 ORDER BY seq",
            )
            .unwrap();
        let rows = stmt
            .query_map(rusqlite::params![connection_id, direction], |r| {
                r.get::<_, Vec<u8>>(0)
            })
            .unwrap();
        rows.flat_map(|r| r.unwrap()).collect()
    }
}

/// Waits for a process to end, with a generous limit so a hang fails the test instead of
/// blocking it forever. Returns stdout and stderr as read to the end.
pub fn finish(mut child: Child, limit: Duration) -> Output {
    let deadline = Instant::now() + limit;
    loop {
        if child.try_wait().expect("try_wait").is_some() {
            return child.wait_with_output().expect("collect output");
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!(
                "process still running after {limit:?}; stderr:\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Polls `condition` until it holds or `limit` passes (a liveness bound, not a measurement).
pub fn eventually(limit: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if condition() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    condition()
}

/// Whether a process exists and is not a zombie.
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

pub fn read_pid(path: &Path) -> i32 {
    assert!(
        eventually(Duration::from_secs(10), || path.exists()),
        "the peer never wrote {}",
        path.display()
    );
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Plays the sample `name` through `acptap run [extra]`, with the `peer` example playing the
/// agent's side and the test the client's (every byte the client receives checked as it
/// arrives). Returns the proxy's output and how long the client's side took, from the start to
/// its last byte (a figure to report, not to assert).
pub fn play_sample(sandbox: &Sandbox, name: &str, extra: &[&str]) -> (Output, Duration) {
    let path = fixture(name);
    let peer = example_bin("peer");
    let started = Instant::now();
    let mut child = sandbox.proxy(
        extra,
        &[peer.as_os_str(), OsStr::new("script"), path.as_os_str()],
    );
    play_client(&mut child, &load_transcript(&path));
    let client_time = started.elapsed();
    (finish(child, Duration::from_secs(30)), client_time)
}

/// One record of a transcript in the format of shared/samples.
pub struct Record {
    pub dir: String,
    pub bytes: Vec<u8>,
}

pub fn load_transcript(path: &Path) -> Vec<Record> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let mut bytes = v["text"].as_str().unwrap().as_bytes().to_vec();
            if v["eol"].as_bool().unwrap_or(true) {
                bytes.push(b'\n');
            }
            Record {
                dir: v["dir"].as_str().unwrap().to_owned(),
                bytes,
            }
        })
        .collect()
}

/// Plays the client side of a transcript against a running proxy: sends each c2a line when its
/// turn comes, reads each a2c line and checks it is byte-identical. Closes stdin at the end.
pub fn play_client(child: &mut Child, records: &[Record]) {
    let mut client = ClientPlayer::new(child);
    client.play(records);
    client.finish();
}

/// The client's side of a transcript, played in parts (to look at something between them).
pub struct ClientPlayer {
    to_agent: ChildStdin,
    from_agent: BufReader<ChildStdout>,
    played: usize,
}

impl ClientPlayer {
    pub fn new(child: &mut Child) -> ClientPlayer {
        ClientPlayer {
            to_agent: child.stdin.take().unwrap(),
            from_agent: BufReader::new(child.stdout.take().unwrap()),
            played: 0,
        }
    }

    /// Sends the c2a lines of `records` and checks each a2c line as it arrives.
    pub fn play(&mut self, records: &[Record]) {
        for record in records {
            let n = self.played;
            self.played += 1;
            match record.dir.as_str() {
                "c2a" => self.to_agent.write_all(&record.bytes).unwrap(),
                "a2c" => {
                    let mut got = Vec::new();
                    self.from_agent.read_until(b'\n', &mut got).unwrap();
                    assert!(
                        got == record.bytes,
                        "record {n}: the client received\n{}\ninstead of\n{}",
                        String::from_utf8_lossy(&got),
                        String::from_utf8_lossy(&record.bytes)
                    );
                }
                _ => {}
            }
        }
    }

    /// Closes the agent's stdin and checks nothing more arrives.
    pub fn finish(self) {
        let ClientPlayer {
            to_agent,
            mut from_agent,
            ..
        } = self;
        drop(to_agent);
        let mut rest = Vec::new();
        from_agent.read_to_end(&mut rest).unwrap();
        assert!(
            rest.is_empty(),
            "unexpected bytes after the transcript: {rest:?}"
        );
    }
}

pub const SCRIPT: &str = "<script>alert(1)</script>";
pub const BREAKOUT: &str = "\"><img src=x onerror=alert(1)>";
pub const PWN: &str = "<img src=x onerror=\"document.body.dataset.pwned=1\">'><svg onload=\"document.body.dataset.pwned=1\"></textarea></pre></details></style><script>document.body.dataset.pwned=1</script>";

/// Imports lines (`dir`, the line: a string, or a JSON value written as one) as one transcript.
pub fn import_lines(sb: &Sandbox, lines: &[(&str, impl ToString)]) {
    let mut text = String::new();
    for (n, (dir, line)) in lines.iter().enumerate() {
        let line = line.to_string();
        let record = json!({"seq": n, "t": n as f64 * 0.01, "dir": dir, "eol": true, "text": line});
        text.push_str(&record.to_string());
        text.push('\n');
    }
    let path = sb.path("transcript.jsonl");
    std::fs::write(&path, text).unwrap();
    sb.acptap(&["import", path.to_str().unwrap()]);
}

/// The opening of a recorded connection, for `import_lines`: `initialize` (answered by `agent`
/// when given) and `session/new` in `cwd` answered with `session`.
pub fn session_opening(
    cwd: impl serde::Serialize,
    session: &str,
    agent: Option<&str>,
) -> Vec<(&'static str, Value)> {
    let mut answer = json!({"protocolVersion": 1});
    if let Some(agent) = agent {
        answer["agentInfo"] = json!({"name": agent, "version": "1"});
    }
    vec![
        (
            "c2a",
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}),
        ),
        ("a2c", json!({"jsonrpc": "2.0", "id": 0, "result": answer})),
        (
            "c2a",
            json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}}),
        ),
        (
            "a2c",
            json!({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": session}}),
        ),
    ]
}

/// [`session_opening`] and a `session/prompt` (id 2) of `text`, not yet answered.
pub fn opening_lines(
    cwd: impl serde::Serialize,
    session: &str,
    text: &str,
) -> Vec<(&'static str, Value)> {
    let mut lines = session_opening(cwd, session, None);
    lines.push((
        "c2a",
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]}}),
    ));
    lines
}

/// A `session/update` notification.
pub fn update(session: &str, update: Value) -> String {
    json!({"jsonrpc": "2.0", "method": "session/update",
           "params": {"sessionId": session, "update": update}})
    .to_string()
}

/// The XSS corpus every view is tried with: a session whose every recorded string (ids, names,
/// prompt, agent text, plan, tool call, options, diff, stderr, an unparsable line) is markup
/// that would run if put in a page as HTML. Returns its session id and the payload.
pub fn import_hostile_session(sb: &Sandbox) -> (String, String) {
    let payload = format!("{SCRIPT}{BREAKOUT}{PWN}");
    let sid = format!("sess-{BREAKOUT}");
    let tcid = format!("tc-{SCRIPT}");
    let p = payload.as_str();
    let c2a = |v: Value| ("c2a", v.to_string());
    let a2c = |v: Value| ("a2c", v.to_string());
    import_lines(
        sb,
        &[
            c2a(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                       "params": {"protocolVersion": 1, "clientInfo": {"name": p}}})),
            a2c(
                json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1,
                       "agentInfo": {"name": p, "version": p}}}),
            ),
            c2a(json!({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                       "params": {"cwd": format!("/tmp/{p}"), "mcpServers": []}})),
            a2c(json!({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": sid}})),
            c2a(
                json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                       "params": {"sessionId": sid, "prompt": [{"type": "text", "text": p}]}}),
            ),
            (
                "a2c",
                update(
                    &sid,
                    json!({"sessionUpdate": "agent_message_chunk",
                                        "content": {"type": "text", "text": p}}),
                ),
            ),
            (
                "a2c",
                update(
                    &sid,
                    json!({"sessionUpdate": "agent_thought_chunk",
                                        "content": {"type": "text", "text": p}}),
                ),
            ),
            (
                "a2c",
                update(
                    &sid,
                    json!({"sessionUpdate": "plan",
                                        "entries": [{"content": p, "status": p, "priority": "high"}]}),
                ),
            ),
            (
                "a2c",
                update(
                    &sid,
                    json!({"sessionUpdate": "tool_call", "toolCallId": tcid,
                                        "title": format!("T1 {p}"), "kind": format!("_{p}"),
                                        "status": "pending", "rawInput": {"command": p},
                                        "locations": [{"path": p}]}),
                ),
            ),
            a2c(
                json!({"jsonrpc": "2.0", "id": 7, "method": "session/request_permission",
                       "params": {"sessionId": sid, "toolCall": {"toolCallId": tcid},
                                  "options": [{"optionId": p, "name": format!("N1 {p}"), "kind": "allow_once"},
                                              {"optionId": "no", "name": "No", "kind": format!("_{p}")}]}}),
            ),
            c2a(json!({"jsonrpc": "2.0", "id": 7,
                       "result": {"outcome": {"outcome": "selected", "optionId": p}}})),
            (
                "a2c",
                update(
                    &sid,
                    json!({"sessionUpdate": "tool_call_update", "toolCallId": tcid,
                                        "status": format!("_{p}"), "rawOutput": format!("OUT {p}"),
                                        "content": [
                                            {"type": "content", "content": {"type": "text", "text": p}},
                                            {"type": "diff", "path": p, "oldText": p, "newText": format!("{p}\n{p}")},
                                            {"type": p}]}),
                ),
            ),
            a2c(json!({"jsonrpc": "2.0", "method": p, "params": {"sessionId": sid}})),
            ("stderr", p.to_owned()),
            ("a2c", format!("not json {p}")),
            a2c(json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": p}})),
        ],
    );
    (sid, payload)
}
