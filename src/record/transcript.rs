//! Transcripts: a recorded connection as JSON lines, to share and replay elsewhere.
//!
//! The format is the one of `shared/samples`: one record a line,
//! `{"seq", "t" (seconds since the first line), "dir": "c2a" | "a2c" | "stderr", "eol", "text"}`,
//! where `text` is the exact line without its trailing `\n` and `eol` says whether the `\n` was
//! there. A line that is not valid UTF-8 has `"hex"` (its bytes in hex) instead of `"text"`. Lines
//! acptap wrote itself carry `"origin": "acptap"`, lines it withheld `"forwarded": false`.
//!
//! Importing runs the same observer and store as live recording, so an imported transcript is
//! materialised exactly as if it had gone through `acptap run`.

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::store::{ConnectionEnd, ConnectionStart, LineToWrite, Store, StoreError};
use super::{Annotation, Line, ingest};
use crate::protocol::{Direction, SessionState};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TranscriptRecord {
    #[serde(default)]
    pub seq: Option<i64>,
    #[serde(default)]
    pub t: f64,
    pub dir: String,
    #[serde(default = "yes")]
    pub eol: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hex: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forwarded: Option<bool>,
    /// When the recording started (RFC 3339, UTC): written on the first record by
    /// `export::transcript`, so an import keeps the recorded times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<String>,
}

/// The longest a transcript may last (seconds): `t` beyond it is a mistake, not a recording.
const LONGEST_T: f64 = 100.0 * 365.0 * 86_400.0;

fn yes() -> bool {
    true
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum TranscriptError {
    #[error("line {line}: {error}")]
    Record { line: usize, error: RecordError },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Sql(#[from] rusqlite::Error),
}

/// What is wrong with one record of a transcript (the line is said by [`TranscriptError`]).
#[derive(Debug, thiserror::Error)]
pub(crate) enum RecordError {
    #[error("not a transcript record: {0}")]
    NotARecord(serde_json::Error),
    #[error("a record needs `text` or `hex`")]
    NoBytes,
    #[error("`hex` has an odd number of digits")]
    OddHex,
    #[error("`hex` is not hexadecimal near digit {0}")]
    NotHex(usize),
    #[error("unknown dir `{0}`: use c2a, a2c or stderr")]
    UnknownDir(String),
    #[error("the line holds a line break: a record is one line")]
    LineBreak,
    #[error("`t` is {0}: seconds since the first line, from 0 to 100 years")]
    BadTime(f64),
    #[error("`seq` {seq} does not follow {last}")]
    SeqOutOfOrder { seq: i64, last: i64 },
    #[error("`{text}` is not an RFC 3339 time ({why}); write e.g. 2026-11-24T12:00:00Z")]
    NotATime {
        text: String,
        why: humantime::TimestampError,
    },
    #[error("`{0}` is before 1970")]
    Before1970(String),
    #[error("the file holds no record")]
    Empty,
}

impl TranscriptRecord {
    /// The exact bytes of the line, line ending included.
    pub(crate) fn bytes(&self) -> Result<Vec<u8>, RecordError> {
        let mut bytes = match (&self.text, &self.hex) {
            (Some(text), _) => text.as_bytes().to_vec(),
            (None, Some(hex)) => decode_hex(hex)?,
            (None, None) => return Err(RecordError::NoBytes),
        };
        if self.eol {
            bytes.push(b'\n');
        }
        Ok(bytes)
    }

    pub(crate) fn direction(&self) -> Result<Direction, RecordError> {
        Direction::from_recorded(&self.dir).ok_or_else(|| RecordError::UnknownDir(self.dir.clone()))
    }
}

fn decode_hex(hex: &str) -> Result<Vec<u8>, RecordError> {
    if !hex.len().is_multiple_of(2) {
        return Err(RecordError::OddHex);
    }
    hex.as_bytes()
        .chunks(2)
        .enumerate()
        .map(|(i, pair)| {
            std::str::from_utf8(pair)
                .ok()
                .and_then(|digits| u8::from_str_radix(digits, 16).ok())
                .ok_or(RecordError::NotHex(i * 2))
        })
        .collect()
}

/// The start a record names, in microseconds since the epoch.
pub(crate) fn parse_start(text: &str) -> Result<i64, RecordError> {
    let time = humantime::parse_rfc3339_weak(text).map_err(|why| RecordError::NotATime {
        text: text.to_owned(),
        why,
    })?;
    time.duration_since(std::time::UNIX_EPOCH)
        .ok()
        .and_then(|d| i64::try_from(d.as_micros()).ok())
        .ok_or_else(|| RecordError::Before1970(text.to_owned()))
}

/// Parses a transcript (JSON lines; blank lines ignored) and checks every record: it names a
/// direction and its bytes, its `t` is a finite number of seconds from 0 (it may step back a
/// little: the two directions are timed on different threads), its `seq` (if given) rises, its line holds no line break, its `start` is a time. An error
/// names the line; nothing of a bad file is loaded.
pub(crate) fn parse(text: &str) -> Result<Vec<TranscriptRecord>, TranscriptError> {
    let mut records = Vec::new();
    let mut last_seq = None;
    for (i, l) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let at = |error: RecordError| TranscriptError::Record { line: i + 1, error };
        let record: TranscriptRecord =
            serde_json::from_str(l).map_err(|e| at(RecordError::NotARecord(e)))?;
        let bytes = record.bytes().map_err(at)?;
        record.direction().map_err(at)?;
        if bytes[..bytes.len() - usize::from(record.eol)].contains(&b'\n') {
            return Err(at(RecordError::LineBreak));
        }
        if !record.t.is_finite() || !(0.0..=LONGEST_T).contains(&record.t) {
            return Err(at(RecordError::BadTime(record.t)));
        }
        if let Some(seq) = record.seq {
            if last_seq.is_some_and(|last| seq <= last) {
                return Err(at(RecordError::SeqOutOfOrder {
                    seq,
                    last: last_seq.unwrap_or(0),
                }));
            }
            last_seq = Some(seq);
        }
        if let Some(start) = &record.start {
            parse_start(start).map_err(at)?;
        }
        records.push(record);
    }
    if records.is_empty() {
        return Err(TranscriptError::Record {
            line: 0,
            error: RecordError::Empty,
        });
    }
    Ok(records)
}

/// Loads a transcript into the database as a new connection, through the same ingest path as
/// live recording (redaction, observer, store). Returns the connection's id.
pub(crate) fn import(
    store: &mut Store,
    records: &[TranscriptRecord],
    start: ConnectionStart,
    redactor: &super::redact::Redactor,
) -> Result<i64, TranscriptError> {
    let connection_id = store.begin_connection(&start)?;
    let mut observer = SessionState::new();
    // Written a batch at a time, as the recorder does: memory stays flat however long the file.
    let mut rows: Vec<LineToWrite> = Vec::with_capacity(super::MAX_BATCH);
    for (seq, record) in records.iter().enumerate() {
        let at = |error: RecordError| TranscriptError::Record {
            line: seq + 1,
            error,
        };
        let raw = Bytes::from(record.bytes().map_err(at)?);
        let direction = record.direction().map_err(at)?;
        rows.push(ingest(
            &mut observer,
            redactor,
            Line {
                seq: seq as i64,
                ts: start.started_at.saturating_add((record.t * 1e6) as i64),
                direction,
                size: raw.len() as i64,
                raw,
                truncated: false,
                annotation: Annotation {
                    written_by_acptap: record.origin.as_deref() == Some("acptap"),
                    withheld: record.forwarded == Some(false),
                    policy: None,
                },
            },
        ));
        if rows.len() == super::MAX_BATCH {
            store.write_batch(connection_id, &rows)?;
            rows.clear();
        }
    }
    store.write_batch(connection_id, &rows)?;
    let last_t = records.last().map(|r| r.t).unwrap_or(0.0);
    store.end_connection(
        connection_id,
        &ConnectionEnd {
            ended_at: start.started_at.saturating_add((last_t * 1e6) as i64),
            exit_code: None,
            exit_signal: None,
        },
        0,
    )?;
    Ok(connection_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip_and_errors() {
        assert_eq!(decode_hex("ff00").unwrap(), vec![0xff, 0]);
        assert!(decode_hex("f").is_err());
        assert!(decode_hex("zz").is_err());
        let e = parse("{\"dir\":\"up\",\"text\":\"x\"}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 1") && e.contains("unknown dir"), "{e}");
        let e = parse("\n{\"dir\":\"c2a\"}").unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("`text` or `hex`"), "{e}");
    }
}
