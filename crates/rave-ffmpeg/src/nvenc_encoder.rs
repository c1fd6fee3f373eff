//! The NVENC encoder through FFmpeg (`h264_nvenc`, `hevc_nvenc`, `av1_nvenc`), fed CUDA
//! surfaces of a [`CudaSurfacePool`] on RAVE's context: no host copy of frame data. Opened
//! with a [`NvencConfig`] (the `--crf`/`--preset`/bit-depth mapping) and the source's colour
//! tags, as the software encoder is.

use ffmpeg_next::ffi;
use ffmpeg_next::{Dictionary, Packet, Rational};
use rave_core::error::{EngineError, Result};

use crate::cuda_surfaces::{CudaSurface, CudaSurfacePool};
use crate::encoder::EncoderGeometry;
use crate::log_capture::capture_errors;
use crate::nvenc_settings::NvencConfig;
use crate::sys::{self, RawColor};

/// An opened NVENC encoder.
pub struct NvencEncoder {
    encoder: ffmpeg_next::encoder::video::Encoder,
    geometry: EncoderGeometry,
    frames_sent: u64,
}

/// What FFmpeg said while opening, after its error: one line, FFmpeg's words first.
fn refusal(name: &str, error: ffmpeg_next::Error, logged: &[String]) -> EngineError {
    let said: Vec<&str> = logged
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .collect();
    EngineError::Encode(match said.is_empty() {
        true => format!("{name}: {error}"),
        false => format!("{name}: {} ({error})", said.join("; ")),
    })
}

impl NvencEncoder {
    /// Open `config.encoder` for `geometry`, reading surfaces of `pool` (their format and size
    /// must be the geometry's), tagged with `color`.
    pub fn open(
        config: &NvencConfig,
        geometry: EncoderGeometry,
        color: &RawColor,
        pool: &CudaSurfacePool,
        global_header: bool,
    ) -> Result<Self> {
        let name = config.encoder;
        if pool.size() != (geometry.width, geometry.height) || pool.surface() != config.surface {
            return Err(EngineError::Encode(format!(
                "{name}: surfaces of {:?} {:?} for a {}x{} {:?} encode",
                pool.size(),
                pool.surface(),
                geometry.width,
                geometry.height,
                config.surface
            )));
        }
        let codec = ffmpeg_next::encoder::find_by_name(name)
            .ok_or_else(|| EngineError::Encode(format!("{name} is not in this FFmpeg build")))?;
        let mut enc =
            crate::encoder::unopened(codec, name, geometry, ffmpeg_next::format::Pixel::CUDA)?;
        // SAFETY: `enc` owns a valid, unopened codec context; it takes its own reference to
        // the frames context, released when the context is freed.
        unsafe {
            let ctx = enc.as_mut_ptr();
            sys::prepare_encoder(ctx, color, global_header, geometry.sample_aspect.into());
            let frames = ffi::av_buffer_ref(pool.raw());
            if frames.is_null() {
                return Err(EngineError::Encode(format!(
                    "{name}: out of memory referencing the surfaces"
                )));
            }
            (*ctx).hw_frames_ctx = frames;
            (*ctx).sw_pix_fmt = match config.surface {
                crate::nvenc_settings::NvencSurface::Nv12 => ffi::AVPixelFormat::AV_PIX_FMT_NV12,
                crate::nvenc_settings::NvencSurface::P010 => ffi::AVPixelFormat::AV_PIX_FMT_P010LE,
            };
        }
        let mut options = Dictionary::new();
        for (key, value) in &config.options {
            options.set(key, value);
        }
        let (opened, logged) = capture_errors(|| enc.open_with(options));
        let encoder = opened.map_err(|e| refusal(name, e, &logged))?;
        Ok(Self {
            encoder,
            geometry,
            frames_sent: 0,
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

    /// Send a surface whose pts (in the encoder's time base) is set; the work that wrote it
    /// must be ordered before the encoder's reads (the device's stream, where NVENC reads).
    pub fn send(&mut self, surface: CudaSurface) -> Result<()> {
        // SAFETY: an opened encoder and a valid CUDA frame of its frames context; FFmpeg
        // takes its own reference to the frame.
        let status = unsafe { ffi::avcodec_send_frame(self.encoder.as_mut_ptr(), surface.raw()) };
        if status < 0 {
            return Err(EngineError::Encode(format!(
                "frame {}: {}",
                self.frames_sent,
                ffmpeg_next::Error::from(status)
            )));
        }
        self.frames_sent += 1;
        Ok(())
    }

    /// Signal end of stream so the encoder releases its delayed packets.
    pub fn send_eof(&mut self) -> Result<()> {
        self.encoder
            .send_eof()
            .map_err(|e| EngineError::Encode(format!("flush: {e}")))
    }

    /// The next finished packet, if one is ready.
    pub fn receive(&mut self) -> Result<Option<Packet>> {
        crate::encoder::next_packet(&mut self.encoder)
    }
}
