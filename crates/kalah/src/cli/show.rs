//! `kalah show`: the board as players see it.

use super::common::{read_position, CliResult, RuleArgs};
use clap::Args;
use kalah_solver::{Position, Rules, Side};

/// Arguments of `kalah show`.
#[derive(Args, Debug)]
pub struct ShowArgs {
    /// The position, short form (mover first) or full form (see README).
    pub position: String,
    #[command(flatten)]
    pub rules: RuleArgs,
}

/// Draws the board: North's houses on top from right to left, South's below from left to right,
/// North's store on the left and South's on the right.
pub fn draw(pos: &Position, rules: &Rules) -> String {
    let m = rules.houses;
    let south = pos.houses(Side::South);
    let north = pos.houses(Side::North);
    let widest = south
        .iter()
        .chain(north)
        .map(|s| s.to_string().len())
        .max()
        .unwrap_or(1)
        .max(m.to_string().len())
        .max(2);
    let cell = |v: String| format!(" {v:>widest$} ");
    let rule = format!("+{}", format!("{}+", "-".repeat(widest + 2)).repeat(m));
    let stores = [pos.store(Side::North), pos.store(Side::South)];
    let store_w = stores
        .iter()
        .map(|s| s.to_string().len())
        .max()
        .unwrap_or(1)
        + 2;
    let pad = " ".repeat(store_w + 1);
    let mut out = String::new();
    let labels_n: String = (1..=m)
        .rev()
        .map(|i| format!("{} ", cell(i.to_string())))
        .collect();
    out.push_str(&format!("{pad}{labels_n} North\n"));
    out.push_str(&format!("{pad}{rule}\n"));
    let row_n: String = (0..m)
        .rev()
        .map(|i| format!("{}|", cell(north[i].to_string())))
        .collect();
    out.push_str(&format!("{pad}|{row_n}\n"));
    let (north_store, south_store) = (format!("[{}]", stores[0]), format!("[{}]", stores[1]));
    out.push_str(&format!("{north_store:>store_w$} {rule} {south_store}\n"));
    let row_s: String = (0..m)
        .map(|i| format!("{}|", cell(south[i].to_string())))
        .collect();
    out.push_str(&format!("{pad}|{row_s}\n"));
    out.push_str(&format!("{pad}{rule}\n"));
    let labels_s: String = (1..=m)
        .map(|i| format!("{} ", cell(i.to_string())))
        .collect();
    out.push_str(&format!("{pad}{labels_s} South\n"));
    let to_move = match pos.to_move() {
        Side::South => "South",
        Side::North => "North",
    };
    match pos.final_score(rules) {
        Some(score) => out.push_str(&format!(
            "Game over: South {} - North {} after the seeds left are settled ({}).\n",
            score.south, score.north, rules.leftover
        )),
        None => out.push_str(&format!(
            "{to_move} to move. Stores: South {}, North {}. Seeds in houses: {}.\n",
            pos.store(Side::South),
            pos.store(Side::North),
            pos.board().seeds()
        )),
    }
    out
}

/// `kalah show`.
pub fn show(args: &ShowArgs) -> CliResult {
    let rules = args.rules.rules()?;
    let pos = read_position(&args.position, &rules)?;
    print!("{}", draw(&pos, &rules));
    Ok(())
}
