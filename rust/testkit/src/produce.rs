//! Producing records for tests and benchmarks: one batch per call (acks=all), or one
//! transaction ending in a commit or abort marker.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::{Bytes, BytesMut};
use kafka_protocol::indexmap::IndexMap;
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, EndTxnRequest, InitProducerIdRequest, ProduceRequest, ProducerId,
    TopicName, TransactionalId,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use sharesink_engine::protocol::error_codes;
use sharesink_engine::EngineError;

use crate::admin::Admin;
use crate::raw;

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

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

fn produce_request(
    topic: &str,
    partition: i32,
    records: &[ProduceRecord],
    compression: Compression,
    transaction: Option<&TransactionalProducer>,
) -> Result<ProduceRequest, EngineError> {
    let timestamp = now_ms();
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
    /// Produces `batch`, one or more record batches already encoded (see [`crate::hostile`]), to
    /// `topic`-`partition` as they are; returns the base offset.
    pub async fn produce_batch(
        &self,
        topic: &str,
        partition: i32,
        batch: Bytes,
    ) -> Result<i64, EngineError> {
        let request = ProduceRequest::default()
            .with_acks(-1)
            .with_timeout_ms(30_000)
            .with_topic_data(vec![TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                .with_partition_data(vec![PartitionProduceData::default()
                    .with_index(partition)
                    .with_records(Some(batch))])]);
        self.produce_retrying(topic, partition, &request).await
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
            let init = self
                .call(
                    "InitProducerId",
                    raw::request(
                        &coordinator,
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
        let add = self
            .call(
                "AddPartitionsToTxn",
                raw::request(
                    &coordinator,
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
        let end = self
            .call(
                "EndTxn",
                raw::request(
                    &coordinator,
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
        let response = self
            .call("Produce", raw::request(&conn, request, 9))
            .await?;
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
