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

#include <parascan/config.hpp>
#include <parascan/inputs.hpp>
#include <parascan/layout.hpp>
#include <parascan/operator_traits.hpp>
#include <parascan/options.hpp>

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

}  // namespace parascan::ops

namespace parascan {

/// x[t] = gates[t] * x[t-1] + tokens[t] for every sequence; x[-1] = opts.initial (or 0).
/// gates, tokens and x share one shape (any layout); x may alias tokens (in place) when their element
/// sizes match. opts.initial / opts.final hold one accumulator-typed value per sequence.
/// `exec` is parascan::host{...} or parascan::cuda{...}.
template <class Exec, class A, class B, class Y>
void linear_recurrence(const Exec& exec, const sequences<A>& gates, const sequences<B>& tokens, const sequences<Y>& x,
                       const options<ops::common_accumulator_t<A, B>>& opts = {}) {
  prefix_scan(exec, ops::linear_recurrence_for<A, B>{}, parascan::inputs(gates, tokens), x, opts);
}

}  // namespace parascan
