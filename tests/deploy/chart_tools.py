"""Shared by the chart tests: the real helm/kubectl (packaging/tools/install-tools.sh), rendering,
offline validation (validate_k8s.mjs) and the agent binary."""
import json
import os
import subprocess

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CHART = os.path.join(ROOT, "deploy", "helm", "openkeel-node-agent")
TOOLS = os.environ.get("OKNA_TOOLS_DIR", "/opt/openkeel-tools")
HELM = os.path.join(TOOLS, "bin", "helm")
KUBECTL = os.path.join(TOOLS, "bin", "kubectl")
AGENT = os.environ.get("OKNA_AGENT_BIN", os.path.join(ROOT, "build", "agent", "openkeel-node-agent"))
RELEASE, NAMESPACE = "okna", "openkeel"


def tools_missing():
    """Why the tools cannot run, or None. CI installs them (install-deps.sh): missing there is a failure."""
    for tool in (HELM, KUBECTL):
        if not os.access(tool, os.X_OK):
            return "%s is missing: run packaging/install-deps.sh" % tool
    return None


def run(cmd, check=True, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)
    if check and p.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return p


def helm_args(values=(), sets=()):
    args = []
    for v in values:
        args += ["-f", v]
    for s in sets:
        args += ["--set", s]
    return args


def render_text(values=(), sets=(), check=True):
    return run([HELM, "template", RELEASE, CHART, "--namespace", NAMESPACE] + helm_args(values, sets), check=check)


def render(values=(), sets=()):
    """The rendered objects, by kind: one object per kind, except the network-only agents' own
    (secretsOnComputeOnly: the nocompute DaemonSet, its ServiceAccount, ClusterRole and binding),
    which are keyed "<kind>/nocompute"."""
    docs = [d for d in yaml.safe_load_all(render_text(values, sets).stdout) if d]
    by_kind = {}
    for d in docs:
        key = d["kind"] + ("/nocompute" if d["metadata"]["name"].endswith("-nocompute") else "")
        assert key not in by_kind, "two objects of kind %s" % key
        by_kind[key] = d
    return by_kind


def validate_offline(objects):
    """Runs validate_k8s.mjs on the objects; returns (ok, output)."""
    env = dict(os.environ, OKNA_K8S_MODELS=os.path.join(TOOLS, "node_modules", "kubernetes-models"))
    p = subprocess.run(["node", os.path.join(HERE, "validate_k8s.mjs")], input=json.dumps(objects),
                       capture_output=True, text=True, timeout=120, env=env)
    return p.returncode == 0, p.stdout + p.stderr


def pod_spec(objs):
    return objs["DaemonSet"]["spec"]["template"]["spec"]


def agent_config(objs):
    return yaml.safe_load(objs["ConfigMap"]["data"]["agent.yaml"])
