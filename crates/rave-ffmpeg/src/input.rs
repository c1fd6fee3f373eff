//! Opening an input file with errors a user can act on: missing, unreadable, not a regular
//! file (a pipe, stdin, a device), not media, no video stream, or a codec this FFmpeg cannot
//! decode.

use std::path::Path;

use ffmpeg_next::format::context::Input;
use ffmpeg_next::media::Type;
use rave_core::error::{EngineError, Result};

/// What to do with input that can only be read once.
const READ_ONCE_HINT: &str =
    "RAVE reads the input more than once (probe, then decode): save it to a regular file first";

/// Open `path` for demuxing, checking first that it is a readable regular file.
pub fn open(path: &Path) -> Result<Input> {
    crate::init();
    let unreadable = |reason: String| EngineError::InputUnreadable {
        path: path.to_path_buf(),
        reason,
    };
    if path.as_os_str() == "-" {
        return Err(unreadable(format!(
            "reading the video from stdin ('-') is not supported; {READ_ONCE_HINT}"
        )));
    }
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => unreadable(match std::fs::read_link(path) {
            Ok(target) => format!(
                "is a link to {}, which does not exist (moved or removed?)",
                target.display()
            ),
            Err(_) => "no such file".into(),
        }),
        std::io::ErrorKind::PermissionDenied => unreadable("permission denied".into()),
        _ => unreadable(e.to_string()),
    })?;
    if meta.is_dir() {
        return Err(unreadable("is a directory, not a video file".into()));
    }
    // Checked before opening: opening a pipe nobody writes to would wait forever.
    if let Some(what) = rave_core::file_kind::special_file(path, meta.file_type()) {
        return Err(unreadable(format!(
            "is {what}, not a regular file; {READ_ONCE_HINT}"
        )));
    }
    std::fs::File::open(path).map_err(|e| unreadable(format!("cannot open: {e}")))?;
    if meta.len() == 0 {
        return Err(EngineError::NotAVideo {
            path: path.to_path_buf(),
            reason: "file is empty".into(),
        });
    }
    let input = open_file(path, None).map_err(|e| EngineError::NotAVideo {
        path: path.to_path_buf(),
        reason: match structure_by_signature(path) {
            // An MP4 cut before its index (at the end) cannot be opened at all: say why.
            Some(problem) => format!(
                "damaged: {}, and FFmpeg cannot open what is left ({e}); use a complete copy of the file",
                problem.text
            ),
            None => format!("not a media file FFmpeg can read ({e})"),
        },
    })?;
    if !lacks_parameters(&input) {
        return Ok(input);
    }
    // A stream whose first packet comes after FFmpeg's default probe (5 s): a second audio
    // track or subtitles that start later in a broadcast capture. Read further for it, so
    // that it is copied, not dropped as empty.
    let mut deeper = ffmpeg_next::Dictionary::new();
    deeper.set(
        "analyzeduration",
        &(DEEP_PROBE_SECONDS * 1_000_000).to_string(),
    );
    deeper.set("probesize", &DEEP_PROBE_BYTES.to_string());
    Ok(open_file(path, Some(deeper)).unwrap_or(input))
}

/// How far into a file FFmpeg reads for the parameters of a stream whose first packets come
/// late, in seconds of its streams and in bytes (whichever ends first).
pub const DEEP_PROBE_SECONDS: u64 = 120;
/// See [`DEEP_PROBE_SECONDS`].
pub const DEEP_PROBE_BYTES: u64 = 256 << 20;

/// Whether a stream of `input` other than data has no parameters FFmpeg could read.
fn lacks_parameters(input: &Input) -> bool {
    input.streams().any(|s| {
        crate::stream_plan::missing_parameters(crate::sys::stream_params(input, s.index()))
            .is_some()
    })
}

/// `reason` (why FFmpeg finds no usable video in `path`, opened as `format`), led by the
/// damage the structure check finds where it finds any: a file cut inside its header reads
/// as one with no streams, or a video stream without a size, and the cut is what to fix.
pub(crate) fn with_structure_damage(path: &Path, format: &str, reason: String) -> String {
    structure_damage(path, format, &reason).unwrap_or(reason)
}

/// [`with_structure_damage`]'s words where the structure check finds damage, `None` where
/// it finds none (the caller then says what to do about a whole file).
pub(crate) fn structure_damage(path: &Path, format: &str, reason: &str) -> Option<String> {
    let problem = crate::structure_check::check(path, format)?;
    Some(format!(
        "damaged: {}, and FFmpeg finds no usable video in what is left ({reason}){}",
        problem.text,
        if problem.truncated {
            "; use a complete copy of the file"
        } else {
            ""
        }
    ))
}

/// What the structure check finds in `path`, when it starts like a container RAVE checks
/// (for a file FFmpeg cannot even open, whose format is therefore unknown; a file that does
/// not start like one is not a media file, not a damaged one).
fn structure_by_signature(path: &Path) -> Option<crate::structure_check::StructureProblem> {
    let mut head = [0u8; 12];
    let mut file = std::fs::File::open(path).ok()?;
    std::io::Read::read_exact(&mut file, &mut head).ok()?;
    let format = match head {
        [_, _, _, _, b'f', b't', b'y', b'p', ..] => "mov,mp4",
        [0x1A, 0x45, 0xDF, 0xA3, ..] => "matroska,webm",
        [b'R', b'I', b'F', b'F', _, _, _, _, b'A', b'V', b'I', b' '] => "avi",
        [b'F', b'L', b'V', ..] => "flv",
        [0x47, ..] => "mpegts",
        _ => return None,
    };
    crate::structure_check::check(path, format)
}

/// Whether `stream` is cover art (an attached picture): a still image, not a video.
pub fn is_cover_art(stream: &ffmpeg_next::format::stream::Stream) -> bool {
    stream
        .disposition()
        .contains(ffmpeg_next::format::stream::Disposition::ATTACHED_PIC)
}

/// Index of the main video stream: the best one FFmpeg picks, never cover art.
pub fn video_stream_index(input: &Input, path: &Path) -> Result<usize> {
    let best = input
        .streams()
        .best(Type::Video)
        .filter(|s| !is_cover_art(s))
        .or_else(|| {
            input
                .streams()
                .find(|s| s.parameters().medium() == Type::Video && !is_cover_art(s))
        });
    match best {
        Some(s) => Ok(s.index()),
        None => {
            let found: Vec<String> = input
                .streams()
                .map(|s| {
                    let kind = match is_cover_art(&s) {
                        true => "cover art".to_string(),
                        false => format!("{:?}", s.parameters().medium()).to_lowercase(),
                    };
                    format!("{kind} {}", s.parameters().id().name())
                })
                .collect();
            let cover_art = input.streams().any(|s| is_cover_art(&s));
            let reason = match (found.is_empty(), cover_art) {
                (true, _) => "has no streams".into(),
                (false, true) => format!(
                    "has no video stream, only cover art (a still picture attached to the sound; found: {})",
                    found.join(", ")
                ),
                (false, false) => format!("has no video stream (found: {})", found.join(", ")),
            };
            // A stream FFmpeg could give neither a kind nor a codec is what a damaged
            // stream header reads as (an AVI whose `vids` tag lost a bit, say).
            let unknown = input.streams().any(|s| {
                matches!(s.parameters().medium(), Type::Data | Type::Unknown)
                    && s.parameters().id() == ffmpeg_next::codec::Id::None
            });
            let reason = match unknown {
                true => format!(
                    "{reason}; a stream of no known kind or codec is what a damaged stream header reads as: if this file should hold video, its header is damaged (use a complete copy)"
                ),
                false => reason,
            };
            Err(EngineError::NotAVideo {
                path: path.to_path_buf(),
                reason: with_structure_damage(path, input.format().name(), reason),
            })
        }
    }
}

/// Open the file at `path` with FFmpeg's demuxers (with `options` where given), as the file
/// it names: every place RAVE opens a file goes through here (see [`as_local_file`]).
pub(crate) fn open_file(
    path: &Path,
    options: Option<ffmpeg_next::Dictionary>,
) -> std::result::Result<Input, ffmpeg_next::Error> {
    let local = as_local_file(path);
    match options {
        Some(options) => ffmpeg_next::format::input_with_dictionary(&local, options),
        None => ffmpeg_next::format::input(&local),
    }
}

/// `path` as FFmpeg must be given it to read that file: a relative name whose first part
/// reads as a URL scheme (`2024-01-01T10:30:00.mp4`, `file:x.mp4`, `http:y.mkv`) would be
/// opened as that protocol's URL (another file, the network, stdin), so it gets `./`.
fn as_local_file(path: &Path) -> std::path::PathBuf {
    let text = path.to_string_lossy();
    let first = text.split('/').next().unwrap_or("");
    let scheme_like = first.split_once(':').is_some_and(|(scheme, _)| {
        !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    match path.is_relative() && scheme_like {
        true => Path::new(".").join(path),
        false => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_that_reads_as_a_url_is_made_a_local_file() {
        for (given, opened) in [
            ("2024-01-01T10:30:00.mp4", "./2024-01-01T10:30:00.mp4"),
            ("file:x.mp4", "./file:x.mp4"),
            ("pipe:0.mp4", "./pipe:0.mp4"),
            ("plain.mp4", "plain.mp4"),
            ("dir/a:b.mp4", "dir/a:b.mp4"),
            ("/abs/http:x.mp4", "/abs/http:x.mp4"),
            (":odd.mp4", ":odd.mp4"),
            ("my clip: take 2.mp4", "my clip: take 2.mp4"),
        ] {
            assert_eq!(
                as_local_file(Path::new(given)),
                Path::new(opened),
                "{given}"
            );
        }
    }
}
