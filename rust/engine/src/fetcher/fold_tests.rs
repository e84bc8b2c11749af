//! A fetcher's whole loop against a fake leader (`fake_broker`) serving a transaction's records
//! and its commit marker: the marker is acknowledged with its records' ACCEPT as one range, and
//! a broker that refuses that gets the records' ACCEPT again without it, and the markers as
//! gaps from then on (issue 54).

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use tokio::sync::{oneshot, watch};
use uuid::Uuid;

use super::fake_broker::{FakeLeader, Seen};
use super::run;
use crate::acks::{AckKind, AckOutcome, PendingAck};
use crate::fetcher_handle::FetcherHandle;
use crate::protocol::error_codes::*;
use crate::shared::Shared;

const TOPIC: Uuid = Uuid::from_u128(0x54);
const WITHIN: Duration = Duration::from_secs(5);

fn shared(fold: bool) -> Arc<Shared> {
    let props = [
        ("bootstrap.servers", "127.0.0.1:9"),
        ("group.id", "g"),
        ("fetch.max.wait.ms", "50"),
        ("request.timeout.ms", "2000"),
        ("share.gaps.fold", if fold { "true" } else { "false" }),
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
    let shared = Arc::new(Shared::new(
        config,
        "m".into(),
        cluster,
        1,
        1,
        crate::memory::MemoryPool::unbounded(),
    ));
    shared.learn_topic_names([(TOPIC, &Arc::from("txn"))]);
    shared
}

fn record(offset: i64, control: bool) -> Record {
    Record {
        transactional: true,
        control,
        partition_leader_epoch: 0,
        producer_id: 7,
        producer_epoch: 0,
        timestamp_type: TimestampType::Creation,
        offset,
        sequence: offset as i32,
        timestamp: 1_000,
        key: None,
        value: Some(Bytes::from_static(b"v")),
        headers: Default::default(),
        delete_horizon: false,
    }
}

/// A transaction's records `first..=last` and its commit marker at `last + 1`.
fn transaction(first: i64, last: i64) -> Bytes {
    let opts = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    let mut buf = BytesMut::new();
    let records: Vec<Record> = (first..=last).map(|o| record(o, false)).collect();
    RecordBatchEncoder::encode(&mut buf, &records, &opts).unwrap();
    RecordBatchEncoder::encode(&mut buf, &[record(last + 1, true)], &opts).unwrap();
    buf.freeze()
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

async fn start(fold: bool, refuse_accept_of: &[i64]) -> Running {
    let leader = FakeLeader::start().await;
    {
        let mut script = leader.script.lock().unwrap();
        script.records.insert(0, (transaction(0, 2), vec![(0, 3)]));
        script.refuse_accept_of.insert(0, refuse_accept_of.to_vec());
    }
    let shared = shared(fold);
    let me = Arc::new(FetcherHandle::new(1, leader.addr.clone()));
    me.set_desired([(TOPIC, 0)].into_iter().collect());
    let (stop, closing) = watch::channel(false);
    let task = tokio::spawn(run(shared.clone(), me.clone(), closing));
    let r = Running {
        shared,
        me,
        leader,
        _stop: stop,
        task,
    };
    // The transaction's three records reach the buffer.
    let deadline = tokio::time::Instant::now() + WITHIN;
    while r.shared.metrics.snapshot().records_fetched < 3 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no records delivered"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    r
}

/// The acks a request carries, as (first, last, types).
fn acks(seen: &Seen) -> Vec<(i64, i64, Vec<i8>)> {
    match seen {
        Seen::Fetch(r) => r
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .flat_map(|p| &p.acknowledgement_batches)
            .map(|b| (b.first_offset, b.last_offset, b.acknowledge_types.clone()))
            .collect(),
        Seen::Ack(r) => r
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .flat_map(|p| &p.acknowledgement_batches)
            .map(|b| (b.first_offset, b.last_offset, b.acknowledge_types.clone()))
            .collect(),
    }
}

/// The caller accepts `first..=last`, waiting for the broker's verdict.
fn accept(me: &FetcherHandle, first: i64, last: i64) -> oneshot::Receiver<AckOutcome> {
    let (tx, rx) = oneshot::channel();
    me.push_ack(
        (TOPIC, 0),
        PendingAck::from_caller(first, last, AckKind::Accept as i8, Some(tx)),
        true,
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

/// The acks of the requests until one carries acks.
async fn next_acks(r: &mut Running) -> Vec<(i64, i64, Vec<i8>)> {
    let (_, seen) = r.leader.until(WITHIN, |s| !acks(s).is_empty()).await;
    acks(&seen.expect("no request carried acks"))
}

#[tokio::test]
async fn the_commit_marker_goes_with_its_records_accept_as_one_range() {
    let mut r = start(true, &[]).await;
    let ack = accept(&r.me, 0, 2);
    assert_eq!(next_acks(&mut r).await, vec![(0, 3, vec![1])]);
    assert_eq!(verdict(ack).await, NONE);
    let m = r.shared.metrics.snapshot();
    assert_eq!((m.accepted, m.gap_acked, m.gaps_folded), (3, 1, 1), "{m:?}");
    assert_eq!(m.ack_errors, 0);
}

#[tokio::test]
async fn without_folding_the_marker_goes_as_a_gap_ahead_of_its_records() {
    let mut r = start(false, &[]).await;
    assert_eq!(next_acks(&mut r).await, vec![(3, 3, vec![0])]);
    let ack = accept(&r.me, 0, 2);
    assert_eq!(next_acks(&mut r).await, vec![(0, 2, vec![1])]);
    assert_eq!(verdict(ack).await, NONE);
    assert_eq!(r.shared.metrics.snapshot().gaps_folded, 0);
}

#[tokio::test]
async fn a_broker_refusing_the_fold_gets_the_records_without_it_and_gaps_from_then_on() {
    let mut r = start(true, &[3, 7]).await;
    let ack = accept(&r.me, 0, 2);
    assert_eq!(
        next_acks(&mut r).await,
        vec![(0, 3, vec![1])],
        "folded first"
    );
    assert_eq!(
        next_acks(&mut r).await,
        vec![(0, 2, vec![1])],
        "then the records' ACCEPT alone"
    );
    assert_eq!(
        verdict(ack).await,
        NONE,
        "the caller sees the retry's success"
    );
    let m = r.shared.metrics.snapshot();
    assert_eq!(m.ack_errors, 0, "{m:?}");
    assert_eq!(m.accepted, 3);
    assert_eq!(
        (m.gaps_folded, m.gap_folds_refused, m.gap_acked),
        (0, 1, 0),
        "the refused fold is not counted as acknowledged: {m:?}"
    );

    // The next transaction: its marker goes as a gap at once, never folded again.
    r.leader
        .script
        .lock()
        .unwrap()
        .records
        .insert(0, (transaction(4, 6), vec![(4, 7)]));
    assert_eq!(next_acks(&mut r).await, vec![(7, 7, vec![0])]);
    let ack = accept(&r.me, 4, 6);
    assert_eq!(next_acks(&mut r).await, vec![(4, 6, vec![1])]);
    assert_eq!(verdict(ack).await, NONE);
}

#[tokio::test]
async fn records_refused_with_or_without_the_fold_keep_folding_on() {
    // The records themselves are refused (their locks ran out, say): the retry fails too, the
    // caller gets the broker's error, and folding stays on.
    let mut r = start(true, &[1, 3]).await;
    let ack = accept(&r.me, 0, 2);
    assert_eq!(next_acks(&mut r).await, vec![(0, 3, vec![1])]);
    assert_eq!(next_acks(&mut r).await, vec![(0, 2, vec![1])]);
    assert_eq!(verdict(ack).await, INVALID_RECORD_STATE);
    r.leader
        .script
        .lock()
        .unwrap()
        .records
        .insert(0, (transaction(4, 6), vec![(4, 7)]));
    let deadline = tokio::time::Instant::now() + WITHIN;
    while r.shared.metrics.snapshot().records_fetched < 6 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no records delivered"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let ack = accept(&r.me, 4, 6);
    assert_eq!(next_acks(&mut r).await, vec![(4, 7, vec![1])]);
    assert_eq!(verdict(ack).await, NONE);
}
