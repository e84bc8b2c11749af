"""sharesink's alert rules without a worker (tests/e2e/test_share_27_alerts.py evaluates them in
a real Prometheus scraping a real worker):

- `promtool check rules` accepts the plain rules and the PrometheusRule's groups;
- the PrometheusRule is what scripts/ops_rules.py generates from the plain rules;
- every series an alert queries is one ops/prometheus/jmx-exporter.yaml produces;
- every alert has its runbook section in docs/operations.md, which its absolute `runbook_url`
  points at (under a base scripts/ops_rules.py --runbook-base rewrites), and a description;
- every rule groups by the labels that tell Connect clusters apart;
- the promtool unit tests (ops/prometheus/sharesink-alerts.test.yaml) pass, and fire every alert.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from test_metrics_config import OPERATIONS, SERIES, exported

ROOT = Path(__file__).resolve().parents[2]
PLAIN = ROOT / "ops" / "prometheus" / "sharesink-alerts.yaml"
UNIT_TESTS = ROOT / "ops" / "prometheus" / "sharesink-alerts.test.yaml"
CLUSTER_LABELS = "(namespace, job, connector)"
OPERATOR = ROOT / "ops" / "prometheus" / "sharesink-prometheusrule.yaml"


def alerts():
    return [r for g in yaml.safe_load(PLAIN.read_text())["groups"] for r in g["rules"]]


def promtool() -> str:
    tool = shutil.which("promtool")
    if not tool:
        pytest.fail("promtool is missing (Debian's prometheus package; scripts/lib.sh "
                    "ensure_prometheus installs it)", pytrace=False)
    return tool


def test_promtool_accepts_both_forms(tmp_path):
    out = subprocess.run([promtool(), "check", "rules", str(PLAIN)], text=True,
                         capture_output=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"SUCCESS: {len(alerts())} rules found" in out.stdout, out.stdout
    spec = tmp_path / "from-prometheusrule.yaml"
    spec.write_text(yaml.safe_dump({"groups": yaml.safe_load(OPERATOR.read_text())["spec"]["groups"]}))
    out = subprocess.run([promtool(), "check", "rules", str(spec)], text=True, capture_output=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_prometheusrule_is_generated_from_the_plain_rules():
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "ops_rules.py"), "--check"],
                         text=True, capture_output=True)
    assert out.returncode == 0, out.stderr
    operator = yaml.safe_load(OPERATOR.read_text())
    assert operator["apiVersion"] == "monitoring.coreos.com/v1"
    assert operator["kind"] == "PrometheusRule"
    assert operator["spec"]["groups"] == yaml.safe_load(PLAIN.read_text())["groups"]


def test_every_alert_queries_exported_series_and_has_a_runbook():
    produced = exported()
    doc = OPERATIONS.read_text()
    headings = {h.strip().lower() for h in re.findall(r"^#### (.+)$", doc, re.M)}
    assert len(alerts()) >= 5
    for rule in alerts():
        used = set(SERIES.findall(rule["expr"]))
        assert used and used <= produced, (rule["alert"], sorted(used - produced))
        anchor = rule["alert"].lower()
        assert anchor in headings, f"docs/operations.md has no '#### {rule['alert']}' runbook"
        url = rule["annotations"]["runbook_url"]
        assert re.fullmatch(rf"https://[^#\s]+/docs/operations\.md#{anchor}", url), (rule["alert"], url)
        assert len(rule["annotations"]["description"]) > 40, rule["alert"]
        assert rule["labels"]["severity"] in ("warning", "critical"), rule["alert"]


def test_every_rule_tells_connect_clusters_apart():
    for rule in alerts():
        groupings = re.findall(r"\b(?:by|on) (\([^)]*\))", rule["expr"])
        assert groupings, rule["alert"]
        assert set(groupings) == {CLUSTER_LABELS}, (rule["alert"], groupings)


def test_promtool_unit_tests_pass_and_fire_every_alert():
    out = subprocess.run([promtool(), "test", "rules", UNIT_TESTS.name], cwd=UNIT_TESTS.parent,
                         text=True, capture_output=True)
    assert out.returncode == 0, out.stdout + out.stderr
    fired = {t["alertname"] for case in yaml.safe_load(UNIT_TESTS.read_text())["tests"]
             for t in case["alert_rule_test"] if t.get("exp_alerts")}
    assert fired == {r["alert"] for r in alerts()}, fired


def test_the_runbook_base_is_rewritten_in_both_forms(tmp_path, monkeypatch):
    import importlib.util
    spec = importlib.util.spec_from_file_location("ops_rules", ROOT / "scripts" / "ops_rules.py")
    ops_rules = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ops_rules)
    plain, operator = tmp_path / "alerts.yaml", tmp_path / "rule.yaml"
    plain.write_text(PLAIN.read_text())
    monkeypatch.setattr(ops_rules, "PLAIN", plain)
    monkeypatch.setattr(ops_rules, "OPERATOR", operator)
    monkeypatch.setattr(sys, "argv", ["ops_rules.py", "--runbook-base",
                                      "https://docs.example.com/ops.html"])
    assert ops_rules.main() == 0
    plain_groups = yaml.safe_load(plain.read_text())["groups"]
    operator_groups = yaml.safe_load(operator.read_text())["spec"]["groups"]
    for groups in (plain_groups, operator_groups):
        urls = [r["annotations"]["runbook_url"] for g in groups for r in g["rules"]]
        assert len(urls) == len(alerts())
        assert all(u.startswith("https://docs.example.com/ops.html#sharesink") for u in urls), urls
    with pytest.raises(SystemExit):
        ops_rules.set_runbook_base("docs/operations.md")
