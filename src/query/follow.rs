//! Following a database: the events committed since the last look (the query side of
//! `acptap tail`).
//!
//! Each poll asks for what is newer than the last event it returned (tool-call events by their
//! id; decisions and turn ends by the id of the message that ended them), so it sees every
//! committed event exactly once, whichever process recorded it. Ids, not times: several processes
//! commit one at a time, so ids follow commit order, while recorded times may not (an imported
//! transcript keeps its own).

use rusqlite::params;
use serde::Serialize;

use super::Reader;

#[derive(Debug, Clone, Default, Serialize)]
pub struct Event {
    pub ts: i64,
    /// tool_call_started | tool_call_updated | tool_call_finished | permission_decided | turn_ended
    pub event: &'static str,
    pub connection_id: i64,
    pub session_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub option_kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
}

/// Where the last poll stopped.
#[derive(Debug, Clone, Default)]
pub struct Cursor {
    event_id: i64,
    message_id: i64,
}

impl Cursor {
    /// A cursor at the end of what is recorded now: only later events will be seen.
    pub(crate) fn at_end(reader: &Reader) -> rusqlite::Result<Cursor> {
        let conn = reader.conn();
        let max =
            |sql: &str| conn.query_row(sql, [], |r| Ok(r.get::<_, Option<i64>>(0)?.unwrap_or(0)));
        Ok(Cursor {
            event_id: max("SELECT max(id) FROM tool_call_events")?,
            message_id: max("SELECT max(id) FROM messages")?,
        })
    }

    /// The events committed since the last poll, in time order.
    pub(crate) fn poll(&mut self, reader: &Reader) -> rusqlite::Result<Vec<Event>> {
        let conn = reader.conn();
        let mut events = Vec::new();
        // Up to here this time: a message committed while this poll runs is seen by the next.
        let newest: Option<i64> =
            conn.query_row("SELECT max(id) FROM messages", [], |r| r.get(0))?;
        let newest = newest.unwrap_or(self.message_id);
        let mut stmt = conn.prepare_cached(
            "SELECT e.id, e.ts, t.connection_id, t.session_id, t.tool_call_id, t.kind, t.title, e.status,
                    e.changed,
                    NOT EXISTS (SELECT 1 FROM tool_call_events p WHERE p.tool_call_row = e.tool_call_row AND p.id < e.id)
             FROM tool_call_events e JOIN tool_calls t ON t.id = e.tool_call_row
             WHERE e.id > ?1 ORDER BY e.id",
        )?;
        let rows = stmt.query_map(params![self.event_id], |r| {
            let changed: String = r.get(8)?;
            let status: Option<String> = r.get(7)?;
            let first: bool = r.get(9)?;
            let finished = changed.contains("\"status\"")
                && matches!(status.as_deref(), Some("completed" | "failed"));
            Ok((
                r.get::<_, i64>(0)?,
                Event {
                    ts: r.get(1)?,
                    event: if first {
                        "tool_call_started"
                    } else if finished {
                        "tool_call_finished"
                    } else {
                        "tool_call_updated"
                    },
                    connection_id: r.get(2)?,
                    session_id: r.get(3)?,
                    tool_call_id: r.get(4)?,
                    kind: r.get(5)?,
                    title: r.get(6)?,
                    status,
                    ..Event::default()
                },
            ))
        })?;
        for row in rows {
            let (id, event) = row?;
            self.event_id = id;
            events.push(event);
        }
        let mut stmt = conn.prepare_cached(
            "SELECT p.decided_at, p.connection_id, p.session_id, p.tool_call_id,
                    coalesce(t.kind, CASE json_extract(p.subject, '$.type')
                                     WHEN 'command' THEN 'execute' END),
                    coalesce(p.title, t.title),
                    p.decided_by, p.option_kind, p.outcome
             FROM messages m
             JOIN permission_requests p ON p.response_message_id = m.id
             LEFT JOIN tool_calls t ON t.connection_id = p.connection_id AND t.session_id = p.session_id
                  AND t.tool_call_id = p.tool_call_id
             WHERE m.id > ?1 AND m.id <= ?2 ORDER BY m.id",
        )?;
        let decisions = stmt.query_map(params![self.message_id, newest], |r| {
            Ok(Event {
                ts: r.get(0)?,
                event: "permission_decided",
                connection_id: r.get(1)?,
                session_id: r.get(2)?,
                tool_call_id: r.get(3)?,
                kind: r.get(4)?,
                title: r.get(5)?,
                decided_by: r.get(6)?,
                option_kind: r.get(7)?,
                status: r.get(8)?,
                ..Event::default()
            })
        })?;
        events.extend(decisions.collect::<Result<Vec<_>, _>>()?);
        let mut stmt = conn.prepare_cached(
            "SELECT t.ended_at, t.connection_id, t.session_id, coalesce(t.stop_reason, 'error')
             FROM messages m
             JOIN prompt_turns t ON t.connection_id = m.connection_id AND t.response_seq = m.seq
             WHERE m.id > ?1 AND m.id <= ?2
               AND ((m.kind = 'response' AND m.method = 'session/prompt')
                    OR (m.kind = 'notification' AND m.method = 'session/update'))
             ORDER BY m.id",
        )?;
        let turns = stmt.query_map(params![self.message_id, newest], |r| {
            Ok(Event {
                ts: r.get(0)?,
                event: "turn_ended",
                connection_id: r.get(1)?,
                session_id: r.get(2)?,
                stop_reason: r.get(3)?,
                ..Event::default()
            })
        })?;
        events.extend(turns.collect::<Result<Vec<_>, _>>()?);
        self.message_id = newest;
        events.sort_by_key(|e| e.ts);
        Ok(events)
    }
}
