//! Raw-protocol checks of the behaviours the protocol cheat sheet marks *unconfirmed*. They
//! drive the wire directly (engine connection + engine encoders), not the consumer.

use super::*;
use kafka_protocol::messages::{
    ApiKey, GroupId, ShareFetchResponse, ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse,
    TopicName,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use sharesink_engine::connection::Connection;
use sharesink_engine::protocol::share_requests::{
    AckBatch, PartitionAcks, ShareAcknowledgeRequest, ShareAcknowledgeResponse, ShareFetchRequest,
    TopicAcks,
};
use uuid::Uuid;

struct RawMember {
    group: String,
    member_id: String,
    topic_id: Uuid,
    _coordinator: Connection,
}

/// Joins with ShareGroupHeartbeat and heartbeats every second until partition 0 is
/// assigned; prints how long the first assignment took.
async fn join(f: &Fixture) -> RawMember {
    let coordinator = Connection::connect(&f.bootstrap, "raw", TIMEOUT)
        .await
        .unwrap();
    let member_id = "rawmember-0123456789ab".to_string();
    let joined = Instant::now();
    let mut epoch = 0;
    loop {
        let request = ShareGroupHeartbeatRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(f.group.clone())))
            .with_member_id(StrBytes::from_string(member_id.clone()))
            .with_member_epoch(epoch)
            .with_subscribed_topic_names(
                (epoch == 0).then(|| vec![TopicName(StrBytes::from_string(f.topic.clone()))]),
            );
        let response: ShareGroupHeartbeatResponse =
            sharesink_testkit::raw::request(&coordinator, &request, 1)
                .await
                .unwrap();
        if response.error_code != 0 {
            // A fresh cluster may still be loading the coordinator.
            assert!(
                joined.elapsed() < TIMEOUT,
                "heartbeat error {}",
                response.error_code
            );
            tokio::time::sleep(Duration::from_millis(300)).await;
            continue;
        }
        epoch = response.member_epoch;
        if let Some(a) = response
            .assignment
            .filter(|a| !a.topic_partitions.is_empty())
        {
            println!(
                "first non-empty assignment {:?} after join",
                joined.elapsed()
            );
            return RawMember {
                group: f.group.clone(),
                member_id,
                topic_id: a.topic_partitions[0].topic_id,
                _coordinator: coordinator,
            };
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

fn fetch(m: &RawMember, epoch: i32, add_partition: bool, acks: Vec<AckBatch>) -> ShareFetchRequest {
    let partitions = if add_partition || !acks.is_empty() {
        vec![TopicAcks {
            topic_id: m.topic_id,
            partitions: vec![PartitionAcks {
                partition: 0,
                batches: acks,
            }],
        }]
    } else {
        Vec::new()
    };
    ShareFetchRequest {
        group_id: m.group.clone(),
        member_id: m.member_id.clone(),
        session_epoch: epoch,
        max_wait_ms: 1000,
        min_bytes: 1,
        max_bytes: 1 << 20,
        max_records: 100,
        batch_size: 100,
        topics: partitions,
        ..Default::default()
    }
}

async fn send_fetch(
    conn: &Connection,
    request: &ShareFetchRequest,
    version: i16,
) -> ShareFetchResponse {
    let mut body = conn
        .request_raw(
            ApiKey::ShareFetch,
            version,
            &request.encode(version).unwrap(),
        )
        .await
        .unwrap();
    ShareFetchResponse::decode(&mut body, 1).unwrap()
}

/// (first, last, delivery count) of partition 0's acquired ranges.
fn acquired(r: &ShareFetchResponse) -> Vec<(i64, i64, i16)> {
    r.responses
        .iter()
        .flat_map(|t| &t.partitions)
        .flat_map(|p| &p.acquired_records)
        .map(|a| (a.first_offset, a.last_offset, a.delivery_count))
        .collect()
}

fn ack_code(r: &ShareFetchResponse) -> Option<i16> {
    r.responses
        .iter()
        .flat_map(|t| &t.partitions)
        .map(|p| p.acknowledge_error_code)
        .next()
}

/// Epoch 0 on a connection that already has a session replaces it. Does that release the
/// old session's records, and can they be acknowledged on the new session?
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn epoch_zero_replacement_and_acks_across_sessions() {
    let f = fixture("epoch0", 1, 10, &[]).await;
    let m = join(&f).await;
    let conn = Connection::connect(&f.bootstrap, "raw", TIMEOUT)
        .await
        .unwrap();
    // v1 request on purpose: the fallback path must work too.
    let first = send_fetch(&conn, &fetch(&m, 0, true, vec![]), 1).await;
    assert_eq!(first.error_code, 0);
    let got = acquired(&first);
    println!(
        "session 1 acquired {got:?} (lock {} ms)",
        first.acquisition_lock_timeout_ms
    );
    assert_eq!(got, vec![(0, 9, 1)]);

    // ShareAcknowledge at epoch 0 is refused.
    let ack0 = ShareAcknowledgeRequest {
        group_id: m.group.clone(),
        member_id: m.member_id.clone(),
        session_epoch: 0,
        is_renew_ack: false,
        topics: vec![],
    };
    let body = conn
        .request_raw(ApiKey::ShareAcknowledge, 2, &ack0.encode(2).unwrap())
        .await
        .unwrap();
    let r = ShareAcknowledgeResponse::decode(body, 2).unwrap();
    println!(
        "ShareAcknowledge v2 at epoch 0 -> error {} ({:?}), lock field {:?}",
        r.error_code, r.error_message, r.acquisition_lock_timeout_ms
    );
    assert_eq!(r.error_code, 123);

    // Replace the session with epoch 0 on the same connection.
    let second = send_fetch(&conn, &fetch(&m, 0, true, vec![]), 2).await;
    let regot = acquired(&second);
    println!("epoch-0 replacement fetch acquired {regot:?}");
    // Acknowledge the records acquired under the replaced session, on the new one.
    let accept = AckBatch {
        first_offset: 0,
        last_offset: 9,
        types: vec![1],
    };
    let third = send_fetch(&conn, &fetch(&m, 1, false, vec![accept]), 2).await;
    println!(
        "ack of old-session records on the new session -> top {} partition ack code {:?}",
        third.error_code,
        ack_code(&third)
    );
    assert!(
        regot.is_empty(),
        "epoch-0 replacement released and re-acquired the records: {regot:?}"
    );
    assert_eq!(
        ack_code(&third),
        Some(0),
        "acks across an epoch-0 replacement failed"
    );
}

/// Closing the connection ends the session and releases its records at once; acks for
/// them on a new connection fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disconnect_releases_records() {
    let f = fixture("disconnect", 1, 10, &[]).await;
    let m = join(&f).await;
    let conn = Connection::connect(&f.bootstrap, "raw", TIMEOUT)
        .await
        .unwrap();
    let first = send_fetch(&conn, &fetch(&m, 0, true, vec![]), 2).await;
    assert_eq!(acquired(&first), vec![(0, 9, 1)]);
    drop(conn);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let conn = Connection::connect(&f.bootstrap, "raw", TIMEOUT)
        .await
        .unwrap();
    let again = send_fetch(&conn, &fetch(&m, 0, true, vec![]), 2).await;
    let regot = acquired(&again);
    println!("after reconnect, epoch-0 fetch acquired {regot:?}");
    assert_eq!(
        regot,
        vec![(0, 9, 2)],
        "records not released by the disconnect"
    );
}
