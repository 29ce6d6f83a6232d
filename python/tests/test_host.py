"""The Python entry points on NumPy arrays (host backend), against fp64 sequential references.

Every case draws fresh random inputs from a seed that the failure message prints; tolerances come from
the dtype (a contracting recurrence's error does not grow with T: a few ulps of the terms' size)."""
import numpy as np
import pytest

import parascan

SEED = np.random.SeedSequence().entropy
RNG = np.random.default_rng(SEED)
EPS = {np.float32: np.finfo(np.float32).eps, np.float64: np.finfo(np.float64).eps,
       np.complex64: np.finfo(np.float32).eps, np.complex128: np.finfo(np.float64).eps}


def gates_tokens(shape, dtype):
    a = RNG.uniform(0.5, 0.99, shape)
    b = RNG.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        a = a * np.exp(1j * RNG.uniform(-np.pi, np.pi, shape))
        b = b + 1j * RNG.standard_normal(shape)
    return a.astype(dtype), b.astype(dtype)


def reference(a, b, dim=-1, initial=None, reverse=False, exclusive=False):
    """fp64 (complex128) loop along `dim`: returns (x, S, final), S[t] = |a| S[t-1] + |b| (the terms' size)."""
    a = np.moveaxis(np.asarray(a, dtype=np.complex128), dim, -1)
    b = np.moveaxis(np.asarray(b, dtype=np.complex128), dim, -1)
    T = a.shape[-1]
    x = np.zeros(a.shape[:-1], np.complex128) if initial is None else np.broadcast_to(
        np.asarray(initial, np.complex128), a.shape[:-1]).copy()
    S = np.abs(x)
    out, size = np.empty_like(a), np.empty(a.shape)
    for k in range(T):
        t = T - 1 - k if reverse else k
        if exclusive:
            out[..., t], size[..., t] = x, S
        x = a[..., t] * x + b[..., t]
        S = np.abs(a[..., t]) * S + np.abs(b[..., t])
        if not exclusive:
            out[..., t], size[..., t] = x, S
    return np.moveaxis(out, -1, dim), np.moveaxis(size, -1, dim), x


def close(got, ref, size, dtype, ulps=16):
    err = np.max(np.abs(np.asarray(got, np.complex128) - ref) / (size + 1e-300), initial=0.0)
    assert err <= ulps * EPS[dtype], "relative error %.3g > %d ulps (seed %d)" % (err, ulps, SEED)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("shape,dim", [((0,), -1), ((1,), -1), ((33,), 0), ((3, 4097), -1), ((2, 3, 100), -1),
                                       ((2, 100, 3), 1), ((4, 5), 0), ((2, 0, 3), 1), ((2, 3, 4, 50), -1)])
def test_linear_recurrence(dtype, shape, dim):
    a, b = gates_tokens(shape, dtype)
    batch = tuple(s for k, s in enumerate(shape) if k != dim % len(shape))
    x0 = RNG.standard_normal(batch).astype(dtype)
    for reverse in (False, True):
        for exclusive in (False, True):
            for initial in (None, x0):
                x, final = parascan.linear_recurrence(a, b, dim=dim, initial=initial, reverse=reverse,
                                                      exclusive=exclusive, return_final=True)
                assert x.dtype == dtype and x.shape == a.shape
                ref, size, ref_final = reference(a, b, dim, initial, reverse, exclusive)
                close(x, ref, size, dtype)
                full = reference(a, b, dim, initial, reverse, False)
                if shape[dim] > 0:
                    close(final, ref_final, np.take(full[1], -1 if not reverse else 0, axis=dim), dtype)


def test_strided_views_and_read_only_inputs():
    a, b = gates_tokens((6, 40, 8), np.float32)
    a_view, b_view = a[::2, :, 1::3], b[::2, :, 1::3]  # strided batch axes, time in the middle
    a_view.setflags(write=False)
    x = parascan.linear_recurrence(a_view, b_view, dim=1)
    ref, size, _ = reference(a_view, b_view, dim=1)
    close(x, ref, size, np.float32)
    out = np.zeros((6, 40, 8), np.float32)[::2, :, 1::3]  # into a strided output
    parascan.linear_recurrence(a_view, b_view, dim=1, out=out)
    close(out, ref, size, np.float32)
    # Transposed (time-major) arrays: no copy needed, any strides.
    at, bt = np.ascontiguousarray(a.T), np.ascontiguousarray(b.T)
    x = parascan.linear_recurrence(at.T, bt.T, dim=-1)
    close(x, *reference(a, b)[:2], np.float32)


def adjoint_reference(a, x, dy, x0=0.0, grad_final=None):
    """fp64 adjoint along the last axis: g[t] = dy[t] + a[t+1] g[t+1]; (dL/da, dL/db, dL/dx0)."""
    a, x, dy = (np.asarray(v, np.complex128) for v in (a, x, dy))
    g = np.zeros(a.shape[:-1], np.complex128) if grad_final is None else np.asarray(grad_final, np.complex128)
    da, db = np.empty_like(a), np.empty_like(a)
    T = a.shape[-1]
    nxt = np.zeros(a.shape[:-1], np.complex128)
    for t in range(T - 1, -1, -1):
        g = dy[..., t] + (np.conj(a[..., t + 1]) * g if t + 1 < T else g)
        prev = x[..., t - 1] if t > 0 else np.broadcast_to(np.asarray(x0, np.complex128), a.shape[:-1])
        db[..., t], da[..., t] = g, g * np.conj(prev)
    return da, db, np.conj(a[..., 0]) * g


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
@pytest.mark.parametrize("T", [1, 2, 33, 1000])
def test_linear_recurrence_backward(dtype, T):
    a, b = gates_tokens((3, T), dtype)
    x0 = RNG.standard_normal(3).astype(dtype)
    dy = RNG.standard_normal((3, T)).astype(dtype)
    gf = RNG.standard_normal(3).astype(dtype)
    x = parascan.linear_recurrence(a, b, initial=x0)
    da, db, dx0 = parascan.linear_recurrence_backward(a, x, dy, initial=x0, grad_final=gf, return_grad_initial=True)
    rda, rdb, rdx0 = adjoint_reference(a, x, dy, x0, gf)
    scale = np.max(np.abs(rdb)) * (1 + np.max(np.abs(x)))
    for got, ref in ((da, rda), (db, rdb), (dx0, rdx0)):
        err = np.max(np.abs(got - ref)) / scale
        assert err <= 64 * EPS[dtype], "error %.3g (seed %d)" % (err, SEED)


def test_linear_recurrence_backward_against_finite_differences():
    """fp64: the loss L = sum(w * x) + v * x[T-1]; central differences in every gate and token."""
    T = 7
    a, b = gates_tokens((T,), np.float64)
    w, v, x0 = RNG.standard_normal(T), RNG.standard_normal(), 0.3

    def loss(a, b, x0):
        x = parascan.linear_recurrence(a, b, initial=x0)
        return np.sum(w * x) + v * x[-1]

    x = parascan.linear_recurrence(a, b, initial=x0)
    da, db, dx0 = parascan.linear_recurrence_backward(a, x, w, initial=x0, grad_final=v, return_grad_initial=True)
    h = 1e-6
    for t in range(T):
        e = np.zeros(T)
        e[t] = h
        assert abs((loss(a + e, b, x0) - loss(a - e, b, x0)) / (2 * h) - da[t]) < 1e-7, SEED
        assert abs((loss(a, b + e, x0) - loss(a, b - e, x0)) / (2 * h) - db[t]) < 1e-7, SEED
    assert abs((loss(a, b, x0 + h) - loss(a, b, x0 - h)) / (2 * h) - dx0) < 1e-7, SEED


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_running_scans(dtype):
    x = RNG.standard_normal((3, 5, 257)).astype(dtype)
    eps = EPS[dtype]
    for dim in (-1, 1, 0):
        s = parascan.cumsum(x, dim=dim)
        ref = np.cumsum(x.astype(np.float64), axis=dim)
        assert np.max(np.abs(s - ref) / np.cumsum(np.abs(x.astype(np.float64)), axis=dim)) <= 16 * eps, SEED
        assert np.array_equal(parascan.cummax(x, dim=dim), np.maximum.accumulate(x, axis=dim))
        assert np.array_equal(parascan.cummin(x, dim=dim), np.minimum.accumulate(x, axis=dim))
        lse = parascan.logcumsumexp(x, dim=dim)
        ref = np.logaddexp.accumulate(x.astype(np.float64), axis=dim)
        assert np.max(np.abs(lse - ref) / (1 + np.abs(ref))) <= 16 * eps, SEED
    p = parascan.cumprod(np.full(10, 2.0, dtype), reverse=True, exclusive=True)
    assert np.array_equal(p, 2.0 ** np.arange(9, -1, -1))
    y, total = parascan.cumsum(np.ones((2, 4), dtype), initial=np.array([10, 20], dtype), return_final=True)
    assert np.array_equal(total, np.array([14, 24], dtype)) and np.array_equal(y[1], [21, 22, 23, 24])


def test_logcumsumexp_with_minus_infinity():
    x = np.array([-np.inf, 0.0, -np.inf, np.log(3.0)])
    assert np.allclose(parascan.logcumsumexp(x), [-np.inf, 0.0, 0.0, np.log(4.0)])
    assert np.all(np.isneginf(parascan.logcumsumexp(np.full(5, -np.inf))))


def test_bad_input_raises_value_error_and_writes_nothing():
    a, b = gates_tokens((2, 16), np.float32)
    out = np.full((2, 16), 7.0, np.float32)
    cases = [
        (lambda: parascan.linear_recurrence(a, b[:, :15], out=out), "tokens"),
        (lambda: parascan.linear_recurrence(a, b.astype(np.float64), out=out), "tokens.dtype"),
        (lambda: parascan.linear_recurrence(a.astype(np.int32), b.astype(np.int32)), "gates.dtype"),
        (lambda: parascan.linear_recurrence(a, b, out=out, dim=2), "dim"),
        (lambda: parascan.linear_recurrence(a, b, out=out, initial=np.zeros(3, np.float32)), "initial"),
        (lambda: parascan.linear_recurrence(a[:, :15], out[:, 1:], out=out[:, :15]), "no overlap with tokens"),
        (lambda: parascan.linear_recurrence(a, b[:, ::-1], out=out), "tokens.stride"),  # negative strides
        (lambda: parascan.linear_recurrence(a, b, out=np.lib.stride_tricks.as_strided(out, (2, 16), (64, 0))),
         "output.stride"),  # a zero stride: one element written twice
        (lambda: parascan.cumsum(np.arange(4)), "x.dtype"),
        (lambda: parascan.logcumsumexp(np.ones(4, np.complex64)), "x.dtype"),
    ]
    for call, name in cases:
        with pytest.raises(ValueError, match=name.replace(".", r"\.")):
            call()
        assert np.all(out == 7.0), "a rejected call wrote to its output"


def test_in_place_over_the_tokens():
    a, b = gates_tokens((4, 300), np.float64)
    ref, size, _ = reference(a, b)
    parascan.linear_recurrence(a, b, out=b)
    close(b, ref, size, np.float64)


def test_version_matches_the_library():
    import re
    from pathlib import Path
    header = (Path(__file__).resolve().parents[2] / "include" / "parascan" / "version.hpp").read_text()
    parts = [re.search(r"PARASCAN_VERSION_%s (\d+)" % p, header).group(1) for p in ("MAJOR", "MINOR", "PATCH")]
    assert parascan.__version__ == ".".join(parts)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_packed_batches_from_cu_seqlens(dtype):
    """N sequences of 0..300 rows back to back along axis 0 of a (total, D) array, as varlen models pack
    them; each against the recurrence of its own rows, with per-sequence initial states, both directions."""
    lengths = RNG.integers(0, 300, 9)
    lengths[2] = 0
    cu = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)  # int32, as flash-attention's
    total, D = int(cu[-1]), 5
    a, b = gates_tokens((total, D), dtype)
    x0 = RNG.standard_normal((len(lengths), D)).astype(dtype)
    for reverse in (False, True):
        x, final = parascan.linear_recurrence(a, b, dim=0, cu_seqlens=cu, initial=x0, reverse=reverse,
                                              return_final=True)
        assert final.shape == (len(lengths), D)
        for i in range(len(lengths)):
            rows = slice(cu[i], cu[i + 1])
            ref, size, ref_final = reference(a[rows], b[rows], 0, x0[i], reverse)
            close(x[rows], ref, size, dtype)
            close(final[i], ref_final, np.abs(ref_final) + 1, dtype)
        da, db = parascan.linear_recurrence_backward(a, x, np.ones_like(a), dim=0, cu_seqlens=cu, initial=x0,
                                                     reverse=reverse)
        for i in range(len(lengths)):
            rows = slice(cu[i], cu[i + 1])
            if lengths[i] == 0 or reverse:
                continue
            rda, rdb, _ = adjoint_reference(a[rows].T, x[rows].T, np.ones((D, lengths[i])), x0[i])
            assert np.max(np.abs(db[rows] - rdb.T.real) / (1 + np.abs(rdb.T))) <= 64 * EPS[dtype], SEED
            assert np.max(np.abs(da[rows] - rda.T.real) / (1 + np.abs(rda.T))) <= 256 * EPS[dtype], SEED
    s = parascan.cumsum(a, dim=0, cu_seqlens=cu)
    for i in range(len(lengths)):
        rows = slice(cu[i], cu[i + 1])
        assert np.allclose(s[rows], np.cumsum(a[rows].astype(np.float64), axis=0), rtol=16 * EPS[dtype]), SEED
    with pytest.raises(ValueError, match="cu_seqlens"):
        parascan.cumsum(a, dim=0, cu_seqlens=np.array([0, total + 1]))
    with pytest.raises(ValueError, match=r"offsets\[2\]"):
        parascan.cumsum(a, dim=0, cu_seqlens=np.array([0, 5, 3]))


def test_log_linear_recurrence_matches_the_linear_one():
    a, b = gates_tokens((4, 500), np.float64)
    b = np.abs(b) + 0.1
    y, final = parascan.log_linear_recurrence(np.log(a), np.log(b), initial=np.log(2.0), return_final=True)
    x = parascan.linear_recurrence(a, b, initial=2.0)
    assert np.max(np.abs(np.exp(y) - x) / x) <= 64 * EPS[np.float64], SEED
    assert np.allclose(np.exp(final), x[:, -1], rtol=1e-13)
    # Far outside float range in linear space, fine in log space.
    y = parascan.log_linear_recurrence(np.full(10, 100.0, np.float32), np.zeros(10, np.float32))
    assert np.isfinite(y).all() and abs(y[-1] - 900.0) < 1e-3


def test_log_linear_recurrence_backward_against_finite_differences():
    la, lb = -0.5 * RNG.random((2, 7)), 2 * RNG.standard_normal((2, 7))
    y0, w, wf = RNG.standard_normal(2), RNG.standard_normal((2, 7)), RNG.standard_normal(2)
    for reverse in (False, True):
        def loss(la_, lb_, y0_):
            y = parascan.log_linear_recurrence(la_, lb_, initial=y0_, reverse=reverse)
            return np.sum(w * y) + np.sum(wf * y[:, 0 if reverse else -1])
        y = parascan.log_linear_recurrence(la, lb, initial=y0, reverse=reverse)
        g_la, g_lb, g_y0 = parascan.log_linear_recurrence_backward(la, lb, y, w, initial=y0, reverse=reverse,
                                                                   grad_final=wf, return_grad_initial=True)
        h = 1e-6
        for t in (0, 3, 6):
            e = np.zeros((2, 7))
            e[1, t] = h
            assert abs((loss(la + e, lb, y0) - loss(la - e, lb, y0)) / (2 * h) - g_la[1, t]) < 1e-6, SEED
            assert abs((loss(la, lb + e, y0) - loss(la, lb - e, y0)) / (2 * h) - g_lb[1, t]) < 1e-6, SEED
        e0 = np.array([0.0, h])
        assert abs((loss(la, lb, y0 + e0) - loss(la, lb, y0 - e0)) / (2 * h) - g_y0[1]) < 1e-6, SEED


def test_signed_log_linear_recurrence_matches_the_linear_one():
    for dtype in (np.float64, np.float32):
        a, b = gates_tokens((3, 400), np.float64)
        la = np.log(a).astype(dtype)
        b = b.astype(dtype)
        x, final = parascan.signed_log_linear_recurrence(la, b, initial=(np.log(2.0), -1.0), return_final=True)
        assert x.shape == (3, 400, 2) and x.dtype == dtype and final.shape == (3, 2)
        want = parascan.linear_recurrence(np.exp(la.astype(np.float64)), b.astype(np.float64), initial=-2.0)
        size = reference(np.exp(la.astype(np.float64)), b.astype(np.float64), initial=-2.0)[1]
        got = x[..., 1] * np.exp(x[..., 0].astype(np.float64))
        assert np.max(np.abs(got - want) / size) <= 64 * EPS[dtype], SEED
        assert np.array_equal(final, x[:, -1]), SEED
        # reverse, over axis 0: the same as the forward of the flipped sequences
        xr = parascan.signed_log_linear_recurrence(la.T, b.T, dim=0, reverse=True)
        xf = parascan.signed_log_linear_recurrence(la[:, ::-1].copy(), b[:, ::-1].copy())
        assert np.allclose(xr[::-1].transpose(1, 0, 2), xf, rtol=16 * EPS[dtype], atol=0), SEED
    # Far beyond the float range, and signs: x = e^100 x[-1] - 1 from x[-1] = 1 (then e^100 (...) - 1).
    x = parascan.signed_log_linear_recurrence(np.full(10, 100.0, np.float32), np.full(10, -1.0, np.float32),
                                              initial=(0.0, 1.0))
    assert np.allclose(x[:, 0], 100.0 * np.arange(1, 11), rtol=1e-6) and (x[:, 1] == 1).all()
    # Exact cancellation is zero, (-inf, +1): 3, then 3 - 3.
    x = parascan.signed_log_linear_recurrence(np.zeros(2), np.array([3.0, -3.0]))
    assert x[1, 0] == -np.inf and x[1, 1] == 1.0


def test_signed_log_linear_recurrence_packed_and_errors():
    la, b = np.log(RNG.uniform(0.5, 1.0, (9, 3))), RNG.standard_normal((9, 3))
    x = parascan.signed_log_linear_recurrence(la, b, dim=0, cu_seqlens=np.array([0, 4, 9]))
    for lo, hi in ((0, 4), (4, 9)):
        # x itself against the fp64 loop, relative to the size of its terms (x may cancel to near zero)
        want, size, _ = reference(np.exp(la[lo:hi]), b[lo:hi], dim=0)
        got = x[lo:hi, :, 1] * np.exp(x[lo:hi, :, 0])
        assert np.max(np.abs(got - want.real) / size) <= 64 * EPS[np.float64], SEED
    out = np.zeros((9, 3, 3))
    with pytest.raises(ValueError, match=r"out\.shape"):
        parascan.signed_log_linear_recurrence(la, b, out=out)
    assert (out == 0).all()
    with pytest.raises(ValueError, match="initial"):
        parascan.signed_log_linear_recurrence(la, b, initial=np.zeros((9, 3)))
    with pytest.raises(ValueError, match="tokens"):
        parascan.signed_log_linear_recurrence(la, b.astype(np.float32))


def test_signed_log_linear_recurrence_backward_against_finite_differences():
    # Inputs whose x stays clear of zero both ways (|x| >= 0.05): near a zero crossing log|x| is too curved
    # for a difference step of 1e-6 to measure its derivative to 1e-6.
    while True:
        la = -0.5 * RNG.random((2, 7))
        b = 2 * RNG.standard_normal((2, 7))
        x0 = np.stack([RNG.standard_normal(2), np.array([1.0, -1.0])], axis=-1)
        if all(np.all(parascan.signed_log_linear_recurrence(la, b, initial=x0, reverse=r)[..., 0] >= -3.0)
               for r in (False, True)):  # log 0.05 = -3.0
            break
    w, wf = RNG.standard_normal((2, 7)), RNG.standard_normal(2)
    for reverse in (False, True):
        def loss(la_, b_, x0_):
            x = parascan.signed_log_linear_recurrence(la_, b_, initial=x0_, reverse=reverse)
            return np.sum(w * x[..., 0]) + np.sum(wf * x[:, 0 if reverse else -1, 0])
        x = parascan.signed_log_linear_recurrence(la, b, initial=x0, reverse=reverse)
        g_la, g_b, g_x0 = parascan.signed_log_linear_recurrence_backward(la, b, x, w, initial=x0, reverse=reverse,
                                                                          grad_final=wf, return_grad_initial=True)
        h = 1e-6
        for t in (0, 3, 6):
            e = np.zeros((2, 7))
            e[1, t] = h
            scale = 1 + abs(g_la[1, t]) + abs(g_b[1, t])
            assert abs((loss(la + e, b, x0) - loss(la - e, b, x0)) / (2 * h) - g_la[1, t]) < 1e-6 * scale, SEED
            assert abs((loss(la, b + e, x0) - loss(la, b - e, x0)) / (2 * h) - g_b[1, t]) < 1e-6 * scale, SEED
        e0 = np.array([[0.0, 0.0], [h, 0.0]])
        assert abs((loss(la, b, x0 + e0) - loss(la, b, x0 - e0)) / (2 * h) - g_x0[1]) < 1e-6 * (1 + abs(g_x0[1])), SEED


def test_logcumsumexp_backward_against_finite_differences():
    x = RNG.standard_normal(9)
    x[3] = -np.inf
    w = RNG.standard_normal(9)
    for reverse in (False, True):
        for exclusive in (False, True):
            def loss(v):
                return np.sum(w * np.where(np.isneginf(parascan.logcumsumexp(v, reverse=reverse, exclusive=exclusive)),
                                           0.0, parascan.logcumsumexp(v, reverse=reverse, exclusive=exclusive)))
            y = parascan.logcumsumexp(x, reverse=reverse, exclusive=exclusive)
            gw = np.where(np.isneginf(y), 0.0, w)  # outputs that are -inf carry no gradient in the loss
            g = parascan.logcumsumexp_backward(x, y, gw, reverse=reverse, exclusive=exclusive)
            assert g[3] == 0.0
            h = 1e-6
            for t in (0, 4, 8):
                e = np.zeros(9)
                e[t] = h
                numeric = (loss(x + e) - loss(x - e)) / (2 * h)
                assert abs(numeric - g[t]) < 1e-6, (reverse, exclusive, t, numeric, g[t], SEED)


def test_logcumsumexp_backward_takes_the_final_and_gives_the_initial_gradient():
    # L = sum w y + wf * final, y = logcumsumexp(x, initial=y0) over (2, 7): dL/dx and dL/dy0 by differences
    x = RNG.standard_normal((2, 7))
    y0 = RNG.standard_normal(2)
    w, wf = RNG.standard_normal((2, 7)), RNG.standard_normal(2)
    for reverse in (False, True):
        def loss(v, v0):
            y, final = parascan.logcumsumexp(v, initial=v0, reverse=reverse, return_final=True)
            return np.sum(w * y) + np.sum(wf * final)
        y = parascan.logcumsumexp(x, initial=y0, reverse=reverse)
        g, g0 = parascan.logcumsumexp_backward(x, y, w, initial=y0, reverse=reverse, grad_final=wf,
                                               return_grad_initial=True)
        h = 1e-6
        for t in range(7):
            e = np.zeros((2, 7))
            e[1, t] = h
            assert abs((loss(x + e, y0) - loss(x - e, y0)) / (2 * h) - g[1, t]) < 1e-6, (reverse, t, SEED)
        e0 = np.array([0.0, h])
        assert abs((loss(x, y0 + e0) - loss(x, y0 - e0)) / (2 * h) - g0[1]) < 1e-6, (reverse, SEED)
    with pytest.raises(ValueError, match="grad_final"):
        parascan.logcumsumexp_backward(x, y, w, exclusive=True, grad_final=wf)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("N", [2, 3, 4, 8])
def test_affine_recurrence(dtype, N):
    B, T = 3, 67
    W = (RNG.uniform(-0.5, 0.5, (B, T, N, N)) / np.sqrt(N)).astype(dtype)  # contracting
    b = RNG.standard_normal((B, T, N)).astype(dtype)
    x0 = RNG.standard_normal((B, N)).astype(dtype)
    for reverse in (False, True):
        x, final = parascan.affine_recurrence(W, b, dim=1, initial=x0, reverse=reverse, return_final=True)
        ref = np.empty((B, T, N))
        for s in range(B):
            v = x0[s].astype(np.float64)
            for k in range(T):
                t = T - 1 - k if reverse else k
                v = W[s, t].astype(np.float64) @ v + b[s, t]
                ref[s, t] = v
        scale = 1 + np.max(np.abs(ref))
        assert np.max(np.abs(x - ref)) / scale <= 64 * EPS[dtype], SEED
        assert np.max(np.abs(final - ref[:, 0 if reverse else -1])) / scale <= 64 * EPS[dtype], SEED


def test_affine_recurrence_backward_against_finite_differences():
    N, T = 3, 6
    W = RNG.uniform(-0.5, 0.5, (T, N, N))
    b, w, x0 = RNG.standard_normal((T, N)), RNG.standard_normal((T, N)), RNG.standard_normal(N)

    def loss(W, b, x0):
        return np.sum(w * parascan.affine_recurrence(W, b, dim=0, initial=x0))

    x = parascan.affine_recurrence(W, b, dim=0, initial=x0)
    gW, gb, gx0 = parascan.affine_recurrence_backward(W, x, w, dim=0, initial=x0, return_grad_initial=True)
    h = 1e-6
    for t, i, j in ((0, 0, 0), (2, 1, 2), (5, 2, 1)):
        e = np.zeros_like(W)
        e[t, i, j] = h
        assert abs((loss(W + e, b, x0) - loss(W - e, b, x0)) / (2 * h) - gW[t, i, j]) < 1e-7, SEED
        e = np.zeros_like(b)
        e[t, i] = h
        assert abs((loss(W, b + e, x0) - loss(W, b - e, x0)) / (2 * h) - gb[t, i]) < 1e-7, SEED
    e = np.zeros(N)
    e[1] = h
    assert abs((loss(W, b, x0 + e) - loss(W, b, x0 - e)) / (2 * h) - gx0[1]) < 1e-7, SEED


@pytest.mark.parametrize("order", ["left_to_right", "right_to_left"])
def test_matrix_chain_and_its_gradient(order):
    M = RNG.uniform(-0.6, 0.6, (2, 40, 4, 4))
    P = parascan.matrix_chain(M, dim=1, order=order)
    for s in range(2):
        acc = np.eye(4)
        for t in range(40):
            acc = acc @ M[s, t] if order == "left_to_right" else M[s, t] @ acc
            assert np.allclose(P[s, t], acc, atol=1e-13), SEED
    total = parascan.matrix_chain_product(M, dim=1, order=order)
    assert np.allclose(total, P[:, -1], atol=1e-13)
    m, w = RNG.uniform(-0.9, 0.9, (5, 3, 3)), RNG.standard_normal((5, 3, 3))

    def loss(m):
        return np.sum(w * parascan.matrix_chain(m, dim=0, order=order))

    g = parascan.matrix_chain_backward(m, parascan.matrix_chain(m, dim=0, order=order), w, dim=0, order=order)
    h = 1e-6
    for t, i, j in ((0, 0, 1), (2, 2, 2), (4, 1, 0)):
        e = np.zeros_like(m)
        e[t, i, j] = h
        assert abs((loss(m + e) - loss(m - e)) / (2 * h) - g[t, i, j]) < 1e-7, SEED
    q0 = RNG.uniform(-0.9, 0.9, (3, 3))

    def product_loss(m, q0):
        return np.sum(w[0] * parascan.matrix_chain_product(m, dim=0, initial=q0, reverse=True, order=order))

    g, g0 = parascan.matrix_chain_product_backward(m, w[0], dim=0, initial=q0, reverse=True, order=order,
                                                   return_grad_initial=True)
    for t, i, j in ((0, 0, 1), (2, 2, 2), (4, 1, 0)):
        e = np.zeros_like(m)
        e[t, i, j] = h
        assert abs((product_loss(m + e, q0) - product_loss(m - e, q0)) / (2 * h) - g[t, i, j]) < 1e-7, SEED
    e = np.zeros_like(q0)
    e[1, 2] = h
    assert abs((product_loss(m, q0 + e) - product_loss(m, q0 - e)) / (2 * h) - g0[1, 2]) < 1e-7, SEED
    with pytest.raises(ValueError, match="grad_result"):
        parascan.matrix_chain_product_backward(m, np.ones((2, 3, 3)), dim=0)


@pytest.mark.parametrize("n", [1, 5, 12])
@pytest.mark.parametrize("order", ["left_to_right", "right_to_left"])
def test_runtime_size_chains_and_their_gradients(n, order):
    """Sizes without fixed-size kernels run the runtime-size chains (Eigen's dynamic matrices here): against
    a loop in fp64, with initial matrices, reverse and exclusive, a time axis in the middle; gradients by
    central differences."""
    M = RNG.uniform(-1, 1, (2, 30, 3, n, n)) / np.sqrt(n)  # time along axis 1
    M0 = RNG.uniform(-1, 1, (2, 3, n, n)) / np.sqrt(n)
    for reverse in (False, True):
        for exclusive in (False, True):
            P, final = parascan.matrix_chain(M, dim=1, initial=M0, reverse=reverse, exclusive=exclusive,
                                             order=order, return_final=True)
            for s, c in ((0, 0), (1, 2)):
                acc = M0[s, c]
                for t in (range(29, -1, -1) if reverse else range(30)):
                    if exclusive:
                        assert np.allclose(P[s, t, c], acc, atol=1e-12), SEED
                    acc = acc @ M[s, t, c] if order == "left_to_right" else M[s, t, c] @ acc
                    if not exclusive:
                        assert np.allclose(P[s, t, c], acc, atol=1e-12), SEED
                assert np.allclose(final[s, c], acc, atol=1e-12), SEED
            total = parascan.matrix_chain_product(M, dim=1, initial=M0, reverse=reverse, order=order)
            assert np.allclose(total, final, atol=1e-12), SEED
    single = M.astype(np.float32)  # tensor-core arithmetic is the GPU's: the host multiplies exactly
    assert np.array_equal(parascan.matrix_chain(single, dim=1, order=order, math="tf32"),
                          parascan.matrix_chain(single, dim=1, order=order)), SEED
    m, w = RNG.uniform(-1, 1, (6, n, n)) / np.sqrt(n), RNG.standard_normal((6, n, n))

    def loss(m):
        return np.sum(w * parascan.matrix_chain(m, dim=0, order=order))

    def product_loss(m):
        return np.sum(w[0] * parascan.matrix_chain_product(m, dim=0, order=order))

    g = parascan.matrix_chain_backward(m, parascan.matrix_chain(m, dim=0, order=order), w, dim=0, order=order)
    gp = parascan.matrix_chain_product_backward(m, w[0], dim=0, order=order)
    h = 1e-6
    for t, i, j in ((0, 0, n - 1), (3, n // 2, 0), (5, n - 1, n - 1)):
        e = np.zeros_like(m)
        e[t, i, j] = h
        assert abs((loss(m + e) - loss(m - e)) / (2 * h) - g[t, i, j]) < 1e-7, SEED
        assert abs((product_loss(m + e) - product_loss(m - e)) / (2 * h) - gp[t, i, j]) < 1e-7, SEED


def test_matrix_arguments_checked():
    with pytest.raises(ValueError, match="math"):
        parascan.matrix_chain(np.ones((4, 5, 5)), dim=0, math="fast")
    with pytest.raises(ValueError, match="tf32 and bf16 multiply float matrices"):
        parascan.matrix_chain(np.ones((4, 5, 5)), dim=0, math="tf32")  # float64
    with pytest.raises(ValueError, match="b.shape"):
        parascan.affine_recurrence(np.ones((4, 3, 3)), np.ones((4, 2)), dim=0)
    with pytest.raises(ValueError, match="order"):
        parascan.matrix_chain(np.ones((4, 2, 2)), dim=0, order="up")
    with pytest.raises(ValueError, match="contiguous elements"):
        parascan.matrix_chain(np.ones((4, 2, 2)).transpose(0, 2, 1), dim=0)
