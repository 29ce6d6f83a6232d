// First-order linear recurrence x[t] = a[t] * x[t-1] + b[t] (diagonal SSMs, linear RNNs, IIR filters).
//
// Math: step t is the affine map x -> a x + b. Composing "first (a1, b1), then (a2, b2)" gives
//   (a1, b1) . (a2, b2) = (a1 a2, a2 b1 + b2),
// which is associative with identity (1, 0). The scan state after step t is the composition of steps
// 0..t; its b is x[t] started from x[-1] = 0, and seed(x0) = (1, x0) starts it from x0 instead.
//
// State: linear_state<Acc>{a, b} in the accumulator type Acc (ops/accumulator.hpp): fp32 for bf16/fp16
// storage, the type itself for float, double and complex numbers. Gates and tokens may be stored in
// different types; Acc is where they meet (bf16 gates with float tokens -> float, float gates with
// complex64 tokens -> complex64). Outputs, initial and final states are Acc values; the output view may
// be a storage type (bf16 output rounds once per step, at the write).
//
// Inputs, in this order: gates a, tokens b -> lift(a, b). project(state) = x (the state's b).
//
// Precision: each step costs one multiply and one fused multiply-add in Acc. For |a| < 1 the recurrence
// contracts and rounding errors do not grow with T; the parallel combine order changes the rounding,
// not the error's size (fp32 relative error ~ 1e-7, bf16/fp16 output ~ their own rounding).
//
// Works in device code with nvcc: the arithmetic is generic, so float, double, std::complex (host) and
// cuda::std::complex (device) all serve as Acc.
#pragma once

#include <algorithm>

#include <parascan/config.hpp>
#include <parascan/host.hpp>  // prefix_scan<Policy> (the CUDA overload is found by argument-dependent lookup)
#include <parascan/inputs.hpp>
#include <parascan/layout.hpp>
#include <parascan/operator_traits.hpp>
#include <parascan/options.hpp>
#include <parascan/outputs.hpp>
#include <parascan/policy.hpp>
#include <parascan/validate.hpp>

#include "accumulator.hpp"

namespace parascan::ops {

/// The affine map x -> a x + b.
template <class Acc>
struct linear_state {
  Acc a;
  Acc b;
};

/// The operator of x[t] = a[t] x[t-1] + b[t], state and output in Acc.
template <class Acc>
struct linear_recurrence {
  using value_type = linear_state<Acc>;

  PARASCAN_HD value_type identity() const { return {Acc(1), Acc(0)}; }
  /// earlier first, then later: (a1 a2, a2 b1 + b2).
  PARASCAN_HD value_type operator()(const value_type& earlier, const value_type& later) const {
    return {multiply(earlier.a, later.a), multiply(later.a, earlier.b) + later.b};
  }
  /// One step from its gate a and token b (any storage types that convert to Acc).
  template <class A, class B>
  PARASCAN_HD value_type lift(const A& a, const B& b) const {
    return {to_accumulator<Acc>(a), to_accumulator<Acc>(b)};
  }
  PARASCAN_HD Acc project(const value_type& s) const { return s.b; }
  /// The state whose output is x0: the constant map to x0 (a = 1 keeps later gates' products right).
  PARASCAN_HD value_type seed(const Acc& x0) const { return {Acc(1), x0}; }
  /// Sequential loops that only project their carry skip the running gate product (whose underflow to
  /// subnormals is slow on CPUs): same x, stale a.
  PARASCAN_HD value_type step(const value_type& carry, const value_type& x) const {
    return {carry.a, multiply(x.a, carry.b) + x.b};
  }
};

/// The operator for gates stored as A and tokens stored as B.
template <class A, class B>
using linear_recurrence_for = linear_recurrence<common_accumulator_t<A, B>>;

/// The adjoint of the linear recurrence: a reverse, exclusive scan over the gates a, the upstream
/// gradient dy (dL/dx[t] of each output alone) and the forward states one step behind, x[t-1]. Its state
/// carries h[t] = conj(a[t]) (dy[t] + h[t+1]), the gradient that reaches x[t-1] through step t, so that
/// before step t (exclusive) it holds h[t+1] and emits two outputs,
///   dL/db[t] = g[t] = dL/dx[t] = dy[t] + h[t+1],   dL/da[t] = g[t] conj(x[t-1]);
/// the total state is h[0] = dL/dx0, and seeding with dL/d(final state) adds it to g at the last step.
/// Complex numbers follow PyTorch's convention (the gradient of a real loss is dL/dRe + i dL/dIm).
/// StorageBytes: the narrowest element size of the views it reads and writes, which only its CUDA tuning
/// uses (default_policy below).
template <class Acc, int StorageBytes = int(sizeof(Acc))>
struct linear_recurrence_adjoint {
  using value_type = linear_state<Acc>;
  linear_recurrence<Acc> rec;
  PARASCAN_HD value_type identity() const { return rec.identity(); }
  PARASCAN_HD value_type operator()(const value_type& earlier, const value_type& later) const {
    return rec(earlier, later);
  }
  template <class A, class G, class X>
  PARASCAN_HD value_type lift(const A& a, const G& dy, const X&) const {
    const Acc ca = conjugate(to_accumulator<Acc>(a));
    return {ca, multiply(ca, to_accumulator<Acc>(dy))};
  }
  PARASCAN_HD Acc project(const value_type& s) const { return s.b; }
  PARASCAN_HD value_type seed(const Acc& h) const { return {Acc(1), h}; }
  PARASCAN_HD value_type step(const value_type& carry, const value_type& x) const { return rec.step(carry, x); }
  /// (dL/db[t], dL/da[t]), for parascan::outputs(grad_tokens, grad_gates).
  template <class A, class G, class X>
  PARASCAN_HD value_pack<Acc, Acc> emit(const value_type& s, const A&, const G& dy, const X& x_prev) const {
    const Acc g = to_accumulator<Acc>(dy) + s.b;
    return values(g, multiply(g, conjugate(to_accumulator<Acc>(x_prev))));
  }
};

}  // namespace parascan::ops

namespace parascan {

/// The fused backward's CUDA tuning (fp32 state; bench --sweep, H200, (8, 1536, T), T = 4096 / 65536): it
/// keeps three inputs' raw elements and two outputs' values per item, 86-96 registers, so the 64 of the
/// forward's 8 resident blocks spill (64 / 71% of its floor); 4 blocks (128 registers) and 3 stages reach
/// 81.5 / 90.3% (5 blocks the same, 6 blocks 79 / 88%). bf16 storage: 8 items a thread (16-byte loads) at
/// 4 blocks, 49 / 62% (3 blocks 41 / 52%, 4 items 39-45%). fp32 with 8 items at 3 blocks: within a point
/// of 4 items (92.3 against 91.2% at 4096, 92.6 against 92.7 at 65536). Since shifted inputs move on the
/// chunk grid (H100, .scratch probe, same process, T = 4096 / 65536): fp32 92.5 / 91.2% (5 blocks 91.8 /
/// 91.0, 8 blocks 66 / 68: spills); bf16 8 items at 4 blocks 76.9 / 89.5%, 16 items at 3 blocks (the
/// former choice from 16384 steps) 42.7 / 72.0, 6 or 8 blocks 40-57 (spills).
template <int StorageBytes>
struct default_policy<ops::linear_recurrence_adjoint<float, StorageBytes>, arch::sm90> {
  using type = std::conditional_t<StorageBytes <= 2, cuda_policy<128, 8, combine_variant::warp, 4, 3>,
                                  cuda_policy<128, 4, combine_variant::warp, 4, 3>>;
};

/// x[t] = gates[t] * x[t-1] + tokens[t] for every sequence; x[-1] = opts.initial (or 0).
/// gates, tokens and x share one shape (any layout); x may alias tokens (in place) when their element
/// sizes match. opts.initial / opts.final hold one accumulator-typed value per sequence.
/// `exec` is parascan::host{...} or parascan::cuda{...}.
template <class Exec, class A, class B, class Y>
void linear_recurrence(const Exec& exec, const sequences<A>& gates, const sequences<B>& tokens, const sequences<Y>& x,
                       const options<ops::common_accumulator_t<A, B>>& opts = {}) {
  prefix_scan(exec, ops::linear_recurrence_for<A, B>{}, parascan::inputs(gates, tokens), x, opts);
}

/// Gradients of x = linear_recurrence(gates, tokens, x, {reverse, initial}) for a loss L, from the gates,
/// the forward's outputs `x` and the upstream gradient `grad_x` (dL/dx[t] of each output alone):
/// grad_gates = dL/da, grad_tokens = dL/db; opts.grad_final adds dL/d(final state), opts.grad_initial
/// receives dL/d(initial state). All views share one shape (any layout); the gradients are written in
/// their views' types (bf16 storage: fp32 arithmetic, one rounding at the write). Complex numbers follow
/// PyTorch's convention. One reverse scan through the engine (ops::linear_recurrence_adjoint) reads the
/// gates, grad_x and the states one step behind (a shifted input) and writes both gradients (an output
/// pack): 20 bytes a step for fp32. `Policy` (optional) tunes the CUDA scan as prefix_scan's does.
template <class Policy = use_default_policy, class Exec, class A, class X, class G, class DA, class DB,
          class Acc = ops::common_accumulator_t<std::remove_const_t<A>, std::remove_const_t<X>, std::remove_const_t<G>>>
void linear_recurrence_backward(const Exec& exec, const sequences<A>& gates, const sequences<X>& x,
                                const sequences<G>& grad_x, const sequences<DA>& grad_gates,
                                const sequences<DB>& grad_tokens, const backward_options<Acc>& opts = {}) {
  detail::check_backward_call(exec, gates, x, grad_x, grad_gates, &grad_tokens, opts);
  constexpr int narrowest = int(std::min({sizeof(A), sizeof(X), sizeof(G), sizeof(DA), sizeof(DB)}));
  const ops::linear_recurrence_adjoint<Acc, narrowest> adjoint;
  const auto x_prev = parascan::shifted(x, previous_step(opts), std::remove_const_t<X>{}, opts.initial);
  prefix_scan<Policy>(exec, adjoint, parascan::inputs(gates, grad_x, x_prev),
                      parascan::outputs(grad_tokens, grad_gates), adjoint_options(opts));
}

}  // namespace parascan
