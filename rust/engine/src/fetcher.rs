//! One share session with one leader broker, on its own connection: keeps a ShareFetch
//! outstanding whenever the delivery buffer has room, piggy-backs finished acknowledgements
//! on it, and sends ShareAcknowledge only for acks that cannot wait (sync acks, renewals,
//! a full buffer). Closing sends epoch −1, which releases every record still held.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kafka_protocol::messages::{ApiKey, ShareFetchResponse};
use kafka_protocol::protocol::Decodable;
use tokio::sync::{watch, Notify};
use tracing::{debug, info, trace, warn};

use crate::acks::{AckKind, AckQueue, AcksInFlight, PartitionKey, PendingAck, GAP};
use crate::batch::Batch;
use crate::connection::{Connection, ResponseFuture};
use crate::core::Shared;
use crate::error::EngineError;
use crate::protocol::error_codes::*;
use crate::protocol::share_requests::{
    AcquireMode, ShareAcknowledgeRequest, ShareAcknowledgeResponse, ShareFetchRequest,
};
use crate::records;

const RECONNECT_BACKOFF: Duration = Duration::from_millis(500);
const CLOSE_EPOCH: i32 = -1;

/// The part of a fetcher other tasks touch: its ack queue and desired partitions.
pub(crate) struct FetcherHandle {
    pub node_id: i32,
    pub addr: String,
    pub acks: Mutex<AckQueue>,
    desired: Mutex<BTreeSet<PartitionKey>>,
    pub wake: Notify,
}

impl FetcherHandle {
    pub fn new(node_id: i32, addr: String) -> Self {
        FetcherHandle {
            node_id,
            addr,
            acks: Mutex::new(AckQueue::default()),
            desired: Mutex::new(BTreeSet::new()),
            wake: Notify::new(),
        }
    }

    pub fn set_desired(&self, partitions: BTreeSet<PartitionKey>) {
        let mut d = self.desired.lock().expect("desired");
        if *d != partitions {
            *d = partitions;
            drop(d);
            self.wake.notify_one();
        }
    }

    pub fn push_ack(&self, key: PartitionKey, ack: PendingAck, urgent: bool) {
        self.acks.lock().expect("acks").push(key, ack, urgent);
        self.wake.notify_one();
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RequestKind {
    Fetch,
    Acknowledge,
}

struct InFlight {
    kind: RequestKind,
    response: ResponseFuture,
    acks: AcksInFlight,
    /// Session generation the request belongs to; a stale session error must not reset a
    /// newer session.
    generation: u64,
    sent_at: Instant,
    sent_wall_ms: i64,
}

struct Session {
    conn: Option<Arc<Connection>>,
    epoch: i32,
    generation: u64,
    partitions: BTreeSet<PartitionKey>,
}

impl Session {
    fn next_epoch(&mut self) -> i32 {
        let current = self.epoch;
        // Wraps from i32::MAX to 1, never back to 0 (which would open a new session).
        self.epoch = if current == i32::MAX { 1 } else { current + 1 };
        current
    }

    fn reset(&mut self, drop_connection: bool) {
        self.epoch = 0;
        self.generation += 1;
        self.partitions.clear();
        if drop_connection {
            self.conn = None;
        }
    }
}

fn wall_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

pub(crate) async fn run(
    shared: Arc<Shared>,
    me: Arc<FetcherHandle>,
    mut closing: watch::Receiver<bool>,
) {
    let mut space = shared.buffer.subscribe_space();
    let mut session = Session {
        conn: None,
        epoch: 0,
        generation: 0,
        partitions: BTreeSet::new(),
    };
    let mut fetch: Option<InFlight> = None;
    let mut ack: Option<InFlight> = None;
    let mut backoff_until: Option<tokio::time::Instant> = None;
    info!(node = me.node_id, addr = %me.addr, "share fetcher started");

    loop {
        let is_closing = *closing.borrow();
        if is_closing && fetch.is_none() && ack.is_none() {
            break;
        }
        let backing_off = backoff_until.is_some_and(|t| t > tokio::time::Instant::now());
        if !backing_off && !is_closing {
            backoff_until = None;
            if let Err(e) = send_next(&shared, &me, &mut session, &mut fetch, &mut ack).await {
                if e.kind() == crate::error::ErrorKind::Unsupported {
                    shared.fail(e);
                    return;
                }
                debug!(node = me.node_id, error = %e, "share fetcher cannot send");
                session.reset(true);
                backoff_until = Some(tokio::time::Instant::now() + RECONNECT_BACKOFF);
            }
        }
        let sleep_until = backoff_until
            .unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(3600));
        tokio::select! {
            result = async { (&mut fetch.as_mut().expect("guarded").response).await }, if fetch.is_some() => {
                let done = fetch.take().expect("guarded");
                if let Err(e) = handle_response(&shared, &me, &mut session, done, result) {
                    debug!(node = me.node_id, error = %e, "share fetch failed");
                    backoff_until = Some(tokio::time::Instant::now() + RECONNECT_BACKOFF);
                }
            }
            result = async { (&mut ack.as_mut().expect("guarded").response).await }, if ack.is_some() => {
                let done = ack.take().expect("guarded");
                if let Err(e) = handle_response(&shared, &me, &mut session, done, result) {
                    debug!(node = me.node_id, error = %e, "share acknowledge failed");
                    backoff_until = Some(tokio::time::Instant::now() + RECONNECT_BACKOFF);
                }
            }
            _ = me.wake.notified() => {}
            _ = space.changed() => {}
            _ = closing.changed(), if !is_closing => {}
            _ = tokio::time::sleep_until(sleep_until) => {}
        }
    }
    close_session(&shared, &me, &mut session).await;
    info!(node = me.node_id, "share fetcher stopped");
}

/// Decides what (if anything) to send now, and sends it.
async fn send_next(
    shared: &Shared,
    me: &FetcherHandle,
    session: &mut Session,
    fetch: &mut Option<InFlight>,
    ack: &mut Option<InFlight>,
) -> Result<(), EngineError> {
    let desired = me.desired.lock().expect("desired").clone();
    let has_acks = !me.acks.lock().expect("acks").is_empty();
    if session.conn.as_ref().is_none_or(|c| c.is_closed()) {
        if desired.is_empty() && !has_acks {
            return Ok(());
        }
        if fetch.is_some() || ack.is_some() {
            return Ok(()); // let their failures arrive first
        }
        if session.epoch != 0 {
            shared.metrics.session_resets.fetch_add(1, Relaxed);
        }
        session.reset(true);
        let conn = Connection::connect_with(
            &me.addr,
            &shared.config.client_id,
            shared.config.request_timeout,
            &shared.config.security,
        )
        .await?;
        session.conn = Some(Arc::new(conn));
    }
    let conn = session.conn.clone().expect("connected above");
    let room = shared.buffer.has_room();

    if session.epoch == 0 {
        if fetch.is_some() || ack.is_some() {
            return Ok(());
        }
        if !desired.is_empty() && (room || has_acks) {
            // A new session may not carry acks (INVALID_REQUEST); they go on the next
            // request. Without room, fetch knobs of 0 open the session without acquiring.
            let add = desired.iter().cloned().collect();
            let request = fetch_request(shared, session, add, Vec::new(), Vec::new(), room);
            session.partitions = desired;
            *fetch = Some(send(
                shared,
                &conn,
                RequestKind::Fetch,
                request,
                AcksInFlight::default(),
                session,
            )?);
        } else if desired.is_empty() && has_acks {
            // No partition of this leader is assigned any more and no session is open: the
            // records these acks refer to were released when their session ended.
            let (_, stale) = me.acks.lock().expect("acks").take();
            let failed = stale.resolve_all((
                SHARE_SESSION_NOT_FOUND,
                Some("the share session holding these records has ended".into()),
            ));
            shared.metrics.ack_errors.fetch_add(failed as u64, Relaxed);
        }
        return Ok(());
    }

    let (urgent, has_renew) = {
        let q = me.acks.lock().expect("acks");
        (q.is_urgent(), q.has_renew())
    };
    let fetch_wanted = room && !desired.is_empty();
    let forget_needed = session.partitions.iter().any(|p| !desired.contains(p));
    if fetch.is_none() && !has_renew && (fetch_wanted || forget_needed) {
        let (topics, in_flight) = me.acks.lock().expect("acks").take();
        let mut add: Vec<PartitionKey> = desired.difference(&session.partitions).cloned().collect();
        let forget: Vec<PartitionKey> = session.partitions.difference(&desired).cloned().collect();
        // Acks for partitions outside the session ride along as add + forget (as Java does).
        let mut forget = forget;
        for t in &topics {
            for p in &t.partitions {
                let key = (t.topic_id, p.partition);
                if !desired.contains(&key) && !forget.contains(&key) {
                    forget.push(key);
                }
            }
        }
        add.retain(|k| !in_flight.partitions().any(|a| a == k));
        let request = fetch_request(shared, session, add, topics, forget, fetch_wanted);
        session.partitions = desired;
        *fetch = Some(send(
            shared,
            &conn,
            RequestKind::Fetch,
            request,
            in_flight,
            session,
        )?);
        return Ok(());
    }
    // Acks that cannot wait for the next fetch go on a ShareAcknowledge, pipelined behind an
    // outstanding fetch if there is one.
    let ack_due = has_acks && (urgent || has_renew || (fetch.is_none() && !fetch_wanted));
    if ack.is_none() && ack_due {
        let (topics, in_flight) = me.acks.lock().expect("acks").take();
        if topics.is_empty() {
            return Ok(());
        }
        let request = ShareAcknowledgeRequest {
            group_id: shared.config.group_id.clone(),
            member_id: shared.member_id.clone(),
            session_epoch: session.next_epoch(),
            is_renew_ack: has_renew,
            topics,
        };
        let body = request.encode(shared.share_acknowledge_version)?;
        *ack = Some(send_body(
            shared,
            &conn,
            RequestKind::Acknowledge,
            body,
            in_flight,
            session,
        )?);
    }
    Ok(())
}

fn fetch_request(
    shared: &Shared,
    session: &mut Session,
    add: Vec<PartitionKey>,
    mut topics: Vec<crate::protocol::share_requests::TopicAcks>,
    forget: Vec<PartitionKey>,
    fetch_records: bool,
) -> ShareFetchRequest {
    use crate::protocol::share_requests::{PartitionAcks, TopicAcks};
    for (topic_id, partition) in add {
        match topics.iter_mut().find(|t| t.topic_id == topic_id) {
            Some(t) => t.partitions.push(PartitionAcks {
                partition,
                batches: Vec::new(),
            }),
            None => topics.push(TopicAcks {
                topic_id,
                partitions: vec![PartitionAcks {
                    partition,
                    batches: Vec::new(),
                }],
            }),
        }
    }
    let mut forgotten: Vec<(uuid::Uuid, Vec<i32>)> = Vec::new();
    for (topic_id, partition) in forget {
        match forgotten.iter_mut().find(|(t, _)| *t == topic_id) {
            Some((_, ps)) => ps.push(partition),
            None => forgotten.push((topic_id, vec![partition])),
        }
    }
    let c = &shared.config;
    // With no room, knobs of 0 make the broker apply acks and skip the fetch.
    let (max_wait_ms, min_bytes, max_bytes, max_records) = if fetch_records {
        (
            c.fetch_max_wait.as_millis() as i32,
            c.fetch_min_bytes,
            c.fetch_max_bytes,
            c.max_poll_records,
        )
    } else {
        (0, 0, 0, 0)
    };
    ShareFetchRequest {
        group_id: c.group_id.clone(),
        member_id: shared.member_id.clone(),
        session_epoch: session.next_epoch(),
        max_wait_ms,
        min_bytes,
        max_bytes,
        max_records,
        batch_size: c.max_poll_records,
        acquire_mode: if shared.share_fetch_version >= 2 {
            c.acquire_mode
        } else {
            AcquireMode::BatchOptimized
        },
        is_renew_ack: false,
        topics,
        forgotten,
    }
}

fn send(
    shared: &Shared,
    conn: &Connection,
    kind: RequestKind,
    request: ShareFetchRequest,
    acks: AcksInFlight,
    session: &Session,
) -> Result<InFlight, EngineError> {
    trace!(
        epoch = request.session_epoch,
        topics = request.topics.len(),
        forgotten = request.forgotten.len(),
        "ShareFetch"
    );
    let body = request.encode(shared.share_fetch_version)?;
    send_body(shared, conn, kind, body, acks, session)
}

fn send_body(
    shared: &Shared,
    conn: &Connection,
    kind: RequestKind,
    body: bytes::Bytes,
    acks: AcksInFlight,
    session: &Session,
) -> Result<InFlight, EngineError> {
    let (api, version) = match kind {
        RequestKind::Fetch => (ApiKey::ShareFetch, shared.share_fetch_version),
        RequestKind::Acknowledge => (ApiKey::ShareAcknowledge, shared.share_acknowledge_version),
    };
    shared.metrics.acks_sent(&acks);
    let response = conn.send_raw(api, version, &body)?;
    Ok(InFlight {
        kind,
        response,
        acks,
        generation: session.generation,
        sent_at: Instant::now(),
        sent_wall_ms: wall_ms(),
    })
}

fn is_session_error(code: i16) -> bool {
    matches!(
        code,
        SHARE_SESSION_NOT_FOUND | INVALID_SHARE_SESSION_EPOCH | SHARE_SESSION_LIMIT_REACHED
    )
}

fn handle_response(
    shared: &Shared,
    me: &FetcherHandle,
    session: &mut Session,
    done: InFlight,
    result: Result<bytes::Bytes, EngineError>,
) -> Result<(), EngineError> {
    let InFlight {
        kind,
        acks,
        generation,
        sent_at,
        sent_wall_ms,
        ..
    } = done;
    let body = match result {
        Ok(b) => b,
        Err(e) => {
            // The connection is gone, and with it the session and its locks.
            let failed = acks.resolve_all((NETWORK_EXCEPTION, Some(e.to_string())));
            shared.metrics.ack_errors.fetch_add(failed as u64, Relaxed);
            if generation == session.generation {
                session.reset(true);
                shared.metrics.session_resets.fetch_add(1, Relaxed);
            }
            return Err(e);
        }
    };
    match kind {
        RequestKind::Fetch => {
            shared.metrics.fetch_done(sent_at.elapsed());
            let mut body = body;
            let response = ShareFetchResponse::decode(&mut body, 1)
                .map_err(|e| EngineError::protocol(format!("decoding ShareFetch response: {e}")))?;
            handle_fetch(
                shared,
                me,
                session,
                acks,
                generation,
                sent_wall_ms,
                response,
            )
        }
        RequestKind::Acknowledge => {
            shared.metrics.ack_request_done(sent_at.elapsed());
            let response =
                ShareAcknowledgeResponse::decode(body, shared.share_acknowledge_version)?;
            handle_acknowledge(shared, me, session, acks, generation, response)
        }
    }
}

/// Handles a top-level error; returns Err when the caller should back off.
/// A top-level error of a ShareFetch/ShareAcknowledge response.
struct TopLevelError {
    api: &'static str,
    code: i16,
    message: Option<String>,
}

fn top_level_error(
    shared: &Shared,
    me: &FetcherHandle,
    session: &mut Session,
    acks: AcksInFlight,
    generation: u64,
    TopLevelError { api, code, message }: TopLevelError,
) -> Result<(), EngineError> {
    if is_session_error(code) {
        warn!(
            node = me.node_id,
            code,
            name = name(code),
            "share session lost; reopening"
        );
        if generation == session.generation {
            session.reset(false);
            shared.metrics.session_resets.fetch_add(1, Relaxed);
        }
        // Try the acks again on the new session: the records may still be locked to us.
        me.acks.lock().expect("acks").requeue(acks);
        return if code == SHARE_SESSION_LIMIT_REACHED {
            Err(EngineError::broker(api, code, message))
        } else {
            Ok(())
        };
    }
    let failed = acks.resolve_all((code, message.clone()));
    shared.metrics.ack_errors.fetch_add(failed as u64, Relaxed);
    if matches!(code, UNKNOWN_TOPIC_ID | UNKNOWN_TOPIC_OR_PARTITION) {
        // A topic in the session is gone or recreated: rebuild the session from fresh
        // metadata rather than repeat the same failing request.
        if generation == session.generation {
            session.reset(false);
        }
        shared.refresh_metadata.notify_one();
    }
    let error = EngineError::broker(api, code, message);
    if !error.is_retriable() {
        shared.fail(error.duplicate());
    }
    Err(error)
}

fn handle_fetch(
    shared: &Shared,
    me: &FetcherHandle,
    session: &mut Session,
    mut acks: AcksInFlight,
    generation: u64,
    sent_wall_ms: i64,
    response: ShareFetchResponse,
) -> Result<(), EngineError> {
    if response.error_code != NONE {
        let message = response.error_message.map(|m| m.to_string());
        return top_level_error(
            shared,
            me,
            session,
            acks,
            generation,
            TopLevelError {
                api: "ShareFetch",
                code: response.error_code,
                message,
            },
        );
    }
    let lock_deadline_ms = sent_wall_ms + response.acquisition_lock_timeout_ms.max(0) as i64;
    shared
        .lock_timeout_ms
        .store(response.acquisition_lock_timeout_ms, Relaxed);
    let mut batch = Batch::default();
    let mut refresh = false;
    for topic in response.responses {
        let name = shared.topic_name(&topic.topic_id);
        for p in topic.partitions {
            let key = (topic.topic_id, p.partition_index);
            let ack_message = p.acknowledge_error_message.map(|m| m.to_string());
            if p.acknowledge_error_code != NONE {
                warn!(topic = ?name, partition = p.partition_index, code = p.acknowledge_error_code,
                      name = name_of(p.acknowledge_error_code), message = ?ack_message, "acknowledgement failed");
                shared.metrics.ack_errors.fetch_add(1, Relaxed);
            }
            acks.resolve_partition(&key, (p.acknowledge_error_code, ack_message));
            if p.error_code != NONE {
                debug!(topic = ?name, partition = p.partition_index, code = p.error_code, "partition fetch error");
                refresh |= matches!(
                    p.error_code,
                    NOT_LEADER_OR_FOLLOWER
                        | FENCED_LEADER_EPOCH
                        | UNKNOWN_TOPIC_OR_PARTITION
                        | UNKNOWN_TOPIC_ID
                );
                if matches!(
                    p.error_code,
                    TOPIC_AUTHORIZATION_FAILED | GROUP_AUTHORIZATION_FAILED
                ) {
                    shared.fail(EngineError::broker(
                        "ShareFetch",
                        p.error_code,
                        p.error_message.map(|m| m.to_string()),
                    ));
                }
                continue;
            }
            if p.acquired_records.is_empty() {
                continue;
            }
            let Some(name) = &name else {
                warn!(topic_id = %topic.topic_id, "records for an unknown topic id; releasing");
                release_all(me, key, &p.acquired_records);
                continue;
            };
            match records::extract(
                name,
                p.partition_index,
                p.records,
                &p.acquired_records,
                lock_deadline_ms,
            ) {
                Ok(extracted) => {
                    for (first, last) in extracted.gaps {
                        me.push_ack(key, PendingAck::from_engine(first, last, GAP), false);
                    }
                    for (first, last) in extracted.unread {
                        me.push_ack(
                            key,
                            PendingAck::from_engine(first, last, AckKind::Release as i8),
                            false,
                        );
                    }
                    batch.records.extend(extracted.records);
                }
                Err(e) => {
                    warn!(topic = %name, partition = p.partition_index, error = %e, "unreadable records; releasing them");
                    release_all(me, key, &p.acquired_records);
                }
            }
        }
    }
    // Partitions with acks but absent from the response had nothing to report: applied.
    acks.resolve_all((NONE, None));
    if refresh {
        shared.refresh_metadata.notify_one();
    }
    if !batch.is_empty() {
        let n = batch.len() as u64;
        shared.metrics.records_fetched.fetch_add(n, Relaxed);
        shared
            .metrics
            .bytes_fetched
            .fetch_add(batch.payload_bytes() as u64, Relaxed);
        shared.metrics.records_buffered.fetch_add(n as i64, Relaxed);
        trace!(node = me.node_id, records = n, "fetched");
        shared.buffer.push(batch);
    }
    Ok(())
}

fn release_all(
    me: &FetcherHandle,
    key: PartitionKey,
    acquired: &[kafka_protocol::messages::share_fetch_response::AcquiredRecords],
) {
    for a in acquired {
        me.push_ack(
            key,
            PendingAck::from_engine(a.first_offset, a.last_offset, AckKind::Release as i8),
            false,
        );
    }
}

fn name_of(code: i16) -> &'static str {
    name(code)
}

fn handle_acknowledge(
    shared: &Shared,
    me: &FetcherHandle,
    session: &mut Session,
    mut acks: AcksInFlight,
    generation: u64,
    response: ShareAcknowledgeResponse,
) -> Result<(), EngineError> {
    if response.error_code != NONE {
        return top_level_error(
            shared,
            me,
            session,
            acks,
            generation,
            TopLevelError {
                api: "ShareAcknowledge",
                code: response.error_code,
                message: response.error_message,
            },
        );
    }
    if let Some(ms) = response.acquisition_lock_timeout_ms {
        shared.lock_timeout_ms.store(ms, Relaxed);
    }
    let mut refresh = false;
    for (topic_id, partitions) in response.responses {
        for p in partitions {
            if p.error_code != NONE {
                warn!(topic_id = %topic_id, partition = p.partition, code = p.error_code,
                      name = name_of(p.error_code), message = ?p.error_message, "acknowledgement failed");
                shared.metrics.ack_errors.fetch_add(1, Relaxed);
                refresh |= matches!(p.error_code, NOT_LEADER_OR_FOLLOWER | FENCED_LEADER_EPOCH);
            }
            acks.resolve_partition(&(topic_id, p.partition), (p.error_code, p.error_message));
        }
    }
    acks.resolve_all((NONE, None));
    if refresh {
        shared.refresh_metadata.notify_one();
    }
    Ok(())
}

/// Epoch −1: applies the last acks and releases everything else this member holds here.
async fn close_session(shared: &Shared, me: &FetcherHandle, session: &mut Session) {
    let (topics, in_flight) = me.acks.lock().expect("acks").take();
    let conn = match (&session.conn, session.epoch) {
        (Some(conn), epoch) if epoch > 0 && !conn.is_closed() => conn.clone(),
        _ => {
            in_flight.resolve_all((
                SHARE_SESSION_NOT_FOUND,
                Some("no open share session at close".into()),
            ));
            session.conn = None;
            return;
        }
    };
    let has_renew = topics
        .iter()
        .flat_map(|t| &t.partitions)
        .flat_map(|p| &p.batches)
        .any(|b| b.types.contains(&4));
    let request = ShareAcknowledgeRequest {
        group_id: shared.config.group_id.clone(),
        member_id: shared.member_id.clone(),
        session_epoch: CLOSE_EPOCH,
        is_renew_ack: has_renew,
        topics,
    };
    let outcome = async {
        let body = request.encode(shared.share_acknowledge_version)?;
        let response = conn
            .request_raw(
                ApiKey::ShareAcknowledge,
                shared.share_acknowledge_version,
                &body,
            )
            .await?;
        ShareAcknowledgeResponse::decode(response, shared.share_acknowledge_version)
    };
    shared.metrics.acks_sent(&in_flight);
    let timeout = shared.config.request_timeout;
    match tokio::time::timeout(timeout, outcome).await {
        Ok(Ok(response)) => {
            debug!(
                node = me.node_id,
                code = response.error_code,
                "share session closed"
            );
            let mut in_flight = in_flight;
            for (topic_id, partitions) in response.responses {
                for p in partitions {
                    in_flight.resolve_partition(
                        &(topic_id, p.partition),
                        (p.error_code, p.error_message),
                    );
                }
            }
            in_flight.resolve_all((response.error_code, response.error_message));
        }
        Ok(Err(e)) => {
            debug!(node = me.node_id, error = %e, "closing share session failed");
            in_flight.resolve_all((NETWORK_EXCEPTION, Some(e.to_string())));
        }
        Err(_) => {
            in_flight.resolve_all((
                REQUEST_TIMED_OUT,
                Some("closing the share session timed out".into()),
            ));
        }
    }
    session.conn = None;
}
