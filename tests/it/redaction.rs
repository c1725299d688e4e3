//! Redaction: a secret never reaches the database file, while the agent still receives it.

use std::ffi::OsStr;
use std::time::Duration;

use serde_json::json;

use crate::util::{Record, Sandbox, example_bin, finish, play_client};

const SECRET: &str = "s3cr3t-Value-that-is-not-a-token-shape";
const TOKEN: &str = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";

fn db_bytes(sb: &Sandbox) -> Vec<u8> {
    let mut all = Vec::new();
    for suffix in ["", "-wal", "-shm"] {
        let path = format!("{}{suffix}", sb.db().display());
        if let Ok(bytes) = std::fs::read(path) {
            all.extend(bytes);
        }
    }
    all
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    memchr::memmem::find(haystack, needle.as_bytes()).is_some()
}

fn session(sb: &Sandbox, extra: &[&str]) {
    let new_session = json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/p", "mcpServers": [
        {"name": "db", "command": "db-mcp", "args": [], "env": [{"name": "DB_PASSWORD", "value": SECRET}]},
        {"type": "http", "name": "api", "url": "https://api.example", "headers": [{"name": "Authorization", "value": format!("token {TOKEN}")}]},
    ]}});
    let records: Vec<Record> = [
        ("c2a", new_session),
        ("a2c", json!({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s"}})),
        ("a2c", json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": format!("I found {TOKEN} in your env")}}}})),
    ]
    .into_iter()
    .map(|(dir, message)| {
        let mut bytes = serde_json::to_vec(&message).unwrap();
        bytes.push(b'\n');
        Record { dir: dir.into(), bytes }
    })
    .collect();
    let transcript = sb.path("t.jsonl");
    let lines: Vec<String> = records
        .iter()
        .map(|r| json!({"dir": r.dir, "eol": true, "text": String::from_utf8_lossy(&r.bytes[..r.bytes.len() - 1])}).to_string())
        .collect();
    std::fs::write(&transcript, lines.join("\n")).unwrap();
    let peer = example_bin("peer");
    // The peer checks that every byte of the client's lines arrives: the agent gets the secrets.
    let mut child = sb.proxy(
        extra,
        &[
            peer.as_os_str(),
            OsStr::new("script"),
            transcript.as_os_str(),
        ],
    );
    play_client(&mut child, &records);
    let output = finish(child, Duration::from_secs(30));
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn secrets_in_mcp_servers_never_reach_the_database_but_reach_the_agent() {
    let sb = Sandbox::new();
    session(&sb, &["--redact", "api\\.example"]);
    let bytes = db_bytes(&sb);
    assert!(
        !contains(&bytes, SECRET),
        "the env secret is in the database file"
    );
    assert!(
        !contains(&bytes, TOKEN),
        "the token is in the database file"
    );
    assert!(
        !contains(&bytes, "api.example"),
        "the user's pattern was not applied"
    );
    assert!(
        contains(&bytes, "DB_PASSWORD"),
        "only values are redacted, not names"
    );
    assert_eq!(
        sb.count("SELECT count(*) FROM sessions WHERE session_id = 's' AND cwd = '/p'"),
        1,
        "the line still parses"
    );
}

#[test]
fn no_default_redact_records_the_secrets() {
    let sb = Sandbox::new();
    session(&sb, &["--no-default-redact"]);
    let bytes = db_bytes(&sb);
    assert!(contains(&bytes, SECRET) && contains(&bytes, TOKEN));
}

#[test]
fn config_file_redact_section_and_strict_errors() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path("acptap")).unwrap();
    std::fs::write(
        sb.path("acptap/config.toml"),
        "[redact]\npatterns = [\"DB_PASSWORD\"]\n",
    )
    .unwrap();
    session(&sb, &[]);
    let bytes = db_bytes(&sb);
    assert!(!contains(&bytes, "DB_PASSWORD") && !contains(&bytes, SECRET));

    std::fs::write(
        sb.path("acptap/config.toml"),
        "db = \"x.db\"\ncolour = \"never\"\n",
    )
    .unwrap();
    let out = std::process::Command::new(crate::util::acptap_bin())
        .args(["sessions"])
        .env("XDG_CONFIG_HOME", sb.dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("config.toml:2") && stderr.contains("colour"),
        "{stderr}"
    );
}

/// `import` takes the same ingest path as live recording: a transcript's secrets are redacted
/// the same way (it used to store them verbatim), and `--no-default-redact` keeps them.
#[test]
fn import_redacts_like_live_recording() {
    let sb = Sandbox::new();
    let transcript = sb.path("secret.jsonl");
    let new_session = json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/p", "mcpServers": [
        {"name": "db", "command": "db-mcp", "args": [], "env": [{"name": "DB_PASSWORD", "value": SECRET}]},
    ]}});
    let chunk = json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": format!("I found {TOKEN}")}}}});
    let lines = [
        json!({"dir": "c2a", "text": new_session.to_string()}).to_string(),
        json!({"dir": "a2c", "text": json!({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s"}}).to_string()}).to_string(),
        json!({"dir": "a2c", "text": chunk.to_string()}).to_string(),
    ];
    std::fs::write(&transcript, lines.join("\n")).unwrap();
    sb.acptap(&["import", transcript.to_str().unwrap()]);
    let stored = db_bytes(&sb);
    assert!(!contains(&stored, SECRET) && !contains(&stored, TOKEN));
    assert!(contains(&stored, "[REDACTED:"));

    let kept = Sandbox::new();
    kept.acptap(&[
        "import",
        "--no-default-redact",
        transcript.to_str().unwrap(),
    ]);
    assert!(contains(&db_bytes(&kept), TOKEN));
}

/// The config file's `db` is where recordings go and where the views look, unless `--db` or
/// `$ACPTAP_DB` says otherwise (it used to be parsed and ignored).
#[test]
fn config_file_db_is_used_after_the_flag_and_the_environment() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path("acptap")).unwrap();
    let configured = sb.path("configured.db");
    std::fs::write(
        sb.path("acptap/config.toml"),
        format!("db = {:?}\n", configured.to_str().unwrap()),
    )
    .unwrap();
    let acptap = |args: &[&str], env_db: Option<&std::path::Path>| {
        let mut command = std::process::Command::new(crate::util::acptap_bin());
        command
            .args(args)
            .env_remove("ACPTAP_DB")
            .env("XDG_CONFIG_HOME", sb.dir.path());
        if let Some(db) = env_db {
            command.env("ACPTAP_DB", db);
        }
        let out = command.output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    };
    let sample = crate::util::fixture(crate::util::SAMPLES[0]);
    acptap(&["import", sample.to_str().unwrap()], None);
    assert!(configured.exists(), "the config file's db was not used");
    let listed = acptap(&["sessions"], None);
    assert!(String::from_utf8_lossy(&listed.stdout).contains("claude"));
    let from_env = sb.path("env.db");
    acptap(&["import", sample.to_str().unwrap()], Some(&from_env));
    assert!(from_env.exists());
    let flag = sb.path("flag.db");
    acptap(
        &[
            "import",
            "--db",
            flag.to_str().unwrap(),
            sample.to_str().unwrap(),
        ],
        Some(&from_env),
    );
    assert!(flag.exists());
}

/// A corpus line's `\n` and `\t` (written so to keep one entry a line) as the characters they
/// stand for: JSON then writes them as the escapes an agent's text really has.
fn unescape(text: &str) -> String {
    text.replace("\\n", "\n").replace("\\t", "\t")
}

/// The lines of a redaction corpus, each as an agent's message chunk of session `s`.
fn corpus_transcript(sb: &Sandbox, name: &str, texts: &[String]) -> std::path::PathBuf {
    let mut lines = vec![
        json!({"dir": "c2a", "text": json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/p", "mcpServers": []}}).to_string()}).to_string(),
        json!({"dir": "a2c", "text": json!({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s"}}).to_string()}).to_string(),
    ];
    for text in texts {
        let chunk = json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}}});
        lines.push(json!({"dir": "a2c", "text": chunk.to_string()}).to_string());
    }
    let path = sb.path(name);
    std::fs::write(&path, lines.join("\n")).unwrap();
    path
}

/// The recorded texts of the corpus's chunks, in order.
fn recorded_texts(sb: &Sandbox) -> Vec<String> {
    let conn = rusqlite::Connection::open(sb.db()).unwrap();
    let mut statement = conn
        .prepare("SELECT raw FROM messages WHERE seq >= 2 ORDER BY seq")
        .unwrap();
    statement
        .query_map([], |r| r.get::<_, Vec<u8>>(0))
        .unwrap()
        .map(|raw| {
            let message: serde_json::Value =
                serde_json::from_slice(&raw.unwrap()).expect("a redacted line is still JSON");
            message["params"]["update"]["content"]["text"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// Precision: 330 ordinary strings that only look secret-ish (prose with "basic", "bearer",
/// "token", "secret", "password", "key"; git SHAs, UUIDs, base64 images, lock-file hashes,
/// minified code, long identifiers: tests/fixtures/redaction/precision.txt) are recorded
/// exactly as they were said.
#[test]
fn ordinary_text_that_looks_secret_ish_is_recorded_unchanged() {
    let corpus: Vec<String> =
        std::fs::read_to_string(crate::util::fixture("redaction/precision.txt"))
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
    assert!(corpus.len() >= 300);
    let sb = Sandbox::new();
    let transcript = corpus_transcript(&sb, "precision.jsonl", &corpus);
    sb.acptap(&["import", transcript.to_str().unwrap()]);
    let recorded = recorded_texts(&sb);
    let changed: Vec<String> = corpus
        .iter()
        .zip(&recorded)
        .filter(|(said, kept)| said != kept)
        .map(|(said, kept)| format!("{said}\n  => {kept}"))
        .collect();
    eprintln!(
        "precision: {} of {} unchanged",
        corpus.len() - changed.len(),
        corpus.len()
    );
    assert_eq!(recorded.len(), corpus.len());
    assert!(changed.is_empty(), "changed:\n{}", changed.join("\n"));
}

/// Recall: 70 secrets across the formats (tests/fixtures/redaction/recall.tsv: made up, each
/// with its format's structure, in the context it is met in), sent by an agent through
/// `acptap run`: none reaches the database file or its WAL, the agent's words around them are
/// kept, and each says which kind of secret was removed.
#[test]
fn secrets_of_every_format_never_reach_the_database_and_say_their_kind() {
    let corpus: Vec<(String, String, String)> =
        std::fs::read_to_string(crate::util::fixture("redaction/recall.tsv"))
            .unwrap()
            .lines()
            .map(|line| {
                let mut parts = line.split('\t').map(unescape);
                (
                    parts.next().unwrap(),
                    parts.next().unwrap(),
                    parts.next().unwrap(),
                )
            })
            .collect();
    assert!(corpus.len() >= 70);
    let sb = Sandbox::new();
    let texts: Vec<String> = corpus.iter().map(|(_, text, _)| text.clone()).collect();
    let transcript = corpus_transcript(&sb, "recall.jsonl", &texts);
    let peer = example_bin("peer");
    let mut child = sb.proxy(
        &[],
        &[
            peer.as_os_str(),
            OsStr::new("script"),
            transcript.as_os_str(),
        ],
    );
    let records = crate::util::load_transcript(&transcript);
    play_client(&mut child, &records);
    assert!(finish(child, Duration::from_secs(20)).status.success());
    let stored = db_bytes(&sb);
    let recorded = recorded_texts(&sb);
    assert_eq!(recorded.len(), corpus.len());
    let mut missed = Vec::new();
    // Every run of 16 or more characters of a secret: none may be stored anywhere.
    let pieces = regex::Regex::new(r"[A-Za-z0-9+/_\-]{16,}").unwrap();
    for ((rule, text, secret), kept) in corpus.iter().zip(&recorded) {
        let leaked = pieces
            .find_iter(secret)
            .any(|piece| contains(&stored, piece.as_str()));
        let marked = kept.contains(&format!("[REDACTED:{rule}]"));
        // What was around the secret is kept as it was said.
        let (before, after) = text.split_once(secret.as_str()).unwrap();
        let around = kept.starts_with(before) && kept.ends_with(after);
        if leaked || !marked || !around {
            missed.push(format!("{rule}: {text}\n  => {kept}"));
        }
    }
    eprintln!(
        "recall: {} of {} removed and named",
        corpus.len() - missed.len(),
        corpus.len()
    );
    assert!(missed.is_empty(), "missed:\n{}", missed.join("\n"));
}

/// `acptap redact --check` lists what redaction removes, with the rule: from a transcript file
/// (the recall corpus: each secret with its kind, exit 1; the precision corpus: nothing, exit 0)
/// and from a recording (what was redacted when recorded, and what would be now in one recorded
/// with `--no-default-redact`).
#[test]
fn redact_check_lists_each_secret_with_its_rule() {
    let sb = Sandbox::new();
    let lines: Vec<(String, String)> =
        std::fs::read_to_string(crate::util::fixture("redaction/recall.tsv"))
            .unwrap()
            .lines()
            .map(|l| {
                let mut parts = l.split('\t');
                (
                    parts.next().unwrap().to_owned(),
                    unescape(parts.next().unwrap()),
                )
            })
            .collect();
    let texts: Vec<String> = lines.iter().map(|(_, t)| t.clone()).collect();
    let transcript = corpus_transcript(&sb, "recall.jsonl", &texts);
    let out = sb.acptap_status(&["redact", "--check", "--json", transcript.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let found: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let rules: Vec<&str> = found.iter().map(|f| f["rule"].as_str().unwrap()).collect();
    let expected: Vec<&str> = lines.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(rules, expected);
    for f in &found {
        let preview = f["preview"].as_str().unwrap();
        assert!(
            preview.contains("bytes)") && preview.chars().count() < 20,
            "{preview}"
        );
    }

    let precision =
        std::fs::read_to_string(crate::util::fixture("redaction/precision.txt")).unwrap();
    let plain = sb.path("plain.txt");
    std::fs::write(&plain, precision).unwrap();
    let out = sb.acptap_status(&["redact", "--check", plain.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("330 line(s) checked: 0 would be redacted")
    );

    // A recording made without redaction: what would be removed now.
    sb.acptap(&[
        "import",
        "--no-default-redact",
        transcript.to_str().unwrap(),
    ]);
    let out = sb.acptap_status(&["redact", "--check", "--json", "last"]);
    assert_eq!(out.status.code(), Some(1));
    let found: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(found.len(), lines.len());
    // A recording made with it: what was removed, and nothing left.
    let redacted = Sandbox::new();
    redacted.acptap(&["import", transcript.to_str().unwrap()]);
    let out = redacted.acptap_status(&["redact", "--check", "--json", "last"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let found: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(found.len(), lines.len());
    assert!(found.iter().all(|f| f["already_redacted"] == true));
    let rules: Vec<&str> = found.iter().map(|f| f["rule"].as_str().unwrap()).collect();
    assert_eq!(rules, expected);
}
