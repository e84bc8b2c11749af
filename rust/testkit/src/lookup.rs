//! Where an admin request goes: the control connection (any bootstrap broker), a topic's
//! partition leaders, group and transaction coordinators, and one kept connection per broker.
//! Metadata and FindCoordinator go through `Connection::request`, the engine's checked decode.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    FindCoordinatorRequest, FindCoordinatorResponse, MetadataRequest, MetadataResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use sharesink_engine::bootstrap::connect_any;
use sharesink_engine::connection::Connection;
use sharesink_engine::protocol::error_codes;
use sharesink_engine::EngineError;

use crate::admin::{Admin, CLIENT_ID};

/// FindCoordinator key types.
const GROUP: i8 = 0;
const TRANSACTION: i8 = 1;
/// Metadata topic error that fails the lookup (the others leave the topic out, not ready yet).
const TOPIC_AUTHORIZATION_FAILED: i16 = 29;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const LEADER_NOT_AVAILABLE: i16 = 5;

/// What Metadata says of one topic.
pub(crate) struct TopicMetadata {
    /// partition → leader node id (-1 when leaderless); `None` while the topic is unknown or
    /// reports an error.
    pub leaders: Option<HashMap<i32, i32>>,
    /// node id → "host:port"
    pub brokers: HashMap<i32, String>,
}

impl Admin {
    /// The control connection, reopened if it was lost.
    pub(crate) async fn control(&self) -> Result<Arc<Connection>, EngineError> {
        let mut guard = self.control.lock().await;
        if let Some(conn) = guard.as_ref().filter(|c| !c.is_closed()) {
            return Ok(conn.clone());
        }
        let conn =
            Arc::new(connect_any(&self.bootstrap, CLIENT_ID, self.timeout, &self.security).await?);
        *guard = Some(conn.clone());
        Ok(conn)
    }

    /// Metadata v12 for `topic`.
    pub(crate) async fn topic_metadata(&self, topic: &str) -> Result<TopicMetadata, EngineError> {
        let conn = self.control().await?;
        let request = MetadataRequest::default()
            .with_topics(Some(vec![MetadataRequestTopic::default().with_name(Some(
                TopicName(StrBytes::from_string(topic.to_string())),
            ))]))
            .with_allow_auto_topic_creation(false);
        // The connection's deadline bounds it.
        let response: MetadataResponse = conn.request(&request, 12).await?;
        let brokers = response
            .brokers
            .iter()
            .map(|b| (b.node_id.0, format!("{}:{}", b.host.as_str(), b.port)))
            .collect();
        let mut leaders = None;
        for t in &response.topics {
            let Some(name) = &t.name else { continue };
            if t.error_code == TOPIC_AUTHORIZATION_FAILED {
                return Err(EngineError::broker(
                    "Metadata",
                    t.error_code,
                    Some(name.0.to_string()),
                ));
            }
            if t.error_code == error_codes::NONE && name.0.as_str() == topic {
                leaders = Some(
                    t.partitions
                        .iter()
                        .map(|p| (p.partition_index, p.leader_id.0))
                        .collect(),
                );
            }
        }
        Ok(TopicMetadata { leaders, brokers })
    }

    /// A connection to the leader of `topic`-`partition`.
    pub(crate) async fn leader(
        &self,
        topic: &str,
        partition: i32,
    ) -> Result<Arc<Connection>, EngineError> {
        let metadata = self.topic_metadata(topic).await?;
        let leaders = metadata.leaders.ok_or_else(|| {
            EngineError::broker(
                "Metadata",
                UNKNOWN_TOPIC_OR_PARTITION,
                Some(topic.to_string()),
            )
        })?;
        let leader = leaders.get(&partition).copied().unwrap_or(-1);
        let addr = metadata.brokers.get(&leader).ok_or_else(|| {
            EngineError::broker(
                "Metadata",
                LEADER_NOT_AVAILABLE,
                Some(format!("{topic}-{partition}")),
            )
        })?;
        self.connection(addr).await
    }

    /// A connection to the broker at `addr`, opened once and kept.
    pub(crate) async fn connection(&self, addr: &str) -> Result<Arc<Connection>, EngineError> {
        let mut connections = self.connections.lock().await;
        if let Some(conn) = connections.get(addr).filter(|c| !c.is_closed()) {
            return Ok(conn.clone());
        }
        let conn = Arc::new(
            Connection::connect_with(addr, CLIENT_ID, self.timeout, &self.security).await?,
        );
        connections.insert(addr.to_string(), conn.clone());
        Ok(conn)
    }

    /// The address ("host:port") of the coordinator of share group `group_id`.
    pub(crate) async fn group_coordinator(&self, group_id: &str) -> Result<String, EngineError> {
        let conn = self.control().await?;
        let response = find_coordinator(&conn, GROUP, group_id).await?;
        let c = response
            .coordinators
            .first()
            .ok_or_else(|| EngineError::protocol("FindCoordinator returned no coordinator"))?;
        if c.error_code != error_codes::NONE {
            return Err(EngineError::broker(
                "FindCoordinator",
                c.error_code,
                c.error_message.as_ref().map(|m| m.to_string()),
            ));
        }
        Ok(format!("{}:{}", c.host.as_str(), c.port))
    }

    /// A new connection to the coordinator of `transactional_id`, waiting while the broker
    /// creates its transaction state topic (on first use).
    pub(crate) async fn transaction_coordinator(
        &self,
        transactional_id: &str,
    ) -> Result<Connection, EngineError> {
        let control = self.control().await?;
        for _ in 0..50 {
            let response = self
                .call(
                    "FindCoordinator",
                    find_coordinator(&control, TRANSACTION, transactional_id),
                )
                .await?;
            let c = response
                .coordinators
                .first()
                .ok_or_else(|| EngineError::protocol("FindCoordinator returned no coordinator"))?;
            if c.error_code == error_codes::NONE {
                let addr = format!("{}:{}", c.host.as_str(), c.port);
                return Connection::connect_with(&addr, CLIENT_ID, self.timeout, &self.security)
                    .await;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Err(EngineError::timeout(
            self.timeout,
            "transaction coordinator",
        ))
    }
}

async fn find_coordinator(
    conn: &Connection,
    key_type: i8,
    key: &str,
) -> Result<FindCoordinatorResponse, EngineError> {
    let request = FindCoordinatorRequest::default()
        .with_key_type(key_type)
        .with_coordinator_keys(vec![StrBytes::from_string(key.to_string())]);
    conn.request(&request, 4).await
}
