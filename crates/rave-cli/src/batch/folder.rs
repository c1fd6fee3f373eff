//! The videos of an input folder: the files directly in it with a video extension, sorted by
//! name; hidden files and RAVE's own temporary files are skipped, its partial outputs left
//! out (and listed).

use std::path::{Path, PathBuf};

use rave_core::error::{EngineError, Result};
use rave_ffmpeg::Container;
use rave_ffmpeg::source_tag::upscaled_from;

use super::plan::{LeftOut, LeftOutReason};

/// The extensions (lower case) a folder's file must have to be taken as a video.
pub const VIDEO_EXTENSIONS: &[&str] = &[
    "264", "265", "3g2", "3gp", "asf", "avi", "dv", "flv", "h264", "h265", "hevc", "ivf", "m2ts",
    "m4v", "mkv", "mov", "mp4", "mpeg", "mpg", "mts", "mxf", "ogv", "ts", "vob", "webm", "wmv",
    "y4m",
];

/// Why a file whose name is not UTF-8 is refused.
pub const NOT_UTF8: &str = "its name is not valid UTF-8, which RAVE cannot hand to FFmpeg: rename the file (e.g. with convmv) and run again";

/// The error for `input` when its name is not UTF-8 (exit 3): RAVE cannot open it.
pub fn not_utf8_input(input: &Path) -> Option<EngineError> {
    input
        .to_str()
        .is_none()
        .then(|| EngineError::InputUnreadable {
            path: input.to_path_buf(),
            reason: NOT_UTF8.into(),
        })
}

/// Whether `path`'s extension is one of [`VIDEO_EXTENSIONS`] (in any case).
pub fn has_video_extension(path: &Path) -> bool {
    path.extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .is_some_and(|e| VIDEO_EXTENSIONS.contains(&e.as_str()))
}

/// Whether `name` is what a RAVE run leaves beside its output: `NAME.partial.EXT` or
/// `NAME.partial-N.EXT` after Ctrl+C (the temporary `.NAME.rave.tmp` is hidden).
fn is_rave_partial(path: &Path) -> bool {
    let Some(stem) = path.file_stem().map(|s| s.to_string_lossy()) else {
        return false;
    };
    // RAVE writes .mp4, .m4v, .mov and .mkv only: a `take.partial-2.avi` is the user's.
    if Container::of_extension(path).is_none() {
        return false;
    }
    match stem.rsplit_once(".partial") {
        Some((name, "")) => !name.is_empty(),
        Some((name, n)) => {
            !name.is_empty()
                && n.strip_prefix('-')
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        }
        None => false,
    }
}

/// Whether a file named like RAVE's partial output is left out (and why) or taken: RAVE's
/// Matroska outputs always carry the `RAVE_SOURCE` tag, so one without it is the user's; its
/// MP4 and MOV outputs carry it only where the source held QuickTime keys, so one of those
/// without it cannot be told and is left out, listed, for the user to give with `-i`.
fn partial_left_out(path: &Path) -> Option<LeftOut> {
    let reason = match (upscaled_from(path), Container::of_extension(path)) {
        (Some(_), _) => LeftOutReason::RavePartial,
        (None, Some(Container::Matroska)) => return None,
        (None, _) => LeftOutReason::PartialName,
    };
    Some(LeftOut {
        file: path.to_path_buf(),
        reason,
    })
}

/// The videos directly in `dir`, sorted by file name, and the files in it left out as
/// RAVE's partial outputs; an error (exit 3) when it holds no video.
pub fn videos_in(dir: &Path) -> Result<(Vec<PathBuf>, Vec<LeftOut>)> {
    let unreadable = |reason: String| EngineError::InputUnreadable {
        path: dir.to_path_buf(),
        reason,
    };
    let entries =
        std::fs::read_dir(dir).map_err(|e| unreadable(format!("cannot list the folder: {e}")))?;
    let mut videos = Vec::new();
    let mut partials = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| unreadable(format!("cannot list the folder: {e}")))?;
        let path = entry.path();
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        // Subfolders are not entered; a link to a folder is a folder.
        if hidden || path.is_dir() || !has_video_extension(&path) {
            continue;
        }
        if is_rave_partial(&path)
            && let Some(left_out) = partial_left_out(&path)
        {
            partials.push(left_out);
            continue;
        }
        // A name that is not UTF-8 is kept: the batch fails that input alone (see
        // `not_utf8_input`) and upscales the others.
        videos.push(path);
    }
    partials.sort_by(|a, b| a.file.file_name().cmp(&b.file.file_name()));
    if videos.is_empty() {
        let partial_note = match partials
            .iter()
            .find(|p| p.reason == LeftOutReason::PartialName)
        {
            Some(named) => format!(
                "; it holds only RAVE's partial outputs or files named like them, such as {}: to upscale one of yours, give it with -i",
                crate::console::shown(&named.file)
            ),
            None if !partials.is_empty() => "; it holds only RAVE's partial outputs".into(),
            None => String::new(),
        };
        return Err(unreadable(format!(
            "no video files in this folder (taken: the files directly in it with a video extension such as .mp4 .mkv .mov .avi .webm .ts; hidden files, subfolders and RAVE's partial outputs are skipped){partial_note}; point -i at the folder that holds the videos"
        )));
    }
    videos.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    Ok((videos, partials))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_files_are_recognised_by_their_stem() {
        for name in [
            "clip.partial.mp4",
            "clip.partial-2.mkv",
            "a.b.partial-10.mov",
        ] {
            assert!(is_rave_partial(Path::new(name)), "{name}");
        }
        for name in [
            "clip.mp4",
            "clip.partial-.mp4",
            "take.partial-2.avi",
            "clip.partial.ts",
            "clip.partial-x.mp4",
            ".partial.mp4",
            "partial.mp4",
            "clip.partially.mp4",
        ] {
            assert!(!is_rave_partial(Path::new(name)), "{name}");
        }
    }

    #[test]
    fn a_folder_lists_its_videos_by_name_and_skips_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for name in [
            "b.MKV",
            "a.mp4",
            "c.avi",
            "notes.txt",
            "noext",
            ".hidden.mp4",
            ".a.mp4.rave.tmp",
            "a.partial.mp4",
            "a.partial-2.mp4",
        ] {
            std::fs::write(d.join(name), b"x").unwrap();
        }
        std::fs::create_dir(d.join("sub.mp4")).unwrap();
        std::fs::write(d.join("sub.mp4/inner.mp4"), b"x").unwrap();
        let (videos, partials) = videos_in(d).unwrap();
        let names: Vec<String> = videos
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a.mp4", "b.MKV", "c.avi"]);
        // Not media, so no tag: named like RAVE's MP4 partials, which cannot be told.
        let left: Vec<(String, LeftOutReason)> = partials
            .iter()
            .map(|l| {
                (
                    l.file.file_name().unwrap().to_string_lossy().into(),
                    l.reason.clone(),
                )
            })
            .collect();
        assert_eq!(
            left,
            [
                ("a.partial-2.mp4".to_string(), LeftOutReason::PartialName),
                ("a.partial.mp4".to_string(), LeftOutReason::PartialName)
            ]
        );
    }

    #[test]
    fn a_folder_without_videos_is_an_input_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("readme.txt"), b"x").unwrap();
        let err = videos_in(dir.path()).unwrap_err();
        assert_eq!(err.family().exit_code(), 3);
        assert!(err.to_string().contains("no video files"), "{err}");
        let err = videos_in(&dir.path().join("missing")).unwrap_err();
        assert_eq!(err.family().exit_code(), 3);
    }
}
