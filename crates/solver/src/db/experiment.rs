//! Entropy experiments (ignored tests).

use super::format;
use super::rank::{Ranker, Walker};
use super::reader::LevelFile;
use crate::rules::{Capture, EndRule, Leftover, Rules};

struct Counts {
    name: String,
    k: usize,
    map: std::collections::HashMap<u64, Vec<u32>>,
    adaptive: f64,
}

impl Counts {
    fn new(name: &str, k: usize) -> Counts {
        Counts {
            name: name.into(),
            k,
            map: Default::default(),
            adaptive: 0.0,
        }
    }
    fn add(&mut self, ctx: u64, sym: usize) {
        let k = self.k;
        let row = self.map.entry(ctx).or_insert_with(|| vec![0; k + 1]);
        let t = row[k] as f64;
        let c = row[sym] as f64;
        self.adaptive -= ((c + 0.4) / (t + 0.4 * k as f64)).log2();
        row[sym] += 1;
        row[k] += 1;
    }
    fn report(&self, n: u64) {
        let mut h = 0f64;
        for row in self.map.values() {
            let t = row[self.k] as f64;
            for &c in row[..self.k].iter().filter(|&&c| c > 0) {
                h -= c as f64 * (c as f64 / t).log2();
            }
        }
        println!(
            "{:<28} {:>8} ctx  static {:.2}%  adaptive {:.2}%",
            self.name,
            self.map.len(),
            100.0 * h / 8.0 / n as f64,
            100.0 * self.adaptive / 8.0 / n as f64
        );
    }
}

#[test]
#[ignore]
fn tile_contexts() {
    let spec = std::env::var("CTX_LEVEL").unwrap_or("/tmp/bench24r:20".into());
    let (dir, level) = spec.split_once(':').unwrap();
    let s: u32 = level.parse().unwrap();
    let path = format::level_path(std::path::Path::new(dir), s);
    let head = std::fs::read(&path).unwrap();
    let rules = Rules {
        houses: head[16] as usize,
        seeds: 0,
        capture: Capture::from_code(head[17]).unwrap(),
        leftover: Leftover::from_code(head[18]).unwrap(),
        end: EndRule::from_code(head[19]).unwrap(),
    };
    let m = rules.houses;
    let n = super::level_size(m, s);
    let lf = LevelFile::open(&path, &rules, s, n).unwrap();
    let mut values = Vec::new();
    lf.read_all(&mut values).unwrap();
    let full = Ranker::new(m);
    let half = Ranker::new(m.div_ceil(2));
    assert_eq!(m, 6);
    // per mover-seed count t: 2D array [ra][rb]
    let mut grids: Vec<Vec<u8>> = (0..=s)
        .map(|t| vec![0u8; (half.level_size(t) * half.level_size(s - t)) as usize])
        .collect();
    let mut w = Walker::at(&full, s, 0);
    let (_ra, _rb) = (
        std::env::var("REV_A").is_ok(),
        std::env::var("REV_B").is_ok(),
    );
    for &v in values.iter() {
        let c = w.cells;
        let t: u32 = c[..m].iter().map(|&x| x as u32).sum();
        let mut ca = [0u8; 6];
        let mut cb = [0u8; 6];
        ca.copy_from_slice(&c[..m]);
        cb.copy_from_slice(&c[m..2 * m]);
        if _ra {
            ca.reverse();
        }
        if _rb {
            cb.reverse();
        }
        let ra = half.index(&ca, t);
        let rb = half.index(&cb, s - t);
        let wb = half.level_size(s - t);
        grids[t as usize][(ra * wb + rb) as usize] = ((v as i32 + s as i32) / 2) as u8;
        w.advance();
    }
    let k = s as usize + 2; // last symbol = missing
    let miss = (s + 1) as u64;
    let q = k as u64;
    let names = [
        "base",
        "+Lb2",
        "+Lb2,Lb3",
        "+extra",
        "+capt",
        "+Ua2",
        "+Lb2,extra",
        "+Lb2,capt",
    ];
    let mut cs: Vec<Counts> = names.iter().map(|nm| Counts::new(nm, k)).collect();
    let moved = |t: u32, h: usize| -> Vec<u64> {
        let size = half.level_size(t);
        let mut cells = [0u8; 6];
        (0..size)
            .map(|r| {
                half.unrank(r, t, &mut cells);
                if cells[h] > 0 {
                    let mut c2 = cells;
                    c2[h] -= 1;
                    c2[h + 1] += 1;
                    half.index(&c2, t)
                } else {
                    u64::MAX
                }
            })
            .collect()
    };
    for t in 0..=s {
        let ha = half.level_size(t) as usize;
        let wb = half.level_size(s - t) as usize;
        let a2 = moved(t, 3);
        let b2 = moved(s - t, 3);
        let b3 = moved(s - t, 2);
        // row features from a; column features need a and b
        let mut acells = vec![[0u8; 6]; ha];
        for (r, c) in acells.iter_mut().enumerate() {
            half.unrank(r as u64, t, c);
        }
        let mut bcells = vec![[0u8; 6]; wb];
        for (r, c) in bcells.iter_mut().enumerate() {
            half.unrank(r as u64, s - t, c);
        }
        let g = &grids[t as usize];
        let at = |i: isize, j: isize| -> u64 {
            if i < 0 || j < 0 || j >= wb as isize {
                miss
            } else {
                g[i as usize * wb + j as usize] as u64
            }
        };
        let c = |a: u64, b: u64, r: i64| -> u64 {
            if a == miss || b == miss {
                (2 * r + 1) as u64
            } else {
                ((a as i64 - b as i64).clamp(-r, r) + r) as u64
            }
        };
        for i in 0..ha as isize {
            let a = acells[i as usize];
            let extra = (0..6).filter(|&h| a[h] as usize == 6 - h).count().min(2) as u64;
            for j in 0..wb as isize {
                let b = bcells[j as usize];
                // mover house h captures opposite house 5-h of b when empty
                let capt = (0..6).filter(|&h| a[h] == 0 && b[5 - h] > 0).count().min(2) as u64;
                let sym = at(i, j) as usize;
                let l = at(i, j - 1);
                let u = at(i - 1, j);
                let ul = at(i - 1, j - 1);
                let l2 = at(i, j - 2);
                let lb2 = if b2[j as usize] == u64::MAX {
                    miss
                } else {
                    at(i, b2[j as usize] as isize)
                };
                let lb3 = if b3[j as usize] == u64::MAX {
                    miss
                } else {
                    at(i, b3[j as usize] as isize)
                };
                let ua2 = if a2[i as usize] == u64::MAX {
                    miss
                } else {
                    at(a2[i as usize] as isize, j)
                };
                let base = (((l * q + u) * 8 + c(ul, l, 2)) * 8 + c(ul, u, 2)) * 4 + c(l2, l, 1);
                cs[0].add(base, sym);
                cs[1].add(base * 4 + c(lb2, l, 1), sym);
                cs[2].add((base * 4 + c(lb2, l, 1)) * 4 + c(lb3, l, 1), sym);
                cs[3].add(base * 4 + extra, sym);
                cs[4].add(base * 4 + capt, sym);
                cs[5].add(base * 4 + c(ua2, u, 1), sym);
                cs[6].add((base * 4 + c(lb2, l, 1)) * 4 + extra, sym);
                cs[7].add((base * 4 + c(lb2, l, 1)) * 4 + capt, sym);
            }
        }
    }
    println!("level {s}: {n} positions");
    for c in &cs {
        c.report(n);
    }
}

#[test]
#[ignore]
fn grid_sizes() {
    use super::grid::{GridModel, Layout};
    use rayon::prelude::*;
    let spec = std::env::var("CTX_LEVEL").unwrap_or("/tmp/bench24r:20".into());
    let (dir, levels) = spec.split_once(':').unwrap();
    for level in levels.split(',') {
        let s: u32 = level.parse().unwrap();
        let path = format::level_path(std::path::Path::new(dir), s);
        let head = std::fs::read(&path).unwrap();
        let rules = Rules {
            houses: head[16] as usize,
            seeds: 0,
            capture: Capture::from_code(head[17]).unwrap(),
            leftover: Leftover::from_code(head[18]).unwrap(),
            end: EndRule::from_code(head[19]).unwrap(),
        };
        let m = rules.houses;
        let n = super::level_size(m, s);
        let lf = LevelFile::open(&path, &rules, s, n).unwrap();
        let mut values = Vec::new();
        lf.read_all(&mut values).unwrap();
        let t0 = std::time::Instant::now();
        let layout = Layout::new(m, s);
        let file = layout.gather(&values);
        let t1 = t0.elapsed();
        let bs = super::grid::BLOCK;
        let model = GridModel::fit(&file, layout.clone()).unwrap();
        let t2 = t0.elapsed();
        let blocks: Vec<Vec<u8>> = file
            .par_chunks(bs)
            .enumerate()
            .map(|(i, c)| {
                let mut out = Vec::new();
                model.encode_block(i as u64, c, &mut out);
                out
            })
            .collect();
        let t3 = t0.elapsed();
        let mb = model.to_bytes().len();
        let data: usize = blocks.iter().map(|b| b.len()).sum();
        let total = 128 + mb + 16 * blocks.len() + data;
        let t4 = std::time::Instant::now();
        let mut back = vec![0i8; file.len()];
        back.par_chunks_mut(bs).enumerate().for_each(|(i, o)| {
            model.decode_block(i as u64, &blocks[i], o).unwrap();
        });
        let dec = t4.elapsed();
        assert!(back == file);
        let mut lexback = vec![0i8; file.len()];
        let t5 = std::time::Instant::now();
        layout.scatter(&back, &mut lexback, |d, v| *d = v);
        let sc = t5.elapsed();
        assert!(lexback == values);
        // probes
        let mut rng = 0x1234_5678_9abc_def0u64;
        let mut times = Vec::new();
        for _ in 0..20000 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let p = rng % n;
            let t = std::time::Instant::now();
            let v = model
                .decode_at(
                    p / bs as u64,
                    &blocks[(p / bs as u64) as usize],
                    bs.min(file.len() - (p / bs as u64) as usize * bs),
                    (p % bs as u64) as usize,
                )
                .unwrap();
            times.push(t.elapsed().as_nanos());
            assert_eq!(v, file[p as usize]);
        }
        times.sort();
        println!(
            "payload without states or table: {:.3}% model {:.3}%",
            100.0 * (data - 22 * blocks.len()) as f64 / n as f64,
            100.0 * mb as f64 / n as f64
        );
        println!(
            "level {s}: {n} positions, model {mb} B ({} ctx-bytes), total {total} B = {:.2}% (old file {:.2}%); gather {:?} fit {:?} encode {:?} decode {:?} scatter {:?}; probe median {} ns p90 {}",
            mb,
            100.0 * total as f64 / n as f64,
            100.0 * head.len() as f64 / n as f64,
            t1, t2 - t1, t3 - t2, dec, sc,
            times[times.len() / 2], times[times.len() * 9 / 10]
        );
    }
}

#[test]
#[ignore]
fn grid_decode_speed() {
    use super::grid::{GridModel, Layout};
    use rayon::prelude::*;
    let spec = std::env::var("CTX_LEVEL").unwrap_or("/tmp/bench24r:20".into());
    let (dir, level) = spec.split_once(':').unwrap();
    let s: u32 = level.parse().unwrap();
    let path = format::level_path(std::path::Path::new(dir), s);
    let head = std::fs::read(&path).unwrap();
    let rules = Rules {
        houses: head[16] as usize,
        seeds: 0,
        capture: Capture::from_code(head[17]).unwrap(),
        leftover: Leftover::from_code(head[18]).unwrap(),
        end: EndRule::from_code(head[19]).unwrap(),
    };
    let m = rules.houses;
    let n = super::level_size(m, s);
    let lf = LevelFile::open(&path, &rules, s, n).unwrap();
    let mut values = Vec::new();
    lf.read_all(&mut values).unwrap();
    let layout = Layout::new(m, s);
    let file = layout.gather(&values);
    let bs = super::grid::BLOCK;
    let model = GridModel::fit(&file, layout.clone()).unwrap();
    let blocks: Vec<Vec<u8>> = file
        .par_chunks(bs)
        .enumerate()
        .map(|(i, c)| {
            let mut out = Vec::new();
            model.encode_block(i as u64, c, &mut out);
            out
        })
        .collect();
    let nb = 4000.min(blocks.len());
    let mut out = vec![0i8; bs];
    for rep in 0..3 {
        let t = std::time::Instant::now();
        for i in 0..nb {
            let i = i * (blocks.len() / nb);
            let len = bs.min(file.len() - i * bs);
            let _ = model.decode_block(i as u64, &blocks[i], &mut out[..len]);
        }
        let e = t.elapsed();
        println!(
            "rep {rep}: {:.2} ns/value",
            e.as_nanos() as f64 / (nb * bs) as f64
        );
    }
}

#[test]
#[ignore]
fn grid_model_load_time() {
    let path = std::env::var("GRID_FILE").unwrap_or("/tmp/bg24/level-024.kdb".into());
    let bytes = std::fs::read(&path).unwrap();
    let len = u64::from_le_bytes(bytes[80..88].try_into().unwrap()) as usize;
    let model = &bytes[128..128 + len];
    for _ in 0..3 {
        let t = std::time::Instant::now();
        let m = super::grid::GridModel::from_bytes(model, 6, 24).unwrap();
        let e = t.elapsed();
        let t = std::time::Instant::now();
        let l = super::grid::Layout::new(6, 24);
        println!(
            "from_bytes {:?}, layout alone {:?} ({m:?}, {})",
            e,
            t.elapsed(),
            l.len()
        );
    }
}
