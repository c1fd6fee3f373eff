//! The counting allocator counts exactly the allocations of the scoped thread.
#![cfg(feature = "debug-alloc")]

use rave_core::debug_alloc::{CountScope, CountingAllocator, is_installed};

#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator;

#[test]
fn counts_allocations_inside_the_scope_only() {
    let before = vec![1u8; 16];
    assert!(is_installed());
    let scope = CountScope::begin();
    let a = vec![0u8; 64];
    let b = String::from("frame");
    let counted = scope.finish();
    assert_eq!(counted, 2, "two allocations were made in the scope");
    let quiet = CountScope::begin();
    let sum: u32 = before.iter().map(|v| u32::from(*v)).sum();
    assert_eq!(
        quiet.finish(),
        0,
        "no allocation in a scope that allocates nothing"
    );
    drop((a, b, sum));
}

#[test]
fn other_threads_are_not_counted() {
    let scope = CountScope::begin();
    std::thread::scope(|s| {
        s.spawn(|| (0..1000).map(|i| vec![0u8; i + 1].len()).sum::<usize>());
    });
    // Spawning a thread allocates a little on this thread; the worker's 1000 vectors must
    // not be counted here.
    let n = scope.finish();
    assert!(
        n < 100,
        "the worker's allocations leaked into this thread's count ({n})"
    );
}
