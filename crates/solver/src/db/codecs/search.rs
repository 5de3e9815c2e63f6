//! The `search` codec: four bits per position, probed in place from the memory map with no
//! decoding pass, for searches over databases too large to hold one byte per position.
//!
//! Value `v` of level `s` is the *symbol* `(v + s) / step` (`step` 2 where every value of the
//! level has the parity of `s`, as under every rule that puts each seed in a store; else 1).
//! A level is cut into blocks of [`BLOCK`] positions (the unit of checking), each cut into
//! sub-blocks of [`SUB`]. Each sub-block has a *base* symbol; a position holds a nibble,
//! `symbol - base` when that is below [`ESCAPE`], else [`ESCAPE`], and then its value is in the
//! level's *exception table*. A block is [`STRIDE`] bytes: its sixteen bases, then its nibbles
//! (two a byte, low nibble first); blocks lie back to back after the block table, so a probe
//! computes where the base and the nibble of a position lie and reads two cache lines. The
//! exceptions (under 1% of the positions on the levels measured) follow the blocks, sorted by
//! position, 3 bytes each: the position in its block (u16) and the value (i8).
//!
//! A block's table entry is the index of its first exception and an xxh3-64 over that index,
//! the next block's (the end of this block's exceptions), the block's bytes and its exception
//! entries: a probe checks all of that on the block's first probe, so a damaged byte anywhere a
//! probe reads is an error, never a wrong value.

use crate::db::codec::Codec;
use crate::db::error::DbError;
use crate::db::format::{table_entry, Header};
use rayon::prelude::*;
use std::path::Path;
use xxhash_rust::xxh3::Xxh3;

/// Positions per block.
pub(crate) const BLOCK: u32 = 1 << 12;
/// Positions per sub-block (one base each).
pub(crate) const SUB: usize = 256;
/// Sub-blocks per block.
pub(crate) const SUBS: usize = BLOCK as usize / SUB;
/// Bytes of a block: its bases, then its nibbles.
pub(crate) const STRIDE: usize = SUBS + BLOCK as usize / 2;
/// The nibble of a position whose value is in the exception table.
pub(crate) const ESCAPE: u8 = 15;
/// Bytes of an exception entry: the position in its block (u16), the value (i8).
pub(crate) const EXCEPTION_LEN: usize = 3;

/// The step between symbols for these values of level `s`: 2 where every value has the
/// parity of `s`, else 1.
pub(crate) fn step_for(values: &[i8], level: u32) -> u8 {
    let odd = level % 2 == 1;
    let parity = values
        .par_chunks(1 << 16)
        .all(|c| c.iter().all(|&v| (v & 1 == 1) == odd));
    if parity {
        2
    } else {
        1
    }
}

/// The largest symbol of level `s` with this step.
pub(crate) fn max_symbol(level: u32, step: u8) -> u32 {
    2 * level.min(127) / step as u32
}

/// One block, encoded: its bases and nibbles ([`STRIDE`] bytes, zero past the level's
/// end) and its exceptions (entries of [`EXCEPTION_LEN`] bytes).
pub(crate) struct EncodedBlock {
    pub bytes: Vec<u8>,
    pub exceptions: Vec<u8>,
}

/// Encodes one block of values of level `s` with `step`.
pub(crate) fn encode_block(values: &[i8], level: u32, step: u8) -> EncodedBlock {
    let mut bytes = vec![0u8; STRIDE];
    let mut exceptions = Vec::new();
    encode_block_into(values, level, step, &mut bytes, &mut exceptions);
    EncodedBlock { bytes, exceptions }
}

/// Encodes one block of values (at most [`BLOCK`]) of level `s` with `step` into `bytes`
/// ([`STRIDE`] zero bytes), appending its exceptions to `exceptions`.
pub(crate) fn encode_block_into(
    values: &[i8],
    level: u32,
    step: u8,
    bytes: &mut [u8],
    exceptions: &mut Vec<u8>,
) {
    debug_assert!(values.len() <= BLOCK as usize && bytes.len() == STRIDE);
    let s = level.min(127) as i32;
    let sym = |v: i8| ((v as i32 + s) / step as i32) as usize;
    let top = max_symbol(level, step) as usize;
    let window = ESCAPE as usize;
    for (j, part) in values.chunks(SUB).enumerate() {
        // The base: the window of 15 symbols that holds the most values (the lowest such).
        let mut count = [0u32; 256];
        for &v in part {
            count[sym(v)] += 1;
        }
        let mut inside: u32 = count[..window.min(top + 1)].iter().sum();
        let mut best = (inside, 0usize);
        for b in 1..=top.saturating_sub(window - 1) {
            inside = inside + count[b + window - 1] - count[b - 1];
            if inside > best.0 {
                best = (inside, b);
            }
        }
        let base = best.1;
        bytes[j] = base as u8;
        for (i, &v) in part.iter().enumerate() {
            let k = j * SUB + i;
            let d = sym(v).wrapping_sub(base);
            let nib = if d < window {
                d as u8
            } else {
                exceptions.extend_from_slice(&(k as u16).to_le_bytes());
                exceptions.push(v as u8);
                ESCAPE
            };
            bytes[SUBS + k / 2] |= nib << (4 * (k % 2));
        }
    }
}

/// Encodes a run of whole blocks of a level with `step`, in parallel: the blocks, and their
/// table entries (first exception, checksum), the run's exceptions numbered from `first`.
pub(crate) fn encode_run(
    values: &[i8],
    level: u32,
    step: u8,
    first: u64,
) -> (Vec<EncodedBlock>, Vec<(u64, u64)>) {
    let blocks: Vec<EncodedBlock> = values
        .par_chunks(BLOCK as usize)
        .map(|c| encode_block(c, level, step))
        .collect();
    // Each block's first exception, and the end of the last block's.
    let mut firsts = Vec::with_capacity(blocks.len() + 1);
    let mut n = first;
    for b in &blocks {
        firsts.push(n);
        n += (b.exceptions.len() / EXCEPTION_LEN) as u64;
    }
    firsts.push(n);
    let entries = blocks
        .par_iter()
        .enumerate()
        .map(|(i, b)| {
            let sum = block_sum(firsts[i], firsts[i + 1], &b.bytes, &b.exceptions);
            (firsts[i], sum)
        })
        .collect();
    (blocks, entries)
}

/// The checksum of a block (see the module's documentation).
pub(crate) fn block_sum(first: u64, end: u64, bytes: &[u8], exceptions: &[u8]) -> u64 {
    let mut h = Xxh3::new();
    h.update(&first.to_le_bytes());
    h.update(&end.to_le_bytes());
    h.update(bytes);
    h.update(exceptions);
    h.digest()
}

/// Bytes of the blocks of a level of `positions` positions.
pub(crate) fn block_bytes(positions: u64) -> u64 {
    positions.div_ceil(BLOCK as u64) * STRIDE as u64
}

/// Where the exception table starts.
pub(crate) fn exceptions_offset(header: &Header) -> u64 {
    header.data_offset + block_bytes(header.positions)
}

/// The index of block `i`'s first exception, and of the next block's (the end of block
/// `i`'s), from the table (unchecked).
fn exception_range(header: &Header, bytes: &[u8], i: u64) -> (u64, u64) {
    let start = table_entry(header, bytes, i).0;
    let end = if i + 1 < header.block_count {
        table_entry(header, bytes, i + 1).0
    } else {
        exception_count(header)
    };
    (start, end)
}

/// The number of exceptions of a level (its header checked: the bytes after the nibbles are
/// whole entries).
pub(crate) fn exception_count(header: &Header) -> u64 {
    (header.file_len - exceptions_offset(header)) / EXCEPTION_LEN as u64
}

/// The step of a checked header.
fn step(header: &Header) -> u8 {
    header.codec_level
}

/// Checks block `i` of a search level in place: its table entry, checksum, every base,
/// nibble and exception. After this, [`value`] may read the block without checks.
pub(crate) fn check_block(
    path: &Path,
    header: &Header,
    bytes: &[u8],
    i: u64,
) -> Result<(), DbError> {
    debug_assert_eq!(header.codec(), Codec::Search);
    let corrupt = |what: String| DbError::Corrupt {
        path: path.to_path_buf(),
        what: format!("block {i}: {what}"),
    };
    let count = exception_count(header);
    let (start, end) = exception_range(header, bytes, i);
    if start > end || end > count {
        return Err(corrupt(format!(
            "table entry damaged (exceptions {start}..{end} of {count})"
        )));
    }
    let first = (header.data_offset + i * STRIDE as u64) as usize;
    let block = &bytes[first..first + STRIDE];
    let at = (exceptions_offset(header) + start * EXCEPTION_LEN as u64) as usize;
    let exceptions = &bytes[at..at + ((end - start) as usize) * EXCEPTION_LEN];
    let actual = block_sum(start, end, block, exceptions);
    let sum = table_entry(header, bytes, i).1;
    if actual != sum {
        return Err(corrupt(format!(
            "checksum mismatch (stored {sum:016x}, computed {actual:016x})"
        )));
    }
    // The contents, as a writer makes them: symbols in range, zero past the level's end, one
    // exception per escape, in order, each a value of the level that the nibble could not hold.
    // Whole sub-blocks are checked a byte at a time with no branch (this runs on every block's
    // first probe); the exceptions then one by one.
    let len = header.block_len(i);
    let top = max_symbol(header.level, step(header));
    let mut escapes = 0usize;
    for j in 0..SUBS {
        let base = block[j] as u32;
        let nibbles = &block[SUBS + j * SUB / 2..SUBS + (j + 1) * SUB / 2];
        let (from, to) = (j * SUB, ((j + 1) * SUB).min(len.max(j * SUB)));
        let bad_base = base > top || (from >= len && base != 0);
        if bad_base {
            return Err(corrupt(format!("sub-block {j} has base {base}")));
        }
        if to - from == SUB {
            let (esc, fits) = scan_nibbles(nibbles, (top - base).min(255) as u8);
            if !fits {
                let most = nibbles
                    .iter()
                    .flat_map(|&b| [b & 15, b >> 4])
                    .filter(|&n| n != ESCAPE)
                    .max()
                    .unwrap_or(0);
                return Err(corrupt(format!(
                    "symbol {} above {top}",
                    base + most as u32
                )));
            }
            escapes += esc as usize;
            continue;
        }
        // The last sub-block with boards, or one past the level's end.
        for k in from..from + SUB {
            let nib = (block[SUBS + k / 2] >> (4 * (k % 2))) & 15;
            if k >= len {
                if nib != 0 {
                    return Err(corrupt("padding nibble is not zero".into()));
                }
            } else if nib == ESCAPE {
                escapes += 1;
            } else if base + nib as u32 > top {
                return Err(corrupt(format!("symbol {} above {top}", base + nib as u32)));
            }
        }
    }
    if escapes != (end - start) as usize {
        return Err(corrupt(format!(
            "{escapes} escapes and {} exceptions",
            end - start
        )));
    }
    // As many exceptions as escapes, at increasing positions, each at an escape: one each.
    let s = header.level.min(127) as i32;
    let stepi = step(header) as i32;
    let mut last = None;
    for e in exceptions.chunks_exact(EXCEPTION_LEN) {
        let pos = u16::from_le_bytes([e[0], e[1]]) as usize;
        let v = e[2] as i8 as i32;
        let ok_pos = pos < len && last.is_none_or(|l| pos > l);
        let nib = if ok_pos {
            (block[SUBS + pos / 2] >> (4 * (pos % 2))) & 15
        } else {
            0
        };
        let base = if ok_pos { block[pos / SUB] as i32 } else { 0 };
        let d = (v + s) / stepi - base;
        let in_window = (v + s) % stepi == 0 && (0..ESCAPE as i32).contains(&d);
        if !ok_pos || nib != ESCAPE || !(-s..=s).contains(&v) || (v + s) % stepi != 0 || in_window {
            return Err(corrupt(format!(
                "bad exception (position {pos}, value {v})"
            )));
        }
        last = Some(pos);
    }
    Ok(())
}

/// The escapes among the nibbles of a whole sub-block, and whether every other nibble is at
/// most `limit`. Lanes of 16 bytes with counts of at most 16 each, which the compiler turns
/// into vector instructions: this runs on every block's first probe, and a nibble at a time
/// it took a third of the time of a 6x5 search over the 33-seed database (docs/benchmarks.md).
#[inline]
fn scan_nibbles(nibbles: &[u8], limit: u8) -> (u32, bool) {
    debug_assert!(nibbles.len().is_multiple_of(16) && nibbles.len() <= 16 * 127);
    let (mut count, mut bad) = ([0u8; 16], [0u8; 16]);
    for chunk in nibbles.chunks_exact(16) {
        for k in 0..16 {
            let (lo, hi) = (chunk[k] & 15, chunk[k] >> 4);
            let (lo_esc, hi_esc) = ((lo == ESCAPE) as u8, (hi == ESCAPE) as u8);
            count[k] += lo_esc + hi_esc;
            bad[k] |= ((lo > limit) as u8 & (lo_esc ^ 1)) | ((hi > limit) as u8 & (hi_esc ^ 1));
        }
    }
    let escapes = count.iter().map(|&c| c as u32).sum();
    (escapes, bad.iter().all(|&b| b == 0))
}

/// The value of position `index` of a search level whose block has passed [`check_block`].
#[inline]
pub(crate) fn value(header: &Header, bytes: &[u8], index: u64) -> i8 {
    let block = index / BLOCK as u64;
    let k = (index % BLOCK as u64) as usize;
    let first = (header.data_offset + block * STRIDE as u64) as usize;
    let base = bytes[first + k / SUB];
    let nib = (bytes[first + SUBS + k / 2] >> (4 * (k % 2))) & 15;
    let s = header.level.min(127) as i32;
    if nib != ESCAPE {
        let symbol = base as i32 + nib as i32;
        return (symbol * step(header) as i32 - s) as i8;
    }
    exception(header, bytes, block, k as u16)
}

/// The value of the escaped position `pos` of block `block` (checked), from the exception table.
#[cold]
fn exception(header: &Header, bytes: &[u8], block: u64, pos: u16) -> i8 {
    let (mut lo, mut hi) = exception_range(header, bytes, block);
    let base = exceptions_offset(header) as usize;
    let entry = |j: u64| {
        let at = base + j as usize * EXCEPTION_LEN;
        (
            u16::from_le_bytes([bytes[at], bytes[at + 1]]),
            bytes[at + 2] as i8,
        )
    };
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let (p, v) = entry(mid);
        match p.cmp(&pos) {
            std::cmp::Ordering::Equal => return v,
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
        }
    }
    unreachable!("a checked block has an exception for every escape")
}

/// Checks block `i` and decodes its values into `out`.
pub(crate) fn decode_block(
    path: &Path,
    header: &Header,
    bytes: &[u8],
    i: u64,
    out: &mut Vec<i8>,
) -> Result<(), DbError> {
    check_block(path, header, bytes, i)?;
    let first = i * BLOCK as u64;
    out.clear();
    out.extend((first..first + header.block_len(i) as u64).map(|k| value(header, bytes, k)));
    Ok(())
}

/// Where the nibble of position `index` and its sub-block's base lie, for prefetching.
pub(crate) fn places(header: &Header, index: u64) -> (usize, usize) {
    let k = (index % BLOCK as u64) as usize;
    let first = (header.data_offset + (index / BLOCK as u64) * STRIDE as u64) as usize;
    (first + SUBS + k / 2, first + k / SUB)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The nibble scan against its definition, a nibble at a time, on sub-blocks of random,
    /// extreme and boundary nibbles, for every limit.
    #[test]
    fn scan_nibbles_agrees_with_a_nibble_at_a_time() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut cases: Vec<Vec<u8>> =
            vec![vec![0xff; SUB / 2], vec![0; SUB / 2], vec![0xee; SUB / 2]];
        for _ in 0..300 {
            // Mostly small nibbles, some escapes and some large ones.
            let pick = next() % 4;
            cases.push(
                (0..SUB / 2)
                    .map(|_| {
                        let r = next();
                        let n = |r: u64| match (r % 16, pick) {
                            (0, _) => ESCAPE,
                            (v, 0) => v as u8 % 15,
                            (v, _) => (v % 4) as u8 + pick as u8 * 3,
                        };
                        n(r) | (n(r >> 8) << 4)
                    })
                    .collect(),
            );
        }
        for nibbles in &cases {
            let all: Vec<u8> = nibbles.iter().flat_map(|&b| [b & 15, b >> 4]).collect();
            let escapes = all.iter().filter(|&&n| n == ESCAPE).count() as u32;
            for limit in 0..=16u8 {
                let fits = all.iter().all(|&n| n == ESCAPE || n <= limit);
                assert_eq!(
                    scan_nibbles(nibbles, limit),
                    (escapes, fits),
                    "limit {limit}"
                );
            }
        }
    }
}
