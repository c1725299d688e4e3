//! The span model of a recording (`export::spans`), checked on every shared sample: one trace,
//! one root, every tool call and permission request present with the right parent, ids unique
//! and the same when the recording is read again.

use std::collections::{HashMap, HashSet};

use acptap::export::spans::{Attribute, Span, session_spans};
use acptap::query::Reader;
use acptap::query::{self, resolve_session};

use crate::util::{SAMPLES, Sandbox, fixture};

fn text<'a>(span: &'a Span, key: &str) -> Option<&'a str> {
    span.attributes.iter().find_map(|(k, v)| match v {
        Attribute::Text(t) if *k == key => Some(t.as_str()),
        _ => None,
    })
}

#[test]
fn every_sample_becomes_one_tree_with_every_call_and_decision() {
    let (mut checked_calls, mut checked_permissions, mut checked_requests) = (0, 0, 0);
    for sample in SAMPLES {
        let sb = Sandbox::new();
        sb.acptap(&["import", fixture(sample).to_str().unwrap()]);
        let reader = Reader::open(&sb.db()).unwrap();
        let session = resolve_session(&reader, "last").unwrap();
        let spans = session_spans(&reader, &session, Default::default()).unwrap();
        assert_eq!(
            spans,
            session_spans(&reader, &session, Default::default()).unwrap(),
            "{sample}: ids move"
        );

        let ids: HashMap<[u8; 8], &Span> = spans.iter().map(|s| (s.span_id, s)).collect();
        assert_eq!(ids.len(), spans.len(), "{sample}: a span id repeats");
        assert!(spans.iter().all(|s| s.trace_id == spans[0].trace_id));
        let roots: Vec<&Span> = spans
            .iter()
            .filter(|s| s.parent_span_id.is_none())
            .collect();
        assert_eq!(roots.len(), 1, "{sample}: one root");
        assert_eq!(roots[0].name, "acp.session");
        for span in &spans {
            assert!(
                span.end_us >= span.start_us,
                "{sample}: {} ends before it starts",
                span.name
            );
            assert_eq!(
                text(span, "gen_ai.conversation.id"),
                Some(session.session_id.as_str())
            );
            if let Some(parent) = span.parent_span_id {
                assert!(
                    ids.contains_key(&parent),
                    "{sample}: {} has no parent",
                    span.name
                );
            }
        }

        let calls = query::session_tool_calls(&reader, &session).unwrap();
        let tool_spans: HashSet<&str> = spans
            .iter()
            .filter(|s| text(s, "gen_ai.operation.name") == Some("execute_tool"))
            .filter_map(|s| text(s, "gen_ai.tool.call.id"))
            .collect();
        let recorded: HashSet<&str> = calls.iter().map(|c| c.tool_call_id.as_str()).collect();
        assert_eq!(tool_spans, recorded, "{sample}: tool calls");
        checked_calls += recorded.len();

        let permissions = query::permission_requests(&reader, &session).unwrap();
        let permission_spans: Vec<&Span> = spans
            .iter()
            .filter(|s| s.name == "acp.permission")
            .collect();
        assert_eq!(
            permission_spans.len(),
            permissions.len(),
            "{sample}: permissions"
        );
        checked_permissions += permissions.len();
        for (span, request) in permission_spans.iter().zip(&permissions) {
            assert_eq!(
                text(span, "acp.permission.decided_by"),
                Some(match request.decided_by.as_deref() {
                    Some("client") => "user",
                    Some(by) => by,
                    None => "unanswered",
                })
            );
            // Under its tool call's span.
            let parent = ids[&span.parent_span_id.unwrap()];
            assert_eq!(
                text(parent, "gen_ai.tool.call.id"),
                request.tool_call_id.as_deref(),
                "{sample}: a permission span's parent"
            );
        }
        let turns = query::turns(&reader, &session).unwrap();
        let turn_spans = spans
            .iter()
            .filter(|s| text(s, "gen_ai.operation.name") == Some("invoke_agent"))
            .count();
        assert_eq!(turn_spans, turns.len(), "{sample}: turns");

        // Every fs/* and terminal/* request of the agent, with its method and path.
        let requests = query::client_requests(&reader, &session).unwrap();
        let request_spans: Vec<&Span> = spans
            .iter()
            .filter(|s| text(s, "acp.client_request.method").is_some())
            .collect();
        assert_eq!(
            request_spans.len(),
            requests.len(),
            "{sample}: client requests"
        );
        for (span, request) in request_spans.iter().zip(&requests) {
            assert_eq!(span.name, request.method);
            if request.method.starts_with("fs/") {
                assert!(text(span, "acp.fs.path").is_some(), "{sample}: no path");
            }
            assert_eq!(
                request.answer.is_some(),
                span.status != acptap::export::spans::Status::Unset,
                "{sample}: {} answered or not",
                request.method
            );
        }
        checked_requests += requests.len();
    }
    assert!(
        checked_calls > 0 && checked_permissions > 0 && checked_requests > 0,
        "the samples had nothing to check: {checked_calls} calls, {checked_permissions} permissions"
    );
}

/// The claude sample with a W3C `traceparent` in the `_meta` of its `session/new` and its prompt,
/// and a GitHub token in one tool call's arguments. Returns the sandbox with it imported.
fn traced_sample() -> Sandbox {
    let sb = Sandbox::new();
    let text = std::fs::read_to_string(fixture("claude-acpx-basic-approve-all.jsonl")).unwrap();
    let mut lines = Vec::new();
    for line in text.lines() {
        let mut record: serde_json::Value = serde_json::from_str(line).unwrap();
        let mut message: serde_json::Value =
            serde_json::from_str(record["text"].as_str().unwrap()).unwrap();
        match message["method"].as_str() {
            Some("session/new") => {
                message["params"]["_meta"] = serde_json::json!({ "traceparent": CLIENT_SESSION })
            }
            Some("session/prompt") => {
                message["params"]["_meta"] = serde_json::json!({ "traceparent": CLIENT_PROMPT })
            }
            _ => {}
        }
        let update = &mut message["params"]["update"];
        if update["rawInput"]["command"] == "ls -la" {
            update["rawInput"]["command"] = format!("GH_TOKEN={GITHUB_TOKEN} gh repo list").into();
        }
        record["text"] = message.to_string().into();
        lines.push(record.to_string());
    }
    let path = sb.path("traced.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    sb.acptap(&["import", path.to_str().unwrap()]);
    sb
}

const CLIENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SESSION: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const CLIENT_PROMPT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-01";
const GITHUB_TOKEN: &str = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn a_client_traceparent_puts_the_session_in_the_clients_trace() {
    let sb = traced_sample();
    let reader = Reader::open(&sb.db()).unwrap();
    let session = resolve_session(&reader, "last").unwrap();
    let spans = session_spans(&reader, &session, Default::default()).unwrap();
    assert!(spans.iter().all(|s| hex(&s.trace_id) == CLIENT_TRACE));
    let root = spans.iter().find(|s| s.name == "acp.session").unwrap();
    assert_eq!(hex(&root.parent_span_id.unwrap()), &CLIENT_SESSION[36..52]);
    let turn = spans
        .iter()
        .find(|s| text(s, "gen_ai.operation.name") == Some("invoke_agent"))
        .unwrap();
    assert_eq!(hex(&turn.parent_span_id.unwrap()), &CLIENT_PROMPT[36..52]);
    // The span ids are still the recording's own: the same as without the traceparent.
    let plain = Sandbox::new();
    plain.acptap(&[
        "import",
        fixture("claude-acpx-basic-approve-all.jsonl")
            .to_str()
            .unwrap(),
    ]);
    let plain_reader = Reader::open(&plain.db()).unwrap();
    let plain_session = resolve_session(&plain_reader, "last").unwrap();
    let plain_spans = session_spans(&plain_reader, &plain_session, Default::default()).unwrap();
    assert_ne!(plain_spans[0].trace_id, spans[0].trace_id);
    assert!(plain_spans[0].parent_span_id.is_none());
}

#[test]
fn turns_carry_the_token_usage_the_agent_reported() {
    let sb = traced_sample();
    let reader = Reader::open(&sb.db()).unwrap();
    let session = resolve_session(&reader, "last").unwrap();
    let spans = session_spans(&reader, &session, Default::default()).unwrap();
    let turn = spans
        .iter()
        .find(|s| text(s, "gen_ai.operation.name") == Some("invoke_agent"))
        .unwrap();
    let int = |key: &str| {
        turn.attributes.iter().find_map(|(k, v)| match v {
            Attribute::Int(n) if *k == key => Some(*n),
            _ => None,
        })
    };
    // As in the sample's prompt response: {"inputTokens":400,"outputTokens":80,...,"totalTokens":480}.
    assert_eq!(int("gen_ai.usage.input_tokens"), Some(400));
    assert_eq!(int("gen_ai.usage.output_tokens"), Some(80));
    assert_eq!(int("acp.usage.total_tokens"), Some(480));
    assert!(int("acp.turn.duration_us").is_some_and(|d| d > 0));
}

#[test]
fn tool_content_only_when_asked_and_redacted_like_the_database() {
    let sb = traced_sample();
    let reader = Reader::open(&sb.db()).unwrap();
    let session = resolve_session(&reader, "last").unwrap();
    let without = session_spans(&reader, &session, Default::default()).unwrap();
    assert!(
        without
            .iter()
            .all(|s| text(s, "gen_ai.tool.call.arguments").is_none()
                && text(s, "gen_ai.tool.call.result").is_none())
    );
    let with = session_spans(
        &reader,
        &session,
        acptap::export::spans::SpanOptions {
            tool_content: true,
            ..Default::default()
        },
    )
    .unwrap();
    let command = with
        .iter()
        .find_map(|s| text(s, "gen_ai.tool.call.arguments").filter(|a| a.contains("gh repo list")))
        .expect("the command's arguments");
    assert!(!command.contains(GITHUB_TOKEN), "{command}");
    assert!(command.contains("REDACTED"), "{command}");
    let results = with
        .iter()
        .filter(|s| text(s, "gen_ai.tool.call.result").is_some())
        .count();
    assert!(results > 0);
    for span in &with {
        for (_, value) in &span.attributes {
            if let Attribute::Text(t) = value {
                assert!(!t.contains(GITHUB_TOKEN));
            }
        }
    }
}

/// Live export reads a window of the recording at each look: what ended since a time, and at
/// the end also what is still open. Whatever the cut, the spans that ended before it plus the
/// window after it are exactly the whole export, span for span.
#[test]
fn windows_of_the_recording_add_up_to_the_whole_export() {
    use acptap::export::spans::SpanOptions;
    use acptap::query::Window;
    for sample in SAMPLES {
        let sb = Sandbox::new();
        sb.acptap(&["import", fixture(sample).to_str().unwrap()]);
        let reader = Reader::open(&sb.db()).unwrap();
        let session = resolve_session(&reader, "last").unwrap();
        let whole = session_spans(&reader, &session, SpanOptions::default()).unwrap();
        let mut cuts: Vec<i64> = whole.iter().flat_map(|s| [s.start_us, s.end_us]).collect();
        cuts.sort_unstable();
        cuts.dedup();
        for cut in cuts {
            let window = SpanOptions {
                window: Window {
                    since: Some(cut),
                    open: true,
                    from_message_id: None,
                },
                ..SpanOptions::default()
            };
            let mut pieced: Vec<Span> = whole
                .iter()
                .filter(|s| s.finished && s.end_us < cut && s.name != "acp.session")
                .cloned()
                .collect();
            pieced.extend(session_spans(&reader, &session, window).unwrap());
            pieced.sort_by_key(|s| s.span_id);
            let mut expected = whole.clone();
            expected.sort_by_key(|s| s.span_id);
            assert_eq!(pieced, expected, "{sample}: cut at {cut}");
        }
    }
}

/// The live export's later looks read the agent's requests to the client by the id of their
/// answer's line: from any cut, they are exactly the requests answered at or after it, plus
/// (at the end) the unanswered ones.
#[test]
fn requests_to_the_client_read_from_a_message_id_are_those_answered_since() {
    use acptap::query::Window;
    let mut checked = 0;
    for sample in SAMPLES {
        let sb = Sandbox::new();
        sb.acptap(&["import", fixture(sample).to_str().unwrap()]);
        let reader = Reader::open(&sb.db()).unwrap();
        let session = resolve_session(&reader, "last").unwrap();
        let all = query::client_requests(&reader, &session).unwrap();
        let conn = sb.conn();
        let answer_ids: HashMap<i64, i64> = conn
            .prepare("SELECT reply_to_seq, id FROM messages WHERE direction = 'c2a' AND kind = 'response' AND reply_to_seq IS NOT NULL")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let max_id: i64 = conn
            .query_row("SELECT max(id) FROM messages", [], |r| r.get(0))
            .unwrap();
        for cut in 1..=max_id + 1 {
            for open in [false, true] {
                let window = Window {
                    since: Some(i64::MAX),
                    open,
                    from_message_id: Some(cut),
                };
                let got: Vec<i64> = query::client_requests_in(&reader, &session, window)
                    .unwrap()
                    .iter()
                    .map(|r| r.seq)
                    .collect();
                let expected: Vec<i64> = all
                    .iter()
                    .filter(|r| match answer_ids.get(&r.seq) {
                        Some(id) => r.answer.is_some() && *id >= cut,
                        None => open,
                    })
                    .map(|r| r.seq)
                    .collect();
                assert_eq!(got, expected, "{sample}: from message {cut}, open {open}");
            }
        }
        checked += all.len();
    }
    assert!(checked > 0, "no sample has requests to the client");
}
