"""The test profile's parts without a cluster: the fixed-cost timer (harness/costs.py), the
libtest JSON reader (scripts/libtest_json.py) and the profile's page (scripts/test_profile.py)."""

from __future__ import annotations

import importlib.util
import io
import json
import threading
import time
from pathlib import Path

from harness import costs

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_only_the_outermost_timed_operation_of_the_main_thread_counts():
    costs.take()
    with costs.fixed_cost(costs.WORKERS):
        time.sleep(0.02)
        with costs.fixed_cost(costs.TOOLS):  # a tool run inside a worker start
            time.sleep(0.02)
    other = threading.Thread(target=lambda: costs.timed(costs.TOOLS, time.sleep)(0.05))
    other.start()
    other.join()
    taken = costs.take()
    assert set(taken) == {costs.WORKERS}, taken
    assert 0.03 <= taken[costs.WORKERS] < 1, taken
    assert costs.take() == {}, "taken means gone"


def test_timed_methods_keep_their_name_and_result():
    class Service:
        @costs.timed_method(costs.CLUSTER)
        def start(self, x):
            """Starts."""
            return x + 1

    costs.take()
    assert Service().start(1) == 2
    assert Service.start.__name__ == "start" and Service.start.__doc__ == "Starts."
    assert costs.CLUSTER in costs.take()


def test_libtest_events_become_cargo_lines_and_times():
    libtest = _script("libtest_json")
    events = [
        {"type": "suite", "event": "started", "test_count": 2},
        {"type": "test", "event": "started", "name": "a::quick"},
        {"type": "test", "name": "a::quick", "event": "ok", "exec_time": 0.25},
        "printed by a test with --nocapture",
        {"type": "test", "name": "a::slow", "event": "failed", "exec_time": 12.0,
         "stdout": "thread 'a::slow' panicked at tests/a.rs:9:5:\nassertion `left == right` "
                   "failed\n  left: 19\n right: 20\nstack backtrace:\n   0: frames"},
        {"type": "suite", "event": "failed", "passed": 1, "failed": 1, "ignored": 0,
         "exec_time": 12.3},
    ]
    lines = io.StringIO("".join((json.dumps(e) if isinstance(e, dict) else e) + "\n"
                                for e in events))
    out, times = io.StringIO(), io.StringIO()
    assert libtest.report(lines, "broker", out, times) == 1
    text = out.getvalue()
    assert "test a::quick ... ok (0.2 s)" in text or "test a::quick ... ok (0.3 s)" in text
    assert "printed by a test with --nocapture" in text
    assert "---- a::slow ----\nthread 'a::slow' panicked at tests/a.rs:9:5:" in text
    assert "broker: failed. 1 passed; 1 failed" in text
    # The failures are named, with their message and without the backtrace, just above the
    # summary: the part of a log CI shows.
    tail = text[text.index("broker: failed tests"):]
    assert ("  a::slow: tests/a.rs:9:5: assertion `left == right` failed left: 19 right: 20\n"
            in tail), tail
    assert "frames" not in tail
    recorded = [json.loads(line) for line in times.getvalue().splitlines()]
    assert [(r["test"], r["seconds"], r["outcome"]) for r in recorded] == [
        ("a::quick", 0.25, "ok"), ("a::slow", 12.0, "failed")]


def test_a_binary_that_ends_without_its_summary_fails():
    libtest = _script("libtest_json")
    lines = io.StringIO(json.dumps({"type": "test", "name": "x", "event": "ok"}) + "\n")
    out = io.StringIO()
    assert libtest.report(lines, "broker", out, None) == 1
    assert "ended without its summary" in out.getvalue()


def test_the_profile_page_shows_each_stage_and_test(tmp_path):
    profile = _script("test_profile")
    build = tmp_path / "build"
    (build / "test-profile").mkdir(parents=True)
    (build / "test-times").mkdir()
    (build / "test-timings.txt").write_text("e2e        900 s of 1200 s  load 1.0\n")
    (build / "test-profile" / "e2e-gw0.jsonl").write_text("\n".join(json.dumps(r) for r in [
        {"test": "tests/e2e/test_a.py::test_one", "seconds": 100.0, "lane": "gw0", "stage": "e2e",
         "costs": {"workers": 20.0, "sleeps": 10.0, "polls": 50.0}, "outcome": "passed"},
        {"test": "tests/e2e/test_b.py::test_two", "seconds": 10.0, "lane": "gw1", "stage": "e2e",
         "costs": {}, "outcome": "passed"}]) + "\n")
    (build / "test-times" / "engine.jsonl").write_text(json.dumps(
        {"binary": "broker", "test": "locks::expired", "seconds": 14.4, "outcome": "ok"}) + "\n")
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "TEST-x.ShareSinkDriverBrokerTest.xml").write_text(
        '<testsuite><testcase classname="io.x.ShareSinkDriverBrokerTest" name="holds" '
        'time="22.4"/></testsuite>')
    page = profile.render(build, reports)
    assert "e2e        900 s of 1200 s" in page
    assert "### e2e: 2 tests, 110 s of test time over 2 lanes" in page
    assert "Fixed costs 30 s (27% of it)" in page
    assert page.index("test_a.py::test_one") < page.index("test_b.py::test_two"), "slowest first"
    assert "| `tests/e2e/test_a.py::test_one` | gw0 | 100 |  | 20 |  |  | 10 | 50 | 20 | passed |" \
        in page
    assert "`locks::expired` | 14 | ok" in page
    assert "`ShareSinkDriverBrokerTest` | `holds` | 22 | passed" in page
