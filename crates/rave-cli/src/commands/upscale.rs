//! `rave upscale`: build the run configuration from the flags, stop cleanly on Ctrl+C, run
//! the pipeline and print the report; several inputs or a folder are handed to `batch`.

use std::path::Path;

use rave_core::batch::Batching;
use rave_core::error::{EngineError, Result};
use rave_ffmpeg::encoder_choice::{EncoderPick, EncoderRequest, choose_encoder};
use rave_ffmpeg::hw_caps::nvenc_session;
use rave_ffmpeg::{EncoderSettings, VideoCodec};
use rave_pipeline::injected_failure::InjectedFailure;
use rave_pipeline::{
    ChannelCapacities, Device, GpuOptions, NativeChoice, PrecisionChoice, TileRequest,
    UpscaleConfig, run_upscale,
};
use rave_tensorrt::ep_policy::EpPolicy;

use crate::args::{
    BackendArg, CodecArg, DecoderArg, DeviceArg, EncoderArg, GlobalArgs, GpuArgs, PrecisionArg,
    ProgressArg, RunArgs, UpscaleArgs,
};
use crate::batch::{self, InputJob, Plan};
use crate::console::outln;
use crate::interrupt::interrupt_on_ctrl_c;
use crate::{locate, progress_view, summary};

/// Run `rave upscale`; returns the exit code (0, or 130 for a partial run; a batch's is
/// described in `batch::BatchReport::new`).
pub fn run(global: &GlobalArgs, args: &UpscaleArgs) -> Result<i32> {
    let encoder = encoder_settings(args)?;
    let job = match batch::plan(&args.input, &args.output)? {
        Plan::Single(job) => job,
        Plan::Batch { .. } if args.segments.work.is_some() => {
            return Err(EngineError::Config(
                "--work names one job's work folder: with several inputs each has its own, beside its output (.NAME.rave-work); leave --work out, or upscale each input with its own --work".into(),
            ));
        }
        Plan::Batch {
            folder,
            jobs,
            left_out,
        } => return batch::run(global, args, encoder, &folder, &jobs, left_out),
    };
    let config = pipeline_config(global, &args.run, args, encoder, &job.input, &job.output)?;
    if args.skip_existing && job.is_done() {
        // A run that died after its output took its name left the work folder.
        rave_pipeline::segments::job::remove_finished_work(&config);
        return Ok(skip(args, &job));
    }
    let cancel = interrupt_on_ctrl_c(crate::interrupt::ON_UPSCALE)?;
    let progress = progress_view::sink_for(args.run.progress);
    let report = match run_upscale(&config, progress.as_ref(), &cancel) {
        Err(e) if job.finished_meanwhile(&e, args.skip_existing) => return Ok(skip(args, &job)),
        run => run?,
    };
    crate::interrupt::work_over();
    progress_view::run_ended(args.run.progress, Some(report.status));
    super::print_result(args.run.json, &report, summary::print_run);
    Ok(super::exit_code_of(report.status))
}

/// Leave `job` alone, its output existing (`--skip-existing`): say so (the `skipped` event,
/// `{"status": "skipped", ...}` with `--json`, else a line) and exit 0.
fn skip(args: &UpscaleArgs, job: &InputJob) -> i32 {
    if args.run.progress == ProgressArg::Jsonl {
        progress_view::announce_skip(args.run.progress, None, job);
    }
    let skipped = serde_json::json!({
        "status": "skipped", "input": job.input, "output": job.output,
    });
    super::print_result(args.run.json, &skipped, |_| {
        outln!(
            "skipped: {} -> {} (it exists; --skip-existing)",
            job.input.display(),
            job.output.display()
        )
    });
    0
}

/// The configuration of one `rave upscale` of `input` into `output` with `args`' settings.
pub fn config_for(
    global: &GlobalArgs,
    args: &UpscaleArgs,
    input: &Path,
    output: &Path,
) -> Result<UpscaleConfig> {
    let encoder = encoder_settings(args)?;
    pipeline_config(global, &args.run, args, encoder, input, output)
}

/// `config_for` where the model is `model` as it is, found or not (`rave assemble` joins
/// segments: it runs no model, and its node need not have the plan's models, model folder
/// or runtime library).
pub fn config_with_model(
    args: &UpscaleArgs,
    input: &Path,
    output: &Path,
    model: &Path,
) -> Result<UpscaleConfig> {
    let global = GlobalArgs {
        models_dir: None,
        ort_lib: None,
    };
    let encoder = encoder_settings(args)?;
    config_of(&global, &args.run, args, encoder, (input, output), || {
        Ok(model.to_path_buf())
    })
}

/// The encoder settings of `--codec`, `--encoder`, `--crf` and `--preset`: `auto` asks for
/// NVENC where a session opens at the output's size (decided once the input is read) and
/// the software encoder otherwise; `nvenc` is refused here, before the input is read, where
/// no session opens (FFmpeg's answer), and takes NVENC's presets (p1..p7) besides the usual
/// names.
fn encoder_settings(args: &UpscaleArgs) -> Result<EncoderSettings> {
    let gpu = &args.run.gpu;
    // Every GPU of --gpus runs its own encoders: each must open an NVENC session.
    let gpus = match (args.encoder, args.run.device) {
        (EncoderArg::Nvenc, DeviceArg::Auto | DeviceArg::Gpu) => rave_pipeline::gpu_list::resolve(
            gpu.gpus.as_ref(),
            gpu.gpu_index.unwrap_or(0),
            rave_core::gpu::probe_driver,
        )?,
        _ => vec![gpu.gpu_index.unwrap_or(0)],
    };
    let codec = choose_codec(args.codec, args.encoder, args.run.device, &gpus)?;
    let (crf, preset) = (args.crf, args.preset.as_deref());
    Ok(match args.encoder {
        EncoderArg::Nvenc => EncoderSettings::for_nvenc(codec, crf, preset)?,
        EncoderArg::Auto => EncoderSettings {
            request: EncoderRequest::Auto,
            ..EncoderSettings::new(codec, crf, preset)?
        },
        _ => EncoderSettings::new(codec, crf, preset)?,
    })
}

/// The codec from `--codec` and `--encoder` (which must agree); `nvenc` is refused with the
/// reason where no session opens on one of `gpus` (FFmpeg's own answer, naming the GPU
/// where there are several).
fn choose_codec(
    codec: Option<CodecArg>,
    encoder: EncoderArg,
    device: DeviceArg,
    gpus: &[usize],
) -> Result<VideoCodec> {
    let implied = match encoder {
        EncoderArg::X264 => Some(CodecArg::H264),
        EncoderArg::X265 => Some(CodecArg::Hevc),
        EncoderArg::Svtav1 => Some(CodecArg::Av1),
        EncoderArg::Auto | EncoderArg::Nvenc => None,
    };
    let chosen = match (codec, implied) {
        (Some(c), Some(i)) if c != i => {
            return Err(EngineError::Config(
                format!(
                    "--encoder {encoder:?} writes {i:?}, not --codec {c:?}; drop one of the two"
                )
                .to_lowercase(),
            ));
        }
        (c, i) => c.or(i).unwrap_or(CodecArg::H264),
    };
    let codec = VideoCodec::from(chosen);
    if encoder == EncoderArg::Nvenc {
        // Before the input is read: a small 8-bit test session (frames are on the GPU unless
        // --device cpu); the session at the output's size is asked once the input is read.
        let on_gpu = device != DeviceArg::Cpu;
        for &gpu in gpus {
            let pick = choose_encoder(EncoderRequest::Nvenc, codec, None, 8, on_gpu, |ask| {
                // Where no context can be made there, FFmpeg's own probe says why.
                rave_pipeline::gpu_stages::nvenc_session_on_gpu(ask, gpu, |_| nvenc_session(ask))
            });
            let on = |why: String| match gpus.len() {
                1 => why,
                _ => format!("GPU {gpu} of --gpus: {why}"),
            };
            match pick {
                Ok(EncoderPick::Nvenc { .. }) => {}
                Ok(EncoderPick::Software { reason }) => {
                    return Err(EngineError::Config(on(reason)));
                }
                // --device cpu with --encoder nvenc: the options disagree (exit 2).
                Err(refusal) if !on_gpu => return Err(EngineError::Config(refusal)),
                Err(refusal) => return Err(EngineError::NoGpu(on(refusal))),
            }
        }
    }
    Ok(codec)
}

/// The run configuration for `rave upscale` of `input` into `output` (also used by
/// `rave benchmark`).
pub fn pipeline_config(
    global: &GlobalArgs,
    run: &RunArgs,
    args: &UpscaleArgs,
    encoder: EncoderSettings,
    input: &Path,
    output: &Path,
) -> Result<UpscaleConfig> {
    config_of(global, run, args, encoder, (input, output), || {
        locate::resolve_model(&run.model, &locate::model_dirs(global)?)
    })
}

/// The run configuration with the model `model` finds (asked after the options are
/// checked, so an option error comes first).
fn config_of(
    global: &GlobalArgs,
    run: &RunArgs,
    args: &UpscaleArgs,
    encoder: EncoderSettings,
    (input, output): (&Path, &Path),
    model: impl FnOnce() -> Result<std::path::PathBuf>,
) -> Result<UpscaleConfig> {
    let given = run.gpu.given();
    if run.device == DeviceArg::Cpu && !given.is_empty() {
        return Err(EngineError::Config(format!(
            "{} only appl{} to the GPU path, not with --device cpu; drop {} or use --device auto or gpu",
            given.join(", "),
            if given.len() == 1 { "ies" } else { "y" },
            if given.len() == 1 { "it" } else { "them" },
        )));
    }
    let tiling = TileRequest {
        mode: run.tile,
        overlap: run
            .tile_overlap
            .unwrap_or(rave_core::tiling::DEFAULT_OVERLAP),
        overlap_given: run.tile_overlap.is_some(),
    };
    tiling.validate()?;
    Ok(UpscaleConfig {
        tiling,
        inject_failure: injected_failure()?,
        input: input.to_path_buf(),
        output: output.to_path_buf(),
        model: model()?,
        encoder,
        device: match run.device {
            DeviceArg::Auto => Device::Auto,
            DeviceArg::Cpu => Device::Cpu,
            DeviceArg::Gpu => Device::Gpu,
        },
        gpu: gpu_options(&run.gpu)?,
        overwrite: args.overwrite,
        allow_corrupt: run.allow_corrupt,
        threads: run.threads,
        decoder_threads: None,
        channels: ChannelCapacities {
            decoded: run.channels[0],
            preprocessed: run.channels[1],
            inferred: run.channels[2],
        },
        runtime_candidates: locate::runtime_candidates(global),
        max_frames: args.max_frames,
        null_output: false,
        segments: rave_pipeline::SegmentOptions {
            segment_frames: args.segments.segment_frames,
            jobs: args.segments.jobs,
            work: args.segments.work.clone(),
            keep_work: args.segments.keep_work,
            restart: args.segments.restart,
            scratch: false,
            rerun: None,
            batch_outputs: Default::default(),
            options: Vec::new(),
        },
    })
}

/// `RAVE_INJECT_FAILURE=FRAMES[@GPU]`: make the workers' inference (on that GPU only) fail
/// after FRAMES frames, to test how a run survives a failing GPU.
fn injected_failure() -> Result<Option<InjectedFailure>> {
    match std::env::var("RAVE_INJECT_FAILURE") {
        Ok(v) if !v.trim().is_empty() => InjectedFailure::parse(&v)
            .map(Some)
            .map_err(|e| EngineError::Config(format!("RAVE_INJECT_FAILURE={v}: {e}"))),
        _ => Ok(None),
    }
}

/// The GPU options from the flags (and RAVE_ORT_TENSORRT when --backend is absent), with
/// the defaults the help text names.
pub fn gpu_options(args: &GpuArgs) -> Result<GpuOptions> {
    let flag = args.backend.map(|b| match b {
        BackendArg::Auto | BackendArg::Native => "auto",
        BackendArg::Tensorrt => "tensorrt",
        BackendArg::Cuda => "cuda",
    });
    let env = std::env::var("RAVE_ORT_TENSORRT").ok();
    let policy = EpPolicy::resolve(flag, env.as_deref())?;
    let native_flag = matches!(args.backend, Some(BackendArg::Native));
    let native = match (native_flag, policy) {
        (true, _) => NativeChoice::Required,
        (false, EpPolicy::Auto) => NativeChoice::Auto,
        (false, _) => NativeChoice::Off,
    };
    let provider_requested_by = match (policy, flag, &env) {
        _ if native_flag => Some("--backend native".to_string()),
        (EpPolicy::Auto, _, _) => None,
        (_, Some(f), _) => Some(format!("--backend {f}")),
        (_, None, e) => Some(format!("RAVE_ORT_TENSORRT={}", e.as_deref().unwrap_or(""))),
    };
    let precision = match (
        args.precision.unwrap_or(PrecisionArg::Auto),
        &args.int8_calibration,
    ) {
        (PrecisionArg::Int8, Some(table)) => PrecisionChoice::Int8(table.clone()),
        (PrecisionArg::Int8, None) => {
            return Err(EngineError::Config(
                "--precision int8 needs --int8-calibration FILE (a TensorRT calibration table for the model)".into(),
            ));
        }
        (_, Some(_)) => {
            return Err(EngineError::Config(
                "--int8-calibration is only used with --precision int8".into(),
            ));
        }
        (PrecisionArg::Auto, None) => PrecisionChoice::Auto,
        (PrecisionArg::Fp32, None) => PrecisionChoice::Fp32,
        (PrecisionArg::Fp16, None) => PrecisionChoice::Fp16,
    };
    // The ranges were checked when the arguments were parsed (crate::bounds).
    let deadline_ms = args
        .batch_deadline_ms
        .unwrap_or(GpuArgs::DEFAULT_BATCH_DEADLINE_MS);
    let gpus = rave_pipeline::gpu_list::resolve(
        args.gpus.as_ref(),
        args.gpu_index.unwrap_or(0),
        rave_core::gpu::probe_driver,
    )?;
    Ok(GpuOptions {
        device_id: gpus[0],
        gpus,
        native,
        policy,
        provider_requested_by,
        given: args.given().into_iter().map(String::from).collect(),
        vram_limit: args.vram_limit,
        workers_sharing: 1,
        workers_to_start: 1,
        precision,
        engine_cache: args.engine_cache.clone(),
        workspace_bytes: args.trt_workspace.map(|mib| mib << 20),
        batch: Batching {
            max_batch: args.max_batch.unwrap_or(GpuArgs::DEFAULT_MAX_BATCH),
            latency_deadline: std::time::Duration::from_secs_f64(deadline_ms / 1000.0),
        },
        cuda_graph: args.cuda_graph,
        nvdec: args.decoder.unwrap_or(DecoderArg::Auto) == DecoderArg::Auto,
        provider_search: locate::provider_search(),
    })
}
