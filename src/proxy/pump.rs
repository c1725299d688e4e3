//! One forwarding direction: read, frame, hand each line to the recorder, forward the bytes.
//!
//! # Invariant: the bytes out are the bytes in
//!
//! A pump forwards exactly the [`Piece`]s the framer hands out, in order, and nothing else. The
//! one exception is explicit: a [`LineTap`] (the policy, on the agent's output) may withhold a
//! whole line and answer it itself; the rest of the piece around it is forwarded unchanged.
//! Each line is handed to the recorder *before* it is forwarded, so the recorder always sees a
//! request before the response it provokes from the other side.

use std::io::{self, Read, Write};

use bytes::Bytes;

use super::framing::{LineFramer, Piece, split_lines};
use super::sink::{PrioritySender, SinkSender};
use crate::protocol::Direction;
use crate::record::{Annotation, RecorderHandle, now_us};

/// Where a pump's bytes go.
pub(crate) enum Forward {
    /// To a sink's writer thread.
    Sink(SinkSender),
    /// Straight to a writer this pump alone uses (the agent's stderr to ours).
    Direct(Box<dyn Write + Send>),
}

impl Forward {
    fn send(&mut self, bytes: Bytes, ends_line: bool) {
        if bytes.is_empty() {
            return;
        }
        match self {
            Forward::Sink(tx) => tx.send(bytes, ends_line),
            // A closed stderr must not stop the session.
            Forward::Direct(out) => {
                let _ = out.write_all(&bytes).and_then(|()| out.flush());
            }
        }
    }
}

/// What a tap decides about one complete line.
pub(crate) enum Disposition {
    /// Forward it, recorded with this annotation.
    Forward(Annotation),
    /// Do not forward it: send `reply` back the other way instead (on the priority lane of the
    /// sink the line came from), and record both.
    Answer {
        request: Annotation,
        reply: Bytes,
        reply_annotation: Annotation,
    },
}

/// Looks at each complete line a pump reads (not at the parts of an over-long line).
pub(crate) trait LineTap: Send {
    fn inspect(&mut self, line: &Bytes) -> Disposition;
}

/// A tap, and where its answers go.
pub(crate) struct Interceptor {
    pub tap: Box<dyn LineTap>,
    pub answers: Option<PrioritySender>,
}

/// Copies `input` to `forward` until end of input, recording every line. Returns the number of
/// bytes read, or the read error that ended the stream (everything read before it was
/// forwarded).
pub(crate) fn pump(
    mut input: impl Read,
    direction: Direction,
    mut forward: Forward,
    recorder: &RecorderHandle,
    mut interceptor: Option<Interceptor>,
) -> io::Result<u64> {
    let mut framer = LineFramer::default();
    // The head of an over-long line and the line's length so far: recorded once the line ends.
    let mut long_line: Option<(Bytes, i64)> = None;
    let mut copied = 0u64;
    // The lines of one run waiting to be recorded, reused from run to run.
    let mut lines: Vec<(Bytes, Annotation)> = Vec::new();
    loop {
        let read = framer.read_from(&mut input);
        let at_end = !matches!(read, Ok(n) if n > 0);
        let ts = now_us();
        while let Some(piece) = framer
            .next_piece()
            .or_else(|| if at_end { framer.finish() } else { None })
        {
            copied += piece.bytes().len() as u64;
            match piece {
                Piece::Lines(run) => {
                    // Recorded in one queue operation per run, always before being forwarded;
                    // a line the tap withholds splits the run.
                    lines.clear();
                    let mut sent = 0;
                    let mut offset = 0;
                    for line in split_lines(&run) {
                        let start = offset;
                        offset += line.len();
                        let Some(interceptor) = interceptor.as_mut() else {
                            lines.push((line, Annotation::default()));
                            continue;
                        };
                        match interceptor.tap.inspect(&line) {
                            Disposition::Forward(note) => lines.push((line, note)),
                            Disposition::Answer {
                                request,
                                reply,
                                reply_annotation,
                            } => {
                                lines.push((line, request));
                                recorder.record_lines(direction, ts, &lines);
                                lines.clear();
                                forward.send(run.slice(sent..start), true);
                                sent = offset;
                                let reply_size = reply.len() as i64;
                                recorder.record(
                                    direction.reverse(),
                                    ts,
                                    reply.clone(),
                                    reply_size,
                                    reply_annotation,
                                );
                                if let Some(answers) = &interceptor.answers {
                                    answers.send(reply);
                                }
                            }
                        }
                    }
                    recorder.record_lines(direction, ts, &lines);
                    forward.send(run.slice(sent..), true);
                }
                Piece::Unterminated(line) => {
                    let size = line.len() as i64;
                    recorder.record(direction, ts, line.clone(), size, Annotation::default());
                    forward.send(line, true);
                }
                Piece::LongPart {
                    bytes,
                    first,
                    ends_line,
                } => {
                    if first {
                        long_line = Some((bytes.clone(), 0));
                    }
                    if let Some((_, size)) = long_line.as_mut() {
                        *size += bytes.len() as i64;
                    }
                    if ends_line && let Some((head, size)) = long_line.take() {
                        recorder.record(direction, ts, head, size, Annotation::default());
                    }
                    forward.send(bytes, ends_line);
                }
            }
        }
        if at_end {
            return read.map(|_| copied);
        }
    }
}
