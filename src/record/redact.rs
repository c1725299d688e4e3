//! Redaction: secrets are replaced in what is recorded, never in what is forwarded.
//!
//! What is replaced, by `[REDACTED:KIND]` (so a reader knows what was there), in the recorded
//! copy of a line:
//!
//! - **Secrets in known places** (on by default, `--no-default-redact` turns them off): the
//!   values of the `env` and `headers` of the `mcpServers` a client sends in `session/new` /
//!   `session/load` (`mcp-server-env`, `mcp-server-header`); the `env` values of a
//!   `terminal/create` request (`terminal-env`); header values under `_meta` (`meta-header`).
//! - **Secret formats** anywhere (also on by default), each with its real structure: see
//!   `secrets.rs` for the rules (Anthropic, OpenAI, GitHub, GitLab, Slack, AWS, Google, Stripe
//!   keys, JWTs, PEM private keys, and credentials after `Authorization:` and API-key headers).
//! - **The user's patterns** (`--redact REGEX`, `[redact] patterns` in the config file): every
//!   match, on the raw bytes of every line (stderr included), as `[REDACTED:pattern]`.
//!
//! Replacements are made in place in the line's bytes: the rest of the line stays as it was,
//! and a redacted JSON line is still valid JSON with the same structure (the marker holds no
//! quote or backslash), unless a user pattern cuts through JSON syntax.
//!
//! Limits: a secret none of these describe is recorded; a secret split across lines, or encoded
//! (base64 of a token, `\u` escapes), is not recognised.

use regex::bytes::Regex;
use serde_json::Value;

use super::secrets::{Detector, Found};

/// What a user pattern's match is replaced by.
const USER_RULE: &str = "pattern";

#[derive(Clone)]
pub struct Redactor {
    /// The secret formats and the known places, when on.
    defaults: Option<std::sync::Arc<Detector>>,
    user: Vec<Regex>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor")
            .field("defaults", &self.defaults.is_some())
            .field("user", &self.user)
            .finish()
    }
}

/// A secret found in a line, for `acptap redact --check`: its kind and where it is.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Finding {
    pub rule: String,
    pub start: usize,
    pub end: usize,
}

impl Redactor {
    /// The built-in rules only (what `acptap run` uses with no configuration).
    pub fn default_only() -> Redactor {
        Redactor::new(&[], true).expect("the built-in patterns compile")
    }

    /// `patterns` are the user's; `defaults` turns the known places and formats on.
    pub fn new(patterns: &[String], defaults: bool) -> Result<Redactor, String> {
        let user = patterns
            .iter()
            .map(|p| Regex::new(p).map_err(|e| format!("invalid --redact pattern `{p}`: {e}")))
            .collect::<Result<_, _>>()?;
        Ok(Redactor {
            defaults: defaults.then(|| std::sync::Arc::new(Detector::new())),
            user,
        })
    }

    pub fn is_active(&self) -> bool {
        self.defaults.is_some() || !self.user.is_empty()
    }

    /// What in `line` is secret, in order, not overlapping.
    pub fn findings(&self, line: &[u8]) -> Vec<Finding> {
        let mut found: Vec<Finding> = Vec::new();
        if let Some(detector) = &self.defaults {
            // Parsed only when a known place can be in it (most lines: no).
            let has = |needle: &[u8]| memchr::memmem::find(line, needle).is_some();
            if has(b"mcpServers")
                || has(b"terminal/create")
                || (has(b"_meta") && (has(b"headers") || has(b"Headers")))
            {
                found.extend(known_places(line));
            }
            found.extend(
                detector
                    .find(line)
                    .into_iter()
                    .map(|Found { rule, range }| Finding {
                        rule: rule.to_owned(),
                        start: range.start,
                        end: range.end,
                    }),
            );
        }
        for regex in &self.user {
            found.extend(
                regex
                    .find_iter(line)
                    .filter(|m| !m.is_empty())
                    .map(|m| Finding {
                        rule: USER_RULE.to_owned(),
                        start: m.start(),
                        end: m.end(),
                    }),
            );
        }
        // In order; where two overlap, the first (then the longer) is kept.
        found.sort_by_key(|f| (f.start, std::cmp::Reverse(f.end)));
        let mut kept: Vec<Finding> = Vec::with_capacity(found.len());
        for f in found {
            match kept.last_mut() {
                Some(last) if f.start < last.end => last.end = last.end.max(f.end),
                _ => kept.push(f),
            }
        }
        kept
    }

    /// The line as it should be recorded, or `None` if nothing in it is secret.
    pub fn redact(&self, line: &[u8]) -> Option<Vec<u8>> {
        let found = self.findings(line);
        if found.is_empty() {
            return None;
        }
        let mut out = Vec::with_capacity(line.len());
        let mut last = 0;
        for f in &found {
            out.extend_from_slice(&line[last..f.start]);
            out.extend_from_slice(format!("[REDACTED:{}]", f.rule).as_bytes());
            last = f.end;
        }
        out.extend_from_slice(&line[last..]);
        Some(out)
    }
}

/// The secrets of a line's known places: mcpServers env and header values, terminal/create env
/// values, header values under `_meta`. Found by parsing the line, then located as the exact
/// JSON text of each value string (the contents between its quotes are replaced).
fn known_places(line: &[u8]) -> Vec<Finding> {
    let Ok(message) = serde_json::from_slice::<Value>(line.trim_ascii_end()) else {
        return Vec::new();
    };
    let mut values: Vec<(&'static str, &str)> = Vec::new();
    if let Some(servers) = message
        .pointer("/params/mcpServers")
        .and_then(Value::as_array)
    {
        for server in servers {
            values.extend(
                entries(server.get("env"))
                    .into_iter()
                    .map(|v| ("mcp-server-env", v)),
            );
            values.extend(
                entries(server.get("headers"))
                    .into_iter()
                    .map(|v| ("mcp-server-header", v)),
            );
        }
    }
    if message.get("method").and_then(Value::as_str) == Some("terminal/create") {
        values.extend(
            entries(message.pointer("/params/env"))
                .into_iter()
                .map(|v| ("terminal-env", v)),
        );
    }
    collect_meta_headers(&message, false, &mut values);
    let mut found = Vec::new();
    for (rule, value) in values.into_iter().filter(|(_, v)| !v.is_empty()) {
        let encoded = serde_json::to_string(value).expect("a string");
        // The contents between the quotes.
        let inner = &encoded.as_bytes()[1..encoded.len() - 1];
        let mut positions = memchr::memmem::find_iter(line, encoded.as_bytes()).peekable();
        if positions.peek().is_none() {
            // Written with other escapes than serde_json's (`\u0041`): the whole line's
            // strings cannot be located, so the value is found as its raw text if it can be.
            for at in memchr::memmem::find_iter(line, value.as_bytes()) {
                found.push(Finding {
                    rule: rule.to_owned(),
                    start: at,
                    end: at + value.len(),
                });
            }
            continue;
        }
        for at in positions {
            found.push(Finding {
                rule: rule.to_owned(),
                start: at + 1,
                end: at + 1 + inner.len(),
            });
        }
    }
    found
}

/// The values of an `env` or `headers` list: `[{"name", "value"}]`, or a map (some clients).
fn entries(list: Option<&Value>) -> Vec<&str> {
    match list {
        Some(Value::Array(entries)) => entries
            .iter()
            .filter_map(|e| e.get("value").and_then(Value::as_str))
            .collect(),
        Some(Value::Object(map)) => map.values().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// Header values under `_meta` (any depth): `headers` objects or `[{name, value}]` lists.
fn collect_meta_headers<'a>(
    value: &'a Value,
    in_meta: bool,
    out: &mut Vec<(&'static str, &'a str)>,
) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let meta = in_meta || key == "_meta";
                if meta && key.eq_ignore_ascii_case("headers") {
                    match child {
                        Value::Object(headers) => out.extend(
                            headers
                                .values()
                                .filter_map(Value::as_str)
                                .map(|v| ("meta-header", v)),
                        ),
                        Value::Array(entries) => out.extend(
                            entries
                                .iter()
                                .filter_map(|e| e.get("value").and_then(Value::as_str))
                                .map(|v| ("meta-header", v)),
                        ),
                        _ => {}
                    }
                } else {
                    collect_meta_headers(child, meta, out);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                collect_meta_headers(item, in_meta, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redacted(redactor: &Redactor, line: &str) -> String {
        String::from_utf8(
            redactor
                .redact(line.as_bytes())
                .unwrap_or_else(|| line.as_bytes().to_vec()),
        )
        .unwrap()
    }

    #[test]
    fn mcp_env_and_header_values_are_redacted_in_place() {
        let r = Redactor::default_only();
        let line = r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/p","mcpServers":[{"name":"db","command":"x","args":[],"env":[{"name":"DB_PASSWORD","value":"hunter2"}]},{"type":"http","name":"api","url":"https://x","headers":[{"name":"X-Token","value":"abc\"def"}]}]}}"#;
        let out = redacted(&r, line);
        assert!(
            !out.contains("hunter2") && !out.contains("abc\\\"def"),
            "{out}"
        );
        assert!(
            out.contains(r#""value":"[REDACTED:mcp-server-env]""#),
            "{out}"
        );
        assert!(
            out.contains(r#""value":"[REDACTED:mcp-server-header]""#),
            "{out}"
        );
        assert!(
            out.starts_with(r#"{"jsonrpc":"2.0","id":1,"method":"session/new""#),
            "layout kept: {out}"
        );
        assert!(serde_json::from_str::<Value>(&out).is_ok());
    }

    #[test]
    fn terminal_env_and_meta_headers_are_redacted() {
        let r = Redactor::default_only();
        let line = r#"{"jsonrpc":"2.0","id":3,"method":"terminal/create","params":{"sessionId":"s","command":"make","env":[{"name":"PGPASSWORD","value":"pa55"}],"_meta":{"proxy":{"headers":{"Cookie":"sid=abc"}}}}}"#;
        let out = redacted(&r, line);
        assert!(
            out.contains(r#""value":"[REDACTED:terminal-env]""#),
            "{out}"
        );
        assert!(
            out.contains(r#""Cookie":"[REDACTED:meta-header]""#),
            "{out}"
        );
        let parsed: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(parsed["params"]["command"], "make");
    }

    #[test]
    fn words_that_name_credentials_are_not_credentials() {
        let r = Redactor::default_only();
        for text in [
            "Explain the basic functionality of hello.py.",
            "Basic authentication is configured in settings.py",
            "3D models using basic primitives",
            "Authorization: Bearer authentication is not enabled here.",
            "the skeleton key is in the basket; Basic idea",
        ] {
            let line = serde_json::json!({"text": text}).to_string();
            assert_eq!(r.redact(line.as_bytes()), None, "{text}");
        }
    }

    #[test]
    fn user_patterns_apply_and_defaults_can_be_off() {
        let r = Redactor::new(&["internal-[0-9]+".into()], false).unwrap();
        assert_eq!(
            redacted(&r, "host internal-42 up"),
            "host [REDACTED:pattern] up"
        );
        assert_eq!(
            r.redact(b"ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
            None,
            "defaults are off"
        );
        assert!(
            Redactor::new(&["(".into()], true)
                .unwrap_err()
                .contains("invalid --redact pattern `(`")
        );
        // A pattern that matches the empty string replaces nothing.
        let r = Redactor::new(&["x*".into()], false).unwrap();
        assert_eq!(r.redact(b"abc"), None);
    }
}
