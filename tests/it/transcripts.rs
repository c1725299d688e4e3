//! `acptap import` and `acptap export`: transcripts in the format of shared/samples load into the
//! database through the same pipeline as live recording, and come back out unchanged.

use crate::util::{SAMPLES, Sandbox, fixture};

fn tool_state(sb: &Sandbox) -> Vec<(String, String, String, String)> {
    let conn = sb.conn();
    let mut stmt = conn
        .prepare(
            "SELECT tool_call_id, kind, status, created_by FROM tool_calls ORDER BY tool_call_id",
        )
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn every_sample_imports_like_a_live_recording_and_exports_unchanged() {
    for sample in SAMPLES {
        let sb = Sandbox::new();
        let path = fixture(sample);
        let out = sb.acptap(&["import", path.to_str().unwrap()]);
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("imported"),
            "{sample}"
        );
        let original: Vec<serde_json::Value> = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(
            sb.count("SELECT count(*) FROM messages"),
            original.len() as i64,
            "{sample}"
        );
        assert!(sb.count("SELECT count(*) FROM sessions") >= 1, "{sample}");
        assert_eq!(
            sb.count("SELECT count(*) FROM prompt_turns WHERE stop_reason IS NOT NULL"),
            1,
            "{sample}"
        );

        let exported = sb.acptap(&["export", "last", "--format", "jsonl"]).stdout;
        let exported: Vec<serde_json::Value> = String::from_utf8(exported)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(exported.len(), original.len(), "{sample}");
        for (a, b) in original.iter().zip(&exported) {
            assert_eq!(
                (&a["dir"], &a["eol"], &a["text"]),
                (&b["dir"], &b["eol"], &b["text"]),
                "{sample}"
            );
            let dt = (a["t"].as_f64().unwrap() - b["t"].as_f64().unwrap()).abs();
            assert!(dt < 1e-5, "{sample}: times differ by {dt}");
        }
    }
}

#[test]
fn an_imported_sample_materialises_the_same_as_one_recorded_live() {
    // The live recording of this sample is checked in samples.rs; the import must agree with it.
    let sb = Sandbox::new();
    sb.acptap(&["import", fixture(SAMPLES[2]).to_str().unwrap()]);
    let state = tool_state(&sb);
    assert!(state.contains(&(
        "call_s2_0_aJqSMNSr".into(),
        "execute".into(),
        "completed".into(),
        "request_permission".into()
    )));
    assert_eq!(
        sb.count("SELECT count(*) FROM permission_requests WHERE option_kind = 'allow_once' AND decided_by = 'client'"),
        2
    );
}

#[test]
fn bytes_that_are_not_utf8_survive_as_hex_and_bad_records_are_named() {
    let sb = Sandbox::new();
    let file = sb.path("odd.jsonl");
    std::fs::write(
        &file,
        "{\"t\":0,\"dir\":\"c2a\",\"eol\":true,\"hex\":\"fffe0d\"}\n{\"t\":0.5,\"dir\":\"a2c\",\"eol\":false,\"text\":\"tail\"}\n",
    )
    .unwrap();
    sb.acptap(&["import", file.to_str().unwrap()]);
    let raw: Vec<u8> = sb
        .conn()
        .query_row("SELECT raw FROM messages WHERE seq = 0", [], |r| r.get(0))
        .unwrap();
    assert_eq!(raw, b"\xff\xfe\r\n");
    // No session in it: export by connection is reached through a session, so check the rows.
    assert_eq!(
        sb.count("SELECT count(*) FROM messages WHERE kind = 'invalid'"),
        2
    );

    let bad = sb.path("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"dir\":\"c2a\",\"text\":\"{}\"}\n{\"dir\":\"sideways\",\"text\":\"x\"}\n",
    )
    .unwrap();
    let out = std::process::Command::new(crate::util::acptap_bin())
        .args(["import", bad.to_str().unwrap()])
        .env("ACPTAP_DB", sb.db())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("bad.jsonl") && stderr.contains("line 2") && stderr.contains("sideways"),
        "{stderr}"
    );
    assert_eq!(
        sb.count("SELECT count(*) FROM connections"),
        1,
        "nothing of the bad file was loaded"
    );
}

/// Every record is checked before anything is loaded: the error names the line and what is
/// wrong, and the database is left as it was.
#[test]
fn bad_transcripts_are_refused_whole_with_the_line_named() {
    let sb = Sandbox::new();
    let ok = r#"{"seq":0,"t":0,"dir":"c2a","text":"{}"}"#;
    let cases = [
        (r#"{"t":0,"dir":"c2a","hex":"aéa0"}"#, "hex"),
        (r#"{"t":1e300,"dir":"c2a","text":"x"}"#, "`t`"),
        (r#"{"t":-1,"dir":"c2a","text":"x"}"#, "`t`"),
        (r#"{"seq":0,"t":0.5,"dir":"a2c","text":"x"}"#, "`seq` 0"),
        (r#"{"t":0,"dir":"a2c","text":"two\nlines"}"#, "line break"),
        (
            r#"{"t":0,"dir":"c2a","text":"x","start":"yesterday"}"#,
            "yesterday",
        ),
    ];
    for (record, named) in cases {
        let file = sb.path("bad.jsonl");
        std::fs::write(&file, format!("{ok}\n{record}\n")).unwrap();
        let out = std::process::Command::new(crate::util::acptap_bin())
            .args(["import", file.to_str().unwrap()])
            .env("ACPTAP_DB", sb.db())
            .env("XDG_CONFIG_HOME", sb.dir.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{record}: {stderr}");
        assert!(
            stderr.contains("line 2") && stderr.contains(named),
            "{record}: {stderr}"
        );
    }
    // An empty file.
    let file = sb.path("empty.jsonl");
    std::fs::write(&file, "\n\n").unwrap();
    let out = std::process::Command::new(crate::util::acptap_bin())
        .args(["import", file.to_str().unwrap()])
        .env("ACPTAP_DB", sb.db())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no record"));
    assert!(!sb.db().exists() || sb.count("SELECT count(*) FROM connections") == 0);
}

/// An exported recording carries its start, and an import keeps it (or takes `--start`), so the
/// imported sessions keep their recorded times and `last` keeps meaning the latest recording.
#[test]
fn import_keeps_the_recorded_start() {
    let first = Sandbox::new();
    first.acptap(&[
        "import",
        "--start",
        "2025-01-02T03:04:05Z",
        fixture(SAMPLES[0]).to_str().unwrap(),
    ]);
    let started = first.count("SELECT started_at FROM connections WHERE id = 1");
    assert_eq!(started, 1_735_787_045_000_000);
    let exported = first.acptap(&["export", "last"]).stdout;
    let file = first.path("again.jsonl");
    std::fs::write(&file, &exported).unwrap();
    let head: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&exported).lines().next().unwrap()).unwrap();
    assert_eq!(head["start"], "2025-01-02T03:04:05.000000Z");
    let second = Sandbox::new();
    second.acptap(&["import", file.to_str().unwrap()]);
    assert_eq!(
        second.count("SELECT started_at FROM connections WHERE id = 1"),
        started
    );
    assert_eq!(
        second.count("SELECT min(ts) FROM messages"),
        first.count("SELECT min(ts) FROM messages")
    );
}
