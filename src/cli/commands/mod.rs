//! One file per command (or family of commands): each builds what it needs from its arguments
//! and the config file, calls the library, and prints.

pub(super) mod check;
pub(super) mod doctor;
pub(super) mod maintenance;
pub(super) mod manual;
pub(super) mod redact;
pub(super) mod replay;
pub(super) mod run;
pub(super) mod transfer;
pub(super) mod views;
