#!/usr/bin/env python3
"""Times parascan's Python entry points against the C++ calls they wrap, in one run.

- Per-call overhead: a (4, 64) float32 cumsum and linear recurrence on host{1} (into preallocated
  outputs, `out=`), mean of 20000 calls after 1000, against parascan_bench_host's figure for the same
  cumsum in the same run (pass its path with --host-bench; it prints "host{1}: X us").
- Throughput: the fp32 linear recurrence over (8, 64, 16384) with every thread, median of --repeats
  runs, in GB/s (12 bytes a step) and as a fraction of NumPy's copy of the same bytes (np.copyto of the
  two inputs into one output buffer), next to parascan_bench_host's row for the same shape.
- On CUDA (PyTorch with a GPU, the extension built with the CUDA backend): the per-call cost of a
  (4, 64) linear recurrence on CUDA tensors (host time a call, enqueue only), against the same call from
  C++ timed the same way in the same run (parascan_bench_cuda prints it), and the fp32 linear
  recurrence over (8, 1536, T), T = 4096 and 65536 (--lengths), timed with CUDA events (median of --repeats; each
  time spans 10 calls back to back, as a training step issues them, so that a call's host time overlaps
  the previous call's kernels), from Python against parascan_bench_cuda's row for the same shape (pass its
  path with --cuda-bench) and against torch's copy of the same bytes in the same run, and the forward +
  backward through parascan.torch.scan against accelerated-scan's kernels in the same process (when the
  package is installed).
- With JAX on a GPU (and parascan.jax): the jitted (8, 1536, T) forward and forward + backward on JAX
  arrays against XLA's negation of the same bytes and the C++ bench's row, and a small jitted call's time.

    python3 bench/python_bench.py [--host-bench build/default/bench/parascan_bench_host]
                                  [--cuda-bench build/dev/bench/parascan_bench_cuda] [--json out.json]
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


def cuda_bench_run(path, T):
    """parascan_bench_cuda's ms for the fp32 (8, 1536, T) bdt linear recurrence and its host time of a small
    call in us (see small_call_us in cuda_bench.cu), each None where missing."""
    if not path:
        return None, None
    label = "parascan linear_recurrence fp32 bdt (8,1536,%d)" % T
    out = subprocess.run([path, "--filter", label], capture_output=True, text=True).stdout
    row = re.search(r"\(8,1536,%d\)\s+fp32\s+bdt\s+([0-9.]+)" % T, out)
    small = re.search(r"small calls: .*: ([0-9.]+) us of host time", out)
    return (float(row.group(1)) if row else None), (float(small.group(1)) if small else None)


def cuda_figures(args, records):
    """The CUDA section (see the module's docstring); nothing without PyTorch, a GPU or parascan's CUDA backend."""
    try:
        import torch
    except ImportError:
        return
    if not (torch.cuda.is_available() and parascan.has_cuda):
        print("CUDA: skipped (needs PyTorch with a GPU and parascan built with the CUDA backend)")
        return
    import parascan.torch as pt

    def event_ms(fn, calls=10):
        fn()
        times = []
        for _ in range(args.repeats):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(calls):
                fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / calls)
        return float(np.median(times))

    dev = torch.device("cuda")
    small_a, small_x = torch.full((4, 64), 0.9, device=dev), torch.ones((4, 64), device=dev)
    small_y = torch.empty_like(small_x)
    per_call = per_call_us(lambda: parascan.linear_recurrence(small_a, small_x, out=small_y), 20000, 1000)
    torch.cuda.synchronize()
    print("CUDA (%s): per call, (4, 64) float32 linear_recurrence, out= preallocated: %.2f us of host time"
          % (torch.cuda.get_device_name(), per_call))
    record = {"case": "per-call linear_recurrence (4,64) cuda", "python_us": per_call}
    cpp_runs = {T: cuda_bench_run(args.cuda_bench, T) for T in args.lengths}  # (ms, small-call us) each
    cpp_call = cpp_runs[args.lengths[0]][1]
    if cpp_call is not None:  # the same call from C++, timed the same way, in the same session
        record["cpp_us"], record["overhead_us"] = cpp_call, per_call - cpp_call
        print("  the same call from C++ (parascan_bench_cuda): %.2f us; the binding's overhead: %.2f us"
              % (cpp_call, per_call - cpp_call))
    records.append(record)
    try:
        from accelerated_scan.warp import scan as as_warp
    except ImportError:
        as_warp = None
    try:
        from accelerated_scan.triton import scan as as_triton
    except ImportError:
        as_triton = None
    for T in args.lengths:
        g = torch.Generator(device=dev).manual_seed(T)
        gates = 0.9 + 0.1 * torch.rand((8, 1536, T), device=dev, generator=g)
        tokens = torch.randn((8, 1536, T), device=dev, generator=g)
        out = torch.empty_like(tokens)
        nbytes = 12 * gates.numel()
        both = torch.empty((2,) + tuple(tokens.shape), device=dev)
        copy_ms = event_ms(lambda: (both[0].copy_(gates), both[1].copy_(tokens)))  # 8 bytes read, 8 written a step
        copy_gbs = 16 * gates.numel() / copy_ms / 1e6
        py = event_ms(lambda: parascan.linear_recurrence(gates, tokens, out=out))
        cpp = cpp_runs[T][0]
        row = {"case": "linear_recurrence (8,1536,%d) fp32 cuda" % T, "python_ms": py,
               "python_gbs": nbytes / py / 1e6, "torch_copy_gbs": copy_gbs, "cpp_ms": cpp}
        line = "  (8, 1536, %d) forward: Python %.4f ms (%.0f GB/s, %.1f%% of torch's copy at %.0f GB/s)" % (
            T, py, nbytes / py / 1e6, 100 * nbytes / py / 1e6 / copy_gbs, copy_gbs)
        if cpp:
            line += ", C++ bench %.4f ms (Python / C++ = %.3f)" % (cpp, py / cpp)
        ga, gt = gates.clone().requires_grad_(), tokens.clone().requires_grad_()
        grad = torch.randn_like(tokens)

        def train(fn):
            return lambda: torch.autograd.grad(fn(ga, gt), (ga, gt), grad)

        row["parascan_fwd_bwd_ms"] = event_ms(train(pt.scan))
        line += "; forward + backward: parascan.torch.scan %.4f ms" % row["parascan_fwd_bwd_ms"]
        for name, fn in (("accelerated_scan.warp", as_warp), ("accelerated_scan.triton", as_triton)):
            if fn is None:
                continue
            try:
                row[name + "_fwd_bwd_ms"] = event_ms(train(fn))
                line += ", %s %.4f ms" % (name, row[name + "_fwd_bwd_ms"])
            except Exception as e:  # its kernels crash on some lengths: record, go on
                row[name + "_error"] = str(e)[:200]
                line += ", %s failed" % name
        print(line)
        records.append(row)


def jax_figures(args, records):
    """parascan.jax on a JAX GPU array: the jitted fp32 linear recurrence over (8, 1536, T), forward and
    forward + backward (jax.grad of a sum), wall time of 10 calls back to back (median of --repeats), against
    XLA's negation of the same bytes (a read and a write a step, as a copy) and parascan_bench_cuda's row."""
    try:
        import jax
        import jax.numpy as jnp
        import parascan.jax as pj
    except ImportError:
        return
    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    if not gpus:
        return

    def wall_ms(fn, *inputs, calls=10):
        jax.block_until_ready(fn(*inputs))
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            for _ in range(calls):
                out = fn(*inputs)
            jax.block_until_ready(out)
            times.append((time.perf_counter() - t0) * 1e3 / calls)
        return float(np.median(times))

    forward = jax.jit(lambda a, b: pj.linear_recurrence(a, b))
    train = jax.jit(jax.grad(lambda a, b: jnp.sum(pj.linear_recurrence(a, b)), argnums=(0, 1)))
    negate = jax.jit(lambda a, b: (-a, -b))
    small = jax.device_put(np.full((4, 64), 0.9, np.float32), gpus[0])
    per_call = wall_ms(forward, small, small, calls=2000)
    print("JAX (%s): per call, jitted (4, 64) float32 linear_recurrence: %.2f us of wall time"
          % (gpus[0].device_kind, per_call * 1e3))
    records.append({"case": "per-call linear_recurrence (4,64) jax", "python_us": per_call * 1e3})
    for T in args.lengths:
        rng = np.random.default_rng(T)
        a = jax.device_put(rng.uniform(0.9, 1.0, (8, 1536, T)).astype(np.float32), gpus[0])
        b = jax.device_put(rng.standard_normal((8, 1536, T)).astype(np.float32), gpus[0])
        nbytes = 12 * a.size
        fwd, both, copy = wall_ms(forward, a, b), wall_ms(train, a, b), wall_ms(negate, a, b)
        copy_gbs = 16 * a.size / copy / 1e6
        cpp = cuda_bench_run(args.cuda_bench, T)[0]
        row = {"case": "linear_recurrence (8,1536,%d) fp32 jax" % T, "jax_ms": fwd, "jax_gbs": nbytes / fwd / 1e6,
               "xla_copy_gbs": copy_gbs, "jax_fwd_bwd_ms": both, "cpp_ms": cpp}
        print("  (8, 1536, %d) forward: JAX %.4f ms (%.0f GB/s, %.1f%% of XLA's negation at %.0f GB/s)%s; "
              "forward + backward %.4f ms" % (T, fwd, nbytes / fwd / 1e6, 100 * nbytes / fwd / 1e6 / copy_gbs,
                                              copy_gbs, "" if cpp is None else ", C++ bench %.4f ms" % cpp, both))
        records.append(row)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--host-bench", help="path of parascan_bench_host, run for the C++ figures")
    p.add_argument("--cuda-bench", help="path of parascan_bench_cuda, run for the C++ figures on the GPU")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--lengths", default="4096,65536",
                   help="T of the (8, 1536, T) GPU rows, comma-separated (accelerated-scan takes powers of two)")
    p.add_argument("--json", help="write the records here")
    args = p.parse_args(argv)
    args.lengths = [int(T) for T in args.lengths.split(",")]

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

    # The GPU sections before the host's all-threads run: on the H200 machine, every call timed after that
    # run in the same process (torch.cumsum's too) took ~40% longer (a (4, 64) call 12.6 -> 18.1 us).
    cuda_figures(args, records)
    jax_figures(args, records)

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
