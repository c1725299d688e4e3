//! Policy files: TOML, strict, checked when loaded.
//!
//! ```toml
//! version = 1
//! default = "ask"                 # allow | ask | deny: when no rule matches
//!
//! [[rule]]
//! id = "read-project"
//! decision = "allow"
//! reason = "reading inside the project is harmless"
//! kind = ["read", "search"]       # raw strings; custom `_x` kinds too
//! paths = ["${cwd}/**"]           # globs; ${cwd} and ${home}
//! match = [{ kind = "read", locations = [{ path = "${cwd}/src/main.rs" }] }]
//! not_match = [{ kind = "read", locations = [{ path = "/etc/passwd" }] }]
//!
//! [[test]]
//! request = { sessionId = "s", toolCall = { toolCallId = "t", kind = "read" }, options = [] }
//! expect = "ask"
//! ```
//!
//! Unknown keys, a wrong `version`, an invalid regex or glob, a title regex on an allow rule,
//! duplicate rule ids: each is an error naming the file, the line and the fix.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toml::Spanned;

use super::paths::{GlobError, GlobOptions, cut_for_error, glob_set};

/// What a rule (or the default) says about a permission request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Allow,
    Ask,
    Deny,
}

impl Decision {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where something was written: for error messages and reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub file: PathBuf,
    pub line: usize,
}

impl Serialize for Origin {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file.display(), self.line)
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{origin}: {message}")]
pub struct PolicyError {
    pub origin: Origin,
    pub message: String,
}

/// Why a rule, one of its patterns or a policy file's text is refused: the message the user
/// reads after the file, the line and the rule.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum RuleError {
    #[error("path pattern `{shown}` {}", .error.reason())]
    Pattern { shown: String, error: GlobError },
    #[error("path patterns: {0}")]
    Patterns(GlobError),
    #[error("unclosed `${{` in `{shown}`: close it, as in ${{cwd}}")]
    UnclosedVariable { shown: String },
    #[error("unknown variable `${{{name}}}` in `{shown}`: use ${{cwd}} or ${{home}}")]
    UnknownVariable { name: String, shown: String },
    #[error(
        "path pattern `{0}` is relative and would never match an absolute path: write `${{cwd}}/{0}`"
    )]
    RelativePattern(String),
    #[error(
        "`title` may only be used on deny and ask rules: a title is the agent's prose, not evidence of what the tool does"
    )]
    TitleOnAllow,
    #[error("`allow_always` only makes sense on an allow rule")]
    AllowAlwaysNotAllow,
    #[error("an allow rule must say what it allows: give `kind`, `paths`, `input` or `command`")]
    AllowsNothing,
    #[error("invalid `title` regex: {0}")]
    TitleRegex(regex::Error),
    #[error(
        "`options` and `env` grant what an allow rule would refuse: they only make sense on an allow rule"
    )]
    GrantsNotAllow,
    #[error("`options` and `env` apply to a rule's `command`: add `command`")]
    GrantsWithoutCommand,
    #[error("`options` entry `{0}` must be one option name like \"--output\" or \"-c\"")]
    OptionName(String),
    #[error("`env` entry `{0}` is not a variable name: write names like \"RUST_LOG\"")]
    EnvName(String),
    #[error("input key `{0}` is not a JSON pointer: write `/{0}`")]
    InputKey(String),
    #[error("invalid regex for `{pointer}`: {error}")]
    InputRegex {
        pointer: String,
        error: regex::Error,
    },
    #[error(
        "`command` must be a prefix like [\"cargo\", \"test\"] or a list of them; a word may be a list of alternatives like [\"git\", [\"status\", \"diff\"]]"
    )]
    CommandShape,
    #[error("the id is already used at {0}")]
    IdUsed(Origin),
}

/// Why a file's text cannot be read (a policy file, a request given to `policy check`).
#[derive(Debug, thiserror::Error)]
pub(crate) enum FileError {
    #[error("cannot read the {what}: {source}")]
    Unreadable {
        what: &'static str,
        source: std::io::Error,
    },
    #[error("not a {what}: a regular file is needed (not a directory, pipe or device)")]
    NotRegular { what: &'static str },
    #[error("the {what} is {size} bytes: at most {max} are read")]
    TooBig {
        what: &'static str,
        size: u64,
        max: u64,
    },
}

/// A compiled rule.
#[derive(Debug, Clone)]
pub struct Rule {
    pub id: String,
    pub decision: Decision,
    pub reason: Option<String>,
    pub kinds: Option<Vec<String>>,
    pub title: Option<Regex>,
    /// Glob patterns, `${cwd}` and `${home}` still in them (they are per session).
    pub paths: Option<Vec<String>>,
    pub input: Vec<(String, InputMatcher)>,
    /// Allowed command prefixes: each a list of words, each word a set of alternatives.
    pub command: Option<Vec<Vec<Vec<String>>>>,
    /// Options from the command table this allow rule grants anyway (`--output`, `CC=`).
    pub options: Vec<String>,
    /// Environment variables a command may be given (`RUST_LOG`), by name.
    pub env: Vec<String>,
    pub allow_always: bool,
    pub origin: Origin,
}

#[derive(Debug, Clone)]
pub enum InputMatcher {
    Equals(Value),
    /// Must match the whole string value.
    Regex(Regex),
}

/// A `[[test]]` block: a request and the decision it must get.
#[derive(Debug, Clone)]
pub struct PolicyTest {
    pub name: String,
    pub request: Value,
    pub cwd: Option<String>,
    pub agent: Option<String>,
    pub expect: Decision,
    pub rule: Option<String>,
    pub option: Option<String>,
    pub origin: Origin,
}

/// A rule's `match` / `not_match` example: a tool call, and whether the rule must match it.
#[derive(Debug, Clone)]
pub struct RuleExample {
    pub rule: String,
    pub tool_call: Value,
    pub should_match: bool,
    pub origin: Origin,
}

/// The cwd that examples and tests without a `cwd` are evaluated in. It does not exist, so no
/// symlink on the machine running the tests can change the outcome.
pub const EXAMPLE_CWD: &str = "/home/user/project";

/// One or more policy files, in order.
#[derive(Debug, Clone)]
pub struct PolicySet {
    pub rules: Vec<Rule>,
    pub default: Decision,
    pub files: Vec<PathBuf>,
    /// Identifies the exact text of the files (SHA-256 of their contents, in order).
    pub hash: String,
    pub tests: Vec<PolicyTest>,
    pub examples: Vec<RuleExample>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSpec {
    version: Spanned<i64>,
    #[serde(default)]
    default: Option<Decision>,
    #[serde(default)]
    rule: Vec<Spanned<RuleSpec>>,
    #[serde(default)]
    test: Vec<Spanned<TestSpec>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleSpec {
    id: String,
    decision: Decision,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    kind: Option<OneOrMany>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    paths: Option<Vec<String>>,
    #[serde(default)]
    input: Option<BTreeMap<String, InputSpec>>,
    #[serde(default)]
    command: Option<Vec<toml::Value>>,
    #[serde(default)]
    options: Vec<String>,
    #[serde(default)]
    env: Vec<String>,
    #[serde(default)]
    allow_always: bool,
    #[serde(default, rename = "match")]
    matches: Vec<toml::Value>,
    #[serde(default)]
    not_match: Vec<toml::Value>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RegexSpec {
    regex: String,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum InputSpec {
    Regex(RegexSpec),
    Value(toml::Value),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TestSpec {
    #[serde(default)]
    name: Option<String>,
    request: toml::Value,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    agent: Option<String>,
    expect: Decision,
    #[serde(default)]
    rule: Option<String>,
    #[serde(default)]
    option: Option<String>,
}

/// Converts TOML to JSON (a request or tool call written in TOML).
pub(crate) fn toml_to_json(value: &toml::Value) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Substitutes `${cwd}` and `${home}`, escaped for a glob; any other `${...}` is an error.
pub(crate) fn expand(
    pattern: &str,
    cwd: Option<&str>,
    home: Option<&str>,
) -> Result<Option<String>, RuleError> {
    crate::policy::paths::too_long(pattern).map_err(|error| RuleError::Pattern {
        shown: cut_for_error(pattern),
        error,
    })?;
    let mut out = String::new();
    let mut rest = pattern;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let end = rest[start..]
            .find('}')
            .ok_or_else(|| RuleError::UnclosedVariable {
                shown: cut_for_error(pattern),
            })?;
        let value = match &rest[start + 2..start + end] {
            "cwd" => cwd,
            "home" => home,
            other => {
                return Err(RuleError::UnknownVariable {
                    name: cut_for_error(other),
                    shown: cut_for_error(pattern),
                });
            }
        };
        match value {
            Some(v) => out.push_str(&crate::policy::paths::escape_glob(v.trim_end_matches('/'))),
            None => return Ok(None),
        }
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    Ok(Some(out))
}

/// Builds the matcher for a set of path patterns once `${cwd}` and `${home}` are known.
/// Deny and ask rules match without regard to case (`.ENV` is `.env` on macOS).
pub(crate) fn compile_globs(
    patterns: &[String],
    cwd: Option<&str>,
    home: Option<&str>,
    case_insensitive: bool,
) -> Result<globset::GlobSet, RuleError> {
    let options = GlobOptions {
        literal_separator: true,
        backslash_escape: true,
        case_insensitive,
    };
    // Each pattern as written, and the globs it stands for.
    let mut expanded: Vec<(&String, Vec<String>)> = Vec::new();
    for pattern in patterns {
        let Some(glob) = expand(pattern, cwd, home)? else {
            // A variable with no value (no known cwd): the pattern can match nothing.
            continue;
        };
        // `dir/**` means the directory and everything in it.
        let itself = glob
            .strip_suffix("/**")
            .filter(|d| !d.is_empty())
            .map(str::to_owned);
        expanded.push((pattern, std::iter::once(glob).chain(itself).collect()));
    }
    let texts: Vec<&str> = expanded
        .iter()
        .flat_map(|(_, globs)| globs.iter().map(String::as_str))
        .collect();
    glob_set(&texts, options).map_err(|error| {
        // Name the pattern as written (the file's text, not its expansion).
        let (pattern, error) = expanded
            .iter()
            .find_map(|(pattern, globs)| {
                let globs: Vec<&str> = globs.iter().map(String::as_str).collect();
                glob_set(&globs, options).err().map(|e| (*pattern, e))
            })
            .map_or((None, error.clone()), |(p, e)| (Some(p), e));
        match pattern {
            Some(pattern) => RuleError::Pattern {
                shown: cut_for_error(pattern),
                error,
            },
            None => RuleError::Patterns(error),
        }
    })
}

/// Directory names a pattern is tried with when it is loaded: every character a glob gives a
/// meaning to, so a pattern that compiles here compiles in every session.
const AWKWARD_DIRS: [&str; 2] = ["/c w[d]{a,b}*?!\\", "/h[o{m,e"];

/// The most a policy file may hold.
const MAX_POLICY_BYTES: u64 = 1 << 20;

/// A policy file's text: a regular file (not a pipe or a device, which could block or never
/// end) of at most 1 MiB.
fn read_policy_file(path: &Path) -> Result<String, FileError> {
    read_regular_file(path, "policy file", MAX_POLICY_BYTES)
}

/// The text of the regular file at `path`, `what` by name, of at most `max` bytes: a pipe, a
/// device (`/dev/zero`) or a directory is refused before anything is read.
pub(crate) fn read_regular_file(
    path: &Path,
    what: &'static str,
    max: u64,
) -> Result<String, FileError> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let unreadable = |source| FileError::Unreadable { what, source };
    // Non-blocking: opening a named pipe would otherwise wait for a writer.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(unreadable)?;
    let meta = file.metadata().map_err(unreadable)?;
    if !meta.is_file() {
        return Err(FileError::NotRegular { what });
    }
    if meta.len() > max {
        return Err(FileError::TooBig {
            what,
            size: meta.len(),
            max,
        });
    }
    let mut text = String::new();
    file.take(max + 1)
        .read_to_string(&mut text)
        .map_err(unreadable)?;
    Ok(text)
}

impl PolicySet {
    /// Loads and checks policy files. Examples and tests are parsed here; running them is
    /// `Policy::self_check`.
    pub(crate) fn load(files: &[PathBuf]) -> Result<PolicySet, PolicyError> {
        use sha2::Digest;
        let mut set = PolicySet {
            rules: Vec::new(),
            default: Decision::Allow,
            files: files.to_vec(),
            hash: String::new(),
            tests: Vec::new(),
            examples: Vec::new(),
        };
        let mut hasher = sha2::Sha256::new();
        let mut defaults = Vec::new();
        for file in files {
            let text = read_policy_file(file).map_err(|error| PolicyError {
                origin: Origin {
                    file: file.clone(),
                    line: 0,
                },
                message: error.to_string(),
            })?;
            hasher.update(text.as_bytes());
            defaults.push(set.add_file(file, &text)?);
        }
        // Several files: the most cautious default wins.
        set.default = defaults.into_iter().max().unwrap_or(Decision::Ask);
        set.hash = hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Ok(set)
    }

    /// One file's text as a policy (no file is read): for `policy suggest`, which checks the
    /// policy it writes, and the fuzz tests.
    pub(crate) fn parse_text(file: &Path, text: &str) -> Result<PolicySet, PolicyError> {
        let mut set = PolicySet {
            rules: Vec::new(),
            default: Decision::Ask,
            files: vec![file.to_owned()],
            hash: String::new(),
            tests: Vec::new(),
            examples: Vec::new(),
        };
        set.default = set.add_file(file, text)?;
        Ok(set)
    }

    fn add_file(&mut self, file: &Path, text: &str) -> Result<Decision, PolicyError> {
        let at = |offset: usize| Origin {
            file: file.to_owned(),
            line: line_of(text, offset),
        };
        let spec: FileSpec = toml::from_str(text).map_err(|e| PolicyError {
            origin: at(e.span().map(|s| s.start).unwrap_or(0)),
            message: e.message().to_owned(),
        })?;
        if *spec.version.get_ref() != 1 {
            return Err(PolicyError {
                origin: at(spec.version.span().start),
                message: format!(
                    "unsupported version {}: this acptap reads version = 1",
                    spec.version.get_ref()
                ),
            });
        }
        for rule in spec.rule {
            let origin = at(rule.span().start);
            let rule = rule.into_inner();
            let err = |error: RuleError| PolicyError {
                origin: origin.clone(),
                message: format!("rule `{}`: {error}", rule.id),
            };
            if rule.id.trim().is_empty() {
                return Err(PolicyError {
                    origin: origin.clone(),
                    message: "a rule needs a non-empty `id`".into(),
                });
            }
            if let Some(other) = self.rules.iter().find(|r| r.id == rule.id) {
                return Err(err(RuleError::IdUsed(other.origin.clone())));
            }
            let compiled = compile_rule(&rule, origin.clone()).map_err(err)?;
            for (examples, should_match) in [(&rule.matches, true), (&rule.not_match, false)] {
                for example in examples {
                    self.examples.push(RuleExample {
                        rule: rule.id.clone(),
                        tool_call: toml_to_json(example),
                        should_match,
                        origin: origin.clone(),
                    });
                }
            }
            self.rules.push(compiled);
        }
        for (n, test) in spec.test.into_iter().enumerate() {
            let origin = at(test.span().start);
            let test = test.into_inner();
            let request = match &test.request {
                toml::Value::String(json) => {
                    serde_json::from_str(json).map_err(|e| PolicyError {
                        origin: origin.clone(),
                        message: format!("test request is not valid JSON: {e}"),
                    })?
                }
                other => toml_to_json(other),
            };
            self.tests.push(PolicyTest {
                name: test.name.unwrap_or_else(|| format!("test {}", n + 1)),
                request,
                cwd: test.cwd,
                agent: test.agent,
                expect: test.expect,
                rule: test.rule,
                option: test.option,
                origin,
            });
        }
        Ok(spec.default.unwrap_or(Decision::Ask))
    }
}

fn compile_rule(rule: &RuleSpec, origin: Origin) -> Result<Rule, RuleError> {
    if rule.decision == Decision::Allow && rule.title.is_some() {
        return Err(RuleError::TitleOnAllow);
    }
    if rule.allow_always && rule.decision != Decision::Allow {
        return Err(RuleError::AllowAlwaysNotAllow);
    }
    if rule.decision == Decision::Allow
        && rule.kind.is_none()
        && rule.paths.is_none()
        && rule.input.is_none()
        && rule.command.is_none()
    {
        return Err(RuleError::AllowsNothing);
    }
    let kinds = rule.kind.as_ref().map(|k| match k {
        OneOrMany::One(k) => vec![k.clone()],
        OneOrMany::Many(ks) => ks.clone(),
    });
    let title = rule
        .title
        .as_deref()
        .map(|t| Regex::new(t).map_err(RuleError::TitleRegex))
        .transpose()?;
    if let Some(paths) = &rule.paths {
        for pattern in paths {
            let expanded = expand(pattern, Some("/cwd"), Some("/home"))?.unwrap_or_default();
            if !expanded.starts_with('/') && !expanded.starts_with('*') {
                return Err(RuleError::RelativePattern(pattern.clone()));
            }
        }
        compile_globs(paths, Some(AWKWARD_DIRS[0]), Some(AWKWARD_DIRS[1]), false)?;
        compile_globs(paths, Some("/cwd"), Some("/home"), true)?;
    }
    if rule.decision != Decision::Allow && (!rule.options.is_empty() || !rule.env.is_empty()) {
        return Err(RuleError::GrantsNotAllow);
    }
    if (!rule.options.is_empty() || !rule.env.is_empty()) && rule.command.is_none() {
        return Err(RuleError::GrantsWithoutCommand);
    }
    for option in &rule.options {
        if option.is_empty() || option.contains(char::is_whitespace) {
            return Err(RuleError::OptionName(option.clone()));
        }
    }
    for name in &rule.env {
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(RuleError::EnvName(name.clone()));
        }
    }
    let mut input = Vec::new();
    for (pointer, spec) in rule.input.iter().flatten() {
        if !pointer.is_empty() && !pointer.starts_with('/') {
            return Err(RuleError::InputKey(pointer.clone()));
        }
        input.push((
            pointer.clone(),
            match spec {
                InputSpec::Regex(r) => {
                    InputMatcher::Regex(Regex::new(&format!("^(?:{})$", r.regex)).map_err(
                        |error| RuleError::InputRegex {
                            pointer: pointer.clone(),
                            error,
                        },
                    )?)
                }
                InputSpec::Value(v) => InputMatcher::Equals(toml_to_json(v)),
            },
        ));
    }
    let command = rule
        .command
        .as_ref()
        .map(|c| parse_prefixes(c))
        .transpose()?;
    Ok(Rule {
        id: rule.id.clone(),
        decision: rule.decision,
        reason: rule.reason.clone(),
        kinds,
        title,
        paths: rule.paths.clone(),
        input,
        command,
        options: rule.options.clone(),
        env: rule.env.clone(),
        allow_always: rule.allow_always,
        origin,
    })
}

/// `["cargo", "test"]` is one prefix; `[["cargo", "test"], ["git", ["status", "diff"]]]` is two.
/// A word is a string or a list of alternatives.
fn parse_prefixes(value: &[toml::Value]) -> Result<Vec<Vec<Vec<String>>>, RuleError> {
    let bad = || RuleError::CommandShape;
    let prefixes: Vec<&[toml::Value]> = match value.first() {
        Some(toml::Value::String(_)) => vec![value],
        Some(toml::Value::Array(_)) => value
            .iter()
            .map(|p| p.as_array().map(Vec::as_slice).ok_or_else(bad))
            .collect::<Result<_, _>>()?,
        _ => return Err(bad()),
    };
    prefixes
        .into_iter()
        .map(|prefix| {
            if prefix.is_empty() {
                return Err(bad());
            }
            prefix
                .iter()
                .map(|word| match word {
                    toml::Value::String(w) => Ok(vec![w.clone()]),
                    toml::Value::Array(alternatives) if !alternatives.is_empty() => alternatives
                        .iter()
                        .map(|a| a.as_str().map(str::to_owned).ok_or_else(bad))
                        .collect(),
                    _ => Err(bad()),
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_text(text: &str) -> Result<PolicySet, PolicyError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy.toml");
        std::fs::write(&path, text).unwrap();
        PolicySet::load(&[path])
    }

    fn error(text: &str) -> String {
        load_text(text).expect_err("an error").to_string()
    }

    #[test]
    fn unknown_key_is_named_with_its_line() {
        let e =
            error("version = 1\n\n[[rule]]\nid = \"a\"\ndecision = \"deny\"\nkindd = \"read\"\n");
        assert!(e.contains("policy.toml:6"), "{e}");
        assert!(e.contains("kindd"), "{e}");
    }

    #[test]
    fn semantic_errors_name_the_rule_and_its_line() {
        let e =
            error("version = 1\n[[rule]]\nid = \"x\"\ndecision = \"allow\"\ntitle = \"safe\"\n");
        assert!(
            e.contains(":2:") && e.contains("rule `x`") && e.contains("title"),
            "{e}"
        );
        let e =
            error("version = 1\n[[rule]]\nid = \"x\"\ndecision = \"deny\"\npaths = [\"src/**\"]\n");
        assert!(e.contains("${cwd}/src/**"), "{e}");
        let e = error(
            "version = 1\n[[rule]]\nid = \"x\"\ndecision = \"deny\"\npaths = [\"${pwd}/**\"]\n",
        );
        assert!(e.contains("unknown variable"), "{e}");
        let e = error("version = 2\n");
        assert!(e.contains(":1:") && e.contains("version"), "{e}");
        let e = error("version = 1\n[[rule]]\nid = \"x\"\ndecision = \"allow\"\n");
        assert!(e.contains("must say what it allows"), "{e}");
        let e = error(
            "version = 1\n[[rule]]\nid = \"x\"\ndecision = \"deny\"\nkind = \"a\"\n[[rule]]\nid = \"x\"\ndecision = \"ask\"\nkind = \"b\"\n",
        );
        assert!(
            e.contains(":6:") && e.contains("already used at") && e.contains(":2"),
            "{e}"
        );
        let e = error(
            "version = 1\n[[rule]]\nid = \"x\"\ndecision = \"deny\"\ninput = { \"/a\" = { regex = \"(\" } }\n",
        );
        assert!(e.contains("invalid regex"), "{e}");
        let e = error("version = 1\n[[rule]]\nid = \"x\"\ndecision = \"allow\"\ncommand = [1]\n");
        assert!(e.contains("`command` must be"), "{e}");
    }

    #[test]
    fn command_prefix_forms() {
        let one = parse_prefixes(&[toml::Value::from("cargo"), toml::Value::from("test")]).unwrap();
        assert_eq!(
            one,
            vec![vec![vec!["cargo".to_owned()], vec!["test".to_owned()]]]
        );
        let text = "version = 1\n[[rule]]\nid = \"x\"\ndecision = \"allow\"\ncommand = [[\"cargo\", \"test\"], [\"git\", [\"status\", \"diff\"]]]\n";
        let set = load_text(text).unwrap();
        let prefixes = set.rules[0].command.clone().unwrap();
        assert_eq!(prefixes.len(), 2);
        assert_eq!(prefixes[1][1], vec!["status".to_owned(), "diff".to_owned()]);
    }

    #[test]
    fn most_cautious_default_wins_and_hash_identifies_the_text() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.toml");
        let b = dir.path().join("b.toml");
        std::fs::write(&a, "version = 1\ndefault = \"allow\"\n").unwrap();
        std::fs::write(&b, "version = 1\ndefault = \"deny\"\n").unwrap();
        let set = PolicySet::load(&[a.clone(), b]).unwrap();
        assert_eq!(set.default, Decision::Deny);
        assert_eq!(set.hash.len(), 64);
        let again = PolicySet::load(std::slice::from_ref(&a)).unwrap();
        assert_ne!(again.hash, set.hash);
    }

    #[test]
    fn expands_variables() {
        assert_eq!(
            expand("${cwd}/**", Some("/p/"), None),
            Ok(Some("/p/**".into()))
        );
        assert_eq!(
            expand("${cwd}/**", Some("/p[1 {a,b}"), None),
            Ok(Some("/p[[]1 [{]a[,]b[}]/**".into()))
        );
        assert_eq!(expand("${home}/.ssh/*", None, None), Ok(None));
    }
}
