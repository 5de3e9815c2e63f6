//! Writing level files: a level's values coded in a codec, written under a temporary name,
//! synced and renamed.

use super::codecs::grid::{GridModel, Layout};
use super::codecs::rans::Model;
use super::format::{self, Header};
use super::{Codec, DbError};
use crate::rules::Rules;
use rayon::prelude::*;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use xxhash_rust::xxh3::xxh3_64;

/// A level encoded for writing: the file's header and table, and its blocks.
pub(crate) struct EncodedLevel {
    level: u32,
    prefix: Vec<u8>,
    blocks: Vec<Vec<u8>>,
}

impl EncodedLevel {
    /// Bytes of the file.
    pub(crate) fn len(&self) -> u64 {
        (self.prefix.len() + self.blocks.iter().map(Vec::len).sum::<usize>()) as u64
    }
}

/// Encodes the values of level `level` in `codec` (compressing blocks in parallel): the work
/// of [`write_level`] that needs the processors.
pub(crate) fn encode_level(
    dir: &Path,
    rules: &Rules,
    level: u32,
    values: &[i8],
    codec: Codec,
) -> Result<EncodedLevel, DbError> {
    let header = Header::for_rules(rules, level, values.len() as u64, codec);
    let bs = header.block_size as usize;
    if codec == Codec::Search {
        return Ok(encode_search(header, level, values));
    }
    let mut model = None;
    let blocks: Vec<Vec<u8>> = match codec {
        Codec::Grid => {
            let layout = Layout::new(rules.houses, level);
            // Each block read in file order from the level, no copy of it made.
            let rows = layout.rows();
            let Ok(m) = GridModel::fit_level(values, layout.clone(), &rows) else {
                // Above 30 seeds (or values the grid cannot take, which a build never makes).
                return encode_level(dir, rules, level, values, Codec::Rans);
            };
            let blocks = (0..header.block_count)
                .into_par_iter()
                .map_init(Vec::new, |block, i| {
                    block.resize(header.block_len(i), 0);
                    layout.read(&rows, values, i * bs as u64, block);
                    let mut out = Vec::with_capacity(block.len() / 2);
                    m.encode_block(i, block, &mut out);
                    out
                })
                .collect();
            model = Some(m.to_bytes());
            blocks
        }
        Codec::Zstd => values
            .par_chunks(bs)
            .map(super::codecs::zstd::compress_block)
            .collect::<Result<_, _>>()
            .map_err(|source| DbError::Io {
                path: format::level_path(dir, level),
                source,
            })?,
        Codec::Stored => values.par_chunks(bs).map(format::to_bytes).collect(),
        Codec::Search => unreachable!("encoded above"),
        Codec::Rans => {
            let m = Model::fit(values, level.min(127) as i8, bs);
            let blocks = values
                .par_chunks(bs)
                .map(|c| {
                    let mut out = Vec::with_capacity(c.len() / 2);
                    m.encode_block(c, &mut out);
                    out
                })
                .collect();
            model = Some(m.to_bytes());
            blocks
        }
    };
    let entries: Vec<(u64, u64)> = blocks
        .par_iter()
        .map(|b| (b.len() as u64, xxh3_64(b)))
        .collect();
    Ok(EncodedLevel {
        level,
        prefix: format::encode_prefix(
            header,
            &format::histogram(values, level),
            &model.unwrap_or_default(),
            &entries,
        ),
        blocks,
    })
}

/// Encodes a level in the search codec (`codecs/search.rs`): the blocks' nibbles back to
/// back, then the exception table as one last piece.
fn encode_search(mut header: Header, level: u32, values: &[i8]) -> EncodedLevel {
    use super::codecs::search;
    let step = search::step_for(values, level);
    header.codec_level = step;
    let bs = header.block_size as usize;
    let blocks: Vec<search::EncodedBlock> = values
        .par_chunks(bs)
        .map(|c| search::encode_block(c, level, step))
        .collect();
    // Each block's first exception, and the end of the last block's.
    let mut firsts = Vec::with_capacity(blocks.len() + 1);
    let mut n = 0u64;
    for b in &blocks {
        firsts.push(n);
        n += (b.exceptions.len() / search::EXCEPTION_LEN) as u64;
    }
    firsts.push(n);
    let entries: Vec<(u64, u64)> = blocks
        .par_iter()
        .enumerate()
        .map(|(i, b)| {
            let sum = search::block_sum(firsts[i], firsts[i + 1], &b.bytes, &b.exceptions);
            (firsts[i], sum)
        })
        .collect();
    let mut exceptions = Vec::with_capacity(n as usize * search::EXCEPTION_LEN);
    let mut pieces = Vec::with_capacity(blocks.len() + 1);
    for b in blocks {
        exceptions.extend_from_slice(&b.exceptions);
        pieces.push(b.bytes);
    }
    let data_len = search::block_bytes(values.len() as u64) + exceptions.len() as u64;
    pieces.push(exceptions);
    EncodedLevel {
        level,
        prefix: format::encode_prefix_with(
            header,
            &format::histogram(values, level),
            &[],
            &entries,
            data_len,
            false,
        ),
        blocks: pieces,
    }
}

/// Writes an encoded level into `dir`: to `<name>.tmp`, synced, then renamed over the level's
/// name (and the directory synced), so that a crash never leaves a partial file under the
/// level's name. Returns the bytes written. The work of [`write_level`] that waits on the disk.
pub(crate) fn commit_level(dir: &Path, e: &EncodedLevel) -> Result<u64, DbError> {
    let path = format::level_path(dir, e.level);
    let tmp = dir.join(format!("{}.tmp", format::level_file_name(e.level)));
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |source| DbError::Io { path: p, source }
    };
    {
        let f = File::create(&tmp).map_err(io(&tmp))?;
        let mut w = BufWriter::with_capacity(1 << 20, f);
        w.write_all(&e.prefix).map_err(io(&tmp))?;
        for b in &e.blocks {
            w.write_all(b).map_err(io(&tmp))?;
        }
        let f = w.into_inner().map_err(|e| io(&tmp)(e.into_error()))?;
        f.sync_all().map_err(io(&tmp))?;
    }
    std::fs::rename(&tmp, &path).map_err(io(&path))?;
    if let Ok(d) = File::open(dir) {
        // Best effort: makes the rename durable on file systems that need it.
        let _ = d.sync_all();
    }
    Ok(e.len())
}

/// Writes level `level` of `values` into `dir` in `codec` ([`encode_level`] then
/// [`commit_level`]). Returns the bytes written.
pub(crate) fn write_level(
    dir: &Path,
    rules: &Rules,
    level: u32,
    values: &[i8],
    codec: Codec,
) -> Result<u64, DbError> {
    commit_level(dir, &encode_level(dir, rules, level, values, codec)?)
}
