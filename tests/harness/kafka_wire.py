"""Kafka's wire protocol for the harness's everyday calls, standard library only: create and
delete topics, list them, read end offsets, set and describe configs, and produce records
(idempotent, acks=all, keys partitioned as Kafka's producer does). Each call used to start a
JVM of Kafka's tools (a ConsoleProducer, TopicCommand or ConfigCommand costs 2-3 CPU seconds to
start, a sixth of the e2e stage's CPU); the tools stay for everything else. Only non-flexible
request versions are used (no tagged fields), each within what Kafka 4.2-4.4 brokers accept,
against a PLAINTEXT listener.

The record batches (magic v2) are built here too, for honest records and, by
tests/e2e/hostile_records.py, for the batches no honest producer writes."""

from __future__ import annotations

import socket
import struct
import time
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from harness.common import HarnessError

CLIENT_ID = "sharesink-harness"

# API keys and the versions used (all non-flexible; the newest such each broker 4.2+ accepts).
PRODUCE, PRODUCE_V = 0, 8
LIST_OFFSETS, LIST_OFFSETS_V = 2, 5
METADATA, METADATA_V = 3, 8
CREATE_TOPICS, CREATE_TOPICS_V = 19, 4
DELETE_TOPICS, DELETE_TOPICS_V = 20, 3
INIT_PRODUCER_ID, INIT_PRODUCER_ID_V = 22, 1
DESCRIBE_CONFIGS, DESCRIBE_CONFIGS_V = 32, 1
INCREMENTAL_ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS_V = 44, 0

# Config resource types, by ConfigCommand's --entity-type.
RESOURCE_TYPES = {"topics": 2, "brokers": 4, "groups": 32}
SET, DELETE = 0, 1

# Error codes the calls act on.
NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
LEADER_NOT_AVAILABLE = 5
NOT_LEADER_OR_FOLLOWER = 6
REQUEST_TIMED_OUT = 7
NETWORK_EXCEPTION = 13
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_ENOUGH_REPLICAS = 19
NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
TOPIC_ALREADY_EXISTS = 36
DUPLICATE_SEQUENCE_NUMBER = 46
# What a broker answers while a topic's partitions or a leader are still coming up: the request
# did not change the log, so it is sent again.
RETRIABLE = {UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER,
             REQUEST_TIMED_OUT, NETWORK_EXCEPTION, COORDINATOR_LOAD_IN_PROGRESS,
             COORDINATOR_NOT_AVAILABLE, NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_AFTER_APPEND}

# A produced batch's uncompressed size at most: well under a broker's default
# max.message.bytes (1 MiB) and message.max.bytes.
BATCH_BYTES = 512 * 1024


class KafkaWireError(HarnessError):
    """A broker answered with an error code (`code`)."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


# ---- encoding


def _i8(v: int) -> bytes:
    return struct.pack(">b", v)


def _i16(v: int) -> bytes:
    return struct.pack(">h", v)


def _i32(v: int) -> bytes:
    return struct.pack(">i", v)


def _i64(v: int) -> bytes:
    return struct.pack(">q", v)


def _string(s: Optional[str]) -> bytes:
    if s is None:
        return _i16(-1)
    b = s.encode()
    return _i16(len(b)) + b


def _array(items: Sequence[bytes]) -> bytes:
    return _i32(len(items)) + b"".join(items)


class _Reader:
    """Reads a non-flexible response body in order."""

    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def _take(self, fmt: str):
        v = struct.unpack_from(fmt, self.data, self.at)[0]
        self.at += struct.calcsize(fmt)
        return v

    def i8(self) -> int:
        return self._take(">b")

    def i16(self) -> int:
        return self._take(">h")

    def i32(self) -> int:
        return self._take(">i")

    def i64(self) -> int:
        return self._take(">q")

    def string(self) -> Optional[str]:
        n = self.i16()
        if n < 0:
            return None
        s = self.data[self.at:self.at + n].decode()
        self.at += n
        return s

    def array(self, item: Callable[[], object]) -> list:
        n = self.i32()
        return [item() for _ in range(max(n, 0))]


# ---- record batches (magic v2)

_CRC32C_TABLE: List[int] = []


def _crc32c_table() -> List[int]:
    if not _CRC32C_TABLE:
        for n in range(256):
            c = n
            for _ in range(8):
                c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
            _CRC32C_TABLE.append(c)
    return _CRC32C_TABLE


def crc32c(data: bytes) -> int:
    table, crc = _crc32c_table(), 0xFFFFFFFF
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def varint(value: int) -> bytes:
    """Kafka's zig-zag varint."""
    v = ((value << 1) ^ (value >> 63)) & ((1 << 64) - 1)
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def batch(record_count: int, body: bytes, attributes: int = 0, producer_id: int = -1,
          producer_epoch: int = -1, base_sequence: int = -1) -> bytes:
    """A magic-v2 batch of `record_count` records in `body`; attributes 0: uncompressed,
    1: gzip. The producer id, epoch and sequence make it an idempotent producer's batch."""
    now = int(time.time() * 1000)
    after_crc = struct.pack(">hiqqqhii", attributes, record_count - 1, now, now, producer_id,
                            producer_epoch, base_sequence, record_count) + body
    head = struct.pack(">qiib", 0, 4 + 1 + 4 + len(after_crc), -1, 2)
    return head + struct.pack(">I", crc32c(after_crc)) + after_crc


def _bytes_field(b: Optional[bytes]) -> bytes:
    return varint(-1) if b is None else varint(len(b)) + b


def record(index: int, key: Optional[bytes], value: Optional[bytes],
           headers: Sequence[Tuple[bytes, Optional[bytes]]] = ()) -> bytes:
    """One record of a batch: offset and timestamp deltas `index` and 0."""
    rec = (b"\x00" + varint(0) + varint(index) + _bytes_field(key) + _bytes_field(value)
           + varint(len(headers)) + b"".join(varint(len(k)) + k + _bytes_field(v)
                                             for k, v in headers))
    return varint(len(rec)) + rec


Record = Tuple[Optional[bytes], Optional[bytes], Sequence[Tuple[bytes, Optional[bytes]]]]


def plain_batch(records: Sequence[Tuple[Optional[bytes], Optional[bytes]]]) -> bytes:
    """(key or None, value) pairs as one uncompressed batch, no producer id."""
    return batch(len(records), b"".join(record(i, k, v) for i, (k, v) in enumerate(records)))


# ---- partitioning as Kafka's producer does


def murmur2(data: bytes) -> int:
    """Kafka's `Utils.murmur2` (a signed 32-bit result)."""
    m, r, mask = 0x5BD1E995, 24, 0xFFFFFFFF
    length = len(data)
    h = (0x9747B28C ^ length) & mask
    for i in range(length // 4):
        k = int.from_bytes(data[4 * i:4 * i + 4], "little")
        k = (k * m) & mask
        k ^= k >> r
        k = (k * m) & mask
        h = (h * m) & mask
        h ^= k
    tail, rest = length & ~3, length % 4
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner gives a record with this serialized key."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


# ---- connections


class Connection:
    """One socket to one broker; requests one at a time."""

    def __init__(self, address: str, timeout: float):
        host, port = address.rsplit(":", 1)
        self.address = address
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.correlation = 0

    def request(self, api_key: int, version: int, body: bytes) -> _Reader:
        self.correlation += 1
        msg = _i16(api_key) + _i16(version) + _i32(self.correlation) + _string(CLIENT_ID) + body
        self.sock.sendall(_i32(len(msg)) + msg)
        size = struct.unpack(">i", self._read(4))[0]
        response = self._read(size)
        (correlation,) = struct.unpack_from(">i", response)
        if correlation != self.correlation:
            raise HarnessError(f"{self.address} answered request {correlation}, "
                               f"not {self.correlation}")
        reader = _Reader(response)
        reader.at = 4
        return reader

    def _read(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError(f"{self.address} closed the connection")
            out += chunk
        return bytes(out)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *_exc) -> None:
        self.close()


class Metadata:
    """Brokers and the partitions' leaders of some topics, as one broker sees them."""

    def __init__(self, brokers: Dict[int, str], topics: Dict[str, Tuple[int, Dict[int, int]]]):
        self.brokers = brokers
        # topic -> (error code, {partition: leader id})
        self.topics = topics


def _metadata(conn: Connection, topics: Optional[Sequence[str]]) -> Metadata:
    body = ((_i32(-1) if topics is None else _array([_string(t) for t in topics]))
            + _i8(0) + _i8(0) + _i8(0))  # no auto-creation, no authorized operations
    r = conn.request(METADATA, METADATA_V, body)
    r.i32()  # throttle

    def broker():
        node, host, port = r.i32(), r.string(), r.i32()
        r.string()  # rack
        return node, f"{host}:{port}"

    brokers = dict(r.array(broker))
    r.string()  # cluster id
    r.i32()  # controller

    def partition():
        error, index, leader = r.i16(), r.i32(), r.i32()
        r.i32()  # leader epoch
        r.array(r.i32)  # replicas
        r.array(r.i32)  # in-sync replicas
        r.array(r.i32)  # offline replicas
        return index, (leader if error == NONE else -1)

    def topic():
        error, name = r.i16(), r.string()
        r.i8()  # internal
        partitions = dict(r.array(partition))
        r.i32()  # authorized operations
        return name, (error, partitions)

    found = dict(r.array(topic))
    r.i32()  # cluster authorized operations
    return Metadata(brokers, found)


class KafkaWire:
    """The calls, against the brokers of `bootstrap` (comma-separated host:port, PLAINTEXT)."""

    def __init__(self, bootstrap: str, timeout: float = 60):
        self.bootstrap = [b.strip() for b in bootstrap.split(",") if b.strip()]
        self.timeout = timeout

    def _any(self) -> Connection:
        errors = []
        for address in self.bootstrap:
            try:
                return Connection(address, self.timeout)
            except OSError as e:
                errors.append(f"{address}: {e}")
        raise HarnessError(f"no broker of {self.bootstrap} answers: {errors}")

    def metadata(self, topics: Optional[Sequence[str]]) -> Metadata:
        with self._any() as conn:
            return _metadata(conn, topics)

    def _until(self, what: str, attempt: Callable[[], Optional[object]], timeout: float):
        """Calls `attempt` until it returns something other than None (None: not yet)."""
        deadline = time.monotonic() + timeout
        while True:
            result = attempt()
            if result is not None:
                return result
            if time.monotonic() > deadline:
                raise HarnessError(f"{what}: not done after {timeout:.0f}s")
            time.sleep(0.1)

    def partitions(self, topic: str, timeout: float = 30) -> Dict[int, int]:
        """{partition: leader id} of `topic`, once every partition has a leader."""
        def attempt():
            error, leaders = self.metadata([topic]).topics.get(topic, (UNKNOWN_TOPIC_OR_PARTITION, {}))
            if error in RETRIABLE or not leaders or any(lead < 0 for lead in leaders.values()):
                return None
            if error != NONE:
                raise KafkaWireError(f"metadata of {topic}: error code {error}", error)
            return leaders
        return self._until(f"leaders of {topic}", attempt, timeout)

    def list_topics(self) -> List[str]:
        return sorted(self.metadata(None).topics)

    def create_topic(self, name: str, partitions: int, replication: int,
                     config: Optional[Mapping[str, object]] = None) -> None:
        """Creates `name` unless it exists (as `kafka-topics --create --if-not-exists`)."""
        configs = [_string(k) + _string(None if v is None else str(v))
                   for k, v in (config or {}).items()]
        body = (_array([_string(name) + _i32(partitions) + _i16(replication) + _array([])
                        + _array(configs)])
                + _i32(int(self.timeout * 1000)) + _i8(0))

        def attempt():
            with self._any() as conn:
                r = conn.request(CREATE_TOPICS, CREATE_TOPICS_V, body)
            r.i32()  # throttle
            (_, error, message), = r.array(lambda: (r.string(), r.i16(), r.string()))
            if error in (NONE, TOPIC_ALREADY_EXISTS):
                return True
            if error in RETRIABLE:
                return None
            raise KafkaWireError(f"creating topic {name}: error code {error}: {message}", error)
        self._until(f"creating topic {name}", attempt, self.timeout)

    def delete_topic(self, name: str) -> None:
        """Deletes `name` if it exists (as `kafka-topics --delete --if-exists`)."""
        body = _array([_string(name)]) + _i32(int(self.timeout * 1000))
        with self._any() as conn:
            r = conn.request(DELETE_TOPICS, DELETE_TOPICS_V, body)
        r.i32()
        (_, error), = r.array(lambda: (r.string(), r.i16()))
        if error not in (NONE, UNKNOWN_TOPIC_OR_PARTITION):
            raise KafkaWireError(f"deleting topic {name}: error code {error}", error)

    def _leader_connection(self, meta: Metadata, leader: int) -> Connection:
        return Connection(meta.brokers[leader], self.timeout)

    def end_offsets(self, topic: str) -> Dict[int, int]:
        """{partition: high watermark} of `topic` (ListOffsets, latest, read_uncommitted)."""
        def attempt():
            meta = self.metadata([topic])
            error, leaders = meta.topics.get(topic, (UNKNOWN_TOPIC_OR_PARTITION, {}))
            if error != NONE or any(lead < 0 for lead in leaders.values()):
                return None
            out: Dict[int, int] = {}
            by_leader: Dict[int, List[int]] = {}
            for p, lead in leaders.items():
                by_leader.setdefault(lead, []).append(p)
            for lead, ps in by_leader.items():
                body = (_i32(-1) + _i8(0) + _array([_string(topic) + _array(
                    [_i32(p) + _i32(-1) + _i64(-1) for p in ps])]))
                with self._leader_connection(meta, lead) as conn:
                    r = conn.request(LIST_OFFSETS, LIST_OFFSETS_V, body)
                r.i32()

                def part():
                    index, err = r.i32(), r.i16()
                    r.i64()  # timestamp
                    offset = r.i64()
                    r.i32()  # leader epoch
                    return index, err, offset

                for _, parts in r.array(lambda: (r.string(), r.array(part))):
                    for index, err, offset in parts:
                        if err in RETRIABLE:
                            return None
                        if err != NONE:
                            raise KafkaWireError(f"end offset of {topic}-{index}: error code {err}",
                                                 err)
                        out[index] = offset
            return out
        return self._until(f"end offsets of {topic}", attempt, self.timeout)

    def _config_connection(self, entity_type: str, name: str) -> Connection:
        """A specific broker's configs are that broker's to answer; the rest any broker's."""
        if entity_type == "brokers" and name:
            return Connection(self.metadata([]).brokers[int(name)], self.timeout)
        return self._any()

    def describe_configs(self, entity_type: str, name: str) -> Dict[str, Optional[str]]:
        """Every config of a topic, broker or group, defaults included, as {key: value} (None:
        no value, or a sensitive one not shown)."""
        body = _array([_i8(RESOURCE_TYPES[entity_type]) + _string(name) + _i32(-1)]) + _i8(0)
        with self._config_connection(entity_type, name) as conn:
            r = conn.request(DESCRIBE_CONFIGS, DESCRIBE_CONFIGS_V, body)
        r.i32()  # throttle

        def config():
            key, value = r.string(), r.string()
            r.i8()  # read only
            r.i8()  # source
            r.i8()  # sensitive
            r.array(lambda: (r.string(), r.string(), r.i8()))  # synonyms
            return key, value

        def result():
            error, message = r.i16(), r.string()
            r.i8()
            r.string()
            return error, message, dict(r.array(config))

        ((error, message, configs),) = r.array(result)
        if error != NONE:
            raise KafkaWireError(f"describing {entity_type} {name!r}: error code {error}: "
                                 f"{message}", error)
        return configs

    def alter_configs(self, entity_type: str, name: str,
                      set_: Optional[Mapping[str, object]] = None,
                      delete: Iterable[str] = ()) -> None:
        """Sets and deletes configs of a topic, broker (name "": every broker's default) or
        group, as `kafka-configs --alter --add-config/--delete-config` (IncrementalAlterConfigs)."""
        def text(v):
            return str(v).lower() if isinstance(v, bool) else str(v)

        configs = ([_string(k) + _i8(SET) + _string(text(v)) for k, v in (set_ or {}).items()]
                   + [_string(k) + _i8(DELETE) + _string(None) for k in delete])
        body = _array([_i8(RESOURCE_TYPES[entity_type]) + _string(name) + _array(configs)]) + _i8(0)
        with self._config_connection(entity_type, name) as conn:
            r = conn.request(INCREMENTAL_ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS_V, body)
        r.i32()  # throttle
        ((error, message),) = r.array(lambda: (r.i16(), r.string(), r.i8(), r.string())[:2])
        if error != NONE:
            raise KafkaWireError(f"altering {entity_type} {name!r}: error code {error}: "
                                 f"{message}", error)

    def producer(self) -> "IdempotentProducer":
        return IdempotentProducer(self)


class IdempotentProducer:
    """Produces records with acks=all under one producer id: a batch sent again after an error
    is written once (the broker knows its sequence), so a retry never duplicates a record."""

    def __init__(self, wire: KafkaWire):
        self.wire = wire
        self.producer_id, self.epoch = self._init_producer_id()
        self.sequence: Dict[Tuple[str, int], int] = {}

    def _init_producer_id(self) -> Tuple[int, int]:
        def attempt():
            with self.wire._any() as conn:
                r = conn.request(INIT_PRODUCER_ID, INIT_PRODUCER_ID_V, _string(None) + _i32(60_000))
            r.i32()
            error, pid, epoch = r.i16(), r.i64(), r.i16()
            if error in RETRIABLE:
                return None
            if error != NONE:
                raise KafkaWireError(f"InitProducerId: error code {error}", error)
            return pid, epoch
        return self.wire._until("a producer id", attempt, self.wire.timeout)

    def send(self, topic: str, records: Sequence[Record]) -> int:
        """Every record in the log, in order per partition (or an exception); records with a key
        go to Kafka's partition for the key, the others round robin. Returns how many."""
        leaders = self.wire.partitions(topic)
        count = len(leaders)
        per_partition: Dict[int, List[Record]] = {}
        unkeyed = 0
        for rec in records:
            if rec[0] is not None:
                p = partition_for_key(rec[0], count)
            else:
                p, unkeyed = unkeyed % count, unkeyed + 1
            per_partition.setdefault(p, []).append(rec)
        for p, recs in sorted(per_partition.items()):
            for chunk in _chunks(recs):
                self._send_batch(topic, p, chunk)
        return len(records)

    def _send_batch(self, topic: str, partition: int, recs: Sequence[Record]) -> None:
        seq = self.sequence.get((topic, partition), 0)
        body = b"".join(record(i, k, v, h) for i, (k, v, h) in enumerate(recs))
        data = batch(len(recs), body, producer_id=self.producer_id, producer_epoch=self.epoch,
                     base_sequence=seq)
        def attempt():
            meta = self.wire.metadata([topic])
            leader = meta.topics.get(topic, (0, {}))[1].get(partition, -1)
            if leader < 0 or leader not in meta.brokers:
                return None
            try:
                with self.wire._leader_connection(meta, leader) as conn:
                    error, _base, message = produce(conn, topic, partition, data)
            except OSError:
                return None  # the same sequence again: written once however often it is sent
            if error in (NONE, DUPLICATE_SEQUENCE_NUMBER):
                return True
            if error in RETRIABLE:
                return None
            raise KafkaWireError(f"producing {len(recs)} records to {topic}-{partition}: error "
                                 f"code {error}: {message}", error)
        self.wire._until(f"producing to {topic}-{partition}", attempt, self.wire.timeout)
        self.sequence[(topic, partition)] = seq + len(recs)


def produce(conn: Connection, topic: str, partition: int, data: bytes
            ) -> Tuple[int, int, Optional[str]]:
    """Sends the batch `data` as it is to `partition`'s leader (acks=all): (error code, base
    offset, error message)."""
    request = (_string(None) + _i16(-1) + _i32(30_000)
               + _array([_string(topic) + _array([_i32(partition) + _i32(len(data)) + data])]))
    r = conn.request(PRODUCE, PRODUCE_V, request)

    def partition_response():
        index, error, base = r.i32(), r.i16(), r.i64()
        r.i64()  # log append time
        r.i64()  # log start offset
        r.array(lambda: (r.i32(), r.string()))  # record errors
        return index, error, base, r.string()

    ((_, ((_, error, base, message),)),) = r.array(
        lambda: (r.string(), r.array(partition_response)))
    return error, base, message


def _chunks(recs: Sequence[Record]) -> Iterable[Sequence[Record]]:
    start, size = 0, 0
    for i, (k, v, h) in enumerate(recs):
        n = 32 + len(k or b"") + len(v or b"") + sum(len(hk) + len(hv or b"") + 4 for hk, hv in h)
        if i > start and size + n > BATCH_BYTES:
            yield recs[start:i]
            start, size = i, 0
        size += n
    if start < len(recs):
        yield recs[start:]
