"""The latency-episode profile of bench/episodes.py: late records grouped by produce time and
set beside the load of their moment (no broker needed)."""

from __future__ import annotations


import episodes


class SteadyLoad:
    """A timeline whose series used fixed cores, higher inside [busy_from, busy_to)."""

    def __init__(self, busy_from: float, busy_to: float):
        self.busy_from, self.busy_to = busy_from, busy_to

    def cores(self, t0: float, t1: float):
        inside = self.busy_from <= t0 and t1 <= self.busy_to
        return {"busy": 2.0 if inside else 1.0, "broker": 0.5}


def test_late_records_produced_close_together_form_one_episode():
    # 10 ms records every 10 ms; two bursts of 300 ms records at 1.0-1.2 s and 5.0 s
    timed = [(i / 100, i / 100 + 0.01) for i in range(800)]
    timed += [(1.0 + i / 100, 1.3 + i / 100) for i in range(21)] + [(5.0, 5.3)]
    eps = episodes.late_episodes(timed, threshold_ms=200)
    assert [(round(e["start"], 2), round(e["end"], 2), e["late"]) for e in eps] == \
        [(1.0, 1.5, 21), (5.0, 5.3, 1)]
    assert round(eps[0]["max_ms"]) == 300


def test_profile_sets_the_episodes_beside_the_load_of_their_moment():
    timed = [(i / 100, i / 100 + 0.01) for i in range(800)] + [(2.0, 2.4), (2.1, 2.45)]
    prof = episodes.profile(timed, 300, SteadyLoad(1.9, 2.5), one_in=20)
    assert prof["episodes"] == 1 and prof["late_records"] == 40
    assert prof["episodes_s"] == 0.45
    assert prof["load_in_episodes"]["busy"] == 2.0
    assert prof["load_rest"]["busy"] == 1.0
    assert prof["worst"][0]["at_s"] == 2.0 and prof["worst"][0]["max_ms"] == 400.0


class CoveredUntil(SteadyLoad):
    """A timeline that stopped sampling at `until`: no figure for a span reaching past it (the
    bench's last read can come after its last sample)."""

    def __init__(self, busy_from: float, busy_to: float, until: float):
        super().__init__(busy_from, busy_to)
        self.until = until

    def cores(self, t0: float, t1: float):
        return super().cores(t0, t1) if t1 <= self.until else {}


def test_a_span_the_timeline_does_not_cover_does_not_dilute_the_load():
    # the run of 2026-12-04 (0.5 x classic, sharesink): one episode at 3 s, the timeline's last
    # sample before the last read; its rest was reported at 0.3 busy cores against 1.64
    timed = [(i / 100, i / 100 + 0.01) for i in range(800)] + [(3.0, 3.4)]
    prof = episodes.profile(timed, 300, CoveredUntil(2.9, 3.5, until=7.5))
    assert prof["load_rest"]["busy"] == 1.0
    assert prof["load_in_episodes"]["busy"] == 2.0


def test_no_timed_records_no_profile():
    assert episodes.profile([], 10, SteadyLoad(0, 1)) == {}
