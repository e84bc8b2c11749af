"""Scenario 6: PAUSE / RESUME and a change of tasks.max during a run (FileStream sink).

- PAUSE stops writes within one cycle: once the connector and its tasks report PAUSED, records
  produced afterwards are not written for as long as it stays paused (20 s, below the lock
  duration); RESUME writes them, each once;
- tasks.max 3 -> 6 while a producer keeps records coming: no record lost or duplicated, and the
  output does not stop: the longest time without a new line while records were waiting is
  measured and must stay below 5 s (a stop-the-world pause of the sink would exceed it).
"""

from __future__ import annotations

import time

from harness.cluster import Cluster, Rest
from helpers import (FILE_SINK, STRING_CONVERTER, Progress, Sampler, connector_trace, count_figures,
                     delete_connector, file_line_count, file_lines, produce_values, record_figures,
                     share_config, start_connector, uniq, wait_for)

MAX_GAP_S = 5.0
N_SCALE = 600_000  # the sink writes tens of thousands of lines a second: a backlog that outlasts the change


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
    """A backlog is produced first, so records are waiting during the whole change: any
    interval without a new line is a gap of the sink's output, not a lack of input."""
    name = uniq("scale-")
    out = cluster.state_dir / f"{name}.out"
    cluster.create_topic(name, partitions=3)
    values = [f"{name}-v{i:06d}" for i in range(N_SCALE)]
    produce_values(cluster, name, values)
    try:
        start_connector(worker, name, _cfg(cluster, name, out, 3), tasks=3)
        sampler = Sampler(lambda: file_line_count(out), interval=0.2)
        sampler.start()
        wait_for("a sixth of the lines", lambda: file_line_count(out) >= N_SCALE // 6,
                 timeout=300, on_timeout=lambda: connector_trace(worker, name))
        t_change = time.monotonic() - sampler.t0
        lines_at_change = file_line_count(out)
        worker.put_connector(name, _cfg(cluster, name, out, 6))
        worker.wait_connector_running(name, tasks=6, timeout=120)
        six_running_s = time.monotonic() - sampler.t0 - t_change
        lines_at_six = file_line_count(out)
        Progress("all lines", lambda: file_line_count(out)).wait(
            N_SCALE, stall=90, on_timeout=lambda: connector_trace(worker, name))
        samples = [(t, v) for t, v in sampler.stop() if isinstance(v, int)]
        # longest time without a new line while the backlog was not done, from the change on
        longest, longest_at, last_t, last_v = 0.0, None, None, None
        for t, v in samples:
            if t < t_change or (last_v is not None and last_v >= N_SCALE):
                last_t, last_v = t, v
                continue
            if v != last_v:
                if last_t is not None and t - last_t > longest and last_v is not None and last_v < N_SCALE:
                    longest, longest_at = t - last_t, last_t
                last_t, last_v = t, v
        # the run may end inside a gap only if it reached N; otherwise Progress failed above
        got = file_lines(out)
        figs = count_figures(values, got)
        record_figures("6b-tasks-max-change", **figs, tasks_before=3, tasks_after=6,
                       lines_at_change=lines_at_change, lines_when_6_running=lines_at_six,
                       seconds_change_to_6_running=round(six_running_s, 2),
                       longest_output_gap_s=round(longest, 2),
                       gap_started_s_after_change=None if longest_at is None else round(longest_at - t_change, 2))
        assert lines_at_six < N_SCALE, "the backlog was gone before the change took effect; nothing measured"
        assert figs["lost"] == 0 and figs["unexpected"] == 0, figs
        assert figs["duplicated"] == 0, f"{figs['duplicated']} duplicates after a tasks.max change"
        assert longest < MAX_GAP_S, (f"the output stopped for {longest:.1f}s while records were "
                                     f"waiting ({longest_at - t_change:+.1f}s from the change)")
    finally:
        delete_connector(worker, name)
