//! `acptap completions` and `acptap man`: shell completion scripts and manual pages, both made
//! from the clap definitions (`clap_complete`, `clap_mangen`), so they never drift from the
//! command line they describe.

use std::io::Write as _;
use std::path::Path;

use anyhow::Context as _;
use clap::CommandFactory as _;

use super::super::Cli;

/// The completion script for `shell`, on stdout.
pub(in crate::cli) fn completions(shell: clap_complete::Shell) -> anyhow::Result<i32> {
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "acptap", &mut script);
    std::io::stdout().lock().write_all(&script)?;
    Ok(0)
}

/// `acptap.1` on stdout; with `dir`, it and a page per visible command, at every depth
/// (`acptap-policy.1`, `acptap-policy-check.1`, ...), written into `dir`.
pub(in crate::cli) fn man(dir: Option<&Path>) -> anyhow::Result<i32> {
    // No pages for clap's own `help` subcommand (`--help` is on every page), and every command
    // named by its place in the tree: `display_name` `acptap-policy-check` titles the page and
    // names the file (and is how a parent's SUBCOMMANDS section refers to it), `bin_name`
    // `acptap policy check` is the SYNOPSIS, as a user types it.
    let mut command = Cli::command().disable_help_subcommand(true);
    command.build();
    let Some(dir) = dir else {
        let mut page = Vec::new();
        page_of(command).render(&mut page)?;
        std::io::stdout().lock().write_all(&page)?;
        return Ok(0);
    };
    if std::fs::symlink_metadata(dir).is_ok() && !dir.is_dir() {
        anyhow::bail!(
            "{} is not a directory: name a directory for the pages (it is created if missing), \
             a `man1` directory such as ~/.local/share/man/man1",
            dir.display()
        );
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut written = Vec::new();
    write_pages(dir, &command, &mut written)?;
    let mut out = std::io::stdout().lock();
    for path in written {
        writeln!(out, "{path}")?;
    }
    Ok(0)
}

/// The page of `command` (built, so named by its place in the tree), then those of its visible
/// subcommands, recursively: every page a SUBCOMMANDS section names is written.
fn write_pages(
    dir: &Path,
    command: &clap::Command,
    written: &mut Vec<String>,
) -> anyhow::Result<()> {
    let name = command.get_display_name().unwrap_or(command.get_name());
    write_page(dir, name, command.clone(), written)?;
    for sub in command.get_subcommands().filter(|c| !c.is_hide_set()) {
        write_pages(dir, sub, written)?;
    }
    Ok(())
}

/// `NAME.1` in `dir`, for `command` (named `NAME`, as `man` will look it up). Whatever is at that
/// path is replaced, never written through: a symbolic link there is removed, not followed.
fn write_page(
    dir: &Path,
    name: &str,
    command: clap::Command,
    written: &mut Vec<String>,
) -> anyhow::Result<()> {
    let path = dir.join(format!("{name}.1"));
    let mut page = Vec::new();
    page_of(command).render(&mut page)?;
    match std::fs::symlink_metadata(&path) {
        Ok(meta) if meta.is_dir() => {
            anyhow::bail!("cannot write {}: it is a directory", path.display())
        }
        Ok(_) => std::fs::remove_file(&path)
            .with_context(|| format!("cannot replace {}", path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("cannot write {}", path.display())),
    }
    // `create_new`: should something appear at the path meanwhile, fail rather than follow it.
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .and_then(|mut file| file.write_all(&page))
        .with_context(|| format!("cannot write {}", path.display()))?;
    written.push(path.display().to_string());
    Ok(())
}

/// The page of `command`, its source line naming acptap (not the subcommand) and its version.
fn page_of(command: clap::Command) -> clap_mangen::Man {
    clap_mangen::Man::new(command).source(format!("acptap {}", env!("CARGO_PKG_VERSION")))
}
