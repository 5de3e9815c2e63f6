//! The `grid` codec: the values of a level laid out on the grid of (mover's side, opponent's
//! side) and coded with rANS under two-dimensional contexts.
//!
//! **Layout.** A board of level `s` is a pair `(a, b)`: the mover's side `a` (`t` seeds) and
//! the opponent's side `b` (`s - t` seeds). For each `t` in `0..=s` (a *group*) the values form
//! a grid of `N(m, t)` rows (the mover's sides, by [`Ranker::rank_part`](crate::db::rank::Ranker::rank_part)) by `N(m, s - t)`
//! columns (the opponent's sides, likewise). A group is cut into *strips* of [`STRIP`] columns
//! (the last one narrower); the file holds group 0, 1, ..., `s`, in each group strip after
//! strip, in each strip row after row. Blocks cut this order every `block size` values.
//!
//! Next to a value, in a strip, lie the board with one seed moved between the opponent's last
//! two houses (the value before it, "left") and the board with one seed moved between the
//! mover's last two houses (the value one strip-width before it, "up"): neighbours in the
//! game, whose values mostly agree. In index order the second lies thousands of values away.
//!
//! **Contexts.** Value `v` is symbol `(v + s) / 2` in `0..=s` (a value has the parity of
//! `s`: every seed ends in a store). A value's context is made of the symbols left (`L`), up
//! (`U`), up-left (`UL`), two to the left (`L2`) and of the board with a seed moved from the
//! opponent's third-last house to the next (`Lb`, some columns to the left: see
//! [`layout::Columns`]),
//! each *missing* (symbol `s + 1`) where it lies outside the strip or the sub-block, and (format
//! version 3) of a *carry flag*: whether `L` is a neighbour in the game or, after a carry of
//! the numbering (about a quarter of the columns), a board further away, in which case `L` and
//! `Lb` swap places: see [`contexts::Terms::context`] for how they combine. A context without a
//! table of its own uses its nearest ancestor's ([`contexts::parent`]: without the flag, then
//! without `Lb`, then without `L2`, then without `UL`), or the level's table; a context's table
//! holds an *escape* for the symbols it lacks, which are then coded in the level's table.
//!
//! **Model and coder.** A [`GridModel`] holds the tables that pay for themselves
//! ([`model::prune`]), each summing to `1 << 12` and written as one-byte log-scale codes
//! ([`serial::quantize`]), counted on every sub-block of a level below 2^29 values and on one in
//! [`model::SAMPLE`] of a larger one; the coder is rANS with one 32-bit state per sub-block of
//! [`SUB`] values and 16-bit renormalisation (`rans_coder.rs`, as `rans` uses), the words of two
//! sub-blocks sharing one stream from both ends. FORMAT.md has the details, with what each part
//! of version 3 saved.
//!
//! Measured (6 houses, standard capture, entropy with the whole level as context): on levels
//! 20 and 24, the value to the left alone 35.1% and 36.8% of a byte per value, left and up
//! 30.5% and 32.5%, with up-left 28.1% and 30.3%; on level 20 with all five 26.7%. The files,
//! with model, states and tables: 28.7% (level 20), 29.8% (22), 30.7% (24) in format version 2;
//! 28.1%, 29.0% and 29.98% in version 3.
//!
//! The codec in files, one job each: this file, the model's decoding tables and the codec's
//! entry points (encoding, decoding and probing a block); `layout`: where each board lies in
//! the file order; `contexts`: the context of a value from its neighbours, and the contexts a
//! context falls back to; `model`: fitting a model to a level; `serial`: the model as a file
//! holds it.

mod contexts;
mod layout;
mod model;
mod serial;
#[cfg(test)]
mod tests;

pub(crate) use layout::{Layout, Rows};

use super::rans_coder::{decode_step, encode_step, renormalize, slot, word_at, RANS_L};
use contexts::{context_buffer, contexts, depth, parent_shape, Terms, PAD, SHAPES};
use layout::{Columns, Cursor, STRIP};

/// The largest level the codec takes (symbols `0..=s` must fit the 32-entry tables).
pub(crate) const MAX_LEVEL: u32 = 30;
/// Values per block (a block-table entry and its checksum), as written (format version 3).
pub(crate) const BLOCK: usize = 65536;
/// Values per block in files of format versions 1 and 2.
pub(crate) const BLOCK_V2: usize = 8192;
/// Values per block in a file of format version `version`.
pub(crate) fn block_size(version: u32) -> usize {
    if version >= 3 {
        BLOCK
    } else {
        BLOCK_V2
    }
}

/// Values per sub-block. A block is cut into sub-blocks ([`MAX_SUBS`] in format version 3, 8
/// before), each coded on its own (its contexts see only it; one rANS state), so that a probe
/// decodes only its sub-block and a whole block decodes its sub-blocks two at a time, side by
/// side. A block of `n` sub-blocks is stored as:
///
/// ```text
/// u32  the decoder's start state of each sub-block (n of them)
/// u16  the number of renormalisation words of streams 0..u-1 (u - 1 of them)
/// u16  the words of stream 0, then 1, ... (the last stream's are the rest of the block)
/// ```
///
/// In version 3 there are `u = n / 2` streams: stream `p` holds the words of sub-block `2p`
/// in the order its decoder reads them, from the stream's start, and those of sub-block
/// `2p + 1`, which its decoder reads from the stream's end backwards (so the pair needs one
/// count). Before, `u = n`: one stream per sub-block, read forwards.
///
/// Smaller sub-blocks cost little (level 20: 27.63% of a byte per value in blocks of 4096,
/// 27.80% in blocks of 1024, before states and tables). Large blocks make the table and its
/// checksums small: 16 bytes a block are 0.2% of a byte per value in blocks of 8192, 0.02% in
/// blocks of 65536; a probe still decodes only its sub-block.
pub(crate) const SUB: usize = 1024;
/// The most sub-blocks in a block.
pub(crate) const MAX_SUBS: usize = BLOCK / SUB;
/// Precision of the frequency tables.
pub(crate) const SCALE_BITS: u32 = 12;
const SCALE: u32 = 1 << SCALE_BITS;
/// Entries of a cumulative table: symbols `0..=30`, one spare.
const SYMS: usize = 32;
/// No table for this context.
const NONE: u16 = u16::MAX;

/// A cumulative frequency table, on a cache line of its own.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Cum([u16; SYMS]);
/// The frequency tables of one level of the grid codec, with its layout.
pub(crate) struct GridModel {
    layout: Layout,
    /// The terms of the contexts.
    terms: Terms,
    /// The table of each context (index into `cums`): its own, its nearest ancestor's, or the
    /// level's.
    ids: Vec<u16>,
    /// Cumulative frequencies by table: entry `x` is the sum of the frequencies of the symbols
    /// below `x` ([`SCALE`] past the last symbol).
    cums: Vec<Cum>,
    /// The level's table (every value's symbol, no escape).
    global: usize,
    /// The contexts and frequency tables in serialised order.
    tables: Vec<(u32, Vec<(u8, u16)>)>,
    /// The frequency codes of each table (see [`quantize`](serial::quantize)); empty for a model read from a file
    /// of format version 1 or 2, which is never written again.
    codes: Vec<Vec<u8>>,
    /// Sub-blocks per block: [`BLOCK`] / [`SUB`], or [`BLOCK_V2`] / [`SUB`] for a file of
    /// format version 1 or 2.
    subs: usize,
    /// Whether the sub-blocks' words lie in pairs, the second read backwards (format version
    /// 3), or one after the other (versions 1 and 2): see [`SUB`].
    paired: bool,
}

impl std::fmt::Debug for GridModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GridModel")
            .field("level", &self.layout.s)
            .field("contexts", &self.tables.len())
            .finish()
    }
}

impl GridModel {
    fn miss(&self) -> u8 {
        self.layout.s as u8 + 1
    }

    /// Values per block.
    fn block(&self) -> usize {
        self.subs * SUB
    }

    /// Bytes before the words of a block: the states and the lengths.
    fn head(&self) -> usize {
        4 * self.subs + 2 * (self.streams_per_block() - 1)
    }

    /// The word streams of a block: one per sub-block, or one per pair of sub-blocks.
    fn streams_per_block(&self) -> usize {
        if self.paired {
            self.subs / 2
        } else {
            self.subs
        }
    }

    /// The model with the frequency codes of its tables (see [`quantize`](serial::quantize)).
    fn with_codes(mut self, codes: Vec<Vec<u8>>) -> GridModel {
        debug_assert!(codes.is_empty() || codes.len() == self.tables.len());
        self.codes = codes;
        self
    }

    /// The model, for the blocks of a file of format version `version`.
    fn for_version(mut self, version: u32) -> GridModel {
        self.subs = block_size(version) / SUB;
        self.paired = version >= 3;
        self
    }

    /// The layout of the level.
    pub(crate) fn layout(&self) -> &Layout {
        &self.layout
    }
}

impl GridModel {
    /// The model of checked tables: one for the context `contexts(k)` (the level's), at most
    /// one per other context.
    fn from_tables(layout: Layout, tables: Vec<(u32, Vec<(u8, u16)>)>, flags: usize) -> GridModel {
        let k = layout.s as usize + 2;
        let keys = contexts(k, flags);
        let mut ids = vec![NONE; keys];
        let mut cums = Vec::with_capacity(tables.len());
        let mut global = 0;
        for (id, (ctx, _)) in tables.iter().enumerate() {
            match ids.get_mut(*ctx as usize) {
                Some(x) => *x = id as u16,
                None => global = id,
            }
        }
        // A context without a table of its own uses its nearest ancestor's (see
        // [`parent`]); without any, the level's. The contexts without the carry flag first,
        // shape by shape, each shape after its parent's (whose contexts then already hold
        // their nearest ancestor's table, so one step up is enough): the parent of a context
        // differs in its shape only. Then each flagged context without a table takes its
        // unflagged context's.
        let kk = k * k;
        let mut shapes: Vec<usize> = (0..SHAPES).collect();
        shapes.sort_by_key(|&shape| depth(shape * kk, kk, 1));
        for shape in shapes {
            let up = parent_shape(shape * kk, kk) / kk;
            for lu in 0..kk {
                let i = (shape * kk + lu) * flags;
                if ids[i] == NONE {
                    ids[i] = if up == shape {
                        global as u16
                    } else {
                        ids[(up * kk + lu) * flags]
                    };
                }
            }
        }
        for variants in ids.chunks_exact_mut(flags) {
            let first = variants[0];
            for id in &mut variants[1..] {
                if *id == NONE {
                    *id = first;
                }
            }
        }
        for (_, syms) in tables.iter() {
            let mut cum = [SCALE as u16; SYMS];
            let mut acc = 0u32;
            let mut next = 0usize;
            for &(sym, f) in syms {
                while next <= sym as usize {
                    cum[next] = acc as u16;
                    next += 1;
                }
                acc += f as u32;
            }
            // Past the last symbol the entries stay at the scale (acc = SCALE here).
            debug_assert_eq!(acc, SCALE);
            cums.push(Cum(cum));
        }
        GridModel {
            terms: Terms::new(layout.s, flags),
            layout,
            ids,
            cums,
            global,
            tables,
            subs: MAX_SUBS,
            paired: true,
            codes: Vec::new(),
        }
    }

    /// The table of context `ctx`.
    #[inline(always)]
    fn table(&self, ctx: usize) -> &Cum {
        &self.cums[self.ids.get(ctx).map_or(self.global, |&id| id as usize)]
    }

    /// Appends the encoding of block `i` (its values, in file order; the level's block size
    /// [`BLOCK`] of them, the last block fewer) to `out`: see [`SUB`] for the layout.
    ///
    /// Panics if a value is not one of the model's (the model was not fitted on this level).
    pub(crate) fn encode_block(&self, i: u64, values: &[i8], out: &mut Vec<u8>) {
        let miss = self.miss();
        let subs = self.subs;
        let mut states = vec![RANS_L; subs];
        let mut streams: Vec<Vec<u16>> = vec![Vec::new(); subs];
        // The (table, symbol) of each value, sub-block by sub-block, side by side.
        let mut coded = vec![(0u16, 0u8); self.block()];
        let mut buf = context_buffer(SUB, miss);
        for (r, sub) in values.chunks(SUB).enumerate() {
            let buf = &mut buf[..PAD + sub.len()];
            to_symbols(sub, self.layout.s, &mut buf[PAD..]).expect("values fitted by the model");
            let mut cur = self
                .layout
                .cursor(i * self.block() as u64 + (r * SUB) as u64);
            let mut cols = self.layout.columns(&cur);
            for (p, c) in (PAD..buf.len()).zip(&mut coded[r * SUB..]) {
                let ctx = self.terms.context(buf, p, &cur, &cols);
                *c = (
                    self.ids.get(ctx).map_or(self.global as u16, |&id| id),
                    buf[p],
                );
                self.layout.advance_with(&mut cur, &mut cols);
            }
        }
        // One step of the encoder: `sym` in table `id`.
        let put = |x: &mut u32, words: &mut Vec<u16>, id: usize, sym: usize| -> bool {
            let cum = &self.cums[id].0;
            let lo = cum[sym] as u32;
            let f = cum.get(sym + 1).map_or(SCALE, |&c| c as u32) - lo;
            if f == 0 {
                return false;
            }
            encode_step::<SCALE_BITS>(x, f, lo, words);
            true
        };
        // Last value first, so that decoding runs forward; the sub-blocks side by side, their
        // steps interleaved (each a chain of divisions). A symbol that its context's table
        // lacks is the escape there, then the symbol in the level's table: coded backwards,
        // the symbol first.
        let lens: Vec<usize> = (0..subs)
            .map(|r| values.len().saturating_sub(r * SUB).min(SUB))
            .collect();
        for q in (0..SUB).rev() {
            for r in 0..subs {
                if q < lens[r] {
                    let (id, sym) = coded[r * SUB + q];
                    let (x, words) = (&mut states[r], &mut streams[r]);
                    if !put(x, words, id as usize, sym as usize) {
                        assert!(
                            put(x, words, self.global, sym as usize),
                            "symbol {sym} not in the level's table"
                        );
                        assert!(
                            put(x, words, id as usize, miss as usize),
                            "table {id} without an escape"
                        );
                    }
                }
            }
        }
        let total: usize = streams.iter().map(Vec::len).sum();
        out.reserve(self.head() + 2 * total);
        for x in states {
            out.extend_from_slice(&x.to_le_bytes());
        }
        // Each stream's words were pushed in the encoder's order: the decoder reads them in
        // the other. Paired, the second sub-block's are written in the encoder's order, so
        // that reading them from the end of the pair's words gives the decoder's.
        let units: Vec<Vec<u16>> = if self.paired {
            streams
                .chunks(2)
                .map(|p| p[0].iter().rev().chain(&p[1]).copied().collect())
                .collect()
        } else {
            streams
                .iter()
                .map(|w| w.iter().rev().copied().collect())
                .collect()
        };
        for w in &units[..units.len() - 1] {
            out.extend_from_slice(&(w.len() as u16).to_le_bytes());
        }
        for w in units.iter().flatten() {
            out.extend_from_slice(&w.to_le_bytes());
        }
    }

    /// The decoder of sub-block `r` of a block of `len` values stored as `data`, whose streams
    /// end at `ends` (checked by [`GridModel::streams`]).
    fn lane<'a>(
        &self,
        i: u64,
        data: &'a [u8],
        len: usize,
        ends: &[usize; MAX_SUBS],
        r: usize,
    ) -> Lane<'a> {
        let u = if self.paired { r / 2 } else { r };
        let start = if u == 0 { self.head() } else { ends[u - 1] };
        let first = (r * SUB).min(len);
        let (cur, cols) = if first < len {
            let cur = self.layout.cursor(i * self.block() as u64 + first as u64);
            (cur, self.layout.columns(&cur))
        } else {
            (Cursor::default(), [0; STRIP as usize])
        };
        Lane {
            x: u32::from_le_bytes(data[4 * r..4 * r + 4].try_into().expect("4 bytes")),
            words: &data[start..ends[u]],
            pos: 0,
            back: self.paired && r % 2 == 1,
            cur,
            cols,
            len: (len - first).min(SUB),
        }
    }

    /// Decodes the next symbol of `lane` into `buf[p]` (`buf` the lane's context buffer).
    /// Wrapping arithmetic: damaged data gives garbage (caught by the checks), never a panic.
    #[inline(always)]
    fn step(&self, lane: &mut Lane<'_>, buf: &mut [u8], p: usize) {
        let miss = self.miss();
        let cum = &self
            .table(self.terms.context(buf, p, &lane.cur, &lane.cols))
            .0;
        let mut sym = self.decode_symbol(lane, cum);
        if sym == miss as usize {
            // The escape: the symbol follows in the level's table.
            sym = self.decode_symbol(lane, &self.cums[self.global].0);
        }
        buf[p] = sym as u8;
        self.layout.advance_with(&mut lane.cur, &mut lane.cols);
    }

    /// Decodes one symbol of `lane` with the cumulative frequencies `cum`.
    #[inline(always)]
    fn decode_symbol(&self, lane: &mut Lane<'_>, cum: &[u16; SYMS]) -> usize {
        let x = lane.x;
        let slot = slot::<SCALE_BITS>(x);
        // The entries rise: the symbol is the number of them, past the first, at most `slot`
        // (entries are at most 4096: compared as i16, 8 to a vector).
        let mut n = 0i16;
        for &c in &cum[1..] {
            n += (c as i16 <= slot as i16) as i16;
        }
        let sym = n as usize;
        let lo = cum[sym] as u32;
        let f = cum
            .get(sym + 1)
            .map_or(SCALE, |&c| c as u32)
            .wrapping_sub(lo);
        // The second of a pair reads its words from the end (past the start, an index past the
        // end, which reads 0).
        let at = if lane.back {
            lane.words
                .len()
                .checked_sub(lane.pos + 2)
                .unwrap_or(usize::MAX / 2)
        } else {
            lane.pos
        };
        let (x, used) = renormalize(decode_step::<SCALE_BITS>(x, f, lo), word_at(lane.words, at));
        lane.x = x;
        lane.pos += used;
        sym
    }

    /// The checks at the end of a sub-block: every byte read, the state back where the encoder
    /// started it. (Every symbol decoded is a value's: a context's table gives a symbol or the
    /// escape, the level's table a symbol.)
    fn finish(&self, r: usize, lane: &Lane<'_>) -> Result<(), String> {
        if !self.paired && lane.pos != lane.words.len() {
            return Err(format!(
                "sub-block {r} has {} bytes of words, decoding reads {}",
                lane.words.len(),
                lane.pos
            ));
        }
        if lane.x != RANS_L {
            return Err(format!("sub-block {r} decodes to a wrong final state"));
        }
        Ok(())
    }

    /// Decodes block `i` (stored as `data`) whole into `out`, which must have the block's
    /// length: the sub-blocks side by side, their steps interleaved (independent chains that
    /// the processor overlaps). Damaged data is an error, never a panic; on error `out` is
    /// zeroed.
    pub(crate) fn decode_block(&self, i: u64, data: &[u8], out: &mut [i8]) -> Result<(), String> {
        let r = self.decode_block_(i, data, out);
        if r.is_err() {
            out.fill(0);
        }
        r
    }

    fn decode_block_(&self, i: u64, data: &[u8], out: &mut [i8]) -> Result<(), String> {
        let ends = self.streams(data)?;
        let miss = self.miss();
        let s = self.layout.s as i8;
        let mut bufs = [[miss; PAD + SUB]; 2];
        // Two sub-blocks at a time, their state in locals (registers), their steps
        // interleaved.
        for r in (0..self.subs).step_by(2) {
            let (ba, bb) = bufs.split_at_mut(1);
            let (ba, bb) = (&mut ba[0], &mut bb[0]);
            let mut a = self.lane(i, data, out.len(), &ends, r);
            let mut b = self.lane(i, data, out.len(), &ends, r + 1);
            let common = a.len.min(b.len);
            for p in PAD..PAD + common {
                self.step(&mut a, ba, p);
                self.step(&mut b, bb, p);
            }
            for p in PAD + common..PAD + a.len {
                self.step(&mut a, ba, p);
            }
            for p in PAD + common..PAD + b.len {
                self.step(&mut b, bb, p);
            }
            if self.paired && a.pos + b.pos != a.words.len() {
                return Err(format!(
                    "sub-blocks {r} and {} have {} bytes of words, decoding reads {}",
                    r + 1,
                    a.words.len(),
                    a.pos + b.pos
                ));
            }
            for (q, (lane, buf)) in [(a, &*ba), (b, &*bb)].into_iter().enumerate() {
                self.finish(r + q, &lane)?;
                let first = ((r + q) * SUB).min(out.len());
                let o = &mut out[first..first + lane.len];
                for (o, &y) in o.iter_mut().zip(&buf[PAD..]) {
                    *o = 2 * y as i8 - s;
                }
            }
        }
        Ok(())
    }

    /// Where the word streams of the sub-blocks of a block stored as `data` end, checked: each
    /// within the block, the last ending where it ends (entries past the last sub-block: the
    /// block's end).
    fn streams(&self, data: &[u8]) -> Result<[usize; MAX_SUBS], String> {
        let (head, subs) = (self.head(), self.streams_per_block());
        if data.len() < head {
            return Err(format!(
                "block of {} bytes, shorter than its {head} bytes of states and lengths",
                data.len()
            ));
        }
        if !(data.len() - head).is_multiple_of(2) {
            return Err(format!("block of {} bytes: an odd number", data.len()));
        }
        let mut ends = [data.len(); MAX_SUBS];
        let mut start = head;
        for (r, end) in ends.iter_mut().enumerate().take(subs - 1) {
            let at = 4 * self.subs + 2 * r;
            *end = start + 2 * u16::from_le_bytes([data[at], data[at + 1]]) as usize;
            if *end > data.len() {
                return Err(format!(
                    "block of {} bytes, its streams run past its end",
                    data.len()
                ));
            }
            start = *end;
        }
        Ok(ends)
    }

    /// Decodes value `q` of block `i` (of `len` values) and returns it, decoding only its
    /// sub-block up to it (a probe: stops early, so only damage that makes it read past the
    /// end is seen; the block's checksum sees the rest).
    pub(crate) fn decode_at(
        &self,
        i: u64,
        data: &[u8],
        len: usize,
        q: usize,
    ) -> Result<i8, String> {
        if q >= len {
            return Err(format!("value {q} of a block of {len}"));
        }
        let r = q / SUB;
        let lane = &mut self.lane(i, data, len, &self.streams(data)?, r);
        let mut buf = [self.miss(); PAD + SUB];
        let last = PAD + q % SUB;
        for p in PAD..=last {
            self.step(lane, &mut buf, p);
        }
        if lane.pos > lane.words.len() {
            return Err(format!(
                "sub-block {r}: decoding value {q} reads past the end of its words"
            ));
        }
        Ok(2 * buf[last] as i8 - self.layout.s as i8)
    }
}

/// The decoder of one sub-block.
#[derive(Clone, Copy)]
struct Lane<'a> {
    /// The rANS state.
    x: u32,
    /// The sub-block's renormalisation words.
    words: &'a [u8],
    /// Bytes of `words` read.
    pos: usize,
    /// Whether `words` are read from their end backwards (the second of a pair).
    back: bool,
    /// Where the next value lies.
    cur: Cursor,
    /// The [`Columns`] of its strip.
    cols: Columns,
    /// Values in the sub-block.
    len: usize,
}

/// The symbols of values of level `s`: `(v + s) / 2`; an error for a value out of range or of
/// the wrong parity.
fn to_symbols(values: &[i8], s: u32, out: &mut [u8]) -> Result<(), String> {
    let s = s as i32;
    for (o, &v) in out.iter_mut().zip(values) {
        let x = v as i32 + s;
        if !(0..=2 * s).contains(&x) || x % 2 != 0 {
            return Err(format!("value {v} is not a value of level {s}"));
        }
        *o = (x / 2) as u8;
    }
    Ok(())
}
