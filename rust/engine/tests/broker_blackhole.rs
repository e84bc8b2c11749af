//! Fault test: a member consuming through the harness's blackhole proxy
//! (tests/harness/proxy.py) survives a broker that silently stops answering, without losing a
//! record: the proxy stops forwarding without closing any socket, then either resumes (the held
//! bytes flow on the old connections) or goes dead (old connections silent forever, new ones
//! forward).
//!
//! Built only with `--features broker-tests`. Needs `SHARESINK_BOOTSTRAP` (the broker's plain
//! listener, for setup and producing), `SHARESINK_PROXIED_BOOTSTRAP` (its PROXIED listener,
//! reached through the proxy) and `SHARESINK_PROXY_CONTROL_PORT`, and FAILS when one is missing.
//! `SHARESINK_BLACKHOLE_SECS` sets how long the blackhole lasts (default 20; the end-to-end test
//! `tests/e2e/test_share_10_network_blackhole.py` holds one for 60 s). With the harness:
//!
//! ```sh
//! python3 tests/harness/cluster.py up && source build/cluster/env
//! export SHARESINK_BOOTSTRAP=$BOOTSTRAP SHARESINK_PROXIED_BOOTSTRAP=$PROXIED_BOOTSTRAP
//! export SHARESINK_PROXY_CONTROL_PORT=$PROXY_CONTROL_PORT
//! cargo test -p sharesink-engine --features broker-tests --test broker_blackhole -- --nocapture
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::records::Compression;
use sharesink_engine::{properties, AckKind, ConsumerConfig, ShareConsumer};
use sharesink_testkit::{Admin, ProduceRecord};

const TIMEOUT: Duration = Duration::from_secs(30);
/// The member's request.timeout.ms: short, so the test is; recovery is bounded by it.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
const PARTITIONS: i32 = 2;
const PER_PARTITION_BEFORE: usize = 200;
const PER_PARTITION_DURING: usize = 200;

/// The tests share one proxy: one at a time.
static PROXY: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: see the top of rust/engine/tests/broker_blackhole.rs")
    })
}

fn init() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

/// Sends one command to the proxy's control port and checks its reply.
fn proxy(command: &str) -> String {
    let port = env("SHARESINK_PROXY_CONTROL_PORT");
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port.parse::<u16>().unwrap()))
        .expect("proxy control port");
    s.write_all(format!("{command}\n").as_bytes()).unwrap();
    let mut reply = String::new();
    BufReader::new(s).read_line(&mut reply).unwrap();
    assert!(
        reply.contains("\"ok\": true"),
        "proxy refused {command}: {reply}"
    );
    reply
}

fn blackhole_for() -> Duration {
    Duration::from_secs(
        std::env::var("SHARESINK_BLACKHOLE_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(20),
    )
}

async fn produce(admin: &Admin, topic: &str, tag: &str, per_partition: usize) {
    for p in 0..PARTITIONS {
        let records: Vec<ProduceRecord> = (0..per_partition)
            .map(|i| ProduceRecord::value(Bytes::from(format!("{tag}-{p}-{i}"))))
            .collect();
        admin
            .produce(topic, p, &records, Compression::None)
            .await
            .expect("produce");
    }
}

async fn setup(name: &str) -> (Admin, String, ShareConsumer) {
    init();
    let admin = Admin::connect(&env("SHARESINK_BOOTSTRAP"), TIMEOUT)
        .await
        .expect("admin");
    let topic = format!("{name}-{}", uuid::Uuid::new_v4().simple());
    let group = format!("{topic}-g");
    admin.create_topic(&topic, PARTITIONS).await.unwrap();
    admin
        .set_group_config(&group, &[("share.auto.offset.reset", "earliest")])
        .await
        .unwrap();
    let proxied = env("SHARESINK_PROXIED_BOOTSTRAP");
    let request_timeout_ms = REQUEST_TIMEOUT.as_millis().to_string();
    let config = ConsumerConfig::from_properties(&properties([
        ("bootstrap.servers", proxied.as_str()),
        ("group.id", group.as_str()),
        ("request.timeout.ms", request_timeout_ms.as_str()),
        ("max.poll.records", "50"),
        ("fetch.max.wait.ms", "200"),
    ]))
    .unwrap();
    let consumer = ShareConsumer::start(config, vec![topic.clone()])
        .await
        .expect("start through the proxy");
    (admin, topic, consumer)
}

/// How the blackhole ends.
#[derive(Clone, Copy, Debug, PartialEq)]
enum End {
    Resume,
    Dead,
}

/// Polls and ACCEPTs (synchronously, so every result is the broker's) until every produced
/// record was accepted with a result of "applied"; blackholes the proxy once `blackhole_after`
/// records were accepted and ends the blackhole as `end` after `blackhole_for()`.
async fn run(end: End) {
    let _one = PROXY.lock().await;
    proxy("forward");
    let (admin, topic, c) = setup(&format!("blackhole-{end:?}").to_lowercase()).await;
    let group = format!("{topic}-g"); // as setup names it
    produce(&admin, &topic, "before", PER_PARTITION_BEFORE).await;
    let total = PARTITIONS as usize * (PER_PARTITION_BEFORE + PER_PARTITION_DURING);
    let blackhole_after = PARTITIONS as usize * PER_PARTITION_BEFORE / 2;
    let hole = blackhole_for();

    let mut deliveries: BTreeMap<(i32, i64), u32> = BTreeMap::new();
    let mut accepted: BTreeSet<(i32, i64)> = BTreeSet::new();
    // Records whose ACCEPT the broker refused on the new session. Either a copy of that ACCEPT
    // sent on the old connection was applied after all (the resumed proxy delivers its held
    // bytes: the share-partition start offset has then moved past them), or the broker released
    // them and they come again.
    let mut refused: BTreeSet<(i32, i64)> = BTreeSet::new();
    let mut accepted_by_replay: BTreeSet<(i32, i64)> = BTreeSet::new();
    let mut start_offsets_checked = Instant::now();
    // The blackhole is ended on a timer of its own: the consumer may be blocked in a call.
    let mut fault: Option<tokio::task::JoinHandle<Instant>> = None;
    let mut blackholed = false;
    let mut switched: Option<Instant> = None;
    let mut recovery: Option<Duration> = None;
    let deadline = Instant::now() + Duration::from_secs(240) + hole;
    while accepted.len() + accepted_by_replay.len() < total {
        assert!(
            Instant::now() < deadline,
            "{} of {total} records accepted before the deadline ({end:?}); metrics {:?}",
            accepted.len(),
            c.metrics()
        );
        if !blackholed && accepted.len() >= blackhole_after {
            blackholed = true;
            println!(
                "{end:?}: blackhole after {} accepted records",
                accepted.len()
            );
            proxy("blackhole");
            let started = Instant::now();
            produce(&admin, &topic, "during", PER_PARTITION_DURING).await;
            fault = Some(tokio::spawn(async move {
                tokio::time::sleep_until((started + hole).into()).await;
                proxy(match end {
                    End::Resume => "resume",
                    End::Dead => "dead",
                });
                println!("{end:?}: blackhole ended after {:?}", started.elapsed());
                Instant::now()
            }));
        }
        if switched.is_none() && fault.as_ref().is_some_and(|f| f.is_finished()) {
            switched = Some(fault.take().expect("checked").await.expect("proxy switch"));
        }
        if !refused.is_empty() && start_offsets_checked.elapsed() > Duration::from_secs(2) {
            start_offsets_checked = Instant::now();
            let partitions: Vec<i32> = (0..PARTITIONS).collect();
            let start = admin
                .share_partition_start_offsets(&group, &topic, &partitions)
                .await;
            println!(
                "{end:?}: {} refused records; share-partition start offsets {start:?}",
                refused.len()
            );
            if let Ok(start) = start {
                let done: Vec<(i32, i64)> = refused
                    .iter()
                    .filter(|(p, o)| start.get(p).is_some_and(|s| o < s))
                    .cloned()
                    .collect();
                for record in done {
                    refused.remove(&record);
                    if !accepted.contains(&record) {
                        accepted_by_replay.insert(record);
                    }
                }
            }
        }
        let batch = match c.poll(Duration::from_millis(500)).await {
            Ok(Some(batch)) => batch,
            Ok(None) => continue,
            Err(e) => panic!("poll failed ({end:?}): {e}"),
        };
        if recovery.is_none()
            && switched.is_none()
            && fault.as_ref().is_some_and(|f| f.is_finished())
        {
            switched = Some(fault.take().expect("checked").await.expect("proxy switch"));
        }
        if let (Some(at), None) = (switched, recovery) {
            recovery = Some(at.elapsed());
        }
        for r in batch.records() {
            *deliveries.entry((r.partition(), r.offset())).or_default() += 1;
        }
        // Long enough to outlast the blackhole: unanswered acks are resent on the new session.
        let results = c
            .acknowledge_sync(&batch.acks(AckKind::Accept), hole + 4 * REQUEST_TIMEOUT)
            .await
            .expect("acknowledge_sync");
        for result in results {
            if result.is_ok() {
                for o in result.ack.first_offset..=result.ack.last_offset {
                    accepted.insert((result.ack.partition, o));
                    refused.remove(&(result.ack.partition, o));
                    accepted_by_replay.remove(&(result.ack.partition, o));
                }
            } else {
                for o in result.ack.first_offset..=result.ack.last_offset {
                    refused.insert((result.ack.partition, o));
                }
                // The broker released them (lock expired, or it saw the old connection close):
                // they come again.
                println!(
                    "{end:?}: ack refused ({}), redelivery expected: {:?}",
                    result.error_code, result.ack
                );
            }
        }
    }
    let m = c.metrics();
    let started = Instant::now();
    c.close().await.expect("close");
    let duplicates: u32 = deliveries.values().map(|n| n - 1).sum();
    let lost = total - deliveries.len();
    println!(
        "FIGURES blackhole {end:?}: blackhole {hole:?}, produced {total}, delivered {} distinct, \
         accepted {} (and {} by an ACCEPT replayed from the old connection), duplicates \
         {duplicates}, lost {lost}, recovery {recovery:?} after the {}, acks resent {} records, \
         session resets {}, ack errors {}, close {:?}",
        deliveries.len(),
        accepted.len(),
        accepted_by_replay.len(),
        match end {
            End::Resume => "resume",
            End::Dead => "dead switch",
        },
        m.acks_resent,
        m.session_resets,
        m.ack_errors,
        started.elapsed()
    );
    assert_eq!(lost, 0, "records never delivered");
    assert_eq!(accepted.len() + accepted_by_replay.len(), total);
    let recovery = recovery.expect("no record after the blackhole");
    // Recovery is bounded by the request deadline (the old connection's last request, a long
    // poll of at most fetch.max.wait.ms), the reconnect backoff and a new session: never by
    // the length of the outage.
    let bound = REQUEST_TIMEOUT + Duration::from_millis(200) + Duration::from_secs(5);
    assert!(
        recovery < bound,
        "{end:?}: first record {recovery:?} after the blackhole ended (bound {bound:?})"
    );
    assert!(
        m.session_resets > 0,
        "no share session was re-established: the blackhole did not bite"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumption_survives_a_blackhole_that_resumes() {
    run(End::Resume).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumption_survives_a_blackhole_whose_connections_stay_dead() {
    run(End::Dead).await;
}

/// close() during a blackhole returns within share.close.timeout.ms, however long the broker
/// stays silent (a Connect task must stop within its shutdown grace).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_during_a_blackhole_returns_in_time() {
    let _one = PROXY.lock().await;
    proxy("forward");
    let (admin, topic, c) = setup("blackhole-close").await;
    produce(&admin, &topic, "before", 50).await;
    let deadline = Instant::now() + TIMEOUT;
    let mut got = 0;
    while got == 0 && Instant::now() < deadline {
        if let Some(batch) = c.poll(Duration::from_millis(500)).await.unwrap() {
            got += batch.len();
            c.acknowledge(&batch.acks(AckKind::Accept)).unwrap();
        }
    }
    assert!(got > 0, "nothing consumed before the blackhole");
    proxy("blackhole");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let started = Instant::now();
    let closed = tokio::time::timeout(Duration::from_secs(20), c.close()).await;
    let took = started.elapsed();
    proxy("dead"); // the held bytes of the old connections never arrive
    proxy("forward");
    println!("FIGURES blackhole close: close took {took:?}");
    closed.expect("close hung").expect("close");
    // share.close.timeout.ms defaults to 3 s.
    assert!(took < Duration::from_secs(4), "close took {took:?}");
}
