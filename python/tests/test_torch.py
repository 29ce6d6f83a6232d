"""parascan.torch: the custom ops under autograd, gradcheck, opcheck and torch.compile, and the
accelerated-scan drop-in, on CPU tensors (host backend). Skipped where PyTorch is not installed (CI
keeps its install small; the GPU machine has it)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
import parascan  # noqa: E402
import parascan.torch as pt  # noqa: E402

SEED = int(np.random.SeedSequence().entropy % (2 ** 63))
GEN = torch.Generator().manual_seed(SEED)


def inputs(shape, dtype=torch.float64, requires_grad=False):
    a = (torch.rand(shape, generator=GEN, dtype=torch.float64) * 0.5 + 0.45).to(dtype)
    b = torch.randn(shape, generator=GEN, dtype=torch.float64).to(dtype)
    return a.requires_grad_(requires_grad), b.requires_grad_(requires_grad)


def loop(a, b, dim=-1, initial=None, reverse=False):
    a, b = a.detach().movedim(dim, -1).double(), b.detach().movedim(dim, -1).double()
    x = torch.zeros(a.shape[:-1], dtype=torch.float64) if initial is None else initial.detach().double().clone()
    out = torch.empty_like(a)
    T = a.shape[-1]
    for k in range(T):
        t = T - 1 - k if reverse else k
        x = a[..., t] * x + b[..., t]
        out[..., t] = x
    return out.movedim(-1, dim)


@pytest.mark.parametrize("dim,reverse", [(-1, False), (1, True), (0, False)])
def test_forward_matches_a_loop(dim, reverse):
    a, b = inputs((3, 40, 5), torch.float32)
    x = pt.linear_recurrence(a, b, dim=dim, reverse=reverse)
    assert x.dtype == torch.float32 and x.shape == a.shape
    assert torch.allclose(x.double(), loop(a, b, dim, reverse=reverse), rtol=1e-5, atol=1e-5), SEED


def test_gradcheck_in_fp64_with_initial_states():
    a, b = inputs((2, 3, 9), requires_grad=True)
    x0 = torch.randn(2, 3, generator=GEN, dtype=torch.float64, requires_grad=True)
    for dim, reverse in ((-1, False), (-1, True)):
        assert torch.autograd.gradcheck(lambda a, b, x0: pt.linear_recurrence(a, b, dim, x0, reverse), (a, b, x0)), SEED
    a2, b2 = inputs((4, 6, 2), requires_grad=True)
    for reverse in (False, True):  # without an initial state: the eager path's own Function
        assert torch.autograd.gradcheck(lambda a, b: pt.linear_recurrence(a, b, dim=1, reverse=reverse), (a2, b2)), SEED
        assert torch.autograd.gradcheck(lambda a, b: pt.linear_recurrence(a, b, reverse=reverse), (a, b)), SEED


def test_opcheck_of_the_registered_ops():
    a, b = inputs((2, 3, 17), requires_grad=True)
    torch.library.opcheck(torch.ops.parascan.linear_recurrence.default, (a, b, None, 2, False))
    x = pt.linear_recurrence(a, b).detach()
    torch.library.opcheck(torch.ops.parascan.linear_recurrence_backward.default,
                          (a.detach(), x, torch.ones_like(x), None, 2, False))
    x0 = torch.ones(2, 3, dtype=a.dtype)  # with an initial state, the third output is its gradient (without, an empty tensor)
    torch.library.opcheck(torch.ops.parascan.linear_recurrence_backward.default,
                          (a.detach(), x, torch.ones_like(x), x0, 2, False))


def test_scan_is_a_drop_in_for_accelerated_scan():
    a, b = inputs((2, 4, 1000), torch.float32, requires_grad=True)  # T = 1000: not a power of two
    x = pt.scan(a, b)
    assert torch.allclose(x.double(), loop(a, b), rtol=1e-5, atol=1e-5), SEED
    w = torch.randn(x.shape, generator=GEN)
    (x * w).sum().backward()
    da, db = parascan.linear_recurrence_backward(a.detach().numpy(), x.detach().numpy(), w.numpy())
    assert np.allclose(a.grad.numpy(), da, rtol=1e-5, atol=1e-5) and np.allclose(b.grad.numpy(), db, rtol=1e-5,
                                                                                      atol=1e-5), SEED
    with pytest.raises(ValueError, match="scan"):
        pt.scan(a[0], b[0])


def test_the_eager_path_by_address_and_its_fallbacks():
    # Contiguous, time last: the extension takes the tensors by address; a transposed view, mixed dtypes or
    # a lazy conjugate go through DLPack (same results, the same checks); create_graph keeps first-order
    # gradients and refuses a second derivative.
    a, b = inputs((3, 5, 33), torch.float64, requires_grad=True)
    w = torch.randn(a.shape, generator=GEN, dtype=torch.float64)
    for reverse in (False, True):
        x = pt.linear_recurrence(a, b, reverse=reverse)
        assert torch.allclose(x, loop(a, b, reverse=reverse), rtol=1e-12, atol=1e-12), SEED
        ga, gb = torch.autograd.grad(x, (a, b), w)
        at, bt = (t.detach().transpose(0, 1).contiguous().transpose(0, 1).requires_grad_() for t in (a, b))
        assert not at.is_contiguous()
        xt = pt.linear_recurrence(at, bt, reverse=reverse)
        gat, gbt = torch.autograd.grad(xt, (at, bt), w)
        assert torch.equal(x, xt) and torch.equal(ga, gat) and torch.equal(gb, gbt), SEED
    ab, bb = inputs((2, 3, 40), torch.bfloat16)
    xb = pt.scan(ab, bb)
    assert xb.dtype == torch.bfloat16
    assert torch.allclose(xb.double(), loop(ab, bb), rtol=2e-2, atol=2e-2), SEED
    with pytest.raises(ValueError, match="tokens"):
        pt.scan(a.detach(), b.detach().float())
    x = pt.scan(a, b)
    ga, = torch.autograd.grad(x, a, w, create_graph=True)
    assert torch.allclose(ga, torch.autograd.grad(pt.scan(a, b), a, w)[0]), SEED
    with pytest.raises(RuntimeError):
        torch.autograd.grad(ga.sum(), a)
    ac = torch.complex(*inputs((2, 2, 9))).conj()
    bc = torch.complex(*inputs((2, 2, 9)))
    assert torch.allclose(pt.scan(ac, bc), pt.scan(ac.resolve_conj(), bc)), SEED
    one = torch.complex(torch.ones(1, 1, 1, dtype=torch.float64), torch.full((1, 1, 1), 2.0, dtype=torch.float64))
    neg = one.conj().imag  # a contiguous real view with the negation bit: -2
    assert neg.is_neg() and neg.is_contiguous()
    assert pt.scan(torch.ones_like(neg), neg).item() == -2.0
    with pytest.raises((ValueError, BufferError)):  # a device of another type than the first tensor's
        pt.scan(a.detach(), torch.empty(a.shape, dtype=a.dtype, device="meta"))


def test_torch_compile_fullgraph():
    a, b = inputs((2, 3, 64), requires_grad=True)

    def f(a, b):
        return (pt.linear_recurrence(a, b, dim=-1) ** 2).sum()

    compiled = torch.compile(f, fullgraph=True)
    value = compiled(a, b)
    value.backward()
    ga, gb = a.grad.clone(), b.grad.clone()
    a.grad, b.grad = None, None
    f(a, b).backward()
    assert torch.allclose(value, f(a, b)) and torch.allclose(ga, a.grad) and torch.allclose(gb, b.grad), SEED


def test_bad_input_is_a_value_error():
    a, b = inputs((2, 8))
    with pytest.raises(ValueError, match="tokens"):
        pt.linear_recurrence(a, b[:, :7])
    with pytest.raises(ValueError, match="dim"):
        pt.linear_recurrence(a, b, dim=3)


def test_the_plain_api_keeps_torch_tensors():
    a, b = inputs((2, 50), torch.float32)
    x, final = parascan.linear_recurrence(a, b, return_final=True, initial=torch.tensor([1.0, 2.0]))
    assert isinstance(x, torch.Tensor) and isinstance(final, torch.Tensor) and x.dtype == torch.float32
    assert torch.allclose(x.double(), loop(a, b, initial=torch.tensor([1.0, 2.0])), rtol=1e-5, atol=1e-5), SEED
    assert torch.equal(final, x[:, -1])
    s = parascan.cumsum(torch.arange(6.0).reshape(2, 3), dim=0)
    assert isinstance(s, torch.Tensor) and s.tolist() == [[0.0, 1.0, 2.0], [3.0, 5.0, 7.0]]


def test_logcumsumexp_op_against_torch():
    x = torch.randn(3, 50, generator=GEN, dtype=torch.float64, requires_grad=True)
    for dim, reverse in ((-1, False), (0, True)):
        y = pt.logcumsumexp(x, dim=dim, reverse=reverse)
        ref = torch.logcumsumexp(x.flip(dim) if reverse else x, dim)
        ref = ref.flip(dim) if reverse else ref
        assert torch.allclose(y, ref, rtol=1e-12, atol=1e-12), SEED
        assert torch.autograd.gradcheck(lambda v: pt.logcumsumexp(v, dim=dim, reverse=reverse), (x[:, :9],)), SEED
    z = torch.tensor([-float("inf"), 0.0, 1.0], dtype=torch.float64, requires_grad=True)
    pt.logcumsumexp(z).sum().backward()
    assert z.grad[0] == 0.0 and torch.isfinite(z.grad).all()
    torch.library.opcheck(torch.ops.parascan.logcumsumexp.default, (x.detach().requires_grad_(), 1, False))


@pytest.mark.parametrize("order", ["left_to_right", "right_to_left"])
def test_matrix_chain_op(order):
    m = (torch.rand(2, 6, 3, 3, generator=GEN, dtype=torch.float64) - 0.5).requires_grad_()
    p = pt.matrix_chain(m, dim=1, order=order)
    acc = torch.eye(3, dtype=torch.float64).expand(2, 3, 3)
    for t in range(6):
        acc = acc @ m[:, t] if order == "left_to_right" else m[:, t] @ acc
        assert torch.allclose(p[:, t], acc, atol=1e-14), SEED
    assert torch.autograd.gradcheck(lambda v: pt.matrix_chain(v, dim=1, order=order), (m,)), SEED
    assert torch.autograd.gradcheck(lambda v: pt.matrix_chain(v, dim=0, reverse=True, order=order), (m[0],)), SEED
    with pytest.raises(ValueError, match="order"):
        pt.matrix_chain(m, order="up")
    total = pt.matrix_chain_product(m, dim=1, order=order)
    assert total.shape == (2, 3, 3) and torch.allclose(total, acc, atol=1e-14), SEED
    assert torch.autograd.gradcheck(lambda v: pt.matrix_chain_product(v, dim=1, order=order), (m,)), SEED
    assert torch.autograd.gradcheck(lambda v: pt.matrix_chain_product(v, dim=0, reverse=True, order=order),
                                    (m[:, 2:],)), SEED
    torch.library.opcheck(torch.ops.parascan.matrix_chain_product.default, (m.detach().requires_grad_(), 1, False,
                                                                             order == "right_to_left", "exact"))


@pytest.mark.parametrize("order", ["left_to_right", "right_to_left"])
def test_runtime_size_chain_ops(order):
    """N = 5 has no fixed-size kernel: the runtime-size chains, through the same custom ops."""
    m = ((torch.rand(2, 7, 5, 5, generator=GEN, dtype=torch.float64) - 0.5) / 2).requires_grad_()
    p = pt.matrix_chain(m, dim=1, order=order)
    acc = torch.eye(5, dtype=torch.float64).expand(2, 5, 5)
    for t in range(7):
        acc = acc @ m[:, t] if order == "left_to_right" else m[:, t] @ acc
        assert torch.allclose(p[:, t], acc, atol=1e-14), SEED
    assert torch.allclose(pt.matrix_chain_product(m, dim=1, order=order), acc, atol=1e-14), SEED
    assert torch.autograd.gradcheck(lambda v: pt.matrix_chain(v, dim=1, order=order), (m,)), SEED
    assert torch.autograd.gradcheck(lambda v: pt.matrix_chain_product(v, dim=0, reverse=True, order=order),
                                    (m[1],)), SEED
    single = m.detach().float()
    assert torch.equal(pt.matrix_chain(single, dim=1, math="tf32"), pt.matrix_chain(single, dim=1))  # host: exact
    with pytest.raises(ValueError, match="math"):
        pt.matrix_chain(m, math="fast")
    torch.library.opcheck(torch.ops.parascan.matrix_chain.default, (m.detach().requires_grad_(), 1, False,
                                                                     order == "right_to_left", "exact"))


def test_bf16_storage_on_the_host():
    gates = torch.full((2, 3, 50), 0.5, dtype=torch.bfloat16, requires_grad=True)  # exact in bf16
    tokens = torch.ones((2, 3, 50), dtype=torch.bfloat16, requires_grad=True)
    x = pt.linear_recurrence(gates, tokens, initial=torch.ones(2, 3))
    assert x.dtype == torch.bfloat16
    want = 2 - 0.5 ** torch.arange(1, 51, dtype=torch.float64)  # x0 = 1: x[t] = 2 - 0.5^(t+1)
    assert torch.allclose(x[0, 0].double(), want, rtol=2 ** -7)
    x.float().sum().backward()
    assert gates.grad.dtype == torch.bfloat16 and torch.isfinite(gates.grad.float()).all()


def test_affine_recurrence_op_gradcheck_and_compile():
    N = 3
    W = (0.5 * torch.randn(2, 6, N, N, generator=GEN, dtype=torch.float64)).requires_grad_()
    b = torch.randn(2, 6, N, generator=GEN, dtype=torch.float64, requires_grad=True)
    x0 = torch.randn(2, N, generator=GEN, dtype=torch.float64, requires_grad=True)
    for reverse in (False, True):
        torch.autograd.gradcheck(lambda w, v, i: pt.affine_recurrence(w, v, dim=1, initial=i, reverse=reverse),
                                 (W, b, x0))
    x = pt.affine_recurrence(W, b, dim=1, initial=x0)
    ref, carry = [], x0
    for t in range(6):  # the recurrence with torch's own ops
        carry = W[:, t] @ carry.unsqueeze(-1)
        carry = carry.squeeze(-1) + b[:, t]
        ref.append(carry)
    assert torch.allclose(x, torch.stack(ref, 1), rtol=1e-12, atol=1e-12)
    torch.library.opcheck(torch.ops.parascan.affine_recurrence.default, (W.detach(), b.detach(), x0.detach(), 1, False))
    compiled = torch.compile(lambda w, v: pt.affine_recurrence(w, v, dim=1).sum(), fullgraph=True)
    assert torch.allclose(compiled(W, b), pt.affine_recurrence(W, b, dim=1).sum())


def test_lazy_conjugates_are_refused_or_resolved():
    a = torch.full((2, 8), 0.5, dtype=torch.complex64)
    b = torch.full((2, 8), 1 + 1j, dtype=torch.complex64)
    with pytest.raises(ValueError, match="lazy conjugate"):
        parascan.linear_recurrence(a, b.conj())  # DLPack would hand over the unconjugated data
    out = torch.empty(2, 8, dtype=torch.complex64).conj()
    with pytest.raises(ValueError, match="lazy conjugate"):
        parascan.linear_recurrence(a, b, out=out)
    want = parascan.linear_recurrence(a, b.conj().resolve_conj())
    torch.testing.assert_close(pt.linear_recurrence(a, b.conj()), want)  # parascan.torch resolves its inputs


def test_recompute_gives_the_same_gradients_and_saves_no_output():
    g = torch.Generator().manual_seed(SEED)
    a = (0.5 + 0.5 * torch.rand(2, 3, 40, generator=g, dtype=torch.float64)).requires_grad_()
    b = torch.randn(2, 3, 40, generator=g, dtype=torch.float64, requires_grad=True)
    x0 = torch.randn(2, 3, generator=g, dtype=torch.float64, requires_grad=True)
    for reverse in (False, True):
        assert torch.autograd.gradcheck(
            lambda u, v, i: pt.linear_recurrence(u, v, initial=i, reverse=reverse, recompute=True), (a, b, x0)), SEED
        w = torch.randn(2, 3, 40, generator=g, dtype=torch.float64)
        want = torch.autograd.grad((pt.linear_recurrence(a, b, initial=x0, reverse=reverse) * w).sum(), (a, b, x0))
        saved = []
        with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
            x = pt.linear_recurrence(a, b, initial=x0, reverse=reverse, recompute=True)
        assert not any(t.data_ptr() == x.data_ptr() for t in saved)  # the inputs are kept, not x
        got = torch.autograd.grad((x * w).sum(), (a, b, x0))
        for gg, ww in zip(got, want):
            torch.testing.assert_close(gg, ww, rtol=0, atol=1e-12)
    torch.library.opcheck(torch.ops.parascan.linear_recurrence_recompute.default,
                          (a.detach(), b.detach(), x0.detach(), 2, False))
    compiled = torch.compile(lambda u, v: pt.linear_recurrence(u, v, recompute=True).square().sum(), fullgraph=True)
    ga, gb = torch.autograd.grad(compiled(a, b), (a, b))
    wa, wb = torch.autograd.grad(pt.linear_recurrence(a, b).square().sum(), (a, b))
    torch.testing.assert_close(ga, wa)
    torch.testing.assert_close(gb, wb)


def test_log_linear_recurrence_op_gradcheck_and_compile():
    la = (torch.rand((2, 9, 3), generator=GEN, dtype=torch.float64) * -0.5).requires_grad_()
    lb = torch.randn((2, 9, 3), generator=GEN, dtype=torch.float64).requires_grad_()
    y0 = torch.randn((2, 3), generator=GEN, dtype=torch.float64).requires_grad_()
    for reverse in (False, True):
        y = pt.log_linear_recurrence(la, lb, dim=1, initial=y0, reverse=reverse)
        want = parascan.log_linear_recurrence(la.detach(), lb.detach(), dim=1, initial=y0.detach(), reverse=reverse)
        assert torch.equal(y.detach(), want), SEED
        assert torch.autograd.gradcheck(
            lambda u, v, i: pt.log_linear_recurrence(u, v, dim=1, initial=i, reverse=reverse), (la, lb, y0)), SEED
    # Far beyond the float range in linear space: log x grows by 100 a step, and its gradient stays finite.
    big = torch.full((10,), 100.0, dtype=torch.float32, requires_grad=True)
    pt.log_linear_recurrence(big, torch.zeros(10)).sum().backward()
    assert torch.isfinite(big.grad).all(), SEED
    torch.library.opcheck(torch.ops.parascan.log_linear_recurrence.default,
                          (la.detach().requires_grad_(), lb.detach(), y0.detach(), 1, False))
    compiled = torch.compile(lambda u, v: pt.log_linear_recurrence(u, v, dim=1).sum(), fullgraph=True)
    assert torch.allclose(compiled(la.detach(), lb.detach()),
                          pt.log_linear_recurrence(la.detach(), lb.detach(), dim=1).sum()), SEED


def test_signed_log_linear_recurrence_op_gradcheck_and_compile():
    # Inputs whose x stays clear of zero both ways (|x| >= 0.05), where gradcheck's differences can measure.
    while True:
        la = torch.rand((2, 9, 3), generator=GEN, dtype=torch.float64) * -0.5
        b = torch.randn((2, 9, 3), generator=GEN, dtype=torch.float64)
        x0 = torch.stack([torch.randn((2, 3), generator=GEN, dtype=torch.float64),
                          torch.sign(torch.randn((2, 3), generator=GEN, dtype=torch.float64))], dim=-1)
        if all(bool((pt.signed_log_linear_recurrence(la, b, dim=1, initial=i, reverse=r)[..., 0] >= -3.0).all())
               for r in (False, True) for i in (x0, None)):  # log 0.05 = -3.0
            break
    la, b, x0 = la.requires_grad_(), b.requires_grad_(), x0.requires_grad_()
    for reverse in (False, True):
        x = pt.signed_log_linear_recurrence(la, b, dim=1, initial=x0, reverse=reverse)
        assert x.shape == (2, 9, 3, 2), SEED
        want = parascan.signed_log_linear_recurrence(la.detach(), b.detach(), dim=1, initial=x0.detach(),
                                                     reverse=reverse)
        assert torch.equal(x.detach(), want), SEED
        # Through log|x| and through x itself (x = sign exp(log|x|): autograd passes x dL/dx to log|x|).
        assert torch.autograd.gradcheck(
            lambda u, v, i: pt.signed_log_linear_recurrence(u, v, dim=1, initial=i, reverse=reverse)[..., 0],
            (la, b, x0)), SEED
        value = lambda u, v: (lambda p: p[..., 1] * p[..., 0].exp())(  # noqa: E731
            pt.signed_log_linear_recurrence(u, v, dim=1, reverse=reverse))
        assert torch.autograd.gradcheck(value, (la, b)), SEED
        linear = pt.linear_recurrence(la.exp(), b, dim=1, reverse=reverse)
        assert torch.allclose(value(la, b), linear), SEED
    torch.library.opcheck(torch.ops.parascan.signed_log_linear_recurrence.default,
                          (la.detach().requires_grad_(), b.detach(), x0.detach(), 1, False))
    compiled = torch.compile(lambda u, v: pt.signed_log_linear_recurrence(u, v, dim=1)[..., 0].sum(), fullgraph=True)
    assert torch.allclose(compiled(la.detach(), b.detach()),
                          pt.signed_log_linear_recurrence(la.detach(), b.detach(), dim=1)[..., 0].sum()), SEED
