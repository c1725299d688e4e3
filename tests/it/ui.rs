//! `acptap ui`'s security model, from outside: a real server process, raw HTTP requests.
//! Without the token, with a foreign Host (DNS rebinding), with a foreign Origin, with a method
//! that could change something, from a non-loopback address: all refused. With the token:
//! served, with the cookie and the strict headers.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

use crate::util::{SAMPLES, Sandbox, acptap_bin, fixture};

struct Ui {
    child: Child,
    port: u16,
    token: String,
}

impl Drop for Ui {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(sb: &Sandbox) -> Ui {
    let mut child = Command::new(acptap_bin())
        .args(["ui", "--db"])
        .arg(sb.db())
        .env("XDG_CONFIG_HOME", sb.dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line.trim();
    let rest = url.strip_prefix("http://127.0.0.1:").expect(url);
    let (port, token) = rest.split_once("/?token=").expect(url);
    Ui {
        child,
        port: port.parse().unwrap(),
        token: token.to_owned(),
    }
}

/// Sends one raw request; returns the status code and the whole answer.
fn request(address: &str, text: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.write_all(text.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, answer)
}

#[test]
fn every_request_needs_the_token_the_host_and_the_origin() {
    let sb = Sandbox::new();
    sb.acptap(&["import", fixture(SAMPLES[0]).to_str().unwrap()]);
    let ui = start(&sb);
    let at = format!("127.0.0.1:{}", ui.port);
    let get = |path: &str, extra: &str| {
        request(
            &at,
            &format!("GET {path} HTTP/1.1\r\nHost: {at}\r\n{extra}Connection: close\r\n\r\n"),
        )
    };
    let token = &ui.token;

    let (status, _) = get("/api/sessions", "");
    assert_eq!(status, 401, "no token");
    let (status, _) = get("/api/sessions?token=0000", "");
    assert_eq!(status, 401, "a wrong token");

    let (status, answer) = get(&format!("/?token={token}"), "");
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("acptap_ui="), "the cookie: {answer}");
    assert!(answer.to_ascii_lowercase().contains("httponly"));
    assert!(answer.contains("SameSite=Strict"));
    assert!(
        answer.contains("content-security-policy: default-src 'none'"),
        "{answer}"
    );
    assert!(answer.contains("referrer-policy: no-referrer"));

    let (status, answer) = get("/api/sessions", &format!("Cookie: acptap_ui={token}\r\n"));
    assert_eq!(status, 200, "{answer}");
    assert!(
        answer.contains("f2e2e388-b7af-4f86-8962-244a44037f29"),
        "{answer}"
    );

    // DNS rebinding: the attacker's page names its own host.
    let (status, _) = request(
        &at,
        &format!(
            "GET /api/sessions?token={token} HTTP/1.1\r\nHost: evil.example:{}\r\nConnection: close\r\n\r\n",
            ui.port
        ),
    );
    assert_eq!(status, 403, "a foreign Host");
    let (status, _) = get(
        &format!("/api/sessions?token={token}"),
        "Origin: http://evil.example\r\n",
    );
    assert_eq!(status, 403, "a foreign Origin");
    let (status, _) = get(
        &format!("/api/sessions?token={token}"),
        &format!("Origin: http://localhost:{}\r\n", ui.port),
    );
    assert_eq!(status, 200, "our own Origin");
    let (status, _) = request(
        &at,
        &format!(
            "POST /api/sessions?token={token} HTTP/1.1\r\nHost: {at}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        ),
    );
    assert_eq!(status, 405, "read-only");

    // Bound to loopback only: another address of this machine does not answer.
    let addresses = String::from_utf8(
        Command::new("hostname")
            .arg("-I")
            .output()
            .map(|o| o.stdout)
            .unwrap_or_default(),
    )
    .unwrap_or_default();
    for address in addresses.split_whitespace().filter(|a| !a.contains(':')) {
        assert!(
            TcpStream::connect((address, ui.port)).is_err(),
            "{address}:{} answered",
            ui.port
        );
    }
}

/// In a real browser (headless Chromium over the DevTools protocol, driven by
/// tests/ui/drive.py with the venv's Python): the sessions appear, a session's raw lines open,
/// a session recorded while the page is open appears without a reload, and recorded markup is
/// shown as text with no script run.
#[test]
fn the_page_in_chromium_shows_sessions_lines_and_new_recordings_as_text() {
    let sb = Sandbox::new();
    // A transcript whose agent text is markup that would run if rendered as HTML.
    let attack = r#"<img src=x onerror="window.__pwned=1"><script>window.__pwned=1</script>"#;
    let mut text = std::fs::read_to_string(fixture(SAMPLES[0])).unwrap();
    text = text.replacen(
        "improve hello.py and leave a marker file",
        &attack.replace('"', "\\\\\\\""),
        1,
    );
    let xss = sb.path("xss.jsonl");
    std::fs::write(&xss, text).unwrap();
    sb.acptap(&["import", xss.to_str().unwrap()]);
    let ui = start(&sb);
    let url = format!("http://127.0.0.1:{}/?token={}", ui.port, ui.token);
    let go = sb.path("go");
    let python = std::env::var_os("ACPTAP_PHOENIX")
        .map(|p| std::path::PathBuf::from(p).with_file_name("python"))
        .unwrap_or_else(|| {
            std::path::PathBuf::from(std::env::var_os("HOME").unwrap())
                .join(".cache/acptap-ci/venv/bin/python")
        });
    let step = |name: &str, until: &str, then: &str, wait: bool| {
        let mut step = serde_json::json!({"name": name, "until": until, "then": then});
        if wait {
            step["wait_for_file"] = serde_json::json!(go.to_str().unwrap());
        }
        step.to_string()
    };
    let mut driver = Command::new(&python)
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/ui/drive.py"))
        .arg("chromium")
        .arg(&url)
        .arg(step(
            "rows",
            "document.querySelectorAll('#session-rows tr').length",
            "document.querySelector('#session-rows tr').click()",
            false,
        ))
        .arg(step(
            "lines",
            "document.querySelectorAll('#lines li').length",
            "",
            true,
        ))
        .arg(step(
            "live",
            "document.querySelectorAll('#session-rows tr').length >= 2 && document.querySelectorAll('#session-rows tr').length",
            "",
            false,
        ))
        .arg(step(
            "text",
            "[...document.querySelectorAll('#lines li')].some(li => li.textContent.includes('<img src=x onerror=')) && document.querySelectorAll('#lines img, #lines script').length === 0 && window.__pwned === undefined",
            "",
            false,
        ))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e} (bash .ci/run installs it)", python.display()));
    let mut out = BufReader::new(driver.stdout.take().unwrap());
    let mut steps = Vec::new();
    let mut line = String::new();
    while out.read_line(&mut line).unwrap() > 0 {
        let step: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
        if step["step"] == "lines" {
            // Record another session while the page is open.
            sb.acptap(&["import", fixture(SAMPLES[1]).to_str().unwrap()]);
            std::fs::write(&go, "").unwrap();
        }
        steps.push(step);
        line.clear();
    }
    let status = driver.wait().unwrap();
    let mut stderr = String::new();
    driver
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(status.success(), "the driver failed: {stderr}");
    let value = |name: &str| {
        steps
            .iter()
            .find(|s| s["step"] == name)
            .map(|s| s["value"].clone())
            .unwrap_or_default()
    };
    assert_eq!(value("rows"), 1, "{steps:?}");
    assert!(value("lines").as_u64().unwrap_or(0) > 40, "{steps:?}");
    assert_eq!(
        value("live"),
        2,
        "the new session did not appear: {steps:?}"
    );
    assert_eq!(
        value("text"),
        true,
        "markup was not shown as text: {steps:?}"
    );
}
