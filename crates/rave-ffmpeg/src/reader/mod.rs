//! `VideoReader`: a `Demuxer` and a `VideoDecoder` of one input: decodes the main video
//! stream (all of it, or the frames within `FrameBounds`) into host YUV frames or NVDEC
//! surfaces, hands every other stream's packets on untouched, and keeps the
//! `IntegrityLedger` of what it read so damage is never hidden.

use std::collections::VecDeque;
use std::path::Path;

use ffmpeg_next::format::context::Input;
use ffmpeg_next::{Packet, Rational};
use rave_core::color::ColorInfo;
use rave_core::damage::InputDamage;
use rave_core::error::Result;

pub use crate::decoded::{
    CopiedPacket, DecodeStats, DecodedFrame, DecodedImage, FrameBounds, StepBack,
};
use crate::demuxer::{Demuxed, Demuxer};
use crate::integrity::{IntegrityLedger, LOOKAHEAD_PACKETS, RUN_PACKETS, SLOT_NEIGHBOURS};
pub use crate::keyframe_index::KeyframeIndex;
use crate::nvdec::CudaDevice;
use crate::sys;
use crate::timeline::VideoTimeline;
use crate::video_decoder::{DecoderThreads, VideoDecoder};

mod decode;
mod scan;

/// Demuxer plus decoder for the main video stream of one file, with the ledger of what was
/// read.
pub struct VideoReader {
    demuxer: Demuxer,
    decoder: VideoDecoder,
    ledger: IntegrityLedger,
    bounds: FrameBounds,
    /// A frame inside the bounds was passed on.
    in_bounds: bool,
    /// Frames decoded and not yet placed on the timeline (`decode::place_decoded`).
    unplaced: VecDeque<Unplaced>,
    pending: VecDeque<DecodedFrame>,
    /// The first frames of `pending` had no timestamp and none before them had one: held
    /// until a timed frame says where they go (at most `decode::MAX_LEADING`).
    leading: usize,
    next_index: u64,
    finished: bool,
    stats: DecodeStats,
    /// The closed captions of the frames handed out, for the encoder.
    captions: std::sync::Arc<crate::captions::CaptionStore>,
    /// Packets read past one whose time leapt, to be handed out next (`next_packet`), each
    /// with where it stands among the parts joined.
    ahead: VecDeque<(Packet, PartOf)>,
    /// The demuxer has no more packets (the end of the file, or it gave up).
    drained: bool,
    /// Copied packets read ahead by `corrected_starts`, to be handed out next.
    peeked: VecDeque<CopiedPacket>,
}

/// A decoded frame waiting for its place on the timeline, with what the decoder said of it.
struct Unplaced {
    raw_pts: Option<i64>,
    damaged: bool,
    interlaced: bool,
    keyframe: bool,
    captions: Option<Vec<u8>>,
    image: DecodedImage,
}

impl VideoReader {
    /// How many decoded frames a reader holds back before handing them out (until the
    /// frames after each show whether its timestamp is in line): NVDEC surfaces it needs
    /// beyond those held downstream.
    pub const FRAMES_HELD: usize = crate::timeline::PLACING_LOOKAHEAD;
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
        Self::open_checked(path, nvdec, None, FrameBounds::default(), 0.into())
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
        Self::open_checked(
            self.path(),
            nvdec,
            Some(self.ledger.structure()),
            bounds,
            0.into(),
        )
    }

    /// Open `path` for the frames within `bounds` when its structure was already checked and
    /// found to have `structure` (a segment worker of a planned job); a software decoder
    /// runs `threads` threads (0: FFmpeg's choice, one per core).
    pub fn open_within(
        path: &Path,
        nvdec: Option<(&CudaDevice, i32)>,
        bounds: FrameBounds,
        structure: Option<crate::structure_check::StructureProblem>,
        threads: DecoderThreads,
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
        threads: DecoderThreads,
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
            unplaced: VecDeque::new(),
            pending: VecDeque::new(),
            leading: 0,
            next_index: bounds.first_index,
            finished: false,
            stats: DecodeStats {
                nvdec_refused: decoder.nvdec_refused().map(str::to_owned),
                ..Default::default()
            },
            decoder,
            captions: Default::default(),
            ahead: VecDeque::new(),
            peeked: VecDeque::new(),
            drained: false,
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

    /// Where the closed captions of the frames handed out wait for an encoder that writes
    /// them (`CaptionStore::keep`).
    pub fn captions(&self) -> std::sync::Arc<crate::captions::CaptionStore> {
        self.captions.clone()
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

    /// The next packet of the file, its read and any timestamp restart noted. A packet
    /// whose time leaps far ahead is held until its stream's next packets say whether it
    /// was damage (`IntegrityLedger::confirms_leap`): the packets read meanwhile wait in
    /// `ahead`, and a damaged one goes on untimed (video), put back in its place or not at
    /// all (audio).
    fn next_packet(&mut self) -> Option<Packet> {
        loop {
            // Every packet is judged as it is handed out, those read ahead too (two damaged
            // packets may fall in one read-ahead).
            let (mut packet, part) = match self.ahead.pop_front() {
                Some(p) => p,
                None => self.demux_one()?,
            };
            // Told as the packet is handed out: packets read ahead of it are later parts'.
            self.ledger.on_video_parts(part.parts, part.of_part_before);
            if !self.ledger.leaps_ahead(&packet) {
                return Some(packet);
            }
            // Its stream's next packets: the first tells whether it came back (for audio,
            // the first past those that moved with it); a video frame's place is told by
            // its neighbours in presentation order.
            let stream = packet.stream();
            let wanted = match self.ledger.is_video(stream) {
                true => SLOT_NEIGHBOURS,
                false => RUN_PACKETS,
            };
            let later = self.ahead_of(stream, wanted);
            let later: Vec<&Packet> = later.iter().map(|&i| &self.ahead[i].0).collect();
            if !self.ledger.confirms_leap(&packet, &later)
                || self.ledger.on_leap(&mut packet, &later)
            {
                return Some(packet);
            }
        }
    }

    /// Read ahead until `ahead` holds `count` packets of `stream` (or
    /// [`LOOKAHEAD_PACKETS`], or the file ends); where in `ahead` those it holds are.
    fn ahead_of(&mut self, stream: usize, count: usize) -> Vec<usize> {
        let mut found: Vec<usize> = (self.ahead.iter().enumerate())
            .filter(|(_, (p, _))| p.stream() == stream)
            .map(|(i, _)| i)
            .take(count)
            .collect();
        while found.len() < count && self.ahead.len() < LOOKAHEAD_PACKETS {
            let Some(read) = self.demux_one() else {
                break;
            };
            let same = read.0.stream() == stream;
            self.ahead.push_back(read);
            if same {
                found.push(self.ahead.len() - 1);
            }
        }
        found
    }

    /// One packet read from the demuxer, its read and any timestamp restart noted; `None`
    /// from the end of the file (or the demuxer giving up) on, without asking it again.
    fn demux_one(&mut self) -> Option<(Packet, PartOf)> {
        if self.drained {
            return None;
        }
        let packet = self.read_from_demuxer();
        self.drained = packet.is_none();
        if let Some((p, _)) = &packet
            && !self.ledger.knows_stream(p.stream())
            && self
                .demuxer
                .input()
                .stream(p.stream())
                .is_some_and(|s| s.parameters().medium() == ffmpeg_next::media::Type::Audio)
        {
            self.ledger.on_late_audio(p.stream());
        }
        packet
    }

    /// The demuxer's next packet, the ledger told of each read (one it drops as repeated
    /// data too: what FFmpeg logged while reading it belongs to that read), and where it
    /// stands among the parts joined.
    fn read_from_demuxer(&mut self) -> Option<(Packet, PartOf)> {
        loop {
            let ledger = &mut self.ledger;
            let read = self.demuxer.next_packet(|e| ledger.on_read_error(e));
            self.note_read();
            let part = PartOf {
                parts: self.demuxer.video_parts(),
                of_part_before: self.demuxer.of_part_before(),
            };
            match read {
                Some(Demuxed::Repeated) => continue,
                Some(Demuxed::Packet(packet)) => return Some((packet, part)),
                None => return None,
            }
        }
    }

    /// Tell the ledger of a read of the demuxer, and what it found.
    fn note_read(&mut self) {
        self.ledger.on_read();
        if self.demuxer.timestamp_resets().len() != self.stats.timestamp_resets.len() {
            self.note_resets();
        }
        for r in self.demuxer.take_repaired() {
            self.ledger.on_repaired(&r);
        }
        if self.demuxer.timestamp_steps().len() != self.stats.timestamp_steps.len() {
            self.stats.timestamp_steps = self.demuxer.timestamp_steps().to_vec();
        }
    }

    fn note_resets(&mut self) {
        self.stats.timestamp_resets = self.demuxer.timestamp_resets().to_vec();
        self.ledger.on_resets(&self.stats.timestamp_resets);
    }
}

/// Where a packet stands among the parts joined, as the demuxer handed it out: the parts
/// whose video had started (`Demuxer::video_parts`), and whether it is one of the part
/// before the latest join, handed out late (`Demuxer::of_part_before`).
#[derive(Debug, Clone, Copy)]
struct PartOf {
    parts: usize,
    of_part_before: bool,
}

/// Duration of one frame in time-base units, with its fraction (at least 1).
pub(crate) fn frame_step(time_base: Rational, rate: Rational) -> f64 {
    if rate.numerator() <= 0 || time_base.numerator() <= 0 {
        return 1.0;
    }
    let step = (f64::from(time_base.denominator()) * f64::from(rate.denominator()))
        / (f64::from(time_base.numerator()) * f64::from(rate.numerator()));
    step.max(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rave_core::codec::FrameSource;

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
                VideoReader::open_within(&clip, None, FrameBounds::default(), None, threads.into())
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
