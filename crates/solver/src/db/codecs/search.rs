//! The `search` codec: four bits per position, probed in place from the memory map with no
//! decoding pass, for searches over databases too large to hold one byte per position.
//!
//! Value `v` of level `s` is the *symbol* `(v + s) / step` (`step` 2 where every value of the
//! level has the parity of `s`, as under every rule that puts each seed in a store; else 1).
//! Each block of [`BLOCK`] positions has a *base* symbol; a position holds a nibble, `symbol -
//! base` when that is below [`ESCAPE`], else [`ESCAPE`], and then its value is in the level's
//! *exception table*, sorted by position. The nibbles of the whole level lie back to back after
//! the block table, so the nibble of position `k` is at a fixed place (`data offset + k / 2`);
//! a probe reads the block's table entry (its base) and the nibble: two cache lines. The
//! exceptions (a handful per million positions on the levels measured) follow the nibbles.
//!
//! A block's table entry is its *meta word* (base in bits 0..8, the index of its first
//! exception from bit 8) and an xxh3-64 over the meta word, the index of the next block's first
//! exception (the end of this block's), its nibble bytes and its exception entries: a probe
//! checks all of that on the block's first probe, so a damaged byte anywhere a probe reads is an
//! error, never a wrong value.

use crate::db::format::{table_entry, Header, CODEC_SEARCH};
use crate::db::DbError;
use rayon::prelude::*;
use std::path::Path;
use xxhash_rust::xxh3::Xxh3;

/// Positions per block.
pub(crate) const BLOCK: u32 = 1 << 12;
/// The nibble of a position whose value is in the exception table.
pub(crate) const ESCAPE: u8 = 15;
/// Bytes of an exception entry: the position in its block (u16), the value (i8), a zero byte.
pub(crate) const EXCEPTION_LEN: usize = 4;

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
fn max_symbol(level: u32, step: u8) -> u32 {
    2 * level.min(127) / step as u32
}

/// One block, encoded: its base, its nibbles (two a byte, low nibble first) and its
/// exceptions (entries of [`EXCEPTION_LEN`] bytes).
pub(crate) struct EncodedBlock {
    pub base: u8,
    pub nibbles: Vec<u8>,
    pub exceptions: Vec<u8>,
}

/// Encodes one block of values of level `s` with `step`.
pub(crate) fn encode_block(values: &[i8], level: u32, step: u8) -> EncodedBlock {
    let s = level.min(127) as i32;
    let sym = |v: i8| ((v as i32 + s) / step as i32) as usize;
    // The base: the window of 15 symbols that holds the most values (the lowest such).
    let mut count = [0u32; 256];
    for &v in values {
        count[sym(v)] += 1;
    }
    let top = max_symbol(level, step) as usize;
    let window = ESCAPE as usize;
    let mut best = (0u32, 0usize);
    let mut inside: u32 = count[..window.min(top + 1)].iter().sum();
    best.0 = inside;
    for b in 1..=top.saturating_sub(window - 1) {
        inside = inside + count[b + window - 1] - count[b - 1];
        if inside > best.0 {
            best = (inside, b);
        }
    }
    let base = best.1;
    let mut nibbles = vec![0u8; values.len().div_ceil(2)];
    let mut exceptions = Vec::new();
    for (k, &v) in values.iter().enumerate() {
        let d = sym(v).wrapping_sub(base);
        let nib = if d < window {
            d as u8
        } else {
            exceptions.extend_from_slice(&(k as u16).to_le_bytes());
            exceptions.push(v as u8);
            exceptions.push(0);
            ESCAPE
        };
        nibbles[k / 2] |= nib << (4 * (k % 2));
    }
    EncodedBlock {
        base: base as u8,
        nibbles,
        exceptions,
    }
}

/// The meta word of a block: its base and the index of its first exception.
pub(crate) fn meta(base: u8, first_exception: u64) -> u64 {
    base as u64 | first_exception << 8
}

/// The checksum of a block (see the module's documentation).
pub(crate) fn block_sum(meta: u64, end: u64, nibbles: &[u8], exceptions: &[u8]) -> u64 {
    let mut h = Xxh3::new();
    h.update(&meta.to_le_bytes());
    h.update(&end.to_le_bytes());
    h.update(nibbles);
    h.update(exceptions);
    h.digest()
}

/// Bytes of the nibbles of a level of `positions` positions.
pub(crate) fn nibble_bytes(positions: u64) -> u64 {
    positions.div_ceil(2)
}

/// Where the exception table starts.
pub(crate) fn exceptions_offset(header: &Header) -> u64 {
    header.data_offset + nibble_bytes(header.positions)
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

/// Checks block `i` of a search level in place: its table entry, checksum, every nibble and
/// exception. After this, [`value`] may read the block without checks.
pub(crate) fn check_block(
    path: &Path,
    header: &Header,
    bytes: &[u8],
    i: u64,
) -> Result<(), DbError> {
    debug_assert_eq!(header.codec, CODEC_SEARCH);
    let corrupt = |what: String| DbError::Corrupt {
        path: path.to_path_buf(),
        what: format!("block {i}: {what}"),
    };
    let (meta, sum) = table_entry(header, bytes, i);
    let count = exception_count(header);
    let end = if i + 1 < header.block_count {
        table_entry(header, bytes, i + 1).0 >> 8
    } else {
        count
    };
    let start = meta >> 8;
    let base = (meta & 0xff) as u32;
    let top = max_symbol(header.level, step(header));
    if start > end || end > count || base > top {
        return Err(corrupt(format!(
            "table entry damaged (base {base}, exceptions {start}..{end} of {count})"
        )));
    }
    let len = header.block_len(i);
    let first = (header.data_offset + i * BLOCK as u64 / 2) as usize;
    let nibbles = &bytes[first..first + len.div_ceil(2)];
    let at = (exceptions_offset(header) + start * EXCEPTION_LEN as u64) as usize;
    let exceptions = &bytes[at..at + ((end - start) as usize) * EXCEPTION_LEN];
    let actual = block_sum(meta, end, nibbles, exceptions);
    if actual != sum {
        return Err(corrupt(format!(
            "checksum mismatch (stored {sum:016x}, computed {actual:016x})"
        )));
    }
    // The contents, as a writer makes them: symbols in range, one exception per escape, in
    // order, each a value of the level that the nibble could not hold.
    let mut next = exceptions.chunks_exact(EXCEPTION_LEN);
    let s = header.level.min(127) as i32;
    let stepi = step(header) as i32;
    for k in 0..nibbles.len() * 2 {
        let nib = (nibbles[k / 2] >> (4 * (k % 2))) & 15;
        if k >= len {
            if nib != 0 {
                return Err(corrupt("padding nibble is not zero".into()));
            }
            continue;
        }
        if nib != ESCAPE {
            if base + nib as u32 > top {
                return Err(corrupt(format!("symbol {} above {top}", base + nib as u32)));
            }
            continue;
        }
        let Some(e) = next.next() else {
            return Err(corrupt("more escapes than exceptions".into()));
        };
        let pos = u16::from_le_bytes([e[0], e[1]]) as usize;
        let v = e[2] as i8 as i32;
        let d = (v + s) / stepi - base as i32;
        let in_window = (v + s) % stepi == 0 && (0..ESCAPE as i32).contains(&d);
        if pos != k || e[3] != 0 || !(-s..=s).contains(&v) || (v + s) % stepi != 0 || in_window {
            return Err(corrupt(format!(
                "bad exception at position {k} (entry for {pos}, value {v})"
            )));
        }
    }
    if next.next().is_some() {
        return Err(corrupt("more exceptions than escapes".into()));
    }
    Ok(())
}

/// The value of position `index` of a search level whose block has passed [`check_block`].
#[inline]
pub(crate) fn value(header: &Header, bytes: &[u8], index: u64) -> i8 {
    let block = index / BLOCK as u64;
    let meta = table_entry(header, bytes, block).0;
    let nib = (bytes[(header.data_offset + index / 2) as usize] >> (4 * (index % 2))) & 15;
    let s = header.level.min(127) as i32;
    if nib != ESCAPE {
        let symbol = (meta & 0xff) as i32 + nib as i32;
        return (symbol * step(header) as i32 - s) as i8;
    }
    exception(header, bytes, block, meta, (index % BLOCK as u64) as u16)
}

/// The value of the escaped position `pos` of block `block` (checked), from the exception table.
#[cold]
fn exception(header: &Header, bytes: &[u8], block: u64, meta: u64, pos: u16) -> i8 {
    let end = if block + 1 < header.block_count {
        table_entry(header, bytes, block + 1).0 >> 8
    } else {
        exception_count(header)
    };
    let base = exceptions_offset(header) as usize;
    let entry = |j: u64| {
        let at = base + j as usize * EXCEPTION_LEN;
        (
            u16::from_le_bytes([bytes[at], bytes[at + 1]]),
            bytes[at + 2] as i8,
        )
    };
    let (mut lo, mut hi) = (meta >> 8, end);
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

/// Where the nibble of position `index` and its block's table entry lie, for prefetching.
pub(crate) fn places(header: &Header, index: u64) -> (usize, usize) {
    (
        (header.data_offset + index / 2) as usize,
        (header.table_offset + (index / BLOCK as u64) * 16) as usize,
    )
}
