//! `acptap replay SESSION --as client -- AGENT`: drives a live agent with a recorded client, then
//! reports where the agent departed from the recording.
//!
//! The live agent runs behind the real proxy, in this process (`proxy::InProcess`), so the live
//! run is recorded like any other, as a new connection whose `replay_of` names the original; no
//! policy from the user's configuration takes part. The replay sends the recorded client
//! requests in order (session ids mapped to the live ones, `--cwd` in place of the recorded cwd),
//! sends a recorded cancel (`session/cancel`, `$/cancel_request`, v2's `tool_call/cancel` and
//! `terminal/cancel`) at the same point of its turn (after as many of the turn's agent lines as
//! the recording had, or as much time; see [`counts_in_turn`]), and answers the agent's requests
//! from the recording: permission requests by tool kind and title (v2: by the subject's kind or
//! type and the request's title; the option of the kind the user chose), fs reads and writes by
//! path (or from the real file system with `--fs real`), anything else by method. Under ACP v2
//! (as the live agent and the recorded client negotiated it) the client serves no `fs/*` or
//! `terminal/*`: such a request of the live agent is answered method-not-found, and nothing is
//! read or written for it.
//!
//! A recording is untrusted input. The agent starts the stdio MCP servers a `session/new` (or
//! `session/load`, `session/resume`, `session/fork`) names: any command. So by default these
//! requests go with `mcpServers: []` and with nothing but their `cwd` and `sessionId` (no
//! `_meta`, no `additionalDirectories`), each thing withheld named on stderr;
//! `--run-recorded-commands` sends them as recorded. And the session's cwd is the fence of every
//! file the replay reads or writes for the agent: without `--cwd`, a recorded cwd that is `/`,
//! the home directory or a directory above it, or not an absolute path, is refused before
//! anything starts.
//!
//! Exit status: 0 when the live run matches the recording, 1 when it diverges, 2 on error.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::divergence;
use super::script::{
    ScriptLine, counts_in_turn, negotiated_version, with_id, with_renamed_strings,
};
use super::{ReplayError, say};
use crate::policy::paths::{Containment, Placing, containment};
use crate::protocol::message::decode;
use crate::protocol::relocate::Relocation;
use crate::protocol::state::PermissionShapes;
use crate::protocol::{Direction, Message, MessageKind, SessionState, parse_line};
use crate::proxy::{InProcess, RunOptions};
use crate::query::Reader;
use crate::query::SessionRef;
use crate::record::Destination;
use crate::record::redact::Redactor;

pub(crate) struct ClientReplayOptions {
    pub db: PathBuf,
    pub original: SessionRef,
    pub script: Vec<ScriptLine>,
    pub agent: Vec<String>,
    pub cwd: Option<PathBuf>,
    pub real_fs: bool,
    /// How long the agent may take to exit after its stdin is closed (then again after SIGTERM).
    pub grace: Duration,
    /// How long the replay waits for the agent's answer (and, in v2, its turn's end) before it
    /// gives up on a request (`--patience`).
    pub patience: Duration,
    /// Compare the agent's message text of each turn too.
    pub compare_text: bool,
    /// Send the session-opening requests as recorded: the recorded MCP servers (which the agent
    /// starts), `_meta` and all. Without it they go with `mcpServers: []`, their `cwd` and
    /// `sessionId` only.
    pub run_recorded_commands: bool,
}

/// The client requests that open a session: their `cwd` is the session's, and the agent starts
/// the MCP servers their `mcpServers` lists.
const SESSION_OPENERS: [&str; 4] = [
    "session/new",
    "session/load",
    "session/resume",
    "session/fork",
];

/// The params of a session-opening request that a replay sends as recorded by default; every
/// other one (`_meta`, `additionalDirectories`, ...) is withheld, and `mcpServers` sent empty.
/// `replayFrom` (v2 `session/resume`) says whether the agent replays the session's history: no
/// command and no directory, and without it the live conversation would not be the recorded one.
const KEPT_SESSION_PARAMS: [&str; 3] = ["cwd", "sessionId", "replayFrom"];

/// The client's messages that a recorded turn sends while its prompt is pending, each at the
/// point of the turn where it was recorded: the cancels.
const IN_TURN_CANCELS: [&str; 4] = [
    "session/cancel",
    "$/cancel_request",
    "tool_call/cancel",
    "terminal/cancel",
];

/// ACP's (JSON-RPC's) error code for a method the peer does not serve.
const METHOD_NOT_FOUND: i64 = -32601;

/// A recorded agent request and the client's recorded answer.
struct RecordedExchange {
    request: Message,
    answer: Option<ScriptLine>,
    used: bool,
}

/// How the replay answers a live agent request.
enum Reply {
    /// The recorded answer line, byte for byte but for the id.
    Recorded(Vec<u8>),
    Result(Value),
    Error(String),
    /// An error with its code (the message is the whole message).
    Coded(i64, String),
}

struct Driver {
    to_agent: std::io::PipeWriter,
    from_agent: mpsc::Receiver<Message>,
    exchanges: Vec<RecordedExchange>,
    /// Recorded string -> live string: session ids, and the cwd with --cwd.
    renames: HashMap<String, String>,
    real_fs: bool,
    /// The recorded session's cwd, and the live one (`--cwd`, else the same).
    cwd: Option<(PathBuf, PathBuf)>,
    /// Send session-opening requests as recorded (`--run-recorded-commands`).
    run_recorded_commands: bool,
    /// What stderr already said was withheld from the agent: each said once.
    withheld_said: HashSet<String>,
    /// The `initialize` exchange with the live agent, for the version it negotiated (which
    /// decides whether the client serves files and terminals).
    negotiation: SessionState,
    /// Script indices of recorded cancels already sent inside their turn.
    sent_in_turn: HashSet<usize>,
    /// How long to wait for the agent (`--patience`).
    patience: Duration,
}

/// A recorded cancel inside a turn, and when to send it: after as many of the turn's agent lines
/// as the recording had before it (recorded after the request, by `seq`; live, arrived after it
/// was sent; on both sides only those that [`counts_in_turn`]), or as much time after the
/// request, whichever comes first. A cancel recorded before any line of its turn waits for its
/// time: zero lines is no point at all (opencode's cancel, 1.7 s into a turn that had said
/// nothing yet, sent 3 ms after the prompt, failed the live turn instead of cancelling it).
#[derive(Clone, Copy)]
struct InTurnCancel<'a> {
    index: usize,
    line: &'a ScriptLine,
    after_lines: usize,
    after_time: Duration,
}

/// ACP's error code for a file that is not there (the agent may then create it).
const RESOURCE_NOT_FOUND: i64 = -32002;

/// The most one real-file read answers with: the longest line acptap records whole. A file
/// read without `limit` past it is an error that says to ask for fewer lines.
const MAX_READ_BYTES: usize = crate::proxy::framing::MAX_FRAMED_LINE;

/// What a real file must be for a replay to touch it: a regular file (a FIFO would block the
/// replay for ever, a device has no end); for a write, one with a single name (a hard link
/// reaches a file outside the cwd, that the lexical and symlink checks cannot see).
fn refuse_unless_plain(
    method: &str,
    path: &std::path::Path,
    metadata: &std::fs::Metadata,
    writing: bool,
) -> Option<Reply> {
    use std::os::unix::fs::MetadataExt as _;
    if !metadata.is_file() {
        let kind = metadata.file_type();
        use std::os::unix::fs::FileTypeExt as _;
        let what = if kind.is_fifo() {
            "a named pipe"
        } else if kind.is_socket() {
            "a socket"
        } else if kind.is_block_device() || kind.is_char_device() {
            "a device"
        } else if kind.is_dir() {
            "a directory"
        } else {
            "not a regular file"
        };
        return Some(Reply::Error(format!(
            "{method} {}: {what}, refused (a replay reads and writes regular files only)",
            path.display()
        )));
    }
    if writing && metadata.nlink() > 1 {
        return Some(Reply::Error(format!(
            "{method} {}: a file with {} hard links, refused (another of its names may be outside the cwd)",
            path.display(),
            metadata.nlink()
        )));
    }
    None
}

/// Opens a real file without blocking on it (`O_NONBLOCK`: a FIFO opens at once, or fails) and
/// looks at what was opened before a byte is read or written.
fn open_plain(
    method: &str,
    path: &std::path::Path,
    options: &mut std::fs::OpenOptions,
    writing: bool,
) -> Result<std::fs::File, Reply> {
    use std::os::unix::fs::OpenOptionsExt as _;
    // A look first, so that a FIFO or a device is never even opened.
    if let Ok(metadata) = std::fs::metadata(path)
        && let Some(refused) = refuse_unless_plain(method, path, &metadata, writing)
    {
        return Err(refused);
    }
    let file = options
        .custom_flags(libc::O_NONBLOCK | if writing { libc::O_NOFOLLOW } else { 0 })
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound if !writing => Reply::Coded(
                RESOURCE_NOT_FOUND,
                format!("Resource not found: {}", path.display()),
            ),
            _ => Reply::Error(format!(
                "cannot {} {}: {e}",
                if writing { "write" } else { "read" },
                path.display()
            )),
        })?;
    // And what was opened (the path may have changed since the look).
    let metadata = file
        .metadata()
        .map_err(|e| Reply::Error(format!("cannot look at {}: {e}", path.display())))?;
    match refuse_unless_plain(method, path, &metadata, writing) {
        Some(refused) => Err(refused),
        None => Ok(file),
    }
}

/// `fs/read_text_file`'s answer from a real file: `line` (1-based) and `limit` (lines) as ACP
/// defines them. Read as a stream: only the lines asked for are kept, at most
/// [`MAX_READ_BYTES`] of them.
fn read_real(path: &std::path::Path, params: &Value) -> Reply {
    let file = match open_plain(
        "fs/read_text_file",
        path,
        std::fs::OpenOptions::new().read(true),
        false,
    ) {
        Ok(file) => file,
        Err(refused) => return refused,
    };
    let skip = params
        .get("line")
        .and_then(Value::as_u64)
        .unwrap_or(1)
        .max(1)
        - 1;
    let take = params.get("limit").and_then(Value::as_u64);
    match read_lines(BufReader::new(file), skip, take, MAX_READ_BYTES) {
        Ok(Some(bytes)) => match String::from_utf8(bytes) {
            Ok(content) => Reply::Result(json!({"content": content})),
            Err(_) => Reply::Error(format!("cannot read {}: not UTF-8 text", path.display())),
        },
        Ok(None) => Reply::Error(format!(
            "fs/read_text_file {}: more than {} MiB to answer; ask for fewer lines with `line` and `limit`",
            path.display(),
            MAX_READ_BYTES >> 20
        )),
        Err(e) => Reply::Error(format!("cannot read {}: {e}", path.display())),
    }
}

/// Lines `skip + 1 ..= skip + take` of `reader` (to its end without `take`), line endings kept;
/// `None` past `max` bytes. Skipped lines are read, not kept: memory stays within `max`.
fn read_lines(
    mut reader: impl BufRead,
    skip: u64,
    take: Option<u64>,
    max: usize,
) -> std::io::Result<Option<Vec<u8>>> {
    let mut out = Vec::new();
    let mut line = 0u64;
    loop {
        if take.is_some_and(|take| line >= skip.saturating_add(take)) {
            return Ok(Some(out));
        }
        let buffer = match reader.fill_buf() {
            Ok(buffer) => buffer,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buffer.is_empty() {
            return Ok(Some(out));
        }
        let (piece, ends) = match memchr::memchr(b'\n', buffer) {
            Some(end) => (&buffer[..=end], true),
            None => (buffer, false),
        };
        let used = piece.len();
        if line >= skip {
            if out.len() + used > max {
                return Ok(None);
            }
            out.extend_from_slice(piece);
        }
        reader.consume(used);
        if ends {
            line += 1;
        }
    }
}

fn key(message: &Message) -> (Option<String>, Option<String>) {
    let params = message.params();
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
    match message.method.as_deref() {
        Some("session/request_permission") => {
            let shapes = PermissionShapes::of(params);
            match shapes.v1_tool_call {
                Some(call) => (text(call.get("kind")), text(call.get("title"))),
                // v2: what the subject is (a tool call's kind, else the subject's type), and the
                // request's own title.
                None => (
                    text(shapes.subject_tool_call.and_then(|c| c.get("kind")))
                        .or_else(|| shapes.subject_type().map(str::to_owned)),
                    text(params.and_then(|p| p.get("title"))),
                ),
            }
        }
        Some(m) if m.starts_with("fs/") => (
            params
                .and_then(|p| p.get("path"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            None,
        ),
        _ => (None, None),
    }
}

impl Driver {
    /// A recorded client line as the live agent gets it: the recorded session ids as the live
    /// ones, and the recorded cwd as the live one (`--cwd`) wherever it stands as a path:
    /// prompts, resource links, terminal output; the one relocation `acptap diff` and replay as
    /// agent use ([`crate::protocol::relocate`]). A file's text is the file's: an answer's
    /// `content` (`fs/read_text_file`) and an embedded resource's `text` are not rewritten.
    fn as_live(&self, raw: &[u8]) -> Vec<u8> {
        // Relocated first, renamed after: the exact rename of the cwd string still covers a
        // recorded cwd no relocation takes (`/`, a relative one), and a live cwd under the
        // recorded one is not moved twice.
        let relocated = self.relocated(raw);
        with_renamed_strings(relocated.as_deref().unwrap_or(raw), &self.renames)
    }

    fn relocated(&self, raw: &[u8]) -> Option<Vec<u8>> {
        let (recorded, live) = self.cwd.as_ref()?;
        let relocation = Relocation::new(&recorded.to_string_lossy(), &live.to_string_lossy())?;
        let body = raw.trim_ascii_end();
        let mut value = serde_json::from_slice::<Value>(body).ok()?;
        // A file's text: an `fs/read_text_file` answer's, an embedded resource's.
        const FILES_TEXT: &[&[&str]] = &[&["result", "content"], &["resource", "text"]];
        if !relocation.value_except(&mut value, FILES_TEXT) {
            return None;
        }
        let mut out = serde_json::to_vec(&value).ok()?;
        out.extend_from_slice(&raw[body.len()..]);
        Some(out)
    }

    fn send(&mut self, line: &[u8]) -> Result<(), ReplayError> {
        self.to_agent.write_all(line)?;
        self.to_agent.flush()?;
        Ok(())
    }

    fn send_json(&mut self, value: Value) -> Result<(), ReplayError> {
        let mut line = serde_json::to_vec(&value)?;
        line.push(b'\n');
        self.send(&line)
    }

    fn next(&mut self, timeout: Duration) -> Result<Option<Message>, ReplayError> {
        match self.from_agent.recv_timeout(timeout) {
            Ok(message) => Ok(Some(message)),
            Err(mpsc::RecvTimeoutError::Timeout) => Ok(None),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(ReplayError::AgentClosed),
        }
    }

    /// Answers a live agent request from the recording (or the real file system).
    fn answer(&mut self, live: &Message) -> Result<(), ReplayError> {
        let Some(id) = live.id.clone() else {
            return Ok(());
        };
        let method = live.method.clone().unwrap_or_default();
        let params = live.params().cloned().unwrap_or(Value::Null);
        let path = params
            .get("path")
            .and_then(Value::as_str)
            .map(PathBuf::from);
        let outside = method.starts_with("fs/")
            && path.as_ref().is_some_and(|p| {
                self.cwd.as_ref().is_some_and(|(_, live)| {
                    !(p.is_absolute() && containment(p, live, Placing::Lexical).is_inside())
                })
            });
        let v2_unserved = (method.starts_with("fs/") || method.starts_with("terminal/"))
            && self
                .negotiation
                .version()
                .is_some_and(|v| !v.client_serves_fs_and_terminals());
        let reply = match (method.as_str(), &path) {
            // A v2 client serves no files or terminals: nothing is read or written.
            _ if v2_unserved => Reply::Coded(
                METHOD_NOT_FOUND,
                format!(
                    "Method not found: acptap replay: under ACP {} the client serves no `{method}`",
                    self.negotiation
                        .version()
                        .map_or_else(String::new, |v| v.to_string())
                ),
            ),
            // Outside the cwd: refused, from the recording too (its answer would hand the agent
            // the recorded contents of a file elsewhere).
            (_, Some(path)) if outside => Reply::Error(format!(
                "{method} {}: outside the replay's cwd, refused",
                path.display()
            )),
            ("fs/read_text_file" | "fs/write_text_file", Some(path)) if self.real_fs => {
                self.real_file(&method, path, &params)
            }
            _ => match self.recorded_answer(live) {
                // Not in the recording: the real file under the cwd, said on stderr.
                Reply::Error(_) if method.starts_with("fs/") && path.is_some() => {
                    let path = path.as_deref().expect("checked");
                    say(&self.served_from_real_file(&method, path));
                    self.real_file(&method, path, &params)
                }
                reply => reply,
            },
        };
        let json_id: Value = serde_json::from_str(&id).unwrap_or(Value::Null);
        match reply {
            Reply::Recorded(line) => match with_id(&line, &id) {
                Some(line) => self.send(&line),
                None => self.send(&line),
            },
            Reply::Result(result) => {
                self.send_json(json!({"jsonrpc": "2.0", "id": json_id, "result": result}))
            }
            Reply::Error(message) => {
                say(&message);
                self.send_json(json!({"jsonrpc": "2.0", "id": json_id, "error": {"code": -32603, "message": format!("acptap replay: {message}")}}))
            }
            Reply::Coded(code, message) => self.send_json(
                json!({"jsonrpc": "2.0", "id": json_id, "error": {"code": code, "message": message}}),
            ),
        }
    }

    /// An `fs/*` request answered from the real file system, inside the live cwd only.
    fn real_file(&self, method: &str, path: &std::path::Path, params: &Value) -> Reply {
        let inside = match &self.cwd {
            Some((_, live)) => {
                path.is_absolute() && containment(path, live, Placing::Lexical).is_inside()
            }
            None => false,
        };
        if !inside {
            return Reply::Error(format!(
                "{method} {}: outside the replay's cwd{}, refused",
                path.display(),
                self.cwd
                    .as_ref()
                    .map(|(_, live)| format!(" ({})", live.display()))
                    .unwrap_or_default()
            ));
        }
        // And through symlinks: what exists of the path must resolve inside the cwd too (a
        // write's last component is refused below if it is a link at all).
        let judged = if method == "fs/read_text_file" {
            Some(path)
        } else {
            path.parent()
        };
        // A path that does not resolve (a dangling link), or a cwd not on this machine, is left
        // to the checks below.
        if let (Some(judged), Some((_, live))) = (judged, &self.cwd)
            && let Containment::Outside(real) =
                containment(judged, live, Placing::OnDisk(&crate::policy::Disk))
        {
            return Reply::Error(format!(
                "{method} {}: resolves to {}, outside the replay's cwd, refused",
                path.display(),
                real.display()
            ));
        }
        if method == "fs/read_text_file" {
            return read_real(path, params);
        }
        // Never through a symlink at the end of the path (a dangling one included): it could
        // point anywhere. O_NOFOLLOW holds that even if one appears after this look.
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
            return Reply::Error(format!(
                "{method} {}: a symbolic link, refused (a replay writes only inside its cwd)",
                path.display()
            ));
        }
        use std::io::Write as _;
        // Opened without truncating, looked at (a regular file with one name), then emptied.
        let file = match open_plain(
            method,
            path,
            std::fs::OpenOptions::new().write(true).create(true),
            true,
        ) {
            Ok(file) => file,
            Err(refused) => return refused,
        };
        let written = file.set_len(0).and_then(|()| {
            (&file).write_all(
                params
                    .get("content")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .as_bytes(),
            )
        });
        match written {
            Ok(()) => Reply::Result(json!({})),
            Err(e) => Reply::Error(format!("cannot write {}: {e}", path.display())),
        }
    }

    /// What stderr says of an `fs/*` request the recording has no answer for: it is served from
    /// the live path (under `--cwd`), the one the agent asked for, and that is the file named;
    /// the path the recording was searched for (under the recorded cwd) is named too when it
    /// differs.
    fn served_from_real_file(&self, method: &str, live: &Path) -> String {
        let recorded = self.as_recorded(&live.to_string_lossy());
        let looked_up = if Path::new(&recorded) == live {
            String::new()
        } else {
            format!(" ({recorded} in the recording)")
        };
        format!(
            "the recording has no answer for this `{method}` request{looked_up}: answered from the real file {} instead",
            live.display()
        )
    }

    /// A live path under the live cwd, as the recording has it (under the recorded cwd).
    fn as_recorded(&self, path: &str) -> String {
        if let Some((recorded, live)) = &self.cwd
            && let Ok(rest) = std::path::Path::new(path).strip_prefix(live)
        {
            return recorded.join(rest).to_string_lossy().into_owned();
        }
        path.to_owned()
    }

    fn recorded_answer(&mut self, live: &Message) -> Reply {
        let method = live.method.clone().unwrap_or_default();
        let mut live_key = key(live);
        // Recorded answers are keyed by their path relative to the cwd.
        if method.starts_with("fs/")
            && let Some(path) = &live_key.0
        {
            live_key.0 = Some(self.as_recorded(path));
        }
        // The same method and key first; for permissions, the same kind with another title next.
        let found = self
            .exchanges
            .iter()
            .position(|e| {
                !e.used
                    && e.request.method.as_deref() == Some(&method)
                    && key(&e.request) == live_key
            })
            .or_else(|| {
                self.exchanges.iter().position(|e| {
                    !e.used
                        && e.request.method.as_deref() == Some(&method)
                        && (method != "session/request_permission"
                            || key(&e.request).0 == live_key.0)
                        && !method.starts_with("fs/")
                })
            });
        let Some(index) = found else {
            let what = match &live_key {
                (Some(a), Some(b)) => format!(" ({a} `{b}`)"),
                (Some(a), None) | (None, Some(a)) => format!(" ({a})"),
                (None, None) => String::new(),
            };
            return Reply::Error(format!(
                "the recording has no answer for this `{method}` request{what}"
            ));
        };
        self.exchanges[index].used = true;
        let exchange = &self.exchanges[index];
        let Some(answer) = &exchange.answer else {
            return Reply::Error(format!(
                "the recorded `{method}` request was never answered"
            ));
        };
        let recorded = Reply::Recorded(self.as_live(&answer.raw));
        let chosen = answer
            .message
            .result()
            .and_then(|r| r.pointer("/outcome/optionId"))
            .and_then(Value::as_str);
        let (true, Some(chosen)) = (method == "session/request_permission", chosen) else {
            return recorded;
        };
        // Options are the agent's own: choose the live option of the kind the user chose.
        let kind_of = |options: Option<&Value>, id: &str| {
            options?
                .as_array()?
                .iter()
                .find(|o| o.get("optionId").and_then(Value::as_str) == Some(id))
                .and_then(|o| o.get("kind").cloned())
        };
        let kind = kind_of(
            exchange.request.params().and_then(|p| p.get("options")),
            chosen,
        );
        let live_option = live
            .params()
            .and_then(|p| p.get("options"))
            .and_then(Value::as_array)
            .and_then(|options| {
                options
                    .iter()
                    .find(|o| kind.is_some() && o.get("kind") == kind.as_ref())
            })
            .and_then(|o| o.get("optionId").and_then(Value::as_str).map(str::to_owned));
        match live_option {
            Some(option) if option == chosen => recorded,
            Some(option) => {
                Reply::Result(json!({"outcome": {"outcome": "selected", "optionId": option}}))
            }
            None => Reply::Error(format!(
                "the live request offers no option of the recorded kind {kind:?}"
            )),
        }
    }

    /// Handles the agent's lines that arrived before the replay sends its next request: its
    /// requests are answered, the rest was seen; none is counted as a line of that request's turn
    /// (the recording counts only the lines after the request, by `seq`).
    fn handle_what_came_before(&mut self) -> Result<(), ReplayError> {
        while let Ok(message) = self.from_agent.try_recv() {
            if message.kind == MessageKind::Request {
                self.answer(&message)?;
            }
        }
        Ok(())
    }

    /// Sends a recorded client request and handles the agent until its answer arrives; for a v2
    /// prompt, until its turn ends too (the session's `idle` `state_update`: the answer only says
    /// the prompt was inserted), unless the answer is an error (then no turn runs). The cancels
    /// recorded in this turn are sent at their points (see [`InTurnCancel`]).
    fn request(
        &mut self,
        line: &ScriptLine,
        cancels: Vec<InTurnCancel>,
    ) -> Result<Message, ReplayError> {
        // What the agent wrote before this request is sent is none of its turn (Gemini CLI's
        // available commands, written right after `session/new`): handled now, not counted.
        self.handle_what_came_before()?;
        let bytes = self.as_live(&line.raw);
        self.send(&bytes)?;
        let v2_turn = line.message.method.as_deref() == Some("session/prompt")
            && self.negotiation.version().is_some_and(|v| v.is_v2());
        let live_session = line
            .message
            .session_id()
            .map(|s| self.renames.get(s).map_or(s, String::as_str).to_owned());
        let mut answer = None;
        let mut running = false;
        let mut idle = false;
        let started = Instant::now();
        let mut agent_lines = 0;
        let mut cancels = std::collections::VecDeque::from(cancels);
        loop {
            while let Some(cancel) = cancels.front().copied()
                && ((cancel.after_lines > 0 && agent_lines >= cancel.after_lines)
                    || started.elapsed() >= cancel.after_time)
            {
                let bytes = self.as_live(&cancel.line.raw);
                self.send(&bytes)?;
                self.sent_in_turn.insert(cancel.index);
                cancels.pop_front();
            }
            let wait = match cancels.front() {
                Some(cancel) => cancel
                    .after_time
                    .saturating_sub(started.elapsed())
                    .max(Duration::from_millis(1)),
                None => self.patience.saturating_sub(started.elapsed()),
            };
            let Some(message) = self.next(wait)? else {
                if !cancels.is_empty() {
                    continue;
                }
                if let Some(answer) = answer {
                    // Answered, but the turn never reported its end: go on, the comparison
                    // will show what is missing.
                    say(&format!(
                        "the agent answered the prompt but reported no `idle` state within {:?} (--patience): going on",
                        self.patience
                    ));
                    return Ok(answer);
                }
                return Err(ReplayError::NoAnswer {
                    method: line.message.method.as_deref().unwrap_or("?").to_owned(),
                    patience: self.patience,
                });
            };
            if counts_in_turn(&message) {
                agent_lines += 1;
            }
            match message.kind {
                // The answers to a cancel sent in the turn (`tool_call/cancel`) are not waited
                // for: they come with other ids.
                MessageKind::Response if message.id == line.message.id => {
                    if !v2_turn || idle || message.error().is_some() {
                        return Ok(message);
                    }
                    answer = Some(message);
                }
                MessageKind::Request => self.answer(&message)?,
                MessageKind::Notification
                    if v2_turn && message.session_id() == live_session.as_deref() =>
                {
                    match message.params().and_then(super::session_state) {
                        // An `idle` before the answer and before any work is the state the
                        // agent reported unasked (after `session/new`): not this turn's end.
                        Some("idle") if answer.is_some() || running => {
                            idle = true;
                            if let Some(answer) = answer.take() {
                                return Ok(answer);
                            }
                        }
                        Some("idle") | None => {}
                        Some(_) => running = true,
                    }
                }
                _ => {}
            }
        }
    }
}

/// Runs the replay and compares the live run with the recording.
pub(crate) fn replay_as_client(
    options: ClientReplayOptions,
) -> Result<divergence::Report, ReplayError> {
    let script = &options.script;
    // The recorded agent requests and the client's answers, paired by id.
    let mut exchanges: Vec<RecordedExchange> = Vec::new();
    let mut by_id: HashMap<String, usize> = HashMap::new();
    for line in script {
        match (line.direction, line.message.kind) {
            (Direction::AgentToClient, MessageKind::Request) => {
                if let Some(id) = &line.message.id {
                    by_id.insert(id.clone(), exchanges.len());
                }
                exchanges.push(RecordedExchange {
                    request: line.message.clone(),
                    answer: None,
                    used: false,
                });
            }
            (Direction::ClientToAgent, MessageKind::Response) => {
                if let Some(index) = line.message.id.as_ref().and_then(|id| by_id.remove(id)) {
                    exchanges[index].answer = Some(line.clone());
                }
            }
            _ => {}
        }
    }

    if options.cwd.is_none() {
        refuse_unfit_recorded_cwds(script)?;
    }

    let label = format!("replay of {}", options.original.session_id);
    let InProcess {
        to_agent,
        from_agent,
        proxy,
    } = InProcess::start(RunOptions {
        agent: options.agent.clone(),
        destination: Destination::Database(options.db.clone()),
        label: Some(label),
        eof_grace: options.grace,
        kill_grace: options.grace,
        policy: None,
        shadow: false,
        redactor: Redactor::default_only(),
        recorded_as: None,
        // Marked as a replay from its first row: a run whose agent dies at once is never `last`.
        replay_of: Some(options.original.connection_id),
    })
    .map_err(|source| ReplayError::Start {
        agent: options.agent.join(" "),
        source,
    })?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(from_agent);
        let mut line = Vec::new();
        while reader.read_until(b'\n', &mut line).unwrap_or(0) > 0 {
            let message = parse_line(&line);
            if message.kind != MessageKind::Invalid && tx.send(message).is_err() {
                break;
            }
            line.clear();
        }
    });
    let mut driver = Driver {
        to_agent,
        from_agent: rx,
        exchanges,
        renames: HashMap::new(),
        real_fs: options.real_fs,
        cwd: None,
        run_recorded_commands: options.run_recorded_commands,
        withheld_said: HashSet::new(),
        negotiation: SessionState::new(),
        sent_in_turn: HashSet::new(),
        patience: options.patience,
    };

    let outcome = drive(&mut driver, script, options.cwd.as_deref());
    drop(driver);
    let run = proxy.wait()?;
    outcome?;
    if run.exit_code != 0 {
        eprintln!(
            "acptap replay: the agent ended with exit code {}",
            run.exit_code
        );
    }
    let live_connection = run.connection_id.ok_or(ReplayError::NotRecorded)?;
    let reader = Reader::open(&options.db)?;
    Ok(divergence::compare(
        &reader,
        &options.original,
        live_connection,
        options.compare_text,
    )?)
}

fn drive(
    driver: &mut Driver,
    script: &[ScriptLine],
    cwd: Option<&std::path::Path>,
) -> Result<(), ReplayError> {
    let recorded_v2 = negotiated_version(script).is_some_and(|v| v.is_v2());
    for (index, line) in script.iter().enumerate() {
        if line.direction != Direction::ClientToAgent || driver.sent_in_turn.contains(&index) {
            continue;
        }
        match line.message.kind {
            MessageKind::Request => {
                let opens_a_session = opens_a_session(line);
                let value = if opens_a_session {
                    decode(line.raw.trim_ascii())
                } else {
                    None
                };
                if let Some(old) = value
                    .as_ref()
                    .and_then(|v| v.pointer("/params/cwd"))
                    .and_then(Value::as_str)
                {
                    let live = cwd.map_or_else(|| PathBuf::from(old), Path::to_path_buf);
                    driver.cwd = Some((PathBuf::from(old), live.clone()));
                    if cwd.is_some() {
                        driver
                            .renames
                            .insert(old.to_owned(), live.to_string_lossy().into_owned());
                    }
                }
                // The recorded MCP servers and the rest, withheld unless the user opted in.
                let withheld;
                let line = match (opens_a_session && !driver.run_recorded_commands, value) {
                    (true, Some(value)) => {
                        let (raw, said) = without_recorded_commands(line, value);
                        for what in said {
                            if driver.withheld_said.insert(what.clone()) {
                                say(&what);
                            }
                        }
                        match raw {
                            Some(raw) => {
                                withheld = ScriptLine {
                                    raw,
                                    ..line.clone()
                                };
                                &withheld
                            }
                            None => line,
                        }
                    }
                    _ => line,
                };
                let cancels = cancels_in_turn(script, index, recorded_v2);
                let answer = driver.request(line, cancels)?;
                if line.message.method.as_deref() == Some("initialize") {
                    driver
                        .negotiation
                        .observe(Direction::ClientToAgent, line.seq, &line.message);
                    driver
                        .negotiation
                        .observe(Direction::AgentToClient, line.seq + 1, &answer);
                }
                // A new session: the recorded id stands for the live one from now on.
                if let (Some(recorded), Some(live)) = (
                    recorded_answer_session(script, index),
                    answer
                        .result()
                        .and_then(|r| r.get("sessionId"))
                        .and_then(Value::as_str),
                ) {
                    driver.renames.insert(recorded, live.to_owned());
                }
            }
            MessageKind::Notification
                if line.message.method.as_deref() == Some("session/cancel") =>
            {
                // Sent inside its turn by `request`.
            }
            MessageKind::Notification => {
                let bytes = driver.as_live(&line.raw);
                driver.send(&bytes)?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// Whether a recorded client request opens a session (its params name a cwd and MCP servers).
fn opens_a_session(line: &ScriptLine) -> bool {
    line.message
        .method
        .as_deref()
        .is_some_and(|m| SESSION_OPENERS.contains(&m))
        || line
            .message
            .params()
            .is_some_and(|p| p.get("mcpServers").is_some())
}

/// A recorded session-opening request as the replay sends it by default: `mcpServers: []` and,
/// of its params, only `cwd` and `sessionId`. Returns the line to send (`None`: nothing to
/// withhold, the recorded bytes go) and what stderr says was withheld. A line that not every
/// JSON reader reads the same way (a key written twice) is always written anew.
fn without_recorded_commands(
    line: &ScriptLine,
    mut value: Value,
) -> (Option<Vec<u8>>, Vec<String>) {
    let method = line.message.method.as_deref().unwrap_or("?");
    let mut said = Vec::new();
    let Some(params) = value.get_mut("params").and_then(Value::as_object_mut) else {
        return (None, said);
    };
    let mut changed = false;
    if let Some(servers) = params.get("mcpServers") {
        let servers = servers.as_array().map(Vec::as_slice).unwrap_or_default();
        for server in servers {
            said.push(format!(
                "the recorded MCP server {} is not given to the agent (replay with --run-recorded-commands to give it the recorded servers)",
                describe_server(server)
            ));
        }
        changed |= params["mcpServers"] != json!([]);
    }
    let withheld: Vec<String> = params
        .keys()
        .filter(|k| k.as_str() != "mcpServers" && !KEPT_SESSION_PARAMS.contains(&k.as_str()))
        .cloned()
        .collect();
    for key in &withheld {
        params.remove(key);
        said.push(format!(
            "the recorded `{}` of `{method}` is not given to the agent (replay with --run-recorded-commands to send it)",
            crate::terminal::terminal_line(key, crate::terminal::NAME_BYTES)
        ));
    }
    changed |= !withheld.is_empty();
    if !changed && crate::replay::outbound::reads_one_way(line.raw.trim_ascii()) {
        return (None, said);
    }
    params.insert("mcpServers".to_owned(), json!([]));
    let mut raw = serde_json::to_vec(&value).unwrap_or_default();
    // The recorded id, as written (the agent's answer is matched by it).
    if let Some(id) = &line.message.id
        && let Some(with_recorded_id) = with_id(&raw, id)
    {
        raw = with_recorded_id;
    }
    raw.push(b'\n');
    (Some(raw), said)
}

/// A recorded MCP server for stderr: its name, and its command line or URL (never its
/// environment or headers), each cut and made safe for a terminal.
fn describe_server(server: &Value) -> String {
    let field = |name: &str| server.get(name).and_then(Value::as_str);
    let name =
        crate::terminal::terminal_line(field("name").unwrap_or("?"), crate::terminal::NAME_BYTES);
    let target = match (field("command"), field("url")) {
        (Some(command), _) => {
            let args = server
                .get("args")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .map(|a| a.as_str().map_or_else(|| a.to_string(), str::to_owned));
            std::iter::once(command.to_owned())
                .chain(args)
                .collect::<Vec<_>>()
                .join(" ")
        }
        (None, Some(url)) => url.to_owned(),
        (None, None) => "no command or URL".to_owned(),
    };
    format!(
        "`{name}` ({})",
        crate::terminal::terminal_line(&target, crate::terminal::VALUE_BYTES)
    )
}

/// Without `--cwd`, each recorded session's cwd is the replay's: the fence of every file it
/// reads or writes for the agent. One that fences nothing in is refused before anything starts.
fn refuse_unfit_recorded_cwds(script: &[ScriptLine]) -> Result<(), ReplayError> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    for line in script {
        if line.direction != Direction::ClientToAgent
            || line.message.kind != MessageKind::Request
            || !opens_a_session(line)
        {
            continue;
        }
        let Some(value) = decode(line.raw.trim_ascii()) else {
            continue;
        };
        let Some(cwd) = value.pointer("/params/cwd").and_then(Value::as_str) else {
            continue;
        };
        if let Some(why) = unfit_cwd(cwd, home.as_deref()) {
            return Err(ReplayError::UnfitCwd {
                cwd: crate::terminal::terminal_line(cwd, crate::terminal::VALUE_BYTES).into_owned(),
                why,
            });
        }
    }
    Ok(())
}

/// Why `cwd` cannot fence a replay in: not an absolute path, `/`, or the home directory or a
/// directory above it (after `.` and `..`, and through symbolic links where it exists here).
fn unfit_cwd(cwd: &str, home: Option<&Path>) -> Option<&'static str> {
    if !cwd.starts_with('/') {
        return Some("not an absolute path");
    }
    let lexical = lexically_clean(Path::new(cwd));
    let mut seen = vec![lexical.clone()];
    if let Ok(real) = lexical.canonicalize() {
        seen.push(real);
    }
    let mut homes: Vec<PathBuf> = home.map(lexically_clean).into_iter().collect();
    if let Some(real) = homes.first().and_then(|h| h.canonicalize().ok()) {
        homes.push(real);
    }
    for path in &seen {
        if path.parent().is_none() {
            return Some("the root of the file system");
        }
        for home in &homes {
            if home == path {
                return Some("the home directory");
            }
            if home.starts_with(path) {
                return Some("a directory above the home directory");
            }
        }
    }
    None
}

/// An absolute path with `.` and `..` resolved by its text; one that climbs above `/` is taken as
/// `/` (which no replay fences in).
fn lexically_clean(path: &Path) -> PathBuf {
    PathBuf::from(super::lexical(&path.to_string_lossy()).unwrap_or_else(|| "/".into()))
}

/// The session id the agent answered a recorded `session/new` with.
fn recorded_answer_session(script: &[ScriptLine], request_index: usize) -> Option<String> {
    let request = &script[request_index].message;
    if request.method.as_deref() != Some("session/new") {
        return None;
    }
    script[request_index + 1..]
        .iter()
        .find(|l| {
            l.direction == Direction::AgentToClient
                && l.message.kind == MessageKind::Response
                && l.message.id == request.id
        })
        .and_then(|l| {
            l.message
                .result()?
                .get("sessionId")?
                .as_str()
                .map(str::to_owned)
        })
}

/// The cancels recorded before this request's answer (see [`IN_TURN_CANCELS`]), in order, each
/// with the number of the turn's agent lines before it and the time since the request. The
/// lines counted are those recorded after the request (by `seq`) that
/// [`counts_in_turn`] (not the session's own reports, which may cross the prompt); the live
/// side counts by the same rule, from the moment it sends the request. In a v2 recording a
/// prompt's turn runs on after its answer, to the session's `idle` `state_update`.
fn cancels_in_turn(script: &[ScriptLine], request_index: usize, v2: bool) -> Vec<InTurnCancel<'_>> {
    let request = &script[request_index];
    let v2_turn = v2 && request.message.method.as_deref() == Some("session/prompt");
    let mut agent_lines = 0;
    let mut cancels = Vec::new();
    // v2: the prompt answered, or its work seen running (see `session_state`).
    let mut started = false;
    for (index, line) in script.iter().enumerate().skip(request_index + 1) {
        let answers = line.direction == Direction::AgentToClient
            && line.message.kind == MessageKind::Response
            && line.message.id == request.message.id;
        let state = (line.direction == Direction::AgentToClient
            && line.message.kind == MessageKind::Notification
            && line.message.session_id() == request.message.session_id())
        .then(|| line.message.params().and_then(super::session_state))
        .flatten();
        let ends = if v2_turn {
            (answers && line.message.error().is_some()) || (started && state == Some("idle"))
        } else {
            answers
        };
        started |= answers || state.is_some_and(|s| s != "idle");
        match (line.direction, line.message.kind) {
            (Direction::AgentToClient, _) if ends => break,
            (Direction::AgentToClient, _) if counts_in_turn(&line.message) => agent_lines += 1,
            (Direction::AgentToClient, _) => {}
            (Direction::ClientToAgent, MessageKind::Notification | MessageKind::Request)
                if line
                    .message
                    .method
                    .as_deref()
                    .is_some_and(|m| IN_TURN_CANCELS.contains(&m)) =>
            {
                cancels.push(InTurnCancel {
                    index,
                    line,
                    after_lines: agent_lines,
                    after_time: Duration::from_micros((line.ts - request.ts).max(0) as u64),
                });
            }
            _ => {}
        }
    }
    cancels
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_real_read_takes_line_and_limit_as_acp_defines_them() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f.txt");
        std::fs::write(&file, "one\ntwo\nthree\n").unwrap();
        let content = |params: Value| match read_real(&file, &params) {
            Reply::Result(v) => v["content"].as_str().unwrap().to_owned(),
            _ => panic!("not read"),
        };
        assert_eq!(content(json!({})), "one\ntwo\nthree\n");
        assert_eq!(content(json!({"line": 2})), "two\nthree\n");
        assert_eq!(content(json!({"line": 2, "limit": 1})), "two\n");
        assert_eq!(content(json!({"limit": 1})), "one\n");
        assert!(matches!(
            read_real(&dir.path().join("missing"), &json!({})),
            Reply::Coded(RESOURCE_NOT_FOUND, _)
        ));
        assert!(
            containment(&dir.path().join("a/../f.txt"), dir.path(), Placing::Lexical).is_inside()
        );
        assert!(!containment(&dir.path().join("../x"), dir.path(), Placing::Lexical).is_inside());
        assert!(
            !containment(
                std::path::Path::new("/etc/passwd"),
                dir.path(),
                Placing::Lexical
            )
            .is_inside()
        );
    }

    #[test]
    fn lines_are_streamed_and_only_those_asked_for_are_kept() {
        let long = "x".repeat(100_000);
        let text = format!("{long}\nb\nc");
        // A small buffer: lines span many reads.
        let read = |skip, take, max| {
            read_lines(
                std::io::BufReader::with_capacity(7, text.as_bytes()),
                skip,
                take,
                max,
            )
            .unwrap()
        };
        assert_eq!(read(1, Some(1), 10), Some(b"b\n".to_vec()));
        assert_eq!(read(1, None, 10), Some(b"b\nc".to_vec()));
        assert_eq!(read(2, Some(5), 10), Some(b"c".to_vec()));
        assert_eq!(read(9, None, 10), Some(Vec::new()));
        assert_eq!(read(0, Some(1), 10), None, "past the cap");
        assert_eq!(read(0, Some(0), 10), Some(Vec::new()));
        assert_eq!(read(0, None, 200_000).unwrap().len(), text.len());
    }

    fn script_line(raw: &str) -> ScriptLine {
        ScriptLine {
            seq: 0,
            ts: 0,
            direction: Direction::ClientToAgent,
            raw: raw.as_bytes().to_vec(),
            message: parse_line(raw.as_bytes()),
        }
    }

    fn withheld(raw: &str) -> (Option<String>, Vec<String>) {
        let line = script_line(raw);
        let (bytes, said) = without_recorded_commands(&line, decode(raw.as_bytes()).unwrap());
        (bytes.map(|b| String::from_utf8(b).unwrap()), said)
    }

    #[test]
    fn a_session_goes_without_the_recorded_servers_and_meta_and_keeps_its_bytes_otherwise() {
        // Nothing to withhold: the recorded bytes go.
        let plain = r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/p","mcpServers":[]}}"#;
        assert_eq!(withheld(plain), (None, vec![]));
        let (line, said) = withheld(
            r#"{"jsonrpc":"2.0","id":1.0,"method":"session/load","params":{"sessionId":"s","cwd":"/p","mcpServers":[{"name":"evil","command":"/bin/sh","args":["-c","touch M"],"env":[{"name":"K","value":"SECRET"}]},{"type":"sse","name":"r","url":"https://x/\u001b[2J","headers":[]}],"_meta":{"additionalDirectories":["/etc"]},"additionalDirectories":["/"]}}"#,
        );
        let line = line.unwrap();
        assert!(line.ends_with('\n'));
        let sent: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            sent["params"],
            json!({"sessionId": "s", "cwd": "/p", "mcpServers": []})
        );
        assert!(
            line.contains(r#""id":1.0"#),
            "the recorded id as written: {line}"
        );
        assert_eq!(said.len(), 4, "{said:?}");
        assert!(said[0].contains("`evil` (/bin/sh -c touch M)"), "{said:?}");
        assert!(!said.concat().contains("SECRET"));
        assert!(!said.concat().contains('\u{1b}'), "{said:?}");
        assert!(said[2].contains("`_meta` of `session/load`"), "{said:?}");
        // A key written twice (read one way here, another way by some agent): written anew.
        let (line, _) = withheld(
            r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/p","mcpServers":[{"name":"e","command":"x"}],"mcpServers":[]}}"#,
        );
        let line = line.unwrap();
        assert_eq!(line.matches("mcpServers").count(), 1, "{line}");
        assert_eq!(
            serde_json::from_str::<Value>(&line).unwrap()["params"],
            json!({"cwd": "/p", "mcpServers": []})
        );
    }

    #[test]
    fn a_v2_permission_request_is_keyed_by_its_subject_and_title() {
        let v2 = script_line(
            r#"{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"s","title":"Run cargo test","subject":{"type":"command","command":"cargo test","cwd":"/p"},"options":[]}}"#,
        );
        assert_eq!(
            key(&v2.message),
            (Some("command".into()), Some("Run cargo test".into()))
        );
        let call = script_line(
            r#"{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"s","title":"Edit","subject":{"type":"tool_call","toolCall":{"toolCallId":"t","kind":"edit"}},"options":[]}}"#,
        );
        assert_eq!(
            key(&call.message),
            (Some("edit".into()), Some("Edit".into()))
        );
        let v1 = script_line(
            r#"{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"t","kind":"read","title":"Read a"},"options":[]}}"#,
        );
        assert_eq!(
            key(&v1.message),
            (Some("read".into()), Some("Read a".into()))
        );
    }

    #[test]
    fn a_v2_turns_cancels_are_sent_in_it_until_its_idle_not_a_stale_one() {
        let agent = |text: &str| ScriptLine {
            direction: Direction::AgentToClient,
            ..script_line(text)
        };
        let idle = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle"}}}"#;
        let script = vec![
            script_line(
                r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}"#,
            ),
            // The state the agent reported after session/new, crossing the prompt: not the end.
            agent(idle),
            agent(r#"{"jsonrpc":"2.0","id":2,"result":{"messageId":"u"}}"#),
            script_line(
                r#"{"jsonrpc":"2.0","id":3,"method":"tool_call/cancel","params":{"sessionId":"s","toolCallId":"t"}}"#,
            ),
            agent(idle),
            script_line(
                r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#,
            ),
        ];
        let cancels = cancels_in_turn(&script, 0, true);
        assert_eq!(
            cancels
                .iter()
                .map(|c| (c.index, c.after_lines))
                .collect::<Vec<_>>(),
            [(3, 2)]
        );
        // v1: the answer ends the turn.
        assert!(cancels_in_turn(&script, 0, false).is_empty());
    }

    /// The agent lines before a recorded cancel are the turn's own: recorded after the prompt (by
    /// seq), the session's reports left out wherever they fall (Gemini CLI's available commands,
    /// sent after `session/new`, may be recorded after the prompt).
    #[test]
    fn a_cancels_point_counts_the_turns_own_lines_only() {
        let agent = |text: &str| ScriptLine {
            direction: Direction::AgentToClient,
            ..script_line(text)
        };
        let update = |kind: &str| {
            agent(&format!(
                r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s","update":{{"sessionUpdate":"{kind}","content":{{"type":"text","text":"x"}}}}}}}}"#
            ))
        };
        let script = vec![
            update("available_commands_update"),
            script_line(
                r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}"#,
            ),
            update("available_commands_update"),
            update("agent_message_chunk"),
            update("current_mode_update"),
            script_line(
                r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#,
            ),
            agent(r#"{"jsonrpc":"2.0","id":2,"result":{"stopReason":"cancelled"}}"#),
        ];
        let cancels = cancels_in_turn(&script, 1, false);
        assert_eq!(
            cancels
                .iter()
                .map(|c| (c.index, c.after_lines))
                .collect::<Vec<_>>(),
            [(5, 1)]
        );
        assert!(!counts_in_turn(&script[0].message));
        assert!(counts_in_turn(&script[3].message));
        assert!(counts_in_turn(&script[6].message));
    }

    #[test]
    fn a_recorded_cwd_that_fences_nothing_in_is_unfit() {
        let home = Some(Path::new("/home/me"));
        for unfit in [
            "/",
            "//",
            "/tmp/..",
            "/home",
            "/home/",
            "/home/me",
            "/home/x/../me/.",
            "rel",
            "",
        ] {
            assert!(unfit_cwd(unfit, home).is_some(), "{unfit}");
        }
        for fit in ["/home/me/project", "/srv/p", "/home/other"] {
            assert_eq!(unfit_cwd(fit, home), None, "{fit}");
        }
        assert_eq!(unfit_cwd("/", None), Some("the root of the file system"));
    }
}
