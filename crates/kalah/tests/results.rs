//! The first-turn values and the results table: `kalah solve --first-turns --record` agrees
//! with the naive reference minimax in every rule variant, `kalah results` prints what was
//! recorded (parsed back from `--json`), a damaged results file is refused with a clear error,
//! and the small entries of the committed `data/results.json` are computed again.

#[path = "../../../tests/reference.rs"]
mod reference;

use kalah_driver::results::{first_turns, ResultsFile};
use kalah_solver::Rules;
use reference::{ref_first_turn_margin, ref_value, RefState};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

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

fn rule_flags(rules: &Rules) -> Vec<String> {
    [
        "--houses".to_string(),
        rules.houses.to_string(),
        "--seeds".into(),
        rules.seeds.to_string(),
        "--capture".into(),
        rules.capture.name().into(),
        "--leftover".into(),
        rules.leftover.name().into(),
        "--end".into(),
        rules.end.name().into(),
    ]
    .to_vec()
}

#[test]
fn first_turns_agree_with_the_reference_in_every_variant() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("results.json");
    let file_s = file.to_str().unwrap();
    let mut games = Vec::new();
    for (m, n) in [(3usize, 2u32), (3, 3), (2, 4)] {
        for rules in Rules::all_variants(m, n) {
            let mut args: Vec<String> = vec![
                "solve".into(),
                "--json".into(),
                "--tt-mb".into(),
                "16".into(),
            ];
            args.extend(rule_flags(&rules));
            args.extend(
                ["--first-turns", "--record", file_s, "--build-upto", "0"].map(String::from),
            );
            let a: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
            let (code, out, err) = kalah(dir.path(), &a);
            assert_eq!(code, 0, "{rules}: {err}");
            let v: Value = serde_json::from_str(&out).unwrap();
            let turns = v["turns"].as_array().unwrap();
            let want = first_turns(&rules);
            assert_eq!(turns.len(), want.len(), "{rules}");
            let mut margins = Vec::new();
            for (t, moves) in turns.iter().zip(&want) {
                let r = ref_first_turn_margin(&rules, moves);
                assert_eq!(t["margin"].as_i64().unwrap(), r, "{rules} {moves:?}");
                assert_eq!(t["exact"], true);
                margins.push(r);
            }
            let value = *margins.iter().max().unwrap();
            let pie = -margins.iter().map(|m| m.abs()).min().unwrap();
            // The start's value is also the reference's value of the start.
            let start = RefState::from_sides(&vec![n as u8; m], &vec![n as u8; m]);
            assert_eq!(value, ref_value(&rules, &start), "{rules}");
            assert_eq!(v["value"].as_i64().unwrap(), value, "{rules}");
            assert_eq!(v["pie_value"].as_i64().unwrap(), pie, "{rules}");
            games.push((rules, value, pie));
        }
    }
    // The table holds every game recorded, with the same values; parsed back from --json.
    let (code, out, err) = kalah(
        dir.path(),
        &["results", "--file", file_s, "--proofs", "none", "--json"],
    );
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let rows = v["games"].as_array().unwrap();
    for (rules, value, pie) in games {
        let row = rows
            .iter()
            .find(|r| {
                r["houses"] == rules.houses
                    && r["seeds"] == rules.seeds
                    && r["capture"] == rules.capture.name()
                    && r["leftover"] == rules.leftover.name()
                    && r["end"] == rules.end.name()
            })
            .unwrap_or_else(|| panic!("{rules} missing from the table"));
        assert_eq!(row["value"].as_i64(), Some(value), "{rules}");
        assert_eq!(row["pie_value"].as_i64(), Some(pie), "{rules}");
        assert_eq!(row["sources"][0]["kind"], "solve");
    }
    // The text table too.
    let (code, out, _) = kalah(
        dir.path(),
        &["results", "--file", file_s, "--proofs", "none"],
    );
    assert_eq!(code, 0);
    assert!(out.contains("Every first turn"), "{out}");
}

#[test]
fn a_damaged_results_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("results.json");
    let file_s = file.to_str().unwrap();
    let mut args: Vec<String> = vec!["solve".into(), "--tt-mb".into(), "16".into()];
    args.extend(rule_flags(&Rules::standard(3, 3)));
    args.extend(["--first-turns", "--record", file_s, "--build-upto", "0"].map(String::from));
    let a: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    assert_eq!(kalah(dir.path(), &a).0, 0);
    let good = std::fs::read_to_string(&file).unwrap();
    assert!(ResultsFile::parse(&good).is_ok());
    let v: Value = serde_json::from_str(&good).unwrap();
    let mut damaged: Vec<(Value, &str)> = Vec::new();
    let mut edit = |f: &dyn Fn(&mut Value), why: &'static str| {
        let mut x = v.clone();
        f(&mut x);
        damaged.push((x, why));
    };
    edit(&|x| x["entries"][0]["value"] = 7.into(), "value");
    edit(&|x| x["entries"][0]["pie_value"] = 2.into(), "pie_value");
    edit(
        &|x| x["entries"][0]["turns"][0]["margin"] = 99.into(),
        "impossible",
    );
    edit(
        &|x| x["entries"][0]["turns"][0]["margin"] = 1.into(),
        "impossible",
    );
    edit(
        &|x| x["entries"][0]["turns"][0]["moves"] = serde_json::json!([9]),
        "first turns",
    );
    edit(
        &|x| {
            x["entries"][0]["turns"].as_array_mut().unwrap().pop();
        },
        "first turns",
    );
    edit(
        &|x| x["entries"][0]["capture"] = "sometimes".into(),
        "capture",
    );
    edit(&|x| x["entries"][0]["houses"] = 0.into(), "houses");
    edit(&|x| x["version"] = 9.into(), "version");
    edit(
        &|x| {
            let e = x["entries"][0].clone();
            x["entries"].as_array_mut().unwrap().push(e);
        },
        "second entry",
    );
    edit(&|x| x["entries"][0]["best"] = serde_json::json!([]), "best");
    for (x, why) in damaged {
        std::fs::write(&file, x.to_string()).unwrap();
        let (code, out, err) = kalah(
            dir.path(),
            &["results", "--file", file_s, "--proofs", "none"],
        );
        assert_eq!(code, 1, "{why}: {out}");
        assert!(
            err.starts_with("error: ") && err.lines().count() == 1,
            "{why}: {err}"
        );
        assert!(err.contains(why), "{why}: {err}");
    }
    for text in ["", "{", "[]", "{\"version\":1}", "\u{0}\u{1}"] {
        std::fs::write(&file, text).unwrap();
        let (code, _, err) = kalah(
            dir.path(),
            &["results", "--file", file_s, "--proofs", "none"],
        );
        assert_eq!(code, 1, "{text:?}: {err}");
    }
}

/// The committed table's entries that take a few million nodes are computed again with the
/// database `solve` builds for them (16 seeds for 6x3): a recorded value that the program no
/// longer finds fails here.
#[test]
fn small_committed_results_are_computed_again() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let table = ResultsFile::read(&root.join("data/results.json")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for e in table
        .entries
        .iter()
        .filter(|e| e.source.nodes <= 5_000_000 && e.seeds <= 3)
    {
        let rules = e.rules().unwrap();
        let mut args: Vec<String> = vec![
            "solve".into(),
            "--json".into(),
            "--tt-mb".into(),
            "64".into(),
        ];
        args.extend(rule_flags(&rules));
        args.extend(["--first-turns", "--build-upto", "16"].map(String::from));
        let a: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        let (code, out, err) = kalah(dir.path(), &a);
        assert_eq!(code, 0, "{rules}: {err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["value"].as_i64(), Some(e.value as i64), "{rules}");
        assert_eq!(v["pie_value"].as_i64(), Some(e.pie_value as i64), "{rules}");
        let margins: Vec<i64> = v["turns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["margin"].as_i64().unwrap())
            .collect();
        let want: Vec<i64> = e.turns.iter().map(|t| t.margin as i64).collect();
        assert_eq!(margins, want, "{rules}");
        checked += 1;
    }
    assert!(
        checked >= 3,
        "only {checked} committed entries are small enough to check"
    );
}
