#!/usr/bin/python3
"""Writes N networks into a chassis fixture's NB in ONE transaction, each as ML2/OVN writes it
(chassis.sh add-network / add-vm: a neutron-<uuid> Logical_Switch, its metadata localport .2, and
one compute port .11 with requested-chassis = OUR chassis), and records DIR/net/<id>/info like
add-network does (so `chassis.sh stop` removes the ovnmeta-<id> namespaces the agent makes).
No DHCP_Options (scale.sh configures the VMs statically). Waits for northd (--wait=sb sync).
Prints one line per network: NET_ID MD_IP MD_MAC VM_LSP VM_MAC VM_IP PREFIX GATEWAY DEVICE_ID

  scale_nets.py DIR N FIRST_INDEX      (network i gets 10.<100 + i/256>.<i%256>.0/24)
"""
import os
import subprocess
import sys
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sb_load import Ovsdb, omap  # noqa: E402


def main():
    d, n, first = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    info = dict(line.split("=", 1) for line in open(f"{d}/info").read().split())
    chassis = info["chassis"]
    nb = Ovsdb(f"{d}/nb.sock")
    ops, out = [], []
    for i in range(first, first + n):
        net, project = str(uuid.uuid4()), uuid.uuid4().hex
        ls, base = f"neutron-{net}", f"10.{100 + i // 256}.{i % 256}"
        md_lsp, vm_lsp, dev = str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4())
        md_mac = "fa:16:3e:%02x:%02x:02" % (i >> 8 & 255, i & 255)
        vm_mac = "fa:16:3e:%02x:%02x:11" % (i >> 8 & 255, i & 255)
        md_ip, vm_ip = f"{base}.2", f"{base}.11"
        common = {"neutron:network_name": ls, "neutron:port_name": "",
                  "neutron:project_id": project, "neutron:security_group_ids": ""}
        ops.append({"op": "insert", "table": "Logical_Switch_Port", "uuid-name": f"m{i}",
                    "row": {"name": md_lsp, "type": "localport", "addresses": f"{md_mac} {md_ip}",
                            "enabled": True, "options": omap({"requested-chassis": ""}),
                            "external_ids": omap(dict(common, **{
                                "neutron:cidrs": f"{md_ip}/24",
                                "neutron:device_id": f"ovnmeta-{net}",
                                "neutron:device_owner": "network:distributed",
                                "neutron:revision_number": "2"}))}})
        ops.append({"op": "insert", "table": "Logical_Switch_Port", "uuid-name": f"p{i}",
                    "row": {"name": vm_lsp, "addresses": f"{vm_mac} {vm_ip}",
                            "port_security": f"{vm_mac} {vm_ip}", "enabled": True,
                            "options": omap({"requested-chassis": chassis,
                                             "mcast_flood_reports": "true"}),
                            "external_ids": omap(dict(common, **{
                                "neutron:cidrs": f"{vm_ip}/24", "neutron:device_id": dev,
                                "neutron:device_owner": "compute:nova",
                                "neutron:revision_number": "4"}))}})
        ops.append({"op": "insert", "table": "Logical_Switch",
                    "row": {"name": ls,
                            "ports": ["set", [["named-uuid", f"m{i}"], ["named-uuid", f"p{i}"]]],
                            "external_ids": omap({
                                "neutron:network_name": f"okof-scale-{i}", "neutron:mtu": "1442",
                                "neutron:revision_number": "2",
                                "neutron:availability_zone_hints": ""}),
                            "other_config": omap({"mcast_snoop": "false",
                                                  "mcast_flood_unregistered": "false",
                                                  "vlan-passthru": "false"})}})
        os.makedirs(f"{d}/net/{net}", exist_ok=True)
        with open(f"{d}/net/{net}/info", "w") as f:
            f.write(f"net_id={net}\nname=okof-scale-{i}\nlogical_switch={ls}\ncidr={base}.0/24\n"
                    f"prefix=24\ngateway={base}.1\nmtu=1442\nproject_id={project}\n"
                    f"metadata_lsp={md_lsp}\nmetadata_ip={md_ip}\nmetadata_mac={md_mac}\n"
                    f"metadata_netns=ovnmeta-{net}\nmetadata_tap_host=tap{net[:10]}0\n"
                    f"metadata_tap_ns=tap{net[:10]}1\n")
        out.append(f"{net} {md_ip} {md_mac} {vm_lsp} {vm_mac} {vm_ip} 24 {base}.1 {dev}")
    nb.transact("OVN_Northbound", ops)
    subprocess.run(["ovn-nbctl", f"--db=unix:{d}/nb.sock", "--timeout=600", "--wait=sb", "sync"],
                   check=True)
    print("\n".join(out))


if __name__ == "__main__":
    main()
