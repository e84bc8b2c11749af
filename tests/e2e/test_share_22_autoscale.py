"""Scenario 22: the task autoscaler (share.tasks.autoscale) follows a backlog up and back down.

A slow sink: Debezium's JDBC sink upserting into a table whose BEFORE INSERT trigger sleeps 20 ms
per row, one record per put. tasks.max=6, the autoscaler on from one task, its timings shortened
for a test (a reading every 2 s, a 10 s scale-down window, a 10 s drain target; at most one
change per 60 s, the floor, since every change rebalances the Connect cluster). A backlog of
4,000 rows waits when the connector starts (one task: ~90 s):

- the connector starts with one task (its share group has no members yet);
- within 30 s it runs more, and reaches tasks.max (the backlog over 10 s at one task's rate
  asks for more than six), in one reconfiguration;
- every row is written (an upsert on id: a record delivered again after a reconfiguration
  writes the same row), and no task failed;
- once the backlog is gone it goes back to one task, after the 10 s window and at least 60 s after
  the step up;
- the worker's log names each change with the figures it was decided on.
"""

from __future__ import annotations

import re
import time

import pytest

from harness.cluster import Cluster, Rest
from helpers import (JDBC_SINK, LogMark, assert_no_failed_task, connector_trace,
                     delete_connector, jdbc_config, pg_distinct_ids, produce_rows,
                     record_figures, share_config, start_connector, uniq, wait_for)

N = 4000
MAX_TASKS = 6


def _running(worker: Rest, name: str) -> int:
    """The connector's tasks when all are RUNNING, else -1 (a reconfiguration under way)."""
    ts = worker.connector_status(name).get("tasks", [])
    running = sum(1 for t in ts if t.get("state") == "RUNNING")
    return running if ts and running == len(ts) else -1


# Its verdict (the tasks a backlog calls for, within a bound) follows the rate the machine gives: run alone.
@pytest.mark.alone
def test_autoscaler_follows_a_backlog_up_and_back_down(cluster: Cluster, worker: Rest, postgres):
    name = uniq("autoscale-")
    table = name.replace("-", "_")
    cluster.create_topic(name, partitions=3)
    cluster.psql(f"""
CREATE TABLE {table} (id bigint PRIMARY KEY, name text, seq bigint);
ALTER TABLE {table} OWNER TO {postgres['user']};
CREATE FUNCTION {table}_slow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_sleep(0.02); RETURN NEW; END $$;
CREATE TRIGGER {table}_slow BEFORE INSERT ON {table} FOR EACH ROW EXECUTE FUNCTION {table}_slow();
""", db=postgres["db"])
    produce_rows(cluster, name, range(N))
    cfg = share_config(cluster, name, name, JDBC_SINK, MAX_TASKS)
    cfg.update(jdbc_config(postgres, **{"table.name.format": table, "schema.evolution": "none"}))
    cfg.update({
        # each row written once: its key's order does not matter
        "share.ordering": "unordered",
        "share.consumer.max.poll.records": "1",
        "share.consumer.share.acquire.mode": "record_limit",
        "share.commit.interval.ms": "1000",
        "share.tasks.autoscale": "true",
        "share.tasks.autoscale.min": "1",
        "share.tasks.autoscale.interval.ms": "2000",
        # the floor (60 s): every change rebalances the Connect cluster
        "share.tasks.autoscale.reconfigure.min.interval.ms": "60000",
        "share.tasks.autoscale.scale.down.window.ms": "10000",
        "share.tasks.autoscale.drain.target.ms": "10000",
    })
    log = LogMark(cluster)
    timeline = []
    try:
        t0 = time.monotonic()
        start_connector(worker, name, cfg, tasks=1)
        timeline.append((0.0, 1))

        def at(n):
            got = _running(worker, name)
            if not timeline or timeline[-1][1] != got:
                timeline.append((round(time.monotonic() - t0, 1), got))
            return got == n

        wait_for(f"{MAX_TASKS} tasks RUNNING", lambda: at(MAX_TASKS), timeout=30,
                 on_timeout=lambda: connector_trace(worker, name))
        up_s = time.monotonic() - t0
        wait_for(f"{N} rows", lambda: pg_distinct_ids(cluster, table) >= N, timeout=120)
        drained_s = time.monotonic() - t0
        # at most one change per 60 s: down comes a minute after up at the earliest
        wait_for("back to one task", lambda: at(1), timeout=120)
        down_s = time.monotonic() - t0
        assert_no_failed_task(worker, name)
        changes = log.lines(rf"Connector {re.escape(name)}: autoscaling to \d+ tasks")
        record_figures("22-autoscale", rows=N, tasks_max=MAX_TASKS, s_to_max=round(up_s, 1),
                       s_drained=round(drained_s, 1), s_back_to_one=round(down_s, 1),
                       timeline=timeline, changes=[c[-400:] for c in changes])
        assert pg_distinct_ids(cluster, table) == N
        tos = [int(re.search(r"autoscaling to (\d+) tasks", c).group(1)) for c in changes]
        assert tos == [MAX_TASKS, 1], changes
        assert "backlog" in changes[0] and "no backlog" in changes[1], changes
    finally:
        delete_connector(worker, name)
