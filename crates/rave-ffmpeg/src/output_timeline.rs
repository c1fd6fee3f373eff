//! Where the output's timeline starts on the input's, and the offsets copied streams get so
//! that their timestamps come out as the source's.

use ffmpeg_next::ffi::AV_TIME_BASE_Q;
use ffmpeg_next::format::context::Input;
use ffmpeg_next::{Rational, Rescale};

use crate::codec_choice::Container;
use crate::sys;

/// Where the output's timeline starts on the input's, in microseconds, so that it starts at
/// zero as `ffmpeg` makes it: the earliest start of the video and the copied audio when all
/// start after zero (an MPEG-TS capture starts hours in; kept, an MP4 would open on that
/// much empty edit and Matroska would declare that much duration), or when the video
/// itself starts before zero (an MPEG-TS whose 33-bit clock wraps just after its start:
/// Matroska cannot store the negative times, and an MP4 would hide them behind an edit).
/// Audio starting a little before a video at zero (codec priming) moves nothing. Every
/// stream keeps its offset from the others. Subtitle and data tracks do not count: a
/// mov_text track starts with a filler sample at zero whatever the picture does. A stream
/// whose start FFmpeg's start time gets wrong starts where `corrected` says (stream, time in
/// its time base): a first timestamp damaged and put back, an ASF video's first decode time.
pub(crate) fn timeline_start_us(
    input: &Input,
    (video_index, copied): (usize, &[usize]),
    corrected: &[(usize, i64)],
) -> i64 {
    use ffmpeg_next::media::Type;
    let start_of = |i: usize| {
        let s = input.stream(i)?;
        let start = match corrected.iter().find(|&&(r, _)| r == i) {
            Some(&(_, start)) => start,
            None => Some(s.start_time()).filter(|&t| t != ffmpeg_next::ffi::AV_NOPTS_VALUE)?,
        };
        Some(start.rescale(s.time_base(), AV_TIME_BASE_Q))
    };
    let Some(video) = start_of(video_index) else {
        return 0;
    };
    let earliest = copied
        .iter()
        .copied()
        .filter(|&i| {
            input
                .stream(i)
                .is_some_and(|s| s.parameters().medium() == Type::Audio)
        })
        .filter_map(start_of)
        .fold(video, i64::min);
    match (earliest > 0, video < 0) {
        (true, _) | (_, true) => earliest,
        _ => 0,
    }
}

/// Matroska's demuxer subtracts an Opus track's codec delay from its timestamps, but the
/// muxer does not add it back; add it here so copied Opus keeps its exact timestamps.
pub(crate) fn codec_delay_offset(
    input: &Input,
    index: usize,
    container: Container,
    tb: Rational,
) -> i64 {
    let is_opus = input
        .stream(index)
        .is_some_and(|s| s.parameters().id() == ffmpeg_next::codec::Id::OPUS);
    if container != Container::Matroska || !is_opus {
        return 0;
    }
    sys::opus_pre_skip(input, index).rescale(Rational::new(1, 48_000), tb)
}

/// Where the file's earliest stream starts, in seconds (0 where none says): times in
/// messages about the input are counted from here, as a player and the output count them.
pub(crate) fn earliest_start_s(input: &Input) -> f64 {
    input
        .streams()
        .filter(|s| s.start_time() != ffmpeg_next::ffi::AV_NOPTS_VALUE)
        .map(|s| s.start_time() as f64 * f64::from(s.time_base()))
        .reduce(f64::min)
        .unwrap_or(0.0)
}
