//! Command-line arguments of every `rave` command, with the help text users read.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::bounds::{
    self, MAX_DEADLINE_MS, MAX_FRAMES, MAX_GPU, MAX_THREADS, MAX_TILE_OVERLAP, MAX_WORKSPACE_MIB,
};

const EXIT_CODES: &str = "\
Exit codes:
  0    success
  1    internal error (a bug in RAVE; please report it)
  2    bad option or value (each numeric option says its accepted range), a GPU-only
       option with --device cpu, a --tile its input shapes exclude, a --vram-limit too small
       for the model even in the smallest tiles, --gpus naming a GPU the machine lacks,
       a --models-dir / RAVE_MODELS_DIR that is not a folder, or a work folder holding
       another job, other settings or an input changed since (--restart starts over)
  3    input problem: missing, unreadable, not a video, corrupt, or undecodable codec; a
       pipe, stdin or a device (save it to a regular file first)
  4    output problem: exists (use --overwrite), being written by another rave run, cannot
       be written, a name RAVE cannot use until it changes (a folder or a link to nothing
       in its place, too long; code 507), a stream the container cannot hold (code 310), a
       frame size the encoder cannot code (code 307), encode or mux failure
  5    model problem: missing, not ONNX, or not an image-to-image model, or with --tile
       off a fixed-size model of another size than the frames or a model of a side
       multiple the frames are not
  6    runtime problem: ONNX Runtime library missing or unusable (--ort-lib or
       ORT_DYLIB_PATH naming one that does not load), or GPU problem (CUDA driver error,
       VRAM limit, or a --backend / RAVE_ORT_TENSORRT provider that cannot run)
  7    incomplete: `rave assemble` while segments of the job are not done (it names them);
       `rave upscale --gpus` where segments failed on two GPUs, or no worker that could
       run them was left (it names each and why; the finished segments are kept, and the
       same command again resumes)
  130  interrupted (Ctrl+C); a finalized NAME.partial.EXT (or NAME.partial-N.EXT when
       that name is taken) keeps the frames done; nothing is kept before the first frame

  Several inputs or a folder (one run per input): 0 when every input was done; else the
  code of the first input that failed (the others are still done); 130 when Ctrl+C
  stopped the batch (the inputs after the current one are not started). Refused before
  any work: -o naming a file (2), a folder with no video files (3), two inputs that would
  be written to one output name, or an output that is one of the inputs (4).

Environment:
  RAVE_HOME        install folder (default ~/.local/share/rave): models/ and lib/
  RAVE_MODELS_DIR  extra folder searched first for -m NAME (must exist)
  ORT_DYLIB_PATH   the ONNX Runtime library to load (libonnxruntime.so; an error if it does
                   not load); its folder is also searched for the GPU provider libraries
  ORT_LIB_LOCATION another folder searched for the GPU provider libraries
  RAVE_ORT_TENSORRT  GPU provider when --backend is absent: auto (default); 0/off/false/cuda/
                   cuda-only for CUDA; 1/on/true/trt/trt-only for TensorRT (a provider chosen
                   here or by --backend needs the GPU: no fallback to the CPU)
  RAVE_LOG         log filter (e.g. info, debug)
  RAVE_INJECT_FAILURE  for testing a run's failure handling: FRAMES[@GPU] makes each segment
                   worker's inference (with @GPU, only that GPU's workers', never the
                   CPU's) fail like a broken GPU after FRAMES frames
  RAVE_INJECT_PANIC  for testing how a bug is reported: the command panics (`thread`: on
                   a thread, as the stages run; said in one line, exit 1)
  RAVE_TEST_GPU_COPIES  for testing --gpus on a machine with one GPU: N (2 to 8) shows
                   GPU 0 as GPUs 0 to N-1, each running on GPU 0 (speeds are one GPU's)";

/// RAVE upscales video with AI super-resolution models, keeping audio, subtitles,
/// chapters, timestamps and colour tags.
#[derive(Debug, Parser)]
#[command(name = "rave", version, after_help = EXIT_CODES)]
pub struct Cli {
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
    /// Options shared by the commands that load models.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// More log output on stderr (-v info, -vv debug).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

/// Where models and the runtime library are looked up.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Folder searched first for models named with -m (must exist).
    #[arg(long, global = true, value_name = "DIR")]
    pub models_dir: Option<PathBuf>,
    /// ONNX Runtime library to load (overrides ORT_DYLIB_PATH; an error if it does not load).
    #[arg(long, global = true, value_name = "PATH")]
    pub ort_lib: Option<PathBuf>,
}

/// `rave plan -i`: one file (a plan is one job; `rave upscale` takes folders and lists).
const PLAN_INPUT_HELP: &str =
    "Input video file: one (a plan is one job; rave upscale takes folders and several files)";

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Upscale a video: decode, run the model on every frame, encode, and copy every other
    /// stream (audio, subtitles, attachments), chapters and metadata untouched.
    Upscale(UpscaleArgs),
    /// Measure each stage's throughput and the overall frames per second on a clip.
    Benchmark(BenchmarkArgs),
    /// Describe a media file: streams, size, frame rate, duration, colour, rotation.
    Probe(ProbeArgs),
    /// List the installed models with their scale.
    Models(ModelsArgs),
    /// Show the GPUs, what NVDEC decodes, whether NVENC opens, which ONNX Runtime library
    /// loads and which of its GPU providers do (and why not); exit 6 where ONNX Runtime does
    /// not load (nothing could run, GPU or not).
    Devices(DevicesArgs),
    /// Plan an upscale as segments for several machines: write the job's manifest into the
    /// work folder (--work, on storage every worker shares) and print the segment count.
    /// Takes every `rave upscale` option; then run `rave segment` for each index and
    /// `rave assemble` (see deploy/ for Slurm and Kubernetes).
    #[command(
        mut_arg("input", |a| a
            .help(PLAN_INPUT_HELP)
            .long_help(PLAN_INPUT_HELP)),
        mut_arg("skip_existing", |a| a.hide(true))
    )]
    Plan(UpscaleArgs),
    /// Upscale one segment of a planned job. Done already: exits 0 at once; two workers
    /// on one segment leave one good result.
    Segment(SegmentCmdArgs),
    /// Write the output of a planned job from its finished segments (exit 7 naming the
    /// segments not done yet).
    Assemble(WorkArgs),
    /// List the segments of a planned job and their states.
    Status(StatusArgs),
}

/// `rave segment`.
#[derive(Debug, Args)]
pub struct SegmentCmdArgs {
    /// The job's work folder (as given to `rave plan --work`).
    #[arg(long, value_name = "DIR")]
    pub work: PathBuf,
    /// The segment, from 0 (default: SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX or
    /// AWS_BATCH_JOB_ARRAY_INDEX, the first one set).
    #[arg(long, value_name = "I", allow_negative_numbers = true,
          value_parser = bounds::whole::<usize>(0, MAX_FRAMES))]
    pub index: Option<usize>,
    /// Print JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `rave status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The job's work folder (as given to `rave plan --work`, or `.OUT.rave-work` beside
    /// the output of `rave upscale`).
    #[arg(long, value_name = "DIR")]
    pub work: PathBuf,
    /// Print JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `rave assemble`.
#[derive(Debug, Args)]
pub struct WorkArgs {
    /// The job's work folder (as given to `rave plan --work`).
    #[arg(long, value_name = "DIR")]
    pub work: PathBuf,
    /// Keep the work folder after assembling.
    #[arg(long)]
    pub keep_work: bool,
    /// Replace the output if it exists (also when the job was planned without --overwrite).
    #[arg(long)]
    pub overwrite: bool,
    /// Print JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

impl Command {
    /// The progress display asked for, where the command shows progress.
    pub fn progress(&self) -> Option<ProgressArg> {
        match self {
            Command::Upscale(a) => Some(a.run.progress),
            Command::Benchmark(a) => Some(a.run.progress),
            Command::Plan(a) => Some(a.run.progress),
            _ => None,
        }
    }

    /// Whether the command was asked for JSON output.
    pub fn json(&self) -> bool {
        match self {
            Command::Upscale(a) => a.run.json,
            Command::Benchmark(a) => a.run.json,
            Command::Probe(a) => a.json,
            Command::Models(a) => a.json,
            Command::Devices(a) => a.json,
            Command::Plan(a) => a.run.json,
            Command::Segment(a) => a.json,
            Command::Assemble(a) => a.json,
            Command::Status(a) => a.json,
        }
    }
}

/// Which encoder writes the video.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EncoderArg {
    /// NVENC where the frames are on the GPU and a session opens for --codec at the output's
    /// size, else the software encoder of --codec (the report says which and why).
    Auto,
    /// NVIDIA's hardware encoder for --codec (h264_nvenc, hevc_nvenc, av1_nvenc where FFmpeg
    /// has it) from CUDA surfaces, no host copy; refused (exit 6) where no session opens.
    /// Not yet run on NVENC hardware (see docs/NVENC.md).
    Nvenc,
    /// libx264 (H.264).
    X264,
    /// libx265 (HEVC).
    X265,
    /// SVT-AV1 (AV1).
    Svtav1,
}

/// Output video codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CodecArg {
    /// H.264 with libx264.
    H264,
    /// HEVC with libx265.
    Hevc,
    /// AV1 with SVT-AV1.
    Av1,
}

impl From<CodecArg> for rave_ffmpeg::VideoCodec {
    fn from(codec: CodecArg) -> Self {
        match codec {
            CodecArg::H264 => Self::H264,
            CodecArg::Hevc => Self::Hevc,
            CodecArg::Av1 => Self::Av1,
        }
    }
}

/// Where inference runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DeviceArg {
    /// The GPU when its driver, ONNX Runtime's GPU providers and the model all come up; else
    /// the CPU, and the report says why.
    Auto,
    /// The CPU.
    Cpu,
    /// The GPU, or an error saying what is missing.
    Gpu,
}

/// What runs the model on the GPU.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum BackendArg {
    /// RAVE's native engine where it takes the model and the GPU, else ONNX Runtime with
    /// TensorRT, else CUDA; the report says which ran and why.
    Auto,
    /// RAVE's native engine only (SRVGGNetCompact and RRDBNet models on Hopper GPUs so far).
    Native,
    /// TensorRT only.
    Tensorrt,
    /// CUDA only.
    Cuda,
}

/// Which decoder the GPU path uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DecoderArg {
    /// NVDEC where it takes the codec, profile and size (frames stay on the GPU); FFmpeg's
    /// software decoder otherwise.
    Auto,
    /// FFmpeg's software decoder (one upload per frame).
    Software,
}

/// Inference precision on the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PrecisionArg {
    /// FP16 where available (the model's -fp16 variant; FP16 TensorRT kernels).
    Auto,
    /// Float32 throughout.
    Fp32,
    /// Half precision (needs the -fp16 variant of a float32 model).
    Fp16,
    /// TensorRT INT8 with --int8-calibration.
    Int8,
}

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProgressArg {
    /// A bar on a terminal, nothing otherwise.
    Auto,
    /// Always progress on stderr: the bar on a terminal; elsewhere (a log file, a pipe) a
    /// plain line when the run starts, every 5 seconds and when it ends.
    Bar,
    /// One JSON object per line on stderr: started, progress (each frame), warning,
    /// interrupt, input (a batch's), and last finished (with its status) or error.
    Jsonl,
    /// Nothing.
    Off,
}

/// Options of a pipeline run, shared by upscale and benchmark.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Model: an installed name (see `rave models`) or a path to an .onnx file.
    #[arg(short, long, default_value = "realesr-animevideov3-x2")]
    pub model: String,
    /// Where inference runs.
    #[arg(long, value_enum, default_value_t = DeviceArg::Auto)]
    pub device: DeviceArg,
    /// Inference threads on the CPU, 0 to 1024 (0 = one per core).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true,
          value_parser = bounds::whole::<usize>(0, MAX_THREADS))]
    pub threads: usize,
    /// Keep going when the input has corrupt frames (they are counted in the report).
    #[arg(long)]
    pub allow_corrupt: bool,
    /// Capacities of the decode, preprocess and inference channels, 1 to 64 frames each.
    #[arg(long, value_name = "D,P,I", value_parser = bounds::capacities, default_value = "4,2,4",
          allow_hyphen_values = true)]
    pub channels: [usize; 3],
    /// Cut each frame into overlapping tiles for the model, and blend them back so no seam
    /// shows: auto tiles only where the model cannot take the whole frame (a fixed-size
    /// model smaller than the frame, at its size; one larger gets the frame padded to it)
    /// or, on the GPU, where the whole frame does
    /// not fit the VRAM budget (--vram-limit, else the GPU's free memory): then the largest
    /// tiles that fit; off never; WxH tiles of W x H input pixels (1 to 16384 each). A model
    /// whose sides must be multiples of a block (pixel-unshuffle, as Real-ESRGAN x2/x1) gets
    /// the frame padded to the next multiple (mirrored, cut from the output) and tile sides
    /// rounded down to multiples; off then refuses such frames. The report says what ran
    /// and why.
    #[arg(long, value_name = "auto|off|WxH", default_value = "auto", allow_hyphen_values = true,
          value_parser = bounds::tile)]
    pub tile: rave_pipeline::TileMode,
    /// Input pixels neighbouring tiles share at least, 0 to 4096 and under half a tile; the
    /// tiles are blended across it [default: 16, lowered to under half a tile for tiles
    /// too small for it].
    #[arg(long, value_name = "N", allow_negative_numbers = true,
          value_parser = bounds::whole::<u32>(0, MAX_TILE_OVERLAP))]
    pub tile_overlap: Option<u32>,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Progress display.
    #[arg(long, value_enum, default_value_t = ProgressArg::Auto)]
    pub progress: ProgressArg,
    /// GPU options.
    #[command(flatten)]
    pub gpu: GpuArgs,
}

/// Options of the GPU path. Each is `None` (or `false`) unless given on the command line, so
/// that one given with `--device cpu` can be refused; the defaults in the help text are
/// applied by `commands::upscale::gpu_options`.
#[derive(Debug, Clone, Args)]
#[command(
    next_help_heading = "GPU (refused with --device cpu; ignored, with a warning, when --device auto runs on the CPU)"
)]
pub struct GpuArgs {
    /// GPU to use, 0 to 63 (see `rave devices`) [default: 0].
    #[arg(long = "gpu", value_name = "N", allow_negative_numbers = true,
          value_parser = bounds::whole::<usize>(0, MAX_GPU))]
    pub gpu_index: Option<usize>,
    /// GPUs to spread the segments over: indices like 0,1, or all (see `rave devices`);
    /// each runs its own segment workers (`rave upscale`: --jobs of them, default 2;
    /// `rave benchmark`: one), with its own model,
    /// streams and memory budget. The list is checked before any work: GPUs this machine
    /// does not have are refused (exit 2), also where --device auto would otherwise run on
    /// the CPU. `--gpus 0` is the default run, as without --gpus (on a machine without a
    /// GPU, --device auto runs it on the CPU); `all` of no GPU likewise
    /// [default: the one of --gpu].
    #[arg(long, value_name = "LIST|all", value_parser = rave_pipeline::gpu_list::parse_gpus,
          allow_hyphen_values = true,
          conflicts_with = "gpu_index")]
    pub gpus: Option<rave_pipeline::gpu_list::GpuSelection>,
    /// What runs the model on the GPU [default: RAVE_ORT_TENSORRT, else auto]: auto takes
    /// RAVE's native engine where it takes the model (SRVGGNetCompact or RRDBNet, on a
    /// Hopper GPU, with --precision auto/fp16 and no --max-batch/--cuda-graph), else ONNX
    /// Runtime. native, tensorrt or cuda needs that engine: where it cannot run, the run
    /// fails instead of using another.
    #[arg(long, value_enum)]
    pub backend: Option<BackendArg>,
    /// Precision [default: auto].
    #[arg(long, value_enum)]
    pub precision: Option<PrecisionArg>,
    /// TensorRT INT8 calibration table (with --precision int8).
    #[arg(long, value_name = "FILE")]
    pub int8_calibration: Option<PathBuf>,
    /// Where TensorRT keeps built engines (default: trt_cache beside the model).
    #[arg(long, value_name = "DIR")]
    pub engine_cache: Option<PathBuf>,
    /// TensorRT builder workspace limit in MiB, 1 to 1048576 [default: TensorRT's].
    #[arg(long, value_name = "MIB", allow_negative_numbers = true,
          value_parser = bounds::whole::<usize>(1, MAX_WORKSPACE_MIB))]
    pub trt_workspace: Option<usize>,
    /// Frames per inference, 1 to 16 (needs a model with a dynamic batch axis; 1 is fastest
    /// measured) [default: 1].
    #[arg(long, value_name = "N", allow_negative_numbers = true,
          value_parser = bounds::whole::<usize>(1, rave_tensorrt::gpu_backend::MAX_BATCH as i64))]
    pub max_batch: Option<usize>,
    /// Longest wait for a batch to fill, from its first frame, 0 to 10000 [default: 8].
    #[arg(long, value_name = "MS", allow_negative_numbers = true,
          value_parser = bounds::decimal(0.0, MAX_DEADLINE_MS))]
    pub batch_deadline_ms: Option<f64>,
    /// Capture CUDA graphs and replay them (frames then pass through a staging copy).
    #[arg(long)]
    pub cuda_graph: bool,
    /// Decoder on the GPU path (the report says which ran) [default: auto].
    #[arg(long, value_enum)]
    pub decoder: Option<DecoderArg>,
    /// Most GPU memory the run may use, e.g. 6GiB, 512MiB, 8GB: RAVE's own buffers, ONNX
    /// Runtime's arena and the native engine's maps together. A model that does not fit is
    /// tiled (--tile auto) or refused before the first frame (exit 2 where even the smallest
    /// tile does not fit, 6 where a given --tile does not); the report gives the peak used.
    /// Proves on a big GPU that a run fits a small one (the CUDA context itself, about
    /// 0.5 GiB, and NVDEC's surfaces are not in it). At least 16MiB [default: the GPU's
    /// free memory].
    #[arg(long, value_name = "SIZE", value_parser = bounds::vram_size)]
    pub vram_limit: Option<usize>,
}

impl GpuArgs {
    /// `--max-batch` when not given (the help text says so too).
    pub const DEFAULT_MAX_BATCH: usize = 1;
    /// `--batch-deadline-ms` when not given (the help text says so too).
    pub const DEFAULT_BATCH_DEADLINE_MS: f64 = 8.0;

    /// The GPU-only options given on the command line, by flag.
    pub fn given(&self) -> Vec<&'static str> {
        [
            ("--gpu", self.gpu_index.is_some()),
            ("--gpus", self.gpus.is_some()),
            ("--backend", self.backend.is_some()),
            ("--precision", self.precision.is_some()),
            ("--int8-calibration", self.int8_calibration.is_some()),
            ("--engine-cache", self.engine_cache.is_some()),
            ("--trt-workspace", self.trt_workspace.is_some()),
            ("--max-batch", self.max_batch.is_some()),
            ("--batch-deadline-ms", self.batch_deadline_ms.is_some()),
            ("--cuda-graph", self.cuda_graph),
            ("--decoder", self.decoder.is_some()),
            ("--vram-limit", self.vram_limit.is_some()),
        ]
        .into_iter()
        .filter_map(|(flag, given)| given.then_some(flag))
        .collect()
    }
}

/// `rave upscale`.
#[derive(Debug, Args)]
pub struct UpscaleArgs {
    /// Input video; or several (-i a.mkv -i b.mp4, or -i a.mkv b.mp4), or a folder: the
    /// files directly in it with a video extension (.mp4 .mkv .mov .avi .webm .ts ...),
    /// sorted by name, hidden files, RAVE's partial outputs (NAME.partial.EXT: a Matroska one
    /// only where it carries RAVE's tag) and RAVE's outputs of the videos beside them (a
    /// batch into its own folder, run again) left out and listed. Each input is upscaled in
    /// turn; one that fails is reported and the others are still done.
    #[arg(short, long, value_name = "IN", num_args = 1.., required = true)]
    pub input: Vec<PathBuf>,
    /// Output file: .mp4 (or .m4v), .mkv or .mov (use .mkv for subtitles MP4 cannot hold). With
    /// several inputs, a folder input, or OUT an existing folder or ending in '/': the output
    /// folder (created if missing), where each output takes its input's file name, and its
    /// extension when RAVE writes that container (.mp4 .m4v .mov .mkv), else .mkv.
    #[arg(short, long, value_name = "OUT")]
    pub output: PathBuf,
    /// Output video codec [default: h264, or the one --encoder implies].
    #[arg(long, value_enum)]
    pub codec: Option<CodecArg>,
    /// Encoder.
    #[arg(long, value_enum, default_value_t = EncoderArg::Auto)]
    pub encoder: EncoderArg,
    /// Constant rate factor: lower is better quality; 0-51 for h264 and hevc, 0-63 for av1
    /// (default 18 h264, 20 hevc, 28 av1). With NVENC: constant quality (rc vbr, cq CRF, no
    /// bitrate cap; av1's 0-63 scaled to NVENC's 0-51; 0 is constant QP 0).
    #[arg(long, allow_negative_numbers = true,
          value_parser = bounds::whole_in::<u32>(0, 63, Some("0 to 51 for h264 and hevc, 0 to 63 for av1")))]
    pub crf: Option<u32>,
    /// Encoder preset: ultrafast..placebo for h264/hevc (default medium), 0-13 for av1 (default
    /// 8). With NVENC also p1 (fastest)..p7 (best); the other names map by speed (medium p4).
    #[arg(long, allow_negative_numbers = true)]
    pub preset: Option<String>,
    /// Replace OUT (and an existing OUT's NAME.partial.EXT after Ctrl+C) if it exists; the
    /// input is never replaced.
    #[arg(long)]
    pub overwrite: bool,
    /// Leave alone an input whose output already exists as a file (reported as skipped,
    /// exit 0) instead of failing with exit 4: run the same batch again after some inputs
    /// failed or were interrupted, and only those are done (an interrupted one resumes from
    /// its work folder). RAVE puts an output in place only once it is complete.
    #[arg(long, conflicts_with = "overwrite")]
    pub skip_existing: bool,
    /// Upscale only the first N frames, 1 to 1000000000; the copied streams (audio,
    /// subtitles) and the chapters end with them.
    #[arg(long, value_name = "N", allow_negative_numbers = true,
          value_parser = bounds::whole::<u64>(1, MAX_FRAMES))]
    pub max_frames: Option<u64>,
    /// Segments, parallel workers and the work folder.
    #[command(flatten)]
    pub segments: SegmentArgs,
    /// Shared pipeline options.
    #[command(flatten)]
    pub run: RunArgs,
}

/// How a job is cut into segments, run and resumed.
#[derive(Debug, Args, Clone)]
pub struct SegmentArgs {
    /// Target segment length in frames, 1 to 1000000000 (default: about a minute of video,
    /// shorter with several workers (--jobs, --gpus) so that each gets about four segments,
    /// down to 2 s); each segment ends at the next keyframe after it. A shorter clip is one
    /// segment.
    #[arg(long, value_name = "N", allow_negative_numbers = true,
          value_parser = bounds::whole::<u64>(1, MAX_FRAMES))]
    pub segment_frames: Option<u64>,
    /// Segments upscaled at once, 1 to 64 (on each GPU of --gpus), each with its own
    /// decoder, model session and encoder (default: 2 where a GPU runs the model, 1 on the
    /// CPU). More helps where the
    /// software encoder is the bottleneck (slow presets, x265, many cores). On a GPU they
    /// share its memory: each gets its part of --vram-limit, or of what is free.
    #[arg(long, value_name = "N", allow_negative_numbers = true,
          value_parser = bounds::whole::<usize>(1, 64))]
    pub jobs: Option<usize>,
    /// Work folder for the segments and the job's manifest (default: .OUT.rave-work beside
    /// the output). It is removed after a complete run; an interrupted run keeps it, and
    /// the same command resumes from its finished segments.
    #[arg(long, value_name = "DIR")]
    pub work: Option<PathBuf>,
    /// Keep the work folder after a complete run.
    #[arg(long)]
    pub keep_work: bool,
    /// Discard a work folder planned with other settings (or another input) and start over.
    #[arg(long)]
    pub restart: bool,
}

/// `rave benchmark`.
#[derive(Debug, Args)]
pub struct BenchmarkArgs {
    /// Input clip.
    #[arg(short, long, value_name = "IN")]
    pub input: PathBuf,
    /// Frames to measure, 1 to 1000000000 (default: the whole clip).
    #[arg(long, value_name = "N", allow_negative_numbers = true,
          value_parser = bounds::whole::<u64>(1, MAX_FRAMES))]
    pub frames: Option<u64>,
    /// Video codec of the encode stage (its software encoder: libx264, libx265, SVT-AV1).
    #[arg(long, value_enum, default_value_t = CodecArg::H264)]
    pub codec: CodecArg,
    /// Encoder preset of the encode stage [default: veryfast for h264 and hevc, the
    /// encoder's own default for av1].
    #[arg(long)]
    pub preset: Option<String>,
    /// Segment length for the two pipeline runs, as `rave upscale --segment-frames` (default
    /// as there); compare with a large value to see what segmenting costs.
    #[arg(long, value_name = "N", allow_negative_numbers = true,
          value_parser = bounds::whole::<u64>(1, MAX_FRAMES))]
    pub segment_frames: Option<u64>,
    /// Shared pipeline options.
    #[command(flatten)]
    pub run: RunArgs,
}

/// `rave probe`.
#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// Media file to describe.
    #[arg(value_name = "IN")]
    pub input: PathBuf,
    /// Print JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `rave devices`.
#[derive(Debug, Args)]
pub struct DevicesArgs {
    /// Print JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `rave models`.
#[derive(Debug, Args)]
pub struct ModelsArgs {
    /// Print JSON on stdout.
    #[arg(long)]
    pub json: bool,
}
