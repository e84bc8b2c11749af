"""Reads a Rust test binary's JSON events (`--format json -Z unstable-options --report-time`,
libtest's own format) on stdin and writes what `cargo test` would show: a line per test with its
time, a failed test's output, the summary. Each test's time is appended to a JSON-lines file
(scripts/test_profile.py reads it). Lines that are not JSON (a test's --nocapture output) pass
through. Exit status 1 when a test failed or the binary ended without its summary.

    bin --format json -Z unstable-options --report-time | python3 scripts/libtest_json.py NAME OUT
"""

from __future__ import annotations

import json
import sys
from typing import IO, Dict, List, Optional


def report(lines: IO[str], name: str, out: IO[str], times: Optional[IO[str]]) -> int:
    failed: List[Dict] = []
    summary: Optional[Dict] = None
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            out.write(line)
            continue
        if not isinstance(event, dict):
            out.write(line)
            continue
        if event.get("type") == "test" and event.get("event") in ("ok", "failed", "ignored"):
            secs = event.get("exec_time")
            out.write(f"test {event.get('name')} ... {event['event']}"
                      + (f" ({secs:.1f} s)" if isinstance(secs, (int, float)) else "") + "\n")
            if event["event"] == "failed":
                failed.append(event)
            if times is not None and event["event"] != "ignored":
                times.write(json.dumps({"binary": name, "test": event.get("name"),
                                        "seconds": secs, "outcome": event["event"]}) + "\n")
        elif event.get("type") == "suite" and event.get("event") in ("ok", "failed"):
            summary = event
        out.flush()
    for event in failed:
        out.write(f"\n---- {event.get('name')} ----\n{event.get('stdout', '')}\n")
    if failed:
        # Just above the summary, so that the tail of a log CI shows names each failure.
        out.write(f"\n{name}: failed tests\n")
        for event in failed:
            out.write(f"  {event.get('name')}: {panic_message(event.get('stdout', ''))}\n")
    if summary is None:
        out.write(f"{name}: ended without its summary (crashed?)\n")
        return 1
    out.write(f"{name}: {summary['event']}. {summary.get('passed')} passed; "
              f"{summary.get('failed')} failed; {summary.get('ignored')} ignored; finished in "
              f"{summary.get('exec_time', 0):.1f} s\n")
    return 0 if summary["event"] == "ok" and not failed else 1


def panic_message(stdout: str, limit: int = 400) -> str:
    """The panic's location and message from a failed test's output, without its backtrace."""
    lines = stdout.splitlines()
    for i, line in enumerate(lines):
        if "panicked at" in line:
            message = []
            for follow in lines[i + 1:i + 6]:
                if follow.startswith(("stack backtrace:", "note: ")):
                    break
                message.append(follow.strip())
            text = " ".join([line.split("panicked at", 1)[1].strip()] + message)
            return text[:limit]
    return (lines[-1] if lines else "(no output)")[:limit]


def main(argv: List[str]) -> int:
    name, path = argv[1], argv[2]
    with open(path, "a") as times:
        return report(sys.stdin, name, sys.stdout, times)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
