//! Level files: corruption of any kind is found and named, never answered from; builds are
//! deterministic, resumable and skip valid levels.

use kalah_solver::db::{self, Codec, Database, DbError, Progress};
use kalah_solver::{Endgame, Rules};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

fn rules() -> Rules {
    Rules::standard(4, 0)
}

const TOP: u32 = 10; // level 10 of 4 houses: 19448 boards, two blocks

fn build(dir: &Path, upto: u32) -> db::BuildReport {
    db::build(
        dir,
        &rules(),
        upto,
        Codec::Zstd,
        &|_| {},
        &AtomicBool::new(false),
    )
    .unwrap()
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
    let good_dir = tempfile::tempdir().unwrap();
    build(good_dir.path(), TOP);
    let good_db = Database::open(good_dir.path(), &rules()).unwrap();
    let good = values(&good_db, TOP);
    let original = std::fs::read(db::level_path(good_dir.path(), TOP)).unwrap();
    assert!(verify(good_dir.path(), true).ok());

    let dir = tempfile::tempdir().unwrap();
    for l in 0..TOP {
        std::fs::copy(
            db::level_path(good_dir.path(), l),
            db::level_path(dir.path(), l),
        )
        .unwrap();
    }
    let path = db::level_path(dir.path(), TOP);
    // Every byte of the header and block table (first 128 + 2 * 16 bytes), then a spread of
    // data bytes covering both blocks.
    let positions: Vec<usize> = (0..160)
        .chain((160..original.len()).step_by(13))
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
                &format!("byte {at} ^ {mask:#x}"),
            );
        }
    }
}

#[test]
fn damaged_files_of_every_kind_are_errors() {
    let good_dir = tempfile::tempdir().unwrap();
    build(good_dir.path(), TOP);
    let good_db = Database::open(good_dir.path(), &rules()).unwrap();
    let good = values(&good_db, TOP);
    let original = std::fs::read(db::level_path(good_dir.path(), TOP)).unwrap();

    let dir = tempfile::tempdir().unwrap();
    for l in 0..TOP {
        std::fs::copy(
            db::level_path(good_dir.path(), l),
            db::level_path(dir.path(), l),
        )
        .unwrap();
    }
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
        assert_detected(dir.path(), &good_db, &good, what);
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
