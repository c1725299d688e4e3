//! Paths as a rule sees them: every path a tool call touches, made absolute against the session's
//! cwd, with `.` and `..` resolved and symlinks followed where they exist (as `realpath` would),
//! so that `${cwd}/**` cannot be escaped by `../` or by a link pointing out of the project.
//!
//! A path that does not exist (yet) is resolved as far as it exists; the rest is taken lexically.
//! Every look at the disk goes through a [`FileSystem`].
//!
//! [`containment`] is the one test of whether a path lies in a directory, by text or on disk,
//! for the guards and for the replay's fences.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use super::agents::Dialect;
use super::filesystem::FileSystem;

/// rawInput keys whose string value is a path the tool touches. Agents name them differently
/// (claude: `file_path`, `notebook_path`, `path`; codex: `cwd`, and the keys of `changes`).
const PATH_KEYS: &[&str] = &[
    "path",
    "file_path",
    "filePath",
    "file",
    "filename",
    "notebook_path",
    "directory",
    "dir",
    "cwd",
    "target",
    "source",
    "destination",
    "old_path",
    "new_path",
    "move_path",
    "abs_path",
];

/// How many symlinks one path may go through before it is declared a loop.
const MAX_SYMLINKS: usize = 40;

/// rawInput keys that hold text, not paths, whatever their value looks like.
const TEXT_KEYS: &[&str] = &[
    "command",
    "description",
    "content",
    "old_string",
    "new_string",
    "oldText",
    "newText",
    "old_str",
    "new_str",
    "query",
    "prompt",
    "url",
    "title",
    "text",
    "reason",
    "justification",
    "explanation",
    "unified_diff",
    "diff",
    "patch",
    "input",
    "todos",
    "plan",
    "parsed_cmd",
    "proposed_execpolicy_amendment",
    "available_decisions",
    "env",
];

/// Fragments of a key name that say it holds a path (`absolute_path`, `target_file`,
/// `output_dir`, `file_paths`, ...).
const PATH_KEY_FRAGMENTS: &[&str] = &[
    "path", "file", "dir", "folder", "cwd", "target", "dest", "source", "src", "location", "root",
];

/// The stand-in for "a directory somewhere below the session's cwd"
/// ([`super::agents::Unnamed::InsideSessionCwd`]):
/// checked against a rule's bounds beside the cwd itself, so that only bounds that hold every
/// directory below it (`${cwd}/**`) allow the command.
pub(crate) const ANY_DIRECTORY_BELOW: &str = "<any directory below>";

/// Every path a tool call names, as written.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct RawPaths {
    pub paths: Vec<String>,
    /// Keys whose value should be a path but is not a string (or a list of strings).
    pub unreadable: Vec<String>,
    /// rawInput keys read as paths by their name's shape or their value's, not by a known name.
    pub unrecognised: Vec<String>,
}

/// The raw path strings of a tool call: its locations, the paths of its diffs, and the path-like
/// fields of its rawInput: the known names ([`PATH_KEYS`]), `paths` arrays, the keys of a
/// `changes` map, and, so that a new name is never a way around a rule, any other key whose
/// name looks like a path's ([`PATH_KEY_FRAGMENTS`]) or whose string value is absolute, starts
/// with `~` or climbs with `..`.
pub(crate) fn tool_call_paths(
    locations: Option<&Value>,
    content: Option<&Value>,
    raw_input: Option<&Value>,
) -> RawPaths {
    let mut found = Found::default();
    for location in locations.and_then(Value::as_array).into_iter().flatten() {
        match location.get("path") {
            Some(Value::String(p)) => found.push(p),
            Some(_) | None => found.out.unreadable.push("locations[].path".into()),
        }
    }
    for item in content.and_then(Value::as_array).into_iter().flatten() {
        found.content_item(item);
    }
    found.raw_input(raw_input);
    found.out
}

/// The paths of a tool call as [`tool_call_paths`] finds them.
#[derive(Default)]
struct Found {
    out: RawPaths,
    /// Each path once, in the order first named; a set keeps this linear in the locations.
    seen: std::collections::HashSet<String>,
}

impl Found {
    fn push(&mut self, p: &str) {
        if self.seen.insert(p.to_owned()) {
            self.out.paths.push(p.to_owned());
        }
    }

    /// The paths of one item of the call's content.
    fn content_item(&mut self, item: &Value) {
        match item.get("type").and_then(Value::as_str) {
            Some("diff") => self.diff(item),
            // A resource shown with the call names a file too (`file:///etc/passwd`).
            Some("content") => {
                let block = item.get("content");
                let uri = block.and_then(|b| b.get("uri")).or_else(|| {
                    block
                        .and_then(|b| b.get("resource"))
                        .and_then(|r| r.get("uri"))
                });
                if let Some(uri) = uri {
                    match uri.as_str() {
                        Some(uri) => self.push(uri),
                        None => self.out.unreadable.push("content[].content.uri".into()),
                    }
                }
            }
            Some("resource_link") => match item.get("uri").and_then(Value::as_str) {
                Some(uri) => self.push(uri),
                None => self.out.unreadable.push("content[].uri".into()),
            },
            // A terminal reference names a terminal, not a file.
            Some("terminal") => {}
            // A custom or future item (`_custom`, an unknown type) may name files anyhow.
            _ => self.other_paths(item, &["type", "_meta"], "content[]"),
        }
    }

    /// A diff item. v1: the diff's `path`. v2: `changes[]` (`path`, and `oldPath` of a move or
    /// copy), and the file names in the optional `patch` text, which a client may render. Any
    /// other key that names a path (`oldPath` beside `path`, a custom field) counts too.
    fn diff(&mut self, item: &Value) {
        let has_changes = item.get("changes").is_some();
        match item.get("path") {
            Some(Value::String(p)) => self.push(p),
            None if has_changes => {}
            _ => self.out.unreadable.push("content[].path".into()),
        }
        if has_changes {
            match diff_v2_paths(item) {
                Ok(paths) => paths.iter().for_each(|p| self.push(p)),
                Err(key) => self.out.unreadable.push(key.into()),
            }
        }
        self.other_paths(item, DIFF_KEYS, "content[]");
    }

    /// The rawInput's path-like fields; a rawInput that is not an object (nor absent) is
    /// unreadable.
    fn raw_input(&mut self, raw_input: Option<&Value>) {
        let input = match raw_input {
            Some(Value::Object(input)) => input,
            None | Some(Value::Null) => return,
            // A rawInput that is a bare string or list could be a path or anything: unreadable.
            Some(_) => {
                self.out.unreadable.push("rawInput".into());
                return;
            }
        };
        for (key, value) in input {
            self.input_field(key, value);
        }
    }

    /// One field of the rawInput: its key when it is itself a path, the keys of a `changes`
    /// map, and what its value names unless the key holds text ([`TEXT_KEYS`]).
    fn input_field(&mut self, key: &str, value: &Value) {
        let known = PATH_KEYS.contains(&key) || key == "paths";
        // A key that is itself a path (`{"/home/u/.bashrc": "x"}`) names it, as a value would.
        if looks_like_a_path(key) {
            self.out.unrecognised.push(key.to_owned());
            self.push(key);
        }
        if key == "changes" {
            self.changes(key, value);
            return;
        }
        if TEXT_KEYS.contains(&key) {
            return;
        }
        self.input_value(key, value, known);
    }

    /// codex's `changes` map: each changed path, and where a change moves it.
    fn changes(&mut self, key: &str, value: &Value) {
        match value {
            Value::Object(changes) => {
                for (p, change) in changes {
                    self.push(p);
                    match change.get("move_path") {
                        Some(Value::String(moved)) => self.push(moved),
                        None | Some(Value::Null) => {}
                        Some(_) => self.out.unreadable.push("changes.move_path".into()),
                    }
                }
            }
            Value::Null => {}
            _ => self.out.unreadable.push(key.to_owned()),
        }
    }

    /// What the value of a rawInput field names: a string or a list of strings when the key
    /// is `known`, is named like a path or one of them looks like one; otherwise the paths
    /// nested in it, which an unreadable value (never allowed) keeps visible to deny rules and
    /// guards.
    fn input_value(&mut self, key: &str, value: &Value, known: bool) {
        let lower = key.to_ascii_lowercase();
        let named_like_a_path = PATH_KEY_FRAGMENTS.iter().any(|f| lower.contains(f));
        let strings: Option<Vec<&str>> = match value {
            Value::String(s) => Some(vec![s.as_str()]),
            Value::Array(items) => items.iter().map(Value::as_str).collect(),
            Value::Null => Some(Vec::new()),
            _ => None,
        };
        match strings {
            Some(strings) => {
                let take =
                    known || named_like_a_path || strings.iter().any(|s| looks_like_a_path(s));
                if !take {
                    return;
                }
                if !known {
                    self.out.unrecognised.push(key.to_owned());
                }
                for s in strings {
                    self.push(s);
                }
            }
            None if known || named_like_a_path => {
                // Never allowed; what it names inside is still seen by deny rules and guards
                // (`{"roots": {"~/.ssh": {...}}}`).
                self.out.unreadable.push(key.to_owned());
                let mut nested = Vec::new();
                nested_paths(value, 0, true, &mut nested);
                for s in nested {
                    self.push(s);
                }
            }
            None => {
                // A path one level down (`{"where": {"deep": "/etc/shadow"}}`) is still a path.
                let mut nested = Vec::new();
                if !nested_paths(value, 0, false, &mut nested) {
                    self.out.unreadable.push(key.to_owned());
                } else if !nested.is_empty() {
                    self.out.unrecognised.push(key.to_owned());
                    for s in nested {
                        self.push(s);
                    }
                }
            }
        }
    }

    /// The path-like strings of a content item's keys other than `skip` (see [`nested_paths`]).
    fn other_paths(&mut self, item: &Value, skip: &[&str], what: &str) {
        let Value::Object(fields) = item else {
            return;
        };
        for (key, value) in fields {
            if skip.contains(&key.as_str()) {
                continue;
            }
            let mut nested = Vec::new();
            if !field_paths(key, value, &mut nested) {
                self.out.unreadable.push(format!("{what}.{key}"));
                continue;
            }
            for p in nested {
                self.out.unrecognised.push(format!("{what}.{key}"));
                self.push(p);
            }
        }
    }
}

/// The paths of a v2 diff item: each change's `path` and `oldPath`, and the file names of its
/// `patch` text (`diff --git A B`, `rename`/`copy from`/`to`, `---`/`+++` headers). The patch
/// must agree with the changes: a `diff --git` line that cannot be read as two of their paths,
/// like a change without a string path, makes the item unreadable (`Err(key)`), so a request
/// whose patch shows one file while its changes name another is never allowed on either.
fn diff_v2_paths(item: &Value) -> Result<Vec<String>, &'static str> {
    let Some(Value::Array(changes)) = item.get("changes") else {
        return Err("content[].changes");
    };
    let mut paths = Vec::new();
    for change in changes {
        match change.get("path") {
            Some(Value::String(p)) => paths.push(p.clone()),
            _ => return Err("content[].changes[].path"),
        }
        match change.get("oldPath") {
            Some(Value::String(p)) => paths.push(p.clone()),
            None | Some(Value::Null) => {}
            Some(_) => return Err("content[].changes[].oldPath"),
        }
        // Any other field naming a path (`old_path`, a custom `source`) is one more.
        let Value::Object(fields) = change else {
            return Err("content[].changes[]");
        };
        for (key, value) in fields {
            if matches!(key.as_str(), "path" | "oldPath" | "_meta") {
                continue;
            }
            let mut nested = Vec::new();
            if !field_paths(key, value, &mut nested) {
                return Err("content[].changes[]");
            }
            paths.extend(nested.into_iter().map(str::to_owned));
        }
    }
    let text = match item.get("patch") {
        None | Some(Value::Null) => return Ok(paths),
        Some(patch) => match patch.get("text") {
            Some(Value::String(text)) => text,
            _ => return Err("content[].patch.text"),
        },
    };
    let known = |p: &str| p == "/dev/null" || paths.iter().any(|q| q == p);
    let mut named = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            // Paths may hold spaces: find the split where both halves are changed paths.
            let split = rest
                .match_indices(' ')
                .map(|(i, _)| (&rest[..i], &rest[i + 1..]))
                .find(|(a, b)| known(a) && known(b));
            if split.is_none() {
                return Err("content[].patch.text");
            }
        } else if let Some(path) = ["rename from ", "rename to ", "copy from ", "copy to "]
            .iter()
            .find_map(|prefix| line.strip_prefix(prefix))
            .or_else(|| {
                // Hunk lines start with ' ', '+' or '-': a removed line "-- /x" reads as a
                // header too, which only ever adds a path (asks more, never allows more).
                ["--- ", "+++ "]
                    .iter()
                    .find_map(|prefix| line.strip_prefix(prefix))
                    .filter(|p| p.starts_with('/'))
            })
        {
            let path = path.split('\t').next().unwrap_or(path);
            if path != "/dev/null" {
                named.push(path.to_owned());
            }
        }
    }
    paths.extend(named);
    Ok(paths)
}

/// The keys of a diff item that [`tool_call_paths`] reads itself (or that hold text).
const DIFF_KEYS: &[&str] = &[
    "type", "path", "oldText", "newText", "changes", "patch", "_meta",
];

/// The path-like strings of one field, read as [`nested_paths`] reads an object's fields.
fn field_paths<'a>(key: &str, value: &'a Value, out: &mut Vec<&'a str>) -> bool {
    if TEXT_KEYS.contains(&key) {
        return true;
    }
    let lower = key.to_ascii_lowercase();
    let named = PATH_KEY_FRAGMENTS.iter().any(|f| lower.contains(f));
    match value {
        Value::String(s) if named => {
            out.push(s);
            true
        }
        _ => nested_paths(value, 1, named, out),
    }
}

/// How deep [`nested_paths`] looks; anything deeper is unreadable.
const MAX_NESTING: usize = 8;

fn looks_like_a_path(s: &str) -> bool {
    s.starts_with(['/', '~']) || s.starts_with("..") || s.contains("/..") || url_scheme(s).is_some()
}

/// Collects the path-like strings inside an object or array of a rawInput value (skipping
/// [`TEXT_KEYS`], taking every string under a key named like a path), and the object keys that
/// are paths: a key shaped like one (`{"edits": {"/root/.ssh/authorized_keys": {...}}}`), and
/// any key of an object that a key named like a path holds (`{"files": {"escape/x": {...}}}`),
/// exactly as a string value in those places would be. `named`: the value is held by a key
/// named like a path (through lists). `false` when the value nests deeper than [`MAX_NESTING`].
fn nested_paths<'a>(value: &'a Value, depth: usize, named: bool, out: &mut Vec<&'a str>) -> bool {
    if depth > MAX_NESTING {
        return false;
    }
    match value {
        Value::String(s) if named || looks_like_a_path(s) => out.push(s),
        Value::Array(items) => {
            return items
                .iter()
                .all(|item| nested_paths(item, depth + 1, named, out));
        }
        Value::Object(map) => {
            for (key, item) in map {
                if named || looks_like_a_path(key) {
                    out.push(key);
                }
                if TEXT_KEYS.contains(&key.as_str()) {
                    continue;
                }
                let lower = key.to_ascii_lowercase();
                let key_named = PATH_KEY_FRAGMENTS.iter().any(|f| lower.contains(f));
                if let (Value::String(s), true) = (item, key_named) {
                    out.push(s);
                } else if !nested_paths(item, depth + 1, key_named, out) {
                    return false;
                }
            }
        }
        _ => {}
    }
    true
}

/// Where a command says it runs: the rawInput keys the agent's dialect names a working directory
/// with ([`Dialect::workdir_keys`]), and, for gemini-cli, the directory at the start of a shell
/// call's content text: `[current working directory DIR]` (the agent's cwd) or `[in DIR]` (the
/// tool's `dir_path`, maybe relative). A content text that opens with another bracketed form
/// naming a path, or whose directory cannot be told apart from what follows it (a `]` inside),
/// cannot be placed: `Err(key)`, as for a value that is not a string, so the call is never
/// allowed on the session's cwd. From any other agent, a content text that opens with a
/// bracketed directory cannot be placed either: its content is not where it says it runs (it is
/// the model's description of the call in Claude Code), and an agent that works like gemini-cli
/// under another name would run the command there.
pub(crate) fn workdirs(
    raw_input: Option<&Value>,
    content: Option<&Value>,
    dialect: &Dialect,
) -> Vec<Result<String, String>> {
    let mut out = Vec::new();
    if let Some(input) = raw_input.and_then(Value::as_object) {
        for key in dialect.workdir_keys {
            match input.get(*key) {
                Some(Value::String(dir)) => out.push(Ok(dir.clone())),
                None | Some(Value::Null) => {}
                Some(_) => out.push(Err((*key).to_owned())),
            }
        }
    }
    for item in content.and_then(Value::as_array).into_iter().flatten() {
        let text = item
            .get("content")
            .and_then(|c| c.get("text"))
            .and_then(Value::as_str);
        match text.and_then(bracketed_directory) {
            Some(found) if dialect.gemini => {
                out.push(found.map_err(|()| "content[].content.text".to_owned()))
            }
            Some(_) => out.push(Err(
                "content[].content.text (a bracketed directory, read for gemini-cli only)"
                    .to_owned(),
            )),
            None => {}
        }
    }
    out
}

/// The directory a content text opens with (see [`workdirs`]); `None` when it opens with no
/// bracketed form, `Err` when the form or its end cannot be read.
fn bracketed_directory(text: &str) -> Option<Result<String, ()>> {
    let rest = text.strip_prefix('[')?;
    let Some(rest) = ["current working directory ", "in "]
        .iter()
        .find_map(|form| rest.strip_prefix(form))
    else {
        // Another bracketed opening: a form this version does not know if it names a path.
        let head = rest.split(']').next().unwrap_or(rest);
        return head
            .split_whitespace()
            .any(|word| word.starts_with(['/', '~', '.']))
            .then_some(Err(()));
    };
    // The directory ends at the `]` followed by the end or ` (description)` (once a trailing
    // ` [background]` is set aside); more than one such `]` (a directory with `]` in it) is
    // ambiguous, none is a cut text.
    let rest = rest.strip_suffix(" [background]").unwrap_or(rest);
    let ends: Vec<usize> = rest
        .match_indices(']')
        .map(|(i, _)| i)
        .filter(|&i| {
            let after = &rest[i + 1..];
            after.is_empty() || after.starts_with(" (")
        })
        .collect();
    Some(match ends.as_slice() {
        [end] if !rest[..*end].contains(']') => Ok(rest[..*end].to_owned()),
        _ => Err(()),
    })
}

#[cfg(test)]
mod workdir_tests {
    use super::*;
    use serde_json::json;

    fn dirs_of(agent: Option<&str>, text: &str) -> Vec<Result<String, String>> {
        workdirs(
            None,
            Some(&json!([{"type": "content", "content": {"type": "text", "text": text}}])),
            &Dialect::of(agent),
        )
    }

    fn dirs(text: &str) -> Vec<Result<String, String>> {
        dirs_of(Some(crate::policy::agents::GEMINI_CLI), text)
    }

    /// Gemini CLI's two forms (its shell tool's `getContextualDetails`), and what is unreadable.
    #[test]
    fn gemini_directory_forms_are_read_or_refused() {
        assert_eq!(
            dirs("[current working directory /home/user/project] (Run: ls -la)"),
            [Ok("/home/user/project".to_owned())]
        );
        assert_eq!(
            dirs("[in /tmp/attacker] (Run the tests)"),
            [Ok("/tmp/attacker".to_owned())]
        );
        assert_eq!(dirs("[in src] [background]"), [Ok("src".to_owned())]);
        // A `]` inside the directory: `/p]/../../etc` must not be read as `/p`.
        assert!(dirs("[in /p]/../../etc] (x)")[0].is_err());
        assert!(dirs("[in /p] (x)] (y)")[0].is_err());
        // Cut before its end, or a form not known that names a path.
        assert!(dirs("[in /very/long/cut").first().unwrap().is_err());
        assert!(dirs("[working dir /etc] (Run: ls)")[0].is_err());
        // Text that opens with brackets but names no path is not a directory.
        assert!(dirs("[background] done").is_empty());
        assert!(dirs("Ran `ls`").is_empty());
    }

    /// Only gemini-cli's content text says where it runs: from any other agent a bracketed
    /// directory cannot be placed (Claude Code's content is the model's description).
    #[test]
    fn other_agents_bracketed_directories_are_not_placed() {
        for agent in [
            None,
            Some("claude-agent-acp"),
            Some("qwen-code"),
            Some("gemini"),
        ] {
            let found = dirs_of(agent, "[current working directory /home/user/project] (x)");
            assert!(matches!(found.as_slice(), [Err(_)]), "{agent:?}: {found:?}");
            assert!(dirs_of(agent, "[background] done").is_empty());
            assert!(dirs_of(agent, "Run: ls").is_empty());
        }
    }

    /// opencode names its directory `workdir` only: its `cwd` is opencode's own directory. Every
    /// other agent's working-directory keys are all read.
    #[test]
    fn opencode_reads_only_its_workdir() {
        let input = json!({"command": "cargo test", "cwd": "/p", "directory": "/q"});
        let opencode = Dialect::of(Some("OpenCode"));
        assert!(workdirs(Some(&input), None, &opencode).is_empty());
        let both = json!({"command": "cargo test", "cwd": "/p", "workdir": "sub"});
        assert_eq!(
            workdirs(Some(&both), None, &opencode),
            [Ok("sub".to_owned())]
        );
        assert_eq!(
            workdirs(Some(&input), None, &opencode.for_command_subject()),
            [Ok("/p".to_owned()), Ok("/q".to_owned())]
        );
        assert_eq!(
            workdirs(Some(&input), None, &Dialect::of(Some("codex-acp"))),
            [Ok("/p".to_owned()), Ok("/q".to_owned())]
        );
    }
}

/// Escapes a substituted value (`${cwd}`, `${home}`) for a glob pattern, so that a directory
/// named `proj[1` or `[WIP] {a,b}` matches itself and nothing else.
pub(crate) fn escape_glob(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '?' | '*' | '[' | ']' | '{' | '}' | ',' => {
                out.push('[');
                out.push(c);
                out.push(']');
            }
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out
}

/// The longest glob acptap compiles from text it is given (a `--path`, an MCP argument, a
/// policy pattern once `${cwd}` and `${home}` are put in, a word of a recorded command). globset
/// panics on a regex too big for it (131,000 `*` did), and no real path glob comes near this.
pub(crate) const MAX_GLOB_BYTES: usize = 4096;

/// How much of a refused glob an error shows.
const SHOWN_GLOB_CHARS: usize = 40;

/// How a glob reads its text: `/` matched only by `/` (not `*`), `\` as an escape, case.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct GlobOptions {
    pub literal_separator: bool,
    pub backslash_escape: bool,
    pub case_insensitive: bool,
}

/// A glob that cannot be built. Its text says which (a cut prefix of it, never all of it), why,
/// and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum GlobError {
    #[error("the glob `{shown}` {}", self.reason())]
    TooLong { shown: String, bytes: usize },
    #[error("`{shown}` {}", self.reason())]
    Invalid { shown: String, why: String },
}

impl GlobError {
    /// What is wrong and the fix, without the glob: `is 5000 bytes long; ...`.
    pub(crate) fn reason(&self) -> String {
        match self {
            GlobError::TooLong { bytes, .. } => format!(
                "is {bytes} bytes long; at most {MAX_GLOB_BYTES} are accepted: give a shorter glob"
            ),
            GlobError::Invalid { why, .. } => format!("is not a glob ({why}): fix the pattern"),
        }
    }
}

/// The first characters of an untrusted text for an error, control characters escaped, `…`
/// when cut.
pub(crate) fn cut_for_error(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars().take(SHOWN_GLOB_CHARS) {
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    if text.chars().nth(SHOWN_GLOB_CHARS).is_some() {
        out.push('…');
    }
    out
}

/// Refuses a glob text longer than [`MAX_GLOB_BYTES`].
pub(crate) fn too_long(text: &str) -> Result<(), GlobError> {
    if text.len() > MAX_GLOB_BYTES {
        return Err(GlobError::TooLong {
            shown: cut_for_error(text),
            bytes: text.len(),
        });
    }
    Ok(())
}

/// Builds a matcher from glob texts that come from outside (a user, a policy file, a
/// recording): each at most [`MAX_GLOB_BYTES`], compiled without a panic (globset's own
/// `compile_matcher` panics where its regex is too big; a set's build answers an error).
pub(crate) fn glob_set(
    patterns: &[&str],
    options: GlobOptions,
) -> Result<globset::GlobSet, GlobError> {
    let mut builder = globset::GlobSetBuilder::new();
    for text in patterns {
        too_long(text)?;
        let glob = globset::GlobBuilder::new(text)
            .literal_separator(options.literal_separator)
            .backslash_escape(options.backslash_escape)
            .case_insensitive(options.case_insensitive)
            .build()
            .map_err(|e| GlobError::Invalid {
                shown: cut_for_error(text),
                why: why(&e),
            })?;
        builder.add(glob);
    }
    builder.build().map_err(|e| {
        // Name the pattern at fault: the first that fails alone (the set's error says none).
        let culprit = patterns
            .iter()
            .find(|text| patterns.len() == 1 || glob_set(&[text], options).is_err())
            .copied()
            .unwrap_or_default();
        GlobError::Invalid {
            shown: cut_for_error(culprit),
            why: why(&e),
        }
    })
}

/// Why globset refused a glob, without the glob: its whole error repeats the glob, and a regex
/// error the whole regex.
fn why(error: &globset::Error) -> String {
    match error.kind() {
        globset::ErrorKind::Regex(_) => "too complex to match".to_owned(),
        kind => kind.to_string(),
    }
}

/// The paths a command argument can stand for once the shell expands it: `~` forms, and glob
/// patterns matched against the disk as bash would (a pattern with no match stays as written).
/// `None` for one that cannot be known (`~user`, `~-`, too many matches).
pub(crate) fn expand_argument(
    fs: &dyn FileSystem,
    word: &str,
    cwd: Option<&Path>,
    home: Option<&Path>,
) -> Vec<Option<PathBuf>> {
    let literal = normalise(fs, word, cwd, home);
    if !word.contains(['*', '?', '[']) {
        return vec![literal];
    }
    // Expand component by component, from the root of the path as written.
    let raw = match (word.starts_with('/'), word.strip_prefix('~')) {
        (true, _) => PathBuf::from(word),
        (_, Some(_)) => match normalise(fs, word.split('/').next().unwrap_or("~"), cwd, home) {
            Some(base) => base.join(word.split_once('/').map(|(_, rest)| rest).unwrap_or("")),
            None => return vec![None],
        },
        _ => match cwd {
            Some(cwd) => cwd.join(word),
            None => return vec![None],
        },
    };
    match glob_matches(fs, &raw) {
        Some(matches) => std::iter::once(literal)
            .chain(
                matches
                    .iter()
                    .map(|p| normalise(fs, &p.to_string_lossy(), None, None)),
            )
            .collect(),
        None => vec![None],
    }
}

/// What an absolute path with glob components matches on disk, component by component (the
/// path itself when no glob component reads as one); `None` past the bounds on matches and on
/// directory entries read, or through a symbolic-link loop.
fn glob_matches(fs: &dyn FileSystem, raw: &Path) -> Option<Vec<PathBuf>> {
    let mut current = vec![PathBuf::from("/")];
    let mut bounds = GlobBounds {
        matches: MAX_GLOB_MATCHES,
        scanned: 0,
    };
    for component in raw.components() {
        let Component::Normal(name) = component else {
            if matches!(component, Component::ParentDir) {
                current = current.into_iter().map(|p| p.join("..")).collect();
            }
            continue;
        };
        let name = name.to_string_lossy();
        // A word that is no glob (or too long or complex to be one) is taken as written.
        let matcher = if name.contains(['*', '?', '[']) {
            glob_set(&[&name], GLOB_ARGUMENT).ok()
        } else {
            None
        };
        current = match matcher {
            Some(matcher) => matching_entries(fs, &current, &name, &matcher, &mut bounds)?,
            None => current.into_iter().map(|p| p.join(&*name)).collect(),
        };
    }
    Some(current)
}

/// How a glob argument reads its text: as bash does, `/` only by `/`, `\` escaping.
const GLOB_ARGUMENT: GlobOptions = GlobOptions {
    literal_separator: true,
    backslash_escape: true,
    case_insensitive: false,
};

/// What one glob argument may still cost: matches left, directory entries read so far.
struct GlobBounds {
    matches: usize,
    scanned: usize,
}

/// The entries of each of `dirs` that `matcher` (compiled from `name`) matches, as the shells
/// would: a leading dot only by a pattern that starts with one, and then `.` and `..` too
/// (bash 5.2 skips them, but dash, ksh, busybox and bash before 5.2 let `.[.]`, `.?` or `.*`
/// match `..`, and a decision must not rest on which shell runs). `None` past the bounds, or for
/// a directory that cannot be placed.
fn matching_entries(
    fs: &dyn FileSystem,
    dirs: &[PathBuf],
    name: &str,
    matcher: &globset::GlobSet,
    bounds: &mut GlobBounds,
) -> Option<Vec<PathBuf>> {
    let mut next = Vec::new();
    for dir in dirs {
        let resolved = normalise(fs, &dir.to_string_lossy(), None, None)?;
        let Some(entries) = fs.list_dir(&resolved) else {
            continue;
        };
        // A directory's listing leaves out `.` and `..`; a pattern that starts with a dot is
        // tried on them too.
        let dot_entries = name
            .starts_with('.')
            .then(|| [OsString::from("."), OsString::from("..")])
            .into_iter()
            .flatten();
        // Directory entries looked at: a decision is on the proxy's data path, so a pattern
        // like `/*/*/*/*` must not walk the disk.
        for file_name in dot_entries.chain(entries) {
            bounds.scanned += 1;
            if bounds.scanned > MAX_GLOB_SCANNED {
                return None;
            }
            let file_name = file_name.to_string_lossy();
            if file_name.starts_with('.') && !name.starts_with('.') {
                continue;
            }
            if matcher.is_match(&*file_name) {
                bounds.matches = bounds.matches.checked_sub(1)?;
                next.push(dir.join(&*file_name));
            }
        }
    }
    Some(next)
}

/// How many files one glob argument may match before it counts as unknowable.
const MAX_GLOB_MATCHES: usize = 2000;

/// How many directory entries expanding one glob argument may read before it counts as
/// unknowable.
const MAX_GLOB_SCANNED: usize = 20_000;

/// Makes `path` absolute against `cwd` (and `~` against `home`), resolving `.`, `..` and
/// symlinks. `None` if it cannot be placed: relative with no cwd, or a symlink loop.
pub(crate) fn normalise(
    fs: &dyn FileSystem,
    path: &str,
    cwd: Option<&Path>,
    home: Option<&Path>,
) -> Option<PathBuf> {
    // Longer than Linux's PATH_MAX: no file has such a path, and resolving one segment by
    // segment would cost time quadratic in its length (a 5 MB path took the better part of an
    // hour): it cannot be placed.
    if path.len() > PATH_MAX {
        return None;
    }
    if let Some(url) = url_scheme(path) {
        // `file:///etc/passwd` is a path outside, not a relative one named `file:`; any other
        // URL is not a file this policy can place.
        return match url {
            "file" => normalise(fs, &file_url_path(path)?, None, None),
            _ => None,
        };
    }
    let absolute = if let Some(rest) = path.strip_prefix('~') {
        // bash's tilde forms: `~` and `~/x` are home, `~+` the working directory; `~-` (the
        // previous one) and `~user` cannot be known here.
        let (prefix, rest) = rest.split_once('/').unwrap_or((rest, ""));
        match prefix {
            "" => home?.join(rest),
            "+" => cwd?.join(rest),
            _ => return None,
        }
    } else if Path::new(path).is_absolute() {
        PathBuf::from(path)
    } else {
        cwd?.join(path)
    };
    if absolute.as_os_str().len() > PATH_MAX {
        return None;
    }
    let mut budget = MAX_SYMLINKS;
    resolve(fs, &absolute, &mut budget)
}

/// The longest path Linux takes (`PATH_MAX`, with its terminating NUL).
const PATH_MAX: usize = 4096;

/// The scheme of a URL-shaped string (`file://...`, `https://...`, `file:/x`), lowercased.
fn url_scheme(text: &str) -> Option<&str> {
    let (scheme, rest) = text.split_once(':')?;
    let shaped = scheme.len() > 1
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c));
    (shaped && (rest.starts_with('/') || scheme.eq_ignore_ascii_case("file"))).then_some(
        if scheme.eq_ignore_ascii_case("file") {
            "file"
        } else {
            scheme
        },
    )
}

/// The path of a `file:` URL, percent-decoded; `None` for a remote host or a bad escape.
fn file_url_path(url: &str) -> Option<String> {
    let rest = &url["file:".len()..];
    let path = match rest.strip_prefix("//") {
        Some(after) => {
            let (host, path) = after.split_at(after.find('/')?);
            (host.is_empty() || host.eq_ignore_ascii_case("localhost")).then_some(path)?
        }
        None => rest,
    };
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    let path = String::from_utf8(out).ok()?;
    path.starts_with('/').then_some(path)
}

/// `path` (absolute) with `.`, `..` and every symbolic link that exists on it resolved, the
/// rest taken lexically; `None` past `budget` links (a loop).
fn resolve(fs: &dyn FileSystem, path: &Path, budget: &mut usize) -> Option<PathBuf> {
    let mut resolved = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::RootDir | Component::Prefix(_) | Component::CurDir => {}
            Component::ParentDir => {
                resolved.pop();
            }
            Component::Normal(name) => {
                let candidate = resolved.join(name);
                match fs.read_link(&candidate) {
                    Some(target) => {
                        *budget = budget.checked_sub(1)?;
                        let target = if target.is_absolute() {
                            target
                        } else {
                            resolved.join(target)
                        };
                        resolved = resolve(fs, &target, budget)?;
                    }
                    None => resolved = candidate,
                }
            }
        }
    }
    Some(resolved)
}

/// How [`containment`] places a path before it holds it against a directory.
#[derive(Clone, Copy)]
pub(crate) enum Placing<'a> {
    /// Both are placed already ([`normalise`]d): compared as they are.
    AsGiven,
    /// The path by its text: `.` and `..` taken out, nothing looked up; one that climbs above
    /// its root (`/`, or a relative path's start) cannot be placed. The directory as it is.
    Lexical,
    /// Both as the file system resolves them: the path by [`resolved_on_disk`], the directory
    /// by `realpath`.
    OnDisk(&'a dyn FileSystem),
}

/// Where a path lies with respect to a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Containment {
    /// The directory itself or below it.
    Inside,
    /// Outside it, at this place (on disk: where the path resolves).
    Outside(PathBuf),
    /// The path cannot be placed: it climbs above its root, or (on disk) it goes through a
    /// dangling symbolic link or a loop, so where it leads is not known.
    Unplaced,
    /// On disk, the directory does not resolve: it does not exist on this machine.
    NoDirectory,
}

impl Containment {
    pub(crate) fn is_inside(&self) -> bool {
        *self == Containment::Inside
    }
}

/// Whether `path` lies in `dir`, component by component, once placed as `placing` says: the one
/// test of "inside" for the policy's guards and the replay's fences. What each caller makes of
/// a path it cannot place, or of a directory that is not there, is the caller's to say.
pub(crate) fn containment(path: &Path, dir: &Path, placing: Placing) -> Containment {
    let (placed, root) = match placing {
        Placing::AsGiven => (Some(path.to_owned()), None),
        Placing::Lexical => (lexical(path), None),
        Placing::OnDisk(fs) => match fs.canonicalize(dir) {
            Some(root) => (resolved_on_disk(fs, path), Some(root)),
            None => return Containment::NoDirectory,
        },
    };
    match placed {
        Some(p) if p.starts_with(root.as_deref().unwrap_or(dir)) => Containment::Inside,
        Some(p) => Containment::Outside(p),
        None => Containment::Unplaced,
    }
}

/// `path` with `.` and `..` taken out by its components; `None` when a `..` climbs above its
/// root (`/` for an absolute path, its start for a relative one).
fn lexical(path: &Path) -> Option<PathBuf> {
    let mut clean = PathBuf::new();
    let mut depth = 0usize;
    for component in path.components() {
        match component {
            Component::RootDir => clean.push(component),
            Component::CurDir | Component::Prefix(_) => {}
            Component::ParentDir => {
                depth = depth.checked_sub(1)?;
                clean.pop();
            }
            Component::Normal(name) => {
                depth += 1;
                clean.push(name);
            }
        }
    }
    Some(clean)
}

/// `path` as the file system resolves it: its deepest existing ancestor (the path itself when it
/// exists, a symbolic link followed) by `realpath`, the rest appended as written; `None` when
/// that ancestor does not resolve (a dangling symbolic link, a loop).
pub(crate) fn resolved_on_disk(fs: &dyn FileSystem, path: &Path) -> Option<PathBuf> {
    let existing = path.ancestors().find(|p| fs.entry(p, false).is_some())?;
    let real = fs.canonicalize(existing)?;
    let rest = path.strip_prefix(existing).ok()?;
    Some(if rest.as_os_str().is_empty() {
        real
    } else {
        real.join(rest)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::filesystem::Disk;
    use serde_json::json;

    #[test]
    fn a_path_longer_than_path_max_cannot_be_placed_and_costs_nothing() {
        let long = "d/".repeat(2_500_000);
        let started = std::time::Instant::now();
        assert_eq!(normalise(&Disk, &long, Some(Path::new("/p")), None), None);
        assert_eq!(
            normalise(&Disk, &format!("/{}", "a/".repeat(2_100)), None, None),
            None
        );
        assert!(normalise(&Disk, &format!("/{}", "a/".repeat(1_000)), None, None).is_some());
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    /// The one test of "inside": by text, and on disk through a symbolic link out, a dangling
    /// one, and a directory that is not there, each told apart for the caller.
    #[test]
    fn containment_by_text_and_on_disk() {
        use crate::policy::filesystem::Fake;
        let (p, dir) = (Path::new, Path::new("/p"));
        let lexical = |path: &str| containment(p(path), dir, Placing::Lexical);
        assert_eq!(lexical("/p/a/../b"), Containment::Inside);
        assert_eq!(lexical("/p"), Containment::Inside);
        assert_eq!(lexical("/p/../etc"), Containment::Outside("/etc".into()));
        assert_eq!(lexical("/pq"), Containment::Outside("/pq".into()));
        assert_eq!(lexical("/p/../../../x"), Containment::Unplaced);
        assert_eq!(lexical("a"), Containment::Outside("a".into()));
        assert!(containment(p("/p/x/.."), dir, Placing::AsGiven).is_inside());
        assert!(!containment(p("/q"), dir, Placing::AsGiven).is_inside());
        let fs = Fake::default()
            .file("/p/a.txt")
            .link("/p/out", "/etc")
            .file("/etc/passwd")
            .link("/p/dangling", "gone")
            .link("/p/inner", "sub")
            .dir("/p/sub");
        let on_disk = |path: &str, dir: &str| containment(p(path), p(dir), Placing::OnDisk(&fs));
        assert_eq!(on_disk("/p/a.txt", "/p"), Containment::Inside);
        assert_eq!(on_disk("/p/new/file", "/p"), Containment::Inside);
        assert_eq!(on_disk("/p/inner/x", "/p"), Containment::Inside);
        assert_eq!(
            on_disk("/p/out/passwd", "/p"),
            Containment::Outside("/etc/passwd".into())
        );
        assert_eq!(
            on_disk("/p/out/new", "/p"),
            Containment::Outside("/etc/new".into())
        );
        assert_eq!(on_disk("/p/dangling", "/p"), Containment::Unplaced);
        assert_eq!(on_disk("/p/a.txt", "/nowhere"), Containment::NoDirectory);
        // The link's own directory, through the link.
        assert_eq!(on_disk("/p/out/passwd", "/p/out"), Containment::Inside);
    }

    /// The same on the machine's disk.
    #[test]
    fn containment_on_the_disk() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let project = root.join("project");
        std::fs::create_dir_all(project.join("src")).unwrap();
        std::os::unix::fs::symlink(&root, project.join("up")).unwrap();
        std::os::unix::fs::symlink(root.join("gone"), project.join("dangling")).unwrap();
        let on_disk = |path: &Path| containment(path, &project, Placing::OnDisk(&Disk));
        assert!(on_disk(&project.join("src/new.rs")).is_inside());
        assert_eq!(
            on_disk(&project.join("up/x")),
            Containment::Outside(root.join("x"))
        );
        assert_eq!(on_disk(&project.join("dangling")), Containment::Unplaced);
        assert_eq!(
            containment(&project, &root.join("missing"), Placing::OnDisk(&Disk)),
            Containment::NoDirectory
        );
    }

    #[test]
    fn dot_dot_cannot_climb_out_lexically() {
        let cwd = Path::new("/nonexistent-acptap/project");
        assert_eq!(
            normalise(&Disk, "src/../../etc/passwd", Some(cwd), None),
            Some(PathBuf::from("/nonexistent-acptap/etc/passwd"))
        );
        assert_eq!(
            normalise(&Disk, "/../../etc", None, None),
            Some(PathBuf::from("/etc"))
        );
        assert_eq!(
            normalise(&Disk, "./a/./b", Some(cwd), None),
            Some(cwd.join("a/b"))
        );
        assert_eq!(normalise(&Disk, "relative", None, None), None);
        assert_eq!(
            normalise(&Disk, "~/.ssh/id_rsa", None, Some(Path::new("/home/u"))),
            Some(PathBuf::from("/home/u/.ssh/id_rsa"))
        );
    }

    #[test]
    fn symlinks_are_followed_out_of_the_project() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let project = root.join("project");
        let outside = root.join("outside");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, project.join("escape")).unwrap();
        std::os::unix::fs::symlink("../outside/secret", project.join("relative-escape")).unwrap();
        assert_eq!(
            normalise(&Disk, "escape/new-file", Some(&project), None),
            Some(outside.join("new-file"))
        );
        assert_eq!(
            normalise(&Disk, "relative-escape", Some(&project), None),
            Some(outside.join("secret"))
        );
        // `..` after a symlink climbs from the link's target, as the kernel does.
        assert_eq!(
            normalise(&Disk, "escape/../x", Some(&project), None),
            Some(root.join("x"))
        );
        std::os::unix::fs::symlink(project.join("loop"), project.join("loop")).unwrap();
        assert_eq!(normalise(&Disk, "loop/x", Some(&project), None), None);
    }

    #[test]
    fn a_dot_pattern_reaches_the_parent_as_older_shells_expand_it() {
        use crate::policy::filesystem::Fake;
        let fs = Fake::default()
            .dir("/home/me/project/src")
            .file("/home/me/.ssh/id_rsa");
        let cwd = Some(Path::new("/home/me/project"));
        let expanded = |word: &str| expand_argument(&fs, word, cwd, None);
        // dash, ksh and bash before 5.2 let these match `..` (bash 5.2 does not): the decision
        // must see the parent.
        for word in [".[.]/.ssh/id_rsa", ".?/.ssh/id_rsa", ".*/.ssh/id_rsa"] {
            assert!(
                expanded(word).contains(&Some(PathBuf::from("/home/me/.ssh/id_rsa"))),
                "{word}: {:?}",
                expanded(word)
            );
        }
        assert!(expanded("src/.[.]").contains(&Some(PathBuf::from("/home/me/project"))));
        // A pattern that does not start with a dot never matches `.` or `..`.
        assert!(
            !expanded("?[.]/.ssh/id_rsa").contains(&Some(PathBuf::from("/home/me/.ssh/id_rsa")))
        );
        assert!(!expanded("*/.ssh/id_rsa").contains(&Some(PathBuf::from("/home/me/.ssh/id_rsa"))));
    }

    #[test]
    fn tilde_forms_and_globs_expand_as_bash_would() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let home = root.join("home");
        let project = home.join("project");
        std::fs::create_dir_all(project.join("src")).unwrap();
        std::fs::write(project.join("src/a.rs"), "").unwrap();
        std::fs::write(project.join(".hidden"), "").unwrap();
        std::os::unix::fs::symlink(&root, project.join("escape")).unwrap();
        let (cwd, home) = (Some(project.as_path()), Some(home.as_path()));
        assert_eq!(
            normalise(&Disk, "~+/src", cwd, home),
            Some(project.join("src"))
        );
        assert_eq!(normalise(&Disk, "~-/x", cwd, home), None);
        assert_eq!(normalise(&Disk, "~root/x", cwd, home), None);
        let expanded = |word: &str| expand_argument(&Disk, word, cwd, home);
        assert!(expanded("src/*.rs").contains(&Some(project.join("src/a.rs"))));
        // `*` reaches the symlink out of the project, and resolves it.
        assert!(expanded("*").contains(&Some(root.clone())));
        // A leading dot is matched only by a pattern that starts with one.
        assert!(!expanded("*").contains(&Some(project.join(".hidden"))));
        assert!(expanded(".*").contains(&Some(project.join(".hidden"))));
        assert!(expanded("e*/home/project/src").contains(&Some(project.join("src"))));
        assert_eq!(expanded("~nobody/*"), vec![None]);
        // A word no regex can hold (globset panicked on it) is taken as written.
        let nested = format!("src/*{}{}", "{a,".repeat(300), "}".repeat(300));
        assert_eq!(expanded(&nested), vec![Some(project.join(&nested)); 2]);
        let long = format!("src/{}", "?".repeat(60_000));
        assert_eq!(expanded(&long), vec![None, None]);
    }

    #[test]
    fn an_untrusted_glob_is_bounded_and_never_panics() {
        let options = GlobOptions::default();
        assert!(
            glob_set(&["src/*.rs"], options)
                .unwrap()
                .is_match("src/a.rs")
        );
        let long = "*".repeat(131_000);
        let e = glob_set(&[&long], options).unwrap_err().to_string();
        assert!(
            e.contains("131000 bytes") && e.contains("at most 4096"),
            "{e}"
        );
        assert!(e.len() < 200, "{e}");
        // Under the limit, too complex for a regex: an error, not globset's panic.
        let stars = "*".repeat(MAX_GLOB_BYTES);
        let complex = [
            format!("{}{}", "{a,".repeat(1000), "}".repeat(1000)),
            "[!a-z]".repeat(MAX_GLOB_BYTES / 6),
        ];
        for text in complex.iter().map(String::as_str).chain([stars.as_str()]) {
            if let Err(e) = glob_set(&["ok", text], options) {
                let e = e.to_string();
                assert!(e.len() < 200 && !e.starts_with("`ok`"), "{e}");
            }
        }
        assert!(glob_set(&["ok", &complex[0]], options).is_err());
        // Control characters are shown escaped, never written raw to a terminal.
        let e = glob_set(&["\u{1b}[2J["], options).unwrap_err().to_string();
        assert!(e.contains("\\u{1b}") && !e.contains('\u{1b}'), "{e}");
    }

    #[test]
    fn unknown_path_keys_and_unreadable_values() {
        let raw = tool_call_paths(
            None,
            None,
            Some(
                &json!({"absolute_path": "/etc/shadow", "zzz": "/root/x", "note": "plain words",
                "target_file": ["a", "b"], "output_dir": 5, "description": "/not/a/path"}),
            ),
        );
        let mut unrecognised = raw.unrecognised.clone();
        unrecognised.sort();
        assert_eq!(unrecognised, ["absolute_path", "target_file", "zzz"]);
        assert_eq!(raw.unreadable, ["output_dir"]);
        assert!(raw.paths.contains(&"/etc/shadow".to_owned()));
        assert!(!raw.paths.contains(&"/not/a/path".to_owned()));
        assert_eq!(escape_glob("/p[1 {a,b}*?"), "/p[[]1 [{]a[,]b[}][*][?]");
    }

    #[test]
    fn collects_locations_diffs_and_raw_input_paths() {
        let paths = tool_call_paths(
            Some(&json!([{"path": "/p/a"}, {"path": "/p/a"}])),
            Some(
                &json!([{"type": "diff", "path": "/p/b"}, {"type": "content", "path": "/ignored"}]),
            ),
            Some(
                &json!({"file_path": "/etc/passwd", "paths": ["/p/c"], "changes": {"/p/d": {"move_path": "/p/e"}}}),
            ),
        );
        let mut found = paths.paths.clone();
        found.sort();
        assert_eq!(
            found,
            vec!["/etc/passwd", "/p/a", "/p/b", "/p/c", "/p/d", "/p/e"]
        );
        assert!(paths.unreadable.is_empty() && paths.unrecognised.is_empty());
    }

    #[test]
    fn file_urls_are_their_paths_and_other_urls_are_not_placed() {
        let cwd = Path::new("/p");
        assert_eq!(
            normalise(&Disk, "file:///etc/pass%77d", Some(cwd), None),
            Some(PathBuf::from("/etc/passwd"))
        );
        assert_eq!(
            normalise(&Disk, "FILE://localhost/etc/x", Some(cwd), None),
            Some(PathBuf::from("/etc/x"))
        );
        assert_eq!(
            normalise(&Disk, "file://evil.host/etc/x", Some(cwd), None),
            None
        );
        assert_eq!(normalise(&Disk, "file:///a%zz", Some(cwd), None), None);
        assert_eq!(
            normalise(&Disk, "https://example.com/x", Some(cwd), None),
            None
        );
        // Not URLs: a revision, a relative name with a colon.
        assert_eq!(
            normalise(&Disk, "HEAD:src/x", Some(cwd), None),
            Some(cwd.join("HEAD:src/x"))
        );
    }

    #[test]
    fn paths_nested_in_unknown_raw_input_values_are_found() {
        let raw = tool_call_paths(
            None,
            None,
            Some(&json!({"where": {"deep": "/etc/shadow", "note": "words"},
                "list": [{"uri": "file:///etc/x"}], "options": {"limit": 10, "description": "/no"}})),
        );
        let mut found = raw.paths.clone();
        found.sort();
        assert_eq!(found, ["/etc/shadow", "file:///etc/x"]);
        let mut keys = raw.unrecognised.clone();
        keys.sort();
        assert_eq!(keys, ["list", "where"]);
        let mut deep = json!("/x");
        for _ in 0..12 {
            deep = json!({ "a": deep });
        }
        let raw = tool_call_paths(None, None, Some(&json!({ "deep": deep })));
        assert_eq!(raw.unreadable, ["deep"]);
    }

    #[test]
    fn resources_patterns_and_bare_raw_input_count() {
        let raw = tool_call_paths(
            None,
            Some(&json!([
                {"type": "resource_link", "uri": "file:///etc/passwd", "name": "x"},
                {"type": "content", "content": {"type": "resource", "resource": {"uri": "file:///etc/shadow"}}},
                {"type": "content", "content": {"type": "text", "text": "/not/a/path"}},
            ])),
            Some(&json!({"pattern": "/etc/**", "glob": "src/*.rs", "query": "/x"})),
        );
        let mut found = raw.paths.clone();
        found.sort();
        assert_eq!(
            found,
            ["/etc/**", "file:///etc/passwd", "file:///etc/shadow"]
        );
        assert_eq!(raw.unrecognised, ["pattern"]);
        assert_eq!(
            tool_call_paths(None, None, Some(&json!("/etc/passwd"))).unreadable,
            ["rawInput"]
        );
        assert!(
            tool_call_paths(None, None, Some(&Value::Null))
                .unreadable
                .is_empty()
        );
    }
}
