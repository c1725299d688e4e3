//! `acptap run`: the proxy between the client on our stdio and the agent.

use std::time::Duration;

use crate::export::live::{LiveExport, LiveStats};
use crate::export::otlp::Endpoint;
use crate::export::spans::SpanOptions;
use crate::proxy;
use crate::proxy::RunOptions;
use crate::record::Destination;

use super::super::RunArgs;
use super::super::config::Config;

/// When the agent has gone, how long the collector may take to receive the last spans.
const OTLP_FINISH_PATIENCE: Duration = Duration::from_secs(3);

/// Says on stderr what the live export could not send, and how to send it now. Every line
/// goes through the endpoint's mask: the URL's credentials are never shown.
fn report_lost_spans(stats: &LiveStats, endpoint: &Endpoint, db: &std::path::Path) {
    if stats.lost == 0 {
        return;
    }
    let url = endpoint.shown();
    let why = stats
        .last_error
        .as_deref()
        .unwrap_or("the collector did not answer in time");
    eprintln!(
        "{}",
        endpoint.mask(&format!(
            "acptap: {} of {} span(s) were not sent to {url} ({why}); the recording has them all",
            stats.lost, stats.spans
        ))
    );
    for session in &stats.sessions {
        eprintln!(
            "{}",
            endpoint.mask(&format!(
                "acptap: send them with: acptap export --db {} {} --format otlp --endpoint {}",
                shell_word(&db.to_string_lossy()),
                shell_word(&crate::inspect::terminal_line(
                    session,
                    crate::inspect::NAME_BYTES
                )),
                shell_word(&url),
            ))
        );
    }
    if url != endpoint.url {
        eprintln!(
            "acptap: in that command, put the endpoint's credentials back where it shows ***"
        );
    }
}

/// Points our stdout at /dev/null, so that the client reading it sees its end (the proxy's own
/// copy of it is closed once written) while acptap still has work to finish.
fn release_stdout() {
    use std::os::fd::AsRawFd;
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        // SAFETY: dup2 onto our own stdout descriptor, which stays valid (now /dev/null).
        unsafe {
            libc::dup2(null.as_raw_fd(), libc::STDOUT_FILENO);
        }
    }
}

/// `word` as one shell word: as it is when it is plain, else in single quotes.
fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:@%+=,".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// `acptap run`.
pub(in crate::cli) fn run(args: RunArgs, config: &Config) -> anyhow::Result<i32> {
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
    let args_check = args.check;
    if args.check {
        config.check.validate()?;
        if args.no_record {
            anyhow::bail!(
                "--check checks the recording, and --no-record records nothing: drop one of them"
            );
        }
    }
    let recorded_as = std::sync::Arc::new(std::sync::OnceLock::new());
    let live = if !args.no_otlp && (args.otlp.is_some() || config.otlp.run) {
        let Destination::Database(db) = &destination else {
            anyhow::bail!(
                "--otlp sends spans built from the recording, and --no-record records nothing: \
                 drop one of them"
            );
        };
        let url = args.otlp.as_deref().filter(|url| !url.is_empty());
        let endpoint = config.otlp.endpoint(url, args.otlp_headers)?;
        let options = SpanOptions {
            tool_content: args.otlp_tool_content || config.otlp.tool_content,
            window: Default::default(),
        };
        let live = LiveExport::start(db.clone(), recorded_as.clone(), &endpoint, options)?;
        Some((live, endpoint))
    } else {
        None
    };
    let outcome = proxy::run(
        RunOptions {
            agent: args.agent,
            destination: destination.clone(),
            label: args.label,
            eof_grace: args.grace,
            kill_grace: args.grace,
            policy,
            shadow: args.shadow,
            redactor,
            recorded_as: live.is_some().then_some(recorded_as),
            replay_of: None,
        },
        proxy::ClientStreams::stdio()?,
    )?;
    if let (true, Some(id), Destination::Database(db)) =
        (args_check, outcome.connection_id, &destination)
    {
        super::check::after_run(db, id, config);
    }
    if let (Some((live, endpoint)), Destination::Database(db)) = (live, &destination) {
        // The client has had every byte; it sees the end of our stdout now, not after the wait
        // for the collector.
        release_stdout();
        report_lost_spans(&live.finish(OTLP_FINISH_PATIENCE), &endpoint, db);
    }
    Ok(outcome.exit_code)
}
