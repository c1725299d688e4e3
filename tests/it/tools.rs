//! The real components the tests drive, where `scripts/test.sh` (the README's test command)
//! puts them: `$ACPTAP_TOOLS` (default `~/.cache/acptap-ci`) and `$ACPTAP_CHROMIUM`. A missing
//! one fails its test with the command that installs it: no test skips.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What to say when a component is missing.
const FIX: &str = "run `scripts/test.sh` (the README's test command), which installs it";

/// `$ACPTAP_TOOLS`, else `~/.cache/acptap-ci`.
fn tools_dir() -> PathBuf {
    std::env::var_os("ACPTAP_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".cache/acptap-ci")
        })
}

fn present(path: PathBuf, what: &str) -> PathBuf {
    assert!(
        path.exists(),
        "{} is missing: {what}; {FIX}",
        path.display()
    );
    path
}

/// The tools' Python, with the MCP SDK, junitparser and websockets.
pub fn python() -> PathBuf {
    present(
        tools_dir().join("venv/bin/python"),
        "the Python with the MCP SDK, junitparser and websockets",
    )
}

/// Arize Phoenix's `phoenix` command, the trace backend of the OTLP tests.
pub fn phoenix() -> PathBuf {
    present(
        tools_dir().join("venv/bin/phoenix"),
        "Arize Phoenix, the trace backend the OTLP tests send to",
    )
}

/// `acpx`, a real ACP client; its folder also holds the Node.js it runs on.
pub fn acpx() -> PathBuf {
    present(
        tools_dir().join("acpx/node_modules/.bin/acpx"),
        "acpx, the real ACP client of replay's hostile-recording test",
    )
}

/// acpx set to run one prompt (`exec PROMPT`, added by the caller after the agent) in `project`
/// with every permission approved and JSON output, its Node.js first on `PATH`, stdin closed
/// and stdout and stderr piped.
pub fn acpx_in(project: &Path) -> Command {
    let acpx = acpx();
    let path = format!(
        "{}:{}",
        acpx.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new(&acpx);
    command
        .args([
            "--format",
            "json",
            "--approve-all",
            "--timeout",
            "60",
            "--cwd",
        ])
        .arg(project)
        .current_dir(project)
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Headless Chromium: `$ACPTAP_CHROMIUM`, else the first of the usual names on `PATH`.
pub fn chromium() -> PathBuf {
    if let Some(path) = std::env::var_os("ACPTAP_CHROMIUM") {
        return present(PathBuf::from(path), "ACPTAP_CHROMIUM names no file");
    }
    let names = [
        "chromium",
        "chromium-browser",
        "google-chrome-stable",
        "google-chrome",
    ];
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .flat_map(|dir| names.map(|name| dir.join(name)))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| {
            panic!(
                "no Chromium on PATH (tried {names:?}): the report and UI tests load pages in \
                 headless Chromium; {FIX} (or says what to install), or set ACPTAP_CHROMIUM"
            )
        })
}
