//! A panic hook that records where a panic happened, with a backtrace, so the Java exception
//! says more than the bare message. The hook only writes a thread-local: the panicking thread is
//! the one whose `with_env` catches the unwind and throws. Panics on tokio workers surface to the
//! engine as `JoinError`s; their report is simply overwritten by the next one on that thread.

use std::backtrace::Backtrace;
use std::cell::RefCell;
use std::sync::Once;

use crate::error::panic_message;

thread_local! {
    static LAST_REPORT: RefCell<Option<String>> = const { RefCell::new(None) };
}

static INSTALL: Once = Once::new();

/// Installs the hook once per loaded library. This library has its own copy of `std`, so the
/// hook never sees panics of other native code in the JVM. It replaces the default hook on
/// purpose: the worker's stderr is the wrong place, the exception carries the report instead.
pub(crate) fn install() {
    INSTALL.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            let location = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                .unwrap_or_default();
            let report = format!(
                "Rust panic{location}: {}\n{}",
                panic_message(info.payload()),
                Backtrace::force_capture()
            );
            // `try_with`: during thread teardown the thread-local may be gone; then drop it.
            let _ = LAST_REPORT.try_with(|slot| {
                if let Ok(mut slot) = slot.try_borrow_mut() {
                    *slot = Some(report);
                }
            });
        }));
    });
}

/// The report of the last panic on this thread, if the hook saw one since the last call.
pub(crate) fn take_last_report() -> Option<String> {
    LAST_REPORT
        .try_with(|slot| slot.try_borrow_mut().ok().and_then(|mut s| s.take()))
        .ok()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_location_and_message() {
        install();
        let _ = take_last_report();
        let _ = std::panic::catch_unwind(|| panic!("recorded"));
        let report = take_last_report().expect("hook recorded the panic");
        assert!(report.starts_with("Rust panic at "), "{report}");
        assert!(report.contains("recorded"), "{report}");
        assert!(take_last_report().is_none());
    }
}
