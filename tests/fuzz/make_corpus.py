#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpus: tests/fuzz/corpus/request_path/ and corpus/sb_view/.

The files are committed; run this again after changing a seed here (it rewrites both folders,
keeping any other file in them, such as a crash input added by hand, see README.md):
    python3 tests/fuzz/make_corpus.py
"""

import os

HERE = os.path.dirname(os.path.abspath(__file__))

HOST = b"Host: 169.254.169.254\r\n"
CLOUD_INIT = (b"User-Agent: Cloud-Init/22.4.2\r\nAccept-Encoding: gzip, deflate\r\n"
              b"Accept: */*\r\nConnection: keep-alive\r\n")


def get(target, extra=b"", version=b"1.1"):
    return b"GET " + target + b" HTTP/" + version + b"\r\n" + HOST + extra + b"\r\n"


REQUEST_PATH = {
    # What cloud-init asks first (OpenStack and EC2 flavours), and HTTP/1.0.
    "cloud_init_openstack": get(b"/openstack/latest/meta_data.json", CLOUD_INIT),
    "cloud_init_ec2": get(b"/2009-04-04/meta-data/instance-id", CLOUD_INIT),
    "http10": get(b"/latest/meta-data/", b"", b"1.0"),
    # Several requests in one write; the last closes the connection.
    "pipelined": get(b"/openstack") + get(b"/openstack/latest/user_data") +
    get(b"/latest/meta-data/local-ipv4", b"Connection: close\r\n"),
    # The password POST (Nova's largest body), then a HEAD on the same connection.
    "password_post": b"POST /openstack/2013-04-04/password HTTP/1.1\r\n" + HOST +
    b"Content-Length: 64\r\n\r\n" + b"p" * 64 + b"HEAD /openstack/latest HTTP/1.1\r\n" + HOST +
    b"\r\n",
    # Chunked bodies: with an extension and a trailer; after Expect: 100-continue.
    "chunked_body": b"POST /openstack/2013-04-04/password HTTP/1.1\r\n" + HOST +
    b"Transfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\n"
    b"X-Trailer: t\r\n\r\n" + get(b"/openstack/latest/vendor_data2.json"),
    "expect_continue": b"PUT /openstack/latest/x HTTP/1.1\r\n" + HOST +
    b"Expect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    # Framing the proxy must refuse: the body would be read as a second request.
    "te_chunked_identity": b"POST /x HTTP/1.1\r\n" + HOST +
    b"Transfer-Encoding: chunked, identity\r\n\r\n" + get(b"/smuggled"),
    "te_gzip_chunked": b"POST /x HTTP/1.1\r\n" + HOST +
    b"Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
    "te_and_content_length": b"POST /x HTTP/1.1\r\n" + HOST +
    b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + get(b"/smuggled"),
    "te_twice": b"POST /x HTTP/1.1\r\n" + HOST +
    b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    # Absolute-form targets (RFC 9112 3.2.2), with a fragment, and an empty query.
    "absolute_form": b"GET http://169.254.169.254/latest/meta-data/?x=1#frag HTTP/1.1\r\n" +
    HOST + b"\r\n" + get(b"HTTPS://[fe80::a9fe:a9fe]:80") + get(b"/openstack?#f"),
    # Targets the proxy must not serve: asterisk, authority form, a bare authority.
    "odd_targets": b"OPTIONS * HTTP/1.1\r\n" + HOST + b"\r\n",
    # The VM's own copies of the headers the proxy sets: never forwarded.
    "forged_headers": get(b"/openstack/latest/meta_data.json",
                          b"X-Instance-ID: 11111111-2222-3333-4444-555555555555\r\n"
                          b"X-Forwarded-For: 10.0.0.99\r\nX-Tenant-ID: other\r\n"
                          b"X-Instance-ID-Signature: 00\r\n"),
    # Over the limits: a header past 8192 bytes (431), a body past 16384 bytes (413).
    "huge_header": get(b"/openstack", b"X-Big: " + b"a" * 9000 + b"\r\n"),
    "huge_body": b"POST /openstack/2013-04-04/password HTTP/1.1\r\n" + HOST +
    b"Content-Length: 20000\r\n\r\n" + b"b" * 64,
}

# sb_view layout (sb_view_fuzz.cc): NUL-separated fields; header (port count, flags); per port
# control byte, logical_port, type, mac[0], neutron:cidrs, device_id, project_id; then the
# datapath names of dp0..dp3.
BOUND, MIGRATING = 1, 2
# neutron:device_owner is not network:distributed (an ovn-octavia health-monitor localport).
NOT_METADATA_PORT = 32


def dp(n):
    """Control bits for datapath n (0-3; 4: none; 5: one without Datapath_Binding)."""
    return n << 2


def sb_view(ports, names, flags=0):
    # A NUL would end the field: the count is taken mod 9 and bit 7 of the flags and of the
    # control byte is unused, so none of them is ever 0.
    fields = [bytes([len(ports) or 9, 0x80 | flags])]
    for control, *values in ports:
        fields.append(bytes([0x80 | control]))
        fields.extend(values)
    fields.extend(names)
    return b"\0".join(fields)


NET1 = b"0f3b4c5d-6e7f-4a8b-9c0d-1e2f3a4b5c6d"
NET2 = b"0f3b4c5d-6e11-4a8b-9c0d-aaaaaaaaaaaa"
DEVICE = b"8d9a8b6e-1f2c-4c3d-9e4f-5a6b7c8d9e0f"
PROJECT = b"0a1b2c3d4e5f60718293a4b5c6d7e8f9"


def localport(n, mac=b"fa:16:3e:00:00:02", cidrs=b"10.0.0.2/24"):
    return (dp(n), b"md-port-%d" % n, b"localport", mac + b" 10.0.0.2", cidrs, b"", PROJECT)


def vif(n, control=BOUND, device=DEVICE, project=PROJECT, mac=b"fa:16:3e:00:00:05 10.0.0.5",
        kind=b"", name=None):
    return (dp(n) | control, name or b"vm-port-%d" % n, kind, mac, b"10.0.0.5/24", device,
            project)


SB_VIEW = {
    "valid_one_network": sb_view([localport(0), vif(0)], [b"neutron-" + NET1]),
    # Two networks (ids share their first 10 characters), a VM migrating here, an external port.
    "valid_two_networks": sb_view(
        [localport(0), vif(0), localport(1, cidrs=b"192.168.1.2/24 fd00::2/64"),
         vif(1, MIGRATING, mac=b"FA:16:3E:00:00:06 192.168.1.6 fd00::6"),
         vif(1, BOUND, kind=b"external", name=b"baremetal")],
        [b"neutron-" + NET1, b"neutron-" + NET2]),
    # The request-splitting device_id: a UUID, CRLF and a whole second request.
    "device_id_crlf": sb_view(
        [localport(0), vif(0, device=DEVICE + b"\r\n\r\nGET / HTTP/1.1\r\nHost: nova")],
        [b"neutron-" + NET1]),
    "project_id_crlf": sb_view(
        [localport(0), vif(0, project=PROJECT + b"\r\nX-Instance-ID: " + DEVICE)],
        [b"neutron-" + NET1]),
    "project_id_empty": sb_view([localport(0), vif(0, project=b"")], [b"neutron-" + NET1]),
    # U+202E (right-to-left override) in a port name and a device_id.
    "rlo_bytes": sb_view(
        [localport(0), vif(0, name=b"vm-\xe2\x80\xaefdp.exe"),
         vif(0, device=b"\xe2\x80\xae" + DEVICE[3:])],
        [b"neutron-" + NET1]),
    # Datapath names that must never name a file or an interface.
    "datapath_dotdot": sb_view([localport(0), vif(0), localport(1), vif(1)],
                               [b"neutron-../../etc", b"neutron-neutron-"]),
    "datapath_long": sb_view([localport(0), vif(0)], [b"neutron-" + NET1 + NET1]),
    # An ovn-octavia localport first (smaller uuid) on network 0; network 1 IPv6-only with an
    # IPv6 VM here, its only localport not the metadata port on network 2.
    "octavia_and_ipv6_only": sb_view(
        [(dp(0) | NOT_METADATA_PORT, b"ovn-lb-hm", b"localport", b"fa:16:3e:00:0e:0e 10.0.0.250",
          b"10.0.0.250/24", b"", PROJECT), localport(0), vif(0),
         localport(1, mac=b"fa:16:3e:00:01:02 fd00::2", cidrs=b"fd00::2/64"),
         vif(1, mac=b"fa:16:3e:00:01:05 fd00::5"),
         (dp(2) | NOT_METADATA_PORT, b"ovn-lb-hm-2", b"localport", b"fa:16:3e:00:0e:0f 10.2.0.3",
          b"10.2.0.3/24", b"", PROJECT), vif(2)],
        [b"neutron-" + NET1, b"neutron-" + NET2, b"neutron-" + NET2[:-1] + b"b"]),
    "empty_fields": sb_view([(0, b"", b"", b"", b"", b"", b"")] * 3, [b"", b""]),
    # A VM on a datapath without a Datapath_Binding, one on none, one without a localport.
    "missing_rows": sb_view([vif(5), vif(4), vif(0)], [b"neutron-" + NET1], flags=0),
    # A localport without a MAC, one with no IPv4 cidr; not synced, IPv6 off.
    "bad_localports": sb_view(
        [localport(0, mac=b"not-a-mac"), vif(0), localport(1, cidrs=b"fd00::2/64 10.0.0.300/24"),
         vif(1)],
        [b"neutron-" + NET1, b"neutron-" + NET2], flags=1 | 2),
    # Values at and past the limits: an upper-case UUID, a 256-byte project id, a router port.
    "limits": sb_view(
        [localport(0), vif(0, device=DEVICE.upper()), vif(0, project=b"p" * 256),
         vif(0, kind=b"patch"), vif(0, device=b"not-a-uuid")],
        [b"neutron-" + NET1]),
}


def write(folder, seeds):
    path = os.path.join(HERE, "corpus", folder)
    os.makedirs(path, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(path, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    write("request_path", REQUEST_PATH)
    write("sb_view", SB_VIEW)
