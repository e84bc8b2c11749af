//! What `poll` hands out: records acquired by this member, zero-copy over the fetch response.

use std::sync::Arc;

use crate::acks::{Ack, AckKind};
use bytes::Bytes;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum TimestampType {
    CreateTime = 0,
    LogAppendTime = 1,
}

/// A record header. Keys are kept as bytes (Java reads them as UTF-8 strings); duplicate keys
/// are kept in order.
#[derive(Debug, Clone)]
pub struct RecordHeader {
    pub(crate) key: Bytes,
    pub(crate) value: Option<Bytes>,
}

impl RecordHeader {
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// The key as text; invalid UTF-8 is replaced, as Java's `new String(bytes, UTF_8)` does.
    pub fn key_str(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.key)
    }

    pub fn value(&self) -> Option<&[u8]> {
        self.value.as_deref()
    }
}

/// One acquired record. Key, value and header values share the response buffer.
#[derive(Debug, Clone)]
pub struct ShareRecord {
    pub topic: Arc<str>,
    pub partition: i32,
    pub offset: i64,
    pub timestamp: i64,
    pub timestamp_type: TimestampType,
    /// 1 on the first delivery.
    pub delivery_count: i16,
    /// Wall-clock time (ms since the epoch) at which the broker's acquisition lock expires,
    /// counted conservatively from when the fetch was sent.
    pub lock_deadline_ms: i64,
    /// The offset of the last record this member receives from the same acquired range (the
    /// broker's unit of acquisition; offsets without a record are not counted). Acknowledging a
    /// whole range in one go lets the broker keep one state for it instead of one per offset.
    pub acquired_last_offset: i64,
    pub(crate) key: Option<Bytes>,
    pub(crate) value: Option<Bytes>,
    pub(crate) headers: Vec<RecordHeader>,
}

impl ShareRecord {
    pub fn key(&self) -> Option<&[u8]> {
        self.key.as_deref()
    }

    pub fn value(&self) -> Option<&[u8]> {
        self.value.as_deref()
    }

    pub fn headers(&self) -> &[RecordHeader] {
        &self.headers
    }

    /// Key + value bytes, the unit of the byte counters.
    pub fn payload_len(&self) -> usize {
        self.key.as_ref().map_or(0, Bytes::len) + self.value.as_ref().map_or(0, Bytes::len)
    }
}

/// Records from one fetch response (one leader; possibly several partitions).
#[derive(Debug, Default, Clone)]
pub struct Batch {
    pub(crate) records: Vec<ShareRecord>,
    /// Set by the delivery buffer when the batch enters it; kept when the batch is split or
    /// given back, so the sweeper's answer to a renewal finds the records it renewed.
    pub(crate) id: u64,
    /// (payload bytes, earliest lock deadline), computed once when the batch is complete: the
    /// buffer and `poll` ask for both, and the polling thread should not walk every record.
    totals: Option<(usize, Option<i64>)>,
}

impl Batch {
    pub fn records(&self) -> &[ShareRecord] {
        &self.records
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    pub fn payload_bytes(&self) -> usize {
        match self.totals {
            Some((bytes, _)) => bytes,
            None => self.records.iter().map(ShareRecord::payload_len).sum(),
        }
    }

    /// The earliest lock deadline of the batch's records (ms since the epoch).
    pub fn lock_deadline_ms(&self) -> Option<i64> {
        match self.totals {
            Some((_, deadline)) => deadline,
            None => self.records.iter().map(|r| r.lock_deadline_ms).min(),
        }
    }

    /// Records are complete: computes the totals once, on the fetcher's thread.
    pub(crate) fn seal(&mut self) {
        self.totals = None;
        self.totals = Some((self.payload_bytes(), self.lock_deadline_ms()));
    }

    /// Splits the batch at `at`: `self` keeps the first `at` records, the rest is returned with
    /// the same id.
    pub fn split_off(&mut self, at: usize) -> Batch {
        let mut rest = Batch {
            records: self.records.split_off(at),
            id: self.id,
            totals: None,
        };
        self.seal();
        rest.seal();
        rest
    }

    /// Moves the lock deadline of the records inside `range` on to `deadline_ms` (never back);
    /// returns how many records the range holds.
    pub(crate) fn extend_lock(&mut self, range: &Ack, deadline_ms: i64) -> usize {
        let mut n = 0;
        for r in self.records.iter_mut().filter(|r| in_range(r, range)) {
            r.lock_deadline_ms = r.lock_deadline_ms.max(deadline_ms);
            n += 1;
        }
        self.seal();
        n
    }

    /// Removes the records inside `range`; returns how many.
    pub(crate) fn remove_range(&mut self, range: &Ack) -> usize {
        let before = self.records.len();
        self.records.retain(|r| !in_range(r, range));
        self.seal();
        before - self.records.len()
    }

    /// Acknowledgements settling every record of the batch one way, as few ranges as
    /// possible (consecutive offsets of one partition become one range).
    pub fn acks(&self, kind: AckKind) -> Vec<Ack> {
        let mut out: Vec<Ack> = Vec::new();
        for r in &self.records {
            match out.last_mut() {
                Some(a)
                    if a.partition == r.partition
                        && a.last_offset + 1 == r.offset
                        && Arc::ptr_eq(&a.topic, &r.topic) =>
                {
                    a.last_offset = r.offset;
                }
                _ => out.push(Ack::new(
                    r.topic.clone(),
                    r.partition,
                    r.offset,
                    r.offset,
                    kind,
                )),
            }
        }
        out
    }
}

fn in_range(r: &ShareRecord, range: &Ack) -> bool {
    r.partition == range.partition
        && (range.first_offset..=range.last_offset).contains(&r.offset)
        && *r.topic == *range.topic
}

impl IntoIterator for Batch {
    type Item = ShareRecord;
    type IntoIter = std::vec::IntoIter<ShareRecord>;
    fn into_iter(self) -> Self::IntoIter {
        self.records.into_iter()
    }
}
