"""The chart's DaemonSet pods under a real container runtime (podman 4.3 `kube play`, runc), each on a
"node" of its own: a real OVN chassis (tests/fixtures/ovn/chassis.sh) whose network namespace is the
node's host network, with the project's fake API server (TLS, bearer token, the chart's RBAC) and,
for a compute node, a real Placement and the fake Nova metadata API on that namespace's loopback.
Shared by tests/deploy/test_pod_runtime.py and bench/rollout/rollout.py.

What this module changes between the rendered DaemonSet and what podman runs is listed, with the
reason, in ADAPTATIONS (pod_from_daemonset applies them; nothing else is changed). The chart is
rendered with its defaults plus the values in node_values() (each a documented value an operator
sets: where OVS lives on the node, the state directory, Nova's metadata address).
"""
import copy
import json
import os
import re
import resource
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

from chart_tools import CHART, HELM, NAMESPACE, RELEASE, ROOT

CHASSIS = os.path.join(ROOT, "tests", "fixtures", "ovn", "chassis.sh")
FAKE_API = os.path.join(ROOT, "tests", "fake_apiserver", "fake_apiserver.py")
FAKE_NOVA = os.path.join(ROOT, "tests", "fixtures", "nova", "fake_nova.py")
START_PLACEMENT = os.path.join(ROOT, "tests", "fixtures", "openstack", "start-placement.sh")
STOP_OPENSTACK = os.path.join(ROOT, "tests", "fixtures", "openstack", "stop.sh")
MAKE_IMAGE = os.path.join(ROOT, "packaging", "build-image.sh")
COMPUTE_DS = RELEASE + "-openkeel-node-agent"
NOCOMPUTE_DS = COMPUTE_DS + "-nocompute"
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
METADATA_URL = "http://169.254.169.254/openstack/latest/meta_data.json"

# (what is changed in the rendered pod, why). The test's docstring repeats them.
ADAPTATIONS = [
    ("DaemonSet -> Pod: the DaemonSet's pod template becomes a Pod named <daemonset>-<node> with "
     "spec.nodeName set",
     "podman kube play takes Pods and Deployments, not DaemonSets; the controller and the scheduler "
     "would create that Pod"),
    ("pod annotations longer than 63 characters dropped (the chart's checksum/config)",
     "podman 4.3 applies the label value limit to annotations ('value length exceeds Kubernetetes "
     "max 63'); Kubernetes limits annotations only in total size. checksum/config rolls the pods on "
     "a config change, which a single kube play does not need"),
    ("env NODE_NAME: valueFrom.fieldRef spec.nodeName -> value <node>",
     "podman 4.3 refuses that fieldPath ('either not valid or not supported'); the kubelet fills in "
     "the same value"),
    ("env KUBERNETES_SERVICE_HOST=127.0.0.1, KUBERNETES_SERVICE_PORT=<fake API server port> added",
     "the kubelet injects them into every container; here the API server is the fake one on the "
     "node's loopback (TLS)"),
    ("volume kube-api-access (token, ca.crt, namespace) mounted read-only at " + SA_DIR,
     "the service account admission plugin and the kubelet add this projected volume; podman has "
     "neither: a Secret volume carries a bearer token the fake API server maps to the chart's "
     "ServiceAccount (whose rendered RBAC it enforces) and the fake's CA"),
    ("projected volumes of one Secret source -> secret volumes (same secret, items, defaultMode), "
     "with optional: false",
     "podman 4.3 supports no projected volume; its secret volume dereferences `optional` without a "
     "check (a panic when it is absent)"),
    ("Secrets given to podman as Secret YAML whose data values are the plain values",
     "podman 4.3 reads only `data` (stringData gives an empty volume) and writes its values as they "
     "are, without base64-decoding them; it also ignores defaultMode (files are 0644)"),
    ("configMap volume mounted with subPath -> hostPath File of that key's content",
     "podman 4.3 ignores subPath and would mount the whole ConfigMap directory at "
     "/etc/openkeel-node-agent/agent.yaml; a file bind mount is what the kubelet does for a subPath"),
    ("containers[].ports removed",
     "podman 4.3 refuses port mappings with host networking ('PortMappings can only be used with "
     "Bridge or slirp4netns'); on a hostNetwork pod a containerPort is informational"),
    ("livenessProbe and readinessProbe removed from what podman runs; the test probes instead",
     "podman 4.3 ignores readinessProbe and turns an httpGet liveness probe into a healthcheck "
     "that runs curl inside the container (the image has no curl, no shell) from systemd timers "
     "(PID 1 is not systemd here); the test does the kubelet's part: GET of the rendered path and "
     "port on the node's loopback"),
    ("hostNetwork is the node's network namespace (podman runs under nsenter --net of the "
     "chassis' namespace)",
     "a node of its own: the rendered fixed ports (19874, 19875) and the agent's veths in br-int "
     "stay off the machine's network and off other tests'"),
    ("terminationGracePeriodSeconds applied by the test (podman pod stop -t <grace>)",
     "podman 4.3 kube play ignores it (its default stop timeout is 10 s)"),
]
# What is not the pod but the machine (containers.conf of the test's own podman store).
RUNTIME_NOTES = [
    ("runc instead of crun (podman's default)",
     "crun 1.8.1 refuses this machine's hybrid cgroup layout ('cgroups in hybrid mode not "
     "supported, drop all controllers from cgroupv2': the cgroup2 mount has hugetlb)"),
    ("default_ulimits nofile and nproc = this process's limits",
     "the machine's processes lack CAP_SYS_RESOURCE: podman asks for nofile 1048576 (and runc "
     "sets podman's nproc) above the hard limit, and setrlimit fails with EPERM"),
    ("a store, tmp_dir and CNI config directory of the test's own",
     "nothing is left in /var/lib/containers, /run/libpod or /etc/cni/net.d"),
]


def log(msg):
    print("[pod_runtime %.3f] %s" % (time.time(), msg), file=sys.stderr, flush=True)


def wait_for(predicate, timeout, what, period=0.05):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %g s waiting for %s" % (timeout, what))
        time.sleep(period)


def sh(cmd, check=True, timeout=120, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return p


def missing_requirements():
    """What this machine lacks to run the pods (empty when nothing)."""
    missing = []
    if os.geteuid() != 0:
        missing.append("root (namespaces, podman as root)")
    for tool in ("podman", "runc", "catatonit", "conmon", "nsenter", "ip", "curl", "ovsdb-server",
                 "ovs-vswitchd", "ovn-northd", "ovn-controller", "uwsgi", "buildah", "openssl"):
        if shutil.which(tool) is None and not os.path.exists("/usr/sbin/" + tool) and \
                not os.path.exists("/usr/libexec/podman/" + tool):
            missing.append(tool)
    if not os.access(HELM, os.X_OK):
        missing.append(HELM)
    return missing


# --- rendering ------------------------------------------------------------------------------------

def node_values(ovs_dir, state_dir):
    """The values a node's render adds to the chart's defaults (each an operator's setting)."""
    return ["ovs.socketDir=" + ovs_dir,       # where db.sock (and ovs-vswitchd's pid/ctl) live
            "stateDir=" + state_dir,           # the agent's hostPath state directory
            # Nova's metadata Service name needs cluster DNS, and podman 4.3 drops hostAliases
            # on a hostNetwork pod: the fake Nova's address on the node's loopback.
            "metadata.nova.host=127.0.0.1"]


def render(values):
    args = [HELM, "template", RELEASE, CHART, "--namespace", NAMESPACE]
    for v in values:
        args += ["--set", v]
    docs = [d for d in yaml.safe_load_all(sh(args).stdout) if d]
    return {(d["kind"], d["metadata"]["name"]): d for d in docs}


def pod_from_daemonset(ds, node, objects, work, api_port, token_secret):
    """The Pod podman runs for DaemonSet `ds` on `node` (ADAPTATIONS, nothing else), and the
    kubelet's view of its probes {"liveness": (path, port), "readiness": (path, port)}."""
    tpl = copy.deepcopy(ds["spec"]["template"])
    name = "%s-%s" % (ds["metadata"]["name"], node)
    spec = tpl["spec"]
    spec["nodeName"] = node
    annotations = {k: v for k, v in tpl["metadata"].get("annotations", {}).items() if len(v) <= 63}
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": ds["metadata"]["namespace"],
                        "labels": tpl["metadata"].get("labels", {}), "annotations": annotations},
           "spec": spec}
    assert spec.get("automountServiceAccountToken", True), "the agent needs its token"
    probes = {}
    volumes = {v["name"]: v for v in spec["volumes"]}
    for c in spec["containers"]:
        for kind in ("liveness", "readiness"):
            probe = c.pop(kind + "Probe", None)
            if probe:
                probes[kind] = (probe["httpGet"]["path"], int(probe["httpGet"]["port"]))
        c.pop("startupProbe", None)
        c.pop("ports", None)
        for e in c.get("env", []):
            ref = e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
            if ref is not None:
                assert ref == "spec.nodeName", "a fieldRef this adaptation does not know: " + ref
                del e["valueFrom"]
                e["value"] = node
        c.setdefault("env", []).extend([{"name": "KUBERNETES_SERVICE_HOST", "value": "127.0.0.1"},
                                        {"name": "KUBERNETES_SERVICE_PORT", "value": str(api_port)}])
        for m in c.get("volumeMounts", []):
            v = volumes[m["name"]]
            if "subPath" in m:
                assert "configMap" in v, "subPath on a volume other than a ConfigMap: " + m["name"]
                cm = objects[("ConfigMap", v["configMap"]["name"])]
                path = os.path.join(work, "configmap", v["configMap"]["name"], m["subPath"])
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w") as f:
                    f.write(cm["data"][m["subPath"]])
                new = "%s-%s" % (m["name"], re.sub(r"[^a-z0-9-]", "-", m.pop("subPath").lower()))
                volumes[new] = {"name": new, "hostPath": {"path": path, "type": "File"}}
                m["name"] = new
        c["volumeMounts"].append({"name": "kube-api-access", "mountPath": SA_DIR, "readOnly": True})
    volumes["kube-api-access"] = {"name": "kube-api-access",
                                  "secret": {"secretName": token_secret, "defaultMode": 0o644, "optional": False}}
    used = {m["name"] for c in spec["containers"] for m in c.get("volumeMounts", [])}
    out = []
    for v in volumes.values():
        if v["name"] not in used:
            continue
        if "projected" in v:
            sources = v["projected"]["sources"]
            assert len(sources) == 1 and "secret" in sources[0], "projected volume %s: %s" % (v["name"], sources)
            src = sources[0]["secret"]
            v = {"name": v["name"], "secret": {"secretName": src["name"], "items": src.get("items", []),
                                                "defaultMode": v["projected"].get("defaultMode", 0o644),
                                                "optional": False}}
        elif "secret" in v:
            v["secret"].setdefault("optional", False)
        out.append(v)
    spec["volumes"] = out
    return pod, probes


def kube_objects_for_api(objects, nodes, pods):
    """What the node's fake API server holds: the node(s), the pod, and the chart's RBAC and
    ServiceAccount (enforced for the agent's token)."""
    keep = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
    items = [copy.deepcopy(o) for (kind, _), o in objects.items() if kind in keep]
    for o in items:  # helm template leaves the release namespace out of namespaced objects
        if o["kind"] == "ServiceAccount":
            o["metadata"].setdefault("namespace", NAMESPACE)
    return {"apiVersion": "v1", "kind": "List", "items": items + nodes + pods}


def node_object(name, labels, cpu="8", memory="16Gi"):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": "7d3c1a52-0000-4e2e-8000-%012x" % (hash(name) & 0xffffffffffff),
                         "labels": dict({"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}, **labels)},
            "spec": {},
            "status": {"capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
                       "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}}


# --- podman ---------------------------------------------------------------------------------------

class Podman:
    """podman with a store, containers.conf, tmp and CNI directories of its own under `work`."""

    def __init__(self, work):
        self.work = work
        for d in ("root", "run", "tmp", "cni"):
            os.makedirs(os.path.join(work, d), exist_ok=True)
        nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        # podman lowers its own nproc hard limit to 32768 when it is higher (runc then sets the
        # container's from podman's): ask for no more than podman has.
        nproc = min(resource.getrlimit(resource.RLIMIT_NPROC)[1], 32768)
        self.conf = os.path.join(work, "containers.conf")
        with open(self.conf, "w") as f:
            f.write('[containers]\ndefault_ulimits = ["nofile=%d:%d", "nproc=%d:%d"]\n'
                    '[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n'
                    'tmp_dir = "%s"\n[network]\nnetwork_config_dir = "%s"\n'
                    % (nofile, nofile, nproc, nproc, os.path.join(work, "tmp"), os.path.join(work, "cni")))
        self.env = dict(os.environ, CONTAINERS_CONF=self.conf)
        self.base = ["podman", "--root", os.path.join(work, "root"), "--runroot", os.path.join(work, "run")]

    def __call__(self, *args, netns=None, check=True, timeout=120):
        cmd = self.base + list(args)
        if netns:
            cmd = ["nsenter", "--net=/run/netns/" + netns] + cmd
        return sh(cmd, check=check, timeout=timeout, env=self.env)

    def secret(self, name, values):
        """A podman secret that a kube play secret volume reads: podman 4.3 takes the `data` of a
        Secret YAML and writes each value as it is (no base64 decoding, and stringData ignored)."""
        path = os.path.join(self.work, "secret-%s.yaml" % name)
        with open(path, "w") as f:
            yaml.safe_dump({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
                            "type": "Opaque", "data": values}, f)
        os.chmod(path, 0o600)
        self("secret", "rm", name, check=False)
        self("secret", "create", name, path)
        os.unlink(path)

    def play(self, pod, netns, path, log_path=None):
        with open(path, "w") as f:
            yaml.safe_dump(pod, f, sort_keys=False)
        extra = ["--log-opt", "path=" + log_path] if log_path else []
        return self("kube", "play", *extra, path, netns=netns, timeout=180)

    def inspect(self, name):
        return json.loads(self("inspect", name).stdout)[0]

    def cleanup(self):
        """Every pod, container, image, volume and secret of this store, then the store."""
        self("pod", "rm", "--all", "--force", "--time", "10", check=False, timeout=180)
        self("rm", "--all", "--force", "--time", "10", check=False, timeout=180)
        self("rmi", "--all", "--force", check=False, timeout=180)
        self("volume", "rm", "--all", "--force", check=False)
        self("secret", "rm", "--all", check=False)
        # The overlay driver may keep its home mounted: unmount whatever is left under work.
        with open("/proc/self/mountinfo") as f:
            mounts = [line.split()[4] for line in f]
        for m in sorted((m for m in mounts if m.startswith(self.work + "/")), key=len, reverse=True):
            subprocess.run(["umount", "-l", m], capture_output=True)


def build_image_archive(agent, work):
    """The image (packaging/build-image.sh, its default name: the chart's default image) as an
    oci-archive under work, from the binary `agent`."""
    archive = os.path.join(work, "image.oci.tar")
    store = os.path.join(work, "buildah")
    env = dict(os.environ, OKNA_BUILDAH_ROOT=store, OKNA_IMAGE_ARCHIVE=archive)
    env.pop("OKNA_IMAGE", None)
    try:
        sh(["bash", MAKE_IMAGE, "--binary", agent], env=env, timeout=600)
    finally:
        sh(["buildah", "--root", store + "/root", "--runroot", store + "/run", "--storage-driver", "vfs",
            "rmi", "--all", "--force"], check=False)
        shutil.rmtree(store, ignore_errors=True)
    return archive


# --- a node ---------------------------------------------------------------------------------------

class Node:
    """A node: a real OVN chassis whose namespace is the node's network, with the fake API server
    (and for compute: Placement, the fake Nova, one network and one VM) on its loopback."""

    def __init__(self, name, labels, work, compute):
        self.name, self.labels, self.compute = name, labels, compute
        self.work = work
        os.makedirs(work, exist_ok=True)
        self.chassis_dir = os.path.join(work, "ch")
        self.state_dir = os.path.join(work, "state")
        self.procs = []
        self.placement_dir = None
        self.netns = None
        self.vm = None
        self.net_id = None
        self.token = secrets.token_hex(16)

    def chassis(self, *args, check=True, timeout=180):
        return sh(["bash", CHASSIS] + list(args), check=check, timeout=timeout)

    def start_chassis(self):
        self.chassis("start", self.chassis_dir)
        self.netns = self.chassis("info", self.chassis_dir, "hv_netns").stdout.strip()
        assert self.netns, "the chassis has no namespace of its own"

    def in_netns(self, *cmd, check=True, timeout=60):
        return sh(["ip", "netns", "exec", self.netns] + list(cmd), check=check, timeout=timeout)

    def spawn(self, name, cmd):
        logf = open(os.path.join(self.work, name + ".log"), "w+")
        p = subprocess.Popen(["ip", "netns", "exec", self.netns] + cmd, stdout=logf, stderr=subprocess.STDOUT)
        self.procs.append((name, p, logf))
        return p, logf

    def start_placement_async(self):
        self.placement_dir = os.path.join(self.work, "placement")
        os.makedirs(self.placement_dir)
        return self.spawn("placement-start", ["bash", START_PLACEMENT, self.placement_dir])[0]

    def start_apiserver(self, objects_list, sa_user):
        objs = os.path.join(self.work, "objects.json")
        with open(objs, "w") as f:
            json.dump(objects_list, f)
        rbac = os.path.join(self.work, "rbac.json")
        with open(rbac, "w") as f:
            f.write("{}")  # no grant beyond the chart's own RBAC objects
        ready = os.path.join(self.work, "api-url")
        self.tls = os.path.join(self.work, "tls")
        p, logf = self.spawn("apiserver", [sys.executable, FAKE_API, "--listen", "127.0.0.1:0", "--tls-dir", self.tls,
                                           "--token", "%s=%s" % (sa_user, self.token), "--rbac", rbac,
                                           "--objects", objs, "--ready-file", ready])
        wait_for(lambda: os.path.exists(ready) or p.poll() is not None, 30, "the fake API server")
        if p.poll() is not None:
            logf.seek(0)
            raise AssertionError("the fake API server exited:\n" + logf.read())
        with open(ready) as f:
            self.api_port = int(f.read().strip().rsplit(":", 1)[1])
        with open(os.path.join(self.tls, "ca.crt")) as f:
            self.ca = f.read()

    def start_nova(self, port):
        self.secret_file = os.path.join(self.work, "nova-shared-secret")
        with open(self.secret_file, "w") as f:
            f.write(secrets.token_urlsafe(24))
        p, logf = self.spawn("nova", [sys.executable, FAKE_NOVA, "--port", str(port), "--secret-file", self.secret_file])

        def up():
            logf.seek(0)
            if p.poll() is not None:
                raise AssertionError("the fake Nova exited:\n" + logf.read())
            return "listening on port" in logf.read()
        wait_for(up, 30, "the fake Nova")

    def wait_placement(self, starter):
        try:
            starter.wait(120)
        except subprocess.TimeoutExpired:
            raise AssertionError("start-placement.sh did not finish within 120 s")
        if starter.returncode != 0:
            raise AssertionError("start-placement.sh failed:\n" + open(os.path.join(self.work, "placement-start.log")).read())
        with open(os.path.join(self.placement_dir, "url")) as f:
            return f.read().strip()

    def add_vm(self, cidr="10.61.0.0/24", ip="10.61.0.11", mac="fa:16:3e:61:00:11"):
        self.net_id = "0b5e1c9a-35a5-4e0e-9d1b-%012x" % (int(time.time() * 1000) & 0xffffffffffff)
        vm = "pod-" + secrets.token_hex(3)
        self.chassis("add-network", self.chassis_dir, self.net_id, cidr)
        self.chassis("add-vm", self.chassis_dir, self.net_id, vm, ip, mac)
        info = dict(line.split("=", 1) for line in
                    self.chassis("vm-info", self.chassis_dir, vm).stdout.splitlines() if "=" in line)
        self.vm = info
        return info

    def vm_get(self, url=METADATA_URL, max_time=3):
        """(status, body) of a curl from the VM's namespace, as cloud-init's first request."""
        p = sh(["ip", "netns", "exec", self.vm["netns"], "curl", "-s", "-m", str(max_time), "-o", "-",
                "-w", "\n%{http_code}", url], check=False, timeout=max_time + 10)
        body, _, code = p.stdout.rpartition("\n")
        return int(code or 0), body

    def probe(self, path, port):
        """The kubelet's httpGet from the node: the status code, 0 when nothing answers."""
        p = self.in_netns("curl", "-s", "-m", "3", "-o", "/dev/null", "-w", "%{http_code}",
                          "http://127.0.0.1:%d%s" % (port, path), check=False, timeout=15)
        return int(p.stdout or 0)

    def ovs_external_id(self, key):
        """external_ids:KEY of the chassis' Open_vSwitch row ("" when absent)."""
        p = sh(["ovs-vsctl", "--db=unix:%s/db.sock" % self.chassis_dir, "--timeout=10", "--if-exists", "get",
                "Open_vSwitch", ".", "external_ids:" + key])
        return p.stdout.strip().strip('"')

    def stop(self):
        for name, p, logf in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(5)
            logf.close()
        if self.placement_dir:
            sh(["bash", STOP_OPENSTACK, self.placement_dir], check=False)
        if os.path.isdir(self.chassis_dir):
            self.chassis("stop", self.chassis_dir, check=False)


class Cluster:
    """The test's nodes (a compute node and, unless compute_only, a network-only one) and podman.
    Everything it starts is recorded and stop() ends it, also after a failure in start()."""

    COMPUTE, GATEWAY = "okna-compute-1", "okna-gateway-1"

    def __init__(self, agent, image_archive=None, compute_only=False, keep=False):
        self.agent = agent
        self.work = tempfile.mkdtemp(prefix="okna-pod.")
        self.keep = keep
        self.image_archive = image_archive
        self.compute_only = compute_only
        self.podman = None
        self.nodes = {}
        self.pods = {}       # node name -> the Pod podman runs
        self.probes = {}     # node name -> {"liveness": (path, port), "readiness": (path, port)}
        self.rendered = {}   # node name -> the rendered objects {(kind, name): object}
        self.timings = {}

    def _timed(self, what, fn, *args):
        t = time.monotonic()
        out = fn(*args)
        self.timings[what] = time.monotonic() - t
        return out

    def start(self):
        self.podman = Podman(os.path.join(self.work, "podman"))
        compute = Node(self.COMPUTE, {"node-role.openkeel.io/compute": ""}, os.path.join(self.work, "c"), True)
        self.nodes[compute.name] = compute
        if not self.compute_only:
            gateway = Node(self.GATEWAY, {"node-role.openkeel.io/network": ""}, os.path.join(self.work, "g"), False)
            self.nodes[gateway.name] = gateway
        for n in self.nodes.values():
            self._timed("chassis " + n.name, n.start_chassis)
        placement = compute.start_placement_async()  # ~6 s: overlaps the rest
        if self.image_archive is None:
            self.image_archive = self._timed("image build", build_image_archive, self.agent, self.work)
        loaded = self._timed("image load", self.podman, "load", "-i", self.image_archive).stdout
        log("podman load: " + loaded.strip().splitlines()[-1])
        self._timed("vm", compute.add_vm)
        for n in self.nodes.values():
            values = node_values(n.chassis_dir, n.state_dir)
            objects = self.rendered[n.name] = render(values)
            ds = objects[("DaemonSet", COMPUTE_DS if n.compute else NOCOMPUTE_DS)]
            sa = ds["spec"]["template"]["spec"]["serviceAccountName"]
            # What the API server holds: the pod as the DaemonSet controller creates it.
            api_pod = {"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": "%s-%s" % (ds["metadata"]["name"], n.name), "namespace": NAMESPACE,
                                    "labels": ds["spec"]["template"]["metadata"]["labels"]},
                       "spec": dict(copy.deepcopy(ds["spec"]["template"]["spec"]), nodeName=n.name),
                       "status": {"phase": "Running"}}
            n.start_apiserver(kube_objects_for_api(objects, [node_object(n.name, n.labels)], [api_pod]),
                              "system:serviceaccount:%s:%s" % (NAMESPACE, sa))
            token_secret = "%s-kube-api-access" % n.name
            pod, probes = pod_from_daemonset(ds, n.name, objects, os.path.join(n.work, "pod"), n.api_port, token_secret)
            self.pods[n.name], self.probes[n.name] = pod, probes
            self.podman.secret(token_secret, {"token": n.token, "ca.crt": n.ca, "namespace": NAMESPACE})
            if n.compute:
                config = yaml.safe_load(objects[("ConfigMap", COMPUTE_DS)]["data"]["agent.yaml"])
                n.start_nova(config["metadata"]["nova"]["port"])
                with open(n.secret_file) as f:
                    secret = f.read()
                with open(os.path.join(CHART, "values.yaml")) as f:
                    values = yaml.safe_load(f)
                self.podman.secret(values["metadata"]["sharedSecret"]["name"],
                                   {values["metadata"]["sharedSecret"]["key"]: secret})
                url = self._timed("placement (after the rest)", n.wait_placement, placement)
                clouds = {"clouds": {config["placement"]["cloud"]: {
                    "auth_type": "none", "placement_endpoint_override": url}}}
                cs = values["openstackPlacement"]["cloudsSecret"]
                self.podman.secret(cs["name"], {cs["key"]: yaml.safe_dump(clouds)})
        return self

    def play(self, node, log_path=None):
        """podman kube play of the node's pod, in the node's network namespace (its container's
        log at log_path: kept after the pod is removed); returns when it started."""
        n = self.nodes[node]
        t = time.time()
        self.podman.play(self.pods[node], n.netns, os.path.join(n.work, "pod.yaml"), log_path)
        return t

    def container(self, node):
        return self.pods[node]["metadata"]["name"] + "-" + self.pods[node]["spec"]["containers"][0]["name"]

    def stop_pod(self, node):
        """What the kubelet does to a deleted pod: SIGTERM, the rendered grace, then SIGKILL."""
        grace = self.pods[node]["spec"].get("terminationGracePeriodSeconds", 30)
        name = self.pods[node]["metadata"]["name"]
        self.podman("pod", "stop", "--time", str(grace), name, timeout=grace + 60)
        state = self.podman.inspect(self.container(node))["State"]
        self.podman("pod", "rm", "--force", name, timeout=60)
        return state

    def agent_log(self, node):
        p = self.podman("logs", self.container(node), check=False)
        return p.stdout + p.stderr

    def stop(self):
        try:
            if self.podman:
                self.podman.cleanup()
        finally:
            for n in self.nodes.values():
                n.stop()
            if not self.keep:
                shutil.rmtree(self.work, ignore_errors=True)
            else:
                log("kept " + self.work)
