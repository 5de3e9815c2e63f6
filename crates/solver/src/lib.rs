//! Kalah rules, positions and endgame databases.
//!
//! - [`rules`]: the rule set as a value, every variant players use.
//! - [`board`]: the houses seen by the player to move, sowing, captures and the end of the game.
//! - [`position`]: a full position with stores and the side to move.
//! - [`notation`]: reading positions typed by people.
//! - [`db`]: endgame databases by seed count, and [`endgame`]: what a search asks of them.
//!
//! Values are always those of the player to move: the net number of seeds that player will
//! still gain from the seeds now in the houses, with perfect play by both sides.

#![warn(missing_docs)]

pub mod board;
pub mod db;
pub mod endgame;
pub mod exhaustive;
pub mod notation;
pub mod position;
pub mod rules;

pub use board::{Board, Sowing};
pub use db::{Database, DbError};
pub use endgame::Endgame;
pub use exhaustive::Exhaustive;
pub use notation::{parse_position, NotationError};
pub use position::{Position, Score, Side};
pub use rules::{Capture, EndRule, Leftover, Rules, RulesError, MAX_HOUSES, MAX_SEEDS};
