//! The policy engine: decides a `session/request_permission` for the user, or leaves it to them.
//!
//! Pure: [`Policy::decide`] takes the request's params, what is known of the tool call, the
//! session's cwd and the agent's name, and returns a [`Verdict`]. The proxy (`proxy/policy_tap.rs`)
//! does the I/O.
//!
//! # Precedence
//!
//! 1. Not about a tool call (mode switch, elicitation): ask.
//! 2. Built-in deny guard: `rm` with a recursive flag aimed at `/`, `~`, `.`, `..`, `*`, `$HOME`,
//!    the session's cwd or one of its parents.
//! 3. Deny rules (the first that matches).
//! 4. Built-in ask guards: changes under a `.git` directory, to a policy file in use, or to a shell
//!    startup file (`.bashrc`, `.zshrc`, `.profile`, ...).
//! 5. Ask rules, then allow rules, then the default.
//! 6. An allow needs an `allow_once` option (or `allow_always`, when the rule opts in), a deny a
//!    `reject_once`; when the request does not offer it, the request goes to the user.
//!
//! # What a rule sees
//!
//! The request's `toolCall` merged over what was recorded for that toolCallId (requests are often
//! partial), with every path it touches normalised (`paths.rs`), and its shell command, if it
//! carries one, analysed (`shell.rs`): `rawInput.command` as a string (claude-agent-acp) or an
//! argv array (codex-acp). gemini-cli sends no rawInput for shell calls and puts the command in the
//! title; for that agent only (as identified in `initialize`), the title of an `execute` call
//! stands for its command.

pub mod paths;
pub mod rules;
pub mod shell;

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::protocol::toolcall::{ToolCall, UpdateKind};
use rules::InputMatcher;
pub use rules::{Decision, EXAMPLE_CWD, Origin, PolicyError, PolicySet, Rule};
use shell::{Opaque, SimpleCommand};

/// The agents whose `execute` titles are their commands, verbatim (see the module doc).
const TITLE_IS_COMMAND_AGENTS: &[&str] = &["gemini-cli"];

/// Shell startup files: code in them runs in every later shell.
const SHELL_STARTUP_FILES: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".kshrc",
    ".cshrc",
    ".tcshrc",
    "config.fish",
    "bash.bashrc",
    "environment",
];

/// Tool kinds that only look: the ask guards about changing files do not apply to them.
const LOOKING_KINDS: &[&str] = &["read", "search", "think", "fetch"];

/// What the policy says about one request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// allow or deny: acptap answers the agent; ask: the request goes to the user.
    pub decision: Decision,
    /// The rule or built-in guard (`guard:...`) that decided; `None` for the default.
    pub rule: Option<String>,
    #[serde(rename = "optionId")]
    pub option_id: Option<String>,
    #[serde(skip)]
    pub option_kind: Option<String>,
    pub reason: String,
}

/// The session a request belongs to, as far as the proxy knows it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Context<'a> {
    pub cwd: Option<&'a Path>,
    /// `agentInfo.name` from `initialize`.
    pub agent: Option<&'a str>,
}

/// A loaded policy, ready to decide.
#[derive(Debug)]
pub struct Policy {
    pub set: PolicySet,
    home: Option<PathBuf>,
    /// The policy files as paths a tool might name (the ask guard protects them).
    files: Vec<PathBuf>,
    /// Path matchers per rule and cwd: compiled once per session.
    globs: RefCell<HashMap<GlobKey, Option<globset::GlobSet>>>,
}

/// A rule (by index) in a session (by cwd).
type GlobKey = (usize, Option<PathBuf>);

/// A tool call as the rules see it.
struct View {
    kind: Option<String>,
    title: Option<String>,
    raw_input: Option<Value>,
    /// Normalised; `None` for a path that cannot be placed (relative, with no known cwd).
    paths: Vec<Option<PathBuf>>,
    command: Option<Command>,
}

struct Command {
    analysed: Result<Vec<SimpleCommand>, Opaque>,
    /// A deliberately loose reading, for deny and ask rules and the guards: every run of words
    /// between shell operators, in any construct.
    loose: Vec<Vec<String>>,
}

/// The outcome of a self-check (a rule's examples, a `[[test]]`).
#[derive(Debug, Clone, Serialize)]
pub struct CheckResult {
    pub name: String,
    pub origin: Origin,
    pub passed: bool,
    pub detail: String,
}

impl Policy {
    /// Loads policy files and runs their examples and tests: any failure is an error naming the
    /// file and line.
    pub fn load(files: &[PathBuf]) -> Result<Policy, PolicyError> {
        let policy = Self::load_unchecked(files)?;
        if let Some(failed) = policy.self_check().into_iter().find(|c| !c.passed) {
            return Err(PolicyError {
                origin: failed.origin,
                message: format!("{} failed: {}", failed.name, failed.detail),
            });
        }
        Ok(policy)
    }

    /// Loads policy files without running their examples and tests (`acptap policy test`).
    pub fn load_unchecked(files: &[PathBuf]) -> Result<Policy, PolicyError> {
        let set = PolicySet::load(files)?;
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .map(|h| canonical(&h));
        Ok(Policy {
            files: files.iter().map(|f| canonical(f)).collect(),
            set,
            home,
            globs: RefCell::new(HashMap::new()),
        })
    }

    pub fn hash(&self) -> &str {
        &self.set.hash
    }

    /// Decides a `session/request_permission` (its params). `known` is the tool call's state as
    /// recorded before the request.
    pub fn decide(&self, params: &Value, known: Option<&ToolCall>, context: Context) -> Verdict {
        let ask = |reason: String| Verdict {
            decision: Decision::Ask,
            rule: None,
            option_id: None,
            option_kind: None,
            reason,
        };
        let Some(Value::Object(update)) = params.get("toolCall") else {
            return ask("not about a tool call: left to the user".into());
        };
        if !update.get("toolCallId").is_some_and(Value::is_string) {
            return ask("the request names no toolCallId: left to the user".into());
        }
        let mut merged = known.cloned();
        ToolCall::upsert(&mut merged, update, UpdateKind::PermissionRequest);
        let merged = merged.expect("upsert leaves a tool call");
        let cwd = context.cwd.map(canonical);
        let view = self.view(&merged, cwd.as_deref(), context.agent);
        let outcome = self.evaluate(&view, cwd.as_deref());
        finish(outcome, params.get("options"))
    }

    fn view(&self, call: &ToolCall, cwd: Option<&Path>, agent: Option<&str>) -> View {
        let kind = call.text("kind");
        let raw_input = call.get("rawInput").cloned();
        let paths = paths::tool_call_paths(
            call.get("locations"),
            call.get("content"),
            raw_input.as_ref(),
        )
        .iter()
        .map(|p| paths::normalise(p, cwd, self.home.as_deref()))
        .collect();
        let title = call.get("title").and_then(Value::as_str).map(str::to_owned);
        let command = match raw_input.as_ref().and_then(|r| r.get("command")) {
            Some(Value::String(script)) => Some(Command::of_script(script)),
            Some(Value::Array(argv)) => Some(Command::of_argv(argv)),
            Some(other) => Some(Command {
                analysed: Err(Opaque(format!(
                    "rawInput.command is neither a string nor an argv array: {other}"
                ))),
                loose: Vec::new(),
            }),
            None if kind.as_deref() == Some("execute")
                && agent.is_some_and(|a| TITLE_IS_COMMAND_AGENTS.contains(&a)) =>
            {
                title.as_deref().map(Command::of_script)
            }
            None => None,
        };
        View {
            kind,
            title,
            raw_input,
            paths,
            command,
        }
    }

    fn evaluate(&self, view: &View, cwd: Option<&Path>) -> Outcome {
        let outcome = |decision, rule: Option<String>, reason| Outcome {
            decision,
            rule,
            reason,
            allow_always: false,
        };
        if let Some(reason) = self.rm_guard(view, cwd) {
            return outcome(Decision::Deny, Some("guard:rm-rf".into()), reason);
        }
        let first = |decision: Decision| {
            self.set
                .rules
                .iter()
                .enumerate()
                .find(|(i, r)| r.decision == decision && self.matches(*i, r, view, cwd))
                .map(|(_, r)| r)
        };
        let by_rule = |rule: &Rule| Outcome {
            decision: rule.decision,
            rule: Some(rule.id.clone()),
            reason: rule
                .reason
                .clone()
                .unwrap_or_else(|| format!("rule `{}` ({})", rule.id, rule.origin)),
            allow_always: rule.allow_always,
        };
        if let Some(rule) = first(Decision::Deny) {
            return by_rule(rule);
        }
        if let Some((guard, reason)) = self.ask_guard(view) {
            return outcome(Decision::Ask, Some(guard.into()), reason);
        }
        if let Some(rule) = first(Decision::Ask).or_else(|| first(Decision::Allow)) {
            return by_rule(rule);
        }
        outcome(
            self.set.default,
            None,
            format!("no rule matches: the default is {}", self.set.default),
        )
    }

    /// Whether one rule's conditions all hold for the tool call.
    fn matches(&self, index: usize, rule: &Rule, view: &View, cwd: Option<&Path>) -> bool {
        if let Some(kinds) = &rule.kinds
            && !view.kind.as_ref().is_some_and(|k| kinds.contains(k))
        {
            return false;
        }
        if let Some(title) = &rule.title
            && !view.title.as_ref().is_some_and(|t| title.is_match(t))
        {
            return false;
        }
        if let Some(patterns) = &rule.paths {
            let globs = self.globs_for(index, patterns, cwd);
            let hit = |p: &Option<PathBuf>| {
                p.as_ref()
                    .is_some_and(|p| globs.as_ref().is_some_and(|g| g.is_match(p)))
            };
            let ok = match rule.decision {
                // Every path must be inside what the rule allows; no path, no allow.
                Decision::Allow => !view.paths.is_empty() && view.paths.iter().all(hit),
                _ => view.paths.iter().any(hit),
            };
            if !ok {
                return false;
            }
        }
        for (pointer, matcher) in &rule.input {
            let value = view.raw_input.as_ref().and_then(|r| r.pointer(pointer));
            let ok = match (matcher, value) {
                (InputMatcher::Equals(expected), Some(v)) => v == expected,
                (InputMatcher::Regex(re), Some(Value::String(s))) => re.is_match(s),
                _ => false,
            };
            if !ok {
                return false;
            }
        }
        match (&rule.command, &view.command, rule.decision) {
            (None, None, _) => true,
            // A call that carries a shell command is allowed only by a rule that checks it.
            (None, Some(_), Decision::Allow) => false,
            (None, Some(_), _) => true,
            (Some(_), None, _) => false,
            (Some(prefixes), Some(command), Decision::Allow) => match &command.analysed {
                Ok(commands) => {
                    !commands.is_empty()
                        && commands
                            .iter()
                            .all(|c| prefixes.iter().any(|p| starts_with(&c.words, p)))
                }
                Err(_) => false,
            },
            (Some(prefixes), Some(command), _) => {
                let analysed = command
                    .analysed
                    .iter()
                    .flatten()
                    .map(|c| c.words.as_slice());
                let loose = command.loose.iter().map(Vec::as_slice);
                analysed.chain(loose).any(|words| {
                    (0..words.len()).any(|i| prefixes.iter().any(|p| starts_with(&words[i..], p)))
                })
            }
        }
    }

    fn globs_for(
        &self,
        index: usize,
        patterns: &[String],
        cwd: Option<&Path>,
    ) -> Option<globset::GlobSet> {
        let key = (index, cwd.map(Path::to_owned));
        self.globs
            .borrow_mut()
            .entry(key)
            .or_insert_with(|| {
                let cwd = cwd.map(|c| c.to_string_lossy().into_owned());
                let home = self.home.as_ref().map(|h| h.to_string_lossy().into_owned());
                rules::compile_globs(patterns, cwd.as_deref(), home.as_deref())
                    .ok()
                    .flatten()
            })
            .clone()
    }

    /// `rm -r` of something whose loss is not an edit but a disaster.
    fn rm_guard(&self, view: &View, cwd: Option<&Path>) -> Option<String> {
        let command = view.command.as_ref()?;
        let analysed = command
            .analysed
            .iter()
            .flatten()
            .map(|c| c.words.as_slice());
        for words in analysed.chain(command.loose.iter().map(Vec::as_slice)) {
            for (i, word) in words.iter().enumerate() {
                if word.rsplit('/').next() != Some("rm") {
                    continue;
                }
                let args = &words[i + 1..];
                let recursive = args.iter().any(|a| {
                    a == "--recursive"
                        || (a.starts_with('-')
                            && !a.starts_with("--")
                            && (a.contains('r') || a.contains('R')))
                });
                if !recursive {
                    continue;
                }
                if let Some(target) = args
                    .iter()
                    .find(|a| !a.starts_with('-') && self.is_precious(a, cwd))
                {
                    return Some(format!(
                        "built-in guard: `rm -r {target}` would delete far more than a project file"
                    ));
                }
            }
        }
        None
    }

    fn is_precious(&self, target: &str, cwd: Option<&Path>) -> bool {
        let bare = target
            .trim_end_matches('/')
            .trim_end_matches("/*")
            .trim_end_matches("/.");
        if matches!(
            bare,
            "" | "~" | "." | ".." | "*" | "$HOME" | "${HOME}" | "/*" | ".*"
        ) {
            return true;
        }
        let Some(path) = paths::normalise(bare, cwd, self.home.as_deref()) else {
            return true; // cannot tell where it points: assume the worst
        };
        path == Path::new("/")
            || self.home.as_deref() == Some(&path)
            || cwd.is_some_and(|c| c.starts_with(&path))
    }

    /// Changes that always go to the user, whatever the rules say.
    fn ask_guard(&self, view: &View) -> Option<(&'static str, String)> {
        if view
            .kind
            .as_deref()
            .is_some_and(|k| LOOKING_KINDS.contains(&k))
        {
            return None;
        }
        for path in view.paths.iter().flatten() {
            if path.components().any(|c| c.as_os_str() == ".git") {
                return Some((
                    "guard:git-dir",
                    format!(
                        "built-in guard: {} is inside a .git directory",
                        path.display()
                    ),
                ));
            }
            if self.files.iter().any(|f| f == path) {
                return Some((
                    "guard:policy-file",
                    format!("built-in guard: {} is a policy file in use", path.display()),
                ));
            }
            if path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| SHELL_STARTUP_FILES.contains(&n))
            {
                return Some((
                    "guard:shell-startup",
                    format!("built-in guard: {} is a shell startup file", path.display()),
                ));
            }
        }
        None
    }

    /// Runs every rule example and `[[test]]` of the loaded files.
    pub fn self_check(&self) -> Vec<CheckResult> {
        let mut results = Vec::new();
        let cwd = Path::new(EXAMPLE_CWD);
        for example in &self.set.examples {
            let (index, rule) = self
                .set
                .rules
                .iter()
                .enumerate()
                .find(|(_, r)| r.id == example.rule)
                .expect("examples belong to loaded rules");
            let home = self.home.as_ref().map(|h| h.to_string_lossy().into_owned());
            let tool_call = substitute(
                &example.tool_call,
                EXAMPLE_CWD,
                home.as_deref().unwrap_or("/root"),
            );
            let Value::Object(map) = &tool_call else {
                results.push(CheckResult {
                    name: format!("rule `{}` example", rule.id),
                    origin: example.origin.clone(),
                    passed: false,
                    detail: "an example must be a table (a tool call)".into(),
                });
                continue;
            };
            let (call, _) = ToolCall::create(map, UpdateKind::ToolCall);
            let view = self.view(&call, Some(cwd), None);
            let matched = self.matches(index, rule, &view, Some(cwd));
            results.push(CheckResult {
                name: format!(
                    "rule `{}` {} example {}",
                    rule.id,
                    if example.should_match {
                        "match"
                    } else {
                        "not_match"
                    },
                    serde_json::to_string(&tool_call).unwrap_or_default()
                ),
                origin: example.origin.clone(),
                passed: matched == example.should_match,
                detail: if matched {
                    "the rule matched it".into()
                } else {
                    "the rule did not match it".into()
                },
            });
        }
        for test in &self.set.tests {
            let params = match test.request.get("params") {
                Some(params) if test.request.get("method").is_some() => params.clone(),
                _ => test.request.clone(),
            };
            let cwd = PathBuf::from(test.cwd.as_deref().unwrap_or(EXAMPLE_CWD));
            let verdict = self.decide(
                &params,
                None,
                Context {
                    cwd: Some(&cwd),
                    agent: test.agent.as_deref(),
                },
            );
            let mut problems = Vec::new();
            if verdict.decision != test.expect {
                problems.push(format!(
                    "expected {}, got {}",
                    test.expect, verdict.decision
                ));
            }
            if let Some(rule) = &test.rule
                && verdict.rule.as_deref() != Some(rule)
            {
                problems.push(format!("expected rule `{rule}`, got {:?}", verdict.rule));
            }
            if let Some(option) = &test.option
                && verdict.option_id.as_deref() != Some(option)
            {
                problems.push(format!(
                    "expected option `{option}`, got {:?}",
                    verdict.option_id
                ));
            }
            results.push(CheckResult {
                name: format!("test `{}`", test.name),
                origin: test.origin.clone(),
                passed: problems.is_empty(),
                detail: if problems.is_empty() {
                    verdict.reason
                } else {
                    format!("{} ({})", problems.join("; "), verdict.reason)
                },
            });
        }
        results
    }
}

impl Command {
    fn of_script(script: &str) -> Command {
        Command {
            analysed: shell::analyse(script),
            loose: loose_words(script),
        }
    }

    fn of_argv(argv: &[Value]) -> Command {
        let words: Option<Vec<String>> =
            argv.iter().map(|w| w.as_str().map(str::to_owned)).collect();
        match words {
            Some(words) => Command {
                analysed: shell::analyse_argv(&words),
                loose: loose_words(&words.join(" ")),
            },
            None => Command {
                analysed: Err(Opaque(
                    "rawInput.command holds something other than strings".into(),
                )),
                loose: Vec::new(),
            },
        }
    }
}

/// Every run of words between shell operators, quotes dropped: a reading that never misses a
/// command however it is hidden (in a substitution, a subshell, a `bash -c` string), at the cost
/// of seeing some that are not there. Only deny and ask decisions use it.
fn loose_words(text: &str) -> Vec<Vec<String>> {
    text.split(|c: char| {
        matches!(
            c,
            ';' | '&' | '|' | '(' | ')' | '`' | '<' | '>' | '\n' | '{' | '}'
        )
    })
    .map(|segment| {
        segment
            .split(|c: char| c.is_whitespace() || c == '\'' || c == '"')
            .map(|w| w.replace('\\', ""))
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
    })
    .filter(|words| !words.is_empty())
    .collect()
}

fn starts_with(words: &[String], prefix: &[Vec<String>]) -> bool {
    words.len() >= prefix.len()
        && prefix
            .iter()
            .zip(words)
            .all(|(alternatives, word)| alternatives.contains(word))
}

/// What the rules (or guards, or the default) said, before the options are looked at.
struct Outcome {
    decision: Decision,
    rule: Option<String>,
    reason: String,
    /// The allow rule opted in to `allow_always`.
    allow_always: bool,
}

/// Turns a rule's decision into what acptap does, by the options the request offers.
fn finish(outcome: Outcome, options: Option<&Value>) -> Verdict {
    let Outcome {
        decision,
        rule,
        reason,
        allow_always,
    } = outcome;
    let wanted: &[&str] = match decision {
        Decision::Allow if allow_always => &["allow_always", "allow_once"],
        Decision::Allow => &["allow_once"],
        Decision::Deny => &["reject_once"],
        Decision::Ask => &[],
    };
    if decision == Decision::Ask {
        return Verdict {
            decision,
            rule,
            option_id: None,
            option_kind: None,
            reason,
        };
    }
    let offered = options.and_then(Value::as_array);
    let chosen = wanted.iter().find_map(|kind| {
        offered?
            .iter()
            .find(|o| o.get("kind").and_then(Value::as_str) == Some(kind))
            .and_then(|o| Some((o.get("optionId")?.as_str()?.to_owned(), (*kind).to_owned())))
    });
    match chosen {
        Some((option_id, option_kind)) => Verdict {
            decision,
            rule,
            option_id: Some(option_id),
            option_kind: Some(option_kind),
            reason,
        },
        None => Verdict {
            decision: Decision::Ask,
            rule,
            option_id: None,
            option_kind: None,
            reason: format!(
                "{reason}; but the request offers no `{}` option, so it goes to the user",
                wanted.join("` or `")
            ),
        },
    }
}

/// Replaces `${cwd}` and `${home}` in every string of an example.
fn substitute(value: &Value, cwd: &str, home: &str) -> Value {
    match value {
        Value::String(s) => Value::String(s.replace("${cwd}", cwd).replace("${home}", home)),
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| substitute(v, cwd, home)).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.replace("${cwd}", cwd), substitute(v, cwd, home)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The path with symlinks resolved as far as it exists.
fn canonical(path: &Path) -> PathBuf {
    paths::normalise(
        &path.to_string_lossy(),
        std::env::current_dir().ok().as_deref(),
        None,
    )
    .unwrap_or_else(|| path.to_owned())
}
