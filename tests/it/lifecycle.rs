//! The agent's lifecycle through the proxy: crashes, exit codes, signals, an agent that outlives
//! its client, and never an orphaned agent.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::time::Duration;

use crate::util::{Sandbox, alive, eventually, example_bin, finish, read_pid};

fn peer() -> std::path::PathBuf {
    example_bin("peer")
}

#[test]
fn agent_exit_code_is_passed_through() {
    let sb = Sandbox::new();
    let child = sb.proxy(
        &[],
        &[peer().as_os_str(), OsStr::new("exit"), OsStr::new("3")],
    );
    let output = finish(child, Duration::from_secs(30));
    assert_eq!(output.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&output.stdout).contains("_peer/bye"));
    assert_eq!(sb.count("SELECT exit_code FROM connections"), 3);
    assert_eq!(sb.count("SELECT complete FROM connections"), 1);
}

#[test]
fn agent_crash_mid_line_forwards_the_partial_line_and_reports_the_signal() {
    let sb = Sandbox::new();
    let child = sb.proxy(&[], &[peer().as_os_str(), OsStr::new("crash-mid-line")]);
    // stdin stays open: the crash, not the client, ends the session.
    let output = finish(child, Duration::from_secs(30));
    assert_eq!(output.status.code(), Some(128 + 9));
    assert_eq!(output.stdout, br#"{"jsonrpc":"2.0","method":"session/upd"#);
    assert_eq!(sb.count("SELECT exit_signal FROM connections"), 9);
    assert_eq!(
        sb.count("SELECT count(*) FROM messages WHERE direction = 'a2c' AND kind = 'invalid' AND size = 38"),
        1
    );
}

#[test]
fn agent_that_ignores_client_eof_is_terminated_after_the_grace_period() {
    let sb = Sandbox::new();
    let pidfile = sb.path("agent.pid");
    let mut child = sb.proxy(
        &["--grace", "300ms"],
        &[
            peer().as_os_str(),
            OsStr::new("linger"),
            pidfile.as_os_str(),
        ],
    );
    let agent = read_pid(&pidfile);
    drop(child.stdin.take()); // the client goes away
    let output = finish(child, Duration::from_secs(30));
    assert_eq!(output.status.code(), Some(128 + 15), "SIGTERM ended it");
    assert!(
        eventually(Duration::from_secs(5), || !alive(agent)),
        "agent {agent} left behind"
    );
}

#[test]
fn agent_deaf_to_sigterm_is_killed() {
    let sb = Sandbox::new();
    let pidfile = sb.path("agent.pid");
    let mut child = sb.proxy(
        &["--grace", "200ms"],
        &[
            peer().as_os_str(),
            OsStr::new("linger"),
            pidfile.as_os_str(),
            OsStr::new("--ignore-term"),
        ],
    );
    let agent = read_pid(&pidfile);
    drop(child.stdin.take());
    let output = finish(child, Duration::from_secs(30));
    assert_eq!(output.status.code(), Some(128 + 9));
    assert!(
        eventually(Duration::from_secs(5), || !alive(agent)),
        "agent {agent} left behind"
    );
}

#[test]
fn sigterm_twice_waits_for_the_agent_to_finish() {
    let sb = Sandbox::new();
    let pidfile = sb.path("agent.pid");
    let mut child = sb.proxy(
        &[],
        &[
            peer().as_os_str(),
            OsStr::new("slow-term"),
            pidfile.as_os_str(),
        ],
    );
    let agent = read_pid(&pidfile);
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut ready = String::new();
    stdout.read_line(&mut ready).unwrap();
    assert!(ready.contains("_peer/ready"), "{ready}");
    let proxy = child.id() as i32;
    // SAFETY: signalling our own child process.
    unsafe {
        libc::kill(proxy, libc::SIGTERM);
        libc::kill(proxy, libc::SIGTERM);
    }
    // The agent takes 300 ms to say goodbye; the proxy must still be there to forward it.
    let mut bye = String::new();
    stdout.read_line(&mut bye).unwrap();
    assert!(
        bye.contains("_peer/bye"),
        "the agent's last line was lost: {bye:?}"
    );
    let output = finish(child, Duration::from_secs(30));
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!alive(agent));
    assert_eq!(
        sb.count("SELECT count(*) FROM messages WHERE method = '_peer/bye'"),
        1
    );
}

#[test]
fn missing_agent_is_a_clear_error() {
    let sb = Sandbox::new();
    let child = sb.proxy(&[], &[OsStr::new("/nonexistent/agent-binary")]);
    let output = finish(child, Duration::from_secs(30));
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("cannot start the agent `/nonexistent/agent-binary`"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());
}

/// A descendant that left the agent's process group (`setsid`) does not outlive acptap: acptap is
/// the child subreaper, so the orphan becomes its child and is ended with the proxy.
#[test]
fn a_descendant_that_called_setsid_does_not_outlive_acptap() {
    let sb = Sandbox::new();
    let pidfile = sb.path("escaped.pid");
    let script = format!(
        "setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $! > {}; sleep 0.2; exit 0",
        pidfile.display()
    );
    let mut child = sb.proxy(
        &[],
        &[OsStr::new("bash"), OsStr::new("-c"), OsStr::new(&script)],
    );
    drop(child.stdin.take());
    let output = finish(child, Duration::from_secs(30));
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let pid = read_pid(&pidfile);
    assert!(
        eventually(Duration::from_secs(5), || !alive(pid)),
        "the setsid'd grandchild {pid} outlived acptap"
    );
}

/// `kill -9` of the proxy at random points of a fast stream, ten times: the database stays
/// sound (`integrity_check`), what was recorded is a gapless prefix of what the agent wrote, the
/// connection is shown as interrupted (not live), and no process of the agent's remains.
#[test]
fn kill_9_of_the_proxy_leaves_a_sound_prefix_shown_as_interrupted() {
    use std::io::{Read, Write};
    for run in 0..10u64 {
        let sb = Sandbox::new();
        let mut child = sb.proxy(
            &[],
            &[
                peer().as_os_str(),
                OsStr::new("stream"),
                OsStr::new("5000000"),
                OsStr::new("120"),
            ],
        );
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"s1\",\"prompt\":[]}}\n")
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let drain = std::thread::spawn(move || {
            let mut sink = [0u8; 65536];
            while stdout.read(&mut sink).is_ok_and(|n| n > 0) {}
        });
        // Once something is recorded (the recorder yields the CPU to forwarding, so on a busy
        // machine its first commit can take a while), at a different point of the stream each run.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let recorded = || {
            if !sb.db().exists() {
                return 0;
            }
            sb.conn()
                .query_row("SELECT count(*) FROM messages", [], |r| r.get::<_, i64>(0))
                .unwrap_or(0)
        };
        while recorded() == 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "run {run}: nothing recorded in 30 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(300 + (run * 7919) % 700));
        child.kill().unwrap(); // SIGKILL
        let _ = child.wait();
        drop(stdin);
        drain.join().unwrap();

        let conn = sb.conn();
        let check: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok", "run {run}");
        let (count, max_seq): (i64, i64) = conn
            .query_row(
                "SELECT count(*), max(seq) FROM messages WHERE connection_id = 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(
            count,
            max_seq + 1,
            "run {run}: the recorded seqs have a gap"
        );
        let mut stmt = conn
            .prepare("SELECT raw FROM messages WHERE connection_id = 1 AND direction = 'a2c' ORDER BY seq")
            .unwrap();
        let ticks: Vec<i64> = stmt
            .query_map([], |r| r.get::<_, Vec<u8>>(0))
            .unwrap()
            .map(|raw| {
                let v: serde_json::Value = serde_json::from_slice(&raw.unwrap()).unwrap();
                v["params"]["i"].as_i64().unwrap()
            })
            .collect();
        assert!(!ticks.is_empty(), "run {run}: nothing recorded");
        assert!(
            ticks.iter().enumerate().all(|(k, i)| *i == k as i64),
            "run {run}: the agent's lines are not a gapless prefix"
        );
        let listed = String::from_utf8(sb.acptap(&["sessions"]).stdout).unwrap();
        assert!(listed.contains("[interrupted]"), "run {run}: {listed}");
        let agent: i64 = sb.count("SELECT pid FROM connections WHERE id = 1");
        assert!(
            eventually(Duration::from_secs(5), || !alive(agent as i32)),
            "run {run}: the agent outlived the proxy"
        );
    }
}
