"""The Strimzi and KEDA examples of ops/ as their operators read them, and the benchmark figures
of docs/operations.md against the committed report.

Strimzi's CRDs are not served by the package registries the tests may use, so the Strimzi 1.0
(`kafka.strimzi.io/v1`) example is checked here against the fields its v1 CRD schemas require
and allow (read from Strimzi's packaging/install/cluster-operator/041-Crd-kafkaconnect.yaml and
047-Crd-kafkaconnector.yaml at the 1.0 line, where v1 is the only served version): a field v1
does not know, or a missing required one, fails here as it would fail `kubectl apply`.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
STRIMZI = ROOT / "ops" / "strimzi" / "sharesink-connect.yaml"
KEDA = ROOT / "ops" / "keda" / "scaledobject.yaml"

CONNECT_REQUIRED = {"replicas", "bootstrapServers", "groupId", "configStorageTopic",
                    "statusStorageTopic", "offsetStorageTopic"}
CONNECT_ALLOWED = CONNECT_REQUIRED | {
    "authentication", "build", "clientRackInitImage", "config", "image", "jmxOptions",
    "jvmOptions", "livenessProbe", "logging", "metricsConfig", "plugins", "rack",
    "readinessProbe", "resources", "template", "tls", "tracing", "version"}
# Keys v1 refuses in spec.config (they have fields of their own, or Strimzi owns them).
CONFIG_FORBIDDEN_PREFIXES = ("group.id", "config.storage.topic", "offset.storage.topic",
                             "status.storage.topic", "ssl.", "sasl.", "security.", "listeners",
                             "plugin.path", "rest.", "bootstrap.servers")
CONNECTOR_ALLOWED = {"alterOffsets", "autoRestart", "class", "config", "listOffsets", "state",
                     "tasksMax", "version"}
ARTIFACT_ALLOWED = {"artifact", "fileName", "group", "includeScope", "insecure", "mirrors",
                    "repository", "sha512sum", "type", "url", "version"}


def documents():
    return list(yaml.safe_load_all(STRIMZI.read_text()))


def test_strimzi_example_is_v1_with_every_required_field():
    connect, connector = documents()[:2]
    assert connect["apiVersion"] == connector["apiVersion"] == "kafka.strimzi.io/v1"
    assert connect["kind"] == "KafkaConnect" and connector["kind"] == "KafkaConnector"
    spec = connect["spec"]
    assert CONNECT_REQUIRED <= set(spec), sorted(CONNECT_REQUIRED - set(spec))
    assert set(spec) <= CONNECT_ALLOWED, sorted(set(spec) - CONNECT_ALLOWED)
    bad = [k for k in spec["config"] if k.startswith(CONFIG_FORBIDDEN_PREFIXES)]
    assert not bad, f"v1 refuses these in spec.config: {bad}"
    assert connect["metadata"]["annotations"]["strimzi.io/use-connector-resources"] == "true"
    assert spec["metricsConfig"]["type"] == "jmxPrometheusExporter"
    assert spec["metricsConfig"]["valueFrom"]["configMapKeyRef"]["key"]
    build = spec["build"]
    assert build["output"]["type"] in ("docker", "imagestream") and build["output"]["image"]
    for plugin in build["plugins"]:
        assert plugin["name"] and plugin["artifacts"]
        for artifact in plugin["artifacts"]:
            assert set(artifact) <= ARTIFACT_ALLOWED, sorted(set(artifact) - ARTIFACT_ALLOWED)
            assert artifact["type"] in ("jar", "tgz", "zip", "maven", "other")
    sharesink = next(p for p in build["plugins"] if p["name"] == "sharesink")["artifacts"][0]
    assert "sha512sum" in sharesink and sharesink["url"].endswith("-plugin.zip")
    assert set(connector["spec"]) <= CONNECTOR_ALLOWED
    assert connector["metadata"]["labels"]["strimzi.io/cluster"] == connect["metadata"]["name"]
    assert connector["spec"]["class"] == "io.sharesink.connect.ShareSinkConnector"
    assert "share.sink.connector.class" in connector["spec"]["config"]


def test_strimzi_secret_references_resolve_with_a_provider_and_rbac():
    connect, connector, role, binding = documents()
    config = connect["spec"]["config"]
    refs = [re.fullmatch(r"\$\{(\w+):([\w.-]+)/([\w.-]+):([\w.-]+)\}", v)
            for v in connector["spec"]["config"].values() if isinstance(v, str) and "${" in v]
    assert refs and all(refs), connector["spec"]["config"]
    for ref in refs:
        provider, namespace, secret, _ = ref.groups()
        assert provider in config["config.providers"].split(",")
        assert config[f"config.providers.{provider}.class"] == \
            "io.strimzi.kafka.KubernetesSecretConfigProvider"
        # The workers' service account may read that Secret, and only it.
        assert role["kind"] == "Role" and role["metadata"]["namespace"] == namespace
        assert role["rules"] == [{"apiGroups": [""], "resources": ["secrets"],
                                  "resourceNames": [secret], "verbs": ["get"]}]
    assert binding["kind"] == "RoleBinding"
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["metadata"]["namespace"] == role["metadata"]["namespace"]
    assert binding["subjects"] == [{"kind": "ServiceAccount",
                                    "name": f"{connect['metadata']['name']}-connect",
                                    "namespace": "kafka"}]


def test_strimzi_tls_port_only_with_tls():
    spec = documents()[0]["spec"]
    port = int(spec["bootstrapServers"].rsplit(":", 1)[1])
    if port == 9093:
        certs = spec["tls"]["trustedCertificates"]
        assert certs and all(c["secretName"] and ("certificate" in c) != ("pattern" in c)
                             for c in certs)
    else:
        assert "tls" not in spec


def test_keda_scales_the_workers_on_the_autoscalers_task_count():
    obj = yaml.safe_load(KEDA.read_text())
    assert obj["apiVersion"] == "keda.sh/v1alpha1" and obj["kind"] == "ScaledObject"
    target = obj["spec"]["scaleTargetRef"]
    connect = documents()[0]
    # Strimzi's KafkaConnect has a scale subresource (.spec.replicas): KEDA scales the workers.
    assert (target["apiVersion"], target["kind"], target["name"]) == (
        connect["apiVersion"], "KafkaConnect", connect["metadata"]["name"])
    trigger = obj["spec"]["triggers"][0]
    assert trigger["type"] == "prometheus"
    meta = trigger["metadata"]
    connector = documents()[1]["metadata"]["name"]
    assert meta["query"] == f'sum(sharesink_autoscale_tasks{{connector="{connector}"}})'
    assert documents()[1]["spec"]["config"]["share.tasks.autoscale"] == "true"
    assert meta["ignoreNullValues"] == "false" and obj["spec"]["fallback"]["replicas"] >= 1
    # The fallback keeps the workers there are (the default, "static", would scale in), and
    # scaling in is paced by the HPA: cooldownPeriod only paces a scale to zero.
    assert obj["spec"]["fallback"]["behavior"] == "currentReplicasIfHigher"
    assert obj["spec"]["fallback"]["replicas"] <= obj["spec"]["minReplicaCount"]
    assert "cooldownPeriod" not in obj["spec"]
    scale_down = obj["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"]
    assert scale_down["stabilizationWindowSeconds"] >= 60
    assert float(meta["threshold"]) > 0
    assert obj["spec"]["minReplicaCount"] <= obj["spec"]["maxReplicaCount"]


def test_operator_page_quotes_the_committed_benchmark_figures():
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "ops_figures.py"), "--check"],
                         text=True, capture_output=True)
    assert out.returncode == 0, out.stderr
    sys.path.insert(0, str(ROOT / "scripts"))
    import ops_figures
    report = ops_figures.REPORT.read_text()
    block = ops_figures.render(report)
    # The figures come from the report's row (g) table, not from a copy.
    row = ops_figures._table_after(report, "Reconfigurations of the autoscaled run")[0]
    assert f"to {row[0]} tasks, {row[1]} s until all ran, at most {row[2]}" in block
    changed = report.replace(f"| {row[0]} | {row[1]} |", f"| {row[0]} | 99.9 |", 1)
    assert "99.9 s until all ran" in ops_figures.render(changed)


def test_operator_page_quotes_the_committed_cost_figures():
    sys.path.insert(0, str(ROOT / "scripts"))
    import ops_figures
    report = ops_figures.REPORT_3.read_text()
    rows = ops_figures._cost_rows(report)
    assert rows, "the three-broker report has no cost table"
    page = ops_figures.PAGE.read_text()
    first = rows[0]
    assert f"| {first['what']} | {first['broker CPU s/M (JIT share)']} |" in page
    # A changed figure in the report changes the page's block; a report without the table says so.
    changed = report.replace(f"| {first['without JIT']} |", "| 123456 |", 1)
    assert "| 123456 |" in ops_figures.render_cost({"x": changed})
    old = "Generated by `scripts/bench.sh` on 2026-01-01 00:00 UTC"
    assert "predates the cost table" in ops_figures.render_cost({"x": old})
