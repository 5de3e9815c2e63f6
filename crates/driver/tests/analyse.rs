//! `Analyser::analyse`, the answer of `kalah query` and `kalah serve`: the values of a position
//! and of each move agree with the naive reference minimax for every rule variant, whether
//! they come from the database or the search; a deadline gives bounds that hold; a raised
//! cancel flag and a missing search are errors.

#[path = "../../../tests/reference.rs"]
mod reference;

use kalah_driver::analyse::{AnalyseError, Analyser, SearchSource, Source};
use kalah_driver::book::Books;
use kalah_driver::{Search, SearchConfig};
use kalah_solver::db::{self, Codec, Database};
use kalah_solver::{Board, Rules};
use reference::{ref_board_value, ref_move_values, RefState, Rng};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// A search made on first use, counting how often it was asked for.
struct Lazy {
    rules: Rules,
    search: Option<Search>,
    asked: usize,
}

impl SearchSource for Lazy {
    fn search(&mut self) -> Result<&Search, AnalyseError> {
        self.asked += 1;
        let rules = self.rules;
        Ok(self.search.get_or_insert_with(|| {
            Search::new(
                rules,
                SearchConfig {
                    tt_mb: 1,
                    threads: 1,
                    ..SearchConfig::default()
                },
            )
        }))
    }
}

/// No search to be had, as a server whose searches are all busy.
struct Busy;

impl SearchSource for Busy {
    fn search(&mut self) -> Result<&Search, AnalyseError> {
        Err(AnalyseError::NoSearch("busy".into()))
    }
}

const DB_SEEDS: u32 = 5;

fn database(rules: &Rules, dir: &std::path::Path) -> Database {
    let no = AtomicBool::new(false);
    db::build(dir, rules, DB_SEEDS, Codec::Search, &|_| {}, &no).unwrap();
    Database::open(dir, rules).unwrap()
}

#[test]
fn values_agree_with_the_reference_from_the_database_and_the_search() {
    let mut rng = Rng(0xa11a_1e5e);
    let never = AtomicBool::new(false);
    let far = Instant::now() + Duration::from_secs(3600);
    let books = Books::none();
    let (mut from_db, mut searched) = (0, 0);
    for rules in Rules::all_variants(3, 0) {
        let dir = tempfile::tempdir().unwrap();
        let db = database(&rules, dir.path());
        let mut lazy = Lazy {
            rules,
            search: None,
            asked: 0,
        };
        for with_db in [true, false] {
            let analyser = Analyser {
                rules: &rules,
                books: &books,
                db: with_db.then_some(&db),
            };
            for _ in 0..12 {
                let seeds = rng.below(10) as u32;
                let (a, b) = rng.board(3, seeds);
                let board = Board::new(&a, &b);
                let asked = lazy.asked;
                let got = analyser
                    .analyse(&board, &mut lazy, far, &never, &mut |_| {})
                    .unwrap();
                let want = ref_board_value(&rules, &a, &b) as i32;
                assert!(got.exact(), "{rules} {board}: {got:?}");
                assert_eq!((got.lower, got.upper), (want, want), "{rules} {board}");
                let moves: Vec<(usize, i64)> = got
                    .moves
                    .iter()
                    .map(|m| (m.house, m.lower as i64))
                    .collect();
                assert_eq!(
                    moves,
                    ref_move_values(&rules, &RefState::from_sides(&a, &b)),
                    "{rules} {board}"
                );
                let source = if board.final_value(&rules).is_some() {
                    Source::Final
                } else if with_db && seeds <= DB_SEEDS {
                    from_db += 1;
                    assert_eq!(
                        lazy.asked, asked,
                        "no search for a board the database holds"
                    );
                    Source::Database
                } else if lazy.asked > asked {
                    searched += 1;
                    Source::Search
                } else {
                    // Every move ends the game or lands in the database.
                    Source::Database
                };
                assert_eq!(got.source, source, "{rules} {board}");
                let line = analyser.best_line(&board, &got, 400).unwrap();
                if source == Source::Database {
                    assert_line_is_best(&rules, &board, &line, want);
                } else if source != Source::Database {
                    assert!(line.is_empty(), "{rules} {board}: {line:?}");
                }
            }
        }
    }
    assert!(from_db > 20 && searched > 20, "{from_db} {searched}");
}

/// `line` plays best moves (by the reference) from `board`, whose value is `value`, to the
/// end of the game.
fn assert_line_is_best(rules: &Rules, board: &Board, line: &[usize], value: i32) {
    let mut b = *board;
    let mut v = value;
    for &h in line {
        let cells = b.cells();
        let (a, n) = cells.split_at(b.houses());
        let moves = ref_move_values(rules, &RefState::from_sides(a, n));
        let best = moves.iter().map(|m| m.1).max().unwrap() as i32;
        assert_eq!(best, v, "{rules} {board} {line:?}");
        assert!(moves.contains(&(h, v as i64)), "{rules} {board} {line:?}");
        let s = b.sow(rules, h);
        v = if s.extra_turn {
            v - s.gain as i32
        } else {
            s.gain as i32 - v
        };
        b = s.next();
    }
    assert_eq!(b.final_value(rules), Some(v), "{rules} {board} {line:?}");
}

#[test]
fn a_deadline_gives_bounds_that_hold_and_cancel_is_an_error() {
    let rules = Rules::all_variants(4, 0)[0];
    let books = Books::none();
    let analyser = Analyser {
        rules: &rules,
        books: &books,
        db: None,
    };
    let (a, b) = (vec![2u8, 3, 1, 2], vec![1u8, 2, 3, 2]);
    let board = Board::new(&a, &b);
    let want = ref_move_values(&rules, &RefState::from_sides(&a, &b));
    let mut lazy = Lazy {
        rules,
        search: None,
        asked: 0,
    };
    // A deadline already past: whatever the search proved by then, the bounds hold.
    let never = AtomicBool::new(false);
    let got = analyser
        .analyse(&board, &mut lazy, Instant::now(), &never, &mut |_| {})
        .unwrap();
    assert!(matches!(got.source, Source::Search | Source::Bounds));
    assert_eq!(got.source == Source::Search, got.exact());
    for (m, &(h, v)) in got.moves.iter().zip(&want) {
        assert_eq!(m.house, h);
        assert!(m.lower as i64 <= v && v <= m.upper as i64, "{m:?} {v}");
    }
    let best = want.iter().map(|m| m.1).max().unwrap();
    assert!(got.lower as i64 <= best && best <= got.upper as i64);
    // Steps are reported before each search, in house order.
    let mut steps = Vec::new();
    let fresh = Lazy {
        rules,
        search: None,
        asked: 0,
    };
    let far = Instant::now() + Duration::from_secs(3600);
    let mut fresh = fresh;
    let exact = analyser
        .analyse(&board, &mut fresh, far, &never, &mut |s| {
            steps.push((s.house, s.index, s.of))
        })
        .unwrap();
    assert!(exact.exact() && exact.source == Source::Search);
    assert_eq!(exact.lower as i64, best);
    let n = want.len();
    assert_eq!(
        steps,
        want.iter()
            .enumerate()
            .map(|(i, m)| (m.0, i, n))
            .collect::<Vec<_>>()
    );
    // A raised cancel flag, and no search to be had, are errors.
    let cancel = AtomicBool::new(true);
    let mut lazy = Lazy {
        rules,
        search: None,
        asked: 0,
    };
    let e = analyser
        .analyse(&board, &mut lazy, far, &cancel, &mut |_| {})
        .unwrap_err();
    assert!(matches!(e, AnalyseError::Interrupted), "{e}");
    let e = analyser
        .analyse(&board, &mut Busy, far, &never, &mut |_| {})
        .unwrap_err();
    assert!(matches!(e, AnalyseError::NoSearch(_)), "{e}");
    // A finished game needs no search.
    let over = Board::new(&[0, 0, 0, 0], &[1, 2, 0, 0]);
    let got = analyser
        .analyse(&over, &mut Busy, far, &never, &mut |_| {})
        .unwrap();
    assert_eq!(got.source, Source::Final);
}
