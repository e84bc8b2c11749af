//! Consumer configuration read from Kafka's own client setting names.

use std::collections::HashMap;
use std::time::Duration;

use crate::bootstrap::parse_bootstrap_servers;
use crate::error::EngineError;
use crate::protocol::share_requests::AcquireMode;
use crate::security::Security;
use tracing::warn;

/// Released buffered batches at a fraction of their lock; `share.buffer.hold.max.ms` replaced it
/// (a release costs a delivery attempt, so the bound is now time without a poll).
const RETIRED_LOCK_FRACTION: &str = "share.buffer.max.lock.fraction";

/// The engine setting of `ConsumerConfig::fold_gaps`.
pub const FOLD_GAPS_KEY: &str = "share.gaps.fold";

/// The engine setting of `ConsumerConfig::fetch_batch_size`.
pub const FETCH_BATCH_SIZE_KEY: &str = "share.fetch.batch.size";

/// The engine setting of `ConsumerConfig::fetch_bytes_adaptive`.
pub const FETCH_BYTES_ADAPTIVE_KEY: &str = "share.fetch.bytes.adaptive";

/// The default `fetch.max.bytes`: smaller than Kafka's 50 MiB because each member reserves that
/// much of the worker's memory (a 1 GiB heap's default pool of 512 MiB reserves for 256 members;
/// at 50 MiB, ten). A fetch seldom carries more: the broker answers with at most about
/// `max.poll.records` records (500), and always with a partition's first batch whole. The
/// benchmark's fast sink ran at 0.97 of its rate with 1 MiB against 50 MiB, its broker at 0.94
/// of the CPU (docs/benchmarks/RESULTS.md, (d)).
pub const DEFAULT_FETCH_MAX_BYTES: i32 = 2 * 1024 * 1024;

/// The smallest default `share.memory.max.bytes`: a bound, not a reservation, so one record
/// batch may decompress to half of it (32 MiB) whatever the fetch size.
pub const MIN_DEFAULT_MEMORY_BYTES: usize = 64 * 1024 * 1024;

/// The longest `share.buffer.hold.max.ms`: one day, as the Java driver's
/// `share.task.stuck.timeout.ms` that sets it.
pub const BUFFER_HOLD_MAX_MS_MAX: u64 = 24 * 60 * 60 * 1000;

#[derive(Debug, Clone)]
pub struct ConsumerConfig {
    /// "host:port" entries from `bootstrap.servers`.
    pub bootstrap_servers: Vec<String>,
    pub group_id: String,
    pub client_id: String,
    /// `client.rack`, sent with the join heartbeat.
    pub client_rack: Option<String>,
    /// ShareFetch MaxRecords and BatchSize (`max.poll.records`).
    pub max_poll_records: i32,
    /// ShareFetch BatchSize: the broker cuts what it acquires into in-flight batches of at least
    /// this many records, at log batch boundaries (engine setting `share.fetch.batch.size`,
    /// default `max.poll.records`). An acknowledgement or an archived aborted transaction that
    /// covers part of an in-flight batch puts all of it into per-record state on the broker.
    pub fetch_batch_size: i32,
    /// ShareFetch MaxBytes (`fetch.max.bytes`, default [`DEFAULT_FETCH_MAX_BYTES`], not Kafka's
    /// 50 MiB): also the room the member reserves in the worker's memory (see `memory`).
    pub fetch_max_bytes: i32,
    pub fetch_min_bytes: i32,
    pub fetch_max_wait: Duration,
    /// While this member holds acquired records not yet acknowledged: the longest pause after a
    /// fetch came back empty before the next one without acknowledgements (1 ms after the first
    /// empty fetch, doubling; engine setting `share.fetch.max.wait.held.ms`, default 50 ms,
    /// capped by `fetch.max.wait.ms`). The
    /// broker serves one request per connection at a time, so acks made during a parked fetch
    /// wait for it; when the member's records fill the broker's in-flight window, only those
    /// acks can free it (see `fetcher::send::fetch_wait`).
    pub fetch_max_wait_held: Duration,
    /// The wait of a ShareFetch carrying acknowledgements, and of the first long poll after a
    /// fetch delivered records; each fetch that comes back empty doubles the next long poll's
    /// wait up to `fetch.max.wait.ms` (engine setting `share.fetch.wait.initial.ms`, default
    /// 5 ms, capped by `fetch.max.wait.ms`). Measured on Kafka 4.4: a parked fetch was not
    /// completed when acknowledgements freed the window it waited for; it waited out its time.
    pub fetch_wait_initial: Duration,
    pub acquire_mode: AcquireMode,
    /// Once a session knows its share-partitions' windows full, its caller's acks go on a
    /// ShareAcknowledge with the next ShareFetch pipelined behind it, rather than riding on that
    /// fetch (engine setting `share.fetch.acknowledge.first`, default true; see
    /// `fetcher::send::send_next`).
    pub acknowledge_first: bool,
    /// Acquired offsets without a data record (transaction markers) beside a delivered record
    /// are acknowledged with that record's settling ack, as one range, rather than as a Gap of
    /// their own at once, which splits their acquired range into per-offset state on the broker
    /// (engine setting `share.gaps.fold`, default true; see `AckQueue::hold_gap`).
    pub fold_gaps: bool,
    /// A ShareFetch asks for the bytes its `max.poll.records` take at the size the records have
    /// had (twice over, per partition, at least 64 KiB), at most `fetch.max.bytes`, rather than
    /// always `fetch.max.bytes`: the broker walks every log batch a fetch reads (engine setting
    /// `share.fetch.bytes.adaptive`, default true; see `fetcher::fetch_size`).
    pub fetch_bytes_adaptive: bool,
    /// Timeout of one request round trip (`request.timeout.ms`).
    pub request_timeout: Duration,
    /// Upper bound on records fetched but not yet handed to `poll` (engine setting
    /// `share.buffer.max.records`, default 2 × `max.poll.records`, in `record_limit` mode
    /// `max.poll.records`), except that in the default acquire mode one batch may exceed it (see
    /// `DeliveryBuffer::has_room`, `Shared::wants_records`).
    pub max_buffered_records: usize,
    /// Upper bound on bytes fetched but not yet handed to `poll` (`share.buffer.max.bytes`,
    /// default `fetch.max.bytes`).
    pub max_buffered_bytes: usize,
    /// Upper bound on the decoded bytes this member holds: the response being decoded, the
    /// buffer, and what `poll` handed out and the caller still holds (`share.memory.max.bytes`,
    /// default 4 × the larger of `fetch.max.bytes` and `share.buffer.max.bytes`, and at least
    /// [`MIN_DEFAULT_MEMORY_BYTES`]; set, at least 1 MiB; at most a quarter of the worker's bound
    /// applies; see `memory`).
    pub max_memory_bytes: usize,
    /// How long batches may wait in the buffer while the caller does not poll
    /// (`share.buffer.hold.max.ms`, default 900000 = the Java driver's
    /// `share.task.stuck.timeout.ms`). Until then their locks are renewed (each release would
    /// cost the records a delivery attempt); past it they are released, so a caller stuck for
    /// good does not keep them from other members.
    pub buffer_hold_max: Duration,
    /// How long `close` (and the stop of a failed member) may take in all: closing the share
    /// sessions, then the leave heartbeat (engine setting `share.close.timeout.ms`, default
    /// 3000). Past it the connections are dropped; the broker then releases the records, or
    /// their locks expire if it cannot be reached. Kept below Connect's task shutdown grace
    /// (`task.shutdown.graceful.timeout.ms`, 5 s) so a task stops in time when a broker does
    /// not answer.
    pub close_timeout: Duration,
    /// The largest response taken to a request other than a ShareFetch (engine setting
    /// `share.response.max.bytes`, default 16 MiB: Metadata for a member's own topics of
    /// several hundred thousand partitions); a longer one closes the connection unread.
    pub response_max_bytes: usize,
    /// How long a partition of a share session may deliver nothing, while this member wants
    /// records, before the fetcher asks its leader whether records wait in it; if so the
    /// session is rebuilt (engine setting `share.partition.stall.ms`, default 15000; see
    /// `fetcher::stall`).
    pub partition_stall: Duration,
    /// TLS and SASL (`security.protocol`, `sasl.*`, `ssl.*`).
    pub security: Security,
}

/// A boolean setting: `true` or `false` (surrounding spaces ignored), `default` when absent.
fn parse_bool(
    props: &HashMap<String, String>,
    key: &str,
    default: bool,
) -> Result<bool, EngineError> {
    match props.get(key).map(|s| s.trim()) {
        None => Ok(default),
        Some("true") => Ok(true),
        Some("false") => Ok(false),
        Some(other) => Err(EngineError::config(
            key,
            format!("`{other}` is not true or false"),
        )),
    }
}

fn parse_num<T: std::str::FromStr + PartialOrd + Copy + std::fmt::Display>(
    props: &HashMap<String, String>,
    key: &str,
    default: T,
    min: T,
    max: T,
) -> Result<T, EngineError> {
    let Some(raw) = props.get(key) else {
        return Ok(default);
    };
    let value: T = raw
        .trim()
        .parse()
        .map_err(|_| EngineError::config(key, format!("`{raw}` is not a number")))?;
    if value < min || value > max {
        return Err(EngineError::config(
            key,
            format!("{value} is outside {min}..={max}"),
        ));
    }
    Ok(value)
}

impl ConsumerConfig {
    /// How many records a fetch brings at most, when that is bounded: `max.poll.records` in
    /// `record_limit` mode; None in the default mode, where a fetch brings whole log batches.
    pub fn records_per_fetch_at_most(&self) -> Option<usize> {
        match self.acquire_mode {
            AcquireMode::RecordLimit => Some(self.max_poll_records.max(1) as usize),
            AcquireMode::BatchOptimized => None,
        }
    }

    /// Reads the settings the engine knows; unknown keys are ignored.
    pub fn from_properties(props: &HashMap<String, String>) -> Result<Self, EngineError> {
        let bootstrap = props
            .get("bootstrap.servers")
            .ok_or_else(|| EngineError::config("bootstrap.servers", "required"))?;
        let bootstrap_servers = parse_bootstrap_servers(bootstrap)?;
        let group_id = props
            .get("group.id")
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .ok_or_else(|| EngineError::config("group.id", "required"))?;
        let client_id = props
            .get("client.id")
            .cloned()
            .unwrap_or_else(|| format!("sharesink-{group_id}"));
        let client_rack = props
            .get("client.rack")
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty());
        let max_poll_records = parse_num(props, "max.poll.records", 500, 1, i32::MAX)?;
        let fetch_batch_size =
            parse_num(props, FETCH_BATCH_SIZE_KEY, max_poll_records, 1, i32::MAX)?;
        let fetch_max_bytes = parse_num(
            props,
            "fetch.max.bytes",
            DEFAULT_FETCH_MAX_BYTES,
            1,
            i32::MAX,
        )?;
        let fetch_min_bytes = parse_num(props, "fetch.min.bytes", 1, 0, i32::MAX)?;
        let fetch_max_wait_ms: u64 =
            parse_num(props, "fetch.max.wait.ms", 500, 0, i32::MAX as u64)?;
        let fetch_max_wait_held_ms: u64 = parse_num(
            props,
            "share.fetch.max.wait.held.ms",
            50,
            0,
            i32::MAX as u64,
        )?;
        let fetch_wait_initial_ms: u64 =
            parse_num(props, "share.fetch.wait.initial.ms", 5, 0, i32::MAX as u64)?;
        let request_timeout_ms: u64 =
            parse_num(props, "request.timeout.ms", 30_000, 1, i32::MAX as u64)?;
        let close_timeout_ms: u64 =
            parse_num(props, "share.close.timeout.ms", 3_000, 0, i32::MAX as u64)?;
        let response_max_bytes = parse_num(
            props,
            "share.response.max.bytes",
            crate::connection::RESPONSE_MAX_BYTES,
            1 << 20,
            1 << 30,
        )?;
        let partition_stall_ms: u64 = parse_num(
            props,
            "share.partition.stall.ms",
            15_000,
            100,
            i32::MAX as u64,
        )?;
        let acquire_mode = match props.get("share.acquire.mode").map(|s| s.trim()) {
            None | Some("batch_optimized") => AcquireMode::BatchOptimized,
            Some("record_limit") => AcquireMode::RecordLimit,
            Some(other) => {
                return Err(EngineError::config(
                    "share.acquire.mode",
                    format!("`{other}` is not batch_optimized or record_limit"),
                ))
            }
        };
        let acknowledge_first = parse_bool(props, "share.fetch.acknowledge.first", true)?;
        let fold_gaps = parse_bool(props, FOLD_GAPS_KEY, true)?;
        let fetch_bytes_adaptive = parse_bool(props, FETCH_BYTES_ADAPTIVE_KEY, true)?;
        let security = Security::from_properties(props)?;
        // record_limit: one poll ahead, so a caller stuck in a call holds at most one poll's
        // worth more than that call took (see `Shared::wants_records`).
        let buffered_polls = match acquire_mode {
            AcquireMode::RecordLimit => 1,
            AcquireMode::BatchOptimized => 2,
        };
        let max_buffered_records = parse_num(
            props,
            "share.buffer.max.records",
            buffered_polls * max_poll_records as usize,
            1,
            usize::MAX,
        )?;
        let max_buffered_bytes = parse_num(
            props,
            "share.buffer.max.bytes",
            fetch_max_bytes as usize,
            1,
            usize::MAX,
        )?;
        let max_memory_bytes = parse_num(
            props,
            crate::memory::MEMBER_BOUND_KEY,
            4usize
                .saturating_mul(max_buffered_bytes.max(fetch_max_bytes as usize))
                .max(MIN_DEFAULT_MEMORY_BYTES),
            1 << 20,
            usize::MAX,
        )?;
        let buffer_hold_max_ms: u64 = parse_num(
            props,
            "share.buffer.hold.max.ms",
            900_000,
            0,
            BUFFER_HOLD_MAX_MS_MAX,
        )?;
        if props.contains_key(RETIRED_LOCK_FRACTION) {
            warn!(
                "`{RETIRED_LOCK_FRACTION}` is no longer read: buffered records are renewed \
                 while the caller does not poll, and released after `share.buffer.hold.max.ms`"
            );
        }
        Ok(ConsumerConfig {
            bootstrap_servers,
            group_id,
            client_id,
            client_rack,
            max_poll_records,
            fetch_batch_size,
            fetch_max_bytes,
            fetch_min_bytes,
            fetch_max_wait: Duration::from_millis(fetch_max_wait_ms),
            fetch_max_wait_held: Duration::from_millis(
                fetch_max_wait_held_ms.min(fetch_max_wait_ms),
            ),
            fetch_wait_initial: Duration::from_millis(fetch_wait_initial_ms.min(fetch_max_wait_ms)),
            acquire_mode,
            acknowledge_first,
            fold_gaps,
            fetch_bytes_adaptive,
            request_timeout: Duration::from_millis(request_timeout_ms),
            max_buffered_records,
            max_buffered_bytes,
            max_memory_bytes,
            buffer_hold_max: Duration::from_millis(buffer_hold_max_ms),
            close_timeout: Duration::from_millis(close_timeout_ms),
            response_max_bytes,
            partition_stall: Duration::from_millis(partition_stall_ms),
            security,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_follow_kafka() {
        let c = ConsumerConfig::from_properties(&props(&[
            ("bootstrap.servers", "localhost:9092"),
            ("group.id", "g"),
            ("some.unknown.key", "x"),
        ]))
        .unwrap();
        assert_eq!(c.max_poll_records, 500);
        assert_eq!(c.fetch_max_bytes, 2 * 1024 * 1024);
        assert_eq!(c.fetch_min_bytes, 1);
        assert_eq!(c.fetch_max_wait, Duration::from_millis(500));
        assert_eq!(c.fetch_max_wait_held, Duration::from_millis(50));
        assert_eq!(c.fetch_wait_initial, Duration::from_millis(5));
        assert_eq!(c.acquire_mode, AcquireMode::BatchOptimized);
        assert_eq!(c.max_buffered_records, 1000);
        assert_eq!(c.max_memory_bytes, 64 * 1024 * 1024);
        assert_eq!(c.buffer_hold_max, Duration::from_secs(900));
        assert_eq!(c.client_id, "sharesink-g");
        assert_eq!(c.request_timeout, Duration::from_secs(30));
        assert_eq!(c.close_timeout, Duration::from_secs(3));
        assert_eq!(c.response_max_bytes, 16 << 20);
        assert_eq!(c.partition_stall, Duration::from_secs(15));
        assert_eq!(c.fetch_batch_size, 500);
        assert!(c.fetch_bytes_adaptive);
    }

    #[test]
    fn the_fetch_batch_size_follows_max_poll_records_unless_set() {
        let base = [("bootstrap.servers", "localhost:9092"), ("group.id", "g")];
        let with = |extra: &[(&str, &str)]| {
            let all: Vec<_> = base.iter().chain(extra).copied().collect();
            ConsumerConfig::from_properties(&props(&all))
        };
        assert_eq!(
            with(&[("max.poll.records", "7")]).unwrap().fetch_batch_size,
            7
        );
        let set = with(&[("max.poll.records", "7"), (FETCH_BATCH_SIZE_KEY, "1")]).unwrap();
        assert_eq!((set.max_poll_records, set.fetch_batch_size), (7, 1));
        let zero = with(&[(FETCH_BATCH_SIZE_KEY, "0")])
            .unwrap_err()
            .to_string();
        assert!(zero.contains(FETCH_BATCH_SIZE_KEY), "{zero}");
    }

    #[test]
    fn bad_values_name_the_key() {
        let base = [("bootstrap.servers", "h:1"), ("group.id", "g")];
        let with = |k: &str, v: &str| {
            let mut p = props(&base);
            p.insert(k.into(), v.into());
            ConsumerConfig::from_properties(&p).unwrap_err()
        };
        for (k, v) in [
            ("max.poll.records", "zero"),
            ("max.poll.records", "0"),
            ("fetch.max.wait.ms", "-1"),
            ("share.fetch.max.wait.held.ms", "soon"),
            ("share.fetch.wait.initial.ms", "-1"),
            ("share.close.timeout.ms", "-1"),
            ("request.timeout.ms", "0"),
            ("share.buffer.hold.max.ms", "-1"),
            ("share.buffer.hold.max.ms", "soon"),
            ("share.buffer.hold.max.ms", "86400001"), // beyond a day
            ("share.memory.max.bytes", "1000"),       // below 1 MiB
            ("share.memory.max.bytes", "-1"),
            ("share.response.max.bytes", "1000"), // below 1 MiB
            ("share.acquire.mode", "greedy"),
            ("security.protocol", "SASL_SSL"), // without sasl.mechanism
        ] {
            let e = with(k, v);
            let expected = if k == "security.protocol" {
                "sasl.mechanism"
            } else {
                k
            };
            assert!(
                matches!(&e, EngineError::Config { key, .. } if key == expected),
                "{e}"
            );
        }
        let e =
            ConsumerConfig::from_properties(&props(&[("bootstrap.servers", "h:1")])).unwrap_err();
        assert!(e.to_string().contains("group.id"));
        assert_eq!(
            ConsumerConfig::from_properties(&props(&[
                ("bootstrap.servers", "h:1"),
                ("group.id", "g"),
                ("share.acquire.mode", "record_limit")
            ]))
            .unwrap()
            .acquire_mode,
            AcquireMode::RecordLimit
        );
    }

    #[test]
    fn the_retired_lock_fraction_is_accepted_and_ignored() {
        let c = ConsumerConfig::from_properties(&props(&[
            ("bootstrap.servers", "h:1"),
            ("group.id", "g"),
            ("share.buffer.max.lock.fraction", "0.3"),
            ("share.buffer.hold.max.ms", "60000"),
        ]))
        .unwrap();
        assert_eq!(c.buffer_hold_max, Duration::from_secs(60));
    }
}
