//! The part of a fetcher that other tasks touch: its ack queue, the partitions the router wants
//! it to hold, and its wake-up. The fetcher's loop (`fetcher`) owns everything else. Kept apart
//! from `fetcher` because `Shared` routes acks to these handles: `shared` depends on this
//! module, `fetcher` on both.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Mutex;

use tokio::sync::Notify;

use crate::acks::{AckKind, AckQueue, PartitionKey, PendingAck};

pub(crate) struct FetcherHandle {
    pub node_id: i32,
    pub addr: String,
    pub acks: Mutex<AckQueue>,
    desired: Mutex<BTreeSet<PartitionKey>>,
    /// How many times the router has told this fetcher what to hold (changed or not): a
    /// partition the broker said it no longer leads stays out of the session until the router
    /// has looked again (`Session::lost`).
    applied: AtomicU64,
    pub wake: Notify,
    /// A ShareFetch is outstanding: an ordinary ack then waits for it (it rides on the next
    /// fetch), so queuing one need not wake the fetcher, a cross-thread wake-up per call.
    fetch_in_flight: AtomicBool,
    /// Some partition is out of the session because the broker said it no longer leads it.
    holds_lost: AtomicBool,
}

impl FetcherHandle {
    pub fn new(node_id: i32, addr: String) -> Self {
        FetcherHandle {
            node_id,
            addr,
            acks: Mutex::new(AckQueue::default()),
            desired: Mutex::new(BTreeSet::new()),
            applied: AtomicU64::new(0),
            wake: Notify::new(),
            fetch_in_flight: AtomicBool::new(false),
            holds_lost: AtomicBool::new(false),
        }
    }

    /// The partitions the router assigned to this leader's session.
    pub fn desired(&self) -> BTreeSet<PartitionKey> {
        self.desired.lock().expect("desired").clone()
    }

    /// The router's answer for this leader, after each look at the metadata. The same set
    /// again still wakes the fetcher when it left a partition out that the router has not moved
    /// (the metadata still names this leader): it is asked for again.
    pub fn set_desired(&self, partitions: BTreeSet<PartitionKey>) {
        let mut d = self.desired.lock().expect("desired");
        let changed = *d != partitions;
        *d = partitions;
        drop(d);
        self.applied.fetch_add(1, SeqCst);
        if changed || self.holds_lost.load(SeqCst) {
            self.wake.notify_one();
        }
    }

    /// How many times the router has set what this fetcher holds.
    pub fn applied(&self) -> u64 {
        self.applied.load(SeqCst)
    }

    /// Set by the fetcher's loop: some partition is out of its session because the broker
    /// said it no longer leads it.
    pub fn set_holds_lost(&self, any: bool) {
        self.holds_lost.store(any, SeqCst);
    }

    /// Set by the fetcher's loop: whether a ShareFetch is outstanding.
    pub fn set_fetch_in_flight(&self, in_flight: bool) {
        self.fetch_in_flight.store(in_flight, SeqCst);
    }

    pub fn push_ack(&self, key: PartitionKey, ack: PendingAck, urgent: bool) {
        let renew = ack.code == AckKind::Renew as i8;
        self.acks.lock().expect("acks").push(key, ack, urgent);
        // The loop clears the flag before it looks at the queue again, so an ack queued while
        // the flag was set is always seen when the fetch completes.
        if urgent || renew || !self.fetch_in_flight.load(SeqCst) {
            self.wake.notify_one();
        }
    }
}
