"""Scenario 17 (issue 31): share mode grants nobody more than the classic runtime.

The defect: on a worker with `connector.client.config.override.policy=None` and SASL/PLAIN
settings of its own, one validate call with `share.consumer.bootstrap.servers=<a host of the
caller's>` and `share.consumer.security.protocol=SASL_PLAINTEXT` made the worker connect there
and send the worker's password. The rule these tests describe: share mode mirrors the classic
runtime. The share consumer starts from the worker's `consumer.*` (plus the top-level
bootstrap.servers only), the DLQ producer from `producer.*`, admin clients from the worker's
top-level settings plus `admin.*`; everything a connector adds (`share.consumer.*` like
`consumer.override.*`, `consumer.override.*`, `producer.override.*`, `admin.override.*`,
`share.group.id` as `group.id`) goes through the worker's override policy as the matching
`*.override.*` key would, at validation and at connector/task start, and a refusal names keys,
never values. `share.worker.config` is gone (an error if set). A consumer bootstrap override
without an admin one is an error on the consumer's key that names
`admin.override.bootstrap.servers`.

One worker (index 1, its own Connect group and topics, so the session's worker 0 is left alone)
with top-level `sasl.mechanism=PLAIN` and `sasl.jaas.config` (password `top-level-...`) and
distinct passwords in `consumer.sasl.*`, `producer.sasl.*`, `admin.sasl.*`. security.protocol
stays PLAINTEXT everywhere, so the worker and every default client use the real broker; the SASL
settings only act once a connector switches security.protocol. A credential recorder (a fake
broker, tests/harness/credential_recorder.py; its positive controls are
test_credential_recorder.py and the first test here) stands for the caller's host.

Phase policy All (first worker start):
- classic baseline (positive control): a classic FileStream sink with
  consumer.override.bootstrap.servers=recorder and SASL_PLAINTEXT sends the worker's consumer
  password there, and only that one. This is what the classic runtime grants under All.
- validate with admin.override.* at the recorder: no connection reaches it at all (validation
  connects only to the worker's own servers, issue 40; before, it saw the admin password).
- validate with share.consumer.bootstrap.servers=recorder (SASL_PLAINTEXT) and no admin override:
  an error on share.consumer.bootstrap.servers naming admin.override.bootstrap.servers, and the
  recorder never sees the top-level, producer or admin password (the defect sent the top-level
  one).
- the flag form with consumer.override.* and admin.override.* at the recorder: nothing but the
  consumer and admin passwords can reach it (a guard only: it asks for no password to arrive).

Policy changed after creation: a connector created under All in state STOPPED (KIP-980
initial_state) with consumer.override.* and admin.override.bootstrap.servers at the recorder;
worker restarted with policy None; resumed: the connector or its tasks FAIL with a trace naming
the refused keys (no value, no secret), and the recorder sees no connection at all.

Phase policy None (second worker start): for each family (share.consumer.*, consumer.override.*,
producer.override.* with a DLQ, admin.override.* with topics.regex, share.group.id,
share.worker.config=/dev/null, and share.worker.config=/dev/null with consumer.override.*: a
file the connector names must not pick the policy), in the explicit form and in the flag form:
validation refuses each key on that key, no error message holds a secret or the override's
value, no part of the answer holds a secret, the create is refused with 400, and the recorder
sees zero connections.
The same connector without overrides validates clean and is created (the control that the
refusals come from the overrides).
"""

from __future__ import annotations

import json
import time
import urllib.parse
from typing import Any, Dict, Iterable, List, Optional

import pytest

from harness.cluster import Cluster, Rest, RestError, default_plugin_archive
from harness.credential_recorder import CredentialRecorder
from helpers import (FILE_SINK, SHARE_FLAG, SHARE_SINK, STRING_CONVERTER, connector_trace,
                     delete_connector, stop_worker_if_running, uniq, wait_for)

WORKER = 1
SASL = "SASL_PLAINTEXT"
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"


def _q(name: str) -> str:
    return urllib.parse.quote(name, safe="")


def _jaas(user: str, password: str) -> str:
    return f'{PLAIN_MODULE} required username="{user}" password="{password}";'


class Problems:
    """Collects every failed expectation of a test, so one run shows them all."""

    def __init__(self, what: str):
        self.what = what
        self.items: List[str] = []

    def check(self, ok: Any, message: str) -> None:
        if not ok:
            self.items.append(message)

    def done(self) -> None:
        if self.items:
            pytest.fail(f"{self.what}:\n- " + "\n- ".join(self.items), pytrace=False)


class CredentialWorker:
    """Worker 1 with the worker-level SASL settings and a policy; restarted when the policy
    asked for differs. Also holds the recorder and the secrets."""

    def __init__(self, cluster: Cluster, recorder: CredentialRecorder):
        self.cluster = cluster
        self.recorder = recorder
        tag = uniq("")
        self.secrets = {
            "top-level": f"top-level-{tag}",
            "consumer": f"consumer-{tag}",
            "producer": f"producer-{tag}",
            "admin": f"admin-{tag}",
        }
        # Its own Connect group and internal topics: nothing another test created runs here.
        self.base_extra = {
            "group.id": f"sharesink-e2e-creds-{tag}",
            "config.storage.topic": f"connect-e2e-creds-{tag}-configs",
            "offset.storage.topic": f"connect-e2e-creds-{tag}-offsets",
            "status.storage.topic": f"connect-e2e-creds-{tag}-status",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": _jaas("worker", self.secrets["top-level"]),
        }
        for client in ("consumer", "producer", "admin"):
            self.base_extra[f"{client}.sasl.mechanism"] = "PLAIN"
            self.base_extra[f"{client}.sasl.jaas.config"] = _jaas(f"worker-{client}",
                                                                  self.secrets[client])
        self.policy: Optional[str] = None
        self.start_seconds: Dict[str, float] = {}

    @property
    def rest(self) -> Rest:
        return self.cluster.rest(WORKER)

    def ensure(self, policy: str) -> Rest:
        if self.policy == policy and self.cluster.is_running(f"worker-{WORKER}"):
            return self.rest
        stop_worker_if_running(self.cluster, WORKER)
        t0 = time.monotonic()
        self.cluster.start_worker(WORKER, plugin_archive=default_plugin_archive(),
                                  extra=dict(self.base_extra, **{
                                      "connector.client.config.override.policy": policy}))
        self.start_seconds[policy] = round(time.monotonic() - t0, 1)
        self.policy = policy
        return self.rest

    def all_secrets(self) -> List[str]:
        return list(self.secrets.values())

    def seen(self) -> List[str]:
        """Names of the secrets the recorder saw in any byte."""
        by_value = {v: k for k, v in self.secrets.items()}
        return [by_value[s] for s in self.recorder.secrets_seen(self.all_secrets())]


@pytest.fixture(scope="module")
def creds(cluster: Cluster):
    rec = CredentialRecorder()
    try:
        rec.start()
    except OSError as e:
        pytest.fail(str(e), pytrace=False)
    cw = CredentialWorker(cluster, rec)
    try:
        yield cw
    finally:
        print(f"\nworker {WORKER} start times (s): {cw.start_seconds}")
        stop_worker_if_running(cluster, WORKER)
        rec.stop()


# ----------------------------------------------------------------------------------------------
# connector configurations


def _file_settings(cluster: Cluster, name: str) -> Dict[str, str]:
    return {"file": str(cluster.state_dir / f"{name}.out"),
            "key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER}


def explicit_config(cluster: Cluster, name: str, topic: str) -> Dict[str, str]:
    """The explicit form, with no client setting of its own: the worker gives the bootstrap."""
    return {"name": name, "connector.class": SHARE_SINK, "share.sink.connector.class": FILE_SINK,
            "topics": topic, "tasks.max": "1", **_file_settings(cluster, name)}


def flag_config(cluster: Cluster, name: str, topic: str) -> Dict[str, str]:
    return {"name": name, "connector.class": FILE_SINK, SHARE_FLAG: "share",
            "topics": topic, "tasks.max": "1", **_file_settings(cluster, name)}


FORMS = {"explicit": explicit_config, "flag": flag_config}


def family_overrides(family: str, recorder: str, name: str) -> Dict[str, str]:
    """The settings a connector adds for one family; every key but topics.regex and the DLQ
    keys is one the policy None must refuse."""
    if family == "share.consumer":
        return {"share.consumer.bootstrap.servers": recorder,
                "share.consumer.security.protocol": SASL}
    if family == "consumer.override":
        return {"consumer.override.bootstrap.servers": recorder,
                "consumer.override.security.protocol": SASL}
    if family == "producer.override":
        # The DLQ producer is the task's producer.
        return {"producer.override.bootstrap.servers": recorder,
                "producer.override.security.protocol": SASL,
                "errors.tolerance": "all", "errors.deadletterqueue.topic.name": f"dlq.{name}"}
    if family == "admin.override":
        # topics.regex: the task lists topics with an admin client.
        return {"admin.override.bootstrap.servers": recorder,
                "admin.override.security.protocol": SASL}
    if family == "share.group.id":
        return {"share.group.id": f"stolen-{name}"}
    if family == "share.worker.config":
        return {"share.worker.config": "/dev/null"}
    if family == "share.worker.config+consumer.override":
        # A file the connector names must not choose the policy: /dev/null names none, so a
        # policy read from it would be Connect's default, All.
        return dict(family_overrides("share.worker.config", recorder, name),
                    **family_overrides("consumer.override", recorder, name))
    raise ValueError(family)


REFUSED_KEYS = {
    "share.consumer": ["share.consumer.bootstrap.servers", "share.consumer.security.protocol"],
    "consumer.override": ["consumer.override.bootstrap.servers",
                          "consumer.override.security.protocol"],
    "producer.override": ["producer.override.bootstrap.servers",
                          "producer.override.security.protocol"],
    "admin.override": ["admin.override.bootstrap.servers", "admin.override.security.protocol"],
    "share.group.id": ["share.group.id"],
    "share.worker.config": ["share.worker.config"],
    "share.worker.config+consumer.override": ["share.worker.config",
                                              "consumer.override.bootstrap.servers",
                                              "consumer.override.security.protocol"],
}


def build_config(cluster: Cluster, form: str, family: Optional[str], recorder: str,
                 topic: str) -> Dict[str, str]:
    name = uniq(f"creds-{form}-")
    cfg = FORMS[form](cluster, name, topic)
    if family is not None:
        cfg.update(family_overrides(family, recorder, name))
    if family == "admin.override":
        del cfg["topics"]
        cfg["topics.regex"] = f"{topic}.*"
    return cfg


# ----------------------------------------------------------------------------------------------
# REST


def validate(rest: Rest, cfg: Dict[str, str]) -> Dict[str, Any]:
    cls = cfg["connector.class"]
    return rest._retry_busy(lambda: rest.put(f"/connector-plugins/{_q(cls)}/config/validate", cfg),
                            timeout=90)


def create(rest: Rest, cfg: Dict[str, str], initial_state: Optional[str] = None):
    """(HTTP status, body) of POST /connectors; waits out a rebalance (409)."""
    body: Dict[str, Any] = {"name": cfg["name"], "config": cfg}
    if initial_state:
        body["initial_state"] = initial_state
    try:
        return 201, rest._retry(lambda: rest.post("/connectors", body, timeout=120),
                                Rest._rebalancing, timeout=90)
    except RestError as e:
        return e.status, e.body


def state(rest: Rest, name: str) -> Optional[str]:
    """The connector's state; None while the worker has no status for it yet (404)."""
    try:
        return rest.connector_status(name).get("connector", {}).get("state")
    except RestError as e:
        if e.status == 404:
            return None
        raise


def messages(errors: Dict[str, List[str]]) -> List[str]:
    return [m for ms in errors.values() for m in ms]


def found_in(texts: Iterable[str], needles: Iterable[str]) -> List[str]:
    blob = "\n".join(texts)
    return [n for n in needles if n and n in blob]


# ----------------------------------------------------------------------------------------------
# phase: policy All


def test_classic_sink_sends_the_worker_consumer_password_under_all(cluster: Cluster, creds):
    """Positive control (c): what the classic runtime grants under All. A classic FileStream
    sink whose consumer.override.bootstrap.servers is the recorder, with SASL_PLAINTEXT, sends
    the worker's consumer.sasl.jaas.config password there, and no other of the worker's."""
    rest = creds.ensure("All")
    name = uniq("creds-classic-")
    cluster.create_topic(name, partitions=1)
    cfg = {"name": name, "connector.class": FILE_SINK, "topics": name, "tasks.max": "1",
           **_file_settings(cluster, name),
           "consumer.override.bootstrap.servers": creds.recorder.bootstrap,
           "consumer.override.security.protocol": SASL}
    creds.recorder.reset()
    try:
        status, body = create(rest, cfg)
        assert status == 201, f"classic create under All: HTTP {status}: {body}"
        ok = creds.recorder.wait_for(lambda r: creds.secrets["consumer"] in r.passwords(),
                                     timeout=90)
        assert ok, (f"the classic sink's consumer never sent the worker's consumer password: "
                    f"{creds.recorder.summary()}\n{connector_trace(rest, name)}")
        conn = next(c for c in creds.recorder.connections
                    if c.password == creds.secrets["consumer"])
        assert conn.user == "worker-consumer", conn.to_dict()
    finally:
        delete_connector(rest, name)
    time.sleep(1)
    assert creds.seen() == ["consumer"], creds.recorder.summary()


def test_validation_connects_to_no_admin_override_servers_under_all(cluster: Cluster, creds):
    """admin.override.bootstrap.servers at the recorder, allowed under All: validation does not
    connect there at all (issue 40: Connect's own validation of a sink connects to no cluster),
    so no password of the worker's reaches it; the override itself is no error. Its admin client
    connects there at the connector's start, as the classic runtime's DLQ admin would."""
    rest = creds.ensure("All")
    topic = uniq("creds-topic-")
    cfg = build_config(cluster, "explicit", None, creds.recorder.bootstrap, topic)
    cfg.update({"admin.override.bootstrap.servers": creds.recorder.bootstrap,
                "admin.override.security.protocol": SASL})
    creds.recorder.reset()
    result = validate(rest, cfg)
    errors = Rest.validation_errors(result)
    p = Problems("policy All, validate with admin.override.* at the recorder")
    p.check(not creds.recorder.connections,
            f"validation connected to the caller's servers: {creds.recorder.summary()}")
    p.check(not creds.seen(), f"the recorder saw the worker's {creds.seen()} password(s)")
    p.check(not any(k.startswith("admin.override.") for k in errors),
            f"the policy All refused an admin override: {errors}")
    p.done()


def test_share_consumer_bootstrap_without_admin_override_under_all(cluster: Cluster, creds):
    """share.consumer.bootstrap.servers at the recorder, SASL_PLAINTEXT, no admin override: an
    error on share.consumer.bootstrap.servers that names admin.override.bootstrap.servers (the
    group's admin must reach the consumer's cluster), and no top-level, producer or admin password
    reaches the recorder (the defect: the validation admin took the consumer's bootstrap and the
    worker's top-level SASL)."""
    rest = creds.ensure("All")
    topic = uniq("creds-topic-")
    cfg = build_config(cluster, "explicit", "share.consumer", creds.recorder.bootstrap, topic)
    creds.recorder.reset()
    result = validate(rest, cfg)
    errors = Rest.validation_errors(result)
    seen = creds.seen()
    p = Problems("policy All, validate share.consumer.bootstrap.servers without an admin override")
    p.check(any("admin.override.bootstrap.servers" in m
                for m in errors.get("share.consumer.bootstrap.servers", [])),
            f"no error on share.consumer.bootstrap.servers naming admin.override.bootstrap.servers;"
            f" errors: {errors}")
    p.check(set(seen) <= {"consumer"},
            f"the recorder saw the worker's {seen} password(s) (only the consumer's may go to a "
            f"consumer bootstrap override); connections: {creds.recorder.summary()}")
    p.check(not found_in([json.dumps(result)], creds.all_secrets()),
            "the validation answer holds a secret")
    p.done()


def test_flag_form_overrides_under_all_send_no_foreign_password(cluster: Cluster, creds):
    """The flag form with consumer.override.* and admin.override.* at the recorder: what may reach
    it is the consumer's and the admin's password, never the top-level or producer one."""
    rest = creds.ensure("All")
    topic = uniq("creds-topic-")
    cfg = build_config(cluster, "flag", "consumer.override", creds.recorder.bootstrap, topic)
    cfg.update({"admin.override.bootstrap.servers": creds.recorder.bootstrap,
                "admin.override.security.protocol": SASL})
    creds.recorder.reset()
    result = validate(rest, cfg)
    seen = creds.seen()
    p = Problems("policy All, flag form with consumer and admin overrides at the recorder")
    p.check(set(seen) <= {"consumer", "admin"},
            f"the recorder saw {seen}; connections: {creds.recorder.summary()}")
    p.check(not found_in([json.dumps(result)], creds.all_secrets()),
            "the validation answer holds a secret")
    p.done()


# ----------------------------------------------------------------------------------------------
# a policy changed after creation


def test_overrides_accepted_under_all_are_refused_at_start_under_none(cluster: Cluster, creds):
    """Created under All (state STOPPED, so nothing starts), resumed under None: the connector or
    its tasks fail naming the refused keys, and nothing connects to the recorder."""
    rest = creds.ensure("All")
    name = uniq("creds-resume-")
    cluster.create_topic(name, partitions=1)
    rec = creds.recorder.bootstrap
    overrides = {"consumer.override.bootstrap.servers": rec,
                 "consumer.override.security.protocol": SASL,
                 # Without it validation refuses a consumer bootstrap override (the admin must
                 # talk to the consumer's cluster). PLAINTEXT: nothing to authenticate at create.
                 "admin.override.bootstrap.servers": rec}
    cfg = dict(explicit_config(cluster, name, name), **overrides)
    creds.recorder.reset()
    try:
        status, body = create(rest, cfg, initial_state="STOPPED")
        assert status == 201, f"create under All (STOPPED): HTTP {status}: {body}"
        wait_for(f"{name} STOPPED", lambda: state(rest, name) == "STOPPED", timeout=60,
                 on_timeout=lambda: connector_trace(rest, name))
        seen_at_create = creds.seen()
        assert seen_at_create == [], (f"creating under All sent the worker's {seen_at_create} "
                                      f"password(s): {creds.recorder.summary()}")
        creds.recorder.reset()

        rest = creds.ensure("None")
        rest._retry(lambda: rest.put(f"/connectors/{_q(name)}/resume"),
                    lambda e: e.status in (404, 409, 500, 503), timeout=60)

        def failed() -> Optional[str]:
            try:
                st = rest.connector_status(name)
            except RestError:
                return None
            parts = [st.get("connector", {})] + st.get("tasks", [])
            if any(x.get("state") == "FAILED" for x in parts):
                return "\n".join(x.get("trace") or "" for x in parts if x.get("state") == "FAILED")
            return None

        trace = wait_for(f"{name} (or a task) FAILED under policy None", failed, timeout=90,
                         on_timeout=lambda: connector_trace(rest, name))
        time.sleep(3)  # anything started after the failure would have connected by now
        print(f"\nresumed under None -> {trace[:1500]}")
        p = Problems("resume under policy None of a connector created under All")
        for key in overrides:
            p.check(key in trace, f"the trace does not name {key}")
        for value in (rec, SASL):
            p.check(value not in trace, f"the trace holds the override's value {value!r}")
        p.check(not found_in([trace], creds.all_secrets()), "the trace holds a secret")
        p.check(creds.recorder.connections == [],
                f"the recorder saw {len(creds.recorder.connections)} connection(s) "
                f"(secrets {creds.seen()}): {creds.recorder.summary()[:3]}")
        p.done()
    finally:
        delete_connector(rest, name)


# ----------------------------------------------------------------------------------------------
# phase: policy None


@pytest.mark.parametrize("form", list(FORMS))
def test_no_override_validates_and_creates_under_none(cluster: Cluster, creds, form: str):
    """Control: without overrides the connector is fine under None, so the refusals below come
    from the overrides."""
    rest = creds.ensure("None")
    topic = uniq("creds-topic-")
    cfg = build_config(cluster, form, None, creds.recorder.bootstrap, topic)
    creds.recorder.reset()
    try:
        errors = Rest.validation_errors(validate(rest, cfg))
        assert errors == {}, f"{form} form without overrides refused under None: {errors}"
        status, body = create(rest, cfg)
        assert status == 201, f"{form} form without overrides: create HTTP {status}: {body}"
    finally:
        delete_connector(rest, cfg["name"])
    assert creds.recorder.connections == [], creds.recorder.summary()


@pytest.mark.parametrize("family", list(REFUSED_KEYS))
@pytest.mark.parametrize("form", list(FORMS))
def test_each_family_is_refused_under_none(cluster: Cluster, creds, form: str, family: str):
    rest = creds.ensure("None")
    topic = uniq("creds-topic-")
    cfg = build_config(cluster, form, family, creds.recorder.bootstrap, topic)
    values = [v for k, v in family_overrides(family, creds.recorder.bootstrap, cfg["name"]).items()
              if k in REFUSED_KEYS[family]]
    creds.recorder.reset()
    p = Problems(f"policy None, {form} form, {family}")
    created = False
    try:
        result = validate(rest, cfg)
        errors = Rest.validation_errors(result)
        print(f"\n{form}/{family}: validate -> {errors}")
        for key in REFUSED_KEYS[family]:
            p.check(key in errors, f"validation does not refuse {key}; errors: {errors}")
        p.check(not found_in(messages(errors), values),
                f"an error message holds the override's value "
                f"{found_in(messages(errors), values)}: {messages(errors)}")
        p.check(not found_in([json.dumps(result)], creds.all_secrets()),
                f"the validation answer holds the worker's {creds.seen()} secret(s)")
        seen_validate = creds.seen()
        conns_validate = len(creds.recorder.connections)

        status, body = create(rest, cfg)
        created = status == 201
        text = json.dumps(body)
        print(f"{form}/{family}: create -> HTTP {status}: {text[:600]}")
        p.check(status == 400, f"create: HTTP {status} (400 expected): {text[:600]}")
        p.check(not found_in([text], creds.all_secrets()), "the create answer holds a secret")
        if status == 400:
            p.check(not found_in([text], values),
                    f"the create refusal holds the override's value: {text[:600]}")
        p.check(conns_validate == 0,
                f"validation made {conns_validate} connection(s) to the recorder and sent the "
                f"worker's {seen_validate} password(s): {creds.recorder.summary()[:3]}")
        p.check(len(creds.recorder.connections) == conns_validate,
                f"create made {len(creds.recorder.connections) - conns_validate} connection(s) to "
                f"the recorder (secrets seen in all: {creds.seen()})")
    finally:
        if created:
            delete_connector(rest, cfg["name"])
    p.done()
