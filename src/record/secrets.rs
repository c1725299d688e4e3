//! The secret formats redaction recognises in text, each with its structure: a prefix, a
//! length, an alphabet, and where a format has none of these (an `Authorization` value, an AWS
//! secret key), the context that names it. Precision is a goal as much as recall: a bare word
//! like "basic" or "bearer" is never enough, and a credential after `Authorization:` must look
//! like one (see `plausible_credential`).
//!
//! The formats follow gitleaks' rule set (`config/gitleaks.toml`: the ids below are its rule
//! ids where it has one) and GitHub's secret-scanning patterns; see docs/config.md.

use regex::bytes::{Captures, Regex};

/// One secret format.
pub struct Rule {
    /// The name written in its place: `[REDACTED:github-token]`.
    pub id: &'static str,
    /// The pattern. A group named `secret` is what is replaced (the context around it stays);
    /// without one, the whole match is. A leading `(?-u:\b)` stands for "not inside a word",
    /// where a JSON escape (`\n`, `\t`, `\u00e9`) before the secret also ends a word.
    pub pattern: &'static str,
    /// A check the secret must also pass (what a regex without look-around cannot say).
    pub check: fn(&Candidate) -> bool,
}

/// A match a rule's check looks at.
pub(crate) struct Candidate<'a> {
    /// The whole line.
    pub line: &'a [u8],
    /// What the rule's pattern matched, context included.
    pub matched: std::ops::Range<usize>,
    /// What would be replaced.
    pub secret: std::ops::Range<usize>,
}

impl Candidate<'_> {
    fn secret(&self) -> &[u8] {
        &self.line[self.secret.clone()]
    }
}

/// The formats, most specific first (the first rule matching at a place wins).
pub(crate) const RULES: &[Rule] = &[
    Rule {
        id: "private-key",
        pattern: r"-----BEGIN[A-Z ]{0,20} PRIVATE KEY(?: BLOCK)?-----[^\x22]{16,}?-----END[A-Z ]{0,20} PRIVATE KEY(?: BLOCK)?-----",
        check: |_| true,
    },
    Rule {
        id: "anthropic-api-key",
        pattern: r"(?-u:\b)sk-ant-(?:api|admin|oat|ort)[0-9]{2}-[A-Za-z0-9_\-]{80,120}",
        check: random_token,
    },
    Rule {
        id: "openai-api-key",
        pattern: r"(?-u:\b)sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{40,200}|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}(?-u:\b)|[A-Za-z0-9]{48}(?-u:\b))",
        check: |c| {
            // The legacy form (`sk-` and 48) is base62: a hex cache key is not one.
            let s = c.secret();
            random_token(c)
                && (s.len() != 51
                    || (s.iter().any(u8::is_ascii_uppercase)
                        && s.iter().any(u8::is_ascii_lowercase)))
        },
    },
    Rule {
        id: "github-token",
        pattern: r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{36}(?-u:\b)|github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}(?-u:\b))",
        check: random_token,
    },
    Rule {
        id: "gitlab-token",
        pattern: r"(?-u:\b)gl(?:pat|dt|rt|ptt|soat|cbt|imt|oas|ffct|ft)-[A-Za-z0-9_\-]{20,64}",
        // Random: digits and capitals, which a kebab-case name (`glrt-runner-token-...-v2`) has
        // one of at most.
        check: |c| {
            let s = c.secret();
            let tail = &s[s.iter().position(|b| *b == b'-').map_or(0, |at| at + 1)..];
            random_token(c)
                && tail
                    .iter()
                    .filter(|b| b.is_ascii_digit() || b.is_ascii_uppercase())
                    .count()
                    >= 3
        },
    },
    Rule {
        id: "slack-token",
        pattern: r"(?-u:\b)(?:xox[abposer]-(?:[0-9]{6,13}-){1,3}[A-Za-z0-9\-]{6,}|xapp-[0-9]-[A-Z0-9]{6,}-[0-9]{6,}-[A-Za-z0-9]{20,})",
        check: random_token,
    },
    Rule {
        id: "slack-webhook-url",
        pattern: r"hooks\.slack\.com/(?:services|workflows|triggers)/T[A-Z0-9]{6,}/[A-Z0-9]{6,}(?:/[A-Za-z0-9]{6,})+",
        check: random_token,
    },
    Rule {
        id: "aws-access-key-id",
        pattern: r"(?-u:\b)(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z2-7]{16}(?-u:\b)",
        check: random_token,
    },
    Rule {
        id: "aws-secret-access-key",
        pattern: r#"(?i)(?-u:\b)(?:aws_?(?:secret_?access_?key|secret_?key|secret)|secret_?access_?key)[\s"'\\]{0,4}[:=\s][\s"'\\]{0,4}(?P<secret>(?:[A-Za-z0-9+]|\\?/){40})(?:[^A-Za-z0-9/+=]|$)"#,
        check: credential,
    },
    Rule {
        id: "gcp-api-key",
        pattern: r"(?-u:\b)AIza[0-9A-Za-z_\-]{35}(?:[^0-9A-Za-z_\-]|$)",
        check: random_token,
    },
    Rule {
        id: "stripe-access-token",
        pattern: r"(?-u:\b)(?:sk|rk)_(?:live|test|prod)_[0-9A-Za-z]{20,99}(?-u:\b)",
        check: random_token,
    },
    Rule {
        id: "jwt",
        pattern: r"(?-u:\b)eyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}",
        check: |_| true,
    },
    Rule {
        id: "authorization-header",
        pattern: r#"(?i)(?-u:\b)(?:proxy-)?authorization(?-u:\b)[\s"'\\]{0,4}[:=][\s"'\\]{0,4}(?:(?:bearer|basic|token|digest|apikey|api-key)\s+)?(?P<secret>(?:[A-Za-z0-9._~+=\-]|\\?/){8,})"#,
        check: credential,
    },
    Rule {
        id: "api-key-header",
        pattern: r#"(?i)(?-u:\b)(?:x-api-key|api-key|x-auth-token|x-goog-api-key|private-token|anthropic-api-key|openai-api-key)(?-u:\b)[\s"'\\]{0,4}[:=][\s"'\\]{0,4}(?P<secret>(?:[A-Za-z0-9._~+=\-]|\\?/){16,})"#,
        check: credential,
    },
];

/// A token of a known format that is not a placeholder: not one character repeated
/// (`AKIAXXXXXXXXXXXXXXXX`, `T00000000`), not AWS's documented `...EXAMPLE` key.
fn random_token(c: &Candidate) -> bool {
    let s = c.secret();
    let mut seen = [false; 256];
    for &b in s.iter().filter(|b| b.is_ascii_alphanumeric()) {
        seen[b as usize] = true;
    }
    let distinct = seen.iter().filter(|x| **x).count();
    distinct >= 8
        && !s.ends_with(b"EXAMPLE")
        && !s.windows(12).any(|w| w.iter().all(|b| *b == w[0]))
}

/// Whether what follows `Authorization:` (or an API-key header, or `aws_secret_access_key`)
/// is a credential and not a word, a placeholder or code. It must look random (a digit; for
/// `Basic`, whose base64 may have none, a digit or mixed case), must not be followed by `(` or
/// `[` (a call: `auth_header.split()`), and must not be a placeholder in capitals
/// (`YOUR_API_KEY`). So "Authorization: Bearer authentication", `authorization =
/// request.headers.get(...)` and `'x-api-key': process.env.API_KEY` stay;
/// "Authorization: Basic dXNlcjpwYXNz" and "x-api-key: 22d3b41a..." go.
pub(crate) fn credential(c: &Candidate) -> bool {
    let s = c.secret();
    let digit = s.iter().any(u8::is_ascii_digit);
    let upper = s.iter().any(u8::is_ascii_uppercase);
    let lower = s.iter().any(u8::is_ascii_lowercase);
    let before =
        String::from_utf8_lossy(&c.line[c.matched.start..c.secret.start]).to_ascii_lowercase();
    let basic = before.trim_end().ends_with("basic");
    let looks_random = digit || (basic && upper && lower);
    let call = matches!(c.line.get(c.secret.end), Some(b'(' | b'['));
    let placeholder = !lower && !digit;
    let mut seen = [false; 256];
    for &b in s {
        seen[b as usize] = true;
    }
    let distinct = seen.iter().filter(|x| **x).count();
    looks_random && !call && !placeholder && distinct >= 6
}

/// A secret found in a line: which rule, and the bytes to replace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    pub rule: &'static str,
    pub range: std::ops::Range<usize>,
}

/// Literal parts of which every format rule's match holds one (with `ANCHOR_WORDS` for the
/// context rules): a line with none of them holds no secret, and most lines are ruled out by
/// this one fast pass.
const ANCHORS: &[&str] = &[
    "PRIVATE KEY",
    "sk-",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "gldt-",
    "glrt-",
    "glptt-",
    "glsoat-",
    "glcbt-",
    "glimt-",
    "gloas-",
    "glffct-",
    "glft-",
    "xox",
    "xapp-",
    "hooks.slack.com",
    "AKIA",
    "ASIA",
    "ABIA",
    "ACCA",
    "A3T",
    "AIza",
    "_live_",
    "_test_",
    "_prod_",
    "eyJ",
];

/// The names context rules match in any case: in the anchors, case-insensitively.
const ANCHOR_WORDS: &[&str] = &[
    "authorization",
    "api-key",
    "auth-token",
    "private-token",
    "aws_?secret",
    "secret_?access_?key",
];

/// A literal that every match of an [`ANCHOR_WORDS`] pattern holds (for the gate, which reads
/// literals only): `aws_?secret` and `secret_?access_?key` both hold `secret`.
const GATE_WORDS: &[&str] = &[
    "authorization",
    "api-key",
    "auth-token",
    "private-token",
    "secret",
];

/// What marks the places `redact` parses a line for (`mcpServers`, a `terminal/create`'s `env`,
/// `_meta` headers): in the gate too, so a line without any of these is read once.
const PLACE_WORDS: &[&str] = &["mcpServers", "terminal/create", "_meta"];

/// Every rule as one regex (`r0`, `r1`, ... name the rules' alternatives, `s0`, `s1`, ... their
/// secrets), so that a line without a secret costs one pass.
pub(crate) struct Detector {
    /// The anchors, lower-cased, as one regex of literals over the lower-cased line: the first
    /// pass, which rules out almost every line (see [`Detector::could_hold_a_secret`]).
    gate: Regex,
    anchors: Regex,
    all: Regex,
    /// Each rule alone, to name a secret found by its context after its format when it has one
    /// (`x-api-key: sk-ant-...` is an Anthropic key).
    each: Vec<Regex>,
}

impl Detector {
    pub(crate) fn new() -> Detector {
        // "Not inside a word": the start of the line, a byte that is not a word's, or a JSON
        // escape (`\n`, `\t`, `\u00e9`: `n`, `t`, `9` would otherwise join the secret's word).
        const START: &str = r"(?:^|[^A-Za-z0-9_]|\\[nrtbf]|\\u[0-9A-Fa-f]{4})";
        let alternatives: Vec<String> = RULES
            .iter()
            .enumerate()
            .map(|(i, rule)| {
                let pattern = rule.pattern.replace("(?P<secret>", &format!("(?P<s{i}>"));
                let (flags, body) = match pattern.strip_prefix("(?i)") {
                    Some(body) => ("i", body.to_owned()),
                    None => ("", pattern.clone()),
                };
                let body = match body.strip_prefix(r"(?-u:\b)") {
                    Some(rest) => format!("{START}(?P<t{i}>{rest})"),
                    None => body,
                };
                format!("(?P<r{i}>(?{flags}:{body}))")
            })
            .collect();
        Detector {
            gate: Regex::new(
                &ANCHORS
                    .iter()
                    .chain(GATE_WORDS)
                    .chain(PLACE_WORDS)
                    .map(|a| regex::escape(&a.to_ascii_lowercase()))
                    .collect::<Vec<_>>()
                    .join("|"),
            )
            .expect("the gate builds"),
            // A regex of literals (its prefilter: SIMD over rare bytes), with the names a rule
            // matches in any case in a case-insensitive group.
            anchors: Regex::new(&format!(
                "{}|(?i:{})",
                ANCHORS
                    .iter()
                    .map(|a| regex::escape(a))
                    .collect::<Vec<_>>()
                    .join("|"),
                ANCHOR_WORDS.join("|")
            ))
            .expect("the anchors build"),
            all: Regex::new(&alternatives.join("|")).expect("the built-in rules compile"),
            each: RULES
                .iter()
                .map(|rule| Regex::new(rule.pattern).expect("the built-in rules compile"))
                .collect(),
        }
    }

    /// The secrets in `text`, in order, not overlapping (the gate, then the rules).
    #[cfg(test)]
    fn find(&self, text: &[u8]) -> Vec<Found> {
        if !self.might_hold_a_secret(text) {
            return Vec::new();
        }
        self.find_past_the_gate(text)
    }

    /// The secrets in a `text` that [`Detector::might_hold_a_secret`] let through, in order, not
    /// overlapping.
    pub(crate) fn find_past_the_gate(&self, text: &[u8]) -> Vec<Found> {
        let mut found = Vec::new();
        if !self.anchors.is_match(text) || !self.all.is_match(text) {
            return found;
        }
        let mut at = 0;
        while at < text.len() {
            let Some(captures) = self.all.captures_at(text, at) else {
                break;
            };
            let whole = captures.get(0).expect("group 0");
            match secret_of(&captures, text) {
                Some(mut secret) => {
                    // Found by its context: named after its format, if a format rule knows it.
                    if RULES
                        .iter()
                        .any(|r| r.id == secret.rule && r.pattern.contains("(?P<secret>"))
                    {
                        let value = &text[secret.range.clone()];
                        if let Some(rule) =
                            RULES.iter().zip(&self.each).find_map(|(rule, regex)| {
                                (!rule.pattern.contains("(?P<secret>") && regex.is_match(value))
                                    .then_some(rule.id)
                            })
                        {
                            secret.rule = rule;
                        }
                    }
                    at = secret.range.end.max(whole.start() + 1);
                    found.push(secret);
                }
                // A context without a plausible secret: look again after its start.
                None => at = whole.start() + 1,
            }
        }
        found
    }
}

impl Detector {
    /// Whether `text` holds an anchor, or the name of a place `redact` looks into (`mcpServers`,
    /// `terminal/create`, `_meta`), in any case: one pass rules out almost every line. The anchors' own regex cannot use its SIMD
    /// prefilter once the context words are case-insensitive (it ran a lazy DFA over every byte:
    /// 3.5 µs per KiB, the recorder's largest cost at 1 KiB lines); literals over a lower-cased
    /// copy can (0.4 to 1.1 µs per KiB with the copy, issue 31's profile). A superset of the
    /// anchors, so it only rules lines out.
    pub(crate) fn might_hold_a_secret(&self, text: &[u8]) -> bool {
        thread_local! {
            static LOWERED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        // A window at a time, each overlapping the last by as many bytes as the longest literal
        // can take (three a letter, for the Kelvin sign), so no literal falls between two: a
        // 64 MiB line costs 64 KiB more, not 64 MiB.
        let overlap = ANCHORS
            .iter()
            .chain(GATE_WORDS)
            .chain(PLACE_WORDS)
            .map(|literal| literal.len())
            .max()
            .unwrap_or(1)
            * 3;
        LOWERED.with_borrow_mut(|lowered| {
            let mut start = 0;
            loop {
                let end = text.len().min(start + GATE_WINDOW);
                lowered.clear();
                lowered.extend_from_slice(&text[start..end]);
                lowered.make_ascii_lowercase();
                fold_to_ascii(lowered);
                if self.gate.is_match(lowered) {
                    return true;
                }
                if end == text.len() {
                    return false;
                }
                start = end - overlap;
            }
        })
    }
}

/// Writes the two characters that Unicode case folding makes ASCII letters as those letters: the
/// rules that ignore case do so the Unicode way (`(?i)`), so `x-api-\u{212A}ey` (a Kelvin sign)
/// is an `api-key` header to them, and `aws_\u{17F}ecret` (a long s) an AWS secret; the gate
/// must let such a line through. (These two are the only characters outside ASCII that a
/// case-insensitive ASCII letter matches; a test asks the regex crate.)
fn fold_to_ascii(lowered: &mut Vec<u8>) {
    const FOLDS: [(&[u8], u8); 2] = [("\u{212A}".as_bytes(), b'k'), ("\u{17F}".as_bytes(), b's')];
    if memchr::memchr2(0xE2, 0xC5, lowered).is_none() {
        return;
    }
    let mut folded = Vec::with_capacity(lowered.len());
    let mut rest = &lowered[..];
    while let Some((&first, tail)) = rest.split_first() {
        match FOLDS.iter().find(|(from, _)| rest.starts_with(from)) {
            Some((from, to)) => {
                folded.push(*to);
                rest = &rest[from.len()..];
            }
            None => {
                folded.push(first);
                rest = tail;
            }
        }
    }
    *lowered = folded;
}

/// The bytes the gate lower-cases and reads at a time (see [`Detector::might_hold_a_secret`]).
const GATE_WINDOW: usize = 64 * 1024;

impl Default for Detector {
    fn default() -> Self {
        Detector::new()
    }
}

/// The rule that matched and the bytes it replaces, if its check passes.
fn secret_of(captures: &Captures, text: &[u8]) -> Option<Found> {
    let (i, rule) = RULES
        .iter()
        .enumerate()
        .find(|(i, _)| captures.name(&format!("r{i}")).is_some())?;
    let whole = captures.name(&format!("r{i}"))?.range();
    let secret_group = captures.name(&format!("s{i}"));
    let mut range = secret_group
        .or_else(|| captures.name(&format!("t{i}")))
        .map_or(whole.clone(), |m| m.range());
    // A rule ending in a boundary class (`(?:[^...]|$)`) does not replace the byte after it.
    if secret_group.is_none()
        && rule.pattern.ends_with("|$)")
        && let Some(last) = text.get(range.end.wrapping_sub(1))
        && !last.is_ascii_alphanumeric()
        && !b"_-".contains(last)
    {
        range.end -= 1;
    }
    let candidate = Candidate {
        line: text,
        matched: whole,
        secret: range.clone(),
    };
    if !(rule.check)(&candidate) {
        return None;
    }
    Some(Found {
        rule: rule.id,
        range,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Escapes as JSON writes them: a secret right after `\n` or `\ud83d`, and `\/` inside one.
    #[test]
    fn json_escapes_neither_hide_nor_cut_a_secret() {
        let detector = Detector::new();
        let token = "ghp_pjPSa5W3X4gXBolZ9SHDdJp62hDiZDQHJMu8";
        for line in [
            format!(r#"{{"text":"line1\n{token}\nline2"}}"#),
            format!(r#"{{"text":"\ud83d\udd11{token}"}}"#),
            format!(r#"{{"text":"token:\u0020{token}"}}"#),
        ] {
            let found = detector.find(line.as_bytes());
            assert_eq!(found.len(), 1, "{line}");
            assert_eq!(
                &line.as_bytes()[found[0].range.clone()],
                token.as_bytes(),
                "{line}"
            );
        }
        let line = r#"{"text":"Authorization: Basic dXNlcjpw\/YXNzd29yZA=="}"#;
        let found = detector.find(line.as_bytes());
        assert_eq!(found.len(), 1, "{line}");
        assert_eq!(&line[found[0].range.clone()], r#"dXNlcjpw\/YXNzd29yZA=="#);
    }

    /// Each rule finds its example of the recall corpus, exactly (through the anchors: a line
    /// without one is not looked at, so a rule whose match can lack every anchor fails here).
    #[test]
    fn every_rule_finds_its_examples_through_the_anchors() {
        let corpus = include_str!("../../tests/fixtures/redaction/recall.tsv");
        let detector = Detector::new();
        let mut seen = std::collections::BTreeSet::new();
        for line in corpus.lines() {
            let mut parts = line.split('\t');
            let (rule, text, secret) = (
                parts.next().unwrap(),
                parts.next().unwrap(),
                parts.next().unwrap(),
            );
            let found = detector.find(text.as_bytes());
            assert_eq!(found.len(), 1, "{text}");
            assert_eq!(found[0].rule, rule, "{text}");
            assert_eq!(
                &text.as_bytes()[found[0].range.clone()],
                secret.as_bytes(),
                "{text}"
            );
            seen.insert(rule);
        }
        // Every rule is tried by the corpus.
        for rule in RULES {
            assert!(seen.contains(rule.id), "no example of {}", rule.id);
        }
    }

    /// The characters outside ASCII that a case-insensitive ASCII letter matches, as the rules'
    /// regex reads them, are the ones the gate folds.
    #[test]
    fn the_gate_folds_every_character_the_rules_take_for_an_ascii_letter() {
        let letter = Regex::new(r"(?i)^[a-z]$").unwrap();
        let folded: Vec<char> = (0x80u32..0x11_0000)
            .filter_map(char::from_u32)
            .filter(|c| letter.is_match(c.to_string().as_bytes()))
            .collect();
        assert_eq!(folded, ['\u{17F}', '\u{212A}']);
        let detector = Detector::new();
        for line in [
            "x-api-\u{212A}ey: abcd1234efgh5678ijkl",
            "aws_\u{17F}ecret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEZ",
            "private-to\u{212A}en: 0123456789abcdefghij",
        ] {
            assert!(detector.might_hold_a_secret(line.as_bytes()), "{line}");
            assert!(detector.anchors.is_match(line.as_bytes()), "{line}");
        }
    }

    proptest::proptest! {
        /// The gate never rules out a line the anchors match: any anchor, or any spelling of a
        /// context word (each `_?` there or not), in any case, amid any bytes.
        #[test]
        fn the_gate_passes_every_line_the_anchors_match(
            before in proptest::collection::vec(proptest::num::u8::ANY, 0..40),
            after in proptest::collection::vec(proptest::num::u8::ANY, 0..40),
            which in 0..ANCHORS.len() + ANCHOR_WORDS.len(),
            underscores in proptest::collection::vec(proptest::bool::ANY, 3),
            uppercase in proptest::collection::vec(proptest::bool::ANY, 32),
        ) {
            let detector = Detector::new();
            let mut blanks = underscores.iter();
            let word = match ANCHORS.get(which) {
                Some(anchor) => anchor.to_string(),
                None => ANCHOR_WORDS[which - ANCHORS.len()]
                    .split("_?")
                    .collect::<Vec<_>>()
                    .iter()
                    .enumerate()
                    .map(|(i, part)| {
                        let blank = i > 0 && *blanks.next().unwrap_or(&false);
                        format!("{}{part}", if blank { "_" } else { "" })
                    })
                    .collect::<String>(),
            };
            // Each letter in either case, and a k or an s now and then as the character that
            // Unicode case folding makes it (the Kelvin sign, the long s).
            let word: Vec<u8> = word
                .chars()
                .zip(uppercase.iter().cycle().zip(uppercase.iter().rev().cycle()))
                .flat_map(|(c, (up, odd))| {
                    let c = match (c.to_ascii_lowercase(), *up && *odd) {
                        ('k', true) => '\u{212A}',
                        ('s', true) => '\u{17F}',
                        _ if *up => c.to_ascii_uppercase(),
                        _ => c.to_ascii_lowercase(),
                    };
                    c.to_string().into_bytes()
                })
                .collect();
            let text = [&before[..], &word, &after].concat();
            // The same word across the boundary of the gate's windows.
            let straddling = [&vec![b' '; GATE_WINDOW - word.len() / 2 - 1][..], &word, &after].concat();
            if detector.anchors.is_match(&straddling) {
                proptest::prop_assert!(detector.might_hold_a_secret(&straddling));
            }
            if detector.anchors.is_match(&text) {
                proptest::prop_assert!(detector.might_hold_a_secret(&text), "{:?}", String::from_utf8_lossy(&text));
            }
        }
    }
}
