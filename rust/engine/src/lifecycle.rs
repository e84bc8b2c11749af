//! A member's run state: the stop signals its tasks watch, the flags the router and the
//! membership task raise when they end, and the abort handles of every task. Plain state held
//! by `Shared`; `tasks` spawns and stops the tasks with it.

use std::sync::Mutex;

use tokio::sync::watch;
use tokio::task::AbortHandle;

/// The member's run state and its tasks.
pub(crate) struct Lifecycle {
    /// Router and fetchers close their share sessions (epoch −1) and end.
    pub closing: watch::Sender<bool>,
    /// The membership task sends its leave heartbeat and ends.
    pub leaving: watch::Sender<bool>,
    /// Set when the router task has ended (its fetchers' sessions closed), however it ended.
    pub router_done: watch::Sender<bool>,
    /// Set when the membership task has ended, however it ended.
    pub membership_done: watch::Sender<bool>,
    /// One stop at a time; a second caller waits for the first and finds it done.
    pub stop: tokio::sync::Mutex<()>,
    tasks: Mutex<Vec<AbortHandle>>,
}

impl Default for Lifecycle {
    fn default() -> Self {
        Lifecycle {
            closing: watch::Sender::new(false),
            leaving: watch::Sender::new(false),
            router_done: watch::Sender::new(false),
            membership_done: watch::Sender::new(false),
            stop: tokio::sync::Mutex::new(()),
            tasks: Mutex::new(Vec::new()),
        }
    }
}

impl Lifecycle {
    /// A stop was asked for (close, drop, or a failed task).
    pub fn stopping(&self) -> bool {
        *self.closing.borrow() || *self.leaving.borrow()
    }

    /// Keeps a task's abort handle, for [`Lifecycle::abort_all`].
    pub fn track(&self, task: AbortHandle) {
        self.tasks.lock().expect("tasks").push(task);
    }

    pub fn abort_all(&self) {
        for task in self.tasks.lock().expect("tasks").drain(..) {
            task.abort();
        }
    }
}
