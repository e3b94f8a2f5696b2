#!/usr/bin/python3
"""Watches, from ONE process and without forking anything, the moments scale.sh measures:

  readyz   the agent's /readyz answers 200
  ready N  okna_metadata_namespaces{state="ready"} >= N in the agent's /metrics
  bound N  N Port_Bindings bound to our chassis with up=true in the Southbound DB

  watch.py --netns NS --agent-log FILE [--sb unix:PATH --chassis-uuid UUID]
           [--readyz] [--ready N] [--bound N] [--period-ms 20] [--timeout-s 120]

It prints "readyz EPOCH", "ready N EPOCH", "bound N EPOCH" as each is reached (EPOCH: when it was
seen) and exits 0 once all asked for are, 1 at the timeout. The agent's health port is read from
its log ("serving /healthz ... on 127.0.0.1:PORT"); its endpoints are polled over one keep-alive
connection made inside NS (setns). The Southbound is followed with an OVSDB monitor (JSON-RPC on
its unix socket): updates are pushed, nothing is polled.

Why: scale.sh used to poll with `ip netns exec curl` and `ovn-sbctl find` every 100 ms. On the
2-CPU fixture each such poll is a few forks and execs (and ovn-sbctl fetches the whole
Port_Binding table): CPU taken from the agent, ovn-controller and ovs-vswitchd being measured.
"""
import argparse
import ctypes
import json
import os
import re
import select
import socket
import sys
import time

CLONE_NEWNET = 0x40000000
libc = ctypes.CDLL(None, use_errno=True)
PORT_RE = re.compile(r"serving /healthz.* on 127\.0\.0\.1:([0-9]+)")
# /metrics is on the admin listener (loopback), its own port.
ADMIN_PORT_RE = re.compile(r"serving /metrics.* on 127\.0\.0\.1:([0-9]+)")
READY_RE = re.compile(r'^okna_metadata_namespaces\{state="ready"\} ([0-9.e+]+)$', re.M)


class Health:
    """GETs on the agent's health port over one keep-alive connection made inside a netns."""

    def __init__(self, netns, log_path, port_re=PORT_RE):
        self.netns, self.log_path, self.port, self.sock, self.buf = netns, log_path, None, None, b""
        self.port_re = port_re

    def _port(self):
        if self.port is None:
            try:
                with open(self.log_path, errors="replace") as f:
                    m = self.port_re.search(f.read())
            except OSError:
                m = None
            self.port = int(m.group(1)) if m else None
        return self.port

    def _connect(self):
        home = os.open("/proc/self/ns/net", os.O_RDONLY)
        target = os.open(f"/run/netns/{self.netns}", os.O_RDONLY)
        try:
            if libc.setns(target, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns")
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        finally:
            libc.setns(home, CLONE_NEWNET)
            os.close(home)
            os.close(target)
        s.settimeout(2)
        s.connect(("127.0.0.1", self.port))
        self.sock, self.buf = s, b""

    def get(self, path):
        """(status, body), or (0, "") when the agent does not answer (yet)."""
        if self._port() is None:
            return 0, ""
        try:
            if self.sock is None:
                self._connect()
            self.sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            while b"\r\n\r\n" not in self.buf:
                self._fill()
            head, rest = self.buf.split(b"\r\n\r\n", 1)
            lines = head.decode("latin-1").split("\r\n")
            status = int(lines[0].split()[1])
            length = next((int(l.split(":", 1)[1]) for l in lines[1:]
                           if l.lower().startswith("content-length:")), 0)
            while len(rest) < length:
                self.buf = rest
                self._fill()
                rest = self.buf
            self.buf = rest[length:]
            return status, rest[:length].decode(errors="replace")
        except (OSError, ValueError, IndexError):
            if self.sock:
                self.sock.close()
            self.sock, self.port = None, None  # a restarted agent logs a new port
            return 0, ""

    def _fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise OSError("closed")
        self.buf += data


class BoundPorts:
    """Port_Bindings with chassis = ours and up = true, from a Southbound monitor."""

    def __init__(self, remote, chassis_uuid):
        if not remote.startswith("unix:"):
            raise SystemExit("watch.py: --sb must be unix:PATH")
        self.chassis, self.rows, self.buf = chassis_uuid, {}, ""
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(remote[5:])
        self._send({"method": "monitor", "id": 1, "params": [
            "OVN_Southbound", None, {"Port_Binding": {"columns": ["chassis", "up"]}}]})
        self.decoder = json.JSONDecoder()

    def _send(self, msg):
        self.sock.sendall(json.dumps(msg).encode())

    def fileno(self):
        return self.sock.fileno()

    def count(self):
        return sum(1 for bound in self.rows.values() if bound)

    def _apply(self, tables):
        for uuid, change in tables.get("Port_Binding", {}).items():
            new = change.get("new") if "new" in change else change.get("initial")
            if new is None:
                self.rows.pop(uuid, None)
                continue
            chassis, up = new.get("chassis"), new.get("up")
            mine = chassis == ["uuid", self.chassis]
            is_up = up is True or up == ["set", [True]]
            self.rows[uuid] = mine and is_up

    def read(self):
        data = self.sock.recv(1 << 20)
        if not data:
            raise SystemExit("watch.py: the Southbound closed the monitor")
        self.buf += data.decode()
        while self.buf:
            self.buf = self.buf.lstrip()
            try:
                msg, end = self.decoder.raw_decode(self.buf)
            except ValueError:
                return  # an incomplete message: wait for the rest
            self.buf = self.buf[end:]
            if msg.get("id") == 1 and "result" in msg:
                self._apply(msg["result"] or {})
            elif msg.get("method") == "update":
                self._apply(msg["params"][1] or {})
            elif msg.get("method") == "echo":
                self._send({"id": msg["id"], "result": msg["params"], "error": None})


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--netns", required=True)
    p.add_argument("--agent-log", required=True)
    p.add_argument("--sb")
    p.add_argument("--chassis-uuid")
    p.add_argument("--readyz", action="store_true")
    p.add_argument("--ready", type=int)
    p.add_argument("--bound", type=int)
    p.add_argument("--period-ms", type=float, default=20)
    p.add_argument("--timeout-s", type=float, default=120)
    a = p.parse_args()
    health = Health(a.netns, a.agent_log)
    admin = Health(a.netns, a.agent_log, ADMIN_PORT_RE)
    sb = BoundPorts(a.sb, a.chassis_uuid) if a.bound is not None else None
    pending = {k for k, v in (("readyz", a.readyz), ("ready", a.ready is not None),
                              ("bound", a.bound is not None)) if v}
    deadline = time.time() + a.timeout_s

    def reached(what, text):
        print(f"{text} {time.time():.6f}", flush=True)
        pending.discard(what)

    next_poll = 0.0
    while pending and time.time() < deadline:
        now = time.time()
        if now >= next_poll:
            next_poll = now + a.period_ms / 1000
            if "readyz" in pending and health.get("/readyz")[0] == 200:
                reached("readyz", "readyz")
            if "ready" in pending:
                status, body = admin.get("/metrics")
                m = READY_RE.search(body) if status == 200 else None
                if m and float(m.group(1)) >= a.ready:
                    reached("ready", f"ready {a.ready}")
        wait = max(0.0, next_poll - time.time())
        if sb is not None and "bound" in pending:
            if select.select([sb], [], [], wait)[0]:
                sb.read()
            if sb.count() >= a.bound:
                reached("bound", f"bound {a.bound}")
        else:
            time.sleep(wait)  # the polling period, not a synchronisation
    if pending:
        print(f"watch.py: timed out waiting for {', '.join(sorted(pending))}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
