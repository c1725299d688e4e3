//! ACP v2 permission requests judged by the policy (issue 26), through the built binary's
//! `policy check --request` with docs/policies/project.toml. Every request is built with the
//! official schema crate's v2 types (`agent_client_protocol::v2::schema`), as a v2 agent built on
//! the SDK sends it; only the mixed v1/v2 request, which no single type can express, adds the v1
//! `toolCall` (built with the v1 types) to the serialised v2 request.

use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema as v1;
use agent_client_protocol::v2::schema::{
    CommandPermissionSubject, Diff, DiffChange, OtherRequestPermissionSubject, PermissionOption,
    PermissionOptionKind, RequestPermissionRequest, RequestPermissionSubject, ToolCallContent,
    ToolCallLocation, ToolCallUpdate, ToolKind,
};
use serde_json::{Value, json};

use crate::util::Sandbox;

fn options() -> Vec<PermissionOption> {
    vec![
        PermissionOption::new("approved", "Allow", PermissionOptionKind::AllowOnce),
        PermissionOption::new("denied", "Reject", PermissionOptionKind::RejectOnce),
    ]
}

/// A v2 request as the whole JSON-RPC message.
fn message(request: RequestPermissionRequest) -> Value {
    json!({"jsonrpc": "2.0", "id": 4, "method": "session/request_permission",
           "params": serde_json::to_value(request).unwrap()})
}

fn command(cmd: &str, cwd: &Path) -> Value {
    message(
        RequestPermissionRequest::new("s1", format!("Run {cmd}"), options()).subject(
            RequestPermissionSubject::Command(CommandPermissionSubject::new(
                cmd,
                cwd.to_path_buf(),
            )),
        ),
    )
}

/// An edit of `file` as a `tool_call` subject: a v2 diff (its changes and patch) and a location.
fn edit(file: &Path) -> Value {
    let diff = Diff::patch(
        format!(
            "diff --git {0} {0}\n--- {0}\n+++ {0}\n@@ -1 +1 @@\n-a\n+b\n",
            file.display()
        ),
        vec![DiffChange::modify(file.to_path_buf())],
    );
    let call = ToolCallUpdate::new("call_edit")
        .title(format!("Edit {}", file.display()))
        .kind(ToolKind::Edit)
        .content(vec![ToolCallContent::Diff(diff)])
        .locations(vec![ToolCallLocation::new(file.to_path_buf())]);
    message(
        RequestPermissionRequest::new("s1", "Edit a file", options())
            .subject(RequestPermissionSubject::from(call)),
    )
}

struct Project {
    sb: Sandbox,
    root: PathBuf,
}

impl Project {
    fn new() -> Project {
        let sb = Sandbox::new();
        let root = sb.path("project");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/lib.rs"), "a\n").unwrap();
        let root = root.canonicalize().unwrap();
        Project { sb, root }
    }

    fn decide(&self, message: &Value) -> Value {
        let request = self.sb.path("request.json");
        std::fs::write(&request, serde_json::to_vec(message).unwrap()).unwrap();
        let policy = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/policies/project.toml");
        let out = self.sb.acptap(&[
            "policy",
            "check",
            "--policy",
            policy.to_str().unwrap(),
            "--request",
            request.to_str().unwrap(),
            "--cwd",
            self.root.to_str().unwrap(),
            "--json",
        ]);
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

#[test]
fn v2_subjects_in_the_project_are_allowed_like_their_v1_shapes() {
    let p = Project::new();
    let verdict = p.decide(&command("cargo test", &p.root));
    assert_eq!(verdict["decision"], "allow", "{verdict}");
    assert_eq!(verdict["rule"], "project-checks", "{verdict}");
    assert_eq!(verdict["optionId"], "approved", "{verdict}");
    let verdict = p.decide(&edit(&p.root.join("src/lib.rs")));
    assert_eq!(verdict["decision"], "allow", "{verdict}");
    assert_eq!(verdict["rule"], "project-edit", "{verdict}");
}

#[test]
fn v2_subjects_that_leave_the_project_or_destroy_are_not_allowed() {
    let p = Project::new();
    let cases = [
        ("rm -rf ~", command("rm -rf ~", &p.root)),
        (
            "cargo test in /tmp/attacker",
            command("cargo test", Path::new("/tmp/attacker")),
        ),
        ("edit /etc/passwd", edit(Path::new("/etc/passwd"))),
        (
            "an unknown subject type",
            message(
                RequestPermissionRequest::new("s1", "Something", options()).subject(
                    RequestPermissionSubject::Other(OtherRequestPermissionSubject::new(
                        "_custom",
                        [("command".to_owned(), json!("cargo test"))].into(),
                    )),
                ),
            ),
        ),
        (
            "no subject at all",
            message(RequestPermissionRequest::new(
                "s1",
                "Run cargo test",
                options(),
            )),
        ),
    ];
    for (name, request) in cases {
        let verdict = p.decide(&request);
        assert_ne!(verdict["decision"], "allow", "{name}: {verdict}");
    }
    // The guard denies `rm -rf ~` outright; the cwd outside is asked, as for an execute call.
    assert_eq!(p.decide(&command("rm -rf ~", &p.root))["decision"], "deny");
    let outside = p.decide(&command("cargo test", Path::new("/tmp/attacker")));
    assert_eq!(outside["decision"], "ask", "{outside}");
    let unknown = p.decide(&cases_unknown());
    assert!(
        unknown["reason"].as_str().unwrap().contains("`_custom`"),
        "{unknown}"
    );
}

fn cases_unknown() -> Value {
    message(
        RequestPermissionRequest::new("s1", "Something", options()).subject(
            RequestPermissionSubject::Other(OtherRequestPermissionSubject::new(
                "_custom",
                Default::default(),
            )),
        ),
    )
}

/// A patch that shows one file while the diff's changes name another is not an edit of either.
#[test]
fn a_v2_diff_whose_patch_names_another_file_is_not_allowed() {
    let p = Project::new();
    let inside = p.root.join("src/lib.rs");
    let mut request = edit(&inside);
    let patch = &mut request["params"]["subject"]["toolCall"]["content"][0]["patch"]["text"];
    *patch = json!("diff --git /etc/passwd /etc/passwd\n--- /etc/passwd\n+++ /etc/passwd\n");
    let verdict = p.decide(&request);
    assert_ne!(verdict["decision"], "allow", "{verdict}");
    // The same patch naming the changed file is allowed.
    assert_eq!(p.decide(&edit(&inside))["decision"], "allow");
}

/// A request carrying a v1 `toolCall` beside a v2 subject is judged only when both say the
/// same: the v1 shape said `cargo test` while the subject ran `rm -rf ~` or ran elsewhere.
#[test]
fn v1_and_v2_shapes_that_disagree_go_to_the_user() {
    let p = Project::new();
    let with_v1 = |mut request: Value, raw_input: Value| {
        let v1_call = v1::ToolCallUpdate::new(
            "call_run",
            v1::ToolCallUpdateFields::new()
                .kind(v1::ToolKind::Execute)
                .title("cargo test")
                .raw_input(raw_input),
        );
        request["params"]["toolCall"] = serde_json::to_value(v1_call).unwrap();
        request
    };
    let project = p.root.to_str().unwrap();
    for (name, request) in [
        (
            "rm -rf ~ beside cargo test",
            with_v1(
                command("rm -rf ~", &p.root),
                json!({"command": "cargo test", "cwd": project}),
            ),
        ),
        (
            "/tmp/attacker beside the project",
            with_v1(
                command("cargo test", Path::new("/tmp/attacker")),
                json!({"command": "cargo test", "cwd": project}),
            ),
        ),
    ] {
        let verdict = p.decide(&request);
        assert_ne!(verdict["decision"], "allow", "{name}: {verdict}");
    }
    let verdict = p.decide(&with_v1(
        command("cargo build", &p.root),
        json!({"command": "cargo test", "cwd": project}),
    ));
    assert_eq!(verdict["decision"], "ask", "{verdict}");
    assert!(
        verdict["reason"].as_str().unwrap().contains("disagree"),
        "{verdict}"
    );
    // Both shapes saying the same thing are judged.
    let verdict = p.decide(&with_v1(
        command("cargo test", &p.root),
        json!({"command": "cargo test", "cwd": project}),
    ));
    assert_eq!(verdict["decision"], "allow", "{verdict}");
}

/// Found by an outside attack: a command subject hid what the v1 `toolCall` beside it said
/// (an environment, a path, a finished call), and a v2 diff named files in places only part of
/// it was read (a change's custom field or snake_case `old_path`, a custom content item, a diff
/// with both a v1 `path` and v2 `changes`). None of these may be allowed.
#[test]
fn what_a_subject_or_a_v2_diff_hides_is_still_judged() {
    let p = Project::new();
    let project = p.root.to_str().unwrap();
    let lib = p.root.join("src/lib.rs");
    let lib = lib.to_str().unwrap();
    let beside = |v1_call: Value| {
        let mut request = command("cargo test", &p.root);
        request["params"]["toolCall"] = v1_call;
        request
    };
    let edit_with = |content: Value| {
        let mut request = edit(&p.root.join("src/lib.rs"));
        request["params"]["subject"]["toolCall"]["content"] = content;
        request
    };
    let cases = [
        (
            "env beside",
            beside(
                json!({"toolCallId": "c", "kind": "execute", "rawInput": {"command": "cargo test", "cwd": project, "env": {"RUSTC_WRAPPER": "/tmp/x"}}}),
            ),
        ),
        (
            "locations beside",
            beside(
                json!({"toolCallId": "c", "kind": "execute", "rawInput": {"command": "cargo test", "cwd": project}, "locations": [{"path": "/etc/passwd"}]}),
            ),
        ),
        (
            "finished beside",
            beside(
                json!({"toolCallId": "c", "kind": "execute", "status": "completed", "rawInput": {"command": "cargo test", "cwd": project}}),
            ),
        ),
        (
            "a change's custom field",
            edit_with(
                json!([{"type": "diff", "changes": [{"operation": "_weird", "path": lib, "source": "/etc/shadow"}]}]),
            ),
        ),
        (
            "snake_case old_path",
            edit_with(
                json!([{"type": "diff", "changes": [{"operation": "move", "path": lib, "old_path": "/etc/shadow"}]}]),
            ),
        ),
        (
            "a custom content item",
            edit_with(
                json!([{"type": "diff", "changes": [{"operation": "modify", "path": lib}]}, {"type": "_custom", "path": "/etc/shadow"}]),
            ),
        ),
        ("content of the wrong type", edit_with(json!("x"))),
        (
            "v1 path beside v2 changes",
            edit_with(
                json!([{"type": "diff", "path": "/etc/hosts", "changes": [{"operation": "modify", "path": lib}]}]),
            ),
        ),
    ];
    for (name, request) in cases {
        let verdict = p.decide(&request);
        assert_ne!(verdict["decision"], "allow", "{name}: {verdict}");
    }
    // The same subject with a v1 `toolCall` that says exactly the same is allowed.
    let agreeing = beside(
        json!({"toolCallId": "c", "kind": "execute", "rawInput": {"command": "cargo test", "cwd": project}}),
    );
    assert_eq!(p.decide(&agreeing)["decision"], "allow");
}

/// Found by an outside attack: a subject whose `type` (or `command`, `cwd`) is given twice was
/// judged on the last value, while a reader that keeps the first (or a typed one that refuses
/// the line) sees something else. Such a request goes to the user.
#[test]
fn a_request_naming_a_key_twice_goes_to_the_user() {
    let p = Project::new();
    let request = command("cargo test", &p.root);
    let text = serde_json::to_string(&request).unwrap();
    let twice = text.replacen(
        r#""type":"command""#,
        r#""type":"command","cwd":"/","cwd":"PROJECT""#,
        1,
    );
    let twice = twice.replace("PROJECT", p.root.to_str().unwrap());
    let file = p.sb.path("twice.json");
    std::fs::write(&file, &twice).unwrap();
    let policy = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/policies/project.toml");
    let out = p.sb.acptap(&[
        "policy",
        "check",
        "--policy",
        policy.to_str().unwrap(),
        "--request",
        file.to_str().unwrap(),
        "--cwd",
        p.root.to_str().unwrap(),
        "--json",
    ]);
    let verdict: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(verdict["decision"], "ask", "{twice}: {verdict}");
    assert!(
        verdict["reason"].as_str().unwrap().contains("twice"),
        "{verdict}"
    );
    assert_eq!(p.decide(&request)["decision"], "allow");
}
