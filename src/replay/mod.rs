//! Replaying recordings: as the agent toward a live client (`agent.rs`), or as the client
//! toward a live agent (`client.rs`). Both read a recorded connection as a script (`script.rs`).

pub mod agent;
pub mod client;
pub mod divergence;
pub mod outbound;
pub mod script;

use serde_json::Value;

/// One line of the replay's own on stderr: what it quotes of the recording and the live peer
/// (methods, paths, ids) made safe for a terminal, kept on its line and cut.
pub(crate) fn say(what: &str) {
    eprintln!(
        "acptap replay: {}",
        crate::terminal::terminal_line(what, 2 * crate::terminal::VALUE_BYTES)
    );
}

/// The state a v2 `state_update` reports (`running`, `requires_action`, `idle`, ...), given a
/// `session/update`'s params; `None` for any other update.
///
/// A v2 turn runs from its prompt to the session's `idle` (the prompt's answer only says the
/// prompt was inserted). But an agent also reports its current state unasked (after
/// `session/new`, a resume), and that `idle` may cross the next prompt on the wire: an `idle`
/// ends a turn only once its prompt was answered or its work was seen running.
pub(crate) fn session_state(params: &Value) -> Option<&str> {
    let update = params.get("update")?;
    if update.get("sessionUpdate")?.as_str()? != "state_update" {
        return None;
    }
    update.get("state")?.as_str()
}

/// `path` with `.` and `..` resolved by its text; `None` if it climbs above its root (`/` for
/// an absolute path, the cwd for a relative one).
pub fn lexical(path: &str) -> Option<String> {
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    Some(if absolute {
        format!("/{joined}")
    } else {
        joined
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_a_state_update_has_a_session_state() {
        let update = |u: Value| json!({"sessionId": "s", "update": u});
        assert_eq!(
            session_state(&update(
                json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})
            )),
            Some("idle")
        );
        assert_eq!(
            session_state(&update(
                json!({"sessionUpdate": "state_update", "state": "running"})
            )),
            Some("running")
        );
        assert_eq!(
            session_state(&update(
                json!({"sessionUpdate": "agent_message", "state": "idle"})
            )),
            None
        );
    }
}
