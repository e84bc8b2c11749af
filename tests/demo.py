#!/usr/bin/env python3
"""sharesink demo: Debezium's JDBC sink, unmodified, on a Kafka share group.

Starts the local cluster (Kafka 4.4 broker, one Connect worker with the sharesink plugin,
PostgreSQL) in the default state dir (build/cluster, ports from SHARESINK_PORT_BASE), runs
`io.debezium.connector.jdbc.JdbcSinkConnector` through `io.sharesink.connect.ShareSinkConnector`
with 12 tasks on a 3-partition topic (four times more tasks than partitions: only a share group
allows that), produces 1,000,000 JSON-with-schema records, shows the rows arriving in
PostgreSQL, and ends with the throughput and a completeness check (every record a row).

The cluster is left running afterwards so that it can be inspected (REST, psql, logs);
`scripts/demo.sh --down` stops it. `--stop` stops it at the end instead.

Usage: scripts/demo.sh [--records N] [--tasks N] [--partitions N] [--stop]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path

# Run as a script, so tests/ is sys.path[0].
from harness.cluster import Cluster, HarnessError, RestError, default_plugin_archive

SHARE_SINK = "io.sharesink.connect.ShareSinkConnector"
JDBC_SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
CONNECTOR = "orders-to-postgres"
TOPIC = "demo_orders"

VALUE_SCHEMA = {"type": "struct", "optional": False, "name": "demo.Order",
                "fields": [{"field": "id", "type": "int64", "optional": False},
                           {"field": "customer", "type": "string", "optional": False},
                           {"field": "amount_cents", "type": "int64", "optional": False},
                           {"field": "note", "type": "string", "optional": True}]}
SCHEMA_JSON = json.dumps(VALUE_SCHEMA, separators=(",", ":"))


def value(i: int) -> str:
    payload = json.dumps({"id": i, "customer": f"customer-{i % 9973}",
                          "amount_cents": (i * 7919) % 100000, "note": f"order {i}"},
                         separators=(",", ":"))
    return '{"schema":' + SCHEMA_JSON + ',"payload":' + payload + "}"


def say(msg: str) -> None:
    print(msg, flush=True)


def rows(c: Cluster) -> int:
    out = c.psql(f"SELECT count(*) FROM {TOPIC}", db="sharesink", check=False).strip()
    try:
        return int(out.splitlines()[-1])
    except (ValueError, IndexError):
        return 0


def task_summary(c: Cluster) -> str:
    try:
        st = c.rest(0).connector_status(CONNECTOR)
    except (RestError, OSError) as e:
        return f"status unavailable ({e.__class__.__name__})"
    states = [t["state"] for t in st.get("tasks", [])]
    running = states.count("RUNNING")
    other = {s: states.count(s) for s in set(states) if s != "RUNNING"}
    return f"tasks RUNNING {running}/{len(states)}" + (f" {other}" if other else "")


def failed_trace(c: Cluster) -> str:
    try:
        st = c.rest(0).connector_status(CONNECTOR)
    except (RestError, OSError):
        return ""
    for t in [st.get("connector", {})] + st.get("tasks", []):
        if t.get("state") == "FAILED":
            return (t.get("trace") or "")[:3000]
    return ""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="sharesink demo: Debezium JDBC sink on a share group")
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--tasks", type=int, default=12)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--stall", type=float, default=180,
                    help="give up when no row arrives for this many seconds")
    ap.add_argument("--stop", action="store_true", help="stop the cluster at the end")
    a = ap.parse_args(argv)
    n = a.records

    archive = os.environ.get("SHARESINK_PLUGIN_ARCHIVE") or default_plugin_archive()
    if not archive or not Path(archive).is_file():
        say("no sharesink plugin archive: run `mvn -q package` first (scripts/demo.sh does)")
        return 2
    c = Cluster()
    say(f"== starting the cluster in {c.state_dir} (Kafka 4.4 broker, Connect worker, PostgreSQL)")
    t0 = time.monotonic()
    try:
        c.up(workers=1, postgres=True, plugin_archive=archive)
    except HarnessError as e:
        say(f"could not start the cluster: {e}")
        return 2
    say(f"   broker {c.bootstrap}, worker {c.worker_url(0)}, PostgreSQL "
        f"{c.postgres_info()['jdbc_url']}  ({time.monotonic() - t0:.0f}s)")
    say(f"   plugin archive {archive}")

    c.create_topic(TOPIC, partitions=a.partitions)
    pg = c.postgres_info()
    config = {
        "connector.class": SHARE_SINK,
        "share.sink.connector.class": JDBC_SINK,
        "topics": TOPIC,
        "tasks.max": str(a.tasks),
        "share.consumer.bootstrap.servers": c.bootstrap,
        # Every id is produced once: the upsert is an idempotent write by a unique key, so the
        # order share mode gives up cannot change a row (docs/configuration.md, "Order in share
        # mode"); without this choice validation refuses insert.mode=upsert.
        "share.ordering": "unordered",
        # everything below is Debezium's and Connect's own configuration, unchanged
        "connection.url": pg["jdbc_url"],
        "connection.username": pg["user"],
        "connection.password": pg["password"],
        "insert.mode": "upsert",
        "primary.key.mode": "record_value",
        "primary.key.fields": "id",
        "schema.evolution": "basic",
        "batch.size": "1000",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "true",
    }
    say(f"== connector {CONNECTOR}: {SHARE_SINK} running {JDBC_SINK}, "
        f"{a.tasks} tasks on {a.partitions} partitions")
    say("   " + json.dumps({k: v for k, v in config.items() if k != "connection.password"}))
    rest = c.rest(0)
    rest.put_connector(CONNECTOR, config)
    try:
        rest.wait_connector_running(CONNECTOR, tasks=a.tasks, timeout=180)
    except HarnessError as e:
        say(f"the connector did not start: {e}")
        return 1
    say(f"   {task_summary(c)}")

    say(f"== producing {n:,} records (JSON with schema) to {TOPIC}")
    produced = [0]
    produce_error: list = []
    chunk = 100_000

    def producer():
        try:
            for start in range(0, n, chunk):
                ids = range(start, min(n, start + chunk))
                c.produce(TOPIC, [value(i) for i in ids], keys=[str(i) for i in ids])
                produced[0] = ids[-1] + 1
        except Exception as e:  # noqa: BLE001 - reported below
            produce_error.append(e)

    th = threading.Thread(target=producer, daemon=True)
    start = time.monotonic()
    th.start()

    say(f"{'time':>6} {'produced':>10} {'rows':>10} {'rows/s':>9}  tasks")
    last_rows, last_t, last_change = 0, start, start
    first_row_t = None
    while True:
        time.sleep(2)
        now = time.monotonic()
        r = rows(c)
        if r > 0 and first_row_t is None:
            first_row_t = now
        rate = (r - last_rows) / (now - last_t) if now > last_t else 0
        say(f"{now - start:5.0f}s {produced[0]:>10,} {r:>10,} {rate:>9,.0f}  {task_summary(c)}")
        if r != last_rows:
            last_change = now
        last_rows, last_t = r, now
        if produce_error:
            say(f"producing failed: {produce_error[0]}")
            return 1
        if r >= n:
            break
        trace = failed_trace(c)
        if trace:
            say(f"a task FAILED:\n{trace}")
            return 1
        if now - last_change > a.stall and not th.is_alive():
            say(f"no new row for {a.stall:.0f}s; giving up (worker log: {c.logs_dir / 'worker-0.log'})")
            break
    end = time.monotonic()
    th.join(timeout=5)

    total = rows(c)
    distinct = int(c.psql(f"SELECT count(DISTINCT id) FROM {TOPIC}", db="sharesink").strip() or 0)
    span = c.psql(f"SELECT min(id) || ' ' || max(id) FROM {TOPIC}", db="sharesink").strip()
    elapsed = end - start
    say("== result")
    say(f"   produced {n:,} records; {total:,} rows in PostgreSQL, {distinct:,} distinct ids "
        f"(min/max id {span})")
    say(f"   {elapsed:.1f}s from the first record produced to the last row: "
        f"{total / elapsed:,.0f} rows/s end to end"
        + (f"; {total / (end - first_row_t):,.0f} rows/s from the first row"
           if first_row_t and end > first_row_t else ""))
    ok = total == n and distinct == n
    say(f"   completeness: {'PASS' if ok else 'FAIL'} (every record a row: count(DISTINCT id) = "
        f"{distinct:,}, produced = {n:,})")
    say(f"   {task_summary(c)}")
    if a.stop:
        c.down()
        say("== cluster stopped")
    else:
        say(f"== the cluster is left running ({c.state_dir}; REST {c.worker_url(0)}, "
            f"psql: {pg['url']}); stop it with: scripts/demo.sh --down")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
