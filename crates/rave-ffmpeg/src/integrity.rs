//! `IntegrityLedger`: everything reading one input saw, stream by stream, held against what
//! its container declares (sample counts, frame-count and duration tags, durations, its own
//! structure), plus every error the demuxer and the video decoder reported. It decides what
//! was lost: `InputDamage`.

use ffmpeg_next::format::context::Input;
use ffmpeg_next::media::Type;
use ffmpeg_next::{Packet, Rational};
use rave_core::damage::InputDamage;

use crate::audio_check::AudioVerdict;
use crate::continuity::SeamForgiveness;
pub use crate::declared::Declared;
use crate::declared::declared_of;
use crate::decodable_leading::LeadingCheck;
use crate::decoder_log::DecoderLog;
use crate::demuxer::OpenErrors;
use crate::leading_packets::LeadingPackets;
use crate::log_watch::LogWatch;
use crate::structure_check::{self, StructureProblem};
use crate::sys;
use crate::timeline::{self, Placement, VideoTimeline};

/// The role of a stream in the checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Video,
    Audio,
    /// Copied but not audio (subtitles): equal timestamps are allowed.
    Other,
    /// Not read (data streams, attachments).
    Ignored,
}

/// One stream's tally.
#[derive(Debug, Clone)]
struct StreamTally {
    role: Role,
    /// Seconds per time-base unit.
    unit_s: f64,
    declared: Declared,
    packets: u64,
    /// The latest `pts + duration` seen.
    end: Option<i64>,
    last_dts: Option<i64>,
    /// CRC-32 of the last admitted packet's data (to tell a repeated packet from one that
    /// only shares its timestamp).
    last_data: u32,
    /// The last nonzero packet duration.
    typical: i64,
    /// Where the previous packet ended (`pts + duration`), for gaps between packets.
    last_end: Option<i64>,
    /// Time-base units of gaps between consecutive packets wider than 1.5 packets.
    gaps: i64,
    /// Where the previous packet started: the spacing stands for a duration where no
    /// packet carries one (ALAC in Matroska).
    last_start: Option<i64>,
}

impl StreamTally {
    fn new(role: Role, tb: Rational, declared: Declared) -> Self {
        let unit_s = match tb.denominator() {
            0 => 0.0,
            d => f64::from(tb.numerator()) / f64::from(d),
        };
        Self {
            role,
            unit_s,
            declared,
            packets: 0,
            end: None,
            last_dts: None,
            last_data: 0,
            typical: 0,
            last_end: None,
            gaps: 0,
            last_start: None,
        }
    }

    fn end_s(&self) -> Option<f64> {
        self.end.map(|e| e as f64 * self.unit_s)
    }

    fn typical_s(&self) -> f64 {
        self.typical as f64 * self.unit_s
    }

    /// Seconds the stream falls short of `declared_end_s` by, beyond 1.5 packets; a stream
    /// with no packet at all is short from `start_s`.
    fn shortfall_s(&self, declared_end_s: f64, start_s: f64) -> f64 {
        let tolerance = 1.5 * self.typical_s() + 0.002;
        let short = declared_end_s - self.end_s().unwrap_or(start_s);
        if short > tolerance { short } else { 0.0 }
    }

    fn declared_end_s(&self) -> Option<f64> {
        self.declared.end.map(|e| e as f64 * self.unit_s)
    }
}

/// The counts of one input, kept while it is read.
#[derive(Debug)]
pub struct IntegrityLedger {
    video: usize,
    streams: Vec<StreamTally>,
    timeline: VideoTimeline,
    structure: Option<StructureProblem>,
    /// The declared end of the whole file in seconds (from its header), if declared.
    file_end_s: Option<f64>,
    demux_log: LogWatch,
    decoder_log: Option<DecoderLog>,
    read_errors: u64,
    corrupt_packets: u64,
    rejected_packets: u64,
    packets_sent: u64,
    frames_out: u64,
    frames_damaged: u64,
    packets_dropped: u64,
    interlaced: bool,
    scanned: bool,
    /// Presentation timestamps of every video packet (for gaps in the timeline).
    video_pts: Vec<i64>,
    /// Video packets without one: each fills a slot that looks like a gap.
    untimed_video: u64,
    /// Where the timestamps restarted (seconds of the spliced timeline): the splice leaves
    /// a hole in the video where another stream of the first part ran longer, which is no
    /// frame lost.
    resets_s: Vec<f64>,
    note: Option<String>,
    /// What decoding the audio found (only a read of the whole file decodes it).
    audio: AudioVerdict,
    /// Video packets before the first decodable picture (a capture that starts mid-GOP,
    /// or on an open GOP): no decoder can make pictures of them.
    leading: LeadingPackets,
    /// The demuxer's continuity errors and corrupt packets, those at the seams of joined
    /// streams forgiven.
    continuity: SeamForgiveness,
    /// In MPEG-TS, each stream's PID (empty in other containers).
    transport_pids: Vec<Option<u32>>,
    /// What the video decoder probing the first packets logged, when the reading starts at
    /// the file's start (see `on_open_errors`).
    video_probe_errors: Vec<String>,
}

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
        let avi = format.split(',').any(|f| f == "avi");
        let declared_times = sys::durations_are_declared(input) && !avi;
        let streams = input
            .streams()
            .map(|s| {
                let role = match s.parameters().medium() {
                    _ if s.index() == video => Role::Video,
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
                }
                tally
            })
            .collect();
        // A header's duration is the end of the timeline for some muxers (FFmpeg's Matroska,
        // MP4 and FLV writers: a file starting at 1.5 s that lasts 2 s declares 3.5 s) and the
        // span from the first timestamp for others (mkvmerge). Holding the streams to the
        // earlier of the two readings never refuses a complete file; a file cut short by more
        // than its start time is still caught.
        let file_end_s =
            (declared_times && input.duration() > 0).then(|| input.duration() as f64 / 1e6);
        Self {
            video,
            streams,
            timeline,
            structure: structure.unwrap_or_else(|| structure_check::check(path, &format)),
            file_end_s,
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
            interlaced: false,
            scanned: false,
            video_pts: Vec::new(),
            untimed_video: 0,
            resets_s: Vec::new(),
            note: None,
            audio: AudioVerdict::default(),
            leading: LeadingPackets::new(LeadingCheck::for_codec(
                sys::stream_params(input, video).codec_id.into(),
            )),
            continuity: SeamForgiveness::default(),
            video_probe_errors: Vec::new(),
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

    /// The timestamps restarted at `at_s` (seconds of the spliced timeline, each); the
    /// latest restart showed at the packet read last.
    pub fn on_resets(&mut self, at_s: &[f64]) {
        if at_s.len() > self.resets_s.len() {
            self.continuity.on_restart();
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
        self.read_errors += errors.demuxer.len() as u64;
        if let Some(first) = errors.demuxer.into_iter().next() {
            self.note(|| first);
        }
        if from_start {
            self.video_probe_errors = errors.video_probe;
        }
    }

    /// The video probe's errors counted (`at_end`: the reading is over): once the leading
    /// packets are known to be none.
    fn video_probe_errors(&self, at_end: bool) -> u64 {
        let known = at_end || self.leading.settled();
        match known && self.leading.read() == 0 {
            true => self.video_probe_errors.len() as u64,
            false => 0,
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
        if t.role == Role::Ignored {
            // Not copied (data streams): their packets' flags and timestamps lose nothing.
            return false;
        }
        t.packets += 1;
        if packet.duration() > 0 {
            t.typical = packet.duration();
        }
        let start = packet.pts().or(packet.dts());
        if t.role == Role::Audio {
            if t.typical == 0
                && let (Some(s), Some(previous)) = (start, t.last_start)
                && s > previous
            {
                t.typical = s - previous;
            }
            t.last_start = start.or(t.last_start);
        }
        if let Some(s) = start {
            let dur = if packet.duration() > 0 {
                packet.duration()
            } else {
                t.typical
            };
            t.end = Some(t.end.map_or(s + dur, |e| e.max(s + dur)));
            if t.role == Role::Audio {
                if let Some(last) = t.last_end
                    && s - last > t.typical + t.typical / 2
                {
                    t.gaps += s - last;
                }
                t.last_end = Some(s + dur);
            }
        }
        let (role, unit_s) = (t.role, t.unit_s);
        if role == Role::Video {
            // Leading frames are no slots of the timeline (unless no keyframe ever comes:
            // `timeline_pts`).
            let data = packet.data().unwrap_or_default();
            let leading = self.leading.on_read(packet.is_key(), packet.pts(), data);
            match packet.pts() {
                Some(pts) if !leading => self.video_pts.push(pts),
                Some(_) => {}
                None => self.untimed_video += 1,
            }
        }
        let corrupt = packet.is_corrupt();
        let mut admitted = true;
        if role != Role::Video
            && let Some(dts) = packet.dts()
        {
            // Two audio packets may share a rounded timestamp (a join in millisecond
            // Matroska); the same packet twice is duplicated data.
            let data = packet.data().map_or(0, crc32fast::hash);
            let repeated = t.last_dts == Some(dts) && role == Role::Audio && t.last_data == data;
            let backwards = t.last_dts.is_some_and(|last| dts < last) || repeated;
            let inverted = packet.pts().is_some_and(|pts| pts < dts);
            if backwards || inverted {
                admitted = false;
            } else {
                t.last_dts = Some(dts);
                t.last_data = data;
            }
        }
        if corrupt {
            let at = start.unwrap_or(0) as f64 * unit_s;
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

    /// What decoding the audio of the whole file found. Kept apart from `damage_seen`: it
    /// says nothing about the video, whose decoding goes on.
    pub fn on_audio_check(&mut self, verdict: AudioVerdict) {
        self.audio = verdict;
    }

    /// The presentation times of the video timeline: those of the leading packets are
    /// left out, unless no keyframe came.
    fn timeline_pts(&self) -> Vec<i64> {
        [self.leading.unkeyed_pts(), &self.video_pts].concat()
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
        }
    }

    /// Reading starts again from the file's start (a seek that missed): its leading packets
    /// are told anew.
    pub fn restart_leading(&mut self) {
        self.leading = LeadingPackets::new(self.leading.check());
    }

    /// Whether a video keyframe was read yet.
    pub fn keyframe_read(&self) -> bool {
        self.leading.keyframe_read()
    }

    /// Whether the video packet admitted last comes before the first decodable picture of
    /// this reading: before its first keyframe, or a leading picture of that keyframe's
    /// open GOP (the caller may skip it, uncounted as sent).
    pub fn leading_packet(&self) -> bool {
        self.leading.last_is_leading()
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

    /// The video packet admitted last was a leading one and was not sent to the decoder.
    pub fn on_leading_skipped(&mut self) {
        if let Some(log) = &mut self.decoder_log {
            log.on_leading_skipped();
        }
    }

    /// A frame came out of the decoder (`key`: a keyframe), inside the reading's bounds or
    /// not.
    pub fn on_decoded(&mut self, key: bool) {
        if let Some(log) = &mut self.decoder_log {
            log.on_frame_out(key);
        }
    }

    /// Place a decoded frame whose timestamp is `pts` on the timeline.
    pub fn place_frame(&mut self, pts: Option<i64>, damaged: bool, interlaced: bool) -> Placement {
        self.frames_out += 1;
        self.interlaced |= interlaced;
        if damaged {
            self.frames_damaged += 1;
        }
        let before = self.timeline.discontinuities;
        let placed = self.timeline.place(pts);
        if self.timeline.discontinuities > before {
            let n = self.frames_out;
            self.note(|| format!("video timestamps go backwards at frame {n}"));
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
    }

    /// What was lost or damaged. Only when the input was `read_to_end` are the counts and
    /// timelines compared with what the container declares.
    pub fn damage(&self, read_to_end: bool) -> InputDamage {
        let video = &self.streams[self.video];
        let step_s = self.timeline.exact_step() * video.unit_s;
        let frames_of = |s: f64| {
            if step_s > 0.0 {
                (s / step_s).round() as u64
            } else {
                0
            }
        };
        let file_short = self.file_end_s.filter(|_| read_to_end).map(|end| {
            let longest = self
                .streams
                .iter()
                .filter_map(StreamTally::end_s)
                .fold(0.0, f64::max);
            let tolerance = 1.5 * step_s.max(video.typical_s()) + 0.002;
            end - longest > tolerance
        });
        let truncated =
            self.structure.as_ref().is_some_and(|p| p.truncated) || file_short == Some(true);
        // Where each stream's timeline should end: its own declared end. The file's duration
        // is where its longest stream ends, so it is held against a stream that declares
        // nothing only when the file is cut short: audio that legitimately ends (or starts)
        // before the video in an FLV, say, is not missing.
        let decl_end = |t: &StreamTally| {
            t.declared_end_s()
                .or(self.file_end_s.filter(|_| truncated))
                .filter(|_| read_to_end)
        };
        // Packets before the first keyframe are skipped, not missing (said apart).
        let undecoded = if self.interlaced || !read_to_end {
            0
        } else {
            (self.packets_sent - self.leading.sent()).saturating_sub(self.frames_out)
        };
        let unread = match video.declared.packets {
            Some(d) if read_to_end => d.saturating_sub(video.packets),
            _ => 0,
        };
        let video_start = self
            .timeline_pts()
            .iter()
            .min()
            .map_or(0.0, |&p| p as f64 * video.unit_s);
        let by_end = decl_end(video).map_or(0, |e| frames_of(video.shortfall_s(e, video_start)));
        let mut damage = InputDamage {
            frames_declared: video.declared.packets,
            frames_read: video.packets,
            frames_decoded: self.frames_out - self.timeline.duplicates,
            decoding_stopped: self.scanned,
            frames_damaged: self.frames_damaged,
            frames_dropped: self.timeline.duplicates,
            demux_errors: self.demux_errors(true),
            decoder_errors: self.decoder_errors(),
            packets_dropped: self.packets_dropped,
            audio_packets_damaged: self.audio.damaged_packets,
            frames_before_first_keyframe: self.leading.read(),
            truncated,
            ..Default::default()
        };
        let damaged = self.damage_seen() || truncated || unread > 0 || undecoded > 0 || by_end > 0;
        let (gaps, first_gap) = match self.timeline.constant_rate() {
            true => {
                let mut pts = self.timeline_pts();
                pts.sort_unstable();
                pts.dedup();
                let step = self.timeline.step();
                let frame_s = step as f64 * video.unit_s;
                let between_a_splice = |from: i64, to: i64| {
                    self.resets_s.iter().any(|&r| {
                        from as f64 * video.unit_s - frame_s <= r
                            && r <= to as f64 * video.unit_s + frame_s
                    })
                };
                let exact = self.timeline.exact_step();
                // Spacings off the frame grid are a variable frame rate, whatever the
                // container claims: with no other damage one is enough; in a damaged file a
                // mangled timestamp puts two off it, so a tenth of them must be.
                let (off, spacings) = timeline::off_grid(&pts, exact, between_a_splice);
                let variable = match damaged {
                    false => off > 0,
                    true => off >= 3 && off * 10 >= spacings,
                };
                let gaps = timeline::less_untimed(
                    timeline::gaps(&pts, exact).filter(|&(at, frames)| {
                        !variable && !between_a_splice(at, at + (frames as i64 + 1) * step)
                    }),
                    self.untimed_video,
                );
                (gaps.iter().map(|g| g.1).sum(), gaps.first().map(|g| g.0))
            }
            false => (0, None),
        };
        // In a damaged file a gap is frames lost; in one that shows no other damage it may
        // be the recorder's, and is said rather than refused.
        match damaged {
            // Slots with no packet (never read: in the gaps, or past the end) and packets
            // that gave no picture are different frames.
            true => damage.frames_missing = unread.max(gaps + by_end) + undecoded,
            false => {
                damage.timeline_gaps = gaps;
                damage.first_gap_s = first_gap.map(|p| p as f64 * video.unit_s - video_start);
            }
        }

        let video_end = video.end_s();
        for t in self.streams.iter().filter(|t| t.role == Role::Audio) {
            let by_count = match t.declared.packets {
                Some(d) if read_to_end => d.saturating_sub(t.packets) as f64 * t.typical_s(),
                _ => 0.0,
            };
            let by_end = match decl_end(t) {
                Some(e) => t.shortfall_s(e, video_start),
                // Nothing declared: in a truncated file, audio ending before the video is lost.
                None if truncated && read_to_end => {
                    video_end.map_or(0.0, |v| t.shortfall_s(v, video_start))
                }
                None => 0.0,
            };
            let by_gaps = if damaged {
                t.gaps as f64 * t.unit_s
            } else {
                0.0
            };
            damage.audio_missing_s = damage.audio_missing_s.max(by_count.max(by_end) + by_gaps);
        }

        if let Some(p) = &self.structure {
            damage.note(p.text.clone());
        }
        if file_short == Some(true)
            && let Some(end) = self.file_end_s
        {
            damage.note(format!(
                "the container declares {end:.3} s, the streams end earlier"
            ));
        }
        // FFmpeg's own wording of the first demuxer error, then RAVE's, then the decoder's.
        if let Some(first) = self.demux_log.tally().first() {
            damage.note(first);
        }
        if let Some(first) = self.continuity.first(true) {
            damage.note(first);
        }
        if self.video_probe_errors(true) > 0
            && let Some(first) = self.video_probe_errors.first()
        {
            damage.note(first.clone());
        }
        if let Some(n) = &self.note {
            damage.note(n.clone());
        }
        if let Some(first) = self.decoder_log.as_ref().and_then(DecoderLog::first) {
            damage.note(first);
        }
        if unread > 0 {
            damage.note(format!(
                "the container lists {} video frames, {} could be read",
                unread + video.packets,
                video.packets
            ));
        }
        if let Some(first) = &self.audio.first_problem {
            damage.note(first.clone());
        }
        damage
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_is_short_only_beyond_one_and_a_half_packets() {
        let mut t = StreamTally::new(Role::Audio, Rational::new(1, 1000), Declared::default());
        t.typical = 20;
        t.end = Some(1000);
        assert_eq!(t.shortfall_s(1.02, 0.0), 0.0);
        assert!((t.shortfall_s(1.5, 0.0) - 0.5).abs() < 1e-9);
        let empty = StreamTally::new(Role::Audio, Rational::new(1, 1000), Declared::default());
        assert!(
            (empty.shortfall_s(2.0, 1.5) - 0.5).abs() < 1e-9,
            "no packet: from the start"
        );
    }
}
