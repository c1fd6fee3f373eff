//! Printing an error once — one line on stderr, or a JSON object on stdout with `--json` —
//! and choosing the exit code of its family.

use std::error::Error as _;

use rave_core::error::{EngineError, ErrorFamily};

use crate::console::{errln, outln};

/// Print `err` and return the exit code for it.
pub fn report(err: &EngineError, json: bool) -> i32 {
    let family = err.family();
    let code = family.exit_code();
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = s.source();
    }
    if json {
        let obj = serde_json::json!({
            "error": {
                "code": err.code(),
                "kind": err.kind(),
                "family": family,
                "exit_code": code,
                "message": message,
            }
        });
        outln!("{obj}");
    } else if matches!(err, EngineError::Cancelled) {
        errln!("rave: interrupted");
    } else if family == ErrorFamily::Cancelled {
        errln!("rave: {message}");
    } else {
        errln!("rave: error: {message}");
    }
    code
}

/// Print a command-line parsing error (or the help/version text) and return the exit code.
pub fn usage_error(err: clap::Error, json: bool) -> i32 {
    use clap::error::ErrorKind;
    if matches!(
        err.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = err.print();
        return if err.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
            2
        } else {
            0
        };
    }
    let code = ErrorFamily::Usage.exit_code();
    if json {
        let text = err.render().to_string();
        let first = text
            .lines()
            .next()
            .unwrap_or("")
            .trim_start_matches("error: ");
        let obj = serde_json::json!({
            "error": {
                "code": EngineError::Config(String::new()).code(),
                "kind": "usage",
                "family": ErrorFamily::Usage,
                "exit_code": code,
                "message": first,
            }
        });
        outln!("{obj}");
    } else {
        let _ = err.print();
    }
    code
}
