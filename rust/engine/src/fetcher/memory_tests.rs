//! A fetcher's whole loop against a fake leader (`fake_broker`) that serves hostile record
//! batches (`sharesink_testkit::hostile`): a compression bomb or a header flood beyond the
//! member's allowance fails the member and releases the batch, with no more memory than the
//! allowance ever charged; a batch that does not fit beside what the worker's other members
//! hold is released, and fetching waits until they let go.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use sharesink_testkit::hostile::{compression_bomb, header_flood, BombCodec};
use tokio::sync::watch;
use uuid::Uuid;

use super::fake_broker::{FakeLeader, Seen};
use super::run;
use crate::acks::AckKind;
use crate::config;
use crate::error::{EngineError, ErrorKind};
use crate::fetcher_handle::FetcherHandle;
use crate::memory::{MemberMemory, MemoryCharge, MemoryPool};
use crate::shared::Shared;

const TOPIC: Uuid = Uuid::from_u128(0x40);
const WITHIN: Duration = Duration::from_secs(10);
const MIB: usize = 1024 * 1024;

/// A member of `pool` bounded by `memory_max` bytes, speaking v1 to the fake leader.
fn shared(pool: Arc<MemoryPool>, memory_max: usize) -> Arc<Shared> {
    shared_fetching(pool, memory_max, config::DEFAULT_FETCH_MAX_BYTES as usize)
}

/// The same, reserving `fetch_max` bytes of `pool` for a fetch.
fn shared_fetching(pool: Arc<MemoryPool>, memory_max: usize, fetch_max: usize) -> Arc<Shared> {
    let memory_max = memory_max.to_string();
    let fetch_max = fetch_max.to_string();
    let props = [
        ("bootstrap.servers", "127.0.0.1:9"),
        ("group.id", "g"),
        ("fetch.max.wait.ms", "50"),
        ("fetch.max.bytes", fetch_max.as_str()),
        ("request.timeout.ms", "5000"),
        ("share.memory.max.bytes", memory_max.as_str()),
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
    let shared = Arc::new(Shared::new(config, "m".into(), cluster, 1, 1, pool));
    shared.learn_topic_names([(TOPIC, &Arc::from("hostile"))]);
    shared
}

struct Running {
    shared: Arc<Shared>,
    leader: FakeLeader,
    _stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A fetcher of `shared` holding partitions 0 and 1 of a fake leader that serves `records`
/// (partition → batches, acquired ranges) to its first fetches.
async fn start(shared: Arc<Shared>, records: Vec<(i32, Bytes, (i64, i64))>) -> Running {
    let leader = FakeLeader::start().await;
    {
        let mut script = leader.script.lock().unwrap();
        for (partition, batches, acquired) in records {
            script.records.insert(partition, (batches, vec![acquired]));
        }
    }
    let me = Arc::new(FetcherHandle::new(1, leader.addr.clone()));
    me.set_desired([(TOPIC, 0), (TOPIC, 1)].into_iter().collect());
    let (stop, closing) = watch::channel(false);
    let task = tokio::spawn(run(shared.clone(), me, closing));
    Running {
        shared,
        leader,
        _stop: stop,
        task,
    }
}

/// The acks of `partition` a request carries, as (first, last, type).
fn acks_of(seen: &Seen, partition: i32) -> Vec<(i64, i64, i8)> {
    let batches: Vec<_> = match seen {
        Seen::Fetch(r) => r
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .filter(|p| p.partition_index == partition)
            .flat_map(|p| &p.acknowledgement_batches)
            .map(|b| (b.first_offset, b.last_offset, b.acknowledge_types.clone()))
            .collect(),
        Seen::Ack(r) => r
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .filter(|p| p.partition_index == partition)
            .flat_map(|p| &p.acknowledgement_batches)
            .map(|b| (b.first_offset, b.last_offset, b.acknowledge_types.clone()))
            .collect(),
    };
    batches
        .into_iter()
        .map(|(first, last, types)| (first, last, types[0]))
        .collect()
}

fn asks_for_records(seen: &Seen) -> bool {
    matches!(seen, Seen::Fetch(r) if r.max_records > 0)
}

async fn fatal_error(shared: &Shared) -> EngineError {
    let deadline = tokio::time::Instant::now() + WITHIN;
    loop {
        if let Some(e) = shared.fatal_error() {
            return e;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the member did not fail"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Three records of 10 bytes, uncompressed, at offsets 0-2.
fn calm_batch() -> Bytes {
    use kafka_protocol::records::{Compression, RecordBatchEncoder, RecordEncodeOptions};
    let records: Vec<_> = (0..3)
        .map(|o| kafka_protocol::records::Record {
            transactional: false,
            control: false,
            partition_leader_epoch: 0,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: kafka_protocol::records::TimestampType::Creation,
            offset: o,
            sequence: o as i32,
            timestamp: 1_000,
            key: None,
            value: Some(Bytes::from_static(b"0123456789")),
            headers: Default::default(),
            delete_horizon: false,
        })
        .collect();
    let mut out = bytes::BytesMut::new();
    let opts = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut out, &records, &opts).unwrap();
    out.freeze()
}

/// A batch beyond the member's allowance (half its 16 MiB) fails the member, naming the
/// partition and the offset; the partition's acquired records are released; nothing is
/// handed out, and nothing stays charged.
async fn hostile_batch_fails_the_member(hostile: Bytes) -> String {
    let pool = MemoryPool::new(1 << 30);
    let shared = shared(pool.clone(), 16 * MIB);
    let mut r = start(
        shared.clone(),
        vec![(0, calm_batch(), (0, 2)), (1, hostile, (0, 3))],
    )
    .await;
    let error = fatal_error(&r.shared).await;
    assert_eq!(error.kind(), ErrorKind::Resource, "{error}");
    assert!(!error.is_retriable());
    let message = error.to_string();
    assert!(
        message.contains("hostile-1 from offset 0"),
        "names the batch: {message}"
    );
    assert!(
        message.contains("8.0 MiB (half of this member's bound share.memory.max.bytes)"),
        "{message}"
    );
    let (_, released) = r.leader.until(WITHIN, |s| !acks_of(s, 1).is_empty()).await;
    assert_eq!(
        acks_of(&released.expect("the batch was not released"), 1),
        vec![(0, 3, AckKind::Release as i8)]
    );
    assert_eq!(shared.buffer.len_records(), 0, "nothing handed out");
    assert_eq!(shared.memory.used(), 0, "the decoded part was dropped");
    assert_eq!(pool.used(), 0);
    message
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compression_bomb_fails_the_member_and_is_released() {
    // 4 records of 8 MiB of zeros: 32 MiB decompressed from about 1 KiB.
    let bomb = compression_bomb(BombCodec::Zstd, 4, 8 * MIB);
    assert!(bomb.len() < 64 * 1024);
    hostile_batch_fails_the_member(bomb).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_flood_fails_the_member_though_its_bytes_are_few() {
    // One record with 1 M empty headers: 2 MiB decompressed, within the allowance as bytes,
    // but 20 MiB as the engine holds headers.
    let flood = header_flood(BombCodec::Gzip, 1 << 20);
    hostile_batch_fails_the_member(flood).await;
}

/// The worker's bound across members: a batch within this member's allowance but beyond its
/// reservation that does not fit beside what the worker's other members hold is released (not
/// a failure: the input is not at fault), and no fetch asks for records until that much fits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_that_does_not_fit_beside_other_members_is_released_and_fetching_waits() {
    // 64 MiB for the worker: each member at most 16 MiB, 8 MiB per batch; this one reserves
    // 1 MiB for a fetch.
    let pool = MemoryPool::new(64 * MIB);
    let shared = shared_fetching(pool.clone(), 1 << 30, MIB);
    let mut r = start(shared.clone(), Vec::new()).await;
    r.leader.next(WITHIN).await.expect("no opening fetch");
    // The next fetch is answered with 6 MiB of zeros, late: meanwhile the other members of the
    // worker take 60 MiB of its 64.
    {
        let mut script = r.leader.script.lock().unwrap();
        script.delay = Duration::from_millis(300);
        script.records.insert(
            0,
            (compression_bomb(BombCodec::Gzip, 1, 6 * MIB), vec![(0, 0)]),
        );
    }
    let (_, asked) = r.leader.until(WITHIN, asks_for_records).await;
    asked.expect("no fetch for records");
    let others: Vec<MemoryCharge> = (0..4)
        .map(|_| {
            let mut charge = MemoryCharge::new(MemberMemory::new(1 << 30, pool.clone()));
            for _ in 0..2 {
                charge.start_batch();
                charge.charge(7 * MIB + MIB / 2).unwrap();
            }
            charge
        })
        .collect();
    assert_eq!(pool.used(), 60 * MIB);
    r.leader.script.lock().unwrap().delay = Duration::ZERO;
    let (before, released) = r.leader.until(WITHIN, |s| !acks_of(s, 0).is_empty()).await;
    assert_eq!(
        acks_of(&released.expect("the batch was not released"), 0),
        vec![(0, 0, AckKind::Release as i8)]
    );
    assert!(before.iter().all(|s| !asks_for_records(s)));
    assert!(shared.fatal_error().is_none(), "not the member's fault");
    assert_eq!(shared.metrics.snapshot().records_released_memory, 1);
    assert_eq!(shared.buffer.len_records(), 0);
    assert_eq!(pool.used(), 60 * MIB, "nothing of the response is held");
    // While the others hold what the response needed, nothing is fetched, though this member
    // holds nothing: it would only fetch records to release.
    let (quiet, asked) = r
        .leader
        .until(Duration::from_secs(1), asks_for_records)
        .await;
    assert!(asked.is_none(), "fetched records while the worker was full");
    assert!(quiet.iter().all(|s| !asks_for_records(s)));
    // Once they let go, the member fetches again.
    drop(others);
    let (_, asked) = r.leader.until(WITHIN, asks_for_records).await;
    asked.expect("no fetch once the worker had room again");
}
