//! How an error is said on stderr: one line, each cause once.

/// The error and its causes, joined by `: `, leaving out a cause that repeats what is already
/// said (SQLite's errors carry their own message again as their source, so a plain chain reads
/// `file is not a database: file is not a database: Error code 26: file is not a database`).
pub fn one_line(error: &anyhow::Error) -> String {
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
    said
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
            one_line(&e),
            "cannot open database /x.db: file is not a database"
        );
        let e = anyhow::anyhow!("root").context("middle").context("top");
        assert_eq!(one_line(&e), "top: middle: root");
    }
}
