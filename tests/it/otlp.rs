//! `acptap export --format otlp` against a real trace backend: Arize Phoenix (`pip install
//! arize-phoenix`, installed by `scripts/test.sh` into a virtual environment), started by the test on
//! free ports. Every sample is imported and sent; the spans are read back over Phoenix's REST API
//! and checked against the recording: every tool call, every permission decision with its
//! decider, the parent of each span, the session id. A second send gives the same ids.

use std::collections::HashMap;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use acptap::query::Reader;
use acptap::query::{self, resolve_session};

use std::ffi::OsStr;

use acptap::export::spans::{Span, session_spans};

use crate::util::{
    ClientPlayer, SAMPLES, Sandbox, eventually, example_bin, finish, fixture, load_transcript,
    play_sample,
};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A Phoenix server for one test, killed when dropped.
struct Phoenix {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Phoenix {
    fn start() -> Phoenix {
        let bin = crate::tools::phoenix();
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let child = Command::new(&bin)
            .arg("serve")
            .env("PHOENIX_WORKING_DIR", dir.path())
            .env("PHOENIX_PORT", port.to_string())
            .env("PHOENIX_GRPC_PORT", free_port().to_string())
            .env("PHOENIX_HOST", "127.0.0.1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start phoenix");
        let phoenix = Phoenix {
            child,
            port,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(120);
        while phoenix.get("/v1/projects").is_none() {
            assert!(Instant::now() < deadline, "phoenix did not start in 120 s");
            std::thread::sleep(Duration::from_millis(500));
        }
        phoenix
    }

    /// GET a path of Phoenix's REST API as JSON, with the virtual environment's Python (no HTTP
    /// client in the test's dependencies).
    fn get(&self, path: &str) -> Option<Value> {
        let python = crate::tools::python();
        let out = Command::new(python)
            .args([
                "-c",
                "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())",
                &format!("http://127.0.0.1:{}{path}", self.port),
            ])
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| serde_json::from_slice(&out.stdout).ok())
            .flatten()
    }

    /// The spans of the default project whose trace is `trace`, waiting for them to arrive.
    fn spans(&self, trace: &str, expected: usize) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let spans: Vec<Value> = self
                .get("/v1/projects/default/spans?limit=1000")
                .and_then(|v| v["data"].as_array().cloned())
                .unwrap_or_default()
                .into_iter()
                .filter(|s| s["context"]["trace_id"] == trace)
                .collect();
            if spans.len() >= expected || Instant::now() > deadline {
                return spans;
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Checks that Phoenix holds the spans the recording gives for its last session (waiting for
/// them to arrive): every span by id, with its name and parent and the session id; every tool
/// call; every permission decision with who decided. Returns the spans the recording gives.
fn check_in_phoenix(phoenix: &Phoenix, sb: &Sandbox, sample: &str) -> Vec<Span> {
    let reader = Reader::open(&sb.db()).unwrap();
    let session = resolve_session(&reader, "last").unwrap();
    let model = session_spans(&reader, &session, Default::default()).unwrap();
    let trace = hex(&model[0].trace_id);
    let spans = phoenix.spans(&trace, model.len());
    assert_eq!(spans.len(), model.len(), "{sample}: spans in Phoenix");
    let by_id: HashMap<&str, &Value> = spans
        .iter()
        .map(|s| (s["context"]["span_id"].as_str().unwrap(), s))
        .collect();
    for expected in &model {
        let got = by_id
            .get(hex(&expected.span_id).as_str())
            .unwrap_or_else(|| panic!("{sample}: {} is not in Phoenix", expected.name));
        assert_eq!(got["name"], expected.name, "{sample}");
        assert_eq!(
            got["parent_id"].as_str().map(str::to_owned),
            expected.parent_span_id.map(|p| hex(&p)),
            "{sample}: the parent of {}",
            expected.name
        );
        assert_eq!(
            got["attributes"]["gen_ai.conversation.id"],
            session.session_id.as_str(),
            "{sample}"
        );
    }
    // Every tool call and every decision, with who decided.
    let calls = query::session_tool_calls(&reader, &session).unwrap();
    for call in &calls {
        assert!(
            spans
                .iter()
                .any(|s| s["name"].as_str().unwrap().starts_with("execute_tool")
                    && s["attributes"]["gen_ai.tool.call.id"] == call.tool_call_id.as_str()),
            "{sample}: tool call {} missing",
            call.tool_call_id
        );
    }
    let permissions = query::permission_requests(&reader, &session).unwrap();
    let decided: Vec<&str> = spans
        .iter()
        .filter(|s| s["name"] == "acp.permission")
        .filter_map(|s| s["attributes"]["acp.permission.decided_by"].as_str())
        .collect();
    assert_eq!(decided.len(), permissions.len(), "{sample}: decisions");
    for request in &permissions {
        let by = match request.decided_by.as_deref() {
            Some("client") => "user",
            Some(by) => by,
            None => "unanswered",
        };
        assert!(decided.contains(&by), "{sample}: no decision by {by}");
    }
    model
}

#[test]
fn every_sample_reaches_phoenix_as_one_trace_with_its_calls_and_decisions() {
    let phoenix = Phoenix::start();
    let endpoint = format!("http://127.0.0.1:{}", phoenix.port);
    for sample in SAMPLES {
        let sb = Sandbox::new();
        sb.acptap(&["import", fixture(sample).to_str().unwrap()]);
        let out = sb.acptap(&[
            "export",
            "last",
            "--format",
            "otlp",
            "--endpoint",
            &endpoint,
        ]);
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        let model = check_in_phoenix(&phoenix, &sb, sample);
        let trace = hex(&model[0].trace_id);
        assert!(said.contains(&trace), "{sample}: {said}");
        assert!(
            said.contains(&format!("sent {} span(s)", model.len())),
            "{sample}: {said}"
        );

        // Sent again: the same ids, so the backend holds the same spans, not new ones.
        sb.acptap(&[
            "export",
            "last",
            "--format",
            "otlp",
            "--endpoint",
            &endpoint,
        ]);
        let again = phoenix.spans(&trace, model.len());
        let mut ids: Vec<&str> = again
            .iter()
            .map(|s| s["context"]["span_id"].as_str().unwrap())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(
            ids.len(),
            model.len(),
            "{sample}: a resend made new span ids"
        );
    }
}

/// `acptap run --otlp`: every sample recorded through the proxy between a client and an agent
/// process reaches Phoenix, the same spans as the recording gives; and a tool call's span is
/// there while the session still runs.
#[test]
fn run_with_otlp_sends_every_sample_while_it_runs() {
    let phoenix = Phoenix::start();
    let endpoint = format!("http://127.0.0.1:{}", phoenix.port);
    for sample in SAMPLES {
        let sb = Sandbox::new();
        let (out, _) = play_sample(&sb, sample, &["--otlp", &endpoint]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{sample}: {stderr}");
        assert!(!stderr.contains("not sent"), "{sample}: {stderr}");
        check_in_phoenix(&phoenix, &sb, sample);
    }

    // Live: stop the client after the first tool call completes; its span reaches Phoenix
    // while the proxy still runs.
    let sample = "claude-acpx-basic-approve-all.jsonl";
    let records = load_transcript(&fixture(sample));
    let completed = records
        .iter()
        .position(|r| {
            let text = String::from_utf8_lossy(&r.bytes);
            r.dir == "a2c"
                && text.contains("tool_call_update")
                && text.contains(r#""status":"completed""#)
        })
        .expect("a completed tool call in the sample");
    let call_id = serde_json::from_slice::<Value>(&records[completed].bytes).unwrap()["params"]
        ["update"]["toolCallId"]
        .as_str()
        .unwrap()
        .to_owned();
    let sb = Sandbox::new();
    let peer = example_bin("peer");
    let path = fixture(sample);
    let mut child = sb.proxy(
        &["--otlp", &endpoint],
        &[peer.as_os_str(), OsStr::new("script"), path.as_os_str()],
    );
    let mut client = ClientPlayer::new(&mut child);
    client.play(&records[..=completed]);
    let seen_live = eventually(Duration::from_secs(30), || {
        phoenix
            .get("/v1/projects/default/spans?limit=1000")
            .and_then(|v| v["data"].as_array().cloned())
            .unwrap_or_default()
            .iter()
            .any(|s| {
                s["attributes"]["gen_ai.tool.call.id"] == call_id.as_str()
                    && s["attributes"]["acp.tool_call.status"] == "completed"
            })
    });
    assert!(
        child.try_wait().unwrap().is_none(),
        "the proxy ended before the rest of the session"
    );
    assert!(
        seen_live,
        "tool call {call_id} did not reach Phoenix while the session ran"
    );
    client.play(&records[completed + 1..]);
    client.finish();
    let out = finish(child, Duration::from_secs(30));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A collector that is down (nothing listens), slow (accepts, then never answers) or refusing
/// (answers 403): the client gets every byte as without `--otlp`, the recording is complete, the
/// loss is counted on stderr with the command that sends it, and that command (pointed at a
/// real backend) sends it.
#[test]
fn a_collector_down_slow_or_refusing_costs_the_session_nothing() {
    let phoenix = Phoenix::start();
    let sample = "claude-acpx-basic-approve-all.jsonl";

    let baseline = Sandbox::new();
    let (out, plain_time) = play_sample(&baseline, sample, &[]);
    assert!(out.status.success());

    let stalled = TcpListener::bind("127.0.0.1:0").unwrap();
    let stalled_url = format!("http://{}", stalled.local_addr().unwrap());
    let held = Arc::new(std::sync::Mutex::new(Vec::new()));
    {
        let held = held.clone();
        std::thread::spawn(move || {
            for stream in stalled.incoming().flatten() {
                held.lock().unwrap().push(stream);
            }
        });
    }
    let refusing = TcpListener::bind("127.0.0.1:0").unwrap();
    let refusing_url = format!("http://{}", refusing.local_addr().unwrap());
    let refused = serve_http(refusing, |_| "403 Forbidden");
    let down_url = format!("http://127.0.0.1:{}", free_port());

    for (case, url) in [
        ("down", &down_url),
        ("slow", &stalled_url),
        ("refusing", &refusing_url),
    ] {
        let sb = Sandbox::new();
        // play_sample checks every byte the client receives against the sample.
        let (out, time) = play_sample(&sb, sample, &["--otlp", url]);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{case}: {stderr}");
        eprintln!(
            "{case} collector: the client's side took {time:?} (without --otlp: {plain_time:?})"
        );
        assert_eq!(
            sb.count("SELECT complete FROM connections"),
            1,
            "{case}: recording incomplete"
        );
        assert_eq!(
            sb.count("SELECT count(*) FROM messages WHERE direction != 'stderr'"),
            load_transcript(&fixture(sample)).len() as i64
        );
        let reader = Reader::open(&sb.db()).unwrap();
        let session = resolve_session(&reader, "last").unwrap();
        let total = session_spans(&reader, &session, Default::default())
            .unwrap()
            .len();
        assert!(
            stderr.contains(&format!(
                "{total} of {total} span(s) were not sent to {url}"
            )),
            "{case}: {stderr}"
        );
        // The command acptap names, sent to a backend that is there.
        let command = stderr
            .lines()
            .find_map(|l| l.split_once("send them with: acptap ").map(|(_, c)| c))
            .unwrap_or_else(|| panic!("{case}: no export command in: {stderr}"));
        let mut args: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
        assert!(
            args.pop()
                .is_some_and(|last| url.starts_with(&last) || last.starts_with(url.as_str()))
        );
        args.push(format!("http://127.0.0.1:{}", phoenix.port));
        let sent = Command::new(crate::util::acptap_bin())
            .args(&args)
            .env("XDG_CONFIG_HOME", sb.dir.path())
            .output()
            .unwrap();
        assert!(
            sent.status.success(),
            "{case}: {}",
            String::from_utf8_lossy(&sent.stderr)
        );
        check_in_phoenix(&phoenix, &sb, sample);
    }
    assert!(
        !held.lock().unwrap().is_empty(),
        "the slow collector was never called"
    );
    assert!(
        refused.load(Ordering::SeqCst) > 0,
        "the refusing collector was never called"
    );
}

/// Answers every HTTP request on `listener` with the status `status(n)` gives for the n-th
/// (from 1), on a thread of its own; the counter says how many requests it has read.
fn serve_http(
    listener: TcpListener,
    status: impl Fn(usize) -> &'static str + Send + 'static,
) -> Arc<AtomicUsize> {
    use std::io::{BufRead, BufReader, Read, Write};
    let requests = Arc::new(AtomicUsize::new(0));
    let counter = requests.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            // Each request on this connection: headers, then Content-Length bytes.
            loop {
                let mut length = 0usize;
                let mut line = String::new();
                let mut any = false;
                while reader.read_line(&mut line).unwrap_or(0) > 0 {
                    any = true;
                    if line == "\r\n" {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap();
                    }
                    line.clear();
                }
                if !any {
                    break;
                }
                let mut body = vec![0; length];
                if reader.read_exact(&mut body).is_err() {
                    break;
                }
                let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
                let answer = status(n);
                if write!(stream, "HTTP/1.1 {answer}\r\nContent-Length: 0\r\n\r\n").is_err() {
                    break;
                }
            }
        }
    });
    requests
}

#[test]
fn a_collector_that_is_not_there_is_named_and_nothing_is_lost() {
    let sb = Sandbox::new();
    sb.acptap(&["import", fixture(SAMPLES[0]).to_str().unwrap()]);
    let endpoint = format!("http://127.0.0.1:{}", free_port());
    let out = Command::new(crate::util::acptap_bin())
        .args([
            "export",
            "last",
            "--format",
            "otlp",
            "--endpoint",
            &endpoint,
        ])
        .env("ACPTAP_DB", sb.db())
        .env("XDG_CONFIG_HOME", sb.dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&endpoint), "{stderr}");
    assert!(
        stderr.contains("is a collector listening there?"),
        "{stderr}"
    );
    // The recording is untouched.
    assert_eq!(sb.count("SELECT count(*) FROM connections"), 1);
}

/// A backend that answers 503 twice (its queue full), then takes the spans: the export waits and
/// sends again instead of failing. A small HTTP server stands in for the busy backend; what is
/// checked is acptap's behaviour towards it.
#[test]
fn a_busy_backend_gets_the_request_again() {
    let sb = Sandbox::new();
    sb.acptap(&["import", fixture(SAMPLES[0]).to_str().unwrap()]);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // 503 twice, then 200.
    let requests = serve_http(listener, |n| match n {
        1 | 2 => "503 Service Unavailable",
        _ => "200 OK",
    });
    let reader = Reader::open(&sb.db()).unwrap();
    let session = resolve_session(&reader, "last").unwrap();
    let spans = session_spans(&reader, &session, Default::default()).unwrap();
    let endpoint = format!("http://127.0.0.1:{port}");
    let out = sb.acptap(&[
        "export",
        "last",
        "--format",
        "otlp",
        "--endpoint",
        &endpoint,
    ]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!("sent {} span(s)", spans.len())),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(requests.load(Ordering::SeqCst), 3);
}

/// A permission request that acptap's policy answered reaches the backend as decided by the
/// policy, with the rule and the policy files' hash, live through `acptap run --policy --otlp`.
#[test]
fn a_policy_decision_reaches_phoenix_with_its_rule_and_hash() {
    use std::io::Read;
    let phoenix = Phoenix::start();
    let sb = Sandbox::new();
    let policy = sb.path("policy.toml");
    std::fs::write(
        &policy,
        "version = 1\n[[rule]]\nid = \"bench-reads\"\ndecision = \"allow\"\nkind = \"read\"\npaths = [\"/bench/**\"]\n",
    )
    .unwrap();
    let mut child = Command::new(crate::util::acptap_bin())
        .args(["run", "--db"])
        .arg(sb.db())
        .arg("--policy")
        .arg(&policy)
        .args(["--otlp", &format!("http://127.0.0.1:{}", phoenix.port)])
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_acptap-bench"))
        .args(["peer", "tools", "3"])
        .env("XDG_CONFIG_HOME", sb.dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The policy answers every request; the client only reads.
    let mut output = Vec::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_end(&mut output)
        .unwrap();
    drop(child.stdin.take());
    let out = finish(child, Duration::from_secs(30));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("not sent"), "{stderr}");

    let reader = Reader::open(&sb.db()).unwrap();
    let session = resolve_session(&reader, "last").unwrap();
    let permissions = query::permission_requests(&reader, &session).unwrap();
    assert_eq!(permissions.len(), 3);
    let hash = permissions[0].policy_hash.clone().expect("a policy hash");
    let model = session_spans(&reader, &session, Default::default()).unwrap();
    let spans = phoenix.spans(&hex(&model[0].trace_id), model.len());
    let decided: Vec<&Value> = spans
        .iter()
        .filter(|s| s["name"] == "acp.permission")
        .collect();
    assert_eq!(decided.len(), 3, "{spans:#?}");
    for span in decided {
        let attributes = &span["attributes"];
        assert_eq!(attributes["acp.permission.decided_by"], "policy");
        assert_eq!(attributes["acp.permission.policy.rule"], "bench-reads");
        assert_eq!(attributes["acp.permission.policy.hash"], hash.as_str());
        assert_eq!(attributes["acp.permission.option_kind"], "allow_once");
    }
}

/// A collector that answers 200 with an endless body: acptap reads a few KiB of it and goes on,
/// instead of holding the whole answer in memory (4 GiB when this was found). The peak memory is
/// read by the venv's Python, whose only child the export is.
#[test]
fn a_collector_answering_without_end_costs_no_memory() {
    use std::io::{BufRead, BufReader, Read, Write};
    let sb = Sandbox::new();
    sb.acptap(&["import", fixture(SAMPLES[0]).to_str().unwrap()]);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut length = 0usize;
                let mut line = String::new();
                while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap();
                    }
                    line.clear();
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 4000000000\r\n\r\n");
                let zeros = vec![0u8; 1 << 20];
                while stream.write_all(&zeros).is_ok() {}
            });
        }
    });
    let python = crate::tools::python();
    let out = Command::new(python)
        .args([
            "-c",
            "import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True); \
             sys.stderr.write(r.stderr.decode()); \
             print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)",
        ])
        .arg(crate::util::acptap_bin())
        .args(["export", "--db"])
        .arg(sb.db())
        .args(["last", "--format", "otlp", "--endpoint", &url])
        .env("XDG_CONFIG_HOME", sb.dir.path())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut fields = said.split_whitespace();
    assert_eq!(fields.next(), Some("0"), "{stderr}");
    let peak_kib: u64 = fields.next().unwrap().parse().unwrap();
    assert!(stderr.contains("sent "), "{stderr}");
    assert!(
        peak_kib < 100 * 1024,
        "the export held {peak_kib} KiB: it read the collector's answer into memory"
    );
}
