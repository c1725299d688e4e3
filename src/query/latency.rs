//! Latency per request method and per tool kind (the query side of `acptap stats SESSION
//! --by-method`): how long each kind of request took to be answered, and each kind of tool call
//! to end, as percentiles, a total and a histogram.
//!
//! Definitions (docs/cli.md, `stats`, says the same):
//!
//! - **A request and its response** are the `messages` rows `r` (`kind = 'response'`) and `q`
//!   (same `connection_id`, `q.seq = r.reply_to_seq`). Its latency is `r.ts - q.ts` (µs), its
//!   method `q.method`, its direction `q.direction` (who sent the request: `c2a` or `a2c`).
//! - **A pair belongs to the session** when `q.session_id` or `r.session_id` is the session's id,
//!   or when neither names a session (connection-level requests such as `initialize` and
//!   `authenticate`: they count for every session of the connection).
//! - **Unanswered** requests are `kind = 'request'` rows of the session by the same rule (on `q`
//!   alone) that no response's `reply_to_seq` names. They are counted, and left out of the
//!   figures.
//! - **Failed**: the response's JSON has an `error` member. A response whose `raw` is not JSON
//!   (cut at 64 MiB, damaged) counts as not failed.
//! - **Tool calls**: those of the session whose status is `completed` or `failed` count; the
//!   duration is `last_updated_at - first_seen_at`, as `stats`' AVG and MAX. The others are
//!   counted as unfinished. A NULL kind reads `-`; a custom kind is kept as it is.
//! - **Percentiles** are nearest-rank over the sorted durations:
//!   `pN = sorted[ceil(N/100 × n) - 1]`, whole microseconds.
//! - **Histogram**: bucket `i` holds the durations `d < HISTOGRAM_BOUNDS_US[i]` (and
//!   `>= HISTOGRAM_BOUNDS_US[i-1]`); the last bucket holds `d >= 60 s`.
//! - **Order**: the slowest and the failed first: rows with `failed > 0`, then by `p99_us`
//!   descending, `max_us` descending, then method (kind) and direction ascending.
//!
//! Each table is read in one pass of SQL: the connection's lines by the unique index
//! `(connection_id, seq)`, each response joined to its request by the same index; the unanswered
//! requests, the grouping and the percentiles are done here.

use std::collections::{BTreeMap, HashMap, HashSet};

use rusqlite::params;
use serde::Serialize;

use super::Reader;
use super::SessionRef;

/// The upper bounds (exclusive, µs) of the histogram's buckets: 1 ms, 10 ms, 100 ms, 1 s, 10 s,
/// 60 s. A histogram has one bucket more, for 60 s and longer.
pub const HISTOGRAM_BOUNDS_US: &[i64] =
    &[1_000, 10_000, 100_000, 1_000_000, 10_000_000, 60_000_000];

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Latency {
    pub methods: Vec<MethodLatency>,
    pub tools: Vec<ToolLatency>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MethodLatency {
    /// The request's method.
    pub method: String,
    /// Who sent the request: `c2a` (client to agent) or `a2c` (agent to client).
    pub direction: String,
    /// Answered requests (the request and its response both recorded).
    pub count: i64,
    /// Of them, answered with a JSON-RPC `error`.
    pub failed: i64,
    /// Requests of the session with no recorded response (not in the figures).
    pub unanswered: i64,
    /// `p50_us`, `p99_us`, `max_us`, `total_us`, `histogram` in the JSON.
    #[serde(flatten)]
    pub figures: Figures,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ToolLatency {
    /// `tool_calls.kind`, `-` when NULL.
    pub kind: String,
    /// Tool calls that ended (status `completed` or `failed`).
    pub count: i64,
    /// Of them, failed.
    pub failed: i64,
    /// Tool calls of that kind that never reached `completed` or `failed` (not in the figures).
    pub unfinished: i64,
    /// `p50_us`, `p99_us`, `max_us`, `total_us`, `histogram` in the JSON.
    #[serde(flatten)]
    pub figures: Figures,
}

/// The nearest-rank `pct`th percentile of `sorted` (ascending): `sorted[ceil(pct/100 × n) - 1]`;
/// `None` for no values.
fn nearest_rank(sorted: &[i64], pct: usize) -> Option<i64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (pct * sorted.len()).div_ceil(100).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

/// The figures of a set of durations, in any order: the one computation of both tables.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Figures {
    /// `None` (null) when nothing was answered or ended: no duration to rank.
    pub p50_us: Option<i64>,
    pub p99_us: Option<i64>,
    pub max_us: Option<i64>,
    /// 0 when nothing was answered or ended.
    pub total_us: i64,
    /// Counts per bucket of [`HISTOGRAM_BOUNDS_US`]; one more than the bounds.
    pub histogram: Vec<i64>,
}

impl Figures {
    fn of(mut durations: Vec<i64>) -> Figures {
        durations.sort_unstable();
        let mut histogram = vec![0; HISTOGRAM_BOUNDS_US.len() + 1];
        for &d in &durations {
            histogram[HISTOGRAM_BOUNDS_US.partition_point(|&bound| bound <= d)] += 1;
        }
        Figures {
            p50_us: nearest_rank(&durations, 50),
            p99_us: nearest_rank(&durations, 99),
            max_us: durations.last().copied(),
            total_us: durations.iter().fold(0i64, |sum, &d| sum.saturating_add(d)),
            histogram,
        }
    }

    /// The order of the rows: the failed first, then the slowest (P99, then MAX).
    fn slowest_first(failed: i64, figures: &Figures) -> impl Ord {
        use std::cmp::Reverse;
        (
            Reverse(failed > 0),
            Reverse(figures.p99_us),
            Reverse(figures.max_us),
        )
    }
}

/// What one row gathers while the rows are read.
#[derive(Default)]
struct Group {
    durations: Vec<i64>,
    failed: i64,
    left_out: i64,
}

/// The latency of `session`'s requests per method and direction, and of its tool calls per kind.
/// Both tables are read in one snapshot.
pub fn by_method(reader: &Reader, session: &SessionRef) -> rusqlite::Result<Latency> {
    reader.snapshot(|reader| {
        Ok(Latency {
            methods: methods(reader, session)?,
            tools: tools(reader, session)?,
        })
    })
}

fn methods(reader: &Reader, session: &SessionRef) -> rusqlite::Result<Vec<MethodLatency>> {
    let mut groups: BTreeMap<(String, String), Group> = BTreeMap::new();
    // One pass over the connection's lines (by the unique index): each response with its request
    // (a lookup in the same index), and the session's requests, to find those never answered.
    // `"error"` is looked for in a response's bytes first: only one that holds the word is parsed.
    let mut statement = reader.conn().prepare(
        "SELECT x.kind = 'response', x.seq, x.reply_to_seq,
                coalesce(q.method, x.method, '-'), coalesce(q.direction, x.direction), x.ts - q.ts,
                q.session_id = ?2 OR x.session_id = ?2
                    OR (q.session_id IS NULL AND x.session_id IS NULL),
                CASE WHEN x.kind = 'response' AND instr(x.raw, CAST('\"error\"' AS BLOB)) > 0
                          AND json_valid(CAST(x.raw AS TEXT))
                     THEN json_type(CAST(x.raw AS TEXT), '$.error') IS NOT NULL
                     ELSE 0 END
         FROM messages x
         LEFT JOIN messages q
           ON x.kind = 'response' AND q.connection_id = x.connection_id AND q.seq = x.reply_to_seq
         WHERE x.connection_id = ?1
           AND (x.kind = 'response'
                OR (x.kind = 'request' AND (x.session_id = ?2 OR x.session_id IS NULL)))",
    )?;
    let mut requests: HashMap<i64, (String, String)> = HashMap::new();
    let mut answered: HashSet<i64> = HashSet::new();
    let mut rows = statement.query(params![session.connection_id, session.session_id])?;
    while let Some(row) = rows.next()? {
        let key = (row.get(3)?, row.get(4)?);
        if !row.get::<_, bool>(0)? {
            requests.insert(row.get(1)?, key);
            continue;
        }
        if let Some(request_seq) = row.get::<_, Option<i64>>(2)? {
            answered.insert(request_seq);
        }
        // A response whose request is not recorded has no duration.
        let (Some(duration), Some(true)) = (row.get(5)?, row.get::<_, Option<bool>>(6)?) else {
            continue;
        };
        let group = groups.entry(key).or_default();
        group.durations.push(duration);
        group.failed += i64::from(row.get::<_, bool>(7)?);
    }
    for (seq, key) in requests {
        if !answered.contains(&seq) {
            groups.entry(key).or_default().left_out += 1;
        }
    }
    let mut methods: Vec<MethodLatency> = groups
        .into_iter()
        .map(|((method, direction), group)| {
            let count = group.durations.len() as i64;
            let figures = Figures::of(group.durations);
            MethodLatency {
                method,
                direction,
                count,
                failed: group.failed,
                unanswered: group.left_out,
                figures,
            }
        })
        .collect();
    methods.sort_by(|a, b| {
        Figures::slowest_first(a.failed, &a.figures)
            .cmp(&Figures::slowest_first(b.failed, &b.figures))
            .then_with(|| a.method.cmp(&b.method))
            .then_with(|| a.direction.cmp(&b.direction))
    });
    Ok(methods)
}

fn tools(reader: &Reader, session: &SessionRef) -> rusqlite::Result<Vec<ToolLatency>> {
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    let mut statement = reader.conn().prepare(
        "SELECT coalesce(kind, '-'), status, last_updated_at - first_seen_at
         FROM tool_calls WHERE connection_id = ?1 AND session_id = ?2",
    )?;
    let mut rows = statement.query(params![session.connection_id, session.session_id])?;
    while let Some(row) = rows.next()? {
        let group = groups.entry(row.get(0)?).or_default();
        match row.get::<_, Option<String>>(1)?.as_deref() {
            Some(status @ ("completed" | "failed")) => {
                group.durations.push(row.get(2)?);
                group.failed += i64::from(status == "failed");
            }
            _ => group.left_out += 1,
        }
    }
    let mut tools: Vec<ToolLatency> = groups
        .into_iter()
        .map(|(kind, group)| {
            let count = group.durations.len() as i64;
            let figures = Figures::of(group.durations);
            ToolLatency {
                kind,
                count,
                failed: group.failed,
                unfinished: group.left_out,
                figures,
            }
        })
        .collect();
    tools.sort_by(|a, b| {
        Figures::slowest_first(a.failed, &a.figures)
            .cmp(&Figures::slowest_first(b.failed, &b.figures))
            .then_with(|| a.kind.cmp(&b.kind))
    });
    Ok(tools)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        assert_eq!(nearest_rank(&[], 50), None);
        // n = 1: every percentile is the one value.
        assert_eq!(
            (nearest_rank(&[7], 50), nearest_rank(&[7], 99)),
            (Some(7), Some(7))
        );
        // n = 2: ceil(0.5 × 2) = 1, ceil(0.99 × 2) = 2.
        assert_eq!(
            (nearest_rank(&[1, 9], 50), nearest_rank(&[1, 9], 99)),
            (Some(1), Some(9))
        );
        // n = 100: ranks 50 and 99.
        let hundred: Vec<i64> = (1..=100).collect();
        assert_eq!(
            (nearest_rank(&hundred, 50), nearest_rank(&hundred, 99)),
            (Some(50), Some(99))
        );
        // n = 101: ceil(50.5) = 51, ceil(99.99) = 100.
        let hundred_one: Vec<i64> = (1..=101).collect();
        assert_eq!(
            (
                nearest_rank(&hundred_one, 50),
                nearest_rank(&hundred_one, 99)
            ),
            (Some(51), Some(100))
        );
        assert_eq!(nearest_rank(&hundred_one, 100), Some(101));
    }

    #[test]
    fn figures_sort_their_input_and_fill_the_buckets() {
        let f = Figures::of(vec![
            60_000_000, 5, 999, 1_000, 2_500_000, 99_999, 100_000, 70_000_000,
        ]);
        assert_eq!(f.p50_us, Some(99_999)); // sorted: 5 999 1000 99999 | 100000 2.5e6 6e7 7e7
        assert_eq!(f.p99_us, Some(70_000_000));
        assert_eq!(f.max_us, Some(70_000_000));
        assert_eq!(
            f.total_us,
            60_000_000 + 5 + 999 + 1_000 + 2_500_000 + 99_999 + 100_000 + 70_000_000
        );
        assert_eq!(f.histogram, [2, 1, 1, 1, 1, 0, 2]);
        let none = Figures::of(Vec::new());
        assert_eq!((none.p50_us, none.p99_us, none.max_us), (None, None, None));
        assert_eq!(none.histogram, [0; 7]);
        let unsorted = Figures::of(vec![30, 10, 20]);
        assert_eq!((unsorted.p50_us, unsorted.p99_us), (Some(20), Some(30)));
    }

    /// A transcript recorded the normal way (`record::transcript::import`), read back.
    fn recorded(lines: &[(f64, &str, &str)]) -> (tempfile::TempDir, Reader, i64) {
        crate::query::testing::imported(&crate::query::testing::transcript(lines))
    }

    #[test]
    fn requests_pair_with_their_responses_per_session() {
        let (_dir, reader, connection_id) = recorded(&[
            (
                0.0,
                "c2a",
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#,
            ),
            (
                0.002,
                "a2c",
                r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}"#,
            ),
            (
                0.01,
                "c2a",
                r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/p","mcpServers":[]}}"#,
            ),
            (
                0.11,
                "a2c",
                r#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}"#,
            ),
            (
                0.2,
                "c2a",
                r#"{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/p","mcpServers":[]}}"#,
            ),
            (
                0.3,
                "a2c",
                r#"{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s2"}}"#,
            ),
            (
                1.0,
                "c2a",
                r#"{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}"#,
            ),
            (
                1.1,
                "a2c",
                r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"ls","kind":"execute","status":"in_progress"}}}"#,
            ),
            (
                1.2,
                "a2c",
                r#"{"jsonrpc":"2.0","id":0,"method":"fs/read_text_file","params":{"sessionId":"s1","path":"/p/a"}}"#,
            ),
            (
                1.205,
                "c2a",
                r#"{"jsonrpc":"2.0","id":0,"error":{"code":-32000,"message":"no such file"}}"#,
            ),
            (
                1.6,
                "a2c",
                r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed"}}}"#,
            ),
            (
                1.7,
                "a2c",
                r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"t2","title":"x","status":"pending"}}}"#,
            ),
            (
                4.0,
                "a2c",
                r#"{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}"#,
            ),
            (
                5.0,
                "c2a",
                r#"{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}"#,
            ),
            (
                5.5,
                "c2a",
                r#"{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"s2","prompt":[]}}"#,
            ),
            (
                6.0,
                "a2c",
                r#"{"jsonrpc":"2.0","id":5,"result":{"stopReason":"end_turn"}}"#,
            ),
        ]);
        let s1 = SessionRef {
            connection_id,
            session_id: "s1".into(),
        };
        let latency = by_method(&reader, &s1).unwrap();
        let row = |method: &str| {
            latency
                .methods
                .iter()
                .find(|m| m.method == method)
                .unwrap_or_else(|| panic!("no {method} in {latency:#?}"))
        };
        let names: Vec<&str> = latency.methods.iter().map(|m| m.method.as_str()).collect();
        // The failed first, then the slowest.
        assert_eq!(
            names,
            [
                "fs/read_text_file",
                "session/prompt",
                "session/new",
                "initialize"
            ]
        );
        let read = row("fs/read_text_file");
        assert_eq!(
            (read.direction.as_str(), read.count, read.failed),
            ("a2c", 1, 1)
        );
        assert_eq!(
            (read.figures.p50_us, read.figures.max_us),
            (Some(5_000), Some(5_000))
        );
        assert_eq!(read.figures.histogram, [0, 1, 0, 0, 0, 0, 0]);
        let prompt = row("session/prompt");
        assert_eq!((prompt.count, prompt.failed, prompt.unanswered), (1, 0, 1));
        assert_eq!(
            (prompt.figures.p99_us, prompt.figures.total_us),
            (Some(3_000_000), 3_000_000)
        );
        // Only s1's session/new (its response names s1), and the connection's initialize.
        assert_eq!(
            (row("session/new").count, row("session/new").figures.max_us),
            (1, Some(100_000))
        );
        assert_eq!(
            (row("initialize").count, row("initialize").figures.p50_us),
            (1, Some(2_000))
        );
        assert_eq!(
            latency.tools,
            [
                ToolLatency {
                    kind: "execute".into(),
                    count: 1,
                    failed: 0,
                    unfinished: 0,
                    figures: Figures {
                        p50_us: Some(500_000),
                        p99_us: Some(500_000),
                        max_us: Some(500_000),
                        total_us: 500_000,
                        histogram: vec![0, 0, 0, 1, 0, 0, 0],
                    },
                },
                ToolLatency {
                    kind: "other".into(),
                    count: 0,
                    failed: 0,
                    unfinished: 1,
                    figures: Figures {
                        p50_us: None,
                        p99_us: None,
                        max_us: None,
                        total_us: 0,
                        histogram: vec![0; 7],
                    },
                },
            ]
        );
        let s2 = by_method(
            &reader,
            &SessionRef {
                connection_id,
                session_id: "s2".into(),
            },
        )
        .unwrap();
        let prompt = s2
            .methods
            .iter()
            .find(|m| m.method == "session/prompt")
            .unwrap();
        assert_eq!(
            (prompt.count, prompt.unanswered, prompt.figures.max_us),
            (1, 0, Some(500_000))
        );
        assert!(s2.tools.is_empty());
    }

    #[test]
    fn only_an_error_member_fails_a_response() {
        let (_dir, reader, connection_id) = recorded(&[
            (
                0.0,
                "c2a",
                r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}"#,
            ),
            (
                0.5,
                "a2c",
                r#"{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn","note":"\"error\""}}"#,
            ),
            (
                1.0,
                "c2a",
                r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}"#,
            ),
            (
                1.5,
                "a2c",
                r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"x"}}"#,
            ),
        ]);
        let s = SessionRef {
            connection_id,
            session_id: "s".into(),
        };
        let prompt = |reader: &Reader| by_method(reader, &s).unwrap().methods[0].clone();
        assert_eq!((prompt(&reader).count, prompt(&reader).failed), (2, 1));
    }
}
