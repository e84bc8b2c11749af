"""Running one benchmark client as a child process and accounting its CPU.

Every client runs alone (one at a time), so the figures are the process's own accounting:
- total CPU: the child's rusage (utime + stime) returned by wait4() for exactly that pid;
- CPU during an interval: /proc/<pid>/stat utime + stime sampled every 50 ms, interpolated at
  the instants the client reports (first record, end);
- the broker's CPU over the same run from /proc/<broker pid>/stat, to show when the broker is the
  limit.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, List, Optional, Sequence, Tuple

CLK_TCK = os.sysconf("SC_CLK_TCK")


def stat_cpu(stat: str) -> float:
    """utime + stime in seconds from the text of a /proc/.../stat file."""
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_cpu(pid: int) -> Optional[float]:
    """utime + stime of a live process in seconds (None when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return stat_cpu(f.read())
    except (OSError, IndexError, ValueError):
        return None


# JVM thread names (as /proc shows them, cut to 15 characters) -> what the thread does.
THREAD_GROUPS = (
    ("jit", ("C1 CompilerThre", "C2 CompilerThre")),
    ("gc", ("GC Thread#", "G1 ")),
    ("requests", ("data-plane-kafk",)),
    ("share_state", ("PersisterStateM", "share-coordinat")),
    # followers fetching from leaders: with replication factor 3 every write is read twice more
    ("replication", ("ReplicaFetcherT",)),
    # A Connect worker's task threads (task-thread-<connector>-<n>, sharesink's too) and
    # sharesink's native runtime: how the worker's CPU splits between the per-record work of the
    # runtimes and the engine.
    ("tasks", ("task-thread-",)),
    ("engine", ("sharesink-engi",)),
)


def thread_cpu(pid: int) -> dict:
    """{tid: (group, cpu s)} for the live threads of a process (group "other" when unnamed)."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        out[tid] = (thread_group(name), stat_cpu(stat))
    return out


def thread_group(name: str) -> str:
    """A thread's group in THREAD_GROUPS by its name ("other" when none)."""
    return next((g for g, prefixes in THREAD_GROUPS
                 if any(name.startswith(p) for p in prefixes)), "other")


def machine_times() -> Tuple[float, float, float]:
    """(busy, total, stolen) seconds over all cores since boot, from /proc/stat."""
    with open("/proc/stat") as f:
        vals = [int(x) for x in f.readline().split()[1:]]
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
    total = sum(vals[:8])
    steal = vals[7] if len(vals) > 7 else 0
    return (total - idle) / CLK_TCK, total / CLK_TCK, steal / CLK_TCK


def machine_cpu() -> Tuple[float, float]:
    """(busy seconds, total seconds) over all cores since boot."""
    busy, total, _ = machine_times()
    return busy, total


def brokers_together(window: dict) -> dict:
    """With several brokers ("broker-0".."broker-<n-1>"), their sum as "broker_cpu_s" and
    "broker_cpu_s_by_thread", so that a row reads the same on one broker or three, the
    per-broker figures beside it saying how the load spread. {} with one broker."""
    each = sorted(k for k in window if k.startswith("broker-") and k.endswith("_cpu_s"))
    if not each or "broker_cpu_s" in window:
        return {}
    by_thread: dict = {}
    for k in each:
        for g, v in (window.get(f"{k}_by_thread") or {}).items():
            by_thread[g] = round(by_thread.get(g, 0.0) + v, 2)
    return {"broker_cpu_s": round(sum(window[k] for k in each), 2),
            "broker_cpu_s_by_thread": by_thread}


class BrokerRecordings:
    """Opt-in profiling: a JFR recording on every broker of a CPU window, when the environment's
    SHARESINK_BENCH_JFR_DIR names a directory (settings: SHARESINK_BENCH_JFR_SETTINGS, default
    JFR's `profile`). Each window leaves `<seq>-<broker>.jfr` there and a line of
    `index.jsonl` with its label and figures, for bench/broker_jfr.py. The recordings and the
    attaches cost the brokers CPU: a run profiled this way measures shares, not levels."""

    _seq = 0

    def __init__(self, pids: dict, label: str):
        self.dir = os.environ.get("SHARESINK_BENCH_JFR_DIR")
        self.brokers = {k: v for k, v in pids.items() if k.startswith("broker")}
        if not self.dir or not self.brokers:
            self.dir = None
            return
        BrokerRecordings._seq += 1
        self.seq, self.label, self.wall0 = BrokerRecordings._seq, label, time.time()
        settings = os.environ.get("SHARESINK_BENCH_JFR_SETTINGS", "profile")
        for pid in self.brokers.values():
            subprocess.run(["jcmd", str(pid), "JFR.start", f"name=cpu-window-{self.seq}",
                            f"settings={settings}"], capture_output=True, timeout=60)

    def stop(self, figures: dict) -> None:
        if not self.dir:
            return
        files = {}
        for key, pid in self.brokers.items():
            files[key] = f"{self.seq:03d}-{key}.jfr"
            subprocess.run(["jcmd", str(pid), "JFR.stop", f"name=cpu-window-{self.seq}",
                            f"filename={Path(self.dir) / files[key]}"],
                           capture_output=True, timeout=60)
        line = {"seq": self.seq, "label": self.label, "wall0": self.wall0,
                "wall1": time.time(), "files": files, "figures": figures}
        with open(Path(self.dir) / "index.jsonl", "a") as index:
            index.write(json.dumps(line) + "\n")


class CpuWindow:
    """CPU used by a set of processes and by the whole machine between start() and stop()."""

    def __init__(self, pids: dict, label: str = "window"):
        self.pids = {k: v for k, v in pids.items() if v}
        self.p0 = {k: proc_cpu(v) for k, v in self.pids.items()}
        self.th0 = {k: thread_cpu(v) for k, v in self.pids.items()}
        self.m0 = machine_cpu()
        self.t0 = time.monotonic()
        self.recordings = BrokerRecordings(self.pids, label)

    def stop(self) -> dict:
        out = {}
        for k, v in self.pids.items():
            c1 = proc_cpu(v)
            if c1 is not None and self.p0.get(k) is not None:
                out[f"{k}_cpu_s"] = round(c1 - self.p0[k], 2)
                out[f"{k}_cpu_s_by_thread"] = self._by_thread(k, v, c1 - self.p0[k])
        out.update(brokers_together(out))
        b1, t1 = machine_cpu()
        busy, total = b1 - self.m0[0], t1 - self.m0[1]
        out["machine_busy"] = round(busy / total, 3) if total > 0 else None
        out["window_wall_s"] = round(time.monotonic() - self.t0, 2)
        self.recordings.stop(out)
        return out

    def _by_thread(self, key: str, pid: int, total: float) -> dict:
        """The window's CPU per thread group; threads that ended within it count as "other"
        (their time is in the process total only)."""
        before, groups = self.th0.get(key, {}), {g: 0.0 for g, _ in THREAD_GROUPS}
        for tid, (group, cpu) in thread_cpu(pid).items():
            if group != "other":
                groups[group] += cpu - before.get(tid, (group, 0.0))[1]
        groups["other"] = max(0.0, total - sum(groups.values()))
        return {g: round(v, 2) for g, v in groups.items()}


class CpuSampler:
    """Samples a process's CPU seconds every `interval` s: [(monotonic t, cpu s)]."""

    def __init__(self, pid: int, interval: float = 0.05):
        self.pid = pid
        self.interval = interval
        self.samples: List[Tuple[float, float]] = []
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            c = proc_cpu(self.pid)
            if c is None:
                break
            self.samples.append((time.monotonic(), c))
            self._stop.wait(self.interval)

    def stop(self) -> None:
        self._stop.set()
        self._t.join(timeout=2)

    def at(self, t: float) -> Optional[float]:
        """CPU seconds at monotonic time t (linear interpolation between samples)."""
        s = self.samples
        if not s:
            return None
        if t <= s[0][0]:
            return s[0][1]
        for (t0, c0), (t1, c1) in zip(s, s[1:]):
            if t0 <= t <= t1:
                return c0 + (c1 - c0) * ((t - t0) / (t1 - t0) if t1 > t0 else 0)
        return s[-1][1]


class Result:
    def __init__(self) -> None:
        self.lines: List[Tuple[float, str]] = []  # (monotonic arrival, text)
        self.returncode: Optional[int] = None
        self.cpu_total: Optional[float] = None    # wait4 rusage utime + stime
        self.wall: float = 0.0
        self.sampler: Optional[CpuSampler] = None
        self.broker_cpu: Optional[float] = None
        self.started: float = 0.0

    @property
    def text(self) -> str:
        return "\n".join(l for _, l in self.lines)


def run(cmd: Sequence[str], log: Path, *, timeout: float, broker_pid: Optional[int] = None,
        on_line: Optional[Callable[[str], None]] = None, env=None) -> Result:
    """Run `cmd`, stream its output (stdout+stderr) into `log` and through `on_line`, and
    account its CPU. Kills the process group after `timeout` seconds."""
    r = Result()
    log.parent.mkdir(parents=True, exist_ok=True)
    b0 = proc_cpu(broker_pid) if broker_pid else None
    r.started = time.monotonic()
    with open(log, "w") as lf:
        lf.write("$ " + " ".join(cmd) + "\n")
        lf.flush()
        p = subprocess.Popen(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, text=True, bufsize=1,
                             start_new_session=True, env=env)
        r.sampler = CpuSampler(p.pid)
        killer = threading.Timer(timeout, lambda: _kill(p.pid))
        killer.start()
        try:
            assert p.stdout is not None
            for line in p.stdout:
                now = time.monotonic()
                line = line.rstrip("\n")
                r.lines.append((now, line))
                lf.write(line + "\n")
                lf.flush()
                if on_line:
                    on_line(line)
            _, status, ru = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)
        finally:
            killer.cancel()
            r.sampler.stop()
    r.returncode = p.returncode
    r.cpu_total = ru.ru_utime + ru.ru_stime
    r.wall = time.monotonic() - r.started
    if broker_pid:
        b1 = proc_cpu(broker_pid)
        if b0 is not None and b1 is not None:
            r.broker_cpu = b1 - b0
    return r


def _kill(pid: int) -> None:
    try:
        os.killpg(pid, 9)
    except OSError:
        pass


def footprint(pid: int, remote_ports: Sequence[int]) -> dict:
    """Resident memory (MiB), threads, and TCP connections from `pid` to any of `remote_ports`
    (its socket inodes matched against /proc/net/tcp and tcp6)."""
    out: dict = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k == "VmRSS":
                    out["rss_mib"] = round(int(v.split()[0]) / 1024, 1)
                elif k == "Threads":
                    out["threads"] = int(v)
        inodes = set()
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except OSError:
        return out
    ports = {f"{p:04X}" for p in remote_ports}
    conns = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    cols = line.split()
                    # remote address "IP:PORT" in hex, state 01 = ESTABLISHED, inode column 9
                    if cols[3] == "01" and cols[2].rsplit(":", 1)[1] in ports and cols[9] in inodes:
                        conns += 1
        except OSError:
            continue
    out["broker_connections"] = conns
    return out


class LoadTimeline:
    """Every `interval` s, what the machine was doing: its busy and stolen cores, and the CPU of
    each watched process and of its GC threads, so that a latency episode can be set beside the
    load of its moment. A sample reads only /proc/stat, each process's stat and the stat files
    of its GC threads (listed again every 2 s), so it costs little of the cores it measures."""

    def __init__(self, pids: dict, interval: float = 0.1):
        self.pids = {k: v for k, v in pids.items() if v}
        self.interval = interval
        self.samples: List[Tuple[float, dict]] = []   # (wall s, {series: cumulative s})
        self._gc_tids: dict = {}
        self._listed = 0.0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True, name="load-timeline")
        self._t.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            now = time.time()
            if now - self._listed > 2:
                self._gc_tids = {k: [t for t, (g, _) in thread_cpu(p).items() if g == "gc"]
                                 for k, p in self.pids.items()}
                self._listed = now
            self.samples.append((now, self._sample()))
            self._stop.wait(self.interval)

    def _sample(self) -> dict:
        busy, _, steal = machine_times()
        out = {"busy": busy, "steal": steal}
        for k, p in self.pids.items():
            c = proc_cpu(p)
            if c is not None:
                out[k] = c
            gc = 0.0
            for tid in self._gc_tids.get(k, ()):
                try:
                    with open(f"/proc/{p}/task/{tid}/stat") as f:
                        gc += stat_cpu(f.read())
                except OSError:
                    pass
            out[f"{k}_gc"] = gc
        each = [k for k in self.pids if k.startswith("broker-")]
        if each and "broker" not in self.pids:
            # several brokers: "broker" is all of them, as the one broker is on its own
            for suffix in ("", "_gc"):
                out[f"broker{suffix}"] = sum(out.get(f"{k}{suffix}", 0.0) for k in each)
        return out

    def stop(self) -> None:
        self._stop.set()
        self._t.join(timeout=2)
        # one more sample, so that the span up to the caller's last read is covered
        self.samples.append((time.time(), self._sample()))

    def cores(self, t0: float, t1: float) -> dict:
        """Mean cores each series used between wall times t0 and t1 (the samples nearest
        outside them; {} when fewer than two samples cover the span)."""
        s = self.samples
        a = max((x for x in s if x[0] <= t0), default=None, key=lambda x: x[0])
        b = min((x for x in s if x[0] >= t1), default=None, key=lambda x: x[0])
        if a is None or b is None or b[0] <= a[0]:
            return {}
        dt = b[0] - a[0]
        # A series missing from a sample (its process gone, a GC thread ended) is left out.
        return {k: round((b[1][k] - a[1][k]) / dt, 2) for k in b[1]
                if k in a[1] and b[1][k] >= a[1][k]}
