//! Sends a session's spans (`spans.rs`) to an OpenTelemetry collector or trace backend over
//! OTLP/HTTP with protobuf, through the official crates (`opentelemetry-otlp`): no encoding of
//! our own. acptap's commands are synchronous, so the exporter runs on the blocking `reqwest`
//! client, and its future is driven here by a minimal executor.

use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, UNIX_EPOCH};

use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind as OtelKind, Status as OtelStatus, TraceFlags, TraceId,
    TraceState,
};
use opentelemetry::{Array, InstrumentationScope, KeyValue, StringValue, Value};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanExporter, SpanLinks};

use super::spans::{Attribute, Span, SpanKind, Status};

/// Spans sent in one request: a long session goes in several.
pub const SPANS_PER_REQUEST: usize = 512;

/// A refused request is sent again after this, then after twice as long, each wait at most
/// [`LAST_RETRY`].
const FIRST_RETRY: Duration = Duration::from_millis(250);
const LAST_RETRY: Duration = Duration::from_secs(8);

/// How long one request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum OtlpError {
    #[error("cannot set up the OTLP exporter for {endpoint}: {message}")]
    Setup { endpoint: String, message: String },
    #[error(
        "{endpoint} did not take the spans ({sent} of {total} sent): {message}; {}",
        match http_status(message) {
            Some(401 | 403) => "check the credentials (--header, OTEL_EXPORTER_OTLP_HEADERS)",
            Some(404) => "is this the traces endpoint? (it usually ends in /v1/traces)",
            Some(status) if retryable(status) => "the backend is busy or full: send again later",
            Some(_) => "the backend refused them",
            None if message.contains("certificate") =>
                "for a collector with a private CA, point SSL_CERT_FILE at the CA's certificate",
            None => "is a collector listening there?",
        }
    )]
    Send {
        endpoint: String,
        sent: usize,
        total: usize,
        message: String,
    },
}

/// Where and how to send.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// The traces URL, `http://host:4318/v1/traces`.
    pub url: String,
    /// Extra HTTP headers (an API key, for instance).
    pub headers: Vec<(String, String)>,
}

/// Whether `name=value` can be sent as an HTTP header: a name of letters, digits, `-` and `_`;
/// a value without control characters (a line break would start another header).
pub fn check_header(name: &str, value: &str) -> Result<(), String> {
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b))
    {
        return Err(format!(
            "`{name}` is not a header name: letters, digits, `-` and `_` only"
        ));
    }
    if value.chars().any(|c| c.is_control() && c != '\t') {
        return Err(format!(
            "the value of header `{name}` has a line break or another control character"
        ));
    }
    Ok(())
}

impl Endpoint {
    /// The URL as it may be shown: a password in it replaced by `***`.
    pub fn shown(&self) -> String {
        shown_url(&self.url)
    }

    /// `url` as given, with `/v1/traces` added when it names only a host (as
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` does).
    pub fn new(url: &str, headers: Vec<(String, String)>) -> Endpoint {
        let url = url.trim_end_matches('/');
        let url = if url.ends_with("/v1/traces") {
            url.to_owned()
        } else {
            format!("{url}/v1/traces")
        };
        Endpoint { url, headers }
    }
}

/// The endpoint given, else the one the OpenTelemetry environment variables name:
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else `OTEL_EXPORTER_OTLP_ENDPOINT`, else
/// `http://localhost:4318` (`/v1/traces` added unless the URL ends in it); and the headers of `OTEL_EXPORTER_OTLP_HEADERS`
/// and `OTEL_EXPORTER_OTLP_TRACES_HEADERS` (`name=value` pairs separated by commas, values
/// percent-encoded).
pub fn from_environment(
    url: Option<&str>,
    defaults: Vec<(String, String)>,
    mut headers: Vec<(String, String)>,
    var: impl Fn(&str) -> Option<String>,
) -> Result<Endpoint, String> {
    let url = url
        .map(str::to_owned)
        .or_else(|| var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
        .or_else(|| var("OTEL_EXPORTER_OTLP_ENDPOINT"))
        .unwrap_or_else(|| "http://localhost:4318".to_owned());
    let scheme_end = url.find("://").map(|i| i + 3);
    let scheme = scheme_end.map(|end| url[..end].to_ascii_lowercase());
    let host = scheme_end.map_or("", |end| &url[end..]);
    if !matches!(scheme.as_deref(), Some("http://" | "https://"))
        || host.is_empty()
        || host.starts_with('/')
        || url.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(format!(
            "`{url}` is not an OTLP/HTTP endpoint: give a URL such as http://localhost:4318 \
             (acptap sends OTLP over HTTP with protobuf, not gRPC)"
        ));
    }
    for (key, value) in &defaults {
        check_header(key, value).map_err(|e| format!("the config file's [otlp] headers: {e}"))?;
    }
    let mut from_env = defaults;
    for name in [
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    ] {
        for pair in var(name).unwrap_or_default().split(',') {
            if pair.trim().is_empty() {
                continue;
            }
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| format!("{name}: `{}` is not name=value", pair.trim()))?;
            let (key, value) = (key.trim(), percent_decode(value.trim()));
            check_header(key, &value).map_err(|e| format!("{name}: {e}"))?;
            from_env.push((key.to_owned(), value));
        }
    }
    // Defaults (the config file), then the environment, then the command line: the later wins
    // where names repeat.
    from_env.append(&mut headers);
    Ok(Endpoint::new(&url, from_env))
}

/// `url` with the password of its `user:password@` part replaced by `***`.
fn shown_url(url: &str) -> String {
    let Some(start) = url.find("://").map(|i| i + 3) else {
        return url.to_owned();
    };
    let authority_end = url[start..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| start + i);
    match url[start..authority_end].rfind('@') {
        Some(at) => match url[start..start + at].find(':') {
            Some(colon) => format!("{}***{}", &url[..start + colon + 1], &url[start + at..]),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

/// `%XX` escapes decoded (as OTEL_EXPORTER_OTLP_HEADERS values are written); others kept.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(high), Some(low)) => {
                out.push((high * 16 + low) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// How long `export` keeps sending one request again while the backend refuses it.
const EXPORT_PATIENCE: Duration = Duration::from_secs(16);

/// At most this much of a collector's answer is read (an OTLP answer is a few bytes of
/// protobuf; a collector that answers with gigabytes must not take acptap's memory with it).
const MAX_ANSWER_BYTES: u64 = 64 * 1024;

/// The HTTP client the exporter sends with: reqwest's blocking client, reading at most
/// [`MAX_ANSWER_BYTES`] of an answer. (The stock one reads the whole answer into memory.)
#[derive(Debug)]
struct CappedClient(reqwest::blocking::Client);

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for CappedClient {
    async fn send_bytes(
        &self,
        request: opentelemetry_http::Request<opentelemetry_http::Bytes>,
    ) -> Result<
        opentelemetry_http::Response<opentelemetry_http::Bytes>,
        opentelemetry_http::HttpError,
    > {
        use std::io::Read;
        let response = self.0.execute(request.try_into()?)?.error_for_status()?;
        let status = response.status();
        let headers = response.headers().clone();
        let mut body = Vec::new();
        response.take(MAX_ANSWER_BYTES).read_to_end(&mut body)?;
        let mut answer = opentelemetry_http::Response::builder()
            .status(status)
            .body(opentelemetry_http::Bytes::from(body))?;
        *answer.headers_mut() = headers;
        Ok(answer)
    }
}

/// One OTLP/HTTP exporter, for any number of requests to one endpoint.
pub struct Sender {
    exporter: opentelemetry_otlp::SpanExporter,
    url: String,
}

impl Sender {
    /// An exporter whose requests give up after `timeout`.
    pub fn new(endpoint: &Endpoint, timeout: Duration) -> Result<Sender, OtlpError> {
        let setup = |message: String| OtlpError::Setup {
            endpoint: endpoint.shown(),
            message,
        };
        let client = reqwest::blocking::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| setup(e.to_string()))?;
        let mut exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(CappedClient(client))
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(&endpoint.url)
            .with_timeout(timeout)
            .with_headers(endpoint.headers.iter().cloned().collect())
            .build()
            .map_err(|e| setup(e.to_string()))?;
        exporter.set_resource(&resource());
        Ok(Sender {
            exporter,
            url: endpoint.shown(),
        })
    }

    /// The endpoint's URL as it may be shown.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Sends one request of spans. A backend that answers with a status (503 when its
    /// ingestion is full, 429) is there and busy: it gets the request again after 250 ms, then
    /// after twice as long each time, as the OTLP specification asks, while the waits fit in
    /// `patience`. The error is the exporter's last.
    pub fn send_request(&mut self, spans: &[Span], patience: Duration) -> Result<(), String> {
        let mut wait = FIRST_RETRY;
        let mut waited = Duration::ZERO;
        loop {
            let batch = spans.iter().map(span_data).collect();
            match block_on(self.exporter.export(batch)) {
                Ok(()) => return Ok(()),
                Err(e)
                    if http_status(&e.to_string()).is_some_and(retryable)
                        && waited + wait <= patience =>
                {
                    std::thread::sleep(wait);
                    waited += wait;
                    wait = (wait * 2).min(LAST_RETRY);
                }
                Err(e) => return Err(describe(&e.to_string())),
            }
        }
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        let _ = self.exporter.shutdown();
    }
}

/// Sends `spans`, [`SPANS_PER_REQUEST`] at a time; returns how many were sent.
pub fn send(spans: &[Span], endpoint: &Endpoint) -> Result<usize, OtlpError> {
    let mut sender = Sender::new(endpoint, REQUEST_TIMEOUT)?;
    let mut sent = 0;
    for chunk in spans.chunks(SPANS_PER_REQUEST) {
        sender
            .send_request(chunk, EXPORT_PATIENCE)
            .map_err(|message| OtlpError::Send {
                endpoint: endpoint.shown(),
                sent,
                total: spans.len(),
                message,
            })?;
        sent += chunk.len();
    }
    Ok(sent)
}

/// The HTTP status in an exporter's error, when the backend answered with one.
fn http_status(error: &str) -> Option<u16> {
    ["Status(", "Status Code: "].iter().find_map(|marker| {
        let at = error.find(marker)? + marker.len();
        let digits: String = error[at..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    })
}

/// The statuses after which OTLP/HTTP asks a client to send again later.
fn retryable(status: u16) -> bool {
    matches!(status, 429 | 502 | 503 | 504)
}

/// An exporter's error (often a `reqwest` debug dump) said briefly where it is a known case.
fn describe(error: &str) -> String {
    if let Some(status) = http_status(error) {
        format!("the backend answered HTTP {status}")
    } else if error.contains("ConnectionRefused") || error.contains("Connection refused") {
        "connection refused".to_owned()
    } else if error.contains("TimedOut") || error.contains("timed out") {
        "no answer in time".to_owned()
    } else if let Some(at) = error.find("InvalidCertificate(") {
        let reason: String = error[at + "InvalidCertificate(".len()..]
            .chars()
            .take_while(|c| c.is_alphanumeric())
            .collect();
        format!("the collector's TLS certificate is not trusted ({reason})")
    } else if error.contains("dns error") || error.contains("failed to lookup") {
        "the host name does not resolve".to_owned()
    } else {
        error.to_owned()
    }
}

/// What every span is said to come from.
fn resource() -> Resource {
    Resource::builder_empty()
        .with_attributes([
            KeyValue::new("service.name", "acptap"),
            KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
        ])
        .build()
}

/// The spans as one OTLP/JSON `ExportTraceServiceRequest` (the protocol's JSON mapping, by its
/// own types): a file a collector takes as `POST /v1/traces` with `Content-Type:
/// application/json`.
pub fn to_json(spans: &[Span]) -> serde_json::Result<Vec<u8>> {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
    let mut request = ExportTraceServiceRequest {
        resource_spans: group_spans_by_resource_and_scope(
            spans.iter().map(span_data).collect(),
            &(&resource()).into(),
        ),
    };
    // The resource's attributes come out of a hash map: in key order, the same file each time.
    for resource_spans in &mut request.resource_spans {
        if let Some(resource) = &mut resource_spans.resource {
            resource.attributes.sort_by(|a, b| a.key.cmp(&b.key));
        }
    }
    serde_json::to_vec(&request)
}

fn span_data(span: &Span) -> SpanData {
    let time = |us: i64| UNIX_EPOCH + Duration::from_micros(us.max(0) as u64);
    SpanData {
        span_context: SpanContext::new(
            TraceId::from_bytes(span.trace_id),
            SpanId::from_bytes(span.span_id),
            TraceFlags::SAMPLED,
            false,
            TraceState::NONE,
        ),
        parent_span_id: span
            .parent_span_id
            .map_or(SpanId::INVALID, SpanId::from_bytes),
        parent_span_is_remote: false,
        span_kind: match span.kind {
            SpanKind::Internal => OtelKind::Internal,
            SpanKind::Client => OtelKind::Client,
        },
        name: Cow::Owned(span.name.clone()),
        start_time: time(span.start_us),
        end_time: time(span.end_us),
        attributes: span
            .attributes
            .iter()
            .map(|(key, value)| KeyValue::new(*key, otel_value(value)))
            .collect(),
        dropped_attributes_count: 0,
        events: SpanEvents::default(),
        links: SpanLinks::default(),
        status: match &span.status {
            Status::Unset => OtelStatus::Unset,
            Status::Ok => OtelStatus::Ok,
            Status::Error(message) => OtelStatus::error(message.clone()),
        },
        instrumentation_scope: InstrumentationScope::builder("acptap")
            .with_version(env!("CARGO_PKG_VERSION"))
            .build(),
    }
}

fn otel_value(value: &Attribute) -> Value {
    match value {
        Attribute::Text(text) => Value::from(text.clone()),
        Attribute::Int(n) => Value::I64(*n),
        Attribute::Bool(b) => Value::Bool(*b),
        Attribute::Texts(texts) => Value::Array(Array::String(
            texts.iter().cloned().map(StringValue::from).collect(),
        )),
    }
}

/// Wakes the thread that waits in [`block_on`].
struct ThreadWaker(std::thread::Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Drives `future` to completion on this thread (the blocking HTTP client completes it on the
/// first poll; the loop is for any other).
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    let mut context = Context::from_waker(&waker);
    loop {
        match future.as_mut().poll(&mut context) {
            Poll::Ready(output) => return output,
            Poll::Pending => std::thread::park(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_gives_the_endpoint_and_headers_and_the_command_line_wins() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        let none = from_environment(None, vec![], vec![], env(&[])).unwrap();
        assert_eq!(none.url, "http://localhost:4318/v1/traces");
        let base = from_environment(
            None,
            vec![("x-team".into(), "6".into())],
            vec![],
            env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://otel.example:4318"),
                ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=a%20b%3Dc , x-team=7"),
            ]),
        )
        .unwrap();
        assert_eq!(base.url, "https://otel.example:4318/v1/traces");
        // The config's x-team=6 comes first; the environment's x-team=7 is sent after it and wins.
        assert_eq!(
            base.headers,
            vec![
                ("x-team".to_owned(), "6".to_owned()),
                ("api-key".to_owned(), "a b=c".to_owned()),
                ("x-team".to_owned(), "7".to_owned())
            ]
        );
        let given = from_environment(
            Some("http://127.0.0.1:6006"),
            vec![],
            vec![("x-team".into(), "8".into())],
            env(&[(
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://ignored:1/v1/traces",
            )]),
        )
        .unwrap();
        assert_eq!(given.url, "http://127.0.0.1:6006/v1/traces");
        assert_eq!(given.headers, vec![("x-team".to_owned(), "8".to_owned())]);
        assert!(
            from_environment(
                None,
                vec![],
                vec![],
                env(&[("OTEL_EXPORTER_OTLP_HEADERS", "novalue")])
            )
            .unwrap_err()
            .contains("novalue")
        );
        for bad in [
            "localhost:4318",
            "grpc://h:4317",
            "http://",
            "http:///v1",
            "http://h x",
        ] {
            let error = from_environment(Some(bad), vec![], vec![], env(&[])).unwrap_err();
            assert!(
                error.contains("not an OTLP/HTTP endpoint"),
                "{bad}: {error}"
            );
        }
        assert!(from_environment(Some("HTTPS://h"), vec![], vec![], env(&[])).is_ok());
    }

    #[test]
    fn exporter_errors_are_read_for_their_status() {
        let reqwest = r#"reqwest::Error { kind: Status(503, None), url: "http://h/v1/traces" }"#;
        assert_eq!(http_status(reqwest), Some(503));
        assert!(retryable(503) && retryable(429) && !retryable(403) && !retryable(400));
        assert_eq!(describe(reqwest), "the backend answered HTTP 503");
        let otel = "OpenTelemetry trace export failed. Url: u, Status Code: 401, Response: b";
        assert_eq!(http_status(otel), Some(401));
        assert_eq!(
            describe("Os { code: 111, kind: ConnectionRefused, message: \"Connection refused\" }"),
            "connection refused"
        );
        assert_eq!(describe("something else"), "something else");
    }

    #[test]
    fn a_password_in_the_url_is_never_shown() {
        let shown = |url: &str| Endpoint::new(url, vec![]).shown();
        assert_eq!(
            shown("https://u:pw@h:4318"),
            "https://u:***@h:4318/v1/traces"
        );
        assert_eq!(shown("https://u@h"), "https://u@h/v1/traces");
        assert_eq!(shown("http://h/a@b"), "http://h/a@b/v1/traces");
        assert_eq!(shown("http://u:p:q@h"), "http://u:***@h/v1/traces");
    }

    #[test]
    fn headers_from_the_environment_and_config_are_checked_too() {
        let env = |name: &str| {
            (name == "OTEL_EXPORTER_OTLP_HEADERS").then(|| "x-a=b%0d%0aevil: 1".to_owned())
        };
        let error = from_environment(None, vec![], vec![], env).unwrap_err();
        assert!(
            error.contains("OTEL_EXPORTER_OTLP_HEADERS") && error.contains("x-a"),
            "{error}"
        );
        let error = from_environment(None, vec![("bad name".into(), "v".into())], vec![], |_| {
            None
        })
        .unwrap_err();
        assert!(error.contains("[otlp] headers"), "{error}");
    }

    #[test]
    fn a_host_gets_the_traces_path() {
        assert_eq!(
            Endpoint::new("http://localhost:4318", vec![]).url,
            "http://localhost:4318/v1/traces"
        );
        assert_eq!(
            Endpoint::new("http://localhost:6006/v1/traces/", vec![]).url,
            "http://localhost:6006/v1/traces"
        );
    }
}
