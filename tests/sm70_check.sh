#!/usr/bin/env bash
# Volta (sm_70) check with CUDA 13, which no longer targets it: each named CUDA test source is compiled to
# compute_75 PTX (the oldest virtual architecture CUDA 13 writes; parascan's code branches only at 800 and
# 900, so sm_70 and sm_75 take the same paths), retargeted to sm_70 and assembled by a CUDA 12 ptxas,
# which still supports Volta: every instruction the kernels use must exist there. CUDA 12's ptxas comes
# without a GPU from PyPI:
#   python3 -m pip download --no-deps --only-binary=:all: -d /tmp/cu12 "nvidia-cuda-nvcc-cu12==12.9.*"
#   unzip -q -o /tmp/cu12/nvidia_cuda_nvcc_cu12-*.whl -d /tmp/cu12/root
#   PTXAS12=/tmp/cu12/root/nvidia/cuda_nvcc/bin/ptxas tests/sm70_check.sh build/gpu test_cuda_basic ...
# Arguments: a configured CUDA build directory (its generated test sources and include paths) and test
# names (tests/cuda/<name>.cu or that build's tests/generated/<name>.cu). Prints one line a test.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:?build directory}
shift
ptxas=${PTXAS12:?PTXAS12: a CUDA 12 ptxas}
[ $# -gt 0 ] || { echo "name at least one test"; exit 2; }
nvcc=${NVCC:-nvcc}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
includes=(-Itests -Iinclude -Ioperators -isystem=/usr/include/eigen3)
[ -d .deps/usr/include/eigen3 ] && includes+=(-isystem="$PWD/.deps/usr/include/eigen3")
[ -d .deps/usr/include ] && includes+=(-isystem="$PWD/.deps/usr/include")
status=0
for name in "$@"; do
  source=tests/cuda/$name.cu
  [ -f "$source" ] || source=$build/tests/generated/$name.cu
  if ! "$nvcc" -std=c++17 "${includes[@]}" -O3 -DNDEBUG -arch=compute_75 -ptx --expt-relaxed-constexpr \
      -Xcudafe=--diag_suppress=20011,--diag_suppress=20012,--diag_suppress=20014,--diag_suppress=20015 \
      -x cu "$source" -o "$work/$name.ptx" 2>"$work/$name.log"; then
    echo "$name: compute_75 PTX failed"; tail -5 "$work/$name.log"; status=1; continue
  fi
  # CUDA 13 writes PTX ISA 9.0; CUDA 12.9's ptxas reads up to 8.8, which has every sm_70 instruction.
  sed -i -e 's/^\.version 9\.[0-9]*$/.version 8.8/' -e 's/^\.target sm_75$/.target sm_70/' "$work/$name.ptx"
  if "$ptxas" -arch=sm_70 -O3 "$work/$name.ptx" -o "$work/$name.cubin" 2>"$work/$name.log"; then
    echo "$name: sm_70 code assembled ($(grep -c '^\.entry\|^\.visible \.entry' "$work/$name.ptx") kernels)"
  else
    echo "$name: ptxas for sm_70 failed"; head -10 "$work/$name.log"; status=1
  fi
done
exit $status
