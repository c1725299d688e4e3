//! `acptap run`: the proxy between the client on our stdio and the agent.

use crate::proxy;
use crate::proxy::RunOptions;
use crate::record::Destination;

use super::super::RunArgs;
use super::super::config::Config;

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
