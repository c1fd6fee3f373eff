//! The native engine's CUDA kernels, compiled with NVRTC at run time for the device's
//! architecture and checked against [`crate::reference`] on the GPU. Half-precision values
//! travel as their 16-bit patterns (`u16`).

pub mod compact_engine;
pub mod conv3x3;
pub mod device_conv;
mod input_pack;
pub mod kernel_cache;
pub mod native_engine;
pub mod rrdb_engine;
pub mod streamed;
pub mod streamed_conv;
mod streamed_plan;
mod tensor_map;
pub mod wgmma;

pub use compact_engine::CompactEngine;
pub use conv3x3::{Conv3x3Kernel, ConvVersion};
pub use device_conv::DeviceConv;
pub use native_engine::NativeEngine;
pub use rrdb_engine::RrdbEngine;
pub use streamed::{Residual, StreamedKernels, StreamedSource, StreamedTarget};
pub use streamed_conv::StreamedConv;
pub use wgmma::{WgmmaForm, WgmmaKernels, WgmmaSource, WgmmaTarget};

/// What went wrong on the GPU side, in one line.
#[derive(Debug, thiserror::Error)]
#[error("native engine: {0}")]
pub struct GpuError(pub String);

/// A driver error as a [`GpuError`] saying what was being done.
pub(crate) fn driver_error(
    what: &str,
) -> impl FnOnce(cudarc::driver::DriverError) -> GpuError + '_ {
    move |e| GpuError(format!("{what}: {e}"))
}

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaFunction};
use cudarc::nvrtc::{CompileOptions, compile_ptx_with_opts};

/// NVRTC's version, (0, 0) where it cannot be read (the cache key then still changes
/// with everything else).
fn nvrtc_version() -> (i32, i32) {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: nvrtcVersion writes two ints through the pointers, which point at live
    // locals; it reads nothing else.
    let ok = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    match ok {
        cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS => (major, minor),
        _ => (0, 0),
    }
}

/// Compile `source` for `arch` (or take the PTX from the disk cache, see
/// [`kernel_cache`]) and load `names` from it. The driver compiles the PTX to machine code
/// at load (its own cache, `~/.nv/ComputeCache`, keeps that for later starts).
pub(crate) fn load_module_functions<const N: usize>(
    ctx: &Arc<CudaContext>,
    source: &str,
    file: &str,
    arch: &'static str,
    names: [&str; N],
) -> Result<[CudaFunction; N], GpuError> {
    let key = kernel_cache::key(source, file, arch, nvrtc_version());
    let dir = kernel_cache::default_dir();
    let compile = || {
        let opts = CompileOptions {
            arch: Some(arch),
            name: Some(file.into()),
            ..Default::default()
        };
        compile_ptx_with_opts(source, opts)
            .map(|p| p.to_src())
            .map_err(|e| GpuError(format!("compiling {file} for {arch}: {e}")))
    };
    let (text, used) = kernel_cache::ptx(dir.as_deref(), &key, compile)?;
    let module = match ctx.load_module(cudarc::nvrtc::Ptx::from_src(text)) {
        Ok(m) => m,
        // A stored PTX that does not load (damaged, or left by another driver): compile.
        Err(_) if used == kernel_cache::CacheUse::Hit => {
            kernel_cache::forget(dir.as_deref(), &key);
            let (text, _) = kernel_cache::ptx(dir.as_deref(), &key, compile)?;
            ctx.load_module(cudarc::nvrtc::Ptx::from_src(text))
                .map_err(driver_error("loading a convolution kernel"))?
        }
        Err(e) => return Err(driver_error("loading a convolution kernel")(e)),
    };
    let mut out = Vec::with_capacity(N);
    for name in names {
        out.push(
            module
                .load_function(name)
                .map_err(driver_error("finding a convolution kernel"))?,
        );
    }
    out.try_into()
        .map_err(|_| GpuError("kernel count mismatch".into()))
}

/// The compute architecture NVRTC compiles for: the device's own where known, else the
/// newest one below it that the kernels support. `None` below compute capability 8.0 (the
/// tensor-core instructions the kernels use need Ampere or newer).
pub fn nvrtc_arch(major: i32, minor: i32) -> Option<&'static str> {
    Some(match (major, minor) {
        (m, _) if m < 8 => return None,
        (8, 0) => "compute_80",
        (8, 6) => "compute_86",
        (8, 7) => "compute_87",
        (8, 9) => "compute_89",
        (8, _) => "compute_80",
        (9, _) => "compute_90",
        (10, 0) => "compute_100",
        (12, 0) => "compute_120",
        _ => "compute_90",
    })
}

#[cfg(test)]
mod tests {
    use super::nvrtc_arch;

    #[test]
    fn architectures_below_ampere_are_refused_and_newer_ones_named() {
        assert_eq!(nvrtc_arch(7, 5), None);
        assert_eq!(nvrtc_arch(8, 6), Some("compute_86"));
        assert_eq!(nvrtc_arch(9, 0), Some("compute_90"));
        assert_eq!(nvrtc_arch(8, 8), Some("compute_80"));
    }
}
