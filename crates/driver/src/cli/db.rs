//! `kalah db` (being written).

use super::common::{CliError, CliResult};
use clap::Args;

/// Arguments of `kalah db`.
#[derive(Args, Debug)]
pub struct DbArgs {}

/// Runs `kalah db`.
pub fn run(_args: &DbArgs) -> CliResult {
    Err(CliError::failure("not built yet"))
}
