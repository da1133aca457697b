//! A global allocator that survives hostile size fields in requests.
//!
//! The protocol codecs (the `kafka-protocol` crate, 0.18) reserve a vector for an array's
//! element count before decoding any element, and that count comes straight from the request.
//! A few bytes declaring two billion elements then ask for a hundred gigabytes at once; the
//! system allocator refuses, and Rust aborts the process — for every client. (Upstream fixes
//! are proposed but not released.)
//!
//! [`HugeAllocationsReserveLazily`] serves allocations of 1 GiB and more from anonymous
//! `mmap(MAP_NORESERVE)` mappings: address space only, committed page by page as it is
//! touched, which Linux grants however large. The decoder then fails on the request's real
//! (short) bytes, the vector is freed untouched, and the connection closes with a decode error.
//! Every other allocation goes to the system allocator unchanged. Binaries that decode network
//! input (`ferrolog serve`, and the broker's tests) install it with `#[global_allocator]`.

use std::alloc::{GlobalAlloc, Layout, System};

/// Allocations from this size on are reserved lazily.
const HUGE: usize = 1 << 30;

#[derive(Debug, Default, Clone, Copy)]
pub struct HugeAllocationsReserveLazily;

// SAFETY: small allocations are delegated unchanged to `System`. Huge ones are whole anonymous
// mappings: page-aligned (any layout alignment up to a page is met; larger alignments go to
// `System`), zero-filled, freed with `munmap` of the same length by `dealloc`, and grown by
// copying in `realloc` (the default implementation, through `alloc` and `dealloc`).
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for HugeAllocationsReserveLazily {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() < HUGE || layout.align() > 4096 {
            // SAFETY: the caller's contract is passed on unchanged.
            return unsafe { System.alloc(layout) };
        }
        // SAFETY: a fresh private anonymous mapping; no existing memory is touched.
        let address = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                layout.size(),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if address == libc::MAP_FAILED {
            std::ptr::null_mut()
        } else {
            address.cast()
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if layout.size() < HUGE || layout.align() > 4096 {
            // SAFETY: `ptr` came from `System.alloc` with this layout (see `alloc`).
            unsafe { System.dealloc(ptr, layout) };
            return;
        }
        // SAFETY: `ptr` is the start of a mapping of exactly `layout.size()` bytes made by `alloc`.
        unsafe {
            libc::munmap(ptr.cast(), layout.size());
        }
    }
}
