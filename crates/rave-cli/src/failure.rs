//! Printing an error once — one line on stderr, or a JSON object on stdout with `--json` —
//! and choosing the exit code of its family.

use std::error::Error as _;
use std::path::Path;

use rave_core::error::{EngineError, ErrorFamily};

use crate::console::{errln, outln};

/// Print `err` and return the exit code for it: the JSON object on stdout with `--json`,
/// and on stderr an `error` event with `--progress jsonl` (`jsonl`), else one line.
pub fn report(err: &EngineError, json: bool, jsonl: bool) -> i32 {
    let object = ErrorObject::of(err);
    say(
        &object,
        None,
        &plain_line(err, &object.message),
        json,
        jsonl,
    );
    object.exit_code
}

/// Print `err`, the failure of one input of a batch: an `error` event naming the input with
/// `--progress jsonl` (`jsonl`), else (without `--json`, whose batch document holds it) one
/// line on stderr that names the input (unless the message already does).
pub fn report_input(err: &EngineError, input: &Path, json: bool, jsonl: bool) {
    let line = plain_line(err, &naming(&message(err), input));
    say(&ErrorObject::of(err), Some(input), &line, json, jsonl);
}

/// Say an error in the forms asked for: with `--json`, the JSON object on stdout (unless it
/// is a batch input's, `input`: the batch's document holds those); with `--progress jsonl`,
/// an `error` event on stderr (naming `input`); else, without `--json`, `line`.
pub fn say(object: &ErrorObject, input: Option<&Path>, line: &str, json: bool, jsonl: bool) {
    if json && input.is_none() {
        outln!("{}", serde_json::json!({ "error": object }));
    }
    if jsonl {
        let mut event = serde_json::json!({ "event": "error", "error": object });
        if let Some(input) = input {
            event["input"] = input.to_string_lossy().into();
        }
        errln!("{event}");
    } else if !json {
        errln!("{line}");
    }
}

/// `message` about `input`, starting with the input's path unless it names it already.
pub fn naming(message: &str, input: &Path) -> String {
    let shown = crate::console::shown(input);
    // `message` put the name on one line (a newline in it became a space): that form is
    // replaced by the escaped one, not named twice.
    let raw = one_line(&input.display().to_string());
    if raw != shown && !raw.is_empty() && message.contains(&raw) {
        return message.replace(&raw, &shown);
    }
    match message.contains(&shown) {
        true => message.to_string(),
        false => format!("{shown}: {message}"),
    }
}

/// The one line `rave` prints for `err`.
fn plain_line(err: &EngineError, message: &str) -> String {
    if matches!(err, EngineError::Cancelled) {
        "rave: interrupted".into()
    } else if err.family() == ErrorFamily::Cancelled {
        format!("rave: {message}")
    } else {
        format!("rave: error: {message}")
    }
}

/// `err` with its causes, on one line.
pub fn message(err: &EngineError) -> String {
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
    // Library messages (ONNX Runtime's above all) can run over several lines.
    one_line(&message)
}

/// An error as `--json` shows it (the object under `"error"`).
#[derive(Debug, serde::Serialize)]
pub struct ErrorObject {
    /// The stable numeric code (1xx GPU, 2xx model, 3xx media, ...).
    pub code: u16,
    /// The stable short name.
    pub kind: &'static str,
    /// The family, which decides the exit code.
    pub family: ErrorFamily,
    /// The exit code of the family.
    pub exit_code: i32,
    /// The message with its causes, on one line.
    pub message: String,
    /// What was lost or damaged, for a damaged input.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub damage: Option<serde_json::Value>,
}

impl ErrorObject {
    /// The object for `err`.
    pub fn of(err: &EngineError) -> Self {
        Self {
            code: err.code(),
            kind: err.kind(),
            family: err.family(),
            exit_code: err.family().exit_code(),
            message: message(err),
            damage: match err {
                EngineError::CorruptStream { damage, .. } => {
                    Some(serde_json::to_value(damage).unwrap_or_default())
                }
                _ => None,
            },
        }
    }
}

/// Print a command-line parsing error (or the help/version text) and return the exit code:
/// one line `rave: error: ...` with a pointer to the command's help (or, with `--json`, the
/// JSON error object on stdout; with `--progress jsonl`, an `error` event on stderr); `args`
/// are the raw arguments.
pub fn usage_error(err: clap::Error, args: &[String], json: bool) -> i32 {
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
    let message = first_line(&err.render().to_string());
    let line = format!("{message} (see {} --help)", command_of(args));
    print_usage(&message, &line, args, json)
}

/// Refuse an argument that is not valid UTF-8 (`shown` lossily): a path FFmpeg could not be
/// given. Exit 2, said like a usage error.
pub fn not_utf8(shown: &str, args: &[String], json: bool) -> i32 {
    let message = format!(
        "the argument '{shown}' is not valid UTF-8, which RAVE cannot hand to FFmpeg: rename the file (e.g. with convmv) and run again"
    );
    print_usage(&message, &message, args, json)
}

/// Print a usage error: the JSON error object with `--json`, an `error` event with
/// `--progress jsonl`, else `rave: error: LINE`; returns its exit code (2).
fn print_usage(message: &str, line: &str, args: &[String], json: bool) -> i32 {
    let object = ErrorObject {
        code: EngineError::Config(String::new()).code(),
        kind: "usage",
        family: ErrorFamily::Usage,
        exit_code: ErrorFamily::Usage.exit_code(),
        message: message.to_string(),
        damage: None,
    };
    let line = format!("rave: error: {line}");
    say(&object, None, &line, json, asks_jsonl(args));
    object.exit_code
}

/// Whether the raw arguments ask for `--progress jsonl` (read before they parse).
pub fn asks_jsonl(args: &[String]) -> bool {
    args.iter().any(|a| a == "--progress=jsonl")
        || args
            .windows(2)
            .any(|w| w[0] == "--progress" && w[1] == "jsonl")
}

/// The one line worth showing of clap's rendered error: its first line without the
/// `error: ` prefix, with the list that follows a line ending in ':' (missing arguments)
/// joined onto it; tips and the usage block are left out.
fn first_line(rendered: &str) -> String {
    let mut lines = rendered.lines();
    let first = lines
        .next()
        .unwrap_or("")
        .trim_start_matches("error: ")
        .trim_end();
    if !first.ends_with(':') {
        // clap lists the values a closed choice takes on a line of its own: keep them.
        let values = rendered.lines().find_map(|l| {
            l.trim()
                .strip_prefix("[possible values: ")
                .and_then(|v| v.strip_suffix(']'))
        });
        return match values {
            Some(v) => format!("{first}; possible values: {v}"),
            None => first.to_string(),
        };
    }
    let items: Vec<&str> = lines
        .take_while(|l| l.starts_with(' ') && !l.trim().is_empty())
        .map(str::trim)
        .collect();
    format!("{first} {}", items.join(", "))
}

/// `rave SUBCOMMAND` when `args` name one, else `rave`: where the user's help is.
fn command_of(args: &[String]) -> String {
    use clap::CommandFactory;
    let cli = crate::args::Cli::command();
    let names: Vec<&str> = cli.get_subcommands().map(|c| c.get_name()).collect();
    match args.iter().skip(1).find(|a| names.contains(&a.as_str())) {
        Some(sub) => format!("rave {sub}"),
        None => "rave".into(),
    }
}

/// `text` on one line: its lines joined by single spaces, blank ones dropped.
fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_choice_refused_names_its_values() {
        let rendered = "error: invalid value 'vp9' for '--codec <CODEC>'\n  [possible values: h264, hevc, av1]\n\nFor more information, try '--help'.\n";
        assert_eq!(
            first_line(rendered),
            "invalid value 'vp9' for '--codec <CODEC>'; possible values: h264, hevc, av1"
        );
        assert_eq!(
            first_line("error: unexpected argument '--x' found\n\nUsage: rave\n"),
            "unexpected argument '--x' found"
        );
    }

    #[test]
    fn library_messages_over_several_lines_become_one() {
        let ort = "inference failed: frame 0: Got invalid dimensions for input: x for the following indices\n index: 0 Got: 1 Expected: 2\n Please fix either the inputs/outputs or the model.\n";
        assert_eq!(
            one_line(ort),
            "inference failed: frame 0: Got invalid dimensions for input: x for the following indices index: 0 Got: 1 Expected: 2 Please fix either the inputs/outputs or the model."
        );
        assert_eq!(one_line("one line"), "one line");
    }

    #[test]
    fn clap_errors_shrink_to_one_line() {
        let rendered = "error: unexpected argument '-5' found\n\n  tip: to pass '-5' as a value, use '-- -5'\n\nUsage: rave upscale [OPTIONS]\n\nFor more information, try '--help'.\n";
        assert_eq!(first_line(rendered), "unexpected argument '-5' found");
        let missing = "error: the following required arguments were not provided:\n  --input <IN>\n  --output <OUT>\n\nUsage: rave upscale --input <IN> --output <OUT>\n";
        assert_eq!(
            first_line(missing),
            "the following required arguments were not provided: --input <IN>, --output <OUT>"
        );
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            command_of(&args(&["rave", "-v", "upscale", "--x"])),
            "rave upscale"
        );
        assert_eq!(command_of(&args(&["rave", "--bogus"])), "rave");
    }
}
