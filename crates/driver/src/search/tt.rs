//! The shared transposition table: lock-free buckets of two-word entries keyed on a hash of the
//! houses (mover's side first, stores excluded).
//!
//! Every entry holds *proven* bounds on the value of a board (lower, upper), the best move found
//! and the work spent (log2 of the nodes below). Because the search is exact (never depth
//! limited), a bound stays true forever, whatever window or thread produced it; so threads share
//! the table freely and a checkpoint may save any subset of it.
//!
//! An entry is two `u64` words: `key ^ data` and `data`. A reader accepts an entry only when the
//! two words agree with the key, so a torn write (two threads at once) reads as a miss.

use kalah_solver::Board;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

/// Entries per bucket: four entries of 16 bytes fill one 64-byte cache line.
const WAYS: usize = 4;
/// Tables of at least this many bytes are faulted in by a thread of their own.
const PREFAULT_BYTES: usize = 32 << 20;
/// The first size in MiB of the tables that grow in `solve`, `query` and `serve`
/// ([`Table::growing`]): small enough to cost little zeroing, large enough to cost few nodes
/// against a fixed table (measured in docs/experiments.md, "A table that grows").
pub const GROW_START_MB: usize = 16;
/// How fast a table that grows ([`Table::growing`]) grows over a database of every board of
/// `houses` houses with at most `seeds` seeds: the nodes searched per entry held before it
/// doubles. A larger table finds a few more transpositions but costs time on every probe once
/// the database's own random reads have filled the processor's caches and address
/// translation; over a small database the table is worth its size. So 16 over databases of
/// more than 2^27 boards (6 houses: 20 seeds and more), 1 below (measured in
/// docs/experiments.md, "A smaller table over large databases").
pub fn nodes_per_entry(houses: usize, seeds: i32) -> u64 {
    if seeds < 0 {
        return 1;
    }
    // Boards of 2 * houses cells with at most `seeds` seeds: C(seeds + 2 houses, 2 houses).
    let cells = 2 * houses as u128;
    let mut boards: u128 = 1;
    for i in 1..=cells {
        boards = boards * (seeds as u128 + i) / i;
    }
    if boards > 1 << 27 {
        16
    } else {
        1
    }
}

/// The move field value meaning "no move known".
pub const NO_MOVE: u8 = 15;

/// What the table knows about one board.
///
/// Two kinds of knowledge live side by side and never mix: *proven* bounds (`lower`, `upper`,
/// true of the game-theoretic value whatever search found them) and a *heuristic* bound
/// (`hval` of kind `hkind`, found by a depth-limited search `hdepth` moves deep with the store
/// difference as the value at its horizon), which orders moves and cuts only depth-limited
/// searches. A checkpoint saves the proven part and the best move only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// A proven lower bound on the value.
    pub lower: i32,
    /// A proven upper bound on the value.
    pub upper: i32,
    /// The best move found (0-based house) or [`NO_MOVE`].
    pub best: u8,
    /// log2 of the nodes searched to prove the bounds (0..=63).
    pub work: u8,
    /// The heuristic value (-256..=255), meaningful when `hkind` is not [`H_NONE`].
    pub hval: i32,
    /// What `hval` is: [`H_NONE`], [`H_LOWER`], [`H_UPPER`] or [`H_EXACT`].
    pub hkind: u8,
    /// The depth of the search that found `hval` (0..=63).
    pub hdepth: u8,
}

/// No heuristic value.
pub const H_NONE: u8 = 0;
/// `hval` is a lower bound on the depth-limited value.
pub const H_LOWER: u8 = 1;
/// `hval` is an upper bound on the depth-limited value.
pub const H_UPPER: u8 = 2;
/// `hval` is the depth-limited value.
pub const H_EXACT: u8 = 3;

impl Entry {
    /// Proven bounds with no heuristic part.
    pub fn proven(lower: i32, upper: i32, best: u8, work: u8) -> Entry {
        Entry {
            lower,
            upper,
            best,
            work,
            hval: 0,
            hkind: H_NONE,
            hdepth: 0,
        }
    }

    fn pack(self) -> u64 {
        (self.lower as i16 as u16 as u64)
            | ((self.upper as i16 as u16 as u64) << 16)
            | (((self.best & 15) as u64) << 32)
            | (((self.work & 63) as u64) << 36)
            | ((((self.hval + 256) as u64) & 511) << 42)
            | (((self.hkind & 3) as u64) << 51)
            | (((self.hdepth & 63) as u64) << 53)
    }

    fn unpack(d: u64) -> Entry {
        Entry {
            lower: (d as u16) as i16 as i32,
            upper: ((d >> 16) as u16) as i16 as i32,
            best: ((d >> 32) & 15) as u8,
            work: ((d >> 36) & 63) as u8,
            hval: ((d >> 42) & 511) as i32 - 256,
            hkind: ((d >> 51) & 3) as u8,
            hdepth: ((d >> 53) & 63) as u8,
        }
    }

    /// Packs the proven part and the best move into a data word (for checkpoints).
    pub fn to_word(self) -> u64 {
        Entry::proven(self.lower, self.upper, self.best, self.work).pack()
    }

    /// Reads an entry back from its data word (the heuristic part is dropped).
    pub fn from_word(d: u64) -> Entry {
        let e = Entry::unpack(d);
        Entry::proven(e.lower, e.upper, e.best, e.work)
    }

    /// The heuristic bounds `(low, high)` on the depth-limited value when the entry has a
    /// heuristic part at least `depth` deep.
    #[inline]
    pub fn heuristic(&self, depth: u32) -> Option<(i32, i32)> {
        if self.hkind == H_NONE || (self.hdepth as u32) < depth {
            return None;
        }
        Some(match self.hkind {
            H_LOWER => (self.hval, i32::MAX),
            H_UPPER => (i32::MIN, self.hval),
            _ => (self.hval, self.hval),
        })
    }
}

#[inline]
fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The 64-bit key of a board (never 0).
#[inline]
pub fn key(board: &Board) -> u64 {
    let raw = board.raw();
    let a = u64::from_le_bytes(raw[..8].try_into().unwrap());
    let b = u64::from_le_bytes(raw[8..].try_into().unwrap());
    let h = mix(a ^ mix(b ^ 0x9e37_79b9_7f4a_7c15));
    if h == 0 {
        1
    } else {
        h
    }
}

/// A table made ahead by [`prepare`], for the next [`Table::new`] of its size.
static READY: Mutex<Option<Table>> = Mutex::new(None);

/// Maps the table that the next [`Table::new`]`(mb, huge_pages)` of this process will return,
/// and starts faulting it in: called before the database opens, the system's zeroing of the
/// table's pages runs while the database is read instead of during the search. `huge_pages`:
/// as in [`Table::new`].
pub fn prepare(mb: usize, huge_pages: bool) {
    let t = Table::fixed(Table::buckets_for(mb), huge_pages);
    *READY.lock().unwrap_or_else(|e| e.into_inner()) = Some(t);
}

/// The table.
pub struct Table {
    /// Anonymous memory (zeroed by the system, huge pages asked for where available), shared
    /// with the thread that faults it in (see [`Table::fixed`]).
    map: Arc<memmap2::MmapMut>,
    /// Words of the whole map (the largest size).
    len: usize,
    /// Buckets in use, less one: all of them, or for a table that grows, a power of two that
    /// doubles as the search goes (see [`Table::growing`]).
    mask: AtomicUsize,
    /// The largest `mask`.
    max_mask: usize,
    /// Nodes searched with this table (for a table that grows).
    noted: AtomicU64,
    /// A table that grows doubles when `noted` passes this many nodes per entry held.
    nodes_per_entry: u64,
    /// Whether huge pages were asked for (see [`Table::new`]).
    huge_pages: bool,
}

impl Table {
    /// A table of at most `mb` MiB (at least one bucket), the bucket count a power of two: the
    /// one [`prepare`] made for this size, if it did, or a new one. `huge_pages`: ask the
    /// system to back the table with huge pages (Linux; only a hint): fewer TLB misses on a
    /// large table. Turning it off changes the speed only, never what the search finds.
    pub fn new(mb: usize, huge_pages: bool) -> Table {
        let buckets = Table::buckets_for(mb);
        let mut ready = READY.lock().unwrap_or_else(|e| e.into_inner());
        match ready.take() {
            Some(t) if t.max_mask + 1 == buckets && t.huge_pages == huge_pages => t,
            _ => Table::fixed(buckets, huge_pages),
        }
    }

    fn buckets_for(mb: usize) -> usize {
        let bytes = mb.max(1) << 20;
        let mut buckets = 1usize;
        while buckets * 2 * WAYS * 16 <= bytes {
            buckets *= 2;
        }
        buckets
    }

    /// A table of at most `mb` MiB that starts at `start_mb` (0: one bucket) and doubles each
    /// time the nodes searched with it pass `nodes_per_entry` times the entries it holds (see
    /// [`nodes_per_entry`]). The system zeroes each page of the table on its first write,
    /// and on a virtual machine that costs far more than the write: a table the size of the
    /// search saves it (docs/experiments.md, "A table that grows").
    /// Entries whose bucket moves when the table doubles are copied to their new bucket (by
    /// the thread that doubled it, while the others search on; a board looked up before its
    /// entry is copied is only a miss). The memory is mapped at the largest size from the
    /// start, so the table never moves. `huge_pages`: as in [`Table::new`].
    pub fn growing(start_mb: usize, mb: usize, nodes_per_entry: u64, huge_pages: bool) -> Table {
        let max = Table::buckets_for(mb);
        let start = if start_mb == 0 {
            1
        } else {
            Table::buckets_for(start_mb).min(max)
        };
        Table {
            nodes_per_entry: nodes_per_entry.max(1),
            ..Table::make(max, start, false, huge_pages)
        }
    }

    /// A table of exactly `buckets` buckets (a power of two), for tests of replacement.
    pub fn with_buckets(buckets: usize) -> Table {
        Table::fixed(buckets, true)
    }

    /// A table of exactly `buckets` buckets, all in use from the start, faulted in by a
    /// thread of its own when it is large.
    fn fixed(buckets: usize, huge_pages: bool) -> Table {
        Table::make(buckets, buckets, true, huge_pages)
    }

    fn make(buckets: usize, start: usize, prefault: bool, huge_pages: bool) -> Table {
        assert!(buckets.is_power_of_two());
        let len = buckets * WAYS * 2;
        let map = memmap2::MmapMut::map_anon(len * 8).expect("cannot map memory for the table");
        #[cfg(target_os = "linux")]
        {
            // Fewer TLB misses on a large table; only a hint.
            if huge_pages {
                let _ = map.advise(memmap2::Advice::HugePage);
            }
        }
        let map = Arc::new(map);
        if prefault && len * 8 >= PREFAULT_BYTES {
            // The system zeroes each page of the map on its first write, which on a virtual
            // machine costs far more than the write (docs/experiments.md, "Zeroing the
            // table"). A thread of its own takes those
            // faults, in order, while the database opens; once the search starts, it takes
            // only the faults the search has not taken yet. It writes nothing (an atomic
            // `fetch_or(0)` on one word per page), so it may run beside the search.
            let map = Arc::clone(&map);
            let _ = std::thread::Builder::new()
                .name("table-prefault".into())
                .spawn(move || {
                    // SAFETY: as in `words`; the Arc keeps the map alive while this runs.
                    let words = unsafe {
                        std::slice::from_raw_parts(map.as_ptr() as *const AtomicU64, len)
                    };
                    for w in words.iter().step_by(4096 / 8) {
                        w.fetch_or(0, Relaxed);
                    }
                });
        }
        Table {
            map,
            len,
            mask: AtomicUsize::new(start - 1),
            max_mask: buckets - 1,
            noted: AtomicU64::new(0),
            nodes_per_entry: 1,
            huge_pages,
        }
    }

    /// Counts `nodes` more nodes searched with the table; a table that grows doubles when
    /// they pass `nodes_per_entry` times the entries it holds.
    #[inline]
    pub fn note_nodes(&self, nodes: u64) {
        let mask = self.mask.load(Relaxed);
        if mask == self.max_mask {
            return;
        }
        let total = self.noted.fetch_add(nodes, Relaxed) + nodes;
        if total > ((mask + 1) * WAYS) as u64 * self.nodes_per_entry {
            self.grow(mask);
        }
    }

    /// Grows the table until it holds at least `entries` entries (or is as large as it
    /// may be): before loading that many.
    pub fn reserve(&self, entries: usize) {
        loop {
            let mask = self.mask.load(Relaxed);
            if mask == self.max_mask || (mask + 1) * WAYS >= entries {
                return;
            }
            self.grow(mask);
        }
    }

    /// Doubles the buckets in use from `mask + 1`, unless another thread did, and copies the
    /// entries whose bucket changed. The copies left behind are stale: a probe never matches
    /// them (their key belongs to another bucket) and a store takes their place first.
    fn grow(&self, mask: usize) {
        let new = mask * 2 + 1;
        if self
            .mask
            .compare_exchange(mask, new, Relaxed, Relaxed)
            .is_err()
        {
            return;
        }
        for b in 0..=mask {
            for w in 0..WAYS {
                let i = b * WAYS * 2 + 2 * w;
                let k = self.words()[i].load(Relaxed);
                let d = self.words()[i + 1].load(Relaxed);
                if k == 0 && d == 0 {
                    continue;
                }
                let key = k ^ d;
                if Table::bucket_of(key, new) != b {
                    self.store(key, Entry::unpack(d));
                }
            }
        }
    }

    /// The entries' words.
    #[inline]
    fn words(&self) -> &[AtomicU64] {
        // SAFETY: the map is page-aligned, `len * 8` bytes long, zero-initialised, and only
        // ever accessed through these atomics; AtomicU64 has the layout of u64.
        unsafe { std::slice::from_raw_parts(self.map.as_ptr() as *const AtomicU64, self.len) }
    }

    /// Entries the table can hold.
    pub fn capacity(&self) -> usize {
        self.len / 2
    }

    /// Bytes of memory used by the entries.
    pub fn bytes(&self) -> usize {
        self.len * 8
    }

    /// Bytes of the buckets in use now (less than [`Table::bytes`] while a table grows).
    pub fn bytes_in_use(&self) -> usize {
        (self.mask.load(Relaxed) + 1) * WAYS * 16
    }

    #[inline]
    fn bucket_of(key: u64, mask: usize) -> usize {
        (key >> 20) as usize & mask
    }

    #[inline]
    fn bucket(&self, key: u64) -> usize {
        Table::bucket_of(key, self.mask.load(Relaxed)) * WAYS * 2
    }

    /// Asks the processor to bring the bucket of `key` into the cache.
    #[inline]
    pub fn prefetch(&self, key: u64) {
        #[cfg(target_arch = "x86_64")]
        {
            let p = self.words()[self.bucket(key)..].as_ptr() as *const i8;
            // SAFETY: prefetching is a hint; the pointer is in bounds of the table.
            unsafe { std::arch::x86_64::_mm_prefetch(p, std::arch::x86_64::_MM_HINT_T0) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = key;
    }

    /// What the table knows about the board with this key.
    #[inline]
    pub fn probe(&self, key: u64) -> Option<Entry> {
        let base = self.bucket(key);
        for w in 0..WAYS {
            let k = self.words()[base + 2 * w].load(Relaxed);
            let d = self.words()[base + 2 * w + 1].load(Relaxed);
            if k ^ d == key {
                return Some(Entry::unpack(d));
            }
        }
        None
    }

    /// Records proven bounds and heuristic knowledge, merged with what is known already about
    /// the same board: proven bounds are intersected, a heuristic part replaces an older one
    /// no deeper than itself, a missing best move keeps the old one. Another board's entry is
    /// replaced when the bucket is full: the one with the least work goes.
    #[inline]
    pub fn store(&self, key: u64, mut e: Entry) {
        let mask = self.mask.load(Relaxed);
        let home = Table::bucket_of(key, mask);
        let base = home * WAYS * 2;
        let mut victim = 0;
        let mut victim_work = u32::MAX;
        for w in 0..WAYS {
            let k = self.words()[base + 2 * w].load(Relaxed);
            let d = self.words()[base + 2 * w + 1].load(Relaxed);
            if k ^ d == key {
                let old = Entry::unpack(d);
                let lower = e.lower.max(old.lower);
                let upper = e.upper.min(old.upper);
                if lower <= upper {
                    e.lower = lower;
                    e.upper = upper;
                    e.work = e.work.max(old.work);
                } else {
                    // Proven bounds never disagree; only a hash collision gets here.
                    e.hkind = H_NONE;
                }
                if e.best == NO_MOVE {
                    e.best = old.best;
                }
                if old.hkind != H_NONE && (e.hkind == H_NONE || e.hdepth < old.hdepth) {
                    e.hval = old.hval;
                    e.hkind = old.hkind;
                    e.hdepth = old.hdepth;
                }
                victim = w;
                break;
            }
            // An empty way, or one left stale by a doubling, goes first.
            let work = if (k == 0 && d == 0) || Table::bucket_of(k ^ d, mask) != home {
                0
            } else {
                1 + Entry::unpack(d).work as u32
            };
            if work < victim_work {
                victim_work = work;
                victim = w;
            }
        }
        let d = e.pack();
        self.words()[base + 2 * victim + 1].store(d, Relaxed);
        self.words()[base + 2 * victim].store(key ^ d, Relaxed);
    }

    /// The share of entries in use, estimated from the first buckets.
    pub fn fill(&self) -> f64 {
        let mask = self.mask.load(Relaxed);
        let n = ((mask + 1) * WAYS).min(1 << 14);
        let used = (0..n)
            .filter(|&i| {
                let (k, d) = (
                    self.words()[2 * i].load(Relaxed),
                    self.words()[2 * i + 1].load(Relaxed),
                );
                (k != 0 || d != 0) && Table::bucket_of(k ^ d, mask) == i / WAYS
            })
            .count();
        used as f64 / n as f64
    }

    /// Every entry in use with at least `min_work` work or exact bounds, as (key, entry).
    pub fn entries(&self, min_work: u8) -> Vec<(u64, Entry)> {
        let mut out = Vec::new();
        let mask = self.mask.load(Relaxed);
        for i in 0..(mask + 1) * WAYS {
            let k = self.words()[2 * i].load(Relaxed);
            let d = self.words()[2 * i + 1].load(Relaxed);
            if (k == 0 && d == 0) || Table::bucket_of(k ^ d, mask) != i / WAYS {
                continue;
            }
            let e = Entry::unpack(d);
            if e.work >= min_work || e.lower == e.upper {
                out.push((k ^ d, Entry::from_word(d)));
            }
        }
        out
    }

    /// Empties the table.
    pub fn clear(&self) {
        let used = (self.mask.load(Relaxed) + 1) * WAYS * 2;
        for w in self.words()[..used].iter() {
            w.store(0, Relaxed);
        }
    }
}

/// The boards some thread is searching now (ABDADA's "busy" mark), so that another thread
/// reaching the same board as a sibling of others takes the others first. A direct-mapped
/// array of keys: a collision only loses a mark, and a stale mark only changes an order, so
/// it is a hint that never affects a value.
pub struct Busy {
    slots: Box<[AtomicU64]>,
}

/// Slots of [`Busy`] (a power of two): far more than the boards that a few threads are
/// searching at once near the root.
const BUSY_SLOTS: usize = 1 << 14;

impl Busy {
    /// An empty set of marks.
    pub fn new() -> Busy {
        Busy {
            slots: (0..BUSY_SLOTS).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    #[inline]
    fn slot(&self, key: u64) -> &AtomicU64 {
        &self.slots[(key >> 8) as usize & (BUSY_SLOTS - 1)]
    }

    /// Whether a thread marked the board of `key` and has not yet unmarked it.
    #[inline]
    pub fn contains(&self, key: u64) -> bool {
        self.slot(key).load(Relaxed) == key
    }

    /// Marks the board of `key` as being searched.
    #[inline]
    pub fn mark(&self, key: u64) {
        self.slot(key).store(key, Relaxed);
    }

    /// Removes the mark of `key`, if it is still there.
    #[inline]
    pub fn unmark(&self, key: u64) {
        let _ = self.slot(key).compare_exchange(key, 0, Relaxed, Relaxed);
    }
}

impl Default for Busy {
    fn default() -> Self {
        Busy::new()
    }
}

/// A direct-mapped cache of database values by board key, in front of the endgame database
/// (whose probes may have to read and decompress a block). One word per entry: the key's top
/// 48 bits and the value.
pub struct LeafCache {
    words: Box<[AtomicU64]>,
    mask: usize,
}

impl LeafCache {
    /// A cache of at most `mb` MiB (at least one entry; none at all for 0).
    pub fn new(mb: usize) -> LeafCache {
        let mut n = 1usize;
        while n * 2 * 8 <= mb << 20 {
            n *= 2;
        }
        let zeros: Box<[u64]> = vec![0u64; if mb == 0 { 0 } else { n }].into_boxed_slice();
        // SAFETY: AtomicU64 has the same size, alignment and bit validity as u64.
        let words = unsafe { Box::from_raw(Box::into_raw(zeros) as *mut [AtomicU64]) };
        LeafCache { words, mask: n - 1 }
    }

    /// Whether the cache holds nothing, ever (made with 0 MiB).
    #[inline]
    pub fn is_off(&self) -> bool {
        self.words.is_empty()
    }

    /// The cached value of the board with this key.
    #[inline]
    pub fn get(&self, key: u64) -> Option<i32> {
        let w = self.words.get(key as usize & self.mask)?.load(Relaxed);
        if w != 0 && w >> 16 == key >> 16 {
            Some(w as u16 as i16 as i32)
        } else {
            None
        }
    }

    /// Remembers a value.
    #[inline]
    pub fn put(&self, key: u64, value: i32) {
        if let Some(slot) = self.words.get(key as usize & self.mask) {
            slot.store((key & !0xffff) | (value as i16 as u16 as u64), Relaxed);
        }
    }

    /// Asks the processor to bring the entry of `key` into the cache.
    #[inline]
    pub fn prefetch(&self, key: u64) {
        #[cfg(target_arch = "x86_64")]
        if let Some(slot) = self.words.get(key as usize & self.mask) {
            // SAFETY: prefetching is a hint; the pointer is in bounds.
            unsafe {
                std::arch::x86_64::_mm_prefetch(
                    slot as *const AtomicU64 as *const i8,
                    std::arch::x86_64::_MM_HINT_T0,
                )
            };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = key;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_marks_and_unmarks() {
        let b = Busy::new();
        let (k1, k2) = (0x1234_5678_9abc_def1u64, 0x0fed_cba9_8765_4321u64);
        assert!(!b.contains(k1));
        b.mark(k1);
        assert!(b.contains(k1) && !b.contains(k2));
        // Another key in the same slot takes it over; unmarking the first leaves it.
        let k3 = k1 ^ (1 << 40);
        b.mark(k3);
        assert!(b.contains(k3) && !b.contains(k1));
        b.unmark(k1);
        assert!(b.contains(k3));
        b.unmark(k3);
        assert!(!b.contains(k3));
    }

    #[test]
    fn heuristic_parts_stay_apart_from_proven_bounds() {
        let t = Table::with_buckets(1);
        let k = 7 << 20;
        let deep = Entry {
            hval: 5,
            hkind: H_LOWER,
            hdepth: 9,
            ..Entry::proven(-10, 10, 2, 3)
        };
        t.store(k, deep);
        // A shallower heuristic value does not replace a deeper one; proven bounds merge.
        t.store(
            k,
            Entry {
                hval: -3,
                hkind: H_EXACT,
                hdepth: 4,
                ..Entry::proven(-6, 12, NO_MOVE, 1)
            },
        );
        let e = t.probe(k).unwrap();
        assert_eq!((e.lower, e.upper, e.best), (-6, 10, 2));
        assert_eq!((e.hval, e.hkind, e.hdepth), (5, H_LOWER, 9));
        assert_eq!(e.heuristic(9), Some((5, i32::MAX)));
        assert_eq!(e.heuristic(10), None);
        // A checkpoint keeps the proven part only.
        let w = Entry::from_word(e.to_word());
        assert_eq!(w, Entry::proven(-6, 10, 2, e.work));
    }

    #[test]
    fn pack_round_trip() {
        for e in [
            Entry::proven(-255, 255, 3, 63),
            Entry::proven(0, 0, NO_MOVE, 0),
            Entry::proven(-3, -1, 7, 12),
            Entry {
                hval: -256,
                hkind: H_UPPER,
                hdepth: 63,
                ..Entry::proven(-3, 9, 2, 5)
            },
            Entry {
                hval: 255,
                hkind: H_EXACT,
                hdepth: 1,
                ..Entry::proven(-30, 30, 2, 5)
            },
        ] {
            assert_eq!(Entry::unpack(e.pack()), e);
        }
    }

    #[test]
    fn store_merges_and_replaces() {
        let t = Table::with_buckets(1);
        let e = |lower, upper, work| Entry::proven(lower, upper, NO_MOVE, work);
        t.store(5 << 20, e(-4, 10, 3));
        t.store(5 << 20, e(-10, 6, 2));
        assert_eq!(t.probe(5 << 20), Some(Entry::proven(-4, 6, NO_MOVE, 3)));
        for k in 1..=4u64 {
            t.store((k << 32) | 1, e(0, 0, 10));
        }
        // The bucket held 5 boards' worth of stores: the least worked one went.
        assert_eq!(t.probe(5 << 20), None);
        assert!(t.probe((1 << 32) | 1).is_some());
    }

    #[test]
    fn a_table_over_a_large_database_grows_more_slowly() {
        // 6 houses: 2^27 boards lie between 18 seeds (86.5 M boards) and 20 (225.8 M).
        assert_eq!(nodes_per_entry(6, -1), 1);
        assert_eq!(nodes_per_entry(6, 18), 1);
        assert_eq!(nodes_per_entry(6, 20), 16);
        assert_eq!(nodes_per_entry(6, 30), 16);
        assert_eq!(nodes_per_entry(4, 30), 1);
        // 16 MiB (1 Mi entries) doubles after 16 Mi nodes, not after 1 Mi.
        let t = Table::growing(GROW_START_MB, 64, 16, true);
        t.note_nodes(16 << 20);
        assert_eq!(t.bytes_in_use(), 16 << 20);
        t.note_nodes(1);
        assert_eq!(t.bytes_in_use(), 32 << 20);
    }

    #[test]
    fn a_growing_table_keeps_its_entries_as_it_doubles() {
        // 16 MiB at first (1 Mi entries), at most 64.
        let t = Table::growing(GROW_START_MB, 64, 1, true);
        assert_eq!((t.bytes(), t.bytes_in_use()), (64 << 20, 16 << 20));
        let keys: Vec<u64> = (1..=50_000u64).map(|i| mix(i) | 1).collect();
        let entry = |i: usize| Entry::proven(-(i as i32 % 9), 7, (i % 6) as u8, 2);
        for (i, &k) in keys.iter().enumerate() {
            t.store(k, entry(i));
        }
        // Nodes below the entries held: no growth; past them, one doubling, then another.
        t.note_nodes(1_000_000);
        assert_eq!(t.bytes_in_use(), 16 << 20);
        t.note_nodes(100_000);
        assert_eq!(t.bytes_in_use(), 32 << 20);
        t.note_nodes(1_200_000);
        assert_eq!(t.bytes_in_use(), 64 << 20);
        // Never past the largest size.
        t.note_nodes(100_000_000);
        assert_eq!(t.bytes_in_use(), 64 << 20);
        // Every entry moved with its bucket: found, unchanged, and listed once.
        let lost = keys.iter().filter(|&&k| t.probe(k).is_none()).count();
        assert!(lost < 10, "{lost} entries lost");
        for (i, &k) in keys.iter().enumerate() {
            if let Some(e) = t.probe(k) {
                assert_eq!(e, entry(i));
            }
        }
        let listed = t.entries(0);
        assert_eq!(listed.len(), keys.len() - lost);
        let mut seen: Vec<u64> = listed.iter().map(|e| e.0).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), listed.len());

        // Stale copies left in an old bucket give way to new entries: fill bucket 0 of a
        // small table with boards that move when it doubles, double it, then store four
        // boards that stay in bucket 0: all four are kept.
        let s = Table::make(4, 1, false, true);
        let moving: Vec<u64> = (0..4u64).map(|i| (i << 40) | (1 << 20)).collect();
        for &k in &moving {
            s.store(k, Entry::proven(2, 2, 0, 30));
        }
        s.grow(0);
        assert!(moving
            .iter()
            .all(|&k| s.probe(k) == Some(Entry::proven(2, 2, 0, 30))));
        let staying: Vec<u64> = (0..4u64).map(|i| (i << 40) | (2 << 20)).collect();
        for &k in &staying {
            s.store(k, Entry::proven(1, 1, 0, 0));
        }
        assert!(staying.iter().all(|&k| s.probe(k).is_some()));
        assert!(moving.iter().all(|&k| s.probe(k).is_some()));

        // `reserve` grows before a load; a fixed table never grows.
        let r = Table::growing(GROW_START_MB, 256, 1, false);
        r.reserve(3_000_000);
        assert_eq!(r.bytes_in_use(), 64 << 20);
        let f = Table::with_buckets(1 << 10);
        f.note_nodes(1 << 30);
        f.reserve(1 << 30);
        assert_eq!(f.bytes_in_use(), f.bytes());
    }

    #[test]
    fn a_prepared_table_is_empty_and_keeps_stores_made_while_it_faults_in() {
        // One test touches the prepared table of the process, so no other test races it.
        prepare(64, true);
        let t = Table::new(64, true);
        assert_eq!(t.bytes(), 64 << 20);
        // Stored at once, beside the thread that faults the pages in: none is lost.
        let keys: Vec<u64> = (1..=20_000u64).map(|i| mix(i) | 1).collect();
        for (i, &k) in keys.iter().enumerate() {
            t.store(k, Entry::proven(-(i as i32 % 7), 5, (i % 6) as u8, 1));
        }
        let lost = keys.iter().filter(|&&k| t.probe(k).is_none()).count();
        // Keys in a full bucket replace each other; 20,000 keys in 1 M buckets rarely do.
        assert!(lost < 10, "{lost} entries lost");
        for (i, &k) in keys.iter().enumerate().take(100) {
            assert_eq!(
                t.probe(k),
                Some(Entry::proven(-(i as i32 % 7), 5, (i % 6) as u8, 1))
            );
        }
        // The prepared table is used once; another size, or a second call, gets a new one.
        prepare(32, true);
        let other = Table::new(64, true);
        assert!(keys.iter().all(|&k| other.probe(k).is_none()));
        let same = Table::new(32, true);
        assert!(keys.iter().all(|&k| same.probe(k).is_none()));
        // A prepared table is not taken by a table that asks otherwise for huge pages.
        prepare(32, true);
        let plain = Table::new(32, false);
        assert!(!plain.huge_pages);
        let prepared = Table::new(32, true);
        assert!(prepared.huge_pages);
    }
}
