//! Writing level files: a level's values coded in a codec, written under a temporary name,
//! synced and renamed.

use super::codec::Codec;
use super::codecs::{LevelEncoder, RunStart};
use super::error::DbError;
use super::format::{self, Header};
use crate::rules::Rules;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

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

    /// The file's bytes.
    #[cfg(feature = "bench-internals")]
    pub(crate) fn into_bytes(self) -> Vec<u8> {
        let len = self.len() as usize;
        let mut out = self.prefix;
        out.reserve(len - out.len());
        for b in self.blocks {
            out.extend_from_slice(&b);
        }
        out
    }
}

/// The header of a level as `enc` writes it.
fn header(rules: &Rules, level: u32, values: &[i8], enc: &LevelEncoder<'_>) -> Header {
    Header::new(
        rules,
        level,
        values.len() as u64,
        enc.codec(),
        enc.block_size(),
        enc.codec_level(),
    )
}

/// The I/O error of `path`.
fn io(path: &Path) -> impl FnOnce(std::io::Error) -> DbError {
    let path = path.to_path_buf();
    move |source| DbError::Io { path, source }
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
    encode_with(
        dir,
        rules,
        level,
        values,
        &LevelEncoder::new(rules.houses, level, values, codec),
    )
}

/// [`encode_level`] with a prepared encoder.
pub(crate) fn encode_with(
    dir: &Path,
    rules: &Rules,
    level: u32,
    values: &[i8],
    enc: &LevelEncoder<'_>,
) -> Result<EncodedLevel, DbError> {
    let header = header(rules, level, values, enc);
    let mut at = RunStart::default();
    let run = enc
        .encode_run(0..header.block_count, &mut at)
        .map_err(io(&format::level_path(dir, level)))?;
    let data_len = at.data_len() + run.trailer.len() as u64;
    let mut blocks = run.blocks;
    if !run.trailer.is_empty() {
        blocks.push(run.trailer);
    }
    Ok(EncodedLevel {
        level,
        prefix: format::encode_prefix(
            header,
            &format::histogram(values, level),
            &enc.model(),
            &run.entries,
            data_len,
        ),
        blocks,
    })
}

/// Writes level `level` of `values` into `dir` in `codec` as it encodes it, a run of blocks
/// at a time: what [`write_level`] does, without the whole file in memory (level 33 of 6
/// houses is 4.2 GB in the search codec, beside 7.9 GB of values). The file is the same, byte
/// for byte. Returns the bytes written.
pub(crate) fn write_level_streamed(
    dir: &Path,
    rules: &Rules,
    level: u32,
    values: &[i8],
    codec: Codec,
) -> Result<u64, DbError> {
    let path = format::level_path(dir, level);
    let tmp = dir.join(format!("{}.tmp", format::level_file_name(level)));
    let enc = LevelEncoder::new(rules.houses, level, values, codec);
    let header = header(rules, level, values, &enc);
    let hist = format::histogram(values, level);
    let model = enc.model();
    // The prefix's length does not depend on the table's contents: zeros stand in for it until
    // the table is known.
    let blocks = header.block_count;
    let prefix_len =
        format::HEADER_LEN + 8 * hist.len() + model.len() + format::ENTRY_LEN * blocks as usize;
    let f = File::create(&tmp).map_err(io(&tmp))?;
    let mut w = BufWriter::with_capacity(1 << 22, f);
    w.write_all(&vec![0u8; prefix_len]).map_err(io(&tmp))?;
    let mut entries: Vec<(u64, u64)> = Vec::with_capacity(blocks as usize);
    let mut trailer: Vec<u8> = Vec::new();
    let mut at = RunStart::default();
    // 16 M positions at a time (search: 4096 blocks, 8 MB written).
    let per = ((1u64 << 24) / enc.block_size() as u64).max(1);
    for first in (0..blocks).step_by(per as usize) {
        let run = enc
            .encode_run(first..(first + per).min(blocks), &mut at)
            .map_err(io(&tmp))?;
        entries.extend(run.entries);
        for b in &run.blocks {
            w.write_all(b).map_err(io(&tmp))?;
        }
        trailer.extend_from_slice(&run.trailer);
    }
    w.write_all(&trailer).map_err(io(&tmp))?;
    let data_len = at.data_len() + trailer.len() as u64;
    let prefix = format::encode_prefix(header, &hist, &model, &entries, data_len);
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
