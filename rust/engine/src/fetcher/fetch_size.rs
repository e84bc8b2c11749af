//! How many bytes a ShareFetch asks for. The broker reads up to MaxBytes of log for a fetch
//! (split evenly over the partitions it fetches) and, before it acquires anything, walks the
//! header of every log batch it read (`lastBatch`; under `read_committed` also the aborted
//! transactions filter, one file read per batch and per marker), yet it acquires at most
//! about `max.poll.records` records. So a fetch asks for what it can take, at the size the
//! records have had, and no more: on a topic written in transactions of 100 records the
//! broker walked a thousand batches per fetch to hand out fifteen (docs/benchmarks/RESULTS.md,
//! (dt)).

/// A fetch asks for at least this much: a guess that is too low costs fetches, not records
/// (the broker always returns a partition's first batch whole).
pub(crate) const MIN_SIZED_FETCH_BYTES: i32 = 64 * 1024;

/// Room over the records' measured size: for aborted transactions' records and markers the
/// broker reads but hands out none of, and for sizes that vary from fetch to fetch.
const HEADROOM: f64 = 2.0;

/// The weight of the newest response in the size seen.
const NEWEST_WEIGHT: f64 = 0.25;

/// Log bytes per offset seen in the responses so far.
#[derive(Debug, Default, Clone)]
pub(crate) struct FetchSize {
    bytes_per_offset: Option<f64>,
}

impl FetchSize {
    /// Counts a response's records: `bytes` of record batches covering `offsets` offsets of the
    /// log (the acquired span, markers and archived records included, as the broker reads them).
    pub(crate) fn observe(&mut self, bytes: usize, offsets: u64) {
        if bytes == 0 || offsets == 0 {
            return;
        }
        let seen = bytes as f64 / offsets as f64;
        self.bytes_per_offset = Some(match self.bytes_per_offset {
            None => seen,
            Some(before) => before * (1.0 - NEWEST_WEIGHT) + seen * NEWEST_WEIGHT,
        });
    }

    /// MaxBytes for a fetch of `max_records` over `partitions` partitions, at most `limit`:
    /// each partition's even share of it holds `max_records` at twice the size seen, so any one
    /// of them can fill the ask. Before any records were seen, `limit`.
    pub(crate) fn max_bytes(&self, limit: i32, max_records: i32, partitions: usize) -> i32 {
        let Some(per_offset) = self.bytes_per_offset else {
            return limit;
        };
        let wanted =
            per_offset * f64::from(max_records.max(1)) * partitions.max(1) as f64 * HEADROOM;
        let wanted = if wanted >= f64::from(i32::MAX) {
            i32::MAX
        } else {
            wanted.ceil() as i32
        };
        wanted.max(MIN_SIZED_FETCH_BYTES).min(limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: i32 = 2 * 1024 * 1024;

    #[test]
    fn before_any_records_a_fetch_asks_for_the_limit() {
        assert_eq!(FetchSize::default().max_bytes(LIMIT, 500, 3), LIMIT);
    }

    #[test]
    fn small_records_ask_for_what_the_ask_takes_twice_over_per_partition() {
        let mut size = FetchSize::default();
        // 33 records of 11 bytes in a batch with its marker: ~23 bytes an offset
        size.observe(23 * 1_000, 1_000);
        assert_eq!(size.max_bytes(LIMIT, 500, 3), 23 * 500 * 3 * 2);
        assert_eq!(size.max_bytes(LIMIT, 500, 1), MIN_SIZED_FETCH_BYTES);
    }

    #[test]
    fn large_records_or_many_partitions_stop_at_the_limit() {
        let mut size = FetchSize::default();
        size.observe(1 << 20, 1);
        assert_eq!(size.max_bytes(LIMIT, 500, 3), LIMIT);
        assert_eq!(size.max_bytes(i32::MAX, i32::MAX, usize::MAX), i32::MAX);
    }

    #[test]
    fn the_size_follows_the_records_seen() {
        let mut size = FetchSize::default();
        size.observe(100 * 500, 500);
        let small = size.max_bytes(i32::MAX, 500, 3);
        for _ in 0..20 {
            size.observe(1_000 * 500, 500);
        }
        let large = size.max_bytes(i32::MAX, 500, 3);
        assert!(large > 9 * small, "{small} then {large}");
        size.observe(0, 0);
        size.observe(10, 0);
        assert_eq!(
            size.max_bytes(i32::MAX, 500, 3),
            large,
            "nothing seen changes nothing"
        );
    }
}
