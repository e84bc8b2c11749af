//! The member's tasks (router, membership, fetchers, buffer sweeper) run under supervision: a
//! panic or an unexpected end of any of them fails the member, so the next `poll` reports it
//! (the JNI layer then fails the Connect task with that message), and stops it: share sessions
//! closed (their records released at once) and the group left, so that the partitions go to
//! other members. Without this, a member whose fetcher died kept heartbeating and held its
//! partitions' share while fetching nothing.
//!
//! [`stop_member`] is that stop, and also what `ShareConsumer::close` runs: sessions first, then
//! the leave heartbeat, within a budget (`share.close.timeout.ms`) after which the tasks are
//! aborted, which drops their connections. The run state it works on (`Lifecycle`) is part of
//! `Shared` and lives in `lifecycle`.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::{error, warn, Instrument};

use crate::error::EngineError;
use crate::panic_report;
use crate::shared::Shared;

/// The member's tasks, by role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Router,
    Membership,
    Fetcher,
    Sweeper,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::Router => "router",
            Role::Membership => "membership",
            Role::Fetcher => "fetcher",
            Role::Sweeper => "buffer sweeper",
        }
    }
}

/// Sets a flag when dropped: when the task's future ends, panics or is aborted.
struct DoneOnDrop<'a>(Option<&'a watch::Sender<bool>>);

impl Drop for DoneOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(done) = self.0 {
            done.send_replace(true);
        }
    }
}

/// Polls a future, turning a panic inside it into an `Err` with the panic's payload. The panic
/// is caught on the thread that panicked, so the panic hook's report (with the location and a
/// backtrace) is still there to take.
struct CatchUnwind(Pin<Box<dyn Future<Output = ()> + Send>>);

impl Future for CatchUnwind {
    type Output = Result<(), Box<dyn Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let fut = self.0.as_mut();
        match std::panic::catch_unwind(AssertUnwindSafe(|| fut.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(())) => Poll::Ready(Ok(())),
            Err(payload) => Poll::Ready(Err(payload)),
        }
    }
}

/// Spawns one of the member's tasks in the current span, supervised (see the module docs).
pub(crate) fn spawn(
    shared: &Arc<Shared>,
    role: Role,
    task: impl Future<Output = ()> + Send + 'static,
) -> JoinHandle<()> {
    let supervisor = shared.clone();
    let handle = tokio::spawn(
        async move {
            let shared = supervisor;
            let outcome = {
                let lifecycle = &shared.lifecycle;
                let _done = DoneOnDrop(match role {
                    Role::Router => Some(&lifecycle.router_done),
                    Role::Membership => Some(&lifecycle.membership_done),
                    Role::Fetcher | Role::Sweeper => None,
                });
                CatchUnwind(Box::pin(task)).await
            };
            let message = match outcome {
                Err(payload) => panic_report::take_last()
                    .unwrap_or_else(|| format!("panic: {}", panic_report::message(&*payload))),
                // Ending while the member runs, without a failure of its own, is a bug too.
                Ok(()) if !shared.lifecycle.stopping() && shared.fatal_error().is_none() => {
                    "ended while the member was running".to_string()
                }
                Ok(()) => return,
            };
            error!(task = role.name(), %message, "engine task failed; stopping the member");
            fail_member(
                &shared,
                EngineError::TaskFailed {
                    task: role.name(),
                    message,
                },
            );
        }
        .in_current_span(),
    );
    shared.lifecycle.track(handle.abort_handle());
    handle
}

/// Fails the member with `error` (the next `poll` reports it) and stops it in a task of its
/// own (see [`stop_member`]): its share sessions close, which releases every record it holds,
/// and it leaves the group. Called from inside one of the member's tasks, which the stop then
/// waits for.
pub(crate) fn fail_member(shared: &Arc<Shared>, error: EngineError) {
    shared.fail(error);
    let stopper = shared.clone();
    tokio::spawn(
        async move {
            let budget = stopper.config.close_timeout;
            stop_member(&stopper, budget).await;
        }
        .in_current_span(),
    );
}

/// Stops the member within `budget`: its share sessions close (epoch −1: queued acks applied,
/// every other record released), then it leaves the group. Past the budget every task is
/// aborted, which closes their connections (the broker then releases the records; a broker
/// that cannot be reached lets their locks expire). Idempotent. Returns whether it completed in
/// time.
pub(crate) async fn stop_member(shared: &Arc<Shared>, budget: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + budget;
    let _one = shared.lifecycle.stop.lock().await;
    let lifecycle = &shared.lifecycle;
    lifecycle.closing.send_replace(true);
    shared.buffer.wakeup_for_error();
    let mut in_time = true;
    let mut router_done = lifecycle.router_done.subscribe();
    if tokio::time::timeout_at(deadline, router_done.wait_for(|d| *d))
        .await
        .is_err()
    {
        warn!(?budget, "share sessions did not close in time");
        in_time = false;
    }
    lifecycle.leaving.send_replace(true);
    let mut membership_done = lifecycle.membership_done.subscribe();
    if tokio::time::timeout_at(deadline, membership_done.wait_for(|d| *d))
        .await
        .is_err()
    {
        warn!(?budget, "leave heartbeat did not complete in time");
        in_time = false;
    }
    if !in_time {
        lifecycle.abort_all();
    }
    in_time
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn shared() -> Arc<Shared> {
        Arc::new(Shared::for_tests(&[("share.close.timeout.ms", "2000")], 2))
    }

    /// Stand-ins for the router and the membership task: each waits for its stop signal and
    /// notes when it got it.
    fn fake_member(shared: &Arc<Shared>) -> Arc<Mutex<Vec<&'static str>>> {
        let events = Arc::new(Mutex::new(Vec::new()));
        let (mut closing, log) = (shared.lifecycle.closing.subscribe(), events.clone());
        spawn(shared, Role::Router, async move {
            let _ = closing.wait_for(|c| *c).await;
            log.lock().unwrap().push("sessions closed");
        });
        let (mut leaving, log) = (shared.lifecycle.leaving.subscribe(), events.clone());
        spawn(shared, Role::Membership, async move {
            let _ = leaving.wait_for(|l| *l).await;
            log.lock().unwrap().push("left the group");
        });
        events
    }

    async fn stopped(shared: &Arc<Shared>) {
        let mut done = shared.lifecycle.membership_done.subscribe();
        tokio::time::timeout(Duration::from_secs(10), done.wait_for(|d| *d))
            .await
            .expect("the member did not stop")
            .unwrap();
    }

    #[tokio::test]
    async fn a_panicking_task_fails_the_member_and_stops_it() {
        // As the JNI library does: the hook records the report for the supervisor.
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            panic_report::record(info);
            previous(info);
        }));
        let shared = shared();
        let events = fake_member(&shared);
        spawn(&shared, Role::Fetcher, async {
            panic!("fetcher went wrong");
        });
        stopped(&shared).await;
        let error = shared.fatal_error().expect("the member did not fail");
        let EngineError::TaskFailed { task, message } = &error else {
            panic!("unexpected error {error}");
        };
        assert_eq!(*task, "fetcher");
        assert!(message.contains("fetcher went wrong"), "{message}");
        assert!(message.contains("tasks.rs"), "no location in {message}");
        assert_eq!(error.kind(), crate::ErrorKind::Internal);
        assert!(!error.is_retriable());
        // Sessions closed first (records released), then the leave heartbeat.
        assert_eq!(
            *events.lock().unwrap(),
            vec!["sessions closed", "left the group"]
        );
    }

    #[tokio::test]
    async fn a_task_that_ends_while_the_member_runs_fails_it() {
        let shared = shared();
        let events = fake_member(&shared);
        spawn(&shared, Role::Sweeper, async {});
        stopped(&shared).await;
        let error = shared.fatal_error().expect("the member did not fail");
        assert!(
            matches!(&error, EngineError::TaskFailed { task: "buffer sweeper", message }
                if message.contains("ended while the member was running")),
            "{error}"
        );
        assert_eq!(events.lock().unwrap().len(), 2);
    }

    #[tokio::test]
    async fn tasks_ending_on_a_stop_are_no_failure() {
        let shared = shared();
        let events = fake_member(&shared);
        assert!(stop_member(&shared, Duration::from_secs(5)).await);
        assert!(shared.fatal_error().is_none());
        assert_eq!(events.lock().unwrap().len(), 2);
    }

    #[tokio::test]
    async fn a_stop_past_its_budget_aborts_the_tasks() {
        let shared = shared();
        let never = spawn(&shared, Role::Router, std::future::pending());
        let started = tokio::time::Instant::now();
        assert!(!stop_member(&shared, Duration::from_millis(200)).await);
        assert!(started.elapsed() < Duration::from_secs(2));
        let joined = tokio::time::timeout(Duration::from_secs(2), never)
            .await
            .expect("the task was not aborted");
        assert!(joined.unwrap_err().is_cancelled());
    }
}
