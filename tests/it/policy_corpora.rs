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

    /// Replaces the placeholders in every string of `value`.
    pub fn substitute(&self, value: &Value, cwd: &Path) -> Value {
        match value {
            Value::String(s) => Value::String(
                s.replace("${cwd}", &cwd.to_string_lossy())
                    .replace("${project}", &self.project.to_string_lossy())
                    .replace("${home}", &self.home.to_string_lossy())
                    .replace("${outside}", &self.outside.to_string_lossy()),
            ),
            Value::Array(items) => {
                Value::Array(items.iter().map(|v| self.substitute(v, cwd)).collect())
            }
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), self.substitute(v, cwd)))
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
        let cwd = self.cwd(cwd);
        let params = json!({
            "sessionId": "s",
            "toolCall": self.substitute(tool_call, cwd),
            "options": [
                {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
            ],
        });
        let policy = self
            .policies
            .get(policy)
            .unwrap_or_else(|| panic!("unknown policy `{policy}`"));
        policy.decide(
            &params,
            None,
            Context {
                cwd: Some(cwd),
                agent,
            },
        )
    }
}

/// Decides every line of a corpus; returns the failures (and the number of lines).
fn run(corpus: &str) -> (usize, Vec<String>, BTreeMap<String, usize>) {
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
        let verdict = scratch.decide(
            field("policy").unwrap_or("permissive"),
            field("cwd").unwrap_or("project"),
            field("agent"),
            &case["toolCall"],
        );
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
                    Context { cwd: Some(&scratch.project), agent: None },
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
                Context { cwd: Some(&scratch.project), agent: None },
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
