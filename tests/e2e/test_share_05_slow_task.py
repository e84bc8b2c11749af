"""Scenario 5: one task made slow by a real mechanism: a PostgreSQL row lock.

Debezium's JDBC sink upserts into a table whose row id=0 is locked (`SELECT ... FOR UPDATE` in
an open transaction of this test). The record with id 0 is the last record of its partition;
the task that gets it blocks inside `put()` (Debezium flushes each record, `batch.size=1`, so
the records it wrote before id 0 are committed).

- while the put blocks, the records the slow task holds stay with it: sharesink's lock keeper
  renews them from its own thread, so for `share.task.stuck.timeout.ms` (45 s here, three lock
  durations) no second task picks record 0 up (one backend waits on the row for over two locks)
  and no delivery attempt is burnt;
- past that bound they are released: another task gets record 0 and blocks on the same row
  (two backends wait), at most the bound plus the redelivery latency after the first blocked;
  the other tasks write every other record, those the slow task held included;
- after the row lock is released, record 0 is written, no task failed (the blocked task's put
  returns after its records were released: it must not acknowledge them), the group's lag is 0.

The lock is released before record 0 reaches the delivery-count limit (5).

The delivery count reaches the sink (`share.delivery.count.header=dc`): Debezium's own
`HeaderToValue` SMT (in Debezium's JDBC plugin) copies the header into a `delivery_count` column,
so row 0, written after its redelivery, says 2 or more, and every row has one.
"""

from __future__ import annotations

import subprocess
import time

from harness.cluster import Cluster, Rest
from harness.machine import MachineTimeline
from helpers import (JDBC_SINK, Progress, connector_trace, delete_connector, failed_task_trace,
                     group_of, jdbc_config, pg_scalar, pg_waiting_on_locks, produce_rows,
                     record_figures, settled_share_group_offsets, share_config, start_connector,
                     stop_connector, total_lag, uniq, wait_for)

N = 3000
TASKS = 4
LOCK_MS = 15000
STUCK_MS = 45000                            # share.task.stuck.timeout.ms for this test
# Checked for one waiter until this long after the first was seen: over two locks (the put may
# have begun a few seconds before the first waiter showed), and short of the bound.
ALONE_S = 35
# From the first waiter to the second: at most the bound (it runs from the start of the put,
# before the first waiter was seen, on the wall clock), plus the redelivery latency (fetch,
# conversion, Debezium writing the batch up to row 0, this test's 1 s sampling): work, so judged
# in machine seconds (harness/machine.py: what a runnable thread could do meanwhile; the wall
# clock on an idle machine, longer while other stages load it).
REDELIVERY_SLACK_S = 10
# The wait for the second waiter gives up at this many wall seconds, however loaded the machine.
SECOND_WAITER_CAP_S = STUCK_MS / 1000 + 10 * REDELIVERY_SLACK_S


class RowLock:
    """An open PostgreSQL transaction holding `SELECT ... FOR UPDATE` on one row."""

    def __init__(self, cluster: Cluster, table: str, row_id: int):
        _, sock = cluster.pg.dirs()
        self.proc = subprocess.Popen(
            ["runuser", "-u", "postgres", "--", str(cluster.pg.bindir() / "psql"), "-X", "-q",
             "-v", "ON_ERROR_STOP=1", "-h", str(sock), "-p", str(cluster.postgres_port),
             "-d", "sharesink"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            cwd="/")
        self.proc.stdin.write(f"BEGIN;\nSELECT id FROM {table} WHERE id = {row_id} FOR UPDATE;\n"
                              "SELECT 'locked';\n")
        self.proc.stdin.flush()
        line = ""
        deadline = time.monotonic() + 30
        while "locked" not in line and time.monotonic() < deadline:
            line = self.proc.stdout.readline()
        assert "locked" in line, f"could not lock the row: {line}"

    def release(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.write("COMMIT;\n\\q\n")
            self.proc.stdin.flush()
            self.proc.stdin.close()
            self.proc.wait(timeout=30)


def test_slow_task_does_not_hold_the_others(cluster: Cluster, worker: Rest, postgres):
    name = uniq("slow_")
    topic = table = name
    cluster.create_topic(topic, partitions=3)
    cluster.psql(f"SET ROLE {postgres['user']};\n"
                 f"CREATE TABLE {table} (id bigint NOT NULL PRIMARY KEY, name text, seq bigint NOT NULL,"
                 " delivery_count integer);\n"
                 f"INSERT INTO {table} VALUES (0, 'locked', 0, NULL);", db="sharesink")
    lock = RowLock(cluster, table, 0)
    written = lambda: pg_scalar(cluster, f"SELECT count(*) FROM {table} WHERE seq = 1", default=0) or 0  # noqa: E731
    produce_rows(cluster, topic, range(1, N))
    produce_rows(cluster, topic, [0])          # last of its partition

    cfg = share_config(cluster, name, topic, JDBC_SINK, TASKS)
    cfg.update(jdbc_config(postgres, **{"batch.size": "1"}))
    # Each id is produced once (row 0 exists beforehand, locked): the upsert is an idempotent
    # write by a unique key, so order cannot change the rows (docs/configuration.md, "Order in
    # share mode").
    cfg["share.ordering"] = "unordered"
    cfg.update({"share.record.lock.duration.ms": str(LOCK_MS), "share.commit.interval.ms": "2000",
                "share.task.stuck.timeout.ms": str(STUCK_MS),
                # The delivery count as a header, and into the row by a third-party SMT (the
                # column exists already: an ALTER TABLE would wait behind the row lock).
                "share.delivery.count.header": "dc",
                "transforms": "count",
                "transforms.count.type": "io.debezium.transforms.HeaderToValue",
                "transforms.count.headers": "dc",
                "transforms.count.fields": "delivery_count",
                "transforms.count.operation": "copy"})
    group = group_of(name)
    max_waiters = 0
    try:
        start_connector(worker, name, cfg, tasks=TASKS)
        # the first task to get record 0 blocks on the row lock
        wait_for("a task blocked on the locked row", lambda: pg_waiting_on_locks(cluster) >= 1,
                 timeout=180, interval=1, on_timeout=lambda: connector_trace(worker, name))
        t_block = time.monotonic()
        machine = MachineTimeline()
        machine.start()

        def waiters():
            nonlocal max_waiters
            max_waiters = max(max_waiters, pg_waiting_on_locks(cluster))
            return max_waiters

        # two lock durations pass with the put blocked: record 0 stays with the slow task
        held_alone_until = t_block + ALONE_S
        while time.monotonic() < held_alone_until and waiters() < 2:
            time.sleep(1)
        alone_s = time.monotonic() - t_block
        waiters_within_bound = max_waiters

        # past the bound it is released: another task gets it and blocks too
        t_bound = t_block + STUCK_MS / 1000

        def second_waiter_within() -> float:
            """The bound on the wall clock plus the slack in machine seconds (to now)."""
            now = time.monotonic()
            slowdown = machine.slowdown(t_bound, now) if now > t_bound else 1.0
            return STUCK_MS / 1000 + REDELIVERY_SLACK_S * slowdown

        while (waiters() < 2 and time.monotonic() - t_block <= second_waiter_within()
               and time.monotonic() - t_block < SECOND_WAITER_CAP_S):
            time.sleep(1)
        held_s = time.monotonic() - t_block
        machine.stop()
        second_within_s = second_waiter_within()
        # the others write every other record, those the slow task held and released included
        Progress("rows written while row 0 is locked", written).wait(
            N - 1, stall=50, timeout=60, on_timeout=lambda: connector_trace(worker, name))
        others_done_s = time.monotonic() - t_block
        rows_while_locked = written()
        lock.release()
        t_release = time.monotonic()
        Progress("rows after the row lock is released", written).wait(
            N, stall=90, timeout=300, on_timeout=lambda: connector_trace(worker, name))
        after_release_s = time.monotonic() - t_release
        time.sleep(LOCK_MS / 1000)  # let the blocked tasks' stale acks come back
        failed = failed_task_trace(worker, name)
        stop_connector(worker, name)
        offs = settled_share_group_offsets(cluster, group)
        lag = total_lag(offs)
        final = written()
        row0_count = pg_scalar(cluster, f"SELECT delivery_count FROM {table} WHERE id = 0")
        without_count = pg_scalar(
            cluster, f"SELECT count(*) FROM {table} WHERE delivery_count IS NULL", default=-1)
        redelivered_rows = pg_scalar(
            cluster, f"SELECT count(*) FROM {table} WHERE delivery_count >= 2", default=0)
        record_figures("5-slow-task-row-lock", tasks=TASKS, partitions=3, produced=N,
                       delivered=final, duplicated="n/a (upsert)", lost=N - final,
                       rows_written_while_locked=rows_while_locked,
                       seconds_others_needed=round(others_done_s, 1),
                       lock_ms=LOCK_MS, stuck_timeout_ms=STUCK_MS,
                       seconds_record0_stayed_alone=round(alone_s, 1),
                       backends_waiting_within_the_bound=waiters_within_bound,
                       seconds_to_second_waiter=round(held_s, 1),
                       second_waiter_bound_s=round(second_within_s, 1),
                       max_backends_waiting_on_the_row=max_waiters,
                       seconds_to_record0_after_release=round(after_release_s, 1),
                       task_failed=bool(failed), group_lag_after_stop=lag,
                       record0_delivery_count=row0_count, rows_without_delivery_count=without_count,
                       rows_written_from_a_redelivery=redelivered_rows)
        assert rows_while_locked == N - 1, "the other tasks did not write everything while one was stuck"
        assert waiters_within_bound == 1, (
            f"record 0 reached another task {alone_s:.0f}s after the first blocked on it, within "
            f"{STUCK_MS} ms: its lock was not renewed during the put")
        assert max_waiters >= 2, ("record 0 was not released to another task after "
                                  f"share.task.stuck.timeout.ms ({STUCK_MS} ms): at most "
                                  f"{max_waiters} backend(s) waited on the row in {held_s:.0f}s")
        assert held_s <= second_within_s, (
            f"record 0 reached a second task {held_s:.0f}s after the first blocked on it: more than "
            f"the {STUCK_MS} ms bound plus {REDELIVERY_SLACK_S} machine seconds "
            f"({second_within_s - STUCK_MS / 1000:.0f}s on the wall clock then)")
        assert final == N
        assert failed is None, f"a task failed:\n{failed[:4000]}"
        assert lag == 0, f"share group lag after the run: {offs}"
        assert row0_count is not None and row0_count >= 2, (
            f"row 0, written after its redelivery, has delivery_count {row0_count}")
        assert without_count == 0, f"{without_count} rows without a delivery count"
    finally:
        lock.release()
        delete_connector(worker, name)
