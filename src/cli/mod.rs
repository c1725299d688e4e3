//! The command line: clap definitions (their doc comments are the help text), and one function
//! per command that builds what it needs, calls the library, and prints.
//!
//! Exit policy, in one place: a command returns `Ok(code)`, or an error that is printed once on
//! stderr (`acptap: ...` with its causes) and exits 2. `acptap run` exits with the agent's status.

pub mod config;
mod errors;
mod policy;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};

use crate::inspect::{self, show};
use crate::proxy::{self, RunOptions};
use crate::record::queries::{self, ToolFilter};
use crate::record::{Destination, Reader, Store};

/// A byte-exact recording proxy for the Agent Client Protocol.
///
/// Put it where your editor launches the agent: `acptap run -- <agent command>`. It forwards every
/// byte both ways unchanged and records the conversation into SQLite.
#[derive(Debug, Parser)]
#[command(name = "acptap", version, propagate_version = true)]
pub struct Cli {
    /// The configuration file [default: $XDG_CONFIG_HOME/acptap/config.toml]
    #[arg(long, global = true, env = "ACPTAP_CONFIG", value_name = "PATH")]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run an agent behind the recording proxy: `acptap run [OPTIONS] -- AGENT [ARGS...]`.
    Run(RunArgs),
    /// List recorded sessions, most recent first.
    Sessions(SessionsArgs),
    /// Show one session as a timeline: turns, agent text, tool calls, permission decisions.
    Show(ShowArgs),
    /// List tool calls, of one session or of all.
    Tools(ToolsArgs),
    /// Replay a recorded session: as the agent toward a live client (on stdin/stdout), or as the
    /// client toward a live agent (`--as client -- AGENT...`).
    Replay(ReplayArgs),
    /// Write a recorded session's connection as a transcript (exact lines, direction and time).
    Export(ExportArgs),
    /// Load a transcript (as `export` writes it, or shared/samples) into the database.
    Import(ImportArgs),
    /// Write one session as a self-contained HTML file: timeline, tool calls, diffs, permission
    /// decisions, the raw messages, with filters.
    Report(ReportArgs),
    /// Follow a database live: one line per tool call, permission decision and turn end.
    Tail(TailArgs),
    /// Counts and durations: tool calls per kind and status, permission decisions, turns, bytes.
    Stats(StatsArgs),
    /// Delete connections older than a duration, with everything recorded under them.
    Prune(PruneArgs),
    /// Give the space of deleted rows back to the file system.
    Vacuum(DbOnlyArgs),
    /// Bring a database recorded by an older acptap up to this version's schema (the views read
    /// only, so they ask for this instead of doing it).
    Migrate(DbOnlyArgs),
    /// Try a policy out: decide one request, run a policy's tests, or replay recorded requests.
    Policy(policy::PolicyArgs),
    /// Run a complete demo session (built-in client and agent) through the real proxy and show it.
    Demo(DemoArgs),
    /// Measure the proxy against a plain pipe (see docs/performance.md).
    Bench(BenchArgs),
    /// The agent side of `acptap bench`.
    #[command(hide = true)]
    BenchPeer {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// The built-in demo agent: speaks ACP on stdin/stdout (used by `acptap demo`).
    #[command(hide = true)]
    DemoAgent {
        /// Behave differently from the recording (for testing `replay --as client`): one tool
        /// call fewer, one title changed, another stop reason.
        #[arg(long)]
        altered: bool,
    },
}

/// Where recordings are.
#[derive(Debug, Clone, Args)]
pub struct DbArgs {
    /// The SQLite database [default: $XDG_DATA_HOME/acptap/acptap.db]
    #[arg(long, env = "ACPTAP_DB", value_name = "PATH")]
    pub db: Option<PathBuf>,
}

impl DbArgs {
    /// `--db`, else `$ACPTAP_DB` (clap reads both), else the config file's `db`, else the XDG
    /// default.
    pub fn path(&self) -> anyhow::Result<PathBuf> {
        resolve_db(
            self.db.clone(),
            config::current().db.clone(),
            default_db_path,
        )
        .context("cannot find a place for the database: set --db, ACPTAP_DB, `db` in the config file, XDG_DATA_HOME or HOME")
    }

    /// The database, for commands that change it (`prune`, `vacuum`, `migrate`).
    fn open(&self) -> anyhow::Result<Store> {
        Ok(Store::open_existing(&self.path()?)?)
    }

    /// The database, read-only, for the views.
    pub(crate) fn read(&self) -> anyhow::Result<Reader> {
        Ok(Reader::open(&self.path()?)?)
    }
}

/// The one precedence for the database's path: the flag or its environment variable, then the
/// config file, then the default. An empty value counts as not given.
fn resolve_db(
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
pub fn default_db_path() -> Option<PathBuf> {
    config::xdg_path("XDG_DATA_HOME", ".local/share", "acptap.db")
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// A label stored with the recording, to find it again.
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// Forward only: record nothing.
    #[arg(long)]
    pub no_record: bool,
    /// A policy file that answers the agent's permission requests where it decides (repeatable;
    /// rules are taken in order). See docs/policy.md.
    #[arg(long = "policy", value_name = "FILE")]
    pub policies: Vec<PathBuf>,
    /// With --policy: evaluate and record every decision, but let the user decide everything.
    #[arg(long)]
    pub shadow: bool,
    #[command(flatten)]
    pub redaction: RedactArgs,
    /// Once the client has closed our stdin, how long the agent may take to exit before it gets
    /// SIGTERM (then SIGKILL after the same time again). E.g. 5s, 500ms.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration)]
    pub grace: Duration,
    /// The agent command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "AGENT")]
    pub agent: Vec<String>,
}

#[derive(Debug, Args)]
pub struct SessionsArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// How many sessions to list.
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    /// Print JSON for scripts.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// A session id, a unique prefix of one, or `last`.
    #[arg(value_name = "SESSION")]
    pub session: String,
    /// Print JSON for scripts.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ToolsArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// A session id, a unique prefix of one, or `last` [default: all sessions]
    #[arg(value_name = "SESSION")]
    pub session: Option<String>,
    /// Only tool calls with this status (pending, in_progress, completed, failed, or custom).
    #[arg(long)]
    pub status: Option<String>,
    /// Only tool calls of this kind (read, edit, execute, ..., or custom).
    #[arg(long)]
    pub kind: Option<String>,
    /// Print JSON for scripts.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Small workloads: checks that every way completes and the bytes match, in seconds. Its
    /// figures mean nothing.
    #[arg(long)]
    pub quick: bool,
    /// Also run every workload through the ACP conductor at PATH (`agent-client-protocol-conductor`),
    /// without and with `--trace`, as a reference point: smaller workloads, and messages compared
    /// as JSON values, since it re-serialises them. Not run by default.
    #[arg(long, value_name = "PATH")]
    pub conductor: Option<std::path::PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// A session id, a unique prefix of one, or `last`.
    #[arg(value_name = "SESSION")]
    pub session: String,
    /// The HTML file to write [default: acptap-<session>.html in the current directory]
    #[arg(short, long, value_name = "FILE.html")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct TailArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// One JSON object a line, for machines.
    #[arg(long)]
    pub json: bool,
    /// How often to look for new events.
    #[arg(long, value_name = "DURATION", default_value = "250ms", value_parser = parse_interval)]
    pub interval: Duration,
    /// Colour: auto (when stdout is a terminal), always, never [default: the config file's, else auto]
    #[arg(long, value_enum, value_name = "WHEN")]
    pub color: Option<ColorArg>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorArg {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Args)]
pub struct StatsArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// A session id, a unique prefix of one, or `last` [default: everything, or --since]
    #[arg(value_name = "SESSION", conflicts_with = "since")]
    pub session: Option<String>,
    /// Only connections started within this duration: 30m, 12h, 7d.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub since: Option<Duration>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct PruneArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// Delete connections that started longer ago than this: 30d, 12h.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub older_than: Duration,
    /// List what would be deleted, and delete nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Delete without asking (needed when stdin is not a terminal).
    #[arg(long)]
    pub yes: bool,
}

#[derive(Debug, Args)]
pub struct DbOnlyArgs {
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReplayRole {
    /// Play the recorded agent; a live client talks to acptap's stdin/stdout.
    Agent,
    /// Play the recorded client against a live agent started from the command after `--`.
    Client,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SessionIds {
    /// Send the recorded session ids.
    Keep,
    /// Give each recorded session a new id.
    Rewrite,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FsSource {
    /// Answer the agent's fs/* requests from the recording.
    Recorded,
    /// Serve the real file system.
    Real,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// A session id, a unique prefix of one, or `last`; its whole connection is replayed.
    #[arg(value_name = "SESSION")]
    pub session: String,
    /// Which side acptap plays.
    #[arg(long = "as", value_enum, value_name = "ROLE")]
    pub role: ReplayRole,
    /// As agent: replay with the recorded timing divided by N (1: real time) [default: as fast as
    /// the client reads]
    #[arg(long, value_name = "N", value_parser = parse_speed)]
    pub speed: Option<f64>,
    /// As agent: end the replay at the first client request the recording cannot answer.
    #[arg(long)]
    pub strict: bool,
    /// As agent: keep or rewrite the recorded session ids.
    #[arg(long, value_enum, default_value = "keep")]
    pub session_ids: SessionIds,
    /// As client: the cwd sent in session/new [default: the recorded one]
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// As client: where the agent's fs/* requests are answered from.
    #[arg(long, value_enum, default_value = "recorded")]
    pub fs: FsSource,
    /// As client: the agent command and its arguments, after `--`.
    #[arg(last = true, value_name = "AGENT")]
    pub agent: Vec<String>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ExportFormat {
    /// One JSON record a line: {"seq", "t", "dir", "eol", "text"}.
    Jsonl,
    /// The NDJSON trace of the ACP conductor, for `agent-client-protocol-trace-viewer`.
    Trace,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// A session id, a unique prefix of one, or `last`; its whole connection is exported.
    #[arg(value_name = "SESSION")]
    pub session: String,
    #[arg(long, value_enum, default_value = "jsonl")]
    pub format: ExportFormat,
    /// Write here instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// What is hidden from the recording: the same for `run` and `import`.
#[derive(Debug, Args)]
pub struct RedactArgs {
    /// Replace matches of this regex with [REDACTED] in what is recorded, never in what is
    /// forwarded (repeatable; adds to the config file's [redact] patterns).
    #[arg(long = "redact", value_name = "REGEX")]
    pub redact: Vec<String>,
    /// Do not redact the well-known secret shapes (mcpServers env and header values,
    /// Authorization values, common token formats).
    #[arg(long)]
    pub no_default_redact: bool,
}

impl RedactArgs {
    /// The redactor: the config file's patterns, then these, and the defaults unless turned off.
    fn redactor(&self, config: &config::Config) -> anyhow::Result<crate::record::redact::Redactor> {
        let patterns: Vec<String> = config
            .redact
            .patterns
            .iter()
            .chain(&self.redact)
            .cloned()
            .collect();
        crate::record::redact::Redactor::new(
            &patterns,
            config.redact.default && !self.no_default_redact,
        )
        .map_err(anyhow::Error::msg)
    }
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    #[command(flatten)]
    pub db: DbArgs,
    #[command(flatten)]
    pub redaction: RedactArgs,
    /// The transcript (JSON lines).
    #[arg(value_name = "FILE.jsonl")]
    pub file: PathBuf,
    /// A label for the imported connection [default: the file name]
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// When the recording started (RFC 3339, e.g. 2026-11-24T12:00:00Z) [default: the `start` of
    /// the file's first record (`export` writes it), else now]
    #[arg(long, value_name = "TIME", value_parser = crate::record::transcript::parse_start)]
    pub start: Option<i64>,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// The SQLite database to record into [default: $ACPTAP_DB, else a new temporary file]
    #[arg(long, env = "ACPTAP_DB", value_name = "PATH")]
    pub db: Option<PathBuf>,
}

/// Writes a file only its owner can read, as the database is (a report or a transcript holds what
/// the session said).
fn write_private(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
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

/// The longest duration any option takes: beyond it, arithmetic on times would overflow.
const LONGEST: Duration = Duration::from_secs(100 * 365 * 86_400);

/// A duration with its unit (`5s`, `500ms`, `2m`, `12h`, `30d`, `1h 30m`), read by `humantime`,
/// at most 100 years. A bare number is refused: `30` could be seconds or days.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if !text.is_empty() && text.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(format!(
            "`{text}` needs a unit: write e.g. {text}s, {text}m, {text}h or {text}d"
        ));
    }
    let duration = humantime::parse_duration(text).map_err(|e| {
        format!("`{text}` is not a duration ({e}); write e.g. 30d, 12h, 5s or 500ms")
    })?;
    if duration > LONGEST {
        return Err(format!("`{text}` is longer than 100 years"));
    }
    Ok(duration)
}

/// A polling interval: a duration of at least 10 ms (a shorter one only burns a CPU).
fn parse_interval(text: &str) -> Result<Duration, String> {
    let interval = parse_duration(text)?;
    if interval < Duration::from_millis(10) {
        return Err(format!(
            "`{text}` is too short: the interval is at least 10ms"
        ));
    }
    Ok(interval)
}

/// A replay speed: from 0.001 (a thousand times slower than recorded) to 1,000,000.
fn parse_speed(text: &str) -> Result<f64, String> {
    let speed: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number; write e.g. 1 (real time) or 10"))?;
    if !(0.001..=1e6).contains(&speed) {
        return Err(format!(
            "`{text}` is not a speed: give a number from 0.001 to 1000000 (1 is real time)"
        ));
    }
    Ok(speed)
}

/// `now - duration` in microseconds since the epoch; durations are bounded, so this cannot wrap.
fn microseconds_before_now(duration: Duration) -> i64 {
    let micros = i64::try_from(duration.as_micros()).unwrap_or(i64::MAX);
    crate::record::now_us().saturating_sub(micros)
}

pub fn main() -> ExitCode {
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
            eprintln!("acptap: {}", errors::one_line(&e));
            ExitCode::from(2)
        }
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

pub fn run(cli: Cli) -> anyhow::Result<i32> {
    let config = config::load(cli.config.as_deref())?;
    match cli.command {
        Command::Run(args) => {
            // A policy that does not load stops here, before the agent starts.
            let policies = if args.policies.is_empty() {
                config.policy.clone()
            } else {
                args.policies
            };
            if args.shadow && policies.is_empty() {
                anyhow::bail!(
                    "--shadow needs a policy: give --policy FILE (or `policy` in the config file)"
                );
            }
            let policy = if policies.is_empty() {
                None
            } else {
                Some(crate::policy::Policy::load(&policies)?)
            };
            let redactor = args.redaction.redactor(config)?;
            let destination = if args.no_record {
                Destination::Nowhere
            } else {
                Destination::Database(args.db.path()?)
            };
            let outcome = proxy::run(
                RunOptions {
                    agent: args.agent,
                    destination,
                    label: args.label,
                    eof_grace: args.grace,
                    kill_grace: args.grace,
                    policy,
                    shadow: args.shadow,
                    redactor,
                },
                proxy::ClientStreams::stdio()?,
            )?;
            Ok(outcome.exit_code)
        }
        Command::Sessions(args) => {
            let reader = args.db.read()?;
            let sessions = queries::list_sessions(&reader, args.limit)?;
            if args.json {
                print_json(&sessions)?;
            } else if sessions.is_empty() {
                eprintln!("no session recorded in {}", args.db.path()?.display());
            } else {
                print(&inspect::render_sessions(&sessions))?;
            }
            Ok(0)
        }
        Command::Show(args) => {
            let reader = args.db.read()?;
            let session = queries::resolve_session(&reader, &args.session)?;
            let timeline = show::timeline(&reader, &session)?;
            if args.json {
                print_json(&timeline)?;
            } else {
                print(&show::render(&timeline))?;
            }
            Ok(0)
        }
        Command::Tools(args) => {
            let reader = args.db.read()?;
            let session = args
                .session
                .as_deref()
                .map(|s| queries::resolve_session(&reader, s))
                .transpose()?;
            let rows = queries::tool_calls(
                &reader,
                &ToolFilter {
                    session,
                    status: args.status,
                    kind: args.kind,
                },
            )?;
            if args.json {
                print_json(&rows)?;
            } else {
                print(&inspect::render_tools(&rows))?;
            }
            Ok(0)
        }
        Command::Bench(args) => {
            let report = crate::bench::run(args.quick, args.conductor.as_deref())?;
            if args.json {
                print_json(&report)?;
            } else {
                print(&crate::bench::render(&report))?;
            }
            // A workload the conductor could not run is reported as skipped, not as a mismatch.
            let all_match = report
                .measurements
                .iter()
                .all(|m| m.bytes_match || m.skipped.is_some());
            if !all_match {
                eprintln!("acptap: some bytes did not arrive as sent: see the BYTES column");
            }
            Ok(if all_match { 0 } else { 1 })
        }
        Command::BenchPeer { args } => {
            crate::bench::peer(&args)?;
            Ok(0)
        }
        Command::Report(args) => {
            let reader = args.db.read()?;
            let session = queries::resolve_session(&reader, &args.session)?;
            let html = crate::inspect::report::render(&reader, &session)?;
            let path = args.output.unwrap_or_else(|| {
                let safe: String = session
                    .session_id
                    .chars()
                    .map(|c| {
                        if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                            c
                        } else {
                            '_'
                        }
                    })
                    .collect();
                PathBuf::from(format!("acptap-{safe}.html"))
            });
            write_private(&path, html.as_bytes())
                .with_context(|| format!("cannot write {}", path.display()))?;
            print(&format!("{}\n", path.display()))?;
            Ok(0)
        }
        Command::Tail(args) => {
            use std::io::IsTerminal;
            let path = args.db.path()?;
            let color = match args.color {
                Some(ColorArg::Always) => true,
                Some(ColorArg::Never) => false,
                Some(ColorArg::Auto) | None => match config.color {
                    Some(config::ColorChoice::Always) => true,
                    Some(config::ColorChoice::Never) => false,
                    // https://no-color.org: a set, non-empty NO_COLOR means no colour by default.
                    _ => {
                        std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                            && std::io::stdout().is_terminal()
                    }
                },
            };
            if !path.exists() {
                eprintln!("acptap: waiting for {} to be created", path.display());
                while !path.exists() {
                    std::thread::sleep(args.interval);
                }
            }
            let reader = Reader::open(&path)?;
            let mut cursor = crate::inspect::tail::Cursor::at_end(&reader)?;
            eprintln!("acptap: following {} (Ctrl-C to stop)", path.display());
            loop {
                let mut text = String::new();
                for event in cursor.poll(&reader)? {
                    if args.json {
                        text.push_str(&serde_json::to_string(&event)?);
                    } else {
                        text.push_str(&crate::inspect::tail::render(&event, color));
                    }
                    text.push('\n');
                }
                if !text.is_empty() {
                    print(&text)?;
                }
                std::thread::sleep(args.interval);
            }
        }
        Command::Stats(args) => {
            use crate::inspect::stats;
            let reader = args.db.read()?;
            let scope = match (&args.session, args.since) {
                (Some(spec), _) => stats::Scope::Session(queries::resolve_session(&reader, spec)?),
                (None, Some(since)) => stats::Scope::Since(microseconds_before_now(since)),
                (None, None) => stats::Scope::Since(0),
            };
            let result = stats::stats(&reader, &scope)?;
            if args.json {
                print_json(&result)?;
            } else {
                print(&stats::render(&result))?;
            }
            Ok(0)
        }
        Command::Prune(args) => {
            use std::io::IsTerminal;
            let before = microseconds_before_now(args.older_than);
            let candidates = queries::prunable_connections(&args.db.read()?, before)?;
            let cutoff = crate::inspect::format_time(before);
            let mut listing = String::new();
            for c in &candidates {
                listing.push_str(&format!(
                    "  connection {} started {} UTC, {}{}\n",
                    c.id,
                    crate::inspect::format_time(c.started_at),
                    c.state,
                    c.label
                        .as_deref()
                        .map(|l| format!(", {}", crate::inspect::one_line(l, 60)))
                        .unwrap_or_default()
                ));
            }
            if args.dry_run || candidates.is_empty() {
                print(&format!(
                    "{} connection(s) started before {cutoff} UTC {}\n{listing}",
                    candidates.len(),
                    if args.dry_run {
                        "would be deleted (live ones are never deleted):"
                    } else {
                        "to delete"
                    }
                ))?;
                return Ok(0);
            }
            if !args.yes {
                if !std::io::stdin().is_terminal() {
                    anyhow::bail!(
                        "prune deletes {} connection(s): add --yes to confirm (or --dry-run to list them)",
                        candidates.len()
                    );
                }
                eprint!(
                    "{listing}delete these {} connection(s) and everything recorded under them? [y/N] ",
                    candidates.len()
                );
                let mut answer = String::new();
                std::io::stdin().read_line(&mut answer)?;
                if !matches!(answer.trim(), "y" | "Y" | "yes") {
                    eprintln!("nothing deleted");
                    return Ok(1);
                }
            }
            let ids: Vec<i64> = candidates.iter().map(|c| c.id).collect();
            let removed = args.db.open()?.delete_connections(&ids)?;
            print(&format!(
                "deleted {removed} connection(s) started before {cutoff} UTC, with everything recorded under them; `acptap vacuum` gives the space back\n"
            ))?;
            Ok(0)
        }
        Command::Migrate(args) => {
            let path = args.db.path()?;
            let before = crate::record::store::schema_version_of(&path)?;
            drop(args.db.open()?);
            let after = crate::record::store::schema_version_of(&path)?;
            print(&format!(
                "{}: schema version {before} -> {after}\n",
                path.display()
            ))?;
            Ok(0)
        }
        Command::Vacuum(args) => {
            let path = args.db.path()?;
            let before = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            args.db.open()?.vacuum()?;
            let after = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            print(&format!("{}: {before} -> {after} bytes\n", path.display()))?;
            Ok(0)
        }
        Command::Replay(args) => {
            let reader = args.db.read()?;
            let session = queries::resolve_session(&reader, &args.session)?;
            let script = crate::replay::script::load(&reader, session.connection_id)?;
            match args.role {
                ReplayRole::Agent => {
                    if !args.agent.is_empty() {
                        anyhow::bail!(
                            "`--as agent` plays the agent itself: drop the command after `--`"
                        );
                    }
                    crate::replay::agent::replay_as_agent(
                        &script,
                        std::io::stdin().lock(),
                        std::io::stdout().lock(),
                        crate::replay::agent::AgentReplayOptions {
                            speed: args.speed,
                            strict: args.strict,
                            rewrite_session_ids: args.session_ids == SessionIds::Rewrite,
                        },
                    )?;
                    Ok(0)
                }
                ReplayRole::Client => {
                    if args.agent.is_empty() {
                        anyhow::bail!(
                            "`--as client` needs the agent to drive: `acptap replay SESSION --as client -- AGENT [ARGS...]`"
                        );
                    }
                    let db = args.db.path()?;
                    drop(reader);
                    let report = crate::replay::client::replay_as_client(
                        crate::replay::client::ClientReplayOptions {
                            db,
                            original: session,
                            script,
                            agent: args.agent,
                            cwd: args.cwd,
                            real_fs: args.fs == FsSource::Real,
                        },
                    )?;
                    print(&report.render())?;
                    // A CI gate: 0 when the live agent did what was recorded, 1 when it did not.
                    Ok(if report.is_empty() { 0 } else { 1 })
                }
            }
        }
        Command::Export(args) => {
            let reader = args.db.read()?;
            let session = queries::resolve_session(&reader, &args.session)?;
            let lines = match args.format {
                ExportFormat::Jsonl => {
                    crate::export::transcript::export(&reader, session.connection_id)?
                        .iter()
                        .map(serde_json::to_string)
                        .collect::<Result<Vec<_>, _>>()?
                }
                ExportFormat::Trace => {
                    crate::export::trace::export(&reader, session.connection_id)?
                }
            };
            let mut text = String::new();
            for line in &lines {
                text.push_str(line);
                text.push('\n');
            }
            match args.output {
                Some(path) => write_private(&path, text.as_bytes())
                    .with_context(|| format!("cannot write {}", path.display()))?,
                None => print(&text)?,
            }
            Ok(0)
        }
        Command::Import(args) => {
            let text = std::fs::read_to_string(&args.file)
                .with_context(|| format!("cannot read {}", args.file.display()))?;
            let records = crate::record::transcript::parse(&text)
                .with_context(|| format!("{} is not a transcript", args.file.display()))?;
            let path = args.db.path()?;
            let mut store = Store::open(&path)?;
            let label = args.label.or_else(|| {
                args.file
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
            });
            let redactor = args.redaction.redactor(config)?;
            let recorded_start = records[0]
                .start
                .as_deref()
                .map(crate::record::transcript::parse_start)
                .transpose()
                .map_err(anyhow::Error::msg)?;
            let started_at = args
                .start
                .or(recorded_start)
                .unwrap_or_else(crate::record::now_us);
            let connection_id = crate::record::transcript::import(
                &mut store,
                &records,
                crate::record::ConnectionStart {
                    label,
                    command: vec!["import".into(), args.file.display().to_string()],
                    cwd: None,
                    pid: None,
                    started_at,
                },
                &redactor,
            )?;
            drop(store);
            let sessions: Vec<String> =
                queries::list_sessions(&Reader::open(&path)?, usize::MAX >> 1)?
                    .into_iter()
                    .filter(|s| s.connection_id == connection_id)
                    .map(|s| s.session_id)
                    .collect();
            print(&format!(
                "imported {} lines as connection {connection_id}; sessions: {}\n",
                records.len(),
                if sessions.is_empty() {
                    "none".to_owned()
                } else {
                    sessions.join(", ")
                }
            ))?;
            Ok(0)
        }
        Command::Policy(args) => policy::run(args),
        Command::Demo(args) => crate::demo::run_demo(args.db),
        Command::DemoAgent { altered } => {
            crate::demo::agent::run(std::io::stdin().lock(), std::io::stdout().lock(), altered)?;
            Ok(0)
        }
    }
}

pub(crate) fn print(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

pub(crate) fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    Ok(print(&text)?)
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
