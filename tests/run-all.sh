#!/usr/bin/env bash
# Runs every test the way CI does: installs the Debian packages, checks the format, builds, runs
# the integration suites (ctest), the unit tests and the agent's own network code under ASan/UBSan, the tests where threads meet (the IDL thread, the metadata service's loop and
# namespace worker, netns/) under ThreadSanitizer, core/ and its unit tests against Boost 1.81,
# and the libFuzzer targets (tests/fuzz) for a bounded time each on a copy of their seed corpus.
#
# Two lines run side by side once the main tree is built: its ctest (mostly waiting on daemons
# and sockets), and at a lower priority (nice) the other trees' compiles, each of which builds
# only the targets it runs; each checking tree's tests run beside the next tree's compile. The
# unit tests are compiled once, in the ASan/UBSan tree where they run (the main tree builds the
# integration tests, the agent and unit_agent; its libraries with line tables only, -g1). The
# compiler cache (ccache, on by default: CMakeLists.txt) serves every tree compiled before with
# the same flags, also from a clone in another directory. The sanitizer trees reuse the main
# tree's libopenvswitch (OKNA_OVS_FROM). bench/build/RESULTS.md has the figures. Run on a
# developer's tree, it configures build/ with those flags (cmake -U OKNA_UNIT_TESTS... undoes it).
#   JOBS=N         parallel build jobs (default: nproc)
#   CTEST_JOBS=N   tests the main tree's ctest runs at once (default: 2 x nproc; the tests that
#                  share something hold a RESOURCE_LOCK or are RUN_SERIAL)
#   SKIP_ASAN=1    skip the sanitizer trees, the Boost 1.81 tree and the fuzz phase (the main
#                  tree then builds and runs every unit test)
#   SKIP_FUZZ=1    skip only the fuzz phase (the libFuzzer targets of tests/fuzz, built with clang)
#   FUZZ_SECONDS=N how long each fuzz target runs (default 30; the two run at the same time)
#   ALLOW_SKIPS=1  list the tests that skipped without failing (a machine without every daemon)
# It installs every daemon the tests start, so here a skipped test is a failure: it would hide a
# missing piece behind a green run. The run ends with the list of tests that did not run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
jobs=${JOBS:-$(nproc)}
ctest_jobs=${CTEST_JOBS:-$((2 * $(nproc)))}
reports=$(mktemp -d /tmp/okna-ctest-XXXXXX)
mkdir -p "$reports/logs"

# Each phase's start and wall seconds, and at the end (also after a failure) a table of them and
# the ten slowest tests, so that the change that makes CI slower shows in the run that makes it.
# Phases of the two lines overlap: the table gives each one's start (seconds into the run).
phase_file="$reports/phases"
: >"$phase_file"
# phase NAME COMMAND...: runs COMMAND as one phase, recorded whether it passes or fails. A phase
# is called in a `||`/`&&` list, where bash ignores `set -e`: each phase's steps chain their
# statuses themselves.
phase() {
  local name=$1 start=$SECONDS status=0
  shift
  echo "== $name =="
  "$@" || status=$?
  printf '%d\t%d\t%s%s\n' "$start" $((SECONDS - start)) "$name" \
    "$( ((status == 0)) || echo " (FAILED, exit $status)")" >>"$phase_file"
  return "$status"
}
summary() {
  echo "== phases (wall seconds; the two lines after the main build overlap) =="
  printf '%6s  %6s  %s\n' start wall phase
  sort -n "$phase_file" | while IFS=$'\t' read -r start secs name; do
    printf '%6d  %6d  %s\n' "$start" "$secs" "$name"
  done
  printf '%6s  %6d  total\n' "" "$SECONDS"
  if compgen -G "$reports/*.xml" >/dev/null; then
    python3 - "$reports"/*.xml <<'PY'
import sys
import xml.etree.ElementTree as ET
cases = []
counts = {"passed": 0, "failed": 0, "skipped": 0}
for path in sys.argv[1:]:
    for case in ET.parse(path).iter("testcase"):
        cases.append((float(case.get("time") or 0), case.get("name")))
        status = case.get("status", "")
        if status == "run":
            counts["failed" if case.find("failure") is not None else "passed"] += 1
        elif status == "fail":
            counts["failed"] += 1
        else:
            counts["skipped"] += 1
print("== the ten slowest tests (seconds) ==")
for seconds, name in sorted(cases, reverse=True)[:10]:
    print("%8.1f  %s" % (seconds, name))
print("== test runs, all trees: %(passed)d passed, %(failed)d failed, %(skipped)d skipped ==" % counts)
PY
  fi
}
background=()
# After a failure the table still shows how far the run got; a passing run prints it before its
# last line. A line still running in the background is stopped (its process group).
cleanup() {
  local status=$? pid
  for pid in "${background[@]}"; do kill -- "-$pid" 2>/dev/null || true; done
  ((status == 0)) || summary
  rm -rf "$reports"
}
trap cleanup EXIT
set -m  # each background line in a process group of its own (stopped whole by cleanup)

# ctest, with a JUnit report per run (a file of its own: runs happen in parallel lines): ctest
# itself counts a skip as no failure.
run_ctest() {
  local report
  report=$(mktemp "$reports/run-XXXXXX.xml")
  ctest --output-junit "$report" "$@"
}

phase "install (packaging/install-deps.sh)" bash packaging/install-deps.sh

phase "clang-format" bash -c "git ls-files '*.cc' '*.h' '*.c' | xargs clang-format --dry-run --Werror"

build_main() {
  # Line tables only (-g1) instead of -g: GCC's code does not depend on -g (what -fcompare-debug
  # checks), so these tests run the machine code the release build (packaging/Dockerfile, -O2 -g)
  # ships, for a third less compile time. The unit tests are built (and run) in the ASan/UBSan
  # tree, all but unit_agent: its EMFILE test cannot run under UBSan (see asan_tests).
  local unit=unit_agent
  [[ "${SKIP_ASAN:-0}" == 1 ]] && unit=all
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DOKNA_UNIT_TESTS=$unit" \
    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" &&
    cmake --build build -j "$jobs"
}
phase "build (RelWithDebInfo)" build_main

# The main tree's tests, in the background; their output is printed whole when they end.
main_tests() {
  run_ctest --test-dir build --output-on-failure --timeout 600 -j "$ctest_jobs"
}
main_log="$reports/logs/main-tests.log"
(
  phase "integration tests and unit_agent (ctest -j $ctest_jobs)" main_tests
) >"$main_log" 2>&1 &
main_pid=$!
background+=("$main_pid")

# The other trees, below the main tests' priority (they wait on daemons, these compile), one
# after the other; each tree's tests start as soon as it is built and run beside the next tree's
# compile (the "side" phases: tests wait on sockets and timers, a compile fills the gaps). A
# failure is recorded and the run goes on (without the tests of a tree that did not build), so
# that one run shows every failure.
nice_build() { nice -n 10 cmake --build "$@" -j "$jobs"; }
failed=()
# The checking trees compile the libraries as larger unity files than the main tree (less CPU;
# the main tree's batches are smaller so that its clean build keeps both cores busy to the end).
san_flags=(-DCMAKE_UNITY_BUILD=ON -DOKNA_LIB_UNITY_BATCH=8)
side_pids=()
# side NAME FAILURE COMMAND...: phase NAME in the background; its output is printed when it ends,
# FAILURE is recorded if it fails.
side() {
  local name=$1 failure=$2 log
  shift 2
  log="$reports/logs/side-${#side_pids[@]}.log"
  ( phase "$name" "$@" || echo "$failure" >>"$reports/failed" ) >"$log" 2>&1 &
  side_pids+=($!)
  background+=($!)
}

build_asan() {
  # OVS is C code built by its own Makefiles: the sanitizer build links the same library
  # unsanitized. Only what runs here: the unit tests, the agent and its k8s integration tests.
  # Line tables only (-g1: file:line in the reports) and unity files for the libraries too.
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DOKNA_SANITIZE=ON \
    -DOKNA_OVS_FROM=build "${san_flags[@]}" -DCMAKE_C_FLAGS_DEBUG=-g1 \
    -DCMAKE_CXX_FLAGS_DEBUG=-g1 &&
    nice_build build-asan --target unit_core unit_k8s unit_agent unit_placement unit_netns \
    unit_metadata unit_ovsdb unit_chassis integration_agent_k8s openkeel-node-agent
}
asan_tests() {
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  # Two tests fill the process's descriptor table on purpose (EMFILE): there UBSan's vptr
  # check, which probes memory through pipe(), cannot get a descriptor and reports a false
  # "invalid vptr" on a shared_ptr control block (a runtime suppression cannot name it: the
  # check fails before it knows the type). LiveServer's runs in the main tree (unit_agent),
  # ServerTest's under ThreadSanitizer (unit_metadata).
  local status=0
  run_ctest --test-dir build-asan -L unit --output-on-failure -j "$ctest_jobs" \
    -E '^(LiveServer\.AcceptErrorsAreRetriedAfterABackoff|ServerTest\.OutOfFileDescriptorsTheListenerBacksOffAndRecovers)$' ||
    status=1
  # The agent binary's own network code (curl on Asio, informers) under the sanitizers too.
  run_ctest --test-dir build-asan -R '^AgentK8sTest' --output-on-failure -j "$jobs" || status=1
  return "$status"
}
build_tsan() {
  # The IDL thread and the loop thread share the mailbox and the snapshots (integration_chassis
  # and integration_metadata_view, the in-process reconciler against a real ovsdb-server); the
  # metadata service's loop thread and namespace worker (unit_metadata), and netns/'s worker
  # thread (unit_netns).
  # -O1 -g1: ThreadSanitizer's own advice is -O1 or more; line tables for the reports.
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOKNA_TSAN=ON \
    -DOKNA_OVS_FROM=build "${san_flags[@]}" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DOKNA_TEST_OPTIMIZE= &&
    nice_build build-tsan --target integration_chassis integration_metadata_view unit_metadata \
      unit_netns
}
tsan_tests() {
  # (The drain timeout is tested in simulated time, tests/unit/chassis/chassis_reconciler_test.cc,
  # so no test here is bounded by wall time that TSan's slowdown could exceed.)
  export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
  local status=0
  run_ctest --test-dir build-tsan --output-on-failure -j "$jobs" \
    -R '^(ChassisReconcilerTest|GatewayDrainTest|MetadataViewTest)\.' -L integration || status=1
  run_ctest --test-dir build-tsan --output-on-failure -j "$jobs" -L unit || status=1
  return "$status"
}
build_boost181() {
  # core/ and its unit tests against Boost 1.81 (Debian 12's newer Boost; Debian 13 has 1.83):
  # the portable DrainAwareSocket. Its headers are unpacked into build-boost181/boost
  # (packaging/boost181-headers.sh: libboost1.81-dev conflicts with the installed 1.74).
  local prefix
  prefix=$(bash packaging/boost181-headers.sh build-boost181/boost) &&
    cmake -S . -B build-boost181 -G Ninja -DCMAKE_BUILD_TYPE=Debug -DOKNA_WITH_OVS=OFF \
      "-DBoost_DIR=$(echo "$prefix"/lib/*/cmake/Boost-1.81.0)" "${san_flags[@]}" \
      -DCMAKE_C_FLAGS_DEBUG=-g1 -DCMAKE_CXX_FLAGS_DEBUG=-g1 &&
    nice_build build-boost181 --target unit_core
}
build_fuzz() {
  # A clang tree of its own that builds only the fuzz targets (tests/fuzz/README.md).
  cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOKNA_FUZZ=ON \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ &&
    nice_build build-fuzz
}
fuzz_one() {
  local target=$1 work="$reports/fuzz-$1" fuzz_status=0 fuzz_runs fuzz_rate
  mkdir -p "$work" && cp -r "tests/fuzz/corpus/$target" "$work/corpus" || return 1
  # -timeout: one input running that long is a failure (a hang), not a slow run.
  "build-fuzz/tests/fuzz/${target}_fuzz" -max_total_time="$fuzz_seconds" -timeout=25 \
    -print_final_stats=1 -artifact_prefix="$root/build-fuzz/fuzz-artifacts/$target-" \
    "$work/corpus" >"$work/log" 2>&1 || fuzz_status=$?
  fuzz_runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
  fuzz_rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/log")
  if ((fuzz_status != 0)); then
    tail -n 80 "$work/log"
    echo "fuzz: ${target}_fuzz failed (exit $fuzz_status) after ${fuzz_runs:-?} runs; the" \
      "input is in build-fuzz/fuzz-artifacts/ (tests/fuzz/README.md: reproduce, add to corpus)"
    return 1
  fi
  echo "fuzz: ${target}_fuzz: ${fuzz_runs:-?} runs in ${fuzz_seconds} s (${fuzz_rate:-?}/s)," \
    "no crash, $(find "$work/corpus" -type f | wc -l) inputs in its corpus at the end"
}
fuzz_all() {
  # Each target on a copy of its seed corpus (the repository's is never changed); an input
  # that breaks an invariant or trips a sanitizer is kept in build-fuzz/fuzz-artifacts/. The
  # two run at the same time, one core each.
  fuzz_seconds=${FUZZ_SECONDS:-30}
  mkdir -p build-fuzz/fuzz-artifacts || return 1
  local pids=() target status=0 pid
  for target in request_path sb_view; do
    fuzz_one "$target" >"$reports/logs/fuzz-$target.log" 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
  cat "$reports"/logs/fuzz-*.log
  return "$status"
}

if [[ "${SKIP_ASAN:-0}" != 1 ]]; then
  if phase "build (ASan/UBSan, Debug: unit tests, agent, integration_agent_k8s)" build_asan; then
    side "unit tests and AgentK8sTest under ASan/UBSan" "the tests under ASan/UBSan" asan_tests
  else
    failed+=("the ASan/UBSan build")
  fi
  if phase "build (ThreadSanitizer: integration_chassis, integration_metadata_view, unit_metadata, unit_netns)" build_tsan; then
    side "IDL thread, metadata and netns unit tests under ThreadSanitizer" \
      "the tests under ThreadSanitizer" tsan_tests
  else
    failed+=("the ThreadSanitizer build")
  fi
  if phase "build (Boost 1.81: core/, unit_core)" build_boost181; then
    side "core/ unit tests against Boost 1.81" "the core/ unit tests against Boost 1.81" \
      run_ctest --test-dir build-boost181 -L unit --output-on-failure -j "$jobs"
  else
    failed+=("the Boost 1.81 build")
  fi
fi

if [[ "${SKIP_ASAN:-0}" != 1 && "${SKIP_FUZZ:-0}" != 1 ]]; then
  if phase "build (libFuzzer targets, clang)" build_fuzz; then
    phase "fuzz (libFuzzer, bounded, the two targets at once)" fuzz_all || failed+=("the fuzz run")
  else
    failed+=("the libFuzzer build")
  fi
fi

# The side phases: wait for them, print their output.
for pid in "${side_pids[@]}"; do wait "$pid" || true; done
if ((${#side_pids[@]})); then
  echo "== the checking trees' tests (they ran beside the next compile) =="
  cat "$reports"/logs/side-*.log
fi
if [[ -s "$reports/failed" ]]; then
  while IFS= read -r line; do failed+=("$line"); done <"$reports/failed"
fi

# The main tree's tests: wait for them, print their output.
main_status=0
wait "$main_pid" || main_status=$?
background=()
echo "== the main tree's tests (they ran in the background) =="
cat "$main_log"
((main_status == 0)) || failed+=("the main tree's tests")

# Last, so that one run shows every failure: the tests that skipped.
allow=()
[[ "${ALLOW_SKIPS:-0}" == 1 ]] && allow=(--allow)
phase "skipped-test check" python3 tests/check-skips.py "${allow[@]}" "$reports"/*.xml ||
  failed+=("the skipped-test check")
if ((${#failed[@]})); then
  printf 'run-all: FAILED: %s\n' "${failed[@]}"
  exit 1
fi
summary
echo "run-all: all tests passed"
