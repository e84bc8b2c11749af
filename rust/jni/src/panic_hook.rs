//! A panic hook that records where a panic happened, with a backtrace, so the Java exception
//! says more than the bare message. The hook only writes a thread-local (the engine's
//! `panic_report` slot): the thread that catches the unwind takes it. That is this library's
//! `with_env` for a panic in an export, and the engine's task supervisor for a panic in an
//! engine task on a tokio worker, which fails the member with the report.

use std::sync::Once;

use sharesink_engine::panic_report;

static INSTALL: Once = Once::new();

/// Installs the hook once per loaded library. This library has its own copy of `std`, so the
/// hook never sees panics of other native code in the JVM. It replaces the default hook on
/// purpose: the worker's stderr is the wrong place, the exception carries the report instead.
pub(crate) fn install() {
    INSTALL.call_once(|| {
        std::panic::set_hook(Box::new(panic_report::record));
    });
}

/// The report of the last panic on this thread, if the hook saw one since the last call.
pub(crate) fn take_last_report() -> Option<String> {
    panic_report::take_last()
}

/// The text of a panic payload (`panic!` gives a `&str` or a `String`), for a panic the hook
/// did not report (it is installed late, or another hook replaced it).
pub(crate) fn message(payload: &(dyn std::any::Any + Send)) -> String {
    panic_report::message(payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panic_payloads_become_text() {
        let payload = std::panic::catch_unwind(|| panic!("boom {}", 7)).unwrap_err();
        assert_eq!(message(&*payload), "boom 7");
        let payload = std::panic::catch_unwind(|| panic!("static")).unwrap_err();
        assert_eq!(message(&*payload), "static");
    }

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
