//! HDR10 metadata that only the video bitstream carries: x265, cameras and most HDR
//! streams put the mastering display and content light level in SEI messages (HEVC, H.264)
//! or metadata OBUs (AV1), not in the container, so the input stream has no side data for
//! them. FFmpeg's decoder attaches them to the decoded frames; the first frame of a PQ or
//! HLG stream is decoded on its own to read them.

use std::path::PathBuf;
use std::sync::Mutex;

use ffmpeg_next::codec::Id;
use ffmpeg_next::ffi::AVColorTransferCharacteristic as Trc;
use ffmpeg_next::format::context::Input;
use ffmpeg_next::frame::side_data::Type;

use crate::sys;

/// The HDR10 side data of a video's first frame, as bytes of FFmpeg's structures (the same
/// as the stream side data of the same kinds).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct BitstreamHdr {
    /// `AVMasteringDisplayMetadata`.
    pub mastering: Option<Vec<u8>>,
    /// `AVContentLightMetadata`.
    pub light: Option<Vec<u8>>,
}

/// Whether video stream `index` of `input` may carry HDR10 metadata in its bitstream: a
/// codec that can (HEVC, H.264, AV1) with a PQ or HLG transfer.
fn may_carry(input: &Input, index: usize) -> bool {
    let params = sys::stream_params(input, index);
    let codec = Id::from(params.codec_id);
    matches!(codec, Id::HEVC | Id::H264 | Id::AV1)
        && matches!(
            params.color_trc,
            Trc::AVCOL_TRC_SMPTE2084 | Trc::AVCOL_TRC_ARIB_STD_B67
        )
}

/// The HDR10 metadata of the first frame of video stream `index` of `input`, read by
/// opening the file again (the caller's reader is left where it is). Empty where the stream
/// cannot carry any, or nothing decodes within the first packets (damage is the reader's
/// to report, not this look-ahead's).
pub fn first_frame_hdr(input: &Input, index: usize) -> BitstreamHdr {
    if !may_carry(input, index) {
        return BitstreamHdr::default();
    }
    let Some(path) = sys::input_path(input) else {
        return BitstreamHdr::default();
    };
    // Asked for each segment's encoder and for the output: read once per file and stream
    // in a process (a changed input fails the job on its own). Not read under the lock:
    // two workers asking at once both read, the same answer.
    static READ: Mutex<Vec<((PathBuf, usize), BitstreamHdr)>> = Mutex::new(Vec::new());
    let lock = || READ.lock().unwrap_or_else(|e| e.into_inner());
    let key = (path, index);
    if let Some((_, hdr)) = lock().iter().find(|(k, _)| *k == key) {
        return hdr.clone();
    }
    let hdr = read_first_frame(key.0.clone(), index).unwrap_or_default();
    lock().push((key, hdr.clone()));
    hdr
}

fn read_first_frame(path: PathBuf, index: usize) -> Option<BitstreamHdr> {
    crate::first_frame::first_frame(&path, index).map(|frame| side_data_of(&frame))
}

fn side_data_of(frame: &ffmpeg_next::frame::Video) -> BitstreamHdr {
    let bytes = |kind: Type| frame.side_data(kind).map(|d| d.data().to_vec());
    BitstreamHdr {
        mastering: bytes(Type::MasteringDisplayMetadata),
        light: bytes(Type::ContentLightLevel),
    }
}
