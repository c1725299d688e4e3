//! What the full-text index (`acptap search`) holds of a recorded line: written by
//! `Store::index_for_search`, read by `query::search`.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};
use serde_json::Value;

use super::store::{BUSY_TIMEOUT, StoreError, require_current_schema};

/// Keys whose string values are ids or protocol words, not what anyone searches for.
const NOT_TEXT: &[&str] = &[
    "jsonrpc",
    "method",
    "sessionId",
    "toolCallId",
    "optionId",
    "terminalId",
    "sessionUpdate",
    "type",
    "kind",
    "status",
    "stopReason",
    "mimeType",
    "data",
];

/// The text of a recorded line for the index: every string value in its JSON (prompts, agent
/// text, titles, commands, paths, diffs), one per line, except ids and protocol words; nothing
/// for a line that is not JSON.
pub(crate) fn searchable_text(raw: &[u8]) -> String {
    fn walk(value: &Value, key: Option<&str>, out: &mut String) {
        match value {
            Value::String(text) if !key.is_some_and(|k| NOT_TEXT.contains(&k)) => {
                out.push_str(text);
                out.push('\n');
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, key, out)),
            Value::Object(map) => map.iter().for_each(|(k, v)| walk(v, Some(k), out)),
            _ => {}
        }
    }
    let mut out = String::new();
    if let Ok(value) = serde_json::from_slice::<Value>(raw) {
        walk(&value, None, &mut out);
    }
    out
}

/// Brings the full-text index of the database at `path` up to what is recorded, without
/// migrating it: `acptap search` refuses a database older than this acptap as every view does
/// (`acptap migrate` migrates and indexes). Returns how many lines were added.
pub(crate) fn bring_up_to_date(path: &Path) -> Result<usize, StoreError> {
    if !path.exists() {
        return Err(StoreError::Missing(path.to_owned()));
    }
    let open_err = |source: rusqlite::Error| StoreError::Open {
        path: path.to_owned(),
        source: source.into(),
    };
    let mut conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(open_err)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(open_err)?;
    let found: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(open_err)?;
    require_current_schema(path, found)?;
    index_new_lines(&mut conn)
}

/// Adds the messages recorded since the last time to the index: the text of their JSON strings
/// (prompts, agent text, titles, commands, paths, diffs), not ids or keys. Returns how many
/// messages were indexed.
pub(super) fn index_new_lines(conn: &mut Connection) -> Result<usize, StoreError> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let mut indexed = 0;
    {
        let last: i64 = tx.query_row("SELECT last_message_id FROM search_indexed", [], |r| {
            r.get(0)
        })?;
        let mut read = tx.prepare(
            "SELECT id, raw FROM messages WHERE id > ?1 AND direction != 'stderr' ORDER BY id",
        )?;
        let mut write = tx.prepare("INSERT INTO search_text (rowid, text) VALUES (?1, ?2)")?;
        let mut rows = read.query([last])?;
        let mut newest = last;
        while let Some(row) = rows.next()? {
            let id: i64 = row.get(0)?;
            let raw: Vec<u8> = row.get(1)?;
            newest = id;
            let text = searchable_text(&raw);
            if !text.is_empty() {
                write.execute(rusqlite::params![id, text])?;
                indexed += 1;
            }
        }
        let newest = newest.max(tx.query_row(
            "SELECT coalesce(max(id), 0) FROM messages",
            [],
            |r| r.get(0),
        )?);
        tx.execute("UPDATE search_indexed SET last_message_id = ?1", [newest])?;
    }
    tx.commit()?;
    Ok(indexed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_holds_the_words_not_the_ids() {
        let raw = br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"tool_call","toolCallId":"c9","title":"Edit hello.py","kind":"edit","rawInput":{"command":"cargo test"}}}}"#;
        let text = searchable_text(raw);
        assert!(text.contains("Edit hello.py") && text.contains("cargo test"));
        assert!(!text.contains("s-1") && !text.contains("c9") && !text.contains("session/update"));
        assert_eq!(searchable_text(b"not json"), "");
    }
}
