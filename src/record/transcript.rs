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

use std::fmt::Write as _;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::store::{ConnectionEnd, ConnectionStart, MessageRow, Store, StoreError};
use super::{Annotation, Line, ingest};
use crate::protocol::{Direction, Observer};

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
}

fn yes() -> bool {
    true
}

#[derive(Debug, thiserror::Error)]
pub enum TranscriptError {
    #[error("line {line}: {message}")]
    Record { line: usize, message: String },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Sql(#[from] rusqlite::Error),
}

impl TranscriptRecord {
    /// The exact bytes of the line, line ending included.
    pub fn bytes(&self) -> Result<Vec<u8>, String> {
        let mut bytes = match (&self.text, &self.hex) {
            (Some(text), _) => text.as_bytes().to_vec(),
            (None, Some(hex)) => decode_hex(hex)?,
            (None, None) => return Err("a record needs `text` or `hex`".into()),
        };
        if self.eol {
            bytes.push(b'\n');
        }
        Ok(bytes)
    }

    pub fn direction(&self) -> Result<Direction, String> {
        match self.dir.as_str() {
            "c2a" => Ok(Direction::ClientToAgent),
            "a2c" => Ok(Direction::AgentToClient),
            "stderr" => Ok(Direction::Stderr),
            other => Err(format!("unknown dir `{other}`: use c2a, a2c or stderr")),
        }
    }
}

fn decode_hex(hex: &str) -> Result<Vec<u8>, String> {
    if !hex.len().is_multiple_of(2) {
        return Err("`hex` has an odd number of digits".into());
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&hex[i..i + 2], 16)
                .map_err(|_| format!("`hex` is not hexadecimal near {i}"))
        })
        .collect()
}

/// Parses a transcript (JSON lines; blank lines ignored).
pub fn parse(text: &str) -> Result<Vec<TranscriptRecord>, TranscriptError> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let record: TranscriptRecord =
                serde_json::from_str(l).map_err(|e| TranscriptError::Record {
                    line: i + 1,
                    message: format!("not a transcript record: {e}"),
                })?;
            record
                .bytes()
                .and(record.direction())
                .map_err(|message| TranscriptError::Record {
                    line: i + 1,
                    message,
                })?;
            Ok(record)
        })
        .collect()
}

/// The lines of a connection as transcript records (`t` relative to its first line).
pub fn export(
    reader: &super::Reader,
    connection_id: i64,
) -> Result<Vec<TranscriptRecord>, TranscriptError> {
    let mut out = Vec::new();
    let mut first_ts = None;
    for line in super::queries::connection_lines(reader, connection_id)? {
        let super::queries::ConnectionLine {
            seq,
            ts,
            direction: dir,
            mut raw,
            origin,
            forwarded,
        } = line;
        let start = *first_ts.get_or_insert(ts);
        let eol = raw.last() == Some(&b'\n');
        if eol {
            raw.pop();
        }
        let (text, hex) = match String::from_utf8(raw) {
            Ok(text) => (Some(text), None),
            Err(e) => (
                None,
                Some(e.into_bytes().iter().fold(String::new(), |mut s, b| {
                    let _ = write!(s, "{b:02x}");
                    s
                })),
            ),
        };
        out.push(TranscriptRecord {
            seq: Some(seq),
            t: (ts - start) as f64 / 1e6,
            dir,
            eol,
            text,
            hex,
            origin: (origin != "peer").then_some(origin),
            forwarded: (!forwarded).then_some(false),
        });
    }
    Ok(out)
}

/// Loads a transcript into the database as a new connection, through the same ingest path as
/// live recording (redaction, observer, store). Returns the connection's id.
pub fn import(
    store: &mut Store,
    records: &[TranscriptRecord],
    start: ConnectionStart,
    redactor: &super::redact::Redactor,
) -> Result<i64, TranscriptError> {
    let connection_id = store.begin_connection(&start)?;
    let mut observer = Observer::new();
    let mut rows: Vec<MessageRow> = Vec::with_capacity(records.len());
    for (seq, record) in records.iter().enumerate() {
        let at = |message: String| TranscriptError::Record {
            line: seq + 1,
            message,
        };
        let raw = Bytes::from(record.bytes().map_err(at)?);
        let direction = record.direction().map_err(at)?;
        rows.push(ingest(
            &mut observer,
            redactor,
            Line {
                seq: seq as i64,
                ts: start.started_at + (record.t * 1e6) as i64,
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
    }
    for batch in rows.chunks(super::MAX_BATCH) {
        store.write_batch(connection_id, batch)?;
    }
    let last_t = records.last().map(|r| r.t).unwrap_or(0.0);
    store.end_connection(
        connection_id,
        &ConnectionEnd {
            ended_at: start.started_at + (last_t * 1e6) as i64,
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
        assert_eq!(decode_hex("ff00"), Ok(vec![0xff, 0]));
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
