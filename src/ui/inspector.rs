//! The inspector's views of where a session's time went and what went wrong: the waterfall (a
//! session's turns on one axis, a turn's spans), the latency per method and tool kind (what
//! `acptap stats --by-method --json` prints), `acptap check`'s findings placed on their turns,
//! the session's info (what each side offered in `initialize`), the diff of two sessions (what
//! `acptap diff --json` prints), and where a row is in its list (a click on a span jumps to it).

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::response::Response;
use serde::Deserialize;
use serde_json::json;

use super::api::{Paging, respond, session_ref};
use super::{App, UiError, read};
use crate::query;
use crate::query::pages::{self, Page, RowOf};
use crate::query::{Reader, SessionRef, compare, findings, info, latency, waterfall};

/// The answer to a request about the session the path names (404 if there is none): what
/// `view` reads of it.
async fn of_session<T: serde::Serialize + Send + 'static>(
    app: &App,
    connection: i64,
    session: String,
    view: impl FnOnce(&Reader, &SessionRef) -> Result<T, UiError> + Send + 'static,
) -> Response {
    respond(
        read(app, move |r| {
            let session = session_ref(r, connection, session)?;
            view(r, &session)
        })
        .await,
    )
}

/// A session's axis: its turns' extent and its idle stretches.
pub(super) async fn axis(
    State(app): State<Arc<App>>,
    Path((connection, session)): Path<(i64, String)>,
) -> Response {
    of_session(&app, connection, session, |r, s| Ok(waterfall::axis(r, s)?)).await
}

/// A page of turns, each with its spans (the session's waterfall rows).
pub(super) async fn turn_rows(
    State(app): State<Arc<App>>,
    Path((connection, session)): Path<(i64, String)>,
    Query(paging): Query<Paging>,
) -> Response {
    of_session(&app, connection, session, move |r, s| {
        let page = paging.request();
        let turns = query::session_summary_of(r, s)?.turns;
        let range = page.offset..page.offset.saturating_add(page.limit);
        let items = waterfall::turn_spans(r, s, range)?;
        Ok(Page::new(&page, usize::try_from(turns).unwrap_or(0), items))
    })
    .await
}

/// One turn's spans.
pub(super) async fn turn(
    State(app): State<Arc<App>>,
    Path((connection, session, index)): Path<(i64, String, usize)>,
) -> Response {
    of_session(&app, connection, session, move |r, s| {
        let at = index
            .checked_sub(1)
            .ok_or_else(|| UiError::NotFound("no turn 0: turns are numbered from 1".to_owned()))?;
        waterfall::turn_spans(r, s, at..at + 1)?
            .pop()
            .ok_or_else(|| UiError::NotFound(format!("no turn {index}")))
    })
    .await
}

/// Which row a click asks for: a tool call by id, a permission request or a line by seq.
#[derive(Deserialize)]
pub(super) struct Locate {
    tab: String,
    tool_call_id: Option<String>,
    seq: Option<i64>,
}

/// Where a row is in its unfiltered list (`{"index": N}`, from 0), so the page can scroll to it.
pub(super) async fn locate(
    State(app): State<Arc<App>>,
    Path((connection, session)): Path<(i64, String)>,
    Query(locate): Query<Locate>,
) -> Response {
    of_session(&app, connection, session, move |r, s| {
        Ok(json!({ "index": position(r, s, &locate)? }))
    })
    .await
}

fn position(r: &Reader, session: &SessionRef, locate: &Locate) -> Result<i64, UiError> {
    let row = match (locate.tab.as_str(), &locate.tool_call_id, locate.seq) {
        ("tools", Some(id), _) => RowOf::ToolCall(id.clone()),
        ("permissions", _, Some(seq)) => RowOf::Permission(seq),
        ("lines", _, Some(seq)) => RowOf::Line(seq),
        _ => {
            return Err(UiError::BadRequest(
                "locate: give tab=tools with tool_call_id, or tab=permissions or tab=lines with seq"
                    .to_owned(),
            ));
        }
    };
    pages::position(r, session, &row)?
        .ok_or_else(|| UiError::NotFound(format!("no such row in {}", locate.tab)))
}

/// The two sessions a diff compares.
#[derive(Deserialize)]
pub(super) struct Pair {
    a_connection: i64,
    a_session: String,
    b_connection: i64,
    b_session: String,
}

/// `acptap diff --json A B` (with its default timing threshold), and the two sessions' latency
/// per method and tool kind, for the deltas.
pub(super) async fn diff(State(app): State<Arc<App>>, Query(pair): Query<Pair>) -> Response {
    respond(
        read(&app, move |r| {
            let a = session_ref(r, pair.a_connection, pair.a_session)?;
            let b = session_ref(r, pair.b_connection, pair.b_session)?;
            let shape_a = compare::shape(r, &a)?;
            let shape_b = compare::shape(r, &b)?;
            let report = compare::report(&shape_a, &shape_b, compare::DEFAULT_TIMING_THRESHOLD_US);
            let latency_a = latency::by_method(r, &a)?;
            let latency_b = latency::by_method(r, &b)?;
            Ok(json!({
                "diff": report,
                "latency": {"a": latency_a, "b": latency_b},
            }))
        })
        .await,
    )
}

/// The latency per method and per tool kind: `acptap stats SESSION --by-method --json`.
pub(super) async fn latency(
    State(app): State<Arc<App>>,
    Path((connection, session)): Path<(i64, String)>,
) -> Response {
    of_session(&app, connection, session, |r, s| {
        Ok(latency::by_method(r, s)?)
    })
    .await
}

/// `acptap check SESSION --json`'s findings (silenced as the config says), each placed on its
/// session and turn.
pub(super) async fn findings(
    State(app): State<Arc<App>>,
    Path((connection, session)): Path<(i64, String)>,
) -> Response {
    let silenced = app.silenced.clone();
    of_session(&app, connection, session, move |r, s| {
        Ok(findings::session_findings(r, s, |agent, rule| {
            silenced(agent, rule)
        })?)
    })
    .await
}

/// Who talked and what each side offered: client and agent, protocol versions, capabilities,
/// authentication methods, modes and commands.
pub(super) async fn info(
    State(app): State<Arc<App>>,
    Path((connection, session)): Path<(i64, String)>,
) -> Response {
    of_session(&app, connection, session, |r, s| {
        Ok(info::session_info(r, s)?)
    })
    .await
}
