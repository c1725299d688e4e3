//! Keeping a database: `prune`, `migrate`, `vacuum`.

use crate::query;

use super::super::config::Config;
use super::super::{DbOnlyArgs, PruneArgs, microseconds_before_now, print};

/// `acptap prune`.
pub(in crate::cli) fn prune(args: PruneArgs, _config: &Config) -> anyhow::Result<i32> {
    use std::io::IsTerminal;
    let before = microseconds_before_now(args.older_than);
    let candidates = query::prunable_connections(&args.db.read()?, before)?;
    let cutoff = crate::inspect::format_time(before);
    let mut listing = String::new();
    for c in &candidates {
        listing.push_str(&format!(
            "  connection {} started {} UTC, {}{}\n",
            c.id,
            crate::inspect::format_time(c.started_at),
            c.state,
            c.label
                .as_deref()
                .map(|l| format!(", {}", crate::inspect::one_line(l, 60)))
                .unwrap_or_default()
        ));
    }
    if args.dry_run || candidates.is_empty() {
        print(&format!(
            "{} connection(s) started before {cutoff} UTC {}\n{listing}",
            candidates.len(),
            if args.dry_run {
                "would be deleted (live ones are never deleted):"
            } else {
                "to delete"
            }
        ))?;
        return Ok(0);
    }
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            anyhow::bail!(
                "prune deletes {} connection(s): add --yes to confirm (or --dry-run to list them)",
                candidates.len()
            );
        }
        eprint!(
            "{listing}delete these {} connection(s) and everything recorded under them? [y/N] ",
            candidates.len()
        );
        let mut answer = String::new();
        std::io::stdin().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            eprintln!("nothing deleted");
            return Ok(1);
        }
    }
    let ids: Vec<i64> = candidates.iter().map(|c| c.id).collect();
    let removed = args.db.open()?.delete_connections(&ids)?;
    print(&format!(
        "deleted {removed} connection(s) started before {cutoff} UTC, with everything recorded under them; `acptap vacuum` gives the space back\n"
    ))?;
    Ok(0)
}

/// `acptap migrate`.
pub(in crate::cli) fn migrate(args: DbOnlyArgs, _config: &Config) -> anyhow::Result<i32> {
    let path = args.db.path()?;
    let before = crate::record::store::schema_version_of(&path)?;
    // Opening migrates; then what is recorded goes into the search index.
    let indexed = args.db.open()?.index_for_search()?;
    let after = crate::record::store::schema_version_of(&path)?;
    print(&format!(
        "{}: schema version {before} -> {after}; {indexed} line(s) added to the search index\n",
        path.display()
    ))?;
    Ok(0)
}

/// `acptap vacuum`.
pub(in crate::cli) fn vacuum(args: DbOnlyArgs, _config: &Config) -> anyhow::Result<i32> {
    let path = args.db.path()?;
    let before = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    args.db.open()?.vacuum()?;
    let after = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    print(&format!("{}: {before} -> {after} bytes\n", path.display()))?;
    Ok(0)
}
