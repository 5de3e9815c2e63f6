//! `mpirun -np 3 kalah prove ...` (built with `--features mpi`, on Open MPI): the coordinator on
//! rank 0, units on ranks 1 and 2; values against `kalah solve` (itself checked against the
//! reference minimax); a run killed and resumed; the ledger checked.
#![cfg(feature = "mpi")]

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn mpirun(cwd: &Path, ranks: usize, args: &[&str]) -> Command {
    let mut c = Command::new("mpirun");
    c.args(["--oversubscribe", "-np", &ranks.to_string()])
        .arg(env!("CARGO_BIN_EXE_kalah"))
        .args(args)
        .current_dir(cwd)
        // Containers and CI machines often run tests as root, which Open MPI refuses unless told.
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    c
}

fn run_json(mut c: Command) -> Value {
    let out = c.output().expect("mpirun (Open MPI) must be installed");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// The start value by `kalah solve`.
fn solve_value(cwd: &Path, houses: &str, seeds: &str, capture: &str) -> i64 {
    let out = Command::new(env!("CARGO_BIN_EXE_kalah"))
        .args([
            "solve",
            "--json",
            "--houses",
            houses,
            "--seeds",
            seeds,
            "--capture",
            capture,
            "--tt-mb",
            "16",
            "--build-upto",
            "8",
        ])
        .current_dir(cwd)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["value"].as_i64().unwrap()
}

fn workers(ledger: &Path) -> std::collections::BTreeSet<String> {
    std::fs::read_to_string(ledger)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let v: Value = serde_json::from_str(l.rsplit_once('\t')?.0).ok()?;
            let w = v["worker"].as_str()?;
            Some(w.split(" rank ").nth(1).unwrap_or("0").to_string())
        })
        .collect()
}

#[test]
fn ranks_prove_units_and_agree_with_solve() {
    let work = tempfile::tempdir().unwrap();
    let cwd = work.path();
    for (capture, dir) in [("standard", "s"), ("empty", "e")] {
        let want = solve_value(cwd, "5", "3", capture);
        let v = run_json(mpirun(
            cwd,
            3,
            &[
                "prove",
                "--houses",
                "5",
                "--seeds",
                "3",
                "--capture",
                capture,
                "--dir",
                dir,
                "--unit-nodes",
                "2000",
                "--tt-mb",
                "16",
                "--threads",
                "1",
                "--json",
                "--build-upto",
                "8",
            ],
        ));
        assert_eq!(v["value"].as_i64(), Some(want), "{capture}: {v}");
        // Both worker ranks proved units.
        let w = workers(&cwd.join(dir).join("ledger.jsonl"));
        assert!(w.contains("1") && w.contains("2"), "{capture}: {w:?}");
        let out = Command::new(env!("CARGO_BIN_EXE_kalah"))
            .args(["prove", "check", dir, "--json", "--tt-mb", "16"])
            .current_dir(cwd)
            .output()
            .unwrap();
        let c: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(c["ok"], true, "{c}");
        assert_eq!(c["lower"].as_i64(), Some(want));
    }
}

#[test]
fn an_mpi_run_killed_in_the_middle_resumes() {
    let work = tempfile::tempdir().unwrap();
    let cwd = work.path();
    let args = [
        "prove",
        "--houses",
        "6",
        "--seeds",
        "3",
        "--capture",
        "empty",
        "--dir",
        "k",
        "--unit-nodes",
        "2000",
        "--split-depth",
        "6",
        "--tt-mb",
        "16",
        "--threads",
        "1",
        "--json",
        "--build-upto",
        "8",
    ];
    let ledger = cwd.join("k/ledger.jsonl");
    let lines = || {
        std::fs::read_to_string(&ledger)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    let mut c = mpirun(cwd, 3, &args);
    let mut child = c
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("mpirun (Open MPI) must be installed");
    let t0 = Instant::now();
    let mut killed = false;
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if lines() >= 40 || t0.elapsed() > Duration::from_secs(120) {
            // SIGKILL to mpirun: Open MPI's daemons end the ranks.
            child.kill().unwrap();
            child.wait().unwrap();
            killed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(killed, "the run ended before it could be killed");
    let before = lines();
    // The ranks may take a moment to go: retry while the ledger is still locked.
    let mut v = None;
    for _ in 0..100 {
        let out = mpirun(cwd, 3, &args).output().unwrap();
        if out.status.success() {
            v = Some(serde_json::from_slice::<Value>(&out.stdout).unwrap());
            break;
        }
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("in use"), "{err}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let v = v.expect("the ledger stayed locked");
    let want = solve_value(cwd, "6", "3", "empty");
    assert_eq!(v["value"].as_i64(), Some(want), "{v}");
    assert!(lines() > before);
}
