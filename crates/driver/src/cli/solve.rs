//! `kalah solve` (being written).

use super::common::{CliError, CliResult};
use clap::Args;

/// Arguments of `kalah solve`.
#[derive(Args, Debug)]
pub struct SolveArgs {}

/// Runs `kalah solve`.
pub fn run(_args: &SolveArgs) -> CliResult {
    Err(CliError::failure("not built yet"))
}
