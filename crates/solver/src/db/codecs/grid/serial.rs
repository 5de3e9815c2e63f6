//! The grid model as a level file holds it (format version 3, and the wider form of versions 1
//! and 2): frequency tables written as one-byte log-scale codes, read back with every field
//! checked.

use super::contexts::{contexts, FLAGS};
use super::layout::{Layout, STRIP};
use super::{GridModel, MAX_LEVEL, NONE, SCALE, SCALE_BITS, SYMS};
use crate::db::codecs::rans_coder::ModelReader;

/// Bytes of the bitmap of a table's symbols in a serialised model of level `s` (symbols
/// `0..=s + 1`).
pub(super) fn bitmap_len(s: u32) -> usize {
    (s as usize + 2).div_ceil(8)
}

/// Appends `x` (below `1 << 28`) as a LEB128 varint.
fn put_varint(out: &mut Vec<u8>, mut x: u32) {
    debug_assert!(x < 1 << 28);
    while x >= 0x80 {
        out.push(x as u8 | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

/// The symbols of one table of a compact model ([`GridModel::to_bytes`]): the bitmap (symbols
/// at most `top`, at least one, checked), then their frequency codes; with the table they
/// give.
#[allow(clippy::type_complexity)]
fn compact_symbols(
    r: &mut ModelReader<'_>,
    ctx: u32,
    top: u32,
    bitmap: usize,
) -> Result<(Vec<(u8, u16)>, Vec<u8>), String> {
    // At most 4 bytes (levels up to 30): every bit is a symbol below SYMS; those above `top`
    // are refused below.
    debug_assert!(8 * bitmap <= SYMS);
    let bits = r.take(bitmap, "symbols")?;
    let mut present = [0u8; SYMS];
    let mut n = 0;
    for x in 0..8 * bitmap {
        if bits[x / 8] >> (x % 8) & 1 == 1 {
            present[n] = x as u8;
            n += 1;
        }
    }
    let present = &present[..n];
    match present.last() {
        None => return Err(format!("model context {ctx} has no symbols")),
        Some(&x) if x as u32 > top => {
            return Err(format!("model context {ctx}: symbol {x} out of range"))
        }
        Some(_) => {}
    }
    let codes = r.take(present.len(), "frequency codes")?;
    Ok((decode_codes(present, codes), codes.to_vec()))
}

/// The weight of frequency code `q` of a compact model: `2^(8 + q / 16)`, rounded, made of
/// 16 integer mantissas so that every reader derives the same tables.
fn code_weight(q: u8) -> u64 {
    const MANTISSA: [u64; 16] = [
        256, 267, 279, 292, 304, 318, 332, 347, 362, 378, 395, 412, 431, 450, 470, 490,
    ];
    MANTISSA[(q % 16) as usize] << (q / 16)
}

/// The frequency table of symbols `syms` (increasing, at most 32) with frequency codes
/// `codes`: each frequency is its weight ([`code_weight`]) times the scale over the sum of the
/// weights, rounded down, at least 1; the first of the largest takes what is left to reach the
/// scale (in integers, one pass: a model of 30,000 tables reads in a few milliseconds).
fn decode_codes(syms: &[u8], codes: &[u8]) -> Vec<(u8, u16)> {
    let total: u64 = codes.iter().map(|&q| code_weight(q)).sum();
    let mut out: Vec<(u8, u16)> = syms
        .iter()
        .zip(codes)
        .map(|(&x, &q)| (x, ((code_weight(q) << SCALE_BITS) / total).max(1) as u16))
        .collect();
    let sum: u32 = out.iter().map(|&(_, f)| f as u32).sum();
    let big = (0..out.len()).fold(0, |b, i| if out[i].1 > out[b].1 { i } else { b });
    // At most 32 symbols: the floors lose less than 32, the raises to 1 add at most 32, and
    // the largest is at least 4096 / 32 - 1.
    out[big].1 = (out[big].1 as u32 + SCALE).wrapping_sub(sum) as u16;
    out
}

/// A frequency table as written in a compact model: the code of each frequency (the nearest
/// on the scale of [`code_weight`]: steps of 4.4%), and the table those codes give, which is
/// the one used for coding.
pub(super) fn quantize(table: &[(u8, u16)]) -> (Vec<(u8, u16)>, Vec<u8>) {
    let codes: Vec<u8> = table
        .iter()
        .map(|&(_, f)| (16.0 * (f as f64).log2()).round().clamp(0.0, 255.0) as u8)
        .collect();
    let syms: Vec<u8> = table.iter().map(|&(x, _)| x).collect();
    (decode_codes(&syms, &codes), codes)
}

impl GridModel {
    /// The serialised model (format version 3), little-endian:
    ///
    /// ```text
    /// u8   scale bits (12)
    /// u8   level s
    /// u16  strip width (64)
    /// u32  number of tables that follow
    /// per table (the level's first, then the contexts' in increasing order of context):
    ///   varint  the context less the one before less one (the first context: itself; none
    ///           for the level's table, whose context is (s + 2)^2 * 576 * FLAGS)
    ///   bitmap  the table's symbols: (s + 2 + 7) / 8 bytes, bit x % 8 of byte x / 8 for
    ///           symbol x (0..=s, and s + 1 = escape in a context's table); at least one
    ///   u8      the frequency code of each of its symbols, in increasing order of symbol
    /// ```
    ///
    /// A varint is LEB128: 7 bits a byte, low first, the top bit set on all bytes but the
    /// last; at most 4 bytes, and no longer than needed. The frequencies are derived from the
    /// codes by [`decode_codes`]. Version 1 and 2 files hold the wider form of
    /// [`GridModel::to_bytes_v2`].
    ///
    /// A context without a table uses its nearest ancestor's ([`parent`](super::contexts::parent)), or the level's. A
    /// value whose symbol a context's table lacks is coded as the escape in that table, then
    /// as its symbol in the level's.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut out = self.model_head();
        let bitmap = bitmap_len(self.layout.s);
        assert_eq!(self.codes.len(), self.tables.len(), "a fitted model");
        // The level's table first, with no context; then each context as its distance from
        // the one before, less one.
        let mut next = 0;
        for (t, ((ctx, syms), codes)) in self.tables.iter().zip(&self.codes).enumerate() {
            if t > 0 {
                put_varint(&mut out, ctx - next);
                next = ctx + 1;
            }
            let mut bits = [0u8; SYMS / 8];
            for &(s, _) in syms {
                bits[s as usize / 8] |= 1 << (s % 8);
            }
            out.extend_from_slice(&bits[..bitmap]);
            out.extend_from_slice(codes);
        }
        out
    }

    /// The eight bytes that start a serialised model.
    fn model_head(&self) -> Vec<u8> {
        let mut out = vec![SCALE_BITS as u8, self.layout.s as u8];
        out.extend_from_slice(&(STRIP as u16).to_le_bytes());
        out.extend_from_slice(&(self.tables.len() as u32).to_le_bytes());
        out
    }

    /// The model as format versions 1 and 2 wrote it: the fields of [`GridModel::to_bytes`],
    /// but per table a u32 context, a u8 number of symbols less one, then per symbol a u8
    /// symbol and a u16 frequency (the last one's too). Kept for the tests of the reader.
    #[cfg(test)]
    pub(crate) fn to_bytes_v2(&self) -> Vec<u8> {
        let mut out = self.model_head();
        for (ctx, syms) in &self.tables {
            out.extend_from_slice(&ctx.to_le_bytes());
            out.push((syms.len() - 1) as u8);
            for &(s, f) in syms {
                out.push(s);
                out.extend_from_slice(&f.to_le_bytes());
            }
        }
        out
    }

    /// Parses a serialised model of level `s` (boards of `m` houses a side) written by format
    /// version `version`, checking everything: malformed input is an error, never a panic.
    pub(crate) fn from_bytes(
        bytes: &[u8],
        m: usize,
        s: u32,
        version: u32,
    ) -> Result<GridModel, String> {
        if s > MAX_LEVEL {
            return Err(format!("grid level {s} above {MAX_LEVEL}"));
        }
        let mut r = ModelReader::new(bytes);
        let head = r.take(8, "header")?;
        if head[0] as u32 != SCALE_BITS {
            return Err(format!("model scale {} bits, not {SCALE_BITS}", head[0]));
        }
        if head[1] as u32 != s {
            return Err(format!("model for level {}, not {s}", head[1]));
        }
        if u16::from_le_bytes([head[2], head[3]]) as u64 != STRIP {
            return Err(format!(
                "model for strips of {}, not {STRIP}",
                u16::from_le_bytes([head[2], head[3]])
            ));
        }
        let k = s as usize + 2;
        let flags = if version >= 3 { FLAGS } else { 1 };
        let keys = contexts(k, flags) as u32;
        let count = u32::from_le_bytes(head[4..8].try_into().expect("4 bytes"));
        if count == 0 || count >= (NONE as u32).min(keys + 2) {
            return Err(format!("model has {count} tables"));
        }
        let mut tables = Vec::with_capacity(count as usize);
        let mut codes = Vec::new();
        // Version 3: the first context not yet passed.
        let mut next = 0u32;
        // The level's table comes first; the contexts' tables may hold the escape.
        // (Version 3 writes the contexts increasing: none can repeat.)
        let mut seen = vec![false; if version >= 3 { 0 } else { keys as usize }];
        for t in 0..count {
            let (ctx, n) = if version >= 3 {
                if t == 0 {
                    (keys, None)
                } else {
                    let ctx = next.saturating_add(r.varint("context")?);
                    next = ctx.saturating_add(1);
                    (ctx, None)
                }
            } else {
                let b = r.take(5, "context")?;
                let ctx = u32::from_le_bytes(b[..4].try_into().expect("4 bytes"));
                (ctx, Some(b[4] as u32 + 1))
            };
            let top = if t == 0 {
                if ctx != keys {
                    return Err(format!(
                        "model starts with context {ctx}, not the level's table"
                    ));
                }
                s
            } else {
                if ctx >= keys || (version < 3 && std::mem::replace(&mut seen[ctx as usize], true))
                {
                    return Err(format!("model context {ctx} out of range or repeated"));
                }
                s + 1
            };
            let syms = match n {
                Some(n) if n > top + 1 => {
                    return Err(format!(
                        "model context {ctx} has {n} symbols, at most {}",
                        top + 1
                    ))
                }
                Some(n) => r.symbols(ctx, n, top, SCALE)?,
                None => {
                    let (syms, table_codes) = compact_symbols(&mut r, ctx, top, bitmap_len(s))?;
                    codes.push(table_codes);
                    syms
                }
            };
            tables.push((ctx, syms));
        }
        r.finish()?;
        Ok(GridModel::from_tables(Layout::new(m, s), tables, flags)
            .with_codes(codes)
            .for_version(version))
    }
}
