//! Replaying recordings: as the agent toward a live client (`agent.rs`), or as the client
//! toward a live agent (`client.rs`). Both read a recorded connection as a script (`script.rs`).

pub mod agent;
pub mod client;
pub mod divergence;
pub mod outbound;
pub mod script;

/// Whether `path` lies in `dir`, by its components after `.` and `..` are taken out lexically
/// (a replay answers files inside the session's cwd only).
pub fn lexically_inside(path: &std::path::Path, dir: &std::path::Path) -> bool {
    use std::path::Component;
    let mut clean = std::path::PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                if !clean.pop() {
                    return false;
                }
            }
            Component::CurDir => {}
            other => clean.push(other),
        }
    }
    clean.starts_with(dir)
}
