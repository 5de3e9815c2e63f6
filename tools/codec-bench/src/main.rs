//! Measures the level-file codecs on real levels (see README.md).

use clap::Parser;
use kalah_solver::db::bench::{self, Level};
use kalah_solver::db::{self, Codec};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Measures the codecs of the endgame database's level files on real levels: bytes, ratio,
/// encode, decode and probe speed.
#[derive(Parser, Debug)]
#[command(name = "codec-bench", version)]
struct Args {
    /// The database directory holding the levels (any rules).
    #[arg(long)]
    dir: PathBuf,
    /// The levels to measure, comma-separated (default: every level file in the directory).
    #[arg(long, value_delimiter = ',')]
    levels: Vec<u32>,
    /// The codecs to compare, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "grid,rans,zstd,stored,search"
    )]
    codecs: Vec<Codec>,
    /// Also rans with blocks of these sizes (positions, comma-separated; each with every
    /// `--rans-scales`).
    #[arg(long, value_delimiter = ',')]
    rans_blocks: Vec<u32>,
    /// The precisions (bits, 12 to 14) of the frequency tables of `--rans-blocks`.
    #[arg(long, value_delimiter = ',', default_value = "12")]
    rans_scales: Vec<u32>,
    /// Random positions probed per codec.
    #[arg(long, default_value_t = 200_000)]
    probes: u64,
    /// Threads for encoding and decoding.
    #[arg(long, default_value_t = 1)]
    threads: usize,
}

/// What one codec (with its parameters) is measured as.
#[derive(Clone, Copy, Debug)]
enum Variant {
    Codec(Codec),
    Rans { block: u32, scale: u32 },
}

fn main() -> ExitCode {
    let args = Args::parse();
    let pool = match rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads.max(1))
        .build()
    {
        Ok(pool) => pool,
        Err(e) => {
            eprintln!("codec-bench: {e}");
            return ExitCode::FAILURE;
        }
    };
    match pool.install(|| run(&args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("codec-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<(), String> {
    if let Some(s) = args.rans_scales.iter().find(|s| !(12..=14).contains(*s)) {
        return Err(format!("--rans-scales: {s} is not 12, 13 or 14"));
    }
    if args.rans_blocks.contains(&0) {
        return Err("--rans-blocks: a block holds at least one position".into());
    }
    let levels = if args.levels.is_empty() {
        (0..=db::MAX_DB_LEVEL)
            .filter(|&l| db::level_path(&args.dir, l).exists())
            .collect()
    } else {
        args.levels.clone()
    };
    if levels.is_empty() {
        return Err(format!("no level files in {}", args.dir.display()));
    }
    let mut variants: Vec<Variant> = args.codecs.iter().map(|&c| Variant::Codec(c)).collect();
    for &block in &args.rans_blocks {
        for &scale in &args.rans_scales {
            variants.push(Variant::Rans { block, scale });
        }
    }
    for level in levels {
        let path = db::level_path(&args.dir, level);
        let data = bench::read_level(&args.dir, level).map_err(|e| e.to_string())?;
        let n = data.values.len() as u64;
        println!(
            "{} ({}): {n} positions; the file: {} bytes, {:.2}% of a byte per position ({})",
            path.display(),
            data.rules.slug(),
            data.file_bytes,
            percent(data.file_bytes, n),
            data.codec,
        );
        let (h0, h1) = entropies(&data.values, level);
        println!(
            "  entropy: order 0 {h0:.3} bits, order 1 {h1:.3} bits a position ({:.2}% of a byte)",
            100.0 * h1 / 8.0
        );
        for &v in &variants {
            measure(&data, v, args.probes)?;
        }
    }
    Ok(())
}

/// Encodes, decodes and probes one level in one variant; prints one line.
fn measure(data: &Level, variant: Variant, probes: u64) -> Result<(), String> {
    let n = data.values.len() as u64;
    let t = Instant::now();
    let encoded = match variant {
        Variant::Codec(codec) => bench::encode(data, codec),
        Variant::Rans { block, scale } => bench::encode_rans(data, block, scale),
    }
    .map_err(|e| e.to_string())?;
    let encode_s = t.elapsed().as_secs_f64();
    let mut out = vec![0u8; n as usize];
    let t = Instant::now();
    encoded.decode_into(&mut out).map_err(|e| e.to_string())?;
    let decode_s = t.elapsed().as_secs_f64();
    if let Some(k) = (0..n as usize).find(|&k| out[k] as i8 != data.values[k]) {
        return Err(format!(
            "{}: position {k} decodes to {}, not {}",
            encoded.describe(),
            out[k] as i8,
            data.values[k]
        ));
    }
    drop(out);
    // Random positions (xorshift*, the same for every codec), each placed (unranked) before
    // the clock starts.
    let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ n;
    let places: Vec<_> = (0..if n == 0 { 0 } else { probes })
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            encoded.place(x.wrapping_mul(0x2545_f491_4f6c_dd1d) % n)
        })
        .collect();
    let t = Instant::now();
    let mut sum = 0i64;
    for p in &places {
        sum += encoded.probe(p).map_err(|e| e.to_string())? as i64;
    }
    let probe_s = t.elapsed().as_secs_f64();
    let want: i64 = places
        .iter()
        .map(|p| data.values[p.index() as usize] as i64)
        .sum();
    if sum != want {
        return Err(format!(
            "{}: probes disagree with the level",
            encoded.describe()
        ));
    }
    let rate = |s: f64| {
        if s > 0.0 {
            n as f64 / s / 1e6
        } else {
            f64::INFINITY
        }
    };
    println!(
        "  {:<28} {:>12} bytes {:>7.2}% (model {}, table {}); encode {:>6.0} M/s, decode {:>6.0} M/s, probe {:>6.3} us",
        encoded.describe(),
        encoded.file_bytes(),
        percent(encoded.file_bytes(), n),
        encoded.model_bytes(),
        encoded.table_bytes(),
        rate(encode_s),
        rate(decode_s),
        if places.is_empty() { 0.0 } else { probe_s / places.len() as f64 * 1e6 },
    );
    Ok(())
}

/// `bytes` as a percentage of one byte per position.
fn percent(bytes: u64, positions: u64) -> f64 {
    100.0 * bytes as f64 / positions.max(1) as f64
}

/// The order-0 and order-1 entropies of the values of level `level` in index order (the
/// context of a value: the one before it), in bits a value.
fn entropies(values: &[i8], level: u32) -> (f64, f64) {
    let lim = level.min(127) as i16;
    let mut c0 = [0u64; 256];
    let mut c1 = vec![[0u64; 256]; 256];
    let mut ctx = 255usize;
    for &v in values {
        let s = ((v as i16 + lim) as usize).min(254);
        c0[s] += 1;
        c1[ctx][s] += 1;
        ctx = s;
    }
    let h = |row: &[u64]| {
        let t: u64 = row.iter().sum();
        row.iter()
            .filter(|&&c| c > 0)
            .map(|&c| -(c as f64) * (c as f64 / t as f64).log2())
            .sum::<f64>()
    };
    let n = values.len().max(1) as f64;
    // (`abs` turns the -0 of a level of one value into 0.)
    let h1: f64 = c1.iter().map(|r| h(r)).sum();
    ((h(&c0) / n).abs(), (h1 / n).abs())
}
