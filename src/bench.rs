//! `acptap bench`: the cost of the proxy, measured against a plain pipe.
//!
//! One run, one process tree: the same synthetic ACP traffic goes three ways, between this
//! process (the client) and `acptap bench-peer` (the agent): a plain pipe, `acptap run
//! --no-record`, and `acptap run` recording into a fresh database. Workloads:
//!
//! - **stream**: the agent writes N `session/update` notifications of 256 B, 4 KiB and 1 MiB as
//!   fast as the client reads them;
//! - **ping-pong**: the client sends a request, the agent answers at once, N times: round trips;
//! - **tools**: a turn mix repeated N times: `tool_call`, two updates, a permission request (answered
//!   by the policy through the proxy, by the client through the pipe), a final update;
//! - **big line**: one 64 MiB line each way.
//!
//! For each it reports messages/s, MB/s, the ratio to the pipe, the proxy's CPU time and peak RSS
//! (read from /proc before it exits), and, when recording, the recorder's lag: how long after the
//! client had the last byte the last line was committed. Every run checks that the bytes at both
//! ends are the bytes sent (SHA-256), so a fast wrong proxy cannot win. It also times a bare
//! batched insert of the same rows into a fresh database: the floor for recording.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde::Serialize;
use sha2::{Digest, Sha256};

/// The line of `size` bytes (newline included) that the agent sends as message `i`.
pub fn stream_line(i: usize, size: usize) -> Vec<u8> {
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

fn hex(digest: impl AsRef<[u8]>) -> String {
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// The agent side: `acptap bench-peer MODE ...`.
pub fn peer(args: &[String]) -> anyhow::Result<()> {
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let mut input = BufReader::with_capacity(1 << 16, std::io::stdin().lock());
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
                let id_start = memchr::memmem::find(&line, b"\"id\":").context("no id")? + 5;
                let id_end = id_start
                    + line[id_start..]
                        .iter()
                        .position(|b| *b == b',')
                        .context("no id end")?;
                out.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":")?;
                out.write_all(&line[id_start..id_end])?;
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
                let update = |body: String| {
                    format!(
                        "{{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{{\"sessionId\":\"bench\",\"update\":{body}}}}}\n"
                    )
                };
                out.write_all(update(format!(r#"{{"sessionUpdate":"tool_call","toolCallId":"t{i}","title":"Read src/lib.rs","kind":"read","status":"pending","locations":[{{"path":"/bench/project/src/lib.rs"}}]}}"#)).as_bytes())?;
                out.write_all(update(format!(r#"{{"sessionUpdate":"tool_call_update","toolCallId":"t{i}","status":"in_progress"}}"#)).as_bytes())?;
                out.write_all(update(format!(r#"{{"sessionUpdate":"tool_call_update","toolCallId":"t{i}","content":[{{"type":"content","content":{{"type":"text","text":"{}"}}}}]}}"#, "x".repeat(512))).as_bytes())?;
                out.write_all(format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"session/request_permission","params":{{"sessionId":"bench","toolCall":{{"toolCallId":"t{i}"}},"options":[{{"optionId":"allow","name":"Allow","kind":"allow_once"}},{{"optionId":"reject","name":"Reject","kind":"reject_once"}}]}}}}"#).as_bytes())?;
                out.write_all(b"\n")?;
                out.flush()?;
                let asked = Instant::now();
                answer.clear();
                if input.read_until(b'\n', &mut answer)? == 0 {
                    bail!("bench-peer: no answer to permission request {i}");
                }
                waits.push(asked.elapsed().as_nanos() as u64);
                out.write_all(update(format!(r#"{{"sessionUpdate":"tool_call_update","toolCallId":"t{i}","status":"completed"}}"#)).as_bytes())?;
            }
            out.flush()?;
            waits.sort_unstable();
            eprintln!(
                "bench-peer: permission-wait-p50-ns {}",
                waits.get(waits.len() / 2).copied().unwrap_or(0)
            );
        }
        Some("big") => {
            let size = number(1)?;
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
            eprintln!("bench-peer: received {total} {}", hex(hasher.finalize()));
        }
        _ => bail!("bench-peer: usage: stream N SIZE | echo | tools N | big SIZE"),
    }
    Ok(())
}

fn big_line(size: usize, fill: u8) -> Vec<u8> {
    let mut line = br#"{"jsonrpc":"2.0","method":"_bench/big","params":""#.to_vec();
    line.resize(size - 3, fill);
    line.extend_from_slice(b"\"}\n");
    line
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Way {
    Pipe,
    ProxyNoRecord,
    ProxyRecording,
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
    pub bytes_match: bool,
}

struct Setup {
    exe: PathBuf,
    dir: PathBuf,
    policy: PathBuf,
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

impl Setup {
    fn spawn(
        &self,
        way: Way,
        peer_args: &[&str],
        db: &Path,
        policy: bool,
    ) -> anyhow::Result<Child> {
        let mut command = match way {
            Way::Pipe => Command::new(&self.exe),
            _ => {
                let mut c = Command::new(&self.exe);
                c.arg("run").arg("--grace").arg("30s");
                if way == Way::ProxyNoRecord {
                    c.arg("--no-record");
                } else {
                    c.arg("--db").arg(db);
                }
                if policy {
                    c.arg("--policy").arg(&self.policy);
                }
                c.arg("--").arg(&self.exe);
                c
            }
        };
        command
            .arg("bench-peer")
            .args(peer_args)
            .env("XDG_CONFIG_HOME", &self.dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("cannot start the bench peer")
    }
}

/// Waits until `db` holds `count` messages; returns how long that took.
fn recorder_lag(db: &Path, count: usize) -> Option<f64> {
    let started = Instant::now();
    let conn = rusqlite::Connection::open(db).ok()?;
    conn.busy_timeout(Duration::from_secs(5)).ok()?;
    while started.elapsed() < Duration::from_secs(120) {
        let n: i64 = conn
            .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
            .unwrap_or(0);
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
    mut child: Child,
    way: Way,
    db: &Path,
    outcome: Outcome,
    workload: &str,
) -> anyhow::Result<Measurement> {
    let (cpu, rss) = if way == Way::Pipe {
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
    let status = child.wait()?;
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
    let started = Instant::now();
    let mut child = setup.spawn(
        way,
        &["stream", &n.to_string(), &size.to_string()],
        db,
        false,
    )?;
    let mut out = child.stdout.take().expect("piped");
    let mut hasher = Sha256::new();
    let mut buf = vec![0; 1 << 16];
    let mut total = 0;
    let want: usize = (0..n).map(|i| stream_line(i, size).len()).sum();
    while total < want {
        let got = out.read(&mut buf)?;
        if got == 0 {
            break;
        }
        hasher.update(&buf[..got]);
        total += got;
    }
    let seconds = started.elapsed().as_secs_f64();
    let outcome = Outcome {
        messages: n,
        bytes: total,
        seconds,
        latencies: Vec::new(),
        bytes_match: hasher.finalize() == expected,
        recorded_lines: n,
    };
    finish_child(child, way, db, outcome, &format!("stream {}", human(size)))
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
        bytes_match &=
            line == format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"result\":{{}}}}\n").as_bytes();
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
    finish_child(child, way, db, outcome, "ping-pong")
}

fn tools(setup: &Setup, way: Way, n: usize, db: &Path) -> anyhow::Result<Measurement> {
    let mut child = setup.spawn(way, &["tools", &n.to_string()], db, way != Way::Pipe)?;
    let mut to_agent = child.stdin.take().expect("piped");
    let from_agent = BufReader::new(child.stdout.take().expect("piped"));
    let started = Instant::now();
    let mut seen = 0;
    let mut permission_requests = 0;
    for line in from_agent.split(b'\n') {
        let line = line?;
        seen += 1;
        // Through the pipe the client is the one who answers.
        if memchr::memmem::find(&line, b"session/request_permission").is_some() {
            permission_requests += 1;
            let id_start = memchr::memmem::find(&line, b"\"id\":").context("no id")? + 5;
            let id_end = id_start
                + line[id_start..]
                    .iter()
                    .position(|b| *b == b',')
                    .context("no id end")?;
            let id = std::str::from_utf8(&line[id_start..id_end])?;
            to_agent.write_all(format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"outcome\":{{\"outcome\":\"selected\",\"optionId\":\"allow\"}}}}}}\n").as_bytes())?;
            to_agent.flush()?;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    child.stdin = Some(to_agent);
    let expected_client_lines = if way == Way::Pipe { n * 5 } else { n * 4 };
    let outcome = Outcome {
        messages: n * 6,
        bytes: 0,
        seconds,
        latencies: Vec::new(),
        bytes_match: seen == expected_client_lines
            && (way != Way::Pipe || permission_requests == n)
            && (way == Way::Pipe || permission_requests == 0),
        recorded_lines: n * 6,
    };
    let mut child = child;
    let mut stderr = String::new();
    // The agent reports how long it waited for each answer (p50).
    let measurement = {
        let mut e = child.stderr.take().expect("piped");
        let m = finish_child(child, way, db, outcome, "tools");
        let _ = e.read_to_string(&mut stderr);
        m
    }?;
    let wait_ns: Option<f64> = stderr
        .lines()
        .find_map(|l| l.strip_prefix("bench-peer: permission-wait-p50-ns "))
        .and_then(|v| v.trim().parse().ok());
    Ok(Measurement {
        p50_us: wait_ns.map(|ns| ns / 1000.0),
        ..measurement
    })
}

fn big(setup: &Setup, way: Way, size: usize, db: &Path) -> anyhow::Result<Measurement> {
    let line = big_line(size, b'b');
    let expected_from_agent = Sha256::digest(big_line(size, b'a'));
    let started = Instant::now();
    let mut child = setup.spawn(way, &["big", &size.to_string()], db, false)?;
    let mut to_agent = child.stdin.take().expect("piped");
    let writer = std::thread::spawn(move || -> std::io::Result<()> {
        to_agent.write_all(&line)?;
        Ok(())
    });
    let mut out = child.stdout.take().expect("piped");
    let mut hasher = Sha256::new();
    let mut buf = vec![0; 1 << 16];
    let mut total = 0;
    while total < size {
        let n = out.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        total += n;
    }
    writer
        .join()
        .map_err(|_| anyhow::anyhow!("writer panicked"))??;
    let seconds = started.elapsed().as_secs_f64();
    let (cpu, rss) = if way == Way::Pipe {
        (None, None)
    } else {
        proc_usage(child.id())
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("piped")
        .read_to_string(&mut stderr)?;
    let status = child.wait()?;
    if !status.success() {
        bail!("big line over {way:?} failed: {stderr}");
    }
    let agent_got = format!(
        "bench-peer: received {size} {}",
        hex(Sha256::digest(big_line(size, b'b')))
    );
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
        bytes_match: hasher.finalize() == expected_from_agent && stderr.contains(&agent_got),
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
    let mut store = crate::record::Store::open(&path)?;
    let connection = store.begin_connection(&crate::record::ConnectionStart {
        label: None,
        command: vec!["floor".into()],
        cwd: None,
        pid: None,
        started_at: 0,
    })?;
    let rows: Vec<crate::record::store::MessageRow> = (0..n)
        .map(|i| {
            let raw = bytes::Bytes::from(stream_line(i, size));
            crate::record::store::MessageRow {
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
    for batch in rows.chunks(crate::record::MAX_BATCH) {
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
}

pub fn run(quick: bool) -> anyhow::Result<BenchReport> {
    let dir = std::env::temp_dir().join(format!("acptap-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let policy = dir.join("policy.toml");
    std::fs::write(
        &policy,
        "version = 1\n[[rule]]\nid = \"reads\"\ndecision = \"allow\"\nkind = \"read\"\npaths = [\"/bench/**\"]\n",
    )?;
    let setup = Setup {
        exe: std::env::current_exe()?,
        dir: dir.clone(),
        policy,
    };
    let scale = |full: usize, small: usize| if quick { small } else { full };
    let mut measurements = Vec::new();
    let mut db_number = 0;
    let mut fresh_db = || {
        db_number += 1;
        dir.join(format!("run{db_number}.db"))
    };
    type Workload<'a> = Box<dyn Fn(Way, &Path) -> anyhow::Result<Measurement> + 'a>;
    let workloads: Vec<Workload> = vec![
        Box::new(|way, db| stream(&setup, way, scale(200_000, 2_000), 256, db)),
        Box::new(|way, db| stream(&setup, way, scale(200_000, 2_000), 1024, db)),
        Box::new(|way, db| stream(&setup, way, scale(50_000, 500), 4096, db)),
        Box::new(|way, db| stream(&setup, way, scale(300, 5), 1 << 20, db)),
        Box::new(|way, db| ping_pong(&setup, way, scale(20_000, 200), db)),
        Box::new(|way, db| tools(&setup, way, scale(5_000, 50), db)),
        Box::new(|way, db| big(&setup, way, scale(64 << 20, 1 << 20), db)),
    ];
    for workload in &workloads {
        let mut pipe_rate = None;
        for way in [Way::Pipe, Way::ProxyNoRecord, Way::ProxyRecording] {
            let mut m = workload(way, &fresh_db())?;
            if way == Way::Pipe {
                pipe_rate = Some(m.messages_per_s);
            }
            m.ratio_to_pipe = pipe_rate.map(|p| m.messages_per_s / p);
            measurements.push(m);
        }
    }
    let floor = sqlite_floor(&dir, scale(200_000, 2_000), 1024)?;
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
    })
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
        out.push_str(&format!(
            "{:<16} {:<16} {:>11.0} {:>9.1} {:>7} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {}\n",
            m.workload,
            format!("{:?}", m.way).to_lowercase(),
            m.messages_per_s,
            m.mb_per_s,
            opt(m.ratio_to_pipe, 2),
            opt(m.p50_us, 1),
            opt(m.p99_us, 1),
            opt(m.max_us, 1),
            opt(m.proxy_cpu_s, 2),
            opt(m.proxy_peak_rss_mib, 1),
            opt(m.recorder_lag_ms, 1),
            if m.bytes_match { "ok" } else { "MISMATCH" },
        ));
    }
    out.push_str(&format!(
        "\nSQLite floor (bare batched insert, 1 KiB rows): {:.0} rows/s; recorded 1 KiB stream: {} msg/s ({} of the floor)\n",
        report.sqlite_floor_rows_per_s,
        opt(report.recorded_1kib_messages_per_s, 0),
        opt(report.recorded_1kib_messages_per_s.map(|r| r / report.sqlite_floor_rows_per_s), 2),
    ));
    out
}
