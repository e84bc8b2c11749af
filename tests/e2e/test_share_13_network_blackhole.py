"""Scenario 13: the broker goes silent under a running connector (a network partition without RST).

Kafka's FileStream sink runs through sharesink with its share consumer on the broker's PROXIED
listener (`share.consumer.bootstrap.servers` = the harness's blackhole proxy; the worker itself
stays on the normal listener). With records flowing, the proxy stops forwarding for 60 s without
closing a socket, then either

- (a) resumes: the held bytes flow on the old connections, or
- (b) goes dead: the old connections stay silent forever, new ones forward.

Each time: every produced record reaches the file (0 lost; duplicates are allowed and reported),
no task FAILED, and the member's first record after the blackhole ends comes within a bound
derived from the configured request.timeout.ms (its last request's deadline, plus the long poll,
the reconnect backoff and a rejoin: the 60 s blackhole outlasts the 45 s session timeout).

(c) Deleting the connector during a blackhole: its tasks stop within Connect's task shutdown
grace (`task.shutdown.graceful.timeout.ms`, 5 s): the worker logs no failed graceful stop.

Both time bounds are a timer (on the wall clock) plus a slack for work, and the work is judged in
machine seconds (harness/machine.py: the share of a core a runnable thread could get meanwhile),
so that a machine loaded by other stages stretches the slack, not the verdict.
"""

from __future__ import annotations

import time

import pytest

from harness.cluster import Cluster, Rest
from harness.machine import MachineTimeline
from helpers import (FILE_SINK, STRING_CONVERTER, LogMark, Progress, assert_no_failed_task,
                     connector_trace, count_figures, delete_connector, file_line_count, file_lines,
                     produce_values, record_figures, share_config, start_connector, uniq,
                     wait_for)

BLACKHOLE_S = 60
REQUEST_TIMEOUT_MS = 15_000
# Past the old connection's request deadline: the long poll (fetch.max.wait.ms 500), the engine's
# reconnect backoff (0.5 s), a rejoin (the blackhole outlasts the session timeout; the coordinator
# assigns within a second or two) and a Connect poll cycle; machine seconds.
RECOVERY_SLACK_S = 10
TASKS = 2
PARTITIONS = 2
N_BEFORE = 2_000
N_DURING = 2_000
CONNECT_TASK_SHUTDOWN_S = 5  # task.shutdown.graceful.timeout.ms, the worker's default
STOP_SLACK_S = 2  # the tasks' own stop and their log lines, past the grace; machine seconds


@pytest.fixture
def proxy(cluster: Cluster):
    cluster.proxy_forward()
    yield cluster
    cluster.proxy_forward()


def _connector(cluster: Cluster, name: str, topic: str, out) -> dict:
    cfg = share_config(cluster, name, topic, FILE_SINK, TASKS, file=str(out))
    cfg.update({
        "share.consumer.bootstrap.servers": cluster.proxied_bootstrap,
        # The same cluster, reached directly: the admin client is not what this test cuts off.
        "admin.override.bootstrap.servers": cluster.bootstrap,
        "share.consumer.request.timeout.ms": str(REQUEST_TIMEOUT_MS),
        "key.converter": STRING_CONVERTER,
        "value.converter": STRING_CONVERTER,
        "share.commit.interval.ms": "1000",
    })
    return cfg


def _blackhole_then(cluster: Cluster, worker: Rest, end: str) -> None:
    name = uniq(f"bh{end}-")
    topic = name
    out = cluster.state_dir / f"{name}.out"
    cluster.create_topic(topic, partitions=PARTITIONS)
    values = [f"{name}-v{i:06d}" for i in range(N_BEFORE + N_DURING)]
    produce_values(cluster, topic, values[:N_BEFORE])
    try:
        start_connector(worker, name, _connector(cluster, name, topic, out), tasks=TASKS)
        Progress("lines before the blackhole", lambda: file_line_count(out)).wait(
            N_BEFORE, stall=90, timeout=300, on_timeout=lambda: connector_trace(worker, name))
        time.sleep(2)  # a commit cycle: what the file has is ACCEPTed
        mark = LogMark(cluster)  # what the members logged from the blackhole on, for a failure
        cluster.proxy_blackhole()
        hole_started = time.monotonic()
        produce_values(cluster, topic, values[N_BEFORE:])  # on the normal listener
        lines_in_hole = file_line_count(out)
        time.sleep(max(0.0, BLACKHOLE_S - (time.monotonic() - hole_started)))
        lines_at_end = file_line_count(out)
        assert_no_failed_task(worker, name)
        machine = MachineTimeline()
        machine.start()
        (cluster.proxy_resume if end == "resume" else cluster.proxy_dead)()
        switched = time.monotonic()
        blackhole_s = switched - hole_started
        wait_for("a record after the blackhole", lambda: file_line_count(out) > lines_at_end,
                 timeout=REQUEST_TIMEOUT_MS / 1000 + 120, interval=0.2,
                 on_timeout=lambda: connector_trace(worker, name))
        recovery_s = time.monotonic() - switched
        slowdown = machine.stop().slowdown(switched, switched + recovery_s)
        Progress("lines after the blackhole", lambda: len(set(file_lines(out)))).wait(
            len(values), stall=120, timeout=600, on_timeout=lambda: connector_trace(worker, name))
        total_s = time.monotonic() - hole_started
        assert_no_failed_task(worker, name)
        figs = count_figures(values, file_lines(out))
        bound_s = REQUEST_TIMEOUT_MS / 1000 + RECOVERY_SLACK_S * slowdown
        record_figures(f"13-network-blackhole-{end}", tasks=TASKS, partitions=PARTITIONS, **figs,
                       in_sink=len(set(file_lines(out)) & set(values)),
                       blackhole_s=round(blackhole_s, 1), request_timeout_ms=REQUEST_TIMEOUT_MS,
                       lines_written_during_blackhole=lines_at_end - lines_in_hole,
                       recovery_s=round(recovery_s, 2), recovery_bound_s=round(bound_s, 1),
                       machine_slowdown=round(slowdown, 2),
                       seconds_from_blackhole_to_all_records=round(total_s, 1))
        assert figs["lost"] == 0, f"{figs['lost']} records never reached the file"
        assert figs["unexpected"] == 0
        assert lines_at_end == lines_in_hole, "records arrived through a blackholed proxy"
        assert recovery_s < bound_s, (
            f"first record {recovery_s:.1f} s after the {end}, beyond request.timeout.ms "
            f"{REQUEST_TIMEOUT_MS} ms + {RECOVERY_SLACK_S} machine seconds ({bound_s:.1f} s, the "
            f"machine {slowdown:.1f} times slower than the wall clock); the worker logged for it:\n"
            + "\n".join(mark.lines(name)[-120:]))
    finally:
        delete_connector(worker, name)


def test_blackhole_then_resume_loses_nothing(proxy: Cluster, worker: Rest):
    _blackhole_then(proxy, worker, "resume")


def test_blackhole_then_dead_connections_loses_nothing(proxy: Cluster, worker: Rest):
    _blackhole_then(proxy, worker, "dead")


def test_deleting_the_connector_during_a_blackhole_stops_its_tasks_in_time(proxy: Cluster,
                                                                            worker: Rest):
    cluster = proxy
    name = uniq("bhdel-")
    topic = name
    out = cluster.state_dir / f"{name}.out"
    cluster.create_topic(topic, partitions=PARTITIONS)
    values = [f"{name}-v{i:05d}" for i in range(500)]
    produce_values(cluster, topic, values)
    try:
        start_connector(worker, name, _connector(cluster, name, topic, out), tasks=TASKS)
        Progress("lines", lambda: file_line_count(out)).wait(
            len(values), stall=90, timeout=300, on_timeout=lambda: connector_trace(worker, name))
        time.sleep(2)
        cluster.proxy_blackhole()
        time.sleep(REQUEST_TIMEOUT_MS / 1000 / 2)  # mid-way through the requests' deadlines
        mark = LogMark(cluster)
        machine = MachineTimeline()
        machine.start()
        asked = time.monotonic()
        worker.delete_connector(name)
        stopped = wait_for(
            f"all {TASKS} tasks stopped",
            lambda: len(mark.lines(rf"{name}-\d+.*share member stopped")) >= TASKS,
            timeout=60, interval=0.2, on_timeout=lambda: mark.text()[-4000:])
        stop_s = time.monotonic() - asked
        slowdown = machine.stop().slowdown(asked, asked + stop_s)
        stop_bound_s = CONNECT_TASK_SHUTDOWN_S + STOP_SLACK_S * slowdown
        time.sleep(1)
        failed = mark.lines(r"Graceful stop of task .*failed") + \
            mark.lines(rf"{name}.*did not (return|stop) in time")
        record_figures("13-network-blackhole-delete", tasks=TASKS, stop_s=round(stop_s, 2),
                       task_shutdown_grace_s=CONNECT_TASK_SHUTDOWN_S,
                       stop_bound_s=round(stop_bound_s, 1), machine_slowdown=round(slowdown, 2),
                       failed_graceful_stops=len(failed))
        assert stopped
        assert not failed, f"a task did not stop within Connect's shutdown grace: {failed}"
        assert stop_s < stop_bound_s, (
            f"the tasks took {stop_s:.1f} s to stop: more than the {CONNECT_TASK_SHUTDOWN_S} s "
            f"grace plus {STOP_SLACK_S} machine seconds ({stop_bound_s:.1f} s, the machine "
            f"{slowdown:.1f} times slower than the wall clock)")
    finally:
        cluster.proxy_dead()   # the held bytes of the old connections never arrive
        cluster.proxy_forward()
        delete_connector(worker, name)
