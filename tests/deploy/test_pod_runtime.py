"""The chart's two DaemonSet pods in a real container runtime (issue 35, point 5): podman 4.3's
`kube play` (Debian 12, runc) of the rendered pod template, with its security context, mounts,
environment, image and entrypoint as rendered, each on a node of its own (pod_runtime.py: a real
OVN chassis whose network namespace is the node's host network, the fake API server over TLS with
the chart's RBAC, and on the compute node a real Placement, the fake Nova and a VM):

- the compute pod (`okna-openkeel-node-agent`, privileged, Bidirectional /run/netns, both Secrets):
  the image starts, /healthz and /readyz answer 200 on the rendered probe port (the kubelet's part,
  played by the test on the node's loopback: the pod is hostNetwork), the VM's curl of
  http://169.254.169.254/openstack/latest/meta_data.json gets the fake Nova's answer for its
  instance, and the agent's ovnmeta- namespace reaches the host's /run/netns;
- the network-only pod (`okna-openkeel-node-agent-nocompute`, no capability, no privilege
  escalation, RuntimeDefault seccomp, no Secret, no /run/netns): ready, and it writes
  enable-chassis-as-gw into ovn-cms-options of its node's Open_vSwitch row;
- each agent stops on the kubelet's SIGTERM, well within the rendered grace, with status 0.

The image is the one packaging/build-image.sh builds, under its default name (the one the chart's
default image resolves to), loaded into the test's own podman store: the rendered image and
imagePullPolicy (IfNotPresent) are used as they are. ctest passes the archive deploy_image wrote
(OKNA_SHARED_IMAGE_ARCHIVE, fixture okna_image_archive); without it the test builds one.

What is changed in the rendered pod, and why (pod_runtime.ADAPTATIONS; nothing else is):
- DaemonSet -> Pod: its pod template as a Pod `<daemonset>-<node>` with spec.nodeName (podman
  kube play takes Pods and Deployments, not DaemonSets).
- Pod annotations longer than 63 characters dropped: the chart's checksum/config (podman 4.3 holds
  annotation values to the 63-character limit of label values).
- env NODE_NAME: the downward API's spec.nodeName becomes its value (podman 4.3 refuses that
  fieldPath).
- KUBERNETES_SERVICE_HOST/PORT added (the kubelet injects them): the fake API server on the
  node's loopback.
- The service account volume at /var/run/secrets/kubernetes.io/serviceaccount (token, ca.crt,
  namespace) added as a Secret volume (the admission plugin and the kubelet add it; podman has
  neither). The token is the chart's ServiceAccount's for the fake API server, which enforces the
  rendered ClusterRole/Role bindings.
- The projected Secret volumes become secret volumes (same Secret, items, defaultMode) with
  `optional: false` (podman 4.3 has no projected volumes, and panics on a secret volume without
  `optional`); podman's secrets are Secret YAML whose `data` holds the plain values (podman 4.3
  reads only `data`, writes its values without base64-decoding them, and ignores defaultMode).
- The ConfigMap mounted with subPath becomes a hostPath File of that key (podman 4.3 ignores
  subPath: it would mount the whole ConfigMap directory at agent.yaml).
- containers[].ports removed (podman 4.3 refuses port mappings with host networking; on a
  hostNetwork pod they are informational).
- liveness/readiness probes removed from what podman runs (podman 4.3 ignores readinessProbe and
  runs an httpGet liveness probe as curl inside the container, which has neither curl nor a shell,
  from systemd timers; PID 1 is not systemd): the test GETs the rendered path and port instead.
- hostNetwork is the node's namespace (podman runs under nsenter --net): the rendered fixed ports
  and the agent's veths stay off the machine's network and other tests'.
- terminationGracePeriodSeconds: applied by the test's `podman pod stop --time` (kube play ignores
  it).
Values rendered besides the defaults (operator settings, not adaptations): ovs.socketDir (the
node's chassis directory: its db.sock, sb.sock and ovs-vswitchd's pid file and control socket),
stateDir (a directory of the test), metadata.nova.host=127.0.0.1 (no cluster DNS, and podman 4.3
drops hostAliases on a hostNetwork pod).
The machine, not the pod (the store's containers.conf): runc (crun 1.8.1 refuses this machine's
hybrid cgroups), ulimits at the process's own hard limits (no CAP_SYS_RESOURCE here), and a store,
tmp and CNI directory of the test's own.

Root, podman, runc, catatonit, buildah and the OVN/OVS and Placement packages
(packaging/install-deps.sh). Under CI (env CI set) a missing piece fails the test, elsewhere it
skips. Every pod, image, secret, daemon and namespace it starts is removed, also on failure.

    sudo OKNA_AGENT_BIN=build/agent/openkeel-node-agent python3 -m unittest -v test_pod_runtime
"""
import json
import os
import sys
import time
import unittest

from chart_tools import AGENT
from pod_runtime import Cluster, log, missing_requirements, wait_for
from test_chart import matches

IN_CI = os.environ.get("CI") is not None


def proc_status(pid):
    with open("/proc/%d/status" % pid) as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)


def root_mount_options(pid):
    with open("/proc/%d/mountinfo" % pid) as f:
        for line in f:
            fields = line.split()
            if fields[4] == "/":
                return fields[5].split(",")
    raise AssertionError("no / in the mountinfo of pid %d" % pid)


class PodRuntimeTest(unittest.TestCase):
    cluster = None

    @classmethod
    def setUpClass(cls):
        missing = missing_requirements()
        if not os.access(AGENT, os.X_OK):
            missing.append("the agent binary " + AGENT)
        if missing:
            why = "missing: " + ", ".join(missing) + " (packaging/install-deps.sh installs them)"
            if IN_CI:
                raise AssertionError(why)
            raise unittest.SkipTest(why)
        archive = os.environ.get("OKNA_SHARED_IMAGE_ARCHIVE")
        if archive and not os.path.exists(archive):
            log("%s missing (deploy_image writes it): building the image here" % archive)
            archive = None
        t = time.monotonic()
        cls.cluster = Cluster(AGENT, image_archive=archive)
        try:
            cls.cluster.start()
            for node in cls.cluster.nodes:
                cls.cluster.play(node)
        except BaseException:
            cls.diagnostics()
            cls.cluster.stop()
            raise
        log("setup %.1f s: %s" % (time.monotonic() - t, ", ".join(
            "%s %.1f s" % kv for kv in cls.cluster.timings.items())))

    @classmethod
    def tearDownClass(cls):
        if cls.cluster:
            cls.cluster.stop()

    @classmethod
    def diagnostics(cls):
        c = cls.cluster
        if c is None or c.podman is None:
            return
        for node in c.pods:
            print("----- %s: podman logs (last 40 lines)" % node, file=sys.stderr)
            print("\n".join(c.agent_log(node).splitlines()[-40:]), file=sys.stderr)
        for n in c.nodes.values():
            for name, _, logf in n.procs:
                logf.seek(0)
                print("----- %s: %s (last 15 lines)\n%s" % (n.name, name, "".join(logf.readlines()[-15:])),
                      file=sys.stderr)

    def run(self, result=None):
        # Each failing test prints what the agents and the fixtures said.
        before = len(result.failures) + len(result.errors) if result else 0
        out = super().run(result)
        if result and len(result.failures) + len(result.errors) > before:
            self.diagnostics()
        return out

    def pid(self, node):
        state = self.cluster.podman.inspect(self.cluster.container(node))["State"]
        self.assertEqual(state["Status"], "running", state)
        return state["Pid"]

    def wait_probes(self, node, timeout=60):
        n, probes = self.cluster.nodes[node], self.cluster.probes[node]
        self.assertEqual(set(probes), {"liveness", "readiness"})

        def answered(path, port):
            # The pod's restartPolicy (Always) restarts an agent that exits: a crash loop fails
            # at once, with the agent's log, rather than at the timeout.
            restarts = self.cluster.podman.inspect(self.cluster.container(node)).get("RestartCount", 0)
            if restarts > 2:
                raise AssertionError("%s's agent restarted %d times:\n%s" % (node, restarts,
                                                                           self.cluster.agent_log(node)[-3000:]))
            return n.probe(path, port) == 200
        for kind in ("liveness", "readiness"):
            path, port = probes[kind]
            try:
                wait_for(lambda: answered(path, port), timeout, "%s probe GET %s:%d on %s" % (kind, path, port, node),
                         period=0.2)
            except AssertionError:
                detail = n.in_netns("curl", "-s", "-m", "3", "http://127.0.0.1:%d/readyz?verbose" % port,
                                    check=False).stdout
                raise AssertionError("%s probe of %s not 200 within %d s; /readyz?verbose:\n%s"
                                     % (kind, node, timeout, detail))

    def test_0_the_daemonsets_select_their_nodes(self):
        c = self.cluster
        for node, n in c.nodes.items():
            objects = c.rendered[node]
            for (kind, name), ds in objects.items():
                if kind == "DaemonSet":
                    want = (name == c.pods[node]["metadata"]["name"][:-len(node) - 1])
                    self.assertEqual(matches(ds, node, dict({"kubernetes.io/hostname": node}, **n.labels)), want,
                                     "%s on %s" % (name, node))

    def test_1_compute_pod_is_ready_and_serves_the_vm_through_run_netns(self):
        c = self.cluster
        node = c.COMPUTE
        n = c.nodes[node]
        self.wait_probes(node)
        status, body = wait_for(lambda: (lambda r: r if r[0] == 200 else None)(n.vm_get()), 60,
                                "the VM's metadata (200)", period=0.2)
        self.assertEqual(json.loads(body)["uuid"], n.vm["device_id"], body)
        # The agent made ovnmeta-<net> inside its mount namespace: the Bidirectional mount carried
        # it to the host's /run/netns (a namespace file, not just an empty mount point).
        meta = "/run/netns/ovnmeta-" + n.net_id
        self.assertTrue(os.path.exists(meta), meta)
        with open("/proc/self/mountinfo") as f:
            self.assertTrue(any(line.split()[4] == meta and " nsfs " in line for line in f),
                            "%s is not a namespace mount on the host" % meta)

    def test_2_compute_pod_runs_as_rendered(self):
        c = self.cluster
        node = c.COMPUTE
        info = c.podman.inspect(c.container(node))
        self.assertEqual(info["ImageName"], "docker.io/openkeel/openkeel-node-agent:0.1.0")
        self.assertEqual(info["Path"], "/usr/bin/openkeel-node-agent")  # the image's entrypoint
        self.assertEqual(info["Args"], ["--config", "/etc/openkeel-node-agent/agent.yaml"])
        self.assertTrue(info["HostConfig"]["Privileged"])
        self.assertEqual(info["HostConfig"]["Memory"], 256 * 1024 * 1024)
        self.assertIn("NODE_NAME=" + node, info["Config"]["Env"])
        st = proc_status(self.pid(node))
        self.assertEqual(st["CapEff"], proc_status(os.getpid())["CapBnd"])  # privileged: every capability
        self.assertEqual(st["NoNewPrivs"], "0")
        self.assertIn("ro", root_mount_options(self.pid(node)))           # readOnlyRootFilesystem
        self.assert_json_log(node)

    def test_3_network_only_pod_writes_the_chassis_config_with_no_capability(self):
        c = self.cluster
        node = c.GATEWAY
        n = c.nodes[node]
        self.wait_probes(node)
        cms = wait_for(lambda: "enable-chassis-as-gw" in n.ovs_external_id("ovn-cms-options").split(",") and
                       n.ovs_external_id("ovn-cms-options"), 30, "enable-chassis-as-gw in ovn-cms-options")
        log("gateway ovn-cms-options: " + cms)
        pid = self.pid(node)
        st = proc_status(pid)
        for cap in ("CapEff", "CapPrm", "CapInh", "CapBnd", "CapAmb"):
            self.assertEqual(int(st[cap], 16), 0, "%s %s" % (cap, st[cap]))
        self.assertEqual(st["NoNewPrivs"], "1")   # allowPrivilegeEscalation: false
        self.assertEqual(st["Seccomp"], "2")      # RuntimeDefault: a filter
        self.assertIn("ro", root_mount_options(pid))
        info = c.podman.inspect(c.container(node))
        self.assertFalse(info["HostConfig"]["Privileged"])
        # Its config, the OVS directory, the state directory and (added) the service account:
        # no Secret, no /run/netns.
        self.assertEqual({m["Destination"] for m in info["Mounts"]},
                         {"/etc/openkeel-node-agent/agent.yaml", n.chassis_dir, n.state_dir,
                          "/var/run/secrets/kubernetes.io/serviceaccount"})
        self.assert_json_log(node)

    def assert_json_log(self, node):
        lines = [line for line in self.cluster.agent_log(node).splitlines() if line.strip()]
        self.assertTrue(lines, "the agent logged nothing")
        for line in lines:
            json.loads(line)  # logging.format json, as rendered: every line an object

    def test_9_each_agent_stops_on_sigterm_within_its_grace(self):
        c = self.cluster
        for node, pod in c.pods.items():
            grace = pod["spec"]["terminationGracePeriodSeconds"]
            t = time.monotonic()
            state = c.stop_pod(node)
            took = time.monotonic() - t
            log("%s: pod stopped in %.2f s (grace %d s), exit %s" % (node, took, grace, state["ExitCode"]))
            self.assertEqual(state["ExitCode"], 0, state)
            self.assertLess(took, 30, "SIGTERM to stopped: %.1f s" % took)


if __name__ == "__main__":
    unittest.main()
