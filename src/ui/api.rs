//! The JSON the page reads, and the downloads. Every list is a page (`offset`, `limit`, and the
//! `total` that matches: the views' one pager, `query::pages::Page`) so the page can show a
//! window of a 60,000-turn session; every recorded string is sent as data and cut where a row
//! only needs a preview. A row is its type's own `Serialize` (what `--json` prints), with what
//! only this view adds (a preview, counts, diffs) or without what a list leaves out.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{App, UiError, json_response, read};
use crate::inspect::report::diff::diff_view;
use crate::inspect::show::{self, Item, TurnView};
use crate::inspect::{cut_json_strings as cut_strings, cut_text as cut};
use crate::query::Reader;
use crate::query::pages::{self, LineFilter, Page, PageRequest, ToolCallFilter};
use crate::query::{self, QueryError, SessionRef, SessionSummary, ToolCallRow};

/// A row's preview of a recorded text, in characters.
const PREVIEW_CHARS: usize = 400;
/// A string in a detail is cut at this many bytes (a line can be megabytes).
const DETAIL_BYTES: usize = 1 << 20;
/// The items of a page when the request does not say.
const DEFAULT_PAGE: usize = 100;
/// The most items one page may ask for.
const MAX_PAGE: usize = 1_000;

/// The first `max` characters of `text`.
fn preview(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

/// A session named exactly: its connection and its id (an id recorded by two connections, a
/// `session/load`, is two sessions here).
pub(super) fn session_ref(
    reader: &Reader,
    connection_id: i64,
    session_id: String,
) -> Result<SessionRef, UiError> {
    let session = SessionRef {
        connection_id,
        session_id,
    };
    query::session_summary_of(reader, &session).map_err(|_| {
        UiError::NotFound(format!(
            "no session {} in connection {connection_id}",
            session.session_id
        ))
    })?;
    Ok(session)
}

/// The page of a list a request asks for.
#[derive(Deserialize)]
pub(super) struct Paging {
    #[serde(default)]
    offset: i64,
    limit: Option<i64>,
}

impl Paging {
    /// The page asked for: from 0 at least, from 1 to `MAX_PAGE` items.
    pub(super) fn request(&self) -> PageRequest {
        let at_least_0 = |n: i64| usize::try_from(n).unwrap_or(0);
        PageRequest::new(
            at_least_0(self.offset),
            self.limit.map(at_least_0),
            DEFAULT_PAGE,
            MAX_PAGE,
        )
    }
}

pub(super) async fn sessions(State(app): State<Arc<App>>) -> Response {
    respond(
        read(&app, |r| {
            Ok(query::list_sessions(r, 1000).map_err(QueryError::from)?)
        })
        .await,
    )
}

pub(super) fn respond(result: Result<impl serde::Serialize, Response>) -> Response {
    match result {
        Ok(value) => json_response(value),
        Err(e) => e,
    }
}

/// One session's head: its summary, how many lines its connection recorded, and how many
/// report pages it makes. Cheap: the page reads it again whenever anything was recorded.
pub(super) async fn session(
    State(app): State<Arc<App>>,
    Path((connection, session)): Path<(i64, String)>,
) -> Response {
    respond(
        read(&app, move |r| {
            let session = session_ref(r, connection, session)?;
            let summary: SessionSummary =
                query::session_summary_of(r, &session).map_err(QueryError::from)?;
            let lines = query::connection_message_count(r, connection, 0..i64::MAX)
                .map_err(QueryError::from)?;
            let report_pages =
                (summary.turns.max(1) as usize).div_ceil(crate::inspect::report::TURNS_PER_PAGE);
            Ok(json!({
                "protocol": summary.protocol_version.as_ref().map(crate::inspect::protocol_label),
                "session": summary,
                "lines": lines,
                "report_pages": report_pages,
            }))
        })
        .await,
    )
}

/// What the filters offer: the methods of the session's connection's lines (with how many lines
/// each), and the kinds and statuses of its tool calls. A scan of the connection, so read when
/// the session opens, not on every change.
pub(super) async fn facets(
    State(app): State<Arc<App>>,
    Path((connection, session)): Path<(i64, String)>,
) -> Response {
    respond(
        read(&app, move |r| {
            let session = session_ref(r, connection, session)?;
            let (kinds, statuses) =
                pages::tool_call_facets(r, &session).map_err(QueryError::from)?;
            Ok(json!({
                "methods": pages::methods(r, connection).map_err(QueryError::from)?,
                "kinds": kinds,
                "statuses": statuses,
            }))
        })
        .await,
    )
}

/// A turn's own fields (its `Serialize`, as `show --json` writes them) without its items, and
/// what they count: `tool_calls`, of which `failed`, and `permissions`. The items apart.
fn turn_fields(mut turn: TurnView) -> (Value, Vec<Item>) {
    let items = std::mem::take(&mut turn.items);
    let count = |wanted: fn(&Item) -> bool| items.iter().filter(|i| wanted(i)).count();
    let counts = [
        ("tool_calls", count(|i| matches!(i, Item::ToolCall(_)))),
        (
            "failed",
            count(|i| matches!(i, Item::ToolCall(c) if c.status.as_deref() == Some("failed"))),
        ),
        (
            "permissions",
            count(|i| matches!(i, Item::Permission { .. })),
        ),
    ];
    let mut value = json!(turn);
    if let Some(object) = value.as_object_mut() {
        object.retain(|key, _| key != "items");
        for (name, n) in counts {
            object.insert(name.into(), n.into());
        }
    }
    (value, items)
}

/// A turn as a row of the list: what it asked, how it ended (both previewed), what it did.
fn turn_row(mut turn: TurnView) -> Value {
    turn.prompt = preview(&turn.prompt, PREVIEW_CHARS);
    turn.error = turn.error.as_deref().map(|e| preview(e, PREVIEW_CHARS));
    turn_fields(turn).0
}

pub(super) async fn turns(
    State(app): State<Arc<App>>,
    Path((connection, session)): Path<(i64, String)>,
    Query(paging): Query<Paging>,
) -> Response {
    respond(
        read(&app, move |r| {
            let session = session_ref(r, connection, session)?;
            let page = paging.request();
            let total = query::session_summary_of(r, &session)
                .map_err(QueryError::from)?
                .turns;
            let mut items = Vec::new();
            let turns = page.offset..page.offset.saturating_add(page.limit);
            show::for_each_turn(r, &session, turns, |t| items.push(turn_row(t)))?;
            Ok(Page::new(&page, usize::try_from(total).unwrap_or(0), items))
        })
        .await,
    )
}

/// A tool call with what a detail shows: the whole row with what it derives
/// (`ToolCallRow::detail_json`), every long string cut, and its diffs as rows (the report's
/// computation).
fn tool_call_detail(call: &ToolCallRow) -> Value {
    let diffs: Vec<_> = call
        .content
        .iter()
        .filter_map(Value::as_array)
        .flatten()
        .filter(|item| item.get("type").and_then(Value::as_str) == Some("diff"))
        .map(diff_view)
        .collect();
    let mut value = call.detail_json();
    cut_strings(&mut value, DETAIL_BYTES);
    value["diffs"] = json!(diffs);
    value
}

/// A turn's (or the opening's) items as a detail shows them: tool calls with their diffs, every
/// long string cut.
fn item_details(items: &[Item]) -> Vec<Value> {
    items
        .iter()
        .map(|item| match item {
            Item::ToolCall(call) => {
                let mut value = tool_call_detail(call);
                value["type"] = json!("tool_call");
                value
            }
            other => {
                let mut value = json!(other);
                cut_strings(&mut value, DETAIL_BYTES);
                value
            }
        })
        .collect()
}

/// What the session's lines held before its first turn (a resume or load and the history it
/// replayed), as a turn's items. Read when the session opens.
pub(super) async fn opening(
    State(app): State<Arc<App>>,
    Path((connection, session)): Path<(i64, String)>,
) -> Response {
    respond(
        read(&app, move |r| {
            let session = session_ref(r, connection, session)?;
            Ok(json!({"items": item_details(&show::opening(r, &session)?)}))
        })
        .await,
    )
}

/// One whole turn: its prompt, the agent's text, plans, tool calls (with diffs) and decisions.
pub(super) async fn turn(
    State(app): State<Arc<App>>,
    Path((connection, session, index)): Path<(i64, String, usize)>,
) -> Response {
    respond(
        read(&app, move |r| {
            let session = session_ref(r, connection, session)?;
            let mut found = None;
            let at = index.checked_sub(1).ok_or_else(|| {
                UiError::NotFound("no turn 0: turns are numbered from 1".to_owned())
            })?;
            show::for_each_turn(r, &session, at..at + 1, |t| found = Some(t))?;
            let mut turn = found.ok_or_else(|| UiError::NotFound(format!("no turn {index}")))?;
            turn.prompt = cut(&turn.prompt, DETAIL_BYTES).0.to_string();
            let (mut value, items) = turn_fields(turn);
            value["items"] = json!(item_details(&items));
            Ok(value)
        })
        .await,
    )
}

#[derive(Deserialize)]
pub(super) struct ToolQuery {
    status: Option<String>,
    kind: Option<String>,
    q: Option<String>,
}

/// An empty filter value means "any".
fn given(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.is_empty())
}

pub(super) async fn tool_calls(
    State(app): State<Arc<App>>,
    Path((connection, session)): Path<(i64, String)>,
    Query(paging): Query<Paging>,
    Query(query): Query<ToolQuery>,
) -> Response {
    respond(
        read(&app, move |r| {
            let session = session_ref(r, connection, session)?;
            let filter = ToolCallFilter {
                status: given(query.status),
                kind: given(query.kind),
                text: given(query.q),
            };
            let page = pages::tool_calls(r, &session, &filter, &paging.request())
                .map_err(QueryError::from)?;
            // The list's row (`ToolCallRow::into_list_json`): its title previewed, five paths.
            Ok(page.map(|mut call| {
                call.title = call.title.as_deref().map(|t| preview(t, PREVIEW_CHARS));
                let mut row = call.into_list_json();
                if let Some(Value::Array(paths)) = row.get_mut("paths") {
                    paths.truncate(5);
                }
                row
            }))
        })
        .await,
    )
}

/// One tool call, whole: content, diffs, arguments and result, and its permission requests.
pub(super) async fn tool_call(
    State(app): State<Arc<App>>,
    Path((connection, session, id)): Path<(i64, String, String)>,
) -> Response {
    respond(
        read(&app, move |r| {
            let session = session_ref(r, connection, session)?;
            let call = query::tool_call(r, &session, &id)
                .map_err(QueryError::from)?
                .ok_or_else(|| UiError::NotFound(format!("no tool call {id}")))?;
            let mut value = tool_call_detail(&call);
            value["permissions"] = json!(
                pages::permission_requests_of_call(r, &session, &id).map_err(QueryError::from)?
            );
            Ok(value)
        })
        .await,
    )
}

pub(super) async fn permissions(
    State(app): State<Arc<App>>,
    Path((connection, session)): Path<(i64, String)>,
    Query(paging): Query<Paging>,
) -> Response {
    respond(
        read(&app, move |r| {
            let session = session_ref(r, connection, session)?;
            let mut page = pages::permission_requests(r, &session, &paging.request())
                .map_err(QueryError::from)?;
            for item in &mut page.items {
                let cut = |text: &mut Option<String>| {
                    *text = text.as_deref().map(|t| preview(t, PREVIEW_CHARS));
                };
                cut(&mut item.tool_call_title);
                cut(&mut item.request.title);
                cut(&mut item.request.description);
                cut(&mut item.request.subject_summary);
                if let Some(subject) = &mut item.request.subject {
                    cut_strings(subject, PREVIEW_CHARS);
                }
            }
            Ok(page)
        })
        .await,
    )
}

#[derive(Deserialize)]
pub(super) struct LineQuery {
    direction: Option<String>,
    method: Option<String>,
    q: Option<String>,
}

pub(super) async fn lines(
    State(app): State<Arc<App>>,
    Path((connection, session)): Path<(i64, String)>,
    Query(paging): Query<Paging>,
    Query(query): Query<LineQuery>,
) -> Response {
    respond(
        read(&app, move |r| {
            session_ref(r, connection, session)?;
            let filter = LineFilter {
                direction: given(query.direction),
                method: given(query.method),
                text: given(query.q).map(String::into_bytes),
            };
            let page = pages::lines(r, connection, &filter, &paging.request())
                .map_err(QueryError::from)?;
            // The line's row (`MessageRow`'s `Serialize`, its strings cut) and the start of
            // the line.
            Ok(page.map(|m| {
                let head = &m.raw[..m.raw.len().min(PREVIEW_CHARS * 4)];
                let mut row = json!(m);
                cut_strings(&mut row, PREVIEW_CHARS);
                row["preview"] = json!(preview(&String::from_utf8_lossy(head), PREVIEW_CHARS));
                row
            }))
        })
        .await,
    )
}

/// One raw line, whole up to 1 MiB.
pub(super) async fn line(
    State(app): State<Arc<App>>,
    Path((connection, session, seq)): Path<(i64, String, i64)>,
) -> Response {
    respond(
        read(&app, move |r| {
            session_ref(r, connection, session)?;
            let m = pages::line(r, connection, seq)
                .map_err(QueryError::from)?
                .ok_or_else(|| UiError::NotFound(format!("no line {seq}")))?;
            let text = String::from_utf8_lossy(&m.raw);
            let (kept, was_cut) = cut(&text, DETAIL_BYTES);
            // The line's row (`MessageRow`'s `Serialize`, its strings cut) and the line.
            let mut value = json!(m);
            cut_strings(&mut value, DETAIL_BYTES);
            value["text"] = json!(kept);
            value["cut"] = json!(was_cut);
            // A last line without its `\n` (the agent ended without one) is kept so.
            value["line_ending"] = json!(m.raw.ends_with(b"\n"));
            Ok(value)
        })
        .await,
    )
}

#[derive(Deserialize)]
pub(super) struct DownloadQuery {
    /// The report's page (from 1), for a session longer than one page.
    #[serde(default)]
    page: Option<usize>,
}

/// A session exported as a file, sent as an attachment (never shown under this origin).
pub(super) async fn download(
    State(app): State<Arc<App>>,
    Path((connection, session, file)): Path<(i64, String, String)>,
    Query(query): Query<DownloadQuery>,
) -> Response {
    let result = read(&app, move |r| {
        let session = session_ref(r, connection, session)?;
        let (body, content_type) = match file.as_str() {
            "report.html" => {
                let per = crate::inspect::report::TURNS_PER_PAGE;
                let turns = query::session_summary_of(r, &session)
                    .map_err(QueryError::from)?
                    .turns
                    .max(1) as usize;
                let pages = turns.div_ceil(per);
                let page = match query.page.unwrap_or(1) {
                    n @ 1.. if n <= pages => n - 1,
                    n => {
                        return Err(UiError::NotFound(format!(
                            "no report page {n}: this session has pages 1 to {pages}"
                        )));
                    }
                };
                let html =
                    crate::inspect::report::render(r, &session, page * per..(page + 1) * per)?;
                (html.into_bytes(), "text/html; charset=utf-8")
            }
            "transcript.jsonl" => {
                let mut out = Vec::new();
                for record in crate::export::transcript::export(r, connection)? {
                    serde_json::to_writer(&mut out, &record)?;
                    out.push(b'\n');
                }
                (out, "application/x-ndjson")
            }
            "trace.ndjson" => {
                let mut out = String::new();
                for line in crate::export::trace::export(r, connection)? {
                    out.push_str(&line);
                    out.push('\n');
                }
                (out.into_bytes(), "application/x-ndjson")
            }
            "otlp.json" => {
                let spans = crate::export::spans::session_spans(r, &session, Default::default())?;
                let mut json = crate::export::otlp::to_json(&spans)?;
                json.push(b'\n');
                (json, "application/json")
            }
            other => {
                return Err(UiError::NotFound(format!(
                    "no download {other}: report.html, transcript.jsonl, trace.ndjson or otlp.json"
                )));
            }
        };
        // The file's name: the session id's safe characters only (it is the agent's string).
        let safe: String = session
            .session_id
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .take(64)
            .collect();
        Ok((
            body,
            content_type,
            format!("acptap-{connection}-{safe}-{file}"),
        ))
    })
    .await;
    match result {
        Ok((body, content_type, name)) => (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, content_type.to_owned()),
                (
                    header::CONTENT_DISPOSITION,
                    format!("attachment; filename=\"{name}\""),
                ),
            ],
            body,
        )
            .into_response(),
        Err(e) => e,
    }
}

/// What the suggested-policy page asks for: `acptap policy suggest`'s `--min-evidence` and
/// `--agent`.
#[derive(Deserialize)]
pub(super) struct SuggestQuery {
    min_evidence: Option<usize>,
    agent: Option<String>,
}

fn suggestion_for(
    reader: &Reader,
    query: &SuggestQuery,
) -> Result<crate::learn::Suggestion, UiError> {
    let filter = query::AnsweredFilter {
        agent: query.agent.clone().filter(|a| !a.is_empty()),
        ..Default::default()
    };
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    // At least 1, and no more than anyone asks for: past 1,000 nothing is ever suggested.
    let min_evidence = query.min_evidence.unwrap_or(3).clamp(1, 1_000);
    Ok(crate::learn::suggestion(
        reader,
        &filter,
        min_evidence,
        home.as_deref(),
    )?)
}

/// The policy the user's answers suggest, with its evidence (as `policy suggest --json`).
pub(super) async fn policy_suggestion(
    State(app): State<Arc<App>>,
    Query(query): Query<SuggestQuery>,
) -> Response {
    respond(read(&app, move |r| suggestion_for(r, &query)).await)
}

/// The suggested policy as a file to save.
pub(super) async fn policy_download(
    State(app): State<Arc<App>>,
    Query(query): Query<SuggestQuery>,
) -> Response {
    match read(&app, move |r| suggestion_for(r, &query)).await {
        Ok(suggestion) => (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, "text/plain; charset=utf-8".to_owned()),
                (
                    header::CONTENT_DISPOSITION,
                    "attachment; filename=\"acptap-suggested-policy.toml\"".to_owned(),
                ),
            ],
            suggestion.policy,
        )
            .into_response(),
        Err(e) => e,
    }
}
