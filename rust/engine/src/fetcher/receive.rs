//! Applying ShareFetch/ShareAcknowledge responses: records to the buffer, gap and release
//! acks for what cannot be delivered, ack results to their waiters, session resets.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use kafka_protocol::messages::ShareFetchResponse;
use tracing::{debug, error, info, trace, warn};

use super::missing::{Lacked, FIRST_EXCLUSION, MAX_EXCLUSION};
use super::stall::StallWatch;
use super::{InFlight, RequestKind, Session};
use crate::acks::{AckKind, AcksInFlight, PartitionKey, PendingAck, GAP};
use crate::batch::{Batch, StoredRecord};
use crate::error::EngineError;
use crate::fetcher_handle::FetcherHandle;
use crate::memory::{MemoryCharge, Shortfall};
use crate::protocol::bounded_decode::decode_share_fetch_response;
use crate::protocol::error_codes::*;
use crate::protocol::share_requests::ShareAcknowledgeResponse;
use crate::records;
use crate::shared::Shared;
use crate::tasks;

fn is_session_error(code: i16) -> bool {
    matches!(
        code,
        SHARE_SESSION_NOT_FOUND | INVALID_SHARE_SESSION_EPOCH | SHARE_SESSION_LIMIT_REACHED
    )
}

pub(super) fn handle_response(
    shared: &Arc<Shared>,
    me: &FetcherHandle,
    session: &mut Session,
    watch: &mut StallWatch,
    done: InFlight,
    result: Result<(bytes::Bytes, MemoryCharge), EngineError>,
) -> Result<(), EngineError> {
    let InFlight {
        kind,
        acks,
        generation,
        sent_at,
        sent_wall_ms,
        asked_records,
        held,
        ..
    } = done;
    let (body, frame) = match result {
        Ok(b) => b,
        Err(e) => {
            // The connection is gone (lost, or closed because a request on it timed out), and
            // with it the session. Its acks may never have reached the broker: they go again on
            // the new session. The records stay locked to this member until their lock runs out
            // or the broker sees the connection close; those it released meanwhile are refused
            // there (INVALID_RECORD_STATE, counted in ack_errors) and redelivered.
            resend(shared, me, acks, &e, false);
            // The leader may be gone for good: have the router look up the partitions' leaders.
            shared.refresh_metadata.notify_one();
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
            let body_len = body.len();
            let response = decode_share_fetch_response(body)?;
            handle_fetch(
                shared,
                me,
                session,
                watch,
                acks,
                FetchSent {
                    generation,
                    wall_ms: sent_wall_ms,
                    asked_records,
                    held,
                    body_len,
                    frame,
                },
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

/// Puts the acks of a request that went unanswered back into the queue, for the next request
/// on the new session. `quiet`: the broker lost the session and the connection is still up, so
/// the acks will apply (the records are still this member's); logged at DEBUG.
fn resend(
    shared: &Shared,
    me: &FetcherHandle,
    acks: AcksInFlight,
    cause: &EngineError,
    quiet: bool,
) {
    let acks = if quiet {
        acks
    } else {
        // The connection is gone: the broker released what its session acquired, the gaps held
        // or folded for it too (they come back, alone, as Gaps). The records' acks go again.
        me.acks.lock().expect("acks").forget_all_gaps();
        let (acks, dropped) = acks.without_any_folds();
        shared.metrics.folds_dropped(dropped, false);
        acks
    };
    let (ranges, records) = (acks.len(), acks.records());
    if ranges > 0 {
        if quiet {
            debug!(node = me.node_id, error = %cause, ranges, records,
                   "acknowledgements unanswered; resending them on a new share session");
        } else {
            warn!(node = me.node_id, error = %cause, ranges, records,
                  "acknowledgements unanswered; resending them on a new share session");
        }
        shared.metrics.acks_requeued(&acks);
    }
    me.acks.lock().expect("acks").requeue(acks);
}

/// A top-level error of a ShareFetch/ShareAcknowledge response.
struct TopLevelError {
    api: &'static str,
    code: i16,
    message: Option<String>,
}

/// Handles a top-level error; returns Err when the caller should back off.
fn top_level_error(
    shared: &Shared,
    me: &FetcherHandle,
    session: &mut Session,
    acks: AcksInFlight,
    generation: u64,
    TopLevelError { api, code, message }: TopLevelError,
) -> Result<(), EngineError> {
    if is_session_error(code) {
        // Self-healing, as Kafka 4.4's client treats them: the session is reopened on the same
        // connection and the acks go again on it. Only a run of them that does not end is
        // worth a WARN (once); an answer to a session already replaced is no new error.
        if generation == session.generation {
            session.session_errors = session.session_errors.saturating_add(1);
            if session.session_errors == super::SESSION_ERRORS_BEFORE_WARN {
                warn!(
                    node = me.node_id,
                    code,
                    name = name(code),
                    in_a_row = session.session_errors,
                    "share session errors keep coming; reopening the session again (no further WARN until it is re-established)"
                );
            } else {
                debug!(
                    node = me.node_id,
                    code,
                    name = name(code),
                    in_a_row = session.session_errors,
                    "share session lost; reopening"
                );
            }
            session.reset(false);
            shared.metrics.session_resets.fetch_add(1, Relaxed);
        } else {
            debug!(
                node = me.node_id,
                code,
                name = name(code),
                "share session error for a session already reopened"
            );
        }
        // Try the acks again on the new session: the records may still be locked to us.
        let lost = EngineError::broker(api, code, message.clone());
        resend(shared, me, acks, &lost, true);
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

/// A response without a session error from the current session ends a run of session errors.
fn session_answered(me: &FetcherHandle, session: &mut Session, generation: u64) {
    if generation != session.generation || session.session_errors == 0 {
        return;
    }
    if session.session_errors >= super::SESSION_ERRORS_BEFORE_WARN {
        info!(
            node = me.node_id,
            errors = session.session_errors,
            "share session re-established after session errors"
        );
    }
    session.session_errors = 0;
}

/// Acks of `key` refused with `code`: when they carried gaps folded into an ACCEPT and the
/// refusal may be the fold's, they are queued again without the gaps (which are dropped: their
/// locks run out and the broker delivers them again) and true is returned, the partition's
/// waiters resolving from the next answer. When the answer is a success for acks sent again so
/// and carrying no new fold, this broker refuses folds: its gaps go as Gap from then on, for the
/// member's life (`AckQueue::folds_refused`).
fn resend_without_folds(
    shared: &Shared,
    me: &FetcherHandle,
    acks: &mut AcksInFlight,
    key: &PartitionKey,
    code: i16,
) -> bool {
    if code == NONE {
        if acks.refusal_confirmed(key) {
            me.acks
                .lock()
                .expect("acks")
                .folds_refused(shared.clock.now_ms());
        }
        return false;
    }
    if !acks.may_be_refused_fold(key, code) {
        return false;
    }
    let (resent, dropped) = acks.without_folds(key);
    // Counted again when they go out again; the folds dropped are no longer acknowledged.
    shared.metrics.acks_requeued(&resent);
    shared.metrics.folds_dropped(dropped, true);
    info!(node = me.node_id, topic_id = %key.0, partition = key.1, code, name = name(code),
          ranges = resent.len(), "acknowledgement with transaction markers folded in refused; sending it again without them");
    me.acks.lock().expect("acks").requeue(resent);
    me.wake.notify_one();
    true
}

/// The broker no longer leads `key`: it leaves this session with the next request (unless the
/// router has looked again since: then its answer stands).
fn lose(me: &FetcherHandle, session: &mut Session, key: PartitionKey, code: i16) {
    me.acks.lock().expect("acks").forget_gaps(&key);
    if session.lost.insert(key, me.applied()).is_none() {
        debug!(node = me.node_id, topic_id = %key.0, partition = key.1, code, name = name(code),
               "the broker no longer leads the partition; removing it from the share session");
    }
    me.set_holds_lost(true);
}

fn leader_moved(code: i16) -> bool {
    matches!(code, NOT_LEADER_OR_FOLLOWER | FENCED_LEADER_EPOCH)
}

/// What is known of a ShareFetch from when it was sent.
struct FetchSent {
    /// Session generation the request belongs to.
    generation: u64,
    /// Wall clock at sending: acquisition locks run from about then.
    wall_ms: i64,
    /// It asked for records (not only carried acks).
    asked_records: bool,
    /// What the member held of this leader's partitions then (`Session::held`).
    held: u64,
    /// The response's size: its records point into it.
    body_len: usize,
    /// What the response's bytes were charged while it was read (nothing when the connection
    /// did not charge them).
    frame: MemoryCharge,
}

/// Where decoding stopped because memory ran short: the partition and the offset of the batch
/// (none when the response itself could not be charged), and why.
struct Stopped {
    at: Option<(Arc<str>, i32, i64)>,
    shortfall: Shortfall,
}

/// How long a member waits before fetching again after a response did not fit in memory (on
/// top of waiting until the worker has room for what the response needed): the records it
/// released go back to the share group, and fetching them again at once would only cost them
/// further delivery attempts.
pub(super) const MEMORY_PAUSE: std::time::Duration = std::time::Duration::from_millis(500);

/// A response this large, or holding compressed batches, is decoded off the worker thread:
/// decompression can take a while (a compression bomb is stopped only at the member's
/// allowance, up to hundreds of MiB), and the other members on the thread (their heartbeats,
/// their fetches) must not wait for it.
const DECODE_INLINE_MAX_BYTES: usize = 1 << 20;

/// Runs `f` where it may block: on a worker of a multi-thread runtime, after handing the
/// worker's other tasks to another thread (`block_in_place`); elsewhere (a current-thread
/// runtime: tests) in place.
fn off_the_worker<R>(heavy: bool, f: impl FnOnce() -> R) -> R {
    let multi_thread = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if heavy && multi_thread {
        tokio::task::block_in_place(f)
    } else {
        f()
    }
}

fn handle_fetch(
    shared: &Arc<Shared>,
    me: &FetcherHandle,
    session: &mut Session,
    watch: &mut StallWatch,
    mut acks: AcksInFlight,
    sent: FetchSent,
    response: ShareFetchResponse,
) -> Result<(), EngineError> {
    let FetchSent {
        generation,
        wall_ms: sent_wall_ms,
        asked_records,
        held,
        body_len,
        frame,
    } = sent;
    let carried_acks = acks.len() > 0;
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
    session_answered(me, session, generation);
    // Read once: what the router wants here decides what a missing partition means.
    let assigned = me.desired();
    let lock_deadline_ms = sent_wall_ms + response.acquisition_lock_timeout_ms.max(0) as i64;
    shared
        .lock_timeout_ms
        .store(response.acquisition_lock_timeout_ms, Relaxed);
    // Everything the response's records keep alive is charged to the member, before it is
    // allocated (see `memory`): the response itself first, as it was read.
    let (mut batch, mut stopped) = if frame.is_charged() {
        (Batch::with_charge(frame), None)
    } else {
        let mut batch = Batch::charged_to(shared.memory.clone());
        let stopped = batch
            .parts_mut()
            .1
            .memory
            .charge_held(body_len)
            .err()
            .map(|shortfall| Stopped {
                at: None,
                shortfall,
            });
        (batch, stopped)
    };
    // One allocation for the whole response: growing the vector record by record copied every
    // record several times (a fifth of the engine's CPU at 100-byte records). Bounded by the
    // response's bytes; without the memory for it, the vector grows as records come (charged).
    let records_bound = response
        .responses
        .iter()
        .flat_map(|t| &t.partitions)
        .map(|p| records::deliverable_bound(p.records.as_ref(), &p.acquired_records))
        .fold(0, usize::saturating_add);
    let (stored, data) = batch.parts_mut();
    if data
        .memory
        .charge_held(records_bound.saturating_mul(std::mem::size_of::<StoredRecord>()))
        .is_ok()
    {
        stored.reserve_exact(records_bound);
    }
    let heavy = response
        .responses
        .iter()
        .flat_map(|t| &t.partitions)
        .filter_map(|p| p.records.as_ref())
        .try_fold(0usize, |bytes, r| {
            let bytes = bytes + r.len();
            (bytes <= DECODE_INLINE_MAX_BYTES && !records::has_compressed_batches(r))
                .then_some(bytes)
        })
        .is_none();
    let mut refresh = false;
    let mut missing = Vec::new();
    let mut released_for_memory = 0u64;
    // Record bytes and the log offsets they spanned, which size the next fetch.
    let mut sized = (0usize, 0u64);
    off_the_worker(heavy, || {
        for topic in response.responses {
            let topic_name = shared.topic_name(&topic.topic_id);
            for p in topic.partitions {
                let key = (topic.topic_id, p.partition_index);
                let ack_message = p.acknowledge_error_message.map(|m| m.to_string());
                let ack_resent =
                    resend_without_folds(shared, me, &mut acks, &key, p.acknowledge_error_code);
                if p.acknowledge_error_code != NONE && !ack_resent {
                    warn!(topic = ?topic_name, partition = p.partition_index, code = p.acknowledge_error_code,
                      name = name(p.acknowledge_error_code), message = ?ack_message, "acknowledgement failed");
                    shared.metrics.ack_errors.fetch_add(1, Relaxed);
                }
                if leader_moved(p.error_code) {
                    // Its acks were refused too (UNKNOWN_TOPIC_OR_PARTITION: the old leader dropped
                    // the share-partition): no drift between the sessions, the partition moved.
                    lose(me, session, key, p.error_code);
                } else if not_in_broker_session(session, &assigned, key, p.acknowledge_error_code)
                    || not_in_broker_session(session, &assigned, key, p.error_code)
                {
                    missing.push(key);
                } else if p.error_code == NONE && session.missing.answered(&key) {
                    info!(topic = ?topic_name, partition = p.partition_index, "the broker has the partition again; back in the share session");
                }
                acks.resolve_partition(&key, (p.acknowledge_error_code, ack_message));
                if p.error_code != NONE {
                    debug!(topic = ?topic_name, partition = p.partition_index, code = p.error_code, "partition fetch error");
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
                if let Some(last) = p.acquired_records.iter().map(|a| a.last_offset).max() {
                    if watch.delivered(&key, last, tokio::time::Instant::now()) {
                        info!(topic = ?topic_name, partition = p.partition_index,
                          "partition delivers again after its share session was rebuilt");
                    }
                }
                let Some(topic_name) = &topic_name else {
                    warn!(topic_id = %topic.topic_id, "records for an unknown topic id; releasing");
                    release_all(me, key, &p.acquired_records);
                    continue;
                };
                if let (Some(bytes), Some(span)) = (
                    p.records.as_ref().map(|r| r.len()),
                    acquired_span(&p.acquired_records),
                ) {
                    sized.0 += bytes;
                    sized.1 += span;
                }
                if stopped.is_some() {
                    // Memory ran short earlier in this response: nothing more is decoded.
                    released_for_memory += release_all(me, key, &p.acquired_records);
                    continue;
                }
                match records::extract_into(
                    topic_name,
                    p.partition_index,
                    p.records,
                    &p.acquired_records,
                    lock_deadline_ms,
                    &mut batch,
                ) {
                    Ok(records::Unreadable {
                        gaps,
                        gaps_beside_records,
                        unread,
                        corrupt,
                        short,
                    }) => {
                        if let Some((offset, shortfall)) = short {
                            released_for_memory += unread
                                .iter()
                                .filter(|(_, last)| *last >= offset)
                                .map(|(first, last)| (last - first.max(&offset) + 1) as u64)
                                .sum::<u64>();
                            stopped = Some(Stopped {
                                at: Some((topic_name.clone(), p.partition_index, offset)),
                                shortfall,
                            });
                        }
                        shared
                            .metrics
                            .corrupt_batches
                            .fetch_add(corrupt.len() as u64, Relaxed);
                        for (first, last) in gaps {
                            me.push_ack(key, PendingAck::from_engine(first, last, GAP), false);
                        }
                        if !gaps_beside_records.is_empty() {
                            let mut q = me.acks.lock().expect("acks");
                            for (first, last) in gaps_beside_records {
                                q.hold_gap(
                                    key,
                                    first,
                                    last,
                                    lock_deadline_ms,
                                    shared.config.fold_gaps,
                                );
                            }
                        }
                        for (first, last) in unread {
                            me.push_ack(
                                key,
                                PendingAck::from_engine(first, last, AckKind::Release as i8),
                                false,
                            );
                        }
                    }
                    Err(e) => {
                        warn!(topic = %topic_name, partition = p.partition_index, error = %e, "unreadable records; releasing them");
                        release_all(me, key, &p.acquired_records);
                    }
                }
            }
        }
    });
    session.fetch_size.observe(sized.0, sized.1);
    if stopped.is_none() {
        shared.memory.fetched_whole();
    }
    if let Some(stopped) = stopped {
        match memory_ran_short(shared, session, stopped, released_for_memory) {
            Some(error) => {
                // The records decoded so far go with the member: its sessions close, which
                // releases them with everything else it holds.
                drop(batch);
                tasks::fail_member(shared, error.duplicate());
                return Err(error);
            }
            None => shared
                .metrics
                .records_released_memory
                .fetch_add(released_for_memory, Relaxed),
        };
    }
    // Partitions with acks but absent from the response had nothing to report: applied.
    if acks.any_refusal_confirmed() {
        me.acks
            .lock()
            .expect("acks")
            .folds_refused(shared.clock.now_ms());
    }
    acks.resolve_all((NONE, None));
    if asked_records {
        let holds = super::send::holds_records(shared);
        session.fetch_answered(carried_acks, held, batch.len(), holds);
        session.caught_up = read_to_the_end(batch.len(), shared.config.max_poll_records);
        if !batch.is_empty() {
            session.left_more = took_past_the_ask(batch.len(), shared.config.max_poll_records);
        }
        session.empty_fetches = if batch.is_empty() {
            shared.metrics.fetches_empty.fetch_add(1, Relaxed);
            session.empty_fetches.saturating_add(1)
        } else {
            0
        };
    }
    session.quiet_until = if asked_records && batch.is_empty() && super::send::holds_records(shared)
    {
        if session.empty_fetches == 1 {
            // The first empty fetch after records: the caller should settle what it holds
            // rather than wait for more (a commit cycle, whose acks free the window). Waiting
            // instead, a Connect task held its records up to its held-poll bound (50 ms) while
            // the other members' fetches waited on the same full window: 543,000-559,000
            // records/s against 761,000-778,000 (FileStream sink, 3 tasks on 3 partitions).
            shared.buffer.signal_dry();
        }
        Some(
            tokio::time::Instant::now()
                + super::send::held_quiet(shared, session.empty_fetches, session.left_more),
        )
    } else {
        None
    };
    resync_if_missing(shared, me, session, generation, &missing);
    if refresh || !missing.is_empty() {
        shared.refresh_metadata.notify_one();
    }
    if !batch.is_empty() {
        batch.seal();
        let n = batch.len() as u64;
        shared.metrics.records_fetched.fetch_add(n, Relaxed);
        shared
            .metrics
            .bytes_fetched
            .fetch_add(batch.payload_bytes() as u64, Relaxed);
        shared.metrics.records_buffered.fetch_add(n as i64, Relaxed);
        session.delivered = session.delivered.saturating_add(n);
        trace!(node = me.node_id, records = n, "fetched");
        shared.buffer.push(batch);
    }
    Ok(())
}

/// Releases every acquired offset of a partition; returns how many.
fn release_all(
    me: &FetcherHandle,
    key: PartitionKey,
    acquired: &[kafka_protocol::messages::share_fetch_response::AcquiredRecords],
) -> u64 {
    let mut n = 0u64;
    for a in acquired {
        me.push_ack(
            key,
            PendingAck::from_engine(a.first_offset, a.last_offset, AckKind::Release as i8),
            false,
        );
        n = n.saturating_add((a.last_offset.saturating_sub(a.first_offset) + 1).max(0) as u64);
    }
    n
}

/// A response did not fit: what decoding stopped on. A record batch that could never fit
/// (beyond its allowance) is the input's fault: the error to fail the member with. Otherwise
/// memory was held meanwhile (by this member or the worker's others): the rest of the response
/// was released, and this member pauses its fetching ([`MEMORY_PAUSE`], then until the worker
/// has room for as much as this response needed: `MemberMemory::has_room`).
fn memory_ran_short(
    shared: &Shared,
    session: &mut Session,
    stopped: Stopped,
    released: u64,
) -> Option<EngineError> {
    let Stopped { at, shortfall } = stopped;
    if let (true, Some((topic, partition, offset))) = (shortfall.is_poison(), &at) {
        let error = EngineError::MemoryBound {
            topic: topic.to_string(),
            partition: *partition,
            offset: *offset,
            reason: shortfall.to_string(),
        };
        error!(%topic, partition, offset, %shortfall,
               "a record batch does not fit in this member's memory; stopping the member");
        return Some(error);
    }
    session.memory_pause_until = Some(tokio::time::Instant::now() + MEMORY_PAUSE);
    let (topic, partition, offset) = at
        .map(|(t, p, o)| (Some(t), Some(p), Some(o)))
        .unwrap_or_default();
    // Once per member at WARN: under sustained pressure every response would log it.
    if shared.metrics.records_released_memory.load(Relaxed) == 0 {
        warn!(?topic, ?partition, ?offset, %shortfall, released,
              "a fetch response did not fit in memory; released the rest of it and pausing fetches until memory is free (further cases at DEBUG)");
    } else {
        debug!(?topic, ?partition, ?offset, %shortfall, released,
               "a fetch response did not fit in memory; released the rest of it");
    }
    None
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
    session_answered(me, session, generation);
    if let Some(ms) = response.acquisition_lock_timeout_ms {
        shared.lock_timeout_ms.store(ms, Relaxed);
    }
    let assigned = me.desired();
    let mut refresh = false;
    let mut missing = Vec::new();
    for (topic_id, partitions) in response.responses {
        for p in partitions {
            if resend_without_folds(
                shared,
                me,
                &mut acks,
                &(topic_id, p.partition),
                p.error_code,
            ) {
                continue;
            }
            if p.error_code != NONE {
                warn!(topic_id = %topic_id, partition = p.partition, code = p.error_code,
                      name = name(p.error_code), message = ?p.error_message, "acknowledgement failed");
                shared.metrics.ack_errors.fetch_add(1, Relaxed);
                refresh |= leader_moved(p.error_code);
                if leader_moved(p.error_code) {
                    lose(me, session, (topic_id, p.partition), p.error_code);
                } else if not_in_broker_session(
                    session,
                    &assigned,
                    (topic_id, p.partition),
                    p.error_code,
                ) {
                    missing.push((topic_id, p.partition));
                }
            }
            acks.resolve_partition(&(topic_id, p.partition), (p.error_code, p.error_message));
        }
    }
    if acks.any_refusal_confirmed() {
        me.acks
            .lock()
            .expect("acks")
            .folds_refused(shared.clock.now_ms());
    }
    acks.resolve_all((NONE, None));
    resync_if_missing(shared, me, session, generation, &missing);
    if refresh || !missing.is_empty() {
        shared.refresh_metadata.notify_one();
    }
    Ok(())
}

/// Whether the broker said it does not host `key` although this session holds it and the router
/// still wants it here: the broker's session and ours have drifted apart (replayed requests of
/// an old connection after a network partition can do that). A partition on its way out of the
/// session (no longer wanted here, or no longer led by this broker) is no drift: an old leader
/// answers acks for a partition it lost with UNKNOWN_TOPIC_OR_PARTITION.
fn not_in_broker_session(
    session: &Session,
    assigned: &std::collections::BTreeSet<PartitionKey>,
    key: PartitionKey,
    code: i16,
) -> bool {
    matches!(code, UNKNOWN_TOPIC_OR_PARTITION | UNKNOWN_TOPIC_ID)
        && session.partitions.contains(&key)
        && assigned.contains(&key)
        && !session.lost.contains_key(&key)
}

/// Reopens the share session when the broker's lacks partitions ours holds: otherwise those
/// partitions are never fetched again (this session thinks they are in, so it never adds them),
/// and their records, released when their locks run out, never come back to this member.
fn resync_if_missing(
    shared: &Shared,
    me: &FetcherHandle,
    session: &mut Session,
    generation: u64,
    missing: &[PartitionKey],
) {
    if missing.is_empty() || generation != session.generation {
        return;
    }
    match session.missing.lacked(missing, tokio::time::Instant::now()) {
        Lacked::Drift => warn!(
            node = me.node_id,
            partitions = ?missing,
            "the broker's share session lacks partitions this member fetches; reopening the session"
        ),
        Lacked::Excluded(wait) if wait <= FIRST_EXCLUSION => warn!(
            node = me.node_id,
            partitions = ?missing,
            "the broker still lacks partitions this member is assigned (a deleted topic?); leaving them out of the share session, asking again after a wait that doubles up to {} s",
            MAX_EXCLUSION.as_secs()
        ),
        Lacked::Excluded(wait) => debug!(
            node = me.node_id,
            partitions = ?missing,
            wait_ms = wait.as_millis() as u64,
            "the broker still lacks partitions; left out of the share session"
        ),
    }
    session.reset(false);
    shared.metrics.session_resets.fetch_add(1, Relaxed);
}

/// A fetch that brought some records but fewer than it asked for read what there was; one that
/// brought none found nothing it could acquire (or a window full of held records), and one that
/// filled up left more behind.
/// The log offsets from the first acquired to the last: what the broker sliced the partition's
/// records to (markers and archived records included).
fn acquired_span(
    acquired: &[kafka_protocol::messages::share_fetch_response::AcquiredRecords],
) -> Option<u64> {
    let first = acquired.iter().map(|a| a.first_offset).min()?;
    let last = acquired.iter().map(|a| a.last_offset).max()?;
    u64::try_from(last.checked_sub(first)?.checked_add(1)?).ok()
}

fn read_to_the_end(records: usize, max_records: i32) -> bool {
    records > 0 && records < max_records.max(1) as usize
}

/// A fetch that brought more records than it asked for took whole log batches past its ask
/// (batch_optimized mode): the log held more than it took, so an empty answer after it means a
/// full window. A fetch of exactly what it asked for says nothing of the sort: record_limit
/// mode never hands out more, and with several members on a partition an empty answer there
/// need not mean a full window. In the full bench run that treated exactly-full fetches as
/// such, the slow sink of (a) (record_limit, one record per fetch, 4 members per partition)
/// made 494 rows/s against 526 in the run before, and its p50 at half of classic's rate was
/// 29.6 ms against 24.8 (one run each, not A/B-tested).
fn took_past_the_ask(records: usize, max_records: i32) -> bool {
    records > max_records.max(1) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::share_requests::AckPartitionResult;
    use std::collections::BTreeSet;
    use uuid::Uuid;

    fn shared() -> Shared {
        Shared::for_tests(&[], 2)
    }

    fn session(topic: Uuid) -> Session {
        Session {
            conn: None,
            epoch: 7,
            generation: 3,
            partitions: BTreeSet::from([(topic, 0), (topic, 1)]),
            quiet_until: None,
            empty_fetches: 0,
            caught_up: false,
            left_more: false,
            missing: Default::default(),
            lost: Default::default(),
            session_errors: 0,
            delivered: 0,
            full_at: None,
            memory_pause_until: None,
            fetch_size: Default::default(),
        }
    }

    fn acknowledged(topic: Uuid, partition: i32, error_code: i16) -> ShareAcknowledgeResponse {
        ShareAcknowledgeResponse {
            throttle_time_ms: 0,
            error_code: NONE,
            error_message: None,
            acquisition_lock_timeout_ms: Some(30_000),
            responses: vec![(
                topic,
                vec![AckPartitionResult {
                    partition,
                    error_code,
                    error_message: None,
                    leader_id: 1,
                    leader_epoch: 0,
                }],
            )],
            node_endpoints: Vec::new(),
        }
    }

    #[test]
    fn only_a_fetch_past_its_ask_says_the_log_held_more() {
        assert!(
            took_past_the_ask(840, 500),
            "whole batches past the ask: a backlog"
        );
        assert!(
            !took_past_the_ask(500, 500),
            "exactly the ask (record_limit): no telling"
        );
        assert!(!took_past_the_ask(1, 1), "one record per fetch: no telling");
        assert!(!took_past_the_ask(46, 500));
    }

    #[test]
    fn only_a_partly_filled_fetch_reads_to_the_end() {
        assert!(read_to_the_end(46, 500));
        assert!(!read_to_the_end(0, 500), "empty: nothing to wait for");
        assert!(!read_to_the_end(500, 500), "full: a backlog");
        assert!(
            !read_to_the_end(840, 500),
            "whole batches past the ask: a backlog"
        );
    }

    #[test]
    fn a_partition_the_brokers_session_lacks_reopens_the_session() {
        let (shared, me, topic) = (
            shared(),
            FetcherHandle::new(1, "b:1".into()),
            Uuid::new_v4(),
        );
        me.set_desired(BTreeSet::from([(topic, 0), (topic, 1)]));
        let mut s = session(topic);
        let response = acknowledged(topic, 1, UNKNOWN_TOPIC_OR_PARTITION);
        handle_acknowledge(&shared, &me, &mut s, AcksInFlight::default(), 3, response).unwrap();
        assert_eq!(s.epoch, 0, "a new session is opened");
        assert!(
            s.partitions.is_empty(),
            "and every partition added to it again"
        );
        assert_eq!(s.generation, 4);
        assert_eq!(shared.metrics.snapshot().session_resets, 1);
    }

    #[test]
    fn other_ack_errors_and_stale_answers_leave_the_session_alone() {
        let (shared, me, topic) = (
            shared(),
            FetcherHandle::new(1, "b:1".into()),
            Uuid::new_v4(),
        );
        let mut s = session(topic);
        let refused = acknowledged(topic, 1, INVALID_RECORD_STATE);
        handle_acknowledge(&shared, &me, &mut s, AcksInFlight::default(), 3, refused).unwrap();
        assert_eq!(
            (s.epoch, s.partitions.len()),
            (7, 2),
            "a refused ack is no session drift"
        );
        let stale = acknowledged(topic, 1, UNKNOWN_TOPIC_OR_PARTITION);
        handle_acknowledge(&shared, &me, &mut s, AcksInFlight::default(), 2, stale).unwrap();
        assert_eq!(
            (s.epoch, s.partitions.len()),
            (7, 2),
            "an answer to an older session"
        );
        let unknown = acknowledged(topic, 5, UNKNOWN_TOPIC_OR_PARTITION);
        handle_acknowledge(&shared, &me, &mut s, AcksInFlight::default(), 3, unknown).unwrap();
        assert_eq!(
            (s.epoch, s.partitions.len()),
            (7, 2),
            "a partition it does not hold"
        );
        assert_eq!(shared.metrics.snapshot().session_resets, 0);
    }
}
