"""Latency episodes: where a run's worst records came from.

A run's p99 is set by its slowest 1% of records, and on a machine the broker, the worker and the
producer share, those mostly come in episodes: a fraction of a second in which every record is
late. This groups a run's late records (latency at or above its p99) into episodes by produce
time and sets each beside what the machine was doing meanwhile (proc.LoadTimeline), so that a
report can say whether a p99 came from the runtime or from the load around it.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

# Late records produced less than this apart belong to one episode.
EPISODE_GAP_S = 0.25
# Episodes whose load is reported one by one (the worst by their latest record).
WORST = 3


def late_episodes(timed: Sequence[Tuple[float, float]], threshold_ms: float,
                  gap_s: float = EPISODE_GAP_S) -> List[Dict[str, float]]:
    """Episodes of the records (produced, seen; wall seconds) that took `threshold_ms` or
    longer: each {start: first produce, end: last seen, late: records, max_ms}, by start."""
    late = sorted((p, s) for p, s in timed if (s - p) * 1000 >= threshold_ms)
    out: List[Dict[str, float]] = []
    for p, s in late:
        lat = (s - p) * 1000
        if out and p - out[-1]["last_produced"] <= gap_s:
            e = out[-1]
            e["end"], e["late"] = max(e["end"], s), e["late"] + 1
            e["max_ms"], e["last_produced"] = max(e["max_ms"], lat), p
        else:
            out.append({"start": p, "end": s, "late": 1, "max_ms": lat, "last_produced": p})
    for e in out:
        del e["last_produced"]
    return out


def profile(timed: Sequence[Tuple[float, float]], threshold_ms: Optional[float],
            timeline, one_in: int = 1) -> Dict[str, object]:
    """The run's late records as episodes, with the cores each watched series used during them
    and during the rest of the timed span (`timeline.cores(t0, t1)`); `one_in`: each timed
    record stands for that many."""
    if not timed or threshold_ms is None:
        return {}
    t0 = min(p for p, _ in timed)
    t1 = max(s for _, s in timed)
    eps = late_episodes(timed, threshold_ms)
    span = max(t1 - t0, 1e-9)
    in_eps = sum(e["end"] - e["start"] for e in eps)

    def weighted(windows: List[Tuple[float, float]]) -> Dict[str, float]:
        total, acc = 0.0, {}
        for a, b in windows:
            load = timeline.cores(a, b) if b > a else {}
            if not load:
                continue  # no samples around it: a span without figures does not count as idle
            for k, v in load.items():
                acc[k] = acc.get(k, 0.0) + v * (b - a)
            total += b - a
        return {k: round(v / total, 2) for k, v in acc.items()} if total else {}

    rest, cur = [], t0
    for e in eps:
        if e["start"] > cur:
            rest.append((cur, e["start"]))
        cur = max(cur, e["end"])
    if cur < t1:
        rest.append((cur, t1))
    worst = sorted(eps, key=lambda e: e["max_ms"], reverse=True)[:WORST]
    return {
        "threshold_ms": threshold_ms,
        "episodes": len(eps),
        "late_records": sum(e["late"] for e in eps) * one_in,
        "episodes_s": round(in_eps, 2),
        "span_s": round(span, 2),
        "load_in_episodes": weighted([(e["start"], e["end"]) for e in eps]),
        "load_rest": weighted(rest),
        "worst": [{"at_s": round(e["start"] - t0, 2), "for_s": round(e["end"] - e["start"], 2),
                   "max_ms": round(e["max_ms"], 1), "load": timeline.cores(e["start"], e["end"])}
                  for e in worst],
    }
