//! `acptap doctor`: a healthy setup passes every check (exit 0); each broken one exits 1 with
//! the line that names the fix; `--json` says the same verdicts.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::util::{SAMPLES, Sandbox, acptap_bin, fixture};

fn project_policy() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs/policies/project.toml")
        .to_str()
        .unwrap()
        .to_owned()
}

/// `acptap doctor ARGS` with the sandbox's database and config home (no config file unless the
/// test writes one).
fn doctor(sb: &Sandbox, db: &Path, args: &[&str]) -> Output {
    let child = Command::new(acptap_bin())
        .arg("doctor")
        .args(args)
        .env("ACPTAP_DB", db)
        .env("XDG_CONFIG_HOME", sb.dir.path())
        .env("HOME", sb.path("home"))
        .env_remove("ACPTAP_CONFIG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run acptap doctor");
    // Bounded: a check that waited (on a pipe where a file should be) would hang the test.
    crate::util::finish(child, std::time::Duration::from_secs(20))
}

/// Writes `text` to `path`, making its directory.
fn write_file(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// The line of the check named `name`.
fn line<'a>(text: &'a str, name: &str) -> &'a str {
    text.lines()
        .find(|l| l[4..].trim_start().starts_with(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no `{name}` line in:\n{text}"))
}

/// Exit 1, the check `name` failed with `fix` in its line, and `--json` (run again) agrees on
/// every verdict.
fn assert_fails(sb: &Sandbox, db: &Path, args: &[&str], name: &str, fix: &str) {
    let out = doctor(sb, db, args);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{args:?}:\n{text}");
    let failed = line(&text, name);
    assert!(failed.starts_with("FAIL"), "{failed}");
    assert!(failed.contains(fix), "`{fix}` not in: {failed}");
    assert_json_agrees(sb, db, args, &text);
}

fn assert_json_agrees(sb: &Sandbox, db: &Path, args: &[&str], text: &str) {
    let out = doctor(sb, db, &[&["--json"], args].concat());
    let json: Value = serde_json::from_slice(&out.stdout).expect("doctor --json is JSON");
    let checks = json["checks"].as_array().unwrap();
    let text_lines: Vec<&str> = text.lines().filter(|l| l.contains(": ")).collect();
    assert_eq!(checks.len(), text_lines.len(), "{json:#}\n{text}");
    for (check, text_line) in checks.iter().zip(text_lines) {
        let ok = check["ok"].as_bool().unwrap();
        assert_eq!(text_line.starts_with("ok "), ok, "{check} vs {text_line}");
        assert!(
            text_line.contains(check["name"].as_str().unwrap()),
            "{check} vs {text_line}"
        );
        assert_eq!(check["fix"].is_null(), ok, "{check}");
    }
    let all = checks.iter().all(|c| c["ok"] == true);
    assert_eq!(json["ok"], all);
    assert_eq!(out.status.code(), Some(if all { 0 } else { 1 }));
}

/// An imported database, a valid policy, `sh` as the agent.
fn healthy() -> Sandbox {
    let sb = Sandbox::new();
    sb.acptap(&["import", fixture(SAMPLES[0]).to_str().unwrap()]);
    sb
}

#[test]
fn a_healthy_setup_is_all_ok() {
    let sb = healthy();
    let policy = project_policy();
    let args = ["--policy", policy.as_str(), "--", "sh", "-c", "true"];
    let out = doctor(&sb, &sb.db(), &args);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    for name in [
        "config",
        "database directory",
        "database",
        "sqlite",
        "schema",
        "agent sh",
        "ui port",
    ] {
        assert!(line(&text, name).starts_with("ok "), "{name}:\n{text}");
    }
    assert!(line(&text, &format!("policy {policy}")).starts_with("ok "));
    assert!(!text.contains("FAIL"), "{text}");
    assert_json_agrees(&sb, &sb.db(), &args, &text);
}

#[test]
fn a_database_that_is_not_made_yet_is_ok() {
    let sb = Sandbox::new();
    let out = doctor(&sb, &sb.path("later/acptap.db"), &[]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(line(&text, "database").contains("recorded on first `acptap run`"));
}

#[test]
fn a_database_directory_that_cannot_be_written() {
    // A regular file where the directory should be: no user, root included, can write into it.
    let sb = Sandbox::new();
    std::fs::write(sb.path("blocker"), "not a directory").unwrap();
    let db = sb.path("blocker/acptap.db");
    assert_fails(&sb, &db, &[], "database directory", "a path in a directory");
}

#[test]
fn a_config_file_that_is_not_toml() {
    let sb = healthy();
    let dir = sb.path("acptap");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), "db = \"x\"\nthis is not toml\n").unwrap();
    assert_fails(&sb, &sb.db(), &[], "config", "config.toml line 2");
    // The other checks ran, with the defaults.
    let text = stdout(&doctor(&sb, &sb.db(), &[]));
    assert!(line(&text, "schema").starts_with("ok "), "{text}");
    // Named by --config, likewise.
    let config = sb.path("broken.toml");
    std::fs::write(&config, "[redact\n").unwrap();
    assert_fails(
        &sb,
        &sb.db(),
        &["--config", config.to_str().unwrap()],
        "config",
        "broken.toml line 1",
    );
}

#[test]
fn a_policy_with_a_syntax_error() {
    let sb = healthy();
    let policy = sb.path("bad.toml");
    std::fs::write(&policy, "[[rule]]\nname = \"x\"\n= oops\n").unwrap();
    let policy = policy.to_str().unwrap();
    assert_fails(
        &sb,
        &sb.db(),
        &["--policy", policy],
        &format!("policy {policy}"),
        &format!("edit {policy} line 3"),
    );
}

#[test]
fn a_missing_agent_command() {
    let sb = healthy();
    assert_fails(
        &sb,
        &sb.db(),
        &["--", "acptap-no-such-agent-xyz", "--acp"],
        "agent acptap-no-such-agent-xyz",
        "add its directory to PATH",
    );
    assert_fails(
        &sb,
        &sb.db(),
        &["--agent", "/nonexistent/agent"],
        "agent /nonexistent/agent",
        "give the agent's real path",
    );
}

#[test]
fn a_database_from_a_newer_acptap() {
    let sb = healthy();
    sb.conn()
        .execute_batch("PRAGMA user_version = 99;")
        .unwrap();
    assert_fails(&sb, &sb.db(), &[], "schema", "update acptap");
}

#[test]
fn a_database_from_an_older_acptap() {
    let sb = healthy();
    sb.conn().execute_batch("PRAGMA user_version = 1;").unwrap();
    assert_fails(&sb, &sb.db(), &[], "schema", "run `acptap migrate`");
}

#[test]
fn a_port_in_use() {
    let sb = healthy();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    assert_fails(
        &sb,
        &sb.db(),
        &["--port", &port],
        "ui port",
        "another --port",
    );
}

/// The agents of the editor configurations doctor knows, each read as its editor reads it: one
/// recorded through acptap (ok, with its label), one not and one Zed fetches itself (ok, saying
/// how to record them), acptap's arguments
/// mistyped, a missing agent behind `--`, a file that is not JSON; each failure names its file.
#[test]
fn editor_configs_agents() {
    let sb = Sandbox::new();
    let db = sb.db();
    let home = sb.path("home");
    let acptap = acptap_bin();
    let acptap = acptap.to_str().unwrap();
    // Zed's settings hold comments and trailing commas.
    write_file(
        &sb.path("zed/settings.json"),
        &format!(
            r#"{{
  // agents
  "agent_servers": {{
    "Recorded": {{ "type": "custom", "command": "{acptap}",
                  "args": ["run", "--label", "zed", "--", "sh", "-c", "cat"], }},
    "Plain": {{ "type": "custom", "command": "sh", "args": [] }},
    "gemini": {{ "type": "registry" }}, /* Zed fetches it */
  }},
}}"#
        ),
    );
    write_file(
        &home.join(".jetbrains/acp.json"),
        &format!(
            r#"{{"agent_servers": {{"Typo": {{"command": "{acptap}", "args": ["run", "--lable", "jb", "--", "sh"]}}}}}}"#
        ),
    );
    write_file(
        &home.join(".acpx/config.json"),
        &format!(
            r#"{{"agents": {{"gone": {{"argv": ["{acptap}", "run", "--", "acptap-no-such-agent-xyz"]}}}}}}"#
        ),
    );
    write_file(&sb.path("Code/User/settings.json"), "{ \"acp.agents\": ");

    let out = doctor(&sb, &db, &[]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let recorded = line(&text, "zed agent \"Recorded\"");
    assert!(
        recorded.starts_with("ok")
            && recorded.contains("label \"zed\"")
            && recorded.contains("/sh"),
        "{recorded}"
    );
    let plain = line(&text, "zed agent \"Plain\"");
    assert!(
        plain.starts_with("ok") && plain.contains("not recorded: put `acptap run --label zed --`"),
        "{plain}"
    );
    let registry = line(&text, "zed agent \"gemini\"");
    assert!(
        registry.starts_with("ok") && registry.contains("a Zed registry agent"),
        "{registry}"
    );
    let typo = line(&text, "jetbrains agent \"Typo\"");
    assert!(
        typo.starts_with("FAIL")
            && typo.contains("--lable")
            && typo.contains(".jetbrains/acp.json"),
        "{typo}"
    );
    let gone = line(&text, "acpx agent \"gone\"");
    assert!(
        gone.starts_with("FAIL")
            && gone.contains("the agent behind acptap")
            && gone.contains("acptap-no-such-agent-xyz")
            && gone.contains(".acpx/config.json)"),
        "{gone}"
    );
    let vscode = line(&text, "vscode config");
    assert!(
        vscode.starts_with("FAIL") && vscode.contains("Code/User/settings.json: not JSON"),
        "{vscode}"
    );
    assert_json_agrees(&sb, &db, &[], &text);
}

/// Editor configurations that would not start or record the agent, each a FAIL naming the file:
/// a pipe where the file should be (never waited on), comments in acpx's strict JSON, a policy
/// acptap cannot load, a custom Zed agent without a command, arguments that are not strings,
/// agents that are not an object, arguments that only ask for help, a directory as the
/// command; and the entry's own `PATH` is where its agent is looked for.
#[test]
fn editor_configs_that_would_not_start() {
    let sb = Sandbox::new();
    let db = sb.db();
    let home = sb.path("home");
    let acptap = acptap_bin();
    let acptap = acptap.to_str().unwrap();
    let bin = sb.path("own-bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::copy("/bin/sh", bin.join("only-here-agent")).unwrap();
    write_file(
        &sb.path("zed/settings.json"),
        &format!(
            r#"{{"agent_servers": {{
  "no-command": {{"type": "custom"}},
  "bad-args": {{"type": "custom", "command": "sh", "args": [1, null]}},
  "missing-policy": {{"type": "custom", "command": "{acptap}",
                      "args": ["run", "--policy", "/nonexistent/p.toml", "--", "sh"]}},
  "help": {{"type": "custom", "command": "{acptap}", "args": ["run", "--help"]}},
  "nothing-after": {{"type": "custom", "command": "{acptap}", "args": ["run", "--label", "x", "--"]}},
  "a-directory": {{"type": "custom", "command": "/tmp"}},
  "own-path": {{"type": "custom", "command": "{acptap}", "args": ["run", "--", "only-here-agent"],
               "env": {{"PATH": "{}"}}}}
}}}}"#,
            bin.display()
        ),
    );
    write_file(
        &home.join(".acpx/config.json"),
        "// a comment\n{\"agents\": {\"x\": {\"argv\": [\"sh\"]}}}",
    );
    write_file(
        &home.join(".jetbrains/acp.json"),
        r#"{"agent_servers": ["sh"]}"#,
    );
    let vscode = sb.path("Code/User/settings.json");
    std::fs::create_dir_all(vscode.parent().unwrap()).unwrap();
    let made = Command::new("mkfifo").arg(&vscode).status().unwrap();
    assert!(made.success());

    let out = doctor(&sb, &db, &[]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let fails = |name: &str, words: &[&str]| {
        let l = line(&text, name);
        assert!(l.starts_with("FAIL"), "{l}");
        for w in words {
            assert!(l.contains(w), "`{w}` not in: {l}");
        }
    };
    fails(
        "vscode config",
        &["Code/User/settings.json", "regular file"],
    );
    fails("acpx config", &[".acpx/config.json", "strict JSON"]);
    fails("jetbrains config", &["not an object of agents"]);
    fails(
        "zed agent \"no-command\"",
        &["no `command`", "zed/settings.json"],
    );
    fails(
        "zed agent \"bad-args\"",
        &["`args` is not a list of strings"],
    );
    fails(
        "zed agent \"missing-policy\"",
        &["its --policy", "/nonexistent/p.toml", "zed/settings.json"],
    );
    fails("zed agent \"help\"", &["start no agent"]);
    fails(
        "zed agent \"nothing-after\"",
        &[
            "do not parse",
            "required arguments were not provided",
            "<AGENT>",
        ],
    );
    fails("zed agent \"a-directory\"", &["/tmp is a directory"]);
    let own = line(&text, "zed agent \"own-path\"");
    assert!(
        own.starts_with("ok") && own.contains("own-bin/only-here-agent"),
        "{own}"
    );
}
