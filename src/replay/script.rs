//! A recorded connection as a replay script: its protocol lines in order, parsed, plus the exact
//! edits replay needs (a top-level JSON-RPC id or a session id swapped, every other byte kept).

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::value::RawValue;

use crate::protocol::version::Version;
use crate::protocol::{Direction, Message, SessionState, parse_line};
use crate::query::{self, Reader};

/// One recorded protocol line.
#[derive(Debug, Clone)]
pub struct ScriptLine {
    pub seq: i64,
    pub ts: i64,
    pub direction: Direction,
    pub raw: Vec<u8>,
    pub message: Message,
}

/// The c2a and a2c lines of a connection, in order (stderr left out).
pub(crate) fn load(reader: &Reader, connection_id: i64) -> query::Result<Vec<ScriptLine>> {
    Ok(query::connection_lines(reader, connection_id)?
        .into_iter()
        .filter_map(|line| {
            let direction = line.direction.on_the_pipe()?;
            Some(ScriptLine {
                seq: line.seq,
                ts: line.ts,
                direction,
                message: parse_line(&line.raw),
                raw: line.raw,
            })
        })
        .collect())
}

/// The protocol version the recorded connection speaks, as the recorder's session state reads
/// it: the agent's answer to `initialize`, else the client's proposal; `None` when no
/// `initialize` was recorded. Replay rules that differ by version ask this, never a message.
pub(crate) fn negotiated_version(script: &[ScriptLine]) -> Option<Version> {
    let mut state = SessionState::new();
    for line in script {
        let observed = state.observe(line.direction, line.seq, &line.message);
        if line.direction == Direction::AgentToClient
            && observed.method.as_deref() == Some("initialize")
        {
            break;
        }
    }
    state.version()
}

/// The `session/update`s in which an agent reports the session itself, at any time and unasked:
/// its available commands, its mode, its config options, its info (title). They are no turn's
/// work: one an agent sends right after `session/new` (Gemini CLI's available commands) may
/// reach the recorder before or after the first prompt, as the two cross on the wire.
const SESSION_REPORTS: [&str; 4] = [
    "available_commands_update",
    "current_mode_update",
    "config_option_update",
    "session_info_update",
];

/// Whether an agent line counts toward the point of a turn at which a recorded cancel is sent
/// (after as many of the turn's agent lines as the recording had before it): every agent line
/// but a [`SESSION_REPORTS`] update. Replay as client counts recorded and live lines by this
/// one rule, so a report that crossed the prompt on either side moves no cancel.
pub(crate) fn counts_in_turn(message: &Message) -> bool {
    let report = message.method.as_deref() == Some("session/update")
        && message
            .params()
            .and_then(|p| p.pointer("/update/sessionUpdate"))
            .and_then(serde_json::Value::as_str)
            .is_some_and(|kind| SESSION_REPORTS.contains(&kind));
    !report
}

/// The line with its top-level `"id"` value replaced by `id` (JSON text), every other byte kept.
/// `None` if the line has no top-level id.
pub fn with_id(line: &[u8], id: &str) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(line).ok()?;
    let end = text.trim_end_matches(['\r', '\n']).len();
    let fields: HashMap<Cow<str>, &RawValue> = serde_json::from_str(&text[..end]).ok()?;
    let old = fields.get("id")?.get();
    // The RawValue borrows from `text`: its position there is where the id is.
    let start = old.as_ptr() as usize - text.as_ptr() as usize;
    let mut out = Vec::with_capacity(line.len() + id.len());
    out.extend_from_slice(&line[..start]);
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(&line[start + old.len()..]);
    Some(out)
}

/// Replaces every JSON string equal to one of `renames`' keys by its value.
pub(crate) fn with_renamed_strings(line: &[u8], renames: &HashMap<String, String>) -> Vec<u8> {
    let mut out = line.to_vec();
    for (old, new) in renames {
        let old = serde_json::to_string(old).unwrap_or_default();
        let new = serde_json::to_string(new).unwrap_or_default();
        let finder = memchr::memmem::Finder::new(old.as_bytes());
        let mut replaced = Vec::with_capacity(out.len());
        let mut last = 0;
        for at in finder.find_iter(&out) {
            replaced.extend_from_slice(&out[last..at]);
            replaced.extend_from_slice(new.as_bytes());
            last = at + old.len();
        }
        replaced.extend_from_slice(&out[last..]);
        out = replaced;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swaps_only_the_top_level_id() {
        let line =
            br#"{"jsonrpc":"2.0","result":{"id":2,"stopReason":"end_turn"},"id":2}"#.to_vec();
        let swapped = with_id(&line, "\"uuid-7\"").unwrap();
        assert_eq!(
            swapped,
            br#"{"jsonrpc":"2.0","result":{"id":2,"stopReason":"end_turn"},"id":"uuid-7"}"#
        );
        let mut crlf = br#"{"id": 10 ,"x":1}"#.to_vec();
        crlf.extend_from_slice(b"\r\n");
        assert_eq!(with_id(&crlf, "3").unwrap(), b"{\"id\": 3 ,\"x\":1}\r\n");
        assert_eq!(with_id(br#"{"method":"x"}"#, "1"), None);
        assert_eq!(with_id(b"not json", "1"), None);
    }

    fn script(lines: &[(Direction, &str)]) -> Vec<ScriptLine> {
        lines
            .iter()
            .enumerate()
            .map(|(seq, (direction, text))| ScriptLine {
                seq: seq as i64,
                ts: 0,
                direction: *direction,
                raw: text.as_bytes().to_vec(),
                message: parse_line(text.as_bytes()),
            })
            .collect()
    }

    #[test]
    fn the_version_is_the_agents_answer_else_the_clients_proposal() {
        let proposal = (
            Direction::ClientToAgent,
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2}}"#,
        );
        let answer = (
            Direction::AgentToClient,
            r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}"#,
        );
        assert_eq!(
            negotiated_version(&script(&[proposal, answer])),
            Some(Version::V1)
        );
        assert_eq!(negotiated_version(&script(&[proposal])), Some(Version::V2));
        assert_eq!(negotiated_version(&script(&[answer])), None);
    }

    #[test]
    fn renames_session_ids_as_json_strings_only() {
        let renames = HashMap::from([("s1".to_owned(), "new".to_owned())]);
        let line = br#"{"sessionId":"s1","text":"s1 is not renamed here","other":"s12"}"#;
        assert_eq!(
            with_renamed_strings(line, &renames),
            br#"{"sessionId":"new","text":"s1 is not renamed here","other":"s12"}"#
        );
    }
}
