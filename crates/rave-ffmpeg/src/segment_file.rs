//! `SegmentFile`: a finished segment's video-only file, read back packet by packet to be
//! joined into the output.

use std::path::{Path, PathBuf};

use ffmpeg_next::format::context::Input;
use ffmpeg_next::{Packet, Rational};
use rave_core::error::{EngineError, Result};

/// An opened segment file.
pub struct SegmentFile {
    path: PathBuf,
    input: Input,
    /// The first packet's wanted timestamp (see `restore_first_pts`).
    shift: Option<i64>,
    /// Added to every timestamp read.
    shift_by: Option<i64>,
}

impl SegmentFile {
    /// Open the segment file at `path`.
    pub fn open(path: &Path) -> Result<Self> {
        crate::init();
        let input = crate::input::open_file(path, None).map_err(|e| {
            EngineError::Demux(format!(
                "{}: the segment file cannot be read ({e}); it is redone when the job runs again",
                path.display()
            ))
        })?;
        if input.nb_streams() != 1 {
            return Err(EngineError::Demux(format!(
                "{}: a segment file holds one video stream, this one {}",
                path.display(),
                input.nb_streams()
            )));
        }
        Ok(Self {
            path: path.to_path_buf(),
            input,
            shift: None,
            shift_by: None,
        })
    }

    /// The video stream's codec parameters.
    pub fn parameters(&self) -> ffmpeg_next::codec::Parameters {
        self.input.stream(0).expect("one stream").parameters()
    }

    /// The video's pixel aspect ratio: its container's (`pasp`) over its bitstream's, 0/1
    /// where neither says.
    pub fn sample_aspect_ratio(&self) -> ffmpeg_next::Rational {
        crate::sys::sample_aspect_ratio(&self.input, 0)
    }

    /// The codec's out-of-band headers (SPS/PPS, sequence header): segments that join must
    /// have the same.
    pub fn extradata(&self) -> Vec<u8> {
        let params = crate::sys::stream_params(&self.input, 0);
        if params.extradata.is_null() || params.extradata_size <= 0 {
            return Vec::new();
        }
        // SAFETY: FFmpeg owns `extradata_size` bytes at `extradata` for the input's lifetime,
        // which the borrow of `self` covers; they are copied out.
        unsafe { std::slice::from_raw_parts(params.extradata, params.extradata_size as usize) }
            .to_vec()
    }

    /// Time base of the packets' timestamps.
    pub fn time_base(&self) -> Rational {
        self.input.stream(0).expect("one stream").time_base()
    }

    /// Move the timestamps read so the first packet (the segment's keyframe, its earliest
    /// frame) has presentation timestamp `first_pts`, undoing the shift the muxer applied.
    pub fn restore_first_pts(&mut self, first_pts: i64) {
        self.shift = Some(first_pts);
    }

    /// The next packet; `None` at the end.
    pub fn next_packet(&mut self) -> Result<Option<Packet>> {
        let mut packet = Packet::empty();
        match packet.read(&mut self.input) {
            Ok(()) => {
                // The first packet fixes the shift for the whole file.
                if self.shift_by.is_none()
                    && let Some(first) = self.shift
                {
                    self.shift_by = Some(first - packet.pts().unwrap_or(first));
                }
                if let Some(by) = self.shift_by.filter(|&b| b != 0) {
                    packet.set_pts(packet.pts().map(|t| t + by));
                    packet.set_dts(packet.dts().map(|t| t + by));
                }
                Ok(Some(packet))
            }
            Err(ffmpeg_next::Error::Eof) => Ok(None),
            Err(e) => Err(EngineError::Demux(format!(
                "{}: reading the segment failed: {e}",
                self.path.display()
            ))),
        }
    }
}
