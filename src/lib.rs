//! acptap: a byte-exact recording proxy for the Agent Client Protocol.
//!
//! Where a line goes, in the order to read the modules:
//!
//! ```text
//! stdin ─► proxy::pump (proxy::framing splits lines) ─► record::RecorderHandle::record_lines ┐
//!       └─► proxy::pump's writer thread ─► agent stdin                                    │
//! agent stdout ─► proxy::pump ─► (recorded first, the same way) ─► stdout                 │
//!                                                                                         ▼
//!      record (recorder thread) ─► protocol::parse_line ─► protocol::Observer ─► record::store ─► SQLite
//! ```
//!
//! - [`proxy`]: framing, forwarding, the agent's lifecycle, the policy tap. The only module on the
//!   data path.
//! - [`protocol`]: sans-IO understanding of ACP: message kinds, tool-call state, correlation.
//! - [`policy`]: sans-IO decisions on permission requests: rules, paths, shell commands, the
//!   command table (what a command's options and arguments can do), the built-in guards.
//! - [`record`]: the recorder thread, redaction, the schema's writes, the read-side queries,
//!   transcripts and traces.
//! - [`replay`]: a recording played as the agent or as the client, and the divergence report.
//! - [`inspect`]: recordings rendered (show, report, stats, tail); [`bench`] measures the proxy.
//! - [`cli`]: the commands and the config file; [`demo`] is the built-in demo.

pub mod bench;
pub mod cli;
pub mod demo;
pub mod inspect;
pub mod policy;
pub mod protocol;
pub mod proxy;
pub mod record;
pub mod replay;
