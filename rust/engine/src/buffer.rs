//! Fetched batches waiting for `poll`, bounded in records and bytes, with a wakeup flag.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering::SeqCst};
use std::sync::Mutex;

use tokio::sync::{watch, Notify};

use crate::batch::Batch;

pub(crate) struct DeliveryBuffer {
    queue: Mutex<VecDeque<Batch>>,
    records: AtomicUsize,
    bytes: AtomicUsize,
    max_records: usize,
    max_bytes: usize,
    /// Signalled when a batch arrives, on wakeup and on failure.
    pub ready: Notify,
    woken: AtomicBool,
    /// Set when batches were released because the caller did not poll them in time; no
    /// fetch is sent until the caller polls again (it would only acquire more to release).
    stalled: AtomicBool,
    /// Calls to `poll` running now, and when the last one returned (ms since the epoch):
    /// a caller that has not polled for a while is busy elsewhere (or stuck), and what a
    /// fetch would acquire now would only wait out its lock here.
    polls_running: AtomicUsize,
    last_poll_end_ms: AtomicI64,
    /// Bumped each time `poll` takes a batch, so fetchers blocked on a full buffer resume.
    space: watch::Sender<u64>,
}

impl DeliveryBuffer {
    pub fn new(max_records: usize, max_bytes: usize) -> Self {
        DeliveryBuffer {
            queue: Mutex::new(VecDeque::new()),
            records: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
            max_records,
            max_bytes,
            ready: Notify::new(),
            woken: AtomicBool::new(false),
            stalled: AtomicBool::new(false),
            polls_running: AtomicUsize::new(0),
            last_poll_end_ms: AtomicI64::new(crate::fetcher::wall_ms()),
            space: watch::Sender::new(0),
        }
    }

    /// Room for another fetch: below both caps, and the caller is polling.
    pub fn has_room(&self) -> bool {
        !self.stalled.load(SeqCst)
            && self.records.load(SeqCst) < self.max_records
            && self.bytes.load(SeqCst) < self.max_bytes
    }

    /// A `poll` starts: fetching resumes if a stall or an idle caller had stopped it. The
    /// returned guard marks the end of the poll when dropped.
    pub fn poll_started(&self, idle_after_ms: i64) -> PollGuard<'_> {
        let was_idle = self.caller_idle(idle_after_ms);
        self.polls_running.fetch_add(1, SeqCst);
        if self.stalled.swap(false, SeqCst) || was_idle {
            self.space.send_modify(|n| *n += 1);
        }
        PollGuard { buffer: self }
    }

    /// No `poll` is running and none has for `idle_after_ms`.
    pub fn caller_idle(&self, idle_after_ms: i64) -> bool {
        self.polls_running.load(SeqCst) == 0
            && crate::fetcher::wall_ms() - self.last_poll_end_ms.load(SeqCst) > idle_after_ms
    }

    pub fn len_records(&self) -> usize {
        self.records.load(SeqCst)
    }

    pub fn subscribe_space(&self) -> watch::Receiver<u64> {
        self.space.subscribe()
    }

    pub fn push(&self, batch: Batch) {
        self.records.fetch_add(batch.len(), SeqCst);
        self.bytes.fetch_add(batch.payload_bytes(), SeqCst);
        self.queue.lock().expect("buffer").push_back(batch);
        self.ready.notify_one();
    }

    pub fn try_take(&self) -> Option<Batch> {
        let batch = self.queue.lock().expect("buffer").pop_front()?;
        self.records.fetch_sub(batch.len(), SeqCst);
        self.bytes.fetch_sub(batch.payload_bytes(), SeqCst);
        self.space.send_modify(|n| *n += 1);
        Some(batch)
    }

    /// Takes the batches at the front for which `stale` holds (the queue is in fetch order,
    /// so the oldest locks are at the front).
    pub fn take_stale(&self, stale: impl Fn(&Batch) -> bool) -> Vec<Batch> {
        let mut out = Vec::new();
        {
            let mut q = self.queue.lock().expect("buffer");
            while q.front().is_some_and(&stale) {
                let batch = q.pop_front().expect("checked");
                self.records.fetch_sub(batch.len(), SeqCst);
                self.bytes.fetch_sub(batch.payload_bytes(), SeqCst);
                out.push(batch);
            }
        }
        if !out.is_empty() {
            self.stalled.store(true, SeqCst);
            self.space.send_modify(|n| *n += 1);
        }
        out
    }

    /// Drops everything buffered (on close: the session close releases the records).
    pub fn clear(&self) -> usize {
        let mut n = 0;
        while let Some(b) = self.try_take() {
            n += b.len();
        }
        n
    }

    pub fn wakeup(&self) {
        self.woken.store(true, SeqCst);
        self.ready.notify_waiters();
        self.ready.notify_one();
    }

    /// Wakes pollers without consuming as a wakeup: they then find the failure.
    pub fn wakeup_for_error(&self) {
        self.ready.notify_waiters();
        self.ready.notify_one();
    }

    /// Consumes a pending wakeup.
    pub fn take_wakeup(&self) -> bool {
        self.woken.swap(false, SeqCst)
    }
}

/// Ends a poll (see [`DeliveryBuffer::poll_started`]), also when the poll future is dropped.
pub(crate) struct PollGuard<'a> {
    buffer: &'a DeliveryBuffer,
}

impl Drop for PollGuard<'_> {
    fn drop(&mut self) {
        self.buffer
            .last_poll_end_ms
            .store(crate::fetcher::wall_ms(), SeqCst);
        self.buffer.polls_running.fetch_sub(1, SeqCst);
    }
}
