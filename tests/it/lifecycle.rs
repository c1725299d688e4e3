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
