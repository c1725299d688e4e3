//! `acptap policy suggest` on real agents' recordings (tests/fixtures/suggest, from
//! ../shared/testbed: six agents, the client answering approve-all, approve-reads or deny-all):
//! the suggested policy's `policy replay` reproduces every allow it claims and allows nothing
//! the user refused; and on a history in which the user allowed the whole hostile corpus, the
//! suggested policy allows none of it (see policy_corpus_files.rs).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

use crate::policy_corpus_files::Scratch;
use crate::util::{Sandbox, acptap_bin, import_lines, session_opening};

/// The fixtures of one answering mode (`approve-all`, ...), imported into the sandbox.
pub fn import_mode(sb: &Sandbox, mode: &str) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/suggest");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(&format!("-{mode}.jsonl")))
        })
        .collect();
    files.sort();
    for file in &files {
        let out = sb.acptap(&["import", file.to_str().unwrap()]);
        assert!(out.status.success(), "import {}", file.display());
    }
    files.len()
}

fn suggest(sb: &Sandbox, args: &[&str]) -> Output {
    Command::new(acptap_bin())
        .args(["policy", "suggest"])
        .args(args)
        .env("ACPTAP_DB", sb.db())
        .output()
        .unwrap()
}

/// `policy suggest --json -o FILE ARGS`: the report, and the file.
fn suggest_into(sb: &Sandbox, name: &str, args: &[&str]) -> (Value, PathBuf) {
    let file = sb.path(name);
    let out = suggest(
        sb,
        &[&["--json", "-o", file.to_str().unwrap()], args].concat(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("--json");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        report["policy"].as_str().unwrap(),
        "the file is the report's policy"
    );
    (report, file)
}

/// `policy replay --json` of the file: (user allows the policy allows, refusals it allows),
/// over the requests the user answered.
fn replayed(sb: &Sandbox, file: &Path) -> (usize, usize, usize) {
    let out = sb.acptap(&[
        "policy",
        "replay",
        "--json",
        "--policy",
        file.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let by_user: Vec<&Value> = rows
        .iter()
        .filter(|r| r["decided_by"] == "client")
        .collect();
    let user_allowed = |r: &&&Value| r["user"].as_str().unwrap().starts_with("allow");
    let policy_allows = |r: &&&Value| r["policy"]["decision"] == "allow";
    (
        by_user.len(),
        by_user
            .iter()
            .filter(|r| user_allowed(r) && policy_allows(r))
            .count(),
        by_user
            .iter()
            .filter(|r| !user_allowed(r) && policy_allows(r))
            .count(),
    )
}

#[test]
fn approve_all_recordings_give_rules_that_replay_reproduces() {
    let sb = Sandbox::new();
    assert!(import_mode(&sb, "approve-all") >= 10);
    let (report, file) = suggest_into(&sb, "suggested.toml", &[]);
    let rules = report["rules"].as_array().unwrap();
    let ids: Vec<&str> = rules.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert!(
        ids.contains(&"suggested-edit-top") && ids.contains(&"suggested-ls"),
        "{ids:?}"
    );
    for rule in rules {
        let e = &rule["evidence"];
        assert!(e["allow_once"].as_u64().unwrap() >= 3, "{rule}");
        assert_eq!(e["rejected"], 0);
    }
    let coverage = &report["coverage"];
    let (answered, allowed, refusals_allowed) = replayed(&sb, &file);
    assert_eq!(answered, coverage["user_allows"].as_u64().unwrap() as usize);
    assert_eq!(allowed, coverage["allowed"].as_u64().unwrap() as usize);
    assert!(allowed > 0);
    assert_eq!(refusals_allowed, 0);
    // Every allow left over has a reason, and the counts add up.
    let left: u64 = report["left_to_user"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["count"].as_u64().unwrap())
        .sum();
    assert_eq!(
        left + coverage["allowed"].as_u64().unwrap(),
        coverage["user_allows"].as_u64().unwrap()
    );
    // The file passes its own tests, and says what each rule rests on.
    let test = sb.acptap(&["policy", "test", file.to_str().unwrap()]);
    assert!(test.status.success());
    let text = std::fs::read_to_string(&file).unwrap();
    // The suggested rules, after the one that keeps secrets asked.
    assert_eq!(text.matches("[[rule]]").count(), rules.len() + 1);
    assert!(text.contains("id = \"secrets-stay-asked\"\ndecision = \"ask\""));
    assert_eq!(text.matches("past answers:").count(), rules.len());
    assert!(text.contains("built-in guards"), "{text}");
}

#[test]
fn approve_reads_allows_only_the_reads_and_nothing_refused() {
    let sb = Sandbox::new();
    import_mode(&sb, "approve-reads");
    let (report, file) = suggest_into(&sb, "reads.toml", &["--min-evidence", "2"]);
    let rules = report["rules"].as_array().unwrap();
    assert!(!rules.is_empty(), "{report:#}");
    for rule in rules {
        assert_eq!(rule["shape"]["kind"], "read", "{rule}");
    }
    let (_, allowed, refusals_allowed) = replayed(&sb, &file);
    assert_eq!(refusals_allowed, 0);
    assert_eq!(
        allowed,
        report["coverage"]["allowed"].as_u64().unwrap() as usize
    );
    assert!(report["coverage"]["user_refusals"].as_u64().unwrap() >= 10);
}

#[test]
fn deny_all_and_mixed_answers_suggest_nothing_refused() {
    let sb = Sandbox::new();
    import_mode(&sb, "deny-all");
    let (report, _) = suggest_into(&sb, "deny.toml", &[]);
    assert_eq!(report["rules"], json!([]));
    assert_eq!(report["coverage"]["user_allows"], 0);
    // With the approve-all sessions too, the shapes answered both ways are conflicts.
    import_mode(&sb, "approve-all");
    let (report, file) = suggest_into(&sb, "mixed.toml", &["--min-evidence", "1"]);
    let conflicts = report["conflicts"].as_array().unwrap();
    assert!(
        conflicts
            .iter()
            .any(|c| c["shape"]["type"] == "files" && c["shape"]["kind"] == "edit"),
        "{conflicts:#?}"
    );
    let (_, _, refusals_allowed) = replayed(&sb, &file);
    assert_eq!(refusals_allowed, 0);
}

#[test]
fn filters_output_and_bad_values() {
    let sb = Sandbox::new();
    import_mode(&sb, "approve-all");
    let count = |args: &[&str]| {
        let out = suggest(&sb, &[&["--json"], args].concat());
        assert!(out.status.success(), "{args:?}");
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        report["coverage"]["user_allows"].as_u64().unwrap()
    };
    let all = count(&[]);
    assert!(all >= 20);
    let fast = count(&["--agent", "FAST-AGENT"]);
    assert!(fast > 0 && fast < all, "{fast} of {all}");
    assert_eq!(count(&["--agent", "no-such-agent"]), 0);
    assert_eq!(count(&["--session", "last"]) as usize, {
        let out = sb.acptap(&["show", "last", "--json"]);
        let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
        let text = shown.to_string();
        text.matches("\"decided_by\":\"client\"").count().max(1)
    });
    std::thread::sleep(std::time::Duration::from_millis(1100));
    assert_eq!(count(&["--since", "1s"]), 0);
    assert_eq!(count(&["--since", "3650d"]), all);

    // Without -o: the policy on stdout, the report on stderr.
    let out = suggest(&sb, &[]);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("# Suggested by"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("rule(s)"));

    // Never over an existing file.
    let existing = sb.path("mine.toml");
    std::fs::write(&existing, "version = 1\n# mine\n").unwrap();
    let out = suggest(&sb, &["-o", existing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("never writes over"));
    assert_eq!(
        std::fs::read_to_string(&existing).unwrap(),
        "version = 1\n# mine\n"
    );
    // Readable by its owner only.
    let written = sb.path("new.toml");
    let out = suggest(&sb, &["-o", written.to_str().unwrap()]);
    assert!(out.status.success());
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(
        std::fs::metadata(&written).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let out = suggest(&sb, &["--min-evidence", "0"]);
    assert_eq!(out.status.code(), Some(2));
    let out = suggest(&sb, &["--session", "no-such-session"]);
    assert_eq!(out.status.code(), Some(2));
}

/// A history in which the user allowed every request of the hostile corpus, three times over,
/// and the benign `cargo test` and reads of the project too: the suggested policy allows the
/// benign ones (it is not empty) and none of the corpus.
#[test]
fn allowing_the_whole_hostile_corpus_still_allows_none_of_it() {
    let scratch = Scratch::new();
    let sb = Sandbox::new();
    let corpus = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/policy/hostile.jsonl"),
    )
    .unwrap();
    let cases: Vec<Value> = corpus
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let benign = [
        json!({"toolCallId": "t", "kind": "execute", "title": "cargo test",
               "rawInput": {"command": "cargo test", "cwd": "${cwd}"}}),
        json!({"toolCallId": "t", "kind": "read", "title": "Read",
               "locations": [{"path": "${cwd}/src/main.rs"}]}),
    ];
    // One connection per (cwd, agent) of the corpus, each request asked and allowed three times.
    let mut groups: std::collections::BTreeMap<(String, String), Vec<Value>> = Default::default();
    for case in &cases {
        let cwd = case["cwd"].as_str().unwrap_or("project").to_owned();
        let agent = case["agent"].as_str().unwrap_or("").to_owned();
        groups
            .entry((cwd, agent))
            .or_default()
            .push(case["toolCall"].clone());
    }
    groups
        .entry(("project".into(), String::new()))
        .or_default()
        .extend(benign.iter().cloned());
    for ((cwd_name, agent), calls) in &groups {
        let cwd = scratch.cwd(cwd_name);
        let session = format!("s-{cwd_name}-{agent}");
        let mut lines = session_opening(cwd, &session, Some(agent));
        let mut id = 0;
        for call in calls {
            let call = scratch.substitute(call, cwd);
            for _ in 0..3 {
                id += 1;
                let mut call = call.clone();
                call["toolCallId"] = json!(format!("t{id}"));
                lines.push((
                    "a2c",
                    json!({"jsonrpc": "2.0", "id": format!("p{id}"),
                    "method": "session/request_permission",
                    "params": {"sessionId": session, "toolCall": call, "options": [
                        {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                        {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]}}),
                ));
                lines.push((
                    "c2a",
                    json!({"jsonrpc": "2.0", "id": format!("p{id}"),
                    "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}}),
                ));
            }
        }
        import_lines(&sb, &lines);
    }
    let file = sb.path("suggested.toml");
    let out = Command::new(acptap_bin())
        .args(["policy", "suggest", "--json", "-o", file.to_str().unwrap()])
        .env("ACPTAP_DB", sb.db())
        .env("HOME", &scratch.home)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        report["coverage"]["user_allows"].as_u64().unwrap() >= 3 * cases.len() as u64,
        "every request was recorded as allowed"
    );
    let policy =
        acptap::policy::Policy::load_with_home(std::slice::from_ref(&file), &scratch.home).unwrap();
    let decide = |case_cwd: &str, agent: Option<&str>, call: &Value| {
        let cwd = scratch.cwd(case_cwd);
        let call = scratch.substitute(call, cwd);
        policy.decide(
            &json!({"sessionId": "s", "toolCall": call, "options": [
                {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]}),
            None,
            acptap::policy::Context {
                cwd: Some(cwd),
                agent,
                version: None,
            },
        )
    };
    for call in &benign {
        let verdict = decide("project", None, call);
        assert_eq!(
            verdict.decision,
            acptap::policy::Decision::Allow,
            "{call}: {verdict:?}\n{}",
            std::fs::read_to_string(&file).unwrap()
        );
    }
    let mut allowed = Vec::new();
    for case in &cases {
        let verdict = decide(
            case["cwd"].as_str().unwrap_or("project"),
            case["agent"].as_str().filter(|a| !a.is_empty()),
            &case["toolCall"],
        );
        if verdict.decision == acptap::policy::Decision::Allow {
            allowed.push(format!("{}: {:?}", case["name"], verdict.rule));
        }
    }
    assert!(
        allowed.is_empty(),
        "{} hostile requests allowed:\n{}\n{}",
        allowed.len(),
        allowed.join("\n"),
        std::fs::read_to_string(&file).unwrap()
    );
}

/// A cancelled request is a refusal, and a refusal counts whatever the filters keep: `ls`
/// allowed four times in one session, `ls -la` cancelled in another, then rejected with
/// reject_always in a third by another agent; `--session`, `--agent` and `--since` narrow the
/// allows only, so no `ls` rule is ever suggested.
#[test]
fn cancellations_and_refusals_outside_the_filters_still_count() {
    let sb = Sandbox::new();
    let project = sb.path("project");
    std::fs::create_dir_all(&project).unwrap();
    let session = |agent: &str, id: &str, answers: &[(&str, Value)]| {
        let mut lines = session_opening(&project, id, Some(agent));
        for (n, (command, outcome)) in answers.iter().enumerate() {
            lines.push(("a2c", json!({"jsonrpc": "2.0", "id": format!("p{n}"),
                "method": "session/request_permission",
                "params": {"sessionId": id, "toolCall": {"toolCallId": format!("t{n}"), "kind": "execute",
                    "title": command, "rawInput": {"command": command, "cwd": project}},
                    "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                                {"optionId": "never", "name": "Never", "kind": "reject_always"}]}})));
            lines.push((
                "c2a",
                json!({"jsonrpc": "2.0", "id": format!("p{n}"), "result": {"outcome": outcome}}),
            ));
        }
        import_lines(&sb, &lines);
    };
    let allow = json!({"outcome": "selected", "optionId": "allow"});
    session(
        "agent-a",
        "allows",
        &[
            ("ls", allow.clone()),
            ("ls", allow.clone()),
            ("ls", allow.clone()),
            ("ls", allow),
        ],
    );
    session(
        "agent-a",
        "cancels",
        &[("ls -la", json!({"outcome": "cancelled"}))],
    );
    let rules = |args: &[&str]| {
        let out = suggest(&sb, &[&["--json"], args].concat());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        (
            report["rules"].as_array().unwrap().len(),
            report["coverage"].clone(),
        )
    };
    let (count, coverage) = rules(&[]);
    assert_eq!(count, 0, "{coverage}");
    assert_eq!(coverage["user_refusals"], 1);
    session(
        "agent-b",
        "rejects",
        &[(
            "ls -la",
            json!({"outcome": "selected", "optionId": "never"}),
        )],
    );
    for args in [
        &["--session", "allows"][..],
        &["--agent", "agent-a"][..],
        &["--since", "3650d"][..],
    ] {
        let (count, coverage) = rules(args);
        assert_eq!(count, 0, "{args:?}: {coverage}");
        assert_eq!(coverage["user_refusals"], 2, "{args:?}");
        assert_eq!(coverage["refusals_allowed"], 0, "{args:?}");
    }
}
