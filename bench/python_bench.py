#!/usr/bin/env python3
"""Times parascan's Python entry points against the C++ calls they wrap, in one run.

- Per-call overhead: a (4, 64) float32 cumsum and linear recurrence on host{1} (into preallocated
  outputs, `out=`), mean of 20000 calls after 1000, against parascan_bench_host's figure for the same
  cumsum in the same run (pass its path with --host-bench; it prints "host{1}: X us").
- Throughput: the fp32 linear recurrence over (8, 64, 16384) with every thread, median of --repeats
  runs, in GB/s (12 bytes a step) and as a fraction of NumPy's copy of the same bytes (np.copyto of the
  two inputs into one output buffer), next to parascan_bench_host's row for the same shape.
This build of the extension has the host backend only: CUDA tensors (and accelerated-scan, a CUDA
package) are not timed here yet.

    python3 bench/python_bench.py [--host-bench build/default/bench/parascan_bench_host] [--json out.json]
"""
import argparse
import json
import re
import subprocess
import sys
import time

import numpy as np

import parascan


def per_call_us(fn, calls=20000, warmup=1000):
    for _ in range(warmup):
        fn()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls * 1e6


def median_s(fn, repeats):
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def host_bench_figures(path):
    """(host{1} us a call for the (4, 64) cumsum, GB/s of the library's (8, 64, 16384) row) or Nones."""
    if not path:
        return None, None
    out = subprocess.run([path, "0", "5"], capture_output=True, text=True, check=True).stdout
    small = re.search(r"host\{1\}: ([0-9.]+) us", out)
    large = re.search(r"parascan host\{\d+\}\s+[0-9.]+ ms\s+([0-9.]+) GB/s", out)
    return (float(small.group(1)) if small else None), (float(large.group(1)) if large else None)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--host-bench", help="path of parascan_bench_host, run for the C++ figures")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--json", help="write the records here")
    args = p.parse_args(argv)

    records = []
    x = np.ones((4, 64), np.float32)
    a = np.full((4, 64), 0.9, np.float32)
    y = np.empty_like(x)
    cpp_small, cpp_large = host_bench_figures(args.host_bench)
    py_cumsum = per_call_us(lambda: parascan.cumsum(x, out=y, threads=1))
    py_linear = per_call_us(lambda: parascan.linear_recurrence(a, x, out=y, threads=1))
    print("parascan %s (Python), host backend" % parascan.__version__)
    print("per call, (4, 64) float32, host{1}, out= preallocated:")
    print("  cumsum            %.2f us%s" % (py_cumsum, "" if cpp_small is None else
                                             "   (C++ %.2f us: overhead %.2f us)" % (cpp_small, py_cumsum - cpp_small)))
    print("  linear_recurrence %.2f us" % py_linear)
    records.append({"case": "per-call cumsum (4,64) host{1}", "python_us": py_cumsum, "cpp_us": cpp_small,
                    "overhead_us": None if cpp_small is None else py_cumsum - cpp_small})
    records.append({"case": "per-call linear_recurrence (4,64) host{1}", "python_us": py_linear})

    B, D, T = 8, 64, 16384
    rng = np.random.default_rng(1)
    gates = rng.uniform(0.9, 1.0, (B, D, T)).astype(np.float32)
    tokens = rng.uniform(-1, 1, (B, D, T)).astype(np.float32)
    out = np.empty_like(tokens)
    both = np.empty((2, B, D, T), np.float32)
    nbytes = 12 * B * D * T
    lib = median_s(lambda: parascan.linear_recurrence(gates, tokens, out=out), args.repeats)
    copy = median_s(lambda: (np.copyto(both[0], gates), np.copyto(both[1], tokens)), args.repeats)
    gbs, copy_gbs = nbytes / lib / 1e9, 4 * 4 * B * D * T / copy / 1e9
    print("linear_recurrence (8, 64, 16384) float32, all threads: %.3f ms, %.2f GB/s (%.0f%% of NumPy's copy, "
          "%.2f GB/s)%s" % (lib * 1e3, gbs, 100 * gbs / copy_gbs, copy_gbs,
                            "" if cpp_large is None else "; C++ bench: %.2f GB/s" % cpp_large))
    records.append({"case": "linear_recurrence (8,64,16384) fp32", "python_ms": lib * 1e3, "python_gbs": gbs,
                    "numpy_copy_gbs": copy_gbs, "cpp_gbs": cpp_large})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
