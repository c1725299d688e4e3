//! Every parser a user or an agent feeds, fed junk and near-misses: no panic, no hang. 100,000
//! cases each (`ACPTAP_FUZZ_CASES` changes it), built from fragments of the real grammar so the
//! cases get past the first character.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

fn cases() -> u32 {
    std::env::var("ACPTAP_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000)
}

/// A string made of pieces of a grammar, glued at random.
fn glued(pieces: &'static [&'static str], max: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            4 => proptest::sample::select(pieces).prop_map(str::to_owned),
            1 => any::<char>().prop_map(String::from),
        ],
        0..max,
    )
    .prop_map(|parts| parts.concat())
}

fn run<T: std::fmt::Debug>(strategy: impl Strategy<Value = T>, test: impl Fn(T)) {
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&strategy, |value| {
            test(value);
            Ok(())
        })
        .unwrap();
}

const SHELL: &[&str] = &[
    " ",
    "ls",
    "git",
    "log",
    "--output=",
    "-c",
    "rm",
    "-rf",
    "~",
    "/",
    "..",
    "*",
    "?",
    "[",
    "]",
    "{",
    "}",
    ",",
    "$",
    "$(",
    ")",
    "`",
    "'",
    "\"",
    "\\",
    "\n",
    ";",
    "&&",
    "||",
    "|",
    "&",
    ">",
    ">>",
    "<",
    "<<",
    "EOF",
    "#",
    "=",
    "X=1 ",
    "cd ",
    "bash -c ",
    "sudo ",
    "if ",
    "then ",
    "fi",
    "for ",
    "do ",
    "done",
    "case ",
    "esac",
    "((",
    "))",
    "[[",
    "]]",
    "!",
    "${",
    ":-",
    "%",
    "\t",
    "$'\\x41'",
    "<(",
    ">(",
    "2>&1",
    "find . -exec ",
    "\\;",
    "sed -n 1p",
    "-",
    "--",
];

const TOML: &[&str] = &[
    "version = 1\n",
    "default = \"ask\"\n",
    "[[rule]]\n",
    "id = \"r\"\n",
    "decision = \"allow\"\n",
    "decision = \"deny\"\n",
    "kind = \"read\"\n",
    "kind = [\"read\", \"edit\"]\n",
    "paths = [\"${cwd}/**\"]\n",
    "paths = [\"[\"]\n",
    "command = [[\"git\", [\"log\"]]]\n",
    "command = [\"x\"]\n",
    "options = [\"-o\"]\n",
    "env = [\"A\"]\n",
    "input = { command = \"^x\" }\n",
    "title = \"(\"\n",
    "match = [{ kind = \"read\" }]\n",
    "not_match = [{}]\n",
    "[[test]]\n",
    "name = \"t\"\n",
    "request = {}\n",
    "expect = \"allow\"\n",
    "=",
    "[",
    "]",
    "{",
    "}",
    "\"",
    "\n",
    "#",
    "1e9",
    "true",
    "'",
    "'''",
    "\\u0000",
    "${home}",
    "**",
    "\\",
];

const JSON: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"",
    "\\",
    "\\u",
    "\\ud83d",
    "0",
    "-1",
    "1e999",
    "NaN",
    "null",
    "true",
    "\"jsonrpc\":\"2.0\"",
    "\"id\":1",
    "\"method\":\"session/update\"",
    "\"method\":\"session/request_permission\"",
    "\"params\":",
    "\"sessionId\":\"s\"",
    "\"toolCallId\":\"t\"",
    "\"toolCall\":",
    "\"update\":",
    "\"sessionUpdate\":\"tool_call\"",
    "\"kind\":\"execute\"",
    "\"rawInput\":",
    "\"command\":\"ls ..\"",
    "\"locations\":",
    "\"path\":\"/etc\"",
    "\"content\":",
    "\"type\":\"diff\"",
    "\n",
    " ",
    "\u{ff}",
];

#[test]
fn shell_analysis_never_panics() {
    run(glued(SHELL, 40), |script| {
        let _ = crate::policy::shell::analyse(&script);
        let _ = crate::policy::commands::analyse(
            &script.split(' ').map(str::to_owned).collect::<Vec<_>>(),
        );
    });
}

#[test]
fn policy_files_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.toml");
    run(glued(TOML, 30), |text| {
        let _ = crate::policy::rules::PolicySet::parse_text(&path, &text);
    });
}

#[test]
fn lines_and_requests_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.toml");
    std::fs::write(
        &path,
        "version = 1\n[[rule]]\nid = \"r\"\ndecision = \"allow\"\nkind = \"execute\"\ncommand = [[\"ls\"], [\"git\", \"log\"]]\n",
    )
    .unwrap();
    let policy = crate::policy::Policy::load_with_home(&[path], dir.path()).unwrap();
    run(glued(JSON, 40), |line| {
        let message = crate::protocol::parse_line(line.as_bytes());
        let mut observer = crate::protocol::SessionState::new();
        let _ = observer.observe(crate::protocol::Direction::AgentToClient, 0, &message);
        if let Some(params) = message.params() {
            let _ = policy.decide(
                params,
                None,
                crate::policy::Context {
                    cwd: Some(dir.path()),
                    agent: None,
                    ..Default::default()
                },
            );
        }
    });
}

#[test]
fn transcripts_never_panic() {
    const RECORD: &[&str] = &[
        "{",
        "}",
        "\"t\":",
        "\"seq\":",
        "\"dir\":\"c2a\"",
        "\"dir\":\"x\"",
        "\"text\":\"{}\"",
        "\"hex\":\"",
        "ff",
        "é",
        "\"",
        ",",
        "1e300",
        "-1",
        "0.5",
        "\n",
        "\"eol\":false",
        "\"start\":\"2026-01-01T00:00:00Z\"",
        "\"start\":\"",
        "null",
    ];
    run(glued(RECORD, 30), |text| {
        let _ = crate::record::transcript::parse(&text);
    });
}

#[test]
fn framing_keeps_every_byte() {
    run(
        (
            proptest::collection::vec(any::<u8>(), 0..600),
            proptest::collection::vec(1usize..64, 1..20),
        ),
        |(bytes, cuts)| {
            let mut framer = crate::proxy::framing::LineFramer::new(256);
            let mut out = Vec::new();
            let mut rest = &bytes[..];
            let mut i = 0;
            while !rest.is_empty() {
                let n = cuts[i % cuts.len()].min(rest.len());
                framer.push(&rest[..n]);
                rest = &rest[n..];
                i += 1;
                while let Some(piece) = framer.next_piece() {
                    out.extend_from_slice(piece.bytes());
                }
            }
            if let Some(piece) = framer.finish() {
                out.extend_from_slice(piece.bytes());
            }
            assert_eq!(out, bytes);
        },
    );
}

#[test]
fn command_line_values_never_panic() {
    const ARGS: &[&str] = &[
        "stats",
        "--since",
        "prune",
        "--older-than",
        "--dry-run",
        "tail",
        "--interval",
        "replay",
        "last",
        "--as",
        "agent",
        "client",
        "--speed",
        "run",
        "--grace",
        "--",
        "true",
        "import",
        "--start",
        "report",
        "-o",
        "show",
        "--json",
        "30",
        "30d",
        "0s",
        "1ms",
        "300000000000000d",
        "1e-300",
        "nan",
        "inf",
        "-1",
        "0",
        "1.5.3h",
        "",
        "2026-01-01T00:00:00Z",
        "9999999999999",
        "policy",
        "check",
        "--policy",
        "--request",
        "--cwd",
        "migrate",
        "vacuum",
        "sessions",
    ];
    run(
        proptest::collection::vec(proptest::sample::select(ARGS), 0..8),
        |args| {
            use clap::Parser;
            let _ = crate::cli::Cli::try_parse_from(std::iter::once("acptap").chain(args));
        },
    );
}
