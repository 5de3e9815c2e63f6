//! `kalah prove`, `prove status` and `prove check`, run as a user would: values against the
//! reference minimax, a run killed with SIGKILL and resumed, a ledger edited by hand.

#[path = "../../../tests/reference.rs"]
mod reference;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn kalah(cwd: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kalah"))
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `kalah args` started in `cwd`, its output kept for [`interrupt`].
fn start(cwd: &Path, args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_kalah"))
        .args(args)
        .current_dir(cwd)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Stops `child` with SIGINT, as Ctrl-C does, and returns its output.
fn interrupt(child: std::process::Child) -> std::process::Output {
    // SAFETY: sends a signal to the child's process id; no memory is involved.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    child.wait_with_output().unwrap()
}

/// The JSON of one checksummed line (JSON, a tab, the checksum) of a ledger-format file.
fn line_json(line: &str) -> Value {
    serde_json::from_str(line.rsplit_once('\t').unwrap().0).unwrap()
}

/// The checksummed line (with its newline) of `v`, as a ledger-format file holds it: the
/// inverse of [`line_json`], for forging records that only the check can catch.
fn signed_line(v: &Value) -> String {
    let t = v.to_string();
    format!("{t}\t{:016x}\n", xxhash_rust::xxh3::xxh3_64(t.as_bytes()))
}

fn json(cwd: &Path, args: &[&str]) -> Value {
    let (code, out, err) = kalah(cwd, args);
    assert_eq!(code, 0, "{args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
}

fn rules_of(
    houses: usize,
    seeds: u32,
    capture: &str,
    leftover: &str,
    end: &str,
) -> kalah_solver::Rules {
    kalah_solver::Rules {
        houses,
        seeds,
        capture: capture.parse().unwrap(),
        leftover: leftover.parse().unwrap(),
        end: end.parse().unwrap(),
    }
}

/// The row of `results --json` output `r` for the game `rules`.
fn results_row(r: &Value, rules: &kalah_solver::Rules) -> Value {
    r["games"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| {
            g["houses"] == rules.houses
                && g["seeds"] == rules.seeds
                && g["capture"] == rules.capture.name()
                && g["leftover"] == rules.leftover.name()
                && g["end"] == rules.end.name()
        })
        .unwrap_or_else(|| panic!("{rules}: no row in {r}"))
        .clone()
}

/// The start value by the reference minimax (South's margin: stores are empty at the start).
fn reference_value(houses: usize, seeds: u32, capture: &str, leftover: &str, end: &str) -> i64 {
    let rules = rules_of(houses, seeds, capture, leftover, end);
    let start = vec![seeds as u8; houses];
    reference::ref_board_value(&rules, &start, &start)
}

fn prove_args<'a>(dir: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "prove",
        "--json",
        "--dir",
        dir,
        "--tt-mb",
        "16",
        "--threads",
        "2",
    ];
    a.extend_from_slice(rest);
    a
}

#[test]
fn prove_agrees_with_the_reference_in_every_variant_and_check_holds() {
    let work = tempfile::tempdir().unwrap();
    let cwd = work.path();
    let mut n = 0;
    let mut games = Vec::new();
    for &(houses, seeds) in &[(3usize, 3u32), (4, 2)] {
        for capture in ["standard", "empty", "never"] {
            for leftover in ["owner", "emptier", "discard"] {
                for end in ["either", "mover"] {
                    let want = reference_value(houses, seeds, capture, leftover, end);
                    let dir = format!("l{n}");
                    n += 1;
                    let h = houses.to_string();
                    let s = seeds.to_string();
                    let rules = [
                        "--houses",
                        &h,
                        "--seeds",
                        &s,
                        "--capture",
                        capture,
                        "--leftover",
                        leftover,
                        "--end",
                        end,
                    ];
                    // Tiny units: the proof is split into many.
                    let mut args = prove_args(&dir, &rules);
                    args.extend_from_slice(&[
                        "--unit-nodes",
                        "1000",
                        "--guess",
                        "-3",
                        "--build-upto",
                        "6",
                    ]);
                    let v = json(cwd, &args);
                    let what = format!("{h}x{s} {capture} {leftover} {end}");
                    assert_eq!(v["value"].as_i64(), Some(want), "{what}: {v}");
                    assert_eq!(v["lower"], v["upper"], "{what}");
                    games.push((rules_of(houses, seeds, capture, leftover, end), want));
                    // Sign: the same result word as the reference's sign (the ledgers apart,
                    // so that `results` reads each kind on its own).
                    let sign_dir = format!("sign/{dir}");
                    let mut args = prove_args(&sign_dir, &rules);
                    args.extend_from_slice(&[
                        "--unit-nodes",
                        "1000",
                        "--goal",
                        "sign",
                        "--build-upto",
                        "6",
                    ]);
                    let v = json(cwd, &args);
                    let word = match want.signum() {
                        1 => "win",
                        0 => "draw",
                        _ => "loss",
                    };
                    assert_eq!(v["result"].as_str(), Some(word), "{what} sign: {v}");
                    let lo = v["lower"].as_i64().unwrap();
                    let hi = v["upper"].as_i64().unwrap();
                    assert!(lo <= want && want <= hi, "{what} sign bounds {lo}..{hi}");
                    // The check proves every unit again and derives the same value.
                    let c = json(cwd, &["prove", "check", &dir, "--json", "--tt-mb", "16"]);
                    assert_eq!(c["ok"], true, "{what}: {c}");
                    assert_eq!(c["lower"].as_i64(), Some(want), "{what}");
                    assert!(c["reproved"].as_u64().unwrap() >= 1);
                    // A second run finds everything in the ledger: no new unit.
                    let mut args = prove_args(&dir, &rules);
                    args.extend_from_slice(&["--unit-nodes", "1000", "--build-upto", "6"]);
                    let again = json(cwd, &args);
                    assert_eq!(again["value"].as_i64(), Some(want), "{what}");
                    assert_eq!(again["units"].as_u64(), Some(0), "{what}: {again}");
                }
            }
        }
    }
    // With no first turn settled, `results` bounds the pie value by the start's value alone
    // (its best first turn is worth it), and the naive pie value lies within those bounds;
    // the sign ledgers' wider bounds hold it too.
    for (proofs, exact) in [(".", true), ("sign", false)] {
        let r = json(
            cwd,
            &[
                "results",
                "--file",
                "none.json",
                "--proofs",
                proofs,
                "--json",
            ],
        );
        for (rules, want) in &games {
            let row = results_row(&r, rules);
            let pie = -reference_first_turns(rules)
                .iter()
                .map(|t| t.1.abs())
                .min()
                .unwrap();
            let lo = row["pie_lower"].as_i64().unwrap();
            let hi = row["pie_upper"].as_i64().unwrap();
            assert!(lo <= pie && pie <= hi, "{rules} ({proofs}): {pie} in {row}");
            if exact {
                assert_eq!(lo, -want.abs(), "{rules}: {row}");
            }
        }
    }
}

#[test]
fn every_opening_moves_value_is_proven_checked_and_shown() {
    let work = tempfile::tempdir().unwrap();
    let cwd = work.path();
    // Boards bigger than their database (6 seeds), so that the openings need units of their
    // own; `discard` leaves values without parity.
    for (n, &(houses, seeds, capture, leftover)) in [
        (3usize, 3u32, "standard", "owner"),
        (4, 2, "empty", "owner"),
        (3, 3, "never", "discard"),
    ]
    .iter()
    .enumerate()
    {
        let rules = rules_of(houses, seeds, capture, leftover, "either");
        let start = vec![seeds as u8; houses];
        let want =
            reference::ref_move_values(&rules, &reference::RefState::from_sides(&start, &start));
        let want_value = want.iter().map(|&(_, v)| v).max().unwrap();
        let what = format!("{houses}x{seeds} {capture} {leftover}");
        let dir = format!("o{n}");
        let (h, s) = (houses.to_string(), seeds.to_string());
        let mut args = prove_args(
            &dir,
            &[
                "--houses",
                &h,
                "--seeds",
                &s,
                "--capture",
                capture,
                "--leftover",
                leftover,
            ],
        );
        args.extend_from_slice(&["--unit-nodes", "1000", "--build-upto", "6", "--openings"]);
        let v = json(cwd, &args);
        assert_eq!(v["value"].as_i64(), Some(want_value), "{what}: {v}");
        let got: Vec<(usize, i64)> = v["moves"]
            .as_array()
            .unwrap_or_else(|| panic!("{what}: no moves in {v}"))
            .iter()
            .map(|m| {
                assert_eq!(m["lower"], m["upper"], "{what}: {m}");
                (
                    m["house"].as_u64().unwrap() as usize - 1,
                    m["value"].as_i64().unwrap(),
                )
            })
            .collect();
        assert_eq!(got, want, "{what}");
        assert!(v["units"].as_u64().unwrap() > 0, "{what}: {v}");
        // The ledger says the same to `status`, and `check` derives every opening record.
        let st = json(cwd, &["prove", "status", &dir, "--json"]);
        let shown: Vec<(usize, i64, i64)> = st["moves"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["house"].as_u64().unwrap() as usize - 1,
                    m["lower"].as_i64().unwrap(),
                    m["upper"].as_i64().unwrap(),
                )
            })
            .collect();
        let want3: Vec<(usize, i64, i64)> = want.iter().map(|&(h, x)| (h, x, x)).collect();
        assert_eq!(shown, want3, "{what}: status {st}");
        let c = json(
            cwd,
            &[
                "prove", "check", &dir, "--json", "--tt-mb", "16", "--sample", "10", "--seed", "1",
            ],
        );
        assert_eq!(c["ok"], true, "{what}: {c}");
        // Run again: everything is in the ledger.
        let again = json(cwd, &args);
        assert_eq!(again["moves"], v["moves"], "{what}");
        assert_eq!(again["units"].as_u64(), Some(0), "{what}: {again}");
    }
    // An opening record forged to claim the opposite is caught by the check.
    let path = cwd.join("o0/ledger.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut forged_one = false;
    let forged: String = text
        .lines()
        .map(|l| {
            let (json_text, sum) = l.rsplit_once('\t').unwrap();
            let mut j: Value = serde_json::from_str(json_text).unwrap();
            if j["kind"] != "opening" || forged_one {
                return format!("{l}\n");
            }
            forged_one = true;
            let _ = sum;
            j["holds"] = Value::Bool(j["holds"] != true);
            signed_line(&j)
        })
        .collect();
    assert!(forged_one);
    std::fs::write(&path, &forged).unwrap();
    let (code, out, _) = kalah(cwd, &["prove", "check", "o0"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("after opening move"), "{out}");
    // Only with the exact goal.
    let (code, _, err) = kalah(
        cwd,
        &[
            "prove",
            "--houses",
            "3",
            "--seeds",
            "2",
            "--goal",
            "sign",
            "--openings",
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("need --goal exact"), "{err}");
}

fn ledger_lines(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

#[test]
fn a_run_killed_at_any_moment_resumes_from_its_ledger() {
    let work = tempfile::tempdir().unwrap();
    let cwd = work.path();
    // 6x3 with the database up to 8 seeds and units of a few thousand nodes: hundreds of
    // units, long enough to be killed in the middle.
    let rules = ["--houses", "6", "--seeds", "3", "--capture", "empty"];
    let want = json(
        cwd,
        &[
            "solve",
            "--json",
            "--houses",
            "6",
            "--seeds",
            "3",
            "--capture",
            "empty",
            "--build-upto",
            "8",
            "--tt-mb",
            "16",
        ],
    )["value"]
        .as_i64()
        .unwrap();
    let mut args = prove_args("run", &rules);
    args.extend_from_slice(&[
        "--unit-nodes",
        "2000",
        "--build-upto",
        "8",
        "--split-depth",
        "6",
        "--table-every",
        "0",
    ]);
    let ledger = cwd.join("run/ledger.jsonl");
    let table = cwd.join("run/table.ckp");
    let mut kills = 0;
    for round in 0..3 {
        let before = ledger_lines(&ledger);
        let mut child = Command::new(env!("CARGO_BIN_EXE_kalah"))
            .args(&args)
            .current_dir(cwd)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        let mut finished = false;
        loop {
            if let Some(_status) = child.try_wait().unwrap() {
                finished = true;
                break;
            }
            if ledger_lines(&ledger) >= before + 15 + 10 * round
                || t0.elapsed() > Duration::from_secs(60)
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        if !finished {
            // SIGKILL: no handler runs, the ledger is left as it is at this instant.
            child.kill().unwrap();
            child.wait().unwrap();
            kills += 1;
            // With `--table-every 0` the table is saved after each unit, before its record:
            // a run killed outright leaves one once its ledger holds a unit.
            if ledger_lines(&ledger) >= 5 {
                assert!(table.is_file(), "a killed run left no table");
            }
        }
        // What was written before the kill is kept: the file only grows.
        assert!(ledger_lines(&ledger) >= before);
    }
    assert!(kills >= 1, "the run was too quick to be killed");
    let text_before = std::fs::read_to_string(&ledger).unwrap();
    let v = json(cwd, &args);
    assert_eq!(v["value"].as_i64(), Some(want), "{v}");
    // The resumed run appended to the ledger of the killed ones.
    let text_after = std::fs::read_to_string(&ledger).unwrap();
    let kept = text_before
        .rfind('\n')
        .map(|i| &text_before[..=i])
        .unwrap_or("");
    assert!(text_after.starts_with(kept));
    let c = json(
        cwd,
        &[
            "prove", "check", "run", "--json", "--sample", "20", "--seed", "3", "--tt-mb", "16",
        ],
    );
    assert_eq!(c["ok"], true, "{c}");
    assert_eq!(c["lower"].as_i64(), Some(want));
    let s = json(cwd, &["prove", "status", "run", "--json"]);
    assert_eq!(s["lower"].as_i64(), Some(want));
    assert_eq!(s["upper"].as_i64(), Some(want));
    assert!(s["units_open"].as_u64().unwrap() > 0, "{s}");
    assert_eq!(s["moves"].as_array().unwrap().len(), 6);
    // Margins of finished games have the parity of the 36 seeds: so has every bound shown.
    for m in s["moves"].as_array().unwrap() {
        for k in ["lower", "upper"] {
            assert_eq!(m[k].as_i64().unwrap().rem_euclid(2), 0, "{s}");
        }
    }
    // The best opening moves are bounded at the value from both sides by the root's answers.
    let text = kalah(cwd, &["prove", "status", "run"]).1;
    assert!(text.contains("opening move 1"), "{text}");
    // Nothing is proven again yet.
    assert_eq!(s["rechecked"], Value::Null, "{s}");
    assert!(!text.contains("proven again"), "{text}");

    // A check stopped by SIGINT says what it proved again and how to go on; going on proves
    // the rest and derives the root.
    let check = [
        "prove",
        "check",
        "run",
        "--json",
        "--tt-mb",
        "16",
        "--threads",
        "1",
    ];
    let child = start(cwd, &check);
    std::thread::sleep(Duration::from_millis(700));
    let out = interrupt(child);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(130),
        "the check was too quick to stop: {err}"
    );
    let first: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(first["interrupted"], true, "{first}");
    assert_eq!(first["ok"], true, "{first}");
    let done = first["reproved"].as_u64().unwrap();
    assert!(err.contains("go on with: kalah prove check run"), "{err}");
    let mut rest: Vec<String> = check.iter().map(|s| s.to_string()).collect();
    if let Some(l) = first["last_line"].as_u64() {
        assert!(err.contains(&format!("up to ledger line {l}")), "{err}");
        rest.extend(["--after-line".to_string(), l.to_string()]);
    }
    let all = json(cwd, &check[..]);
    let r: Vec<&str> = rest.iter().map(|s| s.as_str()).collect();
    let second = json(cwd, &r);
    assert_eq!(second["ok"], true, "{second}");
    assert_eq!(second["lower"].as_i64(), Some(want));
    assert_eq!(
        second["reproved"].as_u64().unwrap() + done,
        all["reproved"].as_u64().unwrap()
    );
    // --needed proves again exactly the units the root's records rest on: some, not all
    // (units of lines the coordinator abandoned are not needed).
    let mut needed_args = check.to_vec();
    needed_args.push("--needed");
    let needed = json(cwd, &needed_args);
    assert_eq!(needed["ok"], true, "{needed}");
    let n = needed["needed"].as_u64().unwrap();
    assert_eq!(needed["reproved"].as_u64(), Some(n), "{needed}");
    assert_eq!(all["needed"].as_u64(), Some(n));
    assert!(
        n > 0 && n < all["reproved"].as_u64().unwrap(),
        "{needed} {all}"
    );
    assert_eq!(needed["lower"].as_i64(), Some(want));
    // Each of them is recorded beside the ledger, and a second --needed check searches none
    // again: it counts what the first recorded.
    let file = cwd.join("run/rechecked.jsonl");
    let records = std::fs::read_to_string(&file).unwrap();
    assert_eq!(records.lines().count() as u64, n);
    let again = json(cwd, &needed_args);
    assert_eq!(again["ok"], true, "{again}");
    assert_eq!(again["reproved"].as_u64(), Some(0), "{again}");
    assert_eq!(again["recorded"].as_u64(), Some(n), "{again}");
    assert_eq!(again["recorded_nodes"], needed["nodes"], "{again}");
    // `prove status` says how many units are proven again, and whether they agree.
    let st = json(cwd, &["prove", "status", "run", "--json"]);
    let r = &st["rechecked"];
    assert_eq!(r["units"].as_u64(), Some(n), "{st}");
    assert_eq!(r["agree"].as_u64(), Some(n), "{st}");
    assert_eq!(r["stale"].as_u64(), Some(0), "{st}");
    assert_eq!(r["nodes"], needed["nodes"], "{st}");
    assert_eq!(r["needed"]["units"].as_u64(), Some(n), "{st}");
    assert_eq!(r["needed"]["rechecked"].as_u64(), Some(n), "{st}");
    let text = kalah(cwd, &["prove", "status", "run"]).1;
    assert!(
        text.contains(&format!("{n} units, {n} as the ledger says, 0 not")),
        "{text}"
    );
    assert!(
        text.contains(&format!("{n} of the {n} units the records rest on")),
        "{text}"
    );
    // Needed units derived from a shorter ledger are said to be so, and not counted by results.
    let needed_file = cwd.join("run/needed.json");
    let saved = std::fs::read_to_string(&needed_file).unwrap();
    let mut j = line_json(&saved);
    j["ledger_lines"] = Value::from(j["ledger_lines"].as_u64().unwrap() - 1);
    let shorter = signed_line(&j);
    std::fs::write(&needed_file, shorter).unwrap();
    let st = json(cwd, &["prove", "status", "run", "--json"]);
    assert_eq!(st["rechecked"]["needed"]["current"], false, "{st}");
    let text = kalah(cwd, &["prove", "status", "run"]).1;
    assert!(
        text.contains("from before the ledger's last lines"),
        "{text}"
    );
    let table = kalah(cwd, &["results", "--file", "none.json", "--proofs", "."]).1;
    assert!(
        table.contains(&format!("; {n} units proven again, each as")),
        "{table}"
    );
    // A damaged one is an error that status shows, as for the records.
    std::fs::write(&needed_file, &saved[1..]).unwrap();
    let st = json(cwd, &["prove", "status", "run", "--json"]);
    let e = st["rechecked"]["error"].as_str().unwrap();
    assert!(e.contains("needed.json"), "{st}");
    std::fs::write(&needed_file, &saved).unwrap();
    // A --needed check stopped by SIGINT leaves its own table and the unit under way with the
    // work spent on it; the next one starts from them, counts that work in the unit's record,
    // and removes both once every unit is proven again.
    let table = cwd.join("run/recheck-table.ckp");
    let unit_file = cwd.join("run/recheck-unit.json");
    std::fs::remove_file(&file).unwrap();
    let child = start(cwd, &needed_args);
    // Stopped once the first unit is recorded: the check is then under way, and the others
    // are still to come.
    let begun = std::time::Instant::now();
    while std::fs::metadata(&file).map_or(0, |m| m.len()) == 0 {
        assert!(
            begun.elapsed() < Duration::from_secs(120),
            "no unit recorded"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    let out = interrupt(child);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "too quick to stop: {err}");
    assert!(table.is_file() && unit_file.is_file(), "{err}");
    assert!(
        err.contains("saved its table and the unit under way"),
        "{err}"
    );
    let unit = line_json(&std::fs::read_to_string(&unit_file).unwrap());
    let stopped: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stopped["saved_unit"], unit["line"], "{stopped}");
    let (code, out, err) = kalah(cwd, &needed_args);
    assert_eq!(code, 0, "{out} {err}");
    assert!(err.contains("a stopped check's own work"), "{err}");
    assert!(!table.exists() && !unit_file.exists());
    let done: Vec<Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(line_json)
        .collect();
    assert_eq!(done.len() as u64, n);
    let rec = done.iter().find(|r| r["line"] == unit["line"]).unwrap();
    assert_eq!(rec["board"], unit["board"], "{rec} {unit}");
    assert!(
        rec["nodes"].as_u64() >= unit["nodes"].as_u64(),
        "{rec} {unit}"
    );
    // A damaged table costs only time (a warning), and the unit's saved work still counts.
    let last = done.last().unwrap();
    let kept = std::fs::read_to_string(&file).unwrap();
    let cut = kept.trim_end_matches('\n').rfind('\n').unwrap();
    std::fs::write(&file, &kept[..=cut]).unwrap();
    std::fs::write(&table, b"KALAHCKP garbage").unwrap();
    let earlier = serde_json::json!({"line": last["line"], "board": last["board"],
        "threshold": last["threshold"], "nodes": 1_000_000_000_000u64, "seconds": 5000.0});
    std::fs::write(&unit_file, signed_line(&earlier)).unwrap();
    let (code, out, err) = kalah(cwd, &needed_args);
    assert_eq!(code, 0, "{out} {err}");
    assert!(err.contains("starting with an empty table"), "{err}");
    let redone: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(redone["reproved"].as_u64(), Some(1), "{redone}");
    let text = std::fs::read_to_string(&file).unwrap();
    let rec = line_json(text.lines().last().unwrap());
    assert_eq!(rec["line"], last["line"]);
    assert!(rec["nodes"].as_u64().unwrap() > 1_000_000_000_000, "{rec}");
    assert!(rec["seconds"].as_f64().unwrap() > 5000.0, "{rec}");
    assert!(!table.exists() && !unit_file.exists());
    // A record that says the search disagreed (checksum made good) is an error, not skipped.
    let mut lines: Vec<String> = records.lines().map(String::from).collect();
    let json_text = lines[0].rsplit_once('\t').unwrap().0.to_string();
    let json_text = json_text.as_str();
    let mut j: Value = serde_json::from_str(json_text).unwrap();
    j["found"] = Value::String(
        if j["claimed"] == "below" {
            "at-least"
        } else {
            "below"
        }
        .into(),
    );
    lines[0] = signed_line(&j).trim_end().to_string();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let (code, out, _) = kalah(cwd, &needed_args);
    assert_eq!(code, 1, "{out}");
    let bad: Value = serde_json::from_str(&out).unwrap();
    assert!(
        bad["errors"][0].as_str().unwrap().contains("as recorded"),
        "{bad}"
    );
    let st = json(cwd, &["prove", "status", "run", "--json"]);
    assert_eq!(st["rechecked"]["units"].as_u64(), Some(n), "{st}");
    assert_eq!(st["rechecked"]["agree"].as_u64(), Some(n - 1), "{st}");
    let text = kalah(cwd, &["prove", "status", "run"]).1;
    assert!(text.contains(", 1 not;"), "{text}");
    // So does `results`, beside the ledger's totals.
    let table = kalah(cwd, &["results", "--file", "none.json", "--proofs", "."]).1;
    assert!(
        table.contains(&format!(
            "{n} of {n} needed units proven again, 1 NOT as the ledger says"
        )),
        "{table}"
    );
    // A record of another position is not used: that unit is searched again.
    let mut j: Value = serde_json::from_str(json_text).unwrap();
    j["threshold"] = Value::from(j["threshold"].as_i64().unwrap() + 100);
    lines[0] = signed_line(&j).trim_end().to_string();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let (code, out, err) = kalah(cwd, &needed_args);
    assert_eq!(code, 0, "{out} {err}");
    assert!(err.contains("match no proven unit"), "{err}");
    let redone: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(redone["reproved"].as_u64(), Some(1), "{redone}");
    assert_eq!(redone["recorded"].as_u64(), Some(n - 1), "{redone}");
    // (The record of the other position is still the file's first line, then the one that
    // replaced it.)
    let st = json(cwd, &["prove", "status", "run", "--json"]);
    assert_eq!(st["rechecked"]["stale"].as_u64(), Some(1), "{st}");
    assert_eq!(st["rechecked"]["units"].as_u64(), Some(n), "{st}");
    assert_eq!(st["rechecked"]["agree"].as_u64(), Some(n), "{st}");
    // A damaged record before the last line is an error naming the file.
    let damaged = records.replacen("\"line\"", "\"lime\"", 1) + &records;
    std::fs::write(&file, damaged).unwrap();
    let (code, _, err) = kalah(cwd, &needed_args);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("rechecked.jsonl line 1"), "{err}");
    // `prove status` still says where the proof stands, and that the records are damaged.
    let (code, out, err) = kalah(cwd, &["prove", "status", "run", "--json"]);
    assert_eq!(code, 0, "{out} {err}");
    let st: Value = serde_json::from_str(&out).unwrap();
    let e = st["rechecked"]["error"].as_str().unwrap();
    assert!(e.contains("rechecked.jsonl line 1"), "{st}");
    assert_eq!(st["lower"].as_i64(), Some(want), "{st}");
}

#[test]
fn a_ledger_edited_to_claim_a_false_result_is_caught() {
    let work = tempfile::tempdir().unwrap();
    let cwd = work.path();
    let rules = ["--houses", "4", "--seeds", "3"];
    let mut args = prove_args("l", &rules);
    args.extend_from_slice(&["--unit-nodes", "1000", "--build-upto", "6"]);
    let v = json(cwd, &args);
    let value = v["value"].as_i64().unwrap();
    let path = cwd.join("l/ledger.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    // A byte changed: the checksum names the line.
    let damaged = text.replacen("\"at-least\"", "\"below\"", 1);
    std::fs::write(&path, &damaged).unwrap();
    let (code, _, err) = kalah(cwd, &["prove", "check", "l"]);
    assert_eq!(code, 1);
    assert!(err.contains("checksum") && err.contains("line"), "{err}");
    // The same edit with the checksum recomputed: the search proves the unit again and
    // disagrees, or the root no longer follows.
    let forged: String = text
        .lines()
        .map(|l| {
            let (json_text, _) = l.rsplit_once('\t').unwrap();
            let mut j: Value = serde_json::from_str(json_text).unwrap();
            if j["kind"] == "root" && j["holds"] == true {
                j["holds"] = Value::Bool(false);
            } else if j["verdict"] == "at-least" {
                j["verdict"] = Value::String("below".into());
            }
            signed_line(&j)
        })
        .collect();
    std::fs::write(&path, &forged).unwrap();
    let (code, out, _) = kalah(cwd, &["prove", "check", "l"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("the search says") && out.contains("claims"),
        "{out}"
    );
    // A forged root claim alone (a false value) is caught by the derivation.
    let false_root: String = text
        .lines()
        .map(|l| {
            let (json_text, _) = l.rsplit_once('\t').unwrap();
            let mut j: Value = serde_json::from_str(json_text).unwrap();
            if j["kind"] == "root" && j["holds"] == false {
                j["holds"] = Value::Bool(true);
            }
            signed_line(&j)
        })
        .collect();
    std::fs::write(&path, &false_root).unwrap();
    let (code, out, _) = kalah(cwd, &["prove", "check", "l"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("but its units"), "{out}");
    // Status still reads it, and says what the (forged) records claim.
    let s = json(cwd, &["prove", "status", "l", "--json"]);
    assert!(s["lower"].as_i64().unwrap() > value);
    // Another process writing the same ledger is refused while one holds it; an unreadable
    // ledger is an error, not a panic.
    std::fs::write(&path, "not a ledger\n").unwrap();
    let (code, _, err) = kalah(cwd, &args);
    assert_eq!(code, 1);
    assert!(err.contains("line 1"), "{err}");
}

#[test]
fn a_run_leaves_its_table_for_the_next_one_which_proves_the_same() {
    let work = tempfile::tempdir().unwrap();
    let cwd = work.path();
    let rules = ["--houses", "4", "--seeds", "3", "--capture", "empty"];
    let want = reference_value(4, 3, "empty", "owner", "either");
    let mut args = prove_args("first", &rules);
    args.extend_from_slice(&["--unit-nodes", "2000", "--build-upto", "8"]);
    let v = json(cwd, &args);
    assert_eq!(v["value"].as_i64(), Some(want), "{v}");
    let table = cwd.join("first").join("table.ckp");
    assert!(table.is_file(), "the run saves its table beside the ledger");
    // A new ledger with the first run's table: the same value, the table said and recorded.
    std::fs::create_dir(cwd.join("second")).unwrap();
    std::fs::copy(&table, cwd.join("second").join("table.ckp")).unwrap();
    let mut args = prove_args("second", &rules);
    args.retain(|&a| a != "--json");
    args.extend_from_slice(&["--unit-nodes", "2000", "--build-upto", "8"]);
    let (code, out, err) = kalah(cwd, &args);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("value: {want:+}")), "{out}");
    assert!(err.contains("proven table entries from"), "{err}");
    assert!(err.contains("saved"), "{err}");
    let ledger = std::fs::read_to_string(cwd.join("second").join("ledger.jsonl")).unwrap();
    assert!(ledger.contains("+table"), "{ledger}");
    // The check never reads the table: it proves every unit again from nothing.
    let c = json(
        cwd,
        &["prove", "check", "second", "--json", "--tt-mb", "16"],
    );
    assert_eq!(c["ok"], true, "{c}");
    assert_eq!(c["lower"].as_i64(), Some(want));
    // A damaged table is only a warning: the run goes on with an empty one.
    std::fs::write(cwd.join("first").join("table.ckp"), b"KALAHCKP garbage").unwrap();
    std::fs::remove_file(cwd.join("first").join("ledger.jsonl")).unwrap();
    let mut args = prove_args("first", &rules);
    args.extend_from_slice(&["--unit-nodes", "2000", "--build-upto", "8"]);
    let (code, out, err) = kalah(cwd, &args);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("warning") && err.contains("empty table"),
        "{err}"
    );
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["value"].as_i64(), Some(want), "{v}");
}

#[test]
fn positions_near_the_start_are_split_without_units_when_asked() {
    let work = tempfile::tempdir().unwrap();
    let cwd = work.path();
    let rules = ["--houses", "4", "--seeds", "3", "--capture", "empty"];
    let want = reference_value(4, 3, "empty", "owner", "either");
    let mut args = prove_args("near", &rules);
    args.extend_from_slice(&[
        "--unit-nodes",
        "2000",
        "--build-upto",
        "8",
        "--split-above",
        "2",
    ]);
    let v = json(cwd, &args);
    assert_eq!(v["value"].as_i64(), Some(want), "{v}");
    // No searched unit (budget above 0) is less than two plies below the start.
    let ledger = std::fs::read_to_string(cwd.join("near/ledger.jsonl")).unwrap();
    let mut units = 0;
    for line in ledger.lines() {
        let (text, _) = line.rsplit_once('\t').unwrap();
        let j: Value = serde_json::from_str(text).unwrap();
        if j["kind"] == "unit" && j["budget"].as_u64() > Some(0) {
            units += 1;
            let plies = j["path"].as_str().unwrap().split_whitespace().count();
            assert!(plies >= 2, "{line}");
        }
    }
    assert!(units > 0, "{ledger}");
    let c = json(cwd, &["prove", "check", "near", "--json", "--tt-mb", "16"]);
    assert_eq!(c["ok"], true, "{c}");
    assert_eq!(c["lower"].as_i64(), Some(want));
}

/// Every first turn of `rules` (`S1 S2`, ...) with its margin by the naive search.
fn reference_first_turns(rules: &kalah_solver::Rules) -> Vec<(String, i64)> {
    kalah_driver::results::first_turns(rules)
        .iter()
        .map(|t| {
            let text: Vec<String> = t.iter().map(|h| format!("S{h}")).collect();
            (text.join(" "), reference::ref_first_turn_margin(rules, t))
        })
        .collect()
}

/// The first turns of a `prove --json` answer, each asserted exact, with their values.
fn proven_first_turns(v: &Value, what: &str) -> Vec<(String, i64)> {
    v["first_turns"]
        .as_array()
        .unwrap_or_else(|| panic!("{what}: no first turns in {v}"))
        .iter()
        .map(|t| {
            assert_eq!(t["lower"], t["upper"], "{what}: {t}");
            (
                t["moves"].as_str().unwrap().to_string(),
                t["value"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// The best margin among the first turns `turns` that begin with the move `first` (`S3`).
fn best_turn_from(turns: &[(String, i64)], first: &str) -> Option<i64> {
    turns
        .iter()
        .filter(|(t, _)| t.split(' ').next() == Some(first))
        .map(|w| w.1)
        .max()
}

/// The rule flags' values as text: houses, seeds, capture, leftover, end.
fn rule_text(houses: usize, seeds: u32, axes: [&str; 3]) -> [String; 5] {
    let [capture, leftover, end] = axes.map(String::from);
    [
        houses.to_string(),
        seeds.to_string(),
        capture,
        leftover,
        end,
    ]
}

/// `prove --json` arguments for a ledger in `dir` under the rules given as text, proving
/// every first turn with small units over a 5-seed database.
fn first_turn_args<'a>(dir: &'a str, rules: &'a [String; 5]) -> Vec<&'a str> {
    let mut a = prove_args(
        dir,
        &[
            "--houses",
            &rules[0],
            "--seeds",
            &rules[1],
            "--capture",
            &rules[2],
            "--leftover",
            &rules[3],
            "--end",
            &rules[4],
        ],
    );
    a.extend_from_slice(&["--unit-nodes", "1000", "--build-upto", "5", "--first-turns"]);
    a
}

/// Small games of the rule books for the `--estimate-depth` and `--turn` tests: (houses,
/// seeds, capture, leftover, end).
const ESTIMATED_GAMES: &[(usize, u32, &str, &str, &str)] = &[
    (3, 3, "standard", "emptier", "mover"),
    (3, 3, "never", "owner", "either"),
    (4, 2, "empty", "emptier", "either"),
];

/// A small game with what the first-turn tests need: its first turns' naive values, a name
/// for messages, its rule flags as text and a name for its ledger directories.
struct SmallGame {
    want: Vec<(String, i64)>,
    what: String,
    text: [String; 5],
    name: String,
}

/// The games `list` (houses, seeds, capture, leftover, end), as [`SmallGame`]s.
fn small_games(list: &[(usize, u32, &str, &str, &str)]) -> Vec<SmallGame> {
    list.iter()
        .map(|&(houses, seeds, capture, leftover, end)| {
            let rules = rules_of(houses, seeds, capture, leftover, end);
            SmallGame {
                want: reference_first_turns(&rules),
                what: format!("{houses}x{seeds} {capture} {leftover} {end}"),
                text: rule_text(houses, seeds, [capture, leftover, end]),
                name: format!("{houses}x{seeds}-{capture}"),
            }
        })
        .collect()
}

/// The records of a ledger's text, each line's JSON without its checksum.
fn ledger_json(ledger: &str) -> Vec<Value> {
    ledger
        .lines()
        .map(|l| serde_json::from_str(l.split('\t').next().unwrap()).unwrap())
        .collect()
}

/// The turn records among a ledger's records, (moves, threshold, holds) in its order.
fn turn_records(records: &[Value]) -> Vec<(String, i64, bool)> {
    records
        .iter()
        .filter(|j| j["kind"] == "turn")
        .map(|j| {
            (
                j["moves"].as_str().unwrap().to_string(),
                j["threshold"].as_i64().unwrap(),
                j["holds"].as_bool().unwrap(),
            )
        })
        .collect()
}

/// A ledger's text cut at the first answer about first turn `turn` (its houses as the turn
/// records write them), that answer kept or not: what a run killed while asking the next
/// question, or that one, would leave.
fn cut_at_first_answer(whole: &str, turn: &str, keep_it: bool) -> String {
    let mut kept = String::new();
    for line in whole.lines() {
        let j: Value = serde_json::from_str(line.split('\t').next().unwrap()).unwrap();
        let answer = j["kind"] == "turn" && j["moves"] == turn;
        if answer && !keep_it {
            break;
        }
        kept.push_str(line);
        kept.push('\n');
        if answer {
            break;
        }
    }
    kept
}

/// The first-turn ledger of `game` proven in `dir` by `args` (its `first_turn_args`): its
/// path, its text and its turn records.
fn proven_turns(
    cwd: &Path,
    dir: &str,
    args: &[&str],
    game: &SmallGame,
) -> (PathBuf, String, Vec<(String, i64, bool)>) {
    let got = proven_first_turns(&json(cwd, args), &game.what);
    assert_eq!(got, game.want, "{}", game.what);
    let path = cwd.join(dir).join("ledger.jsonl");
    let whole = std::fs::read_to_string(&path).unwrap();
    let records = turn_records(&ledger_json(&whole));
    (path, whole, records)
}

/// `--estimate-depth` changes which thresholds are asked first, never a value: every first
/// turn settles at the naive search's margin whatever the depth, and an estimate deep enough
/// to meet no horizon (exact) settles each with at most two questions.
#[test]
fn estimates_choose_the_questions_not_the_values() {
    let work = tempfile::tempdir().unwrap();
    let cwd = work.path();
    for SmallGame {
        want,
        what,
        text,
        name,
    } in small_games(ESTIMATED_GAMES)
    {
        let mut asked = Vec::new();
        for depth in ["0", "2", "60"] {
            let dir = format!("{name}-d{depth}");
            let mut args = first_turn_args(&dir, &text);
            args.extend_from_slice(&["--openings", "--estimate-depth", depth]);
            let what = format!("{what} depth {depth}");
            let got = proven_first_turns(&json(cwd, &args), &what);
            assert_eq!(got, want, "{what}");
            let ledger = std::fs::read_to_string(cwd.join(&dir).join("ledger.jsonl")).unwrap();
            let lines = ledger_json(&ledger);
            let records = turn_records(&lines);
            if depth == "60" {
                // An exact estimate: the first question about a turn is "at least its value?".
                for (turn, value) in &want {
                    let houses = turn.replace('S', "");
                    let first = records.iter().find(|r| r.0 == houses);
                    let asked = records.iter().filter(|r| r.0 == houses).count();
                    assert!(asked <= 2, "{what}: {asked} questions about {turn}");
                    if let Some(r) = first {
                        assert_eq!((r.1, r.2), (*value, true), "{what}: {turn}: {records:?}");
                    }
                }
                // And about an opening move (after an extra turn, South's own position), "at
                // least the best of the first turns that begin with it?".
                let mut seen = std::collections::HashSet::new();
                for j in lines.iter().filter(|j| j["kind"] == "opening") {
                    if !seen.insert(j["house"].clone()) {
                        continue;
                    }
                    let first = format!("S{}", j["house"]);
                    let best = best_turn_from(&want, &first);
                    assert_eq!(j["threshold"].as_i64(), best, "{what}: {first}: {ledger}");
                    assert_eq!(j["holds"], true, "{what}: {first}: {ledger}");
                }
                assert!(!seen.is_empty(), "{what}: no opening records: {ledger}");
            }
            asked.push(records.len());
        }
        assert!(asked[2] <= asked[0], "{what}: questions {asked:?}");
    }
}

/// `--pie` proves the value under the pie rule, `-min |M|` over the first turns' naive
/// margins `M`, in every rule book's small game, with each first turn's bounds holding its
/// naive margin; with exact estimates it asks no more questions than `--first-turns` and, in
/// some game, fewer (a turn far from 0 is left once it is shown far). `--first-turns` then
/// finishes every turn in the same ledger, and `prove check` derives it.
#[test]
fn the_pie_rule_asks_only_what_it_needs() {
    let work = tempfile::tempdir().unwrap();
    let cwd = work.path();
    let mut games = ESTIMATED_GAMES.to_vec();
    games.extend_from_slice(&[
        (3, 3, "standard", "owner", "either"),
        (4, 2, "empty", "owner", "either"),
    ]);
    let (mut fewer, mut total) = (0, 0);
    for (i, game) in small_games(&games).into_iter().enumerate() {
        let pie = -game.want.iter().map(|w| w.1.abs()).min().unwrap();
        for depth in ["0", "60"] {
            let what = format!("{} depth {depth}", game.what);
            let dir = format!("{}-{i}-pie-d{depth}", game.name);
            let mut args = first_turn_args(&dir, &game.text);
            assert_eq!(args.pop(), Some("--first-turns"));
            args.extend_from_slice(&["--estimate-depth", depth]);
            let pie_args = |dir| {
                let mut a = first_turn_args(dir, &game.text);
                assert_eq!(a.pop(), Some("--first-turns"));
                a.extend_from_slice(&["--estimate-depth", depth, "--pie"]);
                a
            };
            let v = json(cwd, &pie_args(&dir));
            assert_eq!(v["pie"]["value"].as_i64(), Some(pie), "{what}: {v}");
            assert_eq!(v["pie"]["lower"], v["pie"]["upper"], "{what}: {v}");
            let turns = v["first_turns"].as_array().unwrap();
            assert_eq!(turns.len(), game.want.len(), "{what}: {v}");
            for (t, (moves, m)) in turns.iter().zip(&game.want) {
                assert_eq!(t["moves"].as_str(), Some(moves.as_str()), "{what}");
                let (lo, hi) = (t["lower"].as_i64().unwrap(), t["upper"].as_i64().unwrap());
                assert!(lo <= *m && *m <= hi, "{what}: {moves} {m} in {t}");
            }
            let st = json(cwd, &["prove", "status", &dir, "--json"]);
            assert_eq!(st["pie"]["value"].as_i64(), Some(pie), "{what}: {st}");
            let path = cwd.join(&dir).join("ledger.jsonl");
            let whole = std::fs::read_to_string(&path).unwrap();
            let records = turn_records(&ledger_json(&whole));
            let asked = records.len();
            // Stopped after its first answer, as a killed run would be: it goes on to the
            // same value, asking no question twice.
            if let Some(first) = records.first() {
                let cut = format!("{dir}-cut");
                std::fs::create_dir(cwd.join(&cut)).unwrap();
                let kept = cut_at_first_answer(&whole, &first.0, true);
                std::fs::write(cwd.join(&cut).join("ledger.jsonl"), kept).unwrap();
                let w = json(cwd, &pie_args(&cut));
                assert_eq!(w["pie"]["value"].as_i64(), Some(pie), "{what} resumed: {w}");
                let text = std::fs::read_to_string(cwd.join(&cut).join("ledger.jsonl")).unwrap();
                let redone = turn_records(&ledger_json(&text));
                let distinct: std::collections::HashSet<_> = redone.iter().collect();
                assert_eq!(distinct.len(), redone.len(), "{what} resumed: {redone:?}");
            }
            args.push("--first-turns");
            assert_eq!(
                proven_first_turns(&json(cwd, &args), &what),
                game.want,
                "{what}"
            );
            let c = json(cwd, &["prove", "check", &dir, "--json", "--tt-mb", "16"]);
            assert_eq!(c["ok"], true, "{what}: {c}");
            if depth == "60" {
                let exact_dir = format!("{}-{i}-exact-d{depth}", game.name);
                let mut exact = first_turn_args(&exact_dir, &game.text);
                exact.extend_from_slice(&["--estimate-depth", depth]);
                json(cwd, &exact);
                let path = cwd.join(&exact_dir).join("ledger.jsonl");
                let all =
                    turn_records(&ledger_json(&std::fs::read_to_string(&path).unwrap())).len();
                assert!(asked <= all, "{what}: {asked} questions against {all}");
                fewer += usize::from(asked < all);
                total += 1;
            }
        }
    }
    assert!(
        fewer > 0,
        "--pie asked as many questions as --first-turns in all {total} games"
    );
}

/// `--turn` proves only the first turns it names, in the order given (written with or
/// without the `S`), at the naive search's values; `--first-turns` then goes on in the same
/// ledger and proves the rest; a turn that is not one of the game's is refused before any work.
#[test]
fn named_first_turns_are_proven_alone_and_in_order() {
    let work = tempfile::tempdir().unwrap();
    let cwd = work.path();
    for SmallGame {
        want,
        what,
        text,
        name,
    } in small_games(ESTIMATED_GAMES)
    {
        let dir = format!("{name}-named");
        let mut args = first_turn_args(&dir, &text);
        assert_eq!(args.pop(), Some("--first-turns"));
        // The last turn, then a chained one written without its S's.
        let last = want.last().unwrap().clone();
        let chained = want.iter().find(|t| t.0.contains(' ')).unwrap().clone();
        let bare = chained.0.replace('S', "");
        let mut named = args.clone();
        named.extend_from_slice(&["--turn", &last.0, "--turn", &bare]);
        let got = proven_first_turns(&json(cwd, &named), &what);
        assert_eq!(got, vec![last.clone(), chained.clone()], "{what}");
        let ledger = std::fs::read_to_string(cwd.join(&dir).join("ledger.jsonl")).unwrap();
        let asked: std::collections::HashSet<String> = turn_records(&ledger_json(&ledger))
            .into_iter()
            .map(|r| r.0)
            .collect();
        let expect: std::collections::HashSet<String> = [&last.0, &chained.0]
            .iter()
            .map(|t| t.replace('S', ""))
            .collect();
        assert_eq!(asked, expect, "{what}: {ledger}");
        let mut bad = args.clone();
        bad.extend_from_slice(&["--turn", "S1 S1"]);
        args.push("--first-turns");
        assert_eq!(proven_first_turns(&json(cwd, &args), &what), want, "{what}");
        let (code, _, err) = kalah(cwd, &bad);
        assert_eq!(code, 2, "{what}: {err}");
        assert!(
            err.contains("is not a first turn") && err.contains(&chained.0),
            "{err}"
        );
    }
}

/// Where values have the parity of the seeds, "at least v - 1?" and "at least v?" are one
/// question: the root's proof, which asks odd thresholds going up from 0, settles the question
/// "at least v?" about the only best first turn (one move, a position the root's proof split)
/// with no unit searched again, not even one answered by the table.
#[test]
fn a_question_at_an_equivalent_threshold_reuses_the_ledger() {
    let work = tempfile::tempdir().unwrap();
    let cwd = work.path();
    for SmallGame {
        want,
        what,
        text,
        name,
    } in small_games(&[
        (4, 2, "standard", "owner", "either"),
        (3, 4, "standard", "owner", "either"),
    ]) {
        let v = want.iter().map(|w| w.1).max().unwrap();
        let best: Vec<_> = want.iter().filter(|w| w.1 == v).collect();
        assert!(v > 0 && best.len() == 1, "{what}: {want:?}");
        assert!(!best[0].0.contains(' '), "{what}: {want:?}");
        let dir = format!("{name}-parity");
        let mut args = first_turn_args(&dir, &text);
        assert_eq!(args.pop(), Some("--first-turns"));
        // The start and the opening moves split, their questions asked of their moves.
        args.extend_from_slice(&["--split-above", "2"]);
        let root = json(cwd, &args);
        assert_eq!(root["value"].as_i64(), Some(v), "{what}: {root}");
        let path = cwd.join(&dir).join("ledger.jsonl");
        let before = ledger_json(&std::fs::read_to_string(&path).unwrap());
        let last = before
            .iter()
            .rfind(|j| j["kind"] == "root" && j["holds"] == true);
        assert_eq!(last.unwrap()["threshold"].as_i64(), Some(v - 1), "{what}");
        args.extend_from_slice(&["--turn", &best[0].0]);
        let got = proven_first_turns(&json(cwd, &args), &what);
        assert_eq!(got, vec![best[0].clone()], "{what}");
        let ledger = ledger_json(&std::fs::read_to_string(&path).unwrap());
        let added = &ledger[before.len()..];
        assert_eq!(added.len(), 1, "{what}: {added:?}");
        assert_eq!(added[0]["kind"], "turn", "{what}: {added:?}");
        assert_eq!(added[0]["threshold"].as_i64(), Some(v), "{what}");
        // And a check derives the turn record from units proven at the other threshold.
        let c = json(cwd, &["prove", "check", &dir, "--json", "--tt-mb", "16"]);
        assert_eq!(c["ok"], true, "{what}: {c}");
    }
}

/// A first turn begun in the ledger goes on from its last answer when the run is resumed
/// with `--estimate-depth`, instead of asking the estimate's threshold first: the questions
/// asked about it are those of the run that was interrupted, and the values do not change.
#[test]
fn a_resumed_first_turn_goes_on_from_its_last_answer_whatever_the_estimate() {
    let work = tempfile::tempdir().unwrap();
    let cwd = work.path();
    let mut tried = 0;
    for game in small_games(ESTIMATED_GAMES) {
        let dir = format!("{}-resume", game.name);
        let args = first_turn_args(&dir, &game.text);
        let (path, whole, records) = proven_turns(cwd, &dir, &args, &game);
        let SmallGame { want, what, .. } = game;
        // A turn that took three questions or more from the start's value: cut the ledger
        // just after its first answer, as a run killed while asking its second would.
        let Some(turn) = records
            .iter()
            .map(|r| r.0.clone())
            .find(|m| records.iter().filter(|r| &r.0 == m).count() >= 3)
        else {
            continue;
        };
        tried += 1;
        let asked: Vec<_> = records.iter().filter(|r| r.0 == turn).cloned().collect();
        std::fs::write(&path, cut_at_first_answer(&whole, &turn, true)).unwrap();
        // An estimate deep enough to be exact would ask "at least the value?" first.
        let mut resumed = args.clone();
        resumed.extend_from_slice(&["--estimate-depth", "60"]);
        assert_eq!(
            proven_first_turns(&json(cwd, &resumed), &what),
            want,
            "{what}"
        );
        let again = turn_records(&ledger_json(&std::fs::read_to_string(&path).unwrap()));
        let now: Vec<_> = again.into_iter().filter(|r| r.0 == turn).collect();
        assert_eq!(now, asked, "{what}: the questions about {turn}");
    }
    assert!(tried > 0, "no first turn took three questions");
}

#[test]
fn every_first_turns_value_is_proven_checked_and_shown() {
    let work = tempfile::tempdir().unwrap();
    let cwd = work.path();
    let mut games = Vec::new();
    // Boards bigger than their database, each with a first turn of more than one move (a
    // house whose last seed ends in the store), in rule variants of the rule books.
    for (n, &(houses, seeds, capture, leftover, end)) in [
        (3usize, 3u32, "standard", "emptier", "mover"),
        (4, 2, "empty", "emptier", "either"),
        (3, 3, "never", "owner", "either"),
        (4, 2, "standard", "discard", "either"),
    ]
    .iter()
    .enumerate()
    {
        let rules = rules_of(houses, seeds, capture, leftover, end);
        let turns = kalah_driver::results::first_turns(&rules);
        assert!(turns.iter().any(|t| t.len() > 1), "no chained first turn");
        let want = reference_first_turns(&rules);
        let what = format!("{houses}x{seeds} {capture} {leftover} {end}");
        let dir = format!("t{n}");
        let text = rule_text(houses, seeds, [capture, leftover, end]);
        let args = first_turn_args(&dir, &text);
        let v = json(cwd, &args);
        let got = proven_first_turns(&v, &what);
        assert_eq!(got, want, "{what}");
        let best = want.iter().map(|w| w.1).max().unwrap();
        assert_eq!(v["value"].as_i64(), Some(best), "{what}");
        // status and results show them from the ledger; check derives every turn record.
        let st = json(cwd, &["prove", "status", &dir, "--json"]);
        let shown: Vec<(String, i64)> = st["first_turns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                assert_eq!(t["lower"], t["upper"], "{what}: {st}");
                (
                    t["moves"].as_str().unwrap().to_string(),
                    t["lower"].as_i64().unwrap(),
                )
            })
            .collect();
        assert_eq!(shown, want, "{what}: status");
        // Each opening move is worth the best of the first turns that begin with it.
        for m in st["moves"].as_array().unwrap() {
            let first = format!("S{}", m["house"]);
            let best = best_turn_from(&want, &first);
            let got = (m["lower"].as_i64(), m["upper"].as_i64());
            assert_eq!(got, (best, best), "{what}: opening {first}: {st}");
        }
        let (code, text, err) = kalah(cwd, &["prove", "status", &dir]);
        assert_eq!(code, 0, "{what}: {err}");
        for (m, v) in &want {
            let line = format!("  first turn {m}: {v:+}\n");
            assert!(text.contains(&line), "{what}: no {line:?} in {text}");
        }
        let c = json(
            cwd,
            &[
                "prove", "check", &dir, "--json", "--tt-mb", "16", "--needed",
            ],
        );
        assert_eq!(c["ok"], true, "{what}: {c}");
        // Run again: everything is in the ledger.
        let again = json(cwd, &args);
        assert_eq!(again["first_turns"], v["first_turns"], "{what}");
        assert_eq!(again["units"].as_u64(), Some(0), "{what}: {again}");
        games.push((rules, want));
    }
    // `results --json` shows each ledger's best turns and pie value, as the naive search has
    // them: the pie value is -min |M| over the first turns' margins M.
    let r = json(
        cwd,
        &["results", "--file", "none.json", "--proofs", ".", "--json"],
    );
    for (rules, want) in &games {
        let row = results_row(&r, rules);
        let value = want.iter().map(|w| w.1).max().unwrap();
        let best: Vec<&str> = want
            .iter()
            .filter(|w| w.1 == value)
            .map(|w| w.0.as_str())
            .collect();
        let pie = -want.iter().map(|w| w.1.abs()).min().unwrap();
        assert_eq!(row["value"].as_i64(), Some(value), "{rules}: {row}");
        assert_eq!(row["best"], serde_json::json!(best), "{rules}: {row}");
        assert_eq!(row["best_complete"], true, "{rules}: {row}");
        for key in ["pie_value", "pie_lower", "pie_upper"] {
            assert_eq!(row[key].as_i64(), Some(pie), "{rules}: {key} in {row}");
        }
        assert_eq!(
            row["ledger_turns"].as_array().map(|t| t.len()),
            Some(want.len()),
            "{rules}: {row}"
        );
        // Each ledger's units were all proven again by the --needed check above.
        let again = &row["sources"][0]["rechecked"];
        assert!(again["units"].as_u64() > Some(0), "{rules}: {row}");
        assert_eq!(again["agree"], again["units"], "{rules}: {row}");
        assert_eq!(again["needed"]["units"], again["units"], "{rules}: {row}");
        assert_eq!(
            again["needed"]["rechecked"], again["units"],
            "{rules}: {row}"
        );
        assert_eq!(again["needed"]["current"], true, "{rules}: {row}");
    }
    let table = kalah(cwd, &["results", "--file", "none.json", "--proofs", "."]).1;
    assert!(
        table.contains("needed units proven again, each as the ledger says"),
        "{table}"
    );
    // A turn record forged to claim the opposite is caught by the check.
    let path = cwd.join("t0/ledger.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut forged_one = false;
    let forged: String = text
        .lines()
        .map(|l| {
            let (json_text, _) = l.rsplit_once('\t').unwrap();
            let mut j: Value = serde_json::from_str(json_text).unwrap();
            if j["kind"] != "turn" || forged_one {
                return format!("{l}\n");
            }
            forged_one = true;
            j["holds"] = Value::Bool(j["holds"] != true);
            signed_line(&j)
        })
        .collect();
    assert!(forged_one);
    std::fs::write(&path, &forged).unwrap();
    let (code, out, _) = kalah(cwd, &["prove", "check", "t0"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("after the first turn"), "{out}");
}

/// `kalah verify --class long` reads the long results from the ledgers: a published value the
/// ledger proves agrees, one it contradicts fails the run, one it leaves open is said to be open.
#[test]
fn verify_long_reads_published_results_from_the_ledgers() {
    let work = tempfile::tempdir().unwrap();
    let cwd = work.path();
    let game = [
        "--houses",
        "4",
        "--seeds",
        "3",
        "--capture",
        "empty",
        "--leftover",
        "owner",
        "--end",
        "either",
    ];
    let dir = "proofs/4x3-empty-owner-either";
    let mut args = prove_args(dir, &game);
    args.extend_from_slice(&["--unit-nodes", "1000", "--build-upto", "6", "--openings"]);
    let v = json(cwd, &args);
    let value = v["value"].as_i64().unwrap();
    assert_eq!(value, reference_value(4, 3, "empty", "owner", "either"));
    let s1 = v["moves"][0]["value"].as_i64().unwrap();
    assert_eq!(v["moves"][0]["house"], 1);
    let s2 = v["moves"][1]["value"].as_i64().unwrap();
    let entry = |turn: &str, fact: &str| {
        format!(
            "[[result]]\nhouses = 4\nseeds = 3\ncapture = \"empty\"\n{turn}{fact}\n\
             source = \"test\"\nclass = \"long\"\n\n"
        )
    };
    let write = |name: &str, text: &str| {
        std::fs::write(cwd.join(name), text).unwrap();
        name.to_string()
    };
    let verify = |file: &str, proofs: &str| {
        kalah(
            cwd,
            &[
                "verify", "--class", "long", "--json", "--file", file, "--proofs", proofs,
                "--books", "none", "--tt-mb", "16",
            ],
        )
    };
    let lines = |out: &str| -> Vec<Value> {
        out.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    // House 2 of 4x3 ends in the store: "S2 S1" is a first turn, bounded above by opening 2.
    let good = write(
        "good.toml",
        &[
            entry("", &format!("value = {value}")),
            entry("", &format!("at_least = {value}")),
            entry("first_turn = \"S1\"\n", &format!("value = {s1}")),
            entry("first_turn = \"S2 S1\"\n", &format!("value = {s2}")),
        ]
        .concat(),
    );
    let (code, out, err) = verify(&good, "proofs");
    assert_eq!(code, 0, "{err}");
    let got = lines(&out);
    assert_eq!(got.len(), 4, "{out}");
    for g in &got[..3] {
        assert_eq!(g["agree"], true, "{g}");
        assert_eq!(g["from"], "ledger", "{g}");
    }
    assert_eq!(got[2]["first_turn"], "S1");
    assert_eq!(got[3]["agree"], Value::Null, "{}", got[3]);
    // Without the ledger every long result is open, and the run passes.
    let (code, out, err) = verify(&good, "elsewhere");
    assert_eq!(code, 0, "{err}");
    assert!(lines(&out).iter().all(|g| g["agree"].is_null()), "{out}");
    // A value the ledger contradicts fails the run (exit status 1).
    let bad = write("bad.toml", &entry("", &format!("value = {}", value + 2)));
    let (code, out, err) = verify(&bad, "proofs");
    assert_eq!(code, 1, "{out}");
    assert_eq!(lines(&out)[0]["agree"], false);
    assert!(err.contains("disagree"), "{err}");
    // A first turn that is not one is refused with the list of the game's first turns.
    let wrong = write(
        "wrong.toml",
        &entry("first_turn = \"S1 S2\"\n", "value = 0"),
    );
    let (code, _, err) = verify(&wrong, "proofs");
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("is not a first turn") && err.contains("S2 S1"),
        "{err}"
    );
}

/// `prove status` names the first turn or opening move that a run in progress is asking
/// about, from the run's `status.json`, and leaves out what it cannot read there.
#[test]
fn status_names_the_question_under_way() {
    let work = tempfile::tempdir().unwrap();
    let cwd = work.path();
    let args = prove_args("t", &["--houses", "3", "--seeds", "2", "--build-upto", "4"]);
    let (code, _, err) = kalah(cwd, &args);
    assert_eq!(code, 0, "{err}");
    let snapshot = |extra: &str| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        std::fs::write(
            cwd.join("t/status.json"),
            format!(
                "{{\"threshold\": 2, {extra} \"phi\": 3, \"delta\": 1, \"leaves_open\": 4, \"updated\": {now}}}"
            ),
        )
        .unwrap();
        let (code, out, err) = kalah(cwd, &["prove", "status", "t"]);
        assert_eq!(code, 0, "{err}");
        out.lines()
            .find(|l| l.starts_with("last run"))
            .unwrap_or_else(|| panic!("no last run in {out}"))
            .to_string()
    };
    let line = snapshot("\"turn\": [1, 3],");
    assert!(
        line.contains("asking \"first turn S1 S3: at least +2?\""),
        "{line}"
    );
    let line = snapshot("\"opening\": 2,");
    assert!(
        line.contains("asking \"opening move 2: at least +2?\""),
        "{line}"
    );
    for bad in [
        "\"turn\": [0, 3],",
        "\"turn\": [\"S1\"],",
        "\"opening\": 99,",
        "",
    ] {
        let line = snapshot(bad);
        assert!(line.contains("asking \"at least +2?\""), "{bad}: {line}");
    }
}

/// A first turn whose first question was under way when the run stopped (no answer about it
/// in the ledger yet) is asked that question again on resuming, as `status.json` names it,
/// not what a new estimate would ask; a snapshot that is finished, names another turn or a
/// house the board lacks, or is not JSON is ignored, and the values never change.
#[test]
fn a_first_turn_stopped_before_its_first_answer_asks_the_same_question_again() {
    let work = tempfile::tempdir().unwrap();
    let cwd = work.path();
    let mut tried = 0;
    for game in small_games(ESTIMATED_GAMES) {
        let dir = format!("{}-stopped", game.name);
        let args = first_turn_args(&dir, &game.text);
        let (path, whole, records) = proven_turns(cwd, &dir, &args, &game);
        let SmallGame { want, what, .. } = game;
        // A turn whose first question was not "at least its value?", the question that an
        // exact estimate asks first.
        let value = |m: &str| want.iter().find(|w| w.0.replace('S', "") == m).unwrap().1;
        let Some((turn, first)) = records.iter().find_map(|r| {
            let first = records.iter().find(|q| q.0 == r.0).unwrap();
            (first.1 != value(&r.0)).then(|| (r.0.clone(), first.1))
        }) else {
            continue;
        };
        tried += 1;
        // Cut the ledger just before the turn's first answer, as a run killed while asking
        // it would leave it (its units stay), with the snapshot such a run writes.
        let kept = cut_at_first_answer(&whole, &turn, false);
        let houses: Vec<u64> = turn.split(' ').map(|h| h.parse().unwrap()).collect();
        let status = cwd.join(&dir).join("status.json");
        let mut resumed = args.clone();
        resumed.extend_from_slice(&["--estimate-depth", "60"]);
        let first_asked = |snapshot: &str| {
            std::fs::write(&path, &kept).unwrap();
            std::fs::write(&status, snapshot).unwrap();
            let got = proven_first_turns(&json(cwd, &resumed), &what);
            assert_eq!(got, want, "{what}: after the snapshot {snapshot}");
            let again = turn_records(&ledger_json(&std::fs::read_to_string(&path).unwrap()));
            again.into_iter().find(|r| r.0 == turn).unwrap().1
        };
        let stopped = serde_json::json!({"threshold": first, "opening": null, "turn": houses,
            "phi": 3, "delta": 2, "pid": 1});
        assert_eq!(first_asked(&stopped.to_string()), first, "{what}: {turn}");
        // Ignored: the estimate's question, "at least the value?", comes first.
        let mut done = stopped.clone();
        done["done"] = Value::Bool(true);
        let mut other = stopped.clone();
        let another = want.iter().find(|w| w.0.replace('S', "") != turn).unwrap();
        let another: Vec<u64> = another
            .0
            .split(' ')
            .map(|h| h[1..].parse().unwrap())
            .collect();
        other["turn"] = serde_json::json!(another);
        let mut off_board = stopped.clone();
        off_board["turn"] = serde_json::json!([houses[0], 9]);
        for ignored in [
            done.to_string(),
            other.to_string(),
            off_board.to_string(),
            "{\"thresh".to_string(),
        ] {
            assert_eq!(
                first_asked(&ignored),
                value(&turn),
                "{what}: {turn}: {ignored}"
            );
        }
    }
    assert!(tried > 0, "no first turn began below or above its value");
}
