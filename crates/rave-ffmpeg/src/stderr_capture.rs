//! The process's stderr, captured while an encoder library that prints there itself
//! (x265, SVT-AV1) opens: kept off the terminal, and available for the error message.

use std::ffi::c_int;
use std::io::{Read, Seek, SeekFrom};
use std::os::fd::AsRawFd;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

unsafe extern "C" {
    fn dup(fd: c_int) -> c_int;
    fn dup2(fd: c_int, fd2: c_int) -> c_int;
    fn close(fd: c_int) -> c_int;
}

const STDERR: c_int = 2;

/// A file with no name (memfd_create): nothing is left behind, whatever ends the process.
fn anonymous_file() -> Option<std::fs::File> {
    unsafe extern "C" {
        fn memfd_create(name: *const std::ffi::c_char, flags: std::ffi::c_uint) -> c_int;
    }
    const MFD_CLOEXEC: std::ffi::c_uint = 1;
    // SAFETY: the name is a NUL-terminated literal; the call has no memory effects on us.
    let fd = unsafe { memfd_create(c"rave-stderr".as_ptr(), MFD_CLOEXEC) };
    // SAFETY: a non-negative result is a new descriptor that nothing else owns.
    (fd >= 0).then(|| unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) })
}

/// Run `f` with file descriptor 2 pointing into a file with no name; return its
/// result and what was written there. If the redirection cannot be set up, `f` runs with
/// stderr untouched and the text is empty.
///
/// Descriptor 2 is process-wide: captures are serialised, and anything another thread
/// prints meanwhile is captured too, so call this only where no other thread is expected to
/// print (the writer opens its encoder before the stage threads start).
pub fn capture_stderr<R>(f: impl FnOnce() -> R) -> (R, String) {
    static SEQ: AtomicU32 = AtomicU32::new(0);
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mut file) = anonymous_file().or_else(|| {
        // Where memfd_create is missing (old kernels): a temporary file, unlinked at once.
        let path = std::env::temp_dir().join(format!(
            ".rave-stderr-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path);
        let _ = std::fs::remove_file(&path);
        file.ok()
    }) else {
        return (f(), String::new());
    };
    // SAFETY: dup on descriptor 2 has no memory effects; a negative result is handled.
    let saved = unsafe { dup(STDERR) };
    if saved < 0 {
        return (f(), String::new());
    }
    // SAFETY: `file` is an open descriptor for the whole call; dup2 makes descriptor 2 a copy
    // of it (Rust's stderr is unbuffered, so nothing written before is lost or reordered).
    if unsafe { dup2(file.as_raw_fd(), STDERR) } < 0 {
        // SAFETY: `saved` is the descriptor dup returned above, owned here.
        unsafe { close(saved) };
        return (f(), String::new());
    }
    let result = f();
    // SAFETY: `saved` is the original stderr duplicated above: restore it, then close the
    // duplicate, which this function owns.
    unsafe {
        dup2(saved, STDERR);
        close(saved);
    }
    let mut text = String::new();
    if file.seek(SeekFrom::Start(0)).is_ok() {
        let _ = file.read_to_string(&mut text);
    }
    (result, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_c_code_prints_on_stderr_is_captured_and_stderr_restored() {
        unsafe extern "C" {
            fn write(fd: c_int, buf: *const u8, n: usize) -> isize;
        }
        let (r, text) = capture_stderr(|| {
            let msg = b"x265 [error]: Picture width must be an integer multiple\n";
            // SAFETY: writes `msg.len()` bytes of a live buffer to descriptor 2.
            unsafe { write(STDERR, msg.as_ptr(), msg.len()) };
            7
        });
        assert_eq!(r, 7);
        assert_eq!(
            text,
            "x265 [error]: Picture width must be an integer multiple\n"
        );
        let (_, again) = capture_stderr(|| ());
        assert_eq!(again, "");
    }
}
