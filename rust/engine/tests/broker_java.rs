//! Tests against a real Kafka 4.4 broker that also drive Kafka's own Java clients.
//!
//! Built only with `--features broker-tests`. Every test needs two variables and FAILS (never
//! skips) when one is missing:
//!
//! - `SHARESINK_BOOTSTRAP`: host:port of a broker with share groups on (the harness's PLAINTEXT
//!   listener);
//! - `SHARESINK_KAFKA_CLASSPATH`: a Java classpath holding kafka-clients 4.4, e.g. the
//!   harness's `$KAFKA_CLASSPATH` (`<KAFKA_LIB>/*`, see `build/cluster/env` or
//!   `$SHARESINK_CLUSTER_DIR/env`).
//!
//! `javac` and `java` (JDK 17+) must be on the PATH: the helper `tests/java/KafkaClientHelper.java`
//! is compiled at test time against that classpath and run as child processes (Java share
//! consumers with explicit ACCEPT, topic creation with configs, a classic consumer that dumps a
//! topic with its headers).
//!
//! ```sh
//! SHARESINK_PORT_BASE=42000 SHARESINK_CLUSTER_DIR=/tmp/engine-dev python3 tests/harness/cluster.py up
//! . /tmp/engine-dev/env
//! SHARESINK_BOOTSTRAP=$BOOTSTRAP SHARESINK_KAFKA_CLASSPATH="$KAFKA_CLASSPATH" \
//!   cargo test -p sharesink-engine --features broker-tests --test broker_java
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use kafka_protocol::records::Compression;
use sharesink_engine::{properties, AckKind, ConsumerConfig, ShareConsumer};
use sharesink_testkit::{Admin, ProduceRecord};

mod support;

const TIMEOUT: Duration = Duration::from_secs(30);

fn env(name: &str) -> String {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: see the top of rust/engine/tests/broker_java.rs")
    })
}

fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}

fn wall_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn java(args: &[&str]) -> Command {
    let mut cmd = Command::new("java");
    cmd.arg("-cp")
        .arg(support::java::classpath())
        .arg("KafkaClientHelper")
        .args(args);
    cmd
}

/// Runs the helper to completion; returns its stdout lines.
fn java_run(args: &[&str]) -> Vec<String> {
    let out = java(args).output().expect("running java");
    assert!(
        out.status.success(),
        "java helper {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// A Java share consumer running as a child process; its stdout lines are collected as they
/// come.
struct JavaMember {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    reader: std::thread::JoinHandle<()>,
}

impl JavaMember {
    fn start(bootstrap: &str, group: &str, topic: &str, name: &str, pause_ms: u64) -> JavaMember {
        let mut child = java(&[
            "share",
            bootstrap,
            group,
            topic,
            name,
            "10",
            &pause_ms.to_string(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting the Java share consumer");
        let stdout = child.stdout.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                sink.lock().unwrap().push(line);
            }
        });
        JavaMember {
            child,
            lines,
            reader,
        }
    }

    fn deliveries(&self) -> Vec<Delivery> {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .filter_map(|l| Delivery::parse_java(l))
            .collect()
    }

    /// Closes its stdin (the helper then closes the consumer) and waits for it to exit.
    fn stop(mut self) -> Vec<String> {
        drop(self.child.stdin.take());
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "Java share consumer exited with {status}");
                break;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("Java share consumer did not stop");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        self.reader.join().unwrap();
        Arc::try_unwrap(self.lines).unwrap().into_inner().unwrap()
    }
}

/// One delivery of one record to one member, held from `polled_ms` until `acked_ms`.
#[derive(Debug, Clone)]
struct Delivery {
    member: String,
    partition: i32,
    offset: i64,
    delivery_count: i16,
    polled_ms: i64,
    acked_ms: i64,
    ack_ok: bool,
}

impl Delivery {
    /// `REC <member> <topic> <partition> <offset> <delivery-count> <polled> <acked> <error>`
    fn parse_java(line: &str) -> Option<Delivery> {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != 9 || f[0] != "REC" {
            return None;
        }
        Some(Delivery {
            member: f[1].to_string(),
            partition: f[3].parse().ok()?,
            offset: f[4].parse().ok()?,
            delivery_count: f[5].parse().unwrap_or(-1),
            polled_ms: f[6].parse().ok()?,
            acked_ms: f[7].parse().ok()?,
            ack_ok: f[8] == "none",
        })
    }
}

/// Consumes with ACCEPT (acknowledge_sync per batch, `pause` per batch to let the others get a
/// share) until `stop` is set; returns its deliveries.
async fn run_engine_member(
    name: String,
    c: Arc<ShareConsumer>,
    pause: Duration,
    seen: Arc<Mutex<Vec<Delivery>>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
) {
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let Some(batch) = c.poll(Duration::from_millis(200)).await.expect("poll") else {
            continue;
        };
        let polled_ms = wall_ms();
        tokio::time::sleep(pause).await;
        let results = c
            .acknowledge_sync(&batch.acks(AckKind::Accept), TIMEOUT)
            .await
            .expect("acknowledge");
        let acked_ms = wall_ms();
        let ack_ok = results.iter().all(|r| r.is_ok());
        if !ack_ok {
            println!("{name}: ack results {results:?}");
        }
        let mut seen = seen.lock().unwrap();
        for r in batch.records() {
            seen.push(Delivery {
                member: name.clone(),
                partition: r.partition(),
                offset: r.offset(),
                delivery_count: r.delivery_count(),
                polled_ms,
                acked_ms,
                ack_ok,
            });
        }
    }
}

async fn engine_member(bootstrap: &str, group: &str, topic: &str) -> ShareConsumer {
    let props = properties([
        ("bootstrap.servers", bootstrap),
        ("group.id", group),
        ("fetch.max.wait.ms", "200"),
        ("max.poll.records", "10"),
    ]);
    ShareConsumer::start(
        ConsumerConfig::from_properties(&props).unwrap(),
        vec![topic.to_string()],
    )
    .await
    .expect("start")
}

fn values(prefix: &str, n: usize) -> Vec<ProduceRecord> {
    (0..n)
        .map(|i| ProduceRecord::value(Bytes::from(format!("{prefix}-{i}"))))
        .collect()
}

/// Two Java `KafkaShareConsumer`s and two engine members in one share group on one topic
/// whose single partition they all share (members > partitions, so the simple assignor gives
/// it to each). Records are produced while they consume. The union must hold every record;
/// no record may be delivered to two members (with ACCEPT only and no lock running out there
/// is no legitimate redelivery, so any second delivery is a failure, and the check reports
/// whether the two holds overlapped in time); a fresh member afterwards finds nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java_and_engine_members_share_one_group() {
    const RECORDS: usize = 600;
    let bootstrap = env("SHARESINK_BOOTSTRAP");
    let admin = Admin::connect(&bootstrap, TIMEOUT).await.unwrap();
    let topic = unique("mixed");
    let group = unique("mixed-g");
    admin.create_topic(&topic, 1).await.unwrap();
    admin
        .set_group_config(&group, &[("share.auto.offset.reset", "earliest")])
        .await
        .unwrap();

    let java_members = [
        JavaMember::start(&bootstrap, &group, &topic, "java-1", 40),
        JavaMember::start(&bootstrap, &group, &topic, "java-2", 40),
    ];
    let engines = [
        Arc::new(engine_member(&bootstrap, &group, &topic).await),
        Arc::new(engine_member(&bootstrap, &group, &topic).await),
    ];
    // Records come only once all four members hold the partition (the JVMs take a few
    // seconds to start and join; on a loaded machine more).
    let joined = Instant::now();
    loop {
        let (b, g) = (bootstrap.clone(), group.clone());
        let line = tokio::task::spawn_blocking(move || java_run(&["members", &b, &g]).join(" "))
            .await
            .unwrap();
        if line.contains("MEMBERS 4 4") {
            println!("all four members assigned after {:?}", joined.elapsed());
            break;
        }
        assert!(
            joined.elapsed() < Duration::from_secs(90),
            "the group never had four assigned members: {line}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    let engine_seen = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let tasks: Vec<_> = engines
        .iter()
        .enumerate()
        .map(|(i, c)| {
            tokio::spawn(run_engine_member(
                format!("engine-{}", i + 1),
                c.clone(),
                Duration::from_millis(40),
                engine_seen.clone(),
                stop.clone(),
            ))
        })
        .collect();
    for chunk in 0..RECORDS / 10 {
        admin
            .produce(
                &topic,
                0,
                &values(&format!("c{chunk}"), 10),
                Compression::None,
            )
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let union = |engine_seen: &Mutex<Vec<Delivery>>| {
        let mut all: Vec<Delivery> = engine_seen.lock().unwrap().clone();
        for j in &java_members {
            all.extend(j.deliveries());
        }
        all
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let distinct: BTreeSet<i64> = union(&engine_seen).iter().map(|d| d.offset).collect();
        if distinct.len() >= RECORDS || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // Let any (wrong) redelivery show up before stopping.
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for t in tasks {
        t.await.unwrap();
    }
    for e in &engines {
        e.close().await.unwrap();
    }
    let mut all: Vec<Delivery> = engine_seen.lock().unwrap().clone();
    for j in java_members {
        let lines = j.stop();
        all.extend(lines.iter().filter_map(|l| Delivery::parse_java(l)));
    }

    let mut per_member: BTreeMap<String, usize> = BTreeMap::new();
    let mut by_offset: BTreeMap<(i32, i64), Vec<&Delivery>> = BTreeMap::new();
    for d in &all {
        *per_member.entry(d.member.clone()).or_default() += 1;
        by_offset
            .entry((d.partition, d.offset))
            .or_default()
            .push(d);
    }
    println!("deliveries per member: {per_member:?}");
    let java_total: usize = per_member
        .iter()
        .filter(|(m, _)| m.starts_with("java"))
        .map(|(_, n)| n)
        .sum();
    let engine_total: usize = per_member
        .iter()
        .filter(|(m, _)| m.starts_with("engine"))
        .map(|(_, n)| n)
        .sum();
    let missing: Vec<i64> = (0..RECORDS as i64)
        .filter(|o| !by_offset.contains_key(&(0, *o)))
        .collect();
    assert!(missing.is_empty(), "records never delivered: {missing:?}");
    let twice: Vec<String> = by_offset
        .iter()
        .filter(|(_, ds)| ds.len() > 1)
        .map(|((p, o), ds)| {
            let overlapping = ds.iter().any(|a| {
                ds.iter().any(|b| {
                    a.member != b.member && a.polled_ms <= b.acked_ms && b.polled_ms <= a.acked_ms
                })
            });
            format!("{p}-{o} (held at the same time: {overlapping}): {ds:?}")
        })
        .collect();
    assert!(
        twice.is_empty(),
        "records delivered more than once: {twice:#?}"
    );
    assert!(
        all.iter().all(|d| d.delivery_count == 1),
        "redeliveries despite ACCEPT"
    );
    assert!(all.iter().all(|d| d.ack_ok), "an ACCEPT failed");
    assert!(
        java_total > 0 && engine_total > 0,
        "both kinds of member must take part: java {java_total}, engine {engine_total}"
    );

    // Nothing is left for a new member.
    let fresh = engine_member(&bootstrap, &group, &topic).await;
    let quiet_until = Instant::now() + Duration::from_secs(8);
    while Instant::now() < quiet_until {
        if let Some(b) = fresh.poll(Duration::from_millis(300)).await.unwrap() {
            panic!(
                "ACCEPTed record redelivered: offset {} count {}",
                b.record(0).unwrap().offset(),
                b.record(0).unwrap().delivery_count()
            );
        }
    }
    fresh.close().await.unwrap();
}

/// Share version 2 dead-letter queue: with group `share.delivery.count.limit=2` and
/// `errors.deadletterqueue.topic.name=dlq.<x>` (a topic created with
/// `errors.deadletterqueue.group.enable=true`), records released on their second delivery and
/// records rejected are archived into the DLQ topic; an accepted record is not. The DLQ topic
/// is read back with a classic Java consumer and its records and headers are printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn archived_records_land_in_the_dead_letter_queue() {
    let bootstrap = env("SHARESINK_BOOTSTRAP");
    let admin = Admin::connect(&bootstrap, TIMEOUT).await.unwrap();
    let topic = unique("dlqsrc");
    let group = unique("dlq-g");
    let dlq = format!("dlq.{}", unique("t"));
    java_run(&[
        "create-topic",
        &bootstrap,
        &dlq,
        "1",
        "errors.deadletterqueue.group.enable=true",
    ]);
    admin.create_topic(&topic, 1).await.unwrap();
    admin
        .set_group_config(
            &group,
            &[
                ("share.auto.offset.reset", "earliest"),
                ("share.delivery.count.limit", "2"),
                ("errors.deadletterqueue.topic.name", dlq.as_str()),
                ("errors.deadletterqueue.copy.record.enable", "true"),
            ],
        )
        .await
        .expect("DLQ group configs");
    let records: Vec<ProduceRecord> = (0..4)
        .map(|i| ProduceRecord {
            key: Some(Bytes::from(format!("k{i}"))),
            value: Some(Bytes::from(format!("v{i}"))),
            headers: vec![("origin".into(), Some(Bytes::from(format!("h{i}"))))],
        })
        .collect();
    admin
        .produce(&topic, 0, &records, Compression::None)
        .await
        .unwrap();

    // Offsets 0 and 1: RELEASE twice (the limit), 2: REJECT, 3: ACCEPT.
    let c = engine_member(&bootstrap, &group, &topic).await;
    let decide = |offset: i64, delivery: i16| match (offset, delivery) {
        (0 | 1, _) => AckKind::Release,
        (2, _) => AckKind::Reject,
        _ => AckKind::Accept,
    };
    let mut deliveries: Vec<(i64, i16)> = Vec::new();
    let mut idle_since = Instant::now();
    let deadline = Instant::now() + Duration::from_secs(60);
    while idle_since.elapsed() < Duration::from_secs(6) && Instant::now() < deadline {
        let Some(batch) = c.poll(Duration::from_millis(300)).await.unwrap() else {
            continue;
        };
        idle_since = Instant::now();
        let acks: Vec<_> = batch
            .records()
            .map(|r| {
                deliveries.push((r.offset(), r.delivery_count()));
                sharesink_engine::Ack::new(
                    r.topic_arc().clone(),
                    r.partition(),
                    r.offset(),
                    r.offset(),
                    decide(r.offset(), r.delivery_count()),
                )
            })
            .collect();
        let results = c.acknowledge_sync(&acks, TIMEOUT).await.unwrap();
        assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
    }
    c.close().await.unwrap();
    deliveries.sort_unstable();
    println!("deliveries (offset, count): {deliveries:?}");
    assert_eq!(
        deliveries,
        vec![(0, 1), (0, 2), (1, 1), (1, 2), (2, 1), (3, 1)]
    );

    let dumped = java_run(&["dump", &bootstrap, &dlq, "3", "30000"]);
    println!("DLQ topic {dlq}:");
    for line in &dumped {
        println!("  {line}");
    }
    let dlq_records: Vec<&String> = dumped.iter().filter(|l| l.starts_with("DUMP ")).collect();
    assert_eq!(
        dlq_records.len(),
        3,
        "expected offsets 0, 1 (delivery limit) and 2 (rejected) in the DLQ"
    );
    for v in ["v0", "v1", "v2"] {
        assert!(
            dlq_records
                .iter()
                .any(|l| l.contains(&format!("value={v} "))),
            "{v} not in the DLQ"
        );
    }
    assert!(!dlq_records.iter().any(|l| l.contains("value=v3 ")));
    // What the broker writes (4.4.0, copy.record.enable=true): key and value copied, the
    // record's own headers not; provenance in __dlq.errors.* headers.
    let line_of = |v: &str| {
        dlq_records
            .iter()
            .find(|l| l.contains(&format!("value={v} ")))
            .unwrap()
            .to_string()
    };
    for (v, offset, count, message) in [
        ("v0", 0, 2, "Offset delivery count exceeded the threshold."),
        ("v1", 1, 2, "Offset delivery count exceeded the threshold."),
        ("v2", 2, 1, "Offset rejected by client."),
    ] {
        let line = line_of(v);
        for header in [
            format!("__dlq.errors.topic={topic};"),
            "__dlq.errors.partition=0;".to_string(),
            format!("__dlq.errors.offset={offset};"),
            format!("__dlq.errors.group={group};"),
            format!("__dlq.errors.delivery.count={count};"),
            format!("__dlq.errors.message={message};"),
        ] {
            assert!(line.contains(&header), "{header} missing in {line}");
        }
        assert!(line.contains(&format!("key=k{offset} ")), "{line}");
    }
}
