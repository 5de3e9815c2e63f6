//! The endgame database reader on untrusted level files: every outcome of opening, probing,
//! loading and verifying is a value or a clean `DbError`, never a panic, a hang or an abort,
//! and a file whose checksums were not recomputed never yields a wrong value.
//!
//! A small valid database (4 houses, standard rules, levels 0..=8: up to 6435 boards a level,
//! several blocks for stored and rans levels) is built once per process in each codec, and
//! kept in format versions 1 and 2 too (grid: the golden files of `tests/golden`). The
//! directory tried holds stored levels (cheap to open, load and verify), but for the one level
//! an input replaces, in the codec and version it picks (a directory may mix codecs):
//!
//! - byte 0: bits 0-1 the codec (stored, zstd, rans, grid); bits 2-3 the format version of the
//!   valid file (3, 3, 2, 1); bit 4: recompute every checksum (histogram, model, block table,
//!   blocks, header; a search level's block sums over their exceptions too) so that the
//!   structural checks behind them are reached; bit 5: set the
//!   header's file length to the real one; bit 6: the rest is the file itself (else a patch of
//!   the valid file); bit 7: load the database into memory before probing (else after), then
//!   verify the directory.
//! - byte 1: bits 0-1 the level (8, 6, 1, 0); bit 2: the verification recomputes every
//!   value from its children (`kalah db verify --full`); bit 3: the search codec instead of
//!   the one byte 0 picks (format version 3 only: it has no other).
//! - patch: a `u16` length (0: keep the valid file's), then `(u16 offset, xor byte)` triples;
//!   its last six bytes also pick boards to probe.
#![no_main]

use kalah_solver::db::{self, Codec, Database, DbError};
use kalah_solver::{Endgame, Rules};
use libfuzzer_sys::fuzz_target;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::OnceLock;
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

const HOUSES: usize = 4;
const TOP: u32 = 8;
const LEVELS: [u32; 4] = [TOP, 6, 1, 0];
/// `CODECS[0]` is stored, like every level of the directory tried.
const CODECS: [Codec; 5] = [
    Codec::Stored,
    Codec::Zstd,
    Codec::Rans,
    Codec::Grid,
    Codec::Search,
];
/// The search codec's index in [`CODECS`], and its bytes in the header and of a block.
const SEARCH: usize = 4;
const CODEC_SEARCH: u8 = 4;
const SEARCH_BLOCK: u64 = 4096;
const SEARCH_STRIDE: u64 = 16 + SEARCH_BLOCK / 2;
const EXCEPTION_LEN: u64 = 3;
/// The format version of the valid file each value of bits 2-3 picks.
const VERSIONS: [u32; 4] = [3, 3, 2, 1];
/// The largest level file tried (the valid ones are a few KiB).
const MAX_FILE: usize = 1 << 16;
const HEADER_LEN: usize = 128;

struct Fixture {
    _root: tempfile::TempDir,
    /// The directory tried: every level stored, valid between inputs.
    dir: PathBuf,
    /// The valid files: `good[codec][version - 1][level]`.
    good: Vec<Vec<Vec<Vec<u8>>>>,
    /// The values of each level, by index.
    values: Vec<Vec<i32>>,
    /// A database known to be good, for the boards of each index.
    reference: Database,
}

fn rules() -> Rules {
    Rules::standard(HOUSES, 0)
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

fn reseal_header(b: &mut [u8]) {
    let sum = xxh3_64(&b[..120]);
    put_u64(b, 120, sum);
}

/// A valid version 3 file (not grid) as version 2 wrote it: the same bytes but the version.
fn as_version_2(v3: &[u8]) -> Vec<u8> {
    let mut b = v3.to_vec();
    b[8..12].copy_from_slice(&2u32.to_le_bytes());
    reseal_header(&mut b);
    b
}

/// A valid version 3 file (not grid) as version 1 wrote it: no histogram (every offset after
/// it moved back), header bytes 96..112 zero.
fn as_version_1(v3: &[u8]) -> Vec<u8> {
    let hist = u64_at(v3, 96).expect("header");
    let mut b = [&v3[..HEADER_LEN], &v3[HEADER_LEN + hist as usize..]].concat();
    b[8..12].copy_from_slice(&1u32.to_le_bytes());
    b[96..112].fill(0);
    for at in [48, 56, 64] {
        let x = u64_at(&b, at).expect("header") - hist;
        put_u64(&mut b, at, x);
    }
    let (t, d) = (
        u64_at(&b, 48).expect("header") as usize,
        u64_at(&b, 56).expect("header") as usize,
    );
    for e in (t..d).step_by(16) {
        let x = u64_at(&b, e).expect("entry") - hist;
        put_u64(&mut b, e, x);
    }
    let sum = xxh3_64(&b[t..d]);
    put_u64(&mut b, 72, sum);
    reseal_header(&mut b);
    b
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build_global();
        let root = tempfile::tempdir().expect("temp dir");
        let no = AtomicBool::new(false);
        let src = root.path().join("src");
        db::build(&src, &rules(), TOP, Codec::Grid, &|_| {}, &no).expect("build");
        let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden");
        let mut good = Vec::new();
        for codec in CODECS {
            let dir = root.path().join(codec.name());
            db::convert(&src, &dir, &rules(), codec, &|_| {}, &no).expect("convert");
            let v3: Vec<Vec<u8>> = (0..=TOP)
                .map(|l| std::fs::read(db::level_path(&dir, l)).expect("read level"))
                .collect();
            let old = |v: u32| -> Vec<Vec<u8>> {
                if codec == Codec::Grid {
                    // Grid models were written wider before version 3: the golden files.
                    let dir = golden.join(format!("grid-v{v}-h4"));
                    (0..=TOP)
                        .map(|l| std::fs::read(db::level_path(&dir, l)).expect("golden file"))
                        .collect()
                } else if codec == Codec::Search {
                    // Written in version 3 only: the version bits pick it too.
                    v3.clone()
                } else if v == 1 {
                    v3.iter().map(|f| as_version_1(f)).collect()
                } else {
                    v3.iter().map(|f| as_version_2(f)).collect()
                }
            };
            good.push(vec![old(1), old(2), v3]);
        }
        let dir = root.path().join("try");
        db::convert(&src, &dir, &rules(), Codec::Stored, &|_| {}, &no).expect("convert");
        let reference = Database::open(&src, &rules()).expect("open");
        let values = (0..=TOP)
            .map(|l| {
                (0..db::level_size(HOUSES, l))
                    .map(|i| {
                        let b = reference.board_at(l, i).expect("board");
                        reference.probe(&b).expect("probe").expect("value")
                    })
                    .collect()
            })
            .collect();
        let f = Fixture {
            _root: root,
            dir,
            good,
            values,
            reference,
        };
        // Every valid file gives the valid values.
        for (codec, files) in CODECS.iter().zip(&f.good) {
            for v in VERSIONS {
                for l in LEVELS {
                    let path = db::level_path(&f.dir, l);
                    std::fs::write(&path, &files[v as usize - 1][l as usize]).expect("write level");
                    let r = probe_all(&f, l, false, true, &[]);
                    assert!(r.is_ok(), "{codec} version {v} level {l}: {r:?}");
                    std::fs::write(&path, &f.good[0][2][l as usize]).expect("restore level");
                }
            }
        }
        f
    })
}

/// The byte range `start..end` if it lies in `b`.
fn range(b: &[u8], start: u64, end: u64) -> Option<std::ops::Range<usize>> {
    (start <= end && end <= b.len() as u64).then_some(start as usize..end as usize)
}

/// Recomputes the block sums of a search level (FORMAT.md: over the block's first exception,
/// the next block's, its bytes and its exceptions) where the header's fields find them.
fn reseal_search_blocks(b: &mut [u8], table: std::ops::Range<usize>, data_offset: u64) {
    let (Some(positions), Some(file_len)) = (u64_at(b, 24), u64_at(b, 64)) else {
        return;
    };
    let blocks = positions.div_ceil(SEARCH_BLOCK);
    let Some(exc_offset) = blocks
        .checked_mul(SEARCH_STRIDE)
        .and_then(|x| x.checked_add(data_offset))
    else {
        return;
    };
    let count = file_len.saturating_sub(exc_offset) / EXCEPTION_LEN;
    let entries = (table.end - table.start) / 16;
    for i in 0..entries.min(blocks as usize) {
        let at = table.start + 16 * i;
        let first = u64_at(b, at).unwrap_or(0);
        let end = if i + 1 < entries {
            u64_at(b, at + 16).unwrap_or(0)
        } else {
            count
        };
        let start = data_offset + i as u64 * SEARCH_STRIDE;
        let (Some(bytes), Some(exc)) = (
            range(b, start, start + SEARCH_STRIDE),
            first
                .checked_mul(EXCEPTION_LEN)
                .zip(end.checked_mul(EXCEPTION_LEN))
                .and_then(|(f, e)| range(b, exc_offset.checked_add(f)?, exc_offset.checked_add(e)?)),
        ) else {
            continue;
        };
        let mut h = Xxh3::new();
        h.update(&first.to_le_bytes());
        h.update(&end.to_le_bytes());
        h.update(&b[bytes]);
        h.update(&b[exc]);
        let sum = h.digest();
        put_u64(b, at + 8, sum);
    }
}

/// Recomputes every checksum the header's fields let us find, as a writer would.
fn reseal(b: &mut [u8], fix_len: bool) {
    if b.len() < HEADER_LEN {
        return;
    }
    if fix_len {
        let len = b.len() as u64;
        put_u64(b, 64, len);
    }
    let hist_len = u64_at(b, 96).unwrap_or(0);
    let model_len = u64_at(b, 80).unwrap_or(0);
    let table_offset = u64_at(b, 48).unwrap_or(0);
    let data_offset = u64_at(b, 56).unwrap_or(0);
    let model_start = (HEADER_LEN as u64).saturating_add(hist_len);
    // (Version 1 files have neither histogram nor checksum: that field must stay zero.)
    if hist_len > 0 {
        if let Some(r) = range(b, HEADER_LEN as u64, model_start) {
            let sum = xxh3_64(&b[r]);
            put_u64(b, 104, sum);
        }
    }
    if model_len > 0 {
        if let Some(r) = range(b, model_start, model_start.saturating_add(model_len)) {
            let sum = xxh3_64(&b[r]);
            put_u64(b, 88, sum);
        }
    }
    if b[36] == CODEC_SEARCH {
        if let Some(t) = range(b, table_offset, data_offset) {
            reseal_search_blocks(b, t.clone(), data_offset);
            let sum = xxh3_64(&b[t]);
            put_u64(b, 72, sum);
        }
    } else if let Some(t) = range(b, table_offset, data_offset) {
        let mut prev = data_offset;
        let mut at = t.start;
        while at + 16 <= t.end {
            let end = u64_at(b, at).unwrap_or(0);
            if let Some(r) = range(b, prev, end) {
                let sum = xxh3_64(&b[r]);
                put_u64(b, at + 8, sum);
            }
            prev = end;
            at += 16;
        }
        let sum = xxh3_64(&b[t]);
        put_u64(b, 72, sum);
    }
    reseal_header(b);
}

/// The level file an input stands for.
fn file_of(good: &[u8], raw: bool, data: &[u8]) -> Vec<u8> {
    if raw {
        return data.to_vec();
    }
    let mut file = good.to_vec();
    let (len, patches) = match data {
        [a, b, rest @ ..] => (u16::from_le_bytes([*a, *b]) as usize, rest),
        _ => (0, data),
    };
    if len != 0 {
        file.resize(len, 0);
    }
    if file.is_empty() {
        return file;
    }
    for p in patches.chunks_exact(3) {
        let at = u16::from_le_bytes([p[0], p[1]]) as usize % file.len();
        file[at] ^= p[2];
    }
    file
}

/// Checks one answer: an error, or a value in range that (unless the file was resealed) is
/// the right one.
fn check(r: Result<Option<i32>, DbError>, level: u32, want: i32, trusted: bool) {
    match r {
        Err(e) => {
            let _ = e.to_string();
        }
        Ok(None) => panic!("level {level} is open but a probe gave no value"),
        Ok(Some(v)) => {
            assert!(v.unsigned_abs() <= level, "value {v} at level {level}");
            if trusted {
                assert_eq!(
                    v, want,
                    "a damaged file gave a wrong value at level {level}"
                );
            }
        }
    }
}

fn run(f: &Fixture, level: u32, load_first: bool, full: bool, trusted: bool, picks: &[u8]) {
    if let Err(e) = probe_all(f, level, load_first, trusted, picks) {
        let _ = e.to_string();
    }
    if load_first {
        // What `kalah db verify` does: every level checked (and with `full` recomputed from
        // its children), problems reported, not raised.
        let no = AtomicBool::new(false);
        let report = db::verify(&f.dir, &rules(), full, &|_| {}, &no).expect("verify runs");
        let _ = report.ok();
    }
}

fn probe_all(
    f: &Fixture,
    level: u32,
    load_first: bool,
    trusted: bool,
    picks: &[u8],
) -> Result<(), DbError> {
    let values = &f.values[level as usize];
    let n = values.len() as u64;
    let mut indexes = vec![0, n - 1, n / 2];
    for c in picks.chunks_exact(2).take(3) {
        indexes.push(u16::from_le_bytes([c[0], c[1]]) as u64 % n);
    }
    let mut db = Database::open(&f.dir, &rules())?;
    assert_eq!(db.max_seeds(), TOP);
    assert_eq!(db.levels().len(), TOP as usize + 1);
    if load_first {
        db.load_into_memory()?;
    }
    for &i in &indexes {
        let board = f.reference.board_at(level, i).expect("board");
        // Twice: the second probe of a block or sub-block decodes it whole; the second
        // located by a prefetch, as the search does.
        check(db.probe(&board), level, values[i as usize], trusted);
        let place = db.prefetch(&board);
        assert_eq!(place, Some(i));
        check(
            db.probe_located(&board, place),
            level,
            values[i as usize],
            trusted,
        );
    }
    if let Ok(h) = db.histogram(level) {
        assert_eq!(h.len(), 2 * level as usize + 1);
    }
    if !load_first {
        db.load_into_memory()?;
        for &i in &indexes {
            let board = f.reference.board_at(level, i).expect("board");
            check(db.probe(&board), level, values[i as usize], trusted);
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let [sel, lvl, rest @ ..] = data else {
        return;
    };
    if rest.len() > MAX_FILE {
        return;
    }
    let f = fixture();
    let c = if lvl & 8 != 0 {
        SEARCH
    } else {
        (sel & 3) as usize
    };
    let version = VERSIONS[(sel >> 2 & 3) as usize];
    let resealed = sel & 0x10 != 0;
    let fix_len = sel & 0x20 != 0;
    let raw = sel & 0x40 != 0;
    let load_first = sel & 0x80 != 0;
    let level = LEVELS[(lvl & 3) as usize];
    let full = lvl & 4 != 0;
    let good = &f.good[c][version as usize - 1][level as usize];
    let picks = if raw {
        &[][..]
    } else {
        &rest[rest.len().saturating_sub(6)..]
    };
    let mut file = file_of(good, raw, rest);
    if resealed {
        reseal(&mut file, fix_len);
    }
    let path = db::level_path(&f.dir, level);
    std::fs::write(&path, &file).expect("write level");
    // A file of the valid bytes must hold the valid values, resealed or not.
    let trusted = !resealed || file == *good;
    run(f, level, load_first, full, trusted, picks);
    std::fs::write(&path, &f.good[0][2][level as usize]).expect("restore level");
});
