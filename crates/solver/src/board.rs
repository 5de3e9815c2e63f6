//! The houses of a position seen by the player to move, and the one move of the game: sowing.
//!
//! A [`Board`] holds only the seeds in the houses, the mover's side first, both sides in sowing
//! order. Stores never lose seeds, so everything that is still to be won depends on the board
//! alone: the *value* of a board is the net number of seeds the player to move will still gain
//! from the seeds now in the houses, with perfect play by both sides.

use crate::rules::{EndRule, Leftover, Rules, MAX_HOUSES};
use std::fmt;

/// The houses of both sides, mover's first.
///
/// `cells[0..m]` are the mover's houses in sowing order (house 1 is the farthest from the mover's
/// store), `cells[m..2m]` the opponent's houses in the opponent's sowing order. The mover's house
/// `i` (0-based) faces the opponent's house `m - 1 - i`. Unused cells are zero.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Board {
    m: u8,
    cells: [u8; 2 * MAX_HOUSES],
}

/// `ONES[n]`: the 128-bit word whose `n` lowest bytes are 1 and the others 0.
const ONES: [u128; 2 * MAX_HOUSES + 1] = {
    let mut t = [0u128; 2 * MAX_HOUSES + 1];
    let mut n = 1;
    while n <= 2 * MAX_HOUSES {
        t[n] = t[n - 1] | (1u128 << (8 * (n - 1)));
        n += 1;
    }
    t
};

/// What one sowing did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sowing {
    /// The houses after the sowing (and any capture), still seen by the player who moved.
    pub after: Board,
    /// Seeds that went into the mover's store, captured ones included.
    pub gain: u32,
    /// Seeds taken from the opponent's house by a capture, with `Some(0)` for an empty-capture
    /// of an empty house; `None` when nothing was captured.
    pub captured: Option<u32>,
    /// The last seed landed in the mover's store: the mover moves again.
    pub extra_turn: bool,
}

impl Sowing {
    /// The board as the next player to move sees it: the same player after an extra turn, the
    /// opponent otherwise.
    #[inline]
    pub fn next(&self) -> Board {
        if self.extra_turn {
            self.after
        } else {
            self.after.flipped()
        }
    }

    /// The value of this move for the player who made it, given the value of [`Sowing::next`]
    /// for the player to move there.
    pub fn value_with(&self, next_value: i32) -> i32 {
        if self.extra_turn {
            self.gain as i32 + next_value
        } else {
            self.gain as i32 - next_value
        }
    }
}

impl Board {
    /// A board from the mover's houses and the opponent's houses, both in sowing order.
    ///
    /// # Panics
    /// If the sides differ in length or have more than [`MAX_HOUSES`] houses, or the total
    /// exceeds 255 seeds. Untrusted input goes through [`crate::notation`] instead.
    pub fn new(mover: &[u8], opponent: &[u8]) -> Board {
        let m = mover.len();
        assert!((1..=MAX_HOUSES).contains(&m) && opponent.len() == m);
        let total: u32 = mover.iter().chain(opponent).map(|&s| s as u32).sum();
        assert!(total <= 255, "too many seeds");
        let mut cells = [0u8; 2 * MAX_HOUSES];
        cells[..m].copy_from_slice(mover);
        cells[m..2 * m].copy_from_slice(opponent);
        Board { m: m as u8, cells }
    }

    /// A board from the fixed-size cell array (cells past `2m` must be zero), unchecked but for
    /// debug assertions; for the database's walkers.
    #[inline]
    pub(crate) fn from_raw(m: usize, cells: [u8; 2 * MAX_HOUSES]) -> Board {
        debug_assert!((1..=MAX_HOUSES).contains(&m));
        debug_assert!(cells[2 * m..].iter().all(|&x| x == 0));
        Board { m: m as u8, cells }
    }

    /// A board with `m` houses per side and no seeds.
    pub fn empty(m: usize) -> Board {
        assert!((1..=MAX_HOUSES).contains(&m));
        Board {
            m: m as u8,
            cells: [0; 2 * MAX_HOUSES],
        }
    }

    /// The start position: `seeds` in every house.
    pub fn start(rules: &Rules) -> Board {
        let m = rules.houses;
        let side = vec![rules.seeds as u8; m];
        Board::new(&side, &side)
    }

    /// Houses per side.
    #[inline]
    pub fn houses(&self) -> usize {
        self.m as usize
    }

    /// All `2m` houses, mover's first.
    #[inline]
    pub fn cells(&self) -> &[u8] {
        &self.cells[..2 * self.m as usize]
    }

    /// The fixed-size cell array (unused cells zero), for hashing and ranking.
    #[inline]
    pub fn raw(&self) -> &[u8; 2 * MAX_HOUSES] {
        &self.cells
    }

    /// The mover's houses in sowing order.
    #[inline]
    pub fn mover(&self) -> &[u8] {
        &self.cells[..self.m as usize]
    }

    /// The opponent's houses in the opponent's sowing order.
    #[inline]
    pub fn opponent(&self) -> &[u8] {
        &self.cells[self.m as usize..2 * self.m as usize]
    }

    /// Seeds in the mover's houses.
    #[inline]
    pub fn mover_seeds(&self) -> u32 {
        self.mover().iter().map(|&s| s as u32).sum()
    }

    /// Seeds in the opponent's houses.
    #[inline]
    pub fn opponent_seeds(&self) -> u32 {
        self.opponent().iter().map(|&s| s as u32).sum()
    }

    /// Seeds in all houses: the level of the board.
    #[inline]
    pub fn seeds(&self) -> u32 {
        self.cells().iter().map(|&s| s as u32).sum()
    }

    /// The same houses seen by the other player.
    #[inline]
    pub fn flipped(&self) -> Board {
        // The two sides swapped as halves of one 128-bit word (`m` is at most 8, so a side is
        // at most 64 bits; unused cells stay zero): no copies of slices of variable length.
        let bits = 8 * self.m as u32;
        let x = u128::from_le_bytes(self.cells);
        let side = (1u128 << bits) - 1;
        let cells = (((x >> bits) & side) | ((x & side) << bits)).to_le_bytes();
        Board { m: self.m, cells }
    }

    /// The value of the board for the player to move if the game is over, `None` otherwise.
    #[inline]
    pub fn final_value(&self, rules: &Rules) -> Option<i32> {
        let mine = self.mover_seeds() as i32;
        let theirs = self.opponent_seeds() as i32;
        let over = match rules.end {
            EndRule::Either => mine == 0 || theirs == 0,
            EndRule::Mover => mine == 0,
        };
        if !over {
            return None;
        }
        Some(match rules.leftover {
            Leftover::Owner => mine - theirs,
            Leftover::Discard => 0,
            // The player whose side is empty takes what is left on the other side.
            Leftover::Emptier => {
                if mine == 0 {
                    theirs
                } else {
                    -mine
                }
            }
        })
    }

    /// Whether the game is over on this board.
    #[inline]
    pub fn is_over(&self, rules: &Rules) -> bool {
        self.final_value(rules).is_some()
    }

    /// The mover's non-empty houses (0-based): the legal moves, unless the game is over.
    pub fn legal_houses(&self) -> impl Iterator<Item = usize> + '_ {
        self.mover()
            .iter()
            .enumerate()
            .filter(|(_, &s)| s > 0)
            .map(|(i, _)| i)
    }

    /// Sows the mover's house `house` (0-based) and applies any capture.
    ///
    /// The sowing goes round the mover's houses, the mover's store and the opponent's houses,
    /// skipping the opponent's store; a sowing that laps the board drops seeds into the house it
    /// started from as well.
    ///
    /// # Panics
    /// In debug builds, if the house is out of range or empty.
    #[inline]
    pub fn sow(&self, rules: &Rules, house: usize) -> Sowing {
        let m = self.m as usize;
        debug_assert!(house < m && self.cells[house] > 0);
        let cycle = 2 * m + 1;
        let seeds = self.cells[house] as usize;
        let laps = seeds / cycle;
        let rest = seeds % cycle;
        // Cycle positions: 0..m the mover's houses, m the store, m+1..2m the opponent's houses
        // (cell index position - 1). The `rest` seeds after the laps fill the positions
        // `house + 1 ..= house + rest`, wrapping at most once: at most two runs of positions,
        // each a run of cells (the store taken out) that gets one seed per cell, added as
        // bytes of one 128-bit word. No cell overflows: a board holds at most 255 seeds.
        let mut x = u128::from_le_bytes(self.cells) & !(0xffu128 << (8 * house));
        let mut gain = laps as u32;
        x += ONES[2 * m] * laps as u128;
        let start = house + 1;
        let end = start + rest;
        let mut run = |a: usize, b: usize| {
            // Positions a..b (b at most `cycle`): the store if it lies there, and the cells.
            gain += (a <= m && m < b) as u32;
            let cell = |p: usize| if p <= m { p } else { p - 1 };
            x += ONES[cell(b)] - ONES[cell(a)];
        };
        if end <= cycle {
            run(start, end);
        } else {
            run(start, cycle);
            run(0, end - cycle);
        }
        let mut c = x.to_le_bytes();
        let last = (house + seeds) % cycle;
        let mut captured = None;
        if last < m && c[last] == 1 {
            let opposite = 2 * m - 1 - last;
            let opp = c[opposite] as u32;
            if rules.capture.takes(opp) {
                gain += opp + 1;
                captured = Some(opp);
                c[last] = 0;
                c[opposite] = 0;
            }
        }
        Sowing {
            after: Board {
                m: self.m,
                cells: c,
            },
            gain,
            captured,
            extra_turn: last == m,
        }
    }
}

impl fmt::Debug for Board {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Board({})", self)
    }
}

/// The short notation: the mover's houses, `/`, the opponent's houses.
impl fmt::Display for Board {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let join = |side: &[u8]| {
            side.iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        };
        write!(f, "{} / {}", join(self.mover()), join(self.opponent()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::Capture;

    /// Sowing one seed at a time, as the rules say it.
    fn sow_naive(b: &Board, rules: &Rules, house: usize) -> Sowing {
        let m = b.houses();
        let mut c = *b.raw();
        let mut seeds = c[house];
        c[house] = 0;
        let (mut gain, mut p) = (0u32, house);
        while seeds > 0 {
            p = (p + 1) % (2 * m + 1);
            match p.cmp(&m) {
                std::cmp::Ordering::Less => c[p] += 1,
                std::cmp::Ordering::Equal => gain += 1,
                std::cmp::Ordering::Greater => c[p - 1] += 1,
            }
            seeds -= 1;
        }
        let mut captured = None;
        if p < m && c[p] == 1 {
            let opposite = 2 * m - 1 - p;
            let take = match rules.capture {
                Capture::Standard => c[opposite] > 0,
                Capture::Empty => true,
                Capture::Never => false,
            };
            if take {
                captured = Some(c[opposite] as u32);
                gain += c[opposite] as u32 + 1;
                c[p] = 0;
                c[opposite] = 0;
            }
        }
        Sowing {
            after: Board::from_raw(m, c),
            gain,
            captured,
            extra_turn: p == m,
        }
    }

    #[test]
    fn sowing_agrees_with_one_seed_at_a_time() {
        // Every house of pseudo-random boards of every size, laps included (up to 255 seeds).
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for m in 1..=MAX_HOUSES {
            for capture in [Capture::Standard, Capture::Empty, Capture::Never] {
                let r = rules(capture);
                for _ in 0..300 {
                    let mut cells = [0u8; 2 * MAX_HOUSES];
                    let mut total = 0u64;
                    for cell in cells.iter_mut().take(2 * m) {
                        let big = next(4) == 0;
                        let v = if big { next(60) } else { next(5) }.min(255 - total);
                        *cell = v as u8;
                        total += v;
                    }
                    let b = Board::from_raw(m, cells);
                    for h in 0..m {
                        if b.cells()[h] > 0 {
                            assert_eq!(b.sow(&r, h), sow_naive(&b, &r, h), "{b} house {h}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn flipping_swaps_the_sides_for_every_board_size() {
        for m in 1..=MAX_HOUSES {
            let mover: Vec<u8> = (0..m as u8).map(|i| 30 - 3 * i).collect();
            let opponent: Vec<u8> = (0..m as u8).map(|i| 1 + 2 * i).collect();
            let b = Board::new(&mover, &opponent);
            let f = b.flipped();
            assert_eq!(
                (f.mover(), f.opponent()),
                (&opponent[..], &mover[..]),
                "{m}"
            );
            assert!(f.raw()[2 * m..].iter().all(|&c| c == 0), "{m}");
            assert_eq!(f.flipped(), b);
        }
    }

    fn rules(capture: Capture) -> Rules {
        Rules {
            capture,
            ..Rules::default()
        }
    }

    #[test]
    fn simple_sow_passes_the_turn() {
        let b = Board::new(&[4, 4, 4, 4, 4, 4], &[4, 4, 4, 4, 4, 4]);
        let s = b.sow(&rules(Capture::Standard), 0);
        assert_eq!(
            s.after,
            Board::new(&[0, 5, 5, 5, 5, 4], &[4, 4, 4, 4, 4, 4])
        );
        assert_eq!(s.gain, 0);
        assert!(!s.extra_turn);
        assert_eq!(s.next(), s.after.flipped());
    }

    #[test]
    fn last_seed_in_store_is_an_extra_turn() {
        let b = Board::new(&[4, 4, 4, 4, 4, 4], &[4, 4, 4, 4, 4, 4]);
        let s = b.sow(&rules(Capture::Standard), 2);
        assert!(s.extra_turn);
        assert_eq!(s.gain, 1);
        assert_eq!(
            s.next(),
            Board::new(&[4, 4, 0, 5, 5, 5], &[4, 4, 4, 4, 4, 4])
        );
    }
}
