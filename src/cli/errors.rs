//! How an error is said on stderr: one line, each cause once.

/// The most of an error said on the terminal: an error may quote recorded values (a session id
/// found in a file, the ids an ambiguous prefix matches), and those may be of any length.
const ERROR_BYTES: usize = 4096;

/// The error and its causes, joined by `: `, leaving out a cause that repeats what is already
/// said (SQLite's errors carry their own message again as their source, so a plain chain reads
/// `file is not a database: file is not a database: Error code 26: file is not a database`).
/// Made safe for a terminal, on one line and cut (`terminal_line`): what it quotes may come from
/// a recording or a transcript.
pub(crate) fn error_chain(error: &anyhow::Error) -> String {
    let mut said = String::new();
    let mut previous = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        let repeats = said.contains(&text)
            || (!previous.is_empty() && text.contains(&previous))
            || text.is_empty();
        if !repeats {
            if !said.is_empty() {
                said.push_str(": ");
            }
            said.push_str(&text);
        }
        previous = text;
    }
    crate::terminal::terminal_line(&said, ERROR_BYTES).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cause_is_said_once() {
        let sqlite = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(26),
            Some("file is not a database".into()),
        );
        let e = anyhow::Error::new(sqlite)
            .context("cannot open database /x.db: file is not a database");
        assert_eq!(
            error_chain(&e),
            "cannot open database /x.db: file is not a database"
        );
        let e = anyhow::anyhow!("root").context("middle").context("top");
        assert_eq!(error_chain(&e), "top: middle: root");
    }

    #[test]
    fn a_quoted_recorded_value_is_safe_on_one_line_and_cut() {
        let e = anyhow::anyhow!("no session matches `a\u{1b}]52;c;eA==\u{7}\n\u{202e}b`");
        assert_eq!(
            error_chain(&e),
            "no session matches `a\u{FFFD}]52;c;eA==\u{FFFD}\u{FFFD}\u{FFFD}b`"
        );
        let long = anyhow::anyhow!("{}", "x".repeat(ERROR_BYTES * 2));
        assert!(error_chain(&long).ends_with(&format!("…[{ERROR_BYTES} more bytes]")));
    }
}
