#!/usr/bin/python3
"""A DaemonSet rollout on one compute node, as the kubelet and the DaemonSet controller do it with
maxUnavailable 1 and maxSurge 0: the old pod is stopped (SIGTERM, its rendered grace), removed, the
new pod is started, and the node's VM is served again. The pods are the chart's compute pod under
podman kube play (tests/deploy/pod_runtime.py: the same node, adaptations and image as
tests/deploy/test_pod_runtime.py), on a node that already has its metadata namespace (made by the
first pod, kept on the host's /run/netns across restarts).

Two pollers run all along, each a fresh connection per attempt: the VM's
http://169.254.169.254/openstack/latest/meta_data.json every 50 ms (from the VM's namespace), and
the agent's /readyz every 20 ms (from the node's namespace), each attempt given up after 250 ms (a
dropped SYN would otherwise hold the poller for the kernel's 1 s retransmission). Per trial it
prints and writes:

  stop        `podman pod rm --force --time <grace>` issued -> the old agent's container died
              (podman's event)
  agent_stop  the old agent's own "signal 15: stopping" log line -> its "stopped" line
  remove      the old container died -> `pod rm` returned (infra container, cleanup)
  play        `kube play` issued -> the new agent's container started (pod, infra container and
              the agent's container created and started)
  to_log      the new container started -> the agent's first log line (its own "ts")
  to_serving  the first log line -> the agent's "serving metadata" line for the VM's network (the
              namespace adopted as it was)
  to_ready    the first log line -> the first 200 from /readyz (after the first Placement push)
  to_vm       ready -> the VM's first 200 after the restart (negative: served before ready)
  outage      the VM's last 200 before its first failed attempt -> its next 200
  total       the stop issued -> the VM's first 200 after the restart
  failed_polls, timeouts   the VM's failed attempts in the outage, and those that got no answer
              at all within 250 ms (no RST: a SYN into nowhere)

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
    """[(start epoch, status, milliseconds, kind)] of a poll.py output."""
    out = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 4:
                out.append((float(parts[0]), int(parts[1]), float(parts[2]), parts[3]))
    return out


def died_at(podman, container_id, since):
    """When podman saw the container die (its event, nanoseconds)."""
    out = podman("events", "--stream=false", "--since", str(int(since) - 1), "--filter", "event=died",
                 "--filter", "container=" + container_id, "--format", "json").stdout
    times = [podman_time(json.loads(line)["Time"]) for line in out.splitlines() if line.strip()]
    assert times, "no died event for " + container_id
    return times[-1]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--keep", action="store_true")
    p.add_argument("--out", default="")
    p.add_argument("--poll-timeout-ms", type=int, default=250)
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
        logs = os.path.join(cluster.work, "agent-logs")
        os.makedirs(logs)
        cluster.play(node, os.path.join(logs, "trial-0.log"))
        wait_for(lambda: n.vm_get()[0] == 200, 120, "the VM's first metadata answer", period=0.2)
        vm_polls = os.path.join(cluster.work, "vm-polls.txt")
        ready_polls = os.path.join(cluster.work, "ready-polls.txt")
        for ns, url, period, out in ((n.vm["netns"], METADATA_URL, 50, vm_polls),
                                     (n.netns, "http://127.0.0.1:%d%s" % (port, path), 20, ready_polls)):
            f = open(out, "w")
            pollers.append((subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, POLL, url, "--period-ms",
                                              str(period), "--timeout-ms", str(a.poll_timeout_ms)], stdout=f), f))
        time.sleep(2)
        pod_name = cluster.pods[node]["metadata"]["name"]
        grace = cluster.pods[node]["spec"]["terminationGracePeriodSeconds"]
        for trial in range(1, a.trials + 1):
            old = cluster.podman.inspect(cluster.container(node))
            old_log = os.path.join(logs, "trial-%d.log" % (trial - 1))
            t0 = time.time()
            # The kubelet's part for a deleted pod: SIGTERM, the grace, the sandbox removed; then
            # the controller's new pod, started by the kubelet (here kube play), its log kept.
            cluster.podman("pod", "rm", "--force", "--time", str(grace), pod_name, timeout=grace + 60)
            t_removed = time.time()
            new_log = os.path.join(logs, "trial-%d.log" % trial)
            t_play = cluster.play(node, new_log)
            t_played = time.time()

            def vm_back():
                polls = read_polls(vm_polls)
                failed = False
                for t, status, _, _ in polls:
                    if t <= t0:
                        continue
                    if status != 200:
                        failed = True
                    elif failed:
                        return t + 0.0
                return None
            t_vm = wait_for(vm_back, 120, "the VM served again (trial %d)" % trial, period=0.1)
            t_ready = wait_for(lambda: next((t for t, st, _, _ in read_polls(ready_polls) if t > t_play and st == 200),
                                            None), 60, "/readyz 200 (trial %d)" % trial, period=0.1)
            new = cluster.podman.inspect(cluster.container(node))
            assert new["Id"] != old["Id"]
            polls = read_polls(vm_polls)
            first_fail = next(t for t, st, _, _ in polls if t > t0 and st != 200)
            last_ok = max(t for t, st, _, _ in polls if t < first_fail and st == 200)
            outage = [(st, kind) for t, st, _, kind in polls if last_ok < t < t_vm]
            old_lines = [line.split(" ", 3)[3] for line in open(old_log) if " {" in line]
            new_lines = [line.split(" ", 3)[3] for line in open(new_log) if " {" in line]
            sig = next(agent_ts(line) for line in old_lines if "stopping" in json.loads(line)["msg"])
            stopped = next(agent_ts(line) for line in reversed(old_lines) if json.loads(line)["msg"] == "stopped")
            finished = died_at(cluster.podman, old["Id"], t0)
            started = podman_time(new["State"]["StartedAt"])
            first = agent_ts(new_lines[0])
            serving = next(agent_ts(line) for line in new_lines if "serving metadata" in json.loads(line)["msg"])
            row = {"trial": trial, "stop": finished - t0, "agent_stop": stopped - sig, "remove": t_removed - finished,
                   "play": started - t_play, "kube_play_cmd": t_played - t_play, "to_log": first - started,
                   "to_serving": serving - first, "to_ready": t_ready - first, "to_vm": t_vm - t_ready, "outage": t_vm - last_ok,
                   "failed_polls": len(outage), "timeouts": sum(1 for _, kind in outage if kind == "timeout"),
                   "total": t_vm - t0}
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
    keys = ["stop", "agent_stop", "remove", "play", "to_log", "to_serving", "to_ready", "to_vm", "outage", "total"]
    lines = ["| measure (s) | median | min | max |", "|---|---|---|---|"]
    for k in keys:
        v = [r[k] for r in rows]
        lines.append("| %s | %.3f | %.3f | %.3f |" % (k, statistics.median(v), min(v), max(v)))
    for k in ("failed_polls", "timeouts"):
        v = [r[k] for r in rows]
        lines.append("| %s | %g | %d | %d |" % (k, statistics.median(v), min(v), max(v)))
    table = "\n".join(lines)
    print(table)
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"rows": rows, "table": table}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
