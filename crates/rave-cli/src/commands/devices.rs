//! `rave devices`: the GPUs, what NVDEC decodes, whether NVENC opens, which ONNX Runtime
//! library loads and which of its GPU providers do (with the reason when one does not).
//! Without a GPU it says so and succeeds where ONNX Runtime loads (the CPU path needs it);
//! an ONNX Runtime that does not load is exit 6, GPU or not: nothing could run.

use rave_core::error::{EngineError, Result};
use rave_core::gpu::{DeviceInfo, GpuContext, list_devices};
use rave_ffmpeg::hw_caps::{NvdecCap, NvencStatus, nvdec_caps, nvenc_status};
use rave_tensorrt::OrtRuntime;
use rave_tensorrt::providers::{ProviderStatus, probe_gpu_providers};
use serde::Serialize;

use crate::args::{DevicesArgs, GlobalArgs};
use crate::console::outln;
use crate::locate;

/// Everything `rave devices` found.
#[derive(Debug, Serialize)]
struct DevicesReport {
    gpus: Vec<DeviceInfo>,
    no_gpu_reason: Option<String>,
    nvdec: Option<Vec<NvdecCap>>,
    nvdec_error: Option<String>,
    nvenc: Vec<NvencStatus>,
    onnxruntime_library: Option<String>,
    onnxruntime_error: Option<String>,
    providers: Vec<ProviderStatus>,
    /// Where ONNX Runtime does not load: the error (exit 6), as other commands give it.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<crate::failure::ErrorObject>,
}

/// Run `rave devices`: exit 0, or 6 where ONNX Runtime does not load.
pub fn run(global: &GlobalArgs, args: &DevicesArgs) -> Result<i32> {
    let mut report = match list_devices() {
        Err(e) => {
            // The CPU path needs ONNX Runtime too: say whether it loads.
            let (library, ort_error) = match OrtRuntime::load(&locate::runtime_candidates(global)) {
                Ok(rt) => (Some(rt.library().display().to_string()), None),
                Err(e) => (None, Some(e.to_string())),
            };
            DevicesReport {
                gpus: Vec::new(),
                no_gpu_reason: Some(e.to_string()),
                nvdec: None,
                nvdec_error: None,
                nvenc: Vec::new(),
                onnxruntime_library: library,
                onnxruntime_error: ort_error,
                providers: Vec::new(),
                error: None,
            }
        }
        Ok(gpus) => gpu_report(global, gpus),
    };
    report.error = report
        .onnxruntime_error
        .as_ref()
        .map(|e| crate::failure::ErrorObject::of(&EngineError::RuntimeLibrary(e.clone())));
    super::print_result(args.json, &report, print);
    // 6 where ONNX Runtime does not load, as `rave upscale` ends with.
    Ok(report.error.as_ref().map_or(0, |e| e.exit_code))
}

fn gpu_report(global: &GlobalArgs, gpus: Vec<DeviceInfo>) -> DevicesReport {
    // NVDEC answers for the context current on this thread.
    let (nvdec, nvdec_error) = match GpuContext::new(0) {
        Ok(_ctx) => match nvdec_caps() {
            Ok(caps) => (Some(caps), None),
            Err(e) => (None, Some(e)),
        },
        Err(e) => (None, Some(e.to_string())),
    };
    let (library, ort_error, providers) =
        match OrtRuntime::load(&locate::runtime_candidates(global)) {
            Ok(rt) => {
                let candidates = locate::provider_candidates(rt.library());
                (
                    Some(rt.library().display().to_string()),
                    None,
                    probe_gpu_providers(rt, &candidates),
                )
            }
            Err(e) => (None, Some(e.to_string()), Vec::new()),
        };
    DevicesReport {
        gpus,
        no_gpu_reason: None,
        nvdec,
        nvdec_error,
        nvenc: nvenc_status(),
        onnxruntime_library: library,
        onnxruntime_error: ort_error,
        providers,
        error: None,
    }
}

fn print(r: &DevicesReport) {
    if let Some(reason) = &r.no_gpu_reason {
        outln!("{reason}");
        match (&r.onnxruntime_library, &r.onnxruntime_error) {
            (Some(lib), _) => {
                outln!("ONNX Runtime: {lib}");
                outln!("RAVE runs on the CPU here (`rave upscale --device cpu`).");
            }
            (None, Some(e)) => {
                outln!("ONNX Runtime: {e}");
                outln!("RAVE cannot run here until ONNX Runtime loads (see above).");
            }
            (None, None) => {}
        }
        return;
    }
    for g in &r.gpus {
        outln!(
            "GPU {}: {} — {:.1} GiB ({:.1} GiB free), compute {}, {} SMs, driver {}, CUDA {}",
            g.ordinal,
            g.name,
            g.total_memory as f64 / (1u64 << 30) as f64,
            g.free_memory as f64 / (1u64 << 30) as f64,
            g.compute_capability,
            g.multiprocessors,
            g.driver_version.as_deref().unwrap_or("unknown"),
            g.cuda_driver_api
        );
    }
    match (&r.nvdec, &r.nvdec_error) {
        (Some(caps), _) => {
            outln!("NVDEC (4:2:0):");
            for c in caps {
                if c.supported {
                    outln!(
                        "  {:<6} {:>2}-bit  yes, up to {}x{}",
                        c.codec,
                        c.bit_depth,
                        c.max_width,
                        c.max_height
                    );
                } else {
                    outln!("  {:<6} {:>2}-bit  no", c.codec, c.bit_depth);
                }
            }
        }
        (None, Some(e)) => outln!("NVDEC: unavailable: {e}"),
        _ => {}
    }
    outln!("NVENC:");
    for n in &r.nvenc {
        match &n.reason {
            None => outln!("  {:<11} session opens", n.encoder),
            Some(why) => outln!("  {:<11} no: {why}", n.encoder),
        }
    }
    match (&r.onnxruntime_library, &r.onnxruntime_error) {
        (Some(lib), _) => outln!("ONNX Runtime: {lib}"),
        (None, Some(e)) => outln!("ONNX Runtime: {e}"),
        _ => {}
    }
    for p in &r.providers {
        let from = p
            .resolved_in
            .as_deref()
            .map(|d| format!(" from {d}"))
            .unwrap_or_default();
        match &p.reason {
            None => outln!("  {:<26} loads{from}", p.name),
            Some(why) => outln!("  {:<26} does not load{from}: {why}", p.name),
        }
    }
}
