"""parascan for JAX: the scans as XLA custom calls (``jax.ffi``), on JAX arrays on the host and on CUDA GPUs,
under ``jax.jit``, ``jax.vmap`` and ``jax.grad``, without copies (XLA hands its buffers to parascan and
allocates the outputs). Host arrays run the host backend (``threads`` workers; 0: one a hardware thread),
GPU arrays the CUDA backend on XLA's stream (when the extension was built with nvcc). The time axis is
``dim`` (default the last); every other axis is the batch. Shapes and dtypes are checked when JAX traces a
call (ValueError with parascan's message).

    import jax, jax.numpy as jnp, parascan.jax as pj
    x = pj.linear_recurrence(gates, tokens)                 # x[t] = gates[t] * x[t-1] + tokens[t]
    loss = lambda a, b: jnp.sum(pj.linear_recurrence(a, b) ** 2)
    da, db = jax.jit(jax.grad(loss, argnums=(0, 1)))(gates, tokens)

The differentiable functions (``linear_recurrence``, ``log_linear_recurrence``, ``logcumsumexp``,
``cumsum``, ``affine_recurrence``, ``matrix_chain``, ``matrix_chain_product``) take gradients through
parascan's backward passes, in the inputs, ``initial`` and the final state (``return_final``): reverse
mode (``jax.grad``, ``jax.vjp``, ``jax.jacrev``) of first order; they are ``jax.custom_vjp`` rules, so
forward mode (``jax.jvp``, ``jax.jacfwd``) and second derivatives are refused. The other functions here
(``cumprod``, ``cummax``, ``cummin``, the ``exclusive`` option, the ``*_backward`` passes) have no JAX
derivative rule. The package's generic functions (``parascan.linear_recurrence`` and the others this
module offers) call these on JAX arrays.

Built where JAX was importable when the extension was built (its FFI headers come with jaxlib); importing
this module otherwise raises ImportError.
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np

from . import _parascan

if not hasattr(_parascan, "xla_targets"):
    raise ImportError("parascan.jax: this build of parascan has no XLA FFI targets (JAX was not importable when it "
                      "was built): pip install jax, then reinstall parascan")

for _name, (_cpu, _cuda) in _parascan.xla_targets().items():
    jax.ffi.register_ffi_target("parascan_" + _name, _cpu, platform="cpu")
    jax.ffi.register_ffi_target("parascan_" + _name, _cuda, platform="CUDA")
del _name, _cpu, _cuda

__all__ = ["linear_recurrence", "linear_recurrence_backward", "log_linear_recurrence", "log_linear_recurrence_backward",
           "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "logcumsumexp_backward", "affine_recurrence",
           "affine_recurrence_backward", "matrix_chain", "matrix_chain_backward", "matrix_chain_product",
           "matrix_chain_product_backward"]

_STORAGE = tuple(np.dtype(t) for t in ("float32", "float64", "complex64", "complex128", jnp.bfloat16, "float16"))
_REAL = (np.dtype("float32"), np.dtype("float64"))
_SCAN_KIND = {"cumsum": 0, "cumprod": 1, "cummax": 2, "cummin": 3, "logcumsumexp": 4}  # pyext::scan_kind


def _time_axis(x, dim, name, element_axes=0):
    """dim as a negative axis of x among the axes before its element's (vmap's batch axes, added in front,
    leave it in place); element_axes: 1 for arrays of N-vectors, 2 for N x N matrices."""
    outer = x.ndim - element_axes
    if outer < 1:
        raise ValueError("parascan: %s: an array with a time axis%s, got shape %s"
                         % (name, " before its last %d" % element_axes if element_axes else "", x.shape))
    if not -outer <= dim < outer:
        raise ValueError("parascan: dim: an axis of %s%s (%d axes), got %d"
                         % (name, " before its element's" if element_axes else "", outer, dim))
    return dim % outer - outer


def _inputs(names, arrays, dtypes):
    """The arrays of one call as JAX arrays of the first one's shape and dtype (one of `dtypes`)."""
    arrays = [jnp.asarray(a) for a in arrays]
    first = arrays[0]
    if first.dtype not in dtypes:
        raise ValueError("parascan: %s.dtype: %s, got %s" % (names[0], " / ".join(d.name for d in dtypes), first.dtype))
    for name, a in zip(names[1:], arrays[1:]):
        if a.shape != first.shape:
            raise ValueError("parascan: %s.shape: the shape of %s %s, got %s" % (name, names[0], first.shape, a.shape))
        if a.dtype != first.dtype:
            raise ValueError("parascan: %s.dtype: the dtype of %s (%s), got %s"
                             % (name, names[0], first.dtype, a.dtype))
    return arrays


def _accumulator(dtype):
    """The dtype of per-sequence values (initial and final states): float32 for 16-bit storage."""
    return np.dtype("float32") if np.dtype(dtype).itemsize == 2 else np.dtype(dtype)


def _batch(x, dim, element_axes=0):
    """The shape of x's per-sequence values: x's without the time axis dim (negative, before the element's)."""
    shape = list(x.shape)
    del shape[x.ndim - element_axes + dim]
    return tuple(shape)


def _per_sequence(value, x, dim, name, element_axes=0):
    """initial / grad_final: one value per sequence (the batch shape, or anything that broadcasts to it)."""
    if value is None:
        return None
    batch = _batch(x, dim, element_axes)
    value = jnp.asarray(value)
    if jnp.iscomplexobj(value) and not jnp.iscomplexobj(x):
        raise ValueError("parascan: %s: real values for %s inputs, got %s" % (name, x.dtype, value.dtype))
    value = value.astype(_accumulator(x.dtype))
    try:
        return jnp.broadcast_to(value, batch)
    except ValueError:
        raise ValueError("parascan: %s: one value per sequence, shape %s (or one that broadcasts to it), got shape %s"
                         % (name, batch, value.shape)) from None


def _ffi(entry, results, inputs, **attributes):
    """One custom call: `results` as jax.ShapeDtypeStruct, attributes as XLA's scalars."""
    if attributes.get("threads", 0) < 0:
        raise ValueError("parascan: threads: a count of worker threads (0: one a hardware thread), got %d"
                         % attributes["threads"])
    attributes = {k: (np.int64(v) if k in ("dim", "kind", "threads", "math") else np.bool_(bool(v)))
                  for k, v in attributes.items()}
    call = jax.ffi.ffi_call("parascan_" + entry, results, vmap_method="broadcast_all")
    return call(*[a for a in inputs if a is not None], **attributes)


def _like(x, dtype=None, shape=None):
    return jax.ShapeDtypeStruct(x.shape if shape is None else shape, x.dtype if dtype is None else dtype)


def _forward(entry, names, arrays, dtypes, dim, initial, reverse, exclusive, return_final, threads, **attributes):
    """The forward scans: outputs like the first input, and the final states with return_final."""
    arrays = _inputs(names, arrays, dtypes)
    x = arrays[0]
    dim = _time_axis(x, dim, names[0])
    initial = _per_sequence(initial, x, dim, "initial")
    results = [_like(x)]
    if return_final:
        results.append(_like(x, _accumulator(x.dtype), _batch(x, dim)))
    out = _ffi(entry, results, arrays + [initial], dim=dim, reverse=reverse, exclusive=exclusive,
               has_initial=initial is not None, threads=threads, **attributes)
    return tuple(out) if return_final else out[0]


def _backward(entry, names, arrays, dtypes, gradients, dim, initial, grad_final, reverse, return_grad_initial,
              threads, **attributes):
    """The backward passes: one gradient like the first input for each of `gradients`, then dL/dinitial."""
    arrays = _inputs(names, arrays, dtypes)
    x = arrays[0]
    dim = _time_axis(x, dim, names[0])
    initial = _per_sequence(initial, x, dim, "initial")
    grad_final = _per_sequence(grad_final, x, dim, "grad_final")
    results = [_like(x)] * gradients
    if return_grad_initial:
        results.append(_like(x, _accumulator(x.dtype), _batch(x, dim)))
    out = _ffi(entry, results, arrays + [initial, grad_final], dim=dim, reverse=reverse,
               has_initial=initial is not None, has_grad_final=grad_final is not None, threads=threads, **attributes)
    return tuple(out)


# ---- The raw calls, with the package's generic signatures (no derivative rules).

def _linear_recurrence(gates, tokens, dim=-1, initial=None, reverse=False, exclusive=False, return_final=False,
                       threads=0):
    return _forward("linear_recurrence", ("gates", "tokens"), [gates, tokens], _STORAGE, dim, initial, reverse,
                    exclusive, return_final, threads)


def linear_recurrence_backward(gates, x, grad_x, dim=-1, initial=None, reverse=False, grad_final=None,
                               return_grad_initial=False, threads=0):
    """dL/dgates, dL/dtokens (and dL/dinitial with ``return_grad_initial``) of x = linear_recurrence(gates,
    tokens, dim, initial, reverse) from x and grad_x = dL/dx (and ``grad_final`` = dL/d(final state))."""
    out = _backward("linear_recurrence_backward", ("gates", "x", "grad_x"), [gates, x, grad_x], _STORAGE, 2, dim,
                    initial, grad_final, reverse, return_grad_initial, threads)
    return out if return_grad_initial else out[:2]


def _log_linear_recurrence(log_gates, log_tokens, dim=-1, initial=None, reverse=False, exclusive=False,
                           return_final=False, threads=0):
    return _forward("log_linear_recurrence", ("log_gates", "log_tokens"), [log_gates, log_tokens], _REAL, dim,
                    initial, reverse, exclusive, return_final, threads)


def log_linear_recurrence_backward(log_gates, log_tokens, log_x, grad_log_x, dim=-1, initial=None, reverse=False,
                                   grad_final=None, return_grad_initial=False, threads=0):
    """dL/dlog_gates, dL/dlog_tokens (and dL/dinitial) of log_x = log_linear_recurrence(log_gates, log_tokens,
    dim, initial, reverse) from log_x and grad_log_x = dL/dlog_x (and ``grad_final``)."""
    out = _backward("log_linear_recurrence_backward", ("log_gates", "log_tokens", "log_x", "grad_log_x"),
                    [log_gates, log_tokens, log_x, grad_log_x], _REAL, 2, dim, initial, grad_final, reverse,
                    return_grad_initial, threads)
    return out if return_grad_initial else out[:2]


def _scan(kind, x, dim=-1, initial=None, reverse=False, exclusive=False, return_final=False, threads=0):
    return _forward("scan", ("x",), [x], _REAL, dim, initial, reverse, exclusive, return_final, threads,
                    kind=_SCAN_KIND[kind])


def logcumsumexp_backward(x, y, grad_y, dim=-1, initial=None, reverse=False, exclusive=False, grad_final=None,
                          return_grad_initial=False, threads=0):
    """dL/dx (and dL/dinitial) of y = logcumsumexp(x, dim, initial, reverse, exclusive) from y and grad_y
    (grad_final and dL/dinitial of inclusive scans only)."""
    if exclusive and (grad_final is not None or return_grad_initial):
        raise ValueError("parascan: grad_final / return_grad_initial: the gradients at the ends of inclusive "
                         "scans only (exclusive=False)")
    out = _backward("logcumsumexp_backward", ("x", "y", "grad_y"), [x, y, grad_y], _REAL, 1, dim, initial,
                    grad_final, reverse, return_grad_initial, threads, exclusive=exclusive)
    return out if return_grad_initial else out[0]


def cumprod(x, dim=-1, initial=None, reverse=False, exclusive=False, return_final=False, threads=0):
    """Running product along ``dim`` (float32, float64); no derivative rule."""
    return _scan("cumprod", x, dim, initial, reverse, exclusive, return_final, threads)


def cummax(x, dim=-1, initial=None, reverse=False, exclusive=False, return_final=False, threads=0):
    """Running maximum along ``dim`` (float32, float64); no derivative rule."""
    return _scan("cummax", x, dim, initial, reverse, exclusive, return_final, threads)


def cummin(x, dim=-1, initial=None, reverse=False, exclusive=False, return_final=False, threads=0):
    """Running minimum along ``dim`` (float32, float64); no derivative rule."""
    return _scan("cummin", x, dim, initial, reverse, exclusive, return_final, threads)


# ---- The differentiable functions: custom_vjp over the raw calls. initial and the final state take part
# in the gradient when given / returned; `exclusive` has no derivative rule and takes the raw call.

def _differentiable(forward, backward, inputs, more=0):
    """A custom_vjp of forward(*inputs, initial, dim, reverse, return_final, threads, *more): backward(inputs,
    outputs, initial, grad_outputs, grad_final, dim, reverse, threads, *more) gives the inputs' gradients and
    dL/dinitial (None where initial is None). `more`: further static arguments (the matrices' order)."""
    @functools.partial(jax.custom_vjp, nondiff_argnums=tuple(range(inputs + 1, inputs + 5 + more)))
    def f(*args):
        return forward(*args)

    def f_forward(*args):
        out = forward(*args)
        y = out[0] if args[inputs + 3] else out
        return out, (args[:inputs], y, args[inputs])

    def f_backward(*args):
        (dim, reverse, return_final, threads, *static), (saved, grad) = args[:-2], args[-2:]
        arrays, y, initial = saved
        grad_y, grad_final = grad if return_final else (grad, None)
        grads = backward(arrays, y, initial, grad_y, grad_final, dim, reverse, threads, *static)
        grads = grads if isinstance(grads, tuple) else (grads,)
        return tuple(grads[:inputs]) + (grads[inputs] if initial is not None else None,)

    f.defvjp(f_forward, f_backward)
    return f


def _linear_recurrence_gradient(arrays, x, initial, grad_x, grad_final, dim, reverse, threads):
    """parascan's backward pass gives PyTorch's convention for complex values (the conjugate of JAX's
    cotangent map, which for this holomorphic recurrence is the transpose without conjugates): complex
    cotangents are conjugated on the way in and the gradients on the way out."""
    complex_values = jnp.iscomplexobj(x)
    conj = jnp.conj if complex_values else (lambda v: v)
    grads = linear_recurrence_backward(arrays[0], x, conj(grad_x), dim, initial, reverse,
                                       None if grad_final is None else conj(grad_final), initial is not None, threads)
    return tuple(conj(g) for g in grads)


_linear_recurrence_vjp = _differentiable(
    lambda a, b, initial, dim, reverse, return_final, threads: _linear_recurrence(
        a, b, dim, initial, reverse, False, return_final, threads), _linear_recurrence_gradient, 2)


def linear_recurrence(gates, tokens, dim=-1, initial=None, reverse=False, exclusive=False, return_final=False,
                      threads=0):
    """x[t] = gates[t] * x[t-1] + tokens[t] along ``dim``; x[-1] = ``initial`` (one value per sequence, the
    batch shape or anything that broadcasts to it; default 0). Returns x, or (x, final state per sequence)
    with ``return_final``. Differentiable in gates, tokens and initial (not with ``exclusive``). float32,
    float64, complex64, complex128, and bfloat16 / float16 storage (float32 state, initial and final)."""
    if exclusive:
        return _linear_recurrence(gates, tokens, dim, initial, reverse, True, return_final, threads)
    return _linear_recurrence_vjp(gates, tokens, _initial(initial, gates, dim, "gates"), dim, reverse, return_final,
                                  threads)


_log_linear_recurrence_vjp = _differentiable(
    lambda la, lb, initial, dim, reverse, return_final, threads: _log_linear_recurrence(
        la, lb, dim, initial, reverse, False, return_final, threads),
    lambda arrays, y, initial, gy, gf, dim, reverse, threads: log_linear_recurrence_backward(
        arrays[0], arrays[1], y, gy, dim, initial, reverse, gf, initial is not None, threads), 2)


def log_linear_recurrence(log_gates, log_tokens, dim=-1, initial=None, reverse=False, exclusive=False,
                          return_final=False, threads=0):
    """The linear recurrence of positive values in log space: log_x[t] = logaddexp(log_gates[t] +
    log_x[t-1], log_tokens[t]); ``initial`` is log x[-1] (default -inf). Differentiable as linear_recurrence.
    float32, float64."""
    if exclusive:
        return _log_linear_recurrence(log_gates, log_tokens, dim, initial, reverse, True, return_final, threads)
    return _log_linear_recurrence_vjp(log_gates, log_tokens, _initial(initial, log_gates, dim, "log_gates"), dim,
                                      reverse, return_final, threads)


_logcumsumexp_vjp = _differentiable(
    lambda x, initial, dim, reverse, return_final, threads: _scan(
        "logcumsumexp", x, dim, initial, reverse, False, return_final, threads),
    lambda arrays, y, initial, gy, gf, dim, reverse, threads: logcumsumexp_backward(
        arrays[0], y, gy, dim, initial, reverse, False, gf, initial is not None, threads), 1)


def logcumsumexp(x, dim=-1, initial=None, reverse=False, exclusive=False, return_final=False, threads=0):
    """log(cumsum(exp(x))) along ``dim``, from log x[-1] = ``initial`` (default -inf). Differentiable in x
    and initial (-inf inputs get a zero gradient). float32, float64."""
    if exclusive:
        return _scan("logcumsumexp", x, dim, initial, reverse, True, return_final, threads)
    return _logcumsumexp_vjp(x, _initial(initial, x, dim, "x"), dim, reverse, return_final, threads)


def _cumsum_backward(arrays, y, initial, grad_y, grad_final, dim, reverse, threads):
    """cumsum's adjoint: the reverse running sum of grad_y (from grad_final); dL/dinitial is its total."""
    grad_x, total = _scan("cumsum", grad_y, dim, grad_final, not reverse, False, True, threads)
    return grad_x, total


_cumsum_vjp = _differentiable(
    lambda x, initial, dim, reverse, return_final, threads: _scan(
        "cumsum", x, dim, initial, reverse, False, return_final, threads), _cumsum_backward, 1)


def cumsum(x, dim=-1, initial=None, reverse=False, exclusive=False, return_final=False, threads=0):
    """Running sum along ``dim``, from ``initial`` (default 0). Differentiable in x and initial (not with
    ``exclusive``). float32, float64."""
    if exclusive:
        return _scan("cumsum", x, dim, initial, reverse, True, return_final, threads)
    return _cumsum_vjp(x, _initial(initial, x, dim, "x"), dim, reverse, return_final, threads)


def _initial(initial, x, dim, name):
    """initial broadcast to its batch shape outside the derivative rule, so that JAX sums its gradient back
    to the shape it was given in (a scalar for every sequence, say)."""
    x = jnp.asarray(x)
    return _per_sequence(initial, x, _time_axis(x, dim, name), "initial")


# ---- Matrices: N x N (the affine recurrence N = 2, 3, 4, 8, 16; the chains any N) float32 / float64, the
# element's axes last; the time axis `dim` counts among the axes before them.

def _matrix_inputs(names, arrays, element_axes, any_size=False):
    """Arrays of one matrix call: float32 / float64, N x N matrices (or N-vectors) of the first one's N, and
    the first one's axes before the element's. N: 2, 3, 4, 8 or 16 (the affine recurrence), any (any_size:
    the chains)."""
    arrays = [jnp.asarray(a) for a in arrays]
    first = arrays[0]
    if first.dtype not in _REAL:
        raise ValueError("parascan: %s.dtype: float32 / float64, got %s" % (names[0], first.dtype))
    sizes = "" if any_size else " (N = 2, 3, 4, 8, 16)"
    if (first.ndim < 3 or first.shape[-1] != first.shape[-2] or first.shape[-1] < 1
            or not (any_size or first.shape[-1] in (2, 3, 4, 8, 16))):
        raise ValueError("parascan: %s: N x N matrices%s with a time axis, shape (..., T, ..., N, N), got %s"
                         % (names[0], sizes, first.shape))
    for name, a, axes in zip(names[1:], arrays[1:], element_axes[1:]):
        want = first.shape[:-2] + first.shape[-axes:] if axes else first.shape[:-2]
        if a.shape != want:
            raise ValueError("parascan: %s.shape: %s, got %s" % (name, want, a.shape))
        if a.dtype != first.dtype:
            raise ValueError("parascan: %s.dtype: the dtype of %s (%s), got %s"
                             % (name, names[0], first.dtype, a.dtype))
    return arrays


def _order(order):
    if order not in ("left_to_right", "right_to_left"):
        raise ValueError("parascan: order: 'left_to_right' or 'right_to_left', got %r" % (order,))
    return order == "right_to_left"


_MATH = {"exact": 0, "tf32": 1, "bf16": 2}


def _math(math, m):
    """The chains' arithmetic as the custom calls' attribute: 'exact', or (float32) 'tf32' / 'bf16', tensor
    cores on the GPU (the host computes exactly)."""
    if math not in _MATH:
        raise ValueError("parascan: math: 'exact', 'tf32' or 'bf16', got %r" % (math,))
    if math != "exact" and m.dtype != jnp.float32:
        raise ValueError("parascan: options.math: 'exact' for float64 matrices (tf32 and bf16 multiply float32), "
                         "got %r" % (math,))
    return _MATH[math]


def _affine_recurrence(W, b, dim=-1, initial=None, reverse=False, exclusive=False, return_final=False, threads=0):
    W, b = _matrix_inputs(("W", "b"), [W, b], (2, 1))
    dim = _time_axis(W, dim, "W", 2)
    initial = _per_sequence(initial, b, dim, "initial", 1)
    results = [_like(b)] + ([_like(b, shape=_batch(b, dim, 1))] if return_final else [])
    out = _ffi("affine_recurrence", results, [W, b, initial], dim=dim, reverse=reverse, exclusive=exclusive,
               has_initial=initial is not None, threads=threads)
    return tuple(out) if return_final else out[0]


def affine_recurrence_backward(W, x, grad_x, dim=-1, initial=None, reverse=False, grad_final=None,
                               return_grad_initial=False, threads=0):
    """dL/dW, dL/db (and dL/dinitial) of x = affine_recurrence(W, b, dim, initial, reverse) from x and grad_x."""
    W, x, grad_x = _matrix_inputs(("W", "x", "grad_x"), [W, x, grad_x], (2, 1, 1))
    dim = _time_axis(W, dim, "W", 2)
    initial = _per_sequence(initial, x, dim, "initial", 1)
    grad_final = _per_sequence(grad_final, x, dim, "grad_final", 1)
    results = [_like(W), _like(x)] + ([_like(x, shape=_batch(x, dim, 1))] if return_grad_initial else [])
    out = _ffi("affine_recurrence_backward", results, [W, x, grad_x, initial, grad_final], dim=dim, reverse=reverse,
               has_initial=initial is not None, has_grad_final=grad_final is not None, threads=threads)
    return tuple(out)


_affine_recurrence_vjp = _differentiable(
    lambda W, b, initial, dim, reverse, return_final, threads: _affine_recurrence(
        W, b, dim, initial, reverse, False, return_final, threads),
    lambda arrays, x, initial, gx, gf, dim, reverse, threads: affine_recurrence_backward(
        arrays[0], x, gx, dim, initial, reverse, gf, initial is not None, threads), 2)


def affine_recurrence(W, b, dim=-1, initial=None, reverse=False, exclusive=False, return_final=False, threads=0):
    """x[t] = W[t] @ x[t-1] + b[t]: W (..., T, ..., N, N), b and x (..., T, ..., N); ``initial``: x[-1] (one
    N-vector per sequence, or anything that broadcasts to them; default 0). Differentiable in W, b and
    initial (not with ``exclusive``)."""
    if exclusive:
        return _affine_recurrence(W, b, dim, initial, reverse, True, return_final, threads)
    b = jnp.asarray(b)
    initial = None if initial is None else _per_sequence(initial, b, _time_axis(b, dim, "b", 1), "initial", 1)
    return _affine_recurrence_vjp(W, b, initial, dim, reverse, return_final, threads)


def _matrix_chain(matrices, dim=-1, initial=None, reverse=False, exclusive=False, order="left_to_right",
                  return_final=False, threads=0, math="exact"):
    (m,) = _matrix_inputs(("matrices",), [matrices], (2,), any_size=True)
    dim = _time_axis(m, dim, "matrices", 2)
    initial = _per_sequence(initial, m, dim, "initial", 2)
    results = [_like(m)] + ([_like(m, shape=_batch(m, dim, 2))] if return_final else [])
    out = _ffi("matrix_chain", results, [m, initial], dim=dim, reverse=reverse, exclusive=exclusive,
               has_initial=initial is not None, right_to_left=_order(order), product=False, threads=threads,
               math=_math(math, m))
    return tuple(out) if return_final else out[0]


def _matrix_chain_product(matrices, dim=-1, initial=None, reverse=False, order="left_to_right", threads=0,
                          math="exact"):
    (m,) = _matrix_inputs(("matrices",), [matrices], (2,), any_size=True)
    dim = _time_axis(m, dim, "matrices", 2)
    initial = _per_sequence(initial, m, dim, "initial", 2)
    return _ffi("matrix_chain", [_like(m, shape=_batch(m, dim, 2))], [m, initial], dim=dim, reverse=reverse,
                has_initial=initial is not None, right_to_left=_order(order), product=True, threads=threads,
                math=_math(math, m))[0]


def matrix_chain_backward(matrices, products, grad_products, dim=-1, initial=None, reverse=False,
                          order="left_to_right", grad_final=None, return_grad_initial=False, threads=0, math="exact"):
    """dL/dM (and dL/dinitial) of P = matrix_chain(M, dim, initial, reverse, order=...) from P and grad_P."""
    m, p, gp = _matrix_inputs(("matrices", "products", "grad_products"), [matrices, products, grad_products],
                              (2, 2, 2), any_size=True)
    dim = _time_axis(m, dim, "matrices", 2)
    initial = _per_sequence(initial, m, dim, "initial", 2)
    grad_final = _per_sequence(grad_final, m, dim, "grad_final", 2)
    results = [_like(m)] + ([_like(m, shape=_batch(m, dim, 2))] if return_grad_initial else [])
    out = _ffi("matrix_chain_backward", results, [m, p, gp, initial, grad_final], dim=dim, reverse=reverse,
               has_initial=initial is not None, has_grad_final=grad_final is not None,
               right_to_left=_order(order), product=False, threads=threads, math=_math(math, m))
    return tuple(out) if return_grad_initial else out[0]


def matrix_chain_product_backward(matrices, grad_result, dim=-1, initial=None, reverse=False, order="left_to_right",
                                  return_grad_initial=False, threads=0, math="exact"):
    """dL/dM (and dL/dinitial) of R = matrix_chain_product(M, dim, initial, reverse, order=...) from grad_R."""
    (m,) = _matrix_inputs(("matrices",), [matrices], (2,), any_size=True)
    dim = _time_axis(m, dim, "matrices", 2)
    grad_result = _per_sequence(grad_result, m, dim, "grad_result", 2)
    initial = _per_sequence(initial, m, dim, "initial", 2)
    results = [_like(m)] + ([_like(m, shape=_batch(m, dim, 2))] if return_grad_initial else [])
    out = _ffi("matrix_chain_backward", results, [m, grad_result, initial], dim=dim, reverse=reverse,
               has_initial=initial is not None, right_to_left=_order(order), product=True, threads=threads,
               math=_math(math, m))
    return tuple(out) if return_grad_initial else out[0]


_matrix_chain_vjp = _differentiable(
    lambda m, initial, dim, reverse, return_final, threads, order, math: _matrix_chain(
        m, dim, initial, reverse, False, order, return_final, threads, math),
    lambda arrays, p, initial, gp, gf, dim, reverse, threads, order, math: matrix_chain_backward(
        arrays[0], p, gp, dim, initial, reverse, order, gf, initial is not None, threads, math), 1, more=2)

_matrix_chain_product_vjp = _differentiable(
    lambda m, initial, dim, reverse, return_final, threads, order, math: _matrix_chain_product(
        m, dim, initial, reverse, order, threads, math),
    lambda arrays, r, initial, gr, gf, dim, reverse, threads, order, math: matrix_chain_product_backward(
        arrays[0], gr, dim, initial, reverse, order, initial is not None, threads, math), 1, more=2)


def matrix_chain(matrices, dim=-1, initial=None, reverse=False, exclusive=False, order="left_to_right",
                 return_final=False, threads=0, math="exact"):
    """Cumulative products M[0] @ ... @ M[t] ('left_to_right'; 'right_to_left': M[t] @ ... @ M[0]) of matrices
    (..., T, ..., N, N), any N (2, 3, 4, 8, 16: fixed-size kernels; others: the runtime-size chains, cuBLAS
    on the GPU, Eigen on the host); ``initial``: the product before the first step (default the identity);
    ``math``: 'exact', or 'tf32' / 'bf16' (float32 on the GPU's tensor cores; the host computes exactly).
    Differentiable in the matrices and initial (not with ``exclusive``)."""
    if exclusive:
        return _matrix_chain(matrices, dim, initial, reverse, True, order, return_final, threads, math)
    m = jnp.asarray(matrices)
    initial = None if initial is None else _per_sequence(initial, m, _time_axis(m, dim, "matrices", 2), "initial", 2)
    return _matrix_chain_vjp(m, initial, dim, reverse, return_final, threads, order, math)


def matrix_chain_product(matrices, dim=-1, initial=None, reverse=False, order="left_to_right", threads=0,
                         math="exact"):
    """The whole product of each sequence's matrices (batch shape + (N, N)); N and ``math`` as in
    matrix_chain; differentiable in the matrices and initial."""
    m = jnp.asarray(matrices)
    initial = None if initial is None else _per_sequence(initial, m, _time_axis(m, dim, "matrices", 2), "initial", 2)
    return _matrix_chain_product_vjp(m, initial, dim, reverse, False, threads, order, math)
