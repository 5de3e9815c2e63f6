//! The `grid` codec: the values of a level laid out on the grid of (mover's side, opponent's
//! side) and coded with rANS under two-dimensional contexts.
//!
//! **Layout.** A board of level `s` is a pair `(a, b)`: the mover's side `a` (`t` seeds) and
//! the opponent's side `b` (`s - t` seeds). For each `t` in `0..=s` (a *group*) the values form
//! a grid of `N(m, t)` rows (the mover's sides, by [`Ranker::rank_part`]) by `N(m, s - t)`
//! columns (the opponent's sides, likewise). A group is cut into *strips* of [`STRIP`] columns
//! (the last one narrower); the file holds group 0, 1, ..., `s`, in each group strip after
//! strip, in each strip row after row. Blocks cut this order every `block size` values.
//!
//! Next to a value, in a strip, lie the board with one seed moved between the opponent's last
//! two houses (the value before it, "left") and the board with one seed moved between the
//! mover's last two houses (the value one strip-width before it, "up"): neighbours in the
//! game, whose values mostly agree. In index order the second lies thousands of values away.
//!
//! **Contexts.** Value `v` is symbol `(v + s) / 2` in `0..=s` (a value has the parity of
//! `s`: every seed ends in a store). A value's context is made of the symbols left (`L`), up
//! (`U`), up-left (`UL`), two to the left (`L2`) and of the board with a seed moved from the
//! opponent's third-last house to the next (`Lb`, some columns to the left: see [`Columns`]),
//! each *missing* (symbol `s + 1`) where it lies outside the strip or the sub-block, and (format
//! version 3) of a *carry flag*: whether `L` is a neighbour in the game or, after a carry of
//! the numbering (about a quarter of the columns), a board further away, in which case `L` and
//! `Lb` swap places: see [`Terms::context`] for how they combine. A context without a table of
//! its own uses its nearest ancestor's ([`parent`]: without the flag, then without `Lb`, then
//! without `L2`, then without `UL`), or the level's table; a context's table holds an *escape*
//! for the symbols it lacks, which are then coded in the level's table.
//!
//! **Model and coder.** A [`GridModel`] holds the tables that pay for themselves ([`prune`]),
//! each summing to `1 << 12` and written as one-byte log-scale codes ([`quantize`]), counted on
//! every sub-block of a level below 2^29 values and on one in [`SAMPLE`] of a larger one; the
//! coder is rANS with one 32-bit state per sub-block of [`SUB`] values and 16-bit
//! renormalisation, as in `rans.rs`, the words of two sub-blocks sharing one stream from both
//! ends. FORMAT.md has the details, with what each part of version 3 saved.
//!
//! Measured (6 houses, standard capture, entropy with the whole level as context): on levels
//! 20 and 24, the value to the left alone 35.1% and 36.8% of a byte per value, left and up
//! 30.5% and 32.5%, with up-left 28.1% and 30.3%; on level 20 with all five 26.7%. The files,
//! with model, states and tables: 28.7% (level 20), 29.8% (22), 30.7% (24) in format version 2;
//! 28.1%, 29.0% and 29.98% in version 3.

use super::rans::{normalize, word_at, ModelReader, RANS_L};
use crate::db::rank::{next_composition, Ranker};
use crate::rules::MAX_HOUSES;
use std::sync::atomic::{AtomicI8, Ordering::Relaxed};

/// Columns per strip.
pub(crate) const STRIP: u64 = 64;
/// The largest level the codec takes (symbols `0..=s` must fit the 32-entry tables).
pub(crate) const MAX_LEVEL: u32 = 30;
/// Values per block (a block-table entry and its checksum), as written (format version 3).
pub(crate) const BLOCK: usize = 65536;
/// Values per block in files of format versions 1 and 2.
pub(crate) const BLOCK_V2: usize = 8192;
/// Values per block in a file of format version `version`.
pub(crate) fn block_size(version: u32) -> usize {
    if version >= 3 {
        BLOCK
    } else {
        BLOCK_V2
    }
}
/// Values per sub-block. A block is cut into sub-blocks ([`MAX_SUBS`] in format version 3, 8
/// before), each coded on its own (its contexts see only it; one rANS state), so that a probe
/// decodes only its sub-block and a whole block decodes its sub-blocks two at a time, side by
/// side. A block of `n` sub-blocks is stored as:
///
/// ```text
/// u32  the decoder's start state of each sub-block (n of them)
/// u16  the number of renormalisation words of streams 0..u-1 (u - 1 of them)
/// u16  the words of stream 0, then 1, ... (the last stream's are the rest of the block)
/// ```
///
/// In version 3 there are `u = n / 2` streams: stream `p` holds the words of sub-block `2p`
/// in the order its decoder reads them, from the stream's start, and those of sub-block
/// `2p + 1`, which its decoder reads from the stream's end backwards (so the pair needs one
/// count). Before, `u = n`: one stream per sub-block, read forwards.
///
/// Smaller sub-blocks cost little (level 20: 27.63% of a byte per value in blocks of 4096,
/// 27.80% in blocks of 1024, before states and tables). Large blocks make the table and its
/// checksums small: 16 bytes a block are 0.2% of a byte per value in blocks of 8192, 0.02% in
/// blocks of 65536; a probe still decodes only its sub-block.
pub(crate) const SUB: usize = 1024;
/// The most sub-blocks in a block.
pub(crate) const MAX_SUBS: usize = BLOCK / SUB;
/// Precision of the frequency tables.
pub(crate) const SCALE_BITS: u32 = 12;
const SCALE: u32 = 1 << SCALE_BITS;
/// Entries of a cumulative table: symbols `0..=30`, one spare.
const SYMS: usize = 32;
/// No table for this context.
const NONE: u16 = u16::MAX;

/// A cumulative frequency table, on a cache line of its own.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Cum([u16; SYMS]);

/// One group: the boards with `t` seeds on the mover's side.
#[derive(Clone, Debug)]
struct Group {
    rows: u64,
    cols: u64,
    base: u64,
}

/// Where each board of a level lies in the file order of the grid codec.
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    m: usize,
    s: u32,
    groups: Vec<Group>,
    ranker: Ranker,
}

/// A place in the file order: group `t`, strip `k` (of width `w`), row `i`, column `j`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Cursor {
    t: usize,
    k: u64,
    w: u64,
    i: u64,
    j: u64,
}

/// For each column of a strip, how far to its left lies the board with one seed moved from
/// the opponent's third-last house to the next (its rank is that much less), 0 where there is
/// no such board (that house empty, or fewer than 3 houses); plus [`COLUMN_CARRY`] where the
/// column to the left is not the board with one seed moved between the opponent's last two
/// houses (the second-last house empty).
type Columns = [u8; STRIP as usize];

/// The flag of a column after a carry of the numbering (see [`Columns`]).
const COLUMN_CARRY: u8 = 64;

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
    fn cursor(&self, pos: u64) -> Cursor {
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
    fn columns(&self, c: &Cursor) -> Columns {
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
    fn advance(&self, c: &mut Cursor) -> bool {
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
    fn advance_with(&self, c: &mut Cursor, cols: &mut Columns) {
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
                self.ranker
                    .index_packed(crate::db::sow::pack(&cells), self.s)
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

/// `d = a - b` clamped to `[-r, r]`, plus `r`; `2 r + 1` where `a` or `b` is `miss`.
#[inline(always)]
fn grad(a: u8, b: u8, r: i32, miss: u8) -> usize {
    if a == miss || b == miss {
        (2 * r + 1) as usize
    } else {
        ((a as i32 - b as i32).clamp(-r, r) + r) as usize
    }
}

/// Symbols before the first of a block in a context buffer, all `miss`: the neighbours of a
/// block's first values that lie before the block read as missing, with no test.
const PAD: usize = STRIP as usize + 2;

/// A buffer for the symbols of a block of `len` values, after [`PAD`] missing ones.
fn context_buffer(len: usize, miss: u8) -> Vec<u8> {
    vec![miss; PAD + len]
}

/// The terms of the contexts of one level, as tables: for symbols `a` and `b` (or `miss`),
/// each gradient term already multiplied by its place in the context.
struct Terms {
    k: usize,
    miss: u8,
    /// Variants of each context by the carry flag: [`FLAGS`], or 1 without it (format
    /// versions 1 and 2).
    flags: usize,
    /// `g(Lb - L, 1)`, `g(L2 - L, 1)`, `g(UL - U, 2)`, `g(UL - L, 2)` by `[first][second]`.
    t: Box<[[[u32; SYMS]; SYMS]; 4]>,
}

impl Terms {
    /// The tables of level `s` (at most [`MAX_LEVEL`]), for contexts of `flags` variants each
    /// ([`FLAGS`] with the carry flag, 1 without: format versions 1 and 2).
    fn new(s: u32, flags: usize) -> Terms {
        let k = s as usize + 2;
        let miss = s as u8 + 1;
        let kk = (k * k * flags) as u32;
        let mut t = Box::new([[[0u32; SYMS]; SYMS]; 4]);
        for a in 0..=miss {
            for b in 0..=miss {
                let (a_, b_) = (a as usize, b as usize);
                t[0][a_][b_] = grad(a, b, 1, miss) as u32 * 144 * kk;
                t[1][a_][b_] = grad(a, b, 1, miss) as u32 * 36 * kk;
                t[2][a_][b_] = grad(a, b, 2, miss) as u32 * 6 * kk;
                t[3][a_][b_] = grad(a, b, 2, miss) as u32 * kk;
            }
        }
        Terms { k, miss, flags, t }
    }

    /// The context of the value at `buf[p]` (`p >= PAD`; the block's symbols so far before it,
    /// the pad before them; every symbol at most `miss`) at cursor `c`.
    #[inline(always)]
    fn context(&self, buf: &[u8], p: usize, c: &Cursor, cols: &Columns) -> usize {
        let miss = self.miss;
        let w = c.w as usize;
        // The board with a seed moved from the opponent's third-last house to the next lies
        // `d` columns to the left (0: none).
        let col = cols[c.j as usize & (STRIP as usize - 1)];
        let d = (col & (COLUMN_CARRY - 1)) as usize;
        // Selects of loads that are always in bounds (p >= PAD > w, d <= 32 < PAD): no
        // branches.
        let (l, l2, u, ul, lb) = (
            buf[p - 1],
            buf[p - 2],
            buf[p - w],
            buf[p - w - 1],
            buf[p - d],
        );
        let l = if c.j >= 1 { l } else { miss };
        let l2 = if c.j >= 2 { l2 } else { miss };
        let u = if c.i >= 1 { u } else { miss };
        let ul = if c.i >= 1 && c.j >= 1 { ul } else { miss };
        let lb = if d > 0 && c.j as usize >= d { lb } else { miss };
        // The neighbours' shape high, the symbols low: the contexts met most (a few shapes,
        // any symbols) lie together in the table of contexts.
        let (l, l2, u, ul, lb) = (
            l as usize & (SYMS - 1),
            l2 as usize & (SYMS - 1),
            u as usize & (SYMS - 1),
            ul as usize & (SYMS - 1),
            lb as usize & (SYMS - 1),
        );
        // The carry flag, where `L` is there: whether it is the board with one seed moved
        // between the opponent's last two houses, or one further away.
        let carry = (col & COLUMN_CARRY != 0 && l != miss as usize) as usize;
        let (l, lb) = if carry == 1 && self.flags > 1 && lb != miss as usize {
            (lb, l)
        } else {
            (l, lb)
        };
        let t = &self.t;
        (t[0][lb][l] + t[1][l2][l] + t[2][ul][u] + t[3][ul][l]) as usize
            + (u * self.k + l) * self.flags
            + carry * (self.flags > 1) as usize
    }
}

/// Levels of at least this many values (6 houses: level 25 and up) are counted on a sample of
/// their sub-blocks. Counting all of level 24 instead of one sub-block in four makes it 0.02%
/// of a byte per value smaller (level 23: 0.03%), for about a second more of fitting.
const SAMPLE_FROM: usize = 1 << 29;
/// One sub-block in this many is counted in a sampled level.
const SAMPLE: u64 = 4;

/// A context keeps its table only if that saves this many times the table's bytes.
const PRUNE: f64 = 1.0;

/// Shapes of the neighbours of a value: the terms of its context besides `L`, `U` and the
/// carry flag.
const SHAPES: usize = 576;
/// Variants of a context by the carry flag (format version 3): whether `L` is the board with
/// one seed moved between the opponent's last two houses or, after a carry of the numbering
/// (a column whose second-last house is empty), one further away. The lowest part of the
/// context, so that the variants of a context share a cache line of the table of contexts. (A
/// like flag for `U` gains little: level 24 of 6 houses takes 30.16% of a byte per value with
/// this flag alone, 30.19% with both, 30.41% with `U`'s alone, 30.43% with neither.)
const FLAGS: usize = 2;

/// Bytes of the bitmap of a table's symbols in a serialised model of level `s` (symbols
/// `0..=s + 1`).
fn bitmap_len(s: u32) -> usize {
    (s as usize + 2).div_ceil(8)
}

/// Appends `x` (below `1 << 28`) as a LEB128 varint.
fn put_varint(out: &mut Vec<u8>, mut x: u32) {
    debug_assert!(x < 1 << 28);
    while x >= 0x80 {
        out.push(x as u8 | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

/// The symbols of one table of a compact model ([`GridModel::to_bytes`]): the bitmap (symbols
/// at most `top`, at least one, checked), then their frequency codes; with the table they
/// give.
#[allow(clippy::type_complexity)]
fn compact_symbols(
    r: &mut ModelReader<'_>,
    ctx: u32,
    top: u32,
    bitmap: usize,
) -> Result<(Vec<(u8, u16)>, Vec<u8>), String> {
    // At most 4 bytes (levels up to 30): every bit is a symbol below SYMS; those above `top`
    // are refused below.
    debug_assert!(8 * bitmap <= SYMS);
    let bits = r.take(bitmap, "symbols")?;
    let mut present = [0u8; SYMS];
    let mut n = 0;
    for x in 0..8 * bitmap {
        if bits[x / 8] >> (x % 8) & 1 == 1 {
            present[n] = x as u8;
            n += 1;
        }
    }
    let present = &present[..n];
    match present.last() {
        None => return Err(format!("model context {ctx} has no symbols")),
        Some(&x) if x as u32 > top => {
            return Err(format!("model context {ctx}: symbol {x} out of range"))
        }
        Some(_) => {}
    }
    let codes = r.take(present.len(), "frequency codes")?;
    Ok((decode_codes(present, codes), codes.to_vec()))
}

/// The weight of frequency code `q` of a compact model: `2^(8 + q / 16)`, rounded, made of
/// 16 integer mantissas so that every reader derives the same tables.
fn code_weight(q: u8) -> u64 {
    const MANTISSA: [u64; 16] = [
        256, 267, 279, 292, 304, 318, 332, 347, 362, 378, 395, 412, 431, 450, 470, 490,
    ];
    MANTISSA[(q % 16) as usize] << (q / 16)
}

/// The frequency table of symbols `syms` (increasing, at most 32) with frequency codes
/// `codes`: each frequency is its weight ([`code_weight`]) times the scale over the sum of the
/// weights, rounded down, at least 1; the first of the largest takes what is left to reach the
/// scale (in integers, one pass: a model of 30,000 tables reads in a few milliseconds).
fn decode_codes(syms: &[u8], codes: &[u8]) -> Vec<(u8, u16)> {
    let total: u64 = codes.iter().map(|&q| code_weight(q)).sum();
    let mut out: Vec<(u8, u16)> = syms
        .iter()
        .zip(codes)
        .map(|(&x, &q)| (x, ((code_weight(q) << SCALE_BITS) / total).max(1) as u16))
        .collect();
    let sum: u32 = out.iter().map(|&(_, f)| f as u32).sum();
    let big = (0..out.len()).fold(0, |b, i| if out[i].1 > out[b].1 { i } else { b });
    // At most 32 symbols: the floors lose less than 32, the raises to 1 add at most 32, and
    // the largest is at least 4096 / 32 - 1.
    out[big].1 = (out[big].1 as u32 + SCALE).wrapping_sub(sum) as u16;
    out
}

/// A frequency table as written in a compact model: the code of each frequency (the nearest
/// on the scale of [`code_weight`]: steps of 4.4%), and the table those codes give, which is
/// the one used for coding.
fn quantize(table: &[(u8, u16)]) -> (Vec<(u8, u16)>, Vec<u8>) {
    let codes: Vec<u8> = table
        .iter()
        .map(|&(_, f)| (16.0 * (f as f64).log2()).round().clamp(0.0, 255.0) as u8)
        .collect();
    let syms: Vec<u8> = table.iter().map(|&(x, _)| x).collect();
    (decode_codes(&syms, &codes), codes)
}

/// Contexts of a level whose symbols (with the missing one) number `k`, with `flags` variants
/// each.
fn contexts(k: usize, flags: usize) -> usize {
    SHAPES * k * k * flags
}

/// The context a context falls back to when it has no table of its own (`kk` = `k * k`,
/// `flags` variants of each context): without the carry flag, then without the moved-seed
/// term, then also without the two-to-the-left term, then also without the up-left terms (a
/// context that has lost them all is its own parent).
#[inline]
fn parent(ctx: usize, kk: usize, flags: usize) -> usize {
    if !ctx.is_multiple_of(flags) {
        return ctx - ctx % flags;
    }
    parent_shape(ctx / flags, kk) * flags
}

/// [`parent`] of a context without its carry flag.
#[inline]
fn parent_shape(ctx: usize, kk: usize) -> usize {
    let (shape, lu) = (ctx / kk, ctx % kk);
    let (g3, g2, gul) = (shape / 144, shape / 36 % 4, shape % 36);
    let shape = if g3 != 3 {
        (3 * 4 + g2) * 36 + gul
    } else if g2 != 3 {
        (3 * 4 + 3) * 36 + gul
    } else {
        SHAPES - 1
    };
    shape * kk + lu
}

/// How many steps a context is from its root (0 to 4): the order in which [`prune`] weighs
/// them.
fn depth(ctx: usize, kk: usize, flags: usize) -> usize {
    let mut d = 0;
    let mut c = ctx;
    while parent(c, kk, flags) != c {
        c = parent(c, kk, flags);
        d += 1;
    }
    d
}

/// About the bytes of the table of a context counted `row` in a serialised model
/// ([`GridModel::to_bytes`]): its context (a distance, about 2 bytes), its bitmap, and a
/// frequency code per symbol seen and for the escape.
fn table_bytes(row: &[u64; SYMS], bitmap: usize) -> usize {
    2 + bitmap + 1 + row.iter().filter(|&&c| c > 0).count()
}

/// Gives up the tables of the contexts that cost more in the model than they save in the
/// data (`factor` times what they cost): their counts move to their parent's (see
/// [`parent`]). A table costs what [`table_bytes`] says; coding a context's `c` values with its
/// parent's frequencies costs `c` times the Kullback-Leibler divergence more bits. Children
/// are weighed against their parent with all its children's counts; the children first, then
/// the parents. The counts stand for `weight` times as many values (a sample).
fn prune(
    counts: &mut std::collections::BTreeMap<usize, [u64; SYMS]>,
    kk: usize,
    weight: f64,
    bitmap: usize,
    flags: usize,
    factor: f64,
) {
    for round in (1..=4).rev() {
        // The deepest contexts first.
        let children: Vec<usize> = counts
            .keys()
            .copied()
            .filter(|&c| depth(c, kk, flags) == round)
            .collect();
        let mut family: std::collections::HashMap<usize, [u64; SYMS]> = Default::default();
        for (&ctx, row) in counts.iter() {
            let p = if depth(ctx, kk, flags) == round {
                parent(ctx, kk, flags)
            } else {
                ctx
            };
            let f = family.entry(p).or_insert([0; SYMS]);
            for (f, &c) in f.iter_mut().zip(row) {
                *f += c;
            }
        }
        for ctx in children {
            let row = counts[&ctx];
            let c: u64 = row.iter().sum();
            let fam = &family[&parent(ctx, kk, flags)];
            let total: u64 = fam.iter().sum();
            let mut bits = 0f64;
            for (&x, &y) in row.iter().zip(fam) {
                if x > 0 {
                    bits += x as f64 * ((x as f64 / c as f64) / (y as f64 / total as f64)).log2();
                }
            }
            if weight * bits / 8.0 < factor * table_bytes(&row, bitmap) as f64 {
                counts.remove(&ctx);
                let p = counts.entry(parent(ctx, kk, flags)).or_insert([0; SYMS]);
                for (p, &x) in p.iter_mut().zip(&row) {
                    *p += x;
                }
            }
        }
    }
}

/// The frequency tables of one level of the grid codec, with its layout.
pub(crate) struct GridModel {
    layout: Layout,
    /// The terms of the contexts.
    terms: Terms,
    /// The table of each context (index into `cums`): its own, its nearest ancestor's, or the
    /// level's.
    ids: Vec<u16>,
    /// Cumulative frequencies by table: entry `x` is the sum of the frequencies of the symbols
    /// below `x` ([`SCALE`] past the last symbol).
    cums: Vec<Cum>,
    /// The level's table (every value's symbol, no escape).
    global: usize,
    /// The contexts and frequency tables in serialised order.
    tables: Vec<(u32, Vec<(u8, u16)>)>,
    /// The frequency codes of each table (see [`quantize`]); empty for a model read from a file
    /// of format version 1 or 2, which is never written again.
    codes: Vec<Vec<u8>>,
    /// Sub-blocks per block: [`BLOCK`] / [`SUB`], or [`BLOCK_V2`] / [`SUB`] for a file of
    /// format version 1 or 2.
    subs: usize,
    /// Whether the sub-blocks' words lie in pairs, the second read backwards (format version
    /// 3), or one after the other (versions 1 and 2): see [`SUB`].
    paired: bool,
}

impl std::fmt::Debug for GridModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GridModel")
            .field("level", &self.layout.s)
            .field("contexts", &self.tables.len())
            .finish()
    }
}

impl GridModel {
    fn miss(&self) -> u8 {
        self.layout.s as u8 + 1
    }

    /// Values per block.
    fn block(&self) -> usize {
        self.subs * SUB
    }

    /// Bytes before the words of a block: the states and the lengths.
    fn head(&self) -> usize {
        4 * self.subs + 2 * (self.streams_per_block() - 1)
    }

    /// The word streams of a block: one per sub-block, or one per pair of sub-blocks.
    fn streams_per_block(&self) -> usize {
        if self.paired {
            self.subs / 2
        } else {
            self.subs
        }
    }

    /// The model with the frequency codes of its tables (see [`quantize`]).
    fn with_codes(mut self, codes: Vec<Vec<u8>>) -> GridModel {
        debug_assert!(codes.is_empty() || codes.len() == self.tables.len());
        self.codes = codes;
        self
    }

    /// The model, for the blocks of a file of format version `version`.
    fn for_version(mut self, version: u32) -> GridModel {
        self.subs = block_size(version) / SUB;
        self.paired = version >= 3;
        self
    }

    /// The layout of the level.
    pub(crate) fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Counts the values of a level in file order (see [`Layout::gather`]), cut in sub-blocks
    /// of [`SUB`], and normalises. Errors (the caller then uses another codec) if the level is
    /// above [`MAX_LEVEL`], a value is out of range or has the wrong parity, or the contexts
    /// are too many.
    #[cfg(test)]
    pub(crate) fn fit(values: &[i8], layout: Layout) -> Result<GridModel, String> {
        let step = if values.len() >= SAMPLE_FROM {
            SAMPLE
        } else {
            1
        };
        GridModel::fit_sampled(values, layout, step)
    }

    /// `GridModel::fit` of the values of a level given in index order (each sub-block read
    /// in file order when counted, no copy of the level made).
    pub(crate) fn fit_level(
        values: &[i8],
        layout: Layout,
        rows: &Rows,
    ) -> Result<GridModel, String> {
        // Large levels are counted on one sub-block in SAMPLE (what the others hold that the
        // sample misses is escaped).
        let step = if values.len() >= SAMPLE_FROM {
            SAMPLE
        } else {
            1
        };
        if values.len() as u64 != layout.len() {
            return Err("wrong number of values".into());
        }
        let read = |first: u64, out: &mut [i8]| layout.read(rows, values, first, out);
        GridModel::fit_with(values.len(), layout.clone(), step, FLAGS, read)
    }

    /// [`GridModel::fit`] counting one sub-block in `step`.
    #[cfg(test)]
    fn fit_sampled(values: &[i8], layout: Layout, step: u64) -> Result<GridModel, String> {
        let read = |first: u64, out: &mut [i8]| {
            out.copy_from_slice(&values[first as usize..first as usize + out.len()])
        };
        GridModel::fit_with(values.len(), layout, step, FLAGS, read)
    }

    /// [`GridModel::fit`] as format versions 1 and 2 would have it: contexts without the
    /// carry flag, blocks of [`BLOCK_V2`].
    #[cfg(test)]
    fn fit_v2(values: &[i8], layout: Layout) -> GridModel {
        let read = |first: u64, out: &mut [i8]| {
            out.copy_from_slice(&values[first as usize..first as usize + out.len()])
        };
        GridModel::fit_with(values.len(), layout, 1, 1, read)
            .expect("a level the codec takes")
            .for_version(2)
    }

    /// Fits the model of a level of `len` values, which `read(first, out)` gives in file order
    /// (`out.len()` of them from place `first`), counting one sub-block in `step`, with
    /// `flags` variants of each context (see [`FLAGS`]).
    fn fit_with(
        len: usize,
        layout: Layout,
        step: u64,
        flags: usize,
        read: impl Fn(u64, &mut [i8]) + Sync,
    ) -> Result<GridModel, String> {
        use rayon::prelude::*;
        let block_size = SUB;
        let s = layout.s;
        if s > MAX_LEVEL {
            return Err(format!("level {s} above {MAX_LEVEL}"));
        }
        if len as u64 != layout.len() {
            return Err("wrong number of values".into());
        }
        let k = s as usize + 2;
        let keys = contexts(k, flags);
        let terms = Terms::new(s, flags);
        // One table of counts per thread, over a contiguous part of the level (whole
        // sub-blocks), added up at the end.
        let parts = rayon::current_num_threads().max(1);
        let subs = len.div_ceil(block_size);
        let per = subs.div_ceil(parts).max(1);
        let counts = (0..subs.div_ceil(per))
            .into_par_iter()
            .map(|part| {
                let mut counts = vec![[0u32; SYMS]; keys];
                let miss = s as u8 + 1;
                let mut buf = context_buffer(block_size, miss);
                let mut block = vec![0i8; block_size];
                for sub in (part * per..subs.min((part + 1) * per))
                    .filter(|&b| (b as u64).is_multiple_of(step))
                {
                    let first = (sub * block_size) as u64;
                    let block = &mut block[..block_size.min(len - sub * block_size)];
                    read(first, block);
                    to_symbols(block, s, &mut buf[PAD..])?;
                    let mut cur = layout.cursor(first);
                    let mut cols = layout.columns(&cur);
                    for p in PAD..PAD + block.len() {
                        let ctx = terms.context(&buf, p, &cur, &cols);
                        counts[ctx][buf[p] as usize] += 1;
                        layout.advance_with(&mut cur, &mut cols);
                    }
                }
                Ok::<_, String>(counts)
            })
            .try_reduce_with(|mut a, b| {
                for (x, y) in a.iter_mut().zip(&b) {
                    for (x, y) in x.iter_mut().zip(y) {
                        *x += y;
                    }
                }
                Ok(a)
            })
            .unwrap_or_else(|| Ok(vec![[0u32; SYMS]; keys]))?;
        // The contexts that occur, with their counts.
        let mut counts: std::collections::BTreeMap<usize, [u64; SYMS]> = counts
            .iter()
            .enumerate()
            .filter(|(_, row)| row.iter().any(|&c| c > 0))
            .map(|(ctx, row)| (ctx, std::array::from_fn(|x| row[x] as u64)))
            .collect();
        // The level's table: every symbol counted once more, so that any value can be coded.
        let mut global = [0u64; 256];
        for row in counts.values() {
            for (g, &c) in global.iter_mut().zip(row) {
                *g += c;
            }
        }
        for g in &mut global[..=s as usize] {
            *g += 1;
        }
        // Counts of a sample stand for `step` times as many values.
        // A table's id is a u16: where too many contexts pay for their tables (levels 29 and
        // 30 of 6 houses), the dearest give theirs up first: each further round asks twice as
        // much of a table (merging is what pruning does, so a round continues the one before).
        let mut factor = PRUNE;
        loop {
            prune(
                &mut counts,
                k * k,
                step as f64,
                bitmap_len(s),
                flags,
                factor,
            );
            if counts.len() + 1 < NONE as usize {
                break;
            }
            factor *= 2.0;
        }
        // Each table as the compact model writes it (see [`quantize`]).
        let (table, codes) = quantize(&normalize(&global, SCALE_BITS));
        let mut tables = vec![(keys as u32, table)];
        let mut all_codes = vec![codes];
        for (&ctx, row) in counts.iter() {
            let mut wide = [0u64; 256];
            wide[..SYMS].copy_from_slice(row);
            // The escape: a symbol this context's count did not see.
            wide[s as usize + 1] = 1;
            let (table, codes) = quantize(&normalize(&wide, SCALE_BITS));
            tables.push((ctx as u32, table));
            all_codes.push(codes);
        }
        // The level's table, then the contexts' in increasing order (in which `counts` holds
        // them; so the serialised model writes each context as its distance from the one
        // before). Ordering them by use instead, for the decoder's cache, made no measurable
        // difference to probes.
        if tables.len() >= NONE as usize {
            return Err(format!("{} contexts, too many", tables.len()));
        }
        Ok(GridModel::from_tables(layout, tables, flags).with_codes(all_codes))
    }

    /// The model of checked tables: one for the context `contexts(k)` (the level's), at most
    /// one per other context.
    fn from_tables(layout: Layout, tables: Vec<(u32, Vec<(u8, u16)>)>, flags: usize) -> GridModel {
        let k = layout.s as usize + 2;
        let keys = contexts(k, flags);
        let mut ids = vec![NONE; keys];
        let mut cums = Vec::with_capacity(tables.len());
        let mut global = 0;
        for (id, (ctx, _)) in tables.iter().enumerate() {
            match ids.get_mut(*ctx as usize) {
                Some(x) => *x = id as u16,
                None => global = id,
            }
        }
        // A context without a table of its own uses its nearest ancestor's (see
        // [`parent`]); without any, the level's. The contexts without the carry flag first,
        // shape by shape, each shape after its parent's (whose contexts then already hold
        // their nearest ancestor's table, so one step up is enough): the parent of a context
        // differs in its shape only. Then each flagged context without a table takes its
        // unflagged context's.
        let kk = k * k;
        let mut shapes: Vec<usize> = (0..SHAPES).collect();
        shapes.sort_by_key(|&shape| depth(shape * kk, kk, 1));
        for shape in shapes {
            let up = parent_shape(shape * kk, kk) / kk;
            for lu in 0..kk {
                let i = (shape * kk + lu) * flags;
                if ids[i] == NONE {
                    ids[i] = if up == shape {
                        global as u16
                    } else {
                        ids[(up * kk + lu) * flags]
                    };
                }
            }
        }
        for variants in ids.chunks_exact_mut(flags) {
            let first = variants[0];
            for id in &mut variants[1..] {
                if *id == NONE {
                    *id = first;
                }
            }
        }
        for (_, syms) in tables.iter() {
            let mut cum = [SCALE as u16; SYMS];
            let mut acc = 0u32;
            let mut next = 0usize;
            for &(sym, f) in syms {
                while next <= sym as usize {
                    cum[next] = acc as u16;
                    next += 1;
                }
                acc += f as u32;
            }
            // Past the last symbol the entries stay at the scale (acc = SCALE here).
            debug_assert_eq!(acc, SCALE);
            cums.push(Cum(cum));
        }
        GridModel {
            terms: Terms::new(layout.s, flags),
            layout,
            ids,
            cums,
            global,
            tables,
            subs: MAX_SUBS,
            paired: true,
            codes: Vec::new(),
        }
    }

    /// The table of context `ctx`.
    #[inline(always)]
    fn table(&self, ctx: usize) -> &Cum {
        &self.cums[self.ids.get(ctx).map_or(self.global, |&id| id as usize)]
    }

    /// The serialised model (format version 3), little-endian:
    ///
    /// ```text
    /// u8   scale bits (12)
    /// u8   level s
    /// u16  strip width (64)
    /// u32  number of tables that follow
    /// per table (the level's first, then the contexts' in increasing order of context):
    ///   varint  the context less the one before less one (the first context: itself; none
    ///           for the level's table, whose context is (s + 2)^2 * 576 * FLAGS)
    ///   bitmap  the table's symbols: (s + 2 + 7) / 8 bytes, bit x % 8 of byte x / 8 for
    ///           symbol x (0..=s, and s + 1 = escape in a context's table); at least one
    ///   u8      the frequency code of each of its symbols, in increasing order of symbol
    /// ```
    ///
    /// A varint is LEB128: 7 bits a byte, low first, the top bit set on all bytes but the
    /// last; at most 4 bytes, and no longer than needed. The frequencies are derived from the
    /// codes by [`decode_codes`]. Version 1 and 2 files hold the wider form of
    /// [`GridModel::to_bytes_v2`].
    ///
    /// A context without a table uses its nearest ancestor's ([`parent`]), or the level's. A
    /// value whose symbol a context's table lacks is coded as the escape in that table, then
    /// as its symbol in the level's.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut out = self.model_head();
        let bitmap = bitmap_len(self.layout.s);
        assert_eq!(self.codes.len(), self.tables.len(), "a fitted model");
        // The level's table first, with no context; then each context as its distance from
        // the one before, less one.
        let mut next = 0;
        for (t, ((ctx, syms), codes)) in self.tables.iter().zip(&self.codes).enumerate() {
            if t > 0 {
                put_varint(&mut out, ctx - next);
                next = ctx + 1;
            }
            let mut bits = [0u8; SYMS / 8];
            for &(s, _) in syms {
                bits[s as usize / 8] |= 1 << (s % 8);
            }
            out.extend_from_slice(&bits[..bitmap]);
            out.extend_from_slice(codes);
        }
        out
    }

    /// The eight bytes that start a serialised model.
    fn model_head(&self) -> Vec<u8> {
        let mut out = vec![SCALE_BITS as u8, self.layout.s as u8];
        out.extend_from_slice(&(STRIP as u16).to_le_bytes());
        out.extend_from_slice(&(self.tables.len() as u32).to_le_bytes());
        out
    }

    /// The model as format versions 1 and 2 wrote it: the fields of [`GridModel::to_bytes`],
    /// but per table a u32 context, a u8 number of symbols less one, then per symbol a u8
    /// symbol and a u16 frequency (the last one's too). Kept for the tests of the reader.
    #[cfg(test)]
    pub(crate) fn to_bytes_v2(&self) -> Vec<u8> {
        let mut out = self.model_head();
        for (ctx, syms) in &self.tables {
            out.extend_from_slice(&ctx.to_le_bytes());
            out.push((syms.len() - 1) as u8);
            for &(s, f) in syms {
                out.push(s);
                out.extend_from_slice(&f.to_le_bytes());
            }
        }
        out
    }

    /// Parses a serialised model of level `s` (boards of `m` houses a side) written by format
    /// version `version`, checking everything: malformed input is an error, never a panic.
    pub(crate) fn from_bytes(
        bytes: &[u8],
        m: usize,
        s: u32,
        version: u32,
    ) -> Result<GridModel, String> {
        if s > MAX_LEVEL {
            return Err(format!("grid level {s} above {MAX_LEVEL}"));
        }
        let mut r = ModelReader::new(bytes);
        let head = r.take(8, "header")?;
        if head[0] as u32 != SCALE_BITS {
            return Err(format!("model scale {} bits, not {SCALE_BITS}", head[0]));
        }
        if head[1] as u32 != s {
            return Err(format!("model for level {}, not {s}", head[1]));
        }
        if u16::from_le_bytes([head[2], head[3]]) as u64 != STRIP {
            return Err(format!(
                "model for strips of {}, not {STRIP}",
                u16::from_le_bytes([head[2], head[3]])
            ));
        }
        let k = s as usize + 2;
        let flags = if version >= 3 { FLAGS } else { 1 };
        let keys = contexts(k, flags) as u32;
        let count = u32::from_le_bytes(head[4..8].try_into().expect("4 bytes"));
        if count == 0 || count >= (NONE as u32).min(keys + 2) {
            return Err(format!("model has {count} tables"));
        }
        let mut tables = Vec::with_capacity(count as usize);
        let mut codes = Vec::new();
        // Version 3: the first context not yet passed.
        let mut next = 0u32;
        // The level's table comes first; the contexts' tables may hold the escape.
        // (Version 3 writes the contexts increasing: none can repeat.)
        let mut seen = vec![false; if version >= 3 { 0 } else { keys as usize }];
        for t in 0..count {
            let (ctx, n) = if version >= 3 {
                if t == 0 {
                    (keys, None)
                } else {
                    let ctx = next.saturating_add(r.varint("context")?);
                    next = ctx.saturating_add(1);
                    (ctx, None)
                }
            } else {
                let b = r.take(5, "context")?;
                let ctx = u32::from_le_bytes(b[..4].try_into().expect("4 bytes"));
                (ctx, Some(b[4] as u32 + 1))
            };
            let top = if t == 0 {
                if ctx != keys {
                    return Err(format!(
                        "model starts with context {ctx}, not the level's table"
                    ));
                }
                s
            } else {
                if ctx >= keys || (version < 3 && std::mem::replace(&mut seen[ctx as usize], true))
                {
                    return Err(format!("model context {ctx} out of range or repeated"));
                }
                s + 1
            };
            let syms = match n {
                Some(n) if n > top + 1 => {
                    return Err(format!(
                        "model context {ctx} has {n} symbols, at most {}",
                        top + 1
                    ))
                }
                Some(n) => r.symbols(ctx, n, top, SCALE)?,
                None => {
                    let (syms, table_codes) = compact_symbols(&mut r, ctx, top, bitmap_len(s))?;
                    codes.push(table_codes);
                    syms
                }
            };
            tables.push((ctx, syms));
        }
        r.finish()?;
        Ok(GridModel::from_tables(Layout::new(m, s), tables, flags)
            .with_codes(codes)
            .for_version(version))
    }

    /// Appends the encoding of block `i` (its values, in file order; the level's block size
    /// [`BLOCK`] of them, the last block fewer) to `out`: see [`SUB`] for the layout.
    ///
    /// Panics if a value is not one of the model's (the model was not fitted on this level).
    pub(crate) fn encode_block(&self, i: u64, values: &[i8], out: &mut Vec<u8>) {
        let miss = self.miss();
        let subs = self.subs;
        let mut states = vec![RANS_L; subs];
        let mut streams: Vec<Vec<u16>> = vec![Vec::new(); subs];
        // The (table, symbol) of each value, sub-block by sub-block, side by side.
        let mut coded = vec![(0u16, 0u8); self.block()];
        let mut buf = context_buffer(SUB, miss);
        for (r, sub) in values.chunks(SUB).enumerate() {
            let buf = &mut buf[..PAD + sub.len()];
            to_symbols(sub, self.layout.s, &mut buf[PAD..]).expect("values fitted by the model");
            let mut cur = self
                .layout
                .cursor(i * self.block() as u64 + (r * SUB) as u64);
            let mut cols = self.layout.columns(&cur);
            for (p, c) in (PAD..buf.len()).zip(&mut coded[r * SUB..]) {
                let ctx = self.terms.context(buf, p, &cur, &cols);
                *c = (
                    self.ids.get(ctx).map_or(self.global as u16, |&id| id),
                    buf[p],
                );
                self.layout.advance_with(&mut cur, &mut cols);
            }
        }
        // One step of the encoder: `sym` in table `id`.
        let put = |x: &mut u32, words: &mut Vec<u16>, id: usize, sym: usize| -> bool {
            let cum = &self.cums[id].0;
            let lo = cum[sym] as u32;
            let f = cum.get(sym + 1).map_or(SCALE, |&c| c as u32) - lo;
            if f == 0 {
                return false;
            }
            if *x as u64 >= (f as u64) << (32 - SCALE_BITS) {
                words.push(*x as u16);
                *x >>= 16;
            }
            *x = ((*x / f) << SCALE_BITS) + *x % f + lo;
            true
        };
        // Last value first, so that decoding runs forward; the sub-blocks side by side, their
        // steps interleaved (each a chain of divisions). A symbol that its context's table
        // lacks is the escape there, then the symbol in the level's table: coded backwards,
        // the symbol first.
        let lens: Vec<usize> = (0..subs)
            .map(|r| values.len().saturating_sub(r * SUB).min(SUB))
            .collect();
        for q in (0..SUB).rev() {
            for r in 0..subs {
                if q < lens[r] {
                    let (id, sym) = coded[r * SUB + q];
                    let (x, words) = (&mut states[r], &mut streams[r]);
                    if !put(x, words, id as usize, sym as usize) {
                        assert!(
                            put(x, words, self.global, sym as usize),
                            "symbol {sym} not in the level's table"
                        );
                        assert!(
                            put(x, words, id as usize, miss as usize),
                            "table {id} without an escape"
                        );
                    }
                }
            }
        }
        let total: usize = streams.iter().map(Vec::len).sum();
        out.reserve(self.head() + 2 * total);
        for x in states {
            out.extend_from_slice(&x.to_le_bytes());
        }
        // Each stream's words were pushed in the encoder's order: the decoder reads them in
        // the other. Paired, the second sub-block's are written in the encoder's order, so
        // that reading them from the end of the pair's words gives the decoder's.
        let units: Vec<Vec<u16>> = if self.paired {
            streams
                .chunks(2)
                .map(|p| p[0].iter().rev().chain(&p[1]).copied().collect())
                .collect()
        } else {
            streams
                .iter()
                .map(|w| w.iter().rev().copied().collect())
                .collect()
        };
        for w in &units[..units.len() - 1] {
            out.extend_from_slice(&(w.len() as u16).to_le_bytes());
        }
        for w in units.iter().flatten() {
            out.extend_from_slice(&w.to_le_bytes());
        }
    }

    /// The decoder of sub-block `r` of a block of `len` values stored as `data`, whose streams
    /// end at `ends` (checked by [`GridModel::streams`]).
    fn lane<'a>(
        &self,
        i: u64,
        data: &'a [u8],
        len: usize,
        ends: &[usize; MAX_SUBS],
        r: usize,
    ) -> Lane<'a> {
        let u = if self.paired { r / 2 } else { r };
        let start = if u == 0 { self.head() } else { ends[u - 1] };
        let first = (r * SUB).min(len);
        let (cur, cols) = if first < len {
            let cur = self.layout.cursor(i * self.block() as u64 + first as u64);
            (cur, self.layout.columns(&cur))
        } else {
            (Cursor::default(), [0; STRIP as usize])
        };
        Lane {
            x: u32::from_le_bytes(data[4 * r..4 * r + 4].try_into().expect("4 bytes")),
            words: &data[start..ends[u]],
            pos: 0,
            back: self.paired && r % 2 == 1,
            cur,
            cols,
            len: (len - first).min(SUB),
        }
    }

    /// Decodes the next symbol of `lane` into `buf[p]` (`buf` the lane's context buffer).
    /// Wrapping arithmetic: damaged data gives garbage (caught by the checks), never a panic.
    #[inline(always)]
    fn step(&self, lane: &mut Lane<'_>, buf: &mut [u8], p: usize) {
        let miss = self.miss();
        let cum = &self
            .table(self.terms.context(buf, p, &lane.cur, &lane.cols))
            .0;
        let mut sym = self.decode_symbol(lane, cum);
        if sym == miss as usize {
            // The escape: the symbol follows in the level's table.
            sym = self.decode_symbol(lane, &self.cums[self.global].0);
        }
        buf[p] = sym as u8;
        self.layout.advance_with(&mut lane.cur, &mut lane.cols);
    }

    /// Decodes one symbol of `lane` with the cumulative frequencies `cum`.
    #[inline(always)]
    fn decode_symbol(&self, lane: &mut Lane<'_>, cum: &[u16; SYMS]) -> usize {
        let x = lane.x;
        let slot = x & (SCALE - 1);
        // The entries rise: the symbol is the number of them, past the first, at most `slot`
        // (entries are at most 4096: compared as i16, 8 to a vector).
        let mut n = 0i16;
        for &c in &cum[1..] {
            n += (c as i16 <= slot as i16) as i16;
        }
        let sym = n as usize;
        let lo = cum[sym] as u32;
        let f = cum
            .get(sym + 1)
            .map_or(SCALE, |&c| c as u32)
            .wrapping_sub(lo);
        let x = f
            .wrapping_mul(x >> SCALE_BITS)
            .wrapping_add(slot)
            .wrapping_sub(lo);
        // Branch-free refill: the refills follow the data, which no predictor can guess.
        // The second of a pair reads from the end (past the start, an index past the end,
        // which reads 0).
        let at = if lane.back {
            lane.words
                .len()
                .checked_sub(lane.pos + 2)
                .unwrap_or(usize::MAX / 2)
        } else {
            lane.pos
        };
        let w = word_at(lane.words, at);
        let refill = (x < RANS_L) as u32;
        lane.x = (x << (16 * refill)) | (w & refill.wrapping_neg());
        lane.pos += 2 * refill as usize;
        sym
    }

    /// The checks at the end of a sub-block: every byte read, the state back where the encoder
    /// started it. (Every symbol decoded is a value's: a context's table gives a symbol or the
    /// escape, the level's table a symbol.)
    fn finish(&self, r: usize, lane: &Lane<'_>) -> Result<(), String> {
        if !self.paired && lane.pos != lane.words.len() {
            return Err(format!(
                "sub-block {r} has {} bytes of words, decoding reads {}",
                lane.words.len(),
                lane.pos
            ));
        }
        if lane.x != RANS_L {
            return Err(format!("sub-block {r} decodes to a wrong final state"));
        }
        Ok(())
    }

    /// Decodes block `i` (stored as `data`) whole into `out`, which must have the block's
    /// length: the sub-blocks side by side, their steps interleaved (independent chains that
    /// the processor overlaps). Damaged data is an error, never a panic; on error `out` is
    /// zeroed.
    pub(crate) fn decode_block(&self, i: u64, data: &[u8], out: &mut [i8]) -> Result<(), String> {
        let r = self.decode_block_(i, data, out);
        if r.is_err() {
            out.fill(0);
        }
        r
    }

    fn decode_block_(&self, i: u64, data: &[u8], out: &mut [i8]) -> Result<(), String> {
        let ends = self.streams(data)?;
        let miss = self.miss();
        let s = self.layout.s as i8;
        let mut bufs = [[miss; PAD + SUB]; 2];
        // Two sub-blocks at a time, their state in locals (registers), their steps
        // interleaved.
        for r in (0..self.subs).step_by(2) {
            let (ba, bb) = bufs.split_at_mut(1);
            let (ba, bb) = (&mut ba[0], &mut bb[0]);
            let mut a = self.lane(i, data, out.len(), &ends, r);
            let mut b = self.lane(i, data, out.len(), &ends, r + 1);
            let common = a.len.min(b.len);
            for p in PAD..PAD + common {
                self.step(&mut a, ba, p);
                self.step(&mut b, bb, p);
            }
            for p in PAD + common..PAD + a.len {
                self.step(&mut a, ba, p);
            }
            for p in PAD + common..PAD + b.len {
                self.step(&mut b, bb, p);
            }
            if self.paired && a.pos + b.pos != a.words.len() {
                return Err(format!(
                    "sub-blocks {r} and {} have {} bytes of words, decoding reads {}",
                    r + 1,
                    a.words.len(),
                    a.pos + b.pos
                ));
            }
            for (q, (lane, buf)) in [(a, &*ba), (b, &*bb)].into_iter().enumerate() {
                self.finish(r + q, &lane)?;
                let first = ((r + q) * SUB).min(out.len());
                let o = &mut out[first..first + lane.len];
                for (o, &y) in o.iter_mut().zip(&buf[PAD..]) {
                    *o = 2 * y as i8 - s;
                }
            }
        }
        Ok(())
    }

    /// Where the word streams of the sub-blocks of a block stored as `data` end, checked: each
    /// within the block, the last ending where it ends (entries past the last sub-block: the
    /// block's end).
    fn streams(&self, data: &[u8]) -> Result<[usize; MAX_SUBS], String> {
        let (head, subs) = (self.head(), self.streams_per_block());
        if data.len() < head {
            return Err(format!(
                "block of {} bytes, shorter than its {head} bytes of states and lengths",
                data.len()
            ));
        }
        if !(data.len() - head).is_multiple_of(2) {
            return Err(format!("block of {} bytes: an odd number", data.len()));
        }
        let mut ends = [data.len(); MAX_SUBS];
        let mut start = head;
        for (r, end) in ends.iter_mut().enumerate().take(subs - 1) {
            let at = 4 * self.subs + 2 * r;
            *end = start + 2 * u16::from_le_bytes([data[at], data[at + 1]]) as usize;
            if *end > data.len() {
                return Err(format!(
                    "block of {} bytes, its streams run past its end",
                    data.len()
                ));
            }
            start = *end;
        }
        Ok(ends)
    }

    /// Decodes value `q` of block `i` (of `len` values) and returns it, decoding only its
    /// sub-block up to it (a probe: stops early, so only damage that makes it read past the
    /// end is seen; the block's checksum sees the rest).
    pub(crate) fn decode_at(
        &self,
        i: u64,
        data: &[u8],
        len: usize,
        q: usize,
    ) -> Result<i8, String> {
        if q >= len {
            return Err(format!("value {q} of a block of {len}"));
        }
        let r = q / SUB;
        let lane = &mut self.lane(i, data, len, &self.streams(data)?, r);
        let mut buf = [self.miss(); PAD + SUB];
        let last = PAD + q % SUB;
        for p in PAD..=last {
            self.step(lane, &mut buf, p);
        }
        if lane.pos > lane.words.len() {
            return Err(format!(
                "sub-block {r}: decoding value {q} reads past the end of its words"
            ));
        }
        Ok(2 * buf[last] as i8 - self.layout.s as i8)
    }
}

/// The decoder of one sub-block.
#[derive(Clone, Copy)]
struct Lane<'a> {
    /// The rANS state.
    x: u32,
    /// The sub-block's renormalisation words.
    words: &'a [u8],
    /// Bytes of `words` read.
    pos: usize,
    /// Whether `words` are read from their end backwards (the second of a pair).
    back: bool,
    /// Where the next value lies.
    cur: Cursor,
    /// The [`Columns`] of its strip.
    cols: Columns,
    /// Values in the sub-block.
    len: usize,
}

/// The symbols of values of level `s`: `(v + s) / 2`; an error for a value out of range or of
/// the wrong parity.
fn to_symbols(values: &[i8], s: u32, out: &mut [u8]) -> Result<(), String> {
    let s = s as i32;
    for (o, &v) in out.iter_mut().zip(values) {
        let x = v as i32 + s;
        if !(0..=2 * s).contains(&x) || x % 2 != 0 {
            return Err(format!("value {v} is not a value of level {s}"));
        }
        *o = (x / 2) as u8;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_a_bijection_and_gather_scatter_invert() {
        for (m, s) in [(1, 5), (2, 7), (3, 6), (4, 9), (6, 5)] {
            let r = Ranker::new(m);
            let n = r.level_size(s);
            let layout = Layout::new(m, s);
            assert_eq!(layout.len(), n);
            let mut seen = vec![false; n as usize];
            let mut cells = [0u8; 2 * MAX_HOUSES];
            let mut by_pos = vec![0u64; n as usize];
            for idx in 0..n {
                r.unrank(idx, s, &mut cells);
                let p = layout.file_pos(&cells);
                assert!(!seen[p as usize], "m={m} s={s} place {p} twice");
                seen[p as usize] = true;
                by_pos[p as usize] = idx;
            }
            // The cursor walks the file order: its group is the mover's seeds, and
            // `cursor(p)` agrees with advancing from 0.
            let mut c = layout.cursor(0);
            for (p, &idx) in by_pos.iter().enumerate() {
                assert_eq!(layout.cursor(p as u64), c, "m={m} s={s} p={p}");
                r.unrank(idx, s, &mut cells);
                let t: u32 = cells[..m].iter().map(|&x| x as u32).sum();
                assert_eq!(c.t as u32, t);
                layout.advance(&mut c);
            }
            let values: Vec<i8> = (0..n).map(|i| (i % 251) as i8).collect();
            let file = layout.gather(&values);
            for (p, &idx) in by_pos.iter().enumerate() {
                assert_eq!(file[p], values[idx as usize]);
            }
            // Written back run by run (blocks of any length, from any place): every index
            // once.
            let rows = layout.rows();
            for len in [1usize, 7, 64, 1000] {
                let back: Vec<AtomicI8> = (0..n).map(|_| AtomicI8::new(-1)).collect();
                for (c, run) in file.chunks(len).enumerate() {
                    layout.write(&rows, (c * len) as u64, run, &back);
                }
                let back: Vec<i8> = back.into_iter().map(AtomicI8::into_inner).collect();
                assert_eq!(back, values, "m={m} s={s} runs of {len}");
            }
            // Any run of places read straight from the level in index order.
            for first in (0..n).step_by(7) {
                for len in [1, 2, 63, 64, 65, 200, 1000] {
                    let len = len.min(n - first) as usize;
                    let mut out = vec![0i8; len];
                    layout.read(&rows, &values, first, &mut out);
                    assert_eq!(
                        out,
                        file[first as usize..first as usize + len],
                        "m={m} s={s}"
                    );
                }
            }
        }
    }

    /// Values with the parity of the level and some structure.
    fn level_values(m: usize, s: u32) -> Vec<i8> {
        let r = Ranker::new(m);
        let n = r.level_size(s);
        let mut cells = [0u8; 2 * MAX_HOUSES];
        (0..n)
            .map(|i| {
                r.unrank(i, s, &mut cells);
                let mine: i32 = cells[..m].iter().map(|&x| x as i32).sum();
                let v = (2 * mine - s as i32 + (cells[0] as i32 % 3) * 2 - 2)
                    .clamp(-(s as i32), s as i32);
                v as i8
            })
            .collect()
    }

    /// Encodes a level's values (index order) block by block.
    fn encode_level(model: &GridModel, file: &[i8]) -> Vec<Vec<u8>> {
        file.chunks(model.block())
            .enumerate()
            .map(|(i, b)| {
                let mut enc = Vec::new();
                model.encode_block(i as u64, b, &mut enc);
                enc
            })
            .collect()
    }

    #[test]
    fn columns_name_their_neighbours() {
        for (m, s) in [(2, 5), (3, 6), (4, 9), (6, 7)] {
            let layout = Layout::new(m, s);
            let r = Ranker::new(m);
            let mut pos = 0;
            while pos < layout.len() {
                let c = layout.cursor(pos);
                let cols = layout.columns(&c);
                let side = |rank: u64| {
                    let mut b = [0u8; MAX_HOUSES];
                    r.unrank_part(rank, s - c.t as u32, &mut b[..m]);
                    b
                };
                for j in 0..c.w {
                    let rb = c.k * STRIP + j;
                    let b = side(rb);
                    let col = cols[j as usize];
                    // The carry flag: the column to the left is not this side with one seed
                    // moved back between the last two houses.
                    if j > 0 {
                        let mut near = side(rb - 1);
                        let neighbour = near[m - 1] > 0 && {
                            near[m - 1] -= 1;
                            near[m - 2] += 1;
                            near == b
                        };
                        assert_eq!(col & COLUMN_CARRY == 0, neighbour, "m={m} s={s} rb={rb}");
                    }
                    // The distance to the side with one seed moved from the third-last house
                    // to the next.
                    let d = (col & (COLUMN_CARRY - 1)) as u64;
                    if m >= 3 && b[m - 3] > 0 {
                        let mut moved = b;
                        moved[m - 3] -= 1;
                        moved[m - 2] += 1;
                        assert_eq!(r.rank_part(&moved[..m], s - c.t as u32), rb - d);
                    } else {
                        assert_eq!(d, 0);
                    }
                }
                pos += c.w * layout.groups[c.t].rows;
            }
        }
    }

    #[test]
    fn blocks_round_trip_and_probe() {
        for (m, s) in [(2, 9), (3, 8), (6, 6), (4, 10), (2, 30), (6, 9)] {
            let values = level_values(m, s);
            let layout = Layout::new(m, s);
            let file = layout.gather(&values);
            let model = GridModel::fit(&file, layout.clone()).unwrap();
            let bytes = model.to_bytes();
            let model = GridModel::from_bytes(&bytes, m, s, 3).unwrap();
            assert_eq!(model.to_bytes(), bytes);
            // A model of format versions 1 and 2 (no carry flag), in their wider form.
            let old = GridModel::fit_v2(&file, layout).to_bytes_v2();
            let old_model = GridModel::from_bytes(&old, m, s, 2).unwrap();
            assert_eq!(old_model.to_bytes_v2(), old);
            assert!(GridModel::from_bytes(&old, m, s, 3).is_err());
            // Blocks of format version 3, and of versions 1 and 2.
            for model in [model, old_model] {
                for (i, (block, enc)) in file
                    .chunks(model.block())
                    .zip(encode_level(&model, &file))
                    .enumerate()
                {
                    let i = i as u64;
                    let mut out = vec![0i8; block.len()];
                    model.decode_block(i, &enc, &mut out).unwrap();
                    assert_eq!(out, block, "m={m} s={s} block {i}");
                    let len = block.len();
                    let mut qs = vec![0, len / 2, len - 1];
                    qs.extend((0..len).step_by(97));
                    qs.extend([SUB - 1, SUB, 3 * SUB + 1].iter().filter(|&&q| q < len));
                    for q in qs {
                        assert_eq!(model.decode_at(i, &enc, len, q).unwrap(), block[q]);
                    }
                    assert!(model.decode_at(i, &enc, len, len).is_err());
                    // Damage: never a panic, never a value out of range; a whole-block decode
                    // finds every change of a byte of states, lengths or the first words.
                    for at in 0..enc.len().min(model.head() + 16) {
                        let mut bad = enc.clone();
                        bad[at] ^= 0x5a;
                        match model.decode_block(i, &bad, &mut out) {
                            Ok(()) => {
                                assert!(out.iter().all(|&v| (-(s as i8)..=s as i8).contains(&v)))
                            }
                            Err(_) => assert!(out.iter().all(|&v| v == 0)),
                        }
                        for q in [0, len - 1] {
                            if let Ok(v) = model.decode_at(i, &bad, len, q) {
                                assert!((-(s as i8)..=s as i8).contains(&v));
                            }
                        }
                    }
                    let head = model.head();
                    for cut in [0, 1, head - 1, head, enc.len() / 2, enc.len() - 1] {
                        if cut >= enc.len() {
                            continue;
                        }
                        assert!(model.decode_block(i, &enc[..cut], &mut out).is_err());
                    }
                }
            }
        }
    }

    #[test]
    fn values_the_model_has_not_seen_are_escaped() {
        for (m, s, step) in [(3, 9, 3), (6, 6, 5), (4, 11, 2)] {
            let layout = Layout::new(m, s);
            let file = layout.gather(&level_values(m, s));
            // Counted on a sample, and on other values altogether.
            let sampled = GridModel::fit_sampled(&file, layout.clone(), step).unwrap();
            let mut rng = 0x9e37_79b9_7f4a_7c15u64;
            let other: Vec<i8> = file
                .iter()
                .map(|&v| {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    if rng.is_multiple_of(5) {
                        (2 * (rng % (s as u64 + 1)) as i32 - s as i32) as i8
                    } else {
                        v
                    }
                })
                .collect();
            let reloaded = GridModel::from_bytes(&sampled.to_bytes(), m, s, 3).unwrap();
            for values in [&file, &other] {
                let enc = encode_level(&sampled, values);
                for (i, (block, enc)) in values.chunks(BLOCK).zip(&enc).enumerate() {
                    assert_eq!(reloaded.block(), BLOCK);
                    let mut out = vec![0i8; block.len()];
                    reloaded.decode_block(i as u64, enc, &mut out).unwrap();
                    assert_eq!(&out[..], block, "m={m} s={s} block {i}");
                    for q in (0..block.len()).step_by(31) {
                        assert_eq!(
                            reloaded.decode_at(i as u64, enc, block.len(), q).unwrap(),
                            block[q]
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn bad_values_and_models_are_errors() {
        let layout = Layout::new(2, 4);
        let mut file = layout.gather(&level_values(2, 4));
        file[3] = 1; // odd in an even level
        assert!(GridModel::fit(&file, layout.clone()).is_err());
        file[3] = 6;
        assert!(GridModel::fit(&file, layout.clone()).is_err());
        assert!(GridModel::fit(&file[1..], layout.clone()).is_err());
        assert!(GridModel::fit(
            &Layout::new(2, 31).gather(&level_values(2, 31)),
            Layout::new(2, 31)
        )
        .is_err());
        let file = layout.gather(&level_values(2, 4));
        let model = GridModel::fit(&file, layout.clone()).unwrap();
        let old = GridModel::fit_v2(&file, layout);
        for (version, good, model) in [(3, model.to_bytes(), model), (2, old.to_bytes_v2(), old)] {
            let enc = encode_level(&model, &file);
            assert!(GridModel::from_bytes(&good, 2, 4, version).is_ok());
            assert!(GridModel::from_bytes(&good, 2, 5, version).is_err());
            assert!(GridModel::from_bytes(&good, 2, 31, version).is_err());
            for cut in 0..good.len() {
                assert!(GridModel::from_bytes(&good[..cut], 2, 4, version).is_err());
            }
            let mut extended = good.clone();
            extended.push(0);
            assert!(GridModel::from_bytes(&extended, 2, 4, version).is_err());
            for at in 0..good.len() {
                for x in [1u8, 0x80, 0xff] {
                    let mut bad = good.clone();
                    bad[at] ^= x;
                    // Every change is an error or a model that still decodes safely.
                    if let Ok(m) = GridModel::from_bytes(&bad, 2, 4, version) {
                        let mut out = vec![0i8; file.len()];
                        if m.decode_block(0, &enc[0], &mut out).is_ok() {
                            assert!(out.iter().all(|&v| (-4..=4).contains(&v)));
                        }
                        let _ = m.decode_at(0, &enc[0], file.len(), file.len() - 1);
                    }
                }
            }
        }
    }
}
