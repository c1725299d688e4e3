//! The command table's claims, checked against the real programs. The policy engine refuses to
//! allow some commands even when a policy allows the command by name (`git log --output=…`,
//! `find -exec`, `sort -o`, `sed 'w …'`, `uniq IN OUT`, `make --eval`, `python3 -c`…), because
//! the table in `src/policy/commands.rs` says those options write files, run programs, change
//! configuration or leave the project. Each case here is decided under the permissive corpus
//! policy (`tests/fixtures/policy/permissive.toml`, which allows git, find, sort, sed, uniq, make
//! and python3 by name) and then really run with `bash -c` in a scratch project that is a real
//! git repository, with `HOME` set to the scratch home: a refused command must really have the
//! effect the table claims (a file written or changed outside the project or inside it, a file
//! deleted, a marker file created by a program it ran), so the refusal is not for nothing; an
//! allowed control must really leave everything outside the project (and the project's files
//! outside `.git`) untouched, so allowing it is safe. A missing program fails the test: CI
//! installs git, findutils, coreutils, sed, make, python3, awk, tar and util-linux (`script`, for
//! the one case that needs a terminal).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use acptap::policy::{Decision, Verdict};
use serde_json::json;

use crate::policy_corpus_files::Scratch;

/// What really running a command must do. Paths are written with the corpus placeholders
/// (`${home}`, `${outside}`, `${project}`).
#[derive(Debug, Clone, Copy)]
enum Effect {
    /// The file must not exist before and must exist after.
    Creates(&'static str),
    /// The file exists before and its content must differ after.
    Changes(&'static str),
    /// The file is created before the run and must be gone after.
    Deletes(&'static str),
    /// A control: nothing in the scratch home changes, except inside the project's `.git`.
    Nothing,
}

struct Case {
    command: &'static str,
    /// Whether the permissive policy must allow it: the controls. Every other case must get
    /// anything but allow.
    allowed: bool,
    effect: Effect,
    /// Run on a terminal (under util-linux's `script`): git starts a pager only there.
    terminal: bool,
}

const fn refused(command: &'static str, effect: Effect) -> Case {
    Case {
        command,
        allowed: false,
        effect,
        terminal: false,
    }
}

const fn refused_on_terminal(command: &'static str, effect: Effect) -> Case {
    Case {
        command,
        allowed: false,
        effect,
        terminal: true,
    }
}

const fn control(command: &'static str) -> Case {
    Case {
        command,
        allowed: true,
        effect: Effect::Nothing,
        terminal: false,
    }
}

use Effect::{Changes, Creates, Deletes};

const GIT: &[Case] = &[
    // The built-in guard refuses it too (the path is a startup file); the table refuses
    // `--output` whatever the path, as the next case shows.
    refused(
        "git log --output=${home}/.gitconfig -1",
        Changes("${home}/.gitconfig"),
    ),
    refused("git log --output=log.txt -1", Creates("${project}/log.txt")),
    refused(
        "git log -1 --output ${outside}/log.txt",
        Creates("${outside}/log.txt"),
    ),
    refused(
        "git diff --output=${outside}/diff.txt HEAD",
        Creates("${outside}/diff.txt"),
    ),
    refused(
        "git show --output=${outside}/show.txt",
        Creates("${outside}/show.txt"),
    ),
    refused_on_terminal(
        "git -p -c core.pager='touch ${outside}/pager' log",
        Creates("${outside}/pager"),
    ),
    refused(
        "git -c core.fsmonitor='touch ${outside}/fsmonitor' status",
        Creates("${outside}/fsmonitor"),
    ),
    refused(
        "git -c alias.x='!touch ${outside}/alias' x",
        Creates("${outside}/alias"),
    ),
    refused(
        "git -c diff.external='touch ${outside}/external' diff HEAD",
        Creates("${outside}/external"),
    ),
    refused(
        "git grep -O'touch ${outside}/grep' project",
        Creates("${outside}/grep"),
    ),
    control("git status"),
    control("git log -1 --stat"),
    control("git log --format=%H -1"),
    control("git --no-pager log -1"),
    control("git diff HEAD"),
    control("git show HEAD"),
    control("git grep project"),
];

const FIND: &[Case] = &[
    refused(
        r"find . -maxdepth 1 -name README.md -exec touch ${outside}/found \;",
        Creates("${outside}/found"),
    ),
    refused(
        r"find . -maxdepth 1 -name README.md -execdir touch ${outside}/execdir \;",
        Creates("${outside}/execdir"),
    ),
    refused(
        "find . -name x -fprint ${outside}/list",
        Creates("${outside}/list"),
    ),
    refused(
        "find . -name x -fprintf ${outside}/listf '%p'",
        Creates("${outside}/listf"),
    ),
    refused("find . -name zzz -delete", Deletes("${project}/zzz")),
    control("find . -name '*.rs'"),
    control("find src sub -type f"),
];

const SORT_UNIQ: &[Case] = &[
    refused(
        "sort -o ${outside}/sorted README.md",
        Creates("${outside}/sorted"),
    ),
    refused(
        "sort --output=${outside}/sorted README.md",
        Creates("${outside}/sorted"),
    ),
    refused(
        "sort -osorted.txt README.md",
        Creates("${project}/sorted.txt"),
    ),
    refused(
        "uniq README.md ${outside}/uniq.txt",
        Creates("${outside}/uniq.txt"),
    ),
    refused("uniq -c README.md uniq.txt", Creates("${project}/uniq.txt")),
    control("sort README.md"),
    control("sort -r src/main.rs src/lib.rs"),
    control("uniq README.md"),
    control("uniq -c README.md"),
];

const SED: &[Case] = &[
    refused(
        "sed -n 'w ${outside}/w.txt' README.md",
        Creates("${outside}/w.txt"),
    ),
    refused(
        "sed -n 's/project/x/w ${outside}/sw.txt' README.md",
        Creates("${outside}/sw.txt"),
    ),
    refused(
        "sed '1e touch ${outside}/e' README.md",
        Creates("${outside}/e"),
    ),
    refused(
        "sed 's|.*|touch ${outside}/se|e' README.md",
        Creates("${outside}/se"),
    ),
    refused(
        "sed --expression='1e touch ${outside}/expr' README.md",
        Creates("${outside}/expr"),
    ),
    refused(
        "sed -i s/project/changed/ README.md",
        Changes("${project}/README.md"),
    ),
    control("sed -n 1p README.md"),
    control("sed s/project/changed/ README.md"),
    control("sed -n -e '/project/p' -e '$=' README.md"),
];

const MAKE_PYTHON_AWK_TAR: &[Case] = &[
    refused(
        "make --eval='x:=$(shell touch ${outside}/eval)'",
        Creates("${outside}/eval"),
    ),
    refused(
        "make -E 'x:=$(shell touch ${outside}/eval)'",
        Creates("${outside}/eval"),
    ),
    refused(
        "make 'x:=$(shell touch ${outside}/var)'",
        Creates("${outside}/var"),
    ),
    refused(
        "python3 -c \"open('${outside}/p', 'w')\"",
        Creates("${outside}/p"),
    ),
    refused(
        "python3 -m zipfile -c ${outside}/z.zip README.md",
        Creates("${outside}/z.zip"),
    ),
    // awk and tar are not in the permissive policy: ask by default, and the table's claim holds.
    refused(
        "awk 'BEGIN { system(\"touch ${outside}/awk\") }'",
        Creates("${outside}/awk"),
    ),
    refused(
        "tar -cf /dev/null --checkpoint=1 --checkpoint-action=exec='touch ${outside}/tar' README.md",
        Creates("${outside}/tar"),
    ),
    control("make all"),
    control("make -n"),
    control("python3 hello.py"),
    control("ls -la src"),
    control("cat README.md"),
];

/// Programs that read their code from standard input, which the command text itself supplies:
/// the same as `python3 -c` and `make --eval`, which the table refuses.
const FROM_STDIN: &[Case] = &[
    refused(
        r#"echo 'import os; os.system("touch ${outside}/stdin-python")' | python3"#,
        Creates("${outside}/stdin-python"),
    ),
    refused(
        r#"echo 'import os; os.system("touch ${outside}/stdin-python")' | python3 -"#,
        Creates("${outside}/stdin-python"),
    ),
    refused(
        "echo 'all: ; touch ${outside}/stdin-make' | make -f -",
        Creates("${outside}/stdin-make"),
    ),
];

/// The programs the cases run; each must be on PATH.
const PROGRAMS: &[&str] = &[
    "bash", "git", "find", "sort", "uniq", "sed", "make", "python3", "awk", "tar", "touch", "ls",
    "cat", "echo", "script",
];

/// Runs `command` with `bash -c` in the project, in a clean environment with the scratch home.
fn bash(scratch: &Scratch, command: &str) -> Output {
    Command::new("bash")
        .arg("-c")
        .arg(command)
        .current_dir(&scratch.project)
        .env_clear()
        .env("HOME", &scratch.home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("LC_ALL", "C")
        // As in any login session: make 4.3 runs `$(shell)` in a command-line variable with
        // $SHELL, and fails when it is unset.
        .env("SHELL", "/bin/sh")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run bash for `{command}`: {e}"))
}

fn require_programs(scratch: &Scratch) {
    for program in PROGRAMS {
        let out = bash(scratch, &format!("command -v {program}"));
        assert!(
            out.status.success(),
            "`{program}` is not installed (not on PATH): this test runs the real programs; \
             install git, findutils, coreutils, sed, make, python3, awk, tar and util-linux's script"
        );
    }
}

/// A scratch home whose project is a real git repository with two commits and a change in the
/// working tree.
fn scratch() -> Scratch {
    let scratch = Scratch::new();
    require_programs(&scratch);
    std::fs::remove_dir_all(scratch.project.join(".git")).unwrap();
    let git = "git -c init.defaultBranch=main -c user.name=t -c user.email=t@t";
    for step in [
        format!("{git} init -q"),
        format!("{git} add -A && {git} commit -q -m init"),
        "echo 'pub fn g() {}' >> src/lib.rs".to_owned(),
        format!("{git} commit -q -am second"),
        "echo '// changed' >> src/lib.rs".to_owned(),
    ] {
        let out = bash(&scratch, &step);
        assert!(out.status.success(), "`{step}`: {}", describe(&out));
    }
    scratch
}

fn describe(out: &Output) -> String {
    format!(
        "{}; stdout: {:?}; stderr: {:?}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn substitute(scratch: &Scratch, text: &str) -> String {
    scratch
        .substitute(&json!(text), &scratch.project)
        .as_str()
        .unwrap()
        .to_owned()
}

/// Every file, directory and symlink under the scratch home (without following symlinks and
/// without the project's `.git`), with its content or link target.
fn snapshot(scratch: &Scratch) -> BTreeMap<PathBuf, String> {
    fn walk(dir: &Path, skip: &Path, out: &mut BTreeMap<PathBuf, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path == skip {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                out.insert(path, format!("symlink to {}", target.display()));
            } else if meta.is_dir() {
                out.insert(path.clone(), "directory".to_owned());
                walk(&path, skip, out);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                out.insert(path, String::from_utf8_lossy(&bytes).into_owned());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(&scratch.home, &scratch.project.join(".git"), &mut out);
    out
}

/// How the snapshots differ, one line a path.
fn differences(before: &BTreeMap<PathBuf, String>, after: &BTreeMap<PathBuf, String>) -> String {
    let mut lines = Vec::new();
    for (path, old) in before {
        match after.get(path) {
            None => lines.push(format!("removed {}", path.display())),
            Some(new) if new != old => lines.push(format!("changed {}", path.display())),
            Some(_) => {}
        }
    }
    for path in after.keys().filter(|p| !before.contains_key(*p)) {
        lines.push(format!("created {}", path.display()));
    }
    lines.join("\n")
}

/// Decides and runs one case in a fresh scratch home; returns what went wrong, if anything.
fn check(case: &Case) -> Option<String> {
    let scratch = scratch();
    let verdict: Verdict = scratch.decide(
        "permissive",
        "project",
        None,
        &json!({"toolCallId": "t", "kind": "execute", "rawInput": {"command": case.command}}),
    );
    let command = substitute(&scratch, case.command);
    let decided = if case.allowed {
        (verdict.decision == Decision::Allow)
            .then_some(())
            .ok_or_else(|| format!("expected allow, got {}", verdict.decision))
    } else {
        (verdict.decision != Decision::Allow)
            .then_some(())
            .ok_or_else(|| "SECURITY: expected anything but allow, got allow".to_owned())
    };

    let path = |p: &str| PathBuf::from(substitute(&scratch, p));
    let mut before_content = None;
    match case.effect {
        Creates(p) => assert!(
            !path(p).exists(),
            "{}: {} exists before the run",
            case.command,
            path(p).display()
        ),
        Changes(p) => before_content = Some(std::fs::read(path(p)).unwrap()),
        Deletes(p) => std::fs::write(path(p), "to delete\n").unwrap(),
        Effect::Nothing => {}
    }
    let before = snapshot(&scratch);
    let out = if case.terminal {
        let quoted = command.replace('\'', r"'\''");
        bash(&scratch, &format!("script -qec '{quoted}' /dev/null"))
    } else {
        bash(&scratch, &command)
    };
    let after = snapshot(&scratch);
    let happened = match case.effect {
        Creates(p) => path(p)
            .exists()
            .then_some(())
            .ok_or_else(|| format!("{} was not created", path(p).display())),
        Changes(p) => (std::fs::read(path(p)).ok() != before_content)
            .then_some(())
            .ok_or_else(|| format!("{} did not change", path(p).display())),
        Deletes(p) => (!path(p).exists())
            .then_some(())
            .ok_or_else(|| format!("{} was not deleted", path(p).display())),
        Effect::Nothing => {
            let changed = differences(&before, &after);
            if !out.status.success() {
                Err("the control failed".to_owned())
            } else if changed.is_empty() {
                Ok(())
            } else {
                Err(format!("the control changed files:\n{changed}"))
            }
        }
    };
    let effect = match &happened {
        Ok(()) => format!("{:?}: confirmed", case.effect),
        Err(why) => format!("{:?}: NOT confirmed ({why})", case.effect),
    };
    match (decided, happened) {
        (Ok(()), Ok(())) => None,
        (decided, _) => Some(format!(
            "`{}`\n  decision: {} ({}){}\n  effect: {effect}\n  run: {}",
            case.command,
            verdict.decision,
            verdict.reason,
            decided
                .err()
                .map(|e| format!(" -- {e}"))
                .unwrap_or_default(),
            describe(&out)
        )),
    }
}

fn check_all(cases: &[Case]) {
    let failures: Vec<String> = cases.iter().filter_map(check).collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases wrong:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn git_options_the_table_refuses_really_write_or_run() {
    check_all(GIT);
}

#[test]
fn find_actions_the_table_refuses_really_write_run_or_delete() {
    check_all(FIND);
}

#[test]
fn sort_and_uniq_outputs_the_table_refuses_really_write() {
    check_all(SORT_UNIQ);
}

#[test]
fn sed_scripts_the_table_refuses_really_write_or_run() {
    check_all(SED);
}

#[test]
fn make_python_awk_and_tar_code_the_table_refuses_really_runs() {
    check_all(MAKE_PYTHON_AWK_TAR);
}

/// Each runs code written in the command itself, as `python3 -c` and `make --eval` do: python3
/// with no script (or `-`) and `make -f -` read their program from the pipe. (Found by this
/// test: the table now refuses a program or file names read from standard input.)
#[test]
fn code_piped_into_python_or_make_is_refused() {
    check_all(FROM_STDIN);
}
