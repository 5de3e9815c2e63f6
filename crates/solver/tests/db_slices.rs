//! A level built in slices (apart, as on several machines) and joined is the level a whole
//! build writes, byte for byte; damaged, missing or mismatched slices are errors naming the file.

use kalah_solver::db::{self, Codec};
use kalah_solver::rules::Capture;
use kalah_solver::Rules;
use std::path::Path;
use std::sync::atomic::AtomicBool;

fn copy_levels(from: &Path, to: &Path, below: u32) {
    for l in 0..below {
        std::fs::copy(db::level_path(from, l), db::level_path(to, l)).unwrap();
    }
}

#[test]
fn slices_join_into_the_whole_level() {
    let no = AtomicBool::new(false);
    for (rules, top, k, codec) in [
        (Rules::standard(4, 0), 12, 3, Codec::Stored),
        (
            Rules {
                capture: Capture::Empty,
                ..Rules::standard(6, 0)
            },
            8,
            2,
            Codec::Search,
        ),
        (Rules::standard(3, 0), 9, 5, Codec::Grid),
    ] {
        let whole = tempfile::tempdir().unwrap();
        db::build(whole.path(), &rules, top, codec, &|_| {}, &no).unwrap();
        // Each slice on its own "machine": a directory with the lower levels.
        let machines: Vec<tempfile::TempDir> =
            (0..k).map(|_| tempfile::tempdir().unwrap()).collect();
        let joined = tempfile::tempdir().unwrap();
        copy_levels(whole.path(), joined.path(), top);
        for (i, m) in machines.iter().enumerate() {
            copy_levels(whole.path(), m.path(), top);
            db::build_slice(m.path(), &rules, top, (i as u32, k), codec, &|_| {}, &no).unwrap();
            let p = db::slice_path(m.path(), top, i as u32, k);
            std::fs::copy(&p, joined.path().join(p.file_name().unwrap())).unwrap();
            assert!(!db::level_path(m.path(), top).exists());
        }
        let r = db::join_slices(joined.path(), &rules, top, k, codec).unwrap();
        assert_eq!(r.slices.len(), k as usize);
        assert_eq!(
            std::fs::read(db::level_path(joined.path(), top)).unwrap(),
            std::fs::read(db::level_path(whole.path(), top)).unwrap(),
            "{rules}"
        );
        // A slice of a level already built is refused.
        let e =
            db::build_slice(joined.path(), &rules, top, (0, k), codec, &|_| {}, &no).unwrap_err();
        assert!(e.to_string().contains("already built"), "{e}");

        // Damage: a flipped value, a flipped header byte, a missing slice, a wrong split.
        let slice0 = db::slice_path(joined.path(), top, 0, k);
        let good = std::fs::read(&slice0).unwrap();
        for at in [10, 33, good.len() - 1] {
            let mut b = good.clone();
            b[at] ^= 1;
            std::fs::write(&slice0, &b).unwrap();
            let e = db::join_slices(joined.path(), &rules, top, k, codec).unwrap_err();
            assert!(e.to_string().contains(&*slice0.to_string_lossy()), "{e}");
        }
        std::fs::remove_file(&slice0).unwrap();
        let e = db::join_slices(joined.path(), &rules, top, k, codec).unwrap_err();
        assert!(e.to_string().contains(&*slice0.to_string_lossy()), "{e}");
        std::fs::write(&slice0, &good).unwrap();
        assert!(db::join_slices(joined.path(), &rules, top, k + 1, codec).is_err());
        let e = db::build_slice(joined.path(), &rules, top + 1, (k, k), codec, &|_| {}, &no);
        assert!(e.is_err());
    }
}
