//! The tests of the grid codec: its layout, contexts, model and blocks.

use super::layout::COLUMN_CARRY;
use super::*;
use crate::db::rank::Ranker;
use crate::rules::MAX_HOUSES;
use std::sync::atomic::AtomicI8;

#[test]
fn layout_is_a_bijection_and_gather_scatter_invert() {
    for (m, s) in [(1, 5), (2, 7), (3, 6), (4, 9), (6, 5)] {
        let r = Ranker::new(m);
        let n = r.level_size(s);
        let layout = Layout::new(m, s);
        assert_eq!(layout.len(), n);
        let mut seen = vec![false; n as usize];
        let mut cells = [0u8; 2 * MAX_HOUSES];
        let mut by_pos = vec![0u64; n as usize];
        for idx in 0..n {
            r.unrank(idx, s, &mut cells);
            let p = layout.file_pos(&cells);
            assert!(!seen[p as usize], "m={m} s={s} place {p} twice");
            seen[p as usize] = true;
            by_pos[p as usize] = idx;
        }
        // The cursor walks the file order: its group is the mover's seeds, and
        // `cursor(p)` agrees with advancing from 0.
        let mut c = layout.cursor(0);
        for (p, &idx) in by_pos.iter().enumerate() {
            assert_eq!(layout.cursor(p as u64), c, "m={m} s={s} p={p}");
            r.unrank(idx, s, &mut cells);
            let t: u32 = cells[..m].iter().map(|&x| x as u32).sum();
            assert_eq!(c.t as u32, t);
            layout.advance(&mut c);
        }
        let values: Vec<i8> = (0..n).map(|i| (i % 251) as i8).collect();
        let file = layout.gather(&values);
        for (p, &idx) in by_pos.iter().enumerate() {
            assert_eq!(file[p], values[idx as usize]);
        }
        // Written back run by run (blocks of any length, from any place): every index
        // once.
        let rows = layout.rows();
        for len in [1usize, 7, 64, 1000] {
            let back: Vec<AtomicI8> = (0..n).map(|_| AtomicI8::new(-1)).collect();
            for (c, run) in file.chunks(len).enumerate() {
                layout.write(&rows, (c * len) as u64, run, &back);
            }
            let back: Vec<i8> = back.into_iter().map(AtomicI8::into_inner).collect();
            assert_eq!(back, values, "m={m} s={s} runs of {len}");
        }
        // Any run of places read straight from the level in index order.
        for first in (0..n).step_by(7) {
            for len in [1, 2, 63, 64, 65, 200, 1000] {
                let len = len.min(n - first) as usize;
                let mut out = vec![0i8; len];
                layout.read(&rows, &values, first, &mut out);
                assert_eq!(
                    out,
                    file[first as usize..first as usize + len],
                    "m={m} s={s}"
                );
            }
        }
    }
}

/// Values with the parity of the level and some structure.
fn level_values(m: usize, s: u32) -> Vec<i8> {
    let r = Ranker::new(m);
    let n = r.level_size(s);
    let mut cells = [0u8; 2 * MAX_HOUSES];
    (0..n)
        .map(|i| {
            r.unrank(i, s, &mut cells);
            let mine: i32 = cells[..m].iter().map(|&x| x as i32).sum();
            let v =
                (2 * mine - s as i32 + (cells[0] as i32 % 3) * 2 - 2).clamp(-(s as i32), s as i32);
            v as i8
        })
        .collect()
}

/// Encodes a level's values (index order) block by block.
fn encode_level(model: &GridModel, file: &[i8]) -> Vec<Vec<u8>> {
    file.chunks(model.block())
        .enumerate()
        .map(|(i, b)| {
            let mut enc = Vec::new();
            model.encode_block(i as u64, b, &mut enc);
            enc
        })
        .collect()
}

#[test]
fn columns_name_their_neighbours() {
    for (m, s) in [(2, 5), (3, 6), (4, 9), (6, 7)] {
        let layout = Layout::new(m, s);
        let r = Ranker::new(m);
        let mut pos = 0;
        while pos < layout.len() {
            let c = layout.cursor(pos);
            let cols = layout.columns(&c);
            let side = |rank: u64| {
                let mut b = [0u8; MAX_HOUSES];
                r.unrank_part(rank, s - c.t as u32, &mut b[..m]);
                b
            };
            for j in 0..c.w {
                let rb = c.k * STRIP + j;
                let b = side(rb);
                let col = cols[j as usize];
                // The carry flag: the column to the left is not this side with one seed
                // moved back between the last two houses.
                if j > 0 {
                    let mut near = side(rb - 1);
                    let neighbour = near[m - 1] > 0 && {
                        near[m - 1] -= 1;
                        near[m - 2] += 1;
                        near == b
                    };
                    assert_eq!(col & COLUMN_CARRY == 0, neighbour, "m={m} s={s} rb={rb}");
                }
                // The distance to the side with one seed moved from the third-last house
                // to the next.
                let d = (col & (COLUMN_CARRY - 1)) as u64;
                if m >= 3 && b[m - 3] > 0 {
                    let mut moved = b;
                    moved[m - 3] -= 1;
                    moved[m - 2] += 1;
                    assert_eq!(r.rank_part(&moved[..m], s - c.t as u32), rb - d);
                } else {
                    assert_eq!(d, 0);
                }
            }
            pos += c.w * layout.groups[c.t].rows;
        }
    }
}

#[test]
fn blocks_round_trip_and_probe() {
    for (m, s) in [(2, 9), (3, 8), (6, 6), (4, 10), (2, 30), (6, 9)] {
        let values = level_values(m, s);
        let layout = Layout::new(m, s);
        let file = layout.gather(&values);
        let model = GridModel::fit(&file, layout.clone()).unwrap();
        let bytes = model.to_bytes();
        let model = GridModel::from_bytes(&bytes, m, s, 3).unwrap();
        assert_eq!(model.to_bytes(), bytes);
        // A model of format versions 1 and 2 (no carry flag), in their wider form.
        let old = GridModel::fit_v2(&file, layout).to_bytes_v2();
        let old_model = GridModel::from_bytes(&old, m, s, 2).unwrap();
        assert_eq!(old_model.to_bytes_v2(), old);
        assert!(GridModel::from_bytes(&old, m, s, 3).is_err());
        // Blocks of format version 3, and of versions 1 and 2.
        for model in [model, old_model] {
            for (i, (block, enc)) in file
                .chunks(model.block())
                .zip(encode_level(&model, &file))
                .enumerate()
            {
                let i = i as u64;
                let mut out = vec![0i8; block.len()];
                model.decode_block(i, &enc, &mut out).unwrap();
                assert_eq!(out, block, "m={m} s={s} block {i}");
                let len = block.len();
                let mut qs = vec![0, len / 2, len - 1];
                qs.extend((0..len).step_by(97));
                qs.extend([SUB - 1, SUB, 3 * SUB + 1].iter().filter(|&&q| q < len));
                for q in qs {
                    assert_eq!(model.decode_at(i, &enc, len, q).unwrap(), block[q]);
                }
                assert!(model.decode_at(i, &enc, len, len).is_err());
                // Damage: never a panic, never a value out of range; a whole-block decode
                // finds every change of a byte of states, lengths or the first words.
                for at in 0..enc.len().min(model.head() + 16) {
                    let mut bad = enc.clone();
                    bad[at] ^= 0x5a;
                    match model.decode_block(i, &bad, &mut out) {
                        Ok(()) => {
                            assert!(out.iter().all(|&v| (-(s as i8)..=s as i8).contains(&v)))
                        }
                        Err(_) => assert!(out.iter().all(|&v| v == 0)),
                    }
                    for q in [0, len - 1] {
                        if let Ok(v) = model.decode_at(i, &bad, len, q) {
                            assert!((-(s as i8)..=s as i8).contains(&v));
                        }
                    }
                }
                let head = model.head();
                for cut in [0, 1, head - 1, head, enc.len() / 2, enc.len() - 1] {
                    if cut >= enc.len() {
                        continue;
                    }
                    assert!(model.decode_block(i, &enc[..cut], &mut out).is_err());
                }
            }
        }
    }
}

#[test]
fn values_the_model_has_not_seen_are_escaped() {
    for (m, s, step) in [(3, 9, 3), (6, 6, 5), (4, 11, 2)] {
        let layout = Layout::new(m, s);
        let file = layout.gather(&level_values(m, s));
        // Counted on a sample, and on other values altogether.
        let sampled = GridModel::fit_sampled(&file, layout.clone(), step).unwrap();
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let other: Vec<i8> = file
            .iter()
            .map(|&v| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                if rng.is_multiple_of(5) {
                    (2 * (rng % (s as u64 + 1)) as i32 - s as i32) as i8
                } else {
                    v
                }
            })
            .collect();
        let reloaded = GridModel::from_bytes(&sampled.to_bytes(), m, s, 3).unwrap();
        for values in [&file, &other] {
            let enc = encode_level(&sampled, values);
            for (i, (block, enc)) in values.chunks(BLOCK).zip(&enc).enumerate() {
                assert_eq!(reloaded.block(), BLOCK);
                let mut out = vec![0i8; block.len()];
                reloaded.decode_block(i as u64, enc, &mut out).unwrap();
                assert_eq!(&out[..], block, "m={m} s={s} block {i}");
                for q in (0..block.len()).step_by(31) {
                    assert_eq!(
                        reloaded.decode_at(i as u64, enc, block.len(), q).unwrap(),
                        block[q]
                    );
                }
            }
        }
    }
}

#[test]
fn bad_values_and_models_are_errors() {
    let layout = Layout::new(2, 4);
    let mut file = layout.gather(&level_values(2, 4));
    file[3] = 1; // odd in an even level
    assert!(GridModel::fit(&file, layout.clone()).is_err());
    file[3] = 6;
    assert!(GridModel::fit(&file, layout.clone()).is_err());
    assert!(GridModel::fit(&file[1..], layout.clone()).is_err());
    assert!(GridModel::fit(
        &Layout::new(2, 31).gather(&level_values(2, 31)),
        Layout::new(2, 31)
    )
    .is_err());
    let file = layout.gather(&level_values(2, 4));
    let model = GridModel::fit(&file, layout.clone()).unwrap();
    let old = GridModel::fit_v2(&file, layout);
    for (version, good, model) in [(3, model.to_bytes(), model), (2, old.to_bytes_v2(), old)] {
        let enc = encode_level(&model, &file);
        assert!(GridModel::from_bytes(&good, 2, 4, version).is_ok());
        assert!(GridModel::from_bytes(&good, 2, 5, version).is_err());
        assert!(GridModel::from_bytes(&good, 2, 31, version).is_err());
        for cut in 0..good.len() {
            assert!(GridModel::from_bytes(&good[..cut], 2, 4, version).is_err());
        }
        let mut extended = good.clone();
        extended.push(0);
        assert!(GridModel::from_bytes(&extended, 2, 4, version).is_err());
        for at in 0..good.len() {
            for x in [1u8, 0x80, 0xff] {
                let mut bad = good.clone();
                bad[at] ^= x;
                // Every change is an error or a model that still decodes safely.
                if let Ok(m) = GridModel::from_bytes(&bad, 2, 4, version) {
                    let mut out = vec![0i8; file.len()];
                    if m.decode_block(0, &enc[0], &mut out).is_ok() {
                        assert!(out.iter().all(|&v| (-4..=4).contains(&v)));
                    }
                    let _ = m.decode_at(0, &enc[0], file.len(), file.len() - 1);
                }
            }
        }
    }
}
