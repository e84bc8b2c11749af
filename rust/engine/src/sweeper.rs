//! The buffer sweeper: looks after the batches waiting in the delivery buffer (fetched, not yet
//! polled) while the caller does not poll them.
//!
//! - Their locks are RENEWed once a third of a lock has passed, and the batch's lock deadline
//!   moves on when the broker confirms, so a caller stuck in a slow call (a sink blocked on its database)
//!   costs the records no delivery attempt: each release or lock expiry would.
//! - Once the caller has not polled for `share.buffer.hold.max.ms` they are RELEASEd for other
//!   members, and fetching stops until the caller polls again: the Java driver releases what it
//!   holds after `share.task.stuck.timeout.ms` the same way, so the member behaves as one.
//! - A batch whose lock ran out anyway, or whose renewal the broker refused, is dropped: it is no
//!   longer this member's, and handing it out would only produce duplicates and failing acks.
//!
//! A broker without RENEW (ShareAcknowledge v1) gets the former rule: a batch is released once
//! half its lock has passed.
//!
//! The broker applies one partition's acknowledgements in a request all or nothing, so a refusal
//! can take down ranges whose locks were fine (a renewal sent with one whose lock had just run
//! out); they are dropped too. Renewing well ahead of the deadline keeps that rare.

use std::collections::HashSet;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot::{self, error::TryRecvError};
use tracing::{debug, warn};

use crate::acks::{Ack, AckKind, AckOutcome, PendingAck};
use crate::batch::Batch;
use crate::protocol::error_codes::{self, NONE};
use crate::shared::Shared;

/// How often the buffer is looked at.
const SWEEP_INTERVAL: Duration = Duration::from_millis(250);

/// A buffered batch is renewed once no more than this part of its lock is left. Early, so that a
/// broker that stalls still gets the RENEW in time: on the 2-core test machine a broker froze for
/// 10.6 s ("Exceptionally slow controller event"), longer than half the 15 s minimum lock, and
/// the renewal sent half a lock before the deadline was refused when it came out.
const RENEW_WHEN_LEFT: f64 = 2.0 / 3.0;

/// Without RENEW a batch is released once no more than this part of its lock is left (the former
/// rule, `share.buffer.max.lock.fraction` = 0.5): before a late release would find it expired.
const RELEASE_WHEN_LEFT: f64 = 0.5;

pub(crate) async fn run(shared: Arc<Shared>) {
    let mut sweeper = Sweeper::default();
    let mut tick = tokio::time::interval(SWEEP_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        sweeper.sweep(&shared);
    }
}

/// A RENEW sent for one buffered batch, range by range.
struct Renewal {
    batch: u64,
    /// Wall clock at sending: the renewed lock runs from about then (later, never earlier).
    sent_ms: i64,
    /// The lock duration known at sending, if the answer brings none.
    lock_ms: i64,
    ranges: Vec<(Ack, oneshot::Receiver<AckOutcome>)>,
}

#[derive(Default)]
struct Sweeper {
    /// Renewals not answered yet; a batch gets no second one meanwhile.
    renewals: Vec<Renewal>,
    /// The hold bound passed and that was logged; cleared once the caller polls again.
    past_hold: bool,
}

impl Sweeper {
    fn sweep(&mut self, shared: &Shared) {
        self.collect_answers(shared);
        let idle = shared.buffer.idle_for();
        let hold = shared.config.buffer_hold_max;
        if idle <= hold {
            self.past_hold = false;
        }
        if shared.buffer.len_records() == 0 {
            return;
        }
        if idle > hold {
            self.release_past_hold(shared, idle);
            return;
        }
        let now = shared.clock.now_ms();
        drop_expired(shared, now);
        let lock_ms = shared.lock_timeout_ms.load(Relaxed) as i64;
        if lock_ms > 0 {
            self.renew_due(shared, now, lock_ms);
        }
    }

    /// Applies the broker's answers: a renewed range's lock deadline moves on; a refused range's
    /// records are dropped. A range whose answer was lost (its waiter dropped) is renewed again
    /// when due.
    fn collect_answers(&mut self, shared: &Shared) {
        self.renewals.retain_mut(|renewal| {
            let (batch, sent_ms, lock_ms) = (renewal.batch, renewal.sent_ms, renewal.lock_ms);
            renewal.ranges.retain_mut(|(range, answer)| {
                match answer.try_recv() {
                    Err(TryRecvError::Empty) => return true,
                    Err(TryRecvError::Closed) => {}
                    Ok((NONE, _)) => {
                        // The answer's AcquisitionLockTimeoutMs, stored before waiters resolve.
                        let lock = match shared.lock_timeout_ms.load(Relaxed) as i64 {
                            ms if ms > 0 => ms,
                            _ => lock_ms,
                        };
                        let deadline = sent_ms + lock;
                        shared
                            .buffer
                            .update(batch, |b| b.extend_lock(range, deadline));
                        let n = range_len(range);
                        shared
                            .metrics
                            .records_renewed_unpolled
                            .fetch_add(n, Relaxed);
                        debug!(topic = %range.topic, partition = range.partition,
                               first = range.first_offset, last = range.last_offset, deadline,
                               "buffered records renewed");
                    }
                    Ok((code, message)) => {
                        let dropped = shared
                            .buffer
                            .update(batch, |b| b.remove_range(range))
                            .unwrap_or(0);
                        if dropped > 0 {
                            shared
                                .metrics
                                .records_buffered
                                .fetch_sub(dropped as i64, Relaxed);
                            shared
                                .metrics
                                .records_expired
                                .fetch_add(dropped as u64, Relaxed);
                        }
                        warn!(topic = %range.topic, partition = range.partition,
                              first = range.first_offset, last = range.last_offset, code,
                              name = error_codes::name(code), ?message, dropped,
                              "the broker refused to renew buffered records; dropping them");
                    }
                }
                false
            });
            !renewal.ranges.is_empty()
        });
    }

    fn release_past_hold(&mut self, shared: &Shared, idle: Duration) {
        let batches = shared.buffer.take_unpolled(|_| true);
        let records: usize = batches.iter().map(Batch::len).sum();
        let hold = shared.config.buffer_hold_max;
        if !self.past_hold {
            warn!(
                records,
                idle_ms = idle.as_millis() as u64,
                "the caller has not polled for longer than share.buffer.hold.max.ms={} ms: \
                 releasing its buffered records so that other members deliver them (each costs \
                 one delivery attempt); no more are fetched until it polls again",
                hold.as_millis()
            );
            self.past_hold = true;
        } else {
            debug!(records, "releasing buffered records past the hold bound");
        }
        release(shared, batches);
    }

    fn renew_due(&mut self, shared: &Shared, now: i64, lock_ms: i64) {
        let renewing: HashSet<u64> = self.renewals.iter().map(|r| r.batch).collect();
        let left_at_most = |part: f64| {
            let left = (lock_ms as f64 * part) as i64;
            move |b: &Batch| b.lock_deadline_ms().is_some_and(|d| d - now <= left)
        };
        if shared.share_acknowledge_version < 2 {
            let batches = shared.buffer.take_unpolled(left_at_most(RELEASE_WHEN_LEFT));
            if !batches.is_empty() {
                warn!(
                    records = batches.iter().map(Batch::len).sum::<usize>(),
                    "releasing buffered records the caller did not poll within half their lock: \
                     the broker cannot renew locks (no ShareAcknowledge v2)"
                );
                release(shared, batches);
            }
            return;
        }
        let due = left_at_most(RENEW_WHEN_LEFT);
        let batches = shared.buffer.inspect(|b| {
            (!renewing.contains(&b.id) && due(b)).then(|| (b.id, b.acks(AckKind::Renew)))
        });
        for (batch, acks) in batches.into_iter().flatten() {
            let mut ranges = Vec::with_capacity(acks.len());
            for ack in acks {
                let Some((topic_id, fetcher)) = shared.route(&ack.topic, ack.partition) else {
                    continue;
                };
                let (tx, rx) = oneshot::channel();
                fetcher.push_ack(
                    (topic_id, ack.partition),
                    PendingAck::from_engine_waiting(
                        ack.first_offset,
                        ack.last_offset,
                        AckKind::Renew as i8,
                        tx,
                    ),
                    true,
                );
                ranges.push((ack, rx));
            }
            debug!(batch, ranges = ranges.len(), "renewing buffered records");
            self.renewals.push(Renewal {
                batch,
                sent_ms: now,
                lock_ms,
                ranges,
            });
        }
    }
}

/// Drops batches whose lock has run out: the broker may have handed them to another member.
fn drop_expired(shared: &Shared, now: i64) {
    let expired = shared
        .buffer
        .take_where(|b| b.lock_deadline_ms().is_some_and(|d| d <= now));
    let records: usize = expired.iter().map(Batch::len).sum();
    if records > 0 {
        warn!(
            records,
            "dropping buffered records whose acquisition lock expired"
        );
        shared
            .metrics
            .records_buffered
            .fetch_sub(records as i64, Relaxed);
        shared
            .metrics
            .records_expired
            .fetch_add(records as u64, Relaxed);
    }
}

/// RELEASEs batches taken out of the buffer (they were never handed out).
fn release(shared: &Shared, batches: Vec<Batch>) {
    for batch in batches {
        let n = batch.len();
        shared.metrics.records_buffered.fetch_sub(n as i64, Relaxed);
        shared
            .metrics
            .records_released_unpolled
            .fetch_add(n as u64, Relaxed);
        for ack in batch.acks(AckKind::Release) {
            if let Some((topic_id, fetcher)) = shared.route(&ack.topic, ack.partition) {
                fetcher.push_ack(
                    (topic_id, ack.partition),
                    PendingAck::from_engine(
                        ack.first_offset,
                        ack.last_offset,
                        AckKind::Release as i8,
                    ),
                    false,
                );
            }
        }
    }
}

fn range_len(ack: &Ack) -> u64 {
    ack.last_offset.abs_diff(ack.first_offset).saturating_add(1)
}

#[cfg(test)]
mod tests {

    use uuid::Uuid;

    use super::*;
    use crate::clock::WallClock;
    use crate::fetcher_handle::FetcherHandle;

    const LOCK_MS: i64 = 15_000;
    const TOPIC: &str = "t";

    struct Member {
        shared: Arc<Shared>,
        fetcher: Arc<FetcherHandle>,
    }

    /// A member whose lock is known (15 s) and whose partition 0 of `t` routes to a fetcher
    /// that nothing runs: the test answers its acks. Its wall clock follows tokio's.
    fn member(hold_max_ms: &str, share_acknowledge_version: i16) -> Member {
        let mut shared = Shared::for_tests(
            &[("share.buffer.hold.max.ms", hold_max_ms)],
            share_acknowledge_version,
        );
        shared.clock = WallClock::following_tokio();
        shared.lock_timeout_ms.store(LOCK_MS as i32, Relaxed);
        let fetcher = Arc::new(FetcherHandle::new(1, "127.0.0.1:9".into()));
        shared.set_route(&Arc::from(TOPIC), 0, Uuid::from_u128(7), fetcher.clone());
        Member {
            shared: Arc::new(shared),
            fetcher,
        }
    }

    impl Member {
        /// Buffers records `offsets` of partition 0, acquired now (as a fetch would).
        fn fetched(&self, offsets: std::ops::Range<i64>) {
            let deadline = self.shared.clock.now_ms() + LOCK_MS;
            let batch = Batch::for_test(TOPIC, 0, offsets.map(|o| (o, &b"v"[..])), deadline);
            let n = batch.len() as i64;
            self.shared.metrics.records_buffered.fetch_add(n, Relaxed);
            self.shared.buffer.push(batch);
        }

        /// Takes what the sweeper queued for the broker and answers every range with `code`:
        /// (first, last, type) of each range sent.
        fn answer(&self, code: i16) -> Vec<(i64, i64, i8)> {
            let (topics, in_flight) = self.fetcher.acks.lock().unwrap().take();
            in_flight.resolve_all((code, None));
            topics
                .iter()
                .flat_map(|t| &t.partitions)
                .flat_map(|p| &p.batches)
                .map(|b| (b.first_offset, b.last_offset, b.types[0]))
                .collect()
        }

        /// Lets `time` pass (paused clock), answering the sweeper's requests with `code` as
        /// they come; returns every range it sent.
        async fn run_for(&self, time: Duration, code: i16) -> Vec<(i64, i64, i8)> {
            let until = tokio::time::Instant::now() + time;
            let mut sent = Vec::new();
            while tokio::time::Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(100)).await;
                sent.extend(self.answer(code));
            }
            sent
        }

        fn deadlines(&self) -> Vec<i64> {
            self.shared
                .buffer
                .inspect(|b| b.lock_deadline_ms().unwrap())
        }

        fn poll_once(&self) -> Option<Batch> {
            let _polling = self.shared.buffer.poll_started(i64::MAX / 2);
            self.shared.buffer.try_take()
        }
    }

    const RENEW: i8 = AckKind::Renew as i8;
    const RELEASE: i8 = AckKind::Release as i8;

    #[tokio::test(start_paused = true)]
    async fn unpolled_batches_are_renewed_not_released_within_the_hold_bound() {
        let m = member("900000", 2);
        m.fetched(0..3);
        tokio::spawn(run(m.shared.clone()));
        // More than two locks without a poll.
        let sent = m
            .run_for(Duration::from_millis(2 * LOCK_MS as u64 + 3_000), NONE)
            .await;
        // Renewed every third of a lock: at 5, 10, .. 30 s.
        assert_eq!(sent, vec![(0, 2, RENEW); 6], "{sent:?}");
        let now = m.shared.clock.now_ms();
        let deadlines = m.deadlines();
        assert_eq!(deadlines.len(), 1);
        assert!(
            deadlines[0] - now > LOCK_MS * 2 / 3,
            "{} ms left",
            deadlines[0] - now
        );
        let snapshot = m.shared.metrics.snapshot();
        assert_eq!(snapshot.records_renewed_unpolled, 18);
        assert_eq!(
            (snapshot.records_released_unpolled, snapshot.records_expired),
            (0, 0)
        );
        assert_eq!(snapshot.records_buffered, 3);
        // The caller gets them as held, with the renewed deadline.
        let batch = m.poll_once().expect("still buffered");
        assert!(batch
            .records()
            .all(|r| r.lock_deadline_ms() == deadlines[0]));
        assert!(m.shared.buffer.has_room());
    }

    #[tokio::test(start_paused = true)]
    async fn past_the_hold_bound_unpolled_batches_are_released() {
        let m = member("18000", 2);
        m.fetched(0..3);
        tokio::spawn(run(m.shared.clone()));
        let sent = m.run_for(Duration::from_secs(17), NONE).await;
        assert_eq!(sent, vec![(0, 2, RENEW); 3], "{sent:?}");
        let sent = m.run_for(Duration::from_secs(2), NONE).await;
        assert_eq!(sent, vec![(0, 2, RELEASE)]);
        assert!(m.deadlines().is_empty());
        assert!(
            !m.shared.buffer.has_room(),
            "fetching goes on for a stuck caller"
        );
        // A batch a fetch already under way brings is released too.
        m.fetched(3..5);
        let sent = m.run_for(Duration::from_secs(1), NONE).await;
        assert_eq!(sent, vec![(3, 4, RELEASE)]);
        let snapshot = m.shared.metrics.snapshot();
        assert_eq!(snapshot.records_released_unpolled, 5);
        assert_eq!(snapshot.records_buffered, 0);
        // A poll resumes fetching.
        assert!(m.poll_once().is_none());
        assert!(m.shared.buffer.has_room());
    }

    #[tokio::test(start_paused = true)]
    async fn the_hold_bound_counts_from_the_last_poll() {
        let m = member("18000", 2);
        m.fetched(0..3);
        m.fetched(3..6);
        tokio::spawn(run(m.shared.clone()));
        m.run_for(Duration::from_secs(15), NONE).await;
        // The caller takes one batch; the other waits on, renewed.
        assert_eq!(m.poll_once().expect("a batch").len(), 3);
        let sent = m.run_for(Duration::from_secs(17), NONE).await;
        assert!(sent.iter().all(|s| *s == (3, 5, RENEW)), "{sent:?}");
        assert_eq!(m.deadlines().len(), 1);
        let sent = m.run_for(Duration::from_secs(2), NONE).await;
        assert_eq!(sent, vec![(3, 5, RELEASE)]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_refused_renewal_drops_the_batch() {
        let m = member("900000", 2);
        m.fetched(0..3);
        tokio::spawn(run(m.shared.clone()));
        let sent = m
            .run_for(Duration::from_secs(6), error_codes::INVALID_RECORD_STATE)
            .await;
        assert_eq!(sent, vec![(0, 2, RENEW)]);
        assert!(m.deadlines().is_empty(), "a batch whose lock is lost stays");
        assert!(m.poll_once().is_none());
        let snapshot = m.shared.metrics.snapshot();
        assert_eq!(
            (snapshot.records_expired, snapshot.records_buffered),
            (3, 0)
        );
        assert_eq!(snapshot.records_released_unpolled, 0);
        // Nothing more is sent for it.
        assert!(m.run_for(Duration::from_secs(20), NONE).await.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn an_unanswered_renewal_is_not_taken_for_a_renewed_lock() {
        let m = member("900000", 2);
        m.fetched(0..3);
        tokio::spawn(run(m.shared.clone()));
        tokio::time::sleep(Duration::from_secs(6)).await;
        // The request is lost with its connection: the waiter goes unanswered.
        let (_, in_flight) = m.fetcher.acks.lock().unwrap().take();
        drop(in_flight);
        tokio::time::sleep(Duration::from_millis(500)).await;
        let deadline = m.deadlines()[0];
        // Renewed again, and the old deadline still stands until an answer comes.
        assert_eq!(m.answer(NONE), vec![(0, 2, RENEW)]);
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(m.deadlines()[0] > deadline);
    }

    #[tokio::test(start_paused = true)]
    async fn an_expired_batch_is_dropped_not_renewed() {
        let m = member("900000", 2);
        m.fetched(0..3);
        // The sweeper did not get a turn while the lock ran.
        tokio::time::advance(Duration::from_millis(LOCK_MS as u64 + 1)).await;
        tokio::spawn(run(m.shared.clone()));
        let sent = m.run_for(Duration::from_secs(1), NONE).await;
        assert!(sent.is_empty(), "{sent:?}");
        assert!(m.deadlines().is_empty());
        assert_eq!(m.shared.metrics.snapshot().records_expired, 3);
    }

    #[tokio::test(start_paused = true)]
    async fn without_renew_a_batch_is_released_at_half_its_lock() {
        let m = member("900000", 1);
        m.fetched(0..3);
        tokio::spawn(run(m.shared.clone()));
        let sent = m.run_for(Duration::from_secs(7), NONE).await;
        assert!(sent.is_empty(), "{sent:?}");
        let sent = m.run_for(Duration::from_secs(1), NONE).await;
        assert_eq!(sent, vec![(0, 2, RELEASE)]);
        assert!(!m.shared.buffer.has_room());
    }
}
