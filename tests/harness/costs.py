"""Where a test's time goes that is not the product's: starting and stopping the cluster's parts,
Kafka's tools, creating connectors, and the waits a test sleeps or polls through. The harness's
façade (`cluster.Cluster`) and the e2e helpers time those operations here; the test profile
(`profile_plugin`, scripts/test_profile.py) takes the totals per test.

Only the thread that runs the tests is counted (a sampler thread's tool runs overlap the test's
own waiting), and only the outermost timed operation: a worker start that runs a tool is one
worker start.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from typing import Any, Callable, Dict, Iterator, TypeVar

# The categories the profile shows, in its order.
CLUSTER = "cluster"        # brokers, PostgreSQL, the sink matrix's backends: start, stop, restart
WORKERS = "workers"        # Connect workers: start, stop, kill
TOOLS = "tools"            # Kafka's tool JVMs: topics, producing, consuming, group inspection
CONNECTORS = "connectors"  # creating a connector and waiting until its tasks run
SLEEPS = "sleeps"          # time.sleep in a test
POLLS = "polls"            # bounded waits for a condition (wait_for, Progress): mostly the product
CATEGORIES = (CLUSTER, WORKERS, TOOLS, CONNECTORS, SLEEPS, POLLS)

_totals: Dict[str, float] = {}
_lock = threading.Lock()
_depth = threading.local()

F = TypeVar("F", bound=Callable[..., Any])


@contextlib.contextmanager
def fixed_cost(category: str) -> Iterator[None]:
    """Adds the block's wall time to `category` (see the module's rules)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    depth = getattr(_depth, "n", 0)
    _depth.n = depth + 1
    t0 = time.monotonic()
    try:
        yield
    finally:
        _depth.n = depth
        if depth == 0:
            spent = time.monotonic() - t0
            with _lock:
                _totals[category] = _totals.get(category, 0.0) + spent


def timed(category: str, fn: F) -> F:
    """`fn` with its calls counted as `category`."""
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        with fixed_cost(category):
            return fn(*args, **kwargs)
    return call  # type: ignore[return-value]


def timed_method(category: str) -> Callable[[F], F]:
    """A decorator: the method's calls counted as `category`."""
    return lambda fn: timed(category, fn)


def take() -> Dict[str, float]:
    """The totals since the last take (seconds by category), and a fresh start."""
    with _lock:
        out = {k: round(v, 2) for k, v in _totals.items()}
        _totals.clear()
    return out
