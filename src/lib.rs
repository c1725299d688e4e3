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
//! - [`policy`]: sans-IO decisions on permission requests (the file system through
//!   `policy::FileSystem`): rules, paths, shell commands, the command table (what a command's
//!   options and arguments can do), the built-in guards.
//! - [`record`]: the write side: the recorder thread, redaction, the schema's writes (the only SQL
//!   that writes), the search index's writer, the transcript format and its import.
//! - [`query`]: the read side: every read of a recording (the only SQL that reads), typed rows,
//!   pages, search, stats, follow, and the comparison engine of two sessions.
//! - [`export`]: transcripts, traces and spans written from a recording, through the read side.
//! - [`replay`]: a recording played as the agent or as the client, and the divergence report.
//! - [`check`]: a conversation checked against the protocol (pure, fed lines by the command).
//! - [`inspect`]: recordings rendered (show, report, stats, tail). The benchmark is a binary of
//!   its own (`acptap-bench`, bench/), outside the product, on this library's public API.
//! - [`ui`]: the local web inspector; [`mcp`]: the recordings as an MCP server for agents.
//! - [`cli`]: the commands and the config file; [`demo`] is the built-in demo.
//! - [`terminal`]: the one sanitiser of recorded text printed to a terminal (a leaf).

pub mod check;
pub mod cli;
pub mod demo;
pub mod export;
pub mod inspect;
pub(crate) mod learn;
pub mod mcp;
pub mod policy;
pub mod protocol;
pub mod proxy;
pub mod query;
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
        ("record", &["protocol"]),
        // The read side names `record` for the schema's facts only (its version, the lock wait,
        // the store's error), and `check` (pure) to check a recorded connection's lines.
        ("query", &["check", "protocol", "record", "terminal"]),
        ("proxy", &["policy", "protocol", "record"]),
        ("inspect", &["query", "protocol", "terminal"]),
        (
            "replay",
            &["policy", "protocol", "proxy", "query", "record", "terminal"],
        ),
        ("demo", &["inspect", "proxy", "query", "record"]),
        ("export", &["query", "record", "protocol", "terminal"]),
        ("check", &["protocol", "terminal"]),
        // Joins the read side and the policy: the user's answers as a suggested policy.
        ("learn", &["query", "policy"]),
        ("ui", &["query", "inspect", "export", "learn"]),
        (
            "mcp",
            &[
                "query", "record", "inspect", "export", "check", "policy", "learn",
            ],
        ),
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

    /// SQL that reads (`SELECT`, a transaction) is written only in `query`, SQL that writes only
    /// in `record`: no other module prepares a statement, and neither room does the other's.
    #[test]
    fn only_the_read_side_reads_and_only_the_recorder_writes() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let statement = regex::Regex::new(
            r#""\s*(SELECT|WITH|BEGIN|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|REPLACE|PRAGMA)\b"#,
        )
        .unwrap();
        let writes =
            regex::Regex::new(r#""\s*(INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|REPLACE)\b"#).unwrap();
        let mut files = Vec::new();
        sources(&src, &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let room = file.strip_prefix(&src).unwrap().iter().next().unwrap();
            let room = room.to_string_lossy();
            let here = file.display();
            match room.as_ref() {
                "record" => {}
                "query" => assert!(
                    !writes.is_match(&text),
                    "{here} writes SQL: that is record's"
                ),
                "lib.rs" => {}
                _ => {
                    assert!(
                        !statement.is_match(&text),
                        "{here} has SQL: reads go in query/, writes in record/"
                    );
                    assert!(
                        !text.contains(".conn()"),
                        "{here} reaches the read side's connection"
                    );
                }
            }
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
