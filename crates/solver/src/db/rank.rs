//! A dense numbering of the boards of one level (one number of seeds in the houses).
//!
//! Every composition of `s` seeds into the `2m` houses gets an index in `0..C(s+2m-1, 2m-1)`;
//! boards with an empty side are numbered too (under the end rule `mover` they are not all
//! terminal, and numbering them keeps the index simple).
//!
//! Order, from most to least significant:
//! 1. `k`, the seeds on the mover's side (groups `k = 0..=s`);
//! 2. the rank of the opponent's side among the compositions of `s - k` into `m` houses;
//! 3. the rank of the mover's side among the compositions of `k` into `m` houses.
//!
//! The mover's side varies fastest. A move changes the mover's side most, and the child is seen
//! by the other player (sides swapped), so the children of consecutive boards are mostly boards
//! whose *opponent* side differs: close together in their own level. That locality is what makes
//! the builder fast.
//!
//! A side is ranked in lexicographic order of its houses (house 1 most significant) by the
//! combinatorial number system: the compositions of `r` seeds into `p` houses number
//! `N(p, r) = C(r + p - 1, p - 1)`, and the compositions whose first house holds fewer than `c`
//! seeds number `N(p, r) - N(p, r - c)` (hockey-stick identity).

use crate::rules::MAX_HOUSES;

/// The largest level the tables cover (values must fit an `i8` as well).
pub(crate) const MAX_LEVEL: u32 = 127;

const R: usize = MAX_LEVEL as usize + 1;
const P: usize = 2 * MAX_HOUSES + 1;

/// Counting tables for one number of houses.
#[derive(Clone, Debug)]
pub(crate) struct Ranker {
    m: usize,
    /// `n[p][r]`: compositions of `r` seeds into `p` houses (saturating at `u64::MAX`).
    n: Vec<[u64; R]>,
    /// `group[s][k]`: the first index of group `k` in level `s` (`group[s][s+1]` = level size).
    group: Vec<Vec<u64>>,
}

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
        let mut n = vec![[0u64; R]; P];
        n[0][0] = 1;
        for (p, row) in n.iter_mut().enumerate().skip(1) {
            for (r, x) in row.iter_mut().enumerate() {
                let c = binom((r + p - 1) as u64, (p - 1) as u64);
                *x = if c > u64::MAX as u128 {
                    u64::MAX
                } else {
                    c as u64
                };
            }
        }
        let mut group = Vec::with_capacity(R);
        for s in 0..R {
            let mut g = Vec::with_capacity(s + 2);
            let mut acc: u64 = 0;
            g.push(0);
            for k in 0..=s {
                let size = n[m][k].saturating_mul(n[m][s - k]);
                acc = acc.saturating_add(size);
                g.push(acc);
            }
            group.push(g);
        }
        Ranker { m, n, group }
    }

    /// Houses per side.
    pub(crate) fn houses(&self) -> usize {
        self.m
    }

    /// Boards in level `s` (saturating; levels that saturate are refused by their users).
    #[inline]
    pub(crate) fn level_size(&self, s: u32) -> u64 {
        self.group[s as usize][s as usize + 1]
    }

    /// Compositions of `r` seeds into one side.
    #[inline]
    fn side_count(&self, r: usize) -> u64 {
        self.n[self.m][r]
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

    /// The rank of one side holding `total` seeds.
    #[inline]
    pub(crate) fn rank_side(&self, side: &[u8], total: u32) -> u64 {
        let m = self.m;
        let mut r = total as usize;
        let mut acc = 0u64;
        for (i, &c) in side[..m - 1].iter().enumerate() {
            let p = m - i;
            let c = c as usize;
            acc += self.n[p][r] - self.n[p][r - c];
            r -= c;
        }
        acc
    }

    /// The side of rank `rank` among those holding `total` seeds.
    pub(crate) fn unrank_side(&self, mut rank: u64, total: u32, side: &mut [u8]) {
        let m = self.m;
        let mut r = total as usize;
        for (i, cell) in side[..m - 1].iter_mut().enumerate() {
            let p = m - i;
            let mut c = 0usize;
            while rank >= self.n[p][r] - self.n_at(p, r, c + 1) {
                c += 1;
            }
            rank -= self.n[p][r] - self.n[p][r - c];
            r -= c;
            *cell = c as u8;
        }
        side[m - 1] = r as u8;
    }

    /// The index of a board (cells mover's side first, `2m` used) in level `s`, its seed count.
    #[inline]
    pub(crate) fn index(&self, cells: &[u8], s: u32) -> u64 {
        let m = self.m;
        let k: u32 = cells[..m].iter().map(|&x| x as u32).sum();
        let g = self.group[s as usize][k as usize];
        g + self.rank_side(&cells[m..2 * m], s - k) * self.side_count(k as usize)
            + self.rank_side(&cells[..m], k)
    }

    /// The board of index `index` in level `s`, written into `cells[..2m]`.
    pub(crate) fn unrank(&self, index: u64, s: u32, cells: &mut [u8]) {
        let m = self.m;
        let g = &self.group[s as usize];
        // The group: the last k with g[k] <= index.
        let mut k = 0usize;
        while g[k + 1] <= index {
            k += 1;
        }
        let within = index - g[k];
        let per = self.side_count(k);
        self.unrank_side(within / per, s - k as u32, &mut cells[m..2 * m]);
        self.unrank_side(within % per, k as u32, &mut cells[..m]);
    }
}

/// Steps through the boards of one level in index order.
#[derive(Clone, Debug)]
pub(crate) struct Walker {
    m: usize,
    s: u32,
    k: u32,
    /// The current board, mover's side first.
    pub(crate) cells: [u8; 2 * MAX_HOUSES],
}

/// The next composition in lexicographic order (same total), or `false` at the last one.
#[inline]
fn next_composition(side: &mut [u8]) -> bool {
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

/// The first composition in lexicographic order: every seed in the last house.
#[inline]
fn first_composition(side: &mut [u8], total: u32) {
    side.fill(0);
    let m = side.len();
    side[m - 1] = total as u8;
}

impl Walker {
    /// A walker positioned at board `index` of level `s`.
    pub(crate) fn at(ranker: &Ranker, s: u32, index: u64) -> Walker {
        let mut cells = [0u8; 2 * MAX_HOUSES];
        ranker.unrank(index, s, &mut cells);
        let m = ranker.houses();
        let k = cells[..m].iter().map(|&x| x as u32).sum();
        Walker { m, s, k, cells }
    }

    /// Moves to the next board in index order (past the last board it stays put).
    #[inline]
    pub(crate) fn advance(&mut self) {
        let m = self.m;
        if next_composition(&mut self.cells[..m]) {
            return;
        }
        first_composition(&mut self.cells[..m], self.k);
        if next_composition(&mut self.cells[m..2 * m]) {
            return;
        }
        if self.k < self.s {
            self.k += 1;
            first_composition(&mut self.cells[..m], self.k);
            first_composition(&mut self.cells[m..2 * m], self.s - self.k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binom_small(n: u64, k: u64) -> u64 {
        binom(n, k) as u64
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
            }
        }
    }
}
