//! One reusable IO binding that runs the session on raw device addresses through ONNX
//! Runtime's C API: tensors are created over the caller's memory (no copy, no Rust-side
//! allocation), bound, run, and the address the runtime really wrote is read back for the
//! pointer-identity audit.
//!
//! ort's safe `bind_input` protects borrowed tensors from aliasing by copying them (a device
//! copy through a helper session), which breaks the zero-copy contract and hung on the H200;
//! this binds exactly what it is given.

use std::ffi::{CStr, CString, c_void};
use std::sync::Arc;

use ort::AsPointer;
use ort::memory::MemoryInfo;
use ort::session::{IoBinding, RunOptions, Session};
use ort::sys::{ONNXTensorElementDataType, OrtStatusPtr, OrtValue};
use rave_core::backend::Interrupt;
use rave_core::error::{EngineError, Result};
use rave_core::types::PixelFormat;

/// An NCHW shape.
pub type Nchw = [i64; 4];

/// Turn an ONNX Runtime status into RAVE's error (`what` says which call).
fn check(status: OrtStatusPtr, what: &str) -> Result<()> {
    if status.0.is_null() {
        return Ok(());
    }
    let api = ort::api();
    // SAFETY: a non-null status carries a NUL-terminated message owned by the status, which
    // is released right after it is copied.
    let message = unsafe {
        let text = CStr::from_ptr((api.GetErrorMessage)(status.0))
            .to_string_lossy()
            .into_owned();
        (api.ReleaseStatus)(status.0);
        text
    };
    Err(EngineError::Inference(format!("{what}: {message}")))
}

/// A binding of the model's image input and output to device memory, reused every run.
pub struct DeviceBinding {
    binding: IoBinding,
    input: CString,
    output: CString,
    memory: MemoryInfo<'static>,
    element: ONNXTensorElementDataType,
    element_bytes: usize,
    /// Run options by CUDA-graph id; index 0 runs without graph annotation. Shared with the
    /// interrupter, which sets their terminate flag.
    run_options: Vec<Arc<RunOptions>>,
    /// Whether a run returns before its work is done (queued on the caller's stream).
    asynchronous: bool,
}

impl DeviceBinding {
    /// A binding for `session`'s `input`/`output` tensors of `format` in `memory`;
    /// `graph_ids` run-option sets are made ahead (id `i` replays graph `i`); `asynchronous`:
    /// the provider queues on the caller's stream and runs do not synchronize at their end.
    pub fn new(
        session: &Session,
        input: &str,
        output: &str,
        format: PixelFormat,
        memory: MemoryInfo<'static>,
        graph_ids: usize,
        asynchronous: bool,
    ) -> Result<Self> {
        let err = |e: ort::Error| EngineError::Inference(format!("IO binding: {e}"));
        let name = |n: &str| {
            CString::new(n)
                .map_err(|_| EngineError::ModelMetadata(format!("tensor name {n:?} contains NUL")))
        };
        let element = match format {
            PixelFormat::RgbPlanarF16 => {
                ONNXTensorElementDataType::ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16
            }
            _ => ONNXTensorElementDataType::ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT,
        };
        let options = |graph: Option<usize>| -> Result<RunOptions> {
            let mut o = RunOptions::new().map_err(err)?;
            if let Some(id) = graph {
                o.set("gpu_graph_id", id.to_string()).map_err(err)?;
            }
            if asynchronous {
                o.set("disable_synchronize_execution_providers", "1")
                    .map_err(err)?;
            }
            Ok(o)
        };
        let mut run_options = vec![Arc::new(options(None)?)];
        for id in 1..=graph_ids {
            run_options.push(Arc::new(options(Some(id))?));
        }
        Ok(Self {
            binding: session.create_binding().map_err(err)?,
            input: name(input)?,
            output: name(output)?,
            memory,
            element,
            element_bytes: format.element_bytes(),
            run_options,
            asynchronous,
        })
    }

    /// Whether a run returns before its work is done: it is then queued on the stream the
    /// provider was given, and complete only once that stream reaches it.
    pub fn is_asynchronous(&self) -> bool {
        self.asynchronous
    }

    /// A handle that makes the run in flight (and every later one) return with an error.
    pub fn interrupter(&self) -> Arc<dyn Interrupt> {
        Arc::new(crate::run_terminator::RunTerminator(
            self.run_options.clone(),
        ))
    }

    /// Bytes of a tensor of `shape` in this binding's element type.
    pub fn bytes(&self, shape: &Nchw) -> usize {
        shape.iter().product::<i64>() as usize * self.element_bytes
    }

    /// # Safety
    ///
    /// `addr` must be memory of this binding's memory kind holding `self.bytes(shape)`
    /// bytes, alive (and, for the output, not read by anything else) until the run ends.
    unsafe fn bind(&mut self, output: bool, addr: u64, shape: &Nchw) -> Result<()> {
        let api = ort::api();
        let mut value: *mut OrtValue = std::ptr::null_mut();
        let bytes = self.bytes(shape);
        // SAFETY: `addr` is device memory of at least `bytes` bytes that the caller keeps
        // alive until the run completes; the shape array outlives the call and ORT copies
        // it; `value` receives a new OrtValue that does not own the memory.
        let created = unsafe {
            (api.CreateTensorWithDataAsOrtValue)(
                self.memory.ptr(),
                addr as *mut c_void,
                bytes,
                shape.as_ptr(),
                shape.len(),
                self.element,
                &mut value,
            )
        };
        check(created, "creating a device tensor")?;
        let name = if output { &self.output } else { &self.input };
        // SAFETY: the binding and the value are live; ORT keeps its own reference to the
        // value, so ours is released right after.
        let status = unsafe {
            let s = if output {
                (api.BindOutput)(self.binding.ptr_mut(), name.as_ptr(), value)
            } else {
                (api.BindInput)(self.binding.ptr_mut(), name.as_ptr(), value)
            };
            (api.ReleaseValue)(value);
            s
        };
        check(
            status,
            if output {
                "binding the output"
            } else {
                "binding the input"
            },
        )
    }

    /// Run `session` reading `shape_in` at `input` and writing `shape_out` at `output`
    /// (with CUDA graph `graph` when non-zero). Returns the address the runtime wrote the
    /// output to, for the pointer audit. Synchronous (the output complete on return) unless
    /// the binding [is asynchronous](DeviceBinding::is_asynchronous).
    ///
    /// # Safety
    ///
    /// `input` and `output` must be memory of this binding's kind (device memory for the
    /// CUDA binding, host memory for the CPU one) holding the bytes of their shapes in this
    /// binding's element type, alive until this returns, `output` written by nothing else.
    pub unsafe fn run(
        &mut self,
        session: &mut Session,
        input: u64,
        shape_in: &Nchw,
        output: u64,
        shape_out: &Nchw,
        graph: usize,
    ) -> Result<u64> {
        // SAFETY: this function's contract, passed on.
        unsafe {
            self.bind(false, input, shape_in)?;
            self.bind(true, output, shape_out)?;
        }
        let api = ort::api();
        let options = self.run_options.get(graph).ok_or_else(|| {
            EngineError::InvariantViolation(format!("CUDA graph id {graph} was not prepared"))
        })?;
        // SAFETY: session, run options and binding are live ORT objects; the bound memory is
        // valid for the duration of the call (caller's contract).
        let ran =
            unsafe { (api.RunWithBinding)(session.ptr_mut(), options.ptr(), self.binding.ptr()) };
        check(ran, "running the model")?;
        self.written_output()
    }

    /// The device address of the output value the binding holds after a run.
    fn written_output(&self) -> Result<u64> {
        let api = ort::api();
        let mut allocator = std::ptr::null_mut();
        let mut values: *mut *mut OrtValue = std::ptr::null_mut();
        let mut count = 0usize;
        // SAFETY: the default allocator is process-wide and never released; ORT fills
        // `values` with `count` new OrtValue references allocated by it.
        unsafe {
            check(
                (api.GetAllocatorWithDefaultOptions)(&mut allocator),
                "default allocator",
            )?;
            check(
                (api.GetBoundOutputValues)(self.binding.ptr(), allocator, &mut values, &mut count),
                "reading the bound output",
            )?;
        }
        let mut addr = 0u64;
        let mut result = Ok(());
        for i in 0..count {
            // SAFETY: `values` holds `count` valid OrtValue pointers; each is released once,
            // then the array is returned to the allocator that made it.
            unsafe {
                let v = *values.add(i);
                if i == 0 {
                    let mut data: *mut c_void = std::ptr::null_mut();
                    result = check((api.GetTensorMutableData)(v, &mut data), "output address");
                    addr = data as u64;
                }
                (api.ReleaseValue)(v);
            }
        }
        if !values.is_null() {
            // SAFETY: `values` came from `allocator` in GetBoundOutputValues.
            let freed = unsafe { (api.AllocatorFree)(allocator, values.cast()) };
            check(freed, "freeing the output list")?;
        }
        result.map(|_| addr)
    }
}
