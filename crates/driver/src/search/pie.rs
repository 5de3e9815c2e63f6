//! The value of a start position under the pie rule.
//!
//! South plays a whole first turn: one move, and more while the last seed lands in South's store
//! (extra turns), until the turn passes to North or the game ends. North may then swap sides,
//! taking over South's houses and store, with the original South to move as North. North picks
//! whichever gives North the larger final margin; South picks the first turn that leaves North
//! the least. If `M` is South's final margin after a first turn with North playing on (perfect
//! play after it), North gets `max(-M, M) = |M|`, so the value of the game for South under the
//! pie rule is `-min |M|` over South's first turns: never above 0.

use super::{Progress, Search, SearchError};
use kalah_solver::Board;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// One first turn of South.
#[derive(Clone, Debug, PartialEq)]
pub struct PieTurn {
    /// South's moves (0-based houses), the last one passing the turn or ending the game.
    pub moves: Vec<usize>,
    /// Seeds South put in its store during the turn.
    pub south_gain: i32,
    /// South's final margin if North plays on, when `exact`; otherwise a bound with the sign of
    /// the margin and `|margin| <= |M|`, showing the turn worse than the best one (it was not
    /// solved further).
    pub margin: i32,
    /// Whether `margin` is exact.
    pub exact: bool,
}

/// The result of [`Search::pie`].
#[derive(Clone, Debug, PartialEq)]
pub struct Pie {
    /// South's final margin under the pie rule with perfect play: `-min |M|`.
    pub value: i32,
    /// Every first turn of South.
    pub turns: Vec<PieTurn>,
    /// Indices in `turns` of the best first turns (those leaving North `-value`).
    pub best: Vec<usize>,
    /// Nodes searched.
    pub nodes: u64,
    /// Seconds spent.
    pub seconds: f64,
}

/// Where a first turn ends.
enum End {
    /// North to move on this board (seen by North).
    North(Board),
    /// The game ended during South's turn with this final value for South.
    Over(i32),
}

impl Search {
    /// South's first turns from `board` (South to move, stores level).
    fn first_turns(
        &self,
        board: &Board,
        moves: &mut Vec<usize>,
        gain: i32,
        out: &mut Vec<(Vec<usize>, i32, End)>,
    ) {
        let rules = self.rules();
        for h in board.legal_houses() {
            let s = board.sow(&rules, h);
            let g = gain + s.gain as i32;
            let next = s.next();
            moves.push(h);
            if !s.extra_turn {
                out.push((moves.clone(), g, End::North(next)));
            } else if let Some(v) = next.final_value(&rules) {
                out.push((moves.clone(), g, End::Over(v)));
            } else {
                self.first_turns(&next, moves, g, out);
            }
            moves.pop();
        }
    }

    /// The value for South of `board` (South to move, equal stores) under the pie rule (see the
    /// module documentation), with every first turn of South.
    pub fn pie(
        &self,
        board: &Board,
        progress: &(dyn Fn(&Progress) + Sync),
        cancel: &AtomicBool,
    ) -> Result<Pie, SearchError> {
        self.turns(board, false, progress, cancel)
    }

    /// The exact value of every first turn of South from `board` (South to move, equal
    /// stores): South's final margin after the turn with perfect play on both sides. The
    /// start's value is the largest margin, its value under the pie rule `-min |M|`; unlike
    /// [`Search::pie`], every turn is solved exactly (`exact` is always true).
    pub fn first_turn_values(
        &self,
        board: &Board,
        progress: &(dyn Fn(&Progress) + Sync),
        cancel: &AtomicBool,
    ) -> Result<Pie, SearchError> {
        self.turns(board, true, progress, cancel)
    }

    fn turns(
        &self,
        board: &Board,
        all_exact: bool,
        progress: &(dyn Fn(&Progress) + Sync),
        cancel: &AtomicBool,
    ) -> Result<Pie, SearchError> {
        let start = Instant::now();
        let mut ends = Vec::new();
        self.first_turns(board, &mut Vec::new(), 0, &mut ends);
        let mut nodes = 0;
        let mut turns: Vec<PieTurn> = Vec::new();
        // The least |M| so far: turns are solved only within (-best, best).
        let mut best = i32::MAX;
        let total = ends.len();
        // For every turn exact: the start's value R first (no turn is worth more), so that
        // each turn is solved within [.., R] and the best ones need no proof that they are
        // not better than R.
        let root = if all_exact {
            let (r, n) = self.analyse_quiet(board, None, progress, cancel, 0, total + 1)?;
            nodes += n;
            Some(r)
        } else {
            None
        };
        for (i, (moves, gain, end)) in ends.into_iter().enumerate() {
            let (margin, exact) = match end {
                End::Over(v) => (gain + v, true),
                End::North(c) => {
                    if let Some(r) = root {
                        // North's value v after the turn is at least gain - R, since the
                        // turn's margin gain - v is at most R: a result at that bound is it.
                        let low = gain - r;
                        let (v, n) = self.analyse_quiet(
                            &c,
                            Some((low, c.seeds() as i32)),
                            progress,
                            cancel,
                            i + 1,
                            total + 1,
                        )?;
                        nodes += n;
                        (gain - v.max(low), true)
                    } else if best == i32::MAX {
                        let a = self.analyse_quiet(&c, None, progress, cancel, i, total)?;
                        nodes += a.1;
                        (gain - a.0, true)
                    } else {
                        // Value of c clamped to [gain - best - 1, gain + best + 1].
                        let (v, n) = self.analyse_quiet(
                            &c,
                            Some((gain - best - 1, gain + best + 1)),
                            progress,
                            cancel,
                            i,
                            total,
                        )?;
                        nodes += n;
                        let m = gain - v;
                        (m, m.abs() <= best)
                    }
                }
            };
            if exact {
                best = best.min(margin.abs());
            }
            turns.push(PieTurn {
                moves,
                south_gain: gain,
                margin,
                exact,
            });
        }
        let best_turns = turns
            .iter()
            .enumerate()
            .filter(|(_, t)| t.exact && t.margin.abs() == best)
            .map(|(i, _)| i)
            .collect();
        Ok(Pie {
            value: -best,
            turns,
            best: best_turns,
            nodes,
            seconds: start.elapsed().as_secs_f64(),
        })
    }
}
