//! What each MCP tool answers, as plain functions of the database: arguments in, JSON out.
//! Every answer is sized for a model: lists are paged with the total and how many more there
//! are (the views' one pager, `query::pages::Page`), and every recorded string is cut (with
//! `…[N more bytes]`) where a list only needs a preview. A row is its type's own `Serialize`
//! (what `--json` prints, the UI sends the same), with what only this view adds or without what a
//! list leaves out: durations in microseconds, times in microseconds since the epoch. Recorded
//! text is data, never instructions: the tool descriptions say so.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::inspect::cut_json_strings;
use crate::inspect::report::diff::{DiffRow, diff_view};
use crate::inspect::show::{self, Item};
use crate::query::Reader;
use crate::query::pages::{self, Page, PageRequest};
use crate::query::{self, QueryError, SessionRef, SessionSummary, ToolCallRow, ToolFilter};
use crate::record::StoreError;

/// A recorded string in a list is cut to this many bytes.
const LIST_TEXT: usize = 500;
/// A recorded string in a detail is cut to this many bytes.
const DETAIL_TEXT: usize = 20_000;
/// The most rows one call may ask for.
const MAX_LIMIT: usize = 100;
/// A timeline stops adding turns past this many bytes of JSON (a model reads it whole).
pub(crate) const ANSWER_BYTES: usize = 200_000;

/// Why a tool (or a resource) could not answer. Every one is a tool error the model reads
/// (`isError: true`, the text with its causes: [`ToolError::text`]); a resource answers a bad
/// argument as "not found" (-32002) and the others as an internal error (-32603).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ToolError {
    /// A bad argument (an unknown session, tool call or resource, a malformed time or glob, a
    /// policy file that does not load), said so the model can correct its call.
    #[error("{0}")]
    BadArgument(String),
    /// The database could not be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A read of the recording failed.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// A transcript line could not be written as JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The directory `acptap mcp` runs in could not be read.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl ToolError {
    /// The error and each of its causes, joined by `: ` (as `anyhow` writes `{:#}`).
    pub(crate) fn text(&self) -> String {
        let mut text = self.to_string();
        let mut cause = std::error::Error::source(self);
        while let Some(e) = cause {
            text.push_str(": ");
            text.push_str(&e.to_string());
            cause = e.source();
        }
        text
    }
}

fn bad(text: impl Into<String>) -> ToolError {
    ToolError::BadArgument(text.into())
}

/// `limit` rows (default `default`, at most MAX_LIMIT) from `offset` (default 0), with a note
/// when the limit asked for was changed.
fn page(offset: Option<usize>, limit: Option<usize>, default: usize) -> PageRequest {
    PageRequest::new(offset.unwrap_or(0), limit, default, MAX_LIMIT)
}

/// A session by `last`, its id, or a unique prefix of it.
fn session(reader: &Reader, spec: &str) -> Result<SessionRef, ToolError> {
    query::resolve_session(reader, spec).map_err(|e| bad(format!("session {spec:?}: {e}")))
}

/// A session: its summary as `sessions --json` writes it, and its protocol version in words
/// (`protocol`: `v1`, `v2 (draft)`), every string cut for a list.
fn session_row(s: &SessionSummary) -> Value {
    let mut row = json!(s);
    row["protocol"] = json!(
        s.protocol_version
            .as_ref()
            .map(crate::inspect::protocol_label)
    );
    cut_json_strings(&mut row, LIST_TEXT);
    row
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
pub(crate) struct ListSessions {
    /// Only sessions whose agent name contains this text (case-insensitive).
    pub agent: Option<String>,
    /// Only sessions whose label contains this text (case-insensitive).
    pub label: Option<String>,
    /// Only sessions started at or after this time: RFC 3339 (`2026-11-24T12:00:00Z`) or an
    /// age (`30m`, `24h`, `7d`).
    pub since: Option<String>,
    /// Only sessions in this state: `live`, `ended` or `interrupted`.
    pub status: Option<String>,
    /// Rows to return (default 20, at most 100).
    pub limit: Option<usize>,
    /// Rows to skip.
    pub offset: Option<usize>,
}

/// A time as microseconds since the epoch: RFC 3339, or an age before now (`30m`, `24h`, `7d`,
/// read by `humantime` as the command line's durations are).
fn parse_since(text: &str) -> Result<i64, ToolError> {
    if let Ok(age) = humantime::parse_duration(text.trim()) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros() as i64)
            .unwrap_or(0);
        return Ok(now.saturating_sub(i64::try_from(age.as_micros()).unwrap_or(i64::MAX)));
    }
    crate::record::transcript::parse_start(text).map_err(|_| {
        bad(format!(
            "since {text:?}: give an RFC 3339 time (2026-11-24T12:00:00Z) or an age (30m, 24h, 7d)"
        ))
    })
}

pub(crate) fn list_sessions(reader: &Reader, args: ListSessions) -> Result<Value, ToolError> {
    if let Some(status) = &args.status
        && !["live", "ended", "interrupted"].contains(&status.as_str())
    {
        return Err(bad(format!(
            "status {status:?}: one of live, ended, interrupted"
        )));
    }
    let since = args.since.as_deref().map(parse_since).transpose()?;
    let contains = |field: Option<&str>, wanted: &Option<String>| match wanted {
        None => true,
        Some(w) => field.is_some_and(|f| f.to_lowercase().contains(&w.to_lowercase())),
    };
    let matching: Vec<SessionSummary> = query::list_sessions(reader, usize::MAX)
        .map_err(QueryError::from)?
        .into_iter()
        .filter(|s| contains(Some(&s.agent), &args.agent))
        .filter(|s| contains(s.label.as_deref(), &args.label))
        .filter(|s| since.is_none_or(|t| s.created_at >= t))
        .filter(|s| args.status.as_deref().is_none_or(|st| s.state == st))
        .collect();
    let page = page(args.offset, args.limit, 20).page_of(matching.iter());
    Ok(json!(page.map(session_row)))
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct SessionTimeline {
    /// The session: `last`, its id, or a unique prefix of it.
    pub session: String,
    /// The first turn to show, from 1 (default 1).
    pub from_turn: Option<usize>,
    /// How many turns (default 5, at most 100).
    pub turns: Option<usize>,
}

/// A tool call as a line of a list (`ToolCallRow::into_list_json`: without its content,
/// locations, arguments and result), every string cut.
fn tool_call_row(call: ToolCallRow) -> Value {
    let mut row = call.into_list_json();
    cut_json_strings(&mut row, LIST_TEXT);
    row
}

/// A timeline's items for a model: as `show --json` has them, but a tool call as the list
/// tools give it, and a tool call's and a permission request's strings cut as in a list.
fn timeline_items(items: Vec<Item>) -> Vec<Value> {
    items
        .into_iter()
        .map(|item| match item {
            Item::ToolCall(call) => {
                let mut row = tool_call_row(call);
                row["type"] = json!("tool_call");
                row
            }
            permission @ Item::Permission { .. } => {
                let mut row = json!(permission);
                cut_json_strings(&mut row, LIST_TEXT);
                row
            }
            other => json!(other),
        })
        .collect()
}

pub(crate) fn session_timeline(reader: &Reader, args: SessionTimeline) -> Result<Value, ToolError> {
    let session = session(reader, &args.session)?;
    let turns_asked = page(None, args.turns, 5);
    let first = args.from_turn.unwrap_or(1).max(1) - 1;
    let end = first.saturating_add(turns_asked.limit);
    let head = show::head(reader, &session)?;
    let mut turns = Vec::new();
    let mut size = 0;
    show::for_each_turn(reader, &session, first..end, |mut turn| {
        if size > ANSWER_BYTES {
            return;
        }
        // The turn as `show --json` writes it, with its items for a model.
        let items = timeline_items(std::mem::take(&mut turn.items));
        let mut value = json!(turn);
        value["items"] = json!(items);
        cut_json_strings(&mut value, DETAIL_TEXT / 4);
        size += value.to_string().len();
        turns.push(value);
    })?;
    let shown = turns.len();
    let mut answer = json!({
        "session": session_row(&head.session),
        "total_turns": head.total_turns,
        "turns": turns,
        "more_turns": head.total_turns.saturating_sub(first.saturating_add(shown)),
    });
    // What came before the first turn (a resume or load and the history it replayed), with it:
    // `opening`, as `show --json` names it.
    if first == 0 {
        let opening = show::opening(reader, &session)?;
        if !opening.is_empty() {
            let mut items = json!(timeline_items(opening));
            cut_json_strings(&mut items, DETAIL_TEXT / 4);
            answer["opening"] = items;
        }
    }
    if first.saturating_add(shown) < head.total_turns {
        answer["next_from_turn"] = json!(first + shown + 1);
    }
    if let Some(note) = turns_asked.note {
        answer["note"] = json!(note);
    }
    Ok(answer)
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
pub(crate) struct ListToolCalls {
    /// Only this session's calls (`last`, an id or a unique prefix); default: every session.
    pub session: Option<String>,
    /// Only calls of this kind: read, edit, delete, move, search, execute, think, fetch, other.
    pub kind: Option<String>,
    /// Only calls with this final status: pending, in_progress, completed, failed.
    pub status: Option<String>,
    /// Only calls touching a path matching this glob (`**/src/*.rs`, `/home/me/project/**`).
    pub path: Option<String>,
    /// Only calls whose title contains this text (case-insensitive).
    pub text: Option<String>,
    /// Rows to return (default 50, at most 100).
    pub limit: Option<usize>,
    /// Rows to skip.
    pub offset: Option<usize>,
}

pub(crate) fn list_tool_calls(reader: &Reader, args: ListToolCalls) -> Result<Value, ToolError> {
    let filter = ToolFilter {
        session: args
            .session
            .as_deref()
            .map(|s| session(reader, s))
            .transpose()?,
        status: args.status.clone(),
        kind: args.kind.clone(),
    };
    let glob = args
        .path
        .as_deref()
        .map(|p| {
            crate::policy::paths::glob_set(&[p], Default::default())
                .map_err(|e| bad(format!("path: {e}")))
        })
        .transpose()?;
    let text = args.text.as_deref().map(str::to_lowercase);
    let page = page(args.offset, args.limit, 50);
    let mut total = 0;
    let mut items = Vec::new();
    query::for_each_tool_call(reader, &filter, |call| {
        let path_ok = glob
            .as_ref()
            .is_none_or(|g| call.paths().iter().any(|p| g.is_match(p)));
        let text_ok = text.as_ref().is_none_or(|t| {
            call.title
                .as_deref()
                .is_some_and(|title| title.to_lowercase().contains(t))
        });
        if path_ok && text_ok {
            if total >= page.offset && items.len() < page.limit {
                items.push(tool_call_row(call));
            }
            total += 1;
        }
    })
    .map_err(QueryError::from)?;
    Ok(json!(Page::new(&page, total, items)))
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct GetToolCall {
    /// The session (`last`, an id or a unique prefix).
    pub session: String,
    /// The tool call's id, as `list_tool_calls` gives it.
    pub tool_call_id: String,
}

/// A diff as unified-diff text: `--- path`, then each shown line with its sign, folded runs
/// as `@@ N unchanged line(s) @@`.
fn unified(item: &Value) -> String {
    let view = diff_view(item);
    let mut out = format!(
        "--- {}{}\n+++ {}\n",
        view.path,
        if view.new_file { " (new file)" } else { "" },
        view.path
    );
    for row in &view.rows {
        match row {
            DiffRow::Fold { count } => out.push_str(&format!("@@ {count} unchanged line(s) @@\n")),
            DiffRow::Line { sign, text, .. } => {
                out.push_str(sign);
                out.push_str(text);
                out.push('\n');
            }
        }
    }
    out
}

pub(crate) fn get_tool_call(reader: &Reader, args: GetToolCall) -> Result<Value, ToolError> {
    let session = session(reader, &args.session)?;
    let call = query::tool_call(reader, &session, &args.tool_call_id)
        .map_err(QueryError::from)?
        .ok_or_else(|| {
            bad(format!(
                "no tool call {:?} in session {}: list_tool_calls gives the ids",
                args.tool_call_id, session.session_id
            ))
        })?;
    let content: Vec<Value> = call
        .content
        .iter()
        .filter_map(Value::as_array)
        .flatten()
        .map(|item| {
            if item.get("type").and_then(Value::as_str) == Some("diff") {
                json!({"type": "diff", "path": item.get("path"), "unified": unified(item)})
            } else {
                item.clone()
            }
        })
        .collect();
    let permissions: Vec<Value> =
        crate::query::pages::permission_requests_of_call(reader, &session, &call.tool_call_id)
            .map_err(QueryError::from)?
            .iter()
            .map(permission_row)
            .collect();
    // The whole call with what it derives; its content with each diff as unified-diff text.
    let mut answer = call.detail_json();
    answer["content"] = json!(content);
    answer["permission_requests"] = json!(permissions);
    cut_json_strings(&mut answer, DETAIL_TEXT);
    Ok(answer)
}

/// A permission request (what was asked, who decided, and why) as `show --json` has it, every
/// string cut for a list.
fn permission_row(p: &query::PermissionRow) -> Value {
    let mut row = json!(p);
    cut_json_strings(&mut row, LIST_TEXT);
    row
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct ListPermissionRequests {
    /// The session (`last`, an id or a unique prefix).
    pub session: String,
    /// Only requests decided by: `policy`, `client`, or `undecided`.
    pub decided_by: Option<String>,
    /// Rows to return (default 50, at most 100).
    pub limit: Option<usize>,
    /// Rows to skip.
    pub offset: Option<usize>,
}

pub(crate) fn list_permission_requests(
    reader: &Reader,
    args: ListPermissionRequests,
) -> Result<Value, ToolError> {
    let session = session(reader, &args.session)?;
    if let Some(d) = &args.decided_by
        && !["policy", "client", "undecided"].contains(&d.as_str())
    {
        return Err(bad(format!(
            "decided_by {d:?}: one of policy, client, undecided"
        )));
    }
    // What the live policy decided on, by request line: the recorded input of its decision.
    let inputs: std::collections::HashMap<i64, Value> =
        query::recorded_permissions(reader, Some(&session))
            .map_err(QueryError::from)?
            .into_iter()
            .filter_map(|r| {
                let input = serde_json::from_str(r.policy_input.as_deref()?).ok()?;
                Some((r.request_seq, input))
            })
            .collect();
    // Every request with its tool call's title, then the filter, then the page.
    let all = PageRequest::new(0, None, usize::MAX, usize::MAX);
    let rows: Vec<_> = pages::permission_requests(reader, &session, &all)
        .map_err(QueryError::from)?
        .items
        .into_iter()
        .filter(|p| match args.decided_by.as_deref() {
            None => true,
            Some("undecided") => p.request.decided_by.is_none(),
            Some(d) => p.request.decided_by.as_deref() == Some(d),
        })
        .collect();
    let page = page(args.offset, args.limit, 50).page_of(rows.into_iter());
    Ok(json!(page.map(|p| {
        let input = inputs.get(&p.request.request_seq).cloned();
        // The request as `show --json` writes it (`Item::Permission`: `tool_call_title` and the
        // request's fields), every string cut for a list.
        let mut row = json!(Item::Permission {
            tool_call_title: p.tool_call_title,
            request: p.request,
        });
        cut_json_strings(&mut row, LIST_TEXT);
        if let Some(mut input) = input {
            cut_json_strings(&mut input, LIST_TEXT);
            row["policy_input"] = input;
        }
        row
    })))
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Search {
    /// Words to find in recorded prompts, agent text, tool-call titles and arguments.
    pub text: String,
    /// Sessions to return (default 10, at most 100).
    pub limit: Option<usize>,
    /// Sessions to skip.
    pub offset: Option<usize>,
}

/// The most sessions a search reads, to page through.
const MAX_SEARCH_SESSIONS: usize = 1_000;

pub(crate) fn search(reader: &Reader, args: Search) -> Result<Value, ToolError> {
    if args.text.trim().is_empty() {
        return Err(bad("text is empty: give words to find"));
    }
    let page = page(args.offset, args.limit, 10);
    let query = crate::query::search::Search {
        text: Some(args.text.clone()),
        ..Default::default()
    };
    let hits = crate::query::search::search(reader, &query, MAX_SEARCH_SESSIONS).map_err(|e| {
        bad(format!(
            "cannot search for `{}`: {e}",
            crate::policy::paths::cut_for_error(&args.text)
        ))
    })?;
    // Each session as `search --json` writes it.
    let mut page = page.page_of(hits.iter()).map(|hit| {
        let mut row = json!(hit);
        cut_json_strings(&mut row, LIST_TEXT);
        row
    });
    if hits.len() == MAX_SEARCH_SESSIONS {
        page.note = Some(format!(
            "only the newest {MAX_SEARCH_SESSIONS} matching sessions are read: give more words"
        ));
    }
    let mut answer = json!(page);
    match crate::query::search::unindexed_lines(reader).map_err(QueryError::from)? {
        Some(0) => {}
        Some(n) => {
            answer["index_note"] = json!(format!(
                "{n} recorded line(s) are not in the search index yet, so are not searched: \
                 `acptap search` (any query) or `acptap migrate` adds them"
            ))
        }
        None => {
            answer["index_note"] =
                json!("this database has no search index yet: `acptap migrate` makes it")
        }
    }
    Ok(answer)
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct CheckSession {
    /// The session (`last`, an id or a unique prefix).
    pub session: String,
    /// Findings to return (default 50, at most 100).
    pub limit: Option<usize>,
    /// Findings to skip.
    pub offset: Option<usize>,
}

pub(crate) fn check_session(reader: &Reader, args: CheckSession) -> Result<Value, ToolError> {
    let session = session(reader, &args.session)?;
    let query::findings::CheckedConnection { outcome, lines } =
        query::findings::check_connection(reader, session.connection_id)
            .map_err(QueryError::from)?;
    let page = page(args.offset, args.limit, 50).page_of(outcome.findings.iter());
    let mut answer = json!(page.map(|f| {
        let mut v = json!(f);
        cut_json_strings(&mut v, LIST_TEXT);
        v
    }));
    answer["session"] = json!(session.session_id);
    answer["lines"] = json!(lines);
    Ok(answer)
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct PolicyCheck {
    /// Policy files (TOML, see acptap's docs/policy.md), in order: absolute paths, or relative
    /// to the directory `acptap mcp` runs in.
    pub policy_files: Vec<String>,
    /// Decide a recorded request again: its session (`last`, an id or a unique prefix) ...
    pub session: Option<String>,
    /// ... and its tool call's id (the latest request about that call).
    pub tool_call_id: Option<String>,
    /// Or decide this request: the params of a `session/request_permission` (or the whole
    /// JSON-RPC message).
    pub request: Option<Value>,
    /// With `request`: the session's cwd (default: the directory `acptap mcp` runs in).
    pub cwd: Option<String>,
    /// With `request`: the agent's name as its `initialize` answer gives it.
    pub agent: Option<String>,
}

pub(crate) fn policy_check(reader: &Reader, args: PolicyCheck) -> Result<Value, ToolError> {
    use crate::policy::{Context, DecisionInput, Policy};
    if args.policy_files.is_empty() {
        return Err(bad("policy_files is empty: name at least one policy file"));
    }
    // Policy files only: the tool reads what it is given, and its errors quote what they read.
    if let Some(other) = args.policy_files.iter().find(|f| !f.ends_with(".toml")) {
        return Err(bad(format!(
            "{other}: not a policy file (a policy is a `.toml` file, see docs/policy.md)"
        )));
    }
    let files: Vec<std::path::PathBuf> = args.policy_files.iter().map(Into::into).collect();
    let policy = Policy::load(&files).map_err(|e| bad(format!("{e}")))?;
    match (&args.request, &args.session, &args.tool_call_id) {
        (Some(request), None, None) => {
            if !request.is_object() {
                return Err(bad(
                    "request: the params of a session/request_permission (a JSON object), or the whole message",
                ));
            }
            let params = crate::policy::request_params(request);
            let cwd = match &args.cwd {
                Some(cwd) => std::path::PathBuf::from(cwd),
                None => std::env::current_dir()?,
            };
            let context = Context {
                cwd: Some(&cwd),
                agent: args.agent.as_deref(),
                ..Default::default()
            };
            let input = DecisionInput::new(params, None, context, None);
            let verdict = policy.decide_input(&input, params.get("options"));
            let mut answer = json!({"verdict": verdict, "input": input});
            cut_json_strings(&mut answer, DETAIL_TEXT);
            Ok(answer)
        }
        (None, Some(spec), Some(id)) => {
            let session = session(reader, spec)?;
            let recorded = query::recorded_permissions(reader, Some(&session))
                .map_err(QueryError::from)?
                .into_iter()
                .rfind(|r| r.tool_call_id.as_deref() == Some(id))
                .ok_or_else(|| {
                    bad(format!(
                        "no permission request about tool call {id:?} in session {}",
                        session.session_id
                    ))
                })?;
            let again = policy
                .decide_recorded(
                    &recorded.request,
                    recorded.policy_input.as_deref(),
                    &recorded.earlier_updates,
                    Context {
                        cwd: recorded.cwd.as_deref().map(std::path::Path::new),
                        agent: recorded.agent_name.as_deref(),
                        version: recorded.protocol_version,
                    },
                )
                .ok_or_else(|| bad("the recorded request is not a JSON-RPC message with params"))?;
            let mut answer = json!({
                "verdict": again.verdict,
                "input": again.input,
                "input_source": again.source,
                "recorded": {
                    "decided_by": recorded.decided_by,
                    "outcome": recorded.outcome,
                    "option_kind": recorded.option_kind,
                },
            });
            cut_json_strings(&mut answer, DETAIL_TEXT);
            Ok(answer)
        }
        _ => Err(bad(
            "give either `request`, or `session` and `tool_call_id` (a recorded request)",
        )),
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct PolicySuggest {
    /// Only requests asked since: RFC 3339, or an age (30m, 24h, 7d).
    pub since: Option<String>,
    /// Only sessions of agents whose name contains this (any case).
    pub agent: Option<String>,
    /// Only these sessions (`last`, ids or unique prefixes).
    #[serde(default)]
    pub sessions: Vec<String>,
    /// How many times a shape must have been allowed (allow_always counts twice); default 3.
    pub min_evidence: Option<u32>,
}

pub(crate) fn policy_suggest(reader: &Reader, args: PolicySuggest) -> Result<Value, ToolError> {
    let min_evidence = args.min_evidence.unwrap_or(3);
    if min_evidence == 0 {
        return Err(bad("min_evidence: at least 1"));
    }
    let mut filter = query::AnsweredFilter {
        since: args.since.as_deref().map(parse_since).transpose()?,
        agent: args.agent,
        sessions: Vec::new(),
    };
    for spec in &args.sessions {
        filter.sessions.push(session(reader, spec)?);
    }
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let suggestion =
        crate::learn::suggestion(reader, &filter, min_evidence as usize, home.as_deref())?;
    let mut answer = json!(suggestion);
    // The policy's text is the point of the answer: only the evidence's examples are cut.
    for list in ["rules", "conflicts", "left_to_user"] {
        if let Some(items) = answer.get_mut(list) {
            cut_json_strings(items, LIST_TEXT);
        }
    }
    Ok(answer)
}
