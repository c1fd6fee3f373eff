//! The first decoded frame of a video stream, read by opening the file again (the caller's
//! reader is left where it is): what only the decoded picture says, the HDR10 metadata a
//! bitstream carries or the colours of a palette, is looked at before the job starts.

use std::path::Path;

/// Video packets sent to the decoder at most before giving up on a first frame.
const MAX_VIDEO_PACKETS: usize = 64;

/// Packets of any stream read at most (a video stream whose packets come late in the file
/// is left to the reader, not read here in full).
const MAX_PACKETS: usize = 2048;

/// Read errors after which the look-ahead gives up (a file system error repeats forever).
const MAX_READ_ERRORS: usize = 8;

/// The first frame of video stream `index` of the file at `path`; `None` where nothing
/// decodes within the first packets (damage is the reader's to report, not this
/// look-ahead's).
pub(crate) fn first_frame(path: &Path, index: usize) -> Option<ffmpeg_next::frame::Video> {
    let mut input = crate::input::open_file(path, None).ok()?;
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
            return Some(frame);
        }
        sent += 1;
        if sent >= MAX_VIDEO_PACKETS {
            return None;
        }
    }
    decoder.send_eof().ok()?;
    decoder.receive_frame(&mut frame).ok()?;
    Some(frame)
}
