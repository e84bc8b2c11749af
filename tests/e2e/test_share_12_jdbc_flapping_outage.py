"""Scenario 12 (durability): a long downstream outage with puts that block inside the sink.

Debezium's JDBC sink (its own plugin directory) into PostgreSQL; PostgreSQL stops and flaps
(down, up for a few seconds, down again, ...), down for longer in total than the group's lock
duration x delivery count limit. Both are at the broker's minimum (15 s x 2) to keep the test
short: a "10-minute-class" outage against the default 30 s x 5, scaled down.

Debezium retries a write only on connection errors and only with
`connection.restart.on.errors=true`; with `flush.max.retries` x `flush.retry.delay.ms` (300 x
1 s) far above the outage, a put never gives up: it blocks inside the sink while PostgreSQL is
down (each down phase alone is longer than the lock). No DLQ. More tasks than partitions (each
partition is shared by two members). A first batch is written before the outage; a new batch
is produced 2 s into every down phase, so the members take it and block in put with it. A
record whose lock runs out meanwhile (in a blocked put, or prefetched behind one) is delivered
again once PostgreSQL is back for a moment: at delivery 2, the limit here, so one more lost
lock would archive it.

- 0 lost: every id is a row (`insert.mode=insert`, no primary key: a record written twice is a
  second row, so duplicates are counted too);
- no record reached the delivery count limit: the adapter logs every redelivered record with
  its delivery count ("records delivered again (up to delivery N)"); no record may be delivered
  a LIMIT-th time (after which one more lost lock archives it). The share group's lag is 0 at
  the end;
- no task FAILED at any time (sampled through the outage).

The longest Debezium retry run seen in the log (how long one put blocked) is reported.
"""

from __future__ import annotations

import re
import threading
import time

from harness.cluster import Cluster, Rest
from helpers import (JDBC_SINK, LogMark, Progress, Sampler, connector_trace, delete_connector,
                     failed_task_trace, group_of, jdbc_config, pg_distinct_ids, pg_rows,
                     produce_rows, record_figures, settled_share_group_offsets, share_config,
                     start_connector, stop_connector, task_states, total_lag, uniq)

BACKLOG = 3_000           # produced before the start, written before the outage
DURING = 3_000            # produced 2 s into every down phase
TASKS = 6                 # on 3 partitions: two members per partition
LOCK_MS = 15_000          # group minimum on Kafka 4.4
DELIVERY_LIMIT = 2        # group minimum on Kafka 4.4
DOWN_S = (25, 25)         # each longer than the lock; 50 s in all > 15 s x 2
UP_S = 3                  # PostgreSQL back for this long between the down phases
N = BACKLOG + DURING * len(DOWN_S)

_REDELIVERED = re.compile(r"(\d+) records delivered again \(up to delivery (\d+)\)")
_DBZ_RETRY = re.compile(r"Retry to .*\. Retry (\d+)/(\d+) with delay")


def flap(cluster: Cluster, events: list, topic: str) -> threading.Thread:
    """PostgreSQL down DOWN_S[0] s, up UP_S s, down DOWN_S[1] s, ... then up (data kept); DURING
    more rows are produced 2 s into each down phase."""
    def run():
        try:
            for i, down in enumerate(DOWN_S):
                cluster.stop_postgres()
                t_down = time.monotonic()
                events.append(("down", t_down))
                time.sleep(2)
                first = BACKLOG + i * DURING
                produce_rows(cluster, topic, range(first, first + DURING))
                time.sleep(max(0.0, down - (time.monotonic() - t_down)))
                cluster.start_postgres()
                events.append(("up", time.monotonic()))
                if i < len(DOWN_S) - 1:
                    time.sleep(UP_S)
        except Exception as e:  # noqa: BLE001 - reported by the test
            events.append(("error", e))
    t = threading.Thread(target=run, name="pg-flap", daemon=True)
    t.start()
    return t


def test_jdbc_flapping_outage_burns_no_delivery(cluster: Cluster, worker: Rest, postgres):
    name = uniq("jdbc_flap_")
    topic = table = name
    group = group_of(name)
    cluster.create_topic(topic, partitions=3)
    produce_rows(cluster, topic, range(0, BACKLOG))
    cfg = share_config(cluster, name, topic, JDBC_SINK, TASKS)
    cfg.update(jdbc_config(postgres, **{"insert.mode": "insert", "primary.key.mode": "none",
                                        "batch.size": "500",
                                        "connection.restart.on.errors": "true",
                                        "flush.max.retries": "300",
                                        "flush.retry.delay.ms": "1000"}))
    cfg.update({"share.record.lock.duration.ms": str(LOCK_MS),
                "share.delivery.count.limit": str(DELIVERY_LIMIT)})
    log = LogMark(cluster, 0)
    t0 = time.monotonic()
    fig = {"tasks": TASKS, "partitions": 3, "lock_ms": LOCK_MS, "delivery_limit": DELIVERY_LIMIT,
           "down_s": list(DOWN_S), "up_s": UP_S, "backlog": BACKLOG, "produced_per_down": DURING}
    flapping = None
    try:
        start_connector(worker, name, cfg, tasks=TASKS)
        Progress("rows before the outage", lambda: pg_distinct_ids(cluster, table)).wait(
            BACKLOG, stall=120, timeout=600, on_timeout=lambda: connector_trace(worker, name))
        fig["rows_when_postgres_stopped"] = pg_rows(cluster, table)

        failures = []

        def watch():
            tr = failed_task_trace(worker, name)
            if tr and not failures:
                failures.append(tr)
            return task_states(worker, name)

        watcher = Sampler(watch, interval=2.0)
        watcher.start()
        events: list = []
        flapping = flap(cluster, events, topic)
        flapping.join(timeout=sum(DOWN_S) + 3 * UP_S + 180)
        assert not flapping.is_alive(), "PostgreSQL did not come back"
        errors = [e for what, e in events if what == "error"]
        assert not errors, f"the outage did not go as planned: {errors[0]!r}"
        t_back = time.monotonic()

        progress = Progress("distinct ids after the outage", lambda: pg_distinct_ids(cluster, table))
        incomplete = None
        try:
            progress.wait(N, stall=120, timeout=600,
                          on_timeout=lambda: connector_trace(worker, name))
        except BaseException as e:  # pytest's Failed: record the figures first
            incomplete = e
        recovered_s = time.monotonic() - t_back
        time.sleep(3)
        watcher.stop()
        stop_connector(worker, name)
        offs = settled_share_group_offsets(cluster, group)
        lag = total_lag(offs)
        rows, distinct = pg_rows(cluster, table), pg_distinct_ids(cluster, table)
        lines = [l for l in log.text().splitlines() if f"{name}|" in l or f"{name}-" in l]
        redeliveries = [(int(m.group(1)), int(m.group(2))) for l in lines
                        for m in [_REDELIVERED.search(l)] if m]
        at_limit = [l for l in lines
                    if (m := _REDELIVERED.search(l)) and int(m.group(2)) >= DELIVERY_LIMIT]
        retries = [int(m.group(1)) for l in lines for m in [_DBZ_RETRY.search(l)] if m]
        states_seen = sorted({st for _, s in watcher.samples if isinstance(s, dict)
                              for st in s.values()})
        fig.update(produced=N, in_sink=distinct, lost=N - distinct, duplicates=rows - distinct,
                   rows=rows, outage_total_s=round(t_back - events[0][1], 1) if events else None,
                   redelivery_log_lines=len(redeliveries),
                   records_redelivered=sum(n for n, _ in redeliveries),
                   max_delivery_seen=max((d for _, d in redeliveries), default=1),
                   lock_lost_warnings=sum("lost their acquisition locks" in l for l in lines),
                   longest_debezium_retry_run=max(retries, default=0),
                   legacy_task_restarts=sum("legacy task restarted in place" in l for l in lines),
                   share_task_failed=bool(failures), task_states_seen=states_seen,
                   seconds_from_postgres_back_to_complete=round(recovered_s, 1),
                   group_lag_after_stop=lag, total_seconds=round(time.monotonic() - t0, 1))
        record_figures("12-jdbc-flapping-outage", **fig)

        problems = []
        if failures:
            problems.append(f"a task FAILED during the outage:\n{failures[0][:3000]}")
        if distinct != N:
            problems.append(f"{N - distinct} of {N} records lost (never written, so archived by "
                            f"the broker): {_missing_ids(cluster, table, N)}")
        if at_limit:
            problems.append(f"records reached the delivery count limit ({DELIVERY_LIMIT}):\n"
                            + "\n".join(l[:400] for l in at_limit[:10]))
        if lag != 0:
            problems.append(f"share group lag after the run: {offs}")
        if incomplete is not None and not problems:
            raise incomplete
        warns = [l[:400] for l in lines if " WARN " in l and "io.sharesink" in l]
        assert not problems, "\n".join(problems) + "\n--- adapter warnings:\n" + "\n".join(
            warns[-15:])
    except BaseException as e:
        if "produced" not in fig:
            fig["failed_step"] = (str(e).splitlines() or [type(e).__name__])[0][:300]
            record_figures("12-jdbc-flapping-outage", **fig)
        raise
    finally:
        if flapping is not None:
            flapping.join(timeout=sum(DOWN_S) + 3 * UP_S + 180)
        if not cluster.is_running("postgres"):
            cluster.start_postgres()
        delete_connector(worker, name)


def _missing_ids(cluster: Cluster, table: str, n: int) -> str:
    """The ids with no row, as ranges (at most 20)."""
    out = cluster.psql(f'SELECT g FROM generate_series(0, {n - 1}) g WHERE NOT EXISTS '
                       f'(SELECT 1 FROM "{table}" t WHERE t.id = g) ORDER BY g', db="sharesink",
                       check=False)
    ids = [int(x) for x in out.split() if x.isdigit()]
    runs, start, prev = [], None, None
    for i in ids:
        if start is None:
            start = prev = i
        elif i == prev + 1:
            prev = i
        else:
            runs.append((start, prev))
            start = prev = i
    if start is not None:
        runs.append((start, prev))
    return ", ".join(f"{a}-{b}" if b > a else str(a) for a, b in runs[:20]) + (
        ", ..." if len(runs) > 20 else "")
