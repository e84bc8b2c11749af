//! Cluster lookups over a control connection to any bootstrap broker: Metadata (topic ids,
//! partition leaders, broker addresses) and FindCoordinator.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    FindCoordinatorRequest, FindCoordinatorResponse, MetadataRequest, MetadataResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use tokio::sync::Mutex;
use tracing::debug;
use uuid::Uuid;

use crate::bootstrap::connect_any;
use crate::connection::Connection;
use crate::error::EngineError;
use crate::protocol::error_codes;
use crate::security::Security;

#[derive(Debug, Clone)]
pub struct TopicInfo {
    pub name: Arc<str>,
    pub id: Uuid,
    /// partition → leader node id (-1 when leaderless).
    pub leaders: HashMap<i32, i32>,
}

#[derive(Debug, Clone, Default)]
pub struct ClusterView {
    /// node id → "host:port"
    pub brokers: HashMap<i32, String>,
    pub topics: HashMap<Uuid, TopicInfo>,
}

pub struct Cluster {
    bootstrap: Vec<String>,
    security: Security,
    client_id: String,
    timeout: Duration,
    /// The largest response the control connection takes (`share.response.max.bytes`).
    response_max_bytes: usize,
    control: Mutex<Option<Arc<Connection>>>,
}

impl Cluster {
    pub fn new(
        bootstrap: Vec<String>,
        client_id: String,
        timeout: Duration,
        security: Security,
    ) -> Self {
        Cluster {
            bootstrap,
            security,
            client_id,
            timeout,
            response_max_bytes: crate::connection::RESPONSE_MAX_BYTES,
            control: Mutex::new(None),
        }
    }

    /// Bounds the control connection's responses (Metadata, coordinator lookups) at `bytes`
    /// (`share.response.max.bytes`).
    pub fn with_response_max_bytes(mut self, bytes: usize) -> Self {
        self.response_max_bytes = bytes;
        self
    }

    /// The control connection, reopened if it was lost.
    pub async fn control(&self) -> Result<Arc<Connection>, EngineError> {
        let mut guard = self.control.lock().await;
        if let Some(conn) = guard.as_ref().filter(|c| !c.is_closed()) {
            return Ok(conn.clone());
        }
        let conn = Arc::new(
            connect_any(
                &self.bootstrap,
                &self.client_id,
                self.timeout,
                &self.security,
            )
            .await?,
        );
        conn.set_response_max_bytes(self.response_max_bytes);
        *guard = Some(conn.clone());
        Ok(conn)
    }

    /// Metadata v12 for `topics` (names).
    pub async fn metadata(&self, topics: &[String]) -> Result<ClusterView, EngineError> {
        let conn = self.control().await?;
        let request = MetadataRequest::default()
            .with_topics(Some(
                topics
                    .iter()
                    .map(|t| {
                        MetadataRequestTopic::default()
                            .with_name(Some(TopicName(StrBytes::from_string(t.clone()))))
                    })
                    .collect(),
            ))
            .with_allow_auto_topic_creation(false);
        // The connection's deadline bounds it, and closes a connection that stopped answering.
        let response: MetadataResponse = conn.request(&request, 12).await?;
        let mut view = ClusterView::default();
        for b in &response.brokers {
            view.brokers
                .insert(b.node_id.0, format!("{}:{}", b.host.as_str(), b.port));
        }
        for t in &response.topics {
            let Some(name) = &t.name else { continue };
            if t.error_code != error_codes::NONE {
                debug!(topic = %name.0.as_str(), code = t.error_code, "metadata topic error");
                if matches!(t.error_code, 29) {
                    return Err(EngineError::broker(
                        "Metadata",
                        t.error_code,
                        Some(name.0.to_string()),
                    ));
                }
                continue;
            }
            view.topics.insert(
                t.topic_id,
                TopicInfo {
                    name: Arc::from(name.0.as_str()),
                    id: t.topic_id,
                    leaders: t
                        .partitions
                        .iter()
                        .map(|p| (p.partition_index, p.leader_id.0))
                        .collect(),
                },
            );
        }
        Ok(view)
    }

    /// FindCoordinator (key type 0 = group) → (node id, "host:port").
    pub async fn find_group_coordinator(
        &self,
        group_id: &str,
    ) -> Result<(i32, String), EngineError> {
        let conn = self.control().await?;
        let request = FindCoordinatorRequest::default()
            .with_key_type(0)
            .with_coordinator_keys(vec![StrBytes::from_string(group_id.to_string())]);
        let response: FindCoordinatorResponse = conn.request(&request, 4).await?;
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
        Ok((c.node_id.0, format!("{}:{}", c.host.as_str(), c.port)))
    }
}
