"""Session fixtures for the three-broker end-to-end tests (issue 14): one KRaft cluster of three
nodes (replication factor 3, min.insync.replicas 2 for topics and every internal topic, leaders
spread) and two Connect workers with the sharesink plugin archive. Started clean per session
in SHARESINK_CLUSTER_DIR / SHARESINK_PORT_BASE (scripts/test.sh gives this stage its own),
torn down at the end unless SHARESINK_KEEP_CLUSTER=1. With SHARESINK_REUSE_CLUSTER=1 three
brokers already running there are used as they are (the stage's engine tests ran on them) and only
the workers are started.
"""

from __future__ import annotations

import os

import pytest

from harness.cluster import Cluster, HarnessError, default_plugin_archive


@pytest.fixture(scope="session")
def cluster3():
    c = Cluster(brokers=3)
    archive = default_plugin_archive()
    if archive is None or not archive.is_file():
        pytest.fail("no sharesink plugin archive: build it first (mvn -q -DskipTests package)",
                    pytrace=False)
    try:
        brokers_up = all(c.is_running(c.layout.name(i)) for i in range(c.brokers))
        if os.environ.get("SHARESINK_REUSE_CLUSTER") == "1" and brokers_up:
            for i in range(2):
                if not c.is_running(f"worker-{i}"):
                    c.start_worker(i, plugin_archive=archive)
        else:
            c.up(workers=2, plugin_archive=archive)
    except HarnessError as e:
        pytest.fail(f"could not start the three-broker cluster: {e}", pytrace=False)
    yield c
    if os.environ.get("SHARESINK_KEEP_CLUSTER") != "1":
        c.down()
