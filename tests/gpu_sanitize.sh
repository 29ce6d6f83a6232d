#!/usr/bin/env bash
# The GPU suite under compute-sanitizer, every test case of every GPU test executable under each tool, one
# job a (test case, tool), run in parallel over the machine's cores and GPUs: the sanitizers are
# CPU-bound, and a whole executable under racecheck outlasts any sensible limit.
#
#   tests/gpu_sanitize.sh [build-dir] [tools...]       (default: build/gpu; memcheck racecheck initcheck synccheck)
#
# The executables must be built (tests/gpu_check.sh or `cmake --build --preset gpu`). Environment:
#   JOBS     parallel jobs (default: the core count less two)
#   GPUS     GPUs to spread them over (default: every visible one)
#   LIMIT    seconds a job may run (default 600)
#   FILTER   regex over executable names; LABEL: their ctest label (default gpu)
#   EXECUTABLES  the test executables' paths (space-separated), instead of the build directory's ctest list
#   ALL_GPUS regex of the executables whose jobs see every GPU (default test_device_memory: its
#            other-device cases need two; the rest get one GPU each, round robin)
#   OUT      where the logs go (default: build-dir/sanitize)
#   RESUME=1 keep $OUT/results.txt and run only the jobs it lacks (a run cut short goes on)
#   KERNELS  instrument only kernels whose name holds this (KERNELS=parascan: not cuBLAS's, whose
#            instrumentation dominates the runtime-size chains' runs), except under initcheck, which must
#            see every write
# $OUT/results.txt gets one line a job: executable, tool, exit status (124: over the limit; 2: no test case
# ran), the tool's summary, test case. Prints the totals. Exit status 1 when a job failed or found errors
# (or there was no job), else 2 when a job ran past the limit, else 0.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/gpu}
[ $# -gt 0 ] && shift
tools=("$@")
[ ${#tools[@]} -gt 0 ] || tools=(memcheck racecheck initcheck synccheck)
out=${OUT:-$build/sanitize}
limit=${LIMIT:-600}
gpus=${GPUS:-$(nvidia-smi -L 2>/dev/null | wc -l)}
[ "$gpus" -gt 0 ] || { echo "no GPU"; exit 1; }
jobs=${JOBS:-$(( $(nproc) > 3 ? $(nproc) - 2 : 1 ))}
mkdir -p "$out/logs"
[ "${RESUME:-0}" = 1 ] && touch "$out/results.txt" || : >"$out/results.txt"

if [ -n "${EXECUTABLES:-}" ]; then  # paths given: no build directory needed
  executables=$(for path in $EXECUTABLES; do basename "$path"; done | grep -E "${FILTER:-.}" || true)
else
  executables=$(ctest --test-dir "$build" -N -L "${LABEL:-gpu}" 2>/dev/null | sed -n 's/^ *Test *#[0-9]*: //p' |
                grep -E "${FILTER:-.}" | grep -v example || true)
fi
# One line a job: gpu, executable, tool, test case (doctest separates its filters by commas and reads ? as
# any one character, so a comma in a name becomes ?).
list=$out/jobs.txt
: >"$list"
n=0
for exe in $executables; do
  if [ -n "${EXECUTABLES:-}" ]; then
    path=$(for p in $EXECUTABLES; do [ "$(basename "$p")" = "$exe" ] && echo "$p"; done | head -1)
  else
    path=$(find "$build" -type f -name "$exe" -perm -u+x | head -1)
  fi
  [ -n "$path" ] || { echo "$exe: not built"; continue; }
  while IFS= read -r name; do
    for tool in "${tools[@]}"; do
      gpu=$((n % gpus))
      [[ "$exe" =~ ${ALL_GPUS:-test_device_memory} ]] && gpu=all
      printf '%s\t%s\t%s\t%s\n' "$gpu" "$path" "$tool" "${name//,/?}" >>"$list"
      n=$((n + 1))
    done
  done < <("$path" --list-test-cases --no-version 2>/dev/null | grep -v '^\[doctest\]\|^=====' | grep -v '^$')
done
[ -s "$list" ] || { echo "no test case found (build directory $build, FILTER ${FILTER:-.})"; exit 1; }
if [ -s "$out/results.txt" ]; then  # RESUME=1: the jobs of an earlier run that finished are not run again
  awk -F'\t' '$3 != 124' "$out/results.txt" >"$out/results.kept" && mv "$out/results.kept" "$out/results.txt"
  awk -F'\t' 'NR == FNR { done[$1 "\t" $2 "\t" $5] = 1; next }
               { n = split($2, p, "/"); if (!((p[n] "\t" $3 "\t" $4) in done)) print }' \
    "$out/results.txt" "$list" >"$list.left"
  mv "$list.left" "$list"
fi
echo "$(wc -l <"$list") jobs ($(echo $executables | wc -w) executables x test cases x ${#tools[@]} tools)," \
  "$jobs at a time on $gpus GPUs"

run_one() {
  IFS=$'\t' read -r gpu path tool name <<<"$1"
  local log
  log="$out/logs/$(basename "$path")-$tool-$(printf '%s' "$name" | md5sum | cut -c1-8).log"
  local only=()
  [ -n "${KERNELS:-}" ] && [ "$tool" != initcheck ] && only=(--kernel-name "kns=$KERNELS")
  local devices=()
  [ "$gpu" = all ] || devices=(env CUDA_VISIBLE_DEVICES="$gpu")
  "${devices[@]}" timeout -k 30 "$limit" compute-sanitizer --tool "$tool" "${only[@]}" --error-exitcode 1 \
    "$path" --test-case="$name" --no-version >"$log" 2>&1
  local rc=$?
  [ $rc -eq 137 ] && rc=124  # killed after the limit's grace period
  # A filter that matched nothing would pass silently: status 2 unless a test case ran.
  [ $rc -eq 0 ] && ! grep -q 'test cases: *[1-9][0-9]* |' "$log" && rc=2
  local summary
  summary=$(grep -h 'ERROR SUMMARY\|RACECHECK SUMMARY' "$log" | tail -1 | sed 's/^========= //')
  printf '%s\t%s\t%s\t%s\t%s\n' "$(basename "$path")" "$tool" "$rc" "${summary:-no summary}" "$name" \
    >>"$out/results.txt"
}
export -f run_one
export out limit KERNELS
# Spread the heavy executables' jobs over the run rather than queueing them together, the slowest tool's
# first (racecheck, then initcheck: the jobs left unfinished at a call's end were mostly theirs), so that
# the longest jobs are not the last to start.
shuf "$list" | awk -F'\t' '{ r = $3 == "racecheck" ? 0 : $3 == "initcheck" ? 1 : $3 == "memcheck" ? 2 : 3; print r "\t" $0 }' |
  sort -s -n -k1,1 | cut -f2- | tr '\n' '\0' | xargs -0 -r -P "$jobs" -I{} bash -c 'run_one "$1"' _ {}

clean=$(awk -F'\t' '$3 == 0' "$out/results.txt" | wc -l)
over=$(awk -F'\t' '$3 == 124' "$out/results.txt" | wc -l)
bad=$(awk -F'\t' '$3 != 0 && $3 != 124' "$out/results.txt" | wc -l)
echo "clean: $clean, over the ${limit} s limit: $over, failed or reported errors: $bad"
for tool in "${tools[@]}"; do
  printf '  %-10s clean %4d  over the limit %3d  other %3d\n' "$tool" \
    "$(awk -F'\t' -v t="$tool" '$2 == t && $3 == 0' "$out/results.txt" | wc -l)" \
    "$(awk -F'\t' -v t="$tool" '$2 == t && $3 == 124' "$out/results.txt" | wc -l)" \
    "$(awk -F'\t' -v t="$tool" '$2 == t && $3 != 0 && $3 != 124' "$out/results.txt" | wc -l)"
done
awk -F'\t' '$3 != 0' "$out/results.txt" | sort | head -40
[ "$bad" -eq 0 ] || exit 1
[ "$over" -eq 0 ] || exit 2
