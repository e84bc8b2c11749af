//! A fetcher's whole loop against a fake leader that hands out records (`fake_broker::Log`):
//! a member whose share-partition windows are full of the records it holds does not send the
//! ShareFetch that would only come back empty (issue 43), and tells its caller so.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use uuid::Uuid;

use super::fake_broker::{FakeLeader, Log, Seen};
use super::run;
use crate::acks::{AckKind, PendingAck};
use crate::batch::Batch;
use crate::fetcher_handle::FetcherHandle;
use crate::shared::Shared;

const TOPIC: Uuid = Uuid::from_u128(0x43);
const WITHIN: Duration = Duration::from_secs(5);

struct Member {
    shared: Arc<Shared>,
    me: Arc<FetcherHandle>,
    leader: FakeLeader,
    _stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Member {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A member of one partition of a fake leader serving `log`; the pause after an empty fetch
/// (or a withheld one) is long (10 s), so that only acks end it within a test.
async fn member(log: Log, settings: &[(&str, &str)]) -> Member {
    let mut leader = FakeLeader::start().await;
    leader.script.lock().unwrap().log = Some(log);
    let mut props: Vec<(&str, &str)> = vec![
        ("fetch.max.wait.ms", "10000"),
        ("share.fetch.max.wait.held.ms", "10000"),
        ("request.timeout.ms", "5000"),
    ];
    props.extend_from_slice(settings);
    // ShareFetch v1, what the fake decodes (record_limit's ask goes as max_records all the same)
    let props = props
        .iter()
        .chain(&[("bootstrap.servers", "127.0.0.1:9"), ("group.id", "g")])
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let config = crate::config::ConsumerConfig::from_properties(&props).unwrap();
    let cluster = crate::cluster::Cluster::new(
        vec!["127.0.0.1:9".into()],
        "c".into(),
        Duration::from_secs(1),
        config.security.clone(),
    );
    let shared = Arc::new(Shared::new(
        config,
        "m".into(),
        cluster,
        1,
        1,
        crate::memory::MemoryPool::unbounded(),
    ));
    shared.learn_topic_names([(TOPIC, &Arc::from("t"))]);
    let me = Arc::new(FetcherHandle::new(1, leader.addr.clone()));
    me.set_desired(BTreeSet::from([(TOPIC, 0)]));
    let (stop, closing) = watch::channel(false);
    let task = tokio::spawn(run(shared.clone(), me.clone(), closing));
    let opening = leader.next(WITHIN).await.expect("no opening fetch");
    assert_eq!(opening.epoch(), 0);
    Member {
        shared,
        me,
        leader,
        _stop: stop,
        task,
    }
}

impl Member {
    /// What a caller's poll does: the next buffered batch, now held by the caller.
    async fn take(&self) -> Batch {
        let deadline = tokio::time::Instant::now() + WITHIN;
        loop {
            let ready = self.shared.buffer.ready.notified();
            tokio::pin!(ready);
            ready.as_mut().enable();
            if let Some(b) = self.shared.buffer.try_take() {
                let n = b.len() as i64;
                self.shared.metrics.records_buffered.fetch_sub(n, Relaxed);
                self.shared.metrics.records_in_flight.fetch_add(n, Relaxed);
                return b;
            }
            tokio::time::timeout_at(deadline, ready)
                .await
                .expect("no records came");
        }
    }

    /// Waits for the member to report that it ran dry (what ends a waiting poll).
    async fn dry(&self) {
        let deadline = tokio::time::Instant::now() + WITHIN;
        loop {
            let ready = self.shared.buffer.ready.notified();
            tokio::pin!(ready);
            ready.as_mut().enable();
            if self.shared.buffer.take_dry() {
                return;
            }
            tokio::time::timeout_at(deadline, ready)
                .await
                .expect("the member never reported running dry");
        }
    }

    fn accept(&self, batch: &Batch) {
        let first = batch.record(0).unwrap().offset();
        let last = batch.record(batch.len() - 1).unwrap().offset();
        self.me.push_ack(
            (TOPIC, 0),
            PendingAck::from_caller(first, last, AckKind::Accept as i8, None),
            false,
        );
    }

    /// The requests the leader has seen so far, without waiting for more.
    fn seen_now(&mut self) -> Vec<Seen> {
        let mut out = Vec::new();
        while let Ok(s) = self.leader.seen.try_recv() {
            out.push(s);
        }
        out
    }
}

fn asks_without_acks(s: &Seen) -> bool {
    matches!(s, Seen::Fetch(r) if r.max_records > 0) && s.acked().is_empty()
}

/// (d)'s cycle: a fetch takes a whole log batch, past the record-lock window; a fetch without
/// acks after it comes back empty, once. From then on the member holding as much again waits
/// for its caller's acks instead of asking, and its caller is told at once that nothing more
/// comes until it settles what it holds.
#[tokio::test]
async fn a_member_whose_windows_are_full_withholds_the_fetch_that_would_come_back_empty() {
    // Log batches of 8 records, a window of 8, asks of 5: every fetch with records fills it.
    let mut m = member(Log::new(8, 8, true), &[("max.poll.records", "5")]).await;
    let first = m.take().await;
    assert_eq!(first.len(), 8);
    // The fetch after it finds the window full: it comes back empty, once.
    let (_, empty) = m.leader.until(WITHIN, asks_without_acks).await;
    assert!(empty.is_some(), "no fetch went ahead of the caller");
    m.dry().await;
    assert_eq!(m.shared.metrics.snapshot().fetches_empty, 1);
    // The caller settles. The windows are full of what it settles: its acks go first, on a
    // ShareAcknowledge (answered once their state is written), and the fetch right behind them
    // finds the window freed.
    m.accept(&first);
    let (_, with_acks) = m.leader.until(WITHIN, |s| !s.acked().is_empty()).await;
    assert!(
        matches!(with_acks, Some(Seen::Ack(_))),
        "the acks rode on a fetch: {with_acks:?}"
    );
    let (_, behind) = m.leader.until(WITHIN, asks_without_acks).await;
    assert!(behind.is_some(), "no fetch behind the acks");
    let second = m.take().await;
    assert_eq!(second.len(), 8);
    // Holding as much as when the window was found full: no fetch that would come back
    // empty, and the caller hears at once that nothing more comes until it acks.
    m.dry().await;
    let after: Vec<Seen> = m.seen_now();
    assert!(
        !after.iter().any(asks_without_acks),
        "a fetch went out that could only come back empty: {after:?}"
    );
    assert_eq!(m.shared.metrics.snapshot().fetches_empty, 1);
    // Its acks end the wait at once.
    m.accept(&second);
    let (_, next) = m.leader.until(WITHIN, |s| !s.acked().is_empty()).await;
    assert!(next.is_some(), "the acks never went out");
    assert_eq!(m.take().await.len(), 8);
}

/// With `share.fetch.acknowledge.first=false` the acks ride on the fetch, as before.
#[tokio::test]
async fn acks_can_ride_on_the_fetch_instead() {
    let mut m = member(
        Log::new(8, 8, true),
        &[
            ("max.poll.records", "5"),
            ("share.fetch.acknowledge.first", "false"),
        ],
    )
    .await;
    let first = m.take().await;
    let (_, empty) = m.leader.until(WITHIN, asks_without_acks).await;
    assert!(empty.is_some());
    m.dry().await;
    m.accept(&first);
    let (_, with_acks) = m.leader.until(WITHIN, |s| !s.acked().is_empty()).await;
    assert!(
        matches!(with_acks, Some(Seen::Fetch(_))),
        "the acks went apart: {with_acks:?}"
    );
    assert_eq!(m.take().await.len(), 8);
}

/// Fetches that take no more than they ask (`record_limit`) say nothing of the window: an
/// empty one is not taken for a full window, and the next record is still fetched ahead.
#[tokio::test]
async fn a_record_limit_member_still_fetches_the_next_record_ahead() {
    let mut m = member(
        Log::new(1, 1000, false),
        &[
            ("max.poll.records", "1"),
            ("share.acquire.mode", "record_limit"),
        ],
    )
    .await;
    let first = m.take().await;
    assert_eq!(first.len(), 1);
    // While the caller holds it (its put runs), the next one is acquired, and no more.
    let (_, ahead) = m.leader.until(WITHIN, asks_without_acks).await;
    assert!(ahead.is_some(), "the next record was not fetched ahead");
    let deadline = tokio::time::Instant::now() + WITHIN;
    while m.shared.buffer.len_records() < 1 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the record never came"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(!m.shared.wants_records(), "two records fetched ahead");
}

fn asked_bytes(s: &Seen) -> Option<i32> {
    match s {
        Seen::Fetch(r) if r.max_records > 0 => Some(r.max_bytes),
        _ => None,
    }
}

/// After records came, a fetch asks for the bytes its records take (at least 64 KiB), not for
/// `fetch.max.bytes`: the broker walks every log batch a fetch reads. Without the setting, or
/// before any records, it asks for `fetch.max.bytes`.
#[tokio::test]
async fn a_fetch_asks_for_the_bytes_its_records_take() {
    const LIMIT: i32 = 4 << 20;
    let limit = LIMIT.to_string();
    for (adaptive, after_records) in [
        ("true", super::fetch_size::MIN_SIZED_FETCH_BYTES),
        ("false", LIMIT),
    ] {
        let mut m = member(
            Log::new(8, 1000, true),
            &[
                ("max.poll.records", "5"),
                ("fetch.max.bytes", &limit),
                ("share.buffer.max.records", "1000"),
                ("share.fetch.bytes.adaptive", adaptive),
            ],
        )
        .await;
        let first = m.take().await;
        assert_eq!(first.len(), 8);
        let (before, next) = m.leader.until(WITHIN, |s| asked_bytes(s).is_some()).await;
        let asked: Vec<i32> = before.iter().filter_map(asked_bytes).collect();
        assert!(asked.iter().all(|b| *b == LIMIT), "{asked:?}");
        let next = next.as_ref().and_then(asked_bytes);
        assert_eq!(next, Some(after_records), "adaptive={adaptive}");
    }
}
