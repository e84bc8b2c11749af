//! Admin requests for tests, benchmarks and tools: create and delete a topic, set group configs
//! (e.g. `share.auto.offset.reset=earliest` before the first member joins), read a share
//! group's start offsets. Producing is in `produce`, finding brokers in `lookup`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::describe_share_group_offsets_request::{
    DescribeShareGroupOffsetsRequestGroup, DescribeShareGroupOffsetsRequestTopic,
};
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::{
    CreateTopicsRequest, DeleteTopicsRequest, DescribeShareGroupOffsetsRequest, GroupId,
    IncrementalAlterConfigsRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use sharesink_engine::bootstrap::parse_bootstrap_servers;
use sharesink_engine::connection::Connection;
use sharesink_engine::protocol::error_codes;
use sharesink_engine::{EngineError, Security};
use tokio::sync::Mutex;

use crate::raw;

pub(crate) const CLIENT_ID: &str = "sharesink-admin";
const TOPIC_ALREADY_EXISTS: i16 = 36;
/// IncrementalAlterConfigs resource type of a group (KIP-848/932 group configs).
const RESOURCE_TYPE_GROUP: i8 = 32;
const OP_SET: i8 = 0;

/// Admin and produce requests against one cluster. Not a producer for production use: one
/// request per call, acks=all.
pub struct Admin {
    pub(crate) bootstrap: Vec<String>,
    pub(crate) security: Security,
    /// Bounds each call and is every connection's request deadline.
    pub(crate) timeout: Duration,
    pub(crate) control: Mutex<Option<Arc<Connection>>>,
    /// "host:port" → a connection kept for later requests (leaders, coordinators).
    pub(crate) connections: Mutex<HashMap<String, Arc<Connection>>>,
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
        let admin = Admin {
            bootstrap: parse_bootstrap_servers(bootstrap_servers)?,
            security,
            timeout,
            control: Mutex::new(None),
            connections: Mutex::new(HashMap::new()),
        };
        admin.control().await?;
        Ok(admin)
    }

    pub(crate) async fn call<T>(
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
        let conn = self.control().await?;
        let request = CreateTopicsRequest::default()
            .with_topics(vec![CreatableTopic::default()
                .with_name(TopicName(StrBytes::from_string(name.to_string())))
                .with_num_partitions(partitions)
                .with_replication_factor(-1)])
            .with_timeout_ms(self.timeout.as_millis() as i32);
        let response = self
            .call("CreateTopics", raw::request(&conn, &request, 7))
            .await?;
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
            let ready = self.topic_metadata(name).await?.leaders.is_some_and(|l| {
                l.len() == partitions as usize && l.values().all(|leader| *leader >= 0)
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
        let conn = self.control().await?;
        let request = DeleteTopicsRequest::default()
            .with_topics(vec![DeleteTopicState::default()
                .with_name(Some(TopicName(StrBytes::from_string(name.to_string()))))])
            .with_timeout_ms(self.timeout.as_millis() as i32);
        let response = self
            .call("DeleteTopics", raw::request(&conn, &request, 6))
            .await?;
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
        let conn = self.control().await?;
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
        let response = self
            .call("IncrementalAlterConfigs", raw::request(&conn, &request, 1))
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
        let addr = self.group_coordinator(group_id).await?;
        let conn = self.connection(&addr).await?;
        let request = DescribeShareGroupOffsetsRequest::default().with_groups(vec![
            DescribeShareGroupOffsetsRequestGroup::default()
                .with_group_id(GroupId(StrBytes::from_string(group_id.to_string())))
                .with_topics(Some(vec![DescribeShareGroupOffsetsRequestTopic::default()
                    .with_topic_name(TopicName(StrBytes::from_string(topic.to_string())))
                    .with_partitions(partitions.to_vec())])),
        ]);
        let response = self
            .call(
                "DescribeShareGroupOffsets",
                raw::request(&conn, &request, 0),
            )
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
}
