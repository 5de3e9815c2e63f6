//! One level file opened for reading: a memory map, its checked header and block table.

use super::format::{self, Header};
use super::DbError;
use crate::rules::Rules;
use memmap2::Mmap;
use std::fs::File;
use std::ops::Deref;
use std::path::{Path, PathBuf};

/// A read-only memory map of a file.
///
/// This is the one place where the database uses `unsafe`.
enum MappedFile {
    Map(Mmap),
    /// Files too short to hold a header are read instead (mapping an empty file can fail).
    Small(Vec<u8>),
}

impl MappedFile {
    fn open(path: &Path) -> Result<MappedFile, DbError> {
        let io = |source| DbError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        if len < format::HEADER_LEN as u64 {
            return Ok(MappedFile::Small(std::fs::read(path).map_err(io)?));
        }
        // SAFETY: `Mmap::map` is unsafe because the bytes may change under us if another process
        // writes to the file while it is mapped, which Rust's aliasing rules do not allow for a
        // `&[u8]`. The database never writes to a published level file: builds write
        // `<name>.tmp` and rename it over, which makes a new inode and leaves existing maps
        // untouched. Users are told not to edit level files in place while a reader runs.
        // Even then, every byte is checked before use (header and table checksums at open,
        // the block checksum before each decompression, bounds on every offset), so changed
        // bytes give an error rather than a wrong value; no pointer arithmetic depends on them
        // beyond checked slicing.
        let map = unsafe { Mmap::map(&file) }.map_err(io)?;
        Ok(MappedFile::Map(map))
    }
}

impl Deref for MappedFile {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            MappedFile::Map(m) => m,
            MappedFile::Small(v) => v,
        }
    }
}

/// A level file whose header and block table have been checked.
pub(crate) struct LevelFile {
    path: PathBuf,
    map: MappedFile,
    header: Header,
    table: Vec<(u64, u64)>,
}

impl LevelFile {
    /// Opens level `level` at `path` for `rules` with `positions` positions: checks the header,
    /// that it belongs to these rules and level, and the block table's checksum. Block contents
    /// are checked when read.
    pub(crate) fn open(
        path: &Path,
        rules: &Rules,
        level: u32,
        positions: u64,
    ) -> Result<LevelFile, DbError> {
        let map = MappedFile::open(path)?;
        let header = Header::decode(path, &map)?;
        header.expect(path, rules, level, positions)?;
        let table = format::decode_table(path, &header, &map)?;
        Ok(LevelFile {
            path: path.to_path_buf(),
            map,
            header,
            table,
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn header(&self) -> &Header {
        &self.header
    }

    /// Bytes on disk.
    pub(crate) fn file_len(&self) -> u64 {
        self.map.len() as u64
    }

    /// Blocks in the file.
    pub(crate) fn block_count(&self) -> u64 {
        self.header.block_count
    }

    /// Checks and decompresses block `i` into `out`.
    pub(crate) fn read_block(&self, i: u64, out: &mut Vec<i8>) -> Result<(), DbError> {
        format::decode_block(&self.path, &self.header, &self.table, &self.map, i, out)
    }

    /// Decompresses the whole level (every block checked) into one vector.
    pub(crate) fn read_all(&self, out: &mut Vec<i8>) -> Result<(), DbError> {
        use rayon::prelude::*;
        let bs = self.header.block_size as usize;
        out.clear();
        out.resize(self.header.positions as usize, 0);
        out.par_chunks_mut(bs)
            .enumerate()
            .try_for_each_init(Vec::new, |buf, (i, chunk)| {
                self.read_block(i as u64, buf)?;
                chunk.copy_from_slice(buf);
                Ok(())
            })
    }
}
