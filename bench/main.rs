//! `acptap-bench`: the benchmark, a binary of its own beside the product (docs/performance.md).
//!
//! It measures the `acptap` built next to it in the same target directory (`proxy.rs`: the proxy
//! against a plain pipe; `read.rs`: the read side's commands), and is its own agent for those runs
//! (the hidden `peer` subcommand). It uses only the library's public API.

mod proxy;
mod read;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

/// Measure the proxy against a plain pipe (see docs/performance.md).
///
/// It runs the `acptap` built beside it (`cargo build --release` builds both).
#[derive(Debug, Parser)]
#[command(name = "acptap-bench", version, args_conflicts_with_subcommands = true)]
struct Cli {
    /// Small workloads: checks that every way completes and the bytes match, in seconds. Its
    /// figures mean nothing.
    #[arg(long)]
    quick: bool,
    /// Also run every workload through the ACP conductor at PATH (`agent-client-protocol-conductor`),
    /// without and with `--trace`, as a reference point: smaller workloads, and messages compared
    /// as JSON values, since it re-serialises them. Not run by default.
    #[arg(long, value_name = "PATH")]
    conductor: Option<PathBuf>,
    /// Time the read side instead (`sessions`, `stats`, `tools`, `show`, `report`, `policy
    /// replay`) on a database it builds: 3 sessions of 20,000 tool turns (`--quick`: 1 of 500).
    #[arg(long)]
    read: bool,
    /// Run only the workloads whose name contains TEXT (`stream`, `1 KiB`, `tools`, ...).
    #[arg(long, value_name = "TEXT")]
    only: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    #[command(subcommand)]
    command: Option<Hidden>,
}

#[derive(Debug, Subcommand)]
enum Hidden {
    /// The agent side of the benchmark: `peer [--via-conductor REPORT] MODE ...`.
    #[command(hide = true)]
    Peer {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Writes the read benchmark's session as a transcript and prints its line count (the ui's
    /// browser test opens one of 60,000 turns).
    #[command(hide = true)]
    Session {
        /// The session's number: its id is `bench-read-INDEX`.
        #[arg(long, default_value_t = 0)]
        index: usize,
        /// How many tool turns.
        #[arg(long)]
        turns: usize,
        /// The transcript to write.
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
    },
    /// Writes a stream workload's lines (as the agent sends them), for profiling the recorder on
    /// them (bench/breakdown.sh): `--transcript` writes them as a transcript to import instead.
    #[command(hide = true)]
    Stream {
        /// Bytes per line.
        #[arg(long)]
        size: usize,
        /// How many lines.
        #[arg(long)]
        count: usize,
        /// As a transcript (for `acptap import`).
        #[arg(long)]
        transcript: bool,
        /// The file to write.
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
    },
}

fn main() -> ExitCode {
    bound_allocator_caches();
    match run(Cli::parse()) {
        Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
        Err(e) => {
            // A closed stdout (`acptap-bench | head`) is not an error worth reporting.
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::SUCCESS;
            }
            eprintln!("acptap-bench: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// The same allocator setting as the product's (see `acptap::cli::main`), so that the client side
/// of the benchmark runs as it did when it was `acptap bench`.
fn bound_allocator_caches() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only tunes the allocator; it is called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 * 1024);
    }
}

fn run(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Some(Hidden::Peer { args }) => {
            proxy::peer(&args)?;
            return Ok(0);
        }
        Some(Hidden::Session {
            index,
            turns,
            output,
        }) => {
            let lines = read::session(index, turns, &output)
                .with_context(|| format!("cannot write {}", output.display()))?;
            print(&format!("{lines}\n"))?;
            return Ok(0);
        }
        Some(Hidden::Stream {
            size,
            count,
            transcript,
            output,
        }) => {
            proxy::write_stream(size, count, transcript, &output)
                .with_context(|| format!("cannot write {}", output.display()))?;
            return Ok(0);
        }
        None => {}
    }
    let acptap = product_binary()?;
    if cli.read {
        let report = read::run(&acptap, cli.quick)?;
        if cli.json {
            print_json(&report)?;
        } else {
            print(&read::render(&report))?;
        }
        return Ok(if report.timings.iter().all(|t| t.ok) {
            0
        } else {
            1
        });
    }
    let report = proxy::run(
        &acptap,
        cli.quick,
        cli.conductor.as_deref(),
        cli.only.as_deref(),
    )?;
    if cli.json {
        print_json(&report)?;
    } else {
        print(&proxy::render(&report))?;
    }
    // A workload the conductor could not run is reported as skipped, not as a mismatch.
    let all_match = report
        .measurements
        .iter()
        .all(|m| m.bytes_match || m.skipped.is_some());
    if !all_match {
        eprintln!("acptap-bench: some bytes did not arrive as sent: see the BYTES column");
    }
    Ok(if all_match { 0 } else { 1 })
}

/// The product binary measured: `acptap` in this binary's own directory (the same target
/// directory, the same profile).
fn product_binary() -> anyhow::Result<PathBuf> {
    let path = std::env::current_exe()
        .context("cannot find acptap-bench's own path")?
        .with_file_name("acptap");
    if !is_file(&path) {
        anyhow::bail!(
            "{} is not there: acptap-bench measures the acptap built beside it; build both with \
             `cargo build --release` (or `cargo build` for target/debug)",
            path.display()
        );
    }
    Ok(path)
}

fn is_file(path: &Path) -> bool {
    path.metadata().is_ok_and(|m| m.is_file())
}

fn print(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// `value` as pretty JSON, as `acptap --json` writes it (`acptap::terminal::json_terminal_safe`).
fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    let mut text = acptap::terminal::json_terminal_safe(serde_json::to_string_pretty(value)?);
    text.push('\n');
    Ok(print(&text)?)
}
