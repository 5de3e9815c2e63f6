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
    /// It may return where the value lies (an implementation-defined number, for example the
    /// board's index in its level), to be handed to [`Endgame::probe_located`] for the same
    /// board so that the work of finding it is not done twice. Changes nothing but speed; the
    /// default does nothing and returns `None`.
    fn prefetch(&self, board: &Board) -> Option<u64> {
        let _ = board;
        None
    }

    /// [`Endgame::probe`] of a board for which [`Endgame::prefetch`] of this same database
    /// returned `place`. The result is the same as `probe(board)`; passing a place that
    /// `prefetch` did not return for this board is a logic error (the answer may be wrong).
    /// The default ignores the place.
    fn probe_located(&self, board: &Board, place: Option<u64>) -> Result<Option<i32>, DbError> {
        let _ = place;
        self.probe(board)
    }

    /// Whether a probe is a plain memory read (after [`Endgame::prefetch`]), so that a cache
    /// of values in front of it would only cost time. The default says no.
    fn probes_are_cheap(&self) -> bool {
        false
    }
}
