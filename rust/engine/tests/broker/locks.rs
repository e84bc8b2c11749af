//! Acquisition locks: an expired lock redelivers; records buffered in the engine, or given back to
//! it, stay held past their locks while the caller does not poll, and are released past the hold
//! bound.

use super::*;

/// A record held without an acknowledgement goes back to the broker when its acquisition
/// lock (15 s, the smallest the broker allows) runs out, and is delivered again with delivery
/// count 2: here to the same member, whose session keeps fetching.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_lock_redelivers_with_delivery_count_2() {
    let f = fixture(
        "expiry",
        1,
        3,
        &[("share.record.lock.duration.ms", "15000")],
    )
    .await;
    let c = f.consumer(&[]).await;
    let held = hold(&c, 3, TIMEOUT).await;
    let acquired_at = Instant::now();
    assert_eq!(held.len(), 3);
    assert!(held.iter().all(|r| r.delivery_count() == 1));
    let lock = c.acquisition_lock_timeout().expect("lock timeout reported");
    assert_eq!(lock, Duration::from_millis(15000));
    // Nothing comes back before the lock runs out.
    let again = hold(&c, 3, Duration::from_secs(40)).await;
    let after = acquired_at.elapsed();
    println!(
        "redelivered after {after:?}: {:?}",
        again
            .iter()
            .map(|r| (r.offset(), r.delivery_count()))
            .collect::<Vec<_>>()
    );
    assert_eq!(again.len(), 3, "expired records not redelivered");
    assert!(
        again.iter().all(|r| r.delivery_count() == 2),
        "delivery counts"
    );
    assert!(
        after >= Duration::from_secs(13),
        "redelivered after {after:?}, before the 15 s lock ran out"
    );
    let results = c
        .acknowledge_sync(&acks_for_records(&again, AckKind::Accept), TIMEOUT)
        .await
        .expect("accept");
    assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
    assert_quiet(&c, Duration::from_secs(3)).await;
    c.close().await.expect("close");
}

/// A member whose caller stops polling keeps its prefetched records for it: the engine renews
/// their locks (15 s) while they wait in its buffer, so after more than two lock durations
/// without a poll the caller gets them with delivery count 1, and a peer member polling all
/// along got none of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unpolled_buffered_records_stay_held_past_their_locks() {
    let f = fixture(
        "unpolled-held",
        1,
        5,
        &[("share.record.lock.duration.ms", "15000")],
    )
    .await;
    let stuck = f.consumer(&[]).await;
    let deadline = Instant::now() + TIMEOUT;
    while stuck.metrics().records_buffered < 5 && Instant::now() < deadline {
        touch(&stuck).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(stuck.metrics().records_buffered, 5, "nothing buffered");
    let buffered_at = Instant::now();
    let peer = f.consumer(&[]).await;
    let stolen = consume(&peer, 1, AckKind::Accept, Duration::from_secs(35)).await;
    assert!(
        stolen.is_empty(),
        "the peer got buffered records: {stolen:?}"
    );
    let idle = buffered_at.elapsed();
    let held = hold(&stuck, 5, TIMEOUT).await;
    let m = stuck.metrics();
    println!("polled after {idle:?} without a poll: {m:?}");
    assert!(idle > Duration::from_secs(30), "{idle:?}");
    assert_eq!(held.len(), 5);
    assert!(
        held.iter().all(|r| r.delivery_count() == 1),
        "delivery counts"
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    assert!(
        held.iter().all(|r| r.lock_deadline_ms > now),
        "handed out with a lock deadline in the past"
    );
    let results = stuck
        .acknowledge_sync(&acks_for_records(&held, AckKind::Accept), TIMEOUT)
        .await
        .expect("accept");
    assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
    assert!(m.records_renewed_unpolled >= 5 * 4, "{m:?}");
    assert_eq!((m.records_released_unpolled, m.records_expired), (0, 0));
    assert_eq!(m.records_fetched, 5);
    assert_quiet(&peer, Duration::from_secs(2)).await;
    stuck.close().await.expect("close");
    peer.close().await.expect("close");
}

/// The part of a polled batch the caller could not take (the JNI layer's buffer was full) goes
/// back to the engine's buffer and is kept alive there: more than two lock durations later the
/// next poll hands it out with delivery count 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_given_back_stays_held_until_polled() {
    let f = fixture(
        "given-back",
        1,
        5,
        &[("share.record.lock.duration.ms", "15000")],
    )
    .await;
    let c = f.consumer(&[]).await;
    let deadline = Instant::now() + TIMEOUT;
    let mut polled = None;
    while polled.is_none() && Instant::now() < deadline {
        polled = c.poll(Duration::from_millis(500)).await.expect("poll");
    }
    let mut batch = polled.expect("no records");
    assert_eq!(batch.len(), 5, "one produce, one fetch, one batch");
    c.give_back(batch.split_off(2));
    let results = c
        .acknowledge_sync(&acks_for(&batch, AckKind::Accept), TIMEOUT)
        .await
        .expect("accept");
    assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
    let given_back_at = Instant::now();
    let peer = f.consumer(&[]).await;
    let stolen = consume(&peer, 1, AckKind::Accept, Duration::from_secs(35)).await;
    assert!(
        stolen.is_empty(),
        "the peer got given-back records: {stolen:?}"
    );
    let idle = given_back_at.elapsed();
    assert!(idle > Duration::from_secs(30), "{idle:?}");
    let held = hold(&c, 3, TIMEOUT).await;
    let seen: Vec<(i64, i16)> = held
        .iter()
        .map(|r| (r.offset(), r.delivery_count()))
        .collect();
    assert_eq!(seen, vec![(2, 1), (3, 1), (4, 1)]);
    let results = c
        .acknowledge_sync(&acks_for_records(&held, AckKind::Accept), TIMEOUT)
        .await
        .expect("accept");
    assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
    let m = c.metrics();
    println!("polled after {idle:?}: {m:?}");
    assert!(m.records_renewed_unpolled >= 3 * 4, "{m:?}");
    assert_eq!((m.records_released_unpolled, m.records_expired), (0, 0));
    c.close().await.expect("close");
    peer.close().await.expect("close");
}

/// With a short `share.buffer.hold.max.ms` a member whose caller stops polling releases its
/// prefetched records once that time has passed without a poll, and stops fetching; another
/// member gets them (delivery count 2) while the first member's locks would still have run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unpolled_buffered_records_are_released_past_the_hold_bound() {
    let f = fixture(
        "unpolled",
        1,
        5,
        &[("share.record.lock.duration.ms", "15000")],
    )
    .await;
    let stuck = f.consumer(&[("share.buffer.hold.max.ms", "3000")]).await;
    let deadline = Instant::now() + TIMEOUT;
    while stuck.metrics().records_fetched < 5 && Instant::now() < deadline {
        touch(&stuck).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Taken after the fetch that acquired them was sent: their locks end before this + 15 s.
    let fetched_at = Instant::now();
    assert_eq!(stuck.metrics().records_fetched, 5, "nothing fetched");
    let other = f.consumer(&[]).await;
    let got = consume(&other, 5, AckKind::Accept, Duration::from_secs(40)).await;
    let after = fetched_at.elapsed();
    println!("the other member got them {after:?} after they were fetched");
    assert_eq!(got.len(), 5, "{got:?}");
    assert!(got.values().all(|dc| *dc == 2), "{got:?}");
    assert!(
        after < Duration::from_secs(13),
        "redelivered after {after:?}: the locks expired rather than being released"
    );
    let m = stuck.metrics();
    assert_eq!(m.records_released_unpolled, 5);
    assert_eq!(m.records_buffered, 0);
    assert_eq!(m.records_fetched, 5, "the stalled member fetched again");
    // Polling again resumes fetching (nothing is left: the other member accepted all).
    assert!(stuck
        .poll(Duration::from_millis(500))
        .await
        .expect("poll")
        .is_none());
    stuck.close().await.expect("close");
    other.close().await.expect("close");
}
