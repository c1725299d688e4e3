//! One forwarding direction: read, frame, hand each line to the recorder, forward the bytes.
//!
//! # Invariant: the bytes out are the bytes in
//!
//! A pump forwards exactly the [`Piece`]s the framer hands out, in order, and nothing else; it
//! never looks inside them. Each line is handed to the recorder *before* it is forwarded, so the
//! recorder always sees a request before the response it provokes from the other side.
//!
//! # Sinks
//!
//! Every sink (the agent's stdin, our stdout) has exactly one writer thread, fed by a bounded
//! channel, so lines from different sources can never interleave. A writer writes what it is
//! given straight to the file descriptor, without a buffer of its own: the pieces are already
//! runs of whole lines, so there is nothing to flush and no added latency.

use std::io::{self, Read, Write};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use bytes::Bytes;

use super::framing::{LineFramer, Piece, split_lines};
use crate::protocol::Direction;
use crate::record::{RecorderHandle, now_us};

/// Pieces waiting for a writer: each is at most one read (64 KiB) or one long line, and a short
/// queue is enough to keep the writer busy while the reader reads.
const SINK_QUEUE_PIECES: usize = 64;

/// A sink's sending side: what the pumps (and, later, the policy) send bytes into.
pub type SinkSender = SyncSender<Bytes>;

/// Starts the one writer thread of a sink. The thread ends when every sender is dropped, and then
/// drops `out` (for the agent's stdin, that is what closes it).
pub fn spawn_writer(
    name: &str,
    mut out: impl Write + Send + 'static,
) -> (SinkSender, JoinHandle<()>) {
    let (tx, rx): (SinkSender, Receiver<Bytes>) = sync_channel(SINK_QUEUE_PIECES);
    let thread = std::thread::Builder::new()
        .name(format!("acptap-write-{name}"))
        .spawn(move || {
            let mut broken = false;
            for piece in rx {
                // A peer that stopped reading must not stop the other direction or the recording:
                // keep draining, drop the bytes.
                if !broken && out.write_all(&piece).is_err() {
                    broken = true;
                }
            }
            let _ = out.flush();
        })
        .expect("spawn a writer thread");
    (tx, thread)
}

/// Where a pump's bytes go.
pub enum Forward {
    /// To a sink's writer thread.
    Sink(SinkSender),
    /// Straight to a writer this pump alone uses (the agent's stderr to ours).
    Direct(Box<dyn Write + Send>),
}

impl Forward {
    fn send(&mut self, bytes: &Bytes) {
        match self {
            // A closed sink means its peer is gone; the pump still drains and records.
            Forward::Sink(tx) => {
                let _ = tx.send(bytes.clone());
            }
            Forward::Direct(out) => {
                let _ = out.write_all(bytes).and_then(|()| out.flush());
            }
        }
    }
}

/// Copies `input` to `forward` until end of input, recording every line. Returns the number of
/// bytes copied, or the read error that ended the stream (everything read before it was
/// forwarded).
pub fn pump(
    mut input: impl Read,
    direction: Direction,
    mut forward: Forward,
    recorder: &RecorderHandle,
) -> io::Result<u64> {
    let mut framer = LineFramer::default();
    // The head of an over-long line and the line's length so far: recorded once the line ends.
    let mut long_line: Option<(Bytes, i64)> = None;
    let mut copied = 0u64;
    loop {
        let read = framer.read_from(&mut input);
        let at_end = !matches!(read, Ok(n) if n > 0);
        let ts = now_us();
        while let Some(piece) = framer
            .next_piece()
            .or_else(|| if at_end { framer.finish() } else { None })
        {
            match &piece {
                Piece::Lines(run) => {
                    for line in split_lines(run) {
                        let size = line.len() as i64;
                        recorder.record(direction, ts, line, size);
                    }
                }
                Piece::Unterminated(line) => {
                    recorder.record(direction, ts, line.clone(), line.len() as i64)
                }
                Piece::LongPart {
                    bytes,
                    first,
                    ends_line,
                } => {
                    if *first {
                        long_line = Some((bytes.clone(), 0));
                    }
                    if let Some((_, size)) = long_line.as_mut() {
                        *size += bytes.len() as i64;
                    }
                    if *ends_line && let Some((head, size)) = long_line.take() {
                        recorder.record(direction, ts, head, size);
                    }
                }
            }
            copied += piece.bytes().len() as u64;
            forward.send(piece.bytes());
        }
        if at_end {
            return read.map(|_| copied);
        }
    }
}
