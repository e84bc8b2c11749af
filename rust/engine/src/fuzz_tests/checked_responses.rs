//! Responses kafka-protocol decodes behind `protocol::response_schema`: each schema against the
//! crate's encoder, huge counts at every position, arbitrary and mutated bodies.

use std::collections::BTreeMap;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use proptest::prelude::*;

use super::{apply, bound, mutation, overwrite, with_allocation_limit};
use crate::error::EngineError;
use crate::protocol::response_schema::{check_response, decode_response, RESPONSE_SCHEMAS};

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
    #![proptest_config(super::config(1))]

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
