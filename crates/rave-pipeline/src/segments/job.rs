//! Preparing a job: check the input (damage is refused before the model loads), read its
//! keyframe index, plan the segments, and create the work folder and manifest, or resume
//! the job a manifest describes after checking that its input and settings are unchanged.

use std::path::{Path, PathBuf};

use rave_core::damage::InputDamage;
use rave_core::error::{EngineError, Result};
use rave_ffmpeg::{Container, DecodeStats, VideoReader, probe};

use super::distributed::work_of;
use super::done_segments::verify_done;
use super::fingerprint::{InputFingerprint, OutputSettings, file_sha256};
use super::manifest::{MANIFEST_VERSION, Manifest, NOT_RAVES, SegmentEntry};
use super::paths::{absolute, same_path};
use super::plan::{SegmentPlan, default_segment_frames, plan_segments};
use super::startup::StartupClock;
use super::work_folder::{JobClaim, WorkFolder};
use super::worker::JobSpec;
use crate::cancel::{CancelToken, StopReason};
use crate::config::UpscaleConfig;
use crate::progress::ProgressSink;
use crate::stages;

/// A job ready to run: its spec, manifest and work folder.
pub struct PreparedJob {
    /// What every segment shares.
    pub spec: JobSpec,
    /// The manifest (also on disk when there is a work folder).
    pub manifest: Manifest,
    /// The work folder, `None` for a null sink.
    pub work: Option<WorkFolder>,
    /// This process's claim on the job (held until the run ends).
    pub claim: Option<JobClaim>,
    /// The work folder was created by this run (removed again if it fails with nothing
    /// done).
    pub created_work: bool,
    /// Segments already done when the job started.
    pub reused: usize,
    /// The plan reader's counters (packets, timestamp restarts), when it read the input.
    pub plan_stats: DecodeStats,
    /// What the input cannot give the output, said once and kept for the report.
    pub warnings: Vec<String>,
}

/// Refuse, before the work folder is touched, a job whose paths its `manifest.json` cannot
/// record: JSON holds text, and a path that is not valid UTF-8 (a name given relative to
/// a working folder whose own path is not, say) is not.
fn check_recordable(config: &UpscaleConfig) -> Result<()> {
    let here = std::env::current_dir().unwrap_or_default();
    let paths = [
        ("input", absolute(&config.input)),
        ("output", absolute(&config.output)),
        ("model", absolute(&config.model)),
        ("working folder", here),
    ];
    match paths.iter().find(|(_, path)| path.to_str().is_none()) {
        Some((what, path)) => Err(EngineError::Config(format!(
            "the {what}'s path {} is not valid UTF-8, which the job's manifest.json cannot record; rename the folder or file, or run from a folder whose path is valid UTF-8",
            path.display()
        ))),
        None => Ok(()),
    }
}

/// The output-affecting settings of `config` for an input of `bit_depth`.
fn settings_of(
    config: &UpscaleConfig,
    bit_depth: u8,
    segment_frames: u64,
) -> Result<OutputSettings> {
    // Checked first: hashing a pipe or a device given as the model would wait or read on.
    rave_tensorrt::model::check_model_file(&config.model)?;
    let model_sha256 = file_sha256(&config.model)
        .map_err(|e| EngineError::ModelNotFound(format!("{}: {e}", config.model.display())))?;
    let container = Container::from_path(&config.output)?;
    Ok(OutputSettings {
        model_sha256,
        device: format!("{:?}", config.device).to_lowercase(),
        precision: format!("{:?}", config.gpu.precision).to_lowercase(),
        codec: format!("{:?}", config.encoder.codec).to_lowercase(),
        crf: config.encoder.crf,
        preset: config.encoder.preset.clone(),
        bit_depth,
        container: container.muxer().into(),
        max_frames: config.max_frames,
        segment_frames,
        tiling: config.tiling.describe(),
    })
}

/// Prepare the job of `config`: plan it (or resume the one its work folder holds).
/// `after_input_checks` runs once the input is known to be usable, given what its probe
/// found (the output's checks come next, before the long read of the whole input). `clock`
/// times the steps: `probe`, then `index` (a new job) or `resume`.
pub fn prepare(
    config: &UpscaleConfig,
    progress: &dyn ProgressSink,
    cancel: &CancelToken,
    after_input_checks: &mut dyn FnMut(&rave_ffmpeg::MediaInfo) -> Result<()>,
    clock: &StartupClock,
) -> Result<PreparedJob> {
    let began = std::time::Instant::now();
    // The input first: a missing input is the error, not the output name beside it.
    let info = probe(&config.input)?;
    let container = Container::from_path(&config.output)?;
    let in_size = info.frame_size()?;
    // Damage the file shows up front (a truncated file, a CRC mismatch, headers FFmpeg could
    // not parse) is refused before the model loads or any output exists.
    let mut reader = VideoReader::open(&config.input)?;
    if !config.allow_corrupt && reader.damage_seen() {
        return Err(stages::refuse_damaged(&mut reader, cancel));
    }
    let mut warnings = Vec::new();
    if !rave_ffmpeg::structure_check::is_checked(&info.container) {
        let w = format!(
            "the input's container ({}) has no structure or length RAVE can check: damage in it is found only where FFmpeg's demuxer or decoder reports it",
            info.container
        );
        progress.warning(&w);
        warnings.push(w);
    }
    // What the output's container cannot keep of the input (rotation in Matroska, field
    // order), said before the work starts.
    let carried = rave_ffmpeg::carried_metadata::CarriedMetadata::of(
        reader.input(),
        reader.video_index(),
        container,
    );
    after_input_checks(&info)?;
    // Every stream the output must copy is checked against its container now, not after the
    // upscale.
    let streams = rave_ffmpeg::stream_plan::plan_streams(
        reader.input(),
        reader.video_index(),
        container,
        &config.output,
    )?;
    for w in &carried.warnings {
        progress.warning(w);
    }
    for w in streams.warnings {
        progress.warning(&w);
        warnings.push(w);
    }
    let bit_depth = reader.color().bit_depth;
    let spec = JobSpec {
        config: config.clone(),
        container,
        in_size,
        bit_depth,
        structure: reader.structure_verdict(),
        nvenc_everywhere: Default::default(),
        skip_before_keyframe: false,
        damaged: false,
    };
    clock.step("probe", began);
    let began = std::time::Instant::now();
    let opts = &config.segments;
    let work = (!config.null_output).then(|| work_of(config));
    if let Some(work) = &work {
        // A resumed job keeps its manifest's paths: only a new plan records these.
        if opts.restart || !work.has_manifest() {
            check_recordable(config)?;
        }
        work.check_input_outside(&config.input)?;
        work.check_not_the_output(&config.output)?;
    }
    if let Some(work) = &work
        && work.has_manifest()
    {
        if opts.restart {
            if !work.holds_rave_manifest() {
                return Err(EngineError::WorkFolderMismatch {
                    work: work.path().to_path_buf(),
                    reason: NOT_RAVES.into(),
                });
            }
            let discarding = work.claim(true)?;
            work.remove(Some(&discarding))?;
        } else {
            // Read before the claim, so that a folder whose manifest is not RAVE's gets no
            // lock file of RAVE's.
            work.read()?;
            let claim = work.claim(false)?;
            clock.step("resume", began);
            return resume(work, claim, config, spec, (progress, warnings));
        }
    }
    if let Some(work) = &work {
        match config.segments.work {
            // RAVE's own folder beside the output: segment files without a manifest are
            // what a run killed while removing it left.
            None => work.discard_orphan_segments(),
            Some(_) => work.check_unclaimed(&config.output)?,
        }
    }
    // Read every packet once: the keyframe index, and the whole file's container-level
    // damage before any model loads.
    let index = reader.index_to_end(|| cancel.reason() != Some(StopReason::User))?;
    if cancel.reason() == Some(StopReason::User) {
        return Err(EngineError::CancelledBeforeOutput);
    }
    // What the end of the file reveals too (frames or audio short of what the container
    // declares): refused now, not after every segment was upscaled.
    let input_damage = reader.damage();
    if !config.allow_corrupt && (reader.damage_seen() || !input_damage.is_clean()) {
        return Err(stages::refuse_damaged(&mut reader, cancel));
    }
    let fps = f64::from(index.frame_rate());
    let job_frames = config
        .max_frames
        .map_or(index.frames(), |m| m.min(index.frames()));
    let segment_frames = opts.segment_frames.unwrap_or_else(|| {
        default_segment_frames(
            fps,
            job_frames,
            super::worker_count::planned_workers(config),
        )
    });
    let one_segment_because = match input_damage.is_clean() {
        false => Some("the input is damaged; it is read as one segment"),
        true if reader.clock_wraps() => Some(
            "its MPEG clock wraps inside it (a start before zero), where seeking to a segment is unreliable; it is read as one segment",
        ),
        true => None,
    };
    let plan = match one_segment_because {
        None => plan_segments(&index, segment_frames, config.max_frames),
        Some(why) => {
            let mut one = plan_segments(&index, u64::MAX, config.max_frames);
            one.single_reason = Some(why.into());
            one
        }
    };
    let read = (input_damage, reader.last_frame_ticks());
    let manifest = new_manifest(config, &plan, bit_depth, segment_frames, read)?;
    let mut created_work = false;
    let mut claim = None;
    if let Some(work) = &work {
        created_work = !work.path().exists();
        work.create()?;
        let ours = work.claim(false)?;
        if !work.write_first(&manifest)? {
            // Another run given the same folder planned its job while this one read the
            // input: resumed if it is this job, refused if not.
            clock.step("index", began);
            return resume(work, ours, config, spec, (progress, warnings));
        }
        claim = Some(ours);
    }
    clock.step("index", began);
    let spec = spec_for(spec, &manifest);
    Ok(PreparedJob {
        spec,
        manifest,
        work,
        claim,
        created_work,
        reused: 0,
        plan_stats: reader.stats().clone(),
        warnings,
    })
}

/// Remove the work folder of `config`'s job where the job finished (its output is the
/// file the manifest recorded as it took its name) but the run died before removing it;
/// the folder, where it did. Called when the output exists, so the next run cleans up
/// what a crash left.
pub fn remove_finished_work(config: &UpscaleConfig) -> Option<PathBuf> {
    let work = work_of(config);
    remove_if_finished(&work, &config.output).then(|| work.path().to_path_buf())
}

/// An output finished this recently may be one a live run has just put in place and is
/// still removing the work folder of (the lock it holds is let go for an instant as it
/// turns exclusive): its folder is left, for the next run to remove.
const JUST_FINISHED: std::time::Duration = std::time::Duration::from_secs(5);

/// Remove `work` where its job finished into `output` (see [`remove_finished_work`]), some
/// time ago ([`JUST_FINISHED`]).
fn remove_if_finished(work: &WorkFolder, output: &Path) -> bool {
    let Ok(manifest) = work.read() else {
        return false;
    };
    let finished = manifest.assembled.is_some()
        && same_path(&manifest.output, &absolute(output))
        && InputFingerprint::of(output).ok() == manifest.assembled;
    let age = std::fs::metadata(output)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok());
    finished && age.is_some_and(|a| a >= JUST_FINISHED) && work.remove(None).is_ok()
}

/// `spec` for the job `manifest` plans: whether its segments skip the packets before the
/// input's first keyframe (a capture that starts mid-GOP), and whether the input is
/// damaged.
fn spec_for(spec: JobSpec, manifest: &Manifest) -> JobSpec {
    JobSpec {
        skip_before_keyframe: manifest.input_damage.frames_before_first_keyframe > 0,
        damaged: !manifest.input_damage.is_clean(),
        ..spec
    }
}

/// Resume the job planned in `work` (claimed by `claim`), after checking that it is the
/// job `config` asks for.
fn resume(
    work: &WorkFolder,
    claim: JobClaim,
    config: &UpscaleConfig,
    spec: JobSpec,
    (progress, mut warnings): (&dyn ProgressSink, Vec<String>),
) -> Result<PreparedJob> {
    let mut manifest = work.read()?;
    // The same input (its fingerprint) under another path: a project folder moved or a disk
    // mounted elsewhere. The job goes on with the paths as given now, once it is the same
    // job in every other respect: a refused run changes nothing.
    let moved = moved_here(&manifest, config)?;
    if moved.is_some() {
        take_paths(&mut manifest, config);
    }
    check_same_job(
        &manifest,
        config,
        (work, Replan::ThisCommand),
        spec.bit_depth,
    )?;
    if let Some(moved) = moved {
        let mut locked = work.lock()?;
        take_paths(&mut locked.manifest, config);
        locked.save()?;
        progress.warning(&moved);
        warnings.push(moved);
    }
    work.sweep_leftovers();
    let manifest = verify_done(work)?;
    let reused = manifest.segments.len() - manifest.missing().len();
    let spec = spec_for(spec, &manifest);
    Ok(PreparedJob {
        spec,
        manifest,
        work: Some(work.clone()),
        claim: Some(claim),
        created_work: false,
        reused,
        plan_stats: DecodeStats::default(),
        warnings,
    })
}

/// Where the job planned in `manifest` upscales the same input (size, modification time and
/// content of its ends) under other paths than `config`'s: what to say of the move. An
/// input that differs is left to the refusal of [`check_same_files`].
fn moved_here(manifest: &Manifest, config: &UpscaleConfig) -> Result<Option<String>> {
    let input_moved = !same_path(&manifest.input, &absolute(&config.input));
    let output_moved = !same_path(&manifest.output, &absolute(&config.output));
    if !(input_moved || output_moved)
        || manifest.fingerprint != InputFingerprint::of(&config.input)?
    {
        return Ok(None);
    }
    let mut what = Vec::new();
    if input_moved {
        what.push(format!("its input was {}", manifest.input.display()));
    }
    if output_moved {
        what.push(format!("its output {}", manifest.output.display()));
    }
    Ok(Some(format!(
        "resuming the job planned with other paths ({}): the input is the same file (size, modification time and content), so its finished segments are kept",
        what.join(", ")
    )))
}

/// `manifest` taking `config`'s paths (a moved job): its input and output, the folder
/// relative paths start from, and leave to overwrite as given for this output (not carried
/// from another).
fn take_paths(manifest: &mut Manifest, config: &UpscaleConfig) {
    manifest.input = absolute(&config.input);
    manifest.output = absolute(&config.output);
    manifest.overwrite = config.overwrite;
    manifest.invocation_dir = std::env::current_dir().unwrap_or_default();
}

/// A name no other plan has: the time in nanoseconds, the host and the process id.
fn new_job_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{nanos:x}-{}", super::commit::worker_name())
}

/// The manifest of a new plan; `read` is what the plan's reading of the whole input
/// found: its damage, and how long its last frame lasts.
fn new_manifest(
    config: &UpscaleConfig,
    plan: &SegmentPlan,
    bit_depth: u8,
    segment_frames: u64,
    (input_damage, last_frame_ticks): (InputDamage, Option<i64>),
) -> Result<Manifest> {
    Ok(Manifest {
        version: MANIFEST_VERSION,
        job_id: new_job_id(),
        planned_by: format!("rave {}", env!("CARGO_PKG_VERSION")),
        input: absolute(&config.input),
        output: absolute(&config.output),
        model: absolute(&config.model),
        fingerprint: InputFingerprint::of(&config.input)?,
        settings: settings_of(config, bit_depth, segment_frames)?,
        options: config.segments.options.clone(),
        invocation_dir: std::env::current_dir().unwrap_or_default(),
        overwrite: config.overwrite,
        frames_total: plan.frames,
        ends_early: plan.ends_early,
        last_frame_ticks,
        assembled: None,
        segment_frames,
        single_reason: plan.single_reason.clone(),
        input_damage,
        segments: plan
            .segments
            .iter()
            .cloned()
            .map(SegmentEntry::pending)
            .collect(),
        partial_outputs: Vec::new(),
    })
}

/// How a job is planned again, as a refusal to resume it says: by the command that was run
/// (`rave upscale` or `rave plan`), or, for a segment worker or assemble, which cannot
/// plan, by `rave plan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replan {
    /// The command that was run takes `--restart`.
    ThisCommand,
    /// Only `rave plan ... --restart` plans the job again.
    WithRavePlan,
}

/// Refuse to resume (or work on) a job whose input, output or output-affecting settings
/// changed; the refusal says how to plan it again (`replan`).
pub fn check_same_job(
    manifest: &Manifest,
    config: &UpscaleConfig,
    (work, replan): (&WorkFolder, Replan),
    bit_depth: u8,
) -> Result<()> {
    check_same_files(manifest, config, (work, replan))?;
    let segment_frames = config
        .segments
        .segment_frames
        .unwrap_or(manifest.settings.segment_frames);
    let now = settings_of(config, bit_depth, segment_frames)?;
    let differences = manifest.settings.differences(&now);
    if !differences.is_empty() {
        return Err(refusal(
            work,
            replan,
            format!(
                "settings changed since it was planned: {}",
                differences.join(", ")
            ),
        ));
    }
    Ok(())
}

/// Why the job planned in `work` cannot be resumed: `what`, and how to plan it again.
fn refusal(work: &WorkFolder, replan: Replan, what: String) -> EngineError {
    EngineError::WorkFolderMismatch {
        work: work.path().to_path_buf(),
        reason: format!(
            "the job planned here cannot be resumed: {what}; {} (its finished segments are discarded), or --work DIR for a separate job",
            match replan {
                Replan::ThisCommand => "pass --restart to start it over",
                Replan::WithRavePlan => "plan it again with `rave plan ... --restart`",
            }
        ),
    }
}

/// Refuse to join (or resume) a job whose input or output is not `config`'s, or whose
/// input changed since it was planned (the settings are not compared: joining the
/// segments runs no model).
pub fn check_same_files(
    manifest: &Manifest,
    config: &UpscaleConfig,
    (work, replan): (&WorkFolder, Replan),
) -> Result<()> {
    let refuse = |what: String| refusal(work, replan, what);
    if !same_path(&manifest.input, &absolute(&config.input)) {
        return Err(refuse(format!(
            "it upscales {}, not {}",
            manifest.input.display(),
            config.input.display()
        )));
    }
    if !same_path(&manifest.output, &absolute(&config.output)) {
        return Err(refuse(format!(
            "it writes {}, not {}",
            manifest.output.display(),
            config.output.display()
        )));
    }
    if manifest.fingerprint != InputFingerprint::of(&config.input)? {
        return Err(refuse(format!(
            "the input {} changed since it was planned (size, modification time or content)",
            config.input.display()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{InputFingerprint, WorkFolder, remove_if_finished};
    use crate::segments::work_folder::tests::manifest_of;

    #[test]
    fn a_finished_jobs_folder_left_by_a_crash_is_removed_only_for_its_own_output() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let output = d.join("out.mkv");
        std::fs::write(&output, b"the finished output").unwrap();
        let work = WorkFolder::beside(&output);
        work.create().unwrap();
        let mut manifest = manifest_of("/in.mp4");
        manifest.output = output.clone();
        // No record of the output taking its name: an interrupted job, kept.
        work.write_first(&manifest).unwrap();
        assert!(!remove_if_finished(&work, &output));
        // Recorded, but the output is another file now: kept.
        manifest.assembled = Some(InputFingerprint::of(&output).unwrap());
        manifest.write(&work.manifest_path()).unwrap();
        std::fs::write(&output, b"something else, written later").unwrap();
        assert!(!remove_if_finished(&work, &output));
        assert!(work.has_manifest());
        // The output the job finished a moment ago: kept (its run may be removing it).
        manifest.assembled = Some(InputFingerprint::of(&output).unwrap());
        manifest.write(&work.manifest_path()).unwrap();
        assert!(!remove_if_finished(&work, &output));
        // The output the job finished a minute ago: removed.
        let a_minute_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        (std::fs::File::options().write(true).open(&output).unwrap())
            .set_modified(a_minute_ago)
            .unwrap();
        manifest.assembled = Some(InputFingerprint::of(&output).unwrap());
        manifest.write(&work.manifest_path()).unwrap();
        assert!(remove_if_finished(&work, &output));
        assert!(!work.path().exists());
    }
}
