//! The search that proves exact values of Kalah positions over the endgame databases.
//!
//! The value of a board (for the player to move: the net number of seeds still to be gained from
//! the seeds in the houses) is found by MTD(f): a sequence of zero-window alpha-beta probes, each
//! exact to the end of the game or to a database leaf, that narrows a proven interval
//! `[lower, upper]` until it closes. Before them, iterative deepening runs MTD(f) with
//! depth-limited probes (depths 5, 8, ..., 17 by default, the store difference as the value at
//! the horizon), which fills the table with best moves and gives the exact probes their first
//! guess. The table keeps the two kinds of knowledge apart: proven bounds, which are true
//! whatever search found them, and heuristic values with their depth, which only order moves
//! and cut depth-limited probes (see [`tt::Entry`]). All threads work on the same probe and
//! share one table; inside a probe they keep out of each other's way by ABDADA's rule (a move
//! another thread is searching is put off until the others are done; only away from the
//! database's leaves), and the first to finish a probe settles it for all.
//!
//! The search knows nothing of terminals or bars: it reports through a callback, stops when a
//! cancellation flag is set (or a node limit is reached), and can save what it has proven in a
//! [`checkpoint`] file that a later run continues from.

pub mod checkpoint;
pub mod pie;
pub mod tt;
mod worker;

use kalah_solver::{Board, DbError, Endgame, Rules};
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tt::Table;
use worker::Worker;

pub use checkpoint::Checkpoint;
pub use pie::{Pie, PieTurn};

/// How a [`Search`] is set up.
#[derive(Clone)]
pub struct SearchConfig {
    /// Size of the transposition table in MiB; 0 gives a table of one bucket (four entries),
    /// which tests use to exercise replacement.
    pub tt_mb: usize,
    /// `Some(s)`: the table starts at `s` MiB (0: one bucket) and doubles with the search up
    /// to `tt_mb` MiB ([`tt::Table::growing`]); `None`: it takes all of `tt_mb` at once.
    pub tt_grow: Option<usize>,
    /// Ask the system to back the table with huge pages (Linux, a hint; see
    /// [`tt::Table::new`]). Off, only the speed changes, never the values or the nodes.
    pub tt_huge_pages: bool,
    /// Threads searching at once (at least 1).
    pub threads: usize,
    /// Exact values for small boards: every board with at most `max_seeds()` seeds is a leaf.
    pub endgame: Option<Arc<dyn Endgame>>,
    /// Size in MiB of the cache of database values in front of the database.
    pub leaf_cache_mb: usize,
    /// Stop (as if cancelled) once this many nodes have been searched in one call.
    pub node_limit: Option<u64>,
    /// Save what has been proven to this file every [`SearchConfig::checkpoint_every`], when
    /// interrupted and when done; continue from it when it exists.
    pub checkpoint: Option<PathBuf>,
    /// Time between checkpoint saves.
    pub checkpoint_every: Duration,
    /// Table entries with bounds proven by fewer than `2^checkpoint_min_work` nodes are not
    /// saved unless they are exact.
    pub checkpoint_min_work: u8,
    /// A known value (or a good guess) of the position searched: the exact probes start from
    /// it (without one, from the deepening's last value).
    pub guess: Option<i32>,
    /// The depths of the depth-limited searches before the exact one: (first, step, last);
    /// a step of 0 searches exactly at once.
    pub deepening: (u32, u32, u32),
    /// Log every probe of the root's MTD(f) on stderr (thread, depth, window, result, nodes,
    /// bounds): for experiments.
    pub trace: bool,
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            tt_mb: 256,
            tt_grow: None,
            tt_huge_pages: true,
            threads: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            endgame: None,
            leaf_cache_mb: 64,
            node_limit: None,
            checkpoint: None,
            checkpoint_every: Duration::from_secs(300),
            checkpoint_min_work: 8,
            guess: None,
            deepening: (5, 3, 17),
            trace: false,
        }
    }
}

/// What to prove.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Goal {
    /// The exact value.
    Exact,
    /// Only whether the value is below, equal to or above `around` (two zero-window probes;
    /// much cheaper). For the sign of the final margin of a position whose mover leads the
    /// stores by `d`, use `around: -d`.
    Sign {
        /// The value compared with.
        around: i32,
    },
}

/// The result of [`Search::analyse`].
#[derive(Clone, Debug, PartialEq)]
pub struct Analysis {
    /// The value for the player to move. With [`Goal::Sign`] it is `around - 1`, `around` or
    /// `around + 1`: the value is below, equal to or above `around`.
    pub value: i32,
    /// A proven lower bound on the value (equal to `value` with [`Goal::Exact`]).
    pub lower: i32,
    /// A proven upper bound on the value.
    pub upper: i32,
    /// With `all_moves`, every legal move (0-based house) with its value, in house order (with
    /// [`Goal::Sign`] the value is clamped to `around - 1 ..= around + 1` like `value`).
    /// Without, the best moves found: the first move of the principal variation.
    pub moves: Vec<(usize, i32)>,
    /// A principal variation (0-based houses) from the board to the end of the game, each move
    /// keeping the value; empty with [`Goal::Sign`].
    pub pv: Vec<usize>,
    /// Nodes searched in this call (all threads).
    pub nodes: u64,
    /// Seconds spent.
    pub seconds: f64,
    /// Whether a checkpoint was read to start from.
    pub resumed: bool,
}

/// What the search is doing, for progress displays.
#[derive(Clone, Debug)]
pub struct Progress {
    /// What is being proven, e.g. `"root"` or `"move 3 (2/6)"`.
    pub stage: String,
    /// The proven lower bound of what is being proven now.
    pub lower: i32,
    /// The proven upper bound.
    pub upper: i32,
    /// Nodes searched so far in this call.
    pub nodes: u64,
    /// Nodes per second so far.
    pub nodes_per_second: f64,
    /// Share of the table in use (estimated).
    pub tt_fill: f64,
    /// Seconds since the call began.
    pub seconds: f64,
    /// Root moves settled (with `all_moves`).
    pub moves_done: usize,
    /// Root moves in all (with `all_moves`; 0 without).
    pub moves_total: usize,
    /// Moves of the position being solved that the probe under way has settled (for a probe
    /// that fails, every move must be settled: the share done measures its progress).
    pub probe_moves_done: usize,
    /// Moves of that position that the probe must look at (0 before it gets there).
    pub probe_moves_total: usize,
    /// An estimate of the share of the probe under way that is done (see `Odometer`), when
    /// a probe is under way.
    pub probe_share: Option<f64>,
    /// Thread 0's path through that probe: per ply, moves settled, moves, and whether the
    /// node is expected to need every move (see `Odometer`).
    pub probe_path: Vec<(usize, usize, bool)>,
}

/// Why a search gave no answer.
#[derive(Debug)]
pub enum SearchError {
    /// Cancelled or out of nodes; what was proven is in the checkpoint if one was configured.
    Interrupted {
        /// Nodes searched.
        nodes: u64,
        /// The checkpoint written, if any.
        checkpoint: Option<PathBuf>,
        /// What was being proven when the search stopped (see [`Progress::stage`]).
        stage: String,
        /// The bounds proven for it by then.
        lower: i32,
        /// The upper bound.
        upper: i32,
    },
    /// The database could not answer.
    Db(DbError),
    /// A checkpoint could not be read or written, or belongs to another problem.
    Checkpoint(String),
}

impl fmt::Display for SearchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SearchError::Interrupted {
                nodes,
                checkpoint,
                stage,
                lower,
                upper,
            } => {
                write!(
                    f,
                    "search interrupted after {nodes} nodes ({stage}: proven within [{lower:+}, {upper:+}])"
                )?;
                if let Some(p) = checkpoint {
                    write!(f, "; progress saved in {}", p.display())?;
                }
                Ok(())
            }
            SearchError::Db(e) => write!(f, "database: {e}"),
            SearchError::Checkpoint(e) => write!(f, "checkpoint: {e}"),
        }
    }
}

impl std::error::Error for SearchError {}

/// State shared by the threads of a search.
pub(crate) struct Shared {
    pub rules: Rules,
    pub leaf: i32,
    /// Threads searching at once.
    pub threads: usize,
    pub table: Table,
    pub leaves: tt::LeafCache,
    endgame: Option<Arc<dyn Endgame>>,
    pub nodes: AtomicU64,
    /// The node limit of the call under way (`u64::MAX`: none).
    pub node_limit: AtomicU64,
    interrupted: AtomicBool,
    db_error: Mutex<Option<DbError>>,
    /// The interval proven so far for what is being solved now.
    lower: AtomicI32,
    upper: AtomicI32,
    /// The number of the probe under way, bumped when a probe is settled or dropped: a
    /// worker whose probe's number is no longer this one stops it.
    pub epoch: AtomicU64,
    /// Keys of the boards being searched now by some thread (ABDADA), a hint only.
    pub busy: tt::Busy,
    stage: Mutex<String>,
    moves_done: AtomicUsize,
    moves_total: AtomicUsize,
    /// Where thread 0 is in the probe under way (see [`Odometer`]).
    pub odometer: Odometer,
}

/// Plies of the probe under way that the [`Odometer`] follows.
pub(crate) const ODOMETER_PLIES: usize = 12;

/// Thread 0's place in the probe under way, ply by ply: at each node of its path, the moves
/// settled, the moves to settle, and whether the node is expected to need all of them (a node
/// expected to fail low, where every move must be refuted) or one (expected to cut off). From
/// it, the share of the probe done: at each expected all-node, the share of its moves settled,
/// weighed by the shares of the all-nodes above (the classic odometer estimate of a tree
/// search; expected cut-nodes count as one move). Written by one thread, read by the progress
/// display; relaxed atomics, a display only.
pub(crate) struct Odometer {
    /// Per ply: done (bits 0..16), total (16..32), expected all-node (bit 32).
    levels: [AtomicU64; ODOMETER_PLIES],
    /// Plies of the path that are current.
    len: AtomicUsize,
}

impl Odometer {
    fn new() -> Odometer {
        Odometer {
            levels: [const { AtomicU64::new(0) }; ODOMETER_PLIES],
            len: AtomicUsize::new(0),
        }
    }

    /// Records the node at `ply` of the path (the plies below it are no longer current).
    #[inline]
    pub fn set(&self, ply: usize, done: usize, total: usize, all: bool) {
        self.levels[ply].store(
            (done as u64 & 0xffff) | ((total as u64 & 0xffff) << 16) | ((all as u64) << 32),
            Relaxed,
        );
        self.len.store(ply + 1, Relaxed);
    }

    fn clear(&self) {
        self.len.store(0, Relaxed);
    }

    /// The path: (moves settled, moves, expected all-node) per ply.
    fn path(&self) -> Vec<(usize, usize, bool)> {
        let len = self.len.load(Relaxed).min(ODOMETER_PLIES);
        self.levels[..len]
            .iter()
            .map(|l| {
                let w = l.load(Relaxed);
                (
                    (w & 0xffff) as usize,
                    ((w >> 16) & 0xffff) as usize,
                    w >> 32 != 0,
                )
            })
            .collect()
    }

    /// (moves settled, moves) at the first ply, and the estimated share of the probe done.
    fn read(&self) -> (usize, usize, Option<f64>) {
        let len = self.len.load(Relaxed).min(ODOMETER_PLIES);
        if len == 0 {
            return (0, 0, None);
        }
        let (mut share, mut weight) = (0.0, 1.0);
        let mut first = (0, 0);
        for (i, l) in self.levels[..len].iter().enumerate() {
            let w = l.load(Relaxed);
            let (done, total, all) = (
                (w & 0xffff) as usize,
                ((w >> 16) & 0xffff) as usize,
                w >> 32 != 0,
            );
            if i == 0 {
                first = (done, total);
            }
            if all && total > 0 {
                share += weight * done.min(total) as f64 / total as f64;
                weight /= total as f64;
            }
        }
        (first.0, first.1, Some(share.min(1.0)))
    }
}

impl Shared {
    #[inline]
    pub fn should_stop(&self) -> bool {
        self.interrupted.load(Relaxed)
    }

    pub fn interrupt(&self) {
        self.interrupted.store(true, Relaxed);
    }

    /// The database value of a board it covers; `None` (and the search stopped) on an error.
    pub fn probe(&self, board: &Board) -> Option<i32> {
        self.probe_keyed(board, tt::key(board), None)
    }

    /// [`Shared::probe`] of a board whose table key `key` is known, and whose place in the
    /// database is `place` if [`Shared::prefetch_leaf`] returned one for it.
    pub fn probe_keyed(&self, board: &Board, key: u64, place: Option<u64>) -> Option<i32> {
        let db = self.endgame.as_ref()?;
        if let Some(v) = self.leaves.get(key) {
            return Some(v);
        }
        match db.probe_located(board, place) {
            Ok(Some(v)) => {
                self.leaves.put(key, v);
                Some(v)
            }
            Ok(None) => {
                self.fail(DbError::Corrupt {
                    path: PathBuf::from("<endgame>"),
                    what: format!("no value for {board} within max_seeds"),
                });
                None
            }
            Err(e) => {
                self.fail(e);
                None
            }
        }
    }

    /// Starts bringing the database value of `board` into the cache (see
    /// [`Endgame::prefetch`]).
    #[inline]
    /// Returns its place in the database, for [`Shared::probe_keyed`].
    pub fn prefetch_leaf(&self, board: &Board) -> Option<u64> {
        self.endgame.as_ref()?.prefetch(board)
    }

    fn fail(&self, e: DbError) {
        let mut slot = self.db_error.lock().unwrap();
        if slot.is_none() {
            *slot = Some(e);
        }
        self.interrupt();
    }
}

/// A search for one rule set, with its table. Reuse it for several positions to keep the table.
pub struct Search {
    shared: Shared,
    config: SearchConfig,
}

/// The value `v` clamped to `[a, b]`.
fn clamp(v: i32, a: i32, b: i32) -> i32 {
    v.max(a).min(b)
}

impl Search {
    /// A search for `rules` (the starting seeds are ignored) with an empty table.
    pub fn new(rules: Rules, config: SearchConfig) -> Search {
        let leaf = config
            .endgame
            .as_ref()
            .map(|e| e.max_seeds() as i32)
            .unwrap_or(-1);
        Search {
            shared: Shared {
                rules: rules.play_rules(),
                leaf,
                threads: config.threads.max(1),
                table: if config.tt_mb == 0 {
                    Table::with_buckets(1)
                } else if let Some(start) = config.tt_grow {
                    Table::growing(
                        start,
                        config.tt_mb,
                        tt::nodes_per_entry(rules.houses, leaf),
                        config.tt_huge_pages,
                    )
                } else {
                    Table::new(config.tt_mb, config.tt_huge_pages)
                },
                leaves: tt::LeafCache::new(
                    if config
                        .endgame
                        .as_ref()
                        .is_some_and(|e| !e.probes_are_cheap())
                    {
                        config.leaf_cache_mb
                    } else {
                        0
                    },
                ),
                endgame: config.endgame.clone(),
                nodes: AtomicU64::new(0),
                node_limit: AtomicU64::new(config.node_limit.unwrap_or(u64::MAX)),
                interrupted: AtomicBool::new(false),
                db_error: Mutex::new(None),
                lower: AtomicI32::new(0),
                upper: AtomicI32::new(0),
                epoch: AtomicU64::new(0),
                busy: tt::Busy::new(),
                stage: Mutex::new(String::new()),
                moves_done: AtomicUsize::new(0),
                moves_total: AtomicUsize::new(0),
                odometer: Odometer::new(),
            },
            config,
        }
    }

    /// The rules searched (starting seeds zero).
    pub fn rules(&self) -> Rules {
        self.shared.rules
    }

    /// The transposition table.
    pub fn table(&self) -> &Table {
        &self.shared.table
    }

    /// Readies the shared state for a new call: node count zero, the node limit `limit` (the
    /// configured one when `None`), not interrupted, no database error pending.
    fn begin(&self, limit: Option<u64>) {
        let sh = &self.shared;
        sh.nodes.store(0, Relaxed);
        sh.node_limit.store(
            limit.or(self.config.node_limit).unwrap_or(u64::MAX),
            Relaxed,
        );
        sh.interrupted.store(false, Relaxed);
        *sh.db_error.lock().unwrap() = None;
    }

    /// The exact value of `board` for the player to move (no progress, no cancellation).
    pub fn value(&self, board: &Board) -> Result<i32, SearchError> {
        let never = AtomicBool::new(false);
        Ok(self
            .analyse(board, false, Goal::Exact, &|_| {}, &never)?
            .value)
    }

    /// Proves the value of `board` for the player to move (see [`Goal`]); with `all_moves`
    /// the value of every legal move as well. Progress goes to `progress` about four times a
    /// second (from another thread); setting `cancel` stops the search, which then saves its
    /// checkpoint (if configured) and returns [`SearchError::Interrupted`].
    pub fn analyse(
        &self,
        board: &Board,
        all_moves: bool,
        goal: Goal,
        progress: &(dyn Fn(&Progress) + Sync),
        cancel: &AtomicBool,
    ) -> Result<Analysis, SearchError> {
        let start = Instant::now();
        let sh = &self.shared;
        self.begin(None);
        sh.moves_done.store(0, Relaxed);
        sh.moves_total.store(0, Relaxed);

        let mut ck = Checkpoint::new(sh.rules, *board, all_moves, goal);
        let mut resumed = false;
        if let Some(path) = &self.config.checkpoint {
            if path.exists() {
                let old = Checkpoint::load(path).map_err(SearchError::Checkpoint)?;
                old.check_matches(&ck).map_err(SearchError::Checkpoint)?;
                sh.table.reserve(old.entries.len());
                for &(key, e) in &old.entries {
                    sh.table.store(key, e);
                }
                ck.moves = old.moves;
                resumed = true;
            }
        }
        let ck = Mutex::new(ck);
        let result = self.monitored(start, Some(&ck), progress, cancel, || {
            // A resumed search starts from the checkpoint's bounds and best moves, not from a
            // new iterative deepening (whose heuristic values are not saved).
            self.run(board, all_moves, goal, &ck, !resumed)
        });
        progress(&self.progress(start));
        let nodes = sh.nodes.load(Relaxed);
        if let Some(e) = sh.db_error.lock().unwrap().take() {
            return Err(SearchError::Db(e));
        }
        let saved = if self.config.checkpoint.is_some() {
            self.save_checkpoint(&ck)?;
            self.config.checkpoint.clone()
        } else {
            None
        };
        match result {
            Some((value, lower, upper, moves, pv)) => Ok(Analysis {
                value,
                lower,
                upper,
                moves,
                pv,
                nodes,
                seconds: start.elapsed().as_secs_f64(),
                resumed,
            }),
            None => Err(SearchError::Interrupted {
                nodes,
                checkpoint: saved,
                stage: sh.stage.lock().unwrap().clone(),
                lower: sh.lower.load(Relaxed),
                upper: sh.upper.load(Relaxed),
            }),
        }
    }

    /// Runs `work` on this thread while another reports progress, watches `cancel` and saves
    /// the checkpoint `ck` periodically.
    fn monitored<T>(
        &self,
        start: Instant,
        ck: Option<&Mutex<Checkpoint>>,
        progress: &(dyn Fn(&Progress) + Sync),
        cancel: &AtomicBool,
        work: impl FnOnce() -> T,
    ) -> T {
        let sh = &self.shared;
        let finished = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let monitor = scope.spawn(|| {
                let mut last_save = Instant::now();
                let mut last_report = Instant::now() - Duration::from_secs(1);
                while !finished.load(Relaxed) {
                    std::thread::park_timeout(Duration::from_millis(20));
                    if cancel.load(Relaxed) {
                        sh.interrupt();
                    }
                    if finished.load(Relaxed) {
                        break;
                    }
                    if last_report.elapsed() >= Duration::from_millis(250) {
                        last_report = Instant::now();
                        progress(&self.progress(start));
                    }
                    if let Some(ck) = ck {
                        if self.config.checkpoint.is_some()
                            && last_save.elapsed() >= self.config.checkpoint_every
                        {
                            last_save = Instant::now();
                            // A failed periodic save is retried later and at the end.
                            let _ = self.save_checkpoint(ck);
                        }
                    }
                }
            });
            let r = work();
            finished.store(true, Relaxed);
            monitor.thread().unpark();
            r
        })
    }

    /// The value of `board` clamped to `window` (exact without one) and the nodes spent, for
    /// the pie rule: no checkpoint, progress labelled with the first turn.
    pub(crate) fn analyse_quiet(
        &self,
        board: &Board,
        window: Option<(i32, i32)>,
        progress: &(dyn Fn(&Progress) + Sync),
        cancel: &AtomicBool,
        done: usize,
        total: usize,
    ) -> Result<(i32, u64), SearchError> {
        let start = Instant::now();
        let sh = &self.shared;
        self.begin(None);
        sh.moves_done.store(done, Relaxed);
        sh.moves_total.store(total, Relaxed);
        self.set_stage(format!("first turn {}/{total}", done + 1));
        let seeds = board.seeds() as i32;
        let (a, b) = window.unwrap_or((-seeds, seeds));
        let threads = self.config.threads.max(1);
        let r = self.monitored(start, None, progress, cancel, || {
            self.solve(board, a, b, None, threads, true)
        });
        let nodes = sh.nodes.load(Relaxed);
        if let Some(e) = sh.db_error.lock().unwrap().take() {
            return Err(SearchError::Db(e));
        }
        r.map(|v| (v, nodes))
            .ok_or_else(|| SearchError::Interrupted {
                nodes,
                checkpoint: None,
                stage: sh.stage.lock().unwrap().clone(),
                lower: sh.lower.load(Relaxed),
                upper: sh.upper.load(Relaxed),
            })
    }

    /// Answers "is the value of `board` (for the player to move) at least `threshold`?" with
    /// at most `budget` nodes: `Some(true)` or `Some(false)` when proven, `None` when the
    /// budget ran out first. What was proven on the way stays in the table, so a later call on
    /// this board or one below it starts from it. Iterative deepening runs first only when the
    /// table holds nothing of the board. Progress is labelled `stage`; `cancel`
    /// stops the search with [`SearchError::Interrupted`].
    pub fn decide(
        &self,
        board: &Board,
        threshold: i32,
        budget: Option<u64>,
        stage: &str,
        progress: &(dyn Fn(&Progress) + Sync),
        cancel: &AtomicBool,
    ) -> Result<(Option<bool>, u64), SearchError> {
        let start = Instant::now();
        let sh = &self.shared;
        self.begin(Some(budget.unwrap_or(u64::MAX)));
        sh.moves_done.store(0, Relaxed);
        sh.moves_total.store(0, Relaxed);
        self.set_stage(stage.to_string());
        let threads = self.config.threads.max(1);
        // A board the table knows (searched before, as part of another question) keeps the
        // best moves that search found: a new deepening would replace them with its guesses.
        let deepen = self.shared.table.probe(tt::key(board)).is_none();
        let r = self.monitored(start, None, progress, cancel, || {
            self.solve(board, threshold - 1, threshold, None, threads, deepen)
        });
        let nodes = sh.nodes.load(Relaxed);
        sh.node_limit.store(u64::MAX, Relaxed);
        if let Some(e) = sh.db_error.lock().unwrap().take() {
            return Err(SearchError::Db(e));
        }
        match r {
            Some(v) => Ok((Some(v >= threshold), nodes)),
            None if cancel.load(Relaxed) => Err(SearchError::Interrupted {
                nodes,
                checkpoint: None,
                stage: stage.to_string(),
                lower: sh.lower.load(Relaxed),
                upper: sh.upper.load(Relaxed),
            }),
            None => Ok((None, nodes)),
        }
    }

    /// The best bounds on the value of `board` proven before `cancel` is set: `(lower, upper,
    /// nodes)`, equal bounds when the search finished. For answers within a time budget.
    pub fn bounds(
        &self,
        board: &Board,
        cancel: &AtomicBool,
    ) -> Result<(i32, i32, u64), SearchError> {
        let start = Instant::now();
        let sh = &self.shared;
        self.begin(None);
        let seeds = board.seeds() as i32;
        if let Some(v) = self.known_value(board)? {
            return Ok((v, v, 0));
        }
        sh.lower.store(-seeds, Relaxed);
        sh.upper.store(seeds, Relaxed);
        let threads = self.config.threads.max(1);
        let deepen = sh.table.probe(tt::key(board)).is_none();
        let r = self.monitored(start, None, &|_| {}, cancel, || {
            self.solve(board, -seeds, seeds, None, threads, deepen)
        });
        let nodes = sh.nodes.load(Relaxed);
        if let Some(e) = sh.db_error.lock().unwrap().take() {
            return Err(SearchError::Db(e));
        }
        Ok(match r {
            Some(v) => (v, v, nodes),
            None => (sh.lower.load(Relaxed), sh.upper.load(Relaxed), nodes),
        })
    }

    /// A cheap guess of whether the value of `board` is at least `threshold`: a
    /// depth-limited zero-window search `depth` moves deep (on one thread). Returns the guess,
    /// whether it is in fact proven (the search met no horizon), and the nodes spent.
    pub fn guess_at_least(
        &self,
        board: &Board,
        threshold: i32,
        depth: u32,
    ) -> Result<(bool, bool, u64), SearchError> {
        let sh = &self.shared;
        sh.interrupted.store(false, Relaxed);
        sh.node_limit.store(u64::MAX, Relaxed);
        let before = sh.nodes.load(Relaxed);
        let mut w = Worker::new(sh);
        w.epoch = sh.epoch.load(Relaxed);
        let r = w.search_depth(board, threshold - 1, threshold, depth.max(1));
        w.flush();
        let nodes = sh.nodes.load(Relaxed) - before;
        if let Some(e) = sh.db_error.lock().unwrap().take() {
            return Err(SearchError::Db(e));
        }
        match r {
            Some((v, proven)) => Ok((v >= threshold, proven, nodes)),
            None => Err(SearchError::Interrupted {
                nodes,
                checkpoint: None,
                stage: "guess".to_string(),
                lower: 0,
                upper: 0,
            }),
        }
    }

    /// A heuristic estimate of the value of `board`: full-window depth-limited searches 1 to
    /// `depth` moves deep on one thread (a board at the horizon counts 0: the store
    /// difference so far decides), the deepest one's value. Not a proof: it only says where
    /// to ask first. Returns the estimate and the nodes spent.
    pub fn estimate(&self, board: &Board, depth: u32) -> Result<(i32, u64), SearchError> {
        if let Some(v) = self.known_value(board)? {
            return Ok((v, 0));
        }
        let sh = &self.shared;
        sh.interrupted.store(false, Relaxed);
        sh.node_limit.store(u64::MAX, Relaxed);
        let before = sh.nodes.load(Relaxed);
        let seeds = board.seeds() as i32;
        let mut w = Worker::new(sh);
        w.epoch = sh.epoch.load(Relaxed);
        let mut value = None;
        for d in 1..=depth.max(1) {
            match w.search_depth(board, -seeds - 1, seeds + 1, d) {
                Some((v, proven)) => {
                    value = Some(v);
                    if proven {
                        break;
                    }
                }
                None => {
                    value = None;
                    break;
                }
            }
        }
        w.flush();
        let nodes = sh.nodes.load(Relaxed) - before;
        if let Some(e) = sh.db_error.lock().unwrap().take() {
            return Err(SearchError::Db(e));
        }
        match value {
            Some(v) => Ok((v, nodes)),
            None => Err(SearchError::Interrupted {
                nodes,
                checkpoint: None,
                stage: "estimate".to_string(),
                lower: -seeds,
                upper: seeds,
            }),
        }
    }

    /// The exact value of `board` when it needs no search: the game is over, or the board is
    /// small enough for the database.
    pub fn known_value(&self, board: &Board) -> Result<Option<i32>, SearchError> {
        let sh = &self.shared;
        if let Some(v) = board.final_value(&sh.rules) {
            return Ok(Some(v));
        }
        if (board.seeds() as i32) > sh.leaf {
            return Ok(None);
        }
        match sh.endgame.as_ref().map(|e| e.probe(board)) {
            Some(Ok(v)) => Ok(v),
            Some(Err(e)) => Err(SearchError::Db(e)),
            None => Ok(None),
        }
    }

    /// Loads the proven bounds saved in a checkpoint of [`Search::analyse`] for the same rules
    /// (whatever position it was proving) into the table; returns how many entries it held.
    /// The bounds are proven, so every later answer stays exact; only the work changes.
    pub fn preload(&self, path: &std::path::Path) -> Result<usize, SearchError> {
        let ck = Checkpoint::load(path)
            .map_err(|e| SearchError::Checkpoint(format!("{}: {e}", path.display())))?;
        if ck.rules.play_rules() != self.shared.rules {
            return Err(SearchError::Checkpoint(format!(
                "{} is a checkpoint of other rules ({})",
                path.display(),
                ck.rules
            )));
        }
        self.shared.table.reserve(ck.entries.len());
        for &(key, e) in &ck.entries {
            self.shared.table.store(key, e);
        }
        Ok(ck.entries.len())
    }

    /// Saves the table's proven bounds that took at least `2^min_work` nodes (and the exact
    /// ones) to `path` as a checkpoint of `board`, which [`Search::preload`] loads back (a
    /// later run over the same rules then starts from this table's work, whatever it
    /// proves). Returns the entries saved.
    pub fn save_table(
        &self,
        path: &std::path::Path,
        board: &Board,
        min_work: u8,
    ) -> Result<usize, SearchError> {
        let mut ck = Checkpoint::new(self.shared.rules, *board, false, Goal::Exact);
        ck.entries = self.shared.table.entries(min_work);
        ck.save(path)
            .map_err(|e| SearchError::Checkpoint(format!("writing {}: {e}", path.display())))?;
        Ok(ck.entries.len())
    }

    /// The most seeds of a board the database answers (0 without one).
    pub fn leaf_seeds(&self) -> u32 {
        self.shared.leaf.max(0) as u32
    }

    /// Whether every value has the parity of the seeds in the houses (each seed ends in some
    /// store), so that "at least `t`" for `t` of the other parity means "at least `t + 1`".
    pub fn values_have_parity(&self) -> bool {
        self.shared.rules.leftover != kalah_solver::Leftover::Discard
    }

    fn progress(&self, start: Instant) -> Progress {
        let sh = &self.shared;
        let seconds = start.elapsed().as_secs_f64();
        let nodes = sh.nodes.load(Relaxed);
        let odo = sh.odometer.read();
        Progress {
            stage: sh.stage.lock().unwrap().clone(),
            lower: sh.lower.load(Relaxed),
            upper: sh.upper.load(Relaxed),
            nodes,
            nodes_per_second: nodes as f64 / seconds.max(1e-9),
            tt_fill: sh.table.fill(),
            seconds,
            moves_done: sh.moves_done.load(Relaxed),
            moves_total: sh.moves_total.load(Relaxed),
            probe_moves_done: odo.0,
            probe_moves_total: odo.1,
            probe_share: odo.2,
            probe_path: sh.odometer.path(),
        }
    }

    fn save_checkpoint(&self, ck: &Mutex<Checkpoint>) -> Result<(), SearchError> {
        let Some(path) = &self.config.checkpoint else {
            return Ok(());
        };
        let mut ck = ck.lock().unwrap();
        ck.entries = self.shared.table.entries(self.config.checkpoint_min_work);
        let r = ck.save(path);
        ck.entries = Vec::new();
        r.map_err(|e| SearchError::Checkpoint(format!("writing {}: {e}", path.display())))
    }

    fn set_stage(&self, stage: String) {
        *self.shared.stage.lock().unwrap() = stage;
    }

    /// The work of [`Search::analyse`] (iterative deepening before each exact search when
    /// `deepen`); `None` when stopped.
    #[allow(clippy::type_complexity)]
    fn run(
        &self,
        board: &Board,
        all_moves: bool,
        goal: Goal,
        ck: &Mutex<Checkpoint>,
        deepen: bool,
    ) -> Option<(i32, i32, i32, Vec<(usize, i32)>, Vec<usize>)> {
        let rules = self.shared.rules;
        let seeds = board.seeds() as i32;
        let (a, b) = match goal {
            Goal::Exact => (-seeds, seeds),
            Goal::Sign { around } => (around - 1, around + 1),
        };
        let guess = self.config.guess;
        let bounds = |c: i32| -> (i32, i32) {
            match goal {
                Goal::Exact => (c, c),
                Goal::Sign { .. } if c == a => (-seeds, a),
                Goal::Sign { .. } if c == b => (b, seeds),
                Goal::Sign { .. } => (c, c),
            }
        };
        if let Some(v) = board.final_value(&rules) {
            let c = clamp(v, a, b);
            return Some((c, v, v, Vec::new(), Vec::new()));
        }
        let threads = self.config.threads.max(1);
        let mut moves = Vec::new();
        let value = if all_moves {
            let legal: Vec<usize> = board.legal_houses().collect();
            self.shared.moves_total.store(legal.len(), Relaxed);
            for (i, &h) in legal.iter().enumerate() {
                let known = ck
                    .lock()
                    .unwrap()
                    .moves
                    .iter()
                    .find(|m| m.0 == h)
                    .map(|m| m.1);
                let v = match known {
                    Some(v) => v,
                    None => {
                        self.set_stage(format!("move {} ({}/{})", h + 1, i + 1, legal.len()));
                        let v = self.solve_move(board, h, a, b, None, threads, deepen)?;
                        ck.lock().unwrap().moves.push((h, v));
                        v
                    }
                };
                self.shared.moves_done.store(i + 1, Relaxed);
                moves.push((h, v));
            }
            moves.iter().map(|m| m.1).max().unwrap()
        } else {
            self.set_stage("root".to_string());
            self.solve(board, a, b, guess, threads, deepen)?
        };
        let (lower, upper) = bounds(value);
        let mut pv = Vec::new();
        if goal == Goal::Exact {
            self.set_stage("principal variation".to_string());
            pv = self.principal_variation(board, value)?;
            if !all_moves {
                moves = vec![(pv[0], value)];
            }
        } else if !all_moves {
            // The best move for the proven bound: the first one reaching it, the table's best
            // move (which the proof found) tried first.
            for h in self.move_order(board) {
                let v = self.solve_move(board, h, a, b, Some(value), threads, false)?;
                if v == value {
                    moves.push((h, v));
                    break;
                }
            }
        }
        Some((value, lower, upper, moves, pv))
    }

    /// A principal variation from `board`, whose value is `value`, to the end of the game.
    fn principal_variation(&self, board: &Board, value: i32) -> Option<Vec<usize>> {
        let rules = self.shared.rules;
        let mut pv = Vec::new();
        let mut b = *board;
        let mut v = value;
        let threads = self.config.threads.max(1);
        while b.final_value(&rules).is_none() {
            let order = self.move_order(&b);
            let mut chosen = None;
            for h in order {
                if self.solve_move(&b, h, v - 1, v, Some(v), threads, false)? >= v {
                    chosen = Some(h);
                    break;
                }
            }
            // The value is the best move's value, so one move keeps it.
            let h = chosen.expect("no move keeps the proven value");
            let s = b.sow(&rules, h);
            v = if s.extra_turn {
                v - s.gain as i32
            } else {
                s.gain as i32 - v
            };
            b = s.next();
            pv.push(h);
        }
        Some(pv)
    }

    /// The table's best move at `board` (0-based house), if it holds one.
    pub fn best_move(&self, board: &Board) -> Option<usize> {
        self.shared
            .table
            .probe(tt::key(board))
            .map(|e| e.best as usize)
            .filter(|&m| m < board.houses() && board.cells()[m] > 0)
    }

    /// The legal moves of `board`, the table's best move first.
    fn move_order(&self, board: &Board) -> Vec<usize> {
        let first = self
            .shared
            .table
            .probe(tt::key(board))
            .map(|e| e.best as usize)
            .filter(|&m| m < board.houses() && board.cells()[m] > 0);
        first
            .into_iter()
            .chain(board.legal_houses().filter(|&h| Some(h) != first))
            .collect()
    }

    /// The value of sowing `house` first, clamped to `[a, b]`; `guess` is a known value or
    /// a good guess of it.
    #[allow(clippy::too_many_arguments)]
    fn solve_move(
        &self,
        board: &Board,
        house: usize,
        a: i32,
        b: i32,
        guess: Option<i32>,
        threads: usize,
        deepen: bool,
    ) -> Option<i32> {
        let s = board.sow(&self.shared.rules, house);
        let next = s.next();
        let gain = s.gain as i32;
        if s.extra_turn {
            Some(
                gain + self.solve(
                    &next,
                    a - gain,
                    b - gain,
                    guess.map(|g| g - gain),
                    threads,
                    deepen,
                )?,
            )
        } else {
            Some(
                gain - self.solve(
                    &next,
                    gain - b,
                    gain - a,
                    guess.map(|g| gain - g),
                    threads,
                    deepen,
                )?,
            )
        }
    }

    /// The next probe for all threads under `plan`: `(depth, gamma)` (depth 0: exact), or
    /// `None` when the bounds meet or the search stops.
    fn next_probe(&self, plan: &mut Plan) -> Option<(u32, i32)> {
        let sh = &self.shared;
        if sh.should_stop() {
            return None;
        }
        let (_, step, last) = self.config.deepening;
        while plan.depth > 0 {
            if plan.dlo < plan.dhi {
                let gamma = if plan.g <= plan.dlo {
                    plan.dlo + 1
                } else {
                    plan.g.min(plan.dhi)
                };
                return Some((plan.depth, gamma));
            }
            plan.depth += step;
            if plan.depth > last {
                plan.start_exact();
            }
            (plan.dlo, plan.dhi) = (plan.floor, plan.seeds);
        }
        let lo = sh.lower.load(Relaxed);
        let hi = sh.upper.load(Relaxed);
        if lo >= hi {
            return None;
        }
        Some((0, clamp(plan.g, lo + 1, hi)))
    }

    /// The value of `board` clamped to `[a, b]` (`a <= b`), by MTD(f), after iterative
    /// deepening when `deepen`. The exact probes start from `guess` when there is one (a
    /// known value), otherwise from the deepening's last value (or 0).
    ///
    /// All `threads` work on one zero-window probe at a time, sharing the table: the first to
    /// finish it settles it and the others drop it (see [`Worker::epoch`]); inside a probe
    /// they keep apart by searching first the moves no other thread is searching (ABDADA's
    /// deferral, see [`worker`]). With deepening, the probes are first depth-limited
    /// MTD(f) searches at the depths of [`SearchConfig::deepening`], each starting from the
    /// value the one before found, which fill the table with best moves and heuristic values;
    /// then exact ones from the last value, until the proven bounds meet.
    fn solve(
        &self,
        board: &Board,
        a: i32,
        b: i32,
        guess: Option<i32>,
        threads: usize,
        deepen: bool,
    ) -> Option<i32> {
        let sh = &self.shared;
        let seeds = board.seeds() as i32;
        let mut lower = clamp(-seeds, a, b);
        let mut upper = clamp(seeds, a, b);
        if board.final_value(&sh.rules).is_some() || seeds <= sh.leaf {
            let mut w = Worker::new(sh);
            let v = w.search(board, i32::MIN / 2, i32::MAX / 2)?;
            return Some(clamp(v, a, b));
        }
        if let Some(e) = sh.table.probe(tt::key(board)) {
            lower = lower.max(clamp(e.lower, a, b));
            upper = upper.min(clamp(e.upper, a, b));
        }
        if lower >= upper {
            return Some(lower);
        }
        sh.lower.store(lower, Relaxed);
        sh.upper.store(upper, Relaxed);
        let (first, step, last) = self.config.deepening;
        let floor = Worker::new(sh).floor(seeds);
        let mut plan = Plan {
            depth: if deepen && step > 0 && first <= last {
                first
            } else {
                0
            },
            dlo: floor,
            dhi: seeds,
            floor,
            seeds,
            g: guess.unwrap_or(0).clamp(-seeds, seeds),
            known: guess.map(|g| g.clamp(-seeds, seeds)),
        };
        let first_probe = self.next_probe(&mut plan);
        let state = Mutex::new((plan, first_probe));
        sh.odometer.clear();
        sh.epoch.fetch_add(1, Relaxed);
        let trace = self.config.trace;
        let run = |id: usize| {
            let mut w = Worker::new(sh);
            loop {
                let (epoch, probe, g) = {
                    let s = state.lock().unwrap();
                    (sh.epoch.load(Relaxed), s.1, s.0.g)
                };
                let Some((depth, gamma)) = probe else { break };
                self.set_stage_if(id, || {
                    if depth > 0 {
                        format!("deepening {depth}: is it {gamma:+} or more?")
                    } else {
                        format!("exact: is it {gamma:+} or more?")
                    }
                });
                w.epoch = epoch;
                // Thread 0 keeps the odometer; the root is expected to fail low when the
                // threshold is above the guess.
                w.track = id == 0;
                w.expect_all = gamma > g;
                let r = if depth > 0 {
                    w.search_depth(board, gamma - 1, gamma, depth)
                } else {
                    w.search(board, gamma - 1, gamma).map(|r| (r, true))
                };
                let Some((r, proven)) = r else {
                    if sh.should_stop() {
                        break;
                    }
                    // Another thread settled this probe first.
                    continue;
                };
                let mut s = state.lock().unwrap();
                if sh.epoch.load(Relaxed) != epoch {
                    continue;
                }
                let plan = &mut s.0;
                if proven {
                    if r < gamma {
                        sh.upper
                            .fetch_min(clamp(w.round_down(r, seeds), a, b), Relaxed);
                    } else {
                        sh.lower
                            .fetch_max(clamp(w.round_up(r, seeds), a, b), Relaxed);
                    }
                }
                plan.g = r;
                if depth > 0 {
                    if r < gamma {
                        plan.dhi = r.min(plan.dhi);
                    } else {
                        plan.dlo = r.max(plan.dlo);
                    }
                    if proven {
                        // The depth-limited search met no horizon: go on exactly.
                        plan.start_exact();
                    }
                }
                if trace {
                    eprintln!(
                        "thread {id} depth {depth} probe {gamma} -> {r} ({} nodes, bounds [{}, {}])",
                        sh.nodes.load(Relaxed) + w.pending(),
                        sh.lower.load(Relaxed),
                        sh.upper.load(Relaxed)
                    );
                }
                s.1 = self.next_probe(&mut s.0);
                sh.odometer.clear();
                sh.epoch.fetch_add(1, Relaxed);
            }
            w.flush();
        };
        std::thread::scope(|scope| {
            for id in 1..threads {
                let run = &run;
                scope.spawn(move || run(id));
            }
            run(0);
        });
        sh.odometer.clear();
        let lo = sh.lower.load(Relaxed);
        let hi = sh.upper.load(Relaxed);
        if lo >= hi {
            Some(lo)
        } else {
            None
        }
    }

    /// Sets the stage from thread 0 only (so that threads do not fight over it).
    fn set_stage_if(&self, id: usize, stage: impl FnOnce() -> String) {
        if id == 0 {
            self.set_stage(stage());
        }
    }
}

/// Where [`Search::solve`] stands: the depth of its probes (0: exact) with the bounds of the
/// depth-limited value at that depth, and the guess the next probe starts from.
struct Plan {
    depth: u32,
    dlo: i32,
    dhi: i32,
    floor: i32,
    seeds: i32,
    g: i32,
    /// The value the exact probes start from, when known beforehand.
    known: Option<i32>,
}

impl Plan {
    /// Ends the deepening: the exact probes start from the known value if there is one.
    fn start_exact(&mut self) {
        self.depth = 0;
        if let Some(k) = self.known {
            self.g = k;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odometer_weighs_all_nodes_down_the_path() {
        let o = Odometer::new();
        assert_eq!(o.read(), (0, 0, None));
        // A cut root (one move counts), an all-node with 1 of 4 moves settled, a cut node,
        // an all-node with 2 of 5 settled: 1/4 + (1/4)(2/5) = 0.35.
        o.set(0, 0, 6, false);
        o.set(1, 1, 4, true);
        o.set(2, 0, 3, false);
        o.set(3, 2, 5, true);
        let (done, total, share) = o.read();
        assert_eq!((done, total), (0, 6));
        assert!((share.unwrap() - 0.35).abs() < 1e-9);
        // Back at ply 1 with its second move settled: the plies below no longer count.
        o.set(1, 2, 4, true);
        assert!((o.read().2.unwrap() - 0.5).abs() < 1e-9);
        o.clear();
        assert_eq!(o.read().2, None);
    }
}
