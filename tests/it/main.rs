//! acptap's integration tests: one binary, the built `acptap` between real processes.

mod check;
mod cli_values;
mod demo;
mod differential;
mod faults;
mod inspect;
mod lifecycle;
mod memory;
mod otlp;
mod policy;
mod policy_corpora;
mod policy_corpus;
mod policy_effects;
mod readonly;
mod redaction;
mod replay;
mod report;
mod samples;
mod sdk;
mod spans;
mod streams;
mod terminal;
mod trace;
mod transcripts;
mod ui;
mod util;
