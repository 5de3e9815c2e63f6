//! The search agrees with the memoised exhaustive search and the naive reference minimax on
//! random boards for every rule variant, with and without an endgame table, with tiny tables
//! (replacement), tables that grow, and with one and two threads.

mod common;
#[path = "../../../tests/reference.rs"]
mod reference;

use common::MemEndgame;
use kalah_driver::{Goal, Search, SearchConfig};
use kalah_solver::{Board, Endgame, Exhaustive, Rules};
use reference::{ref_board_value, ref_move_values, RefState, Rng};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

fn config(threads: usize, endgame: Option<Arc<dyn Endgame>>) -> SearchConfig {
    SearchConfig {
        // Alternate between a four-entry table (constant replacement) and a real one.
        tt_mb: threads - 1,
        threads,
        endgame,
        ..SearchConfig::default()
    }
}

#[test]
fn values_and_moves_agree_for_every_variant() {
    let mut rng = Rng(0x5eed_0001);
    let never = AtomicBool::new(false);
    let mut checked = 0;
    for m in 1..=4usize {
        for rules in Rules::all_variants(m, 0) {
            let mut ex = Exhaustive::new(rules);
            let db: Arc<dyn Endgame> = Arc::new(MemEndgame::new(&rules, 3));
            for (i, threads) in [1usize, 2].into_iter().enumerate() {
                for with_db in [false, true] {
                    let search = Search::new(rules, config(threads, with_db.then(|| db.clone())));
                    let max_seeds = [0, 12, 10, 9, 8][m];
                    for _ in 0..6 {
                        let seeds = rng.below(max_seeds + 1) as u32;
                        let (a, b) = rng.board(m, seeds);
                        let board = Board::new(&a, &b);
                        let an = search
                            .analyse(&board, true, Goal::Exact, &|_| {}, &never)
                            .unwrap();
                        assert_eq!(an.value, ex.value(&board), "{rules} {board}");
                        if i == 0 && !with_db {
                            assert_eq!(an.value as i64, ref_board_value(&rules, &a, &b));
                            let want = ref_move_values(&rules, &RefState::from_sides(&a, &b));
                            let got: Vec<(usize, i64)> =
                                an.moves.iter().map(|&(h, v)| (h, v as i64)).collect();
                            if board.final_value(&rules).is_none() {
                                assert_eq!(got, want, "{rules} {board}");
                            }
                        }
                        for &(h, v) in &an.moves {
                            assert_eq!(v, ex.move_value(&board, h), "{rules} {board} {h}");
                        }
                        // The value alone, and the sign goal around a few pivots.
                        let v = search.value(&board).unwrap();
                        assert_eq!(v, an.value);
                        for around in [-1, 0, 1, v] {
                            let s = search
                                .analyse(&board, false, Goal::Sign { around }, &|_| {}, &never)
                                .unwrap();
                            assert_eq!(s.value, v.clamp(around - 1, around + 1));
                            assert!(s.lower <= v && v <= s.upper);
                        }
                        checked += 1;
                    }
                }
            }
        }
    }
    assert!(checked > 1500, "{checked}");
}

/// Replays a principal variation and checks that every move keeps the value.
fn check_pv(rules: &Rules, ex: &mut Exhaustive, board: &Board, value: i32, pv: &[usize]) {
    let mut b = *board;
    let mut v = value;
    for &h in pv {
        assert!(
            b.final_value(rules).is_none() && b.cells()[h] > 0,
            "{board} pv {pv:?}"
        );
        assert_eq!(ex.move_value(&b, h), v, "{board} pv {pv:?}");
        b = b.sow(rules, h).next();
        v = ex.value(&b);
    }
    assert!(
        b.final_value(rules).is_some(),
        "{board} pv {pv:?} stops early"
    );
}

#[test]
fn principal_variations_are_played_out_and_keep_the_value() {
    let mut rng = Rng(77);
    let never = AtomicBool::new(false);
    for m in 2..=4usize {
        for rules in Rules::all_variants(m, 0) {
            let mut ex = Exhaustive::new(rules);
            let search = Search::new(rules, config(2, None));
            for _ in 0..8 {
                let seeds = 4 + rng.below(6) as u32;
                let (a, b) = rng.board(m, seeds);
                let board = Board::new(&a, &b);
                let an = search
                    .analyse(&board, false, Goal::Exact, &|_| {}, &never)
                    .unwrap();
                check_pv(&rules, &mut ex, &board, an.value, &an.pv);
                if let Some(&(h, v)) = an.moves.first() {
                    assert_eq!(v, an.value);
                    assert_eq!(ex.move_value(&board, h), an.value);
                }
            }
        }
    }
}

#[test]
fn start_positions_with_tiny_tables_and_databases() {
    // Whole games from the start.
    let never = AtomicBool::new(false);
    for (m, n) in [(3usize, 2u32), (3, 3), (4, 2), (2, 4)] {
        for rules in Rules::all_variants(m, n) {
            let mut ex = Exhaustive::new(rules);
            let board = Board::start(&rules);
            let want = ex.value(&board);
            for db_seeds in [None, Some(4)] {
                let db: Option<Arc<dyn Endgame>> =
                    db_seeds.map(|k| Arc::new(MemEndgame::new(&rules, k)) as Arc<dyn Endgame>);
                for (threads, grow) in [(1, false), (2, false), (1, true), (2, true)] {
                    let mut c = config(threads, db.clone());
                    if grow {
                        // From one bucket, doubling as the nodes pass the entries, up to 1
                        // MiB: many doublings, beside the other thread's probes and stores.
                        c.tt_mb = 1;
                        c.tt_grow = Some(0);
                    }
                    let search = Search::new(rules, c);
                    let an = search
                        .analyse(&board, true, Goal::Exact, &|_| {}, &never)
                        .unwrap();
                    assert_eq!(an.value, want, "{rules}");
                    for &(h, v) in &an.moves {
                        assert_eq!(v, ex.move_value(&board, h));
                    }
                    if grow && an.nodes > 4096 {
                        assert!(
                            search.table().bytes_in_use() > 64,
                            "{rules}: the table never grew"
                        );
                    }
                }
            }
        }
    }
}
