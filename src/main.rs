//! The `acptap` binary: parse the command line, run it, turn the outcome into an exit status.

use std::process::ExitCode;

fn main() -> ExitCode {
    acptap::cli::main()
}
