#!/usr/bin/env bash
# Runs every test the way CI does: installs the Debian packages, builds, runs the unit and
# integration suites (ctest), then builds the unit tests again under ASan/UBSan and runs them, and
# the tests that start the OVSDB IDL thread under ThreadSanitizer. The sanitizer trees reuse the
# main tree's libopenvswitch (OKNA_OVS_FROM). Last, the libFuzzer targets (tests/fuzz) run for a
# bounded time each on a copy of their seed corpus.
#   JOBS=N        parallel build jobs (default: nproc)
#   SKIP_ASAN=1   skip the sanitizer builds and the fuzz phase (quicker local runs)
#   SKIP_FUZZ=1   skip only the fuzz phase (the libFuzzer targets of tests/fuzz, built with clang)
#   FUZZ_SECONDS=N how long each fuzz target runs (default 60)
#   ALLOW_SKIPS=1 list the tests that skipped without failing (a machine without every daemon)
# It installs every daemon the tests start, so here a skipped test is a failure: it would hide a
# missing piece behind a green run. The run ends with the list of tests that did not run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
jobs=${JOBS:-$(nproc)}
reports=$(mktemp -d /tmp/okna-ctest-XXXXXX)

# Each phase's wall time, and at the end (also after a failure) a table of them and the ten
# slowest tests, so that the change that makes CI slower shows in the run that makes it.
phase_names=()
phase_secs=()
phase_name=""
phase_start=$SECONDS
phase() {
  if [[ -n "$phase_name" ]]; then
    phase_names+=("$phase_name")
    phase_secs+=($((SECONDS - phase_start)))
  fi
  phase_name=$1
  phase_start=$SECONDS
  [[ -n "$phase_name" ]] && echo "== $phase_name =="
  return 0
}
summary() {
  phase ""
  echo "== phases (wall seconds) =="
  local i
  for i in "${!phase_names[@]}"; do
    printf '%6d  %s\n' "${phase_secs[$i]}" "${phase_names[$i]}"
  done
  printf '%6d  total\n' "$SECONDS"
  if compgen -G "$reports/*.xml" >/dev/null; then
    echo "== the ten slowest tests (seconds) =="
    python3 - "$reports"/*.xml <<'PY'
import sys
import xml.etree.ElementTree as ET
cases = []
for path in sys.argv[1:]:
    for case in ET.parse(path).iter("testcase"):
        cases.append((float(case.get("time") or 0), case.get("name")))
for seconds, name in sorted(cases, reverse=True)[:10]:
    print("%8.1f  %s" % (seconds, name))
PY
  fi
}
# After a failure the table still shows how far the run got; a passing run prints it before its
# last line.
trap 'status=$?; ((status == 0)) || summary; rm -rf "$reports"' EXIT

runs=0
# ctest, with a JUnit report per run: ctest itself counts a skip as no failure.
run_ctest() {
  runs=$((runs + 1))
  ctest --output-junit "$reports/$runs.xml" "$@"
}

phase "install (packaging/install-deps.sh)"
bash packaging/install-deps.sh

phase "clang-format"
git ls-files '*.cc' '*.h' '*.c' | xargs clang-format --dry-run --Werror

phase "build (RelWithDebInfo)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j "$jobs"

phase "unit and integration tests"
run_ctest --test-dir build --output-on-failure --timeout 600

if [[ "${SKIP_ASAN:-0}" != 1 ]]; then
  phase "build (ASan/UBSan, Debug)"
  # OVS is C code built by its own Makefiles: the sanitizer build links the same library unsanitized.
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DOKNA_SANITIZE=ON -DOKNA_OVS_FROM=build
  cmake --build build-asan -j "$jobs"
  phase "unit tests under ASan/UBSan"
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  # Two tests fill the process's descriptor table on purpose (EMFILE): there UBSan's vptr check,
  # which probes memory through pipe(), cannot get a descriptor and reports a false "invalid
  # vptr" on a shared_ptr control block. They run in the main tree above, not here.
  run_ctest --test-dir build-asan -L unit --output-on-failure \
    -E '^(LiveServer\.AcceptErrorsAreRetriedAfterABackoff|ServerTest\.OutOfFileDescriptorsTheListenerBacksOffAndRecovers)$'
  # The agent binary's own network code (curl on Asio, informers) under the sanitizers too.
  run_ctest --test-dir build-asan -R '^AgentK8sTest' --output-on-failure

  phase "build (ThreadSanitizer: integration_ovsdb)"
  # The IDL thread and the loop thread share the mailbox and the snapshots: the in-process
  # reconciler tests against a real ovsdb-server (integration_ovsdb), nothing else is built.
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOKNA_TSAN=ON \
    -DOKNA_OVS_FROM=build
  cmake --build build-tsan -j "$jobs" --target integration_ovsdb
  phase "the tests that start the IDL thread, under ThreadSanitizer"
  # (The drain timeout is tested in simulated time, tests/unit/ovsdb/chassis_reconciler_test.cc,
  # so no test here is bounded by wall time that TSan's slowdown could exceed.)
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" run_ctest --test-dir build-tsan \
    -R '^(ChassisReconcilerTest|GatewayDrainTest|MetadataViewTest)\.' --output-on-failure
fi

if [[ "${SKIP_ASAN:-0}" != 1 && "${SKIP_FUZZ:-0}" != 1 ]]; then
  phase "build (libFuzzer targets, clang)"
  # A clang tree of its own that builds only the fuzz targets (tests/fuzz/README.md). Each runs
  # on a copy of its seed corpus, so the repository's corpus is never changed; an input that
  # breaks an invariant or trips a sanitizer is kept in build-fuzz/fuzz-artifacts/.
  cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOKNA_FUZZ=ON \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
  cmake --build build-fuzz -j "$jobs"
  phase "fuzz (libFuzzer, bounded)"
  fuzz_seconds=${FUZZ_SECONDS:-60}
  mkdir -p build-fuzz/fuzz-artifacts
  for target in request_path sb_view; do
    work="$reports/fuzz-$target"
    mkdir -p "$work"
    cp -r "tests/fuzz/corpus/$target" "$work/corpus"
    fuzz_status=0
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
      exit 1
    fi
    echo "fuzz: ${target}_fuzz: ${fuzz_runs:-?} runs in ${fuzz_seconds} s (${fuzz_rate:-?}/s)," \
      "no crash, $(find "$work/corpus" -type f | wc -l) inputs in its corpus at the end"
  done
fi
# Last, so that one run shows every failure: the tests that skipped.
phase "skipped-test check"
allow=()
[[ "${ALLOW_SKIPS:-0}" == 1 ]] && allow=(--allow)
python3 tests/check-skips.py "${allow[@]}" "$reports"/*.xml
summary
echo "run-all: all tests passed"
