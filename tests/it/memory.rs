//! Memory stays bounded however much a session says: 1500 tool calls, each with a 390 KiB diff,
//! through `acptap run` with and without a policy. The proxy's peak resident set (VmHWM, read
//! from /proc while it is still running) stays under 96 MiB.

use std::ffi::OsStr;
use std::io::Read;
use std::time::Duration;

use crate::util::{Sandbox, eventually, example_bin, finish};

const CALLS: usize = 1500;
const DIFF_BYTES: usize = 390 * 1024;
const LIMIT_KIB: u64 = 96 * 1024;

fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status")
}

fn run(with_policy: bool) -> u64 {
    let sb = Sandbox::new();
    let policy = sb.path("policy.toml");
    std::fs::write(
        &policy,
        "version = 1\n[[rule]]\nid = \"edits\"\ndecision = \"allow\"\nkind = \"edit\"\npaths = [\"/p/**\"]\n",
    )
    .unwrap();
    let mut extra = Vec::new();
    if with_policy {
        extra = vec!["--policy", policy.to_str().unwrap()];
    }
    let peer = example_bin("peer");
    let (calls, size) = (CALLS.to_string(), DIFF_BYTES.to_string());
    let mut child = sb.proxy(
        &extra,
        &[
            peer.as_os_str(),
            OsStr::new("tool-diffs"),
            OsStr::new(&calls),
            OsStr::new(&size),
        ],
    );
    // The client reads every line the agent writes.
    let mut stdout = child.stdout.take().unwrap();
    let mut lines = 0;
    let mut buffer = vec![0; 1 << 20];
    while lines < CALLS * 2 {
        let n = stdout.read(&mut buffer).unwrap();
        assert!(n > 0, "acptap ended after {lines} lines");
        lines += buffer[..n].iter().filter(|b| **b == b'\n').count();
    }
    // Wait until the recorder has stored every tool call, then read the peak.
    let recorded = eventually(Duration::from_secs(120), || {
        sb.count("SELECT count(*) FROM tool_calls WHERE status = 'completed'") == CALLS as i64
    });
    assert!(
        recorded,
        "the recorder did not store the {CALLS} tool calls"
    );
    let peak = peak_rss_kib(child.id());
    drop(child.stdin.take());
    let output = finish(child, Duration::from_secs(60));
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // What was recorded is whole: the full diff of the last call, not the state's cut copy.
    let stored: i64 = sb.count(&format!(
        "SELECT length(json_extract(content, '$[0].newText')) FROM tool_calls WHERE tool_call_id = 't{}'",
        CALLS - 1
    ));
    assert_eq!(stored, DIFF_BYTES as i64);
    peak
}

#[test]
fn fifteen_hundred_large_diffs_stay_under_96_mib() {
    for with_policy in [false, true] {
        let peak = run(with_policy);
        eprintln!("peak RSS with_policy={with_policy}: {peak} KiB");
        assert!(
            peak <= LIMIT_KIB,
            "peak RSS {peak} KiB with_policy={with_policy}: above {LIMIT_KIB} KiB"
        );
    }
}
