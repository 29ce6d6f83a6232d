#!/usr/bin/env python3
"""A training step (forward + backward through torch.autograd.grad) of parascan.torch.scan against
accelerated_scan.warp.scan, (8, 1536, T) fp32 on CUDA, interleaved in one process: 15 rounds, each timing
100 steps of one and then 100 of the other (CUDA events around the 100 steps), alternating which goes first.
Prints the median of each and the median of the rounds' ratios. Needs PyTorch with a GPU and
accelerated-scan (a step of short sequences is host-bound: one timing after the other in separate loops
reads each library's luck with the host, which this interleaving evens out).

    python3 bench/torch_step_ab.py
"""
import numpy as np
import torch

import parascan.torch as pt
from accelerated_scan.warp import scan as as_warp


def timed(fn, n=100):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(n):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / n


def main():
    dev = torch.device("cuda")
    for T in (32, 64, 128, 256, 512, 1024, 2048):
        g = torch.Generator(device=dev).manual_seed(T)
        a = (0.9 + 0.1 * torch.rand((8, 1536, T), device=dev, generator=g)).requires_grad_()
        b = torch.randn((8, 1536, T), device=dev, generator=g).requires_grad_()
        gx = torch.randn((8, 1536, T), device=dev, generator=g)

        def step(f):
            return lambda: torch.autograd.grad(f(a, b), (a, b), gx)

        ours, theirs = step(pt.scan), step(as_warp)
        for _ in range(50):
            ours(), theirs()
        p_ms, w_ms, ratios = [], [], []
        for r in range(15):
            if r % 2:
                w = timed(theirs)
                p = timed(ours)
            else:
                p = timed(ours)
                w = timed(theirs)
            p_ms.append(p), w_ms.append(w), ratios.append(p / w)
        print("T=%5d step: parascan.torch.scan %.4f ms, accelerated_scan.warp %.4f ms (medians of 15 x 100 steps); "
              "median ratio %.3f, rounds parascan faster: %d of 15"
              % (T, np.median(p_ms), np.median(w_ms), np.median(ratios), sum(x < 1 for x in ratios)), flush=True)


if __name__ == "__main__":
    main()
