//! State shared by the consumer's tasks, and the router task that maps the assignment onto
//! per-leader fetchers using cluster metadata.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering::Relaxed};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;
use tracing::{debug, info, info_span, warn, Instrument};

use crate::tasks::{self, Lifecycle, Role};
use uuid::Uuid;

use crate::acks::PartitionKey;
use crate::buffer::DeliveryBuffer;
use crate::clock::WallClock;
use crate::cluster::Cluster;
use crate::config::ConsumerConfig;
use crate::error::EngineError;
use crate::fetcher::{self, FetcherHandle};
use crate::membership::{Assignment, Subscription};
use crate::metrics::Metrics;
use crate::sweeper;

const METADATA_RETRY: Duration = Duration::from_millis(500);
/// Leaders are re-checked this often even without a hint from a fetch error.
const METADATA_MAX_AGE: Duration = Duration::from_secs(60);

pub(crate) struct Shared {
    pub config: ConsumerConfig,
    pub member_id: String,
    pub cluster: Cluster,
    pub metrics: Metrics,
    pub buffer: DeliveryBuffer,
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
    pub fn new(
        config: ConsumerConfig,
        member_id: String,
        cluster: Cluster,
        share_fetch_version: i16,
        share_acknowledge_version: i16,
    ) -> Self {
        let buffer = DeliveryBuffer::new(config.max_buffered_records, config.max_buffered_bytes);
        Shared {
            config,
            member_id,
            cluster,
            metrics: Metrics::default(),
            buffer,
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

    /// Whether a fetch may acquire more now: room in the buffer and a caller that polls.
    pub fn wants_records(&self) -> bool {
        self.buffer.has_room() && !self.buffer.caller_idle(self.caller_idle_after_ms())
    }

    pub fn route(&self, topic: &str, partition: i32) -> Option<Route> {
        self.routes
            .read()
            .expect("routes")
            .get(&(Arc::from(topic), partition))
            .cloned()
    }

    /// Tests only: routes acks for (topic, partition) to `fetcher`, as an assignment would.
    #[cfg(test)]
    pub fn add_route(
        &self,
        topic: &str,
        partition: i32,
        topic_id: Uuid,
        fetcher: Arc<FetcherHandle>,
    ) {
        self.routes
            .write()
            .expect("routes")
            .insert((Arc::from(topic), partition), (topic_id, fetcher));
    }
}

/// Where acks for one (topic, partition) go: its topic id and its leader's fetcher.
pub(crate) type Route = (Uuid, Arc<FetcherHandle>);

struct RunningFetcher {
    handle: Arc<FetcherHandle>,
    task: JoinHandle<()>,
}

/// Keeps one fetcher per leader of an assigned partition and tells each which partitions to
/// hold in its session. On `closing`, waits for every fetcher to close its session.
pub(crate) async fn run_router(
    shared: Arc<Shared>,
    subscription: watch::Receiver<Subscription>,
    mut assignment: watch::Receiver<Arc<Assignment>>,
    mut closing: watch::Receiver<bool>,
) {
    let mut fetchers: HashMap<i32, RunningFetcher> = HashMap::new();
    let sweeping = tasks::spawn(&shared, Role::Sweeper, sweeper::run(shared.clone()));
    loop {
        if *closing.borrow() {
            break;
        }
        let current = assignment.borrow_and_update().clone();
        let topics = subscription.borrow().clone();
        match apply(&shared, &topics, &current, &mut fetchers, &closing).await {
            Ok(()) => {
                tokio::select! {
                    _ = assignment.changed() => {}
                    _ = shared.refresh_metadata.notified() => debug!("refreshing metadata after a fetch error"),
                    _ = tokio::time::sleep(METADATA_MAX_AGE) => {}
                    _ = closing.changed() => {}
                }
            }
            Err(e) => {
                debug!(error = %e, "metadata lookup failed; retrying");
                if e.kind() == crate::error::ErrorKind::Authorization {
                    shared.fail(e);
                }
                tokio::select! {
                    _ = tokio::time::sleep(METADATA_RETRY) => {}
                    _ = closing.changed() => {}
                }
            }
        }
    }
    sweeping.abort();
    for (_, f) in fetchers.drain() {
        f.handle.wake.notify_one();
        let _ = f.task.await;
    }
}

async fn apply(
    shared: &Arc<Shared>,
    topics: &[String],
    assignment: &Assignment,
    fetchers: &mut HashMap<i32, RunningFetcher>,
    closing: &watch::Receiver<bool>,
) -> Result<(), EngineError> {
    let mut desired: HashMap<i32, BTreeSet<PartitionKey>> = HashMap::new();
    if !assignment.is_empty() {
        let view = shared.cluster.metadata(topics).await?;
        {
            let mut names = shared.topic_names.write().expect("topic names");
            for t in view.topics.values() {
                names.insert(t.id, t.name.clone());
            }
        }
        for (topic_id, partitions) in assignment.iter() {
            let Some(topic) = view.topics.get(topic_id) else {
                return Err(EngineError::protocol(format!(
                    "assigned topic id {topic_id} not in metadata"
                )));
            };
            for p in partitions {
                let leader = topic.leaders.get(p).copied().unwrap_or(-1);
                let Some(addr) = view.brokers.get(&leader) else {
                    return Err(EngineError::protocol(format!(
                        "no leader for {}-{p}",
                        topic.name
                    )));
                };
                let fetcher = fetchers.entry(leader).or_insert_with(|| {
                    let handle = Arc::new(FetcherHandle::new(leader, addr.clone()));
                    // Child of the router's span (the current one), so it carries the member.
                    let task = tasks::spawn(
                        shared,
                        Role::Fetcher,
                        fetcher::run(shared.clone(), handle.clone(), closing.clone())
                            .instrument(info_span!("share_session", node = leader)),
                    );
                    RunningFetcher { handle, task }
                });
                shared
                    .routes
                    .write()
                    .expect("routes")
                    .insert((topic.name.clone(), *p), (topic.id, fetcher.handle.clone()));
                desired.entry(leader).or_default().insert((topic.id, *p));
            }
        }
    }
    for (node, f) in fetchers.iter() {
        f.handle
            .set_desired(desired.remove(node).unwrap_or_default());
    }
    info!(
        partitions = assignment.iter().map(|(_, p)| p.len()).sum::<usize>(),
        leaders = fetchers.len(),
        "assignment applied"
    );
    Ok(())
}
