//! Builds and full verifies with the lower levels packed in half a byte per position (as for
//! databases larger than half the machine's memory) give the same files and findings as with
//! one byte per position. (A test file of its own: the memory budget is set for the whole
//! process.)

use kalah_solver::db::{self, Codec};
use kalah_solver::rules::Capture;
use kalah_solver::Rules;
use std::sync::atomic::AtomicBool;

#[test]
fn packed_lower_levels_build_the_same_files() {
    let no = AtomicBool::new(false);
    for rules in [
        Rules::standard(4, 0),
        Rules {
            capture: Capture::Empty,
            ..Rules::standard(6, 0)
        },
    ] {
        let top = if rules.houses == 4 { 14 } else { 9 };
        let full = tempfile::tempdir().unwrap();
        db::build(full.path(), &rules, top, Codec::Search, &|_| {}, &no).unwrap();
        // No memory for one byte a value: every lower level held packed.
        let none = db::MemoryBudget(0);
        let packed = tempfile::tempdir().unwrap();
        db::build_with(
            packed.path(),
            &rules,
            top,
            Codec::Search,
            none,
            &|_| {},
            &no,
        )
        .unwrap();
        for l in 0..=top {
            assert_eq!(
                std::fs::read(db::level_path(packed.path(), l)).unwrap(),
                std::fs::read(db::level_path(full.path(), l)).unwrap(),
                "{rules} level {l}"
            );
        }
        let report = db::verify_with(packed.path(), &rules, true, none, &|_| {}, &no).unwrap();
        assert!(report.ok(), "{report:?}");
        assert!(report.levels.iter().all(|l| l.recomputed));
    }
}
