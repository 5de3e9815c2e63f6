//! What every subcommand shares: the rule flags, errors with exit codes, progress bars.

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
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
