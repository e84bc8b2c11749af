//! Transactions: commit markers acknowledged with their records (folded into the records'
//! ACCEPT, so the acquired range settles whole), aborted records never delivered under
//! `read_committed`.

use super::*;

/// A committed transaction leaves a control batch (the commit marker) in the log; its offset is
/// acquired but has no data record. The engine acknowledges it with the ACCEPT of the records
/// beside it, as one range, and Kafka 4.4 takes that: no acknowledgement error, nothing left
/// for a second member. (The marker is written asynchronously after EndTxn, so its offset is
/// not known in advance.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_batches_are_acknowledged_with_their_records() {
    let f = fixture("txn", 1, 0, &[]).await;
    let admin = Admin::connect(&f.bootstrap, TIMEOUT).await.unwrap();
    admin
        .produce_transaction(&f.topic, 0, &values("t", 5), true)
        .await
        .expect("transaction");
    admin
        .produce(&f.topic, 0, &values("p", 2), Compression::None)
        .await
        .unwrap();
    let c = f.consumer(&[]).await;
    let delivered = values_until_quiet_after(&c, 7, Duration::from_secs(3)).await;
    let m = c.metrics();
    println!("delivered {delivered:?}; metrics {m:?}");
    assert_eq!(
        delivered,
        vec!["p-0", "p-1", "t-0", "t-1", "t-2", "t-3", "t-4"]
    );
    assert!(m.gap_acked >= 1, "the commit marker was not acknowledged");
    assert!(
        m.gaps_folded >= 1,
        "the commit marker was not folded into its records' ACCEPT: {m:?}"
    );
    assert_eq!(
        (m.gap_folds_refused, m.acks_resent, m.ack_errors),
        (0, 0, 0),
        "the broker took the fold as it came: {m:?}"
    );
    c.close().await.unwrap();
    let again = f.consumer(&[]).await;
    assert_quiet(&again, Duration::from_secs(6)).await;
    again.close().await.unwrap();
}

/// With `share.gaps.fold=false` the marker goes as a Gap of its own, ahead of its records, and
/// the partition drains just the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_folding_control_batches_are_acknowledged_as_gaps() {
    let f = fixture("txn-nofold", 1, 0, &[]).await;
    let admin = Admin::connect(&f.bootstrap, TIMEOUT).await.unwrap();
    admin
        .produce_transaction(&f.topic, 0, &values("t", 5), true)
        .await
        .expect("transaction");
    admin
        .produce(&f.topic, 0, &values("p", 2), Compression::None)
        .await
        .unwrap();
    let c = f.consumer(&[("share.gaps.fold", "false")]).await;
    let delivered = values_until_quiet_after(&c, 7, Duration::from_secs(3)).await;
    let m = c.metrics();
    assert_eq!(
        delivered,
        vec!["p-0", "p-1", "t-0", "t-1", "t-2", "t-3", "t-4"]
    );
    assert!(m.gap_acked >= 1 && m.gaps_folded == 0, "{m:?}");
    assert_eq!(m.ack_errors, 0);
    c.close().await.unwrap();
    let again = f.consumer(&[]).await;
    assert_quiet(&again, Duration::from_secs(6)).await;
    again.close().await.unwrap();
}

/// With `share.isolation.level=read_committed`, records of an aborted transaction are never
/// delivered (the cheat sheet's unconfirmed item).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_committed_never_delivers_aborted_records() {
    let f = fixture(
        "aborted",
        1,
        0,
        &[("share.isolation.level", "read_committed")],
    )
    .await;
    let admin = Admin::connect(&f.bootstrap, TIMEOUT).await.unwrap();
    admin
        .produce_transaction(&f.topic, 0, &values("a", 3), false)
        .await
        .expect("abort");
    admin
        .produce_transaction(&f.topic, 0, &values("c", 2), true)
        .await
        .expect("commit");
    admin
        .produce(&f.topic, 0, &values("p", 1), Compression::None)
        .await
        .unwrap();
    let c = f.consumer(&[]).await;
    let delivered = values_until_quiet_after(&c, 3, Duration::from_secs(3)).await;
    let m = c.metrics();
    println!("delivered {delivered:?}; metrics {m:?}");
    assert_eq!(delivered, vec!["c-0", "c-1", "p-0"]);
    assert!(m.gap_acked >= 2, "two transaction markers");
    assert_eq!(m.ack_errors, 0);
    c.close().await.unwrap();
    let again = f.consumer(&[]).await;
    assert_quiet(&again, Duration::from_secs(6)).await;
    again.close().await.unwrap();
}
