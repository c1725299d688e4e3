//! `acptap-bench --read`: the read side timed on a large database. It builds one (3 sessions of
//! 20,000 tool turns each, `--quick`: 1 of 500) with `acptap import`, then runs each view as the
//! user would (the `acptap` built beside this binary, a child process) and reports its wall time
//! and peak RSS (from `wait4`; it includes what the child shared with this process before `exec`,
//! which the `--version` row shows).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::Context;
use serde::Serialize;
use serde_json::json;

use acptap::record::transcript::TranscriptRecord;

#[derive(Debug, Serialize)]
pub struct ReadTiming {
    pub command: String,
    pub seconds: f64,
    pub peak_rss_mib: f64,
    pub ok: bool,
}

#[derive(Debug, Serialize)]
pub struct ReadReport {
    pub sessions: usize,
    pub turns_per_session: usize,
    pub lines: usize,
    pub database_mib: f64,
    pub timings: Vec<ReadTiming>,
}

/// Writes one session (`bench-read-INDEX`) of `turns` tool turns as a transcript: a prompt, an
/// edit with a small diff, its permission request and answer, its completion, the turn's end.
/// Returns the line count. Written as it goes, so this process stays small (a child's peak RSS
/// starts from its parent's). The ui's browser test opens such a session of 60,000 turns
/// (`acptap-bench session --turns 60000 -o FILE`).
pub fn session(index: usize, turns: usize, path: &Path) -> anyhow::Result<usize> {
    use std::io::Write as _;
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut count = 0usize;
    let mut push = |dir: &str, message: serde_json::Value| -> anyhow::Result<()> {
        let record = TranscriptRecord {
            seq: Some(count as i64),
            t: count as f64 * 0.000_1,
            dir: dir.into(),
            eol: true,
            text: Some(message.to_string()),
            hex: None,
            origin: None,
            forwarded: None,
            start: None,
        };
        serde_json::to_writer(&mut file, &record)?;
        file.write_all(b"\n")?;
        count += 1;
        Ok(())
    };
    let sid = format!("bench-read-{index}");
    push(
        "c2a",
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}),
    )?;
    push(
        "a2c",
        json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1, "agentInfo": {"name": "bench"}}}),
    )?;
    push(
        "c2a",
        json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/p", "mcpServers": []}}),
    )?;
    push(
        "a2c",
        json!({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": sid}}),
    )?;
    for i in 0..turns {
        let prompt = 10 + 2 * i;
        let call = format!("t{i}");
        let path = format!("/p/src/f{}.rs", i % 100);
        push(
            "c2a",
            json!({"jsonrpc": "2.0", "id": prompt, "method": "session/prompt", "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "go on"}]}}),
        )?;
        push(
            "a2c",
            json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": {"sessionUpdate": "tool_call", "toolCallId": call, "title": "Edit", "kind": "edit", "locations": [{"path": path}], "content": [{"type": "diff", "path": path, "oldText": "a\nb\nc", "newText": "a\nB\nc"}]}}}),
        )?;
        push(
            "a2c",
            json!({"jsonrpc": "2.0", "id": 1_000_000 + i, "method": "session/request_permission", "params": {"sessionId": sid, "toolCall": {"toolCallId": call}, "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}]}}),
        )?;
        push(
            "c2a",
            json!({"jsonrpc": "2.0", "id": 1_000_000 + i, "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}}),
        )?;
        push(
            "a2c",
            json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": {"sessionUpdate": "tool_call_update", "toolCallId": call, "status": "completed"}}}),
        )?;
        push(
            "a2c",
            json!({"jsonrpc": "2.0", "id": prompt, "result": {"stopReason": "end_turn"}}),
        )?;
    }
    file.flush()?;
    Ok(count)
}

/// Runs `exe ARGS` and returns its wall time and peak RSS, and whether it succeeded.
fn timed(exe: &Path, args: &[&str]) -> anyhow::Result<(f64, f64, bool)> {
    let started = Instant::now();
    let child = Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot run acptap")?;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 on our own child, with pointers to live locals; the Child is not waited
    // for again (it is only dropped).
    let waited = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    anyhow::ensure!(waited > 0, "wait4 failed");
    let ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    Ok((
        started.elapsed().as_secs_f64(),
        usage.ru_maxrss as f64 / 1024.0,
        ok,
    ))
}

/// The read side of the product binary at `exe`.
pub fn run(exe: &Path, quick: bool) -> anyhow::Result<ReadReport> {
    let (sessions, turns) = if quick { (1, 500) } else { (3, 20_000) };
    let dir = std::env::temp_dir().join(format!("acptap-bench-read-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let db = dir.join("read.db");
    let mut lines = 0;
    for index in 0..sessions {
        let transcript = dir.join(format!("session{index}.jsonl"));
        lines += session(index, turns, &transcript)?;
        // Imported by a child, as a user would: this process stays small.
        let (_, _, ok) = timed(
            exe,
            &[
                "import",
                "--db",
                &db.to_string_lossy(),
                &transcript.to_string_lossy(),
            ],
        )?;
        anyhow::ensure!(ok, "cannot import the read-side database");
    }
    let db_arg = db.to_string_lossy().into_owned();
    let report_file = dir.join("report.html").to_string_lossy().into_owned();
    let policy = dir.join("policy.toml");
    std::fs::write(
        &policy,
        "version = 1\n[[rule]]\nid = \"edits\"\ndecision = \"allow\"\nkind = \"edit\"\npaths = [\"/p/**\"]\n",
    )?;
    let policy_arg = policy.to_string_lossy().into_owned();
    let commands: Vec<Vec<&str>> = vec![
        vec!["--version"],
        vec!["sessions"],
        vec!["stats"],
        vec!["tools"],
        vec!["show", "last"],
        vec!["report", "last", "-o", &report_file],
        vec!["policy", "replay", "--policy", &policy_arg, "all"],
    ];
    let mut timings = Vec::new();
    for command in &commands {
        let mut args = command.clone();
        if command[0] != "--version" {
            args.extend(["--db", &db_arg]);
        }
        let (seconds, peak_rss_mib, ok) = timed(exe, &args)?;
        timings.push(ReadTiming {
            command: command
                .iter()
                .take_while(|a| **a != "-o" && **a != "--policy")
                .copied()
                .collect::<Vec<_>>()
                .join(" "),
            seconds,
            peak_rss_mib,
            ok,
        });
    }
    let database_mib = std::fs::metadata(&db)
        .map(|m| m.len() as f64)
        .unwrap_or(0.0)
        / 1048576.0;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(ReadReport {
        sessions,
        turns_per_session: turns,
        lines,
        database_mib,
        timings,
    })
}

pub fn render(report: &ReadReport) -> String {
    let mut out = format!(
        "Read side: {} session(s) of {} tool turns, {} lines, database {:.0} MiB\n\n{:<24} {:>9} {:>9}  OK\n",
        report.sessions,
        report.turns_per_session,
        report.lines,
        report.database_mib,
        "COMMAND",
        "SECONDS",
        "RSS MiB"
    );
    for t in &report.timings {
        out.push_str(&format!(
            "{:<24} {:>9.2} {:>9.1}  {}\n",
            t.command,
            t.seconds,
            t.peak_rss_mib,
            if t.ok { "ok" } else { "FAILED" }
        ));
    }
    out
}
