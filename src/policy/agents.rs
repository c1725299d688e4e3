//! Which agent's dialect a session speaks, from the `agentInfo.name` of its `initialize` answer.
//!
//! Each agent says where a shell command runs (and what the command is) its own way
//! (docs/policy.md, "How each agent names a command's directory"). The name an agent gives is
//! not one fixed string: a package is renamed (`@zed-industries/claude-agent-acp`,
//! `@agentclientprotocol/claude-agent-acp`), a version is appended (`claude-agent-acp@0.23.1`),
//! case and spacing change (`OpenCode`, `opencode `), and an invisible character may trail it.
//! So the name is normalised first ([`normalise_name`]), and then matched two ways:
//!
//! - a dialect that reads **less** than the default (Claude Code's shell that may sit anywhere
//!   below the project, opencode's directory that is not in the request, fast-agent's relative
//!   `cwd` that the client places) matches **loosely**, by a word in the name (`claude`,
//!   `opencode`, `fast-agent`): a false match only leaves more to the user;
//! - a dialect that reads **more** (gemini-cli's title as the command and its bracketed
//!   directory, kimi-cli's content text as the command) matches only the normalised names it was
//!   checked against (`gemini-cli`, `kimi-code-cli`): a false match would read what another
//!   agent's request does not mean.

/// `agentInfo.name` of the agents whose permission requests were checked against real captures
/// (the tests' names: the dialects match by normalised words, not by these strings).
#[cfg(test)]
pub(crate) const CLAUDE_AGENT_ACP: &str = "@zed-industries/claude-agent-acp";
/// claude-agent-acp's name before its rename (same Bash tool).
#[cfg(test)]
pub(crate) const CLAUDE_CODE_ACP: &str = "@zed-industries/claude-code-acp";
#[cfg(test)]
pub(crate) const OPENCODE: &str = "OpenCode";
#[cfg(test)]
pub(crate) const FAST_AGENT: &str = "fast-agent-acp";
#[cfg(test)]
pub(crate) const KIMI_CLI: &str = "Kimi Code CLI";
#[cfg(test)]
pub(crate) const GEMINI_CLI: &str = "gemini-cli";

/// Words whose presence in a normalised name (letters and digits only) selects a dialect that
/// reads less than the default: any agent that calls itself so gets it.
const CLAUDE_WORD: &str = "claude";
const OPENCODE_WORD: &str = "opencode";
const FAST_AGENT_WORD: &str = "fastagent";

/// The keys ([`name_key`]) of the only names that get a dialect that reads more.
const GEMINI_KEYS: &[&str] = &["gemini-cli"];
const KIMI_KEYS: &[&str] = &["kimi-code-cli"];

/// Where an agent's shell command runs when its request names no directory (no working-directory
/// key in rawInput, no bracketed directory in its content).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unnamed {
    /// The session's cwd: the agent runs each command there (a fresh process, or a terminal the
    /// client opens there).
    SessionCwd,
    /// Some directory inside the session's cwd, not known which: the agent keeps one shell
    /// whose directory persists between calls and sends it back to the session's cwd only when
    /// it leaves it. Relative paths cannot be placed; the directory itself is inside.
    InsideSessionCwd,
    /// Not known at all: the agent's permission request leaves out a directory it may use.
    Unknown,
}

/// rawInput keys that say where a command runs (claude: none; codex and fast-agent: `cwd`;
/// gemini: `dir_path`, earlier `directory`; Qwen Code: `directory`; others `workdir`,
/// `working_directory`).
pub(crate) const WORKDIR_KEYS: &[&str] = &[
    "cwd",
    "workdir",
    "working_directory",
    "dir_path",
    "directory",
];

/// opencode's bash tool names its directory `workdir`; the `cwd` of its calls is opencode's own
/// directory (its first `tool_call` carries it whatever the `workdir`), not where the command runs.
const OPENCODE_WORKDIR_KEYS: &[&str] = &["workdir"];

/// How the policy reads one agent's requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dialect {
    /// Where a command runs when the request names no directory.
    pub unnamed: Unnamed,
    /// Whether a relative directory the request names can be placed against the session's cwd.
    /// fast-agent passes its `cwd` argument as it is to the client's `terminal/create`, whose
    /// `cwd` the protocol says is absolute: a client resolves a relative one against its own
    /// process directory (or refuses it), which the policy cannot know.
    pub relative_workdir_placeable: bool,
    /// The rawInput keys that say where a command runs.
    pub workdir_keys: &'static [&'static str],
    /// gemini-cli: an `execute` call without `rawInput.command` runs its title, in the directory
    /// its content text opens with (`[current working directory DIR]`, `[in DIR]`). For any
    /// other agent such an opening cannot be placed.
    pub gemini: bool,
    /// kimi-cli: a call whose only content is ``Requesting approval to perform: Run command
    /// `CMD` `` runs CMD.
    pub kimi: bool,
}

impl Default for Dialect {
    fn default() -> Self {
        Dialect {
            unnamed: Unnamed::SessionCwd,
            relative_workdir_placeable: true,
            workdir_keys: WORKDIR_KEYS,
            gemini: false,
            kimi: false,
        }
    }
}

impl Dialect {
    /// The dialect of an agent by its `agentInfo.name` (`None`: not known, the default).
    pub fn of(agent: Option<&str>) -> Dialect {
        let mut dialect = Dialect::default();
        let Some(name) = agent else {
            return dialect;
        };
        let normalised = normalise_name(name);
        let key = name_key(&normalised);
        let compact: String = normalised.chars().filter(|c| c.is_alphanumeric()).collect();
        // Loose: each only leaves more to the user, so a name with two of these words gets both.
        if compact.contains(CLAUDE_WORD) {
            dialect.unnamed = Unnamed::InsideSessionCwd;
        }
        if compact.contains(OPENCODE_WORD) {
            dialect.unnamed = Unnamed::Unknown;
            dialect.workdir_keys = OPENCODE_WORKDIR_KEYS;
        }
        if compact.contains(FAST_AGENT_WORD) {
            dialect.relative_workdir_placeable = false;
        }
        // Exact: only the names checked against real requests.
        dialect.gemini = GEMINI_KEYS.contains(&key.as_str());
        dialect.kimi = KIMI_KEYS.contains(&key.as_str());
        dialect
    }

    /// The dialect for a v2 `command` subject: its `cwd` is the protocol's own field, whichever
    /// agent sends it, so it places the command as it does for any agent.
    pub(crate) fn for_command_subject(self) -> Dialect {
        Dialect {
            workdir_keys: WORKDIR_KEYS,
            ..self
        }
    }
}

/// An agent's name as it is matched: invisible and format characters removed (a zero-width
/// space, a byte-order mark, a bidirectional mark, a soft hyphen), surrounding white space
/// trimmed, case folded, a leading npm `@scope/` and a trailing `@version` dropped.
/// `" @AgentClientProtocol/Claude-Agent-ACP@0.23.1\u{200B}"` is `"claude-agent-acp"`.
pub(crate) fn normalise_name(name: &str) -> String {
    let visible: String = name.chars().filter(|&c| !is_invisible(c)).collect();
    let mut name = visible.trim().to_lowercase();
    if let Some(scoped) = name.strip_prefix('@') {
        name = match scoped.split_once('/') {
            Some((_, rest)) => rest.to_owned(),
            None => scoped.to_owned(),
        };
    }
    if let Some((base, _version)) = name.split_once('@') {
        name = base.to_owned();
    }
    name.trim().to_owned()
}

/// A normalised name with its runs of white space, `-` and `_` written as one `-` (so `Kimi
/// Code CLI`, `kimi-code-cli` and `kimi_code_cli` are one key), for the exact matches.
fn name_key(normalised: &str) -> String {
    let mut key = String::with_capacity(normalised.len());
    for c in normalised.chars() {
        if c.is_whitespace() || c == '-' || c == '_' {
            if !key.is_empty() && !key.ends_with('-') {
                key.push('-');
            }
        } else {
            key.push(c);
        }
    }
    key.trim_end_matches('-').to_owned()
}

/// Characters that show nothing: controls, Unicode's format characters (category Cf) and the
/// other default-ignorable code points (fillers, variation selectors, tags).
fn is_invisible(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{00AD}'
                | '\u{034F}'
                | '\u{0600}'..='\u{0605}'
                | '\u{061C}'
                | '\u{06DD}'
                | '\u{070F}'
                | '\u{0890}'..='\u{0891}'
                | '\u{08E2}'
                | '\u{115F}'..='\u{1160}'
                | '\u{17B4}'..='\u{17B5}'
                | '\u{180B}'..='\u{180F}'
                | '\u{200B}'..='\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{206F}'
                | '\u{3164}'
                | '\u{FE00}'..='\u{FE0F}'
                | '\u{FEFF}'
                | '\u{FFA0}'
                | '\u{FFF0}'..='\u{FFFB}'
                | '\u{110BD}'
                | '\u{110CD}'
                | '\u{13430}'..='\u{1343F}'
                | '\u{1BCA0}'..='\u{1BCA3}'
                | '\u{1D173}'..='\u{1D17A}'
                | '\u{E0000}'..='\u{E0FFF}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_normalised() {
        for (name, normalised) in [
            (CLAUDE_AGENT_ACP, "claude-agent-acp"),
            ("@agentclientprotocol/claude-agent-acp", "claude-agent-acp"),
            ("claude-agent-acp@0.23.1", "claude-agent-acp"),
            (
                "@zed-industries/claude-agent-acp@0.23.1",
                "claude-agent-acp",
            ),
            ("  CLAUDE-AGENT-ACP\u{200B}", "claude-agent-acp"),
            ("\u{FEFF}OpenCode\u{00A0}", "opencode"),
            ("Kimi Code CLI\u{2060}", "kimi code cli"),
            ("gemini-cli@latest", "gemini-cli"),
            ("@google/gemini-cli", "gemini-cli"),
            ("\u{200E}gemini\u{200B}-cli ", "gemini-cli"),
            ("", ""),
            ("@", ""),
        ] {
            assert_eq!(normalise_name(name), normalised, "{name:?}");
        }
        assert_eq!(name_key("kimi  code_cli"), "kimi-code-cli");
        assert_eq!(name_key("gemini cli-"), "gemini-cli");
    }

    /// The dialects that read less match any name with their word in it.
    #[test]
    fn conservative_dialects_match_loosely() {
        for name in [
            CLAUDE_AGENT_ACP,
            CLAUDE_CODE_ACP,
            "claude-agent-acp",
            "@agentclientprotocol/claude-agent-acp",
            "CLAUDE-AGENT-ACP",
            " @zed-industries/claude-agent-acp ",
            "@zed-industries/claude-agent-acp\u{200B}",
            "claude-agent-acp@0.23.1",
            "Claude Agent",
            "Claude Code",
        ] {
            assert_eq!(
                Dialect::of(Some(name)).unnamed,
                Unnamed::InsideSessionCwd,
                "{name:?}"
            );
        }
        for name in [
            OPENCODE,
            "opencode",
            "Opencode",
            "OpenCode ",
            "open-code",
            "OPENCODE@1.18.33",
        ] {
            let dialect = Dialect::of(Some(name));
            assert_eq!(dialect.unnamed, Unnamed::Unknown, "{name:?}");
            assert_eq!(dialect.workdir_keys, ["workdir"], "{name:?}");
        }
        for name in [
            FAST_AGENT,
            "fast-agent",
            "Fast Agent ACP",
            "fast_agent_acp@0.10.48",
        ] {
            assert!(
                !Dialect::of(Some(name)).relative_workdir_placeable,
                "{name:?}"
            );
        }
        // Two words: both cautions apply.
        let both = Dialect::of(Some("claude-in-opencode via fast-agent"));
        assert_eq!(both.unnamed, Unnamed::Unknown);
        assert!(!both.relative_workdir_placeable);
    }

    /// The dialects that read more match only the names they were checked against.
    #[test]
    fn dialects_that_read_more_match_only_known_names() {
        for name in [
            GEMINI_CLI,
            "Gemini-CLI",
            " gemini-cli\u{200B}",
            "gemini-cli@0.61.0",
            "@google/gemini-cli",
            "Gemini CLI",
        ] {
            assert!(Dialect::of(Some(name)).gemini, "{name:?}");
        }
        for name in [
            "gemini",
            "gemini-cli-fork",
            "my-gemini-cli",
            "qwen-code",
            "gemini-cli-acp",
        ] {
            assert!(!Dialect::of(Some(name)).gemini, "{name:?}");
        }
        for name in [
            KIMI_CLI,
            "kimi code cli",
            "KIMI CODE CLI ",
            "kimi-code-cli@1.52.0",
        ] {
            assert!(Dialect::of(Some(name)).kimi, "{name:?}");
        }
        for name in ["kimi", "Kimi Code CLI Pro", "not kimi code cli"] {
            assert!(!Dialect::of(Some(name)).kimi, "{name:?}");
        }
        let default = Dialect::of(None);
        assert_eq!(default, Dialect::default());
        for name in [
            "codex-acp",
            "qwen-code",
            "@mistralai/mistral-vibe",
            "pi-acp",
            "",
        ] {
            assert_eq!(Dialect::of(Some(name)), default, "{name:?}");
        }
    }
}
