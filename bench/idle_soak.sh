#!/usr/bin/env bash
# One idle agent, measured: requests it sends to the Kubernetes API (the fake API server's own
# request log) and to Placement (the real Placement's uwsgi request log), its RSS and CPU, over
# SOAK seconds once it is ready and Placement has been quiet for 3 s (its first registration
# done); rates extrapolated to one hour. Node lab-1 (tests/data: compute role, 20-odd pods),
# Placement noauth2 (tests/fixtures/openstack), no OVS section (the OVS and metadata layers are
# off: their idle cost is the IDL's own keepalives, on local sockets).
#
#   bench/idle_soak.sh BUILD_DIR SOAK_SECONDS OUT_DIR
#
# Prints KEY=VALUE lines (k8s_requests, k8s_per_hour, placement_requests, placement_per_hour,
# rss_kb, cpu_s, cpu_percent, soak_s) and leaves the logs in OUT_DIR.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
soak=$2
out=$(mkdir -p "$3" && cd "$3" && pwd)
fixtures=$root/tests/fixtures/openstack
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  bash "$fixtures/stop.sh" "$out/placement" >/dev/null 2>&1 || true
}
trap cleanup EXIT

# Waits (bounded) until "$@" succeeds.
wait_until() {
  local what=$1 deadline=$((SECONDS + $2))
  shift 2
  until "$@"; do
    ((SECONDS < deadline)) || { echo "idle_soak: $what: timed out" >&2; return 1; }
    sleep 0.2
  done
}

bash "$fixtures/start-placement.sh" "$out/placement" >"$out/placement-start.log" 2>&1
placement_url=$(<"$out/placement/url")

rm -f "$out/apiserver-url"
python3 "$root/tests/fake_apiserver/fake_apiserver.py" --listen 127.0.0.1:0 --tls-dir "$out/tls" \
  --token admin=admin-token --token node-agent=agent-token:node-agents \
  --ready-file "$out/apiserver-url" \
  --objects "$root/tests/data/lab-1.node.yaml" "$root/tests/data/lab-1.pods.json" \
  >"$out/apiserver.log" 2>&1 &
pids+=($!)
wait_until "fake API server" 30 test -s "$out/apiserver-url"  # a file test: evaluated each time
api=$(<"$out/apiserver-url")
fake() { curl -sf --cacert "$out/tls/ca.crt" "$api/_fake/$1" "${@:2}"; }

cat >"$out/agent.yaml" <<EOF
logging: {level: info}
placement:
  auth: {type: none}
  endpointOverride: $placement_url
  debounceSeconds: 1
  stateFile: $out/agent-state.json
EOF
"$build/agent/openkeel-node-agent" --config "$out/agent.yaml" --node-name lab-1 \
  --kubeconfig "$out/tls/kubeconfig" --context node-agent \
  --health-listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 >"$out/agent.log" 2>&1 &
agent=$!
pids+=("$agent")
health_port() { grep -oP 'serving /healthz .* on 127\.0\.0\.1:\K[0-9]+' "$out/agent.log" | head -1; }
listening() { [[ -n $(health_port) ]]; }
wait_until "agent listening" 30 listening
ready() { curl -sf "http://127.0.0.1:$(health_port)/readyz" >/dev/null; }
wait_until "agent ready" 60 ready

placement_count() { grep -c ' => generated ' "$out/placement/placement.log" || true; }
# Quiet: no new Placement request for 3 s (the first registration is over).
last=-1 quiet_since=$SECONDS deadline=$((SECONDS + 120))
while ((SECONDS - quiet_since < 3)); do
  now=$(placement_count)
  [[ $now != "$last" ]] && { last=$now; quiet_since=$SECONDS; }
  ((SECONDS < deadline)) || { echo "idle_soak: Placement never quiet" >&2; exit 1; }
  sleep 0.5
done

cpu_ticks() { awk '{print $14 + $15}' "/proc/$agent/stat"; }
hz=$(getconf CLK_TCK)
fake "requests" -X DELETE >/dev/null
p0=$(placement_count) c0=$(cpu_ticks) t0=$(date +%s.%N)
sleep "$soak"   # the soak itself: the agent idles for this long
p1=$(placement_count) c1=$(cpu_ticks) t1=$(date +%s.%N)
k8s=$(fake requests | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
fake requests >"$out/k8s-requests.json"
rss=$(awk '/^VmRSS/ {print $2}' "/proc/$agent/status")
python3 - "$k8s" "$((p1 - p0))" "$((c1 - c0))" "$hz" "$t0" "$t1" "$rss" <<'EOF'
import sys
k8s, pl, ticks, hz, t0, t1, rss = sys.argv[1:]
s = float(t1) - float(t0)
cpu = int(ticks) / int(hz)
print(f"soak_s={s:.0f}")
print(f"k8s_requests={k8s}")
print(f"k8s_per_hour={int(k8s) * 3600 / s:.1f}")
print(f"placement_requests={pl}")
print(f"placement_per_hour={int(pl) * 3600 / s:.1f}")
print(f"rss_kb={rss}")
print(f"cpu_s={cpu:.2f}")
print(f"cpu_percent={100 * cpu / s:.3f}")
EOF
