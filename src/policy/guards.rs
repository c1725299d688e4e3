//! The built-in guards: what no rule can allow.
//!
//! - **`guard:rm-rf`** (deny): `rm` with a recursive flag aimed at something whose loss is not
//!   an edit but a disaster: `/`, the home directory, the working directory or one of its
//!   parents, in any form bash would expand to one of them, or in a form that cannot be known.
//! - **ask guards**, for every kind of tool but those that only look, and compared without
//!   regard to case (macOS and Windows disks ignore it): a path inside a `.git` directory or a
//!   repository-shaped directory, a file that makes a directory a repository or configures one,
//!   a policy file in use, and startup files: code in them runs in every later shell, git or
//!   build ([`STARTUP_NAMES`], [`STARTUP_DIRS`]).

use std::path::{Path, PathBuf};

use super::filesystem::{Disk, Entry, FileSystem};
use super::paths::{self, Containment, Placing};

/// File names whose content later runs as code or configures the tools that run it: shells,
/// git, direnv, npm, editors. Compared in lower case.
pub(crate) const STARTUP_NAMES: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".bash_aliases",
    ".profile",
    ".login",
    ".logout",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".kshrc",
    ".mkshrc",
    ".cshrc",
    ".tcshrc",
    "config.fish",
    "bash.bashrc",
    "environment",
    ".pam_environment",
    ".inputrc",
    ".xprofile",
    ".xinitrc",
    ".xsession",
    ".envrc",
    ".direnvrc",
    ".gitconfig",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pnpmfile.cjs",
    ".vimrc",
    ".exrc",
    ".nvimrc",
    ".tmux.conf",
    ".curlrc",
    ".wgetrc",
    ".bash_completion",
    ".rprofile",
    ".pryrc",
    ".irbrc",
    ".gdbinit",
    ".lldbinit",
    ".bazelrc",
    "bunfig.toml",
    ".nvim.lua",
    ".dir-locals.el",
    "sitecustomize.py",
    "usercustomize.py",
    // Hook managers' and agents' project configuration: commands run on the next commit or
    // the next agent session.
    ".pre-commit-config.yaml",
    "lefthook.yml",
    "lefthook.yaml",
    ".lefthook.yml",
    ".lefthook.yaml",
    "lefthook-local.yml",
    ".mcp.json",
    ".claude.json",
    ".devcontainer.json",
    ".gitlab-ci.yml",
    ".mise.toml",
    "mise.toml",
    ".aider.conf.yml",
    ".pdbrc",
    ".hgrc",
    ".emacs",
    ".xsessionrc",
    ".gemrc",
    "pip.conf",
];

/// File name endings that run as code or configure tools wherever they are (Python runs a `.pth` file's import
/// lines at every start of the interpreter whose site-packages holds it; a VS Code workspace
/// file holds tasks and settings, as `.vscode/` does).
const STARTUP_SUFFIXES: &[&str] = &[".pth", ".code-workspace"];

/// Directories under the home directory whose files run as code or configure tools (XDG
/// config, programs on PATH, cargo's and ssh's configuration, rc.d directories).
pub(crate) const STARTUP_DIRS: &[&str] = &[
    ".config",
    ".local/bin",
    "bin",
    ".cargo",
    ".rustup",
    ".ssh",
    ".gnupg",
    ".bashrc.d",
    ".bash_completion.d",
    ".zshrc.d",
    ".zsh",
    ".oh-my-zsh",
    ".profile.d",
    ".npm-global",
    ".docker",
    ".kube",
];

/// Directory names that configure the tool that reads the project wherever they are
/// (`.cargo/config.toml` can make `cargo test` run any program; an editor's tasks and an agent's
/// hooks and settings run commands; a hook manager's scripts run on every commit). Compared in
/// lower case.
pub(crate) const CONFIG_DIRS_ANYWHERE: &[&str] = &[
    ".cargo",
    ".acptap",
    ".vscode",
    ".idea",
    ".zed",
    ".nvim",
    ".devcontainer",
    ".husky",
    ".githooks",
    ".claude",
    ".codex",
    ".gemini",
    ".qwen",
    ".cursor",
    ".opencode",
    ".kimi",
    ".vibe",
    ".pi",
    ".helix",
    ".github",
    ".circleci",
    ".windsurf",
    ".codeium",
    ".continue",
    ".roo",
    ".amazonq",
    ".kiro",
    ".trae",
    ".junie",
    ".augment",
    ".theia",
    ".fleet",
    ".vim",
    ".emacs.d",
    ".ipython",
    ".jupyter",
    ".gradle",
    ".sbt",
    ".m2",
];

/// Version-control directories other than git's: their configuration runs hooks too.
pub(crate) const VCS_DIRS: &[&str] = &[".hg", ".jj", ".svn", ".bzr"];

/// Names inside a git directory that make a directory a repository or configure one.
const REPOSITORY_NAMES: &[&str] = &["head", "config", "packed-refs", "commondir", "gitdir"];

/// What the guards know of the machine.
pub(crate) struct Guards<'a> {
    pub home: Option<&'a Path>,
    pub policy_files: &'a [PathBuf],
}

impl Guards<'_> {
    /// `rm -r` of something whose loss is not an edit but a disaster. `commands` are the words
    /// of every command, read strictly and loosely.
    pub(crate) fn rm_recursive<'w>(
        &self,
        fs: &dyn FileSystem,
        commands: impl Iterator<Item = &'w [String]>,
        cwd: Option<&Path>,
    ) -> Option<String> {
        for words in commands {
            for (i, word) in words.iter().enumerate() {
                if word.rsplit('/').next() != Some("rm") {
                    continue;
                }
                let (options, targets) = rm_arguments(&words[i + 1..]);
                if !options.iter().any(|o| is_recursive_flag(o)) {
                    continue;
                }
                if let Some(target) = targets.iter().find(|t| self.is_precious(fs, t, cwd)) {
                    return Some(format!(
                        "built-in guard: `rm -r {target}` would delete far more than a project file"
                    ));
                }
            }
        }
        None
    }

    /// Whether `rm -r TARGET` can reach `/`, home, the working directory or above, as bash
    /// would expand TARGET; what cannot be known counts as reaching them.
    fn is_precious(&self, fs: &dyn FileSystem, target: &str, cwd: Option<&Path>) -> bool {
        if target.contains(['$', '`']) {
            return true; // an expansion the policy cannot see
        }
        let precious = |p: &Path| {
            p.components().count() <= 2 // `/` and `/usr`, `/etc`, `/home`...
                || self.home.is_some_and(|h| inside(h, p))
                || cwd.is_some_and(|c| inside(c, p))
        };
        let Some(literal) = paths::normalise(fs, target, cwd, self.home) else {
            return true;
        };
        if precious(&literal) {
            return true;
        }
        let Some((dir, pattern)) = first_glob(target) else {
            return false;
        };
        let dir = if dir.is_empty() { "." } else { dir };
        let Some(dir) = paths::normalise(fs, dir, cwd, self.home) else {
            return true;
        };
        // A pattern in `/`, home or above the working directory; a catch-all (`*`, `?*`, `.*`,
        // `**`) in the working directory; or any match that is itself precious.
        let above = dir.components().count() <= 2
            || self.home.is_some_and(|h| inside(h, &dir))
            || cwd.is_some_and(|c| inside(c, &dir) && c != dir);
        let catch_all = pattern.chars().all(|c| matches!(c, '*' | '?' | '.'));
        if above || (catch_all && cwd == Some(dir.as_path())) {
            return true;
        }
        paths::expand_argument(fs, target, cwd, self.home)
            .iter()
            .any(|p| p.as_deref().is_none_or(precious))
    }

    /// Changes that always go to the user, whatever the rules say.
    ///
    /// `by_name` also asks for files only *named* like a repository's (`HEAD`, `config`, ...):
    /// right for the paths a tool call edits, wrong for a command's arguments, where `HEAD` is
    /// usually a revision. A repository planted by earlier edits is caught on disk when a later
    /// command runs in it or names it.
    pub(crate) fn ask(
        &self,
        paths: &[Option<PathBuf>],
        by_name: bool,
    ) -> Option<(&'static str, String)> {
        self.ask_in(&Disk, paths, by_name)
    }

    /// [`Guards::ask`], with the file system's facts (a repository on disk) from `fs`.
    pub(crate) fn ask_in(
        &self,
        fs: &dyn FileSystem,
        paths: &[Option<PathBuf>],
        by_name: bool,
    ) -> Option<(&'static str, String)> {
        for path in paths.iter().flatten() {
            let lower = lowercase(path);
            if lower.components().any(|c| c.as_os_str() == ".git") {
                return Some((
                    "guard:git-dir",
                    format!(
                        "built-in guard: {} is inside a .git directory",
                        path.display()
                    ),
                ));
            }
            if let Some(dir) = lower
                .components()
                .find_map(|c| VCS_DIRS.iter().find(|d| c.as_os_str() == **d).copied())
            {
                return Some((
                    "guard:vcs-dir",
                    format!(
                        "built-in guard: {} is inside a {dir} directory (version control)",
                        path.display()
                    ),
                ));
            }
            if let Some(repository) = repository_around(fs, path) {
                return Some((
                    "guard:git-repo",
                    format!(
                        "built-in guard: {} is inside {}, which is shaped like a git repository",
                        path.display(),
                        repository.display()
                    ),
                ));
            }
            let name = lower
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if by_name && REPOSITORY_NAMES.contains(&name.as_str()) {
                return Some((
                    "guard:git-repo",
                    format!(
                        "built-in guard: {} is named like a file that makes or configures a git repository",
                        path.display()
                    ),
                ));
            }
            if self.policy_files.iter().any(|f| lowercase(f) == lower) {
                return Some((
                    "guard:policy-file",
                    format!("built-in guard: {} is a policy file in use", path.display()),
                ));
            }
            if STARTUP_NAMES.contains(&name.as_str())
                || STARTUP_SUFFIXES.iter().any(|s| name.ends_with(s))
                || lower
                    .components()
                    .any(|c| CONFIG_DIRS_ANYWHERE.contains(&&*c.as_os_str().to_string_lossy()))
                || self.home.is_some_and(|home| {
                    let home = lowercase(home);
                    STARTUP_DIRS
                        .iter()
                        .any(|dir| inside(&lower, &home.join(dir)))
                })
            {
                return Some((
                    "guard:startup-file",
                    format!(
                        "built-in guard: {} runs as code or configures tools in later shells",
                        path.display()
                    ),
                ));
            }
        }
        None
    }
}

fn lowercase(path: &Path) -> PathBuf {
    PathBuf::from(path.to_string_lossy().to_lowercase())
}

/// The nearest directory at or above `path` that git would take for a repository: a `HEAD`
/// file next to `objects` or `refs` (as `vendor/evil/{HEAD,config,objects,refs}` made by
/// ordinary edits would be).
fn repository_around(fs: &dyn FileSystem, path: &Path) -> Option<PathBuf> {
    let is = |p: PathBuf, entry: Entry| fs.entry(&p, true) == Some(entry);
    path.ancestors()
        .find(|dir| {
            is(dir.join("HEAD"), Entry::File)
                && (is(dir.join("objects"), Entry::Dir) || is(dir.join("refs"), Entry::Dir))
        })
        .map(Path::to_owned)
}

/// Whether `path` lies in `dir`, both placed already.
fn inside(path: &Path, dir: &Path) -> bool {
    paths::containment(path, dir, Placing::AsGiven) == Containment::Inside
}

/// rm's options and targets: options end at `--`; GNU rm takes options after targets too.
fn rm_arguments(args: &[String]) -> (Vec<&str>, Vec<&str>) {
    let mut options = Vec::new();
    let mut targets = Vec::new();
    let mut ended = false;
    for arg in args {
        if !ended && arg == "--" {
            ended = true;
        } else if !ended && arg.starts_with('-') && arg.len() > 1 {
            options.push(arg.as_str());
        } else {
            targets.push(arg.as_str());
        }
    }
    (options, targets)
}

/// `-r`, `-R`, `-rf`, `--recursive`, and its abbreviations (`--rec`), as GNU getopt takes them.
fn is_recursive_flag(option: &str) -> bool {
    match option.strip_prefix("--") {
        Some(long) => !long.is_empty() && "recursive".starts_with(long),
        None => option[1..].contains(['r', 'R']),
    }
}

/// The directory before the first component with a glob character, and that component.
fn first_glob(target: &str) -> Option<(&str, &str)> {
    let mut start = 0;
    for component in target.split('/') {
        if component.contains(['*', '?', '[']) {
            return Some((target[..start].trim_end_matches('/'), component));
        }
        start += component.len() + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recursive_flags_and_abbreviations() {
        for flag in [
            "-r",
            "-R",
            "-rf",
            "-fR",
            "--recursive",
            "--rec",
            "--r",
            "--recursiv",
        ] {
            assert!(is_recursive_flag(flag), "{flag}");
        }
        for flag in ["-f", "-i", "--force", "--no-preserve-root", "--recursively"] {
            assert!(!is_recursive_flag(flag), "{flag}");
        }
    }

    #[test]
    fn precious_targets_in_every_form_bash_expands() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap();
        let cwd = home.join("project");
        std::fs::create_dir_all(cwd.join("src")).unwrap();
        std::fs::write(cwd.join("a.txt"), "").unwrap();
        let guards = Guards {
            home: Some(&home),
            policy_files: &[],
        };
        for target in [
            "/", "~", "~/", "~root", "~+", "~-", "*", "**", "./**", "?*", ".*", "~/.*", "/*",
            "${HOME}", "$HOME", "$PWD", "$(pwd)", "`pwd`", "..", ".", "./", "../*", "src/..",
            "*/..", "/ho*", "~/pro*", "/usr",
        ] {
            assert!(
                guards.is_precious(&Disk, target, Some(&cwd)),
                "{target} should be precious"
            );
        }
        for target in ["src", "src/*", "target", "./build*", "/tmp/x"] {
            assert!(!guards.is_precious(&Disk, target, Some(&cwd)), "{target}");
        }
    }
}
