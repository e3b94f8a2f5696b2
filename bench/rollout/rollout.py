#!/usr/bin/python3
"""A DaemonSet rollout on one compute node, as the kubelet and the DaemonSet controller do it with
maxUnavailable 1 and maxSurge 0: the old pod is stopped (SIGTERM, its rendered grace), removed, the
new pod is started, and the node's VM is served again. The pods are the chart's compute pod under
podman kube play (tests/deploy/pod_runtime.py: the same node, adaptations and image as
tests/deploy/test_pod_runtime.py), on a node that already has its metadata namespace (made by the
first pod, kept on the host's /run/netns across restarts).

Two pollers run all along, each a fresh connection per attempt: the VM's
http://169.254.169.254/openstack/latest/meta_data.json every 50 ms (from the VM's namespace), and
the agent's /readyz every 20 ms (from the node's namespace). Per trial it prints and writes:

  stop        the `podman pod stop` command -> the old agent's exit (its State.FinishedAt)
  agent_stop  the old agent's own "signal 15" log line -> its "stopped" line
  replace     the old agent's exit -> the new container's State.StartedAt (pod rm, kube play:
              pod and infra container, the agent's container created and started)
  to_log      the new container started -> the agent's first log line (its own "ts")
  to_ready    the first log line -> the first 200 from /readyz
  to_vm       ready -> the VM's first 200 after the restart (negative: served before ready)
  outage      the VM's last 200 before its first failed attempt -> its next 200
  total       the stop command -> the VM's first 200 after the restart

  bench/rollout/run.sh [--trials 5] [--keep]     (as root; OKNA_AGENT_BIN, OKNA_IMAGE_ARCHIVE)
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "deploy"))

from pod_runtime import METADATA_URL, Cluster, log, wait_for  # noqa: E402

POLL = os.path.join(HERE, "poll.py")


def podman_time(s):
    """podman's RFC 3339 with nanoseconds -> epoch seconds."""
    s = s.rstrip("Z")
    base, _, frac = s.partition(".")
    tz = datetime.timezone.utc
    if "+" in frac:
        frac, _, off = frac.partition("+")
        assert off in ("00:00", ""), s
    t = datetime.datetime.strptime(base, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=tz).timestamp()
    return t + float("0." + (frac or "0"))


def agent_ts(line):
    return datetime.datetime.strptime(json.loads(line)["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def read_polls(path):
    out = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2:
                out.append((float(parts[0]), int(parts[1])))
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--keep", action="store_true")
    p.add_argument("--out", default="")
    a = p.parse_args()
    agent = os.environ.get("OKNA_AGENT_BIN", os.path.join(ROOT, "build", "agent", "openkeel-node-agent"))
    cluster = Cluster(agent, image_archive=os.environ.get("OKNA_IMAGE_ARCHIVE") or None, compute_only=True,
                      keep=a.keep)
    pollers = []
    rows = []
    try:
        cluster.start()
        node = cluster.COMPUTE
        n = cluster.nodes[node]
        path, port = cluster.probes[node]["readiness"]
        cluster.play(node)
        wait_for(lambda: n.vm_get()[0] == 200, 120, "the VM's first metadata answer", period=0.2)
        vm_polls = os.path.join(cluster.work, "vm-polls.txt")
        ready_polls = os.path.join(cluster.work, "ready-polls.txt")
        for ns, url, period, out in ((n.vm["netns"], METADATA_URL, 50, vm_polls),
                                     (n.netns, "http://127.0.0.1:%d%s" % (port, path), 20, ready_polls)):
            f = open(out, "w")
            pollers.append((subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, POLL, url, "--period-ms",
                                              str(period), "--timeout-ms", "1000"], stdout=f), f))
        time.sleep(2)
        pod_name = cluster.pods[node]["metadata"]["name"]
        grace = cluster.pods[node]["spec"]["terminationGracePeriodSeconds"]
        for trial in range(1, a.trials + 1):
            old = cluster.podman.inspect(cluster.container(node))
            t0 = time.time()
            cluster.podman("pod", "stop", "--time", str(grace), pod_name, timeout=grace + 60)
            t_stopped = time.time()
            old_state = cluster.podman.inspect(cluster.container(node))["State"]
            old_log = [line for line in cluster.agent_log(node).splitlines() if line.startswith("{")]
            cluster.podman("pod", "rm", "--force", pod_name, timeout=60)
            t_play = cluster.play(node)
            t_played = time.time()
            new = cluster.podman.inspect(cluster.container(node))
            assert new["Id"] != old["Id"]

            def vm_back():
                polls = read_polls(vm_polls)
                after = [t for t, s in polls if t > t0 and s == 200 and any(t1 > t0 and t1 < t and s1 != 200
                                                                            for t1, s1 in polls)]
                return after[0] if after else None
            t_vm = wait_for(vm_back, 120, "the VM served again (trial %d)" % trial, period=0.1)
            t_ready = wait_for(lambda: next((t for t, s in read_polls(ready_polls) if t > t_play and s == 200), None),
                               60, "/readyz 200 (trial %d)" % trial, period=0.1)
            new_log = [line for line in cluster.agent_log(node).splitlines() if line.startswith("{")]
            polls = read_polls(vm_polls)
            first_fail = next(t for t, s in polls if t > t0 and s != 200)
            last_ok = max(t for t, s in polls if t < first_fail and s == 200)
            fails = sum(1 for t, s in polls if last_ok < t < t_vm and s != 200)
            sig = next(agent_ts(line) for line in old_log if "stopping" in json.loads(line)["msg"])
            stopped = next(agent_ts(line) for line in reversed(old_log) if json.loads(line)["msg"] == "stopped")
            finished = podman_time(old_state["FinishedAt"])
            started = podman_time(new["State"]["StartedAt"])
            first = agent_ts(new_log[0])
            row = {"trial": trial, "stop": finished - t0, "stop_cmd": t_stopped - t0, "agent_stop": stopped - sig,
                   "replace": started - finished, "kube_play": t_played - t_play, "to_log": first - started,
                   "to_ready": t_ready - first, "to_vm": t_vm - t_ready, "outage": t_vm - last_ok,
                   "failed_polls": fails, "total": t_vm - t0, "exit": old_state["ExitCode"]}
            rows.append(row)
            log("trial %d: %s" % (trial, " ".join("%s=%.3f" % (k, v) if isinstance(v, float) else "%s=%s" % (k, v)
                                                  for k, v in row.items())))
            time.sleep(2)
    finally:
        for proc, f in pollers:
            proc.terminate()
            proc.wait(10)
            f.close()
        cluster.stop()
    keys = ["stop", "agent_stop", "replace", "to_log", "to_ready", "to_vm", "outage", "total"]
    lines = ["| measure (s) | median | min | max |", "|---|---|---|---|"]
    for k in keys:
        v = [r[k] for r in rows]
        lines.append("| %s | %.3f | %.3f | %.3f |" % (k, statistics.median(v), min(v), max(v)))
    v = [r["failed_polls"] for r in rows]
    lines.append("| failed 50 ms polls | %g | %d | %d |" % (statistics.median(v), min(v), max(v)))
    table = "\n".join(lines)
    print(table)
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"rows": rows, "table": table}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
