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
pub(crate) enum DiffOp {
    Same(usize, usize),
    Removed(usize),
    Added(usize),
}

/// The rows of a line diff, in order.
pub(crate) fn line_diff(old: &[&str], new: &[&str]) -> Vec<DiffOp> {
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

/// One row of a diff as shown: a line (with its class `ctx`, `del` or `add`, its 1-based numbers
/// in the old and new texts, and its sign), or a run of unchanged lines folded away.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "row", rename_all = "snake_case")]
pub(crate) enum DiffRow {
    Line {
        class: &'static str,
        old: Option<usize>,
        new: Option<usize>,
        sign: &'static str,
        text: String,
    },
    Fold {
        count: usize,
    },
}

/// A `"type":"diff"` content item as it is shown: what the report writes as a table and
/// `acptap ui` builds in the page, from this one computation.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct DiffView {
    pub path: String,
    /// No `oldText`: the file is new.
    pub new_file: bool,
    pub removed: usize,
    pub added: usize,
    /// Small enough to be shown open at first.
    pub open: bool,
    pub rows: Vec<DiffRow>,
}

/// The rows of a diff content item: changed lines with `DIFF_CONTEXT` unchanged lines around
/// them, longer unchanged runs folded.
pub(crate) fn diff_view(item: &Value) -> DiffView {
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
    // Unchanged lines farther than DIFF_CONTEXT from any change are folded.
    let near_change = |k: usize| {
        let lo = k.saturating_sub(DIFF_CONTEXT);
        let hi = (k + DIFF_CONTEXT + 1).min(ops.len());
        ops[lo..hi].iter().any(|op| !matches!(op, DiffOp::Same(..)))
    };
    let mut rows = Vec::new();
    let mut folded = 0;
    for (k, op) in ops.iter().enumerate() {
        if matches!(op, DiffOp::Same(..)) && !near_change(k) {
            folded += 1;
            continue;
        }
        if folded > 0 {
            rows.push(DiffRow::Fold { count: folded });
            folded = 0;
        }
        let (class, old_no, new_no, sign, text) = match *op {
            DiffOp::Same(i, j) => ("ctx", Some(i), Some(j), " ", old[i]),
            DiffOp::Removed(i) => ("del", Some(i), None, "-", old[i]),
            DiffOp::Added(j) => ("add", None, Some(j), "+", new[j]),
        };
        rows.push(DiffRow::Line {
            class,
            old: old_no.map(|n| n + 1),
            new: new_no.map(|n| n + 1),
            sign,
            text: text.to_owned(),
        });
    }
    if folded > 0 {
        rows.push(DiffRow::Fold { count: folded });
    }
    DiffView {
        path: path.to_owned(),
        new_file: old_text.is_none(),
        removed,
        added,
        open: ops.len() <= DIFF_OPEN_ROWS,
        rows,
    }
}

/// A `"type":"diff"` content item as a table of old and new lines with their numbers.
pub(super) fn diff(out: &mut String, item: &Value) {
    let view = diff_view(item);
    let _ = write!(
        out,
        "<details class=\"diff\"{}><summary>diff <code>{}</code>{} <span class=\"del\">−{}</span> \
         <span class=\"add\">+{}</span></summary>\n<table class=\"diff\"><tbody>\n",
        if view.open { " open" } else { "" },
        esc(&view.path),
        if view.new_file { " (new file)" } else { "" },
        view.removed,
        view.added,
    );
    for row in &view.rows {
        match row {
            DiffRow::Fold { count } => {
                let _ = writeln!(
                    out,
                    "<tr class=\"fold\"><td class=\"ln\"></td><td class=\"ln\"></td><td class=\"sign\">\
                     </td><td class=\"code\">⋯ {count} unchanged line(s)</td></tr>"
                );
            }
            DiffRow::Line {
                class,
                old,
                new,
                sign,
                text,
            } => {
                let number = |n: &Option<usize>| n.map(|n| n.to_string()).unwrap_or_default();
                let _ = writeln!(
                    out,
                    "<tr class=\"{class}\"><td class=\"ln\">{}</td><td class=\"ln\">{}</td><td \
                     class=\"sign\">{sign}</td><td class=\"code\">{}</td></tr>",
                    number(old),
                    number(new),
                    esc(text)
                );
            }
        }
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

    /// The table `diff` writes for `old` and `new` (`None`: a new file).
    fn render(old: Option<&str>, new: &str) -> String {
        let item =
            serde_json::json!({"type": "diff", "path": "/p/a", "oldText": old, "newText": new});
        let mut out = String::new();
        diff(&mut out, &item);
        out
    }

    /// How many rows of the table have this class (`ctx`, `del`, `add`, `fold`).
    fn rows(out: &str, class: &str) -> usize {
        out.matches(&format!("<tr class=\"{class}\">")).count()
    }

    fn numbered(n: usize, prefix: &str) -> String {
        (0..n)
            .map(|i| format!("{prefix} {i}"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn identical_texts_are_all_context_and_folded() {
        let text = numbered(100, "line");
        let out = render(Some(&text), &text);
        assert!(
            out.contains("−0</span>") && out.contains("+0</span>"),
            "{out}"
        );
        assert!(!out.contains("(new file)"), "{out}");
        // No change anywhere: every unchanged line is folded into one row.
        assert_eq!(
            (rows(&out, "ctx"), rows(&out, "del"), rows(&out, "add")),
            (0, 0, 0)
        );
        assert_eq!(rows(&out, "fold"), 1);
        assert!(out.contains("⋯ 100 unchanged line(s)"), "{out}");
        let out = render(Some("a\nb"), "a\nb");
        assert!(out.contains("⋯ 2 unchanged line(s)"), "{out}");
    }

    #[test]
    fn one_changed_line_shows_its_context_and_folds_the_rest() {
        let old: Vec<String> = (0..100).map(|i| format!("line {i}")).collect();
        let mut new = old.clone();
        new[50] = "changed".into();
        let out = render(Some(&old.join("\n")), &new.join("\n"));
        assert!(
            out.contains("−1</span>") && out.contains("+1</span>"),
            "{out}"
        );
        assert!(out.starts_with("<details class=\"diff\" open>"), "{out}");
        assert_eq!((rows(&out, "del"), rows(&out, "add")), (1, 1));
        assert_eq!(rows(&out, "ctx"), 2 * DIFF_CONTEXT);
        // Lines 1..=47 and 55..=100 (1-based) are folded on either side of the change.
        assert_eq!(rows(&out, "fold"), 2);
        assert!(out.contains("⋯ 47 unchanged line(s)") && out.contains("⋯ 46 unchanged line(s)"));
        assert!(out.contains(
            "<tr class=\"del\"><td class=\"ln\">51</td><td class=\"ln\"></td><td \
             class=\"sign\">-</td><td class=\"code\">line 50</td></tr>"
        ));
        assert!(out.contains(
            "<tr class=\"add\"><td class=\"ln\"></td><td class=\"ln\">51</td><td \
             class=\"sign\">+</td><td class=\"code\">changed</td></tr>"
        ));
        // The context right before and after the change, with both line numbers.
        assert!(out.contains(
            "<tr class=\"ctx\"><td class=\"ln\">48</td><td class=\"ln\">48</td><td \
             class=\"sign\"> </td><td class=\"code\">line 47</td></tr>"
        ));
        assert!(out.contains(
            "<tr class=\"ctx\"><td class=\"ln\">54</td><td class=\"ln\">54</td><td \
             class=\"sign\"> </td><td class=\"code\">line 53</td></tr>"
        ));
    }

    #[test]
    fn a_new_file_is_all_added() {
        let out = render(None, "x\ny\nz");
        assert!(
            out.contains("(new file)") && out.contains("−0</span>") && out.contains("+3</span>"),
            "{out}"
        );
        assert_eq!(
            (
                rows(&out, "ctx"),
                rows(&out, "del"),
                rows(&out, "add"),
                rows(&out, "fold")
            ),
            (0, 0, 3, 0)
        );
        // An empty old text is an existing file made non-empty, not a new one.
        let out = render(Some(""), "x");
        assert!(
            !out.contains("(new file)") && out.contains("+1</span>"),
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

    #[test]
    fn a_large_diff_is_rendered_whole() {
        // 20,000 lines against 20,000 other lines: the worst case for Myers, cut by the deadline
        // (how long it takes is the benchmark's business, not a test's).
        let (old, new) = (numbered(20_000, "old"), numbered(20_000, "new"));
        let out = render(Some(&old), &new);
        assert!(out.contains("−20000</span>") && out.contains("+20000</span>"));
        assert_eq!((rows(&out, "del"), rows(&out, "add")), (20_000, 20_000));
        assert_eq!(rows(&out, "ctx") + rows(&out, "fold"), 0);
        // Past DIFF_OPEN_ROWS rows, the diff starts collapsed.
        assert!(
            out.starts_with("<details class=\"diff\"><summary>"),
            "{out:.80}"
        );

        // 20,000 lines with every 1,000th changed: exactly those lines, each with its context.
        let old: Vec<String> = (0..20_000).map(|i| format!("line {i}")).collect();
        let mut new = old.clone();
        for i in (0..20_000).step_by(1_000) {
            new[i] = format!("changed {i}");
        }
        let out = render(Some(&old.join("\n")), &new.join("\n"));
        assert!(out.contains("−20</span>") && out.contains("+20</span>"));
        assert_eq!((rows(&out, "del"), rows(&out, "add")), (20, 20));
        // The first change is line 1 (no context before it); the others have 3 lines each side.
        assert_eq!(rows(&out, "ctx"), DIFF_CONTEXT + 19 * 2 * DIFF_CONTEXT);
        assert_eq!(rows(&out, "fold"), 20);
    }
}
