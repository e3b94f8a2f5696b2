"""The image's runtime tree (packaging/make-runtime-tree.sh) from the already-built binary: every
library the binary loads is in it, the agent runs inside it (chroot): --version, --dry-run, and
ready against the fake API server over TLS; then the OCI image built from it with buildah.

    OKNA_AGENT_BIN=build/agent/openkeel-node-agent python3 -m unittest -v test_image   (as root)
"""
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

from chart_tools import AGENT, ROOT, run

MAKE_TREE = os.path.join(ROOT, "packaging", "make-runtime-tree.sh")
FAKE = os.path.join(ROOT, "tests", "fake_apiserver", "fake_apiserver.py")
IN_CI = os.environ.get("CI") is not None


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.05)


def sonames(ldd_output):
    return {line.split()[0] for line in ldd_output.splitlines()
            if "=>" in line or line.strip().startswith("/")} - {"linux-vdso.so.1"}


@unittest.skipUnless(os.access(AGENT, os.X_OK), "agent binary not built (%s)" % AGENT)
class TestRuntimeTree(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("chroot needs root") if not IN_CI else AssertionError("CI runs as root")
        cls.tmp = tempfile.mkdtemp(prefix="okna-image-")
        cls.tree = os.path.join(cls.tmp, "rootfs")
        cls.build_out = run(["bash", MAKE_TREE, AGENT, cls.tree]).stdout

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def chroot(self, *args, check=True, **kw):
        return run(["chroot", self.tree] + list(args), check=check, **kw)

    def test_no_shell_only_the_agent_its_libraries_and_certificates(self):
        self.assertEqual(os.listdir(os.path.join(self.tree, "usr", "bin")), ["openkeel-node-agent"])
        for shell in ("bin/sh", "usr/bin/sh", "bin/bash", "usr/bin/dpkg", "usr/bin/apt"):
            self.assertFalse(os.path.lexists(os.path.join(self.tree, shell)), shell)
        self.assertGreater(os.path.getsize(os.path.join(self.tree, "etc/ssl/certs/ca-certificates.crt")), 1000)
        for d in ("run/netns", "var/run/openvswitch", "var/lib/openkeel-node-agent", "etc/openkeel-node-agent"):
            self.assertTrue(os.path.isdir(os.path.join(self.tree, d)), d)
        total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(self.tree) for f in fs
                    if not os.path.islink(os.path.join(d, f)))
        print("\nruntime tree: %.1f MB" % (total / 1e6), file=sys.stderr)

    def test_every_library_the_binary_loads_is_in_the_tree(self):
        host = sonames(run(["ldd", AGENT]).stdout)
        inside = self.chroot("/lib64/ld-linux-x86-64.so.2", "--list", "/usr/bin/openkeel-node-agent").stdout
        self.assertNotIn("not found", inside)
        self.assertEqual(sonames(inside), host)
        for line in inside.splitlines():
            m = re.search(r"=> (/\S+)", line)
            if m:
                self.assertTrue(os.path.exists(self.tree + m.group(1)), m.group(1))

    def test_version_runs_inside(self):
        self.assertRegex(self.chroot("/usr/bin/openkeel-node-agent", "--version").stdout,
                         r"^openkeel-node-agent \d+\.\d+\.\d+")

    def test_dry_run_runs_inside(self):
        shutil.copy(os.path.join(ROOT, "tests", "data", "lab-1.node.yaml"), os.path.join(self.tree, "tmp"))
        out = self.chroot("/usr/bin/openkeel-node-agent", "--dry-run", "--node-file", "/tmp/lab-1.node.yaml",
                          "--output", "json").stdout
        self.assertIn("compute", json.loads(out)["roles"])

    def test_agent_ready_inside_against_the_fake_api_server_over_tls(self):
        tls = os.path.join(self.tmp, "tls")
        ready = os.path.join(self.tmp, "url")
        fake = subprocess.Popen([sys.executable, FAKE, "--listen", "127.0.0.1:0", "--tls-dir", tls,
                                 "--token", "node-agent=agent-token:node-agents",
                                 "--objects", os.path.join(ROOT, "tests", "data", "lab-1.node.yaml"),
                                 "--ready-file", ready], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(lambda: (fake.terminate(), fake.wait(10)))
        wait_for(lambda: os.path.exists(ready), 30, "the fake API server")
        with open(ready) as f:
            url = f.read().strip()
        with open(os.path.join(tls, "ca.crt"), "rb") as f:
            ca = base64.b64encode(f.read()).decode()
        with open(os.path.join(self.tree, "tmp", "kubeconfig"), "w") as f:
            json.dump({"apiVersion": "v1", "kind": "Config", "current-context": "a",
                       "clusters": [{"name": "c", "cluster": {"server": url, "certificate-authority-data": ca}}],
                       "users": [{"name": "u", "user": {"token": "agent-token"}}],
                       "contexts": [{"name": "a", "context": {"cluster": "c", "user": "u"}}]}, f)
        with open(os.path.join(self.tree, "tmp", "agent.yaml"), "w") as f:
            f.write("placement: {enabled: false}   # no Keystone here; the rest is the default\n")
        log_path = os.path.join(self.tmp, "agent.log")
        log = open(log_path, "w+")
        agent = subprocess.Popen(["chroot", self.tree, "/usr/bin/openkeel-node-agent", "--config", "/tmp/agent.yaml", "--kubeconfig",
                                  "/tmp/kubeconfig", "--node-name", "lab-1", "--health-listen", "127.0.0.1:0",
                                  "--admin-listen", "127.0.0.1:0"],
                                 stdout=log, stderr=subprocess.STDOUT)
        self.addCleanup(lambda: (agent.terminate(), agent.wait(10), log.close()))
        port = []

        def listening():
            log.seek(0)
            m = re.search(r"serving /healthz .* on 127\.0\.0\.1:(\d+)", log.read())
            port.extend([int(m.group(1))] if m else [])
            if agent.poll() is not None:
                log.seek(0)
                raise AssertionError("agent exited:\n" + log.read())
            return bool(port)
        wait_for(listening, 30, "the agent's health listener")

        def ready_200():
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/readyz" % port[0], timeout=5) as r:
                    return r.status == 200
            except urllib.error.HTTPError:
                return False
        try:
            wait_for(ready_200, 30, "/readyz 200 from the agent in the runtime tree")
        except AssertionError:
            log.seek(0)
            raise AssertionError("agent in the runtime tree not ready:\n" + log.read()[-3000:])

    def test_oci_image_built_from_the_tree(self):
        if shutil.which("buildah") is None:
            if IN_CI:
                self.fail("buildah missing: packaging/install-deps.sh installs it")
            self.skipTest("buildah not installed")
        store = os.path.join(self.tmp, "buildah")
        image = "localhost/openkeel/openkeel-node-agent:ci"
        env = dict(os.environ, OKNA_BUILDAH_ROOT=store, OKNA_IMAGE=image)
        out = run(["bash", os.path.join(ROOT, "packaging", "build-image.sh"), "--binary", AGENT], env=env).stdout
        bh = ["buildah", "--root", store + "/root", "--runroot", store + "/run", "--storage-driver", "vfs"]
        self.addCleanup(lambda: run(bh + ["rmi", "--all", "--force"], check=False))
        config = json.loads(run(bh + ["inspect", "--type", "image", image]).stdout)["OCIv1"]["config"]
        self.assertEqual(config["Entrypoint"], ["/usr/bin/openkeel-node-agent"])
        self.assertEqual(config["Cmd"], ["--config", "/etc/openkeel-node-agent/agent.yaml"])
        ctr = run(bh + ["from", image]).stdout.strip()
        self.addCleanup(lambda: run(bh + ["rm", ctr], check=False))
        mnt = run(bh + ["mount", ctr]).stdout.strip()
        version = run(["chroot", mnt, "/usr/bin/openkeel-node-agent", "--version"]).stdout
        self.assertTrue(version.startswith("openkeel-node-agent "))
        run(bh + ["umount", ctr])
        print("\nimage: %s" % out.strip().splitlines()[-1], file=sys.stderr)

    def test_default_name_is_the_charts_and_builds_are_reproducible(self):
        # Issue 24, point 9: two builds of the same binary give the same image id, the image says
        # what it is (OCI labels), and its default name is what the chart's default
        # image.repository resolves to, so an imported image is found (no ImagePullBackOff).
        if shutil.which("buildah") is None:
            if IN_CI:
                self.fail("buildah missing: packaging/install-deps.sh installs it")
            self.skipTest("buildah not installed")
        store = os.path.join(self.tmp, "buildah-repro")
        env = dict(os.environ, OKNA_BUILDAH_ROOT=store)
        env.pop("OKNA_IMAGE", None)
        bh = ["buildah", "--root", store + "/root", "--runroot", store + "/run", "--storage-driver", "vfs"]
        self.addCleanup(lambda: run(bh + ["rmi", "--all", "--force"], check=False))
        build = ["bash", os.path.join(ROOT, "packaging", "build-image.sh"), "--binary", AGENT]
        run(build, env=env)
        chart = os.path.join(ROOT, "deploy", "helm", "openkeel-node-agent")
        with open(os.path.join(chart, "Chart.yaml")) as f:
            app_version = re.search(r'^appVersion: "?([^"\n]+)"?', f.read(), re.M).group(1)
        with open(os.path.join(chart, "values.yaml")) as f:
            repository = re.search(r"^  repository: (\S+)", f.read(), re.M).group(1)
        # A name without a registry is docker.io's (and library/ for a single component).
        expected = "docker.io/%s:%s" % (repository, app_version)
        first = json.loads(run(bh + ["inspect", "--type", "image", expected]).stdout)
        run(bh + ["rmi", "--all", "--force"])
        # The second build also writes the image as an oci-archive where deploy_pod_runtime (the
        # chart's pods under podman, test_pod_runtime.py) loads it: ctest's fixture
        # okna_image_archive, so that CI builds the image once.
        shared = os.environ.get("OKNA_SHARED_IMAGE_ARCHIVE")
        if shared:
            os.makedirs(os.path.dirname(shared), exist_ok=True)
            if os.path.exists(shared):
                os.unlink(shared)
        run(build, env=dict(env, OKNA_IMAGE_ARCHIVE=shared) if shared else env)
        second = json.loads(run(bh + ["inspect", "--type", "image", expected]).stdout)
        self.assertEqual(first["FromImageID"], second["FromImageID"])
        labels = second["OCIv1"]["config"]["Labels"]
        self.assertEqual(labels["org.opencontainers.image.version"], app_version)
        self.assertRegex(labels["org.opencontainers.image.revision"], r"^([0-9a-f]{40}|unknown)$")
        self.assertIn("org.opencontainers.image.source", labels)


if __name__ == "__main__":
    unittest.main()
