//! A recorded connection as a transcript: its exact lines, one JSON record each, in the format of
//! `shared/samples` (`record::transcript` defines the format and loads it back).

use std::fmt::Write as _;

use crate::query;
use crate::query::{QueryError, Reader};
use crate::record::transcript::TranscriptRecord;

/// The lines of a connection as transcript records (`t` relative to its first line).
pub(crate) fn export(
    reader: &Reader,
    connection_id: i64,
) -> Result<Vec<TranscriptRecord>, QueryError> {
    let mut out = Vec::new();
    let mut first_ts = None;
    for line in query::connection_lines(reader, connection_id)? {
        let query::ConnectionLine {
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
        let first = out.is_empty();
        out.push(TranscriptRecord {
            start: first.then(|| {
                let at = std::time::UNIX_EPOCH
                    + std::time::Duration::from_micros(u64::try_from(ts).unwrap_or(0));
                humantime::format_rfc3339_micros(at).to_string()
            }),
            seq: Some(seq),
            t: (ts - start) as f64 / 1e6,
            dir: dir.as_str().to_owned(),
            eol,
            text,
            hex,
            origin: (origin != "peer").then_some(origin),
            forwarded: (!forwarded).then_some(false),
        });
    }
    Ok(out)
}
