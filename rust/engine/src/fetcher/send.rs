//! Deciding what a share session sends next, and building ShareFetch/ShareAcknowledge.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

use kafka_protocol::messages::ApiKey;
use tracing::trace;

use super::{InFlight, RequestKind, Session};
use crate::acks::{AcksInFlight, PartitionKey};
use crate::connection::Connection;
use crate::error::EngineError;
use crate::fetcher_handle::FetcherHandle;
use crate::protocol::error_codes::*;
use crate::protocol::share_requests::{
    AcquireMode, ShareAcknowledgeRequest, ShareFetchRequest, TopicAcks,
};
use crate::shared::Shared;

/// Decides what (if anything) to send now, and sends it.
pub(super) async fn send_next(
    shared: &Shared,
    me: &FetcherHandle,
    session: &mut Session,
    fetch: &mut Option<InFlight>,
    ack: &mut Option<InFlight>,
) -> Result<(), EngineError> {
    let assigned = me.desired();
    let mut desired = session
        .missing
        .filter(assigned, tokio::time::Instant::now());
    // Partitions the broker no longer leads leave the session now; once the router has looked
    // again, its answer stands.
    let applied = me.applied();
    session.lost.retain(|_, at| *at == applied);
    me.set_holds_lost(!session.lost.is_empty());
    desired.retain(|k| !session.lost.contains_key(k));
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
        // A closed connection released the session's records, the gaps held for them too.
        me.acks.lock().expect("acks").forget_all_gaps();
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
    let room = shared.wants_records()
        && session
            .memory_pause_until
            .is_none_or(|t| t <= tokio::time::Instant::now());

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
            shared
                .metrics
                .ack_conflicts
                .fetch_add(stale.conflicts, Relaxed);
            let failed = stale.resolve_all((
                SHARE_SESSION_NOT_FOUND,
                Some("the share session holding these records has ended".into()),
            ));
            shared.metrics.ack_errors.fetch_add(failed as u64, Relaxed);
        }
        return Ok(());
    }

    let (urgent, has_renew, queued_settled) = {
        let q = me.acks.lock().expect("acks");
        (q.is_urgent(), q.has_renew(), q.queued_settled_by_caller())
    };
    let mut quiet = session
        .quiet_until
        .is_some_and(|t| t > tokio::time::Instant::now());
    let held = session.held(me);
    if fetch.is_none()
        && room
        && !desired.is_empty()
        && !has_acks
        && !quiet
        && window_full(session, held)
    {
        // The windows are as full as when a fetch like this came back empty: it would come
        // back empty again, and only acks free them. The caller is told, as by that empty
        // fetch, so that it settles what it holds rather than wait for more.
        session.quiet_until =
            Some(tokio::time::Instant::now() + held_quiet(shared, 1, session.left_more));
        shared.buffer.signal_dry();
        quiet = true;
    }
    let forget_needed = session.partitions.iter().any(|p| !desired.contains(p));
    // The windows are full of what these acks settle: the acks go first, on a ShareAcknowledge,
    // and the fetch is pipelined behind it on the same connection. The broker serves one
    // request of a connection at a time and answers a ShareAcknowledge once the acks' state is
    // written, so the fetch finds the windows freed. Riding on the fetch, the acks are applied
    // and the fetch tried before that write frees them (Kafka 4.4 tries a parked fetch again
    // when acks arrive, not when their write completes): it waited out its wait, and a third
    // of the cycles in (d) brought an empty fetch more.
    let acks_first = shared.config.acknowledge_first
        && has_acks
        && fetch.is_none()
        && ack.is_none()
        && !urgent
        && !has_renew
        && !forget_needed
        && room
        && !desired.is_empty()
        && window_full(session, held.saturating_add(queued_settled));
    let fetch_wanted = room && !desired.is_empty() && (has_acks || !quiet) && !acks_first;
    if fetch.is_none() && !has_renew && (fetch_wanted || forget_needed) {
        let (topics, in_flight) = take_acks(shared, me);
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
        #[cfg(any(test, feature = "test-hooks"))]
        injected_forget(shared, session, &add, &mut forget);
        // The session's partitions are what the broker splits this fetch's bytes over.
        session.partitions = desired;
        let request = fetch_request(shared, session, add, topics, forget, fetch_wanted);
        let mut sent = send(
            shared,
            &conn,
            RequestKind::Fetch,
            request,
            in_flight,
            session,
        )?;
        sent.held = held;
        *fetch = Some(sent);
        return Ok(());
    }
    // Acks that cannot wait for the next fetch go on a ShareAcknowledge, pipelined behind an
    // outstanding fetch if there is one.
    let ack_due = has_acks && (urgent || has_renew || (fetch.is_none() && !fetch_wanted));
    if ack.is_none() && ack_due {
        let (topics, in_flight) = take_acks(shared, me);
        if topics.is_empty() {
            shared
                .metrics
                .ack_conflicts
                .fetch_add(in_flight.conflicts, Relaxed);
            return Ok(());
        }
        // From what goes out: a renew that settling acks covered is not sent.
        let is_renew_ack = topics
            .iter()
            .flat_map(|t| &t.partitions)
            .flat_map(|p| &p.batches)
            .any(|b| b.types.contains(&(crate::acks::AckKind::Renew as i8)));
        let request = ShareAcknowledgeRequest {
            group_id: shared.config.group_id.clone(),
            member_id: shared.member_id.clone(),
            session_epoch: session.next_epoch(),
            is_renew_ack,
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
            std::time::Duration::ZERO,
        )?);
        if acks_first {
            // The fetch goes next, behind the acks: what they free is what it is for.
            session.quiet_until = None;
            me.wake.notify_one();
        }
    }
    Ok(())
}

/// Tests only: forgets the injected partition on the broker, keeping it in the session's view.
#[cfg(any(test, feature = "test-hooks"))]
fn injected_forget(
    shared: &Shared,
    session: &Session,
    add: &[PartitionKey],
    forget: &mut Vec<PartitionKey>,
) {
    let mut injected = shared.injected_forget.lock().expect("injected forget");
    let Some((topic, partition)) = injected.clone() else {
        return;
    };
    let key = session
        .partitions
        .iter()
        .find(|(id, p)| *p == partition && shared.topic_name(id).is_some_and(|t| t == topic));
    if let Some(key) = key.filter(|k| !add.contains(k) && !forget.contains(k)) {
        tracing::info!(topic = %topic, partition, "forgetting the partition on the broker only (test)");
        forget.push(*key);
        *injected = None;
    }
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
    let carries_acks = topics
        .iter()
        .any(|t| t.partitions.iter().any(|p| !p.batches.is_empty()));
    // With no room, knobs of 0 make the broker apply acks and skip the fetch.
    let (max_wait_ms, min_bytes, max_bytes, max_records) = if fetch_records {
        let wait = fetch_wait(
            shared,
            carries_acks,
            session.empty_fetches,
            session.caught_up,
        );
        // A response asks for no more than the member's reservation (fetch.max.bytes, at
        // most one record batch's memory allowance): a fetch goes out only when that fits.
        let reserved = i32::try_from(shared.memory.reservation()).unwrap_or(i32::MAX);
        let limit = c.fetch_max_bytes.min(reserved);
        let max_bytes = if c.fetch_bytes_adaptive {
            session
                .fetch_size
                .max_bytes(limit, c.max_poll_records, session.partitions.len())
        } else {
            limit
        };
        (
            wait.max_wait.as_millis() as i32,
            wait.min_bytes.min(max_bytes),
            max_bytes,
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
        batch_size: c.fetch_batch_size,
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

/// On Kafka 4.4 a parked ShareFetch was not completed when acknowledgements (its own or another
/// member's) freed the window it waited for (the effect measured, its cause in the broker not
/// traced): a long wait was simply waited out (measured with a fast Connect
/// sink, 3 members on 3 partitions: 20-60 ms per fetch with `fetch.max.wait.ms` 500, 4-7 ms
/// with 5, and 2-3x the records/s). So waits start short and grow only while the topic is
/// quiet: a fetch carrying acks, and the first long poll after records arrived, wait
/// `share.fetch.wait.initial.ms` (5); each empty fetch doubles the next long poll, up to
/// `fetch.max.wait.ms`, so an idle member is back at the full long poll after a few fetches.
/// While the member holds records, a fetch without acks does not wait at all: parked, it would
/// hold up the acks made meanwhile (they ride on the next request, and the broker serves one
/// request per connection at a time), and those acks are what frees a window full of this
/// member's records. Except right after a fetch that brought fewer records than it asked for:
/// the member has read what there was, so the next one waits 2 ms on the broker. Without that
/// wait, a live topic's next records waited for the pause after an empty fetch (`held_quiet`):
/// at 93,000 records/s, 3 members, p50 5.4 ms against 4.4 with it. A fetch that filled up (a
/// backlog) or came back empty (a window full of held records) does not wait, so acks are never
/// parked behind it for long.
///
/// That 2 ms wait is a whole one: its minimum bytes are `fetch.max.bytes`, so the broker answers
/// at its end (or with a full response), not with the first producer batch that lands. The
/// member is still working through what it holds, and each ShareFetch costs the broker several
/// times a classic Fetch (acquisition, in-flight state, a delayed operation): answered per
/// producer batch, 3 members sent 44,000 ShareFetches in a 25 s run where the classic runtime
/// sent 18,500 Fetches (FileStream sink, 237,000 records/s); with the whole wait 22,500, and
/// the broker's CPU per record fell by a fifth.
fn fetch_wait(
    shared: &Shared,
    carries_acks: bool,
    empty_fetches: u32,
    caught_up: bool,
) -> FetchWait {
    let c = &shared.config;
    let wait = |max_wait| FetchWait {
        max_wait,
        min_bytes: c.fetch_min_bytes,
    };
    if carries_acks {
        wait(c.fetch_wait_initial)
    } else if holds_records(shared) {
        if caught_up {
            FetchWait {
                max_wait: HELD_CAUGHT_UP_WAIT,
                min_bytes: c.fetch_min_bytes.max(c.fetch_max_bytes),
            }
        } else {
            wait(std::time::Duration::ZERO)
        }
    } else {
        wait(
            c.fetch_wait_initial
                .saturating_mul(1u32 << empty_fetches.min(16))
                .min(c.fetch_max_wait),
        )
    }
}

/// How long the broker may hold a ShareFetch, and how many bytes end the wait early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FetchWait {
    max_wait: std::time::Duration,
    min_bytes: i32,
}

/// How long a fetch without acks may wait on the broker while the member holds records and its
/// last fetch read to the end of what there was.
const HELD_CAUGHT_UP_WAIT: std::time::Duration = std::time::Duration::from_millis(2);

/// The first pause after a fetch came back empty while the member holds records.
const HELD_QUIET_INITIAL: std::time::Duration = std::time::Duration::from_millis(1);

/// How long, after `empty_fetches` empty fetches in a row while the member holds records, only
/// a fetch carrying acks may go out.
///
/// When the last fetch with records took whole log batches past its ask (`left_more`), the log
/// held more than that fetch took, so an empty answer means the share-partition's window is
/// full, and only acks free it:
/// the whole `share.fetch.max.wait.held.ms` (the acks this member queues end the pause at once;
/// the bound is for windows that other members' acks free). Paused 1 ms instead, members of a
/// backlogged topic sent two or three empty fetches per commit: 65% of all ShareFetches in (d)
/// (FileStream sink, 3 tasks, 2 M records: 350-520 of 530-890 per member), each one work for
/// the broker on the cores the worker needs; with the whole pause 100-185 of 280-420.
///
/// Otherwise the member had read to the end of the log: 1 ms after the first empty fetch,
/// doubling with each further one, up to `share.fetch.max.wait.held.ms`. Records produced
/// meanwhile wait for the next fetch, so a flat 50 ms pause put 30 ms on the median
/// produce-to-sink latency of a live topic (a FileStream sink at 25,000 records/s: p50 30 ms,
/// 5 ms with this); a member that holds records and finds nothing new (a sink buffering until
/// its flush) is back at the full pause after seven.
pub(super) fn held_quiet(
    shared: &Shared,
    empty_fetches: u32,
    left_more: bool,
) -> std::time::Duration {
    if left_more {
        return shared.config.fetch_max_wait_held;
    }
    HELD_QUIET_INITIAL
        .saturating_mul(1u32 << empty_fetches.saturating_sub(1).min(16))
        .min(shared.config.fetch_max_wait_held)
}

/// Whether the member holds as much of this leader's records as when a fetch without acks,
/// after one that took whole log batches past its ask, came back empty (`Session::full_at`):
/// the share-partitions' record-lock windows are full, and a fetch without acks would only come
/// back empty. In (d) (FileStream sink, 3 tasks on 3 partitions, 2 M records) every fetch that
/// took a whole log batch (about 4,800 records, past a window of 4,000) was followed by one
/// that came back empty: 47% of all ShareFetches, each one work for the brokers. Only a fetch
/// that took past its ask counts (never so in `record_limit` mode, nor at the end of the log),
/// and the pause it leads to ends with the caller's acks, or after
/// `share.fetch.max.wait.held.ms` (then a fetch without acks that brings records shows the
/// windows larger than thought).
pub(super) fn window_full(session: &Session, held: u64) -> bool {
    session.left_more && session.full_at.is_some_and(|at| held >= at)
}

pub(super) fn holds_records(shared: &Shared) -> bool {
    shared.buffer.len_records() as i64 + shared.metrics.records_in_flight.load(Relaxed) > 0
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
    // A long poll may be held that long before the broker answers; the deadline adds it.
    let broker_wait = std::time::Duration::from_millis(request.max_wait_ms.max(0) as u64);
    let mut in_flight = send_body(shared, conn, kind, body, acks, session, broker_wait)?;
    in_flight.asked_records = request.max_records > 0;
    Ok(in_flight)
}

/// The largest batch a broker takes by default (`message.max.bytes`).
const BROKER_DEFAULT_MAX_MESSAGE_BYTES: usize = 1024 * 1024 + 12;

/// Room in a ShareFetch response beyond its records: per-partition headers, acquired-record
/// ranges, leader hints and node endpoints.
const SHARE_FETCH_RESPONSE_OVERHEAD: usize = 4 * 1024 * 1024;

/// The largest ShareFetch response taken. A response holds at most `fetch.max.bytes` of records
/// (its MaxBytes is never more), except that a partition's first batch comes whole even when
/// larger: a batch up to the broker's default `message.max.bytes` is always taken, a larger one
/// only within `fetch.max.bytes` (so a topic whose `max.message.bytes` exceeds both needs
/// `fetch.max.bytes` raised to it). A broker cannot make the member hold more for one answer.
pub(crate) fn share_fetch_response_bound(fetch_max_bytes: i32) -> usize {
    usize::try_from(fetch_max_bytes)
        .unwrap_or(0)
        .max(BROKER_DEFAULT_MAX_MESSAGE_BYTES)
        .saturating_add(SHARE_FETCH_RESPONSE_OVERHEAD)
}

fn send_body(
    shared: &Shared,
    conn: &Connection,
    kind: RequestKind,
    body: bytes::Bytes,
    acks: AcksInFlight,
    session: &Session,
    broker_wait: std::time::Duration,
) -> Result<InFlight, EngineError> {
    let (api, version) = match kind {
        RequestKind::Fetch => (ApiKey::ShareFetch, shared.share_fetch_version),
        RequestKind::Acknowledge => (ApiKey::ShareAcknowledge, shared.share_acknowledge_version),
    };
    shared.metrics.acks_sent(&acks);
    let max_response = match kind {
        RequestKind::Fetch => share_fetch_response_bound(shared.config.fetch_max_bytes),
        RequestKind::Acknowledge => crate::connection::RESPONSE_MAX_BYTES,
    };
    // A fetch's response is charged to the member while it is read (see `memory`).
    let charge_to = matches!(kind, RequestKind::Fetch).then(|| shared.memory.clone());
    let response = conn
        .send_raw_bounded(api, version, &body, broker_wait, max_response, charge_to)?
        .charged();
    Ok(InFlight {
        kind,
        response,
        acks,
        generation: session.generation,
        sent_at: Instant::now(),
        sent_wall_ms: shared.clock.now_ms(),
        asked_records: false,
        held: 0,
    })
}

/// The acks queued for a request about to go out, the gaps held beside records brought up to
/// date at the wall clock's now (`AckQueue::take_at`).
fn take_acks(shared: &Shared, me: &FetcherHandle) -> (Vec<TopicAcks>, AcksInFlight) {
    let lock_ms = i64::from(shared.lock_timeout_ms.load(Relaxed).max(0));
    me.acks
        .lock()
        .expect("acks")
        .take_at(shared.clock.now_ms(), lock_ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::time::Duration;

    #[test]
    fn a_share_fetch_takes_its_records_and_a_default_sized_first_batch() {
        let overhead = 4 * 1024 * 1024;
        assert_eq!(share_fetch_response_bound(50 << 20), (50 << 20) + overhead);
        // fetch.max.bytes under a default batch: that batch still fits.
        assert_eq!(share_fetch_response_bound(1), 1024 * 1024 + 12 + overhead);
        assert_eq!(share_fetch_response_bound(-1), 1024 * 1024 + 12 + overhead);
    }

    fn config(extra: &[(&str, &str)]) -> crate::config::ConsumerConfig {
        let props: HashMap<String, String> =
            [("bootstrap.servers", "127.0.0.1:9"), ("group.id", "g")]
                .iter()
                .chain(extra)
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
        crate::config::ConsumerConfig::from_properties(&props).unwrap()
    }

    fn shared() -> Shared {
        let config = config(&[
            ("fetch.max.wait.ms", "500"),
            ("share.fetch.max.wait.held.ms", "50"),
        ]);
        let cluster = crate::cluster::Cluster::new(
            vec!["127.0.0.1:9".into()],
            "c".into(),
            Duration::from_secs(1),
            config.security.clone(),
        );
        Shared::new(
            config,
            "m".into(),
            cluster,
            2,
            2,
            crate::memory::MemoryPool::unbounded(),
        )
    }

    fn max_wait(s: &Shared, carries_acks: bool, empty_fetches: u32, caught_up: bool) -> Duration {
        fetch_wait(s, carries_acks, empty_fetches, caught_up).max_wait
    }

    #[test]
    fn a_member_holding_nothing_backs_off_to_the_long_poll() {
        let s = shared();
        // Just served: a short wait (a window freed by acks would not wake a parked fetch).
        assert_eq!(max_wait(&s, false, 0, false), Duration::from_millis(5));
        // Each empty fetch doubles it, up to fetch.max.wait.ms.
        assert_eq!(max_wait(&s, false, 1, false), Duration::from_millis(10));
        assert_eq!(max_wait(&s, false, 3, false), Duration::from_millis(40));
        assert_eq!(max_wait(&s, false, 7, false), Duration::from_millis(500));
        assert_eq!(
            max_wait(&s, false, u32::MAX, false),
            Duration::from_millis(500)
        );
        // Carrying acks: short, however long the topic has been quiet.
        assert_eq!(max_wait(&s, true, 9, false), Duration::from_millis(5));
    }

    #[test]
    fn a_member_holding_records_parks_only_a_fetch_that_carries_acks() {
        let s = shared();
        s.metrics.records_in_flight.store(10, Relaxed);
        // A parked fetch without acks would hold up the acks that free the window.
        assert_eq!(max_wait(&s, false, 0, false), Duration::ZERO);
        assert_eq!(max_wait(&s, false, 5, false), Duration::ZERO);
        assert_eq!(max_wait(&s, true, 0, false), Duration::from_millis(5));
    }

    #[test]
    fn a_member_holding_records_that_read_to_the_end_waits_briefly_for_the_next() {
        let s = shared();
        s.metrics.records_in_flight.store(10, Relaxed);
        // Its last fetch brought less than it asked for: what comes next is not there yet. The
        // broker holds the fetch for the whole wait (or a full response), not for the first
        // producer batch to land.
        assert_eq!(
            fetch_wait(&s, false, 0, true),
            FetchWait {
                max_wait: Duration::from_millis(2),
                min_bytes: s.config.fetch_max_bytes,
            }
        );
        // Carrying acks, the usual short wait, answered as soon as records arrive.
        assert_eq!(
            fetch_wait(&s, true, 0, true),
            FetchWait {
                max_wait: Duration::from_millis(5),
                min_bytes: 1,
            }
        );
        // Holding nothing, the long poll as before.
        s.metrics.records_in_flight.store(0, Relaxed);
        assert_eq!(max_wait(&s, false, 0, true), Duration::from_millis(5));
    }

    #[test]
    fn the_pause_after_an_empty_fetch_while_holding_records_starts_short_and_doubles() {
        let s = shared(); // share.fetch.max.wait.held.ms 50
        let ms = |n| held_quiet(&s, n, false).as_millis();
        // New records of a live topic are fetched within a millisecond or two...
        assert_eq!((ms(1), ms(2), ms(3)), (1, 2, 4));
        // ...and a member that keeps finding nothing new is back at the full pause.
        assert_eq!((ms(6), ms(7), ms(40)), (32, 50, 50));
        assert_eq!(ms(u32::MAX), 50);
    }

    #[test]
    fn an_empty_fetch_after_a_full_one_pauses_until_acks_free_the_window() {
        let s = shared(); // share.fetch.max.wait.held.ms 50
        let ms = |n| held_quiet(&s, n, true).as_millis();
        // The log had more than the last fetch took: the window is full, and only acks (which
        // end the pause at once) free it; fetching again in 1 ms would find it full again.
        assert_eq!((ms(1), ms(2), ms(40)), (50, 50, 50));
    }

    #[test]
    fn the_initial_wait_never_exceeds_the_long_poll() {
        let c = config(&[("fetch.max.wait.ms", "2")]);
        assert_eq!(c.fetch_wait_initial, Duration::from_millis(2));
    }
}
