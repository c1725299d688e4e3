//! One recorded directory written as another, in every place a path can appear: string values,
//! object keys (Codex names the files it edits as keys: `rawInput.changes["/abs/p/a.py"]`),
//! `file://` URIs, titles and free text ("Edit /abs/p/a.py", "Directory: /abs/p").
//!
//! Used wherever a recording meets another directory: `acptap diff` and replay's comparison
//! write a session's cwd as `<cwd>` on both sides; replay as agent moves what the live client
//! is shown from the recorded cwd to the live one. What lies *outside* the cwd is not this
//! module's business: the replay's gate decides that for the paths a client acts on.

use serde_json::{Map, Value};

/// The recorded directory `from` written as `to`.
#[derive(Debug, Clone)]
pub struct Relocation {
    from: String,
    to: String,
}

impl Relocation {
    /// `None` for a `from` that cannot be told from other text: empty or `/` (every absolute
    /// path would match) or relative.
    pub fn new(from: &str, to: &str) -> Option<Relocation> {
        let from = from.trim_end_matches('/');
        if from.is_empty() || !from.starts_with('/') {
            return None;
        }
        let to = if to.len() > 1 {
            to.trim_end_matches('/')
        } else {
            to
        };
        Some(Relocation {
            from: from.to_owned(),
            to: to.to_owned(),
        })
    }

    /// `text` with each occurrence of the directory that stands as a path of its own moved:
    /// `from` itself or `from/...`, not `from-old/...` nor `/x/from/...` (a `file://` URI's
    /// path excepted). `None` when nothing moved.
    ///
    /// A text that ends inside the directory's last name (an agent streaming its tool's input
    /// shows `ReadFile: /abs/pr` before `ReadFile: /abs/proj/a.py`) has that fragment moved too,
    /// as long as the whole parent directory is in it: it can be the start of no other path.
    pub fn text(&self, text: &str) -> Option<String> {
        let parent = &self.from[..=self.from.rfind('/').unwrap_or(0)];
        if self.from == self.to || !text.contains(parent) {
            return None;
        }
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        let starts_a_path = |at: usize| match text[..at].chars().next_back() {
            None => true,
            Some('/') => is_path_prefix(&text[..at]),
            Some(c) => !is_name_char(c),
        };
        for (at, _) in text.match_indices(self.from.as_str()) {
            if at < last {
                continue; // overlapping match inside one already moved
            }
            let end = at + self.from.len();
            let after = text[end..].chars().next();
            let ends = after.is_none_or(|c| c == '/' || !is_name_char(c));
            if starts_a_path(at) && ends {
                out.push_str(&text[last..at]);
                out.push_str(&self.to);
                last = end;
            }
        }
        if parent.len() > 1
            && let Some(at) = text.rfind(parent)
            && at >= last
            && text.len() - at > parent.len()
            && self.from.starts_with(&text[at..])
            && text.len() - at < self.from.len()
            && starts_a_path(at)
        {
            out.push_str(&text[last..at]);
            out.push_str(&self.to);
            return Some(out);
        }
        if last == 0 {
            return None;
        }
        out.push_str(&text[last..]);
        Some(out)
    }

    /// Every string and object key of `value` moved in place; whether anything moved.
    /// `keep(keys)` names the fields left as they are (given the object keys leading to them).
    pub fn value_except(&self, value: &mut Value, keep: &dyn Fn(&[&str]) -> bool) -> bool {
        let mut trail = Vec::new();
        self.walk(value, &mut trail, keep)
    }

    /// Every string and object key of `value` moved in place; whether anything moved.
    pub fn value(&self, value: &mut Value) -> bool {
        self.value_except(value, &|_| false)
    }

    fn walk(
        &self,
        value: &mut Value,
        trail: &mut Vec<String>,
        keep: &dyn Fn(&[&str]) -> bool,
    ) -> bool {
        let keys: Vec<&str> = trail.iter().map(String::as_str).collect();
        if keep(&keys) {
            return false;
        }
        match value {
            Value::String(text) => match self.text(text) {
                Some(moved) => {
                    *text = moved;
                    true
                }
                None => false,
            },
            Value::Array(items) => {
                let mut moved = false;
                for item in items {
                    moved |= self.walk(item, trail, keep);
                }
                moved
            }
            Value::Object(map) => {
                let mut moved = false;
                let mut renamed = Map::with_capacity(map.len());
                for (key, mut field) in std::mem::take(map) {
                    trail.push(key.clone());
                    moved |= self.walk(&mut field, trail, keep);
                    trail.pop();
                    let key = match self.text(&key) {
                        Some(new) => {
                            moved = true;
                            new
                        }
                        None => key,
                    };
                    renamed.insert(key, field);
                }
                *map = renamed;
                moved
            }
            _ => false,
        }
    }
}

/// Whether the word that `before` ends with, followed by an absolute path, still names that
/// path: a `file://` URI, git's `a/` and `b/` in a diff header (`+++ b//abs/p/a.py`), or a
/// doubled slash. Any other directory in front makes it another path (`/x` + `/rec/proj`).
fn is_path_prefix(before: &str) -> bool {
    let word = before
        .rfind(|c: char| !is_name_char(c) && c != '/' && c != ':')
        .map_or(before, |at| &before[at + 1..]);
    let word = word.as_bytes();
    word == b"file://"
        || word == b"/"
        || (word.len() == 2 && word[0].is_ascii_alphabetic() && word[1] == b'/')
}

/// A character that continues a file name: the directory `/p` is not the start of `/proj`.
fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '~' | '+' | '@' | '%')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn moved(text: &str) -> String {
        Relocation::new("/rec/proj", "/live/p")
            .unwrap()
            .text(text)
            .unwrap_or_else(|| text.to_owned())
    }

    #[test]
    fn the_directory_moves_where_it_stands_as_a_path() {
        assert_eq!(moved("/rec/proj"), "/live/p");
        assert_eq!(moved("/rec/proj/"), "/live/p/");
        assert_eq!(moved("Edit /rec/proj/a.py"), "Edit /live/p/a.py");
        assert_eq!(moved("[in /rec/proj] (ls)"), "[in /live/p] (ls)");
        assert_eq!(moved("file:///rec/proj/a.py"), "file:///live/p/a.py");
        assert_eq!(
            moved("\"/rec/proj/a\" and '/rec/proj'"),
            "\"/live/p/a\" and '/live/p'"
        );
        assert_eq!(moved("cd /rec/proj && ls"), "cd /live/p && ls");
        // fast-agent's unified diff header names the absolute path after git's `b/`.
        assert_eq!(
            moved("--- a//rec/proj/a.py\n+++ b//rec/proj/a.py"),
            "--- a//live/p/a.py\n+++ b//live/p/a.py"
        );
        assert_eq!(moved("x //rec/proj/a"), "x //live/p/a");
    }

    #[test]
    fn a_text_cut_inside_the_directory_name_is_moved_whole() {
        // kimi-cli streams its tool's input: the title is cut mid-name, then completed.
        assert_eq!(moved("ReadFile: /rec/pr"), "ReadFile: /live/p");
        assert_eq!(moved("{\"path\": \"/rec/proj"), "{\"path\": \"/live/p");
        // Not without the whole parent, not past the name, and never from the root.
        assert_eq!(moved("ReadFile: /re"), "ReadFile: /re");
        assert_eq!(moved("ReadFile: /rec/"), "ReadFile: /rec/");
        assert_eq!(moved("ReadFile: /rec/px"), "ReadFile: /rec/px");
        let top = Relocation::new("/rec", "/live").unwrap();
        assert_eq!(top.text("ls /r"), None);
    }

    #[test]
    fn a_longer_name_or_a_deeper_path_is_not_the_directory() {
        assert_eq!(moved("/rec/proj-old/a"), "/rec/proj-old/a");
        assert_eq!(moved("/rec/project"), "/rec/project");
        assert_eq!(moved("/x/rec/proj/a"), "/x/rec/proj/a");
        assert_eq!(moved("ab//rec/proj/a"), "ab//rec/proj/a");
        assert_eq!(moved("/a//rec/proj/a"), "/a//rec/proj/a");
        assert_eq!(moved("/rec/proj.bak"), "/rec/proj.bak");
    }

    #[test]
    fn a_root_or_relative_directory_relocates_nothing() {
        assert!(Relocation::new("/", "/x").is_none());
        assert!(Relocation::new("", "/x").is_none());
        assert!(Relocation::new("proj", "/x").is_none());
    }

    #[test]
    fn keys_and_nested_values_move_and_kept_fields_do_not() {
        let relocation = Relocation::new("/rec/proj/", "<cwd>").unwrap();
        let mut value = json!({
            "title": "Edit /rec/proj/a.py",
            "rawInput": {"changes": {"/rec/proj/a.py": {"type": "update"}}},
            "content": [{"type": "diff", "path": "/rec/proj/a.py", "newText": "/rec/proj"}],
        });
        let keep = |keys: &[&str]| keys.last() == Some(&"newText");
        assert!(relocation.value_except(&mut value, &keep));
        assert_eq!(
            value,
            json!({
                "title": "Edit <cwd>/a.py",
                "rawInput": {"changes": {"<cwd>/a.py": {"type": "update"}}},
                "content": [{"type": "diff", "path": "<cwd>/a.py", "newText": "/rec/proj"}],
            })
        );
    }
}
