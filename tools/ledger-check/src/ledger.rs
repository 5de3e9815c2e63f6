//! Reading a ledger: one record a line, each a JSON object, a tab, and the xxh3-64 of the
//! JSON text as 16 lower-case hex digits. The first record is the header (format version
//! and rules); then unit records and the records of settled questions (root, opening, turn).
//! See FORMAT.md, "Proof ledgers".

use crate::game::{Board, Capture, End, Leftover, Rules};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The ledger format this checker reads.
pub const VERSION: u64 = 1;

/// What a unit's search found about "is the value of the board at least the threshold?".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It is (a fact).
    AtLeast,
    /// It is not (a fact).
    Below,
    /// The node budget ran out: the prover split the position into its moves.
    Open,
}

/// A unit: a question about the position that `path` leads to.
#[derive(Clone, Debug, PartialEq)]
pub struct Unit {
    /// The moves from the start (1-based houses), each played by whoever is to move.
    pub path: Vec<usize>,
    /// The position reached, mover first.
    pub board: Board,
    /// The threshold asked.
    pub threshold: i32,
    /// What was found.
    pub verdict: Verdict,
    /// The largest database level the unit's search used (0: none).
    pub db_seeds: u32,
    /// Nodes searched (for the report).
    pub nodes: u64,
}

/// One record after the header.
#[derive(Clone, Debug, PartialEq)]
pub enum Record {
    /// A unit.
    Unit(Unit),
    /// "Is South's value at the start at least `threshold`?"
    Root { threshold: i32, holds: bool },
    /// "Is South's value after opening with `house` (1-based) at least `threshold`?"
    Opening {
        house: usize,
        threshold: i32,
        holds: bool,
    },
    /// "Is South's final margin after the first turn `moves` (1-based houses) at least
    /// `threshold`?"
    Turn {
        moves: Vec<usize>,
        threshold: i32,
        holds: bool,
    },
}

/// A ledger as read: its rules, its good records with their line numbers (1-based), and what
/// was wrong with the others.
#[derive(Debug)]
pub struct Ledger {
    /// The file read.
    pub file: PathBuf,
    /// The rules of the header.
    pub rules: Rules,
    /// Lines in the file (a torn last one included).
    pub lines: usize,
    /// The records that read well, with their line numbers.
    pub records: Vec<(usize, Record)>,
    /// Lines that are damaged or say impossible things: one message each, naming the line.
    pub errors: Vec<String>,
    /// A last line cut short (no newline at its end): its number and length in bytes. It is
    /// left out, as the prover itself does when it opens the ledger again.
    pub torn: Option<(usize, usize)>,
}

/// The checksum of a record's JSON text: xxh3-64, 16 lower-case hex digits.
pub fn checksum(json: &str) -> String {
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(json.as_bytes()))
}

/// The ledger file of `path`: `path/ledger.jsonl` for a directory, `path` itself otherwise.
pub fn file_of(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.join("ledger.jsonl")
    } else {
        path.to_path_buf()
    }
}

/// Reads the ledger at `path` (a directory holding `ledger.jsonl`, or the file). `Err` when
/// it cannot be read at all or its header is bad; damage in later lines is listed in
/// [`Ledger::errors`].
pub fn read(path: &Path) -> Result<Ledger, String> {
    let file = file_of(path);
    let bytes = std::fs::read(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    parse(&file, &bytes)
}

/// Reads the bytes of a ledger (`file` is named in messages).
pub fn parse(file: &Path, bytes: &[u8]) -> Result<Ledger, String> {
    let name = file.display().to_string();
    let mut lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
    let total = lines.len();
    let mut torn = None;
    if lines.len() > 1 && lines.last().is_some_and(|l| !l.ends_with(b"\n")) {
        torn = Some((lines.len(), lines.last().unwrap().len()));
        lines.pop();
    }
    let Some(first) = lines.first() else {
        return Err(format!("{name}: empty (no header)"));
    };
    let rules = object(first)
        .and_then(|v| header(&v))
        .map_err(|e| format!("{name} line 1: {e}"))?;
    let mut records = Vec::new();
    let mut errors = Vec::new();
    for (i, raw) in lines.iter().enumerate().skip(1) {
        let n = i + 1;
        match object(raw).and_then(|v| record(&v, &rules)) {
            Ok(r) => records.push((n, r)),
            Err(e) => errors.push(format!("line {n}: {e}")),
        }
    }
    Ok(Ledger {
        file: file.to_path_buf(),
        rules,
        lines: total,
        records,
        errors,
        torn,
    })
}

/// The JSON object of one line, its checksum checked.
fn object(raw: &[u8]) -> Result<Value, String> {
    let text = std::str::from_utf8(raw).map_err(|_| "not UTF-8 text".to_string())?;
    let text = text.strip_suffix('\n').unwrap_or(text);
    let (json, sum) = text
        .rsplit_once('\t')
        .ok_or("no checksum (a tab and 16 hex digits) after the record")?;
    let want = checksum(json);
    if sum != want {
        return Err(format!(
            "bad checksum: the line says {sum:?}, its record's text hashes to {want}"
        ));
    }
    let v: Value = serde_json::from_str(json).map_err(|e| format!("not JSON: {e}"))?;
    if !v.is_object() {
        return Err("not a JSON object".into());
    }
    Ok(v)
}

fn get<'a>(v: &'a Value, key: &str) -> Result<&'a Value, String> {
    v.get(key).ok_or_else(|| format!("no field {key:?}"))
}

fn string<'a>(v: &'a Value, key: &str) -> Result<&'a str, String> {
    get(v, key)?
        .as_str()
        .ok_or_else(|| format!("field {key:?} is not a string"))
}

fn unsigned(v: &Value, key: &str) -> Result<u64, String> {
    get(v, key)?
        .as_u64()
        .ok_or_else(|| format!("field {key:?} is not a whole number 0 or more"))
}

fn threshold(v: &Value) -> Result<i32, String> {
    get(v, "threshold")?
        .as_i64()
        .and_then(|t| i32::try_from(t).ok())
        .ok_or_else(|| "field \"threshold\" is not a whole number".to_string())
}

fn holds(v: &Value) -> Result<bool, String> {
    get(v, "holds")?
        .as_bool()
        .ok_or_else(|| "field \"holds\" is not true or false".to_string())
}

/// 1-based house numbers separated by spaces.
fn houses(text: &str, m: usize, what: &str) -> Result<Vec<usize>, String> {
    text.split_whitespace()
        .map(|w| match w.parse::<usize>() {
            Ok(h) if (1..=m).contains(&h) => Ok(h),
            _ => Err(format!("{what}: {w:?} is not a house (1 to {m})")),
        })
        .collect()
}

fn header(v: &Value) -> Result<Rules, String> {
    if string(v, "kind")? != "header" {
        return Err("the first record is not the header".into());
    }
    let version = unsigned(v, "version")?;
    if version != VERSION {
        return Err(format!(
            "format version {version}; this checker reads version {VERSION}"
        ));
    }
    let r = get(v, "rules")?;
    let houses = unsigned(r, "houses")?;
    let seeds = unsigned(r, "seeds")?;
    if !(1..=8).contains(&houses) {
        return Err(format!("{houses} houses (1 to 8 are possible)"));
    }
    if seeds == 0 || 2 * houses * seeds > 255 {
        return Err(format!(
            "{seeds} seeds a house (at least 1, at most 255 on the board)"
        ));
    }
    let name = |key: &str| string(r, key);
    let rules = Rules {
        houses: houses as usize,
        seeds: seeds as u32,
        capture: Capture::from_name(name("capture")?)
            .ok_or_else(|| format!("capture {:?} is not a rule", name("capture").unwrap()))?,
        leftover: Leftover::from_name(name("leftover")?)
            .ok_or_else(|| format!("leftover {:?} is not a rule", name("leftover").unwrap()))?,
        end: End::from_name(name("end")?)
            .ok_or_else(|| format!("end {:?} is not a rule", name("end").unwrap()))?,
    };
    Ok(rules)
}

fn record(v: &Value, rules: &Rules) -> Result<Record, String> {
    let m = rules.houses;
    match string(v, "kind")? {
        "unit" => {
            let verdict = match string(v, "verdict")? {
                "at-least" => Verdict::AtLeast,
                "below" => Verdict::Below,
                "open" => Verdict::Open,
                other => return Err(format!("verdict {other:?} is not at-least, below or open")),
            };
            Ok(Record::Unit(Unit {
                path: houses(string(v, "path")?, m, "path")?,
                board: Board::parse(string(v, "board")?, m)?,
                threshold: threshold(v)?,
                verdict,
                db_seeds: u32::try_from(unsigned(v, "db_seeds")?)
                    .map_err(|_| "field \"db_seeds\" is too large".to_string())?,
                nodes: unsigned(v, "nodes")?,
            }))
        }
        "root" => Ok(Record::Root {
            threshold: threshold(v)?,
            holds: holds(v)?,
        }),
        "opening" => {
            let house = unsigned(v, "house")?;
            if !(1..=m as u64).contains(&house) {
                return Err(format!("house {house} is not a house (1 to {m})"));
            }
            Ok(Record::Opening {
                house: house as usize,
                threshold: threshold(v)?,
                holds: holds(v)?,
            })
        }
        "turn" => {
            let moves = houses(string(v, "moves")?, m, "moves")?;
            if moves.is_empty() {
                return Err("a first turn of no moves".into());
            }
            Ok(Record::Turn {
                moves,
                threshold: threshold(v)?,
                holds: holds(v)?,
            })
        }
        "header" => Err("a second header".into()),
        other => Err(format!(
            "record kind {other:?} is unknown to this checker (unit, root, opening, turn)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(json: &str) -> String {
        format!("{json}\t{}\n", checksum(json))
    }

    const HEADER: &str = r#"{"kind":"header","rules":{"capture":"empty","end":"either","houses":3,"leftover":"owner","seeds":2},"version":1}"#;

    #[test]
    fn the_checksum_is_xxh3_of_the_json_text() {
        // A line of a committed ledger (6x5, empty capture), as the prover wrote it.
        let json = r#"{"kind":"header","rules":{"capture":"empty","end":"either","houses":6,"leftover":"owner","seeds":5},"version":1}"#;
        assert_eq!(checksum(json), "7d04bb4c982160d3");
    }

    #[test]
    fn records_read_and_damage_is_named() {
        let unit = r#"{"board":"2 2 0 / 3 2 2","budget":10,"db_seeds":4,"kind":"unit","nodes":5,"path":"3","seconds":0.1,"threshold":1,"verdict":"open","worker":"w"}"#;
        let text = [
            line(HEADER),
            line(unit),
            line(r#"{"holds":true,"kind":"root","threshold":0}"#),
            line(r#"{"holds":false,"house":2,"kind":"opening","threshold":3}"#),
            line(r#"{"holds":true,"kind":"turn","moves":"3 1","threshold":-1}"#),
            // A changed record, its checksum left as it was.
            line(r#"{"holds":true,"kind":"root","threshold":2}"#).replace("true", "false"),
            line(r#"{"holds":true,"kind":"opening","house":4,"threshold":2}"#),
            line(r#"{"kind":"guess"}"#),
            "garbage\n".to_string(),
            // Cut short.
            line(r#"{"holds":true,"kind":"root","threshold":0}"#)[..20].to_string(),
        ]
        .concat();
        let l = parse(Path::new("x"), text.as_bytes()).unwrap();
        assert_eq!(l.lines, 10);
        assert_eq!(l.torn, Some((10, 20)));
        assert_eq!(l.rules.capture, Capture::Empty);
        assert_eq!(l.records.len(), 4);
        assert_eq!(
            l.records[0],
            (
                2,
                Record::Unit(Unit {
                    path: vec![3],
                    board: Board::parse("2 2 0 / 3 2 2", 3).unwrap(),
                    threshold: 1,
                    verdict: Verdict::Open,
                    db_seeds: 4,
                    nodes: 5,
                })
            )
        );
        assert_eq!(
            l.records[3].1,
            Record::Turn {
                moves: vec![3, 1],
                threshold: -1,
                holds: true
            }
        );
        assert_eq!(l.errors.len(), 4, "{:?}", l.errors);
        assert!(l.errors[0].starts_with("line 6: bad checksum"));
        assert!(l.errors[1].starts_with("line 7: house 4"));
        assert!(l.errors[2].starts_with("line 8: record kind"));
        assert!(l.errors[3].starts_with("line 9: no checksum"));
    }

    #[test]
    fn a_bad_header_is_fatal() {
        assert!(parse(Path::new("x"), b"").unwrap_err().contains("empty"));
        let e = parse(
            Path::new("x"),
            line(&HEADER.replace("\"version\":1", "\"version\":2")).as_bytes(),
        )
        .unwrap_err();
        assert!(e.contains("line 1") && e.contains("version 2"), "{e}");
        let e = parse(
            Path::new("x"),
            line(&HEADER.replace("empty", "some")).as_bytes(),
        )
        .unwrap_err();
        assert!(e.contains("capture \"some\""), "{e}");
        let e = parse(Path::new("x"), HEADER.as_bytes()).unwrap_err();
        assert!(e.contains("no checksum"), "{e}");
    }
}
