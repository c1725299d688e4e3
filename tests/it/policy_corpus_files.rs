//! The hostile and benign corpora (`tests/fixtures/policy/{hostile,benign}.jsonl`), decided in a
//! scratch home directory with a real project in it: a git repository, symlinks out of it, a
//! sibling whose name is full of glob characters, secrets and startup files.
//!
//! Each corpus line: `name`, `class`, `policy` (`project`: docs/policies/project.toml;
//! `permissive`: tests/fixtures/policy/permissive.toml), `cwd` (`project`, `home` or `odd`),
//! `agent`, `toolCall` and the decision it must get. `${cwd}`, `${project}`, `${home}` and
//! `${outside}` in any string are replaced by the scratch paths.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use acptap::policy::{Context, Decision, Policy};
use serde_json::{Value, json};

use crate::util::fixture;

/// The name of the project whose directory name is full of glob syntax.
pub const ODD_PROJECT: &str = "proj[1 {a,b} [WIP] app";

/// A scratch home with a project in it, and the two corpus policies loaded for that home.
pub struct Scratch {
    _dir: tempfile::TempDir,
    pub home: PathBuf,
    pub project: PathBuf,
    pub odd: PathBuf,
    pub outside: PathBuf,
    pub policies: BTreeMap<&'static str, Policy>,
}

impl Scratch {
    pub fn new() -> Scratch {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap().join("home");
        let project = home.join("project");
        let odd = home.join(ODD_PROJECT);
        let outside = home.join("outside");
        let write = |path: PathBuf, text: &str| {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write(
            home.join(".ssh/id_rsa"),
            "-----BEGIN OPENSSH PRIVATE KEY-----\n",
        );
        write(home.join(".aws/credentials"), "[default]\n");
        write(home.join(".bashrc"), "# rc\n");
        write(home.join(".gitconfig"), "[user]\n");
        write(outside.join("secret.txt"), "secret\n");
        for root in [&project, &odd] {
            for (name, text) in [
                ("src/main.rs", "fn main() {}\n"),
                ("src/lib.rs", "pub fn f() {}\n"),
                ("README.md", "# project\n"),
                ("Cargo.toml", "[package]\nname = \"p\"\n"),
                ("hello.py", "print('hello')\n"),
                ("package.json", "{}\n"),
                ("Makefile", "all:\n"),
                ("sub/a.txt", "a\n"),
                (".env", "TOKEN=x\n"),
            ] {
                write(root.join(name), text);
            }
        }
        write(project.join(".git/HEAD"), "ref: refs/heads/main\n");
        write(project.join(".git/config"), "[core]\n");
        for dir in ["hooks", "objects", "refs/heads"] {
            std::fs::create_dir_all(project.join(".git").join(dir)).unwrap();
        }
        std::os::unix::fs::symlink(&outside, project.join("escape")).unwrap();
        std::os::unix::fs::symlink("/etc", project.join("etc-link")).unwrap();
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        let policies = BTreeMap::from([
            (
                "project",
                Policy::load_with_home(&[manifest.join("docs/policies/project.toml")], &home)
                    .unwrap(),
            ),
            (
                "permissive",
                Policy::load_with_home(&[fixture("policy/permissive.toml")], &home).unwrap(),
            ),
        ]);
        Scratch {
            _dir: dir,
            home,
            project,
            odd,
            outside,
            policies,
        }
    }

    pub fn cwd(&self, which: &str) -> &Path {
        match which {
            "project" => &self.project,
            "home" => &self.home,
            "odd" => &self.odd,
            other => panic!("unknown cwd `{other}`: use project, home or odd"),
        }
    }

    /// Replaces the placeholders in every string of `value`, object keys included (a key may
    /// be a path: `{"edits": {"${home}/.ssh/authorized_keys": ...}}`).
    pub fn substitute(&self, value: &Value, cwd: &Path) -> Value {
        let text = |s: &str| {
            s.replace("${cwd}", &cwd.to_string_lossy())
                .replace("${project}", &self.project.to_string_lossy())
                .replace("${home}", &self.home.to_string_lossy())
                .replace("${outside}", &self.outside.to_string_lossy())
        };
        match value {
            Value::String(s) => Value::String(text(s)),
            Value::Array(items) => {
                Value::Array(items.iter().map(|v| self.substitute(v, cwd)).collect())
            }
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (text(k), self.substitute(v, cwd)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// Decides one tool call as a permission request with allow_once and reject_once offered.
    pub fn decide(
        &self,
        policy: &str,
        cwd: &str,
        agent: Option<&str>,
        tool_call: &Value,
    ) -> acptap::policy::Verdict {
        self.decide_as(policy, cwd, agent, tool_call, Shape::V1)
            .expect("every tool call has a v1 shape")
    }

    /// Decides one tool call as a permission request of the given shape on a connection of that
    /// version; `None` when the call has no faithful form in that shape (see [`v2_request`]).
    pub fn decide_as(
        &self,
        policy: &str,
        cwd: &str,
        agent: Option<&str>,
        tool_call: &Value,
        shape: Shape,
    ) -> Option<acptap::policy::Verdict> {
        let cwd = self.cwd(cwd);
        let tool_call = self.substitute(tool_call, cwd);
        let (params, version) = match shape {
            Shape::V1 => (
                json!({
                    "sessionId": "s",
                    "toolCall": tool_call,
                    "options": [
                        {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                        {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
                    ],
                }),
                None,
            ),
            _ => (
                v2_request(&tool_call, shape, cwd, agent)?,
                Some(acptap::protocol::Version::V2),
            ),
        };
        let policy = self
            .policies
            .get(policy)
            .unwrap_or_else(|| panic!("unknown policy `{policy}`"));
        Some(policy.decide(
            &params,
            None,
            Context {
                cwd: Some(cwd),
                agent,
                version,
            },
        ))
    }
}

/// How a corpus request is sent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    /// v1: `toolCall`.
    V1,
    /// v2: a `tool_call` subject carrying the same update.
    V2ToolCall,
    /// v2: a `command` subject, for an execute call whose rawInput holds only its command and
    /// working directory (anything else, such as `env` or a content text naming the directory,
    /// has no place in a command subject, so that call has no faithful command form).
    V2Command,
}

/// A corpus tool call as a v2 permission request, built with the schema crate's v2 types: the
/// call as a `tool_call` subject (its update as a v2 `ToolCallUpdate` where the type reads it
/// back unchanged; a hostile update the type would change goes on the wire as it is, as a
/// hostile agent would send it), or as a `command` subject.
fn v2_request(tool_call: &Value, shape: Shape, cwd: &Path, agent: Option<&str>) -> Option<Value> {
    use agent_client_protocol::v2::schema::{
        CommandPermissionSubject, PermissionOption, PermissionOptionKind, RequestPermissionRequest,
        RequestPermissionSubject, ToolCallUpdate,
    };
    let title = tool_call
        .get("title")
        .and_then(Value::as_str)
        .unwrap_or("A tool call")
        .to_owned();
    let request = RequestPermissionRequest::new(
        "s",
        title.clone(),
        vec![
            PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
            PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
        ],
    );
    match shape {
        Shape::V1 => None,
        Shape::V2ToolCall => {
            // The type drops what it cannot read (an old-shape diff item): only an update it
            // reads back unchanged is sent through it; any other goes on the wire as it is.
            let typed = serde_json::from_value::<ToolCallUpdate>(tool_call.clone())
                .ok()
                .filter(|u| serde_json::to_value(u).ok().as_ref() == Some(tool_call));
            let mut params = serde_json::to_value(match typed {
                Some(update) => request.subject(RequestPermissionSubject::from(update)),
                None => request,
            })
            .unwrap();
            if params.get("subject").is_none() {
                params["subject"] = json!({"type": "tool_call", "toolCall": tool_call});
            }
            Some(params)
        }
        Shape::V2Command => {
            if tool_call.get("kind").and_then(Value::as_str) != Some("execute")
                || tool_call.get("content").is_some_and(|c| !c.is_null())
            {
                return None;
            }
            let input = tool_call.get("rawInput").and_then(Value::as_object);
            let command = match input.and_then(|i| i.get("command")) {
                Some(Value::String(command)) => command.clone(),
                // gemini-cli's execute titles are their commands.
                None if acptap::policy::agents::Dialect::of(agent).gemini => title,
                _ => return None,
            };
            let mut dir = None;
            let dialect = acptap::policy::agents::Dialect::of(agent);
            for (key, value) in input.into_iter().flatten() {
                match (key.as_str(), value) {
                    ("command", _) => {}
                    // A key this agent does not place its commands with (opencode's `cwd` is
                    // its own directory): the subject's cwd would say more than the request.
                    (key, _) if !dialect.workdir_keys.contains(&key) => return None,
                    // A plain relative directory (opencode's `workdir: "sub"`) has no v2 form:
                    // the subject's cwd is absolute.
                    ("cwd" | "workdir" | "directory", Value::String(d))
                        if !d.starts_with(['/', '~']) && !d.split('/').any(|c| c == "..") =>
                    {
                        return None;
                    }
                    // As written: a v2 subject's cwd must be absolute, and `~` or `..` is
                    // the agent's to send, the policy's to refuse.
                    ("cwd" | "workdir" | "directory", Value::String(d)) => {
                        dir = Some(PathBuf::from(d))
                    }
                    _ => return None,
                }
            }
            // A v1 request that names no directory runs where the agent's dialect says
            // (`agents::Dialect`); only "the session's cwd" has a command form.
            let dir = match dir {
                Some(dir) => dir,
                None if acptap::policy::agents::Dialect::of(agent).unnamed
                    == acptap::policy::agents::Unnamed::SessionCwd =>
                {
                    cwd.to_path_buf()
                }
                None => return None,
            };
            Some(
                serde_json::to_value(request.subject(RequestPermissionSubject::Command(
                    CommandPermissionSubject::new(command, dir),
                )))
                .unwrap(),
            )
        }
    }
}

/// Decides every line of a corpus; returns the failures (and the number of lines).
fn run(corpus: &str) -> (usize, Vec<String>, BTreeMap<String, usize>) {
    run_as(corpus, Shape::V1)
}

/// Decides every line of a corpus that has a form in `shape`; returns the failures, the number
/// decided and the lines per class.
fn run_as(corpus: &str, shape: Shape) -> (usize, Vec<String>, BTreeMap<String, usize>) {
    let scratch = Scratch::new();
    let text = std::fs::read_to_string(fixture(corpus)).unwrap();
    let mut failures = Vec::new();
    let mut classes = BTreeMap::new();
    let mut count = 0;
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let case: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("{corpus}:{}: not JSON: {e}", n + 1));
        let field = |key: &str| case.get(key).and_then(Value::as_str);
        let name = field("name").unwrap_or("?");
        let expect = match field("expect") {
            Some("allow") => Decision::Allow,
            Some("ask") => Decision::Ask,
            Some("deny") => Decision::Deny,
            other => panic!("{corpus}:{}: bad expect {other:?}", n + 1),
        };
        let Some(verdict) = scratch.decide_as(
            field("policy").unwrap_or("permissive"),
            field("cwd").unwrap_or("project"),
            field("agent"),
            &case["toolCall"],
            shape,
        ) else {
            continue;
        };
        count += 1;
        *classes
            .entry(field("class").unwrap_or("?").to_owned())
            .or_insert(0) += 1;
        if verdict.decision != expect {
            failures.push(format!(
                "{corpus}:{}: {name}: expected {expect}, got {} ({:?}: {})",
                n + 1,
                verdict.decision,
                verdict.rule,
                verdict.reason
            ));
        }
    }
    (count, failures, classes)
}

#[test]
fn hostile_corpus_is_never_allowed_and_gets_the_expected_decision() {
    let (count, failures, classes) = run("policy/hostile.jsonl");
    assert!(
        failures.is_empty(),
        "{} of {count} wrong:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        count >= 300,
        "the hostile corpus has {count} requests; it needs at least 300"
    );
    assert!(classes.len() >= 10, "{classes:?}");
    let text = std::fs::read_to_string(fixture("policy/hostile.jsonl")).unwrap();
    assert!(!text.contains("\"expect\": \"allow\"") && !text.contains("\"expect\":\"allow\""));
}

#[test]
fn benign_corpus_is_allowed() {
    let (count, failures, _) = run("policy/benign.jsonl");
    assert!(
        failures.is_empty(),
        "{} of {count} wrong:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        count >= 60,
        "the benign corpus has {count} requests; it needs at least 60"
    );
}

/// The hostile corpus as v2 requests: as `tool_call` subjects (every line) and as `command`
/// subjects (every execute call that has a command form) on a v2 connection, none is allowed.
/// The decision may differ from v1's (a deny in v1 may be an ask here), never toward allow.
#[test]
fn hostile_corpus_in_v2_shape_is_never_allowed() {
    let scratch = Scratch::new();
    let text = std::fs::read_to_string(fixture("policy/hostile.jsonl")).unwrap();
    for shape in [Shape::V2ToolCall, Shape::V2Command] {
        let mut decided = 0;
        let mut allowed = Vec::new();
        for (n, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let case: Value = serde_json::from_str(line).unwrap();
            let field = |key: &str| case.get(key).and_then(Value::as_str);
            let Some(verdict) = scratch.decide_as(
                field("policy").unwrap_or("permissive"),
                field("cwd").unwrap_or("project"),
                field("agent"),
                &case["toolCall"],
                shape,
            ) else {
                continue;
            };
            decided += 1;
            if verdict.decision == Decision::Allow {
                allowed.push(format!(
                    "hostile.jsonl:{}: {}: allowed by {:?}",
                    n + 1,
                    field("name").unwrap_or("?"),
                    verdict.rule
                ));
            }
        }
        assert!(allowed.is_empty(), "{shape:?}:\n{}", allowed.join("\n"));
        let least = if shape == Shape::V2ToolCall { 300 } else { 100 };
        assert!(
            decided >= least,
            "{shape:?}: only {decided} requests decided"
        );
    }
}

/// The benign corpus as v2 requests gets exactly its v1 decisions: as `tool_call` subjects
/// (every line) and as `command` subjects (each execute call with a command form).
#[test]
fn benign_corpus_in_v2_shape_is_allowed() {
    for (shape, least) in [(Shape::V2ToolCall, 60), (Shape::V2Command, 20)] {
        let (count, failures, _) = run_as("policy/benign.jsonl", shape);
        assert!(
            failures.is_empty(),
            "{shape:?}: {} of {count} wrong:\n{}",
            failures.len(),
            failures.join("\n")
        );
        assert!(count >= least, "{shape:?}: only {count} requests decided");
    }
}

/// A policy that allows every command the table knows, by its name alone.
fn allow_every_known_command(scratch: &Scratch) -> Policy {
    let prefixes: Vec<String> = acptap::policy::commands::known_commands()
        .iter()
        .map(|c| format!("[{c:?}]"))
        .collect();
    let path = scratch.home.join("every-command.toml");
    std::fs::write(
        &path,
        format!(
            "version = 1\n[[rule]]\nid = \"every\"\ndecision = \"allow\"\nkind = \"execute\"\ncommand = [{}]\n",
            prefixes.join(", ")
        ),
    )
    .unwrap();
    Policy::load_with_home(&[path], &scratch.home).unwrap()
}

/// The ways one table option can be written on a command line.
fn spellings(name: &str) -> Vec<Vec<String>> {
    let v = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    match name.strip_prefix("--") {
        Some(long) => {
            let mut out = vec![v(&[name]), vec![format!("{name}=x")], v(&[name, "x"])];
            // Abbreviations, as git and GNU getopt accept them.
            if long.len() > 3 {
                out.push(vec![format!("--{}", &long[..long.len() - 1])]);
                out.push(vec![format!("--{}=x", &long[..3])]);
            }
            out
        }
        None if name.len() == 2 => vec![v(&[name]), vec![format!("{name}x")], v(&[name, "x"])],
        None => vec![v(&[name]), v(&[name, "x"])],
    }
}

mod property {
    use super::*;
    use proptest::prelude::*;

    /// Words that are harmless anywhere: flags no table entry knows, and paths inside.
    const BENIGN: &[&str] = &["src", "README.md", "-v", "--stat", "1", "a.txt", "-q", "."];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// For random argument lists of an allowed command, an option from the command's
        /// dangerous table, in any of its spellings and anywhere among the options, never
        /// yields allow.
        #[test]
        fn a_dangerous_option_never_yields_allow(
            command in 0usize..1000,
            option in 0usize..1000,
            spelling in 0usize..100,
            before in proptest::collection::vec(0usize..BENIGN.len(), 0..4),
            after in proptest::collection::vec(0usize..BENIGN.len(), 0..4),
            as_argv in any::<bool>(),
        ) {
            thread_local! {
                static SCRATCH: (Scratch, Policy) = {
                    let scratch = Scratch::new();
                    let policy = allow_every_known_command(&scratch);
                    (scratch, policy)
                };
            }
            let commands: Vec<&str> = acptap::policy::commands::known_commands()
                .into_iter()
                .filter(|c| !acptap::policy::commands::dangerous_options(c).is_empty())
                .collect();
            let name = commands[command % commands.len()];
            let dangerous = acptap::policy::commands::dangerous_options(name);
            let table_option = dangerous[option % dangerous.len()];
            let names: Vec<&str> = table_option.names.split(' ').collect();
            let option_name = names[option % names.len()];
            let all = spellings(option_name);
            let written = &all[spelling % all.len()];
            // git's own options go before the subcommand, the others after one.
            let is_global = table_option.before_subcommand;
            let mut words: Vec<String> = vec![name.to_owned()];
            if name == "git" && !is_global {
                words.push("log".into());
            }
            // Options of python and node end at the first positional: keep flags before.
            let flags_only = |list: &[usize]| -> Vec<String> {
                list.iter()
                    .map(|&i| BENIGN[i])
                    .filter(|w| w.starts_with('-') && *w != "-v")
                    .map(str::to_owned)
                    .collect()
            };
            words.extend(flags_only(&before));
            words.extend(written.iter().cloned());
            if name == "git" && is_global {
                words.push("status".into());
            }
            words.extend(after.iter().map(|&i| BENIGN[i].to_owned()));
            let command_value = if as_argv {
                json!(words)
            } else {
                json!(words.join(" "))
            };
            SCRATCH.with(|(scratch, policy)| {
                let verdict = policy.decide(
                    &json!({
                        "sessionId": "s",
                        "toolCall": {"toolCallId": "t", "kind": "execute", "rawInput": {"command": command_value}},
                        "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}],
                    }),
                    None,
                    Context { cwd: Some(&scratch.project), agent: None, ..Default::default() },
                );
                prop_assert_ne!(verdict.decision, Decision::Allow, "{:?} was allowed: {}", words, verdict.reason);
                Ok(())
            })?;
        }
    }

    /// The control: the same commands without the dangerous option are allowed, so the
    /// property above fails for the right reason.
    #[test]
    fn the_same_commands_without_the_option_are_allowed() {
        let scratch = Scratch::new();
        let policy = allow_every_known_command(&scratch);
        for line in [
            "git log --stat src",
            "git status",
            "cargo test -q",
            "find src -name x",
            "sort README.md",
            "rg -q x src",
            "sed -n 1p README.md",
            "python3 hello.py",
            "make all",
            "tar -tf a.tar",
        ] {
            let verdict = policy.decide(
                &json!({"sessionId": "s", "toolCall": {"toolCallId": "t", "kind": "execute", "rawInput": {"command": line}},
                    "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}]}),
                None,
                Context { cwd: Some(&scratch.project), agent: None, ..Default::default() },
            );
            assert_eq!(
                verdict.decision,
                Decision::Allow,
                "{line}: {}",
                verdict.reason
            );
        }
    }
}

/// A request naming many paths is decided in time linear in their number, and past
/// `MAX_CALL_PATHS` it goes to the user (each path costs file-system lookups on the data path).
#[test]
fn many_locations_are_bounded() {
    let scratch = Scratch::new();
    let locations = |n: usize| -> Vec<Value> {
        (0..n)
            .map(|i| json!({"path": format!("${{cwd}}/src/f{i}.rs")}))
            .collect()
    };
    let limit = acptap::policy::MAX_CALL_PATHS;
    let at_limit = scratch.decide(
        "permissive",
        "project",
        None,
        &json!({"toolCallId": "t", "kind": "read", "locations": locations(limit)}),
    );
    assert_eq!(at_limit.decision, Decision::Allow, "{}", at_limit.reason);
    for n in [limit + 1, 60_000] {
        let verdict = scratch.decide(
            "permissive",
            "project",
            None,
            &json!({"toolCallId": "t", "kind": "read", "locations": locations(n)}),
        );
        assert_eq!(verdict.decision, Decision::Ask);
        assert!(
            verdict.reason.contains(&format!("{n} paths")),
            "{}",
            verdict.reason
        );
    }
}

/// Real permission requests of each agent, with the session updates about the same tool call
/// that came before them, copied from captures of the agents (../shared/testbed, mock model) with
/// the directory changed to `${outside}` or the project (`tests/fixtures/policy/agent-dialects.jsonl`):
/// each agent names where a shell command runs its own way (docs/policy.md, "How each agent
/// names a command's directory"), and a directory the policy cannot place is never taken for
/// the session's cwd.
#[test]
fn each_agent_dialect_is_judged_on_where_its_command_runs() {
    use acptap::protocol::toolcall::{ToolCall, UpdateKind, from_session_update};
    let scratch = Scratch::new();
    let text = std::fs::read_to_string(fixture("policy/agent-dialects.jsonl")).unwrap();
    let mut failures = Vec::new();
    let mut count = 0;
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let case: Value = serde_json::from_str(line).unwrap();
        let field = |key: &str| case.get(key).and_then(Value::as_str);
        let cwd = scratch.cwd(field("cwd").unwrap_or("project"));
        let lines = scratch.substitute(&case["lines"], cwd);
        let (request, updates) = lines.as_array().unwrap().split_last().unwrap();
        assert_eq!(
            request["method"],
            "session/request_permission",
            "agent-dialects.jsonl:{}: the last line must be the request",
            n + 1
        );
        let mut known: Option<ToolCall> = None;
        // As the proxy records them: session updates, and the `toolCall` of an earlier request.
        for line in updates {
            let (update, how) = match line["params"].get("toolCall") {
                Some(Value::Object(call)) => (call, UpdateKind::PermissionRequest),
                _ => from_session_update(&line["params"]).unwrap(),
            };
            ToolCall::upsert(&mut known, update, how);
        }
        let verdict = scratch.policies[field("policy").unwrap()].decide(
            &request["params"],
            known.as_ref(),
            Context {
                cwd: Some(cwd),
                agent: field("agent"),
                version: None,
            },
        );
        let expect = field("expect").unwrap();
        count += 1;
        if verdict.decision.to_string() != expect {
            failures.push(format!(
                "agent-dialects.jsonl:{}: {}: expected {expect}, got {} ({:?}: {})",
                n + 1,
                field("name").unwrap_or("?"),
                verdict.decision,
                verdict.rule,
                verdict.reason
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(count >= 20, "only {count} cases");
}
