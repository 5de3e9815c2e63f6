//! Unit tests of the database against the memoised exhaustive search.

use super::reader::LevelFile;
use super::*;
use crate::endgame::Endgame;
use crate::exhaustive::Exhaustive;
use crate::rules::Rules;
use std::sync::atomic::AtomicBool;

fn build_tmp(rules: &Rules, upto: u32) -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    build(
        dir.path(),
        rules,
        upto,
        Codec::Zstd,
        &|_| {},
        &AtomicBool::new(false),
    )
    .unwrap();
    let db = Database::open(dir.path(), rules).unwrap();
    (dir, db)
}

#[test]
fn every_board_agrees_with_exhaustive_search() {
    for m in 1..=3usize {
        for rules in Rules::all_variants(m, 0) {
            let upto = [0, 10, 7, 5][m];
            let (_dir, db) = build_tmp(&rules, upto);
            assert_eq!(db.max_seeds(), upto);
            let mut ex = Exhaustive::new(rules);
            for l in 0..=upto {
                for i in 0..level_size(m, l) {
                    let b = db.board_at(l, i).unwrap();
                    assert_eq!(
                        db.probe(&b).unwrap(),
                        Some(ex.value(&b)),
                        "{rules} level {l} board {b}"
                    );
                }
            }
        }
    }
}

/// Rewrites level `level` of `dir` with one value changed, every checksum valid.
fn tamper(dir: &std::path::Path, rules: &Rules, level: u32, index: usize) {
    let n = level_size(rules.houses, level);
    let path = format::level_path(dir, level);
    let file = LevelFile::open(&path, rules, level, n).unwrap();
    let mut values = file.read_all().unwrap();
    drop(file);
    // Another legal value of the same parity, so that no range check can catch it.
    let l = level as i8;
    values[index] = if values[index] + 2 <= l {
        values[index] + 2
    } else {
        values[index] - 2
    };
    std::fs::remove_file(&path).unwrap();
    writer::write_level(dir, rules, level, &values, Codec::Zstd).unwrap();
}

#[test]
fn full_verify_finds_a_wrong_value_with_valid_checksums() {
    let rules = Rules::standard(3, 0);
    let dir = tempfile::tempdir().unwrap();
    build(
        dir.path(),
        &rules,
        8,
        Codec::Zstd,
        &|_| {},
        &AtomicBool::new(false),
    )
    .unwrap();
    let ok = verify(dir.path(), &rules, true, &|_| {}, &AtomicBool::new(false)).unwrap();
    assert!(ok.ok(), "{ok:?}");
    assert!(ok.levels.iter().all(|l| l.recomputed));

    tamper(dir.path(), &rules, 6, 100);
    // Checksums alone cannot see it...
    let quick = verify(dir.path(), &rules, false, &|_| {}, &AtomicBool::new(false)).unwrap();
    assert!(quick.ok());
    // ...recomputation does, and names the file.
    let full = verify(dir.path(), &rules, true, &|_| {}, &AtomicBool::new(false)).unwrap();
    assert!(!full.ok());
    let bad: Vec<_> = full
        .levels
        .iter()
        .filter(|l| !l.problems.is_empty())
        .collect();
    assert_eq!(bad[0].level, 6, "{full:?}");
    assert!(bad[0].problems[0].contains("level-006.kdb"), "{full:?}");
    assert!(bad[0].problems[0].contains("disagree"), "{full:?}");
}

#[test]
fn probes_from_many_threads_agree() {
    let rules = Rules::standard(4, 0);
    let (_dir, db) = build_tmp(&rules, 9);
    let n = level_size(4, 9);
    let want: Vec<Option<i32>> = (0..n)
        .map(|i| db.probe(&db.board_at(9, i).unwrap()).unwrap())
        .collect();
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (db, want) = (&db, &want);
            s.spawn(move || {
                // Strided so that the threads fight over the block cache.
                for i in (t..n).step_by(3) {
                    let b = db.board_at(9, i).unwrap();
                    assert_eq!(db.probe(&b).unwrap(), want[i as usize]);
                }
            });
        }
    });
}

/// The search codec on values no build makes: spread over the whole range (many exceptions),
/// with and without the parity of the level (steps 2 and 1), every value read back from the
/// map and by a whole-level read, and every block checked.
#[test]
fn search_levels_hold_any_values() {
    let rules = Rules::standard(3, 0);
    let level = 30;
    let n = level_size(3, level) as usize;
    for parity in [true, false] {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let values: Vec<i8> = (0..n)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Mostly near a value that drifts along the level, now and then anything.
                let v = if x.is_multiple_of(16) {
                    (x >> 8) % 61
                } else {
                    ((i / 700) % 40 + ((x >> 8) % 21) as usize) as u64
                } as i8
                    - 30;
                if parity && (v & 1) == 1 {
                    v + if v < 30 { 1 } else { -1 }
                } else {
                    v
                }
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        writer::write_level(dir.path(), &rules, level, &values, Codec::Search).unwrap();
        let file = LevelFile::open(
            &format::level_path(dir.path(), level),
            &rules,
            level,
            n as u64,
        )
        .unwrap();
        assert_eq!(file.header().codec_level, if parity { 2 } else { 1 });
        let escaped = (file.file_len() - codecs::search::exceptions_offset(file.header()))
            / codecs::search::EXCEPTION_LEN as u64;
        assert!(escaped as usize > n / 40, "{escaped} exceptions");
        for (i, &v) in values.iter().enumerate() {
            assert_eq!(file.in_place_value(i as u64).unwrap(), v, "index {i}");
        }
        let all = file.read_all().unwrap();
        assert_eq!(&all[..], &values[..]);
        file.check_all().unwrap();
    }
}
