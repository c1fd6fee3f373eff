//! Opening an input file with errors a user can act on: missing, unreadable, not media,
//! no video stream, or a codec this FFmpeg cannot decode.

use std::path::Path;

use ffmpeg_next::format::context::Input;
use ffmpeg_next::media::Type;
use rave_core::error::{EngineError, Result};

/// Open `path` for demuxing, checking first that it is a readable file.
pub fn open(path: &Path) -> Result<Input> {
    crate::init();
    let unreadable = |reason: String| EngineError::InputUnreadable {
        path: path.to_path_buf(),
        reason,
    };
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => unreadable("no such file".into()),
        std::io::ErrorKind::PermissionDenied => unreadable("permission denied".into()),
        _ => unreadable(e.to_string()),
    })?;
    if meta.is_dir() {
        return Err(unreadable("is a directory, not a video file".into()));
    }
    std::fs::File::open(path).map_err(|e| unreadable(format!("cannot open: {e}")))?;
    if meta.len() == 0 {
        return Err(EngineError::NotAVideo {
            path: path.to_path_buf(),
            reason: "file is empty".into(),
        });
    }
    ffmpeg_next::format::input(&path).map_err(|e| EngineError::NotAVideo {
        path: path.to_path_buf(),
        reason: format!("not a media file FFmpeg can read ({e})"),
    })
}

/// Index of the main video stream: the best one FFmpeg picks, never cover art.
pub fn video_stream_index(input: &Input, path: &Path) -> Result<usize> {
    let is_picture = |s: &ffmpeg_next::format::stream::Stream| {
        s.disposition()
            .contains(ffmpeg_next::format::stream::Disposition::ATTACHED_PIC)
    };
    let best = input
        .streams()
        .best(Type::Video)
        .filter(|s| !is_picture(s))
        .or_else(|| {
            input
                .streams()
                .find(|s| s.parameters().medium() == Type::Video && !is_picture(s))
        });
    match best {
        Some(s) => Ok(s.index()),
        None => {
            let found: Vec<String> = input
                .streams()
                .map(|s| {
                    format!(
                        "{:?} {}",
                        s.parameters().medium(),
                        s.parameters().id().name()
                    )
                    .to_lowercase()
                })
                .collect();
            Err(EngineError::NotAVideo {
                path: path.to_path_buf(),
                reason: if found.is_empty() {
                    "has no streams".into()
                } else {
                    format!("has no video stream (found: {})", found.join(", "))
                },
            })
        }
    }
}
