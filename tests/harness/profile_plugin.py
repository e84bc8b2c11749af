"""A pytest plugin (`-p harness.profile_plugin`): one line per test in
`build/test-profile/<stage>-<lane>.jsonl` with its wall time (setup, call and teardown: a session
fixture's start counts for the first test that asks for it) and what of it went to fixed costs
(`harness.costs`: the cluster's parts, workers, Kafka's tools, connectors, sleeps, polling waits).
scripts/test_profile.py turns the files into the committed table.

SHARESINK_PROFILE_STAGE names the stage (default `tests`); the lane is pytest-xdist's worker, or
`gw0` without it. While a test sleeps, `time.sleep` counts as a sleep (the harness's own sleeps
inside a timed operation count for that operation).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from harness import costs
from harness.common import REPO_ROOT

_real_sleep = time.sleep


def _sleep(seconds: float) -> None:
    with costs.fixed_cost(costs.SLEEPS):
        _real_sleep(seconds)


def _profile_file() -> Path:
    out = Path(os.environ.get("SHARESINK_PROFILE_DIR", REPO_ROOT / "build" / "test-profile"))
    out.mkdir(parents=True, exist_ok=True)
    stage = os.environ.get("SHARESINK_PROFILE_STAGE", "tests")
    return out / f"{stage}-{os.environ.get('PYTEST_XDIST_WORKER', 'gw0')}.jsonl"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    costs.take()  # what ran between tests (collection, a previous test's leftovers) is no test's
    t0 = time.monotonic()
    time.sleep = _sleep
    try:
        yield
    finally:
        time.sleep = _real_sleep
        seconds = round(time.monotonic() - t0, 2)
        record = {"test": item.nodeid, "seconds": seconds, "costs": costs.take(),
                  "lane": os.environ.get("PYTEST_XDIST_WORKER", "gw0"),
                  "stage": os.environ.get("SHARESINK_PROFILE_STAGE", "tests"),
                  "outcome": getattr(item, "_profile_outcome", None)}
        with open(_profile_file(), "a") as f:
            f.write(json.dumps(record) + "\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item._profile_outcome = report.outcome
    elif report.failed:
        item._profile_outcome = "error"
