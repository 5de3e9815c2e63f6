//! `kalah db`: build, convert, inspect and verify endgame databases.

use super::common::{
    cancel_flag, default_db_dir, progress_bar, show_progress, spinner, CliError, CliResult,
    RuleArgs, EXIT_INTERRUPTED,
};
use clap::{Args, Subcommand};
use indicatif::ProgressBar;
use kalah_solver::db::{self, Codec, Database, DbError, Phase, Progress};
use kalah_solver::Rules;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

/// Arguments of `kalah db`.
#[derive(Args, Debug)]
pub struct DbArgs {
    #[command(subcommand)]
    pub command: DbCommand,
}

/// The subcommands of `kalah db`.
#[derive(Subcommand, Debug)]
pub enum DbCommand {
    /// Build the levels 0..=N that are missing (finished levels are kept and skipped).
    Build(BuildArgs),
    /// Rewrite every level of a database into another directory in another codec (levels
    /// already there in that codec are checked and kept).
    Convert(ConvertArgs),
    /// Levels present, positions, bytes on disk, codec, compression and a histogram of values.
    Info(InfoArgs),
    /// Check every checksum; with --full, recompute every value from its children.
    Verify(VerifyArgs),
    /// Join the slices of a level built apart (`db build --slice I/K`) into its file.
    Join(JoinArgs),
    /// Compare the values of every level two databases both hold (say a level's search form
    /// against its grid or stored form); exit status 1 if any differ.
    Compare(CompareArgs),
}

/// Arguments of `kalah db build`.
#[derive(Args, Debug)]
pub struct BuildArgs {
    /// Build every level up to this many seeds in the houses.
    #[arg(long)]
    pub upto: u32,
    #[command(flatten)]
    pub rules: RuleArgs,
    /// Database directory (default data/db/<rules>).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// How new levels are written: grid, rans or zstd (small files, loaded into memory before
    /// a search; grid is the smallest, rans the fastest to write), stored (one byte per
    /// position, probed straight from the file) or search (four bits per position, probed
    /// straight from the file). Levels already present are kept whatever their codec.
    #[arg(long, default_value = "grid")]
    pub codec: String,
    /// Compute only slice I of K of the top level (I from 1): its boards are written to
    /// level-NNN.slice-I-of-K.kslc, for `kalah db join` once all K slices are there. The
    /// lower levels are built first where missing.
    #[arg(long, value_name = "I/K")]
    pub slice: Option<String>,
    /// Memory in MiB for the lower levels' values, one byte each (default: half of the
    /// machine's memory); when they need more, they are held in half a byte each: the same
    /// files, built more slowly.
    #[arg(long, value_name = "MB")]
    pub memory_mb: Option<u64>,
    /// Print a JSON summary instead of text (and no progress bars).
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `kalah db compare`.
#[derive(Args, Debug)]
pub struct CompareArgs {
    #[command(flatten)]
    pub rules: RuleArgs,
    /// One database directory (default data/db/<rules>).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// The other database directory.
    #[arg(long)]
    pub other: PathBuf,
    /// Print a JSON summary instead of text (and no progress bars).
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `kalah db join`.
#[derive(Args, Debug)]
pub struct JoinArgs {
    /// The level whose slices are joined.
    #[arg(long)]
    pub level: u32,
    /// How many slices it was cut into.
    #[arg(long)]
    pub slices: u32,
    #[command(flatten)]
    pub rules: RuleArgs,
    /// Database directory holding the slice files (default data/db/<rules>); the level file
    /// is written there.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Codec of the level file: grid, rans, zstd, stored or search.
    #[arg(long, default_value = "grid")]
    pub codec: String,
    /// Print a JSON summary instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `kalah db convert`.
#[derive(Args, Debug)]
pub struct ConvertArgs {
    #[command(flatten)]
    pub rules: RuleArgs,
    /// Source database directory (default data/db/<rules>).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Destination directory (created if needed; may be the source directory).
    #[arg(long)]
    pub to: PathBuf,
    /// Codec of the files written: grid, rans, zstd, stored or search.
    #[arg(long)]
    pub codec: String,
    /// Print a JSON summary instead of text (and no progress bars).
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `kalah db info`.
#[derive(Args, Debug)]
pub struct InfoArgs {
    #[command(flatten)]
    pub rules: RuleArgs,
    /// Database directory (default data/db/<rules>).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Leave out the histogram of values (read from each level file; a level written by a
    /// version before 2 is decoded to count its values).
    #[arg(long)]
    pub no_histogram: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `kalah db verify`.
#[derive(Args, Debug)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub rules: RuleArgs,
    /// Database directory (default data/db/<rules>).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Also recompute every value from its children.
    #[arg(long)]
    pub full: bool,
    /// With --full: memory in MiB for the lower levels' values, as `db build --memory-mb`.
    #[arg(long, value_name = "MB")]
    pub memory_mb: Option<u64>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Runs `kalah db`.
pub fn run(args: &DbArgs) -> CliResult {
    match &args.command {
        DbCommand::Build(a) => build(a),
        DbCommand::Convert(a) => convert(a),
        DbCommand::Join(a) => join(a),
        DbCommand::Compare(a) => compare(a),
        DbCommand::Info(a) => info(a),
        DbCommand::Verify(a) => verify(a),
    }
}

fn dir_for(dir: &Option<PathBuf>, rules: &Rules) -> PathBuf {
    dir.clone().unwrap_or_else(|| default_db_dir(rules))
}

/// The `--codec` flag, or a usage error.
fn parse_codec(s: &str) -> CliResult<Codec> {
    s.parse::<Codec>()
        .map_err(|e| CliError::usage(format!("--codec: {e}")))
}

/// Bytes of the files of `levels` in `dir` (a missing file counts nothing).
fn bytes_on_disk(dir: &Path, levels: impl Iterator<Item = u32>) -> u64 {
    levels
        .map(|l| {
            std::fs::metadata(db::level_path(dir, l))
                .map(|m| m.len())
                .unwrap_or(0)
        })
        .sum()
}

fn db_error(e: DbError) -> CliError {
    match e {
        DbError::Interrupted { .. } => CliError {
            code: EXIT_INTERRUPTED,
            message: e.to_string(),
        },
        e => CliError::failure(e.to_string()),
    }
}

/// Draws the progress reports of the library: one bar per level and phase.
struct Bars {
    visible: bool,
    bar: Mutex<Option<ProgressBar>>,
    /// Print one line per finished level on stderr (text mode).
    lines: bool,
}

impl Bars {
    fn new(visible: bool, lines: bool) -> Bars {
        Bars {
            visible,
            bar: Mutex::new(None),
            lines,
        }
    }

    fn report(&self, p: &Progress) {
        let mut slot = self.bar.lock().unwrap_or_else(|e| e.into_inner());
        match p {
            Progress::Start {
                level,
                phase,
                total,
            } => {
                let bar = if matches!(phase, Phase::Solve | Phase::Recompute) {
                    progress_bar(
                        *total,
                        "{msg:>18} [{elapsed_precise}] [{wide_bar}] {human_pos}/{human_len} \
                         {per_sec} ETA {eta}",
                        self.visible,
                    )
                } else {
                    spinner(self.visible)
                };
                bar.set_message(format!("level {level} {}", phase.name()));
                *slot = Some(bar);
            }
            Progress::Advance { done, .. } => {
                if let Some(b) = slot.as_ref() {
                    b.set_position(*done);
                }
            }
            Progress::Finish { .. } => {
                if let Some(b) = slot.take() {
                    b.finish_and_clear();
                }
            }
            Progress::Skipped { level } => {
                if self.lines {
                    eprintln!("level {level}: present and valid, kept");
                }
            }
            Progress::Invalid { level, problem } => {
                eprintln!("level {level}: rebuilding: {problem}");
            }
            Progress::Written {
                level,
                positions,
                bytes,
                seconds,
            } => {
                if self.lines {
                    eprintln!(
                        "level {level}: {positions} positions in {seconds:.2} s \
                         ({:.1} M/s), {bytes} bytes ({:.1}% of a byte each)",
                        *positions as f64 / seconds.max(1e-9) / 1e6,
                        100.0 * *bytes as f64 / *positions as f64
                    );
                }
            }
        }
    }
}

/// `I/K` (1 <= I <= K) as (I - 1, K).
fn parse_slice(s: &str) -> CliResult<(u32, u32)> {
    let bad = || {
        CliError::usage(format!(
            "--slice {s:?}: expected I/K, slice I (from 1) of K, e.g. 2/4"
        ))
    };
    let (i, k) = s.split_once('/').ok_or_else(bad)?;
    let (i, k): (u32, u32) = (
        i.trim().parse().map_err(|_| bad())?,
        k.trim().parse().map_err(|_| bad())?,
    );
    if i == 0 || i > k {
        return Err(bad());
    }
    Ok((i - 1, k))
}

fn compare(a: &CompareArgs) -> CliResult {
    let rules = a.rules.rules()?.play_rules();
    let dir = dir_for(&a.dir, &rules);
    let bars = Bars::new(show_progress(a.json), false);
    let t = Instant::now();
    let levels = db::compare(&dir, &a.other, &rules, &|p| bars.report(p), cancel_flag())
        .map_err(db_error)?;
    let differ: u64 = levels.iter().map(|l| l.differences).sum();
    if a.json {
        let rows: Vec<_> = levels
            .iter()
            .map(|l| {
                json!({
                    "level": l.level,
                    "positions": l.positions,
                    "differences": l.differences,
                    "first": l.first,
                    "codecs": [l.codecs.0.name(), l.codecs.1.name()],
                })
            })
            .collect();
        println!(
            "{}",
            json!({"levels": rows, "differences": differ, "seconds": t.elapsed().as_secs_f64()})
        );
    } else {
        for l in &levels {
            match l.first {
                None => println!(
                    "level {}: {} positions, the same values ({} and {})",
                    l.level, l.positions, l.codecs.0, l.codecs.1
                ),
                Some(i) => println!(
                    "level {}: {} of {} positions differ, the first at index {i}",
                    l.level, l.differences, l.positions
                ),
            }
        }
        println!(
            "{} levels compared in {:.1} s: {}",
            levels.len(),
            t.elapsed().as_secs_f64(),
            if differ == 0 {
                "all the same"
            } else {
                "VALUES DIFFER"
            }
        );
    }
    if levels.is_empty() {
        return Err(CliError::usage(format!(
            "{} and {} have no level in common",
            dir.display(),
            a.other.display()
        )));
    }
    if differ > 0 {
        return Err(CliError::failure(format!("{differ} values differ")));
    }
    Ok(())
}

fn join(a: &JoinArgs) -> CliResult {
    let rules = a.rules.rules()?.play_rules();
    let codec = parse_codec(&a.codec)?;
    let dir = dir_for(&a.dir, &rules);
    let t = Instant::now();
    let r = db::join_slices(&dir, &rules, a.level, a.slices, codec).map_err(db_error)?;
    if a.json {
        println!(
            "{}",
            json!({
                "level": a.level,
                "slices": r.slices.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
                "file": r.path.display().to_string(),
                "codec": codec.name(),
                "bytes": r.bytes,
                "seconds": t.elapsed().as_secs_f64(),
            })
        );
    } else {
        println!(
            "{}: level {} joined from {} slices, {} bytes ({codec}), {:.2} s",
            r.path.display(),
            a.level,
            r.slices.len(),
            r.bytes,
            t.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

fn build(a: &BuildArgs) -> CliResult {
    let rules = a.rules.rules()?.play_rules();
    let codec = parse_codec(&a.codec)?;
    let dir = dir_for(&a.dir, &rules);
    let cancel = cancel_flag();
    let bars = Bars::new(show_progress(a.json), !a.json);
    let t = Instant::now();
    if let Some(slice) = &a.slice {
        let (i, k) = parse_slice(slice)?;
        let report = db::build_slice(
            &dir,
            &rules,
            a.upto,
            (i, k),
            codec,
            &|p| bars.report(p),
            cancel,
        )
        .map_err(db_error)?;
        let path = db::slice_path(&dir, a.upto, i, k);
        if a.json {
            println!(
                "{}",
                json!({
                    "dir": dir.display().to_string(),
                    "rules": rules.slug(),
                    "level": a.upto,
                    "slice": i + 1,
                    "slices": k,
                    "file": path.display().to_string(),
                    "built": report.built,
                    "skipped": report.skipped,
                    "positions_built": report.positions_built,
                    "solve_seconds": report.solve_seconds,
                    "wall_seconds": t.elapsed().as_secs_f64(),
                })
            );
        } else {
            println!(
                "{}: slice {} of {k} of level {} ({} positions solved in {:.2} s); \
                 `kalah db join --level {} --slices {k}` once all {k} are in one directory",
                path.display(),
                i + 1,
                a.upto,
                report.positions_built,
                report.solve_seconds,
                a.upto
            );
        }
        return Ok(());
    }
    let memory = a.memory_mb.map(db::MemoryBudget::mib).unwrap_or_default();
    let report = db::build_with(
        &dir,
        &rules,
        a.upto,
        codec,
        memory,
        &|p| bars.report(p),
        cancel,
    )
    .map_err(db_error)?;
    let wall = t.elapsed().as_secs_f64();
    let positions: u64 = (0..=a.upto).map(|l| db::level_size(rules.houses, l)).sum();
    let bytes = bytes_on_disk(&dir, 0..=a.upto);
    if a.json {
        println!(
            "{}",
            json!({
                "dir": dir.display().to_string(),
                "rules": rules.slug(),
                "upto": a.upto,
                "codec": codec.name(),
                "built": report.built,
                "skipped": report.skipped,
                "positions": positions,
                "positions_built": report.positions_built,
                "solve_seconds": report.solve_seconds,
                "wall_seconds": wall,
                "bytes": bytes,
            })
        );
    } else {
        println!(
            "{}: levels 0..={} for {} ({} built, {} kept), {} positions, {} bytes on disk \
             ({:.1}% of a byte per position); {} positions solved in {:.2} s ({:.1} M/s), \
             {:.2} s in all",
            dir.display(),
            a.upto,
            rules.slug(),
            report.built.len(),
            report.skipped.len(),
            positions,
            bytes,
            100.0 * bytes as f64 / positions as f64,
            report.positions_built,
            report.solve_seconds,
            report.positions_built as f64 / report.solve_seconds.max(1e-9) / 1e6,
            wall
        );
    }
    Ok(())
}

/// Makes sure `dir` holds levels `0..=upto` for `rules`, building what is missing (in the search
/// form, read in place: nothing to decode when a search opens it) with the same
/// progress display as `kalah db build` (a line on stderr when something was built).
pub fn ensure_levels(dir: &Path, rules: &Rules, upto: u32, json: bool) -> CliResult {
    let rules = rules.play_rules();
    let bars = Bars::new(show_progress(json), false);
    let t = Instant::now();
    let report = db::build(
        dir,
        &rules,
        upto,
        // The search form: probed in place, so that no process decodes anything to open it.
        Codec::Search,
        &|p| bars.report(p),
        cancel_flag(),
    )
    .map_err(db_error)?;
    if !report.built.is_empty() && !json {
        eprintln!(
            "built the endgame database {} (levels {:?}) in {:.1} s",
            dir.display(),
            report.built,
            t.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

fn convert(a: &ConvertArgs) -> CliResult {
    let rules = a.rules.rules()?.play_rules();
    let codec = parse_codec(&a.codec)?;
    let src = dir_for(&a.dir, &rules);
    let cancel = cancel_flag();
    let bars = Bars::new(show_progress(a.json), !a.json);
    let t = Instant::now();
    let report =
        db::convert(&src, &a.to, &rules, codec, &|p| bars.report(p), cancel).map_err(db_error)?;
    let wall = t.elapsed().as_secs_f64();
    let levels: Vec<u32> = report
        .converted
        .iter()
        .chain(&report.skipped)
        .copied()
        .collect();
    let positions: u64 = levels
        .iter()
        .map(|&l| db::level_size(rules.houses, l))
        .sum();
    let bytes = bytes_on_disk(&a.to, levels.iter().copied());
    if a.json {
        println!(
            "{}",
            json!({
                "dir": src.display().to_string(),
                "to": a.to.display().to_string(),
                "rules": rules.slug(),
                "codec": codec.name(),
                "converted": report.converted,
                "skipped": report.skipped,
                "positions": positions,
                "bytes": bytes,
                "wall_seconds": wall,
            })
        );
    } else {
        println!(
            "{} -> {}: {} levels for {} in {} ({} converted, {} kept), {} positions, {} bytes \
             on disk ({:.1}% of a byte per position), {:.2} s",
            src.display(),
            a.to.display(),
            levels.len(),
            rules.slug(),
            codec,
            report.converted.len(),
            report.skipped.len(),
            positions,
            bytes,
            100.0 * bytes as f64 / positions.max(1) as f64,
            wall
        );
    }
    Ok(())
}

fn info(a: &InfoArgs) -> CliResult {
    let rules = a.rules.rules()?.play_rules();
    let dir = dir_for(&a.dir, &rules);
    let db = Database::open(&dir, &rules).map_err(db_error)?;
    let spin = spinner(show_progress(a.json) && !a.no_histogram);
    let info = db
        .info(!a.no_histogram, &mut |l| {
            spin.set_message(format!("histogram of level {l}"))
        })
        .map_err(db_error)?;
    spin.finish_and_clear();
    if a.json {
        let lv: Vec<_> = info
            .levels
            .iter()
            .map(|s| {
                let l = &s.info;
                let mut o = json!({
                    "level": l.level,
                    "file": l.path.display().to_string(),
                    "positions": l.positions,
                    "bytes": l.bytes,
                    "ratio": l.bytes as f64 / l.positions as f64,
                    "codec": l.codec.name(),
                    "block_size": l.block_size,
                    "blocks": l.blocks,
                });
                if let Some(h) = &s.histogram {
                    let map: serde_json::Map<String, serde_json::Value> =
                        h.iter().map(|&(v, c)| (v.to_string(), json!(c))).collect();
                    o["histogram"] = serde_json::Value::Object(map);
                }
                o
            })
            .collect();
        println!(
            "{}",
            json!({
                "dir": dir.display().to_string(),
                "rules": rules.slug(),
                "max_seeds": info.max_seeds,
                "positions": info.positions,
                "bytes": info.bytes,
                "ratio": info.bytes as f64 / info.positions as f64,
                "levels": lv,
            })
        );
        return Ok(());
    }
    println!("database {} for rules {}", dir.display(), rules.slug());
    println!(
        "levels 0..={}: {} positions, {} bytes on disk, {:.2}% of a byte per position",
        info.max_seeds,
        info.positions,
        info.bytes,
        100.0 * info.bytes as f64 / info.positions as f64
    );
    println!(
        "{:>5} {:>14} {:>14} {:>7} {:>6}  values (value:count, most common first)",
        "level", "positions", "bytes", "ratio", "codec"
    );
    for s in &info.levels {
        let l = &s.info;
        let hist = match &s.histogram {
            None => String::new(),
            Some(h) => {
                let mut v = h.clone();
                v.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
                let shown: Vec<String> = v
                    .iter()
                    .take(9)
                    .map(|(k, c)| format!("{k:+}:{c}"))
                    .collect();
                let more = if v.len() > 9 {
                    format!(" (+{} more)", v.len() - 9)
                } else {
                    String::new()
                };
                format!("{}{more}", shown.join(" "))
            }
        };
        println!(
            "{:>5} {:>14} {:>14} {:>6.1}% {:>6}  {}",
            l.level,
            l.positions,
            l.bytes,
            100.0 * l.bytes as f64 / l.positions as f64,
            l.codec.name(),
            hist
        );
    }
    Ok(())
}

fn verify(a: &VerifyArgs) -> CliResult {
    let rules = a.rules.rules()?.play_rules();
    let dir = dir_for(&a.dir, &rules);
    let cancel = cancel_flag();
    let bars = Bars::new(show_progress(a.json), false);
    let t = Instant::now();
    let memory = a.memory_mb.map(db::MemoryBudget::mib).unwrap_or_default();
    let report = db::verify_with(&dir, &rules, a.full, memory, &|p| bars.report(p), cancel)
        .map_err(db_error)?;
    let wall = t.elapsed().as_secs_f64();
    if a.json {
        let levels: Vec<_> = report
            .levels
            .iter()
            .map(|l| {
                json!({
                    "level": l.level,
                    "file": l.path.display().to_string(),
                    "positions": l.positions,
                    "recomputed": l.recomputed,
                    "ok": l.problems.is_empty(),
                    "problems": l.problems,
                })
            })
            .collect();
        println!(
            "{}",
            json!({
                "dir": dir.display().to_string(),
                "rules": rules.slug(),
                "full": a.full,
                "ok": report.ok(),
                "problems": report.problems,
                "levels": levels,
                "seconds": wall,
            })
        );
    } else {
        for l in &report.levels {
            if l.problems.is_empty() {
                println!(
                    "level {:>3}: ok ({} positions{})",
                    l.level,
                    l.positions,
                    if l.recomputed { ", recomputed" } else { "" }
                );
            } else {
                for p in &l.problems {
                    println!("level {:>3}: FAILED: {p}", l.level);
                }
            }
        }
        for p in &report.problems {
            println!("FAILED: {p}");
        }
    }
    if report.ok() {
        if !a.json {
            println!(
                "{}: all {} level files valid ({:.2} s)",
                dir.display(),
                report.levels.len(),
                wall
            );
        }
        Ok(())
    } else {
        let first = report
            .levels
            .iter()
            .flat_map(|l| l.problems.iter())
            .chain(&report.problems)
            .next()
            .cloned()
            .unwrap_or_default();
        Err(CliError::failure(format!(
            "database {} failed verification: {first}",
            dir.display()
        )))
    }
}
