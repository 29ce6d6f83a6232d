"""parascan: parallel scans over any associative operator, from Python.

Arrays are taken without a copy through DLPack (NumPy arrays, and PyTorch CPU tensors); outputs are
allocated in the input's framework unless ``out=`` is given. The time axis is ``dim`` (default the last,
as in ``torch.cumsum``); every other axis is the batch, any strides. This build runs the host backend
(parascan::host, worker threads over sequences); ``threads=0`` uses one per hardware thread. Bad input
raises ValueError with parascan's message, before anything is written.

    import numpy as np, parascan
    x = parascan.linear_recurrence(gates, tokens)             # x[t] = gates[t] * x[t-1] + tokens[t]
    da, db = parascan.linear_recurrence_backward(gates, x, grad_x)
"""
from . import _parascan

__version__ = _parascan.version
__all__ = [
    "linear_recurrence", "linear_recurrence_backward", "cumsum", "cumprod", "cummax", "cummin",
    "logcumsumexp", "has_cuda",
]

has_cuda = _parascan.has_cuda


def _framework(x):
    """'torch' for PyTorch tensors, else 'numpy' (NumPy arrays and anything np.asarray takes)."""
    return "torch" if type(x).__module__.startswith("torch") else "numpy"


def _empty_like(x, shape=None):
    """An uninitialised array of x's dtype (and device), in x's framework, C-contiguous."""
    if _framework(x) == "torch":
        import torch
        return torch.empty(tuple(x.shape) if shape is None else shape, dtype=x.dtype, device=x.device)
    import numpy as np
    x = np.asarray(x)
    return np.empty(x.shape if shape is None else shape, dtype=x.dtype)


def _batch_shape(x, dim):
    shape = list(x.shape)
    if not -len(shape) <= dim < len(shape):
        raise ValueError("parascan: dim: an axis of the input (%d axes), got %d" % (len(shape), dim))
    del shape[dim]
    return tuple(shape)


def _as_array(x):
    """NumPy and PyTorch arrays pass through; anything else becomes a NumPy array (lists, scalars)."""
    if _framework(x) == "torch" or hasattr(x, "__dlpack__"):
        return x
    import numpy as np
    return np.asarray(x)


def _per_sequence(value, like, batch, name):
    """initial / grad_final: one value per sequence (the batch shape), C-contiguous, like's dtype."""
    if value is None:
        return None
    shape = tuple(getattr(value, "shape", ()))
    if shape not in ((), tuple(batch)):
        raise ValueError("parascan: %s: one value per sequence, shape %s (or a scalar), got shape %s"
                         % (name, tuple(batch), shape))
    if _framework(like) == "torch":
        import torch
        value = torch.as_tensor(value, dtype=like.dtype, device=like.device)
        value = value.expand(batch) if value.dim() == 0 else value
        return value.contiguous()
    import numpy as np
    value = np.asarray(value, dtype=np.asarray(like).dtype)
    return np.ascontiguousarray(np.broadcast_to(value, batch) if value.ndim == 0 else value)


def linear_recurrence(gates, tokens, dim=-1, initial=None, reverse=False, exclusive=False, return_final=False,
                      out=None, threads=0):
    """x[t] = gates[t] * x[t-1] + tokens[t] along axis ``dim``; x[-1] = ``initial`` (one value per sequence,
    the batch shape, or a scalar; default 0). ``reverse`` runs from the last step, ``exclusive`` writes
    the state before each step. Returns x, or (x, final state per sequence) with ``return_final``.
    float32, float64, complex64, complex128; gates and tokens of one shape and dtype."""
    gates, tokens = _as_array(gates), _as_array(tokens)
    x = _empty_like(tokens) if out is None else out
    batch = _batch_shape(x, dim)
    final = _empty_like(x, batch) if return_final else None
    _parascan.linear_recurrence(gates, tokens, x, dim, _per_sequence(initial, x, batch, "initial"), final, reverse,
                                exclusive, threads)
    return (x, final) if return_final else x


def linear_recurrence_backward(gates, x, grad_x, dim=-1, initial=None, reverse=False, grad_final=None,
                               return_grad_initial=False, threads=0):
    """Gradients of x = linear_recurrence(gates, tokens, dim, initial, reverse) for a loss L, from the gates,
    the forward's outputs x and grad_x = dL/dx: returns (dL/dgates, dL/dtokens), and dL/dinitial too with
    ``return_grad_initial``. ``grad_final``: dL/d(final state), one value per sequence. Complex numbers
    follow PyTorch's convention (dL/dRe + i dL/dIm)."""
    gates, x, grad_x = _as_array(gates), _as_array(x), _as_array(grad_x)
    grad_gates, grad_tokens = _empty_like(gates), _empty_like(gates)
    batch = _batch_shape(gates, dim)
    grad_initial = _empty_like(gates, batch) if return_grad_initial else None
    _parascan.linear_recurrence_backward(gates, x, grad_x, grad_gates, grad_tokens, dim,
                                         _per_sequence(initial, gates, batch, "initial"),
                                         _per_sequence(grad_final, gates, batch, "grad_final"), grad_initial,
                                         reverse, threads)
    return (grad_gates, grad_tokens, grad_initial) if return_grad_initial else (grad_gates, grad_tokens)


def _scan(name, doc):
    fn = getattr(_parascan, name)

    def scan(x, dim=-1, initial=None, reverse=False, exclusive=False, return_final=False, out=None, threads=0):
        x = _as_array(x)
        y = _empty_like(x) if out is None else out
        batch = _batch_shape(y, dim)
        final = _empty_like(y, batch) if return_final else None
        fn(x, y, dim, _per_sequence(initial, y, batch, "initial"), final, reverse, exclusive, threads)
        return (y, final) if return_final else y

    scan.__name__ = scan.__qualname__ = name
    scan.__doc__ = doc + """ Along axis ``dim``; float32 and float64. ``initial``: a value per sequence
    (or a scalar) the scan continues from; ``reverse``, ``exclusive`` and ``return_final`` as in
    linear_recurrence."""
    return scan


cumsum = _scan("cumsum", "Running sum.")
cumprod = _scan("cumprod", "Running product.")
cummax = _scan("cummax", "Running maximum.")
cummin = _scan("cummin", "Running minimum.")
logcumsumexp = _scan("logcumsumexp", "log(cumsum(exp(x))), stable (no overflow; -inf inputs add nothing).")
