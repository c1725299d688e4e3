//! The protocol layer, sans-IO: what a line is ([`message`]), how a tool call's state evolves
//! ([`toolcall`]), and what a stream of lines means ([`observer`]). Nothing here reads, writes or
//! waits; `proxy/` and `record/` do.

pub mod message;
pub mod observer;
pub mod toolcall;

pub use message::{Direction, Message, MessageKind, parse_line};
pub use observer::{Fact, Observed, Observer};
