"""Scenario 2: Debezium's JDBC sink (3.6.0.Final, its own plugin directory) into PostgreSQL
through sharesink: 100k JSON-with-schema records become rows; PostgreSQL is stopped for 60 s in
the middle of the run.

- nothing lost: every id is a row (count(DISTINCT id) = produced); with `insert.mode=insert`
  and no primary key, a record written twice is a second row, so duplicates are counted too;
- nothing archived by the broker: every id present (an archived record would be a missing
  row: each id is produced once) and the share group's lag is 0 at the end;
- recovery without intervention: no sharesink task FAILED at any time (sampled through the
  outage) and no REST call between the outage and the end. Debezium's JDBC sink 3.6.0 fails its
  task when PostgreSQL refuses connections (its retries do not cover a refused connection);
  sharesink restarts the legacy task in place (`share.task.restart.*`, defaults) while holding
  and renewing its records, so the restarts are counted from the worker log and reported.

The same sink on the classic runtime goes through the same outage for comparison: whether its
task FAILED (it does, with Debezium 3.6.0) and how many rows it wrote are reported, not
asserted. Debezium's own retry settings are what a classic-runtime operator sets to ride out a
60 s outage (`flush.max.retries` x `flush.retry.delay.ms` > 60 s); Debezium 3.6 reports a write
failure only on the next put (connect-sink-contract.md §13), which sharesink must not ACCEPT
past.
"""

from __future__ import annotations

import time

from harness.cluster import Cluster, Rest
from helpers import (JDBC_SINK, Progress, Sampler, connector_trace, delete_connector,
                     failed_task_trace, group_of, jdbc_config, pg_distinct_ids, pg_rows,
                     produce_rows, record_figures, settled_share_group_offsets, share_config,
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
        distinct_at_back = pg_distinct_ids(cluster, table)

        # No intervention: no REST call from here on, whatever the tasks did.
        progress = Progress("distinct ids after the outage", lambda: pg_distinct_ids(cluster, table))
        incomplete = None
        try:
            progress.wait(N, stall=180, timeout=900,
                          on_timeout=lambda: connector_trace(worker, name)
                          + "\nfailures: " + "\n".join(failures[:1]))
        except BaseException as e:  # pytest's Failed: record the figures first
            incomplete = e
        recovered_s = time.monotonic() - t_back
        first_new = next((t for t, v in progress.samples if v > distinct_at_back), None)
        watcher.stop()
        states_seen = sorted({st for _, states in watcher.samples if isinstance(states, dict)
                              for st in states.values()})
        restarts = _restarts_in_log(cluster, name)
        time.sleep(3)
        stop_connector(worker, name)
        offs = settled_share_group_offsets(cluster, group)
        lag = total_lag(offs)
        rows = pg_rows(cluster, table)
        distinct = pg_distinct_ids(cluster, table)
        record_figures("2-jdbc-postgres-outage", tasks=TASKS, partitions=3, produced=N,
                       delivered=rows, distinct_delivered=distinct, duplicated=rows - distinct,
                       lost=N - distinct, outage_s=OUTAGE_S, rows_when_postgres_stopped=rows_at_outage,
                       distinct_when_postgres_back=distinct_at_back,
                       seconds_from_postgres_back_to_first_new_row=first_new,
                       seconds_from_postgres_back_to_complete=round(recovered_s, 1),
                       total_seconds=round(time.monotonic() - t0, 1),
                       share_task_failed=bool(failures), share_task_states_seen=states_seen,
                       restarted_by_test=False, **restarts,
                       share_failure=_cause(failures[0]) if failures else None,
                       classic_runtime_task_failed=bool(classic_failures),
                       classic_failure=_cause(classic_failures[0]) if classic_failures else None,
                       classic_rows=pg_rows(cluster, classic), group_lag_after_stop=lag)
        assert not failures, f"a sharesink task FAILED during the outage:\n{failures[0][:4000]}"
        if incomplete is not None:
            raise incomplete
        assert distinct == N, f"{N - distinct} records lost"
        assert lag == 0, f"share group lag after the run: {offs}"
    finally:
        delete_connector(worker, name)
        delete_connector(worker, classic)


def _restarts_in_log(cluster: Cluster, name: str) -> dict:
    """What the adapter logged about restarting the legacy tasks of `name` in place."""
    lines = [l for l in cluster.current_log("worker-0").splitlines() if f"{name}-" in l]
    return {
        "share_legacy_task_failures": sum("the legacy task threw from" in l for l in lines),
        "share_restarts_started": sum("legacy task restarted in place" in l for l in lines),
        "share_restart_start_failures": sum("restarted legacy task failed to start" in l
                                            for l in lines),
        "share_restarts_recovered": sum("restarted legacy task is writing again" in l
                                        for l in lines),
    }


def _cause(trace: str) -> str:
    causes = [l.strip() for l in trace.splitlines() if l.startswith("Caused by:")]
    return (causes[-1] if causes else trace.splitlines()[0])[:300]
