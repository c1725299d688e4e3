//! Byte-exact framing of ACP's wire format.
//!
//! # Wire format
//!
//! ACP is newline-delimited JSON-RPC: one message per line, each line ending in `\n`. This module
//! splits a byte stream at `\n` and never looks further: it does not require UTF-8, keeps a `\r`
//! before the `\n`, keeps empty lines, and never re-serialises anything. What it hands out, in order
//! and concatenated, is exactly the input.
//!
//! # Maximum length
//!
//! A line is held until its `\n` arrives and handed out whole, unless [`MAX_FRAMED_LINE`] bytes of
//! it pile up first (so lines up to that size, and up to one read more, are always whole). Then it
//! is handed out in [`Piece::LongPart`]s as it arrives (the first one being its first
//! `MAX_FRAMED_LINE` bytes), so memory stays bounded by a small multiple of that size while the
//! line is still forwarded unchanged. A final line without `\n` is handed out at end of input as
//! [`Piece::Unterminated`].
//!
//! Nothing here is an error: input the framer does not understand does not exist at this level.

use bytes::{Bytes, BytesMut};
use std::io::{self, Read};

/// The longest line that is held and recorded whole (64 MiB, the size of real `_meta` payloads
/// with room to spare).
pub(crate) const MAX_FRAMED_LINE: usize = 64 * 1024 * 1024;

/// How much is asked of `read` at once: large enough that a stream of small lines costs one
/// syscall per pipe buffer, not per line.
const READ_SIZE: usize = 64 * 1024;

/// A run of bytes ready to be forwarded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    /// One or more complete lines, each ending in `\n`.
    Lines(Bytes),
    /// Part of a line longer than the framer's maximum. `first` marks the piece that starts the
    /// line; `ends_line` the piece that carries its `\n` (or the end of input).
    LongPart {
        bytes: Bytes,
        first: bool,
        ends_line: bool,
    },
    /// The last bytes of the input, which did not end in `\n`.
    Unterminated(Bytes),
}

impl Piece {
    /// The bytes to forward.
    pub(crate) fn bytes(&self) -> &Bytes {
        match self {
            Piece::Lines(b) | Piece::Unterminated(b) => b,
            Piece::LongPart { bytes, .. } => bytes,
        }
    }
}

/// Splits a byte stream into [`Piece`]s.
#[derive(Debug)]
pub(crate) struct LineFramer {
    buf: BytesMut,
    /// How much of `buf` is known to hold no `\n`: only new bytes are searched, so a long line
    /// costs linear time.
    scanned: usize,
    max_line: usize,
    /// Inside a line longer than `max_line`, whose head was already handed out.
    in_long_line: bool,
}

impl Default for LineFramer {
    fn default() -> Self {
        Self::new(MAX_FRAMED_LINE)
    }
}

impl LineFramer {
    pub(crate) fn new(max_line: usize) -> Self {
        Self {
            buf: BytesMut::with_capacity(READ_SIZE),
            scanned: 0,
            max_line: max_line.max(1),
            in_long_line: false,
        }
    }

    /// Reads once from `input` into the framer. Returns the number of bytes read: 0 means end of
    /// input.
    pub(crate) fn read_from(&mut self, input: &mut impl Read) -> io::Result<usize> {
        let start = self.buf.len();
        self.buf.resize(start + READ_SIZE, 0);
        let result = loop {
            match input.read(&mut self.buf[start..]) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other,
            }
        };
        let n = *result.as_ref().unwrap_or(&0);
        self.buf.truncate(start + n);
        result
    }

    /// Adds bytes as if they had been read (for feeding the framer from memory in tests).
    #[cfg(test)]
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next piece that can be handed out from what was read so far, if any.
    pub(crate) fn next_piece(&mut self) -> Option<Piece> {
        if self.buf.is_empty() {
            return None;
        }
        if self.in_long_line {
            return Some(match memchr::memchr(b'\n', &self.buf) {
                Some(pos) => {
                    self.in_long_line = false;
                    self.scanned = 0;
                    Piece::LongPart {
                        bytes: self.buf.split_to(pos + 1).freeze(),
                        first: false,
                        ends_line: true,
                    }
                }
                None => Piece::LongPart {
                    bytes: self.buf.split().freeze(),
                    first: false,
                    ends_line: false,
                },
            });
        }
        let unscanned = &self.buf[self.scanned..];
        if let Some(pos) = memchr::memrchr(b'\n', unscanned) {
            let end = self.scanned + pos + 1;
            self.scanned = 0;
            return Some(Piece::Lines(self.buf.split_to(end).freeze()));
        }
        self.scanned = self.buf.len();
        if self.buf.len() >= self.max_line {
            return Some(self.long_head());
        }
        None
    }

    /// Hands out the first `max_line` bytes of an over-long line.
    fn long_head(&mut self) -> Piece {
        self.in_long_line = true;
        self.scanned = 0;
        let head = self.buf.split_to(self.max_line).freeze();
        if head.last() == Some(&b'\n') {
            // Exactly max_line long: it is whole after all.
            self.in_long_line = false;
            return Piece::Lines(head);
        }
        Piece::LongPart {
            bytes: head,
            first: true,
            ends_line: false,
        }
    }

    /// At end of input: whatever is left, which has no `\n`.
    pub(crate) fn finish(&mut self) -> Option<Piece> {
        self.scanned = 0;
        if std::mem::take(&mut self.in_long_line) {
            // Even with nothing left, the over-long line needs its ending piece.
            return Some(Piece::LongPart {
                bytes: self.buf.split().freeze(),
                first: false,
                ends_line: true,
            });
        }
        if self.buf.is_empty() {
            return None;
        }
        Some(Piece::Unterminated(self.buf.split().freeze()))
    }
}

/// Splits a run of complete lines into its lines, each keeping its `\n`. Zero-copy.
pub(crate) fn split_lines(run: &Bytes) -> impl Iterator<Item = Bytes> + '_ {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= run.len() {
            return None;
        }
        let end = match memchr::memchr(b'\n', &run[start..]) {
            Some(pos) => start + pos + 1,
            None => run.len(),
        };
        let line = run.slice(start..end);
        start = end;
        Some(line)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame_all(input: &[u8], chunk: usize, max_line: usize) -> Vec<Piece> {
        let mut framer = LineFramer::new(max_line);
        let mut out = Vec::new();
        for part in input.chunks(chunk.max(1)) {
            framer.push(part);
            while let Some(p) = framer.next_piece() {
                out.push(p);
            }
        }
        out.extend(framer.finish());
        out
    }

    fn concat(pieces: &[Piece]) -> Vec<u8> {
        pieces.iter().flat_map(|p| p.bytes().to_vec()).collect()
    }

    #[test]
    fn keeps_crlf_empty_lines_and_invalid_utf8() {
        let input = b"{\"a\":1}\r\n\n\xff\xfe not json\nlast";
        let pieces = frame_all(input, 3, 1024);
        assert_eq!(concat(&pieces), input);
        assert_eq!(
            pieces.last(),
            Some(&Piece::Unterminated(Bytes::from_static(b"last")))
        );
        let lines: Vec<Bytes> = pieces
            .iter()
            .filter_map(|p| match p {
                Piece::Lines(b) => Some(b.clone()),
                _ => None,
            })
            .flat_map(|b| split_lines(&b).collect::<Vec<_>>())
            .collect();
        assert_eq!(
            lines,
            vec![
                Bytes::from_static(b"{\"a\":1}\r\n"),
                Bytes::from_static(b"\n"),
                Bytes::from_static(b"\xff\xfe not json\n"),
            ]
        );
    }

    #[test]
    fn long_line_is_streamed_in_parts_and_stays_exact() {
        let mut input = vec![b'x'; 50];
        input.push(b'\n');
        input.extend_from_slice(b"short\n");
        let pieces = frame_all(&input, 7, 16);
        assert_eq!(concat(&pieces), input);
        assert!(
            matches!(&pieces[0], Piece::LongPart { first: true, bytes, .. } if bytes.len() == 16)
        );
        let ends: Vec<bool> = pieces
            .iter()
            .filter_map(|p| match p {
                Piece::LongPart { ends_line, .. } => Some(*ends_line),
                _ => None,
            })
            .collect();
        assert_eq!(
            ends.iter().filter(|e| **e).count(),
            1,
            "one part ends the line"
        );
        assert_eq!(
            pieces.last(),
            Some(&Piece::Lines(Bytes::from_static(b"short\n")))
        );
    }

    #[test]
    fn line_whose_newline_arrives_in_the_same_read_is_whole() {
        let mut input = b"a\n".to_vec();
        input.extend(vec![b'y'; 20]);
        input.push(b'\n');
        let pieces = frame_all(&input, input.len(), 16);
        assert_eq!(pieces, vec![Piece::Lines(Bytes::from(input))]);
    }

    #[test]
    fn line_of_exactly_max_length_is_whole() {
        let mut input = vec![b'z'; 15];
        input.push(b'\n');
        let pieces = frame_all(&input, 4, 16);
        assert_eq!(pieces, vec![Piece::Lines(Bytes::from(input))]);
    }

    #[test]
    fn over_long_unterminated_tail_ends_its_line() {
        let input = vec![b'q'; 40];
        let pieces = frame_all(&input, 40, 16);
        assert_eq!(concat(&pieces), input);
        assert!(matches!(
            pieces.last(),
            Some(Piece::LongPart {
                ends_line: true,
                ..
            })
        ));
    }
}
