//! State shared by one share-group member's tasks (membership, router, fetchers, sweeper) and
//! the caller's handle: configuration, buffer, metrics, routes for acks, the fatal error.
//!
//! Dependencies point one way, towards this module's parts: `shared` imports only what a
//! `Shared` is made of (`config`, `cluster`, `buffer`, `memory`, `metrics`, `clock`, `lifecycle`,
//! `fetcher_handle`), and the modules that act on a member (`consumer`, `tasks`, `router`,
//! `membership`, `fetcher`, `sweeper`) import `shared`, never the reverse. A type `Shared` holds
//! therefore lives in a module of its own (`Lifecycle`, `FetcherHandle`), not beside the task
//! that drives it: `tasks` and `fetcher` once defined them and imported `Shared` back.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering::Relaxed};
use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::Notify;
use tracing::warn;

use uuid::Uuid;

use crate::buffer::DeliveryBuffer;
use crate::clock::WallClock;
use crate::cluster::Cluster;
use crate::config::ConsumerConfig;
use crate::error::EngineError;
use crate::fetcher_handle::FetcherHandle;
use crate::lifecycle::Lifecycle;
use crate::memory::MemberMemory;
#[cfg(test)]
use crate::memory::MemoryPool;
use crate::metrics::Metrics;

pub(crate) struct Shared {
    pub config: ConsumerConfig,
    pub member_id: String,
    pub cluster: Cluster,
    pub metrics: Metrics,
    pub buffer: DeliveryBuffer,
    /// What the member's records hold, against its bound and the worker's (`memory`).
    pub memory: Arc<MemberMemory>,
    /// Wall clock of lock deadlines (a test may make it follow tokio's paused clock).
    pub clock: WallClock,
    pub share_fetch_version: i16,
    pub share_acknowledge_version: i16,
    /// Last AcquisitionLockTimeoutMs the broker reported (0 before the first fetch).
    pub lock_timeout_ms: AtomicI32,
    /// A fetch saw a leader change or unknown partition.
    pub refresh_metadata: Notify,
    /// Tests only: the membership task sends no heartbeats while set, so the coordinator
    /// fences the member after `share.session.timeout.ms`.
    pub heartbeats_paused: AtomicBool,
    /// Stop signals and the member's supervised tasks.
    pub lifecycle: Lifecycle,
    /// Tests only: the next fetcher to look panics with this message.
    #[cfg(any(test, feature = "test-hooks"))]
    pub injected_fetcher_panic: Mutex<Option<String>>,
    /// Tests only: the fetcher holding this partition sends the next fetch with it forgotten
    /// while keeping it in its own view of the session (the broker's session and the member's
    /// then differ, as after issue 14's broker restart).
    #[cfg(any(test, feature = "test-hooks"))]
    pub injected_forget: Mutex<Option<(Arc<str>, i32)>>,
    fatal: Mutex<Option<EngineError>>,
    topic_names: RwLock<HashMap<Uuid, Arc<str>>>,
    /// (topic, partition) → (topic id, fetcher of its leader), for routing acks. Entries stay
    /// after unassignment so records already handed out can still be acknowledged.
    routes: RwLock<HashMap<(Arc<str>, i32), Route>>,
}

impl Shared {
    /// A member's state in tests: its memory reserved in `pool`, which must have room for it.
    #[cfg(test)]
    pub fn new(
        config: ConsumerConfig,
        member_id: String,
        cluster: Cluster,
        share_fetch_version: i16,
        share_acknowledge_version: i16,
        pool: Arc<MemoryPool>,
    ) -> Self {
        let memory =
            MemberMemory::reserve_for(&config, pool).expect("room in the test's memory pool");
        Shared::with_memory(
            config,
            member_id,
            cluster,
            share_fetch_version,
            share_acknowledge_version,
            memory,
        )
    }

    pub fn with_memory(
        config: ConsumerConfig,
        member_id: String,
        cluster: Cluster,
        share_fetch_version: i16,
        share_acknowledge_version: i16,
        memory: Arc<MemberMemory>,
    ) -> Self {
        let buffer = DeliveryBuffer::new(config.max_buffered_records, config.max_buffered_bytes);
        Shared {
            config,
            member_id,
            cluster,
            metrics: Metrics::default(),
            buffer,
            memory,
            clock: WallClock::default(),
            share_fetch_version,
            share_acknowledge_version,
            lock_timeout_ms: AtomicI32::new(0),
            refresh_metadata: Notify::new(),
            heartbeats_paused: AtomicBool::new(false),
            lifecycle: Lifecycle::default(),
            #[cfg(any(test, feature = "test-hooks"))]
            injected_fetcher_panic: Mutex::new(None),
            #[cfg(any(test, feature = "test-hooks"))]
            injected_forget: Mutex::new(None),
            fatal: Mutex::new(None),
            topic_names: RwLock::new(HashMap::new()),
            routes: RwLock::new(HashMap::new()),
        }
    }

    /// Records a fatal error; `poll` reports it.
    pub fn fail(&self, error: EngineError) {
        warn!(error = %error, "share consumer failed");
        let mut f = self.fatal.lock().expect("fatal");
        if f.is_none() {
            *f = Some(error);
        }
        drop(f);
        self.buffer.wakeup_for_error();
    }

    pub fn fatal_error(&self) -> Option<EngineError> {
        self.fatal
            .lock()
            .expect("fatal")
            .as_ref()
            .map(EngineError::duplicate)
    }

    pub fn topic_name(&self, id: &Uuid) -> Option<Arc<str>> {
        self.topic_names
            .read()
            .expect("topic names")
            .get(id)
            .cloned()
    }

    /// How long the caller may go without polling before fetching pauses: a tenth of the
    /// acquisition lock (3 s for the default 30 s), so that records acquired for a caller that
    /// is stuck elsewhere are not held from other members. Before the lock is known, never.
    pub fn caller_idle_after_ms(&self) -> i64 {
        match self.lock_timeout_ms.load(Relaxed) {
            ms if ms > 0 => ms as i64 / 10,
            _ => i64::MAX / 2,
        }
    }

    /// Whether a fetch may acquire more now: room in the buffer and in memory, and a caller
    /// that polls.
    ///
    /// In `record_limit` mode (slow sinks: one put at a time, each of `max.poll.records`), room
    /// for a whole fetch's ask within `share.buffer.max.records` (default `max.poll.records`):
    /// the next poll's records are acquired while the caller's put runs, and no more, so a
    /// caller stuck in a put holds at most one poll's worth more than the put took (with one
    /// record per put: one record). Its buffer held two polls' worth before, as in the default
    /// mode, where a fetch brings whole log batches and the cap is a soft one.
    pub fn wants_records(&self) -> bool {
        let room = match self.config.records_per_fetch_at_most() {
            Some(ask) => self.buffer.has_room_for(ask),
            None => self.buffer.has_room(),
        };
        room && self.memory.has_room() && !self.buffer.caller_idle(self.caller_idle_after_ms())
    }

    pub fn route(&self, topic: &str, partition: i32) -> Option<Route> {
        self.routes
            .read()
            .expect("routes")
            .get(&(Arc::from(topic), partition))
            .cloned()
    }

    /// Remembers the names of topics the metadata named, for records fetched by topic id.
    pub fn learn_topic_names<'a>(&self, topics: impl IntoIterator<Item = (Uuid, &'a Arc<str>)>) {
        let mut names = self.topic_names.write().expect("topic names");
        for (id, name) in topics {
            names.insert(id, name.clone());
        }
    }

    /// Whether the acks of some partition go to `fetcher`.
    pub fn routes_to(&self, fetcher: &Arc<FetcherHandle>) -> bool {
        self.routes
            .read()
            .expect("routes")
            .values()
            .any(|(_, f)| Arc::ptr_eq(f, fetcher))
    }

    /// Routes acks for (topic, partition) to `fetcher`, the session of its leader.
    pub fn set_route(
        &self,
        topic: &Arc<str>,
        partition: i32,
        topic_id: Uuid,
        fetcher: Arc<FetcherHandle>,
    ) {
        self.routes
            .write()
            .expect("routes")
            .insert((topic.clone(), partition), (topic_id, fetcher));
    }
}

impl Shared {
    /// Tests only: the state of a member of group `g` at an unreachable bootstrap address, with
    /// `settings` on top (engine settings by name) and the given ShareAcknowledge version.
    #[cfg(test)]
    pub fn for_tests(settings: &[(&str, &str)], share_acknowledge_version: i16) -> Shared {
        let props: HashMap<String, String> =
            [("bootstrap.servers", "127.0.0.1:9"), ("group.id", "g")]
                .iter()
                .chain(settings)
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
        let config = ConsumerConfig::from_properties(&props).expect("test settings");
        let cluster = Cluster::new(
            vec!["127.0.0.1:9".into()],
            "c".into(),
            std::time::Duration::from_secs(1),
            config.security.clone(),
        );
        Shared::new(
            config,
            "m".into(),
            cluster,
            2,
            share_acknowledge_version,
            MemoryPool::unbounded(),
        )
    }
}

/// Where acks for one (topic, partition) go: its topic id and its leader's fetcher.
pub(crate) type Route = (Uuid, Arc<FetcherHandle>);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::Batch;

    fn records(n: i64) -> Batch {
        Batch::for_test("t", 0, (0..n).map(|o| (o, &b"v"[..])), 1_000)
    }

    /// The promise of `record_limit` mode (a slow sink, one put at a time): the next poll's
    /// records are acquired while a put runs, and no more, so a task stuck in its put holds at
    /// most one poll's worth more than the put took: one record with `max.poll.records` 1.
    #[test]
    fn a_record_limit_member_fetches_one_poll_ahead_and_no_further() {
        let s = Shared::for_tests(
            &[
                ("share.acquire.mode", "record_limit"),
                ("max.poll.records", "1"),
            ],
            2,
        );
        assert!(
            s.wants_records(),
            "the next record is fetched while a put runs"
        );
        s.buffer.push(records(1));
        assert!(
            !s.wants_records(),
            "a task stuck in its put would hold two more records"
        );
        s.buffer.try_take().expect("the next put takes it");
        assert!(s.wants_records());
        // Several records per put: one put's worth ahead.
        let s = Shared::for_tests(
            &[
                ("share.acquire.mode", "record_limit"),
                ("max.poll.records", "10"),
            ],
            2,
        );
        s.buffer.push(records(3));
        assert!(
            !s.wants_records(),
            "10 more would pass one put's worth ahead"
        );
        // An operator's larger buffer is theirs to choose.
        let s = Shared::for_tests(
            &[
                ("share.acquire.mode", "record_limit"),
                ("max.poll.records", "1"),
                ("share.buffer.max.records", "3"),
            ],
            2,
        );
        s.buffer.push(records(1));
        s.buffer.push(records(1));
        assert!(s.wants_records());
        s.buffer.push(records(1));
        assert!(!s.wants_records());
    }

    /// The default mode keeps its soft cap: one batch past it leaves room for the next fetch.
    #[test]
    fn a_batch_optimized_member_keeps_one_fetch_in_flight_past_the_cap() {
        let s = Shared::for_tests(&[("max.poll.records", "2")], 2);
        s.buffer.push(records(10));
        assert!(s.wants_records());
        s.buffer.push(records(10));
        assert!(!s.wants_records());
    }
}
