//! The check of one ledger: every unit's path replayed, and every root, opening and turn
//! record derived again from the proven units and the game's end alone.
//!
//! A question "is the value of `board` (for the player to move) at least `t`?" is
//! - settled by a fact: a unit with verdict `at-least` at a threshold `t' >= t`, or `below`
//!   at a threshold `t' <= t`; where every seed ends in a store (any leftover rule but
//!   `discard`), the value of a board has the parity of the seeds on it, so `at-least` at
//!   `t'` also settles `t' + 1` when `t'` is not such a value, and `below` at `t'` also
//!   settles `t' - 1` when `t'` is one;
//! - settled by the game's end: the board's final value is at least `t` or not;
//! - for a split position (the start, and every board of a unit with verdict `open`: the
//!   prover split it into its moves), settled by its moves: it holds if one move's question
//!   holds, fails if every move's fails. A move whose last seed lands in the mover's store
//!   leaves the same player to move, with the question "at least `t - gain`?"; any other
//!   move passes the turn, and the parent's question holds exactly when the opponent's
//!   question "at least `gain - t + 1`?" fails (`gain` counts the seeds the move put in the
//!   mover's store, captures included);
//! - otherwise not settled here. A board of at most `db_seeds` seeds (the largest database
//!   a unit's prover used) was possibly settled by the prover's endgame database, which this
//!   checker does not have: a *database leaf*. A larger one is a *gap*: nothing in the ledger
//!   settles it.
//!
//! A record is confirmed only when its answer follows in this way, database leaves counting
//! as unknown.

use crate::game::{Board, Rules};
use crate::ledger::{Ledger, Record, Verdict};
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::PathBuf;

/// A question about a position after some moves from the start, as the derivation asks it.
#[derive(Clone, Debug)]
struct Question {
    board: Board,
    threshold: i32,
    /// The turn passed: the answer to the original question is the negation.
    flip: bool,
}

/// What the units say about one board: the largest threshold proven reached and the smallest
/// proven missed, each with the line of its unit.
#[derive(Clone, Copy, Debug, Default)]
struct Known {
    reached: Option<(i32, usize)>,
    missed: Option<(i32, usize)>,
}

impl Known {
    /// The largest threshold proven reached and the smallest proven missed on `board`, each
    /// moved to the next threshold it also settles where values have the parity of the
    /// seeds (`parity`).
    fn settled(&self, board: &Board, parity: bool) -> (Option<i32>, Option<i32>) {
        let can_be = |t: i32| (t - board.seeds() as i32) % 2 == 0;
        let reached = self.reached.map(|(r, _)| match parity && !can_be(r) {
            true => r + 1,
            false => r,
        });
        let missed = self.missed.map(|(m, _)| match parity && can_be(m) {
            true => m - 1,
            false => m,
        });
        (reached, missed)
    }
}

/// Derives answers from the facts of a ledger's units.
pub struct Deriver {
    rules: Rules,
    facts: HashMap<Board, Known>,
    split: HashSet<Board>,
    db_seeds: u32,
    memo: HashMap<(Board, i32), Option<bool>>,
    /// Whether leaves met are counted (while the records are checked).
    counting: bool,
    /// Database leaves met (board, threshold).
    pub db_leaves: HashSet<(Board, i32)>,
    /// Gaps met (board, threshold).
    pub gaps: HashSet<(Board, i32)>,
}

fn signed(t: i32) -> String {
    format!("{t:+}")
}

impl Deriver {
    /// The facts and split positions of the units of `ledger`; contradictions between
    /// units, and facts that contradict a finished game, are pushed onto `errors`.
    pub fn new(ledger: &Ledger, errors: &mut Vec<String>) -> Deriver {
        let rules = ledger.rules;
        let mut facts: HashMap<Board, Known> = HashMap::new();
        let mut split = HashSet::new();
        split.insert(Board::start(&rules));
        let mut db_seeds = 0;
        for (line, r) in &ledger.records {
            let Record::Unit(u) = r else { continue };
            db_seeds = db_seeds.max(u.db_seeds);
            let holds = match u.verdict {
                Verdict::Open => {
                    split.insert(u.board.clone());
                    continue;
                }
                Verdict::AtLeast => true,
                Verdict::Below => false,
            };
            if let Some(v) = u.board.final_value(&rules) {
                if (v >= u.threshold) != holds {
                    errors.push(format!(
                        "line {line}: the game is over on {} (value {}), but the unit says it is {} {}",
                        u.board,
                        signed(v),
                        if holds { "at least" } else { "below" },
                        signed(u.threshold)
                    ));
                }
            }
            let k = facts.entry(u.board.clone()).or_default();
            if holds {
                if k.reached.map_or(true, |(t, _)| u.threshold > t) {
                    k.reached = Some((u.threshold, *line));
                }
            } else if k.missed.map_or(true, |(t, _)| u.threshold < t) {
                k.missed = Some((u.threshold, *line));
            }
            let settled = k.settled(&u.board, rules.values_have_parity());
            if let (Some((_, la)), Some((_, lb)), (Some(a), Some(b))) =
                (k.reached, k.missed, settled)
            {
                if a >= b && (la == *line || lb == *line) {
                    errors.push(format!(
                        "lines {la} and {lb} contradict each other: {} is proven at least {} and below {}",
                        u.board,
                        signed(a),
                        signed(b)
                    ));
                }
            }
        }
        Deriver {
            rules,
            facts,
            split,
            db_seeds,
            memo: HashMap::new(),
            counting: true,
            db_leaves: HashSet::new(),
            gaps: HashSet::new(),
        }
    }

    /// The largest database level any unit used.
    pub fn db_seeds(&self) -> u32 {
        self.db_seeds
    }

    /// Whether "the value of `board` is at least `t`" follows: `Some(answer)`, or `None`.
    pub fn holds(&mut self, board: &Board, t: i32) -> Option<bool> {
        if let Some(k) = self.facts.get(board) {
            let (reached, missed) = k.settled(board, self.rules.values_have_parity());
            if reached.is_some_and(|r| t <= r) {
                return Some(true);
            }
            if missed.is_some_and(|m| t >= m) {
                return Some(false);
            }
        }
        if let Some(v) = board.final_value(&self.rules) {
            return Some(v >= t);
        }
        let key = (board.clone(), t);
        if let Some(&r) = self.memo.get(&key) {
            return r;
        }
        let r = if self.split.contains(board) {
            let mut every_move_fails = true;
            let mut r = None;
            for q in self.children(board, t) {
                match self.holds(&q.board, q.threshold) {
                    Some(h) if h != q.flip => {
                        r = Some(true);
                        break;
                    }
                    Some(_) => {}
                    None => every_move_fails = false,
                }
            }
            if r.is_none() && every_move_fails {
                Some(false)
            } else {
                r
            }
        } else {
            if self.counting {
                if board.seeds() <= self.db_seeds {
                    self.db_leaves.insert(key.clone());
                } else {
                    self.gaps.insert(key.clone());
                }
            }
            None
        };
        self.memo.insert(key, r);
        r
    }

    /// The question after each move of `board` that "at least `t`?" is made of.
    fn children(&self, board: &Board, t: i32) -> Vec<Question> {
        board
            .moves(&self.rules)
            .into_iter()
            .map(|h| {
                let mv = board.play(&self.rules, h).expect("a legal move");
                if mv.extra_turn {
                    Question {
                        board: mv.next,
                        threshold: t - mv.gain,
                        flip: false,
                    }
                } else {
                    Question {
                        board: mv.next,
                        threshold: mv.gain - t + 1,
                        flip: true,
                    }
                }
            })
            .collect()
    }

    /// The question that "is South's value (final margin) after the moves `moves` from the
    /// start at least `t`?" comes to; with `first_turn`, `moves` must be a first turn (every
    /// move but the last ends in South's store, the last passes the turn or ends the game).
    fn after(&self, moves: &[usize], t: i32, first_turn: bool) -> Result<Question, String> {
        let mut q = Question {
            board: Board::start(&self.rules),
            threshold: t,
            flip: false,
        };
        for (i, &h) in moves.iter().enumerate() {
            if q.flip {
                return Err(format!("move {} is not South's", i + 1));
            }
            let mv = q
                .board
                .play(&self.rules, h)
                .map_err(|e| format!("move {} (house {h}): {e}", i + 1))?;
            let over = mv.next.final_value(&self.rules).is_some();
            let last = i + 1 == moves.len();
            if first_turn && !last && (!mv.extra_turn || over) {
                return Err(format!(
                    "the first turn ends at move {}, before its last",
                    i + 1
                ));
            }
            if first_turn && last && mv.extra_turn && !over {
                return Err("the first turn's last move leaves South to move again".into());
            }
            q = if mv.extra_turn {
                Question {
                    board: mv.next,
                    threshold: q.threshold - mv.gain,
                    flip: false,
                }
            } else {
                Question {
                    board: mv.next,
                    threshold: mv.gain - q.threshold + 1,
                    flip: true,
                }
            };
        }
        Ok(q)
    }

    /// Whether "South's value after `moves` (a first turn when `first_turn`) is at least `t`"
    /// follows; an error when the moves cannot be played.
    pub fn holds_after(
        &mut self,
        moves: &[usize],
        t: i32,
        first_turn: bool,
    ) -> Result<Option<bool>, String> {
        let q = self.after(moves, t, first_turn)?;
        Ok(self.holds(&q.board, q.threshold).map(|h| h != q.flip))
    }

    /// The leaves that leave "at least `t`" after `moves` undecided: database leaves and
    /// gaps, at most `limit`.
    fn blockers(&mut self, moves: &[usize], t: i32, limit: usize) -> Vec<(Board, i32)> {
        let Ok(q) = self.after(moves, t, false) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        self.walk(&q.board, q.threshold, limit, &mut out, &mut seen);
        out
    }

    fn walk(
        &mut self,
        board: &Board,
        t: i32,
        limit: usize,
        out: &mut Vec<(Board, i32)>,
        seen: &mut HashSet<(Board, i32)>,
    ) {
        if out.len() >= limit || self.holds(board, t).is_some() || !seen.insert((board.clone(), t))
        {
            return;
        }
        if self.split.contains(board) {
            for q in self.children(board, t) {
                self.walk(&q.board, q.threshold, limit, out, seen);
            }
        } else {
            out.push((board.clone(), t));
        }
    }

    /// The bounds on South's value after `moves` that follow (every threshold tried), the
    /// upper one at most `cap`, and the same rounded to the parity of the seeds where values
    /// have it (every seed ends in a store, so South's final margin has the parity of the
    /// seeds).
    fn bounds(&mut self, moves: &[usize], first_turn: bool, cap: i32) -> Bounds {
        let s = (2 * self.rules.houses as u32 * self.rules.seeds) as i32;
        let (mut lo, mut hi) = (-s, s.min(cap));
        for t in -s + 1..=s {
            match self.holds_after(moves, t, first_turn) {
                Ok(Some(true)) => lo = lo.max(t),
                Ok(Some(false)) => hi = hi.min(t - 1),
                _ => {}
            }
        }
        let raw = (lo, hi);
        if self.rules.values_have_parity() {
            if (lo - s) % 2 != 0 {
                lo += 1;
            }
            if (hi - s) % 2 != 0 {
                hi -= 1;
            }
        }
        Bounds {
            lower: lo,
            upper: hi,
            raw,
        }
    }
}

/// Bounds on a value that follow from the units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// The lower bound, rounded to the parity of the seeds where values have it.
    pub lower: i32,
    /// The upper bound, rounded likewise.
    pub upper: i32,
    /// The bounds before rounding: the largest threshold shown reached, one less than the
    /// smallest shown missed.
    pub raw: (i32, i32),
}

/// What the check of one ledger found.
#[derive(Debug)]
pub struct Report {
    /// The ledger file.
    pub file: PathBuf,
    /// Its rules.
    pub rules: Rules,
    /// Lines in the file.
    pub lines: usize,
    /// A last line cut short and left out: its number and bytes.
    pub torn: Option<(usize, usize)>,
    /// Unit records: proven at least, proven below, open.
    pub at_least: usize,
    /// See `at_least`.
    pub below: usize,
    /// See `at_least`.
    pub open: usize,
    /// Nodes the units searched, as they say.
    pub nodes: u64,
    /// The largest database level a unit used.
    pub db_seeds: u32,
    /// Root, opening and turn records.
    pub records: usize,
    /// Of those, confirmed.
    pub confirmed: usize,
    /// Root records, opening records, turn records.
    pub kinds: (usize, usize, usize),
    /// Bounds on South's value that follow from the units.
    pub root: Bounds,
    /// The same for each opening move with records (1-based house).
    pub openings: Vec<(usize, Bounds)>,
    /// The same for each first turn with records (1-based houses).
    pub turns: Vec<(Vec<usize>, Bounds)>,
    /// Leaves met while deriving the records that neither a unit nor the game's end settles:
    /// database leaves (at most `db_seeds` seeds) and gaps (more). Most are moves the
    /// derivation tried before a sibling settled the question.
    pub met: (usize, usize),
    /// Of those, the ones that leave some record undecided: database leaves and gaps.
    pub needed: (usize, usize),
    /// Everything wrong, one message each.
    pub errors: Vec<String>,
}

impl Report {
    /// Whether every line is sound and every record confirmed.
    pub fn ok(&self) -> bool {
        self.errors.is_empty() && self.confirmed == self.records
    }

    /// Units in the ledger.
    pub fn units(&self) -> usize {
        self.at_least + self.below + self.open
    }
}

/// Houses (1-based) as the ledger writes them: "3 1 6".
pub(crate) fn moves_text(moves: &[usize]) -> String {
    moves
        .iter()
        .map(|h| h.to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Checks a ledger read by [`crate::ledger::read`].
pub fn check(ledger: &Ledger) -> Report {
    let rules = ledger.rules;
    let mut errors = ledger.errors.clone();
    let (mut at_least, mut below, mut open, mut nodes) = (0, 0, 0, 0u64);
    // 1. Every unit's path, replayed from the start, leads to its board.
    for (line, r) in &ledger.records {
        let Record::Unit(u) = r else { continue };
        match u.verdict {
            Verdict::AtLeast => at_least += 1,
            Verdict::Below => below += 1,
            Verdict::Open => open += 1,
        }
        nodes += u.nodes;
        let mut board = Board::start(&rules);
        let mut failed = None;
        for (i, &h) in u.path.iter().enumerate() {
            match board.play(&rules, h) {
                Ok(mv) => board = mv.next,
                Err(e) => {
                    failed = Some(format!("move {} (house {h}): {e}", i + 1));
                    break;
                }
            }
        }
        let path = format!("the path \"{}\"", moves_text(&u.path));
        match failed {
            Some(e) => errors.push(format!("line {line}: {path} cannot be played: {e}")),
            None if board != u.board => errors.push(format!(
                "line {line}: {path} leads to {board}, not to the unit's board {}",
                u.board
            )),
            None => {}
        }
    }
    // 2. Facts and split positions; every record derived again.
    let mut d = Deriver::new(ledger, &mut errors);
    let (mut records, mut confirmed) = (0, 0);
    let mut kinds = (0, 0, 0);
    let mut opening_houses = Vec::new();
    let mut turn_moves: Vec<Vec<usize>> = Vec::new();
    let mut needed_db = HashSet::new();
    let mut needed_gaps = HashSet::new();
    for (line, r) in &ledger.records {
        let (moves, t, holds, first_turn, what) = match r {
            Record::Unit(_) => continue,
            Record::Root { threshold, holds } => {
                kinds.0 += 1;
                (
                    Vec::new(),
                    *threshold,
                    *holds,
                    false,
                    "South's value".to_string(),
                )
            }
            Record::Opening {
                house,
                threshold,
                holds,
            } => {
                kinds.1 += 1;
                if !opening_houses.contains(house) {
                    opening_houses.push(*house);
                }
                (
                    vec![*house],
                    *threshold,
                    *holds,
                    false,
                    format!("South's value after opening move {house}"),
                )
            }
            Record::Turn {
                moves,
                threshold,
                holds,
            } => {
                kinds.2 += 1;
                if !turn_moves.contains(moves) {
                    turn_moves.push(moves.clone());
                }
                (
                    moves.clone(),
                    *threshold,
                    *holds,
                    true,
                    format!(
                        "South's margin after the first turn \"{}\"",
                        moves_text(moves)
                    ),
                )
            }
        };
        records += 1;
        let claim = format!(
            "line {line}: the ledger claims {what} is {} {}",
            if holds { "at least" } else { "below" },
            signed(t)
        );
        match d.holds_after(&moves, t, first_turn) {
            Ok(Some(h)) if h == holds => confirmed += 1,
            Ok(Some(_)) => errors.push(format!("{claim}, but its units show the opposite")),
            Ok(None) => {
                let blockers = d.blockers(&moves, t, usize::MAX);
                for (b, bt) in &blockers {
                    if b.seeds() <= d.db_seeds() {
                        needed_db.insert((b.clone(), *bt));
                    } else {
                        needed_gaps.insert((b.clone(), *bt));
                    }
                }
                let mut why = String::new();
                if blockers.len() > 4 {
                    let _ = write!(why, "; {} leaves unsettled, among them", blockers.len());
                }
                for (b, bt) in blockers.iter().take(4) {
                    let kind = if b.seeds() <= d.db_seeds() {
                        format!(
                            "a board of {} seeds, within the prover's {}-seed database, which this checker does not have",
                            b.seeds(),
                            d.db_seeds()
                        )
                    } else {
                        "settled by no unit".to_string()
                    };
                    let _ = write!(
                        why,
                        "; unsettled: \"{b}\" at least {}? ({kind})",
                        signed(*bt)
                    );
                }
                errors.push(format!(
                    "{claim}, but it does not follow from its units{why}"
                ));
            }
            Err(e) => errors.push(format!("{claim}, but {e}")),
        }
    }
    let met = (d.db_leaves.len(), d.gaps.len());
    let needed = (needed_db.len(), needed_gaps.len());
    // 3. Bounds that follow from the units (no longer counting leaves).
    d.counting = false;
    let root = d.bounds(&[], false, i32::MAX);
    opening_houses.sort_unstable();
    let mut openings = Vec::new();
    for &h in &opening_houses {
        if Board::start(&rules).mover[h - 1] > 0 {
            openings.push((h, d.bounds(&[h], false, root.upper)));
        }
    }
    turn_moves.sort();
    let mut turns = Vec::new();
    for m in &turn_moves {
        if d.after(m, 0, true).is_ok() {
            turns.push((m.clone(), d.bounds(m, true, root.upper)));
        }
    }
    if root.lower > root.upper {
        errors.push(format!(
            "the units contradict each other about the start: South's value at least {} and at most {}",
            signed(root.lower),
            signed(root.upper)
        ));
    }
    Report {
        file: ledger.file.clone(),
        rules,
        lines: ledger.lines,
        torn: ledger.torn,
        at_least,
        below,
        open,
        nodes,
        db_seeds: d.db_seeds(),
        records,
        confirmed,
        kinds,
        root,
        openings,
        turns,
        met,
        needed,
        errors,
    }
}
