//! The engine's rules agree with the naive reference minimax on thousands of random positions,
//! for every combination of the rule variants.

#[path = "../../../tests/reference.rs"]
mod reference;

use kalah_solver::{Board, Exhaustive, Rules};
use reference::{ref_board_value, ref_move_values, RefState, Rng};

#[test]
fn values_agree_for_every_variant() {
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let mut checked = 0;
    for m in 1..=4usize {
        for rules in Rules::all_variants(m, 0) {
            let mut engine = Exhaustive::new(rules);
            let max_seeds = [0, 14, 12, 10, 8][m];
            for _ in 0..120 {
                let seeds = rng.below(max_seeds + 1) as u32;
                let (a, b) = rng.board(m, seeds);
                let board = Board::new(&a, &b);
                let want = ref_board_value(&rules, &a, &b);
                assert_eq!(engine.value(&board) as i64, want, "{rules} {board}");
                // Every move's value too.
                let state = RefState::from_sides(&a, &b);
                if board.final_value(&rules).is_none() {
                    for (h, v) in ref_move_values(&rules, &state) {
                        assert_eq!(
                            engine.move_value(&board, h) as i64,
                            v,
                            "{rules} {board} house {}",
                            h + 1
                        );
                    }
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 2000, "{checked}");
}

#[test]
fn lapping_boards_agree() {
    // Sowings of 2m+1 seeds and more lap the board and feed the origin house.
    let mut rng = Rng(42);
    for m in 1..=3usize {
        for rules in Rules::all_variants(m, 0) {
            let mut engine = Exhaustive::new(rules);
            for _ in 0..20 {
                let mut cells = vec![0u8; 2 * m];
                let big = (2 * m + 1) as u64 + rng.below(2 * m as u64 + 3);
                cells[rng.below(m as u64) as usize] = big as u8;
                for _ in 0..rng.below(4) {
                    cells[rng.below(2 * m as u64) as usize] += 1;
                }
                let (a, b) = cells.split_at(m);
                let board = Board::new(a, b);
                assert_eq!(
                    engine.value(&board) as i64,
                    ref_board_value(&rules, a, b),
                    "{rules} {board}"
                );
            }
        }
    }
}
