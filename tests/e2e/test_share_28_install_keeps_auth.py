"""Scenario 24: a worker that already has basic authentication keeps it when sharesink is
installed as docs/operations.md says (issue 41).

Worker 1 (a Connect group of its own) runs Connect's BasicAuthSecurityRestExtension (its
PropertyFileLoginModule, on the class path as Kafka ships it) and takes `rest.extension.classes`
exactly as examples/connect-distributed.properties writes it (the line the install section shows:
the authentication extension, then sharesink's appended). Then:

- without credentials (and with wrong ones) the REST API answers 401, for Connect's endpoints and
  for the KIP's flag form that sharesink's extension rewrites;
- with credentials, a flag-form sink connector is created and runs in share mode;
- the worker logs no WARN about unauthenticated REST, while worker 0 of the session, which lists
  sharesink's extension alone on plain HTTP (the mistake the docs warn about), logs it.
"""

from __future__ import annotations

import base64
import json
import re
import urllib.error
import urllib.request

import pytest

from harness.cluster import (REPO_ROOT, SHARE_MODE_REST_EXTENSION, Cluster, Rest,
                             default_plugin_archive, ensure_basic_auth_extension)
from helpers import (FILE_SINK, LogMark, delete_connector, flag_config, stop_worker_if_running,
                     uniq, wait_for, worker_log)

WORKER = 1
USER, PASSWORD = "operator", "operator-secret"
AUTH = {"Authorization": "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()}
WRONG = {"Authorization": "Basic " + base64.b64encode(f"{USER}:nope".encode()).decode()}
EXAMPLE = REPO_ROOT / "examples" / "connect-distributed.properties"
WARNING = "sharesink's REST extension is the only one in rest.extension.classes"


def documented_extensions() -> str:
    """The rest.extension.classes value of the example worker config (its last such line wins,
    as in any properties file)."""
    values = re.findall(r"^rest\.extension\.classes=(.+)$", EXAMPLE.read_text(), re.M)
    assert values, f"{EXAMPLE} sets no rest.extension.classes"
    return values[-1].strip()


def _status(url: str, method: str = "GET", headers=None, body: bytes = None) -> int:
    req = urllib.request.Request(url, method=method, data=body,
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code


@pytest.fixture(scope="module")
def secured(cluster: Cluster):
    extensions = documented_extensions()
    assert extensions.split(",")[-1] == SHARE_MODE_REST_EXTENSION, extensions
    assert len(extensions.split(",")) == 2, extensions
    config = cluster.state_dir / "config"
    config.mkdir(parents=True, exist_ok=True)
    credentials = config / "install-credentials.properties"
    credentials.write_text(f"{USER}={PASSWORD}\n")
    jaas = config / "install-jaas.conf"
    jaas.write_text("KafkaConnect {\n  org.apache.kafka.connect.rest.basic.auth.extension."
                    f"PropertyFileLoginModule required\n  file=\"{credentials}\";\n}};\n")
    tag = uniq("")
    mark = LogMark(cluster, WORKER)
    try:
        cluster.start_worker(
            WORKER, plugin_archive=default_plugin_archive(),
            extra={"rest.extension.classes": extensions,
                   "group.id": f"sharesink-e2e-install-{tag}",
                   "config.storage.topic": f"connect-e2e-install-{tag}-configs",
                   "offset.storage.topic": f"connect-e2e-install-{tag}-offsets",
                   "status.storage.topic": f"connect-e2e-install-{tag}-status"},
            jvm_opts=[f"-Djava.security.auth.login.config={jaas}"],
            classpath=[ensure_basic_auth_extension()], rest_headers=AUTH)
        yield cluster.rest(WORKER, AUTH), mark
    finally:
        stop_worker_if_running(cluster, WORKER)


def test_the_documented_install_keeps_basic_authentication(cluster: Cluster, worker: Rest,
                                                           secured):
    rest, mark = secured
    url = rest.base_url
    name = uniq("install-")
    flag = flag_config(name, name, FILE_SINK, 1, file=str(cluster.state_dir / f"{name}.out"))
    body = json.dumps({"name": name, "config": flag}).encode()
    for headers in ({}, WRONG):
        assert _status(f"{url}/connectors", headers=headers) == 401
        assert _status(f"{url}/connectors", "POST", headers, body) == 401
        assert _status(f"{url}/connector-plugins", headers=headers) == 401
    assert _status(f"{url}/connectors", headers=AUTH) == 200
    # sharesink's extension is there too: the flag form runs through it, with credentials.
    cluster.create_topic(name, partitions=1)
    try:
        assert _status(f"{url}/connectors", "POST", AUTH, body) == 201
        stored = Rest(url, headers=AUTH).get(f"/connectors/{name}/config")
        assert stored.get("connector.class") == FILE_SINK, stored
        authed = Rest(url, headers=AUTH)

        def running() -> bool:
            status = authed.get(f"/connectors/{name}/status", check=False) or {}
            tasks = status.get("tasks") if isinstance(status, dict) else None
            return bool(tasks) and all(t["state"] == "RUNNING" for t in tasks)

        wait_for("the flag-form connector's task RUNNING", running, timeout=90)
    finally:
        delete_connector(Rest(url, headers=AUTH), name)
    assert mark.lines(r"sharesink REST extension \S+ registered"), "the extension did not load"
    assert not mark.lines(re.escape(WARNING)), mark.lines(re.escape(WARNING))
    # Worker 0 lists sharesink's extension alone on plain HTTP: the WARN says so.
    assert WARNING in worker_log(cluster, 0), "worker 0 (sharesink's extension alone) did not warn"
