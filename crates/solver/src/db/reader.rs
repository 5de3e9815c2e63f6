//! One level file opened for reading: a memory map, its checked header, and its block table
//! (checked on first use). A stored level is probed straight from the map, each block checked
//! once on its first probe.

use super::codec::Codec;
use super::codecs::{self, LevelModel, Scatter};
use super::error::DbError;
use super::format::{self, Header};
use super::values::{atomic_bytes, Values};
use crate::rules::Rules;
use memmap2::Mmap;
use std::fs::File;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI8, AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;

/// A read-only memory map of a file.
///
/// This is the one place where the database maps memory with `unsafe`, and where it asks the
/// system about those maps (`mincore`, `posix_fadvise`); the only other `unsafe` of the crate
/// is the cache-prefetch hint of `Database::prefetch`, which touches no memory.
enum MappedFile {
    Map(Mmap),
    /// Files too short to hold a header are read instead (mapping an empty file can fail); so
    /// are the files of the codec measurements, made in memory.
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
        // Even then, every byte is checked before use (the header checksum at open, the table
        // checksum on first use, the block checksum before each decompression or before the
        // first probe of a stored block, bounds on every offset), so changed bytes give an
        // error rather than a wrong value; no pointer arithmetic depends on them beyond checked
        // slicing.
        let map = unsafe { Mmap::map(&file) }.map_err(io)?;
        // Probes touch one small block (or, stored, one byte) here and there: without this, each page fault reads
        // ahead as much as the device's read-ahead (8 MiB on some virtual disks), which made a
        // cold open (one fault per header) and a cold probe take milliseconds per level.
        // Advice only; failure changes nothing but speed.
        #[cfg(unix)]
        let _ = map.advise(memmap2::Advice::Random);
        Ok(MappedFile::Map(map))
    }

    /// Reads the file into the page cache in order, unless all of it is there already (or,
    /// with `evict`, after dropping its pages that no process maps), then maps every page. Read in order into an empty cache, a large file lands in large folios (2 MiB on
    /// Linux file systems that support them, such as ext4 since 6.16), which the map then
    /// uses as huge pages: random probes miss the TLB far less often. Returns the bytes read.
    /// Advice and reading only: the bytes are checked on use as ever, and a failure of the
    /// advice changes nothing but speed.
    /// `progress` gets the bytes read so far, every 8 MiB.
    fn read_into_page_cache(
        &self,
        path: &Path,
        evict: bool,
        progress: &dyn Fn(u64),
    ) -> Result<u64, DbError> {
        use std::io::Read;
        let MappedFile::Map(m) = self else {
            return Ok(0);
        };
        let io = |source| DbError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut file = File::open(path).map_err(io)?;
        if evict {
            drop_cached_pages(&file);
        } else if resident_share(m) >= 1.0 {
            // All there: only map it (a page missing here would be read on its own, slowly).
            #[cfg(target_os = "linux")]
            let _ = m.advise(memmap2::Advice::PopulateRead);
            return Ok(0);
        }
        let mut buf = vec![0u8; 1 << 23];
        let mut bytes = 0;
        loop {
            match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    bytes += n as u64;
                    progress(bytes);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io(e)),
            }
        }
        #[cfg(target_os = "linux")]
        let _ = m.advise(memmap2::Advice::PopulateRead);
        Ok(bytes)
    }

    /// Locks the map's pages in memory (`mlock`): they stay resident, and, mapped as huge
    /// pages, stay so, whatever else the machine does (a build beside a long search otherwise
    /// fills the page cache, the kernel reclaims from the map and splits its huge-page
    /// mappings). Returns the bytes locked (0 for a file read instead of mapped).
    fn lock(&self) -> std::io::Result<u64> {
        match self {
            MappedFile::Map(m) => m.lock().map(|_| m.len() as u64),
            MappedFile::Small(_) => Ok(0),
        }
    }

    /// Tells the kernel that bytes `start..end` are needed soon (one read instead of a fault per
    /// page).
    fn will_need(&self, start: u64, end: u64) {
        #[cfg(unix)]
        if let MappedFile::Map(m) = self {
            if start < end && end <= m.len() as u64 {
                let _ = m.advise_range(
                    memmap2::Advice::WillNeed,
                    start as usize,
                    (end - start) as usize,
                );
            }
        }
        #[cfg(not(unix))]
        let _ = (start, end);
    }

    /// Tells the kernel the whole file is about to be read in order (read-ahead back on).
    fn will_read_all(&self) {
        #[cfg(unix)]
        if let MappedFile::Map(m) = self {
            let _ = m.advise(memmap2::Advice::Sequential);
        }
    }
}

/// Drops the pages of `file` from the page cache that no process maps (Linux; nothing
/// elsewhere). Advice only.
fn drop_cached_pages(file: &File) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: `posix_fadvise` only advises the kernel about a valid open descriptor; it
        // touches no memory of this process.
        unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
}

/// The share of the pages of `m` in memory (Unix; 0 elsewhere or when the system does not
/// say).
fn resident_share(m: &Mmap) -> f64 {
    #[cfg(unix)]
    {
        // SAFETY: `sysconf` reads a system constant.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
        let pages = m.len().div_ceil(page);
        if pages == 0 {
            return 1.0;
        }
        let mut vec = vec![0u8; pages];
        // SAFETY: `mincore` writes one byte per page of the range into `vec`, which holds
        // one byte for each page of the map, rounded up; the range is the whole live map,
        // whose start is page-aligned.
        let r = unsafe {
            libc::mincore(
                m.as_ptr() as *mut libc::c_void,
                m.len(),
                vec.as_mut_ptr() as _,
            )
        };
        if r != 0 {
            return 0.0;
        }
        vec.iter().filter(|&&b| b & 1 == 1).count() as f64 / pages as f64
    }
    #[cfg(not(unix))]
    {
        let _ = m;
        0.0
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

/// A level file whose header has been checked; its block table is read and checked on first
/// use (a cold open of a large database would otherwise page in every table).
pub(crate) struct LevelFile {
    path: PathBuf,
    map: MappedFile,
    header: Header,
    /// The header's codec.
    codec: Codec,
    /// The decoded block table, or what is wrong with it, once a block has been asked for.
    table: OnceLock<Result<Vec<(u64, u64)>, String>>,
    /// The decoded model of a rans or grid level, or what is wrong with it, once a block has
    /// been asked for.
    model: OnceLock<Result<LevelModel, String>>,
    /// Stored levels: one bit per block, set once the block has been checked (checksum and
    /// values), after which probes read its bytes without checks. Rans and grid levels: set
    /// once a probe has checked the block's checksum, after which probes decode it without
    /// computing the checksum again (a decoded value is still checked). Empty for zstd levels.
    /// Relaxed is enough: checking is idempotent and the bytes never change.
    verified: Vec<AtomicU64>,
}

impl LevelFile {
    /// Opens level `level` at `path` for `rules` with `positions` positions: checks the header
    /// and that it belongs to these rules and level. The block table (its checksum and
    /// offsets) is checked on the first block read, block contents as they are read.
    pub(crate) fn open(
        path: &Path,
        rules: &Rules,
        level: u32,
        positions: u64,
    ) -> Result<LevelFile, DbError> {
        LevelFile::with_map(path, MappedFile::open(path)?, rules, level, positions)
    }

    /// [`LevelFile::open`] of a level file's bytes held in memory (`path` names them in
    /// errors).
    #[cfg(feature = "bench-internals")]
    pub(crate) fn from_bytes(
        path: &Path,
        bytes: Vec<u8>,
        rules: &Rules,
        level: u32,
        positions: u64,
    ) -> Result<LevelFile, DbError> {
        LevelFile::with_map(path, MappedFile::Small(bytes), rules, level, positions)
    }

    fn with_map(
        path: &Path,
        map: MappedFile,
        rules: &Rules,
        level: u32,
        positions: u64,
    ) -> Result<LevelFile, DbError> {
        let header = codecs::decode_header(path, &map)?;
        header.expect(path, rules, level, positions)?;
        let codec = header.codec();
        let words = match codec {
            Codec::Stored | Codec::Rans | Codec::Grid | Codec::Search => {
                header.block_count.div_ceil(64) as usize
            }
            Codec::Zstd => 0,
        };
        Ok(LevelFile {
            path: path.to_path_buf(),
            map,
            header,
            codec,
            table: OnceLock::new(),
            model: OnceLock::new(),
            verified: (0..words).map(|_| AtomicU64::new(0)).collect(),
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

    /// How the blocks are stored.
    pub(crate) fn codec(&self) -> Codec {
        self.codec
    }

    /// See [`MappedFile::read_into_page_cache`].
    pub(crate) fn read_into_page_cache(
        &self,
        evict: bool,
        progress: &dyn Fn(u64),
    ) -> Result<u64, DbError> {
        self.map.read_into_page_cache(&self.path, evict, progress)
    }

    /// Bytes of the file in memory (see [`resident_share`]; a file read whole counts whole).
    pub(crate) fn resident_bytes(&self) -> u64 {
        match &self.map {
            MappedFile::Map(m) => (resident_share(m) * m.len() as f64) as u64,
            MappedFile::Small(v) => v.len() as u64,
        }
    }

    /// See [`MappedFile::lock`].
    pub(crate) fn lock_in_memory(&self) -> Result<u64, DbError> {
        self.map.lock().map_err(|source| DbError::Io {
            path: self.path.clone(),
            source,
        })
    }

    /// Whether probes read the level straight from the map (stored and search levels), with
    /// nothing to load or decode.
    pub(crate) fn probed_in_place(&self) -> bool {
        self.codec.probed_in_place()
    }

    /// Blocks in the file.
    pub(crate) fn block_count(&self) -> u64 {
        self.header.block_count
    }

    /// The block table, decoded and checked on first use. A bad table stays an error (naming
    /// the file) for every later use.
    pub(crate) fn table(&self) -> Result<&[(u64, u64)], DbError> {
        self.table
            .get_or_init(|| {
                self.map
                    .will_need(self.header.table_offset, self.header.data_offset);
                format::decode_table(&self.path, &self.header, &self.map).map_err(|e| match e {
                    DbError::Corrupt { what, .. } => what,
                    other => other.to_string(),
                })
            })
            .as_deref()
            .map_err(|what| DbError::Corrupt {
                path: self.path.clone(),
                what: what.clone(),
            })
    }

    /// The model of a rans or grid level (`None` for other codecs), decoded and checked on
    /// first use. A bad model stays an error (naming the file) for every later use.
    pub(crate) fn model(&self) -> Result<Option<&LevelModel>, DbError> {
        if !self.codec.has_model() {
            return Ok(None);
        }
        self.model
            .get_or_init(|| {
                // One read of the whole model rather than a page fault at a time.
                self.map
                    .will_need(format::HEADER_LEN as u64, self.header.table_offset);
                codecs::decode_model(&self.path, &self.header, &self.map).map_err(|e| match e {
                    DbError::Corrupt { what, .. } => what,
                    other => other.to_string(),
                })
            })
            .as_ref()
            .map(Some)
            .map_err(|what| DbError::Corrupt {
                path: self.path.clone(),
                what: what.clone(),
            })
    }

    /// Checks and decodes block `i` into `out`.
    pub(crate) fn read_block(&self, i: u64, out: &mut Vec<i8>) -> Result<(), DbError> {
        let table = self.table()?;
        let model = self.model()?;
        codecs::decode_block(&self.path, &self.header, table, model, &self.map, i, out)?;
        self.mark_verified(i);
        Ok(())
    }

    /// Whether block `i` has passed its checks (see `verified`; false for zstd levels).
    fn is_verified(&self, i: u64) -> bool {
        self.verified
            .get(i as usize / 64)
            .is_some_and(|w| w.load(Relaxed) & (1 << (i % 64)) != 0)
    }

    /// Remembers that block `i` has passed its checks (nothing for zstd levels).
    fn mark_verified(&self, i: u64) {
        if let Some(w) = self.verified.get(i as usize / 64) {
            w.fetch_or(1 << (i % 64), Relaxed);
        }
    }

    /// The value of position `index` of a level probed in place (stored or search), read from
    /// the map (search: the block's table entry and the position's nibble, and for the rare
    /// escaped value the exception table). Its block is checked (its table entry, checksum and
    /// contents) on its first probe; a block that fails stays an error, naming the file, on
    /// every probe.
    #[inline]
    pub(crate) fn in_place_value(&self, index: u64) -> Result<i8, DbError> {
        debug_assert!(self.probed_in_place());
        let block = index / self.header.block_size as u64;
        if !self.is_verified(block) {
            // One table entry, not the whole table: a probe of a large level stays cheap.
            codecs::check_in_place(&self.path, &self.header, &self.map, block)?;
            self.mark_verified(block);
        }
        Ok(codecs::value_in_place(
            self.codec,
            &self.header,
            &self.map,
            index,
        ))
    }

    /// The bytes a probe of position `index` of a level probed in place reads (its byte; for
    /// search levels its nibble's and its sub-block's base), unchecked: for prefetching only.
    pub(crate) fn in_place_bytes(&self, index: u64) -> (Option<&u8>, Option<&u8>) {
        let (value, base) = codecs::places_in_place(self.codec, &self.header, index);
        (self.map.get(value), base.and_then(|b| self.map.get(b)))
    }

    /// Where the value of the board `cells` (mover's side first), index `index` in its level,
    /// lies in the file: its index, but for grid levels, whose order is their own (the model,
    /// which holds the layout, is decoded and checked on first use).
    pub(crate) fn position(&self, index: u64, cells: &[u8]) -> Result<u64, DbError> {
        Ok(match self.model()? {
            Some(model) => model.file_position(index, cells),
            None => index,
        })
    }

    /// The value at file position `pos` (see [`LevelFile::position`]) of a rans or grid level:
    /// its block's checksum is checked on the block's first probe (against its own table entry,
    /// the whole table is not read), and the block (grid: the sub-block) decoded up to the
    /// value.
    pub(crate) fn coded_value(&self, pos: u64) -> Result<i8, DbError> {
        let model = self.model()?.expect("a rans or grid level has a model");
        let bs = self.header.block_size as u64;
        let block = pos / bs;
        let verified = self.is_verified(block);
        let v = codecs::probe_value(
            &self.path,
            &self.header,
            model,
            &self.map,
            block,
            (pos % bs) as usize,
            verified,
        )?;
        if !verified {
            self.mark_verified(block);
        }
        Ok(v)
    }

    /// The positions a [`LevelFile::coded_value`] decodes at most, from the start of their
    /// part (a block; grid: a sub-block): the unit of the block cache's bookkeeping.
    pub(crate) fn probe_part(&self) -> u64 {
        codecs::probe_part(&self.header)
    }

    /// The word of the `verified` bits that a probe of position `index` reads first (a
    /// stored level holds one bit per 512 positions: megabytes of bits over a large
    /// database, too many to stay in the processor's cache), for prefetching only.
    pub(crate) fn verified_word(&self, index: u64) -> Option<&AtomicU64> {
        let block = index / self.header.block_size as u64;
        self.verified.get(block as usize / 64)
    }

    /// Decompresses the whole level (every block checked) into memory, in index order.
    pub(crate) fn read_all(&self) -> Result<Values, DbError> {
        let mut out = self.buffer()?;
        self.read_blocks(Some(out.as_atomic()))?;
        Ok(out)
    }

    /// Checks every block (checksum, decoding, values in range, the histogram) and keeps
    /// nothing: what [`LevelFile::read_all`] checks, without a level's worth of memory.
    pub(crate) fn check_all(&self) -> Result<(), DbError> {
        self.read_blocks(None).map(drop)
    }

    /// The number of positions of each value (entry `v + level` counts value `v`): the
    /// histogram stored in the file (checked at open), or for a version 1 file, counted by
    /// decoding the level.
    pub(crate) fn histogram(&self) -> Result<Vec<u64>, DbError> {
        match self.header.histogram(&self.map) {
            Some(h) => Ok(h),
            None => self.read_blocks(None),
        }
    }

    /// A zeroed array of the level's size.
    fn buffer(&self) -> Result<Values, DbError> {
        Values::zeroed(self.header.positions as usize).map_err(|source| DbError::Io {
            path: self.path.clone(),
            source,
        })
    }

    /// Decompresses the whole level (every block checked) into `out`, one byte per position
    /// (the `i8` value's bits), in index order; `out` must hold exactly the level's positions.
    pub(crate) fn read_into(&self, out: &mut [u8]) -> Result<(), DbError> {
        self.read_blocks(Some(atomic_bytes(out))).map(drop)
    }

    /// Reads every block (each checked) in parallel, into `out` if given, which holds exactly
    /// the level's positions, each value at its index (see [`Scatter`]), no copy of the level
    /// made.
    /// Returns the histogram of the values, which must be the one stored in the file (if any).
    fn read_blocks(&self, out: Option<&[AtomicI8]>) -> Result<Vec<u64>, DbError> {
        let counts: Vec<AtomicU64> = (0..256).map(|_| AtomicU64::new(0)).collect();
        let count = |vals: &[i8]| {
            for (c, x) in counts.iter().zip(format::count_values(vals)) {
                if x > 0 {
                    c.fetch_add(x, Relaxed);
                }
            }
        };
        if let Some(out) = out {
            assert_eq!(out.len() as u64, self.header.positions);
        }
        match out {
            None => self.for_each_block(|_, vals| count(vals))?,
            Some(out) => {
                let scatter = Scatter::new(self.model()?);
                self.for_each_block(|first, vals| {
                    count(vals);
                    scatter.store(first as u64, vals, out)
                })?
            }
        }
        // Every value is in range (checked block by block).
        let counts: [u64; 256] = std::array::from_fn(|b| counts[b].load(Relaxed));
        let found = format::level_histogram(&counts, self.header.level);
        if let Some(stored) = self.header.histogram(&self.map) {
            if stored != found {
                let l = self.header.level.min(127) as i32;
                let v = (-l..=l)
                    .zip(stored.iter().zip(&found))
                    .find(|(_, (a, b))| a != b)
                    .map(|(v, (a, b))| format!("value {v}: {a} stored, {b} found"))
                    .unwrap_or_default();
                return Err(DbError::Corrupt {
                    path: self.path.clone(),
                    what: format!("the histogram does not match the values ({v})"),
                });
            }
        }
        Ok(found)
    }

    /// Decodes every block (each checked), in parallel, and gives each to `f` with the place
    /// in the file's order of its first value.
    fn for_each_block(&self, f: impl Fn(usize, &[i8]) + Sync) -> Result<(), DbError> {
        use rayon::prelude::*;
        let table = self.table()?;
        self.map.will_read_all();
        let bs = self.header.block_size as usize;
        let blocks = self.header.block_count;
        // rans blocks are decoded two at a time (twice as fast: see `codecs::decode_pair`).
        let model = self.model()?;
        let per = if codecs::decodes_pairs(model) { 2 } else { 1 };
        (0..blocks.div_ceil(per))
            .into_par_iter()
            .try_for_each_init(Vec::new, |buf, c| {
                let i = c * per;
                if per == 2 && i + 1 < blocks {
                    codecs::decode_pair(&self.path, &self.header, table, model, &self.map, i, buf)?
                } else {
                    self.read_block(i, buf)?
                }
                f(i as usize * bs, buf);
                Ok(())
            })
    }
}
