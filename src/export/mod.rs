//! What leaves acptap as files for other tools: transcripts (`acptap export --format jsonl`) and
//! the ACP conductor's trace format (`--format trace`); and a session as OpenTelemetry spans
//! (`spans`), sent over OTLP by `otlp` (`--format otlp`), or while a session runs by `live`
//! (`acptap run --otlp`). Every export reads through the read-only
//! `query::Reader`.

pub(crate) mod live;
pub(crate) mod otlp;
pub mod spans;
pub mod trace;
pub(crate) mod transcript;
