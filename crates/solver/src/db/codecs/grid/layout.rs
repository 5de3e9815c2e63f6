//! The file order of the grid codec: the boards of a level by group (the mover's seeds), strip
//! of [`STRIP`] columns (the opponent's sides), row (the mover's sides) and column, and the
//! copies between it and the index order.

use crate::db::rank::{next_composition, Ranker};
use crate::db::sow;
use crate::rules::MAX_HOUSES;
use std::sync::atomic::{AtomicI8, Ordering::Relaxed};

/// Columns per strip.
pub(crate) const STRIP: u64 = 64;

/// One group: the boards with `t` seeds on the mover's side.
#[derive(Clone, Debug)]
pub(super) struct Group {
    pub(super) rows: u64,
    pub(super) cols: u64,
    base: u64,
}

/// Where each board of a level lies in the file order of the grid codec.
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    m: usize,
    /// The level.
    pub(super) s: u32,
    pub(super) groups: Vec<Group>,
    ranker: Ranker,
}

/// A place in the file order: group `t`, strip `k` (of width `w`), row `i`, column `j`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Cursor {
    pub(super) t: usize,
    pub(super) k: u64,
    pub(super) w: u64,
    pub(super) i: u64,
    pub(super) j: u64,
}

/// For each column of a strip, how far to its left lies the board with one seed moved from
/// the opponent's third-last house to the next (its rank is that much less), 0 where there is
/// no such board (that house empty, or fewer than 3 houses); plus [`COLUMN_CARRY`] where the
/// column to the left is not the board with one seed moved between the opponent's last two
/// houses (the second-last house empty).
pub(super) type Columns = [u8; STRIP as usize];

/// The flag of a column after a carry of the numbering (see [`Columns`]).
pub(super) const COLUMN_CARRY: u8 = 64;

impl Layout {
    /// The layout of level `s` of boards with `m` houses a side.
    pub(crate) fn new(m: usize, s: u32) -> Layout {
        let ranker = Ranker::new(m);
        let mut base = 0;
        let groups = (0..=s)
            .map(|t| {
                let g = Group {
                    rows: ranker.count(m, t),
                    cols: ranker.count(m, s - t),
                    base,
                };
                base += g.rows * g.cols;
                g
            })
            .collect();
        debug_assert_eq!(base, ranker.level_size(s));
        Layout {
            m,
            s,
            groups,
            ranker,
        }
    }

    /// Positions of the level.
    pub(crate) fn len(&self) -> u64 {
        let g = self.groups.last().expect("a group per t");
        g.base + g.rows * g.cols
    }

    /// The place in the file of a board (cells mover's side first, `s` seeds in all).
    #[inline]
    pub(crate) fn file_pos(&self, cells: &[u8]) -> u64 {
        let (a, b) = cells[..2 * self.m].split_at(self.m);
        let t: u32 = a.iter().map(|&x| x as u32).sum();
        let g = &self.groups[t as usize];
        let ra = self.ranker.rank_part(a, t);
        let rb = self.ranker.rank_part(b, self.s - t);
        let (k, j) = (rb / STRIP, rb % STRIP);
        let w = STRIP.min(g.cols - k * STRIP);
        g.base + k * STRIP * g.rows + ra * w + j
    }

    /// The cursor at file place `pos` (below [`Layout::len`]).
    ///
    /// `#[inline]`, as [`Layout::columns`]: a copy in the codegen unit of each caller, whatever
    /// module it lies in. Called from the decoding loops (`columns` once a strip) from another
    /// codegen unit, they cost those loops their registers (the rANS states were kept on the
    /// stack: 20% slower decoding).
    #[inline]
    pub(super) fn cursor(&self, pos: u64) -> Cursor {
        let t = self.groups.partition_point(|g| g.base <= pos) - 1;
        let g = &self.groups[t];
        let rem = pos - g.base;
        let k = rem / (STRIP * g.rows);
        let w = STRIP.min(g.cols - k * STRIP);
        let rem = rem % (STRIP * g.rows);
        Cursor {
            t,
            k,
            w,
            i: rem / w,
            j: rem % w,
        }
    }

    /// The [`Columns`] of the cursor's strip.
    #[inline]
    pub(super) fn columns(&self, c: &Cursor) -> Columns {
        let mut cols = [0u8; STRIP as usize];
        let m = self.m;
        if m < 2 {
            return cols;
        }
        let mut b = [0u8; MAX_HOUSES];
        self.ranker
            .unrank_part(c.k * STRIP, self.s - c.t as u32, &mut b[..m]);
        for (j, col) in cols.iter_mut().enumerate().take(c.w as usize) {
            if j > 0 {
                next_composition(&mut b[..m]);
            }
            if m >= 3 && b[m - 3] > 0 {
                *col = b[m - 2] + b[m - 1] + 1;
            }
            if b[m - 2] == 0 {
                *col |= COLUMN_CARRY;
            }
        }
        cols
    }

    /// Moves the cursor to the next place (past the end it wraps into a group that does not
    /// exist; callers stop before). True when it enters another strip (whose [`Columns`]
    /// differ).
    #[inline(always)]
    pub(super) fn advance(&self, c: &mut Cursor) -> bool {
        c.j += 1;
        if c.j < c.w {
            return false;
        }
        c.j = 0;
        c.i += 1;
        if c.i < self.groups[c.t].rows {
            return false;
        }
        c.i = 0;
        c.k += 1;
        if c.k * STRIP >= self.groups[c.t].cols {
            c.k = 0;
            c.t += 1;
        }
        if let Some(g) = self.groups.get(c.t) {
            c.w = STRIP.min(g.cols - c.k * STRIP);
        }
        true
    }

    /// [`Layout::advance`], keeping `cols` the cursor's strip's.
    #[inline(always)]
    pub(super) fn advance_with(&self, c: &mut Cursor, cols: &mut Columns) {
        if self.advance(c) && c.t < self.groups.len() {
            *cols = self.columns(c);
        }
    }

    /// The index (in the level's numbering) of the first board of each row of group `t`: the
    /// boards of a row follow each other in index order.
    fn row_starts(&self, t: usize) -> Vec<u64> {
        let m = self.m;
        let g = &self.groups[t];
        let mut cells = [0u8; 2 * MAX_HOUSES];
        (0..g.rows)
            .map(|ra| {
                cells = [0; 2 * MAX_HOUSES];
                self.ranker.unrank_part(ra, t as u32, &mut cells[..m]);
                cells[2 * m - 1] = (self.s - t as u32) as u8;
                self.ranker.index_packed(sow::pack(&cells), self.s)
            })
            .collect()
    }

    /// The index of the first board of every row of every group (see [`Layout::read`]).
    pub(crate) fn rows(&self) -> Rows {
        use rayon::prelude::*;
        Rows(
            (0..self.groups.len())
                .into_par_iter()
                .map(|t| self.row_starts(t))
                .collect(),
        )
    }

    /// Reads the values of places `first..first + out.len()` of the file order from `values`
    /// (the level in index order) into `out`: a copy of each row's part.
    pub(crate) fn read(&self, rows: &Rows, values: &[i8], first: u64, out: &mut [i8]) {
        let mut c = self.cursor(first);
        let mut o = 0;
        while o < out.len() {
            let n = ((c.w - c.j) as usize).min(out.len() - o);
            let st = (rows.0[c.t][c.i as usize] + c.k * STRIP + c.j) as usize;
            out[o..o + n].copy_from_slice(&values[st..st + n]);
            o += n;
            // To the row's last value read, then one more: the next row.
            c.j += n as u64 - 1;
            self.advance(&mut c);
        }
    }

    /// Stores the values of places `first..first + vals.len()` of the file order (a decoded
    /// block) at their indices in `out` (the level in index order): the inverse of
    /// [`Layout::read`], a copy of each row's part. Atomic stores (plain byte stores on every
    /// processor we know), so that the blocks of a level can be written by many threads at
    /// once with no `unsafe`: each index is written by exactly one place.
    pub(crate) fn write(&self, rows: &Rows, first: u64, vals: &[i8], out: &[AtomicI8]) {
        let mut c = self.cursor(first);
        let mut o = 0;
        while o < vals.len() {
            let n = ((c.w - c.j) as usize).min(vals.len() - o);
            let st = (rows.0[c.t][c.i as usize] + c.k * STRIP + c.j) as usize;
            for (d, &v) in out[st..st + n].iter().zip(&vals[o..o + n]) {
                d.store(v, Relaxed);
            }
            o += n;
            c.j += n as u64 - 1;
            self.advance(&mut c);
        }
    }

    /// The values of the level (in index order) in file order.
    #[cfg(test)]
    pub(crate) fn gather(&self, values: &[i8]) -> Vec<i8> {
        use rayon::prelude::*;
        assert_eq!(values.len() as u64, self.len());
        let mut out = vec![0i8; values.len()];
        let mut parts = Vec::with_capacity(self.groups.len());
        let mut rest = &mut out[..];
        for (t, g) in self.groups.iter().enumerate() {
            let (part, tail) = rest.split_at_mut((g.rows * g.cols) as usize);
            parts.push((t, part));
            rest = tail;
        }
        parts.into_par_iter().for_each(|(t, part)| {
            let g = &self.groups[t];
            let starts = self.row_starts(t);
            let mut o = 0usize;
            for k in 0..g.cols.div_ceil(STRIP) {
                let w = STRIP.min(g.cols - k * STRIP) as usize;
                for &st in &starts {
                    let st = (st + k * STRIP) as usize;
                    part[o..o + w].copy_from_slice(&values[st..st + w]);
                    o += w;
                }
            }
        });
        out
    }
}

/// The index of the first board of each row of each group of a level (see [`Layout::rows`]).
pub(crate) struct Rows(Vec<Vec<u64>>);
