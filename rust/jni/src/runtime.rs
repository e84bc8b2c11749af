//! The tokio runtime of this library: one per loaded library (so one per plugin class loader and
//! JVM), created on first use, with a few named worker threads, and shut down when its last user
//! (a consumer handle or a running probe) lets go. Java threads enter it through
//! [`RuntimeLease::block_on`]; tokio threads never call into the JVM.
//!
//! Why shut it down at all: Connect keeps plugin class loaders (and so this library) for the
//! worker's life, and a connector that is deleted should leave no threads behind.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use sharesink_engine::MemoryPool;
use tokio::runtime::{Builder, Runtime};

use crate::error::Error;

/// Small on purpose: Connect workers run many plugins, and the engine's work is I/O bound.
pub(crate) const DEFAULT_WORKER_THREADS: usize = 2;
/// The blocking pool resolves host names (tokio's `lookup_host`) and runs the engine's worker
/// cores while a fetcher decodes a large or compressed response in `block_in_place` (the
/// decoding thread leaves the core to a blocking thread). Threads start only when needed and
/// stop after 10 s idle; the cap is high so that several members decoding at once never leave
/// a core waiting for a thread (the core's other tasks, other members' heartbeats among them,
/// would wait with it).
const MAX_BLOCKING_THREADS: usize = 64;
/// The worker's memory bound for records until Java's `init` sets it (see `memory_pool`).
const DEFAULT_MEMORY_LIMIT: usize = 1 << 30;
/// How long shutdown waits for engine tasks that are still running (consumers are closed by
/// then, so this only bounds stragglers such as a half-open connection attempt).
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(2);

struct Registry {
    runtime: Option<Arc<Runtime>>,
    users: usize,
    worker_threads: usize,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    runtime: None,
    users: 0,
    worker_threads: DEFAULT_WORKER_THREADS,
});

fn registry() -> std::sync::MutexGuard<'static, Registry> {
    // The registry holds no invariant a panic could break half-way; keep going after one.
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// Sets the worker thread count of the next runtime to be created (the running one, if any,
/// keeps its size).
pub(crate) fn set_worker_threads(threads: usize) {
    registry().worker_threads = threads.clamp(1, 64);
}

/// The memory of every member this library runs (every Connect task of the worker JVM that
/// loaded it): what their records hold together stays within its limit (see the engine's
/// `memory` module). It outlives runtimes: a member of a later runtime shares it too.
pub(crate) fn memory_pool() -> Arc<MemoryPool> {
    static POOL: OnceLock<Arc<MemoryPool>> = OnceLock::new();
    POOL.get_or_init(|| MemoryPool::new(DEFAULT_MEMORY_LIMIT))
        .clone()
}

/// Whether a runtime is running now (for tests and diagnostics).
pub(crate) fn is_running() -> bool {
    registry().runtime.is_some()
}

fn build(worker_threads: usize) -> Result<Runtime, Error> {
    let counter = AtomicUsize::new(0);
    Builder::new_multi_thread()
        .worker_threads(worker_threads)
        .max_blocking_threads(MAX_BLOCKING_THREADS)
        .thread_name_fn(move || {
            format!(
                "sharesink-engine-{}",
                counter.fetch_add(1, Ordering::Relaxed)
            )
        })
        .enable_all()
        .build()
        .map_err(|e| Error::Internal(format!("cannot start the sharesink tokio runtime: {e}")))
}

/// A claim on the shared runtime: the runtime lives while a lease does. Drop leases on a Java
/// thread, never inside `block_on` (the last one shuts the runtime down).
pub(crate) struct RuntimeLease {
    runtime: Option<Arc<Runtime>>,
}

impl RuntimeLease {
    pub(crate) fn acquire() -> Result<Self, Error> {
        let mut registry = registry();
        let runtime = match &registry.runtime {
            Some(runtime) => runtime.clone(),
            None => {
                let runtime = Arc::new(build(registry.worker_threads)?);
                registry.runtime = Some(runtime.clone());
                runtime
            }
        };
        registry.users += 1;
        Ok(RuntimeLease {
            runtime: Some(runtime),
        })
    }

    /// Runs `future` to completion on the calling (Java) thread, with the runtime's I/O and
    /// timers; spawned tasks run on the runtime's workers.
    pub(crate) fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.runtime
            .as_ref()
            .expect("a lease holds its runtime until dropped")
            .block_on(future)
    }
}

impl RuntimeLease {
    /// Makes the runtime current on this thread (for sync engine calls that may touch tokio
    /// primitives) until the guard drops.
    pub(crate) fn enter(&self) -> tokio::runtime::EnterGuard<'_> {
        self.runtime
            .as_ref()
            .expect("a lease holds its runtime until dropped")
            .enter()
    }
}

impl Drop for RuntimeLease {
    fn drop(&mut self) {
        let mine = self.runtime.take();
        let last = {
            let mut registry = registry();
            registry.users = registry.users.saturating_sub(1);
            if registry.users == 0 {
                registry.runtime.take()
            } else {
                None
            }
        };
        drop(mine);
        if let Some(runtime) = last {
            // Every lease is gone, so this is the only reference left.
            match Arc::try_unwrap(runtime) {
                Ok(runtime) => runtime.shutdown_timeout(SHUTDOWN_TIMEOUT),
                Err(still_shared) => drop(still_shared),
            }
        }
    }
}

/// Runs one future on a lease taken for just this call (for one-shot calls such as `probe`).
pub(crate) fn block_on<F: Future>(future: F) -> Result<F::Output, Error> {
    let lease = RuntimeLease::acquire()?;
    Ok(lease.block_on(future))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Threads of this process named like the runtime's workers (Linux: /proc/self/task).
    fn engine_threads() -> usize {
        let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
            return 0;
        };
        tasks
            .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
            .filter(|comm| comm.starts_with("sharesink-engin")) // comm is cut at 15 bytes
            .count()
    }

    // No other test of this crate's unit tests takes a lease, so the runtime's life is this
    // test's to observe.
    #[test]
    fn runs_futures_on_named_workers_and_stops_with_the_last_lease() {
        let lease = RuntimeLease::acquire().unwrap();
        let name = lease.block_on(async {
            tokio::spawn(async { std::thread::current().name().map(str::to_owned) })
                .await
                .unwrap()
        });
        assert!(name.unwrap().starts_with("sharesink-engine-"));
        assert!(engine_threads() >= 1, "the workers run");
        let second = RuntimeLease::acquire().unwrap();
        drop(lease);
        assert!(is_running(), "a lease is still held");
        drop(second);
        assert!(!is_running(), "the last lease stops the runtime");
        // shutdown_timeout has joined the workers; their /proc entries go as they are reaped.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while engine_threads() > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(engine_threads(), 0, "no worker thread is left behind");
        // And a later user gets a fresh runtime.
        assert_eq!(block_on(async { 7 }).unwrap(), 7);
        assert!(!is_running(), "a one-shot call's lease ends with it");
    }
}
