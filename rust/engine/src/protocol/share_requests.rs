//! ShareFetch and ShareAcknowledge request encoders for v1 and v2, and the ShareAcknowledge
//! response decoder for both. kafka-protocol 0.18 knows only v1 of these; v2 adds
//! ShareAcquireMode + IsRenewAck to ShareFetch (after BatchSize), IsRenewAck to
//! ShareAcknowledge (after ShareSessionEpoch) and AcquisitionLockTimeoutMs to the
//! ShareAcknowledge response (after ErrorMessage). ShareFetch responses are the same in v1
//! and v2, so kafka-protocol's v1 decoder reads them.

use bytes::{BufMut, Bytes, BytesMut};
use uuid::Uuid;

use super::wire::*;
use crate::error::EngineError;

/// ShareFetch v2 `ShareAcquireMode` (client setting `share.acquire.mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AcquireMode {
    #[default]
    BatchOptimized = 0,
    RecordLimit = 1,
}

/// One acknowledgement batch on the wire: `types` has one entry for the whole range, or one
/// per offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AckBatch {
    pub first_offset: i64,
    pub last_offset: i64,
    pub types: Vec<i8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionAcks {
    pub partition: i32,
    pub batches: Vec<AckBatch>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicAcks {
    pub topic_id: Uuid,
    pub partitions: Vec<PartitionAcks>,
}

/// ShareFetch request. `topics` lists partitions to add to the session and partitions
/// carrying acknowledgements; `forgotten` removes partitions from it.
#[derive(Debug, Clone, Default)]
pub struct ShareFetchRequest {
    pub group_id: String,
    pub member_id: String,
    pub session_epoch: i32,
    pub max_wait_ms: i32,
    pub min_bytes: i32,
    pub max_bytes: i32,
    pub max_records: i32,
    pub batch_size: i32,
    pub acquire_mode: AcquireMode,
    pub is_renew_ack: bool,
    pub topics: Vec<TopicAcks>,
    pub forgotten: Vec<(Uuid, Vec<i32>)>,
}

#[derive(Debug, Clone, Default)]
pub struct ShareAcknowledgeRequest {
    pub group_id: String,
    pub member_id: String,
    pub session_epoch: i32,
    pub is_renew_ack: bool,
    pub topics: Vec<TopicAcks>,
}

fn check_version(api: &str, version: i16) -> Result<(), EngineError> {
    if !(1..=2).contains(&version) {
        return Err(EngineError::Unsupported(format!("{api} v{version}")));
    }
    Ok(())
}

fn v1_refuses_renew(
    api: &str,
    version: i16,
    topics: &[TopicAcks],
    is_renew_ack: bool,
) -> Result<(), EngineError> {
    let has_renew = topics
        .iter()
        .flat_map(|t| &t.partitions)
        .flat_map(|p| &p.batches)
        .any(|b| b.types.contains(&4));
    if version < 2 && (is_renew_ack || has_renew) {
        return Err(EngineError::Unsupported(format!(
            "RENEW acknowledgements need {api} v2; the broker offers v1 only"
        )));
    }
    Ok(())
}

fn put_topic_acks(buf: &mut BytesMut, topics: &[TopicAcks]) {
    put_compact_array_len(buf, topics.len());
    for topic in topics {
        put_uuid(buf, &topic.topic_id);
        put_compact_array_len(buf, topic.partitions.len());
        for partition in &topic.partitions {
            buf.put_i32(partition.partition);
            put_compact_array_len(buf, partition.batches.len());
            for batch in &partition.batches {
                buf.put_i64(batch.first_offset);
                buf.put_i64(batch.last_offset);
                put_compact_array_len(buf, batch.types.len());
                for t in &batch.types {
                    buf.put_i8(*t);
                }
                put_no_tagged_fields(buf);
            }
            put_no_tagged_fields(buf);
        }
        put_no_tagged_fields(buf);
    }
}

impl ShareFetchRequest {
    pub fn encode(&self, version: i16) -> Result<Bytes, EngineError> {
        check_version("ShareFetch", version)?;
        v1_refuses_renew("ShareFetch", version, &self.topics, self.is_renew_ack)?;
        if version < 2 && self.acquire_mode != AcquireMode::BatchOptimized {
            return Err(EngineError::Unsupported(
                "share.acquire.mode=record_limit needs ShareFetch v2; the broker offers v1 only"
                    .into(),
            ));
        }
        let mut buf = BytesMut::with_capacity(128);
        put_compact_nullable_str(&mut buf, Some(&self.group_id));
        put_compact_nullable_str(&mut buf, Some(&self.member_id));
        buf.put_i32(self.session_epoch);
        buf.put_i32(self.max_wait_ms);
        buf.put_i32(self.min_bytes);
        buf.put_i32(self.max_bytes);
        buf.put_i32(self.max_records);
        buf.put_i32(self.batch_size);
        if version >= 2 {
            buf.put_i8(self.acquire_mode as i8);
            buf.put_u8(self.is_renew_ack as u8);
        }
        put_topic_acks(&mut buf, &self.topics);
        put_compact_array_len(&mut buf, self.forgotten.len());
        for (topic_id, partitions) in &self.forgotten {
            put_uuid(&mut buf, topic_id);
            put_compact_array_len(&mut buf, partitions.len());
            for p in partitions {
                buf.put_i32(*p);
            }
            put_no_tagged_fields(&mut buf);
        }
        put_no_tagged_fields(&mut buf);
        Ok(buf.freeze())
    }
}

impl ShareAcknowledgeRequest {
    pub fn encode(&self, version: i16) -> Result<Bytes, EngineError> {
        check_version("ShareAcknowledge", version)?;
        v1_refuses_renew("ShareAcknowledge", version, &self.topics, self.is_renew_ack)?;
        let mut buf = BytesMut::with_capacity(128);
        put_compact_nullable_str(&mut buf, Some(&self.group_id));
        put_compact_nullable_str(&mut buf, Some(&self.member_id));
        buf.put_i32(self.session_epoch);
        if version >= 2 {
            buf.put_u8(self.is_renew_ack as u8);
        }
        put_topic_acks(&mut buf, &self.topics);
        put_no_tagged_fields(&mut buf);
        Ok(buf.freeze())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AckPartitionResult {
    pub partition: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
    pub leader_id: i32,
    pub leader_epoch: i32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeEndpoint {
    pub node_id: i32,
    pub host: String,
    pub port: i32,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShareAcknowledgeResponse {
    pub throttle_time_ms: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
    /// Present from v2 on.
    pub acquisition_lock_timeout_ms: Option<i32>,
    pub responses: Vec<(Uuid, Vec<AckPartitionResult>)>,
    pub node_endpoints: Vec<NodeEndpoint>,
}

impl ShareAcknowledgeResponse {
    pub fn decode(mut buf: Bytes, version: i16) -> Result<Self, EngineError> {
        check_version("ShareAcknowledge", version)?;
        let buf = &mut buf;
        let throttle_time_ms = get_i32(buf)?;
        let error_code = get_i16(buf)?;
        let error_message = get_compact_nullable_string(buf)?;
        let acquisition_lock_timeout_ms = if version >= 2 {
            Some(get_i32(buf)?)
        } else {
            None
        };
        let mut responses = Vec::new();
        for _ in 0..get_compact_array_len(buf)? {
            let topic_id = get_uuid(buf)?;
            let mut partitions = Vec::new();
            for _ in 0..get_compact_array_len(buf)? {
                let partition = get_i32(buf)?;
                let error_code = get_i16(buf)?;
                let error_message = get_compact_nullable_string(buf)?;
                let leader_id = get_i32(buf)?;
                let leader_epoch = get_i32(buf)?;
                skip_tagged_fields(buf)?; // CurrentLeader
                skip_tagged_fields(buf)?; // partition
                partitions.push(AckPartitionResult {
                    partition,
                    error_code,
                    error_message,
                    leader_id,
                    leader_epoch,
                });
            }
            skip_tagged_fields(buf)?;
            responses.push((topic_id, partitions));
        }
        let mut node_endpoints = Vec::new();
        for _ in 0..get_compact_array_len(buf)? {
            let node_id = get_i32(buf)?;
            let host = get_compact_nullable_string(buf)?.unwrap_or_default();
            let port = get_i32(buf)?;
            let _rack = get_compact_nullable_string(buf)?;
            skip_tagged_fields(buf)?;
            node_endpoints.push(NodeEndpoint {
                node_id,
                host,
                port,
            });
        }
        skip_tagged_fields(buf)?;
        Ok(ShareAcknowledgeResponse {
            throttle_time_ms,
            error_code,
            error_message,
            acquisition_lock_timeout_ms,
            responses,
            node_endpoints,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::share_acknowledge_request as ka;
    use kafka_protocol::messages::share_acknowledge_response as kar;
    use kafka_protocol::messages::share_fetch_request as kf;
    use kafka_protocol::messages::GroupId;
    use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

    fn sample_topics() -> Vec<TopicAcks> {
        vec![TopicAcks {
            topic_id: Uuid::from_u128(0x1234_5678_9abc_def0_1122_3344_5566_7788),
            partitions: vec![PartitionAcks {
                partition: 3,
                batches: vec![
                    AckBatch {
                        first_offset: 10,
                        last_offset: 19,
                        types: vec![1],
                    },
                    AckBatch {
                        first_offset: 20,
                        last_offset: 22,
                        types: vec![2, 0, 3],
                    },
                ],
            }],
        }]
    }

    fn fetch_request() -> ShareFetchRequest {
        ShareFetchRequest {
            group_id: "g".into(),
            member_id: "m-1".into(),
            session_epoch: 7,
            max_wait_ms: 500,
            min_bytes: 1,
            max_bytes: 1 << 20,
            max_records: 500,
            batch_size: 500,
            topics: sample_topics(),
            forgotten: vec![(Uuid::from_u128(9), vec![1, 2])],
            ..Default::default()
        }
    }

    /// v1 output must be byte-identical to kafka-protocol's own v1 encoder.
    #[test]
    fn share_fetch_v1_matches_kafka_protocol() {
        let ours = fetch_request().encode(1).unwrap();
        let theirs = kf::ShareFetchRequest::default()
            .with_group_id(Some(GroupId(StrBytes::from_static_str("g"))))
            .with_member_id(Some(StrBytes::from_static_str("m-1")))
            .with_share_session_epoch(7)
            .with_max_wait_ms(500)
            .with_min_bytes(1)
            .with_max_bytes(1 << 20)
            .with_max_records(500)
            .with_batch_size(500)
            .with_topics(vec![kf::FetchTopic::default()
                .with_topic_id(sample_topics()[0].topic_id)
                .with_partitions(vec![kf::FetchPartition::default()
                    .with_partition_index(3)
                    .with_acknowledgement_batches(vec![
                        kf::AcknowledgementBatch::default()
                            .with_first_offset(10)
                            .with_last_offset(19)
                            .with_acknowledge_types(vec![1]),
                        kf::AcknowledgementBatch::default()
                            .with_first_offset(20)
                            .with_last_offset(22)
                            .with_acknowledge_types(vec![2, 0, 3]),
                    ])])])
            .with_forgotten_topics_data(vec![kf::ForgottenTopic::default()
                .with_topic_id(Uuid::from_u128(9))
                .with_partitions(vec![1, 2])]);
        let mut expected = BytesMut::new();
        theirs.encode(&mut expected, 1).unwrap();
        assert_eq!(&ours[..], &expected[..]);
        let decoded = kf::ShareFetchRequest::decode(&mut ours.clone(), 1).unwrap();
        assert_eq!(decoded, theirs);
    }

    /// v2 = v1 with ShareAcquireMode (i8) and IsRenewAck (bool) spliced in after BatchSize.
    #[test]
    fn share_fetch_v2_inserts_two_fields_after_batch_size() {
        let mut request = fetch_request();
        request.acquire_mode = AcquireMode::RecordLimit;
        request.is_renew_ack = true;
        let v2 = request.encode(2).unwrap();
        request.acquire_mode = AcquireMode::BatchOptimized;
        request.is_renew_ack = false;
        let v1 = request.encode(1).unwrap();
        // group "g" (2 bytes), member "m-1" (4 bytes), then six i32 fields.
        let split = 2 + 4 + 6 * 4;
        assert_eq!(&v2[..split], &v1[..split]);
        assert_eq!(&v2[split..split + 2], &[1, 1]);
        assert_eq!(&v2[split + 2..], &v1[split..]);
    }

    #[test]
    fn v1_refuses_renew_and_record_limit() {
        let mut request = fetch_request();
        request.topics[0].partitions[0].batches[0].types = vec![4];
        assert!(request.encode(1).is_err());
        assert!(request.encode(2).is_ok());
        let mut request = fetch_request();
        request.acquire_mode = AcquireMode::RecordLimit;
        assert!(request.encode(1).is_err());
    }

    #[test]
    fn share_acknowledge_v1_matches_kafka_protocol_and_v2_adds_renew_flag() {
        let request = ShareAcknowledgeRequest {
            group_id: "g".into(),
            member_id: "m-1".into(),
            session_epoch: 3,
            is_renew_ack: false,
            topics: sample_topics(),
        };
        let ours = request.encode(1).unwrap();
        let decoded = ka::ShareAcknowledgeRequest::decode(&mut ours.clone(), 1).unwrap();
        assert_eq!(decoded.share_session_epoch, 3);
        assert_eq!(
            decoded.topics[0].partitions[0]
                .acknowledgement_batches
                .len(),
            2
        );
        let mut again = BytesMut::new();
        decoded.encode(&mut again, 1).unwrap();
        assert_eq!(&ours[..], &again[..]);

        let v2 = ShareAcknowledgeRequest {
            is_renew_ack: true,
            ..request
        }
        .encode(2)
        .unwrap();
        let split = 2 + 4 + 4;
        assert_eq!(&v2[..split], &ours[..split]);
        assert_eq!(v2[split], 1);
        assert_eq!(&v2[split + 1..], &ours[split..]);
    }

    #[test]
    fn share_acknowledge_response_v1_and_v2_decode() {
        let theirs = kar::ShareAcknowledgeResponse::default()
            .with_throttle_time_ms(5)
            .with_error_code(0)
            .with_responses(vec![kar::ShareAcknowledgeTopicResponse::default()
                .with_topic_id(Uuid::from_u128(42))
                .with_partitions(vec![kar::PartitionData::default()
                    .with_partition_index(2)
                    .with_error_code(121)
                    .with_error_message(Some(StrBytes::from_static_str("bad state")))
                    .with_current_leader(
                        kar::LeaderIdAndEpoch::default()
                            .with_leader_id(1)
                            .with_leader_epoch(4),
                    )])])
            .with_node_endpoints(vec![kar::NodeEndpoint::default()
                .with_node_id(1.into())
                .with_host(StrBytes::from_static_str("h"))
                .with_port(9092)]);
        let mut v1 = BytesMut::new();
        theirs.encode(&mut v1, 1).unwrap();
        let decoded = ShareAcknowledgeResponse::decode(v1.clone().freeze(), 1).unwrap();
        assert_eq!(decoded.throttle_time_ms, 5);
        assert_eq!(decoded.acquisition_lock_timeout_ms, None);
        assert_eq!(decoded.responses[0].0, Uuid::from_u128(42));
        assert_eq!(decoded.responses[0].1[0].error_code, 121);
        assert_eq!(
            decoded.responses[0].1[0].error_message.as_deref(),
            Some("bad state")
        );
        assert_eq!(decoded.responses[0].1[0].leader_epoch, 4);
        assert_eq!(decoded.node_endpoints[0].port, 9092);

        // v2: AcquisitionLockTimeoutMs after ErrorMessage (4 + 2 + 1 bytes in).
        let mut v2 = BytesMut::new();
        v2.put_slice(&v1[..7]);
        v2.put_i32(30_000);
        v2.put_slice(&v1[7..]);
        let decoded2 = ShareAcknowledgeResponse::decode(v2.freeze(), 2).unwrap();
        assert_eq!(decoded2.acquisition_lock_timeout_ms, Some(30_000));
        assert_eq!(decoded2.responses, decoded.responses);
    }
}
