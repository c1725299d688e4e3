//! The command line's clap definitions: their doc comments are the help text. The values a user
//! gives are checked here (durations, intervals, speeds); `DbArgs` opens the database at the path
//! `super::resolve_db` settles.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};

use super::{config, policy};
use crate::query::Reader;
use crate::record::Store;

/// A byte-exact recording proxy for the Agent Client Protocol.
///
/// Put it where your editor launches the agent: `acptap run -- <agent command>`. It forwards every
/// byte both ways unchanged and records the conversation into SQLite.
#[derive(Debug, Parser)]
#[command(name = "acptap", version, propagate_version = true)]
pub(crate) struct Cli {
    /// The configuration file [default: $XDG_CONFIG_HOME/acptap/config.toml]
    #[arg(long, global = true, env = "ACPTAP_CONFIG", value_name = "PATH")]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
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
    /// Check recorded sessions or transcript files against the protocol: each message against
    /// its schema, and the rules of the conversation (see docs/check.md). Exit 1 on findings.
    Check(CheckArgs),
    /// Two sessions side by side, turn by turn: prompts, tool calls, permission decisions, stop
    /// reasons, timings (see docs/check.md). Exit 1 when they differ.
    Diff(DiffArgs),
    /// Find sessions and tool calls across every recording: by text (full-text, SQLite FTS5),
    /// tool kind, status or path; newest first.
    Search(SearchArgs),
    /// List what redaction removes from a transcript file, or from a recording, with the rule
    /// that matched: to see false positives before trusting it. Changes nothing.
    Redact(RedactCheckArgs),
    /// A local web inspector: sessions, a live timeline of raw lines, on 127.0.0.1 with a token
    /// (see docs/ui.md). Prints the URL.
    Ui(UiArgs),
    /// Serve the recordings to an agent over the Model Context Protocol (stdio), read-only:
    /// sessions, timelines, tool calls, permission decisions, search, policy check, protocol
    /// check; transcripts and reports as resources.
    Mcp(McpArgs),
    /// Write one session as a self-contained HTML file: timeline, tool calls, diffs, permission
    /// decisions, the raw messages, with filters.
    Report(ReportArgs),
    /// Follow a database live: one line per tool call, permission decision and turn end.
    Tail(TailArgs),
    /// Counts and durations: tool calls per kind and status, permission decisions, turns, bytes;
    /// with --by-method, one session's latency per request method and tool kind.
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
    /// Check the setup, one line per check with the fix for what is wrong: the config file, the
    /// database (its directory, permissions, SQLite and schema versions), policies, agents, the
    /// UI's port. Exit 1 when a check fails: `acptap doctor [--policy FILE] [-- AGENT...]`.
    Doctor(DoctorArgs),
    /// Print a completion script for a shell: `source <(acptap completions bash)`, or save it where
    /// the shell looks (see docs/cli.md).
    Completions {
        /// The shell to complete in.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff): `acptap man | man -l -`; with `--dir DIR`, write `acptap.1`
    /// and a page per command (`acptap-run.1`, `acptap-policy-check.1`, ...) into DIR.
    ///
    /// The pages go into DIR itself, so DIR should be a `man1` directory such as
    /// ~/.local/share/man/man1: `man` looks in the `man1` under each directory of its search
    /// path (`manpath`), so it is DIR's parent that must be on that path, not DIR.
    Man {
        /// Write the pages into this directory (created if missing), a `man1` directory such as
        /// ~/.local/share/man/man1, instead of printing `acptap.1`.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
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
pub(crate) struct DbArgs {
    /// The SQLite database [default: $XDG_DATA_HOME/acptap/acptap.db]
    #[arg(long, env = "ACPTAP_DB", value_name = "PATH")]
    pub db: Option<PathBuf>,
}

impl DbArgs {
    /// `--db`, else `$ACPTAP_DB` (clap reads both), else the config file's `db`, else the XDG
    /// default.
    pub(crate) fn path(&self) -> anyhow::Result<PathBuf> {
        super::resolve_db(
            self.db.clone(),
            config::current().db.clone(),
            super::default_db_path,
        )
        .context("cannot find a place for the database: set --db, ACPTAP_DB, `db` in the config file, XDG_DATA_HOME or HOME")
    }

    /// The database, for commands that change it (`prune`, `vacuum`, `migrate`).
    pub(crate) fn open(&self) -> anyhow::Result<Store> {
        Ok(Store::open_existing(&self.path()?)?)
    }

    /// The database, read-only, for the views.
    pub(crate) fn read(&self) -> anyhow::Result<Reader> {
        Ok(Reader::open(&self.path()?)?)
    }
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
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
    /// Send the session's spans over OTLP/HTTP while it runs (see docs/otlp.md): to URL, else
    /// to $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, $OTEL_EXPORTER_OTLP_ENDPOINT, the config file's
    /// `otlp.endpoint`, or http://localhost:4318.
    #[arg(long, value_name = "URL", num_args = 0..=1, default_missing_value = "")]
    pub otlp: Option<String>,
    /// When the agent has exited, check the recorded connection against the protocol and print
    /// the findings on stderr (see docs/check.md); the exit status stays the agent's.
    #[arg(long)]
    pub check: bool,
    /// Do not send spans, even if the config file's `otlp.run` says so.
    #[arg(long, conflicts_with = "otlp")]
    pub no_otlp: bool,
    /// With --otlp: an HTTP header for the collector, `NAME=VALUE` or `NAME: VALUE` (repeatable).
    #[arg(long = "otlp-header", value_name = "NAME=VALUE", value_parser = HeaderParser::default())]
    pub otlp_headers: Vec<(String, String)>,
    /// With --otlp: put tool calls' arguments and results, the prompts and the agent's messages
    /// (as recorded, so redacted) into the spans.
    #[arg(long)]
    pub otlp_tool_content: bool,
    /// Once the client has closed our stdin, how long the agent may take to exit before it gets
    /// SIGTERM (then SIGKILL after the same time again). E.g. 5s, 500ms.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration)]
    pub grace: Duration,
    /// The agent command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "AGENT")]
    pub agent: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// Sessions (an id, a unique prefix, or `last`: the session's whole connection is checked)
    /// or transcript files (`FILE.jsonl`, as `export` writes them) [default: last]
    #[arg(value_name = "SESSION|FILE")]
    pub sources: Vec<String>,
    /// Print JSON for scripts.
    #[arg(long)]
    pub json: bool,
    /// Also write the results as JUnit XML to FILE (a test case per rule), for CI.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Exit 1 when a finding is at least this severe.
    #[arg(long, value_enum, default_value = "error", value_name = "LEVEL")]
    pub fail_on: crate::check::Severity,
}

#[derive(Debug, Args)]
pub(crate) struct DiffArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// A session (an id, a unique prefix, or `last`) or a transcript file (`FILE.jsonl`).
    #[arg(value_name = "A")]
    pub a: String,
    /// The other, likewise.
    #[arg(value_name = "B")]
    pub b: String,
    /// Print JSON for scripts.
    #[arg(long)]
    pub json: bool,
    /// A turn whose duration moved by more than this is a difference (e.g. 2s, 500ms).
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration)]
    pub timing: Duration,
}

#[derive(Debug, Args)]
pub(crate) struct SearchArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// Words to find in what was said and done (prompts, agent text, tool titles, commands,
    /// paths, diffs), as one phrase, case-insensitive.
    #[arg(value_name = "TEXT")]
    pub text: Option<String>,
    /// Only tool calls of this kind (read, edit, execute, ...).
    #[arg(long = "tool", value_name = "KIND")]
    pub kind: Option<String>,
    /// Only tool calls with this status (pending, in_progress, completed, failed).
    #[arg(long, value_name = "STATUS")]
    pub status: Option<String>,
    /// Only tool calls touching a path matching this glob (`**/*.py`, `/home/me/project/**`).
    #[arg(long, value_name = "GLOB")]
    pub path: Option<String>,
    /// At most this many sessions (at least 1).
    #[arg(long, default_value_t = 50, value_parser = at_least_one)]
    pub limit: usize,
    /// Print JSON for scripts.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct UiArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// The port on 127.0.0.1 [default: a free one]
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Open the URL in the browser (xdg-open).
    #[arg(long)]
    pub open: bool,
}

#[derive(Debug, Args)]
pub(crate) struct RedactCheckArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// List what would be redacted (the only mode: nothing is ever rewritten).
    #[arg(long, required = true)]
    pub check: bool,
    /// A transcript (`.jsonl`, as `acptap export` writes) or any text file, or a recorded
    /// session (`last`, an id or a unique prefix).
    #[arg(value_name = "FILE|SESSION")]
    pub target: String,
    #[command(flatten)]
    pub redact: RedactArgs,
    /// Print JSON: one object per finding.
    #[arg(long)]
    pub json: bool,
}

/// What `replay --as client --compare` adds to the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum CompareMore {
    /// The agent's message text of each turn.
    Text,
}

#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Debug, Args)]
pub(crate) struct SessionsArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// How many sessions to list (at least 1).
    #[arg(long, default_value_t = 50, value_parser = at_least_one)]
    pub limit: usize,
    /// Print JSON for scripts.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ShowArgs {
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
pub(crate) struct ToolsArgs {
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
pub(crate) struct ReportArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// A session id, a unique prefix of one, or `last`.
    #[arg(value_name = "SESSION")]
    pub session: String,
    /// The HTML file to write [default: acptap-<session>.html in the current directory]
    #[arg(short, long, value_name = "FILE.html")]
    pub output: Option<PathBuf>,
    /// The turns to show, numbered from 1: `FROM-TO`, `FROM-` (to the end) or `all`. A longer
    /// session is paged: the page says which turns it shows and how to get the others.
    #[arg(long, value_name = "FROM-TO", default_value = "1-1000", value_parser = parse_turns)]
    pub turns: std::ops::Range<usize>,
}

#[derive(Debug, Args)]
pub(crate) struct TailArgs {
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
pub(crate) enum ColorArg {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Args)]
pub(crate) struct StatsArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// A session id, a unique prefix of one, or `last` [default: everything, or --since]
    #[arg(value_name = "SESSION", conflicts_with = "since")]
    pub session: Option<String>,
    /// Only connections started within this duration: 30m, 12h, 7d.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub since: Option<Duration>,
    /// Latency per request method and per tool kind, of one SESSION (`last` for the latest):
    /// count, failed, p50, p99, max, total and a distribution, the slowest and the failed first.
    #[arg(long, requires = "session", conflicts_with = "since")]
    pub by_method: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct PruneArgs {
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
pub(crate) struct DoctorArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// A policy file to load (repeatable); the config file's `policy` files are checked too.
    #[arg(long = "policy", value_name = "FILE")]
    pub policies: Vec<PathBuf>,
    /// An agent command to look for on PATH, or a path to one (repeatable).
    #[arg(long = "agent", value_name = "CMD")]
    pub agents: Vec<String>,
    /// A port on 127.0.0.1 that `acptap ui --port` would take, to try [default: none, as the UI
    /// picks a free one]
    #[arg(long)]
    pub port: Option<u16>,
    /// Print JSON: `{"checks":[{"name","ok","detail","fix"}...],"ok":bool}`.
    #[arg(long)]
    pub json: bool,
    /// An agent command and its arguments, after `--` (as `acptap run` takes it): the command is
    /// looked for.
    #[arg(last = true, value_name = "AGENT")]
    pub agent: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct DbOnlyArgs {
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ReplayRole {
    /// Play the recorded agent; a live client talks to acptap's stdin/stdout.
    Agent,
    /// Play the recorded client against a live agent started from the command after `--`.
    Client,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum SessionIds {
    /// Send the recorded session ids.
    Keep,
    /// Give each recorded session a new id.
    Rewrite,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum FsSource {
    /// Answer the agent's fs/* requests from the recording.
    Recorded,
    /// Serve the real file system.
    Real,
}

#[derive(Debug, Args)]
pub(crate) struct ReplayArgs {
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
    /// As agent: let the replay ask the live client to run the recorded commands
    /// (`terminal/*`, in the live cwd, the command and environment said on stderr first) and
    /// MCP tool calls (`mcp/message`); as client: give the agent the recorded MCP servers, which
    /// it starts (`session/new` and `session/load` sent as recorded, `_meta` included). A
    /// recording can name any command: replay only one you trust with this. Without it, those
    /// requests are not sent, and the agent gets `mcpServers: []`.
    #[arg(long)]
    pub run_recorded_commands: bool,
    /// As agent: send no `fs/write_text_file` at all (by default recorded writes are sent inside
    /// the live cwd, never to version-control or tool configuration).
    #[arg(long)]
    pub no_writes: bool,
    /// As client: the cwd sent in session/new [default: the recorded one]
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// As client: where the agent's fs/* requests are answered from.
    #[arg(long, value_enum, default_value = "recorded")]
    pub fs: FsSource,
    /// As client: once the recording is played, how long the agent may take to exit after its
    /// stdin is closed before it gets SIGTERM (then SIGKILL after the same time again), as in
    /// `run`. E.g. 5s, 500ms.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration)]
    pub grace: Duration,
    /// As client: how long to wait for the agent's answer to a request (and, in ACP v2, for its
    /// turn's `idle`) before giving up on it. E.g. 30s.
    #[arg(long, value_name = "DURATION", default_value = "120s", value_parser = parse_duration)]
    pub patience: Duration,
    /// As client: compare more than tool calls, stop reasons and permissions: `text`, the
    /// agent's message text of each turn (for a deterministic agent, a mock model in CI).
    #[arg(long, value_enum, value_name = "WHAT")]
    pub compare: Vec<CompareMore>,
    /// As client: the agent command and its arguments, after `--`.
    #[arg(last = true, value_name = "AGENT")]
    pub agent: Vec<String>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum ExportFormat {
    /// One JSON record a line: {"seq", "t", "dir", "eol", "text"}.
    Jsonl,
    /// The NDJSON trace of the ACP conductor, for `agent-client-protocol-trace-viewer`.
    Trace,
    /// OpenTelemetry spans of the session, sent over OTLP/HTTP to `--endpoint` (see docs/otlp.md).
    Otlp,
    /// The same spans as an OTLP/JSON file (one `ExportTraceServiceRequest`), sent nowhere.
    OtlpJson,
}

#[derive(Debug, Args)]
pub(crate) struct ExportArgs {
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
    /// With `--format otlp`: the collector's OTLP/HTTP endpoint (`/v1/traces` is added to a bare
    /// host) [default: $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else $OTEL_EXPORTER_OTLP_ENDPOINT,
    /// else http://localhost:4318]
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// With `--format otlp`: an HTTP header for the collector, `NAME=VALUE` or `NAME: VALUE`
    /// (repeatable), e.g. an API key; added to those of $OTEL_EXPORTER_OTLP_HEADERS and
    /// $OTEL_EXPORTER_OTLP_TRACES_HEADERS.
    #[arg(long = "header", value_name = "NAME=VALUE", value_parser = HeaderParser::default())]
    pub headers: Vec<(String, String)>,
    /// With `--format otlp`: put tool calls' arguments and results, the prompts and the agent's
    /// messages (as recorded, so redacted) into the spans [default: the config file's
    /// `otlp.tool_content`]
    #[arg(long)]
    pub tool_content: bool,
}

/// What is hidden from the recording: the same for `run` and `import`.
#[derive(Debug, Args)]
pub(crate) struct RedactArgs {
    /// Replace matches of this regex with [REDACTED:pattern] in what is recorded, never in what
    /// is forwarded (repeatable; adds to the config file's [redact] patterns).
    #[arg(long = "redact", value_name = "REGEX")]
    pub redact: Vec<String>,
    /// Do not redact secrets in known places (mcpServers env and headers, terminal env, _meta
    /// headers) and of known formats (API keys, tokens, JWTs, private keys, Authorization
    /// credentials).
    #[arg(long)]
    pub no_default_redact: bool,
}

impl RedactArgs {
    /// The redactor: the config file's patterns, then these, and the defaults unless turned off.
    pub(crate) fn redactor(
        &self,
        config: &config::Config,
    ) -> anyhow::Result<crate::record::redact::Redactor> {
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
        .map_err(anyhow::Error::from)
    }
}

#[derive(Debug, Args)]
pub(crate) struct ImportArgs {
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
pub(crate) struct DemoArgs {
    /// The SQLite database to record into [default: $ACPTAP_DB, else a new temporary file]
    #[arg(long, env = "ACPTAP_DB", value_name = "PATH")]
    pub db: Option<PathBuf>,
}

/// The longest duration any option takes: beyond it, arithmetic on times would overflow.
const LONGEST: Duration = Duration::from_secs(100 * 365 * 86_400);

/// A count of things to show: 0 would show nothing and say that nothing is there.
fn at_least_one(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("`0` shows nothing: give at least 1".to_owned()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("`{text}` is not a count ({e})")),
    }
}

/// A duration with its unit (`5s`, `500ms`, `2m`, `12h`, `30d`, `1h 30m`), read by `humantime`,
/// at most 100 years. A bare number is refused: `30` could be seconds or days.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
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
pub(crate) fn parse_interval(text: &str) -> Result<Duration, String> {
    let interval = parse_duration(text)?;
    if interval < Duration::from_millis(10) {
        return Err(format!(
            "`{text}` is too short: the interval is at least 10ms"
        ));
    }
    Ok(interval)
}

/// An HTTP header, `NAME=VALUE` or, as curl and HTTP write it, `NAME: VALUE` (split at the
/// first `=` or `:`: a header name holds neither). The error never shows the text: it is often
/// an API key or a password.
pub(crate) fn parse_header(text: &str) -> Result<(String, String), String> {
    let (name, value) = text.split_once(['=', ':']).ok_or_else(|| {
        "it has no `=`: write NAME=VALUE (or NAME: VALUE); its text is not shown, as it may \
         hold a secret"
            .to_owned()
    })?;
    let (name, value) = (name.trim(), value.trim());
    crate::export::otlp::check_header(name, value).map_err(|e| {
        if crate::export::otlp::is_header_name(name) {
            e.to_string()
        } else {
            format!("{e}: write NAME=VALUE (or NAME: VALUE)")
        }
    })?;
    Ok((name.to_owned(), value.to_owned()))
}

/// The clap parser of `--header` and `--otlp-header`: [`parse_header`], with an error that names
/// the header by its place on the command line ("the 2nd --header"). A `value_parser` function's
/// error is printed by clap after `invalid value '<the text>'`, which would show the header's
/// value (an API key) on the terminal and in logs.
#[derive(Clone, Default)]
pub(crate) struct HeaderParser {
    /// The headers of this option parsed so far (clap parses them in order).
    seen: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl clap::builder::TypedValueParser for HeaderParser {
    type Value = (String, String);

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Self::Value, clap::Error> {
        let place = self.seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let option = arg
            .and_then(clap::Arg::get_long)
            .map_or_else(|| "--header".to_owned(), |long| format!("--{long}"));
        let parsed = match value.to_str() {
            Some(text) => parse_header(text),
            None => Err("it is not UTF-8 text; write NAME=VALUE (or NAME: VALUE)".to_owned()),
        };
        parsed.map_err(|why| {
            clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("the {} {option} is refused: {why}\n", ordinal(place)),
            )
            .with_cmd(cmd)
        })
    }
}

/// `1st`, `2nd`, `3rd`, `4th`, ... `11th`, `12th`, `13th`, ... `21st`.
fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// Turns numbered from 1, `FROM-TO` (inclusive), `FROM-` or `all`, as a range from 0.
pub(crate) fn parse_turns(text: &str) -> Result<std::ops::Range<usize>, String> {
    let text = text.trim();
    if text == "all" {
        return Ok(0..usize::MAX);
    }
    let usage = || format!("`{text}` is not a range of turns: write e.g. 1-1000, 2001- or all");
    let (from, to) = text.split_once('-').ok_or_else(usage)?;
    let from: usize = from.trim().parse().map_err(|_| usage())?;
    let to: usize = match to.trim() {
        "" => usize::MAX,
        to => to.parse().map_err(|_| usage())?,
    };
    if from == 0 || to < from {
        return Err(format!(
            "`{text}` is not a range of turns: turns are numbered from 1, and FROM must not be after TO"
        ));
    }
    Ok(from - 1..to)
}

/// A replay speed: from 0.001 (a thousand times slower than recorded) to 1,000,000.
pub(crate) fn parse_speed(text: &str) -> Result<f64, String> {
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

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    /// The error of `acptap ARGS`, as clap prints it.
    fn refusal(args: &[&str]) -> String {
        let error = Cli::try_parse_from(std::iter::once("acptap").chain(args.iter().copied()))
            .err()
            .unwrap_or_else(|| panic!("{args:?} was taken"));
        assert_eq!(error.exit_code(), 2, "{args:?}");
        error.to_string()
    }

    #[test]
    fn a_bad_header_is_refused_by_its_place_and_name_never_its_value() {
        fn with<'a>(extra: &[&'a str]) -> Vec<&'a str> {
            [&["export", "last", "--format", "otlp"][..], extra].concat()
        }
        for (args, named) in [
            (with(&["--header", "SeCrEtPw9"]), "the 1st --header"),
            (
                with(&["--header", "Bearer SeCrEtPw9=x"]),
                "the 1st --header",
            ),
            (
                with(&["--header", "a=b", "--header", "x-api-key SeC=rEt"]),
                "the 2nd --header",
            ),
            (
                vec!["run", "--otlp", "--otlp-header", "SeCrEtPw9", "--", "true"],
                "the 1st --otlp-header",
            ),
        ] {
            let said = refusal(&args);
            assert!(said.contains(named), "{args:?}: {said}");
            assert!(said.contains("NAME=VALUE"), "{args:?}: {said}");
            for secret in ["SeCrEt", "SeC", "rEt"] {
                assert!(!said.contains(secret), "{args:?}: {said}");
            }
            assert!(!said.contains("invalid value"), "{args:?}: {said}");
        }
        for value in ["x-api-key=SeC\rrEt", "x-api-key: SeC\nrEt"] {
            let said = refusal(&with(&["--header", value]));
            assert!(
                said.contains("the 1st --header")
                    && said.contains("`x-api-key`")
                    && said.contains("line break")
                    && !said.contains("SeC")
                    && !said.contains("rEt"),
                "{said}"
            );
        }
    }

    #[test]
    fn a_header_is_name_equals_value_or_name_colon_value() {
        assert_eq!(
            parse_header("Authorization: Bearer a=b:c").unwrap(),
            ("Authorization".into(), "Bearer a=b:c".into())
        );
        assert_eq!(
            parse_header(" X-Api-Key = k:1= ").unwrap(),
            ("X-Api-Key".into(), "k:1=".into())
        );
        let cli = Cli::try_parse_from([
            "acptap", "export", "last", "--format", "otlp", "--header", "a=1", "--header", "b: 2",
        ])
        .unwrap();
        let Command::Export(export) = cli.command else {
            panic!("not an export");
        };
        assert_eq!(
            export.headers,
            [("a".into(), "1".into()), ("b".into(), "2".into())]
        );
        assert_eq!(
            (1..=4).map(ordinal).collect::<Vec<_>>(),
            ["1st", "2nd", "3rd", "4th"]
        );
        assert_eq!(ordinal(11), "11th");
        assert_eq!(ordinal(12), "12th");
        assert_eq!(ordinal(22), "22nd");
        assert_eq!(ordinal(113), "113th");
    }
}
