//! Real agents' recordings (tests/fixtures/, from ../shared/testbed) seen from another directory:
//! the one relocation of the recorded cwd (`protocol::relocate`) that `acptap diff`, replay as
//! client and replay as agent share. scripts/real-peers.sh checks the same with the live agents.

use std::process::Command;

use crate::util::{Sandbox, acptap_bin};

/// Codex names the files it edits as object keys (`rawInput.changes["/abs/project/hello.py"]`):
/// the same session recorded in another directory is no difference for `acptap diff`, and a
/// changed key still is.
#[test]
fn codex_recorded_in_another_directory_is_the_same_session() {
    let sb = Sandbox::new();
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/codex-acpx-basic-approve-all.jsonl");
    let recorded = std::fs::read_to_string(&fixture).unwrap();
    assert!(
        recorded.contains(r#"\"changes\":{\"/home/user/project/hello.py\""#),
        "the fixture: Codex's edit keyed by its path"
    );
    let elsewhere = recorded.replace("/home/user/project", "/srv/work/project-2");
    let changed = elsewhere.replace(
        r#"\"changes\":{\"/srv/work/project-2/hello.py\""#,
        r#"\"changes\":{\"/srv/work/project-2/other.py\""#,
    );
    assert_ne!(changed, elsewhere);
    let write = |name: &str, text: &str| {
        let path = sb.path(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let (a, b, c) = (
        write("a.jsonl", &recorded),
        write("b.jsonl", &elsewhere),
        write("c.jsonl", &changed),
    );
    let diff = |x: &std::path::Path, y: &std::path::Path| {
        Command::new(acptap_bin())
            .arg("diff")
            .arg(x)
            .arg(y)
            .env("ACPTAP_DB", sb.db())
            .output()
            .unwrap()
    };
    let same = diff(&a, &b);
    assert_eq!(
        same.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&same.stdout),
        String::from_utf8_lossy(&same.stderr)
    );
    let other = diff(&a, &c);
    let report = String::from_utf8_lossy(&other.stdout);
    assert_eq!(other.status.code(), Some(1), "{report}");
    assert!(report.contains("other.py"), "{report}");
}
