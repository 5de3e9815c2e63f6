//! `ledger-check [--json] DIR...`: checks the proof ledger in each DIR (or each ledger file
//! named). Exit status 0 when every ledger is sound and every record confirmed, 1 otherwise
//! (a ledger that cannot be read included), 2 on bad usage.

use ledger_check::{check, ledger, output};
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: ledger-check [--json] DIR...

Checks the proof ledger DIR/ledger.jsonl (or the file DIR) of `kalah prove`, sharing no
code with it: every line's checksum, every unit's path replayed to its board, and every
root, opening and turn record derived again from the proven units and the game's end.
--json prints one JSON object a ledger, one a line.
Exit status: 0 every record confirmed, 1 otherwise, 2 bad usage.";

fn main() -> ExitCode {
    let mut json = false;
    let mut dirs = Vec::new();
    let mut only_paths = false;
    for a in std::env::args().skip(1) {
        if only_paths || !a.starts_with('-') || a == "-" {
            dirs.push(PathBuf::from(a));
            continue;
        }
        match a.as_str() {
            "--json" => json = true,
            "--" => only_paths = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            _ => {
                eprintln!("ledger-check: unknown option {a:?}\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    if dirs.is_empty() {
        eprintln!("ledger-check: no ledger given\n{USAGE}");
        return ExitCode::from(2);
    }
    let mut all_ok = true;
    for dir in &dirs {
        match ledger::read(dir) {
            Ok(l) => {
                let report = check(&l);
                all_ok &= report.ok();
                if json {
                    println!("{}", output::json(&report));
                } else {
                    print!("{}", output::text(&report));
                }
            }
            Err(e) => {
                all_ok = false;
                if json {
                    println!(
                        "{}",
                        serde_json::json!({
                            "ledger": ledger::file_of(dir).display().to_string(),
                            "errors": [e],
                            "ok": false,
                        })
                    );
                } else {
                    println!(
                        "{}\n  error:    {e}\n  FAILED",
                        ledger::file_of(dir).display()
                    );
                }
            }
        }
    }
    if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
