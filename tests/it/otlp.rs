//! `acptap export --format otlp` against a real trace backend: Arize Phoenix (`pip install
//! arize-phoenix`, installed by `.ci/run` into a virtual environment), started by the test on
//! free ports. Every sample is imported and sent; the spans are read back over Phoenix's REST API
//! and checked against the recording: every tool call, every permission decision with its
//! decider, the parent of each span, the session id. A second send gives the same ids.

use std::collections::HashMap;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use acptap::record::Reader;
use acptap::record::queries::{self, resolve_session};

use crate::util::{SAMPLES, Sandbox, fixture};

/// The `phoenix` command: `ACPTAP_PHOENIX`, else where `.ci/run` installs it.
fn phoenix_bin() -> PathBuf {
    std::env::var_os("ACPTAP_PHOENIX")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/acptap-ci/venv/bin/phoenix")
        })
}

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
        let bin = phoenix_bin();
        assert!(
            bin.exists(),
            "{} is missing: the OTLP tests send spans to Arize Phoenix; install it with \
             `python3 -m venv ~/.cache/acptap-ci/venv && ~/.cache/acptap-ci/venv/bin/pip install \
             arize-phoenix` (bash .ci/run does), or point ACPTAP_PHOENIX at its `phoenix`",
            bin.display()
        );
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
        let python = phoenix_bin().with_file_name("python");
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

        let reader = Reader::open(&sb.db()).unwrap();
        let session = resolve_session(&reader, "last").unwrap();
        let model =
            acptap::export::spans::session_spans(&reader, &session, Default::default()).unwrap();
        let trace = hex(&model[0].trace_id);
        assert!(said.contains(&trace), "{sample}: {said}");
        assert!(
            said.contains(&format!("sent {} span(s)", model.len())),
            "{sample}: {said}"
        );

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
        let calls = queries::session_tool_calls(&reader, &session).unwrap();
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
        let permissions = queries::permission_requests(&reader, &session).unwrap();
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
    use std::io::{BufRead, BufReader, Read, Write};
    let sb = Sandbox::new();
    sb.acptap(&["import", fixture(SAMPLES[0]).to_str().unwrap()]);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let mut requests = 0;
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            // Read each request on this connection: headers, then Content-Length bytes.
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
                reader.read_exact(&mut body).unwrap();
                requests += 1;
                let status = if requests <= 2 {
                    "503 Service Unavailable"
                } else {
                    "200 OK"
                };
                write!(stream, "HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n").unwrap();
                if requests == 3 {
                    return requests;
                }
            }
        }
        requests
    });
    let reader = Reader::open(&sb.db()).unwrap();
    let session = resolve_session(&reader, "last").unwrap();
    let spans =
        acptap::export::spans::session_spans(&reader, &session, Default::default()).unwrap();
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
    assert_eq!(server.join().unwrap(), 3);
}
