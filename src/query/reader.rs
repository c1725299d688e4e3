//! The read side: a database opened read-only, for every view (`sessions`, `show`, `tools`,
//! `report`, `stats`, `tail`, `export`, `replay`, `policy replay`).
//!
//! A [`Reader`] never writes: it opens the file with `SQLITE_OPEN_READ_ONLY` and `query_only`,
//! migrates nothing, takes no lock beyond SQLite's shared read lock, and so works on a file the
//! user cannot write and while any number of `acptap run` record into it (WAL). A database whose
//! schema is older than this acptap's is refused with the fix (`acptap migrate`); every SQL
//! statement of the views lives in this module (`query/`), behind typed functions.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use crate::record::store::{BUSY_TIMEOUT, StoreError, require_current_schema};

pub struct Reader {
    conn: Connection,
}

impl Reader {
    /// Opens an existing database for reading.
    pub fn open(path: &Path) -> Result<Reader, StoreError> {
        if !path.exists() {
            return Err(StoreError::Missing(path.to_owned()));
        }
        let open_err = |source: rusqlite::Error| StoreError::Open {
            path: path.to_owned(),
            source: source.into(),
        };
        let open = |target: &Path, extra: OpenFlags| -> rusqlite::Result<(Connection, i64)> {
            let conn = Connection::open_with_flags(
                target,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | extra,
            )?;
            conn.busy_timeout(BUSY_TIMEOUT)?;
            conn.pragma_update(None, "query_only", true)?;
            let version = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
            Ok((conn, version))
        };
        let (conn, found) = open(path, OpenFlags::empty())
            .or_else(|first| {
                // A WAL database whose `-shm` file is gone and cannot be made (a read-only copy, a
                // directory the user cannot write): nobody is writing it, so it can be read as an
                // immutable file.
                let beside = |suffix: &str| PathBuf::from(format!("{}{suffix}", path.display()));
                let wal_holds_frames = std::fs::metadata(beside("-wal")).is_ok_and(|m| m.len() > 0);
                if beside("-shm").exists() || wal_holds_frames {
                    return Err(first);
                }
                let uri = format!("file:{}?immutable=1", uri_path(path));
                open(Path::new(&uri), OpenFlags::SQLITE_OPEN_URI).map_err(|_| first)
            })
            .map_err(open_err)?;
        require_current_schema(path, found)?;
        Ok(Reader { conn })
    }

    /// Runs `read` on one snapshot of the database: what other processes commit meanwhile is not
    /// seen, so figures read one after the other agree with each other.
    pub(crate) fn snapshot<T, E: From<rusqlite::Error>>(
        &self,
        read: impl FnOnce(&Reader) -> Result<T, E>,
    ) -> Result<T, E> {
        self.conn.execute_batch("BEGIN")?;
        let read = read(self);
        // A read transaction has nothing to keep: ending it cannot lose anything.
        let _ = self.conn.execute_batch("COMMIT");
        read
    }

    /// The connection, for the typed queries of this module.
    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
    }
}

/// `path` for a `file:` URI: `%`, `?` and `#` escaped.
fn uri_path(path: &Path) -> String {
    let mut out = String::new();
    for c in path.to_string_lossy().chars() {
        match c {
            '%' => out.push_str("%25"),
            '?' => out.push_str("%3f"),
            '#' => out.push_str("%23"),
            c => out.push(c),
        }
    }
    out
}
