"""JAX arrays: parascan.jax (XLA custom calls: jit, vmap, grad; host and GPU arrays) against the fp64
references of test_host.py, its gradients against central differences in fp64, and the package's generic
functions on JAX arrays. Skipped where JAX is not installed (CI does not install it); the parascan.jax
tests also where the extension was built without JAX (no XLA targets)."""
import numpy as np
import pytest

import parascan
from test_host import EPS, SEED, RNG, close, gates_tokens, reference

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)  # fp64 gradients; every array below has an explicit dtype
CPU = jax.devices("cpu")[0]
GPUS = [d for d in jax.devices() if d.platform != "cpu"]
DEVICES = [CPU] + GPUS[:1]
xla = pytest.mark.skipif(not hasattr(parascan._parascan, "xla_targets"), reason="extension built without JAX")


def on(device, *arrays):
    """JAX arrays on `device` (JAX puts new arrays on its default device, a GPU where there is one)."""
    put = [jax.device_put(np.asarray(a), device) for a in arrays]
    return put[0] if len(put) == 1 else put


def test_linear_recurrence_and_its_backward_on_jax_arrays():
    a = RNG.uniform(0.5, 1.0, (3, 4, 100)).astype(np.float32)
    b = RNG.standard_normal((3, 4, 100)).astype(np.float32)
    x, final = parascan.linear_recurrence(on(CPU, a), on(CPU, b), initial=1.0, return_final=True)
    assert isinstance(x, jax.Array) and isinstance(final, jax.Array)
    want, want_final = parascan.linear_recurrence(a, b, initial=1.0, return_final=True)
    np.testing.assert_array_equal(np.asarray(x), want)
    np.testing.assert_array_equal(np.asarray(final), want_final)
    dx = RNG.standard_normal((3, 4, 100)).astype(np.float32)
    got = parascan.linear_recurrence_backward(gates=on(CPU, a), x=x, grad_x=on(CPU, dx))  # by keyword too
    for g, w in zip(got, parascan.linear_recurrence_backward(a, want, dx)):
        assert isinstance(g, jax.Array)
        np.testing.assert_array_equal(np.asarray(g), w)


def test_scans_on_jax_arrays_match_jax():
    x = on(CPU, RNG.standard_normal((5, 300)).astype(np.float32))  # JAX's default dtype
    # float32 sums in different orders: within a few ulps of the running values (|value| < ~40)
    np.testing.assert_allclose(np.asarray(parascan.cumsum(x, dim=1)), np.asarray(jnp.cumsum(x, axis=1)), atol=1e-4)
    np.testing.assert_allclose(np.asarray(parascan.logcumsumexp(x, dim=1)),
                               np.asarray(jax.lax.cumlogsumexp(x, axis=1)), atol=1e-5)


def contracting(shape, n, dtype=np.float64):
    """Random N x N matrices of spectral norm below 1 (products and recurrences stay bounded)."""
    m = RNG.standard_normal(shape + (n, n))
    return (0.9 * m / np.linalg.norm(m, axis=(-2, -1), keepdims=True)).astype(dtype)


@xla
@pytest.mark.parametrize("device", DEVICES, ids=lambda d: d.platform)
@pytest.mark.parametrize("n", [2, 3, 5, 16, 33])
def test_matrices_through_xla_match_the_host_backend(device, n):
    """The XLA entries against the NumPy path (the same host kernels on the CPU; on the GPU within fp64
    rounding): every option, both orders, a time axis in the middle; the chains of N = 5 and 33 run the
    runtime-size chains (the affine recurrence has the fixed sizes only)."""
    import parascan.jax as pj
    W = contracting((2, 37, 3), n)
    b = RNG.standard_normal((2, 37, 3, n))
    x0, m0 = RNG.standard_normal((2, 3, n)), contracting((2, 3), n)
    jW, jb, jx0, jm0 = on(device, W, b, x0, m0)
    for reverse in (False, True):
        for exclusive in (False, True):
            if n in (2, 3, 4, 8, 16):
                got = pj.affine_recurrence(jW, jb, dim=1, initial=jx0, reverse=reverse, exclusive=exclusive,
                                           return_final=True)
                want = parascan.affine_recurrence(W, b, dim=1, initial=x0, reverse=reverse, exclusive=exclusive,
                                                  return_final=True)
                for g, w in zip(got, want):
                    assert g.devices() == {device}
                    np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12, atol=1e-12)
            for order in ("left_to_right", "right_to_left"):
                got = pj.matrix_chain(jW, dim=1, initial=jm0, reverse=reverse, exclusive=exclusive, order=order,
                                      return_final=True)
                want = parascan.matrix_chain(W, dim=1, initial=m0, reverse=reverse, exclusive=exclusive, order=order,
                                             return_final=True)
                for g, w in zip(got, want):
                    np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12, atol=1e-12)
        for order in ("left_to_right", "right_to_left"):
            np.testing.assert_allclose(
                np.asarray(pj.matrix_chain_product(jW, dim=1, initial=jm0, reverse=reverse, order=order)),
                parascan.matrix_chain_product(W, dim=1, initial=m0, reverse=reverse, order=order), rtol=1e-12,
                atol=1e-12)
    # the generic functions send JAX arrays (GPU ones included) here
    np.testing.assert_allclose(np.asarray(parascan.matrix_chain_product(jW, dim=1)),
                               parascan.matrix_chain_product(W, dim=1), rtol=1e-12, atol=1e-12)


@xla
@pytest.mark.parametrize("device", DEVICES, ids=lambda d: d.platform)
@pytest.mark.parametrize("n", [4, 64])
def test_matrix_chains_on_tensor_cores_through_xla(device, n):
    """math='tf32' / 'bf16' (float32, any N: the runtime-size chains): within their precision of the exact
    products on the GPU, and of fp32 rounding on the host (which computes exactly, N = 4 there through the
    runtime-size chains rather than the fixed-size kernel), through the generic function too; gradients
    likewise. Orthogonal factors: the products stay of norm 1."""
    import parascan.jax as pj
    q = np.linalg.qr(RNG.standard_normal((2, 50, n, n)))[0].astype(np.float32)
    m = on(device, q)
    exact = np.asarray(pj.matrix_chain(m, dim=1))
    for math, tol in (("tf32", 3e-2), ("bf16", 2e-1)):
        tol = 1e-4 if device.platform == "cpu" else tol
        for got in (pj.matrix_chain(m, dim=1, math=math), parascan.matrix_chain(m, dim=1, math=math)):
            assert np.abs(np.asarray(got) - exact).max() <= tol
        grad = jax.grad(lambda x: pj.matrix_chain_product(x, dim=1, math=math).sum())(m)
        want = jax.grad(lambda x: pj.matrix_chain_product(x, dim=1).sum())(m)
        assert np.abs(np.asarray(grad) - np.asarray(want)).max() <= tol * np.abs(np.asarray(want)).max()


@xla
@pytest.mark.parametrize("device", DEVICES, ids=lambda d: d.platform)
def test_matrix_gradients_through_xla(device):
    import parascan.jax as pj
    W, b = on(device, contracting((2, 9), 3), RNG.standard_normal((2, 9, 3)))
    x0, m0 = on(device, RNG.standard_normal((2, 3)), contracting((2,), 3))
    for reverse in (False, True):
        numerical_check(lambda W, b, i: pj.affine_recurrence(W, b, initial=i, reverse=reverse, return_final=True),
                        (W, b, x0))
        for order in ("left_to_right", "right_to_left"):
            numerical_check(lambda m, i: pj.matrix_chain(m, initial=i, reverse=reverse, order=order,
                                                         return_final=True), (W, m0))
            numerical_check(lambda m, i: pj.matrix_chain_product(m, initial=i, reverse=reverse, order=order), (W, m0))
    numerical_check(lambda m: pj.matrix_chain_product(m, dim=0), (W,))
    mapped = jax.vmap(lambda m: pj.matrix_chain_product(m, dim=0))(W)  # vmap over the batch axis
    np.testing.assert_allclose(np.asarray(mapped), np.asarray(pj.matrix_chain_product(W, dim=1)), rtol=1e-12)
    # N = 5: the runtime-size chains' backward passes
    M5, i5 = on(device, contracting((2, 7), 5), contracting((2,), 5))
    for order in ("left_to_right", "right_to_left"):
        numerical_check(lambda m, i: pj.matrix_chain(m, initial=i, reverse=True, order=order, return_final=True),
                        (M5, i5))
        numerical_check(lambda m, i: pj.matrix_chain_product(m, initial=i, order=order), (M5, i5))
    with pytest.raises(ValueError, match="N x N matrices"):
        pj.matrix_chain(on(device, np.ones((2, 5, 5, 4))))
    with pytest.raises(ValueError, match="N = 2, 3, 4, 8, 16"):  # the affine recurrence's fixed sizes
        pj.affine_recurrence(on(device, np.ones((2, 5, 5, 5))), on(device, np.ones((2, 5, 5))))
    with pytest.raises(ValueError, match="options.math"):  # tf32 / bf16 multiply float32
        parascan.matrix_chain(on(device, np.ones((2, 5, 2, 2))), dim=1, math="tf32")
    with pytest.raises(ValueError, match="math"):
        pj.matrix_chain(on(device, np.ones((2, 5, 2, 2), np.float32)), math="fast")
    with pytest.raises(ValueError, match="b.shape"):
        pj.affine_recurrence(W, on(device, np.ones((2, 9, 4))))
    with pytest.raises(ValueError, match="order"):
        pj.matrix_chain(W, order="up")


@xla
@pytest.mark.parametrize("device", DEVICES, ids=lambda d: d.platform)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
@pytest.mark.parametrize("shape,dim", [((0,), -1), ((1,), 0), ((3, 1000), -1), ((2, 257, 3), 1), ((2, 0, 3), 1)])
def test_linear_recurrence_through_xla(device, dtype, shape, dim):
    import parascan.jax as pj
    a, b = gates_tokens(shape, dtype)
    batch = tuple(s for k, s in enumerate(shape) if k != dim % len(shape))
    x0 = RNG.standard_normal(batch).astype(dtype)
    ja, jb, jx0 = on(device, a, b, x0)
    run = jax.jit(pj.linear_recurrence, static_argnames=("dim", "reverse", "exclusive", "return_final"))
    for reverse in (False, True):
        for exclusive in (False, True):
            for initial, jinitial in ((None, None), (x0, jx0)):
                x, final = run(ja, jb, dim=dim, initial=jinitial, reverse=reverse, exclusive=exclusive,
                               return_final=True)
                assert x.devices() == {device} and x.dtype == dtype and final.shape == batch
                want, size, want_final = reference(a, b, dim, initial, reverse, exclusive)
                close(x, want, size, dtype)
                _, _, final_size = reference(np.abs(a), np.abs(b), dim, None if initial is None else np.abs(x0))
                close(final, want_final, np.abs(final_size), dtype)


@xla
@pytest.mark.parametrize("device", DEVICES, ids=lambda d: d.platform)
@pytest.mark.parametrize("dtype", [jnp.bfloat16, np.float16])
def test_16_bit_storage_through_xla(device, dtype):
    import parascan.jax as pj
    a, b = gates_tokens((4, 3000), np.float32)
    ja, jb = on(device, a.astype(dtype), b.astype(dtype))
    x, final = pj.linear_recurrence(ja, jb, initial=1.0, return_final=True)
    assert x.dtype == dtype and final.dtype == np.float32
    a16, b16 = np.asarray(ja).astype(np.float64), np.asarray(jb).astype(np.float64)
    want, size, want_final = reference(a16, b16, -1, 1.0)
    # fp32 state: the output's error is its own rounding to 16 bits (half an ulp) plus the state's few ulps
    storage_eps = float(jnp.finfo(dtype).eps)
    err = np.max(np.abs(np.asarray(x).astype(np.float64) - want.real) / size)
    assert err <= storage_eps, "bf16/fp16 relative error %.3g (seed %d)" % (err, SEED)
    close(final, want_final, np.abs(want_final) + 1, np.float32)


def numerical_check(f, args):
    """Reverse-mode gradients against central differences (fp64: JAX's check_grads; a step of 1e-6, whose
    truncation error, ~1e-12, stays far below the tolerance where the default 1e-4 reached it)."""
    from jax.test_util import check_grads
    check_grads(f, args, order=1, modes=["rev"], atol=1e-6, rtol=1e-6, eps=1e-6)


@xla
@pytest.mark.parametrize("device", DEVICES, ids=lambda d: d.platform)
def test_gradients_through_xla(device):
    import parascan.jax as pj
    a, b = gates_tokens((3, 4, 40), np.float64)
    x0 = RNG.standard_normal((3, 4))
    ja, jb, jx0 = on(device, a, b, x0)
    for reverse in (False, True):
        numerical_check(lambda a, b, i: pj.linear_recurrence(a, b, initial=i, reverse=reverse, return_final=True),
                        (ja, jb, jx0))
        numerical_check(lambda a, b: pj.linear_recurrence(a, b, dim=1, reverse=reverse), (ja, jb))
        numerical_check(lambda x, i: pj.logcumsumexp(x, initial=i, reverse=reverse, return_final=True), (jb, jx0))
        numerical_check(lambda x, i: pj.cumsum(x, initial=i, reverse=reverse, return_final=True), (jb, jx0))
        numerical_check(lambda la, lb, i: pj.log_linear_recurrence(la, lb, initial=i, reverse=reverse,
                                                                   return_final=True), (jnp.log(ja), jb, jx0))
    # a scalar initial gets the sum of its sequences' gradients (broadcast outside the derivative rule)
    g = jax.grad(lambda i: jnp.sum(pj.linear_recurrence(ja, jb, initial=i)))(1.0)
    g_all = jax.grad(lambda i: jnp.sum(pj.linear_recurrence(ja, jb, initial=i)))(jnp.ones((3, 4)))
    np.testing.assert_allclose(g, np.sum(g_all), rtol=1e-12)


@xla
@pytest.mark.parametrize("device", DEVICES, ids=lambda d: d.platform)
def test_complex_gradient_through_xla(device):
    import parascan.jax as pj
    a, b = gates_tokens((2, 30), np.complex128)
    numerical_check(lambda a, b: pj.linear_recurrence(a, b), on(device, a, b))


@xla
@pytest.mark.parametrize("device", DEVICES, ids=lambda d: d.platform)
def test_vmap_and_jit_through_xla(device):
    import parascan.jax as pj
    a, b = gates_tokens((5, 6, 70), np.float32)
    ja, jb = on(device, a, b)
    # vmap over the first axis, time on axis 0 of each slice (axis 1 of the whole)
    mapped = jax.vmap(lambda a, b: pj.linear_recurrence(a, b, dim=0, initial=2.0))(ja, jb)
    np.testing.assert_array_equal(np.asarray(mapped), np.asarray(pj.linear_recurrence(ja, jb, dim=1, initial=2.0)))
    per_sequence = jax.vmap(lambda a, b, i: pj.linear_recurrence(a, b, initial=i), in_axes=(0, 0, 0))(
        ja, jb, on(device, np.ones((5, 6), np.float32)))
    np.testing.assert_array_equal(np.asarray(per_sequence), np.asarray(pj.linear_recurrence(ja, jb, initial=1.0)))
    loss = jax.jit(jax.grad(lambda a, b: jnp.sum(pj.linear_recurrence(a, b) ** 2), argnums=(0, 1)))
    da, db = loss(ja, jb)
    x = pj.linear_recurrence(ja, jb)
    want = pj.linear_recurrence_backward(ja, x, 2 * x)
    np.testing.assert_allclose(np.asarray(da), np.asarray(want[0]), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(db), np.asarray(want[1]), rtol=1e-6)


@xla
@pytest.mark.parametrize("device", DEVICES, ids=lambda d: d.platform)
def test_scans_through_xla(device):
    import parascan.jax as pj
    x = RNG.standard_normal((3, 500))
    jx = on(device, x)
    for reverse in (False, True):
        flip = (lambda v: v[..., ::-1]) if reverse else (lambda v: v)
        np.testing.assert_allclose(np.asarray(pj.cumsum(jx, reverse=reverse)), flip(np.cumsum(flip(x), -1)),
                                   rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(np.asarray(pj.cummax(jx, reverse=reverse)),
                                      flip(np.maximum.accumulate(flip(x), -1)))
        np.testing.assert_array_equal(np.asarray(pj.cummin(jx, reverse=reverse)),
                                      flip(np.minimum.accumulate(flip(x), -1)))
        # log-space sums err by ulps of their terms (|x| up to ~7), not of a result that cancels to near 0
        np.testing.assert_allclose(np.asarray(pj.logcumsumexp(jx, reverse=reverse)),
                                   flip(np.logaddexp.accumulate(flip(x), -1)), rtol=1e-13, atol=1e-13)
    small = jx[:, :20] * 0.1
    np.testing.assert_allclose(np.asarray(pj.cumprod(small)), np.cumprod(np.asarray(small), -1), rtol=1e-13)
    y, final = pj.logcumsumexp(on(device, np.full((2, 5), -np.inf)), return_final=True)
    assert np.all(np.asarray(y) == -np.inf) and np.all(np.asarray(final) == -np.inf)
    g = jax.grad(lambda v: jnp.sum(pj.logcumsumexp(v)))(on(device, np.array([[-np.inf, 0.0, 1.0]])))
    assert np.all(np.isfinite(np.asarray(g))) and np.asarray(g)[0, 0] == 0  # -inf inputs: zero gradient


@xla
@pytest.mark.parametrize("device", DEVICES, ids=lambda d: d.platform)
def test_generic_functions_on_jax_arrays_take_xla(device):
    a, b = gates_tokens((2, 3, 300), np.float32)
    ja, jb = on(device, a, b)
    x, final = parascan.linear_recurrence(ja, jb, dim=-1, initial=0.5, return_final=True)
    assert x.devices() == {device}
    want, want_final = parascan.linear_recurrence(a, b, initial=0.5, return_final=True)
    np.testing.assert_allclose(np.asarray(x), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(final), want_final, rtol=1e-5, atol=1e-6)
    inside = jax.jit(lambda a, b: parascan.cumsum(parascan.linear_recurrence(a, b, initial=0.5), dim=1))(ja, jb)
    np.testing.assert_allclose(np.asarray(inside), np.cumsum(want, 1), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="out: JAX arrays are immutable"):
        parascan.linear_recurrence(ja, jb, out=np.empty((2, 3, 300), np.float32))


@xla
def test_bad_arguments_through_xla():
    import parascan.jax as pj
    x = on(CPU, np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="tokens.shape"):
        pj.linear_recurrence(x, on(CPU, np.ones((3, 2), np.float32)))
    with pytest.raises(ValueError, match="tokens.dtype"):
        pj.linear_recurrence(x, on(CPU, np.ones((2, 3))))
    with pytest.raises(ValueError, match="x.dtype"):
        pj.cumsum(on(CPU, np.ones((2, 3), np.int32)))
    with pytest.raises(ValueError, match="dim"):
        pj.linear_recurrence(x, x, dim=2)
    with pytest.raises(ValueError, match="initial: one value per sequence"):
        pj.linear_recurrence(x, x, initial=np.ones(3, np.float32))
    with pytest.raises(ValueError, match="a time axis"):
        pj.cumsum(on(CPU, np.float32(1)))
    with pytest.raises(ValueError, match="initial: real values"):
        pj.cumsum(x, initial=1 + 5j)
    with pytest.raises(ValueError, match="threads"):
        pj.cumsum(x, threads=-1)
    with pytest.raises(ValueError, match="inclusive scans only"):
        pj.logcumsumexp_backward(x, x, x, exclusive=True, return_grad_initial=True)
    # flags that are not Python bools (NumPy's, integers) are flags still
    np.testing.assert_array_equal(np.asarray(pj.cumsum(x, reverse=np.True_)), np.asarray(pj.cumsum(x, reverse=1)))
