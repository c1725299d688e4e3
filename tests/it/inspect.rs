//! Looking at recordings: `tail` while another process records, `stats`, and `prune`/`vacuum`.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::{SAMPLES, Sandbox, acptap_bin, fixture, load_transcript};

#[test]
fn tail_sees_events_that_another_process_records() {
    let sb = Sandbox::new();
    sb.acptap(&["import", fixture(SAMPLES[1]).to_str().unwrap()]); // the database exists
    let mut tail = Command::new(acptap_bin())
        .args(["tail", "--json", "--interval", "50ms"])
        .env("ACPTAP_DB", sb.db())
        .env("XDG_CONFIG_HOME", sb.dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(tail.stderr.take().unwrap());
    let mut ready = String::new();
    stderr.read_line(&mut ready).unwrap();
    assert!(ready.contains("following"), "{ready}");
    // A second process records a demo session into the same file.
    let demo = Command::new(acptap_bin())
        .args(["demo", "--db"])
        .arg(sb.db())
        .current_dir(sb.dir.path())
        .output()
        .unwrap();
    assert!(demo.status.success());
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = tail.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !seen
        .iter()
        .any(|e: &serde_json::Value| e["event"] == "turn_ended")
        && Instant::now() < deadline
    {
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) {
            seen.push(serde_json::from_str(&line).unwrap());
        }
    }
    let _ = tail.kill();
    let _ = tail.wait();
    let kinds: Vec<&str> = seen.iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"tool_call_started"), "{kinds:?}");
    assert!(kinds.contains(&"tool_call_finished"), "{kinds:?}");
    let permission = seen
        .iter()
        .find(|e| e["event"] == "permission_decided")
        .expect("a permission event");
    assert_eq!(permission["option_kind"], "allow_once");
    assert_eq!(permission["decided_by"], "client");
    assert_eq!(seen.last().unwrap()["stop_reason"], "end_turn");
    // Nothing from before tail started, and nothing twice.
    assert!(seen.iter().all(|e| e["connection_id"] == 2), "{seen:?}");
    let started = seen
        .iter()
        .filter(|e| e["event"] == "tool_call_started")
        .count();
    assert_eq!(started, 5, "each of the demo's five tool calls starts once");
}

#[test]
fn stats_count_tools_decisions_turns_and_bytes() {
    let sb = Sandbox::new();
    let mut lines = std::collections::HashMap::new();
    for sample in SAMPLES {
        sb.acptap(&["import", fixture(sample).to_str().unwrap()]);
        for record in load_transcript(&fixture(sample)) {
            let entry = lines.entry(record.dir.clone()).or_insert((0i64, 0i64));
            entry.0 += 1;
            entry.1 += record.bytes.len() as i64;
        }
    }
    let stats: serde_json::Value =
        serde_json::from_slice(&sb.acptap(&["stats", "--json"]).stdout).unwrap();
    assert_eq!(stats["sessions"], 5);
    assert_eq!(stats["turns"], 5);
    let counts = |key: &str| -> Vec<(String, i64)> {
        stats[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["key"].as_str().unwrap().to_owned(),
                    c["count"].as_i64().unwrap(),
                )
            })
            .collect()
    };
    assert_eq!(
        counts("stop_reasons"),
        vec![("end_turn".into(), 3), ("cancelled".into(), 2)]
    );
    assert_eq!(counts("permissions"), vec![("client".into(), 7)]);
    for b in stats["bytes"].as_array().unwrap() {
        let (messages, bytes) = lines[b["direction"].as_str().unwrap()];
        assert_eq!(
            (
                b["messages"].as_i64().unwrap(),
                b["bytes"].as_i64().unwrap()
            ),
            (messages, bytes)
        );
    }
    let executes: i64 = stats["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["kind"] == "execute")
        .map(|t| t["count"].as_i64().unwrap())
        .sum();
    assert_eq!(
        executes,
        sb.count("SELECT count(*) FROM tool_calls WHERE kind = 'execute'")
    );
    let one: serde_json::Value =
        serde_json::from_slice(&sb.acptap(&["stats", "last", "--json"]).stdout).unwrap();
    assert_eq!(one["sessions"], 1);
    let text = String::from_utf8(sb.acptap(&["stats"]).stdout).unwrap();
    assert!(
        text.contains("PERMISSIONS DECIDED BY") && text.contains("end_turn"),
        "{text}"
    );
}

#[test]
fn prune_deletes_old_connections_without_orphans_and_keeps_newer_ones() {
    let sb = Sandbox::new();
    for sample in [SAMPLES[0], SAMPLES[2], SAMPLES[4]] {
        sb.acptap(&["import", fixture(sample).to_str().unwrap()]);
    }
    let forty_days_us = 40 * 86_400 * 1_000_000i64;
    sb.conn()
        .execute("UPDATE connections SET started_at = started_at - ?1, ended_at = ended_at - ?1 WHERE id = 1", [forty_days_us])
        .unwrap();
    let keep = |table: &str| {
        sb.count(&format!(
            "SELECT count(*) FROM {table} WHERE connection_id != 1"
        ))
    };
    let tables = [
        "messages",
        "sessions",
        "prompt_turns",
        "tool_calls",
        "permission_requests",
    ];
    let before: Vec<i64> = tables.iter().map(|t| keep(t)).collect();
    let out =
        String::from_utf8(sb.acptap(&["prune", "--older-than", "30d", "--yes"]).stdout).unwrap();
    assert!(out.contains("deleted 1 connection"), "{out}");
    assert_eq!(sb.count("SELECT count(*) FROM connections WHERE id = 1"), 0);
    for table in tables {
        assert_eq!(
            sb.count(&format!(
                "SELECT count(*) FROM {table} WHERE connection_id = 1"
            )),
            0,
            "{table}"
        );
    }
    assert_eq!(sb.count("SELECT count(*) FROM tool_call_events WHERE tool_call_row NOT IN (SELECT id FROM tool_calls) OR message_id NOT IN (SELECT id FROM messages)"), 0);
    let violations: i64 = sb
        .conn()
        .prepare("PRAGMA foreign_key_check")
        .unwrap()
        .query_map([], |_| Ok(()))
        .unwrap()
        .count() as i64;
    assert_eq!(violations, 0);
    let after: Vec<i64> = tables.iter().map(|t| keep(t)).collect();
    assert_eq!(before, after, "the newer sessions are intact");
    let vacuum = String::from_utf8(sb.acptap(&["vacuum"]).stdout).unwrap();
    assert!(vacuum.contains("bytes"), "{vacuum}");
    assert_eq!(sb.count("SELECT count(*) FROM connections"), 2);
}

/// `last` is the latest session of the most recently started connection that is not a replay's
/// live run: a CI recipe that replays and then looks at `last` sees the recording it replayed
/// against, not its own run.
#[test]
fn last_is_not_a_replays_live_run() {
    let sb = Sandbox::new();
    let sample = fixture(SAMPLES[0]);
    sb.acptap(&["import", sample.to_str().unwrap()]);
    sb.acptap(&["import", fixture(SAMPLES[2]).to_str().unwrap()]);
    let newest = sb.count("SELECT max(id) FROM connections");
    let show = |sb: &Sandbox| -> serde_json::Value {
        serde_json::from_slice(&sb.acptap(&["show", "last", "--json"]).stdout).unwrap()
    };
    assert_eq!(show(&sb)["session"]["connection_id"], newest);
    sb.conn()
        .execute(
            &format!("UPDATE connections SET replay_of = 1 WHERE id = {newest}"),
            [],
        )
        .unwrap();
    assert_eq!(show(&sb)["session"]["connection_id"], 1);
}
