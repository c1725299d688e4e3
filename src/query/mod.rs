//! The read side: every read of a recording, for every view (show, report, stats, tail, search,
//! diff, export, the UI, MCP, replay's script).
//!
//! A [`Reader`] opens a database read-only and refuses one whose schema is older than this build's
//! (the views ask for `acptap migrate` instead of migrating). The rows are typed here
//! (`rows.rs`); pages of them for the UI (`pages.rs`), what a session's peers said of themselves
//! and its modes and commands (`info.rs`), a recording checked and its findings placed
//! (`findings.rs`), the full-text and tool-call searches (`search.rs`), counts and durations
//! (`stats.rs`), latency per request method and tool kind (`latency.rs`), a live cursor
//! (`follow.rs`), and the comparison of two sessions (`compare.rs`). Nothing here writes: the
//! recorder and the maintenance commands write through `record::Store`.

pub mod compare;
pub(crate) mod findings;
pub(crate) mod follow;
pub mod info;
pub mod latency;
pub(crate) mod pages;
pub mod reader;
mod rows;
pub mod search;
pub mod stats;
pub mod waterfall;

/// What opening a database can meet (missing, not a database, an older or newer schema): the
/// store's own error, which `Reader::open` gives as it is.
pub use crate::record::StoreError;
pub use reader::Reader;
pub use rows::*;

/// What a read of a recording gives a view: its value, or why it could not be read (no such
/// session, an ambiguous id, the database's own error).
pub(crate) type Result<T, E = QueryError> = std::result::Result<T, E>;

/// What the read side's tests share: a transcript written from its lines, and a database made
/// of it the way `acptap import` makes one.
#[cfg(test)]
pub(crate) mod testing {
    use super::Reader;

    /// A transcript (`acptap export`'s JSON lines) of `(seconds, direction, line)`.
    pub(crate) fn transcript<T: ToString>(lines: &[(f64, &str, T)]) -> String {
        lines
            .iter()
            .enumerate()
            .map(|(i, (t, dir, line))| {
                serde_json::json!({"seq": i, "t": t, "dir": dir, "eol": true, "text": line.to_string()})
                    .to_string()
                    + "\n"
            })
            .collect()
    }

    /// A transcript of `(direction, line)`, a second apart.
    pub(crate) fn transcript_in_seconds<T: ToString>(lines: &[(&str, T)]) -> String {
        let timed: Vec<(f64, &str, String)> = lines
            .iter()
            .enumerate()
            .map(|(i, (dir, line))| (i as f64, *dir, line.to_string()))
            .collect();
        transcript(&timed)
    }

    /// A transcript (`acptap export`'s JSON lines) imported into a database of its own, as
    /// `acptap import` does: the directory (removed when dropped), the reader, the connection.
    pub(crate) fn imported(transcript: &str) -> (tempfile::TempDir, Reader, i64) {
        let records = crate::record::transcript::parse(transcript).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("acptap.db");
        let mut store = crate::record::Store::open(&path).unwrap();
        let connection_id = crate::record::transcript::import(
            &mut store,
            &records,
            crate::record::ConnectionStart {
                label: None,
                command: vec!["import".into()],
                cwd: None,
                pid: None,
                started_at: 1_000_000_000_000,
                replay_of: None,
            },
            &crate::record::redact::Redactor::default_only(),
        )
        .unwrap();
        drop(store);
        let reader = Reader::open(&path).unwrap();
        (dir, reader, connection_id)
    }
}
