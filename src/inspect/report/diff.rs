//! A `"type":"diff"` content item as a table of old and new lines with their numbers: the line
//! diff is the `similar` crate's (Myers, with a deadline so a huge diff cannot stall a report),
//! unchanged runs longer than the context are folded.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use serde_json::Value;
use similar::{Algorithm, DiffOp as Op, capture_diff_slices_deadline};

use super::esc;

/// A diff with more rows than this starts collapsed.
const DIFF_OPEN_ROWS: usize = 200;

/// Unchanged lines kept on each side of a change; longer unchanged runs are folded.
const DIFF_CONTEXT: usize = 3;

/// How long one diff may take; past it, `similar` gives a coarser (still correct) diff.
const DIFF_DEADLINE: Duration = Duration::from_millis(500);

/// One row of a line diff: indexes into the old and new lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DiffOp {
    Same(usize, usize),
    Removed(usize),
    Added(usize),
}

/// The rows of a line diff, in order.
pub(super) fn line_diff(old: &[&str], new: &[&str]) -> Vec<DiffOp> {
    let ops = capture_diff_slices_deadline(
        Algorithm::Myers,
        old,
        new,
        Some(Instant::now() + DIFF_DEADLINE),
    );
    let mut rows = Vec::with_capacity(old.len().max(new.len()));
    for op in ops {
        match op {
            Op::Equal {
                old_index,
                new_index,
                len,
            } => rows.extend((0..len).map(|k| DiffOp::Same(old_index + k, new_index + k))),
            Op::Delete {
                old_index, old_len, ..
            } => rows.extend((old_index..old_index + old_len).map(DiffOp::Removed)),
            Op::Insert {
                new_index, new_len, ..
            } => rows.extend((new_index..new_index + new_len).map(DiffOp::Added)),
            Op::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                rows.extend((old_index..old_index + old_len).map(DiffOp::Removed));
                rows.extend((new_index..new_index + new_len).map(DiffOp::Added));
            }
        }
    }
    rows
}

/// A `"type":"diff"` content item as a table of old and new lines with their numbers.
pub(super) fn diff(out: &mut String, item: &Value) {
    let path = item.get("path").and_then(Value::as_str).unwrap_or("?");
    let old_text = item.get("oldText").and_then(Value::as_str);
    let new_text = item.get("newText").and_then(Value::as_str).unwrap_or("");
    let old: Vec<&str> = old_text.map(|t| t.lines().collect()).unwrap_or_default();
    let new: Vec<&str> = new_text.lines().collect();
    let ops = line_diff(&old, &new);
    let (removed, added) = ops.iter().fold((0, 0), |(r, a), op| match op {
        DiffOp::Removed(_) => (r + 1, a),
        DiffOp::Added(_) => (r, a + 1),
        DiffOp::Same(..) => (r, a),
    });
    let _ = write!(
        out,
        "<details class=\"diff\"{}><summary>diff <code>{}</code>{} <span class=\"del\">−{removed}</span> \
         <span class=\"add\">+{added}</span></summary>\n<table class=\"diff\"><tbody>\n",
        if ops.len() <= DIFF_OPEN_ROWS {
            " open"
        } else {
            ""
        },
        esc(path),
        if old_text.is_none() {
            " (new file)"
        } else {
            ""
        },
    );
    // Unchanged lines farther than DIFF_CONTEXT from any change are folded.
    let near_change = |k: usize| {
        let lo = k.saturating_sub(DIFF_CONTEXT);
        let hi = (k + DIFF_CONTEXT + 1).min(ops.len());
        ops[lo..hi].iter().any(|op| !matches!(op, DiffOp::Same(..)))
    };
    let mut folded = 0;
    for (k, op) in ops.iter().enumerate() {
        if matches!(op, DiffOp::Same(..)) && !near_change(k) {
            folded += 1;
            continue;
        }
        if folded > 0 {
            let _ = writeln!(
                out,
                "<tr class=\"fold\"><td class=\"ln\"></td><td class=\"ln\"></td><td class=\"sign\">\
                 </td><td class=\"code\">⋯ {folded} unchanged line(s)</td></tr>"
            );
            folded = 0;
        }
        let (class, old_no, new_no, sign, text) = match *op {
            DiffOp::Same(i, j) => ("ctx", Some(i), Some(j), " ", old[i]),
            DiffOp::Removed(i) => ("del", Some(i), None, "-", old[i]),
            DiffOp::Added(j) => ("add", None, Some(j), "+", new[j]),
        };
        let number = |n: Option<usize>| n.map(|n| (n + 1).to_string()).unwrap_or_default();
        let _ = writeln!(
            out,
            "<tr class=\"{class}\"><td class=\"ln\">{}</td><td class=\"ln\">{}</td><td \
             class=\"sign\">{sign}</td><td class=\"code\">{}</td></tr>",
            number(old_no),
            number(new_no),
            esc(text)
        );
    }
    if folded > 0 {
        let _ = writeln!(
            out,
            "<tr class=\"fold\"><td class=\"ln\"></td><td class=\"ln\"></td><td class=\"sign\">\
             </td><td class=\"code\">⋯ {folded} unchanged line(s)</td></tr>"
        );
    }
    out.push_str("</tbody></table></details>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_diff_finds_changed_lines() {
        use DiffOp::*;
        let old = ["a", "b", "c", "d"];
        let new = ["a", "B", "c", "d", "e"];
        assert_eq!(
            line_diff(&old, &new),
            vec![
                Same(0, 0),
                Removed(1),
                Added(1),
                Same(2, 2),
                Same(3, 3),
                Added(4)
            ]
        );
        assert_eq!(line_diff(&[], &["x"]), vec![Added(0)]);
        assert_eq!(line_diff(&["x"], &[]), vec![Removed(0)]);
        // An insertion in the middle keeps what follows as context.
        assert_eq!(
            line_diff(&["1", "2", "3"], &["1", "x", "2", "3"]),
            vec![Same(0, 0), Added(1), Same(1, 2), Same(2, 3)]
        );
        // Reordered lines: one is kept, the other removed and added.
        let ops = line_diff(&["p", "q"], &["q", "p"]);
        assert_eq!(ops.iter().filter(|o| matches!(o, Same(..))).count(), 1);
        assert_eq!(ops.len(), 3);
    }

    #[test]
    fn identical_texts_fold_and_one_change_shows_its_context() {
        let old: Vec<String> = (0..100).map(|i| format!("line {i}")).collect();
        let mut new = old.clone();
        new[50] = "changed".into();
        let item = serde_json::json!({"type": "diff", "path": "/p/a", "oldText": old.join("\n"), "newText": new.join("\n")});
        let mut out = String::new();
        diff(&mut out, &item);
        assert!(
            out.contains("−1</span>") && out.contains("+1</span>"),
            "{out}"
        );
        assert_eq!(out.matches("class=\"ctx\"").count(), 2 * DIFF_CONTEXT);
        assert!(out.contains("⋯ 47 unchanged line(s)") && out.contains("⋯ 46 unchanged line(s)"));
        let same = serde_json::json!({"type": "diff", "path": "/p/a", "oldText": "a\nb", "newText": "a\nb"});
        let mut out = String::new();
        diff(&mut out, &same);
        assert!(
            out.contains("−0</span>") && out.contains("⋯ 2 unchanged line(s)"),
            "{out}"
        );
        let created =
            serde_json::json!({"type": "diff", "path": "/p/n", "oldText": null, "newText": "x\ny"});
        let mut out = String::new();
        diff(&mut out, &created);
        assert!(
            out.contains("(new file)") && out.contains("+2</span>"),
            "{out}"
        );
    }

    #[test]
    fn a_large_diff_is_counted_right() {
        let old: Vec<String> = (0..20_000).map(|i| format!("old {i}")).collect();
        let new: Vec<String> = (0..20_000).map(|i| format!("new {i}")).collect();
        let (old, new): (Vec<&str>, Vec<&str>) = (
            old.iter().map(String::as_str).collect(),
            new.iter().map(String::as_str).collect(),
        );
        let rows = line_diff(&old, &new);
        let removed = rows
            .iter()
            .filter(|r| matches!(r, DiffOp::Removed(_)))
            .count();
        let added = rows
            .iter()
            .filter(|r| matches!(r, DiffOp::Added(_)))
            .count();
        assert_eq!((removed, added), (20_000, 20_000));
    }
}
