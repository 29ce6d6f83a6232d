#!/usr/bin/env python3
"""Times the peer accelerated-scan (PyPI `accelerated-scan`) on parascan's bench shapes, under the rules
of bench/cuda_bench.cu, and writes the same JSON fields.

Rules, for every case: random inputs (gates in [0.9, 1), tokens in [-1, 1), never zero); one run on a
NaN-poisoned output checked against an fp64 sequential reference on a slice (three whole sequences),
error relative to S[t] = |a[t]| S[t-1] + |b[t]| (the size of the terms that make x[t]); a wrong result is
recorded as FAIL and not timed; then CUDA events around one call, median of --runs (20) runs after
--warmup (3) calls, L2 flushed by a 256 MiB memset before each run (BENCH_FLUSH=read: by a read of 256 MiB,
which leaves no dirty lines for the timed call to write back; as parascan_bench_cuda --flush). Bytes: each
input read once, each output written once (fp32 12 bytes a step, bf16 6, complex64 24). fraction_of_copy
divides the effective GB/s by the copy floor: --copy-gbs (the C++ bench's figure from the same run) when
given, else the fastest torch copy (clone and copy_ of a 2 GiB tensor) measured here.

What runs: accelerated_scan.warp (its CUDA kernel, compiled at import by torch's load_inline) and
accelerated_scan.scalar (Triton), called as the package's autograd functions call them
(warpscan_forward / forward_scan[(B, C)] on preallocated outputs, so that no allocation or memset is
timed), and their backward kernels (warpscan_backward / backward_scan[(B, C)]: read the gates, the
forward's states and dL/dx, write dL/da and dL/db; 20 bytes a step in fp32, 10 in bf16; checked against
an fp64 adjoint of the stored data, relative to the size of its terms) for T = 4096 and 65536; fp32 and bf16 (its state is bf16 too, so bf16 gets a looser tolerance: 0.1 of the terms' size,
its error is recorded) over (8, 1536, T), and complex64 through accelerated_scan.complex (Triton).
The CUDA kernel takes only powers of two from 32 to 65536: other lengths are recorded as "refused"
without running. Each case runs in its own subprocess (`peers.py --one CASE`), since the CUDA kernel has
crashed with illegal memory accesses: a crash or a timeout is recorded as FAIL with its last message.

Without PyTorch, a CUDA device or the package, it says so, writes an empty JSON list and exits 0.

    python3 bench/peers.py --wheels .wheels --json $OUT/peers.json [--copy-gbs X] [--commit SHA] [--quick]
"""
import argparse
import glob
import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile

B, C = 8, 1536
FP32_T = [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 65536, 1000, 5000, 50000]
BF16_T = [1024, 4096, 16384, 65536]
COMPLEX_T = [4096, 65536]
BACKWARD_T = [4096, 65536]
QUICK = {("fp32", 1024), ("fp32", 4096), ("fp32", 65536), ("bf16", 4096)}
CUDA_IMPL, TRITON_IMPL = "accelerated-scan-cuda", "accelerated-scan-triton"
BYTES_PER_STEP = {"fp32": 12, "bf16": 6, "complex64": 24}
BACKWARD_BYTES_PER_STEP = {"fp32": 20, "bf16": 10}
TOLERANCE = {"fp32": 1e-5, "complex64": 1e-5, "bf16": 0.1}
OPS = {
    CUDA_IMPL: "accelerated_scan.warp.warpscan_forward",
    TRITON_IMPL: "accelerated_scan.scalar.forward_scan",
}
BACKWARD_OPS = {
    CUDA_IMPL: "accelerated_scan.warp.warpscan_backward",
    TRITON_IMPL: "accelerated_scan.scalar.backward_scan",
}
FORWARD, BACKWARD = "linear_recurrence", "linear_recurrence_backward"


# --------------------------------------------------------------------------------------------------
# Cases and records


def all_cases(quick=False):
    """Cases are (impl, dtype, T, kind), kind FORWARD or BACKWARD."""
    cases = []
    for T in FP32_T:
        cases += [(CUDA_IMPL, "fp32", T, FORWARD), (TRITON_IMPL, "fp32", T, FORWARD)]
    for T in BF16_T:
        cases += [(CUDA_IMPL, "bf16", T, FORWARD), (TRITON_IMPL, "bf16", T, FORWARD)]
    for T in COMPLEX_T:
        cases.append((TRITON_IMPL, "complex64", T, FORWARD))
    for dtype in ("fp32", "bf16"):
        for T in BACKWARD_T:
            cases += [(CUDA_IMPL, dtype, T, BACKWARD), (TRITON_IMPL, dtype, T, BACKWARD)]
    if quick:
        cases = [c for c in cases if (c[1], c[2]) in QUICK and c[3] == FORWARD]
    return cases


def case_id(case):
    impl, dtype, T, kind = case
    return "%s:%s:%d" % (impl, dtype, T) + (":backward" if kind == BACKWARD else "")


def parse_case_id(text):
    parts = text.split(":")
    kind = FORWARD
    if len(parts) == 4 and parts[3] == "backward":
        kind = BACKWARD
        parts = parts[:3]
    if len(parts) != 3 or parts[0] not in (CUDA_IMPL, TRITON_IMPL) or parts[1] not in BYTES_PER_STEP:
        raise argparse.ArgumentTypeError(
            "a case is IMPL:DTYPE:T[:backward], e.g. %s:fp32:4096 (IMPL: %s or %s; DTYPE: fp32, bf16, complex64)"
            % (CUDA_IMPL, CUDA_IMPL, TRITON_IMPL))
    try:
        T = int(parts[2])
    except ValueError:
        raise argparse.ArgumentTypeError("T must be an integer, got %r" % parts[2])
    if T < 1:
        raise argparse.ArgumentTypeError("T must be >= 1")
    if parts[1] == "complex64" and parts[0] != TRITON_IMPL:
        raise argparse.ArgumentTypeError("complex64 runs only on %s" % TRITON_IMPL)
    if kind == BACKWARD and parts[1] == "complex64":
        raise argparse.ArgumentTypeError("the backward cases are fp32 and bf16")
    return (parts[0], parts[1], T, kind)


def label(case):
    impl, dtype, T, kind = case
    return "%s %s %s bdt (%d,%d,%d)" % (impl, kind, dtype, B, C, T)


def cuda_accepts(T):
    return 32 <= T <= 65536 and T & (T - 1) == 0


def base_record(case, args):
    impl, dtype, T, kind = case
    if kind == BACKWARD:
        op, bytes_per_step = BACKWARD_OPS[impl], BACKWARD_BYTES_PER_STEP[dtype]
    else:
        op = "accelerated_scan.complex.forward_scan" if dtype == "complex64" else OPS[impl]
        bytes_per_step = BYTES_PER_STEP[dtype]
    return {
        "impl": impl, "case": kind, "op": op, "dtype": dtype, "layout": "bdt",
        "shape": [B, C, T], "T": T, "sequences": B * C, "bytes": bytes_per_step * B * C * T,
        "ms": None, "gbs": None, "fraction_of_copy": None, "copy_gbs": args.copy_gbs,
        "max_error": None, "tolerance": TOLERANCE[dtype], "device": args.device or "unknown",
        "commit": args.commit, "status": "skipped",
    }


# --------------------------------------------------------------------------------------------------
# Child side: one case (or the copy floor, or the extension build) in this process


def child_result(obj):
    print("RESULT " + json.dumps(obj), flush=True)


FLUSH = os.environ.get("BENCH_FLUSH", "write")  # how the L2 is flushed before each timed run: write | read


def median_ms(torch, fn, runs, warmup):
    if FLUSH not in ("write", "read"):
        raise SystemExit("BENCH_FLUSH: write or read, not %r" % FLUSH)
    flush = torch.zeros(256 << 20, dtype=torch.uint8, device="cuda")
    flush_words = flush.view(torch.int32)
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for i in range(runs):
        if FLUSH == "read":
            flush_words.max()  # reads every line; leaves them clean
        else:
            flush.fill_(i & 0xFF)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    del flush
    return statistics.median(times)


def child_copy(args):
    import torch
    if not torch.cuda.is_available():
        child_result({"cuda": False})
        return
    n = (2 << 30) // 4  # 2 GiB of fp32
    x = torch.empty(n, dtype=torch.float32, device="cuda").uniform_(-1, 1)
    y = torch.empty_like(x)
    bytes_moved = 2 * x.numel() * x.element_size()
    clone_ms = median_ms(torch, lambda: x.clone(), args.runs, args.warmup)
    copy_ms = median_ms(torch, lambda: y.copy_(x), args.runs, args.warmup)
    props = torch.cuda.get_device_properties(0)
    child_result({
        "cuda": True, "device": torch.cuda.get_device_name(0),
        "capability": "%d.%d" % torch.cuda.get_device_capability(0), "sms": props.multi_processor_count,
        "torch": torch.__version__, "clone_gbs": bytes_moved / clone_ms / 1e6,
        "copy_gbs": bytes_moved / copy_ms / 1e6,
    })


def child_build(args):
    t0 = time.time()
    import accelerated_scan
    import accelerated_scan.warp  # noqa: F401  (compiles the CUDA extension, or loads it from the cache)
    child_result({"built": True, "seconds": time.time() - t0,
                  "version": getattr(accelerated_scan, "__version__", "?")})


def make_inputs(torch, dtype, T):
    g = torch.Generator(device="cuda")
    g.manual_seed(1234)

    def uniform(lo, hi):
        return torch.rand((B, C, T), device="cuda", generator=g).mul_(hi - lo).add_(lo)

    def nonzero(t):
        return t.masked_fill_(t == 0, 0.5)

    if dtype == "complex64":
        modulus = uniform(0.9, 1.0)
        phase = uniform(-math.pi, math.pi)
        gates = torch.polar(modulus, phase)
        del modulus, phase
        tokens = torch.complex(nonzero(uniform(-1, 1)), nonzero(uniform(-1, 1)))
        return gates.contiguous(), tokens.contiguous()
    gates, tokens = uniform(0.9, 1.0), nonzero(uniform(-1, 1))
    if dtype == "bf16":
        gates, tokens = gates.to(torch.bfloat16), tokens.to(torch.bfloat16)
    return gates, tokens


def check(torch, gates, tokens, out, tolerance):
    """Largest |x - ref| / S over three whole sequences, against an fp64 loop over the stored inputs."""
    worst, where = 0.0, ""
    for b, c in ((0, 0), (B // 2, C // 2 + 1), (B - 1, C - 1)):
        to_list = (lambda t: t[b, c].to(torch.complex128).cpu().tolist()) if gates.is_complex() else \
                  (lambda t: t[b, c].double().cpu().tolist())
        a_s, b_s, y_s = to_list(gates), to_list(tokens), to_list(out)
        x, S = 0.0, 0.0
        for t, (a, bt, y) in enumerate(zip(a_s, b_s, y_s)):
            x = a * x + bt
            S = abs(a) * S + abs(bt)
            e = abs(y - x) / S
            if math.isnan(e) or e > worst:
                worst, where = e, "sequence (%d, %d) step %d: got %s, reference %s" % (b, c, t, y, x)
                if math.isnan(e):
                    return float("nan"), where
    return worst, where


def check_backward(torch, gates, states, d_out, d_gates, d_tokens):
    """Largest error of dL/db and dL/da over three whole sequences against an fp64 adjoint of the stored
    gates, states and dL/dx, relative to the size of the terms that make each gradient."""
    worst, where = 0.0, ""
    for b, c in ((0, 0), (B // 2, C // 2 + 1), (B - 1, C - 1)):
        a_s, x_s, dy_s, da_s, db_s = (t[b, c].double().cpu().tolist() for t in (gates, states, d_out, d_gates,
                                                                                 d_tokens))
        carried, scale = 0.0, 0.0  # h[t+1] and the size of its terms
        for t in range(len(a_s) - 1, -1, -1):
            g, g_scale = dy_s[t] + carried, abs(dy_s[t]) + scale
            x_prev = x_s[t - 1] if t > 0 else 0.0
            for got, ref, size, name in ((db_s[t], g, g_scale, "dL/db"),
                                         (da_s[t], g * x_prev, g_scale * abs(x_prev) + 1e-30, "dL/da")):
                e = abs(got - ref) / size
                if math.isnan(e) or e > worst:
                    worst, where = e, "%s of sequence (%d, %d) step %d: got %s, reference %s" % (name, b, c, t, got,
                                                                                                ref)
                    if math.isnan(e):
                        return float("nan"), where
            carried, scale = a_s[t] * g, abs(a_s[t]) * g_scale
    return worst, where


def backward_call(torch, impl, dtype, T):
    """The backward kernel's call on the forward's states of random inputs, the buffers, and its check."""
    gates, tokens = make_inputs(torch, dtype, T)
    states = torch.empty_like(tokens)
    if impl == CUDA_IMPL:
        import accelerated_scan.warp as warp
        warp.warpscan_forward(gates, tokens, states, False)
    else:
        from accelerated_scan.scalar import forward_scan
        forward_scan[(B, C)](gates, tokens, states, seqlen=T, enable_fp_fusion=False)
    del tokens
    g = torch.Generator(device="cuda")
    g.manual_seed(4321)
    d_out = torch.rand((B, C, T), device="cuda", generator=g).mul_(2).sub_(1).to(gates.dtype)
    d_gates, d_tokens = torch.empty_like(gates), torch.empty_like(gates)
    if impl == CUDA_IMPL:
        fn = lambda: warp.warpscan_backward(gates, states, d_out, d_gates, d_tokens)  # noqa: E731
    else:
        from accelerated_scan.scalar import backward_scan
        fn = lambda: backward_scan[(B, C)](gates, states, d_out, d_tokens, d_gates, seqlen=T,  # noqa: E731
                                           enable_fp_fusion=False)
    outputs = (d_gates, d_tokens)
    return fn, outputs, lambda: check_backward(torch, gates, states, d_out, d_gates, d_tokens)


def child_case(args, case):
    import torch
    impl, dtype, T, kind = case
    rec = base_record(case, args)
    if impl == CUDA_IMPL and not cuda_accepts(T):
        rec.update(status="refused", note="the CUDA kernel takes only powers of two from 32 to 65536")
        child_result(rec)
        return
    if kind == BACKWARD:
        fn, outs, checker = backward_call(torch, impl, dtype, T)
        for o in outs:
            o.fill_(float("nan"))
        fn()
        torch.cuda.synchronize()
        finish_case(args, rec, torch, fn, checker(), TOLERANCE[dtype])
        return
    gates, tokens = make_inputs(torch, dtype, T)
    out = torch.empty_like(tokens)
    if impl == CUDA_IMPL:
        import accelerated_scan.warp as warp
        fn = lambda: warp.warpscan_forward(gates, tokens, out, False)  # noqa: E731
    elif dtype == "complex64":
        from accelerated_scan.complex import forward_scan
        g_real, t_real, o_real = (torch.view_as_real(t) for t in (gates, tokens, out))
        fn = lambda: forward_scan[(B, C)](g_real, t_real, o_real, seqlen=T, enable_fp_fusion=False)  # noqa: E731
    else:
        from accelerated_scan.scalar import forward_scan
        fn = lambda: forward_scan[(B, C)](gates, tokens, out, seqlen=T, enable_fp_fusion=False)  # noqa: E731
    out.fill_(float("nan"))
    fn()
    torch.cuda.synchronize()
    finish_case(args, rec, torch, fn, check(torch, gates, tokens, out, TOLERANCE[dtype]), TOLERANCE[dtype])


def finish_case(args, rec, torch, fn, checked, tolerance):
    """Records the check's result; times fn when it passed."""
    worst, where = checked
    rec["max_error"] = None if math.isnan(worst) else worst
    if not worst <= tolerance:
        rec.update(status="FAIL", note="wrong result: " + where)
        child_result(rec)
        return
    ms = median_ms(torch, fn, args.runs, args.warmup)
    gbs = rec["bytes"] / ms / 1e6
    rec.update(ms=ms, gbs=gbs, status="ok")
    if args.copy_gbs:
        rec["fraction_of_copy"] = gbs / args.copy_gbs
    child_result(rec)


# --------------------------------------------------------------------------------------------------
# Parent side


def install_wheels(wheel_dir, env):
    """Installs the carried wheels offline into a private folder and puts it on sys.path / PYTHONPATH /
    PATH (pip --target; when pip is missing or fails, the wheels are unpacked as zips)."""
    wheels = sorted(glob.glob(os.path.join(wheel_dir, "*.whl")))
    if not wheels:
        print("peers: no wheels in %s" % wheel_dir)
        return
    target = os.path.join(tempfile.gettempdir(), "parascan-peers-site")
    cmd = [sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", "--upgrade", "--quiet",
           "--disable-pip-version-check", "--target", target] + wheels
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        print("peers: pip install failed (%s); unpacking the wheels instead" % r.stdout.strip()[-300:])
        os.makedirs(os.path.join(target, "bin"), exist_ok=True)
        for w in wheels:
            with zipfile.ZipFile(w) as z:
                for name in z.namelist():
                    if ".data/scripts/" in name and not name.endswith("/"):
                        path = os.path.join(target, "bin", os.path.basename(name))
                        with open(path, "wb") as f:
                            f.write(z.read(name))
                        os.chmod(path, 0o755)
                    else:
                        z.extract(name, target)
    print("peers: installed %s into %s" % (", ".join(os.path.basename(w) for w in wheels), target))
    sys.path.insert(0, target)
    env["PYTHONPATH"] = target + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PATH"] = os.path.join(target, "bin") + os.pathsep + env.get("PATH", "")
    importlib.invalidate_caches()


def run_child(args, env, what, timeout, log_dir):
    """Runs `peers.py --one WHAT` and returns (result dict or None, message of a failure)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--one", what, "--runs", str(args.runs),
           "--warmup", str(args.warmup), "--commit", args.commit]
    if args.copy_gbs:
        cmd += ["--copy-gbs", repr(args.copy_gbs)]
    if args.device:
        cmd += ["--device", args.device]
    log = os.path.join(log_dir, what.replace(":", "_").replace("/", "_") + ".log") if log_dir else None
    try:
        r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=timeout)
        output, rc = r.stdout, r.returncode
    except subprocess.TimeoutExpired as e:
        output = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        output, rc = output + "\ntimeout after %d s" % timeout, None
    if log:
        with open(log, "w") as f:
            f.write(output)
    for line in output.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):]), ""
    lines = [l.strip() for l in output.splitlines() if l.strip()]
    # The most telling line: a CUDA / torch error if there is one, else the last line.
    telling = [l for l in lines if "error" in l.lower() or "illegal" in l.lower() or "timeout" in l.lower()]
    message = (telling or lines or ["no output"])[-1]
    return None, ("exit code %s: " % rc if rc is not None else "") + message[:400]


def print_row(rec):
    shape = "(%s)" % ",".join(str(s) for s in rec["shape"])
    err = ""
    if rec.get("max_error") is not None:
        err = " (%.2g / %.2g)" % (rec["max_error"], rec["tolerance"])
    if rec["status"] == "ok":
        frac = "%6.1f%%" % (100 * rec["fraction_of_copy"]) if rec.get("fraction_of_copy") else "      -"
        print("%-24s %-27s %-16s %-9s %10.4f %8.1f %s  ok%s" % (rec["impl"], rec["case"], shape, rec["dtype"],
                                                               rec["ms"], rec["gbs"], frac, err), flush=True)
    else:
        print("%-24s %-27s %-16s %-9s %10s %8s %7s  %s%s%s" % (rec["impl"], rec["case"], shape, rec["dtype"], "-",
                                                               "-", "-", rec["status"], err,
                                                               (": " + rec["note"]) if rec.get("note") else ""),
              flush=True)


def write_json(path, records):
    if not path:
        return
    with open(path, "w") as f:
        json.dump([dict(r, flush=FLUSH) for r in records], f, indent=1)
        f.write("\n")


def parent(args):
    cases = [c for c in all_cases(args.quick) if not args.filter or args.filter in label(c)]
    if args.list:
        for c in cases:
            print(label(c) + ("   (refused: not a power of two in 32..65536)"
                              if c[0] == CUDA_IMPL and not cuda_accepts(c[2]) else ""))
        return 0
    env = dict(os.environ)

    def skip(reason):
        print("peers: skipped: %s (nothing timed; writing an empty list)" % reason)
        write_json(args.json, [])
        return 0

    if importlib.util.find_spec("torch") is None:
        return skip("PyTorch is not installed")
    if args.wheels:
        install_wheels(args.wheels, env)
    if importlib.util.find_spec("accelerated_scan") is None:
        return skip("the accelerated-scan package is not installed (pass --wheels DIR with its wheel, "
                    "e.g. from `pip download --no-deps accelerated-scan`)")
    log_dir = args.logs or ((args.json + ".logs") if args.json else None)
    if log_dir:
        os.makedirs(log_dir, exist_ok=True)
    env.setdefault("TORCH_EXTENSIONS_DIR", os.path.join(tempfile.gettempdir(), "parascan-peers-torch-extensions"))

    probe, message = run_child(args, env, "copy", 600, log_dir)
    if probe is None:
        return skip("the copy-floor probe failed: " + message)
    if not probe.get("cuda"):
        return skip("PyTorch sees no CUDA device")
    args.device = args.device or probe["device"]
    torch_copy = max(probe["clone_gbs"], probe["copy_gbs"])
    print("device: %s (sm %s, %d SMs), torch %s" % (probe["device"], probe["capability"], probe["sms"],
                                                   probe["torch"]))
    print("torch copy floor: clone %.1f GB/s, copy_ %.1f GB/s (2 GiB, read + write)" % (
        probe["clone_gbs"], probe["copy_gbs"]))
    if args.copy_gbs:
        print("fraction of copy against --copy-gbs %.1f GB/s (the C++ bench's copy floor)" % args.copy_gbs)
    else:
        args.copy_gbs = torch_copy
        print("fraction of copy against the torch copy floor %.1f GB/s" % torch_copy)
    env.setdefault("TORCH_CUDA_ARCH_LIST", probe["capability"])

    build_error = None
    if any(c[0] == CUDA_IMPL and cuda_accepts(c[2]) for c in cases):
        print("building accelerated_scan.warp (torch load_inline, cached in %s) ..." % env["TORCH_EXTENSIONS_DIR"],
              flush=True)
        built, message = run_child(args, env, "build", args.build_timeout, log_dir)
        if built is None:
            build_error = "the CUDA extension did not build or load: " + message
            print("peers: " + build_error)
        else:
            print("built in %.0f s (accelerated-scan %s)" % (built["seconds"], built["version"]))

    print("\n%-24s %-27s %-16s %-9s %10s %8s %7s  %s" % ("impl", "case", "shape", "dtype", "ms", "GB/s", "% copy",
                                                        "check (max error / tolerance)"))
    records = []
    for case in cases:
        rec = base_record(case, args)
        if case[0] == CUDA_IMPL and not cuda_accepts(case[2]):
            rec.update(status="refused", note="the CUDA kernel takes only powers of two from 32 to 65536")
        elif case[0] == CUDA_IMPL and build_error:
            rec.update(status="FAIL", note=build_error)
        else:
            result, message = run_child(args, env, case_id(case), args.timeout, log_dir)
            if result is None:
                rec.update(status="FAIL", note="crashed: " + message)
            else:
                rec = result
        rec["copy_gbs"] = args.copy_gbs
        rec["torch_copy_gbs"] = torch_copy
        if rec.get("gbs"):
            rec["fraction_of_copy"] = rec["gbs"] / args.copy_gbs
        records.append(rec)
        print_row(rec)
        write_json(args.json, records)
    write_json(args.json, records)
    failed = sum(r["status"] == "FAIL" for r in records)
    print("\n%d peer cases: %d ok, %d refused, %d failed%s" % (
        len(records), sum(r["status"] == "ok" for r in records), sum(r["status"] == "refused" for r in records),
        failed, ("; JSON: " + args.json) if args.json else ""))
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", help="write the records (a JSON list) here")
    p.add_argument("--wheels", help="a folder of wheels (accelerated-scan, ninja) to install offline first")
    p.add_argument("--copy-gbs", type=float, default=None,
                   help="the copy floor in GB/s for fraction_of_copy (the C++ bench's, same run); "
                        "default: the torch copy measured here")
    p.add_argument("--commit", default=os.environ.get("COMMIT", "unknown"), help="the commit field")
    p.add_argument("--quick", action="store_true", help="fp32 T = 1024, 4096, 65536 and bf16 T = 4096 only")
    p.add_argument("--filter", help="only the cases whose label contains this (see --list)")
    p.add_argument("--list", action="store_true", help="print the selected cases' labels and exit")
    p.add_argument("--runs", type=int, default=20, help="timed runs per case (median; default 20)")
    p.add_argument("--warmup", type=int, default=3, help="untimed calls first (default 3)")
    p.add_argument("--timeout", type=int, default=300, help="seconds per case subprocess (default 300)")
    p.add_argument("--build-timeout", type=int, default=900,
                   help="seconds for compiling the CUDA extension (default 900)")
    p.add_argument("--logs", help="folder for each subprocess's output (default: JSON path + '.logs')")
    p.add_argument("--device", help=argparse.SUPPRESS)
    p.add_argument("--one", help=argparse.SUPPRESS)  # internal: run one case (IMPL:DTYPE:T), 'copy' or 'build'
    args = p.parse_args(argv)
    if args.runs < 1 or args.warmup < 0:
        p.error("--runs must be >= 1 and --warmup >= 0")
    if args.one is None:
        return parent(args)
    if args.one == "copy":
        child_copy(args)
    elif args.one == "build":
        child_build(args)
    else:
        try:
            case = parse_case_id(args.one)
        except argparse.ArgumentTypeError as e:
            p.error(str(e))
        child_case(args, case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
