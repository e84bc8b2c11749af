"""Connect end to end on three brokers (issue 14): FileStream through sharesink, 6 tasks on 6
partitions, two workers, a live stream of records while
- every broker is restarted in turn (a rolling restart, each gracefully stopped and started);
- the broker leading most partitions is killed -9 (and started again);
- each of the two workers is stopped gracefully and started again in turn.
Each records produced / in the sink / lost / duplicates / longest gap (build/e2e-figures)."""

from __future__ import annotations

import time
from collections import Counter

from faults import run_fault
from harness.cluster import Cluster
from helpers import wait_for


def test_rolling_restart_of_every_broker(cluster3: Cluster):
    def fault(topic):
        took = []
        for i in range(cluster3.brokers):
            t = time.monotonic()
            cluster3.restart_broker(i)
            took.append(round(time.monotonic() - t, 1))
            time.sleep(5)
        return {"fault": "rolling restart of 3 brokers", "restart_seconds": took}

    run_fault(cluster3, "c3-1-rolling-broker-restart", fault)


def test_kill_9_of_the_broker_leading_most_partitions(cluster3: Cluster):
    def fault(topic):
        leaders = cluster3.leaders(topic)
        node, led = Counter(leaders.values()).most_common(1)[0]
        cluster3.kill_broker(cluster3.broker_index(node))
        time.sleep(20)
        cluster3.start_broker(index=cluster3.broker_index(node))
        return {"fault": f"kill -9 of node {node}", "partitions_it_led": led}

    run_fault(cluster3, "c3-2-kill-9-busiest-leader", fault)


def test_rolling_restart_of_two_workers(cluster3: Cluster):
    def fault(topic):
        for i in (0, 1):
            cluster3.stop_worker(i)
            time.sleep(5)  # the fault: the other worker alone
            cluster3.start_worker(i)
            # Back in the group with tasks of its own (Connect moves them back after its
            # scheduled rebalance delay), before the next one stops.
            wait_for(f"worker {i} running tasks again",
                     lambda: _tasks_on(cluster3, i) > 0, timeout=120)
        return {"fault": "rolling restart of 2 workers"}

    run_fault(cluster3, "c3-3-rolling-worker-restart", fault)


def _tasks_on(cluster: Cluster, index: int) -> int:
    """RUNNING tasks the workers' status places on worker `index`, over every connector."""
    rest = cluster.rest(1 - index)
    port = f":{cluster.worker_port(index)}"
    running = 0
    for name in rest.get("/connectors"):
        tasks = rest.connector_status(name).get("tasks", [])
        running += sum(1 for t in tasks
                       if t.get("state") == "RUNNING" and t.get("worker_id", "").endswith(port))
    return running
