//! acptap: a byte-exact recording proxy for the Agent Client Protocol.
//!
//! Where a line goes, in the order to read the modules:
//!
//! ```text
//! stdin ─► proxy::pump (proxy::framing splits lines) ─► record::RecorderHandle::record_lines ┐
//!       └─► proxy::pump's writer thread ─► agent stdin                                    │
//! agent stdout ─► proxy::pump ─► (recorded first, the same way) ─► stdout                 │
//!                                                                                         ▼
//!      record (recorder thread) ─► protocol::parse_line ─► protocol::SessionState ─► record::store ─► SQLite
//! ```
//!
//! - [`proxy`]: framing, forwarding, the agent's lifecycle, the policy tap. The only module on the
//!   data path.
//! - [`protocol`]: sans-IO understanding of ACP: message kinds, tool-call state, correlation.
//! - [`policy`]: sans-IO decisions on permission requests: rules, paths, shell commands, the
//!   command table (what a command's options and arguments can do), the built-in guards.
//! - [`record`]: the recorder thread, redaction, the schema's writes, the read-side queries, the
//!   transcript format and its import.
//! - [`export`]: transcripts and traces written from a recording, through the read side.
//! - [`replay`]: a recording played as the agent or as the client, and the divergence report.
//! - [`inspect`]: recordings rendered (show, report, stats, tail); [`bench`] measures the proxy.
//! - [`ui`]: the local web inspector; [`mcp`]: the recordings as an MCP server for agents.
//! - [`cli`]: the commands and the config file; [`demo`] is the built-in demo.
//! - [`terminal`]: the one sanitiser of recorded text printed to a terminal (a leaf).

pub mod bench;
pub mod bench_read;
pub mod check;
pub mod cli;
pub mod demo;
pub mod export;
pub mod inspect;
pub mod mcp;
pub mod policy;
pub mod protocol;
pub mod proxy;
pub mod record;
pub mod replay;
pub mod terminal;
pub mod ui;

#[cfg(test)]
mod fuzz;

#[cfg(test)]
mod layering {
    //! What each module may import from the others, checked on the source: the data path and
    //! the sans-IO cores stay free of the views and the commands.

    use std::path::Path;

    /// Module, and the crate modules it may name.
    const ALLOWED: &[(&str, &[&str])] = &[
        ("protocol", &[]),
        ("terminal", &[]),
        ("policy", &["protocol"]),
        ("record", &["protocol", "terminal"]),
        ("proxy", &["policy", "protocol", "record"]),
        ("inspect", &["record", "protocol", "terminal"]),
        (
            "replay",
            &["policy", "protocol", "proxy", "record", "terminal"],
        ),
        ("demo", &["inspect", "proxy", "record"]),
        ("bench", &["record", "protocol"]),
        ("bench_read", &["record", "protocol"]),
        ("export", &["record", "protocol", "terminal"]),
        ("check", &["protocol", "terminal"]),
        ("ui", &["record", "inspect", "export"]),
        ("mcp", &["record", "inspect", "export", "check", "policy"]),
    ];

    fn sources(path: &Path, out: &mut Vec<std::path::PathBuf>) {
        if path.is_dir() {
            for entry in std::fs::read_dir(path).unwrap() {
                sources(&entry.unwrap().path(), out);
            }
        } else if path.is_file() && path.extension().is_some_and(|e| e == "rs") {
            out.push(path.to_owned());
        }
    }

    #[test]
    fn each_module_imports_only_what_it_may() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let names = regex::Regex::new(r"crate::([a-z_]+)").unwrap();
        for (module, allowed) in ALLOWED {
            let mut files = Vec::new();
            sources(&src.join(module), &mut files);
            sources(&src.join(format!("{module}.rs")), &mut files);
            assert!(!files.is_empty(), "no source for {module}");
            for file in files {
                let text = std::fs::read_to_string(&file).unwrap();
                for found in names.captures_iter(&text) {
                    let name = &found[1];
                    assert!(
                        name == *module || allowed.contains(&name),
                        "{} names crate::{name}; `{module}` may name only {allowed:?}",
                        file.display()
                    );
                }
            }
        }
    }
}
