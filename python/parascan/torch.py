"""PyTorch integration: parascan's linear, log-space and affine recurrences, logcumsumexp and matrix chains as
torch.library custom ops with fake (meta) implementations and autograd through their backward passes, so that
they work under autograd, gradcheck and torch.compile(fullgraph=True) without graph breaks (eager calls on
plain tensors run the same implementations through a torch.autograd.Function instead: the dispatcher's
custom-op path costs several times the host time of a whole forward and backward, which short sequences
notice); and
``scan(gates, tokens)``, a drop-in for accelerated-scan's ``scan`` (same signature, any T, not only
powers of two).

CPU tensors run the host backend; CUDA tensors the CUDA backend (when parascan.has_cuda) on their device
and on PyTorch's current stream. The linear recurrence takes float32, float64, complex64, complex128 and
bfloat16 / float16 storage (float32 state and initial values).

    from parascan.torch import scan                  # was: from accelerated_scan.warp import scan
    x = scan(gates, tokens)                          # (B, C, T): x[t] = gates[t] * x[t-1] + tokens[t]
    x = linear_recurrence(gates, tokens, dim=1, initial=x0, reverse=False)
"""
from typing import Optional, Tuple

import torch

from torch.utils.dlpack import to_dlpack as _to_dlpack

from . import _TORCH_TYPES, _ext, _parascan, _torch_current_stream

__all__ = ["linear_recurrence", "affine_recurrence", "logcumsumexp", "log_linear_recurrence",
           "signed_log_linear_recurrence", "matrix_chain", "matrix_chain_product", "scan"]


def _host(t: Optional[torch.Tensor]):
    """An input tensor as the extension takes it: a lazy conjugate or negation resolved (DLPack has no such
    bit). (Tensors that require grad need no detach: torch.utils.dlpack.to_dlpack takes them.)"""
    if t is None:
        return None
    # (resolve_* pass through the dispatcher even when they return t: test the bits first)
    return t.resolve_conj().resolve_neg() if t.is_conj() or t.is_neg() else t


def _capsule(t: Optional[torch.Tensor]):
    """A tensor as the extension's DLPack capsule, for the linear recurrence's calls, which skip the generic
    wrapper (_ext): a step of a short sequence's training is host-bound, and each microsecond shows."""
    return None if t is None else _to_dlpack(_host(t))


_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def _stream(t: torch.Tensor) -> int:
    """PyTorch's current stream on t's device (0 for CPU tensors)."""
    if not t.is_cuda:
        return 0
    return _raw_stream(t.get_device()) if _raw_stream is not None else _torch_current_stream(t.device)


def _eager_function(forward, setup_context, backward):
    """An autograd.Function running `forward` and `backward` (the custom op's implementations) directly."""

    class Function(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *inputs):
            output = forward(*inputs)
            setup_context(ctx, inputs, output)
            return output

        @staticmethod
        @torch.autograd.function.once_differentiable  # the backward passes are not differentiable themselves
        def backward(ctx, *grads):
            return backward(ctx, *grads)

    return Function


_PLAIN = (torch.Tensor, torch.nn.Parameter)
_TORCH_TYPES.update(_PLAIN)  # they reach the extension as DLPack capsules (parascan._dl)


def _eager(*tensors) -> bool:
    """Plain tensors outside tracing: no torch.compile / export, no tensor subclass (fake, functional,
    DTensor), which need the custom op (a graph holds one node) rather than an autograd.Function."""
    return not torch.compiler.is_compiling() and all(type(t) in _PLAIN for t in tensors if isinstance(t, torch.Tensor))


def _call(op, eager, *args):
    """The custom op where PyTorch traces or a tensor subclass dispatches; else the eager autograd.Function."""
    return eager.apply(*args) if _eager(*args) else op(*args)


def _accumulator(t: torch.Tensor) -> torch.dtype:
    return torch.float32 if t.dtype in (torch.bfloat16, torch.float16) else t.dtype


def _batch(x: torch.Tensor, dim: int):
    shape = list(x.shape)
    del shape[dim]
    return shape


def _linear_recurrence(gates: torch.Tensor, tokens: torch.Tensor, initial: Optional[torch.Tensor], dim: int,
                       reverse: bool) -> torch.Tensor:
    x = torch.empty_like(tokens, memory_format=torch.contiguous_format)
    _parascan.linear_recurrence(_capsule(gates), _capsule(tokens), _to_dlpack(x), dim, _capsule(initial), None,
                                reverse, False, None, 0, _stream(tokens))
    return x


_forward = torch.library.custom_op("parascan::linear_recurrence", _linear_recurrence, mutates_args=())


@_forward.register_fake
def _(gates, tokens, initial, dim, reverse):
    return torch.empty_like(tokens, memory_format=torch.contiguous_format)


def _linear_recurrence_gradients(gates: torch.Tensor, x: torch.Tensor, grad_x: torch.Tensor,
                                 initial: Optional[torch.Tensor], dim: int, reverse: bool):
    """(dL/dgates, dL/dtokens, dL/dinitial or None where there is no initial): one fused reverse scan."""
    grad_gates = torch.empty_like(gates, memory_format=torch.contiguous_format)
    grad_tokens = torch.empty_like(gates, memory_format=torch.contiguous_format)
    grad_initial = None if initial is None else gates.new_empty(_batch(gates, dim), dtype=_accumulator(gates))
    _parascan.linear_recurrence_backward(_capsule(gates), _capsule(x), _capsule(grad_x.contiguous()),
                                         _to_dlpack(grad_gates), _to_dlpack(grad_tokens), dim, _capsule(initial),
                                         None, _capsule(grad_initial), reverse, None, 0, _stream(gates))
    return grad_gates, grad_tokens, grad_initial


def _no_initial_gradient(gates: torch.Tensor) -> torch.Tensor:
    """The custom op's third output where there is no initial state (a custom op returns tensors only)."""
    return gates.new_empty((0,), dtype=_accumulator(gates))


def _linear_recurrence_backward(gates: torch.Tensor, x: torch.Tensor, grad_x: torch.Tensor,
                                initial: Optional[torch.Tensor], dim: int,
                                reverse: bool) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    grad_gates, grad_tokens, grad_initial = _linear_recurrence_gradients(gates, x, grad_x, initial, dim, reverse)
    return grad_gates, grad_tokens, _no_initial_gradient(gates) if grad_initial is None else grad_initial


_backward_op = torch.library.custom_op("parascan::linear_recurrence_backward", _linear_recurrence_backward,
                                       mutates_args=())


@_backward_op.register_fake
def _(gates, x, grad_x, initial, dim, reverse):
    return (torch.empty_like(gates, memory_format=torch.contiguous_format),
            torch.empty_like(gates, memory_format=torch.contiguous_format),
            _no_initial_gradient(gates) if initial is None else
            gates.new_empty(_batch(gates, dim), dtype=_accumulator(gates)))


# A recurrence's inputs are (gates or W, tokens or b, initial, dim, reverse) and its backward pass reads
# the gates, the outputs x and the initial state: the linear and affine recurrences share these two.
def _setup_context(ctx, inputs, output):
    gates, _tokens, initial, dim, reverse = inputs
    ctx.save_for_backward(gates, output, initial)
    ctx.dim, ctx.reverse = dim, reverse


def _gradient(backward):
    def grad(ctx, grad_x):
        gates, x, initial = ctx.saved_tensors
        grad_gates, grad_tokens, grad_initial = backward(gates, x, grad_x, initial, ctx.dim, ctx.reverse)
        return grad_gates, grad_tokens, (grad_initial if initial is not None else None), None, None
    return grad


_forward.register_autograd(_gradient(_backward_op), setup_context=_setup_context)
_LinearRecurrence = _eager_function(_linear_recurrence, _setup_context, _gradient(_linear_recurrence_gradients))


# The same recurrence keeping its inputs instead of x for the backward pass, which runs the forward again
# (one more pass over the data) to rebuild x: x's memory is not held between the passes.
def _linear_recurrence_recompute(gates: torch.Tensor, tokens: torch.Tensor, initial: Optional[torch.Tensor], dim: int,
                                 reverse: bool) -> torch.Tensor:
    return _linear_recurrence(gates, tokens, initial, dim, reverse)


_forward_recompute = torch.library.custom_op("parascan::linear_recurrence_recompute", _linear_recurrence_recompute,
                                             mutates_args=())


@_forward_recompute.register_fake
def _(gates, tokens, initial, dim, reverse):
    return torch.empty_like(tokens, memory_format=torch.contiguous_format)


def _setup_recompute(ctx, inputs, output):
    gates, tokens, initial, dim, reverse = inputs
    ctx.save_for_backward(gates, tokens, initial)
    ctx.dim, ctx.reverse = dim, reverse


def _recompute_gradient(forward, backward):
    """_gradient's, with x rebuilt by `forward` from the saved gates and tokens."""
    def grad(ctx, grad_x):
        gates, tokens, initial = ctx.saved_tensors
        x = forward(gates, tokens, initial, ctx.dim, ctx.reverse)
        grad_gates, grad_tokens, grad_initial = backward(gates, x, grad_x, initial, ctx.dim, ctx.reverse)
        return grad_gates, grad_tokens, (grad_initial if initial is not None else None), None, None
    return grad


_forward_recompute.register_autograd(_recompute_gradient(_forward, _backward_op), setup_context=_setup_recompute)
_LinearRecurrenceRecompute = _eager_function(_linear_recurrence, _setup_recompute,
                                             _recompute_gradient(_linear_recurrence, _linear_recurrence_gradients))


# The extension's dtype codes for arrays passed by address (parascan_ext.cpp's by_address).
_DTYPE_CODES = {torch.float32: 0, torch.float64: 1, torch.complex64: 2, torch.complex128: 3, torch.bfloat16: 4,
                torch.float16: 5}


def _address_code(dim: int, *tensors: torch.Tensor) -> Optional[int]:
    """The extension's dtype code where `tensors` can go to it by address, else None: time last (`dim`), one
    shape, dtype and device (the host, or a GPU of a CUDA build), C-contiguous, no lazy negation bit (a real
    view of a conjugate's imaginary part carries one) nor, on complex tensors, conjugate bit."""
    first = tensors[0]
    code = _DTYPE_CODES.get(first.dtype)
    cuda = first.is_cuda
    if code is None or dim != first.dim() - 1 or (cuda and not _parascan.has_cuda):
        return None
    device = first.get_device()
    for t in tensors:
        if (t.is_cuda != cuda or not (cuda or t.is_cpu) or t.get_device() != device or t.dtype != first.dtype
                or t.shape != first.shape or not t.is_contiguous() or t.is_neg() or (2 <= code <= 3 and t.is_conj())):
            return None
    return code


def _rows(t: torch.Tensor) -> int:
    """The sequences of a tensor whose last axis is time."""
    steps = t.shape[-1]
    return t.numel() // steps if steps else 0


class _PlainRecurrence(torch.autograd.Function):
    """The eager path of the commonest call, no initial state on plain tensors: a training step of short
    sequences is host-bound (H100, (8, 1536, T <= 512): ~0.15 ms a forward + backward whatever T). The generic
    path (a five-argument Function made by _eager_function, through _call) cost it ~30 us against
    accelerated-scan's, and DLPack's capsules (torch's export, the extension's import) ~5 us a call more than
    accelerated-scan's own extension takes its tensors: contiguous tensors with time last go to the
    extension by address."""

    @staticmethod
    def forward(ctx, gates, tokens, dim, reverse):
        code = _address_code(dim, gates, tokens)
        if code is None:
            x = _linear_recurrence(gates, tokens, None, dim, reverse)
        else:
            x = torch.empty_like(tokens)
            _parascan.linear_recurrence_by_address(gates.data_ptr(), tokens.data_ptr(), x.data_ptr(), _rows(x),
                                                   x.shape[-1], code, x.get_device(), reverse, 0, _stream(x))
        ctx.save_for_backward(gates, x)
        ctx.dim, ctx.reverse = dim, reverse
        return x

    @staticmethod
    def backward(ctx, grad_x):
        # create_graph: these gradients are not differentiable themselves, and differentiating them must say
        # so (once_differentiable); otherwise its no_grad scope costs a step microseconds for nothing.
        if torch.is_grad_enabled():
            return _plain_gradients_once(ctx, grad_x)
        return _plain_gradients(ctx, grad_x)


def _plain_gradients(ctx, grad_x):
    gates, x = ctx.saved_tensors
    grad_x = grad_x.contiguous()
    code = _address_code(ctx.dim, gates, x, grad_x)
    if code is None:
        grad_gates, grad_tokens, _ = _linear_recurrence_gradients(gates, x, grad_x, None, ctx.dim, ctx.reverse)
    else:
        grad_gates, grad_tokens = torch.empty_like(gates), torch.empty_like(gates)
        _parascan.linear_recurrence_backward_by_address(gates.data_ptr(), x.data_ptr(), grad_x.data_ptr(),
                                                        grad_gates.data_ptr(), grad_tokens.data_ptr(), _rows(x),
                                                        x.shape[-1], code, x.get_device(), ctx.reverse, 0,
                                                        _stream(x))
    return grad_gates, grad_tokens, None, None


_plain_gradients_once = torch.autograd.function.once_differentiable(_plain_gradients)


def linear_recurrence(gates: torch.Tensor, tokens: torch.Tensor, dim: int = -1,
                      initial: Optional[torch.Tensor] = None, reverse: bool = False,
                      recompute: bool = False) -> torch.Tensor:
    """x[t] = gates[t] * x[t-1] + tokens[t] along ``dim``, x[-1] = ``initial`` (shape: the batch, i.e. the
    tensors' shape without ``dim``; default 0), differentiable in gates, tokens and initial. ``recompute``:
    autograd keeps tokens instead of x and the backward pass runs the forward again (x's memory is freed
    once nothing else holds x: a win where tokens are kept anyway and x is not, at the cost of a pass)."""
    if not -gates.dim() <= dim < gates.dim():
        raise ValueError("parascan: dim: an axis of gates (%d axes), got %d" % (gates.dim(), dim))
    dim %= gates.dim()
    if initial is not None:
        initial = initial.to(dtype=_accumulator(tokens)).expand(_batch(tokens, dim)).contiguous()
    if recompute:
        return _call(_forward_recompute, _LinearRecurrenceRecompute, gates, tokens, initial, dim, reverse)
    if initial is None and _eager(gates, tokens):
        return _PlainRecurrence.apply(gates, tokens, dim, reverse)
    return _call(_forward, _LinearRecurrence, gates, tokens, initial, dim, reverse)


def _logcumsumexp_impl(x: torch.Tensor, dim: int, reverse: bool) -> torch.Tensor:
    y = torch.empty_like(x, memory_format=torch.contiguous_format)
    _ext.logcumsumexp(_host(x), y, dim, None, None, reverse, False, None, 0, _stream(x))
    return y


_logcumsumexp = torch.library.custom_op("parascan::logcumsumexp", _logcumsumexp_impl, mutates_args=())


@_logcumsumexp.register_fake
def _(x, dim, reverse):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _logcumsumexp_backward_impl(x: torch.Tensor, y: torch.Tensor, grad_y: torch.Tensor, dim: int,
                                reverse: bool) -> torch.Tensor:
    grad_x = torch.empty_like(x, memory_format=torch.contiguous_format)
    _ext.logcumsumexp_backward(_host(x), _host(y), _host(grad_y.contiguous()), grad_x, dim, None, None, None,
                               reverse, False, None,
                               0, _stream(x))
    return grad_x


_logcumsumexp_backward = torch.library.custom_op("parascan::logcumsumexp_backward", _logcumsumexp_backward_impl,
                                                 mutates_args=())


@_logcumsumexp_backward.register_fake
def _(x, y, grad_y, dim, reverse):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _logcumsumexp_setup(ctx, inputs, output):
    x, dim, reverse = inputs
    ctx.save_for_backward(x, output)
    ctx.dim, ctx.reverse = dim, reverse


def _logcumsumexp_gradient(backward):
    def grad(ctx, grad_y):
        x, y = ctx.saved_tensors
        return backward(x, y, grad_y, ctx.dim, ctx.reverse), None, None
    return grad


_logcumsumexp.register_autograd(_logcumsumexp_gradient(_logcumsumexp_backward), setup_context=_logcumsumexp_setup)
_LogCumSumExp = _eager_function(_logcumsumexp_impl, _logcumsumexp_setup,
                                _logcumsumexp_gradient(_logcumsumexp_backward_impl))


def logcumsumexp(x: torch.Tensor, dim: int = -1, reverse: bool = False) -> torch.Tensor:
    """log(cumsum(exp(x))) along ``dim`` (from the last step with ``reverse``), differentiable; -inf inputs
    get a zero gradient. float32, float64."""
    if not -x.dim() <= dim < x.dim():
        raise ValueError("parascan: dim: an axis of x (%d axes), got %d" % (x.dim(), dim))
    return _call(_logcumsumexp, _LogCumSumExp, x, dim % x.dim(), reverse)


# The log-space recurrences: their backward passes read both inputs, the outputs and the initial state.
def _log_space_setup(ctx, inputs, output):
    log_gates, tokens, initial, dim, reverse = inputs
    ctx.save_for_backward(log_gates, tokens, output, initial)
    ctx.dim, ctx.reverse = dim, reverse


def _log_space_gradient(backward):
    def grad(ctx, grad_out):
        log_gates, tokens, out, initial = ctx.saved_tensors
        grad_log_gates, grad_tokens, grad_initial = backward(log_gates, tokens, out, grad_out, initial, ctx.dim,
                                                             ctx.reverse)
        return grad_log_gates, grad_tokens, (grad_initial if initial is not None else None), None, None
    return grad


def _log_linear_impl(log_gates: torch.Tensor, log_tokens: torch.Tensor, initial: Optional[torch.Tensor], dim: int,
                     reverse: bool) -> torch.Tensor:
    y = torch.empty_like(log_tokens, memory_format=torch.contiguous_format)
    _ext.log_linear_recurrence(_host(log_gates), _host(log_tokens), y, dim, _host(initial), None, reverse, False, None,
                               0, _stream(log_tokens))
    return y


_log_linear = torch.library.custom_op("parascan::log_linear_recurrence", _log_linear_impl, mutates_args=())


@_log_linear.register_fake
def _(log_gates, log_tokens, initial, dim, reverse):
    return torch.empty_like(log_tokens, memory_format=torch.contiguous_format)


def _log_linear_backward_impl(log_gates: torch.Tensor, log_tokens: torch.Tensor, y: torch.Tensor,
                              grad_y: torch.Tensor, initial: Optional[torch.Tensor], dim: int,
                              reverse: bool) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    grad_log_gates = torch.empty_like(log_gates, memory_format=torch.contiguous_format)
    grad_log_tokens = torch.empty_like(log_gates, memory_format=torch.contiguous_format)
    grad_initial = log_gates.new_empty(_batch(log_gates, dim))
    _ext.log_linear_recurrence_backward(_host(log_gates), _host(log_tokens), _host(y), _host(grad_y.contiguous()),
                                        grad_log_gates, grad_log_tokens, dim, _host(initial), None, grad_initial,
                                        reverse, None, 0, _stream(log_gates))
    return grad_log_gates, grad_log_tokens, grad_initial


_log_linear_backward = torch.library.custom_op("parascan::log_linear_recurrence_backward", _log_linear_backward_impl,
                                               mutates_args=())


@_log_linear_backward.register_fake
def _(log_gates, log_tokens, y, grad_y, initial, dim, reverse):
    return (torch.empty_like(log_gates, memory_format=torch.contiguous_format),
            torch.empty_like(log_gates, memory_format=torch.contiguous_format),
            log_gates.new_empty(_batch(log_gates, dim)))


_log_linear.register_autograd(_log_space_gradient(_log_linear_backward), setup_context=_log_space_setup)
_LogLinearRecurrence = _eager_function(_log_linear_impl, _log_space_setup,
                                       _log_space_gradient(_log_linear_backward_impl))


def _time_axis(x: torch.Tensor, dim: int, name: str) -> int:
    if not -x.dim() <= dim < x.dim():
        raise ValueError("parascan: dim: an axis of %s (%d axes), got %d" % (name, x.dim(), dim))
    return dim % x.dim()


def log_linear_recurrence(log_gates: torch.Tensor, log_tokens: torch.Tensor, dim: int = -1,
                          initial: Optional[torch.Tensor] = None, reverse: bool = False) -> torch.Tensor:
    """log x[t] for x[t] = a[t] x[t-1] + b[t] with a, b > 0 given as their logs (-inf for zero), along
    ``dim``, computed in log space (no overflow); log x[-1] = ``initial`` (the batch shape, default x[-1] =
    0); differentiable in both inputs and initial (one reverse scan whose gates are x's carried shares, in
    [0, 1]). float32, float64."""
    dim = _time_axis(log_tokens, dim, "log_tokens")
    if initial is not None:
        initial = initial.to(dtype=log_tokens.dtype).expand(_batch(log_tokens, dim)).contiguous()
    return _call(_log_linear, _LogLinearRecurrence, log_gates, log_tokens, initial, dim, reverse)


def _signed_log_linear_impl(log_gates: torch.Tensor, tokens: torch.Tensor, initial: Optional[torch.Tensor], dim: int,
                            reverse: bool) -> torch.Tensor:
    x = tokens.new_empty(tuple(tokens.shape) + (2,))
    _ext.signed_log_linear_recurrence(_host(log_gates), _host(tokens), x, dim, _host(initial), None, reverse, False,
                                      None, 0, _stream(tokens))
    return x


_signed_log_linear = torch.library.custom_op("parascan::signed_log_linear_recurrence", _signed_log_linear_impl,
                                             mutates_args=())


@_signed_log_linear.register_fake
def _(log_gates, tokens, initial, dim, reverse):
    return tokens.new_empty(tuple(tokens.shape) + (2,))


def _signed_log_linear_backward_impl(log_gates: torch.Tensor, tokens: torch.Tensor, x: torch.Tensor,
                                     grad_x: torch.Tensor, initial: Optional[torch.Tensor], dim: int,
                                     reverse: bool) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    # Only grad_x[..., 0], dL/d(log|x|), flows back (an output's sign is piecewise constant). The forward
    # reads an initial pair as the number sign exp(log|x0|), so its gradient is (g, sign g), g = dL/d(log|x0|).
    grad_log_gates = torch.empty_like(log_gates, memory_format=torch.contiguous_format)
    grad_tokens = torch.empty_like(log_gates, memory_format=torch.contiguous_format)
    grad_initial = log_gates.new_empty(_batch(log_gates, dim) + [2])
    grad_log_abs = log_gates.new_empty(_batch(log_gates, dim))
    _ext.signed_log_linear_recurrence_backward(_host(log_gates), _host(tokens), _host(x),
                                               _host(grad_x[..., 0].contiguous()), grad_log_gates, grad_tokens, dim,
                                               _host(initial), None, grad_log_abs, reverse, None, 0,
                                               _stream(log_gates))
    grad_initial[..., 0] = grad_log_abs
    grad_initial[..., 1] = 0 if initial is None else grad_log_abs * initial[..., 1]
    return grad_log_gates, grad_tokens, grad_initial


_signed_log_linear_backward = torch.library.custom_op("parascan::signed_log_linear_recurrence_backward",
                                                      _signed_log_linear_backward_impl, mutates_args=())


@_signed_log_linear_backward.register_fake
def _(log_gates, tokens, x, grad_x, initial, dim, reverse):
    return (torch.empty_like(log_gates, memory_format=torch.contiguous_format),
            torch.empty_like(log_gates, memory_format=torch.contiguous_format),
            log_gates.new_empty(_batch(log_gates, dim) + [2]))


_signed_log_linear.register_autograd(_log_space_gradient(_signed_log_linear_backward), setup_context=_log_space_setup)
_SignedLogLinearRecurrence = _eager_function(_signed_log_linear_impl, _log_space_setup,
                                             _log_space_gradient(_signed_log_linear_backward_impl))


def signed_log_linear_recurrence(log_gates: torch.Tensor, tokens: torch.Tensor, dim: int = -1,
                                 initial: Optional[torch.Tensor] = None, reverse: bool = False) -> torch.Tensor:
    """x[t] = a[t] x[t-1] + b[t] for a > 0 given as log a and tokens b of any sign, along ``dim``, in log
    space: x as (log|x|, sign) pairs, a tensor of the tokens' shape + (2,) (x = sign * exp(log|x|), zero as
    (-inf, 1)); x[-1] = ``initial`` pairs (the batch shape + (2,), default 0, read as the number
    sign * exp(log|x0|)). Differentiable in log_gates, tokens and initial through log|x| (an output's sign
    is piecewise constant), so through x = sign * exp(log|x|) too. float32, float64."""
    dim = _time_axis(tokens, dim, "tokens")
    if initial is not None:
        initial = initial.to(dtype=tokens.dtype).expand(_batch(tokens, dim) + [2]).contiguous()
    return _call(_signed_log_linear, _SignedLogLinearRecurrence, log_gates, tokens, initial, dim, reverse)


def _workspace(t: torch.Tensor):
    """Temporary device memory for the runtime-size chains from PyTorch's caching allocator (on t's device and
    the current stream, the call's): their workspace, gigabytes at N = 1024, would otherwise be mapped afresh
    by parascan's own pool on every call. None for CPU tensors."""
    if not t.is_cuda:
        return None
    device = t.device
    return lambda nbytes: torch.empty(nbytes, dtype=torch.uint8, device=device)


def _matrix_chain_impl(matrices: torch.Tensor, dim: int, reverse: bool, right_to_left: bool,
                       math: str) -> torch.Tensor:
    products = torch.empty_like(matrices, memory_format=torch.contiguous_format)
    _ext.matrix_chain(_host(matrices), products, None, dim, None, None, reverse, False, right_to_left, 0,
                      _stream(matrices), math, _workspace(matrices))
    return products


_matrix_chain = torch.library.custom_op("parascan::matrix_chain", _matrix_chain_impl, mutates_args=())


@_matrix_chain.register_fake
def _(matrices, dim, reverse, right_to_left, math):
    return torch.empty_like(matrices, memory_format=torch.contiguous_format)


def _matrix_chain_backward_impl(matrices: torch.Tensor, products: torch.Tensor, grad_products: torch.Tensor, dim: int,
                                reverse: bool, right_to_left: bool, math: str) -> torch.Tensor:
    grad = torch.empty_like(matrices, memory_format=torch.contiguous_format)
    _ext.matrix_chain_backward(_host(matrices), _host(products), _host(grad_products.contiguous()), grad, dim,
                               None, None, None, reverse, right_to_left, 0, _stream(matrices), math,
                               _workspace(matrices))
    return grad


_matrix_chain_backward = torch.library.custom_op("parascan::matrix_chain_backward", _matrix_chain_backward_impl,
                                                 mutates_args=())


@_matrix_chain_backward.register_fake
def _(matrices, products, grad_products, dim, reverse, right_to_left, math):
    return torch.empty_like(matrices, memory_format=torch.contiguous_format)


def _matrix_chain_setup(ctx, inputs, output):
    matrices, dim, reverse, right_to_left, math = inputs
    ctx.save_for_backward(matrices, output)
    ctx.dim, ctx.reverse, ctx.right_to_left, ctx.math = dim, reverse, right_to_left, math


def _matrix_chain_gradient(backward):
    def grad(ctx, grad_products):
        matrices, products = ctx.saved_tensors
        return (backward(matrices, products, grad_products, ctx.dim, ctx.reverse, ctx.right_to_left, ctx.math),
                None, None, None, None)
    return grad


_matrix_chain.register_autograd(_matrix_chain_gradient(_matrix_chain_backward), setup_context=_matrix_chain_setup)
_MatrixChain = _eager_function(_matrix_chain_impl, _matrix_chain_setup,
                               _matrix_chain_gradient(_matrix_chain_backward_impl))


def matrix_chain(matrices: torch.Tensor, dim: int = -1, reverse: bool = False,
                 order: str = "left_to_right", math: str = "exact") -> torch.Tensor:
    """Cumulative products of (..., T, ..., N, N) matrices along ``dim`` (counted among the axes before the
    last two), M[0] @ ... @ M[t] (``order`` 'left_to_right') or M[t] @ ... @ M[0], differentiable;
    float32, float64; any N: 2, 3, 4, 8 and 16 run fixed-size kernels, every other N the runtime-size
    chains (cuBLAS on the GPU, Eigen on the host). ``math``: 'exact', or 'tf32' / 'bf16' to multiply
    float32 matrices on the GPU's tensor cores (cuBLAS, any N; about 2^-11 / 2^-8 relative error a
    product; the host computes exactly)."""
    dim, right_to_left = _chain_arguments(matrices, dim, order, math)
    return _call(_matrix_chain, _MatrixChain, matrices, dim, reverse, right_to_left, math)


def _matrix_chain_product_impl(matrices: torch.Tensor, dim: int, reverse: bool, right_to_left: bool,
                               math: str) -> torch.Tensor:
    result = matrices.new_empty(_product_shape(matrices, dim))
    _ext.matrix_chain(_host(matrices), None, result, dim, None, None, reverse, False, right_to_left, 0,
                      _stream(matrices), math, _workspace(matrices))
    return result


def _product_shape(matrices: torch.Tensor, dim: int):
    return matrices.shape[:dim] + matrices.shape[dim + 1:]


_matrix_chain_product = torch.library.custom_op("parascan::matrix_chain_product", _matrix_chain_product_impl,
                                                mutates_args=())


@_matrix_chain_product.register_fake
def _(matrices, dim, reverse, right_to_left, math):
    return matrices.new_empty(_product_shape(matrices, dim))


def _matrix_chain_product_backward_impl(matrices: torch.Tensor, grad_result: torch.Tensor, dim: int, reverse: bool,
                                        right_to_left: bool, math: str) -> torch.Tensor:
    grad = torch.empty_like(matrices, memory_format=torch.contiguous_format)
    _ext.matrix_chain_product_backward(_host(matrices), _host(grad_result.contiguous()), grad, dim, None, None,
                                       reverse, right_to_left, 0, _stream(matrices), math, _workspace(matrices))
    return grad


_matrix_chain_product_backward = torch.library.custom_op(
    "parascan::matrix_chain_product_backward", _matrix_chain_product_backward_impl, mutates_args=())


@_matrix_chain_product_backward.register_fake
def _(matrices, grad_result, dim, reverse, right_to_left, math):
    return torch.empty_like(matrices, memory_format=torch.contiguous_format)


def _matrix_chain_product_setup(ctx, inputs, output):
    matrices, dim, reverse, right_to_left, math = inputs
    ctx.save_for_backward(matrices)
    ctx.dim, ctx.reverse, ctx.right_to_left, ctx.math = dim, reverse, right_to_left, math


def _matrix_chain_product_gradient(backward):
    def grad(ctx, grad_result):
        (matrices,) = ctx.saved_tensors
        return (backward(matrices, grad_result, ctx.dim, ctx.reverse, ctx.right_to_left, ctx.math),
                None, None, None, None)
    return grad


_matrix_chain_product.register_autograd(_matrix_chain_product_gradient(_matrix_chain_product_backward),
                                        setup_context=_matrix_chain_product_setup)
_MatrixChainProduct = _eager_function(_matrix_chain_product_impl, _matrix_chain_product_setup,
                                      _matrix_chain_product_gradient(_matrix_chain_product_backward_impl))


def _chain_arguments(matrices: torch.Tensor, dim: int, order: str, math: str):
    """The time axis among those before the last two, and whether the order is right_to_left."""
    outer = matrices.dim() - 2
    if outer < 1 or not -outer <= dim < outer:
        raise ValueError("parascan: dim: an axis of matrices other than its last two (%d axes), got %d"
                         % (max(outer, 0), dim))
    if order not in ("left_to_right", "right_to_left"):
        raise ValueError("parascan: order: 'left_to_right' or 'right_to_left', got %r" % (order,))
    if math not in ("exact", "tf32", "bf16"):
        raise ValueError("parascan: math: 'exact', 'tf32' or 'bf16', got %r" % (math,))
    return dim % outer, order == "right_to_left"


def matrix_chain_product(matrices: torch.Tensor, dim: int = -1, reverse: bool = False,
                         order: str = "left_to_right", math: str = "exact") -> torch.Tensor:
    """The whole product of each sequence of (..., T, ..., N, N) matrices along ``dim`` (the batch shape +
    (N, N)), in ``order`` as matrix_chain, differentiable; dtypes, N and ``math`` as matrix_chain."""
    dim, right_to_left = _chain_arguments(matrices, dim, order, math)
    return _call(_matrix_chain_product, _MatrixChainProduct, matrices, dim, reverse, right_to_left, math)


def _affine_impl(W: torch.Tensor, b: torch.Tensor, initial: Optional[torch.Tensor], dim: int,
                 reverse: bool) -> torch.Tensor:
    x = torch.empty_like(b, memory_format=torch.contiguous_format)
    _ext.affine_recurrence(_host(W), _host(b), x, dim, _host(initial), None, reverse, False, 0, _stream(W))
    return x


_affine = torch.library.custom_op("parascan::affine_recurrence", _affine_impl, mutates_args=())


@_affine.register_fake
def _(W, b, initial, dim, reverse):
    return torch.empty_like(b, memory_format=torch.contiguous_format)


def _affine_backward_impl(W: torch.Tensor, x: torch.Tensor, grad_x: torch.Tensor, initial: Optional[torch.Tensor],
                          dim: int, reverse: bool) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    grad_W = torch.empty_like(W, memory_format=torch.contiguous_format)
    grad_b = torch.empty_like(x, memory_format=torch.contiguous_format)
    grad_initial = x.new_empty(_batch(x, dim))
    _ext.affine_recurrence_backward(_host(W), _host(x), _host(grad_x.contiguous()), grad_W, grad_b, dim,
                                    _host(initial), None, grad_initial, reverse, 0, _stream(W))
    return grad_W, grad_b, grad_initial


_affine_backward = torch.library.custom_op("parascan::affine_recurrence_backward", _affine_backward_impl,
                                           mutates_args=())


@_affine_backward.register_fake
def _(W, x, grad_x, initial, dim, reverse):
    return (torch.empty_like(W, memory_format=torch.contiguous_format),
            torch.empty_like(x, memory_format=torch.contiguous_format), x.new_empty(_batch(x, dim)))


_affine.register_autograd(_gradient(_affine_backward), setup_context=_setup_context)
_AffineRecurrence = _eager_function(_affine_impl, _setup_context, _gradient(_affine_backward_impl))


def affine_recurrence(W: torch.Tensor, b: torch.Tensor, dim: int = -1, initial: Optional[torch.Tensor] = None,
                      reverse: bool = False) -> torch.Tensor:
    """x[t] = W[t] @ x[t-1] + b[t] along ``dim`` (counted among the axes before the element's): W of shape
    (..., T, ..., N, N), b (..., T, ..., N), x[-1] = ``initial`` (the batch shape + (N,), default 0);
    differentiable in W, b and initial. N = 2, 3, 4, 8, 16; float32, float64."""
    outer = b.dim() - 1
    if outer < 1 or not -outer <= dim < outer:
        raise ValueError("parascan: dim: an axis of b other than its last (%d axes), got %d" % (max(outer, 0), dim))
    dim %= outer
    if initial is not None:
        initial = initial.to(dtype=b.dtype).expand(_batch(b, dim)).contiguous()
    return _call(_affine, _AffineRecurrence, W, b, initial, dim, reverse)


def scan(gates: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """accelerated-scan's ``scan(gates, tokens)``: (B, C, T) tensors, x[t] = gates[t] * x[t-1] + tokens[t]
    along the last axis, forward and backward; any T."""
    if gates.dim() != 3 or tokens.shape != gates.shape:
        raise ValueError("parascan: scan: gates and tokens of one shape (B, C, T), got %s and %s"
                         % (tuple(gates.shape), tuple(tokens.shape)))
    if _eager(gates, tokens):
        return _PlainRecurrence.apply(gates, tokens, 2, False)
    return _call(_forward, _LinearRecurrence, gates, tokens, None, 2, False)
