// Scan options shared by every backend.
#pragma once

#include "config.hpp"

namespace parascan {

/// Options of a scan whose operator writes values of type Y (its output_t).
///
/// - exclusive: out[t] combines the steps before t (out[0] is the initial state, or the identity).
/// - reverse: the scan runs from the last step to the first, in place of flipping the sequences: out[t]
///   combines steps t..T-1 with step T-1 as the earliest (the operator sees time in scan order).
/// - initial: one output-typed value per sequence (sequence order, see layout.hpp) that the scan continues
///   from, as if it were the output of a step before the first; null for none.
/// - final: where to write project(initial + every step) per sequence; null for none. Feeding it back as
///   `initial` of the next chunk continues a sequence in pieces (streaming inference).
/// Pointers are host memory for parascan::host and device memory for parascan::cuda.
template <class Y>
struct options {
  bool exclusive = false;
  bool reverse = false;
  const Y* initial = nullptr;
  Y* final = nullptr;
};

/// Options of a backward pass (the `*_backward` wrappers) for a forward scan whose states are of type Y.
///
/// - reverse, exclusive: how the forward scan ran (a wrapper that cannot take one says so).
/// - initial: the forward's initial states (one per sequence), null for none (zero).
/// - grad_final: dL/d(the forward's final state), one per sequence; null for none (zero).
/// - grad_initial: where to write dL/d(initial state), one per sequence; null for none.
/// Pointers are host memory for parascan::host and device memory for parascan::cuda.
/// GY: the type of a state's gradient, Y itself but where the gradient is taken with respect to a part of
/// the state (signed_log_linear_recurrence_backward: dL/d(log|x|) of x = {log|x|, sign}).
template <class Y, class GY = Y>
struct backward_options {
  bool reverse = false;
  bool exclusive = false;
  const Y* initial = nullptr;
  const GY* grad_final = nullptr;
  GY* grad_initial = nullptr;
};

/// The options of a recurrence's adjoint scan (the `*_backward` wrappers): back from the forward's last
/// step, exclusive (step t sees the gradient from the steps after it), seeded with dL/d(final state), its
/// total written as dL/d(initial state).
template <class Y, class GY>
options<GY> adjoint_options(const backward_options<Y, GY>& b) {
  options<GY> scan;
  scan.reverse = !b.reverse;
  scan.exclusive = true;
  scan.initial = b.grad_final;
  scan.final = b.grad_initial;
  return scan;
}

/// Where a backward pass reads x[t - 1] of the forward's order: one step behind in time, or ahead when
/// the forward ran in reverse.
template <class Y, class GY>
index_t previous_step(const backward_options<Y, GY>& b) {
  return b.reverse ? 1 : -1;
}

}  // namespace parascan
