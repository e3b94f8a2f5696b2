"""In-memory etcd + watch cache for the fake kube-apiserver.

One global revision counter shared by all kinds (like etcd), an event history
that plays the role of the apiserver's watch cache (its window decides which
watch resourceVersions are "too old"), and per-watcher queues guarded by their
own condition variables so every watch stream is woken exactly when it has
something to send.
"""
import collections
import copy
import itertools
import threading
import time

import k8s_model as km


class ApiError(Exception):
    """An error response: HTTP code plus a metav1.Status body (and optional extra headers)."""

    def __init__(self, code, body, headers=None):
        super().__init__(body.get("message", ""))
        self.code, self.body, self.headers = code, body, headers or {}


def not_found(plural, name, group=""):
    details = {"name": name, "group": group, "kind": plural} if group else {"name": name, "kind": plural}
    return ApiError(404, km.status_body(404, '%s "%s" not found' % (plural, name), "NotFound", details))


Change = collections.namedtuple("Change", "rv type gvr ns name obj prev")


class Watcher:
    """One open watch stream.  The store pushes translated events; the HTTP thread pops them."""
    _ids = itertools.count(1)

    def __init__(self, gvr, kind, api_version, namespace, field_terms, label_reqs, allow_bookmarks,
                 deadline, info):
        self.id = next(self._ids)
        self.gvr, self.kind, self.api_version = gvr, kind, api_version
        self.namespace, self.field_terms, self.label_reqs = namespace, field_terms, label_reqs
        self.allow_bookmarks, self.deadline, self.info = allow_bookmarks, deadline, info
        self.start_rv = 0
        self.last_rv = 0            # RV of the newest event handed to the stream (for 410 messages)
        self.from_cache = True      # False for watches without resourceVersion (served from etcd)
        self.cond = threading.Condition()
        self.queue = collections.deque()    # (type, obj) tuples ready to send
        self.end = None                     # None | ("expire", status) | ("drop", rst)
        self.sent = 0
        self.started = time.monotonic()

    def matches(self, obj):
        return km.field_matches(obj, self.field_terms) and km.label_matches(obj, self.label_reqs)

    def translate(self, ch):
        """Map a store change to the event this watcher sees (watch-cache semantics), or None."""
        if ch.gvr != self.gvr or ch.rv <= self.start_rv:
            return None
        if self.namespace and ch.ns != self.namespace:
            return None
        if ch.type == "ADDED":
            return ("ADDED", ch.obj) if self.matches(ch.obj) else None
        if ch.type == "DELETED":
            return ("DELETED", ch.obj) if self.matches(ch.obj) else None
        cur, prev = self.matches(ch.obj), ch.prev is not None and self.matches(ch.prev)
        if cur and prev:
            return ("MODIFIED", ch.obj)
        if cur:
            return ("ADDED", ch.obj)
        if prev:  # stopped matching: DELETED carrying the previous state at the new RV
            old = copy.deepcopy(ch.prev)
            old["metadata"]["resourceVersion"] = str(ch.rv)
            return ("DELETED", old)
        return None

    def push(self, item):
        with self.cond:
            if self.end is None:
                self.queue.append(item)
                self.cond.notify()

    def finish(self, how):
        with self.cond:
            if self.end is None:
                self.end = how
                self.cond.notify()

    def describe(self):
        d = dict(self.info)
        d.update({"id": self.id, "resource": self.gvr[1], "namespace": self.namespace,
                  "startRV": self.start_rv, "allowWatchBookmarks": self.allow_bookmarks,
                  "servedFromCache": self.from_cache, "eventsSent": self.sent,
                  "age": round(time.monotonic() - self.started, 3),
                  "remaining": round(self.deadline - time.monotonic(), 3)})
        return d


class Store:
    def __init__(self, history_size=1000):
        self.cond = threading.Condition()   # guards everything below; notified on every write
        self.rv = 1
        self.objects = {}                   # (gvr, ns, name) -> normalised object
        self.history = collections.deque()  # Change records with rv > window_start
        self.history_size = history_size
        self.window_start = 1               # oldest RV a watch may resume from
        self.compacted = 0                  # etcd compaction revision (continue/Exact -> 410)
        self.resource_rv = {}               # gvr -> last RV the "watch cache" of that type saw
        self.watchers = set()

    # ---- reads -----------------------------------------------------------

    def current_rv(self):
        with self.cond:
            return self.rv

    def get(self, gvr, ns, name):
        with self.cond:
            obj = self.objects.get((gvr, ns, name))
            if obj is None:
                raise not_found(gvr[1], name, gvr[0].split("/")[0] if "/" in gvr[0] else "")
            return copy.deepcopy(obj)

    def list(self, gvr, ns, at_rv=None):
        """Sorted (key, object) pairs; at_rv reconstructs an older snapshot from the history."""
        with self.cond:
            objs = self.snapshot(at_rv) if at_rv is not None else self.objects
            items = [(self._etcd_key(k), copy.deepcopy(o)) for k, o in objs.items()
                     if k[0] == gvr and (not ns or k[1] == ns)]
            return sorted(items, key=lambda kv: kv[0])

    @staticmethod
    def _etcd_key(key):
        _, ns, name = key
        return "%s/%s" % (ns, name) if ns else name

    def snapshot(self, at_rv):
        """State at revision at_rv, undoing history newer than it (caller holds the lock)."""
        objs = dict(self.objects)
        for ch in reversed(self.history):
            if ch.rv <= at_rv:
                break
            key = (ch.gvr, ch.ns, ch.name)
            if ch.type == "ADDED":
                objs.pop(key, None)
            else:
                objs[key] = ch.prev
        return objs

    def wait_for_rv(self, rv, timeout):
        with self.cond:
            return self.cond.wait_for(lambda: self.rv >= rv, timeout)

    # ---- writes ----------------------------------------------------------

    def _commit(self, change_type, gvr, ns, name, obj, prev):
        """Bump the global revision, store obj at it, record history, fan out to watchers."""
        self.rv += 1
        key = (gvr, ns, name)
        if obj is not None:
            obj["metadata"]["resourceVersion"] = str(self.rv)
            obj = km.normalise(obj)
        if change_type == "DELETED":
            self.objects.pop(key, None)
        else:
            self.objects[key] = obj
        ch = Change(self.rv, change_type, gvr, ns, name, obj, prev)
        self.history.append(ch)
        while len(self.history) > self.history_size:
            self.window_start = self.history.popleft().rv
        self.resource_rv[gvr] = self.rv
        for w in list(self.watchers):
            ev = w.translate(ch)
            if ev:
                w.push(ev)
        self.cond.notify_all()
        return copy.deepcopy(obj)

    def load(self, gvr, ns, obj):
        """Seed an object from --objects (keeps the given uid, assigns a fresh RV)."""
        with self.cond:
            self.rv += 1
            km.stamp_new(obj, self.rv)
            self.objects[(gvr, ns, obj["metadata"]["name"])] = km.normalise(obj)
            # Loading happens before serving: the watch cache starts after it.
            self.window_start = self.rv
            self.resource_rv.clear()

    def create(self, gvr, ns, obj):
        with self.cond:
            name = obj["metadata"]["name"]
            if (gvr, ns, name) in self.objects:
                details = {"name": name, "kind": gvr[1]}
                raise ApiError(409, km.status_body(409, '%s "%s" already exists' % (gvr[1], name),
                                                   "AlreadyExists", details))
            km.stamp_new(obj, self.rv + 1)
            return self._commit("ADDED", gvr, ns, name, obj, None)

    def update(self, gvr, ns, name, mutate):
        """Read-modify-write under the lock.  mutate(copy) returns the new object or None (no-op)."""
        with self.cond:
            cur = self.objects.get((gvr, ns, name))
            if cur is None:
                raise not_found(gvr[1], name)
            new = mutate(copy.deepcopy(cur))
            if new is None or km.normalise(new) == cur:
                return copy.deepcopy(cur)   # no-op writes do not bump the RV (no watch event)
            return self._commit("MODIFIED", gvr, ns, name, new, cur)

    def delete(self, gvr, ns, name, mutate_first=None):
        """Delete; with mutate_first, first write a MODIFIED (pod deletionTimestamp, 03j)."""
        with self.cond:
            cur = self.objects.get((gvr, ns, name))
            if cur is None:
                raise not_found(gvr[1], name)
            if mutate_first:
                cur = self._commit("MODIFIED", gvr, ns, name, mutate_first(copy.deepcopy(cur)), cur)
                cur = self.objects[(gvr, ns, name)]
            return self._commit("DELETED", gvr, ns, name, copy.deepcopy(cur), cur)

    # ---- watches ---------------------------------------------------------

    def start_watch(self, w, rv_param):
        """Register w atomically with its initial events.  Returns a 410 Status if rv is too old."""
        with self.cond:
            if rv_param in (None, "", "0"):
                # Synthetic ADDED for the current state (02g/02h), then changes after now.
                # Without a resourceVersion the real server watches etcd directly: no bookmarks.
                w.from_cache = rv_param == "0"
                w.start_rv = self.rv
                for (gvr, ns, _), obj in sorted(self.objects.items(), key=lambda kv: self._etcd_key(kv[0])):
                    if gvr == w.gvr and (not w.namespace or ns == w.namespace) and w.matches(obj):
                        w.queue.append(("ADDED", copy.deepcopy(obj)))
            else:
                rv = int(rv_param)
                if rv < self.window_start:
                    return km.status_body(410, "too old resource version: %d (%d)" % (rv, self.window_start),
                                          "Expired")
                w.start_rv = rv
                for ch in self.history:  # replay what happened since rv (04i)
                    ev = w.translate(ch)
                    if ev:
                        w.queue.append(ev)
            w.last_rv = w.start_rv
            self.watchers.add(w)
            return None

    def stop_watch(self, w):
        with self.cond:
            self.watchers.discard(w)

    def bookmark_rv(self, w):
        """RV for a timer bookmark, or None when the type's cache has nothing newer (02f)."""
        with self.cond:
            cache_rv = self.resource_rv.get(w.gvr, self.window_start)
            return cache_rv if w.from_cache and cache_rv > w.start_rv else None

    def expire_watches(self):
        """Simulated apiserver restart: the watch cache restarts at the current revision."""
        with self.cond:
            self.window_start = self.rv
            self.history.clear()
            self.resource_rv.clear()
            for w in list(self.watchers):
                msg = "too old resource version: %d (%d)" % (w.last_rv, self.window_start)
                w.finish(("expire", km.status_body(410, msg, "Expired")))
            return len(self.watchers)

    def restart(self, startup_writes=2):
        """A real apiserver restart (04n, 04b): open watches end cleanly, with no ERROR; the new
        watch cache starts at the revision after the apiserver's own startup writes (leases,
        endpoints: other kinds), so a re-watch from any RV seen before gets 410, a LIST works."""
        with self.cond:
            self.rv += max(0, startup_writes)
            self.window_start = self.rv
            self.history.clear()
            self.resource_rv.clear()
            ws = list(self.watchers)
            for w in ws:
                w.finish(("end", None))
            self.cond.notify_all()
            return len(ws)

    def all_watchers(self):
        with self.cond:
            return list(self.watchers)
