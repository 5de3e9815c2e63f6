//! The `kalah` command-line tool.

mod cli;

use clap::{Parser, Subcommand};
use cli::common::{CliError, EXIT_OK};

/// Strongly solving Kalah: rules, endgame databases and proofs of game values.
#[derive(Parser, Debug)]
#[command(
    name = "kalah",
    version,
    about = "Strongly solving Kalah: rules, endgame databases and proofs of game values",
    after_help = "Positions: short form \"3 3 3 3 3 3 / 3 3 3 3 3 3\" (side to move first) or \
                  full form \"N: 0 5 5 5 5 4 [0] / 4 4 4 4 4 4 [0]\" (South first, stores in \
                  brackets, S or N to move).\n\
                  Exit status: 0 success, 1 the work failed (I/O, corrupt database, \
                  disagreement), 2 bad input (flags or position), 130 interrupted (finished \
                  work is kept)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Draw a position as players see it.
    Show(cli::show::ShowArgs),
    /// List every legal move with the position it leads to.
    Moves(cli::moves::MovesArgs),
    /// The value of a position for the player to move, and of each legal move.
    Query(cli::query::QueryArgs),
    /// Build, inspect and verify endgame databases.
    Db(cli::db::DbArgs),
    /// Opening books: the exact values of the positions near the start, answered at once
    /// by query, solve and serve (`book build`, `book info FILE`, `book verify FILE`).
    Book(cli::book::BookArgs),
    /// Prove the value of the start position.
    Solve(cli::solve::SolveArgs),
    /// Prove the value of the start position in units kept in a ledger (resumable);
    /// `prove status DIR`, `prove check DIR`.
    Prove(cli::prove::ProveArgs),
    /// Serve the JSON API (/api/v1/...) and the explorer page (/) over HTTP.
    Serve(cli::serve::ServeArgs),
    /// The table of proven game values (every rule set, 3 to 6 seeds, first turns, pie
    /// rule), from data/results.json and the proof ledgers, with their sources.
    Results(cli::results::ResultsArgs),
    /// Recompute the published results listed in data/known-results.toml.
    Verify(cli::verify::VerifyArgs),
}

fn run(cli: Cli) -> Result<(), CliError> {
    match &cli.command {
        Command::Show(a) => cli::show::show(a),
        Command::Moves(a) => cli::moves::moves(a),
        Command::Query(a) => cli::query::run(a),
        Command::Db(a) => cli::db::run(a),
        Command::Book(a) => cli::book::run(a),
        Command::Solve(a) => cli::solve::run(a),
        Command::Prove(a) => cli::prove::run(a),
        Command::Serve(a) => cli::serve::run(a),
        Command::Results(a) => cli::results::run(a),
        Command::Verify(a) => cli::verify::run(a),
    }
}

fn main() {
    // Output piped into `head` and the like: end quietly when the reader goes away, as other
    // command-line tools do, instead of panicking on a broken pipe.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // Help and version go to stdout as clap writes them; a bad flag or value is one line
        // on stderr with exit status 2, like every other piece of bad input.
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            let text = e.to_string();
            let line = text.lines().next().unwrap_or("error: bad arguments");
            eprintln!("{line} (see --help)");
            std::process::exit(cli::common::EXIT_USAGE);
        }
    };
    let code = match run(cli) {
        Ok(()) => EXIT_OK,
        Err(e) => {
            eprintln!("error: {}", e.message);
            e.code
        }
    };
    std::process::exit(code);
}
