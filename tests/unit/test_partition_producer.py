"""The three-broker scenarios' raw producer (tests/e2e_cluster/faults.py): every batch reaches the
broker that takes it, found by asking the brokers in turn, against fake brokers that answer a
Produce request as Kafka does (NOT_LEADER_OR_FOLLOWER from a broker that does not lead the
partition) or refuse the connection (a broker that is down)."""

from __future__ import annotations

import socket
import struct
import sys
import threading
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e_cluster"))
from faults import PartitionProducer  # noqa: E402

NOT_LEADER_OR_FOLLOWER = 6


class FakeBroker(threading.Thread):
    """Answers each Produce request with `error` for partitions it does not lead, else success;
    records (partition, batch bytes) of what it took."""

    def __init__(self, leads: List[int]):
        super().__init__(daemon=True)
        self.leads = leads
        self.took: List[Tuple[int, bytes]] = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.address = f"127.0.0.1:{self.sock.getsockname()[1]}"

    def run(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                size = struct.unpack(">i", _read(conn, 4))[0]
                body = _read(conn, size)
                topic, partition, batch = _parse_produce(body)
                error = 0 if partition in self.leads else NOT_LEADER_OR_FOLLOWER
                if error == 0:
                    self.took.append((partition, batch))
                name = topic.encode()
                # A Produce v8 response to this request's correlation id: one topic, one
                # partition (error, base offset, log append time, log start offset, no record
                # errors, no message), then the throttle time.
                (correlation,) = struct.unpack_from(">i", body, 4)
                response = (struct.pack(">ii", correlation, 1) + struct.pack(">h", len(name))
                            + name + struct.pack(">iihq", 1, partition, error, 0 if error else 42)
                            + struct.pack(">qqih", -1, 0, 0, -1) + struct.pack(">i", 0))
                conn.sendall(struct.pack(">i", len(response)) + response)

    def close(self):
        self.sock.close()


def _read(conn: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = conn.recv(n - len(out))
        if not chunk:
            raise OSError("closed")
        out += chunk
    return out


def _parse_produce(body: bytes) -> Tuple[str, int, bytes]:
    at = 2 + 2 + 4  # api key, version, correlation id
    at += 2 + struct.unpack_from(">h", body, at)[0]  # client id
    at += 2 + 2 + 4  # transactional id (null), acks, timeout
    at += 4  # one topic
    n = struct.unpack_from(">h", body, at)[0]
    topic = body[at + 2:at + 2 + n].decode()
    at += 2 + n + 4  # one partition
    partition, size = struct.unpack_from(">ii", body, at)
    return topic, partition, body[at + 8:at + 8 + size]


@pytest.fixture
def brokers():
    made: Dict[str, Optional[FakeBroker]] = {}

    def make(leads: List[int]) -> FakeBroker:
        b = FakeBroker(leads)
        b.start()
        made[b.address] = b
        return b

    yield make
    for b in made.values():
        b.close()


def _down_address() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    address = f"127.0.0.1:{s.getsockname()[1]}"
    s.close()  # nothing listens there: connections are refused
    return address


def test_each_batch_reaches_the_leader_of_its_partition_past_a_follower_and_a_broker_down(brokers):
    follower, leader_of_0, leader_of_1 = brokers([]), brokers([0]), brokers([1])
    producer = PartitionProducer(",".join([_down_address(), follower.address,
                                           leader_of_0.address, leader_of_1.address]), "t", 2)
    records = [(f"k{i}".encode(), f"v{i}".encode()) for i in range(5)]
    producer.send(records)
    assert [p for p, _ in leader_of_0.took] == [0] and [p for p, _ in leader_of_1.took] == [1]
    assert follower.took == []
    # Records 0, 2, 4 to partition 0 and 1, 3 to partition 1, each batch whole.
    assert b"v0" in leader_of_0.took[0][1] and b"v4" in leader_of_0.took[0][1]
    assert b"v1" not in leader_of_0.took[0][1] and b"v3" in leader_of_1.took[0][1]

    # The leaders found are asked first next time: nothing goes to the others.
    producer.send(records)
    assert len(leader_of_0.took) == 2 and len(leader_of_1.took) == 2 and follower.took == []


def test_a_batch_no_broker_takes_is_an_error_naming_each_broker(brokers):
    follower = brokers([])
    down = _down_address()
    producer = PartitionProducer(f"{follower.address},{down}", "t", 1)
    with pytest.raises(RuntimeError) as e:
        producer.send([(b"k", b"v")])
    text = str(e.value)
    assert "t-0" in text and follower.address in text and down in text, text
    assert f"error code {NOT_LEADER_OR_FOLLOWER}" in text, text
