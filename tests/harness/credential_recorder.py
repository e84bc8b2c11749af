#!/usr/bin/env python3
"""A fake Kafka broker that records the credentials clients send it (issue 31).

It listens on 127.0.0.1 (default port ``SHARESINK_PORT_BASE + 88``) and speaks just enough of the
Kafka protocol for a real client to get as far as sending its SASL/PLAIN password:

- **ApiVersions** (v0-v5): answered in the version asked (the response header is always v0, as
  Kafka's is); a newer version gets ``UNSUPPORTED_VERSION`` in the v0 format with the supported
  range, as a real broker answers, so the client retries lower. The answer offers SaslHandshake
  v0-v1, SaslAuthenticate v0-v2 and every other API key (so a plaintext client goes on to send
  its next request, which is recorded).
- **SaslHandshake** (v0, v1): PLAIN is accepted, any other mechanism is answered with
  ``UNSUPPORTED_SASL_MECHANISM`` offering PLAIN. After a v0 handshake the next frame is the bare
  SASL token (no Kafka header), as in Kafka's old protocol.
- **SaslAuthenticate** (v0-v2): the PLAIN token ``authzid NUL user NUL password`` is recorded
  and answered with ``SASL_AUTHENTICATION_FAILED``; the connection is then closed.
- **Anything else**: its API key is recorded and the connection closed. A frame that is not
  Kafka at all (a TLS ClientHello reads as a 369 MB frame) is noted and the connection closed.

Per connection it records the peer, the client ids of the request headers, the (api key,
version) pairs, the SASL mechanism asked for, the PLAIN authzid/user/password, and every byte
received, so a test can assert that a secret never appeared in any byte of any connection:

    from harness.credential_recorder import CredentialRecorder
    with CredentialRecorder() as rec:            # or rec = CredentialRecorder(); rec.start()
        ...                                      # point a client at rec.bootstrap
        assert rec.secrets_seen(["s1", "s2"]) == []
        rec.connections                          # [Connection], see Connection
        rec.reset()                              # forget what was recorded so far

Command line (one JSON line per connection as it closes; Ctrl-C or SIGTERM stops it and
prints a summary)::

    python3 tests/harness/credential_recorder.py [--port N] [--secret S ...] [--raw]

Formats follow Kafka 4.4's message definitions (clients/src/main/resources/common/message/
ApiVersions*.json, SaslHandshake*.json, SaslAuthenticate*.json, RequestHeader.json,
ResponseHeader.json). Python standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Tuple

# Port offset from SHARESINK_PORT_BASE (tests/harness/README.md's port table, DEVELOPING.md).
OFF_CREDENTIAL_RECORDER = 88

API_SASL_HANDSHAKE = 17
API_VERSIONS = 18
API_SASL_AUTHENTICATE = 36

# The versions this recorder answers: what Kafka 4.4 defines ("validVersions").
API_VERSIONS_MAX = 5
SASL_HANDSHAKE_MAX = 1
SASL_AUTHENTICATE_MAX = 2
# Offered for every other API key, only so a client goes on to send that request (recorded,
# then the connection is closed); the recorder implements none of them.
OTHER_API_KEYS = range(0, 101)
OTHER_API_MAX_VERSION = 100

ERR_NONE = 0
ERR_UNSUPPORTED_SASL_MECHANISM = 33
ERR_UNSUPPORTED_VERSION = 35
ERR_SASL_AUTHENTICATION_FAILED = 58
AUTH_FAILED_MESSAGE = "Authentication failed: Invalid username or password"

# A Kafka request is far below this; a larger size prefix is not Kafka (e.g. TLS).
MAX_FRAME = 16 * 1024 * 1024
# How long a connection may stay silent before the recorder closes it.
IDLE_TIMEOUT = 30.0
# After the last answer, how long to wait for the client to close first (so it reads the
# answer rather than a reset, and reports the authentication error instead of retrying).
LINGER = 2.0


def default_port() -> int:
    return int(os.environ.get("SHARESINK_PORT_BASE", "29000")) + OFF_CREDENTIAL_RECORDER


# ------------------------------------------------------------------------------------------
# wire primitives


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError("truncated")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def int16(self) -> int:
        return struct.unpack(">h", self.take(2))[0]

    def int32(self) -> int:
        return struct.unpack(">i", self.take(4))[0]

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            b = self.take(1)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise ValueError("varint too long")

    def nullable_string(self) -> Optional[str]:
        n = self.int16()
        return None if n < 0 else self.take(n).decode("utf-8", "replace")

    def bytes32(self) -> bytes:
        n = self.int32()
        return b"" if n < 0 else self.take(n)

    def compact_bytes(self) -> bytes:
        n = self.uvarint() - 1
        return b"" if n < 0 else self.take(n)

    def skip_tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self.take(self.uvarint())


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _string(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def _nullable_string(s: Optional[str]) -> bytes:
    return struct.pack(">h", -1) if s is None else _string(s)


def _compact_nullable_string(s: Optional[str]) -> bytes:
    if s is None:
        return _uvarint(0)
    b = s.encode()
    return _uvarint(len(b) + 1) + b


def _compact_bytes(b: bytes) -> bytes:
    return _uvarint(len(b) + 1) + b


NO_TAGGED_FIELDS = _uvarint(0)


def _request_header_is_flexible(api_key: int, version: int) -> bool:
    """Request header v2 (flexible) or v1, for the requests the recorder parses."""
    if api_key == API_VERSIONS:
        return version >= 3
    if api_key == API_SASL_AUTHENTICATE:
        return version >= 2
    return False  # SaslHandshake is never flexible


def _supported() -> List[Tuple[int, int, int]]:
    explicit = {API_SASL_HANDSHAKE: (0, SASL_HANDSHAKE_MAX),
                API_VERSIONS: (0, API_VERSIONS_MAX),
                API_SASL_AUTHENTICATE: (0, SASL_AUTHENTICATE_MAX)}
    out = []
    for key in OTHER_API_KEYS:
        lo, hi = explicit.get(key, (0, OTHER_API_MAX_VERSION))
        out.append((key, lo, hi))
    return out


def api_versions_response(version: int) -> bytes:
    """ApiVersionsResponse body in `version`; UNSUPPORTED_VERSION in v0 format beyond v5."""
    if version > API_VERSIONS_MAX or version < 0:
        # As Kafka's broker: v0 layout, only ApiVersions' own range (KIP-511).
        return struct.pack(">hihhh", ERR_UNSUPPORTED_VERSION, 1, API_VERSIONS, 0, API_VERSIONS_MAX)
    keys = _supported()
    if version <= 2:
        body = struct.pack(">hi", ERR_NONE, len(keys))
        body += b"".join(struct.pack(">hhh", *k) for k in keys)
        if version >= 1:
            body += struct.pack(">i", 0)  # ThrottleTimeMs
        return body
    body = struct.pack(">h", ERR_NONE) + _uvarint(len(keys) + 1)
    body += b"".join(struct.pack(">hhh", *k) + NO_TAGGED_FIELDS for k in keys)
    body += struct.pack(">i", 0) + NO_TAGGED_FIELDS
    return body


def sasl_handshake_response(error: int, mechanisms: Iterable[str]) -> bytes:
    mechs = list(mechanisms)
    return struct.pack(">hi", error, len(mechs)) + b"".join(_string(m) for m in mechs)


def sasl_authenticate_response(version: int, error: int, message: Optional[str]) -> bytes:
    if version >= 2:
        return (struct.pack(">h", error) + _compact_nullable_string(message) + _compact_bytes(b"")
                + struct.pack(">q", 0) + NO_TAGGED_FIELDS)
    body = struct.pack(">h", error) + _nullable_string(message) + struct.pack(">i", 0)
    if version >= 1:
        body += struct.pack(">q", 0)  # SessionLifetimeMs
    return body


def _frame(correlation_id: int, body: bytes, flexible_header: bool) -> bytes:
    header = struct.pack(">i", correlation_id) + (NO_TAGGED_FIELDS if flexible_header else b"")
    return struct.pack(">i", len(header) + len(body)) + header + body


# ------------------------------------------------------------------------------------------
# what is recorded


@dataclass
class Request:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: Optional[str]


@dataclass
class Connection:
    """What one client connection sent. `raw` holds every byte received, size prefixes included."""
    peer: str
    opened_at: float
    closed_at: Optional[float] = None
    requests: List[Request] = field(default_factory=list)
    client_ids: List[str] = field(default_factory=list)
    sasl_mechanism: Optional[str] = None
    authzid: Optional[str] = None
    user: Optional[str] = None
    password: Optional[str] = None
    auth_bytes: List[bytes] = field(default_factory=list)
    raw: bytearray = field(default_factory=bytearray)
    notes: List[str] = field(default_factory=list)

    @property
    def api_keys(self) -> List[int]:
        return [r.api_key for r in self.requests]

    def to_dict(self, raw: bool = False) -> dict:
        d = {"peer": self.peer, "opened_at": self.opened_at, "closed_at": self.closed_at,
             "client_ids": self.client_ids,
             "requests": [[r.api_key, r.api_version] for r in self.requests],
             "sasl_mechanism": self.sasl_mechanism, "authzid": self.authzid, "user": self.user,
             "password": self.password, "raw_bytes": len(self.raw), "notes": self.notes}
        if raw:
            d["raw"] = bytes(self.raw).decode("latin-1")
        return d


def parse_plain(token: bytes) -> Tuple[Optional[str], Optional[str], Optional[str]]:
    """RFC 4616: [authzid] NUL authcid NUL passwd; (None, None, None) if it is not one."""
    parts = token.split(b"\0")
    if len(parts) != 3:
        return None, None, None
    return tuple(p.decode("utf-8", "replace") for p in parts)  # type: ignore[return-value]


# ------------------------------------------------------------------------------------------
# the server


class _Closed(Exception):
    pass


class CredentialRecorder:
    """The fake broker; see the module docstring. Thread-based: one thread accepts, one serves
    each connection. `port=0` picks a free port."""

    def __init__(self, host: str = "127.0.0.1", port: Optional[int] = None,
                 on_close=None):
        self.host = host
        self.port = default_port() if port is None else port
        self._on_close = on_close
        self._lock = threading.Lock()
        self._connections: List[Connection] = []
        self._sockets: Dict[int, socket.socket] = {}
        self._threads: List[threading.Thread] = []
        self._listener: Optional[socket.socket] = None
        self._acceptor: Optional[threading.Thread] = None
        self._stopping = threading.Event()

    # ---- lifecycle

    def start(self) -> "CredentialRecorder":
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((self.host, self.port))
        except OSError as e:
            s.close()
            raise OSError(f"credential recorder cannot listen on {self.host}:{self.port}: {e} "
                          "(another recorder or cluster on this SHARESINK_PORT_BASE?)") from e
        s.listen(64)
        self.port = s.getsockname()[1]
        self._listener = s
        self._stopping.clear()
        self._acceptor = threading.Thread(target=self._accept_loop, name="recorder-accept",
                                          daemon=True)
        self._acceptor.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._listener is not None:
            # shutdown() wakes the accept() blocked in the acceptor thread (Linux); close() alone
            # would leave the listening socket open until that accept() returned.
            for end in (lambda: self._listener.shutdown(socket.SHUT_RDWR), self._listener.close):
                try:
                    end()
                except OSError:
                    pass
        with self._lock:
            socks = list(self._sockets.values())
            threads = list(self._threads)
        for c in socks:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for t in threads + ([self._acceptor] if self._acceptor else []):
            t.join(timeout=5)
        self._listener = None

    def __enter__(self) -> "CredentialRecorder":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def bootstrap(self) -> str:
        """host:port, for a client's bootstrap.servers."""
        return f"{self.host}:{self.port}"

    # ---- what was recorded

    @property
    def connections(self) -> List[Connection]:
        with self._lock:
            return list(self._connections)

    def reset(self) -> None:
        """Forget every connection recorded so far (open ones keep recording into theirs)."""
        with self._lock:
            self._connections.clear()

    def passwords(self) -> List[str]:
        return [c.password for c in self.connections if c.password is not None]

    def secrets_seen(self, secrets: Iterable[str]) -> List[str]:
        """The secrets that occur (UTF-8) in any byte any connection sent, in the given order."""
        with self._lock:
            blobs = [bytes(c.raw) for c in self._connections]
        return [s for s in secrets if s and any(s.encode() in b for b in blobs)]

    def wait_for(self, check, timeout: float = 30.0, interval: float = 0.1) -> bool:
        """Wait until check(self) is true (True) or `timeout` passes (False)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if check(self):
                return True
            time.sleep(interval)
        return bool(check(self))

    def summary(self) -> List[dict]:
        return [c.to_dict() for c in self.connections]

    # ---- serving

    def _accept_loop(self) -> None:
        assert self._listener is not None
        while not self._stopping.is_set():
            try:
                sock, addr = self._listener.accept()
            except OSError:
                return
            conn = Connection(peer=f"{addr[0]}:{addr[1]}", opened_at=time.time())
            t = threading.Thread(target=self._serve, args=(sock, conn),
                                 name=f"recorder-{addr[1]}", daemon=True)
            with self._lock:
                self._connections.append(conn)
                self._sockets[id(conn)] = sock
                self._threads = [x for x in self._threads if x.is_alive()] + [t]
            t.start()

    def _recv_exact(self, sock: socket.socket, conn: Connection, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = sock.recv(min(n - len(buf), 65536))
            if not chunk:
                raise _Closed()
            conn.raw += chunk
            buf += chunk
        return bytes(buf)

    def _drain(self, sock: socket.socket, conn: Connection, seconds: float) -> None:
        """Record whatever else arrives until the client closes or `seconds` pass."""
        deadline = time.monotonic() + seconds
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                sock.settimeout(left)
                chunk = sock.recv(65536)
                if not chunk:
                    return
                conn.raw += chunk
        except OSError:
            return

    def _serve(self, sock: socket.socket, conn: Connection) -> None:
        try:
            sock.settimeout(IDLE_TIMEOUT)
            self._converse(sock, conn)
        except _Closed:
            pass
        except socket.timeout:
            conn.notes.append(f"idle for {IDLE_TIMEOUT:.0f}s: closed")
        except OSError as e:
            if not self._stopping.is_set():
                conn.notes.append(f"socket error: {e}")
        except Exception as e:  # noqa: BLE001 - a malformed request ends that connection only
            conn.notes.append(f"cannot parse: {e!r}")
        finally:
            try:
                sock.close()
            except OSError:
                pass
            conn.closed_at = time.time()
            with self._lock:
                self._sockets.pop(id(conn), None)
            if self._on_close is not None:
                self._on_close(conn)

    def _finish(self, sock: socket.socket, conn: Connection) -> None:
        """Let the client read the last answer and close first; then close."""
        try:
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        self._drain(sock, conn, LINGER)
        raise _Closed()

    def _converse(self, sock: socket.socket, conn: Connection) -> None:
        raw_token_next = False  # after SaslHandshake v0: a bare SASL token, no Kafka header
        while True:
            size = struct.unpack(">i", self._recv_exact(sock, conn, 4))[0]
            if size < 0 or size > MAX_FRAME:
                conn.notes.append(f"not a Kafka frame (size prefix {size}; TLS?)")
                self._drain(sock, conn, 0.5)
                raise _Closed()
            payload = self._recv_exact(sock, conn, size)
            if raw_token_next:
                self._record_token(conn, payload)
                # Kafka's old protocol has no error frame: a failed authentication is a close.
                raise _Closed()
            r = _Reader(payload)
            api_key, version, correlation_id = r.int16(), r.int16(), r.int32()
            client_id = r.nullable_string()
            conn.requests.append(Request(api_key, version, correlation_id, client_id))
            if client_id is not None and client_id not in conn.client_ids:
                conn.client_ids.append(client_id)
            if api_key in (API_VERSIONS, API_SASL_AUTHENTICATE) and \
                    _request_header_is_flexible(api_key, version):
                r.skip_tagged_fields()

            if api_key == API_VERSIONS:
                # The response header is v0 for every ApiVersions version (ApiVersionsResponse.json).
                sock.sendall(_frame(correlation_id, api_versions_response(version), False))
            elif api_key == API_SASL_HANDSHAKE:
                if version > SASL_HANDSHAKE_MAX:
                    conn.notes.append(f"SaslHandshake v{version} is not supported: closed")
                    raise _Closed()
                mechanism = r.nullable_string()
                conn.sasl_mechanism = mechanism
                error = ERR_NONE if mechanism == "PLAIN" else ERR_UNSUPPORTED_SASL_MECHANISM
                sock.sendall(_frame(correlation_id, sasl_handshake_response(error, ["PLAIN"]), False))
                if error != ERR_NONE:
                    self._finish(sock, conn)
                raw_token_next = version == 0
            elif api_key == API_SASL_AUTHENTICATE:
                if version > SASL_AUTHENTICATE_MAX:
                    conn.notes.append(f"SaslAuthenticate v{version} is not supported: closed")
                    raise _Closed()
                token = r.compact_bytes() if version >= 2 else r.bytes32()
                self._record_token(conn, token)
                body = sasl_authenticate_response(version, ERR_SASL_AUTHENTICATION_FAILED,
                                                  AUTH_FAILED_MESSAGE)
                sock.sendall(_frame(correlation_id, body, version >= 2))
                self._finish(sock, conn)
            else:
                conn.notes.append(f"api key {api_key} v{version}: not implemented, closed")
                raise _Closed()

    @staticmethod
    def _record_token(conn: Connection, token: bytes) -> None:
        conn.auth_bytes.append(token)
        if conn.sasl_mechanism in (None, "PLAIN"):
            authzid, user, password = parse_plain(token)
            if user is not None:
                conn.authzid, conn.user, conn.password = authzid, user, password


# ------------------------------------------------------------------------------------------
# command line


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=None,
                    help=f"default SHARESINK_PORT_BASE + {OFF_CREDENTIAL_RECORDER} ({default_port()}); "
                         "0: any free port")
    ap.add_argument("--secret", action="append", default=[],
                    help="report whether this string appears in any byte received (repeatable)")
    ap.add_argument("--raw", action="store_true", help="print the bytes received (latin-1) too")
    a = ap.parse_args(argv)

    def closed(conn: Connection) -> None:
        print(json.dumps(conn.to_dict(raw=a.raw)), flush=True)

    rec = CredentialRecorder(a.host, a.port, on_close=closed).start()
    print(f"credential recorder listening on {rec.bootstrap}", file=sys.stderr, flush=True)
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    done.wait()
    rec.stop()
    print(json.dumps({"connections": len(rec.connections), "passwords": rec.passwords(),
                      "secrets_seen": rec.secrets_seen(a.secret)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
