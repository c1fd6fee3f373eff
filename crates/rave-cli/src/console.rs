//! Printing on stdout and stderr: a stream the reader closed (`rave probe x | head -1`) means
//! "stop printing to it", never a panic. Every line the CLI prints goes through `outln!` and
//! `errln!`, whole, in one write.
//!
//! Lines for stderr go to a copy of it taken at start-up ([`keep_stderr`]): while an encoder
//! library opens, descriptor 2 is pointed at a file to catch what the library prints there
//! (`rave_ffmpeg::stderr_capture`), and RAVE's own lines from other threads (progress,
//! events, Ctrl+C) must not be caught with it.

use std::fs::File;
use std::io::Write;
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
static STDERR_CLOSED: AtomicBool = AtomicBool::new(false);

/// The copy of stderr taken at start-up (None: the copy could not be made).
static STDERR_COPY: OnceLock<Option<Mutex<File>>> = OnceLock::new();

/// `--json` was given: stdout carries one JSON document.
static JSON: AtomicBool = AtomicBool::new(false);
/// `--progress jsonl` was given: every line on stderr is a JSON event.
static JSONL: AtomicBool = AtomicBool::new(false);

/// `path` for a line of text: its control characters (a newline in a file name) escaped as
/// `\n`, `\t`, `\u{1b}`, so that what RAVE prints about it stays on one line.
pub fn shown(path: &std::path::Path) -> String {
    let text = path.display().to_string();
    match text.chars().any(char::is_control) {
        false => text,
        true => text
            .chars()
            .map(|c| match c.is_control() {
                true => c.escape_default().to_string(),
                false => c.to_string(),
            })
            .collect(),
    }
}

/// Record the command's output modes (`--json`, `--progress jsonl`), for what prints
/// outside the command's own flow (the Ctrl+C handler).
pub fn set_modes(json: bool, jsonl: bool) {
    JSON.store(json, Ordering::Relaxed);
    JSONL.store(jsonl, Ordering::Relaxed);
}

/// Whether `--json` was given.
pub fn json() -> bool {
    JSON.load(Ordering::Relaxed)
}

/// Whether `--progress jsonl` was given.
pub fn jsonl() -> bool {
    JSONL.load(Ordering::Relaxed)
}

/// Take the copy of stderr that `errln!` writes to (at the top of `main`, before any
/// redirection of descriptor 2).
pub fn keep_stderr() {
    STDERR_COPY.get_or_init(|| {
        // SAFETY: dup on descriptor 2 has no memory effects; a negative result is handled.
        let fd = unsafe { libc::dup(2) };
        // SAFETY: `fd` is a fresh descriptor owned by nothing else: the File owns it now.
        (fd >= 0).then(|| Mutex::new(unsafe { File::from_raw_fd(fd) }))
    });
}

/// Write one formatted line on stdout, unless stdout is closed.
pub fn out_line(args: std::fmt::Arguments<'_>) {
    write_line(&mut std::io::stdout().lock(), &STDOUT_CLOSED, args);
}

/// Write one formatted line on stderr (its copy from start-up), unless stderr is closed.
pub fn err_line(args: std::fmt::Arguments<'_>) {
    match STDERR_COPY.get().and_then(Option::as_ref) {
        Some(copy) => write_line(
            &mut *copy.lock().unwrap_or_else(|e| e.into_inner()),
            &STDERR_CLOSED,
            args,
        ),
        None => write_line(&mut std::io::stderr().lock(), &STDERR_CLOSED, args),
    }
}

/// Bytes already formatted (a log line) on stderr's copy, as one write.
pub fn err_bytes(bytes: &[u8]) {
    if STDERR_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let written = match STDERR_COPY.get().and_then(Option::as_ref) {
        Some(copy) => copy
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .write_all(bytes),
        None => std::io::stderr().lock().write_all(bytes),
    };
    if written.is_err() {
        STDERR_CLOSED.store(true, Ordering::Relaxed);
    }
}

fn write_line(w: &mut impl Write, closed: &AtomicBool, args: std::fmt::Arguments<'_>) {
    if closed.load(Ordering::Relaxed) {
        return;
    }
    // One write for the whole line: a reader of a pipe gets it whole.
    let line = format!("{args}\n");
    if w.write_all(line.as_bytes()).is_err() {
        // Whatever the cause (EPIPE, a full disk behind a redirect), nothing more can be
        // said there; the exit code still tells the outcome.
        closed.store(true, Ordering::Relaxed);
    }
}

/// `println!` that stops printing when stdout is closed.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::console::out_line(format_args!($($arg)*))
    };
}

/// `eprintln!` that stops printing when stderr is closed.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::console::err_line(format_args!($($arg)*))
    };
}

pub(crate) use errln;
pub(crate) use outln;

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer whose reader has gone away.
    struct Closed(u32);
    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            self.0 += 1;
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_stream_stops_printing_without_panicking() {
        let closed = AtomicBool::new(false);
        let mut w = Closed(0);
        write_line(&mut w, &closed, format_args!("first {}", 1));
        assert!(closed.load(Ordering::Relaxed));
        let tries = w.0;
        write_line(&mut w, &closed, format_args!("second"));
        assert_eq!(w.0, tries, "nothing more is written once closed");

        let open = AtomicBool::new(false);
        let mut buf = Vec::new();
        write_line(&mut buf, &open, format_args!("a {}", "line"));
        assert_eq!(buf, b"a line\n");
        assert!(!open.load(Ordering::Relaxed));
    }
}
