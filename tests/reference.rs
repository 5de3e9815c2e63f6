//! A naive reference minimax for Kalah, kept simple enough to check by eye.
//!
//! It shares no code with the engine: the board is one array in absolute orientation
//! (`0..m` South's houses, `m` South's store, `m+1..=2m` North's houses, `2m+1` North's store),
//! sowing drops one seed at a time, and the search is plain minimax over final store
//! differences. Only the rule *settings* are read from the engine's `Rules` value.
//!
//! Included by the test suites of every crate with `#[path = ...] mod reference;`.
#![allow(dead_code)]

use kalah_solver::{Capture, EndRule, Leftover, Rules};
use std::collections::HashMap;

/// A state of the reference game.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct RefState {
    pub pits: Vec<u32>,
    /// 0 = South, 1 = North.
    pub player: usize,
}

impl RefState {
    /// From the mover's houses and the opponent's houses, mover as South, stores empty.
    pub fn from_sides(mover: &[u8], opponent: &[u8]) -> RefState {
        let m = mover.len();
        let mut pits = vec![0; 2 * m + 2];
        for i in 0..m {
            pits[i] = mover[i] as u32;
            pits[m + 1 + i] = opponent[i] as u32;
        }
        RefState { pits, player: 0 }
    }

    fn m(&self) -> usize {
        (self.pits.len() - 2) / 2
    }

    fn store(&self, player: usize) -> usize {
        if player == 0 {
            self.m()
        } else {
            2 * self.m() + 1
        }
    }

    fn side_sum(&self, player: usize) -> u32 {
        let m = self.m();
        let start = if player == 0 { 0 } else { m + 1 };
        self.pits[start..start + m].iter().sum()
    }

    /// Is the game over (for the player to move)?
    pub fn over(&self, rules: &Rules) -> bool {
        let mine = self.side_sum(self.player);
        let theirs = self.side_sum(1 - self.player);
        match rules.end {
            EndRule::Either => mine == 0 || theirs == 0,
            EndRule::Mover => mine == 0,
        }
    }

    /// Final (mover's store - opponent's store) after settling the seeds left.
    fn settle(&self, rules: &Rules) -> i64 {
        let me = self.player;
        let mut my_store = self.pits[self.store(me)] as i64;
        let mut their_store = self.pits[self.store(1 - me)] as i64;
        let mine = self.side_sum(me) as i64;
        let theirs = self.side_sum(1 - me) as i64;
        match rules.leftover {
            Leftover::Owner => {
                my_store += mine;
                their_store += theirs;
            }
            Leftover::Emptier => {
                if mine == 0 {
                    my_store += theirs;
                } else if theirs == 0 {
                    their_store += mine;
                }
            }
            Leftover::Discard => {}
        }
        my_store - their_store
    }

    /// Plays the mover's house `house` (0-based), one seed at a time.
    pub fn play(&self, rules: &Rules, house: usize) -> RefState {
        let m = self.m();
        let me = self.player;
        let mut pits = self.pits.clone();
        let my_store = self.store(me);
        let their_store = self.store(1 - me);
        let mut pos = if me == 0 { house } else { m + 1 + house };
        let mut seeds = pits[pos];
        assert!(seeds > 0);
        pits[pos] = 0;
        while seeds > 0 {
            pos = (pos + 1) % (2 * m + 2);
            if pos == their_store {
                continue;
            }
            pits[pos] += 1;
            seeds -= 1;
        }
        if pos == my_store {
            return RefState { pits, player: me };
        }
        let own_house = if me == 0 {
            pos < m
        } else {
            pos > m && pos < 2 * m + 1
        };
        if own_house && pits[pos] == 1 {
            let opposite = 2 * m - pos;
            let capture = match rules.capture {
                Capture::Standard => pits[opposite] > 0,
                Capture::Empty => true,
                Capture::Never => false,
            };
            if capture {
                pits[my_store] += pits[opposite] + 1;
                pits[opposite] = 0;
                pits[pos] = 0;
            }
        }
        RefState {
            pits,
            player: 1 - me,
        }
    }

    /// The mover's legal houses (0-based).
    pub fn moves(&self) -> Vec<usize> {
        let m = self.m();
        let start = if self.player == 0 { 0 } else { m + 1 };
        (0..m).filter(|&i| self.pits[start + i] > 0).collect()
    }

    fn store_diff(&self) -> i64 {
        self.pits[self.store(self.player)] as i64 - self.pits[self.store(1 - self.player)] as i64
    }
}

/// Plain minimax of the final store difference for the player to move, memoised on the whole
/// state so that small boards finish quickly.
fn final_diff(rules: &Rules, s: &RefState, memo: &mut HashMap<RefState, i64>) -> i64 {
    if s.over(rules) {
        return s.settle(rules);
    }
    if let Some(&v) = memo.get(s) {
        return v;
    }
    let mut best = i64::MIN;
    for h in s.moves() {
        let child = s.play(rules, h);
        let v = if child.player == s.player {
            final_diff(rules, &child, memo)
        } else {
            -final_diff(rules, &child, memo)
        };
        best = best.max(v);
    }
    memo.insert(s.clone(), best);
    best
}

/// The value of a state for the player to move: the final store difference minus the current
/// one.
pub fn ref_value(rules: &Rules, s: &RefState) -> i64 {
    final_diff(rules, s, &mut HashMap::new()) - s.store_diff()
}

/// The value of each legal move (0-based house, value) for the player to move.
pub fn ref_move_values(rules: &Rules, s: &RefState) -> Vec<(usize, i64)> {
    let mut memo = HashMap::new();
    if s.over(rules) {
        return Vec::new();
    }
    s.moves()
        .into_iter()
        .map(|h| {
            let child = s.play(rules, h);
            let v = if child.player == s.player {
                final_diff(rules, &child, &mut memo)
            } else {
                -final_diff(rules, &child, &mut memo)
            };
            (h, v - s.store_diff())
        })
        .collect()
}

/// The value for the player to move of a board given as mover's houses and opponent's houses.
pub fn ref_board_value(rules: &Rules, mover: &[u8], opponent: &[u8]) -> i64 {
    ref_value(rules, &RefState::from_sides(mover, opponent))
}

/// South's final margin after the first turn `moves` (1-based houses, played from the start
/// of `rules` seed by seed), both playing perfectly after it; panics if `moves` is not a
/// first turn (a move before the last that passes the turn, or a last one that does not while
/// the game goes on).
pub fn ref_first_turn_margin(rules: &Rules, moves: &[usize]) -> i64 {
    let m = rules.houses;
    let side = vec![rules.seeds as u8; m];
    let mut s = RefState::from_sides(&side, &side);
    for (i, &h) in moves.iter().enumerate() {
        assert!(
            s.player == 0 && !s.over(rules),
            "{moves:?} is not a first turn"
        );
        s = s.play(rules, h - 1);
        if i + 1 < moves.len() {
            assert_eq!(s.player, 0, "move {h} of {moves:?} passes the turn");
        }
    }
    assert!(
        s.player == 1 || s.over(rules),
        "{moves:?} leaves South to move"
    );
    let diff = s.pits[m] as i64 - s.pits[2 * m + 1] as i64;
    let v = ref_value(rules, &s);
    // ref_value is for the player to move; South's margin is the store difference plus it.
    if s.player == 0 {
        diff + v
    } else {
        diff - v
    }
}

/// A small deterministic pseudo-random generator (xorshift64*), so tests need no crates.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A random board with `m` houses per side and exactly `seeds` seeds, spread uniformly
    /// seed by seed.
    pub fn board(&mut self, m: usize, seeds: u32) -> (Vec<u8>, Vec<u8>) {
        let mut cells = vec![0u8; 2 * m];
        for _ in 0..seeds {
            let i = self.below(2 * m as u64) as usize;
            cells[i] += 1;
        }
        let opp = cells.split_off(m);
        (cells, opp)
    }
}
