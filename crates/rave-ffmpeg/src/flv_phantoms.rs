//! Streams FFmpeg makes of damaged FLV tags. An FLV holds one audio and one video stream,
//! each tag saying its codec; FFmpeg's demuxer opens a new stream for a tag whose codec
//! flags differ from those of the stream of its kind, so one damaged tag header shows as a
//! second audio (or video) stream of another codec (speex, say) holding that tag's bytes.
//! Such a stream is damage, not content: it is not copied, and its packets count as
//! damaged (the real stream lost them).

use ffmpeg_next::format::context::Input;
use ffmpeg_next::media::Type;

/// Whether `format` (FFmpeg's short names, e.g. "flv") is FLV.
fn is_flv(format: &str) -> bool {
    format.split(',').any(|f| f == "flv" || f == "live_flv")
}

/// The streams of `input` (demuxed as `format`) made of damaged FLV tags: in an FLV, every
/// video stream but the main one (`video`) and every audio stream after the first.
pub fn phantom_streams(input: &Input, format: &str, video: usize) -> Vec<usize> {
    if !is_flv(format) {
        return Vec::new();
    }
    let mut audio_seen = false;
    input
        .streams()
        .filter(|s| match s.parameters().medium() {
            Type::Video => s.index() != video,
            Type::Audio => std::mem::replace(&mut audio_seen, true),
            _ => false,
        })
        .map(|s| s.index())
        .collect()
}

/// Why a phantom stream is left out, after its description ("stream #2 (audio speex)").
pub const LEFT_OUT: &str = "made by FFmpeg of a damaged FLV tag (an FLV holds one audio and one video stream; the tag's codec flags disagree with the file's): left out, its packets counted as damage";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flv_is_told_by_the_demuxers_names() {
        assert!(is_flv("flv"));
        assert!(is_flv("live_flv"));
        assert!(!is_flv("matroska,webm"));
        assert!(!is_flv("mov,mp4,m4a,3gp,3g2,mj2"));
    }
}
