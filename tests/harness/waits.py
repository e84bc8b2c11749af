"""Waits that judge progress, not a fixed clock.

A wait on the shared 2-core machine that gives up after a fixed number of wall seconds fails
whenever the machine is overloaded: a broker that takes a few seconds to start on an idle machine
took 129 s in a CI run with 14 threads ready to run per 2 cores, still writing its startup log.
So:

- `wait_progressing`: waiting for a process of ours (a broker, a worker, PostgreSQL, a proxy) to
  be ready, or to be gone after a stop signal. It keeps going while the process makes progress
  (its log grows, or it uses CPU: `ProcessProgress`), up to a generous bound on the wall clock
  (`BOUND_S`); it fails at once when the process exits, and as soon as it has been silent (no log
  growth, no CPU) for `quiet` machine seconds, with its log's tail.
- `Budget`: every other wait (a REST call retried while the worker rebalances, a connector's tasks
  becoming RUNNING, a test's condition) spends a budget of machine seconds (harness/machine.py:
  a second counts the share of a core a runnable thread could get), so it stretches while the
  machine is overloaded, never beyond a wall-clock cap.

The clock (`now()`: machine seconds, `wall()`: wall seconds) and `sleep` are parameters, so the
logic is tested without sleeping (tests/unit/test_waits.py).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Optional, Protocol

from harness.common import HarnessError
from harness.machine import CLK_TCK, MachineClock

# The generous bound of a wait on a process that keeps making progress (wall seconds).
BOUND_S = 600.0
# How long a process may be silent (no log growth, no CPU) before a wait gives up on it, in
# machine seconds: far longer than any quiet phase of a JVM's startup, far shorter than the bound.
QUIET_S = 120.0
# A process that used this much CPU since the last progress made progress, log or not (a JVM
# scanning plugins; an idle or deadlocked JVM's housekeeping threads use far less in QUIET_S).
MIN_CPU_S = 1.0


class Clock(Protocol):
    def now(self) -> float: ...   # machine seconds

    def wall(self) -> float: ...  # wall seconds


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _proc_cpu(pid: int) -> Optional[float]:
    """utime + stime of process `pid` in seconds (its threads included); None when gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2:].split()
    try:
        return (int(fields[11]) + int(fields[12])) / CLK_TCK
    except (IndexError, ValueError):
        return None


class ProcessProgress:
    """Whether a process made progress since the last call of `advanced()`: its log grew, or it
    used at least `min_cpu` seconds of CPU since it last made progress. `log_size` and `cpu` are
    injectable for tests."""

    def __init__(self, log: Optional[Path], pid: Optional[int], min_cpu: float = MIN_CPU_S,
                 log_size: Optional[Callable[[], int]] = None,
                 cpu: Optional[Callable[[], Optional[float]]] = None):
        self._log_size = log_size or (lambda: _file_size(log) if log is not None else 0)
        self._cpu = cpu or (lambda: _proc_cpu(pid) if pid is not None else None)
        self.min_cpu = min_cpu
        self._size = self._log_size()
        self._cpu_mark = self._cpu()

    def advanced(self) -> bool:
        size, cpu = self._log_size(), self._cpu()
        grew = size > self._size
        busy = cpu is not None and self._cpu_mark is not None and cpu - self._cpu_mark >= self.min_cpu
        if grew or busy:
            self._size, self._cpu_mark = size, cpu
            return True
        if self._cpu_mark is None:
            self._cpu_mark = cpu
        return False


def wait_progressing(what: str, ready: Callable[[], Any], *, alive: Callable[[], bool],
                     progress: ProcessProgress, describe: Callable[[], str],
                     quiet: float = QUIET_S, bound: float = BOUND_S, interval: float = 0.3,
                     clock: Optional[Clock] = None,
                     sleep: Callable[[float], None] = time.sleep) -> Any:
    """Calls `ready()` every `interval` s until it returns something truthy (returned). Fails
    with HarnessError (the message ends with `describe()`, e.g. the log's tail) when `alive()`
    turns false, when `progress` saw nothing for `quiet` machine seconds, or after `bound` wall
    seconds. `ready()` raising counts as not ready (the last error is shown on failure)."""
    clock = clock or MachineClock()
    w0 = clock.wall()
    quiet_since = clock.now()
    last_exc: Optional[BaseException] = None
    while True:
        if not alive():
            raise HarnessError(f"{what}: the process exited after {clock.wall() - w0:.0f}s"
                               f"{describe()}")
        try:
            r = ready()
            if r:
                return r
        except Exception as e:  # noqa: BLE001 - readiness probes fail in many ways
            last_exc = e
        now = clock.now()
        if progress.advanced():
            quiet_since = now
        elif now - quiet_since > quiet:
            raise HarnessError(
                f"{what}: no progress (no log output, no CPU) for {now - quiet_since:.0f} machine "
                f"seconds, {clock.wall() - w0:.0f}s after the wait began (last error: {last_exc})"
                f"{describe()}")
        if clock.wall() - w0 > bound:
            raise HarnessError(f"{what}: not ready after {bound:.0f}s although still making "
                               f"progress (last error: {last_exc}){describe()}")
        sleep(interval)


class Budget:
    """A wait's budget: `seconds` of machine time (see the module's doc), never more than `cap`
    wall seconds (default: the larger of BOUND_S and three times the budget)."""

    def __init__(self, seconds: float, cap: Optional[float] = None, clock: Optional[Clock] = None):
        self.clock = clock or MachineClock()
        self.seconds = seconds
        self.cap = cap if cap is not None else max(BOUND_S, 3 * seconds)
        self._m0 = self.clock.now()
        self._w0 = self.clock.wall()

    def machine_elapsed(self) -> float:
        return self.clock.now() - self._m0

    def wall_elapsed(self) -> float:
        return self.clock.wall() - self._w0

    def spent(self) -> bool:
        return self.machine_elapsed() > self.seconds or self.wall_elapsed() > self.cap

    def describe(self) -> str:
        """E.g. "60s of machine time (143s on the wall clock)"."""
        w = self.wall_elapsed()
        m = min(self.machine_elapsed(), w)
        if w - m < 1:
            return f"{w:.0f}s"
        return f"{m:.0f}s of machine time ({w:.0f}s on the wall clock, the machine overloaded)"
