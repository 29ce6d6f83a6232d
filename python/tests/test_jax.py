"""JAX arrays on the host: read through DLPack without a copy, results handed back as JAX arrays, equal
to the NumPy path's. Skipped where JAX is not installed (CI does not install it)."""
import numpy as np
import pytest

import parascan

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
CPU = jax.devices("cpu")[0]


def on_host(x):
    """A JAX array on the host (JAX puts new arrays on its default device, a GPU where there is one)."""
    return jax.device_put(x, CPU)


def test_linear_recurrence_and_its_backward_on_jax_arrays():
    rng = np.random.default_rng(7)
    a = rng.uniform(0.5, 1.0, (3, 4, 100)).astype(np.float32)
    b = rng.standard_normal((3, 4, 100)).astype(np.float32)
    x, final = parascan.linear_recurrence(on_host(a), on_host(b), initial=1.0, return_final=True)
    assert isinstance(x, jax.Array) and isinstance(final, jax.Array)
    want, want_final = parascan.linear_recurrence(a, b, initial=1.0, return_final=True)
    np.testing.assert_array_equal(np.asarray(x), want)
    np.testing.assert_array_equal(np.asarray(final), want_final)
    dx = rng.standard_normal((3, 4, 100)).astype(np.float32)
    got = parascan.linear_recurrence_backward(gates=on_host(a), x=x, grad_x=on_host(dx))  # by keyword too
    for g, w in zip(got, parascan.linear_recurrence_backward(a, want, dx)):
        assert isinstance(g, jax.Array)
        np.testing.assert_array_equal(np.asarray(g), w)


def test_scans_on_jax_arrays_match_jax():
    x = on_host(np.random.default_rng(8).standard_normal((5, 300)).astype(np.float32))  # JAX's default dtype
    # float32 sums in different orders: within a few ulps of the running values (|value| < ~40)
    np.testing.assert_allclose(np.asarray(parascan.cumsum(x, dim=1)), np.asarray(jnp.cumsum(x, axis=1)), atol=1e-4)
    np.testing.assert_allclose(np.asarray(parascan.logcumsumexp(x, dim=1)),
                               np.asarray(jax.lax.cumlogsumexp(x, axis=1)), atol=1e-5)


def test_jax_arrays_on_a_gpu_are_refused():
    gpus = [d for d in jax.devices() if d.platform != "cpu"]
    if not gpus:
        pytest.skip("no JAX GPU device")
    x = jax.device_put(np.ones((2, 8), np.float32), gpus[0])
    with pytest.raises(ValueError, match="JAX arrays on a GPU"):
        parascan.cumsum(x, dim=1)
    with pytest.raises(ValueError, match="JAX arrays on a GPU"):
        parascan.linear_recurrence(x, x)
