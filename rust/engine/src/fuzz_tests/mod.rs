//! Property-based fuzzing (proptest) of everything that parses bytes from outside: the framing
//! layer (`framing`), the ShareFetch / ShareAcknowledge / ShareGroupHeartbeat response decoders
//! (`share_responses`), the record-batch decoder with all four codecs (`record_batches`), the
//! responses kafka-protocol decodes behind `protocol::response_schema` (`checked_responses`),
//! the ack queue (`acks`), and settings and SASL messages (`settings`). Inputs are arbitrary
//! bytes and mutations of valid encodings (with the batch CRC recomputed, so that mutations
//! reach the decompression and record parsing behind it). Every input must give a value or an
//! error: no panic, and no allocation out of proportion to the input. This test binary's global
//! allocator (here) records the largest single allocation of the current thread, which each
//! case checks against a bound linear in the input size (a length field alone must never
//! allocate).
//!
//! Regression cases found by fuzzing are kept as plain tests, each beside the properties of what
//! it broke. `PROPTEST_CASES=N` runs a longer campaign.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use bytes::BytesMut;
use proptest::prelude::*;

mod acks;
mod checked_responses;
mod framing;
mod record_batches;
mod settings;
mod share_responses;

/// Cases per property: `PROPTEST_CASES` (1000 unless set), divided by `slowness` for
/// properties whose cases are slow.
fn config(slowness: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .unwrap_or(1000);
    ProptestConfig {
        cases: cases / slowness,
        ..ProptestConfig::default()
    }
}

/// Tracks the largest allocation (or reallocation target) made by the current thread since
/// the last `reset`.
struct LargestAllocation;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    // try_with: the thread-local may already be gone while a thread shuts down.
    let _ = LARGEST.try_with(|l| {
        if size > l.get() {
            l.set(size)
        }
    });
}

unsafe impl GlobalAlloc for LargestAllocation {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        System.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        System.realloc(ptr, layout, new_size)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static ALLOCATOR: LargestAllocation = LargestAllocation;

/// Runs `f` and fails if any single allocation in it exceeded `limit` bytes.
fn with_allocation_limit<T>(what: &str, limit: usize, f: impl FnOnce() -> T) -> T {
    LARGEST.with(|l| l.set(0));
    let out = f();
    let largest = LARGEST.with(|l| l.get());
    assert!(
        largest <= limit,
        "{what}: one allocation of {largest} bytes (limit {limit})"
    );
    out
}

/// Allocation bound for decoding `input_len` bytes: a constant for small structures plus a
/// generous linear factor (decoded structs are larger than their wire form).
fn bound(input_len: usize) -> usize {
    64 * 1024 + 256 * input_len
}

/// Record batches decompress; the largest legitimate expansion of these codecs is about
/// 1000× (gzip) for the inputs here, which are small.
fn decompression_bound(input_len: usize) -> usize {
    1024 * 1024 + 1100 * input_len
}

#[derive(Debug, Clone)]
enum Mutation {
    /// Overwrite one byte.
    Set(usize, u8),
    /// Flip bits of one byte.
    Xor(usize, u8),
    /// Write a big-endian i32 (length fields, counts).
    SetI32(usize, i32),
    /// Write a big-endian i64 (offsets, timestamps).
    SetI64(usize, i64),
    /// Write an unsigned varint (compact lengths, snappy headers).
    SetVarint(usize, u32),
    /// Write a zig-zag varlong (record fields: lengths, offset and timestamp deltas).
    SetVarlong(usize, i64),
    /// Cut the input.
    Truncate(usize),
    /// Insert bytes.
    Insert(usize, Vec<u8>),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let interesting_i32 = prop_oneof![
        Just(i32::MAX),
        Just(i32::MIN),
        Just(-1),
        Just(0),
        Just(1 << 30),
        any::<i32>()
    ];
    let interesting_u32 = prop_oneof![
        Just(u32::MAX),
        Just(1u32 << 31),
        Just(0),
        Just(1),
        any::<u32>()
    ];
    let interesting_i64 = prop_oneof![
        Just(i64::MAX),
        Just(i64::MIN),
        Just(-1i64),
        Just(i64::from(i32::MAX)),
        any::<i64>()
    ];
    prop_oneof![
        (any::<usize>(), interesting_i64.clone()).prop_map(|(i, v)| Mutation::SetI64(i, v)),
        (any::<usize>(), interesting_i64).prop_map(|(i, v)| Mutation::SetVarlong(i, v)),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Set(i, b)),
        (any::<usize>(), 1..=255u8).prop_map(|(i, b)| Mutation::Xor(i, b)),
        (any::<usize>(), interesting_i32).prop_map(|(i, v)| Mutation::SetI32(i, v)),
        (any::<usize>(), interesting_u32).prop_map(|(i, v)| Mutation::SetVarint(i, v)),
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(i, b)| Mutation::Insert(i, b)),
    ]
}

/// Writes `bytes` at `at`, as far as `data` reaches.
fn overwrite(data: &mut [u8], at: usize, bytes: &[u8]) {
    for (slot, b) in data.iter_mut().skip(at).zip(bytes) {
        *slot = *b;
    }
}

fn apply(data: &mut Vec<u8>, mutations: &[Mutation]) {
    for m in mutations {
        if data.is_empty() {
            return;
        }
        let len = data.len();
        let at = |i: usize| i % len;
        match m {
            Mutation::Set(i, b) => data[at(*i)] = *b,
            Mutation::Xor(i, b) => data[at(*i)] ^= *b,
            Mutation::SetI32(i, v) => overwrite(data, at(*i), &v.to_be_bytes()),
            Mutation::SetI64(i, v) => overwrite(data, at(*i), &v.to_be_bytes()),
            Mutation::SetVarint(i, v) => {
                let mut raw = BytesMut::new();
                crate::protocol::wire::put_unsigned_varint(&mut raw, *v);
                overwrite(data, at(*i), &raw)
            }
            Mutation::SetVarlong(i, v) => {
                let mut zigzag = ((v << 1) ^ (v >> 63)) as u64;
                let mut raw = Vec::new();
                while zigzag >= 0x80 {
                    raw.push((zigzag as u8 & 0x7f) | 0x80);
                    zigzag >>= 7;
                }
                raw.push(zigzag as u8);
                overwrite(data, at(*i), &raw)
            }
            Mutation::Truncate(i) => data.truncate(at(*i)),
            Mutation::Insert(i, bytes) => {
                let i = at(*i);
                data.splice(i..i, bytes.iter().copied());
            }
        }
    }
}
