//! `rave benchmark`: run the pipeline on a clip into a scratch file and print each stage's
//! throughput next to the overall frames per second.

use rave_core::error::Result;
use rave_ffmpeg::{EncoderSettings, VideoCodec};
use rave_pipeline::benchmark::run_benchmark;
use rave_pipeline::segments::work_folder::WorkFolder;

use crate::args::{BenchmarkArgs, GlobalArgs, UpscaleArgs};
use crate::commands::upscale::pipeline_config;
use crate::interrupt::interrupt_on_ctrl_c;
use crate::{progress_view, summary};

/// The scratch file's extension: the input's own where RAVE writes that container (its
/// other streams then fit, MP4's mov_text subtitles among them), else Matroska.
fn scratch_extension(input: &std::path::Path) -> &'static str {
    match rave_ffmpeg::Container::of_extension(input) {
        Some(rave_ffmpeg::Container::Mp4) => "mp4",
        Some(rave_ffmpeg::Container::Mov) => "mov",
        _ => "mkv",
    }
}

/// Run `rave benchmark`.
pub fn run(global: &GlobalArgs, args: &BenchmarkArgs) -> Result<i32> {
    let scratch = std::env::temp_dir().join(format!(
        "rave-benchmark-{}.{}",
        std::process::id(),
        scratch_extension(&args.input)
    ));
    let codec = VideoCodec::from(args.codec);
    // x264's and x265's veryfast, as before there was --codec; SVT-AV1's own default.
    let default_preset = (codec != VideoCodec::Av1).then_some("veryfast");
    let preset = args.preset.as_deref().or(default_preset);
    if let Some(p) = preset.filter(|p| rave_ffmpeg::nvenc_settings::is_nvenc_own_preset(p)) {
        // The hint EncoderSettings gives (--encoder nvenc) is not an option here.
        return Err(rave_core::error::EngineError::Config(format!(
            "--preset {p}: p1..p7 are NVENC's presets; rave benchmark measures the software encoders (libx264, libx265, SVT-AV1: --preset ultrafast..placebo, or 0..13 for av1)"
        )));
    }
    let encoder = EncoderSettings::new(codec, None, preset)?;
    let as_upscale = UpscaleArgs {
        input: vec![args.input.clone()],
        output: scratch.clone(),
        codec: Some(args.codec),
        encoder: crate::args::EncoderArg::Auto,
        crf: None,
        preset: preset.map(str::to_owned),
        overwrite: true,
        skip_existing: false,
        max_frames: args.frames,
        // One worker: the benchmark measures one pipeline's stages.
        segments: crate::args::SegmentArgs {
            segment_frames: args.segment_frames,
            jobs: Some(1),
            work: None,
            keep_work: false,
            restart: false,
        },
        run: args.run.clone(),
    };
    let config = pipeline_config(
        global,
        &args.run,
        &as_upscale,
        encoder,
        &args.input,
        &scratch,
    )?;
    let cancel = interrupt_on_ctrl_c(crate::interrupt::ON_BENCHMARK)?;
    // The passes' work folder is scratch (run_benchmark removes it however a pass ends);
    // a second Ctrl+C, which leaves at once, removes it too.
    crate::interrupt::remove_on_abort(WorkFolder::beside(&scratch).path());
    let progress = progress_view::sink_for(args.run.progress);
    let report = run_benchmark(&config, progress.as_ref(), &cancel)?;
    crate::interrupt::work_over();
    // A Ctrl+C during the null pass ends the benchmark (exit 130): a partial benchmark is
    // one whose full pass was stopped.
    progress_view::run_ended(args.run.progress, Some(report.full_report.status));
    super::print_result(args.run.json, &report, summary::print_benchmark);
    // Stopped by Ctrl+C during the full pass: measured on the frames done, exit 130.
    Ok(super::exit_code_of(report.full_report.status))
}
