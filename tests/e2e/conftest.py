"""Session fixtures for the end-to-end tests: one real Kafka 4.4 broker per session, Connect
worker 0 with the sharesink plugin archive, PostgreSQL on demand.

Lanes: run under pytest-xdist (`-n N --dist loadfile`, scripts/test.sh's e2e stage), each
xdist worker is a lane with a cluster of its own: gw0 the one in SHARESINK_CLUSTER_DIR on
SHARESINK_PORT_BASE, gwK the same directory with `-laneK` on the port base + K x LANE_PORT_STRIDE.
Whole modules go to one lane (`loadfile`), so a module's fixtures and its order hold; a test that
restarts its broker or worker, or stops PostgreSQL, disturbs only its own lane.

Environment:
  SHARESINK_KEEP_CLUSTER=1     leave everything running after the session (inspect with
                               `python3 tests/harness/cluster.py status`, stop with `down`)
  SHARESINK_REUSE_CLUSTER=1    reuse a broker that is already running in the state dir
                               (instead of starting a clean one)
  SHARESINK_PLUGIN_ARCHIVE     the sharesink plugin zip (default: newest
                               java/target/sharesink-*-plugin.zip)
  SHARESINK_CLUSTER_DIR, SHARESINK_PORT_BASE, SHARESINK_CACHE: see tests/harness/cluster.py
"""

from __future__ import annotations

import os

import pytest

from harness.cluster import REPO_ROOT, Cluster, HarnessError, default_plugin_archive


# Ports a lane's cluster is moved by: past every offset the harness uses (three brokers end at
# +135), and far enough below the benchmark's default base (29500) for two lanes.
LANE_PORT_STRIDE = 200


def _lane() -> int:
    """This process's lane: 0 without pytest-xdist, else the xdist worker's number."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else 0


def _move_to_own_lane() -> None:
    """Points the harness (every Cluster() made in this process) at this lane's cluster. Before
    any test module is imported: some make a Cluster() at import."""
    lane = _lane()
    if lane == 0:
        return
    base = int(os.environ.get("SHARESINK_PORT_BASE", "29000"))
    state = os.environ.get("SHARESINK_CLUSTER_DIR", str(REPO_ROOT / "build" / "cluster"))
    os.environ["SHARESINK_PORT_BASE"] = str(base + LANE_PORT_STRIDE * lane)
    os.environ["SHARESINK_CLUSTER_DIR"] = f"{state}-lane{lane}"


_move_to_own_lane()


# The modules that take longest (docs/test-profile.md), started first: pytest-xdist hands whole
# modules to the lanes in the order they are collected, and one long module started last kept a
# lane busy for minutes after the other had run dry.
LONGEST_FIRST = (
    "test_sink_matrix.py",
    "test_share_14_kip_switch.py",
    "test_share_13_network_blackhole.py",
    "test_wiring.py",
    "test_share_27_alerts.py",
    "test_share_19_rest_guards.py",
    "test_share_02_jdbc_outage.py",
    "test_share_04_poison.py",
    "test_share_11_empty_precommit_until_roll.py",
    "test_share_05_slow_task.py",
    "test_share_12_jdbc_flapping_outage.py",
    "test_cluster.py",
    "test_share_30_transactions.py",
)


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: order within


def _keep() -> bool:
    return os.environ.get("SHARESINK_KEEP_CLUSTER") == "1"


@pytest.fixture(scope="session")
def cluster():
    """A running broker (PLAINTEXT on c.bootstrap, SASL_SSL on c.sasl_ssl_bootstrap); torn down
    at session end."""
    c = Cluster()
    try:
        if os.environ.get("SHARESINK_REUSE_CLUSTER") == "1" and c.is_running("broker"):
            pass
        else:
            # SASL_SSL (SCRAM-SHA-512/256 over TLS, c.sasl_ssl_bootstrap) is always on for tests;
            # PLAINTEXT (c.bootstrap) stays the default listener.
            c.up(sasl_ssl=True)
    except HarnessError as e:
        pytest.fail(f"could not start the local Kafka broker: {e}", pytrace=False)
    yield c
    if _keep():
        print(f"\nSHARESINK_KEEP_CLUSTER=1: cluster left running in {c.state_dir} "
              f"(stop: python3 tests/harness/cluster.py down)")
        return
    c.down()


@pytest.fixture(scope="session")
def worker(cluster):
    """Connect worker 0 with the sharesink plugin archive; a `Rest` client for it
    (`worker.base_url` is its URL)."""
    archive = default_plugin_archive()
    if archive is None or not archive.is_file():
        pytest.fail(
            "no sharesink plugin archive: build it first with `mvn -q -DskipTests package` in "
            f"{REPO_ROOT} (it produces java/target/sharesink-<version>-plugin.zip), "
            "or point SHARESINK_PLUGIN_ARCHIVE at one" + (f" ({archive} does not exist)" if archive else ""),
            pytrace=False)
    if not cluster.is_running("worker-0"):
        try:
            cluster.start_worker(0, plugin_archive=archive)
        except HarnessError as e:
            pytest.fail(f"could not start Connect worker 0: {e}", pytrace=False)
    yield cluster.rest(0)
    if not _keep():
        cluster.stop_worker(0)


@pytest.fixture(scope="session")
def postgres(cluster):
    """PostgreSQL on 127.0.0.1: dict(host, port, db, user, password, jdbc_url, url)."""
    try:
        info = cluster.start_postgres()
    except HarnessError as e:
        pytest.fail(f"could not start PostgreSQL: {e}", pytrace=False)
    yield info
    if not _keep():
        cluster.stop_postgres()
