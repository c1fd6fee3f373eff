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

/// Video packets sent to the decoder at most before giving up on a first frame.
const MAX_VIDEO_PACKETS: usize = 64;

/// Packets of any stream read at most (a video stream whose packets come late in the file
/// is left to the reader, not read here in full).
const MAX_PACKETS: usize = 2048;

/// Read errors after which the look-ahead gives up (a file system error repeats forever).
const MAX_READ_ERRORS: usize = 8;

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
    let mut input = ffmpeg_next::format::input(&path).ok()?;
    let params = input.stream(index)?.parameters();
    let mut decoder = ffmpeg_next::codec::context::Context::from_parameters(params)
        .ok()?
        .decoder()
        .video()
        .ok()?;
    let mut frame = ffmpeg_next::frame::Video::empty();
    let (mut sent, mut errors) = (0, 0);
    for _ in 0..MAX_PACKETS {
        let mut packet = ffmpeg_next::Packet::empty();
        match packet.read(&mut input) {
            Ok(()) => {}
            Err(ffmpeg_next::Error::Eof) => break,
            Err(_) => {
                errors += 1;
                if errors >= MAX_READ_ERRORS {
                    return None;
                }
                continue;
            }
        }
        if packet.stream() != index {
            continue;
        }
        if decoder.send_packet(&packet).is_ok() && decoder.receive_frame(&mut frame).is_ok() {
            return Some(side_data_of(&frame));
        }
        sent += 1;
        if sent >= MAX_VIDEO_PACKETS {
            return None;
        }
    }
    decoder.send_eof().ok()?;
    decoder.receive_frame(&mut frame).ok()?;
    Some(side_data_of(&frame))
}

fn side_data_of(frame: &ffmpeg_next::frame::Video) -> BitstreamHdr {
    let bytes = |kind: Type| frame.side_data(kind).map(|d| d.data().to_vec());
    BitstreamHdr {
        mastering: bytes(Type::MasteringDisplayMetadata),
        light: bytes(Type::ContentLightLevel),
    }
}
