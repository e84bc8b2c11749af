//! The public share consumer: start, poll, acknowledge, close.
//!
//! All methods take `&self`, so one consumer can be shared between a polling thread and a
//! thread that calls `wakeup`. The async methods can be driven with `Runtime::block_on` from a
//! non-async thread.

use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{oneshot, watch};
use tracing::{info, info_span, warn, Instrument};

use crate::acks::{Ack, AckKind, AckOutcome, AckResult, PendingAck};
use crate::batch::Batch;
use crate::cluster::Cluster;
use crate::config::ConsumerConfig;
use crate::error::EngineError;
use crate::membership::{self, Assignment, Subscription};
use crate::memory::{MemberMemory, MemoryPool};
use crate::metrics::MetricsSnapshot;
use crate::probe::api_versions;
use crate::protocol::error_codes;
use crate::router::run_router;
use crate::shared::Shared;
use crate::tasks::{self, Role};

pub struct ShareConsumer {
    shared: Arc<Shared>,
    assignment: watch::Receiver<Arc<Assignment>>,
    /// `close` was called: polls and acknowledgements answer `Closed`. (The member's tasks
    /// stop on `shared.lifecycle`, which a failed task also sets.)
    closed: AtomicBool,
    subscription: watch::Sender<Subscription>,
}

impl ShareConsumer {
    /// Connects, checks the broker's share-group API versions and joins the group. Returns
    /// once the join is under way; records flow after the first assignment. The member's
    /// records are bounded by its own `share.memory.max.bytes` only: see
    /// [`ShareConsumer::start_in`] for members that share a worker's memory.
    pub async fn start(config: ConsumerConfig, topics: Vec<String>) -> Result<Self, EngineError> {
        Self::start_in(config, topics, MemoryPool::unbounded()).await
    }

    /// [`ShareConsumer::start`] for a member of `pool`: what the records of all its members
    /// hold together stays within the pool's limit (one pool per worker), and this member holds
    /// at most a quarter of it.
    pub async fn start_in(
        config: ConsumerConfig,
        topics: Vec<String>,
        pool: Arc<MemoryPool>,
    ) -> Result<Self, EngineError> {
        check_topics(&topics)?;
        let cluster = Cluster::new(
            config.bootstrap_servers.clone(),
            config.client_id.clone(),
            config.request_timeout,
            config.security.clone(),
        )
        .with_response_max_bytes(config.response_max_bytes);
        let control = cluster.control().await?;
        let report = tokio::time::timeout(config.request_timeout, api_versions(&control))
            .await
            .map_err(|_| EngineError::timeout(config.request_timeout, "ApiVersions"))??;
        let pick = |name: &str, range: Option<(i16, i16)>, min: i16, max: i16| match range {
            Some((lo, hi)) if lo <= max && hi >= min => Ok(hi.min(max)),
            _ => Err(EngineError::Unsupported(unsupported_share_api(
                &report.broker,
                name,
                min,
                max,
            ))),
        };
        pick(
            "ShareGroupHeartbeat",
            report.share_group_heartbeat_versions(),
            1,
            1,
        )?;
        let share_fetch_version = pick("ShareFetch", report.share_fetch_versions(), 1, 2)?;
        let share_acknowledge_version = pick(
            "ShareAcknowledge",
            report.share_acknowledge_versions(),
            1,
            2,
        )?;
        if config.acquire_mode != crate::AcquireMode::BatchOptimized && share_fetch_version < 2 {
            return Err(EngineError::config(
                "share.acquire.mode",
                "record_limit needs ShareFetch v2, which the broker does not offer",
            ));
        }
        let memory = MemberMemory::reserve_for(&config, pool)
            .map_err(|refused| EngineError::config("fetch.max.bytes", refused.to_string()))?;
        let member_id = membership::new_member_id();
        info!(%member_id, group = %config.group_id, ?topics, share_fetch_version, share_acknowledge_version, "starting share consumer");
        let shared = Arc::new(Shared::with_memory(
            config,
            member_id,
            cluster,
            share_fetch_version,
            share_acknowledge_version,
            memory,
        ));
        let (assignment_tx, assignment) = watch::channel(Arc::new(Assignment::new()));
        let closing_rx = shared.lifecycle.closing.subscribe();
        let leaving_rx = shared.lifecycle.leaving.subscribe();
        let (subscription, subscription_rx) = watch::channel(Arc::new(topics.clone()));
        // Every event of this member's tasks carries the group and member id.
        let span = info_span!("share_consumer", group = %shared.config.group_id, member = %shared.member_id);
        tasks::spawn(
            &shared,
            Role::Membership,
            membership::run(
                shared.clone(),
                subscription_rx.clone(),
                assignment_tx,
                leaving_rx,
            )
            .instrument(info_span!(parent: &span, "membership")),
        );
        tasks::spawn(
            &shared,
            Role::Router,
            run_router(
                shared.clone(),
                subscription_rx,
                assignment.clone(),
                closing_rx,
            )
            .instrument(span.clone()),
        );
        Ok(ShareConsumer {
            shared,
            assignment,
            closed: AtomicBool::new(false),
            subscription,
        })
    }

    /// Replaces the subscription (e.g. after re-resolving a topic pattern). The member stays
    /// in the group; the new topic list goes out with an immediate heartbeat and the
    /// assignment follows.
    pub fn subscribe(&self, topics: Vec<String>) -> Result<(), EngineError> {
        if self.is_closing() {
            return Err(EngineError::Closed);
        }
        check_topics(&topics)?;
        self.subscription.send_if_modified(|current| {
            let changed = **current != topics;
            if changed {
                info!(?topics, "subscription changed");
                *current = Arc::new(topics);
            }
            changed
        });
        Ok(())
    }

    pub fn subscription(&self) -> Vec<String> {
        self.subscription.borrow().as_ref().clone()
    }

    pub fn member_id(&self) -> &str {
        &self.shared.member_id
    }

    /// The partitions currently assigned, as (topic, partition); empty until the first
    /// assignment arrives.
    pub fn assignment(&self) -> Vec<(Arc<str>, i32)> {
        let current = self.assignment.borrow().clone();
        let mut out = Vec::new();
        for (id, partitions) in current.iter() {
            let name = self
                .shared
                .topic_name(id)
                .unwrap_or_else(|| Arc::from(id.to_string()));
            out.extend(partitions.iter().map(|p| (name.clone(), *p)));
        }
        out
    }

    /// The broker's acquisition lock duration, once a fetch has reported it.
    pub fn acquisition_lock_timeout(&self) -> Option<Duration> {
        let ms = self.shared.lock_timeout_ms.load(Relaxed);
        (ms > 0).then(|| Duration::from_millis(ms as u64))
    }

    fn is_closing(&self) -> bool {
        self.closed.load(SeqCst)
    }

    /// Waits up to `max_wait` for records. `None` on timeout, after `wakeup`, or once this
    /// member, holding records it has not acknowledged, ran dry: a fetch found nothing more
    /// for it (the topic is drained, or its partitions' in-flight windows are full of held
    /// records, which only acknowledgements free). That is reported once per dry spell.
    pub async fn poll(&self, max_wait: Duration) -> Result<Option<Batch>, EngineError> {
        let deadline = tokio::time::Instant::now() + max_wait;
        let _polling = self
            .shared
            .buffer
            .poll_started(self.shared.caller_idle_after_ms());
        loop {
            if self.is_closing() {
                return Err(EngineError::Closed);
            }
            if let Some(e) = self.shared.fatal_error() {
                return Err(e);
            }
            if self.shared.buffer.take_wakeup() {
                return Ok(None);
            }
            if let Some(batch) = self.shared.buffer.try_take() {
                let n = batch.len() as i64;
                self.shared.metrics.records_buffered.fetch_sub(n, Relaxed);
                // Records whose lock already ran out belong to the broker again: handing
                // them out would only produce duplicates and failing acks.
                if batch
                    .lock_deadline_ms()
                    .is_some_and(|d| d <= self.shared.clock.now_ms())
                {
                    warn!(
                        records = n,
                        "dropping buffered records whose acquisition lock expired"
                    );
                    self.shared
                        .metrics
                        .records_expired
                        .fetch_add(n as u64, Relaxed);
                    continue;
                }
                self.shared.metrics.records_in_flight.fetch_add(n, Relaxed);
                return Ok(Some(batch));
            }
            // The member holds records and its fetches found nothing more: the caller should
            // settle what it holds (acks free the broker's window) rather than wait here.
            if self.shared.buffer.take_dry() {
                return Ok(None);
            }
            let notified = self.shared.buffer.ready.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.shared.buffer.len_records() > 0
                || self.shared.fatal_error().is_some()
                || self.shared.buffer.dry_pending()
            {
                continue;
            }
            tokio::select! {
                _ = &mut notified => {}
                _ = tokio::time::sleep_until(deadline) => return Ok(None),
            }
        }
    }

    /// Puts back the part of a polled batch the caller could not take (its buffer was full,
    /// say): the next `poll` hands it out first, and until then its locks are kept alive
    /// like those of any buffered batch, however long the caller takes to poll again.
    pub fn give_back(&self, batch: Batch) {
        if batch.is_empty() {
            return;
        }
        let n = batch.len() as i64;
        self.shared.metrics.records_in_flight.fetch_sub(n, Relaxed);
        self.shared.metrics.records_buffered.fetch_add(n, Relaxed);
        self.shared.buffer.push_front(batch);
    }

    /// Tests only: stops (`true`) or resumes (`false`) the group heartbeats, so that a test
    /// can make the coordinator fence this member and watch it rejoin with the same id.
    /// Fetching and acknowledging go on regardless.
    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    pub fn pause_heartbeats_for_tests(&self, paused: bool) {
        info!(paused, "heartbeats paused for a test");
        self.shared.heartbeats_paused.store(paused, Relaxed);
    }

    /// Makes a blocked (or the next) `poll` return `None` at once. Callable from any thread.
    pub fn wakeup(&self) {
        self.shared.buffer.wakeup();
    }

    fn queue(
        &self,
        acks: &[Ack],
        urgent: bool,
    ) -> Result<Vec<Option<oneshot::Receiver<AckOutcome>>>, EngineError> {
        if self.is_closing() {
            return Err(EngineError::Closed);
        }
        // Validate everything first so a bad ack queues nothing.
        let mut routed = Vec::with_capacity(acks.len());
        for ack in acks {
            if ack.first_offset > ack.last_offset {
                return Err(EngineError::protocol(format!(
                    "acknowledgement {}-{} [{}, {}] is an empty range",
                    ack.topic, ack.partition, ack.first_offset, ack.last_offset
                )));
            }
            if ack.kind == AckKind::Renew && self.shared.share_acknowledge_version < 2 {
                return Err(EngineError::Unsupported(
                    "RENEW needs ShareAcknowledge v2; the broker offers v1".into(),
                ));
            }
            let route = self
                .shared
                .route(&ack.topic, ack.partition)
                .ok_or_else(|| {
                    EngineError::protocol(format!(
                        "no records were fetched from {}-{}",
                        ack.topic, ack.partition
                    ))
                })?;
            routed.push(route);
        }
        let mut waiters = Vec::with_capacity(acks.len());
        for (ack, (topic_id, fetcher)) in acks.iter().zip(routed) {
            let (waiter, rx) = if urgent {
                let (tx, rx) = oneshot::channel();
                (Some(tx), Some(rx))
            } else {
                (None, None)
            };
            fetcher.push_ack(
                (topic_id, ack.partition),
                PendingAck::from_caller(ack.first_offset, ack.last_offset, ack.kind as i8, waiter),
                urgent,
            );
            waiters.push(rx);
        }
        Ok(waiters)
    }

    /// Queues acknowledgements; they go with the next ShareFetch to the partition's leader
    /// (RENEW at once, on a ShareAcknowledge). Failures show in the metrics and the log.
    pub fn acknowledge(&self, acks: &[Ack]) -> Result<(), EngineError> {
        self.queue(acks, false).map(|_| ())
    }

    /// Sends acknowledgements now and waits for the broker's per-range results.
    pub async fn acknowledge_sync(
        &self,
        acks: &[Ack],
        timeout: Duration,
    ) -> Result<Vec<AckResult>, EngineError> {
        let waiters = self.queue(acks, true)?;
        let collect = async {
            let mut results = Vec::with_capacity(acks.len());
            for (ack, rx) in acks.iter().zip(waiters) {
                let (error_code, error_message) = match rx {
                    Some(rx) => rx.await.unwrap_or((
                        error_codes::NETWORK_EXCEPTION,
                        Some("acknowledgement dropped".into()),
                    )),
                    None => (error_codes::NONE, None),
                };
                results.push(AckResult {
                    ack: ack.clone(),
                    error_code,
                    error_message,
                });
            }
            results
        };
        tokio::time::timeout(timeout, collect)
            .await
            .map_err(|_| EngineError::timeout(timeout, "waiting for acknowledgement results"))
    }

    pub fn metrics(&self) -> MetricsSnapshot {
        let mut snapshot = self.shared.metrics.snapshot();
        snapshot.memory_bytes = self.shared.memory.used() as u64;
        snapshot
    }

    /// Tests only: the next fetcher to run its loop panics with `message`, so a test can watch
    /// the member fail and leave the group.
    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    pub fn inject_fetcher_panic_for_tests(&self, message: &str) {
        *self
            .shared
            .injected_fetcher_panic
            .lock()
            .expect("injected panic") = Some(message.to_string());
    }

    /// Tests only: the fetcher holding `topic`-`partition` forgets it on the broker with its next
    /// fetch while still believing its session holds it, so that the broker serves nothing from
    /// it (a diverged session); the stall watch must notice and rebuild the session.
    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    pub fn diverge_session_for_tests(&self, topic: &str, partition: i32) {
        info!(topic, partition, "session divergence injected for a test");
        *self.shared.injected_forget.lock().expect("injected forget") =
            Some((Arc::from(topic), partition));
    }

    /// Closes every share session with epoch −1 (applying queued acks and releasing all other
    /// records at once), then leaves the group, within `share.close.timeout.ms` (past it the
    /// connections are dropped). Idempotent.
    pub async fn close(&self) -> Result<(), EngineError> {
        if self.closed.swap(true, SeqCst) {
            return Ok(());
        }
        self.shared.buffer.wakeup_for_error();
        tasks::stop_member(&self.shared, self.shared.config.close_timeout).await;
        let dropped = self.shared.buffer.clear();
        // The member's totals in one line: what an operator (or a benchmark) needs to tell a
        // starved member (few records per fetch, long fetches) from a busy one.
        let m = self.shared.metrics.snapshot();
        info!(
            member_id = %self.shared.member_id,
            dropped_buffered_records = dropped,
            records_fetched = m.records_fetched,
            fetches = m.fetch_requests,
            empty_fetches = m.fetches_empty,
            fetch_avg_ms = format!("{:.1}", m.fetch_latency_avg_ms),
            share_acknowledges = m.ack_requests,
            share_acknowledge_avg_ms = format!("{:.1}", m.ack_latency_avg_ms),
            accepted = m.accepted,
            acks_resent = m.acks_resent,
            session_resets = m.session_resets,
            "share consumer closed"
        );
        Ok(())
    }
}

fn check_topics(topics: &[String]) -> Result<(), EngineError> {
    if topics.is_empty() || topics.iter().any(|t| t.trim().is_empty()) {
        return Err(EngineError::config(
            "topics",
            "at least one non-empty topic name is required",
        ));
    }
    Ok(())
}

impl Drop for ShareConsumer {
    fn drop(&mut self) {
        // Without close(): ask the tasks to close sessions and leave on their own.
        if !self.closed.load(SeqCst) {
            self.shared.lifecycle.closing.send_replace(true);
            self.shared.lifecycle.leaving.send_replace(true);
        }
    }
}

/// Properties map helper for callers holding Kafka-style settings.
pub fn properties<'a>(
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> HashMap<String, String> {
    pairs
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Why a broker that lacks a share-group API cannot host the member, and how to enable it.
fn unsupported_share_api(broker: &str, name: &str, min: i16, max: i16) -> String {
    format!(
        "broker {broker} does not offer {name} v{min}-{max}: share groups need Kafka 4.2+ with \
         share.version >= 1 (kafka-features.sh --bootstrap-server <broker> upgrade --feature \
         share.version=1)"
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_unsupported_broker_is_told_which_kafka_and_feature_it_needs() {
        let m = super::unsupported_share_api("localhost:9092 (id 1)", "ShareFetch", 1, 2);
        assert!(m.contains("Kafka 4.2+"), "{m}");
        assert!(m.contains("upgrade --feature share.version=1"), "{m}");
        assert!(m.contains("ShareFetch v1-2"), "{m}");
    }

    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn consumer_can_be_shared_between_threads() {
        assert_send_sync::<ShareConsumer>();
        assert_send_sync::<Batch>();
    }
}
