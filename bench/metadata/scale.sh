#!/usr/bin/env bash
# Metadata service benchmark, measures 2 and 3 (scale), with the real agent (agent_slot.sh via
# nsenter, as run.sh). One real OVN chassis (tests/fixtures/ovn/chassis.sh); networks are written
# in bulk by scale_nets.py (one NB transaction, ML2/OVN's rows), each with ONE compute port
# requested on our chassis. Its "VM" is either a real namespace (as chassis.sh add-vm builds it,
# plus a static neighbour entry for the metadata IP) or -- beyond the sample -- a bare veth whose
# host end is in the chassis namespace (its far end, the VM's NIC, in one shared namespace):
# ovn-controller binds both alike (iface-id), but only real namespaces can ask for metadata.
# All ports of a step are plugged in ONE ovs-vsctl transaction ("bound at once").
# vm_poll.py asks every real VM namespace for meta_data.json until it gets a 200.
#   (a) 1 network: SB Port_Binding up=true (ovsdb-client monitor timestamp) -> first 200 (x3)
#   (b) B networks at once: plug -> all B bound (SB), agent ready B, the last VM answers
#   (c) agent start with S networks present (cold: no ovnmeta-*; then warm: restart, adopt)
#   (d) agent VmRSS with 0, B+3 and S networks
#   sudo bench/metadata/scale.sh [--batch 200] [--batch-sample 200] [--startup 1000]
#                                [--startup-sample 20] [--keep] [--only-startup] [--rounds N]
#                                [--startup-poll-ms 200] [--modes "cold warm"]
#   --only-startup: skip (a) and (b); --rounds N: (c) cold and warm N times;
#   --modes: which starts (c) makes, in order: cold, warm, and ports (the namespaces kept, only
#   their OVS ports removed: what ovs-vswitchd and ovn-controller alone take to add and bind them);
#   --startup-poll-ms: how often each sampled VM asks during (c) (its resolution).
#   AGENT_BINS="bin1 bin2": (c) runs each binary in turn in every round (A/B on one chassis, in
#   the same conditions); default: OKNA_AGENT_BIN or the build's agent.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
batch=200 batch_sample=200 startup=1000 startup_sample=20 keep=0 only_startup=0 rounds=1
startup_poll_ms=200 modes="cold warm"
while (($#)); do
  case "$1" in
    --batch) batch=$2; shift 2 ;;
    --batch-sample) batch_sample=$2; shift 2 ;;
    --startup) startup=$2; shift 2 ;;
    --startup-sample) startup_sample=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --only-startup) only_startup=1; shift ;;
    --rounds) rounds=$2; shift 2 ;;
    --startup-poll-ms) startup_poll_ms=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    *) usage ;;
  esac
done
need_root

T=$(mktemp -d /tmp/okof-scale.XXXXXX)
tag=${T##*.}
vm_sink=okof-scvms$tag  # where the bare VMs' far ends live (see add_nets)
CH=$T/chassis
agent_pid="" agent_n=0 monitor="" watcher=""
cleanup() {
  [[ -n "$monitor" ]] && kill "$monitor" 2>/dev/null
  [[ -n "$watcher" ]] && kill "$watcher" 2>/dev/null
  stop_agent
  "$NG" stop "$T/nginx-nova"
  [[ -f "$T/agent-slot/apiserver.pid" ]] && kill "$(cat "$T/agent-slot/apiserver.pid")" 2>/dev/null
  "$C" stop "$CH"
  if [[ "$keep" == 1 ]]; then log "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$T/www/openstack/latest"
cp "$root/bench/metadata/meta_data.json" "$T/www/openstack/latest/"
"$C" start "$CH" || exit 1
# shellcheck source=../../tests/fixtures/ovn/chassis.sh
source "$C"
_okof_env "$CH" || exit 1
hv_ns=$OKOF_HV_NS
chassis=$(chassis_info "$CH" chassis)
chassis_uuid=$(_okof_sbctl --bare --columns=_uuid find Chassis name="$chassis")
"$NG" start "$T/nginx-nova" "$hv_ns" 127.0.0.1:8775 static "$T/www" || exit 1
echo -n secret >"$T/shared-secret"
export OKOF_OVS_REMOTE OKOF_SB_REMOTE OKOF_SB_TCP_REMOTE OKOF_CHASSIS=$chassis OKOF_NET_ID=none \
  OKOF_NOVA_HOST=127.0.0.1 OKOF_NOVA_PORT=8775 OKOF_SHARED_SECRET_FILE=$T/shared-secret \
  OKOF_BENCH_DIR=$T OKNA_LOG_LEVEL=${OKNA_LOG_LEVEL:-info}
OKOF_OVS_REMOTE=$(chassis_info "$CH" ovs_remote)
OKOF_SB_REMOTE=$(chassis_info "$CH" sb_remote)
OKOF_SB_TCP_REMOTE=$(chassis_info "$CH" sb_tcp_remote)

now() { date +%s.%N; }
ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", (b - a) * 1000 }'; }
# wait_for SECONDS CMD...: bounded poll, every $poll_period s (each poll of the agent's health
# forks `ip netns exec curl`: at 10 ms that is CPU the start being measured needs).
poll_period=0.01
wait_for() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@" >/dev/null 2>&1; do ((SECONDS < deadline)) || return 1; sleep "$poll_period"; done
}
start_agent() {
  agent_n=$((agent_n + 1))
  nsenter --net="/run/netns/$hv_ns" bash -c "exec bash $root/bench/metadata/agent_slot.sh" \
    >"$T/agent-$agent_n.log" 2>&1 &
  agent_pid=$!
}
stop_agent() {
  [[ -n "$agent_pid" ]] || return 0
  kill -TERM "$agent_pid" 2>/dev/null
  wait "$agent_pid" 2>/dev/null
  agent_pid=""
}
health() { # health PATH: GET on the current agent's health port
  local port
  port=$(grep -o 'serving /healthz.* on 127.0.0.1:[0-9]*' "$T/agent-$agent_n.log" 2>/dev/null | grep -o '[0-9]*$')
  [[ -n "$port" ]] && ip netns exec "$hv_ns" curl -sf "http://127.0.0.1:$port$1"
}
# CPU time of each agent thread so far: "name:ms ...".
thread_cpu() {
  local hz t out=""
  hz=$(getconf CLK_TCK)
  for t in /proc/$agent_pid/task/*; do
    out+="$(cat "$t/comm" 2>/dev/null | tr ' ' _):$(awk -v hz="$hz" '{printf "%d", ($14 + $15) * 1000 / hz}' "$t/stat" 2>/dev/null) "
  done
  echo "$out"
}
# CPU time (ms, user+sys) of the chassis' daemons and everything else on the machine, so far:
# "name:ms ...". What competes with the agent on this 2-CPU machine during a start.
daemon_cpu() {
  local hz
  hz=$(getconf CLK_TCK)
  for name in ovs-vswitchd ovn-controller ovsdb-server ovn-northd nginx; do
    local total=0 p
    for p in $(pgrep -x "$name"); do
      total=$((total + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
    done
    echo -n "$name:$((total * 1000 / hz)) "
  done
  awk -v hz="$hz" '/^cpu / {printf "machine-busy:%d machine-idle:%d", ($2+$3+$4+$7+$8) * 1000 / hz, ($5+$6) * 1000 / hz}' /proc/stat
}
delta_cpu() { # delta_cpu "BEFORE" "AFTER": per-name difference
  awk -v a="$1" -v b="$2" 'BEGIN { n = split(a, x, " "); for (i = 1; i <= n; i++) { split(x[i], kv, ":"); before[kv[1]] = kv[2] }
    n = split(b, y, " "); for (i = 1; i <= n; i++) { split(y[i], kv, ":"); printf "%s:%d ", kv[1], kv[2] - before[kv[1]] } }'
}
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$agent_pid/status"; }
# "anon A kB + file F kB": the heap and stacks vs the mapped binary and libraries' pages.
rss_split() { awk '/^RssAnon/ {a=$2} /^RssFile/ {f=$2} END {print "anon " a " kB + file " f " kB"}' "/proc/$agent_pid/status"; }
bound_count() { _okof_sbctl --bare --columns=up find Port_Binding chassis="$chassis_uuid" | grep -c true; }
bound_at_least() { (($(bound_count) >= $1)); }
# watch OUT ARGS...: bench/metadata/watch.py in the background (pid in $watcher), for the measured
# waits: one process, no forks, the Southbound followed by a monitor (see watch.py).
watch() {
  local out=$1
  shift
  /usr/bin/python3 "$root/bench/metadata/watch.py" --netns "$hv_ns" --agent-log "$T/agent-$agent_n.log" \
    --sb "$OKOF_SB_REMOTE" --chassis-uuid "$chassis_uuid" "$@" >"$out" &
  watcher=$!
}
# seen OUT WHAT: the epoch watch.py printed for WHAT ("readyz", "ready", "bound"), or empty.
seen() { awk -v w="$2" '$1 == w { print $NF }' "$1"; }

# add_nets N FIRST SAMPLE: N networks from index FIRST; the first SAMPLE get a real VM namespace.
# Writes $T/plug-FIRST (ovs-vsctl args) and $T/sample-FIRST (namespace names).
add_nets() {
  local n=$1 first=$2 sample=$3 i=0 _net md_ip md_mac lsp mac ip prefix gw dev tap ns
  /usr/bin/python3 "$root/bench/metadata/scale_nets.py" "$CH" "$n" "$first" >"$T/nets-$first" || return 1
  : >"$T/plug-$first"
  : >"$T/sample-$first"
  : >"$T/veths-$first"
  : >"$T/sink-$first"
  ip netns pids "$vm_sink" >/dev/null 2>&1 || _okof_netns_add "$vm_sink" || return 1
  while read -r _net md_ip md_mac lsp mac ip prefix gw dev; do
    tap=tap${lsp:0:11}
    if ((i < sample)); then
      ns=okof-sc$tag-$((first + i))
      _okof_netns_add "$ns" && _okof_hv_ip link add "$tap" type veth peer name eth0 netns "$ns" &&
        ip -n "$ns" link set eth0 address "$mac" mtu 1442 up &&
        ip -n "$ns" addr add "$ip/$prefix" dev eth0 &&
        ip -n "$ns" route add 169.254.169.254/32 via "$md_ip" dev eth0 &&
        ip -n "$ns" route add default via "$gw" dev eth0 &&
        ip -n "$ns" neigh replace "$md_ip" lladdr "$md_mac" dev eth0 nud permanent &&
        ip netns exec "$ns" ethtool -K eth0 tx off tso off >/dev/null &&
        _okof_hv_ip link set "$tap" up || return 1
      echo "$ns" >>"$T/sample-$first"
    else
      # A bare veth: bound by ovn-controller, never asks for metadata. Its far end (the VM's
      # NIC) goes to one shared namespace: a real hypervisor has one host interface per VM, and
      # ovs-vswitchd dumps every route of its namespace again after each link change there
      # (lib/route-table.c), so ~800 far ends with IPv6 routes beside it made every agent
      # start slower than on a real host.
      printf 'link add %s type veth peer name v%s netns %s\nlink set %s up\n' \
        "$tap" "${lsp:0:11}" "$vm_sink" "$tap" >>"$T/veths-$first"
      printf 'link set v%s up\n' "${lsp:0:11}" >>"$T/sink-$first"
    fi
    printf -- '-- add-port br-int %s -- set Interface %s external_ids:iface-id=%s external_ids:attached-mac=%s external_ids:iface-status=active external_ids:vm-uuid=%s\n' \
      "$tap" "$tap" "$lsp" "$mac" "$dev" >>"$T/plug-$first"
    i=$((i + 1))
  done <"$T/nets-$first"
  [[ -s "$T/veths-$first" ]] && { _okof_hv_ip -b "$T/veths-$first" || return 1; }
  [[ -s "$T/sink-$first" ]] && { ip -n "$vm_sink" -b "$T/sink-$first" || return 1; }
  return 0
}
# plug FIRST: all ports of add_nets FIRST into br-int, 250 per ovs-vsctl transaction.
plug() {
  local chunk
  split -l 250 "$T/plug-$1" "$T/plug-$1.part."
  for chunk in "$T/plug-$1.part."*; do
    # shellcheck disable=SC2046
    _okof_vsctl $(cat "$chunk") || return 1
  done
}
out=$T/results.md
: >"$out"
res() { echo "$*" | tee -a "$out" >&2; }

# ---------------------------------------------------------------- agent with 0 networks
t0=$(now)
start_agent
watch "$T/watch-0" --readyz --timeout-s 60
wait "$watcher" || { log "agent not ready"; tail "$T/agent-1.log" >&2; exit 1; }
res "agent start, 0 networks: /readyz 200 after $(ms "$t0" "$(seen "$T/watch-0" readyz)") ms; VmRSS $(rss_kb) kB ($(rss_split)), threads $(ls /proc/$agent_pid/task | wc -l)"

nets=0
if [[ "$only_startup" == 0 ]]; then
# ---------------------------------------------------------------- (a) one network, x3
ovsdb-client --timestamp monitor "unix:$CH/sb.sock" OVN_Southbound Port_Binding logical_port,chassis,up \
  >"$T/sb-monitor.txt" 2>/dev/null &
monitor=$!
for trial in 1 2 3; do
  add_nets 1 $nets 1 || exit 1
  ns=$(cat "$T/sample-$nets")
  lsp=$(cut -d' ' -f4 "$T/nets-$nets")
  /usr/bin/python3 "$root/bench/metadata/vm_poll.py" --period-ms 5 --connect-timeout-ms 10 \
    --timeout-s 30 "$ns" >"$T/poll-$nets" &
  poll=$!
  t_plug=$(now)
  plug $nets || exit 1
  wait $poll
  t_200=$(cut -d' ' -f2 "$T/poll-$nets")
  # the monitor's timestamp of the update that shows the port up=true
  t_up=$(awk -v l="\"$lsp\"" '/^20[0-9][0-9]-/ { ts = $1 " " $2 } $0 ~ l && $NF == "true" && !x { print ts; x = 1 }' "$T/sb-monitor.txt")
  t_up=$(date -u -d "$t_up UTC" +%s.%N)
  res "(a) trial $trial: plug -> SB up=true $(ms "$t_plug" "$t_up") ms; up=true -> first 200 in the VM $(ms "$t_up" "${t_200:-0}") ms (plug -> 200: $(ms "$t_plug" "${t_200:-0}") ms)"
  nets=$((nets + 1))
done
kill $monitor
monitor=""

# ---------------------------------------------------------------- (b) B networks at once
add_nets "$batch" $nets "$batch_sample" || exit 1
mapfile -t sample <"$T/sample-$nets"
/usr/bin/python3 "$root/bench/metadata/vm_poll.py" --period-ms 50 --connect-timeout-ms 40 \
  --timeout-s 120 "${sample[@]}" >"$T/poll-$nets" 2>"$T/poll-$nets.err" &
poll=$!
total=$((nets + batch))
watch "$T/watch-$nets" --bound $total --ready $total --timeout-s 120
t_plug=$(now)
plug $nets || exit 1
t_plugged=$(now)
wait "$watcher" || log "WARNING: not all bound or ready within 120 s"
t_bound=$(seen "$T/watch-$nets" bound)
t_ready=$(seen "$T/watch-$nets" ready)
wait $poll
t_last=$(tail -n1 "$T/poll-$nets" | cut -d' ' -f2)
res "(b) $batch networks plugged at once (ovs-vsctl took $(ms "$t_plug" "$t_plugged") ms): all bound (SB) +$(ms "$t_plug" "$t_bound") ms, agent ready=$total +$(ms "$t_plug" "$t_ready") ms, $(wc -l <"$T/poll-$nets")/${#sample[@]} VMs answered, the last +$(ms "$t_plug" "${t_last:-0}") ms (first +$(ms "$t_plug" "$(head -n1 "$T/poll-$nets" | cut -d' ' -f2)") ms)"
res "(d) VmRSS with $total namespaces: $(rss_kb) kB ($(rss_split)), threads $(ls /proc/$agent_pid/task | wc -l)"
nets=$total
fi

# ---------------------------------------------------------------- (c) start-up with S networks
if ((startup > nets)); then
  stop_agent
  more=$((startup - nets))
  t0=$(now)
  add_nets $more $nets "$startup_sample" || exit 1
  plug $nets || exit 1
  wait_for 300 bound_at_least $startup || { log "only $(bound_count) bound"; exit 1; }
  log "$more more networks made and bound in $(ms "$t0" "$(now)") ms"
  nets=$startup
fi
mapfile -t sample < <(cat "$T"/sample-*)
# cold: remove every ovnmeta-* (and its OVS port) the previous agent made
remove_metadata() {
  stop_agent
  t0=$(now)
  # (one awk over the networks' info files: a shell loop forking per network took a minute)
  awk -F= '$1 == "metadata_netns" { print "netns " $2 } $1 == "metadata_tap_host" { print "tap " $2 }' \
    "$CH"/net/*/info | while read -r kind name; do
    if [[ $kind == netns ]]; then
      [[ -e /run/netns/$name ]] && ip netns del "$name"
    else
      echo "-- --if-exists del-port br-int $name"
    fi
  done >"$T/unplug"
  # shellcheck disable=SC2046
  _okof_vsctl $(cat "$T/unplug") || exit 1
  # a deleted namespace takes its veths down asynchronously: wait until no tap<net>0 is left
  taps_gone() { ! _okof_hv_ip -br link | grep -qE "^tap($(ls "$CH/net" | cut -c1-10 | paste -sd'|' -))0"; }
  wait_for 120 taps_gone || log "WARNING: old metadata veths still present"
  log "removed the old ovnmeta namespaces in $(ms "$t0" "$(now)") ms"
  settle
}
# ports: the namespaces stay, only their OVS ports go (what OVS and OVN alone take to add and
# bind 1,000 ports: the floor under a cold start on this chassis)
remove_ports() {
  stop_agent
  awk -F= '$1 == "metadata_tap_host" { print "-- --if-exists del-port br-int " $2 }' \
    "$CH"/net/*/info >"$T/unplug"
  # shellcheck disable=SC2046
  _okof_vsctl $(cat "$T/unplug") || exit 1
  settle
}
# settle: wait until the machine is idle, so that the kernel's teardown of the
# namespaces just deleted (cleanup_net runs in kworkers for seconds after `ip netns del`) does not
# run into the start being measured. At most 60 s.
settle() {
  local t0 a b busy
  t0=$(now)
  read -r _ a < <(awk '/^cpu / {print $5 + $6, $2 + $3 + $4 + $7 + $8}' /proc/stat)
  for _ in $(seq 120); do
    sleep 0.5 # sampling period of an idleness check, not a synchronisation
    read -r _ b < <(awk '/^cpu / {print $5 + $6, $2 + $3 + $4 + $7 + $8}' /proc/stat)
    busy=$((b - a))
    a=$b
    # busy jiffies in 0.5 s, all CPUs: below 20 (of 100 on 2 CPUs at 100 Hz) counts as idle
    ((busy < 20)) && break
  done
  log "machine idle after $(ms "$t0" "$(now)") ms"
}
# The starts take seconds: 100 ms resolution, and the harness' forks stay out of the way.
poll_period=0.1
bins=(${AGENT_BINS:-${OKNA_AGENT_BIN:-$root/build/agent/openkeel-node-agent}})
for round in $(seq "$rounds"); do
  for bin in "${bins[@]}"; do
    export OKNA_AGENT_BIN=$bin
    remove_metadata
    ((${#bins[@]} > 1 || rounds > 1)) && res "(c) round $round, agent $bin"
    for mode in $modes; do
      [[ $mode == warm ]] && stop_agent
      [[ $mode == ports ]] && remove_ports
      # The sampled VMs ask every $startup_poll_ms ms (cloud-init retries about once a second):
      # each attempt before the flows exist is an upcall in ovs-vswitchd, and 223 VMs at 50 ms
      # were ~4,500 upcalls a second taken from the start being measured.
      /usr/bin/python3 "$root/bench/metadata/vm_poll.py" --period-ms "$startup_poll_ms" \
        --connect-timeout-ms $((startup_poll_ms * 3 / 4)) --timeout-s 180 "${sample[@]}" \
        >"$T/poll-$mode" 2>"$T/poll-$mode.err" &
      poll=$!
      cpu0=$(daemon_cpu)
      t0=$(now)
      start_agent
      watch "$T/watch-$mode" --readyz --ready "$nets" --timeout-s 180
      perf_pid=""
      if [[ -n "${PERF_SECONDS:-}" ]]; then  # a CPU profile of the agent's start (perf record -g)
        # perf -p follows only the threads that exist when it attaches: wait for all three.
        for _ in $(seq 100); do (($(ls /proc/$agent_pid/task | wc -l) >= 3)) && break; sleep 0.01; done
        perf record -q -g -p "$agent_pid" -o "/tmp/okof-scale-perf-$mode.data" -- sleep "$PERF_SECONDS" \
          >/dev/null 2>&1 & perf_pid=$!
      fi
      sampler=""
      if [[ -n "${SAMPLE_THREADS:-}" ]]; then  # where each agent thread spends the start: state/wchan
        (for _ in $(seq $((SAMPLE_THREADS * 50))); do
           for t in /proc/$agent_pid/task/*; do
             echo "$(cat "$t/comm" 2>/dev/null) $(awk '{print $3}' "$t/stat" 2>/dev/null) $(cat "$t/wchan" 2>/dev/null)"
           done
           sleep 0.02
         done >"$T/samples-$mode") & sampler=$!
      fi
      wait "$watcher" || log "WARNING: the agent was not ready within 180 s"
      t_readyz=$(seen "$T/watch-$mode" readyz)
      t_ready=$(seen "$T/watch-$mode" ready)
      res "(c) $mode start: agent CPU by thread at ready (ms, user+sys): $(thread_cpu)"
      cpu_ready=$(daemon_cpu)
      res "(c) $mode start: other CPU from start to ready (ms): $(delta_cpu "$cpu0" "$cpu_ready")"
      [[ -n "$perf_pid" ]] && wait "$perf_pid" && log "profile: /tmp/okof-scale-perf-$mode.data"
      if [[ -n "$sampler" ]]; then
        kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
        res "(c) $mode start: thread state samples (comm state wchan: count):"
        sort "$T/samples-$mode" | uniq -c | sort -rn | head -15 >&2
      fi
      wait $poll
      t_last=$(tail -n1 "$T/poll-$mode" | cut -d' ' -f2)
      res "(c) $mode start: other CPU from ready to the last sampled VM's answer (ms): $(delta_cpu "$cpu_ready" "$(daemon_cpu)")"
      res "(c) $mode start: sampled VMs answered by +s from start: $(awk -v t0="$t0" '{ n++; s = int($2 - t0); c[s]++ } END { for (k in c) printf "%d:%d ", k, c[k] }' "$T/poll-$mode" | tr ' ' '\n' | sort -n | paste -sd' ' -)"
      res "(c) $mode start with $nets networks: /readyz 200 +$(ms "$t0" "$t_readyz") ms, ready=$nets (metrics) +$(ms "$t0" "$t_ready") ms, $(wc -l <"$T/poll-$mode")/${#sample[@]} sampled VMs answered, the last +$(ms "$t0" "${t_last:-0}") ms"
      res "(d) VmRSS with $nets namespaces ($mode start): $(rss_kb) kB ($(rss_split)), threads $(ls /proc/$agent_pid/task | wc -l)"
    done
  done
done
if [[ -n "${RSS_PROBE:-}" ]] && command -v gdb >/dev/null; then
  # How much of the RSS is freed heap that glibc keeps (malloc_trim gives it back).
  before=$(rss_kb)
  gdb -p "$agent_pid" -batch -ex 'call (int)malloc_trim(0)' -ex 'call (void)malloc_stats()' \
    >/dev/null 2>&1
  res "(d) VmRSS $before kB -> $(rss_kb) kB after malloc_trim(0); heap (malloc_stats, all arenas):"
  grep -A2 '^Total (incl. mmap)' "$T/agent-$agent_n.log" | tail -3 >&2
  grep -E '^(Rss|Pss_Anon|Anonymous|Private_Dirty)' "/proc/$agent_pid/smaps_rollup" >&2
fi
health '/readyz?verbose' >"$T/readyz.txt"
grep -m1 -i 'network' "$T/readyz.txt" >&2
cat "$out"
