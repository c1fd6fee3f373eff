//! The options RAVE gives each execution provider, rendered as the key/value pairs ONNX
//! Runtime reads, so what reaches the provider can be tested without a GPU.
//!
//! TensorRT: engine cache (beside the model or `--engine-cache DIR`), FP16, INT8 with the
//! calibration table really handed over (ONNX Runtime reads it from the engine cache folder by
//! file name, so RAVE places it there), workspace size, and one optimisation profile whose
//! min/opt/max shapes come from the clip. CUDA: exhaustive cuDNN algorithm search, NHWC
//! preference, CUDA graphs.

use std::path::{Path, PathBuf};

use rave_core::error::{EngineError, Result};

/// Arithmetic precision TensorRT may build kernels in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Precision {
    /// Float32 only.
    Fp32,
    /// Float16 allowed where faster.
    Fp16,
    /// INT8 (with FP16) using a calibration table made for this model.
    Int8 {
        /// The calibration table file.
        calibration_table: PathBuf,
    },
}

/// One TensorRT optimisation profile: the smallest, typical and largest input it must take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShapeProfile {
    /// [batch, height, width] of the smallest input.
    pub min: [u32; 3],
    /// [batch, height, width] TensorRT tunes for.
    pub opt: [u32; 3],
    /// [batch, height, width] of the largest input.
    pub max: [u32; 3],
}

impl ShapeProfile {
    /// The profile for a clip of `width` x `height` run in batches of 1 to `max_batch`.
    pub fn for_clip(width: u32, height: u32, max_batch: u32) -> Self {
        let b = max_batch.max(1);
        Self {
            min: [1, height, width],
            opt: [b, height, width],
            max: [b, height, width],
        }
    }

    fn render(input: &str, [n, h, w]: [u32; 3]) -> String {
        format!("{input}:{n}x3x{h}x{w}")
    }
}

/// TensorRT execution-provider settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrtSettings {
    /// Folder of built engines (created when missing).
    pub engine_cache: PathBuf,
    /// Kernel precision.
    pub precision: Precision,
    /// Builder workspace limit in bytes (`None`: TensorRT's default).
    pub workspace_bytes: Option<usize>,
    /// Optimisation profile (`None`: let the provider derive shapes at run time).
    pub profile: Option<ShapeProfile>,
    /// Capture and replay CUDA graphs.
    pub cuda_graph: bool,
}

impl TrtSettings {
    /// The default engine cache: `trt_cache` beside the model.
    pub fn default_cache_for(model: &Path) -> PathBuf {
        model.parent().unwrap_or(Path::new(".")).join("trt_cache")
    }

    /// Create the cache folder and put the calibration table in it (ONNX Runtime opens the
    /// table as `<engine cache>/<name>`). Errors name the file and what to do.
    pub fn prepare(&self) -> Result<()> {
        std::fs::create_dir_all(&self.engine_cache).map_err(|e| {
            EngineError::Config(format!(
                "--engine-cache {}: cannot create it: {e}",
                self.engine_cache.display()
            ))
        })?;
        if let Precision::Int8 { calibration_table } = &self.precision {
            let name = table_name(calibration_table)?;
            let target = self.engine_cache.join(name);
            let same = target.canonicalize().ok() == calibration_table.canonicalize().ok();
            if !same {
                std::fs::copy(calibration_table, &target).map_err(|e| {
                    EngineError::Config(format!(
                        "INT8 calibration table {}: cannot copy it into the engine cache {}: {e}",
                        calibration_table.display(),
                        self.engine_cache.display()
                    ))
                })?;
            }
        }
        Ok(())
    }

    /// The provider options, in the order they are applied.
    pub fn entries(&self, device_id: i32, input_name: &str) -> Result<Vec<(&'static str, String)>> {
        let flag = |b: bool| if b { "1" } else { "0" }.to_string();
        let mut out = vec![
            ("device_id", device_id.to_string()),
            ("trt_engine_cache_enable", "1".into()),
            (
                "trt_engine_cache_path",
                self.engine_cache.display().to_string(),
            ),
            ("trt_timing_cache_enable", "1".into()),
            (
                "trt_timing_cache_path",
                self.engine_cache.display().to_string(),
            ),
        ];
        match &self.precision {
            Precision::Fp32 => out.push(("trt_fp16_enable", flag(false))),
            Precision::Fp16 => out.push(("trt_fp16_enable", flag(true))),
            Precision::Int8 { calibration_table } => {
                out.push(("trt_fp16_enable", flag(true)));
                out.push(("trt_int8_enable", flag(true)));
                out.push((
                    "trt_int8_calibration_table_name",
                    table_name(calibration_table)?.to_string(),
                ));
                let native = !calibration_table
                    .extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case("flatbuffers"));
                out.push(("trt_int8_use_native_calibration_table", flag(native)));
            }
        }
        if let Some(bytes) = self.workspace_bytes {
            out.push(("trt_max_workspace_size", bytes.to_string()));
        }
        if let Some(p) = self.profile {
            out.push((
                "trt_profile_min_shapes",
                ShapeProfile::render(input_name, p.min),
            ));
            out.push((
                "trt_profile_opt_shapes",
                ShapeProfile::render(input_name, p.opt),
            ));
            out.push((
                "trt_profile_max_shapes",
                ShapeProfile::render(input_name, p.max),
            ));
        }
        if self.cuda_graph {
            out.push(("trt_cuda_graph_enable", flag(true)));
        }
        Ok(out)
    }
}

/// The calibration table's file name; it must exist and be a file.
fn table_name(table: &Path) -> Result<&str> {
    if !table.is_file() {
        return Err(EngineError::Config(format!(
            "INT8 calibration table {}: no such file (make one with TensorRT's calibrator for this model, or use --precision fp16)",
            table.display()
        )));
    }
    table.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
        EngineError::Config(format!(
            "INT8 calibration table {}: the file name must be UTF-8",
            table.display()
        ))
    })
}

/// CUDA execution-provider settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CudaSettings {
    /// Ask for NHWC convolutions (tensor-core friendly).
    pub prefer_nhwc: bool,
    /// Capture and replay CUDA graphs.
    pub cuda_graph: bool,
    /// Let cuDNN add the convolution bias inside the convolution (its fused kernels) instead
    /// of in a separate pass over the output. Applied only with `prefer_nhwc`: on the H200,
    /// cuDNN found no fused plan for half-precision NCHW convolutions.
    pub fuse_conv_bias: bool,
    /// The CUDA stream (its `CUstream` as an address) the provider queues its work on:
    /// RAVE's inference stream, so ONNX Runtime's runs are ordered by the same events as the
    /// other stages. `None`: the provider's own stream.
    pub compute_stream: Option<usize>,
    /// The most ONNX Runtime's arena may hold on the device, in bytes (the run's VRAM
    /// budget less what is kept for frames in flight); it then grows by what is asked, not
    /// to the next power of two, so it stays near what the model needs.
    pub mem_limit: Option<usize>,
}

impl CudaSettings {
    /// The provider options, in the order they are applied.
    pub fn entries(&self, device_id: i32) -> Vec<(&'static str, String)> {
        let flag = |b: bool| if b { "1" } else { "0" }.to_string();
        let mut out = vec![
            ("device_id", device_id.to_string()),
            ("cudnn_conv_algo_search", "EXHAUSTIVE".into()),
            ("cudnn_conv_use_max_workspace", flag(true)),
            ("prefer_nhwc", flag(self.prefer_nhwc)),
            ("enable_cuda_graph", flag(self.cuda_graph)),
            (
                "fuse_conv_bias",
                flag(self.fuse_conv_bias && self.prefer_nhwc),
            ),
        ];
        if let Some(stream) = self.compute_stream {
            out.push(("has_user_compute_stream", flag(true)));
            out.push(("user_compute_stream", stream.to_string()));
        }
        if let Some(limit) = self.mem_limit {
            out.push(("gpu_mem_limit", limit.to_string()));
            out.push(("arena_extend_strategy", "kSameAsRequested".into()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(precision: Precision) -> TrtSettings {
        TrtSettings {
            engine_cache: PathBuf::from("/cache"),
            precision,
            workspace_bytes: Some(1 << 30),
            profile: Some(ShapeProfile::for_clip(1920, 1080, 4)),
            cuda_graph: false,
        }
    }

    fn value<'a>(entries: &'a [(&'static str, String)], key: &str) -> Option<&'a str> {
        entries
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn profile_spans_batch_one_to_max_at_the_clip_size() {
        let e = settings(Precision::Fp16).entries(0, "input").unwrap();
        assert_eq!(
            value(&e, "trt_profile_min_shapes"),
            Some("input:1x3x1080x1920")
        );
        assert_eq!(
            value(&e, "trt_profile_opt_shapes"),
            Some("input:4x3x1080x1920")
        );
        assert_eq!(
            value(&e, "trt_profile_max_shapes"),
            Some("input:4x3x1080x1920")
        );
        assert_eq!(value(&e, "trt_max_workspace_size"), Some("1073741824"));
        assert_eq!(value(&e, "trt_fp16_enable"), Some("1"));
        assert_eq!(value(&e, "trt_int8_enable"), None);
        assert_eq!(value(&e, "trt_engine_cache_path"), Some("/cache"));
    }

    #[test]
    fn int8_hands_the_calibration_table_to_tensorrt() {
        let dir = std::env::temp_dir().join(format!("rave-int8-{}", std::process::id()));
        let table = dir.join("src/calib.table");
        std::fs::create_dir_all(table.parent().unwrap()).unwrap();
        std::fs::write(&table, b"TRT-8600-EntropyCalibration2\n").unwrap();
        let s = TrtSettings {
            engine_cache: dir.join("cache"),
            ..settings(Precision::Int8 {
                calibration_table: table.clone(),
            })
        };
        s.prepare().unwrap();
        let copied = std::fs::read(dir.join("cache/calib.table")).unwrap();
        assert_eq!(copied, b"TRT-8600-EntropyCalibration2\n");
        let e = s.entries(1, "x").unwrap();
        assert_eq!(value(&e, "trt_int8_enable"), Some("1"));
        assert_eq!(
            value(&e, "trt_int8_calibration_table_name"),
            Some("calib.table")
        );
        assert_eq!(
            value(&e, "trt_int8_use_native_calibration_table"),
            Some("1")
        );
        assert_eq!(value(&e, "device_id"), Some("1"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_calibration_table_is_a_config_error_naming_it() {
        let s = settings(Precision::Int8 {
            calibration_table: PathBuf::from("/nowhere/calib.table"),
        });
        let err = s.entries(0, "input").unwrap_err();
        assert_eq!(err.kind(), "config");
        assert!(err.to_string().contains("/nowhere/calib.table"), "{err}");
    }

    #[test]
    fn cuda_options_search_exhaustively_and_pass_the_switches() {
        let e = CudaSettings {
            prefer_nhwc: true,
            cuda_graph: true,
            fuse_conv_bias: false,
            compute_stream: None,
            mem_limit: None,
        }
        .entries(2);
        assert_eq!(value(&e, "fuse_conv_bias"), Some("0"));
        let nchw = CudaSettings {
            prefer_nhwc: false,
            cuda_graph: false,
            fuse_conv_bias: true,
            compute_stream: None,
            mem_limit: None,
        }
        .entries(0);
        assert_eq!(
            value(&nchw, "fuse_conv_bias"),
            Some("0"),
            "fusion needs NHWC"
        );
        let fused = CudaSettings {
            prefer_nhwc: true,
            cuda_graph: false,
            fuse_conv_bias: true,
            compute_stream: None,
            mem_limit: None,
        }
        .entries(0);
        assert_eq!(value(&fused, "fuse_conv_bias"), Some("1"));
        assert_eq!(value(&e, "cudnn_conv_algo_search"), Some("EXHAUSTIVE"));
        assert_eq!(value(&e, "prefer_nhwc"), Some("1"));
        assert_eq!(value(&e, "enable_cuda_graph"), Some("1"));
        assert_eq!(value(&e, "device_id"), Some("2"));
        assert_eq!(value(&e, "gpu_mem_limit"), None, "no limit unless asked");
        let limited = CudaSettings {
            mem_limit: Some(6 << 30),
            ..CudaSettings::default()
        }
        .entries(0);
        assert_eq!(value(&limited, "gpu_mem_limit"), Some("6442450944"));
        assert_eq!(
            value(&limited, "arena_extend_strategy"),
            Some("kSameAsRequested")
        );
    }
}
