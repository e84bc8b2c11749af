"""Scenario 3: two Connect workers in one Connect cluster; `kill -9` of worker 1 in the middle
of a run. Every record must arrive; duplicates are counted and reported.

The sink is Debezium's JDBC sink with `insert.mode=insert` and no primary key, so a record
written twice is two rows: rows - distinct ids = duplicates, produced - distinct ids = lost.
Half the records are produced before the kill, half after it (the kill is mid-run whatever
the speed of the machine).
"""

from __future__ import annotations

import time

from harness.cluster import Cluster, Rest, default_plugin_archive
from helpers import (JDBC_SINK, Progress, connector_trace, delete_connector, group_of, jdbc_config,
                     pg_distinct_ids, pg_rows, produce_rows, record_figures,
                     settled_share_group_offsets, share_config, start_connector, stop_connector,
                     stop_worker_if_running, total_lag, uniq, wait_for)

N = 40_000
TASKS = 6


def test_kill_9_of_a_worker_loses_nothing(cluster: Cluster, worker: Rest, postgres):
    name = uniq("failover_")
    topic = table = name
    cluster.create_topic(topic, partitions=3)
    half = N // 2
    produce_rows(cluster, topic, range(0, half))
    cfg = share_config(cluster, name, topic, JDBC_SINK, TASKS)
    cfg.update(jdbc_config(postgres, **{"insert.mode": "insert", "primary.key.mode": "none",
                                        "batch.size": "500"}))
    group = group_of(name)
    try:
        cluster.start_worker(1, plugin_archive=default_plugin_archive())
        start_connector(worker, name, cfg, tasks=TASKS)

        def tasks_on_worker1():
            st = worker.connector_status(name)
            return [t["id"] for t in st["tasks"]
                    if t.get("worker_id", "").endswith(f":{cluster.worker_port(1)}")]

        # Connect spreads the tasks over both workers (possibly after a rebalance).
        on1 = wait_for("tasks assigned to worker 1", tasks_on_worker1, timeout=90)
        Progress("rows before the kill", lambda: pg_rows(cluster, table)).wait(
            N // 8, stall=120, timeout=600, on_timeout=lambda: connector_trace(worker, name))
        rows_at_kill = pg_rows(cluster, table)
        on1 = tasks_on_worker1()
        cluster.kill_worker(1)
        t_kill = time.monotonic()
        produce_rows(cluster, topic, range(half, N))

        Progress("distinct ids after the kill", lambda: pg_distinct_ids(cluster, table)).wait(
            N, stall=180, timeout=900, on_timeout=lambda: connector_trace(worker, name))
        complete_s = time.monotonic() - t_kill
        # Connect moves the killed worker's tasks to worker 0 only after the worker's session
        # timeout and scheduled.rebalance.max.delay.ms; the share group may have delivered
        # everything through the surviving tasks before that, so wait for the move.
        def all_running_on_worker0():
            st = worker.connector_status(name)
            tasks = st.get("tasks", [])
            ok = len(tasks) == TASKS and all(
                t.get("state") == "RUNNING"
                and t.get("worker_id", "").endswith(f":{cluster.worker_port(0)}") for t in tasks)
            return st if ok else None

        wait_for("all tasks RUNNING on worker 0 after the kill", all_running_on_worker0,
                 timeout=180, on_timeout=lambda: connector_trace(worker, name))
        time.sleep(3)
        stop_connector(worker, name)
        offs = settled_share_group_offsets(cluster, group)
        lag = total_lag(offs)
        rows = pg_rows(cluster, table)
        distinct = pg_distinct_ids(cluster, table)
        record_figures("3-kill-9-worker", tasks=TASKS, partitions=3, produced=N, delivered=rows,
                       distinct_delivered=distinct, duplicated=rows - distinct, lost=N - distinct,
                       tasks_on_killed_worker=len(on1), rows_at_kill=rows_at_kill,
                       seconds_from_kill_to_complete=round(complete_s, 1), group_lag_after_stop=lag)
        assert distinct == N, f"{N - distinct} records lost after kill -9"
        assert lag == 0, f"share group lag after the run: {offs}"
    finally:
        delete_connector(worker, name)
        stop_worker_if_running(cluster, 1)
