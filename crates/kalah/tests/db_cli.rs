//! `kalah db`: a build killed in the middle resumes to identical files; verify finds a flipped
//! byte and names the file; info reports the levels.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const KALAH: &str = env!("CARGO_BIN_EXE_kalah");
const UPTO: &str = "13";

fn kalah(args: &[&str]) -> std::process::Output {
    Command::new(KALAH).args(args).output().unwrap()
}

fn build_args(dir: &Path) -> Vec<String> {
    ["db", "build", "--upto", UPTO, "--houses", "6", "--dir"]
        .iter()
        .map(|s| s.to_string())
        .chain([dir.to_string_lossy().into_owned()])
        .collect()
}

fn level_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".kdb"))
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn killed_build_resumes_to_identical_files() {
    let fresh = tempfile::tempdir().unwrap();
    let out = Command::new(KALAH)
        .args(build_args(fresh.path()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = level_files(fresh.path());
    assert_eq!(want.len(), 14);

    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(KALAH)
        .args(build_args(dir.path()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Kill it once level 11 is written, while the larger levels 12 and 13 are being built.
    let start = Instant::now();
    while !dir.path().join("level-011.kdb").exists() {
        assert!(start.elapsed() < Duration::from_secs(120), "build too slow");
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let _ = child.kill();
    child.wait().unwrap();
    let partial = level_files(dir.path());
    assert!(partial.len() >= 12, "{}", partial.len());

    let out = Command::new(KALAH)
        .args(build_args(dir.path()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(level_files(dir.path()), want);

    // The JSON summary of a build with nothing to do.
    let mut args = build_args(dir.path());
    args.push("--json".into());
    let out = Command::new(KALAH).args(args).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["built"].as_array().unwrap().len(), 0);
    assert_eq!(v["skipped"].as_array().unwrap().len(), 14);
}

#[test]
fn verify_names_a_corrupt_file_and_info_reports() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let out = kalah(&["db", "build", "--upto", "9", "--houses", "3", "--dir", d]);
    assert!(out.status.success());

    let out = kalah(&["db", "verify", "--full", "--houses", "3", "--dir", d]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    let out = kalah(&["db", "info", "--json", "--houses", "3", "--dir", d]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["max_seeds"], 9);
    assert_eq!(v["levels"].as_array().unwrap().len(), 10);
    // C(9 + 5, 5) boards in level 9, all counted by the histogram.
    let l9 = &v["levels"][9];
    assert_eq!(l9["positions"], 2002);
    let total: u64 = l9["histogram"]
        .as_object()
        .unwrap()
        .values()
        .map(|c| c.as_u64().unwrap())
        .sum();
    assert_eq!(total, 2002);

    let path = dir.path().join("level-008.kdb");
    let mut bytes = std::fs::read(&path).unwrap();
    let n = bytes.len();
    bytes[n - 3] ^= 0x04;
    std::fs::write(&path, &bytes).unwrap();
    let out = kalah(&["db", "verify", "--houses", "3", "--dir", d]);
    assert_eq!(out.status.code(), Some(1));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("level-008.kdb"), "{text}");
    assert!(text.contains("checksum"), "{text}");

    // Other rules: a clear error.
    let out = kalah(&[
        "db",
        "info",
        "--houses",
        "3",
        "--capture",
        "empty",
        "--dir",
        d,
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("built for rules"));
}

#[test]
fn every_codec_builds_converts_and_answers_alike() {
    let zstd = tempfile::tempdir().unwrap();
    let stored = tempfile::tempdir().unwrap();
    let back = tempfile::tempdir().unwrap();
    let rans = tempfile::tempdir().unwrap();
    let rans2 = tempfile::tempdir().unwrap();
    let grid = tempfile::tempdir().unwrap();
    let grid2 = tempfile::tempdir().unwrap();
    let (z, s, b, r, r2, g, g2) = (
        zstd.path().to_str().unwrap(),
        stored.path().to_str().unwrap(),
        back.path().to_str().unwrap(),
        rans.path().to_str().unwrap(),
        rans2.path().to_str().unwrap(),
        grid.path().to_str().unwrap(),
        grid2.path().to_str().unwrap(),
    );
    let ok = |out: std::process::Output| {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    };
    let h = ["--houses", "3"];
    // grid is the default codec.
    let out = ok(kalah(
        &[
            &["db", "build", "--upto", "9", "--json", "--dir", g][..],
            &h,
        ]
        .concat(),
    ));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["codec"], "grid");
    ok(kalah(
        &[
            &["db", "build", "--upto", "9", "--codec", "rans", "--dir", r][..],
            &h,
        ]
        .concat(),
    ));
    ok(kalah(
        &[
            &["db", "build", "--upto", "9", "--codec", "zstd", "--dir", z][..],
            &h,
        ]
        .concat(),
    ));
    let out = ok(kalah(
        &[
            &[
                "db", "build", "--upto", "9", "--codec", "stored", "--json", "--dir", s,
            ][..],
            &h,
        ]
        .concat(),
    ));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["codec"], "stored");
    assert_eq!(v["built"].as_array().unwrap().len(), 10);

    // stored -> zstd gives the zstd build's files.
    let out = ok(kalah(
        &[
            &[
                "db", "convert", "--dir", s, "--to", b, "--codec", "zstd", "--json",
            ][..],
            &h,
        ]
        .concat(),
    ));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["converted"].as_array().unwrap().len(), 10);
    assert_eq!(level_files(back.path()), level_files(zstd.path()));
    // zstd -> stored gives the stored build's files; again, nothing to do.
    let again = tempfile::tempdir().unwrap();
    let a = again.path().to_str().unwrap();
    for converted in [10, 0] {
        let out = ok(kalah(
            &[
                &[
                    "db", "convert", "--dir", z, "--to", a, "--codec", "stored", "--json",
                ][..],
                &h,
            ]
            .concat(),
        ));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["converted"].as_array().unwrap().len(), converted);
    }
    assert_eq!(level_files(again.path()), level_files(stored.path()));
    // stored -> rans gives the rans build's files.
    ok(kalah(
        &[
            &["db", "convert", "--dir", s, "--to", r2, "--codec", "rans"][..],
            &h,
        ]
        .concat(),
    ));
    assert_eq!(level_files(rans2.path()), level_files(rans.path()));
    // stored -> grid gives the grid build's files.
    ok(kalah(
        &[
            &["db", "convert", "--dir", s, "--to", g2, "--codec", "grid"][..],
            &h,
        ]
        .concat(),
    ));
    assert_eq!(level_files(grid2.path()), level_files(grid.path()));
    // The search form: built, and converted from stored and back, byte for byte.
    let search = tempfile::tempdir().unwrap();
    let search2 = tempfile::tempdir().unwrap();
    let stored2 = tempfile::tempdir().unwrap();
    let (f, f2, s2) = (
        search.path().to_str().unwrap(),
        search2.path().to_str().unwrap(),
        stored2.path().to_str().unwrap(),
    );
    ok(kalah(
        &[
            &[
                "db", "build", "--upto", "9", "--codec", "search", "--dir", f,
            ][..],
            &h,
        ]
        .concat(),
    ));
    ok(kalah(
        &[
            &["db", "convert", "--dir", s, "--to", f2, "--codec", "search"][..],
            &h,
        ]
        .concat(),
    ));
    assert_eq!(level_files(search2.path()), level_files(search.path()));
    ok(kalah(
        &[
            &["db", "convert", "--dir", f, "--to", s2, "--codec", "stored"][..],
            &h,
        ]
        .concat(),
    ));
    assert_eq!(level_files(stored2.path()), level_files(stored.path()));

    for (dir, codec) in [
        (f, "search"),
        (z, "zstd"),
        (s, "stored"),
        (b, "zstd"),
        (r, "rans"),
        (g, "grid"),
    ] {
        let out = ok(kalah(
            &[&["db", "info", "--json", "--dir", dir][..], &h].concat(),
        ));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let levels = v["levels"].as_array().unwrap();
        assert_eq!(levels.len(), 10);
        assert!(levels.iter().all(|l| l["codec"] == codec), "{dir}: {v}");
        let out = ok(kalah(&[&["db", "info", "--dir", dir][..], &h].concat()));
        assert!(String::from_utf8_lossy(&out.stdout).contains(codec));
        ok(kalah(
            &[&["db", "verify", "--full", "--dir", dir][..], &h].concat(),
        ));
    }

    // The same answers from both directories, from the database and from the search over it.
    for position in ["1 2 3 / 0 2 1", "2 0 1 / 3 1 2", "3 3 3 / 3 3 3"] {
        let answer = |dir: &str| {
            let out = ok(kalah(
                &[&["query", "--json", "--db", dir, position][..], &h].concat(),
            ));
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            (v["value"].clone(), v["moves"].clone(), v["source"].clone())
        };
        let (zv, sv, rv, gv) = (answer(z), answer(s), answer(r), answer(g));
        assert_eq!(zv, answer(f), "{position}");
        assert_eq!(zv, sv, "{position}");
        assert_eq!(zv, rv, "{position}");
        assert_eq!(zv, gv, "{position}");
        assert!(zv.0.is_i64(), "{position}: {zv:?}");
    }

    // A bad codec is a usage error.
    let out = kalah(
        &[
            &["db", "build", "--upto", "3", "--codec", "lz4", "--dir", s][..],
            &h,
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("codec"));
}

#[test]
fn a_level_built_in_slices_and_joined_is_the_whole_level() {
    let whole = tempfile::tempdir().unwrap();
    let parts = tempfile::tempdir().unwrap();
    let (w, p) = (
        whole.path().to_str().unwrap(),
        parts.path().to_str().unwrap(),
    );
    let h = ["--houses", "3", "--codec", "search"];
    let run = |args: &[&str]| {
        let out = kalah(&[args, &h].concat());
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    };
    run(&["db", "build", "--upto", "9", "--dir", w]);
    for slice in ["1/3", "2/3", "3/3"] {
        let out = run(&[
            "db", "build", "--upto", "9", "--slice", slice, "--json", "--dir", p,
        ]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(v["file"].as_str().unwrap().ends_with(".kslc"), "{v}");
    }
    let out = run(&[
        "db", "join", "--level", "9", "--slices", "3", "--json", "--dir", p,
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["slices"].as_array().unwrap().len(), 3);
    assert_eq!(level_files(parts.path()), level_files(whole.path()));
    // A bad slice is a usage error.
    let out = kalah(
        &[
            &["db", "build", "--upto", "9", "--slice", "4/3", "--dir", p][..],
            &h,
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_second_build_in_the_same_directory_is_refused_naming_the_first() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let dir_s = dir.to_string_lossy().into_owned();
    // A build of a few tens of seconds, so that the second one surely meets it.
    let mut first = Command::new(KALAH)
        .args([
            "db", "build", "--upto", "24", "--houses", "6", "--dir", &dir_s,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lock = dir.join("build.lock");
    let t = Instant::now();
    // The lock file holds the first build's process id once it has the lock.
    while std::fs::read_to_string(&lock).map_or(true, |s| s.trim() != first.id().to_string()) {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "the first build never locked"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let second = kalah(&[
        "db", "build", "--upto", "10", "--houses", "6", "--dir", &dir_s,
    ]);
    let _ = first.kill();
    let _ = first.wait();
    assert_eq!(second.status.code(), Some(1));
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(
        err.contains(&format!("process {} is building levels here", first.id())),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    // Once the first is gone, the lock is free again (the system drops it with the process).
    let third = kalah(&[
        "db", "build", "--upto", "10", "--houses", "6", "--dir", &dir_s,
    ]);
    assert!(
        third.status.success(),
        "{}",
        String::from_utf8_lossy(&third.stderr)
    );
}

#[test]
fn a_build_with_no_memory_for_bytes_packs_its_levels_and_writes_the_same_files() {
    let full = tempfile::tempdir().unwrap();
    let packed = tempfile::tempdir().unwrap();
    for (dir, extra) in [(full.path(), None), (packed.path(), Some("0"))] {
        let mut args = vec!["db", "build", "--upto", "10", "--houses", "5"];
        let d = dir.to_str().unwrap();
        args.extend(["--dir", d]);
        if let Some(mb) = extra {
            args.extend(["--memory-mb", mb]);
        }
        let out = kalah(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(level_files(full.path()), level_files(packed.path()));
    let d = packed.path().to_str().unwrap();
    let out = kalah(&[
        "db",
        "verify",
        "--full",
        "--memory-mb",
        "0",
        "--houses",
        "5",
        "--dir",
        d,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
