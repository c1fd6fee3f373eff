//! Media IO on the system FFmpeg libraries: probe, demux and software decode into host
//! frames, software encode, and muxing with every other stream copied untouched.

mod alpha;
mod closing_notes;
mod continuity;
mod cover_attachment;
mod declared;
mod decodable_leading;
mod decoded;
mod decoder_log;
mod encoder_lifecycle;
mod first_frame;
mod flv_phantoms;
mod frame_times;
mod fresh_tables;
mod global_tags;
mod leading_packets;
mod log_capture;
mod log_watch;
mod lost_dispositions;
mod output_chapters;
mod output_timeline;
mod packet_duration;
mod picture_coding;
mod pixel_format;
mod quicktime_language;
mod stderr_capture;
mod sys;

pub mod audio_check;
pub mod bitstream_hdr;
pub mod captions;
pub mod carried_metadata;
pub mod codec_choice;
pub mod color;
pub mod cuda_surfaces;
pub mod demuxer;
pub mod encoder;
pub mod encoder_choice;
pub mod encoder_limits;
pub mod frame_convert;
pub mod hw_caps;
pub mod input;
pub mod integrity;
pub mod keyframe_index;
pub mod muxer;
pub mod nvdec;
pub mod nvdec_route;
pub mod nvenc_encoder;
pub mod nvenc_settings;
pub mod probe;
pub mod reader;
pub mod seam_fragment;
pub mod segment_file;
pub mod short_encode_dts;
pub mod source_tag;
pub mod splice;
pub mod stream_plan;
pub mod structure_check;
pub mod timeline;
mod ts_fragments;
mod ts_packet;
pub mod ts_repeats;
pub mod ts_seams;
mod ts_stream_types;
pub mod video_decoder;
pub mod writer;

pub use codec_choice::{Container, EncoderSettings, VideoCodec};
pub use log_capture::capture_errors;
pub use probe::{MediaInfo, StreamInfo, VideoInfo, probe};
pub use reader::{
    CopiedPacket, DecodeStats, DecodedFrame, DecodedImage, FrameBounds, KeyframeIndex, StepBack,
    VideoReader,
};
pub use sys::RawColor;
pub use writer::{CopyOutcome, MediaWriter, WriterSummary};

use std::sync::Once;

/// Initialise FFmpeg once per process and route its log through `log_capture` (silent):
/// RAVE reports errors itself, one clear line each.
pub fn init() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        // Registration cannot fail on FFmpeg >= 4; an error here would only be cosmetic.
        let _ = ffmpeg_next::init();
        log_capture::install();
    });
}
