//! `acptap replay`: a recording played as the agent or as the client.

use crate::query;

use super::super::config::Config;
use super::super::{FsSource, ReplayArgs, ReplayRole, SessionIds, print};

/// `acptap replay`.
pub(in crate::cli) fn replay(args: ReplayArgs, _config: &Config) -> anyhow::Result<i32> {
    let reader = args.db.read()?;
    let session = query::resolve_session(&reader, &args.session)?;
    let script = crate::replay::script::load(&reader, session.connection_id)?;
    match args.role {
        ReplayRole::Agent => {
            if !args.agent.is_empty() {
                anyhow::bail!("`--as agent` plays the agent itself: drop the command after `--`");
            }
            let report = crate::replay::agent::replay_as_agent(
                &script,
                std::io::BufReader::new(std::io::stdin()),
                std::io::stdout().lock(),
                crate::replay::agent::AgentReplayOptions {
                    speed: args.speed,
                    strict: args.strict,
                    rewrite_session_ids: args.session_ids == SessionIds::Rewrite,
                    allow: crate::replay::outbound::Allowances {
                        run_commands: args.run_recorded_commands,
                        writes: !args.no_writes,
                    },
                },
            )?;
            // The summary goes to stderr: stdout is the protocol.
            eprint!("{}", report.render());
            // 0 the same, 1 divergent, 2 could not replay (an error).
            Ok(if report.differences.is_empty() { 0 } else { 1 })
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
                    grace: args.grace,
                    patience: args.patience,
                    compare_text: args.compare.contains(&super::super::CompareMore::Text),
                    run_recorded_commands: args.run_recorded_commands,
                },
            )?;
            print(&report.render())?;
            // A CI gate: 0 when the live agent did what was recorded, 1 when it did not.
            Ok(if report.is_empty() { 0 } else { 1 })
        }
    }
}
