"""Object model helpers for the fake kube-apiserver.

Everything here is pure (no I/O, no locking): JSON encoding the way Go's
encoding/json does it, field order of the core/v1 types, zero-value fields,
admission-visible defaults, quantity canonicalisation, patch application and
field/label selectors.  Ground truth: tests/data/transcripts (a copy of the captures) (README.md).
"""
import copy
import datetime
import json
import random
import re
import uuid
from fractions import Fraction

# --------------------------------------------------------------------------
# JSON encoding
# --------------------------------------------------------------------------


def go_json(obj, pretty=False):
    """Encode like Go: UTF-8, HTML-escaped <>&, compact (+"\n") or indented.

    The apiserver pretty-prints for curl/wget user agents (01f) and then has no
    trailing newline; compact output always ends with exactly one "\n".
    """
    if pretty:
        text = json.dumps(obj, indent=2, ensure_ascii=False)
    else:
        text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False) + "\n"
    text = (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))
    return text.encode("utf-8")


def now_rfc3339(offset_seconds=0):
    t = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=offset_seconds)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def status_body(code, message, reason=None, details=None, metadata=None):
    """A metav1.Status in the exact field order the apiserver uses."""
    body = {"kind": "Status", "apiVersion": "v1", "metadata": metadata or {},
            "status": "Failure", "message": message}
    if reason:
        body["reason"] = reason
    if details is not None:
        body["details"] = details
    body["code"] = code
    return body


# --------------------------------------------------------------------------
# Kinds and resources
# --------------------------------------------------------------------------

KIND_TO_PLURAL = {"Node": "nodes", "Pod": "pods", "Event": "events", "Namespace": "namespaces",
                  "Endpoints": "endpoints", "RuntimeClass": "runtimeclasses",
                  "PriorityClass": "priorityclasses", "StorageClass": "storageclasses",
                  "ConfigMap": "configmaps", "ServiceAccount": "serviceaccounts", "DaemonSet": "daemonsets",
                  "ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings",
                  "RoleBinding": "rolebindings", "ValidatingAdmissionPolicy": "validatingadmissionpolicies",
                  "ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings",
                  "FlowSchema": "flowschemas", "PriorityLevelConfiguration": "prioritylevelconfigurations",
                  "SelfSubjectAccessReview": "selfsubjectaccessreviews",
                  "SelfSubjectRulesReview": "selfsubjectrulesreviews", "SubjectAccessReview": "subjectaccessreviews"}
PLURAL_TO_KIND = {v: k for k, v in KIND_TO_PLURAL.items()}
CLUSTER_SCOPED = {"nodes", "namespaces", "persistentvolumes", "runtimeclasses", "priorityclasses",
                  "storageclasses", "clusterroles", "clusterrolebindings",
                  "customresourcedefinitions", "csinodes", "csidrivers", "validatingadmissionpolicies",
                  "validatingadmissionpolicybindings", "selfsubjectaccessreviews", "selfsubjectrulesreviews",
                  "subjectaccessreviews", "flowschemas", "prioritylevelconfigurations"}


def plural_of(kind):
    if kind in KIND_TO_PLURAL:
        return KIND_TO_PLURAL[kind]
    low = kind.lower()
    if low.endswith("y"):
        return low[:-1] + "ies"
    if low.endswith("s"):
        return low + "es"
    return low + "s"


def kind_of(plural):
    return PLURAL_TO_KIND.get(plural) or plural[:1].upper() + plural[1:-1]


# --------------------------------------------------------------------------
# Field order and zero values (what Go's struct serialisation produces)
# --------------------------------------------------------------------------

META_ORDER = ["name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
              "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
              "annotations", "ownerReferences", "finalizers", "managedFields"]
NODE_SPEC_ORDER = ["podCIDR", "podCIDRs", "providerID", "unschedulable", "taints", "configSource", "externalID"]
NODE_STATUS_ORDER = ["capacity", "allocatable", "phase", "conditions", "addresses", "daemonEndpoints",
                     "nodeInfo", "images", "volumesInUse", "volumesAttached", "config"]
NODE_INFO_KEYS = ["machineID", "systemUUID", "bootID", "kernelVersion", "osImage", "containerRuntimeVersion",
                  "kubeletVersion", "kubeProxyVersion", "operatingSystem", "architecture"]
POD_SPEC_ORDER = ["volumes", "initContainers", "containers", "ephemeralContainers", "restartPolicy",
                  "terminationGracePeriodSeconds", "activeDeadlineSeconds", "dnsPolicy", "nodeSelector",
                  "serviceAccountName", "serviceAccount", "automountServiceAccountToken", "nodeName",
                  "hostNetwork", "hostPID", "hostIPC", "shareProcessNamespace", "securityContext",
                  "imagePullSecrets", "hostname", "subdomain", "affinity", "schedulerName", "tolerations",
                  "hostAliases", "priorityClassName", "priority", "dnsConfig", "readinessGates",
                  "runtimeClassName", "enableServiceLinks", "preemptionPolicy", "overhead",
                  "topologySpreadConstraints", "setHostnameAsFQDN", "os", "hostUsers", "schedulingGates",
                  "resourceClaims"]
POD_STATUS_ORDER = ["phase", "conditions", "message", "reason", "nominatedNodeName", "hostIP", "podIP",
                    "podIPs", "startTime", "initContainerStatuses", "containerStatuses", "qosClass",
                    "ephemeralContainerStatuses"]
CONTAINER_ORDER = ["name", "image", "command", "args", "workingDir", "ports", "envFrom", "env", "resources",
                   "volumeMounts", "volumeDevices", "livenessProbe", "readinessProbe", "startupProbe",
                   "lifecycle", "terminationMessagePath", "terminationMessagePolicy", "imagePullPolicy",
                   "securityContext", "stdin", "stdinOnce", "tty"]
EVENT_ORDER = ["kind", "apiVersion", "metadata", "involvedObject", "reason", "message", "source",
               "firstTimestamp", "lastTimestamp", "count", "type", "eventTime", "series", "action", "related",
               "reportingComponent", "reportingInstance"]


def _reorder(d, order):
    """Known keys in struct order first, then the rest as they came."""
    if not isinstance(d, dict):
        return d
    out = {k: d[k] for k in order if k in d}
    out.update((k, v) for k, v in d.items() if k not in out)
    return out


def _sorted_map(d):
    return {k: d[k] for k in sorted(d)} if isinstance(d, dict) else d


def _normalise_container(c):
    c = _reorder(c, CONTAINER_ORDER)
    res = c.get("resources")
    if isinstance(res, dict):
        for key in ("limits", "requests"):
            if isinstance(res.get(key), dict):
                res[key] = _sorted_map({k: canonical_quantity(v) for k, v in res[key].items()})
        c["resources"] = _reorder(res, ["limits", "requests", "claims"])
    return c


def normalise(obj):
    """Return obj with Go field order, sorted maps, zero values and canonical quantities.

    Applied to every stored object so responses look like the real server's
    (e.g. a Node always carries status.daemonEndpoints and an all-"" nodeInfo).
    """
    obj = copy.deepcopy(obj)
    kind = obj.get("kind")
    meta = obj.setdefault("metadata", {})
    meta.setdefault("creationTimestamp", None)
    for key in ("labels", "annotations"):
        if key in meta:
            meta[key] = _sorted_map(meta[key])
    obj["metadata"] = _reorder(meta, META_ORDER)
    if kind == "Node":
        spec = _reorder(obj.get("spec") or {}, NODE_SPEC_ORDER)
        st = obj.get("status") or {}
        for key in ("capacity", "allocatable"):
            if isinstance(st.get(key), dict):
                st[key] = _sorted_map({k: canonical_quantity(v) for k, v in st[key].items()})
        st.setdefault("daemonEndpoints", {"kubeletEndpoint": {"Port": 0}})
        info = st.get("nodeInfo") or {}
        st["nodeInfo"] = _reorder({**{k: "" for k in NODE_INFO_KEYS}, **info}, NODE_INFO_KEYS)
        obj["spec"], obj["status"] = spec, _reorder(st, NODE_STATUS_ORDER)
    elif kind == "Pod":
        spec = obj.get("spec") or {}
        spec.setdefault("containers", None)
        for key in ("initContainers", "containers", "ephemeralContainers"):
            if isinstance(spec.get(key), list):
                spec[key] = [_normalise_container(c) for c in spec[key]]
        if isinstance(spec.get("overhead"), dict):
            spec["overhead"] = _sorted_map({k: canonical_quantity(v) for k, v in spec["overhead"].items()})
        obj["spec"] = _reorder(spec, POD_SPEC_ORDER)
        obj["status"] = _reorder(obj.get("status") or {}, POD_STATUS_ORDER)
    elif kind == "Event":
        # Structs and metav1.Time are never omitted by Go; reporting* have no omitempty.
        obj.setdefault("involvedObject", {})
        obj.setdefault("source", {})
        for key in ("firstTimestamp", "lastTimestamp", "eventTime"):
            obj.setdefault(key, None)
        obj.setdefault("reportingComponent", "")
        obj.setdefault("reportingInstance", "")
        return _reorder(obj, EVENT_ORDER)
    top = ["kind", "apiVersion", "metadata", "spec", "status"]
    return _reorder(obj, top)


def bookmark_object(kind, api_version, rv):
    """Empty object of the watched kind carrying only the RV (README: BOOKMARK shapes)."""
    return normalise({"kind": kind, "apiVersion": api_version, "metadata": {"resourceVersion": str(rv)}})


# --------------------------------------------------------------------------
# Quantities (131596288Ki -> 128512Mi, 1000m -> 1, 0.5 -> 500m)
# --------------------------------------------------------------------------

_BIN = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DEC = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_QTY_RE = re.compile(r"^([+-]?[0-9]*\.?[0-9]*)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$")


def canonical_quantity(value):
    """Canonical string form of a resource.Quantity; unparsable input is returned unchanged."""
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        return value
    s = str(value)
    m = _QTY_RE.match(s)
    if not m or m.group(1) in ("", "+", "-", "."):
        return value
    num, suffix = Fraction(m.group(1)), m.group(2) or ""
    if suffix in _BIN:
        amount, fmt = num * 1024 ** _BIN[suffix], "bin"
    elif suffix in _DEC:
        amount, fmt = num * Fraction(10) ** _DEC[suffix], "dec"
    else:
        amount, fmt = num * Fraction(10) ** int(suffix[1:]), "exp"
    if fmt == "bin" and (abs(amount) < 1024 or amount.denominator != 1):
        fmt = "dec"  # Go shows small or fractional binary quantities as DecimalSI
    if fmt == "bin":
        n, exp = int(amount), 0
        while exp < 6 and n != 0 and n % 1024 == 0:
            n, exp = n // 1024, exp + 1
        return str(n) + ([""] + list(_BIN))[exp]
    # Decimal: round up to nano, then the largest multiple-of-3 exponent with an integer mantissa.
    nanos = -((-amount * 10 ** 9) // 1)
    exp = -9
    while exp < 18 and nanos != 0 and nanos % 1000 == 0:
        nanos, exp = nanos // 1000, exp + 3
    if nanos == 0:
        exp = 0
    if fmt == "exp":
        return "%de%d" % (nanos, exp) if exp else str(nanos)
    return str(nanos) + {v: k for k, v in _DEC.items()}[exp]


# --------------------------------------------------------------------------
# Admission-visible defaults
# --------------------------------------------------------------------------

_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # k8s utilrand alphabet


def random_suffix(n=5):
    return "".join(random.choice(_NAME_CHARS) for _ in range(n))


def stamp_new(obj, rv):
    """Defaults every newly stored object gets: uid, creationTimestamp, resourceVersion."""
    meta = obj.setdefault("metadata", {})
    meta.setdefault("uid", str(uuid.uuid4()))
    if not meta.get("creationTimestamp"):
        meta["creationTimestamp"] = now_rfc3339()
    meta["resourceVersion"] = str(rv)
    if obj.get("kind") == "Pod":
        obj.setdefault("status", {}).setdefault("phase", "Pending")


def _qos_class(spec):
    containers = (spec.get("containers") or []) + (spec.get("initContainers") or [])
    reqs = [((c.get("resources") or {}).get("requests") or {}) for c in containers]
    lims = [((c.get("resources") or {}).get("limits") or {}) for c in containers]
    if not any(reqs) and not any(lims):
        return "BestEffort"
    for req, lim in zip(reqs, lims):
        for res in ("cpu", "memory"):
            if res not in lim or canonical_quantity(req.get(res, lim[res])) != canonical_quantity(lim[res]):
                return "Burstable"
    return "Guaranteed"


def _default_container(c, mount_name):
    c.setdefault("resources", {})
    res = c["resources"]
    if res.get("limits"):  # requests default to limits
        res["requests"] = {**res["limits"], **(res.get("requests") or {})}
    c.setdefault("volumeMounts", []).append({"name": mount_name, "readOnly": True,
                                              "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"})
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    image = c.get("image", "")
    latest = ":" not in image.rsplit("/", 1)[-1] or image.endswith(":latest")
    c.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")


def admit_create(obj):
    """Defaults the real admission chain adds on API create (01a, 03d).  Not applied to --objects."""
    kind = obj.get("kind")
    if kind == "Node":
        taints = obj.setdefault("spec", {}).setdefault("taints", [])
        if not any(t.get("key") == "node.kubernetes.io/not-ready" for t in taints):
            taints.append({"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"})
    elif kind == "Pod":
        spec = obj.setdefault("spec", {})
        vol = "kube-api-access-" + random_suffix()
        spec.setdefault("volumes", []).append({"name": vol, "projected": {"sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}], "defaultMode": 420}})
        for key in ("initContainers", "containers"):
            for c in spec.get(key) or []:
                _default_container(c, vol)
        defaults = {"restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
                    "serviceAccountName": "default", "serviceAccount": "default", "securityContext": {},
                    "schedulerName": "default-scheduler", "priority": 0, "enableServiceLinks": True,
                    "preemptionPolicy": "PreemptLowerPriority"}
        for k, v in defaults.items():
            spec.setdefault(k, v)
        tols = spec.setdefault("tolerations", [])
        for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
            if not any(t.get("key") == key for t in tols):
                tols.append({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300})
        status = obj.setdefault("status", {})
        status.setdefault("phase", "Pending")
        status.setdefault("qosClass", _qos_class(spec))


# --------------------------------------------------------------------------
# Event validation (06a-06h)
# --------------------------------------------------------------------------

_QNAME_MSG = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
              "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
              "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")


def validate_event(ev, namespace):
    """Return a list of causes {reason, message, field}; empty when valid."""
    causes = []
    inv_ns = (ev.get("involvedObject") or {}).get("namespace", "")
    if inv_ns and inv_ns != namespace:
        causes.append(("FieldValueInvalid", 'Invalid value: "%s": does not match event.namespace' % inv_ns,
                       "involvedObject.namespace"))
    if ev.get("eventTime"):  # new-style events need the reporting fields (06e)
        comp = ev.get("reportingComponent", "")
        if not comp:
            causes += [("FieldValueRequired", "Required value", "reportingComponent"),
                       ("FieldValueInvalid", 'Invalid value: "": name part must be non-empty', "reportingComponent"),
                       ("FieldValueInvalid", 'Invalid value: "": ' + _QNAME_MSG, "reportingComponent")]
        if not ev.get("reportingInstance"):
            causes.append(("FieldValueRequired", "Required value", "reportingInstance"))
        if not ev.get("action"):
            causes.append(("FieldValueRequired", "Required value", "action"))
    return [{"reason": r, "message": m, "field": f} for r, m, f in causes]


def invalid_status(kind, name, causes):
    """422 Invalid Status as built by apimachinery's NewInvalid."""
    msgs = ["%s: %s" % (c["field"], c["message"]) for c in causes]
    joined = msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]"
    details = {"name": name} if name else {}
    details.update({"kind": kind, "causes": causes})
    return status_body(422, '%s "%s" is invalid: %s' % (kind, name, joined), "Invalid", details)


# --------------------------------------------------------------------------
# Patches
# --------------------------------------------------------------------------


class PatchError(Exception):
    pass


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            result.pop(k, None)
        else:
            result[k] = merge_patch(result.get(k), v)
    return result


# patchMergeKey of the list fields an agent is likely to patch; other lists are replaced.
SMP_MERGE_KEYS = {"conditions": "type", "addresses": "type", "containers": "name", "initContainers": "name",
                  "volumes": "name", "env": "name", "volumeMounts": "mountPath", "ports": "containerPort",
                  "containerStatuses": "name", "initContainerStatuses": "name", "ownerReferences": "uid"}


def strategic_merge_patch(target, patch):
    """Strategic merge patch: merge patch for maps, merge-by-key for the lists in SMP_MERGE_KEYS."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    if patch.get("$patch") == "replace":
        return {k: v for k, v in patch.items() if not k.startswith("$")}
    for k, v in patch.items():
        if k.startswith("$"):
            continue
        if v is None:
            result.pop(k, None)
        elif isinstance(v, list) and k in SMP_MERGE_KEYS and isinstance(result.get(k), list):
            result[k] = _smp_merge_list(result[k], v, SMP_MERGE_KEYS[k])
        elif isinstance(v, dict):
            result[k] = strategic_merge_patch(result.get(k), v)
        else:
            result[k] = copy.deepcopy(v)
    return result


def _smp_merge_list(current, patch_items, key):
    out = copy.deepcopy(current)
    for item in patch_items:
        if not isinstance(item, dict) or key not in item:
            out.append(copy.deepcopy(item))
            continue
        idx = next((i for i, e in enumerate(out) if isinstance(e, dict) and e.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            if idx is not None:
                out.pop(idx)
        elif idx is None:
            out.append({k: v for k, v in item.items() if not k.startswith("$")})
        else:
            out[idx] = strategic_merge_patch(out[idx], item)
    return out


def _pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError("invalid JSON pointer %r" % path)
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc, parts):
    for p in parts:
        doc = doc[int(p)] if isinstance(doc, list) else doc[p]
    return doc


def json_patch(target, ops):
    """RFC 6902 JSON patch (add, remove, replace, move, copy, test)."""
    doc = copy.deepcopy(target)
    if not isinstance(ops, list):
        raise PatchError("json patch must be a list of operations")
    for op in ops:
        try:
            name, parts = op["op"], _pointer(op["path"])
            if name in ("move", "copy"):
                src = _pointer(op["from"])
                value = copy.deepcopy(_walk(doc, src))
                if name == "move":
                    _remove(doc, src)
                doc = _add(doc, parts, value)
            elif name == "add":
                doc = _add(doc, parts, copy.deepcopy(op["value"]))
            elif name == "remove":
                _remove(doc, parts)
            elif name == "replace":
                _walk(doc, parts)  # must exist
                _remove(doc, parts)
                doc = _add(doc, parts, copy.deepcopy(op["value"]))
            elif name == "test":
                if _walk(doc, parts) != op["value"]:
                    raise PatchError("testing value %s failed" % op["path"])
            else:
                raise PatchError("Unexpected kind: %s" % name)
        except (KeyError, IndexError, ValueError, TypeError) as e:
            raise PatchError("the server rejected our request due to an error in our request: %s" % e)
    return doc


def _add(doc, parts, value):
    if not parts:
        return value
    parent, last = _walk(doc, parts[:-1]), parts[-1]
    if isinstance(parent, list):
        parent.insert(len(parent) if last == "-" else int(last), value)
    else:
        parent[last] = value
    return doc


def _remove(doc, parts):
    parent, last = _walk(doc, parts[:-1]), parts[-1]
    if isinstance(parent, list):
        parent.pop(int(last))
    else:
        del parent[last]


# --------------------------------------------------------------------------
# Selectors
# --------------------------------------------------------------------------


class SelectorError(Exception):
    pass


def _path(obj, dotted):
    cur = obj
    for part in dotted.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    return ("true" if cur else "false") if isinstance(cur, bool) else str(cur)


# Field labels each resource supports in 1.26 (the rest get "field label not supported").
FIELD_LABELS = {
    "pods": {"metadata.name", "metadata.namespace", "spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
             "spec.serviceAccountName", "status.phase", "status.podIP", "status.nominatedNodeName"},
    "nodes": {"metadata.name", "spec.unschedulable"},
    "events": {"metadata.name", "metadata.namespace", "involvedObject.kind", "involvedObject.namespace",
               "involvedObject.name", "involvedObject.uid", "involvedObject.apiVersion",
               "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason", "reportingComponent",
               "source", "type"},
}


def _split_unescaped(s, sep):
    parts, cur, i = [], "", 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s):
            cur += s[i:i + 2]
            i += 2
            continue
        if s[i] == sep:
            parts.append(cur)
            cur = ""
        else:
            cur += s[i]
        i += 1
    parts.append(cur)
    return parts


def parse_field_selector(selector, resource):
    """Parse 'a=b,c!=d' into [(field, op, value)]; errors carry the apiserver's exact message."""
    terms = []
    if not selector:
        return terms
    for term in _split_unescaped(selector, ","):
        for op in ("!=", "==", "="):
            idx = term.find(op)
            if idx >= 0:
                field, value = term[:idx], term[idx + len(op):]
                terms.append((field, "!=" if op == "!=" else "=", value.replace("\\", "")))
                break
        else:
            raise SelectorError("invalid selector: '%s'; can't understand '%s'" % (selector, term))
    allowed = FIELD_LABELS.get(resource, {"metadata.name", "metadata.namespace"})
    for field, _, _ in terms:
        if field not in allowed:
            raise SelectorError("field label not supported: %s" % field)
    return terms


def field_matches(obj, terms):
    for field, op, value in terms:
        actual = _path(obj, field)
        if field == "source" and isinstance(obj.get("source"), dict):
            actual = obj["source"].get("component", "")
        if (actual == value) != (op == "="):
            return False
    return True


_LABEL_TERM = re.compile(r"^\s*(!?)\s*([A-Za-z0-9_./-]+)\s*(?:(==|=|!=|\s+in\s+|\s+notin\s+)\s*(.*?))?\s*$")


def parse_label_selector(selector):
    """Equality (=, ==, !=), existence (k, !k) and set (in, notin) requirements."""
    reqs = []
    if not selector:
        return reqs
    depth, cur, parts = 0, "", []
    for ch in selector:  # split on commas outside parentheses
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    for part in parts:
        m = _LABEL_TERM.match(part)
        if not m or (m.group(1) and m.group(3)):
            raise SelectorError("unable to parse requirement: found '%s', expected: identifier" % part.strip())
        neg, key, op, val = m.group(1), m.group(2), (m.group(3) or "").strip(), m.group(4)
        if not op:
            reqs.append((key, "!exists" if neg else "exists", None))
        elif op in ("in", "notin"):
            if not (val.startswith("(") and val.endswith(")")):
                raise SelectorError("unable to parse requirement: found '%s', expected: (" % val)
            reqs.append((key, op, {v.strip() for v in val[1:-1].split(",") if v.strip()}))
        else:
            reqs.append((key, "!=" if op == "!=" else "=", val))
    return reqs


def label_matches(obj, reqs):
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for key, op, val in reqs:
        have, cur = key in labels, labels.get(key)
        if op == "exists":
            ok = have
        elif op == "!exists":
            ok = not have
        elif op == "=":
            ok = have and cur == val
        elif op == "in":
            ok = have and cur in val
        elif op == "notin":
            ok = cur not in val
        else:  # "!=": also true when the label is absent
            ok = cur != val
        if not ok:
            return False
    return True
