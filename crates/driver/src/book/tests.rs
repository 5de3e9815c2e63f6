use super::build::{partial_header, partial_line};
use super::*;
use crate::{Search, SearchConfig};
use kalah_solver::{Exhaustive, Position};
use std::sync::atomic::AtomicBool;

fn search(rules: &Rules) -> Search {
    Search::new(
        *rules,
        SearchConfig {
            tt_mb: 4,
            threads: 1,
            ..SearchConfig::default()
        },
    )
}

fn plain_build(rules: &Rules, plies: u8, facts: &[Fact]) -> Result<Book, BookError> {
    let never = AtomicBool::new(false);
    let s = search(rules);
    build(rules, plies, facts, Some(&s), None, "test", &|_| {}, &never).map(|(b, _)| b)
}

/// Every position within `plies` moves of the start.
fn reachable(rules: &Rules, plies: usize) -> Vec<Board> {
    let mut all = vec![Board::start(rules)];
    let mut level = all.clone();
    for _ in 0..plies {
        let mut next = Vec::new();
        for b in &level {
            for h in b.legal_houses() {
                let c = b.sow(rules, h).next();
                if c.final_value(rules).is_none() && !all.contains(&c) {
                    all.push(c);
                    next.push(c);
                }
            }
        }
        level = next;
    }
    all
}

#[test]
fn every_entry_and_answer_agrees_with_plain_minimax_in_every_variant() {
    for (houses, seeds) in [(3, 2), (4, 2)] {
        for rules in Rules::all_variants(houses, seeds) {
            let book = plain_build(&rules, 3, &[]).unwrap();
            let mut ex = Exhaustive::new(rules);
            for (b, lo, hi) in book.iter() {
                let v = ex.value(&b);
                assert_eq!((lo, hi), (v, v), "{rules}: {b}");
            }
            // Every position within the plies is in the book, and those nearer than the
            // last ply are answered with every move.
            let books = Books::from_books(vec![book.clone()]);
            for b in reachable(&rules, 3) {
                assert!(book.get(&b).is_some(), "{rules}: {b} missing");
            }
            for b in reachable(&rules, 2) {
                let a = books.answer(&rules, &b).unwrap().expect("answered");
                assert!(a.exact());
                for &(h, lo, _) in &a.moves {
                    assert_eq!(lo, ex.move_value(&b, h), "{rules}: {b} house {h}");
                }
            }
            assert!(book.check_consistent().unwrap() > 0);
        }
    }
}

#[test]
fn file_round_trip_and_lookup() {
    let rules = Rules::standard(4, 2);
    let book = plain_build(&rules, 4, &[]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(file_name(&rules));
    book.write(&path).unwrap();
    let back = Book::open(&path).unwrap();
    assert_eq!(back, book);
    assert_eq!(back.plies(), 4);
    assert_eq!(back.note(), "test");
    let books = Books::open_dir(dir.path(), &Rules::standard(4, 7)).unwrap();
    assert_eq!(
        books.books().len(),
        1,
        "books of any starting seeds are read"
    );
    assert!(Books::open_dir(dir.path(), &Rules::standard(5, 2))
        .unwrap()
        .is_empty());
    assert!(Books::open_dir(&dir.path().join("none"), &rules)
        .unwrap()
        .is_empty());
    assert!(books
        .get(&Board::new(&[9, 0, 0, 0], &[0, 0, 0, 1]))
        .is_none());
}

/// The bytes of `book` with `edit` applied and the checksum made right again.
fn edited(book: &Book, edit: impl Fn(&mut Vec<u8>)) -> Vec<u8> {
    let mut bytes = file::encode(book);
    bytes.truncate(bytes.len() - 8);
    edit(&mut bytes);
    let sum = xxhash_rust::xxh3::xxh3_64(&bytes);
    bytes.extend_from_slice(&sum.to_le_bytes());
    bytes
}

#[test]
fn every_kind_of_damaged_file_is_refused_with_a_reason() {
    let rules = Rules::standard(4, 2);
    let book = plain_build(&rules, 2, &[]).unwrap();
    let good = file::encode(&book);
    let note = book.note().len();
    let first = 28 + note; // the first entry
    let w = file::entry_width(4);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", Vec::new(), "too short"),
        ("truncated", good[..good.len() - 3].to_vec(), "checksum"),
        (
            "flipped",
            {
                let mut b = good.clone();
                b[first + 1] ^= 1;
                b
            },
            "checksum",
        ),
        (
            "magic",
            {
                let mut b = good.clone();
                b[0] = b'X';
                b
            },
            "magic",
        ),
        ("version", edited(&book, |b| b[8] = 9), "version 9"),
        ("capture", edited(&book, |b| b[12] = 7), "capture code"),
        ("houses", edited(&book, |b| b[10] = 0), "bad rules"),
        (
            "count",
            edited(&book, |b| b[20] = b[20].wrapping_add(1)),
            "take",
        ),
        (
            "huge count",
            edited(&book, |b| {
                b[20..28].copy_from_slice(&u64::MAX.to_le_bytes())
            }),
            "overflows",
        ),
        (
            "order",
            edited(&book, |b| {
                let (x, y) = (first, first + w);
                let e1 = b[x..x + w].to_vec();
                let e2 = b[y..y + w].to_vec();
                b[x..x + w].copy_from_slice(&e2);
                b[y..y + w].copy_from_slice(&e1);
            }),
            "out of order",
        ),
        (
            "bounds",
            edited(&book, |b| {
                b[first + 8..first + 10].copy_from_slice(&100i16.to_le_bytes())
            }),
            "impossible",
        ),
        (
            "note",
            edited(&book, |b| {
                if note > 0 {
                    b[28] = 0xff
                }
            }),
            "UTF-8",
        ),
    ];
    for (what, bytes, expect) in cases {
        let err = file::decode(&bytes).expect_err(what);
        assert!(err.contains(expect), "{what}: {err}");
    }
    // Through the file system, the path is named.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(file_name(&rules));
    std::fs::write(&path, &good[..10]).unwrap();
    let e = Book::open(&path).unwrap_err().to_string();
    assert!(
        e.contains(&path.display().to_string()) && e.contains("too short"),
        "{e}"
    );
    assert!(
        Books::open_dir(dir.path(), &rules).is_err(),
        "damaged books are not skipped"
    );
    // A book under another game's name.
    let other = dir.path().join(file_name(&Rules::standard(4, 3)));
    std::fs::rename(&path, &other).unwrap();
    std::fs::write(&other, &good).unwrap();
    let e = Books::open_dir(dir.path(), &rules).unwrap_err().to_string();
    assert!(e.contains("does not match"), "{e}");
}

/// South's final margin after `moves` from the start, by plain minimax.
fn margin_after(rules: &Rules, moves: &[usize], ex: &mut Exhaustive) -> i32 {
    let mut pos = Position::start(rules);
    for &h in moves {
        pos = pos.play(rules, h).0;
    }
    let v = ex.value(&pos.board());
    match pos.to_move() {
        kalah_solver::Side::South => pos.store_lead() + v,
        kalah_solver::Side::North => -pos.store_lead() - v,
    }
}

#[test]
fn facts_alone_answer_the_start_and_contradictions_are_refused() {
    for rules in Rules::all_variants(4, 2) {
        let mut ex = Exhaustive::new(rules);
        // Every first turn exactly, as `solve --first-turns` records them.
        let facts: Vec<Fact> = crate::results::first_turns(&rules)
            .into_iter()
            .map(|m| {
                let m: Vec<usize> = m.iter().map(|h| h - 1).collect();
                let v = margin_after(&rules, &m, &mut ex);
                Fact {
                    measure: Measure::Margin,
                    moves: m,
                    lower: v,
                    upper: v,
                    source: "test".into(),
                }
            })
            .collect();
        let never = AtomicBool::new(false);
        let (book, nodes) = build(&rules, 0, &facts, None, None, "facts", &|_| {}, &never).unwrap();
        assert_eq!(nodes, 0);
        let start = Board::start(&rules);
        let a = Books::from_books(vec![book.clone()])
            .answer(&rules, &start)
            .unwrap()
            .expect("the start is answered");
        assert!(a.exact(), "{rules}");
        assert_eq!(a.bounds().0, ex.value(&start), "{rules}");
        for &(h, v, _) in &a.moves {
            assert_eq!(v, ex.move_value(&start, h), "{rules}");
        }
        // The same facts beside a search: they agree.
        plain_build(&rules, 2, &facts).unwrap();
        // A fact one off: the search finds the contradiction.
        let mut wrong = facts.clone();
        wrong[0].lower += 2;
        wrong[0].upper += 2;
        let e = plain_build(&rules, 3, &wrong).unwrap_err().to_string();
        assert!(e.contains("contradict"), "{rules}: {e}");
    }
}

#[test]
fn bounds_from_a_ledger_reach_every_move_of_the_start() {
    // "South's margin is at least v - 2" and "opening 1 is at most v": the start is answered
    // with bounds, every move capped by the start's bound.
    let rules = Rules::standard(4, 3);
    let mut ex = Exhaustive::new(rules);
    let start = Board::start(&rules);
    let v = ex.value(&start);
    let s = start.seeds() as i32;
    let facts = vec![
        Fact {
            measure: Measure::Margin,
            moves: vec![],
            lower: v - 2,
            upper: s,
            source: "root".into(),
        },
        Fact {
            measure: Measure::Margin,
            moves: vec![0],
            lower: -s,
            upper: ex.move_value(&start, 0),
            source: "opening".into(),
        },
    ];
    let never = AtomicBool::new(false);
    let (book, _) = build(&rules, 0, &facts, None, None, "ledger", &|_| {}, &never).unwrap();
    let a = Books::from_books(vec![book])
        .answer(&rules, &start)
        .unwrap()
        .unwrap();
    assert!(!a.exact());
    for &(h, lo, hi) in &a.moves {
        let mv = ex.move_value(&start, h);
        assert!(lo <= mv && mv <= hi, "house {h}: {mv} outside {lo}..{hi}");
    }
    let (lo, hi) = a.bounds();
    assert!(lo <= v && v <= hi && lo >= v - 2 - 1);
}

#[test]
fn a_stopped_build_goes_on_from_its_partial_file() {
    let rules = Rules::standard(4, 3);
    let dir = tempfile::tempdir().unwrap();
    let partial = dir.path().join("book.partial");
    let whole = plain_build(&rules, 3, &[]).unwrap();
    // A partial file as a killed build leaves it: some values, then a line cut short.
    let mut ex = Exhaustive::new(rules);
    let frontier: Vec<Board> = reachable(&rules, 3)
        .into_iter()
        .filter(|b| !reachable(&rules, 2).contains(b))
        .collect();
    let mut text = partial_header(&rules, 3) + "\n";
    for b in frontier.iter().take(frontier.len() / 2) {
        text += &(partial_line(b, ex.value(b)) + "\n");
    }
    text += &partial_line(&frontier[frontier.len() - 1], 99)[..20];
    std::fs::write(&partial, text).unwrap();
    let never = AtomicBool::new(false);
    let s = search(&rules);
    let counted = std::sync::atomic::AtomicUsize::new(0);
    let (book, _) = build(
        &rules,
        3,
        &[],
        Some(&s),
        Some(&partial),
        "test",
        &|p| {
            counted.store(p.total, std::sync::atomic::Ordering::Relaxed);
        },
        &never,
    )
    .unwrap();
    assert_eq!(book, whole);
    assert_eq!(counted.into_inner(), frontier.len());
    assert!(!partial.exists(), "removed once the book is made");
    // The partial file of another build is not used.
    std::fs::write(&partial, partial_header(&rules, 2) + "\n").unwrap();
    let e = build(
        &rules,
        3,
        &[],
        Some(&s),
        Some(&partial),
        "",
        &|_| {},
        &never,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("not the partial file"), "{e}");
    // A cancelled build stops with the search's interruption.
    std::fs::remove_file(&partial).unwrap();
    let stop = AtomicBool::new(true);
    let fresh = search(&rules);
    match build(
        &rules,
        4,
        &[],
        Some(&fresh),
        Some(&partial),
        "",
        &|_| {},
        &stop,
    ) {
        Err(BookError::Search(crate::SearchError::Interrupted { .. })) => {}
        other => panic!("expected an interruption, got {other:?}"),
    }
    assert!(partial.exists(), "kept for the next run");
}

#[test]
fn deep_books_value_transpositions_right() {
    // Six plies of 4x3: positions reached again nearer than by the fewest moves, extra turns
    // and captures between them; every entry against plain minimax.
    for rules in [Rules::standard(4, 3), Rules::all_variants(4, 3)[5]] {
        let book = plain_build(&rules, 6, &[]).unwrap();
        let mut ex = Exhaustive::new(rules);
        for (b, lo, hi) in book.iter() {
            let v = ex.value(&b);
            assert_eq!((lo, hi), (v, v), "{rules}: {b}");
        }
        assert!(book.len() > 300, "{}", book.len());
    }
}
