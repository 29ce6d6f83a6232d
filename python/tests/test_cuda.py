"""The CUDA backend from Python, on PyTorch CUDA tensors: every entry point against the host backend (or
an fp64 reference for bfloat16 / float16 storage), layouts and strides, per-sequence values, packed
batches, streams, devices, and parascan.torch's custom ops (autograd, gradcheck, torch.compile). Skipped
without a CUDA device, PyTorch, or an extension built with the CUDA backend."""
import math

import numpy as np
import pytest

import parascan

torch = pytest.importorskip("torch")
if not (torch.cuda.is_available() and parascan.has_cuda):
    pytest.skip("needs a CUDA device and parascan built with the CUDA backend", allow_module_level=True)

import parascan.torch as pt  # noqa: E402

CUDA = torch.device("cuda")


def gates_tokens(shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    a = (0.8 + 0.19 * torch.rand(shape, generator=g, dtype=torch.float64))
    b = torch.randn(shape, generator=g, dtype=torch.float64)
    return a.to(dtype), b.to(dtype)


def close(got, want, rtol):
    """Relative error (to want's largest finite magnitude) at most rtol; infinities must match exactly."""
    got, want = torch.as_tensor(got).cpu().to(torch.complex128), torch.as_tensor(want).cpu().to(torch.complex128)
    finite = want.isfinite()  # equal infinities (-inf in log space) would subtract to NaN
    assert torch.equal(got.isnan(), want.isnan()) and bool((got[want.isinf()] == want[want.isinf()]).all())
    scale = (want[finite].abs().max().item() if finite.any() else 0.0) + 1e-30
    err = ((got - want)[finite].abs().max().item() if finite.any() else 0.0) / scale
    assert err <= rtol, "relative error %g > %g" % (err, rtol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64])
@pytest.mark.parametrize("dim", [-1, 1])
def test_linear_recurrence_matches_the_host(dtype, dim):
    shape = (3, 40, 1000) if dim == -1 else (3, 1000, 40)  # (B, C, T) and (B, T, D)
    a, b = gates_tokens(shape, dtype)
    if dtype.is_complex:
        a = a * torch.exp(1j * torch.rand(shape, dtype=torch.float64)).to(dtype)
    x0 = torch.randn(3, 40, dtype=torch.float64).to(dtype)
    for reverse in (False, True):
        for exclusive in (False, True):
            want, want_final = parascan.linear_recurrence(a, b, dim=dim, initial=x0, reverse=reverse,
                                                          exclusive=exclusive, return_final=True)
            got, got_final = parascan.linear_recurrence(a.to(CUDA), b.to(CUDA), dim=dim, initial=x0.to(CUDA),
                                                        reverse=reverse, exclusive=exclusive, return_final=True)
            assert got.device.type == "cuda" and got.dtype == dtype and got_final.device.type == "cuda"
            tol = 1e-5 if dtype != torch.float64 else 1e-12
            close(got, want, tol)
            close(got_final, want_final, tol)


def test_strided_views_and_out():
    a, b = gates_tokens((4, 64, 2000))
    a, b = a.to(CUDA), b.to(CUDA)
    a_view, b_view = a[:, ::2, 1::3], b[:, 1::2, ::3]  # channel and time strides, unaligned starts
    out = torch.full((4, 32, 667), float("nan"), device=CUDA)
    got = parascan.linear_recurrence(a_view, b_view, out=out[:, :, :])
    assert got is not None
    want = parascan.linear_recurrence(a_view.cpu().contiguous(), b_view.cpu().contiguous())
    close(out, want, 1e-5)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_16_bit_storage_with_an_fp32_state(dtype):
    a, b = gates_tokens((2, 16, 3000), dtype)
    x = parascan.linear_recurrence(a.to(CUDA), b.to(CUDA), initial=torch.ones(2, 16), return_final=True)
    got, final = x
    assert got.dtype == dtype and final.dtype == torch.float32
    ref = torch.empty((2, 16, 3000), dtype=torch.float64)
    carry = torch.ones(2, 16, dtype=torch.float64)
    a64, b64 = a.to(torch.float64), b.to(torch.float64)
    for t in range(3000):
        carry = a64[..., t] * carry + b64[..., t]
        ref[..., t] = carry
    eps = 2.0 ** -7 if dtype == torch.bfloat16 else 2.0 ** -10
    close(got, ref, 2 * eps)  # the output's one rounding, and the fp32 state's
    close(final, carry, 1e-5)
    host = parascan.linear_recurrence(a, b, initial=torch.ones(2, 16))  # the host backend takes them too
    close(host, ref, 2 * eps)


def test_backward_matches_the_host():
    a, b = gates_tokens((2, 24, 1500))
    x = parascan.linear_recurrence(a, b)
    dx = torch.randn(2, 24, 1500)
    x0, gf = torch.randn(2, 24), torch.randn(2, 24)
    want = parascan.linear_recurrence_backward(a, x, dx, initial=x0, grad_final=gf, return_grad_initial=True)
    got = parascan.linear_recurrence_backward(a.to(CUDA), x.to(CUDA), dx.to(CUDA), initial=x0.to(CUDA),
                                              grad_final=gf.to(CUDA), return_grad_initial=True)
    for g, w in zip(got, want):
        assert g.device.type == "cuda"
        close(g, w, 1e-5)


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"])
def test_scans_match_torch(name):
    x = torch.randn(5, 300, 77, device=CUDA, dtype=torch.float64)
    if name == "cumprod":
        x = 1 + 0.01 * x
    got = getattr(parascan, name)(x, dim=1)
    want = getattr(torch, name)(x, dim=1)
    close(got, want[0] if isinstance(want, tuple) else want, 1e-12)  # cummax / cummin: (values, indices)


def test_log_space_recurrence_and_its_backward_match_the_host():
    g = torch.Generator().manual_seed(3)
    la = -0.3 * torch.rand(3, 20, 900, generator=g, dtype=torch.float64)
    lb = 4 * torch.randn(3, 20, 900, generator=g, dtype=torch.float64)
    lb[0, 0, :10] = -math.inf  # exact zeros
    y = parascan.log_linear_recurrence(la, lb)
    y_gpu = parascan.log_linear_recurrence(la.to(CUDA), lb.to(CUDA))
    close(y_gpu, y, 1e-12)
    dy = torch.randn(3, 20, 900, dtype=torch.float64)
    want = parascan.log_linear_recurrence_backward(la, lb, y, dy)
    got = parascan.log_linear_recurrence_backward(la.to(CUDA), lb.to(CUDA), y.to(CUDA), dy.to(CUDA))
    for gg, w in zip(got, want):
        close(gg, w, 1e-11)
    x = torch.randn(4, 700, dtype=torch.float64)
    lse = torch.logcumsumexp(x, 1)
    close(parascan.logcumsumexp_backward(x.to(CUDA), lse.to(CUDA), torch.ones_like(x).to(CUDA), dim=1),
          parascan.logcumsumexp_backward(x, lse, torch.ones_like(x), dim=1), 1e-12)


def test_signed_log_space_recurrence_and_its_backward_match_the_host():
    g = torch.Generator().manual_seed(4)
    for dtype in (torch.float64, torch.float32):
        la = (-0.3 * torch.rand(3, 20, 700, generator=g, dtype=torch.float64)).to(dtype)
        # negative tokens from a negative initial value: x < 0 throughout, clear of the zero crossings where
        # log|x| and the shares a x[t-1] / x[t] are ill-conditioned (the host tests cover those)
        b = -(0.1 + torch.randn(3, 20, 700, generator=g, dtype=torch.float64).abs()).to(dtype)
        b[0, 0, :10] = 0  # exact zero tokens
        x = parascan.signed_log_linear_recurrence(la, b, initial=(math.log(2.0), -1.0))
        x_gpu = parascan.signed_log_linear_recurrence(la.to(CUDA), b.to(CUDA), initial=(math.log(2.0), -1.0))
        rtol = 1e-12 if dtype == torch.float64 else 1e-5
        close(x_gpu[..., 1], x[..., 1], 0)  # the signs exactly
        close(x_gpu[..., 0], x[..., 0], rtol)
        dy = torch.randn(3, 20, 700, generator=g, dtype=torch.float64).to(dtype)
        want = parascan.signed_log_linear_recurrence_backward(la, b, x, dy, return_grad_initial=True)
        got = parascan.signed_log_linear_recurrence_backward(la.to(CUDA), b.to(CUDA), x.to(CUDA), dy.to(CUDA),
                                                             return_grad_initial=True)
        for gg, w in zip(got, want):
            close(gg, w, 1e-10 if dtype == torch.float64 else 1e-4)


def test_packed_batches_take_cu_seqlens_on_the_device():
    lengths = [5, 1, 300, 64, 0, 2000]
    offsets = torch.tensor(np.concatenate([[0], np.cumsum(lengths)]), dtype=torch.int32)
    a, b = gates_tokens((int(offsets[-1]), 48))  # (total, D): time along dim 0
    want = parascan.linear_recurrence(a, b, dim=0, cu_seqlens=offsets)
    got = parascan.linear_recurrence(a.to(CUDA), b.to(CUDA), dim=0, cu_seqlens=offsets.to(CUDA))
    close(got, want, 1e-5)


def test_streams_default_to_torchs_current_one():
    a, b = gates_tokens((8, 64, 4096))
    a, b = a.to(CUDA), b.to(CUDA)
    want = parascan.linear_recurrence(a, b)
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        got = parascan.linear_recurrence(a, b)  # enqueued on `side`
        explicit = parascan.linear_recurrence(a, b, stream=side)
    side.synchronize()
    close(got, want, 0)
    close(explicit, want, 0)


def test_mixed_devices_are_refused_with_the_argument_named():
    # (per-sequence values are moved to the inputs' device by the Python layer)
    a, b = gates_tokens((2, 8, 100))
    with pytest.raises(ValueError, match="tokens"):
        parascan.linear_recurrence(a.to(CUDA), b)
    x = parascan.linear_recurrence(a.to(CUDA), b.to(CUDA), initial=torch.zeros(2, 8))  # moved to the device
    assert x.device.type == "cuda"
    with pytest.raises(ValueError, match="out"):
        parascan.linear_recurrence(a.to(CUDA), b.to(CUDA), out=torch.empty(2, 8, 100))
    W = torch.eye(3).expand(2, 50, 3, 3).contiguous()
    with pytest.raises(ValueError, match="b"):
        parascan.affine_recurrence(W.to(CUDA), torch.ones(2, 50, 3), dim=1)


def random_matrices(shape, n, dtype, seed):
    """Matrices near the identity (products stay of order one over a few hundred steps)."""
    g = torch.Generator().manual_seed(seed)
    return (torch.eye(n, dtype=torch.float64) + torch.randn(shape + (n, n), generator=g, dtype=torch.float64)
            / (3 * n)).to(dtype)


def chains_match_the_host(M, M0, tol):
    """The matrix chains of M (B, T, N, N) on the GPU against the host's: prefix (initial M0, final), product,
    both backward passes; both orders, forward and reverse."""
    gP = torch.randn(M.shape, dtype=torch.float64).to(M.dtype)
    for order in ("left_to_right", "right_to_left"):
        for reverse in (False, True):
            want, want_final = parascan.matrix_chain(M, dim=1, initial=M0, reverse=reverse, order=order,
                                                     return_final=True)
            got, got_final = parascan.matrix_chain(M.to(CUDA), dim=1, initial=M0.to(CUDA), reverse=reverse,
                                                   order=order, return_final=True)
            assert got.device.type == "cuda"
            close(got, want, tol)
            close(got_final, want_final, tol)
            close(parascan.matrix_chain_product(M.to(CUDA), dim=1, initial=M0.to(CUDA), reverse=reverse,
                                                order=order), want_final, tol)
            close(parascan.matrix_chain_product(M.to(CUDA), dim=1, reverse=reverse, order=order),
                  parascan.matrix_chain_product(M, dim=1, reverse=reverse, order=order), tol)
            close(parascan.matrix_chain_backward(M.to(CUDA), want.to(CUDA), gP.to(CUDA), dim=1, initial=M0.to(CUDA),
                                                 reverse=reverse, order=order),
                  parascan.matrix_chain_backward(M, want, gP, dim=1, initial=M0, reverse=reverse, order=order), tol)
            close(parascan.matrix_chain_product_backward(M.to(CUDA), gP[:, 0].to(CUDA), dim=1, initial=M0.to(CUDA),
                                                         reverse=reverse, order=order),
                  parascan.matrix_chain_product_backward(M, gP[:, 0], dim=1, initial=M0, reverse=reverse,
                                                         order=order), tol)


@pytest.mark.parametrize("n", [2, 3, 4, 8, 16])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_matrices_match_the_host(n, dtype):
    tol = 1e-4 if dtype == torch.float32 else 1e-11
    M = random_matrices((3, 200), n, dtype, n)  # (B, T, N, N): time along dim 1
    chains_match_the_host(M, random_matrices((3,), n, dtype, n + 1), tol)
    b = torch.randn(3, 200, n, dtype=torch.float64).to(dtype)
    x0 = torch.randn(3, n, dtype=torch.float64).to(dtype)
    want, want_final = parascan.affine_recurrence(M, b, dim=1, initial=x0, return_final=True)
    got, got_final = parascan.affine_recurrence(M.to(CUDA), b.to(CUDA), dim=1, initial=x0.to(CUDA), return_final=True)
    close(got, want, tol)
    close(got_final, want_final, tol)
    gx = torch.randn(3, 200, n, dtype=torch.float64).to(dtype)
    for g, w in zip(parascan.affine_recurrence_backward(M.to(CUDA), got, gx.to(CUDA), dim=1, initial=x0.to(CUDA),
                                                        return_grad_initial=True),
                    parascan.affine_recurrence_backward(M, want, gx, dim=1, initial=x0, return_grad_initial=True)):
        assert g.device.type == "cuda"
        close(g, w, tol)


@pytest.mark.parametrize("n", [5, 33, 64])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_runtime_size_chains_match_the_host(n, dtype):
    """Sizes without fixed-size kernels run cuBLAS chains on the GPU: against the host's (Eigen, fp64 loops),
    every option, both orders, their backward passes; float32 with tensor-core arithmetic too (math)."""
    tol = 1e-4 if dtype == torch.float32 else 1e-11
    M = random_matrices((2, 150), n, dtype, n)
    chains_match_the_host(M, random_matrices((2,), n, dtype, n + 1), tol)
    # The torch ops, their workspace from PyTorch's caching allocator.
    want = parascan.matrix_chain(M, dim=1)
    close(pt.matrix_chain(M.to(CUDA), dim=1), want, tol)
    close(pt.matrix_chain_product(M.to(CUDA), dim=1), want[:, -1], tol)
    if dtype == torch.float32:
        for mode, loose in (("tf32", 3e-2), ("bf16", 2e-1)):
            close(pt.matrix_chain(M.to(CUDA), dim=1, math=mode), want, loose)
            close(parascan.matrix_chain_product(M.to(CUDA), dim=1, math=mode), want[:, -1], loose)


def test_runtime_size_chain_workspace_from_torch():
    """The torch ops' large temporaries (64 MiB and more) come from PyTorch's caching allocator: the product
    of a chain of 1024 256 x 256 matrices needs about 3/4 of a matrix a factor, 192 MiB; a small chain's stay
    in parascan's pool (no Python callback). Their gradients check in fp64."""
    for T, n, large in ((1024, 256, True), (64, 33, False)):
        M = random_matrices((1, T), n, torch.float32, 3).to(CUDA)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        result = pt.matrix_chain_product(M, dim=1)
        torch.cuda.synchronize()
        grown = torch.cuda.max_memory_allocated() - before
        assert (grown >= 64 << 20) if large else (grown < 1 << 20), grown
        close(result, parascan.matrix_chain_product(M.cpu(), dim=1), 1e-4 if n < 100 else 1e-3)
    m = random_matrices((2, 9), 5, torch.float64, 4).to(CUDA).requires_grad_()
    torch.autograd.gradcheck(lambda v: pt.matrix_chain(v, dim=1), (m,))
    torch.autograd.gradcheck(lambda v: pt.matrix_chain_product(v, dim=1, reverse=True), (m,))


def test_matrix_ops_autograd_on_cuda():
    M = random_matrices((2, 30), 3, torch.float64, 5).to(CUDA).requires_grad_()
    torch.autograd.gradcheck(lambda m: pt.matrix_chain(m, dim=1), (M,))
    b = torch.randn(2, 30, 3, dtype=torch.float64, device=CUDA, requires_grad=True)
    x0 = torch.randn(2, 3, dtype=torch.float64, device=CUDA, requires_grad=True)
    torch.autograd.gradcheck(lambda w, v, i: pt.affine_recurrence(w, v, dim=1, initial=i), (M, b, x0))


def test_torch_ops_on_cuda_autograd_gradcheck_and_compile():
    a, b = gates_tokens((2, 3, 50), torch.float64)
    a, b = a.to(CUDA).requires_grad_(), b.to(CUDA).requires_grad_()
    x0 = torch.randn(2, 3, dtype=torch.float64, device=CUDA, requires_grad=True)
    torch.autograd.gradcheck(lambda g, t, i: pt.linear_recurrence(g, t, initial=i), (a, b, x0))
    x = torch.randn(3, 40, dtype=torch.float64, device=CUDA, requires_grad=True)
    torch.autograd.gradcheck(lambda v: pt.logcumsumexp(v, dim=1), (x,))

    compiled = torch.compile(lambda g, t: pt.scan(g, t).square().sum(), fullgraph=True)
    g32, t32 = gates_tokens((4, 16, 1000))
    g32, t32 = g32.to(CUDA).requires_grad_(), t32.to(CUDA).requires_grad_()
    loss = compiled(g32, t32)
    loss.backward()
    g_ref, t_ref = g32.detach().cpu().requires_grad_(), t32.detach().cpu().requires_grad_()
    pt.scan(g_ref, t_ref).square().sum().backward()
    close(loss.detach(), pt.scan(g_ref.detach(), t_ref.detach()).square().sum(), 1e-5)
    close(g32.grad, g_ref.grad, 1e-4)
    close(t32.grad, t_ref.grad, 1e-4)


def test_bf16_autograd_runs_on_cuda():
    a, b = gates_tokens((2, 8, 512), torch.bfloat16)
    a, b = a.to(CUDA).requires_grad_(), b.to(CUDA).requires_grad_()
    pt.scan(a, b).float().sum().backward()
    assert a.grad.dtype == torch.bfloat16 and torch.isfinite(a.grad.float()).all()
    assert torch.isfinite(b.grad.float()).all()


def test_cupy_arrays_run_on_their_device_and_current_stream():
    cupy = pytest.importorskip("cupy")
    a, b = gates_tokens((3, 24, 1500))
    want, want_final = parascan.linear_recurrence(a.numpy(), b.numpy(), return_final=True)
    ca, cb = cupy.asarray(a.numpy()), cupy.asarray(b.numpy())
    side = cupy.cuda.Stream(non_blocking=True)
    with side:
        got, got_final = parascan.linear_recurrence(ca, cb, return_final=True)  # on `side`
    side.synchronize()
    assert isinstance(got, cupy.ndarray) and got.dtype == cupy.float32 and isinstance(got_final, cupy.ndarray)
    close(torch.from_numpy(cupy.asnumpy(got)), want, 1e-5)
    close(torch.from_numpy(cupy.asnumpy(got_final)), want_final, 1e-5)
    out = cupy.full((3, 24, 750), cupy.nan, dtype=cupy.float32)
    parascan.linear_recurrence(ca[:, :, ::2], cb[:, :, 1::2], out=out)  # strided, unaligned views
    close(torch.from_numpy(cupy.asnumpy(out)),
          parascan.linear_recurrence(a[:, :, ::2].contiguous().numpy(), b[:, :, 1::2].contiguous().numpy()), 1e-5)
    lengths = [7, 0, 900, 33]
    offsets = cupy.asarray(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64))
    pa, pb = cupy.asarray(a.numpy()[0, :, :940].T.copy()), cupy.asarray(b.numpy()[0, :, :940].T.copy())
    packed = parascan.linear_recurrence(pa, pb, dim=0, cu_seqlens=offsets)
    close(torch.from_numpy(cupy.asnumpy(packed)),
          parascan.linear_recurrence(cupy.asnumpy(pa), cupy.asnumpy(pb), dim=0, cu_seqlens=cupy.asnumpy(offsets)),
          1e-5)
    x = cupy.random.standard_normal((4, 500))
    close(torch.from_numpy(cupy.asnumpy(parascan.logcumsumexp(x, dim=1))),
          torch.logcumsumexp(torch.from_numpy(cupy.asnumpy(x)), 1), 1e-12)
    with pytest.raises(ValueError, match="tokens"):
        parascan.linear_recurrence(ca, b.numpy())
