//! What `acptap check` prints: text for people, JSON for scripts, JUnit XML for CI.

use serde::Serialize;

use super::{Finding, RULES, Severity};
use crate::terminal::{NAME_BYTES, VALUE_BYTES, terminal_line};

/// One conversation checked: where it came from and what was found.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Checked {
    /// The session id, or the transcript's path.
    pub source: String,
    /// The agent's name from initialize, when known.
    pub agent: Option<String>,
    pub lines: usize,
    pub findings: Vec<Finding>,
    /// Findings of rules silenced for this agent (in the config file), not counted.
    pub silenced: usize,
}

/// `text` with the five XML special characters escaped, and the characters XML 1.0 cannot hold
/// replaced (a recorded line may hold anything).
pub(crate) fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || matches!(c, '\u{FFFE}' | '\u{FFFF}') => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// One finding as a line of text: its message quotes what the conversation holds, so it is made
/// safe and cut (`terminal_line`).
pub(crate) fn finding_line(finding: &Finding) -> String {
    format!(
        "  seq {:<6} {} {:<7} {:<30} {}",
        finding.seq,
        finding.direction.as_str(),
        finding.severity.name(),
        finding.rule,
        terminal_line(&finding.message, VALUE_BYTES),
    )
}

/// The text report.
pub(crate) fn text(checked: &[Checked], fail_on: Severity) -> String {
    let mut out = String::new();
    for c in checked {
        let failing = c.findings.iter().filter(|f| f.severity >= fail_on).count();
        out.push_str(&format!(
            "{} ({}{} lines): {}\n",
            terminal_line(&c.source, VALUE_BYTES),
            c.agent
                .as_deref()
                .map(|a| format!("{}, ", terminal_line(a, NAME_BYTES)))
                .unwrap_or_default(),
            c.lines,
            match (c.findings.len(), failing) {
                (0, _) => "clean".to_owned(),
                (n, f) => format!("{n} finding(s), {f} at or above {}", fail_on.name()),
            }
        ));
        for finding in &c.findings {
            out.push_str(&finding_line(finding));
            out.push('\n');
        }
        if c.silenced > 0 {
            out.push_str(&format!(
                "  ({} finding(s) of rules silenced for this agent)\n",
                c.silenced
            ));
        }
    }
    let rules: std::collections::BTreeSet<&str> = checked
        .iter()
        .flat_map(|c| c.findings.iter().map(|f| f.rule))
        .collect();
    if !rules.is_empty() {
        out.push_str("\nrules:\n");
        for rule in RULES.iter().filter(|r| rules.contains(r.id)) {
            out.push_str(&format!(
                "  {:<30} {} ({})\n",
                rule.id, rule.summary, rule.spec
            ));
        }
    }
    out
}

/// JUnit XML: a test suite per conversation, a test case per rule, failed (or errored) where
/// the rule has findings at or above `fail_on`; findings below it are in the case's output.
pub(crate) fn junit(checked: &[Checked], fail_on: Severity) -> String {
    let mut suites = String::new();
    let (mut tests, mut failures) = (0, 0);
    for c in checked {
        let mut cases = String::new();
        let mut suite_failures = 0;
        for rule in RULES {
            let found: Vec<&Finding> = c.findings.iter().filter(|f| f.rule == rule.id).collect();
            let body: String = found
                .iter()
                .map(|f| format!("{}\n", finding_line(f)))
                .collect();
            cases.push_str(&format!(
                "    <testcase classname=\"{}\" name=\"{}\">",
                xml_escape(&c.source),
                rule.id
            ));
            if !found.is_empty() && rule.severity >= fail_on {
                suite_failures += 1;
                cases.push_str(&format!(
                    "\n      <failure type=\"{}\" message=\"{} finding(s): {}\">{}</failure>\n    ",
                    rule.severity.name(),
                    found.len(),
                    xml_escape(rule.summary),
                    xml_escape(&body)
                ));
            } else if !found.is_empty() {
                cases.push_str(&format!(
                    "\n      <system-out>{}</system-out>\n    ",
                    xml_escape(&body)
                ));
            }
            cases.push_str("</testcase>\n");
        }
        tests += RULES.len();
        failures += suite_failures;
        suites.push_str(&format!(
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"0\">\n{}  </testsuite>\n",
            xml_escape(&format!("acptap check: {}", c.source)),
            RULES.len(),
            suite_failures,
            cases
        ));
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"acptap check\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\">\n{suites}</testsuites>\n"
    )
}
