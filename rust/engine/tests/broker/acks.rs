//! What the broker does with each acknowledgement: ACCEPT once, RELEASE redelivers with delivery
//! count 2, REJECT never again, RENEW keeps a record past its lock, close releases at once, the
//! delivery-count limit archives; record contents and headers intact.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_reports_share_apis() {
    let report = probe(&bootstrap(), TIMEOUT).await.expect("probe");
    println!("{report}");
    let (_, max) = report.share_fetch_versions().expect("ShareFetch offered");
    assert!(max >= 1);
    assert!(report.share_acknowledge_versions().is_some());
    assert!(report.share_group_heartbeat_versions().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_consumes_everything_once() {
    let f = fixture("accept", 5, 120, &[]).await; // one codec per partition
    let c = f.consumer(&[]).await;
    let started = Instant::now();
    let seen = consume(&c, 600, AckKind::Accept, Duration::from_secs(60)).await;
    println!(
        "600 records in {:?}; metrics {:?}",
        started.elapsed(),
        c.metrics()
    );
    assert_eq!(seen.len(), 600, "missing records");
    assert!(seen.values().all(|dc| *dc == 1));
    assert_quiet(&c, Duration::from_secs(3)).await;
    let m = c.metrics();
    assert_eq!(m.records_fetched, 600);
    assert_eq!(m.accepted, 600);
    assert_eq!(m.ack_errors, 0);
    c.close().await.expect("close");

    // A new member of the same group finds nothing left.
    let again = f.consumer(&[]).await;
    assert_quiet(&again, Duration::from_secs(8)).await;
    again.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_contents_and_headers_survive() {
    let f = fixture("contents", 1, 5, &[]).await;
    let c = f.consumer(&[]).await;
    let batch = loop {
        if let Some(b) = c.poll(TIMEOUT).await.expect("poll") {
            break b;
        }
    };
    let r = batch.record(0).unwrap();
    assert_eq!(r.topic(), f.topic.as_str());
    assert_eq!(r.offset(), 0);
    assert_eq!(r.key(), Some(&b"k-0-0"[..]));
    assert_eq!(r.value(), Some(&b"v-0-0"[..]));
    let header = r.headers().next().expect("a header");
    assert_eq!(header.key(), b"h");
    assert_eq!(header.value(), Some(&b"0"[..]));
    let lock = c.acquisition_lock_timeout().expect("lock timeout reported");
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    assert!(
        r.lock_deadline_ms() > now_ms && r.lock_deadline_ms() <= now_ms + lock.as_millis() as i64
    );
    let results = c
        .acknowledge_sync(&acks_for(&batch, AckKind::Accept), TIMEOUT)
        .await
        .expect("ack");
    assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
    c.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_redelivers_with_delivery_count_2() {
    let f = fixture("release", 1, 20, &[]).await;
    let c = f.consumer(&[]).await;
    let first = consume(&c, 20, AckKind::Release, Duration::from_secs(30)).await;
    assert_eq!(first.len(), 20);
    assert!(first.values().all(|dc| *dc == 1));
    let second = consume(&c, 20, AckKind::Accept, Duration::from_secs(30)).await;
    assert_eq!(second.len(), 20, "released records not redelivered");
    assert!(second.values().all(|dc| *dc == 2), "{second:?}");
    assert_quiet(&c, Duration::from_secs(2)).await;
    let m = c.metrics();
    assert_eq!((m.released, m.accepted), (20, 20));
    c.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reject_never_redelivers() {
    let f = fixture("reject", 1, 20, &[]).await;
    let c = f.consumer(&[]).await;
    let seen = consume(&c, 20, AckKind::Reject, Duration::from_secs(30)).await;
    assert_eq!(seen.len(), 20);
    assert_quiet(&c, Duration::from_secs(3)).await;
    assert_eq!(c.metrics().rejected, 20);
    c.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_releases_unacknowledged_records_at_once() {
    let f = fixture("close", 1, 10, &[]).await;
    let c = f.consumer(&[]).await;
    let seen = consume(&c, 10, AckKind::Accept, Duration::ZERO).await; // nothing polled yet
    assert!(seen.is_empty());
    // Poll without acknowledging, then close: the records must come back well before the
    // 30 s lock would expire.
    let mut held = BTreeMap::new();
    let deadline = Instant::now() + TIMEOUT;
    while held.len() < 10 && Instant::now() < deadline {
        if let Some(b) = c.poll(Duration::from_millis(500)).await.expect("poll") {
            held.extend(
                b.records()
                    .map(|r| ((r.partition(), r.offset()), r.delivery_count())),
            );
        }
    }
    assert_eq!(held.len(), 10);
    let held_metrics = format!("{:?}", c.metrics());
    c.close().await.expect("close");
    let started = Instant::now();
    let c2 = f.consumer(&[]).await;
    let again = consume(&c2, 10, AckKind::Accept, Duration::from_secs(20)).await;
    assert_eq!(again.len(), 10, "records not released by close");
    // Close's release makes the second member's acquisition the very next delivery of each
    // record. The count is compared with what the first member saw rather than with 1: CI once
    // saw a count other than 2 here under load, and this way the failure says which side moved.
    let expected: BTreeMap<Key, i16> = held.iter().map(|(k, dc)| (*k, dc + 1)).collect();
    assert_eq!(
        again,
        expected,
        "delivery counts after close; the first member saw {held:?}, its metrics {held_metrics}; \
         the second member's metrics {:?}",
        c2.metrics()
    );
    println!("redelivered after close in {:?}", started.elapsed());
    c2.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renew_keeps_a_record_past_its_lock() {
    // 15 s is the smallest lock the broker allows by default.
    let f = fixture("renew", 1, 2, &[("share.record.lock.duration.ms", "15000")]).await;
    let c = f.consumer(&[]).await;
    let mut records = Vec::new();
    let deadline = Instant::now() + TIMEOUT;
    while records.len() < 2 && Instant::now() < deadline {
        if let Some(b) = c.poll(Duration::from_millis(500)).await.expect("poll") {
            records.extend(b.records().map(Held::of));
        }
    }
    assert_eq!(records.len(), 2);
    assert_eq!(
        c.acquisition_lock_timeout(),
        Some(Duration::from_millis(15000))
    );
    let (renewed, expiring) = (&records[0], &records[1]);
    let held_since = Instant::now();
    while held_since.elapsed() < Duration::from_secs(20) {
        let results = c
            .acknowledge_sync(
                &[Ack::new(
                    renewed.topic.clone(),
                    renewed.partition,
                    renewed.offset,
                    renewed.offset,
                    AckKind::Renew,
                )],
                TIMEOUT,
            )
            .await
            .expect("renew");
        assert!(results[0].is_ok(), "renew refused: {results:?}");
        tokio::time::sleep(Duration::from_secs(4)).await;
    }
    // Only the renewed record is acknowledged: the broker applies a partition's acks in one
    // request all or nothing, so an ACCEPT of the expired record would fail this one too.
    let results = c
        .acknowledge_sync(
            &[Ack::new(
                renewed.topic.clone(),
                renewed.partition,
                renewed.offset,
                renewed.offset,
                AckKind::Accept,
            )],
            TIMEOUT,
        )
        .await
        .expect("accept");
    println!("after 20 s: {results:?}; metrics {:?}", c.metrics());
    assert!(
        results[0].is_ok(),
        "renewed record lost its lock: {results:?}"
    );
    assert!(c.metrics().renewed >= 4);
    // The unrenewed record's lock expired: polling again, the member gets it back (count 2),
    // while the renewed one is never redelivered.
    let again = hold(&c, 1, TIMEOUT).await;
    let redelivered: Vec<(i64, i16)> = again
        .iter()
        .map(|r| (r.offset(), r.delivery_count()))
        .collect();
    assert_eq!(redelivered, vec![(expiring.offset, 2)]);
    c.acknowledge(&acks_for_records(&again, AckKind::Accept))
        .expect("accept");
    assert_quiet(&c, Duration::from_secs(2)).await;
    c.close().await.expect("close");
}

/// With group `share.delivery.count.limit=2` (the smallest allowed), a record released on its
/// second delivery is archived: nobody gets it again, not even a new member.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delivery_count_limit_archives_a_released_record() {
    let f = fixture("dclimit", 1, 4, &[("share.delivery.count.limit", "2")]).await;
    let c = f.consumer(&[]).await;
    let first = consume(&c, 4, AckKind::Release, TIMEOUT).await;
    assert_eq!(first.len(), 4);
    assert!(first.values().all(|dc| *dc == 1), "{first:?}");
    let second = consume(&c, 4, AckKind::Release, TIMEOUT).await;
    assert_eq!(second.len(), 4, "released records not redelivered");
    assert!(second.values().all(|dc| *dc == 2), "{second:?}");
    // Released at the limit: archived, never delivered a third time.
    assert_quiet(&c, Duration::from_secs(5)).await;
    let m = c.metrics();
    println!("metrics {m:?}");
    assert_eq!((m.released, m.ack_errors), (8, 0));
    c.close().await.expect("close");
    let again = f.consumer(&[]).await;
    assert_quiet(&again, Duration::from_secs(6)).await;
    again.close().await.expect("close");
}
