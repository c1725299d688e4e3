//! The span model of a recording (`export::spans`), checked on every shared sample: one trace,
//! one root, every tool call and permission request present with the right parent, ids unique
//! and the same when the recording is read again.

use std::collections::{HashMap, HashSet};

use acptap::export::spans::{Attribute, Span, session_spans};
use acptap::record::Reader;
use acptap::record::queries::{self, resolve_session};

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
        let spans = session_spans(&reader, &session).unwrap();
        assert_eq!(
            spans,
            session_spans(&reader, &session).unwrap(),
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

        let calls = queries::session_tool_calls(&reader, &session).unwrap();
        let tool_spans: HashSet<&str> = spans
            .iter()
            .filter(|s| text(s, "gen_ai.operation.name") == Some("execute_tool"))
            .filter_map(|s| text(s, "gen_ai.tool.call.id"))
            .collect();
        let recorded: HashSet<&str> = calls.iter().map(|c| c.tool_call_id.as_str()).collect();
        assert_eq!(tool_spans, recorded, "{sample}: tool calls");
        checked_calls += recorded.len();

        let permissions = queries::permission_requests(&reader, &session).unwrap();
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
                Some(request.decided_by.as_deref().unwrap_or("unanswered"))
            );
            // Under its tool call's span.
            let parent = ids[&span.parent_span_id.unwrap()];
            assert_eq!(
                text(parent, "gen_ai.tool.call.id"),
                request.tool_call_id.as_deref(),
                "{sample}: a permission span's parent"
            );
        }
        let turns = queries::turns(&reader, &session).unwrap();
        let turn_spans = spans
            .iter()
            .filter(|s| text(s, "gen_ai.operation.name") == Some("invoke_agent"))
            .count();
        assert_eq!(turn_spans, turns.len(), "{sample}: turns");

        // Every fs/* and terminal/* request of the agent, with its method and path.
        let requests = queries::client_requests(&reader, &session).unwrap();
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
