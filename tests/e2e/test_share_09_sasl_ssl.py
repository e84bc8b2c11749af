"""Scenario 9: the broker's SASL_SSL listener (SCRAM-SHA-512 over TLS, self-signed CA).

- a connector whose share consumer is set with Kafka's own client settings
  (`share.consumer.security.protocol=SASL_SSL`, `share.consumer.sasl.*`, `share.consumer.ssl.*`,
  and the same as `admin.override.*` for its admin client) delivers every record;
- a worker whose own configuration file talks SASL_SSL (a separate Connect cluster on worker 1)
  runs a connector that sets no `share.consumer.*` key: the settings come from the worker file;
- a wrong password is a clear error (authentication named; at validation or as the task's
  failure), the worker stays alive, and nothing is written.
"""

from __future__ import annotations

import re
import time

from harness.cluster import Cluster, Rest, RestError, default_plugin_archive
from helpers import (FILE_SINK, STRING_CONVERTER, SHARE_SINK, Progress, connector_trace,
                     count_figures, delete_connector, failed_task_trace, file_line_count,
                     file_lines, produce_values, record_figures, start_connector,
                     stop_worker_if_running, uniq, wait_for)

N = 2000


def _share_consumer_settings(cluster: Cluster, password: str = None):
    """The share consumer's SASL_SSL settings (share.consumer.*) and the same for the admin client
    that sets the group's configs (admin.override.*: share.consumer.* is the consumer's only)."""
    client = cluster.sasl_ssl_client_config("SCRAM-SHA-512")
    if password is not None:
        client["sasl.jaas.config"] = (
            "org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{cluster.scram_user}" password="{password}";')
    cfg = {f"share.consumer.{k}": v for k, v in client.items()}
    cfg.update({f"admin.override.{k}": v for k, v in client.items()})
    return cfg


def _file_cfg(name, out, **extra):
    cfg = {"connector.class": SHARE_SINK, "share.sink.connector.class": FILE_SINK, "topics": name,
           "tasks.max": "2", "file": str(out), "key.converter": STRING_CONVERTER,
           "value.converter": STRING_CONVERTER, "share.commit.interval.ms": "1000"}
    cfg.update(extra)
    return cfg


def test_sasl_ssl_share_consumer_settings(cluster: Cluster, worker: Rest):
    name = uniq("sasl-")
    out = cluster.state_dir / f"{name}.out"
    cluster.create_topic(name, partitions=3)
    values = [f"{name}-v{i}" for i in range(N)]
    produce_values(cluster, name, values)
    cfg = _file_cfg(name, out, **_share_consumer_settings(cluster))
    try:
        start_connector(worker, name, cfg, tasks=2)
        Progress("lines over SASL_SSL", lambda: file_line_count(out)).wait(
            N, stall=90, on_timeout=lambda: connector_trace(worker, name))
        time.sleep(2)
        figs = count_figures(values, file_lines(out))
        record_figures("9a-sasl-ssl-connector-settings", **figs)
        assert figs["lost"] == 0 and figs["duplicated"] == 0 and figs["unexpected"] == 0, figs
    finally:
        delete_connector(worker, name)


def test_sasl_ssl_wrong_password_is_a_clear_error(cluster: Cluster, worker: Rest):
    name = uniq("sasl-bad-")
    out = cluster.state_dir / f"{name}.out"
    cluster.create_topic(name, partitions=1)
    produce_values(cluster, name, [f"{name}-v{i}" for i in range(10)])
    cfg = _file_cfg(name, out, **_share_consumer_settings(cluster, password="not-the-password"))
    message = None
    where = None
    try:
        try:
            worker.put_connector(name, cfg)
        except RestError as e:          # rejected at validation: fine if it says why
            message, where = str(e.body), "validation"
        if message is None:
            message = wait_for("the wrong password to fail the connector or its task",
                               lambda: failed_task_trace(worker, name), timeout=120, interval=1,
                               on_timeout=lambda: connector_trace(worker, name))
            where = "task"
        print(f"\nwrong password -> {where}: {message[:500]}")
        assert re.search(r"authenticat", message, re.I), \
            f"the error does not say authentication: {message[:3000]}"
        assert worker.get("/")["version"], "worker 0 does not answer"
        assert cluster.is_running("worker-0")
        assert file_line_count(out) == 0
        record_figures("9b-sasl-ssl-wrong-password", produced=10, delivered=0, duplicated=0, lost=0,
                       failed_at=where, message=message[:300])
    finally:
        delete_connector(worker, name)


def test_sasl_ssl_settings_from_the_worker_file(cluster: Cluster, worker: Rest):
    client = cluster.sasl_ssl_client_config("SCRAM-SHA-512")
    extra = {"group.id": "sharesink-e2e-sasl",
             "config.storage.topic": "connect-e2e-sasl-configs",
             "offset.storage.topic": "connect-e2e-sasl-offsets",
             "status.storage.topic": "connect-e2e-sasl-status"}
    for prefix in ("", "producer.", "consumer.", "admin."):
        for k, v in client.items():
            extra[prefix + k] = v
    name = uniq("sasl-worker-")
    out = cluster.state_dir / f"{name}.out"
    cluster.create_topic(name, partitions=3)
    values = [f"{name}-v{i}" for i in range(N)]
    produce_values(cluster, name, values)
    try:
        cluster.start_worker(1, plugin_archive=default_plugin_archive(), extra=extra)
        w1 = cluster.rest(1)
        start_connector(w1, name, _file_cfg(name, out), tasks=2)
        Progress("lines with the worker's SASL_SSL settings", lambda: file_line_count(out)).wait(
            N, stall=90, on_timeout=lambda: connector_trace(w1, name))
        time.sleep(2)
        figs = count_figures(values, file_lines(out))
        record_figures("9c-sasl-ssl-worker-file", **figs)
        assert figs["lost"] == 0 and figs["duplicated"] == 0 and figs["unexpected"] == 0, figs
        delete_connector(w1, name)
    finally:
        stop_worker_if_running(cluster, 1)
