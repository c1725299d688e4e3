//! What `replay --as agent` may send to the live client: the one gate every recorded agent line
//! passes before it is written.
//!
//! A recording is untrusted input (anyone can write a transcript), and the live client acts on
//! what an agent asks: it writes files, runs terminal commands, calls MCP tools. So the gate
//! sends only what it has judged, exactly as it judged it:
//!
//! - a line is read with the decoder every other part of acptap uses; a line it cannot read is
//!   not sent (nobody can tell what a client would make of it), and a line a client could read
//!   otherwise (not strict JSON, or a key written twice, which one client keeps first and
//!   another last) is sent re-serialised from what was judged;
//! - a batch is judged element by element: the elements that pass are sent, as one batch;
//! - a request or notification is judged by its method:
//!   - `fs/read_text_file`, `fs/write_text_file`: the `path` must be absolute and lie under a
//!     recorded session's cwd; it is moved under the live session's cwd, and must stay there on
//!     disk too (no symbolic link out). A write is never sent with `--no-writes`, nor to
//!     version-control or tool configuration (the policy's built-in guards decide which:
//!     `.git/`, `.hg/`, `.jj/`, `.acptap/`, editor and agent configuration, startup files);
//!   - `terminal/*` and `mcp/message` (the client runs something) only with
//!     `--run-recorded-commands`, a terminal only in the live cwd;
//!   - `elicitation/create` never in URL mode (a replay does not make the client open a URL);
//!   - `session/update` and `session/request_permission`: the paths ACP defines (locations, a
//!     diff's path) moved to the live cwd, none outside; the recorded cwd written as the live
//!     one in all the client only shows (titles, rawInput, output, object keys), with the one
//!     mapping `acptap diff` uses ([`crate::protocol::relocate`]);
//!   - any other method (extension methods included): every string in the message that names
//!     a path (a word starting with `/`, `~`, `\`, `..`, a drive letter) must lie under a
//!     recorded cwd, and is moved to the live one;
//! - a response (no `method`) is sent as recorded: a client acts on requests only.
//!
//! And a request the live client does not serve is held ([`Served`]): under ACP v2 the client
//! serves no `fs/*` or `terminal/*` request (the agent owns files and terminals; held before
//! anything else), and whatever the version, a client whose `initialize` did not advertise
//! `fs.readTextFile`, `fs.writeTextFile` or `terminal` is not asked for them (it would answer
//! -32601, which is no divergence of the client; held after the rules above, so that a line
//! held for what it asks is named for that). Such a hold is no safety matter: it is said once
//! per reason, not line by line.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::lexical;
use crate::policy::Disk;
use crate::policy::paths::{Containment, Placing, containment, resolved_on_disk};
use crate::protocol::message::decode;
use crate::protocol::relocate::Relocation;
use crate::protocol::version::Version;

/// The methods with which the live client runs something on the machine.
fn runs_something(method: &str) -> bool {
    method.starts_with("terminal/") || method == "mcp/message"
}

/// What the user allowed the replay beyond the safe default.
#[derive(Debug, Clone, Copy, Default)]
pub struct Allowances {
    /// `--run-recorded-commands`: terminal requests and MCP tool calls are sent.
    pub run_commands: bool,
    /// Not `--no-writes`: `fs/write_text_file` is sent (inside the live cwd, guards permitting).
    pub writes: bool,
}

/// One element held back, and why.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Held {
    /// The request's JSON-RPC id (JSON text): its recorded answer is not waited for.
    pub id: Option<String>,
    pub method: Option<String>,
    pub reason: String,
    /// Held because the live client does not serve the method (see [`Served`]), not because of
    /// what it asks: said once per reason, not line by line.
    pub not_served: bool,
}

impl Held {
    fn for_what_it_asks(id: Option<String>, method: Option<String>, reason: String) -> Held {
        Held {
            id,
            method,
            reason,
            not_served: false,
        }
    }
}

/// What the live client serves of the agent's requests to it: the recording's negotiated
/// protocol version decides whether the client serves files and terminals at all, and the live
/// client's `initialize` which of them it advertised.
#[derive(Debug, Clone, Default)]
pub(crate) struct Served {
    /// The recording's version (`SessionState::version`); `None` (no `initialize` recorded) is
    /// taken as v1.
    pub version: Option<Version>,
    /// The live client's `clientCapabilities`, once its `initialize` arrived (`{}` when it named
    /// none). `None`: no `initialize` seen, and nothing is held for want of a capability.
    pub client_capabilities: Option<Value>,
    /// The version the live client proposed in its `initialize` (a value that is no version:
    /// `Other(u64::MAX)`); `None` before one.
    pub live_version: Option<Version>,
}

/// The client capability an `fs/*` or `terminal/*` request needs (`None`: another method).
fn capability_for(method: &str) -> Option<&'static str> {
    Some(match method {
        "fs/read_text_file" => "fs.readTextFile",
        "fs/write_text_file" => "fs.writeTextFile",
        m if m.starts_with("terminal/") => "terminal",
        _ => return None,
    })
}

impl Served {
    /// Why no client of the recording's protocol version serves `method` (v2: files and
    /// terminals are the agent's); `None` when one may.
    pub(crate) fn version_refusal(&self, method: &str) -> Option<String> {
        capability_for(method)?;
        if let Some(live) = self.live_version
            && !live.client_serves_fs_and_terminals()
        {
            return Some(format!(
                "the live client proposed ACP {live}, whose clients serve no `fs/*` or `terminal/*` request"
            ));
        }
        let version = self.version?;
        (!version.client_serves_fs_and_terminals()).then(|| format!(
            "the recording speaks ACP {version}, in which the client serves no `fs/*` or `terminal/*` request (the agent owns files and terminals)"
        ))
    }

    /// Why the live client does not serve `method`: it did not advertise the capability in its
    /// `initialize`. `None` when it did, when it sent no `initialize`, or for another method.
    pub(crate) fn capability_refusal(&self, method: &str) -> Option<String> {
        let capability = capability_for(method)?;
        let capabilities = self.client_capabilities.as_ref()?;
        let advertised = capability
            .split('.')
            .try_fold(capabilities, |at, key| at.get(key))
            .and_then(Value::as_bool)
            == Some(true);
        (!advertised).then(|| {
            format!("the live client did not advertise `{capability}` in its `initialize`")
        })
    }
}

/// The gate's answer for one recorded line.
#[derive(Debug, Default)]
pub(crate) struct Judged {
    /// The bytes to send; `None`: nothing of the line is sent.
    pub bytes: Option<Vec<u8>>,
    /// What was held back (the line, or elements of its batch).
    pub held: Vec<Held>,
    /// Requests sent: (id, method, params as sent), to compare the client's answers with.
    pub requests: Vec<(String, String, Value)>,
    /// Said on stderr before the line is sent (the commands the client is asked to run).
    pub notices: Vec<String>,
}

/// Directories where code is installed and later run (a file written there runs as a program
/// or a module): never written by a replay, beyond the policy's guards.
const INSTALLED_CODE_DIRS: &[&str] = &[
    ".venv",
    "venv",
    "node_modules",
    "site-packages",
    "dist-packages",
    ".tox",
    ".nox",
];

/// System directories whose files run as code or configure every shell and service: never
/// written by a replay, even for a live session whose cwd is `/`. Compared in lower case.
const SYSTEM_STARTUP_DIRS: &[&str] = &[
    "/etc",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/boot",
    "/var/spool",
    "/private/etc",
    "/system",
    "/library",
];

/// The gate, with what it knows of the live sessions.
#[derive(Debug, Default, Clone)]
pub(crate) struct Gate {
    /// (recorded cwd, live cwd) of each session the live client opened.
    pub cwds: Vec<(String, String)>,
    /// Recorded session id -> its entry in `cwds`: a line that names its session is judged
    /// against that session's cwd only.
    pub sessions: HashMap<String, usize>,
    pub allow: Allowances,
    /// The live user's home (for the guards on startup files).
    pub home: Option<PathBuf>,
    /// Recorded terminal ids whose `terminal/create` was sent: the only terminals a replay
    /// asks about.
    pub created_terminals: HashSet<String>,
    /// Which `fs/*` and `terminal/*` requests the live client serves.
    pub served: Served,
}

impl Gate {
    pub(crate) fn new(allow: Allowances) -> Gate {
        Gate {
            allow,
            home: std::env::var_os("HOME").map(PathBuf::from),
            ..Gate::default()
        }
    }

    /// Judges one recorded agent line (its bytes as recorded, line ending included).
    pub(crate) fn judge(&self, raw: &[u8]) -> Judged {
        let mut judged = Judged::default();
        let text = raw.trim_ascii();
        let Some(value) = decode(text) else {
            if !text.is_empty() {
                judged.held.push(Held::for_what_it_asks(
                    None,
                    None,
                    "acptap cannot read it as JSON, so it cannot judge what a client would do with it".into(),
                ));
            }
            return judged;
        };
        let clean = reads_one_way(text);
        match value {
            Value::Array(items) => {
                let total = items.len();
                let mut kept = Vec::with_capacity(total);
                let mut changed = false;
                for mut item in items {
                    match self.judge_message(&mut item, &mut judged) {
                        Ok(moved) => {
                            changed |= moved;
                            kept.push(item);
                        }
                        Err(held) => judged.held.push(held),
                    }
                }
                if kept.is_empty() && total > 0 {
                    return judged;
                }
                judged.bytes = Some(if clean && !changed && kept.len() == total {
                    raw.to_vec()
                } else {
                    serialised(&Value::Array(kept))
                });
            }
            Value::Object(_) => {
                let mut value = value;
                match self.judge_message(&mut value, &mut judged) {
                    Ok(moved) => {
                        judged.bytes = Some(if clean && !moved {
                            raw.to_vec()
                        } else {
                            serialised(&value)
                        });
                    }
                    Err(held) => judged.held.push(held),
                }
            }
            _ => judged.held.push(Held::for_what_it_asks(
                None,
                None,
                "it is JSON but not a JSON-RPC message".into(),
            )),
        }
        judged
    }

    /// Judges one message (a line, or an element of a batch), moving its paths in place;
    /// `Ok(true)` when something was moved.
    fn judge_message(&self, message: &mut Value, judged: &mut Judged) -> Result<bool, Held> {
        // A line that names an open session is judged against that session's cwd alone.
        let session = message
            .pointer("/params/sessionId")
            .and_then(Value::as_str)
            .and_then(|s| self.sessions.get(s));
        if let Some(&at) = session
            && self.cwds.len() > 1
        {
            let scoped = Gate {
                cwds: vec![self.cwds[at].clone()],
                sessions: HashMap::new(),
                ..self.clone()
            };
            return scoped.judge_message(message, judged);
        }
        let Some(object) = message.as_object_mut() else {
            if message.is_array() {
                // A batch inside a batch is no JSON-RPC message; a lenient client might still
                // read one out of it.
                return Err(Held::for_what_it_asks(
                    None,
                    None,
                    "a batch inside a batch".into(),
                ));
            }
            // Not a message: a client ignores it (or answers an error).
            return Ok(false);
        };
        let Some(method) = object
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            // A response: a client acts on requests only. (A `method` that is not a string is
            // no method a client dispatches.)
            return Ok(false);
        };
        let id = object
            .get("id")
            .filter(|id| !id.is_null())
            .map(Value::to_string);
        let not_served = |reason: String| Held {
            id: id.clone(),
            method: Some(method.clone()),
            reason,
            not_served: true,
        };
        // A method no client of this version serves is not judged further: there is no client
        // to ask. One the live client did not advertise is judged first, so that a line held for
        // what it asks is named for that, line by line.
        if let Some(reason) = self.served.version_refusal(&method) {
            return Err(not_served(reason));
        }
        let hold =
            |reason: String| Held::for_what_it_asks(id.clone(), Some(method.clone()), reason);
        let moved = self.judge_method(&method, object).map_err(hold)?;
        if let Some(reason) = self.served.capability_refusal(&method) {
            return Err(not_served(reason));
        }
        if let Some(id) = &id {
            let params = object.get("params").cloned().unwrap_or(Value::Null);
            judged.requests.push((id.clone(), method.clone(), params));
        }
        if method == "terminal/create" {
            judged.notices.push(command_notice(object));
        }
        Ok(moved)
    }

    fn judge_method(&self, method: &str, object: &mut Map<String, Value>) -> Result<bool, String> {
        if runs_something(method) {
            if !self.allow.run_commands {
                return Err(format!(
                    "`{method}` asks the client to run something (replay with --run-recorded-commands to allow it)"
                ));
            }
            return self.judge_command(method, object);
        }
        match method {
            "fs/read_text_file" | "fs/write_text_file" => {
                let writes = method == "fs/write_text_file";
                if writes && !self.allow.writes {
                    return Err("a write, and --no-writes is given".into());
                }
                if writes && let Some(live) = self.cwd_not_a_project() {
                    return Err(format!(
                        "a write, and the live cwd {live} is not a project: it holds the home directory, whose startup files no list covers"
                    ));
                }
                let params = object
                    .get_mut("params")
                    .and_then(Value::as_object_mut)
                    .ok_or("it has no parameters the replay can judge")?;
                // Fields ACP does not define are judged like any other method's (a client may
                // read more than ACP says); a write's content is the file's, not a path.
                let mut moved = false;
                for (key, field) in params.iter_mut() {
                    if key != "path" && !(writes && key == "content") {
                        moved |= self.paths_in(field)?;
                    }
                }
                let path = params
                    .get_mut("path")
                    .ok_or("it names no path the replay can judge")?;
                moved |= self.file_path(path)?;
                if writes {
                    self.guarded(path.as_str().unwrap_or_default(), true)?;
                }
                Ok(moved)
            }
            "session/update" => {
                let Some(Value::Object(update)) =
                    object.get_mut("params").and_then(|p| p.get_mut("update"))
                else {
                    return Ok(false);
                };
                let mut moved = self.tool_call_paths(update)?;
                // v2: a terminal the agent runs is reported with where it runs.
                if update.get("sessionUpdate").and_then(Value::as_str) == Some("terminal_update")
                    && let Some(cwd) = update.get_mut("cwd").filter(|c| !c.is_null())
                {
                    moved |= self.named_path(cwd, true)?;
                }
                Ok(self.relocate_shown(object) | moved)
            }
            "session/request_permission" => {
                let Some(Value::Object(params)) = object.get_mut("params") else {
                    return Ok(false);
                };
                let mut moved = false;
                // v1 names the tool call; v2 a subject: a tool call, or a command and its cwd.
                if let Some(Value::Object(call)) = params.get_mut("toolCall") {
                    moved |= self.tool_call_paths(call)?;
                }
                if let Some(Value::Object(subject)) = params.get_mut("subject") {
                    if let Some(Value::Object(call)) = subject.get_mut("toolCall") {
                        moved |= self.tool_call_paths(call)?;
                    }
                    if subject.get("type").and_then(Value::as_str) == Some("command")
                        && let Some(cwd) = subject.get_mut("cwd").filter(|c| !c.is_null())
                    {
                        moved |= self.named_path(cwd, true)?;
                    }
                }
                Ok(self.relocate_shown(object) | moved)
            }
            "elicitation/create"
                if object.get("params").is_some_and(|p| {
                    p.get("mode").and_then(Value::as_str) == Some("url") || p.get("url").is_some()
                }) =>
            {
                Err("an elicitation that makes the client open a URL".into())
            }
            _ => {
                // Any other method: every path named anywhere in the message.
                let mut moved = false;
                for (key, field) in object.iter_mut() {
                    if matches!(key.as_str(), "jsonrpc" | "id" | "method") {
                        continue;
                    }
                    moved |= self.paths_in(field)?;
                }
                Ok(moved)
            }
        }
    }

    /// What the client only shows (titles, rawInput, rawOutput, text content, object keys such
    /// as Codex's `rawInput.changes["/abs/p/a.py"]`) with the recorded cwd written as the live
    /// one, as the agent would have written it in the live project. The paths the client acts
    /// on were moved and judged already, and a file's text (a diff's `oldText`, `newText`, an
    /// embedded resource's `text`) is the file's: both stay as they are.
    fn relocate_shown(&self, object: &mut Map<String, Value>) -> bool {
        const JUDGED_OR_A_FILES_TEXT: &[&[&str]] = &[
            &["locations", "path"],
            &["content", "path"],
            &["oldText"],
            &["newText"],
            &["resource", "text"],
            &["resource", "blob"],
            &["update", "cwd"],
            &["subject", "cwd"],
        ];
        let mut moved = false;
        for relocation in self.relocations() {
            for value in object.values_mut() {
                moved |= relocation.value_except(value, JUDGED_OR_A_FILES_TEXT);
            }
        }
        moved
    }

    /// Each recorded cwd written as its live one (none for a recorded `/`: see [`Relocation`]).
    fn relocations(&self) -> impl Iterator<Item = Relocation> + '_ {
        self.cwds
            .iter()
            .filter_map(|(recorded, live)| Relocation::new(recorded, live))
    }

    /// The paths ACP defines in a tool call (its `locations`, a diff's `path` in its `content`),
    /// moved to the live cwd; none may lie outside. `content` is a list, or one item in a v2
    /// `tool_call_content_chunk`.
    fn tool_call_paths(&self, call: &mut Map<String, Value>) -> Result<bool, String> {
        let mut moved = false;
        for (field, items) in call.iter_mut() {
            if field != "locations" && field != "content" {
                continue;
            }
            let items = match items {
                Value::Array(items) => items.as_mut_slice(),
                item @ Value::Object(_) if field == "content" => std::slice::from_mut(item),
                _ => continue,
            };
            for item in items {
                let is_path = field == "locations"
                    || item.get("type").and_then(Value::as_str) == Some("diff");
                if is_path && let Some(path) = item.get_mut("path") {
                    moved |= self.named_path(path, false)?;
                }
            }
        }
        Ok(moved)
    }

    /// A terminal request or MCP call the user allowed: a terminal runs in the live cwd only, and
    /// a terminal the replay did not create is not asked about.
    fn judge_command(&self, method: &str, object: &mut Map<String, Value>) -> Result<bool, String> {
        let params = object.get_mut("params");
        if method.starts_with("terminal/") && method != "terminal/create" {
            let terminal = params
                .as_ref()
                .and_then(|p| p.get("terminalId"))
                .and_then(Value::as_str);
            if !terminal.is_some_and(|t| self.created_terminals.contains(t)) {
                return Err(format!(
                    "it names terminal {}, which this replay did not create",
                    shown(terminal.unwrap_or("(none)"))
                ));
            }
        }
        if method != "terminal/create" {
            // No other method of these has a cwd; one that names it anyway is held to it.
            if let Some(cwd) = params.as_ref().and_then(|p| p.get("cwd")) {
                let mut cwd = cwd.clone();
                self.file_path(&mut cwd)?;
                if Some(&cwd) != object.get("params").and_then(|p| p.get("cwd")) {
                    object["params"]["cwd"] = cwd;
                    return Ok(true);
                }
                return Ok(false);
            }
            return Ok(false);
        }
        let Some(Value::Object(params)) = params else {
            return Err("a terminal/create without parameters".into());
        };
        // The recorded command's own words name the recorded project (`cat /rec/p/a`): the
        // live one, as for everything else the replay sends.
        let mut moved = false;
        for relocation in self.relocations() {
            for key in ["command", "args"] {
                if let Some(words) = params.get_mut(key) {
                    moved |= relocation.value(words);
                }
            }
        }
        let cwd_moved = match params.get_mut("cwd") {
            Some(cwd) => self.file_path(cwd),
            None => {
                // Where the client would run it is its own choice: name the live cwd.
                let mut live = self.cwds.iter().map(|(_, live)| live).collect::<Vec<_>>();
                live.dedup();
                match live.as_slice() {
                    [only] => {
                        params.insert("cwd".into(), Value::String((*only).clone()));
                        Ok(true)
                    }
                    _ => {
                        Err("a terminal without a cwd, and no single live cwd to run it in".into())
                    }
                }
            }
        }?;
        Ok(moved | cwd_moved)
    }

    /// An fs path or a terminal cwd: absolute, a string, moved to the live cwd and staying in it
    /// on disk.
    fn file_path(&self, place: &mut Value) -> Result<bool, String> {
        let moved = self.named_path(place, true)?;
        let path = place.as_str().unwrap_or_default();
        if let Some(live) = self.live_cwd_of(path)
            && leaves_on_disk(Path::new(path), Path::new(live))
        {
            return Err(format!(
                "{} leads outside the live cwd through a symbolic link",
                shown(path)
            ));
        }
        Ok(moved)
    }

    /// A field ACP defines as a path: judged whole and moved; `absolute` when ACP wants it so.
    fn named_path(&self, place: &mut Value, absolute: bool) -> Result<bool, String> {
        let Some(path) = place.as_str() else {
            return Err(format!(
                "a path that is not a string: {}",
                shown(&place.to_string())
            ));
        };
        if absolute && !path.starts_with('/') {
            return Err(format!("{} is not an absolute path", shown(path)));
        }
        match self.map_path(path)? {
            Some(moved) => {
                *place = Value::String(moved);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// A live cwd in which a write could reach the home directory's startup files, or another
    /// user's: `/`, the home directory, or a directory above it. No guard list covers every
    /// tool's startup files, so a replay writes only inside a project.
    fn cwd_not_a_project(&self) -> Option<&str> {
        let home = self.home.as_deref()?;
        self.cwds
            .iter()
            .map(|(_, live)| live.as_str())
            .find(|live| {
                let live = if live.is_empty() { "/" } else { live };
                home.starts_with(live)
            })
    }

    /// The live cwd `path` lies in (after it was moved).
    fn live_cwd_of(&self, path: &str) -> Option<&str> {
        self.cwds
            .iter()
            .map(|(_, live)| live.as_str())
            .find(|live| {
                path == *live || path.strip_prefix(live).is_some_and(|r| r.starts_with('/'))
            })
    }

    /// The path moved to the live cwd (`None`: sent as it is); `Err` for a path that lies outside
    /// every recorded cwd once `.` and `..` are resolved, a URL, a home-relative or Windows path,
    /// or any absolute path before a session is open.
    pub(crate) fn map_path(&self, path: &str) -> Result<Option<String>, String> {
        let outside = || format!("{} lies outside the recorded cwd", shown(path));
        // A NUL ends the path early for a C client, another control character is no name a
        // project file has: either way what the client would touch is not what was judged.
        if path.chars().any(char::is_control) {
            return Err(format!("{} holds a control character", shown(path)));
        }
        let bytes = path.as_bytes();
        if path.contains("://")
            || path.starts_with("file:")
            || path.starts_with('~')
            || path.contains('\\')
            || (bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':')
        {
            return Err(format!(
                "{} is not a path inside the recorded cwd",
                shown(path)
            ));
        }
        // Climbs above the root, or (relative) above the cwd.
        let clean = lexical(path).ok_or_else(outside)?;
        if !clean.starts_with('/') {
            // Relative, and inside: the client resolves it against its own cwd.
            return Ok(None);
        }
        if self.cwds.is_empty() {
            return Err(format!(
                "{} is named before any session is open (there is no live cwd yet)",
                shown(path)
            ));
        }
        for (recorded, live) in &self.cwds {
            // ACP's cwd is absolute; a client that says `.` would get a relative path, resolved
            // wherever it runs (its home, say), past every check made here.
            if !live.is_empty() && !live.starts_with('/') {
                return Err(format!(
                    "the live session's cwd {} is not an absolute path",
                    shown(live)
                ));
            }
            // `/` is written as the empty prefix, so that `/` + rest stays one slash.
            let (recorded, live) = (recorded.trim_end_matches('/'), live.trim_end_matches('/'));
            if clean == recorded || (recorded.is_empty() && clean == "/") {
                let live = if live.is_empty() { "/" } else { live };
                return Ok((live != path).then(|| live.to_owned()));
            }
            if let Some(rest) = clean.strip_prefix(recorded)
                && rest.starts_with('/')
            {
                let moved = format!("{live}{rest}");
                return Ok((moved != path).then_some(moved));
            }
        }
        Err(outside())
    }

    /// A path a write may touch (already moved) against the policy's built-in guards; `by_name`
    /// as the guards take it (a file named like a repository's counts).
    ///
    /// The path is judged as written and as it resolves on disk: a symbolic link inside the
    /// cwd (`gl -> .git`, `notes.txt -> .bashrc`) does not make a guarded place look ordinary.
    fn guarded(&self, path: &str, by_name: bool) -> Result<(), String> {
        let guards = crate::policy::guards::Guards {
            home: self.home.as_deref(),
            policy_files: &[],
        };
        let written = PathBuf::from(path);
        // A relative word (free text of a method acptap does not know) is not resolved: it
        // would be against the replay's own cwd, not the client's.
        let resolved = written
            .is_absolute()
            .then(|| resolved_on_disk(&Disk, &written))
            .flatten()
            .filter(|r| *r != written);
        for path in std::iter::once(&written).chain(&resolved) {
            let through = if resolved.as_ref() == Some(path) {
                format!(" (where {} leads)", shown(&written.to_string_lossy()))
            } else {
                String::new()
            };
            if let Some((guard, why)) = guards.ask(&[Some(path.clone())], by_name) {
                return Err(format!(
                    "a write to version-control or tool configuration ({guard}: {}{through})",
                    why.trim_start_matches("built-in guard: ")
                ));
            }
            let lower = path.to_string_lossy().to_lowercase();
            if let Some(dir) = SYSTEM_STARTUP_DIRS.iter().find(|dir| {
                lower
                    .strip_prefix(**dir)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            }) {
                return Err(format!(
                    "a write into {dir}, where the system's programs and configuration live: {}{through}",
                    shown(&path.to_string_lossy())
                ));
            }
            if let Some(dir) = path.components().find_map(|c| {
                INSTALLED_CODE_DIRS
                    .iter()
                    .find(|d| c.as_os_str().eq_ignore_ascii_case(d))
            }) {
                return Err(format!(
                    "a write into {dir}, where installed code runs from: {}{through}",
                    shown(&path.to_string_lossy())
                ));
            }
        }
        Ok(())
    }

    /// Every path named in a value of a message whose fields ACP does not define: each string
    /// and key, word by word. Moves what lies under a recorded cwd.
    fn paths_in(&self, value: &mut Value) -> Result<bool, String> {
        match value {
            Value::String(text) => match self.words_moved(text)? {
                Some(moved) => {
                    *text = moved;
                    Ok(true)
                }
                None => Ok(false),
            },
            Value::Array(items) => {
                let mut moved = false;
                for item in items {
                    moved |= self.paths_in(item)?;
                }
                Ok(moved)
            }
            Value::Object(map) => {
                let mut moved = false;
                let mut renamed = Map::with_capacity(map.len());
                for (key, mut field) in std::mem::take(map) {
                    moved |= self.paths_in(&mut field)?;
                    let key = match self.words_moved(&key)? {
                        Some(new) => {
                            moved = true;
                            new
                        }
                        None => key,
                    };
                    renamed.insert(key, field);
                }
                *map = renamed;
                Ok(moved)
            }
            _ => Ok(false),
        }
    }

    /// `text` with each word that names a path moved to the live cwd; `None` when none moved.
    /// A method whose effect acptap does not know may write what it names: no word may name
    /// version-control or tool configuration either.
    fn words_moved(&self, text: &str) -> Result<Option<String>, String> {
        // A URL in any form a URL parser takes (`file:etc/passwd`, `http:host/x`, `vscode:x`):
        // the colon separates words below, so it is looked for first.
        if let Some(url) = text.split_whitespace().find(|word| looks_like_a_url(word)) {
            return Err(format!("{} is a URL", shown(url)));
        }
        let mut out = String::new();
        let mut last = 0;
        for range in path_words(text) {
            let word = &text[range.clone()];
            let moved = self.map_path(word)?;
            self.guarded(moved.as_deref().unwrap_or(word), false)?;
            if let Some(moved) = moved {
                out.push_str(&text[last..range.start]);
                out.push_str(&moved);
                last = range.end;
            }
        }
        if last == 0 {
            return Ok(None);
        }
        out.push_str(&text[last..]);
        Ok(Some(out))
    }
}

/// `scheme:rest`, as RFC 3986 spells a scheme (a letter, then letters, digits, `+`, `-`, `.`;
/// two characters at least, so that `C:` stays a drive), with something after the colon.
fn looks_like_a_url(word: &str) -> bool {
    let word = word.trim_start_matches(|c: char| "\"'`([{<".contains(c));
    let Some((scheme, rest)) = word.split_once(':') else {
        return false;
    };
    scheme.len() >= 2
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        && !rest.is_empty()
        && !rest.starts_with(char::is_whitespace)
}

/// Where a word may end or begin inside free text.
fn separates(c: char) -> bool {
    c.is_whitespace() || "\"'`=,;:()[]{}<>|&".contains(c)
}

/// The words of `text` that name a path: between separators, starting with `/`, `~` or `.`, or
/// holding a `/` or `\`. A drive letter needs nothing of its own: the colon separates, and what
/// follows it starts with `/` or `\` (`C:\x`, `c:/x`); so does a URL's `//host/...`.
fn path_words(text: &str) -> Vec<std::ops::Range<usize>> {
    let mut words = Vec::new();
    let mut start = None;
    let mut previous: Option<char> = None;
    for (at, c) in text.char_indices() {
        if separates(c) {
            if let Some(begin) = start.take() {
                words.push(begin..at);
            }
        } else if start.is_none() && previous.is_none_or(separates) {
            start = Some(at);
        }
        previous = Some(c);
    }
    if let Some(begin) = start {
        words.push(begin..text.len());
    }
    // A path is a word that starts like one or has a directory in it (`a/../../etc/x`,
    // `.git/hooks/x`, `src/.vscode/tasks.json`).
    words.retain(|range| {
        let word = &text[range.clone()];
        word.starts_with(['/', '~', '.']) || word.contains(['/', '\\'])
    });
    words
}

/// Whether `path`, inside `live` by its text, leaves it on disk: resolved, it is not inside
/// `live` resolved, or it goes through a dangling symbolic link (where it leads is not known).
fn leaves_on_disk(path: &Path, live: &Path) -> bool {
    match containment(path, live, Placing::OnDisk(&Disk)) {
        Containment::Inside => false,
        // No live cwd on this machine: nothing on disk to go through.
        Containment::NoDirectory => false,
        Containment::Outside(_) | Containment::Unplaced => true,
    }
}

/// The command a `terminal/create` asks the client to run, said before it is sent.
fn command_notice(object: &Map<String, Value>) -> String {
    let params = object.get("params");
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("?").to_owned();
    let command = text(params.and_then(|p| p.get("command")));
    let args = params
        .and_then(|p| p.get("args"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    let env = params
        .and_then(|p| p.get("env"))
        .and_then(Value::as_array)
        .map(|vars| {
            vars.iter()
                .map(|v| format!("{}={}", text(v.get("name")), text(v.get("value"))))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|e| !e.is_empty())
        .unwrap_or_else(|| "(none)".into());
    format!(
        "the client is asked to run the recorded command `{command} {args}` in {} with the recorded environment: {env}",
        text(params.and_then(|p| p.get("cwd")))
    )
}

/// Whether every JSON reader reads `text` the same way: strict JSON (UTF-8, no lone surrogate,
/// no NaN) and no key written twice in any object.
pub fn reads_one_way(text: &[u8]) -> bool {
    let mut reader = serde_json::Deserializer::from_slice(text);
    serde::de::DeserializeSeed::deserialize(crate::protocol::message::Skip::ONE_WAY, &mut reader)
        .is_ok()
        && reader.end().is_ok()
}

fn serialised(value: &Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(value).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// A recorded path for a message: cut, and safe for a terminal.
fn shown(path: &str) -> String {
    crate::terminal::terminal_line(path, crate::terminal::NAME_BYTES).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(allow: Allowances) -> Gate {
        let mut gate = Gate::new(allow);
        gate.cwds.push(("/rec".into(), "/nonexistent-live".into()));
        gate
    }

    fn sent(judged: &Judged) -> Value {
        serde_json::from_slice(judged.bytes.as_deref().expect("something sent")).unwrap()
    }

    /// Real agents' lines (Codex's edit and command requests, Qwen Code's read, Gemini CLI's
    /// shell call), recorded in `/rec/proj`: the live client sees the live cwd everywhere, keys
    /// and free text included, and the file's text unchanged.
    #[test]
    fn what_the_client_shows_names_the_live_cwd_not_the_recorded_one() {
        let mut g = Gate::new(Allowances::default());
        g.cwds.push(("/rec/proj".into(), "/live/p".into()));
        let lines = include_str!("../../tests/fixtures/real_peers/replay_as_agent_paths.jsonl");
        assert_eq!(lines.lines().count(), 4);
        for line in lines.lines() {
            assert!(line.contains("/rec/proj"), "{line}");
            let sent = sent(&g.judge(line.as_bytes())).to_string();
            assert!(!sent.contains("/rec/proj"), "{sent}");
            assert!(sent.contains("/live/p"), "{sent}");
        }
        let codex_edit = sent(&g.judge(lines.lines().next().unwrap().as_bytes()));
        let call = &codex_edit["params"]["toolCall"];
        assert_eq!(call["title"], "Edit /live/p/hello.py");
        assert!(call["rawInput"]["changes"]["/live/p/hello.py"].is_object());
        assert_eq!(call["content"][0]["path"], "/live/p/hello.py");
        assert_eq!(call["content"][0]["newText"], "print(\"Hello, ACP\")\n");
        // A file's text is the file's: a recorded path inside it is not rewritten.
        let diff = br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c","content":[{"type":"diff","path":"/rec/proj/a.cfg","oldText":"root=/rec/proj","newText":"root=/rec/proj/x"}]}}}"#;
        let update = &sent(&g.judge(diff))["params"]["update"];
        assert_eq!(update["content"][0]["path"], "/live/p/a.cfg");
        assert_eq!(update["content"][0]["oldText"], "root=/rec/proj");
        assert_eq!(update["content"][0]["newText"], "root=/rec/proj/x");
    }

    /// Found by an outside attack: a client whose `session/new` says cwd `.` got recorded
    /// writes as `./.ssh/authorized_keys`; a NUL cut the path a C client would open.
    #[test]
    fn no_path_goes_to_a_relative_live_cwd_or_with_a_control_character() {
        let allow = Allowances {
            run_commands: false,
            writes: true,
        };
        for live in [".", "rel/dir"] {
            let mut g = Gate::new(allow);
            g.cwds.push(("/rec/proj".into(), live.into()));
            for method in ["fs/write_text_file", "fs/read_text_file"] {
                let line = format!(
                    r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{{"path":"/rec/proj/.ssh/authorized_keys","content":"k"}}}}"#
                );
                let judged = g.judge(line.as_bytes());
                assert!(judged.bytes.is_none(), "{live} {method}");
                assert!(
                    judged.held[0].reason.contains("not an absolute path"),
                    "{live}"
                );
            }
        }
        let g = gate(allow);
        let line = br#"{"jsonrpc":"2.0","id":1,"method":"fs/write_text_file","params":{"path":"/rec/a\u0000/x","content":"k"}}"#;
        let judged = g.judge(line);
        assert!(judged.bytes.is_none());
        assert!(judged.held[0].reason.contains("control character"));
    }

    #[test]
    fn a_recorded_command_names_the_live_cwd_and_embedded_files_keep_their_text() {
        let mut g = Gate::new(Allowances {
            run_commands: true,
            writes: false,
        });
        g.cwds.push(("/rec/proj".into(), "/live/p".into()));
        let create = br#"{"jsonrpc":"2.0","id":1,"method":"terminal/create","params":{"sessionId":"s","command":"cat","args":["/rec/proj/a.txt"],"cwd":"/rec/proj"}}"#;
        let params = &sent(&g.judge(create))["params"];
        assert_eq!(params["args"][0], "/live/p/a.txt");
        assert_eq!(params["cwd"], "/live/p");
        let chunk = br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"resource","resource":{"uri":"file:///rec/proj/a.py","text":"ROOT='/rec/proj'"}}}}}"#;
        let content = &sent(&g.judge(chunk))["params"]["update"]["content"];
        assert_eq!(content["resource"]["uri"], "file:///live/p/a.py");
        assert_eq!(content["resource"]["text"], "ROOT='/rec/proj'");
    }

    #[test]
    fn a_batch_is_judged_element_by_element() {
        let line = br#"[{"jsonrpc":"2.0","id":1,"method":"fs/write_text_file","params":{"path":"/etc/batch.txt","content":"x"}},{"jsonrpc":"2.0","id":2,"method":"fs/read_text_file","params":{"path":"/rec/a"}}]"#;
        let judged = gate(Allowances {
            run_commands: false,
            writes: true,
        })
        .judge(line);
        assert_eq!(
            sent(&judged),
            serde_json::json!([{"jsonrpc":"2.0","id":2,"method":"fs/read_text_file","params":{"path":"/nonexistent-live/a"}}])
        );
        assert_eq!(judged.held.len(), 1);
        assert_eq!(judged.held[0].id.as_deref(), Some("1"));
        assert_eq!(judged.requests.len(), 1);
    }

    #[test]
    fn a_line_read_two_ways_is_sent_as_it_was_judged() {
        // A client keeping the first `path` would write /etc/x; the gate judged the last.
        let line = br#"{"jsonrpc":"2.0","id":1,"method":"fs/read_text_file","params":{"path":"/etc/x","path":"/rec/a"}}"#;
        let judged = gate(Allowances::default()).judge(line);
        let bytes = judged.bytes.unwrap();
        assert!(reads_one_way(bytes.trim_ascii_end()));
        assert!(!String::from_utf8(bytes).unwrap().contains("/etc/x"));
        // A clean line the gate does not change goes byte for byte.
        let line = b"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{}}\r\n";
        assert_eq!(gate(Allowances::default()).judge(line).bytes.unwrap(), line);
    }

    #[test]
    fn extension_methods_are_judged_by_every_path_they_name() {
        let g = gate(Allowances::default());
        let inside = br#"{"jsonrpc":"2.0","id":1,"method":"_zed/open","params":{"files":["/rec/src/a.rs"],"note":"see /rec/b.rs:3"}}"#;
        assert_eq!(
            sent(&g.judge(inside))["params"],
            serde_json::json!({"files":["/nonexistent-live/src/a.rs"],"note":"see /nonexistent-live/b.rs:3"})
        );
        for outside in [
            r#"{"jsonrpc":"2.0","id":1,"method":"_zed/write_file","params":{"path":"/etc/x"}}"#,
            r#"{"jsonrpc":"2.0","method":"_x/run","params":{"cmd":"cat ~/.ssh/id_rsa"}}"#,
            r#"{"jsonrpc":"2.0","method":"_x/run","params":{"/etc/cron.d/x":"* * * * * root sh"}}"#,
            r#"{"jsonrpc":"2.0","method":"_x/put","params":{"path":"/rec/.git/hooks/pre-commit"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"mode":"url","url":"https://example.com"}}"#,
        ] {
            let judged = g.judge(outside.as_bytes());
            assert!(judged.bytes.is_none(), "{outside}");
            assert_eq!(judged.held.len(), 1, "{outside}");
        }
    }

    #[test]
    fn no_path_goes_before_a_session_is_open() {
        let line =
            br#"{"jsonrpc":"2.0","id":1,"method":"fs/read_text_file","params":{"path":"/rec/a"}}"#;
        let judged = Gate::new(Allowances::default()).judge(line);
        assert!(judged.bytes.is_none());
        assert!(judged.held[0].reason.contains("before any session is open"));
    }

    #[test]
    fn commands_only_with_the_opt_in_and_never_about_a_held_terminal() {
        let create = br#"{"jsonrpc":"2.0","id":1,"method":"terminal/create","params":{"sessionId":"s","command":"make"}}"#;
        assert!(gate(Allowances::default()).judge(create).bytes.is_none());
        let allowed = gate(Allowances {
            run_commands: true,
            writes: true,
        });
        let judged = allowed.judge(create);
        // No cwd recorded: the live one is named, so the client cannot pick another.
        assert_eq!(sent(&judged)["params"]["cwd"], "/nonexistent-live");
        assert!(judged.notices[0].contains("`make `"));
        let mut created = gate(Allowances {
            run_commands: true,
            writes: true,
        });
        let output = br#"{"jsonrpc":"2.0","id":2,"method":"terminal/output","params":{"sessionId":"s","terminalId":"t1"}}"#;
        assert!(created.judge(output).bytes.is_none());
        created.created_terminals.insert("t1".into());
        assert!(created.judge(output).bytes.is_some());
        let other = br#"{"jsonrpc":"2.0","id":3,"method":"terminal/kill","params":{"sessionId":"s","terminalId":"t2"}}"#;
        assert!(created.judge(other).bytes.is_none());
    }

    #[test]
    fn a_link_inside_the_cwd_does_not_make_a_guarded_place_ordinary() {
        let live = tempfile::tempdir().unwrap();
        let live_path = live.path().canonicalize().unwrap();
        std::fs::create_dir_all(live_path.join(".git/hooks")).unwrap();
        std::os::unix::fs::symlink(".git", live_path.join("gl")).unwrap();
        std::fs::write(live_path.join(".bashrc"), "").unwrap();
        std::os::unix::fs::symlink(".bashrc", live_path.join("notes.txt")).unwrap();
        let mut g = Gate::new(Allowances {
            run_commands: false,
            writes: true,
        });
        g.cwds
            .push(("/rec".into(), live_path.to_string_lossy().into_owned()));
        for path in ["/rec/gl/hooks/pre-commit", "/rec/notes.txt"] {
            let line = format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"fs/write_text_file","params":{{"path":"{path}","content":"x"}}}}"#
            );
            let judged = g.judge(line.as_bytes());
            assert!(judged.bytes.is_none(), "{path}");
            assert!(judged.held[0].reason.contains("where"), "{:?}", judged.held);
        }
        let ordinary = r#"{"jsonrpc":"2.0","id":1,"method":"fs/write_text_file","params":{"path":"/rec/src/a.rs","content":"x"}}"#;
        assert!(g.judge(ordinary.as_bytes()).bytes.is_some());
    }

    #[test]
    fn a_live_cwd_of_root_does_not_open_the_system_to_writes() {
        let mut g = Gate::new(Allowances {
            run_commands: false,
            writes: true,
        });
        // Not the home directory's ancestor here, so the system and installed-code lists are
        // what holds these.
        g.home = Some("/nonexistent-home/me".into());
        g.cwds.push(("/rec".into(), "/opt".into()));
        for path in [
            "/rec/app/.venv/lib/python3.12/site-packages/zz.pth",
            "/rec/app/node_modules/.bin/tsc",
            "/rec/app/.pre-commit-config.yaml",
        ] {
            let line = format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"fs/write_text_file","params":{{"path":"{path}","content":"x"}}}}"#
            );
            assert!(g.judge(line.as_bytes()).bytes.is_none(), "{path}");
        }
    }

    #[test]
    fn no_write_where_the_live_cwd_holds_the_home_directory_or_the_system() {
        let write = |path: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"fs/write_text_file","params":{{"path":"{path}","content":"x"}}}}"#
            )
        };
        for live in ["/", "/home", "/home/me"] {
            let mut g = Gate::new(Allowances {
                run_commands: false,
                writes: true,
            });
            g.home = Some("/home/me".into());
            g.cwds
                .push(("/rec".into(), live.trim_end_matches('/').into()));
            let judged = g.judge(write("/rec/.vim/plugin/x.vim").as_bytes());
            assert!(judged.held[0].reason.contains("is not a project"), "{live}");
            // Reads are no write: they go.
            let read = r#"{"jsonrpc":"2.0","id":2,"method":"fs/read_text_file","params":{"path":"/rec/notes.txt"}}"#;
            assert!(g.judge(read.as_bytes()).bytes.is_some(), "{live}");
        }
        let mut g = Gate::new(Allowances {
            run_commands: false,
            writes: true,
        });
        g.home = Some("/home/me".into());
        g.cwds.push(("/rec".into(), "/usr/local".into()));
        assert!(g.judge(write("/rec/bin/git").as_bytes()).bytes.is_none());
    }

    #[test]
    fn nested_batches_and_urls_in_any_spelling_are_held() {
        let g = gate(Allowances::default());
        let nested = br#"[[{"jsonrpc":"2.0","id":951,"method":"fs/write_text_file","params":{"path":"/rec/.git/hooks/pre-commit","content":"x"}}]]"#;
        assert!(g.judge(nested).bytes.is_none());
        for uri in [
            "file:etc/passwd",
            "FILE:etc/passwd",
            "file:%2Fetc%2Fpasswd",
            "http:evil.example/x",
            "vscode:extension/evil",
        ] {
            let line = format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"_x/open","params":{{"uri":"{uri}"}}}}"#
            );
            assert!(g.judge(line.as_bytes()).bytes.is_none(), "{uri}");
        }
        // Words with a colon that are not URLs stay.
        let line =
            br#"{"jsonrpc":"2.0","method":"_x/note","params":{"text":"note: at 10:30 see C:"}}"#;
        assert!(g.judge(line).bytes.is_some());
    }

    #[test]
    fn extension_words_that_climb_out_or_name_configuration_are_held() {
        let g = gate(Allowances::default());
        for params in [
            r#"{"path":"a/../../../etc/x"}"#,
            r#"{"path":".git/hooks/x"}"#,
            r#"{"p2":"src/.vscode/tasks.json"}"#,
        ] {
            let line = format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"_zed/write_file","params":{params}}}"#
            );
            assert!(g.judge(line.as_bytes()).bytes.is_none(), "{params}");
        }
    }

    #[test]
    fn a_line_is_judged_against_the_cwd_of_the_session_it_names() {
        let mut g = gate(Allowances::default());
        g.cwds.push(("/".into(), "/other-live".into()));
        g.sessions.insert("s1".into(), 0);
        g.sessions.insert("s2".into(), 1);
        let line = |session: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"fs/read_text_file","params":{{"sessionId":"{session}","path":"/etc/x"}}}}"#
            )
        };
        // s1 was recorded in /rec: /etc/x is outside it, whatever s2's recorded cwd.
        assert!(g.judge(line("s1").as_bytes()).bytes.is_none());
        assert_eq!(
            sent(&g.judge(line("s2").as_bytes()))["params"]["path"],
            "/other-live/etc/x"
        );
    }

    #[test]
    fn fs_and_terminal_requests_go_only_to_a_client_that_serves_them() {
        let read =
            br#"{"jsonrpc":"2.0","id":1,"method":"fs/read_text_file","params":{"path":"/rec/a"}}"#;
        let write = br#"{"jsonrpc":"2.0","id":2,"method":"fs/write_text_file","params":{"path":"/rec/a","content":"x"}}"#;
        let terminal =
            br#"{"jsonrpc":"2.0","id":3,"method":"terminal/create","params":{"command":"make"}}"#;
        let allowed = Allowances {
            run_commands: true,
            writes: true,
        };
        // No `initialize` seen, v1: sent as before.
        let mut g = gate(allowed);
        assert!(g.judge(read).bytes.is_some());
        // v2: the client serves none of them, whatever it advertised.
        g.served.version = Some(Version::V2);
        g.served.client_capabilities = Some(serde_json::json!({"fs": {"readTextFile": true}}));
        for line in [&read[..], write, terminal] {
            let judged = g.judge(line);
            assert!(judged.bytes.is_none());
            assert!(judged.held[0].not_served, "{:?}", judged.held);
            assert!(judged.held[0].reason.contains("v2"), "{:?}", judged.held);
        }
        // v1: what the live client advertised in its `initialize`, and nothing else.
        g.served.version = Some(Version::V1);
        assert!(g.judge(read).bytes.is_some());
        for (line, capability) in [(&write[..], "fs.writeTextFile"), (terminal, "terminal")] {
            let judged = g.judge(line);
            assert!(judged.bytes.is_none());
            assert!(judged.held[0].not_served);
            assert!(
                judged.held[0].reason.contains(capability),
                "{:?}",
                judged.held
            );
        }
        // A v1 recording, a live client that proposed v2 (or a value that is no version):
        // it serves none of them either.
        g.served.client_capabilities = Some(serde_json::json!({"fs": {"readTextFile": true}}));
        for live in [Version::V2, Version::Other(u64::MAX)] {
            g.served.live_version = Some(live);
            let judged = g.judge(read);
            assert!(judged.bytes.is_none());
            assert!(
                judged.held[0].reason.contains("proposed"),
                "{:?}",
                judged.held
            );
        }
        g.served.live_version = Some(Version::V1);
        assert!(g.judge(read).bytes.is_some());
        // Not a request a client serves: never held for that.
        let update = br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{}}}"#;
        g.served.version = Some(Version::V2);
        assert!(g.judge(update).bytes.is_some());
    }

    #[test]
    fn v2_paths_in_permission_subjects_terminals_and_content_chunks_are_moved() {
        let g = gate(Allowances::default());
        let command = br#"{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"s","title":"Run","subject":{"type":"command","command":"make","cwd":"/rec/sub"},"options":[]}}"#;
        assert_eq!(
            sent(&g.judge(command))["params"]["subject"]["cwd"],
            "/nonexistent-live/sub"
        );
        let call = br#"{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"s","title":"Edit","subject":{"type":"tool_call","toolCall":{"toolCallId":"t","locations":[{"path":"/etc/passwd"}]}},"options":[]}}"#;
        assert!(g.judge(call).bytes.is_none());
        let terminal = br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"terminal_update","terminalId":"t","cwd":"/rec"}}}"#;
        assert_eq!(
            sent(&g.judge(terminal))["params"]["update"]["cwd"],
            "/nonexistent-live"
        );
        let chunk = br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_content_chunk","toolCallId":"t","content":{"type":"diff","path":"/etc/cron.d/x","newText":""}}}}"#;
        assert!(g.judge(chunk).bytes.is_none());
    }

    #[test]
    fn path_words_start_after_a_separator() {
        let text = "cat /etc/x a/b ~/y C:\\w ..\\z http://h/p";
        let words: Vec<&str> = path_words(text).into_iter().map(|r| &text[r]).collect();
        assert_eq!(words, ["/etc/x", "a/b", "~/y", "\\w", "..\\z", "//h/p"]);
    }
}
