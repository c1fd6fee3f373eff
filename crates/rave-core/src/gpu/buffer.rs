//! `GpuBuffer`: a device allocation that goes back to its context's pool when dropped (so
//! when the last `Arc` of a texture goes), or is freed and un-counted if the pool is full.

use std::ops::Deref;
use std::sync::{Arc, Weak};

use cudarc::driver::CudaSlice;

use super::pool::BucketPool;
use super::vram::VramAccount;

/// Pool and accounting shared by a context and its buffers.
#[derive(Debug)]
pub(crate) struct PoolHome {
    pub(crate) pool: BucketPool<CudaSlice<u8>>,
    pub(crate) vram: VramAccount,
}

/// A pooled device buffer of at least the requested size.
#[derive(Debug)]
pub struct GpuBuffer {
    slice: Option<CudaSlice<u8>>,
    bucket: usize,
    home: Weak<PoolHome>,
}

impl GpuBuffer {
    pub(crate) fn new(slice: CudaSlice<u8>, bucket: usize, home: &Arc<PoolHome>) -> Self {
        Self {
            slice: Some(slice),
            bucket,
            home: Arc::downgrade(home),
        }
    }

    /// Wrap a buffer that belongs to no pool (e.g. a ring slot from `GpuContext::alloc`);
    /// dropping it frees it, and its owner un-counts it with `vram_dec`.
    pub fn unpooled(slice: CudaSlice<u8>) -> Self {
        let bucket = slice.len();
        Self {
            slice: Some(slice),
            bucket,
            home: Weak::new(),
        }
    }

    /// The buffer's device address, for a runtime that takes raw addresses (ONNX Runtime's
    /// IO binding). Work queued through it is not ordered by the buffer's events.
    ///
    /// # Safety
    /// The caller orders every use of the address itself: after the work that wrote the
    /// buffer (on whatever stream) and before the buffer is reused (dropped to the pool or
    /// rewritten), for example by synchronizing the stream it used.
    pub unsafe fn device_addr(&self) -> u64 {
        let slice = &**self;
        let stream = slice.stream().clone();
        let (ptr, _sync) = cudarc::driver::DevicePtr::device_ptr(slice, &stream);
        ptr
    }

    /// Make `stream` wait, on the GPU, for the last write to the buffer (its event), with
    /// no work of its own: so that what `stream` queues next (a timing event, say) comes
    /// after that write. The host does not wait.
    pub fn wait_for_writer(&self, stream: &cudarc::driver::CudaStream) {
        let slice: &CudaSlice<u8> = self;
        drop(cudarc::driver::DevicePtr::device_ptr(slice, stream));
    }

    /// The allocation, for writing (a holder with `&mut` is its only user).
    pub fn slice_mut(&mut self) -> &mut CudaSlice<u8> {
        self.slice.as_mut().expect("present until drop")
    }

    /// Bytes actually allocated (the bucket size).
    pub fn capacity(&self) -> usize {
        self.bucket
    }
}

impl Deref for GpuBuffer {
    type Target = CudaSlice<u8>;
    fn deref(&self) -> &CudaSlice<u8> {
        self.slice.as_ref().expect("present until drop")
    }
}

impl Drop for GpuBuffer {
    fn drop(&mut self) {
        let Some(slice) = self.slice.take() else {
            return;
        };
        match self.home.upgrade() {
            Some(home) => {
                if let Some(overflow) = home.pool.give_back(self.bucket, slice) {
                    drop(overflow);
                    home.vram.release(self.bucket);
                }
            }
            // The context is gone; cudarc frees the slice.
            None => drop(slice),
        }
    }
}
