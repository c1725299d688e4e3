//! `acptap ui` from outside: a real server process.
//!
//! - Its security model with raw HTTP requests: without the token, with a foreign Host (DNS
//!   rebinding), with a foreign Origin, with a method that could change something, from a
//!   non-loopback address: all refused. With the token: served, with the cookie and the strict
//!   headers.
//! - The page in headless Chromium, driven over the DevTools protocol by tests/ui/drive.py (the
//!   venv's Python, installed by scripts/test.sh): a recording made through `acptap run` appearing live,
//!   its tool calls, a diff, the raw-line filters; the report's XSS corpus shown as text; a
//!   60,000-turn session opened and scrolled to its end.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

use crate::util::{
    ClientPlayer, SAMPLES, Sandbox, acptap_bin, example_bin, finish, fixture,
    import_hostile_session, load_transcript,
};

pub(crate) struct Ui {
    child: Child,
    pub(crate) port: u16,
    pub(crate) token: String,
}

impl Drop for Ui {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn start(sb: &Sandbox) -> Ui {
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

    let (status, answer) = get("/api/sessions", "");
    assert_eq!(status, 401, "no token");
    assert!(
        answer.contains("content-security-policy: default-src 'none'"),
        "a refusal carries the headers too: {answer}"
    );
    let (status, _) = get("/api/sessions?token=0000", "");
    assert_eq!(status, 401, "a wrong token");

    let (status, answer) = get(&format!("/?token={token}"), "");
    assert_eq!(status, 200, "{answer}");
    // The cookie is named for this server's port: two servers do not log each other out.
    let cookie = format!("acptap_ui_{}", ui.port);
    assert!(
        answer.contains(&format!("{cookie}=")),
        "the cookie: {answer}"
    );
    assert!(answer.to_ascii_lowercase().contains("httponly"));
    assert!(answer.contains("SameSite=Strict"));
    assert!(
        answer.contains("content-security-policy: default-src 'none'"),
        "{answer}"
    );
    assert!(answer.contains("referrer-policy: no-referrer"));

    let (status, answer) = get("/api/sessions", &format!("Cookie: {cookie}={token}\r\n"));
    assert_eq!(status, 200, "{answer}");
    let (status, _) = get("/api/sessions", &format!("Cookie: acptap_ui_1={token}\r\n"));
    assert_eq!(status, 401, "another port's cookie");
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
    // Two Host headers, the second foreign; a request line naming a foreign host; a foreign
    // Origin, alone or second to ours: each refused. Our own Origin is served.
    let api = format!("/api/sessions?token={token}");
    let foreign_api = format!("http://evil.example/api/sessions?token={token}");
    let ours_then_foreign = format!(
        "Origin: http://127.0.0.1:{}\r\nOrigin: http://evil.example\r\n",
        ui.port
    );
    let ours = format!("Origin: http://localhost:{}\r\n", ui.port);
    for (path, extra, expected, what) in [
        (&api, "Host: evil.example\r\n", 400, "two Host headers"),
        (&foreign_api, "", 403, "an absolute URL naming another host"),
        (
            &api,
            ours_then_foreign.as_str(),
            403,
            "a second, foreign Origin",
        ),
        (
            &api,
            "Origin: http://evil.example\r\n",
            403,
            "a foreign Origin",
        ),
        (&api, ours.as_str(), 200, "our own Origin"),
    ] {
        let (status, _) = get(path, extra);
        assert_eq!(status, expected, "{what}");
    }
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

/// One step of the driver: wait until `until` (JavaScript) is truthy, then run `then`; with
/// `hold`, wait after it until the test says go (`Browser::go`).
pub(crate) fn step(name: &str, until: &str, then: &str) -> Value {
    json!({"name": name, "until": until, "then": then})
}

/// Runs the driver on `url` with `steps`, handing each finished step (name, value, seconds) to
/// `each` as it comes; a step with `"hold": true` waits for `each` to return. Returns the
/// steps.
pub(crate) fn drive(
    sb: &Sandbox,
    url: &str,
    steps: Vec<Value>,
    mut each: impl FnMut(&Value),
) -> Vec<Value> {
    let mut args = Vec::new();
    for (n, mut step) in steps.into_iter().enumerate() {
        if step.get("hold").is_some() {
            step["wait_for_file"] = json!(sb.path(&format!("go-{n}")).to_str().unwrap());
        }
        args.push(step.to_string());
    }
    let python = crate::tools::python();
    let mut driver = Command::new(&python)
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/ui/drive.py"))
        .arg(crate::tools::chromium())
        .arg(url)
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e} (scripts/test.sh installs it)", python.display()));
    let mut out = BufReader::new(driver.stdout.take().unwrap());
    let mut done = Vec::new();
    let mut line = String::new();
    while out.read_line(&mut line).unwrap() > 0 {
        let finished: Value = serde_json::from_str(line.trim()).unwrap();
        each(&finished);
        let n = done.len();
        std::fs::write(sb.path(&format!("go-{n}")), "").unwrap();
        done.push(finished);
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
    done
}

pub(crate) fn value(steps: &[Value], name: &str) -> Value {
    steps
        .iter()
        .find(|s| s["step"] == name)
        .map(|s| s["value"].clone())
        .unwrap_or_default()
}

/// The number of `selector` in the page, in JavaScript.
pub(crate) fn count(selector: &str) -> String {
    format!("document.querySelectorAll({selector:?}).length")
}

/// Sets a filter's value as a user would (the page listens to `input`).
pub(crate) fn set(id: &str, to: &str) -> String {
    format!(
        "(() => {{ const e = document.getElementById({id:?}); e.value = {to:?}; \
         e.dispatchEvent(new Event('input')); }})()"
    )
}

/// Chooses the `n`th option of a select as a user would.
fn set_option(id: &str, n: usize) -> String {
    format!(
        "(() => {{ const e = document.getElementById({id:?}); e.selectedIndex = {n}; \
         e.dispatchEvent(new Event('input')); }})()"
    )
}

/// The list of `tab` is shown, with every page it asked for.
pub(crate) fn loaded(tab: &str) -> String {
    format!("!!document.querySelector('#list[data-list={tab}][aria-busy=false]')")
}

/// The list of `tab` is shown, and has `n` rows.
pub(crate) fn rows_are(tab: &str, n: usize) -> String {
    format!("{} && {} === {n}", loaded(tab), count("#list .row"))
}

/// A sample recorded through `acptap run` while the page is open: the live session appears,
/// its first tool calls, then the rest as they are recorded; the edit's diff opens with the
/// recorded lines; the raw lines filter by direction and method, and by text.
#[test]
fn a_recording_appears_live_with_its_tool_calls_diff_and_filtered_lines() {
    let sb = Sandbox::new();
    sb.acptap(&["import", fixture(SAMPLES[4]).to_str().unwrap()]);
    let ui = start(&sb);
    let url = format!("http://127.0.0.1:{}/?token={}", ui.port, ui.token);
    let sample = fixture(SAMPLES[0]);
    let records = load_transcript(&sample);
    // What the edit's diff adds, as recorded.
    let edit: Value = serde_json::from_slice(&records[23].bytes).unwrap();
    let diff = &edit["params"]["update"]["content"][0];
    assert_eq!(diff["type"], "diff", "{edit}");
    let old: Vec<&str> = diff["oldText"].as_str().unwrap().lines().collect();
    let added: Vec<String> = diff["newText"]
        .as_str()
        .unwrap()
        .lines()
        .filter(|l| !old.contains(l))
        .map(str::to_owned)
        .collect();
    assert!(!added.is_empty());
    let permission_lines = records
        .iter()
        .filter(|r| {
            r.dir == "a2c"
                && String::from_utf8_lossy(&r.bytes).contains("\"session/request_permission\"")
        })
        .count();

    let peer = example_bin("peer");
    let mut proxy = sb.proxy(
        &[],
        &[
            peer.as_os_str(),
            std::ffi::OsStr::new("script"),
            sample.as_os_str(),
        ],
    );
    let mut client = Some(ClientPlayer::new(&mut proxy));
    let live_row = "#session-rows tr.state-live a";
    let steps = vec![
        json!({"name": "listed", "until": count("#session-rows tr"), "hold": true}),
        step(
            "live",
            &format!("document.querySelector({live_row:?})?.textContent"),
            &format!("document.querySelector({live_row:?}).click()"),
        ),
        step(
            "turn",
            &rows_are("turns", 1),
            "location.hash = location.hash.replace(/turns$/, 'tools')",
        ),
        json!({"name": "first tools", "until": rows_are("tools", 3), "hold": true}),
        step(
            "all tools",
            &rows_are("tools", 4),
            "[...document.querySelectorAll('#list .row')].find(r => r.querySelector('.c-kind').textContent === 'edit').click()",
        ),
        step(
            "diff",
            "[...document.querySelectorAll('#detail table.diff tr.add td.code')].map(td => td.textContent)",
            "location.hash = location.hash.replace(/tools$/, 'lines')",
        ),
        step(
            "lines",
            &format!(
                "{} && document.getElementById('f-count').textContent",
                loaded("lines")
            ),
            &format!(
                "{}; {}",
                set("f-direction", "a2c"),
                set("f-method", "session/request_permission")
            ),
        ),
        step(
            "filtered",
            &format!(
                "{} && [...document.querySelectorAll('#list .row')].every(r => r.classList.contains('dir-a2c') && r.querySelector('.c-method').textContent === 'session/request_permission') && {}",
                loaded("lines"),
                count("#list .row")
            ),
            &format!(
                "{}; {}; {}",
                set("f-direction", ""),
                set("f-method", ""),
                set("f-text", "hello.py")
            ),
        ),
        step(
            "searched",
            &format!(
                "{} && document.getElementById('f-count').textContent",
                loaded("lines")
            ),
            "",
        ),
    ];
    let steps = drive(&sb, &url, steps, |done| {
        if done["step"] == "listed" {
            // Record the sample up to its first permission request: the agent (a script) has
            // sent its first three tool calls, and waits for the answer.
            client.as_mut().unwrap().play(&records[..18]);
        } else if done["step"] == "first tools" {
            client.as_mut().unwrap().play(&records[18..]);
        }
    });
    client.take().unwrap().finish();
    assert!(
        finish(proxy, std::time::Duration::from_secs(10))
            .status
            .success()
    );

    assert_eq!(value(&steps, "listed"), 1, "{steps:?}");
    assert_eq!(
        value(&steps, "live"),
        "f2e2e388-b7af-4f86-8962-244a44037f29",
        "the live session: {steps:?}"
    );
    assert_eq!(value(&steps, "first tools"), true, "{steps:?}");
    assert_eq!(value(&steps, "all tools"), true, "{steps:?}");
    assert_eq!(value(&steps, "diff"), json!(added), "{steps:?}");
    assert_eq!(
        value(&steps, "lines"),
        format!("{} row(s)", records.len()),
        "{steps:?}"
    );
    assert_eq!(value(&steps, "filtered"), permission_lines, "{steps:?}");
    let with_name = records
        .iter()
        .filter(|r| String::from_utf8_lossy(&r.bytes).contains("hello.py"))
        .count();
    assert_eq!(
        value(&steps, "searched"),
        format!("{with_name} row(s)"),
        "{steps:?}"
    );
}

/// The console of a finished drive: nothing but what the test expects is allowed in it.
pub(crate) fn console(steps: &[Value]) -> Vec<String> {
    value(steps, "console")
        .as_array()
        .map(|a| {
            a.iter()
                .map(|v| v.as_str().unwrap_or("").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The report's XSS corpus (every recorded string is markup) through every page: each string
/// reads as text, no element is made from it, no script runs, and the page logs nothing (a CSP
/// violation would be logged: escaping alone must hold).
#[test]
fn recorded_markup_is_text_on_every_page() {
    let sb = Sandbox::new();
    // A session id that reverses the text after it (U+202E): it must not read as `exe.png`.
    crate::util::import_lines(
        &sb,
        &[
            (
                "c2a",
                r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/p","mcpServers":[]}}"#.to_owned(),
            ),
            (
                "a2c",
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"sessionId\":\"\u{202e}gnp.exe\"}}".to_owned(),
            ),
        ],
    );
    let (sid, payload) = import_hostile_session(&sb);
    let ui = start(&sb);
    let url = format!("http://127.0.0.1:{}/?token={}", ui.port, ui.token);
    let detail =
        |selector: &str| format!("document.querySelector('#detail {selector}')?.textContent");
    let steps = vec![
        step(
            "bidi",
            "[...document.querySelectorAll('#session-rows tr a')].map(a => a.textContent).find(t => t.endsWith('gnp.exe'))",
            "[...document.querySelectorAll('#session-rows tr a')].find(a => a.textContent.endsWith('gnp.exe')).click()",
        ),
        // The page header names the open session: the same ⟨U+202E⟩ there.
        step(
            "bidi header",
            "document.querySelector('#where')?.textContent.endsWith('gnp.exe') && document.querySelector('#where').textContent",
            "location.hash = '#/'",
        ),
        step(
            "listed",
            "document.querySelector('#session-rows tr a')?.textContent",
            "document.querySelector('#session-rows tr a').click()",
        ),
        step(
            "turns",
            &rows_are("turns", 1),
            "document.querySelector('#list .row').click()",
        ),
        step("prompt", &detail(".row.prompt pre"), ""),
        step(
            "agent text",
            &detail(".row.say pre"),
            "location.hash = location.hash.replace(/turns$/, 'tools')",
        ),
        step(
            "tools",
            &rows_are("tools", 1),
            "document.querySelector('#list .row').click()",
        ),
        step("tool title", &detail(".tool-call strong"), ""),
        step(
            "diff",
            "[...document.querySelectorAll('#detail table.diff td.code')].map(td => td.textContent)",
            "location.hash = location.hash.replace(/tools$/, 'permissions')",
        ),
        step(
            "permissions",
            &rows_are("permissions", 1),
            "document.querySelector('#list .row').click()",
        ),
        step(
            "option",
            &detail(".options li"),
            "location.hash = location.hash.replace(/permissions$/, 'lines')",
        ),
        step(
            "stderr",
            &format!(
                "{} && [...document.querySelectorAll('#list .row.dir-stderr .c-text')].map(e => e.textContent)[0]",
                loaded("lines")
            ),
            "location.hash = location.hash.replace(/lines$/, 'waterfall')",
        ),
        // The inspector's views (issue 32): the waterfall's labels and titles, the latency
        // table, the findings, the session info and the diff show the recorded strings as text.
        step(
            "waterfall",
            &format!(
                "{} && document.querySelector('#list .wf-row rect')",
                loaded("waterfall")
            ),
            "document.querySelector('#list .row').click()",
        ),
        step(
            "waterfall labels",
            "document.querySelector('#detail .wf-span:not(.wf-head)') && \
             [...document.querySelectorAll('#detail .wf-label, #detail .wf-state, #detail rect title, #list rect title')].map(e => e.textContent)",
            "location.hash = location.hash.replace(/waterfall$/, 'latency')",
        ),
        step(
            "latency",
            "document.querySelector('#lat-methods') && document.getElementById('panel').textContent",
            "location.hash = location.hash.replace(/latency$/, 'findings')",
        ),
        step(
            "findings",
            &format!(
                "{} && document.querySelector('#list .row') && document.getElementById('list').textContent",
                loaded("findings")
            ),
            "document.querySelector('#list .row').click()",
        ),
        step(
            "finding detail",
            "document.querySelector('#detail .finding') && document.getElementById('detail').textContent",
            "location.hash = location.hash.replace(/findings$/, 'info')",
        ),
        step(
            "info",
            "document.querySelector('#info-client') && document.getElementById('panel').textContent",
            "location.hash = '#/diff'",
        ),
        step(
            "diff choices",
            "document.querySelectorAll('#d-a option').length === 3",
            &format!("{}; {}", set_option("d-a", 1), set_option("d-b", 2)),
        ),
        step(
            "diff page",
            "document.querySelector('#d-differences') && document.getElementById('d-body').textContent",
            "",
        ),
        step("to the policy page", "true", "location.hash = '#/policy'"),
        step(
            "policy page",
            "!document.getElementById('policy-view').hidden && document.getElementById('p-text').textContent.length > 0",
            &set("p-min", "1"),
        ),
        step(
            "policy example",
            "[...document.querySelectorAll('#p-left td, #p-rules td')].map(td => td.textContent).find(t => t.includes('onerror'))",
            "",
        ),
        step(
            "clean",
            "document.querySelectorAll('img, iframe, object, embed, style').length === 0 \
             && document.querySelectorAll('svg:not(.waterfall):not(.histogram)').length === 0 \
             && document.querySelectorAll('svg *:not(rect):not(title)').length === 0 \
             && document.querySelectorAll('script').length === 1 \
             && document.documentElement.dataset.pwned === undefined \
             && document.body.dataset.pwned === undefined",
            "",
        ),
    ];
    let steps = drive(&sb, &url, steps, |_| {});
    assert_eq!(value(&steps, "bidi"), "⟨U+202E⟩gnp.exe", "{steps:?}");
    assert_eq!(
        value(&steps, "bidi header"),
        " › ⟨U+202E⟩gnp.exe",
        "{steps:?}"
    );
    assert_eq!(value(&steps, "listed"), sid, "{steps:?}");
    assert_eq!(value(&steps, "prompt"), payload, "{steps:?}");
    assert_eq!(value(&steps, "agent text"), payload, "{steps:?}");
    assert_eq!(
        value(&steps, "tool title"),
        format!("T1 {payload}"),
        "{steps:?}"
    );
    // The diff of `payload` into two lines of it: the old line kept, one added.
    assert_eq!(
        value(&steps, "diff"),
        json!([payload, payload]),
        "{steps:?}"
    );
    assert!(
        value(&steps, "option")
            .as_str()
            .is_some_and(|o| o.starts_with(&format!("N1 {payload}"))),
        "{steps:?}"
    );
    // A raw line as read, its line ending included.
    assert_eq!(value(&steps, "stderr"), format!("{payload}\n"), "{steps:?}");
    // The inspector's views: the tool call's title in the waterfall's label and its bar's title,
    // the agent's name in the info, the diff's recorded prompt, all as text.
    let labels = value(&steps, "waterfall labels");
    let labels: Vec<&str> = labels
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(
        labels.contains(&format!("T1 {payload}").as_str()),
        "{labels:?}"
    );
    assert!(
        labels
            .iter()
            .any(|l| l.contains(&format!("tool: T1 {payload}"))),
        "{labels:?}"
    );
    assert!(
        value(&steps, "latency")
            .as_str()
            .is_some_and(|t| t.contains("session/prompt")),
        "{steps:?}"
    );
    assert!(
        value(&steps, "findings")
            .as_str()
            .is_some_and(|t| !t.is_empty()),
        "{steps:?}"
    );
    assert!(
        value(&steps, "finding detail")
            .as_str()
            .is_some_and(|t| t.contains("line")),
        "{steps:?}"
    );
    assert!(
        value(&steps, "info")
            .as_str()
            .is_some_and(|t| t.contains(&payload)),
        "{steps:?}"
    );
    assert!(
        value(&steps, "diff page")
            .as_str()
            .is_some_and(|t| t.contains("<script>alert(1)</script>")),
        "{steps:?}"
    );
    // The suggested policy page shows the request's title as text too.
    assert!(
        value(&steps, "policy example")
            .as_str()
            .is_some_and(|t| t.contains(&payload)),
        "{steps:?}"
    );
    assert_eq!(
        value(&steps, "clean"),
        true,
        "an element was made or a script ran: {steps:?}"
    );
    assert_eq!(console(&steps), Vec::<String>::new(), "the page logged");
}

/// The suggested policy page, on real agents' recordings: its rules, coverage and file are
/// what `acptap policy suggest --json` says, for the evidence asked for; the download is the
/// file.
#[test]
fn the_suggested_policy_page_is_what_the_command_suggests() {
    let sb = Sandbox::new();
    crate::policy_suggest::import_mode(&sb, "approve-all");
    let cli = |min: &str| -> Value {
        let out = sb.acptap(&["policy", "suggest", "--json", "--min-evidence", min]);
        assert!(out.status.success());
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let ui = start(&sb);
    let url = format!("http://127.0.0.1:{}/?token={}#/policy", ui.port, ui.token);
    let rule_ids = "[...document.querySelectorAll('#p-rules tbody tr')].map(tr => tr.dataset.rule)";
    let steps = vec![
        step(
            "rules",
            &format!("document.querySelectorAll('#p-rules tbody tr').length > 0 && {rule_ids}"),
            "",
        ),
        step("text", "document.getElementById('p-text').textContent", ""),
        step(
            "coverage",
            "document.getElementById('p-coverage').textContent",
            "fetch(document.getElementById('p-download').href).then(r => r.text()).then(t => document.body.dataset.downloaded = t)",
        ),
        step(
            "download",
            "document.body.dataset.downloaded",
            &set("p-min", "5"),
        ),
        step(
            "rules at 5",
            &format!(
                "document.getElementById('p-download').href.includes('min_evidence=5') && {rule_ids}"
            ),
            "",
        ),
    ];
    let steps = drive(&sb, &url, steps, |_| {});
    let at_3 = cli("3");
    let ids = |report: &Value| -> Value {
        report["rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].clone())
            .collect()
    };
    assert_eq!(value(&steps, "rules"), ids(&at_3), "{steps:?}");
    assert_eq!(value(&steps, "text"), at_3["policy"], "{steps:?}");
    assert_eq!(value(&steps, "download"), at_3["policy"], "{steps:?}");
    let coverage = value(&steps, "coverage");
    assert!(
        coverage.as_str().unwrap().contains(&format!(
            "answers {} of your {} allows",
            at_3["coverage"]["allowed"], at_3["coverage"]["user_allows"]
        )),
        "{coverage}"
    );
    let at_5 = cli("5");
    assert_ne!(
        ids(&at_5),
        ids(&at_3),
        "the evidence asked for changes the rules"
    );
    assert_eq!(value(&steps, "rules at 5"), ids(&at_5), "{steps:?}");
    assert_eq!(console(&steps), Vec::<String>::new(), "the page logged");
}

/// A 60,000-turn session (360,004 lines, the read benchmark's session) opens, scrolls to its
/// last turn, shows that turn whole, and filters its raw lines (the requests for permission:
/// method and direction, as a response carries its request's method), with never more than a
/// screenful of rows in the page. How long the opening took is printed (a figure for
/// docs/performance.md, not an assertion).
#[test]
fn a_sixty_thousand_turn_session_opens_and_scrolls_to_its_end() {
    let sb = Sandbox::new();
    let transcript = sb.path("long.jsonl");
    // The read benchmark writes it (`acptap-bench session`), and prints its line count.
    let written = Command::new(env!("CARGO_BIN_EXE_acptap-bench"))
        .args(["session", "--turns", "60000", "-o"])
        .arg(&transcript)
        .output()
        .unwrap();
    assert!(
        written.status.success(),
        "{}",
        String::from_utf8_lossy(&written.stderr)
    );
    let lines: usize = String::from_utf8(written.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    sb.acptap(&["import", transcript.to_str().unwrap()]);
    let ui = start(&sb);
    let url = format!(
        "http://127.0.0.1:{}/?token={}#/s/1/bench-read-0/turns",
        ui.port, ui.token
    );
    let row = |index: usize| format!("#list .row[data-index='{index}']:not(.loading)");
    let steps = vec![
        step(
            "opened",
            &format!(
                "{} && document.getElementById('f-count').textContent",
                loaded("turns")
            ),
            "document.getElementById('list').scrollTop = 1e9",
        ),
        step(
            "end",
            &format!("document.querySelector({:?})?.textContent", row(59_999)),
            &format!("document.querySelector({:?}).click()", row(59_999)),
        ),
        step(
            "last turn",
            "document.querySelector('#detail table.diff') && document.querySelector('#detail h3').textContent",
            "",
        ),
        step(
            "rows in the page",
            &count("#list .row"),
            "location.hash = location.hash.replace(/turns$/, 'lines')",
        ),
        step(
            "lines",
            &format!(
                "{} && document.getElementById('f-count').textContent",
                loaded("lines")
            ),
            &format!(
                "{}; {}",
                set("f-method", "session/request_permission"),
                set("f-direction", "a2c")
            ),
        ),
        step(
            "permission lines",
            &format!(
                "{} && document.getElementById('f-count').textContent",
                loaded("lines")
            ),
            "location.hash = location.hash.replace(/lines$/, 'waterfall')",
        ),
        // The waterfall: its turns on the session's axis, scrolled to the last, which opens
        // with its spans.
        step(
            "waterfall",
            &format!(
                "{} && !!document.querySelector('#list .wf-row rect') && document.getElementById('f-count').textContent",
                loaded("waterfall")
            ),
            "document.getElementById('list').scrollTop = 1e9",
        ),
        step(
            "waterfall end",
            &format!(
                "document.querySelector({:?}) && document.querySelectorAll({:?}).length",
                row(59_999),
                format!("{} rect", row(59_999))
            ),
            &format!("document.querySelector({:?}).click()", row(59_999)),
        ),
        step(
            "last turn's spans",
            "document.querySelector('#detail .turn-waterfall[data-turn=\"60000\"]') && \
             [...document.querySelectorAll('#detail .wf-span:not(.wf-head)')].map(r => r.dataset.lane)",
            "",
        ),
        step("waterfall rows in the page", &count("#list .row"), ""),
    ];
    let steps = drive(&sb, &url, steps, |_| {});
    eprintln!(
        "a 60,000-turn session: opened in {} s, scrolled to its end in {} s (debug build)",
        steps[0]["seconds"], steps[1]["seconds"]
    );
    assert_eq!(value(&steps, "opened"), "60,000 row(s)", "{steps:?}");
    assert!(
        value(&steps, "end")
            .as_str()
            .is_some_and(|t| t.starts_with("#60000")),
        "{steps:?}"
    );
    assert!(
        value(&steps, "last turn")
            .as_str()
            .is_some_and(|t| t.starts_with("Turn 60000 end_turn")),
        "{steps:?}"
    );
    let in_page = value(&steps, "rows in the page").as_u64().unwrap();
    assert!(
        (1..100).contains(&in_page),
        "{in_page} rows in the page: the list is not virtualised"
    );
    assert_eq!(
        value(&steps, "lines"),
        format!("{} row(s)", group(lines)),
        "{steps:?}"
    );
    assert_eq!(
        value(&steps, "permission lines"),
        "60,000 row(s)",
        "{steps:?}"
    );
    eprintln!(
        "its waterfall: opened in {} s, scrolled to its end in {} s (debug build)",
        value_seconds(&steps, "waterfall"),
        value_seconds(&steps, "waterfall end")
    );
    assert_eq!(value(&steps, "waterfall"), "60,000 row(s)", "{steps:?}");
    assert!(
        value(&steps, "waterfall end").as_u64().unwrap() >= 2,
        "{steps:?}"
    );
    let lanes = value(&steps, "last turn's spans");
    assert_eq!(lanes[0], "turn", "{steps:?}");
    assert!(
        lanes.as_array().unwrap().contains(&json!("tool_call"))
            && lanes.as_array().unwrap().contains(&json!("permission")),
        "{steps:?}"
    );
    let in_page = value(&steps, "waterfall rows in the page")
        .as_u64()
        .unwrap();
    assert!(
        (1..100).contains(&in_page),
        "{in_page} waterfall rows in the page"
    );
    assert_eq!(console(&steps), Vec::<String>::new(), "the page logged");
}

fn value_seconds(steps: &[Value], name: &str) -> Value {
    steps
        .iter()
        .find(|s| s["step"] == name)
        .map(|s| s["seconds"].clone())
        .unwrap_or_default()
}

/// `n` with thousands separators, as the page writes it (en-US).
fn group(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The JSON endpoints and the downloads, by raw HTTP with the cookie: each download is an
/// attachment whose content is what the matching command writes; bad input (an unknown session
/// or tool call, a page too large, a malformed number, a path trick) is refused with a status,
/// never a crash, and the server still answers after it.
#[test]
fn downloads_are_the_exports_and_bad_requests_are_refused() {
    let sb = Sandbox::new();
    sb.acptap(&["import", fixture(SAMPLES[0]).to_str().unwrap()]);
    let ui = start(&sb);
    let at = format!("127.0.0.1:{}", ui.port);
    let get = |path: &str| {
        let (status, answer) = request(
            &at,
            &format!(
                "GET {path} HTTP/1.1\r\nHost: {at}\r\nCookie: acptap_ui_{}={}\r\nConnection: close\r\n\r\n",
                ui.port, ui.token
            ),
        );
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
        (status, head.to_ascii_lowercase(), body.to_owned())
    };
    let sid = "f2e2e388-b7af-4f86-8962-244a44037f29";
    let base = format!("/api/sessions/1/{sid}");
    let exported = |format: &str| {
        let out = sb.acptap(&["export", "--format", format, sid]);
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };

    let (status, head, body) = get(&format!("{base}/download/transcript.jsonl"));
    assert_eq!(status, 200, "{head}");
    assert!(
        head.contains(&format!(
            "content-disposition: attachment; filename=\"acptap-1-{sid}-transcript.jsonl\""
        )),
        "{head}"
    );
    assert_eq!(body, exported("jsonl"));
    let (_, _, body) = get(&format!("{base}/download/trace.ndjson"));
    assert_eq!(body, exported("trace"));
    let (_, head, body) = get(&format!("{base}/download/otlp.json"));
    assert!(head.contains("content-type: application/json"), "{head}");
    assert_eq!(body, exported("otlp-json"));
    // OTLP/JSON as the protocol's own types read it: every span of the session.
    let request: opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest =
        serde_json::from_str(&body).unwrap();
    let spans: Vec<_> = request
        .resource_spans
        .iter()
        .flat_map(|r| &r.scope_spans)
        .flat_map(|s| &s.spans)
        .collect();
    let summary: Value =
        serde_json::from_slice(&sb.acptap(&["show", "--json", sid]).stdout).unwrap();
    let turns = summary["turns"].as_array().unwrap().len();
    assert_eq!(
        spans
            .iter()
            .filter(|s| s.name.starts_with("invoke_agent"))
            .count(),
        turns,
        "{spans:?}"
    );
    assert_eq!(
        spans
            .iter()
            .filter(|s| s.name.starts_with("execute_tool"))
            .count(),
        4
    );
    let (status, head, body) = get(&format!("{base}/download/report.html"));
    assert_eq!(status, 200);
    assert!(head.contains("content-type: text/html"), "{head}");
    assert!(
        head.contains("attachment"),
        "a report must not open under the ui's origin"
    );
    assert!(body.starts_with("<!DOCTYPE html>"), "{}", &body[..100]);

    // The lists: pages, clamped.
    let (status, _, body) = get(&format!("{base}/lines?offset=40&limit=5"));
    assert_eq!(status, 200);
    let page: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(page["total"], 49);
    assert_eq!(page["items"].as_array().unwrap().len(), 5);
    assert_eq!(page["items"][0]["seq"], 40);
    let (_, _, body) = get(&format!("{base}/lines?offset=-7&limit=100000000"));
    let page: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (
            page["offset"].clone(),
            page["items"].as_array().unwrap().len()
        ),
        (json!(0), 49)
    );
    let (_, _, body) = get(&format!("{base}/tools/call_s1_0_sAL3IRAc"));
    let call: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        call["diffs"][0]["path"], "/home/user/project/hello.py",
        "{call}"
    );
    assert_eq!(call["permissions"].as_array().unwrap().len(), 1, "{call}");

    // The tool-call text filter looks in titles and paths, not in the JSON around them.
    let total = |path: &str| -> Value {
        let (status, _, body) = get(path);
        assert_eq!(status, 200, "{path}: {body}");
        serde_json::from_str::<Value>(&body).unwrap()["total"].clone()
    };
    assert_eq!(total(&format!("{base}/tools?q=%5B")), 0, "`[` matched JSON");
    assert_eq!(
        total(&format!("{base}/tools?q=HELLO.PY")),
        2,
        "Read and Edit hello.py"
    );
    // The filters offer what the session has.
    let (_, _, body) = get(&format!("{base}/facets"));
    let facets: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        facets["kinds"],
        json!(["edit", "execute", "read"]),
        "{facets}"
    );
    assert_eq!(facets["statuses"], json!(["completed"]), "{facets}");
    assert!(
        facets["methods"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m[0] == "session/prompt")
    );
    let (_, _, body) = get(&format!("{base}/lines/0"));
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["line_ending"],
        true
    );

    // Refused, each with a status and a reason.
    for (path, expected) in [
        ("/api/sessions/1/nope".to_owned(), 404),
        ("/api/sessions/2/".to_owned() + sid, 404),
        (format!("{base}/tools/nope"), 404),
        (format!("{base}/turns/999"), 404),
        (format!("{base}/turns/0"), 404),
        (format!("{base}/download/report.html?page=2"), 404),
        (format!("{base}/download/report.html?page=0"), 404),
        (format!("{base}/lines/999999"), 404),
        (format!("{base}/lines?limit=abc"), 400),
        (format!("{base}/turns/-1"), 400),
        ("/api/sessions/x/y".to_owned(), 400),
        (format!("{base}/download/..%2f..%2fetc%2fpasswd"), 404),
        (format!("{base}/download/report.exe"), 404),
        ("/assets/..%2f..%2fCargo.toml".to_owned(), 404),
        ("/assets/../mod.rs".to_owned(), 404),
        ("/nothing".to_owned(), 404),
    ] {
        let (status, head, body) = get(&path);
        assert_eq!(status, expected, "{path}: {head}\n{body}");
        assert!(!body.is_empty(), "{path}: a refusal says why");
    }
    let (status, _, _) = get("/api/sessions");
    assert_eq!(status, 200, "the server still answers");
}

/// Every page listening to `/api/events` waits on one look at the database; past 64 at once a
/// page is told to close some (503), and a page that goes frees its place.
/// A connection whose request headers never end (a request line cut short, or nothing at all)
/// is closed after the header read timeout (10 s; it was held open for ever), while the server
/// answers others meanwhile and after.
#[test]
fn a_connection_that_never_finishes_its_headers_is_closed() {
    let sb = Sandbox::new();
    sb.acptap(&["import", fixture(SAMPLES[0]).to_str().unwrap()]);
    let ui = start(&sb);
    let at = format!("127.0.0.1:{}", ui.port);
    let page = || {
        request(
            &at,
            &format!(
                "GET /?token={} HTTP/1.1\r\nHost: {at}\r\nConnection: close\r\n\r\n",
                ui.token
            ),
        )
        .0
    };
    let mut cut_short = TcpStream::connect(&at).unwrap();
    cut_short.write_all(b"GET /api/sessions HT").unwrap();
    let silent = TcpStream::connect(&at).unwrap();
    assert_eq!(page(), 200, "served while another connection stalls");
    // Generous: only a connection held open for ever takes this long.
    for (name, mut stream) in [("cut short", cut_short), ("silent", silent)] {
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(60)))
            .unwrap();
        let mut rest = Vec::new();
        match stream.read_to_end(&mut rest) {
            Ok(_) => {}
            Err(e) => assert!(
                e.kind() == std::io::ErrorKind::ConnectionReset,
                "{name}: still open after 60 s ({e})"
            ),
        }
    }
    assert_eq!(page(), 200, "served after");
}

#[test]
fn event_streams_are_capped_and_freed() {
    let sb = Sandbox::new();
    sb.acptap(&["import", fixture(SAMPLES[0]).to_str().unwrap()]);
    let ui = start(&sb);
    let at = format!("127.0.0.1:{}", ui.port);
    let open = || {
        let mut stream = TcpStream::connect(&at).unwrap();
        stream
            .write_all(
                format!(
                    "GET /api/events HTTP/1.1\r\nHost: {at}\r\nCookie: acptap_ui_{}={}\r\n\r\n",
                    ui.port, ui.token
                )
                .as_bytes(),
            )
            .unwrap();
        let mut reader = BufReader::new(stream);
        let mut status = String::new();
        reader.read_line(&mut status).unwrap();
        (status, reader)
    };
    let mut held = Vec::new();
    for n in 0..64 {
        let (status, reader) = open();
        assert!(status.contains(" 200 "), "stream {n}: {status}");
        held.push(reader);
    }
    let (status, _) = open();
    assert!(status.contains(" 503 "), "the 65th: {status}");
    held.truncate(10);
    assert!(
        crate::util::eventually(std::time::Duration::from_secs(10), || open()
            .0
            .contains(" 200 ")),
        "closed pages did not free their places"
    );
}
