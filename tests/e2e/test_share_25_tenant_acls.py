"""Scenario 25 (issue 40): one tenant cannot change another tenant's share group.

sharesink sets a share group's configs (start position, lock duration, delivery limit, the
broker-side DLQ) and seeds its start offsets from the connector's admin client, built as
Connect's `Worker.adminConfigs` builds a sink connector's: the worker's top-level settings, its
`admin.*`, then the connector's `admin.override.*` under the worker's policy. So a tenant whose
connector carries its own credentials acts as that tenant, never as the worker.

The broker runs, for this module only, with Kafka's StandardAuthorizer
(`cluster.restart_broker(authorizer=True)`): resources without ACLs stay open to everyone, the
PLAINTEXT principal (the broker itself, the harness's tools, worker 0's own clients: ANONYMOUS)
is a super user. Two SCRAM principals, `tenant-a` and `tenant-b`, each may do anything with the
groups named after it (`tenant-a-*`, `tenant-b-*`), and nothing with the other's. The worker's
principal could change either group: a connector that acted as the worker would pass.

- control: tenant A's own credentials cannot alter tenant B's group configs with Kafka's tool
  (the ACLs hold), the super user can;
- tenant A's connector (consumer.override.* and admin.override.* with A's credentials on the
  SASL_SSL listener) naming B's share group fails at start with a trace naming the group and the
  authorization failure, and B's group configs are unchanged;
- the same connector on A's own group runs, sets that group's configs and delivers records;
- a connector whose share consumer is tenant A (its admin client a super user's) on
  `topics.regex` matching A's topic and B's (B's topics visible to B alone) subscribes to A's
  only, as a classic consumer's pattern does, runs and delivers A's records: the pattern is
  matched against the topics A's principal may see, never the admin client's.

The broker is restarted without the authorizer at the end of the module.
"""

from __future__ import annotations

import pytest

from harness.cluster import Cluster, Rest, RestError
from harness.tls import SCRAM_USER, TENANT_USERS
from harness.tools import CONFIG_COMMAND
from helpers import (FILE_SINK, SHARE_SINK, STRING_CONVERTER, connector_trace, delete_connector,
                     file_lines, produce_values, start_connector, uniq, wait_for)

LOCK = "share.record.lock.duration.ms"


@pytest.fixture(scope="module")
def tenants(cluster: Cluster, worker: Rest):
    """The broker with ACLs: tenant-a and tenant-b, each owning its own group prefix."""
    cluster.restart_broker(authorizer=True)
    try:
        for user in TENANT_USERS:
            cluster.ensure_scram_user(user)
            cluster.allow_group_prefix(f"User:{user}", f"{user}-")
        yield cluster
    finally:
        cluster.restart_broker(authorizer=False)


def _tenant_config(cluster: Cluster, name: str, topic: str, out, group: str, user: str):
    """A FileStream sink in share mode whose share consumer and admin client are tenant `user`'s
    (SCRAM over SASL_SSL)."""
    client = cluster.sasl_ssl_client_config("SCRAM-SHA-512", user=user)
    cfg = {"name": name, "connector.class": SHARE_SINK, "share.sink.connector.class": FILE_SINK,
           "topics": topic, "tasks.max": "1", "file": str(out),
           "key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER,
           "share.commit.interval.ms": "1000", "share.group.id": group, LOCK: "20000"}
    cfg.update({f"consumer.override.{k}": v for k, v in client.items()})
    cfg.update({f"admin.override.{k}": v for k, v in client.items()})
    return cfg


def _wait_failed(worker: Rest, name: str) -> str:
    """The trace of the connector (or a task) once it FAILED."""
    def failed():
        try:
            st = worker.connector_status(name)
        except RestError:
            return False  # not there yet
        states = [st.get("connector", {}).get("state")] + [t.get("state") for t in st.get("tasks", [])]
        return "FAILED" in states
    wait_for(f"connector {name} FAILED", failed, timeout=120,
             on_timeout=lambda: connector_trace(worker, name))
    return connector_trace(worker, name)


def test_a_tenant_cannot_change_another_tenants_share_group(tenants: Cluster, worker: Rest,
                                                            tmp_path):
    c = tenants
    tag = uniq("")
    group_a, group_b = f"tenant-a-{tag}", f"tenant-b-{tag}"
    topic = uniq("acl-")
    c.create_topic(topic)
    # Tenant B's group, as B set it.
    c.set_group_config(group_b, {LOCK: 45000})

    # Control: the ACLs hold for A's principal and not for the super user.
    as_a = c.run_tool(CONFIG_COMMAND, "--bootstrap-server", c.sasl_ssl_bootstrap,
                      "--command-config", c.sasl_ssl_client_properties_file(user="tenant-a"),
                      "--alter", "--entity-type", "groups", "--entity-name", group_b,
                      "--add-config", f"{LOCK}=25000", check=False)
    assert as_a.returncode != 0, as_a.stdout + as_a.stderr
    assert "authoriz" in (as_a.stdout + as_a.stderr).lower(), as_a.stdout + as_a.stderr
    assert c.describe_configs("groups", group_b).get(LOCK) == "45000"

    # Tenant A's connector naming B's group: refused by the broker, the failure names why.
    intruder = uniq("acl-intruder-")
    try:
        worker.put_connector(intruder, _tenant_config(c, intruder, topic, tmp_path / "b.txt",
                                                      group_b, "tenant-a"))
        trace = _wait_failed(worker, intruder)
        assert group_b in trace, trace
        assert "authoriz" in trace.lower(), trace
        assert c.describe_configs("groups", group_b).get(LOCK) == "45000", \
            "tenant A's connector changed tenant B's group"
    finally:
        delete_connector(worker, intruder)

    # The same connector on A's own group runs, sets its configs and delivers.
    own = uniq("acl-own-")
    out = tmp_path / "a.txt"
    try:
        start_connector(worker, own, _tenant_config(c, own, topic, out, group_a, "tenant-a"),
                        tasks=1)
        assert c.describe_configs("groups", group_a).get(LOCK) == "20000"
        values = [f"v{i}" for i in range(20)]
        produce_values(c, topic, values)
        wait_for("20 records in tenant A's file", lambda: len(set(file_lines(out))) >= 20,
                 timeout=90, on_timeout=lambda: connector_trace(worker, own))
        assert set(file_lines(out)) == set(values)
    finally:
        delete_connector(worker, own)


def test_a_topic_pattern_sees_only_what_the_consumer_may_see(tenants: Cluster, worker: Rest,
                                                              tmp_path):
    c = tenants
    tag = uniq("")
    c.allow_topic_prefix("User:tenant-b", "tenant-b-")
    mine, theirs = f"tenant-a-rx-{tag}", f"tenant-b-rx-{tag}"
    c.create_topic(mine)
    c.create_topic(theirs)
    produce_values(c, theirs, [f"b{i}" for i in range(20)])
    name = uniq("acl-regex-")
    out = tmp_path / "regex.txt"
    cfg = _tenant_config(c, name, mine, out, f"tenant-a-{tag}", "tenant-a")
    del cfg["topics"]
    cfg["topics.regex"] = f"tenant-[ab]-rx-{tag}"
    # The admin client is the harness's super user on the same listener: it sees both topics.
    cfg.update({f"admin.override.{k}": v
                for k, v in c.sasl_ssl_client_config("SCRAM-SHA-512", user=SCRAM_USER).items()})
    try:
        start_connector(worker, name, cfg, tasks=1)
        values = [f"a{i}" for i in range(20)]
        produce_values(c, mine, values)
        wait_for("20 records in tenant A's file", lambda: len(set(file_lines(out))) >= 20,
                 timeout=90, on_timeout=lambda: connector_trace(worker, name))
        assert set(file_lines(out)) == set(values)
        st = worker.connector_status(name)
        assert [t["state"] for t in st["tasks"]] == ["RUNNING"], st
        assert theirs not in c.current_log("worker-0"), \
            "the worker's log names a topic tenant A cannot see"
    finally:
        delete_connector(worker, name)
