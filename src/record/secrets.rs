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
    /// without one, the whole match is.
    pub pattern: &'static str,
    /// A check the match must also pass (what a regex without look-around cannot say).
    pub check: Option<fn(&[u8]) -> bool>,
}

/// The formats, most specific first (the first rule matching at a place wins).
pub const RULES: &[Rule] = &[
    Rule {
        id: "private-key",
        pattern: r"-----BEGIN[A-Z ]{0,20} PRIVATE KEY(?: BLOCK)?-----[^\x22]{16,}?-----END[A-Z ]{0,20} PRIVATE KEY(?: BLOCK)?-----",
        check: None,
    },
    Rule {
        id: "anthropic-api-key",
        pattern: r"(?-u:\b)sk-ant-(?:api|admin|oat|ort)[0-9]{2}-[A-Za-z0-9_\-]{80,120}",
        check: None,
    },
    Rule {
        id: "openai-api-key",
        pattern: r"(?-u:\b)sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{40,200}|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}(?-u:\b)|[A-Za-z0-9]{48}(?-u:\b))",
        check: None,
    },
    Rule {
        id: "github-token",
        pattern: r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{36}(?-u:\b)|github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}(?-u:\b))",
        check: None,
    },
    Rule {
        id: "gitlab-token",
        pattern: r"(?-u:\b)gl(?:pat|dt|rt|ptt|soat|cbt|imt|oas|ffct|ft)-[A-Za-z0-9_\-]{20,64}",
        check: None,
    },
    Rule {
        id: "slack-token",
        pattern: r"(?-u:\b)(?:xox[abposer]-(?:[0-9]{6,13}-){1,3}[A-Za-z0-9\-]{6,}|xapp-[0-9]-[A-Z0-9]{6,}-[0-9]{6,}-[A-Za-z0-9]{20,})",
        check: None,
    },
    Rule {
        id: "slack-webhook-url",
        pattern: r"hooks\.slack\.com/(?:services|workflows|triggers)/T[A-Z0-9]{6,}/[A-Z0-9]{6,}/[A-Za-z0-9]{16,}",
        check: None,
    },
    Rule {
        id: "aws-access-key-id",
        pattern: r"(?-u:\b)(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z2-7]{16}(?-u:\b)",
        check: None,
    },
    Rule {
        id: "aws-secret-access-key",
        pattern: r#"(?i)aws_?(?:secret_?access_?key|secret_?key|secret)[\s"'\\]{0,4}[:=][\s"'\\]{0,4}(?P<secret>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)"#,
        check: Some(plausible_credential),
    },
    Rule {
        id: "gcp-api-key",
        pattern: r"(?-u:\b)AIza[0-9A-Za-z_\-]{35}(?:[^0-9A-Za-z_\-]|$)",
        check: None,
    },
    Rule {
        id: "stripe-access-token",
        pattern: r"(?-u:\b)(?:sk|rk)_(?:live|test|prod)_[0-9A-Za-z]{20,99}(?-u:\b)",
        check: None,
    },
    Rule {
        id: "jwt",
        pattern: r"(?-u:\b)eyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}",
        check: None,
    },
    Rule {
        id: "authorization-header",
        pattern: r#"(?i)(?-u:\b)(?:proxy-)?authorization(?-u:\b)[\s"'\\]{0,4}[:=][\s"'\\]{0,4}(?:(?:bearer|basic|token|digest|apikey|api-key)\s+)?(?P<secret>[A-Za-z0-9._~+/=\-]{8,})"#,
        check: Some(plausible_credential),
    },
    Rule {
        id: "api-key-header",
        pattern: r#"(?i)(?-u:\b)(?:x-api-key|api-key|x-auth-token|x-goog-api-key|private-token|anthropic-api-key|openai-api-key)(?-u:\b)[\s"'\\]{0,4}[:=][\s"'\\]{0,4}(?P<secret>[A-Za-z0-9._~+/=\-]{16,})"#,
        check: Some(plausible_credential),
    },
];

/// Whether text after `Authorization:` (or in another place that names a credential) looks like
/// one and not like a word: a digit, or upper and lower case mixed, or one of `+/=_-.~`. So
/// "Authorization: Bearer authentication" stays, "Authorization: Basic dXNlcjpwYXNz" goes.
pub fn plausible_credential(text: &[u8]) -> bool {
    let digit = text.iter().any(u8::is_ascii_digit);
    let upper = text.iter().any(u8::is_ascii_uppercase);
    let lower = text.iter().any(u8::is_ascii_lowercase);
    let symbol = text.iter().any(|b| b"+/=_-.~".contains(b));
    digit || (upper && lower) || symbol
}

/// A secret found in a line: which rule, and the bytes to replace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub rule: &'static str,
    pub range: std::ops::Range<usize>,
}

/// Literal parts of which every rule's match holds at least one: a line with none of them holds
/// no secret, and most lines are ruled out by this one fast pass (case-sensitive, which lets
/// the search use SIMD: the names matched in any case by a rule are listed in their usual
/// spellings: `authorization`, `Authorization`, `AUTHORIZATION` by `uthorization` and its
/// upper case).
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
    "aws_secret",
    "AWS_SECRET",
    "awssecret",
    "AWSSECRET",
    "Aws_Secret",
    "AwsSecret",
    "AIza",
    "_live_",
    "_test_",
    "_prod_",
    "eyJ",
    "uthorization",
    "UTHORIZATION",
    "pi-key",
    "pi-Key",
    "PI-KEY",
    "uth-token",
    "uth-Token",
    "UTH-TOKEN",
    "rivate-token",
    "rivate-Token",
    "RIVATE-TOKEN",
];

/// Every rule as one regex (`r0`, `r1`, ... name the rules' alternatives, `s0`, `s1`, ... their
/// secrets), so that a line without a secret costs one pass.
pub struct Detector {
    anchors: Regex,
    all: Regex,
    /// Each rule alone, to name a secret found by its context after its format when it has one
    /// (`x-api-key: sk-ant-...` is an Anthropic key).
    each: Vec<Regex>,
}

impl Detector {
    pub fn new() -> Detector {
        let alternatives: Vec<String> = RULES
            .iter()
            .enumerate()
            .map(|(i, rule)| {
                let pattern = rule.pattern.replace("(?P<secret>", &format!("(?P<s{i}>"));
                format!("(?P<r{i}>{pattern})")
            })
            .collect();
        Detector {
            // A regex of literals: its prefilter (SIMD over rare bytes) is faster here than an
            // Aho-Corasick automaton alone.
            anchors: Regex::new(
                &ANCHORS
                    .iter()
                    .map(|a| regex::escape(a))
                    .collect::<Vec<_>>()
                    .join("|"),
            )
            .expect("the anchors build"),
            all: Regex::new(&alternatives.join("|")).expect("the built-in rules compile"),
            each: RULES
                .iter()
                .map(|rule| Regex::new(rule.pattern).expect("the built-in rules compile"))
                .collect(),
        }
    }

    /// The secrets in `text`, in order, not overlapping.
    pub fn find(&self, text: &[u8]) -> Vec<Found> {
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
    let span = captures
        .name(&format!("s{i}"))
        .or_else(|| captures.name(&format!("r{i}")))?;
    // A rule ending in a boundary class (`(?:[^...]|$)`) does not replace the byte after it.
    let mut range = span.range();
    if captures.name(&format!("s{i}")).is_none()
        && let Some(last) = text.get(range.end.wrapping_sub(1))
        && !last.is_ascii_alphanumeric()
        && !b"_-".contains(last)
        && rule.pattern.ends_with("|$)")
    {
        range.end -= 1;
    }
    if rule.check.is_some_and(|check| !check(&text[range.clone()])) {
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
}
