//! `VideoReader`: a `Demuxer` and a `VideoDecoder` of one input: decodes the main video
//! stream (all of it, or the frames within `FrameBounds`) into host YUV frames or NVDEC
//! surfaces, hands every other stream's packets on untouched, and keeps the
//! `IntegrityLedger` of what it read so damage is never hidden.

use std::collections::VecDeque;
use std::path::Path;

use ffmpeg_next::format::context::Input;
use ffmpeg_next::util::error::EAGAIN;
use ffmpeg_next::{Packet, Rational};
use rave_core::codec::FrameSource;
use rave_core::color::ColorInfo;
use rave_core::damage::InputDamage;
use rave_core::error::{EngineError, Result};
use rave_core::frame::{FrameMeta, HostYuvFrame};

use crate::audio_check::AudioCheck;
pub use crate::decoded::{CopiedPacket, DecodeStats, DecodedFrame, DecodedImage, FrameBounds};
use crate::demuxer::Demuxer;
use crate::integrity::IntegrityLedger;
pub use crate::keyframe_index::KeyframeIndex;
use crate::nvdec::CudaDevice;
use crate::sys;
use crate::timeline::{Placement, VideoTimeline};
use crate::video_decoder::{Received, VideoDecoder};

/// Demuxer plus decoder for the main video stream of one file, with the ledger of what was
/// read.
pub struct VideoReader {
    demuxer: Demuxer,
    decoder: VideoDecoder,
    ledger: IntegrityLedger,
    bounds: FrameBounds,
    /// A frame inside the bounds was passed on.
    in_bounds: bool,
    pending: VecDeque<DecodedFrame>,
    /// The first frames of `pending` had no timestamp and none before them had one: held
    /// until a timed frame says where they go (at most [`MAX_LEADING`]).
    leading: usize,
    next_index: u64,
    finished: bool,
    stats: DecodeStats,
}

impl VideoReader {
    /// Open `path` and its main video stream's software decoder.
    pub fn open(path: &Path) -> Result<Self> {
        Self::open_on(path, None)
    }

    /// Open `path`, decoding on NVDEC through `device` when given and its NVDEC decodes the
    /// stream (else in software: `VideoDecoder::open`); up to `extra_frames` decoded surfaces
    /// may be held downstream at once.
    pub fn open_on(path: &Path, nvdec: Option<(&CudaDevice, i32)>) -> Result<Self> {
        Self::open_checked(path, nvdec, None, FrameBounds::default(), 0)
    }

    /// Open this reader's file again, decoding on NVDEC through `nvdec` when given, without
    /// repeating the structure check (it reads a whole Matroska file).
    pub fn reopen_on(&self, nvdec: Option<(&CudaDevice, i32)>) -> Result<Self> {
        self.reopen_within(nvdec, FrameBounds::default())
    }

    /// Open this reader's file again for the frames within `bounds` (one segment), decoding
    /// on NVDEC through `nvdec` when given, without repeating the structure check.
    pub fn reopen_within(
        &self,
        nvdec: Option<(&CudaDevice, i32)>,
        bounds: FrameBounds,
    ) -> Result<Self> {
        Self::open_checked(self.path(), nvdec, Some(self.ledger.structure()), bounds, 0)
    }

    /// Open `path` for the frames within `bounds` when its structure was already checked and
    /// found to have `structure` (a segment worker of a planned job); a software decoder
    /// runs `threads` threads (0: FFmpeg's choice, one per core).
    pub fn open_within(
        path: &Path,
        nvdec: Option<(&CudaDevice, i32)>,
        bounds: FrameBounds,
        structure: Option<crate::structure_check::StructureProblem>,
        threads: usize,
    ) -> Result<Self> {
        Self::open_checked(path, nvdec, Some(structure), bounds, threads)
    }

    /// The verdict of the file's structure check (to open it again without repeating it).
    pub fn structure_verdict(&self) -> Option<crate::structure_check::StructureProblem> {
        self.ledger.structure()
    }

    fn open_checked(
        path: &Path,
        nvdec: Option<(&CudaDevice, i32)>,
        structure: Option<Option<crate::structure_check::StructureProblem>>,
        bounds: FrameBounds,
        threads: usize,
    ) -> Result<Self> {
        // Errors FFmpeg logs while opening (a track it cannot parse, say) are damage too.
        let (mut demuxer, open_errors) = Demuxer::open(path)?;
        let (decoder, decoder_log) = VideoDecoder::open(&demuxer, nvdec, threads)?;
        let (rate, constant_rate) = decoder.frame_rate();
        let timeline = VideoTimeline::new(frame_step(decoder.time_base(), rate), constant_rate);
        let video_index = demuxer.video_index();
        let mut ledger =
            IntegrityLedger::new(demuxer.input(), path, video_index, timeline, structure);
        ledger.watch_decoder(decoder_log);
        ledger.on_open_errors(open_errors, bounds.seek_to.is_none());
        if let Some(at) = bounds.seek_to {
            demuxer.seek_video(at)?;
        }
        Ok(Self {
            demuxer,
            ledger,
            bounds,
            in_bounds: false,
            pending: VecDeque::new(),
            leading: 0,
            next_index: bounds.first_index,
            finished: false,
            stats: DecodeStats {
                nvdec_refused: decoder.nvdec_refused().map(str::to_owned),
                ..Default::default()
            },
            decoder,
        })
    }

    /// The demuxer (for the writer to mirror streams, chapters and metadata).
    pub fn input(&self) -> &Input {
        self.demuxer.input()
    }

    /// Index of the decoded video stream.
    pub fn video_index(&self) -> usize {
        self.demuxer.video_index()
    }

    /// The conversion colour description of the video.
    pub fn color(&self) -> ColorInfo {
        self.decoder.color()
    }

    /// Threads of the software decoder (0: FFmpeg's choice, one per core).
    pub fn decoder_threads(&self) -> usize {
        self.decoder.threads()
    }

    /// Time base of the video stream's timestamps.
    pub fn time_base(&self) -> Rational {
        self.decoder.time_base()
    }

    /// The video's nominal frame rate.
    pub fn frame_rate(&self) -> Rational {
        self.decoder.frame_rate().0
    }

    /// Coded size of the video.
    pub fn size(&self) -> (u32, u32) {
        self.decoder.size()
    }

    /// Counters so far.
    pub fn stats(&self) -> &DecodeStats {
        &self.stats
    }

    /// Whether the input is an MPEG transport or program stream whose video starts before
    /// zero: FFmpeg has unwrapped a 33-bit clock that wraps inside the file. Read through,
    /// its timeline is whole; a seek across the wrap lands on the wrong side of it, so such
    /// a file is not cut into segments.
    pub fn clock_wraps(&self) -> bool {
        let input = self.input();
        sys::timestamps_may_restart(input)
            && input.stream(self.video_index()).is_some_and(|s| {
                s.start_time() != ffmpeg_next::ffi::AV_NOPTS_VALUE && s.start_time() < 0
            })
    }

    /// Whether damaged data has been seen so far.
    pub fn damage_seen(&self) -> bool {
        self.ledger.damage_seen()
    }

    /// How long the video's last frame lasts, in its time base, from what was read (see
    /// `IntegrityLedger::last_frame_ticks`).
    pub fn last_frame_ticks(&self) -> Option<i64> {
        self.ledger.last_frame_ticks()
    }

    /// What was lost or damaged. Once the input was read to its end (decoded, or scanned
    /// by `scan_to_end`), this includes what its container declares but was not there.
    pub fn damage(&self) -> InputDamage {
        let mut damage = self
            .ledger
            .damage(self.finished && self.bounds.whole_file());
        if self.bounds.seek_to.is_some() {
            // What came before the first keyframe after a seek is where the seek landed,
            // not where the file starts.
            damage.frames_before_first_keyframe = 0;
        }
        damage
    }

    /// Count `n` packets the writer refused as invalid (damaged data); `first` says why.
    pub fn count_refused(&mut self, n: u64, first: Option<String>) {
        self.ledger.on_refused(n, first);
    }

    /// Whether a decoded frame was interlaced (the stream may not say so).
    pub fn saw_interlaced(&self) -> bool {
        self.ledger.saw_interlaced()
    }

    /// The input's path.
    pub fn path(&self) -> &Path {
        self.demuxer.path()
    }

    /// Stop decoding and read the rest of the file's packets only, counting them, so that
    /// the damage report covers the whole file; stops early when `keep_going` says so.
    /// Frames already in the decoder are drained and counted, not passed on.
    pub fn scan_to_end(&mut self, keep_going: impl Fn() -> bool) -> Result<()> {
        self.scan_packets(keep_going, |_, _| {})
    }

    /// Read every packet of the file without decoding the video (the reader must be fresh),
    /// counting them like `scan_to_end`, and return the index of its video frames and
    /// keyframes. The audio streams are decoded on the way (`AudioCheck`): damage inside the
    /// audio RAVE copies is counted too.
    pub fn index_to_end(&mut self, keep_going: impl Fn() -> bool) -> Result<KeyframeIndex> {
        let mut index = KeyframeIndex::new(self.time_base(), self.frame_rate());
        let video = self.video_index();
        index.set_reorders(sys::stream_params(self.input(), video).video_delay > 0);
        let audio = AudioCheck::start(self.input());
        // Leading packets (before the first keyframe of a file that starts mid-GOP, or the
        // leading pictures of its open GOP) are no frames of the job: no segment decodes
        // them. Held until a keyframe shows they are (as the ledger counts them); a stream
        // without any keyframe flag keeps them all.
        let mut before_key = Vec::new();
        self.scan_packets(&keep_going, |packet, leading| {
            if packet.stream() != video {
                audio.feed(packet);
                return;
            }
            let entry = (
                (packet.pts(), packet.dts()),
                packet.is_key(),
                sys::packet_is_discarded(packet),
            );
            match leading {
                false => index.add(entry.0, entry.1, entry.2),
                true => before_key.push(entry),
            }
        })?;
        if !self.ledger.keyframe_read() {
            for (times, key, discarded) in before_key {
                index.add(times, key, discarded);
            }
        }
        let verdict = audio.finish();
        if keep_going() {
            self.ledger.on_audio_check(verdict);
        }
        index.finish(self.demuxer.timestamp_resets().len());
        Ok(index)
    }

    fn scan_packets(
        &mut self,
        keep_going: impl Fn() -> bool,
        mut on_packet: impl FnMut(&Packet, bool),
    ) -> Result<()> {
        self.ledger.on_scan();
        self.decoder.send_eof();
        while !self.finished && keep_going() {
            self.receive_frames()?;
            self.pending.clear();
            self.leading = 0;
        }
        self.finished = true;
        while keep_going() {
            let Some(packet) = self.next_packet() else {
                break;
            };
            if packet.stream() == self.video_index() {
                self.stats.packets += 1;
            }
            self.ledger.admit(&packet);
            on_packet(&packet, self.ledger.leading_packet());
        }
        Ok(())
    }

    /// The next packet of a copied stream (audio, subtitles, attachments), reading past the
    /// video without decoding it; `None` at the end of the file. Each packet is counted in
    /// the ledger, and one no muxer could store (its timestamps go backwards) is skipped.
    pub fn next_copied_packet(&mut self) -> Option<CopiedPacket> {
        loop {
            let packet = self.next_packet()?;
            let admitted = self.ledger.admit(&packet);
            if packet.stream() == self.video_index() {
                self.stats.packets += 1;
                continue;
            }
            if admitted {
                self.stats.copied_packets += 1;
                return Some(CopiedPacket {
                    input_stream: packet.stream(),
                    packet,
                });
            }
        }
    }

    fn next_packet(&mut self) -> Option<Packet> {
        let ledger = &mut self.ledger;
        let packet = self.demuxer.next_packet(|e| ledger.on_read_error(e));
        self.ledger.on_read();
        if self.demuxer.timestamp_resets().len() != self.stats.timestamp_resets.len() {
            self.note_resets();
        }
        packet
    }

    fn note_resets(&mut self) {
        self.stats.timestamp_resets = self.demuxer.timestamp_resets().to_vec();
        self.ledger.on_resets(&self.stats.timestamp_resets);
    }

    fn read_packet(&mut self) -> Result<()> {
        match self.next_packet() {
            Some(packet) => self.route(packet),
            None => {
                self.decoder.send_eof();
                Ok(())
            }
        }
    }

    /// Decode a video packet; a packet of another stream is only counted (the other streams
    /// are copied when the segments are assembled, by `next_copied_packet`).
    fn route(&mut self, packet: Packet) -> Result<()> {
        if packet.stream() != self.video_index() {
            // After a seek the other streams' first packets are wherever the seek landed
            // (an MPEG-PS audio packet may start before the one read last): no measure of
            // them. The plan's reading of the whole file checked them.
            if self.bounds.seek_to.is_none() {
                self.ledger.admit(&packet);
            }
            return Ok(());
        }
        self.ledger.admit(&packet);
        self.stats.packets += 1;
        if let Some(pts) = packet.pts()
            && self.bounds.start.is_none_or(|start| pts >= start)
            && self.bounds.end.is_none_or(|end| pts < end)
        {
            self.stats.packets_in_bounds += 1;
        }
        // After a seek too: a demuxer without an index lands where it can, maybe mid-GOP, and
        // the pictures before the first keyframe (and its leading ones) come before the
        // segment's start anyway.
        let skip = self.bounds.skip_before_keyframe || self.bounds.seek_to.is_some();
        if skip && self.ledger.leading_packet() {
            self.ledger.on_leading_skipped();
            return Ok(());
        }
        self.ledger.on_sent(sys::packet_is_discarded(&packet));
        match self.decoder.send(&packet) {
            Ok(()) => {}
            Err(ffmpeg_next::Error::Other { errno }) if errno == EAGAIN => {
                self.receive_frames()?;
                if let Err(e) = self.decoder.send(&packet) {
                    self.ledger.on_rejected(&e);
                }
            }
            Err(e) => self.ledger.on_rejected(&e),
        }
        self.receive_frames()
    }

    /// Whether the frame at `pts` is outside the bounds: before their start (a reference
    /// decoded on the way, dropped uncounted) or at their end (reading stops).
    fn outside_bounds(&mut self, pts: Option<i64>) -> Result<bool> {
        let b = self.bounds;
        if let (Some(end), Some(t)) = (b.end, pts)
            && t >= end
        {
            self.finished = true;
            return Ok(true);
        }
        let Some(start) = b.start else {
            return Ok(false);
        };
        if self.in_bounds {
            return Ok(false);
        }
        match pts {
            Some(t) if t == start => {
                // Errors the decoder logged on the references before the segment are not
                // the segment's.
                self.ledger.forget_decoder_errors();
                self.in_bounds = true;
                Ok(false)
            }
            Some(t) if t > start && self.bounds.seek_to.is_some() => {
                // The container's index sent the seek past the segment's first frame: decode
                // from the start of the file instead (slower, never wrong).
                self.demuxer.seek_video(i64::MIN)?;
                self.decoder.flush();
                self.ledger.restart_leading();
                self.bounds.seek_to = None;
                self.pending.clear();
                self.leading = 0;
                Ok(true)
            }
            Some(t) if t > start => Err(EngineError::SeekMissed {
                path: self.path().to_path_buf(),
                wanted: start,
                got: t,
            }),
            _ => Ok(true),
        }
    }

    fn receive_frames(&mut self) -> Result<()> {
        loop {
            if self.finished {
                return Ok(());
            }
            match self.decoder.receive(self.next_index)? {
                Received::Frame => {
                    let raw_pts = self.decoder.frame().timestamp();
                    self.ledger.on_decoded(self.decoder.frame().is_key());
                    if self.outside_bounds(raw_pts)? {
                        continue;
                    }
                    let placed = self.ledger.place_frame(
                        raw_pts,
                        self.decoder.frame_is_damaged(),
                        self.decoder.frame().is_interlaced(),
                    );
                    let pts = match placed {
                        Placement::At(pts) => {
                            self.place_leading(Some(pts));
                            pts
                        }
                        // A duplicated frame: counted, not passed on.
                        Placement::Duplicate => continue,
                        Placement::Leading => {
                            self.leading += 1;
                            0
                        }
                    };
                    if raw_pts != Some(pts) {
                        self.stats.timestamp_fixes += 1;
                    }
                    let keyframe = self.decoder.frame().is_key();
                    let image = self.decoder.take_image()?;
                    if matches!(image, DecodedImage::Cuda(_)) {
                        self.stats.nvdec_frames += 1;
                    }
                    let meta = FrameMeta {
                        index: self.next_index,
                        pts,
                        keyframe,
                    };
                    self.next_index += 1;
                    self.stats.frames += 1;
                    self.pending.push_back(DecodedFrame { meta, image });
                }
                Received::Eof => {
                    self.finished = true;
                    return Ok(());
                }
                Received::Again => return Ok(()),
                Received::Error(e) => {
                    self.ledger.on_rejected(&e);
                    if self.decoder.draining() {
                        self.finished = true;
                    }
                    return Ok(());
                }
            }
        }
    }
}

/// Untimed first frames held for a timed one at most; beyond, they start the timeline at 0.
const MAX_LEADING: usize = 4;

impl VideoReader {
    /// Give the held leading frames their timestamps: one frame apart, ending a frame
    /// before `next` (the first timed frame's), or from 0 where none came.
    fn place_leading(&mut self, next: Option<i64>) {
        let n = std::mem::take(&mut self.leading);
        if n == 0 {
            return;
        }
        let step = self.ledger.frame_step();
        let first = next.map_or(0, |p| p - n as i64 * step);
        for (i, frame) in self.pending.iter_mut().take(n).enumerate() {
            frame.meta.pts = first + i as i64 * step;
        }
        if next.is_none() {
            self.ledger.settle_leading(first + (n as i64 - 1) * step);
        }
    }
}

/// Duration of one frame in time-base units, with its fraction (at least 1).
fn frame_step(time_base: Rational, rate: Rational) -> f64 {
    if rate.numerator() <= 0 || time_base.numerator() <= 0 {
        return 1.0;
    }
    let step = (f64::from(time_base.denominator()) * f64::from(rate.denominator()))
        / (f64::from(time_base.numerator()) * f64::from(rate.numerator()));
    step.max(1.0)
}

impl FrameSource for VideoReader {
    fn next_frame(&mut self) -> Result<Option<HostYuvFrame>> {
        match self.next_decoded()? {
            None => Ok(None),
            Some(DecodedFrame {
                meta,
                image: DecodedImage::Host(image),
            }) => Ok(Some(HostYuvFrame { meta, image })),
            Some(_) => Err(EngineError::InvariantViolation(
                "an NVDEC frame reached the host-frame reader".into(),
            )),
        }
    }
}

impl VideoReader {
    /// The next decoded frame, wherever it lives; `None` at the end.
    pub fn next_decoded(&mut self) -> Result<Option<DecodedFrame>> {
        loop {
            if self.leading > 0 && (self.finished || self.leading >= MAX_LEADING) {
                self.place_leading(None);
            }
            if self.leading == 0
                && let Some(frame) = self.pending.pop_front()
            {
                return Ok(Some(frame));
            }
            if self.finished {
                return Ok(None);
            }
            if self.decoder.draining() {
                self.receive_frames()?;
                if self.pending.is_empty() {
                    self.finished = true;
                }
            } else {
                self.read_packet()?;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_step_in_time_base_units() {
        assert_eq!(
            frame_step(Rational::new(1, 1000), Rational::new(25, 1)),
            40.0
        );
        assert_eq!(
            frame_step(Rational::new(1, 90000), Rational::new(30000, 1001)),
            3003.0
        );
        let ms_at_30 = frame_step(Rational::new(1, 1000), Rational::new(30, 1));
        assert!((ms_at_30 - 1000.0 / 30.0).abs() < 1e-9, "{ms_at_30}");
        assert_eq!(frame_step(Rational::new(1, 25), Rational::new(25, 1)), 1.0);
        assert_eq!(frame_step(Rational::new(1, 25), Rational::new(0, 1)), 1.0);
    }

    #[test]
    fn a_segment_reader_decodes_every_frame_on_the_threads_it_is_given() {
        crate::init();
        let dir = std::env::temp_dir().join(format!("rave-reader-threads-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let clip = dir.join("clip.mp4");
        let made = std::process::Command::new("ffmpeg")
            .args(["-v", "error", "-y", "-f", "lavfi", "-i"])
            .arg("testsrc2=size=64x48:rate=25:duration=0.48")
            .args(["-c:v", "libx264", "-preset", "ultrafast"])
            .arg(&clip)
            .status()
            .expect("the ffmpeg command (scripts/setup.sh installs it)");
        assert!(made.success());
        for threads in [1, 3] {
            let mut reader =
                VideoReader::open_within(&clip, None, FrameBounds::default(), None, threads)
                    .unwrap();
            assert_eq!(reader.decoder_threads(), threads);
            let mut frames = 0;
            while reader.next_frame().unwrap().is_some() {
                frames += 1;
            }
            assert_eq!(frames, 12, "{threads} thread(s): every frame");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
