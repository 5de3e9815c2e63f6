//! Solving one level in order of potential, with children numbered from per-side tables.
//!
//! A board of level `s` is a pair of sides: the mover's `a` (`t` seeds) and the opponent's `b`
//! (`s - t`). In the numbering of [`Ranker`] the boards with one mover's side `a` are
//! consecutive, in the order of the rank of `b`: board `(a, b)` has index `first(a) + rank(b)`.
//! So most children can be numbered from a term of the mover's side, computed once per side,
//! and a term of the opponent's side, read from a table computed once per level:
//!
//! - a move that ends on the mover's side without a capture (*short*): the child `(b, a')` is
//!   in the same level, at `first_s(b) + rank(a')`;
//! - a move that ends in the store (*extra turn*): the child `(a', b)` is in level `s - 1`, at
//!   `first_{s-1}(a') + rank(b)`;
//! - a move that ends on the opponent's side without a lap (*past*, `k` seeds to the opponent):
//!   the child `(b + 1_k, a')` is in level `s - 1`, at `first_{s-1}(b + 1_k) + rank(a')`.
//!
//! Other moves (captures, whose child depends on the opposite house; laps) are sown and numbered
//! board by board, as [`LevelSolver`](super::build::LevelSolver) does.
//!
//! Only short moves stay in the level, and they lower the potential (seeds times distance to
//! their owner's store, see DESIGN-NOTES.md) by at least one. So the boards are solved in
//! phases of equal potential `P = pot(a) + pot(b)`: in each phase every same-level child is
//! already known, and the boards of a phase are independent of each other. With the sides of
//! each seed count grouped by potential, a phase is, per mover's side `a`, the list of
//! opponent's sides `b` of potential `P - pot(a)`. Boards with `t` mover's seeds have their
//! same-level children among the boards with `s - t`, so the pairs `{t, s - t}` are solved
//! independently of each other.
//!
//! Compared with walking the level in index order and computing unknown same-level children
//! by recursion, this numbers most children with one addition and never sows a board twice.

use super::build::UNKNOWN;
use super::rank::Ranker;
use super::sow::{self, Sower};
use super::values::Values;
use crate::board::Board;
use crate::rules::{Capture, EndRule, Rules, MAX_HOUSES};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicI8, Ordering::Relaxed};

/// Boards whose children are loaded together.
const BATCH: usize = 16;

/// The sides of one seed count `r` (compositions of `r` into `m` houses), in rank order, and
/// grouped by potential.
struct Sides {
    /// Per rank: the houses packed into a `u64`, house `i` in byte `i`.
    packed: Vec<u64>,
    /// Per potential `p` (`0..=m r`), the ranks of that potential: `by_pot[start[p]..start[p + 1]]`,
    /// ascending.
    by_pot: Vec<u32>,
    start: Vec<u32>,
}

impl Sides {
    fn new(m: usize, r: u32, count: u64) -> Sides {
        let mut packed = Vec::with_capacity(count as usize);
        let mut pots = Vec::with_capacity(count as usize);
        let mut cells = [0u8; MAX_HOUSES];
        cells[m - 1] = r as u8;
        loop {
            let mut p = 0u64;
            let mut pot = 0u32;
            for (i, &c) in cells[..m].iter().enumerate() {
                p |= (c as u64) << (8 * i);
                pot += c as u32 * (m - i) as u32;
            }
            packed.push(p);
            pots.push(pot);
            if !next_composition(&mut cells[..m]) {
                break;
            }
        }
        debug_assert_eq!(packed.len() as u64, count);
        let top = m * r as usize;
        let mut start = vec![0u32; top + 2];
        for &p in &pots {
            start[p as usize + 1] += 1;
        }
        for p in 1..start.len() {
            start[p] += start[p - 1];
        }
        let mut fill = start.clone();
        let mut by_pot = vec![0u32; pots.len()];
        for (j, &p) in pots.iter().enumerate() {
            by_pot[fill[p as usize] as usize] = j as u32;
            fill[p as usize] += 1;
        }
        Sides {
            packed,
            by_pot,
            start,
        }
    }

    /// The ranks of the sides of potential `p` (none if out of range).
    fn of_pot(&self, p: i64) -> &[u32] {
        if p < 0 || p as usize + 1 >= self.start.len() {
            return &[];
        }
        let p = p as usize;
        &self.by_pot[self.start[p] as usize..self.start[p + 1] as usize]
    }

    /// The highest potential with sides, plus one.
    fn pot_end(&self) -> i64 {
        self.start.len() as i64 - 1
    }
}

/// The next composition in rank order (lexicographic, first house most significant), or
/// `false` past the last.
fn next_composition(side: &mut [u8]) -> bool {
    let m = side.len();
    let mut j = m;
    while j > 0 && side[j - 1] == 0 {
        j -= 1;
    }
    // The last composition has every seed in the first house.
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

/// How a move's child is numbered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Kind {
    /// Same level, at `first_s(b) + konst`.
    #[default]
    Short,
    /// Level `s - 1`, at `konst + rank(b)`.
    Extra,
    /// Level `s - 1`, at `first_{s-1}(b + 1_k) + konst`.
    Past,
    /// Sown and numbered board by board.
    Sown,
}

/// One move of a mover's side.
#[derive(Clone, Copy, Debug, Default)]
struct SideMove {
    kind: Kind,
    house: u8,
    /// Seeds sown onto the opponent's side ([`Kind::Past`]).
    k: u8,
    konst: u64,
}

/// A mover's side with its moves, for one grid.
#[derive(Clone, Copy, Debug, Default)]
struct Row {
    packed: u64,
    /// Index of the side's first board.
    first: u64,
    count: u8,
    moves: [SideMove; MAX_HOUSES],
}

/// Per opponent's side `b` (of one seed count), for level `s`: `b` packed, `first_s(b)`, and
/// `first_{s-1}(b + 1_k)` for `k = 1..=m` (0 where `b + 1_k` has more than `s - 1` seeds).
struct Columns {
    stride: usize,
    data: Vec<u64>,
}

impl Columns {
    /// The table of the sides of `r` seeds for level `s`.
    fn new(ranker: &Ranker, s: u32, r: u32, sides: &Sides) -> Columns {
        let m = ranker.houses();
        let stride = m + 2;
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
    lower: &'a [Values],
    cur: &'a [AtomicI8],
    /// Per seed count `0..=s`.
    sides: &'a [Sides],
    /// Per seed count `0..=s`, as opponent's sides in level `s`.
    columns: &'a [Columns],
}

impl Sweep<'_> {
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
            let pack = |x: &[u8; 8]| u64::from_le_bytes(*x);
            let seeds = |x: &[u8; 8]| x[..m].iter().map(|&v| v as u32).sum::<u32>();
            if c < m - h {
                let last = h + c;
                let capture = cells[last] == 0 && self.rules.capture != Capture::Never;
                if !capture {
                    mv.kind = Kind::Short;
                    mv.konst = self.ranker.rank_part(&after[..m], t);
                }
            } else if c == m - h {
                mv.kind = Kind::Extra;
                mv.konst = first(self.ranker, m, pack(&after), t - 1, s - 1);
            } else if c <= 2 * m - h {
                mv.kind = Kind::Past;
                mv.k = (c - (m - h)) as u8;
                mv.konst = self.ranker.rank_part(&after[..m], seeds(&after));
            }
            row.moves[row.count as usize] = mv;
            row.count += 1;
        }
        row
    }

    /// Solves the boards `(row, b)` for the opponent's sides `b` of ranks `js` (seed count `u`).
    fn solve_boards(&self, row: &Row, u: u32, js: &[u32]) {
        let m = self.m;
        let s = self.s;
        let t = s - u;
        let cols = &self.columns[u as usize];
        let stride = cols.stride;
        if t == 0 || (u == 0 && self.rules.end == EndRule::Either) {
            for &j in js {
                let cells =
                    row.packed as u128 | (cols.data[j as usize * stride] as u128) << (8 * m);
                let b = Board::from_raw(m, sow::unpack(cells));
                let v = b.final_value(&self.rules).expect("a side is empty");
                self.cur[(row.first + j as u64) as usize].store(v as i8, Relaxed);
            }
            return;
        }
        let moves = &row.moves[..row.count as usize];
        for batch in js.chunks(BATCH) {
            // Per board and move: child level, gain, extra turn, child index.
            let mut kids = [[(0u32, 0i32, false, 0usize); MAX_HOUSES]; BATCH];
            for (kid, &j) in kids.iter_mut().zip(batch) {
                let col = &cols.data[j as usize * stride..(j as usize + 1) * stride];
                for (k, mv) in kid.iter_mut().zip(moves) {
                    *k = match mv.kind {
                        Kind::Short => (s, 0, false, (col[1] + mv.konst) as usize),
                        Kind::Extra => (s - 1, 1, true, (mv.konst + j as u64) as usize),
                        Kind::Past => (
                            s - 1,
                            1,
                            false,
                            (col[1 + mv.k as usize] + mv.konst) as usize,
                        ),
                        Kind::Sown => {
                            let cells = row.packed as u128 | (col[0] as u128) << (8 * m);
                            let sw = self.sower.sow(cells, mv.house as usize);
                            let l = s - sw.gain;
                            (
                                l,
                                sw.gain as i32,
                                sw.extra,
                                self.ranker.index_packed(sw.next, l) as usize,
                            )
                        }
                    };
                }
            }
            let mut values = [[0i8; MAX_HOUSES]; BATCH];
            for (vs, kid) in values.iter_mut().zip(&kids[..batch.len()]) {
                for (v, &(l, _, _, idx)) in vs.iter_mut().zip(&kid[..moves.len()]) {
                    *v = if l == s {
                        self.cur[idx].load(Relaxed)
                    } else {
                        self.lower[l as usize][idx]
                    };
                }
            }
            for ((vs, kid), &j) in values.iter().zip(&kids).zip(batch) {
                let mut best = i32::MIN;
                for (&v, &(_, gain, extra, _)) in vs.iter().zip(&kid[..moves.len()]) {
                    debug_assert_ne!(v, UNKNOWN, "a child is solved before its parent");
                    let x = if extra {
                        gain + v as i32
                    } else {
                        gain - v as i32
                    };
                    best = best.max(x);
                }
                self.cur[(row.first + j as u64) as usize].store(best as i8, Relaxed);
            }
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
        // Per grid (mover's seed count x): the rows, computed once.
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
        let top: i64 = grids
            .iter()
            .map(|&x| self.sides[x as usize].pot_end() + self.sides[(s - x) as usize].pot_end())
            .max()
            .unwrap_or(0);
        for p in 0..=top {
            if cancel.load(Relaxed) {
                return false;
            }
            // The (grid, row potential) groups of this phase.
            let mut groups = Vec::new();
            for (g, &x) in grids.iter().enumerate() {
                let rs = &self.sides[x as usize];
                let cs = &self.sides[(s - x) as usize];
                for alpha in 0..rs.pot_end() {
                    if !rs.of_pot(alpha).is_empty() && !cs.of_pot(p - alpha).is_empty() {
                        groups.push((g, alpha));
                    }
                }
            }
            groups.par_iter().for_each(|&(g, alpha)| {
                let x = grids[g];
                let u = s - x;
                let js = self.sides[u as usize].of_pot(p - alpha);
                let rank_rows = self.sides[x as usize].of_pot(alpha);
                let per = (4096 / js.len()).max(1);
                rank_rows.par_chunks(per).for_each(|chunk| {
                    for &i in chunk {
                        self.solve_boards(&rows[g][i as usize], u, js);
                    }
                    advance((chunk.len() * js.len()) as u64);
                });
            });
        }
        true
    }
}

/// Computes every value of level `s` (all lower levels given) into `values`, which holds the
/// level's size of anything. Calls `advance(n)` as batches of `n` positions finish. Returns
/// `None` if `cancel` was raised.
pub(crate) fn solve_level(
    rules: &Rules,
    ranker: &Ranker,
    s: u32,
    lower: &[Values],
    mut values: Values,
    advance: &(dyn Fn(u64) + Sync),
    cancel: &AtomicBool,
) -> Option<Values> {
    assert_eq!(values.len() as u64, ranker.level_size(s));
    let m = ranker.houses();
    let sides: Vec<Sides> = (0..=s)
        .into_par_iter()
        .map(|r| Sides::new(m, r, ranker.count(m, r)))
        .collect();
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
        sides: &sides,
        columns: &columns,
    };
    // Largest pairs first, so that the small ones fill the gaps at the end.
    let mut pairs: Vec<u32> = (0..=s / 2).collect();
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
                let mut lower: Vec<Values> = Vec::new();
                for s in 0..=top {
                    let n = ranker.level_size(s) as usize;
                    let fresh = || Values::filled(n, UNKNOWN).unwrap();
                    let a =
                        solve_level(&rules, &ranker, s, &lower, fresh(), &|_| {}, &cancel).unwrap();
                    let b = super::super::build::solve_level(
                        &rules,
                        &ranker,
                        s,
                        &lower,
                        fresh(),
                        &|_| {},
                        &cancel,
                    )
                    .unwrap();
                    assert!(a.iter().all(|&v| v != UNKNOWN), "{rules} level {s}");
                    assert_eq!(&a[..], &b[..], "{rules} level {s}");
                    lower.push(a);
                }
            }
        }
    }

    #[test]
    fn progress_counts_every_position_and_cancel_stops() {
        let rules = Rules::all_variants(6, 0)[0];
        let ranker = Ranker::new(6);
        let cancel = AtomicBool::new(false);
        let mut lower = Vec::new();
        for s in 0..=6 {
            let n = ranker.level_size(s) as usize;
            let counted = std::sync::atomic::AtomicU64::new(0);
            let v = solve_level(
                &rules,
                &ranker,
                s,
                &lower,
                Values::filled(n, UNKNOWN).unwrap(),
                &|k| {
                    counted.fetch_add(k, Relaxed);
                },
                &cancel,
            )
            .unwrap();
            assert_eq!(counted.into_inner(), n as u64, "level {s}");
            lower.push(v);
        }
        let n = ranker.level_size(7) as usize;
        cancel.store(true, Relaxed);
        let v = Values::filled(n, UNKNOWN).unwrap();
        assert!(solve_level(&rules, &ranker, 7, &lower, v, &|_| {}, &cancel).is_none());
    }
}
