"""Scenario 8: validation through the worker's REST validate endpoint
(`PUT /connector-plugins/ShareSinkConnector/config/validate`).

Each broken configuration must give a clear error on the key that is wrong, and a valid one
must give none; the legacy connector's own settings are validated too (its keys appear in the
answer).
"""

from __future__ import annotations

from typing import Dict, List

import pytest

from harness.cluster import Cluster, Rest, RestError
from helpers import (FILE_SINK, FILE_SOURCE, JDBC_SINK, SHARE_SINK, flag_config, record_figures,
                     uniq)

PLUGIN = "ShareSinkConnector"


def _base(cluster: Cluster, **extra) -> Dict[str, str]:
    name = uniq("validate-")
    cfg = {
        "name": name,
        "share.sink.connector.class": FILE_SINK,
        "share.consumer.bootstrap.servers": cluster.bootstrap,
        "topics": name,
        "tasks.max": "2",
        "file": str(cluster.state_dir / f"{name}.out"),
    }
    cfg.update({k: str(v) for k, v in extra.items()})
    return cfg


def _errors(worker: Rest, cfg) -> Dict[str, List[str]]:
    result = worker.validate(PLUGIN, cfg)
    errs = Rest.validation_errors(result)
    shown = {k: v for k, v in cfg.items() if k.startswith('share.') or k in ('file',)}
    print(f"\nvalidate({shown}) -> {errs}")
    return errs


def test_valid_config_has_no_errors_and_includes_the_legacy_keys(cluster: Cluster, worker: Rest):
    cfg = _base(cluster)
    result = worker.validate(PLUGIN, cfg)
    errs = Rest.validation_errors(result)
    names = {c["value"]["name"] for c in result.get("configs", [])}
    assert errs == {}, f"a valid configuration got errors: {errs}"
    # The legacy FileStreamSinkConnector's own ConfigDef ('file') is part of the answer.
    assert "file" in names, f"the legacy connector's keys are missing from validate: {sorted(names)}"
    for key in ("share.sink.connector.class", "share.commit.interval.ms", "share.engine",
                "share.group.id", "share.record.lock.duration.ms"):
        assert key in names, f"{key} is not a documented key of the connector: {sorted(names)}"


def test_missing_sink_class(cluster: Cluster, worker: Rest):
    cfg = _base(cluster)
    del cfg["share.sink.connector.class"]
    errs = _errors(worker, cfg)
    assert "share.sink.connector.class" in errs, errs
    msg = " ".join(errs["share.sink.connector.class"])
    assert "share.sink.connector.class" in msg or "missing" in msg.lower(), msg


def test_unknown_sink_class(cluster: Cluster, worker: Rest):
    cls = "com.example.NoSuchSinkConnector"
    errs = _errors(worker, _base(cluster, **{"share.sink.connector.class": cls}))
    assert "share.sink.connector.class" in errs, errs
    msg = " ".join(errs["share.sink.connector.class"])
    assert cls in msg, f"the error does not name the class: {msg}"


def test_non_sink_class(cluster: Cluster, worker: Rest):
    errs = _errors(worker, _base(cluster, **{"share.sink.connector.class": FILE_SOURCE}))
    assert "share.sink.connector.class" in errs, errs
    msg = " ".join(errs["share.sink.connector.class"])
    assert FILE_SOURCE in msg or "FileStreamSourceConnector" in msg, msg
    assert "sink" in msg.lower(), f"the error does not say it is not a sink: {msg}"


def test_share_sink_connector_itself_is_not_a_legacy_sink(cluster: Cluster, worker: Rest):
    errs = _errors(worker, _base(cluster, **{"share.sink.connector.class":
                                             "io.sharesink.connect.ShareSinkConnector"}))
    assert "share.sink.connector.class" in errs, errs


@pytest.mark.parametrize("cls", ["java.lang.Object", "java.lang.Runnable",
                                 "org.apache.kafka.connect.sink.SinkConnector"])
def test_no_runnable_sink_class_is_an_error_on_its_key_not_a_500(cluster: Cluster, worker: Rest,
                                                                 cls: str):
    """Issue 40: an interface or java.lang.Object made the class check throw (a 500 from both
    validate and create); the abstract SinkConnector itself passed it."""
    cfg = _base(cluster, **{"share.sink.connector.class": cls})
    errs = _errors(worker, cfg)
    assert "share.sink.connector.class" in errs, errs
    assert cls in " ".join(errs["share.sink.connector.class"]), errs
    body = {"name": cfg["name"], "config": dict(cfg, **{"connector.class": PLUGIN})}
    try:
        worker.post("/connectors", body)
        pytest.fail(f"a connector naming {cls} was created")
    except RestError as e:
        assert e.status == 400, e
        assert cls in str(e.body), e.body
    assert cfg["name"] not in worker.connectors()


def test_commit_interval_too_close_to_lock_duration(cluster: Cluster, worker: Rest):
    errs = _errors(worker, _base(cluster, **{"share.record.lock.duration.ms": "15000",
                                             "share.commit.interval.ms": "14000"}))
    keys = {"share.commit.interval.ms", "share.record.lock.duration.ms"} & set(errs)
    assert keys, f"no error on the commit interval / lock duration: {errs}"
    msg = " ".join(m for k in keys for m in errs[k])
    assert "share.commit.interval.ms" in errs, (
        f"the error is not on share.commit.interval.ms (the key to change): {errs}")
    assert "lock" in msg.lower(), f"the error does not mention the lock duration: {msg}"
    # and a commit interval well below the lock is fine
    ok = _errors(worker, _base(cluster, **{"share.record.lock.duration.ms": "15000",
                                           "share.commit.interval.ms": "3000"}))
    assert not ({"share.commit.interval.ms", "share.record.lock.duration.ms"} & set(ok)), ok


def test_lock_duration_above_broker_limit(cluster: Cluster, worker: Rest):
    # broker: group.share.max.record.lock.duration.ms = 60000, min 15000
    errs = _errors(worker, _base(cluster, **{"share.record.lock.duration.ms": "600000"}))
    assert "share.record.lock.duration.ms" in errs, errs


def test_more_tasks_than_a_share_group_holds_is_an_error_on_tasks_max(cluster: Cluster,
                                                                       worker: Rest):
    # The broker's group.share.max.size (200 by default): tasks beyond it could never join.
    errors = _errors(worker, _base(cluster, **{"tasks.max": "201"}))
    assert "tasks.max" in errors, errors
    assert "at most 200 members (group.share.max.size)" in " ".join(errors["tasks.max"]), errors
    assert "tasks.max" not in _errors(worker, _base(cluster, **{"tasks.max": "200"}))


def test_broker_dlq_needs_the_cluster_prefix(cluster: Cluster, worker: Rest):
    errs = _errors(worker, _base(cluster, **{"errors.tolerance": "all",
                                             "share.dlq.mode": "broker",
                                             "errors.deadletterqueue.topic.name": "errors-no-prefix"}))
    keys = {"errors.deadletterqueue.topic.name", "share.dlq.mode"} & set(errs)
    assert keys, f"a broker DLQ without the dlq. prefix is accepted: {errs}"
    assert "dlq." in " ".join(m for k in keys for m in errs[k])


def test_malformed_or_unresolvable_bootstrap_is_an_error_on_the_key_set(cluster: Cluster,
                                                                        worker: Rest):
    key = "share.consumer.bootstrap.servers"
    port = cluster.bootstrap.rsplit(":", 1)[1]
    # A ';' between servers, and a host no DNS knows (.invalid never resolves, RFC 6761).
    for value, expected in ((f"127.0.0.1:{port};127.0.0.1:{port}", "separate servers with ','"),
                            (f"127.0.0.1:{port},kafka-typo.invalid:9092",
                             "host kafka-typo.invalid cannot be resolved")):
        errs = _errors(worker, _base(cluster, **{key: value}))
        assert set(errs) == {key}, f"{value}: expected an error on {key} only: {errs}"
        msg = " ".join(errs[key])
        assert msg.startswith(f"{key}={value}") and expected in msg, msg


def test_settings_only_a_source_connector_has_are_refused_and_no_topic_is_created(
        cluster: Cluster, worker: Rest):
    # Before: the runtime, which takes a share-mode connector for a source connector, accepted
    # offsets.storage.topic in either form and created that topic as the worker's admin principal.
    for form in ("explicit", "KIP"):
        name = uniq("validate-src-")
        offsets = f"{name}-offsets"
        cfg = (_base(cluster) if form == "explicit" else
               flag_config(name, name, FILE_SINK, 1, file=str(cluster.state_dir / f"{name}.out")))
        cfg.update({"name": name, "connector.class": SHARE_SINK if form == "explicit" else FILE_SINK,
                    "offsets.storage.topic": offsets, "exactly.once.support": "requested"})
        errors = Rest.validation_errors(worker.validate(cfg["connector.class"], cfg))
        print(f"\n{form} validate -> {errors}")
        assert set(errors) == {"offsets.storage.topic", "exactly.once.support"}, errors
        assert "offsets.storage.topic is a source connector setting" in \
            " ".join(errors["offsets.storage.topic"]), errors
        with pytest.raises(RestError) as refused:
            worker.put_connector(name, cfg)
        text = str(refused.value.body)
        print(f"{form} create -> HTTP {refused.value.status}: {text[:300]}")
        assert refused.value.status == 400 and "offsets.storage.topic" in text, text
        assert name not in worker.connectors()
        assert offsets not in cluster.list_topics(), f"{offsets} was created"


def test_legacy_connector_errors_are_reported(cluster: Cluster, worker: Rest, postgres):
    # Debezium JDBC's own validate() (run as the classic runtime would) flags batch.size=abc on
    # its own key; through sharesink the same error must appear on the same key.
    name = uniq("validate-")
    cfg = {
        "name": name,
        "share.sink.connector.class": JDBC_SINK,
        "share.consumer.bootstrap.servers": cluster.bootstrap,
        "topics": name,
        "connection.url": postgres["jdbc_url"],
        "connection.username": postgres["user"],
        "connection.password": postgres["password"],
        "batch.size": "abc",
    }
    classic = Rest.validation_errors(worker.validate(JDBC_SINK, {k: v for k, v in cfg.items()
                                                                  if not k.startswith("share.")}))
    assert "batch.size" in classic, f"Debezium itself no longer flags batch.size=abc: {classic}"
    errs = _errors(worker, cfg)
    assert "batch.size" in errs, f"the legacy connector's own error is missing: {errs}"
    assert not any(k.startswith("share.") for k in errs), f"errors on sharesink keys: {errs}"
    record_figures("8-validate", produced=0, delivered=0, duplicated=0, lost=0,
                   legacy_errors_through_sharesink=sorted(errs),
                   note="validation only; the other tests in this file check more keys")
