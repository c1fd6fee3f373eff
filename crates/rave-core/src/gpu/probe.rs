//! Finding the CUDA driver and the GPUs without crashing where there are none: cudarc panics
//! when its library is missing, so the library is probed first.

use cudarc::driver::{CudaContext, sys};
use serde::Serialize;

use crate::error::{EngineError, Result};

/// What one GPU is.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceInfo {
    /// CUDA ordinal.
    pub ordinal: usize,
    /// Marketing name.
    pub name: String,
    /// Total memory in bytes.
    pub total_memory: usize,
    /// Free memory in bytes when probed.
    pub free_memory: usize,
    /// Compute capability "major.minor".
    pub compute_capability: String,
    /// Number of streaming multiprocessors.
    pub multiprocessors: i32,
    /// Highest CUDA version the driver supports ("13.0").
    pub cuda_driver_api: String,
    /// NVIDIA kernel driver version, when the system says.
    pub driver_version: Option<String>,
}

/// Check that the CUDA driver library loads and at least one GPU is visible.
pub fn probe_driver() -> Result<usize> {
    // SAFETY: is_culib_present only tries to dlopen the driver library by its known names.
    if !unsafe { sys::is_culib_present() } {
        return Err(EngineError::NoGpu(
            "the NVIDIA driver library (libcuda.so.1) is not installed".into(),
        ));
    }
    let count = CudaContext::device_count()
        .map_err(|e| EngineError::NoGpu(format!("the CUDA driver failed to start: {e}")))?;
    if count <= 0 {
        return Err(EngineError::NoGpu("the CUDA driver sees no GPU".into()));
    }
    Ok(super::stand_in::visible(count as usize))
}

/// Version of the CUDA driver API as "major.minor".
fn cuda_driver_api() -> String {
    let mut v: std::ffi::c_int = 0;
    // SAFETY: the driver library was loaded by probe_driver; the call writes one int.
    let ok = unsafe { sys::cuDriverGetVersion(&mut v) } == sys::CUresult::CUDA_SUCCESS;
    if ok {
        format!("{}.{}", v / 1000, (v % 1000) / 10)
    } else {
        "unknown".into()
    }
}

/// The kernel driver version from /proc (absent in some containers): the first token of
/// its first line that looks like "580.159.04".
fn kernel_driver_version() -> Option<String> {
    let text = std::fs::read_to_string("/proc/driver/nvidia/version").ok()?;
    parse_driver_version(text.lines().next()?)
}

fn parse_driver_version(line: &str) -> Option<String> {
    line.split_whitespace()
        .find(|t| t.contains('.') && t.chars().all(|c| c.is_ascii_digit() || c == '.'))
        .map(str::to_owned)
}

/// Describe every visible GPU.
pub fn list_devices() -> Result<Vec<DeviceInfo>> {
    let count = probe_driver()?;
    let api = cuda_driver_api();
    let driver = kernel_driver_version();
    (0..count)
        .map(|ordinal| {
            let cuda =
                |e: cudarc::driver::DriverError| EngineError::Cuda(format!("GPU {ordinal}: {e}"));
            let ctx = CudaContext::new(super::stand_in::driver_ordinal(ordinal)).map_err(cuda)?;
            let (major, minor) = ctx.compute_capability().map_err(cuda)?;
            let (free, total) = ctx.mem_get_info().map_err(cuda)?;
            Ok(DeviceInfo {
                ordinal,
                name: ctx.name().map_err(cuda)?,
                total_memory: total,
                free_memory: free,
                compute_capability: format!("{major}.{minor}"),
                multiprocessors: ctx
                    .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
                    .map_err(cuda)?,
                cuda_driver_api: api.clone(),
                driver_version: driver.clone(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_version_from_proc_line() {
        let open = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (dvs-builder@U22)  Thu Oct 2 2025";
        assert_eq!(parse_driver_version(open).as_deref(), Some("580.159.04"));
        let classic = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023";
        assert_eq!(parse_driver_version(classic).as_deref(), Some("535.104.05"));
        assert_eq!(parse_driver_version("garbage"), None);
    }
}
