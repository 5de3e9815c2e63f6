//! `kalah book` as users run it, and the answers that `query` and `solve` give from a book:
//! JSON parsed back, values compared with the same commands without the book.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn kalah(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kalah"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run kalah")
}

fn json(cwd: &Path, args: &[&str]) -> Value {
    let out = kalah(cwd, args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(String::from_utf8(out.stdout).unwrap().trim()).expect("one JSON object")
}

const RULES: [&str; 4] = ["--houses", "4", "--seeds", "3"];

fn with_rules<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let mut v = args.to_vec();
    v.extend_from_slice(&RULES);
    v
}

#[test]
fn a_book_answers_query_and_solve_as_the_search_does() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let file = "books/4x3-standard-owner-either.kbook";
    let built = json(
        cwd,
        &with_rules(&[
            "book",
            "build",
            "--plies",
            "4",
            "--out",
            file,
            "--results",
            "none",
            "--proofs",
            "none",
            "--json",
        ]),
    );
    let entries = built["entries"].as_u64().unwrap();
    assert!(entries > 50, "{built}");
    assert_eq!(built["exact"], built["entries"]);
    assert_eq!(built["plies"], 4);
    assert!(!cwd.join(format!("{file}.partial")).exists());

    let info = json(cwd, &["book", "info", file, "--json"]);
    assert_eq!(info["entries"].as_u64(), Some(entries));
    assert_eq!(info["start"]["lower"], info["start"]["upper"]);
    assert_eq!(info["start"]["moves"].as_array().unwrap().len(), 4);

    // query: the start and a position two moves in, from the book and from the database.
    for pos in [
        "3 3 3 3 / 3 3 3 3",
        "N: 0 4 4 4 [0] / 3 3 3 3 [0]",
        "S: 0 4 4 4 [0] / 0 4 4 4 [0]",
    ] {
        let book = json(
            cwd,
            &with_rules(&["query", "--books", "books", "--json", pos]),
        );
        let plain = json(cwd, &with_rules(&["query", "--no-book", "--json", pos]));
        assert_eq!(book["source"], "book", "{book}");
        assert_ne!(plain["source"], "book");
        for key in ["value", "margin", "moves", "best", "position"] {
            assert_eq!(book[key], plain[key], "{pos}: {key}");
        }
    }

    // solve: at once from the book, and proven again with --no-book.
    let book = json(cwd, &with_rules(&["solve", "--books", "books", "--json"]));
    let proven = json(cwd, &with_rules(&["solve", "--no-book", "--json"]));
    assert_eq!(book["source"], "book");
    assert_eq!(book["nodes"], 0);
    assert_eq!(proven["source"], "search");
    assert!(proven["database_seeds"].as_u64().unwrap() > 0);
    for key in ["value", "best"] {
        assert_eq!(book[key], proven[key], "{key}");
    }

    // verify: a sample searched again.
    let v = json(
        cwd,
        &[
            "book", "verify", file, "--sample", "3", "--seed", "7", "--json",
        ],
    );
    assert_eq!(v["disagree"], 0);
    assert_eq!(v["sampled"].as_array().unwrap().len(), 3);
    assert!(v["consistent"].as_u64().unwrap() > 0);

    // A damaged book: one line naming the file, exit status 1, from every command that reads
    // it.
    let path = cwd.join(file);
    let mut bytes = std::fs::read(&path).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 0x10;
    std::fs::write(&path, &bytes).unwrap();
    for args in [
        with_rules(&["query", "--books", "books", "3 3 3 3 / 3 3 3 3"]),
        with_rules(&["solve", "--books", "books"]),
        vec!["book", "info", file],
    ] {
        let out = kalah(cwd, &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("4x3-standard-owner-either.kbook") && err.contains("checksum"),
            "{args:?}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}

#[test]
fn a_book_with_nothing_to_hold_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = kalah(
        dir.path(),
        &with_rules(&["book", "build", "--results", "none", "--proofs", "none"]),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing to put"));
    let out = kalah(dir.path(), &["book", "info", "missing.kbook"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn verify_searches_book_entries_again_and_finds_a_wrong_one() {
    use kalah_driver::book::{file_name, Book};
    use kalah_solver::{Board, Exhaustive, Rules};
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let known = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/known-results.toml");
    let empty = tempfile::tempdir().unwrap();
    let verify = |books: &str| {
        kalah(
            cwd,
            &[
                "verify",
                "--file",
                known,
                "--class",
                "ci",
                "--tt-mb",
                "16",
                "--db-root",
                empty.path().to_str().unwrap(),
                "--books",
                books,
                "--book-sample",
                "3",
            ],
        )
    };
    // A book as `book build` makes it: three entries searched again, all agree.
    json(
        cwd,
        &with_rules(&[
            "book",
            "build",
            "--plies",
            "3",
            "--out",
            "good/4x3-standard-owner-either.kbook",
            "--results",
            "none",
            "--proofs",
            "none",
            "--json",
        ]),
    );
    let out = verify("good");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("3 opening book entries searched again, 0 disagreeing"),
        "{text}"
    );
    // A book with one wrong value (written past the builder's checks): found.
    let rules = Rules::standard(4, 3);
    let start = Board::start(&rules);
    let v = Exhaustive::new(rules).value(&start);
    let entries = [(start, (v + 2, v + 2))].into_iter().collect();
    std::fs::create_dir_all(cwd.join("bad")).unwrap();
    Book::new(rules, 0, "wrong", &entries)
        .unwrap()
        .write(&cwd.join("bad").join(file_name(&rules)))
        .unwrap();
    let out = verify("bad");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("1 opening book entries searched again, 1 disagreeing"),
        "{text}"
    );
}

#[test]
fn verify_samples_large_no_capture_entries_only_in_bench() {
    // Without captures a board of 30-odd seeds takes minutes to search with no database, so
    // `ci` and `long` (seconds) leave a no-capture book's entries above 24 seeds alone; `bench`
    // searches them again.
    use kalah_driver::book::{file_name, Book};
    use kalah_solver::{Board, Capture, Exhaustive, Rules};
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let empty = tempfile::tempdir().unwrap();
    std::fs::write(cwd.join("none.toml"), "result = []\n").unwrap();
    let rules = Rules {
        capture: Capture::Never,
        ..Rules::standard(3, 9)
    };
    let board = Board::new(&[9, 9, 9], &[1, 1, 1]);
    let v = Exhaustive::new(rules).value(&board);
    let entries = [(board, (v, v))].into_iter().collect();
    std::fs::create_dir_all(cwd.join("books")).unwrap();
    Book::new(rules, 0, "one entry", &entries)
        .unwrap()
        .write(&cwd.join("books").join(file_name(&rules)))
        .unwrap();
    for (class, sampled) in [("ci", false), ("long", false), ("bench", true)] {
        let out = kalah(
            cwd,
            &[
                "verify",
                "--file",
                "none.toml",
                "--class",
                class,
                "--tt-mb",
                "16",
                "--db-root",
                empty.path().to_str().unwrap(),
                "--proofs",
                empty.path().to_str().unwrap(),
                "--books",
                "books",
            ],
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{class}: {text}");
        let line = "1 opening book entries searched again, 0 disagreeing";
        assert_eq!(text.contains(line), sampled, "{class}: {text}");
    }
}
