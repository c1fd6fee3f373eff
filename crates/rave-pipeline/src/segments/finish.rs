//! What a job's segments add up to: the input's damage (the plan's reading of the whole file
//! plus what decoding each segment saw), the decode counters, and the files to assemble.

use std::path::PathBuf;

use rave_core::damage::InputDamage;
use rave_ffmpeg::DecodeStats;

use super::manifest::{Manifest, SegmentState};
use super::work_folder::WorkFolder;

/// The damage of the whole input: a segment that was the whole file has its reader's full
/// account; otherwise the plan's reading of every packet, with the decoding counts of the
/// segments done added.
pub fn job_damage(manifest: &Manifest) -> InputDamage {
    if let [only] = manifest.segments.as_slice()
        && let Some(d) = &only.whole_file_damage
    {
        return d.clone();
    }
    let mut damage = manifest.input_damage.clone();
    damage.decoding_stopped = false;
    damage.frames_decoded = 0;
    for d in manifest.segments.iter().filter_map(|s| s.decode.as_ref()) {
        damage.frames_decoded += d.frames;
        damage.frames_damaged += d.frames_damaged;
        damage.frames_dropped += d.frames_dropped;
        damage.decoder_errors += d.decoder_errors;
        if let Some(p) = &d.first_problem {
            damage.note(p.clone());
        }
    }
    damage
}

/// The decode counters of the segments done, with the plan's packet count and restarts.
pub fn job_decode_stats(manifest: &Manifest, plan: &DecodeStats) -> DecodeStats {
    let mut stats = DecodeStats {
        packets: plan.packets,
        timestamp_resets: plan.timestamp_resets.clone(),
        ..Default::default()
    };
    for d in manifest.segments.iter().filter_map(|s| s.decode.as_ref()) {
        stats.frames += d.frames;
        stats.nvdec_frames += d.nvdec_frames;
        stats.timestamp_fixes += d.timestamp_fixes;
    }
    stats
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
