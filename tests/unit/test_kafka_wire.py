"""The harness's wire client (harness/kafka_wire.py) against Kafka's own reference values: the
murmur2 hash of Kafka's UtilsTest, the CRC-32C check value, zig-zag varints as Kafka writes
them, and a batch that splits where its size says."""

from __future__ import annotations

import struct

from harness.kafka_wire import (BATCH_BYTES, _chunks, crc32c, murmur2, partition_for_key,
                                plain_batch, varint)


def test_murmur2_matches_kafkas_utils_test():
    cases = {b"21": -973932308, b"foobar": -790332482,
             b"a-little-bit-long-string": -985981536,
             b"a-little-bit-longer-string": -1486304829,
             b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
             b"abc": 479470107}
    assert {k: murmur2(k) for k in cases} == cases


def test_partition_for_key_is_positive_hash_modulo():
    # -973932308 & 0x7fffffff = 1173551340; % 7 = 1173551340 - 7 * 167650191 = 3
    assert partition_for_key(b"21", 7) == 3
    assert all(0 <= partition_for_key(f"k{i}".encode(), 5) < 5 for i in range(100))


def test_crc32c_check_value():
    assert crc32c(b"123456789") == 0xE3069283


def test_varint_is_zig_zag():
    assert [varint(v) for v in (0, -1, 1, -2, 63, 64, 300)] == [
        b"\x00", b"\x01", b"\x02", b"\x03", b"\x7e", b"\x80\x01", b"\xd8\x04"]


def test_plain_batch_header_and_crc():
    data = plain_batch([(b"k", b"v"), (None, b"w")])
    base_offset, length, _epoch, magic = struct.unpack_from(">qiib", data)
    assert (base_offset, magic, length) == (0, 2, len(data) - 12)
    (crc,) = struct.unpack_from(">I", data, 17)
    assert crc == crc32c(data[21:])
    (count,) = struct.unpack_from(">i", data, 57)
    assert count == 2


def test_chunks_split_by_size_and_keep_order():
    big = b"x" * (BATCH_BYTES // 3)
    recs = [(None, big, []) for _ in range(7)]
    chunks = list(_chunks(recs))
    assert [len(c) for c in chunks] == [2, 2, 2, 1]
    assert [r for c in chunks for r in c] == recs
