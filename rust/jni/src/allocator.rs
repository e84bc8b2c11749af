//! The library's global allocator: mimalloc (the `mimalloc` feature, on by default), which keeps
//! freed pages for reuse (with glibc's malloc every ~1 MiB fetch response was page-faulted in
//! afresh; see the workspace Cargo.toml), counting the bytes it has handed out and not yet been
//! given back, for the `share-engine-off-heap-bytes` metric. mimalloc's own figures do not serve:
//! its v2 line reports its whole reserved arena as committed. Without the feature the counter
//! wraps the system allocator, so the metric holds either way.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

#[cfg(feature = "mimalloc")]
const INNER: mimalloc::MiMalloc = mimalloc::MiMalloc;
#[cfg(not(feature = "mimalloc"))]
const INNER: std::alloc::System = std::alloc::System;

pub struct CountingAllocator {
    live: AtomicUsize,
}

impl CountingAllocator {
    pub const fn new() -> Self {
        CountingAllocator {
            live: AtomicUsize::new(0),
        }
    }

    /// Bytes allocated through this allocator and not freed yet.
    pub fn live_bytes(&self) -> usize {
        self.live.load(Relaxed)
    }
}

impl Default for CountingAllocator {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: every call is forwarded to the inner allocator with the same arguments; the counter
// only observes.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is.
        let p = unsafe { INNER.alloc(layout) };
        if !p.is_null() {
            self.live.fetch_add(layout.size(), Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is.
        let p = unsafe { INNER.alloc_zeroed(layout) };
        if !p.is_null() {
            self.live.fetch_add(layout.size(), Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as is.
        unsafe { INNER.dealloc(ptr, layout) };
        self.live.fetch_sub(layout.size(), Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as is.
        let p = unsafe { INNER.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                self.live.fetch_add(new_size - layout.size(), Relaxed);
            } else {
                self.live.fetch_sub(layout.size() - new_size, Relaxed);
            }
        }
        p
    }
}
