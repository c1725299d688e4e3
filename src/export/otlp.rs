//! Sends a session's spans (`spans.rs`) to an OpenTelemetry collector or trace backend over
//! OTLP/HTTP with protobuf, through the official crates (`opentelemetry-otlp`): no encoding of
//! our own. acptap's commands are synchronous, so the exporter runs on the blocking `reqwest`
//! client, and its future is driven here by a minimal executor.
//!
//! The collector is not trusted: it is never followed elsewhere (a redirect is an error, so the
//! spans and the headers go only where the user said), a request has one deadline for its
//! answer's headers and body together, at most 64 KiB of an answer is read, and every message
//! about an endpoint passes through [`masked`], which hides the URL's credentials.

use std::borrow::Cow;
use std::future::Future;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant, UNIX_EPOCH};

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
pub(crate) const SPANS_PER_REQUEST: usize = 512;

/// A refused request is sent again after this, then after twice as long, each wait at most
/// [`LAST_RETRY`].
const FIRST_RETRY: Duration = Duration::from_millis(250);
const LAST_RETRY: Duration = Duration::from_secs(8);

/// The deadline of one request of `export`: its answer, headers and body, complete within it.
pub(crate) const EXPORT_REQUEST_DEADLINE: Duration = Duration::from_secs(10);

/// What stands for a credential in what acptap shows.
const MASK: &str = "***";

#[derive(Debug, thiserror::Error)]
pub(crate) enum OtlpError {
    #[error("cannot set up the OTLP exporter for {endpoint}: {message}")]
    Setup { endpoint: String, message: String },
    #[error("{endpoint} did not take the spans ({sent} of {total} sent): {failure}")]
    Send {
        endpoint: String,
        sent: usize,
        total: usize,
        failure: SendFailure,
    },
}

/// Why a request of spans was not delivered, said for the user (the endpoint's credentials
/// masked): what happened, and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what}; {fix}")]
pub(crate) struct SendFailure {
    pub what: String,
    pub fix: &'static str,
}

/// Where and how to send.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    /// The traces URL, `http://host:4318/v1/traces`.
    pub url: String,
    /// Extra HTTP headers (an API key, for instance).
    pub headers: Vec<(String, String)>,
}

/// Whether `name=value` can be sent as an HTTP header: a name of letters, digits, `-` and `_`;
/// a value without control characters (a line break would start another header).
///
/// The error names a header by its name only where that is a header name: what is not may be a
/// piece of its value (`Bearer KEY=...`), which is never shown.
pub(crate) fn check_header(name: &str, value: &str) -> Result<(), HeaderError> {
    if !is_header_name(name) {
        return Err(HeaderError::Name);
    }
    if value.chars().any(|c| c.is_control() && c != '\t') {
        return Err(HeaderError::Value(name.to_owned()));
    }
    Ok(())
}

/// A header that cannot be sent.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HeaderError {
    #[error(
        "a header's name is letters, digits, `-` and `_` only (the name given is not shown: \
         it may hold a piece of the value)"
    )]
    Name,
    #[error("the value of header `{0}` has a line break or another control character")]
    Value(String),
}

/// An endpoint, or headers, that acptap will not send to. URLs are shown masked.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EndpointError {
    #[error(
        "`{0}` is not an OTLP/HTTP endpoint: give a URL such as http://localhost:4318 \
         (acptap sends OTLP over HTTP with protobuf, not gRPC)"
    )]
    NotHttp(String),
    #[error(
        "`{0}` cannot be used as it is: URL parsers end the host at a `/`, `?` or `#`, so \
         one in the user name or password (before the last `@`) would send to another host \
         or port; percent-encode them there (`/` as %2F, `?` %3F, `#` %23; an `@` in the \
         path or query as %40)"
    )]
    SeparatorInCredentials(String),
    #[error("the config file's [otlp] headers: {0}")]
    ConfigHeader(HeaderError),
    #[error("{variable}: entry {entry} is not name=value (entries are separated by commas)")]
    NotAPair {
        variable: &'static str,
        entry: usize,
    },
    #[error("{variable}: entry {entry}: {error}")]
    EnvironmentHeader {
        variable: &'static str,
        entry: usize,
        error: HeaderError,
    },
}

/// Whether `name` can be a header's name: letters, digits, `-` and `_`.
pub(crate) fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b))
}

impl Endpoint {
    /// The URL as it may be shown: its credentials replaced by `***` (see [`masked`]).
    pub(crate) fn shown(&self) -> String {
        masked(&self.url, &self.url)
    }

    /// `text`, a message about this endpoint, with the URL's credentials masked wherever they
    /// appear in it (see [`masked`]).
    pub(crate) fn mask(&self, text: &str) -> String {
        masked(&self.url, text)
    }

    /// `url` as given, with `/v1/traces` added to its path when it names only a host (as
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` does); a query stays after the path.
    pub(crate) fn new(url: &str, headers: Vec<(String, String)>) -> Endpoint {
        let host_at = host_at(url);
        let query_at = url[host_at..]
            .find(['?', '#'])
            .map_or(url.len(), |i| host_at + i);
        let (path, query) = url.split_at(query_at);
        let path = path.trim_end_matches('/');
        let url = if path.ends_with("/v1/traces") {
            format!("{path}{query}")
        } else {
            format!("{path}/v1/traces{query}")
        };
        Endpoint { url, headers }
    }
}

/// The endpoint given, else the one the OpenTelemetry environment variables name:
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else `OTEL_EXPORTER_OTLP_ENDPOINT`, else
/// `http://localhost:4318` (`/v1/traces` added unless the URL ends in it); and the headers of `OTEL_EXPORTER_OTLP_HEADERS`
/// and `OTEL_EXPORTER_OTLP_TRACES_HEADERS` (`name=value` pairs separated by commas, values
/// percent-encoded).
pub(crate) fn from_environment(
    url: Option<&str>,
    defaults: Vec<(String, String)>,
    mut headers: Vec<(String, String)>,
    var: impl Fn(&str) -> Option<String>,
) -> Result<Endpoint, EndpointError> {
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
        return Err(EndpointError::NotHttp(masked(&url, &url)));
    }
    // URL parsers end the host at the first `/`, `?` or `#`: a password holding one would be
    // read as a host and port (and sent there), not as a password.
    if userinfo(&url).is_some_and(|range| url[range].contains(['/', '?', '#'])) {
        return Err(EndpointError::SeparatorInCredentials(masked(&url, &url)));
    }
    for (key, value) in &defaults {
        check_header(key, value).map_err(EndpointError::ConfigHeader)?;
    }
    let mut from_env = defaults;
    for name in [
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    ] {
        let pairs = var(name).unwrap_or_default();
        for (n, pair) in pairs
            .split(',')
            .filter(|p| !p.trim().is_empty())
            .enumerate()
        {
            // The entry is not shown: without its `=` it may well be a bare key.
            let (key, value) = pair.split_once('=').ok_or(EndpointError::NotAPair {
                variable: name,
                entry: n + 1,
            })?;
            let (key, value) = (key.trim(), percent_decode(value.trim()));
            check_header(key, &value).map_err(|error| EndpointError::EnvironmentHeader {
                variable: name,
                entry: n + 1,
                error,
            })?;
            from_env.push((key.to_owned(), value));
        }
    }
    // Defaults (the config file), then the environment, then the command line: the later wins
    // where names repeat.
    from_env.append(&mut headers);
    Ok(Endpoint::new(&url, from_env))
}

/// `text`, a message about the endpoint `url`, with the URL's credentials replaced by `***`:
/// its user name and password; the value of each query parameter whose name names a secret
/// (`token`, `key`, `api_key`, `secret`, `password`, `auth`, `sig`, `code`, ...); a query value
/// or path segment that looks random (a key under an innocent name); the fragment.
///
/// The HTTP stack's errors quote the URL as it parsed it (normalised, percent-encoded), and may
/// quote a part of it: every form of the URL in `text` becomes the masked URL, then every
/// credential, as written and percent-decoded, is masked wherever else it appears (one shorter
/// than [`MIN_FREE_SECRET`] only where it stands alone, so that a password `pw` does not eat
/// the `pw` of another word).
pub(crate) fn masked(url: &str, text: &str) -> String {
    let mut forms = vec![url.to_owned()];
    if let Ok(parsed) = reqwest::Url::parse(url) {
        forms.push(parsed.as_str().to_owned());
        // The form the HTTP client sends to (it takes the user name and password out).
        let mut bare = parsed.clone();
        let _ = bare.set_username("");
        let _ = bare.set_password(None);
        forms.push(bare.as_str().to_owned());
    }
    // Longest first, so that a form holding another is replaced whole.
    forms.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    forms.dedup();
    let mut secrets = Vec::new();
    let mut out = text.to_owned();
    for form in &forms {
        // The user name and password in parts too: a URL parser reads a password holding `/`,
        // `?` or `#` as a host, port, path... and its errors quote those parts.
        if let Some(range) = userinfo(form) {
            for part in [form[range.clone()].to_owned(), percent_decode(&form[range])] {
                secrets.extend(
                    part.split(['/', '?', '#', ':', '@'])
                        .filter(|piece| piece.len() >= MIN_SECRET_PIECE)
                        .map(str::to_owned),
                );
            }
        }
        let ranges = credential_ranges(form);
        let mut shown = form.clone();
        for range in ranges.iter().rev() {
            secrets.push(form[range.clone()].to_owned());
            shown.replace_range(range.clone(), MASK);
        }
        out = out.replace(form.as_str(), &shown);
    }
    let decoded: Vec<String> = secrets.iter().map(|s| percent_decode(s)).collect();
    secrets.extend(decoded);
    secrets.retain(|secret| !secret.is_empty() && secret != MASK);
    secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    secrets.dedup();
    for secret in &secrets {
        out = mask_occurrences(&out, secret);
    }
    out
}

/// A credential at least this long is masked wherever it appears in a message; a shorter one
/// only where no letter or digit touches it.
const MIN_FREE_SECRET: usize = 6;

/// A part of the user information (between `/`, `?`, `#`, `:`, `@`) at least this long is
/// masked too; a shorter one (`a`, `pw`) would mask words of the message.
const MIN_SECRET_PIECE: usize = 3;

/// Where the authority of `url` starts: after `SCHEME://`; at 0 when it has no scheme (a URL
/// refused before it is sent may have none).
fn authority_at(url: &str) -> usize {
    url.find("://")
        .filter(|&i| {
            let scheme = &url[..i];
            scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
        })
        .map_or(0, |i| i + 3)
}

/// The byte range of `url`'s user information (user name and password), if it has an `@`
/// after `SCHEME://`. A host holds no `@`: all between `://` and the last `@` is taken as the
/// user information, whatever it holds (a `/`, `?` or `#` in a password, a base64 token), so
/// that no part of it is ever shown. (An `@` in a path or query makes what is before it a user
/// too: such a URL is refused before it is used, see [`from_environment`].)
fn userinfo(url: &str) -> Option<Range<usize>> {
    let start = authority_at(url);
    url[start..].rfind('@').map(|at| start..start + at)
}

/// Where `url`'s host starts: after its user information and `@`, else after `SCHEME://`.
fn host_at(url: &str) -> usize {
    userinfo(url).map_or_else(|| authority_at(url), |range| range.end + 1)
}

/// Query parameters whose name contains one of these hold a credential.
const SECRET_PARAMETER_WORDS: [&str; 14] = [
    "token",
    "key",
    "secret",
    "pass",
    "pwd",
    "auth",
    "sig",
    "code",
    "credential",
    "session",
    "jwt",
    "bearer",
    "cookie",
    "access",
];

/// `text` with each occurrence of `secret` replaced by `***` (see [`MIN_FREE_SECRET`]).
fn mask_occurrences(text: &str, secret: &str) -> String {
    if secret.len() >= MIN_FREE_SECRET {
        return text.replace(secret, MASK);
    }
    let word_char = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for (at, _) in text.match_indices(secret) {
        let end = at + secret.len();
        if at < copied
            || word_char(text[..at].chars().next_back())
            || word_char(text[end..].chars().next())
        {
            continue;
        }
        out.push_str(&text[copied..at]);
        out.push_str(MASK);
        copied = end;
    }
    out.push_str(&text[copied..]);
    out
}

/// The byte ranges of `url` that hold a credential (see [`masked`]), in order, not
/// overlapping. `url` need not parse: a string without a scheme is read as starting with the
/// host.
fn credential_ranges(url: &str) -> Vec<Range<usize>> {
    let mut ranges = Vec::new();
    let host_at = host_at(url);
    let authority_end = url[host_at..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| host_at + i);
    if let Some(userinfo) = userinfo(url) {
        match url[userinfo.clone()].find(':') {
            Some(colon) => {
                ranges.push(userinfo.start..userinfo.start + colon);
                ranges.push(userinfo.start + colon + 1..userinfo.end);
            }
            None => ranges.push(userinfo),
        }
    }
    let fragment_at = url[authority_end..]
        .find('#')
        .map_or(url.len(), |i| authority_end + i);
    let query_at = url[authority_end..fragment_at]
        .find('?')
        .map_or(fragment_at, |i| authority_end + i);
    let mut offset = authority_end;
    for segment in url[authority_end..query_at].split('/') {
        if looks_random(segment) {
            ranges.push(offset..offset + segment.len());
        }
        offset += segment.len() + 1;
    }
    if query_at < fragment_at {
        let mut offset = query_at + 1;
        for pair in url[query_at + 1..fragment_at].split(['&', ';']) {
            let value = match pair.split_once('=') {
                Some((name, value)) => {
                    let lowercase = percent_decode(name).to_ascii_lowercase();
                    let named_secret = SECRET_PARAMETER_WORDS.iter().any(|w| lowercase.contains(w));
                    (named_secret || looks_random(value))
                        .then(|| offset + name.len() + 1..offset + pair.len())
                }
                None => looks_random(pair).then(|| offset..offset + pair.len()),
            };
            ranges.extend(value.filter(|range| !range.is_empty()));
            offset += pair.len() + 1;
        }
    }
    if fragment_at + 1 < url.len() {
        ranges.push(fragment_at + 1..url.len());
    }
    ranges.retain(|range| !range.is_empty());
    ranges
}

/// Whether a URL part looks like a key rather than a word: long, and mixing letters and digits
/// (or very long).
fn looks_random(part: &str) -> bool {
    let letters = part.chars().any(|c| c.is_ascii_alphabetic());
    let digits = part.chars().any(|c| c.is_ascii_digit());
    (part.len() >= 16 && letters && digits) || part.len() >= 32
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

/// How long `export` keeps sending one request again while the backend refuses it, the
/// attempts and the waits between them together (each attempt may take its whole deadline
/// once more).
const EXPORT_PATIENCE: Duration = Duration::from_secs(16);

/// At most this much of a collector's answer is read (an OTLP answer is a few bytes of
/// protobuf; a collector that answers with gigabytes must not take acptap's memory with it).
const MAX_ANSWER_BYTES: u64 = 64 * 1024;

/// Why a request did not go through, as the HTTP client saw it (said by [`Failure::said`]).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Failure {
    /// The collector answered with this status, neither a success nor a redirect.
    Status(u16),
    /// The collector answered with a redirect, which is not followed: its status and the place
    /// (`scheme://host:port`) its `Location` names, when it names one.
    Redirect {
        status: u16,
        to: Option<String>,
    },
    /// The answer, headers and body, was not complete within the deadline.
    Deadline(Duration),
    Refused,
    UntrustedCertificate(String),
    /// What came back to the TLS handshake was not TLS.
    NotTls,
    UnknownHost,
    /// The HTTP client cannot read the endpoint's URL: why, in its words.
    InvalidUrl(String),
    /// Anything else, in the HTTP client's words.
    Other(String),
}

impl Failure {
    /// Whether the OTLP specification asks for the request again later.
    fn retryable(&self) -> bool {
        matches!(self, Failure::Status(status) if retryable(*status))
    }

    /// What happened, and what to do about it.
    fn said(&self) -> (String, &'static str) {
        match self {
            Failure::Status(status) => (
                format!("the backend answered HTTP {status}"),
                match status {
                    401 | 403 => "check the credentials (--header, OTEL_EXPORTER_OTLP_HEADERS)",
                    404 => "is this the traces endpoint? (it usually ends in /v1/traces)",
                    status if retryable(*status) => "the backend is busy or full: send again later",
                    _ => "the backend refused them",
                },
            ),
            Failure::Redirect { status, to } => (
                format!(
                    "the collector answered HTTP {status}, a redirect {}, which acptap does not \
                     follow: the spans were not delivered",
                    to.as_deref()
                        .map_or("without a usable Location".to_owned(), |to| format!(
                            "to {to}"
                        ))
                ),
                "give the final URL to --endpoint, or to run's --otlp",
            ),
            Failure::Deadline(deadline) => (
                format!("no complete answer within {}", seconds(*deadline)),
                "the collector is stalled or overloaded: send again later",
            ),
            Failure::Refused => (
                "connection refused".to_owned(),
                "is a collector listening there?",
            ),
            Failure::UntrustedCertificate(reason) => (
                format!("the collector's TLS certificate is not trusted ({reason})"),
                "for a collector with a private CA, point SSL_CERT_FILE at the CA's certificate",
            ),
            Failure::NotTls => (
                "what answered the TLS handshake does not speak TLS".to_owned(),
                "is the endpoint http:// rather than https://?",
            ),
            Failure::UnknownHost => (
                "the host name does not resolve".to_owned(),
                "check the endpoint's host name",
            ),
            Failure::InvalidUrl(why) => (
                format!("the URL does not parse: {why}"),
                "check the endpoint's URL",
            ),
            Failure::Other(message) => (message.clone(), "is a collector listening there?"),
        }
    }

    /// The failure of a request that the HTTP client gave up, after `deadline`.
    fn of_client_error(error: &reqwest::Error, deadline: Duration) -> Failure {
        let refused =
            std::iter::successors(Some(error as &(dyn std::error::Error + 'static)), |e| {
                e.source()
            })
            .any(|e| {
                e.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
            });
        let debug = format!("{error:?}");
        if error.is_timeout() {
            Failure::Deadline(deadline)
        } else if refused || debug.contains("ConnectionRefused") {
            Failure::Refused
        } else if let Some(at) = debug.find("InvalidCertificate(") {
            let reason: String = debug[at + "InvalidCertificate(".len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric())
                .collect();
            Failure::UntrustedCertificate(reason)
        } else if debug.contains("InvalidContentType") {
            Failure::NotTls
        } else if debug.contains("dns error") || debug.contains("failed to lookup") {
            Failure::UnknownHost
        } else {
            Failure::Other(causes(error))
        }
    }
}

/// A deadline said in seconds (`10 s`), or in milliseconds when it is not whole seconds.
fn seconds(duration: Duration) -> String {
    if duration.subsec_millis() == 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{} ms", duration.as_millis())
    }
}

/// An error's causes in one line, each said once (the top `reqwest` error only repeats the
/// URL, so it is said only when it has no cause).
fn causes(error: &reqwest::Error) -> String {
    let mut said: Vec<String> = Vec::new();
    let mut cause = std::error::Error::source(error);
    while let Some(e) = cause {
        let text = e.to_string();
        if !said.iter().any(|s| s.contains(&text)) {
            said.push(text);
        }
        cause = e.source();
    }
    if said.is_empty() {
        error.to_string()
    } else {
        said.join(": ")
    }
}

/// The HTTP client the exporter sends with: reqwest's blocking client, which follows no
/// redirect; each request has one deadline for the whole answer, headers and body, and at
/// most [`MAX_ANSWER_BYTES`] of the body is read. (The stock client reads the whole answer
/// into memory, follows redirects, and gives a body all the time it takes as long as a byte
/// arrives now and then.) Why a request failed is kept, typed, for [`Sender`].
#[derive(Debug)]
struct GuardedClient {
    client: reqwest::blocking::Client,
    deadline: Duration,
    failure: Arc<Mutex<Option<Failure>>>,
}

impl GuardedClient {
    fn send(
        &self,
        request: opentelemetry_http::Request<opentelemetry_http::Bytes>,
    ) -> Result<opentelemetry_http::Response<opentelemetry_http::Bytes>, Failure> {
        use std::io::Read;
        let started = Instant::now();
        let (parts, body) = request.into_parts();
        let url = reqwest::Url::parse(&parts.uri.to_string())
            .map_err(|e| Failure::InvalidUrl(e.to_string()))?;
        // The request builder sends a URL's user name and password as basic authorization
        // (a header given as Authorization wins), and not in the URL.
        let request = self
            .client
            .request(parts.method, url)
            .headers(parts.headers)
            .body(body.to_vec())
            // On the request, the deadline covers the body as well; on the client only each
            // read of it.
            .timeout(self.deadline)
            .build()
            .map_err(|e| Failure::Other(causes(&e)))?;
        let response = self
            .client
            .execute(request)
            .map_err(|e| Failure::of_client_error(&e, self.deadline))?;
        let status = response.status();
        if status.is_redirection() {
            let to = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|location| location.to_str().ok())
                .and_then(|location| response.url().join(location).ok())
                .and_then(|to| {
                    let port = to.port().map(|port| format!(":{port}")).unwrap_or_default();
                    Some(format!("{}://{}{port}", to.scheme(), to.host_str()?))
                });
            return Err(Failure::Redirect {
                status: status.as_u16(),
                to,
            });
        }
        if !status.is_success() {
            return Err(Failure::Status(status.as_u16()));
        }
        let headers = response.headers().clone();
        let mut answer = Vec::new();
        let read = response.take(MAX_ANSWER_BYTES).read_to_end(&mut answer);
        if started.elapsed() >= self.deadline {
            return Err(Failure::Deadline(self.deadline));
        }
        if let Err(e) = read {
            return Err(match e.get_ref().and_then(|e| e.downcast_ref()) {
                Some(client_error) => Failure::of_client_error(client_error, self.deadline),
                None => Failure::Other(e.to_string()),
            });
        }
        let mut answer = opentelemetry_http::Response::builder()
            .status(status)
            .body(opentelemetry_http::Bytes::from(answer))
            .map_err(|e| Failure::Other(e.to_string()))?;
        *answer.headers_mut() = headers;
        Ok(answer)
    }
}

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for GuardedClient {
    async fn send_bytes(
        &self,
        request: opentelemetry_http::Request<opentelemetry_http::Bytes>,
    ) -> Result<
        opentelemetry_http::Response<opentelemetry_http::Bytes>,
        opentelemetry_http::HttpError,
    > {
        self.send(request).map_err(|failure| {
            let said = failure.said().0;
            *self.failure.lock().unwrap_or_else(|e| e.into_inner()) = Some(failure);
            said.into()
        })
    }
}

/// One OTLP/HTTP exporter, for any number of requests to one endpoint.
pub(crate) struct Sender {
    exporter: opentelemetry_otlp::SpanExporter,
    endpoint: Endpoint,
    /// Why the last request failed, as the HTTP client saw it.
    failure: Arc<Mutex<Option<Failure>>>,
}

impl Sender {
    /// An exporter whose requests each have `deadline` for their whole answer.
    pub(crate) fn new(endpoint: &Endpoint, deadline: Duration) -> Result<Sender, OtlpError> {
        let setup = |message: String| OtlpError::Setup {
            endpoint: endpoint.shown(),
            message: endpoint.mask(&message),
        };
        let client = reqwest::blocking::Client::builder()
            .timeout(deadline)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| setup(causes(&e)))?;
        let failure = Arc::new(Mutex::new(None));
        let mut exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(GuardedClient {
                client,
                deadline,
                failure: failure.clone(),
            })
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(&endpoint.url)
            .with_timeout(deadline)
            .with_headers(endpoint.headers.iter().cloned().collect())
            .build()
            .map_err(|e| setup(e.to_string()))?;
        exporter.set_resource(&resource());
        Ok(Sender {
            exporter,
            endpoint: endpoint.clone(),
            failure,
        })
    }

    /// The endpoint's URL as it may be shown.
    pub(crate) fn url(&self) -> String {
        self.endpoint.shown()
    }

    /// Sends one request of spans. A backend that answers with a busy status (503 when its
    /// ingestion is full, 429) is there and busy: it gets the request again after 250 ms, then
    /// after twice as long each time, as the OTLP specification asks, while the attempts and
    /// waits fit in `patience`. The failure is the last attempt's.
    pub(crate) fn send_request(
        &mut self,
        spans: &[Span],
        patience: Duration,
    ) -> Result<(), SendFailure> {
        let started = Instant::now();
        let mut wait = FIRST_RETRY;
        loop {
            self.failure
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            let batch = spans.iter().map(span_data).collect();
            let Err(error) = block_on(self.exporter.export(batch)) else {
                return Ok(());
            };
            let failure = self
                .failure
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
                .unwrap_or_else(|| Failure::Other(error.to_string()));
            if failure.retryable() && started.elapsed() + wait <= patience {
                std::thread::sleep(wait);
                wait = (wait * 2).min(LAST_RETRY);
                continue;
            }
            let (what, fix) = failure.said();
            return Err(SendFailure {
                what: self.endpoint.mask(&what),
                fix,
            });
        }
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        let _ = self.exporter.shutdown();
    }
}

/// Sends `spans`, [`SPANS_PER_REQUEST`] at a time; returns how many were sent.
pub(crate) fn send(spans: &[Span], endpoint: &Endpoint) -> Result<usize, OtlpError> {
    let mut sender = Sender::new(endpoint, EXPORT_REQUEST_DEADLINE)?;
    let mut sent = 0;
    for chunk in spans.chunks(SPANS_PER_REQUEST) {
        sender
            .send_request(chunk, EXPORT_PATIENCE)
            .map_err(|failure| OtlpError::Send {
                endpoint: endpoint.shown(),
                sent,
                total: spans.len(),
                failure,
            })?;
        sent += chunk.len();
    }
    Ok(sent)
}

/// The statuses after which OTLP/HTTP asks a client to send again later.
fn retryable(status: u16) -> bool {
    matches!(status, 429 | 502 | 503 | 504)
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
pub(crate) fn to_json(spans: &[Span]) -> serde_json::Result<Vec<u8>> {
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
        // An entry without `=` is named by its place: it may be a bare key.
        let error = from_environment(
            None,
            vec![],
            vec![],
            env(&[("OTEL_EXPORTER_OTLP_HEADERS", "a=b,bare-key-0a1b")]),
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.contains("OTEL_EXPORTER_OTLP_HEADERS: entry 2") && !error.contains("bare-key"),
            "{error}"
        );
        let error = from_environment(
            Some("ftp://u:pw-secret@h/?api_key=k"),
            vec![],
            vec![],
            env(&[]),
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.contains("`ftp://***:***@h/?api_key=***` is not an OTLP/HTTP endpoint"),
            "{error}"
        );
        for bad in [
            "localhost:4318",
            "grpc://h:4317",
            "http://",
            "http:///v1",
            "http://h x",
        ] {
            let error = from_environment(Some(bad), vec![], vec![], env(&[]))
                .unwrap_err()
                .to_string();
            assert!(
                error.contains("not an OTLP/HTTP endpoint"),
                "{bad}: {error}"
            );
        }
        assert!(from_environment(Some("HTTPS://h"), vec![], vec![], env(&[])).is_ok());
    }

    #[test]
    fn failures_are_said_with_what_to_do() {
        assert!(Failure::Status(503).retryable() && Failure::Status(429).retryable());
        assert!(
            !Failure::Status(403).retryable() && !Failure::Deadline(Duration::ZERO).retryable()
        );
        assert_eq!(
            Failure::Status(401).said(),
            (
                "the backend answered HTTP 401".to_owned(),
                "check the credentials (--header, OTEL_EXPORTER_OTLP_HEADERS)"
            )
        );
        let (what, fix) = Failure::Redirect {
            status: 307,
            to: Some("http://elsewhere:80".into()),
        }
        .said();
        assert!(
            what.contains("HTTP 307")
                && what.contains("to http://elsewhere:80")
                && what.contains("not delivered"),
            "{what}"
        );
        assert!(fix.contains("final URL"), "{fix}");
        let (what, _) = Failure::Redirect {
            status: 302,
            to: None,
        }
        .said();
        assert!(what.contains("without a usable Location"), "{what}");
        assert_eq!(
            Failure::Deadline(EXPORT_REQUEST_DEADLINE).said().0,
            "no complete answer within 10 s"
        );
        assert_eq!(seconds(Duration::from_millis(1500)), "1500 ms");
    }

    #[test]
    fn credentials_in_the_url_are_never_shown() {
        let shown = |url: &str| Endpoint::new(url, vec![]).shown();
        assert_eq!(
            shown("https://u:pw@h:4318"),
            "https://***:***@h:4318/v1/traces"
        );
        // A user name alone is often a token.
        assert_eq!(shown("https://u@h"), "https://***@h/v1/traces");
        // A host holds no `@`: all before the last one is the user name and password, whatever
        // they hold (base64 holds `/`), and `/v1/traces` goes after the host, not into them.
        assert_eq!(
            shown("https://otel:k3y/abc@collector.example:4318/v1/traces"),
            "https://***:***@collector.example:4318/v1/traces"
        );
        assert_eq!(
            shown("https://otel:Zm9vYmFyLWtleQ/c2VjcmV0@h:4318"),
            "https://***:***@h:4318/v1/traces"
        );
        assert_eq!(
            shown("http://u:ab#cd@h:4318"),
            "http://***:***@h:4318/v1/traces"
        );
        assert_eq!(shown("http://u:ab?cd@h"), "http://***:***@h/v1/traces");
        assert_eq!(
            shown("http://u:a/b?c#d@e@h/x"),
            "http://***:***@h/x/v1/traces"
        );
        assert_eq!(shown("http://tok/en@h"), "http://***@h/v1/traces");
        assert_eq!(shown("http://u:pa:ss/wo@h"), "http://***:***@h/v1/traces");
        // So an `@` in the path or query makes what is before it a user (such a URL is refused
        // before it is used: `from_environment`).
        assert_eq!(shown("http://h/a@b"), "http://***@b/v1/traces");
        assert_eq!(shown("http://u:p:q@h"), "http://***:***@h/v1/traces");
        assert_eq!(
            shown("http://h/v1/traces?api_key=k1&region=eu&Token=t&X-Sig=s&code=c&flag"),
            "http://h/v1/traces?api_key=***&region=eu&Token=***&X-Sig=***&code=***&flag"
        );
        // Keys under innocent names: what looks random is masked, in the path and the query.
        assert_eq!(
            shown("http://h/ingest/0a1b2c3d4e5f6a7b8c9d?project=p0123456789abcdefgh&v=2"),
            "http://h/ingest/***/v1/traces?project=***&v=2"
        );
        assert_eq!(shown("http://h/v1/traces#tok"), "http://h/v1/traces#***");
        // A URL refused before it is sent may have no scheme.
        assert_eq!(masked("u:pw@h:4318", "u:pw@h:4318"), "***:***@h:4318");
    }

    #[test]
    fn a_message_is_masked_wherever_the_url_or_a_credential_appears_in_it() {
        // As given: a raw `@` in the password and `/` in the token; as the HTTP client writes
        // it: percent-encoded.
        let endpoint = Endpoint::new("http://user:p@ss-word@h:4318?token=t/k-1", vec![]);
        assert_eq!(
            endpoint.url,
            "http://user:p@ss-word@h:4318/v1/traces?token=t/k-1"
        );
        let error = r#"reqwest::Error { kind: Request, url: "http://user:p%40ss-word@h:4318/v1/traces?token=t/k-1", source: hyper::Error(Io, "p%40ss-word or p@ss-word or t/k-1") }"#;
        let said = endpoint.mask(error);
        for secret in ["user", "p@ss-word", "p%40ss-word", "t/k-1"] {
            assert!(!said.contains(secret), "{secret}: {said}");
        }
        assert!(
            said.contains(r#"url: "http://***:***@h:4318/v1/traces?token=***""#),
            "{said}"
        );
        // The URL without its user (as the client sends it) is still masked in its query.
        assert_eq!(
            endpoint.mask("to http://h:4318/v1/traces?token=t/k-1"),
            "to http://h:4318/v1/traces?token=***"
        );
        // A password holding `/`, `?` or `#`: whole, and its parts wherever an error quotes
        // them (the URL parser reads `k3y` as a port and `Zm9vYmFy` as a host).
        let endpoint = Endpoint::new("https://otel:Zm9vYmFy/k3y?c2Vj#cmV0@h:4318", vec![]);
        let said = endpoint.mask(
            "https://otel:Zm9vYmFy/k3y?c2Vj#cmV0@h:4318/v1/traces: invalid port `k3y`; \
             host Zm9vYmFy, query c2Vj, fragment cmV0@h:4318, user otel",
        );
        for secret in ["otel", "Zm9vYmFy", "k3y", "c2Vj", "cmV0"] {
            assert!(!said.contains(secret), "{secret}: {said}");
        }
        assert!(
            said.starts_with("https://***:***@h:4318/v1/traces: "),
            "{said}"
        );
        // A short credential is masked where it stands alone, not inside another word.
        let short = Endpoint::new("http://u:pw@h", vec![]);
        assert_eq!(short.mask("spawn: pw refused"), "spawn: *** refused");
    }

    #[test]
    fn a_url_whose_user_information_holds_a_slash_a_hash_or_a_question_mark_is_refused() {
        // The URL parser reads such a URL as another host or port than the one after the `@`
        // (`otel`, port `k3y`): it is refused, masked, with the fix.
        for url in [
            "https://otel:k3y/abc@collector.example:4318/v1/traces",
            "https://otel:ab#cdef@collector.example",
            "https://otel:ab?cdef@collector.example",
            "http://tok/enSECRET@collector.example",
            "http://collector.example/v1/traces?mail=a@b",
        ] {
            let error = from_environment(Some(url), vec![], vec![], |_| None)
                .unwrap_err()
                .to_string();
            assert!(error.contains("percent-encode"), "{url}: {error}");
            for secret in ["k3y", "abc", "cdef", "enSECRET", "otel", "tok"] {
                assert!(!error.contains(secret), "{url}: {secret}: {error}");
            }
        }
        // Percent-encoded, they are taken (and sent decoded, as basic authorization).
        let endpoint = from_environment(
            Some("https://otel:k3y%2Fabc%23d%3Fe@collector.example:4318"),
            vec![],
            vec![],
            |_| None,
        )
        .unwrap();
        assert_eq!(
            endpoint.url,
            "https://otel:k3y%2Fabc%23d%3Fe@collector.example:4318/v1/traces"
        );
        assert_eq!(
            endpoint.shown(),
            "https://***:***@collector.example:4318/v1/traces"
        );
        assert!(!endpoint.mask("k3y/abc#d?e").contains("abc"));
    }

    #[test]
    fn headers_from_the_environment_and_config_are_checked_too() {
        let env = |name: &str| {
            (name == "OTEL_EXPORTER_OTLP_HEADERS").then(|| "x-a=b%0d%0aevil: 1".to_owned())
        };
        let error = from_environment(None, vec![], vec![], env)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("OTEL_EXPORTER_OTLP_HEADERS") && error.contains("x-a"),
            "{error}"
        );
        let error = from_environment(None, vec![("bad name".into(), "v".into())], vec![], |_| {
            None
        })
        .unwrap_err()
        .to_string();
        assert!(error.contains("[otlp] headers"), "{error}");
        // A name that is not one may be a piece of the value: named by its place only.
        let env = |name: &str| {
            (name == "OTEL_EXPORTER_OTLP_HEADERS").then(|| "a=b,Bearer SeCrEt9=1".to_owned())
        };
        let error = from_environment(None, vec![], vec![], env)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("OTEL_EXPORTER_OTLP_HEADERS: entry 2:") && !error.contains("SeCrEt9"),
            "{error}"
        );
        let error = from_environment(
            None,
            vec![("Bearer SeCrEt9".into(), "v".into())],
            vec![],
            |_| None,
        )
        .unwrap_err()
        .to_string();
        assert!(!error.contains("SeCrEt9"), "{error}");
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
        // The path goes before a query, not after it.
        assert_eq!(
            Endpoint::new("http://h:4318/?api_key=k", vec![]).url,
            "http://h:4318/v1/traces?api_key=k"
        );
        assert_eq!(
            Endpoint::new("http://h/v1/traces?x=1", vec![]).url,
            "http://h/v1/traces?x=1"
        );
    }
}
