//! Opening books: the exact values (or proven bounds) of the positions near the start of a
//! game, computed offline, so that `query`, `solve` and the explorer answer them at once.
//!
//! A [`Book`] belongs to one board and rule set (`6x4-standard-owner-either.kbook`); it maps
//! boards (stores excluded, the mover's side first, as everywhere) to bounds on their value,
//! equal when exact. [`Books`] answers from every book of a rule set in a directory.
//! [`build()`] makes a book from a search over the positions within a number of plies, from
//! recorded first-turn values and from proof ledgers.

mod build;
mod file;

pub use build::{build, BuildProgress, Fact, Measure};

use kalah_solver::{Board, Rules};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// Why a book could not be read or used.
#[derive(Debug)]
pub enum BookError {
    /// Reading or writing the file failed.
    Io(PathBuf, std::io::Error),
    /// The file is not a valid book.
    Corrupt(PathBuf, String),
    /// The book's values contradict each other or a search (a wrong build).
    Inconsistent(String),
    /// A search for the book failed or was interrupted.
    Search(crate::SearchError),
}

impl fmt::Display for BookError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BookError::Io(p, e) => write!(f, "{}: {e}", p.display()),
            BookError::Corrupt(p, m) => write!(f, "{}: {m}", p.display()),
            BookError::Inconsistent(m) => write!(f, "{m}"),
            BookError::Search(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for BookError {}

/// One opening book: bounds on the value of each board it holds (equal when exact).
#[derive(Clone, Debug, PartialEq)]
pub struct Book {
    rules: Rules,
    plies: u8,
    note: String,
    /// The boards' cells (`2 * houses` bytes each), in increasing order.
    keys: Vec<u8>,
    /// (lower, upper) of each board, in the same order.
    bounds: Vec<(i16, i16)>,
}

/// The file name of the book of a game: `6x4-standard-owner-either.kbook`.
pub fn file_name(rules: &Rules) -> String {
    format!(
        "{}x{}-{}-{}-{}.kbook",
        rules.houses,
        rules.seeds,
        rules.capture.name(),
        rules.leftover.name(),
        rules.end.name()
    )
}

impl Book {
    /// A book of `rules` from its entries (board, lower, upper). `plies`: every position
    /// within that many moves of the start is in it exactly (0: none promised).
    pub fn new(
        rules: Rules,
        plies: u8,
        note: &str,
        entries: &BTreeMap<Board, (i32, i32)>,
    ) -> Result<Book, BookError> {
        let m = rules.houses;
        let mut keys = Vec::with_capacity(entries.len() * 2 * m);
        let mut bounds = Vec::with_capacity(entries.len());
        let bad = |m: String| Err(BookError::Inconsistent(m));
        if note.len() > file::MAX_NOTE {
            return bad(format!("a note of {} bytes is too long", note.len()));
        }
        for (b, &(lo, hi)) in entries {
            let s = b.seeds() as i32;
            if b.houses() != m || lo > hi || lo < -s || hi > s {
                return bad(format!("entry {b}: bounds {lo}..{hi} impossible"));
            }
            keys.extend_from_slice(b.cells());
            bounds.push((lo as i16, hi as i16));
        }
        Ok(Book {
            rules,
            plies,
            note: note.to_string(),
            keys,
            bounds,
        })
    }

    /// Reads and checks the book at `path` (checksum, header, order and range of every
    /// entry).
    pub fn open(path: &Path) -> Result<Book, BookError> {
        file::read(path)
    }

    /// Writes the book to `path` (through a temporary name).
    pub fn write(&self, path: &Path) -> Result<(), BookError> {
        if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(d).map_err(|e| BookError::Io(d.to_path_buf(), e))?;
        }
        crate::write_renamed::write_renamed(path, &file::encode(self))
            .map_err(|e| BookError::Io(path.to_path_buf(), e))
    }

    /// The game of the book (its starting seeds included).
    pub fn rules(&self) -> Rules {
        self.rules
    }

    /// Every position within this many moves of the start is in the book with its exact
    /// value (0: the book promises none).
    pub fn plies(&self) -> u8 {
        self.plies
    }

    /// What the book was made from, in words.
    pub fn note(&self) -> &str {
        &self.note
    }

    /// Boards held.
    pub fn len(&self) -> usize {
        self.bounds.len()
    }

    /// Whether the book holds no board.
    pub fn is_empty(&self) -> bool {
        self.bounds.is_empty()
    }

    /// Bounds on the value of `board` for the player to move, equal when exact.
    pub fn get(&self, board: &Board) -> Option<(i32, i32)> {
        let m = self.rules.houses;
        if board.houses() != m {
            return None;
        }
        let key = board.cells();
        let (mut lo, mut hi) = (0usize, self.bounds.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.keys[mid * 2 * m..(mid + 1) * 2 * m].cmp(key) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => {
                    let (a, b) = self.bounds[mid];
                    return Some((a as i32, b as i32));
                }
            }
        }
        None
    }

    /// Every entry: (board, lower, upper), boards in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = (Board, i32, i32)> + '_ {
        (0..self.len()).map(|i| {
            let (lo, hi) = self.bounds[i];
            (file::board_at(self, i), lo as i32, hi as i32)
        })
    }

    /// Entries whose bounds meet.
    pub fn exact(&self) -> usize {
        self.bounds.iter().filter(|(a, b)| a == b).count()
    }

    /// Checks that every board whose moves all lead to boards in the book (or to the end of
    /// the game) has the bounds its moves give: the best move's. Returns how many boards
    /// were checked.
    pub fn check_consistent(&self) -> Result<usize, BookError> {
        let mut checked = 0;
        for (b, lo, hi) in self.iter() {
            if let Some(a) = answer_from(&self.rules, &b, &|x| self.get(x)) {
                let (a, z) = a.bounds();
                if a.max(lo) > z.min(hi) {
                    return Err(BookError::Inconsistent(format!(
                        "{b}: the book holds {lo}..{hi} but its moves give {a}..{z}"
                    )));
                }
                checked += 1;
            }
        }
        Ok(checked)
    }
}

/// Bounds on the value of a position and of each of its moves.
#[derive(Clone, Debug, PartialEq)]
pub struct BookAnswer {
    /// Bounds on the position's value (equal when exact).
    pub lower: i32,
    /// Upper bound.
    pub upper: i32,
    /// Every legal move: (0-based house, lower, upper) of its value for the mover.
    pub moves: Vec<(usize, i32, i32)>,
}

impl BookAnswer {
    /// Bounds on the position's value.
    pub fn bounds(&self) -> (i32, i32) {
        (self.lower, self.upper)
    }

    /// Whether the position's value and every move's value are exact.
    pub fn exact(&self) -> bool {
        self.lower == self.upper && self.moves.iter().all(|m| m.1 == m.2)
    }
}

/// Every book of one rule set (any number of starting seeds) found in a directory.
#[derive(Clone, Debug, Default)]
pub struct Books {
    books: Vec<Book>,
}

impl Books {
    /// No books.
    pub fn none() -> Books {
        Books::default()
    }

    /// The books in `dir` whose rules (starting seeds aside) are `rules`; none when `dir`
    /// does not exist. A damaged book is an error, not silently skipped.
    pub fn open_dir(dir: &Path, rules: &Rules) -> Result<Books, BookError> {
        let mut books = Vec::new();
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Books::none()),
            Err(e) => return Err(BookError::Io(dir.to_path_buf(), e)),
        };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "kbook"))
            .collect();
        paths.sort();
        for p in paths {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            // Only the books of these rules are read (the name says which they are; the
            // header is checked against it).
            let wanted = name.split_once('-').is_some_and(|(board, rest)| {
                board.split_once('x').map(|(h, _)| h) == Some(&rules.houses.to_string())
                    && rest
                        == format!(
                            "{}-{}-{}.kbook",
                            rules.capture.name(),
                            rules.leftover.name(),
                            rules.end.name()
                        )
            });
            if !wanted {
                continue;
            }
            let book = Book::open(&p)?;
            if file_name(&book.rules) != name {
                return Err(BookError::Corrupt(
                    p.clone(),
                    format!(
                        "the file's name does not match the game in its header ({})",
                        file_name(&book.rules)
                    ),
                ));
            }
            books.push(book);
        }
        Ok(Books { books })
    }

    /// Books of the given games (for tests and builds).
    pub fn from_books(books: Vec<Book>) -> Books {
        Books { books }
    }

    /// Whether there is no book.
    pub fn is_empty(&self) -> bool {
        self.books.is_empty()
    }

    /// The books.
    pub fn books(&self) -> &[Book] {
        &self.books
    }

    /// Bounds on the value of `board` from every book that holds it (intersected).
    pub fn get(&self, board: &Board) -> Option<(i32, i32)> {
        let mut out: Option<(i32, i32)> = None;
        for b in &self.books {
            if let Some((lo, hi)) = b.get(board) {
                out = Some(match out {
                    Some((a, z)) => (a.max(lo), z.min(hi)),
                    None => (lo, hi),
                });
            }
        }
        out
    }

    /// Bounds on every move of `board` when each leads to the end of the game or to a board
    /// in the books.
    fn by_moves(&self, rules: &Rules, board: &Board) -> Option<BookAnswer> {
        answer_from(rules, board, &|b| self.get(b))
    }

    /// The answer for `board` (the game not over): bounds on every move, when the books hold
    /// the board and every move leads to the end of the game or to a board in the books. The bounds held for the
    /// board itself narrow its moves' upper bounds (no move is worth more than the
    /// position); bounds that contradict each other are an error.
    pub fn answer(&self, rules: &Rules, board: &Board) -> Result<Option<BookAnswer>, BookError> {
        // Only boards a book holds: one whose moves all end the game is no book's answer.
        let Some((lo, hi)) = self.get(board) else {
            return Ok(None);
        };
        let Some(mut a) = self.by_moves(rules, board) else {
            return Ok(None);
        };
        let (x, y) = a.bounds();
        if x > hi || y < lo {
            return Err(BookError::Inconsistent(format!(
                "{board}: the opening book holds {lo}..{hi} but its moves give {x}..{y}"
            )));
        }
        for m in &mut a.moves {
            m.2 = m.2.min(hi);
        }
        a.lower = x.max(lo);
        a.upper = y.min(hi);
        Ok(Some(a))
    }

    /// Best moves from `board` (0-based houses, an extra turn keeping the player) while the
    /// books answer each position exactly; at most `max` moves.
    pub fn principal_variation(
        &self,
        rules: &Rules,
        board: &Board,
        max: usize,
    ) -> Result<Vec<usize>, BookError> {
        let mut pv = Vec::new();
        let mut b = *board;
        while pv.len() < max {
            let Some(a) = self.answer(rules, &b)? else {
                break;
            };
            if !a.exact() {
                break;
            }
            let Some(&(h, _, _)) = a.moves.iter().find(|m| m.1 == a.lower) else {
                break;
            };
            pv.push(h);
            b = b.sow(rules, h).next();
        }
        Ok(pv)
    }
}

/// Bounds on every move of `board` (the game not over) when each leads to the end of the
/// game or to a board that `get` bounds; the position's bounds are its best move's.
fn answer_from(
    rules: &Rules,
    board: &Board,
    get: &dyn Fn(&Board) -> Option<(i32, i32)>,
) -> Option<BookAnswer> {
    if board.final_value(rules).is_some() {
        return None;
    }
    let mut moves = Vec::new();
    for h in board.legal_houses() {
        let s = board.sow(rules, h);
        let next = s.next();
        let (lo, hi) = match next.final_value(rules) {
            Some(v) => (v, v),
            None => get(&next)?,
        };
        let (a, z) = (s.value_with(lo), s.value_with(hi));
        moves.push((h, a.min(z), a.max(z)));
    }
    Some(BookAnswer {
        lower: moves.iter().map(|m| m.1).max()?,
        upper: moves.iter().map(|m| m.2).max()?,
        moves,
    })
}

#[cfg(test)]
mod tests;
