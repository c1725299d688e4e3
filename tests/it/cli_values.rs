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
        (vec!["stats", "--since", "1.5.3h"], "1.5.3h"),
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
