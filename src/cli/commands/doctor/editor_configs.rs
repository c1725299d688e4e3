//! The editor configurations `acptap doctor` knows (docs/editors.md): where each editor keeps the
//! agents it starts, read the way the editor reads them, down to each agent's argv; and the
//! checks of each agent: its command, and for one behind `acptap run`, acptap's own options
//! (parsed as acptap will parse them, their files) and the agent after `--`.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use clap::Parser;
use serde_json::{Map, Value};

use super::{Check, check_agent_on, check_database, check_policy};
use crate::cli::{Cli, Command};

/// One agent an editor is configured to start.
#[derive(Debug)]
pub(super) struct EditorAgent {
    pub editor: &'static str,
    pub file: PathBuf,
    pub name: String,
    pub launch: Launch,
}

/// How the editor starts an agent.
#[derive(Debug)]
pub(super) enum Launch {
    /// This argv, the program first, with these variables added to the environment.
    Command {
        argv: Vec<String>,
        env: Vec<(String, String)>,
    },
    /// The editor fetches and starts it itself (Zed's registry, extension and built-in agents):
    /// what it is.
    ByEditor(String),
    /// The editor cannot start it: why.
    Invalid(String),
}

/// A configuration file that exists and that the editor cannot read its agents from.
#[derive(Debug)]
pub(super) struct Unreadable {
    pub editor: &'static str,
    pub file: PathBuf,
    pub error: String,
}

/// Where the agents sit in one editor's file, and how an entry becomes an argv.
struct Known {
    editor: &'static str,
    file: PathBuf,
    /// Whether the editor reads comments and trailing commas (Zed and VS Code do; acpx reads
    /// strict JSON).
    comments: bool,
    /// The key of the object whose keys are agent names.
    agents_at: &'static str,
    entry: fn(&str, &Value) -> Launch,
}

/// The most of an editor configuration read: a settings file is kilobytes.
const MAX_CONFIG: u64 = 16 << 20;

/// The files, under `home` and `config_home` (`$XDG_CONFIG_HOME`, else `~/.config`).
fn known(home: &Path, config_home: &Path) -> Vec<Known> {
    vec![
        Known {
            editor: "zed",
            file: config_home.join("zed/settings.json"),
            comments: true,
            agents_at: "agent_servers",
            entry: zed_entry,
        },
        Known {
            editor: "jetbrains",
            file: home.join(".jetbrains/acp.json"),
            // Whether JetBrains reads comments is not documented: read leniently.
            comments: true,
            agents_at: "agent_servers",
            entry: |_, entry| command_and_args(entry),
        },
        Known {
            editor: "vscode",
            file: config_home.join("Code/User/settings.json"),
            comments: true,
            agents_at: "acp.agents",
            entry: |_, entry| command_and_args(entry),
        },
        Known {
            editor: "acpx",
            file: home.join(".acpx/config.json"),
            comments: false,
            agents_at: "agents",
            entry: |_, entry| acpx_entry(entry),
        },
    ]
}

/// Every agent in every known file that exists, and the files that exist but cannot be read.
pub(super) fn read(home: &Path, config_home: &Path) -> (Vec<EditorAgent>, Vec<Unreadable>) {
    let mut agents = Vec::new();
    let mut unreadable = Vec::new();
    for known in known(home, config_home) {
        match agents_in(&known) {
            Ok(None) => {}
            Ok(Some(entries)) => {
                agents.extend(entries.into_iter().map(|(name, entry)| EditorAgent {
                    editor: known.editor,
                    file: known.file.clone(),
                    launch: (known.entry)(&name, &entry),
                    name,
                }))
            }
            Err(error) => unreadable.push(Unreadable {
                editor: known.editor,
                file: known.file,
                error,
            }),
        }
    }
    (agents, unreadable)
}

/// The file's agents by name; `None` when there is no file or it names no agents.
fn agents_in(known: &Known) -> Result<Option<Map<String, Value>>, String> {
    use crate::policy::rules::FileError;
    // Bounded, and never waiting on a pipe: the editor's file may be anything.
    let text =
        match crate::policy::rules::read_regular_file(&known.file, "settings file", MAX_CONFIG) {
            Ok(text) => text,
            Err(FileError::Unreadable { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                return Ok(None);
            }
            Err(e) => return Err(e.to_string()),
        };
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let parsed = if known.comments {
        serde_json::from_str::<Value>(&without_comments(text))
    } else {
        serde_json::from_str::<Value>(text)
    };
    let document = parsed.map_err(|e| {
        if known.comments {
            format!("not JSON: {e}")
        } else {
            format!(
                "not JSON ({} reads strict JSON: no comments, no trailing commas): {e}",
                known.editor
            )
        }
    })?;
    let Value::Object(mut document) = document else {
        return Err("not a JSON object".into());
    };
    match document.remove(known.agents_at) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(agents)) => Ok(Some(agents)),
        Some(_) => Err(format!(
            "`{}` is not an object of agents by name",
            known.agents_at
        )),
    }
}

/// A list of strings, or why not.
fn strings(value: &Value, what: &str) -> Result<Vec<String>, String> {
    value
        .as_array()
        .and_then(|items| {
            items
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .ok_or_else(|| format!("`{what}` is not a list of strings"))
}

/// JetBrains, VS Code (and Zed's custom agents): `{"command": PROGRAM, "args": [...], "env":
/// {...}}`.
fn command_and_args(entry: &Value) -> Launch {
    let parsed = || -> Result<Launch, String> {
        let entry = entry.as_object().ok_or("the entry is not an object")?;
        let command = match entry.get("command") {
            None => return Err("no `command`".into()),
            Some(Value::String(c)) if c.is_empty() => return Err("an empty `command`".into()),
            Some(Value::String(c)) => c.clone(),
            Some(_) => return Err("`command` is not a string".into()),
        };
        let mut argv = vec![command];
        if let Some(args) = entry.get("args").filter(|a| !a.is_null()) {
            argv.extend(strings(args, "args")?);
        }
        Ok(Launch::Command {
            argv,
            env: env_of(entry.get("env"))?,
        })
    };
    parsed().unwrap_or_else(Launch::Invalid)
}

/// `{"NAME": "value", ...}`.
fn env_of(env: Option<&Value>) -> Result<Vec<(String, String)>, String> {
    match env {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(vars)) => vars
            .iter()
            .map(|(k, v)| {
                v.as_str()
                    .map(|v| (k.clone(), v.to_owned()))
                    .ok_or_else(|| format!("`env.{k}` is not a string"))
            })
            .collect(),
        Some(_) => Err("`env` is not an object of strings".into()),
    }
}

/// The agents Zed has built in, which take no command.
const ZED_BUILT_IN: [&str; 3] = ["claude", "gemini", "codex"];

/// Zed: `{"type": "custom", "command": PROGRAM, "args": [...]}`; a `registry` or `extension`
/// agent, or a built-in one given no command, Zed fetches and starts itself.
fn zed_entry(name: &str, entry: &Value) -> Launch {
    match entry.get("type") {
        Some(Value::String(kind)) if kind == "registry" || kind == "extension" => {
            Launch::ByEditor(format!("a Zed {kind} agent"))
        }
        Some(Value::String(kind)) if kind == "custom" => command_and_args(entry),
        Some(other) => Launch::Invalid(format!(
            "`type` {other}: Zed knows \"custom\", \"registry\" and \"extension\""
        )),
        None if entry.get("command").is_some() => command_and_args(entry),
        None if ZED_BUILT_IN.contains(&name) && entry.is_object() => {
            Launch::ByEditor("a Zed built-in agent".into())
        }
        None => Launch::Invalid(
            "no `command`: an agent of your own needs \"type\": \"custom\" and a command".into(),
        ),
    }
}

/// acpx: `{"argv": [...]}`, or `{"command": PROGRAM, "args": [...]}`, or a raw `{"command":
/// "PROGRAM ARGS..."}` that acpx splits on spaces and quotes.
fn acpx_entry(entry: &Value) -> Launch {
    acpx_argv(entry)
        .map(|argv| Launch::Command {
            argv,
            env: Vec::new(),
        })
        .unwrap_or_else(Launch::Invalid)
}

fn acpx_argv(entry: &Value) -> Result<Vec<String>, String> {
    let entry = entry.as_object().ok_or("the entry is not an object")?;
    match (entry.get("argv"), entry.get("command")) {
        (Some(_), Some(_)) => Err("`argv` and `command` together: acpx wants `argv` alone".into()),
        (Some(argv), None) => match strings(argv, "argv")? {
            argv if argv.first().is_some_and(|p| !p.is_empty()) => Ok(argv),
            _ => Err("`argv` is empty or starts with an empty program".into()),
        },
        (None, Some(Value::String(command))) if entry.contains_key("args") => {
            if command.is_empty() || command.contains(char::is_whitespace) {
                return Err("with `args`, `command` must be one word (or use `argv`)".into());
            }
            let mut argv = vec![command.clone()];
            argv.extend(strings(&entry["args"], "args")?);
            Ok(argv)
        }
        (None, Some(Value::String(raw))) => match crate::policy::shell::analyse(raw).as_deref() {
            Ok([one]) if one.env.is_empty() && !one.words.is_empty() => Ok(one.words.clone()),
            _ => Err(format!(
                "acpx cannot split `command` {raw:?} into one program and its arguments: use `argv`"
            )),
        },
        (None, Some(_)) => Err("`command` is not a string".into()),
        (None, None) => Err("no `argv` (or `command`)".into()),
    }
}

/// The checks of every agent in the editor configurations, and of the files that exist but
/// cannot be read.
pub(super) fn checks() -> Vec<Check> {
    let Some(home) = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
    else {
        return Vec::new();
    };
    // XDG: a relative value is to be ignored.
    let config_home = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .unwrap_or_else(|| home.join(".config"));
    let (agents, unreadable) = read(&home, &config_home);
    let mut checks: Vec<Check> = unreadable
        .into_iter()
        .map(|u| {
            let file = u.file.display();
            Check::bad(
                format!("{} config", u.editor),
                format!("{file}: {}", u.error),
                format!("fix {file}: the editor cannot read its agents from it either"),
            )
        })
        .collect();
    checks.extend(agents.iter().map(check_one));
    checks
}

/// One agent: its command; an agent not behind acptap is fine, and the line says how to record
/// it.
fn check_one(agent: &EditorAgent) -> Check {
    let name = format!("{} agent \"{}\"", agent.editor, agent.name);
    let file = agent.file.display().to_string();
    let (argv, env) = match &agent.launch {
        Launch::Command { argv, env } => (argv, env),
        Launch::ByEditor(what) => {
            return Check::ok(
                name,
                format!(
                    "{what}, which the editor starts itself; not recorded: to record it, add an agent that runs it through `acptap run --label {} --` (docs/editors.md)",
                    agent.editor
                ),
            );
        }
        Launch::Invalid(why) => {
            return Check::bad(
                name,
                format!("{file}: {why}"),
                format!("fix the entry in {file} (docs/editors.md shows each editor's form)"),
            );
        }
    };
    let path_var = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| OsStr::new(v.as_str()));
    let program = &argv[0];
    let is_acptap = Path::new(program).file_name() == Some(OsStr::new("acptap"));
    let found = check_agent_on(program, path_var);
    if !found.ok {
        let fix = if is_acptap {
            format!(
                "give acptap's full path in {file} (`command -v acptap` prints it), or install acptap (`cargo install --locked --path . --bin acptap` in a clone)"
            )
        } else if program.contains(char::is_whitespace) {
            format!(
                "the editor runs {program:?} as one program's name: put the program alone in the command and its arguments in the arguments ({file})"
            )
        } else {
            format!("{} (in {file})", found.fix.unwrap_or_default())
        };
        return Check::bad(name, found.detail, fix);
    }
    if !is_acptap {
        return Check::ok(
            name,
            format!(
                "{program} is {}; not recorded: put `acptap run --label {} --` before it (docs/editors.md)",
                found.detail, agent.editor
            ),
        );
    }
    check_recorded(name, &file, &argv[1..], path_var, &found.detail)
}

/// An agent behind acptap: acptap's arguments parse as `acptap run`, the files its options name
/// can be used, and the agent after `--` is found.
fn check_recorded(
    name: String,
    file: &str,
    args: &[String],
    path_var: Option<&OsStr>,
    acptap_at: &str,
) -> Check {
    let parsed =
        Cli::try_parse_from(std::iter::once("acptap").chain(args.iter().map(String::as_str)));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => return bad_arguments(name, file, &e),
    };
    let Command::Run(run) = &cli.command else {
        return Check::ok(
            name,
            format!("{acptap_at}, not `acptap run`: nothing is recorded"),
        );
    };
    let given = |option: &str| {
        args.iter()
            .take_while(|a| *a != "--")
            .any(|a| a == option || a.starts_with(&format!("{option}=")))
    };
    let mut problems = Vec::new();
    if let Some(config) = cli.config.as_deref().filter(|_| given("--config"))
        && let Err(e) = crate::policy::rules::read_regular_file(config, "config file", 1 << 20)
    {
        problems.push((
            format!("its --config {}: {e}", config.display()),
            "give --config a readable config file, or drop it".to_owned(),
        ));
    }
    for policy in &run.policies {
        let check = check_policy(policy);
        if !check.ok {
            problems.push((
                format!("its --policy: {}", check.detail),
                check.fix.unwrap_or_default(),
            ));
        }
    }
    if given("--db")
        && let Some(check) = check_database(&run.db).into_iter().find(|c| !c.ok)
    {
        problems.push((
            format!("its --db: {}", check.detail),
            check.fix.unwrap_or_default(),
        ));
    }
    let inner = check_agent_on(&run.agent[0], path_var);
    if !inner.ok {
        problems.push((
            format!("the agent behind acptap: {}", inner.detail),
            inner.fix.clone().unwrap_or_default(),
        ));
    }
    if let Some((detail, fix)) = problems.into_iter().next() {
        return Check::bad(name, detail, format!("{fix} (in {file})"));
    }
    let label = match &run.label {
        Some(label) => format!("label {label:?}"),
        None => "no label".to_owned(),
    };
    Check::ok(
        name,
        format!(
            "recorded by {acptap_at} ({label}); the agent {} is {}",
            run.agent[0], inner.detail
        ),
    )
}

/// acptap's arguments in the file do not parse, or ask for help instead of running an agent.
fn bad_arguments(name: String, file: &str, error: &clap::Error) -> Check {
    use clap::error::ErrorKind;
    let fix = format!(
        "correct them in {file}: `run --label NAME -- AGENT [ARGS...]` (`acptap run --help`)"
    );
    if matches!(
        error.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        return Check::bad(
            name,
            format!(
                "acptap's arguments in {file} start no agent: they ask for help or the version"
            ),
            fix,
        );
    }
    // clap's message, up to its usage line, on one line.
    let rendered = error.render().to_string();
    let said: Vec<&str> = rendered
        .lines()
        .take_while(|l| !l.starts_with("Usage:"))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let said = said.join(" ");
    Check::bad(
        name,
        format!(
            "acptap's arguments in {file} do not parse: {}",
            said.strip_prefix("error: ").unwrap_or(&said)
        ),
        fix,
    )
}

/// Zed's and VS Code's settings are JSON with comments and trailing commas: drops both, outside
/// strings, so `serde_json` reads the rest.
fn without_comments(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '"' => {
                let end = string_end(&chars, i);
                out.extend(&chars[i..end]);
                i = end;
            }
            '/' if matches!(chars.get(i + 1), Some('/' | '*')) => {
                i = comment_end(&chars, i);
                out.push(' ');
            }
            // A comma before a closing bracket (past blanks and comments) is dropped.
            ',' if matches!(next_token(&chars, i + 1), Some('}' | ']')) => i += 1,
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// The index just past the string literal opening at `start`.
fn string_end(chars: &[char], start: usize) -> usize {
    let mut i = start + 1;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    chars.len()
}

/// The index just past the comment (`//...` or `/*...*/`) opening at `start`.
fn comment_end(chars: &[char], start: usize) -> usize {
    let line = chars[start + 1] == '/';
    let mut i = start + 2;
    while i < chars.len() {
        if line && chars[i] == '\n' {
            return i;
        }
        if !line && chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
            return i + 2;
        }
        i += 1;
    }
    chars.len()
}

/// The first character from `i` on that is neither blank nor in a comment.
fn next_token(chars: &[char], mut i: usize) -> Option<char> {
    while let Some(&c) = chars.get(i) {
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && matches!(chars.get(i + 1), Some('/' | '*')) {
            i = comment_end(chars, i);
        } else {
            return Some(c);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_trailing_commas_go_strings_stay() {
        let text = r#"{
  // a comment
  "a": "http://x // not a comment, /* nor this */", /* block */
  "b": [1, 2,], "c": "\"quoted\", ]",
  "d": {"e": 1, /* last */ },
}"#;
        let value: Value = serde_json::from_str(&without_comments(text)).unwrap();
        assert_eq!(value["a"], "http://x // not a comment, /* nor this */");
        assert_eq!(value["b"], serde_json::json!([1, 2]));
        assert_eq!(value["c"], "\"quoted\", ]");
        assert_eq!(value["d"], serde_json::json!({"e": 1}));
    }

    #[test]
    fn acpx_entries_in_their_three_forms() {
        let argv = |v: Value| acpx_argv(&v).ok();
        assert_eq!(
            argv(serde_json::json!({"argv": ["acptap", "run", "--", "x y"]})),
            Some(vec![
                "acptap".into(),
                "run".into(),
                "--".into(),
                "x y".into()
            ])
        );
        assert_eq!(
            argv(serde_json::json!({"command": "acptap", "args": ["run"]})),
            Some(vec!["acptap".into(), "run".into()])
        );
        assert_eq!(
            argv(serde_json::json!({"command": "acptap run -- 'my agent'"})),
            Some(vec![
                "acptap".into(),
                "run".into(),
                "--".into(),
                "my agent".into()
            ])
        );
        assert_eq!(argv(serde_json::json!({"command": "a | b"})), None);
    }
}
