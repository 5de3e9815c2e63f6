//! The subcommands of the `kalah` tool, one module each.

pub mod book;
pub mod common;
pub mod db;
pub mod engine;
pub mod moves;
pub mod prove;
pub mod query;
pub mod results;
pub mod serve;
pub mod show;
pub mod solve;
pub mod verify;
