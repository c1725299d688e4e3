//! `acptap-bench`: the cost of the proxy, measured against a plain pipe.
//!
//! One run, one process tree: the same synthetic ACP traffic goes several ways between this
//! process (the client) and `acptap-bench peer` (the agent): a plain pipe, a `cat | agent | cat`
//! relay, `acptap run --no-record`, `acptap run` recording into a fresh database, and the naive
//! Python recorder (where python3 is). `acptap` is the product binary built beside this one.
//! Workloads:
//!
//! - **stream**: the agent writes N lines of 64 B, 1 KiB, 4 KiB and 1 MiB as fast as the client
//!   reads them;
//! - **ping-pong**: the client sends a request, the agent answers at once, N times: round trips;
//! - **tools**: a turn mix repeated N times: `tool_call`, two updates, a permission request, a
//!   final update; answered by the client, and in **tools, policy answers** by acptap's policy;
//! - **big line**: one 64 MiB line each way.
//!
//! For each it reports messages/s, MB/s, the ratio to the pipe, the proxy's CPU time and peak RSS
//! (read from /proc before it exits), and, when recording, the recorder's lag: how long after the
//! client had the last byte the last line was committed. Every run checks that the bytes at both
//! ends are the bytes sent (SHA-256), so a fast wrong proxy cannot win. It also times a bare
//! batched insert of the same rows into a fresh database: the floor for recording.
//!
//! With `--conductor PATH`, every workload also runs through the official ACP conductor
//! (`agent-client-protocol-conductor agent 'acptap-bench peer ...'`), without and with `--trace`,
//! as a reference point. The conductor spawns its agent on the first `initialize` and
//! re-serialises every message (and renumbers requests), so for its ways only: the client sends
//! `initialize` first and times from the answer, the peer reports to a file (the conductor keeps
//! the agent's stderr), the messages are checked as equal JSON values instead of equal bytes, and
//! the workloads are smaller. A workload it cannot run is reported as skipped, with the reason.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The line of `size` bytes (newline included) that the agent sends as message `i`.
pub fn stream_line(i: usize, size: usize) -> Vec<u8> {
    if size < 128 {
        // Too short for a `session/update`: an extension notification of that size.
        let mut line =
            format!(r#"{{"jsonrpc":"2.0","method":"_b","params":{{"i":{i},"t":""#).into_bytes();
        let tail = b"\"}}\n";
        let pad = size.saturating_sub(line.len() + tail.len());
        line.extend(std::iter::repeat_n(b'a' + (i % 26) as u8, pad));
        line.extend_from_slice(tail);
        return line;
    }
    let head = format!(
        r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"bench","update":{{"sessionUpdate":"agent_message_chunk","i":{i},"content":{{"type":"text","text":""#
    );
    let mut line = head.into_bytes();
    let tail = b"\"}}}}\n";
    let pad = size.saturating_sub(line.len() + tail.len());
    line.extend(std::iter::repeat_n(b'a' + (i % 26) as u8, pad));
    line.extend_from_slice(tail);
    line
}

/// Writes `count` lines of the stream workload of `size` bytes to `output`: as the agent sends
/// them, or as a transcript (`acptap import`'s format; the line without its `\n` as `text`).
pub fn write_stream(
    size: usize,
    count: usize,
    transcript: bool,
    output: &Path,
) -> anyhow::Result<()> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(output)?);
    for i in 0..count {
        let line = stream_line(i, size);
        if transcript {
            let text = String::from_utf8(line[..line.len() - 1].to_vec())?;
            let record =
                serde_json::json!({"seq": i, "t": 0.0, "dir": "a2c", "eol": true, "text": text});
            writeln!(out, "{record}")?;
        } else {
            out.write_all(&line)?;
        }
    }
    out.flush()?;
    Ok(())
}

fn hex(digest: impl AsRef<[u8]>) -> String {
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// The lines the agent sends in turn `i` of the tools workload: the tool call, two updates and
/// the permission request (after which it waits for the answer), then the final update.
fn tools_turn(i: usize) -> ([String; 4], String) {
    let update = |body: String| {
        format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{{\"sessionId\":\"bench\",\"update\":{body}}}}}\n"
        )
    };
    (
        [
            update(format!(
                r#"{{"sessionUpdate":"tool_call","toolCallId":"t{i}","title":"Read src/lib.rs","kind":"read","status":"pending","locations":[{{"path":"/bench/project/src/lib.rs"}}]}}"#
            )),
            update(format!(
                r#"{{"sessionUpdate":"tool_call_update","toolCallId":"t{i}","status":"in_progress"}}"#
            )),
            update(format!(
                r#"{{"sessionUpdate":"tool_call_update","toolCallId":"t{i}","content":[{{"type":"content","content":{{"type":"text","text":"{}"}}}}]}}"#,
                "x".repeat(512)
            )),
            format!(
                "{}\n",
                format_args!(
                    r#"{{"jsonrpc":"2.0","id":{i},"method":"session/request_permission","params":{{"sessionId":"bench","toolCall":{{"toolCallId":"t{i}"}},"options":[{{"optionId":"allow","name":"Allow","kind":"allow_once"}},{{"optionId":"reject","name":"Reject","kind":"reject_once"}}]}}}}"#
                )
            ),
        ],
        update(format!(
            r#"{{"sessionUpdate":"tool_call_update","toolCallId":"t{i}","status":"completed"}}"#
        )),
    )
}

/// The value of `"id":` in a request line, as its bytes (a number, or a string with its quotes).
fn raw_id(line: &[u8]) -> anyhow::Result<&[u8]> {
    let start = memchr::memmem::find(line, b"\"id\":").context("no id")? + 5;
    let end = start
        + line[start..]
            .iter()
            .position(|b| *b == b',' || *b == b'}')
            .context("no id end")?;
    Ok(&line[start..end])
}

/// The agent side: `acptap-bench peer [--via-conductor REPORT] MODE ...`.
///
/// `--via-conductor REPORT`: the peer runs behind the ACP conductor, which starts it on the first
/// `initialize`, keeps its stderr, and kills it when the client closes its end. So the peer
/// answers that `initialize`, waits for the client's `_bench/start` (the conductor may deliver
/// later messages before its answer), writes what it reports to the file REPORT once done (the
/// client waits for it), and sends and checks the big line in its valid JSON-RPC form, as a JSON
/// value, reading it to its newline rather than to the end of input.
pub fn peer(args: &[String]) -> anyhow::Result<()> {
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let mut input = BufReader::with_capacity(1 << 16, std::io::stdin().lock());
    let (args, report_file) = match args {
        [flag, path, rest @ ..] if flag == "--via-conductor" => (rest, Some(PathBuf::from(path))),
        _ => (args, None),
    };
    let via_conductor = report_file.is_some();
    let mut reported = String::new();
    let mut report = |line: String| {
        eprintln!("{line}");
        reported.push_str(&line);
        reported.push('\n');
    };
    if via_conductor {
        let mut request = Vec::new();
        input.read_until(b'\n', &mut request)?;
        let request: Value =
            serde_json::from_slice(&request).context("bench-peer: no initialize request")?;
        let answer = serde_json::json!({
            "jsonrpc": "2.0",
            "id": request.get("id").context("bench-peer: initialize without an id")?,
            "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []},
        });
        serde_json::to_writer(&mut out, &answer)?;
        out.write_all(b"\n")?;
        out.flush()?;
        let mut start = Vec::new();
        input.read_until(b'\n', &mut start)?;
        if memchr::memmem::find(&start, b"_bench/start").is_none() {
            bail!(
                "bench-peer: expected _bench/start, got {}",
                String::from_utf8_lossy(&start)
            );
        }
    }
    let number = |i: usize| -> anyhow::Result<usize> {
        args.get(i)
            .context("bench-peer: missing a number")?
            .parse()
            .context("bench-peer: not a number")
    };
    match args.first().map(String::as_str) {
        Some("stream") => {
            let (n, size) = (number(1)?, number(2)?);
            for i in 0..n {
                out.write_all(&stream_line(i, size))?;
            }
            out.flush()?;
            std::io::copy(&mut input, &mut std::io::sink())?;
        }
        Some("echo") => {
            let mut line = Vec::new();
            while input.read_until(b'\n', &mut line)? > 0 {
                // The request is `{"jsonrpc":"2.0","id":N,...`: answer with the same id.
                out.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":")?;
                out.write_all(raw_id(&line)?)?;
                out.write_all(b",\"result\":{}}\n")?;
                out.flush()?;
                line.clear();
            }
        }
        Some("tools") => {
            let n = number(1)?;
            let mut answer = Vec::new();
            let mut waits = Vec::with_capacity(n);
            for i in 0..n {
                let (before, last) = tools_turn(i);
                for line in &before {
                    out.write_all(line.as_bytes())?;
                }
                out.flush()?;
                let asked = Instant::now();
                answer.clear();
                if input.read_until(b'\n', &mut answer)? == 0 {
                    bail!("bench-peer: no answer to permission request {i}");
                }
                waits.push(asked.elapsed().as_nanos() as u64);
                out.write_all(last.as_bytes())?;
            }
            out.flush()?;
            waits.sort_unstable();
            report(format!(
                "bench-peer: permission-wait-p50-ns {}",
                waits.get(waits.len() / 2).copied().unwrap_or(0)
            ));
            report(format!(
                "bench-peer: permission-wait-p99-ns {}",
                waits.get(waits.len() * 99 / 100).copied().unwrap_or(0)
            ));
        }
        Some("big") => {
            let size = number(1)?;
            if via_conductor {
                // Re-serialised on the way: read the one line, compare it as a JSON value.
                out.write_all(&big_line_object(size, b'a'))?;
                out.flush()?;
                let mut line = Vec::with_capacity(size);
                input.read_until(b'\n', &mut line)?;
                report(format!(
                    "bench-peer: received-json-equal {}",
                    json_lines_equal(&line, std::iter::once(big_line_object(size, b'b')))
                ));
            } else {
                out.write_all(&big_line(size, b'a'))?;
                out.flush()?;
                let mut hasher = Sha256::new();
                let mut buf = vec![0; 1 << 16];
                let mut total = 0;
                loop {
                    let n = input.read(&mut buf)?;
                    if n == 0 {
                        break;
                    }
                    hasher.update(&buf[..n]);
                    total += n;
                }
                report(format!(
                    "bench-peer: received {total} {}",
                    hex(hasher.finalize())
                ));
            }
        }
        _ => bail!(
            "bench-peer: usage: [--via-conductor REPORT] stream N SIZE | echo | tools N | big SIZE"
        ),
    }
    if let Some(path) = &report_file {
        // Whole or not at all: the client waits for the file to appear.
        let partial = path.with_extension("partial");
        std::fs::write(&partial, &reported)?;
        std::fs::rename(&partial, path)?;
    }
    Ok(())
}

/// Whether `received` holds exactly the `expected` lines, each an equal JSON value.
fn json_lines_equal(received: &[u8], expected: impl IntoIterator<Item = Vec<u8>>) -> bool {
    let received = received.strip_suffix(b"\n").unwrap_or(received);
    let mut lines = received.split(|b| *b == b'\n');
    for want in expected {
        match lines.next() {
            Some(line) if json_equal(line, &want) => {}
            _ => return false,
        }
    }
    lines.next().is_none()
}

fn json_equal(a: &[u8], b: &[u8]) -> bool {
    match (
        serde_json::from_slice::<Value>(a),
        serde_json::from_slice::<Value>(b),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn big_line(size: usize, fill: u8) -> Vec<u8> {
    let mut line = br#"{"jsonrpc":"2.0","method":"_bench/big","params":""#.to_vec();
    line.resize(size - 3, fill);
    line.extend_from_slice(b"\"}\n");
    line
}

/// The big line for the conductor: as large, but valid JSON-RPC (its params a structure, not a
/// string, which the conductor answers with -32600 Invalid request).
fn big_line_object(size: usize, fill: u8) -> Vec<u8> {
    let mut line = br#"{"jsonrpc":"2.0","method":"_bench/big","params":{"data":""#.to_vec();
    line.resize(size - 4, fill);
    line.extend_from_slice(b"\"}}\n");
    line
}

/// The reference recorder, embedded so that `acptap-bench` needs nothing beside itself and the
/// `acptap` it measures.
const NAIVE_RECORDER: &str = include_str!("naive_recorder.py");

/// Whether `python3` runs here (the naive recorder's way is skipped otherwise).
fn python3_available() -> bool {
    Command::new("python3")
        .arg("-c")
        .arg("import sqlite3")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Way {
    Pipe,
    /// `sh -c 'cat | AGENT | cat'`: the floor for any relaying process, which costs two more
    /// hops than the pipe.
    Relay,
    ProxyNoRecord,
    ProxyRecording,
    /// Recording, with `--otlp` to a collector that takes everything at once (a thread of the
    /// bench): the cost of live export on the data path.
    ProxyOtlp,
    /// `agent-client-protocol-conductor agent 'acptap-bench peer ...'` (with `--conductor`).
    Conductor,
    /// The same with `--trace FILE`.
    ConductorTrace,
    /// `python3 naive_recorder.py --db FILE -- acptap-bench peer ...`: the naive Python recording
    /// proxy (`bench/naive_recorder.py`, from the project's shared reference), the line acptap's
    /// recorder must clear. Run only where `python3` is.
    Naive,
}

impl Way {
    fn through_conductor(self) -> bool {
        matches!(self, Way::Conductor | Way::ConductorTrace)
    }
}

/// How a run checked that the messages arrived as sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Check {
    /// Byte for byte (SHA-256 of the stream, or every line): acptap's ways and the pipe.
    Bytes,
    /// As equal JSON values, line by line: the conductor's ways, since it re-serialises.
    JsonValues,
}

#[derive(Debug, Clone, Serialize)]
pub struct Measurement {
    pub workload: String,
    pub way: Way,
    pub messages: usize,
    pub seconds: f64,
    pub messages_per_s: f64,
    pub mb_per_s: f64,
    pub ratio_to_pipe: Option<f64>,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub max_us: Option<f64>,
    pub proxy_cpu_s: Option<f64>,
    pub proxy_peak_rss_mib: Option<f64>,
    pub recorder_lag_ms: Option<f64>,
    /// The check passed (see `check` for which check).
    pub bytes_match: bool,
    pub check: Check,
    /// Why this way did not run this workload (conductor ways only); the figures are then zero.
    pub skipped: Option<String>,
}

impl Measurement {
    fn skipped(workload: &str, way: Way, reason: String) -> Measurement {
        Measurement {
            workload: workload.to_owned(),
            way,
            messages: 0,
            seconds: 0.0,
            messages_per_s: 0.0,
            mb_per_s: 0.0,
            ratio_to_pipe: None,
            p50_us: None,
            p99_us: None,
            max_us: None,
            proxy_cpu_s: None,
            proxy_peak_rss_mib: None,
            recorder_lag_ms: None,
            bytes_match: false,
            check: Check::JsonValues,
            skipped: Some(reason),
        }
    }
}

fn check_for(way: Way) -> Check {
    if way.through_conductor() {
        Check::JsonValues
    } else {
        Check::Bytes
    }
}

/// Kills a conductor that is still running after a time limit, so that a message it drops
/// cannot hang the benchmark.
struct Watchdog {
    pid: u32,
    state: Arc<Mutex<Guard>>,
    wake: mpsc::Sender<()>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Guard {
    /// The process is ours and not yet reaped: killing its pid is safe.
    Armed,
    /// About to be reaped: hands off.
    Disarmed,
    /// Killed at the time limit.
    Fired,
}

fn kill(pid: u32) {
    // SAFETY: kill(2) takes no pointers; `pid` is a child of ours that has not been reaped
    // (the callers check `Guard::Armed`), so it cannot name another process.
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGKILL);
    }
}

impl Watchdog {
    fn arm(pid: u32, limit: Duration) -> Watchdog {
        let state = Arc::new(Mutex::new(Guard::Armed));
        let (wake, woken) = mpsc::channel::<()>();
        let watched = Arc::clone(&state);
        std::thread::spawn(move || {
            if woken.recv_timeout(limit) == Err(mpsc::RecvTimeoutError::Timeout) {
                let mut state = watched.lock().unwrap_or_else(|e| e.into_inner());
                if *state == Guard::Armed {
                    kill(pid);
                    *state = Guard::Fired;
                }
            }
        });
        Watchdog { pid, state, wake }
    }

    fn disarm(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if *state == Guard::Armed {
            *state = Guard::Disarmed;
        }
        let _ = self.wake.send(());
    }

    fn fired(&self) -> bool {
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) == Guard::Fired
    }
}

impl Drop for Watchdog {
    /// A run that failed before reaping its conductor: kill and reap it.
    fn drop(&mut self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if *state == Guard::Armed {
            kill(self.pid);
            // SAFETY: a null status pointer is allowed; the pid is our unreaped child.
            unsafe {
                libc::waitpid(self.pid as libc::pid_t, std::ptr::null_mut(), 0);
            }
            *state = Guard::Disarmed;
        }
        let _ = self.wake.send(());
    }
}

/// How long one conductor run may take before it is killed and reported as skipped.
const CONDUCTOR_TIME_LIMIT: Duration = Duration::from_secs(60);

struct Setup {
    /// The product binary measured: `acptap run ...`.
    proxy: PathBuf,
    /// This binary: `peer` is the agent of every run.
    peer: PathBuf,
    dir: PathBuf,
    policy: PathBuf,
    conductor: Option<PathBuf>,
    /// The naive recorder's script, written out, when python3 can run it.
    naive: Option<PathBuf>,
    /// The conductors of the current run, by pid, until they are reaped.
    watchdogs: RefCell<HashMap<u32, Watchdog>>,
    /// The URL of the bench's OTLP collector (see [`Way::ProxyOtlp`]).
    collector: String,
}

/// What the bench's OTLP collector received.
#[derive(Debug, Default, Serialize)]
pub struct CollectorCounts {
    pub requests: usize,
    pub bytes: usize,
}

/// An OTLP/HTTP collector as fast as it gets: a thread that reads each request and answers
/// 200 at once. Returns its URL and what it received.
fn start_collector() -> anyhow::Result<(String, std::sync::Arc<std::sync::Mutex<CollectorCounts>>)>
{
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}", listener.local_addr()?);
    let counts = std::sync::Arc::new(std::sync::Mutex::new(CollectorCounts::default()));
    let received = counts.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let received = received.clone();
            std::thread::spawn(move || -> std::io::Result<()> {
                let mut writer = stream.try_clone()?;
                let mut reader = BufReader::new(stream);
                loop {
                    let mut length = 0;
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if reader.read_line(&mut line)? == 0 {
                            return Ok(());
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let read =
                        std::io::copy(&mut (&mut reader).take(length), &mut std::io::sink())?;
                    if let Ok(mut counts) = received.lock() {
                        counts.requests += 1;
                        counts.bytes += read as usize;
                    }
                    writer.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")?;
                }
            });
        }
    });
    Ok((url, counts))
}

/// CPU seconds and peak RSS (MiB) of a live process, from /proc.
fn proc_usage(pid: u32) -> (Option<f64>, Option<f64>) {
    let ticks = 100.0; // USER_HZ on Linux
    let cpu = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let rest = stat.rsplit(')').next()?;
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let utime: f64 = fields.get(11)?.parse().ok()?;
            let stime: f64 = fields.get(12)?.parse().ok()?;
            Some((utime + stime) / ticks)
        });
    let rss = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
            let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kb / 1024.0)
        });
    (cpu, rss)
}

/// `s` quoted for the POSIX-shell word splitting the conductor applies to a component command.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The file the peer reports to behind the conductor (which keeps the agent's stderr).
fn peer_report_path(db: &Path) -> PathBuf {
    db.with_extension("peer-report")
}

impl Setup {
    fn spawn(
        &self,
        way: Way,
        peer_args: &[&str],
        db: &Path,
        policy: bool,
    ) -> anyhow::Result<Child> {
        if way.through_conductor() {
            return self.spawn_conductor(way, peer_args, db);
        }
        let mut command = match way {
            Way::Pipe => Command::new(&self.peer),
            Way::Relay => {
                let mut c = Command::new("sh");
                c.arg("-c").arg(r#"cat | "$0" "$@" | cat"#).arg(&self.peer);
                c
            }
            Way::Naive => {
                let script = self.naive.as_ref().context("python3 is not there")?;
                let mut c = Command::new("python3");
                c.arg(script).arg("--db").arg(db).arg("--").arg(&self.peer);
                c
            }
            _ => {
                let mut c = Command::new(&self.proxy);
                c.arg("run").arg("--grace").arg("30s");
                if way == Way::ProxyNoRecord {
                    c.arg("--no-record");
                } else {
                    c.arg("--db").arg(db);
                }
                if way == Way::ProxyOtlp {
                    c.arg("--otlp").arg(&self.collector);
                }
                if policy {
                    c.arg("--policy").arg(&self.policy);
                }
                c.arg("--").arg(&self.peer);
                c
            }
        };
        command
            .arg("peer")
            .args(peer_args)
            .env("XDG_CONFIG_HOME", &self.dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("cannot start the bench peer")
    }

    /// `CONDUCTOR [--trace FILE] agent 'acptap-bench peer --via-conductor REPORT ...'`, then the
    /// `initialize` exchange that makes it start the agent. Returns once the answer is read.
    fn spawn_conductor(&self, way: Way, peer_args: &[&str], db: &Path) -> anyhow::Result<Child> {
        let conductor = self.conductor.as_ref().context("no --conductor given")?;
        let report = peer_report_path(db);
        let mut agent = vec![
            shell_quote(&self.peer.to_string_lossy()),
            "peer".into(),
            "--via-conductor".into(),
            shell_quote(&report.to_string_lossy()),
        ];
        agent.extend(peer_args.iter().map(|a| shell_quote(a)));
        let mut command = Command::new(conductor);
        if way == Way::ConductorTrace {
            command.arg("--trace").arg(db.with_extension("trace.jsons"));
        }
        let mut child = command
            .arg("agent")
            .arg(agent.join(" "))
            .env("XDG_CONFIG_HOME", &self.dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot start {}", conductor.display()))?;
        self.watchdogs
            .borrow_mut()
            .insert(child.id(), Watchdog::arm(child.id(), CONDUCTOR_TIME_LIMIT));
        let to_agent = child.stdin.as_mut().expect("piped");
        to_agent.write_all(
            b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1,\"clientCapabilities\":{}}}\n",
        )?;
        to_agent.flush()?;
        // One byte at a time: what follows the answer belongs to the workload.
        let from_agent = child.stdout.as_mut().expect("piped");
        let mut answer = Vec::new();
        let mut byte = [0u8];
        while answer.last() != Some(&b'\n') {
            if from_agent.read(&mut byte)? == 0 {
                let mut stderr = String::new();
                if let Some(mut e) = child.stderr.take() {
                    let _ = e.read_to_string(&mut stderr);
                }
                bail!("the conductor closed its output before answering initialize: {stderr}");
            }
            answer.push(byte[0]);
        }
        let answer: Value =
            serde_json::from_slice(&answer).context("the answer to initialize is not JSON")?;
        if answer.get("id") != Some(&Value::from(0)) || answer.get("result").is_none() {
            bail!("initialize failed through the conductor: {answer}");
        }
        let to_agent = child.stdin.as_mut().expect("piped");
        to_agent.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"_bench/start\",\"params\":{}}\n")?;
        to_agent.flush()?;
        Ok(child)
    }

    /// Waits for a child; a conductor's watchdog stands down first.
    fn wait(&self, child: &mut Child) -> std::io::Result<ExitStatus> {
        if let Some(watchdog) = self.watchdogs.borrow().get(&child.id()) {
            watchdog.disarm();
        }
        child.wait()
    }

    /// After a conductor run: whether its watchdog had to kill it. Kills and reaps a conductor
    /// the run left behind (it failed before waiting for it).
    fn end_conductor_run(&self) -> bool {
        let watchdogs: Vec<Watchdog> = self
            .watchdogs
            .borrow_mut()
            .drain()
            .map(|(_, w)| w)
            .collect();
        watchdogs.iter().any(Watchdog::fired)
    }

    /// Behind the conductor, which kills its agent when the client closes its end: waits (a
    /// bounded time) until the peer has written its report.
    fn await_peer_report(&self, way: Way, db: &Path) {
        let started = Instant::now();
        while way.through_conductor()
            && !peer_report_path(db).exists()
            && started.elapsed() < Duration::from_secs(10)
        {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// What the peer reported: its stderr, or behind the conductor its report file.
    fn peer_report(&self, way: Way, stderr: String, db: &Path) -> String {
        if way.through_conductor() {
            std::fs::read_to_string(peer_report_path(db)).unwrap_or_default()
        } else {
            stderr
        }
    }
}

/// Waits until `db` holds `count` messages; returns how long that took.
fn recorder_lag(db: &Path, count: usize) -> Option<f64> {
    let started = Instant::now();
    let reader = acptap::query::Reader::open(db).ok()?;
    while started.elapsed() < Duration::from_secs(120) {
        let n = acptap::query::message_count(&reader).unwrap_or(0);
        if n as usize >= count {
            return Some(started.elapsed().as_secs_f64() * 1000.0);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    None
}

struct Outcome {
    messages: usize,
    bytes: usize,
    seconds: f64,
    latencies: Vec<f64>,
    bytes_match: bool,
    recorded_lines: usize,
}

fn finish_child(
    setup: &Setup,
    mut child: Child,
    way: Way,
    db: &Path,
    outcome: Outcome,
    workload: &str,
) -> anyhow::Result<Measurement> {
    let (cpu, rss) = if matches!(way, Way::Pipe | Way::Relay) {
        (None, None)
    } else {
        proc_usage(child.id())
    };
    let lag = (way == Way::ProxyRecording)
        .then(|| recorder_lag(db, outcome.recorded_lines))
        .flatten();
    drop(child.stdin.take());
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut stderr);
    }
    let status = setup.wait(&mut child)?;
    if !status.success() {
        bail!("{workload} over {way:?} failed ({status}): {stderr}");
    }
    let mut latencies = outcome.latencies;
    latencies.sort_by(f64::total_cmp);
    let pick = |q: f64| {
        (!latencies.is_empty()).then(|| latencies[((latencies.len() - 1) as f64 * q) as usize])
    };
    Ok(Measurement {
        workload: workload.to_owned(),
        way,
        messages: outcome.messages,
        seconds: outcome.seconds,
        messages_per_s: outcome.messages as f64 / outcome.seconds,
        mb_per_s: outcome.bytes as f64 / outcome.seconds / 1e6,
        ratio_to_pipe: None,
        p50_us: pick(0.5),
        p99_us: pick(0.99),
        max_us: latencies.last().copied(),
        proxy_cpu_s: cpu,
        proxy_peak_rss_mib: rss,
        recorder_lag_ms: lag,
        bytes_match: outcome.bytes_match && !stderr.contains("mismatch"),
        check: check_for(way),
        skipped: None,
    })
}

fn stream(
    setup: &Setup,
    way: Way,
    n: usize,
    size: usize,
    db: &Path,
) -> anyhow::Result<Measurement> {
    let mut expected = Sha256::new();
    for i in 0..n {
        expected.update(stream_line(i, size));
    }
    let expected = expected.finalize();
    let mut started = Instant::now();
    let mut child = setup.spawn(
        way,
        &["stream", &n.to_string(), &size.to_string()],
        db,
        false,
    )?;
    if way.through_conductor() {
        // Timed from the answer to `initialize`, which starts the agent.
        started = Instant::now();
    }
    let mut out = child.stdout.take().expect("piped");
    let mut hasher = Sha256::new();
    let mut buf = vec![0; 1 << 16];
    let mut total = 0;
    let want: usize = (0..n).map(|i| stream_line(i, size).len()).sum();
    // Behind the conductor the lines are re-serialised: count them, keep them, compare later.
    let mut kept = Vec::new();
    let mut lines = 0;
    while if way.through_conductor() {
        lines < n
    } else {
        total < want
    } {
        let got = out.read(&mut buf)?;
        if got == 0 {
            break;
        }
        if way.through_conductor() {
            lines += memchr::memchr_iter(b'\n', &buf[..got]).count();
            kept.extend_from_slice(&buf[..got]);
        } else {
            hasher.update(&buf[..got]);
        }
        total += got;
    }
    let seconds = started.elapsed().as_secs_f64();
    let bytes_match = if way.through_conductor() {
        json_lines_equal(&kept, (0..n).map(|i| stream_line(i, size)))
    } else {
        hasher.finalize() == expected
    };
    let outcome = Outcome {
        messages: n,
        bytes: total,
        seconds,
        latencies: Vec::new(),
        bytes_match,
        recorded_lines: n,
    };
    finish_child(
        setup,
        child,
        way,
        db,
        outcome,
        &format!("stream {}", human(size)),
    )
}

fn ping_pong(setup: &Setup, way: Way, n: usize, db: &Path) -> anyhow::Result<Measurement> {
    let mut child = setup.spawn(way, &["echo"], db, false)?;
    let mut to_agent = child.stdin.take().expect("piped");
    let mut from_agent = BufReader::new(child.stdout.take().expect("piped"));
    let mut latencies = Vec::with_capacity(n);
    let mut line = Vec::new();
    let mut bytes_match = true;
    let started = Instant::now();
    for i in 0..n {
        let request = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"_bench/ping\",\"params\":{{}}}}\n"
        );
        let sent = Instant::now();
        to_agent.write_all(request.as_bytes())?;
        to_agent.flush()?;
        line.clear();
        from_agent.read_until(b'\n', &mut line)?;
        latencies.push(sent.elapsed().as_secs_f64() * 1e6);
        let expected = format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"result\":{{}}}}\n");
        bytes_match &= if way.through_conductor() {
            json_equal(&line, expected.as_bytes())
        } else {
            line == expected.as_bytes()
        };
    }
    let seconds = started.elapsed().as_secs_f64();
    child.stdin = Some(to_agent);
    let outcome = Outcome {
        messages: n * 2,
        bytes: 0,
        seconds,
        latencies,
        bytes_match,
        recorded_lines: n * 2,
    };
    finish_child(setup, child, way, db, outcome, "ping-pong")
}

/// Behind the conductor: whether `line` is the agent's line `index` of the tools workload as
/// an equal JSON value, and if it is a permission request, the id to answer (the conductor
/// renumbers requests, so that id is not compared).
fn tools_line_as_json(line: &[u8], index: usize) -> (bool, Option<Value>) {
    let (turn, place) = (index / 5, index % 5);
    let (before, last) = tools_turn(turn);
    let expected = if place < 4 { &before[place] } else { &last };
    let (Ok(mut got), Ok(mut want)) = (
        serde_json::from_slice::<Value>(line),
        serde_json::from_str::<Value>(expected),
    ) else {
        return (false, None);
    };
    if place != 3 {
        return (got == want, None);
    }
    let id = got.as_object_mut().and_then(|o| o.remove("id"));
    want.as_object_mut().map(|o| o.remove("id"));
    (got == want && id.is_some(), id)
}

fn tools(
    setup: &Setup,
    way: Way,
    n: usize,
    db: &Path,
    policy_answers: bool,
) -> anyhow::Result<Measurement> {
    // With `policy_answers`, acptap's policy answers the permission requests; otherwise, and
    // always through the other ways, the client does.
    let proxy = policy_answers
        && matches!(
            way,
            Way::ProxyNoRecord | Way::ProxyRecording | Way::ProxyOtlp
        );
    let mut child = setup.spawn(way, &["tools", &n.to_string()], db, proxy)?;
    let mut to_agent = child.stdin.take().expect("piped");
    let from_agent = BufReader::new(child.stdout.take().expect("piped"));
    let started = Instant::now();
    let mut seen = 0;
    let mut permission_requests = 0;
    let mut json_equal = true;
    let expected_client_lines = if proxy { n * 4 } else { n * 5 };
    // Read at the last line, while the proxy still runs (after it, /proc has no peak RSS).
    let mut usage = (None, None);
    let child_id = child.id();
    for line in from_agent.split(b'\n') {
        let line = line?;
        seen += 1;
        if seen == expected_client_lines && !matches!(way, Way::Pipe | Way::Relay) {
            usage = proc_usage(child_id);
        }
        if way.through_conductor() {
            let (equal, id) = tools_line_as_json(&line, seen - 1);
            json_equal &= equal;
            if let Some(id) = id {
                permission_requests += 1;
                let answer = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}});
                serde_json::to_writer(&mut to_agent, &answer)?;
                to_agent.write_all(b"\n")?;
                to_agent.flush()?;
            }
            // The conductor outlives its agent: stop at the last line.
            if seen == n * 5 {
                break;
            }
            continue;
        }
        // Through the pipe the client is the one who answers.
        if memchr::memmem::find(&line, b"session/request_permission").is_some() {
            permission_requests += 1;
            let id = std::str::from_utf8(raw_id(&line)?)?;
            to_agent.write_all(format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"outcome\":{{\"outcome\":\"selected\",\"optionId\":\"allow\"}}}}}}\n").as_bytes())?;
            to_agent.flush()?;
        }
        // The relay's shell keeps its stdout open until its first `cat` ends, which waits for
        // the client to close stdin: stop at the last line.
        if way == Way::Relay && seen == n * 5 {
            break;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    child.stdin = Some(to_agent);
    let outcome = Outcome {
        messages: n * 6,
        bytes: 0,
        seconds,
        latencies: Vec::new(),
        bytes_match: seen == expected_client_lines
            && json_equal
            && (proxy || permission_requests == n)
            && (!proxy || permission_requests == 0),
        recorded_lines: n * 6,
    };
    let mut child = child;
    let mut stderr = String::new();
    setup.await_peer_report(way, db);
    // The agent reports how long it waited for each answer (p50).
    let measurement = {
        let mut e = child.stderr.take().expect("piped");
        let name = if policy_answers {
            "tools, policy answers"
        } else {
            "tools"
        };
        let m = finish_child(setup, child, way, db, outcome, name);
        let _ = e.read_to_string(&mut stderr);
        m
    }?;
    let report = setup.peer_report(way, stderr, db);
    let wait_us = |name: &str| -> Option<f64> {
        report
            .lines()
            .find_map(|l| l.strip_prefix(&format!("bench-peer: permission-wait-{name}-ns ")))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .map(|ns| ns / 1000.0)
    };
    Ok(Measurement {
        p50_us: wait_us("p50"),
        p99_us: wait_us("p99"),
        proxy_cpu_s: measurement.proxy_cpu_s.or(usage.0),
        proxy_peak_rss_mib: measurement.proxy_peak_rss_mib.or(usage.1),
        ..measurement
    })
}

fn big(setup: &Setup, way: Way, size: usize, db: &Path) -> anyhow::Result<Measurement> {
    let conductor = way.through_conductor();
    // The conductor rejects the string params of `big_line`: it gets the valid form.
    let line = if conductor {
        big_line_object(size, b'b')
    } else {
        big_line(size, b'b')
    };
    let expected_from_agent = Sha256::digest(big_line(size, b'a'));
    let mut started = Instant::now();
    let mut child = setup.spawn(way, &["big", &size.to_string()], db, false)?;
    if conductor {
        started = Instant::now();
    }
    let mut to_agent = child.stdin.take().expect("piped");
    // The conductor kills its agent when the client closes its end: keep it open until the
    // peer has reported.
    let writer = std::thread::spawn(move || -> std::io::Result<Option<ChildStdin>> {
        to_agent.write_all(&line)?;
        Ok(conductor.then_some(to_agent))
    });
    let mut out = child.stdout.take().expect("piped");
    let mut hasher = Sha256::new();
    let mut buf = vec![0; 1 << 16];
    let mut total = 0;
    // Behind the conductor the line comes re-serialised: read to its newline, compare as JSON.
    let mut kept = Vec::new();
    while if way.through_conductor() {
        kept.last() != Some(&b'\n')
    } else {
        total < size
    } {
        let n = out.read(&mut buf)?;
        if n == 0 {
            break;
        }
        if way.through_conductor() {
            kept.extend_from_slice(&buf[..n]);
        } else {
            hasher.update(&buf[..n]);
        }
        total += n;
    }
    let to_agent = writer
        .join()
        .map_err(|_| anyhow::anyhow!("writer panicked"))??;
    let seconds = started.elapsed().as_secs_f64();
    let (cpu, rss) = if matches!(way, Way::Pipe | Way::Relay) {
        (None, None)
    } else {
        proc_usage(child.id())
    };
    setup.await_peer_report(way, db);
    drop(to_agent);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("piped")
        .read_to_string(&mut stderr)?;
    let status = setup.wait(&mut child)?;
    if !status.success() {
        bail!("big line over {way:?} failed: {stderr}");
    }
    let bytes_match = if conductor {
        json_lines_equal(&kept, std::iter::once(big_line_object(size, b'a')))
            && setup
                .peer_report(way, stderr, db)
                .contains("bench-peer: received-json-equal true")
    } else {
        let agent_got = format!(
            "bench-peer: received {size} {}",
            hex(Sha256::digest(big_line(size, b'b')))
        );
        hasher.finalize() == expected_from_agent && stderr.contains(&agent_got)
    };
    Ok(Measurement {
        workload: format!("big line {}", human(size)),
        way,
        messages: 2,
        seconds,
        messages_per_s: 2.0 / seconds,
        mb_per_s: (2 * size) as f64 / seconds / 1e6,
        ratio_to_pipe: None,
        p50_us: None,
        p99_us: None,
        max_us: None,
        proxy_cpu_s: cpu,
        proxy_peak_rss_mib: rss,
        recorder_lag_ms: None,
        bytes_match,
        check: check_for(way),
        skipped: None,
    })
}

fn human(size: usize) -> String {
    match size {
        s if s >= 1 << 20 => format!("{} MiB", s >> 20),
        s if s >= 1 << 10 => format!("{} KiB", s >> 10),
        s => format!("{s} B"),
    }
}

/// A bare batched insert of `n` message rows of `size` bytes: the recording floor.
fn sqlite_floor(dir: &Path, n: usize, size: usize) -> anyhow::Result<f64> {
    let path = dir.join("floor.db");
    let mut store = acptap::record::Store::open(&path)?;
    let connection = store.begin_connection(&acptap::record::ConnectionStart {
        label: None,
        command: vec!["floor".into()],
        cwd: None,
        pid: None,
        started_at: 0,
        replay_of: None,
    })?;
    let rows: Vec<acptap::record::store::LineToWrite> = (0..n)
        .map(|i| {
            let raw = bytes::Bytes::from(stream_line(i, size));
            acptap::record::store::LineToWrite {
                seq: i as i64,
                ts: 0,
                direction: "a2c",
                kind: "notification",
                rpc_id: None,
                method: Some("session/update".into()),
                session_id: Some("bench".into()),
                tool_call_id: None,
                reply_to_seq: None,
                size: raw.len() as i64,
                raw,
                truncated: false,
                facts: Vec::new(),
                annotation: Default::default(),
            }
        })
        .collect();
    let started = Instant::now();
    for batch in rows.chunks(acptap::record::MAX_BATCH) {
        store.write_batch(connection, batch)?;
    }
    Ok(n as f64 / started.elapsed().as_secs_f64())
}

#[derive(Debug, Serialize)]
pub struct BenchReport {
    pub quick: bool,
    pub measurements: Vec<Measurement>,
    pub sqlite_floor_rows_per_s: f64,
    pub recorded_1kib_messages_per_s: Option<f64>,
    /// Present when the conductor was measured too.
    pub conductor: Option<ConductorRun>,
    /// What the `proxy-otlp` runs sent to the bench's collector.
    pub otlp_collector: CollectorCounts,
}

#[derive(Debug, Serialize)]
pub struct ConductorRun {
    pub path: PathBuf,
    /// What `--version` printed.
    pub version: String,
    /// Per workload: the size the conductor ran and the size the other ways ran.
    pub scaled: Vec<Scaled>,
}

#[derive(Debug, Serialize)]
pub struct Scaled {
    pub workload: String,
    /// `messages`, `round trips`, `turns` or `bytes`.
    pub unit: &'static str,
    pub conductor: usize,
    pub others: usize,
}

/// Runs one workload one way: (way, database, size).
type Run<'a> = Box<dyn Fn(Way, &Path, usize) -> anyhow::Result<Measurement> + 'a>;

struct Workload<'a> {
    name: String,
    /// `name` is followed by the size (the big line, whose size is in bytes).
    sized: bool,
    /// What the sizes count: messages, round trips, turns, bytes.
    unit: &'static str,
    /// The full run, `--quick`, and the conductor's ways.
    full: usize,
    quick: usize,
    conductor: usize,
    run: Run<'a>,
}

/// Why a conductor run failed, on one line and not too long.
fn short_reason(error: &anyhow::Error) -> String {
    let reason = format!("{error:#}")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    match reason.char_indices().nth(160) {
        Some((cut, _)) => format!("{}…", &reason[..cut]),
        None => reason,
    }
}

/// What `PATH --version` prints, waiting at most five seconds for it.
fn conductor_version(path: &Path) -> anyhow::Result<String> {
    let mut child = Command::new(path)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let started = Instant::now();
    while child.try_wait()?.is_none() {
        if started.elapsed() > Duration::from_secs(5) {
            let _ = child.kill();
            let _ = child.wait();
            bail!("`--version` did not finish in 5 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut version = String::new();
    child
        .stdout
        .take()
        .expect("piped")
        .read_to_string(&mut version)?;
    Ok(version.trim().to_owned())
}

/// The benchmark, of the product binary at `acptap`.
pub fn run(
    acptap: &Path,
    quick: bool,
    conductor: Option<&Path>,
    only: Option<&str>,
) -> anyhow::Result<BenchReport> {
    let dir = std::env::temp_dir().join(format!("acptap-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let policy = dir.join("policy.toml");
    std::fs::write(
        &policy,
        "version = 1\n[[rule]]\nid = \"reads\"\ndecision = \"allow\"\nkind = \"read\"\npaths = [\"/bench/**\"]\n",
    )?;
    let conductor = conductor
        .map(|path| -> anyhow::Result<(PathBuf, String)> {
            let path = std::path::absolute(path)?;
            let version = conductor_version(&path)
                .with_context(|| format!("cannot run the conductor {}", path.display()))?;
            Ok((path, version))
        })
        .transpose()?;
    let naive = python3_available().then(|| {
        let script = dir.join("naive_recorder.py");
        std::fs::write(&script, NAIVE_RECORDER).map(|()| script)
    });
    let (collector_url, collector_counts) = start_collector()?;
    let setup = Setup {
        proxy: acptap.to_owned(),
        peer: std::env::current_exe()?,
        dir: dir.clone(),
        policy,
        conductor: conductor.as_ref().map(|(path, _)| path.clone()),
        naive: naive.transpose()?,
        watchdogs: RefCell::new(HashMap::new()),
        collector: collector_url,
    };
    let mut measurements = Vec::new();
    let mut db_number = 0;
    let mut fresh_db = || {
        db_number += 1;
        dir.join(format!("run{db_number}.db"))
    };
    let bench = &setup;
    let stream_workload = |size: usize, full: usize, quick: usize, conductor: usize| Workload {
        name: format!("stream {}", human(size)),
        sized: false,
        unit: "messages",
        full,
        quick,
        conductor,
        run: Box::new(move |way, db, n| stream(bench, way, n, size, db)),
    };
    // The conductor's sizes keep its two ways to about half a minute in all.
    let workloads = vec![
        stream_workload(64, 400_000, 4_000, 30_000),
        stream_workload(1024, 200_000, 2_000, 30_000),
        stream_workload(4096, 50_000, 500, 10_000),
        stream_workload(1 << 20, 300, 5, 60),
        Workload {
            name: "ping-pong".into(),
            sized: false,
            unit: "round trips",
            full: 20_000,
            quick: 200,
            conductor: 4_000,
            run: Box::new(|way, db, n| ping_pong(bench, way, n, db)),
        },
        Workload {
            name: "tools".into(),
            sized: false,
            unit: "turns",
            full: 5_000,
            quick: 50,
            conductor: 1_500,
            run: Box::new(|way, db, n| tools(bench, way, n, db, false)),
        },
        Workload {
            name: "tools, policy answers".into(),
            sized: false,
            unit: "turns",
            full: 5_000,
            quick: 50,
            conductor: 1_500,
            run: Box::new(|way, db, n| tools(bench, way, n, db, true)),
        },
        Workload {
            name: "big line".into(),
            sized: true,
            unit: "bytes",
            full: 64 << 20,
            quick: 1 << 20,
            conductor: 64 << 20,
            run: Box::new(|way, db, size| big(bench, way, size, db)),
        },
    ];
    let mut ways = vec![
        Way::Pipe,
        Way::Relay,
        Way::ProxyNoRecord,
        Way::ProxyRecording,
        Way::ProxyOtlp,
    ];
    if setup.naive.is_some() {
        ways.push(Way::Naive);
    }
    if conductor.is_some() {
        ways.extend([Way::Conductor, Way::ConductorTrace]);
    }
    let mut scaled = Vec::new();
    for workload in &workloads {
        let mut pipe_rate = None;
        let size = if quick { workload.quick } else { workload.full };
        let conductor_size = workload.conductor.min(size);
        let name = if workload.sized {
            format!("{} {}", workload.name, human(size))
        } else {
            workload.name.clone()
        };
        if only.is_some_and(|only| !name.contains(only)) {
            continue;
        }
        if conductor.is_some() {
            scaled.push(Scaled {
                workload: name.clone(),
                unit: workload.unit,
                conductor: conductor_size,
                others: size,
            });
        }
        for &way in &ways {
            let mut m = if way.through_conductor() {
                let result = (workload.run)(way, &fresh_db(), conductor_size);
                let killed = setup.end_conductor_run();
                match result {
                    _ if killed => Measurement::skipped(
                        &name,
                        way,
                        format!(
                            "killed after {} s: no answer",
                            CONDUCTOR_TIME_LIMIT.as_secs()
                        ),
                    ),
                    Ok(m) => m,
                    Err(e) => Measurement::skipped(&name, way, short_reason(&e)),
                }
            } else {
                (workload.run)(way, &fresh_db(), size)?
            };
            if way == Way::Pipe {
                pipe_rate = Some(m.messages_per_s);
            }
            if m.skipped.is_none() {
                m.ratio_to_pipe = pipe_rate.map(|p| m.messages_per_s / p);
            }
            measurements.push(m);
        }
    }
    let floor = sqlite_floor(&dir, if quick { 2_000 } else { 200_000 }, 1024)?;
    let recorded_1kib = measurements
        .iter()
        .find(|m| m.workload == "stream 1 KiB" && m.way == Way::ProxyRecording)
        .map(|m| m.messages_per_s);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(BenchReport {
        quick,
        measurements,
        sqlite_floor_rows_per_s: floor,
        recorded_1kib_messages_per_s: recorded_1kib,
        conductor: conductor.map(|(path, version)| ConductorRun {
            path,
            version,
            scaled,
        }),
        otlp_collector: std::mem::take(
            &mut *collector_counts.lock().unwrap_or_else(|e| e.into_inner()),
        ),
    })
}

/// One of the recording goals, judged on one run.
#[derive(Debug, Serialize)]
pub struct Goal {
    pub goal: String,
    pub measured: String,
    pub met: bool,
}

/// The recording goals of issues 12 and 31, judged on this run's figures (those whose ways ran).
pub fn goals(report: &BenchReport) -> Vec<Goal> {
    let find = |workload: &str, way: Way| {
        report
            .measurements
            .iter()
            .find(|m| m.workload == workload && m.way == way && m.skipped.is_none())
    };
    let mut goals = Vec::new();
    for (workload, at_least) in [
        ("stream 64 B", 3.0),
        ("stream 1 KiB", 3.0),
        ("tools", 2.0),
        ("tools, policy answers", 2.0),
    ] {
        if let (Some(ours), Some(naive)) = (
            find(workload, Way::ProxyRecording),
            find(workload, Way::Naive),
        ) && naive.messages_per_s > 0.0
        {
            let ratio = ours.messages_per_s / naive.messages_per_s;
            goals.push(Goal {
                goal: format!("{workload}: recording >= {at_least}x the naive recorder"),
                measured: format!("{ratio:.2}x"),
                met: ratio >= at_least,
            });
        }
    }
    if let Some(recorded) = report.recorded_1kib_messages_per_s {
        let share = recorded / report.sqlite_floor_rows_per_s;
        goals.push(Goal {
            goal: "stream 1 KiB: recording >= 0.8 of the SQLite floor".into(),
            measured: format!("{share:.2}"),
            met: share >= 0.8,
        });
    }
    let latency =
        |workload: &str, way: Way| find(workload, way).and_then(|m| Some((m.p50_us?, m.p99_us?)));
    for workload in ["tools", "tools, policy answers"] {
        if let (Some((_, ours)), Some((_, relay))) = (
            latency(workload, Way::ProxyRecording),
            latency(workload, Way::Relay),
        ) {
            goals.push(Goal {
                goal: format!("{workload}: permission round trip p99 <= 3x the relay's"),
                measured: format!("{ours:.0} vs {relay:.0} µs"),
                met: ours <= 3.0 * relay,
            });
        }
    }
    if let (Some((p50, p99)), Some((relay50, relay99))) = (
        latency("ping-pong", Way::ProxyRecording),
        latency("ping-pong", Way::Relay),
    ) {
        goals.push(Goal {
            goal: "ping-pong: p50 <= the relay's + 15 µs".into(),
            measured: format!("{p50:.0} vs {relay50:.0} µs"),
            met: p50 <= relay50 + 15.0,
        });
        goals.push(Goal {
            goal: "ping-pong: p99 <= 3x the relay's".into(),
            measured: format!("{p99:.0} vs {relay99:.0} µs"),
            met: p99 <= 3.0 * relay99,
        });
    }
    for workload in ["stream 1 KiB", "tools", "tools, policy answers"] {
        if let Some(rss) = find(workload, Way::ProxyRecording).and_then(|m| m.proxy_peak_rss_mib) {
            goals.push(Goal {
                goal: format!("{workload}: recording peak RSS <= 48 MiB"),
                measured: format!("{rss:.1} MiB"),
                met: rss <= 48.0,
            });
        }
    }
    if let Some(m) = report
        .measurements
        .iter()
        .find(|m| m.workload.starts_with("big line") && m.way == Way::ProxyRecording)
        && let Some(rss) = m.proxy_peak_rss_mib
    {
        // One line each way at once: both are in flight.
        let in_flight = m.mb_per_s * 1e6 * m.seconds / (1024.0 * 1024.0);
        goals.push(Goal {
            goal: format!("{}: recording peak RSS <= 1.25x in flight", m.workload),
            measured: format!("{rss:.0} MiB for {in_flight:.0} MiB"),
            met: rss <= 1.25 * in_flight,
        });
    }
    goals
}

pub fn render(report: &BenchReport) -> String {
    let mut out = String::new();
    let opt = |v: Option<f64>, digits: usize| {
        v.map(|v| format!("{v:.digits$}"))
            .unwrap_or_else(|| "-".into())
    };
    out.push_str(&format!(
        "{:<16} {:<16} {:>11} {:>9} {:>7} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {}\n",
        "WORKLOAD",
        "WAY",
        "MSG/S",
        "MB/S",
        "xPIPE",
        "P50 µs",
        "P99 µs",
        "MAX µs",
        "CPU s",
        "RSS MiB",
        "LAG ms",
        "BYTES"
    ));
    for m in &report.measurements {
        let way = format!("{:?}", m.way).to_lowercase();
        if let Some(reason) = &m.skipped {
            out.push_str(&format!(
                "{:<16} {:<16} {:>11} {:>9} {:>7} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} skipped: {reason}\n",
                m.workload, way, "-", "-", "-", "-", "-", "-", "-", "-", "-",
            ));
            continue;
        }
        out.push_str(&format!(
            "{:<16} {:<16} {:>11.0} {:>9.1} {:>7} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {}\n",
            m.workload,
            way,
            m.messages_per_s,
            m.mb_per_s,
            opt(m.ratio_to_pipe, 2),
            opt(m.p50_us, 1),
            opt(m.p99_us, 1),
            opt(m.max_us, 1),
            opt(m.proxy_cpu_s, 2),
            opt(m.proxy_peak_rss_mib, 1),
            opt(m.recorder_lag_ms, 1),
            match (m.bytes_match, m.check) {
                (true, Check::Bytes) => "ok",
                (true, Check::JsonValues) => "json-equal",
                (false, _) => "MISMATCH",
            },
        ));
    }
    out.push_str(&format!(
        "\nSQLite floor (bare batched insert, 1 KiB rows): {:.0} rows/s; recorded 1 KiB stream: {} msg/s ({} of the floor)\n",
        report.sqlite_floor_rows_per_s,
        opt(report.recorded_1kib_messages_per_s, 0),
        opt(report.recorded_1kib_messages_per_s.map(|r| r / report.sqlite_floor_rows_per_s), 2),
    ));
    out.push_str(&format!(
        "OTLP collector of the proxy-otlp runs: {} request(s), {} of protobuf\n",
        report.otlp_collector.requests,
        human(report.otlp_collector.bytes),
    ));
    // acptap's recorder against the naive one, workload by workload.
    let rate = |workload: &str, way: Way| {
        report
            .measurements
            .iter()
            .find(|m| m.workload == workload && m.way == way && m.skipped.is_none())
            .map(|m| m.messages_per_s)
    };
    let mut against_naive = Vec::new();
    for m in report.measurements.iter().filter(|m| m.way == Way::Naive) {
        if let (Some(ours), Some(naive)) = (
            rate(&m.workload, Way::ProxyRecording),
            rate(&m.workload, Way::Naive),
        ) && naive > 0.0
        {
            against_naive.push(format!("{} {:.2}x", m.workload, ours / naive));
        }
    }
    if !against_naive.is_empty() {
        out.push_str(&format!(
            "acptap recording / naive recorder (messages per second): {}\n",
            against_naive.join(", ")
        ));
    }
    let goals = goals(report);
    if !goals.is_empty() && !report.quick {
        out.push_str("\nGOAL (issues 12, 31)                                       MEASURED                 MET\n");
        for goal in &goals {
            out.push_str(&format!(
                "{:<58} {:<24} {}\n",
                goal.goal,
                goal.measured,
                if goal.met { "yes" } else { "NO" }
            ));
        }
    }
    if let Some(conductor) = &report.conductor {
        let sizes: Vec<String> = conductor
            .scaled
            .iter()
            .filter(|s| s.conductor != s.others)
            .map(|s| {
                format!(
                    "{}: {} {} (others {})",
                    s.workload, s.conductor, s.unit, s.others
                )
            })
            .collect();
        out.push_str(&format!(
            "\nconductor = {} ({}): `agent 'acptap-bench peer ...'`; conductortrace adds `--trace FILE`.\n\
             Timed from its answer to `initialize`; its big line has object params (it rejects string params).\n\
             It re-serialises every message: its BYTES compare equal JSON values (json-equal), not bytes.\n",
            conductor.version,
            conductor.path.display(),
        ));
        if !sizes.is_empty() {
            out.push_str(&format!(
                "It ran smaller workloads: {}.\n",
                sizes.join("; ")
            ));
        }
    }
    out
}
