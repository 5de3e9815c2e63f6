//! What `kalah prove check --needed` has proven again: `rechecked.jsonl` beside the ledger, one
//! line per unit searched again from nothing, in the ledger's line format (a JSON object, a
//! tab, the xxh3-64 checksum of the JSON text).
//!
//! Each line is appended and made durable as soon as its search ends, so a check killed in
//! any way loses at most the unit under way, and the next `--needed` check goes on from the
//! units recorded here. A record names the ledger line, the unit's position and threshold,
//! what the ledger claims and what the search found: a record that no longer matches its
//! ledger line (another ledger, an edited one) is not used. A last line cut short by a crash
//! is dropped; damage anywhere else is an error naming the line.
//!
//! A unit can take an hour. So that a check stopped in the middle of one loses minutes, not
//! the unit, the check also saves, now and then and when it stops, its own table
//! ([`TABLE_FILE`]: the proven bounds of its own searches, never a `prove` run's) and the
//! unit under way with the work spent on it ([`UNIT_FILE`]). The next `--needed` check starts
//! from that table, and the unit's record counts the earlier work too. A finished check
//! removes both: they are local files, not part of the proof.

use super::ledger::{self, Verdict};
use kalah_solver::{parse_position, Board};
use serde_json::json;
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The file's name in the ledger's directory.
pub const FILE: &str = "rechecked.jsonl";

/// One unit proven again.
#[derive(Clone, Debug, PartialEq)]
pub struct Recheck {
    /// The unit's ledger line.
    pub line: usize,
    /// The unit's position.
    pub board: Board,
    /// Its threshold.
    pub threshold: i32,
    /// What the ledger claims: the value is at least the threshold.
    pub claimed: bool,
    /// What the search found.
    pub found: bool,
    /// Nodes of the search.
    pub nodes: u64,
    /// Its seconds.
    pub seconds: f64,
}

/// The file in `dir`.
pub fn path(dir: &Path) -> PathBuf {
    dir.join(FILE)
}

fn verdict(at_least: bool) -> &'static str {
    if at_least {
        Verdict::AtLeast.name()
    } else {
        Verdict::Below.name()
    }
}

fn parse_verdict(v: &serde_json::Value, name: &str) -> Result<bool, String> {
    let t = v
        .get(name)
        .and_then(|x| x.as_str())
        .ok_or_else(|| format!("no text field {name:?}"))?;
    match Verdict::parse(t).and_then(|v| v.truth()) {
        Some(b) => Ok(b),
        None => Err(format!("{name} {t:?} is not at-least or below")),
    }
}

/// The fields that a record and the unit under way share: line, board, threshold, nodes and
/// seconds.
fn parse_common(
    v: &serde_json::Value,
    houses: usize,
) -> Result<(usize, Board, i32, u64, f64), String> {
    let uint = |name: &str| {
        v.get(name)
            .and_then(|x| x.as_u64())
            .ok_or_else(|| format!("no non-negative integer field {name:?}"))
    };
    let board_text = v
        .get("board")
        .and_then(|x| x.as_str())
        .ok_or("no text field \"board\"")?;
    let board = parse_position(board_text, houses)
        .map_err(|e| format!("board {board_text:?}: {e}"))?
        .board();
    let threshold = v
        .get("threshold")
        .and_then(|x| x.as_i64())
        .and_then(|t| i32::try_from(t).ok())
        .ok_or("no integer field \"threshold\"")?;
    let seconds = v
        .get("seconds")
        .and_then(|x| x.as_f64())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .ok_or("no non-negative number field \"seconds\"")?;
    let line = usize::try_from(uint("line")?).map_err(|_| "line out of range")?;
    Ok((line, board, threshold, uint("nodes")?, seconds))
}

fn parse_record(v: &serde_json::Value, houses: usize) -> Result<Recheck, String> {
    let (line, board, threshold, nodes, seconds) = parse_common(v, houses)?;
    Ok(Recheck {
        line,
        board,
        threshold,
        claimed: parse_verdict(v, "claimed")?,
        found: parse_verdict(v, "found")?,
        nodes,
        seconds,
    })
}

/// The table that a stopped `--needed` check saved beside the ledger, for the next one.
pub const TABLE_FILE: &str = "recheck-table.ckp";

/// The unit that a stopped `--needed` check was searching, beside the ledger.
pub const UNIT_FILE: &str = "recheck-unit.json";

/// The table file in `dir`.
pub fn table_path(dir: &Path) -> PathBuf {
    dir.join(TABLE_FILE)
}

/// A unit whose search a stopped check began, and the work spent on it so far.
#[derive(Clone, Debug, PartialEq)]
pub struct InFlight {
    /// The unit's ledger line.
    pub line: usize,
    /// Its position.
    pub board: Board,
    /// Its threshold.
    pub threshold: i32,
    /// Nodes searched on it.
    pub nodes: u64,
    /// Seconds spent on it.
    pub seconds: f64,
}

impl InFlight {
    /// Saves it in `dir` ([`UNIT_FILE`], one checksummed line, replaced whole).
    pub fn save(&self, dir: &Path) -> Result<(), String> {
        let v = json!({
            "line": self.line,
            "board": self.board.to_string(),
            "threshold": self.threshold,
            "nodes": self.nodes,
            "seconds": (self.seconds * 1000.0).round() / 1000.0,
        });
        save_line(&dir.join(UNIT_FILE), &v)
    }

    /// The unit saved in `dir`, if any; a damaged file is an error naming it.
    pub fn read(dir: &Path, houses: usize) -> Result<Option<InFlight>, String> {
        let p = dir.join(UNIT_FILE);
        let Some(v) = read_line(&p)? else {
            return Ok(None);
        };
        let (line, board, threshold, nodes, seconds) =
            parse_common(&v, houses).map_err(|e| format!("{}: {e}", p.display()))?;
        Ok(Some(InFlight {
            line,
            board,
            threshold,
            nodes,
            seconds,
        }))
    }
}

/// Writes `v` to `p` as one checksummed line, replacing the file whole.
fn save_line(p: &Path, v: &serde_json::Value) -> Result<(), String> {
    crate::write_renamed::write_renamed(p, ledger::line(v).as_bytes())
        .map_err(|e| format!("{}: {e}", p.display()))
}

/// The one checksummed line of `p` (see [`save_line`]), if the file is there; anything else
/// in it is an error naming the file.
fn read_line(p: &Path) -> Result<Option<serde_json::Value>, String> {
    let bytes = match std::fs::read(p) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", p.display())),
    };
    let (mut lines, torn) = ledger::read_lines(p, &bytes, false)?;
    match (lines.pop(), lines.is_empty(), torn) {
        (Some((_, v)), true, 0) => Ok(Some(v)),
        _ => Err(format!("{}: not one whole checksummed line", p.display())),
    }
}

/// Removes the table and the unit under way that a stopped check saved in `dir` (once every
/// unit is proven again they serve nothing).
pub fn remove_saved(dir: &Path) -> Result<(), String> {
    for p in [table_path(dir), dir.join(UNIT_FILE)] {
        match std::fs::remove_file(&p) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(format!("{}: {e}", p.display()))
            }
            _ => {}
        }
    }
    Ok(())
}

/// The records in `dir` (none when there is no file) and the bytes of a last line cut short
/// by a crash, which are dropped; any other damage is an error naming the line.
pub fn read(dir: &Path, houses: usize) -> Result<(Vec<Recheck>, usize), String> {
    let p = path(dir);
    let mut bytes = Vec::new();
    match File::open(&p) {
        Ok(mut f) => f
            .read_to_end(&mut bytes)
            .map_err(|e| format!("{}: {e}", p.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), 0)),
        Err(e) => return Err(format!("{}: {e}", p.display())),
    };
    let (lines, torn) = ledger::read_lines(&p, &bytes, false)?;
    let mut out = Vec::with_capacity(lines.len());
    for (n, v) in lines {
        out.push(parse_record(&v, houses).map_err(|e| format!("{} line {n}: {e}", p.display()))?);
    }
    Ok((out, torn))
}

/// The file open for appending; made on the first record, so a check that records nothing
/// leaves no file.
pub struct Rechecked {
    path: PathBuf,
    file: Option<File>,
}

impl Rechecked {
    /// The file in `dir`, for appending; a last line cut short by a crash (`torn` bytes, as
    /// [`read`] found them) is cut off first.
    pub fn open(dir: &Path, torn: usize) -> Result<Rechecked, String> {
        let mut r = Rechecked {
            path: path(dir),
            file: None,
        };
        if torn > 0 {
            let shown = r.path.display().to_string();
            let err = |e: std::io::Error| format!("{shown}: {e}");
            let file = r.file()?;
            let len = file.metadata().map_err(err)?.len();
            file.set_len(len.saturating_sub(torn as u64))
                .and_then(|_| file.sync_all())
                .map_err(err)?;
        }
        Ok(r)
    }

    fn file(&mut self) -> Result<&mut File, String> {
        if self.file.is_none() {
            let f = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)
                .map_err(|e| format!("{}: {e}", self.path.display()))?;
            self.file = Some(f);
        }
        Ok(self.file.as_mut().expect("opened above"))
    }

    /// Appends a record and makes it durable before returning.
    pub fn append(&mut self, r: &Recheck) -> Result<(), String> {
        let v = json!({
            "line": r.line,
            "board": r.board.to_string(),
            "threshold": r.threshold,
            "claimed": verdict(r.claimed),
            "found": verdict(r.found),
            "nodes": r.nodes,
            "seconds": (r.seconds * 1000.0).round() / 1000.0,
        });
        let path = self.path.display().to_string();
        let file = self.file()?;
        file.write_all(ledger::line(&v).as_bytes())
            .and_then(|_| file.sync_data())
            .map_err(|e| format!("{path}: {e}"))
    }
}

/// The units that a ledger's root, opening and first-turn records rest on, as the last
/// `prove check --needed` derived them, beside the ledger.
pub const NEEDED_FILE: &str = "needed.json";

/// The needed units of a ledger (see [`NEEDED_FILE`]): deriving them takes the database, so
/// `prove status` and `results` read them from here to say how many are proven again.
#[derive(Clone, Debug, PartialEq)]
pub struct Needed {
    /// The ledger's last line when they were derived: a ledger grown since may rest on others.
    pub ledger_lines: usize,
    /// Their ledger lines.
    pub lines: Vec<usize>,
}

impl Needed {
    /// Saves them in `dir` ([`NEEDED_FILE`], one checksummed line, replaced whole).
    pub fn save(&self, dir: &Path) -> Result<(), String> {
        let v = json!({ "ledger_lines": self.ledger_lines, "lines": self.lines });
        save_line(&dir.join(NEEDED_FILE), &v)
    }

    /// The needed units saved in `dir`, if any; a damaged file is an error naming it.
    pub fn read(dir: &Path) -> Result<Option<Needed>, String> {
        let p = dir.join(NEEDED_FILE);
        let Some(v) = read_line(&p)? else {
            return Ok(None);
        };
        let shown = p.display();
        let line = |x: &serde_json::Value| x.as_u64().and_then(|n| usize::try_from(n).ok());
        let ledger_lines = v
            .get("ledger_lines")
            .and_then(line)
            .ok_or_else(|| format!("{shown}: no non-negative integer field \"ledger_lines\""))?;
        let lines = v
            .get("lines")
            .and_then(|x| x.as_array())
            .and_then(|a| a.iter().map(line).collect::<Option<Vec<usize>>>())
            .ok_or_else(|| format!("{shown}: no list of line numbers \"lines\""))?;
        Ok(Some(Needed {
            ledger_lines,
            lines,
        }))
    }
}

/// How many of the needed units (see [`Needed`]) are proven again.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NeededCount {
    /// The needed units.
    pub units: usize,
    /// Of those, the ones that a record matching the ledger proves again.
    pub rechecked: usize,
    /// Whether they were derived from the ledger as it is (not a shorter one).
    pub current: bool,
}

/// What `rechecked.jsonl` says about a ledger's units, for `prove status`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    /// Records that match a proven unit of the ledger (same line, position, threshold and
    /// claim); the last record of a line counts.
    pub units: usize,
    /// Of those, the ones whose search found what the ledger claims.
    pub agree: usize,
    /// Records that match no proven unit of the ledger (another ledger, an edited one).
    pub stale: usize,
    /// Nodes of the matching records' searches.
    pub nodes: u64,
    /// Their seconds.
    pub seconds: f64,
    /// How many of the needed units they prove again, where the last `--needed` check saved
    /// them ([`NEEDED_FILE`]).
    pub needed: Option<NeededCount>,
}

/// The records of `records` that match a unit of `units` (ledger line and record): same line,
/// position and threshold, and the unit proven with the claim recorded; the last record of a
/// line counts. Also the number of records that match none (another ledger, an edited one).
pub fn matching<'a>(
    records: &'a [Recheck],
    units: &[(usize, &ledger::UnitRecord)],
) -> (HashMap<usize, &'a Recheck>, usize) {
    let by_line: HashMap<usize, &ledger::UnitRecord> =
        units.iter().map(|(l, u)| (*l, *u)).collect();
    let mut out = HashMap::new();
    let mut stale = 0;
    for r in records {
        let fits = by_line.get(&r.line).is_some_and(|u| {
            u.board == r.board && u.threshold == r.threshold && u.verdict.truth() == Some(r.claimed)
        });
        if fits {
            out.insert(r.line, r);
        } else {
            stale += 1;
        }
    }
    (out, stale)
}

/// Matches the records in `dir` against the ledger's `contents` (see [`matching`]), and
/// counts those among the needed units the last `--needed` check saved: `None` when there is
/// no file of records, an error when it or the needed units' file is damaged (a last line cut
/// short is dropped, as a check drops it).
pub fn summary(dir: &Path, contents: &ledger::Contents) -> Result<Option<Summary>, String> {
    if !path(dir).exists() {
        return Ok(None);
    }
    let (records, _) = read(dir, contents.header.rules.houses)?;
    let units: Vec<(usize, &ledger::UnitRecord)> = contents
        .records
        .iter()
        .filter_map(|(line, r)| match r {
            ledger::Record::Unit(u) => Some((*line, u)),
            _ => None,
        })
        .collect();
    let (last, stale) = matching(&records, &units);
    let mut s = Summary {
        stale,
        ..Summary::default()
    };
    for r in last.values() {
        s.units += 1;
        s.agree += usize::from(r.found == r.claimed);
        s.nodes += r.nodes;
        s.seconds += r.seconds;
    }
    if let Some(n) = Needed::read(dir)? {
        s.needed = Some(NeededCount {
            units: n.lines.len(),
            rechecked: n.lines.iter().filter(|l| last.contains_key(l)).count(),
            current: n.ledger_lines == contents.last_line(),
        });
    }
    Ok(Some(s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kalah_solver::Rules;

    fn record(line: usize, found: bool) -> Recheck {
        Recheck {
            line,
            board: Board::start(&Rules::standard(6, 4)),
            threshold: 2,
            claimed: true,
            found,
            nodes: 1234,
            seconds: 0.5,
        }
    }

    #[test]
    fn records_read_back_and_a_torn_last_line_is_dropped_then_cut() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path(), 6).unwrap(), (Vec::new(), 0));
        let mut f = Rechecked::open(dir.path(), 0).unwrap();
        assert!(!path(dir.path()).exists(), "made before the first record");
        f.append(&record(3, true)).unwrap();
        f.append(&record(7, false)).unwrap();
        drop(f);
        let (got, torn) = read(dir.path(), 6).unwrap();
        assert_eq!((got, torn), (vec![record(3, true), record(7, false)], 0));
        // A crash in the middle of a line: the part is dropped, and cut on the next open.
        let p = path(dir.path());
        let mut bytes = std::fs::read(&p).unwrap();
        let whole = bytes.len();
        bytes.extend_from_slice(b"{\"line\":9,\"bo");
        std::fs::write(&p, &bytes).unwrap();
        let (got, torn) = read(dir.path(), 6).unwrap();
        assert_eq!((got.len(), torn), (2, 13));
        let mut f = Rechecked::open(dir.path(), torn).unwrap();
        f.append(&record(9, true)).unwrap();
        drop(f);
        assert!(std::fs::read(&p).unwrap().len() > whole);
        let (got, torn) = read(dir.path(), 6).unwrap();
        assert_eq!(got.iter().map(|r| r.line).collect::<Vec<_>>(), [3, 7, 9]);
        assert_eq!(torn, 0);
    }

    #[test]
    fn the_unit_under_way_reads_back_and_damage_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(InFlight::read(dir.path(), 6).unwrap(), None);
        let u = InFlight {
            line: 12,
            board: Board::start(&Rules::standard(6, 4)),
            threshold: -3,
            nodes: 987_654_321,
            seconds: 61.25,
        };
        u.save(dir.path()).unwrap();
        assert_eq!(InFlight::read(dir.path(), 6).unwrap(), Some(u.clone()));
        let p = dir.path().join(UNIT_FILE);
        let text = std::fs::read_to_string(&p).unwrap();
        for bad in [
            text.replacen("987654321", "987654322", 1),
            text[..text.len() / 2].to_string(),
            text.clone() + &text,
            String::new(),
        ] {
            std::fs::write(&p, &bad).unwrap();
            let e = InFlight::read(dir.path(), 6).unwrap_err();
            assert!(e.contains(UNIT_FILE), "{bad:?}: {e}");
        }
        std::fs::write(table_path(dir.path()), b"x").unwrap();
        remove_saved(dir.path()).unwrap();
        assert!(!p.exists() && !table_path(dir.path()).exists());
        remove_saved(dir.path()).unwrap();
    }

    #[test]
    fn the_needed_units_read_back_and_damage_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Needed::read(dir.path()).unwrap(), None);
        let n = Needed {
            ledger_lines: 1003,
            lines: vec![2, 17, 1001],
        };
        n.save(dir.path()).unwrap();
        assert_eq!(Needed::read(dir.path()).unwrap(), Some(n.clone()));
        let p = dir.path().join(NEEDED_FILE);
        let text = std::fs::read_to_string(&p).unwrap();
        let forged = |v: serde_json::Value| ledger::line(&v);
        for bad in [
            text.replacen("1001", "1002", 1),
            text[..text.len() / 2].to_string(),
            text.clone() + &text,
            String::new(),
            forged(json!({"ledger_lines": -1, "lines": [2]})),
            forged(json!({"ledger_lines": 3, "lines": [2, "x"]})),
            forged(json!({"ledger_lines": 3})),
        ] {
            std::fs::write(&p, &bad).unwrap();
            let e = Needed::read(dir.path()).unwrap_err();
            assert!(e.contains(NEEDED_FILE), "{bad:?}: {e}");
        }
    }

    #[test]
    fn damage_before_the_last_line_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = Rechecked::open(dir.path(), 0).unwrap();
        f.append(&record(3, true)).unwrap();
        f.append(&record(7, true)).unwrap();
        drop(f);
        let p = path(dir.path());
        let text = std::fs::read_to_string(&p).unwrap();
        std::fs::write(&p, text.replacen("\"at-least\"", "\"below\"", 1)).unwrap();
        let e = read(dir.path(), 6).unwrap_err();
        assert!(e.contains("line 1") && e.contains("checksum"), "{e}");
        // A record with a good checksum but a bad field names it.
        let v = json!({"line": 1, "board": "nonsense", "threshold": 0, "claimed": "below",
            "found": "below", "nodes": 0, "seconds": 0.0});
        std::fs::write(&p, ledger::line(&v) + &ledger::line(&v)).unwrap();
        let e = read(dir.path(), 6).unwrap_err();
        assert!(e.contains("line 1") && e.contains("board"), "{e}");
        let v = json!({"line": 1, "board": "4 4 4 4 4 4 / 4 4 4 4 4 4", "threshold": 0,
            "claimed": "open", "found": "below", "nodes": 0, "seconds": 0.0});
        std::fs::write(&p, ledger::line(&v) + &ledger::line(&v)).unwrap();
        let e = read(dir.path(), 6).unwrap_err();
        assert!(e.contains("line 1") && e.contains("claimed"), "{e}");
    }
}
