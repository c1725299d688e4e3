//! The editor configurations `acptap doctor` knows (docs/editors.md): where each editor keeps the
//! agents it starts, read the way the editor reads them, down to each agent's argv.

use std::path::{Path, PathBuf};

use serde_json::Value;

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
    /// This argv, the program first.
    Command(Vec<String>),
    /// The editor fetches and starts it itself (Zed's registry, extension and built-in agents):
    /// what it is.
    ByEditor(String),
    /// The entry names no command the editor could start.
    Missing,
}

/// A configuration file that exists and could not be read: the editor will not see its agents
/// either.
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
    /// The object whose keys are agent names.
    agents_at: &'static [&'static str],
    entry: fn(&Value) -> Launch,
}

/// The files, under `home` and `config_home` (`$XDG_CONFIG_HOME`, else `~/.config`).
fn known(home: &Path, config_home: &Path) -> Vec<Known> {
    vec![
        Known {
            editor: "zed",
            file: config_home.join("zed/settings.json"),
            agents_at: &["agent_servers"],
            entry: zed_entry,
        },
        Known {
            editor: "jetbrains",
            file: home.join(".jetbrains/acp.json"),
            agents_at: &["agent_servers"],
            entry: command_and_args,
        },
        Known {
            editor: "vscode",
            file: config_home.join("Code/User/settings.json"),
            agents_at: &["acp.agents"],
            entry: command_and_args,
        },
        Known {
            editor: "acpx",
            file: home.join(".acpx/config.json"),
            agents_at: &["agents"],
            entry: acpx_entry,
        },
    ]
}

/// Every agent in every known file that exists, and the files that exist but do not parse.
pub(super) fn read(home: &Path, config_home: &Path) -> (Vec<EditorAgent>, Vec<Unreadable>) {
    let mut agents = Vec::new();
    let mut unreadable = Vec::new();
    for known in known(home, config_home) {
        let text = match std::fs::read_to_string(&known.file) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                unreadable.push(Unreadable {
                    editor: known.editor,
                    file: known.file,
                    error: e.to_string(),
                });
                continue;
            }
        };
        let document = match serde_json::from_str::<Value>(&without_comments(&text)) {
            Ok(document) => document,
            Err(e) => {
                unreadable.push(Unreadable {
                    editor: known.editor,
                    file: known.file,
                    error: format!("not JSON: {e}"),
                });
                continue;
            }
        };
        let entries = known
            .agents_at
            .iter()
            .try_fold(&document, |value, key| value.get(key))
            .and_then(Value::as_object);
        for (name, entry) in entries.into_iter().flatten() {
            agents.push(EditorAgent {
                editor: known.editor,
                file: known.file.clone(),
                name: name.clone(),
                launch: (known.entry)(entry),
            });
        }
    }
    (agents, unreadable)
}

/// JetBrains, VS Code: `{"command": PROGRAM, "args": [...]}`.
fn command_and_args(entry: &Value) -> Launch {
    argv_of_command(entry).map_or(Launch::Missing, Launch::Command)
}

/// Zed: `{"type": "custom", "command": PROGRAM, "args": [...]}`; a `registry` or `extension`
/// agent, or a built-in one given no command, Zed fetches and starts itself.
fn zed_entry(entry: &Value) -> Launch {
    match entry.get("type").and_then(Value::as_str) {
        Some(kind @ ("registry" | "extension")) => Launch::ByEditor(format!("a Zed {kind} agent")),
        _ if entry.get("command").is_none() => Launch::ByEditor("a Zed built-in agent".into()),
        _ => command_and_args(entry),
    }
}

fn argv_of_command(entry: &Value) -> Option<Vec<String>> {
    let mut argv = vec![entry.get("command")?.as_str()?.to_owned()];
    if let Some(args) = entry.get("args").and_then(Value::as_array) {
        argv.extend(
            args.iter()
                .map(|a| a.as_str().unwrap_or_default().to_owned()),
        );
    }
    Some(argv)
}

/// acpx: `{"argv": [...]}`, or `{"command": PROGRAM, "args": [...]}`, or a raw `{"command":
/// "PROGRAM ARGS..."}` that acpx splits on spaces and quotes.
fn acpx_entry(entry: &Value) -> Launch {
    acpx_argv(entry).map_or(Launch::Missing, Launch::Command)
}

fn acpx_argv(entry: &Value) -> Option<Vec<String>> {
    if let Some(argv) = entry.get("argv").and_then(Value::as_array) {
        return Some(
            argv.iter()
                .map(|a| a.as_str().unwrap_or_default().to_owned())
                .collect(),
        );
    }
    if entry.get("args").is_some() {
        return argv_of_command(entry);
    }
    let raw = entry.get("command")?.as_str()?;
    match crate::policy::shell::analyse(raw).ok()?.as_slice() {
        [one] if one.env.is_empty() => Some(one.words.clone()),
        _ => None,
    }
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
        let argv = |v: Value| acpx_argv(&v);
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
