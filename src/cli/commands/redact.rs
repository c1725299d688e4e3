//! `acptap redact --check FILE|SESSION`: what redaction removes, with the rule, so that a user
//! can see false positives before trusting it. Reads only.

use anyhow::Context;
use serde::Serialize;

use crate::query;

use super::super::config::Config;
use super::super::{RedactCheckArgs, print, print_json};

/// One thing redaction removes (or, in a recording, removed).
#[derive(Debug, Serialize)]
struct Removed {
    /// The line's number: its `seq` in a recording or transcript, else its line number (from 1).
    line: i64,
    dir: Option<String>,
    rule: String,
    /// Where in the line's bytes.
    start: usize,
    end: usize,
    /// The start of what is removed, and its length: enough to recognise it, not to use it.
    preview: String,
    /// In a recording: already replaced when it was recorded.
    already_redacted: bool,
}

/// The first characters of a secret, then its length.
fn preview(secret: &[u8]) -> String {
    let text = String::from_utf8_lossy(secret);
    let head: String = text.chars().take(4).collect();
    crate::inspect::terminal_line(&format!("{head}… ({} bytes)", secret.len()), usize::MAX)
        .into_owned()
}

/// The lines to check: (number, direction, bytes).
type Lines = Vec<(i64, Option<String>, Vec<u8>)>;

/// A file's lines: a transcript's records, else the file's own lines.
fn file_lines(path: &std::path::Path) -> anyhow::Result<Lines> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    if let Ok(records) = crate::record::transcript::parse(&text) {
        return records
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let bytes = r
                    .bytes()
                    .map_err(|e| anyhow::anyhow!("{}: record {}: {e}", path.display(), i + 1))?;
                Ok((r.seq.unwrap_or(i as i64), Some(r.dir.clone()), bytes))
            })
            .collect();
    }
    Ok(text
        .lines()
        .enumerate()
        .map(|(i, line)| (i as i64 + 1, None, line.as_bytes().to_vec()))
        .collect())
}

/// `acptap redact --check`.
pub(in crate::cli) fn check(args: RedactCheckArgs, config: &Config) -> anyhow::Result<i32> {
    let redactor = args.redact.redactor(config)?;
    let path = std::path::Path::new(&args.target);
    let recorded = !path.is_file();
    let lines: Lines = if recorded {
        if args.target.ends_with(".jsonl") {
            anyhow::bail!(
                "{}: no such file (a transcript, as `acptap export` writes them)",
                args.target
            );
        }
        let reader = args.db.read()?;
        let session = query::resolve_session(&reader, &args.target)?;
        query::connection_lines(&reader, session.connection_id)?
            .into_iter()
            .map(|l| (l.seq, Some(l.direction.as_str().to_owned()), l.raw))
            .collect()
    } else {
        file_lines(path)?
    };
    // What a recording already holds as redacted, by its marker.
    let marker = regex::bytes::Regex::new(r"\[REDACTED(?::([a-z0-9-]+))?\]").expect("valid");
    let mut removed = Vec::new();
    for (line, dir, bytes) in &lines {
        for finding in redactor.findings(bytes) {
            removed.push(Removed {
                line: *line,
                dir: dir.clone(),
                rule: finding.rule,
                start: finding.start,
                end: finding.end,
                preview: preview(&bytes[finding.start..finding.end]),
                already_redacted: false,
            });
        }
        if recorded {
            for found in marker.captures_iter(bytes) {
                let whole = found.get(0).expect("group 0");
                removed.push(Removed {
                    line: *line,
                    dir: dir.clone(),
                    rule: found
                        .get(1)
                        .map(|r| String::from_utf8_lossy(r.as_bytes()).into_owned())
                        .unwrap_or_else(|| "unnamed".into()),
                    start: whole.start(),
                    end: whole.end(),
                    preview: String::from_utf8_lossy(whole.as_bytes()).into_owned(),
                    already_redacted: true,
                });
            }
        }
    }
    removed.sort_by_key(|r| (r.line, r.start));
    let pending = removed.iter().filter(|r| !r.already_redacted).count();
    if args.json {
        print_json(&removed)?;
    } else {
        let mut out = String::new();
        if !removed.is_empty() {
            // LINE: the record's seq in a transcript or a recording, the line number in a file.
            out.push_str(&format!(
                "{:>6} {:<6} {:<24} {}\n",
                "LINE", "DIR", "KIND", "WHERE AND WHAT"
            ));
        }
        for r in &removed {
            out.push_str(&format!(
                "{:>6} {:<6} {:<24} bytes {}-{}  {}{}\n",
                r.line,
                r.dir.as_deref().unwrap_or("-"),
                r.rule,
                r.start,
                r.end,
                r.preview,
                if r.already_redacted {
                    "  (redacted when recorded)"
                } else {
                    ""
                }
            ));
        }
        let mut by_rule: std::collections::BTreeMap<&str, usize> = Default::default();
        for r in &removed {
            *by_rule.entry(r.rule.as_str()).or_default() += 1;
        }
        let rules: Vec<String> = by_rule.iter().map(|(r, n)| format!("{r} {n}")).collect();
        out.push_str(&format!(
            "{} line(s) checked: {pending} would be redacted{}{}\n",
            lines.len(),
            if recorded {
                format!(", {} redacted when recorded", removed.len() - pending)
            } else {
                String::new()
            },
            if rules.is_empty() {
                String::new()
            } else {
                format!(" ({})", rules.join(", "))
            }
        ));
        print(&out)?;
    }
    // Like grep: 1 when something would be redacted.
    Ok(if pending > 0 { 1 } else { 0 })
}
