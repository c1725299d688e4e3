//! Replaying recordings: as the agent toward a live client (`agent.rs`), or as the client
//! toward a live agent (`client.rs`). Both read a recorded connection as a script (`script.rs`).

pub mod agent;
pub mod client;
pub mod divergence;
pub mod script;
