"""RBAC for the fake apiserver: rules from applied ClusterRole/Role(Binding) objects, impersonation,
and the access reviews `kubectl auth can-i` sends.

Evaluated like the real RBAC authorizer (k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac):
a request is allowed if any rule of any role bound to the user, one of its groups or its service
account allows it. ClusterRoleBindings grant everywhere, RoleBindings in their namespace only.
A rule matches on apiGroups, resources ("res" or "res/sub", "*", "*/sub"), verbs and, when given,
resourceNames. Aggregated ClusterRoles, nonResourceURLs and escalation checks are not modelled.
"""

RBAC_GV = "rbac.authorization.k8s.io/v1"

# Built-in types the discovery documents always list (kubectl's REST mapper needs them before any
# object of the type exists): (groupVersion, plural, kind, namespaced, verbs).
CRUD = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
BUILTIN_RESOURCES = [
    ("v1", "configmaps", "ConfigMap", True, CRUD),
    ("v1", "secrets", "Secret", True, CRUD),
    ("v1", "serviceaccounts", "ServiceAccount", True, CRUD),
    ("apps/v1", "daemonsets", "DaemonSet", True, CRUD),
    (RBAC_GV, "clusterroles", "ClusterRole", False, CRUD),
    (RBAC_GV, "clusterrolebindings", "ClusterRoleBinding", False, CRUD),
    (RBAC_GV, "roles", "Role", True, CRUD),
    (RBAC_GV, "rolebindings", "RoleBinding", True, CRUD),
    ("admissionregistration.k8s.io/v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", False, CRUD),
    ("admissionregistration.k8s.io/v1", "validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding",
     False, CRUD),
    ("flowcontrol.apiserver.k8s.io/v1", "flowschemas", "FlowSchema", False, CRUD),
    ("flowcontrol.apiserver.k8s.io/v1", "prioritylevelconfigurations", "PriorityLevelConfiguration", False, CRUD),
    # What a v1.26 server (the version this fake reports) serves of API Priority and Fairness.
    ("flowcontrol.apiserver.k8s.io/v1beta3", "flowschemas", "FlowSchema", False, CRUD),
    ("flowcontrol.apiserver.k8s.io/v1beta3", "prioritylevelconfigurations", "PriorityLevelConfiguration", False,
     CRUD),
    ("authorization.k8s.io/v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", False, ["create"]),
    ("authorization.k8s.io/v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview", False, ["create"]),
    ("authorization.k8s.io/v1", "subjectaccessreviews", "SubjectAccessReview", False, ["create"]),
]
REVIEWS = {"selfsubjectaccessreviews", "selfsubjectrulesreviews", "subjectaccessreviews"}


def builtin_kinds():
    return {plural: kind for _, plural, kind, _, _ in BUILTIN_RESOURCES}


def builtin_cluster_scoped():
    return {plural for _, plural, _, namespaced, _ in BUILTIN_RESOURCES if not namespaced}


def identity_groups(user):
    """Groups the authenticator adds for a service account user name (besides system:authenticated)."""
    if user.startswith("system:serviceaccount:"):
        ns = user.split(":")[2]
        return ["system:serviceaccounts", "system:serviceaccounts:" + ns]
    return []


def _subject_matches(subject, user, groups):
    kind = subject.get("kind")
    if kind == "User":
        return subject.get("name") == user
    if kind == "Group":
        return subject.get("name") in groups
    if kind == "ServiceAccount":
        return user == "system:serviceaccount:%s:%s" % (subject.get("namespace", ""), subject.get("name"))
    return False


def bound_rules(store, user, groups, namespace):
    """PolicyRules granted to the user in `namespace` ("" = cluster scope) by the stored objects."""
    with store.cond:
        objects = dict(store.objects)
    rules = []
    for ((gv, plural), ns, _), binding in objects.items():
        if gv != RBAC_GV or plural not in ("clusterrolebindings", "rolebindings"):
            continue
        if plural == "rolebindings" and ns != namespace:
            continue
        if not any(_subject_matches(s, user, groups) for s in binding.get("subjects") or []):
            continue
        ref = binding.get("roleRef") or {}
        if ref.get("kind") == "ClusterRole":
            role = objects.get(((RBAC_GV, "clusterroles"), "", ref.get("name")))
        else:
            role = objects.get(((RBAC_GV, "roles"), ns, ref.get("name")))
        rules += (role or {}).get("rules") or []
    return rules


def rule_allows(rule, verb, group, resource, sub, name):
    def has(field, value):
        values = rule.get(field) or []
        return value in values or "*" in values
    if not has("verbs", verb) or not has("apiGroups", group):
        return False
    resources = rule.get("resources") or []
    want = resource + ("/" + sub if sub else "")
    if want not in resources and "*" not in resources and not (sub and "*/" + sub in resources):
        return False
    names = rule.get("resourceNames") or []
    return not names or name in names


def json_rules(config, user, groups):
    """The --rbac JSON grants (the fake's own format) of the user, as PolicyRules, with namespaces."""
    out = []
    for who in [user] + groups:
        for r in config.get(who, []):
            out.append(({"verbs": r.get("verbs", []), "apiGroups": ["*"], "resources": r.get("resources", [])},
                        r.get("namespaces")))
    return out


def allowed(app, user, groups, verb, group, resource, sub, namespace, name):
    if "system:masters" in groups:
        return True
    for rule, namespaces in json_rules(app.rbac, user, groups):
        if (not namespaces or namespace in namespaces) and rule_allows(rule, verb, "*", resource, sub, name):
            return True
    return any(rule_allows(r, verb, group, resource, sub, name)
               for r in bound_rules(app.store, user, groups, namespace))


def review(app, plural, body, user, groups):
    """The status of an access review; the body is returned with status filled in, as the server does."""
    spec = body.get("spec") or {}
    if plural == "subjectaccessreviews":
        user = spec.get("user", "")
        groups = list(spec.get("groups") or []) + identity_groups(user) + ["system:authenticated"]
    if plural == "selfsubjectrulesreviews":
        ns = spec.get("namespace", "")
        if "system:masters" in groups:
            rules = [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]
        else:
            rules = [r for r, nss in json_rules(app.rbac, user, groups) if not nss or ns in nss]
            rules += bound_rules(app.store, user, groups, ns)
            if ns:
                rules += bound_rules(app.store, user, groups, "")
            rules = [{k: v for k, v in r.items() if k in ("verbs", "apiGroups", "resources", "resourceNames")}
                     for r in rules]
        # Everyone may ask about themselves (system:basic-user), as on a real server.
        rules.append({"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
                      "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]})
        body["status"] = {"resourceRules": rules, "nonResourceRules": [], "incomplete": False}
        return body
    attrs = spec.get("resourceAttributes")
    if attrs is None:   # nonResourceAttributes (/healthz, ...): not modelled, answered as denied
        body["status"] = {"allowed": False, "reason": "non-resource URLs are not modelled by the fake"}
        return body
    ok = allowed(app, user, groups, attrs.get("verb", ""), attrs.get("group", ""), attrs.get("resource", ""),
                 attrs.get("subresource", ""), attrs.get("namespace", ""), attrs.get("name", ""))
    body["status"] = {"allowed": ok}
    if ok:
        body["status"]["reason"] = "allowed by the fake's RBAC"
    return body
