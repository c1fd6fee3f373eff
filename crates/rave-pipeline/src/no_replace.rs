//! Moving a file to a new name without ever replacing what is already there, atomically:
//! `renameat2(RENAME_NOREPLACE)` on Linux, else a hard link and an unlink, else an exclusive
//! create of the name followed by a rename onto it. Each step either takes the name or fails
//! with `AlreadyExists`; there is no check-then-rename window another process could use.
//! `sync_folder_of` makes a move durable.

use std::io;
use std::path::Path;

/// Make the move of a file to `path` durable (its folder's entry on disk) before what it
/// could be redone from goes. Best effort: some file systems refuse to sync a folder
/// (logged).
pub fn sync_folder_of(path: &Path) {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if let Err(e) = std::fs::File::open(dir).and_then(|d| d.sync_all()) {
        tracing::debug!(folder = %dir.display(), "cannot sync the folder: {e}");
    }
}

/// Move `from` to `to`; fails with [`io::ErrorKind::AlreadyExists`] when `to` exists
/// (a file, a directory or a dangling link), leaving both untouched.
pub fn rename_no_replace(from: &Path, to: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    match renameat2_no_replace(from, to) {
        Err(e) if unsupported(&e) => {}
        done => return done,
    }
    match link_then_unlink(from, to) {
        Err(e) if unsupported(&e) => {}
        done => return done,
    }
    create_then_rename(from, to)
}

/// Whether `e` says the file system (or kernel) cannot do this kind of call at all.
fn unsupported(e: &io::Error) -> bool {
    let codes = [
        libc::EINVAL,
        libc::ENOSYS,
        libc::EOPNOTSUPP,
        libc::ENOTSUP,
        libc::EPERM,
    ];
    e.kind() == io::ErrorKind::Unsupported || e.raw_os_error().is_some_and(|c| codes.contains(&c))
}

#[cfg(target_os = "linux")]
fn renameat2_no_replace(from: &Path, to: &Path) -> io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| {
        CString::new(p.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))
    };
    let (from_c, to_c) = (c(from)?, c(to)?);
    // SAFETY: both pointers are NUL-terminated strings owned by `from_c` and `to_c`, which
    // outlive the call; AT_FDCWD resolves relative paths like `std::fs::rename` does; the
    // call does not keep the pointers.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            from_c.as_ptr(),
            libc::AT_FDCWD,
            to_c.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    match rc {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// A hard link fails with `AlreadyExists` if the name is taken; then the old name goes.
fn link_then_unlink(from: &Path, to: &Path) -> io::Result<()> {
    std::fs::hard_link(from, to)?;
    if let Err(e) = std::fs::remove_file(from) {
        // Leave things as they were rather than the file under two names.
        let _ = std::fs::remove_file(to);
        return Err(e);
    }
    Ok(())
}

/// For file systems without hard links: take the name with an exclusive create, then
/// rename onto the placeholder (which only this process made).
fn create_then_rename(from: &Path, to: &Path) -> io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(to)?;
    std::fs::rename(from, to).inspect_err(|_| {
        let _ = std::fs::remove_file(to);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    #[test]
    fn moves_onto_a_free_name_and_refuses_a_taken_one() {
        let d = dir();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        std::fs::write(&a, b"new").unwrap();
        rename_no_replace(&a, &b).unwrap();
        assert!(!a.exists());
        assert_eq!(std::fs::read(&b).unwrap(), b"new");

        std::fs::write(&a, b"second").unwrap();
        let err = rename_no_replace(&a, &b).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&a).unwrap(), b"second");
        assert_eq!(std::fs::read(&b).unwrap(), b"new");
    }

    #[test]
    fn every_fallback_refuses_a_taken_name() {
        let d = dir();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        std::fs::write(&a, b"mine").unwrap();
        std::fs::write(&b, b"theirs").unwrap();
        for f in [link_then_unlink, create_then_rename] {
            let err = f(&a, &b).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
            assert_eq!(std::fs::read(&b).unwrap(), b"theirs");
            assert_eq!(std::fs::read(&a).unwrap(), b"mine");
        }
        let c = d.path().join("c");
        link_then_unlink(&a, &c).unwrap();
        create_then_rename(&c, &a).unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), b"mine");
        assert!(!c.exists());
    }

    #[test]
    fn a_dangling_link_counts_as_taken() {
        let d = dir();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        std::fs::write(&a, b"x").unwrap();
        std::os::unix::fs::symlink(d.path().join("nowhere"), &b).unwrap();
        let err = rename_no_replace(&a, &b).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert!(a.exists());
    }
}
