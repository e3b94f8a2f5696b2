#!/usr/bin/env bash
# All-in-one local sandbox: installs the Debian packages, builds the agent, starts on loopback the
# project's fake kube-apiserver with a sample node and its pods, a real Placement (Debian's
# placement-api, noauth, sqlite) and a real ovsdb-server with the Open_vSwitch schema, and runs the
# agent against them in the foreground (Ctrl-C stops everything and removes the temp dir).
#   NODE_FILE / PODS_FILE   the node and pods to serve (default: tests/data/lab-1.*)
#   HEALTH_LISTEN           the agent's health endpoint (default 127.0.0.1:19874)
#   SANDBOX_SECONDS         stop by itself after this many seconds (default: run until Ctrl-C)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
node_file=${NODE_FILE:-$root/tests/data/lab-1.node.yaml}
pods_file=${PODS_FILE:-$root/tests/data/lab-1.pods.json}
health=${HEALTH_LISTEN:-127.0.0.1:19874}
node_name=$(awk '/^metadata:/{m=1} m && /^  name:/{print $2; exit}' "$node_file" 2>/dev/null || true)
[[ -n "$node_name" ]] || node_name=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metadata"]["name"])' "$node_file")

bash packaging/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build --target openkeel-node-agent -j "$(nproc)"

work=$(mktemp -d /tmp/okna-sandbox.XXXXXX)
pids=()
cleanup() {
  [[ -f "$work/ovs/ovsdb-server.pid" ]] && kill "$(cat "$work/ovs/ovsdb-server.pid")" 2>/dev/null || true
  bash tests/fixtures/openstack/stop.sh "$work/placement" >/dev/null 2>&1 || true
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

echo "sandbox: fake kube-apiserver serving $node_file and $pods_file"
/usr/bin/python3 tests/fake_apiserver/fake_apiserver.py --listen 127.0.0.1:0 --tls-dir "$work/tls" \
  --token admin=sandbox-admin --token node-agent=sandbox-agent:node-agents \
  --objects "$node_file" --objects "$pods_file" --ready-file "$work/url" >"$work/apiserver.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do [[ -s "$work/url" ]] && break; sleep 0.1; done
[[ -s "$work/url" ]] || { cat "$work/apiserver.log"; exit 1; }

echo "sandbox: starting Placement (noauth) on loopback"
mkdir -p "$work/placement"
bash tests/fixtures/openstack/start-placement.sh "$work/placement" >"$work/placement.out" 2>&1 ||
  { cat "$work/placement.out"; exit 1; }
placement_url=$(cat "$work/placement/url")
echo "sandbox: starting ovsdb-server (Open_vSwitch schema) in $work/ovs"
mkdir -p "$work/ovs"
ovsdb-tool create "$work/ovs/conf.db" /usr/share/openvswitch/vswitch.ovsschema
ovsdb-server "$work/ovs/conf.db" --remote="punix:$work/ovs/db.sock" --unixctl="$work/ovs/ovsdb-server.ctl" \
  --pidfile="$work/ovs/ovsdb-server.pid" --log-file="$work/ovs/ovsdb-server.log" --detach --no-chdir
vsctl=(ovs-vsctl --db="unix:$work/ovs/db.sock" --no-wait)
"${vsctl[@]}" init
# What an operator or ovn-controller would have set already: the agent must keep it as it is.
"${vsctl[@]}" set Open_vSwitch . external_ids:system-id=lab-1-chassis \
  external_ids:ovn-cms-options=enable-chassis-as-extport-host -- --may-exist add-br br-int \
  -- set Bridge br-int datapath_type=netdev

cat >"$work/agent.yaml" <<YAML
ovs:
  remote: unix:$work/ovs/db.sock
placement:
  auth: {type: none}
  endpointOverride: $placement_url
  stateFile: $work/placement-state.json
  debounceSeconds: 5
YAML

cat <<INFO
sandbox: API server $(cat "$work/url")  (kubectl --kubeconfig $work/tls/kubeconfig get nodes)
sandbox: Placement $placement_url  (curl -H 'X-Auth-Token: admin' -H 'OpenStack-API-Version: placement 1.39' $placement_url/resource_providers)
sandbox: OVSDB unix:$work/ovs/db.sock  (ovs-vsctl --db=unix:$work/ovs/db.sock get Open_vSwitch . external_ids)
sandbox: agent health http://$health/readyz  /healthz  /metrics  /debug/plan
sandbox: try: kubectl --kubeconfig $work/tls/kubeconfig label node $node_name node-role.openkeel.io/containers=
INFO
agent=(build/agent/openkeel-node-agent --config "$work/agent.yaml" --node-name "$node_name" --kubeconfig "$work/tls/kubeconfig"
       --context node-agent --health-listen "$health")
if [[ -n "${SANDBOX_SECONDS:-}" ]]; then
  timeout --signal=TERM "$SANDBOX_SECONDS" "${agent[@]}" || [[ $? == 124 ]]
else
  "${agent[@]}"
fi
