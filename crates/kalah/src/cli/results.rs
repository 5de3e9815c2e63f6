//! `kalah results`: the table of proven game values, from the recorded results and the proof
//! ledgers, each with where it came from.

use super::common::{rechecked_json, CliError, CliResult};
use clap::Args;
use kalah_driver::results::{
    ledger_summary, notation, Entry, LedgerSummary, ResultsFile, RuleSet, RULE_SETS,
};
use kalah_solver::{Board, Rules};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Arguments of `kalah results`.
///
/// Prints, for every rule set of the rule books and 3 to 6 seeds on 6 houses (and any other
/// game recorded), the start's value (South's final margin with perfect play), the best first
/// turn(s), the value under the pie rule and every first turn's value, with the source of
/// each: a `kalah solve --first-turns --record` run, or a proof ledger under `--proofs`.
#[derive(Args, Debug)]
pub struct ResultsArgs {
    /// The recorded results (written by `kalah solve --first-turns --record`).
    #[arg(long, default_value = "data/results.json", value_name = "FILE")]
    pub file: PathBuf,
    /// The directory of proof ledgers (one directory per game, as `kalah prove` makes them).
    #[arg(long, default_value = "data/proofs", value_name = "DIR")]
    pub proofs: PathBuf,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// One row of the table: a game with what is known of it.
struct Row {
    set: Option<RuleSet>,
    rules: Rules,
    entry: Option<Entry>,
    ledger: Option<(PathBuf, LedgerSummary)>,
}

impl Row {
    /// Bounds on the start's value from every source.
    fn bounds(&self) -> Option<(i32, i32)> {
        match (&self.entry, &self.ledger) {
            (Some(e), _) => Some((e.value, e.value)),
            (None, Some((_, l))) => Some((l.lower, l.upper)),
            (None, None) => None,
        }
    }
}

/// Runs `kalah results`.
pub fn run(args: &ResultsArgs) -> CliResult {
    let file = ResultsFile::read(&args.file).map_err(CliError::failure)?;
    let ledgers = read_ledgers(&args.proofs)?;
    let mut rows: Vec<Row> = Vec::new();
    for set in RULE_SETS {
        for seeds in 3..=6 {
            let rules = set.rules(6, seeds);
            rows.push(Row {
                set: Some(set),
                rules,
                entry: None,
                ledger: None,
            });
        }
    }
    let find = |rows: &mut Vec<Row>, rules: &Rules| -> usize {
        if let Some(i) = rows.iter().position(|r| r.rules == *rules) {
            return i;
        }
        rows.push(Row {
            set: RuleSet::of(rules),
            rules: *rules,
            entry: None,
            ledger: None,
        });
        rows.len() - 1
    };
    for e in &file.entries {
        let rules = e.rules().map_err(CliError::failure)?;
        let i = find(&mut rows, &rules);
        rows[i].entry = Some(e.clone());
    }
    for (dir, l) in ledgers {
        let i = find(&mut rows, &l.rules);
        rows[i].ledger = Some((dir, l));
    }
    // Two sources of one game must agree.
    for r in &rows {
        if let (Some(e), Some((dir, l))) = (&r.entry, &r.ledger) {
            if e.value < l.lower || e.value > l.upper {
                return Err(CliError::failure(format!(
                    "{}: the recorded value {:+} is outside the bounds [{:+}, {:+}] of the \
                     ledger {}",
                    r.rules,
                    e.value,
                    l.lower,
                    l.upper,
                    dir.display()
                )));
            }
        }
    }
    if args.json {
        let games: Vec<Value> = rows.iter().map(row_json).collect();
        println!("{}", json!({ "games": games }));
    } else {
        print_table(&rows);
    }
    Ok(())
}

/// Every ledger under `dir` (none when `dir` is not there).
fn read_ledgers(dir: &Path) -> CliResult<Vec<(PathBuf, LedgerSummary)>> {
    let mut out = Vec::new();
    let list = match std::fs::read_dir(dir) {
        Ok(l) => l,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(CliError::failure(format!("{}: {e}", dir.display()))),
    };
    let mut dirs: Vec<PathBuf> = list
        .filter_map(|d| d.ok().map(|d| d.path()))
        .filter(|p| p.join("ledger.jsonl").is_file())
        .collect();
    dirs.sort();
    for d in dirs {
        let s =
            ledger_summary(&d).map_err(|e| CliError::failure(format!("{}: {e}", d.display())))?;
        out.push((d, s));
    }
    Ok(out)
}

fn signed(v: i32) -> String {
    format!("{v:+}")
}

fn bounds_text(lo: i32, hi: i32) -> String {
    if lo == hi {
        signed(lo)
    } else {
        format!("{}..{}", signed(lo), signed(hi))
    }
}

fn source_text(r: &Row) -> String {
    let mut parts = Vec::new();
    if let Some(e) = &r.entry {
        parts.push(format!(
            "solve {} ({:.1} M nodes, {:.0} s, {}-seed database)",
            e.source.date,
            e.source.nodes as f64 / 1e6,
            e.source.seconds,
            e.source.database_seeds
        ));
    }
    if let Some((dir, l)) = &r.ledger {
        parts.push(format!(
            "ledger {} ({} units, {:.1} G nodes, {:.1} h{})",
            dir.display(),
            l.units,
            l.nodes as f64 / 1e9,
            l.seconds / 3600.0,
            rechecked_text(l)
        ));
    }
    if parts.is_empty() {
        "not proven yet".into()
    } else {
        parts.join("; ")
    }
}

/// What `prove check --needed` has proven again of a ledger's units, after its totals:
/// nothing when it has not been run.
fn rechecked_text(l: &LedgerSummary) -> String {
    match &l.rechecked {
        Ok(None) => String::new(),
        Ok(Some(s)) => {
            let count = match &s.needed {
                Some(n) if n.current => format!("{} of {} needed units", n.rechecked, n.units),
                _ => format!("{} units", s.units),
            };
            let agree = if s.agree == s.units {
                "each as the ledger says".to_string()
            } else {
                format!("{} NOT as the ledger says", s.units - s.agree)
            };
            format!("; {count} proven again, {agree}")
        }
        Err(e) => format!("; its record of units proven again is damaged: {e}"),
    }
}

fn print_table(rows: &[Row]) {
    println!(
        "South's final margin with perfect play (6 houses unless said); pie: the value when North \
         may swap sides after South's first turn"
    );
    println!(
        "{:<11} {:<5} {:>9} {:<22} {:>7}  source",
        "rules", "board", "value", "best first turn(s)", "pie"
    );
    for r in rows {
        let name = r.set.map(|s| s.name).unwrap_or("other");
        let board = format!("{}x{}", r.rules.houses, r.rules.seeds);
        let value = r
            .bounds()
            .map(|(lo, hi)| bounds_text(lo, hi))
            .unwrap_or_else(|| "?".into());
        let (best, pie) = match (&r.entry, &r.ledger) {
            (Some(e), _) => (
                e.best
                    .iter()
                    .map(|m| notation(m))
                    .collect::<Vec<_>>()
                    .join(", "),
                signed(e.pie_value),
            ),
            (None, Some((_, l))) => match ledger_best(l) {
                Some((mut best, complete)) => {
                    // Turns not yet settled may be as good ("S1.." says so of itself).
                    if !complete && !l.turns.is_empty() {
                        best.push("..".into());
                    }
                    (best.join(", "), ledger_pie_text(l))
                }
                None => (String::new(), ledger_pie_text(l)),
            },
            _ => (String::new(), "?".into()),
        };
        let rules = if r.set.is_none() {
            format!("{} ({})", name, r.rules.slug())
        } else {
            name.to_string()
        };
        println!(
            "{:<11} {:<5} {:>9} {:<22} {:>7}  {}",
            rules,
            board,
            value,
            best,
            pie,
            source_text(r)
        );
    }
    println!();
    println!("Every first turn (South's margin after it):");
    for r in rows {
        let name = r.set.map(|s| s.name).unwrap_or("other");
        if let Some(e) = &r.entry {
            let turns: Vec<String> = e
                .turns
                .iter()
                .map(|t| format!("{} {:+}", notation(&t.moves), t.margin))
                .collect();
            println!(
                "  {name} {}x{}: {}",
                r.rules.houses,
                r.rules.seeds,
                turns.join(", ")
            );
        } else if let Some((_, l)) = &r.ledger {
            if !l.turns.is_empty() {
                let t: Vec<String> = l
                    .turns
                    .iter()
                    .map(|(m, lo, hi)| format!("{} {}", notation(m), bounds_text(*lo, *hi)))
                    .collect();
                let label = if all_turns_exact(l) {
                    "from the ledger"
                } else {
                    "first turns so far, from the ledger"
                };
                println!(
                    "  {name} {}x{} ({label}): {}",
                    r.rules.houses,
                    r.rules.seeds,
                    t.join(", ")
                );
            } else if !l.openings.is_empty() {
                let o: Vec<String> = l
                    .openings
                    .iter()
                    .map(|&(h, lo, hi)| format!("S{h}.. {}", bounds_text(lo, hi)))
                    .collect();
                println!(
                    "  {name} {}x{} (opening moves so far, from the ledger): {}",
                    r.rules.houses,
                    r.rules.seeds,
                    o.join(", ")
                );
            }
        }
    }
    println!();
    println!("Rule sets:");
    for s in RULE_SETS {
        println!(
            "  {:<11} capture {}, leftover {}, end {}: {}",
            s.name,
            s.capture.name(),
            s.leftover.name(),
            s.end.name(),
            s.book
        );
    }
}

/// Whether the ledger settles every first turn exactly.
fn all_turns_exact(l: &LedgerSummary) -> bool {
    let all = kalah_driver::results::first_turns(&l.rules);
    all.len() == l.turns.len() && l.turns.iter().all(|t| t.1 == t.2)
}

/// The pie rule's value where the ledger's first turns settle it (see
/// [`LedgerSummary::pie_bounds`]), for a start whose value is exact.
fn ledger_pie(l: &LedgerSummary) -> Option<i32> {
    let (lo, hi) = l.pie_bounds();
    (l.lower == l.upper && lo == hi).then_some(lo)
}

/// A ledger's pie column: its bounds on the pie rule's value (one number once exact), `?`
/// while they allow anything from losing every seed to 0.
fn ledger_pie_text(l: &LedgerSummary) -> String {
    let seeds = Board::start(&l.rules).seeds() as i32;
    match l.pie_bounds() {
        (lo, _) if lo <= -seeds => "?".into(),
        (lo, hi) => bounds_text(lo, hi),
    }
}

/// The best first turns a ledger proves, for a start whose value it settles, and whether the
/// list is complete (every first turn settled). Before any first turn has records, the opening
/// moves proven best stand in, each as `S<h>..`, and the list is never complete.
fn ledger_best(l: &LedgerSummary) -> Option<(Vec<String>, bool)> {
    if l.lower != l.upper {
        return None;
    }
    if l.turns.is_empty() {
        let best = l.openings.iter().filter(|o| o.1 == l.lower);
        return Some((best.map(|o| format!("S{}..", o.0)).collect(), false));
    }
    // A turn is worth at most the start, so one whose lower bound reaches it is exact.
    let best = l.turns.iter().filter(|t| t.1 == l.lower);
    Some((best.map(|t| notation(&t.0)).collect(), all_turns_exact(l)))
}

fn row_json(r: &Row) -> Value {
    let (lower, upper) = r.bounds().map_or((None, None), |(a, b)| (Some(a), Some(b)));
    let mut sources = Vec::new();
    if let Some(e) = &r.entry {
        sources.push(json!({
            "kind": "solve",
            "command": e.source.command,
            "nodes": e.source.nodes,
            "seconds": e.source.seconds,
            "database_seeds": e.source.database_seeds,
            "version": e.source.version,
            "date": e.source.date,
        }));
    }
    if let Some((dir, l)) = &r.ledger {
        sources.push(json!({
            "kind": "ledger",
            "dir": dir.display().to_string(),
            "check": format!("kalah prove check {}", dir.display()),
            "units": l.units,
            "nodes": l.nodes,
            "seconds": l.seconds,
            "lower": l.lower,
            "upper": l.upper,
            "rechecked": rechecked_json(&l.rechecked),
        }));
    }
    let moves = |m: &Vec<usize>| notation(m);
    let ledger = r.ledger.as_ref().map(|(_, l)| l);
    // Solved entries are complete; a ledger's best turns are complete once every turn is
    // settled, and its pie value is bounded by its first turns' bounds.
    let (best, best_complete) = match (&r.entry, ledger.and_then(ledger_best)) {
        (Some(e), _) => (Some(e.best.iter().map(moves).collect()), Some(true)),
        (None, Some((b, complete))) => (Some(b), Some(complete)),
        (None, None) => (None, None),
    };
    let (pie_lower, pie_upper) = match (&r.entry, ledger) {
        (Some(e), _) => (Some(e.pie_value), Some(e.pie_value)),
        (None, Some(l)) => {
            let (lo, hi) = l.pie_bounds();
            (Some(lo), Some(hi))
        }
        _ => (None, None),
    };
    json!({
        "rule_set": r.set.map(|s| s.name),
        "houses": r.rules.houses,
        "seeds": r.rules.seeds,
        "capture": r.rules.capture.name(),
        "leftover": r.rules.leftover.name(),
        "end": r.rules.end.name(),
        "value": if lower == upper { lower } else { None },
        "lower": lower,
        "upper": upper,
        "best": best,
        "best_complete": best_complete,
        "pie_value": r.entry.as_ref().map(|e| e.pie_value).or_else(|| ledger.and_then(ledger_pie)),
        "pie_lower": pie_lower,
        "pie_upper": pie_upper,
        "pie_best": r.entry.as_ref().map(|e| e.pie_best.iter().map(moves).collect::<Vec<_>>()),
        "turns": r.entry.as_ref().map(|e| e.turns.iter()
            .map(|t| json!({"moves": notation(&t.moves), "margin": t.margin}))
            .collect::<Vec<_>>()),
        "openings": r.ledger.as_ref().map(|(_, l)| l.openings.iter()
            .map(|&(h, lo, hi)| json!({"house": h, "lower": lo, "upper": hi}))
            .collect::<Vec<_>>()),
        "ledger_turns": r.ledger.as_ref().map(|(_, l)| l.turns.iter()
            .map(|(m, lo, hi)| json!({"moves": notation(m), "lower": lo, "upper": hi}))
            .collect::<Vec<_>>()),
        "sources": sources,
    })
}
