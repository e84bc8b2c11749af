//! Turns one partition of a ShareFetch response into deliverable records, keeping only offsets
//! inside the acquired ranges, and works out which acquired offsets have no data record (to be
//! acknowledged as Gap) and which could not be read (to be released).

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::share_fetch_response::AcquiredRecords;

use crate::batch::ShareRecord;
use crate::error::EngineError;
use crate::record_batch::{complete_batch_len, decode_records, BatchHeader};

/// What [`extract`] finds in one partition (the tests' view of [`extract_into`]).
#[cfg(test)]
#[derive(Debug, Default)]
pub struct PartitionRecords {
    pub records: Vec<ShareRecord>,
    /// Acquired offsets known to hold no data record (control batches, compaction holes).
    pub gaps: Vec<(i64, i64)>,
    /// Acquired offsets past the readable data (truncated response): release, never Gap.
    pub unread: Vec<(i64, i64)>,
}

/// The smallest record a v2 batch can hold (attributes, timestamp and offset deltas, key and
/// value lengths, header count and the length itself: one byte each).
const MIN_RECORD_BYTES: usize = 7;

/// An upper bound on the records one partition of a response can deliver: no more than it
/// acquired, and no more than its bytes can hold (so a bogus range cannot reserve much).
pub fn deliverable_bound(records: Option<&Bytes>, acquired: &[AcquiredRecords]) -> usize {
    let acquired: u64 = acquired
        .iter()
        .map(|a| (a.last_offset.saturating_sub(a.first_offset).max(-1) + 1) as u64)
        .fold(0, u64::saturating_add);
    let by_bytes = records.map_or(0, |b| b.len() / MIN_RECORD_BYTES);
    (acquired.min(by_bytes as u64)) as usize
}

/// `acquired` may come in any order; ranges are inclusive.
#[cfg(test)]
pub fn extract(
    topic: &Arc<str>,
    partition: i32,
    records: Option<Bytes>,
    acquired: &[AcquiredRecords],
    lock_deadline_ms: i64,
) -> Result<PartitionRecords, EngineError> {
    let mut out = PartitionRecords::default();
    let (gaps, unread) = extract_into(
        topic,
        partition,
        records,
        acquired,
        lock_deadline_ms,
        &mut out.records,
    )?;
    out.gaps = gaps;
    out.unread = unread;
    Ok(out)
}

/// Acquired offsets without a data record (Gap) and those past the readable data (release).
pub type Unreadable = (Vec<(i64, i64)>, Vec<(i64, i64)>);

/// [`extract`] appending the records to `into` (the fetch response's batch, reserved once for
/// all partitions, so records are not copied from one vector to the next). On error `into` is
/// left as it was.
pub fn extract_into(
    topic: &Arc<str>,
    partition: i32,
    records: Option<Bytes>,
    acquired: &[AcquiredRecords],
    lock_deadline_ms: i64,
    into: &mut Vec<ShareRecord>,
) -> Result<Unreadable, EngineError> {
    let before = into.len();
    let result = extract_records(topic, partition, records, acquired, lock_deadline_ms, into);
    if result.is_err() {
        into.truncate(before);
    }
    result
}

fn extract_records(
    topic: &Arc<str>,
    partition: i32,
    records: Option<Bytes>,
    acquired: &[AcquiredRecords],
    lock_deadline_ms: i64,
    into: &mut Vec<ShareRecord>,
) -> Result<Unreadable, EngineError> {
    let mut gaps: Vec<(i64, i64)> = Vec::new();
    let mut unread: Vec<(i64, i64)> = Vec::new();
    if acquired.is_empty() {
        return Ok((gaps, unread));
    }
    // A broker never sends these; refusing them keeps the offset arithmetic below in range.
    if let Some(bad) = acquired
        .iter()
        .find(|a| a.first_offset < 0 || a.first_offset > a.last_offset || a.last_offset == i64::MAX)
    {
        return Err(EngineError::protocol(format!(
            "acquired range [{}, {}] is not valid",
            bad.first_offset, bad.last_offset
        )));
    }
    let mut ranges: Vec<(i64, i64, i16)> = acquired
        .iter()
        .map(|a| (a.first_offset, a.last_offset, a.delivery_count))
        .collect();
    ranges.sort_unstable_by_key(|r| r.0);
    let mut next_expected: Vec<i64> = ranges.iter().map(|r| r.0).collect();
    let mut readable_end = i64::MIN;
    let mut cursor = 0usize;
    let mut data = records.unwrap_or_default();
    let first_new = into.len();

    // A partial trailing batch (possible when the broker cut at MaxBytes) ends the loop:
    // its acquired offsets count as unread, not as gaps.
    while let Some(len) = complete_batch_len(&data) {
        let batch = data.split_to(len);
        let header = BatchHeader::parse(&batch)?;
        readable_end = readable_end.max(header.last_offset);
        let overlaps = ranges
            .iter()
            .any(|r| r.0 <= header.last_offset && header.base_offset <= r.1);
        if header.is_control() || !overlaps {
            continue; // not deliverable; acquired offsets in it become gaps below
        }
        decode_records(batch, &header, |record| {
            let offset = record.offset;
            while cursor < ranges.len() && ranges[cursor].1 < offset {
                cursor += 1;
            }
            if cursor == ranges.len() || offset < ranges[cursor].0 {
                return; // read but not acquired by us
            }
            if offset > next_expected[cursor] {
                gaps.push((next_expected[cursor], offset - 1));
            }
            next_expected[cursor] = offset + 1;
            into.push(ShareRecord {
                topic: topic.clone(),
                partition,
                offset,
                timestamp: record.timestamp,
                timestamp_type: record.timestamp_type,
                delivery_count: ranges[cursor].2,
                lock_deadline_ms,
                acquired_last_offset: offset, // set below, once the range's last record is known
                key: record.key,
                value: record.value,
                headers: record.headers,
            });
        })?;
    }

    // next_expected is now one past the last record delivered from each range.
    let mut range = 0usize;
    for record in &mut into[first_new..] {
        while ranges[range].1 < record.offset {
            range += 1;
        }
        record.acquired_last_offset = next_expected[range] - 1;
    }

    for (i, &(_, last, _)) in ranges.iter().enumerate() {
        let from = next_expected[i];
        if from > last {
            continue;
        }
        let gap_end = last.min(readable_end);
        if from <= gap_end {
            gaps.push((from, gap_end));
        }
        let unread_from = from.max(gap_end.saturating_add(1));
        if unread_from <= last {
            unread.push((unread_from, last));
        }
    }
    gaps.sort_unstable();
    Ok((gaps, unread))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use kafka_protocol::indexmap::IndexMap;
    use kafka_protocol::protocol::StrBytes;
    use kafka_protocol::records::{
        self as kr, Compression, Record, RecordBatchEncoder, RecordEncodeOptions,
    };

    fn record(offset: i64, control: bool) -> Record {
        let mut headers = IndexMap::new();
        headers.insert(
            StrBytes::from_static_str("h"),
            Some(Bytes::from_static(b"hv")),
        );
        Record {
            transactional: control,
            control,
            partition_leader_epoch: 0,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: kr::TimestampType::Creation,
            offset,
            sequence: offset as i32, // offset - sequence constant keeps records in one batch
            timestamp: 1000 + offset,
            key: Some(Bytes::from(format!("k{offset}"))),
            value: Some(Bytes::from(format!("v{offset}"))),
            headers,
            delete_horizon: false,
        }
    }

    fn encode(batches: &[(Vec<Record>, Compression)]) -> Bytes {
        let mut buf = BytesMut::new();
        for (records, compression) in batches {
            let opts = RecordEncodeOptions {
                version: 2,
                compression: *compression,
            };
            RecordBatchEncoder::encode(&mut buf, records, &opts).unwrap();
        }
        buf.freeze()
    }

    fn acquired(first: i64, last: i64, dc: i16) -> AcquiredRecords {
        AcquiredRecords::default()
            .with_first_offset(first)
            .with_last_offset(last)
            .with_delivery_count(dc)
    }

    fn topic() -> Arc<str> {
        Arc::from("t")
    }

    #[test]
    fn keeps_only_acquired_offsets() {
        let data = encode(&[
            (
                (0..5).map(|o| record(o, false)).collect(),
                Compression::None,
            ),
            (
                (5..10).map(|o| record(o, false)).collect(),
                Compression::Gzip,
            ),
        ]);
        let out = extract(
            &topic(),
            0,
            Some(data),
            &[acquired(7, 8, 2), acquired(2, 3, 1)],
            99,
        )
        .unwrap();
        let offsets: Vec<i64> = out.records.iter().map(|r| r.offset).collect();
        assert_eq!(offsets, vec![2, 3, 7, 8]);
        assert_eq!(out.records[0].delivery_count, 1);
        assert_eq!(out.records[2].delivery_count, 2);
        assert_eq!(out.records[2].value(), Some(&b"v7"[..]));
        assert_eq!(out.records[2].key(), Some(&b"k7"[..]));
        assert_eq!(out.records[2].headers()[0].key(), b"h");
        assert_eq!(out.records[2].headers()[0].value(), Some(&b"hv"[..]));
        assert_eq!(out.records[0].timestamp, 1002);
        assert_eq!(out.records[0].lock_deadline_ms, 99);
        let range_ends: Vec<i64> = out.records.iter().map(|r| r.acquired_last_offset).collect();
        assert_eq!(range_ends, vec![3, 3, 8, 8]);
        assert!(out.gaps.is_empty() && out.unread.is_empty());
    }

    #[test]
    fn control_batches_and_holes_become_gaps() {
        let data = encode(&[
            (vec![record(0, false), record(1, false)], Compression::None),
            (vec![record(2, true)], Compression::None),
            (
                vec![record(3, false), record(5, false)],
                Compression::Snappy,
            ),
        ]);
        let out = extract(&topic(), 1, Some(data), &[acquired(0, 5, 1)], 0).unwrap();
        let offsets: Vec<i64> = out.records.iter().map(|r| r.offset).collect();
        assert_eq!(offsets, vec![0, 1, 3, 5]);
        assert_eq!(out.gaps, vec![(2, 2), (4, 4)]);
        assert!(out.unread.is_empty());
        assert!(out.records.iter().all(|r| r.acquired_last_offset == 5));
    }

    #[test]
    fn a_range_ends_at_its_last_record_not_at_a_trailing_gap() {
        let data = encode(&[
            (
                (0..3).map(|o| record(o, false)).collect(),
                Compression::None,
            ),
            (vec![record(3, true)], Compression::None),
        ]);
        let out = extract(&topic(), 0, Some(data), &[acquired(0, 3, 1)], 0).unwrap();
        assert_eq!(out.gaps, vec![(3, 3)]);
        assert!(out.records.iter().all(|r| r.acquired_last_offset == 2));
    }

    #[test]
    fn truncated_tail_is_unread_not_gap() {
        let full = encode(&[
            ((0..3).map(|o| record(o, false)).collect(), Compression::Lz4),
            (
                (3..6).map(|o| record(o, false)).collect(),
                Compression::Zstd,
            ),
        ]);
        let first_len = complete_batch_len(&full).unwrap();
        let truncated = full.slice(..first_len + 20);
        let out = extract(&topic(), 0, Some(truncated), &[acquired(0, 5, 1)], 0).unwrap();
        assert_eq!(out.records.len(), 3);
        assert!(out.records.iter().all(|r| r.acquired_last_offset == 2));
        assert!(out.gaps.is_empty());
        assert_eq!(out.unread, vec![(3, 5)]);
    }

    #[test]
    fn no_records_at_all() {
        let out = extract(&topic(), 0, None, &[acquired(10, 12, 1)], 0).unwrap();
        assert!(out.records.is_empty() && out.gaps.is_empty());
        assert_eq!(out.unread, vec![(10, 12)]);
    }

    #[test]
    fn deliverable_bound_takes_the_smaller_of_ranges_and_bytes() {
        let data = encode(&[(
            (0..10).map(|o| record(o, false)).collect(),
            Compression::None,
        )]);
        // 10 acquired offsets over two ranges; the bytes could hold more.
        let ranges = [acquired(0, 3, 1), acquired(4, 9, 1)];
        assert_eq!(deliverable_bound(Some(&data), &ranges), 10);
        // A range claiming far more than the bytes can hold is capped by the bytes.
        let huge = [acquired(0, i64::MAX - 1, 1), acquired(0, i64::MAX - 1, 1)];
        assert_eq!(
            deliverable_bound(Some(&data), &huge),
            data.len() / MIN_RECORD_BYTES
        );
        assert_eq!(deliverable_bound(None, &ranges), 0);
    }
}
