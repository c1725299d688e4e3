//! `acptap doctor`: what a user asks when something is off. One check per line, each `ok` or
//! what is wrong and the fix: the config file, the database (its place, its directory, its
//! permissions, SQLite's version, the schema's), the policies, the agents (given, and those in
//! the editor configurations it knows: `editor_configs`) and the UI's port.
//!
//! It never fails on what it checks: a broken config file is reported and the rest runs with the
//! defaults. Exit 0 when every check is ok, 1 when one is not.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::super::{DbArgs, DoctorArgs, config, print, print_json};
use crate::record::store::{schema_version, schema_version_of};

mod editor_configs;

/// One check's verdict.
#[derive(Debug, Serialize)]
struct Check {
    name: String,
    ok: bool,
    detail: String,
    fix: Option<String>,
}

impl Check {
    fn ok(name: impl Into<String>, detail: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            ok: true,
            detail: detail.into(),
            fix: None,
        }
    }

    fn bad(name: impl Into<String>, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            ok: false,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }
}

#[derive(Serialize)]
struct Report<'a> {
    checks: &'a [Check],
    ok: bool,
}

/// `acptap doctor`. `explicit_config` is `--config` or `$ACPTAP_CONFIG`.
pub(in crate::cli) fn doctor(
    args: &DoctorArgs,
    explicit_config: Option<&Path>,
) -> anyhow::Result<i32> {
    let mut checks = vec![check_config(explicit_config)];
    checks.extend(check_database(&args.db));
    let mut policies = args.policies.clone();
    policies.extend(config::current().policy.iter().cloned());
    checks.extend(policies.iter().map(|p| check_policy(p)));
    let agents = args.agents.iter().chain(args.agent.first());
    checks.extend(agents.map(|a| check_agent(a)));
    checks.extend(editor_configs::checks());
    checks.push(check_port(args.port));

    let all_ok = checks.iter().all(|c| c.ok);
    if args.json {
        print_json(&Report {
            checks: &checks,
            ok: all_ok,
        })?;
    } else {
        let mut text = String::new();
        for check in &checks {
            text.push_str(&render(check));
            text.push('\n');
        }
        let problems = checks.iter().filter(|c| !c.ok).count();
        if problems == 0 {
            text.push_str("everything is ok\n");
        } else {
            text.push_str(&format!("{problems} problem(s)\n"));
        }
        print(&text)?;
    }
    Ok(if all_ok { 0 } else { 1 })
}

/// One line: `ok   NAME: DETAIL` or `FAIL NAME: DETAIL; fix: FIX`, every part through the
/// terminal sanitiser (paths and error texts can hold anything).
fn render(check: &Check) -> String {
    let safe =
        |text: &str| crate::terminal::terminal_line(&text.replace('\n', " "), 4096).into_owned();
    let mut line = format!(
        "{:<4} {}: {}",
        if check.ok { "ok" } else { "FAIL" },
        safe(&check.name),
        safe(&check.detail)
    );
    if let Some(fix) = &check.fix {
        line.push_str("; fix: ");
        line.push_str(&safe(fix));
    }
    line
}

/// The config file in use: loads it (which makes it the one in force), or says why not; the
/// other checks then go on with the defaults.
fn check_config(explicit: Option<&Path>) -> Check {
    const NAME: &str = "config";
    let path = match explicit {
        Some(path) => path.to_owned(),
        None => match config::xdg_path("XDG_CONFIG_HOME", ".config", "config.toml") {
            Some(path) => path,
            None => {
                return Check::ok(
                    NAME,
                    "no config file (neither XDG_CONFIG_HOME nor HOME is set): defaults",
                );
            }
        },
    };
    if explicit.is_some() && !path.exists() {
        return Check::bad(
            NAME,
            format!(
                "{} (from --config or ACPTAP_CONFIG) does not exist",
                path.display()
            ),
            format!(
                "create {}, or drop --config / unset ACPTAP_CONFIG to use the defaults",
                path.display()
            ),
        );
    }
    if explicit.is_none() && !path.exists() {
        return Check::ok(
            NAME,
            format!("no config file at {}: defaults", path.display()),
        );
    }
    match config::load(explicit).and_then(|c| c.check.validate().map(|()| c)) {
        Ok(_) => Check::ok(NAME, format!("{} loads", path.display())),
        Err(e) => {
            let said = crate::cli::errors::error_chain(&e);
            // A parse error reads `PATH:LINE: message`.
            let line = said
                .strip_prefix(&format!("{}:", path.display()))
                .and_then(|rest| rest.split_once(':'))
                .and_then(|(n, _)| n.parse::<usize>().ok())
                .filter(|&n| n > 0);
            let fix = match line {
                Some(n) => format!(
                    "edit {} line {n} (docs/config.md lists the keys); the checks below use the defaults",
                    path.display()
                ),
                None => format!(
                    "fix {} (docs/config.md lists the keys); the checks below use the defaults",
                    path.display()
                ),
            };
            Check::bad(NAME, said, fix)
        }
    }
}

/// Whether this process may access `path` as `mode` (`libc::R_OK`, ...).
fn may(path: &Path, mode: libc::c_int) -> bool {
    let Ok(c_path) = CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c_path` is a valid NUL-terminated string that outlives the call.
    unsafe { libc::access(c_path.as_ptr(), mode) == 0 }
}

/// The database: where it is, whether a recording can make or write it, SQLite's version and the
/// schema version.
fn check_database(db: &DbArgs) -> Vec<Check> {
    let mut checks = Vec::new();
    let path = match db.path() {
        Ok(path) => path,
        Err(e) => {
            checks.push(Check::bad(
                "database",
                crate::cli::errors::error_chain(&e),
                "give --db PATH, or set ACPTAP_DB or `db` in the config file",
            ));
            return checks;
        }
    };
    let shown = path.display().to_string();
    let exists = path.exists();

    // The directory: the first existing one above the file must be a writable directory (a
    // recording creates the missing ones, and the database's journal beside it).
    let parent = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut existing = parent.to_path_buf();
    while !existing.exists() {
        match existing.parent() {
            Some(up) if !up.as_os_str().is_empty() => existing = up.to_path_buf(),
            _ => {
                existing = PathBuf::from(".");
                break;
            }
        }
    }
    let dir_name = "database directory";
    let dir_shown = parent.display().to_string();
    checks.push(if !existing.is_dir() {
        Check::bad(
            dir_name,
            if existing == parent {
                format!("{dir_shown} is not a directory")
            } else {
                format!(
                    "{} is not a directory, so {dir_shown} cannot be made",
                    existing.display()
                )
            },
            format!(
                "move {} aside, or give --db (or ACPTAP_DB, or `db` in the config file) a path in a directory",
                existing.display()
            ),
        )
    } else if !may(&existing, libc::W_OK | libc::X_OK) {
        Check::bad(
            dir_name,
            format!("{} is not writable: a recording cannot create files there", existing.display()),
            format!(
                "`chmod u+w {}`, or give --db a path in a writable directory",
                existing.display()
            ),
        )
    } else if existing == parent {
        Check::ok(dir_name, format!("{dir_shown} is writable"))
    } else {
        Check::ok(
            dir_name,
            format!(
                "{dir_shown} does not exist yet; {} is writable, so a recording makes it",
                existing.display()
            ),
        )
    });

    // The file itself.
    if !exists {
        checks.push(Check::ok(
            "database",
            format!("{shown} does not exist yet: recorded on first `acptap run`"),
        ));
    } else if !path.is_file() {
        checks.push(Check::bad(
            "database",
            format!("{shown} is not a file"),
            "give --db (or ACPTAP_DB, or `db` in the config file) the path of a file",
        ));
    } else if !may(&path, libc::R_OK | libc::W_OK) {
        let mode = std::fs::metadata(&path)
            .map(|m| format!("{:o}", m.permissions().mode() & 0o7777))
            .unwrap_or_else(|_| "?".to_owned());
        checks.push(Check::bad(
            "database",
            format!("{shown} is not readable and writable by this user (mode {mode})"),
            format!("`chmod u+rw {shown}` (as its owner)"),
        ));
    } else {
        checks.push(Check::ok(
            "database",
            format!("{shown} exists, readable and writable"),
        ));
    }

    checks.push(Check::ok(
        "sqlite",
        format!("SQLite library {}", rusqlite::version()),
    ));

    let expected = schema_version();
    let schema = "schema";
    if !exists || !path.is_file() {
        checks.push(Check::ok(
            schema,
            format!("this acptap records schema version {expected}"),
        ));
        return checks;
    }
    checks.push(match schema_version_of(&path) {
        Err(e) => Check::bad(
            schema,
            format!("cannot read the schema version of {shown}: {e}"),
            format!(
                "if {shown} is not an acptap database, move it aside or give --db another path"
            ),
        ),
        Ok(found) if found == expected => {
            Check::ok(schema, format!("version {found}, this acptap's"))
        }
        Ok(found) if found < expected => Check::bad(
            schema,
            format!("version {found}, older than this acptap's {expected}"),
            "run `acptap migrate`",
        ),
        Ok(found) => Check::bad(
            schema,
            format!("version {found}, newer than this acptap's {expected}"),
            "this acptap is older than the database: update acptap",
        ),
    });
    checks
}

/// A policy file loads, its examples and tests passing.
fn check_policy(file: &Path) -> Check {
    let name = format!("policy {}", file.display());
    match crate::policy::Policy::load(&[file.to_owned()]) {
        Ok(_) => Check::ok(name, "loads, and its examples and tests pass"),
        Err(e) => Check::bad(
            name,
            e.to_string(),
            format!(
                "edit {} line {} (`acptap policy test {}` runs its tests)",
                e.origin.file.display(),
                e.origin.line,
                file.display()
            ),
        ),
    }
}

/// An agent command exists (on PATH, or as a path) and is executable.
fn check_agent(command: &str) -> Check {
    check_agent_on(command, None)
}

/// The same, looked for on `path_var` instead of this process's `PATH` where given (an editor
/// may give the agent its own).
fn check_agent_on(command: &str, path_var: Option<&std::ffi::OsStr>) -> Check {
    let name = format!("agent {command}");
    let executable = |p: &Path| p.is_file() && may(p, libc::X_OK);
    if command.is_empty() {
        return Check::bad(name, "the command is empty", "give the agent's command");
    }
    if command.contains('/') {
        let path = Path::new(command);
        return if executable(path) {
            Check::ok(name, command)
        } else if path.is_dir() {
            Check::bad(
                name,
                format!("{command} is a directory"),
                "give the path of the agent's program, not of its directory",
            )
        } else if path.is_file() {
            Check::bad(
                name,
                format!("{command} is not executable"),
                format!("`chmod +x {command}`, if it is the agent's program"),
            )
        } else {
            Check::bad(
                name,
                format!("{command} does not exist"),
                "give the agent's real path (or install it)",
            )
        };
    }
    let search = path_var
        .map(std::ffi::OsStr::to_os_string)
        .or_else(|| std::env::var_os("PATH"))
        .unwrap_or_default();
    let mut found_not_executable = None;
    for dir in std::env::split_paths(&search) {
        let dir = if dir.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            dir
        };
        let candidate = dir.join(command);
        if executable(&candidate) {
            return Check::ok(name, format!("{}", candidate.display()));
        }
        if candidate.is_file() && found_not_executable.is_none() {
            found_not_executable = Some(candidate);
        }
    }
    match found_not_executable {
        Some(path) => Check::bad(
            name,
            format!("{} is on PATH but not executable", path.display()),
            format!("`chmod +x {}`", path.display()),
        ),
        None => Check::bad(
            name,
            format!("`{command}` is not on PATH"),
            format!("install `{command}`, add its directory to PATH, or give its full path"),
        ),
    }
}

/// The UI's port on 127.0.0.1 can be bound; without `--port` the UI takes a free one.
fn check_port(port: Option<u16>) -> Check {
    const NAME: &str = "ui port";
    match port {
        None | Some(0) => Check::ok(
            NAME,
            "`acptap ui` picks a free port unless given --port: nothing to check",
        ),
        Some(port) => match std::net::TcpListener::bind(("127.0.0.1", port)) {
            Ok(_) => Check::ok(NAME, format!("127.0.0.1:{port} is free")),
            Err(e) => Check::bad(
                NAME,
                format!("cannot listen on 127.0.0.1:{port}: {e}"),
                format!(
                    "stop what listens there (`ss -ltnp 'sport = :{port}'` names it), or run `acptap ui` with another --port"
                ),
            ),
        },
    }
}
