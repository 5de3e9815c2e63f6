//! Position notation, parsed from untrusted text.
//!
//! Two forms are accepted; numbers are separated by spaces and/or commas.
//!
//! - **Short form**, side to move first: the mover's houses in sowing order, `/`, the opponent's
//!   houses in sowing order: `3 3 3 3 3 3 / 3 3 3 3 3 3`. Stores are taken as empty and the
//!   mover is called South.
//! - **Full form**: `S:` or `N:` (the player to move; `south:`/`north:` also work), then South's
//!   houses 1..m and optionally South's store in brackets, `/`, North's houses 1..m and optionally
//!   North's store: `N: 0 4 4 4 4 4 [1] / 4 4 4 4 4 4 [0]`. South's side always comes first.
//!
//! Every error names what is wrong and where (1-based character column).

use crate::board::Board;
use crate::position::{Position, Side};
use crate::rules::{MAX_HOUSES, MAX_SEEDS};
use std::fmt;

/// Why a position could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotationError {
    /// What is wrong, in one line, naming the place.
    pub message: String,
}

impl fmt::Display for NotationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for NotationError {}

fn err<T>(message: String) -> Result<T, NotationError> {
    Err(NotationError { message })
}

/// A token with its 1-based column.
#[derive(Debug)]
struct Token<'a> {
    text: &'a str,
    col: usize,
}

fn tokens(text: &str, offset: usize) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, ch) in text.char_indices() {
        let sep = ch.is_whitespace() || ch == ',';
        match (sep, start) {
            (true, Some(s)) => {
                out.push(Token {
                    text: &text[s..i],
                    col: offset + text[..s].chars().count() + 1,
                });
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push(Token {
            text: &text[s..],
            col: offset + text[..s].chars().count() + 1,
        });
    }
    out
}

fn number(tok: &Token<'_>, what: &str) -> Result<u32, NotationError> {
    let t = tok.text;
    if t.starts_with('-') && t[1..].chars().all(|c| c.is_ascii_digit()) && t.len() > 1 {
        return err(format!(
            "{what} at column {}: {t:?} is negative; seed counts are 0 or more",
            tok.col
        ));
    }
    if t.is_empty() || !t.chars().all(|c| c.is_ascii_digit()) {
        return err(format!(
            "{what} at column {}: {t:?} is not a number of seeds",
            tok.col
        ));
    }
    match t.parse::<u32>() {
        Ok(v) if v <= MAX_SEEDS => Ok(v),
        _ => err(format!(
            "{what} at column {}: {t} seeds is too many (at most {MAX_SEEDS} in a position)",
            tok.col
        )),
    }
}

/// One side: `houses` numbers and, in the full form, an optional `[store]`.
fn side(
    text: &str,
    offset: usize,
    houses: usize,
    name: &str,
    full: bool,
) -> Result<(Vec<u8>, u32), NotationError> {
    let mut toks = tokens(text, offset);
    let mut store = 0;
    if let Some(last) = toks.last() {
        if last.text.starts_with('[') {
            if !full {
                return err(format!(
                    "{name} at column {}: a store in brackets needs the full form, \
                     which starts with \"S:\" or \"N:\"",
                    last.col
                ));
            }
            let inner = last.text.trim_start_matches('[');
            let Some(inner) = inner.strip_suffix(']') else {
                return err(format!(
                    "{name}'s store at column {}: {:?} is missing its closing ']'",
                    last.col, last.text
                ));
            };
            let tok = Token {
                text: inner,
                col: last.col + 1,
            };
            store = number(&tok, &format!("{name}'s store"))?;
            toks.pop();
        }
    }
    if toks.len() != houses {
        let at = toks
            .get(houses)
            .map(|t| format!(", the extra one at column {}", t.col))
            .unwrap_or_default();
        return err(format!(
            "{name} has {} houses but --houses is {houses}{at}",
            toks.len()
        ));
    }
    let mut out = Vec::with_capacity(houses);
    for (i, tok) in toks.iter().enumerate() {
        let v = number(tok, &format!("{name}, house {}", i + 1))?;
        out.push(v as u8);
    }
    Ok((out, store))
}

/// Reads a position with `houses` houses per side in either form.
pub fn parse_position(text: &str, houses: usize) -> Result<Position, NotationError> {
    if houses == 0 || houses > MAX_HOUSES {
        return err(format!(
            "--houses must be between 1 and {MAX_HOUSES}, not {houses}"
        ));
    }
    let trimmed = text.trim_start();
    let lead = text.len() - trimmed.len();
    if trimmed.trim().is_empty() {
        return err("empty position: expected e.g. \"3 3 3 3 3 3 / 3 3 3 3 3 3\"".to_string());
    }
    // Optional prefix naming the player to move.
    let mut body_start = lead;
    let mut to_move = None;
    if let Some(colon) = trimmed.find(':') {
        let who = trimmed[..colon].trim().to_ascii_lowercase();
        to_move = Some(match who.as_str() {
            "s" | "south" => Side::South,
            "n" | "north" => Side::North,
            _ => {
                return err(format!(
                    "column {}: {:?} before ':' must be S or N (the player to move)",
                    lead + 1,
                    trimmed[..colon].trim()
                ))
            }
        });
        body_start = lead + colon + 1;
    }
    let body = &text[body_start..];
    let slashes: Vec<usize> = body.match_indices('/').map(|(i, _)| i).collect();
    if slashes.len() != 1 {
        return err(format!(
            "expected exactly one '/' between the two sides, found {}",
            slashes.len()
        ));
    }
    let slash = slashes[0];
    let col0 = text[..body_start].chars().count();
    let col1 = text[..body_start + slash + 1].chars().count();
    let full = to_move.is_some();
    let (first_name, second_name) = if full {
        ("South", "North")
    } else {
        ("the side to move", "the opponent")
    };
    let (first, store0) = side(&body[..slash], col0, houses, first_name, full)?;
    let (second, store1) = side(&body[slash + 1..], col1, houses, second_name, full)?;
    let total: u32 = first.iter().chain(&second).map(|&s| s as u32).sum::<u32>() + store0 + store1;
    if total > MAX_SEEDS {
        return err(format!(
            "{total} seeds in all is too many (at most {MAX_SEEDS} in a position)"
        ));
    }
    let to_move = to_move.unwrap_or(Side::South);
    let board = match to_move {
        Side::South => Board::new(&first, &second),
        Side::North => Board::new(&second, &first),
    };
    Ok(Position::new(board, to_move, [store0, store1]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_form() {
        let p = parse_position("3 3 3 3 3 3 / 3 3 3 3 3 3", 6).unwrap();
        assert_eq!(p.board(), Board::new(&[3; 6], &[3; 6]));
        assert_eq!(p.to_move(), Side::South);
        let p = parse_position("1,2,3,4/5,6,7,8", 4).unwrap();
        assert_eq!(p.board(), Board::new(&[1, 2, 3, 4], &[5, 6, 7, 8]));
        let p = parse_position("  1, 2 ,3 ,4 /  5 6 7 8 ", 4).unwrap();
        assert_eq!(p.board(), Board::new(&[1, 2, 3, 4], &[5, 6, 7, 8]));
    }

    #[test]
    fn full_form_round_trips() {
        let p = parse_position("N: 0 4 4 4 4 4 [2] / 4 4 4 4 4 5 [1]", 6).unwrap();
        assert_eq!(p.to_move(), Side::North);
        assert_eq!(p.houses(Side::South), &[0, 4, 4, 4, 4, 4]);
        assert_eq!(p.houses(Side::North), &[4, 4, 4, 4, 4, 5]);
        assert_eq!(p.board().mover(), &[4, 4, 4, 4, 4, 5]);
        assert_eq!(p.store(Side::South), 2);
        assert_eq!(p.store(Side::North), 1);
        assert_eq!(parse_position(&p.full(), 6).unwrap(), p);
        let q = parse_position("south: 1 2 / 3 4", 2).unwrap();
        assert_eq!(q.store(Side::South), 0);
        assert_eq!(q.to_move(), Side::South);
    }

    #[test]
    fn errors_name_the_problem() {
        let e = |s: &str, m: usize| parse_position(s, m).unwrap_err().message;
        assert!(e("", 6).contains("empty"));
        assert!(e("   ", 6).contains("empty"));
        assert!(e("3 3 3 / 3 3 3", 6).contains("--houses is 6"));
        assert!(e("3 3 3 3 3 / 3 3 3", 3).contains("extra one at column 7"));
        assert!(e("3 x 3 / 3 3 3", 3).contains("house 2 at column 3"));
        assert!(e("3 -1 3 / 3 3 3", 3).contains("negative"));
        assert!(e("3 300 3 / 3 3 3", 3).contains("too many"));
        assert!(e("3 3 3 3 3 3", 3).contains("exactly one '/'"));
        assert!(e("1/2/3", 1).contains("found 2"));
        assert!(e("X: 1 / 1", 1).contains("must be S or N"));
        assert!(e("1 [2] / 1", 1).contains("full form"));
        assert!(e("S: 1 [2 / 1", 1).contains("closing"));
        assert!(e("S: 1 [x] / 1", 1).contains("store"));
        assert!(e("200 / 100", 1).contains("300 seeds in all"));
        assert!(e("1 / 1", 0).contains("--houses"));
    }
}
