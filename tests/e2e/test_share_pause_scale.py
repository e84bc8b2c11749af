"""Scenario 6: PAUSE / RESUME and a change of tasks.max during a run (FileStream sink).

- PAUSE stops writes within one cycle: once the connector and its tasks report PAUSED, records
  produced afterwards are not written for as long as it stays paused (20 s, below the lock
  duration); RESUME writes them, each once;
- tasks.max 3 -> 6 while a producer keeps records coming: no record lost or duplicated, and the
  output does not stop: the longest time without a new line while records were waiting is
  measured and must stay below 5 s (a stop-the-world pause of the sink would exceed it).
"""

from __future__ import annotations

import threading
import time

from harness.cluster import Cluster, Rest
from helpers import (FILE_SINK, STRING_CONVERTER, Progress, Sampler, connector_trace, count_figures,
                     delete_connector, file_line_count, file_lines, produce_values, record_figures,
                     share_config, start_connector, uniq, wait_for)

MAX_GAP_S = 5.0


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


def test_tasks_max_change_leaves_no_gap(cluster: Cluster, worker: Rest):
    name = uniq("scale-")
    out = cluster.state_dir / f"{name}.out"
    cluster.create_topic(name, partitions=3)
    values = [f"{name}-v{i:06d}" for i in range(24_000)]
    chunks = [values[i:i + 1000] for i in range(0, len(values), 1000)]
    produced = [0]

    def producer():
        for ch in chunks:
            produce_values(cluster, name, ch)
            produced[0] += len(ch)
            time.sleep(0.5)

    try:
        start_connector(worker, name, _cfg(cluster, name, out, 3), tasks=3)
        sampler = Sampler(lambda: (produced[0], file_line_count(out)), interval=0.25)
        sampler.start()
        th = threading.Thread(target=producer, daemon=True)
        th.start()
        wait_for("a third of the records produced", lambda: produced[0] >= len(values) // 3,
                 timeout=300)
        t_change = sampler.samples[-1][0] if sampler.samples else 0
        worker.put_connector(name, _cfg(cluster, name, out, 6))
        worker.wait_connector_running(name, tasks=6, timeout=120)
        th.join(timeout=600)
        Progress("all lines", lambda: file_line_count(out)).wait(
            len(values), stall=90, on_timeout=lambda: connector_trace(worker, name))
        samples = sampler.stop()
        # longest time without a new line while produced > written
        gap, gap_start, longest, longest_at = None, None, 0.0, None
        last_lines = -1
        for t, v in samples:
            if not isinstance(v, tuple):
                continue
            p, lines = v
            if lines != last_lines or lines >= p:
                if gap_start is not None and t - gap_start > longest:
                    longest, longest_at = t - gap_start, gap_start
                gap_start = None if lines >= p else t
                last_lines = lines
            elif gap_start is None:
                gap_start = t
        got = file_lines(out)
        figs = count_figures(values, got)
        record_figures("6b-tasks-max-change", **figs, tasks_before=3, tasks_after=6,
                       longest_output_gap_s=round(longest, 2),
                       gap_started_s_after_change=None if longest_at is None else round(longest_at - t_change, 2))
        assert figs["lost"] == 0 and figs["unexpected"] == 0, figs
        assert figs["duplicated"] == 0, f"{figs['duplicated']} duplicates after a tasks.max change"
        assert longest < MAX_GAP_S, (f"the output stopped for {longest:.1f}s while records were "
                                     f"waiting ({longest_at - t_change:+.1f}s from the change)")
    finally:
        delete_connector(worker, name)
