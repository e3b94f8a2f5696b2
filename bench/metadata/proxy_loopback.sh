#!/usr/bin/env bash
# The metadata proxy vs nginx as a keep-alive reverse proxy, both on loopback, same backend:
# a static nginx ("Nova") answering meta_data.json. wrk at 1 and 16 keep-alive connections.
# This isolates the proxy's own cost; the issue's full benchmark (OVN datapath, namespaces) is
# separate. Usage: bench/metadata/proxy_loopback.sh [build-dir] [seconds]
set -euo pipefail
build=${1:-build}
secs=${2:-10}
bin=$build/bench/metadata/okna_metadata_proxy_bench
[[ -x $bin ]] || { echo "build $bin first (cmake --build $build --target okna_metadata_proxy_bench)"; exit 1; }
command -v wrk >/dev/null && command -v nginx >/dev/null || { echo "needs wrk and nginx-light"; exit 1; }

work=$(mktemp -d /tmp/okna-mdbench.XXXXXX)
chmod 755 "$work"  # nginx workers run as nobody when started by root
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

nova_port=18775 nginx_proxy_port=18080 okna_port=18081 okna_beast_port=18082
mkdir -p "$work/html/openstack/latest" "$work/logs"
printf '{"uuid": "4b1a0cc0-7c2d-4e6a-9a9b-1a2b3c4d5e6f", "name": "vm-1", "project_id": "project"}' \
  > "$work/html/openstack/latest/meta_data.json"
echo -n secret > "$work/secret"
sig=$(printf '%s' 4b1a0cc0-7c2d-4e6a-9a9b-1a2b3c4d5e6f | openssl dgst -sha256 -hmac secret -r | cut -d' ' -f1)

common="worker_processes 1; daemon off; error_log $work/logs/error.log warn;
events { worker_connections 4096; }"
# Two nginx processes (backend, baseline proxy), one worker each, so the proxy's worker is alone.
cat > "$work/backend.conf" <<CONF
$common
pid $work/backend.pid;
http {
  access_log off;
  default_type application/json;
  keepalive_requests 1000000;
  server { listen 127.0.0.1:$nova_port; root $work/html; }
}
CONF
cat > "$work/proxy.conf" <<CONF
$common
pid $work/proxy.pid;
http {
  access_log off;
  keepalive_requests 1000000;
  upstream nova { server 127.0.0.1:$nova_port; keepalive 64; }
  server {   # the baseline proxy: keep-alive upstream, the four signed headers
    listen 127.0.0.1:$nginx_proxy_port;
    location / {
      proxy_pass http://nova;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header X-Forwarded-For \$remote_addr;
      proxy_set_header X-Instance-ID 4b1a0cc0-7c2d-4e6a-9a9b-1a2b3c4d5e6f;
      proxy_set_header X-Tenant-ID project;
      proxy_set_header X-Instance-ID-Signature $sig;
    }
  }
}
CONF
nginx -p "$work" -c "$work/backend.conf" & pids+=($!)
nginx -p "$work" -c "$work/proxy.conf" & pids+=($!)
"$bin" "$okna_port" "$nova_port" "$work/secret" curl > "$work/okna.log" 2>&1 & okna_pid=$!; pids+=($okna_pid)
"$bin" "$okna_beast_port" "$nova_port" "$work/secret" beast > "$work/okna-beast.log" 2>&1 & beast_pid=$!; pids+=($beast_pid)
for port in $nova_port $nginx_proxy_port $okna_port $okna_beast_port; do
  for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$port/openstack/latest/meta_data.json" && break; sleep 0.1; done
done
curl -sf "http://127.0.0.1:$okna_port/openstack/latest/meta_data.json" >/dev/null || { cat "$work"/logs/* "$work/okna.log"; exit 1; }

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # utime + stime, clock ticks
hz=$(getconf CLK_TCK)
run() {  # name port conns pid-of-the-serving-process
  local out before after reqs
  before=$(cpu_ticks "$4")
  out=$(wrk -t1 -c"$3" -d"${secs}s" --latency "http://127.0.0.1:$2/openstack/latest/meta_data.json")
  after=$(cpu_ticks "$4")
  reqs=$(awk '/requests in/ {print $1}' <<<"$out")
  # CPU time of the process under test per request: what the machine's noise does not change.
  printf '%-22s c=%-3s %10s req/s  p50 %-8s p99 %-8s cpu %6s us/req\n' "$1" "$3" \
    "$(awk '/Requests\/sec/ {print $2}' <<<"$out")" \
    "$(awk '$1=="50%" {print $2}' <<<"$out")" "$(awk '$1=="99%" {print $2}' <<<"$out")" \
    "$(awk -v t=$((after - before)) -v hz="$hz" -v n="$reqs" 'BEGIN {printf "%.1f", n ? t * 1e6 / hz / n : 0}')"
}
echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); ${secs}s per run; wrk -t1"
worker() { pgrep -P "$1" | head -1; }  # nginx's one worker process
backend_worker=$(worker "${pids[0]}") proxy_worker=$(worker "${pids[1]}")
for c in 1 16; do
  run "backend (nginx static)" $nova_port "$c" "$backend_worker"
  run "nginx reverse proxy" $nginx_proxy_port "$c" "$proxy_worker"
  [[ ${SKIP_CURL:-0} == 1 ]] || run "okna proxy (curl)" $okna_port "$c" "$okna_pid"
  run "okna proxy (beast)" $okna_beast_port "$c" "$beast_pid"
done
for p in $okna_pid $beast_pid; do
  echo "okna proxy pid $p threads: $(ls /proc/$p/task | wc -l), RSS: $(awk '/VmRSS/ {print $2, $3}' /proc/$p/status)"
done
