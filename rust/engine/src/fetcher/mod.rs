//! One share session with one leader broker, on its own connection: keeps a ShareFetch
//! outstanding whenever the delivery buffer has room (pausing after an empty one while the
//! member holds records, until it has acks to carry), piggy-backs finished acknowledgements
//! on it, and sends ShareAcknowledge only for acks that cannot wait (sync acks, renewals,
//! a full buffer). Closing sends epoch −1, which releases every record still held.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::messages::ApiKey;
use tokio::sync::watch;
use tracing::{debug, info};

use crate::acks::{AcksInFlight, PartitionKey};
use crate::connection::{ChargedResponseFuture, Connection};
use crate::fetcher_handle::FetcherHandle;
use crate::protocol::error_codes::*;
use crate::protocol::share_requests::{ShareAcknowledgeRequest, ShareAcknowledgeResponse};
use crate::shared::Shared;

#[cfg(test)]
mod fake_broker;
mod fetch_size;
#[cfg(test)]
mod fold_tests;
#[cfg(test)]
mod memory_tests;
mod missing;
mod probe;
mod receive;
mod send;
#[cfg(test)]
mod session_tests;
mod stall;
#[cfg(test)]
mod window_tests;

use receive::handle_response;
use send::send_next;
use stall::StallWatch;

const RECONNECT_BACKOFF: Duration = Duration::from_millis(500);
const CLOSE_EPOCH: i32 = -1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RequestKind {
    Fetch,
    Acknowledge,
}

struct InFlight {
    kind: RequestKind,
    response: ChargedResponseFuture,
    acks: AcksInFlight,
    /// Session generation the request belongs to; a stale session error must not reset a
    /// newer session.
    generation: u64,
    sent_at: Instant,
    sent_wall_ms: i64,
    /// A ShareFetch that asked for records (not one that only carried acks).
    asked_records: bool,
    /// What the member held of this leader's partitions when it was sent (`Session::held`).
    held: u64,
}

struct Session {
    conn: Option<Arc<Connection>>,
    epoch: i32,
    generation: u64,
    partitions: BTreeSet<PartitionKey>,
    /// Set when a fetch came back empty while this member held records: the broker's window
    /// is likely full of them. Until then, only a fetch carrying acks (which free the window)
    /// is worth sending.
    quiet_until: Option<tokio::time::Instant>,
    /// Fetches in a row that asked for records and got none: the next long poll waits
    /// `share.fetch.wait.initial.ms` doubled this many times (at most `fetch.max.wait.ms`).
    empty_fetches: u32,
    /// The last fetch brought some records but fewer than it asked for: this member had read
    /// what there was, so the next one may wait briefly on the broker for what comes next.
    caught_up: bool,
    /// The last fetch that brought records took more than it asked for (whole log batches past
    /// its ask): the log held more than it took. An empty fetch after it found the window full,
    /// not the end of the log.
    left_more: bool,
    /// Partitions the broker said it lacks, left out of the session for a while; kept across
    /// reopenings (that is what it is for).
    missing: missing::MissingPartitions,
    /// Partitions the broker said it no longer leads (NOT_LEADER_OR_FOLLOWER,
    /// FENCED_LEADER_EPOCH), with the router's count of answers (`FetcherHandle::applied`) at
    /// that moment: they leave the session with the next request, without waiting for the
    /// router, and stay out until the router has looked again (as Kafka 4.4's client moves a
    /// partition to the leader a fetch error names). Kept across reopenings.
    lost: BTreeMap<PartitionKey, u64>,
    /// Session errors (SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH,
    /// SHARE_SESSION_LIMIT_REACHED) in a row, each healed by reopening the session: logged at
    /// DEBUG until [`SESSION_ERRORS_BEFORE_WARN`] in a row show it does not heal. Kept across
    /// reopenings; a response without a session error ends the run.
    session_errors: u32,
    /// Records this fetcher has delivered (all sessions): less what the caller settled through
    /// its ack queue, what the member holds here (`held`).
    delivered: u64,
    /// What the member held here when a fetch without acks, after one that took whole log
    /// batches past its ask, came back empty: the share-partitions' record-lock windows were
    /// full at that much. While the member holds as much again, another such fetch would come
    /// back empty too, and is not sent (`send::window_full`). Forgotten when the session is
    /// reopened, or when a fetch sent at that much brought records after all.
    full_at: Option<u64>,
    /// A response did not fit in memory: no fetch asks for records before then (see
    /// `receive::memory_ran_short`). Kept across reopenings.
    memory_pause_until: Option<tokio::time::Instant>,
    /// The record size the responses showed, which sizes the next fetch. Kept across
    /// reopenings (the topic's records do not change with the session).
    fetch_size: fetch_size::FetchSize,
}

/// Session errors in a row after which one WARN says the share session does not heal.
const SESSION_ERRORS_BEFORE_WARN: u32 = 5;

impl Session {
    /// Records the member holds of what this fetcher delivered: delivered, less settled by the
    /// caller. Records it holds otherwise (expired, released unpolled, acknowledged through
    /// another leader after a move) make this too high by a steady amount, which the window
    /// test (`full_at`) compares against a figure taken the same way.
    fn held(&self, me: &FetcherHandle) -> u64 {
        let settled = me.acks.lock().expect("acks").settled_by_caller();
        self.delivered.saturating_sub(settled)
    }

    /// What an answered ShareFetch that asked for records says of the record-lock windows: one
    /// sent without acks, after a fetch that took whole log batches past its ask, that came
    /// back empty while the member held records found them full at what the member held then;
    /// one sent holding as much that brought records found them larger than that.
    fn fetch_answered(&mut self, carried_acks: bool, held: u64, records: usize, holds: bool) {
        if carried_acks {
            return;
        }
        if records == 0 && self.left_more && holds {
            self.full_at = Some(self.full_at.map_or(held, |at| at.min(held)));
        } else if records > 0 && self.full_at.is_some_and(|at| held >= at) {
            self.full_at = None;
        }
    }

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
        self.quiet_until = None;
        self.empty_fetches = 0;
        self.caught_up = false;
        self.left_more = false;
        self.full_at = None;
        if drop_connection {
            self.conn = None;
        }
    }
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
        quiet_until: None,
        empty_fetches: 0,
        caught_up: false,
        left_more: false,
        missing: Default::default(),
        lost: BTreeMap::new(),
        session_errors: 0,
        delivered: 0,
        full_at: None,
        memory_pause_until: None,
        fetch_size: Default::default(),
    };
    // Fetching waits for memory when the member or the worker holds half its bound: these
    // change when room is made.
    let (mut member_room, mut worker_room) = shared.memory.subscribe_room();
    let mut fetch: Option<InFlight> = None;
    let mut ack: Option<InFlight> = None;
    let mut backoff_until: Option<tokio::time::Instant> = None;
    let mut watch = StallWatch::new(shared.config.partition_stall, tokio::time::Instant::now());
    let mut lag_probe: Option<probe::LagProbe> = None;
    info!(node = me.node_id, addr = %me.addr, "share fetcher started");

    loop {
        let is_closing = *closing.borrow();
        if is_closing && fetch.is_none() && ack.is_none() {
            break;
        }
        #[cfg(any(test, feature = "test-hooks"))]
        if let Some(message) = shared
            .injected_fetcher_panic
            .lock()
            .expect("injected panic")
            .take()
        {
            panic!("{message}");
        }
        me.set_fetch_in_flight(fetch.is_some());
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
                // The connection is gone with the session's records, the gaps held for it too.
                me.acks.lock().expect("acks").forget_all_gaps();
                // A leader that cannot be reached may have lost its partitions to another
                // broker (killed, restarted): look again rather than at the next metadata age.
                shared.refresh_metadata.notify_one();
                backoff_until = Some(tokio::time::Instant::now() + RECONNECT_BACKOFF);
            }
        }
        if !is_closing
            && fetch.is_none()
            && ack.is_none()
            && empty_session_may_close(&shared, &me, &session)
        {
            // Every partition left this leader and its acks are answered: as Kafka 4.4's
            // client does, the broker's session is closed rather than left open and idle
            // (until the broker drops the idle connection, and the next partition to come back
            // finds the session gone). Partitions coming back open a new one.
            close_session(&shared, &me, &mut session).await;
            debug!(node = me.node_id, "closed the empty share session");
            session.reset(true);
            continue;
        }
        watch.session_holds(&session.partitions, tokio::time::Instant::now());
        if lag_probe.is_none() && !is_closing {
            lag_probe = probe::start(&shared, &session, &mut watch);
        }
        let sleep_until = wake_at(
            tokio::time::Instant::now(),
            backoff_until,
            session.quiet_until,
            fetch.is_some(),
        )
        .min(watch.next_check());
        // A partition left out of the session is asked for again when its wait ends.
        let now = tokio::time::Instant::now();
        let sleep_until = session
            .missing
            .next_return(now)
            .map_or(sleep_until, |t| t.min(sleep_until));
        let sleep_until = session
            .memory_pause_until
            .filter(|t| *t > now)
            .map_or(sleep_until, |t| t.min(sleep_until));
        tokio::select! {
            result = async { (&mut fetch.as_mut().expect("guarded").response).await }, if fetch.is_some() => {
                me.set_fetch_in_flight(false);
                let done = fetch.take().expect("guarded");
                if let Err(e) = handle_response(&shared, &me, &mut session, &mut watch, done, result) {
                    debug!(node = me.node_id, error = %e, "share fetch failed");
                    backoff_until = Some(tokio::time::Instant::now() + RECONNECT_BACKOFF);
                }
            }
            result = async { (&mut ack.as_mut().expect("guarded").response).await }, if ack.is_some() => {
                let done = ack.take().expect("guarded");
                if let Err(e) = handle_response(&shared, &me, &mut session, &mut watch, done, result) {
                    debug!(node = me.node_id, error = %e, "share acknowledge failed");
                    backoff_until = Some(tokio::time::Instant::now() + RECONNECT_BACKOFF);
                }
            }
            result = async { (&mut lag_probe.as_mut().expect("guarded").response).await }, if lag_probe.is_some() => {
                let done = lag_probe.take().expect("guarded");
                probe::finish(&shared, &me, &mut session, &mut watch, done, result);
            }
            _ = me.wake.notified() => {}
            _ = space.changed() => {}
            _ = member_room.changed() => {}
            _ = worker_room.changed() => {}
            _ = closing.changed(), if !is_closing => {}
            _ = tokio::time::sleep_until(sleep_until) => {}
        }
    }
    close_session(&shared, &me, &mut session).await;
    info!(node = me.node_id, "share fetcher stopped");
}

/// When the loop wakes up on its own, if nothing else wakes it first: at the end of a backoff, or
/// of the quiet period after an empty fetch (only then may a fetch without acks go out), or in
/// an hour. An instant already past is no reason to wake: a quiet period that ended while no
/// fetch was wanted (a full buffer, a caller that does not poll) made the loop spin.
fn wake_at(
    now: tokio::time::Instant,
    backoff_until: Option<tokio::time::Instant>,
    quiet_until: Option<tokio::time::Instant>,
    fetch_outstanding: bool,
) -> tokio::time::Instant {
    let ahead = |t: &tokio::time::Instant| *t > now;
    backoff_until
        .filter(ahead)
        .or(quiet_until.filter(|t| !fetch_outstanding && ahead(t)))
        .unwrap_or(now + Duration::from_secs(3600))
}

/// Whether this leader's share session is open with nothing in it, nothing for it to do, and no
/// ack that may still come to it: no partition is wanted here, every ack queued here went out
/// and was answered (the caller checks nothing is in flight), and either no partition's acks are
/// routed here any more (all moved to other leaders) or the member holds no records at all
/// (a revoked partition's records, still in the caller's hands, are acknowledged here).
fn empty_session_may_close(shared: &Shared, me: &Arc<FetcherHandle>, session: &Session) -> bool {
    session.epoch > 0
        && session.partitions.is_empty()
        && session.conn.as_ref().is_some_and(|c| !c.is_closed())
        && me.desired().is_empty()
        && me.acks.lock().expect("acks").is_empty()
        && (!send::holds_records(shared) || !shared.routes_to(me))
}

/// Epoch −1: applies the last acks and releases everything else this member holds here.
async fn close_session(shared: &Shared, me: &FetcherHandle, session: &mut Session) {
    let (topics, in_flight) = {
        let now_ms = shared.clock.now_ms();
        let lock_ms = i64::from(shared.lock_timeout_ms.load(Relaxed).max(0));
        let mut q = me.acks.lock().expect("acks");
        // Gaps held for records that will not settle now: settled as Gap before the close
        // releases them (each would otherwise come back to a member, to be acknowledged then),
        // but those too near the end of their lock, which could fail the close's last acks.
        q.settle_held_gaps(now_ms);
        q.take_at(now_ms, lock_ms)
    };
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

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> Session {
        Session {
            conn: None,
            epoch: 1,
            generation: 0,
            partitions: BTreeSet::new(),
            quiet_until: None,
            empty_fetches: 0,
            caught_up: false,
            left_more: false,
            missing: Default::default(),
            lost: BTreeMap::new(),
            session_errors: 0,
            delivered: 0,
            full_at: None,
            memory_pause_until: None,
            fetch_size: Default::default(),
        }
    }

    #[test]
    fn only_an_empty_fetch_without_acks_after_a_backlogged_one_says_the_windows_are_full() {
        let mut s = session();
        // The last fetch with records read to the end of the log, or took its ask only
        // (record_limit): an empty one says nothing of the windows.
        s.fetch_answered(false, 4800, 0, true);
        assert_eq!(s.full_at, None);
        s.left_more = true;
        // Carrying acks, the windows it found were not the ones the member holds now.
        s.fetch_answered(true, 4800, 0, true);
        assert_eq!(s.full_at, None);
        // Holding nothing, the member was at the end of the log.
        s.fetch_answered(false, 0, 0, false);
        assert_eq!(s.full_at, None);
        s.fetch_answered(false, 4800, 0, true);
        assert_eq!(s.full_at, Some(4800));
        assert!(send::window_full(&s, 4800) && send::window_full(&s, 9000));
        assert!(
            !send::window_full(&s, 4799),
            "acks freed part of the windows"
        );
        // The lowest holding found full is the bound.
        s.fetch_answered(false, 5000, 0, true);
        assert_eq!(s.full_at, Some(4800));
        // A fetch that brought records holding less says nothing more.
        s.fetch_answered(false, 2000, 500, true);
        assert_eq!(s.full_at, Some(4800));
        // One sent holding that much that brought records: the windows are larger.
        s.fetch_answered(false, 4800, 500, true);
        assert_eq!(s.full_at, None);
        // A new session learns again.
        s.fetch_answered(false, 4800, 0, true);
        s.reset(false);
        assert_eq!(s.full_at, None);
        s.left_more = true;
        s.full_at = Some(10);
        assert!(send::window_full(&s, 10));
        s.left_more = false;
        assert!(
            !send::window_full(&s, 10),
            "the last fetch took only its ask"
        );
    }

    #[test]
    fn the_loop_never_wakes_for_an_instant_already_past() {
        let now = tokio::time::Instant::now();
        let hour = now + Duration::from_secs(3600);
        let (past, soon) = (
            now - Duration::from_millis(1),
            now + Duration::from_millis(50),
        );
        // The quiet period after an empty fetch ended while no fetch was wanted.
        assert_eq!(wake_at(now, None, Some(past), false), hour);
        assert_eq!(wake_at(now, Some(past), None, false), hour);
        assert_eq!(wake_at(now, None, Some(soon), false), soon);
        assert_eq!(wake_at(now, None, Some(soon), true), hour);
        assert_eq!(wake_at(now, Some(soon), Some(past), false), soon);
        assert_eq!(wake_at(now, Some(past), Some(soon), false), soon);
    }
}
