//! The stall watch's probe (see `stall`): ListOffsets (latest, to the last stable offset) for the
//! partitions that went quiet, sent on the session's own connection, i.e. to their leader; a
//! stalled partition gets the session rebuilt.

use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;

use bytes::BytesMut;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{
    ApiKey, BrokerId, ListOffsetsRequest, ListOffsetsResponse, TopicName,
};
use kafka_protocol::protocol::{Encodable, StrBytes};
use tracing::{debug, warn};

use super::stall::StallWatch;
use super::Session;
use crate::acks::PartitionKey;
use crate::connection::ResponseFuture;
use crate::error::EngineError;
use crate::fetcher_handle::FetcherHandle;
use crate::protocol::error_codes::*;
use crate::protocol::response_schema::decode_response;
use crate::shared::Shared;

const VERSION: i16 = 7;
/// ListOffsets timestamp meaning "the log end offset".
const LATEST: i64 = -1;
/// ListOffsets isolation level 1: offsets up to the last stable offset.
const READ_COMMITTED: i8 = 1;

pub(super) struct LagProbe {
    pub response: ResponseFuture,
    generation: u64,
}

/// Sends a probe for the partitions the watch says are due, if any.
pub(super) fn start(
    shared: &Shared,
    session: &Session,
    watch: &mut StallWatch,
) -> Option<LagProbe> {
    let conn = session.conn.as_ref().filter(|c| !c.is_closed())?;
    if session.epoch == 0 {
        return None;
    }
    let keys = watch.due(shared.wants_records(), tokio::time::Instant::now());
    if keys.is_empty() {
        return None;
    }
    let mut by_topic: HashMap<std::sync::Arc<str>, Vec<i32>> = HashMap::new();
    for (topic_id, partition) in &keys {
        if let Some(name) = shared.topic_name(topic_id) {
            by_topic.entry(name).or_default().push(*partition);
        }
    }
    let request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        // READ_COMMITTED: the last stable offset. A group reading committed records is given
        // nothing past a transaction still open; counted to the log's end, an open transaction
        // would look like a stalled partition and rebuild the session for as long as it stays
        // open. (A group reading uncommitted records then misses a stall only while one is.)
        .with_isolation_level(READ_COMMITTED)
        .with_topics(
            by_topic
                .into_iter()
                .map(|(name, partitions)| {
                    ListOffsetsTopic::default()
                        .with_name(TopicName(StrBytes::from_string(name.to_string())))
                        .with_partitions(
                            partitions
                                .into_iter()
                                .map(|p| {
                                    ListOffsetsPartition::default()
                                        .with_partition_index(p)
                                        .with_current_leader_epoch(-1)
                                        .with_timestamp(LATEST)
                                })
                                .collect(),
                        )
                })
                .collect(),
        );
    let mut body = BytesMut::new();
    if let Err(e) = request.encode(&mut body, VERSION) {
        debug!(error = %e, "cannot encode the lag probe");
        return None;
    }
    let response = conn.send_raw(ApiKey::ListOffsets, VERSION, &body).ok()?;
    debug!(
        partitions = keys.len(),
        "probing quiet partitions for records"
    );
    Some(LagProbe {
        response,
        generation: session.generation,
    })
}

/// Applies a probe's answer: stalled partitions get the session rebuilt (and metadata
/// refreshed, in case the leader moved without a fetch error saying so).
pub(super) fn finish(
    shared: &Shared,
    me: &FetcherHandle,
    session: &mut Session,
    watch: &mut StallWatch,
    done: LagProbe,
    result: Result<bytes::Bytes, EngineError>,
) {
    let response: ListOffsetsResponse =
        match result.and_then(|body| decode_response(ApiKey::ListOffsets, VERSION, body)) {
            Ok(r) => r,
            Err(e) => {
                debug!(node = me.node_id, error = %e, "lag probe failed");
                return;
            }
        };
    let ids: HashMap<String, uuid::Uuid> = session
        .partitions
        .iter()
        .filter_map(|(id, _)| shared.topic_name(id).map(|n| (n.to_string(), *id)))
        .collect();
    let mut ends: Vec<(PartitionKey, i64)> = Vec::new();
    let mut refresh = false;
    for topic in response.topics {
        let Some(id) = ids.get(topic.name.0.as_str()) else {
            continue;
        };
        for p in topic.partitions {
            if p.error_code == NONE {
                ends.push(((*id, p.partition_index), p.offset));
            } else {
                debug!(topic = %topic.name.0.as_str(), partition = p.partition_index,
                       code = p.error_code, "lag probe: partition error");
                refresh = true;
            }
        }
    }
    let stalls = watch.verdict(&ends, tokio::time::Instant::now());
    for s in &stalls {
        let topic = shared.topic_name(&s.key.0);
        if s.first {
            warn!(node = me.node_id, topic = ?topic, partition = s.key.1, waiting = s.waiting,
                  quiet_ms = s.quiet_for.as_millis() as u64,
                  "partition delivered nothing while records wait in it; rebuilding the share session");
        } else {
            debug!(node = me.node_id, topic = ?topic, partition = s.key.1, waiting = s.waiting,
                   "partition still quiet; rebuilding the share session again");
        }
    }
    if !stalls.is_empty() && done.generation == session.generation {
        session.reset(false);
        shared.metrics.session_resets.fetch_add(1, Relaxed);
        refresh = true;
        me.wake.notify_one();
    }
    if refresh {
        shared.refresh_metadata.notify_one();
    }
}
