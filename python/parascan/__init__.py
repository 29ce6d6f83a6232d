"""parascan: parallel scans over any associative operator, from Python.

Arrays are taken without a copy through DLPack (NumPy arrays, PyTorch tensors, CuPy arrays); outputs are
allocated in the input's framework (and on its device) unless ``out=`` is given. The time axis is ``dim``
(default the last, as in ``torch.cumsum``); every other axis is the batch, any strides. Host arrays run
the host backend (worker threads over sequences; ``threads=0`` uses one per hardware thread); CUDA arrays
run the CUDA backend (when ``has_cuda``: the extension was built with nvcc) on their own device and on
``stream`` (default: the framework's current stream, PyTorch's or CuPy's). Linear recurrences take
bfloat16 and float16 storage too (float32 state; initial and final values are float32). Bad input raises
ValueError with parascan's message, before anything is written. JAX arrays (and tracers, under jax.jit)
go through parascan.jax's XLA custom calls where the extension has them (JAX importable at build time).

    import numpy as np, parascan
    x = parascan.linear_recurrence(gates, tokens)             # x[t] = gates[t] * x[t-1] + tokens[t]
    da, db = parascan.linear_recurrence_backward(gates, x, grad_x)
"""
import functools
import inspect

from . import _parascan

__version__ = _parascan.version
__all__ = [
    "linear_recurrence", "linear_recurrence_backward", "log_linear_recurrence", "affine_recurrence",
    "affine_recurrence_backward", "matrix_chain", "matrix_chain_product", "matrix_chain_backward",
    "matrix_chain_product_backward", "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp",
    "logcumsumexp_backward", "log_linear_recurrence_backward", "signed_log_linear_recurrence",
    "signed_log_linear_recurrence_backward", "has_cuda",
]

has_cuda = _parascan.has_cuda


_FRAMEWORK_OF_TYPE = {}  # every call asks, for several arrays: a dictionary lookup, not string tests
_TORCH_TYPES = set()  # the PyTorch tensor types seen so far (PyTorch need not be installed)


def _framework(x):
    """'torch' for PyTorch tensors, 'cupy' for CuPy arrays, 'jax' for JAX arrays, else 'numpy' (NumPy arrays
    and anything np.asarray takes)."""
    kind = type(x)
    framework = _FRAMEWORK_OF_TYPE.get(kind)
    if framework is None:
        module = kind.__module__
        framework = next((name for name in ("torch", "cupy", "jax") if module.startswith(name)), "numpy")
        _FRAMEWORK_OF_TYPE[kind] = framework
        if framework == "torch":
            _TORCH_TYPES.add(kind)
    return framework


_to_dlpack = None


def _dl(tensor):
    """A PyTorch tensor as the extension takes it: its DLPack capsule (torch.utils.dlpack.to_dlpack costs a
    tenth of the tensor's __dlpack__ method, which a small call pays for each of its arrays). A tensor
    with a lazy conjugate or negation is refused: DLPack has no such bit, and its data would be read or
    written unconjugated."""
    global _to_dlpack
    if tensor.is_conj() or tensor.is_neg():
        raise ValueError("parascan: a PyTorch tensor with a lazy conjugate or negation (a view of its data, "
                         "which DLPack cannot express): pass x.resolve_conj().resolve_neg()")
    if _to_dlpack is None:
        from torch.utils.dlpack import to_dlpack as _to_dlpack
    return _to_dlpack(tensor)


class _Extension:
    """The extension's entry points with PyTorch tensors passed through _dl (every other argument as it is;
    the Python functions have met each array's type through _framework before they call)."""

    def __init__(self, module):
        self._module = module

    def __getattr__(self, name):
        function = getattr(self._module, name)
        if not callable(function):
            return function

        def call(*args):
            return function(*[_dl(a) if type(a) in _TORCH_TYPES else a for a in args])
        setattr(self, name, call)  # found directly from now on
        return call


_ext = _Extension(_parascan)


def _accumulator(x):
    """The dtype of x's per-sequence values (initial and final states): float32 for bfloat16 / float16
    storage, else x's own."""
    dtype = x.dtype
    if _framework(x) == "torch":
        import torch
        return torch.float32 if dtype in (torch.bfloat16, torch.float16) else dtype
    return "float32" if dtype.itemsize == 2 else dtype  # NumPy / CuPy float16 (no 2-byte type is integer here)


def _empty_like(x, shape=None, dtype=None):
    """An uninitialised array of x's dtype (or `dtype`) on x's device, in x's framework, C-contiguous."""
    if _framework(x) == "torch":
        import torch
        if shape is None and dtype is None:  # half the host time of torch.empty(shape, dtype, device)
            return torch.empty_like(x, memory_format=torch.contiguous_format)
        return torch.empty(tuple(x.shape) if shape is None else tuple(shape), dtype=x.dtype if dtype is None else dtype,
                           device=x.device)
    shape = tuple(x.shape) if shape is None else tuple(shape)
    dtype = x.dtype if dtype is None else dtype
    if _framework(x) == "cupy":
        import cupy
        with cupy.cuda.Device(x.device.id):
            return cupy.empty(shape, dtype=dtype)
    if _framework(x) == "jax" and any(d.platform != "cpu" for d in x.devices()):
        raise ValueError("parascan: JAX arrays on a GPU: this call runs on host JAX arrays only (parascan.jax's "
                         "functions, XLA custom calls, take GPU arrays where the extension has its XLA targets)")
    import numpy as np
    return np.empty(shape, dtype=dtype)  # JAX (host) results are written here, then handed to JAX


def _torch_current_stream(device):
    """PyTorch's current stream on a CUDA device, as an integer. The raw query (what Triton's launcher calls)
    builds no torch.cuda.Stream object, which costs microseconds on every call; PyTorch's public call where a
    build lacks it."""
    import torch
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw(device.index if device.index is not None else torch.cuda.current_device())
    return torch.cuda.current_stream(device).cuda_stream


def _stream(x, stream):
    """The CUDA stream a call on x runs on, as an integer: ``stream`` (a torch.cuda.Stream or anything with
    ``cuda_stream``, a CuPy stream or anything with ``ptr``, or an int; it must belong to x's device), else
    the current stream of x's framework on x's device (PyTorch, CuPy); 0 (the legacy default stream)
    otherwise and for host arrays. Outputs the call allocates come from the framework's allocator on its
    current stream: a caller passing another stream orders the two (as with any side stream in PyTorch)."""
    if stream is not None:
        for attribute in ("cuda_stream", "ptr"):
            if hasattr(stream, attribute):
                return int(getattr(stream, attribute))
        return int(stream)
    framework = _framework(x)
    if framework == "torch" and x.is_cuda:
        return _torch_current_stream(x.device)
    if framework == "cupy":
        import cupy
        with cupy.cuda.Device(x.device.id):
            return cupy.cuda.get_current_stream().ptr
    return 0


def _batch_shape(x, dim, cu_seqlens=None):
    """The shape of per-sequence values (initial and final states): the array's shape without axis dim,
    or (N,) + that for a packed batch (N sequences along axis dim)."""
    shape, _ = _element_batch(x, dim, 0)
    return shape if cu_seqlens is None else (len(cu_seqlens) - 1,) + shape


def _offsets(cu_seqlens):
    """cu_seqlens (N + 1 offsets of a packed batch, any integer array) as contiguous int64 on the host."""
    if cu_seqlens is None:
        return None
    import numpy as np
    if _framework(cu_seqlens) == "torch":
        cu_seqlens = cu_seqlens.detach().cpu().numpy()
    elif _framework(cu_seqlens) == "cupy":
        cu_seqlens = cu_seqlens.get()
    return np.ascontiguousarray(np.asarray(cu_seqlens), dtype=np.int64)


def _as_array(x):
    """Arrays that speak DLPack pass through; anything else becomes a NumPy array (lists, scalars)."""
    if _framework(x) != "numpy" or hasattr(x, "__dlpack__"):
        return x
    import numpy as np
    return np.asarray(x)


def _per_sequence(value, like, batch, name, dtype=None):
    """initial / grad_final: one value per sequence (shape `batch`, or anything that broadcasts to it: a
    scalar, one matrix for every sequence), C-contiguous, of like's dtype (or `dtype`) on like's device."""
    if value is None:
        return None
    batch = tuple(batch)
    dtype = like.dtype if dtype is None else dtype
    try:
        if _framework(like) == "torch":
            import torch
            return torch.as_tensor(value, dtype=dtype, device=like.device).expand(batch).contiguous()
        if _framework(like) == "cupy":
            import cupy
            with cupy.cuda.Device(like.device.id):
                return cupy.ascontiguousarray(cupy.broadcast_to(cupy.asarray(value, dtype=dtype), batch))
        import numpy as np
        return np.ascontiguousarray(np.broadcast_to(np.asarray(value, dtype=dtype), batch))
    except (ValueError, RuntimeError):
        raise ValueError("parascan: %s: one value per sequence, shape %s (or one that broadcasts to it), got shape %s"
                         % (name, batch, tuple(getattr(value, "shape", ())))) from None


def _element_batch(x, dim, element_axes):
    """For arrays of scalars (element_axes 0), N-vectors (1) or N x N matrices (2): the per-sequence shape
    (the batch axes and the element's), and dim among the other axes, non-negative."""
    outer = len(x.shape) - element_axes
    if outer < 1:
        what = ["an array", "an array of vectors", "an array of matrices"][element_axes]
        raise ValueError("parascan: %s needs a time axis%s, got shape %s"
                         % (what, " before its last %d axes" % element_axes if element_axes else "", tuple(x.shape)))
    if not -outer <= dim < outer:
        raise ValueError("parascan: dim: an axis of the input%s (%d axes), got %d"
                         % (" other than its last %d" % element_axes if element_axes else "", outer, dim))
    dim %= outer
    shape = list(x.shape)
    del shape[dim]
    return tuple(shape), dim


def linear_recurrence(gates, tokens, dim=-1, initial=None, reverse=False, exclusive=False, return_final=False,
                      out=None, cu_seqlens=None, threads=0, stream=None):
    """x[t] = gates[t] * x[t-1] + tokens[t] along axis ``dim``; x[-1] = ``initial`` (one value per sequence,
    the batch shape, or a scalar; default 0). ``reverse`` runs from the last step, ``exclusive`` writes
    the state before each step. Returns x, or (x, final state per sequence) with ``return_final``.
    float32, float64, complex64, complex128, and bfloat16 / float16 storage (float32 state, initial and
    final); gates and tokens of one shape and dtype.

    ``cu_seqlens`` (N + 1 offsets): a packed batch of N sequences laid back to back along axis ``dim``
    (sequence i at [cu_seqlens[i], cu_seqlens[i+1])), the other axes its channels; per-sequence values
    then have shape (N,) + the channel axes."""
    gates, tokens = _as_array(gates), _as_array(tokens)
    x = _empty_like(tokens) if out is None else out
    offsets = _offsets(cu_seqlens)
    initial_values = final = None
    if initial is not None or return_final:  # (a small call notices the shape's computation)
        batch, acc = _batch_shape(x, dim, offsets), _accumulator(x)
        initial_values = _per_sequence(initial, x, batch, "initial", acc)
        final = _empty_like(x, batch, acc) if return_final else None
    _ext.linear_recurrence(gates, tokens, x, dim, initial_values, final, reverse, exclusive, offsets, threads,
                           _stream(gates, stream))
    return (x, final) if return_final else x


def linear_recurrence_backward(gates, x, grad_x, dim=-1, initial=None, reverse=False, grad_final=None,
                               return_grad_initial=False, cu_seqlens=None, threads=0, stream=None):
    """Gradients of x = linear_recurrence(gates, tokens, dim, initial, reverse, cu_seqlens=...) for a loss L,
    from the gates, the forward's outputs x and grad_x = dL/dx: returns (dL/dgates, dL/dtokens), and
    dL/dinitial too with ``return_grad_initial``. ``grad_final``: dL/d(final state), one value per
    sequence. One fused reverse scan. Complex numbers follow PyTorch's convention (dL/dRe + i dL/dIm)."""
    gates, x, grad_x = _as_array(gates), _as_array(x), _as_array(grad_x)
    grad_gates, grad_tokens = _empty_like(gates), _empty_like(gates)
    offsets = _offsets(cu_seqlens)
    batch = _batch_shape(gates, dim, offsets)
    acc = _accumulator(gates)
    grad_initial = _empty_like(gates, batch, acc) if return_grad_initial else None
    _ext.linear_recurrence_backward(gates, x, grad_x, grad_gates, grad_tokens, dim,
                                    _per_sequence(initial, gates, batch, "initial", acc),
                                    _per_sequence(grad_final, gates, batch, "grad_final", acc), grad_initial,
                                    reverse, offsets, threads, _stream(gates, stream))
    return (grad_gates, grad_tokens, grad_initial) if return_grad_initial else (grad_gates, grad_tokens)


def log_linear_recurrence(log_gates, log_tokens, dim=-1, initial=None, reverse=False, exclusive=False,
                          return_final=False, out=None, cu_seqlens=None, threads=0, stream=None):
    """log x[t] for x[t] = a[t] x[t-1] + b[t] with a, b > 0 given as their logs (-inf for zero), computed in
    log space (no overflow or underflow); ``initial``: log x[-1] per sequence (default: x[-1] = 0).
    float32, float64; options as in linear_recurrence."""
    log_gates, log_tokens = _as_array(log_gates), _as_array(log_tokens)
    y = _empty_like(log_tokens) if out is None else out
    offsets = _offsets(cu_seqlens)
    batch = _batch_shape(y, dim, offsets)
    final = _empty_like(y, batch) if return_final else None
    _ext.log_linear_recurrence(log_gates, log_tokens, y, dim, _per_sequence(initial, y, batch, "initial"), final,
                               reverse, exclusive, offsets, threads, _stream(log_gates, stream))
    return (y, final) if return_final else y


def log_linear_recurrence_backward(log_gates, log_tokens, log_x, grad_log_x, dim=-1, initial=None, reverse=False,
                                   grad_final=None, return_grad_initial=False, cu_seqlens=None, threads=0,
                                   stream=None):
    """Gradients of log_x = log_linear_recurrence(log_gates, log_tokens, dim, initial, reverse) from its
    inputs, its outputs log_x and grad_log_x = dL/d(log x): returns (dL/d(log gates), dL/d(log tokens)),
    and dL/d(initial log-value) too with ``return_grad_initial``; ``grad_final``: dL/d(final log-value)
    per sequence. One reverse scan whose gates are the carried shares of x, in [0, 1]: stable at any range
    of x; steps whose output is -inf (x = 0) get 0. float32, float64."""
    log_gates, log_tokens = _as_array(log_gates), _as_array(log_tokens)
    log_x, grad_log_x = _as_array(log_x), _as_array(grad_log_x)
    grad_log_gates, grad_log_tokens = _empty_like(log_gates), _empty_like(log_gates)
    offsets = _offsets(cu_seqlens)
    batch = _batch_shape(log_gates, dim, offsets)
    grad_initial = _empty_like(log_gates, batch) if return_grad_initial else None
    _ext.log_linear_recurrence_backward(log_gates, log_tokens, log_x, grad_log_x, grad_log_gates,
                                        grad_log_tokens, dim, _per_sequence(initial, log_gates, batch, "initial"),
                                        _per_sequence(grad_final, log_gates, batch, "grad_final"), grad_initial,
                                        reverse, offsets, threads, _stream(log_gates, stream))
    grads = (grad_log_gates, grad_log_tokens)
    return grads + (grad_initial,) if return_grad_initial else grads


def signed_log_linear_recurrence(log_gates, tokens, dim=-1, initial=None, reverse=False, exclusive=False,
                                 return_final=False, out=None, cu_seqlens=None, threads=0, stream=None):
    """x[t] = a[t] x[t-1] + b[t] for a > 0 given as log a and tokens b of any sign, in log space: x as
    (log|x|, sign) pairs, an array of the tokens' shape + (2,) (x = sign * exp(log|x|) may lie far beyond
    the float range; zero is (-inf, 1)). ``initial`` / the final values: (log|x|, sign) per sequence, the
    batch shape + (2,) (default: x[-1] = 0). float32, float64; options as in linear_recurrence."""
    log_gates, tokens = _as_array(log_gates), _as_array(tokens)
    x = _empty_like(tokens, tuple(tokens.shape) + (2,)) if out is None else out
    offsets = _offsets(cu_seqlens)
    pairs = tuple(_batch_shape(tokens, dim, offsets)) + (2,)
    final = _empty_like(x, pairs) if return_final else None
    _ext.signed_log_linear_recurrence(log_gates, tokens, x, dim, _per_sequence(initial, x, pairs, "initial"), final,
                                      reverse, exclusive, offsets, threads, _stream(log_gates, stream))
    return (x, final) if return_final else x


def signed_log_linear_recurrence_backward(log_gates, tokens, x, grad_log_abs_x, dim=-1, initial=None,
                                          reverse=False, grad_final=None, return_grad_initial=False,
                                          cu_seqlens=None, threads=0, stream=None):
    """Gradients of x = signed_log_linear_recurrence(log_gates, tokens, dim, initial, reverse) for a loss of
    the log-magnitudes log|x| (x[..., 0]; a sign has none, and for a loss of x itself pass x dL/dx) from
    the inputs, the forward's pairs x and grad_log_abs_x = dL/d(log|x|): returns (dL/d(log gates),
    dL/d(tokens)), and dL/d(log|x0|) with ``return_grad_initial``; ``grad_final``: dL/d(final log|x|) per
    sequence. One reverse scan; steps whose x is zero, or that no gradient reaches, get 0. float32, float64."""
    log_gates, tokens = _as_array(log_gates), _as_array(tokens)
    x, grad_log_abs_x = _as_array(x), _as_array(grad_log_abs_x)
    grad_log_gates, grad_tokens = _empty_like(log_gates), _empty_like(log_gates)
    offsets = _offsets(cu_seqlens)
    batch = tuple(_batch_shape(log_gates, dim, offsets))
    grad_initial = _empty_like(log_gates, batch) if return_grad_initial else None
    _ext.signed_log_linear_recurrence_backward(log_gates, tokens, x, grad_log_abs_x, grad_log_gates, grad_tokens, dim,
                                               _per_sequence(initial, log_gates, batch + (2,), "initial"),
                                               _per_sequence(grad_final, log_gates, batch, "grad_final"),
                                               grad_initial, reverse, offsets, threads, _stream(log_gates, stream))
    grads = (grad_log_gates, grad_tokens)
    return grads + (grad_initial,) if return_grad_initial else grads


def _scan(name, doc):
    fn = getattr(_ext, name)

    def scan(x, dim=-1, initial=None, reverse=False, exclusive=False, return_final=False, out=None, cu_seqlens=None,
             threads=0, stream=None):
        x = _as_array(x)
        y = _empty_like(x) if out is None else out
        offsets = _offsets(cu_seqlens)
        initial_values = final = None
        if initial is not None or return_final:
            batch = _batch_shape(y, dim, offsets)
            initial_values = _per_sequence(initial, y, batch, "initial")
            final = _empty_like(y, batch) if return_final else None
        fn(x, y, dim, initial_values, final, reverse, exclusive, offsets, threads, _stream(x, stream))
        return (y, final) if return_final else y

    scan.__name__ = scan.__qualname__ = name
    scan.__doc__ = doc + """ Along axis ``dim``; float32 and float64. ``initial``: a value per sequence
    (or a scalar) the scan continues from; ``reverse``, ``exclusive``, ``return_final`` and ``cu_seqlens``
    as in linear_recurrence."""
    return scan


cumsum = _scan("cumsum", "Running sum.")
cumprod = _scan("cumprod", "Running product.")
cummax = _scan("cummax", "Running maximum.")
cummin = _scan("cummin", "Running minimum.")
logcumsumexp = _scan("logcumsumexp", "log(cumsum(exp(x))), stable (no overflow; -inf inputs add nothing).")


def logcumsumexp_backward(x, y, grad_y, dim=-1, initial=None, reverse=False, exclusive=False, grad_final=None,
                          return_grad_initial=False, cu_seqlens=None, threads=0, stream=None):
    """dL/dx of y = logcumsumexp(x, dim, initial=..., reverse=..., exclusive=...) from x, y and grad_y = dL/dy
    (one reverse scan; -inf inputs get 0), and dL/dinitial too with ``return_grad_initial``;
    ``grad_final``: dL/d(final log-value), one value per sequence. The end gradients need an inclusive
    forward (an exclusive one's final value is not among its outputs). float32, float64."""
    x, y, grad_y = _as_array(x), _as_array(y), _as_array(grad_y)
    grad_x = _empty_like(x)
    offsets = _offsets(cu_seqlens)
    batch = _batch_shape(x, dim, offsets)
    grad_initial = _empty_like(x, batch) if return_grad_initial else None
    _ext.logcumsumexp_backward(x, y, grad_y, grad_x, dim, _per_sequence(initial, x, batch, "initial"),
                               _per_sequence(grad_final, x, batch, "grad_final"), grad_initial, reverse,
                               exclusive, offsets, threads, _stream(x, stream))
    return (grad_x, grad_initial) if return_grad_initial else grad_x


def affine_recurrence(W, b, dim=-1, initial=None, reverse=False, exclusive=False, return_final=False, out=None,
                      threads=0, stream=None):
    """x[t] = W[t] @ x[t-1] + b[t]: W of shape (..., T, ..., N, N), b and x (..., T, ..., N), ``dim`` the
    time axis among the axes before the element's; N = 2, 3, 4, 8 or 16; float32, float64. ``initial``:
    x[-1] per sequence (batch shape + (N,)); options as in linear_recurrence."""
    W, b = _as_array(W), _as_array(b)
    x = _empty_like(b) if out is None else out
    per_sequence, dim = _element_batch(x, dim, 1)
    final = _empty_like(x, per_sequence) if return_final else None
    _ext.affine_recurrence(W, b, x, dim, _per_sequence(initial, x, per_sequence, "initial"), final, reverse,
                           exclusive, threads, _stream(W, stream))
    return (x, final) if return_final else x


def affine_recurrence_backward(W, x, grad_x, dim=-1, initial=None, reverse=False, grad_final=None,
                               return_grad_initial=False, threads=0, stream=None):
    """Gradients of x = affine_recurrence(W, b, dim, initial, reverse): (dL/dW, dL/db[, dL/dinitial]) from W,
    the forward's outputs x and grad_x = dL/dx; dL/dW[t] = g[t] x[t-1]^T. One fused reverse scan."""
    W, x, grad_x = _as_array(W), _as_array(x), _as_array(grad_x)
    grad_W, grad_b = _empty_like(W), _empty_like(x)
    per_sequence, dim = _element_batch(x, dim, 1)
    grad_initial = _empty_like(x, per_sequence) if return_grad_initial else None
    _ext.affine_recurrence_backward(W, x, grad_x, grad_W, grad_b, dim,
                                    _per_sequence(initial, x, per_sequence, "initial"),
                                    _per_sequence(grad_final, x, per_sequence, "grad_final"), grad_initial,
                                    reverse, threads, _stream(W, stream))
    return (grad_W, grad_b, grad_initial) if return_grad_initial else (grad_W, grad_b)


def _right_to_left(order):
    if order not in ("left_to_right", "right_to_left"):
        raise ValueError("parascan: order: 'left_to_right' (P[t] = M[0] ... M[t]) or 'right_to_left' "
                         "(M[t] ... M[0]), got %r" % (order,))
    return order == "right_to_left"


def matrix_chain(matrices, dim=-1, initial=None, reverse=False, exclusive=False, order="left_to_right",
                 return_final=False, out=None, threads=0, stream=None, math="exact"):
    """Cumulative products P[t] = M[0] @ ... @ M[t] (order 'left_to_right') or M[t] @ ... @ M[0]
    ('right_to_left') of matrices of shape (..., T, ..., N, N), float32 or float64, any N (2, 3, 4, 8 and
    16 run fixed-size kernels; other sizes the runtime-size chains: cuBLAS on the GPU, Eigen on the host);
    ``initial``: the product before the first (per sequence, or one matrix for all). ``math``: 'exact', or
    'tf32' / 'bf16' to multiply float32 matrices on the GPU's tensor cores (through cuBLAS, any N; the
    host computes exactly)."""
    matrices = _as_array(matrices)
    P = _empty_like(matrices) if out is None else out
    per_sequence, dim = _element_batch(P, dim, 2)
    final = _empty_like(P, per_sequence) if return_final else None
    _ext.matrix_chain(matrices, P, None, dim, _per_sequence(initial, P, per_sequence, "initial"), final, reverse,
                      exclusive, _right_to_left(order), threads, _stream(matrices, stream), math)
    return (P, final) if return_final else P


def matrix_chain_product(matrices, dim=-1, initial=None, reverse=False, order="left_to_right", threads=0,
                         stream=None, math="exact"):
    """The whole product of every sequence of matrices (shape: the batch + (N, N)); N and ``math`` as in
    matrix_chain."""
    matrices = _as_array(matrices)
    per_sequence, dim = _element_batch(matrices, dim, 2)
    result = _empty_like(matrices, per_sequence)
    _ext.matrix_chain(matrices, None, result, dim, _per_sequence(initial, matrices, per_sequence, "initial"),
                      None, reverse, False, _right_to_left(order), threads, _stream(matrices, stream), math)
    return result


def matrix_chain_backward(matrices, products, grad_products, dim=-1, initial=None, reverse=False,
                          order="left_to_right", grad_final=None, return_grad_initial=False, threads=0,
                          stream=None, math="exact"):
    """dL/dM of P = matrix_chain(M, dim, initial, reverse, order=...) from M, the products P and
    grad_products = dL/dP (and dL/dinitial with ``return_grad_initial``). One reverse scan."""
    matrices, products, grad_products = _as_array(matrices), _as_array(products), _as_array(grad_products)
    grad_matrices = _empty_like(matrices)
    per_sequence, dim = _element_batch(matrices, dim, 2)
    grad_initial = _empty_like(matrices, per_sequence) if return_grad_initial else None
    _ext.matrix_chain_backward(matrices, products, grad_products, grad_matrices, dim,
                               _per_sequence(initial, matrices, per_sequence, "initial"),
                               _per_sequence(grad_final, matrices, per_sequence, "grad_final"), grad_initial,
                               reverse, _right_to_left(order), threads, _stream(matrices, stream), math)
    return (grad_matrices, grad_initial) if return_grad_initial else grad_matrices


def matrix_chain_product_backward(matrices, grad_result, dim=-1, initial=None, reverse=False, order="left_to_right",
                                  return_grad_initial=False, threads=0, stream=None, math="exact"):
    """dL/dM of R = matrix_chain_product(M, dim, initial, reverse, order=...) from M and grad_result = dL/dR
    (batch shape + (N, N)); and dL/dinitial with ``return_grad_initial``. Two passes: the products before
    each step, then a reverse scan."""
    matrices, grad_result = _as_array(matrices), _as_array(grad_result)
    grad_matrices = _empty_like(matrices)
    per_sequence, dim = _element_batch(matrices, dim, 2)
    grad_initial = _empty_like(matrices, per_sequence) if return_grad_initial else None
    _ext.matrix_chain_product_backward(matrices, _per_sequence(grad_result, matrices, per_sequence, "grad_result"),
                                       grad_matrices, dim, _per_sequence(initial, matrices, per_sequence, "initial"),
                                       grad_initial, reverse, _right_to_left(order), threads,
                                       _stream(matrices, stream), math)
    return (grad_matrices, grad_initial) if return_grad_initial else grad_matrices


_jax_module = None


def _jax_function(name):
    """parascan.jax's function of that name (XLA custom calls: any device, under jit), or None where the
    extension has no XLA targets or the module does not offer it."""
    global _jax_module
    if _jax_module is None:
        if hasattr(_parascan, "xla_targets"):
            from . import jax as module
            _jax_module = module
        else:
            _jax_module = False
    return getattr(_jax_module, name, None) if _jax_module and name in _jax_module.__all__ else None


def _results_like_first_input(fn):
    """JAX inputs get JAX results. Where parascan.jax offers the function, JAX arrays (and tracers, under
    jit) go through it: XLA custom calls on the arrays' own device. Otherwise, on the host: parascan writes
    into NumPy buffers (JAX arrays are immutable) and hands them to JAX through DLPack (without a copy where
    JAX accepts the buffer's alignment)."""
    signature = inspect.signature(fn)
    first_name = next(iter(signature.parameters))

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if _framework(args[0] if args else kwargs.get(first_name)) != "jax":
            return fn(*args, **kwargs)
        arguments = signature.bind(*args, **kwargs).arguments
        if arguments.get("out") is not None:
            raise ValueError("parascan: out: JAX arrays are immutable (leave out=None: the call returns new arrays)")
        jax_fn = _jax_function(fn.__name__)
        if jax_fn is not None and arguments.get("cu_seqlens") is None:
            arguments.pop("stream", None)  # XLA's stream
            return jax_fn(**{k: v for k, v in arguments.items() if k not in ("out", "cu_seqlens")})
        result = fn(*args, **kwargs)
        import jax.dlpack

        def convert(r):
            return None if r is None else jax.dlpack.from_dlpack(r)
        return tuple(convert(r) for r in result) if isinstance(result, tuple) else convert(result)
    return wrapper


for _name in __all__:
    if _name != "has_cuda":
        globals()[_name] = _results_like_first_input(globals()[_name])
del _name
