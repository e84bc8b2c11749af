//! Property-based fuzzing (proptest) of everything that parses bytes from the network: the
//! framing layer, the ShareFetch / ShareAcknowledge / ShareGroupHeartbeat response decoders
//! and the record-batch decoder (with all four codecs). Inputs are arbitrary bytes and
//! mutations of valid encodings (with the batch CRC recomputed, so that mutations reach the
//! decompression and record parsing behind it). Every input must give a value or an error:
//! no panic, and no allocation out of proportion to the input. This test binary's global
//! allocator records the largest single allocation of the current thread, which each case
//! checks against a bound linear in the input size (a length field alone must never allocate).
//!
//! Regression cases found by fuzzing are kept as plain tests at the end.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::indexmap::IndexMap;
use kafka_protocol::messages::share_fetch_response::{
    AcquiredRecords, LeaderIdAndEpoch, PartitionData, ShareFetchableTopicResponse,
};
use kafka_protocol::messages::share_group_heartbeat_response as hb;
use kafka_protocol::messages::{ApiKey, ShareFetchResponse, ShareGroupHeartbeatResponse};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use kafka_protocol::records::{
    self as kr, Compression, Record, RecordBatchEncoder, RecordEncodeOptions,
};
use proptest::prelude::*;

use crate::connection::{read_frame, split_response, FRAME_PREALLOCATION};
use crate::error::EngineError;
use crate::protocol::bounded_decode::{
    decode_share_fetch_response, decode_share_group_heartbeat_response,
};
use crate::protocol::response_schema::{check_response, decode_response, RESPONSE_SCHEMAS};
use crate::protocol::share_requests::ShareAcknowledgeResponse;
use crate::records;

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

fn record(offset: i64, control: bool, key: &[u8], value: &[u8]) -> Record {
    let mut headers = IndexMap::new();
    headers.insert(
        StrBytes::from_static_str("h"),
        Some(Bytes::copy_from_slice(value)),
    );
    Record {
        transactional: control,
        control,
        partition_leader_epoch: 0,
        producer_id: -1,
        producer_epoch: -1,
        timestamp_type: kr::TimestampType::Creation,
        offset,
        sequence: offset as i32,
        timestamp: 1_000 + offset,
        key: Some(Bytes::copy_from_slice(key)),
        value: Some(Bytes::copy_from_slice(value)),
        headers,
        delete_horizon: false,
    }
}

const CODECS: [Compression; 5] = [
    Compression::None,
    Compression::Gzip,
    Compression::Snappy,
    Compression::Lz4,
    Compression::Zstd,
];

/// Two valid batches (codec per batch) of `n` records each, from offset 0.
fn valid_batches(codec_a: usize, codec_b: usize, n: i64, control_second: bool) -> BytesMut {
    let mut buf = BytesMut::new();
    let first: Vec<Record> = (0..n)
        .map(|o| record(o, false, b"key", b"value-value-value"))
        .collect();
    let second: Vec<Record> = (n..2 * n)
        .map(|o| record(o, control_second, b"k2", b"v2"))
        .collect();
    for (records, codec) in [(first, codec_a), (second, codec_b)] {
        let opts = RecordEncodeOptions {
            version: 2,
            compression: CODECS[codec % CODECS.len()],
        };
        RecordBatchEncoder::encode(&mut buf, &records, &opts).unwrap();
    }
    buf
}

/// Recomputes the CRC of every complete batch in `data` (batch boundaries as the length
/// fields say), so that mutations get past the CRC check.
fn fix_crcs(data: &mut [u8]) {
    let mut at = 0;
    while data.len() >= at + 61 {
        let len = i32::from_be_bytes(data[at + 8..at + 12].try_into().unwrap());
        let Ok(len) = usize::try_from(len) else {
            return;
        };
        let end = at + 12 + len;
        if len < 49 || end > data.len() {
            return;
        }
        let crc = crc32c::crc32c(&data[at + 21..end]);
        data[at + 17..at + 21].copy_from_slice(&crc.to_be_bytes());
        at = end;
    }
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

fn acquired(first: i64, last: i64, count: i16) -> AcquiredRecords {
    AcquiredRecords::default()
        .with_first_offset(first)
        .with_last_offset(last)
        .with_delivery_count(count)
}

/// A ShareFetch response whose partition carries real record batches.
fn fetch_response_with(records: Bytes, ranges: Vec<AcquiredRecords>) -> Vec<u8> {
    let response = ShareFetchResponse::default()
        .with_acquisition_lock_timeout_ms(30_000)
        .with_responses(vec![ShareFetchableTopicResponse::default()
            .with_topic_id(uuid::Uuid::from_u128(1))
            .with_partitions(vec![PartitionData::default()
                .with_partition_index(0)
                .with_current_leader(LeaderIdAndEpoch::default().with_leader_id(1))
                .with_records(Some(records))
                .with_acquired_records(ranges)])]);
    let mut wire = BytesMut::new();
    response.encode(&mut wire, 1).unwrap();
    wire.to_vec()
}

/// Decodes a ShareFetch response and runs record extraction on every partition, as the
/// fetcher does.
fn decode_fetch_fully(input: Vec<u8>) {
    let limit = decompression_bound(input.len());
    with_allocation_limit("ShareFetch response", limit, || {
        let Ok(response) = decode_share_fetch_response(Bytes::from(input)) else {
            return;
        };
        let topic: Arc<str> = Arc::from("t");
        for t in response.responses {
            for p in t.partitions {
                let extracted =
                    records::extract(&topic, p.partition_index, p.records, &p.acquired_records, 0);
                // Every span a record holds must lie inside its buffer.
                for r in extracted.iter().flat_map(|out| out.batch.records()) {
                    let headers: usize = r.headers().map(|h| h.key().len()).sum();
                    std::hint::black_box((r.key(), r.value(), headers, r.topic()));
                }
            }
        }
    });
}

fn acquired_ranges() -> impl Strategy<Value = Vec<AcquiredRecords>> {
    let offset = prop_oneof![
        -2i64..40,
        Just(i64::MAX),
        Just(i64::MIN),
        Just(i64::MAX - 1)
    ];
    proptest::collection::vec(
        (offset.clone(), offset, any::<i16>()).prop_map(|(a, b, c)| acquired(a, b, c)),
        0..4,
    )
}

fn heartbeat_response() -> Vec<u8> {
    let response = ShareGroupHeartbeatResponse::default()
        .with_member_id(Some(StrBytes::from_static_str("member-1")))
        .with_member_epoch(3)
        .with_heartbeat_interval_ms(5_000)
        .with_assignment(Some(hb::Assignment::default().with_topic_partitions(vec![
            hb::TopicPartitions::default()
                .with_topic_id(uuid::Uuid::from_u128(9))
                .with_partitions(vec![0, 1, 2]),
        ])));
    let mut wire = BytesMut::new();
    response.encode(&mut wire, 1).unwrap();
    wire.to_vec()
}

fn acknowledge_response(version: i16) -> Vec<u8> {
    use kafka_protocol::messages::share_acknowledge_response as kar;
    let response = kar::ShareAcknowledgeResponse::default()
        .with_responses(vec![kar::ShareAcknowledgeTopicResponse::default()
            .with_topic_id(uuid::Uuid::from_u128(4))
            .with_partitions(vec![kar::PartitionData::default()
                .with_partition_index(1)
                .with_error_code(121)
                .with_error_message(Some(StrBytes::from_static_str("state")))])])
        .with_node_endpoints(vec![kar::NodeEndpoint::default()
            .with_node_id(1.into())
            .with_host(StrBytes::from_static_str("h"))
            .with_port(9092)]);
    let mut v1 = BytesMut::new();
    response.encode(&mut v1, 1).unwrap();
    if version == 1 {
        return v1.to_vec();
    }
    // v2: AcquisitionLockTimeoutMs after ErrorMessage (4 + 2 + 1 bytes in).
    let mut v2 = v1[..7].to_vec();
    v2.put_i32(15_000);
    v2.extend_from_slice(&v1[7..]);
    v2
}

/// Reads frames from `stream` until it ends or fails, splitting each as a response with
/// header v1; returns the number of frames read.
fn read_all_frames(stream: &[u8]) -> usize {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut reader = stream;
        let mut frames = 0;
        while let Ok(Some(frame)) = read_frame(&mut reader).await {
            frames += 1;
            let _ = split_response(frame, 1);
        }
        frames
    })
}

proptest! {
    // PROPTEST_CASES=N runs a longer campaign.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(1000),
        ..ProptestConfig::default()
    })]

    #[test]
    fn share_fetch_response_arbitrary_bytes(input in proptest::collection::vec(any::<u8>(), 0..600)) {
        decode_fetch_fully(input);
    }

    #[test]
    fn share_fetch_response_mutated(
        codec_a in 0usize..5,
        codec_b in 0usize..5,
        n in 1i64..6,
        control in any::<bool>(),
        ranges in acquired_ranges(),
        mutations in proptest::collection::vec(mutation(), 1..4),
        crc in any::<bool>(),
    ) {
        let mut batches = valid_batches(codec_a, codec_b, n, control).to_vec();
        apply(&mut batches, &mutations);
        if crc {
            fix_crcs(&mut batches);
        }
        decode_fetch_fully(fetch_response_with(Bytes::from(batches), ranges.clone()));
        // Mutate the response framing around intact batches as well.
        let mut wire = fetch_response_with(valid_batches(codec_a, codec_b, n, control).freeze(), ranges);
        apply(&mut wire, &mutations);
        decode_fetch_fully(wire);
    }

    #[test]
    fn record_batches_arbitrary_bytes(
        input in proptest::collection::vec(any::<u8>(), 0..400),
        ranges in acquired_ranges(),
    ) {
        let limit = decompression_bound(input.len());
        with_allocation_limit("record batches", limit, || {
            let _ = records::extract(&Arc::from("t"), 0, Some(Bytes::from(input)), &ranges, 0);
        });
    }

    #[test]
    fn heartbeat_response_arbitrary_and_mutated(
        input in proptest::collection::vec(any::<u8>(), 0..200),
        mutations in proptest::collection::vec(mutation(), 1..4),
    ) {
        with_allocation_limit("heartbeat response", bound(input.len()), || {
            let _ = decode_share_group_heartbeat_response(Bytes::from(input));
        });
        let mut wire = heartbeat_response();
        apply(&mut wire, &mutations);
        let limit = bound(wire.len());
        with_allocation_limit("mutated heartbeat response", limit, || {
            let _ = decode_share_group_heartbeat_response(Bytes::from(wire));
        });
    }

    #[test]
    fn acknowledge_response_arbitrary_and_mutated(
        input in proptest::collection::vec(any::<u8>(), 0..200),
        version in 1i16..=2,
        mutations in proptest::collection::vec(mutation(), 1..4),
    ) {
        with_allocation_limit("ShareAcknowledge response", bound(input.len()), || {
            let _ = ShareAcknowledgeResponse::decode(Bytes::from(input), version);
        });
        let mut wire = acknowledge_response(version);
        apply(&mut wire, &mutations);
        let limit = bound(wire.len());
        with_allocation_limit("mutated ShareAcknowledge response", limit, || {
            let _ = ShareAcknowledgeResponse::decode(Bytes::from(wire), version);
        });
    }

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

proptest! {
    // Acks come from the caller (any i64 bounds through JNI) and from the engine for ranges
    // the broker sent.
    #[test]
    fn ack_queue_takes_any_ranges(
        acks in proptest::collection::vec(
            (prop_oneof![any::<i64>(), Just(i64::MAX), Just(i64::MIN), 0i64..20],
             prop_oneof![any::<i64>(), Just(i64::MAX), Just(i64::MIN), 0i64..20],
             0i8..=4),
            0..12),
    ) {
        let mut queue = crate::acks::AckQueue::default();
        for (first, last, code) in acks {
            queue.push(
                (uuid::Uuid::nil(), 0),
                crate::acks::PendingAck::from_caller(first, last, code, None),
                false,
            );
        }
        let (wire, in_flight) = queue.take();
        let _ = in_flight.record_counts();
        let _ = in_flight.caller_settled();
        let request = crate::protocol::share_requests::ShareFetchRequest {
            topics: wire,
            ..Default::default()
        };
        let _ = request.encode(2);
    }
}

/// One uncompressed batch of two records with its header fields patched, CRC fixed.
fn patched_batch(base_offset: i64, last_offset_delta: i32, base_timestamp: i64) -> Bytes {
    let mut data = valid_batches(0, 0, 2, false);
    let first_len = crate::record_batch::complete_batch_len(&data).unwrap();
    data.truncate(first_len);
    data[0..8].copy_from_slice(&base_offset.to_be_bytes());
    data[23..27].copy_from_slice(&last_offset_delta.to_be_bytes());
    data[27..35].copy_from_slice(&base_timestamp.to_be_bytes());
    fix_crcs(&mut data);
    data.freeze()
}

#[cfg(test)]
mod regressions {
    use super::*;

    /// Found by `share_fetch_response_mutated`: base offset + last offset delta overflowed
    /// (a panic in debug builds, a wrapped offset in release builds).
    #[test]
    fn batch_offsets_near_i64_max() {
        let t: Arc<str> = Arc::from("t");
        // Each time only that batch is lost: its acquired offsets are released.
        let out = records::extract(
            &t,
            0,
            Some(patched_batch(i64::MAX - 1, 5, 0)),
            &[acquired(0, 10, 1)],
            0,
        )
        .unwrap();
        assert!(out.corrupt[0].contains("out of range"), "{:?}", out.corrupt);
        assert_eq!((out.batch.records.len(), out.unread), (0, vec![(0, 10)]));
        // The header is fine (last offset delta patched to 0), a record's offset delta (5)
        // pushes its offset past i64::MAX.
        let mut data = BytesMut::new();
        let opts = RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        };
        let records = [record(0, false, b"k", b"v"), record(5, false, b"k", b"v")];
        RecordBatchEncoder::encode(&mut data, &records, &opts).unwrap();
        data[0..8].copy_from_slice(&(i64::MAX - 1).to_be_bytes());
        data[23..27].copy_from_slice(&0i32.to_be_bytes());
        fix_crcs(&mut data);
        let out = records::extract(
            &t,
            0,
            Some(data.freeze()),
            &[acquired(0, i64::MAX - 1, 1)],
            0,
        )
        .unwrap();
        assert!(
            out.corrupt[0].contains("offset out of range"),
            "{:?}",
            out.corrupt
        );
        assert!(out.batch.records.is_empty());
        // Timestamp base + delta overflowing.
        let out = records::extract(
            &t,
            0,
            Some(patched_batch(0, 1, i64::MAX)),
            &[acquired(0, 1, 1)],
            0,
        )
        .unwrap();
        assert!(out.corrupt[0].contains("timestamp"), "{:?}", out.corrupt);
        assert_eq!((out.batch.records.len(), out.unread), (0, vec![(0, 1)]));
    }

    /// A partition that fails half-way leaves the response's record vector as it was: the
    /// records it had already appended are taken back (the caller releases the partition).
    #[test]
    fn extract_into_takes_back_a_failed_partition() {
        let t: Arc<str> = Arc::from("t");
        let opts = RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        };
        let mut good = BytesMut::new();
        let two = [record(0, false, b"k", b"v"), record(1, false, b"k", b"v")];
        RecordBatchEncoder::encode(&mut good, &two, &opts).unwrap();
        let mut into = crate::batch::Batch::default();
        records::extract_into(
            &t,
            0,
            Some(good.clone().freeze()),
            &[acquired(0, 1, 1)],
            0,
            &mut into,
        )
        .unwrap();
        assert_eq!(into.len(), 2);
        // Partition 1: the same two records, then a batch whose offsets run past i64::MAX.
        let good_again = good.clone().freeze();
        let mut data = good;
        data.extend_from_slice(&patched_batch(i64::MAX - 1, 5, 0));
        let out = records::extract_into(
            &t,
            1,
            Some(data.freeze()),
            &[acquired(0, i64::MAX - 1, 1)],
            0,
            &mut into,
        )
        .unwrap();
        assert!(out.corrupt[0].contains("out of range"), "{:?}", out.corrupt);
        // The partition's good records are kept, appended after partition 0's.
        assert_eq!(into.len(), 4);
        assert_eq!(out.unread, vec![(2, i64::MAX - 1)]);
        // An invalid acquired range fails the partition: its records are taken back.
        let e = records::extract_into(&t, 2, Some(good_again), &[acquired(5, 4, 1)], 0, &mut into)
            .unwrap_err();
        assert!(e.to_string().contains("not valid"), "{e}");
        assert_eq!(into.len(), 4);
        assert!(into.records().all(|r| r.partition() < 2));
    }

    /// Decompression bombs: 8 MiB of zeros (value and header) compresses to a few KiB in gzip / lz4 / zstd; with a
    /// 1 MiB cap decoding fails after at most about twice the cap, instead of growing with
    /// whatever the stream expands to.
    #[test]
    fn decompression_is_capped() {
        let zeros = vec![0u8; 4 * 1024 * 1024];
        let record = record(0, false, b"k", &zeros);
        for (codec_id, compression) in [
            (1, Compression::Gzip),
            (2, Compression::Snappy),
            (3, Compression::Lz4),
            (4, Compression::Zstd),
        ] {
            let mut data = BytesMut::new();
            let opts = RecordEncodeOptions {
                version: 2,
                compression,
            };
            RecordBatchEncoder::encode(&mut data, [&record], &opts).unwrap();
            let body = data.freeze().slice(61..);
            let cap = 1024 * 1024;
            let compressed = body.len();
            let out =
                with_allocation_limit("capped decompression", 3 * cap + 64 * compressed, || {
                    crate::record_batch::decompress_capped(codec_id, body.clone(), cap)
                });
            let e = out.unwrap_err().to_string();
            assert!(e.contains("more than"), "{compression:?}: {e}");
            // Within the cap the same data decodes.
            let full = crate::record_batch::decompress_capped(codec_id, body, 16 * cap).unwrap();
            assert!(full.len() > 8 * 1024 * 1024, "{compression:?}"); // value + header
        }
    }

    /// Acquired ranges a broker never sends are refused before any offset arithmetic.
    #[test]
    fn invalid_acquired_ranges() {
        let t: Arc<str> = Arc::from("t");
        for (first, last) in [(5, 4), (-1, 3), (0, i64::MAX), (i64::MIN, 0)] {
            let data = patched_batch(0, 1, 0);
            assert!(
                records::extract(&t, 0, Some(data), &[acquired(first, last, 1)], 0).is_err(),
                "[{first}, {last}] accepted"
            );
        }
    }

    /// A caller range [i64::MIN, i64::MAX] overflowed the metrics' record count.
    #[test]
    fn whole_i64_ack_range() {
        let mut queue = crate::acks::AckQueue::default();
        queue.push(
            (uuid::Uuid::nil(), 0),
            crate::acks::PendingAck::from_caller(i64::MIN, i64::MAX, 1, None),
            false,
        );
        queue.push(
            (uuid::Uuid::nil(), 1),
            crate::acks::PendingAck::from_caller(i64::MAX, i64::MAX, 1, None),
            false,
        );
        let (_, in_flight) = queue.take();
        assert_eq!(in_flight.record_counts()[1], u64::MAX);
    }

    /// kafka-protocol's decoder aborted the process on this: 2^31 topics in 16 bytes.
    #[test]
    fn share_fetch_response_with_a_2_pow_31_array() {
        let mut body = vec![0u8; 11];
        body.extend_from_slice(&[0x80, 0x80, 0x80, 0x80, 0x08]);
        with_allocation_limit("2^31 topics", bound(body.len()), || {
            assert!(decode_share_fetch_response(Bytes::from(body)).is_err())
        });
    }

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

    /// A raw snappy block whose header declares 4 GiB: the codec would zero-fill that much.
    #[test]
    fn snappy_block_declaring_4_gib() {
        let mut data = valid_batches(2, 2, 2, false).to_vec();
        let first_len = crate::record_batch::complete_batch_len(&data).unwrap();
        data.truncate(first_len);
        // Replace the compressed body (after the 61-byte header) with a raw snappy block
        // that declares u32::MAX bytes, fix the batch length and CRC.
        data.truncate(61);
        let mut block = BytesMut::new();
        crate::protocol::wire::put_unsigned_varint(&mut block, u32::MAX);
        block.put_slice(&[0u8; 8]);
        data.extend_from_slice(&block);
        let len = (data.len() - 12) as i32;
        data[8..12].copy_from_slice(&len.to_be_bytes());
        fix_crcs(&mut data);
        let out = with_allocation_limit("snappy 4 GiB", decompression_bound(data.len()), || {
            records::extract(
                &Arc::from("t"),
                0,
                Some(Bytes::from(data)),
                &[acquired(0, 1, 1)],
                0,
            )
        });
        let out = out.unwrap();
        assert!(out.corrupt[0].contains("declares"), "{:?}", out.corrupt);
    }
}

// ---- Responses kafka-protocol decodes behind `protocol::response_schema` ----

/// A response encoded by kafka-protocol, with a decoder going through the shape check that
/// also tells whether the result equals the message it was encoded from.
struct ResponseSample {
    api: ApiKey,
    version: i16,
    wire: Vec<u8>,
    decodes_back: Box<dyn Fn(Bytes) -> Result<bool, EngineError>>,
}

fn sample<R>(api: ApiKey, version: i16, message: R) -> ResponseSample
where
    R: Encodable + Decodable + PartialEq + 'static,
{
    let mut wire = BytesMut::new();
    message.encode(&mut wire, version).unwrap();
    ResponseSample {
        api,
        version,
        wire: wire.to_vec(),
        decodes_back: Box::new(move |body| {
            decode_response::<R>(api, version, body).map(|decoded| decoded == message)
        }),
    }
}

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_string())
}

/// One response per schema in `RESPONSE_SCHEMAS`, `n` elements in every array, every field
/// (and every tagged field the crate knows) away from its default so that it is encoded;
/// with `unknown_tags`, tags the crate does not know ride along at the top level.
fn response_samples(n: usize, unknown_tags: bool) -> Vec<ResponseSample> {
    use kafka_protocol::messages::*;
    let n32 = n as i32;
    let unknown: BTreeMap<i32, Bytes> = if unknown_tags {
        [(77, Bytes::from_static(b"?")), (1000, Bytes::new())].into()
    } else {
        BTreeMap::new()
    };
    let ids = |base: i32| (0..n32).map(|i| BrokerId(base + i)).collect::<Vec<_>>();

    use api_versions_response as av;
    let mut api_versions = ApiVersionsResponse::default()
        .with_error_code(1)
        .with_api_keys(
            (0..n32)
                .map(|i| {
                    av::ApiVersion::default()
                        .with_api_key(i as i16)
                        .with_min_version(1)
                        .with_max_version(9)
                })
                .collect(),
        )
        .with_throttle_time_ms(5)
        .with_supported_features(
            (0..n)
                .map(|i| {
                    av::SupportedFeatureKey::default()
                        .with_name(s(&format!("feature-{i}")))
                        .with_min_version(1)
                        .with_max_version(2)
                })
                .collect(),
        )
        .with_finalized_features_epoch(7)
        .with_finalized_features(
            (0..n)
                .map(|i| {
                    av::FinalizedFeatureKey::default()
                        .with_name(s(&format!("share.version-{i}")))
                        .with_max_version_level(2)
                        .with_min_version_level(1)
                })
                .collect(),
        )
        .with_zk_migration_ready(true);
    api_versions.unknown_tagged_fields = unknown.clone();

    use metadata_response as md;
    let mut metadata = MetadataResponse::default()
        .with_throttle_time_ms(1)
        .with_brokers(
            (0..n32)
                .map(|i| {
                    md::MetadataResponseBroker::default()
                        .with_node_id(BrokerId(i))
                        .with_host(s("broker-host"))
                        .with_port(9092 + i)
                        .with_rack(Some(s("rack-a")))
                })
                .collect(),
        )
        .with_cluster_id(Some(s("cluster")))
        .with_controller_id(BrokerId(2))
        .with_topics(
            (0..n32)
                .map(|t| {
                    md::MetadataResponseTopic::default()
                        .with_error_code(3)
                        .with_name(Some(TopicName(s(&format!("topic-{t}")))))
                        .with_topic_id(uuid::Uuid::from_u128(t as u128 + 1))
                        .with_is_internal(true)
                        .with_partitions(
                            (0..n32)
                                .map(|p| {
                                    md::MetadataResponsePartition::default()
                                        .with_error_code(9)
                                        .with_partition_index(p)
                                        .with_leader_id(BrokerId(1))
                                        .with_leader_epoch(4)
                                        .with_replica_nodes(ids(1))
                                        .with_isr_nodes(ids(2))
                                        .with_offline_replicas(ids(3))
                                })
                                .collect(),
                        )
                        .with_topic_authorized_operations(0x0f)
                })
                .collect(),
        );
    metadata.unknown_tagged_fields = unknown.clone();

    use find_coordinator_response as fc;
    let mut find_coordinator = FindCoordinatorResponse::default()
        .with_throttle_time_ms(2)
        .with_coordinators(
            (0..n32)
                .map(|i| {
                    fc::Coordinator::default()
                        .with_key(s("group"))
                        .with_node_id(BrokerId(i))
                        .with_host(s("coordinator-host"))
                        .with_port(9093)
                        .with_error_code(15)
                        .with_error_message(Some(s("not available")))
                })
                .collect(),
        );
    find_coordinator.unknown_tagged_fields = unknown.clone();

    let sasl_handshake = SaslHandshakeResponse::default()
        .with_error_code(33)
        .with_mechanisms((0..n).map(|i| s(&format!("SCRAM-SHA-{i}"))).collect());

    let mut sasl_authenticate = SaslAuthenticateResponse::default()
        .with_error_code(58)
        .with_error_message(Some(s("bad credentials")))
        .with_auth_bytes(Bytes::from(vec![b'r'; n * 3]))
        .with_session_lifetime_ms(60_000);
    sasl_authenticate.unknown_tagged_fields = unknown.clone();

    use list_offsets_response as lo;
    let mut list_offsets = ListOffsetsResponse::default()
        .with_throttle_time_ms(2)
        .with_topics(
            (0..n)
                .map(|t| {
                    lo::ListOffsetsTopicResponse::default()
                        .with_name(TopicName(s(&format!("listed-{t}"))))
                        .with_partitions(
                            (0..n32)
                                .map(|p| {
                                    lo::ListOffsetsPartitionResponse::default()
                                        .with_partition_index(p)
                                        .with_error_code(6)
                                        .with_timestamp(1_700_000_000_000)
                                        .with_offset(4_242)
                                        .with_leader_epoch(7)
                                })
                                .collect(),
                        )
                })
                .collect(),
        );
    list_offsets.unknown_tagged_fields = unknown;

    vec![
        sample(ApiKey::ApiVersions, 3, api_versions),
        sample(ApiKey::Metadata, 12, metadata),
        sample(ApiKey::FindCoordinator, 4, find_coordinator),
        sample(ApiKey::SaslHandshake, 1, sasl_handshake),
        sample(ApiKey::SaslAuthenticate, 2, sasl_authenticate),
        sample(ApiKey::ListOffsets, 7, list_offsets),
    ]
}

/// Decodes `input` as `sample`'s response under the allocation bound; returns whether it
/// decoded (to anything).
fn decode_sample_bounded(what: &str, sample: &ResponseSample, input: Vec<u8>) -> bool {
    let limit = bound(input.len());
    let what = format!("{what} {:?} v{}", sample.api, sample.version);
    with_allocation_limit(&what, limit, || {
        (sample.decodes_back)(Bytes::from(input)).is_ok()
    })
}

/// Every schema matches kafka-protocol's encoder: with every field and known tagged field
/// set, the walk takes exactly the encoded bytes and skips no tag as unknown (a known tag
/// missing from a schema would be skipped, and the crate would read it unchecked), and the
/// checked decode gives back the message.
#[test]
fn response_schemas_match_the_crate_encoder() {
    for n in [0, 1, 3] {
        for unknown_tags in [false, true] {
            let samples = response_samples(n, unknown_tags);
            assert_eq!(samples.len(), RESPONSE_SCHEMAS.len());
            for sample in &samples {
                let what = format!("{:?} v{} (n = {n})", sample.api, sample.version);
                let body = Bytes::from(sample.wire.clone());
                let skipped = check_response(sample.api, sample.version, &body)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                let flexible = sample.api != ApiKey::SaslHandshake;
                let expected = if unknown_tags && flexible { 2 } else { 0 };
                assert_eq!(skipped, expected, "{what}: tags skipped as unknown");
                assert!(
                    (sample.decodes_back)(body).unwrap(),
                    "{what}: decoded differently"
                );
            }
        }
    }
    for (api, version, _) in RESPONSE_SCHEMAS {
        assert!(
            response_samples(1, false)
                .iter()
                .any(|s| s.api == *api && s.version == *version),
            "{api:?} v{version} has no sample"
        );
    }
}

/// Every position of every sample overwritten with a huge count (varint 2^31, 2^32 - 1 and
/// INT32 max, the forms kafka-protocol reads counts and lengths in): never an allocation out
/// of proportion, whichever field the bytes land in.
#[test]
fn huge_count_at_every_position_of_every_response() {
    let huge: [&[u8]; 4] = [
        &[0x80, 0x80, 0x80, 0x80, 0x08],
        &[0xff, 0xff, 0xff, 0xff, 0x0f],
        &[0x7f, 0xff, 0xff, 0xff],
        &[0x00, 0x7f, 0xff, 0xff, 0xff], // after a leading byte (INT16 error code, marker)
    ];
    let mut cases = 0;
    for sample in response_samples(2, true) {
        for at in 0..sample.wire.len() {
            for pattern in huge {
                let mut wire = sample.wire.clone();
                overwrite(&mut wire, at, pattern);
                decode_sample_bounded("huge count in", &sample, wire.clone());
                // Inserted rather than overwritten: the rest of the body shifts behind it.
                wire = sample.wire.clone();
                wire.splice(at..at, pattern.iter().copied());
                decode_sample_bounded("huge count inserted in", &sample, wire);
                cases += 2;
            }
        }
    }
    assert!(cases > 1000, "{cases}");
}

/// Without the shape check, kafka-protocol would reserve 2^31 brokers here (aborting the
/// process); with it, a protocol error naming the field.
#[test]
fn metadata_response_claiming_2_pow_31_brokers() {
    let mut body = vec![0u8; 4]; // throttle
    body.extend_from_slice(&[0x80, 0x80, 0x80, 0x80, 0x08]);
    let e = with_allocation_limit("2^31 brokers", bound(body.len()), || {
        decode_response::<kafka_protocol::messages::MetadataResponse>(
            ApiKey::Metadata,
            12,
            Bytes::from(body),
        )
        .unwrap_err()
    });
    assert!(
        e.to_string()
            .contains("brokers: claims 2147483647 elements"),
        "{e}"
    );
}

/// An (api, version) without a schema never reaches kafka-protocol's decoder.
#[test]
fn response_without_a_schema_is_refused() {
    let e = decode_response::<kafka_protocol::messages::MetadataResponse>(
        ApiKey::Metadata,
        11,
        Bytes::from_static(&[0; 16]),
    )
    .unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::Internal, "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(1000),
        ..ProptestConfig::default()
    })]

    /// Each case: every response type, arbitrary bytes and a mutation of a valid encoding.
    #[test]
    fn kafka_protocol_responses_arbitrary_and_mutated(
        input in proptest::collection::vec(any::<u8>(), 0..300),
        n in 0usize..4,
        unknown_tags in any::<bool>(),
        mutations in proptest::collection::vec(mutation(), 1..4),
    ) {
        for sample in response_samples(n, unknown_tags) {
            decode_sample_bounded("arbitrary", &sample, input.clone());
            let mut wire = sample.wire.clone();
            apply(&mut wire, &mutations);
            decode_sample_bounded("mutated", &sample, wire);
        }
    }
}

// ---- Settings from users (through JNI) and SASL messages from the server ----

fn test_data(name: &str) -> Vec<u8> {
    std::fs::read(format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// `text` with byte mutations applied, as a string (invalid UTF-8 replaced).
fn mutated_text(text: &[u8], mutations: &[Mutation]) -> String {
    let mut bytes = text.to_vec();
    apply(&mut bytes, mutations);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Blank settings fall back to defaults (a blank truststore: the system's CAs, slow to load);
/// keep every generated value non-blank.
fn non_blank(value: String) -> String {
    if value.trim().is_empty() {
        format!("x{value}")
    } else {
        value
    }
}

fn settings(pairs: Vec<(&str, String)>) -> std::collections::HashMap<String, String> {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// Security settings must end in a value or a `Config` error: never a panic.
fn security_from(props: &std::collections::HashMap<String, String>) {
    if let Err(e) = crate::Security::from_properties(props) {
        assert_eq!(e.kind(), crate::ErrorKind::Config, "{e}");
    }
}

fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[ =\"\\\\;a-z]{0,40}",
        proptest::collection::vec(any::<u8>(), 0..80)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(1000),
        ..ProptestConfig::default()
    })]

    /// `sasl.jaas.config`: arbitrary text and mutations of a valid line.
    #[test]
    fn jaas_config_arbitrary_and_mutated(
        text in any_text(),
        mutations in proptest::collection::vec(mutation(), 1..4),
    ) {
        let valid = br#"org.apache.kafka.common.security.scram.ScramLoginModule required username="al\"ice" password="s3cr=t;";"#;
        for jaas in [text.clone(), mutated_text(valid, &mutations)] {
            let props = settings(vec![
                ("security.protocol", "SASL_PLAINTEXT".into()),
                ("sasl.mechanism", "SCRAM-SHA-512".into()),
                ("sasl.jaas.config", jaas),
            ]);
            security_from(&props);
        }
    }

    /// PEM truststore and client certificate/key settings: arbitrary text and mutations of
    /// valid PEM (base64 damage reaches the DER parsers behind it).
    #[test]
    fn pem_settings_arbitrary_and_mutated(
        text in any_text(),
        which in 0usize..3,
        mutations in proptest::collection::vec(mutation(), 1..4),
    ) {
        let cert = test_data("client-cert.pem");
        let key = test_data("client-key.pk8.pem");
        let valid_cert = String::from_utf8(cert.clone()).unwrap();
        let valid_key = String::from_utf8(key.clone()).unwrap();
        let damaged = [
            non_blank(mutated_text(&cert, &mutations)),
            non_blank(mutated_text(&key, &mutations)),
            non_blank(text),
        ];
        for value in damaged {
            let mut values = [valid_cert.clone(), valid_cert.clone(), valid_key.clone()];
            values[which] = value;
            let [trust, chain, key] = values;
            let props = settings(vec![
                ("security.protocol", "SSL".into()),
                ("ssl.truststore.type", "PEM".into()),
                ("ssl.truststore.certificates", trust),
                ("ssl.keystore.type", "PEM".into()),
                ("ssl.keystore.certificate.chain", chain),
                ("ssl.keystore.key", key),
            ]);
            security_from(&props);
        }
    }

    /// Consumer settings of any value: a config or a `Config` error.
    #[test]
    fn consumer_settings_arbitrary(
        values in proptest::collection::vec(any_text(), 12),
        numbers in proptest::collection::vec(
            prop_oneof![any::<i64>().prop_map(|v| v.to_string()), Just("18446744073709551615".to_string()), Just("-0".to_string())],
            8),
    ) {
        let keys = [
            "bootstrap.servers", "group.id", "client.id", "client.rack", "share.acquire.mode",
            "security.protocol", "sasl.mechanism", "ssl.truststore.type", "ssl.keystore.type",
            "ssl.endpoint.identification.algorithm", "max.poll.records", "fetch.max.bytes",
        ];
        let numeric = [
            "max.poll.records", "fetch.max.bytes", "fetch.min.bytes", "fetch.max.wait.ms",
            "request.timeout.ms", "share.buffer.max.records", "share.buffer.max.bytes",
            "fetch.max.bytes",
        ];
        let mut props: std::collections::HashMap<String, String> = keys
            .iter()
            .zip(values)
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        // Only plaintext: the other protocols are covered above and may load system CAs.
        props.insert("security.protocol".into(), "PLAINTEXT".into());
        if let Err(e) = crate::ConsumerConfig::from_properties(&props) {
            assert_eq!(e.kind(), crate::ErrorKind::Config, "{e}");
        }
        props.insert("bootstrap.servers".into(), "localhost:9092".into());
        props.insert("group.id".into(), "g".into());
        props.insert("share.acquire.mode".into(), "record_limit".into());
        for (key, number) in numeric.iter().zip(numbers) {
            props.insert(key.to_string(), number);
        }
        if let Err(e) = crate::ConsumerConfig::from_properties(&props) {
            assert_eq!(e.kind(), crate::ErrorKind::Config, "{e}");
        }
    }

    /// SCRAM server-first and server-final messages: arbitrary text and near-valid messages.
    /// Valid iteration counts are rare here (PBKDF2 is slow in a debug build).
    #[test]
    fn scram_server_messages(
        text in any_text(),
        nonce_extends_ours in any::<bool>(),
        salt in prop_oneof![Just("c2FsdA==".to_string()), any_text()],
        iterations in prop_oneof![
            1 => Just("4096".to_string()),
            9 => prop_oneof![any::<i64>().prop_map(|i| i.to_string()), any_text(),
                             Just("4294967295".to_string()), Just("16385".to_string())],
        ],
        extra in any_text(),
    ) {
        use crate::sasl::{check_server_final, ScramClient, ScramHash};
        let client = ScramClient::new(&text, &extra, "nonce".into());
        let nonce = if nonce_extends_ours { "nonce+server" } else { "other" };
        let server_first = format!("r={nonce},s={salt},i={iterations}{extra}");
        for hash in [ScramHash::Sha256, ScramHash::Sha512] {
            for message in [text.as_str(), server_first.as_str()] {
                if let Err(e) = client.client_final(hash, message) {
                    assert_eq!(e.kind(), crate::ErrorKind::Authentication, "{e}");
                }
            }
        }
        for message in [&text, &server_first, &extra] {
            assert!(check_server_final(message, b"signature", "b:1").is_err());
        }
    }
}

proptest! {
    // Each case opens a PKCS12 archive (key derivation included): fewer cases.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse::<u32>().ok()).map(|n| n / 5).unwrap_or(200),
        ..ProptestConfig::default()
    })]

    /// A damaged PKCS12 keystore or truststore file is a `Config` error, never a panic.
    #[test]
    fn pkcs12_files_mutated(mutations in proptest::collection::vec(mutation(), 1..4)) {
        let mut archive = test_data("client.p12");
        apply(&mut archive, &mutations);
        let path = std::env::temp_dir().join(format!(
            "sharesink-fuzz-{}-{:?}.p12",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::write(&path, &archive).unwrap();
        let location = path.to_str().unwrap().to_string();
        for (kind, location_key, password_key) in [
            ("ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password"),
            ("ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password"),
        ] {
            let mut props = settings(vec![
                ("security.protocol", "SSL".into()),
                (kind, "PKCS12".into()),
                (location_key, location.clone()),
                (password_key, "secret".into()),
            ]);
            if kind == "ssl.keystore.type" {
                props.insert("ssl.truststore.type".into(), "PEM".into());
                props.insert(
                    "ssl.truststore.certificates".into(),
                    String::from_utf8(test_data("client-cert.pem")).unwrap(),
                );
            }
            security_from(&props);
        }
        let _ = std::fs::remove_file(&path);
    }
}
