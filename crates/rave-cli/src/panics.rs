//! A panic is a bug in RAVE, and is said as one: one line (no backtrace, no "note: run
//! with RUST_BACKTRACE"), in the run's forms (`--json` object, `--progress jsonl` event,
//! else plain text), and exit 1, the documented code for internal errors (not Rust's 101).

use std::sync::OnceLock;

use rave_core::error::EngineError;

use crate::console::errln;

/// The first panic's description, for the error `main` reports.
static FIRST: OnceLock<String> = OnceLock::new();

/// "panicked at src/x.rs:10:5: message", on one line.
fn describe(info: &std::panic::PanicHookInfo<'_>) -> String {
    let payload = info.payload();
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into());
    let at = info
        .location()
        .map(|l| format!(" at {}:{}:{}", l.file(), l.line(), l.column()))
        .unwrap_or_default();
    format!("panicked{at}: {message}").replace('\n', " ")
}

/// The error of a panic whose description is `what`.
fn error(what: &str) -> EngineError {
    EngineError::InvariantViolation(format!(
        "a bug in RAVE (please report it with the command that led to it): {what}"
    ))
}

/// Replace Rust's panic message: every panic (on any thread) is remembered and, in plain
/// mode, said at once as one `rave: error:` line (a panic on a worker thread may not reach
/// `main`); with `--progress jsonl` (`jsonl`) as a `log` event; with `--json` (`json`) only
/// by `main`, in the JSON object on stdout.
pub fn install(json: bool, jsonl: bool) {
    std::panic::set_hook(Box::new(move |info| {
        let what = describe(info);
        // Only the first: a scoped thread's panic panics its scope again ("a scoped thread
        // panicked"), which says nothing more.
        if FIRST.set(what.clone()).is_err() {
            return;
        }
        if jsonl {
            let event = serde_json::json!({"event": "log", "level": "ERROR", "message": format!("panic: {what}")});
            errln!("{event}");
        } else if !json {
            errln!("rave: error: {}", error(&what));
        }
    }));
}

/// What `main` does once a panic reached it: the `--json` object or the jsonl `error` event
/// (plain text was said by the hook); the exit code.
pub fn reached_main(json: bool, jsonl: bool) -> i32 {
    let what = FIRST.get().map_or("a panic", String::as_str);
    let err = error(what);
    let object = crate::failure::ErrorObject::of(&err);
    if json || jsonl {
        crate::failure::say(&object, None, "", json, jsonl);
    }
    object.exit_code
}

/// `RAVE_INJECT_PANIC`: panic here (`thread`: on a scoped thread, as the pipeline's stages
/// and segment workers run), to test the above end to end.
pub fn injected() {
    match std::env::var("RAVE_INJECT_PANIC").as_deref() {
        Err(std::env::VarError::NotPresent) => {}
        Ok("thread") => std::thread::scope(|s| {
            s.spawn(|| panic!("injected on a thread by RAVE_INJECT_PANIC"));
        }),
        _ => panic!("injected by RAVE_INJECT_PANIC"),
    }
}
