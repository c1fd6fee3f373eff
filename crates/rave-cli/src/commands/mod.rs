//! One module per `rave` command.

pub mod benchmark;
pub mod devices;
pub mod distributed;
pub mod models;
pub mod probe;
pub mod upscale;

use crate::console::outln;

/// Print a command's result: pretty JSON on stdout with `--json`, else the human summary.
pub fn print_result<T: serde::Serialize>(json: bool, value: &T, human: impl FnOnce(&T)) {
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(value).unwrap_or_default()
        );
    } else {
        human(value);
    }
}
