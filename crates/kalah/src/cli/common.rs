//! What every subcommand shares: the rule flags, errors with exit codes, progress bars.

use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use kalah_solver::db::PageCacheFill;
use kalah_solver::{parse_position, Capture, EndRule, Leftover, Position, Rules};
use std::fmt;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// Exit status for success.
pub const EXIT_OK: i32 = 0;
/// Exit status when the work failed (I/O, a corrupt database, a disagreement found).
pub const EXIT_FAILURE: i32 = 1;
/// Exit status for bad input: a bad flag, a position that cannot be read.
pub const EXIT_USAGE: i32 = 2;
/// Exit status when the user interrupted the work (Ctrl-C); finished work is saved.
pub const EXIT_INTERRUPTED: i32 = 130;

/// An error for the user, with the exit status it deserves.
#[derive(Debug)]
pub struct CliError {
    /// The exit status.
    pub code: i32,
    /// One line saying what is wrong.
    pub message: String,
}

impl CliError {
    /// Bad input: exit status 2.
    pub fn usage(message: impl Into<String>) -> CliError {
        CliError {
            code: EXIT_USAGE,
            message: message.into(),
        }
    }

    /// Failed work: exit status 1.
    pub fn failure(message: impl Into<String>) -> CliError {
        CliError {
            code: EXIT_FAILURE,
            message: message.into(),
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<kalah_solver::DbError> for CliError {
    fn from(e: kalah_solver::DbError) -> Self {
        CliError::failure(e.to_string())
    }
}

/// The result of a subcommand.
pub type CliResult<T = ()> = Result<T, CliError>;

/// The rule flags, the same on every subcommand.
#[derive(Args, Debug, Clone)]
pub struct RuleArgs {
    /// Houses per side (1 to 8).
    #[arg(long, default_value_t = 6)]
    pub houses: usize,
    /// Seeds per house at the start.
    #[arg(long, default_value_t = 4)]
    pub seeds: u32,
    /// Capture rule: standard (opposite house must hold seeds), empty (always), never.
    #[arg(long, default_value = "standard")]
    pub capture: String,
    /// Seeds left at the end: owner (each keeps their own), emptier (the player whose side is
    /// empty takes the rest), discard (they count for nobody).
    #[arg(long, default_value = "owner")]
    pub leftover: String,
    /// When the game ends: either (either side empty, after every move), mover (only when the
    /// player to move has no seeds).
    #[arg(long, default_value = "either")]
    pub end: String,
}

impl RuleArgs {
    /// The rule set, or a usage error naming the bad flag.
    pub fn rules(&self) -> CliResult<Rules> {
        let rules = Rules {
            houses: self.houses,
            seeds: self.seeds,
            capture: self
                .capture
                .parse::<Capture>()
                .map_err(|e| CliError::usage(format!("--capture: {e}")))?,
            leftover: self
                .leftover
                .parse::<Leftover>()
                .map_err(|e| CliError::usage(format!("--leftover: {e}")))?,
            end: self
                .end
                .parse::<EndRule>()
                .map_err(|e| CliError::usage(format!("--end: {e}")))?,
        };
        rules
            .validate()
            .map_err(|e| CliError::usage(e.to_string()))?;
        Ok(rules)
    }
}

/// For `--log-every SECS`: whether a progress line is due at `seconds` (then the time of the
/// last line, in `last`, moves to it).
pub fn log_due(every: Option<u64>, last: &std::sync::Mutex<f64>, seconds: f64) -> bool {
    let Some(every) = every.filter(|&e| e > 0) else {
        return false;
    };
    let mut at = last.lock().unwrap();
    if seconds >= *at + every as f64 {
        *at = seconds;
        true
    } else {
        false
    }
}

/// The database flags of `solve` and `prove`.
#[derive(Args, Debug, Clone)]
pub struct DbArgs {
    /// Endgame database directory: every position with few enough seeds is looked up there
    /// (default `data/db/<rules>`). Levels in the stored and search codecs are read through
    /// memory maps: a file another program truncates in place while the search runs ends it
    /// with SIGBUS (kalah itself only ever replaces level files by renaming new ones).
    #[arg(long, value_name = "DIR")]
    pub db: Option<PathBuf>,
    /// First make sure the database holds every level up to N seeds, building what is missing:
    /// the default one `data/db/<rules>` (default N: the size that makes the run fastest for
    /// this board, said on stderr; 0: build nothing), or with --db the directory DIR.
    #[arg(long, value_name = "N")]
    pub build_upto: Option<u32>,
    /// Read the database block by block as probes need it instead of decoding it into memory
    /// first (slower searches, less memory).
    #[arg(long)]
    pub db_lazy: bool,
    /// Read the levels that are probed in place (stored, search) into the page cache again
    /// before searching, even when they are cached, so that they land in huge pages (Linux
    /// file systems with large folios, such as ext4 since 6.16): fewer TLB misses, faster
    /// probes. Without it, levels not yet cached are read in order all the same.
    #[arg(long)]
    pub db_huge_pages: bool,
    /// Lock the levels probed in place in memory (`mlock`), so that nothing else the machine
    /// runs (a build, another search) evicts them or splits their huge pages during a long
    /// search. Needs a memory-lock limit (`ulimit -l`) above the database's size; if the
    /// system refuses, a warning, and the search goes on unlocked.
    #[arg(long)]
    pub db_lock: bool,
    /// Use only the levels 0..=N of the database (to compare database sizes).
    #[arg(long, value_name = "N")]
    pub db_upto: Option<u32>,
}

/// Reads the levels of `db` that probes read in place into the page cache before a search
/// ([`kalah_solver::Database::fill_page_cache`]), with a progress bar; says so on stderr when
/// they would not fit in memory.
pub fn fill_page_cache(
    db: &kalah_solver::Database,
    evict: bool,
    visible: bool,
) -> CliResult<PageCacheFill> {
    let bar = progress_bar(
        db.in_place_bytes(),
        "reading the database into memory {bar:30} {bytes}/{total_bytes} {elapsed}",
        visible && (evict || db.in_place_bytes() >= 1 << 28),
    );
    let fill = db.fill_page_cache(evict, &|b| bar.set_position(b))?;
    bar.finish_and_clear();
    if let PageCacheFill::NoRoom { needed, available } = fill {
        eprintln!(
            "not reading the database ahead: {:.2} GB would not fit in the memory available ({:.2} GB)",
            needed as f64 / 1e9,
            available as f64 / 1e9
        );
    }
    Ok(fill)
}

/// Reads a position typed by the user, or a usage error quoting it.
pub fn read_position(text: &str, rules: &Rules) -> CliResult<Position> {
    parse_position(text, rules.houses)
        .map_err(|e| CliError::usage(format!("bad position {text:?}: {e}")))
}

/// The default database directory for a rule set: `data/db/<slug>`.
pub fn default_db_dir(rules: &Rules) -> PathBuf {
    PathBuf::from("data").join("db").join(rules.slug())
}

/// The database directory to use: the one given with `--db`, or else the default one for the
/// rules when it exists.
pub fn db_dir(given: Option<&Path>, rules: &Rules) -> Option<PathBuf> {
    match given {
        Some(dir) => Some(dir.to_path_buf()),
        None => Some(default_db_dir(rules)).filter(|dir| dir.is_dir()),
    }
}

/// Whether progress bars should be drawn: stderr is a terminal and the output is not JSON.
pub fn show_progress(json: bool) -> bool {
    !json && std::io::stderr().is_terminal()
}

/// Seconds between progress lines on stderr when nothing else shows progress: with
/// `--log-every SECS` that (0: none); otherwise, for text output to a log or a pipe, where no
/// progress bar is drawn, one line a minute, so that a long run is never silent.
pub fn log_interval(flag: Option<u64>, json: bool, terminal: bool) -> Option<u64> {
    match flag {
        Some(0) => None,
        Some(s) => Some(s),
        None if !json && !terminal => Some(DEFAULT_LOG_EVERY),
        None => None,
    }
}

/// Seconds between the progress lines of a long run whose stderr is not a terminal.
pub const DEFAULT_LOG_EVERY: u64 = 60;

/// A progress bar on stderr, hidden when `visible` is false.
pub fn progress_bar(len: u64, template: &str, visible: bool) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(
        Some(len),
        if visible {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        },
    );
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// A spinner (no known length) on stderr, hidden when `visible` is false.
pub fn spinner(visible: bool) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(
        None,
        if visible {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        },
    );
    if let Ok(style) = ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}") {
        bar.set_style(style);
    }
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    bar
}

/// The flag raised by Ctrl-C, shared by every long operation of the process (the handler is
/// installed on first use). Work that sees it stops soon, keeps what is finished, and the
/// command exits with [`EXIT_INTERRUPTED`].
pub fn cancel_flag() -> &'static AtomicBool {
    static FLAG: OnceLock<&'static AtomicBool> = OnceLock::new();
    FLAG.get_or_init(|| {
        let flag: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
        // Without a handler Ctrl-C simply kills the process; finished work is on disk anyway.
        let _ = ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst));
        flag
    })
}

/// The 1-based houses of the moves (0-based house, value) whose value is `value`: the best
/// moves when `value` is the position's value.
pub fn best_houses(moves: &[(usize, i32)], value: i32) -> Vec<usize> {
    moves
        .iter()
        .filter(|m| m.1 == value)
        .map(|m| m.0 + 1)
        .collect()
}

/// The database size `solve`, `query` and `prove` build by default for a position of `seeds`
/// seeds: the one that makes the whole run (building, loading and searching) about fastest on
/// one machine, with the reason, for stderr. Measured on 6 houses: a 3-seed start is proven in
/// under a second over 16 seeds (2 s to build); a 4-seed start in about 1.3 s over 22 seeds
/// (about 20 s to build and 7 s to load) against 80 s over 16; beyond that, levels above 22
/// cost more to build than they save on one run. Boards small enough are built whole (then
/// every answer is a lookup).
pub fn auto_db_upto(houses: usize, seeds: u32) -> (u32, String) {
    use kalah_solver::db::level_size;
    let total = |n: u32| (0..=n).map(|l| level_size(houses, l)).sum::<u64>();
    let max = kalah_solver::db::MAX_DB_LEVEL;
    if seeds <= max && total(seeds) <= 200_000_000 {
        return (
            seeds,
            format!("every position of up to {seeds} seeds is few enough to build whole"),
        );
    }
    // No more positions than 6 houses up to 22 seeds (about 20 s to build).
    let cap: u64 = (0..=22).map(|l| level_size(6, l)).sum();
    let mut n = seeds.saturating_sub(26).clamp(16, 22).min(seeds).min(max);
    while n > 1 && total(n) > cap {
        n -= 1;
    }
    let why = if seeds > 48 {
        format!(
            "the fastest size to build for a first run; a {seeds}-seed position is a long search over it \
             (minutes to hours): a larger database (--build-upto 30, several minutes to build) saves most of it"
        )
    } else {
        "the size that makes building, loading and searching fastest together for this board"
            .to_string()
    };
    (n, why)
}

/// Makes sure the database of `rules` holds the levels a position of `seeds` seeds needs.
/// Without `dir` (no `--db`), in the default directory: up to `upto` seeds when given (0:
/// nothing), else [`auto_db_upto`]'s size, said on stderr (unless `json`). With `dir`, only
/// when `upto` is given (`--db DIR --build-upto N` builds into DIR); otherwise the directory is
/// used as it is.
pub fn ensure_db(
    dir: Option<&Path>,
    rules: &Rules,
    seeds: u32,
    upto: Option<u32>,
    json: bool,
) -> CliResult {
    let (dir, n) = match (dir, upto) {
        (Some(d), Some(n)) => (d.to_path_buf(), n),
        (Some(_), None) => return Ok(()),
        (None, Some(n)) => (default_db_dir(rules), n),
        (None, None) => {
            let (n, why) = auto_db_upto(rules.houses, seeds);
            if !json {
                eprintln!(
                    "database: {} with every level up to {n} seeds ({why}; --build-upto N for another size, 0 for none)",
                    default_db_dir(rules).display()
                );
            }
            (default_db_dir(rules), n)
        }
    };
    if n > 0 {
        super::db::ensure_levels(&dir, rules, n, json)?;
    }
    Ok(())
}

/// [`ensure_db`] for the start position of `rules` with the database flags of `solve` and
/// `prove`.
pub fn ensure_start_db(database: &DbArgs, rules: &Rules, json: bool) -> CliResult {
    let seeds = rules.seeds * 2 * rules.houses as u32;
    ensure_db(
        database.db.as_deref(),
        rules,
        seeds,
        database.build_upto,
        json,
    )
}

/// The machine's memory in MiB (`MemTotal` of /proc/meminfo; 8 GiB where that cannot be read).
pub fn memory_mib() -> usize {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map(|kb| (kb / 1024) as usize)
        .unwrap_or(8 << 10)
}

/// Parses `--tt-mb`: a whole number of MiB from 1 to the machine's memory (a table larger
/// than the memory cannot be mapped, and one as large would leave nothing for the database).
pub fn parse_tt_mb(s: &str) -> Result<usize, String> {
    let mb: usize = s
        .parse()
        .map_err(|_| format!("'{s}' is not a whole number of MiB"))?;
    let memory = memory_mib();
    if mb == 0 {
        return Err("the table needs at least 1 MiB".into());
    }
    if mb > memory {
        return Err(format!(
            "{mb} MiB is more than this machine's memory ({memory} MiB)"
        ));
    }
    Ok(mb)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_runs_log_a_line_a_minute_when_no_bar_is_drawn() {
        // Text to a log or a pipe: a line a minute unless told otherwise.
        assert_eq!(log_interval(None, false, false), Some(60));
        assert_eq!(log_interval(Some(5), false, false), Some(5));
        assert_eq!(log_interval(Some(0), false, false), None);
        // A terminal has its progress bar; --json output stays clean unless asked.
        assert_eq!(log_interval(None, false, true), None);
        assert_eq!(log_interval(None, true, false), None);
        assert_eq!(log_interval(Some(7), true, false), Some(7));
        let last = std::sync::Mutex::new(0.0);
        assert!(!log_due(Some(60), &last, 59.0));
        assert!(log_due(Some(60), &last, 61.0));
        assert!(!log_due(Some(60), &last, 100.0));
        assert!(!log_due(None, &last, 1000.0));
        assert!(!log_due(Some(0), &last, 1000.0));
    }

    #[test]
    fn default_database_sizes_follow_the_board() {
        // 6 houses: 16 for 3 seeds, 22 for 4 and more.
        assert_eq!(auto_db_upto(6, 36).0, 16);
        assert_eq!(auto_db_upto(6, 48).0, 22);
        assert_eq!(auto_db_upto(6, 60).0, 22);
        assert!(auto_db_upto(6, 72).1.contains("long search"));
        // Small boards are built whole.
        assert_eq!(auto_db_upto(4, 24).0, 24);
        assert_eq!(auto_db_upto(3, 18).0, 18);
        // More houses: no more positions than 6 houses up to 22 seeds.
        let total =
            |h: usize, n: u32| -> u64 { (0..=n).map(|l| kalah_solver::db::level_size(h, l)).sum() };
        for h in [7, 8] {
            let n = auto_db_upto(h, 2 * h as u32 * 4).0;
            assert!(total(h, n) <= total(6, 22), "{h} houses: {n}");
            assert!(n >= 10, "{h} houses: {n}");
        }
    }
}

/// What `solve` and `prove` prove.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum GoalArg {
    /// The exact final margin.
    Exact,
    /// Only whether the first player wins, draws or loses (much cheaper).
    Sign,
}

/// What `prove check --needed` has proven again of a ledger's units (`rechecked.jsonl`), for
/// `--json`: null without the file, `{error}` when it is damaged.
pub fn rechecked_json(
    r: &Result<Option<kalah_driver::prove::recheck::Summary>, String>,
) -> serde_json::Value {
    match r {
        Ok(Some(s)) => serde_json::json!({
            "units": s.units,
            "agree": s.agree,
            "stale": s.stale,
            "nodes": s.nodes,
            "seconds": s.seconds,
            "needed": s.needed.as_ref().map(|n| serde_json::json!({
                "units": n.units,
                "rechecked": n.rechecked,
                "current": n.current,
            })),
        }),
        Ok(None) => serde_json::Value::Null,
        Err(e) => serde_json::json!({ "error": e }),
    }
}

/// How many of the units a ledger's records rest on are proven again (as the last
/// `prove check --needed` derived them, `needed.json`).
pub fn needed_text(n: &kalah_driver::prove::recheck::NeededCount) -> String {
    format!(
        "{} of the {} units the records rest on (needed.json{})",
        n.rechecked,
        n.units,
        if n.current {
            ""
        } else {
            ", from before the ledger's last lines: prove check --needed derives them again"
        }
    )
}
