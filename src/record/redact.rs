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

use super::secrets::{Detector, Found};

/// What a user pattern's match is replaced by.
const USER_RULE: &str = "pattern";

#[derive(Clone)]
pub(crate) struct Redactor {
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
pub(crate) struct Finding {
    pub rule: String,
    pub start: usize,
    pub end: usize,
}

/// A user's `--redact` pattern that is not a regular expression.
#[derive(Debug, thiserror::Error)]
#[error("invalid --redact pattern `{pattern}`: {error}")]
pub(crate) struct PatternError {
    pattern: String,
    error: regex::Error,
}

impl Redactor {
    /// The built-in rules only (what `acptap run` uses with no configuration).
    pub(crate) fn default_only() -> Redactor {
        Redactor::new(&[], true).expect("the built-in patterns compile")
    }

    /// `patterns` are the user's; `defaults` turns the known places and formats on.
    pub(crate) fn new(patterns: &[String], defaults: bool) -> Result<Redactor, PatternError> {
        let user = patterns
            .iter()
            .map(|p| {
                Regex::new(p).map_err(|error| PatternError {
                    pattern: p.clone(),
                    error,
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Redactor {
            defaults: defaults.then(|| std::sync::Arc::new(Detector::new())),
            user,
        })
    }

    /// What in `line` is secret, in order, not overlapping.
    pub(crate) fn findings(&self, line: &[u8]) -> Vec<Finding> {
        let mut found: Vec<Finding> = Vec::new();
        if let Some(detector) = &self.defaults
            && detector.might_hold_a_secret(line)
        {
            // Parsed only when a known place can be in it (most lines: no). The searchers are
            // built once: building one per line was a visible cost of every line.
            static PLACES: std::sync::LazyLock<[memchr::memmem::Finder<'static>; 5]> =
                std::sync::LazyLock::new(|| {
                    [
                        &b"mcpServers"[..],
                        b"terminal/create",
                        b"_meta",
                        b"headers",
                        b"Headers",
                    ]
                    .map(memchr::memmem::Finder::new)
                });
            let [mcp_servers, terminal_create, meta, headers, headers_capital] = &*PLACES;
            let has = |finder: &memchr::memmem::Finder| finder.find(line).is_some();
            if has(mcp_servers)
                || has(terminal_create)
                || (has(meta) && (has(headers) || has(headers_capital)))
            {
                found.extend(known_places(line));
            }
            found.extend(detector.find_past_the_gate(line).into_iter().map(
                |Found { rule, range }| Finding {
                    rule: rule.to_owned(),
                    start: range.start,
                    end: range.end,
                },
            ));
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
    pub(crate) fn redact(&self, line: &[u8]) -> Option<Vec<u8>> {
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

/// One step of a path into a JSON document.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Step {
    Key(String),
    Index(usize),
}

/// Every string value of a JSON line with its path and the byte range of its contents (between
/// its quotes, escapes as written). `None` if the line is not JSON, or nests deeper than 64.
pub(crate) fn string_values(line: &[u8]) -> Option<Vec<(Vec<Step>, std::ops::Range<usize>)>> {
    struct Scan<'a> {
        b: &'a [u8],
        i: usize,
        path: Vec<Step>,
        out: Vec<(Vec<Step>, std::ops::Range<usize>)>,
    }
    impl Scan<'_> {
        fn ws(&mut self) {
            while self.b.get(self.i).is_some_and(u8::is_ascii_whitespace) {
                self.i += 1;
            }
        }
        /// At a `"`: the range of the string's contents; after it.
        fn string(&mut self) -> Option<std::ops::Range<usize>> {
            self.i += 1;
            let start = self.i;
            loop {
                match *self.b.get(self.i)? {
                    b'"' => {
                        self.i += 1;
                        return Some(start..self.i - 1);
                    }
                    b'\\' => self.i += 2,
                    _ => self.i += 1,
                }
            }
        }
        fn value(&mut self) -> Option<()> {
            if self.path.len() > 64 {
                return None;
            }
            self.ws();
            match *self.b.get(self.i)? {
                b'"' => {
                    let range = self.string()?;
                    self.out.push((self.path.clone(), range));
                }
                b'{' => {
                    self.i += 1;
                    self.ws();
                    if self.b.get(self.i) == Some(&b'}') {
                        self.i += 1;
                        return Some(());
                    }
                    loop {
                        self.ws();
                        if self.b.get(self.i) != Some(&b'"') {
                            return None;
                        }
                        let key = self.string()?;
                        let key: String =
                            serde_json::from_slice(&self.b[key.start - 1..key.end + 1]).ok()?;
                        self.ws();
                        if self.b.get(self.i) != Some(&b':') {
                            return None;
                        }
                        self.i += 1;
                        self.path.push(Step::Key(key));
                        self.value()?;
                        self.path.pop();
                        self.ws();
                        match *self.b.get(self.i)? {
                            b',' => self.i += 1,
                            b'}' => {
                                self.i += 1;
                                return Some(());
                            }
                            _ => return None,
                        }
                    }
                }
                b'[' => {
                    self.i += 1;
                    self.ws();
                    if self.b.get(self.i) == Some(&b']') {
                        self.i += 1;
                        return Some(());
                    }
                    let mut n = 0;
                    loop {
                        self.path.push(Step::Index(n));
                        self.value()?;
                        self.path.pop();
                        n += 1;
                        self.ws();
                        match *self.b.get(self.i)? {
                            b',' => self.i += 1,
                            b']' => {
                                self.i += 1;
                                return Some(());
                            }
                            _ => return None,
                        }
                    }
                }
                _ => {
                    // A number, true, false or null.
                    while self
                        .b
                        .get(self.i)
                        .is_some_and(|c| !b",]} \t\r\n".contains(c))
                    {
                        self.i += 1;
                    }
                }
            }
            Some(())
        }
    }
    let mut scan = Scan {
        b: line,
        i: 0,
        path: Vec::new(),
        out: Vec::new(),
    };
    scan.value()?;
    Some(scan.out)
}

/// The secrets of a line's known places, by the path of each string value: the values of
/// mcpServers `env` and `headers` entries, of a `terminal/create` request's `env`, and of any
/// headers under `_meta`. Only those strings (never another string equal to one of them), and
/// as written (whatever their escapes).
fn known_places(line: &[u8]) -> Vec<Finding> {
    let Some(values) = string_values(line.trim_ascii_end()) else {
        return Vec::new();
    };
    let key = |step: Option<&Step>, name: &str| matches!(step, Some(Step::Key(k)) if k == name);
    // The messages of the line (a batch holds several): the path prefix of each, and whether
    // it is a terminal/create request.
    let terminal: Vec<Vec<Step>> = values
        .iter()
        .filter(|(path, range)| {
            key(path.last(), "method") && &line[range.clone()] == b"terminal/create"
        })
        .map(|(path, _)| path[..path.len() - 1].to_vec())
        .collect();
    let mut found = Vec::new();
    for (path, range) in &values {
        // Relative to its message (inside a batch, after the message's index).
        let start = usize::from(matches!(path.first(), Some(Step::Index(_))));
        let message = &path[..start];
        let rest = &path[start..];
        // An entry's value: `[.., LIST, i, "value"]`, or a map's: `[.., LIST, name]`.
        let entry_of = |list_at: usize| -> bool {
            match &rest[list_at + 1..] {
                [Step::Index(_), Step::Key(v)] => v == "value",
                [Step::Key(_)] => true,
                _ => false,
            }
        };
        let mut rule = None;
        if rest.len() >= 4 && key(rest.first(), "params") && key(rest.get(1), "mcpServers") {
            if key(rest.get(3), "env") && entry_of(3) {
                rule = Some("mcp-server-env");
            } else if key(rest.get(3), "headers") && entry_of(3) {
                rule = Some("mcp-server-header");
            }
        }
        if rule.is_none()
            && rest.len() >= 3
            && key(rest.first(), "params")
            && key(rest.get(1), "env")
            && entry_of(1)
            && terminal.iter().any(|t| t.as_slice() == message)
        {
            rule = Some("terminal-env");
        }
        if rule.is_none()
            && let Some(meta) = rest
                .iter()
                .position(|s| matches!(s, Step::Key(k) if k == "_meta"))
            && let Some(headers) = rest[meta..].iter().position(
                |s| matches!(s, Step::Key(k) if k.to_ascii_lowercase().ends_with("headers")),
            )
            && entry_of(meta + headers)
        {
            rule = Some("meta-header");
        }
        let value = &line[range.clone()];
        if let Some(rule) = rule
            && !value.is_empty()
            && !value.starts_with(b"[REDACTED")
        {
            found.push(Finding {
                rule: rule.to_owned(),
                start: range.start,
                end: range.end,
            });
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn only_the_values_of_known_places_are_redacted_not_equal_strings_elsewhere() {
        let r = Redactor::default_only();
        // The env value equals the cwd, an argument and a server's name: those stay.
        let line = r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/home/u/proj","mcpServers":[{"name":"npx","command":"npx","args":["-y","fs","/home/u/proj"],"env":[{"name":"ALLOWED_DIR","value":"/home/u/proj"},{"name":"RUNNER","value":"npx"},{"name":"K","value":"K"}]}]}}"#;
        let out: Value = serde_json::from_str(&redacted(&r, line)).unwrap();
        assert_eq!(out["params"]["cwd"], "/home/u/proj");
        let server = &out["params"]["mcpServers"][0];
        assert_eq!(server["name"], "npx");
        assert_eq!(server["command"], "npx");
        assert_eq!(server["args"][2], "/home/u/proj");
        assert_eq!(server["env"][0]["value"], "[REDACTED:mcp-server-env]");
        assert_eq!(server["env"][1]["value"], "[REDACTED:mcp-server-env]");
        assert_eq!(
            server["env"][2]["name"], "K",
            "a name equal to its value stays"
        );
        // Written with other escapes than serde_json's, inside a batch, in a terminal's env.
        let line = r#"[{"jsonrpc":"2.0","id":3,"method":"terminal/create","params":{"sessionId":"s","command":"npm","args":["run","test"],"env":[{"name":"PW","value":"Pässwörd-9x"},{"name":"NODE_ENV","value":"test"}]}}]"#;
        let text = redacted(&r, line);
        let out: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(out[0]["params"]["args"][1], "test");
        assert_eq!(
            out[0]["params"]["env"][0]["value"],
            "[REDACTED:terminal-env]"
        );
        assert_eq!(
            out[0]["params"]["env"][1]["value"],
            "[REDACTED:terminal-env]"
        );
        assert!(!text.contains("ssw"), "{text}");
        // A recording's marker is not found again.
        let again = redacted(&r, &text);
        assert_eq!(r.findings(again.as_bytes()), Vec::new());
    }

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
                .to_string()
                .contains("invalid --redact pattern `(`")
        );
        // A pattern that matches the empty string replaces nothing.
        let r = Redactor::new(&["x*".into()], false).unwrap();
        assert_eq!(r.redact(b"abc"), None);
    }
}
