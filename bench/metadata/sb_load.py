#!/usr/bin/python3
"""Fills a chassis fixture's OVN databases with load: N VIF Port_Bindings bound to OTHER (fake)
chassis, in other datapaths, written the way ML2/OVN writes them (a neutron-<uuid> logical switch
per network, its metadata localport, compute ports with neutron:cidrs / device_id / project_id).
The metadata agent's per-request cost must not grow with them (issue 7, measure 4).

  sb_load.py DIR add N [--ports-per-network 20] [--chassis 50]
  sb_load.py DIR count
  sb_load.py DIR clear

DIR is a chassis.sh directory (nb.sock, sb.sock). Fast: one NB transaction for all the logical
switches and ports, ovn-northd turns them into Port_Bindings (waited for with
`ovn-nbctl --wait=sb sync`), then one SB transaction binds them all to the fake chassis (chassis
set, up=true), as each remote ovn-controller would. JSON-RPC straight to the unix sockets: a
20,000-row transaction is far beyond what a command line can carry. Everything it writes carries
external_ids okof:load=1, and `clear` removes exactly that. Prints the timings.
"""
import argparse
import json
import socket
import subprocess
import sys
import time
import uuid

MARK = ["okof:load", "1"]


class Ovsdb:
    """A minimal OVSDB JSON-RPC client over a unix socket (RFC 7047 transact)."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.buf = ""
        self.decoder = json.JSONDecoder()
        self.next_id = 0

    def _recv(self):
        while True:
            text = self.buf.lstrip()
            if text:
                try:
                    msg, end = self.decoder.raw_decode(text)
                    self.buf = text[end:]
                    return msg
                except ValueError:
                    pass
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise RuntimeError("ovsdb-server closed the connection")
            self.buf += chunk.decode()

    def transact(self, db, ops):
        self.next_id += 1
        req = {"method": "transact", "params": [db] + ops, "id": self.next_id}
        self.sock.sendall(json.dumps(req).encode())
        while True:
            msg = self._recv()
            if msg.get("method") == "echo":
                self.sock.sendall(json.dumps({"result": msg["params"], "id": msg["id"]}).encode())
                continue
            if msg.get("id") != self.next_id:
                continue
            if msg.get("error"):
                raise RuntimeError(f"transact error: {msg['error']}")
            for i, r in enumerate(msg["result"]):
                if r and "error" in r:
                    raise RuntimeError(f"op {i} ({ops[i] if i < len(ops) else 'commit'}): {r}")
            return msg["result"]


def omap(d):
    return ["map", [[k, v] for k, v in d.items()]]


def marked():
    return [["external_ids", "includes", ["map", [MARK]]]]


def count(nb):
    return len(nb.transact("OVN_Northbound", [{
        "op": "select", "table": "Logical_Switch_Port",
        "where": marked() + [["type", "==", ""]], "columns": ["_uuid"]}])[0]["rows"])


def ensure_chassis(sb, n):
    rows = sb.transact("OVN_Southbound", [{
        "op": "select", "table": "Chassis", "where": marked(),
        "columns": ["_uuid", "name"]}])[0]["rows"]
    have = {r["name"]: r["_uuid"][1] for r in rows}
    ops = []
    names = []
    for i in range(n):
        name = f"okof-fake-chassis-{i}"
        if name in have:
            continue
        # Loopback encap addresses: the tunnels ovn-controller makes to them never carry a packet
        # (no logical switch spans our chassis and theirs).
        ip = f"127.1.{i // 250}.{i % 250 + 1}"
        ops.append({"op": "insert", "table": "Encap", "uuid-name": f"e{i}",
                    "row": {"type": "geneve", "ip": ip, "chassis_name": name,
                            "options": omap({"csum": "true"})}})
        ops.append({"op": "insert", "table": "Chassis", "uuid-name": f"c{i}",
                    "row": {"name": name, "hostname": name,
                            "encaps": ["named-uuid", f"e{i}"],
                            "external_ids": omap(dict([MARK]))}})
        names.append(name)
    if ops:
        result = sb.transact("OVN_Southbound", ops)
        for j, name in enumerate(names):
            have[name] = result[2 * j + 1]["uuid"][1]
    return [have[f"okof-fake-chassis-{i}"] for i in range(n)]


def add(args, nb, sb):
    timings = {}
    t0 = time.monotonic()
    chassis = ensure_chassis(sb, args.chassis)
    timings["fake_chassis_s"] = time.monotonic() - t0

    start = count(nb)
    n, per = args.n, args.ports_per_network
    first_net = -(-start // per)  # networks already made (each holds up to `per` ports)
    ops = []
    made = 0
    net = first_net
    while made < n:
        net_id = str(uuid.uuid4())
        ls = f"neutron-{net_id}"
        project = uuid.uuid4().hex
        base = f"10.{128 + (net >> 8) % 128}.{net & 255}"
        port_refs = []
        md_name = str(uuid.uuid4())
        md_mac = "fa:16:3e:%02x:%02x:%02x" % (net >> 16 & 255, net >> 8 & 255, net & 255)
        ops.append({"op": "insert", "table": "Logical_Switch_Port", "uuid-name": f"m{net}",
                    "row": {"name": md_name, "type": "localport", "addresses": f"{md_mac} {base}.2",
                            "external_ids": omap({
                                "neutron:cidrs": f"{base}.2/24",
                                "neutron:device_id": f"ovnmeta-{net_id}",
                                "neutron:device_owner": "network:distributed",
                                "neutron:network_name": ls, "neutron:port_name": "",
                                "neutron:project_id": project, "neutron:revision_number": "2",
                                "neutron:security_group_ids": "", MARK[0]: "meta"})}})
        port_refs.append(["named-uuid", f"m{net}"])
        for k in range(min(per, n - made)):
            i = start + made
            mac = "fa:17:%02x:%02x:%02x:%02x" % (i >> 24 & 255, i >> 16 & 255, i >> 8 & 255, i & 255)
            ip = f"{base}.{10 + k}"
            ops.append({"op": "insert", "table": "Logical_Switch_Port", "uuid-name": f"p{i}",
                        "row": {"name": str(uuid.uuid4()), "addresses": f"{mac} {ip}",
                                "port_security": f"{mac} {ip}", "enabled": True,
                                "options": omap({
                                    "requested-chassis": f"okof-fake-chassis-{i % args.chassis}",
                                    "mcast_flood_reports": "true"}),
                                "external_ids": omap({
                                    "neutron:cidrs": f"{ip}/24",
                                    "neutron:device_id": str(uuid.uuid4()),
                                    "neutron:device_owner": "compute:nova",
                                    "neutron:network_name": ls, "neutron:port_name": "",
                                    "neutron:project_id": project,
                                    "neutron:revision_number": "4",
                                    "neutron:security_group_ids": "", MARK[0]: MARK[1]})}})
            port_refs.append(["named-uuid", f"p{i}"])
            made += 1
        ops.append({"op": "insert", "table": "Logical_Switch",
                    "row": {"name": ls, "ports": ["set", port_refs],
                            "external_ids": omap({
                                "neutron:network_name": f"okof-load-{net}", "neutron:mtu": "1442",
                                "neutron:revision_number": "2",
                                "neutron:availability_zone_hints": "", MARK[0]: MARK[1]}),
                            "other_config": omap({"mcast_snoop": "false",
                                                  "mcast_flood_unregistered": "false",
                                                  "vlan-passthru": "false"})}})
        net += 1
    t0 = time.monotonic()
    nb.transact("OVN_Northbound", ops)
    timings["nb_transaction_s"] = time.monotonic() - t0

    t0 = time.monotonic()
    subprocess.run(["ovn-nbctl", f"--db=unix:{args.dir}/nb.sock", "--timeout=1800", "--wait=sb",
                    "sync"], check=True)
    timings["northd_to_sb_s"] = time.monotonic() - t0

    t0 = time.monotonic()
    rows = sb.transact("OVN_Southbound", [{
        "op": "select", "table": "Port_Binding",
        "where": marked() + [["type", "==", ""], ["chassis", "==", ["set", []]]],
        "columns": ["_uuid", "options"]}])[0]["rows"]
    index = {name: i for i, name in enumerate(f"okof-fake-chassis-{i}" for i in range(args.chassis))}
    updates = []
    for r in rows:
        requested = dict(r["options"][1]).get("requested-chassis", "okof-fake-chassis-0")
        updates.append({"op": "update", "table": "Port_Binding",
                        "where": [["_uuid", "==", r["_uuid"]]],
                        "row": {"chassis": ["uuid", chassis[index.get(requested, 0)]],
                                "up": True}})
    if updates:
        sb.transact("OVN_Southbound", updates)
    timings["bind_in_sb_s"] = time.monotonic() - t0
    # northd copies each up=true to the NB: let it finish so a benchmark starts on a quiet system.
    t0 = time.monotonic()
    subprocess.run(["ovn-nbctl", f"--db=unix:{args.dir}/nb.sock", "--timeout=1800", "--wait=sb",
                    "sync"], check=True)
    timings["northd_settle_s"] = time.monotonic() - t0
    timings["bound_now"] = len(updates)
    total = count(nb)
    timings["total_load_ports"] = total
    timings["networks_added"] = net - first_net
    timings["elapsed_s"] = sum(v for k, v in timings.items() if k.endswith("_s"))
    print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in timings.items()}))


def clear(args, nb, sb):
    t0 = time.monotonic()
    nb.transact("OVN_Northbound", [{"op": "delete", "table": "Logical_Switch", "where": marked()}])
    sb.transact("OVN_Southbound", [{"op": "delete", "table": "Chassis", "where": marked()}])
    subprocess.run(["ovn-nbctl", f"--db=unix:{args.dir}/nb.sock", "--timeout=1800", "--wait=sb",
                    "sync"], check=True)
    print(json.dumps({"cleared_s": round(time.monotonic() - t0, 3)}))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("dir")
    p.add_argument("action", choices=["add", "count", "clear"])
    p.add_argument("n", type=int, nargs="?", default=0)
    p.add_argument("--ports-per-network", type=int, default=20)
    p.add_argument("--chassis", type=int, default=50)
    args = p.parse_args()
    if not 1 <= args.ports_per_network <= 240:
        sys.exit("--ports-per-network must be 1..240 (one /24 per network)")
    nb = Ovsdb(f"{args.dir}/nb.sock")
    sb = Ovsdb(f"{args.dir}/sb.sock")
    if args.action == "add":
        add(args, nb, sb)
    elif args.action == "count":
        print(count(nb))
    else:
        clear(args, nb, sb)


if __name__ == "__main__":
    main()
