//! The configuration file: `$XDG_CONFIG_HOME/acptap/config.toml` (else
//! `~/.config/acptap/config.toml`), or `--config PATH` / `$ACPTAP_CONFIG`.
//!
//! ```toml
//! db = "~/recordings/acptap.db"     # where recordings go (after --db and $ACPTAP_DB)
//! policy = ["~/.config/acptap/project.toml"]   # used by `acptap run` when no --policy is given
//! color = "auto"                    # auto | always | never, for `acptap tail`
//!
//! [redact]
//! default = true                    # the well-known secret shapes (--no-default-redact)
//! patterns = ["internal-[0-9]+"]    # more regexes, added to --redact
//! ```
//!
//! Strict: an unknown key is an error naming the file, line and key. A missing default file is
//! an empty configuration; a missing file named by `--config` is an error. Command-line flags and
//! environment variables win over the file. `--help` never reads it.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::Context;
use serde::Deserialize;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Config {
    #[serde(default)]
    pub db: Option<PathBuf>,
    #[serde(default)]
    pub policy: Vec<PathBuf>,
    #[serde(default)]
    pub color: Option<ColorChoice>,
    #[serde(default)]
    pub redact: RedactConfig,
    #[serde(default)]
    pub otlp: OtlpConfig,
    #[serde(default)]
    pub check: CheckConfig,
}

/// `acptap check`'s settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CheckConfig {
    /// Rules not reported for an agent: its name as it answers initialize (a prefix of
    /// "NAME VERSION" matches, so "Gemini CLI" covers every version), or "*" for every agent.
    #[serde(default)]
    pub silence: std::collections::BTreeMap<String, Vec<String>>,
}

impl CheckConfig {
    /// Whether findings of `rule` are silenced for `agent`.
    pub(crate) fn silenced(&self, agent: Option<&str>, rule: &str) -> bool {
        self.silence.iter().any(|(who, rules)| {
            (who == "*" || agent.is_some_and(|a| a.starts_with(who.as_str())))
                && rules.iter().any(|r| r == rule)
        })
    }

    /// Every silenced rule id is a rule: a typo would silence nothing.
    pub(crate) fn validate(&self) -> anyhow::Result<()> {
        for (who, rules) in &self.silence {
            for rule in rules {
                if crate::check::rule(rule).is_none() {
                    anyhow::bail!(
                        "the config file's [check] silence for `{who}` names `{rule}`, which is not a rule; the rules are listed by docs/check.md"
                    );
                }
            }
        }
        Ok(())
    }
}

/// Where `acptap export --format otlp` and `acptap run --otlp` send, when the command line and
/// the environment do not say; and whether every `acptap run` sends.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct OtlpConfig {
    pub endpoint: Option<String>,
    #[serde(default)]
    pub headers: std::collections::BTreeMap<String, String>,
    /// Every `acptap run` exports live, as with `--otlp` (`--no-otlp` turns it off).
    #[serde(default)]
    pub run: bool,
    /// Tool calls' arguments and results go into the spans.
    #[serde(default)]
    pub tool_content: bool,
}

impl OtlpConfig {
    /// The endpoint: `url` (the command line), else the OpenTelemetry environment variables,
    /// else this section's `endpoint`, else localhost; headers from this section, then the
    /// environment, then `headers` (the command line), the later winning.
    pub(crate) fn endpoint(
        &self,
        url: Option<&str>,
        headers: Vec<(String, String)>,
    ) -> anyhow::Result<crate::export::otlp::Endpoint> {
        let defaults = self
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        crate::export::otlp::from_environment(url, defaults, headers, |name| {
            std::env::var(name).ok().or_else(|| {
                (name == "OTEL_EXPORTER_OTLP_ENDPOINT")
                    .then(|| self.endpoint.clone())
                    .flatten()
            })
        })
        .map_err(anyhow::Error::from)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RedactConfig {
    #[serde(default = "yes")]
    pub default: bool,
    #[serde(default)]
    pub patterns: Vec<String>,
}

impl Default for RedactConfig {
    fn default() -> Self {
        RedactConfig {
            default: true,
            patterns: Vec::new(),
        }
    }
}

fn yes() -> bool {
    true
}

static CONFIG: OnceLock<Config> = OnceLock::new();

/// The configuration in force (empty until [`load`] ran).
pub(crate) fn current() -> &'static Config {
    CONFIG.get_or_init(Config::default)
}

/// `$VAR/acptap/NAME`, else `~/FALLBACK/acptap/NAME`: where the XDG base directory
/// specification puts a file.
///
/// As the specification says, a relative `$VAR` is ignored; an empty or relative `$HOME` is no
/// home at all (so nothing lands in the current directory by accident).
pub(crate) fn xdg_path(var: &str, fallback: &str, name: &str) -> Option<PathBuf> {
    let absolute = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    let base = std::env::var_os(var).and_then(absolute).or_else(|| {
        std::env::var_os("HOME")
            .and_then(absolute)
            .map(|h| h.join(fallback))
    })?;
    Some(base.join("acptap").join(name))
}

fn default_path() -> Option<PathBuf> {
    xdg_path("XDG_CONFIG_HOME", ".config", "config.toml")
}

/// `~/x` relative to $HOME, as people write paths in a config file.
fn expand_home(path: &Path) -> PathBuf {
    match (path.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => path.to_owned(),
    }
}

/// Reads the configuration once, before any command runs.
pub(crate) fn load(explicit: Option<&Path>) -> anyhow::Result<&'static Config> {
    let path = match explicit {
        Some(path) => Some(path.to_owned()),
        None => default_path().filter(|p| p.exists()),
    };
    let mut config = match &path {
        None => Config::default(),
        Some(path) => {
            // Bounded, and never waiting on a pipe.
            let text = crate::policy::rules::read_regular_file(path, "config file", 1 << 20)
                .with_context(|| format!("cannot read the config file {}", path.display()))?;
            toml::from_str::<Config>(&text).map_err(|e| {
                let line = e
                    .span()
                    .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1)
                    .unwrap_or(0);
                anyhow::anyhow!("{}:{line}: {}", path.display(), e.message())
            })?
        }
    };
    config.db = config.db.as_deref().map(expand_home);
    config.policy = config.policy.iter().map(|p| expand_home(p)).collect();
    Ok(CONFIG.get_or_init(|| config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_keys_with_lines() {
        let e = toml::from_str::<Config>("db = \"x\"\n[redact]\ndefualt = false\n").unwrap_err();
        assert!(e.message().contains("defualt"), "{e}");
        let c: Config =
            toml::from_str("color = \"never\"\n[redact]\npatterns = [\"a\"]\n").unwrap();
        assert_eq!(c.color, Some(ColorChoice::Never));
        assert!(c.redact.default, "defaults stay on unless turned off");
        assert_eq!(c.redact.patterns, vec!["a".to_owned()]);
        let c: Config = toml::from_str(
            "[otlp]\nendpoint = \"http://h:4318\"\nheaders = { authorization = \"Bearer k\" }\n",
        )
        .unwrap();
        assert_eq!(c.otlp.endpoint.as_deref(), Some("http://h:4318"));
        assert_eq!(c.otlp.headers["authorization"], "Bearer k");
        assert!(toml::from_str::<Config>("[otlp]\nendpiont = \"x\"\n").is_err());
    }
}
