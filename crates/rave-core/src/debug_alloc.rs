//! Host-allocation counting for the debug guards (`debug-alloc` feature): a global allocator
//! that counts every allocation made by a thread while that thread has a [`CountScope`] open.
//! The binary installs it with `#[global_allocator] static A: CountingAllocator = CountingAllocator;`;
//! without that, scopes count nothing and [`is_installed`] says so.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<u64> = const { Cell::new(0) };
}

static INSTALLED: AtomicBool = AtomicBool::new(false);

/// The system allocator, counting allocations of threads inside a [`CountScope`].
pub struct CountingAllocator;

fn note_allocation() {
    INSTALLED.store(true, Ordering::Relaxed);
    // `try_with` fails only while the thread's locals are being torn down; nothing is
    // counted then.
    let _ = COUNTING.try_with(|on| {
        if on.get() {
            let _ = COUNT.try_with(|c| c.set(c.get() + 1));
        }
    });
}

// SAFETY: every call is forwarded unchanged to the system allocator; the bookkeeping touches
// only const-initialised thread-locals and an atomic, which never allocate.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_allocation();
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Whether the counting allocator has served at least one allocation in this process.
pub fn is_installed() -> bool {
    INSTALLED.load(Ordering::Relaxed)
}

/// Counts the current thread's host allocations from `begin` to `finish`.
pub struct CountScope {
    _not_send: std::marker::PhantomData<*const ()>,
}

impl CountScope {
    /// Start counting this thread's allocations from zero.
    pub fn begin() -> Self {
        COUNT.with(|c| c.set(0));
        COUNTING.with(|on| on.set(true));
        Self {
            _not_send: std::marker::PhantomData,
        }
    }

    /// Stop counting and return how many allocations the thread made.
    pub fn finish(self) -> u64 {
        COUNTING.with(|on| on.set(false));
        COUNT.with(|c| c.get())
    }
}

impl Drop for CountScope {
    fn drop(&mut self) {
        COUNTING.with(|on| on.set(false));
    }
}
