//! `acptap check`, and `acptap run --check`: conversations against the protocol; and
//! `acptap diff`: two conversations against each other.

use anyhow::Context;

use crate::check::output::{self, Checked};
use crate::check::{self, Direction, Line, Severity};
use crate::query;
use crate::query::Reader;

use super::super::config::Config;
use super::super::{CheckArgs, DiffArgs, json_text, print, write_private};

/// The lines of one conversation, as owned bytes with their direction (stderr left out).
type Lines = Vec<(i64, Direction, Vec<u8>)>;

/// A recorded connection's lines.
fn recorded_lines(reader: &Reader, connection_id: i64) -> anyhow::Result<Lines> {
    Ok(query::connection_lines(reader, connection_id)?
        .into_iter()
        .filter_map(|l| Some((l.seq, l.direction.on_the_pipe()?, l.raw)))
        .collect())
}

/// A transcript file's lines.
fn transcript_lines(path: &std::path::Path) -> anyhow::Result<Lines> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let records = crate::record::transcript::parse(&text)
        .with_context(|| format!("{} is not a transcript", path.display()))?;
    let mut lines = Vec::new();
    for (i, record) in records.iter().enumerate() {
        let Some(direction) =
            Direction::from_recorded(&record.dir).and_then(Direction::on_the_pipe)
        else {
            continue;
        };
        let bytes = record
            .bytes()
            .map_err(|e| anyhow::anyhow!("{}: record {}: {e}", path.display(), i + 1))?;
        lines.push((record.seq.unwrap_or(i as i64), direction, bytes));
    }
    Ok(lines)
}

/// Checks `lines` and applies the config's silences.
fn checked(source: String, lines: &Lines, config: &Config) -> Checked {
    let outcome = check::check(lines.iter().map(|(seq, direction, raw)| Line {
        seq: *seq,
        direction: *direction,
        raw,
    }));
    let agent = outcome.agent;
    let (findings, silenced): (Vec<_>, Vec<_>) = outcome
        .findings
        .into_iter()
        .partition(|f| !config.check.silenced(agent.as_deref(), f.rule));
    Checked {
        source,
        agent,
        lines: lines.len(),
        findings,
        silenced: silenced.len(),
    }
}

/// `acptap check`.
pub(in crate::cli) fn check(args: CheckArgs, config: &Config) -> anyhow::Result<i32> {
    config.check.validate()?;
    let sources = if args.sources.is_empty() {
        vec!["last".to_owned()]
    } else {
        args.sources
    };
    let mut reader: Option<Reader> = None;
    let mut results = Vec::new();
    for source in &sources {
        let path = std::path::Path::new(source);
        if path.is_file() {
            results.push(checked(source.clone(), &transcript_lines(path)?, config));
            continue;
        }
        if source.ends_with(".jsonl") {
            anyhow::bail!(
                "{source}: no such file (a transcript to check, as `acptap export` writes them)"
            );
        }
        if reader.is_none() {
            reader = Some(args.db.read()?);
        }
        let reader = reader.as_ref().expect("opened above");
        let session = query::resolve_session(reader, source)?;
        let lines = recorded_lines(reader, session.connection_id)?;
        results.push(checked(session.session_id, &lines, config));
    }
    if let Some(path) = &args.junit {
        write_private(path, output::junit(&results, args.fail_on).as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if args.json {
        print(&format!(
            "{}\n",
            json_text(&serde_json::json!({
                "fail_on": args.fail_on,
                "results": results,
            }))?
        ))?;
    } else {
        print(&output::text(&results, args.fail_on))?;
    }
    let failing = results
        .iter()
        .flat_map(|c| &c.findings)
        .any(|f| f.severity >= args.fail_on);
    Ok(if failing { 1 } else { 0 })
}

/// `acptap run --check`: the recorded connection, checked once it has ended; findings on stderr.
pub(in crate::cli) fn after_run(db: &std::path::Path, connection_id: i64, config: &Config) {
    let report = (|| -> anyhow::Result<String> {
        let reader = Reader::open(db)?;
        let lines = recorded_lines(&reader, connection_id)?;
        let result = checked(format!("connection {connection_id}"), &lines, config);
        Ok(output::text(&[result], Severity::Error))
    })();
    match report {
        Ok(text) => {
            for line in text.lines() {
                eprintln!("acptap check: {line}");
            }
        }
        Err(e) => eprintln!("acptap check: cannot check connection {connection_id}: {e}"),
    }
}

/// A transcript imported into a database of its own, removed when dropped.
struct Scratch(std::path::PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.0.display()));
        }
    }
}

/// The shape of `source`: a transcript file (imported into a scratch database, the same way
/// `acptap import` does) or a recorded session.
fn shape_of(
    source: &str,
    args: &DiffArgs,
    which: &str,
) -> anyhow::Result<crate::query::compare::Shape> {
    let path = std::path::Path::new(source);
    if path.is_file() {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let records = crate::record::transcript::parse(&text)
            .with_context(|| format!("{} is not a transcript", path.display()))?;
        let scratch = Scratch(
            std::env::temp_dir().join(format!("acptap-diff-{}-{which}.db", std::process::id())),
        );
        drop(Scratch(scratch.0.clone()));
        let mut store = crate::record::Store::open(&scratch.0)?;
        let connection_id = crate::record::transcript::import(
            &mut store,
            &records,
            crate::record::ConnectionStart {
                label: None,
                command: vec!["import".into(), path.display().to_string()],
                cwd: None,
                pid: None,
                started_at: 0,
                replay_of: None,
            },
            &crate::record::redact::Redactor::default_only(),
        )?;
        drop(store);
        let reader = Reader::open(&scratch.0)?;
        let session = query::announced_sessions(&reader, connection_id)?
            .into_iter()
            .next()
            .ok_or_else(|| anyhow::anyhow!("{}: the transcript has no session", path.display()))?;
        let session = query::SessionRef {
            connection_id,
            session_id: session,
        };
        return Ok(crate::query::compare::shape(&reader, &session)?);
    }
    if source.ends_with(".jsonl") {
        anyhow::bail!("{source}: no such file (a transcript, as `acptap export` writes them)");
    }
    let reader = args.db.read()?;
    let session = query::resolve_session(&reader, source)?;
    Ok(crate::query::compare::shape(&reader, &session)?)
}

/// `acptap diff`.
pub(in crate::cli) fn diff(args: DiffArgs, _config: &Config) -> anyhow::Result<i32> {
    let a = shape_of(&args.a, &args, "a")?;
    let b = shape_of(&args.b, &args, "b")?;
    let threshold = i64::try_from(args.timing.as_micros()).unwrap_or(i64::MAX);
    let differences = crate::query::compare::compare(&a, &b, threshold);
    if args.json {
        print(&format!(
            "{}\n",
            json_text(&serde_json::json!({
                "a": a.session_id,
                "b": b.session_id,
                "same": differences.is_empty(),
                "differences": differences,
            }))?
        ))?;
    } else {
        print(&crate::query::compare::render(&a, &b, &differences))?;
    }
    Ok(if differences.is_empty() { 0 } else { 1 })
}
