//! What a ledger proves, derived from its units alone; and `check`, which proves the units
//! again and compares.
//!
//! A question "is the value of `board` at least `t`?" is settled by a proven unit about the
//! board (a value at least `t` is at least every smaller threshold), by the game's end or the
//! database, or, for a position the coordinator split (the root, and every unit that ran out of
//! budget), by its moves: it holds if one move's question does (negated where the turn
//! passes), and fails if every move's fails. The root records of the ledger are claims; a check
//! derives each one again from the units and reports any that does not follow.

use super::ledger::{Contents, OpeningRecord, Record, RootRecord, TurnRecord, UnitRecord, Verdict};
use super::recheck::{self, InFlight, Recheck};
use super::tree::{opening_question, questions, turn_question, Facts};
use super::ProveError;
use crate::search::{Progress, Search, SearchError};
use kalah_solver::{Board, Rules};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// Plies below the root beyond which a derivation gives up (the coordinator's trees are far
/// shallower).
const MAX_PLIES: usize = 200;

/// For each board with facts: (threshold, unit index) of the largest threshold proven
/// reached and of the smallest proven not reached.
type Sources = HashMap<Board, (Option<(i32, usize)>, Option<(i32, usize)>)>;

/// Derives answers from a ledger's units.
pub struct Derivation<'a> {
    search: &'a Search,
    rules: Rules,
    facts: Facts,
    split: HashSet<Board>,
    /// Boards this small were answered by the database of some unit's prover: a check with a
    /// smaller database searches them.
    db_seeds: u32,
    memo: HashMap<(Board, i32), Option<bool>>,
    /// Nodes spent searching boards the ledger's database covered and this one does not.
    pub nodes: u64,
    search_small: bool,
    /// For each board with facts, the unit (index in the units given) with the largest
    /// threshold proven reached and the one with the smallest proven not reached.
    sources: Sources,
    /// The units whose facts the answers so far rest on.
    used: HashSet<usize>,
}

impl<'a> Derivation<'a> {
    /// The facts of `units` (an error if two contradict each other) over `search`'s database.
    pub fn new(
        search: &'a Search,
        rules: &Rules,
        units: &[&UnitRecord],
    ) -> Result<Derivation<'a>, String> {
        let mut facts = Facts::new(search.values_have_parity());
        let mut split = HashSet::new();
        split.insert(Board::start(rules));
        let mut db_seeds = 0;
        let mut sources = Sources::new();
        for (i, u) in units.iter().enumerate() {
            match u.verdict.truth() {
                Some(h) => {
                    facts.add(&u.board, u.threshold, h)?;
                    let e = sources.entry(u.board).or_default();
                    let t = u.threshold;
                    if h {
                        if e.0.is_none_or(|(best, _)| t > best) {
                            e.0 = Some((t, i));
                        }
                    } else if e.1.is_none_or(|(best, _)| t < best) {
                        e.1 = Some((t, i));
                    }
                }
                None => {
                    split.insert(u.board);
                }
            }
            db_seeds = db_seeds.max(u.db_seeds);
        }
        Ok(Derivation {
            search,
            rules: *rules,
            facts,
            split,
            db_seeds,
            memo: HashMap::new(),
            nodes: 0,
            search_small: true,
            sources,
            used: HashSet::new(),
        })
    }

    /// The units (indices in the units given to [`Derivation::new`]) that the answers derived
    /// so far rest on: a fact used to settle a question names the unit that proved it.
    pub fn used_units(&self) -> &HashSet<usize> {
        &self.used
    }

    /// Leaves boards that only the prover's (larger) database answered unknown instead of
    /// searching them: for a quick look.
    pub fn no_search(&mut self) {
        self.search_small = false;
    }

    /// Whether "South's value after opening with `house` is at least `t`" follows from the
    /// units (the question about the position after the move, negated where the turn passes).
    pub fn opening_holds(&mut self, house: usize, t: i32) -> Result<Option<bool>, SearchError> {
        let q = opening_question(&self.rules, house, t);
        Ok(self.holds(&q.board, q.threshold)?.map(|r| r != q.flip))
    }

    /// Whether "South's final margin after the first turn `moves` is at least `t`" follows
    /// from the units (an error if `moves` is not a first turn).
    pub fn turn_holds(&mut self, moves: &[usize], t: i32) -> Result<Option<bool>, String> {
        let q = turn_question(&self.rules, moves, t)?;
        Ok(self
            .holds(&q.board, q.threshold)
            .map_err(|e| e.to_string())?
            .map(|r| r != q.flip))
    }

    /// Whether "the value of `board` is at least `t`" follows from the units: `Some(answer)`,
    /// or `None` when it does not follow either way.
    pub fn holds(&mut self, board: &Board, t: i32) -> Result<Option<bool>, SearchError> {
        self.holds_at(board, t, 0)
    }

    fn holds_at(&mut self, board: &Board, t: i32, ply: usize) -> Result<Option<bool>, SearchError> {
        if let Some(h) = self.facts.get(board, t) {
            let (reached, missed) = self.sources[board];
            let unit = if h { reached } else { missed };
            if let Some((_, i)) = unit {
                self.used.insert(i);
            }
            return Ok(Some(h));
        }
        if let Some(v) = self.search.known_value(board)? {
            return Ok(Some(v >= t));
        }
        if let Some(&r) = self.memo.get(&(*board, t)) {
            return Ok(r);
        }
        let r = if self.split.contains(board) && ply < MAX_PLIES {
            let mut all_fail = true;
            let mut r = None;
            for q in questions(&self.rules, board, t) {
                match self.holds_at(&q.board, q.threshold, ply + 1)? {
                    Some(h) if h != q.flip => {
                        r = Some(true);
                        break;
                    }
                    Some(_) => {}
                    None => all_fail = false,
                }
            }
            if r.is_none() && all_fail {
                Some(false)
            } else {
                r
            }
        } else if self.search_small && board.seeds() <= self.db_seeds {
            // The prover's database answered this board; this one is smaller: search it.
            let never = AtomicBool::new(false);
            let (r, nodes) =
                self.search
                    .decide(board, t, None, "database board", &|_| {}, &never)?;
            self.nodes += nodes;
            r
        } else {
            None
        };
        self.memo.insert((*board, t), r);
        Ok(r)
    }
}

/// Bounds on South's value from root answers, rounded to the parity of the values when
/// `parity`.
pub fn root_bounds(answers: &[RootRecord], seeds: i32, parity: bool) -> (i32, i32) {
    bounds(
        answers.iter().map(|a| (a.threshold, a.holds)),
        seeds,
        parity,
    )
}

/// Bounds on South's value after opening with `house`, from the answers about that move
/// and the root's upper bound `root_upper` (no move is worth more than the position),
/// rounded as in [`root_bounds`].
pub fn opening_bounds(
    answers: &[OpeningRecord],
    house: usize,
    root_upper: i32,
    seeds: i32,
    parity: bool,
) -> (i32, i32) {
    let about = answers.iter().filter(|a| a.house == house);
    capped(
        about.map(|a| (a.threshold, a.holds)),
        root_upper,
        seeds,
        parity,
    )
}

/// Bounds on South's final margin after the first turn `moves`, from the answers about that
/// turn and the root's upper bound (no first turn is worth more than the position), rounded
/// as in [`root_bounds`].
pub fn turn_bounds(
    answers: &[TurnRecord],
    moves: &[usize],
    root_upper: i32,
    seeds: i32,
    parity: bool,
) -> (i32, i32) {
    let about = answers.iter().filter(|a| a.moves == moves);
    capped(
        about.map(|a| (a.threshold, a.holds)),
        root_upper,
        seeds,
        parity,
    )
}

/// [`turn_bounds`] of every first turn of `rules` that `answers` ask about, in the order of
/// [`super::tree::first_turns`]: (0-based houses, lower, upper).
pub fn recorded_turns(
    rules: &Rules,
    answers: &[TurnRecord],
    root_upper: i32,
    seeds: i32,
    parity: bool,
) -> Vec<(Vec<usize>, i32, i32)> {
    super::tree::first_turns(rules)
        .into_iter()
        .filter(|m| answers.iter().any(|a| a.moves == *m))
        .map(|m| {
            let (lower, upper) = turn_bounds(answers, &m, root_upper, seeds, parity);
            (m, lower, upper)
        })
        .collect()
}

/// [`bounds`] of `answers` and of the root's upper bound `root_upper`.
fn capped(
    answers: impl Iterator<Item = (i32, bool)>,
    root_upper: i32,
    seeds: i32,
    parity: bool,
) -> (i32, i32) {
    let cap = std::iter::once((root_upper + 1, false));
    bounds(answers.chain(cap), seeds, parity)
}

/// Bounds from answers `(t, holds)` to "is the value at least t?", within `[-seeds, seeds]`.
fn bounds(answers: impl Iterator<Item = (i32, bool)>, seeds: i32, parity: bool) -> (i32, i32) {
    let mut lo = -seeds;
    let mut hi = seeds;
    for (t, holds) in answers {
        if holds {
            lo = lo.max(t);
        } else {
            hi = hi.min(t - 1);
        }
    }
    if parity {
        round_to_parity(lo, hi, seeds)
    } else {
        (lo, hi)
    }
}

/// `[lo, hi]` narrowed to the values with the parity of `seeds`: the margin of a finished
/// game has that parity, since every seed ends in a store. `±seeds` have it already, so a
/// side still at its extreme stays there.
fn round_to_parity(lo: i32, hi: i32, seeds: i32) -> (i32, i32) {
    let lo = if (lo ^ seeds) & 1 != 0 { lo + 1 } else { lo };
    let hi = if (hi ^ seeds) & 1 != 0 { hi - 1 } else { hi };
    (lo, hi)
}

/// Bounds on the value of each opening move (0-based house, lower, upper) that follow from
/// the units for the thresholds `thresholds`, none above the root's upper bound `root_upper`
/// (no move is worth more than the position), rounded to the parity of the seeds when
/// `parity` (as in [`root_bounds`]).
pub fn move_bounds(
    d: &mut Derivation,
    thresholds: &[i32],
    root_upper: i32,
    parity: bool,
) -> Result<Vec<(usize, i32, i32)>, SearchError> {
    let root = Board::start(&d.rules);
    let seeds = root.seeds() as i32;
    let mut out = Vec::new();
    for h in root.legal_houses() {
        let (mut lo, mut hi) = (-seeds, seeds.min(root_upper));
        for &t in thresholds {
            match d.opening_holds(h, t)? {
                Some(true) => lo = lo.max(t),
                Some(false) => hi = hi.min(t - 1),
                None => {}
            }
        }
        if parity {
            (lo, hi) = round_to_parity(lo, hi, seeds);
        }
        out.push((h, lo, hi));
    }
    Ok(out)
}

/// Narrows the opening moves' bounds `moves` (0-based house, lower, upper) by the first
/// turns' bounds `turns`: an opening is worth the best of the first turns that begin with it
/// (those of [`super::tree::first_turns`]), and a turn not in `turns` counts as anywhere from
/// `-seeds` to `root_upper`. So an opening with no extra turn takes its one turn's bounds, and
/// one with an extra turn is worth at least its best turn's lower bound.
pub fn narrow_by_turns(
    rules: &Rules,
    moves: &mut [(usize, i32, i32)],
    turns: &[(Vec<usize>, i32, i32)],
    root_upper: i32,
    seeds: i32,
) {
    let all = super::tree::first_turns(rules);
    for (h, lo, hi) in moves.iter_mut() {
        let (mut best_lo, mut best_hi) = (-seeds, -seeds);
        for m in all.iter().filter(|m| m[0] == *h) {
            let (a, b) = turns
                .iter()
                .find(|(t, _, _)| t == m)
                .map_or((-seeds, root_upper), |&(_, a, b)| (a, b));
            best_lo = best_lo.max(a);
            best_hi = best_hi.max(b);
        }
        *lo = (*lo).max(best_lo);
        *hi = (*hi).min(best_hi);
    }
}

/// Bounds on the value under the pie rule, `-min |M|` over the margins `M` of South's first
/// turns, from what is proven: `turns` bounds some first turns (0-based houses, lower, upper),
/// and a turn not in it counts as anywhere from `-seeds` to its opening move's upper bound in
/// `openings` (0-based house, lower, upper), or `root`'s. The start and each opening move are
/// worth their best first turn, so one turn's margin lies within each of their bounds, which
/// caps `min |M|` too. Exact (equal bounds) once every turn is exact, or as soon as one turn
/// is exactly 0.
pub fn pie_bounds(
    rules: &Rules,
    turns: &[(Vec<usize>, i32, i32)],
    openings: &[(usize, i32, i32)],
    root: (i32, i32),
) -> (i32, i32) {
    let seeds = Board::start(rules).seeds() as i32;
    let opening_upper = |h: usize| {
        openings
            .iter()
            .find(|o| o.0 == h)
            .map_or(root.1, |o| o.2.min(root.1))
    };
    // The least |M| is at least `least_low` and at most `least_high`.
    let (mut least_low, mut least_high) = (i32::MAX, i32::MAX);
    for m in super::tree::first_turns(rules) {
        let (lo, hi) = turns
            .iter()
            .find(|t| t.0 == m)
            .map_or((-seeds, opening_upper(m[0])), |t| (t.1, t.2));
        least_low = least_low.min(least_abs(lo, hi));
        least_high = least_high.min(lo.abs().max(hi.abs()));
    }
    let witnesses = std::iter::once(root).chain(openings.iter().map(|o| (o.1, o.2)));
    for (lo, hi) in witnesses {
        least_high = least_high.min(lo.abs().max(hi.abs()));
    }
    (-least_high, -least_low)
}

/// The least `|M|` for `M` in `[lo, hi]`.
pub fn least_abs(lo: i32, hi: i32) -> i32 {
    if lo > 0 {
        lo
    } else if hi < 0 {
        -hi
    } else {
        0
    }
}

/// What `check` found.
#[derive(Debug, Default)]
pub struct CheckReport {
    /// Unit records in the ledger (proven and open).
    pub units: usize,
    /// Proven units searched again.
    pub reproved: usize,
    /// Nodes of those searches (and of database boards searched while deriving).
    pub nodes: u64,
    /// Seconds spent.
    pub seconds: f64,
    /// South's value as the root records claim and the units confirm.
    pub lower: i32,
    /// The upper bound.
    pub upper: i32,
    /// Everything that is wrong, one line each; empty when the ledger holds.
    pub errors: Vec<String>,
    /// Whether `cancel` stopped the work: then only the units up to `last_line` were proven
    /// again (the root, opening and first-turn records were derived before).
    pub interrupted: bool,
    /// The ledger line of the last unit proven again.
    pub last_line: Option<usize>,
    /// Ledger lines, in order, of the proven units that the root, opening and first-turn
    /// records rest on.
    pub needed_lines: Vec<usize>,
    /// Chosen units not searched now because `previous` records them proven again.
    pub recorded: usize,
    /// Nodes of those earlier searches.
    pub recorded_nodes: u64,
    /// Their seconds.
    pub recorded_seconds: f64,
    /// Records in `previous` that match no proven unit of the ledger (not used).
    pub stale_records: usize,
}

/// Checks the ledger `contents`: every unit's position follows its path, the units do not
/// contradict each other, every root, opening and first-turn record follows from the units,
/// and the proven units chosen by `pick` (line number -> search it again) give the same answer
/// when searched again without a budget. With `needed`, only the units that the derivation of
/// the root, opening and first-turn records rests on are candidates for `pick` (those whose
/// facts settled a question on the way: proving exactly them again from nothing checks
/// everything the records depend on). A chosen unit that `previous` records as proven again
/// (same line, position, threshold and claim) is not searched: its recorded answer counts,
/// and a recorded disagreement is an error. Each unit searched now is passed to `record`
/// as soon as its search ends; when `resumed` names it (same line, position and threshold),
/// the nodes and seconds a stopped check spent on it count in its record too. `progress`
/// gets the unit's index among the chosen, their number, the unit under way with all the
/// work spent on it so far (what a stopped check saves for the next), and the search's
/// progress.
#[allow(clippy::too_many_arguments)]
pub fn check(
    search: &Search,
    contents: &Contents,
    pick: &dyn Fn(usize) -> bool,
    needed: bool,
    previous: &[Recheck],
    resumed: Option<&InFlight>,
    record: &mut dyn FnMut(&Recheck) -> Result<(), String>,
    progress: &(dyn Fn(usize, usize, &InFlight, &Progress) + Sync),
    cancel: &AtomicBool,
) -> Result<CheckReport, ProveError> {
    let start = Instant::now();
    let rules = contents.header.rules;
    let mut report = CheckReport::default();
    let mut units = Vec::new();
    let mut answers = Vec::new();
    let mut openings = Vec::new();
    let mut turns = Vec::new();
    for (line, r) in &contents.records {
        match r {
            Record::Unit(u) => units.push((*line, u)),
            Record::Root(q) => answers.push((*line, q.clone())),
            Record::Opening(q) => openings.push((*line, q.clone())),
            Record::Turn(q) => turns.push((*line, q.clone())),
        }
    }
    report.units = units.len();
    for (line, u) in &units {
        let mut p = kalah_solver::Position::start(&rules);
        let mut ok = true;
        for &h in &u.path {
            if p.board().is_over(&rules) || p.board().cells()[h] == 0 {
                ok = false;
                break;
            }
            p = p.play(&rules, h).0;
        }
        if !ok || p.board() != u.board {
            report.errors.push(format!(
                "line {line}: the moves {:?} do not lead to the position {}",
                u.path.iter().map(|h| h + 1).collect::<Vec<_>>(),
                u.board
            ));
        }
    }
    let unit_refs: Vec<&UnitRecord> = units.iter().map(|(_, u)| *u).collect();
    let mut d = match Derivation::new(search, &rules, &unit_refs) {
        Ok(d) => d,
        Err(e) => {
            report.errors.push(e);
            report.seconds = start.elapsed().as_secs_f64();
            return Ok(report);
        }
    };
    let root = Board::start(&rules);
    for (line, q) in &answers {
        let got = d.holds(&root, q.threshold)?;
        if got != Some(q.holds) {
            report.errors.push(format!(
                "line {line}: the ledger claims South's value is {} {:+}, but its units {}",
                if q.holds { "at least" } else { "below" },
                q.threshold,
                match got {
                    None => "do not show it".to_string(),
                    Some(_) => "show the opposite".to_string(),
                }
            ));
        }
    }
    for (line, q) in &openings {
        if root.cells()[q.house] == 0 {
            report.errors.push(format!(
                "line {line}: house {} is empty at the start",
                q.house + 1
            ));
            continue;
        }
        let got = d.opening_holds(q.house, q.threshold)?;
        if got != Some(q.holds) {
            report.errors.push(format!(
                "line {line}: the ledger claims South's value after opening move {} is {} {:+}, but its units {}",
                q.house + 1,
                if q.holds { "at least" } else { "below" },
                q.threshold,
                match got {
                    None => "do not show it".to_string(),
                    Some(_) => "show the opposite".to_string(),
                }
            ));
        }
    }
    for (line, q) in &turns {
        let moves: Vec<usize> = q.moves.iter().map(|h| h + 1).collect();
        match d.turn_holds(&q.moves, q.threshold) {
            Err(e) => report.errors.push(format!("line {line}: first turn {moves:?}: {e}")),
            Ok(got) if got != Some(q.holds) => report.errors.push(format!(
                "line {line}: the ledger claims South's margin after the first turn {moves:?} is {} {:+}, but its units {}",
                if q.holds { "at least" } else { "below" },
                q.threshold,
                match got {
                    None => "do not show it".to_string(),
                    Some(_) => "show the opposite".to_string(),
                }
            )),
            Ok(_) => {}
        }
    }
    report.nodes += d.nodes;
    let all: Vec<RootRecord> = answers.iter().map(|a| a.1.clone()).collect();
    (report.lower, report.upper) =
        root_bounds(&all, root.seeds() as i32, search.values_have_parity());
    if report.lower > report.upper {
        report
            .errors
            .push("the root records contradict each other".to_string());
    }
    let used = d.used_units().clone();
    report.needed_lines = units
        .iter()
        .enumerate()
        .filter(|(i, _)| used.contains(i))
        .map(|(_, (line, _))| *line)
        .collect();
    let chosen: Vec<&(usize, &UnitRecord)> = units
        .iter()
        .enumerate()
        .filter(|(i, (line, u))| {
            u.verdict.truth().is_some() && pick(*line) && (!needed || used.contains(i))
        })
        .map(|(_, x)| x)
        .collect();
    // The records that still match their ledger line (the last one of a line counts).
    let (earlier, stale) = recheck::matching(previous, &units);
    report.stale_records = stale;
    let disagree = |line: usize, u: &UnitRecord, claimed: bool, found: bool| {
        format!(
            "line {line}: the ledger says the value of {} is {} {:+}, the search says {}",
            u.board,
            if claimed { "at least" } else { "below" },
            u.threshold,
            if found {
                "it is at least"
            } else {
                "it is below"
            }
        )
    };
    for (k, (line, u)) in chosen.iter().enumerate() {
        let claimed = u.verdict.truth().unwrap();
        if let Some(r) = earlier.get(line) {
            report.recorded += 1;
            report.recorded_nodes += r.nodes;
            report.recorded_seconds += r.seconds;
            if r.found != claimed {
                report
                    .errors
                    .push(disagree(*line, u, claimed, r.found) + " (as recorded)");
            }
            continue;
        }
        let started = Instant::now();
        // Work a stopped check spent on this unit counts too.
        let (before_nodes, before_seconds) = match resumed {
            Some(r) if r.line == *line && r.board == u.board && r.threshold == u.threshold => {
                (r.nodes, r.seconds)
            }
            _ => (0, 0.0),
        };
        let label = format!("line {line}: {} at least {:+}?", u.board, u.threshold);
        let (found, nodes) = match search.decide(
            &u.board,
            u.threshold,
            None,
            &label,
            &|p| {
                let unit = InFlight {
                    line: *line,
                    board: u.board,
                    threshold: u.threshold,
                    nodes: before_nodes + p.nodes,
                    seconds: before_seconds + p.seconds,
                };
                progress(k, chosen.len(), &unit, p)
            },
            cancel,
        ) {
            Ok(r) => r,
            Err(SearchError::Interrupted { nodes, .. }) => {
                // What was proven again so far is reported.
                report.nodes += nodes;
                report.interrupted = true;
                report.seconds = start.elapsed().as_secs_f64();
                return Ok(report);
            }
            Err(e) => return Err(e.into()),
        };
        report.nodes += nodes;
        report.reproved += 1;
        report.last_line = Some(*line);
        let Some(found) = found else {
            // An unbudgeted search decides; were it ever not to, nothing is recorded.
            report.errors.push(format!(
                "line {line}: the search of {} gave no answer",
                u.board
            ));
            continue;
        };
        record(&Recheck {
            line: *line,
            board: u.board,
            threshold: u.threshold,
            claimed,
            found,
            nodes: nodes + before_nodes,
            seconds: started.elapsed().as_secs_f64() + before_seconds,
        })
        .map_err(ProveError::Ledger)?;
        if found != claimed {
            report.errors.push(disagree(*line, u, claimed, found));
        }
    }
    report.seconds = start.elapsed().as_secs_f64();
    Ok(report)
}

/// The ledger lines of the proven units ("at least" or "below") in `contents`.
pub fn proven_lines(contents: &Contents) -> Vec<usize> {
    contents
        .records
        .iter()
        .filter(|(_, r)| matches!(r, Record::Unit(u) if u.verdict != Verdict::Open))
        .map(|(l, _)| *l)
        .collect()
}

/// `n` of `lines` chosen at random with `seed` (the same every time for the same seed): all of
/// them when `n` is not smaller.
pub fn sample(lines: &[usize], n: usize, seed: u64) -> HashSet<usize> {
    if n >= lines.len() {
        return lines.iter().copied().collect();
    }
    // A partial Fisher-Yates shuffle driven by splitmix64.
    let mut s = seed;
    let mut next = || {
        s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut v = lines.to_vec();
    for i in 0..n {
        let j = i + (next() % (v.len() - i) as u64) as usize;
        v.swap(i, j);
    }
    v.truncate(n);
    v.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 6x6 Kalah: house 1 of the start ends in the store (so S1 is followed by a second
    /// move), the others do not.
    #[test]
    fn openings_narrow_to_their_first_turns() {
        let rules = Rules::standard(6, 6);
        let seeds = 72;
        let wide = |h| (h, -seeds, 4);
        let mut moves: Vec<_> = (0..6).map(wide).collect();
        let turns = vec![
            (vec![0, 1], 2, 2),
            (vec![0, 2], 4, 4),
            (vec![2], 0, 0),
            (vec![3], -10, 2),
        ];
        narrow_by_turns(&rules, &mut moves, &turns, 4, seeds);
        // Opening 1 is worth its best turn, S1 S3, at least; the turns not given could be
        // worth up to the root's +4.
        assert_eq!(moves[0], (0, 4, 4));
        // Opening 2 has one turn, not given: unchanged.
        assert_eq!(moves[1], (1, -seeds, 4));
        // Openings 3 and 4 are their one turn.
        assert_eq!(moves[2], (2, 0, 0));
        assert_eq!(moves[3], (3, -10, 2));
        // A bound already narrower than its turn's stays.
        let mut moves = vec![(3, 0, 4)];
        narrow_by_turns(&rules, &mut moves, &turns, 4, seeds);
        assert_eq!(moves[0], (3, 0, 2));
    }
}
