//! The tag an output carries naming the file it was upscaled from (`RAVE_SOURCE`, the input's
//! file name), so a batch that writes into its own input folder can tell, on a second pass,
//! its earlier outputs from the videos it was given. Matroska stores it; MP4 and MOV keep
//! only the keys they know, which is enough: a batch into the input's folder writes
//! Matroska for every input whose own container it cannot keep, and refuses the others.

use std::path::Path;

/// The container-level metadata key.
pub const SOURCE_TAG: &str = "RAVE_SOURCE";

/// The value written for an output of `input`: its file name.
pub fn source_tag_value(input: &Path) -> String {
    input
        .file_name()
        .unwrap_or(input.as_os_str())
        .to_string_lossy()
        .into_owned()
}

/// The file name `path`'s `RAVE_SOURCE` tag names, when it is a media file that has one.
/// Files FFmpeg cannot open have none.
pub fn upscaled_from(path: &Path) -> Option<String> {
    let (input, _logged) = crate::log_capture::capture_errors(|| ffmpeg_next::format::input(&path));
    input.ok()?.metadata().get(SOURCE_TAG).map(str::to_owned)
}
