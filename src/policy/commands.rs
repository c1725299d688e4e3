//! What a command can do with its arguments: one table of per-command knowledge.
//!
//! An allow rule's `command` prefix grants a command's read-only, in-project use, not every
//! argument. [`analyse`] reads one simple command's words with the table below and returns:
//!
//! - its **dangers**: options (or subcommands, or arguments) that write files, run programs,
//!   change configuration or leave the project (`git log --output=F`, `cargo --config ...`,
//!   `find -exec`, `sed -i`, `make CC=...`). An allow fails on any of them unless the rule
//!   names it (in its prefix, or in `options`);
//! - its **path arguments**: every argument that names a file or directory, which the policy
//!   holds to the rule's `paths`, the deny rules and the guards like a read or edit's paths.
//!   Unless the table knows better (a grep pattern, a count, a format), an argument is taken
//!   for a path: a plain word resolves inside the working directory and costs nothing, while
//!   `/etc/passwd`, `../x`, `~/.ssh` and symlinks out of the project are caught.
//!
//! Long options may be abbreviated (git and GNU tools accept any unique prefix): `--out=F`
//! counts as `--output=F`. Short options may be bundled (`-ni`). `--` ends the options.
//! Commands that run their arguments as a command (`xargs`, `sudo`, `timeout`, ...) are
//! dangerous as such. A command the table does not know gets the generic reading: no
//! dangerous option is known, every argument and every `--opt=value` value is a path.
//!
//! docs/policy.md ("The command table") lists the table for users; keep them in step.

use std::fmt;

/// What a dangerous option can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    WritesFiles,
    RunsPrograms,
    ChangesConfig,
    LeavesProject,
    /// A compiler flag other than a lint level, after `cargo clippy --` or `cargo rustc --`.
    CompilerFlag,
}

impl fmt::Display for Effect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Effect::WritesFiles => "writes files",
            Effect::RunsPrograms => "runs other programs",
            Effect::ChangesConfig => "changes configuration",
            Effect::LeavesProject => "reaches outside the project",
            Effect::CompilerFlag => "gives the compiler a flag other than a lint level",
        })
    }
}

use Effect::{ChangesConfig, CompilerFlag, LeavesProject, RunsPrograms, WritesFiles};

/// One dangerous word of a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Danger {
    /// The word's index in the simple command.
    pub index: usize,
    /// The names a rule's `options` may use to grant it (`-o --output`, `exec`, `CC=`).
    pub names: String,
    /// The word as written.
    pub word: String,
    pub effect: Effect,
}

/// A path argument: the word's index, and the path as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PathArg {
    pub index: usize,
    pub path: String,
}

/// What [`analyse`] found in one simple command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Arguments {
    pub dangers: Vec<Danger>,
    pub paths: Vec<PathArg>,
    /// The index of the subcommand of git, cargo, npm (after their own options), so that a rule
    /// `["git", "log"]` also names `git --no-pager log`.
    pub subcommand: Option<usize>,
}

/// What an option's value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Value {
    /// A flag: no value.
    No,
    /// A value that names no file (a count, a pattern, a format).
    Word,
    /// A file or directory.
    Path,
    /// A directory the command then works in (`git -C`, `make -C`): a path, and later relative
    /// paths are also read against it.
    Chdir,
}

/// An option: its names (space-separated: `-o --output`), its value, and what it can do.
type Opt = (&'static str, Value, Option<Effect>);

/// How a command's positional arguments are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Positionals {
    /// Every positional names a file.
    Paths,
    /// The first is a pattern (unless a pattern option was given), the rest are files.
    PatternThenPaths,
    /// Text, names, numbers: none is a file (`echo`, `which`).
    Text,
}

struct Spec {
    names: &'static [&'static str],
    options: &'static [Opt],
    positionals: Positionals,
    /// Extra reading for what options cannot express.
    special: Special,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Special {
    None,
    Git,
    Cargo,
    Npm,
    Find,
    Sed,
    Awk,
    Make,
    Uniq,
    Python,
    Node,
    /// `tar xf a.tar`: the old form, letters without a dash first.
    Tar,
}

/// Commands that run their arguments as a command: whatever follows is hidden from the table.
pub(crate) const WRAPPERS: &[&str] = &[
    "xargs",
    "sudo",
    "doas",
    "su",
    "runuser",
    "pkexec",
    "timeout",
    "nice",
    "nohup",
    "env",
    "stdbuf",
    "setsid",
    "chroot",
    "ionice",
    "taskset",
    "chrt",
    "watch",
    "flock",
    "strace",
    "ltrace",
    "gdb",
    "valgrind",
    "script",
    "unbuffer",
    "parallel",
    "busybox",
    "toybox",
    "nsenter",
    "unshare",
    "firejail",
    "bwrap",
    "systemd-run",
    "npx",
    "pnpx",
    "bunx",
    "uvx",
    "time",
];

const TEXT: &[Opt] = &[];

const GIT_GLOBAL: &[Opt] = &[
    ("-c", Value::Word, Some(ChangesConfig)),
    ("--config-env", Value::Word, Some(ChangesConfig)),
    ("-C", Value::Chdir, None),
    ("--git-dir", Value::Path, Some(ChangesConfig)),
    ("--work-tree", Value::Path, Some(ChangesConfig)),
    ("--exec-path", Value::No, Some(RunsPrograms)),
    ("--namespace", Value::Word, None),
    ("--super-prefix", Value::Word, None),
    ("--attr-source", Value::Word, None),
    ("--list-cmds", Value::Word, None),
];

/// Options any git subcommand may have that write, run or leave.
const GIT_ANY: &[Opt] = &[
    ("--output", Value::Path, Some(WritesFiles)),
    ("--ext-diff", Value::No, Some(RunsPrograms)),
    ("--no-index", Value::No, Some(LeavesProject)),
    ("--upload-pack", Value::Word, Some(RunsPrograms)),
    ("--receive-pack", Value::Word, Some(RunsPrograms)),
    ("--exec", Value::Word, Some(RunsPrograms)),
    ("--template", Value::Path, Some(RunsPrograms)),
    ("--separate-git-dir", Value::Path, Some(ChangesConfig)),
    ("--open-files-in-pager", Value::No, Some(RunsPrograms)),
    ("--orderfile", Value::Path, None),
    ("--contents", Value::Path, None),
    ("--ignore-revs-file", Value::Path, None),
    ("--exclude-from", Value::Path, None),
    ("--format", Value::Word, None),
    ("--pretty", Value::Word, None),
    ("--author", Value::Word, None),
    ("--committer", Value::Word, None),
    ("--grep", Value::Word, None),
    ("--since", Value::Word, None),
    ("--until", Value::Word, None),
    ("--after", Value::Word, None),
    ("--before", Value::Word, None),
    ("--date", Value::Word, None),
    ("--max-count", Value::Word, None),
    ("--skip", Value::Word, None),
    ("--message", Value::Word, None),
];

/// Short options per git subcommand (short letters mean different things in each).
const GIT_SUBCOMMANDS: &[(&[&str], &[Opt])] = &[
    (
        &[
            "log",
            "show",
            "diff",
            "whatchanged",
            "diff-tree",
            "diff-files",
            "diff-index",
            "range-diff",
            "shortlog",
        ],
        &[
            ("-O", Value::Path, None),
            ("-n", Value::Word, None),
            ("-S", Value::Word, None),
            ("-G", Value::Word, None),
            ("-L", Value::Word, None),
        ],
    ),
    (
        &["format-patch"],
        &[("-o --output-directory", Value::Path, Some(WritesFiles))],
    ),
    (
        &["grep"],
        &[
            ("-O", Value::No, Some(RunsPrograms)),
            ("-e", Value::Word, None),
            ("-f", Value::Path, None),
            ("-m --max-count", Value::Word, None),
            ("-A -B -C", Value::Word, None),
        ],
    ),
    (
        &["branch"],
        &[
            ("-d -D --delete", Value::No, Some(WritesFiles)),
            ("-m -M --move", Value::No, Some(WritesFiles)),
            ("-c -C --copy", Value::No, Some(WritesFiles)),
            ("-f --force", Value::No, Some(WritesFiles)),
            ("-u --set-upstream-to", Value::Word, Some(WritesFiles)),
            ("--unset-upstream", Value::No, Some(WritesFiles)),
            ("--edit-description", Value::No, Some(WritesFiles)),
            (
                "--contains --no-contains --merged --no-merged --points-at --sort",
                Value::Word,
                None,
            ),
        ],
    ),
    (
        &["blame"],
        &[("-S", Value::Path, None), ("-L", Value::Word, None)],
    ),
    (
        &["ls-files"],
        &[("-X", Value::Path, None), ("-x", Value::Word, None)],
    ),
    (
        &["archive"],
        &[
            ("-o", Value::Path, Some(WritesFiles)),
            ("--remote", Value::Word, None),
        ],
    ),
    (
        &["clone"],
        &[
            ("-c --config", Value::Word, Some(ChangesConfig)),
            ("-u", Value::Word, Some(RunsPrograms)),
        ],
    ),
    (&["ls-remote"], &[("-u", Value::Word, Some(RunsPrograms))]),
    (&["rebase"], &[("-x", Value::Word, Some(RunsPrograms))]),
    (
        &["commit"],
        &[("-m", Value::Word, None), ("-F --file", Value::Path, None)],
    ),
];

/// git subcommands that run other programs or change configuration whatever their options.
const GIT_DANGEROUS_SUBCOMMANDS: &[(&str, Effect)] = &[
    ("difftool", RunsPrograms),
    ("mergetool", RunsPrograms),
    ("filter-branch", RunsPrograms),
    ("filter-repo", RunsPrograms),
    ("instaweb", RunsPrograms),
    ("daemon", RunsPrograms),
    ("web--browse", RunsPrograms),
    ("help", RunsPrograms),
    ("credential", LeavesProject),
    ("credential-store", LeavesProject),
    ("credential-cache", LeavesProject),
    ("remote-ext", RunsPrograms),
];

/// `git config` forms that only read.
const GIT_CONFIG_READS: &[&str] = &[
    "--get",
    "--get-all",
    "--get-regexp",
    "--get-urlmatch",
    "--list",
    "-l",
    "get",
    "list",
];

const CARGO: &[Opt] = &[
    ("--config", Value::Word, Some(RunsPrograms)),
    ("-Z", Value::Word, Some(ChangesConfig)),
    ("--manifest-path", Value::Path, None),
    ("--target-dir", Value::Path, None),
    ("--artifact-dir --out-dir", Value::Path, None),
    ("--lockfile-path", Value::Path, None),
    ("-C", Value::Chdir, None),
    ("-p --package --exclude", Value::Word, None),
    ("--bin --example --test --bench", Value::Word, None),
    (
        "-F --features --target --profile -j --jobs",
        Value::Word,
        None,
    ),
    ("--message-format --color", Value::Word, None),
    // `cargo clippy --fix` rewrites the project's sources, as `sed -i` would.
    ("--fix", Value::No, Some(WritesFiles)),
];

/// cargo subcommands whose arguments after `--` go to the compiler: clippy-driver, rustc,
/// rustdoc. Only lint levels are read as harmless there ([`compiler_flags`]). `build`, `check`,
/// `fix` and `doc` take no such arguments (cargo refuses them): read the same way, they cost
/// nothing and stay closed if a cargo ever passes them on. Aliases included (`b`, `c`, `d`).
const CARGO_COMPILER_ARGS: &[&str] = &[
    "clippy", "rustc", "rustdoc", "build", "b", "check", "c", "fix", "doc", "d",
];

/// cargo subcommands whose arguments after `--` go to the test binaries (libtest's options).
const CARGO_TEST_ARGS: &[&str] = &["test", "t", "bench"];

/// libtest's options: `--logfile` writes a file; the rest choose and show tests. Filters
/// (positionals) are read as paths, which costs a plain test name nothing.
const LIBTEST: &[Opt] = &[
    ("--logfile", Value::Path, Some(WritesFiles)),
    (
        "--test-threads --skip --format --color --shuffle-seed -Z",
        Value::Word,
        None,
    ),
];

/// rustc's lint-level flags, the only compiler arguments read as harmless: each takes a lint
/// name (`--cap-lints` a level), separate or attached (`-D warnings`, `-Dwarnings`,
/// `--deny=warnings`).
const LINT_LEVEL_FLAGS: &[&str] = &[
    "-D",
    "-W",
    "-A",
    "-F",
    "--deny",
    "--warn",
    "--allow",
    "--forbid",
    "--force-warn",
    "--cap-lints",
];

/// rustc flags whose value is the next word (when not attached).
const COMPILER_VALUE_FLAGS: &[&str] = &[
    "-C",
    "--codegen",
    "-Z",
    "-o",
    "-L",
    "-l",
    "--extern",
    "--emit",
    "--out-dir",
    "--sysroot",
    "--cfg",
    "--check-cfg",
    "--crate-type",
    "--crate-name",
    "--edition",
    "--target",
    "--print",
    "--error-format",
    "--json",
    "--color",
    "--remap-path-prefix",
    "--explain",
    "--env-set",
];

const CARGO_DANGEROUS_SUBCOMMANDS: &[&str] = &[
    "install",
    "uninstall",
    "publish",
    "login",
    "logout",
    "owner",
    "yank",
];

const NPM: &[Opt] = &[
    ("--prefix -C --dir --cwd", Value::Chdir, None),
    ("-g --global", Value::No, Some(LeavesProject)),
    ("--location", Value::Word, Some(LeavesProject)),
    (
        "--userconfig --globalconfig",
        Value::Path,
        Some(ChangesConfig),
    ),
    ("--script-shell", Value::Word, Some(RunsPrograms)),
    ("--node-options", Value::Word, Some(RunsPrograms)),
    ("--cache", Value::Path, None),
    ("-w --workspace --filter", Value::Word, None),
];

const NPM_DANGEROUS_SUBCOMMANDS: &[(&str, Effect)] = &[
    ("exec", RunsPrograms),
    ("x", RunsPrograms),
    ("dlx", RunsPrograms),
    ("explore", RunsPrograms),
    ("create", RunsPrograms),
    ("init", RunsPrograms),
    ("edit", RunsPrograms),
    ("publish", LeavesProject),
    ("unpublish", LeavesProject),
    ("adduser", LeavesProject),
    ("login", LeavesProject),
    ("logout", LeavesProject),
    ("owner", LeavesProject),
    ("token", LeavesProject),
    ("deprecate", LeavesProject),
    ("config", ChangesConfig),
    ("set", ChangesConfig),
];

const TABLE: &[Spec] = &[
    Spec {
        names: &["git"],
        options: GIT_GLOBAL,
        positionals: Positionals::Paths,
        special: Special::Git,
    },
    Spec {
        names: &["cargo"],
        options: CARGO,
        positionals: Positionals::Paths,
        special: Special::Cargo,
    },
    Spec {
        names: &["npm", "pnpm", "yarn"],
        options: NPM,
        positionals: Positionals::Paths,
        special: Special::Npm,
    },
    Spec {
        names: &["find"],
        options: &[],
        positionals: Positionals::Paths,
        special: Special::Find,
    },
    Spec {
        names: &["rg"],
        options: &[
            ("--pre", Value::Word, Some(RunsPrograms)),
            ("--pre-glob", Value::Word, Some(RunsPrograms)),
            ("-z --search-zip", Value::No, Some(RunsPrograms)),
            ("--hostname-bin", Value::Word, Some(RunsPrograms)),
            ("-L --follow", Value::No, Some(LeavesProject)),
            ("-e --regexp", Value::Word, None),
            ("-f --file --ignore-file", Value::Path, None),
            (
                "-g --glob --iglob -t --type -T --type-not --type-add",
                Value::Word,
                None,
            ),
            (
                "-m --max-count -A -B -C --context -j --threads -M --max-columns",
                Value::Word,
                None,
            ),
            (
                "-d --max-depth --sort --sortr -E --encoding -r --replace",
                Value::Word,
                None,
            ),
            (
                "--colors --color --path-separator --max-filesize",
                Value::Word,
                None,
            ),
        ],
        positionals: Positionals::PatternThenPaths,
        special: Special::None,
    },
    Spec {
        names: &["grep", "egrep", "fgrep"],
        options: &[
            ("-R --dereference-recursive", Value::No, Some(LeavesProject)),
            ("-e --regexp", Value::Word, None),
            ("-f --file --exclude-from", Value::Path, None),
            ("-m --max-count -A -B -C --context", Value::Word, None),
            (
                "--include --exclude --exclude-dir --label --color --colour",
                Value::Word,
                None,
            ),
            (
                "-d --directories -D --devices --binary-files",
                Value::Word,
                None,
            ),
        ],
        positionals: Positionals::PatternThenPaths,
        special: Special::None,
    },
    Spec {
        names: &["sed", "gsed"],
        options: &[
            ("-i --in-place", Value::No, Some(WritesFiles)),
            ("-f --file", Value::Path, Some(RunsPrograms)),
            ("-e --expression", Value::Word, None),
            ("-l --line-length", Value::Word, None),
        ],
        positionals: Positionals::PatternThenPaths,
        special: Special::Sed,
    },
    Spec {
        names: &["awk", "gawk", "mawk", "nawk"],
        options: &[
            ("-f --file", Value::Path, Some(RunsPrograms)),
            (
                "-i --include -l --load -E --exec",
                Value::Word,
                Some(RunsPrograms),
            ),
            ("-v --assign -F --field-separator", Value::Word, None),
        ],
        positionals: Positionals::PatternThenPaths,
        special: Special::Awk,
    },
    Spec {
        names: &["sort"],
        options: &[
            ("-o --output", Value::Path, Some(WritesFiles)),
            ("--compress-program", Value::Word, Some(RunsPrograms)),
            (
                "-T --temporary-directory --files0-from --random-source",
                Value::Path,
                None,
            ),
            (
                "-k --key -t --field-separator -S --buffer-size --parallel --batch-size",
                Value::Word,
                None,
            ),
        ],
        positionals: Positionals::Paths,
        special: Special::None,
    },
    Spec {
        names: &["uniq"],
        options: &[(
            "-f --skip-fields -s --skip-chars -w --check-chars",
            Value::Word,
            None,
        )],
        positionals: Positionals::Paths,
        special: Special::Uniq,
    },
    Spec {
        names: &["head", "tail"],
        options: &[
            ("-n --lines -c --bytes", Value::Word, None),
            ("--pid -s --sleep-interval", Value::Word, None),
        ],
        positionals: Positionals::Paths,
        special: Special::None,
    },
    Spec {
        names: &["wc"],
        options: &[("--files0-from", Value::Path, None)],
        positionals: Positionals::Paths,
        special: Special::None,
    },
    Spec {
        names: &["du"],
        options: &[
            ("--files0-from -X --exclude-from", Value::Path, None),
            (
                "--exclude -d --max-depth -B --block-size -t --threshold --time-style",
                Value::Word,
                None,
            ),
        ],
        positionals: Positionals::Paths,
        special: Special::None,
    },
    Spec {
        names: &["ls"],
        options: &[(
            "-I --ignore --hide -w --width -T --tabsize --format --time-style --sort --block-size --indicator-style --quoting-style --time",
            Value::Word,
            None,
        )],
        positionals: Positionals::Paths,
        special: Special::None,
    },
    Spec {
        names: &["stat"],
        options: &[("-c --format --printf", Value::Word, None)],
        positionals: Positionals::Paths,
        special: Special::None,
    },
    Spec {
        names: &["file"],
        options: &[
            ("-m --magic-file -f --files-from", Value::Path, None),
            (
                "-F --separator -e --exclude -P --parameter",
                Value::Word,
                None,
            ),
        ],
        positionals: Positionals::Paths,
        special: Special::None,
    },
    Spec {
        names: &["tree"],
        options: &[
            ("-o", Value::Path, Some(WritesFiles)),
            (
                "-I -P -L --filelimit --timefmt --charset -H",
                Value::Word,
                None,
            ),
        ],
        positionals: Positionals::Paths,
        special: Special::None,
    },
    Spec {
        names: &["diff"],
        options: &[
            ("--from-file --to-file -X --exclude-from", Value::Path, None),
            (
                "-x --exclude -I --ignore-matching-lines -U --unified -C --context --label -F",
                Value::Word,
                None,
            ),
        ],
        positionals: Positionals::Paths,
        special: Special::None,
    },
    Spec {
        names: &[
            "cat",
            "tac",
            "nl",
            "cmp",
            "realpath",
            "readlink",
            "md5sum",
            "sha256sum",
            "sha1sum",
        ],
        options: &[],
        positionals: Positionals::Paths,
        special: Special::None,
    },
    Spec {
        names: &[
            "echo", "printf", "pwd", "true", "false", "which", "type", "whoami", "uname",
            "basename", "dirname", "id", "hostname", "jobs", ":",
        ],
        options: TEXT,
        positionals: Positionals::Text,
        special: Special::None,
    },
    Spec {
        names: &["date"],
        options: &[
            ("-s --set", Value::Word, Some(ChangesConfig)),
            ("-f --file -r --reference", Value::Path, None),
            ("-d --date", Value::Word, None),
        ],
        positionals: Positionals::Text,
        special: Special::None,
    },
    Spec {
        names: &["make", "gmake"],
        options: &[
            ("-E --eval", Value::Word, Some(RunsPrograms)),
            ("-f --file --makefile -I --include-dir", Value::Path, None),
            ("-C --directory", Value::Chdir, None),
            (
                "-o --old-file --assume-old -W --what-if --new-file --assume-new",
                Value::Path,
                None,
            ),
            ("-l --load-average --jobserver-auth", Value::Word, None),
        ],
        positionals: Positionals::Paths,
        special: Special::Make,
    },
    Spec {
        names: &["python", "python3", "python2", "pypy", "pypy3"],
        options: &[
            ("-c", Value::Word, Some(RunsPrograms)),
            // `-m pip install`, `-m http.server`: any installed module, not the project's code.
            ("-m", Value::Word, Some(RunsPrograms)),
            ("-W -Q", Value::Word, None),
            // `-X pycache_prefix=DIR` writes bytecode files there.
            ("-X", Value::Word, None),
        ],
        positionals: Positionals::Paths,
        special: Special::Python,
    },
    Spec {
        names: &["node", "deno", "bun"],
        options: &[
            ("-e --eval -p --print", Value::Word, Some(RunsPrograms)),
            (
                "-r --require --import --loader --experimental-loader",
                Value::Path,
                None,
            ),
        ],
        positionals: Positionals::Paths,
        special: Special::Node,
    },
    Spec {
        names: &["pytest", "py.test"],
        options: &[
            ("-o --override-ini", Value::Word, Some(ChangesConfig)),
            ("-p", Value::Word, Some(RunsPrograms)),
            ("--pdbcls", Value::Word, Some(RunsPrograms)),
            (
                "-c --config-file --rootdir --basetemp --confcutdir --junitxml --junit-xml",
                Value::Path,
                None,
            ),
            ("-k -m -W --maxfail --tb", Value::Word, None),
        ],
        positionals: Positionals::Paths,
        special: Special::None,
    },
    Spec {
        names: &["go"],
        options: &[
            (
                "-exec -toolexec -vettool -ldflags -gcflags -asmflags -gccgoflags",
                Value::Word,
                Some(RunsPrograms),
            ),
            // What follows goes to the test binary, whose `-test.*` flags write profiles anywhere.
            ("-args", Value::No, Some(WritesFiles)),
            (
                "-o -modfile -overlay -pgo -coverprofile -cpuprofile -memprofile -blockprofile \
                 -mutexprofile -trace -outputdir -pkgdir",
                Value::Path,
                None,
            ),
            ("-C", Value::Chdir, None),
            ("-run -bench -count -timeout -tags -p", Value::Word, None),
        ],
        positionals: Positionals::Paths,
        special: Special::None,
    },
    Spec {
        names: &["tar"],
        options: &[
            (
                "-I --use-compress-program --to-command --checkpoint-action",
                Value::Word,
                Some(RunsPrograms),
            ),
            (
                "-F --info-script --new-volume-script --rsh-command",
                Value::Word,
                Some(RunsPrograms),
            ),
            (
                "-f --file -T --files-from -X --exclude-from",
                Value::Path,
                None,
            ),
            ("-C --directory", Value::Chdir, None),
            ("--exclude", Value::Word, None),
            // Extracting writes files the archive names (an archive made by earlier edits can
            // hold a symlink out and then a file through it); `-P` keeps absolute names.
            ("-x --extract --get", Value::No, Some(WritesFiles)),
            ("-P --absolute-names", Value::No, Some(LeavesProject)),
        ],
        positionals: Positionals::Paths,
        special: Special::Tar,
    },
    Spec {
        names: &["rsync"],
        options: &[("-e --rsh --rsync-path", Value::Word, Some(RunsPrograms))],
        positionals: Positionals::Paths,
        special: Special::None,
    },
    Spec {
        names: &["zip"],
        options: &[("-TT --unzip-command", Value::Word, Some(RunsPrograms))],
        positionals: Positionals::Paths,
        special: Special::None,
    },
];

/// The table entry for a command word (by its base name: the policy compares the word itself).
fn spec_of(command: &str) -> Option<&'static Spec> {
    let base = command.rsplit('/').next().unwrap_or(command);
    TABLE.iter().find(|s| s.names.contains(&base))
}

/// Reads one simple command's words (the command word first).
pub(crate) fn analyse(words: &[String]) -> Arguments {
    let mut out = Arguments::default();
    let Some(command) = words.first() else {
        return out;
    };
    let base = command.rsplit('/').next().unwrap_or(command);
    if WRAPPERS.contains(&base) {
        if words.len() > 1 {
            out.dangers.push(Danger {
                index: 1,
                names: base.to_owned(),
                word: words[1..].join(" "),
                effect: RunsPrograms,
            });
        }
        return out;
    }
    let Some(spec) = spec_of(command) else {
        ArgvReader::new(words, &[], Positionals::Paths).read(1, &mut out);
        return out;
    };
    match spec.special {
        Special::Git => git(words, &mut out),
        Special::Cargo => cargo(words, &mut out),
        Special::Npm => with_subcommand(words, spec.options, &mut out, |sub, index, out| {
            if let Some((_, effect)) = NPM_DANGEROUS_SUBCOMMANDS.iter().find(|(s, _)| *s == sub) {
                out.dangers.push(danger(index, sub, sub, *effect));
            }
        }),
        Special::Find => find(words, &mut out),
        _ => {
            let mut reader = ArgvReader::new(words, spec.options, spec.positionals);
            if spec.special == Special::Python || spec.special == Special::Node {
                // Options end at the script (or `-m module`): what follows is the script's.
                reader.stop_at_first_positional = true;
            }
            reader.read(1, &mut out);
            let positionals = reader.positionals.clone();
            if matches!(spec.special, Special::Python | Special::Node) {
                program_from_stdin(words, &positionals, &mut out);
            }
            match spec.special {
                Special::Tar => {
                    if let Some(bundle) = words.get(1).filter(|w| !w.starts_with('-')) {
                        for (letter, names, effect) in [
                            ('x', "-x --extract --get", WritesFiles),
                            ('P', "-P --absolute-names", LeavesProject),
                        ] {
                            if bundle.contains(letter) {
                                out.dangers.push(danger(1, names, bundle, effect));
                            }
                        }
                    }
                }
                Special::Sed => sed_scripts(&reader, &positionals, &mut out),
                Special::Awk => awk_program(&reader, &positionals, &mut out),
                Special::Make => {
                    for &index in &positionals {
                        let word = &words[index];
                        if let Some((name, _)) = word.split_once('=') {
                            // `make CC='sh -c ...'`: a variable override can run anything.
                            out.paths.retain(|p| p.index != index);
                            out.dangers.push(danger(
                                index,
                                &format!("{name}="),
                                word,
                                RunsPrograms,
                            ));
                        }
                    }
                }
                Special::Uniq => {
                    if let Some(&index) = positionals.get(1) {
                        out.dangers
                            .push(danger(index, "uniq OUTPUT", &words[index], WritesFiles));
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// `echo 'import os; ...' | python3`, `python3 -`, `node < x.js`: with no script (or `-`) an
/// interpreter runs what comes on standard input, which the policy cannot see. Asking for the
/// version or help runs nothing.
fn program_from_stdin(words: &[String], positionals: &[usize], out: &mut Arguments) {
    for (index, pair) in words.windows(2).enumerate() {
        let value = match pair[0].as_str() {
            "-X" => Some(pair[1].as_str()),
            word => word.strip_prefix("-X").filter(|v| !v.is_empty()),
        };
        if value.is_some_and(|v| v.starts_with("pycache_prefix")) {
            out.dangers
                .push(danger(index, "-X pycache_prefix", &pair[0], WritesFiles));
        }
    }
    let program_given = out.dangers.iter().any(|d| d.effect == RunsPrograms);
    let informational = words[1..]
        .iter()
        .any(|w| matches!(w.as_str(), "-V" | "-v" | "--version" | "-h" | "--help"));
    match positionals.first() {
        Some(&index) if words[index] == "-" => {
            out.dangers
                .push(danger(index, "- (standard input)", "-", RunsPrograms))
        }
        None if !program_given && !informational => out.dangers.push(danger(
            words.len(),
            "(no script: standard input)",
            &words[0],
            RunsPrograms,
        )),
        _ => {}
    }
}

fn danger(index: usize, names: &str, word: &str, effect: Effect) -> Danger {
    Danger {
        index,
        names: names.to_owned(),
        word: word.to_owned(),
        effect,
    }
}

/// Reads options and positionals from a start index, with a set of known options.
struct ArgvReader<'a> {
    words: &'a [String],
    options: Vec<&'a [Opt]>,
    positionals_kind: Positionals,
    /// Indexes of the positionals read.
    positionals: Vec<usize>,
    /// A pattern was given by an option (`-e`), so no positional is the pattern.
    pattern_given: bool,
    /// Values of pattern and script options (`-e SCRIPT`), for sed and awk.
    scripts: Vec<(usize, String)>,
    /// Directories given by `-C`-like options, which later relative paths are also read in.
    chdirs: Vec<String>,
    stop_at_first_positional: bool,
    /// Stop at the first positional and return its index (git and cargo's subcommand).
    subcommand_mode: bool,
    /// Stop at a `--` read where an option may be, and return its index.
    end_at_dashes: bool,
}

impl<'a> ArgvReader<'a> {
    fn new(words: &'a [String], options: &'a [Opt], positionals: Positionals) -> ArgvReader<'a> {
        ArgvReader {
            words,
            options: vec![options],
            positionals_kind: positionals,
            positionals: Vec::new(),
            pattern_given: false,
            scripts: Vec::new(),
            chdirs: Vec::new(),
            stop_at_first_positional: false,
            subcommand_mode: false,
            end_at_dashes: false,
        }
    }

    /// Reads from `start`; returns the index where it stopped (the subcommand, in subcommand
    /// mode), or the number of words.
    fn read(&mut self, start: usize, out: &mut Arguments) -> usize {
        let words = self.words;
        let mut i = start;
        let mut options_ended = false;
        while i < words.len() {
            let word = words[i].as_str();
            if options_ended || word == "-" || !word.starts_with('-') {
                if self.subcommand_mode && !options_ended {
                    return i;
                }
                self.positional(i, out);
                if self.stop_at_first_positional {
                    options_ended = true;
                }
                i += 1;
                continue;
            }
            if word == "--" {
                if self.end_at_dashes {
                    return i;
                }
                options_ended = true;
                i += 1;
                continue;
            }
            i = if let Some(long) = word.strip_prefix("--") {
                self.long_option(i, long, out)
            } else {
                self.short_options(i, &word[1..], out)
            };
        }
        words.len()
    }

    fn positional(&mut self, index: usize, out: &mut Arguments) {
        let first_unconsumed = self.positionals.is_empty();
        self.positionals.push(index);
        match self.positionals_kind {
            Positionals::Text => {}
            Positionals::PatternThenPaths if first_unconsumed && !self.pattern_given => {
                self.scripts.push((index, self.words[index].clone()));
            }
            _ => self.path(index, &self.words[index].clone(), out),
        }
    }

    fn path(&self, index: usize, path: &str, out: &mut Arguments) {
        out.paths.push(PathArg {
            index,
            path: path.to_owned(),
        });
        // After `-C dir`, a relative path is read in dir as well.
        if !path.starts_with(['/', '~']) {
            for dir in &self.chdirs {
                out.paths.push(PathArg {
                    index,
                    path: format!("{dir}/{path}"),
                });
            }
        }
    }

    fn value(&mut self, index: usize, option: &Opt, value: &str, out: &mut Arguments) {
        match option.1 {
            Value::No => {}
            Value::Word => {
                if is_pattern_option(option.0) {
                    self.pattern_given = true;
                    self.scripts.push((index, value.to_owned()));
                }
            }
            Value::Path => {
                let patterns = self.positionals_kind == Positionals::PatternThenPaths;
                if patterns && is_pattern_option(option.0) {
                    self.pattern_given = true;
                } else if value == "-" {
                    // `make -f -`, `sort --files0-from=-`, `tar -T -`: the program, or the names
                    // of the files, come from standard input, which the policy cannot see.
                    let effect = if option.0.contains("--makefile") {
                        RunsPrograms
                    } else {
                        LeavesProject
                    };
                    out.dangers
                        .push(danger(index, option.0, "- (standard input)", effect));
                }
                self.path(index, value, out)
            }
            Value::Chdir => {
                self.path(index, value, out);
                self.chdirs.push(value.to_owned());
            }
        }
    }

    fn long_option(&mut self, index: usize, long: &str, out: &mut Arguments) -> usize {
        let words = self.words;
        let (name, inline) = match long.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (long, None),
        };
        let candidates = self.long_candidates(name);
        let dangerous = candidates.iter().find(|o| o.2.is_some());
        if let Some(option) = dangerous {
            out.dangers
                .push(danger(index, option.0, &words[index], option.2.unwrap()));
        }
        // The value: inline, or the next word if the option takes one.
        let takes_value = candidates.iter().any(|o| o.1 != Value::No);
        let option = candidates
            .iter()
            .find(|o| o.1 != Value::No)
            .or(candidates.first())
            .copied();
        match (inline, option) {
            (Some(v), Some(o)) if o.1 != Value::No => {
                self.value(index, o, v, out);
                index + 1
            }
            // Unknown option or a flag given a value: the value may name a file.
            (Some(v), _) => {
                if self.positionals_kind != Positionals::Text {
                    self.path(index, v, out);
                }
                index + 1
            }
            (None, Some(o)) if takes_value && index + 1 < words.len() => {
                self.value(index + 1, o, &words[index + 1].clone(), out);
                index + 2
            }
            _ => index + 1,
        }
    }

    /// The known long options `--name` may stand for: the exact one, or all it abbreviates.
    fn long_candidates(&self, name: &str) -> Vec<&'a Opt> {
        let all = || {
            self.options
                .iter()
                .flat_map(|set| set.iter())
                .filter(move |o| o.0.split(' ').any(|n| n.starts_with("--")))
        };
        let exact: Vec<&Opt> = all()
            .filter(|o| o.0.split(' ').any(|n| n.strip_prefix("--") == Some(name)))
            .collect();
        if !exact.is_empty() || name.is_empty() {
            return exact;
        }
        all()
            .filter(|o| {
                o.0.split(' ')
                    .any(|n| n.strip_prefix("--").is_some_and(|n| n.starts_with(name)))
            })
            .collect()
    }

    fn short_options(&mut self, index: usize, letters: &str, out: &mut Arguments) -> usize {
        let words = self.words;
        // Options written with one dash and a long name (`-exec`, `-toolexec`): whole word.
        if let Some(option) = self
            .short_option(&format!("-{letters}"))
            .filter(|_| letters.len() > 1)
        {
            if let Some(effect) = option.2 {
                out.dangers
                    .push(danger(index, option.0, &words[index], effect));
            }
            if option.1 != Value::No && index + 1 < words.len() {
                self.value(index + 1, option, &words[index + 1].clone(), out);
                return index + 2;
            }
            return index + 1;
        }
        if let Some((name, value)) = letters.split_once('=')
            && let Some(option) = self.short_option(&format!("-{name}"))
        {
            if let Some(effect) = option.2 {
                out.dangers
                    .push(danger(index, option.0, &words[index], effect));
            }
            self.value(index, option, value, out);
            return index + 1;
        }
        for (at, letter) in letters.char_indices() {
            let Some(option) = self.short_option(&format!("-{letter}")) else {
                continue;
            };
            if let Some(effect) = option.2 {
                out.dangers
                    .push(danger(index, option.0, &words[index], effect));
            }
            if option.1 != Value::No {
                let rest = &letters[at + letter.len_utf8()..];
                if !rest.is_empty() {
                    self.value(index, option, rest, out);
                    return index + 1;
                }
                if index + 1 < words.len() {
                    self.value(index + 1, option, &words[index + 1].clone(), out);
                    return index + 2;
                }
                return index + 1;
            }
        }
        index + 1
    }

    fn short_option(&self, name: &str) -> Option<&'a Opt> {
        self.options
            .iter()
            .flat_map(|set| set.iter())
            .find(|o| o.0.split(' ').any(|n| n == name))
    }
}

fn is_pattern_option(names: &str) -> bool {
    names
        .split(' ')
        .any(|n| matches!(n, "-e" | "--regexp" | "-f" | "--file" | "--expression"))
}

/// Commands with a subcommand (cargo, npm): global options, the subcommand, its arguments.
fn with_subcommand(
    words: &[String],
    options: &'static [Opt],
    out: &mut Arguments,
    check: impl Fn(&str, usize, &mut Arguments),
) {
    let mut reader = ArgvReader::new(words, options, Positionals::Paths);
    reader.subcommand_mode = true;
    let at = reader.read(1, out);
    if at >= words.len() {
        return;
    }
    out.subcommand = Some(at);
    check(&words[at], at, out);
    reader.subcommand_mode = false;
    reader.read(at + 1, out);
}

/// cargo: its own options, the subcommand, the subcommand's options, and what follows `--`, by
/// where cargo passes it: the compiler's flags ([`compiler_flags`]: only lint levels), the test
/// binaries' options ([`LIBTEST`]: `--logfile` writes), or anything else (`cargo run -- ARGS`,
/// the project's own program; an external subcommand), read as paths. `cargo fmt` without
/// `--check` and `cargo fix` rewrite the project's sources, like `--fix`.
fn cargo(words: &[String], out: &mut Arguments) {
    let mut reader = ArgvReader::new(words, CARGO, Positionals::Paths);
    reader.subcommand_mode = true;
    // rustup's `cargo +TOOLCHAIN ...` (first word only) runs another toolchain's cargo: one
    // installed (or that rustup may fetch) by name, or, by path, any program at all. Granted
    // by naming it (`["cargo", "+nightly", "clippy"]`); the subcommand is read after it.
    let mut start = 1;
    if let Some(toolchain) = words.get(1).filter(|w| w.starts_with('+')) {
        let effect = if toolchain.contains(['/', '\\']) || toolchain[1..].starts_with(['.', '~']) {
            RunsPrograms
        } else {
            ChangesConfig
        };
        out.dangers.push(danger(1, "+TOOLCHAIN", toolchain, effect));
        start = 2;
    }
    let at = reader.read(start, out);
    let Some(sub) = words.get(at) else {
        return;
    };
    out.subcommand = Some(at);
    let sub = sub.as_str();
    let rest = &words[at + 1..];
    if CARGO_DANGEROUS_SUBCOMMANDS.contains(&sub) {
        out.dangers.push(danger(at, sub, sub, LeavesProject));
    }
    match sub {
        "fix" => out.dangers.push(danger(at, "fix", sub, WritesFiles)),
        "fmt" if !rest.iter().any(|w| w == "--check") => {
            out.dangers.push(danger(at, "fmt", sub, WritesFiles));
        }
        _ => {}
    }
    reader.subcommand_mode = false;
    let compiler = CARGO_COMPILER_ARGS.contains(&sub);
    if !compiler && !CARGO_TEST_ARGS.contains(&sub) {
        reader.read(at + 1, out);
        return;
    }
    reader.end_at_dashes = true;
    reader.read(at + 1, out);
    // After the first `--`, however cargo's own options read it (a `--` taken as an option's
    // value included: then both readings count).
    let Some(dashes) = rest.iter().position(|w| w == "--").map(|d| at + 1 + d) else {
        return;
    };
    if compiler {
        compiler_flags(words, dashes + 1, &reader.chdirs, out);
    } else {
        let mut tests = ArgvReader::new(words, LIBTEST, Positionals::Paths);
        tests.chdirs = reader.chdirs.clone();
        tests.read(dashes + 1, out);
    }
}

/// The arguments cargo passes to the compiler (`cargo clippy -- ARGS`, `cargo rustc -- ARGS`):
/// a lint level with a lint name is harmless; any other flag (`-C linker=...`, `@argfile`,
/// `--emit`, `--out-dir`, `--extern`, `-L`, `-Z`, ...) or word is dangerous, and the values it
/// names are paths (for a rule that grants it).
fn compiler_flags(words: &[String], start: usize, chdirs: &[String], out: &mut Arguments) {
    let is_lint = |name: &str| {
        name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ':'))
    };
    let mut i = start;
    while i < words.len() {
        let word = words[i].as_str();
        if LINT_LEVEL_FLAGS.contains(&word) {
            if let Some(lint) = words.get(i + 1).filter(|lint| !is_lint(lint)) {
                compiler_flag(i + 1, lint, chdirs, out);
            }
            i += 2;
            continue;
        }
        let attached = LINT_LEVEL_FLAGS
            .iter()
            .find_map(|flag| match flag.strip_prefix("--") {
                Some(_) => word.strip_prefix(flag)?.strip_prefix('='),
                None => word.strip_prefix(flag).filter(|lint| !lint.is_empty()),
            });
        if attached.is_some_and(is_lint) {
            i += 1;
            continue;
        }
        compiler_flag(i, word, chdirs, out);
        let separate = COMPILER_VALUE_FLAGS.contains(&word);
        match words.get(i + 1) {
            Some(value) if separate => {
                compiler_value_paths(i + 1, value, chdirs, out);
                i += 2;
            }
            _ => i += 1,
        }
    }
}

/// One compiler argument other than a lint level: its danger, and the paths it may name.
fn compiler_flag(index: usize, word: &str, chdirs: &[String], out: &mut Arguments) {
    let name = word.split_once('=').map_or(word, |(name, _)| name);
    let short = |flag: &str| word.starts_with(flag) && !word.starts_with("--");
    let (names, effect) = if word.starts_with('@') {
        ("@FILE", RunsPrograms)
    } else if short("-C") || name == "--codegen" {
        ("-C --codegen", RunsPrograms)
    } else if short("-Z") {
        ("-Z", ChangesConfig)
    } else if short("-o") {
        ("-o", WritesFiles)
    } else if matches!(name, "--emit" | "--out-dir") {
        ("--emit --out-dir", WritesFiles)
    } else if short("-L") || short("-l") || matches!(name, "--extern" | "--sysroot") {
        ("-L -l --extern --sysroot", LeavesProject)
    } else {
        (name, CompilerFlag)
    };
    out.dangers.push(danger(index, names, word, effect));
    compiler_value_paths(index, word, chdirs, out);
}

/// The paths a compiler argument may name: its value (after a short flag's letter, a long
/// flag's `=`, an `@`), and each part of it between `=` and `,` (`link-arg=-fuse-ld=/tmp/ld`
/// names `/tmp/ld`).
fn compiler_value_paths(index: usize, word: &str, chdirs: &[String], out: &mut Arguments) {
    let value = if let Some(file) = word.strip_prefix('@') {
        file
    } else if word.starts_with("--") {
        word.split_once('=').map_or("", |(_, value)| value)
    } else if word.starts_with('-') {
        word.get(2..).unwrap_or_default()
    } else {
        word
    };
    let mut push = |path: &str| {
        if path.is_empty() {
            return;
        }
        out.paths.push(PathArg {
            index,
            path: path.to_owned(),
        });
        if !path.starts_with(['/', '~']) {
            for dir in chdirs {
                out.paths.push(PathArg {
                    index,
                    path: format!("{dir}/{path}"),
                });
            }
        }
    };
    push(value);
    if value.contains(['=', ',']) {
        value.split(['=', ',']).for_each(&mut push);
    }
}

fn git(words: &[String], out: &mut Arguments) {
    let mut reader = ArgvReader::new(words, GIT_GLOBAL, Positionals::Paths);
    reader.subcommand_mode = true;
    let at = reader.read(1, out);
    let Some(sub) = words.get(at) else {
        return;
    };
    out.subcommand = Some(at);
    let sub = sub.as_str();
    if let Some((_, effect)) = GIT_DANGEROUS_SUBCOMMANDS.iter().find(|(s, _)| *s == sub) {
        out.dangers.push(danger(at, sub, sub, *effect));
    }
    let rest = &words[at + 1..];
    match sub {
        "config" if !rest.iter().any(|w| GIT_CONFIG_READS.contains(&w.as_str())) => {
            out.dangers.push(danger(at, "config", sub, ChangesConfig));
        }
        "submodule" if rest.iter().any(|w| w == "foreach") => {
            out.dangers
                .push(danger(at, "submodule foreach", sub, RunsPrograms));
        }
        "bisect" if rest.iter().any(|w| w == "run") => {
            out.dangers
                .push(danger(at, "bisect run", sub, RunsPrograms));
        }
        _ => {}
    }
    reader.subcommand_mode = false;
    reader.options = vec![GIT_ANY];
    if let Some((_, options)) = GIT_SUBCOMMANDS
        .iter()
        .find(|(names, _)| names.contains(&sub))
    {
        reader.options.push(options);
    }
    if sub == "grep" {
        reader.positionals_kind = Positionals::PatternThenPaths;
    }
    reader.read(at + 1, out);
}

/// find: starting points are paths; the expression's actions may run, write or delete.
fn find(words: &[String], out: &mut Arguments) {
    const RUNS: &[&str] = &["-exec", "-execdir", "-ok", "-okdir"];
    const WRITES: &[&str] = &["-fprint", "-fprint0", "-fprintf", "-fls"];
    const PATH_VALUED: &[&str] = &["-newer", "-anewer", "-cnewer", "-samefile", "-files0-from"];
    let mut i = 1;
    // Options before the starting points.
    while let Some(word) = words.get(i) {
        match word.as_str() {
            "-H" | "-P" => i += 1,
            "-L" | "-follow" => {
                out.dangers
                    .push(danger(i, "-L -follow", word, LeavesProject));
                i += 1;
            }
            "-D" => i += 2,
            w if w.starts_with("-O") => i += 1,
            _ => break,
        }
    }
    while let Some(word) = words.get(i) {
        if word.starts_with('-') || word == "(" || word == "!" || word == ")" {
            break;
        }
        out.paths.push(PathArg {
            index: i,
            path: word.clone(),
        });
        i += 1;
    }
    while let Some(word) = words.get(i) {
        let w = word.as_str();
        if RUNS.contains(&w) {
            out.dangers.push(danger(i, w, w, RunsPrograms));
        } else if w == "-delete" {
            out.dangers.push(danger(i, w, w, WritesFiles));
        } else if w == "-follow" {
            out.dangers.push(danger(i, "-L -follow", w, LeavesProject));
        } else if WRITES.contains(&w) {
            out.dangers.push(danger(i, w, w, WritesFiles));
            if let Some(file) = words.get(i + 1) {
                out.paths.push(PathArg {
                    index: i + 1,
                    path: file.clone(),
                });
            }
        } else if PATH_VALUED.contains(&w)
            && let Some(file) = words.get(i + 1)
        {
            out.paths.push(PathArg {
                index: i + 1,
                path: file.clone(),
            });
        }
        i += 1;
    }
}

/// sed: only printing and substitution without the `e` and `w` flags; anything else (`w`,
/// `e`, `r`, `R`, `W` commands, unknown syntax) may write files or run programs.
fn sed_scripts(reader: &ArgvReader, positionals: &[usize], out: &mut Arguments) {
    for (index, script) in &reader.scripts {
        if !sed_script_is_safe(script) {
            out.dangers
                .push(danger(*index, "sed SCRIPT", script, RunsPrograms));
        }
    }
    let _ = positionals;
}

fn sed_script_is_safe(script: &str) -> bool {
    let chars: Vec<char> = script.chars().collect();
    let mut i = 0;
    let skip_blank = |i: &mut usize| {
        while *i < chars.len() && (chars[*i] == ' ' || chars[*i] == '\t') {
            *i += 1;
        }
    };
    loop {
        skip_blank(&mut i);
        // Address: N, $, /REGEX/ (with I or M), or two of them joined by a comma. GNU sed
        // ends a regex at the first unescaped `/`, brackets or not; so does this reader.
        let address = |i: &mut usize| -> bool {
            let start = *i;
            while *i < chars.len() && chars[*i].is_ascii_digit() {
                *i += 1;
            }
            if *i == start && chars.get(*i) == Some(&'$') {
                *i += 1;
            }
            if *i == start && chars.get(*i) == Some(&'/') {
                *i += 1;
                loop {
                    match chars.get(*i) {
                        None | Some('\n') => return false,
                        Some('\\') => *i += 2,
                        Some('/') => {
                            *i += 1;
                            break;
                        }
                        _ => *i += 1,
                    }
                }
                while matches!(chars.get(*i), Some('I' | 'M')) {
                    *i += 1;
                }
            }
            true
        };
        if !address(&mut i) {
            return false;
        }
        if chars.get(i) == Some(&',') {
            i += 1;
            if !address(&mut i) {
                return false;
            }
        }
        skip_blank(&mut i);
        match chars.get(i) {
            Some('p' | 'd' | '=' | 'q') => i += 1,
            Some('s') | Some('y') => {
                let command = chars[i];
                i += 1;
                let Some(&delimiter) = chars.get(i) else {
                    return false;
                };
                if delimiter == '\\' || delimiter == '\n' || delimiter.is_alphanumeric() {
                    return false;
                }
                i += 1;
                for _ in 0..2 {
                    loop {
                        match chars.get(i) {
                            None | Some('\n') => return false,
                            Some('\\') => i += 2,
                            Some(&c) if c == delimiter => {
                                i += 1;
                                break;
                            }
                            _ => i += 1,
                        }
                    }
                }
                if command == 's' {
                    while let Some(c) = chars.get(i) {
                        if matches!(c, 'g' | 'I' | 'i' | 'p' | 'm' | 'M') || c.is_ascii_digit() {
                            i += 1;
                        } else {
                            break;
                        }
                    }
                }
            }
            _ => return false,
        }
        skip_blank(&mut i);
        match chars.get(i) {
            None => return true,
            Some(';' | '\n') => i += 1,
            _ => return false,
        }
    }
}

/// awk: a program that can run commands (`system`, pipes) or write files (`>`) is dangerous.
fn awk_program(reader: &ArgvReader, _positionals: &[usize], out: &mut Arguments) {
    for (index, program) in &reader.scripts {
        if [
            "system", "|", ">", "getline", "ENVIRON", "PROCINFO", "@load", "@include",
        ]
        .iter()
        .any(|p| program.contains(p))
        {
            out.dangers
                .push(danger(*index, "awk PROGRAM", program, RunsPrograms));
        }
    }
}

/// The subcommands a suggested rule may name (`policy suggest`): those that only read, build or
/// test the project. Another (`git push`, `git reset`, `npm publish`) is never suggested, however
/// often the user allowed it: a rule for it is theirs to write.
const SUGGESTIBLE_SUBCOMMANDS: &[(&str, &[&str])] = &[
    (
        "git",
        &[
            "status",
            "log",
            "diff",
            "show",
            "blame",
            "ls-files",
            "rev-parse",
            "describe",
            "shortlog",
            "grep",
        ],
    ),
    (
        "cargo",
        &[
            "test", "build", "check", "clippy", "bench", "tree", "metadata", "nextest",
        ],
    ),
    ("npm", &["test", "ls"]),
    ("pnpm", &["test", "ls"]),
    ("yarn", &["test"]),
];

/// The prefix a suggested allow rule names for one simple command the user allowed (`policy
/// suggest`): the command word, and the subcommand of git, cargo and npm (one that only reads,
/// builds or tests). Else why no rule can name it: a command the table does not know, a
/// wrapper, a program given by its path, an interpreter, make, pytest or go.
pub(crate) fn suggestion_prefix(
    words: &[String],
    arguments: &Arguments,
) -> Result<Vec<String>, String> {
    let command = words.first().ok_or("an empty command")?;
    if command.contains('/') {
        return Err(format!("`{command}`: a program given by its path"));
    }
    let spec = spec_of(command)
        .ok_or_else(|| format!("`{command}` is not a command the command table knows"))?;
    // Interpreters and make run the project's own code (a script, a target, whatever it now
    // says), and go's single-dash options are not all in the table: their rules are the user's
    // to write.
    if matches!(
        spec.special,
        Special::Python | Special::Node | Special::Make
    ) || spec.names.contains(&"pytest")
        || command == "go"
    {
        return Err(format!(
            "`{command}` runs the project's code or options the table does not all know: write its rule yourself"
        ));
    }
    let mut prefix = vec![command.clone()];
    if let Some((_, allowed)) = SUGGESTIBLE_SUBCOMMANDS.iter().find(|(c, _)| c == command) {
        let sub = arguments
            .subcommand
            .and_then(|i| words.get(i))
            .cloned()
            .ok_or_else(|| format!("`{command}` without a subcommand"))?;
        if !allowed.contains(&sub.as_str()) {
            return Err(format!(
                "`{command} {sub}`: only {command}'s {} are suggested",
                allowed.join(", ")
            ));
        }
        prefix.push(sub);
    } else if matches!(spec.special, Special::Git | Special::Cargo | Special::Npm) {
        return Err(format!("`{command}`: none of its subcommands is suggested"));
    }
    Ok(prefix)
}

/// Every command the table knows, for the documentation test.
pub fn known_commands() -> Vec<&'static str> {
    TABLE
        .iter()
        .flat_map(|s| s.names.iter().copied())
        .chain(WRAPPERS.iter().copied())
        .collect()
}

/// A dangerous option as the table lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableOption {
    /// Its names, space-separated (`-o --output`).
    pub names: &'static str,
    pub effect: Effect,
    /// Written before the subcommand (git's own options), not after it.
    pub before_subcommand: bool,
}

/// Every dangerous option of a command, as the table lists it (for the property test).
pub fn dangerous_options(command: &str) -> Vec<TableOption> {
    let Some(spec) = spec_of(command) else {
        return Vec::new();
    };
    let is_git = spec.special == Special::Git;
    let mut sets: Vec<(&[Opt], bool)> = vec![(spec.options, is_git)];
    if is_git {
        sets.push((GIT_ANY, false));
    }
    sets.iter()
        .flat_map(|(set, before)| set.iter().map(move |o| (o, *before)))
        .filter_map(|(o, before_subcommand)| {
            o.2.map(|effect| TableOption {
                names: o.0,
                effect,
                before_subcommand,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split(' ').map(str::to_owned).collect()
    }

    fn dangers(line: &str) -> Vec<String> {
        analyse(&words(line))
            .dangers
            .into_iter()
            .map(|d| d.names)
            .collect()
    }

    fn paths(line: &str) -> Vec<String> {
        analyse(&words(line))
            .paths
            .into_iter()
            .map(|p| p.path)
            .collect()
    }

    #[test]
    fn git_options_that_write_run_or_leave() {
        assert_eq!(dangers("git log --output=/tmp/x"), ["--output"]);
        assert_eq!(dangers("git log --out=/tmp/x"), ["--output"]);
        assert_eq!(dangers("git diff --no-index a b"), ["--no-index"]);
        assert_eq!(dangers("git diff --no-i a b"), ["--no-index"]);
        assert_eq!(dangers("git -c core.fsmonitor=x status"), ["-c"]);
        assert_eq!(dangers("git -ccore.pager=x log"), ["-c"]);
        assert_eq!(dangers("git grep -O foo"), ["-O"]);
        assert_eq!(dangers("git grep -Ovim foo"), ["-O"]);
        assert_eq!(dangers("git config core.pager x"), ["config"]);
        assert!(dangers("git config --get user.name").is_empty());
        assert_eq!(dangers("git branch -D main"), ["-d -D --delete"]);
        assert!(dangers("git log -p -3 --stat").is_empty());
        assert!(dangers("git diff --no-ext-diff").is_empty());
        assert!(dangers("git status --short").is_empty());
        assert_eq!(paths("git log --output=/tmp/x"), ["/tmp/x"]);
        assert_eq!(paths("git -C sub log a"), ["sub", "a", "sub/a"]);
        assert_eq!(paths("git grep needle src"), ["src"]);
        assert_eq!(paths("git log -n 5 -- src"), ["src"]);
    }

    #[test]
    fn cargo_find_sed_and_friends() {
        assert_eq!(dangers("cargo test --config build.rustc=x"), ["--config"]);
        assert_eq!(dangers("cargo -Zunstable-options test"), ["-Z"]);
        assert_eq!(dangers("cargo install ripgrep"), ["install"]);
        assert!(dangers("cargo test -p foo -- --nocapture").is_empty());
        assert_eq!(
            paths("cargo test --manifest-path /x/Cargo.toml"),
            ["/x/Cargo.toml"]
        );
        assert_eq!(paths("cargo test -p foo"), Vec::<String>::new());
        assert_eq!(dangers("find . -name x -exec rm {} ;"), ["-exec"]);
        assert_eq!(dangers("find . -delete"), ["-delete"]);
        assert_eq!(dangers("find -L ."), ["-L -follow"]);
        assert_eq!(paths("find src /etc -name *.rs"), ["src", "/etc"]);
        assert_eq!(dangers("sed -i s/a/b/ f"), ["-i --in-place"]);
        assert_eq!(dangers("sed -ni 1p f"), ["-i --in-place"]);
        assert!(dangers("sed -n 1,20p src/main.rs").is_empty());
        assert!(dangers("sed s/a/b/g;s|c|d|2 f").is_empty());
        assert_eq!(dangers("sed s/a/b/e f"), ["sed SCRIPT"]);
        assert_eq!(dangers("sed s/a/b/w/tmp/x f"), ["sed SCRIPT"]);
        assert_eq!(dangers("sed 1e f"), ["sed SCRIPT"]);
        assert_eq!(dangers("sed -e 1p -e w/tmp/x f"), ["sed SCRIPT"]);
        assert!(dangers("sed -n /fn/p f").is_empty());
        assert!(dangers(r"sed /a\/b/,$d f").is_empty());
        assert_eq!(dangers("sed /x/w/tmp/y f"), ["sed SCRIPT"]);
        assert_eq!(dangers("sed /x/e f"), ["sed SCRIPT"]);
        assert_eq!(dangers("sed /unterminated f"), ["sed SCRIPT"]);
        assert_eq!(dangers("python3 -m pip install x"), ["-m"]);
        assert_eq!(dangers("python3"), ["(no script: standard input)"]);
        assert_eq!(dangers("python3 -"), ["- (standard input)"]);
        assert_eq!(dangers("python3 -u -"), ["- (standard input)"]);
        assert!(dangers("python3 --version").is_empty());
        assert!(dangers("python3 hello.py").is_empty());
        assert_eq!(dangers("node"), ["(no script: standard input)"]);
        assert_eq!(
            dangers("make -f -"),
            ["-f --file --makefile -I --include-dir"]
        );
        assert_eq!(
            dangers("make -f-"),
            ["-f --file --makefile -I --include-dir"]
        );
        assert_eq!(
            dangers("sort --files0-from=-"),
            ["-T --temporary-directory --files0-from --random-source"]
        );
        assert!(dangers("grep -f - src").is_empty());
        assert_eq!(dangers("tar -xf a.tar"), ["-x --extract --get"]);
        assert_eq!(
            dangers("tar xPf a.tar"),
            ["-x --extract --get", "-P --absolute-names"]
        );
        assert!(dangers("tar -tf a.tar").is_empty() && dangers("tar tf a.tar").is_empty());
        assert_eq!(
            dangers("python3 -X pycache_prefix=/tmp/x a.py"),
            ["-X pycache_prefix"]
        );
        assert!(dangers("python3 -X dev a.py").is_empty());
        assert_eq!(
            analyse(&words("git --no-pager -c a=b log")).subcommand,
            Some(4)
        );
        assert_eq!(analyse(&words("cargo -q test")).subcommand, Some(2));
        assert_eq!(paths("sed -n 1p src/main.rs"), ["src/main.rs"]);
        assert_eq!(dangers("sort -o out in"), ["-o --output"]);
        assert_eq!(dangers("sort --out=out in"), ["-o --output"]);
        assert_eq!(dangers("uniq in out"), ["uniq OUTPUT"]);
        assert_eq!(dangers("make CC=x all"), ["CC="]);
        assert_eq!(dangers("python -c x"), ["-c"]);
        assert!(dangers("python script.py -c x").is_empty());
        assert_eq!(dangers("rg --pre cat x"), ["--pre"]);
        assert_eq!(paths("rg TODO src"), ["src"]);
        assert_eq!(paths("rg -e TODO src"), ["src"]);
        assert_eq!(paths("grep -rn /etc/passwd src"), ["src"]);
        assert_eq!(dangers("xargs rm"), ["xargs"]);
        assert_eq!(dangers("npm exec evil"), ["exec"]);
        assert_eq!(dangers("npm --global i evil"), ["-g --global"]);
        assert_eq!(paths("cat /etc/passwd a"), ["/etc/passwd", "a"]);
        assert_eq!(paths("unknown --out=/x -o /y"), ["/x", "/y"]);
        assert!(paths("echo /etc/passwd").is_empty());
        assert_eq!(paths("head -n 20 README.md"), ["README.md"]);
        assert_eq!(paths("head -20 README.md"), ["README.md"]);
    }

    /// After `cargo clippy --` (and `rustc`, `build`, `check`...) only lint levels are harmless;
    /// after `cargo test --` libtest's `--logfile` writes; `cargo run -- ARGS` are paths.
    #[test]
    fn cargo_arguments_after_dashes_are_read_by_who_gets_them() {
        for line in [
            "cargo clippy -- -D warnings",
            "cargo clippy --all-targets -- -D warnings -W clippy::pedantic -Aclippy::x",
            "cargo clippy -- --deny=warnings --allow dead_code --cap-lints warn -Funsafe_code",
            "cargo clippy -- --force-warn clippy::all --forbid=unused-variables",
            "cargo rustc -- -D warnings",
            "cargo test -- --nocapture --test-threads 1 --skip slow foo::bar",
            "cargo test -p foo -- --exact --format=json -Z unstable-options",
            "cargo bench -- --bench",
            "cargo run -- --help",
            "cargo fmt -- --check",
            "cargo fmt --check",
        ] {
            assert!(dangers(line).is_empty(), "{line}: {:?}", dangers(line));
        }
        for (line, names) in [
            ("cargo clippy -- -C linker=/tmp/x", "-C --codegen"),
            ("cargo clippy -- -Clinker=/tmp/x", "-C --codegen"),
            ("cargo clippy -- --codegen=linker=/tmp/x", "-C --codegen"),
            ("cargo clippy -- -C incremental=/tmp/x", "-C --codegen"),
            (
                "cargo clippy -- -C link-arg=-fuse-ld=/tmp/ld",
                "-C --codegen",
            ),
            ("cargo clippy -- @/tmp/args", "@FILE"),
            ("cargo clippy -- @args", "@FILE"),
            ("cargo clippy -- --emit=metadata=/tmp/x", "--emit --out-dir"),
            ("cargo clippy -- --out-dir=/tmp", "--emit --out-dir"),
            ("cargo clippy -- -o x", "-o"),
            (
                "cargo clippy -- --extern foo=/tmp/libfoo.rlib",
                "-L -l --extern --sysroot",
            ),
            ("cargo clippy -- -L/tmp", "-L -l --extern --sysroot"),
            ("cargo clippy -- -Z unstable-options", "-Z"),
            ("cargo clippy -- -Zunstable-options", "-Z"),
            ("cargo clippy -- --test", "--test"),
            ("cargo clippy -- --fix", "--fix"),
            ("cargo clippy -- -D warnings --cfg x", "--cfg"),
            ("cargo clippy -- -W -C linker=/tmp/x", "-C"),
            ("cargo clippy -- -D /etc/passwd", "/etc/passwd"),
            ("cargo rustc -- -C linker=/tmp/x", "-C --codegen"),
            ("cargo rustdoc -- -C linker=/tmp/x", "-C --codegen"),
            ("cargo build -- -C linker=/tmp/x", "-C --codegen"),
            ("cargo check -- -C linker=/tmp/x", "-C --codegen"),
            ("cargo c -- -C linker=/tmp/x", "-C --codegen"),
            // A `--` that cargo's reading takes as `-p`'s value: the arguments after it count.
            ("cargo clippy -p -- -C linker=/tmp/x", "-C --codegen"),
            ("cargo test -- --logfile /tmp/x", "--logfile"),
            ("cargo test -- --logfile=target/x", "--logfile"),
            ("cargo t -- --logf=x", "--logfile"),
            ("cargo bench -- --logfile x", "--logfile"),
            ("cargo clippy --fix", "--fix"),
            ("cargo clippy --fix --allow-dirty", "--fix"),
            ("cargo fix", "fix"),
            ("cargo fmt", "fmt"),
            ("cargo fmt --all", "fmt"),
            ("cargo +nightly clippy -- -C linker=/tmp/x", "-C --codegen"),
            ("cargo +nightly install x", "install"),
            ("cargo +/tmp/toolchain build", "+TOOLCHAIN"),
            ("cargo +./tc build", "+TOOLCHAIN"),
        ] {
            let found = dangers(line);
            assert!(
                found.iter().any(|n| n == names || n.starts_with(names)),
                "{line}: {found:?}"
            );
        }
        let paths_of = |line: &str| paths(line);
        assert!(paths_of("cargo clippy -- -C linker=/tmp/x").contains(&"/tmp/x".to_owned()));
        assert!(
            paths_of("cargo clippy -- -C link-arg=-fuse-ld=/tmp/ld")
                .contains(&"/tmp/ld".to_owned())
        );
        assert!(paths_of("cargo clippy -- @/tmp/args").contains(&"/tmp/args".to_owned()));
        assert!(paths_of("cargo clippy -- --emit=metadata=/tmp/x").contains(&"/tmp/x".to_owned()));
        assert!(paths_of("cargo clippy -- -L/tmp").contains(&"/tmp".to_owned()));
        assert!(paths_of("cargo clippy -- -C link-args=a,/tmp/b").contains(&"/tmp/b".to_owned()));
        assert_eq!(paths_of("cargo test -- --logfile /tmp/x"), ["/tmp/x"]);
        assert_eq!(paths_of("cargo run -- /etc/passwd"), ["/etc/passwd"]);
        assert_eq!(paths_of("cargo -C sub test -- x"), ["sub", "x", "sub/x"]);
        assert_eq!(
            dangers("cargo +nightly clippy -- -D warnings"),
            ["+TOOLCHAIN"]
        );
        assert_eq!(analyse(&words("cargo +nightly clippy")).subcommand, Some(2));
        // Lint names are not paths.
        assert!(paths_of("cargo clippy -- -D warnings").is_empty());
    }
}
