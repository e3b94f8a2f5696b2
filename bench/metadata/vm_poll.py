#!/usr/bin/python3
"""Polls http://169.254.169.254/openstack/latest/meta_data.json from many VM namespaces at once,
from one single-threaded process (sockets are created inside each namespace with setns(2)), and
prints, per namespace, the wall-clock time of the first 200 answer (scale.sh, measures 2 and 3).

  vm_poll.py [--period-ms 10] [--connect-timeout-ms 20] [--timeout-s 60] NETNS...

Every period, each namespace that has not answered yet and has no attempt in flight starts a
fresh TCP connection; an attempt that has not connected within --connect-timeout-ms is dropped
(a SYN that OVN drops is retransmitted only after 1 s: a new attempt is faster). Output: one line
"NETNS EPOCH" per namespace that answered (EPOCH = when its 200 status line arrived), then
"# answered A/N" on stderr. Exit status 0 when all answered.
"""
import argparse
import ctypes
import errno
import os
import select
import socket
import sys
import time

CLONE_NEWNET = 0x40000000
libc = ctypes.CDLL(None, use_errno=True)
REQ = (b"GET /openstack/latest/meta_data.json HTTP/1.1\r\nHost: 169.254.169.254\r\n"
       b"Connection: close\r\n\r\n")


def socket_in(nsfd, home):
    if libc.setns(nsfd, CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "setns")
    try:
        return socket.socket(socket.AF_INET, socket.SOCK_STREAM | socket.SOCK_NONBLOCK)
    finally:
        libc.setns(home, CLONE_NEWNET)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--period-ms", type=float, default=10)
    p.add_argument("--connect-timeout-ms", type=float, default=20)
    p.add_argument("--timeout-s", type=float, default=60)
    p.add_argument("netns", nargs="+")
    a = p.parse_args()
    home = os.open("/proc/self/ns/net", os.O_RDONLY)
    fds = {ns: os.open(f"/run/netns/{ns}", os.O_RDONLY) for ns in a.netns}
    done = {}
    inflight = {}  # fileno -> [ns, sock, started, connected, buf]
    poller = select.poll()
    deadline = time.time() + a.timeout_s
    next_round = 0.0

    def drop(fd):
        ns, s = inflight.pop(fd)[:2]
        poller.unregister(fd)
        s.close()

    while len(done) < len(fds) and time.time() < deadline:
        now = time.time()
        if now >= next_round:
            busy = {v[0] for v in inflight.values()}
            for ns, nsfd in fds.items():
                if ns in done or ns in busy:
                    continue
                s = socket_in(nsfd, home)
                err = s.connect_ex(("169.254.169.254", 80))
                if err not in (0, errno.EINPROGRESS):
                    s.close()
                    continue
                inflight[s.fileno()] = [ns, s, now, False, b""]
                poller.register(s.fileno(), select.POLLOUT)
            next_round = now + a.period_ms / 1000
        for fd, ev in poller.poll(max(1, int((next_round - time.time()) * 1000))):
            st = inflight.get(fd)
            if st is None:
                continue
            ns, s = st[0], st[1]
            if not st[3]:
                if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0:
                    drop(fd)
                    continue
                st[3] = True
                s.send(REQ)
                poller.modify(fd, select.POLLIN)
                continue
            try:
                chunk = s.recv(4096)
            except OSError:
                chunk = b""
            st[4] += chunk
            if b"\r\n" in st[4] or not chunk:
                if st[4].startswith(b"HTTP/1.1 200") or st[4].startswith(b"HTTP/1.0 200"):
                    done[ns] = time.time()
                drop(fd)
        now = time.time()
        for fd in [fd for fd, v in inflight.items()
                   if (not v[3] and now - v[2] > a.connect_timeout_ms / 1000) or now - v[2] > 2]:
            drop(fd)
    for ns, t in sorted(done.items(), key=lambda kv: kv[1]):
        print(f"{ns} {t:.6f}")
    print(f"# answered {len(done)}/{len(fds)}", file=sys.stderr)
    sys.exit(0 if len(done) == len(fds) else 1)


if __name__ == "__main__":
    main()
