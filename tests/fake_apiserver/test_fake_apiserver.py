"""Tests for the fake kube-apiserver, checked against the captured v1.26 transcripts.

Run from the repo root:  python3 -m unittest discover -s tests/fake_apiserver -v
Each test class starts the server as a subprocess on 127.0.0.1 port 0.
"""
import base64
import glob
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "fake_apiserver.py")
TRANSCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "transcripts")
SAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")
ADMIN, AGENT = "admin-token-123", "agent-token-456"
UA = "capture-agent/1.0 (linux/amd64)"
RV_RE = re.compile(rb'"resourceVersion":"\d+"')

TLS_DIR = None


def setUpModule():
    global TLS_DIR
    TLS_DIR = tempfile.mkdtemp(prefix="fake-apiserver-tls-")


def tearDownModule():
    shutil.rmtree(TLS_DIR, ignore_errors=True)


# --------------------------------------------------------------------------
# Transcripts and fixtures
# --------------------------------------------------------------------------

class Transcript:
    """One NN?-*.txt capture: request line/headers/body, response status/headers/body (exact bytes)."""

    def __init__(self, prefix):
        path = [p for p in glob.glob(os.path.join(TRANSCRIPTS, prefix + "-*.txt"))][0]
        with open(path, "rb") as f:
            data = f.read()
        self.body = data[data.index(b"\n", data.index(b"=== RESPONSE BODY")) + 1:]
        req = data[data.index(b"\n", data.index(b"=== REQUEST (")) + 1:].split(b"\n\n")[0].decode()
        self.request_line, *hdrs = req.split("\n")
        self.method, self.path = self.request_line.split(" ")[:2]
        self.request_headers = dict(h.split(": ", 1) for h in hdrs)
        self.request_body = None
        m = re.search(rb"=== REQUEST BODY \((\d+) bytes", data)
        if m:
            start = data.index(b"\n", m.start()) + 1
            self.request_body = data[start:start + int(m.group(1))]
        resp = data[data.index(b"\n", data.index(b"=== RESPONSE STATUS")) + 1:].split(b"\n\n")[0].decode()
        status_line, *hdrs = resp.split("\n")
        self.status = int(status_line.split(" ")[1])
        self.header_names = [h.split(": ", 1)[0] for h in hdrs]
        self.headers = dict(h.split(": ", 1) for h in hdrs)


def transcript_events(prefix):
    path = glob.glob(os.path.join(TRANSCRIPTS, prefix + "-*.events.jsonl"))[0]
    with open(path, "rb") as f:
        return [line + b"\n" for line in f.read().split(b"\n") if line]


def fixture_objects(directory):
    """Node n1 (01c) and pods p-init/p-overhead/p-plain (03h) exactly as the real server listed them."""
    n1 = json.loads(Transcript("01c").body)["items"][0]
    pods = json.loads(Transcript("03h").body)["items"]
    path = os.path.join(directory, "fixture.json")
    with open(path, "w") as f:
        json.dump({"kind": "List", "apiVersion": "v1", "items":
                   [dict(kind="Node", apiVersion="v1", **n1)] + [dict(kind="Pod", apiVersion="v1", **p)
                                                                 for p in pods]}, f)
    return path


def norm_rv(body):
    return RV_RE.sub(b'"resourceVersion":"RV"', body)


# --------------------------------------------------------------------------
# A raw HTTP/1.1 client, so framing (Content-Length vs chunks) is visible
# --------------------------------------------------------------------------

class Response:
    def __init__(self, status, header_list, conn):
        self.status, self.header_list, self.conn = status, header_list, conn
        self.headers = {k.lower(): v for k, v in header_list}
        self.header_names = [k for k, _ in header_list]
        self.chunked = self.headers.get("transfer-encoding") == "chunked"

    def body(self):
        if not self.chunked:
            return self.conn.f.read(int(self.headers.get("content-length", 0)))
        data = b""
        while True:
            chunk = self.conn.read_chunk()
            if not chunk:
                return data
            data += chunk

    def json(self):
        return json.loads(self.body())


class Conn:
    def __init__(self, url, timeout=20):
        host, port = url[len("https://"):].rsplit(":", 1)
        self.host, self.port = host, int(port)
        ctx = ssl.create_default_context(cafile=os.path.join(TLS_DIR, "ca.crt"))
        raw = socket.create_connection((host, self.port), timeout=timeout)
        self.sock = ctx.wrap_socket(raw, server_hostname=host)
        self.f = self.sock.makefile("rb")

    def request(self, method, path, token=ADMIN, body=None, ctype=None, ua=UA, headers=()):
        lines = ["%s %s HTTP/1.1" % (method, path), "Host: %s:%d" % (self.host, self.port), "User-Agent: " + ua]
        if token:
            lines.append("Authorization: Bearer " + token)
        lines.append("Accept: application/json")
        if body is not None:
            if not isinstance(body, bytes):
                body = json.dumps(body).encode()
            lines += ["Content-Type: " + (ctype or "application/json"), "Content-Length: %d" % len(body)]
        lines += list(headers)
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b""))
        status = self.f.readline().decode()
        if not status:
            raise ConnectionError("connection closed before a response")
        header_list = []
        while True:
            line = self.f.readline().decode().rstrip("\r\n")
            if not line:
                break
            k, v = line.split(": ", 1)
            header_list.append((k, v))
        return Response(int(status.split(" ")[1]), header_list, self)

    def read_chunk(self):
        """bytes of one chunk; b"" for the terminating zero chunk; None on EOF without it."""
        line = self.f.readline()
        if not line:
            return None
        size = int(line.strip(), 16)
        data = self.f.read(size)
        self.f.readline()
        return data

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


# --------------------------------------------------------------------------
# Server lifecycle
# --------------------------------------------------------------------------

class ServerCase(unittest.TestCase):
    extra_args = []
    rbac = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="fake-apiserver-")
        ready = os.path.join(cls.tmp, "url")
        args = [sys.executable, SERVER, "--listen", "127.0.0.1:0", "--tls-dir", TLS_DIR,
                "--token", "admin=%s:system:masters" % ADMIN, "--token", "node-agent=%s:node-agents" % AGENT,
                "--objects", fixture_objects(cls.tmp), "--ready-file", ready,
                "--too-large-rv-wait", "0.3"] + cls.extra_args
        if cls.rbac is not None:
            path = os.path.join(cls.tmp, "rbac.json")
            with open(path, "w") as f:
                json.dump(cls.rbac, f)
            args += ["--rbac", path]
        cls.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while not os.path.exists(ready):
            if cls.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("server did not start: %s" % cls.proc.stderr.read().decode())
            time.sleep(0.02)
        with open(ready) as f:
            cls.url = f.read().strip()
        cls.stdout_line = cls.proc.stdout.readline().decode().strip()

    @classmethod
    def tearDownClass(cls):
        cls.proc.terminate()
        cls.proc.wait(5)
        cls.proc.stdout.close()
        cls.proc.stderr.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def conn(self):
        c = Conn(self.url)
        self.addCleanup(c.close)
        return c

    def call(self, method, path, **kw):
        c = self.conn()
        r = c.request(method, path, **kw)
        r.data = r.body()
        return r

    def control(self, method, path):
        return json.loads(self.call(method, "/_fake/" + path, token=None).data)

    def list_rv(self, path):
        return json.loads(self.call("GET", path).data)["metadata"]["resourceVersion"]

    def watch(self, path, token=ADMIN):
        c = self.conn()
        r = c.request("GET", path, token=token)
        self.assertEqual(r.status, 200)
        return c, r

    def next_event(self, c):
        chunk = c.read_chunk()
        self.assertTrue(chunk, "expected an event chunk, got %r" % chunk)
        self.assertTrue(chunk.endswith(b"\n") and chunk.count(b"\n") == 1, "one compact JSON line per chunk")
        return json.loads(chunk), chunk

    def patch_node_label(self, name, key, value):
        body = json.dumps({"metadata": {"labels": {key: value}}}).encode()
        r = self.call("PATCH", "/api/v1/nodes/" + name, body=body, ctype="application/merge-patch+json")
        self.assertEqual(r.status, 200, r.data)
        return json.loads(r.data)


# --------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------

class TestStartup(ServerCase):
    def test_ready_file_stdout_and_kubeconfig(self):
        self.assertRegex(self.url, r"^https://127\.0\.0\.1:\d+$")
        self.assertEqual(self.stdout_line, self.url)
        with open(os.path.join(TLS_DIR, "kubeconfig")) as f:
            cfg = f.read()
        self.assertIn(self.url, cfg)
        self.assertIn(os.path.join(TLS_DIR, "ca.crt"), cfg)
        self.assertIn(ADMIN, cfg)

    def test_sample_objects_load(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp, True)
        ready = os.path.join(tmp, "url")
        proc = subprocess.Popen([sys.executable, SERVER, "--tls-dir", TLS_DIR, "--token", "admin=" + ADMIN,
                                 "--objects", os.path.join(SAMPLES, "lab-1.node.yaml"),
                                 os.path.join(SAMPLES, "ok-net-2.node.json"),
                                 os.path.join(SAMPLES, "lab-1.pods.json"), "--ready-file", ready],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.addCleanup(proc.wait, 5)
        self.addCleanup(proc.stderr.close)
        self.addCleanup(proc.terminate)
        while not os.path.exists(ready):
            self.assertIsNone(proc.poll(), proc.stderr.read() if proc.poll() is not None else "")
            time.sleep(0.02)
        with open(ready) as f:
            url = f.read()
        c = Conn(url)
        self.addCleanup(c.close)
        nodes = c.request("GET", "/api/v1/nodes").json()
        self.assertEqual([n["metadata"]["name"] for n in nodes["items"]], ["lab-1", "ok-net-2"])
        self.assertEqual(nodes["items"][0]["metadata"]["uid"], "5a0e8c1e-2f7d-4a57-b5a3-0c9d8e7f6a51")
        pods = c.request("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dlab-1").json()
        self.assertEqual(len(pods["items"]), 3)
        rvs = [int(p["metadata"]["resourceVersion"]) for p in pods["items"]]
        self.assertEqual(len(set(rvs)), 3)
        self.assertLessEqual(max(rvs), int(pods["metadata"]["resourceVersion"]))
        for p in pods["items"]:
            self.assertTrue(p["metadata"]["uid"] and p["metadata"]["creationTimestamp"])


class TestTranscriptReplay(ServerCase):
    def replay(self, prefix, ua=UA):
        t = Transcript(prefix)
        token = {"<ADMIN_TOKEN>": ADMIN, "<NODE_AGENT_TOKEN>": AGENT}.get(
            t.request_headers.get("Authorization", "").replace("Bearer ", ""), None)
        r = self.conn().request(t.method, t.path, token=token, body=t.request_body,
                                ctype=t.request_headers.get("Content-Type"), ua=t.request_headers.get("User-Agent", ua))
        r.data = r.body()
        return t, r

    def assert_same_shape(self, t, r):
        self.assertEqual(r.status, t.status)
        self.assertEqual(r.header_names, t.header_names)
        self.assertEqual(r.headers["content-type"], t.headers["Content-Type"])

    def test_01c_node_list_by_name(self):
        t, r = self.replay("01c")
        self.assert_same_shape(t, r)
        self.assertEqual(norm_rv(r.data), norm_rv(t.body))   # identical apart from resourceVersions

    def test_01d_01e_encoded_and_nomatch(self):
        t, r = self.replay("01d")
        self.assertEqual(norm_rv(r.data), norm_rv(t.body))
        t, r = self.replay("01e")
        self.assert_same_shape(t, r)
        self.assertEqual(norm_rv(r.data), norm_rv(t.body))

    def test_01f_pretty_for_curl_user_agent(self):
        t, r = self.replay("01f")
        self.assert_same_shape(t, r)                          # chunked, like the capture
        self.assertFalse(r.data.endswith(b"\n"))
        self.assertEqual(RV_RE.sub(b"", r.data.replace(b": ", b":")),
                         RV_RE.sub(b"", t.body.replace(b": ", b":")))

    def test_03h_pod_list_by_node(self):
        t, r = self.replay("03h")
        self.assert_same_shape(t, r)
        self.assertTrue(r.chunked)
        self.assertEqual(norm_rv(r.data), norm_rv(t.body))

    def test_07_health_and_version(self):
        for prefix in ("07d", "07e", "07f", "07g", "07h"):
            t, r = self.replay(prefix)
            self.assert_same_shape(t, r)
            self.assertEqual(r.data, t.body, prefix)

    def test_07i_readyz_agent(self):
        t, r = self.replay("07i")
        self.assert_same_shape(t, r)
        self.assertEqual(r.data, b"ok")


class TestStatusBodies(ServerCase):
    # The role of the capture (05h): nodes only, so the 05m pod list is forbidden.
    rbac = {"node-agents": [{"resources": ["nodes"], "verbs": ["get", "list", "watch", "patch"]}]}

    def check(self, prefix):
        t = Transcript(prefix)
        token = {"<ADMIN_TOKEN>": ADMIN, "<NODE_AGENT_TOKEN>": AGENT}.get(
            t.request_headers.get("Authorization", "").replace("Bearer ", ""), "this-is-not-a-valid-token-0123456789")
        if "Authorization" not in t.request_headers:
            token = None
        r = self.call(t.method, t.path, token=token, body=t.request_body, ctype=t.request_headers.get("Content-Type"))
        self.assertEqual(r.status, t.status, r.data)
        self.assertEqual(r.header_names, t.header_names, prefix)
        self.assertEqual(r.data, t.body, prefix)
        return r

    def test_401(self):
        for p in ("07a", "07b", "07c", "07j"):
            r = self.check(p)
            self.assertNotIn("www-authenticate", r.headers)
            self.assertNotIn("x-kubernetes-pf-flowschema-uid", r.headers)

    def test_403(self):
        for p in ("05k", "05l", "05m"):
            r = self.check(p)
            self.assertEqual(r.headers["x-content-type-options"], "nosniff")

    def test_415(self):
        self.check("05d")
        self.check("05e")

    def test_422_events(self):
        for p in ("06d", "06e", "06f"):
            self.check(p)

    def test_409_duplicate_event_and_stale_rv(self):
        t = Transcript("06a")
        self.assertEqual(self.call("POST", t.path, body=t.request_body).status, 201)
        self.check("06b")
        self.check("05g")

    def test_400_selectors(self):
        for p in ("08a", "08b", "08c", "08d"):
            self.check(p)

    def test_500_bad_rv(self):
        self.check("04m")

    def test_410_exact_after_compaction(self):
        rv = self.list_rv("/api/v1/pods")
        self.patch_node_label("n1", "compact", "me")
        self.control("POST", "compact")
        r = self.call("GET", "/api/v1/pods?resourceVersion=%s&resourceVersionMatch=Exact" % rv)
        self.assertEqual(r.status, 410)
        self.assertEqual(r.data, Transcript("04g").body)

    def test_504_future_rv(self):
        rv = int(self.list_rv("/api/v1/pods"))
        t0 = time.monotonic()
        r = self.call("GET", "/api/v1/pods?fieldSelector=spec.nodeName%%3Dn1&resourceVersion=%d" % (rv + 1000000))
        self.assertGreaterEqual(time.monotonic() - t0, 0.25)
        self.assertEqual(r.status, 504)
        self.assertEqual(r.headers["retry-after"], "1")
        expected = Transcript("04k").body.replace(b"1000230", str(rv + 1000000).encode()).replace(
            b"current: 231", b"current: %d" % rv)
        self.assertEqual(r.data, expected)

    def test_500_future_rv_exact(self):
        rv = int(self.list_rv("/api/v1/pods"))
        r = self.call("GET", "/api/v1/pods?resourceVersion=%d&resourceVersionMatch=Exact" % (rv + 10))
        self.assertEqual((r.status, r.data), (500, Transcript("04l").body))


class TestWrites(ServerCase):
    def test_event_create_and_patch(self):
        t = Transcript("06a")
        r = self.call("POST", t.path, body=t.request_body)
        self.assertEqual(r.status, 201)
        got, want = json.loads(r.data), json.loads(t.body)
        for obj in (got, want):
            for k in ("uid", "resourceVersion", "creationTimestamp", "managedFields"):
                obj["metadata"].pop(k, None)
        self.assertEqual(list(got), list(want))           # field order incl. "eventTime": null
        self.assertEqual(got, want)
        t = Transcript("06c")
        r = self.call("PATCH", t.path, body=t.request_body, ctype=t.request_headers["Content-Type"])
        self.assertEqual(r.status, 200)
        self.assertEqual(json.loads(r.data)["count"], 2)
        self.assertEqual(self.call("POST", Transcript("06g").path, body=Transcript("06g").request_body).status, 201)
        self.assertEqual(self.call("POST", Transcript("06h").path, body=Transcript("06h").request_body).status, 201)

    def test_patch_types(self):
        for prefix in ("05a", "05b", "05c", "05f"):
            t = Transcript(prefix)
            r = self.call("PATCH", t.path, body=t.request_body, ctype=t.request_headers["Content-Type"])
            self.assertEqual(r.status, 200, r.data)
            want = json.loads(t.body)["metadata"]["annotations"]
            want.pop("example.openkeel.io/restart")   # set by the capture harness, not by 05a-05f
            self.assertEqual(json.loads(r.data)["metadata"]["annotations"], want, prefix)

    def test_status_subresource_strategic_merges_conditions(self):
        body = {"status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "X", "status": "False"}]}}
        r = self.call("PATCH", "/api/v1/nodes/n1/status", body=json.dumps(body).encode(),
                      ctype="application/strategic-merge-patch+json")
        body = {"status": {"conditions": [{"type": "X", "status": "True"}]}, "spec": {"unschedulable": True}}
        r = self.call("PATCH", "/api/v1/nodes/n1/status", body=json.dumps(body).encode(),
                      ctype="application/strategic-merge-patch+json")
        node = json.loads(r.data)
        self.assertEqual([(c["type"], c["status"]) for c in node["status"]["conditions"]],
                         [("Ready", "True"), ("X", "True")])
        self.assertNotIn("unschedulable", node["spec"])   # /status ignores spec
        r = self.call("PATCH", "/api/v1/nodes/n1", body=b'{"status":{"conditions":[]}}',
                      ctype="application/merge-patch+json")
        self.assertEqual(len(json.loads(r.data)["status"]["conditions"]), 2)   # main resource ignores status

    def test_noop_patch_keeps_rv(self):
        a = self.patch_node_label("n1", "noop", "x")
        b = self.patch_node_label("n1", "noop", "x")
        self.assertEqual(a["metadata"]["resourceVersion"], b["metadata"]["resourceVersion"])

    def test_node_create_admission(self):
        t = Transcript("01a")
        body = json.loads(t.request_body)
        body["metadata"]["name"] = "n-created"
        r = self.call("POST", "/api/v1/nodes", body=body)
        self.assertEqual(r.status, 201)
        node = json.loads(r.data)
        self.assertEqual(node["spec"]["taints"], [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}])
        self.assertEqual(list(node["status"]), ["daemonEndpoints", "nodeInfo"])
        r = self.call("PATCH", "/api/v1/nodes/n-created/status", body=Transcript("01b").request_body,
                      ctype="application/strategic-merge-patch+json")
        self.assertEqual(json.loads(r.data)["status"]["capacity"]["memory"], "128512Mi")

    def test_pagination_tokens(self):
        r = json.loads(self.call("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1&limit=1").data)
        token = r["metadata"]["continue"]
        decoded = json.loads(base64.urlsafe_b64decode(token + "=="))
        self.assertEqual(decoded, {"v": "meta.k8s.io/v1", "rv": int(r["metadata"]["resourceVersion"]),
                                   "start": "tenant-a/p-init\x00"})
        self.assertNotIn("remainingItemCount", r["metadata"])
        r2 = json.loads(self.call("GET", "/api/v1/pods?limit=1").data)
        self.assertEqual(r2["metadata"]["remainingItemCount"], 2)
        names = [r["items"][0]["metadata"]["name"]]
        while token:
            page = json.loads(self.call("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1&limit=1&continue="
                                        + token).data)
            self.assertIn("items", page, page)
            names += [p["metadata"]["name"] for p in page["items"]]
            token = page["metadata"].get("continue")
        self.assertEqual(names, ["p-init", "p-overhead", "p-plain"])


def _pb_field(number, value):
    """One length-delimited protobuf field (what helm's client-go sends for strings, maps, messages)."""
    if isinstance(value, str):
        value = value.encode()
    out, n = bytes([number << 3 | 2]), len(value)
    while n >= 0x80:
        out, n = out + bytes([n & 0x7F | 0x80]), n >> 7
    return out + bytes([n]) + value


def _pb_secret(name, namespace, labels, data):
    """A v1 Secret as helm's release storage sends it: magic, runtime.Unknown, core/v1 Secret."""
    meta = _pb_field(1, name) + _pb_field(3, namespace)
    for k, v in labels.items():
        meta += _pb_field(11, _pb_field(1, k) + _pb_field(2, v))
    secret = _pb_field(1, meta) + _pb_field(3, "helm.sh/release.v1")
    for k, v in data.items():
        secret += _pb_field(2, _pb_field(1, k) + _pb_field(2, v))
    unknown = _pb_field(1, _pb_field(1, "v1") + _pb_field(2, "Secret")) + _pb_field(2, secret)
    return b"k8s\x00" + unknown


class TestProtobufBodies(ServerCase):
    def test_a_secret_created_and_updated_in_protobuf_reads_back_as_json(self):
        body = _pb_secret("sh.helm.release.v1.r.v1", "", {"owner": "helm", "status": "pending-install"},
                          {"release": b"\x00\xffbinary"})
        r = self.call("POST", "/api/v1/namespaces/default/secrets", body=body,
                      ctype="application/vnd.kubernetes.protobuf")
        self.assertEqual(r.status, 201, r.data)
        got = json.loads(r.data)
        self.assertEqual(got["metadata"]["namespace"], "default", "an empty namespace is the request's")
        self.assertEqual(got["metadata"]["labels"], {"owner": "helm", "status": "pending-install"})
        self.assertEqual(base64.b64decode(got["data"]["release"]), b"\x00\xffbinary")
        self.assertEqual(got["type"], "helm.sh/release.v1")
        body = _pb_secret("sh.helm.release.v1.r.v1", "default", {"owner": "helm", "status": "deployed"},
                          {"release": b"v2"})
        r = self.call("PUT", "/api/v1/namespaces/default/secrets/sh.helm.release.v1.r.v1", body=body,
                      ctype="application/vnd.kubernetes.protobuf")
        self.assertEqual(r.status, 200, r.data)
        listed = json.loads(self.call("GET", "/api/v1/namespaces/default/secrets?labelSelector=status%3Ddeployed").data)
        self.assertEqual([i["metadata"]["name"] for i in listed["items"]], ["sh.helm.release.v1.r.v1"])

    def test_a_kind_it_cannot_decode_is_a_clear_400_and_garbage_too(self):
        unknown = _pb_field(1, _pb_field(1, "apps/v1") + _pb_field(2, "DaemonSet")) + _pb_field(2, b"")
        r = self.call("POST", "/apis/apps/v1/namespaces/default/daemonsets", body=b"k8s\x00" + unknown,
                      ctype="application/vnd.kubernetes.protobuf")
        self.assertEqual(r.status, 400, r.data)
        self.assertIn("apps/v1/DaemonSet", json.loads(r.data)["message"])
        r = self.call("POST", "/api/v1/namespaces/default/secrets", body=b"k8s\x00\x0a\xff\xff",
                      ctype="application/vnd.kubernetes.protobuf")
        self.assertEqual(r.status, 400, r.data)


class TestWatch(ServerCase):
    extra_args = ["--bookmark-lead", "2"]

    def test_label_patch_is_one_modified_then_bookmark_then_zero_chunk(self):
        rv = self.list_rv("/api/v1/nodes?fieldSelector=metadata.name%3Dn1")
        t0 = time.monotonic()
        c, r = self.watch("/api/v1/nodes?fieldSelector=metadata.name%%3Dn1&watch=1&allowWatchBookmarks=true"
                          "&resourceVersion=%s&timeoutSeconds=4" % rv)
        self.assertEqual(r.header_names, Transcript("02b").header_names)
        self.assertEqual(r.headers["cache-control"], "no-cache, private")
        self.assertEqual(r.headers["content-type"], "application/json")
        patched = self.patch_node_label("n1", "example.openkeel.io/watched", "yes")
        ev, _ = self.next_event(c)
        self.assertEqual(ev["type"], "MODIFIED")
        self.assertEqual(ev["object"]["metadata"]["labels"]["example.openkeel.io/watched"], "yes")
        self.assertEqual(ev["object"]["metadata"]["resourceVersion"], patched["metadata"]["resourceVersion"])
        self.assertEqual(ev["object"]["kind"], "Node")
        ev, raw = self.next_event(c)
        self.assertAlmostEqual(time.monotonic() - t0, 2.0, delta=0.5)
        want = transcript_events("02b")[2].replace(b'"201"', b'"%s"' % patched["metadata"]["resourceVersion"].encode())
        self.assertEqual(raw, want)                              # exact Node BOOKMARK shape
        self.assertEqual(c.read_chunk(), b"")                    # zero chunk at the deadline
        self.assertAlmostEqual(time.monotonic() - t0, 4.0, delta=0.5)

    def test_rv0_and_no_rv_synthetic_added(self):
        for rvq in ("&resourceVersion=0", ""):
            c, _ = self.watch("/api/v1/nodes?fieldSelector=metadata.name%%3Dn1&watch=1&allowWatchBookmarks=true"
                              "&timeoutSeconds=1%s" % rvq)
            ev, _ = self.next_event(c)
            self.assertEqual((ev["type"], ev["object"]["metadata"]["name"]), ("ADDED", "n1"))
            self.assertEqual(c.read_chunk(), b"")

    def test_idle_watch_no_bookmark_but_on_demand(self):
        rv = self.list_rv("/api/v1/nodes")
        self.call("POST", "/api/v1/namespaces/default/events", body={"metadata": {"name": "bump"}})  # other kind
        c, _ = self.watch("/api/v1/nodes?watch=true&allowWatchBookmarks=true&resourceVersion=%s"
                          "&timeoutSeconds=3" % rv)
        time.sleep(0.3)
        res = self.control("POST", "bookmark")
        ev, raw = self.next_event(c)
        self.assertEqual(ev["type"], "BOOKMARK")
        self.assertEqual(ev["object"]["metadata"], {"resourceVersion": res["resourceVersion"],
                                                    "creationTimestamp": None})
        self.assertEqual(c.read_chunk(), b"")    # no timer bookmark: nodes unchanged since rv (02f)

    def test_pod_watch_by_node(self):
        rv = self.list_rv("/api/v1/pods?fieldSelector=spec.nodeName%3Dn1")
        c, _ = self.watch("/api/v1/pods?fieldSelector=spec.nodeName%%3Dn1&watch=1&allowWatchBookmarks=true"
                          "&resourceVersion=%s&timeoutSeconds=5" % rv)
        r = self.call("DELETE", "/api/v1/namespaces/tenant-a/pods/p-plain?gracePeriodSeconds=0")
        deleted = json.loads(r.data)
        ev1, _ = self.next_event(c)
        ev2, _ = self.next_event(c)
        self.assertEqual((ev1["type"], ev2["type"]), ("MODIFIED", "DELETED"))
        rv1, rv2 = (int(e["object"]["metadata"]["resourceVersion"]) for e in (ev1, ev2))
        self.assertEqual(rv2, rv1 + 1)
        self.assertEqual(ev1["object"]["metadata"]["deletionGracePeriodSeconds"], 0)
        self.assertEqual(deleted["metadata"]["resourceVersion"], str(rv2))
        r = self.call("DELETE", "/api/v1/namespaces/tenant-a/pods/p-init")
        ev, _ = self.next_event(c)
        self.assertEqual((ev["type"], ev["object"]["metadata"]["deletionGracePeriodSeconds"]), ("MODIFIED", 30))
        self.assertEqual(self.call("GET", "/api/v1/namespaces/tenant-a/pods/p-init").status, 200)
        for name, node in (("p-other-node", "n2"), ("p-late", "n1")):
            body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                    "spec": {"nodeName": node, "containers": [{"name": "c", "image": "registry.example/app:1.0"}]}}
            self.assertEqual(self.call("POST", "/api/v1/namespaces/tenant-a/pods", body=body).status, 201)
        ev, _ = self.next_event(c)
        self.assertEqual((ev["type"], ev["object"]["metadata"]["name"]), ("ADDED", "p-late"))
        self.assertEqual(ev["object"]["status"], {"phase": "Pending", "qosClass": "BestEffort"})
        r = self.call("PATCH", "/api/v1/namespaces/tenant-a/pods/p-late/status",
                      body=b'{"status":{"phase":"Running"}}', ctype="application/merge-patch+json")
        ev, _ = self.next_event(c)
        self.assertEqual((ev["type"], ev["object"]["status"]["phase"]), ("MODIFIED", "Running"))
        bm, _ = self.next_event(c)
        self.assertEqual(bm["type"], "BOOKMARK")
        self.assertEqual(json.dumps(bm["object"], separators=(",", ":")).encode(), json.dumps(json.loads(
            transcript_events("03i")[-1])["object"], separators=(",", ":")).encode().replace(
            b'"220"', b'"%s"' % ev["object"]["metadata"]["resourceVersion"].encode()))
        self.assertEqual(c.read_chunk(), b"")

    def test_object_leaving_selector_is_deleted(self):
        rv = self.list_rv("/api/v1/nodes?labelSelector=pool%3Dblue")
        c, _ = self.watch("/api/v1/nodes?labelSelector=pool%%3Dblue&watch=1&resourceVersion=%s"
                          "&timeoutSeconds=5" % rv)
        self.patch_node_label("n1", "pool", "blue")
        ev, _ = self.next_event(c)
        self.assertEqual(ev["type"], "ADDED")
        moved = self.patch_node_label("n1", "pool", "green")
        ev, _ = self.next_event(c)
        # Watch-cache semantics: DELETED carrying the last matching state at the new RV.
        self.assertEqual(ev["type"], "DELETED")
        self.assertEqual(ev["object"]["metadata"]["labels"]["pool"], "blue")
        self.assertEqual(ev["object"]["metadata"]["resourceVersion"], moved["metadata"]["resourceVersion"])

    def test_watch_replays_changes_since_rv(self):
        rv = self.list_rv("/api/v1/nodes")
        self.patch_node_label("n1", "replay", "1")
        c, _ = self.watch("/api/v1/nodes?watch=1&resourceVersion=%s&timeoutSeconds=1" % rv)
        ev, _ = self.next_event(c)
        self.assertEqual((ev["type"], ev["object"]["metadata"]["labels"]["replay"]), ("MODIFIED", "1"))

    def test_many_watchers_get_events_promptly(self):
        rv = self.list_rv("/api/v1/nodes")
        watches = [self.watch("/api/v1/nodes?watch=1&resourceVersion=%s&timeoutSeconds=10" % rv)[0]
                   for _ in range(20)]
        t0 = time.monotonic()
        self.patch_node_label("n1", "fanout", "1")
        for c in watches:
            ev, _ = self.next_event(c)
            self.assertEqual(ev["type"], "MODIFIED")
        self.assertLess(time.monotonic() - t0, 1.0)
        self.assertGreaterEqual(len(self.control("GET", "watches")), 20)


class TestFaults(ServerCase):
    def test_expire_watches_then_410_rewatch_then_relist(self):
        rv = self.list_rv("/api/v1/pods?fieldSelector=spec.nodeName%3Dn1")
        c, _ = self.watch("/api/v1/pods?fieldSelector=spec.nodeName%%3Dn1&watch=1&resourceVersion=%s"
                          "&timeoutSeconds=30" % rv)
        self.patch_node_label("n1", "bump", "1")        # the cache window moves past rv
        res = self.control("POST", "expire-watches")
        self.assertEqual(res["expired"], 1)
        ev, raw = self.next_event(c)
        want = transcript_events("04b")[0].replace(b"223 (225)", b"%s (%d)" % (rv.encode(), res["windowStart"]))
        self.assertEqual(raw, want)
        self.assertEqual(c.read_chunk(), b"")
        c, r = self.watch("/api/v1/pods?fieldSelector=spec.nodeName%%3Dn1&watch=1&resourceVersion=%s"
                          "&timeoutSeconds=5" % rv)
        ev, raw = self.next_event(c)
        self.assertEqual(raw, want)
        self.assertEqual(c.read_chunk(), b"")
        relisted = json.loads(self.call("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1").data)
        self.assertEqual(len(relisted["items"]), 3)
        c, _ = self.watch("/api/v1/pods?fieldSelector=spec.nodeName%%3Dn1&watch=1&resourceVersion=%s"
                          "&timeoutSeconds=1" % relisted["metadata"]["resourceVersion"])
        self.assertEqual(c.read_chunk(), b"")   # no error, clean end at the timeout

    def test_restart_ends_watches_cleanly_refuses_then_410_only_for_older_rvs(self):
        rv = self.list_rv("/api/v1/pods?fieldSelector=spec.nodeName%3Dn1")
        c, _ = self.watch("/api/v1/pods?fieldSelector=spec.nodeName%%3Dn1&watch=1&resourceVersion=%s"
                          "&allowWatchBookmarks=true&timeoutSeconds=30" % rv)
        res = self.control("POST", "restart?seconds=0.5")
        self.assertEqual(res["ended"], 1)
        self.assertGreater(res["windowStart"], int(rv))   # the apiserver's own startup writes
        self.assertEqual(c.read_chunk(), b"")   # 04n: the zero chunk, no ERROR event
        with self.assertRaises((ConnectionError, ssl.SSLError, OSError)):
            Conn(self.url).request("GET", "/api/v1/pods")
        deadline = time.monotonic() + 10
        while True:   # bounded poll until the "restarted" server accepts again
            try:
                if self.call("GET", "/readyz").data == b"ok":
                    break
            except (ConnectionError, ssl.SSLError, OSError):
                pass
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.05)
        # Re-watching from what was seen before: 04b, 200 + ERROR 410 + end.
        c, _ = self.watch("/api/v1/pods?fieldSelector=spec.nodeName%%3Dn1&watch=1&resourceVersion=%s"
                          "&timeoutSeconds=5" % rv)
        ev, raw = self.next_event(c)
        want = transcript_events("04b")[0].replace(b"223 (225)", b"%s (%d)" % (rv.encode(), res["windowStart"]))
        self.assertEqual(raw, want)
        self.assertEqual(c.read_chunk(), b"")
        # A LIST "not older than" that RV is served (from the new cache), and so is a watch from it.
        listed = json.loads(self.call("GET", "/api/v1/pods?fieldSelector=spec.nodeName%%3Dn1"
                                      "&resourceVersion=%s" % rv).data)
        self.assertEqual(len(listed["items"]), 3)
        self.assertEqual(listed["metadata"]["resourceVersion"], str(res["windowStart"]))
        c, _ = self.watch("/api/v1/pods?fieldSelector=spec.nodeName%%3Dn1&watch=1&resourceVersion=%s"
                          "&timeoutSeconds=1" % listed["metadata"]["resourceVersion"])
        self.assertEqual(c.read_chunk(), b"")   # no error, clean end at the timeout

    def test_drop_watches(self):
        c, _ = self.watch("/api/v1/nodes?watch=1&resourceVersion=0&timeoutSeconds=30")
        self.next_event(c)
        self.assertEqual(self.control("POST", "drop-watches")["dropped"], 1)
        try:
            self.assertIsNone(c.read_chunk())   # EOF, no terminating zero chunk
        except (ssl.SSLError, ConnectionError):
            pass

    def test_hold_and_release_watches(self):
        c, _ = self.watch("/api/v1/nodes?watch=1&resourceVersion=0&timeoutSeconds=3")
        self.next_event(c)   # ADDED n1
        self.assertEqual(self.control("POST", "hold-watches"), {"held": True, "watches": 1})
        try:
            patched = self.patch_node_label("n1", "held", "yes")
            # Held: the change is made (the API server has it) and not sent.
            time.sleep(0.3)
            self.assertEqual([w["eventsSent"] for w in self.control("GET", "watches")], [1])
        finally:
            self.assertEqual(self.control("POST", "release-watches")["held"], False)
        ev, _ = self.next_event(c)
        self.assertEqual(ev["type"], "MODIFIED")
        self.assertEqual(ev["object"]["metadata"]["labels"]["held"], "yes")
        self.assertEqual(ev["object"]["metadata"]["resourceVersion"],
                         patched["metadata"]["resourceVersion"])
        self.assertEqual(c.read_chunk(), b"")   # the watch's own end: none is left open

    def test_fail_next_and_request_log(self):
        self.control("DELETE", "requests")
        self.control("POST", "fail-next?count=2&status=503&path=/api/v1/nodes")
        self.assertEqual(self.call("GET", "/api/v1/pods").status, 200)
        for _ in range(2):
            r = self.call("GET", "/api/v1/nodes?limit=5")
            self.assertEqual(r.status, 503)
            self.assertEqual(json.loads(r.data)["reason"], "ServiceUnavailable")
        self.assertEqual(self.call("GET", "/api/v1/nodes").status, 200)
        log = self.control("GET", "requests")
        self.assertEqual([(e["path"], e["status"]) for e in log],
                         [("/api/v1/pods", 200), ("/api/v1/nodes", 503), ("/api/v1/nodes", 503),
                          ("/api/v1/nodes", 200)])
        self.assertEqual(log[1]["query"], {"limit": "5"})
        self.assertEqual(log[1]["user"], "admin")
        self.assertTrue(all(a["t"] <= b["t"] for a, b in zip(log, log[1:])))
        self.control("POST", "fail-next?count=1&status=401")
        r = self.call("GET", "/readyz")
        self.assertEqual((r.status, r.data), (401, Transcript("07a").body))

    def test_refuse(self):
        self.control("POST", "refuse?seconds=0.5")
        with self.assertRaises((ConnectionError, ssl.SSLError, OSError)):
            Conn(self.url).request("GET", "/readyz")
        time.sleep(0.6)
        self.assertEqual(self.call("GET", "/readyz").data, b"ok")

    def test_keepalive(self):
        c = self.conn()
        for _ in range(3):
            r = c.request("GET", "/api/v1/nodes")
            self.assertEqual(r.status, 200)
            r.body()
        self.assertEqual(len(self.control("GET", "watches")), 0)


if __name__ == "__main__":
    unittest.main()


class TestKubectl(ServerCase):
    """kubectl (a real client-go) works against the fake: get, label, and a watch that sees the label.
    Debian ships no kubectl, so this skips where it is not installed."""

    def setUp(self):
        self.kubectl = shutil.which("kubectl")
        if not self.kubectl:
            self.skipTest("kubectl is not installed (Debian has no package for it)")
        self.kubeconfig = os.path.join(TLS_DIR, "kubeconfig")

    def run_kubectl(self, *args, context="admin"):
        return subprocess.run([self.kubectl, "--kubeconfig", self.kubeconfig, "--context", context,
                               "--server", self.url] + list(args),
                              capture_output=True, text=True, timeout=30)

    def test_get_label_and_watch(self):
        r = self.run_kubectl("get", "nodes", "-o", "name")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("node/n1", r.stdout)
        r = self.run_kubectl("get", "pods", "-A", "--field-selector", "spec.nodeName=n1", "-o", "name",
                             context="node-agent")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("pod/p-plain", r.stdout)
        watch = subprocess.Popen([self.kubectl, "--kubeconfig", self.kubeconfig, "--server", self.url,
                                  "get", "node", "n1", "-w", "--output-watch-events",
                                  "-o", "jsonpath={.type} {.object.metadata.labels.kubectl-test}{\"\\n\"}"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            first = watch.stdout.readline()  # the synthetic ADDED of the initial state
            self.assertTrue(first.startswith("ADDED"), first)
            r = self.run_kubectl("label", "node", "n1", "kubectl-test=yes", "--overwrite")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(watch.stdout.readline().strip(), "MODIFIED yes")
        finally:
            watch.kill()
            watch.communicate()
        r = self.run_kubectl("delete", "pods", "-n", "tenant-a", "p-plain", context="node-agent")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('cannot delete resource "pods"', r.stderr)


class TestRbacObjects(ServerCase):
    """Applied ClusterRole/ClusterRoleBinding grant access (rbac.py), impersonation and access reviews."""
    extra_args = ["--token", "system:serviceaccount:ops:viewer=viewer-token"]
    SA = "system:serviceaccount:ops:viewer"

    def review(self, verb, resource, token=ADMIN, headers=(), sub=""):
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": {"verb": verb, "resource": resource, "subresource": sub}}}
        r = self.call("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", token=token, body=body,
                      headers=headers)
        self.assertEqual(r.status, 201, r.data)
        return json.loads(r.data)["status"]["allowed"]

    def test_binding_grants_and_its_removal_revokes(self):
        self.assertEqual(self.call("GET", "/api/v1/nodes", token="viewer-token").status, 403)
        role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "v"},
                "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}]}
        binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                   "metadata": {"name": "v"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                                          "kind": "ClusterRole", "name": "v"},
                   "subjects": [{"kind": "ServiceAccount", "name": "viewer", "namespace": "ops"}]}
        for plural, obj in (("clusterroles", role), ("clusterrolebindings", binding)):
            r = self.call("POST", "/apis/rbac.authorization.k8s.io/v1/" + plural, body=obj)
            self.assertEqual(r.status, 201, r.data)
        self.assertEqual(self.call("GET", "/api/v1/nodes", token="viewer-token").status, 200)
        self.assertEqual(self.call("GET", "/api/v1/nodes/n1", token="viewer-token").status, 403)
        self.assertTrue(self.review("list", "nodes", token="viewer-token"))
        self.assertFalse(self.review("list", "nodes", token="viewer-token", sub="status"))
        # kubectl --as: only system:masters may impersonate; the groups of a service account follow.
        self.assertTrue(self.review("list", "nodes", headers=["Impersonate-User: " + self.SA]))
        self.assertFalse(self.review("get", "nodes", headers=["Impersonate-User: " + self.SA]))
        r = self.call("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", token=AGENT,
                      body={"spec": {"resourceAttributes": {"verb": "list", "resource": "nodes"}}},
                      headers=["Impersonate-User: " + self.SA])
        self.assertEqual(r.status, 403)
        self.assertEqual(self.call("DELETE", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/v").status, 200)
        self.assertFalse(self.review("list", "nodes", token="viewer-token"))

    def test_discovery_lists_builtin_kinds(self):
        res = json.loads(self.call("GET", "/apis/rbac.authorization.k8s.io/v1").data)["resources"]
        kinds = {r["name"]: (r["kind"], r["namespaced"]) for r in res}
        self.assertEqual(kinds["clusterroles"], ("ClusterRole", False))
        self.assertEqual(kinds["rolebindings"], ("RoleBinding", True))
        res = json.loads(self.call("GET", "/apis/apps/v1").data)["resources"]
        self.assertIn(("daemonsets", "DaemonSet"), [(r["name"], r["kind"]) for r in res])
