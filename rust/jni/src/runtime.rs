//! The tokio runtime of this library: one per loaded library (so one per plugin class loader and
//! JVM), created on first use, with a few named worker threads. Java threads enter it through
//! `block_on`; tokio threads never call into the JVM.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use tokio::runtime::{Builder, Runtime};

use crate::error::Error;

/// Small on purpose: Connect workers run many plugins, and the engine's work is I/O bound.
const WORKER_THREADS: usize = 2;
const MAX_BLOCKING_THREADS: usize = 4;

static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();

fn runtime() -> Result<&'static Runtime, Error> {
    RUNTIME
        .get_or_init(|| {
            let counter = AtomicUsize::new(0);
            Builder::new_multi_thread()
                .worker_threads(WORKER_THREADS)
                .max_blocking_threads(MAX_BLOCKING_THREADS)
                .thread_name_fn(move || {
                    format!(
                        "sharesink-engine-{}",
                        counter.fetch_add(1, Ordering::Relaxed)
                    )
                })
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start the sharesink tokio runtime: {e}"))
        })
        .as_ref()
        .map_err(|e| Error::Internal(e.clone()))
}

/// Runs `future` to completion on the calling (Java) thread, with the runtime's I/O and timers.
pub(crate) fn block_on<F: Future>(future: F) -> Result<F::Output, Error> {
    Ok(runtime()?.block_on(future))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_futures_on_named_workers() {
        let name = block_on(async {
            tokio::spawn(async { std::thread::current().name().map(str::to_owned) })
                .await
                .unwrap()
        })
        .unwrap();
        assert!(name.unwrap().starts_with("sharesink-engine-"));
    }
}
