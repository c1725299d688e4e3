//! A sink (the agent's stdin, our stdout) and its one writer thread.
//!
//! # Invariant: one writer, whole lines, answers first
//!
//! Exactly one thread writes a sink, so bytes from different sources never interleave. It takes
//! from two lanes: the forwarded stream (from the pump of the other side) and a priority lane for
//! the lines acptap writes itself (the policy's answers to permission requests). A priority line
//! goes out before any forwarded bytes still queued, but never in the middle of a forwarded line
//! (only an over-long line is forwarded in parts).
//!
//! The sink lives as long as its forwarded stream: when the pump that feeds it ends (the client's
//! EOF, for the agent's stdin), the writer writes what is queued and closes the sink, whatever
//! answers might still come.
//!
//! Writes go straight to the file descriptor, without a buffer of their own: pieces are already
//! runs of whole lines, so there is nothing to flush. When nothing is queued, the pump writes a
//! forwarded piece itself instead of waking the writer thread, so a request/response round trip
//! costs no thread hand-off; the writer thread takes over whenever pieces queue up, and always
//! writes the priority lane (its senders are the other direction's pump, which must never block
//! on this sink).

use std::collections::VecDeque;
use std::io::Write;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use bytes::Bytes;

/// Pieces waiting in one lane: each is at most one read (64 KiB) or one long line, and a short
/// queue is enough to keep the writer busy while the reader reads.
pub(crate) const SINK_QUEUE_PIECES: usize = 64;

/// Bytes waiting in the forwarded lane at most (a few long lines), so memory stays bounded
/// when the peer reads slower than the other side writes.
const SINK_QUEUE_BYTES: usize = 4 * 1024 * 1024;

/// The largest piece a pump writes itself. Larger ones (long lines) go to the writer thread, so
/// that reading the next one overlaps with writing this one.
const DIRECT_WRITE_MAX: usize = 64 * 1024;

struct Lanes {
    forwarded: VecDeque<(Bytes, bool)>,
    /// Bytes in `forwarded`.
    forwarded_bytes: usize,
    priority: VecDeque<Bytes>,
    forwarded_closed: bool,
    /// Inside a forwarded line: the last piece written did not end one.
    mid_line: bool,
    /// Someone is writing to the sink right now: the writer thread, or a pump on the fast path.
    writing: bool,
}

struct Shared {
    lanes: Mutex<Lanes>,
    /// The sink itself; `None` once closed. Only the holder of the `writing` claim writes to it.
    out: Mutex<Option<Box<dyn Write + Send>>>,
    /// Signalled when there may be something to write, or the forwarded lane closed.
    work: Condvar,
    /// Signalled when a lane has room, or the sink closed.
    room: Condvar,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Lanes> {
        self.lanes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes with the `writing` claim held. A peer that stopped reading must not stop the other
    /// direction or the recording: after the first failed write, bytes are dropped.
    fn write(&self, bytes: &[u8]) {
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(sink) = out.as_mut()
            && sink.write_all(bytes).is_err()
        {
            *out = None;
        }
    }

    /// Gives up the `writing` claim, and wakes the writer thread for what queued meanwhile.
    fn release(&self, mid_line: Option<bool>) {
        let mut lanes = self.lock();
        lanes.writing = false;
        if let Some(mid_line) = mid_line {
            lanes.mid_line = mid_line;
        }
        drop(lanes);
        self.work.notify_one();
        self.room.notify_all();
    }
}

/// The forwarded lane's sender: there is one, owned by the pump; dropping it closes the sink.
pub(crate) struct SinkSender {
    shared: Arc<Shared>,
}

/// The priority lane's sender (cheap to clone).
#[derive(Clone)]
pub(crate) struct PrioritySender {
    shared: Arc<Shared>,
}

impl SinkSender {
    /// Forwards a piece; `ends_line` is false only for a part of an over-long line that is not
    /// its last. When nothing is queued and nobody is writing, the caller writes it itself: a
    /// request and its response then cost no thread hand-off. Otherwise the piece is queued for
    /// the writer thread (waiting while the lane is full).
    pub(crate) fn send(&self, piece: Bytes, ends_line: bool) {
        let mut lanes = self.shared.lock();
        if piece.len() <= DIRECT_WRITE_MAX
            && !lanes.writing
            && lanes.forwarded.is_empty()
            && (lanes.priority.is_empty() || lanes.mid_line)
        {
            lanes.writing = true;
            drop(lanes);
            self.shared.write(&piece);
            self.shared.release(Some(!ends_line));
            return;
        }
        while lanes.forwarded.len() >= SINK_QUEUE_PIECES
            || (!lanes.forwarded.is_empty()
                && lanes.forwarded_bytes + piece.len() > SINK_QUEUE_BYTES)
        {
            lanes = self
                .shared
                .room
                .wait(lanes)
                .unwrap_or_else(|e| e.into_inner());
        }
        lanes.forwarded_bytes += piece.len();
        lanes.forwarded.push_back((piece, ends_line));
        drop(lanes);
        self.shared.work.notify_one();
    }

    pub(crate) fn priority(&self) -> PrioritySender {
        PrioritySender {
            shared: self.shared.clone(),
        }
    }
}

impl Drop for SinkSender {
    fn drop(&mut self) {
        self.shared.lock().forwarded_closed = true;
        self.shared.work.notify_one();
    }
}

impl PrioritySender {
    /// Queues a whole line of acptap's own for the writer thread (never written on the caller's
    /// thread: the caller is the other direction's pump, which must not block on this sink).
    /// Returns false if the sink is already closed.
    pub(crate) fn send(&self, line: Bytes) -> bool {
        let mut lanes = self.shared.lock();
        while lanes.priority.len() >= SINK_QUEUE_PIECES && !lanes.forwarded_closed {
            lanes = self
                .shared
                .room
                .wait(lanes)
                .unwrap_or_else(|e| e.into_inner());
        }
        if lanes.forwarded_closed {
            return false;
        }
        lanes.priority.push_back(line);
        drop(lanes);
        self.shared.work.notify_one();
        true
    }
}

/// Starts the writer thread of a sink. It ends when the forwarded lane is closed and drained,
/// and then closes `out` (for the agent's stdin, that is what the agent sees as end of input).
pub(crate) fn spawn_writer(
    name: &str,
    out: impl Write + Send + 'static,
) -> (SinkSender, JoinHandle<()>) {
    let shared = Arc::new(Shared {
        lanes: Mutex::new(Lanes {
            forwarded: VecDeque::new(),
            forwarded_bytes: 0,
            priority: VecDeque::new(),
            forwarded_closed: false,
            mid_line: false,
            writing: false,
        }),
        out: Mutex::new(Some(Box::new(out))),
        work: Condvar::new(),
        room: Condvar::new(),
    });
    let writer_shared = shared.clone();
    let thread = std::thread::Builder::new()
        .name(format!("acptap-write-{name}"))
        .spawn(move || {
            let shared = writer_shared;
            loop {
                let mut lanes = shared.lock();
                let next = loop {
                    if !lanes.writing {
                        if !lanes.mid_line
                            && let Some(line) = lanes.priority.pop_front()
                        {
                            break Some((line, None));
                        }
                        if let Some((piece, ends_line)) = lanes.forwarded.pop_front() {
                            lanes.forwarded_bytes -= piece.len();
                            break Some((piece, Some(!ends_line)));
                        }
                        if lanes.forwarded_closed {
                            break None;
                        }
                    }
                    lanes = shared.work.wait(lanes).unwrap_or_else(|e| e.into_inner());
                };
                let Some((piece, mid_line)) = next else { break };
                lanes.writing = true;
                drop(lanes);
                shared.room.notify_all();
                shared.write(&piece);
                shared.release(mid_line);
            }
            // Closing the sink: flush, then drop the file so the peer sees end of input.
            let mut out = shared.out.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(sink) = out.as_mut() {
                let _ = sink.flush();
            }
            *out = None;
            drop(out);
            shared.room.notify_all();
        })
        .expect("spawn a writer thread");
    (SinkSender { shared }, thread)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// A writer that reports each write, and can be held back.
    struct Probe(mpsc::Sender<Vec<u8>>);
    impl Write for Probe {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.send(buf.to_vec()).unwrap();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn priority_never_splits_a_forwarded_line_and_goes_first_otherwise() {
        let (tx, rx) = mpsc::channel();
        let (sink, writer) = spawn_writer("test", Probe(tx));
        let answers = sink.priority();
        sink.send(Bytes::from_static(b"head-of-long-"), false);
        assert_eq!(rx.recv().unwrap(), b"head-of-long-");
        answers.send(Bytes::from_static(b"answer\n"));
        sink.send(Bytes::from_static(b"line\n"), true);
        sink.send(Bytes::from_static(b"next\n"), true);
        drop(sink);
        writer.join().unwrap();
        let rest: Vec<Vec<u8>> = rx.try_iter().collect();
        assert_eq!(
            rest,
            vec![b"line\n".to_vec(), b"answer\n".to_vec(), b"next\n".to_vec()]
        );
        assert!(
            !answers.send(Bytes::from_static(b"late\n")),
            "a closed sink refuses answers"
        );
    }
}
