//! Level files: corruption of any kind is found and named, never answered from; builds are
//! deterministic, resumable and skip valid levels.

use kalah_solver::db::{self, Codec, Database, DbError, Progress};
use kalah_solver::{Board, Endgame, Rules};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

fn rules() -> Rules {
    Rules::standard(4, 0)
}

const TOP: u32 = 10; // level 10 of 4 houses: 19448 boards, two blocks

fn build(dir: &Path, upto: u32) -> db::BuildReport {
    build_codec(dir, upto, Codec::Zstd)
}

fn files(dir: &Path, upto: u32) -> Vec<Vec<u8>> {
    (0..=upto)
        .map(|l| std::fs::read(db::level_path(dir, l)).unwrap())
        .collect()
}

/// All values of a level from a database known to be good.
fn values(db: &Database, level: u32) -> Vec<i32> {
    (0..db::level_size(4, level))
        .map(|i| db.probe(&db.board_at(level, i).unwrap()).unwrap().unwrap())
        .collect()
}

/// A new directory holding copies of the levels below `top` of `src`: the place to write a
/// damaged level `top`.
fn levels_below(src: &Path, top: u32) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for l in 0..top {
        std::fs::copy(db::level_path(src, l), db::level_path(dir.path(), l)).unwrap();
    }
    dir
}

fn verify(dir: &Path, full: bool) -> db::VerifyReport {
    db::verify(dir, &rules(), full, &|_| {}, &AtomicBool::new(false)).unwrap()
}

/// After damaging the top level file: verify fails naming it, and no probe of that level
/// gives a wrong value, at least one (or the open) reports the corruption.
fn assert_detected(dir: &Path, good_db: &Database, good: &[i32], what: &str) {
    let path = db::level_path(dir, TOP);
    let report = verify(dir, false);
    assert!(!report.ok(), "{what}: verify passed");
    let named = report
        .levels
        .iter()
        .flat_map(|l| &l.problems)
        .chain(&report.problems)
        .any(|p| p.contains(&*path.to_string_lossy()));
    assert!(named, "{what}: problem does not name the file: {report:?}");
    match Database::open(dir, &rules()) {
        Err(e) => {
            assert!(
                e.to_string().contains(&*path.to_string_lossy()),
                "{what}: {e}"
            );
        }
        Ok(db) => {
            let mut errors = 0;
            for (i, &want) in good.iter().enumerate() {
                let b = good_db.board_at(TOP, i as u64).unwrap();
                match db.probe(&b) {
                    Ok(v) => assert_eq!(v, Some(want), "{what}: wrong answer"),
                    Err(e) => {
                        assert!(e.to_string().contains(&*path.to_string_lossy()));
                        errors += 1;
                    }
                }
            }
            assert!(errors > 0, "{what}: every probe answered");
        }
    }
}

#[test]
fn every_flipped_byte_is_detected() {
    for codec in [Codec::Zstd, Codec::Rans, Codec::Grid] {
        every_flipped_byte_is_detected_in(codec);
    }
}

fn every_flipped_byte_is_detected_in(codec: Codec) {
    let good_dir = tempfile::tempdir().unwrap();
    build_codec(good_dir.path(), TOP, codec);
    let good_db = Database::open(good_dir.path(), &rules()).unwrap();
    let good = values(&good_db, TOP);
    let original = std::fs::read(db::level_path(good_dir.path(), TOP)).unwrap();
    assert!(verify(good_dir.path(), true).ok());

    let dir = levels_below(good_dir.path(), TOP);
    let path = db::level_path(dir.path(), TOP);
    // Every byte of the header, model (rans) and block table, then a spread of data bytes
    // covering every block.
    let data = u64::from_le_bytes(original[56..64].try_into().unwrap()) as usize;
    let positions: Vec<usize> = (0..data)
        .chain((data..original.len()).step_by(13))
        .chain([original.len() - 1])
        .collect();
    for &at in &positions {
        for mask in [0x01u8, 0x80] {
            let mut bytes = original.clone();
            bytes[at] ^= mask;
            std::fs::write(&path, &bytes).unwrap();
            assert_detected(
                dir.path(),
                &good_db,
                &good,
                &format!("{codec}: byte {at} ^ {mask:#x}"),
            );
        }
    }
}

#[test]
fn damaged_files_of_every_kind_are_errors() {
    for codec in [Codec::Zstd, Codec::Rans, Codec::Grid] {
        damaged_files_of_every_kind_are_errors_in(codec);
    }
}

fn damaged_files_of_every_kind_are_errors_in(codec: Codec) {
    let good_dir = tempfile::tempdir().unwrap();
    build_codec(good_dir.path(), TOP, codec);
    let good_db = Database::open(good_dir.path(), &rules()).unwrap();
    let good = values(&good_db, TOP);
    let original = std::fs::read(db::level_path(good_dir.path(), TOP)).unwrap();

    let dir = levels_below(good_dir.path(), TOP);
    let path = db::level_path(dir.path(), TOP);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("truncated header", original[..50].to_vec()),
        ("truncated table", original[..140].to_vec()),
        ("truncated data", original[..original.len() - 1].to_vec()),
        ("extended", {
            let mut b = original.clone();
            b.push(0);
            b
        }),
        ("bad magic", {
            let mut b = original.clone();
            b[0] = b'X';
            b
        }),
    ];
    for (what, bytes) in cases {
        std::fs::write(&path, &bytes).unwrap();
        assert_detected(dir.path(), &good_db, &good, &format!("{codec}: {what}"));
    }

    // Magic errors and version errors are told apart.
    let mut b = original.clone();
    b[0] = b'X';
    std::fs::write(&path, &b).unwrap();
    assert!(matches!(
        Database::open(dir.path(), &rules()),
        Err(DbError::NotALevelFile { .. })
    ));
}

#[test]
fn other_rules_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path(), 3);
    for other in [
        Rules {
            capture: kalah_solver::Capture::Empty,
            ..rules()
        },
        Rules {
            end: kalah_solver::EndRule::Mover,
            ..rules()
        },
        Rules::standard(5, 0),
    ] {
        let e = Database::open(dir.path(), &other).unwrap_err();
        assert!(matches!(e, DbError::WrongRules { .. }), "{e}");
        assert!(e.to_string().contains("level-000.kdb"), "{e}");
        assert!(
            !db::verify(dir.path(), &other, false, &|_| {}, &AtomicBool::new(false))
                .unwrap()
                .ok()
        );
    }
    // Building other rules into the directory is refused, and overwrites nothing.
    let before = std::fs::read(db::level_path(dir.path(), 0)).unwrap();
    let e = db::build(
        dir.path(),
        &Rules::standard(5, 0),
        3,
        Codec::Zstd,
        &|_| {},
        &AtomicBool::new(false),
    )
    .unwrap_err();
    assert!(matches!(e, DbError::WrongRules { .. }), "{e}");
    assert_eq!(
        std::fs::read(db::level_path(dir.path(), 0)).unwrap(),
        before
    );
    // The starting seeds do not matter.
    assert!(Database::open(dir.path(), &Rules::standard(4, 6)).is_ok());
    // An empty directory is no database.
    let empty = tempfile::tempdir().unwrap();
    assert!(matches!(
        Database::open(empty.path(), &rules()),
        Err(DbError::Missing { .. })
    ));
}

#[test]
fn builds_are_deterministic_skip_valid_levels_and_repair_bad_ones() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    build(a.path(), TOP);
    build(b.path(), TOP);
    assert_eq!(files(a.path(), TOP), files(b.path(), TOP));

    // A second build skips everything.
    let r = build(a.path(), TOP);
    assert!(r.built.is_empty());
    assert_eq!(r.skipped.len(), TOP as usize + 1);

    // A damaged middle level is rebuilt to the same bytes, the others kept.
    let p = db::level_path(a.path(), 7);
    let mut bytes = std::fs::read(&p).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x10;
    std::fs::write(&p, &bytes).unwrap();
    let r = build(a.path(), TOP);
    assert_eq!(r.built, vec![7]);
    assert_eq!(files(a.path(), TOP), files(b.path(), TOP));

    // A missing level in the middle too; extending the build adds levels.
    std::fs::remove_file(db::level_path(a.path(), 4)).unwrap();
    let r = build(a.path(), TOP + 1);
    assert_eq!(r.built, vec![4, TOP + 1]);
    assert_eq!(files(a.path(), TOP), files(b.path(), TOP));
}

#[test]
fn cancelled_build_resumes_to_identical_files() {
    let fresh = tempfile::tempdir().unwrap();
    build(fresh.path(), TOP);

    let dir = tempfile::tempdir().unwrap();
    let cancel = AtomicBool::new(false);
    let err = db::build(
        dir.path(),
        &rules(),
        TOP,
        Codec::Zstd,
        &|p| {
            if let Progress::Advance { level: 9, .. } = p {
                cancel.store(true, Ordering::SeqCst);
            }
        },
        &cancel,
    )
    .unwrap_err();
    assert!(matches!(err, DbError::Interrupted { .. }), "{err}");
    assert!(db::level_path(dir.path(), 8).exists());
    assert!(!db::level_path(dir.path(), 9).exists());
    // A leftover temporary file does not get in the way.
    std::fs::write(dir.path().join("level-009.kdb.tmp"), b"partial").unwrap();
    let r = build(dir.path(), TOP);
    assert_eq!(r.built, vec![9, 10]);
    assert_eq!(files(dir.path(), TOP), files(fresh.path(), TOP));
    assert!(verify(dir.path(), true).ok());
}

// ---------------------------------------------------------------------------------------------
// Stored (uncompressed) levels.

/// Level 16 of 4 houses: 245157 boards, 479 stored blocks of 512.
const STORED_TOP: u32 = 16;
const STORED_BLOCK: usize = 1 << 9;

fn build_codec(dir: &Path, upto: u32, codec: Codec) -> db::BuildReport {
    db::build(dir, &rules(), upto, codec, &|_| {}, &AtomicBool::new(false)).unwrap()
}

fn convert(src: &Path, dst: &Path, codec: Codec) -> db::ConvertReport {
    db::convert(src, dst, &rules(), codec, &|_| {}, &AtomicBool::new(false)).unwrap()
}

/// Rewrites the header checksum (bytes 120..128) after a deliberate header change.
fn reseal_header(bytes: &mut [u8]) {
    let sum = xxhash_rust::xxh3::xxh3_64(&bytes[..120]);
    bytes[120..128].copy_from_slice(&sum.to_le_bytes());
}

#[test]
fn stored_levels_give_the_zstd_values_and_convert_both_ways() {
    let zstd = tempfile::tempdir().unwrap();
    let stored = tempfile::tempdir().unwrap();
    build_codec(zstd.path(), STORED_TOP, Codec::Zstd);
    build_codec(stored.path(), STORED_TOP, Codec::Stored);
    let zdb = Database::open(zstd.path(), &rules()).unwrap();
    let mut sdb = Database::open(stored.path(), &rules()).unwrap();
    for info in sdb.levels() {
        assert_eq!(info.codec, Codec::Stored);
        assert_eq!(info.block_size as usize, STORED_BLOCK);
        // Header, histogram, table, one byte per position.
        let hist = 8 * (2 * info.level as u64 + 1);
        assert_eq!(info.bytes, 128 + hist + 16 * info.blocks + info.positions);
    }
    assert!(zdb.levels().iter().all(|l| l.codec == Codec::Zstd));
    for l in 0..=STORED_TOP {
        assert_eq!(values(&sdb, l), values(&zdb, l), "level {l}");
    }
    assert!(verify(stored.path(), true).ok());
    assert_eq!(
        sdb.histogram(STORED_TOP).unwrap(),
        zdb.histogram(STORED_TOP).unwrap()
    );
    // Nothing to load: stored levels stay mapped.
    sdb.load_into_memory().unwrap();
    assert_eq!(sdb.memory_bytes(), 0);
    assert_eq!(values(&sdb, STORED_TOP), values(&zdb, STORED_TOP));

    // zstd -> stored gives the stored build, stored -> zstd the zstd build, byte for byte.
    let s2 = tempfile::tempdir().unwrap();
    let r = convert(zstd.path(), s2.path(), Codec::Stored);
    assert_eq!(r.converted.len(), STORED_TOP as usize + 1);
    assert_eq!(
        files(s2.path(), STORED_TOP),
        files(stored.path(), STORED_TOP)
    );
    let z2 = tempfile::tempdir().unwrap();
    convert(s2.path(), z2.path(), Codec::Zstd);
    assert_eq!(files(z2.path(), STORED_TOP), files(zstd.path(), STORED_TOP));
    // Converting again skips what is there; a level in the other codec or damaged is redone.
    let r = convert(s2.path(), z2.path(), Codec::Zstd);
    assert!(r.converted.is_empty());
    assert_eq!(r.skipped.len(), STORED_TOP as usize + 1);
    std::fs::copy(
        db::level_path(stored.path(), 3),
        db::level_path(z2.path(), 3),
    )
    .unwrap();
    let p = db::level_path(z2.path(), 5);
    let mut bytes = std::fs::read(&p).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&p, &bytes).unwrap();
    let r = convert(s2.path(), z2.path(), Codec::Zstd);
    assert_eq!(r.converted, vec![3, 5]);
    assert_eq!(files(z2.path(), STORED_TOP), files(zstd.path(), STORED_TOP));
    // A corrupt source is an error naming it.
    let p = db::level_path(s2.path(), 7);
    let mut bytes = std::fs::read(&p).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&p, &bytes).unwrap();
    let z3 = tempfile::tempdir().unwrap();
    let e = db::convert(
        s2.path(),
        z3.path(),
        &rules(),
        Codec::Zstd,
        &|_| {},
        &AtomicBool::new(false),
    )
    .unwrap_err();
    assert!(e.to_string().contains("level-007.kdb"), "{e}");
}

#[test]
fn a_directory_may_mix_codecs() {
    let good = tempfile::tempdir().unwrap();
    build_codec(good.path(), TOP, Codec::Zstd);
    let dir = tempfile::tempdir().unwrap();
    build_codec(dir.path(), 7, Codec::Zstd);
    // Levels present are kept whatever their codec; new ones are written stored.
    let r = build_codec(dir.path(), TOP, Codec::Stored);
    assert_eq!(r.built, vec![8, 9, 10]);
    let mut db = Database::open(dir.path(), &rules()).unwrap();
    let codecs: Vec<Codec> = db.levels().iter().map(|l| l.codec).collect();
    assert_eq!(codecs[..8], [Codec::Zstd; 8]);
    assert_eq!(codecs[8..], [Codec::Stored; 3]);
    assert!(verify(dir.path(), true).ok());
    db.load_into_memory().unwrap();
    let zstd_bytes: u64 = (0..=7).map(|l| db::level_size(4, l)).sum();
    assert_eq!(db.memory_bytes() as u64, zstd_bytes);
    let gdb = Database::open(good.path(), &rules()).unwrap();
    for l in 0..=TOP {
        assert_eq!(values(&db, l), values(&gdb, l), "level {l}");
    }
    // Rebuilding in the other codec keeps everything.
    let r = build_codec(dir.path(), TOP, Codec::Zstd);
    assert!(r.built.is_empty());
}

#[test]
fn stored_probes_from_many_threads_agree() {
    let dir = tempfile::tempdir().unwrap();
    build_codec(dir.path(), STORED_TOP, Codec::Stored);
    let db = Database::open(dir.path(), &rules()).unwrap();
    let want = {
        let fresh = Database::open(dir.path(), &rules()).unwrap();
        values(&fresh, STORED_TOP)
    };
    let n = want.len() as u64;
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (db, want) = (&db, &want);
            s.spawn(move || {
                for i in (t..n).step_by(7) {
                    let b = db.board_at(STORED_TOP, i).unwrap();
                    assert_eq!(db.probe(&b).unwrap(), Some(want[i as usize]));
                }
            });
        }
    });
}

#[test]
fn reading_in_place_levels_into_the_page_cache_and_locking_them_changes_no_value() {
    let dir = tempfile::tempdir().unwrap();
    build_codec(dir.path(), STORED_TOP, Codec::Stored);
    let want = values(&Database::open(dir.path(), &rules()).unwrap(), STORED_TOP);
    let db = Database::open(dir.path(), &rules()).unwrap();
    let bytes = db.in_place_bytes();
    let on_disk: u64 = db.levels().iter().map(|l| l.bytes).sum();
    assert_eq!(bytes, on_disk, "every stored level is probed in place");
    let seen = std::sync::Mutex::new(Vec::new());
    let read = db
        .read_into_page_cache(true, &|b| seen.lock().unwrap().push(b))
        .unwrap();
    assert_eq!(read, bytes, "evicting reads every file again");
    let seen = seen.into_inner().unwrap();
    assert!(seen.len() >= db.levels().len());
    assert!(seen.windows(2).all(|w| w[0] < w[1]) && seen.last() == Some(&bytes));
    #[cfg(target_os = "linux")]
    assert_eq!(
        db.read_into_page_cache(false, &|_| {}).unwrap(),
        0,
        "files already in memory are not read again"
    );
    // Just read, every in-place byte is in memory (the system says so on Unix).
    #[cfg(unix)]
    assert_eq!(db.in_place_resident_bytes(), bytes);
    assert!(db.in_place_resident_bytes() <= bytes);
    assert_eq!(values(&db, STORED_TOP), want);
    // Locked in memory: every in-place byte, the same values. A system may refuse only for
    // a memory-lock limit below the database's size.
    match db.lock_in_memory() {
        Ok(locked) => assert_eq!(locked, bytes),
        Err(e) => {
            #[cfg(unix)]
            {
                let mut lim = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                // SAFETY: `getrlimit` writes one `rlimit` into the value given.
                let r = unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut lim) };
                assert_eq!(r, 0);
                assert!(
                    lim.rlim_cur < bytes,
                    "refused under a limit of {}: {e}",
                    lim.rlim_cur
                );
            }
            #[cfg(not(unix))]
            let _ = e;
        }
    }
    assert_eq!(values(&db, STORED_TOP), want);
    // Compressed levels are not probed in place: nothing to read, nothing to lock.
    let zstd = tempfile::tempdir().unwrap();
    build_codec(zstd.path(), 8, Codec::Zstd);
    let z = Database::open(zstd.path(), &rules()).unwrap();
    assert_eq!(z.in_place_bytes(), 0);
    assert_eq!(z.in_place_resident_bytes(), 0);
    assert_eq!(z.read_into_page_cache(true, &|_| {}).unwrap(), 0);
    assert_eq!(z.lock_in_memory().unwrap(), 0);
}

/// Boards of the stored top level with their values: a spread over every block, with the
/// first and last board of each.
fn stored_sample(good_db: &Database, good: &[i32]) -> Vec<(usize, Board, i32)> {
    let n = good.len();
    let mut idx: Vec<usize> = (0..n).step_by(97).collect();
    for k in 0..n.div_ceil(STORED_BLOCK) {
        idx.push(k * STORED_BLOCK);
        idx.push(((k + 1) * STORED_BLOCK).min(n) - 1);
    }
    idx.into_iter()
        .map(|i| (i, good_db.board_at(STORED_TOP, i as u64).unwrap(), good[i]))
        .collect()
}

/// After damaging the stored top level: verify fails naming the file; the open fails naming it,
/// or every probe of `sample` into the blocks in `bad_blocks` (all blocks if `None`) is an
/// error naming it, every time, and every other probe answers right.
fn assert_stored_detected(
    dir: &Path,
    sample: &[(usize, Board, i32)],
    bad_blocks: Option<&[usize]>,
    what: &str,
) {
    assert_in_place_detected(dir, sample, STORED_BLOCK, bad_blocks, what)
}

/// [`assert_stored_detected`] for a level probed in place with blocks of `block` positions.
fn assert_in_place_detected(
    dir: &Path,
    sample: &[(usize, Board, i32)],
    block: usize,
    bad_blocks: Option<&[usize]>,
    what: &str,
) {
    let path = db::level_path(dir, STORED_TOP);
    let name = path.to_string_lossy().into_owned();
    let report = verify(dir, false);
    assert!(!report.ok(), "{what}: verify passed");
    let named = report
        .levels
        .iter()
        .flat_map(|l| &l.problems)
        .chain(&report.problems)
        .any(|p| p.contains(&name));
    assert!(named, "{what}: problem does not name the file: {report:?}");
    let db = match Database::open(dir, &rules()) {
        Err(e) => {
            assert!(e.to_string().contains(&name), "{what}: {e}");
            return;
        }
        Ok(db) => db,
    };
    let mut errors = 0;
    for pass in 0..2 {
        for &(i, b, want) in sample {
            let bad = bad_blocks.is_none_or(|k| k.contains(&(i / block)));
            match db.probe(&b) {
                Ok(v) => {
                    assert_eq!(v, Some(want), "{what}: wrong answer at {i}");
                    assert!(
                        !bad,
                        "{what}: probe {i} (pass {pass}) into a bad block answered"
                    );
                }
                Err(e) => {
                    assert!(e.to_string().contains(&name), "{what}: {e}");
                    assert!(bad, "{what}: good block {i}: {e}");
                    errors += 1;
                }
            }
        }
    }
    assert!(errors > 0, "{what}: every probe answered");
}

#[test]
fn stored_files_find_every_damage() {
    let good_dir = tempfile::tempdir().unwrap();
    build_codec(good_dir.path(), STORED_TOP, Codec::Stored);
    let good_db = Database::open(good_dir.path(), &rules()).unwrap();
    let good = values(&good_db, STORED_TOP);
    let sample = stored_sample(&good_db, &good);
    let original = std::fs::read(db::level_path(good_dir.path(), STORED_TOP)).unwrap();
    let blocks = good.len().div_ceil(STORED_BLOCK);
    assert_eq!(blocks, 479);
    // The header, the histogram (a count per value), the table.
    let table = 128 + 8 * (2 * STORED_TOP as usize + 1);
    let data = table + 16 * blocks;
    // The blocks whose table entries and data are damaged: the first two, one in the middle
    // and the last (a short one).
    let chosen = [0, 1, blocks / 2, blocks - 1];
    assert_eq!(original.len(), data + good.len());

    let dir = levels_below(good_dir.path(), STORED_TOP);
    let path = db::level_path(dir.path(), STORED_TOP);
    // Every byte of the header and of the histogram: the open or every probe fails. Every
    // byte of the chosen blocks' table entries: every probe into that block fails (a probe
    // checks its block against its own entry only), the others answer right.
    for at in 0..table {
        let mut bytes = original.clone();
        bytes[at] ^= 0x01;
        std::fs::write(&path, &bytes).unwrap();
        assert_stored_detected(dir.path(), &sample, None, &format!("byte {at}"));
    }
    for at in chosen
        .iter()
        .flat_map(|&k| table + 16 * k..table + 16 * (k + 1))
    {
        let mut bytes = original.clone();
        bytes[at] ^= 0x01;
        std::fs::write(&path, &bytes).unwrap();
        let k = (at - table) / 16;
        assert_stored_detected(dir.path(), &sample, Some(&[k]), &format!("table byte {at}"));
    }
    // Data bytes in the chosen blocks: flipped bits (some out of range), and values changed
    // to another value in range, which only the block checksum sees.
    for k in chosen {
        let len = STORED_BLOCK.min(good.len() - k * STORED_BLOCK);
        for off in [0, 1, len / 2, len - 1] {
            let i = k * STORED_BLOCK + off;
            let v = good[i] as i8;
            let in_range = if v + 2 <= STORED_TOP as i8 {
                v + 2
            } else {
                v - 2
            };
            for (how, b) in [
                ("bit 0x80", (v as u8) ^ 0x80),
                ("bit 0x01", (v as u8) ^ 0x01),
                ("in range", in_range as u8),
            ] {
                let mut bytes = original.clone();
                bytes[data + i] = b;
                std::fs::write(&path, &bytes).unwrap();
                assert_stored_detected(
                    dir.path(),
                    &sample,
                    Some(&[k]),
                    &format!("value {i} (block {k}) {how}"),
                );
            }
        }
    }
    // Truncated and extended files.
    for (what, bytes) in [
        ("truncated", original[..original.len() - 1].to_vec()),
        ("extended", [&original[..], &[0]].concat()),
    ] {
        std::fs::write(&path, &bytes).unwrap();
        assert_stored_detected(dir.path(), &sample, None, what);
    }
}

#[test]
fn stored_blocks_of_the_wrong_length_and_unknown_codecs_are_rejected() {
    let good_dir = tempfile::tempdir().unwrap();
    build_codec(good_dir.path(), STORED_TOP, Codec::Stored);
    let good_db = Database::open(good_dir.path(), &rules()).unwrap();
    let good = values(&good_db, STORED_TOP);
    let sample = stored_sample(&good_db, &good);
    let original = std::fs::read(db::level_path(good_dir.path(), STORED_TOP)).unwrap();
    let dir = levels_below(good_dir.path(), STORED_TOP);
    let path = db::level_path(dir.path(), STORED_TOP);
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let xxh = xxhash_rust::xxh3::xxh3_64;

    // Block 0 one byte short and block 1 one byte long, every checksum made valid: only the
    // length check can see it.
    let mut bytes = original.clone();
    let t = u64_at(&bytes, 48) as usize;
    let data = t + 16 * good.len().div_ceil(STORED_BLOCK);
    let end0 = u64_at(&bytes, t) - 1;
    bytes[t..t + 8].copy_from_slice(&end0.to_le_bytes());
    let sum0 = xxh(&bytes[data..end0 as usize]);
    bytes[t + 8..t + 16].copy_from_slice(&sum0.to_le_bytes());
    let end1 = u64_at(&bytes, t + 16) as usize;
    let sum1 = xxh(&bytes[end0 as usize..end1]);
    bytes[t + 24..t + 32].copy_from_slice(&sum1.to_le_bytes());
    let table_sum = xxh(&bytes[t..data]);
    bytes[72..80].copy_from_slice(&table_sum.to_le_bytes());
    reseal_header(&mut bytes);
    std::fs::write(&path, &bytes).unwrap();
    assert_stored_detected(dir.path(), &sample, Some(&[0, 1]), "wrong block lengths");
    let report = verify(dir.path(), false);
    let text = format!("{report:?}");
    assert!(text.contains("stored block 0 is 511 bytes"), "{text}");

    // Codec 5 is unknown; stored with a codec level is not stored; stored has no model.
    for (at, b, want) in [
        (36, 5u8, "unknown codec 5"),
        (37, 9, "codec level 9"),
        (36, 2, "model of 0 bytes for codec 2"),
        (80, 1, "model of 1 bytes for codec 0"),
    ] {
        let mut bytes = original.clone();
        bytes[at] = b;
        reseal_header(&mut bytes);
        std::fs::write(&path, &bytes).unwrap();
        let e = Database::open(dir.path(), &rules()).unwrap_err();
        assert!(matches!(e, DbError::Corrupt { .. }), "{e}");
        assert!(e.to_string().contains(want), "{e}");
        assert!(e.to_string().contains("level-016.kdb"), "{e}");
    }
}

#[test]
fn model_levels_give_the_same_values_and_reject_bad_models() {
    for codec in [Codec::Rans, Codec::Grid] {
        model_levels_give_the_same_values_and_reject_bad_models_in(codec);
    }
}

/// rans or grid levels (`codec`) against zstd ones.
fn model_levels_give_the_same_values_and_reject_bad_models_in(codec: Codec) {
    let zstd = tempfile::tempdir().unwrap();
    let rans = tempfile::tempdir().unwrap();
    build_codec(zstd.path(), STORED_TOP, Codec::Zstd);
    build_codec(rans.path(), STORED_TOP, codec);
    let zdb = Database::open(zstd.path(), &rules()).unwrap();
    let mut rdb = Database::open(rans.path(), &rules()).unwrap();
    assert!(rdb.levels().iter().all(|l| l.codec == codec));
    for l in 0..=STORED_TOP {
        assert_eq!(values(&rdb, l), values(&zdb, l), "level {l}");
    }
    assert!(verify(rans.path(), true).ok());
    // Loaded into memory, the same values.
    rdb.load_into_memory().unwrap();
    assert_eq!(values(&rdb, STORED_TOP), values(&zdb, STORED_TOP));
    // zstd -> rans gives the rans build, rans -> zstd the zstd build, byte for byte (the
    // same for grid).
    let r2 = tempfile::tempdir().unwrap();
    convert(zstd.path(), r2.path(), codec);
    assert_eq!(files(r2.path(), STORED_TOP), files(rans.path(), STORED_TOP));
    let z2 = tempfile::tempdir().unwrap();
    convert(rans.path(), z2.path(), Codec::Zstd);
    assert_eq!(files(z2.path(), STORED_TOP), files(zstd.path(), STORED_TOP));

    // A model whose checksum is right but whose contents are not: every frequency table
    // must sum to the scale, and the model must be for the level's values.
    let original = std::fs::read(db::level_path(rans.path(), STORED_TOP)).unwrap();
    let dir = levels_below(rans.path(), STORED_TOP);
    let path = db::level_path(dir.path(), STORED_TOP);
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let model_len = u64_at(&original, 80) as usize;
    assert!(model_len > 4);
    // The model follows the header and the histogram.
    let m0 = 128 + u64_at(&original, 96) as usize;
    let good = values(&zdb, STORED_TOP);
    // rans: the last table's last frequency, one more. grid: the level's table (the first,
    // right after the 8-byte head) with no symbols in its 3-byte bitmap.
    let table: Vec<(usize, u8)> = if codec == Codec::Grid {
        vec![(m0 + 8, 0), (m0 + 9, 0), (m0 + 10, 0)]
    } else {
        let at = m0 + model_len - 2;
        vec![(at, original[at].wrapping_add(1))]
    };
    for (what, changes) in [
        ("scale", vec![(m0, original[m0] + 1)]),
        ("bound", vec![(m0 + 1, original[m0 + 1] + 1)]),
        ("table", table),
    ] {
        let mut bytes = original.clone();
        for (at, b) in changes {
            bytes[at] = b;
        }
        let sum = xxhash_rust::xxh3::xxh3_64(&bytes[m0..m0 + model_len]);
        bytes[88..96].copy_from_slice(&sum.to_le_bytes());
        reseal_header(&mut bytes);
        std::fs::write(&path, &bytes).unwrap();
        let report = verify(dir.path(), false);
        assert!(!report.ok(), "{what}");
        assert!(
            format!("{report:?}").contains("bad model"),
            "{what}: {report:?}"
        );
        let db = Database::open(dir.path(), &rules()).unwrap();
        for i in (0..good.len()).step_by(97) {
            let b = zdb.board_at(STORED_TOP, i as u64).unwrap();
            let e = db.probe(&b).unwrap_err();
            assert!(e.to_string().contains("level-016.kdb"), "{what}: {e}");
            assert!(e.to_string().contains("bad model"), "{what}: {e}");
        }
    }
}

/// Rewrites a level file of version 2 or 3 (not grid: its model changed in version 3) as
/// version 1 wrote it: no histogram (every offset after
/// it moved back), header bytes 96..112 zero.
fn as_version_1(v2: &[u8]) -> Vec<u8> {
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let put = |b: &mut [u8], at: usize, x: u64| b[at..at + 8].copy_from_slice(&x.to_le_bytes());
    let hist = u64_at(v2, 96);
    assert!(hist > 0);
    let mut b = [&v2[..128], &v2[128 + hist as usize..]].concat();
    b[8..12].copy_from_slice(&1u32.to_le_bytes());
    b[96..112].fill(0);
    for at in [48, 56, 64] {
        let x = u64_at(&b, at) - hist;
        put(&mut b, at, x);
    }
    let (t, d) = (u64_at(&b, 48) as usize, u64_at(&b, 56) as usize);
    for e in (t..d).step_by(16) {
        let x = u64_at(&b, e) - hist;
        put(&mut b, e, x);
    }
    let sum = xxhash_rust::xxh3::xxh3_64(&b[t..d]);
    put(&mut b, 72, sum);
    reseal_header(&mut b);
    b
}

#[test]
fn version_1_files_are_read_and_newer_versions_refused() {
    // (Grid models are written more compactly since version 3: the grid files of versions 1
    // and 2 are golden files, read by `grid_files_of_versions_1_and_2_are_read`.)
    for codec in [Codec::Rans, Codec::Zstd, Codec::Stored] {
        let good_dir = tempfile::tempdir().unwrap();
        build_codec(good_dir.path(), TOP, codec);
        let good_db = Database::open(good_dir.path(), &rules()).unwrap();
        let good = values(&good_db, TOP);
        let hist = good_db.histogram(TOP).unwrap();
        // The stored histogram counts the values.
        let mut counted = vec![0u64; 2 * TOP as usize + 1];
        for &v in &good {
            counted[(v + TOP as i32) as usize] += 1;
        }
        assert_eq!(hist, counted, "{codec}");

        let original = std::fs::read(db::level_path(good_dir.path(), TOP)).unwrap();
        let dir = levels_below(good_dir.path(), TOP);
        let path = db::level_path(dir.path(), TOP);
        // Version 1: the same values, the histogram counted by decoding, verify passes.
        std::fs::write(&path, as_version_1(&original)).unwrap();
        let db1 = Database::open(dir.path(), &rules()).unwrap();
        assert_eq!(values(&db1, TOP), good, "{codec}");
        assert_eq!(db1.histogram(TOP).unwrap(), hist, "{codec}");
        assert!(verify(dir.path(), true).ok(), "{codec}");
        // A build keeps it (valid) and leaves it as it is.
        let report = build_codec(dir.path(), TOP, codec);
        assert!(report.built.is_empty(), "{codec}: {report:?}");
        assert_eq!(std::fs::read(&path).unwrap(), as_version_1(&original));

        // Version 4 (or 0) is refused with a version error naming the file.
        for version in [0u32, 4] {
            let mut b = original.clone();
            b[8..12].copy_from_slice(&version.to_le_bytes());
            reseal_header(&mut b);
            std::fs::write(&path, &b).unwrap();
            let e = Database::open(dir.path(), &rules()).unwrap_err();
            assert!(matches!(e, DbError::Version { .. }), "{e}");
            assert!(e.to_string().contains("level-010.kdb"), "{e}");
            assert!(e.to_string().contains("versions 1 to 3"), "{e}");
        }

        // A histogram with a valid checksum that does not count the values: the open and the
        // probes do not look, verify does.
        let mut b = original.clone();
        let at = 128 + 8 * (TOP as usize + 2); // the count of value +2...
        let moved = 1u64;
        let c = u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
        b[at..at + 8].copy_from_slice(&(c - moved).to_le_bytes());
        let at0 = 128 + 8 * TOP as usize; // ...one of them counted as 0 instead
        let c0 = u64::from_le_bytes(b[at0..at0 + 8].try_into().unwrap());
        b[at0..at0 + 8].copy_from_slice(&(c0 + moved).to_le_bytes());
        let h = u64::from_le_bytes(b[96..104].try_into().unwrap()) as usize;
        let sum = xxhash_rust::xxh3::xxh3_64(&b[128..128 + h]);
        b[104..112].copy_from_slice(&sum.to_le_bytes());
        reseal_header(&mut b);
        std::fs::write(&path, &b).unwrap();
        let report = verify(dir.path(), false);
        assert!(!report.ok(), "{codec}");
        let text = format!("{report:?}");
        assert!(text.contains("level-010.kdb"), "{text}");
        assert!(
            text.contains("histogram does not match the values (value 0:"),
            "{text}"
        );
        // Counts that do not add up to the level's positions are refused at open.
        let mut b = original.clone();
        b[at0..at0 + 8].copy_from_slice(&(c0 + moved).to_le_bytes());
        let sum = xxhash_rust::xxh3::xxh3_64(&b[128..128 + h]);
        b[104..112].copy_from_slice(&sum.to_le_bytes());
        reseal_header(&mut b);
        std::fs::write(&path, &b).unwrap();
        let e = Database::open(dir.path(), &rules()).unwrap_err();
        assert!(e.to_string().contains("histogram counts"), "{e}");
    }
}

/// Levels 0..=8 of 4 houses (standard rules) in the grid codec, as the writers of format
/// versions 1 and 2 left them (`tests/golden/grid-v1-h4`, `grid-v2-h4`).
const GOLDEN_TOP: u32 = 8;

#[test]
fn grid_files_of_versions_1_and_2_are_read() {
    let fresh = tempfile::tempdir().unwrap();
    build_codec(fresh.path(), GOLDEN_TOP, Codec::Grid);
    let fresh_db = Database::open(fresh.path(), &rules()).unwrap();
    let version =
        |path: &Path| u32::from_le_bytes(std::fs::read(path).unwrap()[8..12].try_into().unwrap());
    assert_eq!(version(&db::level_path(fresh.path(), GOLDEN_TOP)), 3);
    for (v, name) in [(1, "grid-v1-h4"), (2, "grid-v2-h4")] {
        let golden = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/golden")
            .join(name);
        let dir = tempfile::tempdir().unwrap();
        for l in 0..=GOLDEN_TOP {
            let path = db::level_path(dir.path(), l);
            std::fs::copy(db::level_path(&golden, l), &path).unwrap();
            assert_eq!(version(&path), v, "{name}");
        }
        let db = Database::open(dir.path(), &rules()).unwrap();
        assert_eq!(db.max_seeds(), GOLDEN_TOP);
        assert!(db.levels().iter().all(|i| i.codec == Codec::Grid), "{name}");
        for l in 0..=GOLDEN_TOP {
            assert_eq!(values(&db, l), values(&fresh_db, l), "{name} level {l}");
            assert_eq!(db.histogram(l).unwrap(), fresh_db.histogram(l).unwrap());
        }
        assert!(verify(dir.path(), true).ok(), "{name}");
        // A build keeps them as they are and writes the next level in the current version.
        let before = files(dir.path(), GOLDEN_TOP);
        let report = build_codec(dir.path(), GOLDEN_TOP + 1, Codec::Grid);
        assert_eq!(report.built, vec![GOLDEN_TOP + 1], "{name}");
        assert_eq!(files(dir.path(), GOLDEN_TOP), before, "{name}");
        assert_eq!(version(&db::level_path(dir.path(), GOLDEN_TOP + 1)), 3);
        // Converted into a new directory, they become the current version's files, byte for
        // byte what a build writes.
        let out = tempfile::tempdir().unwrap();
        convert(dir.path(), out.path(), Codec::Grid);
        assert_eq!(
            files(out.path(), GOLDEN_TOP),
            files(fresh.path(), GOLDEN_TOP),
            "{name}"
        );
    }
}

/// Search-form levels (`--codec search`) of the stored top level, with their file layout.
struct SearchFile {
    bytes: Vec<u8>,
    table: usize,
    data: usize,
    exceptions: usize,
    blocks: usize,
}

fn search_file(path: &Path) -> SearchFile {
    let bytes = std::fs::read(path).unwrap();
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
    let (table, data, positions) = (u64_at(48), u64_at(56), u64_at(24));
    SearchFile {
        table,
        data,
        exceptions: data + positions.div_ceil(SEARCH_BLOCK) * SEARCH_STRIDE,
        blocks: (data - table) / 16,
        bytes,
    }
}

const SEARCH_BLOCK: usize = 4096;
/// Bytes of a search block: 16 bases (one per 256 positions), then 2048 bytes of nibbles.
const SEARCH_STRIDE: usize = 16 + 2048;

impl SearchFile {
    /// Where the nibble of position `i` lies.
    fn nibble(&self, i: usize) -> usize {
        self.data + i / SEARCH_BLOCK * SEARCH_STRIDE + 16 + i % SEARCH_BLOCK / 2
    }
}

#[test]
fn search_levels_give_the_stored_values_and_convert_both_ways() {
    let stored = tempfile::tempdir().unwrap();
    let search = tempfile::tempdir().unwrap();
    build_codec(stored.path(), STORED_TOP, Codec::Stored);
    build_codec(search.path(), STORED_TOP, Codec::Search);
    let sdb = Database::open(stored.path(), &rules()).unwrap();
    let mut fdb = Database::open(search.path(), &rules()).unwrap();
    let mut exceptions = 0;
    for info in fdb.levels() {
        assert_eq!(info.codec, Codec::Search);
        assert_eq!(info.block_size as usize, SEARCH_BLOCK);
        // Header, histogram, table, blocks of 2064 bytes, three bytes per exception.
        let hist = 8 * (2 * info.level as u64 + 1);
        let f = search_file(&info.path);
        assert_eq!(f.data as u64, 128 + hist + 16 * info.blocks);
        assert_eq!(f.exceptions as u64, f.data as u64 + 2064 * info.blocks);
        assert_eq!((f.bytes.len() - f.exceptions) % 3, 0);
        exceptions += (f.bytes.len() - f.exceptions) / 3;
    }
    // Level 16's values spread over 17 symbols, more than a block's window of 15.
    assert!(exceptions > 0, "no exception to test");
    for l in 0..=STORED_TOP {
        assert_eq!(values(&fdb, l), values(&sdb, l), "level {l}");
    }
    assert!(verify(search.path(), true).ok());
    assert_eq!(
        fdb.histogram(STORED_TOP).unwrap(),
        sdb.histogram(STORED_TOP).unwrap()
    );
    // Nothing to load: search levels stay mapped.
    fdb.load_into_memory().unwrap();
    assert_eq!(fdb.memory_bytes(), 0);
    assert_eq!(values(&fdb, STORED_TOP), values(&sdb, STORED_TOP));
    // stored -> search gives the search build, search -> stored (and grid) the builds in
    // those codecs, byte for byte.
    let f2 = tempfile::tempdir().unwrap();
    convert(stored.path(), f2.path(), Codec::Search);
    assert_eq!(
        files(f2.path(), STORED_TOP),
        files(search.path(), STORED_TOP)
    );
    let s2 = tempfile::tempdir().unwrap();
    convert(search.path(), s2.path(), Codec::Stored);
    assert_eq!(
        files(s2.path(), STORED_TOP),
        files(stored.path(), STORED_TOP)
    );
    let grid = tempfile::tempdir().unwrap();
    build_codec(grid.path(), STORED_TOP, Codec::Grid);
    let g2 = tempfile::tempdir().unwrap();
    convert(search.path(), g2.path(), Codec::Grid);
    assert_eq!(files(g2.path(), STORED_TOP), files(grid.path(), STORED_TOP));
}

#[test]
fn search_files_find_every_damage() {
    let good_dir = tempfile::tempdir().unwrap();
    build_codec(good_dir.path(), STORED_TOP, Codec::Search);
    let good_db = Database::open(good_dir.path(), &rules()).unwrap();
    let good = values(&good_db, STORED_TOP);
    let path0 = db::level_path(good_dir.path(), STORED_TOP);
    let f = search_file(&path0);
    let blocks = good.len().div_ceil(SEARCH_BLOCK);
    assert_eq!(f.blocks, blocks);
    // Every block probed at several places, escaped positions included.
    let escaped: Vec<usize> = (0..good.len())
        .filter(|&i| (f.bytes[f.nibble(i)] >> (4 * (i % 2))) & 15 == 15)
        .collect();
    assert!(!escaped.is_empty());
    let mut idx: Vec<usize> = (0..good.len()).step_by(61).collect();
    for k in 0..blocks {
        idx.push(k * SEARCH_BLOCK);
        idx.push(((k + 1) * SEARCH_BLOCK).min(good.len()) - 1);
    }
    idx.extend(escaped.iter().step_by(7));
    let sample: Vec<(usize, Board, i32)> = idx
        .into_iter()
        .map(|i| (i, good_db.board_at(STORED_TOP, i as u64).unwrap(), good[i]))
        .collect();
    let dir = levels_below(good_dir.path(), STORED_TOP);
    let path = db::level_path(dir.path(), STORED_TOP);
    let check = |bytes: &[u8], bad: Option<&[usize]>, what: &str| {
        std::fs::write(&path, bytes).unwrap();
        assert_in_place_detected(dir.path(), &sample, SEARCH_BLOCK, bad, what);
    };
    // Header and histogram: the open or every probe fails.
    for at in (0..f.table).step_by(3) {
        let mut bytes = f.bytes.clone();
        bytes[at] ^= 0x01;
        check(&bytes, None, &format!("byte {at}"));
    }
    // A block's table entry: its checksum is its own; the index of its first exception is
    // also the end of the block before.
    let chosen = [0, 1, blocks / 2, blocks - 1];
    for k in chosen {
        for b in 0..16 {
            let at = f.table + 16 * k + b;
            let mut bytes = f.bytes.clone();
            bytes[at] ^= if b == 7 { 0x80 } else { 0x01 };
            let bad: &[usize] = if b < 8 && k > 0 { &[k - 1, k] } else { &[k] };
            check(&bytes, Some(bad), &format!("table byte {at} (block {k})"));
        }
    }
    // Bases and nibbles of the chosen blocks, an escaped one's included.
    for k in chosen {
        for j in [0, 1, 15] {
            let mut bytes = f.bytes.clone();
            bytes[f.data + k * SEARCH_STRIDE + j] ^= 0x01;
            check(&bytes, Some(&[k]), &format!("base {j} of block {k}"));
        }
    }
    let esc = escaped[escaped.len() / 2];
    for i in chosen
        .iter()
        .flat_map(|&k| {
            [
                k * SEARCH_BLOCK,
                (k + 1).min(blocks) * SEARCH_BLOCK / 2 + k * SEARCH_BLOCK / 2,
            ]
        })
        .chain([esc])
        .filter(|&i| i < good.len())
    {
        for mask in [0x01u8, 0x10, 0xf0] {
            let mut bytes = f.bytes.clone();
            bytes[f.nibble(i)] ^= mask;
            let k = i / SEARCH_BLOCK;
            check(&bytes, Some(&[k]), &format!("nibble {i} ^ {mask:#x}"));
        }
    }
    // The padding past the level's end, in the last block.
    assert!(good.len() % SEARCH_BLOCK < SEARCH_BLOCK - 2 * 256);
    for at in [f.exceptions - 1, f.data + (blocks - 1) * SEARCH_STRIDE + 15] {
        let mut bytes = f.bytes.clone();
        bytes[at] ^= 0x10;
        check(&bytes, Some(&[blocks - 1]), &format!("padding byte {at}"));
    }
    // Every byte of an exception entry: its block fails.
    let first_exception_block = escaped[0] / SEARCH_BLOCK;
    for b in 0..3 {
        let mut bytes = f.bytes.clone();
        bytes[f.exceptions + b] ^= 0x01;
        check(
            &bytes,
            Some(&[first_exception_block]),
            &format!("exception byte {b}"),
        );
    }
    // Truncated and extended files (by a byte, and by a whole exception).
    for (what, bytes) in [
        ("truncated", f.bytes[..f.bytes.len() - 1].to_vec()),
        ("extended", [&f.bytes[..], &[0]].concat()),
        ("extended by 3", [&f.bytes[..], &[0, 0, 0]].concat()),
    ] {
        check(&bytes, None, what);
    }
}
