//! Shared by the fault tests (broker restarts, several brokers): a fleet of share-group members
//! consuming one topic, each in a task of its own that polls and ACCEPTs what it gets (as the
//! Connect driver does: acks queued, riding on the next fetch), and a ledger of every delivery
//! with, per partition, when it last delivered and the longest time it went without.

#![allow(dead_code)] // each test binary uses a part

pub mod java;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::records::Compression;
use sharesink_engine::{properties, AckKind, ConsumerConfig, MetricsSnapshot, ShareConsumer};
use sharesink_testkit::{Admin, ProduceRecord};
use tokio::task::JoinHandle;

/// Logs as `RUST_LOG` says, and counts every WARN event of the engine by message, whatever
/// `RUST_LOG` says (see [`warnings`]).
pub fn init_tracing() {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::Layer;
    let _ = tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_test_writer()
                .with_filter(tracing_subscriber::EnvFilter::from_default_env()),
        )
        .with(WarnCounter.with_filter(tracing_subscriber::filter::LevelFilter::WARN))
        .try_init();
}

static WARNINGS: Mutex<BTreeMap<String, u64>> = Mutex::new(BTreeMap::new());

/// The engine's WARN events since the test binary started, by message (counted only when
/// `init_tracing` installed the counter).
pub fn warnings() -> BTreeMap<String, u64> {
    WARNINGS.lock().unwrap().clone()
}

/// Counts WARN (and ERROR) events of the engine's modules by their message.
struct WarnCounter;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for WarnCounter {
    fn on_event(
        &self,
        event: &tracing::Event<'_>,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if !event.metadata().target().starts_with("sharesink_engine") {
            return;
        }
        struct Message(String);
        impl tracing::field::Visit for Message {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                // A `message = ...` field beside the format string makes two: keep both.
                if field.name() == "message" {
                    if !self.0.is_empty() {
                        self.0.push_str(" | ");
                    }
                    self.0.push_str(&format!("{value:?}"));
                }
            }
        }
        let mut m = Message(String::new());
        event.record(&mut m);
        *WARNINGS.lock().unwrap().entry(m.0).or_default() += 1;
    }
}

/// Produces `count` records to `partition`, values `<tag>-<partition>-<i>`, in batches of 500.
pub async fn produce(admin: &Admin, topic: &str, partition: i32, tag: &str, count: usize) {
    for start in (0..count).step_by(500) {
        let records: Vec<ProduceRecord> = (start..(start + 500).min(count))
            .map(|i| ProduceRecord::value(Bytes::from(format!("{tag}-{partition}-{i:08}"))))
            .collect();
        admin
            .produce(topic, partition, &records, Compression::None)
            .await
            .expect("produce");
    }
}

#[derive(Default)]
struct PartitionLedger {
    /// offset → deliveries
    deliveries: BTreeMap<i64, u32>,
    /// Deliveries whose broker delivery count was above 1 (the broker redelivered them).
    redelivered: u64,
    last: Option<Instant>,
    /// Longest time without a delivery, measured between deliveries once a mark was set
    /// (`Ledger::mark_gap_start`) or from the first delivery.
    longest_gap: Duration,
}

/// Every delivery of the fleet.
#[derive(Default)]
pub struct Ledger {
    partitions: Mutex<HashMap<i32, PartitionLedger>>,
}

impl Ledger {
    pub fn record(&self, partition: i32, offset: i64) {
        self.record_delivery(partition, offset, 1);
    }

    /// A delivery of `offset` with the broker's delivery count.
    pub fn record_delivery(&self, partition: i32, offset: i64, delivery_count: i16) {
        let now = Instant::now();
        let mut all = self.partitions.lock().unwrap();
        let p = all.entry(partition).or_default();
        *p.deliveries.entry(offset).or_default() += 1;
        if delivery_count > 1 {
            p.redelivered += 1;
        }
        if let Some(last) = p.last {
            p.longest_gap = p.longest_gap.max(now - last);
        }
        p.last = Some(now);
    }

    /// From now on, a partition's gap counts from this instant if it delivers nothing before
    /// (so a partition that stops delivering at a fault counts from the fault).
    pub fn mark_gap_start(&self, partitions: i32) {
        let now = Instant::now();
        let mut all = self.partitions.lock().unwrap();
        for p in 0..partitions {
            let l = all.entry(p).or_default();
            l.last = Some(l.last.map_or(now, |t| t.max(now)));
            l.longest_gap = Duration::ZERO;
        }
    }

    pub fn distinct(&self, partition: i32) -> usize {
        self.partitions
            .lock()
            .unwrap()
            .get(&partition)
            .map_or(0, |p| p.deliveries.len())
    }

    pub fn redelivered(&self) -> usize {
        self.partitions
            .lock()
            .unwrap()
            .values()
            .map(|p| p.deliveries.values().filter(|n| **n > 1).count())
            .sum()
    }

    /// One partition's counts: distinct offsets received, deliveries in all, deliveries with a
    /// delivery count above 1, and gaps (offsets below the highest one received that were never
    /// received).
    pub fn counts(&self, partition: i32) -> PartitionCounts {
        let all = self.partitions.lock().unwrap();
        let Some(p) = all.get(&partition) else {
            return PartitionCounts::default();
        };
        let highest = p.deliveries.keys().next_back().copied().unwrap_or(-1);
        PartitionCounts {
            received: p.deliveries.len(),
            deliveries: p.deliveries.values().map(|n| *n as u64).sum(),
            redelivered: p.redelivered,
            gaps: (highest + 1) as usize - p.deliveries.len(),
        }
    }

    pub fn longest_gap(&self, partition: i32) -> Duration {
        self.partitions
            .lock()
            .unwrap()
            .get(&partition)
            .map_or(Duration::ZERO, |p| p.longest_gap)
    }

    /// Waits until every partition has delivered `expected[p]` distinct records; fails the test
    /// when a partition that still lacks records has delivered nothing for `stall`.
    pub async fn wait_all(
        &self,
        expected: &[usize],
        stall: Duration,
        overall: Duration,
        diagnostics: impl Fn() -> String,
    ) {
        let started = Instant::now();
        loop {
            let missing: Vec<(i32, usize)> = expected
                .iter()
                .enumerate()
                .map(|(p, n)| (p as i32, n.saturating_sub(self.distinct(p as i32))))
                .filter(|(_, m)| *m > 0)
                .collect();
            if missing.is_empty() {
                return;
            }
            let stalled: Vec<(i32, usize, Duration)> = missing
                .iter()
                .filter_map(|(p, m)| {
                    let quiet = self.since_last(*p).unwrap_or(started.elapsed());
                    (quiet > stall).then_some((*p, *m, quiet))
                })
                .collect();
            if !stalled.is_empty() || started.elapsed() > overall {
                panic!(
                    "partitions stopped delivering (partition, records missing, quiet for): \
                     {stalled:?}; missing {missing:?} after {:?}\n{}",
                    started.elapsed(),
                    diagnostics()
                );
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    pub fn since_last(&self, partition: i32) -> Option<Duration> {
        self.partitions
            .lock()
            .unwrap()
            .get(&partition)
            .and_then(|p| p.last)
            .map(|t| t.elapsed())
    }
}

/// What one partition's ledger holds (see [`Ledger::counts`]).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PartitionCounts {
    pub received: usize,
    pub deliveries: u64,
    pub redelivered: u64,
    pub gaps: usize,
}

/// Members consuming one topic, each in its own task.
pub struct Fleet {
    pub ledger: Arc<Ledger>,
    members: Vec<(Arc<ShareConsumer>, JoinHandle<()>)>,
}

pub fn member_config(bootstrap: &str, group: &str, extra: &[(&str, &str)]) -> ConsumerConfig {
    let mut props = properties([
        ("bootstrap.servers", bootstrap),
        ("group.id", group),
        ("max.poll.records", "500"),
        ("fetch.max.wait.ms", "200"),
    ]);
    for (k, v) in extra {
        props.insert(k.to_string(), v.to_string());
    }
    ConsumerConfig::from_properties(&props).unwrap()
}

impl Fleet {
    pub async fn start(
        members: usize,
        bootstrap: &str,
        group: &str,
        topic: &str,
        extra: &[(&str, &str)],
    ) -> Fleet {
        let mut fleet = Fleet {
            ledger: Arc::new(Ledger::default()),
            members: Vec::new(),
        };
        for _ in 0..members {
            fleet.add(bootstrap, group, topic, extra).await;
        }
        fleet
    }

    /// Starts one more member.
    pub async fn add(&mut self, bootstrap: &str, group: &str, topic: &str, extra: &[(&str, &str)]) {
        let config = member_config(bootstrap, group, extra);
        let c = Arc::new(
            ShareConsumer::start(config, vec![topic.to_string()])
                .await
                .expect("start member"),
        );
        let (member, ledger) = (c.clone(), self.ledger.clone());
        let task = tokio::spawn(async move {
            loop {
                match member.poll(Duration::from_millis(500)).await {
                    Ok(Some(batch)) => {
                        for r in batch.records() {
                            ledger.record_delivery(r.partition(), r.offset(), r.delivery_count());
                        }
                        if member.acknowledge(&batch.acks(AckKind::Accept)).is_err() {
                            return;
                        }
                    }
                    Ok(None) => {}
                    Err(e) if e.is_retriable() => {}
                    Err(_) => return, // closed
                }
            }
        });
        self.members.push((c, task));
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn metrics(&self) -> Vec<MetricsSnapshot> {
        self.members.iter().map(|(c, _)| c.metrics()).collect()
    }

    pub fn assignments(&self) -> Vec<Vec<i32>> {
        self.members
            .iter()
            .map(|(c, _)| c.assignment().into_iter().map(|(_, p)| p).collect())
            .collect()
    }

    /// Closes the first member (as a Connect task stopping); returns how long close took.
    pub async fn close_one(&mut self) -> Duration {
        let (c, task) = self.members.remove(0);
        let started = Instant::now();
        c.close().await.expect("close");
        let took = started.elapsed();
        let _ = task.await;
        took
    }

    pub async fn close(self) {
        for (c, task) in self.members {
            c.close().await.expect("close");
            let _ = task.await;
        }
    }

    /// Waits until every partition has delivered `expected[p]` distinct records; fails the test
    /// when a partition that still lacks records has delivered nothing for `stall`.
    pub async fn wait_all(&self, expected: &[usize], stall: Duration, overall: Duration) {
        let diagnostics = || {
            format!(
                "assignments {:?}\nmetrics {:#?}",
                self.assignments(),
                self.metrics()
            )
        };
        self.ledger
            .wait_all(expected, stall, overall, diagnostics)
            .await;
    }
}

/// Runs a shell command (a harness action such as restarting a broker) off the runtime.
pub async fn shell(cmd: String) {
    let what = cmd.clone();
    let status = tokio::task::spawn_blocking(move || {
        std::process::Command::new("sh")
            .arg("-c")
            .arg(&cmd)
            .status()
    })
    .await
    .unwrap()
    .expect("run shell command");
    assert!(status.success(), "`{what}` failed: {status}");
}

/// Runs `Cluster().<call>` of the harness (tests/harness/cluster.py) in the state dir and port
/// base of the environment; needs `SHARESINK_HARNESS_DIR` (the repository's `tests/`).
pub async fn harness(call: &str) {
    let dir = std::env::var("SHARESINK_HARNESS_DIR").unwrap_or_else(|_| {
        panic!("SHARESINK_HARNESS_DIR is not set (the repository's tests/ directory)")
    });
    shell(format!(
        "cd '{dir}' && python3 -c 'from harness.cluster import Cluster; Cluster().{call}'"
    ))
    .await;
}
