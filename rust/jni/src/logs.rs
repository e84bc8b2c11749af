//! Native log lines for the Java side. A `tracing` layer (installed once per loaded library)
//! formats each enabled event and puts it into a bounded queue; the Java thread that polls a
//! consumer drains that consumer's queue into SLF4J (`NativeLogBridge`), so the lines carry the
//! worker's MDC (`connector.context`). No tokio thread ever touches the JVM; a full queue drops
//! the line and counts it.
//!
//! Routing: every call into a consumer runs inside a span carrying that consumer's queue id
//! (`sharesink_log_queue`); spans created inside it (the engine's `share_consumer` span, the
//! per-task spans) inherit the queue, so events from the engine's tasks go to the right
//! consumer. Events outside any consumer go to a global queue, which every poll drains too.
//!
//! Drain layout (little-endian), written by [`drain_into`]:
//! ```text
//!    0  i32  entries written e
//!    4  i32  entries still queued after this drain
//!    8  i64  lines dropped since the last drain (queue full)
//!   16  e entries:  i32 level (1 ERROR, 2 WARN, 3 INFO, 4 DEBUG, 5 TRACE),
//!                   i32 target length, target UTF-8, i32 text length, text UTF-8
//! ```

use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, Once, OnceLock, Weak};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::subscriber::Interest;
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::prelude::*;
use tracing_subscriber::registry::LookupSpan;

/// Lines a queue holds before it drops new ones. A poll drains at most one buffer's worth.
const QUEUE_CAPACITY: usize = 2048;
/// The span field naming a consumer's queue.
pub(crate) const QUEUE_FIELD: &str = "sharesink_log_queue";
pub(crate) const DRAIN_HEADER_BYTES: usize = 16;

/// 0 off, 1 ERROR .. 5 TRACE; INFO until Java says otherwise.
static MAX_LEVEL: AtomicU8 = AtomicU8::new(3);

pub(crate) fn level_code(level: &Level) -> u8 {
    match *level {
        Level::ERROR => 1,
        Level::WARN => 2,
        Level::INFO => 3,
        Level::DEBUG => 4,
        Level::TRACE => 5,
    }
}

pub(crate) struct LogLine {
    level: u8,
    target: &'static str,
    text: String,
}

#[derive(Default)]
pub(crate) struct LogQueue {
    lines: Mutex<VecDeque<LogLine>>,
    len: AtomicUsize,
    dropped: AtomicU64,
}

impl LogQueue {
    fn push(&self, line: LogLine) {
        let mut lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        if lines.len() >= QUEUE_CAPACITY {
            self.dropped.fetch_add(1, Relaxed);
            return;
        }
        lines.push_back(line);
        self.len.store(lines.len(), Relaxed);
    }

    /// Moves every queued line to `other` (e.g. a consumer's lines when it failed to start and
    /// its queue is about to go, so the caller still drains them from the global queue).
    pub(crate) fn move_into(&self, other: &LogQueue) {
        let lines: Vec<LogLine> = {
            let mut lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
            self.len.store(0, Relaxed);
            lines.drain(..).collect()
        };
        for line in lines {
            other.push(line);
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len.load(Relaxed)
    }

    /// Moves as many lines as fit into `out` (layout in the module comment); returns the
    /// number written. Lines that do not fit stay queued; a single line larger than the whole
    /// buffer is cut short rather than blocking the queue.
    pub(crate) fn drain_into(&self, out: &mut [u8]) -> usize {
        if out.len() < DRAIN_HEADER_BYTES {
            return 0;
        }
        let mut lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        let mut pos = DRAIN_HEADER_BYTES;
        let mut written = 0usize;
        while let Some(line) = lines.front() {
            let fixed = 12 + line.target.len();
            let room = out.len() - pos;
            if room < fixed + line.text.len() && !(written == 0 && room > fixed) {
                break;
            }
            let mut text_len = line.text.len().min(room - fixed);
            while !line.text.is_char_boundary(text_len) {
                text_len -= 1;
            }
            put_i32(out, pos, line.level as i32);
            put_i32(out, pos + 4, line.target.len() as i32);
            out[pos + 8..pos + 8 + line.target.len()].copy_from_slice(line.target.as_bytes());
            pos += 8 + line.target.len();
            put_i32(out, pos, text_len as i32);
            out[pos + 4..pos + 4 + text_len].copy_from_slice(&line.text.as_bytes()[..text_len]);
            pos += 4 + text_len;
            lines.pop_front();
            written += 1;
        }
        self.len.store(lines.len(), Relaxed);
        put_i32(out, 0, written as i32);
        put_i32(out, 4, lines.len() as i32);
        let dropped = self.dropped.swap(0, Relaxed);
        out[8..16].copy_from_slice(&(dropped as i64).to_le_bytes());
        written
    }
}

fn put_i32(out: &mut [u8], at: usize, v: i32) {
    out[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// Queues by id, so a span field (a number) can name one. Weak: a consumer's queue dies with it.
struct Queues {
    next_id: AtomicU64,
    by_id: Mutex<HashMap<u64, Weak<LogQueue>>>,
    global: Arc<LogQueue>,
}

fn queues() -> &'static Queues {
    static QUEUES: OnceLock<Queues> = OnceLock::new();
    QUEUES.get_or_init(|| Queues {
        next_id: AtomicU64::new(1),
        by_id: Mutex::new(HashMap::new()),
        global: Arc::new(LogQueue::default()),
    })
}

/// The queue for lines that belong to no consumer.
pub(crate) fn global_queue() -> &'static Arc<LogQueue> {
    &queues().global
}

/// A consumer's queue and the id its span carries; unregistered when dropped.
pub(crate) struct ConsumerLogs {
    pub(crate) id: u64,
    pub(crate) queue: Arc<LogQueue>,
}

impl ConsumerLogs {
    pub(crate) fn register() -> Self {
        let q = queues();
        let id = q.next_id.fetch_add(1, Relaxed);
        let queue = Arc::new(LogQueue::default());
        q.by_id
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, Arc::downgrade(&queue));
        ConsumerLogs { id, queue }
    }

    /// The span every call into this consumer runs in.
    pub(crate) fn span(&self) -> tracing::Span {
        tracing::info_span!("sharesink_jni", sharesink_log_queue = self.id)
    }
}

impl Drop for ConsumerLogs {
    fn drop(&mut self) {
        queues()
            .by_id
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.id);
    }
}

/// Installs the layer once per loaded library and sets the most verbose level Java wants
/// (0 off .. 5 TRACE). Another global subscriber in this library's copy of `tracing` cannot
/// exist (nothing else here installs one), so installation only fails in tests that race it.
pub(crate) fn init(max_level: u8) {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let _ = tracing::subscriber::set_global_default(
            tracing_subscriber::registry().with(QueueLayer),
        );
    });
    if MAX_LEVEL.swap(max_level.min(5), Relaxed) != max_level.min(5) {
        // Callsites cache whether they are enabled; make them ask again.
        tracing::callsite::rebuild_interest_cache();
    }
}

/// Per-span data: the consumer queue it belongs to and its formatted fields.
struct SpanData {
    queue: Option<Weak<LogQueue>>,
    fields: String,
}

struct QueueLayer;

fn event_enabled(metadata: &Metadata<'_>) -> bool {
    level_code(metadata.level()) <= MAX_LEVEL.load(Relaxed)
}

impl<S> Layer<S> for QueueLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        // Spans always: they carry the routing even when only their events are wanted.
        if metadata.is_span() || event_enabled(metadata) {
            Interest::always()
        } else {
            Interest::never()
        }
    }

    fn enabled(&self, metadata: &Metadata<'_>, _ctx: Context<'_, S>) -> bool {
        metadata.is_span() || event_enabled(metadata)
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut visitor = FieldText::default();
        attrs.record(&mut visitor);
        let queue = match visitor.queue_id {
            Some(qid) => queues()
                .by_id
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&qid)
                .cloned(),
            None => span.parent().and_then(|p| {
                p.extensions()
                    .get::<SpanData>()
                    .and_then(|d| d.queue.clone())
            }),
        };
        span.extensions_mut().insert(SpanData {
            queue,
            fields: visitor.text,
        });
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let metadata = event.metadata();
        if !event_enabled(metadata) {
            return;
        }
        let mut text = String::new();
        let mut queue: Option<Arc<LogQueue>> = None;
        if let Some(scope) = ctx.event_scope(event) {
            for span in scope.from_root() {
                let extensions = span.extensions();
                let Some(data) = extensions.get::<SpanData>() else {
                    continue;
                };
                if let Some(q) = data.queue.as_ref().and_then(Weak::upgrade) {
                    queue = Some(q);
                }
                if span.name() == "sharesink_jni" {
                    continue;
                }
                text.push_str(span.name());
                if !data.fields.is_empty() {
                    let _ = write!(text, "{{{}}}", data.fields);
                }
                text.push_str(": ");
            }
        }
        let mut visitor = FieldText::default();
        event.record(&mut visitor);
        text.push_str(&visitor.text);
        let line = LogLine {
            level: level_code(metadata.level()),
            target: metadata.target(),
            text,
        };
        match queue {
            Some(q) => q.push(line),
            None => global_queue().push(line),
        }
    }
}

/// Formats fields as `message k=v k2=v2`; picks out the queue id field.
#[derive(Default)]
struct FieldText {
    text: String,
    queue_id: Option<u64>,
}

impl FieldText {
    fn separator(&mut self) {
        if !self.text.is_empty() {
            self.text.push(' ');
        }
    }
}

impl Visit for FieldText {
    fn record_u64(&mut self, field: &Field, value: u64) {
        if field.name() == QUEUE_FIELD {
            self.queue_id = Some(value);
            return;
        }
        self.record_debug(field, &value);
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.separator();
        if field.name() == "message" {
            self.text.push_str(value);
        } else {
            let _ = write!(self.text, "{}={}", field.name(), value);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.separator();
        if field.name() == "message" {
            let _ = write!(self.text, "{value:?}");
        } else {
            let _ = write!(self.text, "{}={:?}", field.name(), value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn i32_at(b: &[u8], at: usize) -> i32 {
        i32::from_le_bytes(b[at..at + 4].try_into().unwrap())
    }

    fn read(b: &[u8]) -> Vec<(i32, String, String)> {
        let n = i32_at(b, 0);
        let mut pos = DRAIN_HEADER_BYTES;
        (0..n)
            .map(|_| {
                let level = i32_at(b, pos);
                let tl = i32_at(b, pos + 4) as usize;
                let target = String::from_utf8(b[pos + 8..pos + 8 + tl].to_vec()).unwrap();
                pos += 8 + tl;
                let xl = i32_at(b, pos) as usize;
                let text = String::from_utf8(b[pos + 4..pos + 4 + xl].to_vec()).unwrap();
                pos += 4 + xl;
                (level, target, text)
            })
            .collect()
    }

    #[test]
    fn events_reach_their_consumer_queue_with_span_context() {
        init(4);
        let logs = ConsumerLogs::register();
        let other = ConsumerLogs::register();
        {
            let _outer = logs.span().entered();
            let inner = tracing::info_span!("share_consumer", group = "g1");
            let _inner = inner.entered();
            tracing::info!(records = 5, "fetched");
            tracing::debug!("details");
            tracing::trace!("too verbose");
        }
        assert_eq!(logs.queue.len(), 2);
        assert_eq!(other.queue.len(), 0);
        let mut buf = vec![0u8; 4096];
        assert_eq!(logs.queue.drain_into(&mut buf), 2);
        let lines = read(&buf);
        assert_eq!(lines[0].0, 3);
        assert_eq!(lines[0].1, module_path!());
        assert_eq!(lines[0].2, "share_consumer{group=g1}: fetched records=5");
        assert_eq!(lines[1].0, 4);
        assert_eq!(logs.queue.len(), 0);
    }

    #[test]
    fn a_full_queue_drops_and_counts() {
        let queue = LogQueue::default();
        for i in 0..QUEUE_CAPACITY + 3 {
            queue.push(LogLine {
                level: 3,
                target: "t",
                text: format!("line {i}"),
            });
        }
        let mut small = vec![0u8; 64];
        let n = queue.drain_into(&mut small);
        assert!(n >= 1);
        assert_eq!(i64::from_le_bytes(small[8..16].try_into().unwrap()), 3);
        assert_eq!(i32_at(&small, 4) as usize, QUEUE_CAPACITY - n);
        // A line larger than the buffer is cut, not stuck.
        let big = LogQueue::default();
        big.push(LogLine {
            level: 1,
            target: "t",
            text: "x".repeat(500),
        });
        assert_eq!(big.drain_into(&mut small), 1);
        assert_eq!(big.len(), 0);
    }

    #[test]
    fn lines_of_a_consumer_that_failed_to_start_move_to_the_global_queue() {
        let from = LogQueue::default();
        let to = LogQueue::default();
        for text in ["a", "b"] {
            from.push(LogLine {
                level: 2,
                target: "t",
                text: text.into(),
            });
        }
        from.move_into(&to);
        assert_eq!((from.len(), to.len()), (0, 2));
    }
}
