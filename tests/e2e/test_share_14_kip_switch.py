"""Scenario 14: the KIP's switch. With sharesink's REST extension on the worker (the harness adds
`rest.extension.classes=io.sharesink.connect.rest.ShareModeRestExtension`), a sink connector
written with its own `connector.class` and `consumer.override.group.protocol=share` runs through
sharesink on a share group, and the REST API shows what the operator wrote.

- POST /connectors in the flag form with Kafka's FileStream sink: every record once in the file,
  on the share group `connect-share-<name>`; the config topic holds the ShareSinkConnector form;
  GET /connectors/{c}, /config, /status, /tasks and ?expand=info,status show the operator's form
  and type `sink`.
- PUT then GET /config returns the same map; PATCH keeps share mode; a PUT without the flag moves
  the connector back to the classic runtime.
- validate through the flag form reports sharesink's errors and the sink's own, on the
  operator's keys.
- two workers: requests sent to worker 1 are rewritten once (the stored form forwarded to the
  leader is left alone), and a restart of worker 0 keeps the connector in share mode.
- the flag form with Debezium's JDBC sink into PostgreSQL, more tasks than partitions: every
  record once in the table.
- the worker-wide default (`sharesink.default.group.protocol=share` on the worker): a connector
  without the flag runs in share mode, one with `consumer.override.group.protocol=classic` stays
  on the classic runtime.
"""

from __future__ import annotations

import re
import time
import urllib.parse
from typing import Dict

from harness.cluster import Cluster, Rest, default_plugin_archive
from helpers import (FILE_SINK, JDBC_SINK, SHARE_FLAG, SHARE_SINK, STRING_CONVERTER, LogMark,
                     Progress, connector_trace, count_figures, delete_connector, drain_group,
                     file_line_count, file_lines, flag_config, group_of, jdbc_config,
                     pg_distinct_ids, pg_rows, produce_rows, produce_values, record_figures,
                     settled_share_group_offsets, share_group_offsets, stop_connector,
                     stop_worker_if_running, stored_config, total_lag, uniq, wait_for, worker_log)

BUFFERING_SINK = "io.sharesink.testsinks.BufferingSinkConnector"
FILE_SINK_TASK = "org.apache.kafka.connect.file.FileStreamSinkTask"
N = 3_000
TASKS = 4


def _q(name: str) -> str:
    return urllib.parse.quote(name, safe="")


def _file_flag_config(cluster: Cluster, name: str, topic: str, tasks: int = TASKS) -> Dict[str, str]:
    return flag_config(name, topic, FILE_SINK, tasks, file=str(cluster.state_dir / f"{name}.out"),
                       **{"key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER})


def _share_member_lines(mark: LogMark, name: str):
    """The worker log's lines of a sharesink task of `name` joining its share group."""
    return mark.lines(_share_member_pattern(name))


def _share_member_pattern(name: str) -> str:
    return (rf"(?P<task>{name}-\d+): legacy sink task {FILE_SINK_TASK} runs on share group "
            rf"{group_of(name)}\b")


def _share_tasks(mark: LogMark, name: str) -> set:
    """The task names of `name` that joined the share group since the mark."""
    rx = re.compile(_share_member_pattern(name))
    return {m.group("task") for l in _share_member_lines(mark, name) for m in [rx.search(l)] if m}


def _assert_stored_share_form(cluster: Cluster, name: str, operator: Dict[str, str]) -> dict:
    stored = stored_config(cluster, name)
    assert stored is not None, f"connector {name} is not in the config topic"
    assert stored["connector.class"] == SHARE_SINK, stored
    assert stored["share.sink.connector.class"] == operator["connector.class"], stored
    assert stored["share.internal.form"] == "flag", stored
    # The switch is not stored under its own key: a source connector's clients would get it.
    assert SHARE_FLAG not in stored and stored["share.internal.form.flag"] == "share", stored
    return stored


def _wait_running(rest: Rest, name: str, tasks: int) -> dict:
    return rest.wait_connector_running(name, tasks=tasks, timeout=120)


def test_flag_form_filestream_every_record_once_shown_as_written(cluster: Cluster, worker: Rest):
    name = uniq("kip-")
    topic = name
    out = cluster.state_dir / f"{name}.out"
    cluster.create_topic(topic, partitions=3)
    values = [f"{name}-v{i:05d}" for i in range(N)]
    keys = [f"k{i}" for i in range(N)]
    produce_values(cluster, topic, values[: N // 2], keys=keys[: N // 2])
    cfg = _file_flag_config(cluster, name, topic)
    # An operator's own share.* key passes through the flag form (scenario 1's commit interval).
    cfg["share.commit.interval.ms"] = "1000"
    # Connect loaded the extension from the plugin directory on plugin.path.
    assert re.search(r"sharesink REST extension \S+ registered", worker_log(cluster, 0)), \
        "worker 0 did not register sharesink's REST extension"
    mark = LogMark(cluster, 0)
    try:
        created = worker._retry_busy(lambda: worker.post("/connectors", {"name": name, "config": cfg}))
        assert created["config"] == cfg, f"POST answered another config: {created['config']}"
        assert created["type"] == "sink", created
        status = _wait_running(worker, name, TASKS)
        assert status["type"] == "sink", status
        _assert_stored_share_form(cluster, name, cfg)
        wait_for("every task on the share group",
                 lambda: len(_share_tasks(mark, name)) >= TASKS)

        # What the operator wrote, wherever the API shows the connector.
        assert worker.get(f"/connectors/{_q(name)}/config") == cfg
        info = worker.get(f"/connectors/{_q(name)}")
        assert info["config"] == cfg and info["type"] == "sink", info
        tasks = worker.get(f"/connectors/{_q(name)}/tasks")
        assert len(tasks) == TASKS, tasks
        for t in tasks:
            assert t["config"]["task.class"] == FILE_SINK_TASK, t
            assert not any(k.startswith("share.") for k in t["config"]), t
        expanded = worker.get("/connectors?expand=info&expand=status")[name]
        assert expanded["info"]["config"] == cfg, expanded
        assert expanded["info"]["type"] == "sink" and expanded["status"]["type"] == "sink", expanded
        only_status = worker.get("/connectors?expand=status")[name]
        assert only_status["status"]["type"] == "sink", only_status

        produce_values(cluster, topic, values[N // 2:], keys=keys[N // 2:])
        Progress("lines in the file", lambda: file_line_count(out)).wait(
            N, stall=90, timeout=600, on_timeout=lambda: connector_trace(worker, name))
        time.sleep(3)  # one more commit cycle, then stop: the final commit ACCEPTs the rest
        stop_connector(worker, name)
        # Checked once the connector is gone: while a partition's last records are ACCEPTed, the
        # start offset the broker reports can stay behind them (seen on Kafka 4.4 with every
        # record ACCEPTed by the tasks), so a running lag proves nothing either way.
        offs = settled_share_group_offsets(cluster, group_of(name))
        lag = total_lag(offs)
        left = drain_group(cluster, topic, group_of(name), N, timeout_ms=10000)
        figs = count_figures(values, file_lines(out))
        record_figures("14-kip-switch-filestream", tasks=TASKS, partitions=3, **figs,
                       group_lag_after_stop=lag, left_in_group_after_stop=left)
        assert figs["lost"] == 0 and figs["unexpected"] == 0, figs
        assert figs["duplicated"] == 0, f"{figs['duplicated']} duplicates without any fault"
        # The records went through the share group, not a classic consumer group: it has
        # offsets for every partition, and nothing is left in it.
        assert len(offs) == 3, f"share group {group_of(name)} offsets: {offs}"
        assert lag == 0, f"share group lag after stop: {offs}"
        assert left == 0, f"{left} records were still in the share group after the run"
    finally:
        delete_connector(worker, name)


def test_put_get_round_trip_patch_and_back_to_classic(cluster: Cluster, worker: Rest):
    name = uniq("kip-rt-")
    topic = name
    cluster.create_topic(topic, partitions=2)
    cfg = _file_flag_config(cluster, name, topic, tasks=2)
    path = f"/connectors/{_q(name)}/config"
    exchanges = []  # the REST round trip as it happened, kept with the figures for the notes
    try:
        answer = worker._retry_busy(lambda: worker.put(path, cfg))
        exchanges.append({"request": f"PUT {path}", "body": cfg, "response": answer})
        assert answer["config"] == cfg and answer["type"] == "sink", answer
        got = worker.get(path)
        exchanges.append({"request": f"GET {path}", "response": got})
        assert got == cfg, "PUT then GET of the config differ"
        status = _wait_running(worker, name, 2)
        exchanges.append({"request": f"GET /connectors/{_q(name)}/status", "response": status})
        stored = _assert_stored_share_form(cluster, name, cfg)
        exchanges.append({"config topic holds": stored})
        # The same PUT again (what Strimzi does whenever it sees a difference) changes nothing.
        again = worker._retry_busy(lambda: worker.put(path, cfg))
        assert again["config"] == cfg, again
        assert worker.get(path) == cfg

        # PATCH is applied to what the operator sees; share mode stays.
        worker._retry_busy(lambda: worker.patch(path, {"tasks.max": "3"}))
        patched = dict(cfg, **{"tasks.max": "3"})
        wait_for("the patched config", lambda: worker.get(path) == patched)
        _assert_stored_share_form(cluster, name, patched)
        assert _wait_running(worker, name, 3)["type"] == "sink"

        # Moving back: the same map without the flag runs on the classic runtime.
        classic = {k: v for k, v in patched.items() if k != SHARE_FLAG}
        mark = LogMark(cluster, 0)
        answer = worker._retry_busy(lambda: worker.put(path, classic))
        exchanges.append({"request": f"PUT {path}", "body": classic, "response": answer})
        got = worker.get(path)
        exchanges.append({"request": f"GET {path}", "response": got})
        assert got == classic
        stored = stored_config(cluster, name)
        exchanges.append({"config topic holds": stored})
        assert stored == classic, f"the classic form is stored as {stored}"
        wait_for("a classic WorkerSinkTask of the connector",
                 lambda: mark.lines(rf"WorkerSinkTask\{{id={name}-\d+\}}"), timeout=120,
                 on_timeout=lambda: connector_trace(worker, name))
        assert _wait_running(worker, name, 3)["type"] == "sink"
        record_figures("14-kip-switch-round-trip", exchanges=exchanges)
    finally:
        delete_connector(worker, name)


def test_a_connector_without_the_flag_stays_classic(cluster: Cluster, worker: Rest):
    name = uniq("kip-classic-")
    cluster.create_topic(name, partitions=1)
    cfg = {k: v for k, v in _file_flag_config(cluster, name, name, tasks=1).items()
           if k != SHARE_FLAG}
    mark = LogMark(cluster, 0)
    try:
        worker._retry_busy(lambda: worker.put(f"/connectors/{_q(name)}/config", cfg))
        assert stored_config(cluster, name) == cfg
        wait_for("a classic WorkerSinkTask", lambda: mark.lines(rf"WorkerSinkTask\{{id={name}-0\}}"),
                 timeout=120, on_timeout=lambda: connector_trace(worker, name))
        assert not _share_member_lines(mark, name)
    finally:
        delete_connector(worker, name)


def test_validate_through_the_flag_form(cluster: Cluster, worker: Rest, tmp_path):
    name = uniq("kip-validate-")

    def validate(plugin: str, cfg: Dict[str, str]) -> dict:
        return worker._retry_busy(lambda: worker.put(
            f"/connector-plugins/{_q(plugin)}/config/validate", cfg))

    def errors(result: dict) -> Dict[str, list]:
        return Rest.validation_errors(result)

    base = flag_config(name, name, BUFFERING_SINK, 2, **{"data.dir": str(tmp_path / "data"),
                                                        "control.dir": str(tmp_path / "ctl")})
    ok = validate(BUFFERING_SINK, base)
    assert errors(ok) == {}, errors(ok)
    assert ok["name"] == BUFFERING_SINK, ok["name"]
    shown = {c["value"]["name"]: c["value"] for c in ok["configs"]}
    assert shown["connector.class"]["value"] == BUFFERING_SINK, shown["connector.class"]
    assert "share.internal.form" not in shown and "share.sink.connector.class" not in shown
    assert "roll.records" in shown, "the sink's own keys are missing"

    # sharesink's own error, on the key to change.
    theirs = validate(BUFFERING_SINK, dict(base, **{"share.record.lock.duration.ms": "15000",
                                                    "share.commit.interval.ms": "14000"}))
    assert "share.commit.interval.ms" in errors(theirs), errors(theirs)
    assert theirs["error_count"] >= 1

    # The sink's own validation (a Range validator and a required key of its ConfigDef).
    sink = dict(base, **{"roll.records": "-1"})
    del sink["data.dir"]
    sink_errors = errors(validate(BUFFERING_SINK, sink))
    assert {"roll.records", "data.dir"} <= set(sink_errors), sink_errors
    # The alias in the path, the class in the body: the same result.
    by_alias = errors(validate("BufferingSinkConnector", sink))
    assert by_alias == sink_errors, by_alias

    # The flag on a source connector is refused with a message saying why.
    from harness.cluster import RestError
    try:
        validate("FileStreamSource", dict(base, **{"connector.class": "FileStreamSource"}))
        refused = None
    except RestError as e:
        refused = e
    assert refused is not None and refused.status == 400, refused
    assert "not a sink connector" in str(refused.body), refused.body


def test_follower_forwarding_and_worker_restart_keep_share_mode(cluster: Cluster, worker: Rest):
    name = uniq("kip-two-")
    topic = name
    out = cluster.state_dir / f"{name}.out"
    cluster.create_topic(topic, partitions=2)
    cfg = _file_flag_config(cluster, name, topic, tasks=2)
    path = f"/connectors/{_q(name)}/config"
    try:
        joined = LogMark(cluster, 1)
        cluster.start_worker(1, plugin_archive=default_plugin_archive())
        w1 = cluster.rest(1)
        # Worker 1 is a follower (worker 0 leads): what it is sent, it forwards to worker 0.
        wait_for("worker 1 in the group with worker 0 as its leader",
                 lambda: joined.lines(rf"leaderUrl='{re.escape(cluster.worker_url(0))}/?'"),
                 timeout=120)
        created = w1._retry_busy(lambda: w1.post("/connectors", {"name": name, "config": cfg}))
        assert created["config"] == cfg and created["type"] == "sink", created
        _wait_running(worker, name, 2)
        _assert_stored_share_form(cluster, name, cfg)
        w1._retry_busy(lambda: w1.put(path, cfg))
        w1._retry_busy(lambda: w1.patch(path, {"file": str(out)}))  # same value: no change
        for rest in (worker, w1):
            assert rest.get(path) == cfg
            assert rest.get(f"/connectors/{_q(name)}/status")["type"] == "sink"
        _assert_stored_share_form(cluster, name, cfg)

        # Worker 0 restarts (worker 1 still serves): the connector comes back in share mode.
        cluster.stop_worker(0)
        cluster.start_worker(0, plugin_archive=default_plugin_archive())
        _wait_running(worker, name, 2)
        # Right after its start the worker's herder may be too busy to say which form the
        # connector is in (the extension waits 500 ms, then answers as the runtime would, and
        # learns the form in the background: docs/security.md); it says sink once it knows.
        wait_for("status type sink after the restart",
                 lambda: worker.get(f"/connectors/{_q(name)}/status")["type"] == "sink",
                 timeout=60)
        assert worker.get(path) == cfg
        _assert_stored_share_form(cluster, name, cfg)
        values = [f"{name}-{i}" for i in range(500)]
        produce_values(cluster, topic, values)
        Progress("lines in the file", lambda: file_line_count(out)).wait(
            len(values), stall=90, timeout=300, on_timeout=lambda: connector_trace(worker, name))
        assert count_figures(values, file_lines(out))["lost"] == 0
        assert share_group_offsets(cluster, group_of(name)), "no share group offsets"
    finally:
        delete_connector(worker, name)
        stop_worker_if_running(cluster, 1)


JDBC_N = 10_000
JDBC_TASKS = 6


def test_flag_form_jdbc_every_record_once(cluster: Cluster, worker: Rest, postgres):
    name = uniq("kip_jdbc_")
    topic = table = name
    cluster.create_topic(topic, partitions=3)
    produce_rows(cluster, topic, range(0, JDBC_N // 2))
    # No primary key: a record written twice is two rows.
    cfg = flag_config(name, topic, JDBC_SINK, JDBC_TASKS,
                      **jdbc_config(postgres, **{"insert.mode": "insert",
                                                 "primary.key.mode": "none",
                                                 "batch.size": "500"}))
    try:
        created = worker._retry_busy(lambda: worker.post("/connectors", {"name": name, "config": cfg}))
        assert created["config"] == cfg and created["type"] == "sink", created
        assert _wait_running(worker, name, JDBC_TASKS)["type"] == "sink"
        _assert_stored_share_form(cluster, name, cfg)
        produce_rows(cluster, topic, range(JDBC_N // 2, JDBC_N))
        Progress("distinct ids in the table", lambda: pg_distinct_ids(cluster, table)).wait(
            JDBC_N, stall=120, timeout=600, on_timeout=lambda: connector_trace(worker, name))
        time.sleep(3)  # one more commit cycle, then stop: the final commit ACCEPTs the rest
        stop_connector(worker, name)
        lag = total_lag(settled_share_group_offsets(cluster, group_of(name)))
        rows, distinct = pg_rows(cluster, table), pg_distinct_ids(cluster, table)
        record_figures("14-kip-switch-jdbc", tasks=JDBC_TASKS, partitions=3, produced=JDBC_N,
                       delivered=rows, distinct_delivered=distinct, duplicated=rows - distinct,
                       lost=JDBC_N - distinct, group_lag_after_stop=lag)
        assert distinct == JDBC_N, f"{JDBC_N - distinct} records lost"
        assert rows == distinct, f"{rows - distinct} duplicates without any fault"
        assert lag == 0, f"share group lag after stop: {lag}"
    finally:
        delete_connector(worker, name)


def test_worker_wide_default_runs_connectors_without_the_flag_in_share_mode(cluster: Cluster,
                                                                             worker: Rest):
    name = uniq("kip-default-")
    classic_name = uniq("kip-default-classic-")
    cluster.create_topic(name, partitions=2)
    cluster.create_topic(classic_name, partitions=1)
    out = cluster.state_dir / f"{name}.out"
    # The operator's connector: no flag at all.
    cfg = {k: v for k, v in _file_flag_config(cluster, name, name, tasks=3).items()
           if k != SHARE_FLAG}
    # Moving one connector back while the worker default is share: the flag set to classic.
    classic = dict(_file_flag_config(cluster, classic_name, classic_name, tasks=1),
                   **{SHARE_FLAG: "classic"})
    try:
        joined = LogMark(cluster, 1)
        cluster.start_worker(1, plugin_archive=default_plugin_archive(),
                             extra={"sharesink.default.group.protocol": "share"})
        w1 = cluster.rest(1)
        wait_for("worker 1 in the group",
                 lambda: joined.lines(rf"leaderUrl='{re.escape(cluster.worker_url(0))}/?'"),
                 timeout=120)
        # Sent to worker 1, whose default is share; worker 0 leads and stores what it is given.
        mark = LogMark(cluster, 0)
        mark1 = LogMark(cluster, 1)
        created = w1._retry_busy(lambda: w1.post("/connectors", {"name": name, "config": cfg}))
        assert created["config"] == cfg and created["type"] == "sink", created
        stored = stored_config(cluster, name)
        assert stored is not None and stored["connector.class"] == SHARE_SINK, stored
        assert stored["share.sink.connector.class"] == FILE_SINK, stored
        assert stored["share.internal.form"] == "worker-default", stored
        assert w1.get(f"/connectors/{_q(name)}/config") == cfg
        assert _wait_running(worker, name, 3)["type"] == "sink"
        values = [f"{name}-{i}" for i in range(1_000)]
        produce_values(cluster, name, values)
        Progress("lines in the file", lambda: file_line_count(out)).wait(
            len(values), stall=90, timeout=300, on_timeout=lambda: connector_trace(worker, name))
        assert count_figures(values, file_lines(out))["lost"] == 0
        joined_share = mark.lines(_share_member_pattern(name)) + mark1.lines(_share_member_pattern(name))
        assert joined_share, "no task of the connector joined the share group"

        w1._retry_busy(lambda: w1.put(f"/connectors/{_q(classic_name)}/config", classic))
        assert stored_config(cluster, classic_name) == classic
        wait_for("a classic WorkerSinkTask of the connector moved back",
                 lambda: (mark.lines(rf"WorkerSinkTask\{{id={classic_name}-0\}}")
                          or mark1.lines(rf"WorkerSinkTask\{{id={classic_name}-0\}}")),
                 timeout=120, on_timeout=lambda: connector_trace(worker, classic_name))
    finally:
        delete_connector(worker, name)
        delete_connector(worker, classic_name)
        stop_worker_if_running(cluster, 1)


def test_consumer_override_refused_by_a_none_policy(cluster: Cluster, worker: Rest, tmp_path):
    """The worker's connector.client.config.override.policy decides on consumer.override.* in
    share mode as it does for a classic sink (the runtime asks it for sink connectors only, and
    the stored form is a source connector, so sharesink asks it): worker 1 runs policy None,
    worker 0 the default (All). Validation runs on the worker that is asked."""
    name = uniq("kip-policy-")
    cfg = dict(_file_flag_config(cluster, name, name, tasks=1),
               **{"consumer.override.max.poll.records": "10"})
    refused = ("The 'None' policy does not allow 'max.poll.records' to be overridden in the "
               "connector configuration.")
    try:
        cluster.start_worker(1, plugin_archive=default_plugin_archive(),
                             extra={"connector.client.config.override.policy": "None"})
        w1 = cluster.rest(1)

        def errors(rest: Rest, config: Dict[str, str]) -> Dict[str, list]:
            return Rest.validation_errors(rest._retry_busy(lambda: rest.put(
                f"/connector-plugins/{_q(FILE_SINK)}/config/validate", config)))

        on_none = errors(w1, cfg)
        assert on_none.get("consumer.override.max.poll.records") == [refused], on_none
        # The switch itself is never an override the policy sees.
        assert SHARE_FLAG not in on_none, on_none
        assert errors(worker, cfg) == {}, "policy All refused an override"
        without = {k: v for k, v in cfg.items() if k != "consumer.override.max.poll.records"}
        assert errors(w1, without) == {}, "policy None refused the flag form itself"
    finally:
        stop_worker_if_running(cluster, 1)
