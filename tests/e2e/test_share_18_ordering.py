"""Scenario 18: never silently wrong. Order-sensitive and self-committing sinks in share mode.

The keyed-versions workload: KEYS keys x VERSIONS successive versions, keyed, on a topic of
PARTITIONS partitions, so each key's versions sit in offset order in one partition; Debezium's
JDBC sink, `insert.mode=upsert`, `primary.key.mode=record_key`, into PostgreSQL, one table per
mode; "stale" = rows whose `version` is not the last one once every record is written:

- classic runtime (PARTITIONS tasks): 0 stale (one task per partition, offset order);
- share mode without a choice, in both forms: a validation error on `insert.mode` (the key the
  operator wrote) naming the choices, and the worker refuses to create the connector;
- share mode through the KIP flag with `share.ordering=unordered` (SHARE_TASKS tasks): the stale
  count is recorded (the explicit opt-out: older versions overwrite newer ones). The control is
  the writes themselves, logged by a trigger in the order each row took them: some version must
  land after a newer one of its key ("regressions"). A stale row is only a regression that
  happened to be a key's last write, so it may not occur in a given run (CI once saw 0 stale
  rows); the regressions show the workload reorders all the same;
- share mode through the KIP flag with the offset guard (`InsertField$Value` carrying the
  partition and offset into the row, the reference's PostgreSQL trigger,
  `share.ordering=offset-guarded`), SHARE_TASKS tasks: 0 stale.

Apache Iceberg's sink (the served jar in its own plugin directory): refused at validation in
both forms, on `share.sink.connector.class` / `connector.class`, because it commits its own
offsets. The self-committing case at run time: the tests' buffering sink with `own.offsets=true`
(every preCommit returns {}) fails once nothing more is put for `share.task.stuck.timeout.ms`,
with a message naming the sink's own offset management, and nothing is ACCEPTed.
"""

from __future__ import annotations

import json
import time
import urllib.parse
from typing import Dict, List

import pytest

from buffering_sink import BUFFERING_SINK, BufferingSink
from harness.cluster import Cluster, Rest, RestError
from helpers import (JDBC_SINK, SHARE_FLAG, SHARE_SINK, connector_trace, delete_connector,
                     flag_config, group_of, jdbc_config, pg_scalar, produce_values,
                     record_figures, settled_share_group_offsets, share_config,
                     share_group_offsets, uniq, wait_for)

ICEBERG_SINK = "org.apache.iceberg.connect.IcebergSinkConnector"
KEYS = 300
VERSIONS = 30
PARTITIONS = 3
SHARE_TASKS = 12
N = KEYS * VERSIONS

KEY_SCHEMA = {"type": "struct", "optional": False, "name": "sharesink.e2e.OrderKey",
              "fields": [{"field": "id", "type": "int64", "optional": False}]}
VALUE_SCHEMA = {"type": "struct", "optional": False, "name": "sharesink.e2e.OrderVersion",
                "fields": [{"field": "id", "type": "int64", "optional": False},
                           {"field": "version", "type": "int64", "optional": False}]}

# The reference's recipe (docs/configuration.md, "Keyed upserts in share mode: the offset guard").
GUARD_SQL = """
CREATE OR REPLACE FUNCTION sharesink_keep_newest() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.kafka_partition = OLD.kafka_partition AND NEW.kafka_offset < OLD.kafka_offset THEN
    RETURN NULL;  -- an older version of the row's key: keep the row as it is
  END IF;
  RETURN NEW;
END $$;
"""


def _q(name: str) -> str:
    return urllib.parse.quote(name, safe="")


def _key(i: int) -> str:
    return json.dumps({"schema": KEY_SCHEMA, "payload": {"id": i}}, separators=(",", ":"))


def _value(i: int, version: int) -> str:
    return json.dumps({"schema": VALUE_SCHEMA, "payload": {"id": i, "version": version}},
                      separators=(",", ":"))


@pytest.fixture(scope="module")
def versions_topic(cluster: Cluster) -> str:
    """KEYS x VERSIONS keyed records, version v of every key before version v + 1."""
    topic = uniq("versions_")
    cluster.create_topic(topic, partitions=PARTITIONS)
    values: List[str] = []
    keys: List[str] = []
    for v in range(1, VERSIONS + 1):
        for i in range(KEYS):
            values.append(_value(i, v))
            keys.append(_key(i))
    produce_values(cluster, topic, values, keys=keys)
    return topic


def _sink_settings(postgres, table: str, **extra: str) -> Dict[str, str]:
    return jdbc_config(postgres, **{"insert.mode": "upsert", "primary.key.mode": "record_key",
                                    "primary.key.fields": "id", "table.name.format": table,
                                    **extra})


def _rows(cluster: Cluster, table: str) -> int:
    return pg_scalar(cluster, f'SELECT count(*) FROM "{table}"', default=0) or 0


def _create_logged_table(cluster: Cluster, postgres, table: str) -> None:
    """The table as the sink creates it, with a trigger that logs every write it takes, in the
    order the row takes them: writes of one key wait on its row lock, so their sequence numbers
    follow the order they were applied in."""
    cluster.psql(f"SET ROLE {postgres['user']};\n"
                 f"CREATE TABLE {table} (id bigint NOT NULL, version bigint NOT NULL,"
                 " PRIMARY KEY (id));\n"
                 f"CREATE TABLE {table}_writes (seq bigserial PRIMARY KEY, id bigint NOT NULL,"
                 " version bigint NOT NULL);\n"
                 f"CREATE FUNCTION {table}_log() RETURNS trigger LANGUAGE plpgsql AS $$\n"
                 f"BEGIN INSERT INTO {table}_writes (id, version) VALUES (NEW.id, NEW.version);"
                 " RETURN NULL; END $$;\n"
                 f"CREATE TRIGGER {table}_log AFTER INSERT OR UPDATE ON {table}"
                 f" FOR EACH ROW EXECUTE FUNCTION {table}_log();", db="sharesink")


def _regressions(cluster: Cluster, table: str) -> int:
    """Writes that put a key on an older version than one it already had."""
    return pg_scalar(cluster, "SELECT count(*) FROM (SELECT version, max(version) OVER ("
                              "PARTITION BY id ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING"
                              f" AND 1 PRECEDING) AS newest FROM {table}_writes) w"
                              " WHERE version < newest", default=-1)


def _stale(cluster: Cluster, table: str) -> int:
    return pg_scalar(cluster, f'SELECT count(*) FROM "{table}" WHERE version <> {VERSIONS}',
                     default=-1)


def _wait_all_acknowledged(cluster: Cluster, worker: Rest, name: str, timeout: float = 300) -> None:
    """Every record of the topic acknowledged by the connector's share group: no lag left on
    any partition (the start offsets the broker reports may trail behind, and are not used)."""
    group = group_of(name)

    def done() -> bool:
        offsets = share_group_offsets(cluster, group)
        return len(offsets) == PARTITIONS and all(v["lag"] == 0 for v in offsets.values())

    wait_for(f"share group {group} acknowledged all {N} records", done, timeout=timeout,
             interval=2, on_timeout=lambda: f"{share_group_offsets(cluster, group)}\n"
                                            + connector_trace(worker, name))


def _errors(result: dict) -> Dict[str, List[str]]:
    return Rest.validation_errors(result)


def _validate_flag(worker: Rest, cfg: Dict[str, str]) -> Dict[str, List[str]]:
    plugin = cfg["connector.class"]
    return _errors(worker._retry_busy(lambda: worker.put(
        f"/connector-plugins/{_q(plugin)}/config/validate", cfg)))


def _refused(worker: Rest, name: str, cfg: Dict[str, str]) -> str:
    """The worker's answer to creating the connector: an HTTP 400 naming the error."""
    try:
        worker._retry_busy(lambda: worker.put(f"/connectors/{_q(name)}/config", cfg))
    except RestError as e:
        assert e.status == 400, e
        return json.dumps(e.body)
    delete_connector(worker, name)
    pytest.fail(f"connector {name} was created: {cfg}", pytrace=False)


def test_keyed_versions_classic_refused_unordered_and_guarded(cluster: Cluster, worker: Rest,
                                                               postgres, versions_topic):
    topic = versions_topic
    fig: Dict[str, object] = {"keys": KEYS, "versions": VERSIONS, "partitions": PARTITIONS,
                              "produced": N, "share_tasks": SHARE_TASKS}
    t_start = time.monotonic()

    # 1. The classic runtime, one task per partition: every row on its last version.
    classic = uniq("order_classic_")
    cfg = {"name": classic, "connector.class": JDBC_SINK, "topics": topic,
           "tasks.max": str(PARTITIONS), **_sink_settings(postgres, classic)}
    try:
        worker._retry_busy(lambda: worker.put(f"/connectors/{_q(classic)}/config", cfg))
        wait_for(f"{classic}: {KEYS} rows on version {VERSIONS}",
                 lambda: _rows(cluster, classic) == KEYS and _stale(cluster, classic) == 0,
                 timeout=300, interval=2, on_timeout=lambda: connector_trace(worker, classic))
        fig["classic_stale_rows"] = _stale(cluster, classic)
    finally:
        delete_connector(worker, classic)

    # 2. Share mode without a choice: refused, on insert.mode, in both forms.
    refused = uniq("order_refused_")
    flag = flag_config(refused, topic, JDBC_SINK, SHARE_TASKS, **_sink_settings(postgres, refused))
    flag_errors = _validate_flag(worker, flag)
    assert set(flag_errors) == {"insert.mode"}, f"flag form: {flag_errors}"
    message = " ".join(flag_errors["insert.mode"])
    for choice in ("share.ordering=unordered", "share.ordering=offset-guarded",
                   f"remove {SHARE_FLAG}=share"):
        assert choice in message, f"{choice} not named: {message}"
    explicit = share_config(cluster, refused, topic, JDBC_SINK, SHARE_TASKS,
                            **_sink_settings(postgres, refused))
    explicit_errors = _errors(worker.validate(SHARE_SINK, explicit))
    assert set(explicit_errors) == {"insert.mode"}, f"explicit form: {explicit_errors}"
    assert f"classic runtime (connector.class={JDBC_SINK}" in " ".join(explicit_errors["insert.mode"])
    answer = _refused(worker, refused, flag)
    assert "insert.mode=upsert" in answer and "share.ordering" in answer, answer
    # offset-guarded without the partition and offset in the record: refused on share.ordering.
    no_coords = _validate_flag(worker, dict(flag, **{"share.ordering": "offset-guarded"}))
    assert set(no_coords) == {"share.ordering"}, no_coords
    fig["no_choice"] = "validation error on insert.mode (flag and explicit forms); create refused (400)"
    fig["no_choice_message"] = message[:400]

    # 3. Share mode, explicit opt-out: the stale rows are the price.
    unordered = uniq("order_unordered_")
    _create_logged_table(cluster, postgres, unordered)
    cfg = flag_config(unordered, topic, JDBC_SINK, SHARE_TASKS,
                      **_sink_settings(postgres, unordered, **{"share.ordering": "unordered"}))
    try:
        worker._retry_busy(lambda: worker.put(f"/connectors/{_q(unordered)}/config", cfg))
        worker.wait_connector_running(unordered, tasks=SHARE_TASKS, timeout=180)
        _wait_all_acknowledged(cluster, worker, unordered)
        assert _rows(cluster, unordered) == KEYS
        fig["unordered_stale_rows"] = _stale(cluster, unordered)
        fig["unordered_regressions"] = _regressions(cluster, unordered)
        fig["unordered_writes"] = pg_scalar(cluster, f"SELECT count(*) FROM {unordered}_writes",
                                            default=-1)
    finally:
        delete_connector(worker, unordered)

    # 4. Share mode with the offset guard: the row keeps its key's newest version.
    guarded = uniq("order_guarded_")
    cluster.psql(f"SET ROLE {postgres['user']};\n"
                 f"CREATE TABLE {guarded} (id bigint PRIMARY KEY, version bigint NOT NULL,"
                 " kafka_partition integer, kafka_offset bigint);\n"
                 + GUARD_SQL +
                 f"CREATE TRIGGER {guarded}_keep_newest BEFORE UPDATE ON {guarded}"
                 " FOR EACH ROW EXECUTE FUNCTION sharesink_keep_newest();", db="sharesink")
    cfg = flag_config(guarded, topic, JDBC_SINK, SHARE_TASKS, **_sink_settings(
        postgres, guarded, **{
            "share.ordering": "offset-guarded",
            "transforms": "coords",
            "transforms.coords.type": "org.apache.kafka.connect.transforms.InsertField$Value",
            "transforms.coords.partition.field": "kafka_partition",
            "transforms.coords.offset.field": "kafka_offset"}))
    try:
        assert _validate_flag(worker, cfg) == {}
        worker._retry_busy(lambda: worker.put(f"/connectors/{_q(guarded)}/config", cfg))
        worker.wait_connector_running(guarded, tasks=SHARE_TASKS, timeout=180)
        _wait_all_acknowledged(cluster, worker, guarded)
        assert _rows(cluster, guarded) == KEYS
        fig["guarded_stale_rows"] = _stale(cluster, guarded)
    finally:
        delete_connector(worker, guarded)

    fig["seconds"] = round(time.monotonic() - t_start, 1)
    record_figures("18-ordering-keyed-versions", **fig)
    assert fig["classic_stale_rows"] == 0, fig
    assert fig["guarded_stale_rows"] == 0, f"the offset guard left stale rows: {fig}"
    # The control: without the guard share mode writes older versions over newer ones; if this
    # ever reads 0 the workload no longer shows what the guard is for.
    assert fig["unordered_regressions"] > 0, f"no version written after a newer one: {fig}"


def test_iceberg_sink_is_refused_in_share_mode(cluster: Cluster, worker: Rest):
    name = uniq("iceberg_")
    plugins = [p["class"] for p in worker.plugins()]
    assert ICEBERG_SINK in plugins, f"the harness's iceberg plugin directory is not loaded: {plugins}"
    settings = {"iceberg.tables": "db.orders", "iceberg.catalog.type": "rest",
                "iceberg.catalog.uri": "http://127.0.0.1:1"}
    flag = flag_config(name, name, ICEBERG_SINK, 2, **settings)
    flag_errors = _validate_flag(worker, flag)
    assert set(flag_errors) == {"connector.class"}, f"flag form: {flag_errors}"
    message = " ".join(flag_errors["connector.class"])
    assert "cannot run in share mode" in message and "commits its own offsets" in message, message
    assert f"remove {SHARE_FLAG}=share" in message, message
    # Whatever share.ordering says.
    forced = _validate_flag(worker, dict(flag, **{"share.ordering": "unordered"}))
    assert set(forced) == {"connector.class"}, forced
    explicit = share_config(cluster, name, name, ICEBERG_SINK, 2, **settings)
    explicit_errors = _errors(worker.validate(SHARE_SINK, explicit))
    assert set(explicit_errors) == {"share.sink.connector.class"}, f"explicit: {explicit_errors}"
    answer = _refused(worker, name, flag)
    assert "commits its own offsets" in answer, answer
    # On the classic runtime the same connector validates (its catalog is not reached here).
    classic = {k: v for k, v in flag.items() if k != SHARE_FLAG}
    assert _validate_flag(worker, classic) == {}
    record_figures("18-ordering-iceberg-refused", produced=0, delivered=0, duplicated=0, lost=0,
                   message=message[:400])


STUCK_MS = 15_000
WINDOW = 100


def test_a_sink_committing_its_own_offsets_fails_and_accepts_nothing(cluster: Cluster,
                                                                      worker: Rest):
    name = uniq("ownoffsets_")
    topic = name
    cluster.create_topic(topic, partitions=1)
    sink = BufferingSink(cluster, name)
    records = 3 * WINDOW
    # One producer batch per window's worth: the broker lends whole batches, so the window
    # (WINDOW records) then holds the first batch only and the task gets no more.
    for start in range(0, records, WINDOW):
        produce_values(cluster, topic, [f"{name}-{i:04d}" for i in range(start, start + WINDOW)])
    cfg = share_config(cluster, name, topic, BUFFERING_SINK, 1)
    cfg.update(sink.settings(**{"own.offsets": "true"}))
    cfg.update({"share.partition.max.record.locks": str(WINDOW),
                "share.commit.interval.ms": "1000",
                "share.task.stuck.timeout.ms": str(STUCK_MS)})
    t0 = time.monotonic()
    try:
        worker._retry_busy(lambda: worker.put(f"/connectors/{_q(name)}/config", cfg))

        def failed_trace():
            try:
                st = worker.connector_status(name)
            except RestError:
                return None  # no status yet
            for t in st.get("tasks", []):
                if t.get("state") == "FAILED":
                    return t.get("trace") or "FAILED"
            return None

        trace = wait_for("the task FAILED", failed_trace, timeout=STUCK_MS / 1000 + 90, interval=1,
                         on_timeout=lambda: connector_trace(worker, name) + "\n" + sink.trace_tail())
        seconds = round(time.monotonic() - t0, 1)
        assert "manages its own offsets" in trace, trace[:3000]
        assert f"share.task.stuck.timeout.ms={STUCK_MS}" in trace, trace[:3000]
        put = sink.put_records()
        precommits = sink.events("precommit")
        assert len(put) == WINDOW, f"{len(put)} records put: the window is {WINDOW}"
        assert precommits and all(e.kv("returned") == "{}" for e in precommits), precommits[-3:]
        offsets = settled_share_group_offsets(cluster, group_of(name))
        assert offsets.get((topic, 0), {}).get("start") == 0, f"something ACCEPTed: {offsets}"
        assert offsets[(topic, 0)]["lag"] == records, offsets
        record_figures("18-ordering-own-offsets-fails", produced=records, put=len(put),
                       accepted=0, precommits_returning_empty=len(precommits),
                       seconds_to_failed=seconds, group=str(offsets),
                       message=trace.splitlines()[0][:500])
    finally:
        delete_connector(worker, name)
