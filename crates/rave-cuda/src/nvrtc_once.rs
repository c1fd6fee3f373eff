//! What the kernel modules of this crate share: compiling a source once per process with
//! NVRTC (no fused multiply-add, so the kernels match their plain Rust references), and the
//! size check of a buffer handed to a kernel.

use std::sync::OnceLock;

use cudarc::nvrtc::{CompileOptions, Ptx, compile_ptx_with_opts};
use rave_core::error::{EngineError, Result};

/// `source` (called `file` in NVRTC's messages) compiled into `cell` on the first call; the
/// same PTX, or the same error, on later ones. `what` names the kernels in the error.
pub(crate) fn compiled_once(
    cell: &'static OnceLock<std::result::Result<Ptx, String>>,
    source: &str,
    file: &str,
    what: &str,
) -> Result<&'static Ptx> {
    cell.get_or_init(|| {
        // SAFETY: only probes whether the NVRTC library can be loaded.
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            return Err("the NVRTC library (libnvrtc) is not installed".into());
        }
        let opts = CompileOptions {
            fmad: Some(false),
            name: Some(file.into()),
            ..Default::default()
        };
        compile_ptx_with_opts(source, opts).map_err(|e| format!("compiling the {what}: {e}"))
    })
    .as_ref()
    .map_err(|e| EngineError::Cuda(e.clone()))
}

/// An error unless a buffer of `have` bytes holds the `need` bytes asked of it.
pub(crate) fn holds(have: usize, need: usize) -> Result<()> {
    if have < need {
        return Err(EngineError::BufferTooSmall {
            required: need,
            available: have,
        });
    }
    Ok(())
}
