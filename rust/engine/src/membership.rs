//! Share-group membership: ShareGroupHeartbeat join / heartbeat / leave against the group
//! coordinator, publishing each new assignment at once (share groups have no revocation
//! handshake).

use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::{
    ApiKey, GroupId, ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse, TopicName,
};
use kafka_protocol::protocol::{Encodable, StrBytes};
use tokio::sync::watch;
use tracing::{debug, info, warn};
use uuid::Uuid;

use crate::connection::Connection;
use crate::error::EngineError;
use crate::protocol::bounded_decode::decode_share_group_heartbeat_response;
use crate::protocol::error_codes::*;
use crate::shared::Shared;

/// Assigned partitions by topic id, sorted.
pub(crate) type Assignment = Vec<(Uuid, Vec<i32>)>;

/// While the assignment is empty, or for a while after a subscription change, heartbeat this
/// often: the coordinator recomputes assignments about every second
/// (`group.share.assignment.interval.ms`), so waiting the full heartbeat interval would delay
/// records by ~5 s. The broker accepts the early heartbeats.
const FAST_HEARTBEAT: Duration = Duration::from_millis(1000);
const SUBSCRIPTION_CHANGE_FAST_HEARTBEATS: Duration = Duration::from_secs(10);
const RETRY_BACKOFF: Duration = Duration::from_millis(500);
const LEAVE_EPOCH: i32 = -1;
/// How often a paused membership task (tests only) checks whether it may resume.
const PAUSED_POLL: Duration = Duration::from_millis(100);

/// A member id like Java's `Uuid.randomUuid().toString()`: 16 random bytes in URL-safe
/// base64 without padding (22 chars).
pub(crate) fn new_member_id() -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let bytes = Uuid::new_v4().into_bytes();
    let mut out = String::with_capacity(22);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, b)| acc | (*b as u32) << (16 - 8 * i));
        let chars = chunk.len() + 1;
        for i in 0..chars {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 0x3f) as usize] as char);
        }
    }
    out
}

fn is_fatal(code: i16) -> bool {
    matches!(
        code,
        GROUP_AUTHORIZATION_FAILED
            | TOPIC_AUTHORIZATION_FAILED
            | UNSUPPORTED_VERSION
            | INVALID_REQUEST
            | GROUP_ID_NOT_FOUND
            | GROUP_MAX_SIZE_REACHED
            | 24 // INVALID_GROUP_ID
    )
}

/// Topic names the member subscribes to; replaced as a whole by `ShareConsumer::subscribe`.
pub(crate) type Subscription = Arc<Vec<String>>;

pub(crate) async fn run(
    shared: Arc<Shared>,
    mut subscription: watch::Receiver<Subscription>,
    assignment_tx: watch::Sender<Arc<Assignment>>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut epoch = 0i32;
    // A new subscription goes out with the next heartbeat and counts as sent only once one
    // succeeded.
    let mut subscription_unsent = false;
    // Heartbeat fast until then: after a subscription change the new partitions are assigned
    // only once the coordinator has initialised their share state, a second or more later.
    let mut fast_until = tokio::time::Instant::now();
    let mut coordinator: Option<Arc<Connection>> = None;
    let mut assigned_any = false;
    loop {
        if *shutdown.borrow() {
            break;
        }
        let conn = match &coordinator {
            Some(c) if !c.is_closed() => c.clone(),
            _ => match connect_coordinator(&shared).await {
                Ok(c) => {
                    coordinator = Some(c.clone());
                    c
                }
                Err(e) => {
                    debug!(error = %e, "group coordinator not reachable");
                    if is_fatal_error(&e) {
                        shared.fail(e);
                        return;
                    }
                    wait(RETRY_BACKOFF, &mut shutdown).await;
                    continue;
                }
            },
        };
        if shared
            .heartbeats_paused
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            wait(PAUSED_POLL, &mut shutdown).await;
            continue;
        }
        subscription_unsent |= subscription.has_changed().unwrap_or(false);
        let topics = subscription.borrow_and_update().clone();
        let send_topics = (epoch == 0 || subscription_unsent).then_some(topics.as_slice());
        match heartbeat(&shared, &conn, epoch, send_topics).await {
            Ok(response) => match response.error_code {
                NONE => {
                    shared
                        .metrics
                        .heartbeats
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    subscription_unsent = false;
                    if epoch == 0 {
                        info!(member_id = %shared.member_id, epoch = response.member_epoch, "joined share group");
                    }
                    epoch = response.member_epoch;
                    let interval =
                        Duration::from_millis(response.heartbeat_interval_ms.max(100) as u64);
                    if let Some(assignment) = response.assignment {
                        let mut parts: Assignment = assignment
                            .topic_partitions
                            .into_iter()
                            .map(|tp| {
                                let mut p = tp.partitions;
                                p.sort_unstable();
                                (tp.topic_id, p)
                            })
                            .collect();
                        parts.sort_unstable();
                        assigned_any = parts.iter().any(|(_, p)| !p.is_empty());
                        info!(epoch, partitions = ?parts, "assignment");
                        assignment_tx.send_replace(Arc::new(parts));
                    }
                    let fast = !assigned_any || tokio::time::Instant::now() < fast_until;
                    let next = if fast {
                        interval.min(FAST_HEARTBEAT)
                    } else {
                        interval
                    };
                    // A subscription change is sent at once rather than at the next interval.
                    tokio::select! {
                        _ = wait(next, &mut shutdown) => {}
                        _ = subscription.changed() => {
                            subscription_unsent = true;
                            fast_until = tokio::time::Instant::now() + SUBSCRIPTION_CHANGE_FAST_HEARTBEATS;
                        }
                    }
                }
                UNKNOWN_MEMBER_ID | FENCED_MEMBER_EPOCH => {
                    warn!(
                        code = response.error_code,
                        "fenced; rejoining with the same member id"
                    );
                    shared
                        .metrics
                        .rejoins
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    epoch = 0;
                    assigned_any = false;
                    assignment_tx.send_replace(Arc::new(Vec::new()));
                    continue;
                }
                NOT_COORDINATOR | COORDINATOR_NOT_AVAILABLE | COORDINATOR_LOAD_IN_PROGRESS => {
                    debug!(code = response.error_code, "coordinator moved or loading");
                    coordinator = None;
                    wait(RETRY_BACKOFF, &mut shutdown).await;
                    continue;
                }
                code if is_fatal(code) => {
                    shared.fail(EngineError::broker(
                        "ShareGroupHeartbeat",
                        code,
                        response.error_message.map(|m| m.to_string()),
                    ));
                    return;
                }
                code => {
                    warn!(code, message = ?response.error_message, "heartbeat error; retrying");
                    wait(RETRY_BACKOFF, &mut shutdown).await;
                    continue;
                }
            },
            Err(e) => {
                debug!(error = %e, "heartbeat failed; rediscovering the coordinator");
                coordinator = None;
                wait(RETRY_BACKOFF, &mut shutdown).await;
                continue;
            }
        }
    }
    // Leave: the consumer closed its share sessions before signalling shutdown.
    if epoch > 0 {
        if let Some(conn) = coordinator.filter(|c| !c.is_closed()) {
            match heartbeat(&shared, &conn, LEAVE_EPOCH, None).await {
                Ok(r) if r.error_code == NONE => {
                    info!(member_id = %shared.member_id, "left share group")
                }
                Ok(r) => debug!(code = r.error_code, "leave answered with an error"),
                Err(e) => debug!(error = %e, "leave failed"),
            }
        }
    }
}

fn is_fatal_error(e: &EngineError) -> bool {
    e.broker_code().is_some_and(is_fatal)
}

async fn wait(d: Duration, shutdown: &mut watch::Receiver<bool>) {
    tokio::select! {
        _ = tokio::time::sleep(d) => {}
        _ = shutdown.changed() => {}
    }
}

async fn connect_coordinator(shared: &Shared) -> Result<Arc<Connection>, EngineError> {
    let (node, addr) = shared
        .cluster
        .find_group_coordinator(&shared.config.group_id)
        .await?;
    debug!(node, %addr, "group coordinator");
    let conn = Connection::connect_with(
        &addr,
        &shared.config.client_id,
        shared.config.request_timeout,
        &shared.config.security,
    )
    .await?;
    Ok(Arc::new(conn))
}

async fn heartbeat(
    shared: &Shared,
    conn: &Connection,
    epoch: i32,
    subscription: Option<&[String]>,
) -> Result<ShareGroupHeartbeatResponse, EngineError> {
    let request = ShareGroupHeartbeatRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(
            shared.config.group_id.clone(),
        )))
        .with_member_id(StrBytes::from_string(shared.member_id.clone()))
        .with_member_epoch(epoch)
        // Rack and topics only at join: null means unchanged afterwards.
        .with_rack_id(
            subscription
                .and(shared.config.client_rack.as_ref())
                .map(|r| StrBytes::from_string(r.clone())),
        )
        .with_subscribed_topic_names(subscription.map(|topics| {
            topics
                .iter()
                .map(|t| TopicName(StrBytes::from_string(t.clone())))
                .collect()
        }));
    let mut body = bytes::BytesMut::new();
    request
        .encode(&mut body, 1)
        .map_err(|e| EngineError::Internal(format!("encoding ShareGroupHeartbeat: {e}")))?;
    // Bounded by the connection's request deadline, which also closes a connection that
    // stopped answering, so the retry goes out on a new one. Decoded by the engine, not
    // kafka-protocol: see protocol::bounded_decode.
    let response = conn
        .request_raw(ApiKey::ShareGroupHeartbeat, 1, &body)
        .await?;
    decode_share_group_heartbeat_response(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_id_is_22_url_safe_chars() {
        let id = new_member_id();
        assert_eq!(id.len(), 22, "{id}");
        assert!(id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        assert_ne!(id, new_member_id());
    }
}
