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

/// `acptap.1` on stdout; with `dir`, it and a page per visible command written into `dir`.
pub(in crate::cli) fn man(dir: Option<&Path>) -> anyhow::Result<i32> {
    let command = Cli::command();
    let Some(dir) = dir else {
        let mut page = Vec::new();
        clap_mangen::Man::new(command).render(&mut page)?;
        std::io::stdout().lock().write_all(&page)?;
        return Ok(0);
    };
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut written = Vec::new();
    write_page(dir, "acptap", command.clone(), &mut written)?;
    for sub in command.get_subcommands().filter(|c| !c.is_hide_set()) {
        let name = format!("acptap-{}", sub.get_name());
        write_page(dir, &name, sub.clone().name(name.clone()), &mut written)?;
    }
    let mut out = std::io::stdout().lock();
    for path in written {
        writeln!(out, "{path}")?;
    }
    Ok(0)
}

/// `NAME.1` in `dir`, for `command` (named `NAME`, as `man` will look it up).
fn write_page(
    dir: &Path,
    name: &str,
    command: clap::Command,
    written: &mut Vec<String>,
) -> anyhow::Result<()> {
    let path = dir.join(format!("{name}.1"));
    let mut page = Vec::new();
    clap_mangen::Man::new(command).render(&mut page)?;
    std::fs::write(&path, page).with_context(|| format!("cannot write {}", path.display()))?;
    written.push(path.display().to_string());
    Ok(())
}
