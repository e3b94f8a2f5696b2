#!/usr/bin/env bash
# Metadata service benchmark (issue 7, measures 1 and 4): requests/s and p50/p99 from a VM
# namespace, through a real OVN chassis (userspace datapath), to whatever serves
# 169.254.169.254:80 in the network's ovnmeta namespace -- side by side, same run:
#   static  nginx in ovnmeta serving the bytes itself (the datapath's limit)
#   proxy   nginx in ovnmeta as a keep-alive reverse proxy (upstream keepalive, HTTP/1.1) to a
#           static nginx "Nova" on 127.0.0.1:8775, setting the signed headers
#   agent   the metadata agent under test (AGENT_CMD, see below), to a static nginx "Nova"
# Each nginx runs ONE worker process. wrk -t1 runs inside the VM namespace, keep-alive.
#
#   sudo bench/metadata/run.sh [--duration 10] [--conns "1 16"] [--cases "static proxy agent"]
#                              [--sb-load "0 400 2000 20000"] [--repeat 3] [--out FILE] [--keep]
#
# --repeat N: N rounds, the cases interleaved in each round (so a busy moment of the shared
# machine hits all of them alike), their order reversed every other round; the table shows the
# median run by req/s, with min-max, and a paired table each case against the first of --cases
# round by round (median of the per-round ratios, rounds ahead).
# TRACE_REQUESTS=N (environment): before each c=1 run, N requests timed one by one
# (latency_trace.py), its summary logged: shows whether slow requests come in bursts.
# --sb-load: before each level, sb_load.py fills the OVN DBs up to that many VIF Port_Bindings
# bound to other (fake) chassis in other datapaths, then every case runs again (measure 4).
#
# THE AGENT SLOT: set AGENT_CMD to a shell command line that starts the agent in the foreground.
# run.sh removes the by-hand metadata plumbing first (the agent must build ovnmeta-<net> itself),
# starts a static nginx "Nova" on 127.0.0.1:$OKOF_NOVA_PORT, then runs
#   nsenter --net=/run/netns/<hv_netns> bash -c "exec $AGENT_CMD"  (output: $OKOF_BENCH_DIR/agent.log)
# in the namespace where ovs-vswitchd and br-int's host-side ports live, waits (bounded) until the
# VM gets a 200 through it, measures, records its threads and RSS, and SIGTERMs it. The command
# finds everything in its environment:
#   OKOF_OVS_REMOTE  OKOF_SB_REMOTE  OKOF_SB_TCP_REMOTE  OKOF_CHASSIS  OKOF_NET_ID
#   OKOF_NOVA_HOST (127.0.0.1)  OKOF_NOVA_PORT  OKOF_SHARED_SECRET_FILE  OKOF_BENCH_DIR
# The real agent: AGENT_CMD="bash bench/metadata/agent_slot.sh" (writes its config from those
# variables and starts a fake kube-apiserver with a compute Node beside it).
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

duration=10
conns="1 16"
cases="static proxy"
[[ -n "${AGENT_CMD:-}" ]] && cases="static proxy agent"
levels="0"
repeat=1
out=""
keep=0
while (($#)); do
  case "$1" in
    --duration) duration=$2; shift 2 ;;
    --conns) conns=$2; shift 2 ;;
    --cases) cases=$2; shift 2 ;;
    --sb-load) levels=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    *) usage ;;
  esac
done
[[ $(id -u) == 0 ]] || { echo "run.sh: needs root (namespaces, ovs-vswitchd)" >&2; exit 1; }
for tool in wrk nginx curl ethtool ovs-vswitchd ovn-controller; do
  command -v "$tool" >/dev/null || { echo "run.sh: $tool missing: packaging/install-deps.sh" >&2; exit 1; }
done
if [[ " $cases " == *" agent "* && -z "${AGENT_CMD:-}" ]]; then
  echo "run.sh: case agent needs AGENT_CMD" >&2
  exit 1
fi

T=$(mktemp -d /tmp/okof-bench.XXXXXX)
tag=${T##*.}
CH=$T/chassis
agent_pid=""
log() { echo "[run.sh $(date -u +%T)] $*" >&2; }

cleanup() {
  [[ -n "$agent_pid" ]] && stop_agent
  local w
  for w in "$T"/nginx-*; do [[ -d "$w" ]] && "$NG" stop "$w"; done
  "$C" stop "$CH"
  # agent_slot.sh's fake kube-apiserver
  [[ -f "$T/agent-slot/apiserver.pid" ]] && kill "$(cat "$T/agent-slot/apiserver.pid")" 2>/dev/null
  if [[ "$keep" == 1 ]]; then log "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

url=http://169.254.169.254/openstack/latest/meta_data.json
mkdir -p "$T/www/openstack/latest"
cp "$root/bench/metadata/meta_data.json" "$T/www/openstack/latest/meta_data.json"
bytes=$(stat -c %s "$T/www/openstack/latest/meta_data.json")

"$C" start "$CH" || exit 1
hv_ns=$("$C" info "$CH" hv_netns)
net=$(cat /proc/sys/kernel/random/uuid)
"$C" add-network "$CH" "$net" 10.77.0.0/24 || exit 1
"$C" add-vm "$CH" "$net" "bench-$tag" 10.77.0.11 fa:16:3e:77:00:11 \
  4b1a0cc0-7c2d-4e6a-9a9b-1a2b3c4d5e6f 0d5b7a1f4c1e4b7f9d5c3e2a1b0c9d8e || exit 1
vm_ns=okof-bench-$tag
md_ns=$("$C" net-info "$CH" "$net" metadata_netns)
nova_port=8775

# ---------------------------------------------------------------------------------------------
vm_curl() { ip netns exec "$vm_ns" curl -s --max-time 5 "$@"; }
vm_gets_200() { [[ $(vm_curl -o /dev/null -w '%{http_code}' "$url") == 200 ]]; }

setup_static() {
  "$C" bind-metadata-by-hand "$CH" "$net" &&
    "$NG" start "$T/nginx-static" "$md_ns" 169.254.169.254:80 static "$T/www"
}
teardown_static() {
  "$NG" stop "$T/nginx-static"
  "$C" unbind-metadata-by-hand "$CH" "$net"
}

setup_proxy() {
  # nginx cannot listen in one namespace and connect from another: its "Nova" listens on the
  # loopback of ovnmeta itself (the same kernel TCP loopback path as the host's 127.0.0.1).
  "$C" bind-metadata-by-hand "$CH" "$net" &&
    "$NG" start "$T/nginx-nova" "$md_ns" "127.0.0.1:$nova_port" static "$T/www" &&
    "$NG" start "$T/nginx-proxy" "$md_ns" 169.254.169.254:80 proxy "127.0.0.1:$nova_port" || return 1
  local headers
  headers=$(vm_curl -D- -o /dev/null "$url")
  if [[ "$headers" != *"X-Echo-Signature: 5f3904eb"* || "$headers" != *"X-Echo-Forwarded-For: 10.77.0.11"* ]]; then
    log "proxy: the signed headers did not reach the backend: $headers"
    return 1
  fi
}
teardown_proxy() {
  "$NG" stop "$T/nginx-proxy"
  "$NG" stop "$T/nginx-nova"
  "$C" unbind-metadata-by-hand "$CH" "$net"
}

agent_pid_alive() { [[ -n "$agent_pid" && -e /proc/$agent_pid ]]; }
setup_agent() {
  local ns_arg=${hv_ns:--}
  "$NG" start "$T/nginx-nova-agent" "$ns_arg" "127.0.0.1:$nova_port" static "$T/www" || return 1
  echo -n secret >"$T/shared-secret"
  export OKOF_OVS_REMOTE OKOF_SB_REMOTE OKOF_SB_TCP_REMOTE OKOF_CHASSIS OKOF_NET_ID \
    OKOF_NOVA_HOST=127.0.0.1 OKOF_NOVA_PORT=$nova_port OKOF_SHARED_SECRET_FILE=$T/shared-secret \
    OKOF_BENCH_DIR=$T
  OKOF_OVS_REMOTE=$("$C" info "$CH" ovs_remote)
  OKOF_SB_REMOTE=$("$C" info "$CH" sb_remote)
  OKOF_SB_TCP_REMOTE=$("$C" info "$CH" sb_tcp_remote)
  OKOF_CHASSIS=$("$C" info "$CH" chassis)
  OKOF_NET_ID=$net
  log "agent: $AGENT_CMD (in ${hv_ns:-the host namespace})"
  if [[ -n "$hv_ns" ]]; then
    # nsenter, not `ip netns exec`: the agent must stay in the host's mount namespace, or the
    # ovnmeta-* namespaces it bind-mounts under /run/netns are visible to it alone.
    nsenter --net="/run/netns/$hv_ns" bash -c "exec $AGENT_CMD" >>"$T/agent.log" 2>&1 &
  else
    bash -c "exec $AGENT_CMD" >>"$T/agent.log" 2>&1 &
  fi
  agent_pid=$!
  local deadline=$((SECONDS + ${AGENT_READY_TIMEOUT:-60}))
  until vm_gets_200; do
    agent_pid_alive || { log "agent exited; log:"; tail -n 30 "$T/agent.log" >&2; agent_pid=""; return 1; }
    ((SECONDS < deadline)) || { log "agent: no 200 from the VM within the timeout"; return 1; }
    sleep 0.1 # retry interval of a bounded readiness poll
  done
  # What reached "Nova": the agent passes on only the body and its type, so ask the backend for
  # the headers it got in a body.
  local signed
  signed=$(vm_curl "http://169.254.169.254/okof/signed-headers")
  if [[ "$signed" != *"signature=5f3904eb"* || "$signed" != *"forwarded-for=10.77.0.11"* ]]; then
    log "agent: the signed headers did not reach Nova: $signed"
    return 1
  fi
}
stop_agent() {
  if agent_pid_alive; then
    kill -TERM "$agent_pid"
    local deadline=$((SECONDS + 10))
    while agent_pid_alive && ((SECONDS < deadline)); do sleep 0.05; done
    agent_pid_alive && kill -KILL "$agent_pid"
    wait "$agent_pid" 2>/dev/null
  fi
  agent_pid=""
}
teardown_agent() {
  stop_agent
  "$NG" stop "$T/nginx-nova-agent"
  # The agent leaves host state as it is on exit (by design): remove its namespace for the next
  # case; its OVS port goes with the veth.
  ip netns del "$md_ns" 2>/dev/null
  local t0
  t0=$("$C" net-info "$CH" "$net" metadata_tap_host)
  ovs-vsctl --db="unix:$CH/db.sock" --if-exists del-port br-int "$t0"
}

# The agent's waits for a Nova slot and refused or evicted connections so far ("client
# network refused": the network's count includes its project's share, the refused ones those closed
# to make room), from /metrics on its admin listener (the last port its log names): a run whose
# requests waited at a per-VM, per-project or per-network cap measured that cap, not the proxy
# (bench/metadata/RESULTS.md, 2026-12-04). Empty when the agent has no such metric (older
# binaries) or no admin listener.
agent_limits() {
  local port text
  port=$(grep -oE 'serving /metrics.* on 127\.0\.0\.1:[0-9]+' "$T/agent.log" 2>/dev/null |
    tail -n1 | grep -oE '[0-9]+$')
  [[ -n "$port" ]] || return 0
  text=$(nsenter --net="/run/netns/$hv_ns" curl -s --max-time 2 \
    "http://127.0.0.1:$port/metrics" 2>/dev/null)
  grep -q '^okna_metadata_requests_queued_total' <<<"$text" || return 0
  awk '/^okna_metadata_requests_queued_total\{limit="client"\}/ { c = $2 }
       /^okna_metadata_requests_queued_total\{limit="(namespace|project)"\}/ { n += $2 }
       /^okna_metadata_connections_(refused|evicted)_total/ { r += $2 }
       END { printf "%d %d %d\n", c, n, r }' <<<"$text"
}
# agent_peaks: "THREADS PEAK_RSS_KB" of the agent, from /proc/PID/status (Threads, VmHWM) with
# shell builtins only. No sampling loop while wrk runs: forking ls/wc/awk every 0.5 s cost ~50 ms
# of CPU each time on this 2-CPU machine and gave the agent's case alone a p99 of 3-4 ms.
agent_peaks() {
  local key value _ threads=0 hwm=0
  while read -r key value _; do
    case "$key" in
      Threads:) threads=$value ;;
      VmHWM:) hwm=$value ;;
    esac
  done <"/proc/$agent_pid/status"
  echo "$threads $hwm"
}

# serving_pid CASE: the process that answers the VM: the agent, or the one nginx worker.
serving_pid() {
  if [[ "$1" == agent ]]; then echo "$agent_pid"; return; fi
  local master
  master=$(<"$T/nginx-$1/nginx.pid") && pgrep -P "$master" | head -n1
}
# cpu_ticks PID: its user + system time (all threads), in clock ticks.
cpu_ticks() {
  local f
  read -r -a f <"/proc/$1/stat" && echo $((f[13] + f[14]))
}
hz=$(getconf CLK_TCK)

# to_ms VALUE: wrk's 352.00us / 1.21ms / 1.02s -> milliseconds.
to_ms() {
  awk -v v="$1" 'BEGIN {
    n = v + 0
    if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n = n; else if (v ~ /s$/) n *= 1000
    printf "%.3f", n }'
}

runs=$T/runs.tsv
: >"$runs"

# rx + tx packets of the VM's interfaces (all but lo).
vm_packets() {
  ip netns exec "$vm_ns" sh -c 'cat /sys/class/net/[!l]*/statistics/rx_packets /sys/class/net/[!l]*/statistics/tx_packets' |
    awk '{ s += $1 } END { print s + 0 }'
}
# The machine's context switches, idle and total CPU jiffies so far (/proc/stat).
machine_counters() {
  awk '/^ctxt / { c = $2 } /^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; idle = $5 + $6 }
       END { print c, idle, t }' /proc/stat
}
# Voluntary context switches of all threads of a process so far (empty without a process).
process_sleeps() {
  [[ -n "$1" && -d /proc/$1 ]] || return 0
  cat /proc/"$1"/task/*/status 2>/dev/null | awk '/^voluntary_ctxt_switches/ { s += $2 } END { print s + 0 }'
}
# measure CASE LEVEL ROUND: one wrk run per connection count, appended to runs.tsv.
measure() {
  local case=$1 level=$2 round=$3 c raw rps p50 p99 errors load1 note peaks pid before after reqs cpu pkts0 pkts1 ctxt0 ctxt1 idle0 idle1 total0 total1 sleeps0 sleeps1 switch0 switch1
  # Warm-up (connections, caches, the datapath's flow cache), not measured.
  ip netns exec "$vm_ns" wrk -t1 -c16 -d2s "$url" >/dev/null 2>&1
  for c in $conns; do
    note=""
    raw=$T/wrk-$case-$level-c$c-r$round.txt
    load1=$(cut -d' ' -f1 /proc/loadavg)
    if [[ -n "${TRACE_REQUESTS:-}" && "$c" == 1 ]]; then
      # Per-request timings before wrk (latency_trace.py): where wrk gives percentiles only.
      ip netns exec "$vm_ns" /usr/bin/python3 "$root/bench/metadata/latency_trace.py" \
        --requests "$TRACE_REQUESTS" >"$raw.trace" 2>&1
      log "$case sb=$level trace: $(head -n1 "$raw.trace")"
    fi
    # The serving process's CPU time per request: a figure the shared machine's speed of the
    # moment moves far less than req/s (read from /proc around the run, no sampling during it).
    pid=$(serving_pid "$case") before=""
    [[ -n "$pid" ]] && before=$(cpu_ticks "$pid")
    pkts0=$(vm_packets)
    read -r ctxt0 idle0 total0 < <(machine_counters)
    sleeps0=$(process_sleeps "$pid")
    switch0=$(process_sleeps "$(cat "$CH/ovs-vswitchd.pid" 2>/dev/null)")
    limits0=""
    [[ "$case" == agent && -n "$hv_ns" ]] && limits0=$(agent_limits)
    ip netns exec "$vm_ns" wrk -t1 -c"$c" -d"${duration}s" --latency "$url" >"$raw" 2>&1
    read -r ctxt1 idle1 total1 < <(machine_counters)
    sleeps1=$(process_sleeps "$pid")
    switch1=$(process_sleeps "$(cat "$CH/ovs-vswitchd.pid" 2>/dev/null)")
    pkts1=$(vm_packets)
    after="" cpu=""
    [[ -n "$before" ]] && after=$(cpu_ticks "$pid")
    reqs=$(awk '/requests in/ {print $1}' "$raw")
    # Packets the VM sent and received per request: what the userspace datapath forwards for
    # each (segments, ACKs), a cost on the machine's CPUs outside the serving process.
    if [[ "${reqs:-0}" -gt 0 ]]; then
      note="VM packets/req $(awk -v d=$((pkts1 - pkts0)) -v n="$reqs" 'BEGIN {printf "%.2f", d / n}')"
      # The whole machine: context switches per request (every wake-up of wrk, ovs-vswitchd, the
      # server and Nova) and how idle the CPUs stayed: a run with idle CPUs is bound by wake-ups.
      note+=", machine: $(awk -v c=$((ctxt1 - ctxt0)) -v n="$reqs" 'BEGIN {printf "%.2f", c / n}') context switches/req"
      note+=", $(awk -v i=$((idle1 - idle0)) -v t=$((total1 - total0)) 'BEGIN {printf "%.0f", t ? 100 * i / t : 0}')% idle"
      # How often the serving process went to sleep (voluntary switches, all its threads).
      [[ -n "$sleeps0" && -n "$sleeps1" ]] &&
        note+=", server sleeps/req $(awk -v d=$((sleeps1 - sleeps0)) -v n="$reqs" 'BEGIN {printf "%.2f", d / n}')"
      # ovs-vswitchd's too: its main thread polls the userspace datapath's veths, and each of
      # its sleeps is a wake-up later on the path of a packet.
      [[ -n "$switch0" && -n "$switch1" ]] &&
        note+=", ovs-vswitchd sleeps/req $(awk -v d=$((switch1 - switch0)) -v n="$reqs" 'BEGIN {printf "%.2f", d / n}')"
    fi
    if [[ -n "$after" && "${reqs:-0}" -gt 0 ]]; then
      cpu=$(awk -v t=$((after - before)) -v hz="$hz" -v n="$reqs" 'BEGIN {printf "%.1f", t * 1e6 / hz / n}')
    fi
    if [[ "$case" == agent ]] && agent_pid_alive; then
      # Its threads after the run and its peak RSS since it started (VmHWM).
      peaks=$(agent_peaks)
      note="${note:+$note, }agent threads ${peaks% *}, peak RSS ${peaks#* } kB"
      if [[ -n "$limits0" ]]; then
        read -r qc0 qn0 rf0 <<<"$limits0"
        read -r qc1 qn1 rf1 <<<"$(agent_limits)"
        if ((${qc1:-0} > qc0 || ${qn1:-0} > qn0 || ${rf1:-0} > rf0)); then
          note+=", CAPPED: $((qc1 - qc0)) requests waited at the VM's in-flight cap, $((qn1 - qn0))"
          note+=" at the network's or its project's, $((rf1 - rf0)) connections refused or"
          note+=" closed to make room (metadata.limits)"
          log "WARNING: $case c=$c round $round measured the agent's limits, not the proxy: $note"
        fi
      fi
    fi
    rps=$(awk '/^Requests\/sec/ {print $2}' "$raw")
    p50=$(to_ms "$(awk '$1 == "50%" {print $2}' "$raw")")
    p99=$(to_ms "$(awk '$1 == "99%" {print $2}' "$raw")")
    errors=$(grep -E "Non-2xx|Socket errors" "$raw" | tr -s ' ' | paste -sd';' -)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$case" "$level" "$c" "$round" "${rps:-0}" \
      "$p50" "$p99" "${errors:-0}" "$load1" "${cpu:--}" "$note" >>"$runs"
    log "$case sb=$level c=$c round $round: ${rps:-FAIL} req/s, p50 $p50 ms, p99 $p99 ms, CPU ${cpu:--} us/req ${errors:+($errors)}"
  done
}

current=0
for level in $levels; do
  if ((level > current)); then
    log "SB load: adding $((level - current)) VIF port bindings on fake chassis"
    /usr/bin/python3 "$root/bench/metadata/sb_load.py" "$CH" add $((level - current)) |
      tee -a "$T/sb_load.jsonl" >&2 || exit 1
    current=$level
  fi
  for ((round = 1; round <= repeat; round++)); do
    # Even rounds run the cases in reverse order (A B, B A, ...): a machine getting busier or
    # idler over a round then favours no case in the paired figures below.
    order=$cases
    ((round % 2 == 0)) && order=$(echo "$cases" | tr ' ' '\n' | tac | paste -sd' ' -)
    for case in $order; do
      log "case $case (SB load $level, round $round/$repeat)"
      if "setup_$case"; then
        measure "$case" "$level" "$round"
      else
        printf '%s\t%s\t-\t%s\tSETUP-FAILED\t\t\t\t\t\t\n' "$case" "$level" "$round" >>"$runs"
      fi
      "teardown_$case"
    done
  done
done

# summary: per (case, level, conns), the median run by req/s, and the min-max of req/s.
summary() {
  local key
  for level in $levels; do
    for case in $cases; do
      for c in $conns; do
        key="$case"$'\t'"$level"$'\t'"$c"$'\t'
        grep -F -- "$key" "$runs" | sort -t$'\t' -k5,5g | awk -F'\t' -v n="$(grep -cF -- "$key" "$runs")" '
          { rps[NR] = $5; line[NR] = $0 }
          END {
            if (n == 0) exit
            split(line[int((n + 1) / 2)], m, "\t")
            printf "| %s | %s | %s | **%.0f** | %.0f-%.0f | %s | %s | %s | %s | %s | %s |\n",
              m[1], m[2], m[3], m[5], rps[1], rps[n], m[6], m[7], m[8], m[9], m[10], m[11]
          }'
      done
    done
  done
}

# paired: each case against the first case of --cases, round by round (the two ran next to
# each other): the median of the per-round req/s and p99 ratios, and in how many rounds the case
# served at least as many requests. Rounds where either run failed are left out.
paired() {
  local base=${cases%% *} case level c
  for level in $levels; do
    for case in $cases; do
      [[ "$case" == "$base" ]] && continue
      for c in $conns; do
        awk -F'\t' -v b="$base" -v k="$case" -v l="$level" -v c="$c" '
          $2 == l && $3 == c && $5 + 0 > 0 { rps[$1, $4] = $5; p99[$1, $4] = $7; rounds[$4] = 1 }
          function median(a, n,   i, j, t) {
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
          }
          END {
            n = 0; ahead = 0
            for (r in rounds) if ((b, r) in rps && (k, r) in rps) {
              n++; q[n] = rps[k, r] / rps[b, r]; ahead += rps[k, r] >= rps[b, r]
              if (p99[b, r] + 0 > 0) { m++; t[m] = p99[k, r] / p99[b, r] }
            }
            if (n == 0) exit
            printf "| %s / %s | %s | %s | %d | **%.3f** | %d of %d | %s |\n", k, b, l, c, n,
              median(q, n), ahead, n, m ? sprintf("%.3f", median(t, m)) : "-"
          }' "$runs"
      done
    done
  done
}

# ---------------------------------------------------------------------------------------------
report() {
  echo "## Run $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  echo "Command: \`sudo bench/metadata/run.sh --duration $duration --conns \"$conns\" --cases \"$cases\" --sb-load \"$levels\" --repeat $repeat\`${AGENT_CMD:+ with AGENT_CMD=\`$AGENT_CMD\`}"
  echo
  echo "- machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), kernel $(uname -r), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
  echo "- software: $(ovs-vswitchd --version | head -1), $(ovn-controller --version | head -1), $(nginx -v 2>&1), wrk $(dpkg-query -W -f='${Version}' wrk)"
  echo "- wrk: \`ip netns exec okof-bench-<tag> wrk -t1 -c<N> -d${duration}s --latency $url\` ($bytes-byte meta_data.json), after a 2 s warm-up at -c16"
  echo "- load1 = the 1-minute load average just before each run (the machine is shared); CPU us/req = user + system time of the serving process (the agent, all its threads; nginx: its one worker) over the run, per request"
  [[ -s "$T/sb_load.jsonl" ]] && echo "- SB load timings (sb_load.py): $(paste -sd' ' "$T/sb_load.jsonl")"
  echo
  echo "| case | SB VIF ports | conns | req/s (median of $repeat) | min-max | p50 ms | p99 ms | errors | load1 | CPU us/req | note |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  summary
  if ((repeat > 1)) && [[ "$cases" == *" "* ]]; then
    echo
    echo "Paired, round by round (each case next to the first of --cases, the order alternating):"
    echo
    echo "| cases | SB VIF ports | conns | rounds | median req/s ratio | rounds ahead or level | median p99 ratio |"
    echo "|---|---|---|---|---|---|---|"
    paired
  fi
  echo
  echo "<details><summary>every run</summary>"
  echo
  echo "| case | SB VIF ports | conns | round | req/s | p50 ms | p99 ms | errors | load1 | CPU us/req | note |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  awk -F'\t' '{printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11}' "$runs"
  echo
  echo "</details>"
}
report | tee "${out:-/dev/null}"
