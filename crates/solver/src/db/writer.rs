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

/// Encodes a run of whole blocks of a level in the search codec, in parallel: the blocks, and
/// their table entries (first exception, checksum), the run's exceptions numbered from `first`.
fn encode_search_run(
    values: &[i8],
    level: u32,
    step: u8,
    first: u64,
) -> (Vec<super::codecs::search::EncodedBlock>, Vec<(u64, u64)>) {
    use super::codecs::search;
    let blocks: Vec<search::EncodedBlock> = values
        .par_chunks(search::BLOCK as usize)
        .map(|c| search::encode_block(c, level, step))
        .collect();
    // Each block's first exception, and the end of the last block's.
    let mut firsts = Vec::with_capacity(blocks.len() + 1);
    let mut n = first;
    for b in &blocks {
        firsts.push(n);
        n += (b.exceptions.len() / search::EXCEPTION_LEN) as u64;
    }
    firsts.push(n);
    let entries = blocks
        .par_iter()
        .enumerate()
        .map(|(i, b)| {
            let sum = search::block_sum(firsts[i], firsts[i + 1], &b.bytes, &b.exceptions);
            (firsts[i], sum)
        })
        .collect();
    (blocks, entries)
}

/// Encodes a level in the search codec (`codecs/search.rs`) in memory: the blocks' nibbles
/// back to back, then the exception table as one last piece.
fn encode_search(mut header: Header, level: u32, values: &[i8]) -> EncodedLevel {
    use super::codecs::search;
    let step = search::step_for(values, level);
    header.codec_level = step;
    debug_assert_eq!(header.block_size, search::BLOCK);
    let (blocks, entries) = encode_search_run(values, level, step, 0);
    let mut exceptions = Vec::new();
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

/// Writes level `level` of `values` into `dir` in the search codec as it encodes it, a slice
/// of blocks at a time: what [`write_level`] does, without the whole file in memory (level 33
/// of 6 houses is 4.2 GB in the search codec, beside 7.9 GB of values). The file is the same,
/// byte for byte. Returns the bytes written.
pub(crate) fn write_search_level(
    dir: &Path,
    rules: &Rules,
    level: u32,
    values: &[i8],
) -> Result<u64, DbError> {
    use super::codecs::search;
    let path = format::level_path(dir, level);
    let tmp = dir.join(format!("{}.tmp", format::level_file_name(level)));
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |source| DbError::Io { path: p, source }
    };
    let mut header = Header::for_rules(rules, level, values.len() as u64, Codec::Search);
    let step = search::step_for(values, level);
    header.codec_level = step;
    let hist = format::histogram(values, level);
    // The prefix's length does not depend on the table's contents: zeros stand in for it until
    // the table is known.
    let blocks = header.block_count as usize;
    let prefix_len = format::HEADER_LEN + 8 * hist.len() + format::ENTRY_LEN * blocks;
    let f = File::create(&tmp).map_err(io(&tmp))?;
    let mut w = BufWriter::with_capacity(1 << 22, f);
    w.write_all(&vec![0u8; prefix_len]).map_err(io(&tmp))?;
    let bs = search::BLOCK as usize;
    let mut entries: Vec<(u64, u64)> = Vec::with_capacity(blocks);
    let mut exceptions: Vec<u8> = Vec::new();
    // 4096 blocks (16 M positions, 8 MB written) at a time.
    for slice in values.chunks(bs << 12) {
        let first = (exceptions.len() / search::EXCEPTION_LEN) as u64;
        let (encoded, run) = encode_search_run(slice, level, step, first);
        entries.extend(run);
        for b in &encoded {
            w.write_all(&b.bytes).map_err(io(&tmp))?;
            exceptions.extend_from_slice(&b.exceptions);
        }
    }
    w.write_all(&exceptions).map_err(io(&tmp))?;
    let data_len = search::block_bytes(values.len() as u64) + exceptions.len() as u64;
    let prefix = format::encode_prefix_with(header, &hist, &[], &entries, data_len, false);
    debug_assert_eq!(prefix.len(), prefix_len);
    finish_with_head(w, &prefix, &tmp, &path)?;
    Ok(prefix_len as u64 + data_len)
}

/// Ends a file written to `tmp` after a placeholder of `head.len()` bytes: writes `head` at its
/// start, syncs it and renames it to `path` (syncing the directory, where that works), so that
/// `path` never names a partial file.
pub(crate) fn finish_with_head(
    w: BufWriter<File>,
    head: &[u8],
    tmp: &Path,
    path: &Path,
) -> Result<(), DbError> {
    use std::io::{Seek, SeekFrom};
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |source| DbError::Io { path: p, source }
    };
    let mut f = w.into_inner().map_err(|e| io(tmp)(e.into_error()))?;
    f.seek(SeekFrom::Start(0)).map_err(io(tmp))?;
    f.write_all(head).map_err(io(tmp))?;
    f.sync_all().map_err(io(tmp))?;
    drop(f);
    std::fs::rename(tmp, path).map_err(io(path))?;
    if let Some(Ok(d)) = path.parent().map(File::open) {
        // Best effort: makes the rename durable on file systems that need it.
        let _ = d.sync_all();
    }
    Ok(())
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
