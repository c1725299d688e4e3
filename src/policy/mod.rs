//! The policy engine: decides a `session/request_permission` for the user, or leaves it to them.
//!
//! Pure: [`Policy::decide`] takes the request's params, what is known of the tool call, the
//! session's cwd and the agent's name, and returns a [`Verdict`]. The proxy (`proxy/policy_tap.rs`)
//! does the I/O. The file-system facts a decision needs (where a symbolic link on a path leads,
//! what a glob argument matches, a repository-shaped directory, the working directory a relative
//! cwd is placed in) come from one [`FileSystem`]: [`Disk`] for every caller, an in-memory one in
//! the tests (`Policy::decide_in`).
//!
//! # Precedence
//!
//! 1. Not about a tool call (mode switch, elicitation): ask.
//! 2. Built-in deny guard `guard:rm-rf` (`guards.rs`).
//! 3. Deny rules (the first that matches).
//! 4. Built-in ask guards (`guards.rs`): `.git` and repository-shaped directories, policy files,
//!    startup files; for every kind but those that only look.
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
//! title; for that agent only (as identified in `initialize`, its name normalised: `agents.rs`),
//! the title of an `execute` call stands for its command; fast-agent's `rawInput.args` completes
//! an argv, and kimi-cli's only content text (``Run command `CMD` ``) is its command. Each
//! sub-command is then read with the command table (`commands.rs`): its dangerous options and its
//! path arguments, resolved in every directory it may run in (the call's working directory, then
//! `cd`). Where a call names no directory, the agent's dialect says where it runs
//! (`agents::Dialect`): the session's cwd, somewhere below it (Claude Code's persistent shell), or
//! nowhere known (opencode). An allow rule with `command` grants a
//! sub-command only without dangers it does not name, with every path inside its `paths` (or
//! `${cwd}`), and with no environment variable it does not list.

pub mod agents;
pub mod commands;
pub(crate) mod filesystem;
pub(crate) mod guards;
pub(crate) mod paths;
pub(crate) mod rules;
pub(crate) mod shell;
pub(crate) mod suggest;

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::protocol::Version;
use crate::protocol::state::PermissionShapes;
use crate::protocol::toolcall::{ToolCall, UpdateKind};
use agents::{Dialect, Unnamed};
use commands::Danger;
pub use filesystem::{Disk, Entry, FileSystem};
use guards::Guards;
use rules::InputMatcher;
pub use rules::{Decision, EXAMPLE_CWD, Origin, PolicyError, PolicySet, Rule};
use shell::Opaque;

/// The command of a kimi-cli Shell call: it sends no kind and no rawInput, and its permission
/// request's only content is the text `Requesting approval to perform: Run command `CMD``
/// (`Run background command` for a background one), CMD verbatim (its title is CMD shortened
/// in the middle). `None` for any other content.
fn kimi_command(content: Option<&Value>) -> Option<String> {
    let [item] = content?.as_array()?.as_slice() else {
        return None;
    };
    let block = item.get("content")?;
    if item.get("type")?.as_str()? != "content" || block.get("type")?.as_str()? != "text" {
        return None;
    }
    let text = block.get("text")?.as_str()?;
    let rest = ["Run command `", "Run background command `"]
        .iter()
        .find_map(|form| {
            text.strip_prefix("Requesting approval to perform: ")?
                .strip_prefix(form)
        })?;
    rest.strip_suffix('`').map(str::to_owned)
}

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
    /// The connection's protocol version (`None`: not known, e.g. `policy check --request`;
    /// then a request is read in whichever shape it has).
    pub version: Option<Version>,
}

/// A recorded request decided again: the verdict, what it was decided on, and whether that was
/// the input recorded with the live decision (`recorded`) or rebuilt from the lines
/// (`reconstructed`).
#[derive(Debug, Clone)]
pub(crate) struct Redecided {
    pub verdict: Verdict,
    pub input: DecisionInput,
    pub source: &'static str,
}

/// The params of a `session/request_permission` given whole (a JSON-RPC message) or as its
/// params alone.
pub(crate) fn request_params(request: &Value) -> &Value {
    match request.get("params") {
        Some(params) if request.get("method").is_some() => params,
        _ => request,
    }
}

/// What a decision is made on, recorded with it so that `policy replay` decides on exactly what
/// the live tap saw: the tool call as it stood (the request's `toolCall` merged over what was
/// known), the session's cwd and the agent's name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct DecisionInput {
    /// The merged tool call (its fields and `toolCallId`); `None` when the request is not about
    /// a tool call.
    #[serde(rename = "toolCall")]
    pub tool_call: Option<Value>,
    pub cwd: Option<String>,
    pub agent: Option<String>,
    /// Left to the user before any rule is looked at: the guard (if one) and why.
    #[serde(
        rename = "leftToUser",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub left_to_user: Option<(Option<String>, String)>,
    /// Which shape of the request was judged: `toolCall` (v1), `subject:command` or
    /// `subject:tool_call` (v2), `subject:TYPE` for a subject left to the user.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub judged: Option<String>,
    /// Other readings of the same request (the v1 `toolCall` beside a subject, the tool call a
    /// command subject names): each must get the same decision as the judged one, else the
    /// user decides. `[what, tool call]`.
    #[serde(rename = "mustAgree", skip_serializing_if = "Vec::is_empty", default)]
    pub must_agree: Vec<(String, Value)>,
}

impl DecisionInput {
    /// The input a recorded request is decided again on: the live decision's own input when
    /// one was recorded (`recorded`), else rebuilt from the request's params and the agent's
    /// earlier `session/update` lines about its tool call (`reconstructed`).
    pub(crate) fn of_recorded(
        params: &Value,
        recorded_input: Option<&str>,
        earlier_updates: &[Vec<u8>],
        context: Context,
    ) -> (DecisionInput, &'static str) {
        if let Some(input) = recorded_input.and_then(|text| serde_json::from_str(text).ok()) {
            return (input, "recorded");
        }
        let mut known: Option<ToolCall> = None;
        for line in earlier_updates {
            let Some(update) = crate::protocol::message::decode(line) else {
                continue;
            };
            if let Some((update, how)) = update
                .get("params")
                .and_then(crate::protocol::toolcall::from_session_update)
            {
                ToolCall::upsert(&mut known, update, how);
            }
        }
        (
            DecisionInput::new(params, known.as_ref(), context, None),
            "reconstructed",
        )
    }

    /// The input for a request's params, given what was known of its tool call. `unknown`: the
    /// tap could not follow this tool call (the guard and why).
    ///
    /// Which shape is judged (see docs/protocol.md): v1's `toolCall`, or v2's `subject` (a
    /// `command` subject as an `execute` call running that command in that cwd, a `tool_call`
    /// subject applied to the call's state like a `tool_call_update`). Under v2 a request
    /// without a subject, under v1 one without a `toolCall`, and an unknown subject type go to
    /// the user; when both shapes are present they must say the same (kind, command, where it
    /// runs, paths), else the user decides.
    pub fn new(
        params: &Value,
        known: Option<&ToolCall>,
        context: Context,
        unknown: Option<(String, String)>,
    ) -> DecisionInput {
        Self::new_in(&Disk, params, known, context, unknown)
    }

    /// [`DecisionInput::new`], with the file system's facts (where the readings of a request
    /// run, the paths they name) from `fs`.
    pub(crate) fn new_in(
        fs: &dyn FileSystem,
        params: &Value,
        known: Option<&ToolCall>,
        context: Context,
        unknown: Option<(String, String)>,
    ) -> DecisionInput {
        let mut input = DecisionInput {
            tool_call: None,
            cwd: context.cwd.map(|c| c.to_string_lossy().into_owned()),
            agent: context.agent.map(str::to_owned),
            left_to_user: unknown.map(|(guard, why)| (Some(guard), why)),
            judged: None,
            must_agree: Vec::new(),
        };
        if let Some(Version::Other(n)) = context.version {
            // What a client of a version acptap does not know shows is unknown here.
            input.leave(format!(
                "protocol version {n} is not one acptap knows (1, or the v2 draft): left to the user"
            ));
            return input;
        }
        let shapes = PermissionShapes::of(Some(params));
        let v1 = match shapes
            .v1_tool_call
            .map(|update| merged_call(update, known, context.version))
            .transpose()
        {
            Ok(v1) => v1,
            Err(why) => {
                input.leave(why);
                return input;
            }
        };
        let Some(subject) = shapes.subject else {
            input.judge_v1(v1, known, context.version);
            return input;
        };
        if context.version == Some(Version::V1) && v1.is_none() {
            input.leave(
                "a v2 `subject` on a v1 connection without a `toolCall` (a v1 client cannot show it): left to the user".into(),
            );
        }
        let Some((call, judged)) = input.read_subject(&shapes, subject, known, context.version)
        else {
            return input;
        };
        input.hold_to_agreement(fs, &call, judged, v1, known, context);
        input.judged = Some(judged.into());
        input.tool_call = Some(call);
        input
    }

    /// Leaves the request to the user, for `why` unless a reason was found before.
    fn leave(&mut self, why: String) {
        self.left_to_user.get_or_insert((None, why));
    }

    /// A request without a subject: the v1 `toolCall` is judged, when there is one (else the
    /// request is not about a tool call).
    fn judge_v1(&mut self, v1: Option<Value>, known: Option<&ToolCall>, version: Option<Version>) {
        let Some(call) = v1 else {
            return; // not about a tool call
        };
        if version == Some(Version::V2) {
            self.leave(
                "a v2 request without a `subject` (a v2 client shows only its title, not the v1 `toolCall`): left to the user".into(),
            );
        }
        if known.is_some_and(|k| k.finished) {
            self.leave(
                "the tool call already finished (its input is no longer held): left to the user"
                    .into(),
            );
        }
        self.judged = Some("toolCall".into());
        self.tool_call = Some(call);
    }

    /// The tool call a v2 subject stands for, and how it was read (`subject:command`,
    /// `subject:tool_call`). `None` when it cannot be judged: the request is then left to the
    /// user, with `judged` naming an unknown subject type.
    fn read_subject(
        &mut self,
        shapes: &PermissionShapes,
        subject: &Value,
        known: Option<&ToolCall>,
        version: Option<Version>,
    ) -> Option<(Value, &'static str)> {
        match shapes.subject_type() {
            Some("command") => match command_call(subject) {
                Ok(call) => Some((call, "subject:command")),
                Err(why) => {
                    self.leave(why);
                    None
                }
            },
            Some("tool_call") => {
                let Some(update) = shapes.subject_tool_call else {
                    self.leave(
                        "the `tool_call` subject has no `toolCall` object: left to the user".into(),
                    );
                    return None;
                };
                if known.is_some_and(|k| k.finished) {
                    self.leave(
                        "the tool call already finished (its input is no longer held): left to the user"
                            .into(),
                    );
                }
                match merged_call(update, known, version) {
                    Ok(call) => Some((call, "subject:tool_call")),
                    Err(why) => {
                        self.leave(why);
                        None
                    }
                }
            }
            other => {
                let shown = other.map_or_else(|| "without a type".to_owned(), |t| format!("`{t}`"));
                self.leave(format!(
                    "a v2 subject {shown} that acptap does not judge: left to the user"
                ));
                self.judged = Some(format!("subject:{}", other.unwrap_or("?")));
                None
            }
        }
    }

    /// Holds the judged reading of a subject to the other readings of the request: the v1
    /// `toolCall`, and for a command subject that names a known tool call, that call running
    /// the subject's command (its kind, where it runs, its paths, its environment). A reading
    /// that disagrees leaves the request to the user; each must get the same decision
    /// (`must_agree`).
    fn hold_to_agreement(
        &mut self,
        fs: &dyn FileSystem,
        call: &Value,
        judged: &str,
        v1: Option<Value>,
        known: Option<&ToolCall>,
        context: Context,
    ) {
        let named_known = (judged == "subject:command").then_some(known).flatten();
        if let Some(Err(why)) = named_known.map(|k| unambiguous(k, context.version)) {
            self.leave(why);
        }
        let named = named_known.map(|k| named_call_running(k, call));
        let dialect = Dialect::of(context.agent);
        for (other, what) in [(v1, "v1 `toolCall`"), (named, "tool call it names")] {
            let Some(other) = other else { continue };
            if let Some(difference) = disagreement(fs, call, &other, judged, context.cwd, &dialect)
            {
                self.leave(format!(
                    "the v2 subject and the {what} disagree ({difference}): left to the user"
                ));
            }
            self.must_agree.push((what.to_owned(), other));
        }
    }
}

impl DecisionInput {
    /// A command subject that names a terminal acptap saw (`terminal_update`) must name its
    /// command and cwd; `terminal` is that terminal's `(command, cwd)` as last reported, `None`
    /// when it was not seen. `forgotten`: more terminals were reported than acptap holds.
    pub(crate) fn check_terminal(
        &mut self,
        params: &Value,
        terminal: Option<(Option<&Value>, Option<&Value>)>,
        forgotten: bool,
    ) {
        let Some(subject) = params
            .get("subject")
            .filter(|s| s.get("type").and_then(Value::as_str) == Some("command"))
        else {
            return;
        };
        let Some(id) = subject.get("terminalId").filter(|id| !id.is_null()) else {
            return;
        };
        let why = match terminal {
            None if forgotten => Some(format!(
                "the command subject names terminal {id}, which acptap no longer holds"
            )),
            None => None,
            Some((command, cwd)) => [("command", command), ("cwd", cwd)]
                .into_iter()
                .find(|(key, known)| known.is_some_and(|k| Some(k) != subject.get(*key)))
                .map(|(key, known)| {
                    format!(
                        "the command subject and terminal {id} it names disagree ({key} {} against {})",
                        subject.get(key).unwrap_or(&Value::Null),
                        known.unwrap_or(&Value::Null)
                    )
                }),
        };
        if let Some(why) = why {
            self.left_to_user
                .get_or_insert((None, format!("{why}: left to the user")));
        }
    }
}

/// A tool-call update (v1 `toolCall`, or a v2 `tool_call` subject's) applied over what was known
/// of the call, as the client applies it: the state the request is judged on.
///
/// A call whose messages gave a field a value of the wrong type, or (on a v1 connection) cleared
/// `content` or `locations` with `null`, is read differently by different clients: `Err`.
fn merged_call(
    update: &serde_json::Map<String, Value>,
    known: Option<&ToolCall>,
    version: Option<Version>,
) -> Result<Value, String> {
    if !update.get("toolCallId").is_some_and(Value::is_string) {
        return Err("the request names no toolCallId: left to the user".into());
    }
    let mut merged = known.cloned();
    ToolCall::upsert(&mut merged, update, UpdateKind::PermissionRequest);
    let merged = merged.unwrap_or_default();
    unambiguous(&merged, version)?;
    let mut call = merged.to_object();
    call.insert("toolCallId".into(), update["toolCallId"].clone());
    Ok(Value::Object(call))
}

/// `Err` (why) when clients may show this call differently from what acptap holds of it.
fn unambiguous(call: &ToolCall, version: Option<Version>) -> Result<(), String> {
    if let Some(why) = &call.ambiguous {
        return Err(format!("the tool call's {why}: left to the user"));
    }
    if call.cleared_by_null && version == Some(Version::V1) {
        return Err(
            "a `null` cleared the tool call's content or locations, which v1 clients read as unchanged or as cleared: left to the user"
                .into(),
        );
    }
    Ok(())
}

/// The tool call a command subject names, as the rules would see it running the subject's
/// command: its recorded state, with the subject's `command` and `cwd` where its rawInput has
/// none (every other key, such as `env`, kept), and `execute` for a kind unset or `other`.
fn named_call_running(known: &ToolCall, subject_call: &Value) -> Value {
    let mut call = known.to_object();
    let mut raw_input = match call.remove("rawInput") {
        Some(Value::Object(input)) => input,
        _ => serde_json::Map::new(),
    };
    // What the call already says stays (a different command or cwd is a disagreement).
    for key in ["command", "cwd"] {
        if let Some(value) = subject_call.get("rawInput").and_then(|r| r.get(key)) {
            raw_input.entry(key).or_insert_with(|| value.clone());
        }
    }
    call.insert("rawInput".into(), Value::Object(raw_input));
    if matches!(
        call.get("kind").and_then(Value::as_str),
        None | Some("other")
    ) {
        call.insert("kind".into(), Value::String("execute".into()));
    }
    call.insert(
        "toolCallId".into(),
        subject_call
            .get("toolCallId")
            .cloned()
            .unwrap_or(Value::Null),
    );
    Value::Object(call)
}

/// A v2 `command` subject as the `execute` call the rules judge: that command, run in that cwd.
fn command_call(subject: &Value) -> Result<Value, String> {
    let Some(command) = subject.get("command").and_then(Value::as_str) else {
        return Err("the `command` subject has no command string: left to the user".into());
    };
    let cwd = match subject.get("cwd") {
        Some(Value::String(cwd)) if Path::new(cwd).is_absolute() => cwd.clone(),
        // The schema requires an absolute path: `~`, `..` or a relative path is the agent's
        // to explain to the user, not acptap's to place.
        Some(Value::String(cwd)) => {
            return Err(format!(
                "the `command` subject's cwd `{cwd}` is not an absolute path: left to the user"
            ));
        }
        _ => return Err("the `command` subject has no cwd: left to the user".into()),
    };
    let mut call = serde_json::Map::new();
    call.insert(
        "toolCallId".into(),
        subject.get("toolCallId").cloned().unwrap_or(Value::Null),
    );
    call.insert("kind".into(), Value::String("execute".into()));
    call.insert("status".into(), Value::String("pending".into()));
    call.insert(
        "rawInput".into(),
        serde_json::json!({"command": command, "cwd": cwd}),
    );
    Ok(Value::Object(call))
}

/// What two readings of one request must agree on: the kind, the command, where it runs, and
/// (for a tool-call subject) the paths. `None`: they agree.
fn disagreement(
    fs: &dyn FileSystem,
    judged: &Value,
    other: &Value,
    how: &str,
    cwd: Option<&Path>,
    dialect: &Dialect,
) -> Option<String> {
    let text =
        |v: Option<&Value>| v.map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned));
    let kind = |call: &Value| text(call.get("kind")).unwrap_or_else(|| "other".into());
    let command = |call: &Value| text(call.get("rawInput").and_then(|r| r.get("command")));
    let (a, b) = (kind(judged), kind(other));
    if a != b {
        return Some(format!("kind `{a}` against `{b}`"));
    }
    let (a, b) = (command(judged), command(other));
    if a != b {
        let show = |c: Option<String>| c.map_or_else(|| "none".to_owned(), |c| format!("`{c}`"));
        return Some(format!("command {} against {}", show(a), show(b)));
    }
    // The subject's `cwd` is the protocol's; the other reading is the agent's own request.
    let subject = dialect.for_command_subject();
    let place = |call: &Value, dialect: &Dialect| -> Vec<Option<PathBuf>> {
        let dirs = paths::workdirs(call.get("rawInput"), call.get("content"), dialect);
        if dirs.is_empty() {
            return vec![cwd.map(Path::to_owned)];
        }
        dirs.iter()
            .map(|d| {
                d.as_ref()
                    .ok()
                    .and_then(|d| paths::normalise(fs, d, cwd, None))
            })
            .collect()
    };
    if a.is_some() {
        let judged_dialect = if how == "subject:command" {
            &subject
        } else {
            dialect
        };
        let (a, b) = (place(judged, judged_dialect), place(other, dialect));
        if a != b {
            let show = |dirs: &[Option<PathBuf>]| {
                dirs.iter()
                    .map(|d| d.as_ref().map_or("?".into(), |d| d.display().to_string()))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Some(format!("runs in {} against {}", show(&a), show(&b)));
        }
    }
    if how == "subject:tool_call" {
        let named = |call: &Value| {
            let raw = paths::tool_call_paths(
                call.get("locations"),
                call.get("content"),
                call.get("rawInput"),
            );
            let mut all: Vec<Option<PathBuf>> = raw
                .paths
                .iter()
                .map(|p| paths::normalise(fs, p, cwd, None))
                .collect();
            all.sort();
            all.dedup();
            all
        };
        if named(judged) != named(other) {
            return Some("the paths they name differ".into());
        }
    }
    None
}

/// Why a request whose line names a key twice in one object is left to the user.
pub(crate) const DUPLICATE_KEYS: &str =
    "the request names a key twice in one object, which peers read differently: left to the user";

/// A request left to the user, by the guard or rule named (if any), and why.
fn ask(rule: Option<String>, reason: String) -> Verdict {
    Verdict {
        decision: Decision::Ask,
        rule,
        option_id: None,
        option_kind: None,
        reason,
    }
}

/// Most paths one tool call may name and still be decided by the rules.
pub const MAX_CALL_PATHS: usize = 1000;

/// A loaded policy, ready to decide.
#[derive(Debug)]
pub struct Policy {
    pub set: PolicySet,
    home: Option<PathBuf>,
    /// The policy files as paths a tool might name (the ask guard protects them).
    files: Vec<PathBuf>,
    /// Path matchers per rule and cwd: compiled once per session.
    globs: RefCell<HashMap<GlobKey, Result<globset::GlobSet, rules::RuleError>>>,
    /// The paths a command rule without `paths` allows: `${cwd}/**`.
    inside_cwd: Vec<String>,
}

/// A rule (by index; `None` for the implicit `${cwd}/**` of a command rule without `paths`) in
/// a session (by cwd).
type GlobKey = (Option<usize>, Option<PathBuf>);

/// A tool call as the rules see it.
struct View {
    kind: Option<String>,
    title: Option<String>,
    raw_input: Option<Value>,
    /// Every path the call names (locations, diffs, rawInput, where a command runs): normalised;
    /// `None` for one that cannot be placed (relative with no known cwd, `~user`, unreadable).
    call_paths: Vec<Option<PathBuf>>,
    /// `call_paths` and every path argument of the command: what deny rules and guards see.
    all_paths: Vec<Option<PathBuf>>,
    /// rawInput keys read as paths by shape only: a rule without `paths` never allows them.
    unrecognised: Vec<String>,
    command: Option<Command>,
    /// `rawInput.env`: the variable names, or why it cannot be read.
    env: Result<Vec<String>, String>,
    /// Why where the command runs cannot be placed, when the agent's dialect says so.
    unplaced: Option<&'static str>,
}

struct Command {
    analysed: Result<Vec<Analysed>, Opaque>,
    /// A deliberately loose reading, for deny and ask rules and the guards: every run of words
    /// between shell operators, in any construct.
    loose: Vec<Vec<String>>,
}

/// `rawInput.command` (or gemini-cli's title) as it came.
enum Script {
    Line(String),
    Argv(Vec<Value>),
    Unreadable(String),
}

/// Where a command runs, as the rules see it (see [`command_place`]).
struct Place {
    /// The directories its relative paths are resolved in (`None`: cannot be known).
    workdirs: Vec<Option<PathBuf>>,
    /// What must be inside the rule's bounds for the command to run there.
    bounds: Vec<Option<PathBuf>>,
    /// Why it cannot be placed, in the agent's dialect, for the reason shown.
    unplaced: Option<&'static str>,
}

const CLAUDE_SHELL_MOVES: &str = "a path or working directory that cannot be known: Claude Code's \
    shell stays in the directory an earlier call moved it to";
const OPENCODE_WORKDIR_UNSAID: &str = "where it runs is not in the request (opencode names its \
    `workdir` only after the answer)";
const FAST_AGENT_RELATIVE_CWD: &str =
    "its `cwd` is relative, and fast-agent gives it to the client's terminal as it is";

/// Where a command runs: the directories the call names (`named`, from [`paths::workdirs`]),
/// else where the agent runs one it does not name ([`Dialect::unnamed`]): the session's
/// cwd; somewhere below it (Claude Code: relative paths cannot be placed, and the cwd and a
/// stand-in two levels below it must both be inside the rule's bounds); or nowhere known.
fn command_place(
    fs: &dyn FileSystem,
    named: &[Result<String, String>],
    dialect: &Dialect,
    cwd: Option<&Path>,
    home: Option<&Path>,
) -> Place {
    if named.is_empty() {
        let here = || cwd.map(Path::to_owned);
        return match dialect.unnamed {
            Unnamed::SessionCwd => Place {
                workdirs: vec![here()],
                bounds: vec![here()],
                unplaced: None,
            },
            Unnamed::InsideSessionCwd => Place {
                workdirs: vec![None],
                bounds: vec![
                    here(),
                    cwd.map(|c| {
                        c.join(paths::ANY_DIRECTORY_BELOW)
                            .join(paths::ANY_DIRECTORY_BELOW)
                    }),
                ],
                unplaced: Some(CLAUDE_SHELL_MOVES),
            },
            Unnamed::Unknown => Place {
                workdirs: vec![None],
                bounds: vec![None],
                unplaced: Some(OPENCODE_WORKDIR_UNSAID),
            },
        };
    }
    let relative_ok = dialect.relative_workdir_placeable;
    let mut unplaced = None;
    let dirs: Vec<Option<PathBuf>> = named
        .iter()
        .map(|d| {
            let d = d.as_ref().ok()?;
            if !relative_ok && !Path::new(d).is_absolute() {
                unplaced = Some(FAST_AGENT_RELATIVE_CWD);
                return None;
            }
            paths::normalise(fs, d, cwd, home)
        })
        .collect();
    Place {
        workdirs: dirs.clone(),
        bounds: dirs,
        unplaced,
    }
}

/// One simple command, read with the command table.
struct Analysed {
    words: Vec<String>,
    /// Names of its `NAME=value` prefixes.
    env: Vec<String>,
    dangers: Vec<Danger>,
    /// Path arguments by word index, resolved in every directory the command may run in.
    paths: Vec<(usize, Option<PathBuf>)>,
    /// `cd DIR`: needs no rule of its own; DIR is held to the rule like any path.
    implicit: bool,
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
            .map(|h| canonical(&Disk, &h));
        Ok(Policy {
            files: files.iter().map(|f| canonical(&Disk, f)).collect(),
            set,
            home,
            globs: RefCell::new(HashMap::new()),
            inside_cwd: vec!["${cwd}/**".to_owned()],
        })
    }

    /// Loads policy files as [`Policy::load`] does, for a given home directory instead of
    /// `$HOME` (tests and `policy check --home`).
    pub fn load_with_home(files: &[PathBuf], home: &Path) -> Result<Policy, PolicyError> {
        let mut policy = Self::load_unchecked(files)?;
        policy.home = Some(canonical(&Disk, home));
        if let Some(failed) = policy.self_check().into_iter().find(|c| !c.passed) {
            return Err(PolicyError {
                origin: failed.origin,
                message: format!("{} failed: {}", failed.name, failed.detail),
            });
        }
        Ok(policy)
    }

    /// A policy from one file's text, named `file` in its errors, examples and tests run: what
    /// `policy suggest` writes, checked before it is written.
    pub(crate) fn from_text(
        file: &Path,
        text: &str,
        home: Option<&Path>,
    ) -> Result<Policy, PolicyError> {
        let policy = Policy {
            files: vec![file.to_owned()],
            set: PolicySet::parse_text(file, text)?,
            home: home.map(|h| canonical(&Disk, h)),
            globs: RefCell::new(HashMap::new()),
            inside_cwd: vec!["${cwd}/**".to_owned()],
        };
        if let Some(failed) = policy.self_check().into_iter().find(|c| !c.passed) {
            return Err(PolicyError {
                origin: failed.origin,
                message: format!("{} failed: {}", failed.name, failed.detail),
            });
        }
        Ok(policy)
    }

    pub(crate) fn hash(&self) -> &str {
        &self.set.hash
    }

    /// Decides a `session/request_permission` (its params). `known` is the tool call's state as
    /// recorded before the request.
    pub fn decide(&self, params: &Value, known: Option<&ToolCall>, context: Context) -> Verdict {
        self.decide_in(&Disk, params, known, context)
    }

    /// [`Policy::decide`], with every file-system fact the decision needs (symbolic links on a
    /// path, a glob's matches, a repository on disk) from `fs`.
    pub(crate) fn decide_in(
        &self,
        fs: &dyn FileSystem,
        params: &Value,
        known: Option<&ToolCall>,
        context: Context,
    ) -> Verdict {
        let input = DecisionInput::new_in(fs, params, known, context, None);
        self.decide_input_in(fs, &input, params.get("options"))
    }

    /// A recorded `session/request_permission` line decided again, on the input recorded with
    /// the live decision when there is one (`DecisionInput::of_recorded`). `None` if the line is
    /// not a JSON-RPC message with params.
    pub(crate) fn decide_recorded(
        &self,
        request_line: &[u8],
        recorded_input: Option<&str>,
        earlier_updates: &[Vec<u8>],
        context: Context,
    ) -> Option<Redecided> {
        let message: Value = serde_json::from_slice(request_line).ok()?;
        let params = message.get("params")?;
        let (input, source) =
            DecisionInput::of_recorded(params, recorded_input, earlier_updates, context);
        Some(Redecided {
            verdict: self.decide_input(&input, params.get("options")),
            input,
            source,
        })
    }

    /// Decides on what a decision is made on ([`DecisionInput`]): live, or as recorded.
    pub(crate) fn decide_input(&self, input: &DecisionInput, options: Option<&Value>) -> Verdict {
        self.decide_input_in(&Disk, input, options)
    }

    fn decide_input_in(
        &self,
        fs: &dyn FileSystem,
        input: &DecisionInput,
        options: Option<&Value>,
    ) -> Verdict {
        if let Some((rule, reason)) = &input.left_to_user {
            return ask(rule.clone(), reason.clone());
        }
        let Some(Value::Object(call)) = &input.tool_call else {
            return ask(None, "not about a tool call: left to the user".into());
        };
        // A v2 command subject's `cwd` is the protocol's field, not the agent's rawInput.
        let subject = input.judged.as_deref() == Some("subject:command");
        let verdict = self.judge_call(fs, call, input, options, subject);
        for (what, other) in &input.must_agree {
            let Value::Object(other) = other else {
                return ask(None, format!("the {what} cannot be read: left to the user"));
            };
            let alone = self.judge_call(fs, other, input, options, false);
            if alone.decision != verdict.decision {
                return ask(
                    None,
                    format!(
                        "the v2 subject and the {what} disagree: the subject would be {}, the {what} {} ({}): left to the user",
                        verdict.decision, alone.decision, alone.reason
                    ),
                );
            }
        }
        verdict
    }

    /// One reading of a request (a merged tool call) judged by the guards and the rules.
    fn judge_call(
        &self,
        fs: &dyn FileSystem,
        call: &serde_json::Map<String, Value>,
        input: &DecisionInput,
        options: Option<&Value>,
        command_subject: bool,
    ) -> Verdict {
        let (merged, _) = ToolCall::create(call, UpdateKind::PermissionRequest);
        if merged.finished {
            // Its rawInput may have been cut (see `protocol::toolcall`): nothing to decide on.
            return ask(
                None,
                "the request says the tool call finished: left to the user".into(),
            );
        }
        let named = paths::tool_call_paths(
            merged.get("locations"),
            merged.get("content"),
            merged.get("rawInput"),
        )
        .paths
        .len();
        if named > MAX_CALL_PATHS {
            // Each path costs file-system lookups on the data path: past the bound, the user sees it.
            return ask(
                None,
                format!(
                    "the tool call names {named} paths (more than {MAX_CALL_PATHS}): left to the user"
                ),
            );
        }
        let context = Context {
            cwd: input.cwd.as_deref().map(Path::new),
            agent: input.agent.as_deref(),
            ..Default::default()
        };
        let cwd = context.cwd.map(|cwd| canonical(fs, cwd));
        let mut dialect = Dialect::of(context.agent);
        if command_subject {
            dialect = dialect.for_command_subject();
        }
        let view = self.view(fs, &merged, cwd.as_deref(), &dialect);
        let outcome = self.evaluate(fs, &view, cwd.as_deref());
        finish(outcome, options)
    }

    fn view(
        &self,
        fs: &dyn FileSystem,
        call: &ToolCall,
        cwd: Option<&Path>,
        dialect: &Dialect,
    ) -> View {
        let home = self.home.as_deref();
        let mut kind = call.text("kind");
        let raw_input = call.get("rawInput").cloned();
        let raw = paths::tool_call_paths(
            call.get("locations"),
            call.get("content"),
            raw_input.as_ref(),
        );
        let mut call_paths: Vec<Option<PathBuf>> = raw
            .paths
            .iter()
            .map(|p| paths::normalise(fs, p, cwd, home))
            .chain(raw.unreadable.iter().map(|_| None))
            .collect();
        let title = call.get("title").and_then(Value::as_str).map(str::to_owned);
        // fast-agent's `args`: with them, `command` is the program and `args` its arguments,
        // run without a shell (`{"command": "find", "args": [".", "-delete"]}`).
        let args = raw_input
            .as_ref()
            .and_then(|r| r.get("args"))
            .filter(|a| !a.is_null());
        let script = match (raw_input.as_ref().and_then(|r| r.get("command")), args) {
            (Some(Value::String(script)), None) => Some(Script::Line(script.clone())),
            (Some(program @ Value::String(_)), Some(Value::Array(args))) => Some(Script::Argv(
                std::iter::once(program.clone())
                    .chain(args.iter().cloned())
                    .collect(),
            )),
            (Some(Value::Array(argv)), None) => Some(Script::Argv(argv.clone())),
            (Some(command), Some(args)) => Some(Script::Unreadable(format!(
                "{command} with rawInput.args {args}"
            ))),
            (Some(other), None) => Some(Script::Unreadable(other.to_string())),
            (None, _) if kind.as_deref() == Some("execute") && dialect.gemini => {
                title.clone().map(Script::Line)
            }
            // kimi-cli sends its Shell calls without a kind (read as `other`): they run a command.
            (None, _)
                if matches!(kind.as_deref(), None | Some("other" | "execute")) && dialect.kimi =>
            {
                kimi_command(call.get("content")).map(|line| {
                    kind = Some("execute".to_owned());
                    Script::Line(line)
                })
            }
            (None, _) => None,
        };
        let mut all_paths = Vec::new();
        let mut unplaced = None;
        let command = script.map(|script| {
            let named = paths::workdirs(raw_input.as_ref(), call.get("content"), dialect);
            let place = command_place(fs, &named, dialect, cwd, home);
            unplaced = place.unplaced;
            let (workdirs, bounds) = (place.workdirs, place.bounds);
            call_paths.extend(bounds);
            let command = Command::new(fs, script, &workdirs, home);
            for analysed in command.analysed.iter().flatten() {
                all_paths.extend(analysed.paths.iter().map(|(_, p)| p.clone()));
            }
            command
        });
        all_paths.extend(call_paths.iter().cloned());
        let env = match raw_input.as_ref().and_then(|r| r.get("env")) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Object(vars)) if vars.values().all(Value::is_string) => {
                Ok(vars.keys().cloned().collect())
            }
            Some(other) => Err(format!("rawInput.env cannot be read: {other}")),
        };
        // Another key that may carry an environment (`environment`, `env_vars`, `envVars`).
        let other_env = raw_input
            .as_ref()
            .and_then(Value::as_object)
            .and_then(|input| {
                input.iter().find(|(key, value)| {
                    key.as_str() != "env"
                        && key.to_ascii_lowercase().contains("env")
                        && match value {
                            Value::Null => false,
                            Value::Object(map) => !map.is_empty(),
                            Value::Array(items) => !items.is_empty(),
                            _ => true,
                        }
                })
            })
            .map(|(key, _)| format!("rawInput.{key} may set environment variables"));
        let env = match other_env {
            Some(why) => Err(why),
            None => env,
        };
        View {
            kind,
            title,
            raw_input,
            call_paths,
            all_paths,
            unrecognised: raw.unrecognised,
            command,
            env,
            unplaced,
        }
    }

    fn evaluate(&self, fs: &dyn FileSystem, view: &View, cwd: Option<&Path>) -> Outcome {
        let outcome = |decision, rule: Option<String>, reason| Outcome {
            decision,
            rule,
            reason,
            allow_always: false,
        };
        let guards = Guards {
            home: self.home.as_deref(),
            policy_files: &self.files,
        };
        if let Some(command) = &view.command {
            let strict = command
                .analysed
                .iter()
                .flatten()
                .map(|c| c.words.as_slice());
            let loose = command.loose.iter().map(Vec::as_slice);
            if let Some(reason) = guards.rm_recursive(fs, strict.chain(loose), cwd) {
                return outcome(Decision::Deny, Some("guard:rm-rf".into()), reason);
            }
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
        let looks_only = view
            .kind
            .as_deref()
            .is_some_and(|k| LOOKING_KINDS.contains(&k));
        let guarded = guards
            .ask_in(fs, &view.call_paths, true)
            .or_else(|| guards.ask_in(fs, &view.all_paths, false));
        if !looks_only && let Some((guard, reason)) = guarded {
            return outcome(Decision::Ask, Some(guard.into()), reason);
        }
        if let Some(rule) = first(Decision::Ask).or_else(|| first(Decision::Allow)) {
            return by_rule(rule);
        }
        // Say which allow rule came closest, and what held it back.
        let near_miss = self.set.rules.iter().enumerate().find_map(|(i, r)| {
            (r.decision == Decision::Allow && self.matches_fields(r, view))
                .then(|| self.allows(i, r, view, cwd).err().flatten())
                .flatten()
        });
        let mut reason = format!("no rule matches: the default is {}", self.set.default);
        if let Some(near_miss) = near_miss {
            reason.push_str(&format!(" ({near_miss})"));
        }
        outcome(self.set.default, None, reason)
    }

    /// Whether one rule's conditions all hold for the tool call.
    fn matches(&self, index: usize, rule: &Rule, view: &View, cwd: Option<&Path>) -> bool {
        if !self.matches_fields(rule, view) {
            return false;
        }
        if let Some(title) = &rule.title
            && !view.title.as_ref().is_some_and(|t| title.is_match(t))
        {
            return false;
        }
        if rule.decision == Decision::Allow {
            self.allows(index, rule, view, cwd).is_ok()
        } else {
            self.catches(index, rule, view, cwd)
        }
    }

    /// The conditions on the call's own fields: kind and input.
    fn matches_fields(&self, rule: &Rule, view: &View) -> bool {
        rule.kinds
            .as_ref()
            .is_none_or(|kinds| view.kind.as_ref().is_some_and(|k| kinds.contains(k)))
            && rule.input.iter().all(|(pointer, matcher)| {
                let value = view.raw_input.as_ref().and_then(|r| r.pointer(pointer));
                match (matcher, value) {
                    (InputMatcher::Equals(expected), Some(v)) => v == expected,
                    (InputMatcher::Regex(re), Some(Value::String(s))) => re.is_match(s),
                    _ => false,
                }
            })
    }

    /// A deny or ask rule: any path, any sub-command (read loosely too) is enough; a glob that
    /// cannot be built for this session counts as a match (fail closed).
    fn catches(&self, index: usize, rule: &Rule, view: &View, cwd: Option<&Path>) -> bool {
        if let Some(patterns) = &rule.paths {
            let hit = match self.globs_for(Some(index), patterns, cwd, true) {
                Ok(globs) => view.all_paths.iter().flatten().any(|p| globs.is_match(p)),
                Err(_) => true,
            };
            if !hit {
                return false;
            }
        }
        match (&rule.command, &view.command) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(prefixes), Some(command)) => {
                let analysed = command
                    .analysed
                    .iter()
                    .flatten()
                    .map(|c| c.words.as_slice());
                let loose = command.loose.iter().map(Vec::as_slice);
                analysed.chain(loose).any(|words| {
                    (0..words.len()).any(|i| {
                        prefixes
                            .iter()
                            .any(|p| prefix_match(&words[i..], p).is_some())
                    })
                })
            }
        }
    }

    /// An allow rule: every path inside what the rule allows, every sub-command granted with
    /// its options, arguments, environment and working directory. `Err(Some(why))` when the
    /// rule's command prefixes match but the command table or its bounds refuse: the reason is
    /// shown with the decision, so a user sees which rule almost allowed it.
    fn allows(
        &self,
        index: usize,
        rule: &Rule,
        view: &View,
        cwd: Option<&Path>,
    ) -> Result<(), Option<String>> {
        let bounds = self.allow_bounds(index, rule, view, cwd)?;
        // Checks that only matter once the rule's command prefixes match.
        let refusal = path_refusal(rule, view, &bounds)?;
        let (prefixes, command) = match (&rule.command, &view.command) {
            (None, None) => return Ok(()),
            // A call that carries a shell command is allowed only by a rule that checks it.
            (None, Some(_)) | (Some(_), None) => return Err(None),
            (Some(prefixes), Some(command)) => (prefixes, command),
        };
        let Ok(commands) = &command.analysed else {
            return Err(None);
        };
        let granted = granted_words(prefixes, commands)?;
        let why = refusal
            .or_else(|| env_refusal(rule, &view.env))
            .or_else(|| {
                commands
                    .iter()
                    .zip(&granted)
                    .find_map(|(c, granted)| sub_command_refusal(rule, c, granted, &bounds))
            });
        match why {
            Some(why) => Err(Some(format!("rule `{}` would allow it but {why}", rule.id))),
            None => Ok(()),
        }
    }

    /// What an allow rule holds a call's paths to: its `paths`; for a command rule without
    /// them, the session's cwd (a command rule allows only what stays inside it); nothing for
    /// a rule that says nothing of paths or commands.
    fn allow_bounds(
        &self,
        index: usize,
        rule: &Rule,
        view: &View,
        cwd: Option<&Path>,
    ) -> Result<Bounds, Option<String>> {
        let (key, patterns) = match (&rule.paths, &rule.command) {
            (Some(patterns), _) => (Some(index), Some(patterns.as_slice())),
            (None, Some(_)) => (None, Some(self.inside_cwd.as_slice())),
            (None, None) => (None, None),
        };
        let globs = match patterns {
            Some(patterns) => Some(
                self.globs_for(key, patterns, cwd, false)
                    .map_err(|e| Some(e.to_string()))?,
            ),
            None => None,
        };
        Ok(Bounds {
            globs,
            what: if rule.paths.is_some() {
                "the rule's `paths`"
            } else {
                "the session's cwd"
            },
            unplaced: view.unplaced,
        })
    }

    /// The glob set of a rule's paths in a session. Values substituted for `${cwd}` and
    /// `${home}` are escaped; deny and ask rules match without regard to case.
    fn globs_for(
        &self,
        index: Option<usize>,
        patterns: &[String],
        cwd: Option<&Path>,
        case_insensitive: bool,
    ) -> Result<globset::GlobSet, rules::RuleError> {
        let key = (index, cwd.map(Path::to_owned));
        self.globs
            .borrow_mut()
            .entry(key)
            .or_insert_with(|| {
                let cwd = cwd.map(|c| c.to_string_lossy().into_owned());
                let home = self.home.as_ref().map(|h| h.to_string_lossy().into_owned());
                rules::compile_globs(patterns, cwd.as_deref(), home.as_deref(), case_insensitive)
            })
            .clone()
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
            let view = self.view(&Disk, &call, Some(cwd), &Dialect::default());
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
                    ..Default::default()
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
                problems.push(format!(
                    "expected rule `{rule}`, got {}",
                    verdict
                        .rule
                        .as_deref()
                        .map(|r| format!("`{r}`"))
                        .unwrap_or_else(|| "the default".into())
                ));
            }
            if let Some(option) = &test.option
                && verdict.option_id.as_deref() != Some(option)
            {
                problems.push(format!(
                    "expected option `{option}`, got {}",
                    verdict
                        .option_id
                        .as_deref()
                        .map(|o| format!("`{o}`"))
                        .unwrap_or_else(|| "none (the request goes to the user)".into())
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
    fn new(
        fs: &dyn FileSystem,
        script: Script,
        workdirs: &[Option<PathBuf>],
        home: Option<&Path>,
    ) -> Command {
        let (analysed, loose) = match script {
            Script::Line(line) => (shell::analyse(&line), loose_words(&line)),
            Script::Argv(argv) => {
                let words: Option<Vec<String>> =
                    argv.iter().map(|w| w.as_str().map(str::to_owned)).collect();
                match words {
                    Some(words) => (shell::analyse_argv(&words), loose_words(&words.join(" "))),
                    None => (
                        Err(Opaque(
                            "rawInput.command holds something other than strings".into(),
                        )),
                        Vec::new(),
                    ),
                }
            }
            Script::Unreadable(what) => (
                Err(Opaque(format!(
                    "rawInput.command is neither a string nor an argv array: {what}"
                ))),
                Vec::new(),
            ),
        };
        Command {
            analysed: analysed.map(|commands| read_commands(fs, commands, workdirs, home)),
            loose,
        }
    }
}

/// Reads each simple command with the command table, following `cd` through the list: every
/// directory a command may run in is a candidate, and its relative paths are resolved in each.
fn read_commands(
    fs: &dyn FileSystem,
    commands: Vec<shell::SimpleCommand>,
    workdirs: &[Option<PathBuf>],
    home: Option<&Path>,
) -> Vec<Analysed> {
    let mut dirs: Vec<Option<PathBuf>> = workdirs.to_vec();
    let mut out = Vec::with_capacity(commands.len());
    for command in commands {
        let words = command.words;
        let env = command.env.into_iter().map(|(name, _)| name).collect();
        let changes_dir = matches!(words[0].as_str(), "cd" | "pushd" | "popd");
        let (dangers, raw_paths, implicit) = if words[0] == "cd" {
            let target = words[1..]
                .iter()
                .find(|w| !matches!(w.as_str(), "-L" | "-P" | "-e" | "-@" | "--"));
            let target = target.cloned().unwrap_or_else(|| "~".to_owned());
            // `cd` takes one directory; CDPATH and `cd -` cannot be followed.
            let unknowable = target == "-" || words.len() > 3;
            let paths = if unknowable {
                Vec::new()
            } else {
                vec![commands::PathArg {
                    index: 1,
                    path: target,
                }]
            };
            (Vec::new(), paths, !unknowable)
        } else {
            let arguments = commands::analyse(&words);
            (arguments.dangers, arguments.paths, false)
        };
        let mut paths = Vec::new();
        for arg in &raw_paths {
            for dir in &dirs {
                for p in paths::expand_argument(fs, &arg.path, dir.as_deref(), home) {
                    paths.push((arg.index, p));
                }
            }
        }
        if changes_dir {
            if implicit && paths.iter().all(|(_, p)| p.is_some()) {
                dirs.extend(paths.iter().map(|(_, p)| p.clone()));
            } else {
                // Where later commands run is no longer known.
                dirs.push(None);
                paths.push((1, None));
            }
        }
        out.push(Analysed {
            words,
            env,
            dangers,
            paths,
            implicit,
        });
    }
    out
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
            .split(char::is_whitespace)
            .map(|w| w.replace(['\\', '\'', '"'], ""))
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
    })
    .filter(|words| !words.is_empty())
    .collect()
}

/// What an allow rule holds a call's paths to (see [`Policy::allow_bounds`]).
struct Bounds {
    /// `None`: the rule says nothing of paths, and any path is inside.
    globs: Option<globset::GlobSet>,
    /// The bounds as a refusal names them.
    what: &'static str,
    /// Why where the command runs cannot be placed, in the agent's dialect.
    unplaced: Option<&'static str>,
}

impl Bounds {
    /// Whether a path is inside (a path that cannot be placed never is, unless anything is).
    fn contain(&self, p: &Option<PathBuf>) -> bool {
        self.globs
            .as_ref()
            .is_none_or(|g| p.as_ref().is_some_and(|p| g.is_match(p)))
    }

    /// Why a path is not inside, for the refusal.
    fn outside(&self, p: &Option<PathBuf>) -> String {
        match p {
            Some(p) => format!("{} is outside {}", p.display(), self.what),
            None => self
                .unplaced
                .unwrap_or("a path or working directory that cannot be known")
                .to_owned(),
        }
    }
}

/// The call's own paths held to an allow rule's bounds: `Err(None)` when the rule does not
/// allow the call at all (a path outside a rule without a command, a rule with `paths` and a
/// call without any, a rule without them and a path that cannot be read or only looks like
/// one); `Ok(Some(why))` for a path outside a command rule's bounds, a refusal that matters
/// only once its prefixes match.
fn path_refusal(
    rule: &Rule,
    view: &View,
    bounds: &Bounds,
) -> Result<Option<String>, Option<String>> {
    match &bounds.globs {
        // Every path must be inside what the rule allows; no path, no allow.
        Some(_) if rule.paths.is_some() && view.call_paths.is_empty() => Err(None),
        Some(_) => match view.call_paths.iter().find(|p| !bounds.contain(p)) {
            Some(_) if rule.command.is_none() => Err(None),
            Some(p) => Ok(Some(bounds.outside(p))),
            None => Ok(None),
        },
        // A rule that says nothing of paths never allows what only looks like one, nor a path
        // that cannot be read.
        None if !view.unrecognised.is_empty() || view.call_paths.iter().any(Option::is_none) => {
            Err(None)
        }
        None => Ok(None),
    }
}

/// The words each sub-command's matching prefix grants (the longest match; word 0 for a
/// `cd DIR`, which needs no rule of its own). `Err(None)`: a sub-command no prefix names, or
/// no sub-command at all, and the rule is not about this call.
fn granted_words(
    prefixes: &[Vec<Vec<String>>],
    commands: &[Analysed],
) -> Result<Vec<Vec<usize>>, Option<String>> {
    let mut granted = Vec::with_capacity(commands.len());
    for c in commands {
        let words = if c.implicit {
            Some(vec![0])
        } else {
            prefixes
                .iter()
                .filter_map(|p| prefix_match(&c.words, p))
                .max_by_key(Vec::len)
        };
        granted.push(words.ok_or(None)?);
    }
    if commands.is_empty() {
        return Err(None);
    }
    Ok(granted)
}

/// Why `rawInput.env` keeps a rule from allowing: it cannot be read, or sets a variable the
/// rule's `env` does not list.
fn env_refusal(rule: &Rule, env: &Result<Vec<String>, String>) -> Option<String> {
    match env {
        Err(why) => Some(why.clone()),
        Ok(names) => names
            .iter()
            .find(|n| !rule.env.contains(n))
            .map(|name| format!("rawInput.env sets `{name}`, which its `env` does not list")),
    }
}

/// Why one sub-command keeps a rule from allowing, beyond the words its prefix `granted`: a
/// `NAME=value` the rule's `env` does not list, a dangerous word its `options` do not grant, a
/// path argument outside its bounds.
fn sub_command_refusal(
    rule: &Rule,
    c: &Analysed,
    granted: &[usize],
    bounds: &Bounds,
) -> Option<String> {
    if let Some(name) = c.env.iter().find(|n| !rule.env.contains(n)) {
        return Some(format!("`{name}=...` is not in its `env`"));
    }
    let named = |d: &&Danger| {
        d.names
            .split(' ')
            .any(|n| rule.options.iter().any(|o| o == n))
    };
    if let Some(d) = c
        .dangers
        .iter()
        .find(|d| !granted.contains(&d.index) && !named(d))
    {
        return Some(format!(
            "`{}` in `{}` {} (grant it with `options = [\"{}\"]`)",
            d.word,
            c.words[0],
            d.effect,
            d.names.split(' ').next_back().unwrap_or_default()
        ));
    }
    c.paths
        .iter()
        .find(|(i, p)| !granted.contains(i) && !bounds.contain(p))
        .map(|(_, p)| format!("`{}`: {}", c.words.join(" "), bounds.outside(p)))
}

/// The indices of the words a rule's command prefix names, or `None` when it does not name
/// this command. After the command word, the prefix is matched from the subcommand on when the
/// table finds one past the command's own options (`git --no-pager log`, `cargo -q test`): the
/// options skipped are not granted, so the table still judges them.
fn prefix_match(words: &[String], prefix: &[Vec<String>]) -> Option<Vec<usize>> {
    let (first, rest) = prefix.split_first()?;
    if !words.first().is_some_and(|w| first.contains(w)) {
        return None;
    }
    let matches_at = |at: usize| {
        let tail = words.get(at..).unwrap_or_default();
        (tail.len() >= rest.len()
            && rest
                .iter()
                .zip(tail)
                .all(|(alternatives, word)| alternatives.contains(word)))
        .then(|| std::iter::once(0).chain(at..at + rest.len()).collect())
    };
    matches_at(1).or_else(|| match commands::analyse(words).subcommand {
        Some(at) if at > 1 && !rest.is_empty() => matches_at(at),
        _ => None,
    })
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

/// The path with symlinks resolved as far as it exists (a relative one against the process's
/// working directory).
fn canonical(fs: &dyn FileSystem, path: &Path) -> PathBuf {
    paths::normalise(
        fs,
        &path.to_string_lossy(),
        fs.current_dir().as_deref(),
        None,
    )
    .unwrap_or_else(|| path.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn allow_ls() -> Policy {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("p.toml");
        std::fs::write(
            &file,
            "version = 1\ndefault = \"ask\"\n[[rule]]\nid = \"ls\"\ndecision = \"allow\"\nkind = \"execute\"\ncommand = [[\"ls\"]]\n",
        )
        .unwrap();
        Policy::load_with_home(&[file], dir.path()).unwrap()
    }

    /// A policy from the text of one file (its home a scratch directory).
    fn policy(text: &str) -> Policy {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("p.toml");
        std::fs::write(&file, format!("version = 1\ndefault = \"ask\"\n{text}")).unwrap();
        Policy::load_with_home(&[file], dir.path()).unwrap()
    }

    const ALLOW_ONCE: &str = r#"[{"optionId": "ok", "name": "Allow", "kind": "allow_once"},
        {"optionId": "no", "name": "Reject", "kind": "reject_once"}]"#;

    /// A v1 request for a tool call, offering `allow_once` and `reject_once`.
    fn request(call: Value) -> Value {
        let options: Value = serde_json::from_str(ALLOW_ONCE).unwrap();
        json!({"sessionId": "s", "toolCall": call, "options": options})
    }

    fn edit(path: &str) -> Value {
        request(json!({"toolCallId": "t", "kind": "edit", "locations": [{"path": path}]}))
    }

    fn run(command: &str) -> Value {
        request(json!({"toolCallId": "t", "kind": "execute", "rawInput": {"command": command}}))
    }

    /// Decided in `/p` on the file system `fs` alone.
    fn decide_on(policy: &Policy, fs: &filesystem::Fake, params: &Value) -> Verdict {
        let context = Context {
            cwd: Some(Path::new("/p")),
            agent: None,
            version: None,
        };
        policy.decide_in(fs, params, None, context)
    }

    const EDIT_PROJECT: &str =
        "[[rule]]\nid = \"edit\"\ndecision = \"allow\"\nkind = \"edit\"\npaths = [\"${cwd}/**\"]\n";

    /// A symbolic link inside the project that leads out of it: the path it names is where the
    /// link leads, which the rule's `${cwd}/**` does not hold.
    #[test]
    fn a_link_out_of_the_project_is_not_allowed_by_its_paths() {
        let policy = policy(EDIT_PROJECT);
        let fs = filesystem::Fake::default()
            .file("/p/a.rs")
            .link("/p/escape", "/etc")
            .link("/p/relative", "../etc/cron.d");
        let allowed = decide_on(&policy, &fs, &edit("/p/a.rs"));
        assert_eq!(
            (allowed.decision, allowed.rule.as_deref()),
            (Decision::Allow, Some("edit"))
        );
        for through in ["/p/escape/passwd", "/p/relative/job", "/p/x/../escape/y"] {
            let verdict = decide_on(&policy, &fs, &edit(through));
            assert_eq!(verdict.decision, Decision::Ask, "{through}: {verdict:?}");
            assert_eq!(verdict.rule, None, "{through}: {verdict:?}");
        }
        // Without the link the same path is a new file inside the project.
        let plain = filesystem::Fake::default().dir("/p");
        let verdict = decide_on(&policy, &plain, &edit("/p/escape/passwd"));
        assert_eq!(verdict.decision, Decision::Allow);
    }

    /// `rm *.txt` is judged on what the glob matches in the listing: a match that is a link out
    /// of the project is outside the rule's bounds; a dot file is matched only by `.*`.
    #[test]
    fn a_glob_argument_is_expanded_against_the_listing() {
        let policy = policy(
            "[[rule]]\nid = \"rm\"\ndecision = \"allow\"\nkind = \"execute\"\ncommand = [\"rm\"]\n",
        );
        let fs = filesystem::Fake::default()
            .file("/p/a.txt")
            .file("/p/b.txt")
            .link("/p/.hidden.txt", "/etc/shadow");
        let verdict = decide_on(&policy, &fs, &run("rm *.txt"));
        assert_eq!(
            (verdict.decision, verdict.option_id.as_deref()),
            (Decision::Allow, Some("ok")),
            "{verdict:?}"
        );
        let verdict = decide_on(&policy, &fs, &run("rm .*.txt"));
        assert_eq!(verdict.decision, Decision::Ask, "{verdict:?}");
        assert!(
            verdict
                .reason
                .contains("/etc/shadow is outside the session's cwd"),
            "{verdict:?}"
        );
        let out = fs.link("/p/c.txt", "/home/u/notes.txt");
        let verdict = decide_on(&policy, &out, &run("rm *.txt"));
        assert_eq!(verdict.decision, Decision::Ask, "{verdict:?}");
        assert!(
            verdict.reason.contains("/home/u/notes.txt is outside"),
            "{verdict:?}"
        );
    }

    /// A deny rule wins over an allow rule written before it; a guard over an allow rule (a
    /// repository found on the file system, too); an allow the request offers no `allow_once`
    /// for goes to the user.
    #[test]
    fn deny_rules_and_guards_come_before_allow_rules() {
        let policy = policy(&format!(
            "{EDIT_PROJECT}[[rule]]\nid = \"secrets\"\ndecision = \"deny\"\npaths = [\"${{cwd}}/secret/**\"]\n"
        ));
        let fs = filesystem::Fake::default()
            .file("/p/secret/key")
            .file("/p/vendor/evil/HEAD")
            .dir("/p/vendor/evil/refs");
        let decided = |params: &Value| {
            let verdict = decide_on(&policy, &fs, params);
            (verdict.decision, verdict.rule, verdict.option_id)
        };
        assert_eq!(
            decided(&edit("/p/secret/key")),
            (Decision::Deny, Some("secrets".into()), Some("no".into()))
        );
        assert_eq!(
            decided(&edit("/p/.git/config")),
            (Decision::Ask, Some("guard:git-dir".into()), None)
        );
        assert_eq!(
            decided(&edit("/p/vendor/evil/objects/x")),
            (Decision::Ask, Some("guard:git-repo".into()), None)
        );
        // Not shaped like a repository without `refs` (or `objects`) beside `HEAD`.
        let plain = filesystem::Fake::default().file("/p/vendor/evil/HEAD");
        let verdict = decide_on(&policy, &plain, &edit("/p/vendor/evil/x"));
        assert_eq!(verdict.decision, Decision::Allow, "{verdict:?}");
        let mut params = edit("/p/a.rs");
        params["options"] =
            json!([{"optionId": "always", "name": "Always", "kind": "allow_always"}]);
        let verdict = decide_on(&policy, &fs, &params);
        assert_eq!(
            (verdict.decision, verdict.rule.as_deref()),
            (Decision::Ask, Some("edit"))
        );
        assert!(
            verdict
                .reason
                .ends_with("offers no `allow_once` option, so it goes to the user"),
            "{verdict:?}"
        );
    }

    /// `guard:rm-rf` denies before any rule, with the glob expanded on the file system: a match
    /// that is a link to `/` is the root.
    #[test]
    fn the_rm_rf_guard_sees_through_the_listing() {
        let policy = policy(
            "[[rule]]\nid = \"rm\"\ndecision = \"allow\"\nkind = \"execute\"\ncommand = [\"rm\"]\noptions = [\"-rf\"]\n",
        );
        let plain = filesystem::Fake::default().dir("/w/p/build");
        let linked = filesystem::Fake::default()
            .dir("/w/p/build")
            .link("/w/p/b-root", "/");
        let decided = |fs: &filesystem::Fake, command: &str| {
            let context = Context {
                cwd: Some(Path::new("/w/p")),
                agent: None,
                version: None,
            };
            let verdict = policy.decide_in(fs, &run(command), None, context);
            (verdict.decision, verdict.rule)
        };
        let rule = |id: &str| Some(id.to_owned());
        assert_eq!(decided(&plain, "rm -rf b*"), (Decision::Allow, rule("rm")));
        assert_eq!(
            decided(&linked, "rm -rf build"),
            (Decision::Allow, rule("rm"))
        );
        assert_eq!(
            decided(&linked, "rm -rf b*"),
            (Decision::Deny, rule("guard:rm-rf"))
        );
        assert_eq!(
            decided(&linked, "rm -rf b-root"),
            (Decision::Deny, rule("guard:rm-rf"))
        );
    }

    /// A relative session cwd is placed against the working directory the file system says.
    #[test]
    fn a_relative_cwd_is_placed_in_the_working_directory() {
        let policy = policy(EDIT_PROJECT);
        let mut fs = filesystem::Fake::default().dir("/work/proj");
        let context = Context {
            cwd: Some(Path::new("proj")),
            agent: None,
            version: None,
        };
        let params = edit("/work/proj/a.rs");
        assert_eq!(
            policy.decide_in(&fs, &params, None, context).decision,
            Decision::Ask
        );
        fs.current_dir = Some(PathBuf::from("/work"));
        assert_eq!(
            policy.decide_in(&fs, &params, None, context).decision,
            Decision::Allow
        );
    }

    /// The version decides which shape a client shows: a subject on a v1 connection, a bare
    /// `toolCall` on a v2 one, and anything on a version acptap does not know go to the user.
    #[test]
    fn the_negotiated_version_decides_which_shape_counts() {
        let policy = allow_ls();
        let v1_call = json!({"toolCallId": "t", "kind": "execute", "rawInput": {"command": "ls", "cwd": "/p"}});
        let subject = json!({"type": "command", "command": "ls", "cwd": "/p"});
        let options = json!([{"optionId": "ok", "name": "Allow", "kind": "allow_once"}]);
        let decide = |params: Value, version: Option<Version>| {
            policy
                .decide(
                    &params,
                    None,
                    Context {
                        cwd: Some(Path::new("/p")),
                        agent: None,
                        version,
                    },
                )
                .decision
        };
        let v1 = json!({"sessionId": "s", "toolCall": v1_call, "options": options});
        let v2 = json!({"sessionId": "s", "title": "ls", "subject": subject, "options": options});
        assert_eq!(decide(v1.clone(), Some(Version::V1)), Decision::Allow);
        assert_eq!(decide(v2.clone(), Some(Version::V2)), Decision::Allow);
        // Either shape with no connection (`policy check --request`).
        assert_eq!(decide(v1.clone(), None), Decision::Allow);
        assert_eq!(decide(v2.clone(), None), Decision::Allow);
        assert_eq!(decide(v1.clone(), Some(Version::V2)), Decision::Ask);
        assert_eq!(decide(v2.clone(), Some(Version::V1)), Decision::Ask);
        assert_eq!(decide(v2, Some(Version::Other(3))), Decision::Ask);
        assert_eq!(decide(v1, Some(Version::Other(3))), Decision::Ask);
    }

    /// Found by an outside attack: a value of the wrong type (`content: "x"`) is "unchanged" to
    /// a client built on the schema crate and the new value to others; a `null` clears in v2
    /// and means "unchanged" to the v1 crate. Over a call that edits /etc/passwd, neither may
    /// make acptap judge a harmless call the client does not show.
    #[test]
    fn a_field_clients_read_differently_leaves_the_call_to_the_user() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("p.toml");
        std::fs::write(
            &file,
            "version = 1\ndefault = \"ask\"\n[[rule]]\nid = \"edit\"\ndecision = \"allow\"\nkind = \"edit\"\npaths = [\"${cwd}/**\"]\n",
        )
        .unwrap();
        let policy = Policy::load_with_home(&[file], dir.path()).unwrap();
        let earlier = json!({"toolCallId": "c", "kind": "edit",
            "content": [{"type": "diff", "path": "/etc/passwd", "newText": "x"}],
            "locations": [{"path": "/p/a.rs"}]});
        let (known, _) = ToolCall::create(earlier.as_object().unwrap(), UpdateKind::ToolCallUpdate);
        let options = json!([{"optionId": "ok", "name": "Allow", "kind": "allow_once"}]);
        let decide = |update: Value, version: Version| {
            let params = json!({"sessionId": "s", "title": "Edit", "options": options,
                "subject": {"type": "tool_call", "toolCall": update}});
            let context = Context {
                cwd: Some(Path::new("/p")),
                agent: None,
                version: Some(version),
            };
            policy.decide(&params, Some(&known), context)
        };
        for bad in [json!("x"), json!(5), json!({"type": "diff"})] {
            let verdict = decide(json!({"toolCallId": "c", "content": bad}), Version::V2);
            assert_eq!(verdict.decision, Decision::Ask, "{bad}: {verdict:?}");
            assert!(verdict.reason.contains("`content`"), "{verdict:?}");
        }
        let verdict = decide(json!({"toolCallId": "c", "kind": 5}), Version::V2);
        assert_eq!(verdict.decision, Decision::Ask, "{verdict:?}");
        // `null` clears in v2: the call is then an edit of /p/a.rs alone.
        let cleared = json!({"toolCallId": "c", "content": null});
        assert_eq!(
            decide(cleared.clone(), Version::V2).decision,
            Decision::Allow
        );
        let params = json!({"sessionId": "s", "toolCall": cleared, "options": options});
        let v1 = Context {
            cwd: Some(Path::new("/p")),
            agent: None,
            version: Some(Version::V1),
        };
        assert_eq!(
            policy.decide(&params, Some(&known), v1).decision,
            Decision::Ask
        );
    }

    /// kimi-cli's Shell request: only its own text form is a command, taken whole (backticks
    /// inside included); anything else is no command.
    #[test]
    fn kimi_command_reads_only_its_own_form() {
        let text = |t: &str| json!([{"type": "content", "content": {"type": "text", "text": t}}]);
        let read = |c: Value| kimi_command(Some(&c));
        assert_eq!(
            read(text(
                "Requesting approval to perform: Run command `cargo test`"
            ))
            .as_deref(),
            Some("cargo test")
        );
        assert_eq!(
            read(text(
                "Requesting approval to perform: Run command `echo `id` && ls`"
            ))
            .as_deref(),
            Some("echo `id` && ls")
        );
        assert_eq!(
            read(text(
                "Requesting approval to perform: Run background command `npm run dev`"
            ))
            .as_deref(),
            Some("npm run dev")
        );
        for other in [
            text("Requesting approval to perform: Run command `ls` in /tmp"),
            text("Run command `ls`"),
            text("Requesting approval to perform: Edit file `a.rs`"),
            json!([{"type": "diff", "path": "/p/a", "newText": "x"}]),
            json!([
                {"type": "content", "content": {"type": "text", "text": "Requesting approval to perform: Run command `ls`"}},
                {"type": "content", "content": {"type": "text", "text": "more"}}
            ]),
        ] {
            assert_eq!(read(other.clone()), None, "{other}");
        }
    }

    /// A kimi-cli Shell call has no kind (read as `other`): it is judged as the `execute` call it
    /// is, so a rule that allows `other` calls does not allow a shell command, and a command
    /// rule judges its command. Another agent's call with the same text is not read.
    #[test]
    fn a_kimi_shell_call_is_an_execute_call() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("p.toml");
        std::fs::write(
            &file,
            "version = 1\ndefault = \"ask\"\n[[rule]]\nid = \"other\"\ndecision = \"allow\"\nkind = \"other\"\n[[rule]]\nid = \"tests\"\ndecision = \"allow\"\nkind = \"execute\"\ncommand = [[\"cargo\", \"test\"]]\n",
        )
        .unwrap();
        let policy = Policy::load_with_home(&[file], dir.path()).unwrap();
        let decide = |command: &str, agent: &str| {
            let params = json!({"sessionId": "s", "toolCall": {"toolCallId": "turn/call",
                "title": format!("Shell: {command}"),
                "content": [{"type": "content", "content": {"type": "text",
                    "text": format!("Requesting approval to perform: Run command `{command}`")}}]},
                "options": [{"optionId": "approve", "name": "Approve once", "kind": "allow_once"}]});
            let context = Context {
                cwd: Some(dir.path()),
                agent: Some(agent),
                version: None,
            };
            let verdict = policy.decide(&params, None, context);
            (verdict.decision, verdict.rule)
        };
        assert_eq!(
            decide("cargo test", agents::KIMI_CLI),
            (Decision::Allow, Some("tests".into()))
        );
        assert_eq!(decide("rm -rf build", agents::KIMI_CLI).0, Decision::Ask);
        assert_eq!(
            decide("cd /tmp/attacker && cargo test", agents::KIMI_CLI).0,
            Decision::Ask
        );
        // Not kimi-cli: the text is prose, and the call is the `other` call it says it is.
        assert_eq!(
            decide("rm -rf build", "some-agent").1.as_deref(),
            Some("other")
        );
    }

    /// fast-agent's `args`: `command` is then the program, run without a shell; any other
    /// shape of `args` cannot be read.
    #[test]
    fn a_command_with_args_is_read_as_its_argv() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("p.toml");
        std::fs::write(
            &file,
            "version = 1\ndefault = \"ask\"\n[[rule]]\nid = \"find\"\ndecision = \"allow\"\nkind = \"execute\"\ncommand = [[\"find\"], [\"cargo\", \"test\"]]\n",
        )
        .unwrap();
        let policy = Policy::load_with_home(&[file], dir.path()).unwrap();
        let decide = |raw: Value| {
            let params = json!({"sessionId": "s", "toolCall": {"toolCallId": "t", "kind": "execute",
                "title": "execute", "rawInput": raw},
                "options": [{"optionId": "ok", "name": "Allow Once", "kind": "allow_once"}]});
            let context = Context {
                cwd: Some(dir.path()),
                agent: Some(agents::FAST_AGENT),
                version: None,
            };
            policy.decide(&params, None, context).decision
        };
        assert_eq!(
            decide(json!({"command": "find", "args": ["."]})),
            Decision::Allow
        );
        assert_eq!(
            decide(json!({"command": "cargo", "args": ["test"]})),
            Decision::Allow
        );
        assert_eq!(
            decide(json!({"command": "cargo", "args": null})),
            Decision::Ask
        );
        for hostile in [
            json!({"command": "find", "args": [".", "-delete"]}),
            json!({"command": "find", "args": ["/"]}),
            json!({"command": "cargo", "args": "test"}),
            json!({"command": "cargo", "args": ["test", 1]}),
            json!({"command": ["cargo"], "args": ["test"]}),
            json!({"command": "cargo test", "args": []}),
            json!({"command": "/bin/sh", "args": ["-c", "find . -delete"]}),
            json!({"command": "cargo test", "cwd": "."}),
        ] {
            assert_eq!(decide(hostile.clone()), Decision::Ask, "{hostile}");
        }
    }
}
