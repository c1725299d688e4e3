//! acptap: a byte-exact recording proxy for the Agent Client Protocol.
//!
//! Where a line goes, in the order to read the modules:
//!
//! ```text
//! stdin ─► proxy::pump (proxy::framing splits lines) ─► record::RecorderHandle::record ─┐
//!       └─► proxy::pump's writer thread ─► agent stdin                                    │
//! agent stdout ─► proxy::pump ─► (recorded first, the same way) ─► stdout                 │
//!                                                                                         ▼
//!      record (recorder thread) ─► protocol::parse_line ─► protocol::Observer ─► record::store ─► SQLite
//! ```
//!
//! - [`proxy`]: framing, forwarding, the agent's lifecycle. The only module on the data path.
//! - [`protocol`]: sans-IO understanding of ACP: message kinds, tool-call state, correlation.
//! - [`record`]: the recorder thread, the schema's writes, and the read-side queries.
//! - [`cli`]: the commands; [`inspect`] renders recordings; [`demo`] is the built-in demo.

pub mod bench;
pub mod cli;
pub mod demo;
pub mod inspect;
pub mod policy;
pub mod protocol;
pub mod proxy;
pub mod record;
pub mod replay;
