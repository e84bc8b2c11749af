"""harness/waits.py and harness/machine.py on a fake clock, a fake log and a fake load: the
waits judge progress and the machine's load, not a fixed number of wall seconds. Nothing here
sleeps on the real clock or starts a process."""

from __future__ import annotations

import pytest

from harness.common import HarnessError
from harness.machine import (Load, MachineClock, MachineTimeline, StageSample, core_share,
                             parse_cpu_ticks, parse_loadavg, parse_samples, summarize)
from harness.waits import Budget, ProcessProgress, wait_progressing


class FakeMachine:
    """Wall time that only `sleep` advances, and a number of threads ready to run."""

    def __init__(self, runnable: float = 1, cpus: int = 2):
        self.t = 1000.0
        self.runnable = runnable
        self.clock = MachineClock(wall=lambda: self.t, runnable=lambda: self.runnable, cpus=cpus)

    def sleep(self, s: float) -> None:
        self.t += s


class FakeProcess:
    """A process whose log grows `log_per_s` bytes and whose CPU grows `cpu_per_s` per wall
    second of `machine`, until `silent_after` wall seconds; `exits_after`: it is gone then."""

    def __init__(self, machine: FakeMachine, log_per_s: float = 0, cpu_per_s: float = 0,
                 silent_after: float = float("inf"), exits_after: float = float("inf")):
        self.m, self.t0 = machine, machine.t
        self.log_per_s, self.cpu_per_s = log_per_s, cpu_per_s
        self.silent_after, self.exits_after = silent_after, exits_after

    def _active(self) -> float:
        return min(self.m.t - self.t0, self.silent_after)

    def log_size(self) -> int:
        return int(self._active() * self.log_per_s)

    def cpu(self) -> float:
        return self._active() * self.cpu_per_s

    def alive(self) -> bool:
        return self.m.t - self.t0 < self.exits_after

    def progress(self) -> ProcessProgress:
        return ProcessProgress(None, None, log_size=self.log_size, cpu=self.cpu)


def wait(machine: FakeMachine, proc: FakeProcess, ready_after: float = float("inf"), **kw):
    return wait_progressing("broker start", lambda: machine.t - proc.t0 >= ready_after,
                            alive=proc.alive, progress=proc.progress(),
                            describe=lambda: "\n--- last lines:\nthe log's tail", clock=machine.clock,
                            sleep=machine.sleep, **kw)


def test_a_process_that_keeps_logging_is_waited_for_past_any_short_timeout():
    # The CI run's broker: ready 129 s after its spawn, writing its log all along.
    m = FakeMachine(runnable=14)
    p = FakeProcess(m, log_per_s=200)
    assert wait(m, p, ready_after=129)
    assert m.t - p.t0 >= 129


def test_cpu_use_without_log_output_is_progress():
    m = FakeMachine()
    p = FakeProcess(m, cpu_per_s=0.5)  # e.g. a worker scanning its plugins
    assert wait(m, p, ready_after=300, quiet=60)


def test_a_silent_process_fails_after_the_quiet_time_with_its_logs_tail():
    m = FakeMachine()
    p = FakeProcess(m, log_per_s=100, cpu_per_s=0.5, silent_after=20)
    with pytest.raises(HarnessError) as e:
        wait(m, p, quiet=60)
    assert "no progress" in str(e.value) and "the log's tail" in str(e.value)
    assert 80 <= m.t - p.t0 <= 82  # 20 s of progress, then 60 s of silence


def test_an_idle_jvms_housekeeping_is_not_progress():
    m = FakeMachine()
    p = FakeProcess(m, cpu_per_s=0.005)  # well under 1 s of CPU per quiet time
    with pytest.raises(HarnessError, match="no progress"):
        wait(m, p, quiet=60)


def test_silence_counts_machine_seconds_so_an_overloaded_machine_waits_longer():
    m = FakeMachine(runnable=14, cpus=2)  # a second counts 1/7
    p = FakeProcess(m, silent_after=0)
    with pytest.raises(HarnessError, match="no progress"):
        wait(m, p, quiet=60)
    assert 60 * 7 <= m.t - p.t0 <= 60 * 7 + 2


def test_an_exited_process_fails_at_once():
    m = FakeMachine()
    p = FakeProcess(m, log_per_s=100, exits_after=3)
    with pytest.raises(HarnessError, match="exited") as e:
        wait(m, p, quiet=60)
    assert m.t - p.t0 < 4
    assert "the log's tail" in str(e.value)


def test_progress_is_bounded_on_the_wall_clock():
    m = FakeMachine()
    p = FakeProcess(m, log_per_s=100)
    with pytest.raises(HarnessError, match="still making progress"):
        wait(m, p, bound=600)
    assert 600 <= m.t - p.t0 <= 601


def test_a_probe_that_raises_counts_as_not_ready_and_is_reported():
    m = FakeMachine()
    p = FakeProcess(m, silent_after=0)

    def probe():
        raise ConnectionRefusedError("port closed")

    with pytest.raises(HarnessError, match="port closed"):
        wait_progressing("worker REST", probe, alive=p.alive, progress=p.progress(),
                         describe=lambda: "", quiet=10, clock=m.clock, sleep=m.sleep)


def test_machine_clock_counts_the_share_of_a_core_a_thread_could_get():
    m = FakeMachine(runnable=1, cpus=2)
    start = m.clock.now()
    m.sleep(10)
    assert m.clock.now() - start == pytest.approx(10)  # idle: the wall clock
    m.runnable = 8
    m.clock.now()  # the change is seen here: the next 10 s run at 2/8
    m.sleep(10)
    m.clock.now()
    m.sleep(10)
    assert m.clock.now() - start == pytest.approx(10 + 2.5 + 2.5)


def test_core_share():
    assert core_share(1, 2) == 1 and core_share(2, 2) == 1
    assert core_share(14, 2) == pytest.approx(1 / 7)
    assert core_share(0, 2) == 1


def test_budget_stretches_with_the_load_up_to_its_cap():
    m = FakeMachine(runnable=2)
    b = Budget(60, clock=m.clock)
    m.sleep(59)
    assert not b.spent()
    m.sleep(2)
    assert b.spent()

    m = FakeMachine(runnable=8)  # a second counts 1/4
    b = Budget(60, clock=m.clock)
    m.sleep(200)
    assert not b.spent()
    m.sleep(50)
    assert b.spent()
    assert "machine time" in b.describe() and "250s on the wall clock" in b.describe()

    m = FakeMachine(runnable=100)
    b = Budget(60, cap=300, clock=m.clock)
    m.sleep(299)
    assert not b.spent()
    m.sleep(2)
    assert b.spent()


def test_timeline_slowdown_over_an_interval():
    m = FakeMachine(runnable=1)
    tl = MachineTimeline(clock=m.clock)
    for runnable in [1] * 10 + [6] * 10 + [1] * 10:  # 10 s idle, 10 s at 3x, 10 s idle
        m.runnable = runnable
        m.sleep(1)
        tl.sample()
    t0 = tl.samples[0][0]
    assert tl.slowdown(t0, t0 + 9) == pytest.approx(1)
    assert tl.slowdown(t0 + 11, t0 + 20) == pytest.approx(3)
    assert 1 < tl.slowdown(t0, t0 + 30) < 3


def test_loadavg_and_cpu_parsing():
    assert parse_loadavg("14.02 13.90 14.10 17/905 123\n") == Load(14.02, 13.9, 14.1, 17)
    busy, total = parse_cpu_ticks("cpu  100 5 50 800 40 2 3 0 0 0\ncpu0 1 2 3 4\n")
    assert (busy, total) == (160, 1000)


def test_stage_summary():
    samples = parse_samples("100.0 1.00 0.50 0.20 1 1000 5000\n"
                            "105.0 3.00 1.00 0.40 4 1900 6000\n"
                            "bad line\n"
                            "110.0 2.00 1.20 0.50 2 2000 7000\n")
    assert len(samples) == 3 and isinstance(samples[0], StageSample)
    line = summarize(samples, cpus=2, clk_tck=100)
    assert line.startswith("load 2.0 mean, 3.0 max (1/5/15 min at end 2.0/1.2/0.5)")
    assert "CPU 10 s = 50% of 2 cores over 10 s" in line
    assert summarize(samples[:1]) == "load: not recorded"
