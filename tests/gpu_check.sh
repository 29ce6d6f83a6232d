#!/usr/bin/env bash
# Builds and runs the GPU test suite on a CUDA machine, then compute-sanitizer (memcheck, racecheck) on
# it (tests/gpu_sanitize.sh), then the CUDA benchmark.
# Usage: tests/gpu_check.sh [build-dir] [ctest -R regex] [bench args]
# SANITIZE=regex limits the sanitizer runs to matching test executables (SANITIZE=none skips them).
# With dependencies staged in .deps (../shared/device/stage-deps.sh) they are found there.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/gpu}
filter=${2:-.}
out=${OUT:-$build}
mkdir -p "$out"
prefix=()
[ -d .deps/usr ] && prefix=(-DCMAKE_PREFIX_PATH="$PWD/.deps/usr")
cmake --preset gpu -B "$build" "${prefix[@]}" >"$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
targets=$(ctest --test-dir "$build" -N -L gpu 2>/dev/null | sed -n 's/^ *Test *#[0-9]*: //p' | grep -E "$filter" || true)
cmake --build "$build" -j"$(nproc)" --target $targets parascan_bench_cuda parascan_example_quickstart >"$out/build.log" 2>&1 || { grep -E "error" "$out/build.log" | head -40; exit 1; }
echo "== GPU tests"
ctest --test-dir "$build" -L gpu -R "$filter" --output-on-failure 2>&1 | tee "$out/ctest.log" | tail -40
echo "== quickstart"
"$build/examples/parascan_example_quickstart" 2>&1 | tail -4
echo "== compute-sanitizer (memcheck, racecheck; tests/gpu_sanitize.sh: a job a test case and tool)"
if [ "${SANITIZE:-}" != none ]; then
  OUT="$out/sanitize" FILTER="${SANITIZE:-$filter}" tests/gpu_sanitize.sh "$build" memcheck racecheck | tail -20
fi
echo "== bench"
"$build/bench/parascan_bench_cuda" "${@:3}" 2>&1 | tee "$out/bench.log"
