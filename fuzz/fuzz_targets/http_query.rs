//! `decode_position_query` on arbitrary query strings: never a panic; what it accepts has
//! valid rules and at most 255 seeds on the board.
#![no_main]

use kalah_api::decode_position_query;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(q) = decode_position_query(text) {
        assert!(
            q.position.board().seeds() <= 255,
            "{text:?}: {} seeds on the board",
            q.position.board().seeds()
        );
        if let Err(e) = q.rules.validate() {
            panic!("{text:?}: accepted rules that do not validate: {e}");
        }
        assert_eq!(q.position.board().houses(), q.rules.houses, "{text:?}");
    }
});
