"""What the machine could do at a given time: its load, and a clock that counts the seconds of a
core one runnable thread could get. Tests and harness waits run on a shared 2-core machine where
other stages, other checkouts and the test's own servers compete for the cores: a wait's budget or
a measured gap judged on the wall clock alone fails whenever the machine is overloaded.

- `MachineClock.now()`: machine seconds. Each wall second counts `min(1, cpus / runnable)`,
  `runnable` being the threads the kernel has ready to run at that moment (/proc/loadavg's
  fourth field, the reader included): on an idle machine it runs with the wall clock; on 2 cores
  with 14 threads ready to run, a second counts 1/7.
- `MachineTimeline`: that clock sampled in the background, so a test can ask afterwards how
  much slower than the wall clock the machine ran over any interval (`slowdown(t0, t1)`).
- The command line records the load while a stage of scripts/test.sh runs and sums it up for the
  stage table (`record FILE`, `summary FILE`).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from typing import Callable, List, NamedTuple, Optional, Sequence, Tuple

CPUS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class Load(NamedTuple):
    load1: float
    load5: float
    load15: float
    runnable: int  # threads ready to run right now, the reader included


def parse_loadavg(text: str) -> Load:
    """/proc/loadavg: "0.52 0.41 0.30 3/162 17115"."""
    f = text.split()
    return Load(float(f[0]), float(f[1]), float(f[2]), int(f[3].split("/")[0]))


def read_load() -> Load:
    with open("/proc/loadavg") as f:
        return parse_loadavg(f.read())


def parse_cpu_ticks(stat_text: str) -> Tuple[int, int]:
    """(busy, total) clock ticks of all cores from /proc/stat's first line; busy is everything
    but idle and iowait."""
    vals = [int(x) for x in stat_text.splitlines()[0].split()[1:]]
    total = sum(vals[:8])
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
    return total - idle, total


def read_cpu_ticks() -> Tuple[int, int]:
    with open("/proc/stat") as f:
        return parse_cpu_ticks(f.read())


def core_share(runnable: float, cpus: int = CPUS) -> float:
    """The share of a core one of `runnable` ready threads gets on `cpus` cores."""
    return min(1.0, cpus / max(1.0, runnable))


class MachineClock:
    """Machine seconds (see the module's doc): between two readings the wall time counts at the
    mean of the core shares seen at both ends. Thread-safe; `wall` and `runnable` are injectable
    for tests."""

    def __init__(self, wall: Callable[[], float] = time.monotonic,
                 runnable: Callable[[], float] = lambda: read_load().runnable, cpus: int = CPUS):
        self._wall, self._runnable, self.cpus = wall, runnable, cpus
        self._lock = threading.Lock()
        self._last_wall = wall()
        self._last_share = self._share()
        self._machine = 0.0

    def _share(self) -> float:
        try:
            return core_share(self._runnable(), self.cpus)
        except (OSError, ValueError, IndexError):
            return 1.0  # no /proc/loadavg: the wall clock

    def now(self) -> float:
        with self._lock:
            w, share = self._wall(), self._share()
            self._machine += max(0.0, w - self._last_wall) * (self._last_share + share) / 2
            self._last_wall, self._last_share = w, share
            return self._machine

    def wall(self) -> float:
        return self._wall()


class MachineTimeline(threading.Thread):
    """Samples a MachineClock every `interval` s in the background: (wall, machine) pairs, so that
    `machine_seconds(t0, t1)` and `slowdown(t0, t1)` can judge any interval afterwards. Times are
    time.monotonic() values (the clock's wall)."""

    def __init__(self, clock: Optional[MachineClock] = None, interval: float = 0.25):
        super().__init__(daemon=True, name="machine-timeline")
        self.clock = clock or MachineClock()
        self.interval = interval
        self.samples: List[Tuple[float, float]] = []
        self._halt = threading.Event()
        self.sample()

    def sample(self) -> None:
        m = self.clock.now()
        self.samples.append((self.clock.wall(), m))

    def run(self) -> None:
        while not self._halt.wait(self.interval):
            self.sample()

    def stop(self) -> "MachineTimeline":
        self._halt.set()
        if self.is_alive():
            self.join(timeout=10)
        self.sample()
        return self

    def _machine_at(self, t: float) -> float:
        s = self.samples
        if t <= s[0][0]:
            return s[0][1]
        for (w0, m0), (w1, m1) in zip(s, s[1:]):
            if w0 <= t <= w1:
                return m0 + (m1 - m0) * ((t - w0) / (w1 - w0) if w1 > w0 else 0.0)
        # past the last sample: at the last known rate would be a guess; the wall clock is not
        return s[-1][1] + (t - s[-1][0])

    def machine_seconds(self, t0: float, t1: float) -> float:
        return max(0.0, self._machine_at(t1) - self._machine_at(t0))

    def slowdown(self, t0: float, t1: float) -> float:
        """How many times slower than the wall clock the machine ran over [t0, t1] (1 when idle)."""
        m = self.machine_seconds(t0, t1)
        return (t1 - t0) / m if m > 0 and t1 > t0 else 1.0


# --------------------------------------------------------------------------------------------
# the stage table of scripts/test.sh: record a stage's load, sum it up


class StageSample(NamedTuple):
    epoch: float
    load: Load
    busy_ticks: int
    total_ticks: int


def format_sample(epoch: float, load: Load, busy: int, total: int) -> str:
    return (f"{epoch:.1f} {load.load1:.2f} {load.load5:.2f} {load.load15:.2f} {load.runnable} "
            f"{busy} {total}\n")


def parse_samples(text: str) -> List[StageSample]:
    out = []
    for line in text.splitlines():
        f = line.split()
        if len(f) != 7:
            continue
        try:
            out.append(StageSample(float(f[0]), Load(float(f[1]), float(f[2]), float(f[3]),
                                                     int(f[4])), int(f[5]), int(f[6])))
        except ValueError:
            continue
    return out


def summarize(samples: Sequence[StageSample], cpus: int = CPUS, clk_tck: int = CLK_TCK) -> str:
    """One line for the stage table: the 1-minute load average over the stage (mean and max of
    the samples), the 1/5/15-minute averages at its end, and the CPU the whole machine used
    meanwhile (seconds, and as a share of its cores)."""
    if len(samples) < 2:
        return "load: not recorded"
    loads = [s.load.load1 for s in samples]
    last = samples[-1]
    wall = last.epoch - samples[0].epoch
    busy = (last.busy_ticks - samples[0].busy_ticks) / clk_tck
    total = (last.total_ticks - samples[0].total_ticks) / clk_tck
    used = f"{busy / total:.0%}" if total > 0 else "?"
    return (f"load {sum(loads) / len(loads):.1f} mean, {max(loads):.1f} max "
            f"(1/5/15 min at end {last.load.load1:.1f}/{last.load.load5:.1f}/{last.load.load15:.1f}); "
            f"CPU {busy:.0f} s = {used} of {cpus} cores over {wall:.0f} s")


def record(path: str, interval: float) -> int:
    """Appends a sample to `path` now, every `interval` s, and once more on SIGTERM/SIGINT."""
    halt = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: halt.set())
    while True:
        busy, total = read_cpu_ticks()
        with open(path, "a") as f:
            f.write(format_sample(time.time(), read_load(), busy, total))
        if halt.is_set() or halt.wait(interval):
            busy, total = read_cpu_ticks()
            with open(path, "a") as f:
                f.write(format_sample(time.time(), read_load(), busy, total))
            return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description="The machine's load during a stage of scripts/test.sh")
    sub = ap.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("record", help="append load samples to FILE until SIGTERM")
    rec.add_argument("file")
    rec.add_argument("--interval", type=float, default=5.0)
    summ = sub.add_parser("summary", help="one line summing up FILE's samples")
    summ.add_argument("file")
    a = ap.parse_args(argv)
    if a.cmd == "record":
        return record(a.file, a.interval)
    try:
        with open(a.file) as f:
            print(summarize(parse_samples(f.read())))
    except OSError:
        print("load: not recorded")
    return 0


if __name__ == "__main__":
    sys.exit(main())
