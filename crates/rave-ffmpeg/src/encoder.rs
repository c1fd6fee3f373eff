//! The software video encoder (libx264, libx265, SVT-AV1): opened for the output size,
//! tagged with the source's colour description, fed host frames with their timestamps.

use ffmpeg_next::frame::Video as VideoFrame;
use ffmpeg_next::{Dictionary, Packet, Rational};
use rave_core::error::{EngineError, Result};
use rave_core::frame::HostYuvFrame;

use crate::codec_choice::EncoderSettings;
use crate::frame_convert::{export, working_format};
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
    encoder: ffmpeg_next::encoder::video::Encoder,
    geometry: EncoderGeometry,
}

impl VideoEncoder {
    /// Open the encoder of `settings.codec`.
    pub fn open(
        settings: &EncoderSettings,
        geometry: EncoderGeometry,
        color: &RawColor,
        global_header: bool,
    ) -> Result<Self> {
        let name = settings.codec.encoder_name();
        let codec = ffmpeg_next::encoder::find_by_name(name).ok_or_else(|| {
            EngineError::Encode(format!(
                "encoder {name} is not available in this FFmpeg build; choose another --codec"
            ))
        })?;
        let mut enc = ffmpeg_next::codec::context::Context::new_with_codec(codec)
            .encoder()
            .video()
            .map_err(|e| EngineError::Encode(format!("{name}: {e}")))?;
        enc.set_width(geometry.width);
        enc.set_height(geometry.height);
        enc.set_format(working_format(geometry.bit_depth));
        enc.set_time_base(geometry.time_base);
        enc.set_frame_rate(Some(geometry.frame_rate));
        // SAFETY: `enc` owns a valid, unopened codec context for the duration of the call.
        let ctx = unsafe { enc.as_mut_ptr() };
        sys::prepare_encoder(ctx, color, global_header, geometry.sample_aspect.into());
        let mut options = Dictionary::new();
        options.set("crf", &settings.crf.to_string());
        options.set("preset", &settings.preset);
        if name == "libx265" {
            options.set("x265-params", "log-level=error");
        }
        let encoder = enc.open_with(options).map_err(|e| {
            EngineError::Encode(format!(
                "{name} refused {}x{} {}-bit at crf {} preset {}: {e}",
                geometry.width, geometry.height, geometry.bit_depth, settings.crf, settings.preset
            ))
        })?;
        Ok(Self { encoder, geometry })
    }

    /// The opened encoder (for the muxer to copy its parameters).
    pub fn context(&self) -> &ffmpeg_next::encoder::video::Encoder {
        &self.encoder
    }

    /// Time base of the packets produced.
    pub fn time_base(&self) -> Rational {
        self.geometry.time_base
    }

    /// Send one frame; its pts must be in the encoder's time base.
    pub fn send(&mut self, frame: &HostYuvFrame) -> Result<()> {
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
        self.encoder
            .send_frame(&av)
            .map_err(|e| EngineError::Encode(format!("frame {}: {e}", frame.meta.index)))
    }

    /// Signal end of stream so the encoder releases its delayed packets.
    pub fn send_eof(&mut self) -> Result<()> {
        self.encoder
            .send_eof()
            .map_err(|e| EngineError::Encode(format!("flush: {e}")))
    }

    /// The next finished packet, if one is ready.
    pub fn receive(&mut self) -> Result<Option<Packet>> {
        let mut packet = Packet::empty();
        match self.encoder.receive_packet(&mut packet) {
            Ok(()) => Ok(Some(packet)),
            Err(ffmpeg_next::Error::Eof) => Ok(None),
            Err(ffmpeg_next::Error::Other { errno })
                if errno == ffmpeg_next::util::error::EAGAIN =>
            {
                Ok(None)
            }
            Err(e) => Err(EngineError::Encode(e.to_string())),
        }
    }
}
