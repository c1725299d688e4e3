//! `acptap search`: the searches over the full-text index and over the tool calls. The index is
//! written by the record side (`record::search_index`, through `Store::index_for_search`).

use serde::Serialize;
use serde_json::Value;

use super::Reader;
use rusqlite::params;

/// `text` as one FTS5 phrase: whatever the user typed, never FTS5 syntax.
fn phrase(text: &str) -> String {
    format!("\"{}\"", text.replace('"', "\"\""))
}

/// A session with what matched in it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SessionHit {
    pub connection_id: i64,
    pub session_id: String,
    /// When the connection started (µs).
    pub started_at: i64,
    /// Lines of the session whose text matched (0 when searching tool calls only).
    pub lines: i64,
    pub first_seq: Option<i64>,
    pub tool_calls: Vec<ToolCallHit>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct ToolCallHit {
    pub tool_call_id: String,
    pub kind: Option<String>,
    pub title: Option<String>,
    pub status: Option<String>,
}

/// What `acptap search` looks for; every given part must match.
#[derive(Debug, Clone, Default)]
pub(crate) struct Search {
    pub text: Option<String>,
    pub kind: Option<String>,
    pub status: Option<String>,
    pub path: Option<globset::GlobSet>,
}

/// The sessions (newest first, at most `limit`) with lines or tool calls matching `search`.
pub(crate) fn search(
    reader: &Reader,
    search: &Search,
    limit: usize,
) -> rusqlite::Result<Vec<SessionHit>> {
    let conn = reader.conn();
    let mut hits: Vec<SessionHit> = Vec::new();
    let mut index_of = std::collections::HashMap::new();
    let mut session =
        |connection_id: i64, session_id: String, started_at: i64, hits: &mut Vec<SessionHit>| {
            *index_of
                .entry((connection_id, session_id.clone()))
                .or_insert_with(|| {
                    hits.push(SessionHit {
                        connection_id,
                        session_id,
                        started_at,
                        lines: 0,
                        first_seq: None,
                        tool_calls: Vec::new(),
                    });
                    hits.len() - 1
                })
        };
    // Tool calls that a text match names (their updates carry the id), by session.
    let mut matched_calls: std::collections::HashSet<(i64, String, String)> = Default::default();
    let tool_filter = search.kind.is_some() || search.status.is_some() || search.path.is_some();
    if let Some(text) = &search.text {
        let mut statement = conn.prepare(
            "SELECT m.connection_id, m.session_id, c.started_at, m.seq, m.tool_call_id
             FROM search_text s JOIN messages m ON m.id = s.rowid
             JOIN connections c ON c.id = m.connection_id
             WHERE search_text MATCH ?1 AND m.session_id IS NOT NULL
             ORDER BY c.started_at DESC, m.connection_id DESC, m.seq",
        )?;
        let mut rows = statement.query(params![phrase(text)])?;
        while let Some(r) = rows.next()? {
            let (connection_id, session_id, started_at, seq): (i64, String, i64, i64) =
                (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?);
            let call: Option<String> = r.get(4)?;
            if let Some(call) = call {
                matched_calls.insert((connection_id, session_id.clone(), call));
            }
            if tool_filter {
                continue;
            }
            let i = session(connection_id, session_id, started_at, &mut hits);
            hits[i].lines += 1;
            hits[i].first_seq.get_or_insert(seq);
        }
    }
    // Tool calls: those the filters select (all of them when only text is given: the ones it
    // named), newest first.
    let mut statement = conn.prepare(
        "SELECT k.connection_id, k.session_id, c.started_at, k.tool_call_id, k.kind, k.title,
                k.status, k.locations, k.content
         FROM tool_calls k JOIN connections c ON c.id = k.connection_id
         WHERE (?1 IS NULL OR k.kind = ?1) AND (?2 IS NULL OR k.status = ?2)
         ORDER BY c.started_at DESC, k.connection_id DESC, k.first_seen_at, k.id",
    )?;
    let mut rows = statement.query(params![search.kind, search.status])?;
    while let Some(r) = rows.next()? {
        let (connection_id, session_id, started_at, id): (i64, String, i64, String) =
            (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?);
        if search.text.is_some()
            && !matched_calls.contains(&(connection_id, session_id.clone(), id.clone()))
        {
            continue;
        }
        if let Some(glob) = &search.path {
            let paths = |column: Option<String>| -> Vec<String> {
                column
                    .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                    .and_then(|v| v.as_array().cloned())
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|item| item["path"].as_str().map(str::to_owned))
                    .collect()
            };
            let mut all = paths(r.get(7)?);
            all.extend(paths(r.get(8)?));
            if !all.iter().any(|p| glob.is_match(p)) {
                continue;
            }
        }
        let i = session(connection_id, session_id, started_at, &mut hits);
        hits[i].tool_calls.push(ToolCallHit {
            tool_call_id: id,
            kind: r.get(4)?,
            title: r.get(5)?,
            status: r.get(6)?,
        });
    }
    hits.sort_by_key(|h| std::cmp::Reverse((h.started_at, h.connection_id)));
    hits.truncate(limit);
    Ok(hits)
}

/// How many recorded lines the search index has not taken in yet (it is brought up to date by
/// `acptap search` and `acptap migrate`, never by the recorder); `None` before the index exists.
pub(crate) fn unindexed_lines(reader: &Reader) -> rusqlite::Result<Option<i64>> {
    use rusqlite::OptionalExtension as _;
    let last: Option<i64> = reader
        .conn()
        .query_row("SELECT last_message_id FROM search_indexed", [], |r| {
            r.get(0)
        })
        .optional()
        .or_else(|e| match e {
            // A database from before the index: no table.
            rusqlite::Error::SqliteFailure(_, Some(ref m)) if m.contains("no such table") => {
                Ok(None)
            }
            e => Err(e),
        })?;
    let Some(last) = last else {
        return Ok(None);
    };
    reader
        .conn()
        .query_row(
            "SELECT count(*) FROM messages WHERE id > ?1 AND direction != 'stderr'",
            [last],
            |r| r.get(0),
        )
        .map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_search_is_one_phrase_never_fts5_syntax() {
        assert_eq!(phrase(r#"say "hi" OR x"#), r#""say ""hi"" OR x""#);
    }
}
