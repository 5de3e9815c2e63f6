//! The value of a position and of each of its moves, the way a player asks for it (`kalah
//! query`, `kalah serve`): from the game's end, the opening books, the database, or the
//! search over the database within a deadline, with the bounds proven so far when it runs out.

use crate::book::{BookError, Books};
use crate::{Search, SearchError};
use kalah_solver::db::{Database, DbError};
use kalah_solver::{Board, Endgame, Rules};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Where an answer's values came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The game is over: the value is the seeds left, settled by the rules.
    Final,
    /// An opening book (exact, or the bounds its proofs reached).
    Book,
    /// The endgame database, every move.
    Database,
    /// The search over the database, exact.
    Search,
    /// The search ran out of time: bounds only.
    Bounds,
}

impl Source {
    /// The name used in JSON answers: `final`, `book`, `database`, `search`, `bounds`.
    pub fn name(self) -> &'static str {
        match self {
            Source::Final => "final",
            Source::Book => "book",
            Source::Database => "database",
            Source::Search => "search",
            Source::Bounds => "bounds",
        }
    }
}

/// Bounds on the value of one move for the player to move (equal when exact).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MoveValue {
    /// The house sown (0-based).
    pub house: usize,
    /// Lower bound of the move's value.
    pub lower: i32,
    /// Upper bound.
    pub upper: i32,
}

/// The value of a position for the player to move, and of each legal move.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// Lower bound of the position's value (the value when exact).
    pub lower: i32,
    /// Upper bound.
    pub upper: i32,
    /// Every legal move, in house order (none when the game is over).
    pub moves: Vec<MoveValue>,
    /// Where the values came from.
    pub source: Source,
    /// Nodes the search visited for this answer.
    pub nodes: u64,
}

impl Answer {
    /// Whether the position's value and every move's value are exact.
    pub fn exact(&self) -> bool {
        self.lower == self.upper && self.moves.iter().all(|m| m.lower == m.upper)
    }
}

/// Why no answer could be given.
#[derive(Debug)]
pub enum AnalyseError {
    /// An opening book could not be read.
    Book(BookError),
    /// The database could not be read.
    Db(DbError),
    /// The database contradicts itself (a damaged file that its checksums did not catch).
    Damaged(String),
    /// The search failed.
    Search(SearchError),
    /// No search could be had (for a server: every one is busy).
    NoSearch(String),
    /// The cancel flag was raised.
    Interrupted,
}

impl fmt::Display for AnalyseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnalyseError::Book(e) => write!(f, "{e}"),
            AnalyseError::Db(e) => write!(f, "{e}"),
            AnalyseError::Damaged(m) | AnalyseError::NoSearch(m) => write!(f, "{m}"),
            AnalyseError::Search(e) => write!(f, "{e}"),
            AnalyseError::Interrupted => write!(f, "interrupted"),
        }
    }
}

impl std::error::Error for AnalyseError {}

/// Gives [`analyse`] a search when it first needs one (made on demand, or taken from a pool).
pub trait SearchSource {
    /// The search to use for the rest of this answer.
    fn search(&mut self) -> Result<&Search, AnalyseError>;
}

/// What [`analyse`] asks with: the rules, the books, the database (if any) and where a search
/// comes from.
pub struct Analyser<'a> {
    /// The rules of the game.
    pub rules: &'a Rules,
    /// The opening books, asked first.
    pub books: &'a Books,
    /// The endgame database.
    pub db: Option<&'a Database>,
}

/// One search about to start, for progress reports: the move's house (0-based), its index
/// among the legal moves, and how many there are.
#[derive(Clone, Copy, Debug)]
pub struct Step {
    /// The house (0-based).
    pub house: usize,
    /// Its index among the legal moves.
    pub index: usize,
    /// How many legal moves there are.
    pub of: usize,
}

impl Analyser<'_> {
    /// The value of `board` and of each of its moves. A book answers first (when exact, or
    /// when the database does not hold the board); the database answers a board it holds;
    /// otherwise each move is searched over the database, until `deadline` or until `cancel`
    /// is raised, and what is not proven by then is given as bounds. `on_search` is called
    /// before each move's search.
    pub fn analyse(
        &self,
        board: &Board,
        searches: &mut dyn SearchSource,
        deadline: Instant,
        cancel: &AtomicBool,
        on_search: &mut dyn FnMut(Step),
    ) -> Result<Answer, AnalyseError> {
        let rules = self.rules;
        if let Some(v) = board.final_value(rules) {
            return Ok(Answer {
                lower: v,
                upper: v,
                moves: Vec::new(),
                source: Source::Final,
                nodes: 0,
            });
        }
        let covered = |b: &Board| self.db.is_some_and(|db| b.seeds() <= db.max_seeds());
        if let Some(a) = self
            .books
            .answer(rules, board)
            .map_err(AnalyseError::Book)?
            .filter(|a| a.exact() || !covered(board))
        {
            return Ok(Answer {
                lower: a.lower,
                upper: a.upper,
                moves: a
                    .moves
                    .iter()
                    .map(|&(house, lower, upper)| MoveValue {
                        house,
                        lower,
                        upper,
                    })
                    .collect(),
                source: Source::Book,
                nodes: 0,
            });
        }
        let legal: Vec<usize> = board.legal_houses().collect();
        let (stop, done) = (AtomicBool::new(false), AtomicBool::new(false));
        let (stop, done) = (&stop, &done);
        let mut searched = false;
        let mut nodes = 0u64;
        // One timer for the whole answer: it raises `stop` at the deadline or on `cancel`.
        let moves = std::thread::scope(|scope| {
            let mut timer = None;
            let mut moves = Vec::with_capacity(legal.len());
            let mut run = || -> Result<(), AnalyseError> {
                for (index, &house) in legal.iter().enumerate() {
                    let s = board.sow(rules, house);
                    let child = s.next();
                    let (lo, hi) = if let Some(v) = child.final_value(rules) {
                        (v, v)
                    } else if covered(&child) {
                        let v = self.probe(&child)?;
                        (v, v)
                    } else {
                        on_search(Step {
                            house,
                            index,
                            of: legal.len(),
                        });
                        let search = searches.search()?;
                        if timer.is_none() {
                            timer = Some(scope.spawn(move || {
                                while !done.load(Relaxed) {
                                    let now = Instant::now();
                                    if now >= deadline || cancel.load(Relaxed) {
                                        stop.store(true, Relaxed);
                                        return;
                                    }
                                    std::thread::park_timeout(
                                        (deadline - now).min(Duration::from_millis(20)),
                                    );
                                }
                            }));
                        }
                        searched = true;
                        let (lo, hi, n) =
                            search.bounds(&child, stop).map_err(AnalyseError::Search)?;
                        nodes += n;
                        if cancel.load(Relaxed) {
                            return Err(AnalyseError::Interrupted);
                        }
                        (lo, hi)
                    };
                    let gain = s.gain as i32;
                    let (lower, upper) = if s.extra_turn {
                        (gain + lo, gain + hi)
                    } else {
                        (gain - hi, gain - lo)
                    };
                    moves.push(MoveValue {
                        house,
                        lower,
                        upper,
                    });
                }
                Ok(())
            };
            let r = run();
            done.store(true, Relaxed);
            if let Some(t) = &timer {
                t.thread().unpark();
            }
            r.map(|()| moves)
        })?;
        let lower = moves.iter().map(|m| m.lower).max().unwrap();
        let upper = moves.iter().map(|m| m.upper).max().unwrap();
        if covered(board) {
            // The stored value must be the best move's value: anything else is a damaged
            // database.
            let stored = self.probe(board)?;
            if lower != upper || stored != lower {
                return Err(AnalyseError::Damaged(format!(
                    "{}: the stored value of {board} disagrees with its moves; run `kalah db verify --full`",
                    self.db.map(|d| d.dir().display().to_string()).unwrap_or_default()
                )));
            }
        }
        let mut answer = Answer {
            lower,
            upper,
            moves,
            source: Source::Database,
            nodes,
        };
        if searched {
            answer.source = if answer.exact() {
                Source::Search
            } else {
                Source::Bounds
            };
        }
        Ok(answer)
    }

    /// Best moves from `board` (0-based houses, an extra turn keeping the player), at most
    /// `max`, for an answer from the books or the database: as far as the books answer each
    /// position exactly, or to the end of the game through the database. Empty for an answer
    /// of any other source (a search proves values, not lines).
    pub fn best_line(
        &self,
        board: &Board,
        answer: &Answer,
        max: usize,
    ) -> Result<Vec<usize>, AnalyseError> {
        let rules = self.rules;
        match answer.source {
            Source::Book => self
                .books
                .principal_variation(rules, board, max)
                .map_err(AnalyseError::Book),
            Source::Database => {
                // Only an exact answer has a line that keeps its value.
                if !answer.exact() {
                    return Ok(Vec::new());
                }
                // The value of a board that is over or that the database holds.
                let held = |b: &Board| -> Result<Option<i32>, AnalyseError> {
                    if let Some(v) = b.final_value(rules) {
                        return Ok(Some(v));
                    }
                    match self.db {
                        Some(db) if b.seeds() <= db.max_seeds() => self.probe(b).map(Some),
                        _ => Ok(None),
                    }
                };
                let mut line = Vec::new();
                let mut b = *board;
                let mut value = answer.lower;
                while line.len() < max && b.final_value(rules).is_none() {
                    let mut chosen = None;
                    for h in b.legal_houses() {
                        let s = b.sow(rules, h);
                        let Some(next) = held(&s.next())? else {
                            continue;
                        };
                        if s.value_with(next) == value {
                            chosen = Some((h, s.next(), next));
                            break;
                        }
                    }
                    let Some((h, next_board, next)) = chosen else {
                        return Err(AnalyseError::Damaged(format!(
                            "the value {value} of {b} is the value of none of its moves"
                        )));
                    };
                    line.push(h);
                    b = next_board;
                    value = next;
                }
                Ok(line)
            }
            _ => Ok(Vec::new()),
        }
    }

    /// The database's value of a board it holds.
    fn probe(&self, b: &Board) -> Result<i32, AnalyseError> {
        let db = self.db.expect("probe only what the database covers");
        db.probe(b).map_err(AnalyseError::Db)?.ok_or_else(|| {
            AnalyseError::Damaged(format!("{}: no value for {b}", db.dir().display()))
        })
    }
}
