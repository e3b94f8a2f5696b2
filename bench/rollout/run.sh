#!/usr/bin/env bash
# A DaemonSet rollout of the chart's compute pod under podman on a node with an existing metadata
# namespace: old pod stopped (SIGTERM, its grace) -> new pod started -> the VM served again, with
# the breakdown of where the time goes (rollout.py's docstring; figures in RESULTS.md).
#   sudo bash bench/rollout/run.sh [--trials 5] [--keep] [--out FILE.json]
# Environment: OKNA_AGENT_BIN (default build/agent/openkeel-node-agent), OKNA_IMAGE_ARCHIVE (an
# oci-archive of the image; default: packaging/build-image.sh builds one from the binary).
# Needs what tests/deploy/test_pod_runtime.py needs (packaging/install-deps.sh). Do not run it
# beside the tests of the OVN chassis fixture: its agent prunes ovnmeta- namespaces it does not
# serve.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
[[ $(id -u) == 0 ]] || { echo "run.sh: root only (namespaces, podman)" >&2; exit 1; }
export OKNA_AGENT_BIN=${OKNA_AGENT_BIN:-$root/build/agent/openkeel-node-agent}
exec /usr/bin/python3 "$root/bench/rollout/rollout.py" "$@"
