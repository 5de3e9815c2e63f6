//! `probe-bench`: times random probes of an endgame database built by `kalah db build`, and
//! prints one JSON object (scripts/bench-db.sh and scripts/bench-searchdb.sh read it).
//!
//! The boards are drawn at random from the database's top level; each is probed once and timed
//! alone (median, 90th and 99th percentile), then the same boards again as one timed pass (the
//! mean, without the clock's own cost on every probe). `--warm` probes every board once before
//! timing; `--huge-pages` first reads the levels probed in place (stored, search) into the page
//! cache again, so that they land in huge pages, as `kalah solve --db-huge-pages` does.
//!
//! Exit status: 0 success, 1 the work failed (I/O error, corrupt database), 2 bad flags.

use clap::Parser;
use kalah_solver::db::{self, Database, DbError, PageCacheFill};
use kalah_solver::{Board, Capture, EndRule, Endgame, Leftover, Rules};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Time random probes of a kalah endgame database; one JSON object on stdout.
#[derive(Parser, Debug)]
#[command(name = "probe-bench", version)]
struct Args {
    /// Houses per side (1 to 8).
    #[arg(long, default_value_t = 6)]
    houses: usize,
    /// Seeds per house at the start (the database does not depend on it).
    #[arg(long, default_value_t = 4)]
    seeds: u32,
    /// Capture rule: standard (opposite house must hold seeds), empty (always), never.
    #[arg(long, default_value = "standard")]
    capture: String,
    /// Seeds left at the end: owner, emptier, discard.
    #[arg(long, default_value = "owner")]
    leftover: String,
    /// When the game ends: either (either side empty), mover (the player to move has none).
    #[arg(long, default_value = "either")]
    end: String,
    /// Database directory (default data/db/<rules>, as `kalah`).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Random probes to time.
    #[arg(long, default_value_t = 10000)]
    count: u64,
    /// Seed of the random boards.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Probe every board once before timing (a warm process: pages mapped, blocks checked).
    #[arg(long)]
    warm: bool,
    /// Read the levels probed in place into the page cache again first, so that they land in
    /// huge pages (as `kalah solve --db-huge-pages` does).
    #[arg(long)]
    huge_pages: bool,
}

/// Why the benchmark stopped: the exit status and one line.
struct Failure(u8, String);

impl From<DbError> for Failure {
    fn from(e: DbError) -> Self {
        Failure(1, e.to_string())
    }
}

impl Args {
    /// The play rules of the flags (starting seeds zero), or a usage error.
    fn rules(&self) -> Result<Rules, Failure> {
        let usage = |flag: &str, e: String| Failure(2, format!("--{flag}: {e}"));
        let rules = Rules {
            houses: self.houses,
            seeds: self.seeds,
            capture: self
                .capture
                .parse::<Capture>()
                .map_err(|e| usage("capture", e.to_string()))?,
            leftover: self
                .leftover
                .parse::<Leftover>()
                .map_err(|e| usage("leftover", e.to_string()))?,
            end: self
                .end
                .parse::<EndRule>()
                .map_err(|e| usage("end", e.to_string()))?,
        };
        rules.validate().map_err(|e| Failure(2, e.to_string()))?;
        Ok(rules.play_rules())
    }
}

/// A small xorshift generator for the random boards.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn bench(a: &Args) -> Result<(), Failure> {
    let rules = a.rules()?;
    let dir = a
        .dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("data").join("db").join(rules.slug()));
    let t0 = Instant::now();
    let db = Database::open(&dir, &rules)?;
    let open = t0.elapsed();
    // With --huge-pages, the levels probed in place are read again (their cached pages
    // dropped first) when they fit in memory.
    let (read, read_s, huge_bytes) = match a.huge_pages {
        true => match db.fill_page_cache(true, &|_| {})? {
            PageCacheFill::Filled {
                read,
                seconds,
                huge_bytes,
                ..
            } => (read, seconds, huge_bytes),
            PageCacheFill::NoRoom { needed, available } => {
                eprintln!(
                    "not reading the database ahead: {:.2} GB would not fit in the memory available ({:.2} GB)",
                    needed as f64 / 1e9,
                    available as f64 / 1e9
                );
                (0, 0.0, None)
            }
            PageCacheFill::Small => (0, 0.0, None),
        },
        false => (0, 0.0, None),
    };
    let top = db.max_seeds();
    let mut rng = XorShift(a.seed.max(1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let random_board = |rng: &mut XorShift| -> Board {
        let n = db::level_size(rules.houses, top);
        db.board_at(top, rng.next() % n).expect("index in range")
    };
    let first_board = random_board(&mut rng);
    let t1 = Instant::now();
    let first = db.probe(&first_board)?;
    let first_probe = t1.elapsed();
    let boards: Vec<Board> = (0..a.count).map(|_| random_board(&mut rng)).collect();
    if a.warm {
        for b in &boards {
            db.probe(b)?;
        }
    }
    let mut times = Vec::with_capacity(boards.len());
    let mut sum = 0i64;
    for b in &boards {
        let t = Instant::now();
        let v = db.probe(b)?;
        times.push(t.elapsed().as_nanos() as u64);
        sum += v.unwrap_or(0) as i64;
    }
    // The same boards again, the pass timed as a whole (per-probe clocks add their own tens
    // of nanoseconds): warm.
    let t2 = Instant::now();
    let mut pass = 0i64;
    for b in &boards {
        pass += db.probe(b)?.unwrap_or(0) as i64;
    }
    let mean_ns = t2.elapsed().as_nanos() as f64 / boards.len().max(1) as f64;
    times.sort_unstable();
    let pct = |p: f64| {
        times
            .get(((times.len() as f64 - 1.0) * p) as usize)
            .copied()
            .unwrap_or(0) as f64
            / 1000.0
    };
    println!(
        "{}",
        json!({
            "dir": dir.display().to_string(),
            "level": top,
            "open_ms": open.as_secs_f64() * 1e3,
            "first_probe_ms": first_probe.as_secs_f64() * 1e3,
            "first_value": first,
            "probes": a.count,
            "median_us": pct(0.5),
            "p90_us": pct(0.9),
            "p99_us": pct(0.99),
            "warm": a.warm,
            "huge_pages": a.huge_pages,
            "read_bytes": read,
            "read_s": read_s,
            "huge_page_bytes": huge_bytes,
            "mean_ns": mean_ns,
            "checksum": sum,
            "pass_checksum": pass,
        })
    );
    Ok(())
}

fn main() -> ExitCode {
    let args = match Args::try_parse() {
        Ok(a) => a,
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            let text = e.to_string();
            let line = text.lines().next().unwrap_or("error: bad arguments");
            eprintln!("{line} (see --help)");
            return ExitCode::from(2);
        }
    };
    match bench(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(code, message)) => {
            eprintln!("error: {message}");
            ExitCode::from(code)
        }
    }
}
