//! One search thread: fail-soft alpha-beta over boards, exact to the end of the game or to a
//! database leaf, with the shared table, enhanced transposition cut-offs, bounds from the seeds
//! left and move ordering.

use super::tt::{self, Entry, Table, NO_MOVE};
use super::Shared;
use kalah_solver::{Board, Rules};
use std::sync::atomic::Ordering::Relaxed;

/// Nodes counted locally before the shared counter and the stop flags are looked at.
const BATCH: u64 = 1024;

/// Captures of at least this many seeds are tried before extra turns (6 measured best on 6x4,
/// single thread, tables of 256 MiB: 5.7% fewer nodes with empty capture over a 20-seed
/// database, 4.6% fewer with standard capture over an 18-seed one).
const BIG_CAPTURE: i32 = 6;

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
    /// Ordering score, highest first.
    score: i32,
}

/// The per-thread state of a search.
pub(crate) struct Worker<'a> {
    pub shared: &'a Shared,
    pub rules: Rules,
    /// Boards with at most this many seeds are probed in the database (-1: no database).
    pub leaf: i32,
    /// 0 for the main thread; helpers order moves a little differently.
    pub id: usize,
    pub nodes: u64,
    /// The threshold of the zero-window probe under way: the probe is abandoned once the
    /// shared bounds decide it (another thread finished it).
    pub gamma: Option<i32>,
    pending: u64,
}

impl<'a> Worker<'a> {
    pub fn new(shared: &'a Shared, id: usize) -> Worker<'a> {
        Worker {
            shared,
            rules: shared.rules,
            leaf: shared.leaf,
            id,
            nodes: 0,
            gamma: None,
            pending: 0,
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
            if let Some(g) = self.gamma {
                if self.shared.decided(g) {
                    return None;
                }
            }
        }
        Some(())
    }

    /// Adds the locally counted nodes to the shared counter.
    pub fn flush(&mut self) {
        let total = self.shared.nodes.fetch_add(self.pending, Relaxed) + self.pending;
        self.pending = 0;
        if let Some(limit) = self.shared.node_limit {
            if total >= limit {
                self.shared.interrupt();
            }
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

    /// A heuristic estimate of the value of `board`: alpha-beta to `depth` moves, exact at the
    /// end of the game and at database leaves, the seeds gained so far elsewhere. Only a first
    /// guess for MTD(f).
    pub fn estimate(&mut self, board: &Board, depth: u32, mut alpha: i32, beta: i32) -> i32 {
        if let Some(v) = board.final_value(&self.rules) {
            return v;
        }
        if (board.seeds() as i32) <= self.leaf {
            return self.shared.probe(board).unwrap_or(0);
        }
        if depth == 0 {
            return 0;
        }
        self.nodes += 1;
        let mut best = i32::MIN;
        let mut order = [0usize; 8];
        let mut n = 0;
        let m = board.houses();
        // Extra turns first (nearest the store first), then the rest.
        for h in (0..m).rev() {
            let c = board.cells()[h] as usize;
            if c > 0 && c % (2 * m + 1) == m - h {
                order[n] = h;
                n += 1;
            }
        }
        for h in (0..m).rev() {
            let c = board.cells()[h] as usize;
            if c > 0 && c % (2 * m + 1) != m - h {
                order[n] = h;
                n += 1;
            }
        }
        for &h in &order[..n] {
            let s = board.sow(&self.rules, h);
            let gain = s.gain as i32;
            let v = if s.extra_turn {
                gain + self.estimate(&s.next(), depth - 1, alpha - gain, beta - gain)
            } else {
                gain - self.estimate(&s.next(), depth - 1, gain - beta, gain - alpha)
            };
            best = best.max(v);
            alpha = alpha.max(v);
            if alpha >= beta {
                break;
            }
        }
        best
    }

    /// Fail-soft alpha-beta on the value of `board` for the player to move. The result `r` is the value when `alpha < r < beta`, an upper bound when
    /// `r <= alpha`, a lower bound when `r >= beta`. `None` when the search was stopped.
    pub fn search(&mut self, board: &Board, alpha: i32, beta: i32, ply: u32) -> Option<i32> {
        if let Some(v) = self.leaf_value(board) {
            return v;
        }
        self.node(board, tt::key(board), alpha, beta, ply)
    }

    /// An inner node: not over, too big for the database.
    fn node(&mut self, board: &Board, key: u64, alpha: i32, beta: i32, ply: u32) -> Option<i32> {
        self.count()?;
        let start_nodes = self.nodes;
        let seeds = board.seeds() as i32;
        // The value lies in [-seeds, seeds].
        if alpha >= seeds {
            return Some(seeds);
        }
        if beta <= -seeds {
            return Some(-seeds);
        }
        let mut tt_move = NO_MOVE;
        if let Some(e) = self.table().probe(key) {
            if e.lower >= beta || e.lower == e.upper {
                return Some(e.lower);
            }
            if e.upper <= alpha {
                return Some(e.upper);
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
            score: 0,
        }; 8];
        let mut n = 0;
        let mut best_upper = i32::MIN;
        let mut sown = [None; 8];
        for (h, slot) in sown.iter_mut().enumerate().take(m) {
            if board.cells()[h] == 0 {
                continue;
            }
            let s = board.sow(&self.rules, h);
            let next = s.next();
            let fin = next.final_value(&self.rules);
            let small = (next.seeds() as i32) <= self.leaf;
            let k = tt::key(&next);
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
            let (clo, chi) = if let Some(v) = fin {
                (v, v)
            } else if small {
                let v = self.shared.probe_keyed(&next, child_key, place)?;
                (v, v)
            } else {
                match self.table().probe(child_key) {
                    Some(e) => (e.lower.max(-cs), e.upper.min(cs)),
                    None => (-cs, cs),
                }
            };
            let (lower, upper) = if s.extra_turn {
                (gain + clo, gain + chi)
            } else {
                (gain - chi, gain - clo)
            };
            if lower >= beta {
                self.table().store(
                    key,
                    Entry {
                        lower,
                        upper: seeds,
                        best: h as u8,
                        work: 0,
                    },
                );
                return Some(lower);
            }
            best_upper = best_upper.max(upper);
            let score = if h as u8 == tt_move {
                1 << 20
            } else if let Some(c) = s.captured.filter(|&c| c as i32 >= BIG_CAPTURE) {
                (1 << 17) + c as i32
            } else if s.extra_turn {
                (1 << 16) + h as i32
            } else if let Some(c) = s.captured {
                (1 << 12) + c as i32
            } else {
                gain
            };
            kids[n] = Kid {
                house: h as u8,
                key: child_key,
                extra: s.extra_turn,
                gain,
                next,
                lower,
                upper,
                score,
            };
            n += 1;
        }
        if best_upper <= alpha {
            self.table().store(
                key,
                Entry {
                    lower: -seeds,
                    upper: best_upper,
                    best: NO_MOVE,
                    work: 0,
                },
            );
            return Some(best_upper);
        }
        // Insertion sort, highest score first.
        for i in 1..n {
            let mut j = i;
            while j > 0 && kids[j - 1].score < kids[j].score {
                kids.swap(j - 1, j);
                j -= 1;
            }
        }
        if self.id > 0 && ply < 2 && n > 2 {
            // Helpers take the moves after the first in another order near the root, so that
            // the threads prove different subtrees and share them through the table. (Noise at
            // every ply was measured worse: it spoils the ordering where it matters most.)
            let r = (self.id + ply as usize) % (n - 1);
            kids[1..n].rotate_left(r.max(1));
        }

        let mut best = i32::MIN;
        let mut best_move = NO_MOVE;
        let mut a = alpha;
        for kid in &kids[..n] {
            let v = if kid.upper <= a {
                // Cannot raise the bound: its upper bound counts, nothing is searched.
                kid.upper
            } else if kid.lower == kid.upper {
                kid.lower
            } else if kid.extra {
                kid.gain + self.node(&kid.next, kid.key, a - kid.gain, beta - kid.gain, ply + 1)?
            } else {
                kid.gain - self.node(&kid.next, kid.key, kid.gain - beta, kid.gain - a, ply + 1)?
            };
            if v > best {
                best = v;
                if v > alpha {
                    best_move = kid.house;
                }
            }
            if best > a {
                a = best;
            }
            if a >= beta {
                break;
            }
        }
        let work = (64 - (self.nodes - start_nodes).leading_zeros()) as u8;
        let entry = if best >= beta {
            Entry {
                lower: best,
                upper: seeds,
                best: best_move,
                work,
            }
        } else if best <= alpha {
            Entry {
                lower: -seeds,
                upper: best,
                best: tt_move,
                work,
            }
        } else {
            Entry {
                lower: best,
                upper: best,
                best: best_move,
                work,
            }
        };
        self.table().store(key, entry);
        Some(best)
    }
}
