//! The protocol layer, sans-IO: what a line is ([`message`]), which protocol version a connection
//! speaks and what each version allows ([`version`]), how a tool call's state evolves
//! ([`toolcall`]), how a conversation's messages are assembled ([`conversation`]), and the state a
//! stream of lines builds ([`state`]). Nothing here reads, writes or waits; `proxy/` and `record/`
//! do.

pub(crate) mod conversation;
pub mod message;
pub(crate) mod relocate;
pub(crate) mod state;
pub mod toolcall;
pub(crate) mod version;

pub use message::{Direction, Message, MessageKind, parse_line};
pub use state::{Fact, Observed, SessionState};
pub use version::Version;
