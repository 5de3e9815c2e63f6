//! The rANS primitives that the `rans` and `grid` codecs share: the coder's state and its
//! renormalisation, and frequency tables (normalised from counts, read back from a model).
//!
//! A state `x` is 32 bits, kept in `[RANS_L, 2^32)` by renormalising 16 bits at a time; a
//! symbol of frequency `f` and cumulative frequency `cum` (frequencies summing to `1 << S`) is
//! encoded as `x' = ((x / f) << S) + x % f + cum`, after the encoder has pushed out the low word
//! of `x` where `x'` would overflow. Encoding runs from the last value back, so that decoding
//! runs forward: the decoder reads the symbol from the slot `x % (1 << S)`, steps the state
//! back with [`decode_step`] and refills it from the words with [`renormalize`]. The encoder
//! starts every state at [`RANS_L`], where a decoder that has read every word must find it
//! again.

/// The lower bound of a normalised state, and the initial (and final) state of each stream.
pub(crate) const RANS_L: u32 = 1 << 16;

/// Encodes a symbol of frequency `f` (non-zero) and cumulative frequency `cum`, frequencies
/// summing to `1 << S`, into state `x`, first pushing its low word onto `words` where the state
/// would otherwise overflow.
#[inline(always)]
pub(crate) fn encode_step<const S: u32>(x: &mut u32, f: u32, cum: u32, words: &mut Vec<u16>) {
    if *x as u64 >= (f as u64) << (32 - S) {
        words.push(*x as u16);
        *x >>= 16;
    }
    *x = ((*x / f) << S) + *x % f + cum;
}

/// The slot of state `x`, frequencies summing to `1 << S`: the symbol is the one whose range
/// of cumulative frequencies holds it.
#[inline(always)]
pub(crate) fn slot<const S: u32>(x: u32) -> u32 {
    x & ((1 << S) - 1)
}

/// The state before the symbol of frequency `f` and cumulative frequency `cum` (the one
/// [`slot`] of `x` falls in) was encoded, not yet renormalised ([`renormalize`]). Wrapping
/// arithmetic: damaged data gives garbage (caught by the caller's checks), never a panic.
#[inline(always)]
pub(crate) fn decode_step<const S: u32>(x: u32, f: u32, cum: u32) -> u32 {
    f.wrapping_mul(x >> S)
        .wrapping_add(slot::<S>(x))
        .wrapping_sub(cum)
}

/// Renormalises state `x` after [`decode_step`]: below [`RANS_L`], it takes in the word `w`
/// (see [`word_at`]). Returns the state and the bytes of words used (0 or 2). Branch-free: the
/// refills follow the data, which no predictor can guess.
#[inline(always)]
pub(crate) fn renormalize(x: u32, w: u32) -> (u32, usize) {
    let refill = (x < RANS_L) as u32;
    (
        (x << (16 * refill)) | (w & refill.wrapping_neg()),
        2 * refill as usize,
    )
}

/// Frequencies summing to `1 << scale_bits` for the symbols of `counts` that occur (each
/// gets at least 1), close to proportional (the greedy fix-up after rounding uses the
/// marginal cost `count / (freq ± 1/2)`, in integers, so the result is the same everywhere).
pub(crate) fn normalize(counts: &[u64; 256], scale_bits: u32) -> Vec<(u8, u16)> {
    let m = 1u64 << scale_bits;
    let syms: Vec<(u8, u64)> = counts
        .iter()
        .enumerate()
        .filter(|&(_, &c)| c > 0)
        .map(|(s, &c)| (s as u8, c))
        .collect();
    if syms.is_empty() {
        return Vec::new();
    }
    assert!(syms.len() as u64 <= m, "more symbols than slots");
    let total: u128 = syms.iter().map(|&(_, c)| c as u128).sum();
    let mut f: Vec<u64> = syms
        .iter()
        .map(|&(_, c)| ((c as u128 * m as u128 + total / 2) / total).max(1) as u64)
        .collect();
    let mut sum: u64 = f.iter().sum();
    // c_i / (2 f_i + d) > c_j / (2 f_j + d), exactly.
    let better = |i: usize, j: usize, f: &[u64], d: i64| {
        let (ci, cj) = (syms[i].1 as u128, syms[j].1 as u128);
        let (di, dj) = ((2 * f[i] as i64 + d) as u128, (2 * f[j] as i64 + d) as u128);
        ci * dj > cj * di
    };
    while sum < m {
        // The symbol that gains most from one more slot.
        let mut best = 0;
        for i in 1..f.len() {
            if better(i, best, &f, 1) {
                best = i;
            }
        }
        f[best] += 1;
        sum += 1;
    }
    while sum > m {
        // The symbol that loses least from one slot fewer (keeping at least one).
        let mut best = usize::MAX;
        for i in 0..f.len() {
            if f[i] > 1 && (best == usize::MAX || better(best, i, &f, -1)) {
                best = i;
            }
        }
        f[best] -= 1;
        sum -= 1;
    }
    syms.iter()
        .zip(&f)
        .map(|(&(s, _), &f)| (s, f as u16))
        .collect()
}

/// Reads the little-endian `u16` at `at`, or 0 past the end.
#[inline(always)]
pub(crate) fn word_at(data: &[u8], at: usize) -> u32 {
    match data.get(at..at + 2) {
        Some(b) => u16::from_le_bytes([b[0], b[1]]) as u32,
        None => 0,
    }
}

/// Reads a serialised model (of the rans or the grid codec), every field checked.
pub(crate) struct ModelReader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> ModelReader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> ModelReader<'a> {
        ModelReader { bytes, at: 0 }
    }

    /// The next `n` bytes (`what` names them in the error).
    pub(crate) fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        let at = self.at;
        let b = self
            .bytes
            .get(at..at + n)
            .ok_or_else(|| format!("model truncated at byte {at} ({what})"))?;
        self.at += n;
        Ok(b)
    }

    /// A LEB128 varint of at most 4 bytes, written no longer than needed (`what` names it in
    /// the error).
    pub(crate) fn varint(&mut self, what: &str) -> Result<u32, String> {
        let at = self.at;
        let mut x = 0u32;
        for i in 0..4 {
            let b = self.take(1, what)?[0];
            x |= ((b & 0x7f) as u32) << (7 * i);
            if b & 0x80 == 0 {
                if i > 0 && b == 0 {
                    return Err(format!(
                        "model byte {at}: {what} written longer than needed"
                    ));
                }
                return Ok(x);
            }
        }
        Err(format!("model byte {at}: {what} runs past 4 bytes"))
    }

    /// The frequency table of context `ctx`: `n` (symbol u8, frequency u16) pairs, symbols
    /// increasing and at most `top`, frequencies at least 1 and summing to `scale`.
    pub(crate) fn symbols(
        &mut self,
        ctx: u32,
        n: u32,
        top: u32,
        scale: u32,
    ) -> Result<Vec<(u8, u16)>, String> {
        let mut syms = Vec::with_capacity(n as usize);
        let mut sum = 0u32;
        let mut prev = None;
        for _ in 0..n {
            let b = self.take(3, "symbol")?;
            let (s, f) = (b[0] as u32, u16::from_le_bytes([b[1], b[2]]) as u32);
            if s > top || prev.is_some_and(|p| s <= p) {
                return Err(format!(
                    "model context {ctx}: symbol {s} out of range or out of order"
                ));
            }
            prev = Some(s);
            if f == 0 {
                return Err(format!("model context {ctx}: symbol {s} has frequency 0"));
            }
            sum += f;
            syms.push((s as u8, f as u16));
        }
        if sum != scale {
            return Err(format!(
                "model context {ctx}: frequencies sum to {sum}, not {scale}"
            ));
        }
        Ok(syms)
    }

    /// An error if bytes are left over.
    pub(crate) fn finish(&self) -> Result<(), String> {
        match self.bytes.len() - self.at {
            0 => Ok(()),
            left => Err(format!("{left} trailing bytes after the model")),
        }
    }
}
