//! A fetcher's whole loop against a fake leader (`fake_broker`): share-session hygiene on a
//! leader change, as Kafka 4.4's client does it (issue 35). A partition the broker no longer
//! leads leaves its session at once, an emptied session sends its pending acks before it
//! closes, and session errors heal without a WARN each.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{oneshot, watch};
use uuid::Uuid;

use super::fake_broker::{FakeLeader, Seen};
use super::run;
use crate::acks::{AckKind, AckOutcome, PartitionKey, PendingAck};
use crate::fetcher_handle::FetcherHandle;
use crate::protocol::error_codes::*;
use crate::shared::Shared;

const TOPIC: Uuid = Uuid::from_u128(0x35);
const WITHIN: Duration = Duration::from_secs(3);

fn keys(partitions: &[i32]) -> BTreeSet<PartitionKey> {
    partitions.iter().map(|p| (TOPIC, *p)).collect()
}

/// A member speaking ShareFetch/ShareAcknowledge v1 (what the fake decodes), long polls of at
/// most 50 ms.
fn shared() -> Arc<Shared> {
    let props = [
        ("bootstrap.servers", "127.0.0.1:9"),
        ("group.id", "g"),
        ("fetch.max.wait.ms", "50"),
        ("request.timeout.ms", "2000"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let config = crate::config::ConsumerConfig::from_properties(&props).unwrap();
    let cluster = crate::cluster::Cluster::new(
        vec!["127.0.0.1:9".into()],
        "c".into(),
        Duration::from_secs(1),
        config.security.clone(),
    );
    Arc::new(Shared::new(
        config,
        "m".into(),
        cluster,
        1,
        1,
        crate::memory::MemoryPool::unbounded(),
    ))
}

struct Running {
    shared: Arc<Shared>,
    me: Arc<FetcherHandle>,
    leader: FakeLeader,
    _stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A fetcher holding `partitions` of the fake leader, past its session's opening fetch.
async fn start(partitions: &[i32]) -> Running {
    let leader = FakeLeader::start().await;
    let shared = shared();
    let me = Arc::new(FetcherHandle::new(1, leader.addr.clone()));
    me.set_desired(keys(partitions));
    let (stop, closing) = watch::channel(false);
    let task = tokio::spawn(run(shared.clone(), me.clone(), closing));
    let mut r = Running {
        shared,
        me,
        leader,
        _stop: stop,
        task,
    };
    let opening = r.leader.next(WITHIN).await.expect("no opening fetch");
    assert_eq!(opening.epoch(), 0);
    r
}

/// The caller accepts offsets 0-9 of `partition`; the receiver gets the broker's verdict.
fn accept(me: &FetcherHandle, partition: i32) -> oneshot::Receiver<AckOutcome> {
    let (tx, rx) = oneshot::channel();
    me.push_ack(
        (TOPIC, partition),
        PendingAck::from_caller(0, 9, AckKind::Accept as i8, Some(tx)),
        false,
    );
    rx
}

async fn verdict(rx: oneshot::Receiver<AckOutcome>) -> i16 {
    tokio::time::timeout(WITHIN, rx)
        .await
        .expect("the ack was never answered")
        .expect("the ack was dropped")
        .0
}

#[tokio::test]
async fn a_partition_its_broker_no_longer_leads_leaves_the_session_at_once() {
    let mut r = start(&[0, 3]).await;
    // The broker lost partition 0's leadership; the router has not looked yet, so this
    // fetcher is still asked to hold it.
    r.leader
        .script
        .lock()
        .unwrap()
        .partition_errors
        .insert(0, (NOT_LEADER_OR_FOLLOWER, NONE));
    let (before, forget) = r.leader.until(WITHIN, |s| s.forgotten().contains(&0)).await;
    let forget = forget.expect("partition 0 never left the old leader's share session");
    assert!(
        forget.epoch() > 0 && before.iter().all(|s| s.epoch() > 0),
        "the session went on, not reopened: {before:?} {forget:?}"
    );
    assert_eq!(r.shared.metrics.snapshot().session_resets, 0);
    // Partition 3 is still fetched; partition 0 is not asked for until the router says again.
    let later = r.leader.next(WITHIN).await.expect("fetching stopped");
    assert!(!later.named().contains(&0), "{later:?}");
    // The router looked, and its metadata still names this broker: it is asked for again.
    r.leader.script.lock().unwrap().partition_errors.clear();
    r.me.set_desired(keys(&[0, 3]));
    let (_, back) = r
        .leader
        .until(WITHIN, |s| s.epoch() > 0 && s.named().contains(&0))
        .await;
    assert!(back.is_some(), "partition 0 was never asked for again");
}

#[tokio::test]
async fn acks_refused_by_a_broker_that_lost_the_partition_leave_its_session_alone() {
    let mut r = start(&[0, 3]).await;
    // As Kafka 4.4 answers an old leader's acks: the share-partition is gone from its cache.
    r.leader
        .script
        .lock()
        .unwrap()
        .partition_errors
        .insert(0, (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION));
    let rx = accept(&r.me, 0);
    assert_eq!(
        verdict(rx).await,
        UNKNOWN_TOPIC_OR_PARTITION,
        "the failed ack is reported, not lost"
    );
    let (seen, reopened) = r
        .leader
        .until(Duration::from_millis(500), |s| s.epoch() == 0)
        .await;
    assert!(
        reopened.is_none(),
        "the old leader's session was reopened: {seen:?} {reopened:?}"
    );
    assert_eq!(r.shared.metrics.snapshot().session_resets, 0);
}

#[tokio::test]
async fn an_emptied_session_sends_its_acks_then_closes() {
    let mut r = start(&[0]).await;
    // The caller acks, and the router moves partition 0 to another leader: nothing routes
    // acks here any more.
    let rx = accept(&r.me, 0);
    r.me.set_desired(BTreeSet::new());
    let (before, close) = r.leader.until(WITHIN, |s| s.epoch() == -1).await;
    let close = close.expect("the empty share session was never closed");
    assert!(
        before.iter().any(|s| s.acked().contains(&0)),
        "the close came before the acks: {before:?}"
    );
    assert!(
        before.iter().any(|s| s.forgotten().contains(&0)),
        "partition 0 was never removed from the session: {before:?}"
    );
    assert!(matches!(close, Seen::Ack(_)) && close.acked().is_empty());
    assert_eq!(verdict(rx).await, NONE, "the acks applied before the close");
    assert!(
        r.leader.next(Duration::from_millis(300)).await.is_none(),
        "requests after the close"
    );
    // Partitions coming back open a new session, which is no reset.
    r.me.set_desired(keys(&[0]));
    let reopened = r.leader.next(WITHIN).await.expect("never reopened");
    assert_eq!(reopened.epoch(), 0);
    assert_eq!(r.shared.metrics.snapshot().session_resets, 0);
}

#[tokio::test]
async fn an_emptied_session_stays_open_while_acks_may_still_come_here() {
    let mut r = start(&[0]).await;
    // Partition 0 was revoked (not moved): acks for the records the caller holds still come
    // to this leader.
    r.shared.set_route(&Arc::from("t"), 0, TOPIC, r.me.clone());
    r.shared
        .metrics
        .records_in_flight
        .store(10, std::sync::atomic::Ordering::Relaxed);
    r.me.set_desired(BTreeSet::new());
    let (_, forget) = r.leader.until(WITHIN, |s| s.forgotten().contains(&0)).await;
    assert!(forget.is_some(), "partition 0 never left the session");
    let (seen, early) = r
        .leader
        .until(Duration::from_millis(500), |s| s.epoch() == -1)
        .await;
    assert!(
        early.is_none(),
        "closed while the caller held records: {seen:?}"
    );
    // The caller settles: its acks go out on the open session, then it closes.
    let rx = accept(&r.me, 0);
    r.shared
        .metrics
        .records_in_flight
        .store(0, std::sync::atomic::Ordering::Relaxed);
    r.me.wake.notify_one();
    let (before, close) = r.leader.until(WITHIN, |s| s.epoch() == -1).await;
    assert!(close.is_some(), "never closed once nothing was held");
    assert!(
        before
            .iter()
            .any(|s| s.acked().contains(&0) && s.epoch() > 0),
        "{before:?}"
    );
    assert_eq!(verdict(rx).await, NONE);
}

/// Counts the engine's WARN events while a test runs (on the test's thread: the fetcher and
/// its connection run there, on the current-thread runtime).
fn count_warnings() -> (Arc<AtomicUsize>, tracing::subscriber::DefaultGuard) {
    use tracing_subscriber::layer::SubscriberExt;
    struct Counter(Arc<AtomicUsize>);
    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Counter {
        fn on_event(
            &self,
            event: &tracing::Event<'_>,
            _: tracing_subscriber::layer::Context<'_, S>,
        ) {
            if *event.metadata().level() <= tracing::Level::WARN {
                self.0.fetch_add(1, SeqCst);
            }
        }
    }
    let n = Arc::new(AtomicUsize::new(0));
    let subscriber = tracing_subscriber::registry().with(Counter(n.clone()));
    (n, tracing::subscriber::set_default(subscriber))
}

#[tokio::test]
async fn session_errors_heal_without_a_warning_and_the_acks_go_again() {
    let (warnings, _guard) = count_warnings();
    let mut r = start(&[0]).await;
    r.leader
        .script
        .lock()
        .unwrap()
        .fetch_errors
        .extend([SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH].repeat(2));
    let rx = accept(&r.me, 0);
    assert_eq!(
        verdict(rx).await,
        NONE,
        "the acks were resent on the healed session"
    );
    let _ = r.leader.until(Duration::from_millis(200), |_| false).await;
    assert_eq!(r.shared.metrics.snapshot().session_resets, 4);
    assert_eq!(
        warnings.load(SeqCst),
        0,
        "session errors that healed warned"
    );
}

#[tokio::test]
async fn a_session_that_does_not_heal_warns_once() {
    let (warnings, _guard) = count_warnings();
    let mut r = start(&[0]).await;
    r.leader
        .script
        .lock()
        .unwrap()
        .fetch_errors
        .extend([SHARE_SESSION_NOT_FOUND; 12]);
    let rx = accept(&r.me, 0);
    assert_eq!(verdict(rx).await, NONE);
    let _ = r.leader.until(Duration::from_millis(200), |_| false).await;
    assert_eq!(r.shared.metrics.snapshot().session_resets, 12);
    assert_eq!(
        warnings.load(SeqCst),
        1,
        "one WARN for the whole run of errors"
    );
}
