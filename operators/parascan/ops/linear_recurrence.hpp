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
  /// No inf or NaN in the gate product or x: the host then carries across its threads' chunks by op().
  bool finite(const value_type& s) const { return finite_value(s.a) && finite_value(s.b); }
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
  bool finite(const value_type& s) const { return rec.finite(s); }
  /// (dL/db[t], dL/da[t]), for parascan::outputs(grad_tokens, grad_gates).
  template <class A, class G, class X>
  PARASCAN_HD value_pack<Acc, Acc> emit(const value_type& s, const A&, const G& dy, const X& x_prev) const {
    const Acc g = to_accumulator<Acc>(dy) + s.b;
    return values(g, multiply(g, conjugate(to_accumulator<Acc>(x_prev))));
  }
};

}  // namespace parascan::ops

namespace parascan {

/// The fused backward's CUDA tuning (fp32 state). Its stream (policy.hpp's streamed_ladder) keeps three
/// inputs' raw elements and two outputs' values a step, about 60 registers at 4 items a thread (84 at 8),
/// so its blocks are fewer than the forward's. Measured on an H100 ((8, 1536, T), % of cudaMemcpy in one
/// process, 20 bytes a step in fp32, 10 in bf16; .scratch probe, 2026-11-23):
///   fp32          T   256   512   1024  2048  4096  8192  16384 65536
///   warps (128 x 4, 4 blocks, 3 stages)
///                     55.9  71.5  80.7  86.3  87.7  88.8  89.1  89.9
///   64 x 4@16         69.2  79.3  86.4  90.2  91.8  93.1  93.2  90.2
///   256 x 4@4          -     -    89.9  93.6  96.3  97.2  97.3  97.2
///   512 x 4@2          -     -     -    93.9  97.1  98.6  98.0  97.7
///   (512 x 4@3 94.9 / 96.7 / 97.5 at 2048 / 4096 / 65536; 128 x 4@8 89.0 / 94.7 / 91.5 at 1024 / 4096 /
///   65536; 1024 x 4@2 and 256 x 4@8 spill 24 bytes: 96.2 / 90.3 and 89.9 / 81.5 at 4096 / 65536.) The
///   forward's reversed order (the shifted states one step ahead) reads the same (97.9% at 4096).
///   bf16 storage (8 items a thread for 16-byte loads; 2-byte elements put on the stack until load_run
///   and store_items stopped choosing array elements by conditional expressions: 128 x 8@6 61.5 / 72.0 /
///   75.4% before at 1024 / 4096 / 65536):
///   warps (128 x 8, 4 blocks, 3 stages), before
///                     20.6  29.9  42.2  54.2  62.1  65.5  67.8  69.5
///   the same, after   22.1  31.5  46.1  63.5  75.8  83.2  87.8  90.4
///   64 x 8@16          -    66.5  78.0  84.6  88.1  90.0  91.8  92.5
///   128 x 8@8          -     -    79.9  86.8  91.2  93.2  93.0  95.4
///   256 x 8@4          -     -     -    88.1  92.7  94.3  94.5  95.5
///   (at 64 registers these spill 26, 30 and 18 bytes; another run of 256 x 8@4: 84.1 / 90.5 / 95.8 at
///   2048 / 4096 / 65536. Without spills: 64 x 8@8 60.3 / 72.9 / 85.7 at 512 / 1024 / 4096, 128 x 8@6
///   72.4 / 87.1 / 91.4 at 1024 / 4096 / 65536; 512 x 8@2 88.5 / 94.5 at 4096 / 65536; 4 items a thread
///   (8-byte loads): 256 x 4@6 83.9 / 89.2, 1024 x 4@2 77.7 / 87.7.)
/// From 2048 steps the rungs depend on the device's memory (policy.hpp, memory_bandwidth): on an H200 the
/// H100's rungs leave bandwidth unused, and a tile prefetched into the L2 ahead of the one in registers
/// (s2) recovers it (policy_sweep part stream_prefetch, 2026-11-27, % of cudaMemcpy, same binary):
///   H200 fp32    T    2048  4096  8192  16384 65536
///   512 x 4@2         83.9  86.6  88.6  88.7  89.0
///   512 x 4@2s2       83.9  94.4  99.0  98.1  96.5
///   256 x 4@4s2       96.0  98.0  96.4  95.7  94.0
///   H200 bf16
///   256 x 8@4         76.9  81.8  79.1  78.1  79.6
///   256 x 8@4s2       76.9  87.9  90.6  93.0  93.7
///   128 x 8@8s2       80.6  85.7  87.9  89.2  90.0
/// (the H100 in the same sweep: 512 x 4@2 96.9 / 98.4 / 98.4 / 97.6 / 96.9 and with s2 96.7 / 98.9 / 95.8 /
/// 94.7 / 91.9; bf16 256 x 8@4 90.0 / 93.6 / 93.6 / 93.9 / 94.5, with s2 90.3 / 94.5 / 93.2 / 91.2 / 89.7.)
template <int StorageBytes>
struct default_policy<ops::linear_recurrence_adjoint<float, StorageBytes>, arch::sm90> {
  template <int Threads, int Items, int Blocks, int Stages = 1>
  using stream = sm90_tuning::stream<Threads, Items, Blocks, Stages>;
  static constexpr auto below = sm90_tuning::below_4_5_tbs, from = sm90_tuning::from_4_5_tbs;
  using wide = streamed_ladder<cuda_policy<128, 4, combine_variant::warp, 4, 3>, stream_rung<256, stream<64, 4, 16>>,
                               stream_rung<1000, stream<256, 4, 4>>, stream_rung<2048, stream<512, 4, 2>, 0, below>,
                               stream_rung<2048, stream<256, 4, 4, 2>, 0, from>,
                               stream_rung<8192, stream<512, 4, 2, 2>, 0, from>>;
  using narrow =
      streamed_ladder<cuda_policy<128, 8, combine_variant::warp, 4, 3>, stream_rung<512, stream<64, 8, 16>, 32>,
                      stream_rung<1024, stream<128, 8, 8>, 32>, stream_rung<2048, stream<256, 8, 4>, 32, below>,
                      stream_rung<2048, stream<128, 8, 8, 2>, 32, from>,
                      stream_rung<4096, stream<256, 8, 4, 2>, 32, from>>;
  using type = std::conditional_t<StorageBytes <= 2, narrow, wide>;
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
