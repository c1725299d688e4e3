//! Recorder faults: the session always works, and nothing that was committed is lost.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::time::Duration;

use crate::util::{
    SAMPLES, Sandbox, eventually, example_bin, finish, fixture, load_transcript, play_client,
};

/// Plays a sample through a proxy recording into `db`; returns acptap's stderr.
fn play_sample_into(sb: &Sandbox, db: &std::path::Path) -> String {
    let path = fixture(SAMPLES[0]);
    let peer = example_bin("peer");
    let mut child = sb.proxy_into(
        db,
        &[],
        &[peer.as_os_str(), OsStr::new("script"), path.as_os_str()],
    );
    play_client(&mut child, &load_transcript(&path));
    let output = finish(child, Duration::from_secs(30));
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "the session failed: {stderr}");
    stderr
}

#[test]
fn unwritable_database_path_still_forwards_and_says_so_once() {
    let sb = Sandbox::new();
    std::fs::write(sb.path("a-file"), "").unwrap();
    let db = sb.path("a-file/acptap.db"); // its directory is a file: cannot be created
    let stderr = play_sample_into(&sb, &db);
    assert_eq!(
        stderr.matches("acptap: recording disabled").count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("a-file/acptap.db"), "{stderr}");
    assert_eq!(
        stderr.lines().filter(|l| l.starts_with("acptap:")).count(),
        1,
        "one line: {stderr}"
    );
}

#[test]
fn a_file_that_is_not_a_database_still_forwards() {
    let sb = Sandbox::new();
    std::fs::write(sb.db(), vec![0x42u8; 8192]).unwrap();
    let stderr = play_sample_into(&sb, &sb.db());
    assert_eq!(
        stderr.matches("acptap: recording disabled").count(),
        1,
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(sb.db()).unwrap(),
        vec![0x42u8; 8192],
        "the file was not touched"
    );
}

#[test]
fn database_locked_by_another_writer_for_a_while_loses_nothing() {
    let sb = Sandbox::new();
    let (mut child, capture) = sb.proxy_to_sink(b"");
    let mut stdin = child.stdin.take().unwrap();
    let line = |i: usize| {
        format!("{{\"jsonrpc\":\"2.0\",\"method\":\"_test/n\",\"params\":{{\"i\":{i}}}}}\n")
    };
    for i in 0..100 {
        stdin.write_all(line(i).as_bytes()).unwrap();
    }
    assert!(
        eventually(Duration::from_secs(10), || sb.db().exists()
            && sb
                .conn()
                .query_row("SELECT count(*) FROM messages", [], |r| r.get::<_, i64>(0))
                .unwrap_or(0)
                == 100),
        "the first lines were not recorded"
    );
    // Another process takes the write lock and holds it while the session goes on.
    let mut locker = sb.conn();
    let tx = locker
        .transaction_with_behavior(rusqlite::TransactionBehavior::Exclusive)
        .unwrap();
    tx.execute(
        "INSERT INTO connections (command, started_at) VALUES ('[\"locker\"]', 0)",
        [],
    )
    .unwrap();
    for i in 100..200 {
        stdin.write_all(line(i).as_bytes()).unwrap();
    }
    std::thread::sleep(Duration::from_millis(1500));
    tx.commit().unwrap();
    drop(stdin);
    let output = finish(child, Duration::from_secs(30));
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        std::fs::read(&capture).unwrap().len(),
        (0..200).map(|i| line(i).len()).sum::<usize>()
    );
    assert_eq!(
        sb.count("SELECT count(*) FROM messages WHERE connection_id = 1 AND direction = 'c2a'"),
        200
    );
    assert_eq!(sb.count("SELECT complete FROM connections WHERE id = 1"), 1);
    assert_eq!(
        sb.count("SELECT count(*) FROM connections"),
        2,
        "the other writer's row is kept too"
    );
}

#[test]
fn two_proxies_recording_into_one_file_at_once() {
    let sb = Sandbox::new();
    let peer = example_bin("peer");
    let lines = 5000;
    let children: Vec<_> = (0..2)
        .map(|_| {
            sb.proxy(
                &[],
                &[
                    peer.as_os_str(),
                    OsStr::new("stream"),
                    OsStr::new(&lines.to_string()),
                    OsStr::new("1024"),
                ],
            )
        })
        .collect();
    let mut readers = Vec::new();
    for mut child in children {
        drop(child.stdin.take());
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        readers.push(std::thread::spawn(move || {
            let mut count = 0;
            let mut line = Vec::new();
            while stdout.read_until(b'\n', &mut line).unwrap() > 0 {
                count += 1;
                line.clear();
            }
            let mut rest = Vec::new();
            stdout.read_to_end(&mut rest).unwrap();
            (count, finish(child, Duration::from_secs(60)))
        }));
    }
    for reader in readers {
        let (count, output) = reader.join().unwrap();
        assert_eq!(count, lines);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    assert_eq!(
        sb.count("SELECT count(*) FROM connections WHERE complete = 1"),
        2
    );
    for id in [1, 2] {
        assert_eq!(
            sb.count(&format!(
                "SELECT count(*) FROM messages WHERE connection_id = {id} AND method = '_peer/tick'"
            )),
            lines as i64
        );
    }
}

#[test]
fn read_only_database_keeps_what_was_recorded_and_the_session_works() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;

    let sb = Sandbox::new();
    play_sample_into(&sb, &sb.db());
    let before = sb.count("SELECT count(*) FROM messages");
    // Root ignores file modes, so the proxy runs as `nobody` then; it gets its own copies of the
    // programs and the transcript, in case the checkout is not readable by others.
    let tools = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tools.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let copy = |from: &std::path::Path, name: &str| {
        let to = tools.path().join(name);
        std::fs::copy(from, &to).unwrap();
        std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o755)).unwrap();
        to
    };
    let acptap = copy(&crate::util::acptap_bin(), "acptap");
    let peer = copy(&example_bin("peer"), "peer");
    let path = copy(&fixture(SAMPLES[0]), "transcript.jsonl");
    // The database and its directory: read-only for everyone.
    std::fs::set_permissions(sb.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    for entry in std::fs::read_dir(sb.dir.path()).unwrap() {
        std::fs::set_permissions(
            entry.unwrap().path(),
            std::fs::Permissions::from_mode(0o444),
        )
        .unwrap();
    }
    std::fs::set_permissions(sb.dir.path(), std::fs::Permissions::from_mode(0o555)).unwrap();
    let mut command = std::process::Command::new(&acptap);
    command
        .arg("run")
        .arg("--db")
        .arg(sb.db())
        .arg("--")
        .arg(&peer)
        .arg("script")
        .arg(&path)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        command.uid(65534).gid(65534);
    }
    let mut child = command.spawn().unwrap();
    play_client(&mut child, &load_transcript(&path));
    let output = finish(child, Duration::from_secs(30));
    let stderr = String::from_utf8_lossy(&output.stderr);
    std::fs::set_permissions(sb.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(output.status.success(), "{stderr}");
    assert_eq!(
        stderr.matches("acptap: recording disabled").count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains(&sb.db().display().to_string()), "{stderr}");
    assert_eq!(
        sb.count("SELECT count(*) FROM messages"),
        before,
        "what was recorded is intact"
    );
    assert_eq!(sb.count("SELECT count(*) FROM connections"), 1);
}

#[test]
fn a_failed_write_loses_only_its_batch_says_so_once_and_marks_the_connection_incomplete() {
    let sb = Sandbox::new();
    let (mut child, capture) = sb.proxy_to_sink(b"");
    let mut stdin = child.stdin.take().unwrap();
    let line =
        |method: &str| format!("{{\"jsonrpc\":\"2.0\",\"method\":\"{method}\",\"params\":{{}}}}\n");
    let recorded = |method: &str| {
        sb.conn()
            .query_row(
                "SELECT count(*) FROM messages WHERE method = ?1",
                [method],
                |r| r.get::<_, i64>(0),
            )
            .unwrap_or(0)
    };
    stdin.write_all(line("_test/before").as_bytes()).unwrap();
    assert!(eventually(Duration::from_secs(10), || sb.db().exists()
        && recorded("_test/before") == 1));
    // The database starts refusing one kind of line, as a full disk would refuse them all.
    sb.conn()
        .execute_batch(
            "CREATE TRIGGER refuse BEFORE INSERT ON messages WHEN NEW.method = '_test/refused'
             BEGIN SELECT RAISE(ABORT, 'simulated write failure'); END;",
        )
        .unwrap();
    // Read stderr as it comes, to know when the refused line's batch has failed.
    let (tx, rx) = std::sync::mpsc::channel();
    let agent_stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for l in BufReader::new(agent_stderr).lines() {
            let l = l.unwrap();
            let _ = tx.send(l.clone());
            all.push_str(&l);
            all.push('\n');
        }
        all
    });
    stdin.write_all(line("_test/refused").as_bytes()).unwrap();
    let warned = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("a warning on stderr");
    assert!(warned.starts_with("acptap:"), "{warned}");
    stdin.write_all(line("_test/after").as_bytes()).unwrap();
    drop(stdin);
    let output = finish(child, Duration::from_secs(30));
    let stderr = reader.join().unwrap();
    assert!(output.status.success(), "{stderr}");
    assert_eq!(stderr.matches("acptap:").count(), 1, "{stderr}");
    assert!(stderr.contains("simulated write failure"), "{stderr}");
    let sent = line("_test/before") + &line("_test/refused") + &line("_test/after");
    assert_eq!(
        std::fs::read(&capture).unwrap(),
        sent.as_bytes(),
        "forwarding went on"
    );
    assert_eq!(
        (
            recorded("_test/before"),
            recorded("_test/refused"),
            recorded("_test/after")
        ),
        (1, 0, 1)
    );
    let (complete, lost): (bool, i64) = sb
        .conn()
        .query_row("SELECT complete, lost_messages FROM connections", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert!(!complete);
    assert_eq!(lost, 1);
}

/// The database locked by another process when acptap starts, for longer than SQLite waits
/// (8 s; it waits 5): forwarding goes on, and once the lock is gone the whole connection is
/// recorded, with a message that says what happened (it used to lose the recording and say the
/// path was not writable).
#[test]
fn a_database_locked_at_start_up_records_the_whole_connection_once_free() {
    let sb = Sandbox::new();
    // An existing database, locked by another writer before acptap starts.
    sb.acptap(&["import", fixture(SAMPLES[1]).to_str().unwrap()]);
    let mut locker = sb.conn();
    let tx = locker
        .transaction_with_behavior(rusqlite::TransactionBehavior::Exclusive)
        .unwrap();
    tx.execute(
        "INSERT INTO connections (command, started_at) VALUES ('[\"locker\"]', 0)",
        [],
    )
    .unwrap();
    let (mut child, capture) = sb.proxy_to_sink(b"");
    let mut stdin = child.stdin.take().unwrap();
    let line = |i: usize| {
        format!("{{\"jsonrpc\":\"2.0\",\"method\":\"_test/n\",\"params\":{{\"i\":{i}}}}}\n")
    };
    for i in 0..300 {
        stdin.write_all(line(i).as_bytes()).unwrap();
        if i % 50 == 0 {
            std::thread::sleep(Duration::from_millis(1300));
        }
    }
    // Forwarded while locked: the agent got every line already.
    let sent = (0..300).map(|i| line(i).len()).sum::<usize>();
    assert!(
        eventually(Duration::from_secs(10), || std::fs::metadata(&capture)
            .is_ok_and(|m| m.len() as usize == sent)
            || !capture.exists()),
        "forwarding waited for the lock"
    );
    tx.commit().unwrap();
    drop(stdin);
    let output = finish(child, Duration::from_secs(30));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(std::fs::read(&capture).unwrap().len(), sent);
    assert!(stderr.contains("locked by another process"), "{stderr}");
    assert!(!stderr.contains("recording disabled"), "{stderr}");
    let connection = sb.count("SELECT max(id) FROM connections WHERE command != '[\"locker\"]'");
    assert_eq!(
        sb.count(&format!(
            "SELECT count(*) FROM messages WHERE connection_id = {connection} AND direction = 'c2a'"
        )),
        300
    );
    assert_eq!(
        sb.count(&format!(
            "SELECT complete FROM connections WHERE id = {connection}"
        )),
        1
    );
}

/// Another process that opens the database while acptap records, and closes it, is not the last
/// connection: the write-ahead log stays, and every line is recorded. POSIX locks belong to the
/// process, and closing any descriptor of the file drops all of them: acptap used to open and
/// close one of its own when the checkpointer's connection opened beside the recorder's, and
/// then a reader's close (the `sqlite3` shell, or Python's, as here) deleted the log under the
/// recorder, whose next commits were lost (an outsider found recordings that stopped short).
#[test]
fn a_reader_closing_the_database_while_acptap_records_deletes_nothing() {
    let sb = Sandbox::new();
    let agent = sb.path("agent.sh");
    std::fs::write(
        &agent,
        "#!/bin/sh\ni=0\nwhile [ $i -lt 40 ]; do\n  echo \"{\\\"jsonrpc\\\":\\\"2.0\\\",\\\"method\\\":\\\"_x\\\",\\\"params\\\":{\\\"i\\\":$i}}\"\n  i=$((i+1)); sleep 0.05\ndone\n",
    )
    .unwrap();
    std::fs::set_permissions(&agent, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let child = sb.proxy(&[], &[agent.as_os_str()]);
    let db = sb.db();
    let wal = std::path::PathBuf::from(format!("{}-wal", db.display()));
    assert!(eventually(Duration::from_secs(10), || {
        sb.conn()
            .query_row("SELECT count(*) FROM messages", [], |r| r.get::<_, i64>(0))
            .is_ok_and(|n| n >= 5)
    }));
    // A read-write connection of another process, as the sqlite3 shell opens, closed at once.
    let reader = std::process::Command::new(crate::tools::python())
        .arg("-c")
        .arg("import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('SELECT count(*) FROM messages').fetchall(); c.close()")
        .arg(&db)
        .status()
        .unwrap();
    assert!(reader.success());
    assert!(wal.exists(), "the log was deleted while acptap recorded");
    let output = finish(child, Duration::from_secs(20));
    assert!(output.status.success());
    assert_eq!(sb.count("SELECT count(*) FROM messages"), 40);
    assert_eq!(
        sb.count("SELECT count(*) FROM connections WHERE ended_at IS NOT NULL AND complete = 1"),
        1
    );
}
