//! `ledger-check`: an independent checker of the proof ledgers of `kalah prove`.
//!
//! It shares no code with the prover: the rules of the game ([`game`]), the reading of the
//! ledger ([`ledger`]) and the derivation of its records from its units ([`check`]) are
//! written here again, from the README's rules and the format in FORMAT.md ("Proof
//! ledgers"). It has no endgame database and searches nothing: a record counts as confirmed
//! only when it follows from the proven units and the game's end.

pub mod check;
pub mod game;
pub mod ledger;
pub mod output;

pub use check::{check, Report};
