//! Where a proof stands, read from its ledger (and the last run's status snapshot): the
//! value's bounds, each opening move's and first turn's, the units and their work, and a rough
//! estimate of what is left. A look only: nothing is searched.

use super::derive::{self, Derivation};
use super::ledger::{self, Contents, Record, Verdict};
use super::{read_snapshot, recheck, tree};
use crate::Search;
use kalah_solver::{Board, Rules};
use serde_json::Value;
use std::path::Path;

/// Where a proof stands.
#[derive(Clone, Debug)]
pub struct LedgerStatus {
    /// The rules proven.
    pub rules: Rules,
    /// Bounds on South's value at the start.
    pub lower: i32,
    /// Upper bound.
    pub upper: i32,
    /// Each opening move with records or derivable bounds: (0-based house, lower, upper),
    /// narrowed by the first turns' bounds.
    pub moves: Vec<(usize, i32, i32)>,
    /// Each first turn with records: (0-based houses, lower, upper) of South's value after it.
    pub turns: Vec<(Vec<usize>, i32, i32)>,
    /// Units proven "at least".
    pub units_at_least: u64,
    /// Units proven "below".
    pub units_below: u64,
    /// Units that ran out of budget (and were split).
    pub units_open: u64,
    /// Nodes of every unit.
    pub nodes: u64,
    /// Seconds of every unit (unit time, summed over workers).
    pub seconds: f64,
    /// Bytes of the ledger file.
    pub ledger_bytes: u64,
    /// Bytes of a last line cut short (not read).
    pub torn_bytes: u64,
    /// The last run's status snapshot (`status.json`), if it can be read.
    pub snapshot: Option<Value>,
    /// What `prove check --needed` has proven again (`rechecked.jsonl`): none without the
    /// file, an error when it is damaged.
    pub rechecked: Result<Option<recheck::Summary>, String>,
}

/// A rough estimate of the work left on the question being asked.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// At least this many more units (the smaller of the proof and disproof numbers).
    pub units: u64,
    /// Mean nodes per unit so far.
    pub nodes_per_unit: f64,
    /// Hours at the rate so far.
    pub hours: f64,
}

impl LedgerStatus {
    /// "win", "loss" or "draw" for the first player when the bounds settle it.
    pub fn result(&self) -> Option<&'static str> {
        result_word(self.lower, self.upper)
    }

    /// Units proven ("at least" or "below").
    pub fn units_proven(&self) -> u64 {
        self.units_at_least + self.units_below
    }

    /// Nodes per second of unit time.
    pub fn nodes_per_second(&self) -> f64 {
        self.nodes as f64 / self.seconds.max(1e-9)
    }

    /// The snapshot, when the last run has not finished.
    pub fn running_snapshot(&self) -> Option<&Value> {
        self.snapshot.as_ref().filter(|s| s.get("done").is_none())
    }

    /// Work left on the question being asked, at the mean unit so far: `None` when the value
    /// is known, no unit is proven yet, or the snapshot says nothing.
    pub fn estimate(&self) -> Option<Estimate> {
        let s = self.running_snapshot()?;
        let units = s.get("phi")?.as_u64()?.min(s.get("delta")?.as_u64()?);
        let rate = self.nodes_per_second();
        let proven = self.units_proven();
        if self.lower >= self.upper || proven == 0 || rate <= 0.0 || units >= tree::INF {
            return None;
        }
        let nodes_per_unit = self.nodes as f64 / (proven + self.units_open) as f64;
        Some(Estimate {
            units,
            nodes_per_unit,
            hours: units as f64 * nodes_per_unit / rate / 3600.0,
        })
    }
}

/// "win", "loss" or "draw" for the first player when bounds on South's value settle it.
pub fn result_word(lower: i32, upper: i32) -> Option<&'static str> {
    if lower > 0 {
        Some("win")
    } else if upper < 0 {
        Some("loss")
    } else if lower == 0 && upper == 0 {
        Some("draw")
    } else {
        None
    }
}

/// Where the proof in `dir` stands, from its ledger `contents` (as [`ledger::read`] gives
/// them). `search` settles boards its database holds (it is not asked to search).
pub fn status(dir: &Path, contents: &Contents, search: &Search) -> Result<LedgerStatus, String> {
    let rules = contents.header.rules;
    let parity = search.values_have_parity();
    let mut units = Vec::new();
    let mut roots = Vec::new();
    let mut opening_thresholds = Vec::new();
    let mut turn_records = Vec::new();
    let (mut at_least, mut below, mut open) = (0u64, 0u64, 0u64);
    let (mut nodes, mut seconds) = (0u64, 0f64);
    for (_, r) in &contents.records {
        match r {
            Record::Unit(u) => {
                match u.verdict {
                    Verdict::AtLeast => at_least += 1,
                    Verdict::Below => below += 1,
                    Verdict::Open => open += 1,
                }
                nodes += u.nodes;
                seconds += u.seconds;
                units.push(u);
            }
            Record::Root(q) => roots.push(q.clone()),
            Record::Opening(q) => opening_thresholds.push(q.threshold),
            Record::Turn(q) => turn_records.push(q.clone()),
        }
    }
    let seeds = Board::start(&rules).seeds() as i32;
    let (lower, upper) = derive::root_bounds(&roots, seeds, parity);
    let turns = derive::recorded_turns(&rules, &turn_records, upper, seeds, parity);
    let snapshot = read_snapshot(dir);
    // The thresholds asked of the root and the openings, and the one being asked now.
    let mut thresholds: Vec<i32> = roots.iter().map(|a| a.threshold).collect();
    thresholds.extend(opening_thresholds);
    if let Some(t) = snapshot
        .as_ref()
        .and_then(|s| s.get("threshold")?.as_i64())
        .filter(|_| lower < upper)
    {
        thresholds.push(t as i32);
    }
    thresholds.sort();
    thresholds.dedup();
    let mut d = Derivation::new(search, &rules, &units)?;
    d.no_search();
    let mut moves =
        derive::move_bounds(&mut d, &thresholds, upper, parity).map_err(|e| e.to_string())?;
    derive::narrow_by_turns(&rules, &mut moves, &turns, upper, seeds);
    let ledger_bytes = std::fs::metadata(ledger::path(dir))
        .map(|m| m.len())
        .unwrap_or(0);
    Ok(LedgerStatus {
        rules,
        lower,
        upper,
        moves,
        turns,
        units_at_least: at_least,
        units_below: below,
        units_open: open,
        nodes,
        seconds,
        ledger_bytes,
        torn_bytes: contents.torn_bytes as u64,
        snapshot,
        rechecked: recheck::summary(dir, contents),
    })
}
