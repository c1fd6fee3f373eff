//! The software video encoder (libx264, libx265, SVT-AV1): opened for the output size,
//! tagged with the source's colour description, fed host frames with their timestamps, and
//! safe to drop at any point (see `Drop`).

use std::mem::ManuallyDrop;

use ffmpeg_next::frame::Video as VideoFrame;
use ffmpeg_next::{Dictionary, Packet, Rational};
use rave_core::error::{EngineError, Result};
use rave_core::frame::{HostYuvFrame, YuvFrame};

use crate::codec_choice::{EncoderSettings, VideoCodec};
use crate::encoder_lifecycle::one_at_a_time;
use crate::frame_convert::{export, working_format};
use crate::log_capture::capture_errors;
use crate::short_encode_dts::{ShortEncodeDts, X265_BFRAME_DELAY};
use crate::stderr_capture::capture_stderr;
use crate::sys::{self, RawColor};

/// What the encoder is opened with besides the user's settings.
#[derive(Debug, Clone, Copy)]
pub struct EncoderGeometry {
    /// Output width.
    pub width: u32,
    /// Output height.
    pub height: u32,
    /// Bits per sample (8 or 10).
    pub bit_depth: u8,
    /// Time base of the frames' timestamps.
    pub time_base: Rational,
    /// Nominal frame rate (rate control hint; timestamps rule).
    pub frame_rate: Rational,
    /// Sample aspect ratio of the source.
    pub sample_aspect: Rational,
}

/// An opened encoder.
pub struct VideoEncoder {
    /// Closed by `Drop`, while no other encoder opens or closes (`encoder_lifecycle`).
    encoder: ManuallyDrop<ffmpeg_next::encoder::video::Encoder>,
    codec: VideoCodec,
    geometry: EncoderGeometry,
    /// Frames handed to the encoder so far.
    frames_sent: u64,
    /// End of stream was sent to the encoder itself.
    eof_sent: bool,
    /// `send_eof` was called with no frame sent and nothing was passed on (see `send_eof`).
    ended_empty: bool,
    /// Dates the first packets of an encode shorter than x265's B-frame delay.
    short_dts: ShortEncodeDts,
}

/// What the encoder library printed (its error lines) and FFmpeg logged while opening, one
/// clause each, without repeats; `None` when both were silent.
fn refusal_details(printed: &str, logged: &[String]) -> Option<String> {
    let mut lines: Vec<&str> = Vec::new();
    let errors = printed
        .lines()
        .map(str::trim)
        .filter(|l| l.to_ascii_lowercase().contains("error"));
    for line in errors.chain(logged.iter().map(|l| l.trim())) {
        let line = line.trim_end_matches('.');
        if !line.is_empty() && !lines.contains(&line) {
            lines.push(line);
        }
    }
    (!lines.is_empty()).then(|| lines.join("; "))
}

/// Whether the encoder must see a picture and then end of stream before it is closed.
/// SVT-AV1 1.4 deadlocks in its deinit (and at end of stream) when it never received a
/// picture, and complains on stderr when closed without end of stream; libx264 and libx265
/// close cleanly at any point.
fn needs_end_of_stream_to_close(codec: VideoCodec) -> bool {
    codec == VideoCodec::Av1
}

impl VideoEncoder {
    /// Open the encoder of `settings.codec`; `codec_params` are `key=value` items for the
    /// encoder's own parameter list (x265-params, svtav1-params, x264-params).
    pub fn open(
        settings: &EncoderSettings,
        geometry: EncoderGeometry,
        color: &RawColor,
        global_header: bool,
        codec_params: &[String],
    ) -> Result<Self> {
        let name = settings.codec.encoder_name();
        let codec = ffmpeg_next::encoder::find_by_name(name).ok_or_else(|| {
            EngineError::Encode(format!(
                "encoder {name} is not available in this FFmpeg build; choose another --codec"
            ))
        })?;
        let mut enc = unopened(codec, name, geometry, working_format(geometry.bit_depth))?;
        // SAFETY: `enc` owns a valid, unopened codec context for the duration of the call.
        let ctx = unsafe { enc.as_mut_ptr() };
        sys::prepare_encoder(ctx, color, global_header, geometry.sample_aspect.into());
        let mut options = Dictionary::new();
        options.set("crf", &settings.crf.to_string());
        options.set("preset", &settings.preset);
        let mut params: Vec<String> = codec_params.to_vec();
        if let Some(n) = settings.threads {
            // libx264 and SVT-AV1 take FFmpeg's thread count; x265 sizes its pool itself.
            options.set("threads", &n.to_string());
            if settings.codec == VideoCodec::Hevc {
                params.push(format!("pools={n}"));
            }
        }
        let key = match settings.codec {
            VideoCodec::H264 => "x264-params",
            VideoCodec::Hevc => {
                params.insert(0, "log-level=error".into());
                "x265-params"
            }
            VideoCodec::Av1 => "svtav1-params",
        };
        if !params.is_empty() {
            options.set(key, &params.join(":"));
        }
        // x265 and SVT-AV1 print on stderr themselves, FFmpeg's wrappers through its log:
        // catch both, so nothing reaches the terminal and a refusal says what they said. The
        // stderr capture is serialised, and wraps the log capture (one process-wide slot), so
        // encoders opened on several threads do not take each other's messages. No other
        // encoder closes meanwhile (SVT-AV1's shared processor table, `encoder_lifecycle`).
        let ((opened, logged), printed) =
            one_at_a_time(|| capture_stderr(|| capture_errors(|| enc.open_with(options))));
        let encoder = opened.map_err(|e| {
            EngineError::Encode(format!(
                "{name} refused {}x{} {}-bit at crf {} preset {}: {}",
                geometry.width,
                geometry.height,
                geometry.bit_depth,
                settings.crf,
                settings.preset,
                refusal_details(&printed, &logged).unwrap_or_else(|| e.to_string())
            ))
        })?;
        Ok(Self {
            encoder: ManuallyDrop::new(encoder),
            codec: settings.codec,
            geometry,
            frames_sent: 0,
            eof_sent: false,
            ended_empty: false,
            short_dts: ShortEncodeDts::new(
                match settings.codec {
                    VideoCodec::Hevc => X265_BFRAME_DELAY,
                    VideoCodec::H264 | VideoCodec::Av1 => 0,
                },
                geometry.time_base,
                geometry.frame_rate,
            ),
        })
    }

    /// The opened encoder (for the muxer to copy its parameters).
    pub fn context(&self) -> &ffmpeg_next::encoder::video::Encoder {
        &self.encoder
    }

    /// Time base of the packets produced.
    pub fn time_base(&self) -> Rational {
        self.geometry.time_base
    }

    /// Send one frame, with its closed captions where it has some (libx264 writes them);
    /// its pts must be in the encoder's time base.
    pub fn send(&mut self, frame: &HostYuvFrame, captions: Option<&[u8]>) -> Result<()> {
        let g = &self.geometry;
        if frame.image.width != g.width || frame.image.height != g.height {
            return Err(EngineError::DimensionMismatch(format!(
                "frame {} is {}x{}, encoder expects {}x{}",
                frame.meta.index, frame.image.width, frame.image.height, g.width, g.height
            )));
        }
        let mut av = VideoFrame::new(working_format(g.bit_depth), g.width, g.height);
        export(&frame.image, &mut av);
        av.set_pts(Some(frame.meta.pts));
        if let Some(captions) = captions {
            crate::captions::attach(&mut av, captions);
        }
        self.encoder
            .send_frame(&av)
            .map_err(|e| EngineError::Encode(format!("frame {}: {e}", frame.meta.index)))?;
        self.short_dts.sent(frame.meta.pts);
        self.frames_sent += 1;
        Ok(())
    }

    /// Signal end of stream so the encoder releases its delayed packets. With no frame sent
    /// there is nothing to release: an encoder that cannot end an empty stream (SVT-AV1) is
    /// not asked to, and is shut down properly when dropped.
    pub fn send_eof(&mut self) -> Result<()> {
        if self.frames_sent == 0 && needs_end_of_stream_to_close(self.codec) {
            self.ended_empty = true;
            return Ok(());
        }
        self.eof_sent = true;
        self.encoder
            .send_eof()
            .map_err(|e| EngineError::Encode(format!("flush: {e}")))
    }

    /// The next finished packet, if one is ready.
    pub fn receive(&mut self) -> Result<Option<Packet>> {
        if self.ended_empty {
            return Ok(None);
        }
        let mut packet = next_packet(&mut self.encoder)?;
        if let Some(p) = packet.as_mut() {
            self.short_dts.fix(p);
        }
        Ok(packet)
    }
}

impl Drop for VideoEncoder {
    /// Close the encoder wherever the run stopped (a refused output, a failed stage, Ctrl+C
    /// before the first frame). An encoder that must end its stream before closing is given a
    /// blank picture if it never had one, then end of stream, and drained; the packets are
    /// discarded (the output is being abandoned or was already finalized). Then it is freed
    /// while no other encoder opens or closes.
    fn drop(&mut self) {
        self.end_before_closing();
        one_at_a_time(|| {
            // SAFETY: `drop` runs once and `self.encoder` is not used after this.
            unsafe { ManuallyDrop::drop(&mut self.encoder) }
        });
    }
}

impl VideoEncoder {
    /// Give an encoder that must end its stream before closing a blank picture if it never
    /// had one, then end of stream, and drain it (see `Drop`).
    fn end_before_closing(&mut self) {
        if self.eof_sent || !needs_end_of_stream_to_close(self.codec) {
            return;
        }
        let g = self.geometry;
        if self.frames_sent == 0 {
            let mut av = VideoFrame::new(working_format(g.bit_depth), g.width, g.height);
            export(&YuvFrame::zeroed(g.width, g.height, g.bit_depth), &mut av);
            av.set_pts(Some(0));
            if self.encoder.send_frame(&av).is_err() {
                return;
            }
        }
        if self.encoder.send_eof().is_err() {
            return;
        }
        let mut packet = Packet::empty();
        while self.encoder.receive_packet(&mut packet).is_ok() {}
    }
}

/// An unopened video encoder context of `codec` (FFmpeg name `name`) for `geometry`'s size,
/// time base and rate, taking frames of `format`.
pub(crate) fn unopened(
    codec: ffmpeg_next::Codec,
    name: &str,
    geometry: EncoderGeometry,
    format: ffmpeg_next::format::Pixel,
) -> Result<ffmpeg_next::encoder::video::Video> {
    let mut enc = ffmpeg_next::codec::context::Context::new_with_codec(codec)
        .encoder()
        .video()
        .map_err(|e| EngineError::Encode(format!("{name}: {e}")))?;
    enc.set_width(geometry.width);
    enc.set_height(geometry.height);
    enc.set_format(format);
    enc.set_time_base(geometry.time_base);
    enc.set_frame_rate(Some(geometry.frame_rate));
    Ok(enc)
}

/// The next finished packet of an opened encoder, `None` when it needs more input or has
/// ended.
pub(crate) fn next_packet(
    encoder: &mut ffmpeg_next::encoder::video::Encoder,
) -> Result<Option<Packet>> {
    let mut packet = Packet::empty();
    match encoder.receive_packet(&mut packet) {
        Ok(()) => Ok(Some(packet)),
        Err(ffmpeg_next::Error::Eof) => Ok(None),
        Err(ffmpeg_next::Error::Other { errno }) if errno == ffmpeg_next::util::error::EAGAIN => {
            Ok(None)
        }
        Err(e) => Err(EngineError::Encode(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    fn geometry(width: u32, height: u32) -> EncoderGeometry {
        EncoderGeometry {
            width,
            height,
            bit_depth: 8,
            time_base: Rational::new(1, 25),
            frame_rate: Rational::new(25, 1),
            sample_aspect: Rational::new(1, 1),
        }
    }

    fn color() -> RawColor {
        use ffmpeg_next::ffi::*;
        RawColor {
            primaries: AVColorPrimaries::AVCOL_PRI_BT709,
            transfer: AVColorTransferCharacteristic::AVCOL_TRC_BT709,
            space: AVColorSpace::AVCOL_SPC_BT709,
            range: AVColorRange::AVCOL_RANGE_MPEG,
            chroma_location: AVChromaLocation::AVCHROMA_LOC_LEFT,
        }
    }

    fn open(codec: VideoCodec, preset: &str, width: u32, height: u32) -> Result<VideoEncoder> {
        crate::init();
        let settings = EncoderSettings::new(codec, None, Some(preset)).unwrap();
        VideoEncoder::open(&settings, geometry(width, height), &color(), false, &[])
    }

    /// Frame `index` of a black 64x64 8-bit clip, one timestamp a frame.
    fn black_64(index: u64) -> HostYuvFrame {
        HostYuvFrame {
            meta: rave_core::frame::FrameMeta {
                index,
                pts: index as i64,
                keyframe: index == 0,
            },
            image: YuvFrame::zeroed(64, 64, 8),
        }
    }

    /// Run `f` on its own thread; fail if it has not returned within `limit` (a deadlock).
    fn within(limit: Duration, what: &str, f: impl FnOnce() + Send + 'static) {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            f();
            let _ = tx.send(());
        });
        assert!(
            rx.recv_timeout(limit).is_ok(),
            "{what} did not return within {limit:?}"
        );
    }

    #[test]
    fn svt_av1_closes_when_dropped_before_any_frame() {
        within(
            Duration::from_secs(20),
            "dropping an unused SVT-AV1 encoder",
            || {
                drop(open(VideoCodec::Av1, "12", 64, 64).unwrap());
            },
        );
    }

    #[test]
    fn svt_av1_ends_an_empty_stream_and_closes() {
        within(
            Duration::from_secs(20),
            "ending an empty SVT-AV1 stream",
            || {
                let mut enc = open(VideoCodec::Av1, "12", 64, 64).unwrap();
                enc.send_eof().unwrap();
                assert!(enc.receive().unwrap().is_none());
                drop(enc);
            },
        );
    }

    #[test]
    fn svt_av1_closes_when_dropped_mid_stream() {
        within(
            Duration::from_secs(20),
            "dropping SVT-AV1 mid-stream",
            || {
                let mut enc = open(VideoCodec::Av1, "12", 64, 64).unwrap();
                for index in 0..3 {
                    enc.send(&black_64(index), None).unwrap();
                    while enc.receive().unwrap().is_some() {}
                }
                drop(enc);
            },
        );
    }

    /// SVT-AV1 encoders opened, fed none or one frame, and closed on six threads at once
    /// (`encoder_lifecycle`): before, an open beside another's close segfaulted.
    #[test]
    fn svt_av1_encoders_opened_and_closed_on_several_threads_at_once_all_survive() {
        let workers: Vec<_> = (0..6u64)
            .map(|w| {
                std::thread::spawn(move || {
                    for i in 0..40 {
                        let mut enc = open(VideoCodec::Av1, "12", 64, 64).unwrap();
                        for index in 0..(w + i) % 2 {
                            enc.send(&black_64(index), None).unwrap();
                            while enc.receive().unwrap().is_some() {}
                        }
                        drop(enc);
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().expect("a worker opening and closing SVT-AV1");
        }
    }

    #[test]
    fn every_software_encoder_takes_a_thread_count_and_encodes_with_it() {
        crate::init();
        for (codec, preset) in [
            (VideoCodec::H264, "ultrafast"),
            (VideoCodec::Hevc, "ultrafast"),
            (VideoCodec::Av1, "12"),
        ] {
            let settings = EncoderSettings {
                threads: Some(2),
                ..EncoderSettings::new(codec, None, Some(preset)).unwrap()
            };
            let mut enc =
                VideoEncoder::open(&settings, geometry(64, 64), &color(), false, &[]).unwrap();
            let mut packets = 0;
            for index in 0..3 {
                enc.send(&black_64(index), None).unwrap();
                while enc.receive().unwrap().is_some() {
                    packets += 1;
                }
            }
            enc.send_eof().unwrap();
            while enc.receive().unwrap().is_some() {
                packets += 1;
            }
            assert_eq!(packets, 3, "{codec:?}: every frame encoded");
        }
    }

    #[test]
    fn an_open_failure_carries_the_encoders_own_words() {
        let e = open(VideoCodec::Hevc, "ultrafast", 51, 27).err().unwrap();
        let msg = e.to_string();
        assert!(
            msg.contains("libx265 refused 51x27")
                && msg.contains("x265 [error]: Picture width must be an integer multiple"),
            "{msg}"
        );
        let e = open(VideoCodec::H264, "ultrafast", 51, 27).err().unwrap();
        let msg = e.to_string();
        println!("{msg}");
        assert!(
            msg.contains("libx264 refused 51x27") && !msg.contains("Generic error"),
            "{msg}"
        );
    }
}
