//! `kalah solve`: prove the value of the start position.

use super::common::{
    best_houses, cancel_flag, show_progress, spinner, CliError, CliResult, DbArgs, GoalArg,
    RuleArgs,
};
use super::engine::{
    default_tt_mb, open_endgame, progress_message, rules_json, search_error, Fill,
};
use clap::Args;
use indicatif::ProgressBar;
use kalah_driver::{results, Analysis, Goal, Pie, Progress, Search, SearchConfig};
use kalah_solver::{Board, Endgame, Position, Rules};
use serde_json::{json, Value};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Arguments of `kalah solve`.
///
/// Prints the value of the start position for South (the first player): South's final margin
/// (South's store minus North's) under perfect play; the best opening move(s); a principal
/// variation as a playable move list (`S3` = South sows house 3, houses 1-based in sowing
/// order); with `--all-moves` the exact value of every opening move.
#[derive(Args, Debug)]
pub struct SolveArgs {
    #[command(flatten)]
    pub rules: RuleArgs,
    #[command(flatten)]
    pub database: DbArgs,
    /// Print one JSON object: {"value", "result", "moves": [{"house", "value"}], "best", "pv",
    /// "nodes", "seconds", ...}.
    #[arg(long)]
    pub json: bool,
    /// Prove the exact value of every opening move.
    #[arg(long)]
    pub all_moves: bool,
    /// `exact`: the exact margin; `sign`: only win, draw or loss (two zero-window probes
    /// around 0); "value" is then -1, 0 or +1.
    #[arg(long, value_enum, default_value = "exact")]
    pub goal: GoalArg,
    /// The value under the pie rule: South plays a whole first turn (extra turns included, until
    /// the turn passes to North); North may then swap sides. North gets the larger of its margin
    /// playing on and South's margin (by swapping), i.e. |M| where M is South's margin with
    /// North playing on; South picks the first turn leaving North the least. Prints South's
    /// margin -min|M| (never above 0) and every first turn with its M (exact for the best ones;
    /// for the others a bound showing them worse).
    #[arg(long, conflicts_with_all = ["all_moves", "goal"])]
    pub pie: bool,
    /// The exact value of every first turn (everything South does before North moves: one
    /// move, or a move that ends in South's store followed by more), and from them the
    /// start's value (the best first turn) and the value under the pie rule (see --pie).
    #[arg(long, conflicts_with_all = ["all_moves", "goal", "pie"])]
    pub first_turns: bool,
    /// With --first-turns: record the result (every first turn's value, the start's value, the
    /// pie rule's value and this command) in the results table FILE (default
    /// data/results.json), replacing the entry of the same game; `kalah results` prints it.
    #[arg(long, value_name = "FILE", requires = "first_turns", num_args = 0..=1,
          default_missing_value = "data/results.json")]
    pub record: Option<PathBuf>,
    /// The transposition table's largest size in MiB (default: a sixteenth of the machine's
    /// memory, 64 to 4096). The table starts at 16 MiB and doubles as the search needs.
    #[arg(long, value_name = "MB", value_parser = super::common::parse_tt_mb)]
    pub tt_mb: Option<usize>,
    /// Search threads (default: every core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// A guess of the value (South's final margin) to start the search from; a good guess
    /// (a known result) saves probes, a bad one costs a few.
    #[arg(long, value_name = "V", allow_hyphen_values = true)]
    pub guess: Option<i32>,
    /// The depth-limited searches that fill the table with good moves before the exact one:
    /// `FIRST,STEP,LAST` (depths FIRST, FIRST+STEP, ... up to LAST), or `off`.
    #[arg(long, value_name = "FIRST,STEP,LAST", value_parser = parse_deepening)]
    pub deepening: Option<(u32, u32, u32)>,
    /// Save what has been proven to FILE every few minutes and on Ctrl-C; continue from FILE
    /// if it exists (same rules and options).
    #[arg(long, value_name = "FILE")]
    pub checkpoint: Option<PathBuf>,
    /// Prove the value even when an opening book holds it (without this flag, a book that
    /// answers the start and every opening move exactly gives the answer at once).
    #[arg(long)]
    pub no_book: bool,
    /// The directory of opening books (`kalah book build`).
    #[arg(long, value_name = "DIR", default_value = super::book::DEFAULT_BOOKS)]
    pub books: PathBuf,
    /// Seconds between checkpoint saves.
    #[arg(long, default_value_t = 300, value_name = "SECS")]
    pub checkpoint_every: u64,
    /// Print a progress line to stderr every SECS seconds, with --json too (default: every
    /// 60 s when stderr is not a terminal and the output is text; 0: never).
    #[arg(long, value_name = "SECS")]
    pub log_every: Option<u64>,
    /// Stop after this many nodes, as if interrupted (saving the checkpoint).
    #[arg(long, value_name = "N")]
    pub node_limit: Option<u64>,
    /// Do not ask for huge pages for the transposition table (they save TLB misses; without
    /// them only the speed changes). For experiments.
    #[arg(long, hide = true)]
    pub tt_no_huge_pages: bool,
    /// Log every probe of the search (thread, depth, window, result, nodes, bounds) on
    /// stderr. For experiments.
    #[arg(long, hide = true)]
    pub trace: bool,
}

/// The search configuration for the flags.
fn config(args: &SolveArgs, endgame: Option<Arc<dyn Endgame>>) -> SearchConfig {
    let mut c = SearchConfig {
        tt_mb: args.tt_mb.unwrap_or_else(default_tt_mb),
        tt_grow: Some(kalah_driver::search::tt::GROW_START_MB),
        endgame,
        guess: args.guess,
        node_limit: args.node_limit,
        checkpoint: args.checkpoint.clone(),
        checkpoint_every: Duration::from_secs(args.checkpoint_every.max(1)),
        tt_huge_pages: !args.tt_no_huge_pages,
        trace: args.trace,
        ..SearchConfig::default()
    };
    if let Some(t) = args.threads {
        c.threads = t.max(1);
    }
    if let Some(d) = args.deepening {
        c.deepening = d;
    }
    c
}

/// `FIRST,STEP,LAST` or `off` (no depth-limited searches).
pub fn parse_deepening(s: &str) -> Result<(u32, u32, u32), String> {
    if s == "off" {
        return Ok((0, 0, 0));
    }
    let p: Vec<&str> = s.split(',').collect();
    let n = |x: &str| {
        x.trim()
            .parse::<u32>()
            .map_err(|_| format!("'{x}' is not a depth (expected FIRST,STEP,LAST or off)"))
    };
    match p[..] {
        [a, b, c] => {
            let (a, b, c) = (n(a)?, n(b)?, n(c)?);
            if a == 0 || b == 0 || a > c || c > 200 {
                return Err("expected 1 <= FIRST <= LAST <= 200 and STEP >= 1".into());
            }
            Ok((a, b, c))
        }
        _ => Err("expected FIRST,STEP,LAST (for example 5,3,17) or off".into()),
    }
}

/// The moves of a principal variation from `pos`, as `S3`, `N1`...
pub fn pv_notation(rules: &Rules, pos: &Position, pv: &[usize]) -> Vec<String> {
    let mut p = *pos;
    pv.iter()
        .map(|&h| {
            let s = format!("{}{}", p.to_move().letter(), h + 1);
            p = p.play(rules, h).0;
            s
        })
        .collect()
}

fn result_word(margin: i32) -> &'static str {
    match margin.signum() {
        1 => "win",
        0 => "draw",
        _ => "loss",
    }
}

fn result_verb(margin: i32) -> &'static str {
    match margin.signum() {
        1 => "wins",
        0 => "draws",
        _ => "loses",
    }
}

/// What the JSON output says about the database: its largest level (0 without one) and the
/// seconds spent opening it (and loading it into memory), which `seconds` does not count.
struct DbFacts {
    seeds: u32,
    load_seconds: f64,
    /// The transposition table's size in MiB at the end of the search.
    table_mib: usize,
}

fn analysis_json(rules: &Rules, db: &DbFacts, goal: GoalArg, a: &Analysis) -> Value {
    let pos = Position::start(rules);
    let best = best_houses(&a.moves, a.value);
    json!({
        "rules": rules_json(rules),
        "goal": match goal { GoalArg::Exact => "exact", GoalArg::Sign => "sign" },
        "value": a.value,
        "result": result_word(a.value),
        "lower": a.lower,
        "upper": a.upper,
        "moves": a.moves.iter().map(|&(h, v)| json!({"house": h + 1, "value": v})).collect::<Vec<_>>(),
        "best": best,
        "pv": pv_notation(rules, &pos, &a.pv),
        "nodes": a.nodes,
        "seconds": a.seconds,
        "nodes_per_second": a.nodes as f64 / a.seconds.max(1e-9),
        "resumed": a.resumed,
        "database_seeds": db.seeds,
        "database_load_seconds": db.load_seconds,
        "table_mib": db.table_mib,
    })
}

/// The start's value from the exact values of every first turn: the best turn's margin, and
/// the turns that reach it.
pub fn best_first_turns(p: &Pie) -> (i32, Vec<usize>) {
    let value = p.turns.iter().map(|t| t.margin).max().unwrap_or(0);
    let best = (0..p.turns.len())
        .filter(|&i| p.turns[i].margin == value)
        .collect();
    (value, best)
}

fn pie_json(rules: &Rules, db: &DbFacts, p: &Pie, first_turns: bool) -> Value {
    let pos = Position::start(rules);
    let notation = |i: &usize| pv_notation(rules, &pos, &p.turns[*i].moves);
    let mut v = json!({
        "rules": rules_json(rules),
        "pie": !first_turns,
        "value": p.value,
        "result": result_word(p.value),
        "turns": p.turns.iter().map(|t| json!({
            "moves": pv_notation(rules, &pos, &t.moves),
            "south_gain": t.south_gain,
            "margin": t.margin,
            "exact": t.exact,
            "north_swaps": t.margin > 0,
        })).collect::<Vec<_>>(),
        "best": p.best.iter().map(notation).collect::<Vec<_>>(),
        "nodes": p.nodes,
        "seconds": p.seconds,
        "nodes_per_second": p.nodes as f64 / p.seconds.max(1e-9),
        "database_seeds": db.seeds,
        "database_load_seconds": db.load_seconds,
        "table_mib": db.table_mib,
    });
    if first_turns {
        // The start's value, from the best first turn; the pie rule's value beside it.
        let (value, best) = best_first_turns(p);
        v["first_turns"] = json!(true);
        v["value"] = json!(value);
        v["result"] = json!(result_word(value));
        v["best"] = json!(best.iter().map(notation).collect::<Vec<_>>());
        v["pie_value"] = json!(p.value);
        v["pie_best"] = json!(p.best.iter().map(notation).collect::<Vec<_>>());
    }
    v
}

/// Runs `kalah solve`.
pub fn run(args: &SolveArgs) -> CliResult {
    let rules = args.rules.rules()?;
    let plain = !args.pie && !args.first_turns && args.goal == GoalArg::Exact;
    if plain && !args.no_book && args.checkpoint.is_none() && from_book(args, &rules)? {
        return Ok(());
    }
    super::common::ensure_start_db(&args.database, &rules, args.json)?;
    let opened = std::time::Instant::now();
    let endgame = open_endgame(
        args.database.db.as_deref(),
        &rules,
        args.database.db_lazy,
        args.database.db_upto,
        Some(Fill {
            evict: args.database.db_huge_pages,
            lock: args.database.db_lock,
            visible: show_progress(args.json),
        }),
    )?;
    let load_seconds = opened.elapsed().as_secs_f64();
    let seeds = endgame.as_ref().map(|e| e.max_seeds()).unwrap_or(0);
    let search = Search::new(rules, config(args, endgame));
    // The table's size when the search is over (it grows with the search).
    let facts = || DbFacts {
        seeds,
        load_seconds,
        table_mib: search.table().bytes_in_use() >> 20,
    };
    let board = Board::start(&rules);
    let visible = show_progress(args.json);
    let bar = spinner(visible);
    let last = std::sync::Mutex::new(None::<Progress>);
    let logged = std::sync::Mutex::new(0.0f64);
    let log_every =
        super::common::log_interval(args.log_every, args.json, std::io::stderr().is_terminal());
    let report = |p: &Progress| {
        bar.set_message(progress_message(p));
        *last.lock().unwrap() = Some(p.clone());
        if super::common::log_due(log_every, &logged, p.seconds) {
            bar.suspend(|| eprintln!("[{:.0} s] {}", p.seconds, progress_message(p)));
        }
    };
    let cancel = cancel_flag();
    if args.pie || args.first_turns {
        let pie = if args.first_turns {
            search.first_turn_values(&board, &report, cancel)
        } else {
            search.pie(&board, &report, cancel)
        };
        finish(&bar, visible, &last.lock().unwrap());
        let pie = pie.map_err(search_error)?;
        if let Some(file) = &args.record {
            record(file, &rules, &pie, seeds)?;
        }
        if args.json {
            println!("{}", pie_json(&rules, &facts(), &pie, args.first_turns));
        } else {
            print_pie(&rules, &facts(), &pie, args.first_turns);
        }
        return Ok(());
    }
    let goal = match args.goal {
        GoalArg::Exact => Goal::Exact,
        GoalArg::Sign => Goal::Sign { around: 0 },
    };
    let result = search.analyse(&board, args.all_moves, goal, &report, cancel);
    finish(&bar, visible, &last.lock().unwrap());
    let a = result.map_err(search_error)?;
    if args.json {
        let mut v = analysis_json(&rules, &facts(), args.goal, &a);
        v["source"] = json!("search");
        println!("{v}");
    } else {
        print_analysis(&rules, args, &facts(), &a);
    }
    Ok(())
}

/// Answers from the opening books when they hold the start and every opening move exactly;
/// returns whether they did.
fn from_book(args: &SolveArgs, rules: &Rules) -> CliResult<bool> {
    let start = std::time::Instant::now();
    let books = super::book::open_books(Some(&args.books), rules)?;
    let board = Board::start(rules);
    let answer = books
        .answer(rules, &board)
        .map_err(super::book::book_error)?;
    let Some(b) = answer.filter(|a| a.exact()) else {
        return Ok(false);
    };
    let pv = books
        .principal_variation(rules, &board, 400)
        .map_err(super::book::book_error)?;
    let moves: Vec<(usize, i32)> = b
        .moves
        .iter()
        .filter(|m| args.all_moves || m.1 == b.lower)
        .map(|m| (m.0, m.1))
        .collect();
    let a = Analysis {
        value: b.lower,
        lower: b.lower,
        upper: b.upper,
        moves,
        pv,
        nodes: 0,
        seconds: start.elapsed().as_secs_f64(),
        resumed: false,
    };
    let facts = DbFacts {
        seeds: 0,
        load_seconds: 0.0,
        table_mib: 0,
    };
    if args.json {
        let mut v = analysis_json(rules, &facts, args.goal, &a);
        v["source"] = json!("book");
        println!("{v}");
    } else {
        print_answer(
            rules,
            args,
            &a,
            "principal variation (as far as the book goes)",
        );
        println!(
            "source: the opening book in {} ({:.3} s); --no-book proves it again",
            args.books.display(),
            a.seconds
        );
    }
    Ok(true)
}

/// Records the first-turn values `p` of the game `rules` in the results table `file`.
fn record(file: &Path, rules: &Rules, p: &Pie, database_seeds: u32) -> CliResult {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let source = results::Source {
        command: format!(
            "kalah solve --houses {} --seeds {} --capture {} --leftover {} --end {} --first-turns",
            rules.houses,
            rules.seeds,
            rules.capture.name(),
            rules.leftover.name(),
            rules.end.name()
        ),
        nodes: p.nodes,
        seconds: p.seconds,
        database_seeds,
        version: env!("CARGO_PKG_VERSION").to_string(),
        date: results::date_of(now),
    };
    let entry = results::Entry::from_first_turns(rules, p, source).map_err(CliError::failure)?;
    let mut table = results::ResultsFile::read(file).map_err(CliError::failure)?;
    table.insert(entry).map_err(CliError::failure)?;
    table.write(file).map_err(CliError::failure)?;
    eprintln!("recorded in {}", file.display());
    Ok(())
}

/// Clears the progress line and, when progress is shown, leaves a summary line on stderr.
fn finish(bar: &ProgressBar, visible: bool, last: &Option<Progress>) {
    bar.finish_and_clear();
    if let (true, Some(p)) = (visible, last) {
        eprintln!(
            "search: {} nodes in {:.1} s ({:.2} Mnodes/s), table {:.0}% full, last bounds [{:+}, {:+}]",
            p.nodes,
            p.seconds,
            p.nodes_per_second / 1e6,
            p.tt_fill * 100.0,
            p.lower,
            p.upper
        );
    }
}

/// The value, best moves, principal variation (labelled `pv_label`) and, with `--all-moves`,
/// every opening move's value.
fn print_answer(rules: &Rules, args: &SolveArgs, a: &Analysis, pv_label: &str) {
    let pos = Position::start(rules);
    println!("rules: {rules}");
    match args.goal {
        GoalArg::Exact => println!(
            "value: {:+} (South's final margin: the first player {}{})",
            a.value,
            result_verb(a.value),
            if a.value == 0 {
                String::new()
            } else {
                format!(" by {}", a.value.abs())
            }
        ),
        GoalArg::Sign => println!(
            "result: the first player {} (margin in [{:+}, {:+}])",
            result_verb(a.value),
            a.lower,
            a.upper
        ),
    }
    let best: Vec<String> = a
        .moves
        .iter()
        .filter(|m| m.1 == a.value)
        .map(|m| (m.0 + 1).to_string())
        .collect();
    println!("best opening move(s): {}", best.join(" "));
    if !a.pv.is_empty() {
        println!("{pv_label}: {}", pv_notation(rules, &pos, &a.pv).join(" "));
    }
    if args.all_moves {
        for &(h, v) in &a.moves {
            println!("  house {}: {v:+}", h + 1);
        }
    }
}

fn print_analysis(rules: &Rules, args: &SolveArgs, db: &DbFacts, a: &Analysis) {
    print_answer(rules, args, a, "principal variation");
    println!(
        "nodes: {} in {:.3} s ({:.2} Mnodes/s){}",
        a.nodes,
        a.seconds,
        a.nodes as f64 / a.seconds.max(1e-9) / 1e6,
        if a.resumed {
            ", resumed from checkpoint"
        } else {
            ""
        }
    );
    print_db(db);
}

/// The database line of the text output.
fn print_db(db: &DbFacts) {
    if db.seeds > 0 {
        println!(
            "database: levels 0..={}, opened in {:.3} s (not counted above)",
            db.seeds, db.load_seconds
        );
    }
}

fn print_pie(rules: &Rules, db: &DbFacts, p: &Pie, first_turns: bool) {
    let pos = Position::start(rules);
    let (value, best) = best_first_turns(p);
    if first_turns {
        println!("rules: {rules}");
        println!(
            "value: {value:+} (South's final margin: the first player {}{})",
            result_verb(value),
            if value == 0 {
                String::new()
            } else {
                format!(" by {}", value.abs())
            }
        );
        println!(
            "value under the pie rule: {:+} (South's final margin when North may swap after \
             South's first turn)",
            p.value
        );
    } else {
        println!("rules: {rules}, with the pie rule");
        println!(
            "value: {:+} (South's final margin when North may swap after South's first turn)",
            p.value
        );
    }
    for (i, t) in p.turns.iter().enumerate() {
        let mut marks = Vec::new();
        if first_turns && best.contains(&i) {
            marks.push("best");
        }
        if t.exact && t.margin.abs() == -p.value {
            marks.push(if first_turns { "pie" } else { "best" });
        }
        println!(
            "  first turn {:<16} South's margin{}: {}{:+}{}",
            pv_notation(rules, &pos, &t.moves).join(" "),
            if first_turns {
                ""
            } else {
                " if North plays on"
            },
            match (t.exact, t.margin > 0) {
                (true, _) => "",
                (false, true) => "at least ",
                (false, false) => "at most ",
            },
            t.margin,
            if marks.is_empty() {
                String::new()
            } else {
                format!("  {}", marks.join(", "))
            }
        );
    }
    println!(
        "nodes: {} in {:.3} s ({:.2} Mnodes/s)",
        p.nodes,
        p.seconds,
        p.nodes as f64 / p.seconds.max(1e-9) / 1e6
    );
    print_db(db);
}
