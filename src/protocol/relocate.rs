//! One recorded directory written as another, in every place a path can appear: string values,
//! object keys (Codex names the files it edits as keys: `rawInput.changes["/abs/p/a.py"]`),
//! `file://` URIs, titles and free text ("Edit /abs/p/a.py", "Directory: /abs/p").
//!
//! Used wherever a recording meets another directory: `acptap diff` and replay's comparison
//! write a session's cwd as `<cwd>` on both sides; replay as agent moves what the live client
//! is shown from the recorded cwd to the live one. What lies *outside* the cwd is not this
//! module's business: the replay's gate decides that for the paths a client acts on.

use serde_json::Value;

/// The recorded directory `from` written as `to`.
#[derive(Debug, Clone)]
pub(crate) struct Relocation {
    from: String,
    to: String,
}

impl Relocation {
    /// `None` for a `from` that cannot be told from other text: empty or `/` (every absolute
    /// path would match) or relative.
    pub(crate) fn new(from: &str, to: &str) -> Option<Relocation> {
        let from = from.trim_end_matches('/');
        if from.is_empty() || !from.starts_with('/') {
            return None;
        }
        // `/` is kept as the empty prefix, so that `/` + rest stays one slash.
        let to = to.trim_end_matches('/');
        Some(Relocation {
            from: from.to_owned(),
            to: to.to_owned(),
        })
    }

    /// `text` with each occurrence of the directory that stands as a path of its own moved:
    /// `from` itself or `from/...`, not `from-old/...` nor `/x/from/...` (a `file://` URI's
    /// path excepted). `None` when nothing moved.
    ///
    /// A text cut inside the directory's name (kimi-cli streams its tool's input: `ReadFile:
    /// /abs/pr`, then the whole path; any agent's message chunks) is left as it is: the start of
    /// a name is not the name (`/abs/p` may be a sibling), and the rest of it may come in the
    /// next chunk.
    pub(crate) fn text(&self, text: &str) -> Option<String> {
        if self.from == self.to || !text.contains(self.from.as_str()) {
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
            // A full stop ends a sentence, not the name, when nothing of a name follows it.
            let after_stop = text[end..]
                .strip_prefix('.')
                .map(|rest| rest.chars().next());
            let ends = after.is_none_or(|c| c == '/' || !is_name_char(c))
                || after_stop.is_some_and(|next| next.is_none_or(|c| !is_name_char(c)));
            if starts_a_path(at) && ends {
                out.push_str(&text[last..at]);
                let root_alone = self.to.is_empty() && !text[end..].starts_with('/');
                out.push_str(if root_alone { "/" } else { &self.to });
                last = end;
            }
        }
        if last == 0 {
            return None;
        }
        out.push_str(&text[last..]);
        Some(out)
    }

    /// Every string and object key of `value` moved in place, but for the fields `kept` names
    /// by the object keys their trail ends with (`&["locations", "path"]`: a location's path);
    /// whether anything moved.
    pub(crate) fn value_except(&self, value: &mut Value, kept: &[&[&str]]) -> bool {
        self.walk(value, &mut Vec::new(), kept)
    }

    /// Every string and object key of `value` moved in place; whether anything moved.
    pub(crate) fn value(&self, value: &mut Value) -> bool {
        self.value_except(value, &[])
    }

    fn walk(&self, value: &mut Value, trail: &mut Vec<String>, kept: &[&[&str]]) -> bool {
        if kept.iter().any(|tail| trail_ends_with(trail, tail)) {
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
                    moved |= self.walk(item, trail, kept);
                }
                moved
            }
            Value::Object(map) => {
                let mut moved = false;
                let mut renames = Vec::new();
                for (key, field) in map.iter_mut() {
                    trail.push(key.clone());
                    moved |= self.walk(field, trail, kept);
                    trail.pop();
                    if let Some(new) = self.text(key) {
                        renames.push((key.clone(), new));
                    }
                }
                // Two keys that would become one (`/rec/p/a` beside `/live/a`) stay as they
                // are: a moved key never hides another's value.
                for (old, new) in renames {
                    if !map.contains_key(&new)
                        && let Some(field) = map.remove(&old)
                    {
                        map.insert(new, field);
                        moved = true;
                    }
                }
                moved
            }
            _ => false,
        }
    }
}

/// Whether the object keys leading to a value end with `tail`.
fn trail_ends_with(trail: &[String], tail: &[&str]) -> bool {
    trail.len() >= tail.len()
        && trail[trail.len() - tail.len()..]
            .iter()
            .zip(tail)
            .all(|(key, want)| key == want)
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
    fn a_text_cut_inside_the_directory_name_is_left_as_it_is() {
        // A streamed chunk ends inside the name; the next one carries the rest.
        assert_eq!(moved("see /rec/pr"), "see /rec/pr");
        assert_eq!(moved("ReadFile: /rec/p"), "ReadFile: /rec/p");
        // The end of a sentence is not part of the name.
        assert_eq!(moved("in /rec/proj."), "in /live/p.");
        assert_eq!(moved("in /rec/proj. Then"), "in /live/p. Then");
        assert_eq!(moved("/rec/proj.d/x"), "/rec/proj.d/x");
        assert_eq!(moved("file:///rec/proj"), "file:///live/p");
    }

    #[test]
    fn a_live_root_is_one_slash() {
        let relocation = Relocation::new("/rec/proj", "/").unwrap();
        assert_eq!(relocation.text("/rec/proj/a").as_deref(), Some("/a"));
        assert_eq!(relocation.text("cd /rec/proj").as_deref(), Some("cd /"));
    }

    #[test]
    fn keys_that_would_become_one_stay_as_they_are() {
        let relocation = Relocation::new("/rec/proj", "/live/p").unwrap();
        let mut value = json!({"changes": {"/rec/proj/a": "good", "/live/p/a": "evil"}});
        relocation.value(&mut value);
        assert_eq!(value["changes"]["/rec/proj/a"], "good");
        assert_eq!(value["changes"]["/live/p/a"], "evil");
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
        assert!(relocation.value_except(&mut value, &[&["newText"]]));
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
