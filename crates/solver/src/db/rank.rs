//! A dense numbering of the boards of one level (one number of seeds in the houses).
//!
//! Every composition of `s` seeds into the `2m` houses gets an index in `0..C(s+2m-1, 2m-1)`;
//! boards with an empty side are numbered too (under the end rule `mover` they are not all
//! terminal, and numbering them keeps the index simple).
//!
//! Order: lexicographic over the `2m` houses, the mover's side first (mover's house 1 most
//! significant). Among the orders measured (grouping by the seeds on each side, either side
//! first, houses reversed), this one compressed best by far (level 14, 6 houses: 25.7% of a
//! byte per board against 30.2% for the mover-seeds-grouped order), and the builder's speed
//! hardly depends on it.
//!
//! Ranks come from the combinatorial number system: the compositions of `r` seeds into `p` houses number
//! `N(p, r) = C(r + p - 1, p - 1)`, and the compositions whose first house holds fewer than `c`
//! seeds number `N(p, r) - N(p, r - c)` (hockey-stick identity).

use crate::rules::MAX_HOUSES;

/// The largest level the tables cover (values must fit an `i8` as well).
pub(crate) const MAX_LEVEL: u32 = 127;

/// The largest level a database may hold (values are stored as `i8`).
pub const MAX_DB_LEVEL: u32 = MAX_LEVEL;

/// Number of boards with `seeds` seeds in the houses and `houses` houses per side:
/// `C(seeds + 2 houses - 1, 2 houses - 1)`.
pub fn level_size(houses: usize, seeds: u32) -> u64 {
    assert!(seeds <= MAX_DB_LEVEL);
    Ranker::new(houses).level_size(seeds)
}

const R: usize = MAX_LEVEL as usize + 1;
/// Rows of the counting table: a power of two above `2 * MAX_HOUSES`, so that masked indices
/// need no bounds checks.
const P: usize = 32;

/// Counting tables for one number of houses.
#[derive(Clone, Debug)]
pub(crate) struct Ranker {
    m: usize,
    /// `n[p][r]`: compositions of `r` seeds into `p` houses (saturating at `u64::MAX`). Fixed
    /// sizes, so that masked indices need no bounds checks.
    n: Box<[[u64; R]; P]>,
    /// `below[p][r] = N(p, r - 1)`, zero for `r = 0` (for [`Ranker::index_packed`]).
    below: Box<[[u64; R]; P]>,
}

#[cfg(test)]
fn binom(n: u64, k: u64) -> u128 {
    let k = k.min(n - k);
    let mut acc: u128 = 1;
    for i in 0..k {
        acc = acc * (n - i) as u128 / (i + 1) as u128;
        if acc > u64::MAX as u128 {
            return u64::MAX as u128 + 1;
        }
    }
    acc
}

impl Ranker {
    /// Tables for `m` houses per side.
    pub(crate) fn new(m: usize) -> Ranker {
        assert!((1..=MAX_HOUSES).contains(&m));
        let mut n = Box::new([[0u64; R]; P]);
        n[0][0] = 1;
        // Pascal's rule, N(p, r) = N(p - 1, r) + N(p, r - 1), saturating: a sum saturates
        // exactly when the binomial exceeds u64::MAX.
        for p in 1..=2 * MAX_HOUSES {
            n[p][0] = 1;
            for r in 1..R {
                n[p][r] = n[p - 1][r].saturating_add(n[p][r - 1]);
            }
        }
        let mut below = Box::new([[0u64; R]; P]);
        for (b, row) in below.iter_mut().zip(n.iter()) {
            b[1..].copy_from_slice(&row[..R - 1]);
        }
        Ranker { m, n, below }
    }

    /// Houses per side.
    pub(crate) fn houses(&self) -> usize {
        self.m
    }

    /// Boards in level `s` (saturating; levels that saturate are refused by their users).
    #[inline]
    pub(crate) fn level_size(&self, s: u32) -> u64 {
        self.n[2 * self.m][s as usize]
    }

    #[inline]
    fn n_at(&self, p: usize, r: usize, c: usize) -> u64 {
        // N(p, r - c), zero when c > r.
        if c > r {
            0
        } else {
            self.n[p][r - c]
        }
    }

    /// The index of a board (cells mover's side first, `2m` used) in level `s`, its seed count:
    /// the formula of FORMAT.md step by step, the reference that the tests hold
    /// [`Ranker::index_packed`] (used everywhere else) to.
    #[cfg(test)]
    pub(crate) fn index(&self, cells: &[u8], s: u32) -> u64 {
        self.rank_part(&cells[..2 * self.m], s)
    }

    /// Compositions of `r` seeds into `p` houses (`p` up to `2 MAX_HOUSES`, saturating).
    #[inline]
    pub(crate) fn count(&self, p: usize, r: u32) -> u64 {
        self.n[p][r as usize]
    }

    /// The rank of `cells` (any number of houses up to `2 MAX_HOUSES`, `r` seeds in all) among
    /// the compositions of `r` into that many houses, in lexicographic order (first house
    /// most significant): `Ranker::index` for part of a board, such as one side.
    pub(crate) fn rank_part(&self, cells: &[u8], r: u32) -> u64 {
        let p = cells.len();
        let mut r = r as usize;
        let mut acc = 0u64;
        for (i, &c) in cells[..p - 1].iter().enumerate() {
            let q = p - i;
            let c = c as usize;
            // Masks are no-ops for valid boards (q <= 16, r <= 127) and spare the bounds checks.
            let row = &self.n[q & (P - 1)];
            acc += row[r & (R - 1)] - row[(r - c) & (R - 1)];
            r -= c;
        }
        acc
    }

    /// [`Ranker::index`] of a board packed into a `u128` (house `i` in byte `i`; see
    /// `sow::pack`), computed without a chain of dependent steps: with `P_i = c_0 + .. + c_i`
    /// and Pascal's rule `N(q, r) - N(q + 1, r) = -N(q + 1, r - 1)`, the sum telescopes into
    ///
    /// ```text
    /// index = N(2m, s) - 1 - sum over 1 <= i < 2m of N(2m - i + 1, s - P_{i-1} - 1)
    /// ```
    ///
    /// whose terms are independent table loads. The prefix sums come from one multiplication
    /// (every byte stays below 128, so no carry crosses bytes).
    #[inline]
    pub(crate) fn index_packed(&self, cells: u128, s: u32) -> u64 {
        // One copy per board size, so that the loop over the houses unrolls.
        match self.m {
            1 => self.index_packed_p::<2>(cells, s),
            2 => self.index_packed_p::<4>(cells, s),
            3 => self.index_packed_p::<6>(cells, s),
            4 => self.index_packed_p::<8>(cells, s),
            5 => self.index_packed_p::<10>(cells, s),
            6 => self.index_packed_p::<12>(cells, s),
            7 => self.index_packed_p::<14>(cells, s),
            _ => self.index_packed_p::<16>(cells, s),
        }
    }

    /// [`Ranker::index_packed`] for `2m = Q` houses.
    #[inline(always)]
    fn index_packed_p<const Q: usize>(&self, cells: u128, s: u32) -> u64 {
        let ones = u128::from_le_bytes([1; 16]);
        let prefix = cells.wrapping_mul(ones).to_le_bytes();
        let s = s as usize;
        let mut acc = self.n[Q & (P - 1)][s & (R - 1)].wrapping_sub(1);
        for i in 1..Q {
            let q = Q - i + 1;
            // Masks are no-ops for valid boards and spare the bounds checks.
            let y = s.wrapping_sub(prefix[(i - 1) & 15] as usize);
            acc = acc.wrapping_sub(self.below[q & (P - 1)][y & (R - 1)]);
        }
        acc
    }

    /// The board of index `index` in level `s`, written into `cells[..2m]`.
    pub(crate) fn unrank(&self, index: u64, s: u32, cells: &mut [u8]) {
        self.unrank_part(index, s, &mut cells[..2 * self.m]);
    }

    /// The composition of `r` seeds into `cells.len()` houses of rank `index` (the inverse of
    /// [`Ranker::rank_part`]).
    pub(crate) fn unrank_part(&self, mut index: u64, r: u32, cells: &mut [u8]) {
        let p = cells.len();
        let mut r = r as usize;
        for (i, cell) in cells[..p - 1].iter_mut().enumerate() {
            let q = p - i;
            let mut c = 0usize;
            while index >= self.n[q][r] - self.n_at(q, r, c + 1) {
                c += 1;
            }
            index -= self.n[q][r] - self.n[q][r - c];
            r -= c;
            *cell = c as u8;
        }
        cells[p - 1] = r as u8;
    }
}

/// Steps through the boards of one level in index order.
#[derive(Clone, Debug)]
pub(crate) struct Walker {
    p: usize,
    /// The current board, mover's side first.
    pub(crate) cells: [u8; 2 * MAX_HOUSES],
}

impl Walker {
    /// A walker positioned at board `index` of level `s`.
    pub(crate) fn at(ranker: &Ranker, s: u32, index: u64) -> Walker {
        let mut cells = [0u8; 2 * MAX_HOUSES];
        ranker.unrank(index, s, &mut cells);
        Walker {
            p: 2 * ranker.houses(),
            cells,
        }
    }

    /// Moves to the next board in index order: the next composition in lexicographic order
    /// (past the last board it stays put).
    #[inline]
    pub(crate) fn advance(&mut self) {
        next_composition(&mut self.cells[..self.p]);
    }
}

/// Steps `side` (any number of houses) to the next composition in lexicographic order, first
/// house most significant: the order of [`Ranker::rank_part`]. Returns `false`, leaving it as
/// it is, at the last one (every seed in the first house).
#[inline]
pub(crate) fn next_composition(side: &mut [u8]) -> bool {
    let m = side.len();
    // The last non-empty house.
    let mut j = m;
    while j > 0 && side[j - 1] == 0 {
        j -= 1;
    }
    if j <= 1 {
        return false;
    }
    let j = j - 1;
    let rest = side[j];
    side[j] = 0;
    side[j - 1] += 1;
    side[m - 1] = rest - 1;
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binom_small(n: u64, k: u64) -> u64 {
        binom(n, k) as u64
    }

    #[test]
    fn counting_tables_are_saturated_binomials() {
        let r = Ranker::new(MAX_HOUSES);
        for p in 1..=2 * MAX_HOUSES {
            for s in 0..R {
                let b = binom((s + p - 1) as u64, (p - 1) as u64).min(u64::MAX as u128) as u64;
                assert_eq!(r.count(p, s as u32), b, "N({p}, {s})");
            }
        }
    }

    #[test]
    fn level_sizes_are_binomials() {
        for m in 1..=6 {
            let r = Ranker::new(m);
            for s in 0..=20u32 {
                let want = binom_small(s as u64 + 2 * m as u64 - 1, 2 * m as u64 - 1);
                assert_eq!(r.level_size(s), want, "m={m} s={s}");
            }
        }
        // All levels up to 24 seeds, 6 houses: C(36, 12).
        let r = Ranker::new(6);
        let total: u64 = (0..=24).map(|s| r.level_size(s)).sum();
        assert_eq!(total, 1_251_677_700);
    }

    #[test]
    fn walk_rank_unrank_round_trip_exhaustively() {
        for m in 1..=4usize {
            let r = Ranker::new(m);
            let max_s = [0, 12, 9, 7, 5][m];
            for s in 0..=max_s {
                let size = r.level_size(s);
                let mut w = Walker::at(&r, s, 0);
                let mut seen = std::collections::HashSet::new();
                for i in 0..size {
                    let cells = &w.cells[..2 * m];
                    assert_eq!(cells.iter().map(|&x| x as u32).sum::<u32>(), s);
                    assert_eq!(r.index(cells, s), i, "m={m} s={s} {cells:?}");
                    let packed = crate::db::sow::pack(&w.cells);
                    assert_eq!(r.index_packed(packed, s), i, "m={m} s={s} {cells:?}");
                    let mut back = [0u8; 2 * MAX_HOUSES];
                    r.unrank(i, s, &mut back);
                    assert_eq!(&back[..2 * m], cells);
                    assert!(seen.insert(cells.to_vec()));
                    let w2 = Walker::at(&r, s, i);
                    assert_eq!(w2.cells, w.cells);
                    w.advance();
                }
                assert_eq!(seen.len() as u64, size);
            }
        }
    }

    #[test]
    fn six_house_samples_round_trip() {
        let r = Ranker::new(6);
        for s in [10u32, 24, 30] {
            let size = r.level_size(s);
            let mut cells = [0u8; 2 * MAX_HOUSES];
            for i in [0, 1, size / 3, size / 2, size - 2, size - 1] {
                r.unrank(i, s, &mut cells);
                assert_eq!(r.index(&cells[..12], s), i);
                assert_eq!(r.index_packed(crate::db::sow::pack(&cells), s), i);
            }
        }
    }
}
