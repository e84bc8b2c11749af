"""Record batches no honest producer writes, produced as they are (a raw Produce request): a
compression bomb (records of zeros, gzip: 300 MiB in about 300 KiB) and a header flood (one
record with millions of empty headers, two bytes each). Both are valid magic-v2 batches that a
broker takes as a producer sent them (`compression.type=producer`). The Python twin of
`rust/testkit/src/hostile.rs`, standard library only: Kafka's own producer would have to hold
the uncompressed records (and millions of header objects) to write them. The batches and the
Produce request are harness/kafka_wire.py's; `plain_batch` (from there) builds an honest batch
on the same path, for producing small batches often without a JVM per call.
"""

from __future__ import annotations

import zlib
from typing import Iterator

from harness.kafka_wire import Connection, batch, plain_batch, produce, varint

__all__ = ["compression_bomb", "header_flood", "plain_batch", "produce_batch"]


def _gzip(chunks: Iterator[bytes]) -> bytes:
    z = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: the gzip format Kafka reads
    out = [z.compress(c) for c in chunks]
    out.append(z.flush())
    return b"".join(out)


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

    return batch(records, _gzip(chunks()), attributes=1)


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

    return batch(1, _gzip(chunks()), attributes=1)


def produce_batch(bootstrap: str, topic: str, partition: int, data: bytes,
                  timeout: float = 60) -> int:
    """Produces `data` as it is (acks=all, no retry) to the broker at `bootstrap`, the
    partition's leader; returns its base offset, raises on an error code."""
    with Connection(bootstrap.split(",")[0], timeout) as conn:
        error, base_offset, message = produce(conn, topic, partition, data)
    if error != 0:
        raise RuntimeError(f"Produce to {topic}-{partition} failed with error code {error}: "
                           f"{message}")
    return base_offset
