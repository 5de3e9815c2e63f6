//! The book file: a small header, the entries sorted by board, and a checksum (see FORMAT.md,
//! "Opening books"). Every byte read is checked before a value is believed.

use super::{Book, BookError};
use kalah_solver::{Board, Capture, EndRule, Leftover, Rules};
use std::path::Path;
use xxhash_rust::xxh3::xxh3_64;

/// The first eight bytes of every book.
pub(super) const MAGIC: &[u8; 8] = b"KALAHBOK";
/// The layout written and read.
pub(super) const VERSION: u16 = 1;
/// Bytes before the note: magic, version, houses, seeds, three rule codes, plies, note
/// length, entry count.
const HEADER: usize = 8 + 2 + 1 + 1 + 3 + 1 + 4 + 8;
/// The longest note a book may carry.
pub(super) const MAX_NOTE: usize = 1 << 16;
/// The largest book file read (a book is meant to be a few MB).
const MAX_FILE: u64 = 1 << 30;

/// Bytes of one entry for boards of `m` houses a side: the cells, then lower and upper bound.
pub(super) fn entry_width(m: usize) -> usize {
    2 * m + 4
}

/// The bytes of `book`.
pub(super) fn encode(book: &Book) -> Vec<u8> {
    let r = &book.rules;
    let mut out = Vec::with_capacity(HEADER + book.note.len() + book.keys.len() * 2 + 8);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.push(r.houses as u8);
    out.push(r.seeds as u8);
    out.push(r.capture.code());
    out.push(r.leftover.code());
    out.push(r.end.code());
    out.push(book.plies);
    out.extend_from_slice(&(book.note.len() as u32).to_le_bytes());
    out.extend_from_slice(&(book.bounds.len() as u64).to_le_bytes());
    out.extend_from_slice(book.note.as_bytes());
    let w = 2 * r.houses;
    for (i, &(lo, hi)) in book.bounds.iter().enumerate() {
        out.extend_from_slice(&book.keys[i * w..(i + 1) * w]);
        out.extend_from_slice(&lo.to_le_bytes());
        out.extend_from_slice(&hi.to_le_bytes());
    }
    let sum = xxh3_64(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// Reads and checks the book at `path`.
pub(super) fn read(path: &Path) -> Result<Book, BookError> {
    let io = |e: std::io::Error| BookError::Io(path.to_path_buf(), e);
    let len = std::fs::metadata(path).map_err(io)?.len();
    if len > MAX_FILE {
        return Err(BookError::Corrupt(
            path.to_path_buf(),
            format!("{len} bytes, more than a book may take ({MAX_FILE})"),
        ));
    }
    let bytes = std::fs::read(path).map_err(io)?;
    decode(&bytes).map_err(|m| BookError::Corrupt(path.to_path_buf(), m))
}

/// The book in `bytes`, or what is wrong with them.
pub(super) fn decode(bytes: &[u8]) -> Result<Book, String> {
    if bytes.len() < HEADER + 8 {
        return Err(format!(
            "{} bytes, too short for a book (a header takes {})",
            bytes.len(),
            HEADER + 8
        ));
    }
    if &bytes[..8] != MAGIC {
        return Err("not a kalah opening book (bad magic bytes)".into());
    }
    let version = u16::from_le_bytes([bytes[8], bytes[9]]);
    if version != VERSION {
        return Err(format!(
            "book format version {version}; this program reads version {VERSION}"
        ));
    }
    let (body, sum) = bytes.split_at(bytes.len() - 8);
    if xxh3_64(body) != u64::from_le_bytes(sum.try_into().unwrap()) {
        return Err("checksum mismatch: the file is damaged".into());
    }
    let houses = bytes[10] as usize;
    let seeds = bytes[11] as u32;
    let rule = |what: &str, code: u8| format!("unknown {what} code {code}");
    let rules = Rules {
        houses,
        seeds,
        capture: Capture::from_code(bytes[12]).ok_or_else(|| rule("capture", bytes[12]))?,
        leftover: Leftover::from_code(bytes[13]).ok_or_else(|| rule("leftover", bytes[13]))?,
        end: EndRule::from_code(bytes[14]).ok_or_else(|| rule("end", bytes[14]))?,
    };
    rules
        .validate()
        .map_err(|e| format!("bad rules in the header: {}", e.0))?;
    if seeds == 0 {
        return Err("bad rules in the header: 0 seeds per house".into());
    }
    let plies = bytes[15];
    let note_len = u32::from_le_bytes(bytes[16..20].try_into().unwrap()) as usize;
    let count = u64::from_le_bytes(bytes[20..28].try_into().unwrap());
    if note_len > MAX_NOTE {
        return Err(format!("a note of {note_len} bytes (at most {MAX_NOTE})"));
    }
    let w = entry_width(houses) as u64;
    let expected = (HEADER as u64 + note_len as u64)
        .checked_add(count.checked_mul(w).ok_or("entry count overflows")?)
        .and_then(|n| n.checked_add(8))
        .ok_or("entry count overflows")?;
    if expected != bytes.len() as u64 {
        return Err(format!(
            "{} bytes, but the header's {count} entries and {note_len}-byte note take {expected}",
            bytes.len()
        ));
    }
    let note = std::str::from_utf8(&bytes[HEADER..HEADER + note_len])
        .map_err(|_| "the note is not UTF-8")?
        .to_string();
    let m = houses;
    let mut keys = Vec::with_capacity(count as usize * 2 * m);
    let mut bounds = Vec::with_capacity(count as usize);
    let mut at = HEADER + note_len;
    let mut prev: Option<&[u8]> = None;
    for i in 0..count as usize {
        let e = &bytes[at..at + w as usize];
        at += w as usize;
        let cells = &e[..2 * m];
        let lo = i16::from_le_bytes([e[2 * m], e[2 * m + 1]]);
        let hi = i16::from_le_bytes([e[2 * m + 2], e[2 * m + 3]]);
        let total: u32 = cells.iter().map(|&c| c as u32).sum();
        if total > 255 {
            return Err(format!("entry {i}: {total} seeds, more than 255"));
        }
        let t = total as i16;
        if lo > hi || lo < -t || hi > t {
            return Err(format!(
                "entry {i}: bounds {lo}..{hi} impossible for {total} seeds"
            ));
        }
        if prev.is_some_and(|p| p >= cells) {
            return Err(format!("entry {i}: boards out of order or repeated"));
        }
        prev = Some(cells);
        keys.extend_from_slice(cells);
        bounds.push((lo, hi));
    }
    Ok(Book {
        rules,
        plies,
        note,
        keys,
        bounds,
    })
}

/// The board of entry `i`.
pub(super) fn board_at(book: &Book, i: usize) -> Board {
    let m = book.rules.houses;
    let k = &book.keys[i * 2 * m..(i + 1) * 2 * m];
    Board::new(&k[..m], &k[m..])
}
