"""Scenario 2: Debezium's JDBC sink (3.6.0.Final, its own plugin directory) into PostgreSQL
through sharesink: 100k JSON-with-schema records become rows; PostgreSQL is stopped for 60 s in
the middle of the run.

- nothing lost: every id is a row (count(DISTINCT id) = produced); with `insert.mode=insert`
  and no primary key, a record written twice is a second row, so duplicates are counted too;
- nothing archived by the broker: every id present (an archived record would be a missing
  row: each id is produced once) and the share group's lag is 0 at the end;
- recovery without intervention: no task FAILED at any time (sampled through the outage), no
  REST call between the outage and the end.

Debezium's own retry settings are what a classic-runtime operator sets to ride out a 60 s
outage (`flush.max.retries` x `flush.retry.delay.ms` > 60 s); Debezium 3.6 reports a write
failure only on the next put (connect-sink-contract.md §13), which sharesink must not ACCEPT
past.
"""

from __future__ import annotations

import time

import pytest

from harness.cluster import Cluster, Rest
from helpers import (JDBC_SINK, Progress, Sampler, connector_trace, delete_connector,
                     failed_task_trace, group_of, jdbc_config, pg_distinct_ids, pg_rows,
                     produce_rows, record_figures, share_config, share_group_offsets,
                     start_connector, stop_connector, task_states, total_lag, uniq)

N = 100_000
OUTAGE_S = 60
TASKS = 4


def test_jdbc_postgres_outage_loses_nothing(cluster: Cluster, worker: Rest, postgres):
    name = uniq("jdbc_outage_")
    topic = table = name
    classic = f"{name}_classic"      # the same sink on the classic runtime, through the same outage
    for t in (topic, classic):
        cluster.create_topic(t, partitions=3)
    half = N // 2
    for t in (topic, classic):
        produce_rows(cluster, t, range(0, half))

    sink_settings = jdbc_config(postgres, **{"insert.mode": "insert", "primary.key.mode": "none",
                                             "batch.size": "1000",
                                             "flush.max.retries": "200",
                                             "flush.retry.delay.ms": "1000"})
    cfg = share_config(cluster, name, topic, JDBC_SINK, TASKS)
    cfg.update(sink_settings)
    classic_cfg = {"connector.class": JDBC_SINK, "topics": classic, "tasks.max": "3", **sink_settings}
    group = group_of(name)
    t0 = time.monotonic()
    restarted = False
    try:
        start_connector(worker, name, cfg, tasks=TASKS)
        start_connector(worker, classic, classic_cfg, tasks=3)
        Progress("rows before the outage", lambda: pg_rows(cluster, table)).wait(
            N // 10, stall=120, timeout=600, on_timeout=lambda: connector_trace(worker, name))
        rows_at_outage = pg_rows(cluster, table)

        failures, classic_failures = [], []

        def watch():
            for n, acc in ((name, failures), (classic, classic_failures)):
                tr = failed_task_trace(worker, n)
                if tr and not acc:
                    acc.append(tr)
            return task_states(worker, name)

        watcher = Sampler(watch, interval=2.0)
        watcher.start()
        outage = cluster.pg_stop_for(OUTAGE_S, background=True)
        time.sleep(2)
        for t in (topic, classic):
            produce_rows(cluster, t, range(half, N))   # the second half arrives during the outage
        outage.join(timeout=OUTAGE_S + 120)
        assert not outage.is_alive(), "PostgreSQL did not come back"
        assert cluster.is_running("postgres")
        t_back = time.monotonic()
        time.sleep(10)
        if failures:
            # Not "without intervention" any more; restart the failed tasks to still measure
            # whether anything was lost or archived (records of a failed task are released).
            restarted = True
            worker._retry_busy(lambda: worker.post(
                f"/connectors/{name}/restart?includeTasks=true&onlyFailed=true"))

        Progress("distinct ids after the outage", lambda: pg_distinct_ids(cluster, table)).wait(
            N, stall=180, timeout=900,
            on_timeout=lambda: connector_trace(worker, name) + "\nfailures: " + "\n".join(failures[:1]))
        recovered_s = time.monotonic() - t_back
        watcher.stop()
        time.sleep(3)
        stop_connector(worker, name)
        offs = share_group_offsets(cluster, group)
        lag = total_lag(offs)
        rows = pg_rows(cluster, table)
        distinct = pg_distinct_ids(cluster, table)
        record_figures("2-jdbc-postgres-outage", tasks=TASKS, partitions=3, produced=N,
                       delivered=rows, distinct_delivered=distinct, duplicated=rows - distinct,
                       lost=N - distinct, outage_s=OUTAGE_S, rows_when_postgres_stopped=rows_at_outage,
                       seconds_from_postgres_back_to_complete=round(recovered_s, 1),
                       total_seconds=round(time.monotonic() - t0, 1),
                       share_task_failed=bool(failures), restarted_by_test=restarted,
                       share_failure=_cause(failures[0]) if failures else None,
                       classic_runtime_task_failed=bool(classic_failures),
                       classic_failure=_cause(classic_failures[0]) if classic_failures else None,
                       classic_rows=pg_rows(cluster, classic), group_lag_after_stop=lag)
        assert distinct == N, f"{N - distinct} records lost"
        assert lag == 0, f"share group lag after the run: {offs}"
        if failures and classic_failures:
            # Debezium JDBC 3.6.0 does not retry a refused connection: under the classic runtime
            # its task fails in the same outage, so "recovery without intervention" is out of
            # reach for this sink (known limitation, reported on the issue). sharesink must be no
            # worse: nothing lost or archived (asserted above) once the failed tasks restart.
            pytest.xfail("Debezium JDBC fails its task on a refused connection under the classic "
                         "runtime too: " + _cause(classic_failures[0]))
        assert not failures, ("a task FAILED during the outage while the classic runtime's task "
                              f"did not:\n{failures[0][:4000]}")
    finally:
        delete_connector(worker, name)
        delete_connector(worker, classic)


def _cause(trace: str) -> str:
    causes = [l.strip() for l in trace.splitlines() if l.startswith("Caused by:")]
    return (causes[-1] if causes else trace.splitlines()[0])[:300]
