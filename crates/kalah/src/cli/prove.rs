//! `kalah prove`: prove the value of a start position in units kept in a ledger;
//! `kalah prove status DIR` and `kalah prove check DIR`.

use super::common::{
    cancel_flag, rechecked_json, show_progress, spinner, CliError, CliResult, DbArgs, GoalArg,
    RuleArgs, EXIT_INTERRUPTED,
};
use super::engine::{default_tt_mb, open_endgame, progress_message, rules_json, Fill};
use clap::{Args, Subcommand};
use kalah_driver::prove::derive;
use kalah_driver::prove::ledger;
use kalah_driver::prove::recheck;
use kalah_driver::prove::status::result_word;
use kalah_driver::prove::{
    default_dir, Coordinator, LocalRunner, ProveConfig, ProveError, ProveGoal, ProveProgress,
    Runner,
};
use kalah_driver::results::parse_first_turn;
use kalah_driver::{Search, SearchConfig, SearchError};
use kalah_solver::{Board, Endgame, Rules};
use serde_json::json;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

/// Arguments of `kalah prove`.
///
/// Proves South's value at the start (`--goal exact`) or only who wins (`--goal sign`) as a
/// set of units: each a position and a threshold, proven by the search within a node budget.
/// Every unit goes into the ledger `DIR/ledger.jsonl`; a run that is stopped (Ctrl-C, a crash,
/// `kill -9`) continues from it when run again with the same DIR.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct ProveArgs {
    #[command(subcommand)]
    pub action: Option<ProveAction>,
    #[command(flatten)]
    pub run: RunArgs,
}

/// What else `prove` does.
#[derive(Subcommand, Debug)]
pub enum ProveAction {
    /// What a ledger proves so far: bounds at the root and on every opening move, units,
    /// nodes, rate, and a rough estimate of what is left.
    Status(StatusArgs),
    /// Prove every unit of a ledger again (or a random sample) and derive the root's result
    /// from the units alone; exit status 1 if anything does not hold.
    Check(CheckArgs),
}

/// Arguments of a proof run.
#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub rules: RuleArgs,
    /// `exact`: South's exact margin; `sign`: only win, draw or loss.
    #[arg(long, value_enum, default_value = "exact")]
    pub goal: GoalArg,
    /// With `--goal exact`: the first threshold asked (a known or expected value saves
    /// questions).
    #[arg(
        long,
        value_name = "V",
        allow_hyphen_values = true,
        default_value_t = 0
    )]
    pub guess: i32,
    /// Then the exact value of every opening move too (with `--goal exact`), each proven in
    /// the same ledger the way the start's value is.
    #[arg(long)]
    pub openings: bool,
    /// Then the exact value of every first turn (with `--goal exact`): everything South does
    /// before North moves, a move ending in South's store followed by more included; each
    /// proven in the same ledger (turn records), after the opening moves with --openings.
    #[arg(long)]
    pub first_turns: bool,
    /// Then the exact value of this first turn only, as --first-turns proves each (`"S2 S1"`
    /// or `"2 1"`: South's houses in order); repeat it for more, proven in the order given.
    #[arg(long, value_name = "TURN")]
    pub turn: Vec<String>,
    /// Then the value under the pie rule (with `--goal exact`), before --first-turns or --turn:
    /// of each first turn only what the pie rule needs (whether its margin lies within ± the
    /// least margin proven so far, and if so exactly), the turns nearest 0 first (by the
    /// estimate of --estimate-depth); turn records, as --first-turns writes them.
    #[arg(long)]
    pub pie: bool,
    /// The ledger's directory (default `data/proofs/<houses>x<seeds>-<rules>`).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    #[command(flatten)]
    pub database: DbArgs,
    /// Node budget of a unit; a unit that runs out is split into its moves.
    #[arg(long, default_value_t = 200_000_000, value_name = "N")]
    pub unit_nodes: u64,
    /// Units deeper than this many plies are not split but retried with four times the budget.
    #[arg(long, default_value_t = 16, value_name = "PLIES")]
    pub split_depth: usize,
    /// Positions fewer than this many plies below the start are split into their moves at
    /// once, never searched as units (for big proofs, where units near the start only run out
    /// of budget).
    #[arg(long, default_value_t = 0, value_name = "PLIES")]
    pub split_above: usize,
    /// Depth of the shallow search that estimates each new unit.
    #[arg(long, default_value_t = 8, value_name = "PLIES")]
    pub guess_depth: u32,
    /// Depth of the heuristic search that picks the first threshold asked of each opening
    /// move and first turn (0: start each from the start position's value). A poor estimate
    /// costs questions, never a wrong answer. One already begun in the ledger goes on from
    /// its last answer, or asks again the question a stopped run was asking (`status.json`).
    #[arg(long, default_value_t = 0, value_name = "PLIES")]
    pub estimate_depth: u32,
    /// Transposition table size in MiB (default: a sixteenth of the machine's memory).
    #[arg(long, value_name = "MB", value_parser = super::common::parse_tt_mb)]
    pub tt_mb: Option<usize>,
    /// Search threads (default: every core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Load the proven bounds of a `kalah solve --checkpoint` file of the same rules into
    /// the table first (units then cost fewer nodes; their answers are as exact).
    #[arg(long, value_name = "FILE")]
    pub preload: Option<PathBuf>,
    /// Print one JSON object at the end.
    #[arg(long)]
    pub json: bool,
    /// Print a progress line to stderr every SECS seconds, with --json too (default: every
    /// 60 s when stderr is not a terminal and the output is text; 0: never).
    #[arg(long, value_name = "SECS")]
    pub log_every: Option<u64>,
    /// Also save the table beside the ledger (`table.ckp`, for the next run) after a unit
    /// when SECS seconds have passed since the last save, so that a run killed outright
    /// loses at most that much of it (0: after every unit). It is always saved at the end.
    #[arg(long, default_value_t = 1800, value_name = "SECS")]
    pub table_every: u64,
    /// Do not ask for huge pages for the transposition table (they save TLB misses; without
    /// them only the speed changes). For experiments.
    #[arg(long, hide = true)]
    pub tt_no_huge_pages: bool,
}

/// Arguments of `kalah prove status`.
#[derive(Args, Debug)]
pub struct StatusArgs {
    /// The ledger's directory.
    pub dir: PathBuf,
    /// Endgame database directory, to settle small positions (default `data/db/<rules>` when
    /// it exists).
    #[arg(long, value_name = "DIR")]
    pub db: Option<PathBuf>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `kalah prove check`.
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// The ledger's directory.
    pub dir: PathBuf,
    /// Prove again only N proven units chosen at random (the root is still derived from all).
    #[arg(long, value_name = "N")]
    pub sample: Option<usize>,
    /// Seed of the random sample (default: from the clock; printed).
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Prove again exactly the units that the root, opening and first-turn records rest on
    /// (each fact the derivation used names its unit), from nothing. Each unit proven again
    /// is recorded in `rechecked.jsonl` beside the ledger; a later `--needed` check goes on
    /// from there, and from the table and the unit under way a stopped check saved (its own
    /// work: see --table-every).
    #[arg(long, conflicts_with = "sample")]
    pub needed: bool,
    /// Prove again only the chosen units after ledger line L (an interrupted check names
    /// the last line it proved again; the root and openings are still derived from every unit).
    #[arg(long, value_name = "L")]
    pub after_line: Option<usize>,
    /// Endgame database directory (default `data/db/<rules>` when it exists).
    #[arg(long, value_name = "DIR")]
    pub db: Option<PathBuf>,
    /// Transposition table size in MiB.
    #[arg(long, value_name = "MB", value_parser = super::common::parse_tt_mb)]
    pub tt_mb: Option<usize>,
    /// With --needed, save this check's table and the unit under way beside the ledger
    /// (`recheck-table.ckp`, `recheck-unit.json`) every SECS seconds and when stopped, so
    /// that a check killed outright loses at most that much: the next --needed check starts
    /// from them. A finished check removes them.
    #[arg(long, default_value_t = 600, value_name = "SECS")]
    pub table_every: u64,
    /// Print a progress line to stderr every SECS seconds, with --json too (default: every
    /// 60 s when stderr is not a terminal and the output is text; 0: never).
    #[arg(long, value_name = "SECS")]
    pub log_every: Option<u64>,
    /// Search threads (default: every core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Runs `kalah prove`.
pub fn run(args: &ProveArgs) -> CliResult {
    match &args.action {
        Some(ProveAction::Status(a)) => status(a),
        Some(ProveAction::Check(a)) => check(a),
        None => prove(&args.run),
    }
}

fn prove_error(e: ProveError) -> CliError {
    match e {
        ProveError::Search(SearchError::Interrupted { .. }) => CliError {
            code: EXIT_INTERRUPTED,
            message: "interrupted; every finished unit is in the ledger (run the same command again to go on)".into(),
        },
        e => CliError::failure(e.to_string()),
    }
}

fn search_for(
    rules: &Rules,
    endgame: Option<Arc<dyn Endgame>>,
    tt_mb: Option<usize>,
    threads: Option<usize>,
    huge_pages: bool,
) -> Search {
    let mut c = SearchConfig {
        tt_mb: tt_mb.unwrap_or_else(default_tt_mb),
        tt_huge_pages: huge_pages,
        endgame,
        ..SearchConfig::default()
    };
    if let Some(t) = threads {
        c.threads = t.max(1);
    }
    Search::new(*rules, c)
}

fn worker_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".into());
    format!("{host}:{}", std::process::id())
}

/// One progress line of a proof run.
pub fn prove_message(p: &ProveProgress) -> String {
    let mut s = format!(
        "{}at least {:+}? | South in [{:+}, {:+}] | units {} proven, {} split | leaves {} waiting | phi {} delta {}",
        question_subject(p.opening, p.turn.as_deref()),
        p.threshold,
        p.lower,
        p.upper,
        p.units_proven,
        p.units_open,
        p.leaves.0,
        fmt_number(p.phi),
        fmt_number(p.delta)
    );
    if let Some(e) = p.estimate {
        s += &format!(" | estimate {e:+}");
    }
    if let Some((label, sp)) = &p.unit {
        s += &format!(" | unit {label}: {}", progress_message(sp));
    }
    s
}

fn fmt_number(n: u64) -> String {
    if n >= kalah_driver::prove::tree::INF {
        "inf".into()
    } else {
        n.to_string()
    }
}

fn prove(args: &RunArgs) -> CliResult {
    let rules = args.rules.rules()?;
    if (args.openings || args.first_turns || !args.turn.is_empty() || args.pie)
        && !matches!(args.goal, GoalArg::Exact)
    {
        return Err(CliError::usage(
            "--openings, --first-turns, --turn and --pie need --goal exact (the values they prove are exact)",
        ));
    }
    if args.first_turns && !args.turn.is_empty() {
        return Err(CliError::usage(
            "--first-turns proves every first turn; --turn only those it names: give one of them",
        ));
    }
    turns_asked(args, &rules)?;
    #[cfg(feature = "mpi")]
    {
        use mpi::topology::Communicator;
        let universe = mpi::initialize()
            .ok_or_else(|| CliError::failure("MPI was already initialised".to_string()))?;
        let world = universe.world();
        if world.size() > 1 {
            return prove_mpi(args, &rules, &world);
        }
        prove_here(args, &rules, None)
    }
    #[cfg(not(feature = "mpi"))]
    prove_here(args, &rules, None)
}

/// The database and search of this process for a proof run (`tt_mb` overrides the flag).
fn prove_search(
    args: &RunArgs,
    rules: &Rules,
    tt_mb: Option<usize>,
) -> CliResult<(Search, u32, String)> {
    // The table's memory is faulted in while the database opens.
    let mb = tt_mb.or(args.tt_mb).unwrap_or_else(default_tt_mb);
    if mb > 0 {
        kalah_driver::search::tt::prepare(mb, !args.tt_no_huge_pages);
    }
    let endgame = open_endgame(
        args.database.db.as_deref(),
        rules,
        args.database.db_lazy,
        args.database.db_upto,
        Some(Fill {
            evict: args.database.db_huge_pages,
            lock: args.database.db_lock,
            visible: show_progress(args.json),
        }),
    )?;
    let db_seeds = endgame.as_ref().map(|e| e.max_seeds()).unwrap_or(0);
    let search = search_for(
        rules,
        endgame,
        Some(mb),
        args.threads,
        !args.tt_no_huge_pages,
    );
    Ok((search, db_seeds, worker_name()))
}

/// The file beside the ledger that keeps a local run's table for the next run (not part of
/// the proof: `prove check` never reads it).
const TABLE: &str = "table.ckp";

/// Table entries saved for the next run: those that took at least `2^TABLE_MIN_WORK` nodes
/// (and exact ones); the others are quick to prove again.
const TABLE_MIN_WORK: u8 = 10;

/// Saves the costly proven bounds of `search`'s table to `path` for the next run, as a
/// checkpoint of the start of `rules`; returns the entries saved.
fn save_table(search: &Search, rules: &Rules, path: &Path) -> Result<usize, SearchError> {
    search.save_table(path, &Board::start(rules), TABLE_MIN_WORK)
}

/// The search in this process, saving its table beside the ledger after a unit when
/// `every` has passed since the last save (between units no search is under way).
struct TableSaving<'a> {
    inner: LocalRunner<'a>,
    search: &'a Search,
    rules: Rules,
    path: &'a Path,
    every: std::time::Duration,
    last: std::time::Instant,
}

impl Runner for TableSaving<'_> {
    fn slots(&self) -> usize {
        self.inner.slots()
    }

    fn start(&mut self, job: kalah_driver::prove::Job) -> Result<(), ProveError> {
        self.inner.start(job)
    }

    fn wait(
        &mut self,
        progress: &(dyn Fn(&kalah_driver::Progress) + Sync),
        cancel: &std::sync::atomic::AtomicBool,
    ) -> Result<kalah_driver::prove::Done, ProveError> {
        let done = self.inner.wait(progress, cancel)?;
        if self.last.elapsed() >= self.every {
            // The table is a cache: a failed save costs the next run time, never this one.
            if let Err(e) = save_table(self.search, &self.rules, self.path) {
                eprintln!("warning: {e}");
            }
            self.last = std::time::Instant::now();
        }
        Ok(done)
    }
}

/// Loads `--preload` into a prover's table.
fn preload(args: &RunArgs, search: &Search, worker: &mut String) -> CliResult {
    if let Some(p) = &args.preload {
        let n = search
            .preload(p)
            .map_err(|e| CliError::failure(e.to_string()))?;
        if !args.json {
            eprintln!("preloaded {n} proven table entries from {}", p.display());
        }
        *worker += "+preload";
    }
    Ok(())
}

#[cfg(feature = "mpi")]
fn prove_mpi(
    args: &RunArgs,
    rules: &Rules,
    world: &mpi::topology::SimpleCommunicator,
) -> CliResult {
    use kalah_driver::prove::mpi::{serve, MpiRunner};
    use mpi::collective::CommunicatorCollectives;
    use mpi::topology::Communicator;
    if world.rank() == 0 {
        let built = super::common::ensure_start_db(&args.database, rules, args.json);
        world.barrier();
        built?;
        let mut runner = MpiRunner::new(world);
        // The coordinator's own search only values small positions and estimates leaves.
        let r = prove_here(args, rules, Some(&mut runner));
        runner.stop_all();
        r
    } else {
        world.barrier();
        let (search, db_seeds, mut worker) = prove_search(args, rules, None)?;
        preload(args, &search, &mut worker)?;
        worker = format!("{worker} rank {}", world.rank());
        serve(
            world,
            &search,
            rules.houses,
            db_seeds,
            &worker,
            cancel_flag(),
        )
        .map(|_| ())
        .map_err(prove_error)
    }
}

/// The coordinator in this process, proving units with `runner` (without one, with its own
/// search).
fn prove_here(args: &RunArgs, rules: &Rules, runner: Option<&mut dyn Runner>) -> CliResult {
    let rules = *rules;
    if runner.is_none() {
        super::common::ensure_start_db(&args.database, &rules, args.json)?;
    }
    let remote = runner.is_some();
    let (search, db_seeds, mut worker) = if remote {
        prove_search(args, &rules, Some(args.tt_mb.unwrap_or(256).min(256)))?
    } else {
        prove_search(args, &rules, None)?
    };
    let dir = args.dir.clone().unwrap_or_else(|| default_dir(&rules));
    let table = dir.join(TABLE);
    if !remote {
        preload(args, &search, &mut worker)?;
        if args.preload.is_none() && table.exists() {
            // The table is a cache: a bad file costs time, never the run.
            match search.preload(&table) {
                Ok(n) => {
                    if !args.json {
                        eprintln!(
                            "loaded {n} proven table entries from {} (the last run's)",
                            table.display()
                        );
                    }
                    worker += "+table";
                }
                Err(e) => eprintln!("warning: {e}; starting with an empty table"),
            }
        }
    }
    let config = ProveConfig {
        dir: dir.clone(),
        unit_nodes: args.unit_nodes.max(1000),
        split_depth: args.split_depth,
        split_above: args.split_above,
        guess_depth: args.guess_depth.max(1),
        estimate_depth: args.estimate_depth,
        worker: worker.clone(),
    };
    let (mut coord, torn) = Coordinator::open(&search, &rules, config).map_err(prove_error)?;
    if torn > 0 {
        eprintln!(
            "warning: the ledger's last line ({torn} bytes) was cut short by a crash and is dropped"
        );
    }
    let goal = match args.goal {
        GoalArg::Exact => ProveGoal::Exact { guess: args.guess },
        GoalArg::Sign => ProveGoal::Sign,
    };
    let visible = show_progress(args.json);
    let bar = spinner(visible);
    let logged = std::sync::Mutex::new(0.0f64);
    let log_every =
        super::common::log_interval(args.log_every, args.json, std::io::stderr().is_terminal());
    // Lines fall due by this run's clock: `p.seconds` starts again at 0 for the openings and
    // the first turns, which would silence the log until it passed the root's time.
    let log_clock = std::time::Instant::now();
    let report = |p: &ProveProgress| {
        bar.set_message(prove_message(p));
        if super::common::log_due(log_every, &logged, log_clock.elapsed().as_secs_f64()) {
            bar.suspend(|| eprintln!("[{:.0} s] {}", p.seconds, prove_message(p)));
        }
    };
    let mut local = TableSaving {
        inner: LocalRunner::new(&search, db_seeds, worker),
        search: &search,
        rules,
        path: &table,
        every: std::time::Duration::from_secs(args.table_every),
        last: std::time::Instant::now(),
    };
    let runner: &mut dyn Runner = match runner {
        Some(r) => r,
        None => &mut local,
    };
    let started = std::time::Instant::now();
    let result = coord.run(goal, &mut *runner, &report, cancel_flag());
    // Then every opening move's value, once the start's is exact.
    let openings = match &result {
        Ok(r) if args.openings && r.lower == r.upper => {
            Some(coord.run_openings(r.lower, &mut *runner, &report, cancel_flag()))
        }
        _ => None,
    };
    // Then the pie rule's value, then the exact first turns asked.
    let pie = match &result {
        Ok(r) if args.pie && r.lower == r.upper && !matches!(openings, Some(Err(_))) => {
            Some(coord.run_pie(r.lower, &mut *runner, &report, cancel_flag()))
        }
        _ => None,
    };
    let first_turns = match (&result, turns_asked(args, &rules)?) {
        (Ok(r), Some(turns))
            if r.lower == r.upper
                && !matches!(openings, Some(Err(_)))
                && !matches!(pie, Some(Err(_))) =>
        {
            Some(coord.run_turns(turns, r.lower, &mut *runner, &report, cancel_flag()))
        }
        _ => None,
    };
    bar.finish_and_clear();
    if !remote {
        // Finished or interrupted, the table's costly proven bounds go beside the ledger for
        // the next run (a run killed outright only loses this speed-up).
        let t = std::time::Instant::now();
        match save_table(&search, &rules, &table) {
            Ok(n) if !args.json => eprintln!(
                "saved {n} proven table entries to {} for the next run ({:.1} s)",
                table.display(),
                t.elapsed().as_secs_f64()
            ),
            Ok(_) => {}
            Err(e) => eprintln!("warning: {e}"),
        }
    }
    let r = result.map_err(prove_error)?;
    let openings = openings.transpose().map_err(prove_error)?;
    let pie = pie.transpose().map_err(prove_error)?;
    let first_turns = first_turns.transpose().map_err(prove_error)?;
    // The turns --first-turns or --turn proved, else those --pie bounded.
    let (pie_turns, pie) = pie.unzip();
    let first_turns = first_turns.or(pie_turns);
    // Units and nodes of the whole run, the opening moves' included.
    let (units, nodes) = (coord.progress().units_proven, coord.progress().nodes);
    let seconds = started.elapsed().as_secs_f64();
    let moves = openings.as_ref().map(|o| {
        o.iter()
            .map(|&(h, lo, hi)| json!({"house": h + 1, "lower": lo, "upper": hi, "value": (lo == hi).then_some(lo)}))
            .collect::<Vec<_>>()
    });
    if args.json {
        println!(
            "{}",
            json!({
                "rules": rules_json(&rules),
                "goal": match args.goal { GoalArg::Exact => "exact", GoalArg::Sign => "sign" },
                "lower": r.lower,
                "upper": r.upper,
                "value": (r.lower == r.upper).then_some(r.lower),
                "result": result_word(r.lower, r.upper),
                "moves": moves,
                "first_turns": first_turns.as_ref().map(|t| t.iter()
                    .map(|(m, lo, hi)| json!({"moves": turn_text(m), "lower": lo, "upper": hi, "value": (lo == hi).then_some(*lo)}))
                    .collect::<Vec<_>>()),
                "pie": pie.map(|(lo, hi)| json!({"lower": lo, "upper": hi, "value": (lo == hi).then_some(lo)})),
                "nodes": nodes,
                "units": units,
                "seconds": seconds,
                "dir": dir.display().to_string(),
                "database_seeds": db_seeds,
            })
        );
    } else {
        println!("rules: {rules}");
        print_value(r.lower, r.upper);
        // Bounds are left open only by a run stopped before it settled them.
        let seeds = Board::start(&rules).seeds() as i32;
        for &(h, lo, hi) in openings.iter().flatten() {
            println!("  opening move {}: {}", h + 1, bound_text(lo, hi, seeds));
        }
        for (m, lo, hi) in first_turns.iter().flatten() {
            println!(
                "  first turn {}: {}",
                turn_text(m),
                bound_text(*lo, *hi, seeds)
            );
        }
        if let Some((lo, hi)) = pie {
            println!("pie rule: {}", bound_text(lo, hi, seeds));
        }
        println!(
            "this run: {units} units proven, {nodes} nodes in {seconds:.1} s; ledger {}",
            ledger::path(&dir).display()
        );
    }
    Ok(())
}

fn print_value(lo: i32, hi: i32) {
    let who = match result_word(lo, hi) {
        Some("win") => "the first player wins",
        Some("loss") => "the first player loses",
        Some(_) => "a draw",
        None => "not yet known who wins",
    };
    if lo == hi {
        println!("value: {lo:+} (South's final margin: {who})");
    } else {
        println!("value: between {lo:+} and {hi:+} (South's final margin: {who})");
    }
}

/// Opens the ledger's database read-only: lazily for status (a few probes), whole and read
/// into the page cache for check (which searches).
fn endgame_for(
    db: Option<&Path>,
    rules: &Rules,
    lazy: bool,
    visible: bool,
) -> CliResult<Option<Arc<dyn Endgame>>> {
    let fill = (!lazy).then_some(Fill {
        evict: false,
        lock: false,
        visible,
    });
    open_endgame(db, rules, lazy, None, fill)
}

fn status(args: &StatusArgs) -> CliResult {
    let contents = ledger::read(&args.dir).map_err(CliError::failure)?;
    let rules = contents.header.rules;
    let endgame = endgame_for(args.db.as_deref(), &rules, true, false)?;
    let search = search_for(&rules, endgame, Some(16), Some(1), true);
    let st = kalah_driver::prove::status::status(&args.dir, &contents, &search)
        .map_err(CliError::failure)?;
    let (lo, hi) = (st.lower, st.upper);
    // The pie rule's bounds, once a first turn has records.
    let pie = (!st.turns.is_empty())
        .then(|| kalah_driver::prove::derive::pie_bounds(&rules, &st.turns, &st.moves, (lo, hi)));
    if args.json {
        println!(
            "{}",
            json!({
                "rules": rules_json(&rules),
                "lower": lo,
                "upper": hi,
                "result": st.result(),
                "moves": st.moves.iter().map(|&(h, a, b)| json!({"house": h + 1, "lower": a, "upper": b})).collect::<Vec<_>>(),
                "first_turns": st.turns.iter().map(|(m, a, b)| json!({"moves": turn_text(m), "lower": a, "upper": b})).collect::<Vec<_>>(),
                "pie": pie.map(|(a, b)| json!({"lower": a, "upper": b, "value": (a == b).then_some(a)})),
                "units_at_least": st.units_at_least,
                "units_below": st.units_below,
                "units_open": st.units_open,
                "nodes": st.nodes,
                "seconds": st.seconds,
                "nodes_per_second": st.nodes_per_second(),
                "ledger_bytes": st.ledger_bytes,
                "torn_bytes": st.torn_bytes,
                "snapshot": st.snapshot,
                "rechecked": rechecked_json(&st.rechecked),
            })
        );
        return Ok(());
    }
    let seeds = Board::start(&rules).seeds() as i32;
    println!("rules: {rules}");
    println!(
        "ledger: {} ({} bytes)",
        ledger::path(&args.dir).display(),
        st.ledger_bytes
    );
    print_value(lo, hi);
    for (h, a, b) in &st.moves {
        println!("  opening move {}: {}", h + 1, bound_text(*a, *b, seeds));
    }
    for (m, a, b) in &st.turns {
        println!(
            "  first turn {}: {}",
            turn_text(m),
            bound_text(*a, *b, seeds)
        );
    }
    if let Some((a, b)) = pie {
        println!("pie rule: {}", bound_text(a, b, seeds));
    }
    println!(
        "units: {} proven ({} at least, {} below), {} out of budget and split",
        st.units_proven(),
        st.units_at_least,
        st.units_below,
        st.units_open
    );
    println!(
        "work: {} nodes in {:.2} hours of unit time ({:.2} Mnodes/s)",
        st.nodes,
        st.seconds / 3600.0,
        st.nodes_per_second() / 1e6
    );
    match &st.rechecked {
        Ok(Some(r)) => {
            println!(
                "proven again by `prove check --needed` (rechecked.jsonl): {} units, {} as the ledger says, {} not; {} nodes in {:.2} hours",
                r.units,
                r.agree,
                r.units - r.agree,
                r.nodes,
                r.seconds / 3600.0
            );
            if let Some(n) = &r.needed {
                println!("  {}", super::common::needed_text(n));
            }
            if r.stale > 0 {
                println!(
                    "  and {} records that match no proven unit of this ledger (not counted)",
                    r.stale
                );
            }
        }
        Ok(None) => {}
        Err(e) => println!("proven again: cannot read the records ({e})"),
    }
    if let Some(s) = st.running_snapshot() {
        let age = s
            .get("updated")
            .and_then(|u| u.as_u64())
            .map(|u| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs().saturating_sub(u))
                    .unwrap_or(0)
            })
            .unwrap_or(0);
        println!(
            "last run (updated {age} s ago): asking \"{}at least {:+}?\", {} leaves waiting, proof number {}, disproof number {}",
            snapshot_subject(s),
            s.get("threshold").and_then(|v| v.as_i64()).unwrap_or(0),
            s.get("leaves_open").and_then(|v| v.as_u64()).unwrap_or(0),
            fmt_number(s.get("phi").and_then(|v| v.as_u64()).unwrap_or(0)),
            fmt_number(s.get("delta").and_then(|v| v.as_u64()).unwrap_or(0)),
        );
        if lo < hi && st.nodes_per_second() > 0.0 && st.units_proven() == 0 {
            println!("rough estimate: none yet (no unit proven, every one so far split)");
        } else if let Some(e) = st.estimate() {
            println!(
                "rough estimate: at least {} more units for this question, about {:.1} hours at {:.0} M nodes a unit (the numbers grow as units split)",
                e.units,
                e.hours,
                e.nodes_per_unit / 1e6
            );
        }
    }
    Ok(())
}

/// Loads the table that a stopped `--needed` check saved beside the ledger in `dir` into
/// `search`, and returns the unit it was searching (a bad file is a warning: the table only
/// saves time, and the unit's earlier work is counted in its record however it goes on).
fn resume_recheck(dir: &Path, search: &Search, houses: usize) -> Option<recheck::InFlight> {
    let table = recheck::table_path(dir);
    if table.exists() {
        match search.preload(&table) {
            Ok(n) => eprintln!(
                "loaded {n} proven table entries from {} (a stopped check's own work)",
                table.display()
            ),
            Err(e) => eprintln!("warning: {e}; starting with an empty table"),
        }
    }
    match recheck::InFlight::read(dir, houses) {
        Ok(u) => u,
        Err(e) => {
            eprintln!("warning: {e}; its work is not counted");
            None
        }
    }
}

fn check(args: &CheckArgs) -> CliResult {
    let contents = ledger::read(&args.dir).map_err(CliError::failure)?;
    let rules = contents.header.rules;
    if contents.torn_bytes > 0 {
        eprintln!(
            "warning: the last line ({} bytes) is cut short or damaged and is not checked",
            contents.torn_bytes
        );
    }
    let endgame = endgame_for(args.db.as_deref(), &rules, false, show_progress(args.json))?;
    let search = search_for(&rules, endgame, args.tt_mb, args.threads, true);
    let proven = derive::proven_lines(&contents);
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
    });
    let chosen = match args.sample {
        Some(n) => derive::sample(&proven, n, seed),
        None => proven.iter().copied().collect(),
    };
    if args.sample.is_some() && !args.json {
        eprintln!(
            "checking {} of {} proven units, chosen with --seed {seed}",
            chosen.len(),
            proven.len()
        );
    }
    let visible = show_progress(args.json);
    let bar = spinner(visible);
    let after = args.after_line.unwrap_or(0);
    // With --needed, each unit proven again is recorded beside the ledger as its search ends,
    // and the units recorded there are not searched again.
    let (previous, mut file) = if args.needed {
        let houses = rules.houses;
        let (previous, torn) = recheck::read(&args.dir, houses).map_err(CliError::failure)?;
        if torn > 0 {
            eprintln!(
                "warning: the last line of {} ({torn} bytes) is cut short or damaged and is dropped",
                recheck::path(&args.dir).display()
            );
        }
        let file = recheck::Rechecked::open(&args.dir, torn).map_err(CliError::failure)?;
        (previous, Some(file))
    } else {
        (Vec::new(), None)
    };
    let mut record = |r: &recheck::Recheck| match file.as_mut() {
        Some(f) => f.append(r),
        None => Ok(()),
    };
    // A --needed check starts from the table and the unit under way that a stopped one saved
    // (both its own work: they only save time, so a bad file costs that time, never the check).
    let resumed = if args.needed {
        resume_recheck(&args.dir, &search, rules.houses)
    } else {
        None
    };
    // The unit under way, with the work spent on it so far.
    let under_way: std::sync::Mutex<Option<recheck::InFlight>> = std::sync::Mutex::new(None);
    // What a stopped check leaves for the next: the table, and the unit with its work so far.
    // (Its line when both were saved.)
    let save = || -> Option<usize> {
        let unit = under_way.lock().unwrap().clone()?;
        let saved = search
            .save_table(
                &recheck::table_path(&args.dir),
                &Board::start(&rules),
                TABLE_MIN_WORK,
            )
            .map_err(|e| e.to_string())
            .and_then(|_| unit.save(&args.dir));
        match saved {
            Ok(()) => Some(unit.line),
            Err(e) => {
                bar.suspend(|| eprintln!("warning: {e}"));
                None
            }
        }
    };
    let log_every =
        super::common::log_interval(args.log_every, args.json, std::io::stderr().is_terminal());
    let logged = std::sync::Mutex::new(0.0f64);
    let log_clock = std::time::Instant::now();
    let finished = AtomicBool::new(false);
    let report = std::thread::scope(|scope| {
        if args.needed {
            scope.spawn(|| {
                let every = std::time::Duration::from_secs(args.table_every.max(1));
                let mut last = std::time::Instant::now();
                while !finished.load(Relaxed) {
                    std::thread::park_timeout(std::time::Duration::from_millis(200));
                    if last.elapsed() >= every && !finished.load(Relaxed) {
                        save();
                        last = std::time::Instant::now();
                    }
                }
            });
        }
        let r = derive::check(
            &search,
            &contents,
            &|line| line > after && chosen.contains(&line),
            args.needed,
            &previous,
            resumed.as_ref(),
            &mut record,
            &|k, n, unit, p| {
                *under_way.lock().unwrap() = Some(unit.clone());
                let m = format!(
                    "unit {}/{n}, ledger line {} | {}",
                    k + 1,
                    unit.line,
                    progress_message(p)
                );
                if super::common::log_due(log_every, &logged, log_clock.elapsed().as_secs_f64()) {
                    bar.suspend(|| eprintln!("[{:.0} s] {m}", log_clock.elapsed().as_secs_f64()));
                }
                bar.set_message(m)
            },
            cancel_flag(),
        );
        finished.store(true, Relaxed);
        r
    });
    bar.finish_and_clear();
    let r = report.map_err(prove_error)?;
    let mut saved_unit = None;
    if args.needed && !r.needed_lines.is_empty() {
        // The units the records rest on, for `prove status` and `results` (which have no
        // database to derive them).
        let needed = recheck::Needed {
            ledger_lines: contents.last_line(),
            lines: r.needed_lines.clone(),
        };
        if let Err(e) = needed.save(&args.dir) {
            eprintln!("warning: {e}");
        }
    }
    if args.needed {
        if r.interrupted {
            saved_unit = save();
        } else if let Err(e) = recheck::remove_saved(&args.dir) {
            eprintln!("warning: {e}");
        }
    }
    if r.stale_records > 0 {
        eprintln!(
            "warning: {} records of {} match no proven unit of the ledger and were not used",
            r.stale_records,
            recheck::path(&args.dir).display()
        );
    }
    if r.interrupted {
        // Say what was checked, and how to go on from there.
        let again = {
            let mut c = format!("kalah prove check {}", args.dir.display());
            if args.needed {
                c += " --needed";
            }
            if let Some(n) = args.sample {
                c += &format!(" --sample {n} --seed {seed}");
            }
            // A --needed check goes on from what it recorded; the others from a line.
            let line = if args.needed {
                args.after_line
            } else {
                r.last_line.or(args.after_line)
            };
            if let Some(l) = line {
                c += &format!(" --after-line {l}");
            }
            c
        };
        let checked = match r.last_line {
            Some(l) => format!(
                "{} units proven again up to ledger line {l} ({} nodes, {:.1} s), {}",
                r.reproved,
                r.nodes,
                r.seconds,
                if r.errors.is_empty() {
                    "each with the ledger's answer".to_string()
                } else {
                    format!("{} disagreements: {}", r.errors.len(), r.errors.join("; "))
                }
            ),
            None => "no unit proven again".to_string(),
        };
        if args.json {
            println!(
                "{}",
                json!({
                    "rules": rules_json(&rules),
                    "interrupted": true,
                    "ok": r.errors.is_empty(),
                    "errors": r.errors,
                    "reproved": r.reproved,
                    "recorded": r.recorded,
                    "last_line": r.last_line,
                    "nodes": r.nodes,
                    "seconds": r.seconds,
                    "seed": args.sample.map(|_| seed),
                    "saved_unit": saved_unit,
                    "continue": again,
                })
            );
        }
        return Err(CliError {
            code: EXIT_INTERRUPTED,
            message: match saved_unit {
                Some(l) => format!(
                    "interrupted: {checked}; saved its table and the unit under way (ledger line \
                     {l}) beside the ledger; go on with: {again}"
                ),
                None => format!("interrupted: {checked}; go on with: {again}"),
            },
        });
    }
    if args.json {
        println!(
            "{}",
            json!({
                "rules": rules_json(&rules),
                "ok": r.errors.is_empty(),
                "errors": r.errors,
                "units": r.units,
                "needed": r.needed_lines.len(),
                "reproved": r.reproved,
                "nodes": r.nodes,
                "seconds": r.seconds,
                "recorded": r.recorded,
                "recorded_nodes": r.recorded_nodes,
                "recorded_seconds": r.recorded_seconds,
                "lower": r.lower,
                "upper": r.upper,
                "seed": args.sample.map(|_| seed),
            })
        );
    } else {
        println!("rules: {rules}");
        println!(
            "units: {} in the ledger, {} of them needed by the root, opening and first-turn records, {} \
             proven again{} ({} nodes, {:.1} s)",
            r.units,
            r.needed_lines.len(),
            r.reproved,
            if args.needed {
                " (the needed ones)"
            } else {
                ""
            },
            r.nodes,
            r.seconds
        );
        if r.recorded > 0 {
            println!(
                "  and {} more proven again by earlier checks, as {} records ({} nodes, {:.1} s)",
                r.recorded,
                recheck::path(&args.dir).display(),
                r.recorded_nodes,
                r.recorded_seconds
            );
        }
        for e in &r.errors {
            println!("error: {e}");
        }
        if r.errors.is_empty() {
            print_value(r.lower, r.upper);
            println!("the ledger holds: every root, opening and first-turn record follows from its units");
        }
    }
    if r.errors.is_empty() {
        Ok(())
    } else {
        Err(CliError::failure(format!(
            "the ledger in {} does not hold ({} errors)",
            args.dir.display(),
            r.errors.len()
        )))
    }
}

/// What is known of a value in `[a, b]` within `[-seeds, seeds]`, in words.
fn bound_text(a: i32, b: i32, seeds: i32) -> String {
    match (a > -seeds, b < seeds) {
        (true, true) if a == b => format!("{a:+}"),
        (true, true) => format!("between {a:+} and {b:+}"),
        (true, false) => format!("at least {a:+}"),
        (false, true) => format!("at most {b:+}"),
        (false, false) => "unknown".to_string(),
    }
}

/// "opening move H: " or "first turn S1 S2: " for the question under way, or nothing for a
/// question about the start (0-based houses).
fn question_subject(opening: Option<usize>, turn: Option<&[usize]>) -> String {
    match (opening, turn) {
        (_, Some(m)) => format!("first turn {}: ", turn_text(m)),
        (Some(h), None) => format!("opening move {}: ", h + 1),
        (None, None) => String::new(),
    }
}

/// [`question_subject`] of a run's `status.json` (1-based houses there); anything malformed
/// in it is left out.
fn snapshot_subject(s: &serde_json::Value) -> String {
    // A 1-based house as a 0-based one, if it is one.
    let house = |v: &serde_json::Value| {
        v.as_u64()
            .filter(|&h| (1..=kalah_solver::MAX_HOUSES as u64).contains(&h))
            .map(|h| h as usize - 1)
    };
    let opening = s.get("opening").and_then(house);
    let turn = s
        .get("turn")
        .and_then(|v| v.as_array())
        .and_then(|a| a.iter().map(house).collect::<Option<Vec<usize>>>());
    question_subject(opening, turn.as_deref())
}

/// The first turns to prove after the start (0-based houses): every one with
/// `--first-turns`, those named with `--turn`, none without either.
fn turns_asked(args: &RunArgs, rules: &Rules) -> CliResult<Option<Vec<Vec<usize>>>> {
    if args.first_turns {
        return Ok(Some(kalah_driver::prove::tree::first_turns(rules)));
    }
    if args.turn.is_empty() {
        return Ok(None);
    }
    let mut out: Vec<Vec<usize>> = Vec::new();
    for text in &args.turn {
        let m: Vec<usize> = parse_first_turn(rules, text)
            .map_err(|e| CliError::usage(format!("--turn: {e}")))?
            .into_iter()
            .map(|h| h - 1)
            .collect();
        if !out.contains(&m) {
            out.push(m);
        }
    }
    Ok(Some(out))
}

/// A first turn (0-based houses) as a move list: `S3 S6`.
fn turn_text(m: &[usize]) -> String {
    m.iter()
        .map(|h| format!("S{}", h + 1))
        .collect::<Vec<_>>()
        .join(" ")
}
