//! acptap's integration tests: one binary, the built `acptap` between real processes.

mod demo;
mod faults;
mod lifecycle;
mod policy;
mod samples;
mod sdk;
mod streams;
mod util;
