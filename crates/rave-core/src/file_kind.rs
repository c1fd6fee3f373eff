//! What a path names when it is neither a regular file nor a folder, in words for the one
//! line that refuses it: an input or a model must be a file RAVE can read more than once,
//! and a pipe would wait for a writer, a device read on.

use std::os::unix::fs::FileTypeExt;
use std::path::Path;

/// What `path` is when it is not a regular file or folder: "a pipe (stdin)", "a device", ...
pub fn special_file(path: &Path, kind: std::fs::FileType) -> Option<&'static str> {
    let stdin = ["/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"]
        .iter()
        .any(|p| path == Path::new(p));
    if kind.is_fifo() {
        Some(if stdin {
            "stdin, a pipe"
        } else {
            "a pipe (FIFO)"
        })
    } else if kind.is_char_device() || kind.is_block_device() {
        Some(if stdin {
            "stdin, a terminal or device"
        } else {
            "a device"
        })
    } else if kind.is_socket() {
        Some(if stdin { "stdin, a socket" } else { "a socket" })
    } else {
        None
    }
}
