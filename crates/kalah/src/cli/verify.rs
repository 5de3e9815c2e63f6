//! `kalah verify`: recompute the published results listed in `data/known-results.toml`.

use super::common::cancel_flag;
use super::common::{default_db_dir, progress_bar, show_progress, CliError, CliResult, RuleArgs};
use super::engine::{open_endgame, progress_message, search_error};
use clap::{Args, ValueEnum};
use kalah_driver::results::{ledger_summary, notation, parse_first_turn};
use kalah_driver::{Goal, Progress, Search, SearchConfig};
use kalah_solver::{Board, Capture, Position, Rules, Side};
use serde::Deserialize;
use serde_json::json;
use std::path::{Path, PathBuf};

/// Which results to recompute, by their budget class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Class {
    /// Seconds, no database needed (run in the test suite).
    Ci,
    /// Minutes: ci and bench results.
    Bench,
    /// Only the long results (6-seed Kalah), read from their proof ledgers under `--proofs`:
    /// proven, contradicted, or still open (seconds).
    Long,
    /// Everything searched from nothing, 6-seed Kalah included (days).
    All,
}

/// Arguments of `kalah verify`.
#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The list of published results.
    #[arg(long, default_value = "data/known-results.toml", value_name = "FILE")]
    pub file: PathBuf,
    /// Which results to recompute: ci, bench (ci and bench), long (the 6-seed ones, from the
    /// proof ledgers) or all (everything searched from nothing).
    #[arg(long, value_enum, default_value = "ci")]
    pub class: Class,
    /// The directory of proof ledgers (`kalah prove`) that `--class long` reads, one directory
    /// per game (e.g. `6x6-empty-owner-either`).
    #[arg(long, value_name = "DIR", default_value = "data/proofs")]
    pub proofs: PathBuf,
    /// Directory holding one endgame database directory per rule set (named by the rules'
    /// slug, e.g. `h6-empty-owner-either`; default `data/db`); rule sets without one are
    /// searched without a database.
    #[arg(long, value_name = "DIR")]
    pub db_root: Option<PathBuf>,
    /// Transposition table size in MiB.
    #[arg(long, default_value_t = 512, value_name = "MB", value_parser = super::common::parse_tt_mb)]
    pub tt_mb: usize,
    /// Search threads (default: every core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Print one JSON object per result instead of a table.
    #[arg(long)]
    pub json: bool,
    /// The directory of opening books whose entries are sampled and searched again ("none":
    /// no book is checked).
    #[arg(long, value_name = "DIR", default_value = super::book::DEFAULT_BOOKS)]
    pub books: PathBuf,
    /// Exact entries of each book searched again (chosen at random among those of the
    /// class's size: boards of up to 36 seeds for ci and long, 24 without captures, 48 for
    /// bench, any for all).
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub book_sample: usize,
    /// The seed of the random choice of book entries.
    #[arg(long, default_value_t = 1)]
    pub book_seed: u64,
}

/// One published result.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Known {
    /// Houses per side.
    pub houses: usize,
    /// Seeds per house.
    pub seeds: u32,
    /// Capture rule name.
    pub capture: String,
    /// Leftover rule name (default owner).
    #[serde(default)]
    pub leftover: Option<String>,
    /// End rule name (default either).
    #[serde(default)]
    pub end: Option<String>,
    /// Exact margin for South.
    #[serde(default)]
    pub value: Option<i32>,
    /// "W", "D" or "L" for South.
    #[serde(default)]
    pub sign: Option<String>,
    /// A lower bound on South's margin.
    #[serde(default)]
    pub at_least: Option<i32>,
    /// A first turn (`"S1 S2"`: the first player's houses before the second player moves):
    /// the fact is about the position after it, still counted for South from the start.
    #[serde(default)]
    pub first_turn: Option<String>,
    /// Where it was published.
    pub source: String,
    /// ci, bench or long.
    pub class: String,
}

/// The file.
#[derive(Debug, Deserialize)]
pub struct KnownFile {
    /// The results.
    pub result: Vec<Known>,
}

impl Known {
    fn rules(&self) -> CliResult<Rules> {
        RuleArgs {
            houses: self.houses,
            seeds: self.seeds,
            capture: self.capture.clone(),
            leftover: self.leftover.clone().unwrap_or_else(|| "owner".into()),
            end: self.end.clone().unwrap_or_else(|| "either".into()),
        }
        .rules()
    }

    /// The goal that decides this result, and how to show a value proven for it.
    fn goal(&self) -> CliResult<Goal> {
        match (self.value, &self.sign, self.at_least) {
            (Some(_), None, None) => Ok(Goal::Exact),
            (None, Some(_), None) => Ok(Goal::Sign { around: 0 }),
            (None, None, Some(k)) => Ok(Goal::Sign { around: k }),
            _ => Err(CliError::usage(format!(
                "{}x{} ({}): give exactly one of value, sign, at_least",
                self.houses, self.seeds, self.source
            ))),
        }
    }

    fn expected(&self) -> String {
        if let Some(v) = self.value {
            format!("{v:+}")
        } else if let Some(s) = &self.sign {
            s.clone()
        } else {
            format!(">= {:+}", self.at_least.unwrap_or(0))
        }
    }

    /// The first turn, 0-based, checked to be one of the game's first turns.
    fn turn(&self, rules: &Rules) -> CliResult<Option<Vec<usize>>> {
        let Some(text) = &self.first_turn else {
            return Ok(None);
        };
        parse_first_turn(rules, text)
            .map(|m| Some(m.into_iter().map(|h| h - 1).collect()))
            .map_err(|e| {
                CliError::usage(format!(
                    "{}x{} ({}): {e}",
                    self.houses, self.seeds, self.source
                ))
            })
    }

    /// The verdict of bounds `lower..=upper` on South's margin: agreement where they settle the
    /// published fact, `None` (open) where they allow both.
    fn judge_bounds(&self, lower: i32, upper: i32) -> Verdict {
        let range = if lower == upper {
            format!("{lower:+}")
        } else {
            format!("{lower:+}..{upper:+}")
        };
        // The published fact as "South's margin is at least k" or "exactly v".
        let agree = if let Some(v) = self.value {
            if v < lower || v > upper {
                Some(false)
            } else if lower == upper {
                Some(true)
            } else {
                None
            }
        } else {
            let (lo, hi) = match self.sign.as_deref().map(str::to_ascii_uppercase).as_deref() {
                Some("W") => (1, i32::MAX),
                Some("D") => (0, 0),
                Some(_) => (i32::MIN, -1),
                None => (self.at_least.unwrap_or(0), i32::MAX),
            };
            if upper < lo || lower > hi {
                Some(false)
            } else if lower >= lo && upper <= hi {
                Some(true)
            } else {
                None
            }
        };
        Verdict {
            computed: range,
            agree,
            nodes: None,
            seconds: None,
            from: "ledger",
        }
    }

    /// What was computed, in the same terms as the expectation, and whether they agree.
    fn judge(&self, value: i32) -> (String, bool) {
        if let Some(v) = self.value {
            (format!("{value:+}"), value == v)
        } else if let Some(s) = &self.sign {
            let c = match value.signum() {
                1 => "W",
                0 => "D",
                _ => "L",
            };
            (c.to_string(), c.eq_ignore_ascii_case(s))
        } else {
            let k = self.at_least.unwrap_or(0);
            let ok = value >= k;
            (
                if ok {
                    format!(">= {k:+}")
                } else {
                    format!("< {k:+}")
                },
                ok,
            )
        }
    }
}

/// Reads the list of published results.
pub fn read_known(path: &std::path::Path) -> CliResult<Vec<Known>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::failure(format!("reading {}: {e}", path.display())))?;
    let file: KnownFile =
        toml::from_str(&text).map_err(|e| CliError::failure(format!("{}: {e}", path.display())))?;
    Ok(file.result)
}

/// Runs `kalah verify`.
pub fn run(args: &VerifyArgs) -> CliResult {
    let known = read_known(&args.file)?;
    let wanted = |class: &str| match args.class {
        Class::Ci => class == "ci",
        Class::Bench => class == "ci" || class == "bench",
        Class::Long => class == "long",
        Class::All => true,
    };
    let (mut done, mut disagree, mut open) = (0usize, 0usize, 0usize);
    if !args.json {
        println!(
            "{:>6} {:>5} {:<9} {:<6} {:>9} {:>12} {:<5} {:>12} {:>9}  source",
            "houses",
            "seeds",
            "capture",
            "turn",
            "expected",
            "computed",
            "agree",
            "nodes",
            "seconds"
        );
    }
    let todo: Vec<&Known> = known.iter().filter(|k| wanted(&k.class)).collect();
    let bar = progress_bar(
        todo.len() as u64,
        "[{elapsed_precise}] {bar:30} {pos}/{len} {msg}",
        show_progress(args.json),
    );
    for k in todo {
        let rules = k.rules()?;
        let goal = k.goal()?;
        let turn = k.turn(&rules)?;
        let verdict = if args.class == Class::Long {
            // From the ledger's records: bounds, exact where the proof is finished.
            let (lower, upper) = ledger_bounds(&args.proofs, &rules, turn.as_deref())?;
            k.judge_bounds(lower, upper)
        } else {
            bar.set_message(format!(
                "{}x{} {}",
                rules.houses, rules.seeds, rules.capture
            ));
            let report = |p: &Progress| {
                bar.set_message(format!(
                    "{}x{} {}: {}",
                    rules.houses,
                    rules.seeds,
                    rules.capture,
                    progress_message(p)
                ))
            };
            let (board, south_first, lead) = after_turn(&rules, turn.as_deref().unwrap_or(&[]));
            let search = search_for(args, &rules)?;
            let a = search
                .analyse(
                    &board,
                    false,
                    goal_for_mover(goal, south_first, lead),
                    &report,
                    cancel_flag(),
                )
                .map_err(|e| {
                    bar.finish_and_clear();
                    search_error(e)
                })?;
            let south = if south_first { a.value } else { -a.value } + lead;
            let (computed, ok) = k.judge(south);
            Verdict {
                computed,
                agree: Some(ok),
                nodes: Some(a.nodes),
                seconds: Some(a.seconds),
                from: "search",
            }
        };
        bar.inc(1);
        done += 1;
        match verdict.agree {
            Some(false) => disagree += 1,
            None => open += 1,
            Some(true) => {}
        }
        let turn_name = turn.as_deref().map(turn_notation);
        if args.json {
            let line = json!({
                "houses": rules.houses, "seeds": rules.seeds, "capture": rules.capture.name(),
                "leftover": rules.leftover.name(), "end": rules.end.name(),
                "first_turn": turn_name,
                "expected": k.expected(), "computed": verdict.computed, "agree": verdict.agree,
                "from": verdict.from, "nodes": verdict.nodes, "seconds": verdict.seconds,
                "source": k.source, "class": k.class,
            });
            bar.suspend(|| println!("{line}"));
        } else {
            let line = format!(
                "{:>6} {:>5} {:<9} {:<6} {:>9} {:>12} {:<5} {:>12} {:>9}  {}",
                rules.houses,
                rules.seeds,
                rules.capture.name(),
                turn_name.as_deref().unwrap_or(""),
                k.expected(),
                verdict.computed,
                match verdict.agree {
                    Some(true) => "yes",
                    Some(false) => "NO",
                    None => "open",
                },
                verdict
                    .nodes
                    .map_or("ledger".to_string(), |n| n.to_string()),
                verdict
                    .seconds
                    .map_or("-".to_string(), |s| format!("{s:.3}")),
                k.source
            );
            bar.suspend(|| println!("{line}"));
        }
    }
    bar.finish_and_clear();
    if !args.json {
        if open > 0 {
            println!(
                "{done} results checked, {disagree} disagreeing, {open} not settled by the \
                 ledgers yet"
            );
        } else {
            println!("{done} results recomputed, {disagree} disagreeing");
        }
    }
    let (sampled, book_disagree) = verify_books(args)?;
    if !args.json && sampled > 0 {
        println!("{sampled} opening book entries searched again, {book_disagree} disagreeing");
    }
    done += sampled;
    disagree += book_disagree;
    if disagree > 0 {
        return Err(CliError::failure(format!(
            "{disagree} of {done} published results disagree with the computation"
        )));
    }
    Ok(())
}

/// A first turn of 0-based houses in the notation of move lists (`S2 S1`).
fn turn_notation(moves: &[usize]) -> String {
    notation(&moves.iter().map(|h| h + 1).collect::<Vec<_>>())
}

/// What one published result came to.
struct Verdict {
    /// The computed fact, in the terms of the published one.
    computed: String,
    /// Agreement; `None` while the ledger's bounds allow both.
    agree: Option<bool>,
    nodes: Option<u64>,
    seconds: Option<f64>,
    /// "search" or "ledger".
    from: &'static str,
}

/// The position after the first turn `moves` (0-based houses), whether South is to move there,
/// and South's store lead.
fn after_turn(rules: &Rules, moves: &[usize]) -> (Board, bool, i32) {
    let mut p = Position::start(rules);
    for &h in moves {
        p = p.play(rules, h).0;
    }
    let south = p.to_move() == Side::South;
    let lead = p.store(Side::South) as i32 - p.store(Side::North) as i32;
    (p.board(), south, lead)
}

/// The goal `goal`, stated for South's final margin, as a goal of the search from a position
/// whose mover is South (`south`) or North, with South's store lead `lead`.
fn goal_for_mover(goal: Goal, south: bool, lead: i32) -> Goal {
    match goal {
        Goal::Exact => Goal::Exact,
        // South's margin is the mover's value plus the lead (South to move) or the lead minus it.
        Goal::Sign { around } if south => Goal::Sign {
            around: around - lead,
        },
        Goal::Sign { around } => Goal::Sign {
            around: lead - around,
        },
    }
}

/// Bounds on South's final margin from the start (or after the first turn `turn`, 0-based)
/// that the records of the game's ledger under `proofs` state.
fn ledger_bounds(proofs: &Path, rules: &Rules, turn: Option<&[usize]>) -> CliResult<(i32, i32)> {
    let dir = proofs.join(
        kalah_driver::prove::default_dir(rules)
            .file_name()
            .unwrap_or_default(),
    );
    let total = Board::start(rules).seeds() as i32;
    if !dir.is_dir() {
        return Ok((-total, total));
    }
    let s =
        ledger_summary(&dir).map_err(|e| CliError::failure(format!("{}: {e}", dir.display())))?;
    let Some(moves) = turn else {
        return Ok((s.lower, s.upper));
    };
    let one_based: Vec<usize> = moves.iter().map(|h| h + 1).collect();
    // No first turn is worth more than the start.
    let (mut lower, mut upper) = (-total, s.upper);
    if let Some(&(_, lo, hi)) = s.openings.iter().find(|o| o.0 == one_based[0]) {
        // A first move's value is the best of the turns that begin with it.
        upper = upper.min(hi);
        if one_based.len() == 1 {
            lower = lower.max(lo);
        }
    }
    if let Some((_, lo, hi)) = s.turns.iter().find(|t| t.0 == one_based) {
        lower = lower.max(*lo);
        upper = upper.min(*hi);
    }
    Ok((lower, upper))
}

/// A fresh search for `rules` over its database under `--db-root` (or the default one) when
/// there is one.
fn search_for(args: &VerifyArgs, rules: &Rules) -> CliResult<Search> {
    let dir = match &args.db_root {
        Some(root) => root.join(rules.slug()),
        None => default_db_dir(rules),
    };
    let endgame = if dir.is_dir() {
        open_endgame(Some(&dir), rules, false, None, None)?
    } else {
        None
    };
    let mut config = SearchConfig {
        tt_mb: args.tt_mb,
        endgame,
        ..SearchConfig::default()
    };
    if let Some(t) = args.threads {
        config.threads = t.max(1);
    }
    Ok(Search::new(*rules, config))
}

/// Checks every book in `--books`: each entry against its moves, and `--book-sample` exact
/// entries of the class's size against fresh searches. Returns (entries searched, disagreeing).
fn verify_books(args: &VerifyArgs) -> CliResult<(usize, usize)> {
    if args.books.as_os_str() == "none" || !args.books.is_dir() || args.book_sample == 0 {
        return Ok((0, 0));
    }
    // The largest boards sampled, so that each class keeps its budget: ci and long take
    // seconds, bench minutes. Without captures seeds leave the houses one store at a time, and a
    // board of 34 seeds takes minutes with no database (a 2-ply 6x3 entry: 750 M nodes, 310 s),
    // so ci and long sample a no-capture book's entries of at most 24 seeds only.
    let most_seeds = |rules: &Rules| match (args.class, rules.capture) {
        (Class::Ci | Class::Long, Capture::Never) => 24,
        (Class::Ci | Class::Long, _) => 36,
        (Class::Bench, _) => 48,
        (Class::All, _) => u32::MAX,
    };
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&args.books)
        .map_err(|e| CliError::failure(format!("{}: {e}", args.books.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "kbook"))
        .collect();
    paths.sort();
    let (mut done, mut disagree) = (0, 0);
    for path in paths {
        let book =
            kalah_driver::book::Book::open(&path).map_err(|e| CliError::failure(e.to_string()))?;
        let checked = book.check_consistent().map_err(super::book::book_error)?;
        let rules = book.rules();
        let most = most_seeds(&rules);
        let mut pool: Vec<(Board, i32)> = book
            .iter()
            .filter(|e| e.1 == e.2 && e.0.seeds() <= most)
            .map(|(b, v, _)| (b, v))
            .collect();
        let mut state = args.book_seed ^ path.to_string_lossy().len() as u64;
        let mut chosen = Vec::new();
        while chosen.len() < args.book_sample && !pool.is_empty() {
            let i = (super::book::next_random(&mut state) % pool.len() as u64) as usize;
            chosen.push(pool.swap_remove(i));
        }
        for (board, v) in chosen {
            let a = search_for(args, &rules)?
                .analyse(&board, false, Goal::Exact, &|_| {}, cancel_flag())
                .map_err(search_error)?;
            let ok = a.value == v;
            done += 1;
            disagree += usize::from(!ok);
            if args.json {
                println!(
                    "{}",
                    json!({"book": path.display().to_string(), "board": board.to_string(),
                        "expected": v, "computed": a.value, "agree": ok, "nodes": a.nodes,
                        "seconds": a.seconds, "consistent": checked})
                );
            } else {
                println!(
                    "  book {}: {board}: {v:+}, searched {:+} {} ({} nodes, {:.3} s)",
                    path.display(),
                    a.value,
                    if ok { "yes" } else { "NO" },
                    a.nodes,
                    a.seconds
                );
            }
        }
    }
    Ok((done, disagree))
}
