//! The protocol version a connection speaks, and what each version allows.
//!
//! The version is negotiated by `initialize`: the client proposes one, the agent answers with
//! the one the connection uses. [`crate::protocol::SessionState::version`] holds it per
//! connection (the client's proposal until the agent answers); every consumer (recorder, policy
//! tap, replay, check, views) asks it there instead of guessing from a message's shape.
//!
//! Version 2 is the ACP v2 draft (the schema crate's `v2` module). It changes tool calls
//! (`tool_call_update` is an upsert, `tool_call_content_chunk` appends), messages (created and
//! updated by `messageId`), permission requests (`title`, `description`, `subject` instead of
//! `toolCall`), and which side serves what (the client no longer serves `fs/*` or `terminal/*`).

use serde_json::Value;

/// A negotiated (or proposed) protocol version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Version {
    /// Version 1, which every agent speaks today (0, pre-release, is read as 1).
    V1,
    /// The v2 draft.
    V2,
    /// A version acptap has no rules for (the number as sent; non-numbers are `None` from
    /// [`Version::from_value`]).
    Other(u64),
}

impl Version {
    /// The version a `protocolVersion` value names; `None` when it is not a non-negative integer.
    pub(crate) fn from_value(value: &Value) -> Option<Version> {
        // `2.0` is 2 to a JavaScript peer.
        let number = value.as_u64().or_else(|| {
            value
                .as_f64()
                .filter(|f| f.fract() == 0.0 && (0.0..=u32::MAX as f64).contains(f))
                .map(|f| f as u64)
        })?;
        Some(match number {
            0 | 1 => Version::V1,
            2 => Version::V2,
            other => Version::Other(other),
        })
    }

    pub(crate) fn is_v2(self) -> bool {
        self == Version::V2
    }

    /// Whether the client serves `fs/*` and `terminal/*` requests in this version (v1 only: the
    /// v2 draft moved files and terminals to the agent).
    pub(crate) fn client_serves_fs_and_terminals(self) -> bool {
        self == Version::V1
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Version::V1 => f.write_str("v1"),
            Version::V2 => f.write_str("v2 (draft)"),
            Version::Other(n) => write!(f, "v{n} (unknown)"),
        }
    }
}

/// The methods each side sends, by version: requests and notifications. `None`: a method acptap
/// does not know in that version (an extension `_...` method, or one from elsewhere).
pub(crate) fn sender_of(version: Version, method: &str) -> Option<Side> {
    let v2 = version.is_v2();
    Some(match method {
        // Both versions (some are unstable additions of v1 in 2026, typed by the schema crate).
        "initialize"
        | "session/new"
        | "session/prompt"
        | "session/cancel"
        | "session/list"
        | "session/set_config_option"
        | "session/resume"
        | "session/close"
        | "session/fork"
        | "session/delete"
        | "session/archive"
        | "session/unarchive"
        | "session/status"
        | "session/options"
        | "session/set_title"
        | "providers/list"
        | "providers/set"
        | "providers/disable"
        | "auth/status" => Side::Client,
        "session/update"
        | "session/request_permission"
        | "elicitation/create"
        | "elicitation/complete"
        | "auth/status_update" => Side::Agent,
        "$/cancel_request" | "mcp/message" | "proxy/initialize" | "proxy/successor" => Side::Either,
        // v1 only.
        "authenticate" | "logout" | "session/load" | "session/set_mode" | "session/set_model"
            if !v2 =>
        {
            Side::Client
        }
        "fs/read_text_file"
        | "fs/write_text_file"
        | "terminal/create"
        | "terminal/output"
        | "terminal/release"
        | "terminal/wait_for_exit"
        | "terminal/kill"
            if !v2 =>
        {
            Side::Agent
        }
        // v2 only.
        "auth/login" | "auth/logout" | "tool_call/cancel" | "terminal/cancel" if v2 => Side::Client,
        _ => return None,
    })
}

/// The version, other than `version`, that defines `method`: `Some(V2)` for a v2-only method
/// under v1 (`tool_call/cancel`, `auth/login`), `Some(V1)` for a v1-only method under v2
/// (`fs/read_text_file`, `terminal/create`, `session/load`, `authenticate`). `None` when `version`
/// defines it, or neither does (an extension `_...` method, a typo). A version acptap has no
/// rules for is read with v1's table, so its other version is v2.
pub(crate) fn other_version_defining(version: Version, method: &str) -> Option<Version> {
    let other = if version.is_v2() {
        Version::V1
    } else {
        Version::V2
    };
    (sender_of(version, method).is_none() && sender_of(other, method).is_some()).then_some(other)
}

/// Whether a `session/update` kind (its `sessionUpdate`) belongs to v1 only: `tool_call` (v2
/// creates a call with the `tool_call_update` upsert), `plan` (v2: `plan_update`),
/// `current_mode_update` (v2 has config options only). The v2 draft's own kinds (`agent_message`,
/// `state_update`, `tool_call_content_chunk`, `terminal_update`, ...) are not in v1's schema at
/// all, so a v1 reader refuses them; v2's schema keeps an unknown kind as a future one, so a v1
/// kind under v2 is only caught here.
pub(crate) fn is_v1_only_update(kind: &str) -> bool {
    matches!(kind, "tool_call" | "plan" | "current_mode_update")
}

/// Who sends a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Client,
    Agent,
    Either,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn versions_are_read_from_numbers_only() {
        assert_eq!(Version::from_value(&json!(1)), Some(Version::V1));
        assert_eq!(Version::from_value(&json!(0)), Some(Version::V1));
        assert_eq!(Version::from_value(&json!(2)), Some(Version::V2));
        assert_eq!(Version::from_value(&json!(7)), Some(Version::Other(7)));
        assert_eq!(Version::from_value(&json!("2")), None);
        assert_eq!(Version::from_value(&json!(-1)), None);
        assert_eq!(Version::from_value(&json!(2.5)), None);
        assert_eq!(Version::from_value(&json!(2.0)), Some(Version::V2));
    }

    #[test]
    fn fs_and_terminal_are_v1_client_services() {
        assert_eq!(
            sender_of(Version::V1, "fs/read_text_file"),
            Some(Side::Agent)
        );
        assert_eq!(sender_of(Version::V2, "fs/read_text_file"), None);
        assert_eq!(
            sender_of(Version::V2, "tool_call/cancel"),
            Some(Side::Client)
        );
        assert_eq!(sender_of(Version::V1, "tool_call/cancel"), None);
        assert_eq!(sender_of(Version::V2, "session/load"), None);
    }

    #[test]
    fn the_other_version_of_a_method_is_named() {
        use Version::*;
        assert_eq!(other_version_defining(V2, "fs/read_text_file"), Some(V1));
        assert_eq!(other_version_defining(V2, "session/load"), Some(V1));
        assert_eq!(other_version_defining(V1, "tool_call/cancel"), Some(V2));
        assert_eq!(other_version_defining(V1, "auth/login"), Some(V2));
        assert_eq!(
            other_version_defining(Other(3), "terminal/cancel"),
            Some(V2)
        );
        assert_eq!(other_version_defining(V1, "session/prompt"), None);
        assert_eq!(other_version_defining(V2, "session/prompt"), None);
        assert_eq!(other_version_defining(V2, "_acme/x"), None);
        assert_eq!(other_version_defining(V1, "session/poke"), None);
    }
}
