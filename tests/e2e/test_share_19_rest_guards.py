"""Scenario 19: sharesink's REST extension grants nobody more than the classic runtime (issue 31).

One extra worker for the whole module: worker 1 runs Connect's own basic authentication
(BasicAuthSecurityRestExtension with PropertyFileLoginModule, on its class path as Kafka ships it)
next to sharesink's extension, listed first in rest.extension.classes, and an admin listener (so
Connect registers every extension twice). Worker 0 (the session's, no authentication) leads.

- Without credentials, every endpoint the extension touches answers 401 on worker 1: nothing of
  sharesink's answers (no 400 naming a class), reads a body (an oversized one is 401, not 413) or
  asks the herder first. With them, the flag form's create, validate and PATCH work, forwarded to
  the leader with the caller's Authorization; a body over 1 MiB is 413. The admin listener serves
  /admin/loggers as before.
- PATCH racing DELETE across the two workers: the extension re-creates nothing of its own (Connect's
  own PATCH re-creates a connector deleted while it validates, with or without sharesink).
- PATCH on worker 1 racing a PUT on worker 0: the extension writes back no value it read (Connect's
  own PATCH can, in its validation window; a classic connector is raced too, for comparison).

The connectors of the races are created STOPPED (KIP-980): no task starts, so a round costs a
few config writes and validations only.
"""

from __future__ import annotations

import base64
import concurrent.futures
import http.client
import json
import re
import time
import urllib.parse
from typing import Dict, Optional, Tuple

import pytest

from harness.cluster import (BASIC_AUTH_REST_EXTENSION, SHARE_MODE_REST_EXTENSION, Cluster, Rest,
                             default_plugin_archive, ensure_basic_auth_extension)
from helpers import (FILE_SINK, FILE_SOURCE, SHARE_FLAG, SHARE_SINK, LogMark, delete_connector,
                     flag_config, record_figures, stop_worker_if_running, stored_config, uniq,
                     wait_for)

USER, PASSWORD = "connect", "connect-secret"
AUTH = {"Authorization": "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()}
WRONG = {"Authorization": "Basic " + base64.b64encode(f"{USER}:nope".encode()).decode()}
ADMIN_OFFSET = 85  # worker 1's admin listener: SHARESINK_PORT_BASE + 85
MIB = 1 << 20


def _q(name: str) -> str:
    return urllib.parse.quote(name, safe="")


def _status(rest: Rest, method: str, path: str, body=None) -> Tuple[int, object]:
    """(HTTP status, parsed body or text) of one request, without raising or retrying.

    A server that answers before reading a large body (401 before authentication reads it, 413
    past the limit) may close the connection while the body is still being sent: the client then
    sees a broken pipe or a reset on send, though the answer is already on its way. So the body is
    sent apart from the headers, a failure to send it is noted, and the answer is read anyway; only
    when no answer arrives is that failure the result."""
    data = None if body is None else json.dumps(body).encode()
    url = urllib.parse.urlsplit(rest.base_url + path)
    target = url.path + (f"?{url.query}" if url.query else "")
    headers = {"Accept": "application/json", **rest.headers}
    if data is not None:
        headers["Content-Type"] = "application/json"
        headers["Content-Length"] = str(len(data))
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    try:
        conn.putrequest(method, target, skip_accept_encoding=True)
        for k, v in headers.items():
            conn.putheader(k, v)
        conn.endheaders()
        unsent: Optional[OSError] = None
        if data is not None:
            try:
                conn.send(data)
            except (BrokenPipeError, ConnectionResetError) as e:
                unsent = e
        try:
            resp = conn.getresponse()
        except (http.client.HTTPException, OSError) as e:
            raise AssertionError(f"{method} {path}: no answer (sending the body: {unsent!r})") from e
        status, raw = resp.status, resp.read()
    finally:
        conn.close()
    text = raw.decode("utf-8", "replace")
    try:
        return status, json.loads(text) if text.strip() else None
    except ValueError:
        return status, text


# Where worker 1's log stood when the secured worker started.
SECURED_START = {}


@pytest.fixture(scope="module")
def secured(cluster: Cluster, worker: Rest):
    """Worker 1 with basic authentication, sharesink's extension and an admin listener; yields
    (authenticated Rest, unauthenticated Rest, admin listener URL)."""
    config = cluster.state_dir / "config"
    config.mkdir(parents=True, exist_ok=True)
    credentials = config / "connect-credentials.properties"
    credentials.write_text(f"{USER}={PASSWORD}\n")
    jaas = config / "connect-jaas.conf"
    jaas.write_text("KafkaConnect {\n  org.apache.kafka.connect.rest.basic.auth.extension."
                    f"PropertyFileLoginModule required\n  file=\"{credentials}\";\n}};\n")
    admin_url = f"http://127.0.0.1:{cluster.port_base + ADMIN_OFFSET}"
    joined = LogMark(cluster, 1)
    SECURED_START["log"] = joined
    try:
        cluster.start_worker(
            1, plugin_archive=default_plugin_archive(),
            extra={"rest.extension.classes":
                   f"{SHARE_MODE_REST_EXTENSION},{BASIC_AUTH_REST_EXTENSION}",
                   "admin.listeners": admin_url},
            jvm_opts=[f"-Djava.security.auth.login.config={jaas}"],
            classpath=[ensure_basic_auth_extension()], rest_headers=AUTH)
        wait_for("worker 1 in the group with worker 0 as its leader",
                 lambda: joined.lines(rf"leaderUrl='{re.escape(cluster.worker_url(0))}/?'"),
                 timeout=120)
        yield cluster.rest(1, AUTH), cluster.rest(1), admin_url
    finally:
        stop_worker_if_running(cluster, 1)


def test_without_credentials_everything_we_touch_is_401(cluster: Cluster, worker: Rest, secured):
    w1, anonymous, admin_url = secured
    # Connect registered sharesink's extension once per listener (this start of worker 1 only:
    # its log holds every earlier start of the session too).
    registered = SECURED_START["log"].lines(r"sharesink REST extension \S+ registered")
    assert len(registered) == 2, registered
    name = uniq("guard-")
    source = flag_config(name, name, FILE_SOURCE, 1, file="/dev/null", topic=name)
    source_validate = {k: v for k, v in source.items() if k != "connector.class"}
    huge = {"name": name, "config": dict(flag_config(name, name, FILE_SINK, 1),
                                          padding="x" * (2 * MIB))}
    requests = [
        ("POST", "/connectors", {"name": name, "config": source}),
        ("POST", "/connectors", huge),
        ("PUT", f"/connectors/{_q(name)}/config", source),
        ("PATCH", f"/connectors/{_q(name)}/config", {SHARE_FLAG: "share"}),
        ("PUT", f"/connector-plugins/{_q(FILE_SOURCE)}/config/validate", source_validate),
        ("GET", f"/connectors/{_q(name)}/status", None),
        ("GET", f"/connectors/{_q(name)}/tasks", None),
        ("GET", f"/connectors/{_q(name)}/config", None),
        ("GET", "/connectors?expand=status", None),
        ("GET", "/connectors?expand=info&expand=status", None),
    ]
    for rest in (anonymous, Rest(w1.base_url, headers=WRONG)):
        for method, path, body in requests:
            status, answer = _status(rest, method, path, body)
            assert status == 401, f"{method} {path} without valid credentials: {status} {answer}"
            assert "sink" not in str(answer), answer
    # The admin listener: Connect's basic auth there too, and /admin/loggers as Connect serves it.
    admin_anonymous, admin = Rest(admin_url), Rest(admin_url, headers=AUTH)
    assert _status(admin_anonymous, "GET", "/admin/loggers")[0] == 401
    loggers = admin.get("/admin/loggers")
    assert isinstance(loggers, dict) and "root" in loggers, loggers
    assert admin.put("/admin/loggers/io.sharesink", {"level": "DEBUG"}) is not None
    assert _status(admin, "POST", "/connectors", {"name": name, "config": source})[0] == 404


def test_with_credentials_the_flag_form_works_and_bodies_are_bounded(cluster: Cluster,
                                                                     worker: Rest, secured):
    w1, _, _ = secured
    name = uniq("guard-ok-")
    cluster.create_topic(name, partitions=1)
    cfg = flag_config(name, name, FILE_SINK, 1, file=str(cluster.state_dir / f"{name}.out"))
    path = f"/connectors/{_q(name)}/config"
    try:
        result = w1._retry_busy(lambda: w1.put(
            f"/connector-plugins/{_q(FILE_SINK)}/config/validate", cfg))
        assert Rest.validation_errors(result) == {}, Rest.validation_errors(result)
        assert result["name"] == FILE_SINK, result["name"]

        created = w1._retry_busy(lambda: w1.post("/connectors", {"name": name, "config": cfg}))
        assert created["config"] == cfg and created["type"] == "sink", created
        assert w1.get(path) == cfg and worker.get(path) == cfg
        stored = stored_config(cluster, name)
        assert stored["connector.class"] == SHARE_SINK, stored

        w1._retry_busy(lambda: w1.patch(path, {"tasks.max": "2"}))
        wait_for("the patch", lambda: worker.get(path).get("tasks.max") == "2")
        assert worker.get(path) == dict(cfg, **{"tasks.max": "2"})
        assert w1.get(f"/connectors/{_q(name)}/status")["type"] == "sink"

        over = dict(cfg, padding="x" * (MIB + 1))
        status, answer = _status(w1, "PUT", path, over)
        assert status == 413 and answer["error_code"] == 413, (status, answer)

        # Back to the classic runtime through the switch: a PATCH too. (A stored form left
        # half-translated would show its share.* keys here.)
        w1._retry_busy(lambda: w1.patch(path, {SHARE_FLAG: None}))
        classic = {k: v for k, v in cfg.items() if k != SHARE_FLAG}
        classic["tasks.max"] = "2"
        wait_for("the classic form", lambda: worker.get(path) == classic)
    finally:
        delete_connector(worker, name)


def _stopped(rest: Rest, name: str, cfg: Dict[str, str]) -> None:
    rest._retry_busy(lambda: rest.post("/connectors", {"name": name, "config": cfg,
                                                        "initial_state": "STOPPED"}))


def _race(first, second, delay: float):
    """Runs both at once, `second` `delay` seconds after `first` (a PATCH through worker 1 is
    forwarded to the leader, so a request sent to worker 0 at the same moment nearly always lands
    first: the delays spread the rounds over either order and the overlap)."""
    def later():
        time.sleep(delay)
        return second()

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        a, b = pool.submit(first), pool.submit(later)
        return a.result(), b.result()


def _patched(config: Dict[str, str], patch: Dict[str, Optional[str]]) -> Dict[str, str]:
    out = dict(config)
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = v
    return out


def test_patch_racing_delete_recreates_nothing_of_the_extensions(cluster: Cluster, worker: Rest,
                                                                  secured):
    """Connect's own PATCH (DistributedHerder.patchConnectorConfig, Kafka 4.4) reads the config on
    the leader's herder thread, validates the patched map off that thread and writes it in a later
    herder request, with allowReplace: a DELETE handled in between is undone by that write, with
    or without sharesink (here PATCHes answered 200 about 3 s after the DELETE had answered, the
    write waiting behind the herder's other work). The rounds with a patch
    the extension passes on unread and unchanged (tasks.max) show that window on their own. What
    the extension must not add is a re-creation of its own (its former read-then-PUT, answered
    201 Created): every PATCH is answered by Connect's PATCH (200, or 404 once deleted), and a
    connector Connect's PATCH re-created holds exactly the operator's patch applied to what was
    stored, in the operator's form."""
    w1, _, _ = secured
    rounds, recreated, created_by_put, wrong_form, outcomes = 20, {}, [], [], {}
    patches = [{"tasks.max": "2"}, {SHARE_FLAG: "share"}, {SHARE_FLAG: None}]
    for i in range(rounds):
        name = uniq("race-del-")
        cfg = flag_config(name, name, FILE_SINK, 1)
        path = f"/connectors/{_q(name)}/config"
        _stopped(worker, name, cfg)
        patch = patches[i % len(patches)]
        (p_status, p_answer), (d_status, _) = _race(
            lambda: _status(w1, "PATCH", path, patch),
            lambda: _status(worker, "DELETE", f"/connectors/{_q(name)}"), delay=(i % 10) * 0.01)
        outcomes[(p_status, d_status)] = outcomes.get((p_status, d_status), 0) + 1
        if p_status not in (200, 404, 409):
            created_by_put.append((name, patch, p_status, p_answer))
        if d_status == 204 and name in worker.connectors():
            kind = "passed on unchanged" if SHARE_FLAG not in patch else "translated"
            recreated[kind] = recreated.get(kind, 0) + 1
            shown = worker.get(path)
            if shown != _patched(cfg, patch):
                wrong_form.append((name, patch, shown))
        if name in worker.connectors():
            delete_connector(worker, name)
    record_figures("19-rest-guards-patch-vs-delete", rounds=rounds,
                   outcomes={f"patch {p} / delete {d}": n for (p, d), n in outcomes.items()},
                   recreated_by_connects_own_patch=recreated)
    assert not created_by_put, f"a PATCH was answered otherwise than by Connect's PATCH: {created_by_put}"
    assert not wrong_form, f"a re-created connector is not the operator's patch applied: {wrong_form}"


def test_patch_racing_put_writes_back_no_value_of_its_own(cluster: Cluster, worker: Rest, secured):
    """Connect's own PATCH (DistributedHerder.patchConnectorConfig, Kafka 4.4) reads the stored
    config on the leader's herder thread, validates the result off that thread and writes it in a
    later herder request: a PUT written in between is overwritten by the value read before it,
    with or without sharesink (a classic connector is raced the same way, for comparison). What
    the extension must not do is write a value of its own reading: each round ends with the PUT's
    value or the one before it, and the share-mode connector stays in the stored form."""
    w1, _, _ = secured
    share_name, classic_name = uniq("race-put-"), uniq("race-put-classic-")
    share = flag_config(share_name, share_name, FILE_SINK, 1, file="/tmp/v0")
    classic = {k: v for k, v in flag_config(classic_name, classic_name, FILE_SINK, 1,
                                            file="/tmp/v0").items() if k != SHARE_FLAG}
    patches = {share_name: [{"tasks.max": "1"}, {SHARE_FLAG: "share"},
                            {SHARE_FLAG: "share", "errors.retry.timeout": "0"}],
               classic_name: [{"tasks.max": "1"}, {"errors.retry.timeout": "0"}]}
    rounds = 15
    figures = {}
    try:
        for name, cfg in ((share_name, share), (classic_name, classic)):
            _stopped(worker, name, cfg)
            path = f"/connectors/{_q(name)}/config"
            before, kept, overwritten, other = "/tmp/v0", 0, 0, []
            for i in range(1, rounds + 1):
                put = dict(cfg, file=f"/tmp/v{i}")
                patch = patches[name][i % len(patches[name])]
                (p_status, _), (u_status, _) = _race(
                    lambda: _status(w1, "PATCH", path, patch),
                    lambda: _status(worker, "PUT", path, put), delay=(i % 5) * 0.02)
                if u_status != 200:
                    worker._retry_busy(lambda: worker.put(path, put))
                shown = worker.get(path).get("file")
                if shown == put["file"]:
                    kept += 1
                elif shown == before:
                    overwritten += 1
                else:
                    other.append((i, patch, p_status, u_status, shown))
                before = shown
            figures[name] = {"rounds": rounds, "put_value_kept": kept,
                             "overwritten_by_connects_own_patch": overwritten,
                             "any_other_value": len(other)}
            assert not other, f"{name}: a value neither the PUT's nor the one before: {other}"
        stored = stored_config(cluster, share_name)
        assert stored["connector.class"] == SHARE_SINK, stored
        assert stored["share.internal.form"] == "flag" and SHARE_FLAG not in stored, stored
        assert worker.get(f"/connectors/{_q(share_name)}/config")[SHARE_FLAG] == "share"
    finally:
        record_figures("19-rest-guards-patch-vs-put", share=figures.get(share_name),
                       classic=figures.get(classic_name))
        delete_connector(worker, share_name)
        delete_connector(worker, classic_name)
