//! Closed captions (CEA-608/708, carried as ATSC A/53 user data inside the pictures of
//! H.264 and MPEG-2 broadcasts and DVD/TV captures). The decoder hands them out with each
//! frame; the frame reaches the encoder through the model without them, so they wait here,
//! by timestamp, for the encoder that writes them back (libx264 does; this FFmpeg's libx265
//! and SVT-AV1 cannot, and the job then says they were not kept).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use ffmpeg_next::frame::Video as VideoFrame;
use ffmpeg_next::util::frame::side_data::Type as SideDataType;

use crate::codec_choice::VideoCodec;

/// The captions of the frames between a reader and the encoder of one segment.
#[derive(Debug, Default)]
pub struct CaptionStore {
    /// Captions by frame timestamp, while an encoder takes them.
    waiting: Mutex<BTreeMap<i64, Vec<u8>>>,
    /// An encoder writes them: keep them for it (else only counted).
    kept: AtomicBool,
}

impl CaptionStore {
    /// From now on, hold the captions for an encoder that writes them.
    pub fn keep(&self) {
        self.kept.store(true, Ordering::Relaxed);
    }

    /// Whether an encoder writes the captions.
    pub fn kept(&self) -> bool {
        self.kept.load(Ordering::Relaxed)
    }

    /// The captions of the frame shown at `pts`, to hold until it is encoded (where one
    /// will write them).
    pub fn put(&self, pts: i64, captions: Vec<u8>) {
        if self.kept() {
            self.lock().insert(pts, captions);
        }
    }

    /// The captions of the frame at `pts`, taken out.
    pub fn take(&self, pts: i64) -> Option<Vec<u8>> {
        if !self.kept() {
            return None;
        }
        self.lock().remove(&pts)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<i64, Vec<u8>>> {
        // A panic while holding it left a whole map: still usable.
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The captions a decoded frame carries, if any.
pub fn of_frame(frame: &VideoFrame) -> Option<Vec<u8>> {
    frame
        .side_data(SideDataType::A53CC)
        .map(|d| d.data().to_vec())
        .filter(|d| !d.is_empty())
}

/// Attach `captions` to a frame about to be encoded (libx264 writes them as SEI).
pub fn attach(frame: &mut VideoFrame, captions: &[u8]) {
    if let Some(mut side) = frame.new_side_data(SideDataType::A53CC, captions.len()) {
        // SAFETY: av_frame_new_side_data allocated `captions.len()` bytes at `data` for this
        // side data, owned by `frame`, which is borrowed mutably here.
        unsafe {
            let side = side.as_mut_ptr();
            std::ptr::copy_nonoverlapping(captions.as_ptr(), (*side).data, captions.len());
        }
    }
}

/// The warning for closed captions the output does not keep: `captioned` frames carried
/// them, and the video is `written` with that codec (on NVENC where true), or not at all
/// (`None`: a null output). Only libx264 writes them back (this FFmpeg's libx265 and SVT-AV1
/// cannot, and RAVE hands none to NVENC yet); `None` where they are kept or there were none.
pub fn lost(captioned: u64, written: Option<(VideoCodec, bool)>) -> Option<String> {
    let (codec, nvenc) = written.filter(|_| captioned > 0)?;
    let why = match (codec, nvenc) {
        (VideoCodec::H264, false) => return None,
        (_, true) => "RAVE does not hand them to NVENC yet; --encoder x264 keeps them".to_string(),
        (codec, false) => format!(
            "{} in this FFmpeg cannot write them; --codec h264 keeps them",
            codec.encoder_name()
        ),
    };
    Some(format!(
        "the input's closed captions (CEA-608/708 in the video, {captioned} frame(s)) are not kept: {why}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captions_wait_only_for_an_encoder_that_keeps_them() {
        let store = CaptionStore::default();
        store.put(1, vec![1]);
        assert_eq!(store.take(1), None, "nobody keeps them: not held");
        store.keep();
        store.put(2, vec![2]);
        store.put(3, vec![3]);
        assert_eq!(store.take(3), Some(vec![3]));
        assert_eq!(store.take(3), None, "taken once");
        assert_eq!(store.take(2), Some(vec![2]));
    }

    #[test]
    fn attached_captions_read_back() {
        let mut frame = VideoFrame::new(ffmpeg_next::format::Pixel::YUV420P, 16, 16);
        assert_eq!(of_frame(&frame), None);
        let cc = [0xfc, 0x94, 0x2c, 0xfd, 0x80, 0x80];
        attach(&mut frame, &cc);
        assert_eq!(of_frame(&frame), Some(cc.to_vec()));
    }

    #[test]
    fn only_libx264_keeps_them() {
        assert_eq!(lost(5, Some((VideoCodec::H264, false))), None);
        assert_eq!(lost(0, Some((VideoCodec::Hevc, false))), None);
        assert_eq!(lost(5, None), None, "no output, nothing lost");
        let nvenc = lost(5, Some((VideoCodec::H264, true))).unwrap();
        assert!(
            nvenc.contains("NVENC yet; --encoder x264 keeps them"),
            "{nvenc}"
        );
        let av1 = lost(5, Some((VideoCodec::Av1, false))).unwrap();
        assert!(av1.contains("5 frame(s)) are not kept: libsvtav1"), "{av1}");
    }
}
