//! Turns one partition of a ShareFetch response into deliverable records, keeping only offsets
//! inside the acquired ranges, and works out which acquired offsets have no data record (to be
//! acknowledged as Gap) and which could not be read (to be released).

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::share_fetch_response::AcquiredRecords;

use crate::batch::{Batch, RecordData, StoredRecord};
use crate::error::EngineError;
use crate::memory::{reserve_one, Shortfall};
use crate::record_batch::{complete_batch_len, decode_records, BatchError, BatchHeader};
use tracing::warn;

/// What [`extract`] finds in one partition (the tests' view of [`extract_into`]).
#[cfg(test)]
#[derive(Debug, Default)]
pub struct PartitionRecords {
    pub batch: Batch,
    /// Acquired offsets known to hold no data record (control batches, compaction holes).
    pub gaps: Vec<(i64, i64)>,
    /// Such offsets beside a record delivered here (see `Unreadable::gaps_beside_records`).
    pub gaps_beside_records: Vec<(i64, i64)>,
    /// Acquired offsets past the readable data (truncated response): release, never Gap.
    pub unread: Vec<(i64, i64)>,
    /// Why batches could not be read (their acquired offsets are in `unread`).
    pub corrupt: Vec<String>,
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

/// Whether a partition's records hold a compressed batch (read from the batch headers only).
pub fn has_compressed_batches(records: &[u8]) -> bool {
    let mut at = 0;
    while let Some(len) = complete_batch_len(&records[at..]) {
        if BatchHeader::parse(&records[at..at + len]).is_ok_and(|h| h.attributes & 0x7 != 0) {
            return true;
        }
        at += len;
    }
    false
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
    let Unreadable {
        gaps,
        gaps_beside_records,
        unread,
        corrupt,
        ..
    } = extract_into(
        topic,
        partition,
        records,
        acquired,
        lock_deadline_ms,
        &mut out.batch,
    )?;
    out.gaps = gaps;
    out.gaps_beside_records = gaps_beside_records;
    out.unread = unread;
    out.corrupt = corrupt;
    Ok(out)
}

/// What of a partition's acquired offsets cannot be delivered.
#[derive(Debug, Default)]
pub struct Unreadable {
    /// Acquired offsets without a data record and no record delivered beside them: acknowledge
    /// as Gap.
    pub gaps: Vec<(i64, i64)>,
    /// Acquired offsets without a data record (a transaction's marker, mostly) right before or
    /// after a record delivered here: acknowledged with that record's settling ack where the
    /// broker takes it (`AckQueue::hold_gap`), so its acquired range stays whole.
    pub gaps_beside_records: Vec<(i64, i64)>,
    /// Acquired offsets past the readable data or in a batch that could not be read: release.
    pub unread: Vec<(i64, i64)>,
    /// Why batches could not be read (logged at WARN too).
    pub corrupt: Vec<String>,
    /// Decoding stopped at the batch at this offset: it would have passed a memory bound.
    /// Its acquired offsets and every later one of the partition are in `unread`.
    pub short: Option<(i64, Shortfall)>,
}

/// [`extract`] appending the records to `into` (the fetch response's batch, reserved once for
/// all partitions, so records are not copied from one vector to the next). On error `into` is
/// left as it was.
pub fn extract_into(
    topic: &Arc<str>,
    partition: i32,
    records: Option<Bytes>,
    acquired: &[AcquiredRecords],
    lock_deadline_ms: i64,
    into: &mut Batch,
) -> Result<Unreadable, EngineError> {
    let (stored, data) = into.parts_mut();
    let before = (stored.len(), data.buffers.len(), data.headers.len());
    let capacity = (stored.capacity(), data.headers.capacity());
    let charged = data.memory.bytes();
    let result = extract_records(
        topic,
        partition,
        records,
        acquired,
        lock_deadline_ms,
        stored,
        data,
    );
    // The partition's buffer (and any decompressed one) stays only when a record lies in it;
    // what it was charged goes with it.
    if result.is_err() || stored.len() == before.0 {
        stored.truncate(before.0);
        stored.shrink_to(capacity.0);
        data.buffers.truncate(before.1);
        data.headers.truncate(before.2);
        data.headers.shrink_to(capacity.1);
        data.memory.give_back_to(charged);
    }
    result
}

fn extract_records(
    topic: &Arc<str>,
    partition: i32,
    records: Option<Bytes>,
    acquired: &[AcquiredRecords],
    lock_deadline_ms: i64,
    into: &mut Vec<StoredRecord>,
    data: &mut RecordData,
) -> Result<Unreadable, EngineError> {
    let mut gaps: Vec<(i64, i64)> = Vec::new();
    let mut unread: Vec<(i64, i64)> = Vec::new();
    if acquired.is_empty() {
        return Ok(Unreadable::default());
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
    let topic_index = data.topic_index(topic);
    // The partition's records stay in the response's buffer; uncompressed records point into it.
    let buffer = data.buffers.len() as u32;
    data.buffers.push(records.unwrap_or_default());
    let mut position = 0usize;
    let first_new = into.len();

    // Acquired offsets released because their batch could not be read: a record's acquired
    // range (see `acquired_last_offset`) never spans one.
    let mut splits: Vec<i64> = Vec::new();
    let mut corrupt: Vec<String> = Vec::new();
    let mut short = None;

    // A partial trailing batch (possible when the broker cut at MaxBytes) ends the loop:
    // its acquired offsets count as unread, not as gaps.
    while let Some(len) = complete_batch_len(&data.buffers[buffer as usize][position..]) {
        let range = position..position + len;
        position += len;
        let header = match BatchHeader::parse(&data.buffers[buffer as usize][range.clone()]) {
            Ok(header) => header,
            Err(e) => {
                // Without a readable header its offsets are unknown: the rest is unread.
                warn!(%topic, partition, error = %e,
                      "unreadable record batch header; releasing the acquired records from here on");
                corrupt.push(e.to_string());
                break;
            }
        };
        readable_end = readable_end.max(header.last_offset);
        let overlaps = ranges
            .iter()
            .any(|r| r.0 <= header.last_offset && header.base_offset <= r.1);
        if header.is_control() || !overlaps {
            continue; // not deliverable; acquired offsets in it become gaps below
        }
        let (cursor_before, records_before, gaps_before) = (cursor, into.len(), gaps.len());
        let records_capacity = into.capacity();
        let next_before = next_expected[cursor_before.min(ranges.len() - 1)];
        let decoded = decode_records(data, buffer, range, &header, |record, memory| {
            let offset = record.offset;
            while cursor < ranges.len() && ranges[cursor].1 < offset {
                cursor += 1;
            }
            if cursor == ranges.len() || offset < ranges[cursor].0 {
                return Ok(()); // read but not acquired by us
            }
            if offset > next_expected[cursor] {
                gaps.push((next_expected[cursor], offset - 1));
            }
            next_expected[cursor] = offset + 1;
            // 88 bytes per record, where a record takes 7 on the wire at least.
            reserve_one(into, memory)?;
            into.push(StoredRecord {
                offset,
                timestamp: record.timestamp,
                lock_deadline_ms,
                acquired_last_offset: offset, // set below, once the range's last record is known
                partition,
                topic: topic_index,
                buffer: record.buffer,
                delivery_count: ranges[cursor].2,
                timestamp_type: record.timestamp_type,
                key: record.key,
                value: record.value,
                headers: record.headers,
            });
            Ok(())
        });
        if let Err(e) = decoded {
            // Only this batch is lost (CRC, compression or record framing): undo what it
            // delivered, release its acquired offsets and go on with the next batch. Released,
            // not rejected as Java's client does: the corruption may have happened in transit,
            // and the broker archives a record anyway once share.delivery.count.limit is reached.
            // A batch that would pass a memory bound is released too, and decoding stops there.
            into.truncate(records_before);
            into.shrink_to(records_capacity); // its growth was charged to the batch
            gaps.truncate(gaps_before);
            let last_range = ranges.len() - 1;
            for i in cursor_before + 1..=cursor.min(last_range) {
                next_expected[i] = ranges[i].0; // no record of these ranges came before
            }
            next_expected[cursor_before.min(last_range)] = next_before;
            cursor = cursor_before;
            let released = release_batch(
                &ranges,
                &mut next_expected,
                cursor,
                (header.base_offset, header.last_offset),
                &mut gaps,
                &mut unread,
            );
            splits.extend(released.iter().map(|r| r.0));
            match e {
                BatchError::Corrupt(e) => {
                    warn!(%topic, partition, base_offset = header.base_offset,
                          last_offset = header.last_offset, error = %e, released = ?released,
                          "corrupt record batch: releasing its acquired records, delivering the others");
                    corrupt.push(e.to_string());
                }
                BatchError::Memory(shortfall) => {
                    // The caller decides what it means (and logs it); the rest is unread.
                    short = Some((header.base_offset, shortfall));
                    break;
                }
            }
        }
    }

    // A record's acquired range ends at the last record of its run: the records of one
    // acquired range with no released offsets between them.
    let mut range = ranges.len() - 1;
    let mut run_end = i64::MIN;
    let mut next_record: Option<(i64, usize)> = None;
    let mut in_partition_buffer = false;
    for record in into[first_new..].iter_mut().rev() {
        in_partition_buffer |= record.buffer == buffer;
        while ranges[range].0 > record.offset {
            range -= 1;
        }
        let same_run = next_record.is_some_and(|(after, r)| {
            r == range && !splits.iter().any(|s| record.offset < *s && *s < after)
        });
        if !same_run {
            run_end = record.offset;
        }
        record.acquired_last_offset = run_end;
        next_record = Some((record.offset, range));
    }
    if !in_partition_buffer {
        // Only decompressed buffers hold this partition's records: the response's can go.
        data.buffers[buffer as usize] = Bytes::new();
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
    unread.sort_unstable();
    let delivered: Vec<i64> = into[first_new..].iter().map(|r| r.offset).collect();
    let beside = |offset: Option<i64>| offset.is_some_and(|o| delivered.binary_search(&o).is_ok());
    let (gaps_beside_records, gaps): (Vec<_>, Vec<_>) = gaps
        .into_iter()
        .partition(|&(first, last)| beside(first.checked_sub(1)) || beside(last.checked_add(1)));
    Ok(Unreadable {
        gaps,
        gaps_beside_records,
        unread,
        corrupt,
        short,
    })
}

/// Releases the acquired offsets of the unreadable batch [base, last]: for each acquired range
/// it touches (from `cursor` on), the offsets between the range's last record and the batch
/// are a gap, those inside the batch go to `unread`; the range's next expected offset moves
/// past the batch. Returns the released ranges.
fn release_batch(
    ranges: &[(i64, i64, i16)],
    next_expected: &mut [i64],
    cursor: usize,
    (base, last): (i64, i64),
    gaps: &mut Vec<(i64, i64)>,
    unread: &mut Vec<(i64, i64)>,
) -> Vec<(i64, i64)> {
    let mut released = Vec::new();
    for (i, &(first, range_last, _)) in ranges.iter().enumerate().skip(cursor) {
        if first > last {
            break;
        }
        if range_last < base {
            continue;
        }
        let from = next_expected[i];
        let start = base.max(first);
        let end = last.min(range_last);
        if from < start {
            gaps.push((from, start - 1));
        }
        if from.max(start) <= end {
            released.push((from.max(start), end));
        }
        // end < i64::MAX: acquired ranges never end there (checked above).
        next_expected[i] = from.max(end + 1);
    }
    unread.extend_from_slice(&released);
    released
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
        let offsets: Vec<i64> = out.batch.records.iter().map(|r| r.offset).collect();
        assert_eq!(offsets, vec![2, 3, 7, 8]);
        assert_eq!(out.batch.records[0].delivery_count, 1);
        assert_eq!(out.batch.records[2].delivery_count, 2);
        let third = out.batch.record(2).unwrap();
        assert_eq!(third.value(), Some(&b"v7"[..]));
        assert_eq!(third.key(), Some(&b"k7"[..]));
        let header = third.headers().next().unwrap();
        assert_eq!(header.key(), b"h");
        assert_eq!(header.value(), Some(&b"hv"[..]));
        assert_eq!(third.topic(), "t");
        assert_eq!(out.batch.records[0].timestamp, 1002);
        assert_eq!(out.batch.records[0].lock_deadline_ms, 99);
        let range_ends: Vec<i64> = out
            .batch
            .records
            .iter()
            .map(|r| r.acquired_last_offset)
            .collect();
        assert_eq!(range_ends, vec![3, 3, 8, 8]);
        assert!(out.gaps.is_empty() && out.gaps_beside_records.is_empty() && out.unread.is_empty());
    }

    /// Records point into buffers their batch holds: the response's for uncompressed batches,
    /// a decompressed one otherwise. Both halves of a split batch read them, and a partition
    /// whose records are all compressed does not keep the response alive.
    #[test]
    fn records_read_their_bytes_from_the_buffers_their_batch_holds() {
        let mixed = encode(&[
            (
                (0..3).map(|o| record(o, false)).collect(),
                Compression::None,
            ),
            (
                (3..6).map(|o| record(o, false)).collect(),
                Compression::Zstd,
            ),
        ]);
        let mut batch = Batch::default();
        extract_into(
            &topic(),
            0,
            Some(mixed),
            &[acquired(0, 5, 1)],
            0,
            &mut batch,
        )
        .unwrap();
        let compressed = encode(&[((0..2).map(|o| record(o, false)).collect(), Compression::Lz4)]);
        let other: Arc<str> = Arc::from("other");
        extract_into(
            &other,
            1,
            Some(compressed),
            &[acquired(0, 1, 1)],
            0,
            &mut batch,
        )
        .unwrap();
        // [mixed response, its zstd batch, second response (emptied), its lz4 batch]
        let lens: Vec<bool> = batch.data.buffers.iter().map(Bytes::is_empty).collect();
        assert_eq!(lens, vec![false, false, true, false]);
        let rest = batch.split_off(4);
        let read = |b: &Batch| -> Vec<(String, i64, Vec<u8>, Vec<u8>)> {
            b.records()
                .map(|r| {
                    (
                        r.topic().to_string(),
                        r.offset(),
                        r.value().unwrap().to_vec(),
                        r.headers().next().unwrap().value().unwrap().to_vec(),
                    )
                })
                .collect()
        };
        let expected = |t: &str, o: i64| {
            (
                t.to_string(),
                o,
                format!("v{o}").into_bytes(),
                b"hv".to_vec(),
            )
        };
        assert_eq!(
            read(&batch),
            (0..4).map(|o| expected("t", o)).collect::<Vec<_>>()
        );
        assert_eq!(
            read(&rest),
            vec![
                expected("t", 4),
                expected("t", 5),
                expected("other", 0),
                expected("other", 1)
            ]
        );
        assert_eq!(rest.payload_bytes(), 4 * 4);
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
        let offsets: Vec<i64> = out.batch.records.iter().map(|r| r.offset).collect();
        assert_eq!(offsets, vec![0, 1, 3, 5]);
        assert_eq!(out.gaps_beside_records, vec![(2, 2), (4, 4)]);
        assert!(out.gaps.is_empty() && out.unread.is_empty());
        assert!(out
            .batch
            .records
            .iter()
            .all(|r| r.acquired_last_offset == 5));
    }

    #[test]
    fn only_gaps_beside_a_delivered_record_wait_for_it() {
        // A marker alone in its acquired range (its transaction's records came in an earlier
        // fetch) has nothing to settle with: a Gap at once. One after a delivered record waits.
        let data = encode(&[
            (vec![record(2, true)], Compression::None),
            (vec![record(3, false)], Compression::None),
            (vec![record(5, false), record(6, false)], Compression::None),
            (vec![record(7, true)], Compression::None),
            (vec![record(8, true)], Compression::None),
        ]);
        // Offset 3 is another member's; 5-8 are ours.
        let out = extract(
            &topic(),
            0,
            Some(data),
            &[acquired(2, 2, 1), acquired(5, 8, 1)],
            0,
        )
        .unwrap();
        assert_eq!(out.gaps_beside_records, vec![(7, 8)]);
        assert_eq!(out.gaps, vec![(2, 2)]);
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
        assert_eq!(out.gaps_beside_records, vec![(3, 3)]);
        assert!(out.gaps.is_empty());
        assert!(out
            .batch
            .records
            .iter()
            .all(|r| r.acquired_last_offset == 2));
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
        assert_eq!(out.batch.records.len(), 3);
        assert!(out
            .batch
            .records
            .iter()
            .all(|r| r.acquired_last_offset == 2));
        assert!(out.gaps.is_empty() && out.gaps_beside_records.is_empty());
        assert_eq!(out.unread, vec![(3, 5)]);
    }

    #[test]
    fn no_records_at_all() {
        let out = extract(&topic(), 0, None, &[acquired(10, 12, 1)], 0).unwrap();
        assert!(
            out.batch.records.is_empty()
                && out.gaps.is_empty()
                && out.gaps_beside_records.is_empty()
        );
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

    /// Flips a byte inside the `index`-th batch's records, so its CRC check fails.
    fn corrupt_batch(data: Bytes, index: usize) -> Bytes {
        let mut out = BytesMut::from(&data[..]);
        let mut at = 0;
        for _ in 0..index {
            at += complete_batch_len(&out[at..]).unwrap();
        }
        let len = complete_batch_len(&out[at..]).unwrap();
        out[at + len - 1] ^= 0xff;
        out.freeze()
    }

    #[test]
    fn a_corrupt_batch_releases_only_its_own_records() {
        let data = encode(&[
            (
                (0..3).map(|o| record(o, false)).collect(),
                Compression::None,
            ),
            (
                (3..6).map(|o| record(o, false)).collect(),
                Compression::Gzip,
            ),
            (
                (6..9).map(|o| record(o, false)).collect(),
                Compression::None,
            ),
        ]);
        let out = extract(
            &topic(),
            0,
            Some(corrupt_batch(data, 1)),
            &[acquired(0, 8, 1)],
            0,
        )
        .expect("one corrupt batch must not fail the partition");
        let offsets: Vec<i64> = out.batch.records.iter().map(|r| r.offset).collect();
        assert_eq!(offsets, vec![0, 1, 2, 6, 7, 8]);
        assert_eq!(out.unread, vec![(3, 5)]);
        assert!(
            out.gaps.is_empty() && out.gaps_beside_records.is_empty(),
            "corrupt offsets must never be gap-acknowledged"
        );
        assert!(out.corrupt[0].contains("CRC"), "{:?}", out.corrupt);
        // The released offsets split the acquired range: the records before them form a whole
        // range of their own, so the caller does not wait for records that will not come.
        let range_ends: Vec<i64> = out
            .batch
            .records
            .iter()
            .map(|r| r.acquired_last_offset)
            .collect();
        assert_eq!(range_ends, vec![2, 2, 2, 8, 8, 8]);
    }

    #[test]
    fn a_corrupt_batch_after_a_control_batch_keeps_the_gap() {
        let data = encode(&[
            (vec![record(0, false), record(1, false)], Compression::None),
            (vec![record(2, true)], Compression::None),
            (
                (3..6).map(|o| record(o, false)).collect(),
                Compression::None,
            ),
            (vec![record(6, false)], Compression::None),
        ]);
        let out = extract(
            &topic(),
            0,
            Some(corrupt_batch(data, 2)),
            &[acquired(0, 3, 1), acquired(5, 7, 2)],
            0,
        )
        .unwrap();
        let offsets: Vec<i64> = out.batch.records.iter().map(|r| r.offset).collect();
        assert_eq!(offsets, vec![0, 1, 6]);
        assert_eq!(out.gaps_beside_records, vec![(2, 2)]);
        assert!(out.gaps.is_empty());
        // Offset 7 is past the data: unread as well.
        assert_eq!(out.unread, vec![(3, 3), (5, 5), (7, 7)]);
        let range_ends: Vec<i64> = out
            .batch
            .records
            .iter()
            .map(|r| r.acquired_last_offset)
            .collect();
        assert_eq!(range_ends, vec![1, 1, 6]);
    }
}
