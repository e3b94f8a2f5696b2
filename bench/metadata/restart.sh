#!/usr/bin/env bash
# Metadata service benchmark, measure 5: the outage a VM sees while the agent restarts.
# One real OVN chassis (tests/fixtures/ovn/chassis.sh), one network, one VM namespace, a static
# nginx "Nova" on 127.0.0.1:8775 of the chassis namespace, the real agent via agent_slot.sh
# (nsenter --net, host mount namespace, as run.sh does). A poller in the VM namespace GETs
# meta_data.json every 50 ms (new connection each time) and logs "start_epoch status".
# Each trial restarts the agent, in one of two modes:
#   seq      SIGTERM the running agent, start the new one at once (no wait for the exit)
#   overlap  start the new agent, wait until its /readyz is 200, then SIGTERM the old one
# outage = from the last 200 before the restart to the first 200 after it (so a trial without a
# single failed request reads ~one poll period); "fails" = non-200 attempts in between.
#
#   sudo bench/metadata/restart.sh [--trials 5] [--modes "seq overlap"] [--keep]
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

trials=5
modes="seq overlap"
keep=0
while (($#)); do
  case "$1" in
    --trials) trials=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    *) usage ;;
  esac
done
need_root

T=$(mktemp -d /tmp/okof-restart.XXXXXX)
tag=${T##*.}
CH=$T/chassis
poller=""
agents=() # pids of every agent started (normally at most two alive)

cleanup() {
  [[ -n "$poller" ]] && kill "$poller" 2>/dev/null
  local p
  for p in "${agents[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${agents[@]}"; do wait "$p" 2>/dev/null; done
  "$NG" stop "$T/nginx-nova"
  [[ -f "$T/agent-slot/apiserver.pid" ]] && kill "$(cat "$T/agent-slot/apiserver.pid")" 2>/dev/null
  "$C" stop "$CH"
  if [[ "$keep" == 1 ]]; then log "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

url=http://169.254.169.254/openstack/latest/meta_data.json
mkdir -p "$T/www/openstack/latest"
cp "$root/bench/metadata/meta_data.json" "$T/www/openstack/latest/"
"$C" start "$CH" || exit 1
hv_ns=$("$C" info "$CH" hv_netns)
net=$(cat /proc/sys/kernel/random/uuid)
"$C" add-network "$CH" "$net" 10.78.0.0/24 || exit 1
"$C" add-vm "$CH" "$net" "rs-$tag" 10.78.0.11 fa:16:3e:78:00:11 || exit 1
vm_ns=okof-rs-$tag
"$NG" start "$T/nginx-nova" "$hv_ns" 127.0.0.1:8775 static "$T/www" || exit 1
echo -n secret >"$T/shared-secret"
export OKOF_OVS_REMOTE OKOF_SB_REMOTE OKOF_SB_TCP_REMOTE OKOF_CHASSIS OKOF_NET_ID=$net \
  OKOF_NOVA_HOST=127.0.0.1 OKOF_NOVA_PORT=8775 OKOF_SHARED_SECRET_FILE=$T/shared-secret \
  OKOF_BENCH_DIR=$T OKNA_LOG_LEVEL=${OKNA_LOG_LEVEL:-info}
OKOF_OVS_REMOTE=$("$C" info "$CH" ovs_remote)
OKOF_SB_REMOTE=$("$C" info "$CH" sb_remote)
OKOF_SB_TCP_REMOTE=$("$C" info "$CH" sb_tcp_remote)
OKOF_CHASSIS=$("$C" info "$CH" chassis)

# start_agent N: agent number N (log $T/agent-N.log); sets $pid.
start_agent() {
  nsenter --net="/run/netns/$hv_ns" bash -c "exec bash $root/bench/metadata/agent_slot.sh" \
    >"$T/agent-$1.log" 2>&1 &
  pid=$!
  agents+=("$pid")
}
# agent_ready N: agent N's /readyz is 200 (its health port is in its log line "serving ...").
agent_ready() {
  local port
  port=$(grep -o 'serving /healthz.* on 127.0.0.1:[0-9]*' "$T/agent-$1.log" 2>/dev/null | grep -o '[0-9]*$')
  [[ -n "$port" ]] &&
    [[ $(ip netns exec "$hv_ns" curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz") == 200 ]]
}
# wait_for SECONDS CMD...: bounded poll.
wait_for() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do ((SECONDS < deadline)) || return 1; sleep 0.02; done
}
polls=$T/polls.txt
# n_ok_since EPOCH: 200 answers to attempts started after EPOCH.
n_ok_since() { awk -v t="$1" '$1 > t && $2 == 200 { n++ } END { print n + 0 }' "$polls"; }
ok_since() { (($(n_ok_since "$1") >= $2)); }

n=1
start_agent $n
cur=$pid
now=$(date +%s.%N)
# The poller: one curl per attempt (a fresh connection, as cloud-init does), 50 ms apart.
ip netns exec "$vm_ns" bash -c "while :; do t=\$(date +%s.%N); \
  c=\$(curl -s -o /dev/null -w '%{http_code}' --connect-timeout 1 --max-time 2 $url); \
  echo \"\$t \$c\"; sleep 0.05; done" >"$polls" 2>/dev/null &
poller=$!
wait_for 60 ok_since "$now" 5 || { log "the first agent never answered"; tail "$T/agent-1.log" >&2; exit 1; }

results=$T/results.tsv
: >"$results"
for mode in $modes; do
  for ((i = 1; i <= trials; i++)); do
    old=$cur
    n=$((n + 1))
    if [[ $mode == seq ]]; then
      t_restart=$(date +%s.%N)
      kill -TERM "$old"
      start_agent $n
      cur=$pid
    else
      start_agent $n
      cur=$pid
      wait_for 30 agent_ready $n || log "agent $n: /readyz not 200 within 30 s"
      t_restart=$(date +%s.%N)
      kill -TERM "$old"
    fi
    wait_for 10 bash -c "! kill -0 $old 2>/dev/null" || log "agent (pid $old) still alive 10 s after SIGTERM"
    wait "$old" 2>/dev/null
    t_exit=$(date +%s.%N)
    # Settled: ten 200s after the restart (bounded).
    wait_for 30 ok_since "$t_restart" 10 || log "$mode $i: no steady 200s within 30 s"
    awk -v t="$t_restart" -v te="$t_exit" -v mode="$mode" -v i="$i" '
      $1 <= t && $2 == 200 { last = $1 }
      $1 > t && $2 != 200 && !first { fails++ }
      $1 > t && $2 == 200 && !first { first = $1 }
      END { printf "%s\t%d\t%.0f\t%d\t%.0f\n", mode, i, (first - last) * 1000, fails, (te - t) * 1000 }
    ' "$polls" >>"$results"
    log "$mode trial $i: $(tail -n1 "$results" | cut -f3) ms outage, $(tail -n1 "$results" | cut -f4) failed attempts"
  done
done

echo "| mode | trials | outage ms median | max | all (ms) | failed attempts (all) | old agent exit after SIGTERM ms (all) |"
echo "|---|---|---|---|---|---|---|"
for mode in $modes; do
  # outages sorted (mawk has no asort), then median / max and the raw columns in trial order
  sorted=$(grep "^$mode	" "$results" | cut -f3 | sort -n | paste -sd' ' -)
  grep "^$mode	" "$results" | awk -F'\t' -v mode="$mode" -v sorted="$sorted" '
    { f = f (NR > 1 ? " " : "") $4; e = e (NR > 1 ? " " : "") $5; all = all (NR > 1 ? " " : "") $3 }
    END {
      n = split(sorted, s, " ")
      med = (n % 2) ? s[(n + 1) / 2] : (s[n / 2] + s[n / 2 + 1]) / 2
      printf "| %s | %d | **%.0f** | %.0f | %s | %s | %s |\n", mode, n, med, s[n], all, f, e }'
done
echo
echo "Poll attempts: $(wc -l <"$polls"), non-200: $(awk '$2 != 200' "$polls" | wc -l) ($(awk '$2 != 200 {print $2}' "$polls" | sort | uniq -c | tr -s ' ' | paste -sd, -))"
