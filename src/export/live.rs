//! `acptap run --otlp`: the session's spans sent while it runs, from the recording.
//!
//! ```text
//! recorder ──► SQLite ──► span builder (polls, read-only) ──► bounded queue ──► OTLP sender
//! ```
//!
//! Nothing here is on the data path: the builder reads what the recorder committed, through a
//! read-only connection of its own, on a thread at the recorder's low priority; the sender is
//! another thread. The builder waits for room in the bounded queue while the collector keeps
//! up; once a request fails (or, at the end, once the patience is spent) what does not fit is
//! counted as lost instead. The spans are the ones `acptap export --format otlp` builds (the same
//! ids), so whatever was lost can be sent from the recording later.
//!
//! A span is sent once the recording holds its end (a turn answered, a tool call completed, a
//! permission decided); what is still open when the connection ends is sent then, ended at the
//! last thing recorded.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::otlp::{Endpoint, OtlpError, SPANS_PER_REQUEST, Sender};
use super::spans::{Span, SpanOptions, session_spans};
use crate::query::Reader;
use crate::query::Result;
use crate::query::{self, SessionRef, Window};

/// The builder looks at the recording this often at most...
const MIN_INTERVAL: Duration = Duration::from_secs(1);
/// ...and waits this many times as long as its last look took, so that a huge session costs
/// a bounded share of a core.
const INTERVAL_PER_BUILD_TIME: u32 = 5;

/// A look at the recording reads what ended since the previous look's newest line, less this:
/// a line is timed when it is read and committed a little later, so one timed just before the
/// previous look may have been committed just after it. (A span seen twice is sent once.)
const LOOK_BACK_US: i64 = 5_000_000;
/// The last look (when the recorder has written everything) reads this much further back.
const LAST_LOOK_BACK_US: i64 = 60_000_000;

/// Requests waiting for the sender, [`SPANS_PER_REQUEST`] spans each at most: what does not fit
/// while the collector is slow or down is lost (and stays in the recording).
const QUEUED_REQUESTS: usize = 8;

/// How often a builder waiting for room in the queue looks again.
const QUEUE_POLL: Duration = Duration::from_millis(5);

/// The deadline of one live request (its answer, headers and body, complete within it), and
/// how long a request to a busy backend may take in all, its attempts and the waits between
/// them. (Once the agent has exited, [`LiveExport::finish`] bounds the wait for the rest.)
const REQUEST_DEADLINE: Duration = Duration::from_secs(5);
const BUSY_PATIENCE: Duration = Duration::from_secs(2);

/// What the live export did, for the note at the end of the run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LiveStats {
    /// Spans built from the recording and handed to the sender.
    pub spans: usize,
    pub sent: usize,
    /// Spans that could not be sent (counted at the end): the queue was full, the collector
    /// refused or did not answer, or the run ended first.
    pub lost: usize,
    /// Why the last request failed (the endpoint's credentials masked), or why spans were
    /// dropped before it.
    pub last_error: Option<String>,
    /// The sessions whose spans were built.
    pub sessions: Vec<String>,
    /// The recording's connection id, when there was one.
    pub connection_id: Option<i64>,
}

#[derive(Default)]
struct Shared {
    stop: Mutex<bool>,
    wake: Condvar,
    stats: Mutex<LiveStats>,
    /// The sender's last request failed: the builder stops waiting for room in the queue.
    failing: AtomicBool,
    /// Set by [`LiveExport::finish`]: past it, nothing waits for the collector.
    give_up_at: OnceLock<Instant>,
}

impl Shared {
    /// Whether the builder may wait for the sender to make room.
    fn may_wait(&self) -> bool {
        !self.failing.load(Ordering::Relaxed)
            && self.give_up_at.get().is_none_or(|at| Instant::now() < *at)
    }
}

impl Shared {
    fn update(&self, change: impl FnOnce(&mut LiveStats)) {
        change(&mut self.stats.lock().unwrap_or_else(|e| e.into_inner()));
    }
}

/// A running live export; [`LiveExport::finish`] ends it.
pub(crate) struct LiveExport {
    shared: Arc<Shared>,
    builder: JoinHandle<()>,
    sender_done: Receiver<()>,
}

impl LiveExport {
    /// Starts the builder and sender threads for the connection that `recorded_as` will name,
    /// recorded into `db`. Fails only when the exporter cannot be set up (a malformed URL), so
    /// that it is said before the agent starts.
    pub(crate) fn start(
        db: PathBuf,
        recorded_as: Arc<OnceLock<i64>>,
        endpoint: &Endpoint,
        options: SpanOptions,
    ) -> Result<LiveExport, OtlpError> {
        let mut sender = Sender::new(endpoint, REQUEST_DEADLINE)?;
        let shared = Arc::new(Shared::default());
        let (requests, queued) = sync_channel::<Vec<Span>>(QUEUED_REQUESTS);
        let (done, sender_done) = sync_channel(1);
        {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("acptap-otlp-send".into())
                .spawn(move || {
                    crate::record::yield_to_forwarding();
                    let mut warned = false;
                    for request in queued {
                        match sender.send_request(&request, BUSY_PATIENCE) {
                            Ok(()) => {
                                shared.failing.store(false, Ordering::Relaxed);
                                shared.update(|s| s.sent += request.len());
                            }
                            Err(failure) => {
                                shared.failing.store(true, Ordering::Relaxed);
                                // Said once here; the note at the end says it again only as
                                // the reason spans were lost.
                                if !std::mem::replace(&mut warned, true) {
                                    eprintln!(
                                        "acptap: cannot send spans to {}: {} ({}); forwarding \
                                         and recording go on, and the spans stay in the \
                                         recording",
                                        sender.url(),
                                        failure.what,
                                        failure.fix
                                    );
                                }
                                shared.update(|s| s.last_error = Some(failure.what));
                            }
                        }
                    }
                    let _ = done.send(());
                })
                .expect("spawn the OTLP sender thread");
        }
        let builder = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("acptap-otlp-build".into())
                .spawn(move || {
                    crate::record::yield_to_forwarding();
                    build_until_stopped(&db, &recorded_as, options, &shared, requests);
                })
                .expect("spawn the OTLP builder thread")
        };
        Ok(LiveExport {
            shared,
            builder,
            sender_done,
        })
    }

    /// Sends what is left (every span, finished or not: the connection has ended), waiting at
    /// most `patience` for the collector, and says what happened. Spans still unsent then are
    /// counted as lost.
    pub(crate) fn finish(self, patience: Duration) -> LiveStats {
        let give_up_at = Instant::now() + patience;
        let _ = self.shared.give_up_at.set(give_up_at);
        *self.shared.stop.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.shared.wake.notify_all();
        // The builder's last look queues what is left (it waits for room only until
        // `give_up_at`); then the sender has until `give_up_at` to send it.
        let _ = self.builder.join();
        let _ = self
            .sender_done
            .recv_timeout(give_up_at.saturating_duration_since(Instant::now()));
        let mut stats = self
            .shared
            .stats
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        // A request still in flight (or queued) when patience ran out is not known to be sent.
        stats.lost = stats.spans - stats.sent;
        stats
    }
}

/// Looks at the recording every [`MIN_INTERVAL`] or more, and queues each finished span once;
/// when told to stop, queues the rest.
fn build_until_stopped(
    db: &std::path::Path,
    recorded_as: &OnceLock<i64>,
    options: SpanOptions,
    shared: &Shared,
    requests: SyncSender<Vec<Span>>,
) {
    let mut queued: HashSet<[u8; 8]> = HashSet::new();
    let mut reader: Option<Reader> = None;
    // The first look reads everything; each later one what ended since, and the lines from the
    // first message id the previous look had not seen.
    let mut since = i64::MIN;
    let mut from_message_id = None;
    let mut interval = MIN_INTERVAL;
    loop {
        let stopping = {
            let stop = shared.stop.lock().unwrap_or_else(|e| e.into_inner());
            let (stop, _) = shared
                .wake
                .wait_timeout_while(stop, interval, |stop| !*stop)
                .unwrap_or_else(|e| e.into_inner());
            *stop
        };
        let Some(&connection_id) = recorded_as.get() else {
            if stopping {
                return;
            }
            continue;
        };
        if reader.is_none() {
            reader = Reader::open(db).ok();
        }
        if let Some(reader) = &reader {
            let started = Instant::now();
            // The last look reaches further back (and reads the lines from the start), for a
            // line timed long before it was committed.
            let options = SpanOptions {
                window: Window {
                    since: Some(if stopping {
                        since.saturating_sub(LAST_LOOK_BACK_US)
                    } else {
                        since
                    }),
                    open: stopping,
                    from_message_id: from_message_id.filter(|_| !stopping),
                },
                ..options
            };
            match connection_spans(reader, connection_id, options) {
                Ok((sessions, spans, newest, max_id)) => {
                    if let Some(newest) = newest {
                        since = since.max(newest - LOOK_BACK_US);
                    }
                    from_message_id = Some(max_id + 1);
                    let fresh: Vec<Span> = spans
                        .into_iter()
                        .filter(|s| (stopping || s.finished) && queued.insert(s.span_id))
                        .collect();
                    shared.update(|s| {
                        s.connection_id = Some(connection_id);
                        s.sessions = sessions;
                        s.spans += fresh.len();
                    });
                    queue(&requests, fresh, shared);
                }
                // The recording is being written: the next look sees it whole.
                Err(e) => shared.update(|s| s.last_error = Some(e.to_string())),
            }
            interval = MIN_INTERVAL.max(started.elapsed() * INTERVAL_PER_BUILD_TIME);
        }
        if stopping {
            return;
        }
    }
}

/// Every session of the connection, their spans in `options`' window, and the time of the
/// newest line recorded, read in one snapshot of the database.
/// And the largest message id the snapshot holds.
type Look = (Vec<String>, Vec<Span>, Option<i64>, i64);

fn connection_spans(reader: &Reader, connection_id: i64, options: SpanOptions) -> Result<Look> {
    reader.snapshot(|reader| {
        let newest = query::newest_line_time(reader, connection_id)?;
        let max_id = query::max_message_id(reader)?;
        let sessions = query::connection_sessions(reader, connection_id)?;
        let mut spans = Vec::new();
        for session_id in &sessions {
            let session = SessionRef {
                connection_id,
                session_id: session_id.clone(),
            };
            spans.extend(session_spans(reader, &session, options)?);
        }
        Ok((sessions, spans, newest, max_id))
    })
}

/// Hands `spans` to the sender a request at a time. While the queue is full the builder waits
/// (it is not on the data path), unless the collector is failing or the run has ended and its
/// patience is spent: then the request is lost.
fn queue(requests: &SyncSender<Vec<Span>>, mut spans: Vec<Span>, shared: &Shared) {
    while !spans.is_empty() {
        let rest = spans.split_off(spans.len().min(SPANS_PER_REQUEST));
        let mut request = std::mem::replace(&mut spans, rest);
        loop {
            match requests.try_send(request) {
                Ok(()) => break,
                Err(TrySendError::Full(back)) if shared.may_wait() => {
                    request = back;
                    std::thread::sleep(QUEUE_POLL);
                }
                Err(_) => {
                    shared.update(|s| {
                        s.last_error.get_or_insert_with(|| {
                            "the export queue was full: the collector takes spans slower than \
                             the session makes them"
                                .into()
                        });
                    });
                    break;
                }
            }
        }
    }
}
