//! A share consumer behind a Java `long` handle, and the work behind each consumer export.
//!
//! Lifecycle: `create` boxes a [`ConsumerHandle`] and returns the raw pointer; Java
//! (`NativeShareConsumerEngine`) guarantees that `destroy` runs once, after every other call on
//! the handle has returned, and never passes a handle after that. `wakeup` and `close` may run
//! while `poll` blocks on another thread: the engine's consumer takes `&self` everywhere.

use std::collections::HashMap;
use std::time::Duration;

use sharesink_engine::{ConsumerConfig, ErrorKind, ShareConsumer};
use tracing::Instrument;

use crate::ack_layout;
use crate::batch_layout::{self, Written};
use crate::error::Error;
use crate::logs::{self, ConsumerLogs};
use crate::metrics_layout;
use crate::runtime::{self, RuntimeLease};

pub(crate) struct ConsumerHandle {
    consumer: ShareConsumer,
    /// Every call into the consumer runs in this span, which routes its log lines.
    span: tracing::Span,
    logs: ConsumerLogs,
    /// Declared last so it is dropped last: the runtime outlives the consumer.
    lease: RuntimeLease,
}

/// What `poll` returns when the consumer is closed.
pub(crate) const POLL_CLOSED: i32 = -1;

/// Writes a create blob as Java's `NativeShareConsumerEngine.configBlob` does (see
/// [`parse_config_blob`]): for the tests of this crate, which stand in for Java.
#[doc(hidden)]
pub fn encode_config_blob(props: &[(&str, &str)], topics: &[&str]) -> Vec<u8> {
    fn put(b: &mut Vec<u8>, s: &str) {
        b.extend((s.len() as i32).to_le_bytes());
        b.extend(s.as_bytes());
    }
    let mut b = (props.len() as i32).to_le_bytes().to_vec();
    for (k, v) in props {
        put(&mut b, k);
        put(&mut b, v);
    }
    b.extend((topics.len() as i32).to_le_bytes());
    for t in topics {
        put(&mut b, t);
    }
    b
}

/// Reads length-prefixed values from a blob written by Java (see [`parse_config_blob`]).
struct BlobReader<'a> {
    blob: &'a [u8],
    pos: usize,
}

impl BlobReader<'_> {
    fn i32(&mut self) -> Result<usize, Error> {
        let bytes = self
            .blob
            .get(self.pos..self.pos + 4)
            .ok_or_else(|| Error::InvalidArgument("configuration blob is truncated".into()))?;
        self.pos += 4;
        let v = i32::from_le_bytes(bytes.try_into().expect("4 bytes"));
        usize::try_from(v)
            .map_err(|_| Error::InvalidArgument(format!("negative length {v} in config")))
    }

    fn string(&mut self) -> Result<String, Error> {
        let len = self.i32()?;
        let bytes = self
            .blob
            .get(self.pos..self.pos + len)
            .ok_or_else(|| Error::InvalidArgument("configuration blob is truncated".into()))?;
        self.pos += len;
        String::from_utf8(bytes.to_vec())
            .map_err(|_| Error::InvalidArgument("configuration is not UTF-8".into()))
    }

    fn topics(&mut self) -> Result<Vec<String>, Error> {
        (0..self.i32()?).map(|_| self.string()).collect()
    }

    /// Bytes after the last value mean the two sides disagree on the layout.
    fn finish(self) -> Result<(), Error> {
        if self.pos != self.blob.len() {
            return Err(Error::InvalidArgument(format!(
                "{} unexpected bytes after the blob's values",
                self.blob.len() - self.pos
            )));
        }
        Ok(())
    }
}

/// Reads the create blob: little-endian `i32 n, n × (key, value), i32 t, t × topic`, each
/// string as `i32 length, UTF-8 bytes` (written by NativeShareConsumerEngine.configBlob).
pub(crate) fn parse_config_blob(
    blob: &[u8],
) -> Result<(HashMap<String, String>, Vec<String>), Error> {
    let mut r = BlobReader { blob, pos: 0 };
    let mut props = HashMap::new();
    for _ in 0..r.i32()? {
        let key = r.string()?;
        let value = r.string()?;
        props.insert(key, value);
    }
    let topics = r.topics()?;
    Ok((props, topics))
}

/// Reads a subscribe blob: `i32 t, t × topic`, the topic part of the create blob (written by
/// NativeShareConsumerEngine.topicsBlob).
pub(crate) fn parse_topics_blob(blob: &[u8]) -> Result<Vec<String>, Error> {
    let mut r = BlobReader { blob, pos: 0 };
    let topics = r.topics()?;
    r.finish()?;
    Ok(topics)
}

/// Writes a subscribe blob as Java's `NativeShareConsumerEngine.topicsBlob` does: for the tests
/// of this crate, which stand in for Java.
#[doc(hidden)]
pub fn encode_topics_blob(topics: &[&str]) -> Vec<u8> {
    let mut b = (topics.len() as i32).to_le_bytes().to_vec();
    for t in topics {
        b.extend((t.len() as i32).to_le_bytes());
        b.extend(t.as_bytes());
    }
    b
}

impl ConsumerHandle {
    /// Joins the share group; blocks until the engine's start returns.
    pub(crate) fn create(config_blob: &[u8]) -> Result<Box<ConsumerHandle>, Error> {
        let (props, topics) = parse_config_blob(config_blob)?;
        let config = ConsumerConfig::from_properties(&props)?;
        let lease = RuntimeLease::acquire()?;
        let logs = ConsumerLogs::register();
        let span = logs.span();
        let start = ShareConsumer::start_in(config, topics, runtime::memory_pool());
        let consumer = match lease.block_on(start.instrument(span.clone())) {
            Ok(consumer) => consumer,
            Err(e) => {
                // The caller drains the global queue after a failed create.
                logs.queue.move_into(logs::global_queue());
                return Err(e.into());
            }
        };
        Ok(Box::new(ConsumerHandle {
            consumer,
            span,
            logs,
            lease,
        }))
    }

    /// Lines waiting in this consumer's log queue and the global one.
    fn pending_logs(&self) -> usize {
        self.logs.queue.len() + logs::global_queue().len()
    }

    /// Writes the next batch (or the rest of a split one) into `out`; see `NativeEngine.poll`.
    /// What does not fit goes back to the front of the engine's buffer, which keeps its locks
    /// alive until the next poll hands it out: the caller may not poll again for a long time
    /// (a put blocked inside the sink), and records parked here would see their locks run out.
    pub(crate) fn poll(&self, out: &mut [u8], timeout: Duration) -> Result<i32, Error> {
        let polled = self
            .lease
            .block_on(self.consumer.poll(timeout).instrument(self.span.clone()));
        let mut batch = match polled {
            Ok(Some(batch)) if !batch.is_empty() => batch,
            Ok(_) => {
                return match batch_layout::write_batch(
                    std::iter::empty::<sharesink_engine::ShareRecord>(),
                    out,
                    self.pending_logs(),
                    0,
                ) {
                    Written::Records { .. } => Ok(0),
                    Written::TooSmall { needed } => Ok(-(needed as i32)),
                };
            }
            Err(e) if e.kind() == ErrorKind::Closed => return Ok(POLL_CLOSED),
            Err(e) => return Err(e.into()),
        };
        match batch_layout::write_batch(batch.records(), out, self.pending_logs(), 0) {
            Written::Records { records, .. } => {
                if records < batch.len() {
                    let rest = batch.split_off(records);
                    self.consumer.give_back(rest);
                }
                Ok(records as i32)
            }
            Written::TooSmall { needed } => {
                self.consumer.give_back(batch);
                // Needed is at least the header size, so this is always below POLL_CLOSED.
                Ok(-(i32::try_from(needed).map_err(|_| {
                    Error::Internal(format!("a record needs {needed} bytes, beyond 2 GiB"))
                })?))
            }
        }
    }

    pub(crate) fn wakeup(&self) {
        self.consumer.wakeup();
    }

    /// Replaces the member's subscription; the next heartbeat carries it and the assignment
    /// follows. Returns at once: nothing here waits for the broker.
    pub(crate) fn subscribe(&self, topics_blob: &[u8]) -> Result<(), Error> {
        let topics = parse_topics_blob(topics_blob)?;
        let _runtime = self.lease.enter();
        let _span = self.span.enter();
        Ok(self.consumer.subscribe(topics)?)
    }

    pub(crate) fn acknowledge(&self, request: &[u8]) -> Result<(), Error> {
        let acks = ack_layout::read_acks(request)?;
        let _runtime = self.lease.enter();
        let _span = self.span.enter();
        Ok(self.consumer.acknowledge(&acks)?)
    }

    /// Returns the number of results written over the request in `buf`.
    pub(crate) fn acknowledge_sync(
        &self,
        buf: &mut [u8],
        length: usize,
        timeout: Duration,
    ) -> Result<i32, Error> {
        let acks = ack_layout::read_acks(&buf[..length])?;
        let results = self.lease.block_on(
            self.consumer
                .acknowledge_sync(&acks, timeout)
                .instrument(self.span.clone()),
        )?;
        Ok(ack_layout::write_results(&results, buf) as i32)
    }

    /// The member's counters in the metrics layout.
    pub(crate) fn metrics(&self) -> [i64; metrics_layout::FIELDS] {
        metrics_layout::write(&self.consumer.metrics())
    }

    /// May run while a poll blocks on another thread: this call is what wakes it.
    pub(crate) fn close(&self) -> Result<(), Error> {
        Ok(self
            .lease
            .block_on(self.consumer.close().instrument(self.span.clone()))?)
    }

    pub(crate) fn drain_logs(&self, out: &mut [u8]) -> usize {
        self.logs.queue.drain_into(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(props: &[(&str, &str)], topics: &[&str]) -> Vec<u8> {
        encode_config_blob(props, topics)
    }

    #[test]
    fn config_blob_round_trip() {
        let b = blob(&[("group.id", "g"), ("client.id", "ü")], &["a", "b"]);
        let (props, topics) = parse_config_blob(&b).unwrap();
        assert_eq!(props["client.id"], "ü");
        assert_eq!(topics, vec!["a", "b"]);
        assert!(parse_config_blob(&b[..b.len() - 1]).is_err());
    }

    #[test]
    fn topics_blob_round_trip() {
        let b = encode_topics_blob(&["a", "ü-topic"]);
        assert_eq!(parse_topics_blob(&b).unwrap(), vec!["a", "ü-topic"]);
        assert_eq!(
            parse_topics_blob(&encode_topics_blob(&[])).unwrap(),
            Vec::<String>::new()
        );
        assert!(parse_topics_blob(&b[..b.len() - 1]).is_err());
        let mut longer = b.clone();
        longer.push(0);
        assert!(parse_topics_blob(&longer).is_err());
    }

    #[test]
    fn bad_config_is_a_config_error_before_any_connection() {
        let b = blob(&[("bootstrap.servers", "h:1")], &["t"]);
        let err = ConsumerHandle::create(&b).err().unwrap();
        assert_eq!(err.kind_name(), "CONFIG");
    }
}
