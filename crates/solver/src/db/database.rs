//! An open database: its levels mapped, probed in place or from memory.

use super::build_db::check_request;
use super::codec::Codec;
use super::error::DbError;
use super::format;
use super::rank::{Ranker, Walker, MAX_DB_LEVEL};
use super::reader::LevelFile;
use super::sow;
use crate::board::Board;
use crate::endgame::Endgame;
use crate::rules::Rules;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// (level, block, values) of a decompressed block.
type CachedBlock = (u32, u64, Arc<Vec<i8>>);

/// A few recently decompressed blocks, shared by the threads that probe.
struct BlockCache {
    shards: Vec<Mutex<Shard>>,
}

/// One shard of the [`BlockCache`]: its blocks, most recent last, and the blocks of the last
/// few probes that did not decode their whole block (rans).
#[derive(Default)]
struct Shard {
    blocks: Vec<CachedBlock>,
    missed: Vec<(u32, u64)>,
}

const CACHE_SHARDS: usize = 16;
const CACHE_WAYS: usize = 4;

impl BlockCache {
    fn new() -> BlockCache {
        BlockCache {
            shards: (0..CACHE_SHARDS).map(|_| Mutex::default()).collect(),
        }
    }

    fn shard(&self, level: u32, block: u64) -> std::sync::MutexGuard<'_, Shard> {
        let h = (block.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ level as u64) >> 32;
        self.shards[h as usize % CACHE_SHARDS]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// The cached block, if it is there (it becomes the most recent).
    fn get(&self, level: u32, block: u64) -> Option<Arc<Vec<i8>>> {
        let mut s = self.shard(level, block);
        let pos = s.blocks.iter().position(|e| e.0 == level && e.1 == block)?;
        let e = s.blocks.remove(pos);
        let data = e.2.clone();
        s.blocks.push(e);
        Some(data)
    }

    fn insert(&self, level: u32, block: u64, data: Arc<Vec<i8>>) {
        let mut s = self.shard(level, block);
        if s.blocks.len() >= CACHE_WAYS {
            s.blocks.remove(0);
        }
        s.blocks.push((level, block, data));
    }

    /// Whether a probe into this part (a block; for grid levels a sub-block) did not decode
    /// its block whole lately (and now remembers that one did): the second probe into a part
    /// decodes its block whole, so that a scan reads each block once while random probes
    /// decode only up to their value.
    fn missed_before(&self, level: u32, part: u64) -> bool {
        let mut s = self.shard(level, part);
        if let Some(pos) = s.missed.iter().position(|&k| k == (level, part)) {
            s.missed.remove(pos);
            return true;
        }
        if s.missed.len() >= CACHE_WAYS {
            s.missed.remove(0);
        }
        s.missed.push((level, part));
        false
    }
}

/// Every level of a database decompressed into one anonymous map, level `l` at bytes
/// `starts[l]..starts[l + 1]` (each byte an `i8` value).
struct Memory {
    values: memmap2::Mmap,
    starts: Vec<usize>,
}

impl Memory {
    #[inline]
    fn level(&self, s: u32) -> &[u8] {
        &self.values[self.starts[s as usize]..self.starts[s as usize + 1]]
    }
}

/// Facts about one level of an open database.
#[derive(Clone, Debug)]
pub struct LevelInfo {
    /// The level (seeds in the houses).
    pub level: u32,
    /// The file.
    pub path: PathBuf,
    /// Positions in the level.
    pub positions: u64,
    /// Bytes of the file.
    pub bytes: u64,
    /// How the blocks are stored.
    pub codec: Codec,
    /// Positions per block.
    pub block_size: u32,
    /// Blocks in the file.
    pub blocks: u64,
}

/// One level's facts and, when asked for, how many of its boards have each value.
#[derive(Clone, Debug)]
pub struct LevelSummary {
    /// The level's facts (from its header).
    pub info: LevelInfo,
    /// (value, boards) for every value some board has, in value order; `None` when not asked.
    pub histogram: Option<Vec<(i32, u64)>>,
}

/// What `kalah db info` shows of a database: its levels and their totals.
#[derive(Clone, Debug)]
pub struct DatabaseInfo {
    /// The largest level.
    pub max_seeds: u32,
    /// Positions in every level.
    pub positions: u64,
    /// Bytes of every level's file.
    pub bytes: u64,
    /// Each level, smallest first.
    pub levels: Vec<LevelSummary>,
}

/// An open endgame database: the contiguous levels `0..=max_seeds` of one directory, for one
/// set of play rules. Probes are safe from many threads at once.
pub struct Database {
    dir: PathBuf,
    rules: Rules,
    ranker: Ranker,
    levels: Vec<LevelFile>,
    cache: BlockCache,
    /// Every zstd level decompressed, after [`Database::load_into_memory`] (stored levels
    /// take no room here: they are read from their maps).
    memory: Option<Memory>,
}

impl fmt::Debug for Database {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Database")
            .field("dir", &self.dir)
            .field("rules", &self.rules)
            .field("levels", &self.levels.len())
            .finish()
    }
}

impl Database {
    /// Opens the levels `0, 1, 2, ...` present in `dir`, up to the first one missing, checking
    /// each header (cheap: a level's block table is checked on its first probe, block
    /// checksums as blocks are read, and everything at once by [`verify`](fn@super::verify)). A level file that is corrupt or built for other rules is an
    /// error, as is a directory without level 0.
    pub fn open(dir: &Path, rules: &Rules) -> Result<Database, DbError> {
        let rules = rules.play_rules();
        check_request(dir, &rules, 0)?;
        let ranker = Ranker::new(rules.houses);
        let mut levels = Vec::new();
        for l in 0..=MAX_DB_LEVEL {
            let path = format::level_path(dir, l);
            if !path.exists() {
                break;
            }
            levels.push(LevelFile::open(&path, &rules, l, ranker.level_size(l))?);
        }
        if levels.is_empty() {
            return Err(DbError::Missing {
                path: format::level_path(dir, 0),
            });
        }
        Ok(Database {
            dir: dir.to_path_buf(),
            rules,
            ranker,
            levels,
            cache: BlockCache::new(),
            memory: None,
        })
    }

    /// Keeps only the levels `0..=max_seeds` (the others are closed): a search over a smaller
    /// database than the directory holds, for comparisons of database sizes.
    pub fn keep_levels(&mut self, max_seeds: u32) {
        self.levels.truncate(max_seeds as usize + 1);
        self.memory = None;
    }

    /// Decodes every rans and zstd level (checking every block) into memory, so that probes
    /// become plain array reads instead of block reads: one byte per position (1.25e9 bytes
    /// for the 24-seed database of 6 houses), in huge pages where the system gives them.
    /// Searches probe at random, which a block cache cannot serve. Stored levels are left as
    /// they are: probes read them from the maps with no load at all (each block checked on its
    /// first probe). Measured on 6x4 with the 24-seed database, one thread: 2.0 s of search
    /// after 2.5 s of loading zstd levels, 2.4 s of search from stored levels.
    pub fn load_into_memory(&mut self) -> Result<(), DbError> {
        let mut starts = Vec::with_capacity(self.levels.len() + 1);
        let mut total = 0usize;
        for f in &self.levels {
            starts.push(total);
            if !f.probed_in_place() {
                total += f.header().positions as usize;
            }
        }
        starts.push(total);
        // One anonymous map with huge pages asked for: probes land at random in a gigabyte
        // or more, where 4 KiB pages would cost a TLB miss (a page walk) on most of them, and
        // where faulting in and zeroing 4 KiB pages one by one makes loading slow.
        let mut map = memmap2::MmapMut::map_anon(total.max(1)).map_err(|e| DbError::Io {
            path: self.dir.clone(),
            source: e,
        })?;
        #[cfg(target_os = "linux")]
        let _ = map.advise(memmap2::Advice::HugePage);
        for (l, f) in self.levels.iter().enumerate() {
            if !f.probed_in_place() {
                f.read_into(&mut map[starts[l]..starts[l + 1]])?;
            }
        }
        self.memory = Some(Memory {
            values: map.make_read_only().map_err(|e| DbError::Io {
                path: self.dir.clone(),
                source: e,
            })?,
            starts,
        });
        Ok(())
    }

    /// Bytes of the levels that probes read in place (stored and search) from their memory
    /// maps.
    pub fn in_place_bytes(&self) -> u64 {
        self.in_place_levels().map(|f| f.file_len()).sum()
    }

    /// Bytes of those levels already in memory (the page cache, whoever read them there;
    /// 0 where the system does not say).
    pub fn in_place_resident_bytes(&self) -> u64 {
        self.in_place_levels().map(|f| f.resident_bytes()).sum()
    }

    /// The levels that probes read in place (stored and search).
    fn in_place_levels(&self) -> impl Iterator<Item = &LevelFile> {
        self.levels.iter().filter(|f| f.probed_in_place())
    }

    /// Reads the levels that probes read in place into the page cache, largest first, each
    /// in order, unless all of it is there already, and maps them; with `evict`, first drops each
    /// file's cached pages that no process maps, so that the whole file is read again. Read
    /// in order into an empty cache, a file lands in large folios that its map then uses as
    /// huge pages (Linux file systems with large folios, such as ext4 since 6.16): random
    /// probes into a 15.5 GB database got about 1.5 times faster, a search over it about 1.15
    /// times (docs/benchmarks.md). A search over a cold database otherwise waits on one random
    /// page fault after another (minutes for 15 GB, against about a minute of reading in
    /// order). `progress` gets the bytes read so far, every 8 MiB. Returns the bytes read.
    pub fn read_into_page_cache(
        &self,
        evict: bool,
        progress: &dyn Fn(u64),
    ) -> Result<u64, DbError> {
        let mut files: Vec<_> = self.in_place_levels().collect();
        files.sort_by_key(|f| std::cmp::Reverse(f.file_len()));
        let mut bytes = 0;
        for f in files {
            bytes += f.read_into_page_cache(evict, &|b| progress(bytes + b))?;
        }
        Ok(bytes)
    }

    /// Locks the maps of the levels that probes read in place in memory (`mlock`; call it
    /// after [`Database::read_into_page_cache`]), so that the pages stay resident and keep
    /// their huge-page mappings while other programs use memory (docs/benchmarks.md: builds
    /// beside a proof over the 15.2 GB search form left 1.3 GB of it mapped in huge pages,
    /// from 14.4, and 1.4 GB evicted). The locks end with the maps. Returns the bytes
    /// locked; an error when the system refuses (for example a `ulimit -l` below the
    /// database's size), with the levels locked so far kept.
    pub fn lock_in_memory(&self) -> Result<u64, DbError> {
        let mut bytes = 0;
        for f in self.in_place_levels() {
            bytes += f.lock_in_memory()?;
        }
        Ok(bytes)
    }

    /// Bytes of memory held by [`Database::load_into_memory`] (0 before; stored levels, left
    /// mapped, count nothing).
    pub fn memory_bytes(&self) -> usize {
        self.memory
            .as_ref()
            .map(|m| *m.starts.last().unwrap())
            .unwrap_or(0)
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The play rules of the database (starting seeds zero).
    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// Facts about each level, from the headers (no decompression).
    pub fn levels(&self) -> Vec<LevelInfo> {
        self.levels
            .iter()
            .map(|f| LevelInfo {
                level: f.header().level,
                path: f.path().to_path_buf(),
                positions: f.header().positions,
                bytes: f.file_len(),
                codec: f.codec(),
                block_size: f.header().block_size,
                blocks: f.block_count(),
            })
            .collect()
    }

    /// Every level's facts and totals; with `histograms`, also each level's count of boards
    /// by value (`on_level` is called before each level's is read: a version 1 file is
    /// decompressed whole to count them).
    pub fn info(
        &self,
        histograms: bool,
        on_level: &mut dyn FnMut(u32),
    ) -> Result<DatabaseInfo, DbError> {
        let mut levels = Vec::new();
        for info in self.levels() {
            let histogram = if histograms {
                on_level(info.level);
                let h = self.histogram(info.level)?;
                Some(
                    h.iter()
                        .enumerate()
                        .filter(|(_, &c)| c > 0)
                        .map(|(i, &c)| (i as i32 - info.level as i32, c))
                        .collect(),
                )
            } else {
                None
            };
            levels.push(LevelSummary { info, histogram });
        }
        Ok(DatabaseInfo {
            max_seeds: self.max_seeds(),
            positions: levels.iter().map(|l| l.info.positions).sum(),
            bytes: levels.iter().map(|l| l.info.bytes).sum(),
            levels,
        })
    }

    /// The number of boards of each value in level `level`: entry `v + level` counts value `v`.
    /// Read from the file (format version 2 and later), or for a version 1 file, counted by
    /// decompressing (and checking) the whole level.
    pub fn histogram(&self, level: u32) -> Result<Vec<u64>, DbError> {
        let f = self
            .levels
            .get(level as usize)
            .ok_or_else(|| DbError::Unsupported {
                path: format::level_path(&self.dir, level),
                what: format!("level {level} is not in the database"),
            })?;
        f.histogram()
    }

    /// The board of index `index` in level `level` (the numbering of the files), if in range.
    /// For tests and benchmarks.
    pub fn board_at(&self, level: u32, index: u64) -> Option<Board> {
        if level as usize >= self.levels.len() || index >= self.ranker.level_size(level) {
            return None;
        }
        let w = Walker::at(&self.ranker, level, index);
        Some(Board::from_raw(self.rules.houses, w.cells))
    }
}

impl Endgame for Database {
    fn max_seeds(&self) -> u32 {
        self.levels.len() as u32 - 1
    }

    fn probe(&self, board: &Board) -> Result<Option<i32>, DbError> {
        self.probe_located(board, None)
    }

    fn probe_located(&self, board: &Board, place: Option<u64>) -> Result<Option<i32>, DbError> {
        if board.houses() != self.rules.houses {
            return Err(DbError::WrongHouses {
                path: self.dir.clone(),
                expected: self.rules.houses,
                found: board.houses(),
            });
        }
        let s = board.seeds();
        let Some(file) = self.levels.get(s as usize) else {
            return Ok(None);
        };
        let idx = match place {
            Some(idx) => {
                debug_assert_eq!(idx, self.ranker.index_packed(sow::pack(board.raw()), s));
                idx
            }
            None => self.ranker.index_packed(sow::pack(board.raw()), s),
        };
        if file.probed_in_place() {
            return Ok(Some(file.in_place_value(idx)? as i32));
        }
        if let Some(memory) = &self.memory {
            return Ok(Some(memory.level(s)[idx as usize] as i8 as i32));
        }
        let bs = file.header().block_size as u64;
        // Where the value lies in the file (grid levels have an order of their own).
        let pos = file.position(idx, board.raw())?;
        let (block, k) = (pos / bs, (pos % bs) as usize);
        if let Some(values) = self.cache.get(s, block) {
            return Ok(Some(values[k] as i32));
        }
        // A grid block holds 64 sub-blocks, each decoded on its own: the block is decoded
        // whole only when a sub-block is probed twice lately (a block would be 1% of random
        // probes into the 24-seed level, each costing 64 sub-blocks).
        let part = pos / file.probe_part();
        if matches!(file.codec(), Codec::Rans | Codec::Grid) && !self.cache.missed_before(s, part) {
            // A random probe: decode up to the value only (half a block or sub-block on
            // average).
            return Ok(Some(file.coded_value(pos)? as i32));
        }
        let mut values = Vec::new();
        file.read_block(block, &mut values)?;
        let v = values[k] as i32;
        self.cache.insert(s, block, Arc::new(values));
        Ok(Some(v))
    }

    fn probes_are_cheap(&self) -> bool {
        self.memory.is_some() || self.levels.iter().all(|f| f.probed_in_place())
    }

    /// Returns the board's index in its level.
    #[inline]
    fn prefetch(&self, board: &Board) -> Option<u64> {
        let s = board.seeds();
        if board.houses() != self.rules.houses {
            return None;
        }
        let file = self.levels.get(s as usize)?;
        let idx = self.ranker.index_packed(sow::pack(board.raw()), s);
        if file.probed_in_place() {
            if let Some(w) = file.verified_word(idx) {
                prefetch_line(w);
            }
        }
        let byte = if file.probed_in_place() {
            let (value, base) = file.in_place_bytes(idx);
            if let Some(b) = base {
                prefetch_line(b);
            }
            value
        } else if let Some(memory) = &self.memory {
            memory.level(s).get(idx as usize)
        } else {
            None
        };
        if let Some(b) = byte {
            prefetch_line(b);
        }
        Some(idx)
    }
}

/// Asks the processor to bring the cache line of `b` closer (a hint; nothing else changes).
#[inline]
fn prefetch_line<T>(b: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` only hints the cache; it reads nothing and cannot fault. The
    // pointer comes from a live reference.
    unsafe {
        std::arch::x86_64::_mm_prefetch(b as *const T as *const i8, std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = b;
}
