//! The agent process: starting it, passing signals on, ending it, and its exit status.
//!
//! # Invariant: no orphaned agent
//!
//! The agent runs in its own process group, so it and anything it starts can be signalled as one.
//! On Linux it also gets `PR_SET_PDEATHSIG`, so even a `kill -9` of acptap takes it down. Every
//! path out of the proxy ends with the group gone: the agent exited, or it was sent SIGTERM and
//! then SIGKILL after a grace period.
//!
//! A descendant that left the group (`setsid`, a daemon) is caught too: acptap makes itself the
//! *child subreaper* (`PR_SET_CHILD_SUBREAPER`), so such a process, once its parent is gone, becomes
//! acptap's child instead of init's, and [`end_orphans`] ends every one of them when the proxy is
//! done.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};

/// Starts the agent with piped stdio in a process group of its own.
pub(crate) fn spawn_agent(argv: &[String]) -> std::io::Result<Child> {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with these arguments only sets a flag of this process.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1);
    }
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "no agent command"))?;
    let mut command = Command::new(program);
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    #[cfg(target_os = "linux")]
    // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command.spawn()
}

/// Sends `signal` to the agent's whole process group. Harmless if the group is already gone.
pub(crate) fn signal_group(pid: u32, signal: i32) {
    // SAFETY: kill has no memory-safety preconditions. The group id is the agent's pid, which the
    // kernel does not reuse while any member of the group is alive.
    unsafe {
        libc::kill(-(pid as libc::pid_t), signal);
    }
}

/// The exit code acptap passes on: the agent's own, or 128 + N when signal N ended it (as a shell
/// reports it).
pub(crate) fn exit_code(status: ExitStatus) -> i32 {
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => 128 + signal,
        (None, None) => 1,
    }
}

/// Ends every process that became this process's child after its parent died (see the module
/// docs): SIGKILL, then reaped, until none is left. `keep` is a child that must not be touched
/// (the agent itself, while another thread still waits for it). Linux only; elsewhere a no-op.
pub(crate) fn end_orphans(keep: Option<u32>) {
    #[cfg(target_os = "linux")]
    for _ in 0..64 {
        let me = std::process::id();
        let children: Vec<u32> = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
            .filter(|&pid| Some(pid) != keep && parent_of(pid) == Some(me))
            .filter(|&pid| !is_thread_of_ours(pid))
            .collect();
        if children.is_empty() {
            return;
        }
        for pid in children {
            // SAFETY: kill and waitpid on a child of ours; no memory is shared.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGKILL);
                libc::waitpid(pid as libc::pid_t, std::ptr::null_mut(), 0);
            }
        }
    }
}

/// The parent pid of `pid`, from `/proc/PID/stat` (the field after the parenthesised name).
#[cfg(target_os = "linux")]
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(1)?.parse().ok()
}

/// Whether `pid` is one of this process's own threads (they are listed in /proc too, with this
/// process as their parent's parent only by accident of numbering: skip them).
#[cfg(target_os = "linux")]
fn is_thread_of_ours(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/self/task/{pid}")).exists()
}
