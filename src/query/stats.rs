//! Counting what was recorded (the query side of `acptap stats`): tool calls per kind and
//! status with their durations, permission decisions by who decided, turns by stop reason, bytes
//! per direction.

use rusqlite::params;
use serde::Serialize;

use super::Reader;
use super::SessionRef;

/// Which recordings to count.
#[derive(Debug, Clone)]
pub enum Scope {
    Session(SessionRef),
    /// Connections started at or after this time (µs since the epoch).
    Since(i64),
}

#[derive(Debug, Serialize)]
pub struct ToolStat {
    pub kind: String,
    pub status: String,
    pub count: i64,
    pub avg_us: Option<i64>,
    pub max_us: Option<i64>,
}

#[derive(Debug, Serialize)]
pub struct Count {
    pub key: String,
    pub count: i64,
}

#[derive(Debug, Serialize)]
pub struct ByteStat {
    pub direction: String,
    pub messages: i64,
    pub bytes: i64,
}

#[derive(Debug, Serialize)]
pub struct Stats {
    pub sessions: i64,
    pub tools: Vec<ToolStat>,
    pub permissions: Vec<Count>,
    pub stop_reasons: Vec<Count>,
    pub turns: i64,
    pub bytes: Vec<ByteStat>,
}

/// The SQL condition for a scope, over a table with `connection_id` (and `session_id` when
/// `with_session`), and its two parameters.
fn scope_filter(scope: &Scope, alias: &str, with_session: bool) -> (String, i64, Option<String>) {
    match scope {
        Scope::Session(s) if with_session => (
            format!("{alias}.connection_id = ?1 AND {alias}.session_id = ?2"),
            s.connection_id,
            Some(s.session_id.clone()),
        ),
        Scope::Session(s) => (
            format!("{alias}.connection_id = ?1 AND ?2 IS NULL"),
            s.connection_id,
            None,
        ),
        Scope::Since(t) => (
            format!(
                "{alias}.connection_id IN (SELECT id FROM connections WHERE started_at >= ?1) AND ?2 IS NULL"
            ),
            *t,
            None,
        ),
    }
}

pub fn stats(reader: &Reader, scope: &Scope) -> rusqlite::Result<Stats> {
    let conn = reader.conn();
    let query_counts = |sql: &str, with_session: bool| -> rusqlite::Result<Vec<Count>> {
        let (filter, a, b) = scope_filter(scope, "x", with_session);
        conn.prepare(&sql.replace("{filter}", &filter))?
            .query_map(params![a, b], |r| {
                Ok(Count {
                    key: r.get(0)?,
                    count: r.get(1)?,
                })
            })?
            .collect()
    };
    let (filter, a, b) = scope_filter(scope, "x", true);
    let tools = conn
        .prepare(&format!(
            "SELECT coalesce(kind, '-'), coalesce(status, '-'), count(*),
                    CAST(avg(CASE WHEN status IN ('completed', 'failed') THEN last_updated_at - first_seen_at END) AS INTEGER),
                    max(CASE WHEN status IN ('completed', 'failed') THEN last_updated_at - first_seen_at END)
             FROM tool_calls x WHERE {filter} GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2"
        ))?
        .query_map(params![a, b], |r| {
            Ok(ToolStat {
                kind: r.get(0)?,
                status: r.get(1)?,
                count: r.get(2)?,
                avg_us: r.get(3)?,
                max_us: r.get(4)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    let permissions = query_counts(
        "SELECT coalesce(decided_by, 'undecided'), count(*) FROM permission_requests x WHERE {filter} GROUP BY 1 ORDER BY 2 DESC",
        true,
    )?;
    let stop_reasons = query_counts(
        "SELECT coalesce(stop_reason, CASE WHEN error IS NOT NULL THEN 'error' ELSE 'unfinished' END), count(*)
         FROM prompt_turns x WHERE {filter} GROUP BY 1 ORDER BY 2 DESC",
        true,
    )?;
    let turns = stop_reasons.iter().map(|c| c.count).sum();
    let sessions = query_counts(
        "SELECT 'sessions', count(*) FROM sessions x WHERE {filter}",
        true,
    )?
    .first()
    .map(|c| c.count)
    .unwrap_or(0);
    // Bytes are per connection: a session's are its connection's.
    let (filter, a, b) = scope_filter(scope, "x", false);
    let bytes = conn
        .prepare(&format!(
            "SELECT direction, count(*), sum(size) FROM messages x WHERE {filter} GROUP BY 1 ORDER BY 1"
        ))?
        .query_map(params![a, b], |r| Ok(ByteStat { direction: r.get(0)?, messages: r.get(1)?, bytes: r.get(2)? }))?
        .collect::<Result<_, _>>()?;
    Ok(Stats {
        sessions,
        tools,
        permissions,
        stop_reasons,
        turns,
        bytes,
    })
}
