//! The `kalah solve` and `kalah verify` commands, run as a user would.

#[path = "../../../tests/reference.rs"]
mod reference;

use kalah_solver::{Board, Exhaustive, Position, Rules};
use serde_json::Value;
use std::process::Command;

/// Runs `kalah` in an empty directory of its own, so that no default database (`data/db/...`)
/// is found or built in the repository; `verify` is pointed at the repository's known results.
fn kalah(args: &[&str]) -> (i32, String, String) {
    let cwd = tempfile::tempdir().unwrap();
    let known = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/known-results.toml");
    let mut args = args.to_vec();
    if args.first() == Some(&"verify") {
        args.extend_from_slice(&["--file", known]);
    }
    // The pure search unless a test asks for the default database to be built.
    if args.first() == Some(&"solve") && !args.contains(&"--build-upto") {
        args.extend_from_slice(&["--build-upto", "0"]);
    }
    let out = Command::new(env!("CARGO_BIN_EXE_kalah"))
        .args(&args)
        .current_dir(cwd.path())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn solve_json(args: &[&str]) -> Value {
    let mut all = vec!["solve", "--json", "--tt-mb", "16"];
    all.extend_from_slice(args);
    let (code, out, err) = kalah(&all);
    assert_eq!(code, 0, "{args:?}: {err}");
    serde_json::from_str(&out).unwrap()
}

#[test]
fn solve_json_agrees_with_the_reference_and_replays() {
    for (m, n) in [(3usize, 2u32), (3, 3), (4, 2), (2, 5)] {
        for rules in Rules::all_variants(m, n) {
            let (ms, ns) = (m.to_string(), n.to_string());
            let args = [
                "--houses",
                &ms,
                "--seeds",
                &ns,
                "--capture",
                rules.capture.name(),
                "--leftover",
                rules.leftover.name(),
                "--end",
                rules.end.name(),
                "--all-moves",
            ];
            let v = solve_json(&args);
            let start = vec![n as u8; m];
            let want = reference::ref_board_value(&rules, &start, &start);
            assert_eq!(v["value"].as_i64().unwrap(), want, "{rules}");
            let moves = reference::ref_move_values(
                &rules,
                &reference::RefState::from_sides(&start, &start),
            );
            let got: Vec<(usize, i64)> = v["moves"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| {
                    (
                        m["house"].as_u64().unwrap() as usize - 1,
                        m["value"].as_i64().unwrap(),
                    )
                })
                .collect();
            assert_eq!(got, moves, "{rules}");
            let best: Vec<u64> = v["best"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b.as_u64().unwrap())
                .collect();
            let want_best: Vec<u64> = moves
                .iter()
                .filter(|m| m.1 == want)
                .map(|m| m.0 as u64 + 1)
                .collect();
            assert_eq!(best, want_best);
            // The principal variation is playable and ends the game with the proven margin.
            let mut pos = Position::start(&rules);
            for mv in v["pv"].as_array().unwrap() {
                let s = mv.as_str().unwrap();
                assert_eq!(
                    s.chars().next().unwrap(),
                    pos.to_move().letter(),
                    "{rules} {v}"
                );
                let h: usize = s[1..].parse().unwrap();
                assert!(pos.board().cells()[h - 1] > 0);
                pos = pos.play(&rules, h - 1).0;
            }
            let score = pos.final_score(&rules).expect("the pv plays to the end");
            assert_eq!(score.south as i64 - score.north as i64, want, "{rules} {v}");
            // The sign goal.
            let mut sign_args = args[..args.len() - 1].to_vec();
            sign_args.extend(["--goal", "sign"]);
            let s = solve_json(&sign_args);
            assert_eq!(s["value"].as_i64().unwrap(), want.signum(), "{rules}");
            assert_eq!(s["result"], v["result"]);
        }
    }
}

#[test]
fn solve_pie_and_text_output() {
    let rules = Rules::standard(3, 3);
    let mut ex = Exhaustive::new(rules);
    let v = solve_json(&["--houses", "3", "--seeds", "3", "--pie"]);
    let value = v["value"].as_i64().unwrap();
    assert!(value <= 0);
    let turns = v["turns"].as_array().unwrap();
    // Each exact margin is South's margin with North playing on.
    let mut least = i64::MAX;
    for t in turns {
        if !t["exact"].as_bool().unwrap() {
            continue;
        }
        let mut b = Board::start(&rules);
        let mut g = 0;
        let mut extra = false;
        for mv in t["moves"].as_array().unwrap() {
            let h: usize = mv.as_str().unwrap()[1..].parse().unwrap();
            let s = b.sow(&rules, h - 1);
            g += s.gain as i32;
            extra = s.extra_turn;
            b = s.next();
        }
        let m = if extra {
            g + b.final_value(&rules).unwrap()
        } else {
            g - ex.value(&b)
        };
        assert_eq!(t["margin"].as_i64().unwrap(), m as i64);
        least = least.min(m.abs() as i64);
    }
    assert_eq!(value, -least);

    let (code, out, _) = kalah(&[
        "solve",
        "--houses",
        "4",
        "--seeds",
        "3",
        "--capture",
        "empty",
    ]);
    assert_eq!(code, 0);
    assert!(out.contains("value: +8"), "{out}");
    assert!(out.contains("principal variation: S"), "{out}");
    let (code, _, err) = kalah(&["solve", "--houses", "9"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn node_limit_interrupts_with_status_130_and_the_checkpoint_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let ck = dir.path().join("run.ck");
    let ck = ck.to_str().unwrap();
    let base = [
        "solve", "--houses", "5", "--seeds", "3", "--json", "--tt-mb", "8",
    ];
    let (code, _, err) =
        kalah(&[&base[..], &["--checkpoint", ck, "--node-limit", "20000"]].concat());
    assert_eq!(code, 130, "{err}");
    assert!(err.contains("interrupted"), "{err}");
    let (code, out, err) = kalah(&[&base[..], &["--checkpoint", ck]].concat());
    assert_eq!(code, 0, "{err}");
    let resumed: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(resumed["resumed"], true);
    let (_, out, _) = kalah(&base);
    let whole: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(resumed["value"], whole["value"]);
}

#[test]
fn verify_ci_results_agree() {
    // Pure search: an empty database root, whatever databases this checkout holds.
    let empty = tempfile::tempdir().unwrap();
    let root = empty.path().to_str().unwrap();
    let (code, out, err) = kalah(&[
        "verify",
        "--class",
        "ci",
        "--tt-mb",
        "64",
        "--db-root",
        root,
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains(" 0 disagreeing"), "{out}");
    let rows = out.lines().filter(|l| l.contains(" yes ")).count();
    assert!(rows >= 30, "{out}");
}

#[test]
fn solve_builds_the_default_database_it_needs() {
    let cwd = tempfile::tempdir().unwrap();
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_kalah"))
            .args([
                "solve",
                "--houses",
                "3",
                "--seeds",
                "2",
                "--build-upto",
                "8",
            ])
            .current_dir(cwd.path())
            .output()
            .unwrap()
    };
    let out = run();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("built the endgame database"), "{err}");
    let dir = cwd.path().join("data/db/h3-standard-owner-either");
    for level in 0..=8 {
        assert!(
            dir.join(format!("level-{level:03}.kdb")).is_file(),
            "level {level}"
        );
    }
    assert!(!dir.join("level-009.kdb").exists());
    let first = String::from_utf8_lossy(&out.stdout).into_owned();
    // The second run finds the levels and builds nothing; the answer is the same.
    let again = run();
    assert!(!String::from_utf8_lossy(&again.stderr).contains("built"));
    assert_eq!(
        first.lines().nth(1),
        String::from_utf8_lossy(&again.stdout).lines().nth(1)
    );
    assert!(first.contains("value: +"), "{first}");
}

#[test]
fn solve_over_stored_and_zstd_databases_agrees_and_reports_the_load() {
    let root = tempfile::tempdir().unwrap();
    let mut answers = Vec::new();
    for codec in ["zstd", "stored"] {
        let dir = root.path().join(codec);
        let dir = dir.to_str().unwrap();
        let (code, _, err) = kalah(&[
            "db", "build", "--houses", "3", "--upto", "10", "--codec", codec, "--dir", dir,
        ]);
        assert_eq!(code, 0, "{err}");
        let v = solve_json(&[
            "--houses",
            "3",
            "--seeds",
            "4",
            "--db",
            dir,
            "--all-moves",
            "--threads",
            "2",
        ]);
        assert_eq!(v["database_seeds"], 10, "{v}");
        let load = v["database_load_seconds"].as_f64().expect("a load time");
        assert!((0.0..60.0).contains(&load), "{v}");
        answers.push((v["value"].clone(), v["moves"].clone()));
        let (code, out, err) = kalah(&[
            "solve", "--houses", "3", "--seeds", "4", "--db", dir, "--tt-mb", "16",
        ]);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("database: levels 0..=10, opened in "), "{out}");
    }
    assert_eq!(answers[0], answers[1]);
    // The table's size at the end: `solve_json` asks for at most 16 MiB; by default the
    // table starts at 16 MiB, and a search this small does not make it grow.
    assert_eq!(
        solve_json(&["--houses", "3", "--seeds", "4", "--build-upto", "0"])["table_mib"],
        16
    );
    let dir = root.path().join("stored");
    let (code, out, err) = kalah(&[
        "solve",
        "--houses",
        "3",
        "--seeds",
        "4",
        "--db",
        dir.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["table_mib"], 16, "{v}");
    // And both agree with the search alone.
    let alone = solve_json(&[
        "--houses",
        "3",
        "--seeds",
        "4",
        "--all-moves",
        "--build-upto",
        "0",
    ]);
    assert_eq!(answers[0], (alone["value"].clone(), alone["moves"].clone()));
}

#[test]
fn guesses_deepening_and_threads_change_the_work_not_the_answer() {
    // 5 houses, 3 seeds, empty capture, every opening move: from a wrong guess and from the
    // right one, with and without deepening, on one and two threads, the same values.
    let base = [
        "--houses",
        "5",
        "--seeds",
        "3",
        "--capture",
        "empty",
        "--all-moves",
    ];
    let reference = solve_json(&base);
    for extra in [
        &["--guess", "-9", "--threads", "1"][..],
        &["--guess", "2", "--threads", "2"],
        &["--deepening", "off", "--threads", "2"],
        &["--deepening", "2,2,9", "--threads", "1"],
    ] {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        let got = solve_json(&args);
        for key in ["value", "moves", "best"] {
            assert_eq!(got[key], reference[key], "{extra:?}: {key}");
        }
    }
    for bad in ["5,3", "0,3,9", "9,3,5", "a,b,c"] {
        let (code, _, err) = kalah(&["solve", "--houses", "4", "--seeds", "2", "--deepening", bad]);
        assert_eq!(code, 2, "--deepening {bad}: {err}");
        assert!(err.contains("deepening"), "{err}");
    }
}

#[test]
fn db_with_build_upto_builds_into_that_directory() {
    let cwd = tempfile::tempdir().unwrap();
    let dir = cwd.path().join("fresh");
    let dir_s = dir.to_str().unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_kalah"))
            .args(args)
            .current_dir(cwd.path())
            .output()
            .unwrap()
    };
    let args = [
        "solve",
        "--houses",
        "4",
        "--seeds",
        "2",
        "--json",
        "--tt-mb",
        "16",
        "--db",
        dir_s,
        "--build-upto",
        "8",
    ];
    let out = run(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["database_seeds"], 8, "{v}");
    assert!(dir.join("level-008.kdb").is_file());
    // Nothing went to the default directory.
    assert!(!cwd.path().join("data").exists());
    // query and prove do the same.
    let q = run(&[
        "query",
        "--houses",
        "4",
        "--json",
        "--db",
        dir_s,
        "--build-upto",
        "10",
        "2 2 2 2 / 2 2 2 2",
    ]);
    assert!(q.status.success(), "{}", String::from_utf8_lossy(&q.stderr));
    assert!(dir.join("level-010.kdb").is_file());
    // Without --build-upto, a directory with no database is an error, as before.
    let empty = cwd.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let e = run(&[
        "solve",
        "--houses",
        "4",
        "--seeds",
        "2",
        "--db",
        empty.to_str().unwrap(),
    ]);
    assert_eq!(e.status.code(), Some(1));
}
