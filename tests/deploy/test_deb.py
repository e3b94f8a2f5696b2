"""The Debian package: built by CPack from the build tree, installed with `apt install ./*.deb`, its
systemd unit verified and its ExecStart command run once against the fake API server until /readyz
answers, then removed (conffiles kept) and purged (nothing left).

    OKNA_BUILD_DIR=build python3 -m unittest -v test_deb      (as root; installs on this machine)

The command is the unit's ExecStart with the unit's environment (Environment=, %H expanded), plus
NODE_NAME as /etc/default/openkeel-node-agent would set it (the fake knows node lab-1, not this
host) and `--health-listen 127.0.0.1:0 --admin-listen 127.0.0.1:0` so that it never collides with an
agent on ports 19874 and 19875.
"""
import glob
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

from chart_tools import ROOT, run

BUILD = os.environ.get("OKNA_BUILD_DIR", os.path.join(ROOT, "build"))
FAKE = os.path.join(ROOT, "tests", "fake_apiserver", "fake_apiserver.py")
UNIT = "/lib/systemd/system/openkeel-node-agent.service"
FILES = ["/usr/bin/openkeel-node-agent", "/etc/openkeel-node-agent/agent.yaml", "/etc/default/openkeel-node-agent",
         UNIT, "/usr/share/doc/openkeel-node-agent/copyright", "/usr/share/doc/openkeel-node-agent/changelog.gz",
         "/usr/share/man/man8/openkeel-node-agent.8.gz"]
STATE = "/var/lib/openkeel-node-agent"
APT = ["apt-get", "-y", "-q", "-o", "DPkg::Lock::Timeout=300", "--no-install-recommends"]


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.05)


def installed():
    p = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "openkeel-node-agent"], capture_output=True, text=True)
    return p.stdout.strip()


def unit_service_section(path):
    env, exec_start, env_files = {}, None, []
    for line in open(path):
        line = line.strip().replace("%H", socket.gethostname())
        if line.startswith("Environment="):
            k, _, v = line[len("Environment="):].partition("=")
            env[k] = v
        elif line.startswith("EnvironmentFile="):
            env_files.append(line[len("EnvironmentFile="):].lstrip("-"))
        elif line.startswith("ExecStart="):
            exec_start = shlex.split(line[len("ExecStart="):])
    return env, exec_start, env_files


# Options with which systemd gives the service a mount namespace of its own: the ovnmeta-*
# mounts under /run/netns would be invisible to the host and die with the service (issue 24).
PRIVATE_MOUNT_OPTIONS = (
    "ProtectSystem", "ProtectHome", "PrivateTmp", "PrivateDevices", "PrivateMounts", "ProtectKernelTunables",
    "ProtectKernelModules", "ProtectKernelLogs", "ProtectControlGroups", "ProtectProc", "ProcSubset",
    "ReadOnlyPaths", "ReadWritePaths", "InaccessiblePaths", "ExecPaths", "NoExecPaths", "TemporaryFileSystem",
    "BindPaths", "BindReadOnlyPaths", "RootDirectory", "RootImage", "MountAPIVFS", "PrivateNetwork",
    "NetworkNamespacePath", "DynamicUser", "ProtectHostname", "ProtectClock")


class TestUnitKeepsHostNamespaces(unittest.TestCase):
    def test_no_option_creates_a_private_mount_namespace(self):
        source = os.path.join(ROOT, "packaging", "deb", "openkeel-node-agent.service")
        with open(source) as f:
            keys = [line.split("=", 1)[0].strip() for line in f
                    if "=" in line and not line.lstrip().startswith("#")]
        self.assertEqual([k for k in keys if k in PRIVATE_MOUNT_OPTIONS], [])
        # The capabilities the agent uses, no more (port 80 in each namespace: NET_BIND_SERVICE).
        self.assertIn("CapabilityBoundingSet", keys)
        self.assertIn("NoNewPrivileges", keys)


class TestDebianPackage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            if os.environ.get("CI") is not None:
                raise AssertionError("CI runs as root")
            raise unittest.SkipTest("installing a package needs root")
        cls.tmp = tempfile.mkdtemp(prefix="okna-deb-")
        if installed().startswith("install ok") or "config-files" in installed():
            run(APT + ["purge", "openkeel-node-agent"])   # a leftover of an interrupted run
        run(["cpack", "-G", "DEB", "-B", cls.tmp], cwd=BUILD)
        debs = glob.glob(os.path.join(cls.tmp, "openkeel-node-agent_*_amd64.deb"))
        assert len(debs) == 1, debs
        cls.deb = debs[0]

    @classmethod
    def tearDownClass(cls):
        if installed():
            run(APT + ["purge", "openkeel-node-agent"], check=False)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_lintian_finds_no_error(self):
        # Issue 24, point 2: copyright, changelog, an extended description, a man page.
        if shutil.which("lintian") is None:
            if os.environ.get("CI") is not None:
                self.fail("lintian missing: packaging/install-deps.sh installs it")
            self.skipTest("lintian not installed")
        out = run(["lintian", "--tag-display-limit", "0", self.deb], check=False)
        errors = [line for line in (out.stdout + out.stderr).splitlines() if line.startswith("E:")]
        self.assertEqual(errors, [], out.stdout + out.stderr)

    def test_maintainer_scripts(self):
        scripts = run(["dpkg-deb", "-I", self.deb]).stdout
        for name in ("postinst", "prerm", "postrm"):
            self.assertRegex(scripts, r"\b%s\b" % name)
        ctl = os.path.join(self.tmp, "control")
        run(["dpkg-deb", "-e", self.deb, ctl])
        with open(os.path.join(ctl, "postinst")) as f:
            postinst = f.read()
        self.assertIn("daemon-reload", postinst)
        self.assertIn("try-restart openkeel-node-agent.service", postinst)   # on upgrade, if running
        with open(os.path.join(ctl, "prerm")) as f:
            self.assertIn("stop openkeel-node-agent.service", f.read())
        with open(os.path.join(ctl, "postrm")) as f:
            self.assertIn("rm -rf %s" % STATE, f.read())

    def test_install_run_remove_purge(self):
        info = run(["dpkg-deb", "-f", self.deb, "Depends"]).stdout
        for dep in ("libcurl4", "libyaml-cpp0.7", "libssl3", "ca-certificates"):
            self.assertIn(dep, info)
        self.assertEqual(run(["dpkg-deb", "--ctrl-tarfile", self.deb], check=False).returncode, 0)

        out = run(APT + ["install", self.deb]).stdout   # apt install ./openkeel-node-agent_*.deb
        self.assertEqual(installed(), "install ok installed", out)
        for f in FILES:
            self.assertTrue(os.path.exists(f), f)
        conffiles = run(["dpkg-query", "-W", "-f=${Conffiles}", "openkeel-node-agent"]).stdout
        self.assertIn("/etc/openkeel-node-agent/agent.yaml", conffiles)
        if shutil.which("systemd-analyze"):
            p = run(["systemd-analyze", "verify", UNIT], check=False)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertRegex(run(["/usr/bin/openkeel-node-agent", "--version"]).stdout, r"openkeel-node-agent \d")

        self.run_unit_command_once()

        run(APT + ["remove", "openkeel-node-agent"])
        self.assertEqual(installed(), "deinstall ok config-files")
        self.assertFalse(os.path.exists("/usr/bin/openkeel-node-agent"))
        self.assertFalse(os.path.exists(UNIT))
        self.assertTrue(os.path.exists("/etc/openkeel-node-agent/agent.yaml"))   # conffiles stay until purge
        os.makedirs(STATE, exist_ok=True)   # what a run leaves (the ownership record's copy, ...)
        with open(os.path.join(STATE, "ovs-ownership.json"), "w") as f:
            f.write("{}")
        run(APT + ["purge", "openkeel-node-agent"])
        self.assertEqual(installed(), "")
        for f in FILES + ["/etc/openkeel-node-agent", STATE]:
            self.assertFalse(os.path.exists(f), f)

    def run_unit_command_once(self):
        env, cmd, env_files = unit_service_section(UNIT)
        self.assertEqual(cmd[:3], ["/usr/bin/openkeel-node-agent", "--config", "/etc/openkeel-node-agent/agent.yaml"])
        self.assertEqual(env_files, ["/etc/default/openkeel-node-agent"])
        kubeconfig = env["KUBECONFIG"]
        self.assertEqual(kubeconfig, "/etc/openkeel-node-agent/kubeconfig")

        tls, ready = os.path.join(self.tmp, "tls"), os.path.join(self.tmp, "url")
        fake = subprocess.Popen([sys.executable, FAKE, "--listen", "127.0.0.1:0", "--tls-dir", tls,
                                 "--token", "node-agent=agent-token:node-agents",
                                 "--objects", os.path.join(ROOT, "tests", "data", "lab-1.node.yaml"),
                                 os.path.join(ROOT, "tests", "data", "lab-1.pods.json"), "--ready-file", ready],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(lambda: (fake.terminate(), fake.wait(10)))
        wait_for(lambda: os.path.exists(ready), 30, "the fake API server")
        # What an operator puts at the unit's KUBECONFIG path: the fake's kubeconfig, agent's context.
        with open(os.path.join(tls, "kubeconfig")) as f:
            text = f.read().replace("current-context: admin", "current-context: node-agent")
        with open(kubeconfig, "w") as f:
            f.write(text)
        # The operator's file, not the package's: removed here so that purge can remove the folder.
        self.addCleanup(lambda: os.path.exists(kubeconfig) and os.remove(kubeconfig))

        env = dict(env, NODE_NAME="lab-1", PATH="/usr/sbin:/usr/bin:/sbin:/bin")
        log = open(os.path.join(self.tmp, "agent.log"), "w+")
        agent = subprocess.Popen(cmd + ["--health-listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"], env=env,
                                 stdout=log, stderr=subprocess.STDOUT)
        try:
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

            def readyz():
                try:
                    with urllib.request.urlopen("http://127.0.0.1:%d/readyz?verbose" % port[0], timeout=5) as r:
                        return r.status, r.read().decode()
                except urllib.error.HTTPError as e:
                    return e.code, e.read().decode()
            # The default config enables OVS and Placement, absent here: /readyz answers, and says
            # the informers synced (the agent talks to the API server with the unit's kubeconfig).
            wait_for(lambda: "[+]node-informer ok" in readyz()[1], 30, "the node informer in /readyz")
            status, body = readyz()
            self.assertIn(status, (200, 503), body)
            self.assertIn("[+]pod-informer ok", body)
            with urllib.request.urlopen("http://127.0.0.1:%d/healthz" % port[0], timeout=5) as r:
                self.assertEqual(r.status, 200)
            self.report_usage(agent.pid)
            agent.send_signal(signal.SIGTERM)
            self.assertEqual(agent.wait(30), 0)
        finally:
            if agent.poll() is None:
                agent.kill()
                agent.wait()
            log.close()
            os.remove(kubeconfig)

    @staticmethod
    def report_usage(pid):
        """Memory and CPU of the idle agent (the chart's resource requests are based on these)."""
        status = dict(line.split(":", 1) for line in open("/proc/%d/status" % pid))
        fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        cpu = (int(fields[11]) + int(fields[12])) / ticks
        print("\nagent after start and sync: VmRSS %s, VmHWM %s, CPU %.2f s" % (
            status["VmRSS"].strip(), status["VmHWM"].strip(), cpu), file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
