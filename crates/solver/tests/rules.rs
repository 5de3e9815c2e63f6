//! One test per rule, each on a position reached in a real game from the start position (the
//! moves are played here, so the position is what a player would have on the board), or typed as
//! a player would type it, with the expected outcome worked out by hand in the comments.

use kalah_solver::{parse_position, Board, Capture, EndRule, Leftover, Position, Rules, Side};

fn rules(capture: Capture, leftover: Leftover, end: EndRule) -> Rules {
    Rules {
        houses: 6,
        seeds: 4,
        capture,
        leftover,
        end,
    }
}

fn standard() -> Rules {
    Rules::standard(6, 4)
}

/// Plays 1-based houses from `pos`, checking who is to move before each.
fn play(rules: &Rules, mut pos: Position, moves: &[(Side, usize)]) -> Position {
    for &(side, house) in moves {
        assert_eq!(pos.to_move(), side, "before {side:?} {house} in {pos}");
        pos = pos.play(rules, house - 1).0;
    }
    pos
}

/// The opening of a real 4-seed game: S3 (extra turn), S6, N6.
/// S3: 4 seeds into S4, S5, S6 and the store: extra turn. S6: 5 seeds into the store and N1..N4.
/// N6: 4 seeds into North's store and S1..S3.
fn opening(rules: &Rules) -> Position {
    let pos = play(
        rules,
        Position::start(rules),
        &[(Side::South, 3), (Side::South, 6), (Side::North, 6)],
    );
    assert_eq!(
        pos,
        parse_position("S: 5 5 1 5 5 0 [2] / 5 5 5 5 4 0 [1]", 6).unwrap()
    );
    pos
}

#[test]
fn capture_with_seeds_opposite_under_each_rule() {
    // South sows S1 (5 seeds: S2..S6); the last seed lands in the empty S6, facing N1 (5 seeds).
    for capture in [Capture::Standard, Capture::Empty] {
        let r = rules(capture, Leftover::Owner, EndRule::Either);
        let (after, s) = opening(&r).play(&r, 0);
        assert_eq!(s.captured, Some(5));
        assert_eq!(s.gain, 6);
        assert_eq!(
            after,
            parse_position("N: 0 6 2 6 6 0 [8] / 0 5 5 5 4 0 [1]", 6).unwrap()
        );
    }
    let r = rules(Capture::Never, Leftover::Owner, EndRule::Either);
    let (after, s) = opening(&r).play(&r, 0);
    assert_eq!(s.captured, None);
    assert_eq!(
        after,
        parse_position("N: 0 6 2 6 6 1 [2] / 5 5 5 5 4 0 [1]", 6).unwrap()
    );
}

#[test]
fn capture_with_an_empty_house_opposite_under_each_rule() {
    // North to move with N: 1 0 ... ; N1 sows into the empty N2, facing S5, which is empty.
    let text = "N: 3 3 0 2 0 4 [9] / 1 0 5 5 4 4 [8]";
    for (capture, gain, after) in [
        // Standard: nothing opposite, nothing captured; the seed stays in N2.
        (Capture::Standard, 0, "S: 3 3 0 2 0 4 [9] / 0 1 5 5 4 4 [8]"),
        // Empty: the lone seed goes to North's store with the nothing opposite.
        (Capture::Empty, 1, "S: 3 3 0 2 0 4 [9] / 0 0 5 5 4 4 [9]"),
        (Capture::Never, 0, "S: 3 3 0 2 0 4 [9] / 0 1 5 5 4 4 [8]"),
    ] {
        let r = rules(capture, Leftover::Owner, EndRule::Either);
        let pos = parse_position(text, 6).unwrap();
        let (next, s) = pos.play(&r, 0);
        assert_eq!(s.gain, gain, "{capture}");
        assert_eq!(s.captured, (capture == Capture::Empty).then_some(0));
        assert_eq!(next, parse_position(after, 6).unwrap(), "{capture}");
    }
}

#[test]
fn extra_turn_chain() {
    // South's endgame 0 0 0 3 2 1: S6, S5, S6, S4, S6 ... every sowing ends in the store.
    let r = standard();
    let pos = parse_position("S: 0 0 0 3 2 1 [20] / 2 2 2 2 2 2 [14]", 6).unwrap();
    let end = play(
        &r,
        pos,
        &[
            (Side::South, 6), // 1 seed: store
            (Side::South, 5), // 2 seeds: S6, store
            (Side::South, 6), // 1 seed: store
            (Side::South, 4), // 3 seeds: S5, S6, store
            (Side::South, 6), // 1 seed: store
            (Side::South, 5), // 1 seed: S6 (lands in the empty S6, facing N1 = 2: capture)
        ],
    );
    assert_eq!(end.to_move(), Side::North);
    // 5 seeds reached the store one by one, then the capture took 2 + 1.
    assert_eq!(end.store(Side::South), 20 + 5 + 3);
    assert_eq!(end.houses(Side::South), &[0, 0, 0, 0, 0, 0]);
    assert_eq!(end.houses(Side::North), &[0, 2, 2, 2, 2, 2]);
    // South's side is empty: the game is over and North keeps its 10 seeds.
    let score = end.final_score(&r).unwrap();
    assert_eq!((score.south, score.north), (28, 24));
}

#[test]
fn lapping_sowing_feeds_the_origin_house() {
    // 13 seeds from S1 on a 6-house board: one seed in each of S2..S6, the store and N1..N6,
    // and the 13th back in S1, which was emptied: a capture of what faces S1 (N6).
    let pos = parse_position("S: 13 0 0 0 0 0 [10] / 0 0 0 0 0 2 [11]", 6).unwrap();
    for (capture, gain, south, north) in [
        (
            Capture::Standard,
            1 + 3 + 1,
            [0, 1, 1, 1, 1, 1],
            [1, 1, 1, 1, 1, 0],
        ),
        (
            Capture::Empty,
            1 + 3 + 1,
            [0, 1, 1, 1, 1, 1],
            [1, 1, 1, 1, 1, 0],
        ),
        (Capture::Never, 1, [1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 3]),
    ] {
        let r = rules(capture, Leftover::Owner, EndRule::Either);
        let (next, s) = pos.play(&r, 0);
        assert_eq!(s.gain, gain, "{capture}");
        assert_eq!(next.houses(Side::South), &south, "{capture}");
        assert_eq!(next.houses(Side::North), &north, "{capture}");
        assert_eq!(next.to_move(), Side::North);
    }
    // 14 seeds: the 14th lands in S2, which already holds the seed of the first lap: no capture.
    let r = standard();
    let pos = parse_position("S: 14 0 0 0 0 0 [0] / 0 0 0 0 2 2 [0]", 6).unwrap();
    let (next, s) = pos.play(&r, 0);
    assert_eq!(s.captured, None);
    assert_eq!(next.houses(Side::South), &[1, 2, 1, 1, 1, 1]);
    assert_eq!(next.houses(Side::North), &[1, 1, 1, 1, 3, 3]);
    // 26 seeds lap twice: every house gets two, the store two, the origin two.
    let pos = parse_position("S: 26 0 0 0 0 0 [0] / 0 0 0 0 0 0 [0]", 6).unwrap();
    let (next, s) = pos.play(&r, 0);
    assert_eq!(s.gain, 2);
    assert_eq!(next.board(), Board::new(&[2; 6], &[2; 6]).flipped());
}

#[test]
fn end_of_game_under_each_leftover_rule() {
    // South plays S6 (1 seed into the store): South's side is empty, North holds 3 seeds.
    let pos = parse_position("S: 0 0 0 0 0 1 [20] / 1 2 0 0 0 0 [24]", 6).unwrap();
    for (leftover, south, north) in [
        (Leftover::Owner, 21, 27),   // North keeps its 3
        (Leftover::Emptier, 24, 24), // South, whose side is empty, takes North's 3
        (Leftover::Discard, 21, 24), // the 3 count for nobody
    ] {
        for end in [EndRule::Either, EndRule::Mover] {
            // After the extra turn South is to move with no seeds: over under both end rules.
            let r = rules(Capture::Standard, leftover, end);
            let (next, s) = pos.play(&r, 5);
            assert!(s.extra_turn);
            let score = next.final_score(&r).expect("game over");
            assert_eq!(
                (score.south, score.north),
                (south, north),
                "{leftover} {end}"
            );
        }
    }
}

#[test]
fn end_rule_either_or_mover() {
    // South sows S6 (2 seeds: store, N1) and empties its side; North is to move with seeds.
    let pos = parse_position("S: 0 0 0 0 0 2 [20] / 0 0 0 0 0 1 [23]", 6).unwrap();
    let either = rules(Capture::Standard, Leftover::Owner, EndRule::Either);
    let (next, _) = pos.play(&either, 5);
    assert_eq!(next.to_move(), Side::North);
    let score = next
        .final_score(&either)
        .expect("over when either side is empty");
    assert_eq!((score.south, score.north), (21, 25));
    // Under `mover` the game goes on: North can move.
    let mover = rules(Capture::Standard, Leftover::Owner, EndRule::Mover);
    let (next, _) = pos.play(&mover, 5);
    assert!(next.final_score(&mover).is_none());
    // North plays N6 (1 seed into its store, extra turn), then N1 (1 seed into the empty N2,
    // facing S5, which is empty: no capture under standard rules). Now South must move but
    // has nothing: the game ends and North keeps the seed on N2.
    let next = play(&mover, next, &[(Side::North, 6), (Side::North, 1)]);
    assert_eq!(next.to_move(), Side::South);
    let score = next.final_score(&mover).expect("South cannot move");
    assert_eq!((score.south, score.north), (21, 25));
    // Under `mover`, a side that is empty while the *other* player is to move is not the end.
    let b = Board::new(&[1, 0, 0, 0, 0, 0], &[0; 6]);
    assert_eq!(b.final_value(&mover), None);
    assert_eq!(b.final_value(&either), Some(1));
}
