"""sharesink's alert rules without a worker (tests/e2e/test_share_27_alerts.py evaluates them in
a real Prometheus scraping a real worker):

- `promtool check rules` accepts the plain rules and the PrometheusRule's groups;
- the PrometheusRule is what scripts/ops_rules.py generates from the plain rules;
- every series an alert queries is one ops/prometheus/jmx-exporter.yaml produces;
- every alert has its runbook section in docs/operations.md, which its annotation points at.
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
        assert rule["annotations"]["runbook"] == f"docs/operations.md#{anchor}", rule["alert"]
        assert rule["labels"]["severity"] in ("warning", "critical"), rule["alert"]
