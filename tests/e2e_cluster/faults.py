"""What the three-broker scenarios share: a FileStream connector consuming a live stream while
a fault happens, and its figures (produced / in the sink / lost / duplicates / longest gap)."""

from __future__ import annotations

import threading
import time
from typing import Callable, Dict, List, Tuple

from harness.cluster import Cluster
from hostile_records import plain_batch, produce_batch
from helpers import (FILE_SINK, STRING_CONVERTER, Progress, Sampler, assert_no_failed_task,
                     connector_trace, count_figures, delete_connector, file_line_count, file_lines,
                     group_of, record_figures, share_config, share_group_offsets,
                     start_connector, uniq)

PARTITIONS = 6
TASKS = 6
CHUNK = 4_000


# One chunk every CHUNK_INTERVAL_S at most: about the pace the console producer's JVM per chunk
# kept on this machine, so the brokers and the sink see the load they saw before.
CHUNK_INTERVAL_S = 4.0


class PartitionProducer:
    """Raw Produce requests (acks=all, hostile_records.produce_batch) of plain batches straight to
    each partition's leader, no JVM per chunk (a console producer per chunk was a tenth of the
    stage's CPU). The leader is found by asking the brokers in turn: one that does not lead the
    partition answers NOT_LEADER_OR_FOLLOWER, one that is down refuses the connection."""

    def __init__(self, bootstrap: str, topic: str, partitions: int):
        self.brokers = [b.strip() for b in bootstrap.split(",") if b.strip()]
        self.topic, self.partitions = topic, partitions
        self._leader = {p: 0 for p in range(partitions)}

    def send(self, records: List[Tuple[bytes, bytes]]) -> None:
        """Every record in the log (or an exception): record i goes to partition i % partitions."""
        for p in range(self.partitions):
            batch = records[p::self.partitions]
            if batch:
                self._send(p, plain_batch(batch))

    def _send(self, partition: int, batch: bytes) -> None:
        errors = []
        for attempt in range(len(self.brokers)):
            i = (self._leader[partition] + attempt) % len(self.brokers)
            try:
                produce_batch(self.brokers[i], self.topic, partition, batch)
                self._leader[partition] = i
                return
            except (OSError, RuntimeError) as e:
                errors.append(f"{self.brokers[i]}: {e}")
        raise RuntimeError(f"no broker took the batch for {self.topic}-{partition}: {errors}")


class LiveProducer(threading.Thread):
    """Produces chunks of unique values until stopped (each chunk with acks=all, so a chunk that
    returns is in the log), a chunk every CHUNK_INTERVAL_S at most."""

    def __init__(self, cluster: Cluster, topic: str, prefix: str):
        super().__init__(daemon=True, name="live-producer")
        self.cluster, self.topic, self.prefix = cluster, topic, prefix
        self.values: List[str] = []
        self.failed: List[str] = []
        self._halt = threading.Event()
        self._producer = PartitionProducer(cluster.bootstrap, topic, PARTITIONS)

    def run(self):
        n = 0
        while not self._halt.is_set():
            started = time.monotonic()
            chunk = [f"{self.prefix}-v{i:08d}" for i in range(n, n + CHUNK)]
            records = [(f"k{i}".encode(), v.encode()) for i, v in zip(range(n, n + CHUNK), chunk)]
            # A chunk given up on during a fault may be in the log in part: it is sent again
            # until one run succeeds (a value twice in the log is fine: the sink is checked for
            # distinct values), so every value counted is in the log.
            for _ in range(10):
                try:
                    self._producer.send(records)
                    break
                except Exception as e:  # noqa: BLE001 - refused during a fault: again
                    self.failed.append(str(e)[:200])
                    time.sleep(2)
            else:
                raise RuntimeError(f"chunk {n} could not be produced: {self.failed[-1]}")
            self.values.extend(chunk)
            n += CHUNK
            self._halt.wait(max(0.0, CHUNK_INTERVAL_S - (time.monotonic() - started)))

    def stop(self) -> List[str]:
        self._halt.set()
        self.join(timeout=300)
        return self.values


def longest_gap(samples, until: float) -> float:
    """Longest time the line count did not grow, among samples taken before `until`."""
    longest, last_t, last_v = 0.0, None, None
    for t, v in samples:
        if not isinstance(v, int) or t > until:
            continue
        if last_v is None or v > last_v:
            if last_t is not None:
                longest = max(longest, t - last_t)
            last_t, last_v = t, v
    return round(longest, 1)


def run_fault(cluster: Cluster, scenario: str, fault: Callable[[str], Dict], rest_index: int = 0):
    """Starts the connector, produces a live stream, runs `fault(topic)` (extra figures back),
    stops producing, waits for every record and records the figures. 0 lost, no task FAILED,
    duplicates bounded by the in-flight window."""
    name = uniq("c3-")
    topic = name
    out = cluster.state_dir / f"{name}.out"
    cluster.create_topic(topic, partitions=PARTITIONS)
    cluster.wait_in_sync(topic)
    rest = cluster.rest(rest_index)
    cfg = share_config(cluster, name, topic, FILE_SINK, TASKS, file=str(out))
    cfg.update({"key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER,
                "share.commit.interval.ms": "1000"})
    producer = LiveProducer(cluster, topic, name)
    try:
        start_connector(rest, name, cfg, tasks=TASKS, timeout=180)
        producer.start()
        sampler = Sampler(lambda: file_line_count(out), interval=0.5)
        sampler.start()
        # The fault hits a stream that flows through the sink (a chunk written), and the stream
        # goes on until the sink wrote another chunk after it: the recovery is shown, not slept.
        Progress("lines in the file before the fault", lambda: file_line_count(out)).wait(
            CHUNK, stall=120, timeout=300)
        extra = fault(topic)
        after_fault = file_line_count(out)
        Progress("lines in the file after the fault", lambda: file_line_count(out)).wait(
            after_fault + CHUNK, stall=120, timeout=300)
        values = producer.stop()
        produced_at = time.monotonic() - sampler.t0
        def diagnostics():
            missing = sorted(set(values) - set(file_lines(out)))
            # A value missing from the log too was never produced: a harness fault, not a loss.
            in_log = set(cluster.consume(topic, max_messages=len(values) * 2, timeout_ms=20000))
            return (f"{len(missing)} missing, e.g. {missing[:5]}, of which "
                    f"{sum(v in in_log for v in missing)} are in the log; share group offsets "
                    f"{share_group_offsets(cluster, group_of(name))}\n"
                    + connector_trace(cluster.rest(0), name))

        Progress("lines in the file", lambda: len(set(file_lines(out)))).wait(
            len(set(values)), stall=120, timeout=600, on_timeout=diagnostics)
        samples = sampler.stop()
        assert_no_failed_task(cluster.rest(0), name)
        got = file_lines(out)
        figs = count_figures(values, got)
        gap = longest_gap(samples, produced_at)
        record_figures(scenario, brokers=3, partitions=PARTITIONS, tasks=TASKS,
                       produced=figs["produced"], in_sink=figs["distinct_delivered"],
                       lost=figs["lost"], duplicates=figs["duplicated"],
                       longest_gap_s=gap, producer_chunk_failures=len(producer.failed), **extra)
        assert figs["lost"] == 0, f"{figs['lost']} records never reached the file"
        assert figs["unexpected"] == 0
        # Duplicates: records redelivered after a fault, bounded by what was in flight (the
        # tasks' buffers and the group's record-lock windows: the broker's maximum, 4000 per
        # partition, which sharesink sets on the group by default).
        assert figs["duplicated"] <= PARTITIONS * 4_000, figs
        return figs
    finally:
        producer.stop()
        delete_connector(cluster.rest(0), name)
