//! The pager of every view that pages a list ([`PageRequest`], [`Page`]: the UI's lists and MCP's
//! tools), and paged reads of one session for a view that shows a window of a long list
//! (`acptap ui`'s virtualised lists): a page of tool calls, permission requests or raw lines,
//! with the count of all that match, so a 60,000-turn session is never read whole to show forty
//! rows.

use rusqlite::{OptionalExtension, params};
use serde::Serialize;

use super::Reader;
use super::{
    Columns, MESSAGE_COLUMN_COUNT, MESSAGE_COLUMNS, MessageRow, PermissionRow, RowRange,
    SessionRef, ToolCallRow, Window, for_each_tool_call_columns_where, message_row,
    permission_rows,
};

/// The page of a list a view asks for: `limit` rows from `offset`. The one pager of the views
/// that page (the UI's lists, MCP's tools): a limit out of bounds is brought within them, and
/// `note` says so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PageRequest {
    pub offset: usize,
    pub limit: usize,
    /// Why the limit is not the one asked for.
    pub note: Option<String>,
}

impl PageRequest {
    /// `limit` rows (`default` when none is asked for, at least 1 and at most `max`) from
    /// `offset`.
    pub(crate) fn new(
        offset: usize,
        limit: Option<usize>,
        default: usize,
        max: usize,
    ) -> PageRequest {
        let (limit, note) = match limit {
            Some(0) => (1, Some("limit is at least 1".to_owned())),
            Some(n) if n > max => (
                max,
                Some(format!("limit {n} lowered to {max}: page with offset")),
            ),
            Some(n) => (n, None),
            None => (default, None),
        };
        PageRequest {
            offset,
            limit,
            note,
        }
    }

    /// The page of `rows` (all that match, in order) asked for.
    pub(crate) fn page_of<T>(&self, rows: impl ExactSizeIterator<Item = T>) -> Page<T> {
        let total = rows.len();
        Page::new(
            self,
            total,
            rows.skip(self.offset).take(self.limit).collect(),
        )
    }

    /// `LIMIT ?` and `OFFSET ?` of a statement.
    fn sql(&self) -> (i64, i64) {
        let sql = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        (sql(self.limit), sql(self.offset))
    }
}

/// The `items` of a list from `offset`, of the `total` that match, and how many `more` follow
/// (then `next_offset` is where they start).
#[derive(Debug, Serialize)]
pub(crate) struct Page<T> {
    pub total: usize,
    pub offset: usize,
    pub items: Vec<T>,
    pub more: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<usize>,
    /// Why the page is not the one asked for (the request's note, or the view's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl<T> Page<T> {
    /// `items`, the page `request` asked for of the `total` that match.
    pub(crate) fn new(request: &PageRequest, total: usize, items: Vec<T>) -> Page<T> {
        let end = request.offset.saturating_add(items.len());
        let more = total.saturating_sub(end);
        Page {
            total,
            offset: request.offset,
            items,
            more,
            next_offset: (more > 0).then_some(end),
            note: request.note.clone(),
        }
    }

    /// The same page with each item made into what a view shows of it.
    pub(crate) fn map<U>(self, each: impl FnMut(T) -> U) -> Page<U> {
        Page {
            total: self.total,
            offset: self.offset,
            items: self.items.into_iter().map(each).collect(),
            more: self.more,
            next_offset: self.next_offset,
            note: self.note,
        }
    }
}

/// A count of rows as a page's total.
fn count(n: i64) -> usize {
    usize::try_from(n).unwrap_or(0)
}

/// Which tool calls a page lists; `None` matches every one.
#[derive(Debug, Clone, Default)]
pub(crate) struct ToolCallFilter {
    pub status: Option<String>,
    pub kind: Option<String>,
    /// A substring of the title or of a location's path, case-insensitive for ASCII.
    pub text: Option<String>,
}

/// A page of a session's tool calls, in order of first appearance, without their arguments and
/// results (`raw_input`, `raw_output`: read them with `queries::tool_call`).
pub(crate) fn tool_calls(
    reader: &Reader,
    session: &SessionRef,
    filter: &ToolCallFilter,
    page: &PageRequest,
) -> rusqlite::Result<Page<ToolCallRow>> {
    let condition = "k.connection_id = ?1 AND k.session_id = ?2
           AND (?3 IS NULL OR k.status = ?3) AND (?4 IS NULL OR k.kind = ?4)
           AND (?5 IS NULL OR instr(lower(coalesce(k.title, '')), lower(?5)) > 0
                OR (json_valid(k.locations) AND EXISTS (
                      SELECT 1 FROM json_each(k.locations) j
                      WHERE instr(lower(coalesce(j.value ->> '$.path', '')), lower(?5)) > 0)))";
    let (limit, offset) = page.sql();
    let total = reader
        .conn()
        .prepare_cached(&format!(
            "SELECT count(*) FROM tool_calls k WHERE {condition}"
        ))?
        .query_row(
            params![
                session.connection_id,
                session.session_id,
                filter.status,
                filter.kind,
                filter.text
            ],
            |r| r.get(0),
        )?;
    let mut items = Vec::new();
    for_each_tool_call_columns_where(
        reader,
        Columns::NoIo,
        condition,
        "LIMIT ?6 OFFSET ?7",
        params![
            session.connection_id,
            session.session_id,
            filter.status,
            filter.kind,
            filter.text,
            limit,
            offset
        ],
        |call| items.push(call),
    )?;
    Ok(Page::new(page, count(total), items))
}

/// A permission request with the title of the tool call it asks about (the request's own v2
/// `title` is `request.title`).
#[derive(Debug, Serialize)]
pub(crate) struct PermissionItem {
    pub tool_call_title: Option<String>,
    #[serde(flatten)]
    pub request: PermissionRow,
}

/// A page of a session's permission requests, in order, with the options offered.
pub fn permission_requests(
    reader: &Reader,
    session: &SessionRef,
    page: &PageRequest,
) -> rusqlite::Result<Page<PermissionItem>> {
    let conn = reader.conn();
    let total = conn
        .prepare_cached(
            "SELECT count(*) FROM permission_requests WHERE connection_id = ?1 AND session_id = ?2",
        )?
        .query_row(params![session.connection_id, session.session_id], |r| {
            r.get(0)
        })?;
    let (limit, offset) = page.sql();
    let range = RowRange {
        limit,
        offset,
        ..RowRange::default()
    };
    let rows = permission_rows(reader, session, Window::default(), "options", range)?;
    let mut title_of = conn.prepare_cached(
        "SELECT title FROM tool_calls
         WHERE connection_id = ?1 AND session_id = ?2 AND tool_call_id = ?3",
    )?;
    let mut items = Vec::with_capacity(rows.len());
    for request in rows {
        let tool_call_title = match &request.tool_call_id {
            Some(id) => title_of
                .query_row(
                    params![session.connection_id, session.session_id, id],
                    |r| r.get::<_, Option<String>>(0),
                )
                .optional()?
                .flatten(),
            None => None,
        };
        items.push(PermissionItem {
            tool_call_title,
            request,
        });
    }
    Ok(Page::new(page, count(total), items))
}

/// Which raw lines a page lists; `None` matches every one.
#[derive(Debug, Clone, Default)]
pub(crate) struct LineFilter {
    /// `c2a`, `a2c` or `stderr`.
    pub direction: Option<String>,
    /// The JSON-RPC method (a response has its request's).
    pub method: Option<String>,
    /// Bytes the line holds, exactly (case-sensitive).
    pub text: Option<Vec<u8>>,
}

/// A row of the lines page: the line's row, and whether it is an error response.
#[derive(Debug, Serialize)]
pub(crate) struct LineItem {
    #[serde(flatten)]
    pub row: MessageRow,
    /// A response whose JSON has an `error` member (a failed request; `rpc/result-and-error`'s
    /// response with both included).
    pub error: bool,
}

impl std::ops::Deref for LineItem {
    type Target = MessageRow;

    fn deref(&self) -> &MessageRow {
        &self.row
    }
}

/// Whether a line is a response with an `error` member, in SQL over `messages` (`raw` parsed
/// for responses only, and only when it is JSON SQLite reads: a truncated line is not).
const ERROR_RESPONSE_SQL: &str = "CASE WHEN kind = 'response' AND json_valid(CAST(raw AS TEXT)) \
     THEN json_type(CAST(raw AS TEXT), '$.error') IS NOT NULL ELSE 0 END";

/// A page of a connection's recorded lines (stderr included), in order, each said to be an
/// error response or not (for the rows of the page only).
pub(crate) fn lines(
    reader: &Reader,
    connection_id: i64,
    filter: &LineFilter,
    page: &PageRequest,
) -> rusqlite::Result<Page<LineItem>> {
    let conn = reader.conn();
    let (limit, offset) = page.sql();
    let condition = "connection_id = ?1 AND (?2 IS NULL OR direction = ?2)
           AND (?3 IS NULL OR method = ?3) AND (?4 IS NULL OR instr(raw, ?4) > 0)";
    let filtered = filter.direction.is_some() || filter.method.is_some() || filter.text.is_some();
    let total = if filtered {
        conn.prepare_cached(&format!("SELECT count(*) FROM messages WHERE {condition}"))?
            .query_row(
                params![connection_id, filter.direction, filter.method, filter.text],
                |r| r.get(0),
            )?
    } else {
        super::connection_message_count(reader, connection_id, 0..i64::MAX)?
    };
    let items = conn
        .prepare_cached(&format!(
            "SELECT {MESSAGE_COLUMNS}, {ERROR_RESPONSE_SQL} FROM messages WHERE {condition}
             ORDER BY seq LIMIT ?5 OFFSET ?6"
        ))?
        .query_map(
            params![
                connection_id,
                filter.direction,
                filter.method,
                filter.text,
                limit,
                offset
            ],
            |r| {
                Ok(LineItem {
                    row: message_row(r)?,
                    error: r.get(MESSAGE_COLUMN_COUNT)?,
                })
            },
        )?
        .collect::<Result<_, _>>()?;
    Ok(Page::new(page, count(total), items))
}

/// One recorded line of a connection, by its seq.
pub(crate) fn line(
    reader: &Reader,
    connection_id: i64,
    seq: i64,
) -> rusqlite::Result<Option<MessageRow>> {
    reader
        .conn()
        .prepare_cached(&format!(
            "SELECT {MESSAGE_COLUMNS} FROM messages WHERE connection_id = ?1 AND seq = ?2"
        ))?
        .query_row(params![connection_id, seq], message_row)
        .optional()
}

/// The methods of a connection's lines, with how many lines each: the choices of a filter.
pub(crate) fn methods(reader: &Reader, connection_id: i64) -> rusqlite::Result<Vec<(String, i64)>> {
    reader
        .conn()
        .prepare_cached(
            "SELECT method, count(*) FROM messages
             WHERE connection_id = ?1 AND method IS NOT NULL GROUP BY method ORDER BY method",
        )?
        .query_map([connection_id], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect()
}

/// The permission requests about one tool call, in order, with the options offered.
pub(crate) fn permission_requests_of_call(
    reader: &Reader,
    session: &SessionRef,
    tool_call_id: &str,
) -> rusqlite::Result<Vec<PermissionRow>> {
    let seqs: Vec<i64> = reader
        .conn()
        .prepare_cached(
            "SELECT request_seq FROM permission_requests
             WHERE connection_id = ?1 AND session_id = ?2 AND tool_call_id = ?3
             ORDER BY request_seq",
        )?
        .query_map(
            params![session.connection_id, session.session_id, tool_call_id],
            |r| r.get(0),
        )?
        .collect::<Result<_, _>>()?;
    let mut rows = Vec::new();
    for seq in seqs {
        let range = RowRange {
            seqs: seq..seq + 1,
            ..RowRange::default()
        };
        rows.extend(permission_rows(
            reader,
            session,
            Window::default(),
            "options",
            range,
        )?);
    }
    Ok(rows)
}

/// The kinds and the statuses of a session's tool calls, each once, in order.
pub(crate) fn tool_call_facets(
    reader: &Reader,
    session: &SessionRef,
) -> rusqlite::Result<(Vec<String>, Vec<String>)> {
    let distinct = |column: &str| -> rusqlite::Result<Vec<String>> {
        reader
            .conn()
            .prepare(&format!(
                "SELECT DISTINCT {column} FROM tool_calls
                 WHERE connection_id = ?1 AND session_id = ?2 AND {column} IS NOT NULL
                 ORDER BY {column}"
            ))?
            .query_map(params![session.connection_id, session.session_id], |r| {
                r.get(0)
            })?
            .collect()
    };
    Ok((distinct("kind")?, distinct("status")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_out_of_bounds_is_brought_within_them_and_said_so() {
        let asked = |limit| PageRequest::new(3, limit, 20, 100);
        assert_eq!((asked(None).limit, asked(None).note), (20, None));
        assert_eq!((asked(Some(7)).limit, asked(Some(7)).note), (7, None));
        assert_eq!(asked(Some(0)).limit, 1);
        assert_eq!(asked(Some(0)).note.unwrap(), "limit is at least 1");
        assert_eq!(asked(Some(1_000)).limit, 100);
        assert_eq!(
            asked(Some(1_000)).note.unwrap(),
            "limit 1000 lowered to 100: page with offset"
        );
    }

    #[test]
    fn error_responses_are_marked_in_the_lines_page() {
        assert_eq!(
            MESSAGE_COLUMNS.split(',').count(),
            super::super::MESSAGE_COLUMN_COUNT
        );
        let lines = [
            (
                "c2a",
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#,
            ),
            (
                "a2c",
                r#"{"jsonrpc":"2.0","id":0,"error":{"code":-32603,"message":"busy"}}"#,
            ),
            (
                "c2a",
                r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#,
            ),
            (
                "a2c",
                r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"error":"a field"}}"#,
            ),
            (
                "c2a",
                r#"{"jsonrpc":"2.0","method":"_x","params":{"error":1}}"#,
            ),
            (
                "c2a",
                r#"{"jsonrpc":"2.0","id":2,"method":"_y","params":{}}"#,
            ),
            ("a2c", r#"{"jsonrpc":"2.0","id":2,"result":{"v":NaN}}"#),
            (
                "c2a",
                r#"{"jsonrpc":"2.0","id":3,"method":"_y","params":{}}"#,
            ),
            (
                "a2c",
                r#"{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"\ud800"}}"#,
            ),
            ("stderr", "error: something"),
        ];
        let transcript = crate::query::testing::transcript_in_seconds(&lines);
        let (_dir, reader, connection_id) = crate::query::testing::imported(&transcript);
        let all = PageRequest::new(0, None, 100, 100);
        let page = lines_page(&reader, connection_id, &LineFilter::default(), &all);
        let marked: Vec<(i64, bool)> = page.items.iter().map(|l| (l.seq, l.error)).collect();
        assert_eq!(
            marked,
            [
                (0, false),
                (1, true),
                (2, false),
                (3, false),
                (4, false),
                (5, false),
                (6, false),
                (7, false),
                (8, true),
                (9, false)
            ]
        );
        // In the row's JSON, beside the line's columns; a later page marks its own rows.
        let second = PageRequest::new(8, Some(1), 100, 100);
        let page = lines_page(&reader, connection_id, &LineFilter::default(), &second);
        let row = serde_json::to_value(&page.items[0]).unwrap();
        assert_eq!(
            (&row["seq"], &row["kind"], &row["error"]),
            (&8.into(), &"response".into(), &true.into())
        );
    }

    fn lines_page(
        reader: &Reader,
        connection_id: i64,
        filter: &LineFilter,
        page: &PageRequest,
    ) -> Page<LineItem> {
        lines(reader, connection_id, filter, page).unwrap()
    }

    #[test]
    fn a_page_says_how_many_follow_and_where() {
        let request = PageRequest::new(2, Some(3), 20, 100);
        let page = request.page_of(0..10);
        assert_eq!(page.items, [2, 3, 4]);
        assert_eq!((page.total, page.offset, page.more), (10, 2, 5));
        assert_eq!(page.next_offset, Some(5));
        assert_eq!(
            serde_json::to_string(&page).unwrap(),
            r#"{"total":10,"offset":2,"items":[2,3,4],"more":5,"next_offset":5}"#
        );
        let last = PageRequest::new(8, Some(3), 20, 100).page_of(0..10);
        assert_eq!(
            (last.items.len(), last.more, last.next_offset),
            (2, 0, None)
        );
        let beyond = PageRequest::new(usize::MAX, None, 20, 100).page_of(0..10);
        assert_eq!((beyond.items.len(), beyond.more), (0, 0));
    }
}

/// A row of one of a session's lists, named as a waterfall's span names it.
#[derive(Debug, Clone)]
pub(crate) enum RowOf {
    /// A tool call, by id, in the tool calls list (first seen, then id).
    ToolCall(String),
    /// A permission request, by the seq of its line, in the permissions list.
    Permission(i64),
    /// A line, by seq, in the connection's raw lines.
    Line(i64),
}

/// Where a row is in its unfiltered list (from 0), `None` if the session has no such row.
pub(crate) fn position(
    reader: &Reader,
    session: &SessionRef,
    row: &RowOf,
) -> rusqlite::Result<Option<i64>> {
    let conn = reader.conn();
    let (c, s) = (session.connection_id, &session.session_id);
    match row {
        RowOf::ToolCall(id) => conn
            .prepare_cached(
                "SELECT (SELECT count(*) FROM tool_calls o
                         WHERE o.connection_id = k.connection_id AND o.session_id = k.session_id
                           AND (o.first_seen_at, o.id) < (k.first_seen_at, k.id))
                 FROM tool_calls k
                 WHERE k.connection_id = ?1 AND k.session_id = ?2 AND k.tool_call_id = ?3",
            )?
            .query_row(params![c, s, id], |r| r.get(0))
            .optional(),
        RowOf::Permission(seq) => conn
            .prepare_cached(
                "SELECT (SELECT count(*) FROM permission_requests o
                         WHERE o.connection_id = ?1 AND o.session_id = ?2 AND o.request_seq < ?3)
                 FROM permission_requests
                 WHERE connection_id = ?1 AND session_id = ?2 AND request_seq = ?3",
            )?
            .query_row(params![c, s, seq], |r| r.get(0))
            .optional(),
        RowOf::Line(seq) => conn
            .prepare_cached(
                "SELECT (SELECT count(*) FROM messages WHERE connection_id = ?1 AND seq < ?2)
                 FROM messages WHERE connection_id = ?1 AND seq = ?2",
            )?
            .query_row(params![c, seq], |r| r.get(0))
            .optional(),
    }
}
