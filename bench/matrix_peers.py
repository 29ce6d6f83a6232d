#!/usr/bin/env python3
"""The matrix peer in the same run: torch_parallel_scan's method, timed on parascan_bench_cuda's matrix cases.

torch_parallel_scan (glassroom/torch_parallel_scan, on PyPI only as source) scans with PyTorch's matmul
over log2(n) levels of a tree. The same method is written here in a few lines (not its code): the prefix
doubles the span each level (P[t] = P[t - 2^k] P[t] for t >= 2^k, left to right), the reduction
multiplies adjacent pairs each level (an odd one left carries over). Cases, as the C++ bench's: the prefix
over (B, 1024) chains of N x N fp32 matrices, 2^26 floats in all, and the product of one chain of 1000, for
N = 2, 4, 8, 16, 32; and the runtime-size cases (one chain of 1024 for the prefix, of 1000 for the product,
N = 64 .. 1024, fp32 exact and with TF32 allowed, as parascan's cuBLAS path). Inputs are random orthogonal matrices (QR of Gaussian ones); results are checked
against a sequential fp64 product of one chain (FAIL is recorded, not timed). Timing as peers.py: CUDA
events, median of --runs after --warmup, a 256 MiB buffer rewritten before each run (L2 flush; BENCH_FLUSH=read
reads it instead).

    python3 bench/matrix_peers.py [--json FILE] [--commit SHA] [--copy-gbs GBS] [--runs N] [--warmup N] [--filter TEXT]
                                  [--parascan]

--parascan adds parascan called from Python on the runtime-size cases, in the same process: parascan.torch's
matrix_chain / matrix_chain_product (their workspace from PyTorch's caching allocator) and the package's
generic entries on the same tensors (workspace from parascan's own pool).

JSON: a list of records with parascan_bench_cuda's fields (impl, case, op, dtype, layout, shape, T,
sequences, bytes, ms, gbs, fraction_of_copy, copy_gbs, max_error, tolerance, device, commit, status).
"""
import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peers import FLUSH, median_ms  # noqa: E402  (the same timing rules as peers.py)

SIZES = (2, 4, 8, 16, 32)
RUNTIME_SIZES = (64, 128, 256, 512, 1024)
IMPL = "torch tree (torch_parallel_scan's method)"


def prefix_tree(torch, x):
    """Cumulative products over dim -3, left to right, in ceil(log2 n) levels of batched matmul."""
    n, span = x.shape[-3], 1
    while span < n:
        x = torch.cat([x[..., :span, :, :], torch.matmul(x[..., :-span, :, :], x[..., span:, :, :])], dim=-3)
        span *= 2
    return x


def reduce_tree(torch, x):
    """The product of all matrices over dim -3, left to right, adjacent pairs each level."""
    while x.shape[-3] > 1:
        n = x.shape[-3]
        pairs = torch.matmul(x[..., 0:n - 1:2, :, :], x[..., 1:n:2, :, :])
        x = torch.cat([pairs, x[..., n - 1:, :, :]], dim=-3) if n % 2 else pairs
    return x[..., 0, :, :]


def orthogonal(torch, shape, generator):
    q, r = torch.linalg.qr(torch.randn(shape, device="cuda", generator=generator, dtype=torch.float64))
    return (q * torch.sign(torch.diagonal(r, dim1=-2, dim2=-1)).unsqueeze(-2)).float()


def time_case(torch, args, impl, fn, kind, tag, N, shape, T, count, tf32, x):
    """Checks fn() against a sequential fp64 product of chain 0, then times it: one record."""
    prefix = kind == "matrix_chain"
    bytes_moved = (8.0 if prefix else 4.0) * count * T * N * N
    unit = 4.9e-4 if tf32 else 1.2e-7
    rec = {"impl": impl, "case": "%s%s %dx%d" % (kind, tag, N, N), "op": kind,
           "dtype": "fp32 (tf32)" if tf32 else "fp32", "layout": "bt",
           "shape": list(shape), "T": T, "sequences": count, "bytes": bytes_moved, "ms": None, "gbs": None,
           "fraction_of_copy": None, "copy_gbs": args.copy_gbs, "max_error": None,
           "tolerance": 4 * unit * math.sqrt(N) * (1 + math.sqrt(T)) * (4 if prefix else 1),
           "device": torch.cuda.get_device_name(0), "commit": args.commit, "status": "skipped"}
    try:
        got = fn()
        ref, worst = torch.eye(N, dtype=torch.float64, device="cuda"), 0.0
        for t in range(T):
            ref = ref @ x[0, t].double()
            if (prefix and (not tag or t % 97 == 0)) or t == T - 1:
                out = got[0, t] if prefix else got[0]
                worst = max(worst, (out.double() - ref).abs().max().item())
        rec["max_error"] = worst
        del got
        if not worst <= rec["tolerance"]:
            rec["status"] = "FAIL"
        else:
            rec["ms"] = median_ms(torch, fn, 5 if N >= 512 else args.runs, args.warmup)
            rec["gbs"] = bytes_moved / rec["ms"] / 1e6
            if tag:
                rec["tflops"] = 2.0 * N ** 3 * (T - 1) / rec["ms"] / 1e9
            if args.copy_gbs:
                rec["fraction_of_copy"] = rec["gbs"] / args.copy_gbs
            rec["status"] = "ok"
    except torch.cuda.OutOfMemoryError as e:
        rec["status"], rec["note"] = "skipped", "out of memory: %s" % str(e).split("\n")[0]
    print("%-44s %-34s %-12s %-20s %10s ms  %s" % (impl, rec["case"], rec["dtype"], rec["shape"],
                                                "%.4f" % rec["ms"] if rec["ms"] else "-", rec["status"]), flush=True)
    return rec


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", default="")
    p.add_argument("--commit", default="unknown")
    p.add_argument("--copy-gbs", type=float, default=None)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--filter", default="", help="only the cases whose name contains this text")
    p.add_argument("--parascan", action="store_true",
                   help="also time parascan from Python on the runtime-size cases: parascan.torch's ops and the "
                        "generic entries (the package importable, with its CUDA backend)")
    args = p.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("matrix_peers.py: PyTorch is not installed; nothing to time")
        return 0
    if not torch.cuda.is_available():
        print("matrix_peers.py: no CUDA device; nothing to time")
        return 0
    g = torch.Generator(device="cuda")
    g.manual_seed(7)
    records = []
    cases = []
    for N in SIZES:
        chains = (1 << 26) // (1024 * N * N)
        cases.append(("matrix_chain", N, (chains, 1024, N, N), 1024, chains, False, ""))
        cases.append(("matrix_chain_product", N, (1, 1000, N, N), 1000, 1, False, ""))
    for N in RUNTIME_SIZES:
        for tf32 in (False, True):
            cases.append(("matrix_chain", N, (1, 1024, N, N), 1024, 1, tf32, " runtime"))
            cases.append(("matrix_chain_product", N, (1, 1000, N, N), 1000, 1, tf32, " runtime"))
    impls = [IMPL]
    if args.parascan:
        try:
            import parascan
            import parascan.torch as pt
            if parascan.has_cuda:
                impls += ["parascan.torch", "parascan (own pool)"]
            else:
                print("matrix_peers.py: parascan has no CUDA backend; --parascan skipped")
        except ImportError as e:
            print("matrix_peers.py: --parascan: %s" % e)
    for kind, N, shape, T, count, tf32, tag in cases:
        if args.filter not in "%s%s %dx%d" % (kind, tag, N, N):
            continue
        torch.backends.cuda.matmul.allow_tf32 = tf32
        pool = orthogonal(torch, (min(997 if not tag else 16, T), N, N), g)
        x = pool.repeat((T + pool.shape[0] - 1) // pool.shape[0], 1, 1)[:T].expand(count, T, N, N).contiguous()
        prefix = kind == "matrix_chain"
        math_mode = "tf32" if tf32 else "exact"
        fns = {IMPL: (lambda: prefix_tree(torch, x)) if prefix else (lambda: reduce_tree(torch, x))}
        if len(impls) > 1:
            # parascan from Python: the torch op (workspace from PyTorch's caching allocator) and the generic
            # entry on the same tensors (workspace from parascan's own pool, which keeps 256 MiB).
            fns["parascan.torch"] = ((lambda: pt.matrix_chain(x, dim=1, math=math_mode)) if prefix else
                                     (lambda: pt.matrix_chain_product(x, dim=1, math=math_mode)))
            fns["parascan (own pool)"] = ((lambda: parascan.matrix_chain(x, dim=1, math=math_mode)) if prefix else
                                          (lambda: parascan.matrix_chain_product(x, dim=1, math=math_mode)))
        for impl in impls:
            if impl != IMPL and N not in RUNTIME_SIZES:
                continue  # the fixed sizes' Python entries are timed by bench/python_bench.py
            records.append(time_case(torch, args, impl, fns[impl], kind, tag, N, shape, T, count, tf32, x))
        del x
        torch.cuda.empty_cache()
    torch.backends.cuda.matmul.allow_tf32 = False
    if args.json:
        with open(args.json, "w") as f:
            json.dump([dict(r, flush=FLUSH) for r in records], f, indent=1)
    return 1 if any(r["status"] == "FAIL" for r in records) else 0


if __name__ == "__main__":
    sys.exit(main())
