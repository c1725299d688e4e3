//! The only file with SQL that writes: opening (and migrating) the database, and storing lines
//! and what the session state learned from them.
//!
//! The read side (the inspection commands' queries) is the `query` module.

use std::fs::{DirBuilder, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use std::fmt::Write as _;

use rusqlite::{Connection, OptionalExtension, Transaction, params};
use rusqlite_migration::{M, Migrations};
use serde_json::Value;

use crate::protocol::Fact;
use crate::protocol::toolcall::UpdateKind;

/// How long a write waits for another process's transaction before giving up for this batch
/// (it is then retried): several acptap processes may record into one file.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The recorder checkpoints itself only when the log passes this many bytes; by then the
/// checkpointer thread has copied almost all of it, so it is cheap.
const RECORDER_AUTOCHECKPOINT_BYTES: i64 = 16 * 1024 * 1024;

/// Other connections (the inspection commands) checkpoint when the log passes this many bytes.
const AUTOCHECKPOINT_BYTES: i64 = 32 * 1024 * 1024;

/// The page size of a new database. 16 KiB rather than SQLite's 4 KiB: a recorded line is often
/// a kilobyte or more, and with larger pages the recorder does fewer page splits, WAL frames and
/// page-cache lookups per line (issue 12's profile: 5.8 -> 2.9 µs per 1 KiB line). An existing
/// database keeps the page size it was made with.
const NEW_DATABASE_PAGE_SIZE: i64 = 16 * 1024;

/// Every migration, in order. A new file in `migrations/` must be added here; a unit test checks
/// that none is missing.
const MIGRATIONS: &[&str] = &[
    include_str!("../../migrations/0001_init.sql"),
    include_str!("../../migrations/0002_policy.sql"),
    include_str!("../../migrations/0003_replay.sql"),
    include_str!("../../migrations/0004_policy_input.sql"),
    include_str!("../../migrations/0005_proxy_identity.sql"),
    include_str!("../../migrations/0006_lean_message_indexes.sql"),
    include_str!("../../migrations/0007_search.sql"),
    include_str!("../../migrations/0008_protocol_v2.sql"),
];

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open database {path}: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error(
        "no database at {0}: record a session first with `acptap run` (or load one with `acptap import FILE.jsonl`), or point --db / ACPTAP_DB at one"
    )]
    Missing(PathBuf),
    #[error(
        "{path} has schema version {found}, this acptap reads version {expected}: {}",
        if found < expected {
            format!("run `acptap migrate --db {}` to bring it up to date (it keeps every recorded line and fact)", path.display())
        } else {
            "it was written by a newer acptap; use that one".to_owned()
        }
    )]
    Schema {
        path: PathBuf,
        found: i64,
        expected: i64,
    },
    #[error(transparent)]
    Sql(#[from] rusqlite::Error),
}

impl StoreError {
    /// Another process holds the write lock: worth retrying.
    pub(crate) fn is_busy(&self) -> bool {
        let busy = |e: &rusqlite::Error| {
            matches!(
                e.sqlite_error_code(),
                Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
            )
        };
        match self {
            StoreError::Sql(e) => busy(e),
            StoreError::Open { source, .. } => source.downcast_ref().is_some_and(busy),
            _ => false,
        }
    }
}

/// What is known of a connection when the proxy starts.
#[derive(Debug, Clone)]
pub struct ConnectionStart {
    pub label: Option<String>,
    pub command: Vec<String>,
    pub cwd: Option<String>,
    pub pid: Option<u32>,
    pub started_at: i64,
    /// For the live run of `acptap replay --as client`: the connection it replays, written with
    /// the row, so a run that breaks early is a replay too (never `last`).
    pub replay_of: Option<i64>,
}

/// How a connection ended.
#[derive(Debug, Clone, Default)]
pub struct ConnectionEnd {
    pub ended_at: i64,
    pub exit_code: Option<i32>,
    pub exit_signal: Option<i32>,
}

/// One line to store, with what the session state made of it.
#[derive(Debug, Clone)]
pub struct LineToWrite {
    pub seq: i64,
    pub ts: i64,
    pub direction: &'static str,
    pub kind: &'static str,
    pub rpc_id: Option<String>,
    pub method: Option<String>,
    pub session_id: Option<String>,
    pub tool_call_id: Option<String>,
    pub reply_to_seq: Option<i64>,
    pub raw: bytes::Bytes,
    pub size: i64,
    pub truncated: bool,
    pub facts: Vec<Fact>,
    pub annotation: super::Annotation,
}

pub struct Store {
    conn: Connection,
    /// The row ids of tool calls this store has written or looked up, so that an update costs
    /// one UPDATE by id. Bounded: past [`MAX_KNOWN_TOOL_CALLS`] it starts over, and an unknown
    /// call is looked up by its key.
    tool_call_rows: ToolCallRows,
}

/// (connection, session, tool call id) -> `tool_calls.id`.
type ToolCallRows = std::collections::HashMap<(i64, String, String), i64>;

const MAX_KNOWN_TOOL_CALLS: usize = 10_000;

impl Store {
    /// Opens the database at `path` for recording, creating it (mode 0600, its directory 0700)
    /// and bringing its schema up to date.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Self::open_waiting(path, BUSY_TIMEOUT)
    }

    /// [`Store::open`], waiting at most `busy` for a lock another process holds (then the error
    /// says [`StoreError::is_busy`]), and so does the store until [`Store::wait_as_usual`].
    pub(crate) fn open_waiting(path: &Path, busy: Duration) -> Result<Store, StoreError> {
        let open_err = |source: Box<dyn std::error::Error + Send + Sync>| StoreError::Open {
            path: path.to_owned(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
            && !dir.exists()
        {
            DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| open_err(e.into()))?;
        }
        // Never open and close a descriptor of an existing database file here: POSIX locks
        // belong to the process, and closing any descriptor of the file drops every lock the
        // process holds on it, SQLite's too. The recorder's shared lock gone, another process
        // closing the database took itself for the last one and deleted the write-ahead log
        // under the recorder, whose next commits were lost (opening the checkpointer's
        // connection did that, beside the recorder's). So the file is made (mode 0600) only
        // when it is not there yet, and the lock below is taken on its directory.
        // (Through a symbolic link, as SQLite opens it: a link to a file not made yet is made.)
        let missing =
            matches!(std::fs::metadata(path), Err(e) if e.kind() == std::io::ErrorKind::NotFound);
        if missing {
            OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(path)
                .map_err(|e| open_err(e.into()))?;
        } else {
            writable(path).map_err(|e| open_err(e.into()))?;
        }
        // Several acptap processes may open a new database at once: the first one creates the
        // schema while the others wait here (flock on the directory, which SQLite never
        // locks; it ends with `directory`).
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let directory = std::fs::File::open(dir).map_err(|e| open_err(e.into()))?;
        // SAFETY: flock on a file descriptor we own.
        unsafe { libc::flock(directory.as_raw_fd(), libc::LOCK_EX) };
        let conn = Connection::open(path).map_err(|e| open_err(e.into()))?;
        Self::prepare(conn, busy).map_err(open_err)
    }

    /// Opens an existing database for the inspection commands (it is migrated if older).
    pub(crate) fn open_existing(path: &Path) -> Result<Store, StoreError> {
        if !path.exists() {
            return Err(StoreError::Missing(path.to_owned()));
        }
        Self::open(path)
    }

    fn prepare(
        mut conn: Connection,
        busy: Duration,
    ) -> Result<Store, Box<dyn std::error::Error + Send + Sync>> {
        conn.busy_timeout(busy)?;
        // Only takes effect on a file that has no page yet (a new database).
        conn.pragma_update(None, "page_size", NEW_DATABASE_PAGE_SIZE)?;
        // WAL lets readers and one writer work at once; NORMAL is durable across a crash of
        // acptap (not of the machine), which is what a recording needs.
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        // An 8 MiB page cache (the default 2 MiB thrashes on indexes) and fewer, larger checkpoints.
        conn.pragma_update(None, "cache_size", -8_192)?;
        conn.pragma_update(
            None,
            "wal_autocheckpoint",
            pages(&conn, AUTOCHECKPOINT_BYTES)?,
        )?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // The schema's one CHECK (`messages.direction IN (...)`) makes SQLite build a temporary
        // b-tree for every inserted line (a tenth of the recorder's time); acptap writes that
        // column from its own enum, so the check can never fail here.
        conn.pragma_update(None, "ignore_check_constraints", "ON")?;
        let found: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if found > schema_version() {
            return Err(format!(
                "it was made by a newer acptap (schema version {found}; this one knows {}): use that acptap, or upgrade this one",
                schema_version()
            )
            .into());
        }
        migrations().to_latest(&mut conn).map_err(|e| match e {
            // The default message quotes the whole migration; the cause is what matters.
            // A lock stays recognisable; anything else says what failed.
            rusqlite_migration::Error::RusqliteError { err, .. }
                if matches!(
                    err.sqlite_error_code(),
                    Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
                ) =>
            {
                Box::<dyn std::error::Error + Send + Sync>::from(err)
            }
            rusqlite_migration::Error::RusqliteError { err, .. } => {
                format!("cannot bring its schema up to date: {err}").into()
            }
            other => Box::<dyn std::error::Error + Send + Sync>::from(other.to_string()),
        })?;
        // The recorder's statements differ by the columns an update changes: keep them all.
        conn.set_prepared_statement_cache_capacity(64);
        Ok(Store {
            conn,
            tool_call_rows: ToolCallRows::new(),
        })
    }

    /// Waits for another process's lock as long as a recorder does (after [`Store::open_waiting`]).
    pub(crate) fn wait_as_usual(&self) -> Result<(), StoreError> {
        Ok(self.conn.busy_timeout(BUSY_TIMEOUT)?)
    }

    pub fn begin_connection(&mut self, start: &ConnectionStart) -> Result<i64, StoreError> {
        self.conn.execute(
            "INSERT INTO connections (label, command, cwd, pid, proxy_pid, started_at, proxy_identity,
                                      replay_of)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                start.label,
                serde_json::to_string(&start.command).unwrap_or_default(),
                start.cwd,
                start.pid,
                std::process::id(),
                start.started_at,
                process_identity(std::process::id()),
                start.replay_of,
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Records how a connection ended, and how many of its lines could not be recorded.
    pub(crate) fn end_connection(
        &mut self,
        connection_id: i64,
        end: &ConnectionEnd,
        lost_messages: i64,
    ) -> Result<(), StoreError> {
        self.conn.execute(
            "UPDATE connections SET ended_at = ?2, exit_code = ?3, exit_signal = ?4,
                 lost_messages = lost_messages + ?5, complete = (lost_messages + ?5 = 0)
             WHERE id = ?1",
            params![
                connection_id,
                end.ended_at,
                end.exit_code,
                end.exit_signal,
                lost_messages
            ],
        )?;
        Ok(())
    }

    /// Deletes the connections started before `before` (µs since the epoch) and everything that
    /// hangs off them, in one transaction. Returns how many connections went.
    /// Deletes these connections with everything recorded under them, in one transaction
    /// (foreign keys cascade). Rows of newer connections that point at them (a replay's link)
    /// are kept. Which connections may go is `query::prunable_connections`'s business.
    pub(crate) fn delete_connections(&mut self, ids: &[i64]) -> Result<usize, StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let mut removed = 0;
        {
            let mut delete = tx.prepare("DELETE FROM connections WHERE id = ?1")?;
            for id in ids {
                removed += delete.execute([id])?;
            }
        }
        tx.commit()?;
        Ok(removed)
    }

    /// Adds the messages recorded since the last time to the full-text index (`acptap search`):
    /// the text of their JSON strings (prompts, agent text, titles, commands, paths, diffs),
    /// not ids or keys. Returns how many messages were indexed.
    pub(crate) fn index_for_search(&mut self) -> Result<usize, StoreError> {
        super::search_index::index_new_lines(&mut self.conn)
    }

    /// Gives the space of deleted rows back to the file system.
    pub(crate) fn vacuum(&mut self) -> Result<(), StoreError> {
        self.conn
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE); VACUUM;")?;
        Ok(())
    }

    /// Copies what the write-ahead log holds into the database, without waiting for or blocking
    /// writers (the recorder's checkpointer thread calls this, so the recorder never does it).
    pub(crate) fn checkpoint(&self) -> Result<(), StoreError> {
        self.conn
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))?;
        Ok(())
    }

    /// Leaves checkpoints to someone else (see [`Store::checkpoint`]), but for a rare one of its
    /// own: a checkpoint by the writer itself is what lets the log start over from its beginning
    /// (concurrent checkpoints never catch up with a busy writer), so without it the WAL file
    /// would grow for as long as the session is busy.
    pub(crate) fn checkpoint_rarely(&self) -> Result<(), StoreError> {
        self.conn.pragma_update(
            None,
            "wal_autocheckpoint",
            pages(&self.conn, RECORDER_AUTOCHECKPOINT_BYTES)?,
        )?;
        Ok(())
    }

    /// Stores a batch of lines, with everything learned from them, in one transaction.
    pub fn write_batch(
        &mut self,
        connection_id: i64,
        rows: &[LineToWrite],
    ) -> Result<(), StoreError> {
        let result = self.write_batch_once(connection_id, rows);
        if result.is_err() {
            // Rows inserted by the failed transaction are gone: forget their ids.
            self.tool_call_rows.clear();
        }
        result
    }

    fn write_batch_once(
        &mut self,
        connection_id: i64,
        rows: &[LineToWrite],
    ) -> Result<(), StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        // The batch's lines first, then what was learned from them (which points at them by id).
        let first_id = insert_messages(&tx, connection_id, rows)?;
        for (row, message_id) in rows.iter().zip(first_id..) {
            let written = MessageWritten {
                tx: &tx,
                connection_id,
                row,
                message_id,
            };
            for fact in &row.facts {
                store_fact(&written, &mut self.tool_call_rows, fact)?;
            }
        }
        tx.commit()?;
        Ok(())
    }
}

/// Whether this process may write `path` (without opening it: see [`Store::open_waiting`]); the
/// error says why not, as opening it for writing would (a directory, no permission).
fn writable(path: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    if path.is_dir() {
        return Err(std::io::Error::from_raw_os_error(libc::EISDIR));
    }
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    // SAFETY: access(2) on a NUL-terminated path we own.
    if unsafe { libc::access(c_path.as_ptr(), libc::W_OK) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// How many of this database's pages make `bytes`.
fn pages(conn: &Connection, bytes: i64) -> rusqlite::Result<i64> {
    let page_size: i64 = conn.pragma_query_value(None, "page_size", |r| r.get(0))?;
    Ok(bytes / page_size.max(512))
}

/// The schema version this acptap writes and reads (SQLite's `user_version`).
pub(crate) fn schema_version() -> i64 {
    MIGRATIONS.len() as i64
}

/// `found`, the schema version of the database at `path`, is this acptap's; else the error that
/// says which way it is off and the fix (`acptap migrate`, or a newer acptap).
pub(crate) fn require_current_schema(path: &Path, found: i64) -> Result<(), StoreError> {
    let expected = schema_version();
    if found != expected {
        return Err(StoreError::Schema {
            path: path.to_owned(),
            found,
            expected,
        });
    }
    Ok(())
}

/// Who a process is, beyond its reusable pid: `BOOT_ID:START_TICKS` (the boot it runs in and when
/// it started, from /proc). `None` where /proc does not say (not Linux, or the process is gone).
pub(crate) fn process_identity(pid: u32) -> Option<String> {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Field 22 (starttime), counted after the parenthesised command name.
    let ticks = stat[stat.rfind(')')? + 1..].split_whitespace().nth(19)?;
    Some(format!("{}:{ticks}", boot.trim()))
}

/// The schema version of an existing database file, read without changing it.
pub(crate) fn schema_version_of(path: &Path) -> Result<i64, StoreError> {
    if !path.exists() {
        return Err(StoreError::Missing(path.to_owned()));
    }
    let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| StoreError::Open {
            path: path.to_owned(),
            source: e.into(),
        })?;
    Ok(conn.pragma_query_value(None, "user_version", |r| r.get(0))?)
}

pub(crate) fn migrations() -> Migrations<'static> {
    Migrations::new(MIGRATIONS.iter().map(|sql| M::up(sql)).collect())
}

/// Lines longer than this are written into their row in pieces (incremental blob I/O), so
/// SQLite never builds the whole row in memory: a 64 MiB line costs the page cache, not 64 MiB
/// more.
const INCREMENTAL_BLOB_BYTES: usize = 1024 * 1024;

/// Message rows written by one `INSERT` statement: a statement's own cost (its step, reset and
/// journal bookkeeping) is shared by this many lines (issue 31: 2.5 instead of 3.3 µs of CPU per
/// 64-byte line in a bare program, 5.6 instead of 6.0 per 1 KiB line).
const ROWS_PER_INSERT: usize = 32;

/// The columns of a message row, in the order [`bind_message`] binds them.
const MESSAGE_COLUMNS: &str = "id, connection_id, seq, ts, direction, kind, rpc_id, method, session_id, tool_call_id, reply_to_seq, raw, size, truncated, origin, forwarded";
const MESSAGE_COLUMN_COUNT: usize = 16;

/// Writes the message rows of a batch, in order, with consecutive ids, and returns the first id
/// (the transaction holds the write lock, so no other writer takes one in between). Rows go
/// [`ROWS_PER_INSERT`] to a statement; a line longer than [`INCREMENTAL_BLOB_BYTES`] is bound
/// as a zeroblob of its length and written into its row in pieces, so SQLite never builds the
/// whole row in memory.
fn insert_messages(
    tx: &Transaction,
    connection_id: i64,
    rows: &[LineToWrite],
) -> rusqlite::Result<i64> {
    let first_id: i64 = tx.query_row("SELECT COALESCE(MAX(id), 0) + 1 FROM messages", [], |r| {
        r.get(0)
    })?;
    let statement_for = |count: usize| {
        let one = format!("({})", vec!["?"; MESSAGE_COLUMN_COUNT].join(", "));
        format!(
            "INSERT INTO messages ({MESSAGE_COLUMNS}) VALUES {}",
            vec![one; count].join(", ")
        )
    };
    let (many, one) = (statement_for(ROWS_PER_INSERT), statement_for(1));
    let mut id = first_id;
    for chunk in rows.chunks(ROWS_PER_INSERT) {
        if chunk.len() == ROWS_PER_INSERT {
            insert_group(tx, &many, id, connection_id, chunk)?;
        } else {
            for (at, row) in chunk.iter().enumerate() {
                insert_group(
                    tx,
                    &one,
                    id + at as i64,
                    connection_id,
                    std::slice::from_ref(row),
                )?;
            }
        }
        id += chunk.len() as i64;
    }
    Ok(first_id)
}

/// Writes `rows` with the ids from `first_id` by `sql`, an insert of that many rows.
fn insert_group(
    tx: &Transaction,
    sql: &str,
    first_id: i64,
    connection_id: i64,
    rows: &[LineToWrite],
) -> rusqlite::Result<()> {
    let mut insert = tx.prepare_cached(sql)?;
    for ((at, row), id) in rows.iter().enumerate().zip(first_id..) {
        bind_message(
            &mut insert,
            at * MESSAGE_COLUMN_COUNT,
            id,
            connection_id,
            row,
        )?;
    }
    insert.raw_execute()?;
    for (row, id) in rows.iter().zip(first_id..) {
        if row.raw.len() > INCREMENTAL_BLOB_BYTES {
            let mut blob = tx.blob_open(rusqlite::MAIN_DB, "messages", "raw", id, false)?;
            for (i, piece) in row.raw.chunks(INCREMENTAL_BLOB_BYTES).enumerate() {
                blob.write_at(piece, i * INCREMENTAL_BLOB_BYTES)?;
            }
        }
    }
    Ok(())
}

/// Binds one message row's [`MESSAGE_COLUMNS`] after the statement's first `offset` parameters.
fn bind_message(
    insert: &mut rusqlite::CachedStatement,
    offset: usize,
    id: i64,
    connection_id: i64,
    row: &LineToWrite,
) -> rusqlite::Result<()> {
    let origin = if row.annotation.written_by_acptap {
        "acptap"
    } else {
        "peer"
    };
    // A large line is bound as a zeroblob of its length (no memory) and written afterwards.
    let raw: &dyn rusqlite::ToSql = if row.raw.len() > INCREMENTAL_BLOB_BYTES {
        &rusqlite::blob::ZeroBlob(row.raw.len() as i32)
    } else {
        &&row.raw[..]
    };
    let values: [&dyn rusqlite::ToSql; MESSAGE_COLUMN_COUNT] = [
        &id,
        &connection_id,
        &row.seq,
        &row.ts,
        &row.direction,
        &row.kind,
        &row.rpc_id,
        &row.method,
        &row.session_id,
        &row.tool_call_id,
        &row.reply_to_seq,
        raw,
        &row.size,
        &row.truncated,
        &origin,
        &!row.annotation.withheld,
    ];
    for (i, value) in values.into_iter().enumerate() {
        insert.raw_bind_parameter(offset + i + 1, value)?;
    }
    Ok(())
}

fn json(value: &Option<Value>) -> Option<String> {
    value.as_ref().map(Value::to_string)
}

/// A message row just written, and what its facts need of it: they go into the same
/// transaction, under its connection, and take their times, sequence numbers and links from it.
struct MessageWritten<'a> {
    tx: &'a Transaction<'a>,
    connection_id: i64,
    row: &'a LineToWrite,
    message_id: i64,
}

/// Writes one fact learned from a line, by its kind.
fn store_fact(
    written: &MessageWritten,
    tool_call_rows: &mut ToolCallRows,
    fact: &Fact,
) -> rusqlite::Result<()> {
    match fact {
        Fact::ClientInitialize {
            protocol_version,
            client_info,
        } => store_client_initialize(written, protocol_version, client_info),
        Fact::AgentInitialize {
            protocol_version,
            agent_info,
        } => store_agent_initialize(written, protocol_version, agent_info),
        Fact::Session {
            session_id,
            cwd,
            origin,
        } => store_session(written, session_id, cwd, origin),
        Fact::TurnStarted { session_id } => store_turn_started(written, session_id),
        Fact::TurnEnded {
            request_seq,
            stop_reason,
            error,
        } => store_turn_ended(written, *request_seq, stop_reason, error),
        Fact::CancelRequested { session_id } => store_cancel_requested(written, session_id),
        Fact::ToolCall {
            session_id,
            tool_call_id,
            how,
            changed,
            status,
            ..
        } => store_tool_call(
            written,
            tool_call_rows,
            session_id,
            tool_call_id,
            *how,
            changed,
            status,
        ),
        Fact::PermissionRequested {
            session_id,
            tool_call_id,
            options,
            title,
            description,
            subject,
        } => store_permission_requested(
            written,
            session_id,
            tool_call_id,
            options,
            title,
            description,
            subject,
        ),
        Fact::PermissionDecided {
            request_seq,
            outcome,
            option_id,
            option_kind,
            decided_by,
        } => store_permission_decided(
            written,
            *request_seq,
            outcome,
            option_id,
            option_kind,
            decided_by,
        ),
    }
}

/// The client's `initialize`: its info, and the protocol version unless the agent's answer
/// already set it (the agent's word is the negotiated one).
fn store_client_initialize(
    written: &MessageWritten,
    protocol_version: &Option<Value>,
    client_info: &Option<Value>,
) -> rusqlite::Result<()> {
    written
        .tx
        .prepare_cached(
            "UPDATE connections SET client_info = ?2,
                     protocol_version = COALESCE(protocol_version, ?3) WHERE id = ?1",
        )?
        .execute(params![
            written.connection_id,
            json(client_info),
            json(protocol_version)
        ])?;
    Ok(())
}

/// The agent's answer to `initialize`: its info, and the protocol version it settled on.
fn store_agent_initialize(
    written: &MessageWritten,
    protocol_version: &Option<Value>,
    agent_info: &Option<Value>,
) -> rusqlite::Result<()> {
    written
        .tx
        .prepare_cached(
            "UPDATE connections SET agent_info = ?2,
                     protocol_version = COALESCE(?3, protocol_version) WHERE id = ?1",
        )?
        .execute(params![
            written.connection_id,
            json(agent_info),
            json(protocol_version)
        ])?;
    Ok(())
}

/// A session: created on first sight; later facts may add its cwd or say how it began (an id
/// only `seen` in traffic never overrides a known origin).
fn store_session(
    written: &MessageWritten,
    session_id: &str,
    cwd: &Option<String>,
    origin: &str,
) -> rusqlite::Result<()> {
    written
        .tx
        .prepare_cached(
            "INSERT INTO sessions (connection_id, session_id, cwd, origin, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (connection_id, session_id) DO UPDATE SET
                     cwd = COALESCE(excluded.cwd, cwd),
                     origin = CASE excluded.origin WHEN 'seen' THEN origin ELSE excluded.origin END",
        )?
        .execute(params![
            written.connection_id,
            session_id,
            cwd,
            origin,
            written.row.ts
        ])?;
    Ok(())
}

/// A prompt turn, keyed by the line of its `session/prompt` request.
fn store_turn_started(
    written: &MessageWritten,
    session_id: &Option<String>,
) -> rusqlite::Result<()> {
    let row = written.row;
    written
        .tx
        .prepare_cached(
            "INSERT OR IGNORE INTO prompt_turns (connection_id, session_id, request_seq, started_at)
                 VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(params![written.connection_id, session_id, row.seq, row.ts])?;
    Ok(())
}

/// The end of the turn that `request_seq` started: this line answered it.
fn store_turn_ended(
    written: &MessageWritten,
    request_seq: i64,
    stop_reason: &Option<String>,
    error: &Option<String>,
) -> rusqlite::Result<()> {
    let row = written.row;
    written
        .tx
        .prepare_cached(
            "UPDATE prompt_turns SET response_seq = ?3, ended_at = ?4, duration_us = ?4 - started_at,
                     stop_reason = ?5, error = ?6
                 WHERE connection_id = ?1 AND request_seq = ?2",
        )?
        .execute(params![
            written.connection_id,
            request_seq,
            row.seq,
            row.ts,
            stop_reason,
            error
        ])?;
    Ok(())
}

/// `session/cancel`: the session's open turns note when they were first asked to stop.
fn store_cancel_requested(
    written: &MessageWritten,
    session_id: &Option<String>,
) -> rusqlite::Result<()> {
    written
        .tx
        .prepare_cached(
            "UPDATE prompt_turns SET cancel_requested_at = COALESCE(cancel_requested_at, ?3)
                 WHERE connection_id = ?1 AND session_id IS ?2 AND ended_at IS NULL",
        )?
        .execute(params![written.connection_id, session_id, written.row.ts])?;
    Ok(())
}

/// The ACP fields of a tool call that a message can change, each with its column, in the order
/// an UPDATE sets them and the INSERT lists them.
const TOOL_CALL_COLUMNS: [(&str, &str); 7] = [
    ("title", "title"),
    ("kind", "kind"),
    ("status", "status"),
    ("content", "content"),
    ("locations", "locations"),
    ("rawInput", "raw_input"),
    ("rawOutput", "raw_output"),
];

/// A column as a message leaves it: whether the message set it, and its text.
type ColumnValue = (bool, Option<String>);

/// What a message changed of a tool call: an update of the row when the call is known, else a
/// new row; then the event that says what changed.
fn store_tool_call(
    written: &MessageWritten,
    tool_call_rows: &mut ToolCallRows,
    session_id: &str,
    tool_call_id: &str,
    how: UpdateKind,
    changed: &[(&'static str, Option<Value>)],
    status: &Option<String>,
) -> rusqlite::Result<()> {
    // Only the columns the message changed are written; a content chunk is appended
    // in SQL, so the recorder never holds a tool call's whole content.
    let chunk = (how == UpdateKind::ContentChunk)
        .then(|| changed.iter().find(|(n, _)| *n == "content"))
        .flatten()
        .and_then(|(_, v)| v.as_ref())
        .map(Value::to_string);
    let columns = TOOL_CALL_COLUMNS.map(|(field, _)| column_value(changed, &chunk, field));
    let key = (
        written.connection_id,
        session_id.to_owned(),
        tool_call_id.to_owned(),
    );
    let known = match tool_call_rows.get(&key) {
        Some(&id) => Some(id),
        None => find_tool_call_row(written, session_id, tool_call_id)?,
    };
    let updated = match known {
        Some(id) => update_tool_call(written, id, &columns, &chunk)?,
        None => None,
    };
    let tool_call_row = match updated {
        Some(id) => id,
        None => insert_tool_call(written, session_id, tool_call_id, how, &columns)?,
    };
    if tool_call_rows.len() >= MAX_KNOWN_TOOL_CALLS {
        tool_call_rows.clear();
    }
    tool_call_rows.insert(key, tool_call_row);
    if !changed.is_empty() {
        insert_tool_call_event(written, tool_call_row, how, changed, status)?;
    }
    Ok(())
}

/// The column of ACP field `field` after the message: strings of title, kind and status as
/// they are, anything else as JSON; a content chunk as a one-item array (for a new row; an
/// existing row gets it appended instead).
fn column_value(
    changed: &[(&'static str, Option<Value>)],
    chunk: &Option<String>,
    field: &str,
) -> ColumnValue {
    match changed.iter().find(|(n, _)| *n == field) {
        _ if field == "content" && chunk.is_some() => {
            (false, chunk.as_ref().map(|item| format!("[{item}]")))
        }
        Some((_, value)) => {
            let text = value.as_ref().map(|v| match v {
                Value::String(s) if matches!(field, "title" | "kind" | "status") => s.clone(),
                other => other.to_string(),
            });
            (true, text)
        }
        None => (false, None),
    }
}

/// The row of a tool call this store does not remember: written by an earlier store, or
/// forgotten when the memory started over.
fn find_tool_call_row(
    written: &MessageWritten,
    session_id: &str,
    tool_call_id: &str,
) -> rusqlite::Result<Option<i64>> {
    written
        .tx
        .prepare_cached(
            "SELECT id FROM tool_calls
                         WHERE connection_id = ?1 AND session_id = ?2 AND tool_call_id = ?3",
        )?
        .query_row(
            params![written.connection_id, session_id, tool_call_id],
            |r| r.get(0),
        )
        .optional()
}

/// Updates row `id` with the columns that changed. An update is one UPDATE by row id: no
/// upsert, whose conflict handling and RETURNING cost SQLite a statement journal and a
/// temporary table per line (a third of the recorder's time on a tool-heavy session).
/// `None` when no row changed: the row went (another process pruned it) and is written anew.
fn update_tool_call(
    written: &MessageWritten,
    id: i64,
    columns: &[ColumnValue; 7],
    chunk: &Option<String>,
) -> rusqlite::Result<Option<i64>> {
    let mut sql = String::from("UPDATE tool_calls SET ");
    let mut values: Vec<&dyn rusqlite::ToSql> = Vec::new();
    for ((_, name), (changed, value)) in TOOL_CALL_COLUMNS.iter().zip(columns) {
        if *changed {
            values.push(value);
            let _ = write!(sql, "{name} = ?{}, ", values.len());
        }
    }
    if let Some(chunk) = chunk {
        values.push(chunk);
        let _ = write!(
            sql,
            "content = json_insert(CASE WHEN content IS NULL THEN '[]'
                                 WHEN json_type(content) = 'array' THEN content
                                 ELSE json_array(json(content)) END, '$[#]', json(?{})), ",
            values.len()
        );
    }
    values.push(&written.row.ts);
    values.push(&id);
    let _ = write!(
        sql,
        "last_updated_at = ?{}, update_count = update_count + 1 WHERE id = ?{}",
        values.len() - 1,
        values.len()
    );
    Ok((written.tx.prepare_cached(&sql)?.execute(&values[..])? == 1).then_some(id))
}

/// A tool call's first row, created by the message kind `how`. Returns its row id.
fn insert_tool_call(
    written: &MessageWritten,
    session_id: &str,
    tool_call_id: &str,
    how: UpdateKind,
    columns: &[ColumnValue; 7],
) -> rusqlite::Result<i64> {
    let [
        (_, title),
        (_, kind),
        (_, status),
        (_, content),
        (_, locations),
        (_, raw_input),
        (_, raw_output),
    ] = columns;
    written
        .tx
        .prepare_cached(
            "INSERT INTO tool_calls (connection_id, session_id, tool_call_id, title,
                             kind, status, content, locations, raw_input, raw_output, created_by,
                             first_seen_at, last_updated_at, update_count)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12, 1)",
        )?
        .execute(params![
            written.connection_id,
            session_id,
            tool_call_id,
            title,
            kind,
            status,
            content,
            locations,
            raw_input,
            raw_output,
            how.as_str(),
            written.row.ts,
        ])?;
    Ok(written.tx.last_insert_rowid())
}

/// The event of one message on a tool call: which fields it changed, and the status after it.
fn insert_tool_call_event(
    written: &MessageWritten,
    tool_call_row: i64,
    how: UpdateKind,
    changed: &[(&'static str, Option<Value>)],
    status: &Option<String>,
) -> rusqlite::Result<()> {
    written
        .tx
        .prepare_cached(
            "INSERT INTO tool_call_events (tool_call_row, message_id, ts, update_kind, changed, status)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?
        .execute(params![
            tool_call_row,
            written.message_id,
            written.row.ts,
            how.as_str(),
            serde_json::to_string(&changed.iter().map(|(n, _)| n).collect::<Vec<_>>())
                .unwrap_or_default(),
            status,
        ])?;
    Ok(())
}

/// A permission request, with the policy's decision on it when acptap's policy saw it.
fn store_permission_requested(
    written: &MessageWritten,
    session_id: &Option<String>,
    tool_call_id: &Option<String>,
    options: &Option<Value>,
    title: &Option<String>,
    description: &Option<String>,
    subject: &Option<Value>,
) -> rusqlite::Result<()> {
    let row = written.row;
    let policy = row.annotation.policy.as_deref();
    written
        .tx
        .prepare_cached(
            "INSERT OR IGNORE INTO permission_requests (connection_id, session_id, tool_call_id,
                     request_seq, request_message_id, requested_at, options, policy_decision,
                     policy_rule, policy_hash, policy_reason, policy_option_id, policy_shadow,
                     policy_input, title, description, subject)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
        )?
        .execute(params![
            written.connection_id,
            session_id,
            tool_call_id,
            row.seq,
            written.message_id,
            row.ts,
            json(options),
            policy.map(|p| p.decision),
            policy.and_then(|p| p.rule.as_deref()),
            policy.map(|p| p.policy_hash.as_str()),
            policy.map(|p| p.reason.as_str()),
            policy.and_then(|p| p.option_id.as_deref()),
            policy.map(|p| p.shadow),
            policy.map(|p| p.input.as_str()),
            title,
            description,
            json(subject),
        ])?;
    Ok(())
}

/// The answer to the permission request on line `request_seq`.
fn store_permission_decided(
    written: &MessageWritten,
    request_seq: i64,
    outcome: &str,
    option_id: &Option<String>,
    option_kind: &Option<String>,
    decided_by: &str,
) -> rusqlite::Result<()> {
    let row = written.row;
    written
        .tx
        .prepare_cached(
            "UPDATE permission_requests SET response_message_id = ?3, decided_at = ?4,
                     decision_us = ?4 - requested_at, outcome = ?5, option_id = ?6, option_kind = ?7,
                     decided_by = ?8
                 WHERE connection_id = ?1 AND request_seq = ?2",
        )?
        .execute(params![
            written.connection_id,
            request_seq,
            written.message_id,
            row.ts,
            outcome,
            option_id,
            option_kind,
            // An answer acptap wrote itself was the policy's decision.
            if row.annotation.written_by_acptap { "policy" } else { decided_by },
        ])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_valid() {
        migrations().validate().expect("migrations apply cleanly");
    }

    #[test]
    fn every_migration_file_is_embedded() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
        let files = std::fs::read_dir(dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "sql")
            })
            .count();
        assert_eq!(
            files,
            MIGRATIONS.len(),
            "add the new migration to MIGRATIONS"
        );
    }

    #[test]
    fn open_creates_private_file_and_directory() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("nested/dir/acptap.db");
        Store::open(&path).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
    }

    #[test]
    fn open_existing_names_the_missing_file() {
        let err = Store::open_existing(Path::new("/nonexistent/acptap.db"))
            .err()
            .unwrap();
        assert!(err.to_string().contains("/nonexistent/acptap.db"), "{err}");
    }
}
