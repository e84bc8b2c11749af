//! The record-batch decoder behind `records::extract`: arbitrary bytes, offsets and timestamps
//! near the ends of i64, decompression bombs, and acquired ranges a broker never sends. Also the
//! valid batches the other fuzz targets mutate.

use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::indexmap::IndexMap;
use kafka_protocol::messages::share_fetch_response::AcquiredRecords;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    self as kr, Compression, Record, RecordBatchEncoder, RecordEncodeOptions,
};
use proptest::prelude::*;

use super::{decompression_bound, with_allocation_limit};
use crate::records;

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
pub(super) fn valid_batches(
    codec_a: usize,
    codec_b: usize,
    n: i64,
    control_second: bool,
) -> BytesMut {
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
pub(super) fn fix_crcs(data: &mut [u8]) {
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

fn acquired(first: i64, last: i64, count: i16) -> AcquiredRecords {
    AcquiredRecords::default()
        .with_first_offset(first)
        .with_last_offset(last)
        .with_delivery_count(count)
}

pub(super) fn acquired_ranges() -> impl Strategy<Value = Vec<AcquiredRecords>> {
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

proptest! {
    #![proptest_config(super::config(1))]

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
}

// Regressions found by fuzzing.

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
        let out = with_allocation_limit("capped decompression", 3 * cap + 64 * compressed, || {
            crate::record_batch::decompress_capped(codec_id, body.clone(), cap)
        });
        let e = out.unwrap_err().to_string();
        assert!(e.contains("more than"), "{compression:?}: {e}");
        // Within the cap the same data decodes (snappy's decoder grows its buffer by doubling,
        // so twice the 8 MiB are charged for it).
        let full =
            crate::record_batch::decompress_capped(codec_id, body.clone(), 20 * cap).unwrap();
        assert!(full.len() > 8 * 1024 * 1024, "{compression:?}"); // value + header
                                                                  // A stream decoder's buffer grows no further than the cap: what fits, fits exactly.
        if codec_id != 2 {
            let just = crate::record_batch::decompress_capped(codec_id, body, full.len() + 1);
            assert_eq!(just.unwrap(), full, "{compression:?}");
        }
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

/// A compression bomb (32 MiB of zeros in about 1 KiB) and a header flood (1 M headers, 2 MiB
/// decompressed, 20 MiB as the engine holds headers) after three good records, extracted for a
/// member whose allowance is 4 MiB (half of an 8 MiB bound): decoding stops at the allowance,
/// no allocation ever passes it, the good records stay, the hostile batch and what follows are
/// released, and once the batch is dropped nothing stays charged.
#[test]
fn hostile_batches_stop_at_the_allowance_before_it_is_allocated() {
    use crate::memory::{MemberMemory, MemoryPool};
    use sharesink_testkit::hostile::{compression_bomb, header_flood, BombCodec};
    const MIB: usize = 1024 * 1024;
    let t: Arc<str> = Arc::from("t");
    for (what, hostile, last) in [
        ("bomb", compression_bomb(BombCodec::Zstd, 4, 8 * MIB), 6),
        ("header flood", header_flood(BombCodec::Gzip, 1 << 20), 3),
    ] {
        let mut data = BytesMut::new();
        let good: Vec<Record> = (0..3).map(|o| record(o, false, b"k", b"v")).collect();
        let opts = RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        };
        RecordBatchEncoder::encode(&mut data, &good, &opts).unwrap();
        let mut hostile = BytesMut::from(&hostile[..]);
        hostile[0..8].copy_from_slice(&3i64.to_be_bytes()); // outside the CRC
        data.extend_from_slice(&hostile);
        let pool = MemoryPool::new(1 << 30);
        let member = MemberMemory::new(8 * MIB, pool.clone());
        let mut batch = crate::batch::Batch::charged_to(member.clone());
        let out = with_allocation_limit(what, 4 * MIB, || {
            records::extract_into(
                &t,
                0,
                Some(data.freeze()),
                &[acquired(0, last, 1)],
                0,
                &mut batch,
            )
        })
        .unwrap();
        let (offset, shortfall) = out.short.expect(what);
        assert_eq!(offset, 3, "{what}");
        assert!(shortfall.is_poison(), "{what}: {shortfall:?}");
        assert_eq!(batch.len(), 3, "{what}: the good records stay");
        assert_eq!(out.unread, vec![(3, last)], "{what}");
        assert!(
            out.gaps.is_empty() && out.gaps_beside_records.is_empty() && out.corrupt.is_empty(),
            "{what}"
        );
        assert!(member.used() <= 4 * MIB, "{what}: {}", member.used());
        assert_eq!(member.used(), pool.used());
        let rest = batch.split_off(1);
        drop(batch);
        assert!(member.used() > 0, "{what}: a half still holds the data");
        drop(rest);
        assert_eq!((member.used(), pool.used()), (0, 0), "{what}");
    }
}
