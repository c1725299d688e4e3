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
    pub fn from_value(value: &Value) -> Option<Version> {
        Some(match value.as_u64()? {
            0 | 1 => Version::V1,
            2 => Version::V2,
            other => Version::Other(other),
        })
    }

    pub fn number(self) -> u64 {
        match self {
            Version::V1 => 1,
            Version::V2 => 2,
            Version::Other(n) => n,
        }
    }

    pub fn is_v2(self) -> bool {
        self == Version::V2
    }

    /// Whether the client serves `fs/*` and `terminal/*` requests in this version (v1 only: the
    /// v2 draft moved files and terminals to the agent).
    pub fn client_serves_fs_and_terminals(self) -> bool {
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
pub fn sender_of(version: Version, method: &str) -> Option<Side> {
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

/// Who sends a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
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
}
