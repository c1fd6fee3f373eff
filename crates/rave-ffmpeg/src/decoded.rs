//! What a `VideoReader` hands out and keeps: decoded frames (host or NVDEC), the packets of
//! the other streams, the bounds of a segment's frames, and its decode counters.

use ffmpeg_next::Packet;
use rave_core::frame::FrameMeta;
use serde::Serialize;

use crate::nvdec::CudaFrame;

/// A packet of a non-video stream, on its way to the assembled output unchanged.
pub struct CopiedPacket {
    /// Index of the stream in the input.
    pub input_stream: usize,
    /// The packet as demuxed.
    pub packet: Packet,
}

/// What decoding saw (damage is counted in `InputDamage`).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct DecodeStats {
    /// Video packets read.
    pub packets: u64,
    /// Of them, those sent to the decoder whose presentation time falls within the bounds
    /// (a segment's frames, each of which should come out).
    pub packets_in_bounds: u64,
    /// Frames decoded and passed on.
    pub frames: u64,
    /// Frames whose timestamp was missing or went backwards and was repaired.
    pub timestamp_fixes: u64,
    /// Packets of other streams passed on to be copied.
    pub copied_packets: u64,
    /// Frames NVDEC decoded into device memory (the rest came from the software decoder).
    pub nvdec_frames: u64,
    /// Why the stream was decoded in software although NVDEC was offered (a codec, depth,
    /// chroma layout or size NVDEC does not take on this GPU).
    pub nvdec_refused: Option<String>,
    /// Where (seconds into the output) the input's timestamps restarted and the timeline
    /// was continued across them (joined or spliced MPEG-TS/PS).
    pub timestamp_resets: Vec<f64>,
    /// Where one stream's timestamps stepped back a little into its own last packets (parts
    /// joined with their clocks overlapping) and the stream was moved on to play on from
    /// them.
    pub timestamp_steps: Vec<StepBack>,
    /// Frames passed on that carried closed captions (CEA-608/708 as A/53 user data).
    pub captioned_frames: u64,
}

/// One stream's clock stepping back into its own last packets where parts join
/// (`Demuxer::next_packet`): the stream was moved on by the overlap, every packet kept.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct StepBack {
    /// The input stream.
    pub stream: usize,
    /// Where (seconds into the output) its packet now plays.
    pub at_s: f64,
    /// How far (seconds) it stepped back, and was moved on.
    pub by_s: f64,
}

/// A decoded picture: in host memory (software decoder) or on the GPU (NVDEC).
pub enum DecodedImage {
    /// Planar 4:2:0 samples in host memory.
    Host(rave_core::frame::YuvFrame),
    /// An NVDEC surface in device memory.
    Cuda(CudaFrame),
}

/// A decoded frame with its identity.
pub struct DecodedFrame {
    /// Identity of the frame.
    pub meta: FrameMeta,
    /// Its pixels.
    pub image: DecodedImage,
    /// Its closed captions (A/53), until the reader hands the frame out and they go to its
    /// `CaptionStore`.
    pub captions: Option<Vec<u8>>,
}

/// Which frames of the video a reader passes on: those whose timestamps fall in
/// `[start, end)`, decoding from the keyframe at or before `seek_to` (frames before `start`
/// are decoded as references only). All `None`: the whole file from its start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrameBounds {
    /// Seek to the keyframe at or before this timestamp before reading.
    pub seek_to: Option<i64>,
    /// The first frame passed on has this timestamp.
    pub start: Option<i64>,
    /// Frames from this timestamp on are not passed on (reading stops there).
    pub end: Option<i64>,
    /// Index (in the whole video) of the first frame passed on.
    pub first_index: u64,
    /// Skip the leading video packets: those before the first keyframe read and the
    /// leading pictures of its open GOP (the file starts mid-GOP: they cannot be decoded,
    /// and decoding them leaves the decoder complaining about whole pictures after it, or
    /// dropping them without a word). Only where the file is known to have a keyframe.
    pub skip_before_keyframe: bool,
}

impl FrameBounds {
    /// Whether every frame of the file is passed on, from its start (the leading packets
    /// of a file that starts mid-GOP may be skipped: they are no frames).
    pub fn whole_file(&self) -> bool {
        *self
            == Self {
                skip_before_keyframe: self.skip_before_keyframe,
                ..Self::default()
            }
    }
}
