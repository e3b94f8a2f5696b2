# The preamble the metadata benchmark scripts share (run.sh, restart.sh, scale.sh): where the
# project and the OVN fixtures are, a clean environment, usage and root checks, timestamped log.
# Sourced right after `set -uo pipefail`; BENCH names the script in messages.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
C=$root/tests/fixtures/ovn/chassis.sh
NG=$root/tests/fixtures/ovn/nginx.sh
export PATH="$PATH:/usr/sbin:/sbin"
# Everything goes to loopback or to namespaces the script makes: never through a proxy.
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY
BENCH=$(basename "$0")

# The script's header comment (line 2 to `set -uo`), as usage on a bad argument.
usage() { sed -n '2,/^set -uo/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
need_root() { [[ $(id -u) == 0 ]] || { echo "$BENCH: needs root" >&2; exit 1; }; }
log() { echo "[$BENCH $(date -u +%T.%3N)] $*" >&2; }
