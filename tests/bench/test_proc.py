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
