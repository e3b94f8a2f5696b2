#!/usr/bin/python3
"""The Southbound write burst of a fleet's Neutron liveness echoes (issue 28): N chassis, each
with its metadata agent echoing SB_Global.nb_cfg into its Chassis_Private row
(external_ids:neutron:ovn-metadata-sb-cfg) after every nb_cfg bump, at once (the agent before
issue 28) or after a random delay of 0 to D ms (Neutron's agent, and this agent now:
ovs.livenessDelayMaxSeconds, default 10 s; the first echo after a start is never delayed).

  liveness_burst.py [--chassis 200] [--bumps 5] [--delay-max-ms 0|10000] [--gap-s 12]

It starts its own ovsdb-server with the OVN Southbound schema on a unix socket in a temporary
directory (nothing else, no network), inserts SB_Global and N Chassis + Chassis_Private rows,
then opens N agent connections (one thread each; each monitors SB_Global and writes its own row
with a partial map update, as the agent's IDL does: one `mutate` transaction per echo) and one
neutron-server connection that monitors every Chassis_Private (what
ChassisOVNAgentWriteEvent consumes: one update per agent write). Each bump raises SB_Global.nb_cfg
(as ovn-northd does after a Neutron write with --wait); the next comes --gap-s later.

Per bump it prints: the echoes neutron-server saw, the most in any 100 ms and any 1 s window,
the time from the bump to the last echo, and ovsdb-server's CPU time over the bump. The delay
rule is the agent's (ovsdb/idl_thread.cc keepNeutronLiveness); the agents here are stand-ins
that follow it, since 200 agent processes (each with its own OVS and Kubernetes API) do not fit
on one test machine.
"""
import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

SCHEMA = "/usr/share/ovn/ovn-sb.ovsschema"
CLK_TCK = os.sysconf("SC_CLK_TCK")


class Conn:
    """A minimal OVSDB JSON-RPC client (RFC 7047): transact, monitor, echo replies."""

    def __init__(self, path, on_update=None):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.buf = ""
        self.dec = json.JSONDecoder()
        self.lock = threading.Lock()
        self.next_id = 0
        self.pending = {}
        self.on_update = on_update
        threading.Thread(target=self._reader, daemon=True).start()

    def _send(self, msg):
        with self.lock:
            self.sock.sendall(json.dumps(msg).encode())

    def _reader(self):
        while True:
            try:
                chunk = self.sock.recv(1 << 20)
            except OSError:
                return
            if not chunk:
                return
            self.buf += chunk.decode()
            while True:
                text = self.buf.lstrip()
                if not text:
                    self.buf = ""
                    break
                try:
                    msg, end = self.dec.raw_decode(text)
                except ValueError:
                    self.buf = text
                    break
                self.buf = text[end:]
                self._dispatch(msg)

    def _dispatch(self, msg):
        if msg.get("method") == "echo":
            self._send({"result": msg["params"], "id": msg["id"]})
        elif msg.get("method") == "update":
            if self.on_update:
                self.on_update(msg["params"][1])
        elif "id" in msg and msg["id"] in self.pending:
            ev, box = self.pending.pop(msg["id"])
            box.append(msg)
            ev.set()

    def call(self, method, params):
        with self.lock:
            self.next_id += 1
            rid = self.next_id
        ev, box = threading.Event(), []
        self.pending[rid] = (ev, box)
        self._send({"method": method, "params": params, "id": rid})
        if not ev.wait(60):
            raise RuntimeError(f"{method}: no answer")
        if box[0].get("error"):
            raise RuntimeError(f"{method}: {box[0]['error']}")
        return box[0]["result"]

    def transact(self, ops):
        result = self.call("transact", ["OVN_Southbound"] + ops)
        for r in result:
            if r and "error" in r:
                raise RuntimeError(f"transact: {r}")
        return result


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


class Agent:
    """One chassis's liveness echo, with the agent's delay rule."""

    def __init__(self, path, name, delay_max_ms):
        self.name = name
        self.delay_max_ms = delay_max_ms
        self.written = False
        self.due = None
        self.cfg = None
        self.cv = threading.Condition()
        self.conn = Conn(path, self._update)
        threading.Thread(target=self._writer, daemon=True).start()
        self.conn.call("monitor", ["OVN_Southbound", None, {"SB_Global": {"columns": ["nb_cfg"]}}])

    def _update(self, tables):
        for row in tables.get("SB_Global", {}).values():
            new = row.get("new")
            if not new:
                continue
            with self.cv:
                self.cfg = new["nb_cfg"]
                if self.due is None:
                    delay = 0 if not self.written else random.uniform(0, self.delay_max_ms) / 1000
                    self.due = time.monotonic() + delay
                self.cv.notify()

    def _writer(self):
        while True:
            with self.cv:
                while self.due is None or time.monotonic() < self.due:
                    self.cv.wait(None if self.due is None else self.due - time.monotonic())
                cfg, self.due, self.written = self.cfg, None, True
            self.conn.transact([{
                "op": "mutate", "table": "Chassis_Private", "where": [["name", "==", self.name]],
                "mutations": [["external_ids", "delete", ["set", ["neutron:ovn-metadata-sb-cfg"]]],
                              ["external_ids", "insert",
                               ["map", [["neutron:ovn-metadata-sb-cfg", str(cfg)]]]]]}])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--chassis", type=int, default=200)
    ap.add_argument("--bumps", type=int, default=5)
    ap.add_argument("--delay-max-ms", type=int, default=10000)
    ap.add_argument("--gap-s", type=float, default=12.0)
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="okna-liveness-")
    db, sock = os.path.join(tmp, "sb.db"), os.path.join(tmp, "sb.sock")
    subprocess.run(["ovsdb-tool", "create", db, SCHEMA], check=True)
    server = subprocess.Popen(["ovsdb-server", db, f"--remote=punix:{sock}", "--no-chdir",
                               f"--unixctl={tmp}/ctl", f"--log-file={tmp}/sb.log"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if os.path.exists(sock):
                break
            time.sleep(0.05)  # polling for the socket to appear, with a bound
        admin = Conn(sock)
        ops = [{"op": "insert", "table": "SB_Global", "row": {"nb_cfg": 0}}]
        for i in range(args.chassis):
            name = f"chassis-{i}"
            ops.append({"op": "insert", "table": "Encap", "uuid-name": f"e{i}",
                        "row": {"type": "geneve", "ip": f"127.1.{i // 250}.{i % 250 + 1}",
                                "chassis_name": name}})
            ops.append({"op": "insert", "table": "Chassis", "uuid-name": f"c{i}",
                        "row": {"name": name, "hostname": name,
                                "encaps": ["named-uuid", f"e{i}"]}})
            ops.append({"op": "insert", "table": "Chassis_Private",
                        "row": {"name": name, "chassis": ["named-uuid", f"c{i}"],
                                "external_ids": ["map", [["neutron:ovn-metadata-id", name]]]}})
        admin.transact(ops)

        seen = []  # (monotonic time, chassis) of each echo neutron-server receives
        seen_lock = threading.Lock()

        def server_update(tables):
            now = time.monotonic()
            for row in tables.get("Chassis_Private", {}).values():
                old, new = row.get("old"), row.get("new")
                if old and new and "external_ids" in old:
                    with seen_lock:
                        seen.append(now)

        neutron = Conn(sock, server_update)
        neutron.call("monitor", ["OVN_Southbound", None,
                                 {"Chassis_Private": {"columns": ["name", "external_ids"]}}])
        agents = [Agent(sock, f"chassis-{i}", args.delay_max_ms) for i in range(args.chassis)]

        def wait_echoes(n, timeout):
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                with seen_lock:
                    if len(seen) >= n:
                        return True
                time.sleep(0.05)  # polling a counter with a deadline, not a synchronisation
            return False

        # The first echo after the agents start is never delayed (Neutron's first_run).
        admin.transact([{"op": "mutate", "table": "SB_Global", "where": [],
                         "mutations": [["nb_cfg", "+=", 1]]}])
        if not wait_echoes(args.chassis, 30):
            sys.exit("the first echoes did not all arrive")
        print(f"{args.chassis} chassis, delay 0-{args.delay_max_ms} ms, {args.bumps} bumps "
              f"{args.gap_s:.0f} s apart")
        print("bump  echoes  max/100ms  max/1s  last echo after  ovsdb-server CPU")
        rows = []
        for b in range(args.bumps):
            with seen_lock:
                seen.clear()
            cpu0 = cpu_seconds(server.pid)
            t0 = time.monotonic()
            admin.transact([{"op": "mutate", "table": "SB_Global", "where": [],
                             "mutations": [["nb_cfg", "+=", 1]]}])
            wait_echoes(args.chassis, args.gap_s + args.delay_max_ms / 1000 + 30)
            rest = t0 + args.gap_s - time.monotonic()
            if rest > 0:
                time.sleep(rest)  # the gap between bumps: part of the workload, not a sync
            cpu = cpu_seconds(server.pid) - cpu0
            with seen_lock:
                times = sorted(t - t0 for t in seen)

            def peak(window):
                best, j = 0, 0
                for i, t in enumerate(times):
                    while times[j] < t - window:
                        j += 1
                    best = max(best, i - j + 1)
                return best

            rows.append((len(times), peak(0.1), peak(1.0), times[-1] if times else 0, cpu))
            print(f"{b + 1:>4}  {len(times):>6}  {peak(0.1):>9}  {peak(1.0):>6}  "
                  f"{times[-1] if times else 0:>13.2f} s  {cpu:>14.2f} s")
        n = len(rows)
        print(f"mean  {sum(r[0] for r in rows) / n:>6.0f}  {sum(r[1] for r in rows) / n:>9.1f}  "
              f"{sum(r[2] for r in rows) / n:>6.1f}  {sum(r[3] for r in rows) / n:>13.2f} s  "
              f"{sum(r[4] for r in rows) / n:>14.2f} s")
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
