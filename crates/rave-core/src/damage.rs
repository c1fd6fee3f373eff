//! `InputDamage`: what reading an input lost or found damaged, compared against what its
//! container declares. The reader fills it; the run refuses (or, when allowed, reports) it.

use serde::{Deserialize, Serialize};

/// How much of an input was missing or damaged. All zero (and no problem) means clean.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct InputDamage {
    /// Video frames the container declares (sample count, frame-count tag), when it does.
    pub frames_declared: Option<u64>,
    /// Video packets read from the container (each normally one frame).
    pub frames_read: u64,
    /// Video frames decoded.
    pub frames_decoded: u64,
    /// Decoding stopped at the first damage and the rest was only read (`frames_decoded`
    /// then covers the start of the file only).
    pub decoding_stopped: bool,
    /// Decoded frames the decoder flagged as damaged (their errors were concealed).
    pub frames_damaged: u64,
    /// Video frames lost: declared but never read, read but never decoded, gaps in the
    /// timeline, or the timeline ending before the container says it does. Where the
    /// container declares no frame count (MPEG-TS, FLV, AVI without an index) this is a
    /// floor: frames cut off the end leave no trace.
    pub frames_missing: u64,
    /// Decoded frames dropped because their timestamp repeated or went backwards
    /// (duplicated data).
    pub frames_dropped: u64,
    /// Decoded frames whose timestamp was out of line with the frames around them (a
    /// damaged timestamp), put in the one place those leave free.
    pub frames_moved: u64,
    /// Seconds of audio missing: declared but not read, or (in a damaged file whose
    /// container declares nothing) the audio ending before the video does.
    pub audio_missing_s: f64,
    /// Errors the demuxer reported: unreadable data, broken structure, corrupt packets,
    /// continuity errors, resynchronisations.
    pub demux_errors: u64,
    /// Errors the video decoder reported (e.g. missing reference pictures).
    pub decoder_errors: u64,
    /// Audio packets that do not decode (their bytes are damaged): read and copied, but a
    /// player meets an error or a dropout there.
    pub audio_packets_damaged: u64,
    /// Packets of copied streams (audio, subtitles) left out because no muxer can store
    /// them: their timestamps go backwards or repeat, or their data is broken.
    pub packets_dropped: u64,
    /// Packets of the other streams (audio, subtitles) of a stretch of the file written
    /// twice in a row (a segment downloaded again), dropped as duplicated data.
    pub packets_repeated: u64,
    /// The file ends before its container says it does (truncated).
    pub truncated: bool,
    /// The first problem seen, in words (FFmpeg's message or RAVE's own check).
    pub first_problem: Option<String>,
    /// Frame slots missing from a constant-rate video timeline in an input with no other
    /// sign of damage. Not damage by itself (a recorder that dropped frames writes such
    /// gaps into a clean file), but said: a frame the container lost without noticing (an
    /// MPEG-TS packet header destroyed, say) leaves only this trace.
    pub timeline_gaps: u64,
    /// Where the first such gap starts, in seconds of the input's timeline.
    pub first_gap_s: Option<f64>,
    /// Seconds of gaps between consecutive audio packets (wider than one and a half
    /// packets) in an input with no other sign of damage: not damage by itself (a
    /// recorder's dropout), but said, as an audio PES the container lost without noticing
    /// (16 MPEG-TS packets of its PID, whose 4-bit counter comes round again) leaves only
    /// this trace.
    pub audio_gaps_s: f64,
    /// Where the first such gap starts, in seconds of the input's timeline.
    pub first_audio_gap_s: Option<f64>,
    /// The last such gap lies among the video's last few frames, in a container that
    /// declares no frame count (MPEG-TS, FLV): the trace a file cut short in the middle of
    /// a group of B-frames leaves (the frames decoded ahead of the lost ones), which
    /// nothing else in such a container shows.
    pub gap_among_last_frames: bool,
    /// Video packets before the first keyframe: the input starts mid-GOP (a broadcast
    /// capture, a byte-level cut), so they refer to pictures before the file and no decoder
    /// can show them. Not damage: they are skipped, and said.
    pub frames_before_first_keyframe: u64,
    /// Video packets of parts joined (MPEG-TS/PS captures joined with `cat`) before each
    /// part's first keyframe: the part starts mid-GOP likewise. Not damage: skipped, and said.
    pub frames_before_part_keyframes: u64,
}

impl InputDamage {
    /// Whether nothing was lost or damaged.
    pub fn is_clean(&self) -> bool {
        self.frames_damaged == 0
            && self.frames_missing == 0
            && self.frames_dropped == 0
            && self.frames_moved == 0
            && self.audio_missing_s <= 0.0
            && self.demux_errors == 0
            && self.decoder_errors == 0
            && self.audio_packets_damaged == 0
            && self.packets_dropped == 0
            && self.packets_repeated == 0
            && !self.truncated
            && self.first_problem.is_none()
    }

    /// Whether the input has no video that can be decoded: no video packet at all, or
    /// every packet decoded without a single frame coming out.
    pub fn no_decodable_video(&self) -> bool {
        self.frames_read == 0 || (!self.decoding_stopped && self.frames_decoded == 0)
    }

    /// Record `problem` as the first one, unless one is already recorded.
    pub fn note(&mut self, problem: impl Into<String>) {
        if self.first_problem.is_none() {
            self.first_problem = Some(problem.into());
        }
    }

    /// The warning for [`InputDamage::timeline_gaps`], when there are any.
    pub fn gap_warning(&self) -> Option<String> {
        (self.timeline_gaps > 0).then(|| {
            let at = self
                .first_gap_s
                .map_or(String::new(), |t| format!(" (the first after {t:.3} s)"));
            let end = match self.gap_among_last_frames {
                true => "; the last gap lies among the video's last frames, the trace of a file cut short (its end lost, or a stream-copy cut) in the middle of a group of B-frames, which this container, declaring no length, shows no other way: compare its duration with the source's",
                false => "",
            };
            format!(
                "the input's video timeline has {}{at} with no other sign of damage: frames the recorder dropped or a stream-copy cut left out, or frames lost without the container noticing; the output has the same gaps{end}",
                counted(self.timeline_gaps, "missing frame slot")
            )
        })
    }

    /// The warning for [`InputDamage::audio_gaps_s`], when there are any.
    pub fn audio_gap_warning(&self) -> Option<String> {
        (self.audio_gaps_s > 0.0).then(|| {
            // Counted from the picture's start: sound may start before it.
            let at = self.first_audio_gap_s.map_or(String::new(), |t| match t < 0.0 {
                true => format!(" (the first {:.3} s before the picture starts)", -t),
                false => format!(" (the first after {t:.3} s)"),
            });
            format!(
                "the input's audio has gaps of {:.3} s in all{at} with no other sign of damage: a dropout of the recorder, or sound lost without the container noticing; the output has the same gaps",
                self.audio_gaps_s
            )
        })
    }

    /// The warning for [`InputDamage::frames_before_first_keyframe`], when there are any.
    pub fn leading_warning(&self) -> Option<String> {
        (self.frames_before_first_keyframe > 0).then(|| {
            format!(
                "the input starts mid-GOP (a capture or a cut that does not begin on a keyframe): {} before its first keyframe cannot be decoded (they refer to pictures the file does not hold) and are skipped; the output's video starts at that keyframe, its audio where the input's does",
                counted(self.frames_before_first_keyframe, "video frame")
            )
        })
    }

    /// The warning for [`InputDamage::frames_before_part_keyframes`], when there are any.
    pub fn part_leading_warning(&self) -> Option<String> {
        (self.frames_before_part_keyframes > 0).then(|| {
            format!(
                "parts joined in the input start mid-GOP (captures joined, each begun anywhere): {} before their first keyframes cannot be decoded (they refer to pictures before each part) and are skipped; the picture holds from the part before to each part's first keyframe, while its sound plays",
                counted(self.frames_before_part_keyframes, "video frame")
            )
        })
    }

    /// The counts in words, for one line: "4 of 30 video frames missing, 2 damaged, ...".
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.no_decodable_video() {
            parts.push("no video frame could be decoded".to_string());
        } else if self.frames_missing > 0 {
            parts.push(match self.frames_declared {
                Some(n) => format!(
                    "{} of {} video frames missing",
                    self.frames_missing,
                    n.max(self.frames_missing)
                ),
                // Counted from the timeline alone: frames lost at the end of a file that
                // declares no length leave no trace, so this is a floor.
                None => format!(
                    "at least {} missing",
                    counted(self.frames_missing, "video frame")
                ),
            });
        } else if self.truncated && self.frames_declared.is_none() {
            parts.push(
                "the file is cut short; how many video frames are missing is unknown (the container does not declare its length)"
                    .to_string(),
            );
        }
        if self.frames_damaged > 0 {
            parts.push(match self.decoding_stopped {
                false => format!(
                    "{} of {} decoded frames damaged (concealed by the decoder)",
                    self.frames_damaged, self.frames_decoded
                ),
                true => format!(
                    "{} damaged (concealed by the decoder)",
                    counted(self.frames_damaged, "decoded frame")
                ),
            });
        }
        if self.frames_dropped > 0 {
            parts.push(format!(
                "{} dropped",
                counted(self.frames_dropped, "duplicated frame")
            ));
        }
        if self.frames_moved > 0 {
            parts.push(format!(
                "{} put back in place",
                counted(self.frames_moved, "frame timed out of line")
            ));
        }
        if self.audio_missing_s > 0.0 {
            parts.push(format!("{:.2} s of audio missing", self.audio_missing_s));
        }
        if self.audio_packets_damaged > 0 {
            parts.push(format!(
                "{} damaged (they do not decode)",
                counted(self.audio_packets_damaged, "audio packet")
            ));
        }
        if self.packets_dropped > 0 {
            parts.push(format!(
                "{} unstorable (broken timestamps or data)",
                counted(self.packets_dropped, "audio/subtitle packet")
            ));
        }
        if self.packets_repeated > 0 {
            parts.push(format!(
                "{} written twice dropped",
                counted(self.packets_repeated, "audio/subtitle packet")
            ));
        }
        let errors = self.demux_errors + self.decoder_errors;
        if errors > 0 {
            parts.push(format!(
                "{} ({} demuxer, {} decoder)",
                counted(errors, "read/decode error"),
                self.demux_errors,
                self.decoder_errors
            ));
        }
        if parts.is_empty() {
            parts.push("damaged data".into());
        }
        let mut text = parts.join(", ");
        if let Some(first) = &self.first_problem {
            text.push_str(&format!("; first problem: {first}"));
        }
        text
    }
}

/// "1 frame", "2 frames".
fn counted(n: u64, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_until_anything_is_counted() {
        let mut d = InputDamage {
            frames_read: 30,
            frames_decoded: 30,
            frames_declared: Some(30),
            ..Default::default()
        };
        assert!(d.is_clean());
        d.audio_missing_s = 0.5;
        assert!(!d.is_clean());
        d.audio_missing_s = 0.0;
        d.audio_packets_damaged = 1;
        assert!(!d.is_clean());
        let d = InputDamage {
            truncated: true,
            ..Default::default()
        };
        assert!(!d.is_clean());
    }

    #[test]
    fn description_names_each_count_once() {
        let mut d = InputDamage {
            frames_declared: Some(30),
            frames_read: 26,
            frames_decoded: 26,
            frames_missing: 4,
            frames_damaged: 1,
            audio_missing_s: 1.25,
            demux_errors: 3,
            audio_packets_damaged: 2,
            ..Default::default()
        };
        d.note("stream 1, offset 0x22cb: partial file");
        d.note("ignored: not the first");
        let text = d.describe();
        assert!(text.starts_with("4 of 30 video frames missing"), "{text}");
        assert!(text.contains("1 of 26 decoded frames damaged"), "{text}");
        assert!(text.contains("1.25 s of audio missing"), "{text}");
        assert!(
            text.contains("2 audio packets damaged (they do not decode)"),
            "{text}"
        );
        assert!(
            text.contains("3 read/decode errors (3 demuxer, 0 decoder)"),
            "{text}"
        );
        assert!(text.ends_with("first problem: stream 1, offset 0x22cb: partial file"));
        let one_each = InputDamage {
            frames_read: 9,
            frames_damaged: 1,
            frames_dropped: 1,
            decoding_stopped: true,
            ..Default::default()
        }
        .describe();
        assert!(
            one_each.contains("1 decoded frame damaged")
                && one_each.contains("1 duplicated frame dropped"),
            "{one_each}"
        );
        let none = InputDamage::default().describe();
        assert!(none.contains("no video frame could be decoded"), "{none}");
        let scanned = InputDamage {
            frames_read: 30,
            decoding_stopped: true,
            ..Default::default()
        };
        assert!(
            !scanned.no_decodable_video(),
            "refused before decoding: frames exist"
        );
        let ts = InputDamage {
            frames_read: 9,
            frames_decoded: 9,
            truncated: true,
            ..Default::default()
        };
        assert!(
            ts.describe()
                .contains("how many video frames are missing is unknown")
        );
        let undeclared = InputDamage {
            frames_read: 20,
            frames_decoded: 20,
            frames_missing: 3,
            ..Default::default()
        };
        assert!(
            undeclared
                .describe()
                .starts_with("at least 3 video frames missing")
        );
    }
}
