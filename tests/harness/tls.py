"""SASL_SSL: the test CA, the broker's key store, the clients' trust stores (made with openssl
and keytool) and the SCRAM credentials the broker is formatted with."""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path
from typing import Dict

from harness.common import HarnessError, _java, _props, _run, _write_atomic
from harness.tools import KafkaTools

SCRAM_USER = "sharesink"
SCRAM_PASSWORD = "sharesink-secret"
TLS_PASSWORD = "sharesink-tls"

# Two tenants of a shared Connect cluster, each its own principal (SCRAM over SASL_SSL), for the
# tests with ACLs (ensure_scram_user; a broker with authorizer=True). Unlike SCRAM_USER they are
# no super users.
TENANT_USERS = {"tenant-a": "tenant-a-secret", "tenant-b": "tenant-b-secret"}


class TlsMaterial:
    """TLS material and SASL_SSL client settings: a service object that owns ``tls_dir`` (the
    test CA, the broker's key store, the clients' trust stores and properties files), made by
    ``ensure()`` (the broker calls it before a SASL_SSL start). `sasl_ssl_bootstrap` is the
    cluster's SASL_SSL listeners; `tools` (``KafkaTools``) add SCRAM users on the running broker."""

    def __init__(self, tls_dir: Path, sasl_ssl_bootstrap: str, tools: KafkaTools):
        self.tls_dir = tls_dir
        self.sasl_ssl_bootstrap = sasl_ssl_bootstrap
        self._tools = tools

    @property
    def ca_pem(self) -> Path:
        return self.tls_dir / "ca.pem"

    @property
    def truststore_jks(self) -> Path:
        return self.tls_dir / "truststore.jks"

    @property
    def truststore_p12(self) -> Path:
        return self.tls_dir / "truststore.p12"

    @property
    def broker_keystore(self) -> Path:
        """The broker's key and certificate (PKCS12, password TLS_PASSWORD)."""
        return self.tls_dir / "broker.p12"

    truststore = truststore_p12
    truststore_password = TLS_PASSWORD
    scram_user = SCRAM_USER
    scram_password = SCRAM_PASSWORD

    @property
    def sasl_ssl_client_properties(self) -> Path:
        """Client config file (SCRAM-SHA-512 over TLS) for Kafka tools and tests."""
        return self.tls_dir / "client-sasl-ssl.properties"

    def sasl_ssl_client_properties_file(self, mechanism: str = "SCRAM-SHA-512",
                                       user: str = SCRAM_USER) -> Path:
        """A client config file for `mechanism` (SCRAM-SHA-512 or SCRAM-SHA-256) and `user`, for
        `--command-config` of the Kafka tools."""
        suffix = "" if user == SCRAM_USER else f"-{user}"
        path = self.tls_dir / f"client-sasl-ssl-{mechanism.lower()}{suffix}.properties"
        _write_atomic(path, _props({k: v for k, v in
                                    self.sasl_ssl_client_config(mechanism, user).items()
                                    if k != "bootstrap.servers"}))
        return path

    def ensure_scram_user(self, user: str) -> None:
        """Gives TENANT_USERS' `user` its SCRAM-SHA-512 credential on the running broker (an
        AlterUserScramCredentials through the PLAINTEXT listener; idempotent)."""
        tools = self._tools
        tools.run_tool(tools.config_command, "--bootstrap-server", tools.bootstrap, "--alter",
                       "--entity-type", "users", "--entity-name", user, "--add-config",
                       f"SCRAM-SHA-512=[iterations=4096,password={TENANT_USERS[user]}]")

    def sasl_ssl_client_config(self, mechanism: str = "SCRAM-SHA-512",
                               user: str = SCRAM_USER) -> Dict[str, str]:
        """SASL_SSL client settings for `user` (the harness's super user, or a TENANT_USERS
        name)."""
        password = SCRAM_PASSWORD if user == SCRAM_USER else TENANT_USERS[user]
        return {
            "bootstrap.servers": self.sasl_ssl_bootstrap,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": mechanism,
            "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
                                f'username="{user}" password="{password}";',
            "ssl.truststore.location": str(self.truststore_p12),
            "ssl.truststore.type": "PKCS12",
            "ssl.truststore.password": TLS_PASSWORD,
        }

    def ensure(self) -> None:
        """Makes the material that is missing (all of it anew when any file is)."""
        d = self.tls_dir
        needed = [d / n for n in ("ca.pem", "broker.p12", "truststore.p12", "truststore.jks",
                                  "client-sasl-ssl.properties")]
        if all(p.exists() for p in needed):
            return
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
        openssl = shutil.which("openssl")
        keytool = str(Path(_java()).resolve().parent / "keytool")
        if not os.path.exists(keytool):
            keytool = shutil.which("keytool") or "keytool"
        if not openssl:
            raise HarnessError("openssl not found (apt-get install -y openssl)")

        def sh(*cmd):
            p = _run([str(c) for c in cmd], timeout=120, what=str(cmd[0]))
            if p.returncode != 0:
                raise HarnessError(f"{shlex.join(map(str, cmd))} failed:\n{p.stdout}")

        sh(openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "3650",
           "-keyout", d / "ca.key", "-out", d / "ca.pem", "-subj", "/CN=sharesink-test-ca",
           "-addext", "basicConstraints=critical,CA:TRUE",
           "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        sh(openssl, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", d / "broker.key",
           "-out", d / "broker.csr", "-subj", "/CN=127.0.0.1")
        (d / "broker.ext").write_text(
            "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
            "extendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n")
        sh(openssl, "x509", "-req", "-in", d / "broker.csr", "-CA", d / "ca.pem",
           "-CAkey", d / "ca.key", "-CAcreateserial", "-out", d / "broker.pem", "-days", "3650",
           "-sha256", "-extfile", d / "broker.ext")
        sh(openssl, "pkcs12", "-export", "-in", d / "broker.pem", "-inkey", d / "broker.key",
           "-certfile", d / "ca.pem", "-name", "broker", "-out", d / "broker.p12",
           "-passout", f"pass:{TLS_PASSWORD}")
        for store, typ in (("truststore.p12", "PKCS12"), ("truststore.jks", "JKS")):
            sh(keytool, "-importcert", "-noprompt", "-alias", "sharesink-test-ca",
               "-file", d / "ca.pem", "-keystore", d / store, "-storetype", typ,
               "-storepass", TLS_PASSWORD)
        _write_atomic(d / "client-sasl-ssl.properties",
                      _props({k: v for k, v in self.sasl_ssl_client_config().items()
                              if k != "bootstrap.servers"}))
