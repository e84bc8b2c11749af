"""harness/tools.py's communicate_watching: a Kafka tool is stopped once no broker has run for a
while, not left to wait out its whole timeout (a full disk took every broker down and
ProducerPerformance retried for an hour). Real child processes (`sh`), a fake clock: each check
advances it by one second, so no test waits for the bounds it checks."""

from __future__ import annotations

import subprocess

import pytest

from harness.tools import BrokersGone, communicate_watching


class Ticks:
    """A clock that advances one second each time it is read."""

    def __init__(self):
        self.t = 0.0

    def __call__(self) -> float:
        self.t += 1.0
        return self.t


def child(script: str, stdin=None) -> subprocess.Popen:
    return subprocess.Popen(["sh", "-c", script], stdin=stdin, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_a_tool_is_stopped_once_no_broker_has_run_for_the_grace():
    proc = child("echo retrying >&2; exec sleep 60")
    with pytest.raises(BrokersGone) as e:
        communicate_watching(proc, None, timeout=3600, gone=lambda: True, gone_for=5,
                             interval=0.01, clock=Ticks())
    assert proc.poll() is not None, "the tool was left running"
    assert "retrying" in e.value.stderr


def test_a_broker_restart_shorter_than_the_grace_does_not_stop_the_tool():
    # gone for 3 ticks, back for 1, gone for 3 ...: never 5 in a row.
    pattern = iter([True, True, True, False] * 1000)
    proc = child("sleep 0.5; echo done")
    out, _ = communicate_watching(proc, None, timeout=3600, gone=lambda: next(pattern),
                                  gone_for=5, interval=0.01, clock=Ticks())
    assert out.strip() == "done" and proc.returncode == 0


def test_the_timeout_still_stops_a_tool_with_brokers_running():
    proc = child("exec sleep 60")
    with pytest.raises(subprocess.TimeoutExpired):
        communicate_watching(proc, None, timeout=10, gone=lambda: False, gone_for=5,
                             interval=0.01, clock=Ticks())
    assert proc.poll() is not None


def test_the_input_reaches_a_tool_that_reads_it_after_a_check():
    proc = child("sleep 0.3; cat", stdin=subprocess.PIPE)
    out, _ = communicate_watching(proc, "records\n", timeout=3600, gone=lambda: False,
                                  gone_for=5, interval=0.01, clock=Ticks())
    assert out == "records\n"
