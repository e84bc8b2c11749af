//! Decoders for the ShareFetch (v1 = v2) and ShareGroupHeartbeat (v1) responses that build
//! kafka-protocol's own message structs, but never allocate from a length field.
//!
//! The upstream change that retires them (and `response_schema`): a kafka-protocol release
//! whose `Array::decode` / `CompactArray::decode` (src/protocol/types.rs) refuse a count beyond
//! the bytes left and reserve at most a constant before elements decode, as pull request
//! kafka-protocol-rs/kafka-protocol-rs#161 ("Bound decoder pre-allocation to prevent
//! unbounded-allocation abort", open) does. 0.18.0, and the main branch after it, still call
//! `Vec::with_capacity(count)`. #152 and #200 (open) bound the count only, which is not enough:
//! a 50 MiB ShareFetch response could still reserve 50 M × 184 bytes
//! (`size_of::<PartitionData>()`), about 9 GiB. With that release `ShareFetchResponse::decode(body, 1)` (the
//! v2 response has v1's bytes; 0.18 knows ShareFetch up to v1) and
//! `ShareGroupHeartbeatResponse::decode(body, 1)` replace this module, and
//! `fuzz_tests::share_responses` keeps checking them under its allocation bound.
//!
//! kafka-protocol 0.18 decodes a compact array with `Vec::with_capacity(count)` straight from
//! the wire: a 16-byte ShareFetch response claiming 2^31 topics makes it request hundreds of
//! GiB, and the allocation failure aborts the process (found by `fuzz_tests`). Here every
//! array grows by push, and each element consumes input bytes, so memory stays proportional
//! to the response's size. Byte fields (`Records`) are zero-copy slices of the body.

use bytes::{Buf, Bytes};
use kafka_protocol::messages::share_fetch_response::{
    AcquiredRecords, LeaderIdAndEpoch, NodeEndpoint, PartitionData, ShareFetchableTopicResponse,
};
use kafka_protocol::messages::share_group_heartbeat_response::{Assignment, TopicPartitions};
use kafka_protocol::messages::{BrokerId, ShareFetchResponse, ShareGroupHeartbeatResponse};
use kafka_protocol::protocol::StrBytes;

use super::wire::*;
use crate::error::EngineError;

fn nullable_str(buf: &mut Bytes) -> Result<Option<StrBytes>, EngineError> {
    let len = get_unsigned_varint(buf)?;
    if len == 0 {
        return Ok(None);
    }
    let len = len as usize - 1;
    if buf.remaining() < len {
        return Err(EngineError::protocol("response ends inside a string"));
    }
    StrBytes::from_utf8(buf.split_to(len))
        .map(Some)
        .map_err(|_| EngineError::protocol("string is not UTF-8"))
}

fn str(buf: &mut Bytes, what: &str) -> Result<StrBytes, EngineError> {
    nullable_str(buf)?.ok_or_else(|| EngineError::protocol(format!("{what} is null")))
}

/// Compact nullable bytes, sliced from `buf` without copying.
fn nullable_bytes(buf: &mut Bytes) -> Result<Option<Bytes>, EngineError> {
    let len = get_unsigned_varint(buf)?;
    if len == 0 {
        return Ok(None);
    }
    let len = len as usize - 1;
    if buf.remaining() < len {
        return Err(EngineError::protocol("response ends inside a bytes field"));
    }
    Ok(Some(buf.split_to(len)))
}

/// A non-null compact array: each element is read by `element`, which must consume input.
fn array<T>(
    buf: &mut Bytes,
    what: &str,
    mut element: impl FnMut(&mut Bytes) -> Result<T, EngineError>,
) -> Result<Vec<T>, EngineError> {
    let raw = get_unsigned_varint(buf)?;
    if raw == 0 {
        return Err(EngineError::protocol(format!("{what} array is null")));
    }
    let count = raw - 1;
    // Every element takes at least one byte: a larger count cannot be honest.
    if count as usize > buf.remaining() {
        return Err(EngineError::protocol(format!(
            "{what} array claims {count} elements with {} bytes left",
            buf.remaining()
        )));
    }
    let mut out = Vec::new();
    for _ in 0..count {
        out.push(element(buf)?);
    }
    Ok(out)
}

fn node_endpoint(buf: &mut Bytes) -> Result<NodeEndpoint, EngineError> {
    let node_id = get_i32(buf)?;
    let host = str(buf, "NodeEndpoint host")?;
    let port = get_i32(buf)?;
    let rack = nullable_str(buf)?;
    skip_tagged_fields(buf)?;
    Ok(NodeEndpoint::default()
        .with_node_id(BrokerId(node_id))
        .with_host(host)
        .with_port(port)
        .with_rack(rack))
}

fn acquired_records(buf: &mut Bytes) -> Result<AcquiredRecords, EngineError> {
    let first_offset = get_i64(buf)?;
    let last_offset = get_i64(buf)?;
    let delivery_count = get_i16(buf)?;
    skip_tagged_fields(buf)?;
    Ok(AcquiredRecords::default()
        .with_first_offset(first_offset)
        .with_last_offset(last_offset)
        .with_delivery_count(delivery_count))
}

fn fetch_partition(buf: &mut Bytes) -> Result<PartitionData, EngineError> {
    let partition_index = get_i32(buf)?;
    let error_code = get_i16(buf)?;
    let error_message = nullable_str(buf)?;
    let acknowledge_error_code = get_i16(buf)?;
    let acknowledge_error_message = nullable_str(buf)?;
    let leader_id = get_i32(buf)?;
    let leader_epoch = get_i32(buf)?;
    skip_tagged_fields(buf)?;
    let records = nullable_bytes(buf)?;
    let acquired = array(buf, "AcquiredRecords", acquired_records)?;
    skip_tagged_fields(buf)?;
    Ok(PartitionData::default()
        .with_partition_index(partition_index)
        .with_error_code(error_code)
        .with_error_message(error_message)
        .with_acknowledge_error_code(acknowledge_error_code)
        .with_acknowledge_error_message(acknowledge_error_message)
        .with_current_leader(
            LeaderIdAndEpoch::default()
                .with_leader_id(leader_id)
                .with_leader_epoch(leader_epoch),
        )
        .with_records(records)
        .with_acquired_records(acquired))
}

fn fetch_topic(buf: &mut Bytes) -> Result<ShareFetchableTopicResponse, EngineError> {
    let topic_id = get_uuid(buf)?;
    let partitions = array(buf, "ShareFetch partitions", fetch_partition)?;
    skip_tagged_fields(buf)?;
    Ok(ShareFetchableTopicResponse::default()
        .with_topic_id(topic_id)
        .with_partitions(partitions))
}

/// Names the message in a decoding error.
fn in_message(what: &str, e: EngineError) -> EngineError {
    match e {
        EngineError::Protocol(m) => EngineError::protocol(format!("decoding {what} response: {m}")),
        other => other,
    }
}

/// A ShareFetch response body (after the response header), v1 or v2 (same bytes).
pub fn decode_share_fetch_response(body: Bytes) -> Result<ShareFetchResponse, EngineError> {
    share_fetch_response(body).map_err(|e| in_message("ShareFetch", e))
}

fn share_fetch_response(mut body: Bytes) -> Result<ShareFetchResponse, EngineError> {
    let buf = &mut body;
    let throttle_time_ms = get_i32(buf)?;
    let error_code = get_i16(buf)?;
    let error_message = nullable_str(buf)?;
    let acquisition_lock_timeout_ms = get_i32(buf)?;
    let responses = array(buf, "ShareFetch topics", fetch_topic)?;
    let node_endpoints = array(buf, "NodeEndpoints", node_endpoint)?;
    skip_tagged_fields(buf)?;
    Ok(ShareFetchResponse::default()
        .with_throttle_time_ms(throttle_time_ms)
        .with_error_code(error_code)
        .with_error_message(error_message)
        .with_acquisition_lock_timeout_ms(acquisition_lock_timeout_ms)
        .with_responses(responses)
        .with_node_endpoints(node_endpoints))
}

fn topic_partitions(buf: &mut Bytes) -> Result<TopicPartitions, EngineError> {
    let topic_id = get_uuid(buf)?;
    let partitions = array(buf, "assigned partitions", get_i32)?;
    skip_tagged_fields(buf)?;
    Ok(TopicPartitions::default()
        .with_topic_id(topic_id)
        .with_partitions(partitions))
}

/// A ShareGroupHeartbeat v1 response body (after the response header).
pub fn decode_share_group_heartbeat_response(
    body: Bytes,
) -> Result<ShareGroupHeartbeatResponse, EngineError> {
    share_group_heartbeat_response(body).map_err(|e| in_message("ShareGroupHeartbeat", e))
}

fn share_group_heartbeat_response(
    mut body: Bytes,
) -> Result<ShareGroupHeartbeatResponse, EngineError> {
    let buf = &mut body;
    let throttle_time_ms = get_i32(buf)?;
    let error_code = get_i16(buf)?;
    let error_message = nullable_str(buf)?;
    let member_id = nullable_str(buf)?;
    let member_epoch = get_i32(buf)?;
    let heartbeat_interval_ms = get_i32(buf)?;
    // Nullable struct: -1 null, 1 present.
    let assignment = if get_i8(buf)? == 1 {
        let partitions = array(buf, "assignment topics", topic_partitions)?;
        skip_tagged_fields(buf)?;
        Some(Assignment::default().with_topic_partitions(partitions))
    } else {
        None
    };
    skip_tagged_fields(buf)?;
    Ok(ShareGroupHeartbeatResponse::default()
        .with_throttle_time_ms(throttle_time_ms)
        .with_error_code(error_code)
        .with_error_message(error_message)
        .with_member_id(member_id)
        .with_member_epoch(member_epoch)
        .with_heartbeat_interval_ms(heartbeat_interval_ms)
        .with_assignment(assignment))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use kafka_protocol::messages::share_group_heartbeat_response as hb;
    use kafka_protocol::protocol::{Decodable, Encodable};
    use uuid::Uuid;

    pub(crate) fn sample_fetch_response() -> ShareFetchResponse {
        ShareFetchResponse::default()
            .with_throttle_time_ms(3)
            .with_error_message(Some(StrBytes::from_static_str("top")))
            .with_acquisition_lock_timeout_ms(30_000)
            .with_responses(vec![ShareFetchableTopicResponse::default()
                .with_topic_id(Uuid::from_u128(77))
                .with_partitions(vec![
                    PartitionData::default()
                        .with_partition_index(4)
                        .with_error_code(6)
                        .with_acknowledge_error_code(121)
                        .with_acknowledge_error_message(Some(StrBytes::from_static_str("late")))
                        .with_current_leader(
                            LeaderIdAndEpoch::default()
                                .with_leader_id(2)
                                .with_leader_epoch(9),
                        )
                        .with_records(Some(Bytes::from_static(b"not really records")))
                        .with_acquired_records(vec![
                            AcquiredRecords::default()
                                .with_first_offset(10)
                                .with_last_offset(19)
                                .with_delivery_count(1),
                            AcquiredRecords::default()
                                .with_first_offset(25)
                                .with_last_offset(25)
                                .with_delivery_count(3),
                        ]),
                    PartitionData::default().with_records(None),
                ])])
            .with_node_endpoints(vec![NodeEndpoint::default()
                .with_node_id(BrokerId(2))
                .with_host(StrBytes::from_static_str("broker-2"))
                .with_port(9092)
                .with_rack(Some(StrBytes::from_static_str("r1")))])
    }

    #[test]
    fn share_fetch_response_matches_kafka_protocol() {
        let theirs = sample_fetch_response();
        let mut wire = BytesMut::new();
        theirs.encode(&mut wire, 1).unwrap();
        let wire = wire.freeze();
        let ours = decode_share_fetch_response(wire.clone()).unwrap();
        assert_eq!(ours, theirs);
        assert_eq!(
            ShareFetchResponse::decode(&mut wire.clone(), 1).unwrap(),
            ours
        );
    }

    #[test]
    fn heartbeat_response_matches_kafka_protocol() {
        for assignment in [
            None,
            Some(hb::Assignment::default().with_topic_partitions(vec![
                    hb::TopicPartitions::default()
                        .with_topic_id(Uuid::from_u128(5))
                        .with_partitions(vec![0, 2, 7]),
                ])),
        ] {
            let theirs = ShareGroupHeartbeatResponse::default()
                .with_error_code(0)
                .with_member_id(Some(StrBytes::from_static_str("m")))
                .with_member_epoch(12)
                .with_heartbeat_interval_ms(5000)
                .with_assignment(assignment);
            let mut wire = BytesMut::new();
            theirs.encode(&mut wire, 1).unwrap();
            assert_eq!(
                decode_share_group_heartbeat_response(wire.freeze()).unwrap(),
                theirs
            );
        }
    }

    /// The case that aborted the process through kafka-protocol's decoder.
    #[test]
    fn a_huge_array_count_is_an_error_not_an_allocation() {
        let mut body = vec![0u8; 11]; // throttle, error, null message, lock timeout
        body.extend_from_slice(&[0x80, 0x80, 0x80, 0x80, 0x08]); // 2^31 topics
        let e = decode_share_fetch_response(Bytes::from(body)).unwrap_err();
        assert!(e.to_string().contains("claims"), "{e}");
        let mut hb = vec![0u8; 6];
        hb.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]); // no strings, present
        hb.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert!(decode_share_group_heartbeat_response(Bytes::from(hb)).is_err());
    }
}
