"""The operator's metrics files agree with the code and with each other, without a worker:

- every metric sharesink registers (the names in SinkDriverMetrics, EngineGauges and
  ShareGroupLag) matches a rule of ops/prometheus/jmx-exporter.yaml and becomes a
  `sharesink_*` series with the labels a dashboard filters by;
- the connector's autoscaler gauge (Autoscaler) becomes `sharesink_autoscale_tasks{connector}`;
- every series the Grafana dashboard (ops/grafana/sharesink-dashboard.json), the KEDA example
  (ops/keda/scaledobject.yaml) and the operator page (docs/operations.md) name is one those rules
  produce.

The rules are applied here as the JMX exporter applies them (first match wins, `$n` replaced,
invalid characters made `_`, lowercased); tests/e2e/test_share_21_metrics.py scrapes a real
worker running the exporter with the same file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Dict, Optional, Set, Tuple

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "ops" / "prometheus" / "jmx-exporter.yaml"
DASHBOARD = ROOT / "ops" / "grafana" / "sharesink-dashboard.json"
KEDA = ROOT / "ops" / "keda" / "scaledobject.yaml"
SOURCES = ROOT / "java" / "src" / "main" / "java" / "io" / "sharesink" / "connect"
TASK_METRIC_SOURCES = [SOURCES / "sink" / "SinkDriverMetrics.java",
                       SOURCES / "sink" / "EngineGauges.java"]
CONNECTOR_METRIC_SOURCES = [SOURCES / "ShareGroupLag.java"]
AUTOSCALER_SOURCE = SOURCES / "autoscale" / "Autoscaler.java"
OPERATIONS = ROOT / "docs" / "operations.md"
SERIES = re.compile(r"\bsharesink_[a-z0-9_]+\b")


def metric_names(path: Path) -> Set[str]:
    return set(re.findall(r'"((?:share|autoscale)-[a-z-]+)"', path.read_text()))


def exporter(mbean: str) -> Optional[Tuple[str, Dict[str, str]]]:
    """(series name, labels) the exporter makes of one `domain<props><>attribute` string."""
    config = json.loads(RULES.read_text())
    for rule in config["rules"]:
        m = re.fullmatch(rule["pattern"], mbean)
        if not m:
            continue

        def expand(template: str) -> str:
            return re.sub(r"\$(\d+)", lambda g: m.group(int(g.group(1))), template)

        name = re.sub(r"[^a-zA-Z0-9_:]", "_", expand(rule["name"]))
        if config.get("lowercaseOutputName"):
            name = name.lower()
        labels = {k: expand(v) for k, v in rule.get("labels", {}).items()}
        return name, labels
    return None


# Connect 4.4's sink-task metrics (WorkerSinkTask.SinkTaskMetricsGroup), which
# ConnectSinkTaskMetrics publishes for a share-mode task.
SINK_TASK_METRICS = [
    "sink-record-read-rate", "sink-record-read-total", "sink-record-send-rate",
    "sink-record-send-total", "sink-record-active-count", "sink-record-active-count-max",
    "sink-record-active-count-avg", "partition-count", "offset-commit-seq-no",
    "offset-commit-completion-rate", "offset-commit-completion-total", "offset-commit-skip-rate",
    "offset-commit-skip-total", "put-batch-max-time-ms", "put-batch-avg-time-ms"]
SINK_TASK_SOURCE = SOURCES / "sink" / "ConnectSinkTaskMetrics.java"


def sink_task_mbean(metric: str) -> str:
    return f"kafka.connect<type=sink-task-metrics, connector=orders-to-pg, task=3><>{metric}"


def task_mbean(metric: str) -> str:
    return f"kafka.connect<type=plugins, connector=orders-to-pg, task=3><>{metric}"


def lag_mbean(metric: str) -> str:
    return f"kafka.connect<type=plugins, connector=orders-to-pg, topic=orders, partition=7><>{metric}"


def connector_mbean(metric: str) -> str:
    return f"kafka.connect<type=plugins, connector=orders-to-pg><>{metric}"


def exported() -> Set[str]:
    names = set()
    for metric in metric_names(AUTOSCALER_SOURCE):
        out = exporter(connector_mbean(metric))
        assert out is not None, f"no exporter rule matches the connector's {metric}"
        names.add(out[0])
    for src in TASK_METRIC_SOURCES:
        for metric in metric_names(src):
            names.add(exporter(task_mbean(metric))[0])
    for src in CONNECTOR_METRIC_SOURCES:
        for metric in metric_names(src):
            mbean = lag_mbean(metric) if metric == "share-group-lag" else connector_mbean(metric)
            out = exporter(mbean)
            assert out is not None, f"no exporter rule matches the connector's {metric}"
            names.add(out[0])
    for metric in SINK_TASK_METRICS:
        names.add(exporter(sink_task_mbean(metric))[0])
    return names


def test_connects_connector_and_task_states_become_strimzis_status_series():
    assert exporter("kafka.connect<type=connector-metrics, connector=orders-to-pg><>status: paused") \
        == ("kafka_connect_connector_status", {"connector": "orders-to-pg", "status": "paused"})
    assert exporter("kafka.connect<type=connector-task-metrics, connector=orders-to-pg, task=3>"
                    "<>status: running") == ("kafka_connect_connector_task_status", {
                        "connector": "orders-to-pg", "task": "3", "status": "running"})
    config = json.loads(RULES.read_text())
    status_rules = [r for r in config["rules"] if r["name"].endswith("_status")]
    assert status_rules and all(r.get("value") == 1 for r in status_rules)


def test_connects_worker_metrics_keep_strimzis_names():
    assert exporter("kafka.connect<type=connect-worker-metrics, connector=orders-to-pg>"
                    "<>connector-failed-task-count") == (
        "kafka_connect_worker_connector_failed_task_count", {"connector": "orders-to-pg"})
    assert exporter("kafka.connect<type=connect-worker-metrics><>task-count") == (
        "kafka_connect_worker_task_count", {})


def test_every_task_metric_becomes_a_series_with_connector_and_task():
    metrics = set().union(*(metric_names(p) for p in TASK_METRIC_SOURCES))
    assert len(metrics) >= 25, metrics  # the sources still name their metrics this way
    for metric in sorted(metrics):
        out = exporter(task_mbean(metric))
        assert out is not None, f"no exporter rule matches {metric}"
        name, labels = out
        assert re.fullmatch(r"sharesink_[a-z0-9_]+", name), (metric, name)
        assert labels == {"connector": "orders-to-pg", "task": "3"}, (metric, labels)
        if metric.endswith("-ms"):
            assert name.endswith("_seconds"), (metric, name)
        if metric.endswith("-total"):
            assert name.endswith("_total"), (metric, name)


def test_the_share_group_lag_becomes_a_series_per_topic_and_partition():
    assert metric_names(CONNECTOR_METRIC_SOURCES[0]) >= {"share-group-lag"}
    assert exporter(lag_mbean("share-group-lag")) == (
        "sharesink_share_group_lag",
        {"connector": "orders-to-pg", "topic": "orders", "partition": "7"})


def test_the_autoscalers_gauge_becomes_a_series_per_connector():
    assert metric_names(AUTOSCALER_SOURCE) == {"autoscale-tasks"}
    assert exporter(connector_mbean("autoscale-tasks")) == (
        "sharesink_autoscale_tasks", {"connector": "orders-to-pg"})


def test_every_series_the_operator_page_names_is_exported():
    named = set(SERIES.findall(OPERATIONS.read_text()))
    assert named, "docs/operations.md names no sharesink series"
    assert named <= exported(), f"named but never exported: {sorted(named - exported())}"


def test_every_series_the_dashboard_and_keda_query_is_exported():
    produced = exported()
    dashboard = json.loads(DASHBOARD.read_text())
    queried = set()
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            queried |= set(SERIES.findall(target["expr"]))
    for var in dashboard["templating"]["list"]:
        if isinstance(var.get("query"), dict):
            queried |= set(SERIES.findall(var["query"]["query"]))
    assert queried, "the dashboard queries no sharesink series"
    assert queried <= produced, f"queried but never exported: {sorted(queried - produced)}"
    keda = set(SERIES.findall(KEDA.read_text()))
    assert keda and keda <= produced, f"KEDA queries {keda}, exported {sorted(produced)}"


def test_the_dashboard_shows_what_an_operator_watches():
    titles = " ".join(p["title"].lower() for p in json.loads(DASHBOARD.read_text())["panels"])
    for topic in ("accepted", "put latency", "share lag", "held", "renewals", "redeliveries",
                  "dlq", "fetch latency", "acknowledge latency", "restarts"):
        assert topic in titles, topic


def test_connect_sink_task_metrics_are_published_and_exported_under_strimzis_names():
    published = set(re.findall(r'\bname\(\s*"([a-z-]+)"', SINK_TASK_SOURCE.read_text()))
    assert published == set(SINK_TASK_METRICS), sorted(published ^ set(SINK_TASK_METRICS))
    assert exporter(sink_task_mbean("sink-record-read-total")) == (
        "kafka_connect_sink_task_sink_record_read_total", {"connector": "orders-to-pg", "task": "3"})
    assert exporter(sink_task_mbean("put-batch-avg-time-ms"))[0] == \
        "kafka_connect_sink_task_put_batch_avg_time_ms"


def test_the_lag_refresh_health_becomes_connector_series():
    assert exporter(connector_mbean("share-group-lag-refresh-failures-total")) == (
        "sharesink_share_group_lag_refresh_failures_total", {"connector": "orders-to-pg"})
    assert exporter(connector_mbean("share-group-lag-refreshed-at-ms")) == (
        "sharesink_share_group_lag_refreshed_timestamp_seconds", {"connector": "orders-to-pg"})


def test_latencies_have_totals_prometheus_can_rate():
    produced = exported()
    for series in ("sharesink_put_seconds_total", "sharesink_puts_total",
                   "sharesink_commit_seconds_total", "sharesink_commit_cycles_total",
                   "sharesink_engine_fetch_seconds_total", "sharesink_engine_ack_seconds_total"):
        assert series in produced, series


def test_the_dashboard_filters_by_instance_connector_and_task_and_has_the_diagnosis_row():
    dashboard = json.loads(DASHBOARD.read_text())
    names = [v["name"] for v in dashboard["templating"]["list"]]
    assert names == ["datasource", "instance", "connector", "task"], names
    rows = [p["title"] for p in dashboard["panels"] if p["type"] == "row"]
    assert any("engine diagnosis" in r.lower() for r in rows), rows
    connector_level = {"sharesink_share_group_lag", "sharesink_autoscale_tasks",
                       "sharesink_share_group_lag_refresh_failures_total",
                       "sharesink_share_group_lag_refreshed_timestamp_seconds"}
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            for m in re.finditer(r"\b(sharesink_[a-z0-9_]+)(\{[^}]*\})?", target["expr"]):
                selector = m.group(2) or ""
                assert 'instance=~"$instance"' in selector and \
                    'connector=~"$connector"' in selector, (panel["title"], m.group(0))
                if m.group(1) not in connector_level:
                    assert 'task=~"$task"' in selector, (panel["title"], m.group(0))


def test_the_dashboards_panels_have_units_and_the_workers_gauge_is_per_worker():
    dashboard = json.loads(DASHBOARD.read_text())
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            continue
        assert panel.get("fieldConfig", {}).get("defaults", {}).get("unit"), panel["title"]
        for target in panel.get("targets", []):
            # Every task reports the worker's off-heap bytes: summed or split by connector it
            # would count one worker's memory many times.
            if "sharesink_engine_off_heap_bytes" in target["expr"]:
                assert target["expr"].startswith("max by (instance) "), target["expr"]
