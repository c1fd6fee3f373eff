//! Software encoders opened and closed one at a time, process-wide. SVT-AV1 1.4 keeps one
//! table of the machine's processors for the whole process, without a lock: each handle's
//! open allocates it where absent and fills it, and each handle's close frees it, even while
//! other handles live. An open beside another encoder's close writes through a freed or null
//! table (a segfault, seen where one worker's segment ended as another's began).

use std::sync::Mutex;

/// Run `f` (an encoder's open or close) while no other encoder opens or closes.
pub(crate) fn one_at_a_time<R>(f: impl FnOnce() -> R) -> R {
    static TURN: Mutex<()> = Mutex::new(());
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    f()
}

#[cfg(test)]
mod tests {
    use ffmpeg_next::Rational;
    use rave_core::frame::{FrameMeta, HostYuvFrame, YuvFrame};

    use crate::codec_choice::{EncoderSettings, VideoCodec};
    use crate::encoder::{EncoderGeometry, VideoEncoder};
    use crate::sys::RawColor;

    fn open_encode_close(frames: u64) {
        use ffmpeg_next::ffi::*;
        let settings = EncoderSettings::new(VideoCodec::Av1, None, Some("12")).unwrap();
        let geometry = EncoderGeometry {
            width: 64,
            height: 64,
            bit_depth: 8,
            time_base: Rational::new(1, 25),
            frame_rate: Rational::new(25, 1),
            sample_aspect: Rational::new(1, 1),
        };
        let color = RawColor {
            primaries: AVColorPrimaries::AVCOL_PRI_BT709,
            transfer: AVColorTransferCharacteristic::AVCOL_TRC_BT709,
            space: AVColorSpace::AVCOL_SPC_BT709,
            range: AVColorRange::AVCOL_RANGE_MPEG,
            chroma_location: AVChromaLocation::AVCHROMA_LOC_LEFT,
        };
        let mut enc = VideoEncoder::open(&settings, geometry, &color, false, &[]).unwrap();
        for index in 0..frames {
            let frame = HostYuvFrame {
                meta: FrameMeta {
                    index,
                    pts: index as i64,
                    keyframe: index == 0,
                },
                image: YuvFrame::zeroed(64, 64, 8),
            };
            enc.send(&frame, None).unwrap();
            while enc.receive().unwrap().is_some() {}
        }
        drop(enc);
    }

    #[test]
    fn svt_av1_encoders_opened_and_closed_on_several_threads_at_once_all_survive() {
        crate::init();
        let workers: Vec<_> = (0..6u64)
            .map(|w| {
                std::thread::spawn(move || (0..40).for_each(|i| open_encode_close((w + i) % 2)))
            })
            .collect();
        for w in workers {
            w.join().expect("a worker opening and closing SVT-AV1");
        }
    }
}
