//! `acptap run`: the proxy between a client (our stdin/stdout) and the agent (a child process).
//!
//! ```text
//! our stdin ──► pump(c2a) ──► writer ──► agent stdin
//! our stdout ◄── writer ◄── pump(a2c) ◄── agent stdout
//! our stderr ◄────────────── pump(stderr) ◄── agent stderr
//!                 every pump ──► recorder thread ──► SQLite
//! ```
//!
//! Threads, not an async runtime: the data path is three blocking copies and two writers, each a
//! plain loop over `read`/`write`, which is as fast as a pipe gets and easy to follow. The main
//! thread only supervises: it waits for events (a signal, the client's EOF, the agent's exit) and
//! applies the lifecycle rules of `lifecycle.rs`.

pub(crate) mod framing;
pub(crate) mod lifecycle;
pub(crate) mod policy_tap;
pub(crate) mod pump;
pub(crate) mod sink;

use std::fs::File;
use std::os::fd::AsFd;
use std::process::ExitStatus;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::{Duration, Instant};

use signal_hook::consts::{SIGHUP, SIGINT, SIGKILL, SIGTERM};

use crate::policy::Policy;
use crate::protocol::Direction;
use crate::record::{
    ConnectionEnd, ConnectionStart, Destination, Recorder, RecorderHandle, now_us,
};
use policy_tap::{ClientTap, PolicyTap, SharedState};
use pump::{Forward, Interceptor, pump};
use sink::{SinkSender, spawn_writer};

/// After the agent exits, how long its stdout and stderr may take to reach end of input (a child
/// of the agent may still hold them) before the rest of its process group is killed.
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(2);

/// At the end, how long the client may take to read what the agent last wrote.
const CLIENT_WRITE_PATIENCE: Duration = Duration::from_secs(10);

/// What can end a proxy run with an error (what it could not record is no error: it is said on
/// stderr and counted in the connection's row).
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// The agent's command could not be started.
    #[error("cannot start the agent `{command}`; check the command after `--`")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot install signal handlers")]
    Signals(#[source] std::io::Error),
    /// The agent's exit could not be waited for.
    #[error("cannot wait for the agent")]
    Wait(#[source] std::io::Error),
    #[error("the proxy thread panicked")]
    Panicked,
    /// A pipe, a duplicated descriptor or a thread could not be made.
    /// Said as the I/O error itself, which stays in the chain as its source (not `transparent`):
    /// the command edge finds a closed stdout (`BrokenPipe`) there, and says the text once.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// How `acptap run` is configured.
#[derive(Debug)]
pub(crate) struct RunOptions {
    pub agent: Vec<String>,
    pub destination: Destination,
    pub label: Option<String>,
    /// After the client closes our stdin, how long the agent may take to exit on its own before
    /// it gets SIGTERM.
    pub eof_grace: Duration,
    /// After SIGTERM (ours or forwarded), how long the agent may take before it gets SIGKILL.
    pub kill_grace: Duration,
    /// Answers the agent's permission requests where it decides (loaded before the agent starts).
    pub policy: Option<Policy>,
    /// Evaluate and record the policy's decisions, but let the user decide everything.
    pub shadow: bool,
    /// What is hidden from the recording (never from the peers).
    pub redactor: crate::record::redact::Redactor,
    /// Given the recording's connection id once its row is written (for live export).
    pub recorded_as: Option<std::sync::Arc<std::sync::OnceLock<i64>>>,
    /// The connection this run replays (`acptap replay --as client`), recorded with its row.
    pub replay_of: Option<i64>,
}

enum Event {
    Signal(i32),
    ClientEof,
    AgentExited(std::io::Result<ExitStatus>),
    AgentOutputClosed(Direction),
}

/// What the supervisor is waiting for next, if the agent does not exit first.
enum Escalation {
    None,
    /// The client is gone: SIGTERM at this instant.
    Terminate(Instant),
    /// SIGTERM was sent: SIGKILL at this instant.
    Kill(Instant),
}

/// The client's side of the proxy: where its lines come from and go to.
pub(crate) struct ClientStreams {
    pub input: Box<dyn std::io::Read + Send>,
    pub output: Box<dyn std::io::Write + Send>,
    /// Where the agent's stderr goes.
    pub errors: Box<dyn std::io::Write + Send>,
    /// Catch SIGINT, SIGTERM and SIGHUP and pass them to the agent: for `acptap run`, whose
    /// process belongs to the session; not for a proxy run inside another command.
    pub forward_signals: bool,
}

impl ClientStreams {
    /// Our own stdin, stdout and stderr (duplicated, so the pumps own plain files and Rust's
    /// buffered handles stay out of the data path), with signals passed on.
    pub(crate) fn stdio() -> std::io::Result<ClientStreams> {
        Ok(ClientStreams {
            input: Box::new(File::from(std::io::stdin().as_fd().try_clone_to_owned()?)),
            output: Box::new(File::from(std::io::stdout().as_fd().try_clone_to_owned()?)),
            errors: Box::new(File::from(std::io::stderr().as_fd().try_clone_to_owned()?)),
            forward_signals: true,
        })
    }
}

/// A proxy running on a thread of this process, with the client's ends of its pipes: what
/// `demo` and `replay --as client` drive, so that they never spawn `acptap run`, never look for
/// its recording, and never read a policy from the user's configuration.
pub(crate) struct InProcess {
    /// Lines written here reach the agent through the proxy; drop it to end the session.
    pub to_agent: std::io::PipeWriter,
    /// The agent's lines, after the proxy.
    pub from_agent: std::io::PipeReader,
    pub proxy: ProxyThread,
}

/// The thread a proxy runs on.
pub(crate) struct ProxyThread(std::thread::JoinHandle<Result<RunOutcome, ProxyError>>);

impl InProcess {
    /// Starts the agent behind a proxy on its own thread; the agent's stderr goes to ours.
    pub(crate) fn start(options: RunOptions) -> Result<InProcess, ProxyError> {
        let (input, to_agent) = std::io::pipe()?;
        let (from_agent, output) = std::io::pipe()?;
        let errors = File::from(std::io::stderr().as_fd().try_clone_to_owned()?);
        let client = ClientStreams {
            input: Box::new(input),
            output: Box::new(output),
            errors: Box::new(errors),
            forward_signals: false,
        };
        let proxy = std::thread::Builder::new()
            .name("acptap-proxy".into())
            .spawn(move || run(options, client))?;
        Ok(InProcess {
            to_agent,
            from_agent,
            proxy: ProxyThread(proxy),
        })
    }
}

impl ProxyThread {
    /// Waits for the proxy to end (after the client's end of the pipe to the agent is closed,
    /// or when the agent exits by itself).
    pub(crate) fn wait(self) -> Result<RunOutcome, ProxyError> {
        self.0.join().map_err(|_| ProxyError::Panicked)?
    }
}

/// How a proxy run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RunOutcome {
    /// The agent's exit code (128 + N for a signal), to exit with.
    pub exit_code: i32,
    /// The recording's connection id; `None` with `--no-record` or when recording failed.
    pub connection_id: Option<i64>,
}

/// Ends the agent's process group when dropped: on every way out of [`run`], early returns
/// included, nothing the agent started outlives the proxy in its group.
struct AgentGuard(u32);

impl Drop for AgentGuard {
    fn drop(&mut self) {
        lifecycle::signal_group(self.0, SIGKILL);
        lifecycle::end_orphans(Some(self.0));
    }
}

/// Runs the proxy between `client` and the agent until the agent is gone.
pub(crate) fn run(
    mut options: RunOptions,
    client: ClientStreams,
) -> Result<RunOutcome, ProxyError> {
    let mut child = lifecycle::spawn_agent(&options.agent).map_err(|source| ProxyError::Spawn {
        command: options.agent.join(" "),
        source,
    })?;
    let pid = child.id();
    let _guard = AgentGuard(pid);
    let recorder = start_recorder(&options, pid);
    let (events_tx, events) = channel();
    let signals = if client.forward_signals {
        Some(forward_signals(events_tx.clone())?)
    } else {
        None
    };
    let writers = connect(
        client,
        &mut child,
        options.policy.take(),
        options.shadow,
        &recorder.handle(),
        &events_tx,
    );
    std::thread::Builder::new()
        .name("acptap-wait".into())
        .spawn(move || {
            let _ = events_tx.send(Event::AgentExited(child.wait()));
        })?;

    let mut outputs = OpenOutputs {
        stdout: true,
        stderr: true,
    };
    let status = supervise(&events, pid, &options, &mut outputs);
    drain_agent_output(&events, pid, &mut outputs);
    if let Some(signals) = signals {
        signals.close();
    }
    // The stdout pump ended and dropped its sender: the writer finishes what is queued and ends.
    if !outputs.stdout {
        join_within(writers.client, CLIENT_WRITE_PATIENCE);
    }
    drop(writers.agent);

    let (exit_code, exit_signal) = exit_code_and_signal(&status);
    // What could not be recorded was said once, when it happened, and is counted in the
    // connection's row (`lost_messages`, `complete = 0`) when there is one.
    let connection_id = recorder.finish(ConnectionEnd {
        ended_at: now_us(),
        exit_code: Some(exit_code),
        exit_signal,
    });
    status.map_err(ProxyError::Wait)?;
    Ok(RunOutcome {
        exit_code,
        connection_id,
    })
}

/// Starts the recorder of the connection to the agent `pid` (it writes the connection's row).
fn start_recorder(options: &RunOptions, pid: u32) -> Recorder {
    Recorder::start(
        options.destination.clone(),
        options.redactor.clone(),
        ConnectionStart {
            label: options.label.clone(),
            command: options.agent.clone(),
            cwd: std::env::current_dir()
                .ok()
                .map(|d| d.to_string_lossy().into_owned()),
            pid: Some(pid),
            started_at: now_us(),
            replay_of: options.replay_of,
        },
        options.recorded_as.clone(),
    )
}

/// The writer threads of the two sinks, to wait for at the end.
struct Writers {
    /// Writes to the agent's stdin.
    agent: std::thread::JoinHandle<()>,
    /// Writes to the client (our stdout).
    client: std::thread::JoinHandle<()>,
}

/// Wires the client and the agent together: a writer per sink, and a pump per stream (the
/// client's lines, the agent's stdout and its stderr), each recording what it forwards and
/// telling `events` when its stream ends.
fn connect(
    client: ClientStreams,
    child: &mut std::process::Child,
    policy: Option<Policy>,
    shadow: bool,
    recorder: &RecorderHandle,
    events: &Sender<Event>,
) -> Writers {
    let ClientStreams {
        input: stdin,
        output: stdout,
        errors: stderr,
        ..
    } = client;
    let agent_stdin = child.stdin.take().expect("piped");
    let agent_stdout = child.stdout.take().expect("piped");
    let agent_stderr = child.stderr.take().expect("piped");

    let (to_agent, agent_writer) = spawn_writer("agent-stdin", agent_stdin);
    let (to_client, client_writer) = spawn_writer("stdout", stdout);
    let (client_tap, agent_tap) = policy_taps(policy, shadow, &to_agent);
    spawn_pump(
        stdin,
        Direction::ClientToAgent,
        Forward::Sink(to_agent),
        recorder,
        client_tap,
        events.clone(),
        Event::ClientEof,
    );
    spawn_pump(
        agent_stdout,
        Direction::AgentToClient,
        Forward::Sink(to_client),
        recorder,
        agent_tap,
        events.clone(),
        Event::AgentOutputClosed(Direction::AgentToClient),
    );
    spawn_pump(
        agent_stderr,
        Direction::Stderr,
        Forward::Direct(stderr),
        recorder,
        None,
        events.clone(),
        Event::AgentOutputClosed(Direction::Stderr),
    );
    Writers {
        agent: agent_writer,
        client: client_writer,
    }
}

/// The taps of the client's and the agent's pumps. With a policy, the agent's lines go through
/// the policy tap, whose answers take the priority lane of the agent's stdin; the client's
/// lines tell it each session's cwd. Without one, lines pass untapped.
fn policy_taps(
    policy: Option<Policy>,
    shadow: bool,
    to_agent: &SinkSender,
) -> (Option<Interceptor>, Option<Interceptor>) {
    let Some(policy) = policy else {
        return (None, None);
    };
    let state = std::sync::Arc::new(SharedState::default());
    let client_tap = Interceptor {
        tap: Box::new(ClientTap {
            state: state.clone(),
        }),
        answers: None,
    };
    let agent_tap = Interceptor {
        tap: Box::new(PolicyTap::new(policy, shadow, state)),
        answers: Some(to_agent.priority()),
    };
    (Some(client_tap), Some(agent_tap))
}

/// After the agent exited: waits for its stdout and stderr to reach end of input, killing
/// after [`DRAIN_AFTER_EXIT`] whatever it started that still holds them open.
fn drain_agent_output(events: &Receiver<Event>, pid: u32, outputs: &mut OpenOutputs) {
    let drain_deadline = Instant::now() + DRAIN_AFTER_EXIT;
    let mut killed_leftovers = false;
    while outputs.stdout || outputs.stderr {
        let left = drain_deadline.saturating_duration_since(Instant::now());
        match events.recv_timeout(left) {
            Ok(Event::AgentOutputClosed(Direction::AgentToClient)) => outputs.stdout = false,
            Ok(Event::AgentOutputClosed(_)) => outputs.stderr = false,
            Ok(_) => {}
            Err(_) if !killed_leftovers => {
                // Something the agent started still holds its stdout or stderr open.
                lifecycle::signal_group(pid, SIGKILL);
                killed_leftovers = true;
            }
            Err(_) => break,
        }
    }
}

/// The exit code to leave with (128 + N for a signal) and the signal that ended the agent;
/// 1 when its end could not be known.
fn exit_code_and_signal(status: &std::io::Result<ExitStatus>) -> (i32, Option<i32>) {
    match status {
        Ok(status) => {
            use std::os::unix::process::ExitStatusExt;
            (lifecycle::exit_code(*status), status.signal())
        }
        Err(_) => (1, None),
    }
}

/// Which of the agent's output streams have not reached end of input yet.
struct OpenOutputs {
    stdout: bool,
    stderr: bool,
}

/// Waits until the agent exits, passing signals on and ending an agent that outlives its client.
fn supervise(
    events: &Receiver<Event>,
    pid: u32,
    options: &RunOptions,
    outputs: &mut OpenOutputs,
) -> std::io::Result<ExitStatus> {
    let mut escalation = Escalation::None;
    loop {
        let event = match escalation {
            Escalation::None => events.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Escalation::Terminate(at) | Escalation::Kill(at) => {
                events.recv_timeout(at.saturating_duration_since(Instant::now()))
            }
        };
        match event {
            Ok(Event::AgentExited(status)) => return status,
            Ok(Event::Signal(signal)) => {
                // Passed on, every time: real clients send two, and the agent decides what a
                // second one means. If it does not exit, it is killed after the grace period.
                lifecycle::signal_group(pid, signal);
                if !matches!(escalation, Escalation::Kill(_)) {
                    escalation = Escalation::Kill(Instant::now() + options.kill_grace);
                }
            }
            Ok(Event::ClientEof) => {
                if matches!(escalation, Escalation::None) {
                    escalation = Escalation::Terminate(Instant::now() + options.eof_grace);
                }
            }
            Ok(Event::AgentOutputClosed(Direction::AgentToClient)) => outputs.stdout = false,
            Ok(Event::AgentOutputClosed(_)) => outputs.stderr = false,
            Err(RecvTimeoutError::Timeout) => match escalation {
                Escalation::Terminate(_) => {
                    lifecycle::signal_group(pid, SIGTERM);
                    escalation = Escalation::Kill(Instant::now() + options.kill_grace);
                }
                _ => {
                    lifecycle::signal_group(pid, SIGKILL);
                    escalation = Escalation::None;
                }
            },
            Err(RecvTimeoutError::Disconnected) => {
                return Err(std::io::Error::other("the agent's waiter thread is gone"));
            }
        }
    }
}

/// Waits for a thread, but not forever: a peer that stopped reading must not keep acptap alive.
fn join_within(thread: std::thread::JoinHandle<()>, patience: Duration) {
    let deadline = Instant::now() + patience;
    while !thread.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
    if thread.is_finished() {
        let _ = thread.join();
    }
}

fn spawn_pump(
    input: impl std::io::Read + Send + 'static,
    direction: Direction,
    forward: Forward,
    recorder: &RecorderHandle,
    interceptor: Option<Interceptor>,
    events: Sender<Event>,
    on_end: Event,
) {
    let recorder = recorder.clone();
    std::thread::Builder::new()
        .name(format!("acptap-pump-{}", direction.as_str()))
        .spawn(move || {
            if let Err(e) = pump(input, direction, forward, &recorder, interceptor) {
                tracing::debug!("{} stream ended with an error: {e}", direction.as_str());
            }
            let _ = events.send(on_end);
        })
        .expect("spawn a pump thread");
}

/// Catches SIGINT, SIGTERM and SIGHUP (so acptap outlives them until the agent is gone) and
/// turns them into events.
fn forward_signals(events: Sender<Event>) -> Result<signal_hook::iterator::Handle, ProxyError> {
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
        .map_err(ProxyError::Signals)?;
    let handle = signals.handle();
    std::thread::Builder::new()
        .name("acptap-signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                if events.send(Event::Signal(signal)).is_err() {
                    break;
                }
            }
        })?;
    Ok(handle)
}
