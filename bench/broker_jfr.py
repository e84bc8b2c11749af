"""Where the brokers' request threads spent a run's CPU, by kind of run: the JFR recordings a
bench run left when SHARESINK_BENCH_JFR_DIR was set (bench/proc.py, BrokerRecordings), their
execution samples attributed to the methods on their stacks.

A method's figure is the share of the request threads' samples (handlers and network threads,
which /proc's `requests` group holds together) whose stack holds it, times the CPU those threads
used over the kind's windows; with --records, per million records. Recordings raise the
brokers' CPU: compare kinds within one recording, not with an unprofiled run.

    SHARESINK_BENCH_JFR_DIR=/tmp/jfr SHARESINK_BENCH_JFR_SETTINGS=/path/1ms.jfc \\
        scripts/bench.sh --parts connect --scenarios d
    python3 bench/broker_jfr.py /tmp/jfr --records 2000000 [--method REGEX ...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

import proc
import state_topic

# What the (d) profile of bench/report/profiles.md compared, by the frame `Class.method`.
METHODS = (
    "KafkaRequestHandler.run", "KafkaApis.handleShareFetchRequest",
    "KafkaApis.handleShareAcknowledgeRequest", "KafkaApis.handleWriteShareGroupStateRequest",
    "SharePartition.acquire", "AbstractRecords.lastBatch", "SharePartition.acknowledge",
    "DelayedShareFetch.onComplete", "ExponentiallyDecayingSample.update")

Sample = Tuple[str, List[str]]   # (thread name, frames from the leaf as `Class.method`)


def kind(label: str) -> str:
    """A window's label without its run's counter and timestamp: `bd_share_19_11043 k=v` ->
    `bd_share k=v`."""
    return state_topic.run_kind(label)


def thread_group(name: str) -> str:
    """proc's thread groups (so the CPU and the samples are grouped alike), its `requests`
    split into handlers and network threads, which JFR's full names tell apart; groups this
    attribution does not use are "other"."""
    group = proc.thread_group(name)
    if group == "requests":
        return "network" if "network-thread" in name else "handlers"
    return group if group == "share_state" else "other"


def samples_from_json(doc: dict) -> List[Sample]:
    """`jfr print --json --events jdk.ExecutionSample` output as samples."""
    out = []
    for event in doc["recording"]["events"]:
        values = event["values"]
        thread = values.get("sampledThread") or {}
        frames = (values.get("stackTrace") or {}).get("frames") or []
        out.append((thread.get("javaName") or thread.get("osName") or "",
                    [f"{f['method']['type']['name'].rsplit('/', 1)[-1]}.{f['method']['name']}"
                     for f in frames]))
    return out


def attribute(samples: Iterable[Sample], cpu_s: float,
              methods: Iterable[str]) -> Dict[str, object]:
    """The request threads' CPU `cpu_s` split by the share of their samples holding each
    method; also the samples per thread group."""
    groups: Counter = Counter()
    holding: Counter = Counter()
    methods = list(methods)
    for thread, frames in samples:
        group = thread_group(thread)
        groups[group] += 1
        if group not in ("handlers", "network"):
            continue
        on_stack = set(frames)
        for m in methods:
            if m in on_stack:
                holding[m] += 1
    n = groups["handlers"] + groups["network"]
    return {"samples": dict(groups), "request_samples": n,
            "cpu_s": {m: (holding[m] / n * cpu_s if n else 0.0) for m in methods}}


def jfr_tool() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "jfr").exists():
        return str(Path(home) / "bin" / "jfr")
    return shutil.which("jfr") or "jfr"


def read_samples(path: Path) -> List[Sample]:
    out = subprocess.run([jfr_tool(), "print", "--json", "--stack-depth", "100", "--events",
                          "jdk.ExecutionSample", str(path)],
                         capture_output=True, text=True, check=True).stdout
    return samples_from_json(json.loads(out))


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--records", type=float, help="records per window: figures per million")
    ap.add_argument("--method", action="append", default=[], help="Class.method to add")
    a = ap.parse_args(argv)
    methods = list(METHODS) + a.method
    windows: Dict[str, List[dict]] = {}
    for line in (a.dir / "index.jsonl").read_text().splitlines():
        w = json.loads(line)
        windows.setdefault(kind(w["label"]), []).append(w)
    table = {}
    for k, ws in windows.items():
        samples: List[Sample] = []
        cpu = 0.0
        for w in ws:
            cpu += (w["figures"].get("broker_cpu_s_by_thread") or {}).get("requests", 0.0)
            for f in w["files"].values():
                samples += read_samples(a.dir / f)
        scale = 1e6 / (a.records * len(ws)) if a.records else 1.0
        r = attribute(samples, cpu * scale, methods)
        table[k] = r
        print(f"{k}: {len(ws)} windows, request threads {cpu * scale:.3f} CPU s"
              f"{' per million' if a.records else ''}, samples {r['samples']}")
    kinds = list(table)
    print("method".ljust(48) + "".join(f"{i:>10}" for i in range(len(kinds))))
    for m in methods:
        print(m[:48].ljust(48) + "".join(f"{table[k]['cpu_s'][m]:10.3f}" for k in kinds))
    print("columns: " + ", ".join(f"{i} {k}" for i, k in enumerate(kinds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
