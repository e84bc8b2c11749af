//! Where a panic happened, for the error that reports it. The process's panic hook (installed
//! by the binary, e.g. the JNI library; the engine never installs one) calls [`record`] with the
//! hook's info; whoever catches the unwind on the same thread takes the report with
//! [`take_last`]. Without a hook, only the panic's message is known.

use std::any::Any;
use std::backtrace::Backtrace;
use std::cell::RefCell;
use std::panic::PanicHookInfo;

thread_local! {
    static LAST_REPORT: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Stores a report of this panic (location, message, backtrace) for this thread.
pub fn record(info: &PanicHookInfo<'_>) {
    let location = info
        .location()
        .map(|l| format!(" at {}:{}", l.file(), l.line()))
        .unwrap_or_default();
    let report = format!(
        "Rust panic{location}: {}\n{}",
        message(info.payload()),
        Backtrace::force_capture()
    );
    // `try_with`: during thread teardown the thread-local may be gone; then drop it.
    let _ = LAST_REPORT.try_with(|slot| {
        if let Ok(mut slot) = slot.try_borrow_mut() {
            *slot = Some(report);
        }
    });
}

/// The report of the last panic on this thread, if one was recorded since the last call.
pub fn take_last() -> Option<String> {
    LAST_REPORT
        .try_with(|slot| slot.try_borrow_mut().ok().and_then(|mut s| s.take()))
        .ok()
        .flatten()
}

/// The text of a panic payload (`panic!` with a literal or a formatted message).
pub fn message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-string payload".to_string()
    }
}
