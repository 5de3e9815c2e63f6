//! The internals `tools/codec-bench` measures (feature `bench-internals`): a level file read
//! whole, and a level encoded in memory in a codec as the writer writes it, read back as the
//! database reads it. Not a stable API.

use super::codec::Codec;
use super::codecs::LevelEncoder;
use super::error::DbError;
use super::format::{self, Header, HEADER_LEN};
use super::rank::{level_size, Ranker};
use super::reader::LevelFile;
use super::writer;
use crate::rules::{Rules, MAX_HOUSES};
use std::io::Read;
use std::path::{Path, PathBuf};

/// One level file, read whole (every block checked).
pub struct Level {
    /// Its play rules (from its header).
    pub rules: Rules,
    /// The level.
    pub level: u32,
    /// Its codec.
    pub codec: Codec,
    /// Bytes of the file.
    pub file_bytes: u64,
    /// The values, in index order.
    pub values: Vec<i8>,
}

/// Reads level `level` of the database in `dir`, whatever its rules.
pub fn read_level(dir: &Path, level: u32) -> Result<Level, DbError> {
    let path = format::level_path(dir, level);
    let io = |source| DbError::Io {
        path: path.clone(),
        source,
    };
    let mut head = [0u8; HEADER_LEN];
    std::fs::File::open(&path)
        .and_then(|mut f| f.read_exact(&mut head))
        .map_err(io)?;
    let header = Header::decode(&path, &head)?;
    let rules = header.rules().ok_or_else(|| DbError::Corrupt {
        path: path.clone(),
        what: "unknown rule codes".into(),
    })?;
    let file = LevelFile::open(&path, &rules, level, level_size(rules.houses, level))?;
    let mut bytes = vec![0u8; header.positions as usize];
    file.read_into(&mut bytes)?;
    Ok(Level {
        rules,
        level,
        codec: file.codec(),
        file_bytes: file.file_len(),
        values: bytes.into_iter().map(|b| b as i8).collect(),
    })
}

/// A level encoded in memory, as a level file, opened as the database opens one.
pub struct Encoded {
    file: LevelFile,
    ranker: Ranker,
    describe: String,
}

/// A position to probe: its index and its board.
pub struct Place {
    index: u64,
    cells: [u8; 2 * MAX_HOUSES],
}

impl Place {
    /// The position's index in its level.
    pub fn index(&self) -> u64 {
        self.index
    }
}

/// Encodes `level` in `codec` as `kalah db build` writes it (a grid level above 30 seeds in
/// rans), in the current thread pool.
pub fn encode(level: &Level, codec: Codec) -> Result<Encoded, DbError> {
    let enc = LevelEncoder::new(level.rules.houses, level.level, &level.values, codec);
    Encoded::new(level, &enc, enc.codec().name().to_string())
}

/// Encodes `level` in rans with blocks of `block` positions (at least 1) and frequency tables of
/// `scale` bits (12 to 14).
pub fn encode_rans(level: &Level, block: u32, scale: u32) -> Result<Encoded, DbError> {
    assert!(
        block > 0 && (12..=14).contains(&scale),
        "rans {block} {scale}"
    );
    let enc = LevelEncoder::rans_with(level.level, &level.values, block, scale);
    Encoded::new(level, &enc, format!("rans (blocks {block}, {scale} bits)"))
}

impl Encoded {
    fn new(level: &Level, enc: &LevelEncoder<'_>, describe: String) -> Result<Encoded, DbError> {
        let path = PathBuf::from(format!("<{describe} in memory>"));
        let bytes =
            writer::encode_with(&path, &level.rules, level.level, &level.values, enc)?.into_bytes();
        let n = level.values.len() as u64;
        Ok(Encoded {
            file: LevelFile::from_bytes(&path, bytes, &level.rules, level.level, n)?,
            ranker: Ranker::new(level.rules.houses),
            describe,
        })
    }

    /// The codec and its parameters, in words.
    pub fn describe(&self) -> &str {
        &self.describe
    }

    /// Bytes of the file.
    pub fn file_bytes(&self) -> u64 {
        self.file.file_len()
    }

    /// Bytes of its model.
    pub fn model_bytes(&self) -> u64 {
        self.file.header().model_len
    }

    /// Bytes of its block table.
    pub fn table_bytes(&self) -> u64 {
        let h = self.file.header();
        h.data_offset - h.table_offset
    }

    /// Decodes the whole level into `out` (one byte per position, index order), every block
    /// checked, as a search loads a level into memory.
    pub fn decode_into(&self, out: &mut [u8]) -> Result<(), DbError> {
        self.file.read_into(out)
    }

    /// The place of position `index` (below the level's size), for [`Encoded::probe`].
    pub fn place(&self, index: u64) -> Place {
        let mut cells = [0u8; 2 * MAX_HOUSES];
        self.ranker
            .unrank(index, self.file.header().level, &mut cells);
        Place { index, cells }
    }

    /// The value at `place` as a probe of the database reads it without its cache of blocks:
    /// in place (stored, search), decoding only up to it (rans, grid), or decoding its block
    /// (zstd).
    pub fn probe(&self, place: &Place) -> Result<i8, DbError> {
        let file = &self.file;
        if file.probed_in_place() {
            return file.in_place_value(place.index);
        }
        if file.codec() == Codec::Zstd {
            let bs = file.header().block_size as u64;
            let mut block = Vec::new();
            file.read_block(place.index / bs, &mut block)?;
            return Ok(block[(place.index % bs) as usize]);
        }
        file.coded_value(file.position(place.index, &place.cells)?)
    }
}
