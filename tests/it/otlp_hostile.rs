//! `acptap export --format otlp` and `acptap run --otlp` against collectors that are not what
//! they should be, played by the test on real sockets (no Phoenix needed): one that redirects
//! elsewhere, one that answers 200 and then trickles its body, and endpoints whose URL carries
//! credentials (a password, a token as the user name, a key in the query), which no message may
//! show whatever goes wrong.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::util::{SAMPLES, Sandbox, finish, fixture, play_sample};

/// A request as a [`FakeCollector`] read it: the request line and headers, and the body's size.
#[derive(Debug, Clone)]
struct Received {
    head: String,
    body_bytes: usize,
}

/// An HTTP server standing in for a collector: each connection on a thread of its own, one
/// request read, then `answer` writes whatever it likes and the connection is closed.
struct FakeCollector {
    /// `http://IP:PORT`
    url: String,
    received: Arc<Mutex<Vec<Received>>>,
}

impl FakeCollector {
    fn start(
        ip: &str,
        answer: impl Fn(&mut TcpStream) -> std::io::Result<()> + Send + Sync + 'static,
    ) -> FakeCollector {
        let listener = TcpListener::bind((ip, 0)).expect("bind a loopback address");
        let url = format!("http://{}", listener.local_addr().unwrap());
        let received = Arc::new(Mutex::new(Vec::new()));
        let answer = Arc::new(answer);
        {
            let received = received.clone();
            std::thread::spawn(move || {
                for stream in listener.incoming().flatten() {
                    let received = received.clone();
                    let answer = answer.clone();
                    std::thread::spawn(move || {
                        let mut stream = stream;
                        if let Some(request) = read_request(&stream) {
                            received.lock().unwrap().push(request);
                            let _ = answer(&mut stream);
                        }
                    });
                }
            });
        }
        FakeCollector { url, received }
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

/// Reads one request's head and its `Content-Length` bytes of body; None when the peer sent no
/// complete request (a TLS handshake, for instance).
fn read_request(stream: &TcpStream) -> Option<Received> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let body_bytes = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse().unwrap_or(0))
        })
        .unwrap_or(0);
    let mut body = vec![0; body_bytes];
    reader.read_exact(&mut body).ok()?;
    Some(Received { head, body_bytes })
}

fn plain_answer(status: &'static str) -> impl Fn(&mut TcpStream) -> std::io::Result<()> {
    move |stream| {
        write!(
            stream,
            "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
    }
}

fn redirect_to(location: String) -> impl Fn(&mut TcpStream) -> std::io::Result<()> {
    move |stream| {
        write!(
            stream,
            "HTTP/1.1 307 Temporary Redirect\r\nLocation: {location}\r\nContent-Length: 0\r\n\
             Connection: close\r\n\r\n"
        )
    }
}

/// A sandbox holding one imported sample.
fn recorded_sandbox() -> Sandbox {
    let sb = Sandbox::new();
    sb.acptap(&["import", fixture(SAMPLES[0]).to_str().unwrap()]);
    sb
}

/// `acptap export last --format otlp --endpoint URL [extra]`, ended by the test if it runs for
/// more than a minute (a hang fails the test instead of blocking it).
fn export_to(sb: &Sandbox, url: &str, extra: &[&str]) -> Output {
    let mut args = vec!["export", "last", "--format", "otlp", "--endpoint", url];
    args.extend_from_slice(extra);
    acptap_in(sb, &args)
}

fn said(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A collector answering 307 to another host: acptap does not follow it, so neither the spans
/// nor the API key reach that host; the export fails naming the status and where it pointed,
/// and says to give that URL instead. The same holds for `run --otlp`.
#[test]
fn a_redirect_is_not_followed_and_the_spans_and_keys_stay_where_they_were_sent() {
    let elsewhere = FakeCollector::start("127.0.0.2", plain_answer("200 OK"));
    let elsewhere_host = elsewhere.url.trim_start_matches("http://").to_owned();
    let redirecting = FakeCollector::start(
        "127.0.0.1",
        redirect_to(format!("{}/v1/traces", elsewhere.url)),
    );
    let sb = recorded_sandbox();
    let out = export_to(
        &sb,
        &redirecting.url,
        &["--header", "X-Api-Key=key-for-the-collector-only"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(!stderr.contains("sent "), "reported success: {stderr}");
    assert!(
        stderr.contains("307") && stderr.contains(&elsewhere_host),
        "the status and the target are not named: {stderr}"
    );
    assert!(
        stderr.contains("not delivered") && stderr.contains("final URL"),
        "no word on what happened and what to do: {stderr}"
    );
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    let asked = redirecting.received();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].head.contains("key-for-the-collector-only") && asked[0].body_bytes > 0);
    assert!(
        elsewhere.received().is_empty(),
        "the redirect was followed: {:?}",
        elsewhere.received()
    );

    let sb = Sandbox::new();
    let (out, _) = play_sample(
        &sb,
        SAMPLES[0],
        &[
            "--otlp",
            &redirecting.url,
            "--otlp-header",
            "X-Api-Key=key-for-the-collector-only",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("307") && stderr.contains(&elsewhere_host),
        "{stderr}"
    );
    assert!(stderr.contains("were not sent"), "{stderr}");
    assert!(
        elsewhere.received().is_empty(),
        "run --otlp followed the redirect: {:?}",
        elsewhere.received()
    );
}

/// A collector that answers 200 with a body of a million bytes and sends one a second: the
/// export gives up at its deadline (10 s a request) with a clear error, instead of reading for
/// eleven days.
#[test]
fn a_collector_trickling_its_answer_is_given_up_at_the_deadline() {
    let trickling = FakeCollector::start("127.0.0.1", |stream| {
        stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n")?;
        loop {
            stream.write_all(b"0")?;
            std::thread::sleep(Duration::from_secs(1));
        }
    });
    let sb = recorded_sandbox();
    let started = std::time::Instant::now();
    let out = export_to(&sb, &trickling.url, &[]);
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        took < Duration::from_secs(40),
        "the export took {took:?}: {stderr}"
    );
    assert!(
        stderr.contains("no complete answer within 10 s"),
        "the deadline is not named: {stderr}"
    );
    assert_eq!(trickling.received().len(), 1);
}

/// Credentials in the endpoint's URL (a password, a token as the user name, percent-encoded or
/// not, keys in the query) never appear in what acptap prints, whether the collector is down,
/// speaks no TLS, redirects in a loop, refuses, or takes the spans; nor in `run --otlp`'s report
/// and the export command it suggests.
#[test]
fn credentials_in_the_endpoint_url_are_never_printed() {
    const SECRETS: [&str; 16] = [
        "pw-Hunter2-secret",
        "tokenuser9f8e7d6c5b4a",
        "SECRET-in-query-0a1b",
        "p@ss-word",
        "p%40ss-word",
        "sig-3c4d5e6f7a8b",
        "access-7f6e5d4c",
        "justabitrandom0123456789abcdef",
        // Both halves of passwords and a token holding `/`, `#` or `?` (base64 holds `/`).
        "Zm9vYmFyLWtleQ",
        "c2VjcmV0LWtleQ",
        "hash-Part-1a2b",
        "hash-Part-3c4d",
        "ask-Part-5e6f",
        "ask-Part-7a8b",
        "tokpart-1e2f",
        "tokpart-3a4b",
    ];
    let closed = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    // Answers a TLS ClientHello with plain HTTP.
    let plain = FakeCollector::start("127.0.0.1", plain_answer("400 Bad Request"));
    let plain_port = plain.url.rsplit(':').next().unwrap().to_owned();
    let looping = FakeCollector::start("127.0.0.1", redirect_to("/v1/traces?again=1".into()));
    let looping_port = looping.url.rsplit(':').next().unwrap().to_owned();
    let refusing = FakeCollector::start("127.0.0.1", plain_answer("401 Unauthorized"));
    let refusing_port = refusing.url.rsplit(':').next().unwrap().to_owned();
    let taking = FakeCollector::start("127.0.0.1", plain_answer("200 OK"));
    let taking_port = taking.url.rsplit(':').next().unwrap().to_owned();

    let cases = [
        (
            "down",
            format!(
                "http://user:pw-Hunter2-secret@127.0.0.1:{closed}/v1/traces?api_key=SECRET-in-query-0a1b&region=eu"
            ),
        ),
        (
            "down, token as the user name",
            format!("http://tokenuser9f8e7d6c5b4a@127.0.0.1:{closed}"),
        ),
        (
            "no TLS",
            format!(
                "https://user:p%40ss-word@127.0.0.1:{plain_port}/v1/traces?token=SECRET-in-query-0a1b"
            ),
        ),
        (
            "redirect loop",
            format!(
                "http://user:pw-Hunter2-secret@127.0.0.1:{looping_port}/v1/traces?sig=sig-3c4d5e6f7a8b"
            ),
        ),
        (
            "refusing",
            format!(
                "http://tokenuser9f8e7d6c5b4a@127.0.0.1:{refusing_port}/v1/traces?access_token=access-7f6e5d4c"
            ),
        ),
        (
            "taking",
            format!(
                "http://user:pw-Hunter2-secret@127.0.0.1:{taking_port}/v1/traces?project=justabitrandom0123456789abcdef"
            ),
        ),
        (
            "a `/` in the password",
            format!("http://user:Zm9vYmFyLWtleQ/c2VjcmV0LWtleQ@127.0.0.1:{taking_port}/v1/traces"),
        ),
        (
            "a `#` in the password",
            format!("http://user:hash-Part-1a2b#hash-Part-3c4d@127.0.0.1:{taking_port}"),
        ),
        (
            "a `?` in the password",
            format!("https://user:ask-Part-5e6f?ask-Part-7a8b@127.0.0.1:{closed}/v1/traces"),
        ),
        (
            "a `/` in the token as the user name",
            format!("http://tokpart-1e2f/tokpart-3a4b@127.0.0.1:{taking_port}"),
        ),
    ];
    let sb = recorded_sandbox();
    for (case, url) in &cases {
        let out = export_to(&sb, url, &[]);
        let said = said(&out);
        for secret in SECRETS {
            assert!(
                !said.contains(secret),
                "{case}: `{secret}` was printed: {said}"
            );
        }
        assert!(said.contains("***"), "{case}: {said}");
        // The message still names where it went.
        assert!(said.contains("127.0.0.1:"), "{case}: {said}");
        if *case == "taking" {
            assert!(out.status.success(), "{case}: {said}");
        } else if case.starts_with("a `") {
            // Refused before anything is sent: the URL means another host or port than the
            // one after the `@`; the fix is named.
            assert_eq!(out.status.code(), Some(2), "{case}: {said}");
            assert!(said.contains("percent-encode"), "{case}: {said}");
        } else {
            assert_eq!(out.status.code(), Some(2), "{case}: {said}");
        }
    }
    assert_eq!(
        taking.received().len(),
        1,
        "the spans were not sent just once"
    );
    for (case, url) in &cases[6..] {
        let out = acptap_in(&sb, &["run", "--otlp", url, "--", "true"]);
        let said = said(&out);
        assert_eq!(out.status.code(), Some(2), "run, {case}: {said}");
        assert!(said.contains("percent-encode"), "run, {case}: {said}");
        for secret in SECRETS {
            assert!(
                !said.contains(secret),
                "run, {case}: `{secret}` was printed: {said}"
            );
        }
    }

    for (case, url) in &cases[..4] {
        let sb = Sandbox::new();
        let (out, _) = play_sample(&sb, SAMPLES[0], &["--otlp", url]);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "run, {case}: {stderr}");
        assert!(stderr.contains("were not sent"), "run, {case}: {stderr}");
        for secret in SECRETS {
            assert!(
                !stderr.contains(secret),
                "run, {case}: `{secret}` was printed: {stderr}"
            );
        }
    }
}

/// A URL refused before anything is sent (it is not an OTLP/HTTP endpoint) is named masked too.
#[test]
fn a_refused_endpoint_url_is_named_without_its_credentials() {
    let sb = recorded_sandbox();
    let out = export_to(
        &sb,
        "ftp://user:pw-Hunter2-secret@h/?api_key=k-0a1b2c3d",
        &[],
    );
    let said = said(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("not an OTLP/HTTP endpoint"), "{said}");
    assert!(
        !said.contains("pw-Hunter2-secret") && !said.contains("k-0a1b2c3d"),
        "{said}"
    );
}

/// `acptap ARGS` against the sandbox, stdin closed, ended by the test after a minute.
fn acptap_in(sb: &Sandbox, args: &[&str]) -> Output {
    let child = Command::new(crate::util::acptap_bin())
        .args(args)
        .env("ACPTAP_DB", sb.db())
        .env("XDG_CONFIG_HOME", sb.dir.path())
        .env_remove("OTEL_EXPORTER_OTLP_HEADERS")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start acptap");
    finish(child, Duration::from_secs(60))
}

/// A `--header` (`run --otlp-header`) that cannot be sent is refused naming the header by its
/// name or its place and saying how to write it, never showing its value: the command line's own
/// errors (clap's) quote the value they refuse. The curl form `Name: value` is taken as it is
/// meant, and sent.
#[test]
fn a_bad_header_is_refused_without_showing_its_value() {
    const SECRETS: [&str; 4] = ["SeCrEtPw9", "rEtVaLuE1", "JuStAtOkEn42", "BeArErPaRt7"];
    let sb = recorded_sandbox();
    // The option as given, how the refusal names it, and the fix it must name.
    let cases: [(&[&str], &str, &str); 4] = [
        (
            &["--header", "x-api-key=SeC\nrEtVaLuE1"],
            "1st --header",
            "`x-api-key` has a line break",
        ),
        (&["--header", "JuStAtOkEn42"], "1st --header", "NAME=VALUE"),
        (
            &[
                "--header",
                "X-Scope-OrgID=team-a",
                "--header",
                "JuStAtOkEn42",
            ],
            "2nd --header",
            "NAME=VALUE",
        ),
        (
            &["--header", "Bearer BeArErPaRt7=x"],
            "1st --header",
            "NAME=VALUE",
        ),
    ];
    for (extra, named, fix) in cases {
        let run_extra: Vec<String> = extra
            .iter()
            .map(|a| a.replace("--header", "--otlp-header"))
            .collect();
        let mut run_args = vec!["run", "--otlp", "http://127.0.0.1:1"];
        run_args.extend(run_extra.iter().map(String::as_str));
        run_args.extend(["--", "true"]);
        for (out, named) in [
            (
                export_to(&sb, "http://127.0.0.1:1/v1/traces", extra),
                named.to_owned(),
            ),
            (
                acptap_in(&sb, &run_args),
                named.replace("--header", "--otlp-header"),
            ),
        ] {
            let printed = said(&out);
            assert_eq!(out.status.code(), Some(2), "{extra:?}: {printed}");
            for secret in SECRETS {
                assert!(
                    !printed.contains(secret),
                    "{extra:?}: `{secret}` was printed: {printed}"
                );
            }
            assert!(
                printed.contains(&named) && printed.contains(fix),
                "{extra:?}: `{named}` or `{fix}` is not said: {printed}"
            );
        }
    }

    // `Name: value`, as curl and HTTP write a header, is a header too.
    let taking = FakeCollector::start("127.0.0.1", plain_answer("200 OK"));
    let out = export_to(
        &sb,
        &taking.url,
        &["--header", "Authorization: Bearer SeCrEtPw9"],
    );
    let said = said(&out);
    assert!(out.status.success(), "{said}");
    assert!(!said.contains("SeCrEtPw9"), "{said}");
    let received = taking.received();
    assert!(
        !received.is_empty()
            && received.iter().all(|r| r
                .head
                .to_ascii_lowercase()
                .contains("\r\nauthorization: bearer secretpw9")),
        "{received:?}"
    );
}
