//! The search that proves Kalah values over the endgame databases.
//!
//! The `kalah` program (crate `kalah`) is a thin layer over this crate and `kalah-solver`.

#![warn(missing_docs)]

pub mod analyse;
pub mod book;
pub mod prove;
pub mod results;
pub mod search;
mod write_renamed;

pub use search::{Analysis, Goal, Pie, PieTurn, Progress, Search, SearchConfig, SearchError};
