//! `probe`: what a media file holds — container, duration, every stream, and the main
//! video stream's size, rate, colour description, bit depth and rotation.

use std::path::{Path, PathBuf};

use ffmpeg_next::Rational;
use ffmpeg_next::format::Pixel;
use ffmpeg_next::media::Type;
use rave_core::color::ColorInfo;
use rave_core::error::{EngineError, Result};
use serde::Serialize;

use crate::{color, declared, input, sys};

/// A media file's description.
#[derive(Debug, Clone, Serialize)]
pub struct MediaInfo {
    /// The file probed.
    pub path: PathBuf,
    /// Container format name(s), as FFmpeg names them.
    pub container: String,
    /// Duration in seconds, when known.
    pub duration_s: Option<f64>,
    /// Overall bit rate in bits per second, when known.
    pub bit_rate: Option<i64>,
    /// Number of chapters.
    pub chapters: usize,
    /// Every stream in the file.
    pub streams: Vec<StreamInfo>,
    /// The main video stream.
    pub video: VideoInfo,
}

/// One stream of the file.
#[derive(Debug, Clone, Serialize)]
pub struct StreamInfo {
    /// Index in the container.
    pub index: usize,
    /// video, audio, subtitle, attachment or data.
    pub kind: String,
    /// Codec name.
    pub codec: String,
    /// Language tag, when set.
    pub language: Option<String>,
    /// Whether this stream is cover art rather than video.
    pub attached_picture: bool,
}

/// The main video stream.
#[derive(Debug, Clone, Serialize)]
pub struct VideoInfo {
    /// Index in the container.
    pub stream_index: usize,
    /// Codec name.
    pub codec: String,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Pixel format name.
    pub pixel_format: String,
    /// Bits per sample.
    pub bit_depth: u8,
    /// Average frame rate in frames per second.
    pub frame_rate: f64,
    /// Average frame rate as a fraction "num/den".
    pub avg_frame_rate: String,
    /// Base ("real") frame rate as a fraction; differs from the average for variable rate.
    pub base_frame_rate: String,
    /// Whether the stream looks variable-frame-rate (base and average rates differ).
    pub variable_frame_rate: bool,
    /// Stream time base "num/den".
    pub time_base: String,
    /// Frame count from the container, or estimated from duration and rate.
    pub frame_count: Option<u64>,
    /// Whether `frame_count` is an estimate.
    pub frame_count_estimated: bool,
    /// Stream duration in seconds, when known.
    pub duration_s: Option<f64>,
    /// Colour primaries name.
    pub color_primaries: String,
    /// Transfer characteristic name.
    pub color_transfer: String,
    /// Matrix coefficients name.
    pub color_matrix: String,
    /// Range name (tv/pc/unknown).
    pub color_range: String,
    /// What RAVE will convert with (defaults applied).
    pub conversion: ColorInfo,
    /// Display rotation in degrees, 0 when none.
    pub rotation_deg: f64,
}

fn fraction(r: Rational) -> String {
    format!("{}/{}", r.numerator(), r.denominator())
}

fn to_f64(r: Rational) -> f64 {
    if r.denominator() == 0 {
        0.0
    } else {
        f64::from(r)
    }
}

fn kind_name(t: Type) -> &'static str {
    match t {
        Type::Video => "video",
        Type::Audio => "audio",
        Type::Subtitle => "subtitle",
        Type::Attachment => "attachment",
        Type::Data => "data",
        Type::Unknown => "unknown",
    }
}

impl MediaInfo {
    /// The main video stream's width and height; an input error when FFmpeg could read
    /// none (0x0: the stream's headers are missing, as in a truncated or damaged file), so
    /// that no model or encoder is blamed for it.
    pub fn frame_size(&self) -> Result<(u32, u32)> {
        match (self.video.width, self.video.height) {
            (0, _) | (_, 0) => Err(EngineError::NotAVideo {
                path: self.path.clone(),
                reason: crate::input::with_structure_damage(
                    &self.path,
                    &self.container,
                    format!(
                        "{} has no frame size FFmpeg can read: its headers are missing or damaged (a truncated or damaged file, or a cut or capture that holds no keyframe: the headers come with keyframes)",
                        match self.video.codec.as_str() {
                            "none" => format!(
                                "the video stream #{} (of a codec FFmpeg does not recognise)",
                                self.video.stream_index
                            ),
                            codec =>
                                format!("the {codec} video stream #{}", self.video.stream_index),
                        }
                    ),
                ),
            }),
            size => Ok(size),
        }
    }
}

/// The video's span from the file's length, for a stream that declares none of its own.
/// A Matroska/WebM file's length is where its timeline ends, counted from 0 (a clip cut
/// from 1.5 s to 5.5 s says 5.5 s), and where its longest track ends: the video track's
/// own end is taken where a DURATION tag gives it, and the stream's first timestamp is
/// taken off, or the frame count read from it would count the time without video.
fn file_span_s(
    ictx: &ffmpeg_next::format::context::Input,
    vs: &ffmpeg_next::Stream,
) -> Option<f64> {
    let length = (ictx.duration() > 0).then(|| ictx.duration() as f64 / 1e6)?;
    let start = vs.start_time();
    if !declared::is_matroska(ictx.format().name()) || start == ffmpeg_next::ffi::AV_NOPTS_VALUE {
        return Some(length);
    }
    // Where the video's own track ends, from the per-track DURATION tag FFmpeg's and
    // mkvmerge's muxers write, else where the file ends (a longer audio track ends it).
    let end = declared::duration_tag_s(vs).unwrap_or(length);
    let start_s = start as f64 * to_f64(vs.time_base());
    Some((end - start_s.max(0.0)).max(0.0))
}

/// Describe the media file at `path`.
pub fn probe(path: &Path) -> Result<MediaInfo> {
    let ictx = input::open(path)?;
    let vidx = input::video_stream_index(&ictx, path)?;
    let streams = ictx
        .streams()
        .map(|s| StreamInfo {
            index: s.index(),
            kind: kind_name(s.parameters().medium()).into(),
            codec: s.parameters().id().name().into(),
            language: s.metadata().get("language").map(str::to_owned),
            attached_picture: crate::input::is_cover_art(&s),
        })
        .collect();
    let vs = ictx.stream(vidx).expect("index from video_stream_index");
    let raw = sys::stream_params(&ictx, vidx);
    let pix = Pixel::from(crate::frame_convert::pixel_from_raw(raw.format));
    let [primaries, transfer, matrix, range] = sys::color_names(raw);
    let tb = vs.time_base();
    let avg = vs.avg_frame_rate();
    let base = vs.rate();
    let duration_s = (vs.duration() > 0)
        .then(|| vs.duration() as f64 * to_f64(tb))
        .or_else(|| file_span_s(&ictx, &vs));
    let fps = if to_f64(avg) > 0.0 {
        to_f64(avg)
    } else {
        to_f64(base)
    };
    let (frame_count, estimated) = if vs.frames() > 0 {
        (Some(vs.frames() as u64), false)
    } else {
        (duration_s.map(|d| (d * fps).round() as u64), true)
    };
    let width = raw.width as u32;
    let height = raw.height as u32;
    let video = VideoInfo {
        stream_index: vidx,
        codec: vs.parameters().id().name().into(),
        width,
        height,
        pixel_format: pix
            .descriptor()
            .map(|d| d.name().to_owned())
            .unwrap_or_else(|| "unknown".into()),
        bit_depth: color::bit_depth(pix),
        frame_rate: fps,
        avg_frame_rate: fraction(avg),
        base_frame_rate: fraction(base),
        variable_frame_rate: to_f64(avg) > 0.0 && to_f64(base) > 0.0 && avg != base,
        time_base: fraction(tb),
        frame_count,
        frame_count_estimated: estimated && frame_count.is_some(),
        duration_s,
        color_primaries: primaries,
        color_transfer: transfer,
        color_matrix: matrix,
        color_range: range,
        conversion: color::resolve(raw.color_space, raw.color_range, pix, height),
        rotation_deg: sys::display_matrix(&ictx, vidx)
            .map(|m| sys::rotation_degrees(&m))
            .unwrap_or(0.0),
    };
    Ok(MediaInfo {
        path: path.to_path_buf(),
        container: ictx.format().name().to_owned(),
        duration_s: (ictx.duration() > 0).then(|| ictx.duration() as f64 / 1e6),
        bit_rate: (ictx.bit_rate() > 0).then(|| ictx.bit_rate()),
        chapters: ictx.nb_chapters() as usize,
        streams,
        video,
    })
}
