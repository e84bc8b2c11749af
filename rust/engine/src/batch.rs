//! What `poll` hands out: records acquired by this member, zero-copy over the fetch response.

use std::sync::Arc;

use crate::acks::{Ack, AckKind};
use crate::memory::{MemberMemory, MemoryCharge};
use bytes::Bytes;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum TimestampType {
    CreateTime = 0,
    LogAppendTime = 1,
}

/// Where a key, value or header lies in its record's buffer (see [`RecordData`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub start: u32,
    pub len: u32,
}

impl Span {
    pub fn of(self, buffer: &[u8]) -> &[u8] {
        let start = self.start as usize;
        &buffer[start..start + self.len as usize]
    }
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct StoredHeader {
    pub key: Span,
    pub value: Option<Span>,
}

/// One acquired record as a batch keeps it: its numbers, and indexes into the batch's
/// [`RecordData`]. Nothing here is reference-counted: cloning or dropping a record touches no
/// counter shared with another thread (one `Bytes` and one `Arc<str>` per record cost the JNI
/// path a tenth of its CPU in atomic increments and decrements).
#[derive(Debug, Clone)]
pub(crate) struct StoredRecord {
    pub offset: i64,
    pub timestamp: i64,
    /// Wall-clock time (ms since the epoch) at which the broker's acquisition lock expires,
    /// counted conservatively from when the fetch was sent.
    pub lock_deadline_ms: i64,
    /// See [`ShareRecord::acquired_last_offset`].
    pub acquired_last_offset: i64,
    pub partition: i32,
    /// Index into [`RecordData::topics`].
    pub topic: u32,
    /// Index into [`RecordData::buffers`]; key, value and headers lie in that buffer.
    pub buffer: u32,
    pub delivery_count: i16,
    pub timestamp_type: TimestampType,
    pub key: Option<Span>,
    pub value: Option<Span>,
    /// `first..first + count` in [`RecordData::headers`].
    pub headers: (u32, u32),
}

/// What the records of a batch point into: the response's record buffers (or the decompressed
/// ones), their topics and their headers. Shared, never changed, once the batch is complete:
/// a split batch's halves hold the same data. `memory` is what all of it (and the records of
/// the batch) was charged to its member: given back when the last half is dropped.
#[derive(Debug, Default)]
pub(crate) struct RecordData {
    pub buffers: Vec<Bytes>,
    pub topics: Vec<Arc<str>>,
    pub headers: Vec<StoredHeader>,
    pub memory: MemoryCharge,
}

impl RecordData {
    /// The index of `topic`, added when missing. Records of one fetch share their topic's
    /// `Arc`, so the last one is recognised by its address.
    pub fn topic_index(&mut self, topic: &Arc<str>) -> u32 {
        if let Some(i) = self
            .topics
            .iter()
            .rposition(|t| Arc::ptr_eq(t, topic) || **t == **topic)
        {
            return i as u32;
        }
        self.topics.push(topic.clone());
        (self.topics.len() - 1) as u32
    }
}

/// A record header: its key as bytes (Java reads it as UTF-8); duplicate keys are kept in order.
#[derive(Debug, Clone, Copy)]
pub struct RecordHeader<'a> {
    key: &'a [u8],
    value: Option<&'a [u8]>,
}

impl<'a> RecordHeader<'a> {
    pub fn key(&self) -> &'a [u8] {
        self.key
    }

    /// The key as text; invalid UTF-8 is replaced, as Java's `new String(bytes, UTF_8)` does.
    pub fn key_str(&self) -> std::borrow::Cow<'a, str> {
        String::from_utf8_lossy(self.key)
    }

    pub fn value(&self) -> Option<&'a [u8]> {
        self.value
    }
}

/// One acquired record, read in place: key, value and headers are slices of the fetch
/// response (or of its decompressed batch), held by the [`Batch`] the record is read from.
#[derive(Clone, Copy)]
pub struct ShareRecord<'a> {
    stored: &'a StoredRecord,
    data: &'a RecordData,
}

impl<'a> ShareRecord<'a> {
    pub fn topic(&self) -> &'a str {
        &self.data.topics[self.stored.topic as usize]
    }

    /// The topic as the engine holds it, for building an [`Ack`] without copying the name.
    pub fn topic_arc(&self) -> &'a Arc<str> {
        &self.data.topics[self.stored.topic as usize]
    }

    pub fn partition(&self) -> i32 {
        self.stored.partition
    }

    pub fn offset(&self) -> i64 {
        self.stored.offset
    }

    pub fn timestamp(&self) -> i64 {
        self.stored.timestamp
    }

    pub fn timestamp_type(&self) -> TimestampType {
        self.stored.timestamp_type
    }

    /// 1 on the first delivery.
    pub fn delivery_count(&self) -> i16 {
        self.stored.delivery_count
    }

    /// Wall-clock time (ms since the epoch) at which the broker's acquisition lock expires,
    /// counted conservatively from when the fetch was sent.
    pub fn lock_deadline_ms(&self) -> i64 {
        self.stored.lock_deadline_ms
    }

    /// The offset of the last record this member receives from the same acquired range (the
    /// broker's unit of acquisition; offsets without a record are not counted). Acknowledging a
    /// whole range in one go lets the broker keep one state for it instead of one per offset.
    pub fn acquired_last_offset(&self) -> i64 {
        self.stored.acquired_last_offset
    }

    fn buffer(&self) -> &'a [u8] {
        &self.data.buffers[self.stored.buffer as usize]
    }

    pub fn key(&self) -> Option<&'a [u8]> {
        self.stored.key.map(|s| s.of(self.buffer()))
    }

    pub fn value(&self) -> Option<&'a [u8]> {
        self.stored.value.map(|s| s.of(self.buffer()))
    }

    pub fn header_count(&self) -> usize {
        self.stored.headers.1 as usize
    }

    pub fn headers(&self) -> impl ExactSizeIterator<Item = RecordHeader<'a>> + Clone + 'a {
        let (first, count) = self.stored.headers;
        let buffer = self.buffer();
        self.data.headers[first as usize..(first + count) as usize]
            .iter()
            .map(move |h| RecordHeader {
                key: h.key.of(buffer),
                value: h.value.map(|v| v.of(buffer)),
            })
    }

    /// Key + value bytes, the unit of the byte counters.
    pub fn payload_len(&self) -> usize {
        self.stored.payload_len()
    }
}

impl std::fmt::Debug for ShareRecord<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShareRecord")
            .field("topic", &self.topic())
            .field("partition", &self.partition())
            .field("offset", &self.offset())
            .field("delivery_count", &self.delivery_count())
            .field("lock_deadline_ms", &self.lock_deadline_ms())
            .finish_non_exhaustive()
    }
}

impl StoredRecord {
    fn payload_len(&self) -> usize {
        self.key.map_or(0, |s| s.len as usize) + self.value.map_or(0, |s| s.len as usize)
    }

    /// What keeping this record costs: its key, value and headers, and the structs that
    /// describe them (a record of a few bytes takes about a hundred here).
    fn held_len(&self, data: &RecordData) -> usize {
        let (first, count) = (self.headers.0 as usize, self.headers.1 as usize);
        let headers: usize = data
            .headers
            .get(first..first + count)
            .unwrap_or_default()
            .iter()
            .map(|h| {
                std::mem::size_of::<StoredHeader>()
                    + h.key.len as usize
                    + h.value.map_or(0, |v| v.len as usize)
            })
            .sum();
        std::mem::size_of::<StoredRecord>() + self.payload_len() + headers
    }
}

/// What a batch's records amount to, computed once when the batch is complete.
#[derive(Debug, Clone, Copy)]
struct Totals {
    payload_bytes: usize,
    held_bytes: usize,
    lock_deadline_ms: Option<i64>,
}

/// Records from one fetch response (one leader; possibly several partitions).
#[derive(Debug, Default, Clone)]
pub struct Batch {
    pub(crate) records: Vec<StoredRecord>,
    /// Written while the fetcher fills the batch, shared by its halves once split.
    pub(crate) data: Arc<RecordData>,
    /// Set by the delivery buffer when the batch enters it; kept when the batch is split or
    /// given back, so the sweeper's answer to a renewal finds the records it renewed.
    pub(crate) id: u64,
    /// (payload bytes, earliest lock deadline), computed once when the batch is complete: the
    /// buffer and `poll` ask for both, and the polling thread should not walk every record.
    totals: Option<Totals>,
}

impl Batch {
    /// The records, in order, read in place.
    pub fn records(
        &self,
    ) -> impl ExactSizeIterator<Item = ShareRecord<'_>> + DoubleEndedIterator + Clone + '_ {
        let data = &*self.data;
        self.records
            .iter()
            .map(move |stored| ShareRecord { stored, data })
    }

    pub fn record(&self, i: usize) -> Option<ShareRecord<'_>> {
        self.records.get(i).map(|stored| ShareRecord {
            stored,
            data: &self.data,
        })
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// An empty batch whose records, and what they point into, are charged to `memory`.
    pub(crate) fn charged_to(memory: Arc<MemberMemory>) -> Batch {
        Batch {
            data: Arc::new(RecordData {
                memory: MemoryCharge::new(memory),
                ..RecordData::default()
            }),
            ..Batch::default()
        }
    }

    /// An empty batch whose data is paid for by `charge` (the response's bytes, charged while
    /// they were read), to which its records are charged too.
    pub(crate) fn with_charge(charge: MemoryCharge) -> Batch {
        Batch {
            data: Arc::new(RecordData {
                memory: charge,
                ..RecordData::default()
            }),
            ..Batch::default()
        }
    }

    /// The records and their data, to be filled by the fetcher. The data is not shared yet: a
    /// batch is split only once complete.
    pub(crate) fn parts_mut(&mut self) -> (&mut Vec<StoredRecord>, &mut RecordData) {
        let data = Arc::get_mut(&mut self.data).expect("a batch being filled is not shared");
        (&mut self.records, data)
    }

    /// Bytes charged for this batch's records and data (all halves of a split batch together).
    pub fn memory_bytes(&self) -> usize {
        self.data.memory.bytes()
    }

    /// Key and value bytes of the records.
    pub fn payload_bytes(&self) -> usize {
        match self.totals {
            Some(t) => t.payload_bytes,
            None => self.records.iter().map(StoredRecord::payload_len).sum(),
        }
    }

    /// What keeping the records costs: keys, values, headers and the structs that describe
    /// them (what the delivery buffer's byte cap counts).
    pub fn held_bytes(&self) -> usize {
        match self.totals {
            Some(t) => t.held_bytes,
            None => {
                let data = &*self.data;
                self.records.iter().map(|r| r.held_len(data)).sum()
            }
        }
    }

    /// The earliest lock deadline of the batch's records (ms since the epoch).
    pub fn lock_deadline_ms(&self) -> Option<i64> {
        match self.totals {
            Some(t) => t.lock_deadline_ms,
            None => self.records.iter().map(|r| r.lock_deadline_ms).min(),
        }
    }

    /// Records are complete: computes the totals once, on the fetcher's thread.
    pub(crate) fn seal(&mut self) {
        self.totals = None;
        self.totals = Some(Totals {
            payload_bytes: self.payload_bytes(),
            held_bytes: self.held_bytes(),
            lock_deadline_ms: self.lock_deadline_ms(),
        });
    }

    /// Splits the batch at `at`: `self` keeps the first `at` records, the rest is returned with
    /// the same id and the same data.
    pub fn split_off(&mut self, at: usize) -> Batch {
        let mut rest = Batch {
            records: self.records.split_off(at),
            data: self.data.clone(),
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
        let data = &*self.data;
        for r in self.records.iter_mut().filter(|r| in_range(data, r, range)) {
            r.lock_deadline_ms = r.lock_deadline_ms.max(deadline_ms);
            n += 1;
        }
        self.seal();
        n
    }

    /// Removes the records inside `range`; returns how many.
    pub(crate) fn remove_range(&mut self, range: &Ack) -> usize {
        let before = self.records.len();
        let data = &*self.data;
        self.records.retain(|r| !in_range(data, r, range));
        self.seal();
        before - self.records.len()
    }

    /// Acknowledgements settling every record of the batch one way, as few ranges as
    /// possible (consecutive offsets of one partition become one range).
    pub fn acks(&self, kind: AckKind) -> Vec<Ack> {
        let mut out: Vec<Ack> = Vec::new();
        let mut last_topic = u32::MAX;
        for r in &self.records {
            match out.last_mut() {
                Some(a)
                    if a.partition == r.partition
                        && a.last_offset + 1 == r.offset
                        && last_topic == r.topic =>
                {
                    a.last_offset = r.offset;
                }
                _ => {
                    last_topic = r.topic;
                    out.push(Ack::new(
                        self.data.topics[r.topic as usize].clone(),
                        r.partition,
                        r.offset,
                        r.offset,
                        kind,
                    ))
                }
            }
        }
        out
    }

    /// Test batches: records of one topic with the given (offset, value), acquired until
    /// `lock_deadline_ms`; sealed.
    #[cfg(test)]
    pub(crate) fn for_test(
        topic: &str,
        partition: i32,
        records: impl IntoIterator<Item = (i64, &'static [u8])>,
        lock_deadline_ms: i64,
    ) -> Batch {
        let mut batch = Batch::default();
        let (stored, data) = batch.parts_mut();
        let topic = data.topic_index(&Arc::from(topic));
        for (offset, value) in records {
            stored.push(StoredRecord {
                offset,
                timestamp: 0,
                lock_deadline_ms,
                acquired_last_offset: offset,
                partition,
                topic,
                buffer: data.buffers.len() as u32,
                delivery_count: 1,
                timestamp_type: TimestampType::CreateTime,
                key: None,
                value: Some(Span {
                    start: 0,
                    len: value.len() as u32,
                }),
                headers: (0, 0),
            });
            data.buffers.push(Bytes::from_static(value));
        }
        batch.seal();
        batch
    }
}

fn in_range(data: &RecordData, r: &StoredRecord, range: &Ack) -> bool {
    r.partition == range.partition
        && (range.first_offset..=range.last_offset).contains(&r.offset)
        && *data.topics[r.topic as usize] == *range.topic
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::size_of;

    #[test]
    fn held_bytes_count_headers_and_the_structs_not_only_keys_and_values() {
        let mut batch = Batch::for_test("t", 0, [(0, &b"vv"[..])], 1_000);
        let plain = batch.held_bytes();
        assert_eq!(plain, size_of::<StoredRecord>() + 2);
        let (records, data) = batch.parts_mut();
        let header = StoredHeader {
            key: Span {
                start: 0,
                len: 1_000,
            },
            value: Some(Span {
                start: 0,
                len: 1_000,
            }),
        };
        data.headers.extend(std::iter::repeat_n(header, 100));
        records[0].headers = (0, 100);
        batch.seal();
        assert_eq!(batch.payload_bytes(), 2, "headers are not payload");
        assert_eq!(
            batch.held_bytes(),
            plain + 100 * (size_of::<StoredHeader>() + 2_000)
        );
    }
}
