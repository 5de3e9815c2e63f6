//! The engine as the commands open it: the database a search probes, the table's default
//! size, and the search's errors, progress lines and rules in the CLI's words.

use super::common::{db_dir, CliError, CliResult, EXIT_INTERRUPTED};
use kalah_driver::{Progress, SearchError};
use kalah_solver::db::{Database, PageCacheFill};
use kalah_solver::{Endgame, Rules};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;

/// Opens the endgame database in `dir` for `rules` (without `dir`, the default directory
/// `data/db/<rules>` when it exists): the one place where the search gets its database. Unless
/// `lazy`, every compressed level is decoded into memory first (a search probes at random);
/// stored and search levels are probed from their memory maps as they are, and with `fill`
/// read into the page cache first ([`super::common::fill_page_cache`]).
pub fn open_endgame(
    dir: Option<&Path>,
    rules: &Rules,
    lazy: bool,
    upto: Option<u32>,
    fill: Option<Fill>,
) -> CliResult<Option<Arc<dyn Endgame>>> {
    let Some(dir) = db_dir(dir, rules) else {
        return Ok(None);
    };
    let mut db = Database::open(&dir, rules)?;
    if let Some(n) = upto {
        if n > db.max_seeds() {
            return Err(CliError::usage(format!(
                "--db-upto {n}: {} holds levels 0..={} only",
                dir.display(),
                db.max_seeds()
            )));
        }
        db.keep_levels(n);
    }
    if !lazy {
        db.load_into_memory()?;
    }
    if let Some(f) = fill {
        if let PageCacheFill::Filled {
            bytes: total,
            read,
            seconds,
            huge_bytes,
        } = super::common::fill_page_cache(&db, f.evict, f.visible)?
        {
            let gb = |b: u64| b as f64 / 1e9;
            let huge = huge_bytes.map(|h| h.min(total));
            if read > 0 {
                let said = huge
                    .map(|h| format!(", {:.2} GB of it in huge pages", gb(h)))
                    .unwrap_or_default();
                eprintln!(
                    "read {:.2} GB of the database into memory in {seconds:.1} s{said}",
                    gb(read)
                );
            } else if huge.is_some_and(|h| h < total / 2) && total >= 1 << 30 {
                eprintln!(
                    "the database ({:.2} GB) is in memory, {:.2} GB of it in huge pages; \
                     --db-huge-pages reads it again into huge pages (faster probes)",
                    gb(total),
                    gb(huge.unwrap_or(0))
                );
            }
        }
        if f.lock {
            match db.lock_in_memory() {
                Ok(b) => eprintln!("locked {:.2} GB of the database in memory", b as f64 / 1e9),
                Err(e) => eprintln!(
                    "warning: the database is not locked in memory ({e}); the search goes on \
                     without --db-lock (raise the limit with `ulimit -l`)"
                ),
            }
        }
    }
    Ok(Some(Arc::new(db)))
}

/// How [`open_endgame`] prepares the levels probed in place before a search.
#[derive(Clone, Copy, Debug)]
pub struct Fill {
    /// Read every file again, even when cached, so that it lands in huge pages
    /// (`--db-huge-pages`).
    pub evict: bool,
    /// Lock the levels probed in place in memory afterwards (`--db-lock`).
    pub lock: bool,
    /// Show a progress bar.
    pub visible: bool,
}

/// A progress line for a spinner.
pub fn progress_message(p: &Progress) -> String {
    let mut moves = if p.moves_total > 0 {
        format!(" | moves {}/{}", p.moves_done, p.moves_total)
    } else {
        String::new()
    };
    if p.probe_moves_total > 0 {
        moves += &format!(
            " | this probe: {}/{} moves settled",
            p.probe_moves_done, p.probe_moves_total
        );
        if let Some(share) = p.probe_share {
            moves += &format!(", about {:.4}% done", share * 100.0);
        }
        if !p.probe_path.is_empty() {
            // Per ply: moves settled/moves, "a" where every move must be settled.
            let path: Vec<String> = p
                .probe_path
                .iter()
                .map(|&(d, t, all)| format!("{d}/{t}{}", if all { "a" } else { "" }))
                .collect();
            moves += &format!(" (path {})", path.join(" "));
        }
    }
    format!(
        "{} | bounds [{:+}, {:+}]{moves} | {} nodes | {:.2} Mnodes/s | table {:.0}%",
        p.stage,
        p.lower,
        p.upper,
        p.nodes,
        p.nodes_per_second / 1e6,
        p.tt_fill * 100.0
    )
}

/// Maps a search error to the CLI's error and exit status.
pub fn search_error(e: SearchError) -> CliError {
    match e {
        SearchError::Interrupted { .. } => CliError {
            code: EXIT_INTERRUPTED,
            message: e.to_string(),
        },
        SearchError::Db(_) | SearchError::Checkpoint(_) => CliError::failure(e.to_string()),
    }
}

/// The table size when `--tt-mb` is not given: a sixteenth of the machine's memory, at least
/// 64 MiB and at most 4 GiB (the table is mapped lazily: pages are taken as they are used).
pub fn default_tt_mb() -> usize {
    (super::common::memory_mib() / 16).clamp(64, 4096)
}

/// The rules as a JSON object.
pub fn rules_json(rules: &Rules) -> Value {
    json!({
        "houses": rules.houses,
        "seeds": rules.seeds,
        "capture": rules.capture.name(),
        "leftover": rules.leftover.name(),
        "end": rules.end.name(),
    })
}
