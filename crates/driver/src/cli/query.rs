//! `kalah query`: the value of a position and of each of its moves.

use super::common::{
    best_houses, cancel_flag, db_dir, read_position, show_progress, spinner, CliError, CliResult,
    RuleArgs, EXIT_USAGE,
};
use super::solve::{open_endgame, progress_message, search_error};
use clap::Args;
use kalah_driver::{Goal, Search, SearchConfig};
use kalah_solver::db::Database;
use kalah_solver::{Board, Endgame, Position, Rules};
use serde_json::{json, Value};
use std::io::BufRead;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Instant;

/// Arguments of `kalah query`.
#[derive(Args, Debug)]
pub struct QueryArgs {
    /// The position, short form (mover first) or full form (see README). Without it, one
    /// position per line is read from standard input and one JSON line printed for each.
    pub position: Option<String>,
    #[command(flatten)]
    pub rules: RuleArgs,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// The endgame database directory (default `data/db/<rules>`, used when it exists).
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Transposition table size in MiB, for positions larger than the database.
    #[arg(long, default_value_t = 256)]
    pub tt_mb: usize,
}

/// Where values come from: the database for positions that fit in it, the search (over the
/// database) for larger ones. The search and its table are made on first use and kept for
/// every later position.
pub struct Solver {
    rules: Rules,
    db: Option<Database>,
    tt_mb: usize,
    json: bool,
    search: OnceLock<Search>,
}

impl Solver {
    /// A solver for `rules` over an optional database.
    pub fn new(rules: Rules, db: Option<Database>, tt_mb: usize, json: bool) -> Solver {
        Solver {
            rules,
            db,
            tt_mb,
            json,
            search: OnceLock::new(),
        }
    }

    /// The search, made on first use over the database decoded into memory (a search
    /// probes at random, which block reads serve badly).
    fn search(&self) -> CliResult<&Search> {
        if let Some(search) = self.search.get() {
            return Ok(search);
        }
        let endgame = match &self.db {
            Some(db) => open_endgame(Some(db.dir()), &self.rules, false, None)?,
            None => None,
        };
        let search = Search::new(
            self.rules,
            SearchConfig {
                tt_mb: self.tt_mb,
                endgame,
                ..SearchConfig::default()
            },
        );
        Ok(self.search.get_or_init(|| search))
    }
}

/// Opens the database named by `--db`, or the default one for the rules when it exists.
pub fn open_db(db: &Option<PathBuf>, rules: &Rules) -> CliResult<Option<Database>> {
    match db_dir(db.as_deref(), rules) {
        Some(dir) => Ok(Some(Database::open(&dir, rules)?)),
        None => Ok(None),
    }
}

/// The answer for one position.
pub struct Answer {
    /// Value for the player to move.
    pub value: i32,
    /// (0-based house, value) for every legal move.
    pub moves: Vec<(usize, i32)>,
    /// Where the values came from.
    pub source: &'static str,
}

/// Computes the value of a board and of each of its moves.
pub fn analyse(solver: &Solver, board: &Board) -> CliResult<Answer> {
    let rules = &solver.rules;
    let db = solver.db.as_ref();
    if let Some(v) = board.final_value(rules) {
        return Ok(Answer {
            value: v,
            moves: Vec::new(),
            source: "final",
        });
    }
    if let Some(db) = db.filter(|db| board.seeds() <= db.max_seeds()) {
        let probe = |b: &Board| -> CliResult<i32> {
            db.probe(b)?.ok_or_else(|| {
                CliError::failure(format!("{}: no value for {b}", db.dir().display()))
            })
        };
        let value = probe(board)?;
        let mut moves = Vec::new();
        for h in board.legal_houses() {
            let s = board.sow(rules, h);
            moves.push((h, s.value_with(probe(&s.next())?)));
        }
        // The stored value must be the best move's value: anything else is a damaged database.
        if moves.iter().map(|m| m.1).max() != Some(value) {
            return Err(CliError::failure(format!(
                "{}: the stored value of {board} disagrees with its moves; run `kalah db verify --full`",
                db.dir().display()
            )));
        }
        return Ok(Answer {
            value,
            moves,
            source: "database",
        });
    }
    // Larger than the database: the proving search, over the database.
    let bar = spinner(show_progress(solver.json));
    let analysis = solver.search()?.analyse(
        board,
        true,
        Goal::Exact,
        &|p| bar.set_message(progress_message(p)),
        cancel_flag(),
    );
    bar.finish_and_clear();
    let analysis = analysis.map_err(search_error)?;
    Ok(Answer {
        value: analysis.value,
        moves: analysis.moves,
        source: "search",
    })
}

fn to_json(pos: &Position, answer: &Answer, seconds: f64) -> Value {
    let best = best_houses(&answer.moves, answer.value);
    json!({
        "position": pos.full(),
        "to_move": pos.to_move().name(),
        "value": answer.value,
        "margin": answer.value + pos.store_lead(),
        "over": answer.moves.is_empty(),
        "moves": answer.moves.iter().map(|&(h, v)| json!({"house": h + 1, "value": v})).collect::<Vec<_>>(),
        "best": best,
        "source": answer.source,
        "seconds": seconds,
    })
}

fn print_text(pos: &Position, answer: &Answer) {
    let who = pos.to_move().name();
    println!("position: {}", pos.full());
    if answer.moves.is_empty() {
        println!(
            "game over: value {:+} for {who} (seeds left settled), final margin {:+}",
            answer.value,
            answer.value + pos.store_lead()
        );
        return;
    }
    println!(
        "value for {who} (to move): {:+}   final margin ({who} - {}): {:+}   [{}]",
        answer.value,
        pos.to_move().other().name(),
        answer.value + pos.store_lead(),
        answer.source
    );
    for &(h, v) in &answer.moves {
        let mark = if v == answer.value { "  best" } else { "" };
        println!("  house {}: {v:+}{mark}", h + 1);
    }
}

fn one(solver: &Solver, text: &str) -> CliResult<Value> {
    let pos = read_position(text, &solver.rules)?;
    let start = Instant::now();
    let answer = analyse(solver, &pos.board())?;
    Ok(to_json(&pos, &answer, start.elapsed().as_secs_f64()))
}

/// `kalah query`.
pub fn run(args: &QueryArgs) -> CliResult {
    let rules = args.rules.rules()?;
    let json = args.json || args.position.is_none();
    let solver = Solver::new(rules, open_db(&args.db, &rules)?, args.tt_mb, json);
    if let Some(text) = &args.position {
        let pos = read_position(text, &rules)?;
        let start = Instant::now();
        let answer = analyse(&solver, &pos.board())?;
        if args.json {
            println!("{}", to_json(&pos, &answer, start.elapsed().as_secs_f64()));
        } else {
            print_text(&pos, &answer);
        }
        return Ok(());
    }
    // One position per line from standard input, one JSON line each.
    let mut bad = 0usize;
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| CliError::failure(format!("reading standard input: {e}")))?;
        let text = line.trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        match one(&solver, text) {
            Ok(v) => println!("{v}"),
            Err(e) if e.code == EXIT_USAGE => {
                bad += 1;
                println!("{}", json!({"input": text, "error": e.message}));
            }
            Err(e) => return Err(e),
        }
    }
    if bad > 0 {
        return Err(CliError::usage(format!(
            "{bad} line(s) of standard input could not be read as positions"
        )));
    }
    Ok(())
}
