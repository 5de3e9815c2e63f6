//! `parse_position` on arbitrary text: never a panic, and every position read re-reads
//! from its full notation to itself.
#![no_main]

use kalah_solver::parse_position;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let houses = (first % 8) as usize + 1;
    let Ok(position) = parse_position(text, houses) else {
        return;
    };
    let full = position.full();
    match parse_position(&full, houses) {
        Ok(again) => assert_eq!(
            again, position,
            "{text:?} -> {full:?} reads back differently"
        ),
        Err(e) => panic!("{text:?} -> {full:?} does not read back: {e}"),
    }
});
