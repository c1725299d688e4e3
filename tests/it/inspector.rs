//! The inspector's views (issue 32) in headless Chromium, on real agents' recordings (Claude
//! Code and Codex through acpx, recorded with ../shared/testbed: tests/fixtures/*-acpx-*.jsonl):
//! the waterfall against the database, a click on a span selecting its row, the latency table
//! against `acptap stats --by-method --json`, the session info against the recorded
//! `initialize`, a protocol violation's finding on its rows, and the diff against
//! `acptap diff --json`.
//!
//! With `ACPTAP_UI_SCREENSHOTS=DIR` set, each test saves its view's screenshot there: the ones
//! in docs/img/ are made so (`ACPTAP_UI_SCREENSHOTS=docs/img scripts/test.sh inspector::`).

use std::collections::BTreeMap;

use rusqlite::params;
use serde_json::{Value, json};

use crate::ui::{Ui, console, drive, loaded, start, step, value};
use crate::util::{Sandbox, fixture};

const CLAUDE: &str = "claude-acpx-basic-approve-all.jsonl";
const CODEX: &str = "codex-acpx-basic-approve-all.jsonl";

/// Imports a fixture; its connection and session.
fn import(sb: &Sandbox, name: &str) -> (i64, String) {
    let out = sb.acptap(&["import", fixture(name).to_str().unwrap()]);
    let text = String::from_utf8(out.stdout).unwrap() + &String::from_utf8(out.stderr).unwrap();
    let connection = text
        .split("as connection ")
        .nth(1)
        .and_then(|t| t.split(';').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{text}"));
    let session = text
        .split("sessions: ")
        .nth(1)
        .map(|t| t.trim().to_owned())
        .unwrap_or_else(|| panic!("{text}"));
    (connection, session)
}

fn url(ui: &Ui, connection: i64, session: &str, tab: &str) -> String {
    format!(
        "http://127.0.0.1:{}/?token={}#/s/{connection}/{session}/{tab}",
        ui.port, ui.token
    )
}

/// `step` that also saves a screenshot named `name` when ACPTAP_UI_SCREENSHOTS says where.
fn shot(mut step: Value, name: &str) -> Value {
    if let Some(dir) = std::env::var_os("ACPTAP_UI_SCREENSHOTS") {
        let dir = std::path::PathBuf::from(dir);
        std::fs::create_dir_all(&dir).unwrap();
        step["screenshot"] = json!(dir.join(name).to_str().unwrap());
    }
    step
}

fn json_of(output: std::process::Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// The spans the turn's chart shows, with their bars' recorded times, in JavaScript.
const SPANS: &str = "[...document.querySelectorAll('#detail .wf-span:not(.wf-head)')].map(r => {
    const bar = r.querySelector('rect');
    return {lane: r.dataset.lane, start: Number(r.dataset.start), end: r.dataset.end === '' ? null : Number(r.dataset.end),
            label: r.querySelector('.wf-label').textContent, state: r.querySelector('.wf-state').textContent,
            bar_start: Number(bar.dataset.startUs), bar_end: bar.dataset.endUs === undefined ? null : Number(bar.dataset.endUs),
            bar_class: bar.getAttribute('class')};
})";

/// The waterfall of a real Claude Code session: every tool call and permission request at its
/// recorded times, the model's stretches where nothing else was open; a click on a span opens
/// its row in its list.
#[test]
fn the_waterfall_shows_each_tool_call_and_permission_as_recorded_and_a_click_selects_its_row() {
    let sb = Sandbox::new();
    let (connection, session) = import(&sb, CLAUDE);
    let ui = start(&sb);
    let selected = "document.querySelector('#list .row.selected')";
    let steps = vec![
        step(
            "rows",
            &format!(
                "{} && {}",
                loaded("waterfall"),
                "document.querySelectorAll('#list .wf-row rect').length"
            ),
            "document.querySelector('#list .row').click()",
        ),
        shot(
            step(
                "spans",
                &format!("document.querySelector('#detail .wf-span:not(.wf-head)') && {SPANS}"),
                "[...document.querySelectorAll('#detail .wf-span.lane-permission')][1].click()",
            ),
            "ui-waterfall.png",
        ),
        step(
            "permission selected",
            &format!(
                "{} && {selected} && {{index: {selected}.dataset.index, text: {selected}.querySelector('.c-text').textContent}}",
                loaded("permissions")
            ),
            "location.hash = location.hash.replace(/permissions$/, 'waterfall')",
        ),
        step(
            "again",
            &format!(
                "{} && document.querySelector('#list .wf-row')",
                loaded("waterfall")
            ),
            "document.querySelector('#list .row').click()",
        ),
        step(
            "tool spans",
            "document.querySelectorAll('#detail .wf-span.lane-tool_call').length",
            "[...document.querySelectorAll('#detail .wf-span.lane-tool_call')][2].click()",
        ),
        step(
            "tool selected",
            &format!(
                "{} && {selected} && document.querySelector('#detail .tool-call strong') && \
                 {{index: {selected}.dataset.index, title: document.querySelector('#detail .tool-call strong').textContent}}",
                loaded("tools")
            ),
            "",
        ),
    ];
    let steps = drive(
        &sb,
        &url(&ui, connection, &session, "waterfall"),
        steps,
        |_| {},
    );
    let spans = value(&steps, "spans");
    let spans = spans.as_array().unwrap_or_else(|| panic!("{steps:?}"));

    // Each bar carries the times of its span.
    for s in spans {
        assert_eq!(s["start"], s["bar_start"], "{s}");
        assert_eq!(s["end"], s["bar_end"], "{s}");
    }
    let of_lane =
        |lane: &str| -> Vec<&Value> { spans.iter().filter(|s| s["lane"] == lane).collect() };

    let conn = sb.conn();
    let (started, ended): (i64, i64) = conn
        .query_row(
            "SELECT started_at, ended_at FROM prompt_turns WHERE connection_id = ?1",
            params![connection],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let turn = of_lane("turn");
    assert_eq!(turn.len(), 1);
    assert_eq!(
        (turn[0]["start"].as_i64(), turn[0]["end"].as_i64()),
        (Some(started), Some(ended))
    );

    // Every tool call, from its first report to its final status.
    let mut calls = conn
        .prepare("SELECT title, first_seen_at, last_updated_at, status FROM tool_calls WHERE connection_id = ?1 ORDER BY first_seen_at, id")
        .unwrap();
    let calls: Vec<(String, i64, i64, String)> = calls
        .query_map(params![connection], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(calls.len(), 4, "the fixture's tool calls");
    let drawn: Vec<(String, i64, i64, String)> = of_lane("tool_call")
        .iter()
        .map(|s| {
            (
                s["label"].as_str().unwrap().to_owned(),
                s["start"].as_i64().unwrap(),
                s["end"].as_i64().unwrap(),
                s["state"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(drawn, calls);

    // Every permission request, from asked to answered, coloured by who decided.
    let mut permissions = conn
        .prepare("SELECT requested_at, decided_at, decided_by FROM permission_requests WHERE connection_id = ?1 ORDER BY request_seq")
        .unwrap();
    let permissions: Vec<(i64, i64, String)> = permissions
        .query_map(params![connection], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(permissions.len(), 2, "the fixture's permission requests");
    let drawn: Vec<(i64, i64, String)> = of_lane("permission")
        .iter()
        .map(|s| {
            assert!(
                s["bar_class"].as_str().unwrap().contains("wf-is-user"),
                "{s}"
            );
            (
                s["start"].as_i64().unwrap(),
                s["end"].as_i64().unwrap(),
                s["state"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected: Vec<_> = permissions
        .iter()
        .map(|(a, d, by)| {
            (
                *a,
                *d,
                if by == "client" {
                    "user".to_owned()
                } else {
                    by.clone()
                },
            )
        })
        .collect();
    assert_eq!(drawn, expected);

    // The model's stretches lie in the turn and overlap nothing else.
    let model = of_lane("model");
    assert!(!model.is_empty());
    for m in &model {
        let (a, b) = (m["start"].as_i64().unwrap(), m["end"].as_i64().unwrap());
        assert!(started <= a && a < b && b <= ended, "{m}");
        for other in spans
            .iter()
            .filter(|s| !["turn", "model"].contains(&s["lane"].as_str().unwrap()))
        {
            let (x, y) = (
                other["start"].as_i64().unwrap(),
                other["end"].as_i64().unwrap_or(ended),
            );
            assert!(b <= x || y <= a, "model {m} overlaps {other}");
        }
    }

    // The second permission's click selected it in the Permissions list; the third tool call's
    // click selected it in the Tool calls list.
    let permission = value(&steps, "permission selected");
    assert_eq!(permission["index"], "1", "{steps:?}");
    assert_eq!(
        permission["text"], calls[3].0,
        "the second permission is about the last call"
    );
    let tool = value(&steps, "tool selected");
    assert_eq!(tool["index"], "2", "{steps:?}");
    assert_eq!(tool["title"], calls[2].0);
    assert_eq!(console(&steps), Vec::<String>::new(), "the page logged");
}

/// The latency table is `acptap stats SESSION --by-method --json`, to the microsecond.
#[test]
fn the_latency_table_is_what_stats_by_method_prints() {
    let sb = Sandbox::new();
    let (connection, session) = import(&sb, CLAUDE);
    let stats = json_of(sb.acptap(&["stats", &session, "--by-method", "--json"]));
    let ui = start(&sb);
    let table = |id: &str| {
        format!(
            "[...document.querySelectorAll('#{id} tbody tr')].map(tr => ({{key: tr.dataset.key, \
              cells: [...tr.querySelectorAll('td')].map(td => td.dataset.us ?? td.textContent), \
              bars: tr.querySelectorAll('svg.histogram rect').length}}))"
        )
    };
    let steps = vec![shot(
        step(
            "tables",
            &format!(
                "document.querySelector('#lat-methods') && document.querySelector('#lat-tools') && \
                 {{methods: {}, tools: {}}}",
                table("lat-methods"),
                table("lat-tools")
            ),
            "",
        ),
        "ui-latency.png",
    )];
    let steps = drive(
        &sb,
        &url(&ui, connection, &session, "latency"),
        steps,
        |_| {},
    );
    let tables = value(&steps, "tables");
    let figures = |r: &Value| -> Vec<String> {
        ["p50_us", "p99_us", "max_us", "total_us"]
            .iter()
            // A figure of nothing (null) is shown as a dash.
            .map(|k| {
                if r[k].is_null() {
                    "–".to_owned()
                } else {
                    r[k].to_string()
                }
            })
            .collect()
    };
    let methods = stats["methods"].as_array().unwrap();
    assert!(methods.len() >= 3, "{stats}");
    let shown = tables["methods"].as_array().unwrap();
    assert_eq!(shown.len(), methods.len(), "{tables}");
    for (row, m) in shown.iter().zip(methods) {
        assert_eq!(
            row["key"],
            format!(
                "{} {}",
                m["method"].as_str().unwrap(),
                m["direction"].as_str().unwrap()
            )
        );
        let cells: Vec<String> = row["cells"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            cells[2..5],
            [
                m["count"].to_string(),
                m["failed"].to_string(),
                m["unanswered"].to_string()
            ]
        );
        assert_eq!(cells[5..9], figures(m)[..], "{row} vs {m}");
        assert_eq!(row["bars"], m["histogram"].as_array().unwrap().len());
    }
    let tools = stats["tools"].as_array().unwrap();
    let shown = tables["tools"].as_array().unwrap();
    assert_eq!(shown.len(), tools.len(), "{tables}");
    for (row, t) in shown.iter().zip(tools) {
        assert_eq!(row["key"], t["kind"]);
        let cells: Vec<String> = row["cells"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            cells[1..4],
            [
                t["count"].to_string(),
                t["failed"].to_string(),
                t["unfinished"].to_string()
            ]
        );
        assert_eq!(cells[4..8], figures(t)[..], "{row} vs {t}");
    }
    assert_eq!(console(&steps), Vec::<String>::new(), "the page logged");
}

/// Leaves of a JSON object as `path = value` (the page's capability tables).
fn leaves(value: &Value, prefix: &str, out: &mut BTreeMap<String, String>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                leaves(v, &path, out);
            }
        }
        Value::String(s) => {
            out.insert(prefix.to_owned(), s.clone());
        }
        other => {
            out.insert(prefix.to_owned(), other.to_string());
        }
    }
}

/// The session info shows what each side offered in the recorded `initialize`.
#[test]
fn session_info_shows_the_recorded_capabilities_side_by_side() {
    let sb = Sandbox::new();
    let (connection, session) = import(&sb, CLAUDE);
    // What the fixture's initialize says, read here from the file.
    let text = std::fs::read_to_string(fixture(CLAUDE)).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|r| serde_json::from_str(r["text"].as_str().unwrap()).unwrap_or(Value::Null))
        .collect();
    let request = lines.iter().find(|l| l["method"] == "initialize").unwrap();
    let answer = lines
        .iter()
        .find(|l| l["id"] == request["id"] && l.get("result").is_some())
        .unwrap();
    let (mut client, mut agent) = (BTreeMap::new(), BTreeMap::new());
    leaves(&request["params"]["clientCapabilities"], "", &mut client);
    leaves(&answer["result"]["agentCapabilities"], "", &mut agent);

    let ui = start(&sb);
    let caps = |id: &str| {
        format!(
            "Object.fromEntries([...document.querySelectorAll('#{id} tr')].map(tr => [tr.dataset.path, tr.cells[1].textContent]))"
        )
    };
    let steps = vec![shot(
        step(
            "info",
            &format!(
                "document.querySelector('#caps-client') && {{client: {}, agent: {}, \
                 client_name: document.querySelector('#info-client dd').textContent, \
                 agent_name: document.querySelector('#info-agent dd').textContent, \
                 auth: [...document.querySelectorAll('#info-auth li code')].map(c => c.textContent), \
                 modes: [...document.querySelectorAll('#info-modes li code')].map(c => c.textContent), \
                 commands: [...document.querySelectorAll('#info-commands code')].map(c => c.textContent)}}",
                caps("caps-client"),
                caps("caps-agent")
            ),
            "",
        ),
        "ui-info.png",
    )];
    let steps = drive(&sb, &url(&ui, connection, &session, "info"), steps, |_| {});
    let info = value(&steps, "info");
    let shown = |side: &str| -> BTreeMap<String, String> {
        serde_json::from_value(info[side].clone()).unwrap()
    };
    assert_eq!(shown("client"), client, "{info}");
    assert_eq!(shown("agent"), agent, "{info}");
    assert!(
        client.contains_key("fs.readTextFile") && agent.contains_key("promptCapabilities.image")
    );
    let info_of = |v: &Value| {
        format!(
            "{} {}",
            v["name"].as_str().unwrap(),
            v["version"].as_str().unwrap()
        )
    };
    assert_eq!(
        info["client_name"],
        info_of(&request["params"]["clientInfo"])
    );
    let agent_info = &answer["result"]["agentInfo"];
    assert_eq!(
        info["agent_name"],
        format!(
            "{} {}",
            agent_info["title"]
                .as_str()
                .or(agent_info["name"].as_str())
                .unwrap(),
            agent_info["version"].as_str().unwrap()
        )
    );
    let auth: Vec<Value> = answer["result"]["authMethods"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        info["auth"],
        json!(auth.iter().map(|m| m["id"].clone()).collect::<Vec<_>>())
    );
    // The modes session/new answered, and the commands the agent advertised last.
    let created = lines
        .iter()
        .find(|l| l["result"]["sessionId"] == session.as_str())
        .unwrap();
    let modes: Vec<Value> = created["result"]["modes"]["availableModes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        info["modes"],
        json!(modes.iter().map(|m| m["id"].clone()).collect::<Vec<_>>())
    );
    let commands = lines
        .iter()
        .rev()
        .find(|l| l["params"]["update"]["sessionUpdate"] == "available_commands_update")
        .map(|l| {
            l["params"]["update"]["availableCommands"]
                .as_array()
                .cloned()
                .unwrap()
        })
        .unwrap_or_default();
    assert_eq!(
        info["commands"],
        json!(
            commands
                .iter()
                .map(|c| format!("/{}", c["name"].as_str().unwrap()))
                .collect::<Vec<_>>()
        )
    );
    assert_eq!(console(&steps), Vec::<String>::new(), "the page logged");
}

/// The diff view is `acptap diff --json A B`, with each method's latency on both sides.
#[test]
fn the_diff_view_is_what_acptap_diff_prints() {
    let sb = Sandbox::new();
    let (ca, a) = import(&sb, CLAUDE);
    let (cb, b) = import(&sb, CODEX);
    let diff = json_of(sb.acptap_status(&["diff", &a, &b, "--json"]));
    assert_eq!(diff["same"], false, "{diff}");
    let ui = start(&sb);
    let page = format!(
        "http://127.0.0.1:{}/?token={}#/diff/{ca}/{a}/{cb}/{b}",
        ui.port, ui.token
    );
    let steps = vec![shot(
        step(
            "diff",
            "document.querySelector('#d-differences') && {summary: document.getElementById('d-summary').textContent, \
             rows: [...document.querySelectorAll('#d-differences tbody tr')].map(tr => \
               ({turn: Number(tr.cells[0].textContent), what: tr.cells[1].textContent, \
                 a: JSON.parse(tr.cells[2].textContent), b: JSON.parse(tr.cells[3].textContent)})), \
             heads: [...document.querySelectorAll('#d-differences th')].map(th => th.textContent), \
             latency: [...document.querySelectorAll('#d-lat-methods tbody tr')].map(tr => tr.dataset.key)}",
            "",
        ),
        "ui-diff.png",
    )];
    let steps = drive(&sb, &page, steps, |_| {});
    let shown = value(&steps, "diff");
    assert_eq!(shown["rows"], diff["differences"], "{shown}");
    assert_eq!(
        shown["summary"],
        format!(
            "{} difference(s)",
            diff["differences"].as_array().unwrap().len()
        )
    );
    assert_eq!(shown["heads"][2], format!("A: {a}"));
    assert_eq!(shown["heads"][3], format!("B: {b}"));
    // Both sessions' methods are compared: every method either side asked.
    let methods = |s: &str| -> Vec<String> {
        json_of(sb.acptap(&["stats", s, "--by-method", "--json"]))["methods"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                format!(
                    "{} {}",
                    m["method"].as_str().unwrap(),
                    m["direction"].as_str().unwrap()
                )
            })
            .collect()
    };
    let mut expected: Vec<String> = methods(&a);
    for m in methods(&b) {
        if !expected.contains(&m) {
            expected.push(m);
        }
    }
    assert_eq!(shown["latency"], json!(expected));
    assert_eq!(console(&steps), Vec::<String>::new(), "the page logged");
}

/// A recording with protocol violations (a real session with an answer to a request nobody
/// sent, and an update for a tool call nobody announced): the Findings tab lists what
/// `acptap check --json` finds, the line's row and the turn's row are marked, and the line's
/// detail names the rule with its spec link.
#[test]
fn a_protocol_violation_shows_its_finding_on_its_rows() {
    let sb = Sandbox::new();
    let mut records: Vec<Value> = std::fs::read_to_string(fixture(CLAUDE))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut ghost = records[12].clone();
    let mut update: Value = serde_json::from_str(ghost["text"].as_str().unwrap()).unwrap();
    update["params"]["update"]["toolCallId"] = json!("ghost");
    ghost["text"] = json!(update.to_string());
    records[12] = ghost;
    let mut stray = records[14].clone();
    // Its id reverses the text after it (U+202E): shown as ⟨U+202E⟩, in a tooltip too.
    stray["text"] = json!("{\"jsonrpc\":\"2.0\",\"id\":\"\u{202e}999\",\"result\":{}}");
    records.insert(15, stray);
    let text: String = records
        .iter_mut()
        .enumerate()
        .map(|(i, r)| {
            r["seq"] = json!(i);
            format!("{r}\n")
        })
        .collect();
    let path = sb.path("broken.jsonl");
    std::fs::write(&path, text).unwrap();
    let out = sb.acptap(&["import", path.to_str().unwrap()]);
    let said =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    let session = said.split("sessions: ").nth(1).unwrap().trim().to_owned();
    let checked = json_of(sb.acptap_status(&["check", &session, "--json"]));
    let expected: Vec<Value> = checked["results"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let message = f["message"]
                .as_str()
                .unwrap()
                .replace('\u{202e}', "⟨U+202E⟩");
            json!([f["rule"], f["seq"], message])
        })
        .collect();
    let rules: Vec<&str> = checked["results"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    assert!(
        rules.contains(&"rpc/unknown-response") && rules.contains(&"acp/tool-call-unannounced"),
        "{checked}"
    );

    let ui = start(&sb);
    let stray_row = "#list .row[data-index='15']:not(.loading)";
    let badge = format!("{stray_row} .c-finding");
    let steps = vec![
        step(
            "findings",
            &format!(
                "{} && [...document.querySelectorAll('#list .finding-row')].map(r => [r.querySelector('.c-rule').textContent, \
                     Number(r.querySelector('.c-index').textContent.replace('line ', '')), r.querySelector('.c-text').textContent])",
                loaded("findings")
            ),
            "document.querySelector('#list .finding-row.sev-error').click()",
        ),
        shot(
            step(
                "finding detail",
                "document.querySelector('#detail .finding a') && {rule: document.querySelector('#detail .finding h3 code').textContent, \
                 spec: document.querySelector('#detail .finding a').getAttribute('href'), \
                 line: document.querySelector('#detail .line-detail')?.textContent.includes('⟨U+202E⟩999')}",
                "location.hash = location.hash.replace(/findings$/, 'lines')",
            ),
            "ui-findings.png",
        ),
        shot(
            step(
                "line row",
                &format!(
                    "{} && document.querySelector({stray_row:?}) && document.querySelector({badge:?}) && \
                     {{text: document.querySelector({badge:?}).textContent, title: document.querySelector({badge:?}).getAttribute('title')}}",
                    loaded("lines"),
                ),
                "location.hash = location.hash.replace(/lines$/, 'turns')",
            ),
            "ui-findings-lines.png",
        ),
        step(
            "turn row",
            &format!(
                "{} && document.querySelector('#list .row .c-finding')?.textContent",
                loaded("turns")
            ),
            "",
        ),
    ];
    let steps = drive(&sb, &url(&ui, 1, &session, "findings"), steps, |_| {});
    assert_eq!(value(&steps, "findings"), json!(expected), "{steps:?}");
    let detail = value(&steps, "finding detail");
    assert_eq!(detail["rule"], "rpc/unknown-response", "{steps:?}");
    assert_eq!(
        detail["spec"],
        "https://www.jsonrpc.org/specification#response_object"
    );
    assert_eq!(detail["line"], true, "{steps:?}");
    let row = value(&steps, "line row");
    assert_eq!(row["text"], "⚠ rpc/unknown-response", "{steps:?}");
    let title = row["title"].as_str().unwrap();
    assert!(
        title.contains("⟨U+202E⟩999") && !title.contains('\u{202e}'),
        "{title}"
    );
    // Both findings are in the turn: the error named, the other counted.
    assert_eq!(
        value(&steps, "turn row"),
        "⚠ rpc/unknown-response +1",
        "{steps:?}"
    );
    assert_eq!(console(&steps), Vec::<String>::new(), "the page logged");
}

/// Going from tab to tab and from one session to another: each list draws its own rows (a
/// panel empties the list), and the page logs nothing.
#[test]
fn switching_tabs_and_sessions_draws_each_lists_own_rows() {
    let sb = Sandbox::new();
    let (ca, a) = import(&sb, CLAUDE);
    let (cb, b) = import(&sb, CODEX);
    let ui = start(&sb);
    let go = |c: i64, s: &str, tab: &str| format!("location.hash = '#/s/{c}/{s}/{tab}'");
    let steps = vec![
        step(
            "a waterfall",
            &format!(
                "{} && !!document.querySelector('#list .wf-row rect')",
                loaded("waterfall")
            ),
            &go(ca, &a, "latency"),
        ),
        step(
            "a latency",
            "!!document.querySelector('#lat-methods') && document.getElementById('f-count').textContent === '' && document.querySelectorAll('#list .row').length === 0",
            &go(ca, &a, "findings"),
        ),
        step("a findings", &loaded("findings"), &go(ca, &a, "info")),
        step(
            "a info",
            "!!document.querySelector('#caps-client')",
            &go(cb, &b, "waterfall"),
        ),
        step(
            "b waterfall",
            &format!(
                "{} && !!document.querySelector('#list .wf-row rect') && document.querySelectorAll('#list .row').length",
                loaded("waterfall")
            ),
            &go(cb, &b, "turns"),
        ),
        step(
            "b turns",
            &format!(
                "{} && document.querySelectorAll('#list .turn-row').length",
                loaded("turns")
            ),
            "",
        ),
    ];
    let steps = drive(&sb, &url(&ui, ca, &a, "waterfall"), steps, |_| {});
    assert_eq!(value(&steps, "a latency"), true, "{steps:?}");
    assert_eq!(value(&steps, "b waterfall"), 1, "{steps:?}");
    assert_eq!(value(&steps, "b turns"), 1, "{steps:?}");
    assert_eq!(console(&steps), Vec::<String>::new(), "the page logged");
}
