//! The lower levels a level is computed from, held in memory: one byte per position, or packed
//! in half a byte per position (the blocks of the search codec, `codecs/search.rs`, without
//! table or checksums) when one byte per position would not fit beside the level being built.
//!
//! All positions up to 33 seeds of 6 houses are 2.9e10: building level 33 (7.9e9 positions,
//! one byte each while it is solved) from 2.1e10 lower positions takes 29 GB at one byte each,
//! 18.5 GB with the lower levels packed.

use super::codecs::search::{self, BLOCK, ESCAPE, EXCEPTION_LEN, STRIDE, SUB, SUBS};
use super::values::Values;
use rayon::prelude::*;

/// A level's values in memory, in whatever order the user keeps them (the builder's order
/// while building, index order while verifying).
pub(crate) enum Lower {
    /// One byte per position.
    Full(Values),
    /// Half a byte per position and a few exceptions.
    Packed(Packed),
}

impl Lower {
    /// No values (a level not held).
    pub(crate) fn empty() -> Lower {
        Lower::Full(Values::empty())
    }

    /// Whether no values are held.
    pub(crate) fn is_empty(&self) -> bool {
        match self {
            Lower::Full(v) => v.is_empty(),
            Lower::Packed(p) => p.len == 0,
        }
    }

    /// Value `i`.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> i8 {
        match self {
            Lower::Full(v) => v[i],
            Lower::Packed(p) => p.get(i),
        }
    }

    /// The values as one byte each, if held so.
    #[inline]
    pub(crate) fn full(&self) -> Option<&[i8]> {
        match self {
            Lower::Full(v) => Some(v),
            Lower::Packed(_) => None,
        }
    }
}

/// Values of level `s` packed as the blocks of the search codec.
pub(crate) struct Packed {
    /// [`STRIDE`] bytes per block of [`BLOCK`] positions: bases, then nibbles.
    blocks: Values,
    /// Per block, the index of its first exception; one more entry, the number of exceptions.
    firsts: Vec<u64>,
    /// The exceptions, [`EXCEPTION_LEN`] bytes each, sorted by position.
    exceptions: Vec<u8>,
    len: usize,
    level: i32,
    step: i32,
}

impl Packed {
    /// Packs the values of level `level` (by every core).
    pub(crate) fn new(values: &[i8], level: u32) -> std::io::Result<Packed> {
        let step = search::step_for(values, level);
        let nblocks = values.len().div_ceil(BLOCK as usize);
        let mut blocks = Values::zeroed(nblocks * STRIDE)?;
        let out: &mut [i8] = &mut blocks;
        let per_block: Vec<Vec<u8>> = out
            .par_chunks_mut(STRIDE)
            .zip(values.par_chunks(BLOCK as usize))
            .map(|(out, vals)| {
                // SAFETY: `i8` and `u8` have the same size and alignment, and every bit
                // pattern is valid for both; the slice is the only view of these bytes.
                let out = unsafe { &mut *(out as *mut [i8] as *mut [u8]) };
                let mut exc = Vec::new();
                search::encode_block_into(vals, level, step, out, &mut exc);
                exc
            })
            .collect();
        let mut firsts = Vec::with_capacity(nblocks + 1);
        let mut n = 0u64;
        for e in &per_block {
            firsts.push(n);
            n += (e.len() / EXCEPTION_LEN) as u64;
        }
        firsts.push(n);
        let exceptions = per_block.concat();
        Ok(Packed {
            blocks,
            firsts,
            exceptions,
            len: values.len(),
            level: level.min(127) as i32,
            step: step as i32,
        })
    }

    /// Value `i`.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> i8 {
        debug_assert!(i < self.len);
        let (b, k) = (i / BLOCK as usize, i % BLOCK as usize);
        let at = b * STRIDE;
        let base = self.blocks[at + k / SUB] as u8;
        let nib = (self.blocks[at + SUBS + k / 2] as u8 >> (4 * (k % 2))) & 15;
        if nib != ESCAPE {
            return ((base + nib) as i32 * self.step - self.level) as i8;
        }
        self.exception(b, k as u16)
    }

    #[cold]
    fn exception(&self, b: usize, k: u16) -> i8 {
        let (mut lo, mut hi) = (self.firsts[b] as usize, self.firsts[b + 1] as usize);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let e = &self.exceptions[mid * EXCEPTION_LEN..(mid + 1) * EXCEPTION_LEN];
            match u16::from_le_bytes([e[0], e[1]]).cmp(&k) {
                std::cmp::Ordering::Equal => return e[2] as i8,
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
            }
        }
        unreachable!("every escape has an exception")
    }
}

/// Whether levels of these sizes (positions), held at one byte each beside a level being built
/// (the last), would take more than `budget` bytes: then the lower levels are packed.
pub(crate) fn should_pack(sizes: impl IntoIterator<Item = u64>, budget: u64) -> bool {
    sizes.into_iter().sum::<u64>() > budget
}

/// The memory a build, or a full verification, may fill with the values of the lower levels;
/// beyond it they are held in half a byte each (see [`should_pack`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryBudget(pub u64);

impl MemoryBudget {
    /// A budget of `mb` MiB.
    pub fn mib(mb: u64) -> MemoryBudget {
        MemoryBudget(mb << 20)
    }
}

impl Default for MemoryBudget {
    /// Half of the machine's memory (the rest for the page cache, the level file being
    /// written and the system), or 8 GiB where it is unknown.
    fn default() -> Self {
        let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        });
        MemoryBudget(total.map(|kb| kb * 1024 / 2).unwrap_or(8 << 30))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_values_read_back() {
        for (level, parity) in [(7u32, true), (30, true), (30, false), (0, true)] {
            let mut x = 0x2545_f491_4f6c_dd1du64;
            let n = 3 * BLOCK as usize + 777;
            let l = level as i64;
            let values: Vec<i8> = (0..n)
                .map(|i| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let spread = if x.is_multiple_of(9) {
                        2 * l + 1
                    } else {
                        1 + l / 2
                    };
                    let mut v =
                        ((i as i64 / 300) % (l + 1)) - l / 2 + (x >> 8) as i64 % spread.max(1);
                    v = v.clamp(-l, l);
                    if parity && (v - l) % 2 != 0 {
                        v += if v < l { 1 } else { -1 };
                    }
                    v as i8
                })
                .collect();
            let p = Packed::new(&values, level).unwrap();
            assert!(p.firsts.len() == n.div_ceil(BLOCK as usize) + 1);
            for (i, &v) in values.iter().enumerate() {
                assert_eq!(p.get(i), v, "level {level} index {i}");
            }
            let lower = Lower::Packed(p);
            assert_eq!(lower.get(5), values[5]);
            assert!(lower.full().is_none());
        }
    }
}
