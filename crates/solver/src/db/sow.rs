//! Sowing specialised for the database builder: the houses packed in one `u128` (one byte per
//! house, mover's side first), a move done as one subtraction and one addition of precomputed
//! byte masks instead of a loop over the seeds, and the board flipped by two shifts.
//!
//! It computes exactly what [`Board::sow`] followed by [`Sowing::next`] computes (tested
//! exhaustively against it below); [`Board::sow`] stays the reference used everywhere else.
//!
//! [`Board::sow`]: crate::board::Board::sow
//! [`Sowing::next`]: crate::board::Sowing::next

use crate::rules::{Capture, Rules, MAX_HOUSES};

// The houses of a board must fit the 16 bytes of a `u128`.
const _: () = assert!(2 * MAX_HOUSES <= 16);

/// Precomputed masks for one number of houses and one capture rule.
#[derive(Clone, Debug)]
pub(crate) struct Sower {
    m: usize,
    capture: Capture,
    /// Per (house, seeds % cycle): the byte increments of the houses sown.
    add: Vec<u128>,
    /// Per (house, seeds % cycle): 1 if a seed reaches the store in the partial lap.
    store: Vec<u8>,
    /// Per (house, seeds % cycle): the cycle position of the last seed.
    last: Vec<u8>,
    /// Per seed count: whole laps and the rest.
    laps: [u8; 256],
    rest: [u8; 256],
    /// One in each of the `2m` house bytes.
    ones: u128,
    /// All bits of the mover's `m` house bytes.
    low: u128,
}

/// The result of one sowing: the board as the next player to move sees it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sown {
    /// The houses of the next board, packed (see [`pack`]).
    pub next: u128,
    /// Seeds that went into the mover's store, captured ones included.
    pub gain: u32,
    /// The mover moves again (the next board is seen by the same player).
    pub extra: bool,
}

/// The houses of a board packed into a `u128`: house `i` in byte `i` (little-endian).
#[inline]
pub(crate) fn pack(cells: &[u8; 2 * MAX_HOUSES]) -> u128 {
    let mut b = [0u8; 16];
    b[..2 * MAX_HOUSES].copy_from_slice(cells);
    u128::from_le_bytes(b)
}

/// The cells of a packed board.
#[inline]
pub(crate) fn unpack(x: u128) -> [u8; 2 * MAX_HOUSES] {
    let b = x.to_le_bytes();
    let mut cells = [0u8; 2 * MAX_HOUSES];
    cells.copy_from_slice(&b[..2 * MAX_HOUSES]);
    cells
}

impl Sower {
    /// Masks for the houses and capture rule of `rules`.
    pub(crate) fn new(rules: &Rules) -> Sower {
        let m = rules.houses;
        assert!((1..=MAX_HOUSES).contains(&m));
        let cycle = 2 * m + 1;
        let mut add = vec![0u128; m * cycle];
        let mut store = vec![0u8; m * cycle];
        let mut last = vec![0u8; m * cycle];
        for h in 0..m {
            for rest in 0..cycle {
                let k = h * cycle + rest;
                // Cycle positions: 0..m the mover's houses, m the store, m+1..=2m the
                // opponent's houses (cell index position - 1).
                let mut p = h + 1;
                for _ in 0..rest {
                    if p == cycle {
                        p = 0;
                    }
                    match p.cmp(&m) {
                        std::cmp::Ordering::Less => add[k] += 1u128 << (8 * p),
                        std::cmp::Ordering::Equal => store[k] += 1,
                        std::cmp::Ordering::Greater => add[k] += 1u128 << (8 * (p - 1)),
                    }
                    p += 1;
                }
                last[k] = ((h + rest) % cycle) as u8;
            }
        }
        let mut laps = [0u8; 256];
        let mut rest = [0u8; 256];
        for s in 0..256 {
            laps[s] = (s / cycle) as u8;
            rest[s] = (s % cycle) as u8;
        }
        let ones = (0..2 * m).fold(0u128, |a, i| a | 1u128 << (8 * i));
        let low = (0..m).fold(0u128, |a, i| a | 0xffu128 << (8 * i));
        Sower {
            m,
            capture: rules.capture,
            add,
            store,
            last,
            laps,
            rest,
            ones,
            low,
        }
    }

    /// Sows the mover's house `h` (not empty) of the packed board `cells`, applies any capture,
    /// and flips the board unless the mover moves again. Every house must hold fewer than 128
    /// seeds after the sowing (true of every level a database can hold).
    #[inline(always)]
    pub(crate) fn sow(&self, cells: u128, h: usize) -> Sown {
        let m = self.m;
        let cycle = 2 * m + 1;
        let seeds = ((cells >> (8 * h)) & 0xff) as usize;
        let laps = self.laps[seeds];
        let k = h * cycle + self.rest[seeds] as usize;
        let mut c = cells & !(0xffu128 << (8 * h));
        c += self.ones * laps as u128 + self.add[k];
        let mut gain = laps as u32 + self.store[k] as u32;
        let last = self.last[k] as usize;
        if last < m && (c >> (8 * last)) & 0xff == 1 {
            let opposite = 2 * m - 1 - last;
            let opp = ((c >> (8 * opposite)) & 0xff) as u32;
            if self.capture.takes(opp) {
                gain += opp + 1;
                c &= !(0xffu128 << (8 * last) | 0xffu128 << (8 * opposite));
            }
        }
        let extra = last == m;
        let next = if extra {
            c
        } else {
            (c >> (8 * m)) | ((c & self.low) << (8 * m))
        };
        Sown { next, gain, extra }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::board::Board;
    use crate::db::rank::{Ranker, Walker};

    fn agree(sower: &Sower, rules: &Rules, b: &Board) {
        let cells = pack(b.raw());
        for h in b.legal_houses() {
            let want = b.sow(rules, h);
            let got = sower.sow(cells, h);
            assert_eq!(got.gain, want.gain, "{rules} {b} house {h}");
            assert_eq!(got.extra, want.extra_turn, "{rules} {b} house {h}");
            assert_eq!(
                unpack(got.next),
                *want.next().raw(),
                "{rules} {b} house {h}"
            );
        }
    }

    #[test]
    fn agrees_with_board_sow_exhaustively() {
        for m in 1..=4usize {
            for rules in Rules::all_variants(m, 0) {
                let sower = Sower::new(&rules);
                let ranker = Ranker::new(m);
                // Enough seeds for laps (a lap is 2m + 1 seeds).
                let max_s = [0, 12, 11, 9, 10][m];
                for s in 0..=max_s {
                    let mut w = Walker::at(&ranker, s, 0);
                    for _ in 0..ranker.level_size(s) {
                        agree(&sower, &rules, &Board::from_raw(m, w.cells));
                        w.advance();
                    }
                }
            }
        }
    }

    #[test]
    fn agrees_with_board_sow_on_big_boards() {
        for m in [6usize, 8] {
            for rules in Rules::all_variants(m, 0) {
                let sower = Sower::new(&rules);
                let ranker = Ranker::new(m);
                let levels: &[u32] = if m == 6 {
                    &[20, 40, 100, 127]
                } else {
                    &[20, 40, 60]
                };
                for &s in levels {
                    let n = ranker.level_size(s);
                    for i in 0..500u64 {
                        let idx = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % n;
                        let w = Walker::at(&ranker, s, idx);
                        agree(&sower, &rules, &Board::from_raw(m, w.cells));
                    }
                }
            }
        }
    }
}
