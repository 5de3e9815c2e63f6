//! Checkpointed runs interrupted and resumed give the answers of uninterrupted runs; the pie
//! rule agrees with a naive computation.

mod common;

use common::MemEndgame;
use kalah_driver::{Goal, Search, SearchConfig, SearchError};
use kalah_solver::{Board, Endgame, Exhaustive, Rules};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

fn config(checkpoint: Option<std::path::PathBuf>, node_limit: Option<u64>) -> SearchConfig {
    SearchConfig {
        tt_mb: 4,
        threads: 2,
        checkpoint,
        node_limit,
        checkpoint_min_work: 0,
        ..SearchConfig::default()
    }
}

#[test]
fn interrupted_and_resumed_runs_agree_with_uninterrupted_ones() {
    let never = AtomicBool::new(false);
    let dir = tempfile::tempdir().unwrap();
    for (rules, all_moves, goal) in [
        (Rules::standard(5, 3), false, Goal::Exact),
        (Rules::standard(4, 4), true, Goal::Exact),
        (
            Rules {
                capture: kalah_solver::Capture::Empty,
                ..Rules::standard(5, 3)
            },
            true,
            Goal::Sign { around: 0 },
        ),
    ] {
        let board = Board::start(&rules);
        let whole = Search::new(rules, config(None, None))
            .analyse(&board, all_moves, goal, &|_| {}, &never)
            .unwrap();
        let path = dir
            .path()
            .join(format!("{}-{}.ck", rules.slug(), rules.seeds));
        // Interrupt again and again with a small node budget; each run continues the last.
        let mut interruptions = 0;
        let resumed = loop {
            let search = Search::new(rules, config(Some(path.clone()), Some(whole.nodes / 8 + 1)));
            match search.analyse(&board, all_moves, goal, &|_| {}, &never) {
                Ok(a) => break a,
                Err(SearchError::Interrupted { checkpoint, .. }) => {
                    assert_eq!(checkpoint.as_deref(), Some(path.as_path()));
                    interruptions += 1;
                    assert!(interruptions < 100, "no progress across resumptions");
                }
                Err(e) => panic!("{e}"),
            }
        };
        assert!(interruptions > 0, "{rules}: the node limit never struck");
        assert!(resumed.resumed);
        assert_eq!(resumed.value, whole.value, "{rules}");
        assert_eq!((resumed.lower, resumed.upper), (whole.lower, whole.upper));
        if all_moves {
            assert_eq!(resumed.moves, whole.moves, "{rules}");
        }
        // A finished checkpoint answers at once, the same.
        let again = Search::new(rules, config(Some(path.clone()), None))
            .analyse(&board, all_moves, goal, &|_| {}, &never)
            .unwrap();
        assert_eq!(again.value, whole.value);
        // The same file for another problem is refused.
        let other = Search::new(rules, config(Some(path.clone()), None)).analyse(
            &board,
            !all_moves,
            goal,
            &|_| {},
            &never,
        );
        assert!(matches!(other, Err(SearchError::Checkpoint(_))));
    }
}

#[test]
fn cancellation_stops_the_search_and_saves() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.ck");
    let rules = Rules::standard(6, 3);
    let cancel = AtomicBool::new(true);
    let search = Search::new(rules, config(Some(path.clone()), None));
    let r = search.analyse(&Board::start(&rules), false, Goal::Exact, &|_| {}, &cancel);
    assert!(matches!(r, Err(SearchError::Interrupted { .. })), "{r:?}");
    assert!(path.exists());
}

/// South's margin after each first turn, by brute force: every chain of moves while the turn
/// stays with South, valued by the exhaustive search.
fn naive_pie(rules: &Rules, ex: &mut Exhaustive, board: &Board, gain: i32) -> i32 {
    let mut least = i32::MAX;
    for h in board.legal_houses() {
        let s = board.sow(rules, h);
        let g = gain + s.gain as i32;
        let next = s.next();
        let m = if s.extra_turn {
            if let Some(v) = next.final_value(rules) {
                (g + v).abs()
            } else {
                -naive_pie(rules, ex, &next, g)
            }
        } else {
            (g - ex.value(&next)).abs()
        };
        least = least.min(m);
    }
    -least
}

#[test]
fn pie_rule_agrees_with_a_naive_computation() {
    let never = AtomicBool::new(false);
    for (m, n) in [(2usize, 2u32), (2, 4), (3, 2), (3, 3), (4, 2)] {
        for rules in Rules::all_variants(m, n) {
            let mut ex = Exhaustive::new(rules);
            let board = Board::start(&rules);
            let want = naive_pie(&rules, &mut ex, &board, 0);
            let db: Arc<dyn Endgame> = Arc::new(MemEndgame::new(&rules, 3));
            for endgame in [None, Some(db)] {
                let search = Search::new(
                    rules,
                    SearchConfig {
                        tt_mb: 1,
                        threads: 2,
                        endgame,
                        ..SearchConfig::default()
                    },
                );
                let pie = search.pie(&board, &|_| {}, &never).unwrap();
                assert_eq!(pie.value, want, "{rules}");
                assert!(!pie.best.is_empty());
                for t in &pie.turns {
                    // Replay the turn: South keeps the move until the last one.
                    let mut b = board;
                    let mut g = 0;
                    let mut last = None;
                    for (i, &h) in t.moves.iter().enumerate() {
                        let s = b.sow(&rules, h);
                        g += s.gain as i32;
                        if i + 1 < t.moves.len() {
                            assert!(s.extra_turn, "{rules} {:?}", t.moves);
                        }
                        b = s.next();
                        last = Some(s);
                    }
                    assert_eq!(g, t.south_gain);
                    let exact = if last.unwrap().extra_turn {
                        g + b
                            .final_value(&rules)
                            .expect("a turn ends with the turn or the game")
                    } else {
                        g - ex.value(&b)
                    };
                    if t.exact {
                        assert_eq!(t.margin, exact, "{rules} {:?}", t.moves);
                    } else {
                        assert_eq!(t.margin.signum(), exact.signum());
                        assert!(t.margin.abs() <= exact.abs() && exact.abs() > -pie.value);
                    }
                }
            }
        }
    }
}
