//! The codecs of level files, and the one interface the rest of the database has to them.
//!
//! One file each: `grid` (two-dimensional contexts and rANS, the default), `rans` (order-1
//! contexts and rANS), `zstd` (blocks compressed with zstd), `stored` (one byte per position,
//! probed in place) and `search` (four bits per position, probed in place); `rans_coder`: the
//! rANS primitives `grid` and `rans` share. The file layout they share (header, histogram,
//! model area, block table, checksums) is `super::format`, which knows the codecs only by name
//! ([`Codec`]).
//!
//! This interface, by job:
//! - the header: [`decode_header`] reads and checks a level file's header, each codec's rules
//!   included; a [`LevelEncoder`] says what a level is written with (codec, block size, codec
//!   level byte, model);
//! - writing: [`LevelEncoder::encode_run`] encodes runs of whole blocks, for the writer to lay
//!   out;
//! - reading: [`decode_model`], [`decode_block`] and [`decode_pair`] (blocks whole, checked),
//!   [`probe_value`] (one value of a rans or grid level, decoding only up to it),
//!   [`check_in_place`] and [`value_in_place`] (stored and search levels, probed in the file),
//!   [`Scatter`] (decoded blocks to their places in index order).

mod grid;
mod rans;
mod rans_coder;
// `lower` keeps lower levels in the blocks of the search codec.
pub(crate) mod search;
mod stored;
mod zstd;

use super::codec::Codec;
use super::error::DbError;
use super::format::{
    check_values, checked_block, entry_block, lim, model_bytes, out_of_range, Header, MAX_MODEL_LEN,
};
use rayon::prelude::*;
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicI8, Ordering::Relaxed};
use xxhash_rust::xxh3::xxh3_64;

impl Codec {
    /// Whether a level in this codec has a model (between its histogram and its table).
    pub(crate) fn has_model(self) -> bool {
        matches!(self, Codec::Rans | Codec::Grid)
    }

    /// Whether probes read a level in this codec straight from the file (see
    /// [`value_in_place`]), with nothing to load or decode.
    pub(crate) fn probed_in_place(self) -> bool {
        matches!(self, Codec::Stored | Codec::Search)
    }
}

/// The corrupt-file error of `path`.
fn corrupt(path: &Path, what: String) -> DbError {
    DbError::Corrupt {
        path: path.to_path_buf(),
        what,
    }
}

/// Reads and checks the header of a level file: what every codec agrees on
/// ([`Header::decode`]), the codec's own parameters, the layout of the file
/// ([`Header::check_layout`]), and the length of the codec's data.
pub(crate) fn decode_header(path: &Path, bytes: &[u8]) -> Result<Header, DbError> {
    let h = Header::decode(path, bytes)?;
    check_params(path, &h)?;
    h.check_layout(path, bytes)?;
    check_data(path, &h)?;
    Ok(h)
}

/// The codec's rules for the fields of a header: codec level, block size, model.
fn check_params(path: &Path, h: &Header) -> Result<(), DbError> {
    let codec = h.codec();
    if codec == Codec::Stored && h.codec_level != 0 {
        return Err(corrupt(
            path,
            format!(
                "codec level {} for stored blocks (must be 0)",
                h.codec_level
            ),
        ));
    }
    let grid_block = grid::block_size(h.version);
    if codec == Codec::Grid && h.block_size as usize != grid_block {
        return Err(corrupt(
            path,
            format!(
                "grid blocks of {} values (must be {grid_block} in format version {})",
                h.block_size, h.version
            ),
        ));
    }
    let model_ok = if codec.has_model() {
        (1..=MAX_MODEL_LEN).contains(&h.model_len)
    } else {
        h.model_len == 0 && h.model_checksum == 0
    };
    if !model_ok {
        return Err(corrupt(
            path,
            format!("model of {} bytes for codec {}", h.model_len, h.codec),
        ));
    }
    if codec == Codec::Search {
        if h.version < 3 {
            return Err(corrupt(
                path,
                format!(
                    "search level in format version {} (it came with version 3)",
                    h.version
                ),
            ));
        }
        if h.block_size != search::BLOCK || !(1..=2).contains(&h.codec_level) {
            return Err(corrupt(
                path,
                format!(
                    "search level with blocks of {} and step {} (must be {} and 1 or 2)",
                    h.block_size,
                    h.codec_level,
                    search::BLOCK
                ),
            ));
        }
    }
    Ok(())
}

/// The codec's rules for the length of the data area (after [`Header::check_layout`]): the
/// stored and search codecs fix it.
fn check_data(path: &Path, h: &Header) -> Result<(), DbError> {
    let data_len = h.file_len - h.data_offset;
    match h.codec() {
        Codec::Search => {
            let rest = data_len.checked_sub(search::block_bytes(h.positions));
            if rest.is_none_or(|r| r % search::EXCEPTION_LEN as u64 != 0) {
                return Err(corrupt(
                    path,
                    format!(
                        "search data is {data_len} bytes: not the blocks of {} positions and \
                         whole exceptions",
                        h.positions
                    ),
                ));
            }
        }
        // Stored blocks hold one byte per position, back to back: the layout fixes the length.
        Codec::Stored if data_len != h.positions => {
            return Err(corrupt(
                path,
                format!(
                    "stored data is {data_len} bytes, expected one per position ({})",
                    h.positions
                ),
            ));
        }
        _ => {}
    }
    Ok(())
}

/// Prepares the values of one level for writing in a codec: the codec's choices for the header
/// (block size, codec level byte), its model, and its blocks, encoded a run at a time.
pub(crate) struct LevelEncoder<'a> {
    values: &'a [i8],
    level: u32,
    block_size: u32,
    codec_level: u8,
    kind: Kind,
}

/// What a [`LevelEncoder`] encodes with.
enum Kind {
    Stored,
    Zstd,
    Rans(rans::Model),
    Grid(grid::GridModel, grid::Rows),
    /// The step is the codec level.
    Search,
}

/// Where a run of blocks starts in its level: the bytes of the blocks before it, and (search)
/// their exceptions.
#[derive(Default)]
pub(crate) struct RunStart {
    data: u64,
    exceptions: u64,
}

impl RunStart {
    /// Bytes of the blocks encoded so far (without the trailer).
    pub(crate) fn data_len(&self) -> u64 {
        self.data
    }
}

/// A run of blocks, encoded.
pub(crate) struct Run {
    /// Each block's bytes, in order, back to back in the data area.
    pub(crate) blocks: Vec<Vec<u8>>,
    /// The table entry of each block: the end of its bytes counted from the start of the data
    /// area, or for search blocks the index of its first exception; then its checksum (see
    /// `format::encode_prefix`).
    pub(crate) entries: Vec<(u64, u64)>,
    /// What the level's data holds after all its blocks, in order of runs (search: the run's
    /// exceptions; empty for other codecs).
    pub(crate) trailer: Vec<u8>,
}

impl<'a> LevelEncoder<'a> {
    /// Prepares level `level` (boards of `houses` houses a side) of `values` (in index order)
    /// for `codec`: fits the model (rans, grid; in parallel) or chooses the step (search). A
    /// level that the grid codec cannot take (above 30 seeds, or values it cannot hold, which
    /// a build never makes) is encoded in rans.
    pub(crate) fn new(houses: usize, level: u32, values: &'a [i8], codec: Codec) -> Self {
        let (block_size, codec_level, kind) = match codec {
            Codec::Stored => (stored::BLOCK, 0, Kind::Stored),
            Codec::Zstd => (zstd::BLOCK, zstd::LEVEL as u8, Kind::Zstd),
            Codec::Rans => {
                let model = rans::Model::fit(values, level.min(127) as i8, rans::BLOCK as usize);
                (rans::BLOCK, rans::SCALE_BITS as u8, Kind::Rans(model))
            }
            Codec::Grid => {
                let layout = grid::Layout::new(houses, level);
                // Each block read in file order from the level, no copy of it made.
                let rows = layout.rows();
                match grid::GridModel::fit_level(values, layout, &rows) {
                    Ok(model) => (
                        grid::BLOCK as u32,
                        grid::SCALE_BITS as u8,
                        Kind::Grid(model, rows),
                    ),
                    Err(_) => return LevelEncoder::new(houses, level, values, Codec::Rans),
                }
            }
            Codec::Search => (search::BLOCK, search::step_for(values, level), Kind::Search),
        };
        LevelEncoder {
            values,
            level,
            block_size,
            codec_level,
            kind,
        }
    }

    /// [`LevelEncoder::new`] for rans with blocks of `block_size` values and frequencies of
    /// `scale_bits` bits (12 to 14): what the codec's measurements compare.
    #[cfg(feature = "bench-internals")]
    pub(crate) fn rans_with(
        level: u32,
        values: &'a [i8],
        block_size: u32,
        scale_bits: u32,
    ) -> Self {
        let model = rans::Model::fit_with_scale(
            values,
            level.min(127) as i8,
            block_size as usize,
            scale_bits,
        );
        LevelEncoder {
            values,
            level,
            block_size,
            codec_level: scale_bits as u8,
            kind: Kind::Rans(model),
        }
    }

    /// The codec the level is written in.
    pub(crate) fn codec(&self) -> Codec {
        match self.kind {
            Kind::Stored => Codec::Stored,
            Kind::Zstd => Codec::Zstd,
            Kind::Rans(_) => Codec::Rans,
            Kind::Grid(..) => Codec::Grid,
            Kind::Search => Codec::Search,
        }
    }

    /// Positions per block.
    pub(crate) fn block_size(&self) -> u32 {
        self.block_size
    }

    /// The codec level byte of the header (zstd level, rans scale bits, search step; 0 for
    /// stored).
    pub(crate) fn codec_level(&self) -> u8 {
        self.codec_level
    }

    /// The serialised model (rans, grid; empty for other codecs).
    pub(crate) fn model(&self) -> Vec<u8> {
        match &self.kind {
            Kind::Rans(m) => m.to_bytes(),
            Kind::Grid(m, _) => m.to_bytes(),
            _ => Vec::new(),
        }
    }

    /// Encodes blocks `blocks` of the level (in parallel), which start at `at`; moves `at` past
    /// them. Runs `0..a`, `a..b`, ... give the blocks, table entries and trailer of one run
    /// `0..n`, piece by piece.
    pub(crate) fn encode_run(&self, blocks: Range<u64>, at: &mut RunStart) -> std::io::Result<Run> {
        let bs = self.block_size as usize;
        let n = self.values.len();
        let first = (blocks.start as usize * bs).min(n);
        let values = &self.values[first..(blocks.end as usize * bs).min(n)];
        let coded: Vec<Vec<u8>> = match &self.kind {
            Kind::Search => {
                let step = self.codec_level;
                let (encoded, entries) =
                    search::encode_run(values, self.level, step, at.exceptions);
                let mut trailer = Vec::new();
                let mut out = Vec::with_capacity(encoded.len());
                for b in encoded {
                    trailer.extend_from_slice(&b.exceptions);
                    at.data += b.bytes.len() as u64;
                    out.push(b.bytes);
                }
                at.exceptions += (trailer.len() / search::EXCEPTION_LEN) as u64;
                return Ok(Run {
                    blocks: out,
                    entries,
                    trailer,
                });
            }
            Kind::Stored => values.par_chunks(bs).map(stored::encode_block).collect(),
            Kind::Zstd => values
                .par_chunks(bs)
                .map(zstd::compress_block)
                .collect::<Result<_, _>>()?,
            Kind::Rans(m) => values
                .par_chunks(bs)
                .map(|c| {
                    let mut out = Vec::with_capacity(c.len() / 2);
                    m.encode_block(c, &mut out);
                    out
                })
                .collect(),
            Kind::Grid(m, rows) => blocks
                .into_par_iter()
                .map_init(Vec::new, |block, i| {
                    let len = (n - i as usize * bs).min(bs);
                    block.resize(len, 0);
                    m.layout().read(rows, self.values, i * bs as u64, block);
                    let mut out = Vec::with_capacity(block.len() / 2);
                    m.encode_block(i, block, &mut out);
                    out
                })
                .collect(),
        };
        let sums: Vec<u64> = coded.par_iter().map(|b| xxh3_64(b)).collect();
        let entries = coded
            .iter()
            .zip(sums)
            .map(|(b, sum)| {
                at.data += b.len() as u64;
                (at.data, sum)
            })
            .collect();
        Ok(Run {
            blocks: coded,
            entries,
            trailer: Vec::new(),
        })
    }
}

/// The model of a level coded with one, decoded.
#[derive(Debug)]
pub(crate) enum LevelModel {
    /// A rans level's.
    Rans(rans::Model),
    /// A grid level's (with the level's layout).
    Grid(grid::GridModel),
}

impl LevelModel {
    /// Where the value of the board `cells` (mover's side first), index `index` in its level,
    /// lies in the file: its index, but for grid levels, whose order is their own.
    pub(crate) fn file_position(&self, index: u64, cells: &[u8]) -> u64 {
        match self {
            LevelModel::Grid(model) => model.layout().file_pos(cells),
            LevelModel::Rans(_) => index,
        }
    }
}

/// Reads and checks the model of a rans or grid level: its checksum, then every field.
pub(crate) fn decode_model(
    path: &Path,
    header: &Header,
    bytes: &[u8],
) -> Result<LevelModel, DbError> {
    let model = model_bytes(path, header, bytes)?;
    let parsed = match header.codec() {
        Codec::Grid => {
            grid::GridModel::from_bytes(model, header.houses as usize, header.level, header.version)
                .map(LevelModel::Grid)
        }
        _ => rans::Model::from_bytes(model, lim(header)).map(LevelModel::Rans),
    };
    parsed.map_err(|e| corrupt(path, format!("bad model: {e}")))
}

/// Checks and decodes block `i` into `out` (which gets exactly the block's length): its
/// checksum (`table`: the checked block table), its decoding and every value. `model` must be
/// the level's model for a rans or grid level (see [`decode_model`]).
pub(crate) fn decode_block(
    path: &Path,
    header: &Header,
    table: &[(u64, u64)],
    model: Option<&LevelModel>,
    bytes: &[u8],
    i: u64,
    out: &mut Vec<i8>,
) -> Result<(), DbError> {
    let not_decoded = |e: String| corrupt(path, format!("block {i} does not decode: {e}"));
    match header.codec() {
        Codec::Search => search::decode_block(path, header, bytes, i, out),
        Codec::Stored => {
            let data = stored::check_block(path, header, bytes, i, table[i as usize].1)?;
            out.clear();
            out.extend(data.iter().map(|&b| b as i8));
            Ok(())
        }
        Codec::Zstd => {
            let data = checked_block(path, header, table, bytes, i)?;
            let len = header.block_len(i);
            let mut buf = vec![0u8; len];
            let got = zstd::decompress_block(data, &mut buf)
                .map_err(|e| corrupt(path, format!("block {i} does not decompress: {e}")))?;
            if got != len {
                return Err(corrupt(
                    path,
                    format!("block {i} decompresses to {got} bytes, expected {len}"),
                ));
            }
            check_values(path, header, i, &buf, |b| b as i8)?;
            out.clear();
            out.extend(buf.iter().map(|&b| b as i8));
            Ok(())
        }
        Codec::Rans | Codec::Grid => {
            let data = checked_block(path, header, table, bytes, i)?;
            out.clear();
            out.resize(header.block_len(i), 0);
            match model.expect("a rans or grid level's model") {
                LevelModel::Rans(model) => model.decode_block(data, out),
                LevelModel::Grid(model) => model.decode_block(i, data, out),
            }
            .map_err(not_decoded)?;
            check_values(path, header, i, out, |v| v)
        }
    }
}

/// Whether a whole level is read faster two blocks at a time ([`decode_pair`]): rans levels,
/// whose blocks decode two at once.
pub(crate) fn decodes_pairs(model: Option<&LevelModel>) -> bool {
    matches!(model, Some(LevelModel::Rans(_)))
}

/// Checks and decodes blocks `i` and `i + 1` (which must exist) of a level that
/// [`decodes_pairs`] into `out`, one after the other, decoding the two at once
/// ([`rans::Model::decode_pair`]): what [`decode_block`] of each gives, faster.
#[allow(clippy::too_many_arguments)]
pub(crate) fn decode_pair(
    path: &Path,
    header: &Header,
    table: &[(u64, u64)],
    model: Option<&LevelModel>,
    bytes: &[u8],
    i: u64,
    out: &mut Vec<i8>,
) -> Result<(), DbError> {
    let Some(LevelModel::Rans(model)) = model else {
        unreachable!("only rans levels decode blocks in pairs")
    };
    let a = checked_block(path, header, table, bytes, i)?;
    let b = checked_block(path, header, table, bytes, i + 1)?;
    let la = header.block_len(i);
    out.clear();
    out.resize(la + header.block_len(i + 1), 0);
    let (oa, ob) = out.split_at_mut(la);
    let [ra, rb] = model.decode_pair(a, oa, b, ob);
    ra.map_err(|e| corrupt(path, format!("block {i} does not decode: {e}")))?;
    rb.map_err(|e| corrupt(path, format!("block {} does not decode: {e}", i + 1)))?;
    Ok(())
}

/// Value `k` of rans or grid block `i`, decoding the block (grid: the sub-block) only up to it
/// (the block's checksum checked, against its own table entry, unless `verified`: see
/// [`entry_block`]).
pub(crate) fn probe_value(
    path: &Path,
    header: &Header,
    model: &LevelModel,
    bytes: &[u8],
    i: u64,
    k: usize,
    verified: bool,
) -> Result<i8, DbError> {
    let data = entry_block(path, header, bytes, i, verified)?;
    let v = match model {
        LevelModel::Rans(model) => model.decode_at(data, k),
        LevelModel::Grid(model) => model.decode_at(i, data, header.block_len(i), k),
    }
    .map_err(|e| corrupt(path, format!("block {i} does not decode: {e}")))?;
    if !(-lim(header)..=lim(header)).contains(&v) {
        return Err(out_of_range(path, header, i, v));
    }
    Ok(v)
}

/// The positions a [`probe_value`] decodes at most, from the start of their part of the file:
/// a block, or for grid levels a sub-block, each decoded on its own.
pub(crate) fn probe_part(header: &Header) -> u64 {
    match header.codec() {
        Codec::Grid => grid::SUB as u64,
        _ => header.block_size as u64,
    }
}

/// Checks block `block` of a stored or search level in place (its table entry, checksum and
/// contents; not the whole table): after this, [`value_in_place`] may read its values.
pub(crate) fn check_in_place(
    path: &Path,
    header: &Header,
    bytes: &[u8],
    block: u64,
) -> Result<(), DbError> {
    match header.codec() {
        Codec::Stored => {
            let sum = stored::entry_sum(path, header, bytes, block)?;
            stored::check_block(path, header, bytes, block, sum).map(drop)
        }
        Codec::Search => search::check_block(path, header, bytes, block),
        codec => unreachable!("{codec} levels are not probed in place"),
    }
}

/// The value of position `index` of a level in `codec` (stored or search: the header's),
/// read from the file, its block checked by [`check_in_place`].
#[inline]
pub(crate) fn value_in_place(codec: Codec, header: &Header, bytes: &[u8], index: u64) -> i8 {
    match codec {
        // The checked header makes the stored blocks exactly as long as their values, so value
        // `index` lies at `data offset + index`.
        Codec::Stored => bytes[(header.data_offset + index) as usize] as i8,
        _ => search::value(header, bytes, index),
    }
}

/// Where in the file a [`value_in_place`] of position `index` reads: its byte, and (search)
/// its sub-block's base; for prefetching.
pub(crate) fn places_in_place(codec: Codec, header: &Header, index: u64) -> (usize, Option<usize>) {
    match codec {
        Codec::Stored => ((header.data_offset + index) as usize, None),
        _ => {
            let (nibble, base) = search::places(header, index);
            (nibble, Some(base))
        }
    }
}

/// Stores decoded blocks of a level at their places in the level in index order: grid blocks,
/// whose order is their own, row part by row part (see [`grid::Layout::write`]); no copy of
/// the level made.
pub(crate) struct Scatter<'a> {
    grid: Option<(&'a grid::Layout, grid::Rows)>,
}

impl<'a> Scatter<'a> {
    /// For the blocks of a level with the model `model` (if any).
    pub(crate) fn new(model: Option<&'a LevelModel>) -> Self {
        Scatter {
            grid: match model {
                Some(LevelModel::Grid(m)) => Some((m.layout(), m.layout().rows())),
                _ => None,
            },
        }
    }

    /// Stores `vals`, the values of file places `first..`, at their indices in `out`.
    pub(crate) fn store(&self, first: u64, vals: &[i8], out: &[AtomicI8]) {
        match &self.grid {
            Some((layout, rows)) => layout.write(rows, first, vals, out),
            None => {
                let first = first as usize;
                for (d, &v) in out[first..first + vals.len()].iter().zip(vals) {
                    d.store(v, Relaxed);
                }
            }
        }
    }
}
