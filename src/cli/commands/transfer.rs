//! Recordings in and out as files: `export`, `import`.

use anyhow::Context;

use crate::query;
use crate::query::Reader;
use crate::record::Store;

use super::super::config::Config;
use super::super::{ExportArgs, ExportFormat, ImportArgs, print, write_private};

/// `acptap export`.
pub(in crate::cli) fn export(args: ExportArgs, config: &Config) -> anyhow::Result<i32> {
    let reader = args.db.read()?;
    let session = query::resolve_session(&reader, &args.session)?;
    let lines = match args.format {
        ExportFormat::Jsonl => crate::export::transcript::export(&reader, session.connection_id)?
            .iter()
            .map(serde_json::to_string)
            .collect::<Result<Vec<_>, _>>()?,
        ExportFormat::Trace => crate::export::trace::export(&reader, session.connection_id)?,
        ExportFormat::OtlpJson => {
            let options = crate::export::spans::SpanOptions {
                tool_content: args.tool_content || config.otlp.tool_content,
                window: Default::default(),
            };
            let spans = crate::export::spans::session_spans(&reader, &session, options)?;
            vec![String::from_utf8(crate::export::otlp::to_json(&spans)?)?]
        }
        ExportFormat::Otlp => {
            let options = crate::export::spans::SpanOptions {
                tool_content: args.tool_content || config.otlp.tool_content,
                window: Default::default(),
            };
            let spans = crate::export::spans::session_spans(&reader, &session, options)?;
            let endpoint = config
                .otlp
                .endpoint(args.endpoint.as_deref(), args.headers)?;
            let sent = crate::export::otlp::send(&spans, &endpoint)?;
            let trace: String = spans
                .first()
                .map(|s| s.trace_id.iter().map(|b| format!("{b:02x}")).collect())
                .unwrap_or_default();
            eprintln!(
                "acptap: sent {sent} span(s) of session {} to {} (trace {trace})",
                crate::inspect::terminal_line(&session.session_id, crate::inspect::NAME_BYTES),
                endpoint.shown()
            );
            return Ok(0);
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

/// `acptap import`.
pub(in crate::cli) fn import(args: ImportArgs, config: &Config) -> anyhow::Result<i32> {
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
            replay_of: None,
        },
        &redactor,
    )?;
    drop(store);
    // The session ids the file announced: untrusted, so made safe (and cut) for the terminal.
    let sessions: Vec<String> = query::list_sessions(&Reader::open(&path)?, usize::MAX >> 1)?
        .into_iter()
        .filter(|s| s.connection_id == connection_id)
        .map(|s| {
            crate::inspect::terminal_line(&s.session_id, crate::inspect::NAME_BYTES).into_owned()
        })
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
