//! `acptap check`, and `acptap run --check`: conversations against the protocol; and
//! `acptap diff`: two conversations against each other.

use anyhow::Context;

use crate::check::output::{self, Checked};
use crate::check::{self, Direction, Line, Severity};
use crate::query;
use crate::query::Reader;
use crate::query::findings::{self, CheckedConnection};

use super::super::config::Config;
use super::super::{CheckArgs, DiffArgs, json_text, print, write_private};

/// The lines of one conversation, as owned bytes with their direction (stderr left out).
type Lines = Vec<(i64, Direction, Vec<u8>)>;

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

/// What checking found, with the config's silences applied: `lines` lines checked, of
/// `source`. The UI's findings silence the same way (`query::findings::session_findings`).
fn checked(source: String, mut outcome: check::Outcome, lines: usize, config: &Config) -> Checked {
    let silenced = outcome.silence(|agent, rule| config.check.silenced(agent, rule));
    Checked {
        source,
        agent: outcome.agent,
        lines,
        findings: outcome.findings,
        silenced,
    }
}

/// A transcript file, checked.
fn checked_transcript(
    source: String,
    path: &std::path::Path,
    config: &Config,
) -> anyhow::Result<Checked> {
    let lines = transcript_lines(path)?;
    let outcome = check::check(lines.iter().map(|(seq, direction, raw)| Line {
        seq: *seq,
        direction: *direction,
        raw,
    }));
    Ok(checked(source, outcome, lines.len(), config))
}

/// A recorded connection, checked (read from the database a line at a time).
fn checked_recorded(
    source: String,
    reader: &Reader,
    connection_id: i64,
    config: &Config,
) -> rusqlite::Result<Checked> {
    let CheckedConnection { outcome, lines } = findings::check_connection(reader, connection_id)?;
    Ok(checked(source, outcome, lines, config))
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
            results.push(checked_transcript(source.clone(), path, config)?);
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
        results.push(checked_recorded(
            session.session_id,
            reader,
            session.connection_id,
            config,
        )?);
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
        let result = checked_recorded(
            format!("connection {connection_id}"),
            &reader,
            connection_id,
            config,
        )?;
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
    let report = crate::query::compare::report(&a, &b, threshold);
    if args.json {
        print(&format!("{}\n", json_text(&report)?))?;
    } else {
        print(&crate::query::compare::render(&a, &b, &report.differences))?;
    }
    Ok(if report.same { 0 } else { 1 })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `acptap ui`'s findings of a session are what `acptap check SESSION --json` prints, with
    /// the same silences; and a recording checks as the transcript it was imported from.
    #[test]
    fn the_ui_finds_what_the_command_line_prints() {
        let transcript = crate::query::findings::tests::broken_gemini();
        let (dir, reader, connection_id) = crate::query::testing::imported(&transcript);
        let file = dir.path().join("broken.jsonl");
        std::fs::write(&file, &transcript).unwrap();
        let session = query::SessionRef {
            connection_id,
            session_id: "e6553fe2-7256-4d49-be2a-0bb86f3084ff".into(),
        };
        for silence in [vec![], vec!["acp/tool-call-unannounced".to_owned()]] {
            let mut config = Config::default();
            config.check.silence.insert("Gemini CLI".into(), silence);
            let cli = checked_recorded(session.session_id.clone(), &reader, connection_id, &config)
                .unwrap();
            let printed = serde_json::to_value(&cli).unwrap();
            let ui =
                findings::session_findings(&reader, &session, |a, r| config.check.silenced(a, r))
                    .unwrap();
            let mut shown = serde_json::to_value(&ui.findings).unwrap();
            for (finding, placed) in shown.as_array_mut().unwrap().iter_mut().zip(&ui.findings) {
                let finding = finding.as_object_mut().unwrap();
                assert_eq!(
                    finding.remove("summary").unwrap(),
                    check::rule(placed.finding.rule).unwrap().summary
                );
                assert!(finding.remove("session_id").is_some());
                assert!(finding.remove("turn").is_some());
            }
            assert_eq!(shown, printed["findings"]);
            assert_eq!((ui.silenced, &ui.agent), (cli.silenced, &cli.agent));
            assert_eq!(ui.agent.as_deref(), Some("Gemini CLI 0.61.0"));

            let from_file = checked_transcript("f".into(), &file, &config).unwrap();
            assert_eq!(
                serde_json::to_value(&from_file).unwrap()["findings"],
                printed["findings"]
            );
            assert_eq!(
                (from_file.lines, from_file.silenced),
                (cli.lines, cli.silenced)
            );
        }
    }
}
