"""Scenario 10 (durability): records redelivered below the last commit, then kill -9 of the worker.

Two tasks share one partition; the sink is the tests' own buffering sink (tests/sinks/
buffering-sink, flush mode: put only buffers, preCommit writes + fsyncs, then returns the offsets
it was given). A sink of the tests' own, because the S3/HDFS/GCS-style sinks that buffer until
flush are not served by the registries here, and Kafka's FileStream sink hands every line to the
OS inside put, so a kill -9 cannot show the defect with it.

1. Task A (whichever task puts the first records: it claims role A) holds records 0..k, put and
   buffered, never committed: commits run only when the test asks (share.commit.max.records=0,
   share.commit.interval.ms at its longest for the 60 s lock).
2. Task B (the other task, claiming role B when it puts records too; rounds of records are
   produced until B has put an offset above all A holds) is asked to commit: its preCommit
   writes and fsyncs what it buffered and returns an offset above everything A holds.
3. A's put throws (share.task.restart.max.attempts=0): the Connect task FAILs and releases what
   it held, so those lower offsets are redelivered to B, which puts them (buffered only).
4. kill -9 of the worker before B's next commit; restart; every put now asks for a commit
   (marker any.commit), so the sink drains.

Expected: every produced record is in the sink's durable files at least once (0 lost);
duplicates are counted. A record may be ACCEPTed only once a preCommit called after its put
covered it; B's earlier commit covered the redelivered offsets' range before they were put, so
ACCEPTing them on B's next put (its per-partition committed offset only rises) loses them.
"""

from __future__ import annotations

import time

from buffering_sink import BUFFERING_SINK, BufferingSink, drain_after_kill, describe_records, wait_until
from harness.cluster import Cluster, Rest, default_plugin_archive
from helpers import (LiveProducer, LogMark, delete_connector, group_of, record_figures,
                     share_config, share_group_offsets, start_connector, task_states,
                     uniq, wait_for)

LOCK_MS = 60_000           # the broker's maximum; commits only on request need a long interval
COMMIT_MS = LOCK_MS // 2   # the longest share.commit.interval.ms the connector accepts for it
FIRST = 20                 # records produced before the connector starts: all go to task A
ROUND = 10                 # then rounds of this many until the other task has put some (B)


def now_ms() -> int:
    return int(time.time() * 1000)


def test_redelivered_below_the_last_commit_survive_kill_9(cluster: Cluster, worker: Rest):
    name = uniq("redeliv_")
    topic = name
    group = group_of(name)
    cluster.create_topic(topic, partitions=1)
    sink = BufferingSink(cluster, name)
    cfg = share_config(cluster, name, topic, BUFFERING_SINK, 2)
    cfg.update(sink.settings())
    cfg.update({"share.record.lock.duration.ms": str(LOCK_MS),
                "share.commit.interval.ms": str(COMMIT_MS),
                "share.commit.max.records": "0",
                "share.task.restart.max.attempts": "0"})
    produced = []
    producer = LiveProducer(cluster, topic)

    def produce(n: int) -> None:
        values = [f"{name}-{len(produced) + i:05d}" for i in range(n)]
        producer.send(values)
        produced.extend(values)

    log = LogMark(cluster, 0)
    t0 = time.monotonic()
    killed = False
    fig = {"tasks": 2, "partitions": 1}   # recorded on every path, also when a step fails

    def diagnostics() -> str:
        lines = [l for l in log.text().splitlines()
                 if name in l and any(k in l for k in (
                     "delivered again", "lost their acquisition", "task failed", "threw",
                     " ERROR ", " WARN "))]
        return (f"\n--- roles: {sink.roles()}\n--- task states: {task_states(worker, name)}"
                f"\n--- sink trace (last events):\n{sink.trace_tail(30)}"
                f"\n--- worker log (adapter warnings, redeliveries):\n" + "\n".join(lines[-25:]))

    try:
        produce(FIRST)
        start_connector(worker, name, cfg, tasks=2)
        wait_for("a task put the first records (role A)", lambda: "A" in sink.roles(),
                 timeout=90, on_timeout=diagnostics)
        for _ in range(12):
            if "B" in sink.roles():
                break
            produce(ROUND)
            wait_until(lambda: "B" in sink.roles() or len(sink.put_records()) >= len(produced), 20)
        roles = sink.roles()
        assert "B" in roles, f"the second task never got records{diagnostics()}"
        a, b = roles["A"], roles["B"]
        fig.update(role_a_task=a, role_b_task=b)
        # More rounds until B has put an offset above every record A holds, so B's commit
        # covers all of them (the broker may have split the first records between the two).
        def b_above_a() -> bool:
            a_offs = [o for _, _, o in sink.put_records(a)]
            b_offs = [o for _, _, o in sink.put_records(b)]
            return bool(a_offs and b_offs) and max(b_offs) > max(a_offs)
        for _ in range(12):
            if b_above_a():
                break
            produce(ROUND)
            wait_until(lambda: len(sink.put_records()) >= len(produced), 20)

        # B commits: preCommit writes + fsyncs its buffer and returns an offset above A's records.
        t_commit = now_ms()
        sink.mark("B", "commit")
        ev = wait_for("B's requested preCommit",
                      lambda: next(iter(sink.events("precommit", b, t_commit)), None),
                      timeout=30, on_timeout=diagnostics)
        b_commit = (ev.offsets("returned") or {}).get((topic, 0))
        a_held = sink.put_records(a)
        a_commits = sink.events("precommit", a)
        below = {r for r in a_held if b_commit is not None and r[2] < b_commit}
        fig.update(a_held=len(a_held), b_committed_offset=b_commit, a_held_below_b_commit=len(below))
        assert not a_commits and below, (
            "scenario not reached: A must hold records below B's commit without having committed "
            f"them (A committed: {[str(e) for e in a_commits]}, B returned {b_commit}, A holds "
            f"{describe_records(a_held)}){diagnostics()}")

        # A fails: its Connect task FAILs and releases what it held; B gets those records again.
        t_fail = now_ms()
        sink.mark("A", "fail")
        wait_for(f"task {a} (role A) FAILED",
                 lambda: task_states(worker, name).get(int(a)) == "FAILED",
                 timeout=60, on_timeout=diagnostics)
        wait_for("B put A's records again", lambda: below <= sink.put_records(b, t_fail),
                 timeout=60, on_timeout=diagnostics)
        t_redelivered = now_ms()
        fig.update(redelivered_to_b=len(sink.put_records(b, t_fail)))
        # B's next idle puts (one per share.poll.timeout.ms, 1 s) run; whatever the adapter
        # acknowledges on them is sent. Then the worker dies before B's next commit.
        time.sleep(4)
        offsets_before_kill = share_group_offsets(cluster, group)
        fig["group_before_kill"] = {f"{t}-{p}": v for (t, p), v in offsets_before_kill.items()}
        # The test asks for no commit here; an adapter may still run one (that flushes the
        # redelivered records, which is fine): the kill then finds less to lose. Recorded.
        b_commits_since = sink.events("precommit", b, t_redelivered)
        fig["b_commits_between_redelivery_and_kill"] = len(b_commits_since)
        cluster.kill_worker(0)
        killed = True
        t_kill = time.monotonic()
        fig["in_sink_at_kill"] = sink.figures(produced)["in_sink"]

        # Restart; from now on every put asks for a commit, so whatever is redelivered is flushed.
        sink.mark("any", "commit", keep=True)
        cluster.start_worker(0, plugin_archive=default_plugin_archive())
        killed = False
        fig["seconds_kill_to_worker_up"] = round(time.monotonic() - t_kill, 1)
        # Not wait_connector_running, which fails on any FAILED task: task A FAILED before the
        # kill, and the status topic says so until its restarted task reports RUNNING.
        wait_for("both tasks RUNNING after the restart",
                 lambda: task_states(worker, name) == {0: "RUNNING", 1: "RUNNING"},
                 timeout=180, on_timeout=diagnostics)
        fig["seconds_kill_to_tasks_running"] = round(time.monotonic() - t_kill, 1)

        complete_s = drain_after_kill(cluster, sink, group, produced, t_kill, LOCK_MS)
        offsets_end = share_group_offsets(cluster, group)
        lost = sink.lost_values(produced)
        lost_offsets = sorted(int(v.rsplit("-", 1)[1]) for v in lost)
        redelivered_to_b = sink.put_records(b, t_fail)
        fig.update(group_at_end={f"{t}-{p}": v for (t, p), v in offsets_end.items()},
                   lost_offsets=describe_records((topic, 0, o) for o in lost_offsets),
                   seconds_kill_to_complete=complete_s)
        _record(fig, sink, produced, t0)
        assert not lost, (
            f"{len(lost)} of {len(produced)} records lost after kill -9: offsets "
            f"{describe_records((topic, 0, o) for o in lost_offsets)}; of those, "
            f"{len([o for o in lost_offsets if o < (b_commit or 0)])} are below B's commit "
            f"({b_commit}) and were redelivered to B ({describe_records(redelivered_to_b)}) "
            f"after it; share group before the kill: {offsets_before_kill}{diagnostics()}")
    except BaseException as e:
        if "produced" not in fig:   # a step failed before the end: record what is known
            fig["failed_step"] = (str(e).splitlines() or [type(e).__name__])[0][:300]
            _record(fig, sink, produced, t0)
        raise
    finally:
        producer.close()
        if killed or not cluster.is_running("worker-0"):
            cluster.start_worker(0, plugin_archive=default_plugin_archive())
        delete_connector(worker, name)


def _record(fig: dict, sink: BufferingSink, produced: list, t0: float) -> None:
    figs = sink.figures(produced)
    fig.update(produced=figs["produced"], in_sink=figs["in_sink"], lost=figs["lost"],
               duplicates=figs["duplicates"], unexpected=figs["unexpected"],
               total_seconds=round(time.monotonic() - t0, 1))
    record_figures("10-redelivered-below-commit-kill-9", **fig)
