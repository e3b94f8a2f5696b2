#!/usr/bin/python3
"""Fake kube-apiserver (v1.26 behaviour) for openkeel-node-agent tests.

Stdlib + PyYAML only.  Behaviour is modelled on the captured transcripts in
tests/data/transcripts (a copy of the captures) (see README.md there); the test-control API under
/_fake/ is documented in README.md next to this file.

    /usr/bin/python3 fake_apiserver.py --listen 127.0.0.1:0 --tls-dir DIR \\
        --token admin=TOKEN --token node-agent=TOKEN2:node-agents --ready-file DIR/url
"""
import argparse
import base64
import json
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
import traceback
import uuid
from email.utils import formatdate
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import k8s_model as km  # noqa: E402
import k8s_protobuf  # noqa: E402
import rbac  # noqa: E402
from store import ApiError, Store, Watcher  # noqa: E402

# Go's ResponseWriter buffers 2 KiB: small bodies get Content-Length, large ones are chunked.
CHUNK_THRESHOLD = 1960
INF = float("inf")

VERSION_INFO = {"major": "1", "minor": "26", "gitVersion": "v1.26.0",
                "gitCommit": "8f94681cd294aa8cfd3407b8191f6c70214973a4", "gitTreeState": "",
                "buildDate": "1970-01-01T00:00:00Z", "goVersion": "go1.19.8", "compiler": "gc",
                "platform": "linux/amd64"}
READYZ_CHECKS = [
    "ping", "log", "etcd", "etcd-readiness", "informer-sync",
    "poststarthook/start-kube-apiserver-admission-initializer", "poststarthook/generic-apiserver-start-informers",
    "poststarthook/priority-and-fairness-config-consumer", "poststarthook/priority-and-fairness-filter",
    "poststarthook/storage-object-count-tracker-hook", "poststarthook/start-apiextensions-informers",
    "poststarthook/start-apiextensions-controllers", "poststarthook/crd-informer-synced",
    "poststarthook/bootstrap-controller", "poststarthook/rbac/bootstrap-roles",
    "poststarthook/scheduling/bootstrap-system-priority-classes",
    "poststarthook/priority-and-fairness-config-producer",
    "poststarthook/start-cluster-authentication-info-controller",
    "poststarthook/start-kube-apiserver-identity-lease-controller",
    "poststarthook/start-kube-apiserver-identity-lease-garbage-collector",
    "poststarthook/start-legacy-token-tracking-controller", "poststarthook/start-kube-aggregator-informers",
    "poststarthook/apiservice-registration-controller", "poststarthook/apiservice-status-available-controller",
    "poststarthook/kube-apiserver-autoregistration", "autoregister-completion",
    "poststarthook/apiservice-openapi-controller", "poststarthook/apiservice-openapiv3-controller", "shutdown"]
NOT_LIVEZ = {"etcd-readiness", "informer-sync", "shutdown"}

# Flow-control UIDs as seen in the transcripts (exempt for system:masters, global-default otherwise,
# probes for health endpoints).
PF_EXEMPT = ("2b038c70-6712-4e79-99c8-d8c88efc75eb", "c6c4558b-ee3a-4ccf-8c3b-cb6d9b215187")
PF_DEFAULT = ("ea66e0e6-b0d0-4e61-9181-5471a2cb000a", "6ce0ef78-3c9d-4144-8388-9ceba465207a")
PF_PROBES = ("97fc9e2e-b980-46b8-bfc9-de35c7d02460", "c6c4558b-ee3a-4ccf-8c3b-cb6d9b215187")

DEFAULT_RBAC = {"node-agent": [{"resources": ["nodes"], "verbs": ["get", "list", "watch"]},
                               {"resources": ["pods"], "verbs": ["list", "watch"]},
                               {"resources": ["events"], "verbs": ["create", "patch"], "namespaces": ["default"]}]}
PATCH_TYPES = {"application/merge-patch+json": "merge", "application/json-patch+json": "json",
               "application/strategic-merge-patch+json": "strategic", "application/apply-patch+yaml": "apply"}
UNAUTHORIZED = km.status_body(401, "Unauthorized", "Unauthorized")
UNSUPPORTED_MEDIA = km.status_body(415, "415: Unsupported Media Type", "UnsupportedMediaType", {})
FAULT_REASONS = {400: ("BadRequest", "injected failure"), 404: ("NotFound", "the server could not find the "
                 "requested resource"), 409: ("Conflict", "injected conflict"),
                 410: ("Expired", "injected expiry"),
                 429: ("TooManyRequests", "Too many requests, please try again later."),
                 500: ("InternalError", "Internal error occurred: injected failure"),
                 503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
                 504: ("Timeout", "Timeout: request did not complete within the allotted timeout")}


# The short names a real v1.26 lists in discovery (kubectl get ds, kubectl get no, ...).
SHORT_NAMES = {"nodes": ["no"], "pods": ["po"], "events": ["ev"], "namespaces": ["ns"], "configmaps": ["cm"],
               "serviceaccounts": ["sa"], "daemonsets": ["ds"]}


def bad_request(message):
    return ApiError(400, km.status_body(400, message, "BadRequest"))


def encode_continue(rv, start):
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_continue(token):
    try:
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        return int(data["rv"]), data["start"]
    except (ValueError, KeyError, TypeError) as e:
        raise bad_request("continue key is not valid: %s" % e)


def parse_rv(value):
    """resourceVersion must be a uint64; anything else is a 500 without reason (04m)."""
    if value.isdigit():
        return int(value)
    raise ApiError(500, km.status_body(500, 'resourceVersion: Invalid value: "%s": strconv.ParseUint: '
                                            'parsing "%s": invalid syntax' % (value, value)))


# --------------------------------------------------------------------------
# Test-control state: injected failures, refusal window, request log
# --------------------------------------------------------------------------

class Faults:
    def __init__(self):
        self.lock = threading.Lock()
        self.fail_rules = []      # [{"count", "status", "path", "method", "retryAfter"}]
        self.refuse_until = 0.0
        self.refuse_user = None   # refusing one user's requests only (a partition), else everyone
        self.refused = 0          # connections and requests refused so far (the retry count)
        self.requests = []

    def refusing(self):
        return time.monotonic() < self.refuse_until

    def refusing_everyone(self):
        return self.refusing() and self.refuse_user is None

    def refusing_user(self, user):
        return self.refusing() and self.refuse_user is not None and user == self.refuse_user

    def count_refused(self):
        with self.lock:
            self.refused += 1

    def take_failure(self, path, method):
        with self.lock:
            for rule in self.fail_rules:
                if path.startswith(rule["path"]) and rule["method"] in ("", method):
                    rule["count"] -= 1
                    if rule["count"] <= 0:
                        self.fail_rules.remove(rule)
                    return rule["status"], rule["retryAfter"]
        return None

    def log(self, entry):
        with self.lock:
            self.requests.append(entry)


# --------------------------------------------------------------------------
# The application: config, store, auth
# --------------------------------------------------------------------------

class App:
    def __init__(self, args):
        self.args = args
        self.store = Store(history_size=args.watch_cache_size)
        self.faults = Faults()
        # /_fake/hold-watches: watch events queue up unsent until /_fake/release-watches.
        self.watches_held = False
        self.tokens = {}
        for spec in args.token or ["admin=fake-admin-token"]:
            user, _, rest = spec.partition("=")
            token, _, groups = rest.partition(":")
            groups = [g for g in groups.split(",") if g] or (["system:masters"] if user == "admin" else [])
            self.tokens[token] = (user, groups + rbac.identity_groups(user) + ["system:authenticated"])
        self.rbac = DEFAULT_RBAC
        if args.rbac:
            with open(args.rbac) as f:
                self.rbac = json.load(f)
        self.bookmark_lead = args.bookmark_lead
        self.bookmark_period = args.bookmark_period
        self.too_large_rv_wait = args.too_large_rv_wait
        self.default_watch_timeout = args.default_watch_timeout
        self.verbose = args.verbose

    def authenticate(self, header):
        if header and header.startswith("Bearer "):
            return self.tokens.get(header[7:].strip())
        return None

    def authorize(self, user, groups, verb, rt):
        # The --rbac JSON grants, then the applied ClusterRole/Role bindings (rbac.py).
        if not rbac.allowed(self, user, groups, verb, rt["group"], rt["plural"], rt["sub"], rt["ns"], rt["name"]):
            raise forbidden(user, verb, rt)

    def load_objects(self, path):
        with open(path) as f:
            text = f.read()
        docs = [json.loads(text)] if path.endswith(".json") else list(yaml.safe_load_all(text))
        for doc in docs:
            if not doc:
                continue
            items = doc.get("items") if doc.get("kind", "").endswith("List") else [doc]
            for item in items or []:
                item.setdefault("apiVersion", doc.get("apiVersion", "v1"))
                if "kind" not in item:
                    item["kind"] = doc["kind"][:-4]
                plural = km.plural_of(item["kind"])
                ns = "" if plural in km.CLUSTER_SCOPED else item["metadata"].setdefault("namespace", "default")
                self.store.load((item["apiVersion"], plural), ns, item)


def forbidden(user, verb, rt):
    group = rt["group"]
    res_name = rt["plural"] + ("." + group if group else "")
    target = '%s "%s"' % (res_name, rt["name"]) if rt["name"] else res_name
    scope = 'in the namespace "%s"' % rt["ns"] if rt["ns"] else "at the cluster scope"
    resource = rt["plural"] + ("/" + rt["sub"] if rt["sub"] else "")
    msg = '%s is forbidden: User "%s" cannot %s resource "%s" in API group "%s" %s' % (
        target, user, verb, resource, group, scope)
    details = {"name": rt["name"]} if rt["name"] else {}
    if group:
        details["group"] = group
    details["kind"] = rt["plural"]
    return ApiError(403, km.status_body(403, msg, "Forbidden", details))


def route(path):
    """Split /api/v1/... or /apis/G/V/... into gv, plural, ns, name, sub (None if not an API path)."""
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        gv, group, rest = "v1", "", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        gv, group, rest = parts[1] + "/" + parts[2], parts[1], parts[3:]
    else:
        return None
    ns = ""
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in ("status", "finalize"):
        ns, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        return None
    return {"gv": gv, "group": group, "plural": rest[0], "ns": ns,
            "name": rest[1] if len(rest) > 1 else "", "sub": rest[2] if len(rest) > 2 else ""}


# --------------------------------------------------------------------------
# HTTP handler
# --------------------------------------------------------------------------

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-kube-apiserver"

    # ---- plumbing ----------------------------------------------------------

    def log_message(self, fmt, *args):
        if self.server.app.verbose:
            sys.stderr.write("fake-apiserver: %s\n" % (fmt % args))

    def do_GET(self):
        self.dispatch()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_GET

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def pretty(self):
        ua = self.headers.get("User-Agent", "")
        return ua.startswith("curl") or ua.startswith("Wget") or self.query.get("pretty") == "true"

    def start_response(self, code, content_type, length=None, extra=()):
        """Status line and headers in the apiserver's order; logs the request."""
        lines = ["HTTP/1.1 %d %s" % (code, HTTPStatus(code).phrase), "Audit-Id: " + self.audit_id,
                 "Cache-Control: no-cache, private", "Content-Type: " + content_type]
        lines += ["%s: %s" % h for h in extra]
        if code == 403 or self.is_health:
            lines.append("X-Content-Type-Options: nosniff")
        if self.pf:
            lines += ["X-Kubernetes-Pf-Flowschema-Uid: " + self.pf[0],
                      "X-Kubernetes-Pf-Prioritylevel-Uid: " + self.pf[1]]
        lines.append("Date: " + formatdate(usegmt=True))
        lines.append("Content-Length: %d" % length if length is not None else "Transfer-Encoding: chunked")
        self.log_request(code)
        self.status_code = code
        if self.log_entry is not None:
            self.log_entry["status"] = code
            self.server.app.faults.log(self.log_entry)
        return ("\r\n".join(lines) + "\r\n\r\n").encode()

    def send_body(self, code, body, content_type="application/json", extra=()):
        if len(body) <= CHUNK_THRESHOLD:
            self.wfile.write(self.start_response(code, content_type, len(body), extra) + body)
        else:
            head = self.start_response(code, content_type, None, extra)
            self.wfile.write(head + b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n")

    def send_json(self, code, obj, extra=(), pretty=None):
        self.send_body(code, km.go_json(obj, self.pretty() if pretty is None else pretty), extra=extra)

    def send_error_status(self, err):
        self.send_json(err.code, err.body, extra=tuple(err.headers.items()))

    # ---- request dispatch ----------------------------------------------------

    def dispatch(self):
        app = self.server.app
        self.audit_id = str(uuid.uuid4())
        url = urlsplit(self.path)
        self.url_path = url.path
        self.query = dict(parse_qsl(url.query, keep_blank_values=True))
        self.pf, self.is_health, self.log_entry, self.user = None, False, None, None
        if self.url_path.startswith("/_fake/"):
            return self.control()
        if app.faults.refusing_everyone():   # "apiserver down": drop requests on kept-alive connections too
            app.faults.count_refused()
            self.close_connection = True
            return
        body = self.read_body() if self.command in ("POST", "PUT", "PATCH", "DELETE") else b""
        self.log_entry = {"t": round(time.monotonic(), 6), "method": self.command, "path": self.url_path,
                          "query": self.query, "user": None, "status": None}
        ident = app.authenticate(self.headers.get("Authorization"))
        if ident:
            self.user, groups = ident
            imp = self.headers.get("Impersonate-User")
            if imp:   # kubectl --as / --as-group; only system:masters may impersonate here
                if "system:masters" not in groups:
                    return self.send_error_status(forbidden(self.user, "impersonate", {
                        "group": "", "plural": "users", "name": imp, "ns": "", "sub": ""}))
                self.user = imp
                groups = (self.headers.get_all("Impersonate-Group") or rbac.identity_groups(imp)) + \
                    ["system:authenticated"]
            self.log_entry["user"] = self.user
        if app.faults.refusing_user(self.user):   # partitioned from this user: closed, no answer
            app.faults.count_refused()
            self.close_connection = True
            return
        injected = app.faults.take_failure(self.url_path, self.command)
        try:
            if injected:
                return self.send_injected(*injected)
            if not ident:
                return self.send_json(401, UNAUTHORIZED)
            masters = "system:masters" in groups
            self.pf = PF_EXEMPT if masters else PF_DEFAULT
            p = self.url_path.rstrip("/") or "/"
            if p in ("/healthz", "/livez", "/readyz"):
                return self.health(p[1:], masters)
            if p == "/version":
                return self.send_json(200, VERSION_INFO, pretty=True)
            if p in ("/api", "/apis", "/api/v1") or (p.startswith("/apis/") and p.count("/") == 3):
                return self.discovery(p)
            rt = route(p)
            if rt is None:
                if p.startswith("/api"):
                    raise ApiError(404, km.status_body(404, "the server could not find the requested resource",
                                                       "NotFound", {}))
                return self.send_body(404, b"404 page not found\n", "text/plain; charset=utf-8")
            self.handle_api(rt, self.user, groups, body)
        except ApiError as err:
            self.send_error_status(err)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.close_connection = True
        except Exception as e:  # a fake bug must show up as a 500, not as a dropped connection
            traceback.print_exc()
            self.close_connection = True
            self.send_json(500, km.status_body(500, "Internal error occurred: fake apiserver: %r" % e,
                                               "InternalError"))

    def send_injected(self, code, retry_after=1):
        if code == 401:
            return self.send_json(401, UNAUTHORIZED)
        self.pf = PF_DEFAULT
        if code == 403:
            rt = route(self.url_path) or {"group": "", "plural": "resource", "name": "", "ns": "", "sub": ""}
            return self.send_error_status(forbidden(self.user or "system:anonymous", "get", rt))
        reason, msg = FAULT_REASONS.get(code, (None, HTTPStatus(code).phrase))
        details = {"retryAfterSeconds": retry_after} if code in (429, 503, 504) else None
        extra = (("Retry-After", str(retry_after)),) if details else ()
        self.send_json(code, km.status_body(code, msg, reason, details), extra=extra)

    def health(self, name, masters):
        self.is_health = True
        self.pf = PF_EXEMPT if masters else PF_PROBES
        if "verbose" in self.query:
            checks = [c for c in READYZ_CHECKS if name == "readyz" or c not in NOT_LIVEZ]
            text = "".join("[+]%s ok\n" % c for c in checks) + "%s check passed\n" % name
        else:
            text = "ok"
        self.send_body(200, text.encode(), "text/plain; charset=utf-8")

    def discovery(self, p):
        store = self.server.app.store
        with store.cond:
            gvrs = {k[0] for k in store.objects} | {("v1", "nodes"), ("v1", "pods"), ("v1", "events"),
                                                    ("v1", "namespaces")}
        builtin = {(gv, plural): verbs for gv, plural, _, _, verbs in rbac.BUILTIN_RESOURCES}
        gvrs |= set(builtin)
        if p == "/api":
            host = "%s:%d" % self.server.server_address[:2]
            return self.send_json(200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": host}]})
        groups = sorted({gv for gv, _ in gvrs if "/" in gv})
        if p == "/apis":
            # One entry per group, every version it serves; the preferred one is v1 where served.
            by_group = {}
            for gv in groups:
                by_group.setdefault(gv.split("/")[0], []).append(gv)
            entries = []
            for name, gvs in sorted(by_group.items()):
                gvs.sort(key=lambda g: (not g.endswith("/v1"), g))
                entries.append({"name": name, "versions": [{"groupVersion": g, "version": g.split("/")[1]} for g in gvs],
                                "preferredVersion": {"groupVersion": gvs[0], "version": gvs[0].split("/")[1]}})
            return self.send_json(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": entries})
        gv = "v1" if p == "/api/v1" else p[len("/apis/"):]
        if gv != "v1" and gv not in groups:
            raise ApiError(404, km.status_body(404, "the server could not find the requested resource",
                                               "NotFound", {}))
        verbs = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
        resources = []
        for g, plural in sorted(gvrs):
            if g == gv:
                namespaced = plural not in km.CLUSTER_SCOPED
                entry = {"name": plural, "singularName": km.kind_of(plural).lower(),
                         "namespaced": namespaced, "kind": km.kind_of(plural),
                         "verbs": builtin.get((g, plural), verbs)}
                if plural in SHORT_NAMES:
                    entry["shortNames"] = SHORT_NAMES[plural]
                resources.append(entry)
                if plural in ("nodes", "pods"):
                    resources.append({"name": plural + "/status", "singularName": "", "namespaced": namespaced,
                                      "kind": km.kind_of(plural), "verbs": ["get", "patch", "update"]})
        self.send_json(200, {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
                             "resources": resources})

    # ---- resource API --------------------------------------------------------

    def handle_api(self, rt, user, groups, body):
        app = self.server.app
        watch = self.query.get("watch") in ("true", "1")
        method = self.command
        if method == "GET":
            verb = "watch" if watch else ("get" if rt["name"] else "list")
        else:
            verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(method, "get")
            if method == "DELETE" and not rt["name"]:
                verb = "deletecollection"
        if rt["plural"] in rbac.REVIEWS and method == "POST":
            if rt["plural"] == "subjectaccessreviews":
                app.authorize(user, groups, verb, rt)
            return self.send_json(201, rbac.review(app, rt["plural"], self.parse_object(body), user, groups))
        app.authorize(user, groups, verb, rt)
        if rt["plural"] in km.CLUSTER_SCOPED and rt["ns"]:
            raise ApiError(404, km.status_body(404, "the server could not find the requested resource",
                                               "NotFound", {}))
        gvr = (rt["gv"], rt["plural"])
        if verb == "watch":
            return self.watch(rt, gvr)
        if verb == "list":
            return self.send_json(200, self.list(rt, gvr))
        if verb == "get":
            return self.send_json(200, app.store.get(gvr, rt["ns"], rt["name"]))
        if verb == "create" and not rt["name"]:
            return self.send_json(201, self.create(rt, gvr, body))
        if verb == "patch" and rt["name"]:
            return self.send_json(200, self.patch(rt, gvr, body))
        if verb == "update" and rt["name"]:
            return self.send_json(200, self.update(rt, gvr, body))
        if verb == "delete":
            return self.delete(rt, gvr, body)
        raise ApiError(405, km.status_body(405, "the server does not allow this method on the requested resource",
                                           "MethodNotAllowed", {}))

    def selectors(self, rt):
        try:
            return (km.parse_field_selector(self.query.get("fieldSelector", ""), rt["plural"]),
                    km.parse_label_selector(self.query.get("labelSelector", "")))
        except km.SelectorError as e:
            raise bad_request(str(e))

    def list(self, rt, gvr):
        store = self.server.app.store
        fterms, lreqs = self.selectors(rt)
        rv_param = self.query.get("resourceVersion", "")
        rv = parse_rv(rv_param) if rv_param else None
        limit = int(self.query.get("limit") or 0)
        token, start, at = self.query.get("continue"), "", None
        current = store.current_rv()
        if token:
            list_rv, start = decode_continue(token)
            if list_rv < store.compacted:   # 04f: 410 plus a token to continue inconsistently
                meta = {"continue": encode_continue(-1, start)}
                raise ApiError(410, km.status_body(410, CONTINUE_TOO_OLD, "Expired", metadata=meta))
            at = list_rv if store.window_start <= list_rv < current else None
        elif self.query.get("resourceVersionMatch") == "Exact" and rv is not None:
            if rv > current:
                raise ApiError(500, km.status_body(500, "etcdserver: mvcc: required revision is a future revision"))
            if rv < max(store.compacted, store.window_start):
                raise ApiError(410, km.status_body(410, "The resourceVersion for the provided list is too old.",
                                                   "Expired"))
            list_rv, at = rv, (rv if rv < current else None)
        else:
            if rv is not None and rv > current and not store.wait_for_rv(rv, self.server.app.too_large_rv_wait):
                msg = "Too large resource version: %d, current: %d" % (rv, store.current_rv())
                details = {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                           "retryAfterSeconds": 1}
                raise ApiError(504, km.status_body(504, "Timeout: " + msg, "Timeout", details), {"Retry-After": "1"})
            if rv_param == "0":
                limit = 0   # served from the watch cache, which ignores limit
            list_rv = store.current_rv()
        prefix = rt["ns"] + "/" if rt["ns"] else ""
        items = [(key[len(prefix):], obj) for key, obj in store.list(gvr, rt["ns"], at)
                 if km.field_matches(obj, fterms) and km.label_matches(obj, lreqs)]
        items = [kv for kv in items if kv[0] >= start]
        page = items[:limit] if limit else items
        meta = {"resourceVersion": str(list_rv)}
        if limit and len(items) > limit:
            meta["continue"] = encode_continue(list_rv, page[-1][0] + "\x00")
            if not fterms and not lreqs:
                meta["remainingItemCount"] = len(items) - limit
        kind = km.kind_of(rt["plural"])
        return {"kind": kind + "List", "apiVersion": rt["gv"], "metadata": meta,
                "items": [{k: v for k, v in obj.items() if k not in ("kind", "apiVersion")} for _, obj in page]}

    def parse_object(self, body):
        ctype = self.headers.get("Content-Type", "application/json").split(";")[0].strip()
        try:
            if ctype in ("application/json", "*/*", ""):
                obj = json.loads(body or b"null")
            elif ctype == "application/yaml":
                obj = yaml.safe_load(body)
            elif ctype == "application/vnd.kubernetes.protobuf":
                obj = k8s_protobuf.decode(body)
            else:
                raise ApiError(415, UNSUPPORTED_MEDIA)
        except (ValueError, yaml.YAMLError) as e:
            raise bad_request("the body of the request was in an unknown format: %s" % e)
        if not isinstance(obj, dict):
            raise bad_request("Object 'Kind' is missing in '%s'" % body.decode(errors="replace")[:200])
        return obj

    def create(self, rt, gvr, body):
        obj = self.parse_object(body)
        kind = km.kind_of(rt["plural"])
        obj.setdefault("kind", kind)
        obj.setdefault("apiVersion", rt["gv"])
        meta = obj.setdefault("metadata", {})
        if rt["ns"]:
            # An empty namespace in the body is the request's (protobuf clients always send the field).
            if (meta.get("namespace") or rt["ns"]) != rt["ns"]:
                raise bad_request("the namespace of the provided object does not match the namespace sent on "
                                  "the request")
            meta["namespace"] = rt["ns"]
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + km.random_suffix()
        causes = [] if meta.get("name") else [{"reason": "FieldValueRequired",
                                               "message": "Required value: name or generateName is required",
                                               "field": "metadata.name"}]
        if obj["kind"] == "Event":
            causes += km.validate_event(obj, rt["ns"])
        if causes:
            raise ApiError(422, km.invalid_status(obj["kind"], meta.get("name", ""), causes))
        for key in ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp"):
            meta.pop(key, None)
        km.admit_create(obj)
        return self.server.app.store.create(gvr, rt["ns"], obj)

    def conflict(self, rt):
        msg = ('Operation cannot be fulfilled on %s "%s": the object has been modified; please apply your '
               'changes to the latest version and try again' % (rt["plural"], rt["name"]))
        return ApiError(409, km.status_body(409, msg, "Conflict", {"name": rt["name"], "kind": rt["plural"]}))

    def finish_update(self, rt, cur, new):
        """Shared by PATCH and PUT: optimistic concurrency, immutable identity, status/spec split."""
        new_meta = new.setdefault("metadata", {})
        if new_meta.get("resourceVersion") not in (None, "", cur["metadata"]["resourceVersion"]):
            raise self.conflict(rt)
        for key in ("name", "namespace", "uid", "creationTimestamp", "resourceVersion"):
            if key in cur["metadata"]:
                new_meta[key] = cur["metadata"][key]
        new["kind"], new["apiVersion"] = cur["kind"], cur["apiVersion"]
        if cur["kind"] in ("Node", "Pod"):
            # The main resource ignores status changes and /status ignores spec changes.
            keep = "spec" if rt["sub"] == "status" else "status"
            if keep in cur:
                new[keep] = cur[keep]
        return new

    def patch(self, rt, gvr, body):
        ctype = self.headers.get("Content-Type", "").split(";")[0].strip()
        ptype = PATCH_TYPES.get(ctype)
        if ptype is None or ptype == "apply":
            raise ApiError(415, UNSUPPORTED_MEDIA)
        try:
            patch = json.loads(body or b"null")
        except ValueError as e:
            raise bad_request("error decoding patch: %s" % e)

        def mutate(cur):
            try:
                if ptype == "json":
                    new = km.json_patch(cur, patch)
                elif ptype == "strategic":
                    new = km.strategic_merge_patch(cur, patch)
                else:
                    new = km.merge_patch(cur, patch)
            except km.PatchError as e:
                raise ApiError(422 if ptype == "json" else 400,
                               km.status_body(422 if ptype == "json" else 400, str(e),
                                              "Invalid" if ptype == "json" else "BadRequest"))
            return self.finish_update(rt, cur, new)
        return self.server.app.store.update(gvr, rt["ns"], rt["name"], mutate)

    def update(self, rt, gvr, body):
        new = self.parse_object(body)
        if (new.get("metadata") or {}).get("name", rt["name"]) != rt["name"]:
            raise bad_request("the name of the object (%s) does not match the name on the URL (%s)"
                              % (new["metadata"]["name"], rt["name"]))
        return self.server.app.store.update(gvr, rt["ns"], rt["name"], lambda cur: self.finish_update(rt, cur, new))

    def delete(self, rt, gvr, body):
        store = self.server.app.store
        try:
            opts = json.loads(body) if body.strip() else {}
        except ValueError:
            opts = {}
        grace = self.query.get("gracePeriodSeconds", opts.get("gracePeriodSeconds"))
        grace = int(grace) if grace not in (None, "") else None
        cur = store.get(gvr, rt["ns"], rt["name"])
        if rt["plural"] == "pods":
            spec, phase = cur.get("spec") or {}, (cur.get("status") or {}).get("phase")
            if grace is None:
                grace = spec.get("terminationGracePeriodSeconds", 30)
            if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
                grace = 0   # nothing runs it: deleted at once
        else:
            grace = 0
        finalizers = cur["metadata"].get("finalizers")
        if grace > 0 or finalizers:
            # Graceful (03k): one MODIFIED with deletionTimestamp; the object stays (no kubelet).
            def mark(obj):
                if obj["metadata"].get("deletionTimestamp"):
                    return None
                obj["metadata"]["deletionTimestamp"] = km.now_rfc3339(grace)
                obj["metadata"]["deletionGracePeriodSeconds"] = grace
                return obj
            return self.send_json(200, store.update(gvr, rt["ns"], rt["name"], mark))
        if rt["plural"] == "pods":
            def mark_now(obj):   # 03j: MODIFIED (deletionTimestamp, grace 0) then DELETED at rv+1
                obj["metadata"].setdefault("deletionTimestamp", km.now_rfc3339())
                obj["metadata"]["deletionGracePeriodSeconds"] = 0
                return obj
            return self.send_json(200, store.delete(gvr, rt["ns"], rt["name"], mark_now))
        gone = store.delete(gvr, rt["ns"], rt["name"])
        details = {"name": rt["name"], "kind": rt["plural"], "uid": gone["metadata"].get("uid", "")}
        if rt["group"]:
            details = {"name": rt["name"], "group": rt["group"], "kind": rt["plural"], "uid": details["uid"]}
        self.send_json(200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                             "details": details})

    # ---- watch ---------------------------------------------------------------

    def watch(self, rt, gvr):
        app = self.server.app
        fterms, lreqs = self.selectors(rt)   # a bad selector is a plain 400, no stream (08c)
        if rt["name"]:
            fterms.append(("metadata.name", "=", rt["name"]))
        rv_param = self.query.get("resourceVersion")
        if rv_param:
            parse_rv(rv_param)
        timeout = float(self.query.get("timeoutSeconds") or app.default_watch_timeout)
        info = {"user": self.user, "path": self.url_path, "query": self.query}
        w = Watcher(gvr, km.kind_of(rt["plural"]), rt["gv"], rt["ns"], fterms, lreqs,
                    self.query.get("allowWatchBookmarks") == "true", time.monotonic() + timeout, info)
        expired = app.store.start_watch(w, rv_param)
        self.wfile.write(self.start_response(200, "application/json"))
        if expired:   # 04b: 200, one ERROR event, then the stream ends
            self.write_event("ERROR", expired)
            self.wfile.write(b"0\r\n\r\n")
            return
        try:
            self.stream(w)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            self.close_connection = True
        finally:
            app.store.stop_watch(w)

    def write_event(self, etype, obj):
        data = km.go_json({"type": etype, "object": obj})
        self.wfile.write(b"%x\r\n" % len(data) + data + b"\r\n")   # one event, one chunk

    def next_bookmark(self, w, now):
        if not w.allow_bookmarks:
            return INF
        app = self.server.app
        at = min(now + app.bookmark_period, w.deadline - app.bookmark_lead)
        return at if at > now else INF

    def stream(self, w):
        app = self.server.app
        bookmark_at = self.next_bookmark(w, time.monotonic())
        while True:
            with w.cond:
                # While held (/_fake/hold-watches), events queue up unsent: a watch event that
                # has not reached its client yet.
                while (not w.queue or app.watches_held) and w.end is None:
                    wait = min(w.deadline, bookmark_at) - time.monotonic()
                    if wait <= 0:
                        break
                    w.cond.wait(wait)
                items, end = ([] if app.watches_held else list(w.queue)), w.end
                if not app.watches_held:
                    w.queue.clear()
            for etype, obj in items:
                self.write_event(etype, obj)
                w.sent += 1
                w.last_rv = max(w.last_rv, int(obj["metadata"].get("resourceVersion") or 0))
            if end:
                return self.end_stream(end)
            now = time.monotonic()
            if now >= w.deadline:
                self.wfile.write(b"0\r\n\r\n")
                return
            if now >= bookmark_at and not app.watches_held:
                rv = self.server.app.store.bookmark_rv(w)
                if rv is not None:
                    self.write_event("BOOKMARK", km.bookmark_object(w.kind, w.api_version, rv))
                bookmark_at = self.next_bookmark(w, now)

    def end_stream(self, end):
        how, arg = end
        if how == "expire":
            self.write_event("ERROR", arg)
            self.wfile.write(b"0\r\n\r\n")
            return
        if how == "end":   # a clean end, as at timeoutSeconds or an apiserver shutdown (04n)
            self.wfile.write(b"0\r\n\r\n")
            return
        # "drop": TCP close without the terminating chunk (optionally an RST).
        if arg:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # ---- control API -----------------------------------------------------------

    def control(self):
        app, store, faults = self.server.app, self.server.app.store, self.server.app.faults
        self.read_body()
        q, op, m = self.query, self.url_path[len("/_fake/"):].strip("/"), self.command
        result = None
        if op == "expire-watches" and m == "POST":
            result = {"expired": store.expire_watches(), "windowStart": store.window_start}
        elif op == "restart" and m == "POST":
            # Refuse first, so that no client gets back in between the end of its watch and the
            # outage.
            seconds = float(q.get("seconds", 2))
            faults.refuse_user = None
            faults.refuse_until = time.monotonic() + seconds
            ended = store.restart(int(q.get("writes", 2)))
            result = {"ended": ended, "windowStart": store.window_start, "refusingFor": seconds}
        elif op == "token" and m == "POST":
            # A rotated service account token: the new one is accepted from now on.
            user, token = q.get("user", ""), q.get("token", "")
            groups = [g for g in q.get("groups", "").split(",") if g]
            app.tokens[token] = (user, groups + rbac.identity_groups(user) + ["system:authenticated"])
            result = {"user": user}
        elif op == "token" and m == "DELETE":
            # ... and the old one is not (401 Unauthorized), as after its expiry.
            result = {"revoked": app.tokens.pop(q.get("token", ""), None) is not None}
        elif op == "rotate-tls" and m == "POST":
            # A new CA and a server certificate it signs: new handshakes present it, and the CA
            # file the kubeconfig names is replaced (as a kubelet updates a projected ca.crt).
            tls_dir = app.args.tls_dir
            fresh = os.path.join(tls_dir, "rotated-%d" % int(time.monotonic() * 1e6))
            host = self.server.server_address[0]
            paths = ensure_tls(fresh, host)
            self.server.ssl_ctx.load_cert_chain(paths["server.crt"], paths["server.key"])
            with open(paths["ca.crt"]) as f:
                write_atomic(os.path.join(tls_dir, "ca.crt"), f.read())
            result = {"rotated": fresh}
        elif op in ("hold-watches", "release-watches") and m == "POST":
            app.watches_held = op == "hold-watches"
            ws = store.all_watchers()
            for w in ws:
                with w.cond:
                    w.cond.notify_all()
            result = {"held": app.watches_held, "watches": len(ws)}
        elif op == "drop-watches" and m == "POST":
            ws = store.all_watchers()
            for w in ws:
                w.finish(("drop", q.get("rst") in ("1", "true")))
            result = {"dropped": len(ws)}
        elif op == "fail-next" and m == "POST":
            rule = {"count": int(q.get("count", 1)), "status": int(q.get("status", 503)), "path": q.get("path", "/"),
                    "method": q.get("method", "").upper(), "retryAfter": int(q.get("retryAfter", 1))}
            with faults.lock:
                faults.fail_rules.append(rule)
            result = rule
        elif op == "fail-next" and m == "DELETE":
            with faults.lock:
                faults.fail_rules.clear()
            result = {}
        elif op == "refuse" and m == "POST":
            faults.refuse_user = q.get("user") or None
            faults.refuse_until = time.monotonic() + float(q.get("seconds", 5))
            result = {"refusingFor": float(q.get("seconds", 5))}
            if q.get("drop") in ("1", "true"):
                # A full outage in one step: no client can reconnect between the two.
                ws = [w for w in store.all_watchers()
                      if faults.refuse_user is None or w.info.get("user") == faults.refuse_user]
                for w in ws:
                    w.finish(("drop", False))
                result["dropped"] = len(ws)
        elif op == "bookmark" and m == "POST":
            rv = int(q.get("rv") or store.current_rv())
            ws = [w for w in store.all_watchers() if w.allow_bookmarks]
            for w in ws:
                w.push(("BOOKMARK", km.bookmark_object(w.kind, w.api_version, rv)))
            result = {"bookmarked": len(ws), "resourceVersion": str(rv)}
        elif op == "compact" and m == "POST":
            with store.cond:
                store.compacted = int(q.get("rv") or store.rv)
            result = {"compacted": store.compacted}
        elif op == "requests" and m == "GET":
            with faults.lock:
                result = list(faults.requests)
        elif op == "requests" and m == "DELETE":
            with faults.lock:
                faults.requests.clear()
            result = {}
        elif op == "watches" and m == "GET":
            result = [w.describe() for w in store.all_watchers()]
        elif op == "state" and m == "GET":
            with store.cond:
                result = {"resourceVersion": str(store.rv), "windowStart": store.window_start,
                          "compacted": store.compacted, "watches": len(store.watchers),
                          "objects": len(store.objects), "now": time.monotonic(),
                          "refused": faults.refused}
        if result is None:
            return self.send_json(404, km.status_body(404, "unknown control endpoint %s %s" % (m, op), "NotFound"))
        self.send_json(200, result, pretty=False)


CONTINUE_TOO_OLD = ("The provided continue parameter is too old to display a consistent list result. You can start "
                    "a new list without the continue parameter, or use the continue token in this response to "
                    "retrieve the remainder of the results. Continuing with the provided token results in an "
                    "inconsistent list - objects that were created, modified, or deleted between the time the first "
                    "chunk was returned and now may show up in the list.")


# --------------------------------------------------------------------------
# Server, TLS material, kubeconfig, CLI
# --------------------------------------------------------------------------

class FakeServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address, app, ssl_ctx):
        self.app, self.ssl_ctx = app, ssl_ctx
        super().__init__(address, Handler)

    def verify_request(self, request, client_address):
        if self.app.faults.refusing_everyone():   # refused: accepted, then closed at once
            self.app.faults.count_refused()
            return False
        return True

    def finish_request(self, request, client_address):
        # TLS handshake in the connection's own thread so a slow client cannot stall accept().
        try:
            request.settimeout(10)
            # Go's net/http (the real apiserver) sets TCP_NODELAY on every connection; without it
            # small writes wait for the client's delayed ACK (~40 ms).
            request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            tls = self.ssl_ctx.wrap_socket(request, server_side=True)
            tls.settimeout(None)
        except (ssl.SSLError, OSError):
            request.close()
            return
        try:
            self.RequestHandlerClass(tls, client_address, self)
        except (ConnectionError, ssl.SSLError, OSError):
            pass
        finally:
            tls.close()

    def handle_error(self, request, client_address):
        if self.app.verbose:
            super().handle_error(request, client_address)


def run_openssl(*args):
    subprocess.run(["openssl"] + list(args), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def ensure_tls(tls_dir, host):
    """Create a throwaway CA and a server cert (SAN 127.0.0.1, localhost) unless DIR already has them."""
    os.makedirs(tls_dir, exist_ok=True)
    paths = {n: os.path.join(tls_dir, n) for n in ("ca.crt", "ca.key", "server.crt", "server.key")}
    if all(os.path.exists(paths[n]) for n in ("ca.crt", "server.crt", "server.key")):
        return paths
    tmp = os.path.join(tls_dir, ".gen-%d" % os.getpid())
    os.makedirs(tmp, exist_ok=True)
    t = {n: os.path.join(tmp, n) for n in paths}
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run_openssl("req", "-x509", *ec, "-keyout", t["ca.key"], "-out", t["ca.crt"], "-days", "3650",
                "-subj", "/CN=fake-kube-apiserver-ca", "-addext", "basicConstraints=critical,CA:TRUE",
                "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature")
    csr, ext = os.path.join(tmp, "server.csr"), os.path.join(tmp, "ext.cnf")
    sans = ["IP:127.0.0.1", "DNS:localhost"]
    if host not in ("127.0.0.1", "localhost", "", "0.0.0.0"):
        sans.append(("IP:" if host.replace(".", "").replace(":", "").isalnum() and
                     any(c.isdigit() for c in host) else "DNS:") + host)
    with open(ext, "w") as f:
        f.write("subjectAltName=%s\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,"
                "keyEncipherment\nextendedKeyUsage=serverAuth\n" % ",".join(sans))
    run_openssl("req", "-new", *ec, "-keyout", t["server.key"], "-out", csr, "-subj", "/CN=kube-apiserver")
    run_openssl("x509", "-req", "-in", csr, "-CA", t["ca.crt"], "-CAkey", t["ca.key"], "-CAcreateserial",
                "-out", t["server.crt"], "-days", "3650", "-extfile", ext)
    for n in paths:
        os.replace(t[n], paths[n])
    for leftover in os.listdir(tmp):
        os.unlink(os.path.join(tmp, leftover))
    os.rmdir(tmp)
    return paths


def write_atomic(path, text):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def write_kubeconfig(tls_dir, url, app):
    users = sorted({(user, token) for token, (user, _) in app.tokens.items()})
    admin = next((u for u, _ in users if u == "admin"), users[0][0] if users else "admin")
    cfg = {"apiVersion": "v1", "kind": "Config",
           "clusters": [{"name": "fake", "cluster": {"server": url,
                                                     "certificate-authority": os.path.abspath(
                                                         os.path.join(tls_dir, "ca.crt"))}}],
           "users": [{"name": u, "user": {"token": tok}} for u, tok in users],
           "contexts": [{"name": u, "context": {"cluster": "fake", "user": u}} for u, _ in users],
           "current-context": admin, "preferences": {}}
    write_atomic(os.path.join(tls_dir, "kubeconfig"), yaml.safe_dump(cfg, sort_keys=False))


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--listen", default="127.0.0.1:0", help="HOST:PORT (port 0 picks a free port)")
    p.add_argument("--tls-dir", required=True, help="ca.crt/server.crt/server.key (generated if missing)")
    p.add_argument("--token", action="append", help="USER=TOKEN[:GROUP[,GROUP]] (repeatable)")
    p.add_argument("--rbac", help="JSON {user-or-group: [{resources, verbs[, namespaces]}]}")
    p.add_argument("--objects", action="append", nargs="+", default=[], help="JSON/YAML files to preload")
    p.add_argument("--ready-file", help="written atomically with the URL once listening")
    p.add_argument("--bookmark-lead", type=float, default=2.0, help="bookmark this long before timeoutSeconds")
    p.add_argument("--bookmark-period", type=float, default=60.0, help="periodic bookmark interval")
    p.add_argument("--too-large-rv-wait", type=float, default=3.0, help="wait before a list's 504 (04k)")
    p.add_argument("--default-watch-timeout", type=float, default=1800.0, help="watch without timeoutSeconds")
    p.add_argument("--watch-cache-size", type=int, default=1000, help="events kept for watch resumption")
    p.add_argument("--verbose", action="store_true", help="log requests to stderr")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    host, _, port = args.listen.rpartition(":")
    app = App(args)
    for group in args.objects:
        for path in group:
            app.load_objects(path)
    paths = ensure_tls(args.tls_dir, host)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_alpn_protocols(["http/1.1"])
    ctx.load_cert_chain(paths["server.crt"], paths["server.key"])
    server = FakeServer((host, int(port)), app, ctx)
    url = "https://%s:%d" % (host if host not in ("", "0.0.0.0") else "127.0.0.1", server.server_address[1])
    write_kubeconfig(args.tls_dir, url, app)
    if args.ready_file:
        write_atomic(args.ready_file, url)
    print(url, flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
