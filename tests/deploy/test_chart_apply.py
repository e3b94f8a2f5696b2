"""The rendered chart applied with the real kubectl to the project's fake API server, and what its
service account may do: exactly what the agent needs (kubectl auth can-i, evaluated by the fake
from the applied ClusterRole/ClusterRoleBinding), shown by running the real agent under that
identity.

    python3 -m unittest discover -s tests/deploy -p 'test_chart_apply.py' -v

`kubectl apply --validate=false`: the fake serves no /openapi documents, so kubectl's own schema
check cannot run against it; every object was validated offline (test_chart.py) before.
"""
import json
import os
import re
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

import yaml

from chart_tools import (AGENT, KUBECTL, NAMESPACE, RELEASE, ROOT, render, render_text, run, tools_missing)

SA = "system:serviceaccount:%s:%s-openkeel-node-agent" % (NAMESPACE, RELEASE)
# The network-only agents' (the nocompute DaemonSet): no Placement, so no pods access.
NOCOMPUTE_SA = SA + "-nocompute"
FAKE = os.path.join(ROOT, "tests", "fake_apiserver", "fake_apiserver.py")

# (verb, resource, extra kubectl args) -> expected answer for the agent's service account.
ALLOWED = [("get", "nodes", []), ("list", "nodes", []), ("watch", "nodes", []),
           ("list", "pods", ["--all-namespaces"]), ("watch", "pods", ["--all-namespaces"]),
           ("create", "events", ["-n", "default"]), ("patch", "events", ["-n", "default"])]
DENIED = [("patch", "nodes", []), ("update", "nodes", []), ("delete", "nodes", []), ("create", "nodes", []),
          ("create", "events", ["-n", "kube-system"]), ("patch", "events", ["-n", NAMESPACE]),
          ("patch", "nodes", ["--subresource=status"]), ("update", "nodes", ["--subresource=status"]),
          ("get", "pods", ["-n", "default"]), ("create", "pods", ["-n", "default"]),
          ("delete", "pods", ["-n", "default"]), ("create", "pods", ["-n", "default", "--subresource=eviction"]),
          ("get", "secrets", ["-n", NAMESPACE]), ("list", "secrets", ["--all-namespaces"]),
          ("get", "configmaps", ["-n", NAMESPACE]), ("list", "events", ["-n", "default"]),
          ("delete", "events", ["-n", "default"]), ("patch", "daemonsets.apps", ["-n", NAMESPACE]),
          ("create", "clusterrolebindings.rbac.authorization.k8s.io", []), ("list", "serviceaccounts", ["-A"])]


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.05)


class ApplyCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        missing = tools_missing()
        if missing:
            raise unittest.SkipTest(missing) if os.environ.get("CI") is None else AssertionError(missing)
        cls.tmp = tempfile.mkdtemp(prefix="okna-chart-apply-")
        ready = os.path.join(cls.tmp, "url")
        cls.fake = subprocess.Popen(
            [sys.executable, FAKE, "--listen", "127.0.0.1:0", "--tls-dir", cls.tmp,
             "--token", "admin=admin-token", "--token", "%s=sa-token" % SA,
             "--token", "%s=nocompute-token" % NOCOMPUTE_SA,
             "--objects", os.path.join(ROOT, "tests", "data", "lab-1.node.yaml"),
             os.path.join(ROOT, "tests", "data", "lab-1.pods.json"), "--ready-file", ready],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_for(lambda: os.path.exists(ready) or cls.fake.poll() is not None, 30, "the fake API server")
        with open(ready) as f:
            cls.url = f.read().strip()
        cls.kubeconfig = os.path.join(cls.tmp, "kubeconfig")
        cls.manifest = os.path.join(cls.tmp, "chart.yaml")
        with open(cls.manifest, "w") as f:
            f.write(render_text(sets=["nodePatchPolicy.enabled=true"]).stdout)
        cls.apply_out = cls.kubectl("apply", "--validate=false", "-f", cls.manifest).stdout

    @classmethod
    def tearDownClass(cls):
        cls.fake.terminate()
        cls.fake.wait(10)
        cls.fake.stderr.close()

    @classmethod
    def kubectl(cls, *args, check=True):
        return run([KUBECTL, "--kubeconfig", cls.kubeconfig] + list(args), check=check)

    def can_i(self, verb, resource, extra, sa=SA):
        p = self.kubectl("auth", "can-i", verb, resource, "--as", sa, *extra, check=False)
        return p.stdout.strip().splitlines()[-1] if p.stdout.strip() else p.stderr


class TestApplyAndPermissions(ApplyCase):
    def test_apply_created_every_object(self):
        for line in ("serviceaccount/%s-openkeel-node-agent created" % RELEASE,
                     "configmap/%s-openkeel-node-agent created" % RELEASE,
                     "clusterrole.rbac.authorization.k8s.io/%s-openkeel-node-agent created" % RELEASE,
                     "clusterrolebinding.rbac.authorization.k8s.io/%s-openkeel-node-agent created" % RELEASE,
                     "role.rbac.authorization.k8s.io/%s-openkeel-node-agent-events created" % RELEASE,
                     "rolebinding.rbac.authorization.k8s.io/%s-openkeel-node-agent-events created" % RELEASE,
                     "flowschema.flowcontrol.apiserver.k8s.io/%s-openkeel-node-agent created" % RELEASE,
                     "prioritylevelconfiguration.flowcontrol.apiserver.k8s.io/%s-openkeel-node-agent created"
                     % RELEASE,
                     "daemonset.apps/%s-openkeel-node-agent created" % RELEASE,
                     "daemonset.apps/%s-openkeel-node-agent-nocompute created" % RELEASE,
                     "serviceaccount/%s-openkeel-node-agent-nocompute created" % RELEASE,
                     "clusterrole.rbac.authorization.k8s.io/%s-openkeel-node-agent-nocompute created" % RELEASE,
                     "clusterrolebinding.rbac.authorization.k8s.io/%s-openkeel-node-agent-nocompute created"
                     % RELEASE,
                     "validatingadmissionpolicy.admissionregistration.k8s.io/%s-openkeel-node-agent-own-node "
                     "created" % RELEASE):
            self.assertIn(line, self.apply_out)
        ds = json.loads(self.kubectl("get", "daemonsets.apps", "-n", NAMESPACE, "-o", "json").stdout)["items"]
        self.assertEqual([d["metadata"]["name"] for d in ds], ["%s-openkeel-node-agent" % RELEASE,
                                                               "%s-openkeel-node-agent-nocompute" % RELEASE])
        self.assertIs(ds[0]["spec"]["template"]["spec"]["hostNetwork"], True)
        # A second apply is a no-op for kubectl (client-side apply with last-applied annotations).
        again = self.kubectl("apply", "--validate=false", "-f", self.manifest).stdout
        self.assertNotIn("created", again)

    def test_the_service_account_may_do_what_the_agent_needs(self):
        for verb, resource, extra in ALLOWED:
            self.assertEqual(self.can_i(verb, resource, extra), "yes", (verb, resource, extra))

    def test_and_nothing_more(self):
        for verb, resource, extra in DENIED:
            self.assertEqual(self.can_i(verb, resource, extra), "no", (verb, resource, extra))

    def rules(self, sa):
        out = self.kubectl("auth", "can-i", "--list", "--as", sa).stdout
        rows = {}
        for line in out.splitlines()[1:]:
            cols = line.split()
            rows[cols[0]] = " ".join(cols[3:])
        return rows

    def test_rules_list_is_exactly_the_cluster_role(self):
        # what every authenticated user may ask about itself
        own = {"selfsubjectaccessreviews.authorization.k8s.io": "[create]",
               "selfsubjectrulesreviews.authorization.k8s.io": "[create]"}
        self.assertEqual(self.rules(SA), dict(own, nodes="[get list watch]", pods="[list watch]",
                                              events="[create patch]"))
        # Gateways (often facing the internet): not even the pods of their own node.
        self.assertEqual(self.rules(NOCOMPUTE_SA), dict(own, nodes="[get list watch]", events="[create patch]"))

    def test_the_network_only_service_account_may_not_read_pods(self):
        for verb, resource, extra in ALLOWED:
            want = "no" if resource == "pods" else "yes"
            self.assertEqual(self.can_i(verb, resource, extra, NOCOMPUTE_SA), want, (verb, resource, extra))
        for verb, resource, extra in DENIED:
            self.assertEqual(self.can_i(verb, resource, extra, NOCOMPUTE_SA), "no", (verb, resource, extra))

    def test_admin_and_strangers(self):
        self.assertEqual(self.kubectl("auth", "can-i", "delete", "nodes").stdout.strip(), "yes")
        stranger = "system:serviceaccount:%s:someone-else" % NAMESPACE
        p = self.kubectl("auth", "can-i", "list", "nodes", "--as", stranger, check=False)
        self.assertEqual(p.stdout.strip(), "no")


@unittest.skipUnless(os.access(AGENT, os.X_OK), "agent binary not built (%s)" % AGENT)
class TestAgentUnderTheServiceAccount(ApplyCase):
    """The real agent, authenticated as the chart's service account: ready with the applied RBAC, and
    every request it sent was allowed; without the binding it reports the missing permission."""

    def start_agent(self, key="agent.yaml", sa=SA):
        # The chart's config without OVS (none here); Placement stays as rendered, so the compute
        # agent watches its Pods and the network-only one does not.
        cfg = yaml.safe_load(render(sets=["ovs.enabled=false"])["ConfigMap"]["data"][key])
        path = os.path.join(self.tmp, "agent.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(cfg, f)
        log = open(os.path.join(self.tmp, "agent.log"), "w+")
        proc = subprocess.Popen([AGENT, "--config", path, "--kubeconfig", self.kubeconfig, "--context", sa,
                                 "--node-name", "lab-1", "--health-listen", "127.0.0.1:0", "--admin-listen",
                                 "127.0.0.1:0", "--log-format", "text"],
                                stdout=log, stderr=subprocess.STDOUT)
        self.addCleanup(lambda: (proc.poll() is None and proc.send_signal(signal.SIGTERM), proc.wait(10),
                                 log.close()))
        port = []

        def listening():
            log.seek(0)
            m = re.search(r"serving /healthz .* on 127\.0\.0\.1:(\d+)", log.read())
            if m:
                port.append(int(m.group(1)))
            if proc.poll() is not None:
                log.seek(0)
                raise AssertionError("agent exited:\n" + log.read())
            return bool(port)
        wait_for(listening, 30, "the agent's health listener")
        return proc, port[0], log

    @staticmethod
    def get(port, path):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def fake_requests(self):
        ctx = ssl.create_default_context(cafile=os.path.join(self.tmp, "ca.crt"))
        with urllib.request.urlopen(self.url + "/_fake/requests", context=ctx, timeout=5) as r:
            return json.loads(r.read())

    def test_ready_with_the_chart_rbac_and_refused_without_it(self):
        _, port, _ = self.start_agent()
        # Both informers synced under the service account (the compute agent stays unready here for
        # Placement, whose clouds.yaml this test does not mount).
        wait_for(lambda: all(s in self.get(port, "/readyz?verbose")[1] for s in ("[+]node-informer ok",
                                                                                   "[+]pod-informer ok")),
                 30, "both informers synced under the service account")
        mine = [r for r in self.fake_requests() if r["user"] == SA]
        self.assertTrue(any(r["path"] == "/api/v1/nodes" for r in mine), mine)
        self.assertTrue(any(r["path"] == "/api/v1/pods" for r in mine), mine)
        self.assertEqual([r for r in mine if r["status"] >= 400], [])

        self.kubectl("delete", "clusterrolebinding.rbac.authorization.k8s.io", "%s-openkeel-node-agent" % RELEASE)
        self.addCleanup(lambda: self.kubectl("apply", "--validate=false", "-f", self.manifest))
        _, port2, _ = self.start_agent()
        wait_for(lambda: "RBAC" in self.get(port2, "/readyz?verbose")[1], 30, "the RBAC reason in /readyz")
        self.assertNotEqual(self.get(port2, "/readyz")[0], 200)

    def test_the_network_only_agent_is_ready_without_pods_access(self):
        _, port, _ = self.start_agent("agent-nocompute.yaml", NOCOMPUTE_SA)
        wait_for(lambda: self.get(port, "/readyz")[0] == 200, 30, "/readyz 200 under the nocompute account")
        mine = [r for r in self.fake_requests() if r["user"] == NOCOMPUTE_SA]
        self.assertTrue(any(r["path"] == "/api/v1/nodes" for r in mine), mine)
        self.assertEqual([r for r in mine if r["path"].startswith("/api/v1/pods")], [])
        self.assertEqual([r for r in mine if r["status"] >= 400], [])


if __name__ == "__main__":
    unittest.main()
