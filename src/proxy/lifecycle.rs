//! The agent process: starting it, passing signals on, ending it, and its exit status.
//!
//! # Invariant: no orphaned agent
//!
//! The agent runs in its own process group, so it and anything it starts can be signalled as one.
//! On Linux it also gets `PR_SET_PDEATHSIG`, so even a `kill -9` of acptap takes it down. Every
//! path out of the proxy ends with the group gone: the agent exited, or it was sent SIGTERM and
//! then SIGKILL after a grace period.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};

/// Starts the agent with piped stdio in a process group of its own.
pub fn spawn_agent(argv: &[String]) -> std::io::Result<Child> {
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
pub fn signal_group(pid: u32, signal: i32) {
    // SAFETY: kill has no memory-safety preconditions. The group id is the agent's pid, which the
    // kernel does not reuse while any member of the group is alive.
    unsafe {
        libc::kill(-(pid as libc::pid_t), signal);
    }
}

/// The exit code acptap passes on: the agent's own, or 128 + N when signal N ended it (as a shell
/// reports it).
pub fn exit_code(status: ExitStatus) -> i32 {
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => 128 + signal,
        (None, None) => 1,
    }
}
