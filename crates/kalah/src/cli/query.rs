//! `kalah query`: the value of a position and of each of its moves.

use super::common::{
    best_houses, cancel_flag, db_dir, read_position, show_progress, spinner, CliError, CliResult,
    RuleArgs, EXIT_USAGE,
};
use super::solve::{open_endgame, search_error};
use clap::Args;
use kalah_driver::book::Books;
use kalah_driver::{Search, SearchConfig};
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
    /// The transposition table's largest size in MiB, for positions larger than the database
    /// (it starts at 16 MiB and doubles as the search needs).
    #[arg(long, default_value_t = 256, value_name = "MB", value_parser = super::common::parse_tt_mb)]
    pub tt_mb: usize,
    /// Without --db: first make sure the default database `data/db/<rules>` holds every level
    /// up to N seeds (default: the size that makes the run fastest for the position, said on
    /// stderr; 0: build nothing).
    #[arg(long, value_name = "N")]
    pub build_upto: Option<u32>,
    /// Seconds a search may take for one position; when they run out, the bounds proven so
    /// far are printed (`"source": "bounds"`) instead of exact values.
    #[arg(long, default_value_t = 60.0, value_name = "SECS")]
    pub budget: f64,
    /// The directory of opening books (`kalah book build`), asked first.
    #[arg(long, value_name = "DIR", default_value = super::book::DEFAULT_BOOKS)]
    pub books: PathBuf,
    /// Ask no opening book.
    #[arg(long)]
    pub no_book: bool,
}

/// Where values come from: the database for positions that fit in it, the search (over the
/// database) for larger ones. The search and its table are made on first use and kept for
/// every later position.
pub struct Solver {
    rules: Rules,
    db: Option<Database>,
    tt_mb: usize,
    json: bool,
    budget: std::time::Duration,
    books: Books,
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
            budget: std::time::Duration::from_secs(60),
            books: Books::none(),
            search: OnceLock::new(),
        }
    }

    /// Answers from these opening books first.
    pub fn with_books(mut self, books: Books) -> Solver {
        self.books = books;
        self
    }

    /// Sets the time a search may take for one position.
    pub fn with_budget(mut self, secs: f64) -> Solver {
        self.budget = std::time::Duration::from_secs_f64(secs.clamp(0.0, 1e9));
        self
    }

    /// The search, made on first use over the database decoded into memory (a search
    /// probes at random, which block reads serve badly).
    fn search(&self) -> CliResult<&Search> {
        if let Some(search) = self.search.get() {
            return Ok(search);
        }
        let endgame = match &self.db {
            Some(db) => open_endgame(Some(db.dir()), &self.rules, false, None, None)?,
            None => None,
        };
        let search = Search::new(
            self.rules,
            SearchConfig {
                tt_mb: self.tt_mb,
                tt_grow: Some(kalah_driver::search::tt::GROW_START_MB),
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
    /// Value for the player to move (the lower bound when `bounds` is set).
    pub value: i32,
    /// (0-based house, value) for every legal move (lower bounds when `bounds` is set).
    pub moves: Vec<(usize, i32)>,
    /// Where the values came from.
    pub source: &'static str,
    /// When the search's budget ran out: the proven upper bound of the position and of each
    /// move (lower bounds are `value` and `moves`).
    pub bounds: Option<(i32, Vec<i32>)>,
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
            bounds: None,
        });
    }
    let covered = db.is_some_and(|db| board.seeds() <= db.max_seeds());
    if let Some(a) = solver
        .books
        .answer(rules, board)
        .map_err(super::book::book_error)?
        .filter(|a| a.exact() || !covered)
    {
        let exact = a.exact();
        return Ok(Answer {
            value: a.lower,
            moves: a.moves.iter().map(|m| (m.0, m.1)).collect(),
            source: "book",
            bounds: (!exact).then(|| (a.upper, a.moves.iter().map(|m| m.2).collect())),
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
            bounds: None,
        });
    }
    // Larger than the database: the proving search, over the database, move by move, within
    // the budget; what is not proven by then is reported as bounds.
    let search = solver.search()?;
    if !solver.json {
        eprintln!(
            "searching: {} seeds on the board, more than the database holds ({}); at most {:.0} s, then the bounds proven",
            board.seeds(),
            solver.db.as_ref().map(|d| d.max_seeds().to_string()).unwrap_or_else(|| "no database".into()),
            solver.budget.as_secs_f64()
        );
    }
    let bar = spinner(show_progress(solver.json));
    let deadline = Instant::now() + solver.budget;
    let legal: Vec<usize> = board.legal_houses().collect();
    let mut moves = Vec::new();
    let mut uppers = Vec::new();
    for (i, &h) in legal.iter().enumerate() {
        bar.set_message(format!("move {} ({}/{})", h + 1, i + 1, legal.len()));
        let s = board.sow(rules, h);
        let child = s.next();
        let stop = std::sync::atomic::AtomicBool::new(false);
        let done = std::sync::atomic::AtomicBool::new(false);
        let r = std::thread::scope(|scope| {
            let timer = scope.spawn(|| {
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    if Instant::now() >= deadline
                        || cancel_flag().load(std::sync::atomic::Ordering::Relaxed)
                    {
                        stop.store(true, std::sync::atomic::Ordering::Relaxed);
                        return;
                    }
                    std::thread::park_timeout(std::time::Duration::from_millis(20));
                }
            });
            let r = search.bounds(&child, &stop);
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            timer.thread().unpark();
            r
        });
        if cancel_flag().load(std::sync::atomic::Ordering::Relaxed) {
            bar.finish_and_clear();
            return Err(CliError {
                code: super::common::EXIT_INTERRUPTED,
                message: "interrupted".into(),
            });
        }
        let (lo, hi, _) = r.map_err(search_error)?;
        let gain = s.gain as i32;
        let (lower, upper) = if s.extra_turn {
            (gain + lo, gain + hi)
        } else {
            (gain - hi, gain - lo)
        };
        moves.push((h, lower));
        uppers.push(upper);
    }
    bar.finish_and_clear();
    let value = moves.iter().map(|m| m.1).max().unwrap();
    let upper = uppers.iter().copied().max().unwrap();
    let exact = value == upper && moves.iter().zip(&uppers).all(|(m, &u)| m.1 == u);
    Ok(Answer {
        value,
        moves,
        source: if exact { "search" } else { "bounds" },
        bounds: (!exact).then_some((upper, uppers)),
    })
}

fn to_json(pos: &Position, answer: &Answer, seconds: f64) -> Value {
    if let Some((upper, uppers)) = &answer.bounds {
        return json!({
            "position": pos.full(),
            "to_move": pos.to_move().name(),
            "value": null,
            "lower": answer.value,
            "upper": upper,
            "margin": null,
            "over": false,
            "moves": answer.moves.iter().zip(uppers).map(|(&(h, lo), &hi)| json!({
                "house": h + 1,
                "value": (lo == hi).then_some(lo),
                "lower": lo,
                "upper": hi,
            })).collect::<Vec<_>>(),
            "best": [],
            "source": answer.source,
            "seconds": seconds,
        });
    }
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
    if let Some((upper, uppers)) = &answer.bounds {
        println!("position: {}", pos.full());
        let why = if answer.source == "book" {
            "proven bounds from the opening book"
        } else {
            "the search's budget ran out; --budget SECS for more"
        };
        if answer.value == *upper {
            println!("value for {who} (to move): {upper:+} ({why}; some moves have bounds only)");
        } else {
            println!(
                "value for {who} (to move): between {:+} and {upper:+} ({why})",
                answer.value
            );
        }
        for (&(h, lo), &hi) in answer.moves.iter().zip(uppers) {
            if lo == hi {
                println!("  house {}: {lo:+}", h + 1);
            } else {
                println!("  house {}: {lo:+} to {hi:+}", h + 1);
            }
        }
        return;
    }
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
    let books = if args.no_book {
        Books::none()
    } else {
        super::book::open_books(Some(&args.books), &rules)?
    };
    // A position the book answers needs no database: nothing is built for it.
    let in_book = match &args.position {
        Some(text) => books
            .answer(&rules, &read_position(text, &rules)?.board())
            .map_err(super::book::book_error)?
            .is_some(),
        None => false,
    };
    if !in_book && (args.db.is_none() || args.build_upto.is_some()) {
        // The database the position needs, of the size that makes the run fastest (a position
        // that cannot be read is refused before anything is built).
        let seeds = match &args.position {
            Some(text) => read_position(text, &rules)?.board().seeds(),
            None => rules.seeds * 2 * rules.houses as u32,
        };
        super::common::ensure_db(args.db.as_deref(), &rules, seeds, args.build_upto, json)?;
    }
    let solver = Solver::new(rules, open_db(&args.db, &rules)?, args.tt_mb, json)
        .with_budget(args.budget)
        .with_books(books);
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
