//! The HTML report (`inspect::report::render`): rendered from imported transcripts, loaded in
//! headless Chromium (Debian's `chromium`), and checked in the DOM after its script ran: no script
//! error or console message, every tool call, status and permission decision present, filters
//! working; recorded markup shown as text and never run; diffs and long payloads rendered.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use acptap::inspect::report;
use acptap::query::Reader;
use acptap::query::resolve_session;
use serde_json::{Value, json};

use crate::util::{SAMPLES, Sandbox, fixture, import_hostile_session, import_lines, update};

/// A page loads in about a second; this only bounds a hang.
const CHROMIUM_LIMIT: Duration = Duration::from_secs(30);

/// Renders the report of the database's latest session.
fn render_last(sb: &Sandbox) -> (String, String) {
    let reader = Reader::open(&sb.db()).expect("open the database");
    let session = resolve_session(&reader, "last").expect("a session");
    let html = report::render(&reader, &session, 0..usize::MAX).expect("render the report");
    (session.session_id, html)
}

/// Writes a transcript (`(dir, line)` pairs) in the format of `tests/fixtures` and imports it.
/// The page after Chromium loaded it and ran its script.
struct Loaded {
    dom: String,
    /// Every console message (errors, CSP violations, logs): the page should write none.
    console: Vec<String>,
}

/// Loads `page` (plus a URL fragment) in headless Chromium and dumps the DOM after scripts ran.
fn load_in_chromium(page: &Path, fragment: &str) -> Loaded {
    let profile = tempfile::tempdir().unwrap();
    // Files, not pipes: the output is read once Chromium has exited.
    let stdout = profile.path().join("dom.html");
    let stderr = profile.path().join("stderr.txt");
    let mut child = Command::new(crate::tools::chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!(
            "--user-data-dir={}",
            profile.path().join("profile").display()
        ))
        .arg("--dump-dom")
        .arg(format!("file://{}{fragment}", page.display()))
        .env("HOME", profile.path())
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .expect("start chromium");
    let deadline = Instant::now() + CHROMIUM_LIMIT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            // SAFETY: kill(2) on the process group this test started.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            panic!(
                "chromium did not finish loading {} within {CHROMIUM_LIMIT:?} (a JavaScript dialog \
                 such as alert() stops --dump-dom: did recorded script run?); stderr:\n{}",
                page.display(),
                std::fs::read_to_string(&stderr).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr = std::fs::read_to_string(&stderr).unwrap();
    assert!(status.success(), "chromium failed: {status}\n{stderr}");
    Loaded {
        dom: std::fs::read_to_string(&stdout).unwrap(),
        console: stderr
            .lines()
            .filter(|l| l.contains(":CONSOLE"))
            .map(str::to_owned)
            .collect(),
    }
}

fn assert_ran_cleanly(page: &Loaded, what: &str) {
    assert!(
        page.dom.contains("data-ready=\"1\""),
        "{what}: the page's script did not finish"
    );
    assert!(
        !page.dom.contains("data-errors"),
        "{what}: script errors: {}",
        attr_value(&page.dom, "data-errors").unwrap_or_default()
    );
    assert!(
        page.console.is_empty(),
        "{what}: console messages:\n{}",
        page.console.join("\n")
    );
}

/// The first value of attribute `name` in `html`.
fn attr_value(html: &str, name: &str) -> Option<String> {
    let start = html.find(&format!(" {name}=\""))? + name.len() + 3;
    Some(html[start..start + html[start..].find('"')?].to_owned())
}

/// The opening tags of `html` that contain `needle`.
fn tags_containing<'a>(html: &'a str, needle: &str) -> Vec<&'a str> {
    html.match_indices(needle)
        .map(|(at, _)| {
            let start = html[..at].rfind('<').unwrap();
            let end = at + html[at..].find('>').unwrap();
            &html[start..=end]
        })
        .collect()
}

/// `text` as the DOM serialises a text node.
fn as_dom_text(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('\u{a0}', "&nbsp;")
}

#[test]
fn every_fixture_renders_a_report_that_runs_cleanly_and_shows_every_call_and_decision() {
    // One Chromium per sample, all at once.
    std::thread::scope(|scope| {
        for sample in SAMPLES {
            scope.spawn(move || check_fixture_report(sample));
        }
    });
}

fn check_fixture_report(sample: &str) {
    {
        let sb = Sandbox::new();
        sb.acptap(&["import", fixture(sample).to_str().unwrap()]);
        let (session, html) = render_last(&sb);
        let file = sb.path("report.html");
        std::fs::write(&file, &html).unwrap();
        let page = load_in_chromium(&file, "");
        assert_ran_cleanly(&page, sample);
        let dom = &page.dom;
        let conn = sb.conn();

        let calls: Vec<(String, String, String, Option<String>)> = conn
            .prepare(
                "SELECT tool_call_id, kind, status, title FROM tool_calls WHERE session_id = ?1",
            )
            .unwrap()
            .query_map([&session], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .unwrap()
            .map(Result::unwrap)
            .collect();
        for (id, kind, status, title) in &calls {
            let rows: Vec<&str> = tags_containing(dom, &format!("data-tool-call-id=\"{id}\""))
                .into_iter()
                .filter(|t| t.starts_with("<div class=\"row tool\""))
                .collect();
            assert_eq!(rows.len(), 1, "{sample}: tool call {id}: {rows:?}");
            assert!(
                rows[0].contains(&format!("data-kind=\"{kind}\""))
                    && rows[0].contains(&format!("data-status=\"{status}\"")),
                "{sample}: {id} should be {kind}/{status}: {}",
                rows[0]
            );
            if let Some(title) = title {
                let shown = format!("<span class=\"title\">{}</span>", as_dom_text(title));
                assert!(dom.contains(&shown), "{sample}: {shown} missing");
            }
        }
        assert_eq!(
            dom.matches("<div class=\"row tool\"").count(),
            calls.len(),
            "{sample}"
        );

        let permissions: Vec<(i64, String, String, String)> = conn
            .prepare(
                "SELECT request_seq, decided_by, option_id, options FROM permission_requests
                 WHERE session_id = ?1",
            )
            .unwrap()
            .query_map([&session], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .unwrap()
            .map(Result::unwrap)
            .collect();
        for (seq, decided_by, option_id, options) in &permissions {
            let tags = tags_containing(dom, &format!("id=\"perm-{seq}\""));
            assert_eq!(tags.len(), 1, "{sample}: permission request {seq}");
            assert!(
                tags[0].contains(&format!("data-decided-by=\"{decided_by}\""))
                    && tags[0].contains(&format!("data-option-id=\"{option_id}\"")),
                "{sample}: {}",
                tags[0]
            );
            let options: Vec<Value> = serde_json::from_str(options).unwrap();
            for option in options {
                let name = as_dom_text(option["name"].as_str().unwrap());
                let shown = format!("<span class=\"oname\">{name}</span>");
                assert!(dom.contains(&shown), "{sample}: option {shown} missing");
            }
        }
        assert_eq!(
            dom.matches("<div class=\"row perm\"").count(),
            permissions.len(),
            "{sample}"
        );

        // Every message, each response linked to its request; every turn.
        let messages = sb.count("SELECT count(*) FROM messages");
        assert_eq!(
            dom.matches("<tr class=\"row msg").count() as i64,
            messages,
            "{sample}"
        );
        let pairs: Vec<(i64, i64)> = conn
            .prepare("SELECT seq, reply_to_seq FROM messages WHERE reply_to_seq IS NOT NULL")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert!(!pairs.is_empty(), "{sample}");
        for (seq, request) in pairs {
            let row_start = dom.find(&format!("id=\"msg-{seq}\"")).unwrap();
            let row = &dom[row_start..row_start + dom[row_start..].find("</tr>").unwrap()];
            assert!(
                row.contains(&format!("href=\"#msg-{request}\">↩ #{request}</a>")),
                "{sample}: response {seq} does not link to request {request}"
            );
            assert!(dom.contains(&format!("id=\"msg-{request}\"")), "{sample}");
        }
        assert_eq!(
            dom.matches("<section class=\"turn\"").count() as i64,
            sb.count("SELECT count(*) FROM prompt_turns"),
            "{sample}"
        );
        // The script counted the rows, with every row shown.
        let rows = dom.matches("class=\"row ").count();
        assert!(
            dom.contains(&format!(">{rows} of {rows} rows shown<")),
            "{sample}: expected {rows} rows counted"
        );
    }
}

#[test]
fn filters_in_the_url_hide_the_rows_that_do_not_match() {
    let sb = Sandbox::new();
    sb.acptap(&[
        "import",
        fixture("codex-acpx-basic-deny-all.jsonl").to_str().unwrap(),
    ]);
    let (_, html) = render_last(&sb);
    let file = sb.path("report.html");
    std::fs::write(&file, &html).unwrap();
    let page = load_in_chromium(&file, "#f:status=pending&dir=c2a");
    assert_ran_cleanly(&page, "filtered");
    let dom = &page.dom;

    let tools = tags_containing(dom, "<div class=\"row tool\"");
    assert_eq!(tools.len(), 3);
    for tag in tools {
        let pending = tag.contains("data-status=\"pending\"");
        assert_eq!(tag.contains(" hidden=\"\""), !pending, "{tag}");
    }
    let messages = tags_containing(dom, "<tr class=\"row msg");
    assert!(messages.len() > 10);
    for tag in &messages {
        let c2a = tag.contains("data-dir=\"c2a\"");
        assert_eq!(tag.contains(" hidden=\"\""), !c2a, "{tag}");
    }
    // Rows the filters are not about (agent text, permissions) stay.
    for tag in tags_containing(dom, "<div class=\"row perm\"") {
        assert!(!tag.contains("hidden"), "{tag}");
    }
    let shown = dom.matches("class=\"row ").count() - dom.matches(" hidden=\"\"").count();
    let total = dom.matches("class=\"row ").count();
    assert!(shown < total);
    assert!(dom.contains(&format!(">{shown} of {total} rows shown<")));
}

/// Tag names and attributes the report may contain: anything else came from a recording.
const TAGS: &[&str] = &[
    "!doctype", "html", "head", "meta", "title", "style", "script", "body", "header", "h1", "h2",
    "h3", "dl", "dt", "dd", "nav", "label", "select", "option", "input", "button", "span", "main",
    "section", "div", "details", "summary", "pre", "code", "a", "table", "thead", "tbody", "tr",
    "th", "td", "ul", "li", "p", "svg", "rect", "text",
];
const ATTRIBUTES: &[&str] = &[
    "lang",
    "charset",
    "http-equiv",
    "content",
    "name",
    "class",
    "id",
    "title",
    "type",
    "placeholder",
    "value",
    "href",
    "open",
    // The waterfall's SVG.
    "viewbox",
    "width",
    "height",
    "x",
    "y",
    "role",
    "aria-label",
];

/// Walks every tag of the generated HTML (skipping the contents of our `<script>` and `<style>`)
/// and checks its name and attributes against the lists above.
fn assert_only_expected_markup(html: &str) {
    let mut rest = html;
    let mut scripts = 0;
    while let Some(at) = rest.find('<') {
        rest = &rest[at + 1..];
        let closing = rest.starts_with('/');
        let body = rest.trim_start_matches('/');
        let name_len = body
            .find(|c: char| c.is_whitespace() || c == '>')
            .expect("an unterminated tag");
        let name = body[..name_len].to_ascii_lowercase();
        assert!(
            TAGS.contains(&name.as_str()),
            "unexpected tag <{name}> in: {}",
            &rest[..rest.len().min(200)]
        );
        let mut attrs = &body[name_len..];
        loop {
            attrs = attrs.trim_start();
            if let Some(after) = attrs.strip_prefix('>') {
                rest = after;
                break;
            }
            let end = attrs
                .find(|c: char| c == '=' || c == '>' || c.is_whitespace())
                .expect("an unterminated attribute");
            let attr = attrs[..end].to_ascii_lowercase();
            assert!(
                name == "!doctype"
                    || ATTRIBUTES.contains(&attr.as_str())
                    || attr.starts_with("data-"),
                "unexpected attribute {attr} on <{name}>"
            );
            attrs = &attrs[end..];
            if let Some(value) = attrs.strip_prefix("=\"") {
                let close = value.find('"').expect("an unterminated value");
                let value_text = &value[..close];
                // The CSP is ours and the only value that quotes ('none', 'sha256-...').
                let quotes_allowed = name == "meta" && attr == "content";
                assert!(
                    !value_text.contains(['<', '>'])
                        && (quotes_allowed || !value_text.contains('\'')),
                    "unescaped value {attr}=\"{value_text}\""
                );
                if attr == "href" {
                    assert!(value_text.starts_with('#'), "a link out: {value_text}");
                }
                attrs = &value[close + 1..];
            }
        }
        if !closing && (name == "script" || name == "style") {
            scripts += usize::from(name == "script");
            let end = rest.find(&format!("</{name}>")).expect("a closed element");
            rest = &rest[end..];
        }
    }
    assert_eq!(scripts, 2, "only the report's own two scripts");
}

#[test]
fn recorded_markup_is_shown_as_text_and_never_runs() {
    let sb = Sandbox::new();
    let (sid, payload) = import_hostile_session(&sb);
    assert_eq!(
        sb.count("SELECT count(*) FROM tool_calls WHERE title LIKE 'T1 <script>%'"),
        1,
        "the payload should be recorded verbatim"
    );
    let (session, html) = render_last(&sb);
    assert_eq!(session, sid);

    // In the file itself: no recorded tag, every attribute one of ours.
    let lower = html.to_ascii_lowercase();
    for bad in ["<script>alert", "<img", "<script>document", "onerror=\""] {
        assert!(!lower.contains(bad), "unescaped {bad} in the report");
    }
    assert_eq!(
        lower.matches("<svg").count(),
        html.matches("<svg class=\"waterfall\" ").count() + 1,
        "the only <svg>s are the turns' waterfalls and the legend"
    );
    assert_eq!(html.matches("<svg class=\"wf-legend\" ").count(), 1);
    assert_only_expected_markup(&html);
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;&lt;img src=x"));
    // The waterfall: recorded labels, states and kinds as text, and a state in a class only
    // as the characters a class name may hold.
    let bars = waterfall_bars(&html);
    assert!(bars.len() >= 3, "the turn, the tool call, the permission");
    for bar in &bars {
        for class in &bar.classes {
            assert!(
                class.starts_with("wf-")
                    && class[3..]
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_-".contains(c)),
                "class {class:?}"
            );
        }
    }
    let escaped = payload
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;");
    let call = bars
        .iter()
        .find(|b| b.has("wf-tool_call"))
        .expect("the tool call's bar");
    assert!(
        call.title.starts_with(&format!(
            "tool · T1 {escaped} · _{escaped} · kind _{escaped} · "
        )),
        "{}",
        call.title
    );
    // `_<script>alert(1)</script>...`: what is left of the status is letters, digits, `_`, `-`.
    assert!(
        call.classes[1].starts_with("wf-is-_scriptalert1scriptimgsrcxonerroralert1"),
        "{:?}",
        call.classes
    );
    let turn = bars.iter().find(|b| b.has("wf-turn")).unwrap();
    assert!(
        turn.title
            .starts_with(&format!("turn · turn 1 · {escaped} · "))
    );
    let label: String = format!("T1 {payload}").chars().take(59).collect();
    let label = label
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;");
    assert!(
        html.contains(&format!("\">{label}…</text>")),
        "the cut label as text"
    );

    // In a browser, with the report's CSP taken out so that escaping alone must hold.
    let csp_start = html
        .find("<meta http-equiv=\"Content-Security-Policy\"")
        .expect("the report sets a CSP");
    let csp_end = csp_start + html[csp_start..].find('>').unwrap() + 1;
    // A dialog would block Chromium: the stub turns one into a mark instead.
    let dialog_stub = "<script>window.alert = window.confirm = window.prompt = () => { \
                       document.body.dataset.pwned = 'dialog'; };</script>";
    let without_csp = format!("{}{dialog_stub}{}", &html[..csp_start], &html[csp_end..]);
    let file = sb.path("report.html");
    std::fs::write(&file, &without_csp).unwrap();
    let page = load_in_chromium(&file, "");
    assert_ran_cleanly(&page, "xss");
    let dom = &page.dom;
    assert!(!dom.contains("data-pwned"), "a recorded script ran");
    assert!(!dom.contains("<img"), "a recorded element was created");
    assert_eq!(
        dom.matches("<svg").count(),
        dom.matches("<svg class=\"waterfall\" ").count() + 1,
        "a recorded <svg> was created"
    );
    assert_eq!(
        dom.matches("<rect").count(),
        dom.matches("<rect class=\"wf-bar ").count() + dom.matches("<rect class=\"wf-key ").count(),
        "a recorded <rect> was created"
    );
    assert_eq!(
        dom.matches("<script").count(),
        3,
        "the report's two and the stub"
    );
    let as_text = as_dom_text(&payload);
    assert!(
        dom.contains(&format!("<span class=\"title\">T1 {as_text}</span>")),
        "the title should read as text"
    );
    assert!(
        dom.contains(&format!("<pre class=\"code\">OUT {as_text}</pre>")),
        "the rawOutput should read as text"
    );
    assert!(dom.contains(&format!("<span class=\"oname\">N1 {as_text}</span>")));
    assert!(
        dom.contains(&format!("<pre class=\"text\">{as_text}</pre>")),
        "agent text"
    );
    assert!(
        dom.contains(&format!(
            "<title>tool · T1 {as_text} · _{as_text} · kind _{as_text} · "
        )),
        "the waterfall's title of the tool call should read as text"
    );
}

#[test]
fn diffs_show_numbered_old_and_new_lines_and_long_payloads_fold() {
    let sid = "sess-diff";
    let tail = "TAIL-MARKER-8f3a";
    let long_output = format!("{}{tail}", "0123456789abcdef\n".repeat(600)); // ~10 KiB
    let old = "fn a() {}\nline2\nline3\nline4\n";
    let new = "fn a() {}\nLINE2\nline3\nline4\nline5\n";
    let sb = Sandbox::new();
    import_lines(
        &sb,
        &[
            ("c2a", json!({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                           "params": {"cwd": "/w", "mcpServers": []}}).to_string()),
            ("a2c", json!({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": sid}}).to_string()),
            ("c2a", json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                           "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}}).to_string()),
            ("a2c", update(sid, json!({"sessionUpdate": "tool_call", "toolCallId": "e1",
                                       "title": "Edit a.rs", "kind": "edit", "status": "completed",
                                       "content": [{"type": "diff", "path": "/w/a.rs",
                                                    "oldText": old, "newText": new}],
                                       "rawOutput": long_output}))),
            ("a2c", json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}).to_string()),
        ],
    );
    let (_, html) = render_last(&sb);

    let row = |class: &str, old: &str, new: &str, sign: &str, text: &str| {
        format!(
            "<tr class=\"{class}\"><td class=\"ln\">{old}</td><td class=\"ln\">{new}</td><td \
             class=\"sign\">{sign}</td><td class=\"code\">{text}</td></tr>"
        )
    };
    for expected in [
        row("ctx", "1", "1", " ", "fn a() {}"),
        row("del", "2", "", "-", "line2"),
        row("add", "", "2", "+", "LINE2"),
        row("ctx", "3", "3", " ", "line3"),
        row("ctx", "4", "4", " ", "line4"),
        row("add", "", "5", "+", "line5"),
    ] {
        assert!(html.contains(&expected), "missing diff row {expected}");
    }
    assert_eq!(html.matches("<tr class=\"del\">").count(), 1);
    assert_eq!(html.matches("<tr class=\"add\">").count(), 2);
    assert!(html.contains("<code>/w/a.rs</code>"));

    // rawOutput: the beginning shown, the whole behind an expander.
    let start = html
        .find("<summary>rawOutput</summary>")
        .expect("a rawOutput section");
    let section = &html[start..start + html[start..].find("</div></details>").unwrap()];
    let preview_start = section
        .find("<pre class=\"code preview\">")
        .expect("a preview");
    let preview =
        &section[preview_start..preview_start + section[preview_start..].find("</pre>").unwrap()];
    assert!(!preview.contains(tail), "the preview should be cut");
    assert!(
        preview.len() > 4000 && preview.len() < 4200,
        "{}",
        preview.len()
    );
    let more = section
        .find("<details class=\"more\"><summary>show all")
        .expect("an expander");
    assert!(
        section[more..].contains(tail),
        "the whole text is behind the expander"
    );
    assert!(
        !section.contains("<details class=\"more\" open"),
        "collapsed at first"
    );
    // The recorded line itself is long too, and folds the same way.
    let messages = &html[html.find("<section id=\"messages\">").unwrap()..];
    assert!(messages.contains("<details class=\"more\">"));
}

/// A connection with more raw lines than the report shows: the first ones are there, the rest
/// are named with the command that writes them all, and the page stays small.
#[test]
fn a_long_connection_shows_its_first_lines_and_says_how_to_get_the_rest() {
    let sb = Sandbox::new();
    let mut lines: Vec<(&str, String)> = vec![
        ("c2a", r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/p","mcpServers":[]}}"#.to_owned()),
        ("a2c", r#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"long"}}"#.to_owned()),
    ];
    let extra = acptap::inspect::report::MAX_MESSAGE_ROWS + 50;
    for i in 0..extra {
        lines.push((
            "a2c",
            format!(r#"{{"jsonrpc":"2.0","method":"_x/tick","params":{{"i":{i}}}}}"#),
        ));
    }
    import_lines(&sb, &lines);
    let (_, html) = render_last(&sb);
    assert_eq!(
        html.matches("class=\"row msg").count(),
        acptap::inspect::report::MAX_MESSAGE_ROWS
    );
    assert!(
        html.contains("⋯ 52 more line(s) are not shown here"),
        "no fold"
    );
    assert!(html.contains("acptap export long"));
}

/// A session longer than a page: the report shows the first `TURNS_PER_PAGE` turns, says which,
/// and names the command for the next page; that page shows those turns' calls and decisions
/// and not the first page's, and both pages run cleanly in Chromium.
#[test]
fn a_long_session_is_paged_and_each_page_runs_cleanly() {
    let sb = Sandbox::new();
    let per_page = acptap::inspect::report::TURNS_PER_PAGE;
    let turns = per_page + per_page / 2;
    let mut lines: Vec<(&str, String)> = vec![
        ("c2a", r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/p","mcpServers":[]}}"#.to_owned()),
        ("a2c", r#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"paged"}}"#.to_owned()),
    ];
    for i in 0..turns {
        let id = 10 + i;
        lines.push(("c2a", format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"session/prompt","params":{{"sessionId":"paged","prompt":[{{"type":"text","text":"turn {i}"}}]}}}}"#)));
        lines.push(("a2c", update("paged", json!({"sessionUpdate": "tool_call", "toolCallId": format!("call-{i}"), "title": format!("Read file-{i}.rs"), "kind": "read", "status": "completed"}))));
        lines.push((
            "a2c",
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"stopReason":"end_turn"}}}}"#),
        ));
    }
    import_lines(&sb, &lines);
    let first = sb.path("first.html");
    sb.acptap(&["report", "last", "-o", first.to_str().unwrap()]);
    let html = std::fs::read_to_string(&first).unwrap();
    assert!(html.contains(&format!("This page shows turns 1–{per_page} of {turns}")));
    assert!(
        html.contains(&format!("--turns {}-{turns}", per_page + 1)),
        "no next page"
    );
    assert!(
        html.contains("Read file-0.rs") && html.contains(&format!("Read file-{}.rs", per_page - 1))
    );
    assert!(
        !html.contains(&format!("Read file-{per_page}.rs")),
        "a later turn on page 1"
    );
    // The report of the turns `range` (`acptap report last --turns RANGE`), written to `name`.
    let report = |name: &str, range: &str| {
        let file = sb.path(name);
        sb.acptap(&[
            "report",
            "last",
            "--turns",
            range,
            "-o",
            file.to_str().unwrap(),
        ]);
        (std::fs::read_to_string(&file).unwrap(), file)
    };
    let (next, second) = report("second.html", &format!("{}-", per_page + 1));
    assert!(
        next.contains(&format!("Read file-{per_page}.rs"))
            && next.contains(&format!("Read file-{}.rs", turns - 1))
    );
    assert!(
        !next.contains("Read file-0.rs"),
        "page 2 shows page 1's call"
    );
    assert!(
        next.contains(&format!("Turn {}", per_page + 1)),
        "turns keep their numbers"
    );
    assert!(
        next.contains(&format!(
            "Previous: <code>acptap report paged --turns 1-{per_page}</code>"
        )),
        "the previous page"
    );
    // A short last page asked for as a whole page: the previous page is a whole page too.
    let (short, _) = report("short.html", &format!("{}-{}", per_page + 1, 2 * per_page));
    assert!(
        short.contains(&format!(
            "Previous: <code>acptap report paged --turns 1-{per_page}</code>"
        )),
        "the previous page of a short last page"
    );
    for (page, what) in [(&first, "page 1"), (&second, "page 2")] {
        assert_ran_cleanly(&load_in_chromium(page, ""), what);
    }
}

/// One bar of a report's waterfalls.
#[derive(Debug)]
struct Bar {
    classes: Vec<String>,
    start_us: i64,
    end_us: Option<i64>,
    /// As written in the file (escaped).
    title: String,
}

impl Bar {
    fn has(&self, class: &str) -> bool {
        self.classes.iter().any(|c| c == class)
    }
}

/// The waterfalls' bars of a report, in order.
fn waterfall_bars(html: &str) -> Vec<Bar> {
    let rect = regex::Regex::new(
        r#"<rect class="wf-bar ([^"]*)" x="[0-9.]+" y="[0-9.]+" width="[0-9.]+" height="[0-9.]+" data-start-us="(-?\d+)"(?: data-end-us="(-?\d+)")?><title>([^<]*)</title></rect>"#,
    )
    .unwrap();
    let bars: Vec<Bar> = rect
        .captures_iter(html)
        .map(|c| Bar {
            classes: c[1].split(' ').map(str::to_owned).collect(),
            start_us: c[2].parse().unwrap(),
            end_us: c.get(3).map(|m| m.as_str().parse().unwrap()),
            title: c[4].to_owned(),
        })
        .collect();
    assert_eq!(
        bars.len(),
        html.matches("<rect class=\"wf-bar ").count(),
        "every bar has the expected form"
    );
    bars
}

/// Each turn of a real session has a waterfall whose bars carry the recorded times: every tool
/// call from its first report to the update that ended it (open when none did), every
/// permission request from asked to answered, with the decider's class.
#[test]
fn the_waterfall_draws_every_tool_call_and_permission_with_its_recorded_times() {
    let sb = Sandbox::new();
    sb.acptap(&[
        "import",
        fixture("claude-acpx-basic-approve-all.jsonl")
            .to_str()
            .unwrap(),
    ]);
    let file = sb.path("report.html");
    sb.acptap(&["report", "last", "-o", file.to_str().unwrap()]);
    let html = std::fs::read_to_string(&file).unwrap();
    let bars = waterfall_bars(&html);
    let conn = sb.conn();
    let session = resolve_session(&Reader::open(&sb.db()).unwrap(), "last")
        .unwrap()
        .session_id;

    let turns = sb.count("SELECT count(*) FROM prompt_turns");
    assert!(turns > 0);
    assert_eq!(
        html.matches("<svg class=\"waterfall\" ").count() as i64,
        turns
    );
    assert_eq!(
        html.matches("<svg class=\"wf-legend\" ").count(),
        1,
        "one legend"
    );
    assert_eq!(
        bars.iter().filter(|b| b.has("wf-turn")).count() as i64,
        turns
    );
    // The turn's own bar is each picture's first row.
    for svg in html.split("<svg class=\"waterfall\" ").skip(1) {
        let first = svg.find("<rect ").unwrap();
        assert!(
            svg[first..].starts_with("<rect class=\"wf-bar wf-turn "),
            "{}",
            &svg[..200]
        );
    }

    // (start, end, status): the recorded tool calls, and the bars of the tool lane.
    let mut calls: Vec<(i64, Option<i64>, String)> = conn
        .prepare(
            "SELECT first_seen_at, last_updated_at, status FROM tool_calls WHERE session_id = ?1",
        )
        .unwrap()
        .query_map([&session], |r| {
            let status: Option<String> = r.get(2)?;
            let status = status.unwrap_or_else(|| "pending".to_owned());
            let ended = status == "completed" || status == "failed";
            let end: Option<i64> = r.get(1)?;
            Ok((r.get(0)?, end.filter(|_| ended), status))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(calls.len() >= 2, "the fixture has tool calls");
    let mut tool_bars: Vec<(i64, Option<i64>, String)> = bars
        .iter()
        .filter(|b| b.has("wf-tool_call"))
        .map(|b| {
            assert_eq!(b.has("wf-open"), b.end_us.is_none(), "{b:?}");
            (
                b.start_us,
                b.end_us,
                b.classes[1].trim_start_matches("wf-is-").to_owned(),
            )
        })
        .collect();
    calls.sort();
    tool_bars.sort();
    assert_eq!(tool_bars, calls);

    // (start, end, decider class): the recorded permission requests, and their bars.
    let mut permissions: Vec<(i64, Option<i64>, String)> = conn
        .prepare(
            "SELECT requested_at, decided_at, decided_by FROM permission_requests
             WHERE session_id = ?1",
        )
        .unwrap()
        .query_map([&session], |r| {
            let by: Option<String> = r.get(2)?;
            let class = match by.as_deref() {
                Some("client") => "user".to_owned(),
                Some(other) => other.to_owned(),
                None => "waiting".to_owned(),
            };
            Ok((r.get(0)?, r.get(1)?, class))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(
        permissions.len() >= 2,
        "the fixture has permission requests"
    );
    assert!(
        permissions.iter().all(|p| p.2 == "user"),
        "the fixture's client decided: {permissions:?}"
    );
    let mut permission_bars: Vec<(i64, Option<i64>, String)> = bars
        .iter()
        .filter(|b| b.has("wf-permission"))
        .map(|b| {
            (
                b.start_us,
                b.end_us,
                b.classes[1].trim_start_matches("wf-is-").to_owned(),
            )
        })
        .collect();
    permissions.sort();
    permission_bars.sort();
    assert_eq!(permission_bars, permissions);
    assert!(
        bars.iter()
            .filter(|b| b.has("wf-permission"))
            .all(|b| b.has("wf-is-user") && b.title.starts_with("permission · "))
    );

    // Titles: lane, label, state, duration and the offset from the turn's start.
    let call = bars
        .iter()
        .find(|b| b.has("wf-tool_call") && b.end_us.is_some())
        .unwrap();
    assert!(
        call.title.starts_with("tool · ") && call.title.contains(" · from +"),
        "{}",
        call.title
    );
    // Model time: what nothing else covered, at least 1 ms, never overlapping another span.
    for model in bars.iter().filter(|b| b.has("wf-model")) {
        assert!(model.has("wf-is-thinking"));
        assert!(model.end_us.unwrap() - model.start_us >= 1_000, "{model:?}");
    }
    // The CSS styles the classes the bars use.
    let style = &html[..html.find("</style>").unwrap()];
    for class in [
        "wf-turn",
        "wf-model",
        "wf-tool_call",
        "wf-permission",
        "wf-is-user",
        "wf-is-policy",
        "wf-is-cancelled",
        "wf-is-waiting",
        "wf-request",
        "wf-is-error",
        "wf-failed",
        "wf-open",
    ] {
        assert!(style.contains(&format!(".{class}")), "no style for {class}");
    }
}
