//! An order-1 rANS codec for the values of one level: each value is coded with the frequency
//! table of its context, the value before it in index order (the first value of a block has
//! a fixed start context), so a block decodes on its own, from its first value on.
//!
//! - Symbols: value `v` of a level with values in `[-lim, lim]` is symbol `v + lim`, in
//!   `0..=2 lim`; the start context is `2 lim + 1`.
//! - A [`Model`] holds, for each context that occurs in the level, frequencies summing to
//!   `1 << scale_bits` over the symbols that follow it ([`SCALE_BITS`] by default).
//! - Coding: [`STREAMS`] interleaved rANS states of 32 bits (value `i` of a block uses state
//!   `i % STREAMS`), renormalised 16 bits at a time (`x` stays in `[2^16, 2^32)`; the steps of
//!   `rans_coder.rs`), encoded last value first, so that decoding runs forward.
//! - A block: the `STREAMS` states the decoder starts from (`u32` each), then the 16-bit
//!   renormalisation words in the order the decoder reads them (`u16` each); little-endian.
//!   The encoder starts every state at `2^16`: the decoder checks that it ends there, having
//!   read every byte, which catches most damage.
//!
//! Decoding takes one look-up in a per-context slot-to-symbol table (one byte per slot), one
//! in a frequency table, a multiply and a branch-free refill per value.
//!
//! Measured (6 houses, level 22 and 24 of standard and empty capture, one core): blocks of 4096
//! values take 36.7-37.8% of a byte per position with the model and 16 bytes of table per
//! block (zstd: 37.0-40.0%; the order-1 entropy of the levels is 36.1-37.2%); encoding runs
//! at about 200 M values/s, decoding at about 300 M values/s (one stream: 165 M/s; four:
//! 375 M/s but 0.15-0.3 points larger); a probe of a random value takes 7.5 us on average.
//! 13 or 14 bits of scale save nothing measurable and decode slower.
//! `tools/codec-bench` measures the codecs on real levels (`--rans-blocks`, `--rans-scales`).

use super::rans_coder::{
    decode_step, encode_step, normalize, renormalize, slot, word_at, ModelReader, RANS_L,
};

/// Positions per rans block: a probe decodes half a block on average (about 7.5 us), and each
/// block costs 16 bytes of table and 8 of states.
pub(crate) const BLOCK: u32 = 1 << 12;
/// The default precision of the frequency tables: frequencies sum to `1 << SCALE_BITS`.
pub(crate) const SCALE_BITS: u32 = 12;
/// The precisions [`Model::from_bytes`] accepts.
pub(crate) const SCALE_RANGE: std::ops::RangeInclusive<u32> = 12..=14;
/// Interleaved rANS states per block.
pub(crate) const STREAMS: usize = 2;
/// Bytes of the states at the start of a block.
pub(crate) const STATE_BYTES: usize = 4 * STREAMS;

/// An order-1 model of one level: for each context (the previous value in index order; the
/// first value of a block uses a fixed start context) a frequency table normalised to
/// `1 << scale_bits` over the symbols that occur after it.
pub(crate) struct Model {
    lim: i8,
    scale_bits: u32,
    /// `freq | cum << 16` by `[context][symbol]`; 0 for the pairs that never occur.
    fc: Box<[[u32; 256]; 256]>,
    /// The symbol of each slot: `2 lim + 2` tables of `1 << scale_bits` slots, by context.
    /// The tables of contexts that never occur hold [`Model::dead`], which is no value's
    /// symbol (its frequencies are 0), so that damaged data decoding into such a context gives
    /// an out-of-range symbol, seen at the end of the block.
    slots: Vec<u8>,
    /// The frequency tables in serialised order: `(context, [(symbol, frequency)])`.
    tables: Vec<(u8, Vec<(u8, u16)>)>,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("lim", &self.lim)
            .field("scale_bits", &self.scale_bits)
            .field("contexts", &self.tables.len())
            .finish()
    }
}

/// The decoding state of one block.
struct Dec<'a> {
    x: [u32; STREAMS],
    data: &'a [u8],
    pos: usize,
}

impl Model {
    /// Counts a whole level's values (all in `[-lim, lim]`) block by block (`block_size`
    /// values per block, the cut the encoder uses, so that the start context is counted
    /// right) and normalises to `1 << SCALE_BITS`. Every (context, symbol) pair that occurs
    /// gets frequency at least 1.
    ///
    /// Panics if a value is out of range or `block_size` is 0.
    pub(crate) fn fit(values: &[i8], lim: i8, block_size: usize) -> Model {
        Model::fit_with_scale(values, lim, block_size, SCALE_BITS)
    }

    /// [`Model::fit`] with another precision (one of [`SCALE_RANGE`]).
    pub(crate) fn fit_with_scale(
        values: &[i8],
        lim: i8,
        block_size: usize,
        scale_bits: u32,
    ) -> Model {
        use rayon::prelude::*;
        assert!(lim >= 0, "negative lim {lim}");
        assert!(block_size > 0, "block size 0");
        assert!(SCALE_RANGE.contains(&scale_bits), "scale {scale_bits}");
        let start = 2 * lim as usize + 1;
        let count = |chunk: &[i8]| {
            let mut counts = vec![[0u64; 256]; start + 1];
            for block in chunk.chunks(block_size) {
                let mut ctx = start;
                for &v in block {
                    assert!(
                        (-lim..=lim).contains(&v),
                        "value {v} outside [-{lim}, {lim}]"
                    );
                    let s = (v as i16 + lim as i16) as usize;
                    counts[ctx][s] += 1;
                    ctx = s;
                }
            }
            counts
        };
        // Chunks of whole blocks, counted in parallel.
        let chunk = block_size * (1usize << 20).div_ceil(block_size);
        let counts = values.par_chunks(chunk).map(count).reduce(
            || vec![[0u64; 256]; start + 1],
            |mut a, b| {
                for (ra, rb) in a.iter_mut().zip(&b) {
                    for (x, y) in ra.iter_mut().zip(rb) {
                        *x += y;
                    }
                }
                a
            },
        );
        let tables = counts
            .iter()
            .enumerate()
            .map(|(c, row)| (c as u8, normalize(row, scale_bits)))
            .filter(|(_, t)| !t.is_empty())
            .collect();
        Model::from_tables(lim, scale_bits, tables)
    }

    /// Builds the decoding tables from checked frequency tables.
    fn from_tables(lim: i8, scale_bits: u32, tables: Vec<(u8, Vec<(u8, u16)>)>) -> Model {
        let dead = 2 * lim as u8 + 1;
        let m = 1usize << scale_bits;
        let mut fc: Box<[[u32; 256]; 256]> = vec![[0u32; 256]; 256]
            .into_boxed_slice()
            .try_into()
            .expect("256 rows");
        let mut slots = vec![dead; (dead as usize + 1) * m];
        for (ctx, syms) in &tables {
            let table = &mut slots[*ctx as usize * m..][..m];
            let mut cum = 0usize;
            for &(s, f) in syms {
                fc[*ctx as usize][s as usize] = f as u32 | (cum as u32) << 16;
                table[cum..cum + f as usize].fill(s);
                cum += f as usize;
            }
            debug_assert_eq!(cum, m);
        }
        Model {
            lim,
            scale_bits,
            fc,
            slots,
            tables,
        }
    }

    /// The serialised model, little-endian:
    ///
    /// ```text
    /// u8   scale bits (frequencies of a context sum to 1 << scale bits)
    /// u8   lim (values in [-lim, lim]; symbol = value + lim; start context = 2 lim + 1)
    /// u16  number of contexts that follow
    /// per context, in increasing order of context:
    ///   u8   context (0..=2 lim + 1)
    ///   u8   number of symbols - 1
    ///   per symbol, in increasing order of symbol:
    ///     u8   symbol (0..=2 lim)
    ///     u16  frequency (>= 1; the frequencies of a context sum to 1 << scale bits)
    /// ```
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut out = vec![self.scale_bits as u8, self.lim as u8];
        out.extend_from_slice(&(self.tables.len() as u16).to_le_bytes());
        for (ctx, syms) in &self.tables {
            out.push(*ctx);
            out.push((syms.len() - 1) as u8);
            for &(s, f) in syms {
                out.push(s);
                out.extend_from_slice(&f.to_le_bytes());
            }
        }
        out
    }

    /// Parses a serialised model of a level with values in `[-lim, lim]`, checking
    /// everything: malformed input is an error, never a panic.
    pub(crate) fn from_bytes(bytes: &[u8], lim: i8) -> Result<Model, String> {
        if lim < 0 {
            return Err(format!("negative lim {lim}"));
        }
        let mut r = ModelReader::new(bytes);
        let head = r.take(4, "header")?;
        let scale_bits = head[0] as u32;
        if !SCALE_RANGE.contains(&scale_bits) {
            return Err(format!(
                "model scale {scale_bits} bits, not in {}..={}",
                SCALE_RANGE.start(),
                SCALE_RANGE.end()
            ));
        }
        if head[1] != lim as u8 {
            return Err(format!("model for values up to {}, not {lim}", head[1]));
        }
        let m = 1u32 << scale_bits;
        let start = 2 * lim as u32 + 1;
        let contexts = u16::from_le_bytes([head[2], head[3]]) as u32;
        if contexts > start + 1 {
            return Err(format!(
                "model has {contexts} contexts, at most {}",
                start + 1
            ));
        }
        let mut tables = Vec::with_capacity(contexts as usize);
        let mut prev_ctx = None;
        for _ in 0..contexts {
            let b = r.take(2, "context")?;
            let (ctx, n) = (b[0] as u32, b[1] as u32 + 1);
            if ctx > start || prev_ctx.is_some_and(|p| ctx <= p) {
                return Err(format!("model context {ctx} out of range or out of order"));
            }
            prev_ctx = Some(ctx);
            if n > start {
                return Err(format!(
                    "model context {ctx} has {n} symbols, at most {start}"
                ));
            }
            let syms = r.symbols(ctx, n, start - 1, m)?;
            tables.push((ctx as u8, syms));
        }
        r.finish()?;
        Ok(Model::from_tables(lim, scale_bits, tables))
    }

    /// Appends the encoding of one block to `out`.
    ///
    /// Panics if a value is out of range or a (context, symbol) pair of the block is not in
    /// the model (the model was not fitted on these values with this block cut).
    pub(crate) fn encode_block(&self, values: &[i8], out: &mut Vec<u8>) {
        match self.scale_bits {
            12 => self.encode::<12>(values, out),
            13 => self.encode::<13>(values, out),
            14 => self.encode::<14>(values, out),
            s => unreachable!("scale {s} checked at construction"),
        }
    }

    fn encode<const S: u32>(&self, values: &[i8], out: &mut Vec<u8>) {
        let lim = self.lim;
        let start = 2 * lim as u8 + 1;
        let sym = |v: i8| -> u8 {
            assert!(
                (-lim..=lim).contains(&v),
                "value {v} outside [-{lim}, {lim}]"
            );
            (v as i16 + lim as i16) as u8
        };
        let mut xs = [RANS_L; STREAMS];
        let mut words: Vec<u16> = Vec::with_capacity(values.len() / 4 + 16);
        let mut next = values.last().map(|&v| sym(v));
        for i in (0..values.len()).rev() {
            let s = next.expect("set for every value");
            let ctx = if i == 0 { start } else { sym(values[i - 1]) };
            next = Some(ctx);
            let e = self.fc[ctx as usize][s as usize];
            let (f, cum) = (e & 0xffff, e >> 16);
            assert!(
                f != 0,
                "value {} after context {ctx} is not in the model",
                values[i]
            );
            encode_step::<S>(&mut xs[i % STREAMS], f, cum, &mut words);
        }
        out.reserve(STATE_BYTES + 2 * words.len());
        for x in xs {
            out.extend_from_slice(&x.to_le_bytes());
        }
        for w in words.iter().rev() {
            out.extend_from_slice(&w.to_le_bytes());
        }
    }

    fn start_dec<'a>(&self, data: &'a [u8]) -> Result<Dec<'a>, String> {
        if data.len() < STATE_BYTES {
            return Err(format!(
                "block of {} bytes, shorter than its {STATE_BYTES} bytes of states",
                data.len()
            ));
        }
        let mut x = [0u32; STREAMS];
        for (j, x) in x.iter_mut().enumerate() {
            *x = u32::from_le_bytes(data[4 * j..4 * j + 4].try_into().expect("4 bytes"));
        }
        Ok(Dec {
            x,
            data,
            pos: STATE_BYTES,
        })
    }

    /// Decodes the next value of stream `j` in context `ctx`: its symbol. Wrapping
    /// arithmetic: damaged data gives garbage (caught by the caller), never a panic.
    #[inline(always)]
    fn step<const S: u32>(&self, d: &mut Dec<'_>, j: usize, ctx: u8) -> u8 {
        let x = d.x[j];
        let s = self.slots[((ctx as usize) << S) | slot::<S>(x) as usize];
        let e = self.fc[ctx as usize][s as usize];
        let (x, used) = renormalize(
            decode_step::<S>(x, e & 0xffff, e >> 16),
            word_at(d.data, d.pos),
        );
        d.x[j] = x;
        d.pos += used;
        s
    }

    /// Decodes exactly `out.len()` values from `data`. Damaged data is an error (the states
    /// must end where the encoder started them, every byte read, every value in range),
    /// never a panic; on error `out` is zeroed, so it never holds a value out of range.
    pub(crate) fn decode_block(&self, data: &[u8], out: &mut [i8]) -> Result<(), String> {
        let r = match self.scale_bits {
            12 => self.decode::<12>(data, out),
            13 => self.decode::<13>(data, out),
            14 => self.decode::<14>(data, out),
            s => unreachable!("scale {s} checked at construction"),
        };
        if r.is_err() {
            out.fill(0);
        }
        r
    }

    /// Decodes two blocks at once, their steps interleaved: each value waits for the one
    /// before it (its context), so one block leaves the processor idle between steps that
    /// two independent blocks fill. The results are those of [`Model::decode_block`] on each.
    pub(crate) fn decode_pair(
        &self,
        a: &[u8],
        out_a: &mut [i8],
        b: &[u8],
        out_b: &mut [i8],
    ) -> [Result<(), String>; 2] {
        let r = match self.scale_bits {
            12 => self.decode_pair_::<12>(a, out_a, b, out_b),
            13 => self.decode_pair_::<13>(a, out_a, b, out_b),
            14 => self.decode_pair_::<14>(a, out_a, b, out_b),
            s => unreachable!("scale {s} checked at construction"),
        };
        if r[0].is_err() {
            out_a.fill(0);
        }
        if r[1].is_err() {
            out_b.fill(0);
        }
        r
    }

    fn decode_pair_<const S: u32>(
        &self,
        a: &[u8],
        out_a: &mut [i8],
        b: &[u8],
        out_b: &mut [i8],
    ) -> [Result<(), String>; 2] {
        let (mut da, mut db) = match (self.start_dec(a), self.start_dec(b)) {
            (Ok(da), Ok(db)) => (da, db),
            _ => return [self.decode::<S>(a, out_a), self.decode::<S>(b, out_b)],
        };
        let lim = self.lim;
        let start = 2 * lim as u8 + 1;
        let (mut ca, mut cb) = (start, start);
        let (mut ma, mut mb) = (0u8, 0u8);
        let n = out_a.len().min(out_b.len());
        for (i, (oa, ob)) in out_a[..n].iter_mut().zip(&mut out_b[..n]).enumerate() {
            let j = i % STREAMS;
            let sa = self.step::<S>(&mut da, j, ca);
            let sb = self.step::<S>(&mut db, j, cb);
            ma = ma.max(sa);
            mb = mb.max(sb);
            *oa = (sa as i8).wrapping_sub(lim);
            *ob = (sb as i8).wrapping_sub(lim);
            ca = sa;
            cb = sb;
        }
        // The longer block's rest, alone.
        self.steps::<S>(&mut da, &mut out_a[n..], n, &mut ca, &mut ma);
        self.steps::<S>(&mut db, &mut out_b[n..], n, &mut cb, &mut mb);
        [self.finish(&da, ma, a.len()), self.finish(&db, mb, b.len())]
    }

    /// Decodes `out.len()` values of a block into `out`, the first of them value `first` of
    /// the block (which picks its stream), updating the context and the largest symbol.
    #[inline(always)]
    fn steps<const S: u32>(
        &self,
        d: &mut Dec<'_>,
        out: &mut [i8],
        first: usize,
        ctx: &mut u8,
        max: &mut u8,
    ) {
        for (i, o) in out.iter_mut().enumerate() {
            let s = self.step::<S>(d, (first + i) % STREAMS, *ctx);
            *max = (*max).max(s);
            *o = (s as i8).wrapping_sub(self.lim);
            *ctx = s;
        }
    }

    /// The checks at the end of a block: every symbol in range, every byte read, both states
    /// back where the encoder started them.
    fn finish(&self, d: &Dec<'_>, max: u8, len: usize) -> Result<(), String> {
        if max > 2 * self.lim as u8 {
            return Err("block decodes to a value out of range".into());
        }
        if d.pos != len {
            return Err(format!("block of {len} bytes, decoding reads {}", d.pos));
        }
        if d.x != [RANS_L; STREAMS] {
            return Err("block decodes to a wrong final state".into());
        }
        Ok(())
    }

    fn decode<const S: u32>(&self, data: &[u8], out: &mut [i8]) -> Result<(), String> {
        let mut d = self.start_dec(data)?;
        let lim = self.lim;
        let mut ctx = 2 * lim as u8 + 1;
        let mut max = 0u8;
        let mut chunks = out.chunks_exact_mut(STREAMS);
        for chunk in &mut chunks {
            for (j, o) in chunk.iter_mut().enumerate() {
                let s = self.step::<S>(&mut d, j, ctx);
                max = max.max(s);
                *o = (s as i8).wrapping_sub(lim);
                ctx = s;
            }
        }
        self.steps::<S>(&mut d, chunks.into_remainder(), 0, &mut ctx, &mut max);
        self.finish(&d, max, data.len())
    }

    /// Decodes only values `0..=k` of a block and returns value `k` (a probe: stops early,
    /// so only damage that makes it read past the end or leave the range is seen). `k` must be
    /// below the block's length: past it, the result is an error or some value in range.
    pub(crate) fn decode_at(&self, data: &[u8], k: usize) -> Result<i8, String> {
        match self.scale_bits {
            12 => self.decode_at_::<12>(data, k),
            13 => self.decode_at_::<13>(data, k),
            14 => self.decode_at_::<14>(data, k),
            s => unreachable!("scale {s} checked at construction"),
        }
    }

    fn decode_at_<const S: u32>(&self, data: &[u8], k: usize) -> Result<i8, String> {
        let mut d = self.start_dec(data)?;
        let lim = self.lim;
        let mut ctx = 2 * lim as u8 + 1;
        let mut max = 0u8;
        let pairs = (k + 1) / STREAMS;
        for _ in 0..pairs {
            for j in 0..STREAMS {
                let s = self.step::<S>(&mut d, j, ctx);
                max = max.max(s);
                ctx = s;
            }
        }
        for j in 0..(k + 1) % STREAMS {
            let s = self.step::<S>(&mut d, j, ctx);
            max = max.max(s);
            ctx = s;
        }
        if max > 2 * lim as u8 {
            return Err("block decodes to a value out of range".into());
        }
        if d.pos > data.len() {
            return Err(format!(
                "block of {} bytes, decoding value {k} reads past its end",
                data.len()
            ));
        }
        Ok((ctx as i8).wrapping_sub(lim))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift*).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// Uniform values in `[-lim, lim]`.
    fn uniform(rng: &mut Rng, lim: i8, n: usize) -> Vec<i8> {
        (0..n)
            .map(|_| (rng.below(2 * lim as u64 + 1) as i64 - lim as i64) as i8)
            .collect()
    }

    /// Values like a level's: long runs, small steps, now and then a jump anywhere.
    fn skewed(rng: &mut Rng, lim: i8, n: usize) -> Vec<i8> {
        let mut v = 0i64;
        let l = lim as i64;
        (0..n)
            .map(|_| {
                match rng.below(100) {
                    0..=69 => {}
                    70..=89 => v += rng.below(3) as i64 - 1,
                    90..=97 => v += rng.below(9) as i64 - 4,
                    _ => v = rng.below(2 * l as u64 + 1) as i64 - l,
                }
                v = v.clamp(-l, l);
                v as i8
            })
            .collect()
    }

    /// Encodes every block; returns the blocks' bytes.
    fn encode_all(model: &Model, values: &[i8], bs: usize) -> Vec<Vec<u8>> {
        values
            .chunks(bs)
            .map(|b| {
                let mut out = Vec::new();
                model.encode_block(b, &mut out);
                out
            })
            .collect()
    }

    fn round_trip(values: &[i8], lim: i8, bs: usize, scale: u32) {
        let model = Model::fit_with_scale(values, lim, bs, scale);
        let bytes = model.to_bytes();
        let model = Model::from_bytes(&bytes, lim).unwrap();
        assert_eq!(model.to_bytes(), bytes);
        let blocks = encode_all(&model, values, bs);
        for (b, data) in values.chunks(bs).zip(&blocks) {
            let mut out = vec![0i8; b.len()];
            model.decode_block(data, &mut out).unwrap();
            assert_eq!(out, b, "lim {lim} bs {bs} scale {scale}");
            // Deterministic.
            let mut again = Vec::new();
            model.encode_block(b, &mut again);
            assert_eq!(&again, data);
        }
        // decode_at on the first and last blocks, every k.
        for (b, data) in values.chunks(bs).zip(&blocks).take(1).chain(
            values
                .chunks(bs)
                .zip(&blocks)
                .skip(values.len().div_ceil(bs).max(1) - 1),
        ) {
            for (k, &v) in b.iter().enumerate() {
                assert_eq!(model.decode_at(data, k).unwrap(), v, "k {k}");
            }
        }
    }

    #[test]
    fn round_trips() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for lim in [0i8, 1, 2, 16, 30, 127] {
            for (n, bs) in [
                (0, 7),
                (1, 1),
                (5, 1),
                (1000, 1000),
                (1000, 333),
                (4099, 512),
            ] {
                for scale in SCALE_RANGE {
                    round_trip(&uniform(&mut rng, lim, n), lim, bs, scale);
                    round_trip(&skewed(&mut rng, lim, n), lim, bs, scale);
                }
            }
        }
        // A level of one repeated value: blocks of states only.
        let values = vec![3i8; 5000];
        round_trip(&values, 4, 4096, SCALE_BITS);
        let model = Model::fit(&values, 4, 4096);
        let mut out = Vec::new();
        model.encode_block(&values[..4096], &mut out);
        assert_eq!(out.len(), STATE_BYTES);
    }

    #[test]
    fn compresses_near_the_entropy() {
        let mut rng = Rng(7);
        let (lim, bs) = (20i8, 4096);
        let values = skewed(&mut rng, lim, 1 << 18);
        let model = Model::fit(&values, lim, bs);
        let bytes: usize = encode_all(&model, &values, bs).iter().map(Vec::len).sum();
        // Order-1 entropy of the values, block starts included.
        let mut counts = vec![[0u64; 256]; 256];
        for b in values.chunks(bs) {
            let mut ctx = 2 * lim as usize + 1;
            for &v in b {
                let s = (v + lim) as usize;
                counts[ctx][s] += 1;
                ctx = s;
            }
        }
        let mut bits = 0.0;
        for row in &counts {
            let t: u64 = row.iter().sum();
            for &c in row.iter().filter(|&&c| c > 0) {
                bits -= c as f64 * (c as f64 / t as f64).log2();
            }
        }
        let ideal = bits / 8.0;
        assert!(
            (bytes as f64) < ideal * 1.02 + 64.0 * STATE_BYTES as f64,
            "{bytes} bytes, entropy {ideal:.0}"
        );
    }

    #[test]
    fn from_bytes_rejects_malformed_models() {
        let mut rng = Rng(11);
        for lim in [1i8, 16, 127] {
            let values = skewed(&mut rng, lim, 20000);
            let model = Model::fit(&values, lim, 1024);
            let bytes = model.to_bytes();
            let blocks = encode_all(&model, &values, 1024);
            for n in 0..bytes.len() {
                assert!(
                    Model::from_bytes(&bytes[..n], lim).is_err(),
                    "truncated to {n}"
                );
            }
            let mut long = bytes.clone();
            long.push(0);
            assert!(Model::from_bytes(&long, lim)
                .unwrap_err()
                .contains("trailing"));
            assert!(Model::from_bytes(&bytes, lim - 1).is_err());
            for i in 0..bytes.len() {
                for flip in [1u8, 0x80, 0xff, 0x10] {
                    let mut bad = bytes.clone();
                    bad[i] ^= flip;
                    if let Ok(m) = Model::from_bytes(&bad, lim) {
                        // Still a valid model: it serialises back to the same bytes, and
                        // decoding with it stays in range.
                        assert_eq!(m.to_bytes(), bad);
                        let mut out = vec![0i8; 1024];
                        for data in blocks.iter().take(3) {
                            let _ = m.decode_block(data, &mut out);
                            assert!(out.iter().all(|v| (-lim..=lim).contains(v)));
                            if let Ok(v) = m.decode_at(data, 1000) {
                                assert!((-lim..=lim).contains(&v));
                            }
                        }
                    }
                }
            }
        }
        // A sum off by one, a zero frequency, an unknown scale.
        let good = [12u8, 1, 1, 0, 3, 1, 0, 0, 8, 2, 0, 8];
        assert!(Model::from_bytes(&good, 1).is_ok());
        let mut bad = good;
        bad[11] = 9;
        assert!(Model::from_bytes(&bad, 1).unwrap_err().contains("sum"));
        let mut bad = good;
        bad[8] = 0;
        bad[7] = 0;
        assert!(Model::from_bytes(&bad, 1).is_err());
        let mut bad = good;
        bad[0] = 16;
        assert!(Model::from_bytes(&bad, 1).unwrap_err().contains("scale"));
    }

    #[test]
    fn damaged_blocks_never_panic_or_leave_the_range() {
        let mut rng = Rng(23);
        for (lim, bs) in [(1i8, 4096), (2, 64), (16, 2048), (30, 4096), (127, 300)] {
            let values = skewed(&mut rng, lim, 3 * bs + 5);
            let model = Model::fit(&values, lim, bs);
            let blocks = encode_all(&model, &values, bs);
            let mut caught = 0;
            let mut tries = 0;
            for (b, data) in values.chunks(bs).zip(&blocks) {
                let mut out = vec![0i8; b.len()];
                let check = |bad: &[u8], out: &mut [i8], rng: &mut Rng| {
                    let r = model.decode_block(bad, out);
                    assert!(out.iter().all(|v| (-lim..=lim).contains(v)));
                    for _ in 0..4 {
                        let k = rng.below(out.len() as u64) as usize;
                        if let Ok(v) = model.decode_at(bad, k) {
                            assert!((-lim..=lim).contains(&v));
                        }
                    }
                    r.is_err()
                };
                for n in 0..data.len() {
                    assert!(check(&data[..n], &mut out, &mut rng), "truncated to {n}");
                }
                for _ in 0..2000 {
                    let mut bad = data.clone();
                    for _ in 0..1 + rng.below(3) {
                        let i = rng.below(bad.len() as u64) as usize;
                        bad[i] ^= 1 + rng.below(255) as u8;
                    }
                    tries += 1;
                    caught += check(&bad, &mut out, &mut rng) as usize;
                }
                // Too long by a word.
                let mut long = data.clone();
                long.extend_from_slice(&[0, 0]);
                assert!(check(&long, &mut out, &mut rng));
                // The wrong length of output.
                let mut short = vec![0i8; b.len().saturating_sub(1)];
                if !short.is_empty() {
                    assert!(check(data, &mut short, &mut rng));
                }
            }
            // Most damage is caught without the checksum (a flip in a part of the data
            // that codes nothing, such as an unused refill word, cannot be).
            assert!(
                caught * 10 >= tries * 9,
                "lim {lim}: caught {caught} of {tries}"
            );
        }
    }

    #[test]
    fn decode_pair_agrees_with_decode_block() {
        let mut rng = Rng(9);
        for (lim, bs, n) in [
            (24i8, 2048, 3 * 2048 + 77),
            (3, 4096, 2 * 4096),
            (127, 1000, 1001),
        ] {
            let values = skewed(&mut rng, lim, n);
            let model = Model::fit(&values, lim, bs);
            let blocks = encode_all(&model, &values, bs);
            let lens: Vec<usize> = values.chunks(bs).map(<[i8]>::len).collect();
            let single = |data: &[u8], len: usize| {
                let mut out = vec![0i8; len];
                let r = model.decode_block(data, &mut out);
                (r, out)
            };
            // Every pair, in both orders (so that either side may be the short one), intact
            // and with one side damaged.
            for i in 0..blocks.len() {
                for k in 0..blocks.len() {
                    let mut bad = blocks[k].clone();
                    let at = bad.len() / 2;
                    bad[at] ^= 0x5a;
                    for b in [&blocks[k], &bad] {
                        let (mut oa, mut ob) = (vec![0i8; lens[i]], vec![0i8; lens[k]]);
                        let r = model.decode_pair(&blocks[i], &mut oa, b, &mut ob);
                        let (ra, ea) = single(&blocks[i], lens[i]);
                        let (rb, eb) = single(b, lens[k]);
                        assert_eq!(r[0], ra);
                        assert_eq!(r[1], rb);
                        assert_eq!(oa, ea);
                        assert_eq!(ob, eb);
                    }
                }
            }
            // A block too short for its states.
            let (mut oa, mut ob) = (vec![0i8; lens[0]], vec![0i8; lens[0]]);
            let r = model.decode_pair(&blocks[0], &mut oa, &blocks[0][..3], &mut ob);
            assert!(r[0].is_ok() && r[1].is_err());
        }
    }

    #[test]
    fn decode_at_agrees_with_decode_block() {
        let mut rng = Rng(5);
        for (lim, bs) in [(24i8, 2048), (3, 4096), (127, 1000)] {
            let values = skewed(&mut rng, lim, 2 * bs + 77);
            let model = Model::fit(&values, lim, bs);
            for (b, data) in values.chunks(bs).zip(encode_all(&model, &values, bs)) {
                let mut out = vec![0i8; b.len()];
                model.decode_block(&data, &mut out).unwrap();
                for (k, &v) in out.iter().enumerate() {
                    assert_eq!(model.decode_at(&data, k).unwrap(), v);
                }
            }
        }
    }

    #[test]
    fn models_are_deterministic_and_send() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Model>();
        let mut rng = Rng(99);
        let values = skewed(&mut rng, 30, 3 << 20);
        let a = Model::fit(&values, 30, 4096).to_bytes();
        let b = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(|| Model::fit(&values, 30, 4096).to_bytes());
        assert_eq!(a, b);
    }
}
