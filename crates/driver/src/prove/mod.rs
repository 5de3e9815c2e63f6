//! Proofs made of units: the coordinator keeps the top of the proof tree, proves its frontier
//! positions as units (a position, a threshold and a node budget) with the search, and keeps
//! every unit's result in an append-only [`ledger`].
//!
//! A root question ("is South's value at least `t`?") is a [`tree::Tree`] of questions, one
//! per position. A leaf's unit runs with its node budget; proven, it settles the leaf; out of
//! budget, the leaf is split into one question per move (or, deeper than the split limit,
//! retried with four times the budget). The next leaf to prove is the most-proving one by the
//! proof and disproof numbers, so no unit is proven that the root does not need. The answers
//! of the root questions give the value (`exact`) or the result (`sign`), as MTD(f) would.
//!
//! Everything the search proved is in the ledger; a rerun reads it back and goes on: a proven
//! unit is never searched again, and a unit that ran out of budget is split again at once.
//! Units are handed to a [`Runner`]: the search in this process ([`LocalRunner`]), or other
//! processes (the MPI runner of the `kalah` binary).

pub mod derive;
pub mod ledger;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod recheck;
pub mod status;
pub mod tree;

use crate::search::{Progress, Search, SearchError};
use kalah_solver::{Board, Rules};
use ledger::{Header, Ledger, OpeningRecord, Record, RootRecord, TurnRecord, UnitRecord, Verdict};
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Instant;
use tree::{Facts, Question, Start, Tree};

/// Each first turn (0-based houses) with the bounds proven on South's margin after it.
pub type TurnBounds = Vec<(Vec<usize>, i32, i32)>;

/// What a sequence of South's moves from the start is: an opening move (South may move on)
/// or a whole first turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Along {
    Opening,
    Turn,
}

/// What to prove about the start position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProveGoal {
    /// The exact value, starting from a guess.
    Exact {
        /// The first threshold asked.
        guess: i32,
    },
    /// Whether the first player wins, draws or loses.
    Sign,
}

/// How the coordinator works.
#[derive(Clone, Debug)]
pub struct ProveConfig {
    /// The ledger's directory.
    pub dir: PathBuf,
    /// The node budget of a new unit.
    pub unit_nodes: u64,
    /// Units at most this many plies below the root are split when they run out of budget;
    /// deeper ones are retried with four times the budget.
    pub split_depth: usize,
    /// Leaves fewer than this many plies below the root are split into their moves without a
    /// unit being searched for them (near the root of a big proof nearly every unit runs out
    /// of budget, and its nodes serve only to fill the table for the units below).
    pub split_above: usize,
    /// Depth of the shallow search that estimates a new leaf.
    pub guess_depth: u32,
    /// Depth of the heuristic search that picks the first threshold asked of each opening
    /// move and first turn (0: start from the root's value, as MTD(f) from the parent does).
    /// A bad estimate costs questions, never a wrong answer. A move or turn with answers in
    /// the ledger already goes on from its last one instead.
    pub estimate_depth: u32,
    /// The name of this process in the ledger.
    pub worker: String,
}

/// A unit to prove.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    /// Identifies the job for its result.
    pub id: u64,
    /// The position, mover first.
    pub board: Board,
    /// The threshold.
    pub threshold: i32,
    /// The node budget.
    pub budget: u64,
    /// A label for progress displays (the moves from the root).
    pub label: String,
}

/// What a runner found for a job.
#[derive(Clone, Debug, PartialEq)]
pub struct Done {
    /// The job's id.
    pub id: u64,
    /// `Some(holds)` when proven, `None` when the budget ran out.
    pub truth: Option<bool>,
    /// Nodes searched.
    pub nodes: u64,
    /// Seconds spent.
    pub seconds: f64,
    /// The largest database level used.
    pub db_seeds: u32,
    /// Who proved it.
    pub worker: String,
}

/// Proves units for the coordinator.
pub trait Runner {
    /// How many jobs may be under way at once.
    fn slots(&self) -> usize;
    /// Starts a job.
    fn start(&mut self, job: Job) -> Result<(), ProveError>;
    /// Waits for a job started earlier to finish.
    fn wait(
        &mut self,
        progress: &(dyn Fn(&Progress) + Sync),
        cancel: &AtomicBool,
    ) -> Result<Done, ProveError>;
}

/// A failed proof run.
#[derive(Debug)]
pub enum ProveError {
    /// The search failed or was interrupted.
    Search(SearchError),
    /// The ledger could not be read or written, or it is inconsistent.
    Ledger(String),
    /// A worker failed.
    Worker(String),
}

impl fmt::Display for ProveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProveError::Search(e) => write!(f, "{e}"),
            ProveError::Ledger(e) => write!(f, "ledger: {e}"),
            ProveError::Worker(e) => write!(f, "worker: {e}"),
        }
    }
}

impl std::error::Error for ProveError {}

impl From<SearchError> for ProveError {
    fn from(e: SearchError) -> Self {
        ProveError::Search(e)
    }
}

/// The search of this process proving one unit at a time, with all its threads.
pub struct LocalRunner<'a> {
    search: &'a Search,
    db_seeds: u32,
    worker: String,
    job: Option<Job>,
}

impl<'a> LocalRunner<'a> {
    /// A runner over `search` (whose database holds levels up to `db_seeds`).
    pub fn new(search: &'a Search, db_seeds: u32, worker: String) -> LocalRunner<'a> {
        LocalRunner {
            search,
            db_seeds,
            worker,
            job: None,
        }
    }
}

/// Proves one job with `search`.
pub fn run_job(
    search: &Search,
    job: &Job,
    db_seeds: u32,
    worker: &str,
    progress: &(dyn Fn(&Progress) + Sync),
    cancel: &AtomicBool,
) -> Result<Done, SearchError> {
    let start = Instant::now();
    let budget = (job.budget > 0).then_some(job.budget);
    let (truth, nodes) = search.decide(
        &job.board,
        job.threshold,
        budget,
        &job.label,
        progress,
        cancel,
    )?;
    Ok(Done {
        id: job.id,
        truth,
        nodes,
        seconds: start.elapsed().as_secs_f64(),
        db_seeds,
        worker: worker.to_string(),
    })
}

impl Runner for LocalRunner<'_> {
    fn slots(&self) -> usize {
        1
    }

    fn start(&mut self, job: Job) -> Result<(), ProveError> {
        self.job = Some(job);
        Ok(())
    }

    fn wait(
        &mut self,
        progress: &(dyn Fn(&Progress) + Sync),
        cancel: &AtomicBool,
    ) -> Result<Done, ProveError> {
        let job = self
            .job
            .take()
            .ok_or_else(|| ProveError::Worker("no job under way".into()))?;
        Ok(run_job(
            self.search,
            &job,
            self.db_seeds,
            &self.worker,
            progress,
            cancel,
        )?)
    }
}

/// Where a proof run stands, for progress displays.
#[derive(Clone, Debug, Default)]
pub struct ProveProgress {
    /// The question under way: "is South's value at least this?" (after the opening move
    /// `opening` or the first turn `turn`, when there is one).
    pub threshold: i32,
    /// The opening move (0-based house) whose value is being proven, if any (see
    /// [`Coordinator::run_openings`]).
    pub opening: Option<usize>,
    /// The first turn (0-based houses) whose value is being proven, if any (see
    /// [`Coordinator::run_turns`]).
    pub turn: Option<Vec<usize>>,
    /// What is proven of South's value (after that opening move or first turn):
    /// `[lower, upper]`.
    pub lower: i32,
    /// The upper bound.
    pub upper: i32,
    /// The proof number of the question asked (is South's value at least `threshold`?): the
    /// units still needed to show that it holds, estimated.
    pub phi: u64,
    /// Its disproof number: the units still needed to show that it fails.
    pub delta: u64,
    /// Units proven in this run.
    pub units_proven: u64,
    /// Units that ran out of budget in this run.
    pub units_open: u64,
    /// Leaves waiting and in flight.
    pub leaves: (usize, usize),
    /// Nodes in this run (units finished).
    pub nodes: u64,
    /// Seconds of this run.
    pub seconds: f64,
    /// The unit under way and its search's progress.
    pub unit: Option<(String, Progress)>,
    /// The heuristic estimate of South's value after that opening move or first turn that
    /// chose its first threshold, if one was made (see [`ProveConfig::estimate_depth`]).
    pub estimate: Option<i32>,
}

/// The result of a proof run.
#[derive(Clone, Debug, PartialEq)]
pub struct ProveResult {
    /// South's value is at least this...
    pub lower: i32,
    /// ...and at most this.
    pub upper: i32,
    /// Nodes searched in this run.
    pub nodes: u64,
    /// Units proven in this run.
    pub units: u64,
    /// Root questions answered in this run (the others came from the ledger).
    pub new_answers: usize,
}

/// The coordinator of a proof: the ledger, the facts it holds and the rules.
pub struct Coordinator<'a> {
    search: &'a Search,
    rules: Rules,
    config: ProveConfig,
    ledger: Ledger,
    facts: Facts,
    /// The largest budget each (board, threshold) ran out of.
    open: HashMap<(Board, i32), u64>,
    /// Answers of root questions.
    answers: Vec<RootRecord>,
    /// Answers of questions about opening moves.
    openings: Vec<OpeningRecord>,
    /// Answers of questions about first turns.
    turns: Vec<TurnRecord>,
    progress: ProveProgress,
    next_id: u64,
    /// Jobs under way.
    flights: HashMap<u64, Flight>,
    /// The number of the root question under way.
    generation: u64,
    /// The label of the job started last.
    label: String,
    /// The sequence and threshold (South's) that the last run was asking when it stopped,
    /// from its `status.json`: a hint to ask it again first, never a fact.
    interrupted: Option<(Along, Vec<usize>, i32)>,
    /// The heuristic estimates made so far (see [`Coordinator::estimate_sequence`]).
    estimates: HashMap<(Along, Vec<usize>), i32>,
}

impl<'a> Coordinator<'a> {
    /// Opens (or creates) the ledger of `rules` in `config.dir` and reads what it holds.
    /// `search` answers the coordinator's own questions: database values and estimates.
    pub fn open(
        search: &'a Search,
        rules: &Rules,
        config: ProveConfig,
    ) -> Result<(Coordinator<'a>, usize), ProveError> {
        let header = Header { rules: *rules };
        // Read before this run writes its own snapshot.
        let interrupted = interrupted_question(&config.dir, rules);
        let (ledger, contents) = Ledger::open(&config.dir, &header).map_err(ProveError::Ledger)?;
        let mut c = Coordinator {
            search,
            rules: *rules,
            config,
            ledger,
            facts: Facts::new(search.values_have_parity()),
            open: HashMap::new(),
            answers: Vec::new(),
            openings: Vec::new(),
            turns: Vec::new(),
            progress: ProveProgress::default(),
            next_id: 0,
            flights: HashMap::new(),
            generation: 0,
            label: String::new(),
            interrupted,
            estimates: HashMap::new(),
        };
        for (line, r) in contents.records {
            match r {
                Record::Unit(u) => c
                    .learn(&u)
                    .map_err(|e| ProveError::Ledger(format!("line {line}: {e}")))?,
                Record::Root(q) => c.answers.push(q),
                Record::Opening(q) => c.openings.push(q),
                Record::Turn(q) => c.turns.push(q),
            }
        }
        Ok((c, contents.torn_bytes))
    }

    fn learn(&mut self, u: &UnitRecord) -> Result<(), String> {
        match u.verdict.truth() {
            Some(holds) => self.facts.add(&u.board, u.threshold, holds),
            None => {
                let e = self
                    .open
                    .entry(self.key(&u.board, u.threshold))
                    .or_insert(0);
                *e = (*e).max(u.budget);
                Ok(())
            }
        }
    }

    /// The key of "is the value of `board` at least `t`?" among the units that ran out:
    /// the same for equivalent thresholds (see [`tree::same_question`]).
    fn key(&self, board: &Board, t: i32) -> (Board, i32) {
        (
            *board,
            tree::same_question(board, t, self.search.values_have_parity()),
        )
    }

    /// Where the run stands: units and nodes so far, the question under way.
    pub fn progress(&self) -> &ProveProgress {
        &self.progress
    }

    /// Bounds on South's value from the root answers known.
    fn root_bounds(&self, seeds: i32) -> (i32, i32) {
        derive::root_bounds(&self.answers, seeds, self.search.values_have_parity())
    }

    /// Proves `goal` for the start position, writing every unit to the ledger; `report` gets
    /// progress after every unit and while one runs.
    pub fn run(
        &mut self,
        goal: ProveGoal,
        runner: &mut dyn Runner,
        report: &(dyn Fn(&ProveProgress) + Sync),
        cancel: &AtomicBool,
    ) -> Result<ProveResult, ProveError> {
        let started = Instant::now();
        let root = Board::start(&self.rules);
        let seeds = root.seeds() as i32;
        let mut guess = match goal {
            ProveGoal::Exact { guess } => guess,
            ProveGoal::Sign => 1,
        };
        let mut new_answers = 0;
        loop {
            let (lo, hi) = self.root_bounds(seeds);
            self.progress.lower = lo;
            self.progress.upper = hi;
            let t = match goal {
                _ if lo >= hi => break,
                // Sign: settled once the value is known above 0, below 0, or exactly 0.
                ProveGoal::Sign if lo > 0 || hi < 0 || (lo == 0 && hi == 0) => break,
                ProveGoal::Sign if lo >= 0 => 1,
                ProveGoal::Sign if hi <= 0 => 0,
                ProveGoal::Sign => 1,
                ProveGoal::Exact { .. } => guess.clamp(lo + 1, hi),
            };
            self.progress.threshold = t;
            let holds = match self.facts.get(&root, t) {
                Some(h) => h,
                None => {
                    self.prove_question(&root, &[], t, false, runner, report, cancel, started)?
                }
            };
            let answer = RootRecord {
                threshold: t,
                holds,
            };
            self.ledger
                .append(&Record::Root(answer.clone()))
                .map_err(ProveError::Ledger)?;
            self.answers.push(answer);
            new_answers += 1;
            guess = if holds { t + 1 } else { t - 1 };
        }
        self.drain(runner, report, cancel, started)?;
        let (lower, upper) = self.root_bounds(seeds);
        let v = serde_json::json!({"done": true, "lower": lower, "upper": upper,
            "nodes": self.progress.nodes, "seconds": started.elapsed().as_secs_f64()});
        self.write_snapshot(&v);
        Ok(ProveResult {
            lower,
            upper,
            nodes: self.progress.nodes,
            units: self.progress.units_proven,
            new_answers,
        })
    }

    /// The exact value of every opening move, proven the same way as the root's (call it
    /// after [`Coordinator::run`] has settled the root's value): for each legal move, MTD(f)
    /// from `guess` (the root's value is a good one) over questions about the position
    /// after the move, each answer appended to the ledger as an opening record. A move can
    /// be worth no more than the root, so the root's upper bound caps each. Returns each
    /// move (0-based house) with its proven bounds, equal when it is settled.
    pub fn run_openings(
        &mut self,
        guess: i32,
        runner: &mut dyn Runner,
        report: &(dyn Fn(&ProveProgress) + Sync),
        cancel: &AtomicBool,
    ) -> Result<Vec<(usize, i32, i32)>, ProveError> {
        let moves = Board::start(&self.rules)
            .legal_houses()
            .map(|h| vec![h])
            .collect();
        let out = self.settle_each(Along::Opening, moves, guess, false, runner, report, cancel)?;
        Ok(out.into_iter().map(|(m, lo, hi)| (m[0], lo, hi)).collect())
    }

    /// The exact value of each first turn in `turns` (0-based houses; a first turn is
    /// everything South does before North moves; [`tree::first_turns`] lists them all), in
    /// that order, proven as the opening moves are in [`Coordinator::run_openings`], each
    /// answer a turn record. Returns each with its proven bounds; an error, before anything
    /// is proven, if one of them is not a first turn of the game.
    pub fn run_turns(
        &mut self,
        turns: Vec<Vec<usize>>,
        guess: i32,
        runner: &mut dyn Runner,
        report: &(dyn Fn(&ProveProgress) + Sync),
        cancel: &AtomicBool,
    ) -> Result<TurnBounds, ProveError> {
        let all = tree::first_turns(&self.rules);
        if let Some(m) = turns.iter().find(|m| !all.contains(m)) {
            return Err(ProveError::Ledger(format!(
                "houses {m:?} (0-based) are not a first turn of this game"
            )));
        }
        self.settle_each(Along::Turn, turns, guess, false, runner, report, cancel)
    }

    /// The value under the pie rule, `-min |M|` over the margins `M` of South's first turns
    /// (see [`derive::pie_bounds`]), proving of each first turn only what that needs: whether
    /// its margin lies within `±B`, with `B` the least `|M|` proven so far, and if so exactly.
    /// The turns most likely to hold the least `|M|` go first, so that `B` shrinks early and
    /// the others need fewer questions: those whose bounds allow the least `|M|`, then by the
    /// estimate nearest 0 (`--estimate-depth`; a turn begun in the ledger by the answer it is
    /// going on from). A turn the last run was asking about when it stopped goes first of all.
    /// Each answer is a turn record, the same as [`Coordinator::run_turns`] writes, so the
    /// exact value of every turn can be finished later. Returns the bounds on every first
    /// turn and on the pie value, equal once it is settled.
    pub fn run_pie(
        &mut self,
        guess: i32,
        runner: &mut dyn Runner,
        report: &(dyn Fn(&ProveProgress) + Sync),
        cancel: &AtomicBool,
    ) -> Result<(TurnBounds, (i32, i32)), ProveError> {
        let all = tree::first_turns(&self.rules);
        let b = -self.pie_bounds().0;
        let mut order = Vec::new();
        for (i, m) in all.iter().enumerate() {
            let (lo, hi) = self.turn_bounds(m);
            let first = self
                .interrupted
                .as_ref()
                .is_some_and(|(a, q, _)| *a == Along::Turn && q == m);
            let last = self.turns.iter().rev().find(|q| q.moves == *m);
            let near = match last {
                // Settled, or shown no nearer 0 than a turn proven before: no estimate.
                _ if lo >= hi || derive::least_abs(lo, hi) >= b => 0,
                Some(q) => (q.threshold + if q.holds { 1 } else { -1 }).abs(),
                None if self.config.estimate_depth > 0 => {
                    self.estimate_sequence(Along::Turn, m)?.abs()
                }
                None => 0,
            };
            order.push((!first, derive::least_abs(lo, hi), near, i));
        }
        order.sort();
        let turns = order.iter().map(|k| all[k.3].clone()).collect();
        self.settle_each(Along::Turn, turns, guess, true, runner, report, cancel)?;
        let bounds: TurnBounds = all
            .into_iter()
            .map(|m| {
                let (lo, hi) = self.turn_bounds(&m);
                (m, lo, hi)
            })
            .collect();
        Ok((bounds, self.pie_bounds()))
    }

    /// Bounds on a first turn's margin from the turn records and the root's upper bound.
    fn turn_bounds(&self, moves: &[usize]) -> (i32, i32) {
        let seeds = Board::start(&self.rules).seeds() as i32;
        let (_, root_upper) = self.root_bounds(seeds);
        let parity = self.search.values_have_parity();
        derive::turn_bounds(&self.turns, moves, root_upper, seeds, parity)
    }

    /// Bounds on the value under the pie rule from the root, opening and turn records.
    fn pie_bounds(&self) -> (i32, i32) {
        let seeds = Board::start(&self.rules).seeds() as i32;
        let root = self.root_bounds(seeds);
        let parity = self.search.values_have_parity();
        let openings: Vec<(usize, i32, i32)> = Board::start(&self.rules)
            .legal_houses()
            .map(|h| {
                let (lo, hi) = derive::opening_bounds(&self.openings, h, root.1, seeds, parity);
                (h, lo, hi)
            })
            .collect();
        let turns = derive::recorded_turns(&self.rules, &self.turns, root.1, seeds, parity);
        derive::pie_bounds(&self.rules, &turns, &openings, root)
    }

    /// For each sequence of South's moves from the start (an opening move, or a whole first
    /// turn), MTD(f) from `guess` over questions about the position after it, capped by the
    /// root's upper bound, each answer appended to the ledger as a record of `along`'s kind.
    /// With `pie` (first turns only), each sequence only as far as the pie rule needs: its
    /// margin within `±B`, `B` the least `|M|` over the first turns proven so far (see
    /// [`Coordinator::run_pie`]); a sequence already outside is left as it is.
    #[allow(clippy::too_many_arguments)]
    fn settle_each(
        &mut self,
        along: Along,
        sequences: Vec<Vec<usize>>,
        guess: i32,
        pie: bool,
        runner: &mut dyn Runner,
        report: &(dyn Fn(&ProveProgress) + Sync),
        cancel: &AtomicBool,
    ) -> Result<TurnBounds, ProveError> {
        let started = Instant::now();
        let seeds = Board::start(&self.rules).seeds() as i32;
        let parity = self.search.values_have_parity();
        let (_, root_upper) = self.root_bounds(seeds);
        let mut out = Vec::new();
        for moves in sequences {
            let mut guess = guess;
            let mut estimated = self.config.estimate_depth == 0;
            self.progress.estimate = None;
            // A sequence with questions answered in an earlier run goes on where that run
            // left it (the question after its last answer, whose units are in the ledger),
            // not from a new estimate that may ask another threshold first.
            let last = match along {
                Along::Opening => self
                    .openings
                    .iter()
                    .rev()
                    .find(|q| q.house == moves[0])
                    .map(|q| (q.threshold, q.holds)),
                Along::Turn => self
                    .turns
                    .iter()
                    .rev()
                    .find(|q| q.moves == moves)
                    .map(|q| (q.threshold, q.holds)),
            };
            if let Some((t, holds)) = last {
                guess = if holds { t + 1 } else { t - 1 };
                estimated = true;
            } else if let Some((_, _, t)) = self
                .interrupted
                .as_ref()
                .filter(|(a, m, _)| *a == along && *m == moves)
            {
                // Stopped before its first answer: ask that question again, whose units
                // (proven and split) are in the ledger, rather than what a new estimate
                // (which depends on the table) would ask first.
                guess = *t;
                estimated = true;
            }
            loop {
                let (lo, hi) = match along {
                    Along::Opening => {
                        derive::opening_bounds(&self.openings, moves[0], root_upper, seeds, parity)
                    }
                    Along::Turn => self.turn_bounds(&moves),
                };
                match along {
                    Along::Opening => self.progress.opening = Some(moves[0]),
                    Along::Turn => self.progress.turn = Some(moves.clone()),
                }
                self.progress.lower = lo;
                self.progress.upper = hi;
                // The thresholds still worth asking: above `ask_lo`, at most `ask_hi`.
                let (ask_lo, ask_hi) = if pie {
                    let b = -self.pie_bounds().0;
                    (lo.max(-b), hi.min(b))
                } else {
                    (lo, hi)
                };
                if ask_lo >= ask_hi {
                    out.push((moves.clone(), lo, hi));
                    break;
                }
                if !estimated {
                    estimated = true;
                    let e = self.estimate_sequence(along, &moves)?;
                    self.progress.estimate = Some(e);
                    guess = e;
                }
                let t = guess.clamp(ask_lo + 1, ask_hi);
                self.progress.threshold = t;
                let q = match along {
                    Along::Opening => tree::opening_question(&self.rules, moves[0], t),
                    Along::Turn => {
                        tree::turn_question(&self.rules, &moves, t).map_err(ProveError::Ledger)?
                    }
                };
                // The sequence's value is at least t exactly when the question about the
                // position after it holds (negated where the turn passed); a game over
                // after it is settled by its value at once.
                let after = match self.search.known_value(&q.board)? {
                    Some(v) => v >= q.threshold,
                    None => match self.facts.get(&q.board, q.threshold) {
                        Some(x) => x,
                        None => self.prove_question(
                            &q.board,
                            &moves,
                            q.threshold,
                            q.flip,
                            runner,
                            report,
                            cancel,
                            started,
                        )?,
                    },
                };
                let holds = after != q.flip;
                match along {
                    Along::Opening => {
                        let answer = OpeningRecord {
                            house: moves[0],
                            threshold: t,
                            holds,
                        };
                        self.ledger
                            .append(&Record::Opening(answer.clone()))
                            .map_err(ProveError::Ledger)?;
                        self.openings.push(answer);
                    }
                    Along::Turn => {
                        let answer = TurnRecord {
                            moves: moves.clone(),
                            threshold: t,
                            holds,
                        };
                        self.ledger
                            .append(&Record::Turn(answer.clone()))
                            .map_err(ProveError::Ledger)?;
                        self.turns.push(answer);
                    }
                }
                guess = if holds { t + 1 } else { t - 1 };
            }
        }
        self.progress.opening = None;
        self.progress.turn = None;
        self.progress.estimate = None;
        self.drain(runner, report, cancel, started)?;
        let settled: Vec<serde_json::Value> = out
            .iter()
            .map(|(m, lo, hi)| match along {
                Along::Opening => serde_json::json!({"house": m[0] + 1, "lower": lo, "upper": hi}),
                Along::Turn => serde_json::json!({
                    "moves": m.iter().map(|h| h + 1).collect::<Vec<_>>(), "lower": lo, "upper": hi}),
            })
            .collect();
        let key = match along {
            Along::Opening => "openings",
            Along::Turn => "first_turns",
        };
        let v = serde_json::json!({"done": true, key: settled,
            "nodes": self.progress.nodes, "seconds": started.elapsed().as_secs_f64()});
        self.write_snapshot(&v);
        Ok(out)
    }

    /// How a new leaf `q` starts: settled by the game's end, the database, a fact or a
    /// shallow search that met no horizon (written to the ledger as a unit), or estimated.
    fn start_of(&mut self, q: &Question, path: &[usize]) -> Result<Start, ProveError> {
        if let Some(v) = self.search.known_value(&q.board)? {
            return Ok(Start::Solved(v >= q.threshold));
        }
        if let Some(h) = self.facts.get(&q.board, q.threshold) {
            return Ok(Start::Solved(h));
        }
        let t0 = Instant::now();
        let (likely, proven, nodes) =
            self.search
                .guess_at_least(&q.board, q.threshold, self.config.guess_depth)?;
        if proven {
            let u = UnitRecord {
                path: path.to_vec(),
                board: q.board,
                threshold: q.threshold,
                verdict: if likely {
                    Verdict::AtLeast
                } else {
                    Verdict::Below
                },
                budget: 0,
                nodes,
                seconds: t0.elapsed().as_secs_f64(),
                db_seeds: self.db_seeds(),
                worker: self.config.worker.clone(),
            };
            self.record(&u)?;
            return Ok(Start::Solved(likely));
        }
        let moves = q.board.legal_houses().count() as u64;
        Ok(if likely {
            Start::Estimate(1, moves)
        } else {
            Start::Estimate(moves, 1)
        })
    }

    /// The heuristic estimate of South's value after `moves` (an opening move or a first
    /// turn): [`Search::estimate`] of the position after it, `estimate_depth` moves deep,
    /// turned into South's margin with the seeds the sequence stored.
    fn estimate_sequence(&mut self, along: Along, moves: &[usize]) -> Result<i32, ProveError> {
        if let Some(&e) = self.estimates.get(&(along, moves.to_vec())) {
            return Ok(e);
        }
        // The question "at least 0?" carries the sequence's gain in its threshold: after an
        // extra turn South asks "at least -gain?", after the turn passed North asks "at
        // least gain + 1?" of the position, negated.
        let q = match along {
            Along::Opening => tree::opening_question(&self.rules, moves[0], 0),
            Along::Turn => {
                tree::turn_question(&self.rules, moves, 0).map_err(ProveError::Ledger)?
            }
        };
        let (e, _) = self.search.estimate(&q.board, self.config.estimate_depth)?;
        let e = if q.flip {
            q.threshold - 1 - e
        } else {
            e - q.threshold
        };
        self.estimates.insert((along, moves.to_vec()), e);
        Ok(e)
    }

    fn db_seeds(&self) -> u32 {
        self.search.leaf_seeds()
    }

    fn record(&mut self, u: &UnitRecord) -> Result<(), ProveError> {
        self.ledger
            .append(&Record::Unit(u.clone()))
            .map_err(ProveError::Ledger)?;
        self.learn(u).map_err(ProveError::Ledger)
    }

    /// Writes `status.json` beside the ledger: where the question under way stands, for
    /// `kalah prove status` (written to a temporary name and renamed; a failure only loses
    /// the snapshot).
    fn write_status(&self, tree: &Tree, flip: bool, started: Instant) {
        let (phi, delta) = asked_numbers(tree, flip);
        let (open, flying) = tree.open_counts();
        let v = serde_json::json!({
            "threshold": self.progress.threshold,
            "opening": self.progress.opening.map(|h| h + 1),
            "turn": self.progress.turn.as_ref().map(|m| m.iter().map(|h| h + 1).collect::<Vec<_>>()),
            "phi": phi,
            "delta": delta,
            "leaves_open": open,
            "leaves_in_flight": flying,
            "tree_nodes": tree.len(),
            "units_proven": self.progress.units_proven,
            "units_open": self.progress.units_open,
            "nodes": self.progress.nodes,
            "seconds": started.elapsed().as_secs_f64(),
            "updated": std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            "pid": std::process::id(),
        });
        self.write_snapshot(&v);
    }

    fn write_snapshot(&self, v: &serde_json::Value) {
        let _ = crate::write_renamed::write_renamed(
            &self.config.dir.join(STATUS),
            v.to_string().as_bytes(),
        );
    }

    /// Splits leaf `i` of `tree` into its moves, or retries it with a larger budget when it
    /// is deeper than the split limit.
    fn split(&mut self, tree: &mut Tree, i: usize) -> Result<(), ProveError> {
        let n = tree.node(i).clone();
        if n.path.len() >= self.config.split_depth {
            tree.retry(i, n.budget.saturating_mul(4));
            return Ok(());
        }
        // The move the table holds as best here (the failed unit's search was following it)
        // comes first: its numbers are the least; the others' estimates count
        // `OTHER_MOVES` times, so that they are tried only when the best line grows that
        // much harder than it looked (the search's move order is better than a shallow guess).
        let best = self.search.best_move(&n.board);
        let mut kids = Vec::new();
        for q in tree::questions(&self.rules, &n.board, n.threshold) {
            let mut path = n.path.clone();
            path.push(q.house);
            let s = match self.start_of(&q, &path)? {
                Start::Estimate(p, d) if Some(q.house) == best => {
                    let m = p.max(d);
                    if q.flip {
                        Start::Estimate(m, 1)
                    } else {
                        Start::Estimate(1, m)
                    }
                }
                Start::Estimate(p, d) => Start::Estimate(OTHER_MOVES * p, OTHER_MOVES * d),
                s => s,
            };
            kids.push((q, s));
        }
        tree.expand(i, kids, self.config.unit_nodes);
        Ok(())
    }

    /// Waits for a job under way, writes its unit to the ledger and learns from it.
    fn receive(
        &mut self,
        runner: &mut dyn Runner,
        report: &(dyn Fn(&ProveProgress) + Sync),
        cancel: &AtomicBool,
        started: Instant,
    ) -> Result<(Flight, Done), ProveError> {
        let base = self.progress.clone();
        let label = self.label.clone();
        let unit_report = |p: &Progress| {
            let mut q = base.clone();
            q.seconds = started.elapsed().as_secs_f64();
            q.unit = Some((label.clone(), p.clone()));
            report(&q);
        };
        let done = runner.wait(&unit_report, cancel)?;
        let Some(f) = self.flights.remove(&done.id) else {
            return Err(ProveError::Worker(format!(
                "a result for job {} that is not under way",
                done.id
            )));
        };
        let u = UnitRecord {
            path: f.path.clone(),
            board: f.board,
            threshold: f.threshold,
            verdict: match done.truth {
                Some(true) => Verdict::AtLeast,
                Some(false) => Verdict::Below,
                None => Verdict::Open,
            },
            budget: f.budget,
            nodes: done.nodes,
            seconds: done.seconds,
            db_seeds: done.db_seeds,
            worker: done.worker.clone(),
        };
        self.record(&u)?;
        self.progress.nodes += done.nodes;
        if done.truth.is_some() {
            self.progress.units_proven += 1;
        } else {
            self.progress.units_open += 1;
        }
        Ok((f, done))
    }

    /// Waits for the jobs still under way (of questions already settled) and records them.
    fn drain(
        &mut self,
        runner: &mut dyn Runner,
        report: &(dyn Fn(&ProveProgress) + Sync),
        cancel: &AtomicBool,
        started: Instant,
    ) -> Result<(), ProveError> {
        while !self.flights.is_empty() {
            self.receive(runner, report, cancel, started)?;
        }
        Ok(())
    }

    /// Settles the question `root`/`t` by proving units; `root` is the start position, or
    /// the position the moves `path` lead to from it (the units' paths start with them).
    /// `flip`: the question asked (about South's value) is this one negated, so reports swap
    /// its proof and disproof numbers.
    #[allow(clippy::too_many_arguments)]
    fn prove_question(
        &mut self,
        root: &Board,
        path: &[usize],
        t: i32,
        flip: bool,
        runner: &mut dyn Runner,
        report: &(dyn Fn(&ProveProgress) + Sync),
        cancel: &AtomicBool,
        started: Instant,
    ) -> Result<bool, ProveError> {
        let mut tree = Tree::at(*root, path.to_vec(), t, self.config.unit_nodes);
        self.generation += 1;
        let generation = self.generation;
        loop {
            if let Some(r) = tree.result() {
                return Ok(r);
            }
            // Fill the runner's slots with the most-proving leaves.
            while self.flights.len() < runner.slots() {
                let Some(i) = tree.select() else { break };
                let n = tree.node(i).clone();
                if let Some(h) = self.facts.get(&n.board, n.threshold) {
                    tree.solve(i, h);
                    continue;
                }
                if n.path.len() < self.config.split_above.min(self.config.split_depth) {
                    // Too near the root to be worth a unit: split at once. An open unit of
                    // budget 0 says so in the ledger (a check derives split positions from
                    // their moves), once.
                    if !self.open.contains_key(&self.key(&n.board, n.threshold)) {
                        self.record(&UnitRecord {
                            path: n.path.clone(),
                            board: n.board,
                            threshold: n.threshold,
                            verdict: Verdict::Open,
                            budget: 0,
                            nodes: 0,
                            seconds: 0.0,
                            db_seeds: self.db_seeds(),
                            worker: self.config.worker.clone(),
                        })?;
                    }
                    self.split(&mut tree, i)?;
                    continue;
                }
                if self
                    .open
                    .get(&self.key(&n.board, n.threshold))
                    .is_some_and(|&b| b >= n.budget && n.budget > 0)
                {
                    // This unit already ran out of this budget (in the ledger): split at once.
                    self.split(&mut tree, i)?;
                    continue;
                }
                // The same question already under way for another leaf: wait for it.
                let (_, same) = self.key(&n.board, n.threshold);
                let parity = self.search.values_have_parity();
                if let Some(f) = self.flights.values_mut().find(|f| {
                    f.generation == generation
                        && f.board == n.board
                        && tree::same_question(&f.board, f.threshold, parity) == same
                        && f.budget >= n.budget
                }) {
                    f.leaves.push(i);
                    tree.start(i);
                    continue;
                }
                let id = self.next_id;
                self.next_id += 1;
                self.label = label(&self.rules, &n.path, n.threshold);
                runner.start(Job {
                    id,
                    board: n.board,
                    threshold: n.threshold,
                    budget: n.budget,
                    label: self.label.clone(),
                })?;
                tree.start(i);
                self.flights.insert(
                    id,
                    Flight {
                        board: n.board,
                        threshold: n.threshold,
                        budget: n.budget,
                        path: n.path.clone(),
                        leaves: vec![i],
                        generation,
                    },
                );
            }
            if tree.result().is_some() {
                continue;
            }
            if self.flights.is_empty() {
                return Err(ProveError::Worker(
                    "no unit can be started and none is under way".into(),
                ));
            }
            (self.progress.phi, self.progress.delta) = asked_numbers(&tree, flip);
            self.progress.leaves = tree.open_counts();
            self.progress.seconds = started.elapsed().as_secs_f64();
            report(&self.progress);
            let (f, done) = self.receive(runner, report, cancel, started)?;
            if f.generation == generation {
                match done.truth {
                    Some(_) => {
                        // Every leaf on this board whose question the new fact answers is
                        // settled.
                        for i in tree.leaves_at(&f.board) {
                            let n = tree.node(i);
                            if let Some(h) = self.facts.get(&n.board, n.threshold) {
                                tree.solve(i, h);
                            }
                        }
                    }
                    None => {
                        for i in f.leaves {
                            if tree.node(i).state == tree::State::InFlight {
                                tree.retry(i, f.budget);
                                self.split(&mut tree, i)?;
                            }
                        }
                    }
                }
            } else if done.truth.is_some() {
                // A job of an earlier question: its fact may settle leaves here too.
                for i in tree.leaves_at(&f.board) {
                    let n = tree.node(i);
                    if n.state == tree::State::Leaf {
                        if let Some(h) = self.facts.get(&n.board, n.threshold) {
                            tree.solve(i, h);
                        }
                    }
                }
            }
            self.write_status(&tree, flip, started);
        }
    }
}

/// The proof and disproof numbers of the question asked, from those of the tree's root
/// question (its negation where `flip`).
fn asked_numbers(tree: &Tree, flip: bool) -> (u64, u64) {
    tree::swap_if(flip, tree.numbers())
}

/// A job under way: its unit, the leaves of the tree waiting for it, and the root question
/// (by number) it was started for.
#[derive(Clone, Debug)]
struct Flight {
    board: Board,
    threshold: i32,
    budget: u64,
    path: Vec<usize>,
    leaves: Vec<usize>,
    generation: u64,
}

/// How much more the estimates of moves other than the table's best move count.
const OTHER_MOVES: u64 = 16;

/// The snapshot of a run in progress, beside the ledger.
pub const STATUS: &str = "status.json";

/// The last run's snapshot in `dir`, if there is one that reads as JSON (untrusted: a hint
/// for what to show or ask first, never a fact).
fn read_snapshot(dir: &Path) -> Option<serde_json::Value> {
    let text = std::fs::read_to_string(dir.join(STATUS)).ok()?;
    serde_json::from_str(&text).ok()
}

/// The question that the run which wrote `dir`'s snapshot was asking about an opening move
/// or a first turn when it stopped: `None` when it finished, asked about the root, or the
/// snapshot is missing or does not make sense for `rules` (it is untrusted, and only a hint).
fn interrupted_question(dir: &Path, rules: &Rules) -> Option<(Along, Vec<usize>, i32)> {
    let s = read_snapshot(dir)?;
    if s.get("done").is_some() {
        return None;
    }
    let seeds = i64::from(Board::start(rules).seeds());
    let t = s.get("threshold")?.as_i64().filter(|t| t.abs() <= seeds)? as i32;
    let house = |v: &serde_json::Value| {
        v.as_u64()
            .filter(|&h| (1..=rules.houses as u64).contains(&h))
            .map(|h| h as usize - 1)
    };
    if let Some(h) = s.get("opening").and_then(house) {
        return Some((Along::Opening, vec![h], t));
    }
    let moves = s
        .get("turn")?
        .as_array()?
        .iter()
        .map(house)
        .collect::<Option<Vec<usize>>>()?;
    (!moves.is_empty()).then_some((Along::Turn, moves, t))
}

/// A label for a unit: its moves from the root (`S3 N1 ...`) and threshold.
fn label(rules: &Rules, path: &[usize], t: i32) -> String {
    let mut p = kalah_solver::Position::start(rules);
    let mut moves = Vec::new();
    for &h in path {
        moves.push(format!("{}{}", p.to_move().letter(), h + 1));
        p = p.play(rules, h).0;
    }
    if moves.is_empty() {
        format!("root, at least {t:+}?")
    } else {
        format!("{}, at least {t:+}?", moves.join(" "))
    }
}

/// The default ledger directory of a rule set: `data/proofs/<board>-<rules>`, for example
/// `data/proofs/6x6-empty-owner-either`.
pub fn default_dir(rules: &Rules) -> PathBuf {
    Path::new("data").join("proofs").join(format!(
        "{}x{}-{}-{}-{}",
        rules.houses,
        rules.seeds,
        rules.capture.name(),
        rules.leftover.name(),
        rules.end.name()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_give_the_numbers_of_the_question_asked() {
        let rules = Rules::standard(6, 3);
        // South's first turn S5 passes the turn: the tree asks North's question, whose answer
        // negated is the one asked about South's value.
        let q = tree::turn_question(&rules, &[4], 1).unwrap();
        assert!(q.flip);
        for after in [false, true] {
            let mut t = Tree::at(q.board, vec![4], q.threshold, 100);
            t.solve(0, after);
            let holds = after != q.flip;
            let want = if holds {
                (0, tree::INF)
            } else {
                (tree::INF, 0)
            };
            assert_eq!(asked_numbers(&t, q.flip), want);
        }
        // The root question is asked as it is.
        let mut t = Tree::new(Board::start(&rules), 1, 100);
        t.solve(0, true);
        assert_eq!(asked_numbers(&t, false), (0, tree::INF));
    }
}
