"""Positive controls for the credential recorder (tests/harness/credential_recorder.py).

A test that asserts "the recorder saw no secret" proves nothing unless the recorder does see the
secret when a real client sends it. These tests point real clients at it, with SASL_PLAINTEXT
and PLAIN, and check that it has the password, the user and the requests they sent:

- (a) Kafka's own Java client (4.4's Admin, through TopicCommand --list): ApiVersions v0,
  SaslHandshake v1, SaslAuthenticate v2; the tool then fails with the recorder's
  authentication error.
- (b) sharesink's native engine (Rust, through JNI, from the plugin archive the worker runs):
  `NativeShareConsumerEngine`, what a share-mode task opens with share.engine=native, started by
  NativeEngineSaslProbe.java with Java's source launcher; SaslHandshake v1, SaslAuthenticate v2.
- (c) the classic runtime's baseline (a classic sink's consumer sends the worker's
  consumer.sasl.* password to a consumer.override.bootstrap.servers under policy All) is in
  test_share_17_credentials.py, which starts the worker it needs anyway.

Neither test needs the broker or a worker: only the Kafka jars and the plugin archive. The
recorder listens on SHARESINK_PORT_BASE + 88.
"""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import pytest

from harness.cluster import TOPIC_COMMAND, Cluster, _java, default_plugin_archive, ensure_kafka_lib
from harness.credential_recorder import (API_SASL_AUTHENTICATE, API_SASL_HANDSHAKE, API_VERSIONS,
                                         CredentialRecorder)
from helpers import uniq

PROBE = Path(__file__).resolve().parent / "NativeEngineSaslProbe.java"


def plain_jaas(user: str, password: str) -> str:
    return ('org.apache.kafka.common.security.plain.PlainLoginModule required '
            f'username="{user}" password="{password}";')


@pytest.fixture
def recorder():
    rec = CredentialRecorder()
    try:
        rec.start()
    except OSError as e:
        pytest.fail(str(e), pytrace=False)
    yield rec
    rec.stop()


def test_java_client_sends_its_plain_password(recorder: CredentialRecorder, tmp_path):
    password = uniq("java-client-secret-")
    props = tmp_path / "client.properties"
    props.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                     f"sasl.jaas.config={plain_jaas('tool-user', password)}\n"
                     "request.timeout.ms=5000\ndefault.api.timeout.ms=10000\n")
    p = Cluster().run_tool(TOPIC_COMMAND, "--bootstrap-server", recorder.bootstrap, "--list",
                           "--command-config", props, check=False, timeout=90)
    summary = recorder.summary()
    assert recorder.secrets_seen([password]) == [password], summary
    conn = next(c for c in recorder.connections if c.password is not None)
    assert (conn.sasl_mechanism, conn.user, conn.password) == ("PLAIN", "tool-user", password)
    # The Java client's SASL authenticator: ApiVersions v0 first, then handshake and authenticate.
    assert [(r.api_key, r.api_version) for r in conn.requests] == \
        [(API_VERSIONS, 0), (API_SASL_HANDSHAKE, 1), (API_SASL_AUTHENTICATE, 2)], summary
    # The client read the recorder's answer as an authentication failure (not a broken wire).
    assert p.returncode != 0
    assert "Authentication failed" in p.stderr + p.stdout, p.stderr[-3000:]


def test_native_engine_sends_its_plain_password(recorder: CredentialRecorder, tmp_path):
    archive = default_plugin_archive()
    if archive is None or not archive.is_file():
        pytest.fail("no sharesink plugin archive: run `mvn -q -DskipTests package` first",
                    pytrace=False)
    with zipfile.ZipFile(archive) as zf:
        zf.extractall(tmp_path / "plugin")
    jars = sorted((tmp_path / "plugin").glob("*/sharesink-connect-*.jar"))
    assert jars, f"no sharesink-connect jar in {archive}"
    password = uniq("native-engine-secret-")
    client_id = uniq("native-probe-")
    settings = {
        "bootstrap.servers": recorder.bootstrap,
        "group.id": uniq("recorder-probe-"),
        "client.id": client_id,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": plain_jaas("engine-user", password),
        "request.timeout.ms": "5000",
    }
    cmd = [_java(), "-Xmx256m", "-cp", f"{jars[0]}:{ensure_kafka_lib()}/*", str(PROBE),
           "recorder-probe-topic"] + [f"{k}={v}" for k, v in settings.items()]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                       cwd=tmp_path)
    out = p.stdout + p.stderr
    summary = recorder.summary()
    assert "START FAILED" in p.stdout and "AUTHENTICATION" in p.stdout, out[-3000:]
    assert recorder.secrets_seen([password]) == [password], summary
    conn = next(c for c in recorder.connections if c.password is not None)
    assert (conn.sasl_mechanism, conn.user, conn.password) == ("PLAIN", "engine-user", password)
    assert conn.client_ids == [client_id], summary
    # The engine authenticates first (rust/engine/src/sasl.rs), without an ApiVersions.
    assert [(r.api_key, r.api_version) for r in conn.requests] == \
        [(API_SASL_HANDSHAKE, 1), (API_SASL_AUTHENTICATE, 2)], summary
