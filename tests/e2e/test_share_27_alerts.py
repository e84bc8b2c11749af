"""Scenario 23: sharesink's alerts (ops/prometheus/sharesink-alerts.yaml) in a real Prometheus
(Debian's package, on 127.0.0.1) scraping a real worker through the JMX exporter agent.

Worker 1 (a Connect group of its own) runs the exporter with ops/prometheus/jmx-exporter.yaml;
Prometheus scrapes it every second and evaluates the alert rules every second, as the file has
them but with every `for:` at 0s (the expression is what is tested; the hold time is the
operator's). One connector per alert makes its alert fire, and one healthy connector makes none:

- `stall` (the tests' buffering sink, its put of records blocked, share.task.stuck.timeout.ms
  2 s):
  SharesinkBacklogNotDraining (records wait, none acknowledged) and
  SharesinkRecordsReturnedUnprocessed (the stuck call's records released to the group);
- `failonce` (the buffering sink's put throws once): SharesinkTaskRestartingInPlace;
- `poison` (values that are not JSON, errors.tolerance=all, a DLQ): SharesinkRecordsDeadLettered;
- `lagfail` (its admin client, the one that reads the lag, through the harness's blackhole
  proxy, cut once the connector runs): SharesinkLagNotRefreshed;
- `healthy` (FileStream, every record delivered): no alert, and every alert's expression has no
  value for it, read after the others fired (so Prometheus had its series all along).

Each event that moves a counter is caused only after Prometheus holds that counter's series at
its start value (an `increase()` needs two samples). Waits are on states (an alert firing, a
series present), never on elapsed time.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.parse
import urllib.request
from typing import Dict, List, Optional

import pytest
import yaml

from buffering_sink import BUFFERING_SINK, BufferingSink
from harness.cluster import REPO_ROOT, Cluster, default_plugin_archive, ensure_jmx_exporter
from helpers import (FILE_SINK, JSON_CONVERTER, STRING_CONVERTER, connector_trace,
                     delete_connector, file_lines, produce_values, share_config, start_connector,
                     stop_worker_if_running, uniq, wait_for)

WORKER = 1
METRICS_PORT_OFFSET = 86
PROMETHEUS_PORT_OFFSET = 87
RULES = REPO_ROOT / "ops" / "prometheus" / "jmx-exporter.yaml"
ALERTS = REPO_ROOT / "ops" / "prometheus" / "sharesink-alerts.yaml"


def ensure_prometheus() -> str:
    """Debian's prometheus, installed by scripts/lib.sh when missing."""
    if not shutil.which("prometheus"):
        subprocess.run(["bash", "-c", "source scripts/lib.sh && ensure_prometheus"],
                       cwd=REPO_ROOT, check=True)
    return shutil.which("prometheus")


class Prometheus:
    def __init__(self, url: str):
        self.url = url

    def _get(self, path: str, **params: str):
        q = urllib.parse.urlencode(params)
        with urllib.request.urlopen(f"{self.url}{path}?{q}", timeout=10) as resp:
            body = json.loads(resp.read().decode())
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> Dict[str, float]:
        """connector -> value of an instant query."""
        return {r["metric"].get("connector", ""): float(r["value"][1])
                for r in self._get("/api/v1/query", query=expr)["result"]}

    def alerts(self) -> List[dict]:
        return self._get("/api/v1/alerts")["alerts"]

    def firing(self, alert: str, connector: str) -> bool:
        return any(a["labels"].get("alertname") == alert
                   and a["labels"].get("connector") == connector and a["state"] == "firing"
                   for a in self.alerts())

    def has(self, series: str, connector: str) -> bool:
        return bool(self._get("/api/v1/query",
                              query=f'{series}{{connector="{connector}"}}')["result"])


@pytest.fixture(scope="module")
def prometheus(cluster: Cluster, tmp_path_factory):
    binary = ensure_prometheus()
    home = tmp_path_factory.mktemp("prometheus")
    rules = yaml.safe_load(ALERTS.read_text())
    for group in rules["groups"]:
        group["interval"] = "1s"
        for rule in group["rules"]:
            rule["for"] = "0s"
    (home / "alerts.yaml").write_text(yaml.safe_dump(rules))
    exporter = f"127.0.0.1:{cluster.port_base + METRICS_PORT_OFFSET}"
    (home / "prometheus.yml").write_text(yaml.safe_dump({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(home / "alerts.yaml")],
        "scrape_configs": [{"job_name": "connect", "static_configs": [{"targets": [exporter]}]}],
    }))
    address = f"127.0.0.1:{cluster.port_base + PROMETHEUS_PORT_OFFSET}"
    log = open(cluster.logs_dir / "prometheus.log", "w")
    proc = subprocess.Popen(
        [binary, f"--config.file={home / 'prometheus.yml'}", f"--storage.tsdb.path={home / 'data'}",
         f"--web.listen-address={address}", "--log.level=warn"],
        stdout=log, stderr=subprocess.STDOUT)
    try:
        prom = Prometheus(f"http://{address}")
        wait_for("Prometheus ready", lambda: _ready(prom.url) or proc.poll() is not None,
                 timeout=60)
        assert proc.poll() is None, (cluster.logs_dir / "prometheus.log").read_text()
        yield prom
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def alerts_worker(cluster: Cluster):
    tag = uniq("")
    extra = {"group.id": f"sharesink-e2e-alerts-{tag}",
             "config.storage.topic": f"connect-e2e-alerts-{tag}-configs",
             "offset.storage.topic": f"connect-e2e-alerts-{tag}-offsets",
             "status.storage.topic": f"connect-e2e-alerts-{tag}-status"}
    port = cluster.port_base + METRICS_PORT_OFFSET
    try:
        cluster.start_worker(WORKER, plugin_archive=default_plugin_archive(), extra=extra,
                             jvm_opts=[f"-javaagent:{ensure_jmx_exporter()}=127.0.0.1:{port}:{RULES}"])
        yield cluster.rest(WORKER)
    finally:
        stop_worker_if_running(cluster, WORKER)


def _expressions() -> Dict[str, str]:
    return {r["alert"]: r["expr"] for g in yaml.safe_load(ALERTS.read_text())["groups"]
            for r in g["rules"]}


def test_each_alert_fires_on_its_fault_and_none_on_a_healthy_connector(
        cluster: Cluster, prometheus: Prometheus, alerts_worker):
    rest = alerts_worker
    names = {k: uniq(f"alert{k}-") for k in ("healthy", "stall", "failonce", "poison", "lagfail")}
    created: List[str] = []

    def start(kind: str, cfg: dict, tasks: int = 1) -> None:
        start_connector(rest, names[kind], cfg, tasks=tasks)
        created.append(names[kind])

    def series_seen(series: str, kind: str) -> None:
        wait_for(f"{series} of {kind} in Prometheus",
                 lambda: prometheus.has(series, names[kind]), timeout=90,
                 on_timeout=lambda: connector_trace(rest, names[kind]))

    def fires(alert: str, kind: str, timeout: float = 120) -> None:
        wait_for(f"{alert} firing for {kind}", lambda: prometheus.firing(alert, names[kind]),
                 timeout=timeout,
                 on_timeout=lambda: json.dumps(prometheus.alerts())[:3000]
                 + "\n" + str({s: prometheus.query(f'{s}{{connector="{names[kind]}"}}') for s in (
                     "sharesink_share_group_lag", "sharesink_records_accepted_total",
                     "sharesink_records_released_stuck_total",
                     "sharesink_share_group_lag_refreshed_timestamp_seconds")})
                 + connector_trace(rest, names[kind]))

    for name in names.values():
        cluster.create_topic(name, partitions=2)
    try:
        # healthy: every record delivered
        out = cluster.state_dir / f"{names['healthy']}.out"
        cfg = share_config(cluster, names["healthy"], names["healthy"], FILE_SINK, 1,
                           file=str(out))
        cfg.update({"key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER,
                    "share.commit.interval.ms": "500"})
        start("healthy", cfg)

        # stall: the put blocks; a stuck call is released after 2 s
        stall = BufferingSink(cluster, names["stall"])
        # Role A is the task that put the first records: its puts with records block (not its
        # put(empty) calls before any record came, so the driver holds what it put).
        stall.mark("A", "stall", keep=True)
        cfg = share_config(cluster, names["stall"], names["stall"], BUFFERING_SINK, 1)
        cfg.update(stall.settings(**{"share.task.stuck.timeout.ms": "2000"}))
        start("stall", cfg)

        # failonce: one put throws; the legacy task is restarted in place
        failonce = BufferingSink(cluster, names["failonce"])
        cfg = share_config(cluster, names["failonce"], names["failonce"], BUFFERING_SINK, 1)
        cfg.update(failonce.settings(**{"share.task.restart.backoff.ms": "100"}))
        start("failonce", cfg)

        # poison: values a JsonConverter cannot read go to the DLQ
        cfg = share_config(cluster, names["poison"], names["poison"], FILE_SINK, 1,
                           file=str(cluster.state_dir / f"{names['poison']}.out"))
        cfg.update({"key.converter": STRING_CONVERTER, "value.converter": JSON_CONVERTER,
                    "value.converter.schemas.enable": "false", "errors.tolerance": "all",
                    "errors.deadletterqueue.topic.name": f"dlq.{names['poison']}",
                    "errors.deadletterqueue.topic.replication.factor": "1",
                    "share.dlq.mode": "connect", "share.commit.interval.ms": "500"})
        start("poison", cfg)

        # lagfail: the connector's admin client (the lag's) through the blackhole proxy
        cluster.proxy_forward()
        cfg = share_config(cluster, names["lagfail"], names["lagfail"], FILE_SINK, 1,
                           file=str(cluster.state_dir / f"{names['lagfail']}.out"))
        cfg.update({"key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER,
                    "admin.override.bootstrap.servers": cluster.proxied_bootstrap,
                    "admin.override.default.api.timeout.ms": "5000",
                    "admin.override.request.timeout.ms": "4000"})
        start("lagfail", cfg)

        # Each fault only once Prometheus holds the counters it moves at their start.
        series_seen("sharesink_records_released_stuck_total", "stall")
        series_seen("sharesink_records_accepted_total", "stall")
        produce_values(cluster, names["stall"], [f"s{i}" for i in range(20)])
        series_seen("sharesink_task_restarts_total", "failonce")
        failonce.mark("any", "fail")
        produce_values(cluster, names["failonce"], [f"f{i}" for i in range(20)])
        series_seen("sharesink_records_rejected_total", "poison")
        produce_values(cluster, names["poison"], ["{\"ok\": 1}", "not json", "{nope", "{\"ok\": 2}"])
        series_seen("sharesink_share_group_lag_refresh_failures_total", "lagfail")
        cluster.proxy_blackhole()
        values = [f"h{i}" for i in range(50)]
        produce_values(cluster, names["healthy"], values)
        wait_for("every healthy record in the file", lambda: len(set(file_lines(out))) == 50,
                 timeout=90, on_timeout=lambda: connector_trace(rest, names["healthy"]))

        fires("SharesinkBacklogNotDraining", "stall")
        fires("SharesinkRecordsReturnedUnprocessed", "stall")
        fires("SharesinkTaskRestartingInPlace", "failonce")
        fires("SharesinkRecordsDeadLettered", "poison")
        fires("SharesinkLagNotRefreshed", "lagfail")

        # The healthy connector: its series are in Prometheus (lag read and at 0, records
        # accepted), and no alert's expression has a value for it.
        wait_for("the healthy connector's lag read at 0", lambda: prometheus.query(
            f'sum by (connector) (sharesink_share_group_lag{{connector="{names["healthy"]}"}})')
            .get(names["healthy"]) == 0, timeout=90)
        healthy = names["healthy"]
        assert prometheus.query(
            f'sum by (connector) (sharesink_records_accepted_total{{connector="{healthy}"}})'
        )[healthy] >= 50
        for alert, expr in _expressions().items():
            value: Optional[float] = prometheus.query(expr).get(healthy)
            assert value is None, f"{alert} has a value for the healthy connector: {value}"
            assert not any(a["labels"].get("connector") == healthy for a in prometheus.alerts()), \
                prometheus.alerts()
        # And the faulty ones still have theirs (the expressions, not only the alerts' states).
        expressions = _expressions()
        assert names["stall"] in prometheus.query(expressions["SharesinkBacklogNotDraining"])
        assert names["poison"] in prometheus.query(expressions["SharesinkRecordsDeadLettered"])
        firing = sorted({(a["labels"]["alertname"], a["labels"].get("connector"))
                         for a in prometheus.alerts() if a["state"] == "firing"})
        print(f"\nalerts firing: {firing}")
    finally:
        cluster.proxy_forward()
        stall_dir = cluster.state_dir / "buffering-sink" / names["stall"] / "control"
        for marker in stall_dir.glob("A.stall"):
            marker.unlink()
        for name in created:
            try:
                delete_connector(rest, name)
            except Exception as e:  # noqa: BLE001  (the worker stops anyway)
                print(f"deleting {name}: {e}")
