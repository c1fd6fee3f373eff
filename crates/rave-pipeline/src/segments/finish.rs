//! What a job's segments add up to: the input's damage (the plan's reading of the whole file
//! plus what decoding each segment saw), the decode counters, and the files to assemble.

use std::path::PathBuf;

use rave_core::damage::InputDamage;
use rave_core::error::{EngineError, Result};
use rave_ffmpeg::{Container, DecodeStats, WriterSummary};

use super::assemble::{AssemblyInput, assemble};
use super::fingerprint::InputFingerprint;
use super::manifest::{Manifest, SegmentDecode, SegmentState};
use super::work_folder::WorkFolder;
use crate::cancel::CancelToken;
use crate::config::UpscaleConfig;
use crate::output_file::OutputTarget;
use crate::stages;

/// What goes into the output file.
pub struct OutputJob<'a> {
    /// The job.
    pub manifest: &'a Manifest,
    /// Its work folder.
    pub work: &'a WorkFolder,
    /// The run's configuration.
    pub config: &'a UpscaleConfig,
    /// The output container.
    pub container: Container,
    /// The segment files in order, each with its first frame's timestamp.
    pub files: Vec<(PathBuf, Option<i64>)>,
    /// Frames they hold.
    pub frames: u64,
    /// Only the start of the video is there (an interrupted run).
    pub partial: bool,
}

/// What writing the output gave.
pub struct WrittenOutput {
    /// Where the output is (the partial name for an interrupted run).
    pub path: PathBuf,
    /// The muxer's account.
    pub summary: WriterSummary,
    /// Packets of other streams copied from the source.
    pub copied_packets: u64,
}

/// Assemble `job` into `target`'s temporary file and settle it: a complete output is
/// refused when the input's `damage` (updated with the packets the muxer refused) is not
/// allowed, else moved into place; a partial one is kept under its partial name.
pub fn write_output(
    job: OutputJob<'_>,
    target: &OutputTarget,
    damage: &mut InputDamage,
    cancel: &CancelToken,
) -> Result<WrittenOutput> {
    let config = job.config;
    let fail = |e: EngineError| {
        target.discard();
        Err(e)
    };
    if job.partial && job.files.is_empty() {
        return fail(EngineError::CancelledBeforeOutput);
    }
    if !job.partial && job.files.len() != job.manifest.segments.len() {
        return fail(EngineError::SegmentsMissing {
            work: job.work.path().to_path_buf(),
            missing: job.manifest.missing(),
            total: job.manifest.segments.len(),
            changed: Vec::new(),
            gone: Vec::new(),
        });
    }
    // Damage that needs no assembly to be known (no frame decodable, frames missing) is
    // refused before any output is written.
    let refusal = |d: &InputDamage| {
        (!job.partial)
            .then(|| stages::damage_refusal(&config.input, d, config.allow_corrupt))
            .flatten()
    };
    if let Some(err) = refusal(damage) {
        return fail(err);
    }
    let input = AssemblyInput {
        source: &config.input,
        segments: job.files,
        frames: job.frames,
        codec: config.encoder.codec,
        container: job.container,
        allow_corrupt: config.allow_corrupt,
        // An interrupted run, or one --max-frames stops before the video's end: the copied
        // streams end with the video.
        ends_early: job.partial || job.manifest.ends_early,
        last_frame_ticks: job.manifest.last_frame_ticks,
    };
    // Errors name the file the user will look for: the partial output of an interrupted run.
    let shown_as = match job.partial {
        true => target.partial_path(),
        false => config.output.clone(),
    };
    let assembled = match assemble(&input, target.temp_path(), &shown_as, cancel) {
        Ok(a) => a,
        Err(EngineError::PacketRefused(why)) => {
            damage.packets_dropped += 1;
            damage.note(why);
            return fail(
                stages::damage_refusal(&config.input, damage, false)
                    .unwrap_or(EngineError::Cancelled),
            );
        }
        Err(e) => return fail(e),
    };
    damage.packets_dropped += assembled.refused.0;
    if let Some(why) = assembled.refused.1 {
        damage.note(why);
    }
    if let Some(err) = refusal(damage) {
        return fail(err);
    }
    if !job.partial
        && !config.segments.keep_work
        && let Ok(mut locked) = job.work.lock()
    {
        // Only for the clean-up after a crash between here and the end (a folder kept on
        // purpose is not recorded): not worth failing the run for.
        locked.manifest.assembled = InputFingerprint::of(target.temp_path()).ok();
        let _ = locked.save();
    }
    let path = match job.partial {
        false => target.commit()?,
        true => target.keep_partial()?,
    };
    Ok(WrittenOutput {
        path,
        summary: assembled.summary,
        copied_packets: assembled.source_stats.copied_packets,
    })
}

/// The damage of the whole input: a segment that was the whole file has its reader's full
/// account (with the audio the plan decoded: only the plan decodes it); otherwise the
/// plan's reading of every packet, with the decoding counts of the segments done added.
pub fn job_damage(manifest: &Manifest) -> InputDamage {
    if let [only] = manifest.segments.as_slice()
        && let Some(d) = &only.whole_file_damage
    {
        let mut d = d.clone();
        let plan = &manifest.input_damage;
        d.audio_packets_damaged = plan.audio_packets_damaged;
        if plan.audio_packets_damaged > 0
            && let Some(p) = &plan.first_problem
        {
            d.note(p.clone());
        }
        return d;
    }
    damage_of(
        manifest,
        manifest.segments.iter().filter_map(|s| s.decode.as_ref()),
    )
}

/// The plan's reading of every packet with `decodes`' counts added.
pub fn damage_of<'a>(
    manifest: &Manifest,
    decodes: impl Iterator<Item = &'a SegmentDecode>,
) -> InputDamage {
    let mut damage = manifest.input_damage.clone();
    damage.decoding_stopped = false;
    damage.frames_decoded = 0;
    for d in decodes {
        damage.frames_decoded += d.frames;
        damage.frames_damaged += d.frames_damaged;
        damage.frames_dropped += d.frames_dropped;
        damage.frames_moved += d.frames_moved;
        damage.decoder_errors += d.decoder_errors;
        if let Some(p) = &d.first_problem {
            damage.note(p.clone());
        }
    }
    damage
}

/// The decode counters of the segments done, with the plan's packet count and restarts.
pub fn job_decode_stats(manifest: &Manifest, plan: &DecodeStats) -> DecodeStats {
    decode_stats_of(
        manifest.segments.iter().filter_map(|s| s.decode.as_ref()),
        plan,
    )
}

/// What decoding saw of the segments a partial output holds: the first `done` segments and
/// the interrupted one after them (`partial`), not those finished beyond it.
pub fn held_decodes<'a>(
    manifest: &'a Manifest,
    done: usize,
    partial: Option<&'a SegmentDecode>,
) -> impl Iterator<Item = &'a SegmentDecode> {
    manifest.segments[..done.min(manifest.segments.len())]
        .iter()
        .filter_map(|s| s.decode.as_ref())
        .chain(partial)
}

/// `decodes` summed, with the plan's packet count and restarts.
pub fn decode_stats_of<'a>(
    decodes: impl Iterator<Item = &'a SegmentDecode>,
    plan: &DecodeStats,
) -> DecodeStats {
    let mut stats = DecodeStats {
        packets: plan.packets,
        timestamp_resets: plan.timestamp_resets.clone(),
        timestamp_steps: plan.timestamp_steps.clone(),
        ..Default::default()
    };
    for d in decodes {
        stats.frames += d.frames;
        stats.nvdec_frames += d.nvdec_frames;
        if stats.nvdec_refused.is_none() {
            stats.nvdec_refused.clone_from(&d.nvdec_refused);
        }
        stats.timestamp_fixes += d.timestamp_fixes;
        stats.captioned_frames += d.captioned_frames;
    }
    stats
}

/// What the run says of streams whose timestamps stepped back into their own last packets
/// where parts join, no seam showing in the file's bytes (FFmpeg's concat demuxer writing
/// MPEG-TS): each was moved on by its overlap alone, and plays that much later against the
/// others from there; said with the most a stream was moved in all. `None` where none was.
pub fn step_back_warning(steps: &[rave_ffmpeg::StepBack]) -> Option<String> {
    let first = steps.first()?;
    let mut totals = std::collections::BTreeMap::new();
    for s in steps {
        *totals.entry(s.stream).or_insert(0.0) += s.by_s;
    }
    let (stream, total) = totals
        .into_iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .expect("a step");
    Some(format!(
        "the input's timestamps step back where parts join {} time(s), first at {:.3} s (stream #{} overlaps its own last packets by {:.3} s): each such stream was moved on by its overlap, every frame and packet kept; stream #{stream} plays {total:.3} s later against the others by the end",
        steps.len(),
        first.at_s,
        first.stream,
        first.by_s
    ))
}

/// Whether any segment's decoder saw interlaced frames.
pub fn saw_interlaced(manifest: &Manifest) -> bool {
    manifest
        .segments
        .iter()
        .filter_map(|s| s.decode.as_ref())
        .any(|d| d.interlaced)
}

/// The files of the segments done from the first one on, in order, until the first that is
/// not done (each with its first frame's timestamp), and the frames they hold.
pub fn done_prefix(manifest: &Manifest, work: &WorkFolder) -> (Vec<(PathBuf, Option<i64>)>, u64) {
    let mut files = Vec::new();
    let mut frames = 0;
    for seg in &manifest.segments {
        match (&seg.state, &seg.file) {
            (SegmentState::Done, Some(name)) => {
                files.push((work.file(name), seg.first_pts));
                frames += seg.frames_written.unwrap_or(seg.plan.frames);
            }
            _ => break,
        }
    }
    (files, frames)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rave_ffmpeg::StepBack;

    #[test]
    fn the_step_warning_gives_the_most_a_stream_moved_in_all() {
        assert_eq!(step_back_warning(&[]), None);
        let step = |stream, at_s, by_s| StepBack { stream, at_s, by_s };
        let w = step_back_warning(&[step(1, 4.6, 0.029), step(2, 5.0, 0.01), step(1, 7.9, 0.031)])
            .unwrap();
        assert!(w.contains("3 time(s), first at 4.600 s (stream #1"), "{w}");
        assert!(w.contains("stream #1 plays 0.060 s later"), "{w}");
    }
}
