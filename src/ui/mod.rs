//! `acptap ui`: a local web inspector over the recordings, read-only, safe on a shared machine.
//!
//! The security model (docs/ui.md), in the order a request meets it (`guard`):
//! - the server listens on 127.0.0.1 only, and refuses a peer that is not loopback anyway;
//! - only GET and HEAD: no endpoint changes anything (the database is opened read-only);
//! - the `Host` header must name this server (127.0.0.1 or localhost with its port): a DNS
//!   rebinding page, whose requests carry its own host name, is refused;
//! - an `Origin` header, when sent, must be this server's: cross-site requests are refused;
//! - every request needs the random token printed at start, as `?token=` (the first visit,
//!   which sets an HttpOnly, SameSite=Strict cookie) or as that cookie;
//! - every answer carries a strict Content-Security-Policy (nothing but this server's own
//!   scripts and styles; no inline script), `nosniff`, no referrer, no framing.
//!
//! Recorded strings are rendered by the page as text (`textContent`), never as HTML.

mod api;
mod assets;
mod inspector;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, Path, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::export::trace::TraceError;
use crate::query;
use crate::query::{QueryError, Reader, StoreError};

/// The token's length in random bytes (written as hex).
const TOKEN_BYTES: usize = 32;

/// Pages listening to `/api/events` at once; more get 503 (each holds a connection).
const MAX_EVENT_STREAMS: usize = 64;

/// How long a connection may take to send a request's headers (the first, and each next one on
/// a kept-alive connection): one that never finishes them is closed, instead of held for ever.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The Content-Security-Policy of every answer.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Why a request could not be answered, or the server could not start. A request's error is
/// answered with its text and [`UiError::status`]: 404 for every error of a read (the page shows
/// the text where the view would be), 500 for the server's own.
#[derive(Debug, thiserror::Error)]
pub(crate) enum UiError {
    /// What a request names is not there: a session, a turn, a tool call, a line, a report page,
    /// a download.
    #[error("{0}")]
    NotFound(String),
    /// A request that does not say what it asks for (a parameter missing or unknown).
    #[error("{0}")]
    BadRequest(String),
    /// The database could not be opened: `Reader::open`'s error as it is.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A read of the recording failed.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// The trace download could not be made.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// A download could not be written as JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The port asked for is taken (or not ours to take).
    #[error(
        "cannot listen on 127.0.0.1:{port}: {source}; choose another --port, or leave it out for a free one"
    )]
    Listen { port: u16, source: std::io::Error },
    /// The server's own input and output: its runtime, its address, the token, the printed URL.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// A failed read of the recording, as `QueryError` has it.
impl From<rusqlite::Error> for UiError {
    fn from(e: rusqlite::Error) -> Self {
        UiError::Query(e.into())
    }
}

impl UiError {
    /// The status a request that meets this error is answered with.
    fn status(&self) -> StatusCode {
        match self {
            UiError::NotFound(_)
            | UiError::Store(_)
            | UiError::Query(_)
            | UiError::Trace(_)
            | UiError::Json(_) => StatusCode::NOT_FOUND,
            // The server's own, never a request's.
            UiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            UiError::Listen { .. } | UiError::Io(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

struct App {
    db: PathBuf,
    token: String,
    port: u16,
    /// The cookie's name: per port, because browsers do not keep cookies apart by port, and two
    /// servers sharing one name would log each other out.
    cookie: String,
    /// The number of recorded lines, looked at every 100 ms by one task for every page.
    lines: tokio::sync::watch::Receiver<i64>,
    /// Event streams open now.
    streams: std::sync::atomic::AtomicUsize,
    /// Which `acptap check` findings the config silences (`[check.silence]`), as the command
    /// line silences them.
    silenced: Silenced,
}

/// Whether the config silences a rule's findings for an agent.
pub(crate) type Silenced = Arc<dyn Fn(Option<&str>, &str) -> bool + Send + Sync>;

/// A random token from the operating system.
fn new_token() -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; TOKEN_BYTES];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Equal, in time that does not depend on where they differ.
fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

fn refuse(status: StatusCode, why: &'static str) -> Response {
    (status, why).into_response()
}

/// The token a request carries: `?token=` or the cookie named `cookie`.
fn token_of(request: &Request, cookie: &str) -> Option<String> {
    let from_query = request.uri().query().and_then(|q| {
        q.split('&')
            .find_map(|pair| pair.strip_prefix("token="))
            .map(str::to_owned)
    });
    from_query.or_else(|| {
        request
            .headers()
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .find_map(|c| {
                c.trim()
                    .strip_prefix(cookie)
                    .and_then(|rest| rest.strip_prefix('='))
                    .map(str::to_owned)
            })
    })
}

/// The checks every request passes before any handler (see the module's comment), and the
/// headers every answer carries, a refusal included.
async fn guard(
    State(app): State<Arc<App>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request,
    next: Next,
) -> Response {
    let from_query = request.uri().query().is_some_and(|q| q.contains("token="));
    let mut response = match refusal(&app, peer, &request) {
        Some(refused) => refused,
        None => next.run(request).await,
    };
    let served = response.status().is_success();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if from_query
        && served
        && let Ok(cookie) = HeaderValue::from_str(&format!(
            "{}={}; HttpOnly; SameSite=Strict; Path=/",
            app.cookie, app.token
        ))
    {
        headers.insert(header::SET_COOKIE, cookie);
    }
    response
}

/// Why a request is refused, if it is.
fn refusal(app: &App, peer: SocketAddr, request: &Request) -> Option<Response> {
    if !peer.ip().is_loopback() {
        return Some(refuse(StatusCode::FORBIDDEN, "only this machine may ask"));
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return Some(refuse(
            StatusCode::METHOD_NOT_ALLOWED,
            "read-only: GET only",
        ));
    }
    let ours = [
        format!("127.0.0.1:{}", app.port),
        format!("localhost:{}", app.port),
    ];
    let is_ours = |host: &str| ours.iter().any(|o| o.eq_ignore_ascii_case(host));
    // Exactly one Host, ours; and a request line naming a host (absolute form) names ours.
    let hosts: Vec<_> = request.headers().get_all(header::HOST).iter().collect();
    let [host] = hosts.as_slice() else {
        return Some(refuse(StatusCode::BAD_REQUEST, "one Host header is needed"));
    };
    let named = request.uri().authority().map(|a| a.as_str());
    if !is_ours(host.to_str().unwrap_or("")) || named.is_some_and(|a| !is_ours(a)) {
        return Some(refuse(
            StatusCode::FORBIDDEN,
            "unknown Host (DNS rebinding?)",
        ));
    }
    // Every Origin given must be ours.
    let foreign_origin = request
        .headers()
        .get_all(header::ORIGIN)
        .iter()
        .any(|origin| {
            let origin = origin.to_str().unwrap_or("");
            !ours
                .iter()
                .any(|o| origin.eq_ignore_ascii_case(&format!("http://{o}")))
        });
    if foreign_origin {
        return Some(refuse(StatusCode::FORBIDDEN, "cross-site request refused"));
    }
    let Some(token) = token_of(request, &app.cookie) else {
        return Some(refuse(
            StatusCode::UNAUTHORIZED,
            "open the URL acptap ui printed (it carries the token)",
        ));
    };
    if !same_secret(&token, &app.token) {
        return Some(refuse(StatusCode::UNAUTHORIZED, "wrong token"));
    }
    None
}

/// Runs a read of the database off the async threads.
async fn read<T: Send + 'static>(
    app: &App,
    work: impl FnOnce(&Reader) -> Result<T, UiError> + Send + 'static,
) -> Result<T, Response> {
    let db = app.db.clone();
    tokio::task::spawn_blocking(move || {
        let reader = Reader::open(&db)?;
        work(&reader)
    })
    .await
    .map_err(|e| refuse_text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
    .map_err(|e| refuse_text(e.status(), e.to_string()))
}

fn refuse_text(status: StatusCode, text: String) -> Response {
    (status, text).into_response()
}

fn json_response(value: impl serde::Serialize) -> Response {
    match serde_json::to_vec(&value) {
        Ok(body) => (
            [(header::CONTENT_TYPE, "application/json; charset=utf-8")],
            body,
        )
            .into_response(),
        Err(e) => refuse_text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// Server-sent events: `changed` with the number of recorded lines whenever it moves. One task
/// looks at the database every 100 ms for every page (`watch_lines`); each page's stream waits
/// on it, so a page fetches what is new within a quarter second.
async fn events(State(app): State<Arc<App>>) -> Response {
    use std::sync::atomic::Ordering;
    if app.streams.fetch_add(1, Ordering::SeqCst) >= MAX_EVENT_STREAMS {
        app.streams.fetch_sub(1, Ordering::SeqCst);
        return refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many pages are listening: close some",
        );
    }
    let (tx, rx) = tokio::sync::mpsc::channel::<String>(4);
    let mut lines = app.lines.clone();
    let app = app.clone();
    tokio::spawn(async move {
        let mut last = -1;
        loop {
            let count = *lines.borrow_and_update();
            if count != last {
                last = count;
                if tx
                    .send(format!("event: changed\ndata: {count}\n\n"))
                    .await
                    .is_err()
                {
                    break;
                }
            }
            // Until the page goes away (its body stream, and so the receiver, is dropped).
            tokio::select! {
                changed = lines.changed() => if changed.is_err() { break },
                () = tx.closed() => break,
            }
        }
        app.streams.fetch_sub(1, Ordering::SeqCst);
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(Body::from_stream(Events(rx)))
        .unwrap_or_else(|e| refuse_text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))
}

/// Looks at the number of recorded lines every 100 ms, for every page at once.
fn watch_lines(db: PathBuf) -> tokio::sync::watch::Receiver<i64> {
    let (tx, rx) = tokio::sync::watch::channel(-1);
    tokio::spawn(async move {
        while !tx.is_closed() {
            let db = db.clone();
            let count = tokio::task::spawn_blocking(move || {
                Reader::open(&db)
                    .ok()
                    .and_then(|r| query::message_count(&r).ok())
            })
            .await
            .ok()
            .flatten();
            if let Some(count) = count {
                tx.send_if_modified(|known| std::mem::replace(known, count) != count);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    rx
}

/// The events for one page, as a body stream.
struct Events(tokio::sync::mpsc::Receiver<String>);

impl futures_core::Stream for Events {
    type Item = Result<String, std::convert::Infallible>;
    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        self.0.poll_recv(cx).map(|event| event.map(Ok))
    }
}

async fn page(Path(name): Path<String>) -> Response {
    match assets::get(&name) {
        Some((content_type, body)) => {
            ([(header::CONTENT_TYPE, content_type)], body).into_response()
        }
        None => refuse(StatusCode::NOT_FOUND, "no such file"),
    }
}

async fn index() -> Response {
    page(Path("index.html".to_owned())).await
}

/// The router, with its guard.
fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/assets/{name}", get(page))
        // No icon: an empty answer, so the browser does not log a failed request.
        .route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }))
        .route("/api/sessions", get(api::sessions))
        .route("/api/sessions/{connection}/{session}", get(api::session))
        .route(
            "/api/sessions/{connection}/{session}/facets",
            get(api::facets),
        )
        .route(
            "/api/sessions/{connection}/{session}/opening",
            get(api::opening),
        )
        .route(
            "/api/sessions/{connection}/{session}/turns",
            get(api::turns),
        )
        .route(
            "/api/sessions/{connection}/{session}/turns/{index}",
            get(api::turn),
        )
        .route(
            "/api/sessions/{connection}/{session}/tools",
            get(api::tool_calls),
        )
        .route(
            "/api/sessions/{connection}/{session}/tools/{id}",
            get(api::tool_call),
        )
        .route(
            "/api/sessions/{connection}/{session}/permissions",
            get(api::permissions),
        )
        .route(
            "/api/sessions/{connection}/{session}/lines",
            get(api::lines),
        )
        .route(
            "/api/sessions/{connection}/{session}/lines/{seq}",
            get(api::line),
        )
        .route(
            "/api/sessions/{connection}/{session}/download/{file}",
            get(api::download),
        )
        .route(
            "/api/sessions/{connection}/{session}/waterfall",
            get(inspector::axis),
        )
        .route(
            "/api/sessions/{connection}/{session}/waterfall/turns",
            get(inspector::turn_rows),
        )
        .route(
            "/api/sessions/{connection}/{session}/waterfall/turns/{index}",
            get(inspector::turn),
        )
        .route(
            "/api/sessions/{connection}/{session}/locate",
            get(inspector::locate),
        )
        .route(
            "/api/sessions/{connection}/{session}/latency",
            get(inspector::latency),
        )
        .route(
            "/api/sessions/{connection}/{session}/findings",
            get(inspector::findings),
        )
        .route(
            "/api/sessions/{connection}/{session}/info",
            get(inspector::info),
        )
        .route("/api/diff", get(inspector::diff))
        .route("/api/policy/suggest", get(api::policy_suggestion))
        .route("/api/policy/suggest/download", get(api::policy_download))
        .route("/api/events", get(events))
        .fallback(|| async { refuse(StatusCode::NOT_FOUND, "no such page") })
        .layer(middleware::from_fn_with_state(app.clone(), guard))
        .with_state(app)
}

/// `acptap ui`: serves until interrupted. `ready` is given the URL (with the token) once the
/// server listens: the command prints it.
pub(crate) fn serve(
    db: PathBuf,
    port: u16,
    open: bool,
    silenced: Silenced,
    ready: impl FnOnce(&str) -> std::io::Result<()>,
) -> Result<(), UiError> {
    // Fail now, with the usual message, if the database is not there.
    drop(Reader::open(&db)?);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
            .await
            .map_err(|source| UiError::Listen { port, source })?;
        let port = listener.local_addr()?.port();
        let app = Arc::new(App {
            lines: watch_lines(db.clone()),
            db,
            token: new_token()?,
            port,
            cookie: format!("acptap_ui_{port}"),
            streams: std::sync::atomic::AtomicUsize::new(0),
            silenced,
        });
        let url = format!("http://127.0.0.1:{port}/?token={}", app.token);
        ready(&url)?;
        if open {
            let _ = std::process::Command::new("xdg-open").arg(&url).spawn();
        }
        serve_connections(listener, router(app)).await
    })
}

/// Serves each accepted connection with hyper's HTTP/1 server and a header read deadline
/// ([`HEADER_READ_TIMEOUT`]); `axum::serve` does the same without one. Each request carries its
/// peer's address (`ConnectInfo`), which the guard reads.
async fn serve_connections(listener: tokio::net::TcpListener, app: Router) -> Result<(), UiError> {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            // A connection that went away before it was accepted: the next one.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::ConnectionAborted
                        | std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::ConnectionRefused
                ) =>
            {
                continue;
            }
            // Out of file descriptors and the like: wait for some to be given back, as
            // `axum::serve` does.
            Err(_) => {
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let service = hyper_util::service::TowerToHyperService::new(
            app.clone().layer(axum::Extension(ConnectInfo(peer))),
        );
        tokio::spawn(async move {
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT);
            // A connection's error (a timeout, a reset) ends that connection only.
            let _ = http
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd"));
        assert!(!same_secret("abc", "abcd"));
        assert_eq!(new_token().unwrap().len(), TOKEN_BYTES * 2);
    }
}
