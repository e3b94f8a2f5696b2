#!/usr/bin/python3
"""A STAND-IN for the metadata agent, only to exercise run.sh's agent slot end to end until the
real agent lands (its figures are no baseline of issue 7):

  AGENT_CMD='/usr/bin/python3 bench/metadata/standin_agent.py' bench/metadata/run.sh

It does what the agent will do, crudely: plumbs ovnmeta-<net> (chassis.sh
bind-metadata-by-hand), creates its listening socket INSIDE that namespace (setns, socket, bind,
listen, setns back: the socket stays there), and proxies each request to Nova with the signed
headers (HMAC-SHA256 of the instance id with the shared secret), keep-alive both ways, one
thread per client connection (Python's ThreadingHTTPServer).
"""
import ctypes
import hashlib
import hmac
import http.client
import http.server
import os
import socket
import subprocess
import threading

CLONE_NEWNET = 0x40000000
libc = ctypes.CDLL("libc.so.6", use_errno=True)

env = os.environ
bench_dir = env["OKOF_BENCH_DIR"]
net_id = env["OKOF_NET_ID"]
nova = (env.get("OKOF_NOVA_HOST", "127.0.0.1"), int(env.get("OKOF_NOVA_PORT", "8775")))
secret = open(env["OKOF_SHARED_SECRET_FILE"], "rb").read()
# A real agent finds these from the VM's IP in the SB; the bench has one VM.
instance_id = env.get("OKOF_INSTANCE_ID", "4b1a0cc0-7c2d-4e6a-9a9b-1a2b3c4d5e6f")
tenant_id = env.get("OKOF_TENANT_ID", "0d5b7a1f4c1e4b7f9d5c3e2a1b0c9d8e")
signature = hmac.new(secret, instance_id.encode(), hashlib.sha256).hexdigest()
here = os.path.dirname(os.path.abspath(__file__))
chassis_sh = os.path.join(here, "..", "..", "tests", "fixtures", "ovn", "chassis.sh")


def listen_in_netns(netns, addr):
    own = os.open("/proc/self/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{netns}", os.O_RDONLY)
    try:
        if libc.setns(target, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns {netns}")
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(128)
    finally:
        libc.setns(own, CLONE_NEWNET)
        os.close(own)
        os.close(target)
    return sock


local = threading.local()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body are two writes: without TCP_NODELAY, Nagle + the client's delayed ACK add
    # 40 ms to every response.
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def do_GET(self):
        conn = getattr(local, "nova", None)
        if conn is None:
            conn = local.nova = http.client.HTTPConnection(*nova, timeout=10)
        headers = {"X-Forwarded-For": self.client_address[0], "X-Instance-ID": instance_id,
                   "X-Tenant-ID": tenant_id, "X-Instance-ID-Signature": signature}
        try:
            conn.request("GET", self.path, headers=headers)
            resp = conn.getresponse()
            body = resp.read()
            status = resp.status if resp.status in (200, 400, 403, 404, 409) else 500
            ctype = resp.getheader("Content-Type", "text/plain")
        except (OSError, http.client.HTTPException):
            local.nova = None
            status, body, ctype = 500, b"", "text/plain"
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def main():
    subprocess.run(["bash", chassis_sh, "bind-metadata-by-hand", f"{bench_dir}/chassis", net_id],
                   check=True)
    sock = listen_in_netns(f"ovnmeta-{net_id}", ("169.254.169.254", 80))
    server = http.server.ThreadingHTTPServer(("169.254.169.254", 80), Handler,
                                             bind_and_activate=False)
    server.socket.close()
    server.socket = sock
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
