//! Recomputing a level from its children: the check of `db verify --full`, and the first
//! solver of a level (kept as a check of [`super::sweep`], which the builder uses).
//!
//! A move that puts no seed in a store and captures nothing keeps the level; its child (seen by
//! the other player) has a strictly lower potential (seeds times distance to their owner's
//! store), so a level has no cycles. [`LevelSolver`] walks a level in index order on every
//! core; a same-level child whose value is not known yet is computed on the spot (memoised
//! recursion into the same level, depth bounded by the potential; the unknown children of a
//! batch are computed as a batch themselves, so that their loads overlap). Values live in an
//! array of `AtomicI8` with an "unknown" sentinel; two threads that race on one board compute
//! the same value, so the race is benign. When every value is known (a recheck), nothing is
//! recomputed by recursion.

use super::lower::Lower;
use super::rank::{Ranker, Walker};
use super::sow::{self, Sower};
use super::values::Values;
use crate::board::Board;
use crate::rules::{Rules, MAX_HOUSES};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicI8, AtomicU64, Ordering::Relaxed};

/// Marks a value not computed yet (values lie in [-127, 127]).
pub(crate) const UNKNOWN: i8 = i8::MIN;

/// Positions per unit of parallel work.
const CHUNK: u64 = 1 << 15;

/// Boards whose children are loaded together.
pub(crate) const BATCH: usize = 16;

/// One legal move of a board being computed.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Move {
    gain: i32,
    extra: bool,
    /// The house sown.
    house: u8,
    level: u32,
    index: usize,
}

/// How deep unknown same-level children are computed in batches (each level of it holds a few
/// KiB of stack); below that, one board at a time.
const BATCH_DEPTH: u32 = 24;

/// Computes values of boards of level `s` from the values of lower levels and of the level
/// itself.
pub(crate) struct LevelSolver<'a> {
    pub rules: Rules,
    pub ranker: &'a Ranker,
    pub sower: Sower,
    pub s: u32,
    /// `lower[l]`: every value of level `l`, for `l < s`.
    pub lower: &'a [Lower],
    /// The values of level `s` known so far ([`UNKNOWN`] elsewhere).
    pub cur: &'a [AtomicI8],
}

impl LevelSolver<'_> {
    /// The legal moves of a board that is not over: per move, gain, extra turn, child level
    /// and child index; and their number.
    #[inline]
    fn plan(&self, board: &Board, moves: &mut [Move; MAX_HOUSES]) -> usize {
        let m = board.houses();
        let cells = sow::pack(board.raw());
        let mut count = 0;
        for h in 0..m {
            if board.raw()[h] == 0 {
                continue;
            }
            let sw = self.sower.sow(cells, h);
            let l = self.s - sw.gain;
            moves[count] = Move {
                gain: sw.gain as i32,
                extra: sw.extra,
                house: h as u8,
                level: l,
                index: self.ranker.index_packed(sw.next, l) as usize,
            };
            count += 1;
        }
        count
    }

    /// The value stored for a child (may be [`UNKNOWN`] in the same level).
    #[inline]
    fn load(&self, mv: &Move) -> i8 {
        if mv.level == self.s {
            self.cur[mv.index].load(Relaxed)
        } else {
            self.lower[mv.level as usize].get(mv.index)
        }
    }

    /// The best move value given the loaded child values, computing unknown same-level ones.
    #[inline]
    fn finish(&self, board: &Board, moves: &[Move], values: &[i8]) -> i8 {
        let mut best = i32::MIN;
        for (k, mv) in moves.iter().enumerate() {
            let mut nv = values[k];
            if nv == UNKNOWN && mv.level == self.s {
                nv = self.same_level(board, k, mv.index);
            }
            let v = if mv.extra {
                mv.gain + nv as i32
            } else {
                mv.gain - nv as i32
            };
            best = best.max(v);
        }
        best as i8
    }

    /// The value of `board` (of level `s`) from the values of its children.
    ///
    /// The children are sown and numbered first and their values loaded afterwards, all at
    /// once: the loads are independent cache misses that the processor then overlaps.
    pub(crate) fn compute(&self, board: &Board) -> i8 {
        if let Some(v) = board.final_value(&self.rules) {
            return v as i8;
        }
        let mut moves = [Move::default(); MAX_HOUSES];
        let count = self.plan(board, &mut moves);
        let mut values = [0i8; MAX_HOUSES];
        for (v, mv) in values.iter_mut().zip(&moves[..count]) {
            *v = self.load(mv);
        }
        self.finish(board, &moves[..count], &values[..count])
    }

    /// Computes and stores the values of up to [`BATCH`] consecutive boards whose values are
    /// unknown: all their children are numbered first, then all loaded, so that dozens of
    /// cache misses are in flight at once.
    #[cfg(test)]
    #[inline]
    pub(crate) fn compute_batch(&self, boards: &[(Board, usize)]) {
        let mut out = [0i8; BATCH];
        self.values_batch(boards, &mut out);
        for ((_, idx), &v) in boards.iter().zip(&out) {
            self.cur[*idx].store(v, Relaxed);
        }
    }

    /// The values of up to [`BATCH`] boards from their children, loaded together.
    #[inline]
    pub(crate) fn values_batch(&self, boards: &[(Board, usize)], out: &mut [i8; BATCH]) {
        self.values_batch_at(boards, out, 0);
    }

    /// [`LevelSolver::values_batch`] at recursion depth `depth`: the same-level children whose
    /// values are not known yet are gathered and computed (and stored) in batches themselves,
    /// so that their loads overlap too, before the boards are finished.
    fn values_batch_at(&self, boards: &[(Board, usize)], out: &mut [i8; BATCH], depth: u32) {
        let mut moves = [[Move::default(); MAX_HOUSES]; BATCH];
        let mut counts = [0usize; BATCH];
        let mut values = [[0i8; MAX_HOUSES]; BATCH];
        let mut finals = [None; BATCH];
        for (i, (b, _)) in boards.iter().enumerate() {
            match b.final_value(&self.rules) {
                Some(v) => finals[i] = Some(v as i8),
                None => counts[i] = self.plan(b, &mut moves[i]),
            }
        }
        for i in 0..boards.len() {
            for k in 0..counts[i] {
                values[i][k] = self.load(&moves[i][k]);
            }
        }
        if depth < BATCH_DEPTH {
            let m = self.ranker.houses();
            let mut pending = [(Board::empty(m), 0usize); BATCH];
            let mut slots = [(0usize, 0usize); BATCH];
            let mut len = 0;
            for (i, (b, _)) in boards.iter().enumerate() {
                for k in 0..counts[i] {
                    let mv = &moves[i][k];
                    if values[i][k] == UNKNOWN && mv.level == self.s {
                        let next = self.sower.sow(sow::pack(b.raw()), mv.house as usize).next;
                        pending[len] = (Board::from_raw(m, sow::unpack(next)), mv.index);
                        slots[len] = (i, k);
                        len += 1;
                        if len == BATCH {
                            self.settle(&pending, &slots, &mut values, depth);
                            len = 0;
                        }
                    }
                }
            }
            self.settle(&pending[..len], &slots[..len], &mut values, depth);
        }
        for (i, (b, _)) in boards.iter().enumerate() {
            out[i] = match finals[i] {
                Some(v) => v,
                None => self.finish(b, &moves[i][..counts[i]], &values[i][..counts[i]]),
            };
        }
    }

    /// Computes and stores the same-level boards `pending`, children of a batch, and puts their
    /// values in the batch's `values` at `slots`.
    fn settle(
        &self,
        pending: &[(Board, usize)],
        slots: &[(usize, usize)],
        values: &mut [[i8; MAX_HOUSES]; BATCH],
        depth: u32,
    ) {
        if pending.is_empty() {
            return;
        }
        let mut out = [0i8; BATCH];
        self.values_batch_at(pending, &mut out, depth + 1);
        for ((&(_, idx), &(i, k)), &v) in pending.iter().zip(slots).zip(&out) {
            self.cur[idx].store(v, Relaxed);
            values[i][k] = v;
        }
    }

    /// The value of the `k`-th legal move's child of `board`, in the same level at `idx`,
    /// computed and stored.
    #[cold]
    fn same_level(&self, board: &Board, k: usize, idx: usize) -> i8 {
        let h = board.legal_houses().nth(k).expect("k-th legal move exists");
        let next = self.sower.sow(sow::pack(board.raw()), h).next;
        let v = self.compute(&Board::from_raw(board.houses(), sow::unpack(next)));
        self.cur[idx].store(v, Relaxed);
        v
    }
}

/// Computes every value of level `s` (all lower levels given) into `values`, which holds the
/// level's size of [`UNKNOWN`], walking the level in index order and computing unknown
/// same-level children by recursion. Calls `advance(n)` as batches of `n` positions finish.
/// Returns `None` if `cancel` was raised.
///
/// The builder's first solver, kept as an independent check of [`super::sweep::solve_level`],
/// which the builder uses.
#[cfg(test)]
pub(crate) fn solve_level(
    rules: &Rules,
    ranker: &Ranker,
    s: u32,
    lower: &[Lower],
    mut values: Values,
    advance: &(dyn Fn(u64) + Sync),
    cancel: &AtomicBool,
) -> Option<Values> {
    let n = ranker.level_size(s);
    assert_eq!(values.len() as u64, n);
    let m = ranker.houses();
    let cur = values.as_atomic();
    let solver = LevelSolver {
        rules: rules.play_rules(),
        ranker,
        sower: Sower::new(rules),
        s,
        lower,
        cur,
    };
    let chunks = n.div_ceil(CHUNK);
    let done = (0..chunks).into_par_iter().try_for_each(|c| {
        if cancel.load(Relaxed) {
            return Err(());
        }
        let start = c * CHUNK;
        let end = (start + CHUNK).min(n);
        // Boards are visited in index order. (Visiting them in the order of their flipped
        // numbering, to bring children closer together, measured 35% slower at level 19.)
        let mut w = Walker::at(ranker, s, start);
        let mut batch = [(Board::empty(m), 0usize); BATCH];
        let mut len = 0;
        for idx in start..end {
            if cur[idx as usize].load(Relaxed) == UNKNOWN {
                batch[len] = (Board::from_raw(m, w.cells), idx as usize);
                len += 1;
                if len == BATCH {
                    solver.compute_batch(&batch);
                    len = 0;
                }
            }
            w.advance();
        }
        solver.compute_batch(&batch[..len]);
        advance(end - start);
        Ok(())
    });
    done.ok()?;
    if cancel.load(Relaxed) {
        return None;
    }
    Some(values)
}

/// Disagreements found by [`recheck_level`]: their number and up to `keep` examples
/// `(index, stored, recomputed)`.
pub(crate) type Disagreements = (u64, Vec<(u64, i8, i8)>);

/// Recomputes every value of level `s` from its children as stored (`values` holds the level
/// itself; it is written to only where it holds [`UNKNOWN`], which a level read from a checked
/// file never does) and returns the number of disagreements and up to `keep` examples
/// `(index, stored, recomputed)`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn recheck_level(
    rules: &Rules,
    ranker: &Ranker,
    s: u32,
    lower: &[Lower],
    values: &mut Values,
    advance: &(dyn Fn(u64) + Sync),
    cancel: &AtomicBool,
    keep: usize,
) -> Option<Disagreements> {
    let n = ranker.level_size(s);
    let m = ranker.houses();
    let cur = values.as_atomic();
    let solver = LevelSolver {
        rules: rules.play_rules(),
        ranker,
        sower: Sower::new(rules),
        s,
        lower,
        cur,
    };
    let bad = AtomicU64::new(0);
    let examples = std::sync::Mutex::new(Vec::new());
    let chunks = n.div_ceil(CHUNK);
    let done = (0..chunks).into_par_iter().try_for_each(|c| {
        if cancel.load(Relaxed) {
            return Err(());
        }
        let start = c * CHUNK;
        let end = (start + CHUNK).min(n);
        let mut w = Walker::at(ranker, s, start);
        let mut batch = [(Board::empty(m), 0usize); BATCH];
        let mut out = [0i8; BATCH];
        let mut idx = start;
        while idx < end {
            let len = ((end - idx) as usize).min(BATCH);
            for slot in batch[..len].iter_mut() {
                *slot = (Board::from_raw(m, w.cells), idx as usize);
                w.advance();
                idx += 1;
            }
            solver.values_batch(&batch[..len], &mut out);
            for (&(_, i), &v) in batch[..len].iter().zip(&out) {
                let stored = cur[i].load(Relaxed);
                if v != stored {
                    bad.fetch_add(1, Relaxed);
                    let mut ex = examples.lock().unwrap_or_else(|e| e.into_inner());
                    if ex.len() < keep {
                        ex.push((i as u64, stored, v));
                    }
                }
            }
        }
        advance(end - start);
        Ok(())
    });
    done.ok()?;
    let mut ex = examples.into_inner().unwrap_or_else(|e| e.into_inner());
    ex.sort_unstable();
    Some((bad.into_inner(), ex))
}
