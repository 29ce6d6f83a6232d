#!/usr/bin/env bash
# The whole benchmark in one command, on the GPU machine: builds parascan_bench_cuda, runs it, then the
# peers (bench/peers.py, accelerated-scan installed offline from the wheels carried in .wheels/), then
# bench/plot.py. Everything lands under $OUT: bench.json bench.log peers.json peers.log bench.png table.md
# matrix-peers.json, peers-logs.tar.gz (each peer subprocess's output), and build/configure logs. The
# side-by-side markdown table is printed last.
#
#   COMMIT=<sha> OUT=<dir> bench/run_gpu.sh [build-dir] [bench args...]
#
# build-dir: default build/bench (configured with the gpu preset when it has no CMakeCache.txt; staged
# dependencies in .deps/usr are used when present). Bench args go to parascan_bench_cuda; --quick and
# --filter X are passed on to peers.py too. The tree on the GPU machine has no .git: give the commit as
# COMMIT (else "unknown"). PEERS=0 skips the peers; WHEELS=<dir> changes the wheel folder (.wheels);
# BENCH_BIN=<path> runs a parascan_bench_cuda built elsewhere (a single nvcc job: building it here gains
# little over carrying it) instead of building one.
# Exit status: the C++ bench's (non-zero when a case failed its check or crashed).
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/bench}
[ $# -gt 0 ] && shift
out=${OUT:-$build/bench-out}
commit=${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
wheels=${WHEELS:-.wheels}
mkdir -p "$out"
rm -f "$out/bench.json" "$out/peers.json" "$out/bench.png" "$out/table.md"

bench=${BENCH_BIN:-$build/bench/parascan_bench_cuda}
if [ -z "${BENCH_BIN:-}" ]; then
  prefix=()
  [ -d .deps/usr ] && prefix=(-DCMAKE_PREFIX_PATH="$PWD/.deps/usr")
  if [ ! -f "$build/CMakeCache.txt" ]; then
    echo "== configure $build"
    sweeps=OFF  # --sweep needs its cases compiled in (-DPARASCAN_BUILD_SWEEPS=ON, a longer build)
    for a in "$@"; do [ "$a" = --sweep ] && sweeps=ON; done
    cmake --preset gpu -B "$build" "${prefix[@]}" -DPARASCAN_BUILD_TESTS=OFF -DPARASCAN_BUILD_EXAMPLES=OFF \
      -DPARASCAN_BUILD_SWEEPS=$sweeps \
      >"$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
  fi
  echo "== build parascan_bench_cuda"
  cmake --build "$build" -j"$(nproc)" --target parascan_bench_cuda >"$out/build.log" 2>&1 ||
    { grep -E "error" "$out/build.log" | head -40; exit 1; }
fi

echo "== $bench $*"
"$bench" --json "$out/bench.json" --commit "$commit" "$@" 2>&1 | tee "$out/bench.log"
bench_rc=${PIPESTATUS[0]}

files=()
[ -s "$out/bench.json" ] && files+=("$out/bench.json")
if [ "${PEERS:-1}" != 0 ]; then
  peer_args=()
  args=("$@")
  for ((i = 0; i < ${#args[@]}; ++i)); do
    case "${args[i]}" in
      --quick) peer_args+=(--quick) ;;
      --filter) peer_args+=(--filter "${args[i + 1]:-}") ;;
    esac
  done
  copy=$(python3 -c 'import json, sys
r = [x for x in json.load(open(sys.argv[1])) if isinstance(x.get("copy_gbs"), (int, float))]
print(r[0]["copy_gbs"] if r else "")' "$out/bench.json" 2>/dev/null)
  [ -n "$copy" ] && peer_args+=(--copy-gbs "$copy")
  echo "== peers.py ${peer_args[*]}"
  python3 bench/peers.py --wheels "$wheels" --json "$out/peers.json" --commit "$commit" "${peer_args[@]}" 2>&1 |
    tee "$out/peers.log"
  [ -s "$out/peers.json" ] && files+=("$out/peers.json")
  # Each peer subprocess's output, one archive (a folder of dozens of logs made the GPU machine's copy-back
  # drop the run's other files, peers.json and table.md among them, on 2026-12-01).
  if [ -d "$out/peers.json.logs" ]; then
    tar -czf "$out/peers-logs.tar.gz" -C "$out" peers.json.logs && rm -rf "$out/peers.json.logs"
  fi
  echo "== matrix_peers.py (torch_parallel_scan's method on the matrix cases)"
  python3 bench/matrix_peers.py --json "$out/matrix-peers.json" --commit "$commit" ${copy:+--copy-gbs "$copy"} 2>&1 |
    tee "$out/matrix-peers.log"
fi

if [ ${#files[@]} -gt 0 ]; then
  python3 bench/plot.py "${files[@]}" --png "$out/bench.png" --markdown "$out/table.md" >/dev/null ||
    python3 bench/plot.py "${files[@]}" --markdown "$out/table.md" >/dev/null  # no matplotlib: the table only
  printf '\nCommand: `COMMIT=%s bench/run_gpu.sh %s %s` (%s)\n' "$commit" "$build" "$*" "$(date -u +%Y-%m-%dT%H:%MZ)" \
    >>"$out/table.md"
  echo
  echo "== side by side ($out/table.md)"
  cat "$out/table.md"
fi
exit "$bench_rc"
