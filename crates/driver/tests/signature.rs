//! The search's signature, as Stockfish's `bench`: the value and node count of a fixed set of
//! proofs (one thread, no database, the same table), kept in `signature.txt`. The search is
//! deterministic on one thread, so any change to what it visits changes a count here and
//! shows in review; a change meant to alter the search updates the file (the test prints the
//! new one).

use kalah_driver::{Goal, Search, SearchConfig};
use kalah_solver::{Board, Rules};
use std::sync::atomic::AtomicBool;

fn signature_line(rules: &Rules) -> String {
    let search = Search::new(
        *rules,
        SearchConfig {
            tt_mb: 16,
            tt_grow: Some(kalah_driver::search::tt::GROW_START_MB),
            threads: 1,
            ..SearchConfig::default()
        },
    );
    let never = AtomicBool::new(false);
    let a = search
        .analyse(&Board::start(rules), false, Goal::Exact, &|_| {}, &never)
        .unwrap();
    format!(
        "{} {} {} {} {} {} {}",
        rules.houses,
        rules.seeds,
        rules.capture.name(),
        rules.leftover.name(),
        rules.end.name(),
        a.value,
        a.nodes
    )
}

#[test]
fn node_counts_of_the_fixed_proofs_are_unchanged() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/signature.txt");
    let text = std::fs::read_to_string(path).unwrap();
    let mut now = String::new();
    let mut same = true;
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let f: Vec<&str> = line.split_whitespace().collect();
        let rules = Rules {
            houses: f[0].parse().unwrap(),
            seeds: f[1].parse().unwrap(),
            capture: f[2].parse().unwrap(),
            leftover: f[3].parse().unwrap(),
            end: f[4].parse().unwrap(),
        };
        let got = signature_line(&rules);
        same &= got == line;
        now += &got;
        now.push('\n');
    }
    assert!(
        same,
        "the search's node counts changed; if that is meant, put this in {path}:\n{now}"
    );
}
