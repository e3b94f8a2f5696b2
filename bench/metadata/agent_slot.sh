#!/usr/bin/env bash
# The real agent in run.sh's AGENT_CMD slot (and restart.sh's / scale.sh's): starts the project's
# fake kube-apiserver with a compute Node next to the agent (same network namespace), writes the
# agent's config from run.sh's OKOF_* variables, and execs the agent in the foreground.
#   sudo AGENT_CMD="bash bench/metadata/agent_slot.sh" bench/metadata/run.sh
# OKNA_AGENT_BIN: the binary (default build/agent/openkeel-node-agent). OKNA_METADATA_LIMITS: a
# metadata.limits flow mapping (e.g. "{maxConnectionsPerClient: 16, maxInFlightPerClient: 16}";
# default: the agent's). Placement is off: this measures the metadata path only.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
agent=${OKNA_AGENT_BIN:-$root/build/agent/openkeel-node-agent}
d=$OKOF_BENCH_DIR/agent-slot
mkdir -p "$d"
if [[ ! -s "$d/url" ]] || ! kill -0 "$(cat "$d/apiserver.pid" 2>/dev/null)" 2>/dev/null; then
  cat >"$d/node.yaml" <<YAML
apiVersion: v1
kind: Node
metadata:
  name: bench-hv
  uid: 0b5e1c9a-0000-4e0e-9d1b-00000000be01
  resourceVersion: "1"
  labels: {kubernetes.io/hostname: bench-hv, node-role.openkeel.io/compute: ""}
spec: {}
status:
  capacity: {cpu: "2", memory: 8Gi, pods: "110"}
  allocatable: {cpu: "2", memory: 8Gi, pods: "110"}
YAML
  rm -f "$d/url"
  # Outlives this agent process on purpose: a restarted agent (restart.sh) finds its Node again.
  setsid /usr/bin/python3 "$root/tests/fake_apiserver/fake_apiserver.py" --listen 127.0.0.1:0 \
    --tls-dir "$d/tls" --token admin=bench-admin --token node-agent=bench-agent:node-agents \
    --objects "$d/node.yaml" --ready-file "$d/url" >"$d/apiserver.log" 2>&1 &
  echo $! >"$d/apiserver.pid"
  for _ in $(seq 1 300); do [[ -s "$d/url" ]] && break; sleep 0.1; done # bounded readiness poll
  [[ -s "$d/url" ]] || { cat "$d/apiserver.log" >&2; exit 1; }
fi
cat >"$d/agent.yaml" <<YAML
logging: {level: ${OKNA_LOG_LEVEL:-warn}}
placement: {enabled: false}
ovs: {remote: "$OKOF_OVS_REMOTE", sbRemote: "$OKOF_SB_REMOTE", stateFile: ""}
metadata:
  sharedSecretFile: $OKOF_SHARED_SECRET_FILE
  nova: {host: ${OKOF_NOVA_HOST:-127.0.0.1}, port: $OKOF_NOVA_PORT}
${OKNA_METADATA_LIMITS:+  limits: $OKNA_METADATA_LIMITS}
YAML
exec "$agent" --config "$d/agent.yaml" --node-name bench-hv --kubeconfig "$d/tls/kubeconfig" \
  --context node-agent --health-listen "${OKNA_HEALTH_LISTEN:-127.0.0.1:0}" \
  --admin-listen "${OKNA_ADMIN_LISTEN:-127.0.0.1:0}"
