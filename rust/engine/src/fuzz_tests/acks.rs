//! The ack queue: any ranges a caller (any i64 bounds through JNI) or the engine can queue,
//! merged and encoded into a request.

use proptest::prelude::*;

proptest! {
    // Acks come from the caller (any i64 bounds through JNI) and from the engine for ranges
    // the broker sent.
    #[test]
    fn ack_queue_takes_any_ranges(
        acks in proptest::collection::vec(
            (prop_oneof![any::<i64>(), Just(i64::MAX), Just(i64::MIN), 0i64..20],
             prop_oneof![any::<i64>(), Just(i64::MAX), Just(i64::MIN), 0i64..20],
             0i8..=4),
            0..12),
    ) {
        let mut queue = crate::acks::AckQueue::default();
        for (first, last, code) in acks {
            queue.push(
                (uuid::Uuid::nil(), 0),
                crate::acks::PendingAck::from_caller(first, last, code, None),
                false,
            );
        }
        let (wire, in_flight) = queue.take();
        let _ = in_flight.record_counts();
        let _ = in_flight.caller_settled();
        let request = crate::protocol::share_requests::ShareFetchRequest {
            topics: wire,
            ..Default::default()
        };
        let _ = request.encode(2);
    }
}

// Regressions found by fuzzing.

/// A caller range [i64::MIN, i64::MAX] overflowed the metrics' record count.
#[test]
fn whole_i64_ack_range() {
    let mut queue = crate::acks::AckQueue::default();
    queue.push(
        (uuid::Uuid::nil(), 0),
        crate::acks::PendingAck::from_caller(i64::MIN, i64::MAX, 1, None),
        false,
    );
    queue.push(
        (uuid::Uuid::nil(), 1),
        crate::acks::PendingAck::from_caller(i64::MAX, i64::MAX, 1, None),
        false,
    );
    let (_, in_flight) = queue.take();
    assert_eq!(in_flight.record_counts()[1], u64::MAX);
}
