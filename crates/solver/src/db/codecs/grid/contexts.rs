//! The contexts of the grid codec: a value's context from its neighbours' symbols (left, up,
//! up-left, two to the left, the board with a seed moved on the opponent's side, and the carry
//! flag), and the ancestors a context without a table of its own falls back to.

use super::layout::{Columns, Cursor, COLUMN_CARRY, STRIP};
use super::SYMS;

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
pub(super) const PAD: usize = STRIP as usize + 2;

/// A buffer for the symbols of a block of `len` values, after [`PAD`] missing ones.
pub(super) fn context_buffer(len: usize, miss: u8) -> Vec<u8> {
    vec![miss; PAD + len]
}

/// The terms of the contexts of one level, as tables: for symbols `a` and `b` (or `miss`),
/// each gradient term already multiplied by its place in the context.
pub(super) struct Terms {
    k: usize,
    miss: u8,
    /// Variants of each context by the carry flag: [`FLAGS`], or 1 without it (format
    /// versions 1 and 2).
    flags: usize,
    /// `g(Lb - L, 1)`, `g(L2 - L, 1)`, `g(UL - U, 2)`, `g(UL - L, 2)` by `[first][second]`.
    t: Box<[[[u32; SYMS]; SYMS]; 4]>,
}

impl Terms {
    /// The tables of level `s` (at most [`MAX_LEVEL`](super::MAX_LEVEL)), for contexts of `flags` variants each
    /// ([`FLAGS`] with the carry flag, 1 without: format versions 1 and 2).
    pub(super) fn new(s: u32, flags: usize) -> Terms {
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
    pub(super) fn context(&self, buf: &[u8], p: usize, c: &Cursor, cols: &Columns) -> usize {
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

/// Shapes of the neighbours of a value: the terms of its context besides `L`, `U` and the
/// carry flag.
pub(super) const SHAPES: usize = 576;
/// Variants of a context by the carry flag (format version 3): whether `L` is the board with
/// one seed moved between the opponent's last two houses or, after a carry of the numbering
/// (a column whose second-last house is empty), one further away. The lowest part of the
/// context, so that the variants of a context share a cache line of the table of contexts. (A
/// like flag for `U` gains little: level 24 of 6 houses takes 30.16% of a byte per value with
/// this flag alone, 30.19% with both, 30.41% with `U`'s alone, 30.43% with neither.)
pub(super) const FLAGS: usize = 2;

/// Contexts of a level whose symbols (with the missing one) number `k`, with `flags` variants
/// each.
pub(super) fn contexts(k: usize, flags: usize) -> usize {
    SHAPES * k * k * flags
}

/// The context a context falls back to when it has no table of its own (`kk` = `k * k`,
/// `flags` variants of each context): without the carry flag, then without the moved-seed
/// term, then also without the two-to-the-left term, then also without the up-left terms (a
/// context that has lost them all is its own parent).
#[inline]
pub(super) fn parent(ctx: usize, kk: usize, flags: usize) -> usize {
    if !ctx.is_multiple_of(flags) {
        return ctx - ctx % flags;
    }
    parent_shape(ctx / flags, kk) * flags
}

/// [`parent`] of a context without its carry flag.
#[inline]
pub(super) fn parent_shape(ctx: usize, kk: usize) -> usize {
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

/// How many steps a context is from its root (0 to 4): the order in which [`prune`](super::model::prune) weighs
/// them.
pub(super) fn depth(ctx: usize, kk: usize, flags: usize) -> usize {
    let mut d = 0;
    let mut c = ctx;
    while parent(c, kk, flags) != c {
        c = parent(c, kk, flags);
        d += 1;
    }
    d
}
