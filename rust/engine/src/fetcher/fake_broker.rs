//! Tests only: a share-partition leader in memory, on a loopback socket, that answers ShareFetch
//! and ShareAcknowledge v1 (kafka-protocol's codecs) as a test scripts it and reports every
//! request it got, so a fetcher's whole loop can be driven through a leader change, an emptied
//! session or a run of session errors.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    share_acknowledge_response as kar, share_fetch_response as kfr, ShareAcknowledgeRequest,
    ShareAcknowledgeResponse, ShareFetchRequest, ShareFetchResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use uuid::Uuid;

use crate::connection::read_frame;
use crate::protocol::error_codes::NONE;

/// A request the fake leader got, decoded.
#[derive(Debug, Clone)]
pub(super) enum Seen {
    Fetch(ShareFetchRequest),
    Ack(ShareAcknowledgeRequest),
}

impl Seen {
    pub fn epoch(&self) -> i32 {
        match self {
            Seen::Fetch(r) => r.share_session_epoch,
            Seen::Ack(r) => r.share_session_epoch,
        }
    }

    /// Partitions whose acks the request carries.
    pub fn acked(&self) -> Vec<i32> {
        match self {
            Seen::Fetch(r) => r
                .topics
                .iter()
                .flat_map(|t| &t.partitions)
                .filter(|p| !p.acknowledgement_batches.is_empty())
                .map(|p| p.partition_index)
                .collect(),
            Seen::Ack(r) => r
                .topics
                .iter()
                .flat_map(|t| &t.partitions)
                .filter(|p| !p.acknowledgement_batches.is_empty())
                .map(|p| p.partition_index)
                .collect(),
        }
    }

    /// Partitions a ShareFetch removes from the session.
    pub fn forgotten(&self) -> Vec<i32> {
        match self {
            Seen::Fetch(r) => r
                .forgotten_topics_data
                .iter()
                .flat_map(|t| t.partitions.iter().copied())
                .collect(),
            Seen::Ack(_) => Vec::new(),
        }
    }

    /// Partitions a ShareFetch names (added to the session, or carrying acks).
    pub fn named(&self) -> Vec<i32> {
        match self {
            Seen::Fetch(r) => r
                .topics
                .iter()
                .flat_map(|t| &t.partitions)
                .map(|p| p.partition_index)
                .collect(),
            Seen::Ack(_) => Vec::new(),
        }
    }
}

/// How the fake leader answers.
#[derive(Default)]
pub(super) struct Script {
    /// Top-level errors for the next ShareFetches, one each.
    pub fetch_errors: VecDeque<i16>,
    /// Partition → (fetch error, acknowledge error) in every ShareFetch answer naming it; the
    /// acknowledge error also answers a ShareAcknowledge for it.
    pub partition_errors: HashMap<i32, (i16, i16)>,
    /// Extra delay before each answer.
    pub delay: Duration,
    /// Records to hand out; without it every ShareFetch comes back without records.
    pub log: Option<Log>,
    /// Partition → records to serve once, by the next ShareFetch asking for records while the
    /// partition is in the session.
    pub records: HashMap<i32, Served>,
    /// Partition → offsets it refuses to take as ACCEPT (a broker that refuses a transaction
    /// marker acknowledged with its records): an ack request doing so gets INVALID_RECORD_STATE
    /// for the partition, and none of its acks apply.
    pub refuse_accept_of: HashMap<i32, Vec<i64>>,
}

impl Script {
    /// The acknowledge error for `partition` in a request carrying `batches`: the scripted one,
    /// else INVALID_RECORD_STATE for an ACCEPT of an offset it refuses.
    fn ack_error(&self, partition: i32, batches: &[(i64, i64, Vec<i8>)]) -> i16 {
        if let Some((_, code)) = self.partition_errors.get(&partition) {
            return *code;
        }
        let refused = self.refuse_accept_of.get(&partition);
        let accepts_refused = batches.iter().any(|(first, last, types)| {
            refused.is_some_and(|offsets| {
                offsets.iter().any(|o| {
                    *first <= *o
                        && *o <= *last
                        && types[if types.len() == 1 {
                            0
                        } else {
                            (*o - *first) as usize
                        }] == 1
                })
            })
        });
        if accepts_refused {
            crate::protocol::error_codes::INVALID_RECORD_STATE
        } else {
            NONE
        }
    }
}

/// An endless log behind every partition of the session, handed out as a share-partition leader
/// does: from the next offset not yet handed out, at most `window` records held (acquired and
/// not settled) per partition, and either whole log batches of `batch` records until the ask is
/// met (the default acquire mode) or exactly the ask (`record_limit`).
pub(super) struct Log {
    pub batch: i64,
    pub window: i64,
    pub whole_batches: bool,
    /// Per partition: the next offset to hand out, and the records held.
    pub next: BTreeMap<i32, i64>,
    pub held: BTreeMap<i32, i64>,
}

impl Log {
    pub fn new(batch: i64, window: i64, whole_batches: bool) -> Log {
        Log {
            batch,
            window,
            whole_batches,
            next: BTreeMap::new(),
            held: BTreeMap::new(),
        }
    }

    /// Settles what a request acknowledges (accept, release, reject; a released record is not
    /// handed out again here).
    fn settle(&mut self, partition: i32, first: i64, last: i64, types: &[i8]) {
        if types.iter().any(|t| (1..=3).contains(t)) {
            let held = self.held.entry(partition).or_default();
            *held = (*held - (last - first + 1)).max(0);
        }
    }

    /// The records one partition hands out for an ask of `max_records`: (first, last).
    fn take(&mut self, partition: i32, max_records: i64) -> Option<(i64, i64)> {
        let held = *self.held.get(&partition).unwrap_or(&0);
        if max_records <= 0 || held >= self.window {
            return None;
        }
        let first = *self.next.get(&partition).unwrap_or(&0);
        let n = if self.whole_batches {
            ((max_records + self.batch - 1) / self.batch).max(1) * self.batch
        } else {
            max_records
        };
        self.next.insert(partition, first + n);
        self.held.insert(partition, held + n);
        Some((first, first + n - 1))
    }
}

/// A record batch of offsets first..=last, one byte values.
fn encoded(first: i64, last: i64) -> Bytes {
    use kafka_protocol::records::{
        Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
    };
    let records: Vec<Record> = (first..=last)
        .map(|offset| Record {
            transactional: false,
            control: false,
            partition_leader_epoch: 0,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset,
            sequence: offset as i32,
            timestamp: 1_000,
            key: None,
            value: Some(Bytes::from_static(b"v")),
            headers: Default::default(),
            delete_horizon: false,
        })
        .collect();
    let mut buf = BytesMut::new();
    let opts = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut buf, &records, &opts).unwrap();
    buf.freeze()
}

/// Record batches and the ranges (first, last) acquired in them.
pub(super) type Served = (Bytes, Vec<(i64, i64)>);

pub(super) struct FakeLeader {
    pub addr: String,
    pub seen: mpsc::UnboundedReceiver<Seen>,
    pub script: Arc<Mutex<Script>>,
}

impl FakeLeader {
    pub async fn start() -> FakeLeader {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let (tx, seen) = mpsc::unbounded_channel();
        let script = Arc::new(Mutex::new(Script::default()));
        let s = script.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(serve(socket, tx.clone(), s.clone()));
            }
        });
        FakeLeader { addr, seen, script }
    }

    /// The next request, within `within`.
    pub async fn next(&mut self, within: Duration) -> Option<Seen> {
        tokio::time::timeout(within, self.seen.recv())
            .await
            .ok()
            .flatten()
    }

    /// Requests until one matches `wanted` (returned with those before it), within `within`.
    pub async fn until(
        &mut self,
        within: Duration,
        wanted: impl Fn(&Seen) -> bool,
    ) -> (Vec<Seen>, Option<Seen>) {
        let deadline = tokio::time::Instant::now() + within;
        let mut before = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.next(left).await {
                Some(s) if wanted(&s) => return (before, Some(s)),
                Some(s) => before.push(s),
                None => return (before, None),
            }
        }
    }
}

async fn serve(
    mut socket: tokio::net::TcpStream,
    seen: mpsc::UnboundedSender<Seen>,
    script: Arc<Mutex<Script>>,
) {
    // The partitions of this connection's share session, as a broker keeps them.
    let mut session: BTreeSet<(Uuid, i32)> = BTreeSet::new();
    while let Ok(Some(frame)) = read_frame(&mut socket).await {
        let mut frame = frame.freeze();
        let api_key = frame.get_i16();
        let version = frame.get_i16();
        let correlation_id = frame.get_i32();
        let client_id_len = frame.get_i16();
        if client_id_len > 0 {
            frame.advance(client_id_len as usize);
        }
        let _no_tagged_fields = frame.get_u8();
        let (request, wait) = match api_key {
            78 => {
                let r = ShareFetchRequest::decode(&mut frame, version).unwrap();
                let wait = Duration::from_millis(r.max_wait_ms.clamp(0, 50) as u64);
                (Seen::Fetch(r), wait)
            }
            79 => (
                Seen::Ack(ShareAcknowledgeRequest::decode(&mut frame, version).unwrap()),
                Duration::ZERO,
            ),
            other => panic!("the fake leader got api key {other}"),
        };
        let (body, delay) = {
            let mut s = script.lock().unwrap();
            (answer(&request, &mut s, &mut session, version), s.delay)
        };
        let _ = seen.send(request);
        tokio::time::sleep(wait + delay).await;
        let mut out = BytesMut::new();
        out.put_i32(4 + 1 + body.len() as i32);
        out.put_i32(correlation_id);
        out.put_u8(0); // response header v1: no tagged fields
        out.put_slice(&body);
        if socket.write_all(&out).await.is_err() {
            return;
        }
    }
}

/// Answers a ShareFetch for the partitions it names (acks, additions) and for those of the
/// session with a scripted error (an incremental fetch names only what changed), and a
/// ShareAcknowledge for the partitions it names.
fn answer(
    request: &Seen,
    script: &mut Script,
    session: &mut BTreeSet<(Uuid, i32)>,
    version: i16,
) -> Bytes {
    let mut out = BytesMut::new();
    match request {
        Seen::Fetch(r) => {
            let mut response =
                ShareFetchResponse::default().with_acquisition_lock_timeout_ms(30_000);
            if let Some(code) = script.fetch_errors.pop_front() {
                response.error_code = code;
                response.encode(&mut out, version).unwrap();
                return out.freeze();
            }
            if r.share_session_epoch == 0 {
                session.clear();
            }
            // (topic, partition) → whether the request carries acks for it
            let mut partitions: BTreeMap<(Uuid, i32), bool> = BTreeMap::new();
            let mut ack_errors: HashMap<i32, i16> = HashMap::new();
            for t in &r.topics {
                for p in &t.partitions {
                    session.insert((t.topic_id, p.partition_index));
                    partitions.insert(
                        (t.topic_id, p.partition_index),
                        !p.acknowledgement_batches.is_empty(),
                    );
                    let batches: Vec<(i64, i64, Vec<i8>)> = p
                        .acknowledgement_batches
                        .iter()
                        .map(|b| (b.first_offset, b.last_offset, b.acknowledge_types.clone()))
                        .collect();
                    ack_errors.insert(
                        p.partition_index,
                        script.ack_error(p.partition_index, &batches),
                    );
                }
            }
            for t in &r.forgotten_topics_data {
                for p in &t.partitions {
                    session.remove(&(t.topic_id, *p));
                }
            }
            for key in session.iter() {
                if script.partition_errors.contains_key(&key.1) {
                    partitions.entry(*key).or_insert(false);
                }
            }
            if r.share_session_epoch == -1 {
                session.clear();
            }
            // Records from the log, partition by partition, until the ask is met.
            let mut handed: BTreeMap<(Uuid, i32), (i64, i64)> = BTreeMap::new();
            if let Some(log) = script.log.as_mut() {
                for t in &r.topics {
                    for p in &t.partitions {
                        if ack_errors.get(&p.partition_index) != Some(&NONE) {
                            continue;
                        }
                        for b in &p.acknowledgement_batches {
                            log.settle(
                                p.partition_index,
                                b.first_offset,
                                b.last_offset,
                                &b.acknowledge_types,
                            );
                        }
                    }
                }
                let mut ask = i64::from(r.max_records);
                for key in session.iter() {
                    if let Some((first, last)) = log.take(key.1, ask) {
                        handed.insert(*key, (first, last));
                        partitions.entry(*key).or_insert(false);
                        ask -= last - first + 1;
                    }
                }
            }
            let mut served: HashMap<(Uuid, i32), Served> = HashMap::new();
            if r.max_records > 0 {
                for key in session.iter() {
                    if let Some(records) = script.records.remove(&key.1) {
                        partitions.entry(*key).or_insert(false);
                        served.insert(*key, records);
                    }
                }
            }
            let mut by_topic: BTreeMap<Uuid, Vec<kfr::PartitionData>> = BTreeMap::new();
            for ((topic, partition), acked) in partitions {
                let fetch = script
                    .partition_errors
                    .get(&partition)
                    .map_or(NONE, |e| e.0);
                let ack = ack_errors.get(&partition).copied().unwrap_or(NONE);
                let mut data = kfr::PartitionData::default()
                    .with_partition_index(partition)
                    .with_error_code(fetch)
                    .with_acknowledge_error_code(if acked { ack } else { NONE });
                if let Some((first, last)) = handed.get(&(topic, partition)) {
                    data.records = Some(encoded(*first, *last));
                    data.acquired_records = vec![kfr::AcquiredRecords::default()
                        .with_first_offset(*first)
                        .with_last_offset(*last)
                        .with_delivery_count(1)];
                } else if let Some((records, acquired)) = served.remove(&(topic, partition)) {
                    data.records = (!records.is_empty()).then_some(records);
                    data.acquired_records = acquired
                        .into_iter()
                        .map(|(first, last)| {
                            kfr::AcquiredRecords::default()
                                .with_first_offset(first)
                                .with_last_offset(last)
                                .with_delivery_count(1)
                        })
                        .collect();
                }
                by_topic.entry(topic).or_default().push(data);
            }
            response.responses = by_topic
                .into_iter()
                .map(|(topic, partitions)| {
                    kfr::ShareFetchableTopicResponse::default()
                        .with_topic_id(topic)
                        .with_partitions(partitions)
                })
                .collect();
            response.encode(&mut out, version).unwrap();
        }
        Seen::Ack(r) => {
            if r.share_session_epoch == -1 {
                session.clear();
            }
            if let Some(log) = script.log.as_mut() {
                for t in &r.topics {
                    for p in &t.partitions {
                        for b in &p.acknowledgement_batches {
                            log.settle(
                                p.partition_index,
                                b.first_offset,
                                b.last_offset,
                                &b.acknowledge_types,
                            );
                        }
                    }
                }
            }
            let response = ShareAcknowledgeResponse::default().with_responses(
                r.topics
                    .iter()
                    .map(|t| {
                        kar::ShareAcknowledgeTopicResponse::default()
                            .with_topic_id(t.topic_id)
                            .with_partitions(
                                t.partitions
                                    .iter()
                                    .map(|p| {
                                        let batches: Vec<(i64, i64, Vec<i8>)> = p
                                            .acknowledgement_batches
                                            .iter()
                                            .map(|b| {
                                                (
                                                    b.first_offset,
                                                    b.last_offset,
                                                    b.acknowledge_types.clone(),
                                                )
                                            })
                                            .collect();
                                        let code = script.ack_error(p.partition_index, &batches);
                                        kar::PartitionData::default()
                                            .with_partition_index(p.partition_index)
                                            .with_error_code(code)
                                    })
                                    .collect(),
                            )
                    })
                    .collect(),
            );
            response.encode(&mut out, version).unwrap();
        }
    }
    out.freeze()
}
