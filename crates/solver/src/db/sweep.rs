//! Solving one level in order of potential, with children numbered from per-side tables.
//!
//! A board of level `s` is a pair of sides: the mover's `a` (`t` seeds) and the opponent's `b`
//! (`u = s - t`). In the numbering of [`Ranker`] the boards with one mover's side `a` are
//! consecutive (a *row*), at `first(a) + rank(b)`.
//!
//! **The builder's order.** While building, each row is kept in an order of its own: the
//! opponent's sides sorted by potential (seeds times distance to the store), then by rank. Board
//! `(a, b)` is at `first(a) + place(b)`, where `place` depends only on the houses and the seeds of
//! `b`. Rows stay where they are, so a level changes between this order and index order row by
//! row ([`Orders::put_in_index_order`], [`Orders::put_in_builder_order`]); files are always in index
//! order.
//!
//! **Children from tables.** Most children are numbered from a term of the mover's side,
//! computed once per side, and a term of the opponent's side, read from a table computed once
//! per level:
//!
//! - a move that ends on the mover's side without a capture (*short*): the child `(b, a')` is
//!   in the same level, at `first_s(b) + place(a')`;
//! - a move that ends in the store (*extra turn*): the child `(a', b)` is in level `s - 1`, at
//!   `first_{s-1}(a') + place(b)`;
//! - a move that ends on the opponent's side without a lap (*past*, `k` seeds to the opponent):
//!   the child `(b + 1_k, a')` is in level `s - 1`, at `first_{s-1}(b + 1_k) + place(a')`;
//! - a move that ends in an empty house of the mover's (*capture*, the opponent's house `k`
//!   taken): the child `(b without house k, a')` is in level `s - 1 - b[k]`, at
//!   `first_{s-1-b[k]}(b without house k) + place(a')` (under the standard rule, a capture of
//!   an empty house is no capture: the move is short).
//!
//! Moves with a lap (more seeds than houses up to the mover's own) are sown and numbered board
//! by board.
//!
//! **Phases.** Only short moves stay in the level, and a short move lowers the potential of the
//! mover's side. Write a board's potentials as the cell `(pot(a), pot(b))`: the children of
//! cell `(x, y)` in the level lie in cells `(y, x')` with `x' < x`. So with cells taken in order
//! of `(max, min)` every child comes first, and for each potential `p`:
//!
//! 1. the cells `(p, y)` with `y < p` (their children have both potentials below `p`), then
//! 2. the cells `(x, p)` with `x <= p` (their children are cells `(p, x')` of step 1).
//!
//! The boards of one step are independent of each other. In the builder's order the opponent's
//! sides of one step are one run of each row, so a step writes runs, and the extra-turn
//! children of a run are a run of the level below. Boards with `t` mover's seeds have their
//! same-level children among the boards with `s - t`, so the pairs `{t, s - t}` are solved
//! independently of each other.
//!
//! Compared with walking the level in index order and computing unknown same-level children
//! by recursion (`recheck::solve_level`, kept as a check in the tests), this numbers most
//! children with one addition, never sows a board twice, and reads and writes in runs.

use super::lower::Lower;
use super::rank::{next_composition, Ranker};
use super::sow::{self, Sower};
use super::values::Values;
use crate::board::Board;
use crate::rules::{Capture, EndRule, Rules, MAX_HOUSES};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicI8, Ordering::Relaxed};

/// Boards whose children are loaded together.
const BATCH: usize = 16;

/// The sides of one seed count `r` (compositions of `r` into `m` houses), in the builder's
/// order: by potential, then by rank.
struct Sides {
    /// Per place: the houses packed into a `u64`, house `i` in byte `i`.
    packed: Vec<u64>,
    /// Per place: the rank.
    rank: Vec<u32>,
    /// Per rank: the place.
    place: Vec<u32>,
    /// Per potential `p` (`0..=m r`), the sides of that potential are the places
    /// `start[p]..start[p + 1]`.
    start: Vec<u32>,
}

impl Sides {
    fn new(m: usize, r: u32, count: u64) -> Sides {
        let n = count as usize;
        let mut by_rank = Vec::with_capacity(n);
        let mut cells = [0u8; MAX_HOUSES];
        cells[m - 1] = r as u8;
        loop {
            let mut p = 0u64;
            let mut pot = 0u32;
            for (i, &c) in cells[..m].iter().enumerate() {
                p |= (c as u64) << (8 * i);
                pot += c as u32 * (m - i) as u32;
            }
            by_rank.push((p, pot));
            if !next_composition(&mut cells[..m]) {
                break;
            }
        }
        assert_eq!(by_rank.len(), n);
        let mut start = vec![0u32; m * r as usize + 2];
        for &(_, pot) in &by_rank {
            start[pot as usize + 1] += 1;
        }
        for p in 1..start.len() {
            start[p] += start[p - 1];
        }
        let mut fill = start.clone();
        let mut packed = vec![0u64; n];
        let mut rank = vec![0u32; n];
        let mut place = vec![0u32; n];
        for (j, &(p, pot)) in by_rank.iter().enumerate() {
            let at = fill[pot as usize] as usize;
            fill[pot as usize] += 1;
            packed[at] = p;
            rank[at] = j as u32;
            place[j] = at as u32;
        }
        Sides {
            packed,
            rank,
            place,
            start,
        }
    }

    /// The places of the sides of potential below `p`.
    fn below(&self, p: usize) -> std::ops::Range<usize> {
        0..self.start[p.min(self.start.len() - 1)] as usize
    }

    /// The places of the sides of potential `p`.
    fn at(&self, p: usize) -> std::ops::Range<usize> {
        let end = self.start.len() - 1;
        self.start[p.min(end)] as usize..self.start[(p + 1).min(end)] as usize
    }

    /// One more than the highest potential.
    fn pot_end(&self) -> usize {
        self.start.len() - 1
    }
}

/// The sides of every seed count up to a level, for one number of houses.
pub(crate) struct Orders {
    sides: Vec<Sides>,
}

impl Orders {
    /// The sides of `0..=s` seeds.
    pub(crate) fn new(ranker: &Ranker, s: u32) -> Orders {
        let m = ranker.houses();
        Orders {
            sides: (0..=s)
                .into_par_iter()
                .map(|r| Sides::new(m, r, ranker.count(m, r)))
                .collect(),
        }
    }

    /// The rows of level `s` in index order: `(first index, mover's seeds)`.
    fn rows(ranker: &Ranker, s: u32) -> Vec<(u64, u32)> {
        let m = ranker.houses();
        // The mover's sides with at most s seeds, in lexicographic order, are the
        // compositions of s into m + 1 parts (the last part the opponent's seeds).
        let mut cells = [0u8; MAX_HOUSES + 1];
        cells[m] = s as u8;
        let mut rows = Vec::new();
        let mut at = 0u64;
        loop {
            let u = cells[m] as u32;
            rows.push((at, s - u));
            at += ranker.count(m, u);
            if !next_composition(&mut cells[..m + 1]) {
                break;
            }
        }
        debug_assert_eq!(at, ranker.level_size(s));
        rows
    }

    /// Reorders every row of level `s` in place: the value at place `j` of a row whose
    /// opponent's sides hold `u` seeds moves to place `map(sides of u, j)`.
    fn permute(
        &self,
        ranker: &Ranker,
        s: u32,
        values: &mut Values,
        map: impl Fn(&Sides, usize) -> usize + Sync,
    ) {
        assert!(self.sides.len() > s as usize);
        assert_eq!(values.len() as u64, ranker.level_size(s));
        let out = values.as_atomic();
        Orders::rows(ranker, s)
            .par_iter()
            .with_min_len(64)
            .for_each_init(Vec::new, |buf, &(first, t)| {
                let sides = &self.sides[(s - t) as usize];
                let first = first as usize;
                let row = &out[first..first + sides.packed.len()];
                buf.clear();
                buf.extend(row.iter().map(|v| v.load(Relaxed)));
                for (j, &v) in buf.iter().enumerate() {
                    row[map(sides, j)].store(v, Relaxed);
                }
            });
    }

    /// Puts level `s`, in the builder's order, in index order (in place).
    pub(crate) fn put_in_index_order(&self, ranker: &Ranker, s: u32, values: &mut Values) {
        self.permute(ranker, s, values, |sides, j| sides.rank[j] as usize)
    }

    /// Puts level `s`, in index order, in the builder's order (in place).
    pub(crate) fn put_in_builder_order(&self, ranker: &Ranker, s: u32, values: &mut Values) {
        self.permute(ranker, s, values, |sides, j| sides.place[j] as usize)
    }
}

/// How a move's child is numbered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Kind {
    /// Same level, at `first_s(b) + konst`.
    #[default]
    Short,
    /// Level `s - 1`, at `konst + place(b)`.
    Extra,
    /// Level `s - 1`, at `first_{s-1}(b + 1_k) + konst`.
    Past,
    /// A move that ends in an empty house of the mover's, facing the opponent's house `k`:
    /// captures `b[k]` and the last seed, to level `s - 1 - b[k]`, at
    /// `first_{s-1-b[k]}(b without house k) + konst`; except, under the standard capture rule,
    /// when `b[k]` is empty: then a short move, at `first_s(b) + konst2`.
    Capture,
    /// Sown and numbered board by board (laps).
    Sown,
}

/// One move of a mover's side.
#[derive(Clone, Copy, Debug, Default)]
struct SideMove {
    kind: Kind,
    house: u8,
    /// Seeds sown onto the opponent's side ([`Kind::Past`]), or the opponent's house
    /// captured ([`Kind::Capture`]).
    k: u8,
    konst: u64,
    konst2: u64,
}

/// A mover's side with its moves.
#[derive(Clone, Copy, Debug, Default)]
struct Row {
    packed: u64,
    /// Index of the side's first board.
    first: u64,
    count: u8,
    moves: [SideMove; MAX_HOUSES],
}

/// Per opponent's side `b` of one seed count, by place, for level `s`: `b` packed,
/// `first_s(b)`, `first_{s-1}(b + 1_k)` for `k = 1..=m` (0 where `b + 1_k` has more than
/// `s - 1` seeds), and `first_{s-1-b[k]}(b without house k)` for `k = 0..m` (0 where the
/// level is `s`).
struct Columns {
    stride: usize,
    data: Vec<u64>,
}

impl Columns {
    /// The table of the sides of `r` seeds for level `s`.
    fn new(ranker: &Ranker, s: u32, r: u32, sides: &Sides) -> Columns {
        let m = ranker.houses();
        let stride = 2 * m + 2;
        let mut data = vec![0u64; sides.packed.len() * stride];
        data.par_chunks_mut(stride * 1024)
            .enumerate()
            .for_each(|(c, chunk)| {
                for (i, e) in chunk.chunks_mut(stride).enumerate() {
                    let b = sides.packed[c * 1024 + i];
                    e[0] = b;
                    e[1] = first(ranker, m, b, r, s);
                    for k in 1..=m {
                        if r + (k as u32) < s {
                            let ones = (0..k).fold(0u64, |a, i| a | 1 << (8 * i));
                            e[1 + k] = first(ranker, m, b + ones, r + k as u32, s - 1);
                        }
                    }
                    if r < s {
                        for k in 0..m {
                            let bk = (b >> (8 * k)) as u32 & 0xff;
                            let rest = b & !(0xff << (8 * k));
                            e[2 + m + k] = first(ranker, m, rest, r - bk, s - 1 - bk);
                        }
                    }
                }
            });
        Columns { stride, data }
    }
}

/// Index of the first board of level `level` whose mover's side is `side` (`seeds` seeds):
/// the board with the rest of the seeds in the opponent's last house.
fn first(ranker: &Ranker, m: usize, side: u64, seeds: u32, level: u32) -> u64 {
    let cells = side as u128 | ((level - seeds) as u128) << (8 * (2 * m - 1));
    ranker.index_packed(cells, level)
}

/// The solver of one level.
struct Sweep<'a> {
    rules: Rules,
    ranker: &'a Ranker,
    sower: Sower,
    m: usize,
    s: u32,
    lower: &'a [Lower],
    cur: &'a [AtomicI8],
    /// Per seed count `0..=s`.
    sides: &'a [Sides],
    /// Per seed count `0..=s`, as opponent's sides in level `s`.
    columns: &'a [Columns],
}

impl Sweep<'_> {
    /// The place of side `x` (`r` seeds) in its rows.
    fn place(&self, x: &[u8], r: u32) -> u64 {
        self.sides[r as usize].place[self.ranker.rank_part(x, r) as usize] as u64
    }

    /// The index in the builder's order of the packed board `cells` of level `l`.
    fn index(&self, cells: u128, l: u32) -> usize {
        let m = self.m;
        let lex = self.ranker.index_packed(cells, l);
        let y = sow::unpack(cells);
        let r: u32 = y[m..2 * m].iter().map(|&c| c as u32).sum();
        let rank = self.ranker.rank_part(&y[m..2 * m], r);
        (lex - rank + self.sides[r as usize].place[rank as usize] as u64) as usize
    }

    /// The moves of mover's side `a` (`t` seeds) in level `s`.
    fn row(&self, a: u64, t: u32) -> Row {
        let m = self.m;
        let s = self.s;
        let cells = a.to_le_bytes();
        let mut row = Row {
            packed: a,
            first: first(self.ranker, m, a, t, s),
            ..Row::default()
        };
        for h in 0..m {
            let c = cells[h] as usize;
            if c == 0 {
                continue;
            }
            let mut mv = SideMove {
                house: h as u8,
                kind: Kind::Sown,
                ..SideMove::default()
            };
            // The mover's side after sowing, as far as the store.
            let mut after = cells;
            after[h] = 0;
            for x in after[h + 1..m.min(h + 1 + c)].iter_mut() {
                *x += 1;
            }
            let seeds: u32 = after[..m].iter().map(|&v| v as u32).sum();
            if c < m - h {
                let last = h + c;
                mv.kind = Kind::Short;
                mv.konst = self.place(&after[..m], t);
                if cells[last] == 0 && self.rules.capture != Capture::Never {
                    // The last seed and the opposite house go to the store.
                    mv.kind = Kind::Capture;
                    mv.k = (m - 1 - last) as u8;
                    mv.konst2 = mv.konst;
                    let mut taken = after;
                    taken[last] = 0;
                    mv.konst = self.place(&taken[..m], t - 1);
                }
            } else if c == m - h {
                mv.kind = Kind::Extra;
                mv.konst = first(self.ranker, m, u64::from_le_bytes(after), t - 1, s - 1);
            } else if c <= 2 * m - h {
                mv.kind = Kind::Past;
                mv.k = (c - (m - h)) as u8;
                mv.konst = self.place(&after[..m], seeds);
            }
            row.moves[row.count as usize] = mv;
            row.count += 1;
        }
        row
    }

    /// Solves the boards `(row, b)` for the opponent's sides `b` at places `js` (seed count
    /// `u`).
    fn solve_boards(&self, row: &Row, u: u32, js: std::ops::Range<usize>) {
        let m = self.m;
        let s = self.s;
        let t = s - u;
        let cols = &self.columns[u as usize];
        let stride = cols.stride;
        let first = row.first as usize;
        if t == 0 || (u == 0 && self.rules.end == EndRule::Either) {
            for j in js {
                let cells = row.packed as u128 | (cols.data[j * stride] as u128) << (8 * m);
                let b = Board::from_raw(m, sow::unpack(cells));
                let v = b.final_value(&self.rules).expect("a side is empty");
                self.cur[first + j].store(v as i8, Relaxed);
            }
            return;
        }
        let moves = &row.moves[..row.count as usize];
        let standard = self.rules.capture == Capture::Standard;
        // Same-level children are solved before their parents (checked in debug builds: the
        // tests start from an array of `UNKNOWN`).
        let unknown = |v: i8| debug_assert_ne!(v, super::recheck::UNKNOWN, "child not solved yet");
        let lower = |l: u32, idx: usize| -> i8 {
            if l == s {
                let v = self.cur[idx].load(Relaxed);
                unknown(v);
                v
            } else {
                self.lower[l as usize].get(idx)
            }
        };
        let mut j0 = js.start;
        while j0 < js.end {
            let j1 = (j0 + BATCH).min(js.end);
            let n = j1 - j0;
            let col = |i: usize| &cols.data[(j0 + i) * stride..(j0 + i + 1) * stride];
            // Move by move: the children of the batch numbered, then their values loaded
            // (independent loads, which the processor overlaps) and taken into the best.
            let mut best = [i32::MIN; BATCH];
            for mv in moves {
                let mut vals = [0i32; BATCH];
                let konst = mv.konst as usize;
                match mv.kind {
                    Kind::Short => {
                        let cur = self.cur;
                        for (i, v) in vals[..n].iter_mut().enumerate() {
                            let x = cur[col(i)[1] as usize + konst].load(Relaxed);
                            unknown(x);
                            *v = -(x as i32);
                        }
                    }
                    Kind::Extra => match self.lower[s as usize - 1].full() {
                        Some(all) => {
                            let below = &all[konst + j0..konst + j1];
                            for (v, &x) in vals[..n].iter_mut().zip(below) {
                                *v = 1 + x as i32;
                            }
                        }
                        None => {
                            let below = &self.lower[s as usize - 1];
                            for (i, v) in vals[..n].iter_mut().enumerate() {
                                *v = 1 + below.get(konst + j0 + i) as i32;
                            }
                        }
                    },
                    Kind::Past => {
                        let k = 1 + mv.k as usize;
                        match self.lower[s as usize - 1].full() {
                            Some(below) => {
                                for (i, v) in vals[..n].iter_mut().enumerate() {
                                    *v = 1 - below[col(i)[k] as usize + konst] as i32;
                                }
                            }
                            None => {
                                let below = &self.lower[s as usize - 1];
                                for (i, v) in vals[..n].iter_mut().enumerate() {
                                    *v = 1 - below.get(col(i)[k] as usize + konst) as i32;
                                }
                            }
                        }
                    }
                    Kind::Capture => {
                        let k = mv.k as usize;
                        for (i, v) in vals[..n].iter_mut().enumerate() {
                            let c = col(i);
                            let bk = (c[0] >> (8 * k)) as u32 & 0xff;
                            *v = if bk == 0 && standard {
                                -(lower(s, (c[1] + mv.konst2) as usize) as i32)
                            } else {
                                let x = lower(s - 1 - bk, c[2 + m + k] as usize + konst);
                                1 + bk as i32 - x as i32
                            };
                        }
                    }
                    Kind::Sown => {
                        for (i, v) in vals[..n].iter_mut().enumerate() {
                            let cells = row.packed as u128 | (col(i)[0] as u128) << (8 * m);
                            let sw = self.sower.sow(cells, mv.house as usize);
                            let l = s - sw.gain;
                            let x = lower(l, self.index(sw.next, l)) as i32;
                            *v = sw.gain as i32 + if sw.extra { x } else { -x };
                        }
                    }
                }
                for (b, &v) in best.iter_mut().zip(&vals[..n]) {
                    *b = (*b).max(v);
                }
            }
            for (i, &b) in best[..n].iter().enumerate() {
                self.cur[first + j0 + i].store(b as i8, Relaxed);
            }
            j0 = j1;
        }
    }

    /// Solves the boards whose mover's side holds `t` or `s - t` seeds. Returns `false` if
    /// cancelled.
    fn solve_pair(&self, t: u32, advance: &(dyn Fn(u64) + Sync), cancel: &AtomicBool) -> bool {
        let s = self.s;
        let mut grids = vec![t];
        if s - t != t {
            grids.push(s - t);
        }
        // Per grid (mover's seed count x): the rows by place, computed once.
        let rows: Vec<Vec<Row>> = grids
            .iter()
            .map(|&x| {
                self.sides[x as usize]
                    .packed
                    .par_iter()
                    .with_min_len(256)
                    .map(|&a| self.row(a, x))
                    .collect()
            })
            .collect();
        let top = grids
            .iter()
            .map(|&x| self.sides[x as usize].pot_end())
            .max()
            .unwrap_or(0);
        for p in 0..top.max(1) {
            for step in 0..2 {
                if cancel.load(Relaxed) {
                    return false;
                }
                // Step 0: rows of potential p, opponent's sides below p. Step 1: rows of
                // potential up to p, opponent's sides of potential p.
                let work: Vec<(usize, std::ops::Range<usize>, std::ops::Range<usize>)> = grids
                    .iter()
                    .enumerate()
                    .map(|(g, &x)| {
                        let rs = &self.sides[x as usize];
                        let cs = &self.sides[(s - x) as usize];
                        if step == 0 {
                            (g, rs.at(p), cs.below(p))
                        } else {
                            (g, rs.below(p + 1), cs.at(p))
                        }
                    })
                    .filter(|(_, r, c)| !r.is_empty() && !c.is_empty())
                    .collect();
                work.par_iter().for_each(|(g, rs, cs)| {
                    let u = s - grids[*g];
                    let per = (4096 / cs.len()).max(1);
                    rows[*g][rs.clone()].par_chunks(per).for_each(|chunk| {
                        for row in chunk {
                            self.solve_boards(row, u, cs.clone());
                        }
                        advance((chunk.len() * cs.len()) as u64);
                    });
                });
            }
        }
        true
    }
}

/// Computes every value of level `s` into `values` (which holds the level's size of anything),
/// in the builder's order, from the lower levels in the builder's order; with `only`, just the
/// boards whose mover's side holds `t` or `s - t` seeds for `t` in `only` (a slice: see
/// `slice.rs`), the others left as they are. Calls `advance(n)` as batches of `n` positions
/// finish. Returns `None` if `cancel` was raised.
#[allow(clippy::too_many_arguments)]
pub(crate) fn solve_level(
    rules: &Rules,
    ranker: &Ranker,
    orders: &Orders,
    s: u32,
    lower: &[Lower],
    mut values: Values,
    only: Option<&[u32]>,
    advance: &(dyn Fn(u64) + Sync),
    cancel: &AtomicBool,
) -> Option<Values> {
    assert_eq!(values.len() as u64, ranker.level_size(s));
    assert!(orders.sides.len() > s as usize);
    let m = ranker.houses();
    let sides = &orders.sides[..=s as usize];
    let columns: Vec<Columns> = (0..=s)
        .map(|r| Columns::new(ranker, s, r, &sides[r as usize]))
        .collect();
    let sweep = &Sweep {
        rules: rules.play_rules(),
        ranker,
        sower: Sower::new(rules),
        m,
        s,
        lower,
        cur: values.as_atomic(),
        sides,
        columns: &columns,
    };
    // Largest pairs first, so that the small ones fill the gaps at the end.
    let mut pairs: Vec<u32> = (0..=s / 2)
        .filter(|t| only.is_none_or(|o| o.contains(t)))
        .collect();
    pairs.sort_by_key(|&t| std::cmp::Reverse(ranker.count(m, t) * ranker.count(m, s - t)));
    let done = pairs
        .par_iter()
        .with_max_len(1)
        .all(|&t| sweep.solve_pair(t, advance, cancel));
    if !done || cancel.load(Relaxed) {
        return None;
    }
    Some(values)
}

#[cfg(test)]
mod tests {
    use super::super::recheck::UNKNOWN;
    use super::*;

    /// Every level solved by the sweep equals the level solved by the recursive solver, for
    /// every rule variant (the values of both are checked against the reference minimax
    /// elsewhere; this compares every position, including captures, laps and empty sides).
    #[test]
    fn sweep_equals_recursive_solver() {
        let cancel = AtomicBool::new(false);
        for (m, top) in [(1usize, 14u32), (2, 12), (3, 10), (4, 8), (6, 7)] {
            for rules in Rules::all_variants(m, 0) {
                let ranker = Ranker::new(m);
                let orders = Orders::new(&ranker, top);
                // The same levels in the builder's order and in index order.
                let mut lower: Vec<Lower> = Vec::new();
                let mut lower_index: Vec<Lower> = Vec::new();
                for s in 0..=top {
                    let n = ranker.level_size(s) as usize;
                    let fresh = || Values::filled(n, UNKNOWN).unwrap();
                    let mut a = solve_level(
                        &rules,
                        &ranker,
                        &orders,
                        s,
                        &lower,
                        fresh(),
                        None,
                        &|_| {},
                        &cancel,
                    )
                    .unwrap();
                    let b = super::super::recheck::solve_level(
                        &rules,
                        &ranker,
                        s,
                        &lower_index,
                        fresh(),
                        &|_| {},
                        &cancel,
                    )
                    .unwrap();
                    assert!(a.iter().all(|&v| v != UNKNOWN), "{rules} level {s}");
                    let builder = Values::copy_of(&a).unwrap();
                    orders.put_in_index_order(&ranker, s, &mut a);
                    assert_eq!(&a[..], &b[..], "{rules} level {s}");
                    orders.put_in_builder_order(&ranker, s, &mut a);
                    assert_eq!(&a[..], &builder[..], "{rules} level {s}: orders round trip");
                    // Every other level packed: both forms give the same values.
                    if s % 2 == 1 {
                        lower.push(Lower::Packed(
                            super::super::lower::Packed::new(&a, s).unwrap(),
                        ));
                        lower_index.push(Lower::Packed(
                            super::super::lower::Packed::new(&b, s).unwrap(),
                        ));
                    } else {
                        lower.push(Lower::Full(a));
                        lower_index.push(Lower::Full(b));
                    }
                }
            }
        }
    }

    #[test]
    fn progress_counts_every_position_and_cancel_stops() {
        let rules = Rules::all_variants(6, 0)[0];
        let ranker = Ranker::new(6);
        let cancel = AtomicBool::new(false);
        let orders = Orders::new(&ranker, 7);
        let mut lower = Vec::new();
        for s in 0..=6 {
            let n = ranker.level_size(s) as usize;
            let counted = std::sync::atomic::AtomicU64::new(0);
            let v = solve_level(
                &rules,
                &ranker,
                &orders,
                s,
                &lower,
                Values::filled(n, UNKNOWN).unwrap(),
                None,
                &|k| {
                    counted.fetch_add(k, Relaxed);
                },
                &cancel,
            )
            .unwrap();
            assert_eq!(counted.into_inner(), n as u64, "level {s}");
            lower.push(Lower::Full(v));
        }
        let n = ranker.level_size(7) as usize;
        cancel.store(true, Relaxed);
        let v = Values::filled(n, UNKNOWN).unwrap();
        assert!(solve_level(
            &rules,
            &ranker,
            &orders,
            7,
            &lower,
            v,
            None,
            &|_| {},
            &cancel
        )
        .is_none());
    }
}
