//! Fault test: the consumer keeps going across a broker restart without losing records.
//!
//! Built only with `--features broker-tests`; needs `SHARESINK_BOOTSTRAP` and
//! `SHARESINK_BROKER_RESTART_CMD` (a shell command that restarts that broker and returns when
//! it is back), and FAILS when either is missing. With the harness:
//!
//! ```sh
//! export SHARESINK_PORT_BASE=42000 SHARESINK_CLUSTER_DIR=/tmp/engine-dev
//! export SHARESINK_BOOTSTRAP=127.0.0.1:42092
//! export SHARESINK_BROKER_RESTART_CMD='cd tests && python3 -c "from harness.cluster import Cluster; Cluster().restart_broker()"'
//! cargo test -p sharesink-engine --features broker-tests --test broker_restart
//! ```

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::records::Compression;
use sharesink_engine::{properties, AckKind, ConsumerConfig, ShareConsumer};
use sharesink_testkit::{Admin, ProduceRecord};

mod support;

const TIMEOUT: Duration = Duration::from_secs(30);

/// The tests restart the same broker: one at a time.
static BROKER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: see the top of rust/engine/tests/broker_restart.rs")
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumption_survives_a_broker_restart() {
    let _one = BROKER.lock().await;
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let bootstrap = env("SHARESINK_BOOTSTRAP");
    let restart = env("SHARESINK_BROKER_RESTART_CMD");
    let topic = format!("restart-{}", uuid::Uuid::new_v4().simple());
    let group = format!("{topic}-g");
    let admin = Admin::connect(&bootstrap, TIMEOUT).await.unwrap();
    admin.create_topic(&topic, 2).await.unwrap();
    admin
        .set_group_config(&group, &[("share.auto.offset.reset", "earliest")])
        .await
        .unwrap();
    for p in 0..2 {
        for chunk in 0..5 {
            let records: Vec<ProduceRecord> = (0..100)
                .map(|i| ProduceRecord::value(Bytes::from(format!("{p}-{chunk}-{i}"))))
                .collect();
            admin
                .produce(&topic, p, &records, Compression::None)
                .await
                .unwrap();
        }
    }
    drop(admin);
    let config = ConsumerConfig::from_properties(&properties([
        ("bootstrap.servers", bootstrap.as_str()),
        ("group.id", group.as_str()),
        ("max.poll.records", "50"),
        ("share.acquire.mode", "record_limit"),
        ("fetch.max.wait.ms", "200"),
    ]))
    .unwrap();
    let c = ShareConsumer::start(config, vec![topic.clone()])
        .await
        .unwrap();

    let mut seen: BTreeMap<(i32, i64), u32> = BTreeMap::new();
    let mut restarted = false;
    let deadline = Instant::now() + Duration::from_secs(180);
    while seen.len() < 1000 && Instant::now() < deadline {
        match c.poll(Duration::from_millis(500)).await {
            Ok(Some(batch)) => {
                for r in batch.records() {
                    *seen.entry((r.partition(), r.offset())).or_default() += 1;
                }
                // Settle synchronously so every acknowledged record is known to be persisted.
                let results = c
                    .acknowledge_sync(&batch.acks(AckKind::Accept), TIMEOUT)
                    .await;
                println!(
                    "acked {} records: {:?}",
                    batch.len(),
                    results.as_ref().map(|r| r.iter().all(|x| x.is_ok()))
                );
            }
            Ok(None) => {}
            Err(e) => println!("poll error (retriable: {}): {e}", e.is_retriable()),
        }
        if !restarted && seen.len() >= 300 {
            restarted = true;
            println!("restarting the broker after {} records", seen.len());
            support::shell(restart.clone()).await;
            println!("broker back; metrics {:?}", c.metrics());
        }
    }
    let m = c.metrics();
    println!(
        "distinct {} records, redelivered {}, metrics {m:?}",
        seen.len(),
        seen.values().filter(|n| **n > 1).count()
    );
    assert!(restarted);
    assert_eq!(seen.len(), 1000, "records lost across the restart");
    c.close().await.unwrap();
}

/// Issue 14's stall: six members on three partitions, a backlog, the broker restarted while they
/// consume, more records produced after. Every partition must deliver every record again; a
/// partition that still lacks records and delivers nothing for a minute is the stall (before
/// the fix, a member whose session held a partition the broker no longer served got nothing
/// from it for good, and logged nothing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_partition_delivers_again_after_a_broker_restart() {
    let _one = BROKER.lock().await;
    support::init_tracing();
    let bootstrap = env("SHARESINK_BOOTSTRAP");
    let restart = env("SHARESINK_BROKER_RESTART_CMD");
    const PARTITIONS: i32 = 3;
    const BEFORE: usize = 40_000;
    const AFTER: usize = 10_000;
    let topic = format!("restart-stall-{}", uuid::Uuid::new_v4().simple());
    let group = format!("{topic}-g");
    let admin = Admin::connect(&bootstrap, TIMEOUT).await.unwrap();
    admin.create_topic(&topic, PARTITIONS).await.unwrap();
    admin
        .set_group_config(&group, &[("share.auto.offset.reset", "earliest")])
        .await
        .unwrap();
    for p in 0..PARTITIONS {
        support::produce(&admin, &topic, p, "before", BEFORE).await;
    }
    drop(admin);
    let fleet = support::Fleet::start(6, &bootstrap, &group, &topic, &[]).await;
    let total_before = PARTITIONS as usize * BEFORE;
    let deadline = Instant::now() + Duration::from_secs(120);
    while (0..PARTITIONS)
        .map(|p| fleet.ledger.distinct(p))
        .sum::<usize>()
        < total_before / 4
    {
        assert!(Instant::now() < deadline, "no progress before the restart");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!(
        "restarting the broker after {:?} records",
        (0..PARTITIONS)
            .map(|p| fleet.ledger.distinct(p))
            .collect::<Vec<_>>()
    );
    let down = Instant::now();
    support::shell(restart).await;
    println!("broker back after {:?}", down.elapsed());
    produce_after_and_wait(
        &fleet,
        &bootstrap,
        &topic,
        [PARTITIONS as usize, BEFORE, AFTER],
        "restart",
    )
    .await;
    fleet.close().await;
}

/// The stall as Connect met it: the broker down for 15 s while members consume a backlog; two
/// members closed during the outage (Connect stopping tasks) must close within their budget, and
/// two new ones join once the broker is back; every partition delivers every record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_replaced_during_a_broker_outage_leave_no_partition_behind() {
    let _one = BROKER.lock().await;
    support::init_tracing();
    let bootstrap = env("SHARESINK_BOOTSTRAP");
    const PARTITIONS: i32 = 3;
    const BEFORE: usize = 60_000;
    const AFTER: usize = 10_000;
    let topic = format!("outage-{}", uuid::Uuid::new_v4().simple());
    let group = format!("{topic}-g");
    let admin = Admin::connect(&bootstrap, TIMEOUT).await.unwrap();
    admin.create_topic(&topic, PARTITIONS).await.unwrap();
    admin
        .set_group_config(&group, &[("share.auto.offset.reset", "earliest")])
        .await
        .unwrap();
    for p in 0..PARTITIONS {
        support::produce(&admin, &topic, p, "before", BEFORE).await;
    }
    drop(admin);
    let extra = [("share.close.timeout.ms", "3000")];
    let mut fleet = support::Fleet::start(6, &bootstrap, &group, &topic, &extra).await;
    let total_before = PARTITIONS as usize * BEFORE;
    let deadline = Instant::now() + Duration::from_secs(120);
    while (0..PARTITIONS)
        .map(|p| fleet.ledger.distinct(p))
        .sum::<usize>()
        < total_before / 5
    {
        assert!(Instant::now() < deadline, "no progress before the outage");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    support::harness("stop_broker()").await;
    let down = Instant::now();
    let mut closes = Vec::new();
    for _ in 0..2 {
        closes.push(fleet.close_one().await);
    }
    println!("closes during the outage took {closes:?}");
    let left = Duration::from_secs(15).saturating_sub(down.elapsed());
    tokio::time::sleep(left).await;
    support::harness("start_broker()").await;
    println!("broker back after {:?}", down.elapsed());
    for _ in 0..2 {
        fleet.add(&bootstrap, &group, &topic, &extra).await;
    }
    produce_after_and_wait(
        &fleet,
        &bootstrap,
        &topic,
        [PARTITIONS as usize, BEFORE, AFTER],
        "outage",
    )
    .await;
    for took in closes {
        assert!(
            took < Duration::from_secs(5),
            "a close during the outage took {took:?}"
        );
    }
    fleet.close().await;
}

/// Once the broker is back: `after` more records on each of `partitions` partitions that had
/// `before` each, then every record delivered; prints each partition's longest gap since `what`
/// and the redeliveries.
async fn produce_after_and_wait(
    fleet: &support::Fleet,
    bootstrap: &str,
    topic: &str,
    [partitions, before, after]: [usize; 3],
    what: &str,
) {
    let partitions = partitions as i32;
    fleet.ledger.mark_gap_start(partitions);
    let admin = Admin::connect(bootstrap, TIMEOUT).await.unwrap();
    for p in 0..partitions {
        support::produce(&admin, topic, p, "after", after).await;
    }
    fleet
        .wait_all(
            &vec![before + after; partitions as usize],
            Duration::from_secs(60),
            Duration::from_secs(300),
        )
        .await;
    for p in 0..partitions {
        println!(
            "partition {p}: {} distinct, longest gap after the {what} {:?}",
            fleet.ledger.distinct(p),
            fleet.ledger.longest_gap(p)
        );
    }
    println!("redelivered {}", fleet.ledger.redelivered());
}
