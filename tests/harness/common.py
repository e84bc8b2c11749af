"""What every part of the harness shares: where the repository is, the harness's error, and
small helpers (logging, the java binary, atomic writes, properties files, file locks, running a
command, log4j2 configurations)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shlex
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

HARNESS_DIR = Path(__file__).resolve().parent
REPO_ROOT = HARNESS_DIR.parent.parent


class HarnessError(RuntimeError):
    """A cluster component could not be set up; the message points at the log to read."""


class ClassArchiveAtExit:
    """A class-data archive a JVM writes when it exits (-XX:ArchiveClassesAtExit) under a name of
    its own, made the archive only when the JVM exited cleanly: a JVM killed while writing it
    leaves a part, never the archive (harness/tools.py)."""

    def __init__(self, writing: Path, archive: Path):
        self.writing, self.archive = Path(writing), Path(archive)

    def keep(self) -> bool:
        if not self.writing.is_file():
            return False
        os.replace(self.writing, self.archive)  # whole, or not at all
        return True

    def discard(self) -> None:
        self.writing.unlink(missing_ok=True)

    def to_json(self) -> Dict[str, str]:
        return {"writing": str(self.writing), "archive": str(self.archive)}

    @classmethod
    def from_json(cls, d: Optional[Mapping[str, str]]) -> Optional["ClassArchiveAtExit"]:
        return cls(Path(d["writing"]), Path(d["archive"])) if d else None


# --------------------------------------------------------------------------------------------
# small helpers


def _log(msg: str) -> None:
    print(f"[cluster] {msg}", file=sys.stderr, flush=True)


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    for cand in ([Path(home) / "bin" / "java"] if home else []) + [
        Path("/usr/lib/jvm/java-17-openjdk-amd64/bin/java")
    ]:
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    found = shutil.which("java")
    if not found:
        raise HarnessError("no java found (set JAVA_HOME; JDK 17 expected)")
    return found


def _tail(path: Path, lines: int = 40) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            data = f.read().decode("utf-8", "replace")
        return "\n".join(data.splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _port_open(port: int, host: str = "127.0.0.1", timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _props(d: Mapping[str, Any]) -> str:
    out = []
    for k, v in d.items():
        if v is None:
            continue
        if isinstance(v, bool):
            v = "true" if v else "false"
        out.append(f"{k}={v}")
    return "\n".join(out) + "\n"


# Locks this process holds, by (path, thread): an install taken under a lock that needs another
# install under the same lock (a plugin's shim needs Kafka's jars) must not wait for itself.
_HELD_LOCKS: Dict[Tuple[str, int], int] = {}


@contextlib.contextmanager
def _file_lock(path: Path):
    """An exclusive lock on `path` across processes; reentrant within one thread."""
    held = (str(path.resolve()), threading.get_ident())
    if _HELD_LOCKS.get(held):
        _HELD_LOCKS[held] += 1
        try:
            yield
        finally:
            _HELD_LOCKS[held] -= 1
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        _HELD_LOCKS[held] = 1
        try:
            yield
        finally:
            del _HELD_LOCKS[held]
            fcntl.flock(f, fcntl.LOCK_UN)


def _run(cmd: Sequence[str], *, timeout: float = 600, cwd: Optional[Path] = None,
         env: Optional[Mapping[str, str]] = None, what: str = "") -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(list(cmd), cwd=cwd, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise HarnessError(f"{what or cmd[0]} timed out after {timeout}s: {shlex.join(cmd)}") from e
    return proc


# --------------------------------------------------------------------------------------------
# log4j2 configurations

_LOG4J2 = """<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="WARN">
  <Appenders>
    <Console name="STDOUT" target="SYSTEM_OUT">
      <PatternLayout pattern="{pattern}"/>
    </Console>
  </Appenders>
  <Loggers>
    <Root level="{root}"><AppenderRef ref="STDOUT"/></Root>
{loggers}
  </Loggers>
</Configuration>
"""


def _log4j2(pattern: str, root: str, loggers: Mapping[str, str]) -> str:
    ls = "\n".join(f'    <Logger name="{k}" level="{v}"/>' for k, v in loggers.items())
    return _LOG4J2.format(pattern=pattern.replace("&", "&amp;").replace("<", "&lt;"),
                          root=root, loggers=ls)
