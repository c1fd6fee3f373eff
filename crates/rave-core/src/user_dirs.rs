//! The user's base folders as the XDG specification gives them (`$XDG_DATA_HOME`,
//! `$XDG_CACHE_HOME`, else under the home folder), for RAVE's install folder and its GPU
//! kernel cache alike. A relative value is ignored, as the specification says: it would
//! make the working directory's files RAVE's, and load them.

use std::ffi::OsString;
use std::path::PathBuf;

/// The base folder `xdg` (the variable's value) where it is absolute, else `under_home` in
/// `home` where that is absolute; `None` where neither is.
pub fn base_dir(xdg: Option<OsString>, home: Option<PathBuf>, under_home: &str) -> Option<PathBuf> {
    let absolute = |p: PathBuf| Some(p).filter(|p| p.is_absolute());
    xdg.map(PathBuf::from)
        .and_then(absolute)
        .or_else(|| home.and_then(absolute).map(|h| h.join(under_home)))
}

/// [`base_dir`] from the environment: the variable `var`, else `under_home` in the home
/// folder (`$HOME`, or the user's entry in the password database where it is unset).
pub fn xdg_base(var: &str, under_home: &str) -> Option<PathBuf> {
    base_dir(std::env::var_os(var), std::env::home_dir(), under_home)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relative_value_or_home_is_ignored() {
        let os = |s: &str| Some(OsString::from(s));
        let home = |s: &str| Some(PathBuf::from(s));
        assert_eq!(base_dir(os("/x"), home("/h"), ".cache"), home("/x"));
        assert_eq!(base_dir(os("rel"), home("/h"), ".cache"), home("/h/.cache"));
        assert_eq!(base_dir(None, home("/h"), ".cache"), home("/h/.cache"));
        assert_eq!(base_dir(os(""), home("."), ".cache"), None);
        assert_eq!(base_dir(None, None, ".cache"), None);
    }
}
