//! Paths as a rule sees them: every path a tool call touches, made absolute against the session's
//! cwd, with `.` and `..` resolved and symlinks followed where they exist (as `realpath` would),
//! so that `${cwd}/**` cannot be escaped by `../` or by a link pointing out of the project.
//!
//! A path that does not exist (yet) is resolved as far as it exists; the rest is taken lexically.

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

/// rawInput keys whose string value is a path the tool touches. Agents name them differently
/// (claude: `file_path`, `notebook_path`, `path`; codex: `cwd`, and the keys of `changes`).
const PATH_KEYS: &[&str] = &[
    "path",
    "file_path",
    "filePath",
    "file",
    "filename",
    "notebook_path",
    "directory",
    "dir",
    "cwd",
    "target",
    "source",
    "destination",
    "old_path",
    "new_path",
    "move_path",
    "abs_path",
];

/// How many symlinks one path may go through before it is declared a loop.
const MAX_SYMLINKS: usize = 40;

/// The raw path strings of a tool call: its locations, the paths of its diffs, and the path-like
/// fields of its rawInput (see [`PATH_KEYS`]; also `paths` arrays and the keys of a `changes`
/// map).
pub fn tool_call_paths(
    locations: Option<&Value>,
    content: Option<&Value>,
    raw_input: Option<&Value>,
) -> Vec<String> {
    let mut out = Vec::new();
    let mut push = |p: &str| {
        if !out.iter().any(|known: &String| known == p) {
            out.push(p.to_owned());
        }
    };
    for location in locations.and_then(Value::as_array).into_iter().flatten() {
        if let Some(p) = location.get("path").and_then(Value::as_str) {
            push(p);
        }
    }
    for item in content.and_then(Value::as_array).into_iter().flatten() {
        if item.get("type").and_then(Value::as_str) == Some("diff")
            && let Some(p) = item.get("path").and_then(Value::as_str)
        {
            push(p);
        }
    }
    if let Some(input) = raw_input.and_then(Value::as_object) {
        for key in PATH_KEYS {
            if let Some(p) = input.get(*key).and_then(Value::as_str) {
                push(p);
            }
        }
        for p in input
            .get("paths")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(p) = p.as_str() {
                push(p);
            }
        }
        for (p, change) in input
            .get("changes")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            push(p);
            if let Some(moved) = change.get("move_path").and_then(Value::as_str) {
                push(moved);
            }
        }
    }
    out
}

/// Makes `path` absolute against `cwd` (and `~` against `home`), resolving `.`, `..` and
/// symlinks. `None` if it cannot be placed: relative with no cwd, or a symlink loop.
pub fn normalise(path: &str, cwd: Option<&Path>, home: Option<&Path>) -> Option<PathBuf> {
    let path = Path::new(path);
    let absolute = if let Ok(rest) = path.strip_prefix("~") {
        home?.join(rest)
    } else if path.is_absolute() {
        path.to_owned()
    } else {
        cwd?.join(path)
    };
    let mut budget = MAX_SYMLINKS;
    resolve(&absolute, &mut budget)
}

fn resolve(path: &Path, budget: &mut usize) -> Option<PathBuf> {
    let mut resolved = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::RootDir | Component::Prefix(_) | Component::CurDir => {}
            Component::ParentDir => {
                resolved.pop();
            }
            Component::Normal(name) => {
                let candidate = resolved.join(name);
                match std::fs::read_link(&candidate) {
                    Ok(target) => {
                        *budget = budget.checked_sub(1)?;
                        let target = if target.is_absolute() {
                            target
                        } else {
                            resolved.join(target)
                        };
                        resolved = resolve(&target, budget)?;
                    }
                    Err(_) => resolved = candidate,
                }
            }
        }
    }
    Some(resolved)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dot_dot_cannot_climb_out_lexically() {
        let cwd = Path::new("/nonexistent-acptap/project");
        assert_eq!(
            normalise("src/../../etc/passwd", Some(cwd), None),
            Some(PathBuf::from("/nonexistent-acptap/etc/passwd"))
        );
        assert_eq!(
            normalise("/../../etc", None, None),
            Some(PathBuf::from("/etc"))
        );
        assert_eq!(normalise("./a/./b", Some(cwd), None), Some(cwd.join("a/b")));
        assert_eq!(normalise("relative", None, None), None);
        assert_eq!(
            normalise("~/.ssh/id_rsa", None, Some(Path::new("/home/u"))),
            Some(PathBuf::from("/home/u/.ssh/id_rsa"))
        );
    }

    #[test]
    fn symlinks_are_followed_out_of_the_project() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let project = root.join("project");
        let outside = root.join("outside");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, project.join("escape")).unwrap();
        std::os::unix::fs::symlink("../outside/secret", project.join("relative-escape")).unwrap();
        assert_eq!(
            normalise("escape/new-file", Some(&project), None),
            Some(outside.join("new-file"))
        );
        assert_eq!(
            normalise("relative-escape", Some(&project), None),
            Some(outside.join("secret"))
        );
        // `..` after a symlink climbs from the link's target, as the kernel does.
        assert_eq!(
            normalise("escape/../x", Some(&project), None),
            Some(root.join("x"))
        );
        std::os::unix::fs::symlink(project.join("loop"), project.join("loop")).unwrap();
        assert_eq!(normalise("loop/x", Some(&project), None), None);
    }

    #[test]
    fn collects_locations_diffs_and_raw_input_paths() {
        let paths = tool_call_paths(
            Some(&json!([{"path": "/p/a"}, {"path": "/p/a"}])),
            Some(
                &json!([{"type": "diff", "path": "/p/b"}, {"type": "content", "path": "/ignored"}]),
            ),
            Some(
                &json!({"file_path": "/etc/passwd", "paths": ["/p/c"], "changes": {"/p/d": {"move_path": "/p/e"}}}),
            ),
        );
        assert_eq!(
            paths,
            vec!["/p/a", "/p/b", "/etc/passwd", "/p/c", "/p/d", "/p/e"]
        );
    }
}
