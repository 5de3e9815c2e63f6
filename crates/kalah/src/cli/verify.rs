//! `kalah verify`: recompute the published results listed in `data/known-results.toml`.

use super::common::cancel_flag;
use super::common::{default_db_dir, progress_bar, show_progress, CliError, CliResult, RuleArgs};
use super::solve::{open_endgame, progress_message, search_error};
use clap::{Args, ValueEnum};
use kalah_driver::{Goal, Progress, Search, SearchConfig};
use kalah_solver::{Board, Rules};
use serde::Deserialize;
use serde_json::json;
use std::path::PathBuf;

/// Which results to recompute, by their budget class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Class {
    /// Seconds, no database needed (run in the test suite).
    Ci,
    /// Minutes: ci and bench results.
    Bench,
    /// Everything, 6-seed Kalah included (days).
    All,
}

/// Arguments of `kalah verify`.
#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The list of published results.
    #[arg(long, default_value = "data/known-results.toml", value_name = "FILE")]
    pub file: PathBuf,
    /// Which results to recompute: ci, bench (ci and bench) or all.
    #[arg(long, value_enum, default_value = "ci")]
    pub class: Class,
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
    /// class's size: boards of up to 36 seeds for ci, 48 for bench, any for all).
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
        Class::All => true,
    };
    let mut disagree = 0;
    let mut done = 0usize;
    if !args.json {
        println!(
            "{:>6} {:>5} {:<9} {:>9} {:>9} {:<5} {:>12} {:>9}  source",
            "houses", "seeds", "capture", "expected", "computed", "agree", "nodes", "seconds"
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
        let search = search_for(args, &rules)?;
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
        let result = search.analyse(&Board::start(&rules), false, goal, &report, cancel_flag());
        let a = result.map_err(|e| {
            bar.finish_and_clear();
            search_error(e)
        })?;
        bar.inc(1);
        let (computed, ok) = k.judge(a.value);
        done += 1;
        if !ok {
            disagree += 1;
        }
        if args.json {
            let line = json!({
                "houses": rules.houses, "seeds": rules.seeds, "capture": rules.capture.name(),
                "leftover": rules.leftover.name(), "end": rules.end.name(),
                "expected": k.expected(), "computed": computed, "agree": ok,
                "nodes": a.nodes, "seconds": a.seconds, "source": k.source, "class": k.class,
            });
            bar.suspend(|| println!("{line}"));
        } else {
            let line = format!(
                "{:>6} {:>5} {:<9} {:>9} {:>9} {:<5} {:>12} {:>9.3}  {}",
                rules.houses,
                rules.seeds,
                rules.capture.name(),
                k.expected(),
                computed,
                if ok { "yes" } else { "NO" },
                a.nodes,
                a.seconds,
                k.source
            );
            bar.suspend(|| println!("{line}"));
        }
    }
    bar.finish_and_clear();
    if !args.json {
        println!("{done} results recomputed, {disagree} disagreeing");
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
    let most = match args.class {
        Class::Ci => 36,
        Class::Bench => 48,
        Class::All => u32::MAX,
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
