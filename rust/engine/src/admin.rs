//! Small admin and produce helpers for tests, benchmarks and tools: create a topic, set
//! group configs (e.g. `share.auto.offset.reset=earliest` before the first member joins) and
//! produce records. Not a producer for production use: one request per call, acks=all.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::indexmap::IndexMap;
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::describe_share_group_offsets_request::{
    DescribeShareGroupOffsetsRequestGroup, DescribeShareGroupOffsetsRequestTopic,
};
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, CreateTopicsRequest,
    CreateTopicsResponse, DeleteTopicsRequest, DeleteTopicsResponse,
    DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse, EndTxnRequest,
    EndTxnResponse, FindCoordinatorRequest, FindCoordinatorResponse, GroupId,
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, InitProducerIdRequest,
    InitProducerIdResponse, ProduceRequest, ProduceResponse, ProducerId, TopicName,
    TransactionalId,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use tokio::sync::Mutex;

use crate::bootstrap::parse_bootstrap_servers;
use crate::clock::WallClock;
use crate::cluster::Cluster;
use crate::connection::Connection;
use crate::error::EngineError;
use crate::protocol::error_codes;
use crate::security::Security;

const TOPIC_ALREADY_EXISTS: i16 = 36;
/// IncrementalAlterConfigs resource type of a group (KIP-848/932 group configs).
const RESOURCE_TYPE_GROUP: i8 = 32;
const OP_SET: i8 = 0;

/// One record to produce.
#[derive(Debug, Clone, Default)]
pub struct ProduceRecord {
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub headers: Vec<(String, Option<Bytes>)>,
}

impl ProduceRecord {
    pub fn value(value: impl Into<Bytes>) -> Self {
        ProduceRecord {
            value: Some(value.into()),
            ..Default::default()
        }
    }
}

pub struct Admin {
    cluster: Cluster,
    security: Security,
    timeout: Duration,
    leaders: Mutex<HashMap<String, Arc<Connection>>>,
}

struct TransactionalProducer {
    transactional_id: TransactionalId,
    producer_id: i64,
    producer_epoch: i16,
}

fn check(api: &'static str, code: i16) -> Result<(), EngineError> {
    if code == error_codes::NONE {
        Ok(())
    } else {
        Err(EngineError::broker(api, code, None))
    }
}

fn produce_request(
    topic: &str,
    partition: i32,
    records: &[ProduceRecord],
    compression: Compression,
    transaction: Option<&TransactionalProducer>,
) -> Result<ProduceRequest, EngineError> {
    let timestamp = WallClock::default().now_ms();
    let (producer_id, producer_epoch) =
        transaction.map_or((-1, -1), |t| (t.producer_id, t.producer_epoch));
    let encoded: Vec<Record> = records
        .iter()
        .enumerate()
        .map(|(i, r)| Record {
            transactional: transaction.is_some(),
            control: false,
            partition_leader_epoch: -1,
            producer_id,
            producer_epoch,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            // offset − sequence must stay constant for the encoder to keep one batch.
            sequence: i as i32,
            timestamp,
            key: r.key.clone(),
            value: r.value.clone(),
            headers: r
                .headers
                .iter()
                .map(|(k, v)| (StrBytes::from_string(k.clone()), v.clone()))
                .collect::<IndexMap<_, _>>(),
            delete_horizon: false,
        })
        .collect();
    let mut buf = BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buf,
        &encoded,
        &RecordEncodeOptions {
            version: 2,
            compression,
        },
    )
    .map_err(|e| EngineError::Internal(format!("encoding records: {e}")))?;
    Ok(ProduceRequest::default()
        .with_transactional_id(transaction.map(|t| t.transactional_id.clone()))
        .with_acks(-1)
        .with_timeout_ms(30_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_string(topic.to_string())))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(Some(buf.freeze()))])]))
}

impl Admin {
    pub async fn connect(bootstrap_servers: &str, timeout: Duration) -> Result<Admin, EngineError> {
        Self::connect_with(bootstrap_servers, Security::plaintext(), timeout).await
    }

    /// [`Admin::connect`] over TLS and/or SASL.
    pub async fn connect_with(
        bootstrap_servers: &str,
        security: Security,
        timeout: Duration,
    ) -> Result<Admin, EngineError> {
        let cluster = Cluster::new(
            parse_bootstrap_servers(bootstrap_servers)?,
            "sharesink-admin".into(),
            timeout,
            security.clone(),
        );
        cluster.control().await?;
        Ok(Admin {
            cluster,
            security,
            timeout,
            leaders: Mutex::new(HashMap::new()),
        })
    }

    async fn call<T>(
        &self,
        what: &str,
        fut: impl std::future::Future<Output = Result<T, EngineError>>,
    ) -> Result<T, EngineError> {
        tokio::time::timeout(self.timeout, fut)
            .await
            .map_err(|_| EngineError::timeout(self.timeout, what.to_string()))?
    }

    /// Creates a topic (replication factor 1 unless the broker default applies with -1);
    /// an existing topic is fine.
    pub async fn create_topic(&self, name: &str, partitions: i32) -> Result<(), EngineError> {
        let conn = self.cluster.control().await?;
        let request = CreateTopicsRequest::default()
            .with_topics(vec![CreatableTopic::default()
                .with_name(TopicName(StrBytes::from_string(name.to_string())))
                .with_num_partitions(partitions)
                .with_replication_factor(-1)])
            .with_timeout_ms(self.timeout.as_millis() as i32);
        let response: CreateTopicsResponse =
            self.call("CreateTopics", conn.request(&request, 7)).await?;
        for t in response.topics {
            if t.error_code != error_codes::NONE && t.error_code != TOPIC_ALREADY_EXISTS {
                return Err(EngineError::broker(
                    "CreateTopics",
                    t.error_code,
                    t.error_message.map(|m| m.to_string()),
                ));
            }
        }
        // Wait until metadata shows leaders for every partition.
        for _ in 0..100 {
            let view = self.cluster.metadata(&[name.to_string()]).await?;
            let ready = view.topics.values().any(|t| {
                &*t.name == name
                    && t.leaders.len() == partitions as usize
                    && t.leaders.values().all(|l| *l >= 0)
            });
            if ready {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(EngineError::timeout(
            self.timeout,
            format!("topic {name} to get leaders"),
        ))
    }

    /// Deletes a topic.
    pub async fn delete_topic(&self, name: &str) -> Result<(), EngineError> {
        let conn = self.cluster.control().await?;
        let request = DeleteTopicsRequest::default()
            .with_topics(vec![DeleteTopicState::default()
                .with_name(Some(TopicName(StrBytes::from_string(name.to_string()))))])
            .with_timeout_ms(self.timeout.as_millis() as i32);
        let response: DeleteTopicsResponse =
            self.call("DeleteTopics", conn.request(&request, 6)).await?;
        for t in response.responses {
            if t.error_code != error_codes::NONE {
                return Err(EngineError::broker(
                    "DeleteTopics",
                    t.error_code,
                    t.error_message.map(|m| m.to_string()),
                ));
            }
        }
        Ok(())
    }

    /// Sets dynamic group configs with IncrementalAlterConfigs (resource type GROUP = 32).
    pub async fn set_group_config(
        &self,
        group_id: &str,
        configs: &[(&str, &str)],
    ) -> Result<(), EngineError> {
        let conn = self.cluster.control().await?;
        let request = IncrementalAlterConfigsRequest::default().with_resources(vec![
            AlterConfigsResource::default()
                .with_resource_type(RESOURCE_TYPE_GROUP)
                .with_resource_name(StrBytes::from_string(group_id.to_string()))
                .with_configs(
                    configs
                        .iter()
                        .map(|(k, v)| {
                            AlterableConfig::default()
                                .with_name(StrBytes::from_string(k.to_string()))
                                .with_config_operation(OP_SET)
                                .with_value(Some(StrBytes::from_string(v.to_string())))
                        })
                        .collect(),
                ),
        ]);
        let response: IncrementalAlterConfigsResponse = self
            .call("IncrementalAlterConfigs", conn.request(&request, 1))
            .await?;
        for r in response.responses {
            if r.error_code != error_codes::NONE {
                return Err(EngineError::broker(
                    "IncrementalAlterConfigs",
                    r.error_code,
                    r.error_message.map(|m| m.to_string()),
                ));
            }
        }
        Ok(())
    }

    /// The share-partition start offset of each of `partitions` of `topic` in share group
    /// `group_id` (DescribeShareGroupOffsets v0, from the group's coordinator): every record
    /// below it has been acknowledged (or archived). -1 for a partition the group has no state of.
    pub async fn share_partition_start_offsets(
        &self,
        group_id: &str,
        topic: &str,
        partitions: &[i32],
    ) -> Result<HashMap<i32, i64>, EngineError> {
        let (_, addr) = self.cluster.find_group_coordinator(group_id).await?;
        let conn = self.connection(&addr).await?;
        let request = DescribeShareGroupOffsetsRequest::default().with_groups(vec![
            DescribeShareGroupOffsetsRequestGroup::default()
                .with_group_id(GroupId(StrBytes::from_string(group_id.to_string())))
                .with_topics(Some(vec![DescribeShareGroupOffsetsRequestTopic::default()
                    .with_topic_name(TopicName(StrBytes::from_string(topic.to_string())))
                    .with_partitions(partitions.to_vec())])),
        ]);
        let response: DescribeShareGroupOffsetsResponse = self
            .call("DescribeShareGroupOffsets", conn.request(&request, 0))
            .await?;
        let mut offsets = HashMap::new();
        for group in response.groups {
            if group.error_code != error_codes::NONE {
                return Err(EngineError::broker(
                    "DescribeShareGroupOffsets",
                    group.error_code,
                    group.error_message.map(|m| m.to_string()),
                ));
            }
            for t in group.topics {
                for p in t.partitions {
                    offsets.insert(p.partition_index, p.start_offset);
                }
            }
        }
        Ok(offsets)
    }

    async fn leader(&self, topic: &str, partition: i32) -> Result<Arc<Connection>, EngineError> {
        let view = self.cluster.metadata(&[topic.to_string()]).await?;
        let info = view
            .topics
            .values()
            .find(|t| &*t.name == topic)
            .ok_or_else(|| EngineError::broker("Metadata", 3, Some(topic.to_string())))?;
        let leader = info.leaders.get(&partition).copied().unwrap_or(-1);
        let addr = view
            .brokers
            .get(&leader)
            .ok_or_else(|| {
                EngineError::broker("Metadata", 5, Some(format!("{topic}-{partition}")))
            })?
            .clone();
        self.connection(&addr).await
    }

    /// A connection to the broker at `addr`, opened once and kept.
    async fn connection(&self, addr: &str) -> Result<Arc<Connection>, EngineError> {
        let mut leaders = self.leaders.lock().await;
        if let Some(conn) = leaders.get(addr).filter(|c| !c.is_closed()) {
            return Ok(conn.clone());
        }
        let conn = Arc::new(
            Connection::connect_with(addr, "sharesink-admin", self.timeout, &self.security).await?,
        );
        leaders.insert(addr.to_string(), conn.clone());
        Ok(conn)
    }

    /// Produces `records` as one batch to `topic`-`partition`; returns the base offset.
    pub async fn produce(
        &self,
        topic: &str,
        partition: i32,
        records: &[ProduceRecord],
        compression: Compression,
    ) -> Result<i64, EngineError> {
        let request = produce_request(topic, partition, records, compression, None)?;
        self.produce_retrying(topic, partition, &request).await
    }

    /// Produces `records` in one transaction (its own transactional id) and commits or aborts
    /// it, so the partition gets a transactional batch followed by a control batch (the
    /// commit/abort marker). For tests of gap acknowledgement and isolation levels.
    pub async fn produce_transaction(
        &self,
        topic: &str,
        partition: i32,
        records: &[ProduceRecord],
        commit: bool,
    ) -> Result<i64, EngineError> {
        let transactional_id = format!("sharesink-admin-{}", uuid::Uuid::new_v4().simple());
        let txn_id = || TransactionalId(StrBytes::from_string(transactional_id.clone()));
        let coordinator = self.transaction_coordinator(&transactional_id).await?;
        // A fresh transaction state topic answers "loading" for a while.
        let mut attempts = 0;
        let init = loop {
            attempts += 1;
            let init: InitProducerIdResponse = self
                .call(
                    "InitProducerId",
                    coordinator.request(
                        &InitProducerIdRequest::default()
                            .with_transactional_id(Some(txn_id()))
                            .with_transaction_timeout_ms(60_000)
                            .with_producer_id(ProducerId(-1))
                            .with_producer_epoch(-1),
                        4,
                    ),
                )
                .await?;
            match check("InitProducerId", init.error_code) {
                Err(e) if e.is_retriable() && attempts < 100 => {
                    tokio::time::sleep(Duration::from_millis(200)).await
                }
                Err(e) => return Err(e),
                Ok(()) => break init,
            }
        };
        let (producer_id, producer_epoch) = (init.producer_id, init.producer_epoch);
        let add: AddPartitionsToTxnResponse = self
            .call(
                "AddPartitionsToTxn",
                coordinator.request(
                    &AddPartitionsToTxnRequest::default()
                        .with_v3_and_below_transactional_id(txn_id())
                        .with_v3_and_below_producer_id(producer_id)
                        .with_v3_and_below_producer_epoch(producer_epoch)
                        .with_v3_and_below_topics(vec![AddPartitionsToTxnTopic::default()
                            .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                            .with_partitions(vec![partition])]),
                    3,
                ),
            )
            .await?;
        for t in &add.results_by_topic_v3_and_below {
            for p in &t.results_by_partition {
                check("AddPartitionsToTxn", p.partition_error_code)?;
            }
        }
        let producer = TransactionalProducer {
            transactional_id: txn_id(),
            producer_id: producer_id.0,
            producer_epoch,
        };
        let request = produce_request(
            topic,
            partition,
            records,
            Compression::None,
            Some(&producer),
        )?;
        let base = self.produce_retrying(topic, partition, &request).await?;
        let end: EndTxnResponse = self
            .call(
                "EndTxn",
                coordinator.request(
                    &EndTxnRequest::default()
                        .with_transactional_id(txn_id())
                        .with_producer_id(producer_id)
                        .with_producer_epoch(producer_epoch)
                        .with_committed(commit),
                    3,
                ),
            )
            .await?;
        check("EndTxn", end.error_code)?;
        Ok(base)
    }

    async fn transaction_coordinator(
        &self,
        transactional_id: &str,
    ) -> Result<Connection, EngineError> {
        let control = self.cluster.control().await?;
        for _ in 0..50 {
            let response: FindCoordinatorResponse = self
                .call(
                    "FindCoordinator",
                    control.request(
                        &FindCoordinatorRequest::default()
                            .with_key_type(1)
                            .with_coordinator_keys(vec![StrBytes::from_string(
                                transactional_id.to_string(),
                            )]),
                        4,
                    ),
                )
                .await?;
            let c = response
                .coordinators
                .first()
                .ok_or_else(|| EngineError::protocol("FindCoordinator returned no coordinator"))?;
            if c.error_code == error_codes::NONE {
                let addr = format!("{}:{}", c.host.as_str(), c.port);
                return Connection::connect_with(
                    &addr,
                    "sharesink-admin",
                    self.timeout,
                    &self.security,
                )
                .await;
            }
            // The transaction state topic is created on first use.
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Err(EngineError::timeout(
            self.timeout,
            "transaction coordinator",
        ))
    }

    async fn produce_retrying(
        &self,
        topic: &str,
        partition: i32,
        request: &ProduceRequest,
    ) -> Result<i64, EngineError> {
        // A new topic's leader may not be ready yet: retry retriable errors for a while.
        let mut attempts = 0;
        loop {
            attempts += 1;
            match self.produce_once(topic, partition, request).await {
                Err(e) if e.is_retriable() && attempts < 50 => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                other => return other,
            }
        }
    }

    async fn produce_once(
        &self,
        topic: &str,
        partition: i32,
        request: &ProduceRequest,
    ) -> Result<i64, EngineError> {
        let conn = self.leader(topic, partition).await?;
        let response: ProduceResponse = self.call("Produce", conn.request(request, 9)).await?;
        let p = response
            .responses
            .first()
            .and_then(|t| t.partition_responses.first())
            .ok_or_else(|| EngineError::protocol("empty Produce response"))?;
        if p.error_code != error_codes::NONE {
            return Err(EngineError::broker(
                "Produce",
                p.error_code,
                p.error_message.as_ref().map(|m| m.to_string()),
            ));
        }
        Ok(p.base_offset)
    }
}
