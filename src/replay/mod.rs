//! Replaying recordings: as the agent toward a live client (`agent.rs`), or as the client
//! toward a live agent (`client.rs`). Both read a recorded connection as a script (`script.rs`).

pub mod agent;
pub(crate) mod client;
pub(crate) mod divergence;
pub mod outbound;
pub mod script;

use serde_json::Value;

use crate::proxy::ProxyError;
use crate::record::StoreError;

/// What can end a replay with an error (exit status 2); a divergence is no error, it is in the
/// report.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// As agent: a signal asked the replay to end (the summary follows, not as an error).
    #[error("ended by signal {0}")]
    Signalled(i32),
    /// As agent, with `--strict`: the live client asked what the recording has no answer for.
    /// The text is the one the client was answered.
    #[error("{0} (--strict)")]
    Strict(String),
    /// As agent: the live client left while the replay waited for its counterpart.
    #[error("the client closed its output while the replay waited for {expected} (turn {turn})")]
    ClientClosed { expected: String, turn: usize },
    /// As client: the live agent closed its output.
    #[error("the agent closed its output")]
    AgentClosed,
    /// As client: the live agent did not answer within `--patience`.
    #[error("the agent did not answer {method} within {patience:?} (--patience)")]
    NoAnswer {
        method: String,
        patience: std::time::Duration,
    },
    /// As client: a recorded cwd that fences nothing in, without `--cwd` (quoted made safe
    /// for a terminal).
    #[error(
        "the recorded cwd `{cwd}` is {why}: replayed there, it would fence nothing in; give --cwd DIR, the directory to replay in"
    )]
    UnfitCwd { cwd: String, why: &'static str },
    /// As client: the proxy in front of the live agent could not be set up.
    #[error("cannot start `{agent}` behind the proxy")]
    Start {
        agent: String,
        #[source]
        source: ProxyError,
    },
    /// As client: the proxy run of the live agent failed (the agent could not be started, ...).
    #[error(transparent)]
    Proxy(#[from] ProxyError),
    /// As client: the live run was not recorded, so there is nothing to compare.
    #[error("the live run could not be recorded (see the message above)")]
    NotRecorded,
    /// The database, opened to read the live run.
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Query(#[from] crate::query::QueryError),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// Writing to the live peer.
    /// Said as the I/O error itself, which stays in the chain as its source (not `transparent`):
    /// the command edge finds a closed stdout (`BrokenPipe`) there, and says the text once.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

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
pub(crate) fn lexical(path: &str) -> Option<String> {
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

    /// What the command edge does with an error: a closed stdout (`BrokenPipe`) anywhere in the
    /// chain ends the command quietly; the text is each cause once (`cli::errors::error_chain`).
    #[test]
    fn an_io_error_stays_in_the_chain_and_is_said_once() {
        let broken = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        let text = broken.to_string();
        for error in [
            ReplayError::from(std::io::Error::from(std::io::ErrorKind::BrokenPipe)),
            ReplayError::Proxy(ProxyError::from(broken)),
        ] {
            let chain: Vec<&dyn std::error::Error> =
                std::iter::successors(Some(&error as &dyn std::error::Error), |e| e.source())
                    .collect();
            assert!(chain.iter().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }));
            assert!(chain.iter().all(|c| c.to_string() == text));
        }
    }

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
