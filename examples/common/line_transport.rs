//! The line transport shared by the SDK test peers (`sdk_agent.rs`, `sdk_client.rs`), included
//! by each with `#[path]`: not an example of its own.

use agent_client_protocol::{Channel, TransportFrame};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// Carries SDK frames over a newline-delimited byte stream pair.
///
/// The SDK's own adapters for this sit behind its `stdio` and `process` features, which this
/// crate does not enable; this is the same framing (one JSON value per line,
/// parsed and serialized by the SDK) on tokio I/O. A detached task reads lines
/// and closes the SDK's inbound half at EOF; the returned task writes until
/// the SDK drops its outbound half, then closes the writer.
pub fn pump_lines(
    reader: impl AsyncRead + Unpin + Send + 'static,
    mut writer: impl AsyncWrite + Unpin + Send + 'static,
    io_end: Channel,
) -> tokio::task::JoinHandle<anyhow::Result<()>> {
    let (mut from_sdk, to_sdk) = io_end.into_parts();
    tokio::spawn(async move {
        let mut lines = BufReader::new(reader).lines();
        loop {
            match lines.next_line().await {
                // Once the SDK is gone, keep draining so the peer never sees EPIPE.
                Ok(Some(line)) => drop(to_sdk.unbounded_send(TransportFrame::parse_json(&line))),
                Ok(None) => break,
                Err(err) => {
                    eprintln!("{}: reading: {err}", env!("CARGO_CRATE_NAME"));
                    break;
                }
            }
        }
    });
    tokio::spawn(async move {
        while let Ok(frame) = from_sdk.recv().await {
            let mut line = frame
                .to_json()
                .map_err(|err| anyhow::anyhow!("serializing a frame: {err}"))?;
            line.push('\n');
            writer.write_all(line.as_bytes()).await?;
            writer.flush().await?;
        }
        writer.shutdown().await?;
        Ok(())
    })
}
