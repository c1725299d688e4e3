//! docs/editors.md's snippets, each read the way its client reads it (JSON here; Lua in LuaJIT,
//! Emacs Lisp and shell lines by tests/editors/argv.py), must be `acptap run --label L -- AGENT`;
//! each is then run with the official SDK's agent behind the `--` against a real client (acpx
//! for acpx's, the SDK's client for the others), and the session must be recorded under its
//! label. The JSON files, put where their editors keep them, must also pass `acptap doctor`.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;

use crate::util::{Sandbox, acptap_bin, example_bin, finish};

/// Every snippet the page must hold, and the language of its block.
const SNIPPETS: [(&str, &str); 11] = [
    ("zed", "json"),
    ("jetbrains", "json"),
    ("codecompanion", "lua"),
    ("avante", "lua"),
    ("agent-shell", "elisp"),
    ("agent-shell-custom", "elisp"),
    ("acpx", "sh"),
    ("acpx-config", "json"),
    ("vscode", "json"),
    ("rust-sdk", "sh"),
    ("python-sdk", "sh"),
];

/// The `<!-- snippet: NAME -->` blocks of docs/editors.md: (name, language, text).
fn snippets() -> Vec<(String, String, String)> {
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/editors.md"))
        .expect("docs/editors.md");
    let mut found = Vec::new();
    let mut lines = page.lines();
    while let Some(line) = lines.next() {
        let Some(name) = line
            .strip_prefix("<!-- snippet: ")
            .and_then(|rest| rest.strip_suffix(" -->"))
        else {
            continue;
        };
        let fence = lines.next().unwrap_or_default();
        let language = fence
            .strip_prefix("```")
            .unwrap_or_else(|| panic!("snippet {name}: no code block right after its marker"));
        let text: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
        found.push((name.to_owned(), language.to_owned(), text.join("\n") + "\n"));
    }
    found
}

/// The one agent entry under `at` (a path of keys) of a JSON snippet, as `(name, entry)`.
fn json_entry(text: &str, at: &[&str]) -> (String, Value) {
    let document: Value = serde_json::from_str(text).expect("the snippet is JSON");
    let entries = at
        .iter()
        .try_fold(&document, |value, key| value.get(key))
        .and_then(Value::as_object)
        .unwrap_or_else(|| panic!("no object at {at:?} in {document}"));
    assert_eq!(entries.len(), 1, "one agent in {document}");
    let (name, entry) = entries.iter().next().unwrap();
    (name.clone(), entry.clone())
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {value}"))
        .iter()
        .map(|s| s.as_str().expect("a string").to_owned())
        .collect()
}

/// `command` then `args`, as Zed, JetBrains and VS Code start the agent.
fn command_and_args(entry: &Value) -> Vec<String> {
    let mut argv = vec![entry["command"].as_str().expect("a command").to_owned()];
    argv.extend(strings(&entry["args"]));
    argv
}

/// The snippet's argv, as its client would start it.
fn argv_of(sb: &Sandbox, name: &str, text: &str) -> Vec<String> {
    match name {
        "zed" => {
            let (_, entry) = json_entry(text, &["agent_servers"]);
            assert_eq!(entry["type"], "custom", "Zed needs \"type\": \"custom\"");
            command_and_args(&entry)
        }
        "jetbrains" => {
            let (_, entry) = json_entry(text, &["agent_servers"]);
            let argv = command_and_args(&entry);
            assert!(
                argv[0].starts_with('/'),
                "JetBrains starts the command without a shell: {argv:?}"
            );
            argv
        }
        "vscode" => command_and_args(&json_entry(text, &["acp.agents"]).1),
        "acpx-config" => strings(&json_entry(text, &["agents"]).1["argv"]),
        _ => {
            let file = sb.path(&format!("{name}.snippet"));
            std::fs::write(&file, text).unwrap();
            let out = Command::new(crate::tools::python())
                .arg(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/tests/editors/argv.py"
                ))
                .arg(name)
                .arg(&file)
                .output()
                .expect("run tests/editors/argv.py");
            assert!(
                out.status.success(),
                "argv.py {name}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            serde_json::from_slice(&out.stdout).expect("argv.py prints a JSON list")
        }
    }
}

/// What a snippet's argv must be: `acptap run [OPTIONS] --label L [OPTIONS] -- AGENT...`.
/// Returns acptap's arguments up to and with the `--`, and the label.
fn acptap_part(name: &str, argv: &[String]) -> (Vec<String>, String) {
    assert_eq!(
        Path::new(&argv[0]).file_name().and_then(|f| f.to_str()),
        Some("acptap"),
        "{name}: {argv:?}"
    );
    assert_eq!(argv[1], "run", "{name}: {argv:?}");
    let dashes = argv
        .iter()
        .position(|a| a == "--")
        .unwrap_or_else(|| panic!("{name}: no `--` in {argv:?}"));
    assert!(dashes + 1 < argv.len(), "{name}: no agent after `--`");
    let label = argv[..dashes]
        .iter()
        .position(|a| a == "--label")
        .map(|i| argv[i + 1].clone())
        .unwrap_or_else(|| panic!("{name}: no --label in {argv:?}"));
    (argv[1..=dashes].to_vec(), label)
}

/// Runs the snippet's acptap line, the SDK agent behind it, with a real client; the database
/// is `ACPTAP_DB`, as a user's default would be.
fn run_through_acptap(sb: &Sandbox, name: &str, acptap_args: &[String]) -> Output {
    let agent = example_bin("sdk_agent");
    if name.starts_with("acpx") {
        return run_acpx(sb, name, acptap_args, &agent);
    }
    let client = Command::new(example_bin("sdk_client"))
        .arg("--")
        .arg(acptap_bin())
        .args(acptap_args)
        .arg(&agent)
        .env("ACPTAP_DB", sb.db())
        .current_dir(sb.dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start the SDK client");
    finish(client, Duration::from_secs(60))
}

/// acpx, given the line as `--agent` (acpx) or as a named agent in `~/.acpx/config.json`.
fn run_acpx(sb: &Sandbox, name: &str, acptap_args: &[String], agent: &Path) -> Output {
    let home = sb.path("home");
    let project = sb.path("project");
    std::fs::create_dir_all(&project).unwrap();
    let mut command = crate::tools::acpx_in(&project);
    let mut argv = vec![acptap_bin().to_str().unwrap().to_owned()];
    argv.extend(acptap_args.iter().cloned());
    argv.push(agent.to_str().unwrap().to_owned());
    if name == "acpx" {
        let quoted: Vec<String> = argv.iter().map(|w| format!("'{w}'")).collect();
        command.args(["--agent", &quoted.join(" ")]);
    } else {
        let config = home.join(".acpx/config.json");
        std::fs::create_dir_all(config.parent().unwrap()).unwrap();
        let entry = serde_json::json!({"agents": {"recorded": {"argv": argv}}});
        std::fs::write(&config, entry.to_string()).unwrap();
        command.arg("recorded");
    }
    let child = command
        .args(["exec", "hi"])
        .env("HOME", &home)
        .env("ACPTAP_DB", sb.db())
        .spawn()
        .expect("start acpx");
    finish(child, Duration::from_secs(90))
}

/// A JSON snippet put where its editor keeps it (the agent swapped for the SDK agent, acptap
/// for the built one): `acptap doctor` finds the agent and says it is recorded, with the label.
fn doctor_reads(sb: &Sandbox, name: &str, text: &str, label: &str) {
    let home = sb.path(&format!("doctor-{name}"));
    let file = match name {
        "zed" => home.join(".config/zed/settings.json"),
        "jetbrains" => home.join(".jetbrains/acp.json"),
        "vscode" => home.join(".config/Code/User/settings.json"),
        "acpx-config" => home.join(".acpx/config.json"),
        _ => return,
    };
    let mut document: Value = serde_json::from_str(text).unwrap();
    let swap = |argv: &mut Value| {
        let list = argv.as_array_mut().unwrap();
        let dashes = list.iter().position(|a| a == "--").unwrap();
        list.truncate(dashes + 1);
        list.push(example_bin("sdk_agent").to_str().unwrap().into());
    };
    let entries = document
        .as_object_mut()
        .unwrap()
        .values_mut()
        .filter_map(Value::as_object_mut)
        .flat_map(|agents| agents.values_mut());
    for entry in entries {
        if let Some(argv) = entry.get_mut("argv") {
            argv[0] = acptap_bin().to_str().unwrap().into();
            swap(argv);
        } else {
            entry["command"] = acptap_bin().to_str().unwrap().into();
            swap(&mut entry["args"]);
        }
    }
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, document.to_string()).unwrap();
    let out = Command::new(acptap_bin())
        .args(["doctor", "--json"])
        .env("HOME", &home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("ACPTAP_CONFIG")
        .env("ACPTAP_DB", sb.db())
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).expect("doctor --json");
    let editor = name.trim_end_matches("-config");
    let check = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| {
            c["name"]
                .as_str()
                .is_some_and(|n| n.starts_with(&format!("{editor} agent ")))
        })
        .unwrap_or_else(|| {
            panic!(
                "{name}: doctor found no agent in {}: {report:#}",
                file.display()
            )
        });
    assert_eq!(check["ok"], true, "{name}: {check}");
    assert!(
        check["detail"]
            .as_str()
            .unwrap()
            .contains(&format!("label {label:?}")),
        "{name}: {check}"
    );
}

fn labels_recorded(sb: &Sandbox) -> Vec<String> {
    let out = sb.acptap(&["sessions", "--json"]);
    let sessions: Value = serde_json::from_slice(&out.stdout).expect("sessions --json");
    sessions
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["label"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn every_snippet_routes_its_agent_through_acptap_and_is_recorded() {
    let found = snippets();
    let names: Vec<(&str, &str)> = found
        .iter()
        .map(|(n, l, _)| (n.as_str(), l.as_str()))
        .collect();
    assert_eq!(names, SNIPPETS, "docs/editors.md's snippets");
    let sb = Sandbox::new();
    for (name, _, text) in &found {
        let argv = argv_of(&sb, name, text);
        let (acptap_args, label) = acptap_part(name, &argv);
        let before = labels_recorded_or_none(&sb);
        let out = run_through_acptap(&sb, name, &acptap_args);
        assert!(
            out.status.success(),
            "{name}: the client failed: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let after = labels_recorded(&sb);
        assert_eq!(
            after.len(),
            before.len() + 1,
            "{name}: one new session recorded: {after:?}"
        );
        assert!(
            after.contains(&label)
                && after.iter().filter(|l| **l == label).count()
                    > before.iter().filter(|l| **l == label).count(),
            "{name}: no session labelled {label}: {after:?}"
        );
        doctor_reads(&sb, name, text, &label);
    }
}

/// The labels so far; none before the first recording made the database.
fn labels_recorded_or_none(sb: &Sandbox) -> Vec<String> {
    if sb.db().exists() {
        labels_recorded(sb)
    } else {
        Vec::new()
    }
}

/// A snippet that is not what the page says fails the reader: a Zed entry without its type, a
/// line with no `--`, an agent-shell list that is not strings.
#[test]
fn a_wrong_snippet_is_caught() {
    let sb = Sandbox::new();
    let zed = r#"{"agent_servers": {"X": {"command": "acptap", "args": ["run", "--", "a"]}}}"#;
    assert!(catch_unwind(AssertUnwindSafe(|| argv_of(&Sandbox::new(), "zed", zed))).is_err());
    let no_dashes: Vec<String> = ["acptap", "run", "--label", "x", "agent"]
        .map(String::from)
        .to_vec();
    assert!(catch_unwind(AssertUnwindSafe(|| acptap_part("x", &no_dashes))).is_err());
    let elisp = "(setq agent-shell-anthropic-claude-acp-command '(acptap run))\n";
    assert!(
        catch_unwind(AssertUnwindSafe(|| argv_of(&sb, "agent-shell", elisp))).is_err(),
        "symbols are not strings"
    );
    let lua = "require('codecompanion').setup({ adapters = { acp = { claude_code = function() \
               return require('codecompanion.adapters').extend('no_such_preset', {}) end } }, \
               interactions = { chat = { adapter = 'claude_code' } } })\n";
    assert!(catch_unwind(AssertUnwindSafe(|| argv_of(&sb, "codecompanion", lua))).is_err());
}
