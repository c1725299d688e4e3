//! The command line: the clap definitions and the checks of what a user gives (`args.rs`), one
//! function per command that builds what it needs, calls the library and prints (`commands/`),
//! the config file (`config.rs`) and `acptap policy` (`policy.rs`); here, the dispatch, the
//! database path's precedence (`resolve_db`) and the printing helpers.
//!
//! Exit policy, in one place: a command returns `Ok(code)`, or an error that is printed once on
//! stderr (`acptap: ...` with its causes) and exits 2. `acptap run` exits with the agent's status.

mod args;
mod commands;
pub(crate) mod config;
mod errors;
mod policy;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

pub(crate) use args::*;

/// Writes a file only its owner can read, as the database is (a report or a transcript holds what
/// the session said).
pub(crate) fn write_private(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?
        .write_all(bytes)
}

/// `now - duration` in microseconds since the epoch; durations are bounded, so this cannot wrap.
pub(crate) fn microseconds_before_now(duration: Duration) -> i64 {
    let micros = i64::try_from(duration.as_micros()).unwrap_or(i64::MAX);
    crate::record::now_us().saturating_sub(micros)
}

pub fn main() -> ExitCode {
    bound_allocator_caches();
    let cli = Cli::parse();
    init_logging();
    match run(cli) {
        Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
        Err(e) => {
            // A closed stdout (`acptap sessions | head`) is not an error worth reporting.
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::SUCCESS;
            }
            eprintln!("acptap: {}", errors::error_chain(&e));
            ExitCode::from(2)
        }
    }
}

/// glibc raises its mmap threshold each time a large block is freed, after which lines of a few
/// hundred KiB come from the heap and stay there as fragments: a session of large diffs grew the
/// proxy by tens of MiB. A fixed threshold gives every block above 256 KiB back when it is freed.
fn bound_allocator_caches() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only tunes the allocator; it is called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 * 1024);
    }
}

/// Logs go to stderr, never stdout (stdout is the protocol in proxy mode); `RUST_LOG` sets the
/// level, warnings by default.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

pub(crate) fn run(cli: Cli) -> anyhow::Result<i32> {
    // Made from the command line's own definition: they need no config file, so they work
    // while one is broken.
    match &cli.command {
        Command::Completions { shell } => return commands::manual::completions(*shell),
        Command::Man { dir } => return commands::manual::man(dir.as_deref()),
        Command::Doctor(args) => return commands::doctor::doctor(args, cli.config.as_deref()),
        _ => {}
    }
    let config = config::load(cli.config.as_deref())?;
    match cli.command {
        Command::Run(args) => commands::run::run(args, config),
        Command::Sessions(args) => commands::views::sessions(args, config),
        Command::Show(args) => commands::views::show(args, config),
        Command::Tools(args) => commands::views::tools(args, config),
        Command::Report(args) => commands::views::report(args, config),
        Command::Check(args) => commands::check::check(args, config),
        Command::Diff(args) => commands::check::diff(args, config),
        Command::Search(args) => commands::views::search(args, config),
        Command::Redact(args) => commands::redact::check(args, config),
        Command::Ui(args) => {
            config.check.validate()?;
            let check = config.check.clone();
            let silenced = std::sync::Arc::new(move |agent: Option<&str>, rule: &str| {
                check.silenced(agent, rule)
            });
            crate::ui::serve(args.db.path()?, args.port, args.open, silenced, |url| {
                print(&format!("{url}\n"))
            })?;
            Ok(0)
        }
        Command::Mcp(args) => {
            crate::mcp::serve(args.db.path()?)?;
            Ok(0)
        }
        Command::Tail(args) => commands::views::tail(args, config),
        Command::Stats(args) => commands::views::stats(args, config),
        Command::Prune(args) => commands::maintenance::prune(args, config),
        Command::Migrate(args) => commands::maintenance::migrate(args, config),
        Command::Vacuum(args) => commands::maintenance::vacuum(args, config),
        Command::Replay(args) => commands::replay::replay(args, config),
        Command::Export(args) => commands::transfer::export(args, config),
        Command::Import(args) => commands::transfer::import(args, config),
        Command::Policy(args) => policy::run(args),
        Command::Demo(args) => Ok(crate::demo::run_demo(args.db)?),
        Command::Completions { .. } | Command::Man { .. } | Command::Doctor(_) => {
            unreachable!("answered above")
        }
        Command::DemoAgent { altered } => {
            crate::demo::agent::run(std::io::stdin().lock(), std::io::stdout().lock(), altered)?;
            Ok(0)
        }
    }
}

/// The one precedence for the database's path: the flag or its environment variable, then the
/// config file, then the default. An empty value counts as not given.
pub(crate) fn resolve_db(
    flag_or_env: Option<PathBuf>,
    config: Option<PathBuf>,
    default: impl FnOnce() -> Option<PathBuf>,
) -> Option<PathBuf> {
    let given = |p: Option<PathBuf>| p.filter(|p| !p.as_os_str().is_empty());
    given(flag_or_env)
        .or_else(|| given(config))
        .or_else(default)
}

/// `$XDG_DATA_HOME/acptap/acptap.db`, else `~/.local/share/acptap/acptap.db`.
pub(crate) fn default_db_path() -> Option<PathBuf> {
    config::xdg_path("XDG_DATA_HOME", ".local/share", "acptap.db")
}

pub(crate) fn print(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// `value` as pretty JSON, its C1 and bidi controls written as `\u` escapes: exact data for a
/// script, and nothing a terminal acts on (`terminal::json_terminal_safe`).
pub(crate) fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    let mut text = json_text(value)?;
    text.push('\n');
    Ok(print(&text)?)
}

/// `value` as pretty JSON for stdout: see [`print_json`].
pub(crate) fn json_text(value: &impl serde::Serialize) -> serde_json::Result<String> {
    Ok(crate::terminal::json_terminal_safe(
        serde_json::to_string_pretty(value)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert!(parse_duration("2").unwrap_err().contains("needs a unit"));
        assert_eq!(parse_duration("1h 30m"), Ok(Duration::from_secs(5400)));
        assert!(parse_duration("soon").unwrap_err().contains("soon"));
        assert!(parse_duration("101years").is_err());
        assert!(parse_interval("5ms").is_err());
        assert!(parse_speed("0").is_err() && parse_speed("nan").is_err());
        assert_eq!(parse_speed("2.5"), Ok(2.5));
    }

    #[test]
    fn run_takes_the_agent_after_double_dash() {
        let cli = Cli::try_parse_from(["acptap", "run", "--label", "x", "--", "agent", "--flag"])
            .unwrap();
        let Command::Run(args) = cli.command else {
            panic!()
        };
        assert_eq!(args.agent, vec!["agent", "--flag"]);
        assert_eq!(args.label.as_deref(), Some("x"));
    }
}

#[cfg(test)]
mod db_path {
    use super::*;

    #[test]
    fn the_database_path_is_the_flag_then_the_config_then_the_default() {
        let p = |s: &str| Some(PathBuf::from(s));
        let default = || p("/default.db");
        assert_eq!(
            resolve_db(p("/flag.db"), p("/config.db"), default),
            p("/flag.db")
        );
        assert_eq!(resolve_db(None, p("/config.db"), default), p("/config.db"));
        assert_eq!(resolve_db(p(""), p("/config.db"), default), p("/config.db"));
        assert_eq!(resolve_db(None, None, default), p("/default.db"));
        assert_eq!(resolve_db(None, p(""), || None), None);
    }
}
