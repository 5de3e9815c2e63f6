//! `kalah book build|info|verify`: opening books (see the `book` module of the library).

use super::common::{
    cancel_flag, log_due, log_interval, progress_bar, show_progress, CliError, CliResult, DbArgs,
    RuleArgs, EXIT_INTERRUPTED,
};
use super::engine::open_endgame;
use clap::{Args, Subcommand};
use kalah_driver::book::{self, Book, BookError, Books, Fact, Measure};
use kalah_driver::results::{ledger_summary, ResultsFile};
use kalah_driver::{Goal, Search, SearchConfig, SearchError};
use kalah_solver::{Board, Rules};
use serde_json::json;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The directory of the committed books.
pub const DEFAULT_BOOKS: &str = "data/books";

/// Arguments of `kalah book`.
#[derive(Args, Debug)]
pub struct BookArgs {
    #[command(subcommand)]
    pub command: BookCommand,
}

/// The subcommands of `kalah book`.
#[derive(Subcommand, Debug)]
pub enum BookCommand {
    /// Make the opening book of a game: the recorded first-turn values (data/results.json),
    /// the bounds of its proof ledger (data/proofs), and with --plies P the exact value of
    /// every position within P moves of the start (searched; resumable).
    Build(BuildArgs),
    /// What a book holds: game, plies, entries, exact values and bounds, what it was made from.
    Info(InfoArgs),
    /// Checks a book: every entry against its moves, and a random sample of entries against
    /// fresh searches (exit status 1 on any disagreement).
    Verify(VerifyArgs),
}

/// Arguments of `kalah book build`.
#[derive(Args, Debug)]
pub struct BuildArgs {
    #[command(flatten)]
    pub rules: RuleArgs,
    #[command(flatten)]
    pub database: DbArgs,
    /// Every position within P moves (sowings) of the start gets its exact value; 0: only
    /// what the results file and the ledgers say.
    #[arg(long, default_value_t = 0, value_name = "P")]
    pub plies: u8,
    /// The book file (default `data/books/<houses>x<seeds>-<rules>.kbook`).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// The recorded results whose first-turn values go into the book ("none" for none).
    #[arg(long, value_name = "FILE", default_value = "data/results.json")]
    pub results: PathBuf,
    /// The directory of proof ledgers whose bounds go into the book ("none" for none).
    #[arg(long, value_name = "DIR", default_value = "data/proofs")]
    pub proofs: PathBuf,
    /// Threads of the search.
    #[arg(long)]
    pub threads: Option<usize>,
    /// The search's largest table in MiB.
    #[arg(long, default_value_t = 1024, value_name = "MB", value_parser = super::common::parse_tt_mb)]
    pub tt_mb: usize,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Seconds between progress lines on stderr when no progress bar is drawn (0: none).
    #[arg(long, value_name = "SECS")]
    pub log_every: Option<u64>,
}

/// Arguments of `kalah book info`.
#[derive(Args, Debug)]
pub struct InfoArgs {
    /// The book file.
    pub file: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `kalah book verify`.
#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The book file.
    pub file: PathBuf,
    /// Exact entries searched again, each with a fresh search (chosen at random).
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub sample: usize,
    /// The seed of the random choice (default: from the clock, printed).
    #[arg(long)]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub database: DbArgs,
    /// Threads of each search.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Each search's largest table in MiB.
    #[arg(long, default_value_t = 1024, value_name = "MB", value_parser = super::common::parse_tt_mb)]
    pub tt_mb: usize,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `kalah book ...`.
pub fn run(args: &BookArgs) -> CliResult {
    match &args.command {
        BookCommand::Build(a) => build(a),
        BookCommand::Info(a) => info(a),
        BookCommand::Verify(a) => verify(a),
    }
}

/// A book error as the CLI reports it: an interruption exits with 130, a damaged or
/// contradictory book with 1.
pub fn book_error(e: BookError) -> CliError {
    match e {
        BookError::Search(SearchError::Interrupted { .. }) => CliError {
            code: EXIT_INTERRUPTED,
            message: format!(
                "{e}; the positions valued so far are kept (run the same command again to go on)"
            ),
        },
        e => CliError::failure(e.to_string()),
    }
}

/// The book file of `rules` in the default directory.
pub fn default_book(rules: &Rules) -> PathBuf {
    Path::new(DEFAULT_BOOKS).join(book::file_name(rules))
}

/// The books of `rules` in `dir` (none when `dir` is None or does not exist).
pub fn open_books(dir: Option<&Path>, rules: &Rules) -> CliResult<Books> {
    match dir {
        Some(d) => Books::open_dir(d, rules).map_err(|e| CliError::failure(e.to_string())),
        None => Ok(Books::none()),
    }
}

/// What the results file and the ledgers say about the game `rules`.
fn facts(args: &BuildArgs, rules: &Rules) -> CliResult<(Vec<Fact>, Vec<String>)> {
    let mut facts = Vec::new();
    let mut sources = Vec::new();
    if args.results.as_os_str() != "none" && args.results.exists() {
        let file = ResultsFile::read(&args.results).map_err(CliError::failure)?;
        if let Some(e) = file.get(rules) {
            let what = format!("{} ({})", args.results.display(), e.source.command);
            for t in &e.turns {
                facts.push(Fact {
                    measure: Measure::Margin,
                    moves: t.moves.iter().map(|h| h - 1).collect(),
                    lower: t.margin,
                    upper: t.margin,
                    source: what.clone(),
                });
            }
            sources.push(format!(
                "every first turn from {} ({}, {})",
                args.results.display(),
                e.source.command,
                e.source.date
            ));
        }
    }
    if args.proofs.as_os_str() != "none" && args.proofs.is_dir() {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(&args.proofs)
            .map_err(|e| CliError::failure(format!("{}: {e}", args.proofs.display())))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join("ledger.jsonl").exists())
            .collect();
        dirs.sort();
        for dir in dirs {
            let s = ledger_summary(&dir).map_err(CliError::failure)?;
            if s.rules != *rules {
                continue;
            }
            let what = format!("ledger {}", dir.display());
            facts.push(Fact {
                measure: Measure::Margin,
                moves: vec![],
                lower: s.lower,
                upper: s.upper,
                source: what.clone(),
            });
            for &(h, lo, hi) in &s.openings {
                facts.push(Fact {
                    measure: Measure::Margin,
                    moves: vec![h - 1],
                    lower: lo,
                    upper: hi,
                    source: what.clone(),
                });
            }
            for (m, lo, hi) in &s.turns {
                facts.push(Fact {
                    measure: Measure::Margin,
                    moves: m.iter().map(|h| h - 1).collect(),
                    lower: *lo,
                    upper: *hi,
                    source: what.clone(),
                });
            }
            // Every proven unit: a bound on the value of its position.
            let contents = kalah_driver::prove::ledger::read(&dir).map_err(CliError::failure)?;
            for (line, r) in &contents.records {
                let kalah_driver::prove::ledger::Record::Unit(u) = r else {
                    continue;
                };
                let s = u.board.seeds() as i32;
                let (lower, upper) = match u.verdict {
                    kalah_driver::prove::ledger::Verdict::AtLeast => (u.threshold, s),
                    kalah_driver::prove::ledger::Verdict::Below => (-s, u.threshold - 1),
                    kalah_driver::prove::ledger::Verdict::Open => continue,
                };
                let mut pos = kalah_solver::Position::start(rules);
                for &h in &u.path {
                    if h >= rules.houses || pos.board().mover()[h] == 0 {
                        break;
                    }
                    pos = pos.play(rules, h).0;
                }
                if pos.board() != u.board {
                    return Err(CliError::failure(format!(
                        "{}, line {line}: the unit's moves do not lead to its board {}",
                        dir.display(),
                        u.board
                    )));
                }
                facts.push(Fact {
                    moves: u.path.clone(),
                    measure: Measure::Value,
                    lower: lower.max(-s),
                    upper: upper.min(s),
                    source: format!("{what}, line {line}"),
                });
            }
            sources.push(format!(
                "the bounds of the ledger {} ({} proven units)",
                dir.display(),
                s.units
            ));
        }
    }
    Ok((facts, sources))
}

/// A search over the database flags (made only when a search is needed).
fn make_search(
    database: &DbArgs,
    rules: &Rules,
    threads: Option<usize>,
    tt_mb: usize,
    json: bool,
) -> CliResult<Search> {
    super::common::ensure_start_db(database, rules, json)?;
    let endgame = open_endgame(
        database.db.as_deref(),
        rules,
        database.db_lazy,
        database.db_upto,
        None,
    )?;
    let mut c = SearchConfig {
        tt_mb,
        tt_grow: Some(kalah_driver::search::tt::GROW_START_MB),
        endgame,
        ..SearchConfig::default()
    };
    if let Some(t) = threads {
        c.threads = t.max(1);
    }
    Ok(Search::new(*rules, c))
}

fn build(args: &BuildArgs) -> CliResult {
    let rules = args.rules.rules()?;
    let out = args.out.clone().unwrap_or_else(|| default_book(&rules));
    let (facts, sources) = facts(args, &rules)?;
    let search = if args.plies > 0 {
        Some(make_search(
            &args.database,
            &rules,
            args.threads,
            args.tt_mb,
            args.json,
        )?)
    } else {
        None
    };
    let mut note = sources.clone();
    if args.plies > 0 {
        note.push(format!(
            "every position within {} moves of the start searched (kalah {} book build --plies {})",
            args.plies,
            env!("CARGO_PKG_VERSION"),
            args.plies
        ));
    }
    if note.is_empty() {
        return Err(CliError::usage(format!(
            "nothing to put in a book of {rules}: no recorded result in {}, no ledger of this game in {}, and --plies 0",
            args.results.display(),
            args.proofs.display()
        )));
    }
    if let Some(d) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(d)
            .map_err(|e| CliError::failure(format!("{}: {e}", d.display())))?;
    }
    let partial = PathBuf::from(format!("{}.partial", out.display()));
    let start = Instant::now();
    let visible = show_progress(args.json);
    let bar = progress_bar(
        0,
        "[{elapsed_precise}] {bar:30} {pos}/{len} positions searched, {msg}",
        visible,
    );
    let log_every = log_interval(args.log_every, args.json, std::io::stderr().is_terminal());
    let logged = std::sync::Mutex::new(0.0f64);
    let progress = |p: &book::BuildProgress| {
        bar.set_length(p.total as u64);
        bar.set_position(p.done as u64);
        bar.set_message(format!("{:.1} M nodes", p.nodes as f64 / 1e6));
        let secs = start.elapsed().as_secs_f64();
        if log_due(log_every, &logged, secs) {
            bar.suspend(|| {
                eprintln!(
                    "[{secs:.0} s] {}/{} positions at the last ply valued, {:.1} M nodes",
                    p.done,
                    p.total,
                    p.nodes as f64 / 1e6
                )
            });
        }
    };
    let r = book::build(
        &rules,
        args.plies,
        &facts,
        search.as_ref(),
        Some(&partial),
        &note.join("; "),
        &progress,
        cancel_flag(),
    );
    bar.finish_and_clear();
    let (b, nodes) = r.map_err(book_error)?;
    b.write(&out).map_err(book_error)?;
    let bytes = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
    let seconds = start.elapsed().as_secs_f64();
    if args.json {
        println!(
            "{}",
            json!({
                "file": out.display().to_string(),
                "rules": super::engine::rules_json(&rules),
                "plies": args.plies,
                "entries": b.len(),
                "exact": b.exact(),
                "bytes": bytes,
                "nodes": nodes,
                "seconds": seconds,
                "sources": sources,
            })
        );
    } else {
        println!(
            "{}: {} positions ({} exact, {} bounds), {} bytes; {:.1} M nodes in {seconds:.1} s",
            out.display(),
            b.len(),
            b.exact(),
            b.len() - b.exact(),
            bytes,
            nodes as f64 / 1e6
        );
        for s in &note {
            println!("  from {s}");
        }
    }
    Ok(())
}

fn open(file: &Path) -> CliResult<Book> {
    Book::open(file).map_err(|e| match e {
        BookError::Io(..) => CliError::usage(e.to_string()),
        e => CliError::failure(e.to_string()),
    })
}

fn info(args: &InfoArgs) -> CliResult {
    let b = open(&args.file)?;
    let checked = b.check_consistent().map_err(book_error)?;
    let bytes = std::fs::metadata(&args.file).map(|m| m.len()).unwrap_or(0);
    let rules = b.rules();
    let start = Board::start(&rules);
    let answer = Books::from_books(vec![b.clone()])
        .answer(&rules, &start)
        .map_err(book_error)?;
    if args.json {
        println!(
            "{}",
            json!({
                "file": args.file.display().to_string(),
                "rules": super::engine::rules_json(&rules),
                "plies": b.plies(),
                "entries": b.len(),
                "exact": b.exact(),
                "bytes": bytes,
                "consistent": checked,
                "start": answer.as_ref().map(|a| json!({
                    "lower": a.lower, "upper": a.upper,
                    "moves": a.moves.iter().map(|&(h, lo, hi)| json!({"house": h + 1, "lower": lo, "upper": hi})).collect::<Vec<_>>(),
                })),
                "note": b.note(),
            })
        );
        return Ok(());
    }
    println!("{}", args.file.display());
    println!("  game: {rules}");
    println!(
        "  {} positions: {} exact, {} with bounds; {} bytes",
        b.len(),
        b.exact(),
        b.len() - b.exact(),
        bytes
    );
    if b.plies() > 0 {
        println!(
            "  every position within {} moves of the start is exact",
            b.plies()
        );
    }
    println!("  {checked} positions checked against their moves: consistent");
    if let Some(a) = answer {
        let range = |lo: i32, hi: i32| {
            if lo == hi {
                format!("{lo:+}")
            } else {
                format!("{lo:+}..{hi:+}")
            }
        };
        let moves: Vec<String> = a
            .moves
            .iter()
            .map(|&(h, lo, hi)| format!("{}: {}", h + 1, range(lo, hi)))
            .collect();
        println!(
            "  start: {} (moves {})",
            range(a.lower, a.upper),
            moves.join(", ")
        );
    }
    println!("  made from: {}", b.note());
    Ok(())
}

/// A small random generator for the sample (splitmix64).
pub fn next_random(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn verify(args: &VerifyArgs) -> CliResult {
    let b = open(&args.file)?;
    let rules = b.rules();
    let checked = b.check_consistent().map_err(book_error)?;
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
    });
    let exact: Vec<(Board, i32)> = b
        .iter()
        .filter(|e| e.1 == e.2)
        .map(|(board, v, _)| (board, v))
        .collect();
    let mut state = seed;
    let mut chosen = Vec::new();
    let mut left: Vec<usize> = (0..exact.len()).collect();
    while chosen.len() < args.sample && !left.is_empty() {
        let i = (next_random(&mut state) % left.len() as u64) as usize;
        chosen.push(left.swap_remove(i));
    }
    let mut rows = Vec::new();
    let mut bad = 0;
    for (n, &i) in chosen.iter().enumerate() {
        let (board, v) = exact[i];
        // A fresh search for each entry: nothing carried over from the book or another entry.
        let search = make_search(
            &args.database,
            &rules,
            args.threads,
            args.tt_mb,
            args.json || n > 0,
        )?;
        let t = Instant::now();
        let a = search
            .analyse(&board, false, Goal::Exact, &|_| {}, cancel_flag())
            .map_err(super::engine::search_error)?;
        let agree = a.value == v;
        bad += usize::from(!agree);
        if !args.json {
            println!(
                "  {board}: book {v:+}, search {:+} ({} nodes, {:.2} s) {}",
                a.value,
                a.nodes,
                t.elapsed().as_secs_f64(),
                if agree { "agree" } else { "DISAGREE" }
            );
        }
        rows.push(json!({"board": board.to_string(), "book": v, "search": a.value, "nodes": a.nodes, "agree": agree}));
    }
    if args.json {
        println!(
            "{}",
            json!({"file": args.file.display().to_string(), "consistent": checked, "seed": seed, "sampled": rows, "disagree": bad})
        );
    } else {
        println!(
            "{}: {checked} positions consistent with their moves; {} of {} sampled entries agree with a fresh search (--seed {seed})",
            args.file.display(),
            rows.len() - bad,
            rows.len()
        );
    }
    if bad > 0 {
        return Err(CliError::failure(format!(
            "{bad} book entries disagree with a fresh search"
        )));
    }
    Ok(())
}
