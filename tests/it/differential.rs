//! The policy tap and the recorder see the same tool calls, and `policy replay` gives back every
//! recorded decision. Run through the binary with `--shadow` (the client still answers, so the
//! bytes are the transcript's) for every shared sample and for random streams full of the lines
//! that once split them: batches, escaped keys, lone surrogates, `NaN`, content chunks and lines
//! nothing can read.
//!
//! "The recorder's view" is the state rebuilt from the recorded lines with the recorder's own
//! rules (`protocol::message::decode`, `protocol::toolcall::ToolCalls`); "the tap's view" is what
//! the tap recorded as its policy input at each request.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use acptap::policy::{Context, DecisionInput};
use acptap::protocol::message::decode;
use acptap::protocol::toolcall::{self, ToolCalls, UpdateKind};
use serde_json::{Value, json};

use crate::util::{
    Record, SAMPLES, Sandbox, example_bin, finish, fixture, load_transcript, play_client,
};

fn project_policy() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/policies/project.toml")
}

/// Plays a transcript (the agent's side by the peer, the client's by the test) through
/// `acptap run --shadow --policy project.toml`.
fn run_shadowed(sb: &Sandbox, transcript: &Path) {
    let policy = project_policy();
    let peer = example_bin("peer");
    let mut child = sb.proxy(
        &["--shadow", "--policy", policy.to_str().unwrap()],
        &[
            peer.as_os_str(),
            OsStr::new("script"),
            transcript.as_os_str(),
        ],
    );
    play_client(&mut child, &load_transcript(transcript));
    let output = finish(child, Duration::from_secs(60));
    assert!(
        output.status.success(),
        "{}: {}",
        transcript.display(),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// For every recorded permission request: the tap's recorded input, and the input rebuilt from
/// the agent's recorded lines before it by the recorder's rules.
fn views(sb: &Sandbox) -> Vec<(i64, Value, Value)> {
    let conn = sb.conn();
    let lines: Vec<(i64, Vec<u8>)> = conn
        .prepare("SELECT seq, raw FROM messages WHERE direction = 'a2c' ORDER BY seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let requests: Vec<(i64, String)> = conn
        .prepare("SELECT request_seq, policy_input FROM permission_requests ORDER BY request_seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut out = Vec::new();
    for (request_seq, recorded) in requests {
        let recorded: DecisionInput = serde_json::from_str(&recorded).unwrap();
        let mut calls = ToolCalls::default();
        let mut request = None;
        for (seq, raw) in &lines {
            let Some(value) = decode(raw) else { continue };
            let messages = match value {
                Value::Array(items) => items,
                one => vec![one],
            };
            for message in messages {
                let Some(params) = message.get("params") else {
                    continue;
                };
                let session = params["sessionId"].as_str().unwrap_or_default();
                let method = message.get("method").and_then(Value::as_str);
                if *seq == request_seq {
                    request = Some(params.clone());
                    break;
                }
                if method == Some("session/update")
                    && let Some((update, how)) = toolcall::from_session_update(params)
                {
                    calls.apply(session, update, how);
                } else if method == Some("session/request_permission")
                    && let Some(Value::Object(update)) = params.get("toolCall")
                {
                    calls.apply(session, update, UpdateKind::PermissionRequest);
                }
            }
            if request.is_some() {
                break;
            }
        }
        let params = request.expect("the request's line");
        let session = params["sessionId"].as_str().unwrap_or_default();
        let id = params["toolCall"]["toolCallId"]
            .as_str()
            .unwrap_or_default();
        let rebuilt = DecisionInput::new(
            &params,
            calls.get(session, id),
            Context {
                cwd: recorded.cwd.as_deref().map(Path::new),
                agent: recorded.agent.as_deref(),
                ..Default::default()
            },
            None,
        );
        out.push((
            request_seq,
            json!(recorded.tool_call),
            json!(rebuilt.tool_call),
        ));
    }
    out
}

/// `policy replay --json` with the same policy: every request decided on its recorded input,
/// with the recorded decision and rule.
fn assert_replay_reproduces(sb: &Sandbox, what: &str) {
    let policy = project_policy();
    let out = sb.acptap(&[
        "policy",
        "replay",
        "--policy",
        policy.to_str().unwrap(),
        "--json",
        "all",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let replayed: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let recorded: Vec<(i64, Option<String>, String)> = sb
        .conn()
        .prepare(
            "SELECT request_seq, policy_rule, policy_decision FROM permission_requests ORDER BY request_seq",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(replayed.len(), recorded.len(), "{what}");
    for (seq, rule, decision) in recorded {
        let row = replayed
            .iter()
            .find(|r| r["request_seq"] == seq)
            .unwrap_or_else(|| panic!("{what}: the request at seq {seq} was not replayed"));
        assert_eq!(row["input"], "recorded", "{what}: {row}");
        assert_eq!(
            row["policy"]["decision"],
            decision.as_str(),
            "{what}: {row}"
        );
        assert_eq!(row["policy"]["rule"], json!(rule), "{what}: {row}");
    }
}

#[test]
fn every_sample_the_tap_and_the_recorder_agree_and_replay_reproduces_the_decisions() {
    let mut requests = 0;
    for name in SAMPLES {
        let sb = Sandbox::new();
        run_shadowed(&sb, &fixture(name));
        for (seq, tap, recorder) in views(&sb) {
            assert_eq!(tap, recorder, "{name}: the request at seq {seq}");
            requests += 1;
        }
        assert_replay_reproduces(&sb, name);
    }
    assert!(
        requests >= 5,
        "the samples hold {requests} permission requests"
    );
}

/// A small deterministic generator (xorshift), so a failing stream can be named by its seed.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[(self.next() % items.len() as u64) as usize]
    }
}

/// One random agent line about tool call `id`: announcements and updates in every spelling.
fn random_update(rng: &mut Random, id: &str) -> String {
    let kind = rng.pick(&["read", "edit", "execute", "search", "other"]);
    let path = rng.pick(&[
        "/home/user/project/src/a.rs",
        "/etc/passwd",
        "/home/user/.ssh/id_rsa",
    ]);
    let command = rng.pick(&["cargo test", "git status", "rm -rf ~", "curl x | sh", "ls"]);
    let fields = match rng.next() % 4 {
        0 => format!(r#""kind":"{kind}","locations":[{{"path":"{path}"}}]"#),
        1 => format!(r#""kind":"{kind}","rawInput":{{"command":"{command}"}}"#),
        2 => format!(r#""status":"{}""#, rng.pick(&["in_progress", "pending"])),
        _ => format!(
            r#""title":"{}","content":[{{"type":"diff","path":"{path}","newText":"x"}}]"#,
            rng.pick(&["t", "\\ud83d", "ok"])
        ),
    };
    let tag = rng.pick(&["tool_call", "tool_call_update", "tool_call_update"]);
    let key = rng.pick(&["toolCallId", "toolCallId", "toolCall\\u0049d"]);
    let update = format!(r#"{{"sessionUpdate":"{tag}","{key}":"{id}",{fields}}}"#);
    let line = format!(
        r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s1","update":{update}}}}}"#
    );
    match rng.next() % 8 {
        0 => format!("[{line}]"),
        1 => line.replacen(r#""jsonrpc":"2.0""#, r#""jsonrpc":"2.0","n":NaN"#, 1),
        2 => format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s1","update":{{"sessionUpdate":"tool_call_content_chunk","toolCallId":"{id}","content":{{"type":"content","content":{{"type":"text","text":"c"}}}}}}}}}}"#
        ),
        3 => format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"update":{{"toolCallId":"{id}", broken"#
        ),
        _ => line,
    }
}

/// A random session: the opening, then tool-call lines and permission requests (each answered
/// by the client, as `--shadow` leaves them to it).
fn random_transcript(seed: u64) -> Vec<Record> {
    let mut rng = Random(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut lines: Vec<(&str, String)> = vec![
        ("c2a", r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#.into()),
        ("a2c", r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"random"}}}"#.into()),
        ("c2a", r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/home/user/project","mcpServers":[]}}"#.into()),
        ("a2c", r#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}"#.into()),
        ("c2a", r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}"#.into()),
    ];
    let mut request_id = 100;
    for _ in 0..40 {
        let id = rng.pick(&["t1", "t2", "t3"]).to_string();
        if rng.next().is_multiple_of(5) {
            request_id += 1;
            let own = rng
                .pick(&[
                    String::new(),
                    r#","kind":"read""#.into(),
                    r#","rawInput":{"command":"git status"},"kind":"execute""#.into(),
                ])
                .clone();
            lines.push(("a2c", format!(
                r#"{{"jsonrpc":"2.0","id":{request_id},"method":"session/request_permission","params":{{"sessionId":"s1","toolCall":{{"toolCallId":"{id}"{own}}},"options":[{{"optionId":"allow","name":"Allow","kind":"allow_once"}},{{"optionId":"reject","name":"Reject","kind":"reject_once"}}]}}}}"#
            )));
            lines.push(("c2a", format!(
                r#"{{"jsonrpc":"2.0","id":{request_id},"result":{{"outcome":{{"outcome":"selected","optionId":"reject"}}}}}}"#
            )));
        } else {
            lines.push(("a2c", random_update(&mut rng, &id)));
        }
    }
    lines.push((
        "a2c",
        r#"{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}"#.into(),
    ));
    lines
        .into_iter()
        .map(|(dir, text)| Record {
            dir: dir.into(),
            bytes: format!("{text}\n").into_bytes(),
        })
        .collect()
}

#[test]
fn random_streams_the_tap_and_the_recorder_agree_and_replay_reproduces_the_decisions() {
    let mut requests = 0;
    for seed in 1..=12 {
        let sb = Sandbox::new();
        let transcript = sb.path("random.jsonl");
        let text: Vec<String> = random_transcript(seed)
            .iter()
            .map(|r| {
                let text = String::from_utf8(r.bytes[..r.bytes.len() - 1].to_vec()).unwrap();
                json!({"dir": r.dir, "eol": true, "text": text}).to_string()
            })
            .collect();
        std::fs::write(&transcript, text.join("\n")).unwrap();
        run_shadowed(&sb, &transcript);
        for (seq, tap, recorder) in views(&sb) {
            assert_eq!(tap, recorder, "seed {seed}: the request at seq {seq}");
            requests += 1;
        }
        assert_replay_reproduces(&sb, &format!("seed {seed}"));
    }
    assert!(
        requests >= 40,
        "the random streams held {requests} permission requests"
    );
}
