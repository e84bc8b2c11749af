"""Scenario 21: sharesink's metrics in Prometheus, as an operator scrapes them.

A worker (index 1, in a Connect group of its own) runs with the Prometheus JMX exporter's Java
agent from Maven Central and the rules in ops/prometheus/jmx-exporter.yaml. A share-mode
FileStream connector delivers every record; then `/metrics` on the agent's port shows:

- the task series (`sharesink_records_accepted_total{connector,task}`, ...) counting what was
  delivered, with latencies in seconds and their time and count totals moving;
- Connect's sink-task metrics of each task (`kafka_connect_sink_task_sink_record_read_total`,
  ...), which sharesink publishes under Connect's MBean for sink tasks;
- the lag refresh's health (no failure, a recent refresh time);
- the connector's `sharesink_share_group_lag{connector,topic,partition}` (per partition the
  share group has state for), back to 0;
- the connector's `sharesink_autoscale_tasks{connector}`: the autoscaler runs with its bounds
  at 2 and 2 (`share.tasks.autoscale.min` = `tasks.max`), so it registers its gauge and never
  changes the task count;
- every series the Grafana dashboard (ops/grafana/sharesink-dashboard.json) queries.
"""

from __future__ import annotations

import json
import re

from harness.cluster import REPO_ROOT, Cluster, default_plugin_archive, ensure_jmx_exporter
from helpers import (FILE_SINK, STRING_CONVERTER, connector_trace, delete_connector, file_lines,
                     produce_values, scrape, share_config, start_connector,
                     stop_worker_if_running, total, uniq, wait_for)

WORKER = 1
METRICS_PORT_OFFSET = 86
N = 600
RULES = REPO_ROOT / "ops" / "prometheus" / "jmx-exporter.yaml"
DASHBOARD = REPO_ROOT / "ops" / "grafana" / "sharesink-dashboard.json"
def test_the_exporter_shows_every_sharesink_series_the_dashboard_needs(cluster: Cluster):
    port = cluster.port_base + METRICS_PORT_OFFSET
    agent = ensure_jmx_exporter()
    tag = uniq("")
    extra = {"group.id": f"sharesink-e2e-metrics-{tag}",
             "config.storage.topic": f"connect-e2e-metrics-{tag}-configs",
             "offset.storage.topic": f"connect-e2e-metrics-{tag}-offsets",
             "status.storage.topic": f"connect-e2e-metrics-{tag}-status"}
    name = uniq("metrics-")
    out = cluster.state_dir / f"{name}.out"
    cluster.create_topic(name, partitions=3)
    values = [f"{name}-v{i:04d}" for i in range(N)]
    produce_values(cluster, name, values)
    try:
        cluster.start_worker(WORKER, plugin_archive=default_plugin_archive(), extra=extra,
                             jvm_opts=[f"-javaagent:{agent}=127.0.0.1:{port}:{RULES}"])
        rest = cluster.rest(WORKER)
        cfg = share_config(cluster, name, name, FILE_SINK, 2, file=str(out))
        cfg.update({"key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER,
                    "share.commit.interval.ms": "500",
                    "share.tasks.autoscale": "true", "share.tasks.autoscale.min": "2"})
        start_connector(rest, name, cfg, tasks=2)
        wait_for("every record in the file", lambda: len(set(file_lines(out))) == N, timeout=90,
                 on_timeout=lambda: connector_trace(rest, name))

        # Accepted counts every record (a redelivery counts again, so at least N).
        series = wait_for("accepted records in the scrape",
                          lambda: (lambda s: s if total(s, "sharesink_records_accepted_total",
                                                        name) >= N else None)(scrape(port)),
                          timeout=60)
        tasks = {labels["task"] for labels, _ in series["sharesink_records_accepted_total"]
                 if labels.get("connector") == name}
        assert tasks == {"0", "1"}, tasks
        assert total(series, "sharesink_records_polled_total", name) >= N
        assert "sharesink_put_latency_avg_seconds" in series
        # Latencies as time and count totals that Prometheus can rate: they moved.
        assert total(series, "sharesink_puts_total", name) > 0
        assert total(series, "sharesink_put_seconds_total", name) > 0
        assert total(series, "sharesink_commit_cycles_total", name) > 0
        assert total(series, "sharesink_engine_fetch_seconds_total", name) > 0
        # Connect's sink-task metrics of the share-mode task, as Strimzi's rules name them.
        assert total(series, "kafka_connect_sink_task_sink_record_read_total", name) >= N
        assert total(series, "kafka_connect_sink_task_sink_record_send_total", name) >= N
        assert total(series, "kafka_connect_sink_task_offset_commit_completion_total", name) > 0
        sink_tasks = {l["task"] for l, _ in series["kafka_connect_sink_task_sink_record_read_total"]
                      if l.get("connector") == name}
        assert sink_tasks == {"0", "1"}, sink_tasks
        # Connect's states of the connector and its tasks, as Strimzi names them: the alerts
        # read them (a connector without a running task, a paused one).
        states = {(l.get("task"), l["status"]) for l, v in
                  series.get("kafka_connect_connector_task_status", [])
                  if l.get("connector") == name and v == 1}
        assert states == {("0", "running"), ("1", "running")}, \
            series.get("kafka_connect_connector_task_status")
        assert [l["status"] for l, v in series.get("kafka_connect_connector_status", [])
                if l.get("connector") == name and v == 1] == ["running"], \
            series.get("kafka_connect_connector_status")
        # Connect's worker metrics under Strimzi's names (its ConnectFailedTask alert reads them).
        assert total(series, "kafka_connect_worker_connector_running_task_count", name) == 2, \
            series.get("kafka_connect_worker_connector_running_task_count")
        assert total(series, "kafka_connect_worker_connector_failed_task_count", name) == 0

        # The lag gauge is refreshed every 30 s, one series per partition the share group has
        # state for (the producer may have put every record in one partition); it settles at 0
        # once everything is acknowledged.
        def lag_settled():
            s = scrape(port)
            lags = [(l, v) for l, v in s.get("sharesink_share_group_lag", [])
                    if l.get("connector") == name]
            return s if lags and all(v == 0 for _, v in lags) else None

        series = wait_for("sharesink_share_group_lag at 0", lag_settled, timeout=90,
                          on_timeout=lambda: str(scrape(port).get("sharesink_share_group_lag")))
        partitions = {l["partition"] for l, _ in series["sharesink_share_group_lag"]
                      if l.get("connector") == name}
        assert partitions <= {"0", "1", "2"} and all(
            l.get("topic") == name for l, _ in series["sharesink_share_group_lag"]
            if l.get("connector") == name), series["sharesink_share_group_lag"]

        # The lag refresh's health: read, never failed.
        assert total(series, "sharesink_share_group_lag_refresh_failures_total", name) == 0
        assert total(series, "sharesink_share_group_lag_refreshed_timestamp_seconds", name) > 1e9

        decided = [v for l, v in series.get("sharesink_autoscale_tasks", [])
                   if l.get("connector") == name]
        assert decided == [2], series.get("sharesink_autoscale_tasks")

        dashboard = json.loads(DASHBOARD.read_text())
        queried = {s for p in dashboard["panels"] for t in p.get("targets", [])
                   for s in re.findall(r"\bsharesink_[a-z0-9_]+\b", t["expr"])}
        missing = sorted(q for q in queried if q not in series)
        assert not missing, f"the dashboard queries series the worker does not export: {missing}"
        print(f"\n{len(series)} sharesink series scraped; dashboard queries {len(queried)}")
    finally:
        try:
            delete_connector(cluster.rest(WORKER), name)
        finally:
            stop_worker_if_running(cluster, WORKER)
