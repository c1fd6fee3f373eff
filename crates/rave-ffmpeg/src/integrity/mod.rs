//! `IntegrityLedger`: everything reading one input saw, stream by stream, held against what
//! its container declares (sample counts, frame-count and duration tags, durations, its own
//! structure), plus every error the demuxer and the video decoder reported. It decides what
//! was lost: `InputDamage` (`verdict`); each stream's own counts are a `StreamTally`; a
//! packet whose timestamp leaps is judged in `leaps`.

use ffmpeg_next::Packet;
use ffmpeg_next::format::context::Input;
use ffmpeg_next::media::Type;

use crate::audio_check::AudioVerdict;
use crate::continuity::SeamForgiveness;
pub use crate::declared::Declared;
use crate::declared::declared_of;
use crate::decodable_leading::LeadingCheck;
use crate::decoder_log::DecoderLog;
use crate::demuxer::{OpenErrors, Repaired};
use crate::leading_packets::LeadingPackets;
use crate::log_watch::LogWatch;
use crate::structure_check::{self, StructureProblem};
use crate::sys;
use crate::timeline::{Placement, VideoTimeline};

mod hidden_past_end;
mod leading;
mod leaps;
mod outliers;
mod stream_tally;
mod verdict;

pub(crate) use outliers::{LOOKAHEAD_PACKETS, RUN_PACKETS, SLOT_NEIGHBOURS};

use stream_tally::{Role, StreamTally};

/// The counts of one input, kept while it is read.
#[derive(Debug)]
pub struct IntegrityLedger {
    video: usize,
    streams: Vec<StreamTally>,
    timeline: VideoTimeline,
    structure: Option<StructureProblem>,
    /// The declared end of the whole file in seconds (from its header), if declared.
    file_end_s: Option<f64>,
    /// Where the file's earliest stream starts (times in messages count from here).
    start_s: f64,
    demux_log: LogWatch,
    decoder_log: Option<DecoderLog>,
    read_errors: u64,
    corrupt_packets: u64,
    rejected_packets: u64,
    packets_sent: u64,
    frames_out: u64,
    frames_damaged: u64,
    packets_dropped: u64,
    /// Video frames and other packets of copies written twice in a row, dropped
    /// (`on_repaired`).
    repeated_frames: u64,
    repeated_packets: u64,
    interlaced: bool,
    scanned: bool,
    /// Presentation timestamps of every video packet (for gaps in the timeline).
    video_pts: Vec<i64>,
    /// Those of the video packets the container discards (an MP4 edit list's pre-roll and
    /// the frames past its end).
    hidden_video_pts: Vec<i64>,
    /// Video packets without one: each fills a slot that looks like a gap.
    untimed_video: u64,
    /// Where the timestamps restarted (seconds of the spliced timeline): the splice leaves
    /// a hole in the video where another stream of the first part ran longer, which is no
    /// frame lost.
    resets_s: Vec<f64>,
    note: Option<String>,
    /// A problem that explains the others (`Repaired::explains_others`): the first said.
    cause: Option<String>,
    /// What decoding the audio found (only a read of the whole file decodes it).
    audio: AudioVerdict,
    /// Video packets before the first decodable picture (a capture that starts mid-GOP,
    /// or on an open GOP): no decoder can make pictures of them.
    leading: LeadingPackets,
    /// Parts joined met so far, whose video starts anew (`on_video_parts`), and whether
    /// the packet read last is one of the part before handed out late.
    video_parts: usize,
    of_part_before: bool,
    /// The demuxer's continuity errors and corrupt packets, those at the seams of joined
    /// streams forgiven.
    continuity: SeamForgiveness,
    /// In MPEG-TS, each stream's PID (empty in other containers).
    transport_pids: Vec<Option<u32>>,
    /// The video stream's container ID (an MP4 track ID, which a fragment index names).
    video_track: Option<u32>,
    /// What the video decoder probing the first packets logged, when the reading starts at
    /// the file's start (see `on_open_errors`).
    video_probe_errors: Vec<String>,
    /// Streams whose start FFmpeg's start time gets wrong, and where each starts (the
    /// stream's time base): a first packet whose timestamp was damaged and put back
    /// (`leaps`; FFmpeg's start is the damaged time), a video stream whose packets carry a
    /// decode time only (FFmpeg's start is the file's, which may be the sound's).
    corrected_starts: Vec<(usize, i64)>,
    /// The reading starts at the file's start: a stream's first packets are the file's,
    /// judged by the packets after them (after a seek they are wherever it landed, and the
    /// other streams are not counted).
    from_start: bool,
}

/// How long (seconds) after it is decoded a keyframe may be shown: more than any B-frame
/// reordering holds one back; a longer wait is a damaged presentation time.
const LEADING_REORDER_MAX_S: f64 = 1.0;

impl IntegrityLedger {
    /// Start the ledger of `input` (the file at `path`) whose video stream is `video`:
    /// read what the container declares, check its structure (unless `structure` holds the
    /// verdict of an earlier check of the same file), watch the demuxer's log.
    pub fn new(
        input: &Input,
        path: &std::path::Path,
        video: usize,
        timeline: VideoTimeline,
        structure: Option<Option<StructureProblem>>,
    ) -> Self {
        let format = input.format().name().to_owned();
        // AVI headers count audio in muxer-specific blocks (FFmpeg's own AVI muxer declares
        // 98 AAC frames, 2.09 s, for the 95 it writes in a remux), so AVI durations are not
        // held against the streams; its RIFF chunk structure is checked instead.
        let avi = crate::declared::is_avi(&format);
        let declared_times = sys::durations_are_declared(input) && !avi;
        let phantoms = crate::flv_phantoms::phantom_streams(input, &format, video);
        let unread = |index| {
            crate::stream_plan::missing_parameters(sys::stream_params(input, index)).is_some()
        };
        let streams: Vec<StreamTally> = input
            .streams()
            .map(|s| {
                let role = match s.parameters().medium() {
                    _ if s.index() == video => Role::Video,
                    _ if phantoms.contains(&s.index()) => Role::Phantom,
                    Type::Audio | Type::Video if unread(s.index()) => Role::Unread,
                    Type::Audio => Role::Audio,
                    Type::Subtitle | Type::Video => Role::Other,
                    _ => Role::Ignored,
                };
                let declared = declared_of(input, s.index(), &format, declared_times);
                let mut tally = StreamTally::new(role, s.time_base(), declared);
                // Video packets without durations (an MP4 with B-frames and a variable
                // rate, say) last a frame: the stream's end is its last frame's, not its
                // start, and its shortfall is held to a frame and a half, not to 2 ms.
                if role == Role::Video {
                    tally.typical = timeline.step();
                    tally.reorder_frames = i64::from(sys::stream_params(input, video).video_delay);
                }
                tally
            })
            .collect();
        // A header's duration is the end of the timeline for some muxers (FFmpeg's Matroska,
        // MP4 and FLV writers: a file starting at 1.5 s that lasts 2 s declares 3.5 s) and the
        // span from the first timestamp for others (mkvmerge). Holding the streams to the
        // earlier of the two readings never refuses a complete file; a file cut short by more
        // than its start time is still caught.
        let file_end_s = crate::declared::file_end_s(input, &format, declared_times);
        // The reordering a keyframe's time may show, in the video's time base (at least a
        // tick).
        let reorder_max = match streams.get(video).map_or(0.0, |t| t.unit_s) {
            unit if unit > 0.0 => (LEADING_REORDER_MAX_S / unit).round().max(1.0) as i64,
            _ => i64::MAX,
        };
        Self {
            video,
            streams,
            timeline,
            structure: structure.unwrap_or_else(|| structure_check::check(path, &format)),
            file_end_s,
            start_s: crate::output_timeline::earliest_start_s(input),
            // SAFETY: the pointer is only compared with the ones FFmpeg logs with.
            demux_log: LogWatch::demuxer(unsafe { input.as_ptr() }),
            decoder_log: None,
            read_errors: 0,
            corrupt_packets: 0,
            rejected_packets: 0,
            packets_sent: 0,
            frames_out: 0,
            frames_damaged: 0,
            packets_dropped: 0,
            repeated_frames: 0,
            repeated_packets: 0,
            interlaced: false,
            scanned: false,
            video_pts: Vec::new(),
            hidden_video_pts: Vec::new(),
            untimed_video: 0,
            resets_s: Vec::new(),
            note: None,
            cause: None,
            audio: AudioVerdict::default(),
            leading: LeadingPackets::new(LeadingCheck::for_codec(
                sys::stream_params(input, video).codec_id.into(),
            ))
            .with_reorder_max(reorder_max),
            video_parts: 0,
            of_part_before: false,
            continuity: SeamForgiveness::default(),
            video_probe_errors: Vec::new(),
            corrected_starts: Vec::new(),
            from_start: true,
            video_track: input.stream(video).and_then(|s| u32::try_from(s.id()).ok()),
            transport_pids: match format.split(',').any(|f| f == "mpegts") {
                true => input
                    .streams()
                    .map(|s| u32::try_from(s.id()).ok())
                    .collect(),
                false => Vec::new(),
            },
        }
    }

    /// A packet was read (before it is admitted): what the demuxer logged reading it.
    pub fn on_read(&mut self) {
        let logged = self.demux_log.tally().take_continuity();
        self.continuity.on_read(logged);
    }

    /// The demuxer mended or found damage (`r.text` says what, and how: a damaged packet
    /// put back, a copy of a stretch written twice in a row dropped, a stream's codec
    /// changing): the video frames and other packets it dropped count as dropped duplicates.
    pub fn on_repaired(&mut self, r: &Repaired) {
        self.corrupt_packets += 1;
        self.repeated_frames += r.frames_dropped;
        self.repeated_packets += r.packets_dropped;
        match r.explains_others {
            true => _ = self.cause.get_or_insert_with(|| r.text.clone()),
            false => self.note(|| r.text.clone()),
        }
    }

    /// The timestamps restarted at `at_s` (seconds of the spliced timeline, each); the
    /// latest restart showed at the packet read last.
    pub fn on_resets(&mut self, at_s: &[f64]) {
        if at_s.len() > self.resets_s.len() {
            self.continuity.on_restart();
            let new = &at_s[self.resets_s.len()..];
            for t in self.streams.iter_mut().filter(|t| t.unit_s > 0.0) {
                t.joins
                    .extend(new.iter().map(|s| (s / t.unit_s).round() as i64));
            }
        }
        self.resets_s = at_s.to_vec();
    }

    /// The verdict of the structure check (to open the same file again without repeating it).
    pub fn structure(&self) -> Option<StructureProblem> {
        self.structure.clone()
    }

    /// Count what the video decoder logs from now on.
    pub fn watch_decoder(&mut self, watch: LogWatch) {
        self.decoder_log = Some(DecoderLog::new(watch));
    }

    fn note(&mut self, text: impl FnOnce() -> String) {
        if self.note.is_none() {
            self.note = Some(text());
        }
    }

    /// FFmpeg logged `errors` while opening the input (headers it could not parse, first
    /// packets its video decoder could not decode). `from_start`: this reading starts at
    /// the file's start (no seek), so its leading packets are the file's: the video
    /// decoder's words count where there are none, and are about them where there are.
    pub fn on_open_errors(&mut self, errors: OpenErrors, from_start: bool) {
        self.from_start = from_start;
        self.read_errors += errors.demuxer.len() as u64;
        if let Some(first) = errors.demuxer.into_iter().next() {
            self.note(|| first);
        }
        if from_start {
            self.video_probe_errors = errors.video_probe;
        }
    }

    /// A read failed with `error` (the demuxer skips on or gives up).
    pub fn on_read_error(&mut self, error: &ffmpeg_next::Error) {
        self.read_errors += 1;
        self.note(|| format!("read error: {error}"));
    }

    /// Tally a demuxed packet; whether it may be passed on. Packets of copied streams
    /// whose decode timestamp does not advance are refused (no muxer can store them).
    pub fn admit(&mut self, packet: &Packet) -> bool {
        let index = packet.stream();
        let Some(t) = self.streams.get_mut(index) else {
            return false;
        };
        match t.role {
            // Not copied (data streams): their packets' flags and timestamps lose nothing.
            Role::Ignored => return false,
            // Packets of a stream left out for want of parameters: lost (said once).
            Role::Unread => {
                t.packets += 1;
                if t.packets == 1 {
                    self.corrupt_packets += 1;
                    self.note(|| {
                        format!(
                            "stream #{index} has packets, but FFmpeg could not read its parameters while opening the file (parts joined with other transport PIDs, say): they are not in the output"
                        )
                    });
                }
                return false;
            }
            // A damaged FLV tag: its bytes belong to the file's real stream of its kind.
            Role::Phantom => {
                let at = packet.pts().unwrap_or(0) as f64 * t.unit_s - self.start_s;
                self.corrupt_packets += 1;
                self.note(|| {
                    format!(
                        "stream #{index} at {:.3} s: an FLV tag whose codec flags disagree with the file's stream of its kind (its header is damaged)",
                        at.max(0.0)
                    )
                });
                return false;
            }
            _ => {}
        }
        // A video stream whose packets carry a decode time only (ASF): FFmpeg takes the
        // file's start, which may be the sound's, for its start time; it starts here.
        if t.role == Role::Video
            && t.packets == 0
            && packet.pts().is_none()
            && let Some(dts) = packet.dts()
        {
            self.corrected_starts.push((index, dts));
        }
        let start = t.count(packet);
        let (role, unit_s) = (t.role, t.unit_s);
        if role == Role::Video {
            // Leading frames are no slots of the timeline (unless no keyframe ever comes:
            // `timeline_pts`).
            let data = packet.data().unwrap_or_default();
            let first_key = packet.is_key() && !self.leading.keyframe_read();
            let leading = match self.of_part_before {
                true => self.leading.on_read_of_part_before(packet.pts()),
                false => (self.leading).on_read(packet.is_key(), packet.pts(), packet.dts(), data),
            };
            // A reading that starts on an H.264 recovery point (an open GOP's keyframe, a
            // copy cut from one): what the decoder says of the references before it, in its
            // first GOP, is stale, as where a reading skips leading pictures.
            if first_key
                && self.leading.starts_on_recovery_point()
                && let Some(log) = &mut self.decoder_log
            {
                log.on_leading_skipped();
            }
            match packet.pts() {
                Some(pts) if !leading => {
                    self.video_pts.push(pts);
                    if sys::packet_is_discarded(packet) {
                        self.hidden_video_pts.push(pts);
                    }
                }
                Some(_) => {}
                None => self.untimed_video += 1,
            }
        }
        let corrupt = packet.is_corrupt();
        let admitted = role == Role::Video || t.in_order(packet);
        if corrupt {
            let at = (start.unwrap_or(0) as f64 * unit_s - self.start_s).max(0.0);
            let text = format!("corrupt packet in stream #{index} at {at:.3} s");
            match self.transport_pids.get(index) {
                // In MPEG-TS the flag may come from the seam of a join (see `continuity`).
                Some(&pid) => self.continuity.on_corrupt(pid, text),
                None => {
                    self.corrupt_packets += 1;
                    self.note(|| text);
                }
            }
        }
        if !admitted {
            self.packets_dropped += 1;
            let at = packet.dts().unwrap_or(0) as f64 * unit_s;
            self.note(|| format!("stream #{index}: timestamps go backwards at {at:.3} s"));
        }
        admitted
    }

    /// The streams whose start FFmpeg's start time gets wrong, and where each starts (its
    /// time base): see the field.
    pub fn corrected_starts(&self) -> &[(usize, i64)] {
        &self.corrected_starts
    }

    /// Whether every video and audio stream has had a packet counted.
    pub fn every_stream_started(&self) -> bool {
        (self.streams.iter())
            .filter(|t| matches!(t.role, Role::Video | Role::Audio))
            .all(|t| t.latest_s.is_some())
    }

    /// Whether the ledger knows stream `index` (FFmpeg adds a stream it meets only after
    /// opening the file, past its probe: the output's streams are fixed by then).
    pub fn knows_stream(&self, index: usize) -> bool {
        index < self.streams.len()
    }

    /// A packet of audio stream `index`, which FFmpeg found only after the file was opened
    /// (a codec switch for good past the probe, say): it cannot be copied, so the audio it
    /// carries is lost, which a complete run must not hide.
    pub fn on_late_audio(&mut self, index: usize) {
        self.packets_dropped += 1;
        self.note(|| {
            format!(
                "audio stream #{index} appears only after the start FFmpeg reads to open the file (its codec changes there, say): its packets cannot be copied into the output, whose streams are fixed by then"
            )
        });
    }

    /// What decoding the audio of the whole file found. Kept apart from `damage_seen`: it
    /// says nothing about the video, whose decoding goes on.
    pub fn on_audio_check(&mut self, verdict: AudioVerdict) {
        self.audio = verdict;
    }

    /// The presentation times of the video timeline: those of the leading packets are
    /// left out, unless no keyframe came.
    fn timeline_pts(&self) -> Vec<i64> {
        let mut pts = [&self.leading.unkeyed_pts()[..], &self.video_pts].concat();
        // A frame put back in line fills the place it went to, not the one its packet said.
        for &(own, at) in &self.timeline.moved {
            if let Some(p) = pts.iter_mut().rev().find(|p| **p == own) {
                *p = at;
            }
        }
        pts
    }

    /// Decoding stopped; the rest of the file is only read.
    pub fn on_scan(&mut self) {
        self.scanned = true;
    }

    /// `n` copied packets were refused by the muxer as invalid; `first` says why.
    pub fn on_refused(&mut self, n: u64, first: Option<String>) {
        self.packets_dropped += n;
        if let Some(text) = first {
            self.note(|| text);
        }
    }

    /// A video packet went to the decoder; a `discarded` one (FFmpeg's discard flag: decoded
    /// only as a reference, before an edit list's start) is expected to yield no frame.
    /// It must follow the packet's `admit`.
    pub fn on_sent(&mut self, discarded: bool) {
        self.leading.on_sent(discarded);
        if !discarded {
            self.packets_sent += 1;
        } else if let Some(log) = &mut self.decoder_log {
            // An edit list's pre-roll (a cut made by stream copy, from the keyframe before
            // the cut): decoded, not shown, like the leading pictures a reading skips, and
            // what the decoder says of the references before it is as stale.
            log.on_leading_skipped();
        }
    }

    /// Errors the decoder logged or reported so far are not counted (they were about
    /// references decoded before a segment's first frame).
    pub fn forget_decoder_errors(&mut self) {
        self.rejected_packets = 0;
        if let Some(log) = &mut self.decoder_log {
            log.forget();
        }
    }

    /// The decoder refused a video packet.
    pub fn on_rejected(&mut self, error: &ffmpeg_next::Error) {
        self.rejected_packets += 1;
        self.note(|| format!("the decoder refused a packet: {error}"));
    }

    /// A frame came out of the decoder (`key`: a keyframe), inside the reading's bounds or
    /// not.
    pub fn on_decoded(&mut self, key: bool) {
        if let Some(log) = &mut self.decoder_log {
            log.on_frame_out(key);
        }
    }

    /// Place a decoded frame whose timestamp is `pts` on the timeline; `later`: the
    /// timestamps of the frames decoded after it (up to `timeline::PLACING_LOOKAHEAD`).
    pub fn place_frame(
        &mut self,
        pts: Option<i64>,
        later: &[Option<i64>],
        damaged: bool,
        interlaced: bool,
    ) -> Placement {
        self.frames_out += 1;
        self.interlaced |= interlaced;
        if damaged {
            self.frames_damaged += 1;
        }
        let t = &self.timeline;
        let (discontinuities, moved, dropped) =
            (t.discontinuities, t.moved.len(), t.out_of_line_dropped);
        let placed = self.timeline.place(pts, later);
        let n = self.frames_out;
        let unit_s = self.streams[self.video].unit_s;
        if self.timeline.discontinuities > discontinuities {
            self.note(|| format!("video timestamps go backwards at frame {n}"));
        } else if let Some(&(own, at)) = self.timeline.moved.get(moved) {
            let (own_s, at_s) = (own as f64 * unit_s, at as f64 * unit_s);
            self.note(|| {
                format!(
                    "frame {n}'s timestamp ({own_s:.3} s) is out of line with the frames around it, which leave {at_s:.3} s free: it is damaged, so the frame is put there"
                )
            });
        } else if self.timeline.out_of_line_dropped > dropped {
            self.note(|| {
                format!(
                    "frame {n}'s timestamp is out of line with the frames around it, which leave no place free: it is damaged, and the frame is dropped"
                )
            });
        }
        placed
    }

    /// Frames placed [`Placement::Leading`] were given timestamps up to `last` (no timed
    /// frame came after them soon enough).
    pub fn settle_leading(&mut self, last: i64) {
        self.timeline.settle_leading(last);
    }

    /// Duration of one frame in the video's time base.
    pub fn frame_step(&self) -> i64 {
        self.timeline.step()
    }

    /// How long the video's last frame (the latest in presentation order) lasts, in the
    /// video's time base: where its packets end past its start (its container's own
    /// duration where it stores one). `None` without a timed frame.
    pub fn last_frame_ticks(&self) -> Option<i64> {
        let last = *self.video_pts.iter().max()?;
        self.streams[self.video]
            .end
            .map(|end| end - last)
            .filter(|&d| d > 0)
    }

    /// Whether a decoded frame was interlaced.
    pub fn saw_interlaced(&self) -> bool {
        self.interlaced
    }

    /// Demuxer errors counted as damage (`at_end`: the reading is over, no continuity error
    /// is held any more for a join that may show).
    fn demux_errors(&self, at_end: bool) -> u64 {
        self.read_errors
            + self.corrupt_packets
            + self.demux_log.tally().count()
            + self.continuity.errors(at_end)
            + self.video_probe_errors(at_end)
            + self.structure.as_ref().map_or(0, |p| p.count)
    }

    fn decoder_errors(&self) -> u64 {
        self.rejected_packets + self.decoder_log.as_ref().map_or(0, DecoderLog::errors)
    }

    /// Whether any damage has been seen so far (what the end of the file may still reveal,
    /// such as a timeline shorter than declared, is not included).
    pub fn damage_seen(&self) -> bool {
        self.demux_errors(false) > 0
            || self.decoder_errors() > 0
            || self.frames_damaged > 0
            || self.packets_dropped > 0
            || self.timeline.duplicates > 0
            || self.timeline.discontinuities > 0
            || !self.timeline.moved.is_empty()
    }
}
