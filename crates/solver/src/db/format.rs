//! The on-disk layout of one level file (see `FORMAT.md` at the repository root): the header,
//! histogram, model area and block table, where each block lies and its checksum. What the
//! blocks and the model hold is the codecs' business (`codecs/`); this file knows the codecs
//! only by name ([`Codec`]). Private.
//!
//! ```text
//! offset  size  field
//!      0     8  magic "KALAHLVL"
//!      8     4  format version (3; versions 1, without a histogram, and 2, with the grid
//!                 model in a wider form, are read too)
//!     12     4  header length (128)
//!     16     1  houses per side
//!     17     1  capture code     (Capture::code)
//!     18     1  leftover code    (Leftover::code)
//!     19     1  end code         (EndRule::code)
//!     20     4  level (seeds in the houses)
//!     24     8  positions in the level
//!     32     4  block size (positions per block)
//!     36     1  codec (0 = stored, 1 = zstd, 2 = rans, 3 = grid, 4 = search)
//!     37     1  codec level (zstd level used, rans scale bits; informative; 0 for stored;
//!                 search: the step between symbols, 1 or 2)
//!     38     2  reserved, zero
//!     40     8  block count
//!     48     8  table offset (128 + histogram length + model length)
//!     56     8  data offset (table offset + 16 * block count)
//!     64     8  file length
//!     72     8  xxh3-64 of the block table
//!     80     8  model length (rans, grid: > 0; other codecs: 0)
//!     88     8  xxh3-64 of the model (0 without one)
//!     96     8  histogram length (8 * (2 * level + 1); version 1: 0)
//!    104     8  xxh3-64 of the histogram (version 1: 0)
//!    112     8  reserved, zero
//!    120     8  xxh3-64 of bytes 0..120
//! histogram: the number of positions of each value -level..=level (u64 each), checked at open
//!        (checksum, sum) and against the decoded values whenever a whole level is decoded
//! model: rans and grid only, the level's frequency tables (`codecs/rans.rs`,
//!        `codecs/grid/serial.rs`)
//! table: block count entries of 16 bytes: end offset of the block (u64, from the file start),
//!        xxh3-64 of the block's bytes as stored (u64)
//! data:  the blocks, back to back; block i holds (stored) or decodes to (zstd, rans)
//!        min(block size, positions - i * block size) bytes, one i8 value per position in index
//!        order (grid: in the grid's order, see `codecs/grid/layout.rs`).
//! search: the table entry is (first exception, checksum) instead, and the data is blocks of a
//!        fixed size (bases and nibbles), then the exception table (see `codecs/search.rs`).
//! ```
//! Little-endian throughout.

use super::codec::Codec;
use super::error::DbError;
use crate::rules::{Capture, EndRule, Leftover, Rules};
use std::path::{Path, PathBuf};
use xxhash_rust::xxh3::xxh3_64;

pub(crate) const MAGIC: &[u8; 8] = b"KALAHLVL";
/// The format version written.
pub(crate) const VERSION: u32 = 3;
/// The oldest format version read: version 1 files have no histogram (`kalah db info` then
/// decodes the level to count its values); versions 1 and 2 write the grid model wider
/// (`GridModel::to_bytes_v2`).
pub(crate) const OLDEST_VERSION: u32 = 1;
pub(crate) const HEADER_LEN: usize = 128;
pub(crate) const ENTRY_LEN: usize = 16;
/// The largest model a reader accepts (a rans model of 256 contexts of 256 symbols is under
/// 200 KB; a grid model of level 30 under 15 MB).
pub(crate) const MAX_MODEL_LEN: u64 = 1 << 24;

/// The file name of a level.
pub(crate) fn level_file_name(level: u32) -> String {
    format!("level-{level:03}.kdb")
}

/// The path of the file of level `level` in a database directory.
pub fn level_path(dir: &Path, level: u32) -> PathBuf {
    dir.join(level_file_name(level))
}

/// The header fields of a level file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub version: u32,
    pub houses: u8,
    pub capture: u8,
    pub leftover: u8,
    pub end: u8,
    pub level: u32,
    pub positions: u64,
    pub block_size: u32,
    pub codec: u8,
    pub codec_level: u8,
    pub block_count: u64,
    pub table_offset: u64,
    pub data_offset: u64,
    pub file_len: u64,
    pub table_checksum: u64,
    /// Bytes of the model (rans, grid), which lies between the histogram and the table.
    pub model_len: u64,
    pub model_checksum: u64,
    /// Bytes of the histogram (0 in version 1), which lies between the header and the model.
    pub hist_len: u64,
    pub hist_checksum: u64,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

impl Header {
    /// The header of level `level` (`positions` positions) of a database for `rules`, in
    /// `codec` with blocks of `block_size` positions and the codec level byte `codec_level`
    /// (what the codec chose: `codecs::LevelEncoder`); the lengths, offsets and checksums are
    /// set by [`encode_prefix`].
    pub(crate) fn new(
        rules: &Rules,
        level: u32,
        positions: u64,
        codec: Codec,
        block_size: u32,
        codec_level: u8,
    ) -> Header {
        let block_count = positions.div_ceil(block_size as u64);
        Header {
            version: VERSION,
            houses: rules.houses as u8,
            capture: rules.capture.code(),
            leftover: rules.leftover.code(),
            end: rules.end.code(),
            level,
            positions,
            block_size,
            codec: codec.code(),
            codec_level,
            block_count,
            table_offset: HEADER_LEN as u64,
            data_offset: HEADER_LEN as u64 + ENTRY_LEN as u64 * block_count,
            file_len: 0,
            table_checksum: 0,
            model_len: 0,
            model_checksum: 0,
            hist_len: 0,
            hist_checksum: 0,
        }
    }

    pub(crate) fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..8].copy_from_slice(MAGIC);
        b[8..12].copy_from_slice(&self.version.to_le_bytes());
        b[12..16].copy_from_slice(&(HEADER_LEN as u32).to_le_bytes());
        b[16] = self.houses;
        b[17] = self.capture;
        b[18] = self.leftover;
        b[19] = self.end;
        b[20..24].copy_from_slice(&self.level.to_le_bytes());
        b[24..32].copy_from_slice(&self.positions.to_le_bytes());
        b[32..36].copy_from_slice(&self.block_size.to_le_bytes());
        b[36] = self.codec;
        b[37] = self.codec_level;
        b[40..48].copy_from_slice(&self.block_count.to_le_bytes());
        b[48..56].copy_from_slice(&self.table_offset.to_le_bytes());
        b[56..64].copy_from_slice(&self.data_offset.to_le_bytes());
        b[64..72].copy_from_slice(&self.file_len.to_le_bytes());
        b[72..80].copy_from_slice(&self.table_checksum.to_le_bytes());
        b[80..88].copy_from_slice(&self.model_len.to_le_bytes());
        b[88..96].copy_from_slice(&self.model_checksum.to_le_bytes());
        b[96..104].copy_from_slice(&self.hist_len.to_le_bytes());
        b[104..112].copy_from_slice(&self.hist_checksum.to_le_bytes());
        let sum = xxh3_64(&b[..120]);
        b[120..128].copy_from_slice(&sum.to_le_bytes());
        b
    }

    /// Reads and checks a header as far as every codec agrees: magic, version, checksum, a known
    /// codec, the block size and count. The codec's own rules (`codecs::decode_header`) and
    /// [`Header::check_layout`] come next; whether it matches the expected rules and level is
    /// checked by [`Header::expect`].
    pub(crate) fn decode(path: &Path, bytes: &[u8]) -> Result<Header, DbError> {
        let corrupt = |what: String| DbError::Corrupt {
            path: path.to_path_buf(),
            what,
        };
        if bytes.len() < HEADER_LEN {
            return Err(corrupt(format!(
                "file is {} bytes, shorter than the {HEADER_LEN}-byte header",
                bytes.len()
            )));
        }
        if &bytes[0..8] != MAGIC {
            return Err(DbError::NotALevelFile {
                path: path.to_path_buf(),
            });
        }
        let version = u32_at(bytes, 8);
        let stored = u64_at(bytes, 120);
        let actual = xxh3_64(&bytes[..120]);
        if stored != actual {
            return Err(corrupt(format!(
                "header checksum mismatch (stored {stored:016x}, computed {actual:016x})"
            )));
        }
        if !(OLDEST_VERSION..=VERSION).contains(&version) {
            return Err(DbError::Version {
                path: path.to_path_buf(),
                found: version,
                supported: VERSION,
            });
        }
        if u32_at(bytes, 12) as usize != HEADER_LEN {
            return Err(corrupt("bad header length".into()));
        }
        let reserved = if version == 1 { 96 } else { 112 };
        if bytes[38..40]
            .iter()
            .chain(&bytes[reserved..120])
            .any(|&x| x != 0)
        {
            return Err(corrupt("reserved header bytes are not zero".into()));
        }
        let h = Header {
            version,
            houses: bytes[16],
            capture: bytes[17],
            leftover: bytes[18],
            end: bytes[19],
            level: u32_at(bytes, 20),
            positions: u64_at(bytes, 24),
            block_size: u32_at(bytes, 32),
            codec: bytes[36],
            codec_level: bytes[37],
            block_count: u64_at(bytes, 40),
            table_offset: u64_at(bytes, 48),
            data_offset: u64_at(bytes, 56),
            file_len: u64_at(bytes, 64),
            table_checksum: u64_at(bytes, 72),
            model_len: u64_at(bytes, 80),
            model_checksum: u64_at(bytes, 88),
            hist_len: u64_at(bytes, 96),
            hist_checksum: u64_at(bytes, 104),
        };
        if Codec::from_code(h.codec).is_none() {
            return Err(corrupt(format!("unknown codec {}", h.codec)));
        }
        if h.block_size == 0 || h.block_size > 1 << 24 {
            return Err(corrupt(format!("bad block size {}", h.block_size)));
        }
        if h.block_count != h.positions.div_ceil(h.block_size as u64) {
            return Err(corrupt("block count does not match positions".into()));
        }
        Ok(h)
    }

    /// Checks that the parts of the file hang together: the lengths of the histogram and the
    /// model, the table and data offsets, the file's length; the histogram's checksum and
    /// total.
    pub(crate) fn check_layout(&self, path: &Path, bytes: &[u8]) -> Result<(), DbError> {
        let corrupt = |what: String| DbError::Corrupt {
            path: path.to_path_buf(),
            what,
        };
        let h = self;
        if h.model_len > MAX_MODEL_LEN || (h.model_len == 0 && h.model_checksum != 0) {
            return Err(corrupt(format!(
                "model of {} bytes for codec {}",
                h.model_len, h.codec
            )));
        }
        if h.version >= 2 && (h.level > 127 || h.hist_len != hist_entries(h.level) as u64 * 8) {
            return Err(corrupt(format!(
                "histogram of {} bytes for level {}",
                h.hist_len, h.level
            )));
        }
        if h.table_offset != h.model_offset() + h.model_len
            || Some(h.data_offset)
                != h.block_count
                    .checked_mul(ENTRY_LEN as u64)
                    .and_then(|t| t.checked_add(h.table_offset))
        {
            return Err(corrupt("bad table or data offset".into()));
        }
        if h.file_len != bytes.len() as u64 {
            return Err(corrupt(format!(
                "file is {} bytes, header says {} (truncated or extended)",
                bytes.len(),
                h.file_len
            )));
        }
        if h.data_offset > h.file_len {
            return Err(corrupt("block table runs past the end of the file".into()));
        }
        if h.hist_len > 0 {
            let hist = &bytes[HEADER_LEN..h.model_offset() as usize];
            let actual = xxh3_64(hist);
            if actual != h.hist_checksum {
                return Err(corrupt(format!(
                    "histogram checksum mismatch (stored {:016x}, computed {actual:016x})",
                    h.hist_checksum
                )));
            }
            let total = hist
                .chunks_exact(8)
                .try_fold(0u64, |t, c| t.checked_add(u64_at(c, 0)));
            if total != Some(h.positions) {
                return Err(corrupt(format!(
                    "histogram counts {total:?} positions, the level has {}",
                    h.positions
                )));
            }
        }
        Ok(())
    }

    /// Where the model starts: after the header and the histogram.
    pub(crate) fn model_offset(&self) -> u64 {
        HEADER_LEN as u64 + self.hist_len
    }

    /// The stored histogram (entry `v + level` counts value `v`), checked by
    /// [`Header::decode`]; `None` in a version 1 file.
    pub(crate) fn histogram(&self, bytes: &[u8]) -> Option<Vec<u64>> {
        (self.hist_len > 0).then(|| {
            bytes[HEADER_LEN..self.model_offset() as usize]
                .chunks_exact(8)
                .map(|c| u64_at(c, 0))
                .collect()
        })
    }

    /// The rules stored in the header, if the codes are valid.
    pub(crate) fn rules(&self) -> Option<Rules> {
        Some(Rules {
            houses: self.houses as usize,
            seeds: 0,
            capture: Capture::from_code(self.capture)?,
            leftover: Leftover::from_code(self.leftover)?,
            end: EndRule::from_code(self.end)?,
        })
    }

    /// Checks that the file is the level `level` of a database for `rules` with
    /// `positions` positions.
    pub(crate) fn expect(
        &self,
        path: &Path,
        rules: &Rules,
        level: u32,
        positions: u64,
    ) -> Result<(), DbError> {
        let want = rules.play_rules();
        match self.rules() {
            Some(found) if found == want => {}
            found => {
                return Err(DbError::WrongRules {
                    path: path.to_path_buf(),
                    expected: want.slug(),
                    found: found.map(|r| r.slug()).unwrap_or_else(|| {
                        format!(
                            "unknown codes {}/{}/{}/{}",
                            self.houses, self.capture, self.leftover, self.end
                        )
                    }),
                })
            }
        }
        if self.level != level {
            return Err(DbError::Corrupt {
                path: path.to_path_buf(),
                what: format!("holds level {}, expected level {level}", self.level),
            });
        }
        if self.positions != positions {
            return Err(DbError::Corrupt {
                path: path.to_path_buf(),
                what: format!(
                    "holds {} positions, level {level} has {positions}",
                    self.positions
                ),
            });
        }
        Ok(())
    }

    /// The codec of the blocks (checked by [`Header::decode`]).
    pub(crate) fn codec(&self) -> Codec {
        Codec::from_code(self.codec).expect("codec checked at decode")
    }

    /// Positions in block `i`.
    pub(crate) fn block_len(&self, i: u64) -> usize {
        let start = i * self.block_size as u64;
        (self.positions - start).min(self.block_size as u64) as usize
    }
}

/// Reads and checks the block table: its checksum, and that the blocks tile the data area.
/// Returns `(end offset, checksum)` per block.
pub(crate) fn decode_table(
    path: &Path,
    header: &Header,
    bytes: &[u8],
) -> Result<Vec<(u64, u64)>, DbError> {
    let corrupt = |what: String| DbError::Corrupt {
        path: path.to_path_buf(),
        what,
    };
    let table = &bytes[header.table_offset as usize..header.data_offset as usize];
    let actual = xxh3_64(table);
    if actual != header.table_checksum {
        return Err(corrupt(format!(
            "block table checksum mismatch (stored {:016x}, computed {actual:016x})",
            header.table_checksum
        )));
    }
    if header.codec() == Codec::Search {
        // (first exception, checksum) per block; each entry is checked with its block.
        return Ok(table
            .chunks_exact(ENTRY_LEN)
            .map(|e| (u64_at(e, 0), u64_at(e, 8)))
            .collect());
    }
    let stored = header.codec() == Codec::Stored;
    let mut out = Vec::with_capacity(header.block_count as usize);
    let mut prev = header.data_offset;
    for (i, e) in table.chunks_exact(ENTRY_LEN).enumerate() {
        let end = u64_at(e, 0);
        let sum = u64_at(e, 8);
        if end < prev || end > header.file_len {
            return Err(corrupt("block table offsets out of order".into()));
        }
        // Stored blocks hold one byte per position: value `k` lies at `data offset + k`.
        if stored && end - prev != header.block_len(i as u64) as u64 {
            return Err(corrupt(format!(
                "stored block {i} is {} bytes, expected {}",
                end - prev,
                header.block_len(i as u64)
            )));
        }
        prev = end;
        out.push((end, sum));
    }
    if prev != header.file_len {
        return Err(corrupt("blocks do not end at the end of the file".into()));
    }
    Ok(out)
}

/// The values as bytes (`i8` to `u8` by `as`, without `unsafe`).
pub(crate) fn to_bytes(values: &[i8]) -> Vec<u8> {
    values.iter().map(|&v| v as u8).collect()
}

/// Entries of the histogram of level `level`: values `-level..=level`.
pub(crate) fn hist_entries(level: u32) -> usize {
    2 * level as usize + 1
}

/// How many of `values` have each bit pattern (entry `v as u8` counts `v`).
pub(crate) fn count_values(values: &[i8]) -> [u64; 256] {
    let mut h = [0u64; 256];
    for &v in values {
        h[v as u8 as usize] += 1;
    }
    h
}

/// The histogram of level `level` (entry `v + level` counts value `v`) from the counts of
/// [`count_values`] (values outside `[-level, level]` are not in it).
pub(crate) fn level_histogram(counts: &[u64; 256], level: u32) -> Vec<u64> {
    let l = level.min(127) as i32;
    (-l..=l).map(|v| counts[v as i8 as u8 as usize]).collect()
}

/// The histogram of some values of level `level` (entry `v + level` counts value `v`; values
/// must lie in `[-level, level]`).
pub(crate) fn histogram(values: &[i8], level: u32) -> Vec<u64> {
    use rayon::prelude::*;
    let counts = values.par_chunks(1 << 20).map(count_values).reduce(
        || [0u64; 256],
        |mut a, b| {
            a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
            a
        },
    );
    level_histogram(&counts, level)
}

/// Encodes the header (of the current [`VERSION`]), histogram (of [`hist_entries`] counts),
/// model (rans and grid; empty otherwise) and block table of a level file with `data_len`
/// bytes of data after the table. The first word of each table entry is the end of the
/// block's data counted from the start of the data area (made an offset from the file's start
/// here), or for a search level the index of its first exception (as is); the second its
/// checksum.
pub(crate) fn encode_prefix(
    mut header: Header,
    hist: &[u64],
    model: &[u8],
    entries: &[(u64, u64)],
    data_len: u64,
) -> Vec<u8> {
    let hist: Vec<u8> = hist.iter().flat_map(|c| c.to_le_bytes()).collect();
    debug_assert!(!hist.is_empty());
    header.version = VERSION;
    header.hist_len = hist.len() as u64;
    header.hist_checksum = xxh3_64(&hist);
    header.model_len = model.len() as u64;
    header.model_checksum = if model.is_empty() { 0 } else { xxh3_64(model) };
    header.table_offset = header.model_offset() + header.model_len;
    header.data_offset = header.table_offset + ENTRY_LEN as u64 * header.block_count;
    let mut table = Vec::with_capacity(entries.len() * ENTRY_LEN);
    let shift = match header.codec() {
        Codec::Search => 0,
        _ => header.data_offset,
    };
    for &(word, sum) in entries {
        table.extend_from_slice(&(word + shift).to_le_bytes());
        table.extend_from_slice(&sum.to_le_bytes());
    }
    header.file_len = header.data_offset + data_len;
    header.table_checksum = xxh3_64(&table);
    let mut out = Vec::with_capacity(HEADER_LEN + hist.len() + model.len() + table.len());
    out.extend_from_slice(&header.encode());
    out.extend_from_slice(&hist);
    out.extend_from_slice(model);
    out.extend_from_slice(&table);
    out
}

/// The bytes of block `i` (offsets from a checked table).
fn block_bytes<'a>(header: &Header, table: &[(u64, u64)], bytes: &'a [u8], i: u64) -> &'a [u8] {
    let start = if i == 0 {
        header.data_offset
    } else {
        table[i as usize - 1].0
    };
    &bytes[start as usize..table[i as usize].0 as usize]
}

/// The first value outside `[-s, s]` in a block of level `s`, as an error.
/// (Values are bytes as stored or `i8` as decoded; `value` reads one.)
pub(crate) fn check_values<T: Copy>(
    path: &Path,
    header: &Header,
    i: u64,
    buf: &[T],
    value: impl Fn(T) -> i8,
) -> Result<(), DbError> {
    let lim = lim(header);
    // A branch-free pass first (it vectorises); the search for the culprit only on failure.
    let all_in_range = buf.chunks(4096).all(|c| {
        c.iter()
            .fold(true, |ok, &b| ok & (-lim..=lim).contains(&value(b)))
    });
    if all_in_range {
        return Ok(());
    }
    match buf.iter().find(|&&b| !(-lim..=lim).contains(&value(b))) {
        Some(&b) => Err(out_of_range(path, header, i, value(b))),
        None => Ok(()),
    }
}

/// The bound of the values of a level: they lie in `[-lim, lim]`.
pub(crate) fn lim(header: &Header) -> i8 {
    header.level.min(127) as i8
}

/// The error for value `v` of block `i`, outside the level's bound.
pub(crate) fn out_of_range(path: &Path, header: &Header, i: u64, v: i8) -> DbError {
    let lim = lim(header);
    DbError::Corrupt {
        path: path.to_path_buf(),
        what: format!("block {i} holds value {v}, outside [-{lim}, {lim}]"),
    }
}

/// Entry `i` of the block table, read straight from the file (unchecked): (end offset,
/// checksum).
pub(crate) fn table_entry(header: &Header, bytes: &[u8], i: u64) -> (u64, u64) {
    let at = (header.table_offset + i * ENTRY_LEN as u64) as usize;
    (u64_at(bytes, at), u64_at(bytes, at + 8))
}

/// The bytes of block `i` (zstd, rans or grid), their checksum checked.
pub(crate) fn checked_block<'a>(
    path: &Path,
    header: &Header,
    table: &[(u64, u64)],
    bytes: &'a [u8],
    i: u64,
) -> Result<&'a [u8], DbError> {
    check_sum(
        path,
        i,
        block_bytes(header, table, bytes, i),
        table[i as usize].1,
    )
}

/// `data`, the bytes of block `i`, if their checksum is `sum`.
pub(crate) fn check_sum<'a>(
    path: &Path,
    i: u64,
    data: &'a [u8],
    sum: u64,
) -> Result<&'a [u8], DbError> {
    let actual = xxh3_64(data);
    if actual != sum {
        return Err(DbError::Corrupt {
            path: path.to_path_buf(),
            what: format!(
                "block {i} checksum mismatch (stored {sum:016x}, computed {actual:016x})"
            ),
        });
    }
    Ok(data)
}

/// The bytes of the model of a level that has one, their checksum checked.
pub(crate) fn model_bytes<'a>(
    path: &Path,
    header: &Header,
    bytes: &'a [u8],
) -> Result<&'a [u8], DbError> {
    let model = &bytes[header.model_offset() as usize..header.table_offset as usize];
    let actual = xxh3_64(model);
    if actual != header.model_checksum {
        return Err(DbError::Corrupt {
            path: path.to_path_buf(),
            what: format!(
                "model checksum mismatch (stored {:016x}, computed {actual:016x})",
                header.model_checksum
            ),
        });
    }
    Ok(model)
}

/// The bytes of block `i` (zstd, rans or grid), found through its own table entry and the one
/// before it, without reading (or checksumming) the whole table: a probe of a large level stays
/// cheap. A damaged entry still fails: as offsets out of order, or as a checksum that does not
/// match the block. With `verified` (the same block passed this check before: the map's
/// bytes do not change), the checksum is not computed again.
pub(crate) fn entry_block<'a>(
    path: &Path,
    header: &Header,
    bytes: &'a [u8],
    i: u64,
    verified: bool,
) -> Result<&'a [u8], DbError> {
    let start = if i == 0 {
        header.data_offset
    } else {
        table_entry(header, bytes, i - 1).0
    };
    let (end, sum) = table_entry(header, bytes, i);
    if start < header.data_offset || end < start || end > header.file_len {
        return Err(DbError::Corrupt {
            path: path.to_path_buf(),
            what: format!("block {i} has offsets {start}..{end} (table damaged)"),
        });
    }
    let data = &bytes[start as usize..end as usize];
    if verified {
        return Ok(data);
    }
    check_sum(path, i, data, sum)
}
