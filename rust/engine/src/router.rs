//! The router task: maps the member's assignment onto one fetcher (share session) per
//! partition leader, using cluster metadata, and moves partitions when their leader moves.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::{debug, info, info_span, Instrument};

use crate::acks::PartitionKey;
use crate::error::EngineError;
use crate::fetcher;
use crate::fetcher_handle::FetcherHandle;
use crate::membership::{Assignment, Subscription};
use crate::shared::Shared;
use crate::sweeper;
use crate::tasks::{self, Role};

const METADATA_RETRY: Duration = Duration::from_millis(500);
/// Leaders are re-checked this often even without a hint from a fetch error.
const METADATA_MAX_AGE: Duration = Duration::from_secs(60);

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
        shared.learn_topic_names(view.topics.values().map(|t| (t.id, &t.name)));
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
                shared.set_route(&topic.name, *p, topic.id, fetcher.handle.clone());
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
