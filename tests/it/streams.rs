//! Arbitrary bytes both ways through the binary: they come out identical, and every line is
//! recorded exactly once.

use std::io::{Read, Write};
use std::time::Duration;

use proptest::prelude::*;

use crate::util::{Sandbox, finish};

/// A stream built from segments of any bytes (so `\n`, `\r`, NUL and invalid UTF-8 all occur),
/// each optionally followed by a `\n`; some segments are long enough to span many reads.
fn stream() -> impl Strategy<Value = Vec<u8>> {
    let segment = prop_oneof![
        8 => prop::collection::vec(any::<u8>(), 0..200),
        1 => prop::collection::vec(any::<u8>(), 0..300_000),
    ];
    prop::collection::vec((segment, any::<bool>()), 0..60).prop_map(|segments| {
        let mut bytes = Vec::new();
        for (segment, newline) in segments {
            bytes.extend(segment);
            if newline {
                bytes.push(b'\n');
            }
        }
        bytes
    })
}

/// The lines the recorder should see: split after each `\n`, plus an unterminated tail.
fn lines(bytes: &[u8]) -> usize {
    bytes.split_inclusive(|b| *b == b'\n').count()
}

/// What came out at each end of `acptap run` with the `sink` peer as the agent.
struct Ends {
    to_client: Vec<u8>,
    to_agent: Vec<u8>,
}

/// Writes `to_agent` into the proxy in `chunk`-sized writes while the peer emits `to_client`.
fn through_proxy(sandbox: &Sandbox, to_agent: &[u8], to_client: &[u8], chunk: usize) -> Ends {
    let (mut child, capture) = sandbox.proxy_to_sink(to_client);
    let mut stdin = child.stdin.take().unwrap();
    let input = to_agent.to_vec();
    let writer = std::thread::spawn(move || {
        for part in input.chunks(chunk.max(1)) {
            stdin.write_all(part).unwrap();
            stdin.flush().unwrap();
        }
    });
    let mut received = Vec::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_end(&mut received)
        .unwrap();
    writer.join().unwrap();
    let output = finish(child, Duration::from_secs(120));
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ends {
        to_client: received,
        to_agent: std::fs::read(&capture).unwrap(),
    }
}

fn round_trip(to_agent: &[u8], to_client: &[u8], chunk: usize) -> Result<(), TestCaseError> {
    let sandbox = Sandbox::new();
    let ends = through_proxy(&sandbox, to_agent, to_client, chunk);
    prop_assert!(
        ends.to_client == to_client,
        "the client received different bytes"
    );
    prop_assert!(
        ends.to_agent == to_agent,
        "the agent received different bytes"
    );
    prop_assert!(sandbox.recorded_stream(1, "c2a") == to_agent);
    prop_assert!(sandbox.recorded_stream(1, "a2c") == to_client);
    let count = |dir: &str| {
        sandbox.count(&format!(
            "SELECT count(*) FROM messages WHERE direction = '{dir}'"
        )) as usize
    };
    prop_assert_eq!(count("c2a"), lines(to_agent));
    prop_assert_eq!(count("a2c"), lines(to_client));
    prop_assert_eq!(
        sandbox.count("SELECT count(DISTINCT seq) FROM messages"),
        sandbox.count("SELECT count(*) FROM messages")
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_pass_through_unchanged_and_are_recorded_once(
        to_agent in stream(),
        to_client in stream(),
        chunk in 1usize..5000,
    ) {
        round_trip(&to_agent, &to_client, chunk)?;
    }
}

#[test]
fn crlf_empty_lines_batches_and_unterminated_tail() {
    let to_agent = b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\"}\r\n\n[{\"jsonrpc\":\"2.0\",\"method\":\"a\"}]\n\xff\xfe{bad\n{\"_meta\":{\"x\":1},\"method\":\"_custom/thing\"}\nno newline at the end";
    let to_client = b"{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{}}\r\n\n";
    round_trip(to_agent, to_client, 3).unwrap();
}

#[test]
fn a_line_over_64_mib_is_forwarded_whole_and_recorded_truncated() {
    let mut big = Vec::with_capacity(65 * 1024 * 1024 + 100);
    big.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":\"_big\",\"params\":\"");
    big.resize(65 * 1024 * 1024, b'a');
    big.extend_from_slice(b"\"}\n{\"jsonrpc\":\"2.0\",\"method\":\"_after\"}\n");
    let sandbox = Sandbox::new();
    let ends = through_proxy(&sandbox, b"", &big, 1);
    assert!(ends.to_client == big, "the big line changed on the way");
    let (size, kept, truncated): (i64, i64, bool) = sandbox
        .conn()
        .query_row(
            "SELECT size, length(raw), truncated FROM messages WHERE direction = 'a2c' ORDER BY seq LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(size as usize, 65 * 1024 * 1024 + 3);
    assert_eq!(kept as usize, 64 * 1024 * 1024);
    assert!(truncated);
    assert_eq!(
        sandbox
            .count("SELECT count(*) FROM messages WHERE direction = 'a2c' AND method = '_after'"),
        1
    );
}

#[test]
fn a_multi_megabyte_line_is_recorded_exactly() {
    // Lines over 1 MiB are written into the database in pieces: the bytes must still be exact.
    let mut line: Vec<u8> = (0..3 * 1024 * 1024 + 17)
        .map(|i| b'a' + (i % 23) as u8)
        .collect();
    line.push(b'\n');
    let sandbox = Sandbox::new();
    let ends = through_proxy(&sandbox, &line, &line, 65_536);
    assert!(ends.to_agent == line && ends.to_client == line);
    assert!(sandbox.recorded_stream(1, "c2a") == line);
    assert!(sandbox.recorded_stream(1, "a2c") == line);
}
