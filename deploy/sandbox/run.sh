#!/usr/bin/env bash
# All-in-one local sandbox: installs the Debian packages, builds the agent, starts on loopback the
# project's fake kube-apiserver with a sample node and its pods, a real Placement (Debian's
# placement-api, noauth, sqlite), a real OVN chassis (tests/fixtures/ovn/chassis.sh: ovsdb-server,
# ovs-vswitchd with the userspace datapath, OVN NB/SB, northd, ovn-controller) with one network
# written as Neutron writes it and one "VM" namespace bound to it, and a fake Nova metadata API that
# checks the signature as Nova does; then runs the agent against them in the foreground (Ctrl-C
# stops everything, removes every namespace and the temp dir). Root only.
#   NODE_FILE / PODS_FILE   the node and pods to serve (default: tests/data/lab-1.*)
#   HEALTH_LISTEN           the agent's health endpoint (default 127.0.0.1:19874)
#   ADMIN_LISTEN            its /metrics and /debug/plan (default 127.0.0.1:19875)
#   SANDBOX_SECONDS         stop by itself after this many seconds (default: run until Ctrl-C)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
node_file=${NODE_FILE:-$root/tests/data/lab-1.node.yaml}
pods_file=${PODS_FILE:-$root/tests/data/lab-1.pods.json}
health=${HEALTH_LISTEN:-127.0.0.1:19874}
admin=${ADMIN_LISTEN:-127.0.0.1:19875}
net_id=${NET_ID:-0b5e1c9a-5a4d-4e0e-9d1b-5a4db0c5e001}
node_name=$(awk '/^metadata:/{m=1} m && /^  name:/{print $2; exit}' "$node_file" 2>/dev/null || true)
[[ -n "$node_name" ]] || node_name=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metadata"]["name"])' "$node_file")

bash packaging/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build --target openkeel-node-agent -j "$(nproc)"

work=$(mktemp -d /tmp/okna-sandbox.XXXXXX)
pids=()
# The chassis in this network namespace (the agent reaches the API server, Placement and Nova on
# 127.0.0.1 and plugs its veths where ovs-vswitchd runs). Its br-int is a tap of this namespace
# while the sandbox runs: do not run it on a host whose own OVS has a br-int.
export OKOF_CHASSIS_NETNS=host OKOF_CHASSIS_NAME=${CHASSIS_NAME:-okna-sandbox-chassis}
chassis=(bash tests/fixtures/ovn/chassis.sh)
cleanup() {
  "${chassis[@]}" stop "$work/chassis" >/dev/null 2>&1 || true
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
echo "sandbox: starting a real OVN chassis in $work/chassis (ovs-vswitchd userspace, OVN NB/SB, northd, ovn-controller)"
"${chassis[@]}" start "$work/chassis"
ovs_remote=$("${chassis[@]}" info "$work/chassis" ovs_remote)
# What an operator would have set already: the agent must keep it as it is.
ovs-vsctl --db="$ovs_remote" set Open_vSwitch . external_ids:ovn-cms-options=enable-chassis-as-extport-host
echo "sandbox: network $net_id (10.0.0.0/24, metadata port 10.0.0.2) and VM okof-sandbox-vm1 (10.0.0.11) bound here"
"${chassis[@]}" add-network "$work/chassis" "$net_id" 10.0.0.0/24 sandbox-net
"${chassis[@]}" add-vm "$work/chassis" "$net_id" sandbox-vm1 10.0.0.11 fa:16:3e:5a:00:11
instance=$("${chassis[@]}" vm-info "$work/chassis" sandbox-vm1 device_id)

echo "sandbox: fake Nova metadata API (checks X-Instance-ID-Signature as Nova does)"
head -c 24 /dev/urandom | base64 >"$work/shared-secret"
/usr/bin/python3 tests/fixtures/nova/fake_nova.py --secret-file "$work/shared-secret" >"$work/nova.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do grep -q "listening on port" "$work/nova.log" && break; sleep 0.1; done
nova_port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$work/nova.log" | head -n1)
[[ -n "$nova_port" ]] || { cat "$work/nova.log"; exit 1; }

cat >"$work/agent.yaml" <<YAML
ovs:
  remote: $ovs_remote
metadata:
  sharedSecretFile: $work/shared-secret
  nova: {host: 127.0.0.1, port: $nova_port}
placement:
  auth: {type: none}
  endpointOverride: $placement_url
  stateFile: $work/placement-state.json
  debounceSeconds: 5
  # No Nova compute API here (tests/fixtures/nova/start-nova-api.sh runs one for ZonesIT): the
  # zone's aggregate is not managed in the sandbox.
  availabilityZones: {enabled: false}
YAML

cat <<INFO
sandbox: API server $(cat "$work/url")  (kubectl --kubeconfig $work/tls/kubeconfig get nodes)
sandbox: Placement $placement_url  (curl -H 'X-Auth-Token: admin' -H 'OpenStack-API-Version: placement 1.39' $placement_url/resource_providers)
sandbox: OVSDB $ovs_remote  (ovs-vsctl --db=$ovs_remote get Open_vSwitch . external_ids)
sandbox: metadata, as the VM sees it (instance $instance):
           sudo ip netns exec okof-sandbox-vm1 curl http://169.254.169.254/openstack/latest/meta_data.json
         the agent's namespace: sudo ip netns exec ovnmeta-$net_id ip addr
sandbox: agent health http://$health/readyz  /healthz;  admin http://$admin/metrics  /debug/plan
sandbox: try: kubectl --kubeconfig $work/tls/kubeconfig label node $node_name node-role.openkeel.io/containers=
INFO
agent=(build/agent/openkeel-node-agent --config "$work/agent.yaml" --node-name "$node_name" --kubeconfig "$work/tls/kubeconfig"
       --context node-agent --health-listen "$health" --admin-listen "$admin")
if [[ -n "${SANDBOX_SECONDS:-}" ]]; then
  timeout --signal=TERM "$SANDBOX_SECONDS" "${agent[@]}" || [[ $? == 124 ]]
else
  "${agent[@]}"
fi
