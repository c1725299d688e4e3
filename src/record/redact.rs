//! Redaction: secrets are replaced in what is recorded, never in what is forwarded.
//!
//! Two kinds of matches, both replaced by `[REDACTED]` in the recorded copy of a line:
//!
//! - **Well-known secret shapes** (on by default, `--no-default-redact` turns them off): the
//!   `value` of every `env` entry and of every `headers` entry of the `mcpServers` a client sends
//!   in `session/new` / `session/load`; `Authorization` values anywhere (`Bearer ...`, `Basic
//!   ...`); and common token formats (OpenAI and Anthropic `sk-...`, GitHub `ghp_`/`gho_`/
//!   `github_pat_`, Slack `xox?-`, AWS access key ids `AKIA...`, Google `AIza...`, JWTs, PEM
//!   private keys).
//! - **The user's patterns** (`--redact REGEX`, `[redact] patterns` in the config file): every
//!   match, on the raw bytes of every line (stderr included).
//!
//! Replacements are made in place in the line's bytes, so the rest of the line stays as it was
//! (and a redacted line still parses, unless a user pattern cut through JSON syntax).
//!
//! Limits: a secret the patterns do not describe is recorded; a secret split across lines, or
//! encoded (base64 of a token, `\u` escapes), is not recognised; the agent's stderr is matched
//! only by the token formats and the user's patterns.

use regex::bytes::Regex;
use serde_json::Value;

const REDACTED: &str = "[REDACTED]";

/// Token formats recognised anywhere. Kept tight enough not to eat ordinary text.
const TOKEN_PATTERNS: &[&str] = &[
    r"sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{20,}",
    r"gh[pousr]_[A-Za-z0-9]{30,}",
    r"github_pat_[A-Za-z0-9_]{30,}",
    r"xox[abprs]-[A-Za-z0-9\-]{10,}",
    r"AKIA[0-9A-Z]{16}",
    r"AIza[0-9A-Za-z_\-]{35}",
    r"eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
    r"(?i)(?:bearer|basic)\s+[A-Za-z0-9._~+/=\-]{8,}",
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----[^\x22]*?-----END [A-Z ]*PRIVATE KEY-----",
];

#[derive(Debug, Clone)]
pub struct Redactor {
    /// The default token formats, as one alternation, when on.
    tokens: Option<Regex>,
    /// Whether the mcpServers env and header values are redacted.
    mcp_values: bool,
    user: Vec<Regex>,
}

impl Redactor {
    /// The built-in patterns only (what `acptap run` uses with no configuration).
    pub fn default_only() -> Redactor {
        Redactor::new(&[], true).expect("the built-in patterns compile")
    }

    /// `patterns` are the user's; `defaults` turns the well-known shapes on.
    pub fn new(patterns: &[String], defaults: bool) -> Result<Redactor, String> {
        let user = patterns
            .iter()
            .map(|p| Regex::new(p).map_err(|e| format!("invalid --redact pattern `{p}`: {e}")))
            .collect::<Result<_, _>>()?;
        let tokens = defaults
            .then(|| Regex::new(&TOKEN_PATTERNS.join("|")).expect("built-in patterns are valid"));
        Ok(Redactor {
            tokens,
            mcp_values: defaults,
            user,
        })
    }

    pub fn is_active(&self) -> bool {
        self.tokens.is_some() || self.mcp_values || !self.user.is_empty()
    }

    /// The line as it should be recorded, or `None` if nothing in it is secret.
    pub fn redact(&self, line: &[u8]) -> Option<Vec<u8>> {
        let mut out: Option<Vec<u8>> = None;
        if self.mcp_values && memchr::memmem::find(line, b"mcpServers").is_some() {
            out = redact_mcp_values(line);
        }
        for regex in self.tokens.iter().chain(&self.user) {
            let current = out.as_deref().unwrap_or(line);
            if regex.is_match(current) {
                out = Some(regex.replace_all(current, REDACTED.as_bytes()).into_owned());
            }
        }
        out
    }
}

/// Replaces the JSON string of every mcpServers env and header value with `"[REDACTED]"`, in
/// place: the values are found by parsing, then their exact JSON text is replaced.
fn redact_mcp_values(line: &[u8]) -> Option<Vec<u8>> {
    let message: Value = serde_json::from_slice(line.trim_ascii_end()).ok()?;
    let servers = message.pointer("/params/mcpServers")?.as_array()?;
    let mut secrets: Vec<String> = Vec::new();
    for server in servers {
        for list in ["env", "headers"] {
            for entry in server
                .get(list)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(value) = entry
                    .get("value")
                    .and_then(Value::as_str)
                    .filter(|v| !v.is_empty())
                {
                    secrets.push(value.to_owned());
                }
            }
            // Some clients send a map instead of a list.
            for value in server
                .get(list)
                .and_then(Value::as_object)
                .into_iter()
                .flat_map(|m| m.values())
            {
                if let Some(value) = value.as_str().filter(|v| !v.is_empty()) {
                    secrets.push(value.to_owned());
                }
            }
        }
    }
    if secrets.is_empty() {
        return None;
    }
    let mut out = line.to_vec();
    let replacement = serde_json::to_string(REDACTED).expect("a string");
    for secret in secrets {
        let encoded = serde_json::to_string(&secret).expect("a string");
        let finder = memchr::memmem::Finder::new(encoded.as_bytes());
        let positions: Vec<usize> = finder.find_iter(&out).collect();
        if positions.is_empty() {
            // Encoded differently from serde_json (\u escapes): fall back to re-encoding the
            // whole line, which changes its layout but keeps the secret out.
            return Some(reencode_without(&message));
        }
        let mut next = Vec::with_capacity(out.len());
        let mut last = 0;
        for at in positions {
            next.extend_from_slice(&out[last..at]);
            next.extend_from_slice(replacement.as_bytes());
            last = at + encoded.len();
        }
        next.extend_from_slice(&out[last..]);
        out = next;
    }
    Some(out)
}

fn reencode_without(message: &Value) -> Vec<u8> {
    let mut message = message.clone();
    if let Some(Value::Array(servers)) = message.pointer_mut("/params/mcpServers") {
        for server in servers {
            for list in ["env", "headers"] {
                match server.get_mut(list) {
                    Some(Value::Array(entries)) => {
                        for entry in entries {
                            if let Some(value) = entry.get_mut("value") {
                                *value = Value::String(REDACTED.into());
                            }
                        }
                    }
                    Some(Value::Object(map)) => {
                        for value in map.values_mut() {
                            *value = Value::String(REDACTED.into());
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    let mut out = serde_json::to_vec(&message).unwrap_or_default();
    out.push(b'\n');
    out
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
        let r = Redactor::new(&[], true).unwrap();
        let line = r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/p","mcpServers":[{"name":"db","command":"x","args":[],"env":[{"name":"DB_PASSWORD","value":"hunter2"}]},{"type":"http","name":"api","url":"https://x","headers":[{"name":"X-Token","value":"abc\"def"}]}]}}"#;
        let out = redacted(&r, line);
        assert!(
            !out.contains("hunter2") && !out.contains("abc\\\"def"),
            "{out}"
        );
        assert_eq!(out.matches("[REDACTED]").count(), 2);
        assert!(
            out.starts_with(r#"{"jsonrpc":"2.0","id":1,"method":"session/new""#),
            "layout kept: {out}"
        );
        assert!(serde_json::from_str::<Value>(&out).is_ok());
    }

    #[test]
    fn token_formats_are_redacted_and_ordinary_text_is_not() {
        let r = Redactor::new(&[], true).unwrap();
        for secret in [
            "sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "AKIAABCDEFGHIJKLMNOP",
            "Bearer abc.def-ghi_jkl",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        ] {
            let out = redacted(&r, &format!("{{\"text\":\"token {secret} here\"}}"));
            assert!(!out.contains(secret), "{secret} survived: {out}");
            assert!(out.contains("[REDACTED]"));
        }
        let plain = r#"{"text":"the skeleton key is in the basket; Basic idea"}"#;
        assert_eq!(r.redact(plain.as_bytes()), None);
    }

    #[test]
    fn user_patterns_apply_and_defaults_can_be_off() {
        let r = Redactor::new(&["internal-[0-9]+".into()], false).unwrap();
        assert_eq!(redacted(&r, "host internal-42 up"), "host [REDACTED] up");
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
    }
}
