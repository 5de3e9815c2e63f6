//! The `kalah` binary as users run it: output parsed back, exit statuses, known answers.

use serde_json::Value;
use std::io::Write;
use std::process::{Command, Output, Stdio};

/// Runs `kalah` in an empty directory of its own, so that the default databases it builds
/// (`data/db/...`) stay out of the repository.
fn kalah(args: &[&str]) -> Output {
    let cwd = tempfile::tempdir().unwrap();
    Command::new(env!("CARGO_BIN_EXE_kalah"))
        .args(args)
        .current_dir(cwd.path())
        .output()
        .expect("run kalah")
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn json(args: &[&str]) -> Value {
    let out = kalah(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout(&out).trim()).expect("one JSON object")
}

fn start(m: usize, n: u32) -> String {
    let side = vec![n.to_string(); m].join(" ");
    format!("{side} / {side}")
}

/// `kalah query --json` of `position` with `houses` houses under empty capture.
fn query_empty(houses: &str, position: &str) -> Value {
    json(&[
        "query",
        "--houses",
        houses,
        "--capture",
        "empty",
        position,
        "--json",
    ])
}

#[test]
fn query_json_schema() {
    let v = query_empty("4", "3 3 3 3 / 3 3 3 3");
    assert_eq!(v["value"], 8);
    assert_eq!(v["margin"], 8);
    assert_eq!(v["to_move"], "south");
    assert_eq!(v["over"], false);
    let moves = v["moves"].as_array().unwrap();
    assert_eq!(moves.len(), 4);
    let best = moves.iter().map(|m| m["value"].as_i64().unwrap()).max();
    assert_eq!(best, Some(8));
    for m in moves {
        let h = m["house"].as_u64().unwrap();
        assert!((1..=4).contains(&h));
    }
    assert_eq!(v["best"], serde_json::json!([2]));
    assert!(v["source"].is_string());
    assert!(v["seconds"].is_number());
}

#[test]
fn query_line_from_the_database_plays_to_the_final_margin() {
    let rules = kalah_solver::Rules {
        houses: 4,
        capture: "empty".parse().unwrap(),
        ..kalah_solver::Rules::default()
    };
    let text = "2 0 3 1 / 0 2 1 0";
    let v = query_empty("4", text);
    assert_eq!(v["source"], "database", "{v}");
    let mut p = kalah_solver::parse_position(text, 4).unwrap();
    let pv = v["pv"].as_array().unwrap();
    assert!(!pv.is_empty(), "{v}");
    for m in pv {
        let m = m.as_str().unwrap();
        assert!(m.starts_with(p.to_move().letter()), "{m} in {v}");
        let h = m[1..].parse::<usize>().unwrap() - 1;
        assert!(p.board().legal_houses().any(|l| l == h), "{m} in {v}");
        p = p.play(&rules, h).0;
    }
    let end = p
        .board()
        .final_value(&rules)
        .expect("the line ends the game")
        + p.store_lead();
    let south = if p.to_move() == kalah_solver::Side::South {
        end
    } else {
        -end
    };
    assert_eq!(v["margin"].as_i64(), Some(south as i64), "{v}");
    // The text form prints the same line.
    let out = kalah(&["query", "--houses", "4", "--capture", "empty", text]);
    let want = pv
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect::<Vec<_>>()
        .join(" ");
    assert!(stdout(&out).contains(&format!("best line (to the end of the game): {want}")));
}

#[test]
fn known_small_results() {
    let csv = include_str!("../../../tests/known-small.csv");
    let mut checked = 0;
    for line in csv.lines().filter(|l| !l.starts_with('#')).skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let (m, n): (usize, u32) = (f[0].parse().unwrap(), f[1].parse().unwrap());
        let v = query_empty(f[0], &start(m, n));
        let value = v["margin"].as_i64().unwrap();
        if !f[2].is_empty() {
            assert_eq!(value, f[2].parse::<i64>().unwrap(), "({m},{n})");
        }
        let sign = match value.signum() {
            1 => "W",
            0 => "D",
            _ => "L",
        };
        assert_eq!(sign, f[3], "({m},{n}): computed {value}");
        checked += 1;
    }
    assert_eq!(checked, 22);
}

#[test]
fn bad_input_exits_2_with_one_line() {
    for (args, needle) in [
        (vec!["query", "3 3 3 / 3 3 3"], "--houses is 6"),
        (vec!["query", "--houses", "2", "3 x / 3 3"], "not a number"),
        (vec!["query", "--houses", "2", "3 -2 / 3 3"], "negative"),
        (vec!["query", "--houses", "2", "3 9999 / 3 3"], "too many"),
        (vec!["query", ""], "empty position"),
        (vec!["show", "--houses", "2", "1 2 3"], "'/'"),
        (vec!["moves", "--houses", "9", "1 / 1"], "--houses"),
        (
            vec!["query", "--capture", "sometimes", "1 / 1"],
            "--capture",
        ),
        (
            vec!["query", "--houses", "1", "--end", "never", "1 / 1"],
            "--end",
        ),
        // A table larger than the machine's memory (it used to panic with a backtrace).
        (vec!["solve", "--tt-mb", "100000000"], "--tt-mb"),
        (vec!["query", "--tt-mb", "100000000", "1 / 1"], "memory"),
        (vec!["serve", "--tt-mb", "100000000"], "memory"),
        (
            vec!["serve", "--searches", "100000", "--tt-mb", "4096"],
            "memory",
        ),
        (vec!["prove", "--tt-mb", "100000000"], "--tt-mb"),
        (vec!["verify", "--tt-mb", "0"], "--tt-mb"),
        (vec!["solve", "--tt-mb", "lots"], "--tt-mb"),
        (vec!["solve", "--no-such-flag"], "--no-such-flag"),
    ] {
        let out = kalah(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn finished_game_is_settled_not_an_error() {
    let v = json(&["query", "--houses", "2", "S: 0 0 [5] / 1 2 [4]", "--json"]);
    assert_eq!(v["over"], true);
    assert_eq!(v["value"], -3);
    assert_eq!(v["margin"], -2);
    assert_eq!(v["moves"], serde_json::json!([]));
    let v = json(&[
        "query",
        "--houses",
        "2",
        "--leftover",
        "emptier",
        "0 0 / 1 2",
        "--json",
    ]);
    assert_eq!(v["value"], 3);
}

#[test]
fn query_reads_standard_input() {
    let cwd = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_kalah"))
        .args(["query", "--houses", "3", "--capture", "empty"])
        .current_dir(cwd.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"4 4 4 / 4 4 4\n\n# a comment\n1 2 / 3\nN: 1 0 0 [3] / 0 0 2 [4]\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2), "one line was bad");
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["value"], 2);
    assert!(lines[1]["error"].as_str().unwrap().contains("houses"));
    assert_eq!(lines[2]["to_move"], "north");
}

#[test]
fn show_draws_north_on_top_right_to_left() {
    let out = kalah(&["show", "--houses", "3", "N: 1 2 3 [4] / 5 6 7 [8]"]);
    assert!(out.status.success());
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    // North's row reads N3 N2 N1 from left to right; South's row S1 S2 S3.
    let digits = |l: &str| -> Vec<u32> {
        l.split(|c: char| !c.is_ascii_digit())
            .filter(|t| !t.is_empty())
            .map(|t| t.parse().unwrap())
            .collect()
    };
    assert!(lines[0].contains("North"));
    assert_eq!(digits(lines[2]), vec![7, 6, 5]);
    assert_eq!(digits(lines[3]), vec![8, 4]);
    assert_eq!(digits(lines[4]), vec![1, 2, 3]);
    assert!(lines[6].contains("South"));
    assert!(text.contains("North to move"));
}

#[test]
fn moves_lists_every_legal_move() {
    let v = json(&["moves", "--houses", "6", &start(6, 4), "--json"]);
    let moves = v["moves"].as_array().unwrap();
    assert_eq!(moves.len(), 6);
    assert_eq!(moves[2]["house"], 3);
    assert_eq!(moves[2]["extra_turn"], true);
    assert_eq!(moves[2]["position"], "S: 4 4 0 5 5 5 [1] / 4 4 4 4 4 4 [0]");
    assert_eq!(moves[0]["extra_turn"], false);
    assert_eq!(moves[0]["to_move"], "north");
    let text = stdout(&kalah(&["moves", "--houses", "2", "S: 0 1 [0] / 1 1 [0]"]));
    assert!(text.contains("house 2"), "{text}");
    assert!(text.contains("ends the game"), "{text}");
}

#[path = "../../../tests/reference.rs"]
mod reference;

/// `query` answers from the database when the position fits, from the search over it when it
/// does not, and the values are the reference minimax's either way.
#[test]
fn query_uses_the_database_and_the_search() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().to_str().unwrap();
    let flags = [
        "--houses",
        "3",
        "--capture",
        "empty",
        "--leftover",
        "emptier",
    ];
    let out = kalah(&[&["db", "build", "--upto", "8", "--dir", db][..], &flags].concat());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rules = kalah_solver::Rules {
        houses: 3,
        seeds: 0,
        capture: kalah_solver::Capture::Empty,
        leftover: kalah_solver::Leftover::Emptier,
        end: kalah_solver::EndRule::Either,
    };
    let mut rng = reference::Rng(7);
    for seeds in [3, 6, 8, 9, 11] {
        let (a, b) = rng.board(3, seeds);
        let text = format!(
            "{} / {}",
            a.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(" "),
            b.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        );
        let v = json(&[&["query", "--json", "--db", db, &text][..], &flags].concat());
        let state = reference::RefState::from_sides(&a, &b);
        if state.over(&rules) {
            assert_eq!(v["source"], "final");
            continue;
        }
        let want = if seeds <= 8 { "database" } else { "search" };
        assert_eq!(v["source"], want, "{text}");
        assert_eq!(
            v["value"].as_i64().unwrap(),
            reference::ref_value(&rules, &state),
            "{text}"
        );
        for (m, (h, value)) in v["moves"]
            .as_array()
            .unwrap()
            .iter()
            .zip(reference::ref_move_values(&rules, &state))
        {
            assert_eq!(m["house"].as_u64().unwrap() as usize, h + 1);
            assert_eq!(
                m["value"].as_i64().unwrap(),
                value,
                "{text} house {}",
                h + 1
            );
        }
    }
}

/// A damaged level file makes `query` fail with status 1 and name the file, never answer.
#[test]
fn query_reports_a_corrupt_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().to_str().unwrap();
    let out = kalah(&["db", "build", "--houses", "2", "--upto", "6", "--dir", db]);
    assert!(out.status.success());
    let file = dir.path().join("level-006.kdb");
    let clean = std::fs::read(&file).unwrap();
    // Every board of level 6 with both sides non-empty reads the file's only block.
    let position = "1 2 / 2 1";
    let good = json(&["query", "--houses", "2", "--json", "--db", db, position]);
    assert_eq!(good["source"], "database");
    let step = (clean.len() / 40).max(1);
    for offset in (0..clean.len()).step_by(step) {
        let mut bad = clean.clone();
        bad[offset] ^= 0x04;
        std::fs::write(&file, &bad).unwrap();
        let out = kalah(&["query", "--houses", "2", "--json", "--db", db, position]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "byte {offset}: {err}");
        assert!(err.contains("level-006.kdb"), "byte {offset}: {err}");
        assert!(out.stdout.is_empty(), "byte {offset} answered anyway");
    }
    std::fs::write(&file, &clean).unwrap();
}

#[test]
fn query_prints_proven_bounds_when_its_budget_runs_out() {
    // One move into 4-seed Kalah, no database, a third of a second: bounds, not values.
    let out = kalah(&[
        "query",
        "--build-upto",
        "0",
        "--budget",
        "0.3",
        "--tt-mb",
        "16",
        "N: 4 4 4 4 0 5 [1] / 5 5 4 4 4 4 [0]",
    ]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("searching: 47 seeds"), "{err}");
    assert!(stdout(&out).contains("between"), "{}", stdout(&out));
    let v = json(&[
        "query",
        "--json",
        "--build-upto",
        "0",
        "--budget",
        "0.3",
        "--tt-mb",
        "16",
        "N: 4 4 4 4 0 5 [1] / 5 5 4 4 4 4 [0]",
    ]);
    assert_eq!(v["source"], "bounds", "{v}");
    assert!(v["value"].is_null());
    let (lo, hi) = (v["lower"].as_i64().unwrap(), v["upper"].as_i64().unwrap());
    assert!(-47 <= lo && lo < hi && hi <= 47, "{v}");
    let moves = v["moves"].as_array().unwrap();
    assert_eq!(moves.len(), 6);
    for m in moves {
        assert!(m["lower"].as_i64() <= m["upper"].as_i64(), "{m}");
        assert!(m["lower"].as_i64().unwrap() <= hi);
    }
}

#[test]
fn solve_picks_and_names_its_database_when_none_is_given() {
    let out = kalah(&["solve", "--houses", "6", "--seeds", "3", "--tt-mb", "16"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("every level up to 16 seeds") && err.contains("fastest"),
        "{err}"
    );
    assert!(stdout(&out).contains("value: +2"), "{}", stdout(&out));
    // A small board is built whole: its start is then a lookup.
    let out = kalah(&["query", "--houses", "3", "--seeds", "3", "3 3 3 / 3 3 3"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("every level up to 18 seeds"), "{err}");
    assert!(stdout(&out).contains("[database]"), "{}", stdout(&out));
}

#[test]
fn solve_with_db_huge_pages_and_db_lock_reads_the_database_again_and_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().to_str().unwrap();
    for codec in ["stored", "search"] {
        let out = kalah(&[
            "db", "build", "--houses", "4", "--upto", "12", "--codec", codec, "--dir", db,
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let args = [
            "solve", "--houses", "4", "--seeds", "3", "--db", db, "--json",
        ];
        let plain = json(&args);
        let out = kalah(&[&args[..], &["--db-huge-pages", "--db-lock"]].concat());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let copied: Value = serde_json::from_str(stdout(&out).trim()).expect("one JSON object");
        assert_eq!(copied["value"], plain["value"], "{codec}");
        assert_eq!(copied["moves"], plain["moves"], "{codec}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("read") && err.contains("of the database into memory"),
            "{codec}: {err}"
        );
        // Locked, or (under a low `ulimit -l`) a warning that says it is not.
        assert!(
            err.contains("locked") && err.contains("in memory"),
            "{codec}: {err}"
        );
        std::fs::remove_dir_all(dir.path()).unwrap();
        std::fs::create_dir(dir.path()).unwrap();
    }
}
