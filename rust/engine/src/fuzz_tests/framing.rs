//! Response framing: length prefixes of any value over a stream, and what a frame reserves
//! before its data arrives.

use bytes::BufMut;
use proptest::prelude::*;

use super::{bound, with_allocation_limit};
use crate::connection::{read_response, split_response, FrameBound, FRAME_PREALLOCATION};

/// The bound the responses here get: larger than any test frame's honest length, so what caps a
/// reservation is FRAME_PREALLOCATION, not the bound.
const BOUND: usize = 512 * 1024 * 1024;

/// Reads response frames from `stream` as a connection does until it ends or fails, splitting
/// each as a response with header v1; returns the number of frames read.
fn read_all_frames(stream: &[u8]) -> usize {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut reader = stream;
        let mut frames = 0;
        while let Ok(Some((frame, _))) =
            read_response(&mut reader, |_| FrameBound::uncharged(BOUND, None)).await
        {
            frames += 1;
            let _ = split_response(frame, 1);
        }
        frames
    })
}

proptest! {
    #![proptest_config(super::config(1))]

    #[test]
    fn framing_arbitrary_streams(
        frames in proptest::collection::vec(
            (prop_oneof![Just(None), Just(Some(i32::MAX)), Just(Some(-1)), Just(Some(3)),
                         (4i32..64).prop_map(Some)],
             proptest::collection::vec(any::<u8>(), 0..64)),
            0..6),
    ) {
        // Each piece: an optional length prefix (honest when None) and some bytes.
        let mut stream = Vec::new();
        for (length, body) in &frames {
            stream.put_i32(length.unwrap_or(body.len() as i32));
            stream.extend_from_slice(body);
        }
        // A frame's reservation before its data arrives is capped at FRAME_PREALLOCATION
        // (whatever its length field says); the tokio runtime allocates a few hundred KiB.
        let limit = FRAME_PREALLOCATION.max(2 * 1024 * 1024) + bound(stream.len());
        with_allocation_limit("framing", limit, || read_all_frames(&stream));
    }
}

// Regressions found by fuzzing.

/// A frame header claiming i32::MAX bytes followed by nothing must not reserve 2 GiB.
#[test]
fn frame_length_i32_max_reserves_little() {
    let mut stream = Vec::new();
    stream.put_i32(i32::MAX);
    stream.extend_from_slice(b"abcd");
    let frames = with_allocation_limit("frame of i32::MAX", 2 * 1024 * 1024, || {
        read_all_frames(&stream)
    });
    assert_eq!(frames, 0);
    // Just under the accepted maximum: refused lengths aside, the reservation is capped.
    let mut stream = Vec::new();
    stream.put_i32(500 * 1024 * 1024);
    stream.extend_from_slice(b"abcd");
    with_allocation_limit(
        "frame of 500 MiB",
        FRAME_PREALLOCATION + 1024 * 1024,
        || read_all_frames(&stream),
    );
}
