//! The recorder: one thread that owns the SQLite connection.
//!
//! The forwarding threads hand it each line through [`RecorderHandle::record`] (a lossless,
//! byte-bounded queue, see `queue.rs`); the thread parses the line, runs it through the
//! [`SessionState`], and stores the line and the facts in batched transactions: everything that is
//! waiting is written in one transaction (at most [`MAX_BATCH`] lines), so a quiet session commits
//! each line at once and a busy one amortises the commit.
//!
//! # Invariant: recording never stops the session
//!
//! If the database cannot be opened, the recorder says so once on stderr and keeps draining the
//! queue, counting what it could not record. If a write fails because another process holds the
//! lock, the batch is kept and retried; any other failure drops the batch, counts its lines, and
//! says so once. The connection's row then gets `complete = 0` and `lost_messages`.

mod queue;
pub(crate) mod redact;
pub(crate) mod search_index;
pub(crate) mod secrets;
pub mod store;
pub mod transcript;

use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;

use crate::protocol::message::parse_line_for_facts;
use crate::protocol::{Direction, MessageKind, SessionState};
use queue::{ByteBoundedQueue, ByteSize, RECORD_BUFFER_BYTES};
use store::LineToWrite;
pub use store::{ConnectionEnd, ConnectionStart, Store, StoreError};

/// Lines written in one transaction at most: bounds the time one commit holds the write lock
/// that other acptap processes share.
pub const MAX_BATCH: usize = 1000;

/// Line bytes written in one transaction at most: what the recorder holds beyond its queue.
const MAX_BATCH_BYTES: usize = 4 * 1024 * 1024;

/// Once a line is waiting, the recorder waits this much longer for more before it writes, unless
/// a whole batch is there first. Under interactive load (a turn of a few lines, then a wait for
/// the model or the user) this makes one commit of many turns instead of one per turn: a commit
/// costs the same few page writes however few lines it holds. It is also the most a reader of the
/// database (`acptap tail`) waits for a line beyond what SQLite itself takes.
const COMMIT_DELAY: Duration = Duration::from_millis(10);

/// How much the recorder and checkpointer threads yield to the forwarding threads when they
/// share a CPU: a `nice` increment, as `nice(1)` takes it. Recording is never on the data path,
/// so it runs when forwarding has nothing to do; if it falls [`RECORD_BUFFER_BYTES`] behind,
/// forwarding waits for it, so nothing is lost.
const RECORDER_NICENESS: libc::c_int = 10;

/// Lowers this thread's scheduling priority by [`RECORDER_NICENESS`] (Linux takes a thread id for
/// `PRIO_PROCESS`). Failing that changes nothing but latency, so it is not an error.
pub(crate) fn yield_to_forwarding() {
    // SAFETY: plain system calls on this thread's own id.
    unsafe {
        let thread = libc::gettid();
        let current = libc::getpriority(libc::PRIO_PROCESS, thread as libc::id_t);
        libc::setpriority(
            libc::PRIO_PROCESS,
            thread as libc::id_t,
            current.saturating_add(RECORDER_NICENESS).min(19),
        );
    }
}

/// A batch that keeps failing because the database is locked is retried this often.
const RETRY_INTERVAL: Duration = Duration::from_millis(100);

/// Lines kept for retry while the database is locked; beyond this they are counted as lost, so a
/// database locked for good cannot grow acptap's memory without bound.
const MAX_PENDING_LINES: usize = 200_000;

/// How long the final flush keeps retrying a locked database at exit.
const FINAL_FLUSH_PATIENCE: Duration = Duration::from_secs(10);

/// Microseconds since the Unix epoch.
pub(crate) fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

/// What acptap itself did with a line, beyond forwarding it.
#[derive(Debug, Clone, Default)]
pub struct Annotation {
    /// acptap wrote this line itself (a policy answer); no peer sent it.
    pub written_by_acptap: bool,
    /// acptap did not forward this line (a permission request the policy answered).
    pub withheld: bool,
    /// What the policy said about this permission request, or about the answer it wrote.
    pub policy: Option<Arc<PolicyNote>>,
}

/// A policy's verdict on one permission request, as recorded: plain values filled by the tap
/// (the recorder knows nothing of policies).
#[derive(Debug, Clone)]
pub struct PolicyNote {
    /// `allow`, `deny` or `ask`.
    pub decision: &'static str,
    /// The rule or built-in guard that decided; `None` for the default.
    pub rule: Option<String>,
    pub reason: String,
    /// The option acptap answers with (allow and deny only).
    pub option_id: Option<String>,
    pub policy_hash: String,
    /// `--shadow`: evaluated and recorded, but the request went to the user anyway.
    pub shadow: bool,
    /// What the policy decided on, as JSON (`policy::DecisionInput`).
    pub input: String,
}

/// A line as read from one of the three streams (or written by acptap).
#[derive(Debug)]
pub(crate) struct Line {
    pub seq: i64,
    pub ts: i64,
    pub direction: Direction,
    /// The exact bytes, line ending included (only the head of a truncated line).
    pub raw: Bytes,
    /// The line's length on the wire: more than `raw.len()` when it was truncated.
    pub size: i64,
    pub truncated: bool,
    pub annotation: Annotation,
}

enum Item {
    Line(Line),
    End(ConnectionEnd),
}

impl ByteSize for Item {
    fn size(&self) -> usize {
        match self {
            Item::Line(line) => line.raw.len(),
            Item::End(_) => 0,
        }
    }
}

/// What the forwarding threads hold: cheap to clone, and `record` is the only thing they call.
#[derive(Clone)]
pub(crate) struct RecorderHandle {
    queue: Arc<ByteBoundedQueue<Item>>,
    /// False with `--no-record`: lines are not even queued.
    enabled: bool,
}

impl RecorderHandle {
    /// Hands a line to the recorder, numbering it in the order lines reach the recorder. Call it
    /// before forwarding the line, so a response can never be recorded before its request.
    /// Waits only if the recorder is [`RECORD_BUFFER_BYTES`] behind.
    pub(crate) fn record(
        &self,
        direction: Direction,
        ts: i64,
        raw: Bytes,
        size: i64,
        annotation: Annotation,
    ) {
        if !self.enabled {
            return;
        }
        let raw = compact(&raw);
        self.queue.push_numbered(raw.len(), |number| {
            Item::Line(Line {
                seq: number as i64,
                ts,
                direction,
                truncated: size > raw.len() as i64,
                raw,
                size,
                annotation,
            })
        });
    }
}

impl RecorderHandle {
    /// Hands over complete lines at once (one queue operation), each recorded whole with its
    /// annotation.
    pub(crate) fn record_lines(
        &self,
        direction: Direction,
        ts: i64,
        lines: &[(Bytes, Annotation)],
    ) {
        if !self.enabled || lines.is_empty() {
            return;
        }
        let size = lines.iter().map(|(line, _)| line.len()).sum();
        let mut copy = bytes::BytesMut::new();
        let compacted = (size < COMPACT_BELOW).then(|| {
            copy.reserve(size);
            for (line, _) in lines {
                copy.extend_from_slice(line);
            }
            copy.freeze()
        });
        let mut offset = 0;
        self.queue
            .push_numbered_batch(size, lines.len(), |number, index| {
                let (raw, annotation) = &lines[index];
                let raw = match &compacted {
                    Some(all) => all.slice(offset..offset + raw.len()),
                    None => compact(raw),
                };
                offset += raw.len();
                Item::Line(Line {
                    seq: number as i64,
                    ts,
                    direction,
                    size: raw.len() as i64,
                    truncated: false,
                    raw,
                    annotation: annotation.clone(),
                })
            });
    }
}

/// Lines shorter than this are copied before they are queued. A line read from a pipe shares the
/// framer's read buffer (64 KiB, or as large as the longest line read so far); queued as it is,
/// a 60-byte line would keep that whole buffer alive while it waits, and the queue's byte budget
/// would bound nothing (seen: 20,000 queued round trips held 900 MiB). A longer line is most of
/// its buffer, so it is shared.
const COMPACT_BELOW: usize = 1024 * 1024;

/// `line`, in an allocation of its own unless it is long (see [`COMPACT_BELOW`]).
fn compact(line: &Bytes) -> Bytes {
    if line.len() < COMPACT_BELOW {
        Bytes::copy_from_slice(line)
    } else {
        line.clone()
    }
}

pub(crate) struct Recorder {
    handle: RecorderHandle,
    /// Returns the connection's id when it was recorded.
    thread: JoinHandle<Option<i64>>,
}

/// Where to record, or nowhere (`--no-record`).
#[derive(Debug, Clone)]
pub(crate) enum Destination {
    Database(PathBuf),
    Nowhere,
}

impl Recorder {
    /// Starts the recorder thread. Opening the database happens on that thread, so a slow or
    /// locked database never delays the start of forwarding.
    /// `recorded_as` is given the connection's id once its row is written.
    pub(crate) fn start(
        destination: Destination,
        redactor: redact::Redactor,
        start: ConnectionStart,
        recorded_as: Option<Arc<std::sync::OnceLock<i64>>>,
    ) -> Recorder {
        let queue = Arc::new(ByteBoundedQueue::new(RECORD_BUFFER_BYTES));
        let enabled = matches!(destination, Destination::Database(_));
        let thread = {
            let queue = queue.clone();
            std::thread::Builder::new()
                .name("acptap-recorder".into())
                .spawn(move || {
                    yield_to_forwarding();
                    run(destination, redactor, start, &queue, recorded_as)
                })
                .expect("spawn the recorder thread")
        };
        Recorder {
            handle: RecorderHandle { queue, enabled },
            thread,
        }
    }

    pub(crate) fn handle(&self) -> RecorderHandle {
        self.handle.clone()
    }

    /// Records how the connection ended, writes everything still queued, and stops. Returns
    /// the connection's id in the database (`None` when nothing could be recorded).
    pub(crate) fn finish(self, end: ConnectionEnd) -> Option<i64> {
        self.handle.queue.push(Item::End(end));
        self.handle.queue.close();
        self.thread.join().ok().flatten()
    }
}

struct Writer {
    store: Option<(Store, i64)>,
    pending: Vec<LineToWrite>,
    /// Lines that could not be recorded.
    lost: i64,
    warned: bool,
}

impl Writer {
    fn warn_once(&mut self, what: &str) {
        if !std::mem::replace(&mut self.warned, true) {
            eprintln!("acptap: {what}; forwarding continues, the recording will be incomplete");
        }
    }

    fn lose_pending(&mut self) {
        self.lost += self.pending.len() as i64;
        self.pending.clear();
    }

    /// Tries to write what is pending. Returns whether something is still pending (to retry).
    fn flush(&mut self) -> bool {
        if self.pending.is_empty() {
            return false;
        }
        let Some((store, connection_id)) = self.store.as_mut() else {
            self.lose_pending();
            return false;
        };
        match store.write_batch(*connection_id, &self.pending) {
            Ok(()) => {
                self.pending.clear();
                false
            }
            Err(e) if e.is_busy() && self.pending.len() < MAX_PENDING_LINES => true,
            Err(e) => {
                self.warn_once(&format!("cannot write to the database: {e}"));
                self.lose_pending();
                false
            }
        }
    }
}

fn run(
    destination: Destination,
    redactor: redact::Redactor,
    start: ConnectionStart,
    queue: &ByteBoundedQueue<Item>,
    recorded_as: Option<Arc<std::sync::OnceLock<i64>>>,
) -> Option<i64> {
    let mut writer = Writer {
        store: None,
        pending: Vec::new(),
        lost: 0,
        warned: false,
    };
    let mut batch = Vec::with_capacity(MAX_BATCH);
    let mut end = None;
    // Lines that arrived while the database was locked, to record once it is not.
    let mut held: Vec<Line> = Vec::new();
    if let Destination::Database(path) = &destination {
        writer.store = open_when_unlocked(path, &start, queue, &mut writer, &mut held, &mut end);
    }
    if let (Some((_, id)), Some(cell)) = (&writer.store, recorded_as) {
        let _ = cell.set(*id);
    }
    // Checkpoints (copying the WAL into the database, a third of SQLite's work) run on a thread
    // and connection of their own, so the recorder only appends.
    let checkpointer = match (&destination, &writer.store) {
        (Destination::Database(path), Some((store, _))) if store.checkpoint_rarely().is_ok() => {
            Some(Checkpointer::start(path.clone()))
        }
        _ => None,
    };
    let recording = writer.store.is_some();
    let mut observer = SessionState::new();
    if recording {
        for line in held.drain(..) {
            writer.pending.push(ingest(&mut observer, &redactor, line));
        }
    } else {
        writer.lost += held.len() as i64;
    }
    let mut retrying = false;
    loop {
        let timeout = retrying.then_some(RETRY_INTERVAL);
        let linger = if retrying {
            Duration::ZERO
        } else {
            COMMIT_DELAY
        };
        if !queue.pop_batch_lingering(MAX_BATCH, MAX_BATCH_BYTES, &mut batch, timeout, linger) {
            break;
        }
        for item in batch.drain(..) {
            match item {
                Item::Line(line) if recording => {
                    writer.pending.push(ingest(&mut observer, &redactor, line))
                }
                // (With --no-record no line is queued at all: see RecorderHandle::enabled.)
                Item::Line(_) => writer.lost += 1,
                Item::End(e) => end = Some(e),
            }
        }
        retrying = writer.flush();
        if retrying && timeout.is_some() {
            std::thread::sleep(RETRY_INTERVAL / 2);
        }
    }
    let deadline = std::time::Instant::now() + FINAL_FLUSH_PATIENCE;
    while writer.flush() {
        if std::time::Instant::now() > deadline {
            writer.warn_once("the database stayed locked at exit");
            writer.lose_pending();
            break;
        }
        std::thread::sleep(RETRY_INTERVAL);
    }
    if let Some(checkpointer) = checkpointer {
        checkpointer.stop();
    }
    if let (Some((store, id)), Some(end)) = (writer.store.as_mut(), end)
        && let Err(e) = store.end_connection(*id, &end, writer.lost)
    {
        eprintln!("acptap: cannot mark the end of connection {id} in the database: {e}");
    }
    writer.store.map(|(_, id)| id)
}

/// Opens the database and starts the connection's row. While another process holds the lock,
/// forwarding goes on: the lines that arrive are taken off the queue (so it never fills) and held,
/// up to [`RECORD_BUFFER_BYTES`] (past that they are counted as lost), and the open is retried
/// until it works or the connection ends (then for [`FINAL_FLUSH_PATIENCE`] more).
fn open_when_unlocked(
    path: &std::path::Path,
    start: &ConnectionStart,
    queue: &ByteBoundedQueue<Item>,
    writer: &mut Writer,
    held: &mut Vec<Line>,
    end: &mut Option<ConnectionEnd>,
) -> Option<(Store, i64)> {
    let mut held_bytes = 0;
    let mut batch = Vec::with_capacity(MAX_BATCH);
    let mut said = false;
    let mut first_busy: Option<std::time::Instant> = None;
    let mut ended_at: Option<std::time::Instant> = None;
    loop {
        let opened = Store::open_waiting(path, RETRY_INTERVAL).and_then(|mut s| {
            let id = s.begin_connection(start)?;
            s.wait_as_usual()?;
            Ok((s, id))
        });
        match opened {
            Ok(store) => {
                if said {
                    eprintln!(
                        "acptap: {} is free again; the whole connection is recorded",
                        path.display()
                    );
                }
                return Some(store);
            }
            Err(e) if e.is_busy() => {
                // Another recorder's commit holds the lock for milliseconds: say nothing for that.
                let waiting = *first_busy.get_or_insert_with(std::time::Instant::now);
                if waiting.elapsed() > Duration::from_secs(1) && !std::mem::replace(&mut said, true)
                {
                    eprintln!(
                        "acptap: {} is locked by another process; forwarding continues and recording starts when the lock is released",
                        path.display()
                    );
                }
            }
            Err(e) => {
                writer.warn_once(&format!(
                    "recording disabled: {e} (choose a writable path with --db or ACPTAP_DB)"
                ));
                return None;
            }
        }
        if ended_at.is_some_and(|t| t.elapsed() > FINAL_FLUSH_PATIENCE) {
            writer.warn_once(&format!(
                "recording disabled: {} stayed locked until the connection ended",
                path.display()
            ));
            return None;
        }
        if !queue.pop_batch(MAX_BATCH, MAX_BATCH_BYTES, &mut batch, Some(RETRY_INTERVAL)) {
            ended_at.get_or_insert_with(std::time::Instant::now);
            std::thread::sleep(RETRY_INTERVAL);
        }
        for item in batch.drain(..) {
            match item {
                Item::Line(line) if held_bytes + line.raw.len() <= RECORD_BUFFER_BYTES => {
                    held_bytes += line.raw.len();
                    held.push(line);
                }
                Item::Line(_) => writer.lost += 1,
                Item::End(e) => *end = Some(e),
            }
        }
    }
}

/// How often the checkpointer copies the write-ahead log into the database.
const CHECKPOINT_INTERVAL: Duration = Duration::from_millis(100);

/// A thread with its own connection that checkpoints the database while the recorder writes.
struct Checkpointer {
    stop: Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>,
    thread: JoinHandle<()>,
}

impl Checkpointer {
    fn start(path: PathBuf) -> Checkpointer {
        let stop = Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("acptap-checkpoint".into())
            .spawn(move || {
                yield_to_forwarding();
                let Ok(store) = Store::open(&path) else {
                    return;
                };
                let (lock, wake) = &*flag;
                let mut stopped = lock.lock().unwrap_or_else(|e| e.into_inner());
                while !*stopped {
                    stopped = wake
                        .wait_timeout(stopped, CHECKPOINT_INTERVAL)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                    // A checkpoint that cannot run now (a reader, another process) runs next time.
                    let _ = store.checkpoint();
                }
            })
            .expect("spawn the checkpointer thread");
        Checkpointer { stop, thread }
    }

    fn stop(self) {
        *self.stop.0.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.stop.1.notify_all();
        let _ = self.thread.join();
    }
}

/// The one way a line enters the database, live or imported: its secrets are redacted before
/// anything is parsed or stored, then it is parsed and observed.
pub(crate) fn ingest(
    observer: &mut SessionState,
    redactor: &redact::Redactor,
    mut line: Line,
) -> LineToWrite {
    if let Some(redacted) = redactor.redact(&line.raw) {
        line.raw = Bytes::from(redacted);
    }
    observe(observer, line)
}

/// Parses one line and runs it through the session state.
fn observe(observer: &mut SessionState, line: Line) -> LineToWrite {
    let (kind, msg) = match line.direction {
        Direction::Stderr => (MessageKind::Stderr, None),
        _ if line.truncated => (MessageKind::Invalid, None),
        _ => {
            let msg = parse_line_for_facts(&line.raw);
            (msg.kind, Some(msg))
        }
    };
    let observed = msg
        .as_ref()
        .map(|m| observer.observe(line.direction, line.seq, m))
        .unwrap_or_default();
    LineToWrite {
        seq: line.seq,
        ts: line.ts,
        direction: line.direction.as_str(),
        kind: kind.as_str(),
        rpc_id: msg.as_ref().and_then(|m| m.id.clone()),
        method: msg
            .as_ref()
            .and_then(|m| m.method.clone())
            .or(observed.method),
        session_id: msg
            .as_ref()
            .and_then(|m| m.session_id().map(str::to_owned))
            .or(observed.session_id),
        tool_call_id: msg
            .as_ref()
            .and_then(|m| m.tool_call_id().map(str::to_owned)),
        reply_to_seq: observed.reply_to_seq,
        raw: line.raw,
        size: line.size,
        truncated: line.truncated,
        facts: observed.facts,
        annotation: line.annotation,
    }
}
