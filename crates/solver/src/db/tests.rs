//! Unit tests of the database against the memoised exhaustive search.

use super::*;
use crate::exhaustive::Exhaustive;

fn build_tmp(rules: &Rules, upto: u32) -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path(), rules, upto, &|_| {}, &AtomicBool::new(false)).unwrap();
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
