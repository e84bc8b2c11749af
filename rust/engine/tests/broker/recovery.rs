//! A member that recovers: fenced after missed heartbeats it rejoins with the same id, a panicking
//! fetcher fails the member and its partitions move, a partition the broker stopped serving is
//! recovered.

use super::*;

/// A member that stops heartbeating is fenced once `share.session.timeout.ms` (45 s, the
/// smallest the broker allows) passes. When it heartbeats again the coordinator answers
/// UNKNOWN_MEMBER_ID (or FENCED_MEMBER_EPOCH); the engine rejoins at epoch 0 with the same
/// member id, gets its partitions back and keeps consuming.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fenced_member_rejoins_with_the_same_id_and_keeps_consuming() {
    let f = fixture("rejoin", 2, 10, &[("share.session.timeout.ms", "45000")]).await;
    let admin = Admin::connect(&f.bootstrap, TIMEOUT).await.unwrap();
    let c = f.consumer(&[]).await;
    let member = c.member_id().to_string();
    let first = consume(&c, 20, AckKind::Accept, TIMEOUT).await;
    assert_eq!(first.len(), 20);
    assert_eq!(c.assignment().len(), 2);

    c.pause_heartbeats_for_tests(true);
    let paused_at = Instant::now();
    // Keep polling (and accepting) while paused, and produce once the member is fenced: the
    // test shows whether the broker still serves a fenced member's share sessions.
    let mut during_pause = BTreeSet::new();
    let mut produced_while_fenced = false;
    let mut poll_errors = Vec::new();
    while paused_at.elapsed() < Duration::from_secs(52) {
        if !produced_while_fenced && paused_at.elapsed() > Duration::from_secs(47) {
            for p in 0..2 {
                admin
                    .produce(
                        &f.topic,
                        p,
                        &values(&format!("fenced-{p}"), 5),
                        Compression::None,
                    )
                    .await
                    .unwrap();
            }
            produced_while_fenced = true;
        }
        match c.poll(Duration::from_millis(500)).await {
            Ok(Some(b)) => {
                during_pause.extend(b.records().map(|r| (r.partition(), r.offset())));
                c.acknowledge(&b.acks(AckKind::Accept)).unwrap();
            }
            Ok(None) => {}
            Err(e) => poll_errors.push(e.to_string()),
        }
    }
    assert!(
        poll_errors.is_empty(),
        "poll failed while paused: {poll_errors:?}"
    );
    assert_eq!(c.metrics().rejoins, 0, "rejoined while paused");
    c.pause_heartbeats_for_tests(false);
    let resumed_at = Instant::now();
    while c.metrics().rejoins == 0 && resumed_at.elapsed() < TIMEOUT {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!(
        "rejoins {} after {:?}; {} of the 10 records produced while fenced were delivered \
         before the rejoin",
        c.metrics().rejoins,
        resumed_at.elapsed(),
        during_pause.len()
    );
    assert!(
        c.metrics().rejoins >= 1,
        "the coordinator never fenced the member"
    );
    assert_eq!(c.member_id(), member);

    for p in 0..2 {
        admin
            .produce(
                &f.topic,
                p,
                &values(&format!("after-{p}"), 10),
                Compression::None,
            )
            .await
            .unwrap();
    }
    let second = consume(
        &c,
        30 - during_pause.len(),
        AckKind::Accept,
        Duration::from_secs(60),
    )
    .await;
    println!(
        "after the rejoin: {} records in {:?}; assignment {:?}; metrics {:?}",
        second.len(),
        resumed_at.elapsed(),
        c.assignment(),
        c.metrics()
    );
    assert!(
        second.keys().all(|k| !during_pause.contains(k)),
        "a record accepted while fenced came again"
    );
    assert_eq!(
        second.len() + during_pause.len(),
        30,
        "records produced while fenced and after the rejoin not all consumed"
    );
    assert!(second.keys().all(|(_, offset)| *offset >= 10));
    assert_eq!(c.assignment().len(), 2);
    assert_eq!(c.metrics().ack_errors, 0);
    c.close().await.unwrap();
}

/// A panic in a member's fetcher fails the member (poll reports it, with the panic's message)
/// and makes it leave the group, so another member gets its partitions at once rather than
/// after the session timeout (45 s), and consumes what was left: nothing is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_fetcher_fails_the_member_and_its_partitions_move() {
    let f = fixture("panic", 2, 100, &[]).await;
    let a = f.consumer(&[("max.poll.records", "10")]).await;
    let mut accepted = BTreeSet::new();
    let deadline = Instant::now() + TIMEOUT;
    while accepted.is_empty() && Instant::now() < deadline {
        if let Some(batch) = a.poll(Duration::from_millis(500)).await.expect("poll") {
            let results = a
                .acknowledge_sync(&batch.acks(AckKind::Accept), TIMEOUT)
                .await
                .expect("accept");
            assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
            accepted.extend(batch.records().map(|r| (r.partition(), r.offset())));
        }
    }
    assert!(!accepted.is_empty(), "the first member got nothing");
    let b = f.consumer(&[]).await;
    let deadline = Instant::now() + TIMEOUT;
    while b.assignment().is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        b.assignment().len(),
        1,
        "the second member got no partition"
    );

    a.inject_fetcher_panic_for_tests("injected fetcher panic");
    let failed_at = Instant::now();
    let error = loop {
        match a.poll(Duration::from_millis(500)).await {
            Err(e) => break e,
            Ok(Some(batch)) => a.acknowledge(&batch.acks(AckKind::Release)).unwrap(),
            Ok(None) => {}
        }
        assert!(
            failed_at.elapsed() < TIMEOUT,
            "poll never reported the panic"
        );
    };
    println!("poll after the panic: {error}");
    assert!(
        matches!(&error, sharesink_engine::EngineError::TaskFailed { task: "fetcher", message }
            if message.contains("injected fetcher panic")),
        "{error}"
    );
    assert_eq!(error.kind(), sharesink_engine::ErrorKind::Internal);
    // The failed member left: the other gets both partitions well within the session timeout.
    while b.assignment().len() < 2 && failed_at.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!(
        "second member has {:?} {:?} after the panic",
        b.assignment(),
        failed_at.elapsed()
    );
    assert_eq!(
        b.assignment().len(),
        2,
        "the failed member kept its partition"
    );
    let rest = consume(&b, 200 - accepted.len(), AckKind::Accept, TIMEOUT).await;
    accepted.extend(rest.keys().copied());
    assert_eq!(accepted.len(), 200, "records lost with the failed member");
    b.close().await.expect("close");
    a.close().await.expect("close after failure");
}

/// Issue 14's stall, made on purpose: the broker's share session stops holding a partition
/// while the member believes it does (what a broker restart left behind), so every fetch
/// succeeds and brings nothing from it. The stall watch notices the partition is quiet while
/// records wait in it, rebuilds the session, and every record arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_the_broker_stopped_serving_is_recovered() {
    let f = fixture("stall", 2, 200, &[]).await;
    let stall = Duration::from_secs(3);
    let config = ConsumerConfig::from_properties(&properties([
        ("bootstrap.servers", f.bootstrap.as_str()),
        ("group.id", f.group.as_str()),
        ("max.poll.records", "50"),
        ("fetch.max.wait.ms", "200"),
        ("share.partition.stall.ms", "3000"),
    ]))
    .unwrap();
    let c = ShareConsumer::start(config, vec![f.topic.clone()])
        .await
        .unwrap();
    let mut seen: BTreeSet<(i32, i64)> = BTreeSet::new();
    let accept = |c: &ShareConsumer, batch: Batch, seen: &mut BTreeSet<(i32, i64)>| {
        for r in batch.records() {
            seen.insert((r.partition(), r.offset()));
        }
        c.acknowledge(&acks_for(&batch, AckKind::Accept)).unwrap();
    };
    let deadline = Instant::now() + TIMEOUT;
    while seen.len() < 400 && Instant::now() < deadline {
        if let Some(batch) = c.poll(Duration::from_millis(200)).await.unwrap() {
            accept(&c, batch, &mut seen);
        }
    }
    assert_eq!(seen.len(), 400, "the first records");
    c.diverge_session_for_tests(&f.topic, 0);
    // Let the next fetch carry the divergence, then give partition 0 records to serve.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let admin = Admin::connect(&f.bootstrap, TIMEOUT).await.unwrap();
    for p in 0..2 {
        admin
            .produce(
                &f.topic,
                p,
                &values(&format!("later-{p}"), 100),
                Compression::None,
            )
            .await
            .unwrap();
    }
    let resets_before = c.metrics().session_resets;
    let started = Instant::now();
    let mut recovered_after = None;
    // Without the watch partition 0 never delivers again; with it, within about stall × 2.
    let deadline = Instant::now() + stall * 6;
    while seen.len() < 600 && Instant::now() < deadline {
        if let Some(batch) = c.poll(Duration::from_millis(200)).await.unwrap() {
            let p0 = batch
                .records()
                .any(|r| r.partition() == 0 && r.offset() >= 200);
            accept(&c, batch, &mut seen);
            if p0 && recovered_after.is_none() {
                recovered_after = Some(started.elapsed());
            }
        }
    }
    let p0 = seen.iter().filter(|(p, _)| *p == 0).count();
    let m = c.metrics();
    println!("partition 0 delivered again after {recovered_after:?}; metrics {m:?}");
    assert_eq!(
        p0, 300,
        "partition 0 stalled: {p0} of 300 records (metrics {m:?})"
    );
    assert_eq!(seen.len(), 600);
    assert!(
        m.session_resets > resets_before,
        "no session rebuild counted"
    );
    c.close().await.unwrap();
}
