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
