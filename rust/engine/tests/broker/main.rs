//! Tests against a real Kafka 4.4 broker.
//!
//! Scheme: this test binary is built only with `--features broker-tests`, so a plain
//! `cargo test` runs the unit tests and nothing here. When built, every test needs
//! `SHARESINK_BOOTSTRAP` (host:port of a broker with share groups on) and FAILS if it is
//! missing, never skips. Start a broker with the harness, e.g.:
//!
//! ```sh
//! SHARESINK_PORT_BASE=42000 SHARESINK_CLUSTER_DIR=/tmp/engine-dev python3 tests/harness/cluster.py up
//! SHARESINK_BOOTSTRAP=127.0.0.1:42092 cargo test -p sharesink-engine --features broker-tests --test broker
//! ```
//!
//! Each test uses its own topic and group (unique names), so tests can share a broker and
//! run in parallel. `RUST_LOG=sharesink_engine=debug` shows the engine's events.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::records::Compression;
use sharesink_engine::{probe, properties, Ack, AckKind, Batch, ConsumerConfig, ShareConsumer};
use sharesink_testkit::{Admin, ProduceRecord};

mod acks;
mod locks;
mod members;
mod protocol_facts;
mod recovery;
mod transactions;

const TIMEOUT: Duration = Duration::from_secs(30);

fn bootstrap() -> String {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    std::env::var("SHARESINK_BOOTSTRAP").expect(
        "SHARESINK_BOOTSTRAP is not set: these tests need a running broker \
         (see the top of rust/engine/tests/broker/main.rs)",
    )
}

fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}

struct Fixture {
    bootstrap: String,
    topic: String,
    group: String,
}

/// Creates a topic with `partitions`, sets `share.auto.offset.reset=earliest` (plus `extra`)
/// on a fresh group, and produces `per_partition` records to each partition, using a
/// different compression codec per partition.
async fn fixture(
    name: &str,
    partitions: i32,
    per_partition: usize,
    extra: &[(&str, &str)],
) -> Fixture {
    let bootstrap = bootstrap();
    let admin = Admin::connect(&bootstrap, TIMEOUT)
        .await
        .expect("admin connect");
    let topic = unique(name);
    let group = unique(&format!("{name}-g"));
    admin
        .create_topic(&topic, partitions)
        .await
        .expect("create topic");
    let mut configs = vec![("share.auto.offset.reset", "earliest")];
    configs.extend_from_slice(extra);
    admin
        .set_group_config(&group, &configs)
        .await
        .expect("group config");
    let codecs = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];
    for p in 0..partitions {
        let records: Vec<ProduceRecord> = (0..per_partition)
            .map(|i| ProduceRecord {
                key: Some(Bytes::from(format!("k-{p}-{i}"))),
                value: Some(Bytes::from(format!("v-{p}-{i}"))),
                headers: vec![("h".into(), Some(Bytes::from(format!("{i}"))))],
            })
            .collect();
        if !records.is_empty() {
            admin
                .produce(&topic, p, &records, codecs[p as usize % codecs.len()])
                .await
                .expect("produce");
        }
    }
    Fixture {
        bootstrap,
        topic,
        group,
    }
}

impl Fixture {
    async fn consumer(&self, extra: &[(&str, &str)]) -> ShareConsumer {
        let mut props = properties([
            ("bootstrap.servers", self.bootstrap.as_str()),
            ("group.id", self.group.as_str()),
            ("fetch.max.wait.ms", "200"),
        ]);
        for (k, v) in extra {
            props.insert(k.to_string(), v.to_string());
        }
        let config = ConsumerConfig::from_properties(&props).expect("config");
        ShareConsumer::start(config, vec![self.topic.clone()])
            .await
            .expect("start")
    }
}

/// One ack per record of the batch (the engine merges contiguous same-type ranges).
fn acks_for(batch: &Batch, kind: AckKind) -> Vec<Ack> {
    batch
        .records()
        .map(|r| {
            Ack::new(
                r.topic_arc().clone(),
                r.partition(),
                r.offset(),
                r.offset(),
                kind,
            )
        })
        .collect()
}

type Key = (i32, i64);

/// Polls until `want` distinct records arrived or `deadline` passes, acking each batch with
/// `kind`. Returns (partition, offset) → delivery count as seen.
async fn consume(
    c: &ShareConsumer,
    want: usize,
    kind: AckKind,
    within: Duration,
) -> BTreeMap<Key, i16> {
    let deadline = Instant::now() + within;
    let mut seen = BTreeMap::new();
    while seen.len() < want && Instant::now() < deadline {
        if let Some(batch) = c.poll(Duration::from_millis(500)).await.expect("poll") {
            for r in batch.records() {
                let prev = seen.insert((r.partition(), r.offset()), r.delivery_count());
                assert!(
                    prev.is_none(),
                    "record {}-{} delivered twice",
                    r.partition(),
                    r.offset()
                );
            }
            c.acknowledge(&acks_for(&batch, kind)).expect("acknowledge");
        }
    }
    seen
}

/// Asserts nothing arrives for `quiet`.
async fn assert_quiet(c: &ShareConsumer, quiet: Duration) {
    let deadline = Instant::now() + quiet;
    while Instant::now() < deadline {
        if let Some(batch) = c.poll(Duration::from_millis(300)).await.expect("poll") {
            let r = batch.record(0).unwrap();
            panic!(
                "unexpected redelivery of {}-{} (delivery count {})",
                r.partition(),
                r.offset(),
                r.delivery_count()
            );
        }
    }
}

fn count_topics(per_topic: &mut BTreeMap<String, usize>, batch: &Batch) {
    for r in batch.records() {
        *per_topic.entry(r.topic().to_string()).or_default() += 1;
    }
}

fn values(prefix: &str, n: usize) -> Vec<ProduceRecord> {
    (0..n)
        .map(|i| ProduceRecord::value(Bytes::from(format!("{prefix}-{i}"))))
        .collect()
}

/// Consumes until `quiet` passes without records; returns the delivered values, sorted
/// (accepting all).
async fn values_until_quiet(c: &ShareConsumer, quiet: Duration) -> Vec<String> {
    values_until_quiet_after(c, 0, quiet).await
}

/// [`values_until_quiet`], the quiet counted only once `at_least` values arrived (a member's
/// first assignment can take seconds on a fresh cluster).
async fn values_until_quiet_after(
    c: &ShareConsumer,
    at_least: usize,
    quiet: Duration,
) -> Vec<String> {
    let mut offsets = Vec::new();
    let mut idle_since = Instant::now();
    let deadline = Instant::now() + TIMEOUT;
    while (offsets.len() < at_least || idle_since.elapsed() < quiet) && Instant::now() < deadline {
        if let Some(b) = c.poll(Duration::from_millis(300)).await.expect("poll") {
            idle_since = Instant::now();
            offsets.extend(
                b.records()
                    .map(|r| String::from_utf8_lossy(r.value().unwrap_or_default()).into_owned()),
            );
            c.acknowledge(&b.acks(AckKind::Accept)).unwrap();
        }
    }
    offsets.sort_unstable();
    offsets
}

/// Polls until `want` records arrived (without acknowledging them); returns them.
/// What these tests keep of a record past its batch (a `ShareRecord` reads its batch in place).
#[derive(Debug, Clone)]
struct Held {
    topic: Arc<str>,
    partition: i32,
    offset: i64,
    delivery_count: i16,
    lock_deadline_ms: i64,
}

impl Held {
    fn of(r: sharesink_engine::ShareRecord<'_>) -> Held {
        Held {
            topic: r.topic_arc().clone(),
            partition: r.partition(),
            offset: r.offset(),
            delivery_count: r.delivery_count(),
            lock_deadline_ms: r.lock_deadline_ms(),
        }
    }

    fn offset(&self) -> i64 {
        self.offset
    }

    fn delivery_count(&self) -> i16 {
        self.delivery_count
    }
}

async fn hold(c: &ShareConsumer, want: usize, within: Duration) -> Vec<Held> {
    let deadline = Instant::now() + within;
    let mut held = Vec::new();
    while held.len() < want && Instant::now() < deadline {
        if let Some(b) = c.poll(Duration::from_millis(300)).await.expect("poll") {
            held.extend(b.records().map(Held::of));
        }
    }
    held
}

/// Counts as the caller polling without taking anything from the member's buffer (a wakeup
/// ends the poll at once): a member whose caller has not polled for a tenth of the lock stops
/// fetching, and one whose first fetch comes back empty would otherwise never buffer anything.
async fn touch(c: &ShareConsumer) {
    c.wakeup();
    let polled = c.poll(Duration::from_secs(1)).await.expect("poll");
    assert!(polled.is_none(), "a woken poll took records");
}

fn acks_for_records(records: &[Held], kind: AckKind) -> Vec<Ack> {
    records
        .iter()
        .map(|r| Ack::new(r.topic.clone(), r.partition, r.offset, r.offset, kind))
        .collect()
}
