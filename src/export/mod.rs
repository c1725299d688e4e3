//! What leaves acptap as files for other tools: transcripts (`acptap export --format jsonl`) and
//! the ACP conductor's trace format (`--format trace`). Every export reads through the read-only
//! `record::Reader`.

pub mod trace;
pub mod transcript;
