"""The Helm chart, rendered and linted by the real helm, its objects asserted and validated offline
against the Kubernetes API schema, its config file parsed by the real agent (--dry-run).

    python3 -m unittest discover -s tests/deploy -p 'test_chart.py' -v
"""
import json
import os
import re
import subprocess
import tempfile
import unittest

import yaml

from chart_tools import (AGENT, CHART, HELM, HERE, NAMESPACE, RELEASE, ROOT, agent_config, pod_spec, render,
                         render_text, run, tools_missing, validate_offline)

VALUES = os.path.join(HERE, "values")
ROLES = ["controlPlane", "compute", "network", "storage", "containers", "provisioning"]
KEBAB = {"controlPlane": "control-plane"}
SA_NAME = "%s-openkeel-node-agent" % RELEASE


NOCOMPUTE_SA = SA_NAME + "-nocompute"


def role_term(label):
    return {"matchExpressions": [{"key": label, "operator": "In", "values": [""]}]}


def not_compute(term, compute="node-role.openkeel.io/compute"):
    """The term as the network-only DaemonSet renders it: and not a compute node."""
    return {"matchExpressions": term["matchExpressions"] + [{"key": compute, "operator": "NotIn", "values": [""]}]}


def terms_of(ds):
    return ds["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]


def matches(ds, name, labels):
    """Whether the DaemonSet's required placement selects a node (the scheduler's and DaemonSet
    controller's nodeSelector and node affinity rules: k8s.io/component-helpers nodeaffinity)."""
    spec = ds["spec"]["template"]["spec"]
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution")
    if not required:
        return True

    def expr_ok(e, value, present):
        op, values = e["operator"], e.get("values", [])
        return {"In": present and value in values, "NotIn": not present or value not in values,
                "Exists": present, "DoesNotExist": not present}[op]

    for term in required["nodeSelectorTerms"]:
        exprs, fields = term.get("matchExpressions", []), term.get("matchFields", [])
        if not exprs and not fields:
            continue
        if all(expr_ok(e, labels.get(e["key"]), e["key"] in labels) for e in exprs) and \
                all(expr_ok(f, name, True) for f in fields):
            return True
    return False


def toleration(key):
    return {"key": key, "operator": "Exists", "effect": "NoSchedule"}


RESERVED = toleration("openkeel.io/reserved")


class ChartCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        missing = tools_missing()
        if missing:
            raise unittest.SkipTest(missing) if os.environ.get("CI") is None else AssertionError(missing)


class TestLint(ChartCase):
    def test_lint_default_and_hardened(self):
        for args in ([], ["-f", os.path.join(VALUES, "hardened-okadm.yaml")],
                     ["--set", "global.nodeRoles.profile=hardened"], ["--set", "forceDownscale=true"],
                     ["-f", os.path.join(VALUES, "raw-overrides.yaml")],
                     ["--set", "metrics.prometheusRule.enabled=true",
                      "--set", "metrics.grafanaDashboard.enabled=true"]):
            out = run([HELM, "lint", "--strict", CHART] + args).stdout
            self.assertIn("0 chart(s) failed", out, args)

    def test_schema_refuses_wrong_values_with_clear_messages(self):
        p = render_text(values=[os.path.join(VALUES, "bad-schema.yaml")], check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("values don't meet the specifications of the schema", p.stderr)
        for field in ("placement.roles.1", "health.port", "health.maxConnections", "metrics.exposeOnNode",
                      "ovs.sbRemote", "metadata.sharedSecret.name"):
            self.assertIn(field, p.stderr)
        lint = run([HELM, "lint", CHART, "-f", os.path.join(VALUES, "bad-schema.yaml")], check=False)
        self.assertNotEqual(lint.returncode, 0)

    def test_schema_refuses_unknown_keys_and_inlined_secrets(self):
        for bad in ("placment.roles={compute}", "metadata.sharedSecret.value=s3cr3t",
                    "openstackPlacement.extra.auth.password=x", "global.nodeRoles.roles.gateway.label=bad key!",
                    "placement.role=compute-node", "logging.level=verbose",
                    "openstackPlacement.devices[0].resource=gpu",
                    "openstackPlacement.devices[0].resourceClass=sriov_net_vf",
                    "openstackPlacement.extra.devices=x"):
            p = render_text(sets=[bad], check=False)
            self.assertNotEqual(p.returncode, 0, bad)
            self.assertIn("schema", p.stderr, bad)


    def test_schema_checks_the_liveness_grace(self):
        # Kubernetes wants a positive number, and refuses it on a readiness probe.
        for bad in ("livenessProbe.terminationGracePeriodSeconds=0", "livenessProbe.terminationGracePeriodSeconds=ten",
                    "readinessProbe.terminationGracePeriodSeconds=10"):
            p = render_text(sets=[bad], check=False)
            self.assertNotEqual(p.returncode, 0, bad)
            self.assertIn("terminationGracePeriodSeconds", p.stderr, bad)
            self.assertIn("schema", p.stderr, bad)

    # Issue 24, point 6: each of these passed the schema and rendered something wrong (a term that
    # matches nothing, a privileged pod on every node, a DaemonSet the API refuses), or a valid
    # value was refused.
    def test_schema_refuses_a_node_selector_term_that_is_not_one(self):
        base = "global.nodeRoles.roles.network.nodeSelectorTerms[0]."
        for bad in (base + "foo=bar", base + "matchExpressions[0].key=k",
                    base + "matchExpressions[0].operator=Maybe"):
            sets = [bad] if "operator" not in bad else [bad, base + "matchExpressions[0].key=k"]
            p = render_text(sets=sets, check=False)
            self.assertNotEqual(p.returncode, 0, bad)
            self.assertIn("nodeSelectorTerms", p.stderr, bad)
        good = render_text(sets=[base + "matchFields[0].key=metadata.name",
                                 base + "matchFields[0].operator=In", base + "matchFields[0].values[0]=gw-1"])
        self.assertIn("metadata.name", good.stdout)

    def test_schema_refuses_an_empty_role_list(self):
        p = run([HELM, "template", RELEASE, CHART, "--set-json", "placement.roles=[]"], check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("placement.roles", p.stderr)

    def test_schema_refuses_no_unavailable(self):
        for sets in (["updateStrategy.maxUnavailable=0"],
                     ["updateStrategy.maxUnavailable=0%", "updateStrategy.maxSurge=0"]):
            p = render_text(sets=sets, check=False)
            self.assertNotEqual(p.returncode, 0, sets)
            self.assertIn("updateStrategy", p.stderr, sets)

    def test_a_role_another_chart_adds_is_accepted_and_checked(self):
        # global.nodeRoles is shared by every OpenKeel chart: a role this chart does not know must
        # not break its release.
        objs = render(sets=["global.nodeRoles.roles.gateway.label=example.com/gateway"])
        self.assertIn("DaemonSet", objs)
        # The agent is configured with the roles it knows; another chart's role is that chart's.
        self.assertNotIn("gateway", agent_config(objs)["nodeRoles"]["roles"])


class TestDefaultProfile(ChartCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.objs = render()
        cls.spec = pod_spec(cls.objs)
        cls.container = cls.spec["containers"][0]

    def test_kinds(self):
        self.assertEqual(sorted(self.objs), ["ClusterRole", "ClusterRole/nocompute", "ClusterRoleBinding",
                                             "ClusterRoleBinding/nocompute", "ConfigMap", "DaemonSet",
                                             "DaemonSet/nocompute", "FlowSchema", "PriorityLevelConfiguration",
                                             "Role", "RoleBinding", "ServiceAccount", "ServiceAccount/nocompute"])

    def test_api_priority_and_fairness_for_the_agents(self):
        # Issue 24, point 7: thousands of agents restarting at once queue in a level of their own.
        fs, plc = self.objs["FlowSchema"], self.objs["PriorityLevelConfiguration"]
        self.assertEqual(fs["apiVersion"], "flowcontrol.apiserver.k8s.io/v1")
        self.assertEqual(fs["spec"]["priorityLevelConfiguration"]["name"], plc["metadata"]["name"])
        self.assertLess(fs["spec"]["matchingPrecedence"], 9000)   # before workload-low
        rule = fs["spec"]["rules"][0]
        self.assertEqual(rule["subjects"], [{"kind": "ServiceAccount",
                                             "serviceAccount": {"name": sa, "namespace": NAMESPACE}}
                                            for sa in (SA_NAME, NOCOMPUTE_SA)])
        self.assertEqual(plc["spec"]["limited"]["limitResponse"]["type"], "Queue")
        self.assertEqual(plc["spec"]["limited"]["nominalConcurrencyShares"], 20)
        for version, api, shares in (("1.27.0", "v1beta3", "nominalConcurrencyShares"),
                                     ("1.25.0", "v1beta2", "assuredConcurrencyShares")):
            text = run([HELM, "template", RELEASE, CHART, "--kube-version", version]).stdout
            docs = {d["kind"]: d for d in yaml.safe_load_all(text) if d}
            self.assertEqual(docs["FlowSchema"]["apiVersion"], "flowcontrol.apiserver.k8s.io/" + api, version)
            self.assertIn(shares, docs["PriorityLevelConfiguration"]["spec"]["limited"], version)
        self.assertNotIn("FlowSchema", render(sets=["apiPriority.enabled=false"]))

    def test_daemonset_host_network_priority_node_name(self):
        self.assertIs(self.spec["hostNetwork"], True)
        self.assertEqual(self.spec["dnsPolicy"], "ClusterFirstWithHostNet")
        self.assertEqual(self.spec["priorityClassName"], "system-node-critical")

    def test_pod_monitor_optional_and_only_where_it_can_scrape(self):
        # Issue 24, point 7: off by default (the CRD may not exist); on, it scrapes the metrics port.
        self.assertNotIn("PodMonitor", self.objs)
        objs = render(sets=["metrics.podMonitor.enabled=true", "metrics.exposeOnNode=true",
                            "metrics.podMonitor.labels.release=prom"])
        pm = objs["PodMonitor"]
        self.assertEqual(pm["apiVersion"], "monitoring.coreos.com/v1")
        self.assertEqual(pm["spec"]["podMetricsEndpoints"], [{
            "port": "metrics", "path": "/metrics", "interval": "30s",
            "relabelings": [{"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node"}]}])
        self.assertEqual(pm["metadata"]["labels"]["release"], "prom")
        selector = pm["spec"]["selector"]["matchLabels"]
        labels = objs["DaemonSet"]["spec"]["template"]["metadata"]["labels"]
        self.assertTrue(all(labels.get(k) == v for k, v in selector.items()), (selector, labels))
        ports = [p["name"] for p in pod_spec(objs)["containers"][0]["ports"]]
        self.assertIn("metrics", ports)
        p = render_text(sets=["metrics.podMonitor.enabled=true"], check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("needs metrics.enabled and metrics.exposeOnNode", p.stderr)

    def test_priority_class_from_the_umbrella_charts_defaults(self):
        # Issue 24, point 7: global.placementDefaults.priorityClasses.infra (seed 000 § 5.1) is
        # honoured; placement.priorityClassName still wins.
        infra = "global.placementDefaults.priorityClasses.infra=openkeel-infra-critical"
        self.assertEqual(pod_spec(render(sets=[infra]))["priorityClassName"], "openkeel-infra-critical")
        own = pod_spec(render(sets=[infra, "placement.priorityClassName=mine"]))
        self.assertEqual(own["priorityClassName"], "mine")
        self.assertEqual(self.spec["serviceAccountName"], SA_NAME)
        self.assertIn({"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                      self.container["env"])
        self.assertEqual(self.container["args"], ["--config", "/etc/openkeel-node-agent/agent.yaml"])

    def test_probes_on_the_health_port(self):
        self.assertEqual(self.container["livenessProbe"]["httpGet"], {"path": "/healthz", "port": 19874,
                                                                      "scheme": "HTTP"})
        self.assertEqual(self.container["readinessProbe"]["httpGet"], {"path": "/readyz", "port": 19874,
                                                                       "scheme": "HTTP"})
        self.assertEqual(agent_config(self.objs)["health"]["listen"], "0.0.0.0:19874")
        self.assertEqual(agent_config(self.objs)["health"]["maxConnections"], 64)
        self.assertEqual(self.container["ports"], [{"name": "health", "containerPort": 19874, "protocol": "TCP"}])

    def test_metrics_and_plan_on_loopback_unless_exposed(self):
        # /metrics and /debug/plan name networks and VM addresses: not on the node's network by default.
        self.assertEqual(agent_config(self.objs)["health"]["adminListen"], "127.0.0.1:19875")
        objs = render(sets=["metrics.exposeOnNode=true"])
        self.assertEqual(agent_config(objs)["health"]["adminListen"], "0.0.0.0:19875")
        self.assertIn({"name": "metrics", "containerPort": 19875, "protocol": "TCP"},
                      pod_spec(objs)["containers"][0]["ports"])
        objs = render(sets=["metrics.exposeOnNode=true", "metrics.bindAddress=10.0.0.7", "metrics.port=9101"])
        self.assertEqual(agent_config(objs)["health"]["adminListen"], "10.0.0.7:9101")
        objs = render(sets=["metrics.enabled=false", "metrics.exposeOnNode=true"])
        self.assertEqual(agent_config(objs)["health"]["adminListen"], "")
        self.assertEqual([p["name"] for p in pod_spec(objs)["containers"][0]["ports"]], ["health"])

    def test_metrics_port_must_differ_from_the_health_port(self):
        p = render_text(sets=["metrics.port=19874"], check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("metrics.port must differ from health.port", p.stderr)
        self.assertEqual(render_text(sets=["metrics.port=19874", "metrics.enabled=false"]).returncode, 0)

    def test_grace_period_covers_the_gateway_drain(self):
        drain = agent_config(self.objs)["ovs"]["drainTimeoutSeconds"]
        self.assertGreater(self.spec["terminationGracePeriodSeconds"], drain)

    def test_a_liveness_kill_has_a_grace_of_its_own(self):
        # Issue 35, A: the pod's 150 s are for planned exits (the gateway drain); a wedged agent is
        # killed after 60 s of failed probes + 10 s, not + 150 s (ProbeTerminationGracePeriod).
        self.assertEqual(self.container["livenessProbe"]["terminationGracePeriodSeconds"], 10)
        self.assertEqual(self.spec["terminationGracePeriodSeconds"], 150)
        self.assertNotIn("terminationGracePeriodSeconds", self.container["readinessProbe"])
        c = pod_spec(render(sets=["livenessProbe.terminationGracePeriodSeconds=30"]))["containers"][0]
        self.assertEqual(c["livenessProbe"]["terminationGracePeriodSeconds"], 30)

    def test_rolling_update_from_values(self):
        self.assertEqual(self.objs["DaemonSet"]["spec"]["updateStrategy"],
                         {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
        objs = render(sets=["updateStrategy.maxUnavailable=25%"])
        self.assertEqual(objs["DaemonSet"]["spec"]["updateStrategy"]["rollingUpdate"],
                         {"maxUnavailable": "25%", "maxSurge": 0})
        # Issue 24, point 4: a hostNetwork pod with a fixed port cannot surge (its hostPort is
        # defaulted): a surge pod never fits on the node, the rollout stalls.
        for sets in (["updateStrategy.maxUnavailable=0", "updateStrategy.maxSurge=1"],
                     ["updateStrategy.maxSurge=10%"]):
            p = render_text(sets=sets, check=False)
            self.assertNotEqual(p.returncode, 0, sets)
            self.assertIn("updateStrategy.maxSurge", p.stderr, sets)

    def test_affinity_one_term_per_role_default_keys(self):
        self.assertNotIn("nodeSelector", self.spec)
        self.assertEqual(terms_of(self.objs["DaemonSet"]), [role_term("node-role.openkeel.io/compute")])
        self.assertEqual(terms_of(self.objs["DaemonSet/nocompute"]),
                         [not_compute(role_term("node-role.openkeel.io/network"))])
        one = render(sets=["secretsOnComputeOnly=false"])
        self.assertNotIn("DaemonSet/nocompute", one)
        self.assertEqual(terms_of(one["DaemonSet"]), [role_term("node-role.openkeel.io/compute"),
                                                      role_term("node-role.openkeel.io/network")])

    def test_every_taint_tolerated(self):
        # Issue 24, point 5: a taint added while VMs run (seed 000 § 4.1's
        # openkeel.io/compute-disabled, or any other) must not evict the node's agent.
        self.assertEqual(self.spec["tolerations"], [{"operator": "Exists"}])

    def test_tolerations_of_every_listed_role_plus_reserved_when_asked(self):
        spec = pod_spec(render(sets=["placement.tolerateAllTaints=false"]))
        self.assertEqual(spec["tolerations"], [toleration("node-role.openkeel.io/compute"),
                                               toleration("node-role.openkeel.io/network"), RESERVED])

    def test_least_privilege(self):
        sc = self.container["securityContext"]
        self.assertIs(sc["readOnlyRootFilesystem"], True)
        # Bidirectional propagation is accepted by the API server in privileged containers only;
        # privileged means every capability, so no list pretends otherwise.
        self.assertIs(sc["privileged"], True)
        self.assertNotIn("capabilities", sc)
        host_paths = sorted(v["hostPath"]["path"] for v in self.spec["volumes"] if "hostPath" in v)
        self.assertEqual(host_paths, ["/run/netns", "/var/lib/openkeel-node-agent", "/var/run/openvswitch"])
        mounts = {m["name"]: m for m in self.container["volumeMounts"]}
        self.assertEqual(mounts["netns"]["mountPropagation"], "Bidirectional")
        self.assertEqual(mounts["netns"]["mountPath"], "/run/netns")
        self.assertEqual(mounts["ovs-run"]["mountPath"], "/var/run/openvswitch")
        self.assertNotIn("hostPID", self.spec)
        self.assertNotIn("hostIPC", self.spec)

    def test_no_cpu_limit_memory_limited(self):
        # Issue 24, point 7: bursts (cold start, boot storm) must not be throttled.
        self.assertEqual(self.container["resources"], {"requests": {"cpu": "50m", "memory": "64Mi"},
                                                       "limits": {"memory": "256Mi"}})

    def test_unprivileged_without_bidirectional_mount(self):
        for sets in (["metadata.enabled=false"], ["metadata.netnsMountPropagation=HostToContainer"]):
            objs = render(sets=sets)
            c = pod_spec(objs)["containers"][0]
            self.assertIs(c["securityContext"]["privileged"], False, sets)
            self.assertIs(c["securityContext"]["allowPrivilegeEscalation"], False, sets)
            # Metadata listens on port 80 inside each namespace (a new network namespace starts
            # with ip_unprivileged_port_start 1024): NET_BIND_SERVICE only then.
            expected = ["NET_ADMIN", "SYS_ADMIN"] + (["NET_BIND_SERVICE"] if "metadata.enabled=false" not in sets
                                                     else [])
            self.assertEqual(c["securityContext"]["capabilities"], {"drop": ["ALL"], "add": expected}, sets)
        objs = render(sets=["metadata.enabled=false"])
        self.assertNotIn("/run/netns", [v.get("hostPath", {}).get("path") for v in pod_spec(objs)["volumes"]])
        # And the agent is told so: its own default is on (an omitted section once meant "on"
        # without the mounts).
        self.assertEqual(agent_config(objs)["metadata"], {"enabled": False})

    def test_secrets_by_name_never_inlined(self):
        vols = {v["name"]: v for v in self.spec["volumes"]}
        md = vols["metadata-secrets"]["projected"]["sources"]
        self.assertEqual(md, [{"secret": {"name": "nova-metadata-shared-secret",
                                          "items": [{"key": "shared-secret", "path": "shared-secret"}]}}])
        pl = vols["placement-secrets"]["projected"]["sources"]
        self.assertEqual(pl, [{"secret": {"name": "openkeel-node-agent-clouds",
                                          "items": [{"key": "clouds.yaml", "path": "clouds.yaml"}]}}])
        mounts = {m["name"]: m["mountPath"] for m in self.container["volumeMounts"]}
        self.assertEqual(mounts["metadata-secrets"], "/etc/openkeel-node-agent/metadata")
        self.assertEqual(mounts["placement-secrets"], "/etc/openkeel-node-agent/placement")
        self.assertNotIn("Secret", self.objs)

    def test_rbac_exactly_what_the_agent_needs(self):
        # The agent never writes a Node: no patch (as the SA, root on any node could otherwise
        # label another node into the control plane or cordon it).
        self.assertEqual(self.objs["ClusterRole"]["rules"], [
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]}])
        binding = self.objs["ClusterRoleBinding"]
        self.assertEqual(binding["roleRef"]["name"], self.objs["ClusterRole"]["metadata"]["name"])
        self.assertEqual(binding["subjects"], [{"kind": "ServiceAccount", "name": SA_NAME, "namespace": NAMESPACE}])
        # Events only where k8s/events.cc writes them.
        role = self.objs["Role"]
        self.assertEqual(role["metadata"]["namespace"], "default")
        self.assertEqual(role["rules"], [{"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]}])
        rb = self.objs["RoleBinding"]
        self.assertEqual(rb["metadata"]["namespace"], "default")
        self.assertEqual(rb["roleRef"], {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                         "name": role["metadata"]["name"]})
        self.assertEqual(rb["subjects"], [{"kind": "ServiceAccount", "name": sa, "namespace": NAMESPACE}
                                          for sa in (SA_NAME, NOCOMPUTE_SA)])
        # The network-only agents do not watch Pods (Placement off): nodes only.
        self.assertEqual(self.objs["ClusterRole/nocompute"]["rules"], [
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}])
        binding = self.objs["ClusterRoleBinding/nocompute"]
        self.assertEqual(binding["roleRef"]["name"], self.objs["ClusterRole/nocompute"]["metadata"]["name"])
        self.assertEqual(binding["subjects"], [{"kind": "ServiceAccount", "name": NOCOMPUTE_SA,
                                                "namespace": NAMESPACE}])
        self.assertEqual(self.objs["DaemonSet/nocompute"]["spec"]["template"]["spec"]["serviceAccountName"],
                         NOCOMPUTE_SA)


    def test_deb_default_grants_what_the_chart_grants(self):
        # The .deb's /etc/default file tells operators outside Kubernetes what to grant: the
        # chart's verbs, no more ("nodes ... patch" there once asked for a Node write).
        with open(os.path.join(ROOT, "packaging", "deb", "default")) as f:
            text = " ".join(line.lstrip("# ").strip() for line in f)
        told = {m.group(1): m.group(2).split("/")
                for m in re.finditer(r"\b(nodes|pods|events) ([a-z]+(?:/[a-z]+)+)", text)}
        granted = {r["resources"][0]: r["verbs"] for r in self.objs["ClusterRole"]["rules"]}
        granted.update({r["resources"][0]: r["verbs"] for r in self.objs["Role"]["rules"]})
        self.assertEqual(told, granted)
    def test_config_file(self):
        cfg = agent_config(self.objs)
        self.assertEqual(cfg["nodeRoles"]["profile"], "default")
        for role in ROLES:
            kebab = KEBAB.get(role, role)
            self.assertEqual(cfg["nodeRoles"]["roles"][role], {
                "label": "node-role.openkeel.io/" + kebab,
                "taint": {"key": "node-role.openkeel.io/" + kebab, "effect": "NoSchedule"}})
        self.assertEqual(cfg["ovs"]["remote"], "unix:/var/run/openvswitch/db.sock")
        self.assertEqual(cfg["placement"]["cloudsFile"], "/etc/openkeel-node-agent/placement/clouds.yaml")
        self.assertEqual(cfg["placement"]["stateFile"], "/var/lib/openkeel-node-agent/placement-state.json")
        # The OVS ownership record's copy: the same hostPath state directory.
        self.assertEqual(cfg["ovs"]["stateFile"], "/var/lib/openkeel-node-agent/ovs-ownership.json")
        self.assertEqual(cfg["placement"]["cloud"], "openkeel")
        md = cfg["metadata"]
        self.assertEqual(md["sharedSecretFile"], "/etc/openkeel-node-agent/metadata/shared-secret")
        self.assertEqual(md["nova"]["host"], "nova-metadata.openstack.svc")
        self.assertEqual(md["nova"]["port"], 8775)
        self.assertIs(md["ipv6"], True)
        self.assertNotIn("limits", md)
        for secretish in ("password", "token", "s3cr3t"):
            self.assertNotIn(secretish, self.objs["ConfigMap"]["data"]["agent.yaml"])

    def test_metadata_overrides_and_tls(self):
        cfg = agent_config(render(sets=["metadata.limits.maxConnections=64", "metadata.nova.protocol=https",
                                        "metadata.nova.tlsSecret=nova-tls", "metadata.nova.clientCert=true",
                                        "ovs.sbRemote=ssl:10.0.0.5:6642\\,ssl:10.0.0.6:6642"]))
        self.assertEqual(cfg["metadata"]["limits"], {"maxConnections": 64})
        self.assertEqual(cfg["metadata"]["nova"]["caFile"], "/etc/openkeel-node-agent/metadata/nova-tls/ca.crt")
        self.assertEqual(cfg["metadata"]["nova"]["clientKeyFile"],
                         "/etc/openkeel-node-agent/metadata/nova-tls/tls.key")
        self.assertEqual(cfg["ovs"]["sbRemote"], "ssl:10.0.0.5:6642,ssl:10.0.0.6:6642")

    def test_ovn_tls_secret(self):
        self.assertNotIn("ssl", agent_config(self.objs)["ovs"])
        objs = render(sets=["ovs.sbRemote=ssl:10.0.0.5:6642", "ovs.tlsSecret=ovn-tls"])
        self.assertEqual(agent_config(objs)["ovs"]["ssl"], {
            "privateKeyFile": "/etc/openkeel-node-agent/ovn-tls/tls.key",
            "certificateFile": "/etc/openkeel-node-agent/ovn-tls/tls.crt",
            "caCertFile": "/etc/openkeel-node-agent/ovn-tls/ca.crt"})
        spec = pod_spec(objs)
        volume = next(v for v in spec["volumes"] if v["name"] == "ovn-tls")
        self.assertEqual(volume["secret"]["secretName"], "ovn-tls")
        mounts = {m["name"]: m for m in spec["containers"][0]["volumeMounts"]}
        self.assertEqual(mounts["ovn-tls"]["mountPath"], "/etc/openkeel-node-agent/ovn-tls")
        self.assertNotIn("subPath", mounts["ovn-tls"])

    def test_node_patch_policy(self):
        objs = render(sets=["nodePatchPolicy.enabled=true"])
        vap = objs["ValidatingAdmissionPolicy"]
        self.assertEqual(vap["apiVersion"], "admissionregistration.k8s.io/v1")
        self.assertIn("system:serviceaccount:%s:%s" % (NAMESPACE, SA_NAME),
                      vap["spec"]["matchConditions"][0]["expression"])
        self.assertIn("authentication.kubernetes.io/node-name", vap["spec"]["validations"][0]["expression"])
        self.assertEqual(objs["ValidatingAdmissionPolicyBinding"]["spec"]["policyName"], vap["metadata"]["name"])
        self.assertEqual(objs["ValidatingAdmissionPolicyBinding"]["spec"]["validationActions"], ["Deny"])
        old = run([HELM, "template", RELEASE, CHART, "--kube-version", "1.29.0", "--set", "nodePatchPolicy.enabled=true"],
                  check=False)
        self.assertNotEqual(old.returncode, 0)
        self.assertIn("nodePatchPolicy.enabled needs Kubernetes >= 1.30", old.stderr)
        run([HELM, "template", RELEASE, CHART, "--kube-version", "1.30.0", "--set", "nodePatchPolicy.enabled=true"])


class TestPlacementVariants(ChartCase):
    def test_hardened_profile_keys_in_affinity_and_config(self):
        for source in ({"values": [os.path.join(VALUES, "hardened-okadm.yaml")]},
                       {"sets": ["global.nodeRoles.profile=hardened"]}):
            source = {k: v + (["placement.tolerateAllTaints=false"] if k == "sets" else []) for k, v in
                      source.items()}
            if "values" in source:
                source["sets"] = ["placement.tolerateAllTaints=false"]
            objs = render(**source)
            spec = pod_spec(objs)
            self.assertEqual(terms_of(objs["DaemonSet"]),
                             [role_term("node-restriction.kubernetes.io/openkeel-compute")], source)
            self.assertEqual(terms_of(objs["DaemonSet/nocompute"]),
                             [not_compute(role_term("node-restriction.kubernetes.io/openkeel-network"),
                                          "node-restriction.kubernetes.io/openkeel-compute")], source)
            # NodeRestriction restricts labels, not taints: the taint keys stay the default ones.
            self.assertEqual(spec["tolerations"], [toleration("node-role.openkeel.io/compute"),
                                                   toleration("node-role.openkeel.io/network"), RESERVED])
            cfg = agent_config(objs)["nodeRoles"]["roles"]
            for role in ROLES:
                self.assertEqual(cfg[role]["label"],
                                 "node-restriction.kubernetes.io/openkeel-" + KEBAB.get(role, role), source)

    def test_single_role_is_a_node_selector(self):
        spec = pod_spec(render(sets=["placement.role=network", "placement.tolerateAllTaints=false"]))
        self.assertEqual(spec["nodeSelector"], {"node-role.openkeel.io/network": ""})
        self.assertNotIn("affinity", spec)
        self.assertEqual(spec["tolerations"], [toleration("node-role.openkeel.io/network"), RESERVED])

    def test_role_given_by_node_selector_terms(self):
        objs = render(sets=["global.nodeRoles.roles.network.nodeSelectorTerms[0].matchExpressions[0].key="
                            "example.com/gateway",
                            "global.nodeRoles.roles.network.nodeSelectorTerms[0].matchExpressions[0].operator=Exists"])
        self.assertEqual(terms_of(objs["DaemonSet"]), [role_term("node-role.openkeel.io/compute")])
        self.assertEqual(terms_of(objs["DaemonSet/nocompute"]), [
            not_compute({"matchExpressions": [{"key": "example.com/gateway", "operator": "Exists"}]})])
        self.assertNotIn("label", agent_config(objs)["nodeRoles"]["roles"]["network"])

    def test_taints_rendered_whether_or_not_nodes_are_tainted(self):
        for taints in ("true", "false"):
            spec = pod_spec(render(sets=["global.nodeRoles.taints=" + taints, "placement.tolerateAllTaints=false"]))
            self.assertEqual(len(spec["tolerations"]), 3)

    def test_extra_tolerations_value(self):
        spec = pod_spec(render(sets=["placement.extraTolerations=null", "placement.tolerateAllTaints=false"]))
        self.assertEqual(spec["tolerations"], [toleration("node-role.openkeel.io/compute"),
                                               toleration("node-role.openkeel.io/network")])

    def test_raw_overrides_win(self):
        spec = pod_spec(render(values=[os.path.join(VALUES, "raw-overrides.yaml")]))
        self.assertEqual(spec["nodeSelector"], {"kubernetes.io/hostname": "cmp-01"})
        self.assertEqual(list(spec["affinity"]["nodeAffinity"]), ["preferredDuringSchedulingIgnoredDuringExecution"])
        self.assertEqual(spec["tolerations"], [{"operator": "Exists"}])
        self.assertEqual(spec["priorityClassName"], "openkeel-infra-critical")

    def test_force_downscale_selects_no_node_whatever_else_is_set(self):
        for values in ([], [os.path.join(VALUES, "raw-overrides.yaml")]):
            spec = pod_spec(render(values=values, sets=["forceDownscale=true"]))
            self.assertEqual(spec["nodeSelector"]["openkeel.io/forced-downscale"], "true", values)
        spec = pod_spec(render(sets=["forceDownscale=true"]))
        self.assertIn("affinity", spec)   # the rest of the placement is unchanged


class TestOfflineSchemaValidation(ChartCase):
    VARIANTS = [[], ["-f", "hardened-okadm.yaml"], ["--set", "forceDownscale=true"], ["-f", "raw-overrides.yaml"],
                ["--set", "nodePatchPolicy.enabled=true"], ["--set", "metadata.enabled=false"],
                ["--set", "metadata.netnsMountPropagation=HostToContainer"],
                ["--set", "metadata.nova.tlsSecret=nova-tls", "--set", "openstackPlacement.caSecret.name=ca"],
                ["--set", "ovs.tlsSecret=ovn-tls", "--set", "ovs.sbRemote=ssl:10.0.0.5:6642"],
                ["--set", "metrics.grafanaDashboard.enabled=true"]]

    def test_every_variant_validates(self):
        for variant in self.VARIANTS:
            args = [a if not a.endswith(".yaml") else os.path.join(VALUES, a) for a in variant]
            text = run([HELM, "template", RELEASE, CHART, "--namespace", NAMESPACE] + args).stdout
            objs = [d for d in yaml.safe_load_all(text) if d]
            ok, out = validate_offline(objs)
            self.assertTrue(ok, "%s:\n%s" % (variant, out))
            self.assertIn("%d objects, 0 problems" % len(objs), out)

    def test_the_validator_catches_breakage(self):
        objs = list(render(sets=["nodePatchPolicy.enabled=true",
                                 "metadata.netnsMountPropagation=HostToContainer"]).values())
        ds = next(o for o in objs if o["kind"] == "DaemonSet")
        c = ds["spec"]["template"]["spec"]["containers"][0]
        c["volumeMounts"][0]["mountPropogation"] = "Bidirectional"         # unknown field
        c["securityContext"]["capabilities"]["add"] = [7]                  # wrong type
        ds["spec"]["updateStrategy"]["type"] = "Rolling"                   # not in the enum
        del ds["spec"]["selector"]                                         # required
        ok, out = validate_offline(objs)
        self.assertFalse(ok)
        for needle in ("mountPropogation: unknown field", "capabilities/add/0 must be string",
                       "updateStrategy/type must be equal to one of the allowed values",
                       "must have required property selector"):
            self.assertIn(needle, out)


class TestSecretsOnComputeOnly(ChartCase):
    """Issue 24, point 8: only nodes with the compute role mount the Placement clouds.yaml and Nova's
    shared secret; the others run the network-only DaemonSet, without Secrets or capabilities."""

    def assert_every_node_placed_once(self, sets, labels):
        split, single = render(sets=sets), render(sets=sets + ["secretsOnComputeOnly=false"])
        compute_label = agent_config(split)["nodeRoles"]["roles"]["compute"]["label"]
        n = 0
        # Every combination of the placed roles' labels: absent, the empty value (the role), another value.
        for combo in range(3 ** len(labels)):
            node, c = {}, combo
            for label in labels:
                c, v = divmod(c, 3)
                if v:
                    node[label] = "" if v == 1 else "true"
            chosen = [k for k in ("DaemonSet", "DaemonSet/nocompute") if matches(split[k], "n1", node)]
            want = matches(single["DaemonSet"], "n1", node)
            self.assertEqual(len(chosen), int(want), (sets, node, chosen))
            if chosen:
                n += 1
                self.assertEqual(chosen == ["DaemonSet"], node.get(compute_label) == "", (sets, node))
        self.assertGreater(n, 0)

    def test_the_two_daemonsets_place_every_node_exactly_once(self):
        default = ["node-role.openkeel.io/compute", "node-role.openkeel.io/network"]
        self.assert_every_node_placed_once([], default)
        self.assert_every_node_placed_once(["placement.roles={compute,network,storage}"],
                                           default + ["node-role.openkeel.io/storage"])
        self.assert_every_node_placed_once(["global.nodeRoles.profile=hardened"],
                                           ["node-restriction.kubernetes.io/openkeel-compute",
                                            "node-restriction.kubernetes.io/openkeel-network"])
        self.assert_every_node_placed_once(
            ["global.nodeRoles.roles.network.nodeSelectorTerms[0].matchExpressions[0].key=example.com/gateway",
             "global.nodeRoles.roles.network.nodeSelectorTerms[0].matchExpressions[0].operator=Exists"],
            ["node-role.openkeel.io/compute", "example.com/gateway"])

    def test_the_network_only_agent_has_no_secret_no_capability_no_netns(self):
        objs = render()
        compute, other = pod_spec(objs), objs["DaemonSet/nocompute"]["spec"]["template"]["spec"]
        volumes = lambda spec: sorted(v["name"] for v in spec["volumes"])
        self.assertEqual(volumes(compute), ["config", "metadata-secrets", "netns", "ovs-run", "placement-secrets",
                                            "state"])
        self.assertEqual(volumes(other), ["config", "ovs-run", "state"])
        ctx = other["containers"][0]["securityContext"]
        self.assertIs(ctx["privileged"], False)
        self.assertEqual(ctx["capabilities"], {"drop": ["ALL"]})
        self.assertIs(ctx["allowPrivilegeEscalation"], False)
        self.assertIs(compute["containers"][0]["securityContext"]["privileged"], True)
        config_mount = [m for m in other["containers"][0]["volumeMounts"] if m["name"] == "config"][0]
        self.assertEqual(config_mount["subPath"], "agent-nocompute.yaml")
        # Selectors that never overlap (each DaemonSet would otherwise fight over the other's pods),
        # the compute one as in earlier releases (a selector is immutable).
        sel = objs["DaemonSet"]["spec"]["selector"]["matchLabels"]
        self.assertEqual(sel, {"app.kubernetes.io/name": "openkeel-node-agent", "app.kubernetes.io/instance": RELEASE})
        other_sel = objs["DaemonSet/nocompute"]["spec"]["selector"]["matchLabels"]
        self.assertNotEqual(other_sel["app.kubernetes.io/name"], sel["app.kubernetes.io/name"])
        self.assertEqual(objs["DaemonSet/nocompute"]["spec"]["template"]["metadata"]["labels"]
                         ["app.kubernetes.io/name"], other_sel["app.kubernetes.io/name"])
        # What the network-only agents run: Placement and metadata off, the same roles.
        data = objs["ConfigMap"]["data"]
        cfg, full = yaml.safe_load(data["agent-nocompute.yaml"]), yaml.safe_load(data["agent.yaml"])
        self.assertEqual(cfg["placement"], {"enabled": False})
        self.assertEqual(cfg["metadata"], {"enabled": False}, "explicit: the agent's default is on")
        self.assertEqual(cfg["nodeRoles"], full["nodeRoles"])
        self.assertEqual(cfg["ovs"], full["ovs"])
        # The PodMonitor scrapes both.
        pm = render(sets=["metrics.podMonitor.enabled=true", "metrics.exposeOnNode=true"])["PodMonitor"]
        self.assertEqual(pm["spec"]["selector"]["matchExpressions"][0]["values"],
                         ["openkeel-node-agent", "openkeel-node-agent-nocompute"])

    def test_metadata_on_network_nodes_for_external_ports(self):
        # metadata.onNetworkNodes: the network-only agents serve the external ports (SR-IOV direct,
        # baremetal) OVN binds to them, with Nova's shared secret and the /run/netns mount; never
        # Placement or its Secret.
        objs = render(sets=["metadata.onNetworkNodes=true"])
        other = objs["DaemonSet/nocompute"]["spec"]["template"]["spec"]
        self.assertEqual(sorted(v["name"] for v in other["volumes"]),
                         ["config", "metadata-secrets", "netns", "ovs-run", "state"])
        netns = [m for m in other["containers"][0]["volumeMounts"] if m["name"] == "netns"][0]
        self.assertEqual(netns["mountPropagation"], "Bidirectional")
        self.assertIs(other["containers"][0]["securityContext"]["privileged"], True)
        cfg = yaml.safe_load(objs["ConfigMap"]["data"]["agent-nocompute.yaml"])
        full = yaml.safe_load(objs["ConfigMap"]["data"]["agent.yaml"])
        self.assertEqual(cfg["metadata"], full["metadata"])
        self.assertEqual(cfg["placement"], {"enabled": False})
        # Unprivileged (HostToContainer): the compute agents' capabilities, metadata's included.
        objs = render(sets=["metadata.onNetworkNodes=true", "metadata.netnsMountPropagation=HostToContainer"])
        ctx = objs["DaemonSet/nocompute"]["spec"]["template"]["spec"]["containers"][0]["securityContext"]
        self.assertIs(ctx["privileged"], False)
        self.assertEqual(ctx["capabilities"], {"drop": ["ALL"], "add": ["NET_ADMIN", "SYS_ADMIN", "NET_BIND_SERVICE"]})
        # metadata.enabled false wins.
        cfg = yaml.safe_load(render(sets=["metadata.onNetworkNodes=true", "metadata.enabled=false"])
                             ["ConfigMap"]["data"]["agent-nocompute.yaml"])
        self.assertEqual(cfg["metadata"], {"enabled": False})

    def test_one_daemonset_where_the_chart_cannot_split(self):
        for sets in (["secretsOnComputeOnly=false"], ["placement.role=network"], ["placement.roles={compute}"],
                     ["placement.roles={network,storage}"],
                     ["placement.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                      ".nodeSelectorTerms[0].matchExpressions[0].key=x",
                      "placement.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                      ".nodeSelectorTerms[0].matchExpressions[0].operator=Exists"]):
            objs = render(sets=sets)
            self.assertNotIn("DaemonSet/nocompute", objs, sets)
            self.assertNotIn("ServiceAccount/nocompute", objs, sets)
            self.assertNotIn("agent-nocompute.yaml", objs["ConfigMap"]["data"], sets)

    def test_a_compute_role_without_a_label_is_refused_naming_the_keys(self):
        p = render_text(sets=["global.nodeRoles.roles.compute.nodeSelectorTerms[0].matchExpressions[0].key=x",
                              "global.nodeRoles.roles.compute.nodeSelectorTerms[0].matchExpressions[0].operator="
                              "Exists"], check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("global.nodeRoles.roles.compute.label", p.stderr)
        self.assertIn("secretsOnComputeOnly: false", p.stderr)


@unittest.skipUnless(os.access(AGENT, os.X_OK), "agent binary not built (%s)" % AGENT)
class TestAgentAcceptsTheRenderedConfig(ChartCase):
    """The agent's own strict parser reads the chart's config and derives the roles the chart placed
    the pods with, including the metadata section the chart writes."""

    def dry_run(self, sets, node, key="agent.yaml", values=()):
        cfg = yaml.safe_load(render(values=values, sets=sets)["ConfigMap"]["data"][key])
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
            yaml.safe_dump(cfg, f)
            f.flush()
            p = subprocess.run([AGENT, "--dry-run", "--config", f.name, "--node-file",
                                os.path.join(ROOT, "tests", "data", node), "--output", "json"],
                               capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def test_default_profile(self):
        self.assertEqual(sorted(self.dry_run([], "lab-1.node.yaml")["roles"]),
                         ["compute", "controlPlane", "network", "storage"])
        self.assertEqual(self.dry_run([], "ok-net-2.node.json")["roles"], [])

    def test_ovn_tls(self):
        # ovs.ssl as the chart writes it passes the agent's strict parser.
        self.assertEqual(self.dry_run(["ovs.tlsSecret=ovn-tls", "ovs.sbRemote=ssl:10.0.0.5:6642"],
                                      "ok-net-2.node.json")["roles"], [])

    def test_metrics_listener_settings(self):
        # health.adminListen and maxConnections as the chart writes them pass the agent's parser.
        for sets in (["metrics.exposeOnNode=true"], ["metrics.enabled=false"], ["health.maxConnections=8"]):
            self.assertEqual(self.dry_run(sets, "ok-net-2.node.json")["roles"], [], sets)

    def test_device_pools(self):
        # openstackPlacement.devices (issue #29) as the chart writes it: the agent's parser takes
        # it, and a node whose device plugin offers the resource gets the child in the plan.
        devices = [{"resource": "intel.com/sriov_physnet1", "resourceClass": "SRIOV_NET_VF",
                    "traits": ["CUSTOM_PHYSNET_PHYSNET1", "HW_NIC_SRIOV"],
                    "inventories": {"NET_BW_EGR_KILOBIT_PER_SEC": 10000000}}]
        with open(os.path.join(ROOT, "tests", "data", "lab-1.node.yaml")) as f:
            node = yaml.safe_load(f)
        node["status"]["allocatable"]["intel.com/sriov_physnet1"] = "8"
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as values, \
                tempfile.NamedTemporaryFile("w", suffix=".yaml") as nodefile:
            yaml.safe_dump({"openstackPlacement": {"devices": devices}}, values)
            yaml.safe_dump(node, nodefile)
            values.flush()
            nodefile.flush()
            cfg = yaml.safe_load(render(values=[values.name])["ConfigMap"]["data"]["agent.yaml"])
            self.assertEqual(cfg["placement"]["devices"], devices)
            plan = self.dry_run([], nodefile.name, values=[values.name])
        self.assertNotIn("devices", yaml.safe_load(render()["ConfigMap"]["data"]["agent.yaml"])["placement"])
        vf = [c for c in plan["placement"]["nested"] if c["name"] == "lab-1:intel.com_sriov_physnet1"]
        self.assertEqual(len(vf), 1, plan["placement"]["nested"])
        self.assertEqual(vf[0]["inventories"]["SRIOV_NET_VF"]["total"], 8)
        self.assertEqual(vf[0]["inventories"]["NET_BW_EGR_KILOBIT_PER_SEC"]["total"], 10000000)
        self.assertEqual(vf[0]["traits"], ["CUSTOM_PHYSNET_PHYSNET1", "HW_NIC_SRIOV"])
        self.assertRegex(vf[0]["uuid"], "^[0-9a-f-]{36}$")
        # availabilityZones through extra, as the chart README says: taken by the agent's parser.
        plan = self.dry_run(["openstackPlacement.extra.availabilityZones.computeEndpointOverride="
                             "https://nova.example/v2.1"], "lab-1.node.yaml")
        self.assertIn("availabilityZone", plan["placement"])

    def test_network_only_config(self):
        # The nocompute DaemonSet's config: the same roles, Placement and metadata off.
        plan = self.dry_run([], "lab-1.node.yaml", key="agent-nocompute.yaml")
        self.assertEqual(sorted(plan["roles"]), ["compute", "controlPlane", "network", "storage"])
        self.assertNotIn("placement", plan)
        self.assertIs(plan["metadata"]["enabled"], False)

    def test_network_only_config_with_metadata_on_network_nodes(self):
        # The agent's strict parser takes it, and with the network role it serves metadata.
        plan = self.dry_run(["metadata.onNetworkNodes=true", "global.nodeRoles.profile=hardened"],
                            "ok-net-2.node.json", key="agent-nocompute.yaml")
        self.assertEqual(plan["roles"], ["network"])
        self.assertIs(plan["metadata"]["enabled"], True)

    def test_hardened_profile(self):
        plan = self.dry_run(["global.nodeRoles.profile=hardened"], "ok-net-2.node.json")
        self.assertEqual(plan["roles"], ["network"])
        self.assertEqual(self.dry_run(["global.nodeRoles.profile=hardened"], "lab-1.node.yaml")["roles"], [])


if __name__ == "__main__":
    unittest.main()
