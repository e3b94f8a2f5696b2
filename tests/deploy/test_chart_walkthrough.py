"""The chart README's walk-through, command by command, against the project's fake API server: the
shell blocks of its first section ("From an empty cluster to a running fleet") are read from the
README and run as they are, with the real kubectl and helm, so the README cannot drift from what
works. The fake has no DaemonSet controller: the test plays its part (one pod per node that a
DaemonSet's placement selects, the others deleted), which is what the chart's upgrade guard reads.

    python3 -m unittest discover -s tests/deploy -p 'test_chart_walkthrough.py' -v

The only change made to the commands: `helm install`/`upgrade` get --disable-openapi-validation and
`kubectl apply`/`replace` --validate=false, as the fake serves no /openapi documents (every object
is validated offline by test_chart.py).
"""
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import unittest

import yaml

from chart_tools import CHART, HELM, KUBECTL, ROOT, render, tools_missing
from test_chart import matches

FAKE = os.path.join(ROOT, "tests", "fake_apiserver", "fake_apiserver.py")
README = os.path.join(CHART, "README.md")
NS, RELEASE = "openkeel", "node-agent"
COMPUTE_DS, OTHER_DS = RELEASE + "-openkeel-node-agent", RELEASE + "-openkeel-node-agent-nocompute"


def readme_blocks():
    """The fenced blocks of the README's first section, in order: [(info string, text)]."""
    with open(README) as f:
        text = f.read()
    section = text[text.index("## From an empty cluster to a running fleet"):text.index("\n## Where the pods run")]
    return re.findall(r"^```(\w*)\n(.*?)^```", section, re.S | re.M)


def node(name, labels):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": dict({"kubernetes.io/hostname": name}, **labels)}}


class Cluster:
    """A fake API server with the given nodes, and a directory to run the README's commands in."""

    def __init__(self, test, nodes):
        self.tmp = tempfile.mkdtemp(prefix="okna-walkthrough-")
        test.addCleanup(shutil.rmtree, self.tmp, True)
        objects = os.path.join(self.tmp, "nodes.json")
        with open(objects, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "List", "items": nodes}, f)
        ready = os.path.join(self.tmp, "url")
        self.fake = subprocess.Popen([sys.executable, FAKE, "--listen", "127.0.0.1:0", "--tls-dir", self.tmp,
                                      "--token", "admin=admin-token", "--objects", objects, "--ready-file", ready],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        test.addCleanup(self.stop)
        deadline = time.monotonic() + 30
        while not os.path.exists(ready):
            if self.fake.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("the fake API server did not start")
            time.sleep(0.05)
        # The README's working directory: a checkout (deploy/), clouds.yaml, production.yaml; and
        # on PATH the real kubectl, and helm with --disable-openapi-validation for the fake.
        os.symlink(os.path.join(ROOT, "deploy"), os.path.join(self.tmp, "deploy"))
        with open(os.path.join(self.tmp, "clouds.yaml"), "w") as f:
            f.write("clouds: {openkeel: {auth: {auth_url: 'https://keystone.example:5000/v3'}}}\n")
        bin_dir = os.path.join(self.tmp, "bin")
        os.mkdir(bin_dir)
        for tool, verbs, flag in (("helm", "install|upgrade", "--disable-openapi-validation"),
                                  ("kubectl", "apply|replace", "--validate=false")):
            real = HELM if tool == "helm" else KUBECTL
            wrapper = os.path.join(bin_dir, tool)
            with open(wrapper, "w") as f:
                f.write('#!/bin/sh\ncase "$1" in %s) exec %s "$@" %s;; esac\nexec %s "$@"\n'
                        % (verbs, real, flag, real))
            os.chmod(wrapper, stat.S_IRWXU)
        self.env = dict(os.environ, PATH=bin_dir + ":" + os.environ["PATH"],
                        KUBECONFIG=os.path.join(self.tmp, "kubeconfig"), SECRET="s3cr3t-from-nova")

    def stop(self):
        if self.fake.poll() is None:
            self.fake.terminate()
            self.fake.wait(10)

    def sh(self, script, check=True):
        p = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=self.tmp, env=self.env,
                           capture_output=True, text=True, timeout=300)
        if check and p.returncode != 0:
            raise AssertionError("failed (%d):\n%s\n--- stdout\n%s--- stderr\n%s" % (p.returncode, script, p.stdout,
                                                                                   p.stderr))
        return p

    def get(self, *args):
        return json.loads(self.sh("kubectl get -o json " + " ".join(args)).stdout)

    def play_daemonset_controller(self):
        """One pod per (DaemonSet, node it selects), labelled as its template; others deleted."""
        nodes = self.get("nodes")["items"]
        want = {}
        for ds in self.get("-n", NS, "daemonsets.apps")["items"]:
            for n in nodes:
                if matches(ds, n["metadata"]["name"], n["metadata"].get("labels", {})):
                    name = "%s-%s" % (ds["metadata"]["name"], n["metadata"]["name"])
                    want[name] = {"apiVersion": "v1", "kind": "Pod",
                                  "metadata": {"name": name, "namespace": NS,
                                               "labels": ds["spec"]["template"]["metadata"]["labels"]},
                                  "spec": {"nodeName": n["metadata"]["name"],
                                           "containers": [{"name": "agent", "image": "x"}]}}
        have = {p["metadata"]["name"] for p in self.get("-n", NS, "pods")["items"]}
        for name in have - set(want):
            self.sh("kubectl -n %s delete pod %s --grace-period=0 --force" % (NS, name))
        if set(want) - have:
            path = os.path.join(self.tmp, "pods.json")
            with open(path, "w") as f:
                json.dump({"apiVersion": "v1", "kind": "List", "items": [want[n] for n in set(want) - have]}, f)
            self.sh("kubectl apply -f " + path)

    def agents(self):
        """{node: DaemonSet} of the agent pods."""
        out = {}
        for p in self.get("-n", NS, "pods")["items"]:
            ds = COMPUTE_DS if p["metadata"]["name"].startswith(COMPUTE_DS + "-") and not \
                p["metadata"]["name"].startswith(OTHER_DS + "-") else OTHER_DS
            out.setdefault(p["spec"]["nodeName"], []).append(ds)
        return out


class WalkthroughCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        missing = tools_missing()
        if missing:
            raise unittest.SkipTest(missing) if os.environ.get("CI") is None else AssertionError(missing)
        cls.blocks = readme_blocks()
        cls.sh_blocks = [text for info, text in cls.blocks if info == "sh"]
        cls.yaml_blocks = [text for info, text in cls.blocks if info == "yaml"]

    def test_the_readme_has_the_blocks_this_test_runs(self):
        self.assertEqual(len(self.sh_blocks), 3, "install, role label switch, Nova's secret")
        self.assertEqual(len(self.yaml_blocks), 1, "production.yaml")
        self.assertIn("helm install", self.sh_blocks[0])
        self.assertIn("helm upgrade", self.sh_blocks[1])

    def test_the_pod_security_refusal_it_quotes_is_the_rendered_pods(self):
        # Issue 35, C2: what Kubernetes' PodSecurity admission (baseline) prints for the compute
        # pod: its checks sorted by ID (hostNamespaces, hostPathVolumes, hostPorts, privileged:
        # k8s.io/pod-security-admission/policy/registry.go), each with its detail; under
        # hostNetwork the API server defaults every hostPort to its containerPort.
        spec = render()["DaemonSet"]["spec"]["template"]["spec"]
        (container,) = spec["containers"]
        quote = lambda names: ", ".join('"%s"' % n for n in names)
        volumes = [v["name"] for v in spec["volumes"] if "hostPath" in v]
        ports = sorted(str(p.get("hostPort", p["containerPort"])) for p in container["ports"])
        self.assertTrue(spec["hostNetwork"] and container["securityContext"]["privileged"])
        want = ('violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true), '
                'hostPath volumes (volume%s %s), hostPort (container "agent" uses hostPort%s %s), '
                'privileged (container "agent" must not set securityContext.privileged=true).'
                % ("s" if len(volumes) > 1 else "", quote(volumes), "s" if len(ports) > 1 else "", ", ".join(ports)))
        comment = " ".join(line.lstrip("# ").strip() for line in self.sh_blocks[0].splitlines()
                           if line.startswith("#"))
        self.assertIn(want, comment)

    def test_from_an_empty_cluster_to_a_running_fleet(self):
        c = Cluster(self, [node("compute-1", {}), node("gateway-1", {}), node("storage-1", {})])
        with open(os.path.join(c.tmp, "production.yaml"), "w") as f:
            f.write(self.yaml_blocks[0])
        out = c.sh(self.sh_blocks[0]).stdout
        self.assertIn("namespace/openkeel labeled", out)
        self.assertIn("STATUS: deployed", out)
        listed = [line.split()[0] for line in out.splitlines()[-3:]]
        self.assertEqual(listed, ["NAME", COMPUTE_DS, OTHER_DS], out)
        ns = c.get("namespace", NS)
        self.assertEqual(ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"], "privileged")
        # The Secrets the compute agents mount, under the names production.yaml gives.
        secret = c.get("-n", NS, "secret", "nova-metadata-shared-secret")
        self.assertEqual(secret["data"]["shared-secret"], "czNjcjN0LWZyb20tbm92YQ==")
        c.get("-n", NS, "secret", "openkeel-node-agent-clouds")
        c.play_daemonset_controller()
        self.assertEqual(c.agents(), {"compute-1": [COMPUTE_DS], "gateway-1": [OTHER_DS]})

        # "Nova's shared secret": a copy from Nova's namespace, kept in sync by running it again.
        c.sh("kubectl create namespace openstack && kubectl -n openstack create secret generic "
             "nova-metadata-shared-secret --from-literal=shared-secret=rotated-by-nova")
        p = c.sh(self.sh_blocks[2])
        secret = c.get("-n", NS, "secret", "nova-metadata-shared-secret")
        self.assertEqual(secret["data"]["shared-secret"], "cm90YXRlZC1ieS1ub3Zh")
        # Issue 35, C1: no warning on the Secret step 2 made (`kubectl apply` printed one about
        # the missing last-applied-configuration annotation).
        self.assertEqual(p.stderr, "")
        self.assertIn("secret/nova-metadata-shared-secret replaced", p.stdout)

    def test_label_first_then_switch_and_the_guard_when_not(self):
        default = {"node-role.openkeel.io/compute": ""}
        c = Cluster(self, [node("compute-1", default), node("compute-2", default),
                           node("gateway-1", {"node-role.openkeel.io/network": ""}),
                           node("both-1", dict(default, **{"node-role.openkeel.io/network": ""}))])
        c.sh("kubectl create namespace openkeel && helm install node-agent deploy/helm/openkeel-node-agent -n openkeel")
        c.play_daemonset_controller()
        before = c.agents()
        self.assertEqual(before, {"compute-1": [COMPUTE_DS], "compute-2": [COMPUTE_DS], "both-1": [COMPUTE_DS],
                                  "gateway-1": [OTHER_DS]})

        # The switch before the labels: refused, naming the nodes; nothing changed.
        p = c.sh("helm upgrade node-agent deploy/helm/openkeel-node-agent -n openkeel --reuse-values "
                 "--set global.nodeRoles.profile=hardened", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("upgradeGuard: this release would remove the agent from 4 node(s) that run it today: "
                      "both-1, compute-1, compute-2, gateway-1.", p.stderr)
        self.assertIn("upgradeGuard.allowRemovingNodes=true", p.stderr)
        # Half-labelled (a gateway label on a compute node, no compute label): the compute role would go.
        c.sh("kubectl label node compute-1 node-restriction.kubernetes.io/openkeel-network= && "
             "kubectl label node compute-2 node-restriction.kubernetes.io/openkeel-compute= && "
             "kubectl label node both-1 node-restriction.kubernetes.io/openkeel-compute= && "
             "kubectl label node gateway-1 node-restriction.kubernetes.io/openkeel-network=")
        p = c.sh("helm upgrade node-agent deploy/helm/openkeel-node-agent -n openkeel --reuse-values "
                 "--set global.nodeRoles.profile=hardened", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("upgradeGuard: 1 node(s) have the compute role today (label node-role.openkeel.io/compute) "
                      "and would lose it (no label node-restriction.kubernetes.io/openkeel-compute=\"\"): "
                      "compute-1.", p.stderr)
        c.sh("kubectl label node compute-1 node-restriction.kubernetes.io/openkeel-network-")
        self.assertIn(json.loads(c.sh("helm get values node-agent -n openkeel -o json").stdout), (None, {}),
                      "the refused upgrades changed nothing")

        # The README's way: label first, then switch. Every node keeps its agent, of the same kind.
        c.sh(self.sh_blocks[1])
        values = json.loads(c.sh("helm get values node-agent -n openkeel -o json").stdout)
        self.assertEqual(values, {"global": {"nodeRoles": {"profile": "hardened"}}})
        c.play_daemonset_controller()
        self.assertEqual(c.agents(), before)
        cm = c.get("-n", NS, "configmap", COMPUTE_DS)
        self.assertIn("node-restriction.kubernetes.io/openkeel-compute", cm["data"]["agent.yaml"])

        # On purpose: the override takes the agent off every node (here by a role list without them).
        p = c.sh("helm upgrade node-agent deploy/helm/openkeel-node-agent -n openkeel --reuse-values "
                 "--set placement.roles={storage}", check=False)
        self.assertIn("would remove the agent from 4 node(s)", p.stderr)
        c.sh("helm upgrade node-agent deploy/helm/openkeel-node-agent -n openkeel --reuse-values "
             "--set placement.roles={storage} --set upgradeGuard.allowRemovingNodes=true")
        c.play_daemonset_controller()
        self.assertEqual(c.agents(), {})


if __name__ == "__main__":
    unittest.main()
