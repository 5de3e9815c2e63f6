//! Fitting the grid model of a level: its values counted by context (on every sub-block, or on a
//! sample of a large level's), the tables that do not pay for themselves pruned into their
//! parents', each table normalised and quantised as the file holds it.

use super::contexts::{context_buffer, contexts, depth, parent, Terms, FLAGS, PAD};
use super::layout::{Layout, Rows};
use super::serial::{bitmap_len, quantize};
use super::{to_symbols, GridModel, MAX_LEVEL, NONE, SCALE_BITS, SUB, SYMS};
use crate::db::codecs::rans_coder::normalize;

/// Levels of at least this many values (6 houses: level 25 and up) are counted on a sample of
/// their sub-blocks. Counting all of level 24 instead of one sub-block in four makes it 0.02%
/// of a byte per value smaller (level 23: 0.03%), for about a second more of fitting.
pub(super) const SAMPLE_FROM: usize = 1 << 29;
/// One sub-block in this many is counted in a sampled level.
pub(super) const SAMPLE: u64 = 4;

/// A context keeps its table only if that saves this many times the table's bytes.
const PRUNE: f64 = 1.0;

/// About the bytes of the table of a context counted `row` in a serialised model
/// ([`GridModel::to_bytes`]): its context (a distance, about 2 bytes), its bitmap, and a
/// frequency code per symbol seen and for the escape.
fn table_bytes(row: &[u64; SYMS], bitmap: usize) -> usize {
    2 + bitmap + 1 + row.iter().filter(|&&c| c > 0).count()
}

/// Gives up the tables of the contexts that cost more in the model than they save in the
/// data (`factor` times what they cost): their counts move to their parent's (see
/// [`parent`]). A table costs what [`table_bytes`] says; coding a context's `c` values with its
/// parent's frequencies costs `c` times the Kullback-Leibler divergence more bits. Children
/// are weighed against their parent with all its children's counts; the children first, then
/// the parents. The counts stand for `weight` times as many values (a sample).
pub(super) fn prune(
    counts: &mut std::collections::BTreeMap<usize, [u64; SYMS]>,
    kk: usize,
    weight: f64,
    bitmap: usize,
    flags: usize,
    factor: f64,
) {
    for round in (1..=4).rev() {
        // The deepest contexts first.
        let children: Vec<usize> = counts
            .keys()
            .copied()
            .filter(|&c| depth(c, kk, flags) == round)
            .collect();
        let mut family: std::collections::HashMap<usize, [u64; SYMS]> = Default::default();
        for (&ctx, row) in counts.iter() {
            let p = if depth(ctx, kk, flags) == round {
                parent(ctx, kk, flags)
            } else {
                ctx
            };
            let f = family.entry(p).or_insert([0; SYMS]);
            for (f, &c) in f.iter_mut().zip(row) {
                *f += c;
            }
        }
        for ctx in children {
            let row = counts[&ctx];
            let c: u64 = row.iter().sum();
            let fam = &family[&parent(ctx, kk, flags)];
            let total: u64 = fam.iter().sum();
            let mut bits = 0f64;
            for (&x, &y) in row.iter().zip(fam) {
                if x > 0 {
                    bits += x as f64 * ((x as f64 / c as f64) / (y as f64 / total as f64)).log2();
                }
            }
            if weight * bits / 8.0 < factor * table_bytes(&row, bitmap) as f64 {
                counts.remove(&ctx);
                let p = counts.entry(parent(ctx, kk, flags)).or_insert([0; SYMS]);
                for (p, &x) in p.iter_mut().zip(&row) {
                    *p += x;
                }
            }
        }
    }
}

impl GridModel {
    /// Counts the values of a level in file order (see [`Layout::gather`]), cut in sub-blocks
    /// of [`SUB`], and normalises. Errors (the caller then uses another codec) if the level is
    /// above [`MAX_LEVEL`], a value is out of range or has the wrong parity, or the contexts
    /// are too many.
    #[cfg(test)]
    pub(crate) fn fit(values: &[i8], layout: Layout) -> Result<GridModel, String> {
        let step = if values.len() >= SAMPLE_FROM {
            SAMPLE
        } else {
            1
        };
        GridModel::fit_sampled(values, layout, step)
    }

    /// `GridModel::fit` of the values of a level given in index order (each sub-block read
    /// in file order when counted, no copy of the level made).
    pub(crate) fn fit_level(
        values: &[i8],
        layout: Layout,
        rows: &Rows,
    ) -> Result<GridModel, String> {
        // Large levels are counted on one sub-block in SAMPLE (what the others hold that the
        // sample misses is escaped).
        let step = if values.len() >= SAMPLE_FROM {
            SAMPLE
        } else {
            1
        };
        if values.len() as u64 != layout.len() {
            return Err("wrong number of values".into());
        }
        let read = |first: u64, out: &mut [i8]| layout.read(rows, values, first, out);
        GridModel::fit_with(values.len(), layout.clone(), step, FLAGS, read)
    }

    /// [`GridModel::fit`] counting one sub-block in `step`.
    #[cfg(test)]
    pub(super) fn fit_sampled(
        values: &[i8],
        layout: Layout,
        step: u64,
    ) -> Result<GridModel, String> {
        let read = |first: u64, out: &mut [i8]| {
            out.copy_from_slice(&values[first as usize..first as usize + out.len()])
        };
        GridModel::fit_with(values.len(), layout, step, FLAGS, read)
    }

    /// [`GridModel::fit`] as format versions 1 and 2 would have it: contexts without the
    /// carry flag, blocks of [`BLOCK_V2`].
    #[cfg(test)]
    pub(super) fn fit_v2(values: &[i8], layout: Layout) -> GridModel {
        let read = |first: u64, out: &mut [i8]| {
            out.copy_from_slice(&values[first as usize..first as usize + out.len()])
        };
        GridModel::fit_with(values.len(), layout, 1, 1, read)
            .expect("a level the codec takes")
            .for_version(2)
    }

    /// Fits the model of a level of `len` values, which `read(first, out)` gives in file order
    /// (`out.len()` of them from place `first`), counting one sub-block in `step`, with
    /// `flags` variants of each context (see [`FLAGS`]).
    fn fit_with(
        len: usize,
        layout: Layout,
        step: u64,
        flags: usize,
        read: impl Fn(u64, &mut [i8]) + Sync,
    ) -> Result<GridModel, String> {
        use rayon::prelude::*;
        let block_size = SUB;
        let s = layout.s;
        if s > MAX_LEVEL {
            return Err(format!("level {s} above {MAX_LEVEL}"));
        }
        if len as u64 != layout.len() {
            return Err("wrong number of values".into());
        }
        let k = s as usize + 2;
        let keys = contexts(k, flags);
        let terms = Terms::new(s, flags);
        // One table of counts per thread, over a contiguous part of the level (whole
        // sub-blocks), added up at the end.
        let parts = rayon::current_num_threads().max(1);
        let subs = len.div_ceil(block_size);
        let per = subs.div_ceil(parts).max(1);
        let counts = (0..subs.div_ceil(per))
            .into_par_iter()
            .map(|part| {
                let mut counts = vec![[0u32; SYMS]; keys];
                let miss = s as u8 + 1;
                let mut buf = context_buffer(block_size, miss);
                let mut block = vec![0i8; block_size];
                for sub in (part * per..subs.min((part + 1) * per))
                    .filter(|&b| (b as u64).is_multiple_of(step))
                {
                    let first = (sub * block_size) as u64;
                    let block = &mut block[..block_size.min(len - sub * block_size)];
                    read(first, block);
                    to_symbols(block, s, &mut buf[PAD..])?;
                    let mut cur = layout.cursor(first);
                    let mut cols = layout.columns(&cur);
                    for p in PAD..PAD + block.len() {
                        let ctx = terms.context(&buf, p, &cur, &cols);
                        counts[ctx][buf[p] as usize] += 1;
                        layout.advance_with(&mut cur, &mut cols);
                    }
                }
                Ok::<_, String>(counts)
            })
            .try_reduce_with(|mut a, b| {
                for (x, y) in a.iter_mut().zip(&b) {
                    for (x, y) in x.iter_mut().zip(y) {
                        *x += y;
                    }
                }
                Ok(a)
            })
            .unwrap_or_else(|| Ok(vec![[0u32; SYMS]; keys]))?;
        // The contexts that occur, with their counts.
        let mut counts: std::collections::BTreeMap<usize, [u64; SYMS]> = counts
            .iter()
            .enumerate()
            .filter(|(_, row)| row.iter().any(|&c| c > 0))
            .map(|(ctx, row)| (ctx, std::array::from_fn(|x| row[x] as u64)))
            .collect();
        // The level's table: every symbol counted once more, so that any value can be coded.
        let mut global = [0u64; 256];
        for row in counts.values() {
            for (g, &c) in global.iter_mut().zip(row) {
                *g += c;
            }
        }
        for g in &mut global[..=s as usize] {
            *g += 1;
        }
        // Counts of a sample stand for `step` times as many values.
        // A table's id is a u16: where too many contexts pay for their tables (levels 29 and
        // 30 of 6 houses), the dearest give theirs up first: each further round asks twice as
        // much of a table (merging is what pruning does, so a round continues the one before).
        let mut factor = PRUNE;
        loop {
            prune(
                &mut counts,
                k * k,
                step as f64,
                bitmap_len(s),
                flags,
                factor,
            );
            if counts.len() + 1 < NONE as usize {
                break;
            }
            factor *= 2.0;
        }
        // Each table as the compact model writes it (see [`serial::quantize`](quantize)).
        let (table, codes) = quantize(&normalize(&global, SCALE_BITS));
        let mut tables = vec![(keys as u32, table)];
        let mut all_codes = vec![codes];
        for (&ctx, row) in counts.iter() {
            let mut wide = [0u64; 256];
            wide[..SYMS].copy_from_slice(row);
            // The escape: a symbol this context's count did not see.
            wide[s as usize + 1] = 1;
            let (table, codes) = quantize(&normalize(&wide, SCALE_BITS));
            tables.push((ctx as u32, table));
            all_codes.push(codes);
        }
        // The level's table, then the contexts' in increasing order (in which `counts` holds
        // them; so the serialised model writes each context as its distance from the one
        // before). Ordering them by use instead, for the decoder's cache, made no measurable
        // difference to probes.
        if tables.len() >= NONE as usize {
            return Err(format!("{} contexts, too many", tables.len()));
        }
        Ok(GridModel::from_tables(layout, tables, flags).with_codes(all_codes))
    }
}
