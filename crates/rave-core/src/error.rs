//! `EngineError`: every failure RAVE reports, each with a stable numeric code, grouped into
//! families that map to the documented exit codes of the `rave` command.

use std::path::PathBuf;

use crate::damage::InputDamage;
use crate::types::PixelFormat;

/// Result alias used across RAVE.
pub type Result<T, E = EngineError> = std::result::Result<T, E>;

/// Every error RAVE can report. Codes are stable: 1xx GPU, 2xx model/inference, 3xx media,
/// 4xx pipeline invariants, 5xx files and configuration, 6xx cancellation.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The CUDA driver or a GPU call failed.
    #[error("CUDA error: {0}")]
    Cuda(String),
    /// A GPU was required but none is usable.
    #[error("no usable GPU: {0}")]
    NoGpu(String),
    /// An allocation would exceed the configured VRAM limit.
    #[error(
        "VRAM budget exceeded: {:.1} MiB more would bring the run to {:.1} MiB of its {:.1} MiB budget (--vram-limit, else the GPU's free memory); use smaller --tile, lower channel capacities or raise --vram-limit",
        mib(*.requested), mib(*.would_be), mib(*.limit)
    )]
    VramLimit {
        /// Bytes asked for.
        requested: usize,
        /// Use after the allocation.
        would_be: usize,
        /// The limit.
        limit: usize,
    },
    /// Inference failed inside the runtime.
    #[error("inference failed: {0}")]
    Inference(String),
    /// The model's inputs/outputs do not describe an image-to-image network RAVE can run.
    #[error("{0}")]
    ModelMetadata(String),
    /// A backend was used before `initialize`.
    #[error("backend used before initialize()")]
    NotInitialized,
    /// The model file does not exist.
    #[error("model not found: {0}")]
    ModelNotFound(String),
    /// The model file exists but is not a loadable ONNX model.
    #[error("{path}: not a loadable ONNX model: {reason}")]
    ModelInvalid {
        /// The model file.
        path: PathBuf,
        /// What the runtime said.
        reason: String,
    },
    /// A runtime library (ONNX Runtime, CUDA) could not be found or loaded.
    #[error("{0}")]
    RuntimeLibrary(String),
    /// A frame's pixel format is not what the stage expects.
    #[error("pixel format mismatch: expected {expected:?}, got {actual:?}")]
    FormatMismatch {
        /// Format the stage accepts.
        expected: PixelFormat,
        /// Format it was given.
        actual: PixelFormat,
    },
    /// Frame or tensor dimensions do not fit.
    #[error("dimension mismatch: {0}")]
    DimensionMismatch(String),
    /// A buffer is smaller than the data written to it.
    #[error("buffer too small: need {required} bytes, have {available}")]
    BufferTooSmall {
        /// Bytes needed.
        required: usize,
        /// Bytes available.
        available: usize,
    },
    /// An internal invariant was broken (a bug in RAVE).
    #[error("internal invariant violated: {0}")]
    InvariantViolation(String),
    /// The input file does not exist or cannot be read.
    #[error("{path}: {reason}")]
    InputUnreadable {
        /// The input file.
        path: PathBuf,
        /// Why it cannot be read.
        reason: String,
    },
    /// The input is readable but holds no video stream RAVE can use.
    #[error("{path}: {reason}")]
    NotAVideo {
        /// The input file.
        path: PathBuf,
        /// What was found instead.
        reason: String,
    },
    /// The input's video codec has no decoder in this FFmpeg build.
    #[error("{path}: {reason}")]
    UnsupportedCodec {
        /// The input file.
        path: PathBuf,
        /// Which codec, and what to do.
        reason: String,
    },
    /// The input is damaged: frames or audio are missing, or data could not be decoded.
    #[error("{path}: damaged input: {}{hint}", damage.describe())]
    CorruptStream {
        /// The input file.
        path: PathBuf,
        /// What was lost or damaged.
        damage: Box<InputDamage>,
        /// What the user can do.
        hint: String,
    },
    /// Decoding failed for a reason other than corrupt data.
    #[error("decode failed: {0}")]
    Decode(String),
    /// Encoding failed, or the encoder could not be opened.
    #[error("encode failed: {0}")]
    Encode(String),
    /// Reading the container failed.
    #[error("demux failed: {0}")]
    Demux(String),
    /// Writing the container failed.
    #[error("{0}")]
    Mux(String),
    /// A stream of the output (the upscaled video in the chosen codec, or one copied from
    /// the input) cannot be stored in the chosen container: refused before any work, and
    /// again on every run with the same options.
    #[error("{0}")]
    StreamUnstorable(String),
    /// The output file already exists and `--overwrite` was not given.
    #[error("{0}: output already exists; pass --overwrite to replace it")]
    OutputExists(PathBuf),
    /// The output cannot be created or written.
    #[error("{path}: cannot write output: {reason}")]
    OutputUnwritable {
        /// The output path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The output's name cannot be used, and will not on any run until the user changes it:
    /// too long for the names RAVE derives from it, the input's own, a folder or a link to
    /// nothing in its place, or a file where its work folder goes.
    #[error("{path}: cannot write output: {reason}")]
    OutputNameUnusable {
        /// The output path.
        path: PathBuf,
        /// Why, and what to do.
        reason: String,
    },
    /// An option or configuration value is invalid.
    #[error("{0}")]
    Config(String),
    /// Any other file-system failure.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// The run was cancelled (Ctrl+C).
    #[error("cancelled")]
    Cancelled,
    /// Another `rave` run is writing the same output right now.
    #[error(
        "{0}: output is being written by another rave run; wait for it to finish or choose another output path"
    )]
    OutputInUse(PathBuf),
    /// The run was cancelled before its first frame was written: nothing was kept.
    #[error("interrupted before the first frame was written; nothing was written")]
    CancelledBeforeOutput,
    /// The upscaled frame size is one the chosen encoder cannot code (refused before any
    /// frame is processed).
    #[error(
        "{}x{} upscaled x{scale} is {}x{}, but {encoder} needs {needs}; {advice}",
        input[0], input[1], output[0], output[1]
    )]
    OutputSizeUnsupported {
        /// The encoder (e.g. libx264).
        encoder: String,
        /// Input frame size [width, height].
        input: [u32; 2],
        /// The model's scale.
        scale: u32,
        /// Output frame size [width, height].
        output: [u32; 2],
        /// What the encoder needs (e.g. "an even width and height").
        needs: String,
        /// What the user can do.
        advice: String,
    },
    /// The muxer refused a copied packet as invalid: the input's data is damaged there
    /// (turned into a `CorruptStream` with the whole file's counts before it is reported).
    #[error("damaged input: {0}")]
    PacketRefused(String),
    /// Seeking to a segment's first keyframe landed after it (the container's index is
    /// wrong); the segment is decoded from the start of the file instead.
    #[error("{path}: seeking to the frame at timestamp {wanted} landed at {got}, after it")]
    SeekMissed {
        /// The input file.
        path: PathBuf,
        /// The timestamp sought.
        wanted: i64,
        /// The first timestamp decoded after the seek.
        got: i64,
    },
    /// A work folder belongs to another job: its input or an output-affecting setting
    /// changed since it was planned, or it is not a RAVE work folder.
    #[error("{work}: {reason}")]
    WorkFolderMismatch {
        /// The work folder.
        work: PathBuf,
        /// What differs, and what to do.
        reason: String,
    },
    /// Segments of the job are not done yet, so the output cannot be assembled.
    #[error(
        "{work}: {} of {total} segments are not done ({}){}; run `rave segment --work {work} --index I` for each, or the same `rave upscale` command again",
        missing.len(), list_segments(missing), not_intact(changed, gone)
    )]
    SegmentsMissing {
        /// The work folder.
        work: PathBuf,
        /// The indices not done.
        missing: Vec<usize>,
        /// Segments in the job.
        total: usize,
        /// Files of segments that were done but no longer match their checksum.
        changed: Vec<String>,
        /// Files of segments that were done but are gone.
        gone: Vec<String>,
    },
    /// Segments failed on the GPUs (each is tried on two) or were left with no worker that
    /// could run them, after the rest of the job was done; the finished ones are kept.
    #[error(
        "{} of {total} segments were not upscaled: {}; {advice}",
        missing.len(), reasons.join("; ")
    )]
    SegmentsFailed {
        /// The indices not done.
        missing: Vec<usize>,
        /// Segments in the job.
        total: usize,
        /// Why, per segment or group of segments.
        reasons: Vec<String>,
        /// What was kept, and what to do.
        advice: String,
    },
}

/// "; seg-00001.mp4 was done but ..." for the files of done segments found changed or gone
/// (the first few of each), which must be redone.
fn not_intact(changed: &[String], gone: &[String]) -> String {
    const SHOWN: usize = 4;
    let names = |files: &[String]| {
        let mut words: Vec<&str> = files.iter().take(SHOWN).map(String::as_str).collect();
        let more = files.len().saturating_sub(SHOWN);
        let more = format!("and {more} more");
        if files.len() > SHOWN {
            words.push(&more);
        }
        words.join(", ")
    };
    let mut text = String::new();
    if !changed.is_empty() {
        text += &format!(
            "; {} {} done but no longer {} {} checksum (damaged on disk, or changed by another program) and must be redone",
            names(changed),
            if changed.len() == 1 { "was" } else { "were" },
            if changed.len() == 1 {
                "matches"
            } else {
                "match"
            },
            if changed.len() == 1 { "its" } else { "their" },
        );
    }
    if !gone.is_empty() {
        text += &format!(
            "; {} {} done but {} gone (removed by another program?) and must be redone",
            names(gone),
            if gone.len() == 1 { "was" } else { "were" },
            if gone.len() == 1 { "is" } else { "are" },
        );
    }
    text
}

/// The first few segment indices of a list, in words ("segments 0, 3, 7 and 5 more").
pub fn list_segments(indices: &[usize]) -> String {
    const SHOWN: usize = 8;
    let mut words: Vec<String> = indices.iter().take(SHOWN).map(|i| i.to_string()).collect();
    if indices.len() > SHOWN {
        words.push(format!("and {} more", indices.len() - SHOWN));
    }
    let noun = if indices.len() == 1 {
        "segment"
    } else {
        "segments"
    };
    format!("{noun} {}", words.join(", "))
}

/// Error families: each maps to one documented exit code of the `rave` command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorFamily {
    /// A bug in RAVE: exit 1.
    Internal,
    /// A bad option or configuration value: exit 2.
    Usage,
    /// The input file is missing, unreadable, not a video, corrupt or undecodable: exit 3.
    Input,
    /// The output cannot be written, encoded or muxed: exit 4.
    Output,
    /// The model is missing, invalid or not an image-to-image model: exit 5.
    Model,
    /// A runtime library or the GPU is missing or failed: exit 6.
    Runtime,
    /// The job's segments are not all done (assemble cannot write the output yet): exit 7.
    Incomplete,
    /// The user interrupted the run: exit 130.
    Cancelled,
}

impl ErrorFamily {
    /// The process exit code for this family (documented in the README).
    pub fn exit_code(self) -> i32 {
        match self {
            ErrorFamily::Internal => 1,
            ErrorFamily::Usage => 2,
            ErrorFamily::Input => 3,
            ErrorFamily::Output => 4,
            ErrorFamily::Model => 5,
            ErrorFamily::Runtime => 6,
            ErrorFamily::Incomplete => 7,
            ErrorFamily::Cancelled => 130,
        }
    }
}

/// Bytes in MiB, for messages.
fn mib(bytes: usize) -> f64 {
    bytes as f64 / 1048576.0
}

impl EngineError {
    /// The stable numeric code of this error.
    pub fn code(&self) -> u16 {
        use EngineError::*;
        match self {
            Cuda(_) => 100,
            NoGpu(_) => 101,
            VramLimit { .. } => 102,
            Inference(_) => 200,
            ModelMetadata(_) => 201,
            NotInitialized => 202,
            ModelNotFound(_) => 203,
            ModelInvalid { .. } => 204,
            RuntimeLibrary(_) => 205,
            Decode(_) => 300,
            Encode(_) => 301,
            Demux(_) => 302,
            Mux(_) => 303,
            UnsupportedCodec { .. } => 304,
            CorruptStream { .. } => 305,
            NotAVideo { .. } => 306,
            FormatMismatch { .. } => 400,
            DimensionMismatch(_) => 401,
            BufferTooSmall { .. } => 402,
            InvariantViolation(_) => 403,
            InputUnreadable { .. } => 500,
            OutputExists(_) => 501,
            OutputUnwritable { .. } => 502,
            OutputNameUnusable { .. } => 507,
            Config(_) => 503,
            Io(_) => 504,
            Cancelled => 600,
            OutputInUse(_) => 505,
            CancelledBeforeOutput => 601,
            OutputSizeUnsupported { .. } => 307,
            PacketRefused(_) => 308,
            SeekMissed { .. } => 309,
            WorkFolderMismatch { .. } => 506,
            SegmentsMissing { .. } => 700,
            SegmentsFailed { .. } => 701,
            StreamUnstorable(_) => 310,
        }
    }

    /// A short stable name for this error, used in JSON output.
    pub fn kind(&self) -> &'static str {
        use EngineError::*;
        match self {
            Cuda(_) => "cuda",
            NoGpu(_) => "no_gpu",
            VramLimit { .. } => "vram_limit",
            Inference(_) => "inference",
            ModelMetadata(_) => "model_metadata",
            NotInitialized => "not_initialized",
            ModelNotFound(_) => "model_not_found",
            ModelInvalid { .. } => "model_invalid",
            RuntimeLibrary(_) => "runtime_library",
            Decode(_) => "decode",
            Encode(_) => "encode",
            Demux(_) => "demux",
            Mux(_) => "mux",
            StreamUnstorable(_) => "stream_unstorable",
            UnsupportedCodec { .. } => "unsupported_codec",
            CorruptStream { .. } => "corrupt_stream",
            NotAVideo { .. } => "not_a_video",
            FormatMismatch { .. } => "format_mismatch",
            DimensionMismatch(_) => "dimension_mismatch",
            BufferTooSmall { .. } => "buffer_too_small",
            InvariantViolation(_) => "invariant_violation",
            InputUnreadable { .. } => "input_unreadable",
            OutputExists(_) => "output_exists",
            OutputUnwritable { .. } => "output_unwritable",
            OutputNameUnusable { .. } => "output_name_unusable",
            Config(_) => "config",
            Io(_) => "io",
            Cancelled => "cancelled",
            OutputInUse(_) => "output_in_use",
            CancelledBeforeOutput => "cancelled_before_output",
            OutputSizeUnsupported { .. } => "output_size_unsupported",
            PacketRefused(_) => "packet_refused",
            SeekMissed { .. } => "seek_missed",
            WorkFolderMismatch { .. } => "work_folder_mismatch",
            SegmentsMissing { .. } => "segments_missing",
            SegmentsFailed { .. } => "segments_failed",
        }
    }

    /// The family this error belongs to, which decides the exit code.
    pub fn family(&self) -> ErrorFamily {
        use EngineError::*;
        match self {
            FormatMismatch { .. }
            | DimensionMismatch(_)
            | BufferTooSmall { .. }
            | InvariantViolation(_)
            | NotInitialized => ErrorFamily::Internal,
            Config(_) => ErrorFamily::Usage,
            InputUnreadable { .. }
            | NotAVideo { .. }
            | UnsupportedCodec { .. }
            | CorruptStream { .. }
            | Decode(_)
            | Demux(_) => ErrorFamily::Input,
            OutputExists(_)
            | OutputUnwritable { .. }
            | OutputNameUnusable { .. }
            | Encode(_)
            | Mux(_)
            | StreamUnstorable(_)
            | Io(_) => ErrorFamily::Output,
            ModelMetadata(_) | ModelNotFound(_) | ModelInvalid { .. } | Inference(_) => {
                ErrorFamily::Model
            }
            Cuda(_) | NoGpu(_) | VramLimit { .. } | RuntimeLibrary(_) => ErrorFamily::Runtime,
            Cancelled => ErrorFamily::Cancelled,
            OutputInUse(_) => ErrorFamily::Output,
            CancelledBeforeOutput => ErrorFamily::Cancelled,
            OutputSizeUnsupported { .. } => ErrorFamily::Output,
            PacketRefused(_) | SeekMissed { .. } => ErrorFamily::Input,
            WorkFolderMismatch { .. } => ErrorFamily::Usage,
            SegmentsMissing { .. } | SegmentsFailed { .. } => ErrorFamily::Incomplete,
        }
    }
}

#[cfg(test)]
mod tests;
