//! The tag an output carries naming the file it was upscaled from (`RAVE_SOURCE`: a digest
//! of the input's file name, not the name itself, so a file the user shares does not tell
//! what the original was called), so a batch that writes into its own input folder can tell,
//! on a second pass, its earlier outputs from the videos it was given. Matroska stores it;
//! MP4 and MOV keep only the keys they know, which is enough: a batch into the input's
//! folder writes Matroska for every input whose own container it cannot keep, and refuses
//! the others.

use std::path::Path;

use sha2::{Digest, Sha256};

/// The container-level metadata key.
pub const SOURCE_TAG: &str = "RAVE_SOURCE";

/// The value written for an output of `input`: `sha256:` and the first 16 hex digits of
/// the SHA-256 of its file name.
pub fn source_tag_value(input: &Path) -> String {
    let name = input.file_name().unwrap_or(input.as_os_str());
    let digest = Sha256::digest(name.as_encoded_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The `RAVE_SOURCE` tag of `path`, when it is a media file that has one. Files FFmpeg
/// cannot open, or whose name is not UTF-8, have none.
pub fn upscaled_from(path: &Path) -> Option<String> {
    // FFmpeg takes UTF-8 names only (a file named otherwise is refused where it is run).
    path.to_str()?;
    let (input, _logged) =
        crate::log_capture::capture_errors(|| crate::input::open_file(path, None));
    input.ok()?.metadata().get(SOURCE_TAG).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tag_names_the_file_by_digest_whatever_its_folder() {
        let a = source_tag_value(Path::new("/videos/clip.avi"));
        assert_eq!(a, source_tag_value(Path::new("clip.avi")));
        assert_ne!(a, source_tag_value(Path::new("/videos/clip2.avi")));
        assert!(a.starts_with("sha256:") && a.len() == 7 + 16, "{a}");
        assert!(!a.contains("clip"));
    }
}
