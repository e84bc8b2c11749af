//! The engine's wall clock. Lock deadlines are wall-clock milliseconds since the epoch, because
//! Java compares them with `System.currentTimeMillis()`; intervals (how long the caller has not
//! polled) are measured on tokio's monotonic clock instead. A test can make the wall clock follow
//! tokio's, so that paused time moves lock deadlines and idle time together, without sleeping.

use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Debug, Clone, Default)]
pub(crate) struct WallClock {
    /// (wall ms, tokio instant) at which a test anchored the clock; `None` is the system clock.
    anchor: Option<(i64, tokio::time::Instant)>,
}

impl WallClock {
    /// Milliseconds since the epoch.
    pub fn now_ms(&self) -> i64 {
        match self.anchor {
            None => system_ms(),
            Some((wall, at)) => wall + at.elapsed().as_millis() as i64,
        }
    }

    /// Tests only: a wall clock that advances with tokio's (possibly paused) clock.
    #[cfg(test)]
    pub fn following_tokio() -> Self {
        WallClock {
            anchor: Some((system_ms(), tokio::time::Instant::now())),
        }
    }
}

fn system_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
