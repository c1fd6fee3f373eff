//! Which streams the output container can hold, asked of FFmpeg's muxers before the encoder
//! is opened or anything is written; a refusal names the containers that could hold it.

use std::ffi::CStr;
use std::path::Path;

use ffmpeg_next::codec::Id;
use ffmpeg_next::format::context::Input;
use ffmpeg_next::media::Type;
use rave_core::error::{EngineError, Result};

use crate::codec_choice::{Container, VideoCodec};
use crate::cover_attachment;
use crate::flv_phantoms;
use crate::frame_convert::working_format;
use crate::input::is_cover_art;
use crate::lost_dispositions;
use crate::sys::{self, DryRunStream};

/// The input streams the output copies, and those it leaves out with the reason.
#[derive(Debug, Default)]
pub struct StreamPlan {
    /// Input stream indices copied, in input order (the main video excluded).
    pub copied: Vec<usize>,
    /// Streams left out, with the reason.
    pub skipped: Vec<String>,
    /// What the user should know of the copied streams: another video stream (not cover
    /// art) is copied at its own size, not upscaled.
    pub warnings: Vec<String>,
}

/// The upscaled video as the muxer will see it.
#[derive(Debug, Clone, Copy)]
pub struct PlannedVideo {
    /// Output codec.
    pub codec: VideoCodec,
    /// Output width.
    pub width: u32,
    /// Output height.
    pub height: u32,
    /// Bits per sample.
    pub bit_depth: u8,
    /// Time base of the frames.
    pub time_base: ffmpeg_next::Rational,
}

fn muxer_name(container: Container) -> &'static CStr {
    match container {
        Container::Mp4 => c"mp4",
        Container::Mov => c"mov",
        Container::Matroska => c"matroska",
    }
}

fn codec_id(codec: VideoCodec) -> Id {
    match codec {
        VideoCodec::H264 => Id::H264,
        VideoCodec::Hevc => Id::HEVC,
        VideoCodec::Av1 => Id::AV1,
    }
}

/// Whether `container`'s muxer takes `stream`: it lists the codec (attachments are not
/// codecs: Matroska stores them as attachments, the others cannot) and sets the stream up
/// without error; Matroska also takes audio with a WAVE format tag (an `A_MS/ACM` track:
/// the ADPCM of older cameras' AVIs). A muxer can set up codecs it does not list (Matroska
/// takes PNG as a Video-for-Windows track, losing cover-art semantics); those are refused. Cover art goes
/// into Matroska as an attachment (`cover_attachment`), where its picture format has a
/// MIME type; it is refused in QuickTime: FFmpeg 5.1's mov muxer accepts it and writes it
/// only in MP4 mode.
fn holds(container: Container, stream: DryRunStream<'_>) -> bool {
    let muxer = muxer_name(container);
    let listed = match stream {
        DryRunStream::Copied(input, index) => {
            let params = sys::stream_params(input, index);
            let cover_art = input.stream(index).is_some_and(|s| is_cover_art(&s));
            match (cover_art, container) {
                (true, Container::Mov) => return false,
                (true, Container::Matroska) => {
                    let codec = Id::from(params.codec_id);
                    return cover_attachment::attachable(codec).is_some();
                }
                // MP4's `covr` box holds JPEG, PNG and BMP pictures (the muxer writes them
                // whatever its codec list says).
                (true, Container::Mp4) => {
                    let codec = Id::from(params.codec_id);
                    return matches!(codec, Id::MJPEG | Id::PNG | Id::BMP);
                }
                _ => {}
            }
            use ffmpeg_next::ffi::AVMediaType::{AVMEDIA_TYPE_ATTACHMENT, AVMEDIA_TYPE_AUDIO};
            let acm = container == Container::Matroska
                && params.codec_type == AVMEDIA_TYPE_AUDIO
                && sys::has_wave_tag(params.codec_id);
            params.codec_type == AVMEDIA_TYPE_ATTACHMENT
                || acm
                || sys::muxer_lists_codec(muxer, params.codec_id)
        }
        DryRunStream::Planned(params, _) => sys::muxer_lists_codec(muxer, params.id().into()),
    };
    listed && sys::muxer_dry_run(muxer, stream).is_ok()
}

/// The containers RAVE writes, other than `container`, whose muxer takes `stream`.
pub fn others_holding(container: Container, stream: DryRunStream<'_>) -> Vec<Container> {
    Container::ALL
        .into_iter()
        .filter(|c| *c != container && holds(*c, stream))
        .collect()
}

/// ".mp4", ".mp4 or .mkv", ".mp4, .mov or .mkv".
fn extensions(containers: &[Container]) -> String {
    let names: Vec<&str> = containers.iter().map(|c| c.extension()).collect();
    match names.split_last() {
        None => String::new(),
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// Check that `container` can hold the upscaled video, before the encoder is opened.
pub fn check_video(container: Container, video: PlannedVideo, shown_as: &Path) -> Result<()> {
    let params = sys::planned_video_params(
        codec_id(video.codec).into(),
        video.width,
        video.height,
        working_format(video.bit_depth).into(),
    );
    let stream = DryRunStream::Planned(&params, video.time_base.into());
    if holds(container, stream) {
        return Ok(());
    }
    let others = others_holding(container, stream);
    let advice = if others.is_empty() {
        "choose another --codec".to_string()
    } else {
        format!("write to {} instead", extensions(&others))
    };
    Err(EngineError::StreamUnstorable(format!(
        "{}: {} video cannot be stored in {} by this FFmpeg; {advice}",
        shown_as.display(),
        video.codec.to_string().to_uppercase(),
        container.label(),
    )))
}

/// What a QuickTime/MP4 data track that is not copied becomes in the output, where it is
/// written again from what FFmpeg read of it: the timecode track (its timecode goes with
/// the video stream's tags) and the chapter track (the chapters go in the output's own
/// form).
fn recreated_track(input: &Input, index: usize) -> Option<&'static str> {
    let params = sys::stream_params(input, index);
    if params.codec_tag == u32::from_le_bytes(*b"tmcd") {
        return Some("the timecode track; its timecode is kept with the video stream");
    }
    // The MP4 demuxer sets aside the chapter track it has read the chapters from.
    let set_aside = input
        .stream(index)
        .is_some_and(|s| s.discard() == ffmpeg_next::codec::discard::Discard::All);
    (set_aside && input.chapters().count() > 0)
        .then_some("the chapter track; the chapters are written in the output's own form")
}

/// Decide, for every input stream but the main video, whether `container` copies it:
/// data streams and the streams FFmpeg made of damaged FLV tags are left out; any other
/// stream the muxer refuses fails the run here, before any work, with advice.
pub fn plan_streams(
    input: &Input,
    video_index: usize,
    container: Container,
    shown_as: &Path,
) -> Result<StreamPlan> {
    let mut plan = StreamPlan::default();
    let phantoms = flv_phantoms::phantom_streams(input, input.format().name(), video_index);
    for ist in input.streams() {
        let index = ist.index();
        if index == video_index {
            continue;
        }
        let kind = ist.parameters().medium();
        let cover_art = is_cover_art(&ist);
        let describe = describe(index, kind, ist.parameters().id(), cover_art);
        if phantoms.contains(&index) {
            plan.skipped
                .push(format!("{describe}: {}", flv_phantoms::LEFT_OUT));
            continue;
        }
        if matches!(kind, Type::Data | Type::Unknown) {
            match recreated_track(input, index) {
                Some(recreated) => plan.skipped.push(format!("{describe}: {recreated}")),
                None => {
                    // Telemetry (a GoPro's gpmd), KLV, SCTE-35: lost, so said as a warning,
                    // not only in the summary.
                    let tag = sys::stream_params(input, index).codec_tag.to_le_bytes();
                    let tag = match tag.iter().all(u8::is_ascii_alphanumeric) {
                        true => format!(" '{}'", String::from_utf8_lossy(&tag)),
                        false => String::new(),
                    };
                    let why = "data streams are not copied";
                    plan.skipped.push(format!("{describe}: {why}"));
                    // The command keeps every stream of the output in its own container;
                    // Matroska holds no data stream at all.
                    let keep = match container {
                        Container::Matroska => format!(
                            "Matroska holds no data stream: to keep it, write .mp4 or .mov, then mux it back in from the input (ffmpeg -i OUTPUT -i INPUT -map 0 -map 1:{index} -c copy KEPT.mp4)"
                        ),
                        _ => format!(
                            "to keep it, mux it back in from the input (ffmpeg -i OUTPUT -i INPUT -map 0 -map 1:{index} -c copy KEPT{})",
                            container.extension()
                        ),
                    };
                    plan.warnings.push(format!(
                        "{describe}{tag} is left out of the output: RAVE copies audio, subtitles and attachments, not data streams (telemetry, KLV, SCTE-35); {keep}"
                    ));
                }
            }
            continue;
        }
        if let Some(missing) = missing_parameters(sys::stream_params(input, index)) {
            plan.skipped.push(format!(
                "{describe}: FFmpeg could not read its {missing} in the first {} s or {} MB of the file (where it has none, the stream holds no data)",
                crate::input::DEEP_PROBE_SECONDS,
                crate::input::DEEP_PROBE_BYTES >> 20
            ));
            continue;
        }
        let stream = DryRunStream::Copied(input, index);
        if !holds(container, stream) {
            return Err(EngineError::StreamUnstorable(format!(
                "{}: {describe} cannot be stored in {} by this FFmpeg; {}",
                shown_as.display(),
                container.label(),
                refusal_advice(container, input, video_index, index)
            )));
        }
        if kind == Type::Video && !cover_art {
            let p = sys::stream_params(input, index);
            plan.warnings.push(format!(
                "{describe}, {}x{}, is copied as it is, not upscaled: RAVE upscales one video stream, #{video_index}; remux the other into a file of its own to upscale it",
                p.width, p.height
            ));
        }
        let disposition = input.stream(index).map_or(0, |s| s.disposition().bits());
        if let Some(w) = lost_dispositions::warning(container, &describe, disposition) {
            plan.warnings.push(w);
        }
        plan.copied.push(index);
    }
    Ok(plan)
}

/// What a copied stream lacks for any muxer to take it (a stream declared in the container
/// but with no data to learn its parameters from), if anything.
pub(crate) fn missing_parameters(p: &ffmpeg_next::ffi::AVCodecParameters) -> Option<&'static str> {
    use ffmpeg_next::ffi::AVMediaType;
    match p.codec_type {
        AVMediaType::AVMEDIA_TYPE_AUDIO if p.sample_rate <= 0 || p.ch_layout.nb_channels <= 0 => {
            Some("sample rate and channels")
        }
        AVMediaType::AVMEDIA_TYPE_VIDEO if p.width <= 0 || p.height <= 0 => Some("frame size"),
        _ => None,
    }
}

/// "stream #2 (subtitle subrip)".
fn describe(index: usize, kind: Type, codec: Id, cover_art: bool) -> String {
    match cover_art {
        true => format!("stream #{index} (cover art, {})", codec.name()),
        false => format!("stream #{index} ({:?} {})", kind, codec.name()),
    }
    .to_lowercase()
}

/// The first stream of `input` that would be copied (not the main video, not one left out)
/// and `container` cannot hold, if any.
fn first_refused(input: &Input, video_index: usize, container: Container) -> Option<usize> {
    let phantoms = flv_phantoms::phantom_streams(input, input.format().name(), video_index);
    input
        .streams()
        .filter(|s| s.index() != video_index && !phantoms.contains(&s.index()))
        .filter(|s| !matches!(s.parameters().medium(), Type::Data | Type::Unknown))
        .filter(|s| missing_parameters(sys::stream_params(input, s.index())).is_none())
        .map(|s| s.index())
        .find(|&i| !holds(container, DryRunStream::Copied(input, i)))
}

/// What to do about stream `index` of `input`, which `container` refuses: the other
/// containers that hold every stream; where those that hold this one refuse another, or
/// none holds it, drop or convert it.
fn refusal_advice(container: Container, input: &Input, video_index: usize, index: usize) -> String {
    let stream = DryRunStream::Copied(input, index);
    let others = others_holding(container, stream);
    let whole: Vec<Container> = others
        .iter()
        .copied()
        .filter(|c| first_refused(input, video_index, *c).is_none())
        .collect();
    if !whole.is_empty() {
        return format!("write to {} instead", extensions(&whole));
    }
    let drop =
        format!("drop that stream first (ffmpeg -i INPUT -map 0 -map -0:{index} -c copy OUTPUT)");
    if let Some(&other) = others.first() {
        let blocked = first_refused(input, video_index, other).expect("no container holds all");
        return format!(
            "{} could hold it but not stream #{blocked}, so no container RAVE writes holds every stream of this file: {drop}, or drop or convert stream #{blocked}",
            extensions(&others)
        );
    }
    let kind = input
        .stream(index)
        .map_or(Type::Unknown, |s| s.parameters().medium());
    let convert = match (kind, container) {
        (Type::Subtitle, Container::Matroska) => ", or convert it (-c:s srt)",
        (Type::Subtitle, _) => ", or convert it (-c:s mov_text)",
        (Type::Audio, _) => ", or convert it (-c:a aac)",
        _ => "",
    };
    format!("no container RAVE writes (.mp4, .mov, .mkv) can hold it: {drop}{convert}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planned(codec: VideoCodec) -> PlannedVideo {
        PlannedVideo {
            codec,
            width: 128,
            height: 96,
            bit_depth: 8,
            time_base: ffmpeg_next::Rational::new(1, 25),
        }
    }

    #[test]
    fn av1_is_refused_in_quicktime_with_the_containers_that_hold_it() {
        crate::init();
        let e = check_video(
            Container::Mov,
            planned(VideoCodec::Av1),
            Path::new("out.mov"),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "out.mov: AV1 video cannot be stored in QuickTime (.mov) by this FFmpeg; write to .mp4 or .mkv instead"
        );
        for c in Container::ALL {
            for codec in VideoCodec::ALL {
                let ok = check_video(c, planned(codec), Path::new("x")).is_ok();
                assert_eq!(
                    ok,
                    !(c == Container::Mov && codec == VideoCodec::Av1),
                    "{c:?} {codec}"
                );
            }
        }
    }

    #[test]
    fn extension_lists_read_naturally() {
        assert_eq!(extensions(&[Container::Matroska]), ".mkv");
        assert_eq!(
            extensions(&[Container::Mp4, Container::Mov]),
            ".mp4 or .mov"
        );
        assert_eq!(extensions(&Container::ALL), ".mp4, .mov or .mkv");
    }
}
