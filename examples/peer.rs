//! A scriptable fake ACP peer for acptap's integration tests (built by `cargo test`).
//!
//! ```text
//! peer script FILE.jsonl          play the agent side of a recorded transcript (the format of
//!                                 shared/samples): write its a2c lines, and check that every c2a
//!                                 line arrives byte for byte, in order; exit 1 on a difference
//! peer sink EMIT CAPTURE          write the bytes of file EMIT to stdout in uneven chunks while
//!                                 copying stdin to file CAPTURE, until both are done
//! peer crash-mid-line             write half a line, then die by SIGKILL
//! peer exit CODE                  write one line, then exit with CODE
//! peer linger PIDFILE [--ignore-term]
//!                                 write its pid, ignore stdin EOF and stay (optionally deaf to
//!                                 SIGTERM), so only a signal ends it
//! peer slow-term PIDFILE          write its pid; on SIGTERM wait 300 ms, write "bye", exit 0
//! peer stream N SIZE              write N lines of SIZE bytes, then read stdin to EOF
//! peer tool-diffs N SIZE          write N tool calls of session s1, each announced with a diff
//!                                 of SIZE bytes and then completed, then read stdin to EOF
//! ```

use std::io::{BufRead, BufReader, Read, Write};
use std::time::Duration;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| -> &str {
        args.get(i).map(String::as_str).unwrap_or_else(|| {
            eprintln!("peer: missing argument {i}; see the usage at the top of examples/peer.rs");
            std::process::exit(2)
        })
    };
    match arg(0) {
        "script" => script(arg(1)),
        "sink" => sink(arg(1), arg(2)),
        "crash-mid-line" => {
            let mut out = std::io::stdout();
            out.write_all(br#"{"jsonrpc":"2.0","method":"session/upd"#)
                .unwrap();
            out.flush().unwrap();
            // SAFETY: raising a signal at ourselves has no memory-safety preconditions.
            unsafe { libc::raise(libc::SIGKILL) };
        }
        "exit" => {
            println!(r#"{{"jsonrpc":"2.0","method":"_peer/bye","params":{{}}}}"#);
            std::process::exit(arg(1).parse().expect("an exit code"));
        }
        "linger" => {
            write_pid(arg(1));
            if args.iter().any(|a| a == "--ignore-term") {
                // SAFETY: setting a signal disposition to SIG_IGN is always sound.
                unsafe { libc::signal(libc::SIGTERM, libc::SIG_IGN) };
            }
            let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
            loop {
                std::thread::sleep(Duration::from_secs(60));
            }
        }
        "slow-term" => {
            write_pid(arg(1));
            let mut signals = signal_hook::iterator::Signals::new([libc::SIGTERM]).unwrap();
            println!(r#"{{"jsonrpc":"2.0","method":"_peer/ready","params":{{}}}}"#);
            if signals.forever().next().is_some() {
                std::thread::sleep(Duration::from_millis(300));
                println!(r#"{{"jsonrpc":"2.0","method":"_peer/bye","params":{{}}}}"#);
                std::process::exit(0);
            }
        }
        "stream" => {
            let (n, size): (usize, usize) = (arg(1).parse().unwrap(), arg(2).parse().unwrap());
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            for i in 0..n {
                let head = format!(
                    r#"{{"jsonrpc":"2.0","method":"_peer/tick","params":{{"i":{i},"pad":""#
                );
                let pad = size.saturating_sub(head.len() + 4);
                out.write_all(head.as_bytes()).unwrap();
                out.write_all(&vec![b'x'; pad]).unwrap();
                out.write_all(b"\"}}\n").unwrap();
            }
            out.flush().unwrap();
            drop(out);
            let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
        }
        "tool-diffs" => {
            let (n, size): (usize, usize) = (arg(1).parse().unwrap(), arg(2).parse().unwrap());
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            let text = "x".repeat(size);
            for i in 0..n {
                let update = |update: serde_json::Value| {
                    serde_json::json!({"jsonrpc": "2.0", "method": "session/update",
                        "params": {"sessionId": "s1", "update": update}})
                };
                let announce = update(serde_json::json!({"sessionUpdate": "tool_call",
                    "toolCallId": format!("t{i}"), "title": "Edit", "kind": "edit",
                    "rawInput": {"file_path": format!("/p/f{i}.txt")},
                    "content": [{"type": "diff", "path": format!("/p/f{i}.txt"), "oldText": null, "newText": text}]}));
                let done = update(serde_json::json!({"sessionUpdate": "tool_call_update",
                    "toolCallId": format!("t{i}"), "status": "completed"}));
                for line in [announce, done] {
                    serde_json::to_writer(&mut out, &line).unwrap();
                    out.write_all(b"\n").unwrap();
                }
            }
            out.flush().unwrap();
            drop(out);
            let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
        }
        other => {
            eprintln!("peer: unknown mode `{other}`");
            std::process::exit(2);
        }
    }
}

fn write_pid(path: &str) {
    std::fs::write(path, std::process::id().to_string()).expect("write the pid file");
}

fn script(path: &str) {
    let text = std::fs::read_to_string(path).expect("read the transcript");
    let mut input = BufReader::new(std::io::stdin().lock());
    let mut out = std::io::stdout().lock();
    for (n, record) in text.lines().enumerate() {
        let record: serde_json::Value = serde_json::from_str(record).expect("a transcript record");
        let mut line = record["text"].as_str().expect("text").as_bytes().to_vec();
        if record["eol"].as_bool().unwrap_or(true) {
            line.push(b'\n');
        }
        match record["dir"].as_str() {
            Some("a2c") => {
                out.write_all(&line).unwrap();
                out.flush().unwrap();
            }
            Some("c2a") => {
                let mut got = Vec::new();
                input.read_until(b'\n', &mut got).unwrap();
                if got != line {
                    eprintln!(
                        "peer: record {n}: expected {:?}\n  got {:?}",
                        String::from_utf8_lossy(&line),
                        String::from_utf8_lossy(&got)
                    );
                    std::process::exit(1);
                }
            }
            _ => {}
        }
    }
    let mut rest = Vec::new();
    input.read_to_end(&mut rest).unwrap();
    if !rest.is_empty() {
        eprintln!("peer: {} unexpected bytes after the script", rest.len());
        std::process::exit(1);
    }
}

fn sink(emit: &str, capture: &str) {
    let bytes = std::fs::read(emit).expect("read the bytes to emit");
    let writer = std::thread::spawn(move || {
        let mut out = std::io::stdout().lock();
        // Uneven chunks, so lines are split across writes and reads at odd places.
        let mut sizes = [1usize, 7, 4096, 3, 65_536, 13, 100_000].iter().cycle();
        let mut rest = &bytes[..];
        while !rest.is_empty() {
            let n = (*sizes.next().unwrap()).min(rest.len());
            out.write_all(&rest[..n]).unwrap();
            out.flush().unwrap();
            rest = &rest[n..];
        }
    });
    let mut received = Vec::new();
    std::io::stdin().read_to_end(&mut received).unwrap();
    std::fs::write(capture, received).expect("write the capture");
    writer.join().unwrap();
}
