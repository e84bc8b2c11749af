"""What the acknowledgements of each share group made the share coordinator keep: the
`__share_group_state` records a bench cluster wrote, read back from its log segments after the
run (Kafka's DumpLogSegments with its share-state decoder), added up per share group.

Every acknowledgement a broker applies to a share-partition becomes one ShareUpdate record whose
state batches are the offset ranges it changed; every so many updates the coordinator writes a
ShareSnapshot holding the share-partition's whole state past its start offset. So, per group:
how many ranges each update carried and how long they were (acknowledgements that cover whole
fetched batches give few, long ones), and how many ranges a snapshot held (ranges settled ahead
of the start offset, as out-of-order acknowledgements leave them).

    python3 bench/state_topic.py [--cluster-dir build/bench-cluster] [--out FILE]

Read-only; run it after the bench stopped its cluster (the segments stay on disk)."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional

ROOT = Path(__file__).resolve().parent.parent

# CoordinatorRecord key types of the share coordinator
SNAPSHOT, UPDATE = "0", "1"
# PersisterStateBatch.deliveryState ids
STATES = {0: "available", 1: "acquired", 2: "acknowledged", 4: "archived"}

_LINE = re.compile(r"\bkey: (\{.*\}) payload: (\{.*\})\s*$")
# the counter (or step) and the timestamp bench names end with (a window's label may follow
# them with settings): the rest names the kind of run
_RUN_SUFFIX = re.compile(r"[_-]\d+[_-]\d+(?=$|\s)")


def parse_line(line: str) -> Optional[Dict[str, Any]]:
    """One DumpLogSegments line of a share-state record as {type, group, partition, value};
    None for anything else (headers, batch lines, tombstones)."""
    m = _LINE.search(line)
    if not m:
        return None
    try:
        key, value = json.loads(m.group(1)), json.loads(m.group(2))
    except ValueError:
        return None
    data = key.get("data") or {}
    return {"type": str(key.get("type")), "group": data.get("groupId"),
            "partition": (data.get("topicId"), data.get("partition")),
            "value": value.get("data") or {}}


def run_kind(group: str) -> str:
    """`bd_engine_4_51234` -> `bd_engine`, `engine-100-3m-2-1765000000` -> `engine-100-3m`,
    `bd_share_19_11043 k=v steady` -> `bd_share k=v steady`."""
    return _RUN_SUFFIX.sub("", group) or group


def summarise(records: Iterable[Dict[str, Any]]) -> Dict[str, Dict[str, Any]]:
    """Per share group: updates and snapshots, the ranges updates carried (count, records they
    covered, by state) and the ranges snapshots held."""
    out: Dict[str, Dict[str, Any]] = {}
    for r in records:
        if not r.get("group"):
            continue
        g = out.setdefault(r["group"], {
            "kind": run_kind(r["group"]), "partitions": set(), "updates": 0, "snapshots": 0,
            "update_ranges": 0, "update_ranges_max": 0, "update_records": 0,
            "records_by_state": {}, "snapshot_ranges": 0, "snapshot_ranges_max": 0})
        g["partitions"].add(tuple(r["partition"]))
        batches = r["value"].get("stateBatches") or []
        if r["type"] == UPDATE:
            g["updates"] += 1
            g["update_ranges"] += len(batches)
            g["update_ranges_max"] = max(g["update_ranges_max"], len(batches))
            for b in batches:
                n = int(b["lastOffset"]) - int(b["firstOffset"]) + 1
                g["update_records"] += n
                state = STATES.get(int(b["deliveryState"]), str(b["deliveryState"]))
                g["records_by_state"][state] = g["records_by_state"].get(state, 0) + n
        elif r["type"] == SNAPSHOT:
            g["snapshots"] += 1
            g["snapshot_ranges"] += len(batches)
            g["snapshot_ranges_max"] = max(g["snapshot_ranges_max"], len(batches))
    for g in out.values():
        g["partitions"] = len(g["partitions"])
        u, s = g["updates"], g["snapshots"]
        g["ranges_per_update"] = round(g["update_ranges"] / u, 2) if u else None
        g["records_per_range"] = (round(g["update_records"] / g["update_ranges"], 1)
                                  if g["update_ranges"] else None)
        acked = g["records_by_state"].get("acknowledged", 0)
        g["updates_per_1000_acknowledged"] = round(u * 1000 / acked, 3) if acked else None
        g["ranges_per_snapshot"] = round(g["snapshot_ranges"] / s, 2) if s else None
    return out


def dump(cluster_dir: Path) -> Iterable[Dict[str, Any]]:
    """Every share-state record in the cluster's `__share_group_state` segments (all brokers)."""
    segments = sorted(str(p) for p in cluster_dir.glob("**/__share_group_state-*/*.log"))
    if not segments:
        raise SystemExit(f"no __share_group_state segments under {cluster_dir}")
    sys.path.insert(0, str(ROOT / "tests"))
    from harness.artifacts import ensure_kafka_lib   # the harness's jars, resolved if missing

    # Kafka 4.4's DumpLogSegments, which has the share-state decoder, whatever release wrote them
    cmd = ["java", "-cp", f"{ensure_kafka_lib('4.4.0')}/*", "org.apache.kafka.tools.DumpLogSegments",
           "--share-group-state-decoder", "--deep-iteration", "--files", ",".join(segments)]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            r = parse_line(line)
            if r:
                yield r
    if proc.returncode:
        raise SystemExit(f"DumpLogSegments failed ({proc.returncode})")


def table(groups: Dict[str, Dict[str, Any]]) -> List[str]:
    cols = ("kind", "partitions", "updates", "update_records", "ranges_per_update",
            "update_ranges_max", "records_per_range", "updates_per_1000_acknowledged",
            "snapshots", "ranges_per_snapshot", "snapshot_ranges_max")
    rows = ["group\t" + "\t".join(cols)]
    for name in sorted(groups, key=lambda n: (groups[n]["kind"], n)):
        rows.append(name + "\t" + "\t".join(str(groups[name][c]) for c in cols))
    return rows


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cluster-dir", type=Path, default=ROOT / "build" / "bench-cluster")
    ap.add_argument("--out", type=Path, help="also write the figures as JSON here")
    a = ap.parse_args(argv)
    groups = summarise(dump(a.cluster_dir))
    print("\n".join(table(groups)))
    if a.out:
        a.out.write_text(json.dumps(groups, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
