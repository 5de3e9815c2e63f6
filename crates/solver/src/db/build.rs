//! Retrograde computation of one level from the levels below it, and writing level files.
//!
//! A move that puts no seed in a store and captures nothing keeps the level; its child (seen by
//! the other player) has a strictly lower potential (seeds times distance to their owner's
//! store), so a level has no cycles. The builder walks the level in index order on every core;
//! a same-level child whose value is not known yet is computed on the spot (memoised recursion
//! into the same level, depth bounded by the potential). Values live in an array of `AtomicI8`
//! with an "unknown" sentinel; two threads that race on one board compute the same value, so the
//! race is benign.

use super::format::{self, Header};
use super::rank::{Ranker, Walker};
use super::DbError;
use crate::board::Board;
use crate::rules::Rules;
use rayon::prelude::*;
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI8, AtomicU64, Ordering::Relaxed};

/// Marks a value not computed yet (values lie in [-127, 127]).
pub(crate) const UNKNOWN: i8 = i8::MIN;

/// Positions per unit of parallel work.
const CHUNK: u64 = 1 << 15;

/// Computes values of boards of level `s` from the values of lower levels and of the level
/// itself.
pub(crate) struct LevelSolver<'a> {
    pub rules: Rules,
    pub ranker: &'a Ranker,
    pub s: u32,
    /// `lower[l]`: every value of level `l`, for `l < s`.
    pub lower: &'a [Vec<i8>],
    /// The values of level `s` known so far ([`UNKNOWN`] elsewhere).
    pub cur: &'a [AtomicI8],
}

impl LevelSolver<'_> {
    /// The value of `board` (of level `s`) from the values of its children.
    #[inline]
    pub(crate) fn compute(&self, board: &Board) -> i8 {
        if let Some(v) = board.final_value(&self.rules) {
            return v as i8;
        }
        let m = board.houses();
        let mut best = i32::MIN;
        for h in 0..m {
            if board.raw()[h] == 0 {
                continue;
            }
            let sw = board.sow(&self.rules, h);
            let next = sw.next();
            let nv = if sw.gain == 0 {
                self.same_level(&next)
            } else {
                let l = self.s - sw.gain;
                self.lower[l as usize][self.ranker.index(next.raw(), l) as usize] as i32
            };
            best = best.max(sw.value_with(nv));
        }
        best as i8
    }

    /// The value of a board of the same level, computed (and stored) if unknown.
    fn same_level(&self, board: &Board) -> i32 {
        let idx = self.ranker.index(board.raw(), self.s) as usize;
        let v = self.cur[idx].load(Relaxed);
        if v != UNKNOWN {
            return v as i32;
        }
        let v = self.compute(board);
        self.cur[idx].store(v, Relaxed);
        v as i32
    }
}

/// Computes every value of level `s` (all lower levels given). Calls `advance(n)` as batches
/// of `n` positions finish. Returns `None` if `cancel` was raised.
pub(crate) fn solve_level(
    rules: &Rules,
    ranker: &Ranker,
    s: u32,
    lower: &[Vec<i8>],
    advance: &(dyn Fn(u64) + Sync),
    cancel: &AtomicBool,
) -> Option<Vec<i8>> {
    let n = ranker.level_size(s);
    let m = ranker.houses();
    let cur: Vec<AtomicI8> = (0..n)
        .into_par_iter()
        .map(|_| AtomicI8::new(UNKNOWN))
        .collect();
    let solver = LevelSolver {
        rules: rules.play_rules(),
        ranker,
        s,
        lower,
        cur: &cur,
    };
    let chunks = n.div_ceil(CHUNK);
    let done = (0..chunks).into_par_iter().try_for_each(|c| {
        if cancel.load(Relaxed) {
            return Err(());
        }
        let start = c * CHUNK;
        let end = (start + CHUNK).min(n);
        let mut w = Walker::at(ranker, s, start);
        for idx in start..end {
            let cell = &cur[idx as usize];
            if cell.load(Relaxed) == UNKNOWN {
                let v = solver.compute(&Board::from_raw(m, w.cells));
                cell.store(v, Relaxed);
            }
            w.advance();
        }
        advance(end - start);
        Ok(())
    });
    done.ok()?;
    if cancel.load(Relaxed) {
        return None;
    }
    Some(cur.into_iter().map(AtomicI8::into_inner).collect())
}

/// Disagreements found by [`recheck_level`]: their number and up to `keep` examples
/// `(index, stored, recomputed)`.
pub(crate) type Disagreements = (u64, Vec<(u64, i8, i8)>);

/// Recomputes every value of level `s` from its children as stored (`values` holds the level
/// itself) and returns the number of disagreements and up to `keep` examples
/// `(index, stored, recomputed)`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn recheck_level(
    rules: &Rules,
    ranker: &Ranker,
    s: u32,
    lower: &[Vec<i8>],
    values: Vec<i8>,
    advance: &(dyn Fn(u64) + Sync),
    cancel: &AtomicBool,
    keep: usize,
) -> Option<Disagreements> {
    let n = ranker.level_size(s);
    let m = ranker.houses();
    let cur: Vec<AtomicI8> = values.into_iter().map(AtomicI8::new).collect();
    let solver = LevelSolver {
        rules: rules.play_rules(),
        ranker,
        s,
        lower,
        cur: &cur,
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
        for idx in start..end {
            let stored = cur[idx as usize].load(Relaxed);
            let v = solver.compute(&Board::from_raw(m, w.cells));
            if v != stored {
                bad.fetch_add(1, Relaxed);
                let mut ex = examples.lock().unwrap_or_else(|e| e.into_inner());
                if ex.len() < keep {
                    ex.push((idx, stored, v));
                }
            }
            w.advance();
        }
        advance(end - start);
        Ok(())
    });
    done.ok()?;
    let mut ex = examples.into_inner().unwrap_or_else(|e| e.into_inner());
    ex.sort_unstable();
    Some((bad.into_inner(), ex))
}

/// Compresses a level and writes its file atomically: `<name>.tmp`, fsync, rename, fsync of
/// the directory. Returns the file's length.
pub(crate) fn write_level(
    dir: &Path,
    rules: &Rules,
    level: u32,
    values: &[i8],
) -> Result<u64, DbError> {
    let path = format::level_path(dir, level);
    let tmp = dir.join(format!("{}.tmp", format::level_file_name(level)));
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |source| DbError::Io { path: p, source }
    };
    let header = Header::for_rules(rules, level, values.len() as u64);
    let blocks: Vec<Vec<u8>> = values
        .par_chunks(format::BLOCK_SIZE as usize)
        .map(format::compress_block)
        .collect::<Result<_, _>>()
        .map_err(io(&path))?;
    let bytes = format::encode_file(header, &blocks);
    drop(blocks);
    {
        let mut f = File::create(&tmp).map_err(io(&tmp))?;
        f.write_all(&bytes).map_err(io(&tmp))?;
        f.sync_all().map_err(io(&tmp))?;
    }
    std::fs::rename(&tmp, &path).map_err(io(&path))?;
    if let Ok(d) = File::open(dir) {
        // Best effort: makes the rename durable on file systems that need it.
        let _ = d.sync_all();
    }
    Ok(bytes.len() as u64)
}
