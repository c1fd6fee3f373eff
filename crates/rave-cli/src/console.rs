//! Printing on stdout and stderr: a stream the reader closed (`rave probe x | head -1`) means
//! "stop printing to it", never a panic. Every line the CLI prints goes through `outln!` and
//! `errln!`.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
static STDERR_CLOSED: AtomicBool = AtomicBool::new(false);

/// Write one formatted line on stdout, unless stdout is closed.
pub fn out_line(args: std::fmt::Arguments<'_>) {
    write_line(&mut std::io::stdout().lock(), &STDOUT_CLOSED, args);
}

/// Write one formatted line on stderr, unless stderr is closed.
pub fn err_line(args: std::fmt::Arguments<'_>) {
    write_line(&mut std::io::stderr().lock(), &STDERR_CLOSED, args);
}

fn write_line(w: &mut impl Write, closed: &AtomicBool, args: std::fmt::Arguments<'_>) {
    if closed.load(Ordering::Relaxed) {
        return;
    }
    if w.write_fmt(args).and_then(|()| w.write_all(b"\n")).is_err() {
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
