//! One search thread: fail-soft alpha-beta over boards, exact to the end of the game or to a
//! database leaf, with the shared table, enhanced transposition cut-offs, bounds from the seeds
//! left and move ordering.

use super::tt::{self, Entry, Table, NO_MOVE};
use super::{Shared, ODOMETER_PLIES};
use kalah_solver::{Board, Capture, Leftover, Rules};
use std::sync::atomic::Ordering::Relaxed;

/// Nodes counted locally before the shared counter and the stop flags are looked at.
const BATCH: u64 = 1024;

/// Captures of at least this many seeds are tried before extra turns: 6 searched the fewest
/// nodes on 6x4 (docs/experiments.md, "Move ordering").
const BIG_CAPTURE: i32 = 6;

/// ABDADA's marks and deferral (see [`Worker::node`]) only at nodes with more than this many
/// seeds above the database's largest level (without a database: more than this many less
/// one on the board; below, each thread searches its moves in order, and the table alone keeps
/// them apart). Near the leaves the subtrees are a few nodes, too small to share, and each
/// searched child cost a mark and its removal in the shared array. 10 was the best of 0 to 25
/// on 6x5 standard capture over 30 seeds, two threads (docs/experiments.md, "ABDADA away from
/// the leaves", has the timings).
const ABDADA_SEEDS: i32 = 10;

/// A child of a node, with what is known of its value before it is searched.
#[derive(Clone, Copy)]
struct Kid {
    house: u8,
    key: u64,
    extra: bool,
    gain: i32,
    next: Board,
    /// Bounds on the value of the move for the player who makes it.
    lower: i32,
    upper: i32,
    /// Whether the bounds are proven (not from a heuristic bound or the horizon).
    proven: bool,
    /// Ordering score, highest first.
    score: i32,
}

/// The per-thread state of a search.
pub(crate) struct Worker<'a> {
    pub shared: &'a Shared,
    pub rules: Rules,
    /// Boards with at most this many seeds are probed in the database (-1: no database).
    pub leaf: i32,
    pub nodes: u64,
    /// The number of the probe under way: the probe is abandoned once the shared number
    /// moves on (another thread settled it).
    pub epoch: u64,
    pending: u64,
    /// Whether every value has the parity of the seeds in the houses (every seed ends in a
    /// store unless the leftover rule discards seeds), so that proven bounds round to it.
    parity: bool,
    /// Whether this worker keeps the shared [`super::Odometer`] (thread 0).
    pub track: bool,
    /// The ply of the node being searched below the probe's root.
    ply: usize,
    /// Whether that node is expected to fail low (need all its moves).
    pub expect_all: bool,
    /// Threads of the search (ABDADA's deferral only with more than one).
    threads: usize,
}

impl<'a> Worker<'a> {
    pub fn new(shared: &'a Shared) -> Worker<'a> {
        Worker {
            shared,
            rules: shared.rules,
            leaf: shared.leaf,
            nodes: 0,
            epoch: 0,
            pending: 0,
            parity: shared.rules.leftover != Leftover::Discard,
            threads: shared.threads,
            track: false,
            ply: 0,
            expect_all: false,
        }
    }

    fn table(&self) -> &Table {
        &self.shared.table
    }

    /// Counts a node; `None` when the search must stop.
    #[inline]
    fn count(&mut self) -> Option<()> {
        self.nodes += 1;
        self.pending += 1;
        if self.pending >= BATCH {
            self.flush();
            if self.shared.should_stop() {
                return None;
            }
            if self.shared.epoch.load(Relaxed) != self.epoch {
                return None;
            }
        }
        Some(())
    }

    /// Nodes counted here and not yet added to the shared counter.
    pub fn pending(&self) -> u64 {
        self.pending
    }

    /// Adds the locally counted nodes to the shared counter.
    pub fn flush(&mut self) {
        let total = self.shared.nodes.fetch_add(self.pending, Relaxed) + self.pending;
        self.shared.table.note_nodes(self.pending);
        self.pending = 0;
        if total >= self.shared.node_limit.load(Relaxed) {
            self.shared.interrupt();
        }
    }

    /// The exact value of a board that is over or small enough for the database, if it is.
    #[inline]
    fn leaf_value(&self, board: &Board) -> Option<Option<i32>> {
        if let Some(v) = board.final_value(&self.rules) {
            return Some(Some(v));
        }
        if (board.seeds() as i32) <= self.leaf {
            return Some(self.shared.probe(board));
        }
        None
    }

    /// Fail-soft alpha-beta on the value of `board` for the player to move. The result `r` is the value when `alpha < r < beta`, an upper bound when
    /// `r <= alpha`, a lower bound when `r >= beta`. `None` when the search was stopped.
    pub fn search(&mut self, board: &Board, alpha: i32, beta: i32) -> Option<i32> {
        if let Some(v) = self.leaf_value(board) {
            return v;
        }
        Some(self.node::<false>(board, tt::key(board), alpha, beta, 0)?.0)
    }

    /// The depth-limited search of the iterative deepening: like [`Worker::search`], but a
    /// board `depth` moves below `board` (extra turns count as moves) that is neither over nor
    /// in the database takes the value 0 (the store difference so far), and the table's
    /// heuristic bounds of that depth or more cut as well. Returns the value and whether it
    /// is proven (no horizon or heuristic bound decided it), in the fail-soft sense above.
    pub fn search_depth(
        &mut self,
        board: &Board,
        alpha: i32,
        beta: i32,
        depth: u32,
    ) -> Option<(i32, bool)> {
        if let Some(v) = self.leaf_value(board) {
            return Some((v?, true));
        }
        self.node::<true>(board, tt::key(board), alpha, beta, depth.max(1))
    }

    /// The least value a board of `seeds` seeds that is not over can have. Under empty capture
    /// the mover's last non-empty house sows into the store, past it or into an empty house of
    /// its own (a capture), so the mover gains at least one seed.
    #[inline]
    pub fn floor(&self, seeds: i32) -> i32 {
        if self.rules.capture == Capture::Empty {
            2 - seeds
        } else {
            -seeds
        }
    }

    /// A proven lower bound raised to the parity of the values (see [`Worker::parity`]).
    #[inline]
    pub fn round_up(&self, v: i32, seeds: i32) -> i32 {
        if self.parity && (v ^ seeds) & 1 != 0 {
            v + 1
        } else {
            v
        }
    }

    /// A proven upper bound lowered to the parity of the values.
    #[inline]
    pub fn round_down(&self, v: i32, seeds: i32) -> i32 {
        if self.parity && (v ^ seeds) & 1 != 0 {
            v - 1
        } else {
            v
        }
    }

    /// A guess of what the opponent's replies on `next` (the board after a move that passes
    /// the turn) cost to search, used to order moves: when the move refutes, every reply has
    /// to be searched. A reply that ends in the opponent's store counts 6 (the opponent moves
    /// again: another node whose replies all count), one that captures 2 (it takes the board
    /// nearer the database), any other 4. Laps around the board are counted as quiet moves.
    /// Measured on 6x4 over the 22-seed database: 15% fewer nodes under empty capture and
    /// 14% fewer under standard than without it (docs/design.md).
    #[inline]
    fn reply_cost(&self, next: &Board) -> i32 {
        let m = next.houses();
        let c = next.cells();
        let mut cost = 0;
        for i in 0..m {
            let x = c[i] as usize;
            if x == 0 {
                continue;
            }
            let j = i + x;
            // The house the last seed reaches, laps taken off (a division only for a lap).
            let lap = 2 * m + 1;
            let reach = if x < lap { x } else { x % lap };
            cost += if reach == m - i {
                6
            } else if j < m && c[j] == 0 && self.rules.capture.takes(c[2 * m - 1 - j] as u32) {
                2
            } else {
                4
            };
        }
        cost
    }

    /// An inner node: not over, too big for the database. With `H`, a node of the
    /// depth-limited search `depth` (at least 1) moves above its horizon; the flag returned
    /// says whether the value is proven (always so without `H`).
    fn node<const H: bool>(
        &mut self,
        board: &Board,
        key: u64,
        alpha: i32,
        beta: i32,
        depth: u32,
    ) -> Option<(i32, bool)> {
        self.count()?;
        let start_nodes = self.nodes;
        let seeds = board.seeds() as i32;
        let floor = self.floor(seeds);
        // The value lies in [floor, seeds].
        if alpha >= seeds {
            return Some((seeds, true));
        }
        if beta <= floor {
            return Some((floor, true));
        }
        let mut tt_move = NO_MOVE;
        if let Some(e) = self.table().probe(key) {
            if e.lower >= beta || e.lower == e.upper {
                return Some((e.lower, true));
            }
            if e.upper <= alpha {
                return Some((e.upper, true));
            }
            if H {
                if let Some((lo, hi)) = e.heuristic(depth) {
                    if lo >= beta || lo == hi {
                        return Some((lo, false));
                    }
                    if hi <= alpha {
                        return Some((hi, false));
                    }
                }
            }
            tt_move = e.best;
        }

        // Children, with what the rules, the database and the table say before any search
        // (enhanced transposition cut-off).
        let m = board.houses();
        let mut kids = [Kid {
            house: 0,
            key: 0,
            extra: false,
            gain: 0,
            next: *board,
            lower: 0,
            upper: 0,
            proven: true,
            score: 0,
        }; 8];
        let mut n = 0;
        let mut best_upper = i32::MIN;
        let mut best_upper_move = NO_MOVE;
        let mut all_proven = true;
        let mut sown = [None; 8];
        // Database leaves need their key only for the cache in front of the database.
        let leaf_keys = !self.shared.leaves.is_off();
        for (h, slot) in sown.iter_mut().enumerate().take(m) {
            if board.cells()[h] == 0 {
                continue;
            }
            let s = board.sow(&self.rules, h);
            let next = s.next();
            let fin = next.final_value(&self.rules);
            let small = (next.seeds() as i32) <= self.leaf;
            let k = if small && !leaf_keys {
                0
            } else {
                tt::key(&next)
            };
            let mut place = None;
            if fin.is_none() {
                if small {
                    self.shared.leaves.prefetch(k);
                    place = self.shared.prefetch_leaf(&next);
                } else {
                    self.table().prefetch(k);
                }
            }
            *slot = Some((s, next, fin, small, k, place));
        }
        for (h, slot) in sown.iter().enumerate().take(m) {
            let Some((s, next, fin, small, child_key, place)) = *slot else {
                continue;
            };
            let gain = s.gain as i32;
            let cs = next.seeds() as i32;
            // Database leaves are probed at once (enhanced transposition cut-offs); measured
            // better than probing when the move is reached, with the database in memory.
            let (clo, chi, proven) = if let Some(v) = fin {
                (v, v, true)
            } else if small {
                let v = self.shared.probe_keyed(&next, child_key, place)?;
                (v, v, true)
            } else {
                let (mut lo, mut hi) = (self.floor(cs), cs);
                let mut proven = true;
                if let Some(e) = self.table().probe(child_key) {
                    lo = lo.max(e.lower);
                    hi = hi.min(e.upper);
                    if H && lo < hi && depth > 1 {
                        if let Some((hl, hh)) = e.heuristic(depth - 1) {
                            let (nl, nh) = (lo.max(hl), hi.min(hh));
                            if nl <= nh && (nl, nh) != (lo, hi) {
                                (lo, hi, proven) = (nl, nh, false);
                            }
                        }
                    }
                }
                if H && depth == 1 && lo < hi {
                    // At the horizon: the store difference so far, within what is proven.
                    let v = 0.clamp(lo, hi);
                    (v, v, false)
                } else {
                    (lo, hi, proven)
                }
            };
            let (lower, upper) = if s.extra_turn {
                (gain + clo, gain + chi)
            } else {
                (gain - chi, gain - clo)
            };
            if lower >= beta {
                if !H || proven {
                    self.table().store(
                        key,
                        Entry::proven(self.round_up(lower, seeds), seeds, h as u8, 0),
                    );
                }
                return Some((lower, proven));
            }
            all_proven &= proven;
            if upper > best_upper {
                best_upper = upper;
                best_upper_move = h as u8;
            }
            // Table move; big captures; extra turns, nearest the store first; other captures,
            // biggest first; then the rest by seeds gained. Captures and the rest break ties by
            // the seeds the move leaves on the mover's side (a move that hands fewer seeds to
            // the opponent is tried first: 30% fewer nodes on 6x4 than by gain alone), less
            // the cost of the opponent's replies (see [`Worker::reply_cost`]).
            let kept = || {
                next.cells()[m..2 * m]
                    .iter()
                    .map(|&x| x as i32)
                    .sum::<i32>()
            };
            let score = if h as u8 == tt_move {
                1 << 20
            } else if let Some(c) = s.captured.filter(|&c| c as i32 >= BIG_CAPTURE) {
                (1 << 17) + c as i32
            } else if s.extra_turn {
                (1 << 16) + h as i32
            } else if let Some(c) = s.captured {
                (1 << 12) + 64 * c as i32 + 8 * kept() + h as i32 - self.reply_cost(&next)
            } else {
                64 * gain + 8 * kept() + h as i32 - self.reply_cost(&next)
            };
            kids[n] = Kid {
                house: h as u8,
                key: child_key,
                extra: s.extra_turn,
                gain,
                next,
                lower,
                upper,
                proven,
                score,
            };
            n += 1;
        }
        if best_upper <= alpha {
            if !H || all_proven {
                self.table().store(
                    key,
                    Entry::proven(
                        floor,
                        self.round_down(best_upper, seeds),
                        best_upper_move,
                        0,
                    ),
                );
            }
            return Some((best_upper, all_proven));
        }
        // Insertion sort, highest score first.
        for i in 1..n {
            let mut j = i;
            while j > 0 && kids[j - 1].score < kids[j].score {
                kids.swap(j - 1, j);
                j -= 1;
            }
        }
        let mut best = i32::MIN;
        let mut best_move = NO_MOVE;
        let mut best_proven = true;
        let mut a = alpha;
        // ABDADA: with other threads, a move after the first whose board another thread is
        // searching now is put off until the moves no one is searching are done; by then
        // the other thread's result is usually in the table. Not near the leaves (see
        // [`ABDADA_SEEDS`]).
        let mut deferred = [0u8; 8];
        let mut n_deferred = 0;
        let abdada = self.threads > 1 && seeds - self.leaf > ABDADA_SEEDS;
        let ply = self.ply;
        let all = self.expect_all;
        let tracked = self.track && ply < ODOMETER_PLIES;
        // Moves settled before any search (by the look-ahead), counted only for the odometer.
        let mut settled = 0;
        if tracked {
            settled = n - kids[..n]
                .iter()
                .filter(|k| k.upper > alpha && k.lower < k.upper)
                .count();
            self.shared.odometer.set(ply, settled, n, all);
        }
        for pass in 0..2 {
            let (list, len) = if pass == 0 {
                ([0, 1, 2, 3, 4, 5, 6, 7], n)
            } else {
                (deferred, n_deferred)
            };
            for &k in &list[..len] {
                let kid = kids[k as usize];
                let open = kid.upper > a && kid.lower < kid.upper;
                if pass == 0 && abdada && k > 0 && open && self.shared.busy.contains(kid.key) {
                    deferred[n_deferred] = k;
                    n_deferred += 1;
                    continue;
                }
                let (v, proven) = if kid.upper <= a {
                    // Cannot raise the bound: its upper bound counts, nothing is searched.
                    (kid.upper, kid.proven)
                } else if kid.lower == kid.upper {
                    (kid.lower, kid.proven)
                } else {
                    if abdada {
                        self.shared.busy.mark(kid.key);
                    }
                    self.ply += 1;
                    self.expect_all = if kid.extra { all } else { !all };
                    let r = if kid.extra {
                        self.node::<H>(
                            &kid.next,
                            kid.key,
                            a - kid.gain,
                            beta - kid.gain,
                            depth.saturating_sub(1),
                        )
                        .map(|(r, p)| (kid.gain + r, p))
                    } else {
                        self.node::<H>(
                            &kid.next,
                            kid.key,
                            kid.gain - beta,
                            kid.gain - a,
                            depth.saturating_sub(1),
                        )
                        .map(|(r, p)| (kid.gain - r, p))
                    };
                    if abdada {
                        self.shared.busy.unmark(kid.key);
                    }
                    self.ply = ply;
                    self.expect_all = all;
                    r?
                };
                all_proven &= proven;
                if tracked && open {
                    settled += 1;
                    self.shared.odometer.set(ply, settled, n, all);
                }
                if v > best {
                    best = v;
                    best_move = kid.house;
                    best_proven = proven;
                }
                if best > a {
                    a = best;
                }
                if a >= beta {
                    break;
                }
            }
            if a >= beta {
                break;
            }
        }
        let work = (64 - (self.nodes - start_nodes).leading_zeros()) as u8;
        let proven = if best >= beta {
            best_proven
        } else {
            all_proven
        };
        let entry = if H && !proven {
            let hkind = if best >= beta {
                tt::H_LOWER
            } else if best <= alpha {
                tt::H_UPPER
            } else {
                tt::H_EXACT
            };
            Entry {
                hval: best.clamp(-256, 255),
                hkind,
                hdepth: depth.min(63) as u8,
                ..Entry::proven(floor, seeds, best_move, work)
            }
        } else if best >= beta {
            Entry::proven(self.round_up(best, seeds), seeds, best_move, work)
        } else if best <= alpha {
            Entry::proven(floor, self.round_down(best, seeds), best_move, work)
        } else {
            Entry::proven(best, best, best_move, work)
        };
        self.table().store(key, entry);
        Some((best, proven))
    }
}
