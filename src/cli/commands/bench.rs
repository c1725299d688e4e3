//! `acptap bench`: the proxy measured against a plain pipe.

use super::super::config::Config;
use super::super::{BenchArgs, print, print_json};

/// `acptap bench`.
pub(in crate::cli) fn bench(args: BenchArgs, _config: &Config) -> anyhow::Result<i32> {
    if args.read {
        let report = crate::bench_read::run(args.quick)?;
        if args.json {
            print_json(&report)?;
        } else {
            print(&crate::bench_read::render(&report))?;
        }
        return Ok(if report.timings.iter().all(|t| t.ok) {
            0
        } else {
            1
        });
    }
    let report = crate::bench::run(args.quick, args.conductor.as_deref(), args.only.as_deref())?;
    if args.json {
        print_json(&report)?;
    } else {
        print(&crate::bench::render(&report))?;
    }
    // A workload the conductor could not run is reported as skipped, not as a mismatch.
    let all_match = report
        .measurements
        .iter()
        .all(|m| m.bytes_match || m.skipped.is_some());
    if !all_match {
        eprintln!("acptap: some bytes did not arrive as sent: see the BYTES column");
    }
    Ok(if all_match { 0 } else { 1 })
}
