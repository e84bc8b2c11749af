"""Driving the tests' own buffering sink (tests/sinks/buffering-sink) from a test: its durable
files, its trace, its control markers and role claims. See BufferingSinkTask's javadoc for what
the sink does; the harness installs it in its own plugin directory (cluster.ensure_test_sink).

It is a sink of the tests' own because the S3/HDFS/GCS-style sinks that buffer until flush are
not served by the package registries these tests may use, and Kafka's FileStream sink hands
every line to the OS inside put (a kill -9 cannot show a record ACCEPTed before it was flushed).
"""

from __future__ import annotations

import re
import shutil
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

from harness.cluster import Cluster
from harness.waits import Budget

BUFFERING_SINK = "io.sharesink.testsinks.BufferingSinkConnector"

Rec = Tuple[str, int, int]          # (topic, partition, offset)

_TRACE_RE = re.compile(r"^(\d+) task=(\S+) inst=(\S+) role=(\S+) (\S+) ?(.*)$")


@dataclass
class Event:
    """One line of a task's trace file."""
    ms: int
    task: str
    inst: str
    role: str
    event: str
    details: str
    records: Set[Rec] = field(default_factory=set)

    def kv(self, key: str) -> Optional[str]:
        m = re.search(rf"(?:^| ){re.escape(key)}=(\S+)", self.details)
        return m.group(1) if m else None

    def offsets(self, key: str) -> Optional[Dict[Tuple[str, int], int]]:
        """A `{topic/partition=offset,...}` value (given=, returned=) as {(topic, p): offset}."""
        raw = self.kv(key)
        if raw is None:
            return None
        out = {}
        for item in raw.strip("{}").split(","):
            if "=" in item:
                tp, _, off = item.partition("=")
                topic, _, part = tp.rpartition("/")
                out[(topic, int(part))] = int(off)
        return out

    def __str__(self) -> str:
        return f"{self.ms} task={self.task} role={self.role} {self.event} {self.details}"[:400]


def _parse_ranges(details: str) -> Set[Rec]:
    recs: Set[Rec] = set()
    for tok in details.split():
        if ":" not in tok or "=" in tok:
            continue
        tp, _, spec = tok.rpartition(":")
        topic, _, part = tp.rpartition("/")
        if not topic or not part.isdigit():
            continue
        for piece in spec.split(","):
            if not piece:
                continue
            a, _, b = piece.partition("-")
            for off in range(int(a), int(b or a) + 1):
                recs.add((topic, int(part), off))
    return recs


class BufferingSink:
    """The directories of one connector's buffering sink, under the cluster's state dir."""

    def __init__(self, cluster: Cluster, name: str):
        self.root = cluster.state_dir / "buffering-sink" / name
        shutil.rmtree(self.root, ignore_errors=True)
        self.data_dir = self.root / "data"
        self.control_dir = self.root / "control"
        self.data_dir.mkdir(parents=True)
        self.control_dir.mkdir(parents=True)

    def settings(self, **extra: object) -> Dict[str, str]:
        cfg = {"data.dir": str(self.data_dir), "control.dir": str(self.control_dir),
               "key.converter": "org.apache.kafka.connect.storage.StringConverter",
               "value.converter": "org.apache.kafka.connect.storage.StringConverter"}
        cfg.update({k: str(v) for k, v in extra.items()})
        return cfg

    # ---- control

    def mark(self, who: str, action: str, keep: bool = False) -> Path:
        """Create marker `<who>.<action>` (who: a role letter, 'task<id>' or 'any'); one-shot
        unless keep."""
        p = self.control_dir / f"{who}.{action}"
        tmp = self.control_dir / f".{who}.{action}.tmp"
        tmp.write_text("keep\n" if keep else "once\n")
        tmp.replace(p)
        return p

    def unmark(self, who: str, action: str) -> None:
        (self.control_dir / f"{who}.{action}").unlink(missing_ok=True)

    def taken(self, who: str, action: str) -> bool:
        return any(self.control_dir.glob(f"{who}.{action}.taken-*"))

    def roles(self) -> Dict[str, str]:
        """{role letter: task id} of the roles claimed so far."""
        out = {}
        for p in sorted(self.control_dir.glob("role-*")):
            try:
                txt = p.read_text().strip()
            except OSError:
                continue
            if txt.startswith("task="):
                out[p.name[len("role-"):]] = txt[len("task="):]
        return out

    # ---- trace

    def trace(self) -> List[Event]:
        """Every task's trace events, in time order."""
        events: List[Event] = []
        for p in sorted(self.control_dir.glob("trace-task*.log")):
            for line in p.read_text(errors="replace").splitlines():
                m = _TRACE_RE.match(line)
                if not m:
                    continue
                ev = Event(int(m.group(1)), m.group(2), m.group(3), m.group(4), m.group(5),
                           m.group(6))
                if ev.event in ("put", "put-stall", "put-fail", "precommit"):
                    ev.records = _parse_ranges(ev.details)
                events.append(ev)
        events.sort(key=lambda e: e.ms)
        return events

    def events(self, event: str, task: Optional[str] = None, since_ms: int = 0) -> List[Event]:
        return [e for e in self.trace() if e.event == event and (task is None or e.task == task)
                and e.ms >= since_ms]

    def put_records(self, task: Optional[str] = None, since_ms: int = 0) -> Set[Rec]:
        out: Set[Rec] = set()
        for e in self.events("put", task, since_ms):
            out |= e.records
        return out

    def trace_tail(self, n: int = 40) -> str:
        return "\n".join(str(e) for e in self.trace()[-n:])

    # ---- durable files

    def durable_lines(self) -> List[Tuple[str, int, int, str]]:
        """Every (topic, partition, offset, value) line of every durable file; a last line
        without its newline (a write cut short) is not counted."""
        out = []
        for p in sorted(self.data_dir.glob("*.records")):
            data = p.read_bytes().decode("utf-8", "replace")
            for line in data.split("\n")[:-1]:
                parts = line.split("\t", 3)
                if len(parts) == 4:
                    out.append((parts[0], int(parts[1]), int(parts[2]), parts[3]))
        return out

    def durable_values(self) -> List[str]:
        return [v for _, _, _, v in self.durable_lines()]

    def figures(self, produced: Sequence[str]) -> Dict[str, int]:
        """produced / in the sink / lost / duplicates, by value (each value is produced once)."""
        vals = self.durable_values()
        c = Counter(vals)
        exp = set(produced)
        return {"produced": len(exp), "in_sink": len(set(c) & exp), "lost": len(exp - set(c)),
                "duplicates": sum(n - 1 for n in c.values() if n > 1),
                "unexpected": len(set(c) - exp), "sink_lines": len(vals)}

    def lost_values(self, produced: Iterable[str]) -> List[str]:
        have = set(self.durable_values())
        return [v for v in produced if v not in have]


def describe_records(recs: Iterable[Rec], limit: int = 12) -> str:
    """'topic/p:a-b,c ...' of a set of records, for messages."""
    by: Dict[Tuple[str, int], List[int]] = {}
    for t, p, o in recs:
        by.setdefault((t, p), []).append(o)
    parts = []
    for (t, p), offs in sorted(by.items()):
        offs.sort()
        runs, start, prev = [], offs[0], offs[0]
        for o in offs[1:]:
            if o != prev + 1:
                runs.append((start, prev))
                start = o
            prev = o
        runs.append((start, prev))
        shown = ",".join(f"{a}-{b}" if b > a else f"{a}" for a, b in runs[:limit])
        parts.append(f"{t}/{p}:{shown}{',...' if len(runs) > limit else ''}")
    return " ".join(parts) or "(none)"


def wait_until(check, timeout: float, interval: float = 0.25):
    """check() until truthy or `timeout` machine seconds (harness/waits.py's Budget); returns its
    last value (no failure)."""
    budget = Budget(timeout)
    while True:
        v = check()
        if v or budget.spent():
            return v
        time.sleep(interval)


def drain_after_kill(cluster: Cluster, sink: "BufferingSink", group: str, produced,
                     t_kill: float, lock_ms: int) -> Optional[float]:
    """After a worker was killed and started again: waits until every produced value is in the
    sink, or until the group has nothing left to deliver (lag 0 twice in a row) once the dead
    member's locks (`lock_ms`) may have expired. Returns the seconds from the kill to complete,
    None when values are still missing."""
    from helpers import share_group_offsets, total_lag  # helpers does not import this module

    zero_lag = 0
    budget = Budget(lock_ms / 1000 + 120)
    while not budget.spent():
        if not sink.lost_values(produced):
            return round(time.monotonic() - t_kill, 1)
        lag = total_lag(share_group_offsets(cluster, group))
        zero_lag = zero_lag + 1 if lag == 0 else 0
        if zero_lag >= 2 and time.monotonic() - t_kill > lock_ms / 1000:
            return None
        time.sleep(3)
    return None
