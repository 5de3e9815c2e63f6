//! `kalah query`: the value of a position and of each of its moves.

use super::common::{
    best_houses, cancel_flag, db_dir, read_position, show_progress, spinner, CliError, CliResult,
    RuleArgs, EXIT_USAGE,
};
use super::engine::{open_endgame, search_error};
use clap::Args;
use kalah_driver::analyse::{AnalyseError, Analyser, Answer, SearchSource, Source, Step};
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

impl SearchSource for &Solver {
    fn search(&mut self) -> Result<&Search, AnalyseError> {
        Solver::search(self).map_err(|e| AnalyseError::NoSearch(e.message))
    }
}

fn analyse_error(e: AnalyseError) -> CliError {
    match e {
        AnalyseError::Book(e) => super::book::book_error(e),
        AnalyseError::Search(e) => search_error(e),
        AnalyseError::Interrupted => CliError {
            code: super::common::EXIT_INTERRUPTED,
            message: "interrupted".into(),
        },
        e => CliError::failure(e.to_string()),
    }
}

/// The value of a board and of each of its moves: the book, the database, or the search over
/// the database within the budget (a spinner on stderr while it searches); and, for an answer
/// from the books or the database, the best line (0-based houses) as far as they reach.
pub fn analyse(solver: &Solver, board: &Board) -> CliResult<(Answer, Vec<usize>)> {
    let deadline = Instant::now() + solver.budget;
    let bar = spinner(show_progress(solver.json));
    let mut told = false;
    let mut on_search = |step: Step| {
        if !told && !solver.json {
            eprintln!(
                "searching: {} seeds on the board, more than the database holds ({}); at most {:.0} s, then the bounds proven",
                board.seeds(),
                solver.db.as_ref().map(|d| d.max_seeds().to_string()).unwrap_or_else(|| "no database".into()),
                solver.budget.as_secs_f64()
            );
        }
        told = true;
        bar.set_message(format!(
            "move {} ({}/{})",
            step.house + 1,
            step.index + 1,
            step.of
        ));
    };
    let analyser = Analyser {
        rules: &solver.rules,
        books: &solver.books,
        db: solver.db.as_ref(),
    };
    let r = analyser.analyse(
        board,
        &mut &*solver,
        deadline,
        cancel_flag(),
        &mut on_search,
    );
    bar.finish_and_clear();
    let answer = r.map_err(analyse_error)?;
    let line = analyser
        .best_line(board, &answer, 400)
        .map_err(analyse_error)?;
    Ok((answer, line))
}

fn to_json(rules: &Rules, pos: &Position, answer: &Answer, line: &[usize], seconds: f64) -> Value {
    if !answer.exact() {
        return json!({
            "position": pos.full(),
            "to_move": pos.to_move().name(),
            "value": null,
            "lower": answer.lower,
            "upper": answer.upper,
            "margin": null,
            "over": false,
            "moves": answer.moves.iter().map(|m| json!({
                "house": m.house + 1,
                "value": (m.lower == m.upper).then_some(m.lower),
                "lower": m.lower,
                "upper": m.upper,
            })).collect::<Vec<_>>(),
            "best": [],
            "source": answer.source.name(),
            "seconds": seconds,
        });
    }
    let values: Vec<(usize, i32)> = answer.moves.iter().map(|m| (m.house, m.lower)).collect();
    json!({
        "position": pos.full(),
        "to_move": pos.to_move().name(),
        "value": answer.lower,
        "margin": answer.lower + pos.store_lead(),
        "over": answer.moves.is_empty(),
        "moves": values.iter().map(|&(h, v)| json!({"house": h + 1, "value": v})).collect::<Vec<_>>(),
        "best": best_houses(&values, answer.lower),
        "pv": super::solve::pv_notation(rules, pos, line),
        "source": answer.source.name(),
        "seconds": seconds,
    })
}

fn print_text(rules: &Rules, pos: &Position, answer: &Answer, line: &[usize]) {
    let who = pos.to_move().name();
    println!("position: {}", pos.full());
    if !answer.exact() {
        let why = if answer.source == Source::Book {
            "proven bounds from the opening book"
        } else {
            "the search's budget ran out; --budget SECS for more"
        };
        if answer.lower == answer.upper {
            println!(
                "value for {who} (to move): {:+} ({why}; some moves have bounds only)",
                answer.upper
            );
        } else {
            println!(
                "value for {who} (to move): between {:+} and {:+} ({why})",
                answer.lower, answer.upper
            );
        }
        for m in &answer.moves {
            if m.lower == m.upper {
                println!("  house {}: {:+}", m.house + 1, m.lower);
            } else {
                println!("  house {}: {:+} to {:+}", m.house + 1, m.lower, m.upper);
            }
        }
        return;
    }
    if answer.moves.is_empty() {
        println!(
            "game over: value {:+} for {who} (seeds left settled), final margin {:+}",
            answer.lower,
            answer.lower + pos.store_lead()
        );
        return;
    }
    println!(
        "value for {who} (to move): {:+}   final margin ({who} - {}): {:+}   [{}]",
        answer.lower,
        pos.to_move().other().name(),
        answer.lower + pos.store_lead(),
        answer.source.name()
    );
    for m in &answer.moves {
        let mark = if m.lower == answer.lower {
            "  best"
        } else {
            ""
        };
        println!("  house {}: {:+}{mark}", m.house + 1, m.lower);
    }
    if !line.is_empty() {
        let what = if answer.source == Source::Book {
            "as far as the books go"
        } else {
            "to the end of the game"
        };
        println!(
            "best line ({what}): {}",
            super::solve::pv_notation(rules, pos, line).join(" ")
        );
    }
}

fn one(solver: &Solver, text: &str) -> CliResult<Value> {
    let pos = read_position(text, &solver.rules)?;
    let start = Instant::now();
    let (answer, line) = analyse(solver, &pos.board())?;
    Ok(to_json(
        &solver.rules,
        &pos,
        &answer,
        &line,
        start.elapsed().as_secs_f64(),
    ))
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
        let (answer, line) = analyse(&solver, &pos.board())?;
        if args.json {
            let seconds = start.elapsed().as_secs_f64();
            println!("{}", to_json(&rules, &pos, &answer, &line, seconds));
        } else {
            print_text(&rules, &pos, &answer, &line);
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
