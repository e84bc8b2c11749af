#!/usr/bin/env python3
"""A TCP proxy for fault tests: forwards 127.0.0.1:<listen> to <target> and can stop forwarding
without closing anything, as a network partition without RST does.

Python standard library only (asyncio). Controlled from other processes through a line protocol
on a control port (127.0.0.1 only): send one command line, read one JSON line back.

Modes (commands):
  forward    normal: every connection forwards (connections made `dead` stay dead).
  blackhole  nothing is forwarded in either direction on any connection, old or new; no socket is
             closed. Bytes already read are held, the rest waits in the kernel buffers (so the
             senders' TCP flow control stops them); an EOF is held like data. Connections
             accepted meanwhile are not connected upstream yet, and one its client closes
             before the blackhole ends never is: in a real partition its SYN never got through,
             so nothing the client wrote on it can reach the broker later.
  resume     back to forward: the held bytes (and EOFs) flow on the old connections, and the
             connections accepted during the blackhole that are still open connect upstream.
  dead       every connection open now stays silent forever (never forwards, never closes),
             while connections accepted from now on forward normally.
  status     just report.
Reply: {"ok": true, "mode": "...", "connections": N, "dead": D, "accepted": A}; an unknown
command gets {"ok": false, "error": "..."}.

    python3 tests/harness/proxy.py --listen-port 29096 --target-port 29095 --control-port 29097
    printf 'blackhole\\n' | nc -q1 127.0.0.1 29097    # or harness.proxy.command(29097, "blackhole")
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import socket
import sys
from typing import Optional, Set

CHUNK = 64 * 1024
MODES = ("forward", "blackhole", "resume", "dead")


class Proxy:
    def __init__(self, target_host: str, target_port: int):
        self.target = (target_host, target_port)
        self.mode = "forward"
        self.changed = asyncio.Condition()
        self.links: Set["Link"] = set()
        self.accepted = 0

    def forwarding(self, link: "Link") -> bool:
        return not link.dead and self.mode == "forward"

    async def gate(self, link: "Link") -> None:
        """Returns once `link` may forward; waits out a blackhole, forever if it is dead."""
        async with self.changed:
            await self.changed.wait_for(lambda: self.forwarding(link))

    async def set_mode(self, command: str) -> None:
        async with self.changed:
            if command == "dead":
                for link in self.links:
                    link.dead = True
                self.mode = "forward"
            elif command in ("forward", "resume"):
                self.mode = "forward"
            elif command == "blackhole":
                self.mode = "blackhole"
            self.changed.notify_all()

    def status(self) -> dict:
        return {"ok": True, "mode": self.mode, "connections": len(self.links),
                "dead": sum(1 for l in self.links if l.dead), "accepted": self.accepted}

    async def accept(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        self.accepted += 1
        link = Link()
        self.links.add(link)
        try:
            _nodelay(client_w)
            # A connection made during a blackhole reaches the broker only once forwarding.
            held = await self.hold_until_forwarding(link, client_r)
            if held is None:
                return
            try:
                up_r, up_w = await asyncio.open_connection(*self.target)
            except OSError:
                return
            _nodelay(up_w)
            if held:
                up_w.write(held)
                await up_w.drain()
            await asyncio.gather(self.pump(link, client_r, up_w), self.pump(link, up_r, client_w))
        except asyncio.CancelledError:
            pass  # the proxy is stopping
        finally:
            self.links.discard(link)
            for w in (client_w,) + ((up_w,) if "up_w" in locals() else ()):
                w.close()

    async def hold_until_forwarding(self, link: "Link", client_r: asyncio.StreamReader) -> Optional[bytes]:
        """Waits until `link` may forward, keeping what its client sends meanwhile. None when the
        client closed the connection first: such a connection never reaches the broker. A
        stale request on it (say a ShareFetch the client gave up on) would otherwise acquire
        records for a response nobody reads, locking them for a record-lock duration after the
        blackhole ends, which a real partition cannot do."""
        if self.forwarding(link):
            return b""
        held = bytearray()
        gate = asyncio.ensure_future(self.gate(link))
        try:
            while not gate.done():
                read = asyncio.ensure_future(client_r.read(CHUNK))
                done, _ = await asyncio.wait({gate, read}, return_when=asyncio.FIRST_COMPLETED)
                if read not in done:
                    read.cancel()  # a cancelled read consumes nothing
                    break
                data = read.result()
                if not data:
                    return None
                held += data
        finally:
            gate.cancel()
        return bytes(held)

    async def pump(self, link: "Link", src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        try:
            while True:
                await self.gate(link)          # no reading during a blackhole ...
                data = await src.read(CHUNK)
                await self.gate(link)          # ... and what was read is held until it ends
                if not data:
                    if dst.can_write_eof():
                        dst.write_eof()
                    return
                dst.write(data)
                await dst.drain()
        except (ConnectionError, OSError):
            # Closing the other side ends the opposite pump too.
            dst.close()


class Link:
    """One proxied connection."""

    __slots__ = ("dead", "__weakref__")

    def __init__(self):
        self.dead = False


def _nodelay(w: asyncio.StreamWriter) -> None:
    sock = w.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


async def control(proxy: Proxy, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
    try:
        line = (await r.readline()).decode("ascii", "replace").strip().lower()
        if line in MODES:
            await proxy.set_mode(line)
            reply = proxy.status()
        elif line == "status":
            reply = proxy.status()
        else:
            reply = {"ok": False, "error": f"unknown command {line!r}; one of {MODES + ('status',)}"}
        w.write((json.dumps(reply) + "\n").encode())
        await w.drain()
    finally:
        w.close()


def command(control_port: int, cmd: str, host: str = "127.0.0.1", timeout: float = 10) -> dict:
    """Sends one command to a running proxy's control port; returns its JSON reply."""
    with socket.create_connection((host, control_port), timeout=timeout) as s:
        s.sendall((cmd + "\n").encode())
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    reply = json.loads(data.decode())
    if not reply.get("ok"):
        raise RuntimeError(f"proxy on {host}:{control_port} refused {cmd!r}: {reply}")
    return reply


async def main_async(args: argparse.Namespace) -> None:
    proxy = Proxy(args.target_host, args.target_port)
    server = await asyncio.start_server(proxy.accept, "127.0.0.1", args.listen_port)
    ctl = await asyncio.start_server(lambda r, w: control(proxy, r, w), "127.0.0.1", args.control_port)
    print(f"proxy 127.0.0.1:{args.listen_port} -> {args.target_host}:{args.target_port}, "
          f"control 127.0.0.1:{args.control_port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    server.close()
    ctl.close()


def main(argv: Optional[list] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--listen-port", type=int, required=True)
    ap.add_argument("--target-host", default="127.0.0.1")
    ap.add_argument("--target-port", type=int, required=True)
    ap.add_argument("--control-port", type=int, required=True)
    asyncio.run(main_async(ap.parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
