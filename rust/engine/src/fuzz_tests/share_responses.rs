//! The response decoders of the hot path: ShareFetch (with record extraction behind it, as the
//! fetcher runs it), ShareGroupHeartbeat (`protocol::bounded_decode`) and ShareAcknowledge
//! (`protocol::share_requests`).

use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::share_fetch_response::{
    AcquiredRecords, LeaderIdAndEpoch, PartitionData, ShareFetchableTopicResponse,
};
use kafka_protocol::messages::share_group_heartbeat_response as hb;
use kafka_protocol::messages::{ShareFetchResponse, ShareGroupHeartbeatResponse};
use kafka_protocol::protocol::{Encodable, StrBytes};
use proptest::prelude::*;

use super::record_batches::{acquired_ranges, fix_crcs, valid_batches};
use super::{apply, bound, decompression_bound, mutation, with_allocation_limit};
use crate::protocol::bounded_decode::{
    decode_share_fetch_response, decode_share_group_heartbeat_response,
};
use crate::protocol::share_requests::ShareAcknowledgeResponse;
use crate::records;

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

proptest! {
    #![proptest_config(super::config(1))]

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
}

// Regressions found by fuzzing.

/// kafka-protocol's decoder aborted the process on this: 2^31 topics in 16 bytes.
#[test]
fn share_fetch_response_with_a_2_pow_31_array() {
    let mut body = vec![0u8; 11];
    body.extend_from_slice(&[0x80, 0x80, 0x80, 0x80, 0x08]);
    with_allocation_limit("2^31 topics", bound(body.len()), || {
        assert!(decode_share_fetch_response(Bytes::from(body)).is_err())
    });
}
