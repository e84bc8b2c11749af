"""Process bookkeeping of a state dir: every process the harness starts is recorded with its PID
(and the kernel's start time, to tell a recycled PID) under ``<state>/pids/``, so that a later
harness, after a crash too, stops exactly those."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import time
from pathlib import Path
from typing import Dict, Mapping, Optional, Sequence

from harness.common import ClassArchiveAtExit, HarnessError, _log, _port_open, _tail, _write_atomic
from harness.waits import QUIET_S, ProcessProgress, wait_progressing

# The bound of a stop that keeps making progress (wall seconds) before SIGKILL.
STOP_BOUND_S = 300.0


def _proc_start_time(pid: int) -> Optional[str]:
    """Kernel start time of a process (field 22 of /proc/PID/stat), to tell a recycled PID."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


def _proc_alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    state = stat[stat.rfind(")") + 2 :].split()[0]
    return state not in ("Z", "X")


class Processes:
    """Starting, watching and stopping the processes of one state dir: a service object that owns
    the pid files under ``pids_dir`` and the ``Popen`` of every process this harness started;
    each process runs in ``state_dir`` and logs to ``logs_dir/<name>.log``. The other services
    run their processes through it (their ``procs``)."""

    def __init__(self, state_dir: Path, logs_dir: Path, pids_dir: Path):
        self.state_dir = state_dir
        self.logs_dir = logs_dir
        self.pids_dir = pids_dir
        self._popen: Dict[str, subprocess.Popen] = {}

    def _pidfile(self, name: str) -> Path:
        return self.pids_dir / f"{name}.pid"

    def _record(self, name: str, proc: subprocess.Popen, stop_signal: int,
                class_archive: Optional[ClassArchiveAtExit] = None) -> None:
        self._popen[name] = proc
        _write_atomic(self._pidfile(name), json.dumps({
            "pid": proc.pid, "start": _proc_start_time(proc.pid), "name": name,
            "stop_signal": int(stop_signal), "state_dir": str(self.state_dir),
            "class_archive": class_archive.to_json() if class_archive else None,
        }))

    def started_here(self, name: str) -> bool:
        """Process `name` was started by this object (whether or not it still runs)."""
        return name in self._popen

    def recorded(self, name: str) -> Optional[dict]:
        try:
            info = json.loads(self._pidfile(name).read_text())
        except (OSError, ValueError):
            return None
        return info

    def is_running(self, name: str) -> bool:
        p = self._popen.get(name)
        if p is not None:
            return p.poll() is None
        info = self.recorded(name)
        if not info:
            return False
        pid = info["pid"]
        return _proc_alive(pid) and _proc_start_time(pid) == info.get("start")

    def _signal(self, name: str, sig: int) -> Optional[int]:
        p = self._popen.get(name)
        if p is not None:
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, sig)
                return p.pid
            return None
        info = self.recorded(name)
        if not info:
            return None
        pid = info["pid"]
        if not _proc_alive(pid) or _proc_start_time(pid) != info.get("start"):
            return None  # gone, or the PID now belongs to somebody else
        with contextlib.suppress(ProcessLookupError):
            try:
                os.killpg(pid, sig)
            except PermissionError:
                os.kill(pid, sig)
        return pid

    def _wait_gone(self, name: str, quiet: float, bound: float) -> bool:
        """True once process `name` is gone; False when it has been silent (no log growth, no
        CPU) for `quiet` machine seconds, or still runs after `bound` wall seconds: a controlled
        shutdown that keeps logging on a loaded machine is not cut short."""
        p = self._popen.get(name)

        def gone() -> bool:
            return p.poll() is not None if p is not None else not self.is_running(name)

        try:
            wait_progressing(f"{name} stop", gone, alive=lambda: True,
                             progress=self._progress(name), describe=lambda: "",
                             quiet=quiet, bound=bound, interval=0.1)
            return True
        except HarnessError:
            return False

    def stop(self, name: str, timeout: float = 30, kill: bool = False) -> None:
        """Stops process `name` with its stop signal (SIGKILL with `kill`), then SIGKILL when it
        has been silent for `timeout` machine seconds, or still runs after the larger of
        STOP_BOUND_S and three times that."""
        info = self.recorded(name) or {}
        sig = signal.SIGKILL if kill else signal.Signals(info.get("stop_signal", signal.SIGTERM))
        archive = ClassArchiveAtExit.from_json(info.get("class_archive"))
        clean = not kill
        pid = self._signal(name, sig)
        if pid is not None:
            quiet = 10 if kill else timeout
            if not self._wait_gone(name, quiet, max(STOP_BOUND_S, 3 * quiet)):
                _log(f"{name} (pid {pid}) did not stop after {sig.name} (silent for {quiet}s, or "
                     "still running at the bound); SIGKILL")
                clean = False
                self._signal(name, signal.SIGKILL)
                if not self._wait_gone(name, 10, STOP_BOUND_S):
                    raise HarnessError(f"{name} (pid {pid}) survives SIGKILL")
        if archive is not None:
            # The class archive it wrote at exit, once it stopped cleanly (else a part of one).
            if not (clean and archive.keep()):
                archive.discard()
        p = self._popen.pop(name, None)
        if p is not None:
            with contextlib.suppress(Exception):
                p.wait(timeout=1)
        with contextlib.suppress(FileNotFoundError):
            self._pidfile(name).unlink()

    def stop_together(self, names: Sequence[str], timeout: float = 30) -> None:
        """Signals every process in `names` at once, then waits for each (the last KRaft nodes of
        a quorum cannot finish a controlled shutdown once the others are gone)."""
        for n in names:
            info = self.recorded(n) or {}
            self._signal(n, signal.Signals(info.get("stop_signal", signal.SIGTERM)))
        for n in names:
            self.stop(n, timeout=timeout)

    def spawn(self, name: str, cmd: Sequence[str], log: Path, stop_signal: int = signal.SIGTERM,
               env: Optional[Mapping[str, str]] = None,
               class_archive: Optional[ClassArchiveAtExit] = None,
               **popen_kw) -> subprocess.Popen:
        if self.is_running(name):
            raise HarnessError(f"{name} is already running (pid file {self._pidfile(name)})")
        log.parent.mkdir(parents=True, exist_ok=True)
        self.pids_dir.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as lf:
            lf.write(f"\n===== {time.strftime('%Y-%m-%dT%H:%M:%S')} start {name}: "
                     f"{shlex.join(cmd)}\n".encode())
            lf.flush()
            proc = subprocess.Popen(list(cmd), stdout=lf, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True,
                                    env=dict(env) if env is not None else None,
                                    cwd=str(self.state_dir), **popen_kw)
        self._record(name, proc, stop_signal, class_archive)
        return proc

    def current_log(self, name: str) -> str:
        """The log of component `name` (broker, worker-0, postgres, ...) since its last start."""
        text = (self.logs_dir / f"{name}.log").read_text(errors="replace") \
            if (self.logs_dir / f"{name}.log").exists() else ""
        i = text.rfind(f" start {name}: ")
        return text[text.rfind("\n", 0, i) + 1:] if i >= 0 else text

    def check_port_free(self, port: int, what: str) -> None:
        if _port_open(port):
            raise HarnessError(
                f"port {port} ({what}) is already in use by a process this harness did not record "
                f"in {self.pids_dir}; another cluster may be running: set SHARESINK_PORT_BASE "
                f"and SHARESINK_CLUSTER_DIR to separate values")

    def _progress(self, name: str) -> ProcessProgress:
        """What tells that process `name` is making progress: its log grows, or it uses CPU."""
        p = self._popen.get(name)
        pid = p.pid if p is not None else (self.recorded(name) or {}).get("pid")
        return ProcessProgress(self.logs_dir / f"{name}.log", pid)

    def wait(self, what: str, cond, bound: float, log: Path, name: Optional[str] = None,
              interval: float = 0.3, quiet: float = QUIET_S):
        """Waits until `cond()` is truthy while process `name` starts: as long as it writes its
        log or uses CPU, up to `bound` wall seconds; at once when it exits or has been silent for
        `quiet` machine seconds (harness/waits.py), with its log's tail."""
        def describe() -> str:
            return f"; see {log}\n--- last lines:\n{_tail(log)}"

        return wait_progressing(
            what, cond, alive=(lambda: self.is_running(name)) if name is not None else lambda: True,
            progress=self._progress(name) if name is not None else ProcessProgress(log, None),
            describe=describe, quiet=quiet, bound=bound, interval=interval)
