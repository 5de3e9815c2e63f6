//! What a search needs from an endgame database: the exact value of any board small enough.

use crate::board::Board;
use crate::db::DbError;

/// A source of exact values for boards with few seeds.
///
/// Implementations are shared by the threads of a search, so probes take `&self`.
pub trait Endgame: Send + Sync {
    /// The most seeds in the houses for which every board has a value here (levels
    /// `0..=max_seeds()` are all present).
    fn max_seeds(&self) -> u32;

    /// The value of `board` for the player to move, or `None` when the board holds more than
    /// [`Endgame::max_seeds`] seeds. An error means the database could not answer (for example a
    /// corrupt block); it is never replaced by a guess.
    fn probe(&self, board: &Board) -> Result<Option<i32>, DbError>;

    /// A hint that `board` will be probed soon: an implementation may start bringing its
    /// value into the processor's cache so that several probes overlap their memory latency.
    /// Changes nothing but speed; the default does nothing.
    fn prefetch(&self, board: &Board) {
        let _ = board;
    }

    /// Whether a probe is a plain memory read (after [`Endgame::prefetch`]), so that a cache
    /// of values in front of it would only cost time. The default says no.
    fn probes_are_cheap(&self) -> bool {
        false
    }
}
