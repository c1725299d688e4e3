//! The protocol layer, sans-IO: what a line is ([`message`]), how a tool call's state evolves
//! ([`toolcall`]), and the state a stream of lines builds ([`state`]). Nothing here reads, writes or
//! waits; `proxy/` and `record/` do.

pub mod message;
pub mod state;
pub mod toolcall;

pub use message::{Direction, Message, MessageKind, parse_line};
pub use state::{Fact, Observed, SessionState};
