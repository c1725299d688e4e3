//! `export::trace`: a recorded connection as the NDJSON event stream of the ACP conductor's trace
//! viewer (`agent-client-protocol-trace-viewer`).

use std::collections::HashMap;
use std::path::Path;

use acptap::export::trace;
use acptap::query::Reader;
use serde_json::{Value, json};

use crate::util::{SAMPLES, Sandbox, fixture};

/// Imports a transcript with the built binary; returns the new connection's id.
fn import(sb: &Sandbox, path: &Path) -> i64 {
    sb.acptap(&["import", path.to_str().unwrap()]);
    sb.count("SELECT max(id) FROM connections")
}

fn export(sb: &Sandbox, connection_id: i64) -> Vec<Value> {
    let store = Reader::open(&sb.db()).unwrap();
    let lines = trace::export(&store, connection_id).unwrap();
    lines
        .iter()
        .map(|line| {
            assert!(!line.contains('\n'), "one event a line: {line}");
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
        })
        .collect()
}

/// What the recorder stored for each line the trace shows: (kind, direction, rpc_id).
fn protocol_rows(sb: &Sandbox, connection_id: i64) -> Vec<(String, String, Option<String>)> {
    let conn = sb.conn();
    let mut stmt = conn
        .prepare(
            "SELECT kind, direction, rpc_id FROM messages
             WHERE connection_id = ?1 AND kind IN ('request', 'response', 'notification')
             ORDER BY seq",
        )
        .unwrap();
    stmt.query_map([connection_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// The checks that hold for any trace: the shape of every event, monotonic times, and every
/// response paired (as the viewer pairs them) with an earlier request going the other way.
fn check_well_formed(events: &[Value], what: &str) {
    let mut last_ts = 0.0;
    let mut open: HashMap<String, (Value, Value)> = HashMap::new();
    for (n, e) in events.iter().enumerate() {
        let ts = e["ts"].as_f64().unwrap_or_else(|| panic!("{what} {n}: ts"));
        assert!(ts >= last_ts, "{what} {n}: ts {ts} < {last_ts}");
        last_ts = ts;
        assert!(e["from"].is_string() && e["to"].is_string(), "{what} {n}");
        assert_ne!(e["from"], e["to"], "{what} {n}");
        let keys: Vec<&str> = e.as_object().unwrap().keys().map(String::as_str).collect();
        match e["type"].as_str() {
            Some("request") => {
                assert!(e["method"].is_string(), "{what} {n}");
                assert!(
                    e["protocol"] == "acp" || e["protocol"] == "mcp",
                    "{what} {n}"
                );
                assert!(!e["id"].is_null(), "{what} {n}");
                assert!(keys.contains(&"params"), "{what} {n}");
                assert!(e.get("session").is_none_or(Value::is_string), "{what} {n}");
                open.insert(
                    format!("{}:{}", e["to"].as_str().unwrap(), e["id"]),
                    (e["from"].clone(), e["to"].clone()),
                );
            }
            Some("notification") => {
                assert!(e["method"].is_string(), "{what} {n}");
                assert!(
                    e["protocol"] == "acp" || e["protocol"] == "mcp",
                    "{what} {n}"
                );
                assert!(
                    keys.contains(&"params") && !keys.contains(&"id"),
                    "{what} {n}"
                );
                assert!(e.get("session").is_none_or(Value::is_string), "{what} {n}");
            }
            Some("response") => {
                let is_error = e["is_error"].as_bool().unwrap();
                assert_eq!(is_error, e.get("error_domain").is_some(), "{what} {n}");
                assert!(
                    keys.contains(&"payload") && keys.contains(&"id"),
                    "{what} {n}"
                );
                let key = format!("{}:{}", e["from"].as_str().unwrap(), e["id"]);
                let (req_from, req_to) = open
                    .remove(&key)
                    .unwrap_or_else(|| panic!("{what} {n}: no request for response {e}"));
                assert_eq!((&e["from"], &e["to"]), (&req_to, &req_from), "{what} {n}");
            }
            other => panic!("{what} {n}: type {other:?}"),
        }
    }
}

#[test]
fn trace_of_every_sample_has_one_event_per_protocol_line() {
    for sample in SAMPLES {
        let sb = Sandbox::new();
        let id = import(&sb, &fixture(sample));
        let events = export(&sb, id);
        let rows = protocol_rows(&sb, id);
        assert!(!rows.is_empty(), "{sample}");
        assert_eq!(
            sb.count("SELECT count(*) FROM messages WHERE kind = 'batch'"),
            0,
            "{sample}: the samples have no batches, so one line is one event"
        );
        assert_eq!(events.len(), rows.len(), "{sample}");
        check_well_formed(&events, sample);
        for (n, (e, (kind, direction, rpc_id))) in events.iter().zip(&rows).enumerate() {
            assert_eq!(e["type"], kind.as_str(), "{sample} {n}");
            let lanes = match direction.as_str() {
                "c2a" => ("client", "agent"),
                _ => ("agent", "client"),
            };
            assert_eq!(
                (e["from"].as_str(), e["to"].as_str()),
                (Some(lanes.0), Some(lanes.1))
            );
            // The id is the recorded one, a number staying a number and a string a string.
            let recorded_id = rpc_id
                .as_deref()
                .map(|id| serde_json::from_str(id).unwrap());
            assert_eq!(e.get("id").cloned(), recorded_id, "{sample} {n}");
        }
        // Every sample starts the ACP way: the client's initialize, answered by the agent.
        assert_eq!(
            (&events[0]["method"], &events[0]["id"]),
            (&json!("initialize"), &events[1]["id"]),
            "{sample}"
        );
        assert_eq!(events[1]["type"], "response", "{sample}");
        let prompt = events
            .iter()
            .find(|e| e["method"] == "session/prompt")
            .unwrap_or_else(|| panic!("{sample}: no session/prompt"));
        assert!(prompt["session"].is_string(), "{sample}");
        assert!(
            events
                .iter()
                .all(|e| e["from"] != "acptap" && e["to"] != "acptap")
        );
    }
}

#[test]
fn trace_times_are_the_recorded_times_since_the_connection_started() {
    // An import starts the connection at the import and places each line `t` seconds after it.
    let sample = fixture(SAMPLES[1]);
    let sb = Sandbox::new();
    let id = import(&sb, &sample);
    let events = export(&sb, id);
    let times: Vec<f64> = std::fs::read_to_string(&sample)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["dir"] != "stderr")
        .map(|r| r["t"].as_f64().unwrap())
        .collect();
    assert_eq!(events.len(), times.len());
    for (e, t) in events.iter().zip(times) {
        let ts = e["ts"].as_f64().unwrap();
        assert!((ts - t).abs() < 2e-6, "ts {ts} for t {t}");
    }
    let last = events.last().unwrap()["ts"].as_f64().unwrap();
    assert!(
        last > 1.0,
        "the slow sample lasts more than a second: {last}"
    );
}

/// A transcript with what the samples lack: stderr, lines that are not JSON-RPC, a batch, a
/// permission request acptap's policy withheld and answered, error responses, a null id.
fn import_handmade(sb: &Sandbox) -> i64 {
    let records = [
        json!({"t": 0.0, "dir": "c2a", "text": r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#}),
        json!({"t": 0.1, "dir": "stderr", "text": "agent starting"}),
        json!({"t": 0.2, "dir": "a2c", "text": r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}"#}),
        json!({"t": 0.3, "dir": "a2c", "text": "not json at all"}),
        json!({"t": 0.35, "dir": "c2a", "text": ""}),
        json!({"t": 0.4, "dir": "c2a", "text": r#"[{"jsonrpc":"2.0","id":"n-1","method":"session/new","params":{"cwd":"/w","mcpServers":[]}},{"jsonrpc":"2.0","method":"_x/hello","params":{"sessionId":"s1"}},{"not":"rpc"}]"#}),
        json!({"t": 0.5, "dir": "a2c", "text": r#"{"jsonrpc":"2.0","id":"n-1","result":{"sessionId":"s1"}}"#}),
        json!({"t": 0.6, "dir": "c2a", "text": r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}}"#}),
        json!({"t": 0.7, "dir": "a2c", "forwarded": false, "text": r#"{"jsonrpc":"2.0","id":5,"method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"t1"},"options":[{"optionId":"ok","name":"Allow","kind":"allow_once"}]}}"#}),
        json!({"t": 0.7, "dir": "c2a", "origin": "acptap", "text": r#"{"jsonrpc":"2.0","id":5,"result":{"outcome":{"outcome":"selected","optionId":"ok"}}}"#}),
        json!({"t": 0.8, "dir": "a2c", "text": r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hello"}}}}"#}),
        json!({"t": 0.9, "dir": "a2c", "text": r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"boom"}}"#}),
        json!({"t": 1.0, "dir": "a2c", "text": r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}"#}),
    ];
    let text: String = records.iter().map(|r| format!("{r}\n")).collect();
    let path = sb.path("handmade.jsonl");
    std::fs::write(&path, text).unwrap();
    import(sb, &path)
}

#[test]
fn trace_shows_policy_answers_and_skips_what_is_not_json_rpc() {
    let sb = Sandbox::new();
    let id = import_handmade(&sb);
    let events = export(&sb, id);
    let summary: Vec<(String, String, String, String)> = events
        .iter()
        .map(|e| {
            let s = |k: &str| match &e[k] {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            };
            (
                s("type"),
                format!("{}>{}", s("from"), s("to")),
                s("method"),
                s("id"),
            )
        })
        .collect();
    let expected: Vec<(String, String, String, String)> = [
        ("request", "client>agent", "initialize", "0"),
        ("response", "agent>client", "", "0"),
        // The batch: its two JSON-RPC elements, the third skipped.
        ("request", "client>agent", "session/new", "n-1"),
        ("notification", "client>agent", "_x/hello", ""),
        ("response", "agent>client", "", "n-1"),
        ("request", "client>agent", "session/prompt", "2"),
        // Withheld from the client and answered by acptap's policy.
        ("request", "agent>acptap", "session/request_permission", "5"),
        ("response", "acptap>agent", "", "5"),
        ("notification", "agent>client", "session/update", ""),
        ("response", "agent>client", "", "2"),
        ("response", "agent>client", "", ""),
    ]
    .iter()
    .map(|(a, b, c, d)| (a.to_string(), b.to_string(), c.to_string(), d.to_string()))
    .collect();
    assert_eq!(summary, expected);

    // Ids keep their JSON type; the null-id error is shown with a null id, unpaired.
    assert_eq!(events[0]["id"], json!(0));
    assert_eq!(events[2]["id"], json!("n-1"));
    assert_eq!(events[10]["id"], Value::Null);
    // Both events of the batch line carry its time.
    assert_eq!(events[2]["ts"], events[3]["ts"]);
    assert!((events[2]["ts"].as_f64().unwrap() - 0.4).abs() < 2e-6);
    // Sessions come from params.sessionId and are omitted, not null, when there is none.
    assert_eq!(events[3]["session"], "s1");
    assert_eq!(events[5]["session"], "s1");
    assert!(events[0].get("session").is_none());
    assert!(events[2].get("session").is_none());
    // Params and payloads are the messages' own.
    assert_eq!(events[5]["params"]["prompt"][0]["text"], "hi");
    assert_eq!(events[7]["payload"]["outcome"]["optionId"], "ok");
    assert_eq!(events[8]["params"]["update"]["content"]["text"], "hello");
    assert_eq!(events[1]["is_error"], false);
    assert!(events[1].get("error_domain").is_none());
    assert_eq!(
        (
            &events[9]["is_error"],
            &events[9]["error_domain"],
            &events[9]["payload"]["message"]
        ),
        (&json!(true), &json!("acp"), &json!("boom"))
    );
    assert!(events.iter().all(|e| e["protocol"] != "mcp"));

    // The unpaired null-id response is the only thing the viewer could not pair.
    check_well_formed(&events[..10], "handmade");
}

#[test]
fn trace_times_never_go_back() {
    // The two directions are timed on different threads: a line can be numbered after one that
    // was timed a little later. The trace raises such a time to the previous one.
    let sb = Sandbox::new();
    let records = [
        json!({"t": 0.5, "dir": "c2a", "text": r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}"#}),
        json!({"t": 0.4, "dir": "a2c", "text": r#"{"jsonrpc":"2.0","method":"session/update","params":{}}"#}),
        json!({"t": 0.6, "dir": "a2c", "text": r#"{"jsonrpc":"2.0","id":1,"result":{}}"#}),
    ];
    let path = sb.path("skewed.jsonl");
    std::fs::write(&path, records.map(|r| format!("{r}\n")).concat()).unwrap();
    let id = import(&sb, &path);
    let ts: Vec<f64> = export(&sb, id)
        .iter()
        .map(|e| e["ts"].as_f64().unwrap())
        .collect();
    assert_eq!(ts.len(), 3);
    assert!(
        (ts[0] - 0.5).abs() < 2e-6 && (ts[2] - 0.6).abs() < 2e-6,
        "{ts:?}"
    );
    assert_eq!(ts[1], ts[0]);
}

#[test]
fn trace_of_a_missing_connection_is_an_error() {
    let sb = Sandbox::new();
    import(&sb, &fixture(SAMPLES[1]));
    let store = Reader::open(&sb.db()).unwrap();
    let e = trace::export(&store, 999).unwrap_err();
    assert!(e.to_string().contains("999"), "{e}");
}

#[test]
fn export_format_trace_on_the_command_line() {
    let sb = Sandbox::new();
    import(&sb, &fixture(SAMPLES[0]));
    let out = sb.acptap(&["export", "last", "--format", "trace"]).stdout;
    let events: Vec<serde_json::Value> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        events.len(),
        crate::util::load_transcript(&fixture(SAMPLES[0])).len()
    );
    assert_eq!(events[0]["type"], "request");
    assert_eq!(events[0]["from"], "client");
    assert_eq!(events[0]["method"], "initialize");
}
