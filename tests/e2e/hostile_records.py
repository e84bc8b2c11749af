"""Record batches no honest producer writes, produced as they are (a raw Produce request): a
compression bomb (records of zeros, gzip: 300 MiB in about 300 KiB) and a header flood (one
record with millions of empty headers, two bytes each). Both are valid magic-v2 batches that a
broker takes as a producer sent them (`compression.type=producer`). The Python twin of
`rust/testkit/src/hostile.rs`, standard library only: Kafka's own producer would have to hold
the uncompressed records (and millions of header objects) to write them. `plain_batch` builds an
honest batch on the same path, for producing small batches often without a JVM per call.
"""

from __future__ import annotations

import socket
import struct
import time
import zlib
from typing import Callable, Iterator, List, Optional, Sequence, Tuple

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
    """Zig-zag varint, as record fields are written."""
    v = (value << 1) ^ (value >> 63)
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = v & 0x7F
        v >>= 7
        if v == 0:
            out.append(byte)
            return bytes(out)
        out.append(byte | 0x80)


def _gzip(chunks: Iterator[bytes]) -> bytes:
    z = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: the gzip format Kafka reads
    out = [z.compress(c) for c in chunks]
    out.append(z.flush())
    return b"".join(out)


def _batch(record_count: int, body: bytes, attributes: int = 1) -> bytes:
    """A magic-v2 batch of `record_count` records in `body`; attributes 1: gzip, 0: none."""
    now = int(time.time() * 1000)
    after_crc = struct.pack(">hiqqqhii", attributes, record_count - 1, now, now, -1, -1, -1,
                            record_count) + body
    head = struct.pack(">qiib", 0, 4 + 1 + 4 + len(after_crc), -1, 2)
    return head + struct.pack(">I", crc32c(after_crc)) + after_crc


def compression_bomb(records: int, value_len: int) -> bytes:
    """`records` records of `value_len` zero bytes each, as one gzip batch."""
    zeros = bytes(1 << 20)

    def chunks() -> Iterator[bytes]:
        for i in range(records):
            head = b"\x00" + varint(0) + varint(i) + varint(-1) + varint(value_len)
            yield varint(len(head) + value_len + 1) + head
            left = value_len
            while left > 0:
                n = min(left, len(zeros))
                yield zeros[:n]
                left -= n
            yield varint(0)  # no headers

    return _batch(records, _gzip(chunks()))


def plain_batch(records: Sequence[Tuple[Optional[bytes], bytes]]) -> bytes:
    """Honest records for once: (key or None, value) pairs as one uncompressed batch, for a test
    that produces small batches at a steady pace without a JVM per call (test_sink_matrix.py,
    the three-broker scenarios' live stream in tests/e2e_cluster/faults.py)."""
    body = bytearray()
    for i, (key, value) in enumerate(records):
        rec = (b"\x00" + varint(0) + varint(i)
               + (varint(-1) if key is None else varint(len(key)) + key)
               + varint(len(value)) + value + varint(0))
        body += varint(len(rec)) + rec
    return _batch(len(records), bytes(body), attributes=0)


def header_flood(headers: int) -> bytes:
    """One record (value b"flood") with `headers` headers, each an empty key and a null value,
    as one gzip batch."""
    value = b"flood"
    head = (b"\x00" + varint(0) + varint(0) + varint(-1) + varint(len(value)) + value
            + varint(headers))
    chunk = b"\x00\x01" * (1 << 19)

    def chunks() -> Iterator[bytes]:
        yield varint(len(head) + 2 * headers) + head
        left = headers
        while left > 0:
            n = min(left, 1 << 19)
            yield chunk[:2 * n]
            left -= n

    return _batch(1, _gzip(chunks()))


def _string(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def produce_batch(bootstrap: str, topic: str, partition: int, batch: bytes,
                  timeout: float = 60) -> int:
    """Produces `batch` as it is (Produce v8, acks=all) to the broker at `bootstrap`, the
    partition's leader; returns its base offset, raises on an error code."""
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    body = (struct.pack(">hhi", 0, 8, 1) + _string("sharesink-e2e-hostile")
            + struct.pack(">hhi", -1, -1, 30_000)
            + struct.pack(">i", 1) + _string(topic)
            + struct.pack(">iii", 1, partition, len(batch)) + batch)
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(struct.pack(">i", len(body)) + body)
        size = struct.unpack(">i", _read(s.recv, 4))[0]
        response = _read(s.recv, size)
    at = 4  # correlation id
    at += 4  # one topic
    name_len = struct.unpack_from(">h", response, at)[0]
    at += 2 + name_len + 4  # one partition
    _index, error, base_offset = struct.unpack_from(">ihq", response, at)
    if error != 0:
        raise RuntimeError(f"Produce to {topic}-{partition} failed with error code {error}")
    return base_offset


def _read(recv: Callable[[int], bytes], n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = recv(n - len(out))
        if not chunk:
            raise RuntimeError("the broker closed the connection")
        out += chunk
    return bytes(out)
