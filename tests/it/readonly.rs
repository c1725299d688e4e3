//! The read side only reads: every view works on a database file the user cannot write (and
//! whose directory they cannot write), while another acptap records into it.
//!
//! When the tests run as root (as CI does), the views run as `nobody` through `setpriv`, so
//! the file permissions really bind; otherwise they run as the current user on files made
//! read-only.

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::util::{SAMPLES, Sandbox, acptap_bin, eventually, example_bin, finish, fixture};

fn chmod(path: &Path, mode: u32) {
    if path.exists() {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Runs acptap as a user who may read the database but not write it or its directory.
fn as_reader(db: &Path, out_dir: &Path, args: &[&str]) -> Output {
    let mut command = if is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(acptap_bin());
        c
    } else {
        Command::new(acptap_bin())
    };
    command
        .args(args)
        .env("ACPTAP_DB", db)
        .env("XDG_CONFIG_HOME", out_dir)
        .env("HOME", out_dir)
        .current_dir(out_dir)
        .stdin(Stdio::null())
        .output()
        .expect("run acptap (setpriv is in util-linux)")
}

#[test]
fn every_view_reads_a_database_it_cannot_write_while_another_acptap_records() {
    let sb = Sandbox::new();
    sb.acptap(&["import", fixture(SAMPLES[0]).to_str().unwrap()]);
    let db = sb.db();
    let dir = db.parent().unwrap().to_owned();
    // A live recording into the same file: the stream peer writes while the views read.
    let peer = example_bin("peer");
    let mut live = sb.proxy(
        &[],
        &[
            peer.as_os_str(),
            OsStr::new("stream"),
            OsStr::new("100000"),
            OsStr::new("120"),
        ],
    );
    let mut stdout = live.stdout.take().unwrap();
    let drain = std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = stdout.read_to_end(&mut sink);
        sink.len()
    });
    assert!(
        eventually(Duration::from_secs(30), || sb
            .count("SELECT count(*) FROM connections")
            == 2),
        "the live recording did not start"
    );
    // Readable by all, writable by nobody but its owner; the directory too.
    chmod(&dir, 0o755);
    for suffix in ["", "-wal", "-shm"] {
        chmod(Path::new(&format!("{}{suffix}", db.display())), 0o444);
    }
    let out_dir = tempfile::tempdir().unwrap();
    chmod(out_dir.path(), 0o777);
    let policy = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/policies/project.toml");
    let report = out_dir.path().join("report.html");
    let views: Vec<Vec<&str>> = vec![
        vec!["sessions"],
        vec!["sessions", "--json"],
        vec!["show", "last"],
        vec!["show", "last", "--json"],
        vec!["tools"],
        vec!["tools", "--json"],
        vec!["stats"],
        vec!["stats", "--json"],
        vec!["export", "last"],
        vec!["export", "last", "--format", "trace"],
        vec!["report", "last", "-o", report.to_str().unwrap()],
        vec![
            "policy",
            "replay",
            "--policy",
            policy.to_str().unwrap(),
            "all",
        ],
    ];
    for view in &views {
        let out = as_reader(&db, out_dir.path(), view);
        assert!(
            out.status.success() && !out.stdout.is_empty(),
            "acptap {view:?}: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(std::fs::read_to_string(&report).unwrap().contains("<html"));
    // tail follows until stopped: it starts, says so, and is stopped.
    let mut tail = if is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(acptap_bin());
        c
    } else {
        Command::new(acptap_bin())
    };
    let mut tail = tail
        .args(["tail", "--interval", "50ms"])
        .env("ACPTAP_DB", &db)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    assert!(tail.try_wait().unwrap().is_none(), "tail ended on its own");
    tail.kill().unwrap();
    let tail = tail.wait_with_output().unwrap();
    assert!(
        String::from_utf8_lossy(&tail.stderr).contains("following"),
        "{}",
        String::from_utf8_lossy(&tail.stderr)
    );
    // The live recording went on undisturbed, and is whole.
    for suffix in ["", "-wal", "-shm"] {
        chmod(Path::new(&format!("{}{suffix}", db.display())), 0o644);
    }
    drop(live.stdin.take());
    // Generous: on a loaded 2-core machine a debug proxy records these lines slowly.
    let output = finish(live, Duration::from_secs(240));
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(drain.join().unwrap() > 0);
    assert_eq!(
        sb.count("SELECT count(*) FROM messages WHERE connection_id = 2 AND direction = 'a2c'"),
        100_000
    );
}

#[test]
fn a_database_from_an_older_acptap_is_refused_with_the_fix_and_migrate_applies_it() {
    let sb = Sandbox::new();
    sb.acptap(&["import", fixture(SAMPLES[0]).to_str().unwrap()]);
    let conn = sb.conn();
    // As a version-3 acptap left it: without the columns later migrations add.
    conn.execute_batch(
        "ALTER TABLE permission_requests DROP COLUMN policy_input;
         ALTER TABLE permission_requests DROP COLUMN title;
         ALTER TABLE permission_requests DROP COLUMN description;
         ALTER TABLE permission_requests DROP COLUMN subject;
         DROP INDEX prompt_turns_response;
         ALTER TABLE connections DROP COLUMN proxy_identity;
         DROP TRIGGER messages_leave_search;
         DROP TABLE search_text;
         DROP TABLE search_indexed;
         PRAGMA user_version = 3;",
    )
    .unwrap();
    drop(conn);
    let out = Command::new(acptap_bin())
        .args(["show", "last"])
        .env("ACPTAP_DB", sb.db())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("schema version 3") && stderr.contains("acptap migrate"),
        "{stderr}"
    );
    let migrated = sb.acptap(&["migrate"]);
    let latest = std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations"))
        .unwrap()
        .count();
    let said = String::from_utf8_lossy(&migrated.stdout).into_owned();
    assert!(said.contains(&format!("3 -> {latest}")), "{said}");
    sb.acptap(&["show", "last"]);
    // Migrating indexed what was recorded before: it is found.
    let found = sb.acptap(&["search", "created_by_agent.txt"]);
    assert!(String::from_utf8_lossy(&found.stdout).contains("touch created_by_agent.txt"));
}

/// A database from a newer acptap, and a file that is not a database: one clear line each, every
/// cause said once, exit status 2 (not a migration library's error, not the same words thrice).
#[test]
fn newer_and_foreign_files_get_one_clear_line() {
    let sb = Sandbox::new();
    sb.acptap(&["import", fixture(SAMPLES[0]).to_str().unwrap()]);
    sb.conn()
        .execute_batch("PRAGMA user_version = 99;")
        .unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(acptap_bin())
            .args(args)
            .env("ACPTAP_DB", sb.db())
            .env("XDG_CONFIG_HOME", sb.dir.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        String::from_utf8(out.stderr).unwrap()
    };
    for args in [
        &["show", "last"][..],
        &["import", fixture(SAMPLES[0]).to_str().unwrap()],
    ] {
        let said = run(args);
        assert!(
            said.contains("newer acptap") && said.contains("99"),
            "{said}"
        );
        assert_eq!(said.lines().count(), 1, "{said}");
        assert!(!said.contains("rusqlite_migration"), "{said}");
    }
    std::fs::write(sb.db(), vec![b'x'; 4096]).unwrap();
    let _ = std::fs::remove_file(format!("{}-wal", sb.db().display()));
    let _ = std::fs::remove_file(format!("{}-shm", sb.db().display()));
    let said = run(&["import", fixture(SAMPLES[0]).to_str().unwrap()]);
    assert_eq!(said.matches("not a database").count(), 1, "{said}");
}
