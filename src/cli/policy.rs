//! `acptap policy check | test | replay | suggest`: trying a policy out before trusting it, and
//! one learned from the user's own answers.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use serde::Serialize;
use serde_json::Value;

use super::{DbArgs, print, print_json};
use crate::inspect::{VALUE_BYTES, one_line, terminal_line};
use crate::policy::{Context, Decision, Policy, Redecided, Verdict};
use crate::query::{self, RecordedPermission};

#[derive(Debug, Args)]
pub(crate) struct PolicyArgs {
    #[command(subcommand)]
    pub command: PolicyCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum PolicyCommand {
    /// Decide one permission request (a file with its params, or the whole JSON-RPC message).
    Check(PolicyCheckArgs),
    /// Run the `match` / `not_match` examples and `[[test]]` blocks of policy files.
    Test(TestArgs),
    /// Decide every recorded permission request again and compare with what the user chose.
    Replay(PolicyReplayArgs),
    /// Write a policy learned from the requests you answered: it allows what you allowed often
    /// enough, as narrowly as you did, and nothing you rejected or cancelled.
    Suggest(PolicySuggestArgs),
}

#[derive(Debug, Args)]
pub(crate) struct PolicyCheckArgs {
    /// A policy file (repeatable; rules are taken in order).
    #[arg(long = "policy", value_name = "FILE", required = true)]
    pub policies: Vec<PathBuf>,
    /// The request: params of a session/request_permission, or the whole message.
    #[arg(long, value_name = "REQUEST.json")]
    pub request: PathBuf,
    /// The session's cwd [default: the current directory]
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// The agent's name as its `initialize` answer gives it (`agentInfo.name`). It changes
    /// decisions for Claude Code (a name containing `claude`), opencode (`opencode`), fast-agent
    /// (`fast-agent`), gemini-cli (exactly `gemini-cli`) and kimi-cli (exactly `Kimi Code
    /// CLI`); case, spaces, an npm `@scope/` and an `@version` do not matter.
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// Print JSON: {"decision", "rule", "optionId", "reason"}.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct TestArgs {
    /// Policy files.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct PolicyReplayArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// A policy file (repeatable).
    #[arg(long = "policy", value_name = "FILE", required = true)]
    pub policies: Vec<PathBuf>,
    /// A session id, a unique prefix, `last`, or `all`.
    #[arg(value_name = "SESSION", default_value = "all")]
    pub session: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct PolicySuggestArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// Only requests asked in this last while (`7d`, `12h`).
    #[arg(long, value_name = "DURATION", value_parser = super::parse_duration)]
    pub since: Option<std::time::Duration>,
    /// Only sessions of agents whose name (from `initialize`) contains TEXT (any case).
    #[arg(long, value_name = "TEXT")]
    pub agent: Option<String>,
    /// Only this session (an id, a unique prefix, or `last`; repeatable).
    #[arg(long = "session", value_name = "SESSION")]
    pub sessions: Vec<String>,
    /// How many times a request's shape must have been allowed (`allow_always` counts twice).
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub min_evidence: u32,
    /// Write the policy to FILE (never over an existing file); without it, the policy goes to
    /// stdout and the report to stderr.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Print the report as JSON (with the policy's text in `policy`).
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn run(args: PolicyArgs) -> anyhow::Result<i32> {
    match args.command {
        PolicyCommand::Check(args) => check(args),
        PolicyCommand::Test(args) => test(args),
        PolicyCommand::Replay(args) => replay(args),
        PolicyCommand::Suggest(args) => suggest(args),
    }
}

fn check(args: PolicyCheckArgs) -> anyhow::Result<i32> {
    let policy = Policy::load(&args.policies)?;
    // A request is one line of the protocol: acptap records at most 64 MiB of one.
    const MAX_REQUEST_BYTES: u64 = 64 << 20;
    let text =
        crate::policy::rules::read_regular_file(&args.request, "request file", MAX_REQUEST_BYTES)
            .with_context(|| format!("cannot read {}", args.request.display()))?;
    let request: Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not JSON", args.request.display()))?;
    let params = crate::policy::request_params(&request);
    let cwd = match args.cwd {
        Some(cwd) => cwd,
        None => std::env::current_dir()?,
    };
    let mut input = crate::policy::DecisionInput::new(
        params,
        None,
        Context {
            cwd: Some(&cwd),
            agent: args.agent.as_deref(),
            ..Default::default()
        },
        None,
    );
    // As `acptap run` reads it: a key named twice is read differently by different peers.
    if crate::protocol::message::has_duplicate_keys(text.as_bytes()) == Some(true) {
        input
            .left_to_user
            .get_or_insert((None, crate::policy::DUPLICATE_KEYS.into()));
    }
    let verdict = policy.decide_input(&input, params.get("options"));
    if args.json {
        print_json(&verdict)?;
    } else {
        // The option and the reason quote the request (an agent's words): each on its line.
        let line = |text: &str| terminal_line(text, VALUE_BYTES).into_owned();
        print(&format!(
            "decision: {}\nrule:     {}\noption:   {}\nreason:   {}\n",
            verdict.decision,
            line(verdict.rule.as_deref().unwrap_or("-")),
            match (&verdict.option_id, &verdict.option_kind) {
                (Some(id), Some(kind)) => format!("{} ({})", line(id), line(kind)),
                _ => "- (the request goes to the user)".into(),
            },
            line(&verdict.reason)
        ))?;
    }
    Ok(0)
}

fn test(args: TestArgs) -> anyhow::Result<i32> {
    let policy = Policy::load_unchecked(&args.files)?;
    let results = policy.self_check();
    let failed = results.iter().filter(|r| !r.passed).count();
    if args.json {
        print_json(&results)?;
    } else {
        let mut out = String::new();
        for r in &results {
            let mark = if r.passed { "ok  " } else { "FAIL" };
            out.push_str(&format!("{mark} {} ({})\n", r.name, r.origin));
            if !r.passed {
                out.push_str(&format!("     {}\n", r.detail));
            }
        }
        out.push_str(&format!(
            "{} passed, {failed} failed\n",
            results.len() - failed
        ));
        print(&out)?;
    }
    Ok(if failed == 0 { 0 } else { 1 })
}

/// One recorded request decided again.
#[derive(Debug, Serialize)]
struct Replayed {
    category: &'static str,
    connection_id: i64,
    /// The request's line number in its connection.
    request_seq: i64,
    session_id: Option<String>,
    tool_call_id: Option<String>,
    title: Option<String>,
    kind: Option<String>,
    policy: Verdict,
    user: String,
    decided_by: Option<String>,
    /// `recorded`: decided on the live decision's own input; `reconstructed`: from the
    /// recorded lines (a request recorded without a policy).
    input: &'static str,
}

fn replay(args: PolicyReplayArgs) -> anyhow::Result<i32> {
    let policy = Policy::load(&args.policies)?;
    let reader = args.db.read()?;
    let session = match args.session.as_str() {
        "all" => None,
        spec => Some(query::resolve_session(&reader, spec)?),
    };
    let mut rows: Vec<Replayed> = query::recorded_permissions(&reader, session.as_ref())?
        .into_iter()
        .filter_map(|recorded| decide_again(&policy, recorded))
        .collect();
    // The dangerous disagreement first: the policy would have allowed what the user refused.
    let rank = |c: &str| match c {
        "would-allow-but-user-rejected" => 0,
        "would-deny-but-user-allowed" => 1,
        "would-ask" => 2,
        _ => 3,
    };
    rows.sort_by_key(|r| rank(r.category));
    if args.json {
        print_json(&rows)?;
        return Ok(0);
    }
    let mut out = String::new();
    for r in &rows {
        out.push_str(&format!(
            "{:<30} {:<8} {:<28} policy {} ({}) · user {}\n",
            r.category,
            one_line(r.kind.as_deref().unwrap_or("-"), 20),
            one_line(
                r.title
                    .as_deref()
                    .or(r.tool_call_id.as_deref())
                    .unwrap_or("?"),
                28
            ),
            r.policy.decision,
            one_line(r.policy.rule.as_deref().unwrap_or("default"), 40),
            one_line(&r.user, 40),
        ));
    }
    let count = |c: &str| rows.iter().filter(|r| r.category == c).count();
    out.push_str(&format!(
        "{} requests: {} would allow but the user rejected, {} would deny but the user allowed, {} would ask, {} agree\n",
        rows.len(),
        count("would-allow-but-user-rejected"),
        count("would-deny-but-user-allowed"),
        count("would-ask"),
        count("agrees"),
    ));
    print(&out)?;
    Ok(0)
}

fn decide_again(policy: &Policy, recorded: RecordedPermission) -> Option<Replayed> {
    let Redecided {
        verdict,
        input,
        source,
    } = policy.decide_recorded(
        &recorded.request,
        recorded.policy_input.as_deref(),
        &recorded.earlier_updates,
        Context {
            cwd: recorded.cwd.as_deref().map(std::path::Path::new),
            agent: recorded.agent_name.as_deref(),
            version: recorded.protocol_version,
        },
    )?;
    let state = input.tool_call.as_ref();
    let field = |name: &str| {
        state.and_then(|c| c.get(name)).map(|v| {
            v.as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| v.to_string())
        })
    };
    let user = match (recorded.outcome.as_deref(), recorded.option_kind.as_deref()) {
        (Some("selected"), Some(kind)) => kind.to_owned(),
        (Some(outcome), _) => outcome.to_owned(),
        (None, _) => "no answer".to_owned(),
    };
    let user_allowed = user.starts_with("allow");
    let category = match verdict.decision {
        Decision::Allow if !user_allowed => "would-allow-but-user-rejected",
        Decision::Deny if user_allowed => "would-deny-but-user-allowed",
        Decision::Ask => "would-ask",
        _ => "agrees",
    };
    Some(Replayed {
        category,
        connection_id: recorded.connection_id,
        request_seq: recorded.request_seq,
        session_id: recorded.session_id,
        tool_call_id: recorded.tool_call_id,
        title: field("title"),
        kind: field("kind"),
        policy: verdict,
        user,
        decided_by: recorded.decided_by,
        input: source,
    })
}

fn suggest(args: PolicySuggestArgs) -> anyhow::Result<i32> {
    if let Some(file) = &args.output
        && std::fs::symlink_metadata(file).is_ok()
    {
        anyhow::bail!(
            "{} exists: acptap policy suggest never writes over a file (or a directory, or a link); name a new one (-o)",
            file.display()
        );
    }
    let reader = args.db.read()?;
    let mut filter = query::AnsweredFilter {
        agent: args.agent.clone(),
        ..Default::default()
    };
    for spec in &args.sessions {
        filter.sessions.push(query::resolve_session(&reader, spec)?);
    }
    if let Some(since) = args.since {
        let age = i64::try_from(since.as_micros()).unwrap_or(i64::MAX);
        filter.since = Some(crate::record::now_us().saturating_sub(age));
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let suggestion = crate::learn::suggestion(
        &reader,
        &filter,
        args.min_evidence as usize,
        home.as_deref(),
    )?;
    if let Some(file) = &args.output {
        write_new_file(file, &suggestion.policy)?;
    }
    if args.json {
        print_json(&suggestion)?;
        return Ok(0);
    }
    let report = suggest_report(&suggestion, args.output.as_deref());
    match &args.output {
        Some(_) => print(&report)?,
        None => {
            print(&suggestion.policy)?;
            eprint!("{report}");
        }
    }
    Ok(0)
}

/// Creates `file` with `text`; never over an existing file or through a link.
fn write_new_file(file: &std::path::Path, text: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    // Readable by its owner only, as every file acptap writes with -o.
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(file)
        .with_context(|| format!("cannot create {}", file.display()))?;
    out.write_all(text.as_bytes())
        .with_context(|| format!("cannot write {}", file.display()))?;
    Ok(())
}

/// The terminal table: the rules with their evidence, the conflicts, what is left to the user.
fn suggest_report(
    suggestion: &crate::policy::suggest::Suggestion,
    file: Option<&std::path::Path>,
) -> String {
    use crate::policy::suggest::describe;
    let c = &suggestion.coverage;
    let mut out = String::new();
    out.push_str(&format!(
        "{} rule(s){}; it would have answered {} of your {} allows ({}%), and allows none of your {} rejections or cancellations\n",
        suggestion.rules.len(),
        file.map(|f| format!(" written to {}", f.display())).unwrap_or_default(),
        c.allowed,
        c.user_allows,
        (c.allowed * 100).checked_div(c.user_allows).unwrap_or(0),
        c.user_refusals,
    ));
    if !suggestion.rules.is_empty() {
        out.push_str("\nRULE                             ALLOWS  SESSIONS  WHAT\n");
    }
    for rule in &suggestion.rules {
        let e = &rule.evidence;
        out.push_str(&format!(
            "{:<32} {:>6}  {:>8}  {} (e.g. {})\n",
            one_line(&rule.id, 32),
            e.allow_once + e.allow_always,
            e.sessions,
            one_line(&describe(&rule.shape), 60),
            one_line(&e.example, 60),
        ));
    }
    if !suggestion.conflicts.is_empty() {
        out.push_str("\nConflicts, left to you (allowed and refused):\n");
        for conflict in &suggestion.conflicts {
            let e = &conflict.evidence;
            out.push_str(&format!(
                "  {}: allowed {}, rejected {}, cancelled {} (e.g. {})\n",
                one_line(&describe(&conflict.shape), 60),
                e.allow_once + e.allow_always,
                e.rejected,
                e.cancelled,
                one_line(&e.example, 60),
            ));
        }
    }
    if !suggestion.left_to_user.is_empty() {
        out.push_str("\nStill asked (your allows it does not answer):\n");
        for left in &suggestion.left_to_user {
            out.push_str(&format!(
                "  {:>4}  {} (e.g. {})\n",
                left.count,
                one_line(&left.why, 100),
                one_line(&left.example, 60)
            ));
        }
    }
    out
}
