//! The subcommands of the `kalah` tool, one module each.

pub mod common;
pub mod db;
pub mod play;
pub mod prove;
pub mod query;
pub mod serve;
pub mod solve;
pub mod verify;
