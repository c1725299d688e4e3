//! Hostile values on the command line: every one gets a one-line error naming it and exit status
//! 2; none panics (101), spins, or deletes what it should not.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::util::{SAMPLES, Sandbox, acptap_bin, finish, fixture};

fn run(sb: &Sandbox, args: &[&str]) -> (Option<i32>, String) {
    let child = Command::new(acptap_bin())
        .args(args)
        .env("ACPTAP_DB", sb.db())
        .env("XDG_CONFIG_HOME", sb.dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = finish(child, Duration::from_secs(20));
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn hostile_values_are_refused_with_a_clear_error() {
    let sb = Sandbox::new();
    sb.acptap(&["import", fixture(SAMPLES[0]).to_str().unwrap()]);
    let huge = "300000000000000d";
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["stats", "--since", huge], huge),
        (vec!["prune", "--older-than", huge], huge),
        (vec!["prune", "--older-than", "115740740d"], "115740740d"),
        (vec!["prune", "--older-than", "30"], "needs a unit"),
        (vec!["tail", "--interval", huge], huge),
        (vec!["tail", "--interval", "0s"], "at least 10ms"),
        (vec!["tail", "--interval", "1ms"], "at least 10ms"),
        (vec!["run", "--grace", huge, "--", "true"], huge),
        (vec!["run", "--grace=-5s", "--", "true"], "-5s"),
        (
            vec!["replay", "last", "--as", "agent", "--speed=1e-300"],
            "1e-300",
        ),
        (
            vec!["replay", "last", "--as", "agent", "--speed", "0"],
            "`0`",
        ),
        (vec!["replay", "last", "--as", "agent", "--speed=-1"], "-1"),
        (
            vec!["replay", "last", "--as", "agent", "--speed", "nan"],
            "nan",
        ),
        (
            vec!["replay", "last", "--as", "agent", "--speed", "inf"],
            "inf",
        ),
        (vec!["report", "last", "--turns", "0-10"], "0-10"),
        (vec!["report", "last", "--turns", "20-10"], "20-10"),
        (vec!["report", "last", "--turns", "ten"], "ten"),
        (vec!["report", "last", "--turns", "500-"], "500"),
        (
            vec!["export", "last", "--format", "otlp", "--header", "novalue"],
            "the 1st --header is refused: it has no `=`",
        ),
        (
            vec!["export", "last", "--format", "otlp", "--header", "a b=c"],
            "the 1st --header is refused: a header's name",
        ),
        (
            vec!["report", "last", "--turns", "1-99999999999999999999999"],
            "99999999999999999999999",
        ),
        (vec!["stats", "--since", "1.5.3h"], "1.5.3h"),
        (
            vec!["run", "--otlp", "localhost:4318", "--", "true"],
            "`localhost:4318` is not an OTLP/HTTP endpoint",
        ),
        (
            vec![
                "run",
                "--otlp",
                "http://h:4318",
                "--no-record",
                "--",
                "true",
            ],
            "--no-record",
        ),
        (
            vec!["run", "--otlp", "--otlp-header", "novalue", "--", "true"],
            "the 1st --otlp-header is refused",
        ),
        (
            vec!["run", "--otlp", "http://h", "--no-otlp", "--", "true"],
            "--no-otlp",
        ),
        (
            vec![
                "export",
                "last",
                "--format",
                "otlp",
                "--endpoint",
                "grpc://h:4317",
            ],
            "grpc://h:4317",
        ),
        (vec!["stats", "--since", ""], "duration"),
    ];
    for (args, named) in &cases {
        let (code, stderr) = run(&sb, args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(named),
            "{args:?} does not name `{named}`: {stderr}"
        );
    }
    // Nothing was deleted by any of them.
    assert_eq!(sb.count("SELECT count(*) FROM connections"), 1);
}

/// A glob from the command line or a policy file: bounded in length and compiled without a panic
/// (131,000 `*` made `acptap search` exit 101); the error shows a cut prefix, the limit, the fix.
#[test]
fn a_glob_too_long_or_too_complex_is_one_short_error() {
    let sb = Sandbox::new();
    sb.acptap(&["import", fixture(SAMPLES[0]).to_str().unwrap()]);
    let long = "*".repeat(131_000);
    let nested = format!("{}{}", "{a,".repeat(1000), "}".repeat(1000));
    let policy = sb.path("policy.toml");
    std::fs::write(
        &policy,
        format!("version = 1\n[[rule]]\nid = \"r\"\ndecision = \"deny\"\nkind = \"edit\"\npaths = [\"/p/{long}\"]\n"),
    )
    .unwrap();
    let request = sb.path("request.json");
    std::fs::write(
        &request,
        r#"{"sessionId": "s", "toolCall": {"toolCallId": "t", "kind": "edit", "locations": [{"path": "/p/a"}]}, "options": [{"optionId": "a", "name": "Allow", "kind": "allow_once"}]}"#,
    )
    .unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["search", "--path", &long], "at most 4096"),
        (vec!["search", "--path", &nested], "too complex"),
        (vec!["search", "--path", "[unclosed"], "not a glob"),
        (
            vec![
                "policy",
                "check",
                "--policy",
                policy.to_str().unwrap(),
                "--request",
                request.to_str().unwrap(),
            ],
            "at most 4096",
        ),
    ];
    for (args, needle) in &cases {
        let (code, stderr) = run(&sb, args);
        let shown = &stderr[..stderr.len().min(500)];
        assert_eq!(code, Some(2), "{shown}");
        assert!(stderr.contains(needle), "{shown}");
        assert_eq!(stderr.lines().count(), 1, "{shown}");
        assert!(stderr.len() < 300, "the error echoes its input: {shown}");
    }
    // A word of an agent's command that bash would expand, too deeply nested for a regex: the
    // policy takes it as written and decides (globset panicked in the middle of the decision).
    let nested_word = format!("/p/x*{}{}", "{a,".repeat(300), "}".repeat(300));
    std::fs::write(
        &request,
        serde_json::json!({"sessionId": "s", "toolCall": {"toolCallId": "t", "kind": "execute", "rawInput": {"command": ["cat", nested_word]}}, "options": [{"optionId": "a", "name": "Allow", "kind": "allow_once"}]}).to_string(),
    )
    .unwrap();
    let allow = sb.path("allow.toml");
    std::fs::write(
        &allow,
        "version = 1\n[[rule]]\nid = \"cat\"\ndecision = \"allow\"\nkind = \"execute\"\ncommand = [\"cat\"]\n",
    )
    .unwrap();
    let (code, stderr) = run(
        &sb,
        &[
            "policy",
            "check",
            "--policy",
            allow.to_str().unwrap(),
            "--request",
            request.to_str().unwrap(),
            "--cwd",
            "/p",
        ],
    );
    assert_eq!(code, Some(0), "{}", &stderr[..stderr.len().min(500)]);
}

#[test]
fn prune_lists_with_dry_run_asks_for_yes_and_never_deletes_a_recent_one() {
    let sb = Sandbox::new();
    sb.acptap(&["import", fixture(SAMPLES[0]).to_str().unwrap()]);
    let (code, stderr) = run(&sb, &["prune", "--older-than", "0s"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("--yes"), "{stderr}");
    let listed = sb.acptap(&["prune", "--older-than", "0s", "--dry-run"]);
    assert!(String::from_utf8_lossy(&listed.stdout).contains("connection 1 started"));
    assert_eq!(sb.count("SELECT count(*) FROM connections"), 1);
    sb.acptap(&["prune", "--older-than", "1d", "--yes"]);
    assert_eq!(
        sb.count("SELECT count(*) FROM connections"),
        1,
        "a connection of today"
    );
    sb.acptap(&["prune", "--older-than", "0s", "--yes"]);
    assert_eq!(sb.count("SELECT count(*) FROM connections"), 0);
}

/// An empty or relative `HOME`, a relative `XDG_DATA_HOME`: never a database in the current
/// directory by accident; files acptap writes are its owner's only; `NO_COLOR` is honoured;
/// `show` says no exit status for an import.
#[test]
fn homes_file_modes_colours_and_import_exit_status() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let cwd = sb.path("cwd");
    std::fs::create_dir(&cwd).unwrap();
    for (home, xdg) in [("", None), ("relative/home", Some("relative/data"))] {
        let mut command = Command::new(acptap_bin());
        command
            .args(["import", fixture(SAMPLES[0]).to_str().unwrap()])
            .current_dir(&cwd)
            .env_remove("ACPTAP_DB")
            .env_remove("XDG_DATA_HOME")
            .env("XDG_CONFIG_HOME", sb.dir.path())
            .env("HOME", home);
        if let Some(xdg) = xdg {
            command.env("XDG_DATA_HOME", xdg);
        }
        let out = command.output().unwrap();
        assert_eq!(out.status.code(), Some(2), "HOME={home:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("cannot find a place for the database"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            std::fs::read_dir(&cwd).unwrap().count(),
            0,
            "something was written in the cwd"
        );
    }

    sb.acptap(&["import", fixture(SAMPLES[0]).to_str().unwrap()]);
    let report = sb.path("r.html");
    let transcript = sb.path("t.jsonl");
    sb.acptap(&["report", "last", "-o", report.to_str().unwrap()]);
    sb.acptap(&["export", "last", "-o", transcript.to_str().unwrap()]);
    for file in [&report, &transcript] {
        let mode = std::fs::metadata(file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", file.display());
    }

    let shown = String::from_utf8(sb.acptap(&["show", "last"]).stdout).unwrap();
    assert!(!shown.contains("exit -1"), "{shown}");
    assert!(shown.contains("ended"), "{shown}");

    // tail on a terminal (util-linux `script` gives it one): colour by default, none with
    // NO_COLOR. Three seconds of tail: the import must land inside them on a loaded machine too.
    let tail_on_a_terminal = |no_color: bool| -> String {
        let mut command = Command::new("script");
        command
            .args(["-qefc"])
            .arg(format!(
                "timeout 3 {} tail --interval 20ms",
                acptap_bin().display()
            ))
            .arg("/dev/null")
            .env("ACPTAP_DB", sb.db())
            .env("XDG_CONFIG_HOME", sb.dir.path())
            .env_remove("NO_COLOR")
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if no_color {
            command.env("NO_COLOR", "1");
        }
        let tail = command.spawn().expect("script (util-linux)");
        std::thread::sleep(Duration::from_millis(300));
        sb.acptap(&["import", fixture(SAMPLES[0]).to_str().unwrap()]);
        String::from_utf8_lossy(&tail.wait_with_output().unwrap().stdout).into_owned()
    };
    let coloured = tail_on_a_terminal(false);
    assert!(
        coloured.contains("tool started") && coloured.contains("\u{1b}["),
        "{coloured}"
    );
    let plain = tail_on_a_terminal(true);
    assert!(
        plain.contains("tool started") && !plain.contains("\u{1b}["),
        "{plain}"
    );
}

/// Every subcommand, given hostile values (a session spec with control characters, a database
/// path that is a directory or not a database, missing files, absurd numbers): an error or a
/// result, never a panic (exit 101).
#[test]
fn every_subcommand_survives_hostile_values() {
    let sb = Sandbox::new();
    sb.acptap(&["import", fixture(SAMPLES[0]).to_str().unwrap()]);
    let not_db = sb.path("not.db");
    std::fs::write(&not_db, b"not a database at all, not at all, no").unwrap();
    let dir = sb.dir.path().to_str().unwrap().to_owned();
    let weird = "\u{1b}]52;c;x\u{7}\u{202e}'\"$(x)";
    let missing = sb.path("missing.jsonl");
    let missing = missing.to_str().unwrap();
    let every: Vec<Vec<&str>> = vec![
        vec!["sessions", "--limit", "18446744073709551616"],
        vec!["sessions", "--limit", "-1"],
        vec!["show", weird],
        vec!["show", ""],
        vec![
            "tools",
            "--session",
            weird,
            "--status",
            weird,
            "--kind",
            weird,
        ],
        vec!["report", weird],
        vec!["report", "last", "-o", &dir],
        vec!["stats", weird],
        vec!["export", weird],
        vec!["export", "last", "--format", weird],
        vec!["export", "last", "-o", &dir],
        vec!["import", missing],
        vec!["import", &dir],
        vec!["replay", weird, "--as", "agent"],
        vec!["replay", "last", "--as", "client"],
        vec!["policy", "check", "--policy", missing, "--request", missing],
        vec!["policy", "test", missing],
        vec!["policy", "replay", "--policy", missing, "all"],
        vec!["migrate", "--db", &dir],
        vec!["vacuum", "--db", not_db.to_str().unwrap()],
        vec![
            "prune",
            "--older-than",
            "1d",
            "--yes",
            "--db",
            not_db.to_str().unwrap(),
        ],
        vec!["sessions", "--db", &dir],
        vec!["demo", "--db", &dir],
        vec!["run", "--", "/nonexistent/agent"],
        vec!["run", "--label", weird, "--db", &dir, "--", "true"],
        vec![weird],
    ];
    for args in &every {
        let (code, stderr) = run(&sb, args);
        assert_ne!(code, Some(101), "{args:?} panicked: {stderr}");
        assert!(code.is_some(), "{args:?} was killed: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

/// A request given to `policy check` is read only from a regular file of at most 64 MiB: a
/// device that never ends (`/dev/zero`) or a pipe nobody writes is refused at once, one line
/// each, instead of filling memory or waiting forever. A `--limit` of 0 is refused too,
/// and an empty session id is not a prefix of every session.
#[test]
fn endless_or_empty_inputs_are_refused_at_once() {
    let sb = Sandbox::new();
    sb.acptap(&["import", fixture(SAMPLES[0]).to_str().unwrap()]);
    let policy = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/policies/project.toml");
    let fifo = sb.path("request.fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    for request in ["/dev/zero", fifo.to_str().unwrap()] {
        let (code, said) = run(
            &sb,
            &["policy", "check", "--policy", policy, "--request", request],
        );
        assert_eq!(code, Some(2), "{request}: {said}");
        assert!(said.contains("a regular file is needed"), "{said}");
        assert_eq!(said.trim_end().lines().count(), 1, "{said}");
    }
    let (code, said) = run(&sb, &["sessions", "--limit", "0"]);
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("at least 1"), "{said}");
    let (code, said) = run(&sb, &["show", ""]);
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("no session named"), "{said}");
}
