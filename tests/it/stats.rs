//! `acptap stats SESSION --by-method`: latency per request method and per tool kind, checked
//! against figures computed here from the recorded lines.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::util::{Sandbox, fixture, import_lines, opening_lines, update};

const BOUNDS_US: [i64; 6] = [1_000, 10_000, 100_000, 1_000_000, 10_000_000, 60_000_000];

/// Nearest rank, computed here on its own: the smallest value with at least `pct`% of the
/// values at or below it.
fn nearest_rank(values: &[i64], pct: f64) -> i64 {
    let mut sorted = values.to_vec();
    sorted.sort();
    let n = sorted.len() as f64;
    *sorted
        .iter()
        .enumerate()
        .find(|(i, _)| (*i as f64 + 1.0) >= pct / 100.0 * n - 1e-9)
        .map(|(_, v)| v)
        .unwrap()
}

/// The figures `--json` gives for a set of durations.
fn figures(durations: &[i64]) -> Value {
    let mut histogram = [0i64; 7];
    for &d in durations {
        histogram[BOUNDS_US.iter().filter(|&&b| d >= b).count()] += 1;
    }
    json!({
        "p50_us": nearest_rank(durations, 50.0),
        "p99_us": nearest_rank(durations, 99.0),
        "max_us": durations.iter().max().unwrap(),
        "total_us": durations.iter().sum::<i64>(),
        "histogram": histogram,
    })
}

fn stats_json(sb: &Sandbox, session: &str) -> Value {
    let out = sb.acptap(&["stats", session, "--by-method", "--json"]);
    serde_json::from_slice(&out.stdout).expect("stats --by-method --json prints JSON")
}

/// Every figure of the claude sample, from its recorded lines: each request paired with the
/// response of the same id sent the other way, each tool call from the first to the last line
/// that names it.
#[test]
fn by_method_figures_match_the_recorded_lines() {
    let sb = Sandbox::new();
    sb.acptap(&[
        "import",
        fixture("claude-acpx-basic-approve-all.jsonl")
            .to_str()
            .unwrap(),
    ]);
    let conn = sb.conn();
    let session: String = conn
        .query_row("SELECT session_id FROM sessions", [], |r| r.get(0))
        .unwrap();
    let lines: Vec<(i64, String, Value)> = conn
        .prepare("SELECT ts, direction, CAST(raw AS TEXT) FROM messages WHERE direction != 'stderr' ORDER BY seq")
        .unwrap()
        .query_map([], |r| {
            let text: String = r.get(2)?;
            Ok((r.get(0)?, r.get(1)?, serde_json::from_str(&text).unwrap()))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();

    // Requests by (direction, id); a response answers the one sent the other way.
    let mut pending: BTreeMap<(String, String), (i64, String)> = BTreeMap::new();
    let mut methods: BTreeMap<(String, String), (Vec<i64>, i64)> = BTreeMap::new();
    // Tool calls: first and last time named, last kind and status.
    let mut tools: BTreeMap<String, (i64, i64, String, String)> = BTreeMap::new();
    for (ts, direction, msg) in &lines {
        let id = msg.get("id").map(Value::to_string);
        match (msg.get("method").and_then(Value::as_str), id) {
            (Some(method), Some(id)) => {
                pending.insert((direction.clone(), id), (*ts, method.to_owned()));
            }
            (None, Some(id)) => {
                let other = if direction == "c2a" { "a2c" } else { "c2a" };
                let (at, method) = pending.remove(&(other.to_owned(), id)).unwrap();
                let entry = methods.entry((method, other.to_owned())).or_default();
                entry.0.push(ts - at);
                entry.1 += i64::from(msg.get("error").is_some());
            }
            _ => {}
        }
        let params = &msg["params"];
        let call = if params["update"]["toolCallId"].is_string() {
            &params["update"]
        } else {
            &params["toolCall"]
        };
        if let Some(tool_call_id) = call["toolCallId"].as_str() {
            let entry = tools.entry(tool_call_id.to_owned()).or_insert((
                *ts,
                *ts,
                "other".into(),
                "pending".into(),
            ));
            entry.1 = *ts;
            if let Some(kind) = call["kind"].as_str() {
                entry.2 = kind.to_owned();
            }
            if let Some(status) = call["status"].as_str() {
                entry.3 = status.to_owned();
            }
        }
    }
    assert!(
        pending.is_empty(),
        "every request of the sample is answered"
    );

    let got = stats_json(&sb, &session);
    let got_methods = got["methods"].as_array().unwrap();
    assert_eq!(got_methods.len(), methods.len(), "{got:#}");
    assert_eq!(
        methods.len(),
        4,
        "initialize, session/new, session/prompt, permissions"
    );
    for ((method, direction), (durations, failed)) in &methods {
        let row = got_methods
            .iter()
            .find(|m| m["method"] == method.as_str() && m["direction"] == direction.as_str())
            .unwrap_or_else(|| panic!("no {method} {direction} in {got:#}"));
        let mut want = figures(durations);
        want["method"] = json!(method);
        want["direction"] = json!(direction);
        want["count"] = json!(durations.len());
        want["failed"] = json!(failed);
        want["unanswered"] = json!(0);
        assert_eq!(row, &want);
    }
    // Slowest first (nothing failed here).
    let p99s: Vec<i64> = got_methods
        .iter()
        .map(|m| m["p99_us"].as_i64().unwrap())
        .collect();
    assert!(p99s.is_sorted_by(|a, b| a >= b), "{p99s:?}");

    let mut kinds: BTreeMap<String, (Vec<i64>, i64, i64)> = BTreeMap::new();
    for (first, last, kind, status) in tools.values() {
        let entry = kinds.entry(kind.clone()).or_default();
        match status.as_str() {
            "completed" | "failed" => {
                entry.0.push(last - first);
                entry.1 += i64::from(status == "failed");
            }
            _ => entry.2 += 1,
        }
    }
    let got_tools = got["tools"].as_array().unwrap();
    assert_eq!(got_tools.len(), kinds.len(), "{got:#}");
    assert_eq!(kinds.len(), 3, "read, execute, edit");
    for (kind, (durations, failed, unfinished)) in &kinds {
        let row = got_tools
            .iter()
            .find(|t| t["kind"] == kind.as_str())
            .unwrap_or_else(|| panic!("no {kind} in {got:#}"));
        let mut want = figures(durations);
        want["kind"] = json!(kind);
        want["count"] = json!(durations.len());
        want["failed"] = json!(failed);
        want["unfinished"] = json!(unfinished);
        assert_eq!(row, &want);
    }
    assert_eq!(
        got["tools"][0]["kind"], "execute",
        "two calls, 111 ms the slowest"
    );

    // The text: both sections, every method and kind, its figures as durations.
    let text = String::from_utf8(sb.acptap(&["stats", "last", "--by-method"]).stdout).unwrap();
    assert!(
        text.starts_with("REQUEST METHOD") && text.contains("\nTOOL KIND "),
        "{text}"
    );
    for needle in [
        "session/request_permission  a2c       2       0       3ms       5ms       5ms       9ms  [ █     ]",
        "execute         2       0      37ms     111ms     111ms     148ms  [  ██   ]",
    ] {
        assert!(text.contains(needle), "{needle:?} in\n{text}");
    }
}

/// A request answered with an error is failed, and comes first however fast; a request never
/// answered is counted apart; an unfinished tool call too.
#[test]
fn a_failed_request_comes_first_and_an_unanswered_one_is_counted_apart() {
    let sb = Sandbox::new();
    let mut lines: Vec<(&str, String)> = opening_lines("/p", "s1", "hi")
        .into_iter()
        .map(|(dir, v)| (dir, v.to_string()))
        .collect();
    lines.extend([
        ("a2c", json!({"jsonrpc": "2.0", "id": 0, "method": "fs/read_text_file", "params": {"sessionId": "s1", "path": "/p/missing"}}).to_string()),
        ("c2a", json!({"jsonrpc": "2.0", "id": 0, "error": {"code": -32002, "message": "not found"}}).to_string()),
        ("a2c", update("s1", json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "wait", "kind": "\u{1b}[31mcustom", "status": "in_progress"}))),
        ("a2c", json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}).to_string()),
        ("c2a", json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": "s1", "prompt": []}}).to_string()),
    ]);
    import_lines(&sb, &lines);
    let got = stats_json(&sb, "s1");
    let methods = got["methods"].as_array().unwrap();
    assert_eq!(methods[0]["method"], "fs/read_text_file", "{got:#}");
    assert_eq!(
        (
            &methods[0]["direction"],
            &methods[0]["count"],
            &methods[0]["failed"]
        ),
        (&json!("a2c"), &json!(1), &json!(1))
    );
    assert_eq!(methods[0]["p99_us"], 10_000); // one line later, 10 ms
    assert_eq!(methods[1]["method"], "session/prompt");
    assert_eq!(
        (
            &methods[1]["count"],
            &methods[1]["unanswered"],
            &methods[1]["p99_us"]
        ),
        (&json!(1), &json!(1), &json!(40_000))
    );
    assert_eq!(got["tools"][0]["kind"], "\u{1b}[31mcustom");
    assert_eq!(
        (&got["tools"][0]["count"], &got["tools"][0]["unfinished"]),
        (&json!(0), &json!(1))
    );
    let text = String::from_utf8(sb.acptap(&["stats", "s1", "--by-method"]).stdout).unwrap();
    let first = text.lines().nth(1).unwrap();
    assert!(
        first.starts_with("fs/read_text_file") && first.contains(" a2c "),
        "{text}"
    );
    assert!(
        text.contains("+1 unanswered") && text.contains("+1 unfinished"),
        "{text}"
    );
    assert!(
        !text.contains('\u{1b}'),
        "the recorded kind is made safe: {text:?}"
    );
}

#[test]
fn by_method_needs_a_session() {
    let sb = Sandbox::new();
    sb.acptap(&[
        "import",
        fixture("claude-acpx-basic-approve-all.jsonl")
            .to_str()
            .unwrap(),
    ]);
    for args in [
        &["stats", "--by-method"][..],
        &["stats", "--by-method", "--json"],
        &["stats", "--since", "1d", "--by-method"],
    ] {
        let out = sb.acptap_status(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(
            stderr.contains("<SESSION>") || stderr.contains("--since"),
            "{args:?} names the fix: {stderr}"
        );
    }
    let out = sb.acptap_status(&["stats", "--by-method"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("required") && stderr.contains("<SESSION>"),
        "{stderr}"
    );
}
