"""bench/proc.py's samplers stop cleanly and keep one clock (no broker needed: they watch this
test's own process)."""

from __future__ import annotations

import os
import time

import proc


def test_cpu_sampler_stops_and_keeps_monotonic_times():
    before = time.monotonic()
    sampler = proc.CpuSampler(os.getpid(), interval=0.01)
    time.sleep(0.05)
    sampler.stop()
    times = [t for t, _ in sampler.samples]
    assert times and times == sorted(times)
    assert before <= times[0] and times[-1] <= time.monotonic()


def test_load_timeline_covers_up_to_its_stop():
    timeline = proc.LoadTimeline({"bench": os.getpid()}, interval=10)
    time.sleep(0.05)
    last_read = time.time()
    timeline.stop()
    # the interval is longer than the test, so only the sample taken at stop() lies past it
    assert "busy" in timeline.cores(last_read - 0.01, last_read)


def test_three_brokers_read_as_one_broker_with_their_spread_beside():
    window = {"broker-0_cpu_s": 1.5, "broker-0_cpu_s_by_thread": {"gc": 0.5, "other": 1.0},
              "broker-1_cpu_s": 2.0, "broker-1_cpu_s_by_thread": {"gc": 0.25, "other": 1.75},
              "broker-2_cpu_s": 0.5, "worker_cpu_s": 9.0}
    assert proc.brokers_together(window) == {
        "broker_cpu_s": 4.0, "broker_cpu_s_by_thread": {"gc": 0.75, "other": 2.75}}
    # one broker: its own figures stand
    assert proc.brokers_together({"broker_cpu_s": 3.0, "worker_cpu_s": 1.0}) == {}


def test_load_timeline_sums_several_brokers_as_broker():
    pid = os.getpid()
    timeline = proc.LoadTimeline({"broker-0": pid, "broker-1": pid}, interval=10)
    timeline.stop()
    sample = timeline.samples[-1][1]
    assert sample["broker"] == sample["broker-0"] + sample["broker-1"]
