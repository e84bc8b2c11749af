"""Scenario 6: PAUSE / RESUME and a change of tasks.max during a run (FileStream sink).

- PAUSE stops writes within one cycle: once the connector and its tasks report PAUSED, records
  produced afterwards are not written for as long as it stays paused (20 s, below the lock
  duration); RESUME writes them, each once;
- tasks.max 3 -> 6 while a producer keeps records coming: no record lost or duplicated, and the
  output does not stop: the longest time without a new line while records were waiting is
  measured and must stay below 5 s of what the machine could do (a stop-the-world pause of the
  sink, waiting for record locks to expire (30 s) or sessions to time out (45 s), would exceed
  it). A backlog alone does not show this: the sink has drained 600,000 lines before the change
  took effect (0.75 s), so a stream keeps records coming from before the change until after it.

The gap is judged in machine seconds (harness/machine.py): each wall second of it counts the
share of a core a runnable thread could get then. On an idle machine that is the wall clock; in a
CI run with three stages side by side (15-minute load 14 on 2 cores) the restart of the tasks
left a 17.5 s gap on the wall clock. A pause that waits on a timer leaves the cores free, so it
is judged nearly on the wall clock.
"""

from __future__ import annotations

import threading
import time
from typing import List

import pytest

from harness.cluster import Cluster, Rest
from harness.machine import MachineTimeline
from helpers import (FILE_SINK, STRING_CONVERTER, LiveProducer, Progress, Sampler, connector_trace,
                     count_figures, delete_connector, file_line_count, file_lines, produce_values,
                     record_figures, share_config, start_connector, uniq, wait_for)

MAX_GAP_S = 5.0  # machine seconds (see above)
N_BACKLOG = 300_000  # the sink is busy when the change comes (it drains this in a second or two)
STREAM_CHUNK = 100
STREAM_AFTER_S = 3 * MAX_GAP_S  # the stream runs this long after the six tasks run


def _cfg(cluster, name, out, tasks):
    cfg = share_config(cluster, name, name, FILE_SINK, tasks, file=str(out))
    cfg.update({"key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER,
                "share.commit.interval.ms": "1000"})
    return cfg


def _all_state(worker: Rest, name: str, state: str) -> bool:
    st = worker.connector_status(name)
    return st["connector"]["state"] == state and st["tasks"] and \
        all(t["state"] == state for t in st["tasks"])


def test_pause_stops_writes_and_resume_continues(cluster: Cluster, worker: Rest):
    name = uniq("pause-")
    out = cluster.state_dir / f"{name}.out"
    cluster.create_topic(name, partitions=3)
    first = [f"{name}-a{i}" for i in range(5000)]
    second = [f"{name}-b{i}" for i in range(5000)]
    produce_values(cluster, name, first)
    try:
        start_connector(worker, name, _cfg(cluster, name, out, 3), tasks=3)
        Progress("lines before PAUSE", lambda: file_line_count(out)).wait(
            len(first), stall=90, on_timeout=lambda: connector_trace(worker, name))
        worker._retry_busy(lambda: worker.put(f"/connectors/{name}/pause"))
        wait_for("PAUSED", lambda: _all_state(worker, name, "PAUSED"), timeout=60)
        c0 = file_line_count(out)
        produce_values(cluster, name, second)
        time.sleep(20)
        c1 = file_line_count(out)
        worker._retry_busy(lambda: worker.put(f"/connectors/{name}/resume"))
        wait_for("RUNNING", lambda: _all_state(worker, name, "RUNNING"), timeout=60)
        Progress("lines after RESUME", lambda: file_line_count(out)).wait(
            len(first) + len(second), stall=90, on_timeout=lambda: connector_trace(worker, name))
        time.sleep(3)
        got = file_lines(out)
        figs = count_figures(first + second, got)
        record_figures("6a-pause-resume", **figs, lines_at_paused=c0,
                       lines_written_while_paused=c1 - c0)
        assert c1 == c0, f"{c1 - c0} lines were written while the connector was PAUSED"
        assert figs["lost"] == 0 and figs["duplicated"] == 0 and figs["unexpected"] == 0, figs
    finally:
        delete_connector(worker, name)


class _Stream(threading.Thread):
    """Keeps one console producer busy with unique values until stopped: records keep arriving
    at the producer's own pace (one acknowledged record at a time), so at every moment of the
    stream some record is waiting for the sink, however fast the sink drains them."""

    def __init__(self, cluster: Cluster, topic: str, prefix: str):
        super().__init__(daemon=True, name="stream")
        self.producer = LiveProducer(cluster, topic)
        self.prefix, self.values, self.error = prefix, [], None
        self._halt = threading.Event()

    def run(self):
        try:
            while not self._halt.is_set():
                chunk = [f"{self.prefix}-s{i:07d}" for i in range(len(self.values),
                                                                    len(self.values) + STREAM_CHUNK)]
                self.producer.send(chunk)  # blocks while the pipe is full: paced by the producer
                self.values.extend(chunk)
        except Exception as e:  # noqa: BLE001 - reported by stop()
            self.error = e

    def close(self) -> int:
        self._halt.set()
        if self.is_alive():
            self.join(timeout=120)
        return self.producer.close(timeout=120)

    def stop(self) -> List[str]:
        """Stops sending; every value returned is in the log once the producer exited 0."""
        rc = self.close()
        assert self.error is None and rc == 0, f"the stream's producer failed: rc={rc} {self.error}"
        return self.values


# The gap it judges (a few machine seconds) is the machine's as much as the runtime's: run alone.
@pytest.mark.alone
def test_tasks_max_change_leaves_no_gap(cluster: Cluster, worker: Rest):
    """A backlog is produced first and a stream keeps records coming until STREAM_AFTER_S after
    the six tasks run, so records are waiting during the whole change however fast the sink is:
    any interval without a new line in that window is a gap of the sink's output."""
    name = uniq("scale-")
    out = cluster.state_dir / f"{name}.out"
    cluster.create_topic(name, partitions=3)
    backlog = [f"{name}-v{i:06d}" for i in range(N_BACKLOG)]
    produce_values(cluster, name, backlog)
    stream = _Stream(cluster, name, name)
    try:
        start_connector(worker, name, _cfg(cluster, name, out, 3), tasks=3)
        stream.start()
        sampler = Sampler(lambda: file_line_count(out), interval=0.2)
        sampler.start()
        machine = MachineTimeline()
        machine.start()
        wait_for("a sixth of the backlog", lambda: file_line_count(out) >= N_BACKLOG // 6,
                 timeout=300, interval=0.1, on_timeout=lambda: connector_trace(worker, name))
        t_change = time.monotonic() - sampler.t0
        lines_at_change = file_line_count(out)
        worker.put_connector(name, _cfg(cluster, name, out, 6))
        worker.wait_connector_running(name, tasks=6, timeout=120)
        six_running_s = time.monotonic() - sampler.t0 - t_change
        lines_at_six = file_line_count(out)
        time.sleep(STREAM_AFTER_S)
        streamed = stream.stop()
        t_stream_end = time.monotonic() - sampler.t0
        values = backlog + streamed
        Progress("all lines", lambda: file_line_count(out)).wait(
            len(values), stall=90, on_timeout=lambda: connector_trace(worker, name))
        samples = [(t, v) for t, v in sampler.stop() if isinstance(v, int)]
        machine.stop()
        # longest time without a new line while the stream ran, from the change on
        longest, longest_at, last_t, last_v = 0.0, None, None, None
        for t, v in samples:
            if t < t_change or t > t_stream_end:
                last_t, last_v = t, v
                continue
            if v != last_v:
                if last_t is not None and t - last_t > longest:
                    longest, longest_at = t - last_t, last_t
                last_t, last_v = t, v
        # the gap in machine seconds: what a runnable thread could have done meanwhile
        gap_slowdown = 1.0 if longest_at is None else machine.slowdown(
            sampler.t0 + longest_at, sampler.t0 + longest_at + longest)
        longest_machine = longest / gap_slowdown
        got = file_lines(out)
        figs = count_figures(values, got)
        record_figures("6b-tasks-max-change", **figs, tasks_before=3, tasks_after=6,
                       backlog=len(backlog), streamed=len(streamed),
                       lines_at_change=lines_at_change, lines_when_6_running=lines_at_six,
                       seconds_change_to_6_running=round(six_running_s, 2),
                       seconds_stream_after_change=round(t_stream_end - t_change, 2),
                       longest_output_gap_s=round(longest, 2),
                       gap_machine_slowdown=round(gap_slowdown, 2),
                       longest_output_gap_machine_s=round(longest_machine, 2),
                       gap_started_s_after_change=None if longest_at is None
                       else round(longest_at - t_change, 2))
        assert figs["lost"] == 0 and figs["unexpected"] == 0, figs
        assert figs["duplicated"] == 0, f"{figs['duplicated']} duplicates after a tasks.max change"
        assert longest_machine < MAX_GAP_S, (
            f"the output stopped for {longest:.1f}s while records were waiting "
            f"({longest_at - t_change:+.1f}s from the change): {longest_machine:.1f} machine "
            f"seconds, the machine {gap_slowdown:.1f} times slower than the wall clock then")
    finally:
        stream.close()
        delete_connector(worker, name)
