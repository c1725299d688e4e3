//! Read-side queries for the inspection commands (`sessions`, `show`, `tools`). Plain rows out;
//! rendering is `inspect/`'s business.

use std::collections::HashMap;

use rusqlite::{OptionalExtension, Row, params};

use super::Reader;
use crate::protocol::{Direction, MessageKind};
use serde::Serialize;
use serde_json::Value;

#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error("no session matches `{0}`; `acptap sessions` lists them")]
    NoSuchSession(String),
    #[error("`{spec}` matches several sessions ({}); give more of the id", candidates.join(", "))]
    Ambiguous {
        spec: String,
        candidates: Vec<String>,
    },
    #[error(
        "the database holds no session yet; record one with `acptap run` or load one with `acptap import FILE.jsonl`"
    )]
    NoSessions,
    #[error("no session named: give a session id, a prefix of one, or `last`")]
    EmptySpec,
    #[error(transparent)]
    Sql(#[from] rusqlite::Error),
}

/// A session as recorded by one connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionRef {
    pub connection_id: i64,
    pub session_id: String,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct SessionSummary {
    pub session_id: String,
    pub connection_id: i64,
    pub label: Option<String>,
    pub agent: String,
    pub command: Vec<String>,
    pub cwd: Option<String>,
    pub origin: String,
    pub created_at: i64,
    pub connection_ended_at: Option<i64>,
    /// `live` (its proxy still runs), `ended`, or `interrupted` (not ended, and the process that
    /// recorded it is gone: killed, crashed, or the machine restarted).
    pub state: &'static str,
    pub exit_code: Option<i32>,
    pub complete: bool,
    pub lost_messages: i64,
    pub protocol_version: Option<Value>,
    pub turns: i64,
    pub tool_calls: i64,
    pub permission_requests: i64,
}

const SESSION_SUMMARY_SQL: &str = "
    SELECT s.session_id, s.connection_id, c.label, c.agent_info, c.command, s.cwd, s.origin,
           s.created_at, c.ended_at, c.exit_code, c.complete, c.lost_messages, c.protocol_version,
           c.proxy_pid, c.proxy_identity,
           (SELECT count(*) FROM prompt_turns t
             WHERE t.connection_id = s.connection_id AND t.session_id = s.session_id),
           (SELECT count(*) FROM tool_calls k
             WHERE k.connection_id = s.connection_id AND k.session_id = s.session_id),
           (SELECT count(*) FROM permission_requests p
             WHERE p.connection_id = s.connection_id AND p.session_id = s.session_id)
    FROM sessions s JOIN connections c ON c.id = s.connection_id";

fn parse_json(text: Option<String>) -> Option<Value> {
    text.and_then(|t| serde_json::from_str(&t).ok())
}

fn session_summary(row: &Row) -> rusqlite::Result<SessionSummary> {
    let agent_info = parse_json(row.get(3)?);
    let command: Vec<String> = row
        .get::<_, String>(4)
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or_default();
    let agent = agent_info
        .as_ref()
        .and_then(|i| {
            let name = i.get("title").or_else(|| i.get("name"))?.as_str()?;
            let version = i.get("version").and_then(Value::as_str);
            Some(match version {
                Some(v) => format!("{name} {v}"),
                None => name.to_owned(),
            })
        })
        .or_else(|| command.first().cloned())
        .unwrap_or_else(|| "?".to_owned());
    Ok(SessionSummary {
        session_id: row.get(0)?,
        connection_id: row.get(1)?,
        label: row.get(2)?,
        agent,
        command,
        cwd: row.get(5)?,
        origin: row.get(6)?,
        created_at: row.get(7)?,
        connection_ended_at: row.get(8)?,
        state: connection_state(row.get(8)?, row.get(13)?, row.get(14)?),
        exit_code: row.get(9)?,
        complete: row.get(10)?,
        lost_messages: row.get(11)?,
        protocol_version: parse_json(row.get(12)?),
        turns: row.get(15)?,
        tool_calls: row.get(16)?,
        permission_requests: row.get(17)?,
    })
}

/// Whether a connection is still being recorded: ended, or its proxy is the very process that
/// started it (same boot, same start time), or else it was interrupted.
fn connection_state(
    ended_at: Option<i64>,
    proxy_pid: Option<u32>,
    identity: Option<String>,
) -> &'static str {
    if ended_at.is_some() {
        return "ended";
    }
    let running = match (proxy_pid, identity) {
        (Some(pid), Some(recorded)) => {
            crate::record::store::process_identity(pid).is_some_and(|now| now == recorded)
        }
        // Recorded before identities were: the pid is all there is.
        (Some(pid), None) => std::path::Path::new(&format!("/proc/{pid}")).exists(),
        (None, _) => false,
    };
    if running { "live" } else { "interrupted" }
}

/// The most recent sessions first.
pub(crate) fn list_sessions(
    reader: &Reader,
    limit: usize,
) -> rusqlite::Result<Vec<SessionSummary>> {
    let conn = reader.conn();
    conn.prepare(&format!(
        "{SESSION_SUMMARY_SQL} ORDER BY s.created_at DESC, s.id DESC LIMIT ?1"
    ))?
    .query_map([limit as i64], session_summary)?
    .collect()
}

pub(crate) fn session_summary_of(
    reader: &Reader,
    session: &SessionRef,
) -> rusqlite::Result<SessionSummary> {
    let conn = reader.conn();
    conn.query_row(
        &format!("{SESSION_SUMMARY_SQL} WHERE s.connection_id = ?1 AND s.session_id = ?2"),
        params![session.connection_id, session.session_id],
        session_summary,
    )
}

/// Finds a session by `last`, its whole id, or a unique prefix of it. A session id recorded by
/// several connections (a `session/load`) means its latest recording.
pub fn resolve_session(reader: &Reader, spec: &str) -> Result<SessionRef, QueryError> {
    let conn = reader.conn();
    let latest = |sql: &str, arg: &str| -> rusqlite::Result<Option<SessionRef>> {
        conn.query_row(sql, [arg], |r| {
            Ok(SessionRef {
                connection_id: r.get(0)?,
                session_id: r.get(1)?,
            })
        })
        .optional()
    };
    if spec.trim().is_empty() {
        return Err(QueryError::EmptySpec);
    }
    if spec == "last" {
        // The most recently started connection's latest session; a replay's live run counts
        // only when nothing else was recorded (a CI replay must not become "last" for itself).
        return latest(
            "SELECT s.connection_id, s.session_id FROM sessions s
             JOIN connections c ON c.id = s.connection_id WHERE ?1 = ?1
             ORDER BY c.replay_of IS NOT NULL, c.started_at DESC, c.id DESC,
                      s.created_at DESC, s.id DESC
             LIMIT 1",
            spec,
        )?
        .ok_or(QueryError::NoSessions);
    }
    if let Some(found) = latest(
        "SELECT connection_id, session_id FROM sessions WHERE session_id = ?1
         ORDER BY created_at DESC, id DESC LIMIT 1",
        spec,
    )? {
        return Ok(found);
    }
    let candidates: Vec<String> = conn
        .prepare(
            "SELECT DISTINCT session_id FROM sessions
             WHERE substr(session_id, 1, length(?1)) = ?1 ORDER BY session_id LIMIT 10",
        )?
        .query_map([spec], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    match candidates.as_slice() {
        [] => Err(QueryError::NoSuchSession(spec.to_owned())),
        [one] => resolve_session(reader, one),
        _ => Err(QueryError::Ambiguous {
            spec: spec.to_owned(),
            candidates,
        }),
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Turn {
    pub request_seq: i64,
    pub response_seq: Option<i64>,
    pub started_at: i64,
    pub ended_at: Option<i64>,
    pub duration_us: Option<i64>,
    pub stop_reason: Option<String>,
    pub error: Option<String>,
    pub cancel_requested_at: Option<i64>,
}

pub fn turns(reader: &Reader, session: &SessionRef) -> rusqlite::Result<Vec<Turn>> {
    turns_from(reader, session, 0, i64::MAX)
}

/// The session's turns numbered `first..first + count` (from 0), in order.
pub fn turns_from(
    reader: &Reader,
    session: &SessionRef,
    first: i64,
    count: i64,
) -> rusqlite::Result<Vec<Turn>> {
    let conn = reader.conn();
    conn.prepare_cached(
        "SELECT request_seq, response_seq, started_at, ended_at, duration_us, stop_reason, error,
                cancel_requested_at
         FROM prompt_turns WHERE connection_id = ?1 AND session_id = ?2 ORDER BY request_seq
         LIMIT ?4 OFFSET ?3",
    )?
    .query_map(
        params![session.connection_id, session.session_id, first, count],
        |r| {
            Ok(Turn {
                request_seq: r.get(0)?,
                response_seq: r.get(1)?,
                started_at: r.get(2)?,
                ended_at: r.get(3)?,
                duration_us: r.get(4)?,
                stop_reason: r.get(5)?,
                error: r.get(6)?,
                cancel_requested_at: r.get(7)?,
            })
        },
    )?
    .collect()
}

#[derive(Debug, Clone, Serialize)]
pub struct ToolCallRow {
    pub connection_id: i64,
    pub session_id: String,
    pub tool_call_id: String,
    pub title: Option<String>,
    pub kind: Option<String>,
    pub status: Option<String>,
    pub content: Option<Value>,
    pub locations: Option<Value>,
    pub raw_input: Option<Value>,
    pub raw_output: Option<Value>,
    pub created_by: String,
    pub first_seen_at: i64,
    pub last_updated_at: i64,
    pub update_count: i64,
    /// The seq of the message that created it.
    pub first_seq: Option<i64>,
}

impl ToolCallRow {
    /// From first sight to last update, once the call has finished.
    pub(crate) fn duration_us(&self) -> Option<i64> {
        matches!(self.status.as_deref(), Some("completed" | "failed"))
            .then_some(self.last_updated_at - self.first_seen_at)
    }

    /// Every path the call touches: its locations and the paths of its diffs.
    pub(crate) fn paths(&self) -> Vec<String> {
        let mut paths: Vec<String> = Vec::new();
        let items = self
            .locations
            .iter()
            .chain(self.content.iter())
            .filter_map(Value::as_array)
            .flatten();
        for item in items {
            if let Some(p) = item.get("path").and_then(Value::as_str)
                && !paths.iter().any(|known| known == p)
            {
                paths.push(p.to_owned());
            }
        }
        paths
    }
}

/// A tool call as the UI and MCP send it: the row's own `Serialize` (what `--json` prints), and
/// beside its fields what it derives, `duration_us` and `paths` (written here only).
impl ToolCallRow {
    /// The fields a list leaves out, for a detail to give: the large ones.
    pub(crate) const LARGE_FIELDS: [&'static str; 4] =
        ["content", "locations", "raw_input", "raw_output"];

    /// The whole row with what it derives: a detail.
    pub(crate) fn detail_json(&self) -> Value {
        let mut value = serde_json::json!(self);
        self.add_derived(&mut value, self.paths());
        value
    }

    /// The row without its large fields ([`Self::LARGE_FIELDS`]), with what it derives: a row
    /// of a list. By value, so that a large field is dropped, never copied.
    pub(crate) fn into_list_json(mut self) -> Value {
        let paths = self.paths();
        for large in [
            &mut self.content,
            &mut self.locations,
            &mut self.raw_input,
            &mut self.raw_output,
        ] {
            *large = None;
        }
        let mut value = serde_json::json!(self);
        if let Some(object) = value.as_object_mut() {
            object.retain(|key, _| !Self::LARGE_FIELDS.contains(&key.as_str()));
        }
        self.add_derived(&mut value, paths);
        value
    }

    fn add_derived(&self, value: &mut Value, paths: Vec<String>) {
        if let Some(object) = value.as_object_mut() {
            object.insert("duration_us".into(), self.duration_us().into());
            object.insert("paths".into(), paths.into());
        }
    }
}

/// Every tool call of one session, in order of first appearance.
pub fn session_tool_calls(
    reader: &Reader,
    session: &SessionRef,
) -> rusqlite::Result<Vec<ToolCallRow>> {
    tool_calls(
        reader,
        &ToolFilter {
            session: Some(session.clone()),
            ..ToolFilter::default()
        },
    )
}

/// A recorded line of a connection, as it was read.
#[derive(Debug, Clone)]
pub(crate) struct ConnectionLine {
    pub seq: i64,
    pub ts: i64,
    pub direction: Direction,
    pub raw: Vec<u8>,
    pub origin: String,
    pub forwarded: bool,
}

/// Every recorded line of a connection (stderr included), in order.
pub(crate) fn connection_lines(
    reader: &Reader,
    connection_id: i64,
) -> rusqlite::Result<Vec<ConnectionLine>> {
    let conn = reader.conn();
    conn.prepare(
        "SELECT seq, ts, direction, raw, origin, forwarded FROM messages
         WHERE connection_id = ?1 ORDER BY seq",
    )?
    .query_map(params![connection_id], |r| {
        Ok(ConnectionLine {
            seq: r.get(0)?,
            ts: r.get(1)?,
            direction: direction_at(r, 2)?,
            raw: r.get(3)?,
            origin: r.get(4)?,
            forwarded: r.get(5)?,
        })
    })?
    .collect()
}

/// Which tool calls `tools` lists.
#[derive(Debug, Clone, Default)]
pub(crate) struct ToolFilter {
    pub session: Option<SessionRef>,
    pub status: Option<String>,
    pub kind: Option<String>,
}

pub(crate) fn tool_calls(
    reader: &Reader,
    filter: &ToolFilter,
) -> rusqlite::Result<Vec<ToolCallRow>> {
    let mut calls = Vec::new();
    for_each_tool_call(reader, filter, |call| calls.push(call))?;
    Ok(calls)
}

/// A request the agent made of the client (`fs/*`, `terminal/*`), with its answer.
#[derive(Debug, Clone)]
pub struct ClientRequest {
    pub seq: i64,
    pub ts: i64,
    pub method: String,
    pub raw: Vec<u8>,
    /// When the answer was read, and the answer's line.
    pub answer: Option<(i64, Vec<u8>)>,
}

/// The session's `fs/*` and `terminal/*` requests from the agent, in order, with their answers
/// (one pass over the connection's lines for each).
pub fn client_requests(
    reader: &Reader,
    session: &SessionRef,
) -> rusqlite::Result<Vec<ClientRequest>> {
    client_requests_in(reader, session, Window::default())
}

/// A session's `fs/*` and `terminal/*` requests in `window` (answered since, or unanswered).
pub fn client_requests_in(
    reader: &Reader,
    session: &SessionRef,
    window: Window,
) -> rusqlite::Result<Vec<ClientRequest>> {
    let conn = reader.conn();
    let of_client = "(method LIKE 'fs/%' OR method LIKE 'terminal/%')";
    if let Some(from) = window.from_message_id {
        return client_requests_answered_from(reader, session, from, window.open);
    }
    let mut answers: HashMap<i64, (i64, Vec<u8>)> = conn
        .prepare_cached(&format!(
            "SELECT reply_to_seq, ts, raw FROM messages
             WHERE connection_id = ?1 AND direction = 'c2a' AND kind = 'response'
               AND reply_to_seq IS NOT NULL AND {of_client}"
        ))?
        .query_map([session.connection_id], |r| {
            Ok((r.get(0)?, (r.get(1)?, r.get(2)?)))
        })?
        .collect::<Result<_, _>>()?;
    let wanted = |answer: Option<&(i64, Vec<u8>)>| match window.since {
        None => true,
        Some(since) => answer.map_or(window.open, |(ts, _)| *ts >= since),
    };
    let mut requests = Vec::new();
    let mut statement = conn.prepare_cached(&format!(
        "SELECT seq, ts, method, raw FROM messages
         WHERE connection_id = ?1 AND session_id = ?2 AND direction = 'a2c' AND kind = 'request'
           AND {of_client}
         ORDER BY seq"
    ))?;
    let mut rows = statement.query(params![session.connection_id, session.session_id])?;
    while let Some(r) = rows.next()? {
        let mut request = ClientRequest {
            seq: r.get(0)?,
            ts: r.get(1)?,
            method: r.get(2)?,
            raw: Vec::new(),
            answer: None,
        };
        let answer = answers.remove(&request.seq);
        if wanted(answer.as_ref()) {
            request.raw = r.get(3)?;
            request.answer = answer;
            requests.push(request);
        }
    }
    Ok(requests)
}

/// The session's requests to the client whose answer has a message id of `from` or more (plus,
/// when `open`, the unanswered ones), reading only those lines: the answers by rowid range, each
/// request by its seq.
fn client_requests_answered_from(
    reader: &Reader,
    session: &SessionRef,
    from: i64,
    open: bool,
) -> rusqlite::Result<Vec<ClientRequest>> {
    let conn = reader.conn();
    let of_client = "(method LIKE 'fs/%' OR method LIKE 'terminal/%')";
    let mut request_by_seq = conn.prepare_cached(&format!(
        "SELECT seq, ts, method, raw FROM messages
         WHERE connection_id = ?1 AND seq = ?2 AND session_id = ?3 AND direction = 'a2c'
           AND kind = 'request' AND {of_client}"
    ))?;
    let mut requests = Vec::new();
    let answers: Vec<(i64, i64, Vec<u8>)> = conn
        .prepare_cached(&format!(
            "SELECT reply_to_seq, ts, raw FROM messages
             WHERE id >= ?2 AND connection_id = ?1 AND direction = 'c2a' AND kind = 'response'
               AND reply_to_seq IS NOT NULL AND {of_client}"
        ))?
        .query_map(params![session.connection_id, from], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?
        .collect::<Result<_, _>>()?;
    for (seq, ts, raw) in answers {
        let request = request_by_seq
            .query_row(
                params![session.connection_id, seq, session.session_id],
                |r| {
                    Ok(ClientRequest {
                        seq: r.get(0)?,
                        ts: r.get(1)?,
                        method: r.get(2)?,
                        raw: r.get(3)?,
                        answer: Some((ts, raw.clone())),
                    })
                },
            )
            .optional()?;
        requests.extend(request);
    }
    if open {
        // Unanswered: every request of the session without an answer (once, at the end).
        let mut all = client_requests_in(reader, session, Window::default())?;
        all.retain(|r| r.answer.is_none());
        requests.extend(all);
    }
    requests.sort_by_key(|r| r.seq);
    Ok(requests)
}

/// The largest message id in the database: a look at it later reads from the next one on.
pub(crate) fn max_message_id(reader: &Reader) -> rusqlite::Result<i64> {
    reader
        .conn()
        .query_row("SELECT coalesce(max(id), 0) FROM messages", [], |r| {
            r.get(0)
        })
}

/// The request line of a session's first prompt turn.
pub(crate) fn first_prompt_request(
    reader: &Reader,
    session: &SessionRef,
) -> rusqlite::Result<Option<Vec<u8>>> {
    reader
        .conn()
        .query_row(
            "SELECT m.raw FROM prompt_turns t
             JOIN messages m ON m.connection_id = t.connection_id AND m.seq = t.request_seq
             WHERE t.connection_id = ?1 AND t.session_id = ?2
             ORDER BY t.request_seq LIMIT 1",
            params![session.connection_id, session.session_id],
            |r| r.get(0),
        )
        .optional()
}

/// One tool call of a session, by its id.
pub(crate) fn tool_call(
    reader: &Reader,
    session: &SessionRef,
    tool_call_id: &str,
) -> rusqlite::Result<Option<ToolCallRow>> {
    let mut found = None;
    for_each_tool_call_where(
        reader,
        "k.connection_id = ?1 AND k.session_id = ?2 AND k.tool_call_id = ?3",
        params![session.connection_id, session.session_id, tool_call_id],
        |call| found = Some(call),
    )?;
    Ok(found)
}

/// Which rows of a session a windowed query reads: those that changed at or after `since`
/// (microseconds), plus, when `open`, those not finished yet. `since: None` reads them all.
#[derive(Debug, Clone, Copy, Default)]
pub struct Window {
    pub since: Option<i64>,
    pub open: bool,
    /// Where the window is a look after an earlier one: the first message id that look had not
    /// seen. Queries over the messages table then read from that id on (a range of the rowid)
    /// instead of every line of the connection.
    pub from_message_id: Option<i64>,
}

/// A session's tool calls in `window` (changed since, or not completed or failed), in order of
/// first appearance; without `raw_input` and `raw_output` unless `with_io`.
pub(crate) fn session_tool_calls_in(
    reader: &Reader,
    session: &SessionRef,
    window: Window,
    with_io: bool,
) -> rusqlite::Result<Vec<ToolCallRow>> {
    let mut calls = Vec::new();
    let io = if with_io { Columns::All } else { Columns::NoIo };
    for_each_tool_call_columns_where(
        reader,
        io,
        "k.connection_id = ?1 AND k.session_id = ?2
           AND (?3 IS NULL OR k.last_updated_at >= ?3
                OR (?4 AND coalesce(k.status, '') NOT IN ('completed', 'failed')))",
        "",
        params![
            session.connection_id,
            session.session_id,
            window.since,
            window.open
        ],
        |call| calls.push(call),
    )?;
    Ok(calls)
}

/// The ids of a session's tool calls.
pub(crate) fn session_tool_call_ids(
    reader: &Reader,
    session: &SessionRef,
) -> rusqlite::Result<std::collections::HashSet<String>> {
    reader
        .conn()
        .prepare_cached(
            "SELECT tool_call_id FROM tool_calls WHERE connection_id = ?1 AND session_id = ?2",
        )?
        .query_map(params![session.connection_id, session.session_id], |r| {
            r.get(0)
        })?
        .collect()
}

/// The tool calls `filter` selects, each handed to `each` as it is read.
pub(crate) fn for_each_tool_call(
    reader: &Reader,
    filter: &ToolFilter,
    each: impl FnMut(ToolCallRow),
) -> rusqlite::Result<()> {
    let session = filter.session.as_ref();
    for_each_tool_call_where(
        reader,
        "(?1 IS NULL OR k.connection_id = ?1) AND (?2 IS NULL OR k.session_id = ?2)
           AND (?3 IS NULL OR k.status = ?3) AND (?4 IS NULL OR k.kind = ?4)",
        params![
            session.map(|s| s.connection_id),
            session.map(|s| &s.session_id),
            filter.status,
            filter.kind
        ],
        each,
    )
}

/// Which of a tool call's columns are read.
#[derive(Clone, Copy)]
pub(super) enum Columns {
    All,
    /// Not `raw_input` and `raw_output` (the arguments and result, often the largest).
    NoIo,
}

/// The tool calls (`k`) matching `condition`, in order of first appearance.
fn for_each_tool_call_where(
    reader: &Reader,
    condition: &str,
    values: impl rusqlite::Params,
    each: impl FnMut(ToolCallRow),
) -> rusqlite::Result<()> {
    for_each_tool_call_columns_where(reader, Columns::All, condition, "", values, each)
}

/// The tool calls (`k`) matching `condition`, in order of first appearance; `tail` follows the
/// order (`LIMIT ?5 OFFSET ?6` for a page).
pub(super) fn for_each_tool_call_columns_where(
    reader: &Reader,
    columns: Columns,
    condition: &str,
    tail: &str,
    values: impl rusqlite::Params,
    mut each: impl FnMut(ToolCallRow),
) -> rusqlite::Result<()> {
    let conn = reader.conn();
    let io = match columns {
        Columns::All => "k.raw_input, k.raw_output",
        Columns::NoIo => "NULL, NULL",
    };

    let mut statement = conn.prepare_cached(&format!(
        "SELECT k.connection_id, k.session_id, k.tool_call_id, k.title, k.kind, k.status, k.content,
                k.locations, {io}, k.created_by, k.first_seen_at,
                k.last_updated_at, k.update_count,
                (SELECT min(m.seq) FROM tool_call_events e JOIN messages m ON m.id = e.message_id
                  WHERE e.tool_call_row = k.id)
         FROM tool_calls k
         WHERE {condition}
         ORDER BY k.first_seen_at, k.id {tail}"
    ))?;
    let mut rows = statement.query(values)?;
    while let Some(r) = rows.next()? {
        each(ToolCallRow {
            connection_id: r.get(0)?,
            session_id: r.get(1)?,
            tool_call_id: r.get(2)?,
            title: r.get(3)?,
            kind: r.get(4)?,
            status: r.get(5)?,
            content: parse_json(r.get(6)?),
            locations: parse_json(r.get(7)?),
            raw_input: parse_json(r.get(8)?),
            raw_output: parse_json(r.get(9)?),
            created_by: r.get(10)?,
            first_seen_at: r.get(11)?,
            last_updated_at: r.get(12)?,
            update_count: r.get(13)?,
            first_seq: r.get(14)?,
        });
    }
    Ok(())
}

#[derive(Debug, Clone, Serialize)]
pub struct PermissionRow {
    /// The tool call it asks about: v1's `toolCall`, or the v2 subject's tool call.
    pub tool_call_id: Option<String>,
    /// v2: the prompt's `title` and `description` (`None` for a v1 request).
    pub title: Option<String>,
    pub description: Option<String>,
    /// v2: what the request is about (`{"type": "command", ...}`, `{"type": "tool_call", ...}`,
    /// or another type), as it came.
    pub subject: Option<Value>,
    /// The subject in one line ([`subject_summary`]), for a list or a log.
    pub subject_summary: Option<String>,
    pub request_seq: i64,
    pub requested_at: i64,
    pub decided_at: Option<i64>,
    pub decision_us: Option<i64>,
    pub options: Option<Value>,
    pub outcome: Option<String>,
    pub option_id: Option<String>,
    pub option_kind: Option<String>,
    pub decided_by: Option<String>,
    pub policy_rule: Option<String>,
    pub policy_decision: Option<String>,
    pub policy_reason: Option<String>,
    pub policy_shadow: bool,
    /// The digest of the policy files that decided (or evaluated) it.
    pub policy_hash: Option<String>,
}

/// A v2 permission subject in one line: `command: cargo test (in /abs/project)`, `tool call:
/// call_2`, or a type acptap has no words for as `TYPE: {the rest as JSON}`. Not made safe for a
/// terminal or a page: each view does that as it prints it.
pub(crate) fn subject_summary(subject: &Value) -> String {
    let text = |name: &str| subject.get(name).and_then(Value::as_str);
    match subject.get("type").and_then(Value::as_str) {
        Some("command") => {
            let mut line = format!("command: {}", text("command").unwrap_or("?"));
            if let Some(cwd) = text("cwd") {
                line.push_str(&format!(" (in {cwd})"));
            }
            line
        }
        Some("tool_call") => {
            let call = subject.get("toolCall");
            let id = call
                .and_then(|c| c.get("toolCallId"))
                .and_then(Value::as_str)
                .unwrap_or("?");
            match call.and_then(|c| c.get("title")).and_then(Value::as_str) {
                Some(title) => format!("tool call: {id} ({title})"),
                None => format!("tool call: {id}"),
            }
        }
        Some(other) => {
            let mut rest = subject.clone();
            if let Some(object) = rest.as_object_mut() {
                object.remove("type");
            }
            format!("{other}: {rest}")
        }
        None => format!("subject: {subject}"),
    }
}

pub fn permission_requests(
    reader: &Reader,
    session: &SessionRef,
) -> rusqlite::Result<Vec<PermissionRow>> {
    permission_rows(
        reader,
        session,
        Window::default(),
        "options",
        RowRange::default(),
    )
}

/// A session's permission requests in `window` (decided since, or undecided), without the
/// options offered (`options` is `None`).
pub(crate) fn permission_requests_in(
    reader: &Reader,
    session: &SessionRef,
    window: Window,
) -> rusqlite::Result<Vec<PermissionRow>> {
    permission_rows(reader, session, window, "NULL", RowRange::default())
}

/// Which permission requests of a session `permission_rows` reads, beyond its window: those
/// with `request_seq` in `seqs`, `limit` of them (negative: all) after skipping `offset`.
#[derive(Debug, Clone)]
pub(super) struct RowRange {
    pub seqs: std::ops::Range<i64>,
    pub limit: i64,
    pub offset: i64,
}

impl Default for RowRange {
    fn default() -> Self {
        RowRange {
            seqs: 0..i64::MAX,
            limit: -1,
            offset: 0,
        }
    }
}

/// A session's permission requests with `request_seq` in `seqs` (the turns a page shows).
pub(crate) fn permission_requests_between(
    reader: &Reader,
    session: &SessionRef,
    seqs: std::ops::Range<i64>,
) -> rusqlite::Result<Vec<PermissionRow>> {
    let range = RowRange {
        seqs,
        ..RowRange::default()
    };
    permission_rows(reader, session, Window::default(), "options", range)
}

pub(super) fn permission_rows(
    reader: &Reader,
    session: &SessionRef,
    window: Window,
    options: &str,
    range: RowRange,
) -> rusqlite::Result<Vec<PermissionRow>> {
    let conn = reader.conn();
    conn.prepare_cached(&format!(
        "SELECT tool_call_id, request_seq, requested_at, decided_at, decision_us, {options}, outcome,
                option_id, option_kind, decided_by, policy_rule, policy_decision, policy_reason,
                policy_shadow, policy_hash, title, description, subject
         FROM permission_requests WHERE connection_id = ?1 AND session_id = ?2
           AND (?3 IS NULL OR decided_at >= ?3 OR (?4 AND decided_at IS NULL))
           AND request_seq >= ?5 AND request_seq < ?6
         ORDER BY request_seq LIMIT ?7 OFFSET ?8"
    ))?
    .query_map(
        params![
            session.connection_id,
            session.session_id,
            window.since,
            window.open,
            range.seqs.start,
            range.seqs.end,
            range.limit,
            range.offset
        ],
        |r| {
            let subject = parse_json(r.get(17)?);
            Ok(PermissionRow {
                tool_call_id: r.get(0)?,
                title: r.get(15)?,
                description: r.get(16)?,
                subject_summary: subject.as_ref().map(subject_summary),
                subject,
                request_seq: r.get(1)?,
                requested_at: r.get(2)?,
                decided_at: r.get(3)?,
                decision_us: r.get(4)?,
                options: parse_json(r.get(5)?),
                outcome: r.get(6)?,
                option_id: r.get(7)?,
                option_kind: r.get(8)?,
                decided_by: r.get(9)?,
                policy_rule: r.get(10)?,
                policy_decision: r.get(11)?,
                policy_reason: r.get(12)?,
                policy_shadow: r.get::<_, Option<bool>>(13)?.unwrap_or(false),
                policy_hash: r.get(14)?,
            })
        },
    )?
    .collect()
}

/// A recorded line of a session, for rendering its text.
#[derive(Debug, Clone)]
pub(crate) struct SessionLine {
    pub seq: i64,
    pub direction: Direction,
    pub kind: MessageKind,
    pub method: Option<String>,
    /// `None` for the lines that name no session but may be about this one (see
    /// [`for_each_session_line`]).
    pub session_id: Option<String>,
    pub raw: Vec<u8>,
}

/// The methods whose lines name no session but speak of something of one: the request a
/// `$/cancel_request` cancels, the elicitation an `elicitation/complete` ends. A view reads them
/// with the session's lines and keeps those about the session.
pub(crate) const SESSIONLESS_METHODS: [&str; 2] = ["$/cancel_request", "elicitation/complete"];

/// The session's notifications and requests (not responses) with `seq` in `seqs`, in order,
/// each handed to `each` as it is read (a session's lines can be gigabytes); with them, the
/// connection's lines of [`SESSIONLESS_METHODS`] that name no session (`session_id: None`).
pub(crate) fn for_each_session_line(
    reader: &Reader,
    session: &SessionRef,
    seqs: std::ops::Range<i64>,
    mut each: impl FnMut(SessionLine),
) -> rusqlite::Result<()> {
    let conn = reader.conn();
    let sessionless = SESSIONLESS_METHODS.map(|m| format!("'{m}'")).join(", ");
    let mut statement = conn.prepare_cached(&format!(
        "SELECT seq, direction, kind, method, session_id, raw FROM messages
         WHERE connection_id = ?1 AND seq >= ?3 AND seq < ?4
           AND kind IN ('request', 'notification')
           AND (session_id = ?2 OR (session_id IS NULL AND method IN ({sessionless})))
         ORDER BY seq"
    ))?;
    let mut rows = statement.query(params![
        session.connection_id,
        session.session_id,
        seqs.start,
        seqs.end
    ])?;
    while let Some(r) = rows.next()? {
        each(SessionLine {
            seq: r.get(0)?,
            direction: direction_at(r, 1)?,
            kind: kind_at(r, 2)?,
            method: r.get(3)?,
            session_id: r.get(4)?,
            raw: r.get(5)?,
        });
    }
    Ok(())
}

/// The answer to the request recorded at `request_seq`: the first response after it that
/// names it. Read from the request on (by the connection's seq index), so an answer that
/// follows soon costs a few rows.
pub(crate) fn answer_to(
    reader: &Reader,
    connection_id: i64,
    request_seq: i64,
) -> rusqlite::Result<Option<MessageRow>> {
    reader
        .conn()
        .prepare_cached(&format!(
            "SELECT {MESSAGE_COLUMNS} FROM messages
             WHERE connection_id = ?1 AND seq > ?2 AND reply_to_seq = ?2 AND kind = 'response'
             ORDER BY seq LIMIT 1"
        ))?
        .query_row(params![connection_id, request_seq], message_row)
        .optional()
}

/// A recorded request, as a cancellation names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct RequestRef {
    pub seq: i64,
    pub method: Option<String>,
    pub session_id: Option<String>,
}

/// The request a `$/cancel_request` recorded at `cancel_seq`, going `direction`, names by its
/// JSON-RPC id (`rpc_id`, as JSON text): the latest request before it sent the same way. Ids
/// are per direction, and a peer cancels only a request it issued itself.
pub(crate) fn cancelled_request(
    reader: &Reader,
    connection_id: i64,
    cancel_seq: i64,
    direction: Direction,
    rpc_id: &str,
) -> rusqlite::Result<Option<RequestRef>> {
    reader
        .conn()
        .prepare_cached(
            "SELECT seq, method, session_id FROM messages
             WHERE connection_id = ?1 AND seq < ?2 AND direction = ?3 AND kind = 'request'
               AND rpc_id = ?4
             ORDER BY seq DESC LIMIT 1",
        )?
        .query_row(
            params![connection_id, cancel_seq, direction.as_str(), rpc_id],
            |r| {
                Ok(RequestRef {
                    seq: r.get(0)?,
                    method: r.get(1)?,
                    session_id: r.get(2)?,
                })
            },
        )
        .optional()
}

/// A recorded permission request, with what is needed to decide it again.
#[derive(Debug, Clone)]
pub(crate) struct RecordedPermission {
    pub connection_id: i64,
    pub session_id: Option<String>,
    pub tool_call_id: Option<String>,
    pub request_seq: i64,
    /// The request line, as recorded.
    pub request: Vec<u8>,
    /// When acptap read the request (µs since the epoch).
    pub requested_at: i64,
    pub cwd: Option<String>,
    pub agent_name: Option<String>,
    /// The connection's negotiated protocol version, which decides the request's shape.
    pub protocol_version: Option<crate::protocol::Version>,
    pub outcome: Option<String>,
    pub option_kind: Option<String>,
    pub decided_by: Option<String>,
    /// The agent's earlier lines about the same tool call (session/update), in order; read
    /// only for requests recorded without their policy input.
    pub earlier_updates: Vec<Vec<u8>>,
    /// What the live policy decided on (JSON of `policy::DecisionInput`), when one did.
    pub policy_input: Option<String>,
}

/// Which answered requests `policy suggest` learns from.
#[derive(Debug, Clone, Default)]
pub(crate) struct AnsweredFilter {
    /// Asked at or after this time (µs since the epoch).
    pub since: Option<i64>,
    /// The agent's name (from `initialize`) contains this, in any case.
    pub agent: Option<String>,
    /// Only these sessions (none: every session).
    pub sessions: Vec<SessionRef>,
}

/// The permission requests the user answered (not a policy: `decided_by` is `client`, a shadow
/// policy's included, or `cancelled`), oldest first, each with whether `filter` keeps it.
pub(crate) fn answered_by_user(
    reader: &Reader,
    filter: &AnsweredFilter,
) -> rusqlite::Result<Vec<(RecordedPermission, bool)>> {
    let agent = filter.agent.as_deref().map(str::to_lowercase);
    let kept = |r: &RecordedPermission| {
        filter.since.is_none_or(|since| r.requested_at >= since)
            && (filter.sessions.is_empty()
                || filter.sessions.iter().any(|s| {
                    s.connection_id == r.connection_id
                        && Some(&s.session_id) == r.session_id.as_ref()
                }))
            && agent.as_deref().is_none_or(|want| {
                r.agent_name
                    .as_deref()
                    .is_some_and(|name| name.to_lowercase().contains(want))
            })
    };
    Ok(recorded_permissions(reader, None)?
        .into_iter()
        .filter(|r| matches!(r.decided_by.as_deref(), Some("client" | "cancelled")))
        .map(|r| {
            let keep = kept(&r);
            (r, keep)
        })
        .collect())
}

/// Every recorded permission request of one session, or of all.
pub(crate) fn recorded_permissions(
    reader: &Reader,
    session: Option<&SessionRef>,
) -> rusqlite::Result<Vec<RecordedPermission>> {
    let conn = reader.conn();
    let mut rows: Vec<RecordedPermission> = conn
        .prepare(
            "SELECT p.connection_id, p.session_id, p.tool_call_id, p.request_seq, m.raw, s.cwd,
                    c.agent_info, p.outcome, p.option_kind, p.decided_by,
                    p.policy_input, c.protocol_version, m.ts
             FROM permission_requests p
             JOIN messages m ON m.id = p.request_message_id
             JOIN connections c ON c.id = p.connection_id
             LEFT JOIN sessions s ON s.connection_id = p.connection_id AND s.session_id = p.session_id
             WHERE (?1 IS NULL OR p.connection_id = ?1) AND (?2 IS NULL OR p.session_id = ?2)
             ORDER BY p.connection_id, p.request_seq",
        )?
        .query_map(
            params![session.map(|s| s.connection_id), session.map(|s| &s.session_id)],
            |r| {
                let agent_info = parse_json(r.get(6)?);
                Ok(RecordedPermission {
                    connection_id: r.get(0)?,
                    session_id: r.get(1)?,
                    tool_call_id: r.get(2)?,
                    request_seq: r.get(3)?,
                    request: r.get(4)?,
                    requested_at: r.get(12)?,
                    cwd: r.get(5)?,
                    agent_name: agent_info
                        .as_ref()
                        .and_then(|i| i.get("name"))
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    outcome: r.get(7)?,
                    option_kind: r.get(8)?,
                    decided_by: r.get(9)?,
                    earlier_updates: Vec::new(),
                    policy_input: r.get(10)?,
                    protocol_version: parse_json(r.get(11)?)
                        .as_ref()
                        .and_then(crate::protocol::Version::from_value),
                })
            },
        )?
        .collect::<Result<_, _>>()?;
    // The agent's tool-call updates of each connection in one pass, grouped by tool call (a
    // query per request scanned the whole session each time: quadratic in its length).
    let wanted: std::collections::BTreeSet<i64> = rows
        .iter()
        .filter(|r| r.policy_input.is_none() && r.tool_call_id.is_some())
        .map(|r| r.connection_id)
        .collect();
    let mut updates = conn.prepare(
        "SELECT seq, session_id, tool_call_id, raw FROM messages
         WHERE connection_id = ?1 AND direction = 'a2c' AND method = 'session/update'
           AND tool_call_id IS NOT NULL
         ORDER BY seq",
    )?;
    type Key = (Option<String>, String);
    for connection_id in wanted {
        let mut by_call: std::collections::HashMap<Key, Vec<(i64, Vec<u8>)>> =
            std::collections::HashMap::new();
        let found = updates.query_map([connection_id], |r| {
            Ok((r.get::<_, i64>(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?;
        for row in found {
            let (seq, session, call, raw): (i64, Option<String>, String, Vec<u8>) = row?;
            by_call.entry((session, call)).or_default().push((seq, raw));
        }
        for row in rows
            .iter_mut()
            .filter(|r| r.connection_id == connection_id && r.policy_input.is_none())
        {
            let Some(call) = &row.tool_call_id else {
                continue;
            };
            if let Some(lines) = by_call.get(&(row.session_id.clone(), call.clone())) {
                row.earlier_updates = lines
                    .iter()
                    .take_while(|(seq, _)| *seq < row.request_seq)
                    .map(|(_, raw)| raw.clone())
                    .collect();
            }
        }
    }
    Ok(rows)
}

/// One recorded line of a connection, with everything the recorder stored about it. Its
/// `Serialize` leaves the line itself out: a view shows it as text, cut to its measure.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct MessageRow {
    pub seq: i64,
    pub ts: i64,
    pub direction: Direction,
    pub kind: MessageKind,
    pub method: Option<String>,
    pub rpc_id: Option<String>,
    pub size: i64,
    #[serde(skip)]
    pub raw: Vec<u8>,
    pub reply_to_seq: Option<i64>,
    pub session_id: Option<String>,
    pub origin: String,
    pub forwarded: bool,
    pub truncated: bool,
}

/// The columns `message_row` reads, in its order.
pub(super) const MESSAGE_COLUMNS: &str = "seq, ts, direction, kind, method, rpc_id, size, raw, \
     reply_to_seq, session_id, origin, forwarded, truncated";

/// How many columns `MESSAGE_COLUMNS` names: a statement's next column is at this index.
pub(super) const MESSAGE_COLUMN_COUNT: usize = 13;

/// Column `i`, a direction as the recorder writes it.
fn direction_at(r: &Row, i: usize) -> rusqlite::Result<Direction> {
    let name = r.get_ref(i)?.as_str()?;
    Direction::from_recorded(name).ok_or_else(|| unknown_name(i, "direction", name))
}

/// Column `i`, a message kind as the recorder writes it.
fn kind_at(r: &Row, i: usize) -> rusqlite::Result<MessageKind> {
    let name = r.get_ref(i)?.as_str()?;
    MessageKind::from_recorded(name).ok_or_else(|| unknown_name(i, "kind", name))
}

fn unknown_name(i: usize, what: &str, name: &str) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(
        i,
        rusqlite::types::Type::Text,
        format!("no acptap records a {what} {name:?}").into(),
    )
}

/// A row of `SELECT {MESSAGE_COLUMNS}` as a `MessageRow`.
pub(super) fn message_row(r: &Row) -> rusqlite::Result<MessageRow> {
    Ok(MessageRow {
        seq: r.get(0)?,
        ts: r.get(1)?,
        direction: direction_at(r, 2)?,
        kind: kind_at(r, 3)?,
        method: r.get(4)?,
        rpc_id: r.get(5)?,
        size: r.get(6)?,
        raw: r.get(7)?,
        reply_to_seq: r.get(8)?,
        session_id: r.get(9)?,
        origin: r.get(10)?,
        forwarded: r.get(11)?,
        truncated: r.get(12)?,
    })
}

/// The first `limit` lines of a connection with `seq` in `seqs`, in order.
pub(crate) fn connection_messages(
    reader: &Reader,
    connection_id: i64,
    seqs: std::ops::Range<i64>,
    limit: usize,
) -> rusqlite::Result<Vec<MessageRow>> {
    reader
        .conn()
        .prepare(&format!(
            "SELECT {MESSAGE_COLUMNS}
             FROM messages WHERE connection_id = ?1 AND seq >= ?3 AND seq < ?4
             ORDER BY seq LIMIT ?2"
        ))?
        .query_map(
            params![
                connection_id,
                i64::try_from(limit).unwrap_or(i64::MAX),
                seqs.start,
                seqs.end
            ],
            message_row,
        )?
        .collect()
}

/// When a connection started (µs since the epoch); `None` when there is no such connection.
pub(crate) fn connection_started_at(
    reader: &Reader,
    connection_id: i64,
) -> rusqlite::Result<Option<i64>> {
    reader
        .conn()
        .query_row(
            "SELECT started_at FROM connections WHERE id = ?1",
            [connection_id],
            |r| r.get(0),
        )
        .optional()
}

/// Calls `each` with every JSON-RPC line of a connection (requests, responses, notifications,
/// batches; not stderr, not invalid lines), in order, one at a time.
pub(crate) fn for_each_protocol_line(
    reader: &Reader,
    connection_id: i64,
    mut each: impl FnMut(MessageRow),
) -> rusqlite::Result<()> {
    let mut stmt = reader.conn().prepare(&format!(
        "SELECT {MESSAGE_COLUMNS} FROM messages
         WHERE connection_id = ?1 AND direction IN ('c2a', 'a2c')
           AND kind IN ('request', 'response', 'notification', 'batch')
         ORDER BY seq"
    ))?;
    let mut rows = stmt.query([connection_id])?;
    while let Some(r) = rows.next()? {
        each(message_row(r)?);
    }
    Ok(())
}

/// When a connection started, and the signal that ended its agent (if one did).
pub(crate) fn connection_start_and_signal(
    reader: &Reader,
    connection_id: i64,
) -> rusqlite::Result<(Option<i64>, Option<i64>)> {
    reader.conn().query_row(
        "SELECT started_at, exit_signal FROM connections WHERE id = ?1",
        [connection_id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

/// When the newest recorded line of a connection was read (by its seq, the last one read).
pub(crate) fn newest_line_time(
    reader: &Reader,
    connection_id: i64,
) -> rusqlite::Result<Option<i64>> {
    reader
        .conn()
        .query_row(
            "SELECT ts FROM messages WHERE connection_id = ?1 ORDER BY seq DESC LIMIT 1",
            [connection_id],
            |r| r.get(0),
        )
        .optional()
}

/// Every session a connection recorded (created, loaded, or only named), in order.
pub(crate) fn connection_sessions(
    reader: &Reader,
    connection_id: i64,
) -> rusqlite::Result<Vec<String>> {
    reader
        .conn()
        .prepare(
            "SELECT session_id FROM sessions WHERE connection_id = ?1 ORDER BY created_at, id",
        )?
        .query_map([connection_id], |r| r.get(0))?
        .collect()
}

/// The request that opened the session (`session/new`, `session/load`, ...): its raw line, if
/// recorded.
pub(crate) fn session_opening_request(
    reader: &Reader,
    session: &SessionRef,
) -> rusqlite::Result<Option<Vec<u8>>> {
    reader
        .conn()
        .query_row(
            "SELECT request.raw FROM messages response
             JOIN messages request ON request.connection_id = response.connection_id
                                  AND request.seq = response.reply_to_seq
             WHERE response.connection_id = ?1 AND response.kind = 'response'
               AND response.method IN ('session/new', 'session/load', 'session/resume', 'session/fork')
               AND (response.session_id = ?2 OR request.session_id = ?2)
             ORDER BY response.seq LIMIT 1",
            params![session.connection_id, session.session_id],
            |r| r.get(0),
        )
        .optional()
}

/// A prompt turn's request seq, its request line and its response line (if answered).
pub(crate) type TurnLines = (i64, Vec<u8>, Option<Vec<u8>>);

/// The prompt turns of a session in `window` (ended since, or open) whose request mentions
/// `in_request` or whose response mentions `in_response` (a `_meta` key, `usage`): the
/// request's seq, the request's line and the response's line. The rest are not read.
pub(crate) fn turn_lines_mentioning(
    reader: &Reader,
    session: &SessionRef,
    in_request: &str,
    in_response: &str,
    window: Window,
) -> rusqlite::Result<Vec<TurnLines>> {
    reader
        .conn()
        .prepare(
            "SELECT t.request_seq, request.raw, response.raw FROM prompt_turns t
             JOIN messages request ON request.connection_id = t.connection_id
                                  AND request.seq = t.request_seq
             LEFT JOIN messages response ON response.connection_id = t.connection_id
                                        AND response.seq = t.response_seq
             WHERE t.connection_id = ?1 AND t.session_id = ?2
               AND (?5 IS NULL OR t.ended_at >= ?5 OR (?6 AND t.ended_at IS NULL))
               AND (instr(request.raw, CAST(?3 AS BLOB)) OR instr(response.raw, CAST(?4 AS BLOB)))
             ORDER BY t.request_seq",
        )?
        .query_map(
            params![
                session.connection_id,
                session.session_id,
                in_request,
                in_response,
                window.since,
                window.open
            ],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?
        .collect()
}

/// The sessions a connection created or loaded (not merely named), in order.
pub(crate) fn announced_sessions(
    reader: &Reader,
    connection_id: i64,
) -> rusqlite::Result<Vec<String>> {
    reader
        .conn()
        .prepare(
            "SELECT session_id FROM sessions WHERE connection_id = ?1 AND origin != 'seen'
             ORDER BY created_at, id",
        )?
        .query_map([connection_id], |r| r.get(0))?
        .collect()
}

/// How many lines are recorded, over every connection.
pub fn message_count(reader: &Reader) -> rusqlite::Result<i64> {
    reader
        .conn()
        .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
}

/// A connection `prune` may delete.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PrunableConnection {
    pub id: i64,
    pub started_at: i64,
    pub label: Option<String>,
    /// `ended` or `interrupted`: a live connection is never among them.
    pub state: &'static str,
}

/// The connections started before `before` (µs since the epoch) that are not being recorded.
pub(crate) fn prunable_connections(
    reader: &Reader,
    before: i64,
) -> rusqlite::Result<Vec<PrunableConnection>> {
    let rows: Vec<(i64, i64, Option<String>, &'static str)> = reader
        .conn()
        .prepare(
            "SELECT id, started_at, label, ended_at, proxy_pid, proxy_identity FROM connections
             WHERE started_at < ?1 ORDER BY id",
        )?
        .query_map([before], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                connection_state(r.get(3)?, r.get(4)?, r.get(5)?),
            ))
        })?
        .collect::<Result<_, _>>()?;
    Ok(rows
        .into_iter()
        .filter(|(.., state)| *state != "live")
        .map(|(id, started_at, label, state)| PrunableConnection {
            id,
            started_at,
            label,
            state,
        })
        .collect())
}

/// How many lines a connection recorded.
/// How many lines of a connection have `seq` in `seqs`.
pub(crate) fn connection_message_count(
    reader: &Reader,
    connection_id: i64,
    seqs: std::ops::Range<i64>,
) -> rusqlite::Result<i64> {
    reader.conn().query_row(
        "SELECT count(*) FROM messages WHERE connection_id = ?1 AND seq >= ?2 AND seq < ?3",
        params![connection_id, seqs.start, seqs.end],
        |r| r.get(0),
    )
}
