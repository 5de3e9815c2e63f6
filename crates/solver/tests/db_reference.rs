//! Every database value agrees with the naive reference minimax, for every rule variant:
//! all boards of the tiny levels, random samples above.

#[path = "../../../tests/reference.rs"]
mod reference;

use kalah_solver::db::{self, Database};
use kalah_solver::{Board, Endgame, Rules};
use reference::{ref_board_value, Rng};
use std::sync::atomic::AtomicBool;

/// Builds a database in one of the codecs, in turn (so that every codec is read back against
/// the reference).
fn build(rules: &Rules, upto: u32) -> (tempfile::TempDir, Database) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static TURN: AtomicUsize = AtomicUsize::new(0);
    let codecs = [
        db::Codec::Grid,
        db::Codec::Rans,
        db::Codec::Zstd,
        db::Codec::Stored,
        db::Codec::Search,
    ];
    let codec = codecs[TURN.fetch_add(1, Ordering::Relaxed) % codecs.len()];
    let dir = tempfile::tempdir().unwrap();
    db::build(
        dir.path(),
        rules,
        upto,
        codec,
        &|_| {},
        &AtomicBool::new(false),
    )
    .unwrap();
    let db = Database::open(dir.path(), rules).unwrap();
    (dir, db)
}

#[test]
fn all_variants_agree_with_reference() {
    let mut rng = Rng(0xdb_5eed);
    let mut checked = 0u64;
    for m in 1..=4usize {
        // (all boards up to this level, samples up to this level)
        let (all_upto, upto) = [(0, 0), (14, 14), (6, 12), (4, 10), (3, 8)][m];
        for rules in Rules::all_variants(m, 0) {
            let (_dir, db) = build(&rules, upto);
            assert_eq!(db.max_seeds(), upto);
            for l in 0..=all_upto {
                for i in 0..db::level_size(m, l) {
                    let b = db.board_at(l, i).unwrap();
                    let want = ref_board_value(&rules, b.mover(), b.opponent());
                    assert_eq!(db.probe(&b).unwrap(), Some(want as i32), "{rules} [{b}]");
                    checked += 1;
                }
            }
            for l in all_upto + 1..=upto {
                for _ in 0..6 {
                    let (a, o) = rng.board(m, l);
                    let b = Board::new(&a, &o);
                    let want = ref_board_value(&rules, &a, &o);
                    assert_eq!(db.probe(&b).unwrap(), Some(want as i32), "{rules} [{b}]");
                    checked += 1;
                }
            }
            // Beyond the top level: no answer.
            let (a, o) = rng.board(m, upto + 1);
            assert_eq!(db.probe(&Board::new(&a, &o)).unwrap(), None);
        }
    }
    assert!(checked > 10_000, "{checked}");
}

#[test]
fn six_houses_samples_agree_with_reference() {
    let mut rng = Rng(6);
    for rules in Rules::all_variants(6, 0) {
        let (_dir, db) = build(&rules, 6);
        for l in 0..=6 {
            for _ in 0..4 {
                let (a, o) = rng.board(6, l);
                let want = ref_board_value(&rules, &a, &o);
                let b = Board::new(&a, &o);
                assert_eq!(db.probe(&b).unwrap(), Some(want as i32), "{rules} [{b}]");
            }
        }
    }
}

/// Samples of a large database built by `kalah db build` (standard rules, 6 houses), checked
/// against the engine's exhaustive search and, for small levels, the reference minimax.
/// `KALAH_TEST_DB=data/db/h6-standard-owner-either cargo test --release -- --ignored`
#[test]
#[ignore]
fn built_database_samples_agree() {
    let Some(dir) = std::env::var_os("KALAH_TEST_DB") else {
        panic!("set KALAH_TEST_DB to a database directory of standard 6-house rules");
    };
    let rules = Rules::standard(6, 0);
    let db = Database::open(std::path::Path::new(&dir), &rules).unwrap();
    let mut rng = Rng(2024);
    let mut ex = kalah_solver::Exhaustive::new(rules);
    for l in 0..=db.max_seeds().min(18) {
        for _ in 0..40 {
            let (a, o) = rng.board(6, l);
            let b = Board::new(&a, &o);
            let got = db.probe(&b).unwrap();
            assert_eq!(got, Some(ex.value(&b)), "[{b}]");
            if l <= 9 {
                assert_eq!(got, Some(ref_board_value(&rules, &a, &o) as i32), "[{b}]");
            }
        }
    }
}
