"""Scenario 11 (durability): a sink whose preCommit returns {} until it rolls a file, then kill -9.

The tests' own buffering sink (tests/sinks/buffering-sink) in roll mode, as an S3-style file
committer: put only buffers; preCommit returns {} until ROLL records are buffered, then writes +
fsyncs them all ("rolls a file") and returns offsets covering exactly those. A sink of the tests'
own, because the S3/HDFS/GCS sinks are not served by the registries here, and Kafka's FileStream
sink hands every line to the OS inside put (a kill -9 cannot show the defect with it).

One task, two topics of one partition each; the group lends WINDOW records per partition
(share.partition.max.record.locks, the broker's minimum), and ROLL lies between WINDOW and
2 x WINDOW:

1. WINDOW records to topic a: the task puts them all, the in-flight window of a is full, and
   preCommit keeps returning {} (the test waits for several such commits);
2. kill -9 of the worker before anything rolled; restart;
3. ROLL - WINDOW records to topic b: with a's records redelivered, ROLL records are buffered, the
   sink rolls them, and the group has nothing left.

Expected: 0 lost (every record in the durable file); a warning naming
share.commit.empty.precommit while the task kept returning {} with its window full. The
connector's default for share.commit.empty.precommit is used (not set here).
"""

from __future__ import annotations

import time

from buffering_sink import BUFFERING_SINK, BufferingSink, drain_after_kill, describe_records
from harness.cluster import Cluster, Rest, default_plugin_archive
from helpers import (LogMark, delete_connector, group_of, produce_values, record_figures,
                     share_config, share_group_offsets, start_connector, uniq, wait_for)

WINDOW = 100       # share.partition.max.record.locks: the broker's minimum
ROLL = 150         # roll.records: more than one partition's window, less than two
LOCK_MS = 15_000   # the broker's minimum: the killed member's records come back soon
EMPTY_COMMITS = 3  # preCommits returning {} with the window full before the kill


def test_empty_precommit_until_roll_survives_kill_9(cluster: Cluster, worker: Rest):
    name = uniq("roll_")
    ta, tb = f"{name}_a", f"{name}_b"
    group = group_of(name)
    for t in (ta, tb):
        cluster.create_topic(t, partitions=1)
    sink = BufferingSink(cluster, name)
    cfg = share_config(cluster, name, f"{ta},{tb}", BUFFERING_SINK, 1)
    cfg.update(sink.settings(**{"roll.records": ROLL}))
    cfg.update({"share.partition.max.record.locks": str(WINDOW),
                "share.record.lock.duration.ms": str(LOCK_MS)})
    first = [f"{name}-a{i:04d}" for i in range(WINDOW)]
    second = [f"{name}-b{i:04d}" for i in range(ROLL - WINDOW)]
    produced = first + second
    log = LogMark(cluster, 0)
    t0 = time.monotonic()
    killed = False
    fig = {"tasks": 1, "topics": 2, "window": WINDOW, "roll_records": ROLL}

    def warnings() -> list:
        return [l for l in log.text().splitlines()
                if " WARN " in l and "share.commit.empty.precommit" in l]

    def diagnostics() -> str:
        lines = [l for l in log.text().splitlines() if name in l and (" WARN " in l or " ERROR " in l
                                                                     or "delivered again" in l)]
        return (f"\n--- sink trace (last events):\n{sink.trace_tail(30)}"
                f"\n--- worker log (warnings, redeliveries):\n" + "\n".join(lines[-25:]))

    try:
        produce_values(cluster, ta, first)
        start_connector(worker, name, cfg, tasks=1)
        wait_for(f"the task put the {WINDOW} records of {ta}",
                 lambda: len({r for r in sink.put_records() if r[0] == ta}) >= WINDOW,
                 timeout=90, on_timeout=diagnostics)
        t_full = int(time.time() * 1000)
        wait_for(f"{EMPTY_COMMITS} preCommits returning {{}} with the window full",
                 lambda: len([e for e in sink.events("precommit", since_ms=t_full)
                              if e.kv("returned") == "{}"]) >= EMPTY_COMMITS,
                 timeout=60, on_timeout=diagnostics)
        rolled_before = [e for e in sink.events("precommit") if e.kv("rolled")]
        assert not rolled_before, f"the sink rolled before the kill: {rolled_before[0]}"
        fig["warned_before_kill"] = len(warnings())
        fig["group_before_kill"] = {f"{t}-{p}": v for (t, p), v in
                                    share_group_offsets(cluster, group).items()}
        cluster.kill_worker(0)
        killed = True
        t_kill = time.monotonic()

        cluster.start_worker(0, plugin_archive=default_plugin_archive())
        killed = False
        fig["seconds_kill_to_worker_up"] = round(time.monotonic() - t_kill, 1)
        produce_values(cluster, tb, second)
        worker.wait_connector_running(name, tasks=1, timeout=180)
        fig["seconds_kill_to_tasks_running"] = round(time.monotonic() - t_kill, 1)

        complete_s = drain_after_kill(cluster, sink, group, produced, t_kill, LOCK_MS)
        lost = sink.lost_values(produced)
        rolls = [e for e in sink.events("precommit") if e.kv("rolled")]
        fig.update(rolls=len(rolls), seconds_kill_to_complete=complete_s,
                   warnings_empty_precommit=len(warnings()),
                   lost_records=describe_records(
                       (ta if v.startswith(f"{name}-a") else tb, 0, int(v[len(name) + 2:]))
                       for v in lost),
                   group_at_end={f"{t}-{p}": v for (t, p), v in
                                 share_group_offsets(cluster, group).items()})
        _record(fig, sink, produced, t0)
        problems = []
        if lost:
            problems.append(
                f"{len(lost)} of {len(produced)} records lost after kill -9 "
                f"({fig['lost_records']}): the sink never had them durably (its preCommit returned "
                f"{{}} until it rolled), yet the group has nothing left to deliver: "
                f"{fig['group_at_end']}")
        if not warnings():
            problems.append("no WARN naming share.commit.empty.precommit while the task kept "
                            f"returning {{}} with its in-flight window ({WINDOW}) full")
        assert not problems, "\n".join(problems) + diagnostics()
    except BaseException as e:
        if "produced" not in fig:
            fig["failed_step"] = (str(e).splitlines() or [type(e).__name__])[0][:300]
            _record(fig, sink, produced, t0)
        raise
    finally:
        if killed or not cluster.is_running("worker-0"):
            cluster.start_worker(0, plugin_archive=default_plugin_archive())
        delete_connector(worker, name)


def _record(fig: dict, sink: BufferingSink, produced: list, t0: float) -> None:
    figs = sink.figures(produced)
    fig.update(produced=figs["produced"], in_sink=figs["in_sink"], lost=figs["lost"],
               duplicates=figs["duplicates"], unexpected=figs["unexpected"],
               total_seconds=round(time.monotonic() - t0, 1))
    record_figures("11-empty-precommit-until-roll-kill-9", **fig)
