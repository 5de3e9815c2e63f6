//! The checker on the committed ledgers (every record must be confirmed), on forged copies of
//! them (every forgery must be caught), on small ledgers written here, and from the command
//! line.

use ledger_check::game::{Board, Rules};
use ledger_check::ledger::{self, checksum};
use ledger_check::{check, Report};
use std::path::{Path, PathBuf};
use std::process::Command;

fn proofs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/proofs")
}

fn check_dir(dir: &Path) -> Report {
    check(&ledger::read(dir).unwrap_or_else(|e| panic!("{e}")))
}

/// A line's JSON text with its checksum.
fn sealed(json: &str) -> String {
    format!("{json}\t{}", checksum(json))
}

/// The JSON texts of a committed ledger's complete lines (a line the live prover is writing
/// is left out).
fn committed(name: &str) -> Vec<String> {
    let text = std::fs::read_to_string(proofs().join(name).join("ledger.jsonl")).unwrap();
    let complete = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
    complete
        .lines()
        .map(|l| l.rsplit_once('\t').unwrap().0.to_string())
        .collect()
}

/// A ledger of the JSON texts `lines` (each sealed) in a new temporary directory.
fn ledger_of(lines: &[String]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let text: String = lines.iter().map(|l| sealed(l) + "\n").collect();
    std::fs::write(dir.path().join("ledger.jsonl"), text).unwrap();
    dir
}

/// The index of the one line containing every one of `parts`.
fn find(lines: &[String], parts: &[&str]) -> usize {
    let hits: Vec<usize> = (0..lines.len())
        .filter(|&i| parts.iter().all(|p| lines[i].contains(p)))
        .collect();
    assert_eq!(hits.len(), 1, "lines with {parts:?}: {hits:?}");
    hits[0]
}

fn has_error(r: &Report, parts: &[&str]) -> bool {
    r.errors.iter().any(|e| parts.iter().all(|p| e.contains(p)))
}

#[test]
fn every_record_of_every_committed_ledger_is_confirmed() {
    let mut seen = Vec::new();
    for entry in std::fs::read_dir(proofs()).unwrap() {
        let dir = entry.unwrap().path();
        if !dir.join("ledger.jsonl").is_file() {
            continue;
        }
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let r = check_dir(&dir);
        assert!(r.ok(), "{name}: {:#?}", r.errors);
        assert!(r.records > 0 && r.confirmed == r.records, "{name}");
        assert_eq!(r.needed, (0, 0), "{name}");
        seen.push((name, r.root));
    }
    // The four proofs committed so far, and their values (the published ones: Irving et
    // al. 2000 and Rawlings 2015 for 6x5 and 6x6 empty capture; 6x6 standard proven here).
    let exact = |name: &str| {
        let b = seen.iter().find(|(n, _)| n == name).unwrap().1;
        assert_eq!(b.lower, b.upper, "{name}: {b:?}");
        b.lower
    };
    assert_eq!(exact("6x5-empty-owner-either"), 12);
    assert_eq!(exact("6x5-standard-owner-either"), 10);
    assert_eq!(exact("6x6-empty-owner-either"), 2);
    assert_eq!(exact("6x6-standard-owner-either"), 4);
    let r = check_dir(&proofs().join("6x6-standard-owner-either"));
    let first = r.openings.iter().find(|(h, _)| *h == 1).unwrap().1;
    assert_eq!((first.lower, first.upper), (4, 4));
}

#[test]
fn a_flipped_verdict_is_caught() {
    // 6x5 standard: the start is proven below +11 (so South's value is +10): say it is at
    // least +11 instead, checksum recomputed. The root record "below +11" no longer follows.
    let mut lines = committed("6x5-standard-owner-either");
    let i = find(&lines, &["\"unit\"", "\"threshold\":11", "\"below\""]);
    lines[i] = lines[i].replace("\"below\"", "\"at-least\"");
    let r = check_dir(ledger_of(&lines).path());
    assert!(!r.ok());
    assert!(
        has_error(
            &r,
            &["claims South's value is below +11", "show the opposite"]
        ),
        "{:#?}",
        r.errors
    );
    // 6x6 empty, a unit one move deep: after South's house 5, North's value is at least
    // -1, which the root's "below +3" needs (South's move gains 1 seed). Flipped, South's
    // house 5 would be worth at least +3.
    let mut lines = committed("6x6-empty-owner-either");
    let i = find(&lines, &["\"path\":\"5\"", "\"at-least\""]);
    assert!(lines[i].contains("\"threshold\":-1"));
    lines[i] = lines[i].replace("\"at-least\"", "\"below\"");
    let r = check_dir(ledger_of(&lines).path());
    assert!(!r.ok());
    assert!(
        has_error(
            &r,
            &["claims South's value is below +3", "show the opposite"]
        ),
        "{:#?}",
        r.errors
    );
    // Flipped to a contradiction with another unit on the same board.
    let mut lines = committed("6x5-empty-owner-either");
    let i = find(&lines, &["\"unit\"", "\"path\":\"\"", "\"threshold\":5,"]);
    lines[i] = lines[i].replace("\"at-least\"", "\"below\"");
    let r = check_dir(ledger_of(&lines).path());
    assert!(has_error(&r, &["contradict each other"]), "{:#?}", r.errors);
}

#[test]
fn a_changed_board_or_path_is_caught() {
    let lines = committed("6x6-empty-owner-either");
    let i = find(&lines, &["\"path\":\"5\"", "\"at-least\""]);
    let line = format!("line {}", i + 1);
    // The board: two seeds moved from one house to another.
    let mut forged = lines.clone();
    forged[i] = forged[i].replace(
        "\"board\":\"7 7 7 7 6 6 / 6 6 6 6 0 7\"",
        "\"board\":\"7 7 7 7 7 5 / 6 6 6 6 0 7\"",
    );
    assert_ne!(forged[i], lines[i]);
    let r = check_dir(ledger_of(&forged).path());
    assert!(!r.ok());
    assert!(
        has_error(&r, &[&line, "leads to 7 7 7 7 6 6 / 6 6 6 6 0 7, not to"]),
        "{:#?}",
        r.errors
    );
    // The path: another opening move.
    let mut forged = lines.clone();
    forged[i] = forged[i].replace("\"path\":\"5\"", "\"path\":\"4\"");
    let r = check_dir(ledger_of(&forged).path());
    assert!(
        has_error(&r, &[&line, "the path \"4\" leads to"]),
        "{:#?}",
        r.errors
    );
    // A path through an empty house (house 1 of 6-seed Kalah ends in the store: South
    // moves again, with house 1 empty).
    let mut forged = lines.clone();
    forged[i] = forged[i].replace("\"path\":\"5\"", "\"path\":\"1 1\"");
    let r = check_dir(ledger_of(&forged).path());
    assert!(
        has_error(
            &r,
            &[
                &line,
                "cannot be played",
                "move 2 (house 1)",
                "house 1 is empty"
            ]
        ),
        "{:#?}",
        r.errors
    );
}

#[test]
fn forged_records_are_caught() {
    // The ledger as it stood when its root records were done: an append-only ledger's
    // prefix never changes, while the first turns proven later would settle the records
    // forged below.
    let mut lines = committed("6x6-empty-owner-either");
    let roots_done = lines
        .iter()
        .rposition(|l| l.contains("\"kind\":\"root\""))
        .expect("root records");
    lines.truncate(roots_done + 1);
    let n = lines.len() + 1;
    // A root record that the units contradict.
    let mut forged = lines.clone();
    forged.push(r#"{"holds":true,"kind":"root","threshold":3}"#.into());
    let r = check_dir(ledger_of(&forged).path());
    assert!(!r.ok());
    assert_eq!((r.records, r.confirmed), (3, 2));
    assert!(
        has_error(&r, &[&format!("line {n}"), "show the opposite"]),
        "{:#?}",
        r.errors
    );
    // Records that do not follow either way: an opening the proof never settled and a
    // first turn, both in an interval the units leave open. (House 1 is the 6x6 opening
    // whose last seed lands in the store.)
    let mut forged = lines.clone();
    forged.push(r#"{"holds":true,"house":3,"kind":"opening","threshold":2}"#.into());
    forged.push(r#"{"holds":true,"kind":"turn","moves":"1 2","threshold":2}"#.into());
    let r = check_dir(ledger_of(&forged).path());
    assert_eq!((r.records, r.confirmed), (4, 2));
    assert!(
        has_error(
            &r,
            &[&format!("line {n}"), "opening move 3", "does not follow"]
        ),
        "{:#?}",
        r.errors
    );
    assert!(
        has_error(
            &r,
            &[
                &format!("line {}", n + 1),
                "first turn \"1 2\"",
                "does not follow"
            ]
        ),
        "{:#?}",
        r.errors
    );
    // Not a first turn: house 2 first passes the turn.
    let mut forged = lines.clone();
    forged.push(r#"{"holds":false,"kind":"turn","moves":"2 1","threshold":2}"#.into());
    let r = check_dir(ledger_of(&forged).path());
    assert!(
        has_error(&r, &["the first turn ends at move 1"]),
        "{:#?}",
        r.errors
    );
    // An opening record that follows from the root's upper bound is confirmed.
    let mut forged = lines;
    forged.push(r#"{"holds":false,"house":3,"kind":"opening","threshold":3}"#.into());
    let r = check_dir(ledger_of(&forged).path());
    assert!(r.ok(), "{:#?}", r.errors);
}

#[test]
fn bad_checksums_are_caught_and_a_torn_tail_is_not() {
    let lines = committed("6x5-empty-owner-either");
    let dir = ledger_of(&lines);
    let p = dir.path().join("ledger.jsonl");
    let good = std::fs::read_to_string(&p).unwrap();
    let mut text: Vec<String> = good.lines().map(String::from).collect();
    // A changed record, its checksum as it was.
    text[3] = text[3].replacen("\"threshold\":1", "\"threshold\":2", 1);
    // A damaged checksum.
    let last = text[5].pop().unwrap();
    text[5].push(if last == '0' { '1' } else { '0' });
    std::fs::write(&p, text.join("\n") + "\n").unwrap();
    let r = check_dir(dir.path());
    assert!(!r.ok());
    assert!(has_error(&r, &["line 4: bad checksum"]), "{:#?}", r.errors);
    assert!(has_error(&r, &["line 6: bad checksum"]), "{:#?}", r.errors);
    // A line cut short at the end (no newline): reported, left out, no error.
    let cut = &good.lines().nth(2).unwrap()[..30];
    std::fs::write(&p, format!("{good}{cut}")).unwrap();
    let r = check_dir(dir.path());
    assert!(r.ok(), "{:#?}", r.errors);
    assert_eq!(r.torn, Some((lines.len() + 1, 30)));
    // A whole last line with a bad checksum is not a torn line: an error.
    std::fs::write(&p, format!("{good}{cut}\t0123456789abcdef\n")).unwrap();
    let r = check_dir(dir.path());
    assert!(has_error(&r, &[&format!("line {}", lines.len() + 1)]));
}

/// The value of `board` for the player to move, by plain minimax with this crate's rules.
fn minimax(rules: &Rules, board: &Board) -> i32 {
    if let Some(v) = board.final_value(rules) {
        return v;
    }
    board
        .moves(rules)
        .into_iter()
        .map(|h| {
            let mv = board.play(rules, h).unwrap();
            let next = minimax(rules, &mv.next);
            if mv.extra_turn {
                mv.gain + next
            } else {
                mv.gain - next
            }
        })
        .max()
        .unwrap()
}

fn header(rules: &Rules) -> String {
    format!(
        r#"{{"kind":"header","rules":{{"capture":"{}","end":"{}","houses":{},"leftover":"{}","seeds":{}}},"version":1}}"#,
        rules.capture.name(),
        rules.end.name(),
        rules.houses,
        rules.leftover.name(),
        rules.seeds
    )
}

fn unit(path: &str, board: &Board, t: i32, verdict: &str, db: u32) -> String {
    format!(
        r#"{{"board":"{board}","budget":0,"db_seeds":{db},"kind":"unit","nodes":0,"path":"{path}","seconds":0.0,"threshold":{t},"verdict":"{verdict}","worker":"test"}}"#
    )
}

fn root(t: i32, holds: bool) -> String {
    format!(r#"{{"holds":{holds},"kind":"root","threshold":{t}}}"#)
}

#[test]
fn a_ledger_of_exact_facts_one_move_deep_gives_the_minimax_value() {
    use ledger_check::game::{Capture, End, Leftover};
    for (capture, leftover, end) in [
        (Capture::Standard, Leftover::Owner, End::Either),
        (Capture::Empty, Leftover::Emptier, End::Either),
        (Capture::Never, Leftover::Discard, End::Mover),
        (Capture::Standard, Leftover::Owner, End::Mover),
    ] {
        let rules = Rules {
            houses: 3,
            seeds: 2,
            capture,
            leftover,
            end,
        };
        let start = Board::start(&rules);
        let v = minimax(&rules, &start);
        // The root split, and for each move a unit at its exact value both ways.
        let mut lines = vec![header(&rules), unit("", &start, v, "open", 0)];
        for h in start.moves(&rules) {
            let next = start.play(&rules, h).unwrap().next;
            let w = minimax(&rules, &next);
            lines.push(unit(&h.to_string(), &next, w, "at-least", 0));
            lines.push(unit(&h.to_string(), &next, w + 1, "below", 0));
        }
        lines.push(root(v, true));
        lines.push(root(v + 1, false));
        let r = check_dir(ledger_of(&lines).path());
        assert!(r.ok(), "{capture:?} {leftover:?} {end:?}: {:#?}", r.errors);
        assert_eq!((r.root.lower, r.root.upper), (v, v));
        // One more point claimed: caught.
        lines.push(root(v + 1, true));
        let r = check_dir(ledger_of(&lines).path());
        assert!(has_error(&r, &["show the opposite"]), "{:#?}", r.errors);
    }
}

/// Where every seed ends in a store, a board's value has the parity of its seeds: a unit at
/// the threshold just below a value settles the value's question too ("at least w - 1"
/// is "at least w"), and one that fails at a value fails just below it ("below w + 2" is
/// "below w + 1"). Under `discard`, where values have no parity, the same ledger proves
/// nothing, and contradictions are found between equivalent thresholds only with parity.
#[test]
fn equivalent_thresholds_settle_each_other_only_where_values_have_parity() {
    use ledger_check::game::{Capture, End, Leftover};
    for (leftover, parity) in [
        (Leftover::Owner, true),
        (Leftover::Emptier, true),
        (Leftover::Discard, false),
    ] {
        let rules = Rules {
            houses: 3,
            seeds: 2,
            capture: Capture::Standard,
            leftover,
            end: End::Either,
        };
        let start = Board::start(&rules);
        let v = minimax(&rules, &start);
        let mut lines = vec![header(&rules), unit("", &start, v, "open", 0)];
        let mut one = None;
        for h in start.moves(&rules) {
            let next = start.play(&rules, h).unwrap().next;
            let w = minimax(&rules, &next);
            one.get_or_insert((h, next.clone(), w));
            lines.push(unit(&h.to_string(), &next, w - 1, "at-least", 0));
            lines.push(unit(&h.to_string(), &next, w + 2, "below", 0));
        }
        lines.push(root(v, true));
        lines.push(root(v + 1, false));
        let r = check_dir(ledger_of(&lines).path());
        assert_eq!(r.ok(), parity, "{leftover:?}: {:#?}", r.errors);
        if parity {
            assert_eq!((r.root.lower, r.root.upper), (v, v));
        } else {
            assert!(has_error(&r, &["does not follow"]), "{:#?}", r.errors);
        }
        // "Below w" beside "at least w - 1": a contradiction only where values have parity.
        let (h, next, w) = one.unwrap();
        lines.insert(2, unit(&h.to_string(), &next, w, "below", 0));
        let r = check_dir(ledger_of(&lines).path());
        let contradiction = has_error(&r, &["contradict each other"]);
        assert_eq!(contradiction, parity, "{leftover:?}: {:#?}", r.errors);
    }
}

#[test]
fn a_record_that_needs_the_database_says_so() {
    // 3 houses, 2 seeds: 12 seeds in all, within the 12-seed database the "prover" used.
    // The root is split and nothing else is known: every move leads to a database leaf.
    let rules = Rules::kalah(3, 2);
    let start = Board::start(&rules);
    let lines = vec![
        header(&rules),
        unit("", &start, 0, "open", 12),
        root(0, true),
    ];
    let r = check_dir(ledger_of(&lines).path());
    assert!(!r.ok());
    assert_eq!(r.confirmed, 0);
    assert!(r.needed.0 > 0 && r.needed.1 == 0, "{:?}", r.needed);
    assert!(
        has_error(
            &r,
            &[
                "does not follow",
                "within the prover's 12-seed database",
                "unsettled: \""
            ]
        ),
        "{:#?}",
        r.errors
    );
    // With a database too small for them, the same leaves are settled by nothing.
    let lines = vec![
        header(&rules),
        unit("", &start, 0, "open", 4),
        root(0, true),
    ];
    let r = check_dir(ledger_of(&lines).path());
    assert!(r.needed.0 == 0 && r.needed.1 > 0, "{:?}", r.needed);
    assert!(has_error(&r, &["settled by no unit"]), "{:#?}", r.errors);
}

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ledger-check"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
    )
}

#[test]
fn the_command_line() {
    let p = proofs();
    let a = p.join("6x5-empty-owner-either");
    let b = p.join("6x5-standard-owner-either");
    let (code, out) = run(&[a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("South's value exactly +12") && out.contains("exactly +10"));
    // Every record of both is confirmed, however far their ledgers have grown.
    let confirmed: Vec<&str> = out.lines().filter(|l| l.contains("records:")).collect();
    assert_eq!(confirmed.len(), 2, "{out}");
    for line in confirmed {
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(words[1], words[3], "{line}");
        assert_eq!(words[4], "confirmed", "{line}");
    }
    let (code, out) = run(&["--json", a.join("ledger.jsonl").to_str().unwrap()]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["root"]["lower"], 12);
    assert!(v["records"]["confirmed"].as_u64().unwrap() >= 8, "{v}");
    assert_eq!(v["records"]["confirmed"], v["records"]["total"], "{v}");
    // A forged ledger beside a good one: status 1.
    let mut lines = committed("6x5-standard-owner-either");
    lines.push(root(11, true));
    let forged = ledger_of(&lines);
    let (code, out) = run(&[a.to_str().unwrap(), forged.path().to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(out.contains("FAILED"), "{out}");
    // A directory with no ledger: status 1; bad usage: status 2.
    let empty = tempfile::tempdir().unwrap();
    assert_eq!(run(&[empty.path().to_str().unwrap()]).0, 1);
    assert_eq!(run(&[]).0, 2);
    assert_eq!(run(&["--frobnicate", a.to_str().unwrap()]).0, 2);
    assert_eq!(run(&["--help"]).0, 0);
}
