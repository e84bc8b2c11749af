//! The batch layout: how `poll` writes a batch of records into the caller's direct buffer so that
//! Java (`io.sharesink.engine.BatchLayout` / `NativeShareBatch`) reads it without JNI calls.
//! Keep this comment, the constants below and `BatchLayout.java` in step; the tests on both
//! sides (`layoutSelfTest`) check that writer and reader agree.
//!
//! All integers little-endian (x86_64 and aarch64 are; Java sets `ByteOrder.LITTLE_ENDIAN`).
//! Positions are absolute byte offsets from the start of the buffer.
//!
//! ```text
//! header (32 bytes)
//!    0  i32  layout version (2)
//!    4  i32  record count n
//!    8  i32  topic count t
//!   12  i32  bytes used (header + everything below)
//!   16  i32  position of the record table (8-aligned)
//!   20  i32  native log entries waiting to be drained (see logs.rs)
//!   24  i32  records of the fetched batch still pending after this one (split batches)
//!   28  i32  reserved (0)
//! topic table, from 32: t entries of  i32 length, UTF-8 bytes   (no padding)
//! record table: n entries of 64 bytes
//!    0  i64  offset
//!    8  i64  timestamp (ms; -1 none)
//!   16  i64  lock deadline (wall-clock ms since the epoch)
//!   24  i32  topic index into the topic table
//!   28  i32  partition
//!   32  i32  key position        36  i32  key length (-1 = null key)
//!   40  i32  value position      44  i32  value length (-1 = null value)
//!   48  i32  headers position    52  i32  header count
//!   56  i16  delivery count
//!   58  i8   timestamp type (0 CreateTime, 1 LogAppendTime, -1 none)
//!   59  1 byte reserved (0)
//!   60  i32  acquired range end: offset of the last record delivered from the same acquired
//!            range, minus this record's offset (>= 0; capped at i32::MAX)
//! data area: keys, values and header blocks, unaligned, in record order; a header block is
//!   header count × (i32 key length, key UTF-8 bytes, i32 value length (-1 = null), value bytes)
//! ```
//!
//! Batches larger than the buffer are split: `poll` writes as many whole records as fit and
//! puts the rest back at the front of the engine's buffer (which keeps their locks alive), so
//! the next `poll` returns them at once. Only when not even the first
//! record fits does `poll` ask for a bigger buffer (it returns minus the bytes needed).

use sharesink_engine::{ShareRecord, TimestampType};

pub(crate) const LAYOUT_VERSION: i32 = 2;
pub(crate) const HEADER_BYTES: usize = 32;
pub(crate) const RECORD_BYTES: usize = 64;

pub(crate) mod header {
    pub const VERSION: usize = 0;
    pub const RECORD_COUNT: usize = 4;
    pub const TOPIC_COUNT: usize = 8;
    pub const BYTES_USED: usize = 12;
    pub const RECORDS_POSITION: usize = 16;
    pub const PENDING_LOGS: usize = 20;
    pub const PENDING_RECORDS: usize = 24;
}

pub(crate) mod record {
    pub const OFFSET: usize = 0;
    pub const TIMESTAMP: usize = 8;
    pub const LOCK_DEADLINE: usize = 16;
    pub const TOPIC_INDEX: usize = 24;
    pub const PARTITION: usize = 28;
    pub const KEY_POSITION: usize = 32;
    pub const KEY_LENGTH: usize = 36;
    pub const VALUE_POSITION: usize = 40;
    pub const VALUE_LENGTH: usize = 44;
    pub const HEADERS_POSITION: usize = 48;
    pub const HEADER_COUNT: usize = 52;
    pub const DELIVERY_COUNT: usize = 56;
    pub const TIMESTAMP_TYPE: usize = 58;
    pub const ACQUIRED_LAST_DELTA: usize = 60;
}

/// What the writer needs of a record; implemented by the engine's `ShareRecord` and by the
/// fixed records of the layout self-test. `'a` is the life of the record's bytes, which the
/// writer holds on to between its two passes.
pub(crate) trait LayoutRecord<'a> {
    fn topic(&self) -> &'a str;
    fn partition(&self) -> i32;
    fn offset(&self) -> i64;
    fn timestamp(&self) -> i64;
    /// 0 CreateTime, 1 LogAppendTime, -1 none.
    fn timestamp_type(&self) -> i8;
    fn delivery_count(&self) -> i16;
    fn lock_deadline_ms(&self) -> i64;
    fn acquired_last_offset(&self) -> i64;
    fn key(&self) -> Option<&'a [u8]>;
    fn value(&self) -> Option<&'a [u8]>;
    fn header_count(&self) -> usize;
    /// (key, value) in order.
    fn headers(&self) -> impl Iterator<Item = (&'a [u8], Option<&'a [u8]>)>;
}

impl<'a> LayoutRecord<'a> for ShareRecord<'a> {
    fn topic(&self) -> &'a str {
        ShareRecord::topic(self)
    }
    fn partition(&self) -> i32 {
        ShareRecord::partition(self)
    }
    fn offset(&self) -> i64 {
        ShareRecord::offset(self)
    }
    fn timestamp(&self) -> i64 {
        ShareRecord::timestamp(self)
    }
    fn timestamp_type(&self) -> i8 {
        if ShareRecord::timestamp(self) < 0 {
            return -1;
        }
        match ShareRecord::timestamp_type(self) {
            TimestampType::CreateTime => 0,
            TimestampType::LogAppendTime => 1,
        }
    }
    fn delivery_count(&self) -> i16 {
        ShareRecord::delivery_count(self)
    }
    fn lock_deadline_ms(&self) -> i64 {
        ShareRecord::lock_deadline_ms(self)
    }
    fn acquired_last_offset(&self) -> i64 {
        ShareRecord::acquired_last_offset(self)
    }
    fn key(&self) -> Option<&'a [u8]> {
        ShareRecord::key(self)
    }
    fn value(&self) -> Option<&'a [u8]> {
        ShareRecord::value(self)
    }
    fn header_count(&self) -> usize {
        ShareRecord::header_count(self)
    }
    fn headers(&self) -> impl Iterator<Item = (&'a [u8], Option<&'a [u8]>)> {
        ShareRecord::headers(self).map(|h| (h.key(), h.value()))
    }
}

/// What a write did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Written {
    /// The first `records` records are in the buffer, using `bytes` bytes.
    Records { records: usize, bytes: usize },
    /// Not even the first record fits: the buffer needs at least `needed` bytes.
    TooSmall { needed: usize },
}

fn data_bytes<'a, R: LayoutRecord<'a>>(r: &R) -> usize {
    let mut n = r.key().map_or(0, <[u8]>::len) + r.value().map_or(0, <[u8]>::len);
    if r.header_count() > 0 {
        for (k, v) in r.headers() {
            n += 8 + k.len() + v.map_or(0, <[u8]>::len);
        }
    }
    n
}

fn align8(n: usize) -> usize {
    (n + 7) & !7
}

/// Positions must fit Java's `int` indexes.
const MAX_BUFFER: usize = i32::MAX as usize;

/// The topic table of a batch being written. Records of one fetch share their topic's string
/// (the engine hands out one `Arc<str>` per topic), so the last topic is recognised by its
/// address before any comparison of text.
struct Topics<'a> {
    names: Vec<&'a str>,
    last: Option<(&'a str, i32)>,
}

impl<'a> Topics<'a> {
    fn new() -> Self {
        Topics {
            names: Vec::new(),
            last: None,
        }
    }

    /// The index of `topic` in the table, if it is there.
    fn find(&mut self, topic: &'a str) -> Option<i32> {
        if let Some((name, index)) = self.last {
            if std::ptr::eq(name, topic) {
                return Some(index);
            }
        }
        let index = self.names.iter().position(|t| *t == topic)? as i32;
        self.last = Some((topic, index));
        Some(index)
    }

    fn push(&mut self, topic: &'a str) -> i32 {
        let index = self.names.len() as i32;
        self.names.push(topic);
        self.last = Some((topic, index));
        index
    }
}

/// Writes as many whole records of `records` as fit into `out` (see the module comment).
/// An empty `records` writes a header with no records.
pub(crate) fn write_batch<'a, R, I>(
    records: I,
    out: &mut [u8],
    pending_logs: usize,
    pending_after: usize,
) -> Written
where
    R: LayoutRecord<'a>,
    I: IntoIterator<Item = R>,
    I::IntoIter: ExactSizeIterator + Clone,
{
    let records = records.into_iter();
    let total_records = records.len();
    let capacity = out.len().min(MAX_BUFFER);
    // Pass 1: how many records fit, and which topics they need.
    let mut topics = Topics::new();
    let mut topic_bytes = 0usize;
    let mut data = 0usize;
    let mut count = 0usize;
    for r in records.clone() {
        let topic = r.topic();
        let extra_topic = match topics.find(topic) {
            Some(_) => 0,
            None => 4 + topic.len(),
        };
        let record_data = data_bytes(&r);
        let total = align8(HEADER_BYTES + topic_bytes + extra_topic)
            + (count + 1) * RECORD_BYTES
            + data
            + record_data;
        if total > capacity {
            if count == 0 {
                return Written::TooSmall { needed: total };
            }
            break;
        }
        if extra_topic > 0 {
            topics.push(topic);
            topic_bytes += extra_topic;
        }
        data += record_data;
        count += 1;
    }
    let records_position = align8(HEADER_BYTES + topic_bytes);
    let used = records_position + count * RECORD_BYTES + data;
    if used > capacity {
        // Only an empty batch can get here: a buffer smaller than the header.
        return Written::TooSmall { needed: used };
    }
    // Everything below stays inside `used`, checked above: one bounds check here, and the
    // writes below index a slice of exactly that length.
    let out = &mut out[..used];

    // Pass 2: write.
    let mut head = [0u8; HEADER_BYTES];
    put_i32(&mut head, header::VERSION, LAYOUT_VERSION);
    put_i32(&mut head, header::RECORD_COUNT, count as i32);
    put_i32(&mut head, header::TOPIC_COUNT, topics.names.len() as i32);
    put_i32(&mut head, header::BYTES_USED, used as i32);
    put_i32(&mut head, header::RECORDS_POSITION, records_position as i32);
    put_i32(
        &mut head,
        header::PENDING_LOGS,
        pending_logs.min(i32::MAX as usize) as i32,
    );
    put_i32(
        &mut head,
        header::PENDING_RECORDS,
        (pending_after + total_records - count).min(i32::MAX as usize) as i32,
    );
    out[..HEADER_BYTES].copy_from_slice(&head);
    let mut pos = HEADER_BYTES;
    for t in &topics.names {
        pos = put_sized(out, pos, Some(t.as_bytes()));
    }
    out[pos..records_position].fill(0);
    let (table, data_area) = out[records_position..].split_at_mut(count * RECORD_BYTES);
    let data_start = records_position + count * RECORD_BYTES;
    let mut data_pos = 0usize;
    for (r, entry) in records
        .take(count)
        .zip(table.chunks_exact_mut(RECORD_BYTES))
    {
        // The entry is put together on the stack (constant offsets, no bounds checks) and
        // copied once; its reserved bytes stay 0.
        let mut e = [0u8; RECORD_BYTES];
        put_i64(&mut e, record::OFFSET, r.offset());
        put_i64(&mut e, record::TIMESTAMP, r.timestamp());
        put_i64(&mut e, record::LOCK_DEADLINE, r.lock_deadline_ms());
        let topic_index = topics.find(r.topic()).expect("every topic is in the table");
        put_i32(&mut e, record::TOPIC_INDEX, topic_index);
        put_i32(&mut e, record::PARTITION, r.partition());
        for (position_field, length_field, bytes) in [
            (record::KEY_POSITION, record::KEY_LENGTH, r.key()),
            (record::VALUE_POSITION, record::VALUE_LENGTH, r.value()),
        ] {
            put_i32(&mut e, position_field, (data_start + data_pos) as i32);
            match bytes {
                None => put_i32(&mut e, length_field, -1),
                Some(b) => {
                    put_i32(&mut e, length_field, b.len() as i32);
                    data_area[data_pos..data_pos + b.len()].copy_from_slice(b);
                    data_pos += b.len();
                }
            }
        }
        let header_count = r.header_count();
        put_i32(
            &mut e,
            record::HEADERS_POSITION,
            (data_start + data_pos) as i32,
        );
        put_i32(&mut e, record::HEADER_COUNT, header_count as i32);
        if header_count > 0 {
            for (key, value) in r.headers() {
                data_pos = put_sized(data_area, data_pos, Some(key));
                data_pos = put_sized(data_area, data_pos, value);
            }
        }
        e[record::DELIVERY_COUNT..record::DELIVERY_COUNT + 2]
            .copy_from_slice(&r.delivery_count().to_le_bytes());
        e[record::TIMESTAMP_TYPE] = r.timestamp_type() as u8;
        let range_delta = (r.acquired_last_offset() - r.offset()).clamp(0, i32::MAX as i64);
        put_i32(&mut e, record::ACQUIRED_LAST_DELTA, range_delta as i32);
        entry.copy_from_slice(&e);
    }
    debug_assert_eq!(data_start + data_pos, used);
    Written::Records {
        records: count,
        bytes: used,
    }
}

fn put_i32(out: &mut [u8], at: usize, v: i32) {
    out[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn put_i64(out: &mut [u8], at: usize, v: i64) {
    out[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// `i32 length (-1 = null), bytes` at `at`; returns the position after it.
fn put_sized(out: &mut [u8], at: usize, bytes: Option<&[u8]>) -> usize {
    match bytes {
        None => {
            put_i32(out, at, -1);
            at + 4
        }
        Some(b) => {
            put_i32(out, at, b.len() as i32);
            out[at + 4..at + 4 + b.len()].copy_from_slice(b);
            at + 4 + b.len()
        }
    }
}

/// A plain record for tests and the layout self-test.
#[derive(Debug, Clone)]
pub(crate) struct FixedRecord {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub timestamp: i64,
    pub timestamp_type: i8,
    pub delivery_count: i16,
    pub lock_deadline_ms: i64,
    pub acquired_last_offset: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

impl<'a> LayoutRecord<'a> for &'a FixedRecord {
    fn topic(&self) -> &'a str {
        &self.topic
    }
    fn partition(&self) -> i32 {
        self.partition
    }
    fn offset(&self) -> i64 {
        self.offset
    }
    fn timestamp(&self) -> i64 {
        self.timestamp
    }
    fn timestamp_type(&self) -> i8 {
        self.timestamp_type
    }
    fn delivery_count(&self) -> i16 {
        self.delivery_count
    }
    fn lock_deadline_ms(&self) -> i64 {
        self.lock_deadline_ms
    }
    fn acquired_last_offset(&self) -> i64 {
        self.acquired_last_offset
    }
    fn key(&self) -> Option<&'a [u8]> {
        self.key.as_deref()
    }
    fn value(&self) -> Option<&'a [u8]> {
        self.value.as_deref()
    }
    fn header_count(&self) -> usize {
        self.headers.len()
    }
    fn headers(&self) -> impl Iterator<Item = (&'a [u8], Option<&'a [u8]>)> {
        let record: &'a FixedRecord = self;
        record.headers.iter().map(|(k, v)| (&k[..], v.as_deref()))
    }
}

/// The known batch `layoutSelfTest` writes; `NativeShareBatchTest` expects exactly this.
/// Record i (0..5): topic "alpha" for even i, "beta-é" for odd (non-ASCII on purpose),
/// partition i, offset 1000 + i, timestamp 1_700_000_000_000 + i (record 3: -1, type -1),
/// type i % 2 otherwise, delivery count i + 1, lock deadline 2_000_000_000_000 + i,
/// acquired range end 1001 for records 0-1 and 1004 for records 2-4,
/// key "k<i>" (record 1: null), value of i × 100 bytes each (byte)(i + j) (record 2: null),
/// headers: record 4 has ("h1", "v1"), ("h1", null), ("", ""); others none.
pub(crate) fn self_test_records() -> Vec<FixedRecord> {
    (0..5i64)
        .map(|i| FixedRecord {
            topic: if i % 2 == 0 { "alpha" } else { "beta-é" }.to_string(),
            partition: i as i32,
            offset: 1000 + i,
            timestamp: if i == 3 { -1 } else { 1_700_000_000_000 + i },
            timestamp_type: if i == 3 { -1 } else { (i % 2) as i8 },
            delivery_count: (i + 1) as i16,
            lock_deadline_ms: 2_000_000_000_000 + i,
            acquired_last_offset: if i < 2 { 1001 } else { 1004 },
            key: (i != 1).then(|| format!("k{i}").into_bytes()),
            value: (i != 2).then(|| (0..i * 100).map(|j| (i + j) as u8).collect()),
            headers: if i == 4 {
                vec![
                    (b"h1".to_vec(), Some(b"v1".to_vec())),
                    (b"h1".to_vec(), None),
                    (Vec::new(), Some(Vec::new())),
                ]
            } else {
                Vec::new()
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn i32_at(b: &[u8], at: usize) -> i32 {
        i32::from_le_bytes(b[at..at + 4].try_into().unwrap())
    }
    fn i64_at(b: &[u8], at: usize) -> i64 {
        i64::from_le_bytes(b[at..at + 8].try_into().unwrap())
    }
    fn sized_at(b: &[u8], at: usize) -> (Option<&[u8]>, usize) {
        let len = i32_at(b, at);
        if len < 0 {
            (None, at + 4)
        } else {
            let end = at + 4 + len as usize;
            (Some(&b[at + 4..end]), end)
        }
    }

    /// Reads a buffer back the way the Java reader does, as FixedRecords.
    fn read(b: &[u8]) -> Vec<FixedRecord> {
        assert_eq!(i32_at(b, header::VERSION), LAYOUT_VERSION);
        let n = i32_at(b, header::RECORD_COUNT) as usize;
        let t = i32_at(b, header::TOPIC_COUNT) as usize;
        let mut topics = Vec::new();
        let mut pos = HEADER_BYTES;
        for _ in 0..t {
            let (name, next) = sized_at(b, pos);
            topics.push(String::from_utf8(name.unwrap().to_vec()).unwrap());
            pos = next;
        }
        let table = i32_at(b, header::RECORDS_POSITION) as usize;
        assert_eq!(table % 8, 0);
        assert!(table >= pos);
        (0..n)
            .map(|i| {
                let at = table + i * RECORD_BYTES;
                let blob = |p: usize, l: usize| {
                    let len = i32_at(b, at + l);
                    let start = i32_at(b, at + p) as usize;
                    (len >= 0).then(|| b[start..start + len as usize].to_vec())
                };
                let mut hp = i32_at(b, at + record::HEADERS_POSITION) as usize;
                let mut headers = Vec::new();
                for _ in 0..i32_at(b, at + record::HEADER_COUNT) {
                    let (k, next) = sized_at(b, hp);
                    let (v, next) = sized_at(b, next);
                    headers.push((k.unwrap().to_vec(), v.map(<[u8]>::to_vec)));
                    hp = next;
                }
                FixedRecord {
                    topic: topics[i32_at(b, at + record::TOPIC_INDEX) as usize].clone(),
                    partition: i32_at(b, at + record::PARTITION),
                    offset: i64_at(b, at + record::OFFSET),
                    timestamp: i64_at(b, at + record::TIMESTAMP),
                    timestamp_type: b[at + record::TIMESTAMP_TYPE] as i8,
                    delivery_count: i16::from_le_bytes(
                        b[at + record::DELIVERY_COUNT..at + record::DELIVERY_COUNT + 2]
                            .try_into()
                            .unwrap(),
                    ),
                    lock_deadline_ms: i64_at(b, at + record::LOCK_DEADLINE),
                    acquired_last_offset: i64_at(b, at + record::OFFSET)
                        + i64::from(i32_at(b, at + record::ACQUIRED_LAST_DELTA)),
                    key: blob(record::KEY_POSITION, record::KEY_LENGTH),
                    value: blob(record::VALUE_POSITION, record::VALUE_LENGTH),
                    headers,
                }
            })
            .collect()
    }

    fn same(a: &[FixedRecord], b: &[FixedRecord]) {
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }

    #[test]
    fn round_trips_every_field() {
        let records = self_test_records();
        let mut buf = vec![0xAAu8; 4096];
        let written = write_batch(&records, &mut buf, 3, 0);
        let Written::Records { records: n, bytes } = written else {
            panic!("{written:?}")
        };
        assert_eq!(n, 5);
        assert_eq!(i32_at(&buf, header::BYTES_USED) as usize, bytes);
        assert_eq!(i32_at(&buf, header::TOPIC_COUNT), 2);
        assert_eq!(i32_at(&buf, header::PENDING_LOGS), 3);
        assert_eq!(i32_at(&buf, header::PENDING_RECORDS), 0);
        same(&read(&buf), &records);
    }

    #[test]
    fn splits_when_the_buffer_is_full_and_asks_for_more_when_one_record_does_not_fit() {
        let records = self_test_records();
        let mut full = vec![0u8; 4096];
        let Written::Records { bytes: all, .. } = write_batch(&records, &mut full, 0, 0) else {
            panic!()
        };
        // Everything but the last record's data fits: four records, one left.
        let mut small = vec![0u8; all - 1];
        assert_eq!(
            write_batch(&records, &mut small, 0, 0),
            Written::Records {
                records: 4,
                bytes: i32_at(&small, header::BYTES_USED) as usize
            }
        );
        assert_eq!(i32_at(&small, header::PENDING_RECORDS), 1);
        same(&read(&small), &records[..4]);
        let rest = &records[4..];
        let mut tiny = vec![0u8; 40];
        let Written::TooSmall { needed } = write_batch(rest, &mut tiny, 0, 0) else {
            panic!()
        };
        let mut exact = vec![0u8; needed];
        assert_eq!(
            write_batch(rest, &mut exact, 0, 0),
            Written::Records {
                records: 1,
                bytes: needed
            }
        );
        same(&read(&exact), rest);
    }

    /// Not a test: `cargo test --release -p sharesink-jni write_batch_speed -- --ignored
    /// --nocapture` prints the cost per record of writing a bench-like batch (100-byte values,
    /// no key, one topic of shared text, 6 partitions).
    #[test]
    #[ignore]
    fn write_batch_speed() {
        struct BenchRecord {
            topic: std::sync::Arc<str>,
            partition: i32,
            offset: i64,
            value: Vec<u8>,
        }
        impl<'a> LayoutRecord<'a> for &'a BenchRecord {
            fn topic(&self) -> &'a str {
                &self.topic
            }
            fn partition(&self) -> i32 {
                self.partition
            }
            fn offset(&self) -> i64 {
                self.offset
            }
            fn timestamp(&self) -> i64 {
                1_700_000_000_000 + self.offset
            }
            fn timestamp_type(&self) -> i8 {
                0
            }
            fn delivery_count(&self) -> i16 {
                1
            }
            fn lock_deadline_ms(&self) -> i64 {
                2_000_000_000_000
            }
            fn acquired_last_offset(&self) -> i64 {
                self.offset | 511
            }
            fn key(&self) -> Option<&'a [u8]> {
                None
            }
            fn value(&self) -> Option<&'a [u8]> {
                Some(&self.value)
            }
            fn header_count(&self) -> usize {
                0
            }
            fn headers(&self) -> impl Iterator<Item = (&'a [u8], Option<&'a [u8]>)> {
                std::iter::empty()
            }
        }
        let topic: std::sync::Arc<str> = "bench_100b_5000000".into();
        let records: Vec<BenchRecord> = (0..2300i64)
            .map(|i| BenchRecord {
                topic: topic.clone(),
                partition: (i / 400) as i32,
                offset: i,
                value: vec![b'x'; 100],
            })
            .collect();
        let mut buf = vec![0u8; 1 << 20];
        let rounds = 2000;
        let started = std::time::Instant::now();
        for _ in 0..rounds {
            let written = write_batch(std::hint::black_box(&records), &mut buf, 0, 0);
            std::hint::black_box(&written);
        }
        let ns = started.elapsed().as_nanos() as f64 / (rounds * records.len()) as f64;
        println!("write_batch: {ns:.1} ns per record");
    }

    #[test]
    fn an_empty_batch_is_a_bare_header() {
        let mut buf = vec![0u8; HEADER_BYTES];
        assert_eq!(
            write_batch(&[] as &[FixedRecord], &mut buf, 0, 0),
            Written::Records {
                records: 0,
                bytes: HEADER_BYTES
            }
        );
        assert!(read(&buf).is_empty());
        let mut too_small = vec![0u8; 8];
        assert_eq!(
            write_batch(&[] as &[FixedRecord], &mut too_small, 0, 0),
            Written::TooSmall {
                needed: HEADER_BYTES
            }
        );
    }
}
