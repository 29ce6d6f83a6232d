// Backward passes of the running scans of ops/basic.hpp: cumsum, cumprod, cummax and cummin. Each is one
// reverse scan through the engine over the forward's inputs, outputs and the upstream gradient dy
// (dL/dy[t] of each output alone), with parascan::backward_options as the recurrences' backward passes:
// the forward's reverse, exclusive and initial value; grad_final adds dL/d(final value), grad_initial
// receives dL/d(initial value).
//
//   cumsum:  dx[t] = the sum of dy[u] over the outputs u that step t reached (u >= t, or u > t for an
//            exclusive forward) + dL/dF: a cumsum of dy the other way.
//   cumprod: dx[t] = conj(the product before step t) h[t], h[t] = dy[t] + conj(x[t + 1]) h[t + 1] (the
//            linear recurrence's adjoint: no division, exact with zeros); PyTorch's complex convention.
//   cummax / cummin: dy[u] goes to the step whose value y[u] is (the latest step holding the extremum,
//            as the forward's ties keep the later value; the latest NaN where y is NaN, as PyTorch's
//            indices), or to the initial value where no step reached it: a segmented sum, reset at each
//            step that holds the extremum so far.
#pragma once

#include <type_traits>

#include <parascan/config.hpp>
#include <parascan/error.hpp>
#include <parascan/inputs.hpp>
#include <parascan/layout.hpp>
#include <parascan/options.hpp>
#include <parascan/shifted.hpp>

#include "accumulator.hpp"
#include "basic.hpp"
#include "linear_recurrence.hpp"

namespace parascan::ops {

/// cumprod's adjoint for an inclusive forward: the linear recurrence's (gates x, the products one step
/// behind as its states) with the gates' gradient as its one output.
template <class Acc>
struct product_adjoint : linear_recurrence_adjoint<Acc> {
  template <class X, class G, class YP>
  PARASCAN_HD Acc emit(const linear_state<Acc>& s, const X&, const G& dy, const YP& y_prev) const {
    return multiply(to_accumulator<Acc>(dy) + s.b, conjugate(to_accumulator<Acc>(y_prev)));
  }
};

/// cumprod's adjoint for an exclusive forward (y[t] = the product before step t): k[t] = dy[t + 1] +
/// conj(x[t + 1]) k[t + 1], seeded with dL/dF, and dx[t] = k[t] conj(y[t]); the total is dL/d(initial).
template <class Acc>
struct exclusive_product_adjoint {
  using value_type = linear_state<Acc>;
  linear_recurrence<Acc> rec;
  PARASCAN_HD value_type identity() const { return rec.identity(); }
  PARASCAN_HD value_type operator()(const value_type& earlier, const value_type& later) const {
    return rec(earlier, later);
  }
  template <class X, class G, class Y>
  PARASCAN_HD value_type lift(const X& x, const G& dy, const Y&) const {
    return {conjugate(to_accumulator<Acc>(x)), to_accumulator<Acc>(dy)};
  }
  PARASCAN_HD Acc project(const value_type& s) const { return s.b; }
  PARASCAN_HD value_type seed(const Acc& k) const { return {Acc(1), k}; }
  bool finite(const value_type& s) const { return rec.finite(s); }
  template <class X, class G, class Y>
  PARASCAN_HD Acc emit(const value_type& s, const X&, const G&, const Y& y) const {
    return multiply(s.b, conjugate(to_accumulator<Acc>(y)));
  }
};

/// The gradient gathered back to the last step that held the extremum: `claimed` once such a step has
/// been passed (in the scan's order, back from the end), `sum` the gradient since.
template <class Acc>
struct claimed_sum {
  bool claimed;
  Acc sum;
};

/// cummax's and cummin's adjoint: a segmented sum in reverse over (x, y, dy), reset at each step t that
/// holds the extremum (x[t] == y[t], or x[t] NaN); such a step emits what it gathered. For an exclusive
/// forward y is read one step ahead (the extremum through step t) and dy[t] belongs to the steps before t.
template <class Acc, bool Exclusive = false>
struct extremum_adjoint {
  using value_type = claimed_sum<Acc>;
  PARASCAN_HD value_type identity() const { return {false, Acc(0)}; }
  PARASCAN_HD value_type operator()(const value_type& earlier, const value_type& later) const {
    return later.claimed ? later : value_type{earlier.claimed, earlier.sum + later.sum};
  }
  template <class X, class Y>
  PARASCAN_HD static bool holds(const X& x, const Y& y) {
    const Acc v = to_accumulator<Acc>(x);
    return v != v || v == to_accumulator<Acc>(y);
  }
  template <class X, class Y, class G>
  PARASCAN_HD value_type lift(const X& x, const Y& y, const G& dy) const {
    const Acc g = to_accumulator<Acc>(dy);
    if (!holds(x, y)) return {false, g};
    return {true, Exclusive ? g : Acc(0)};
  }
  PARASCAN_HD Acc project(const value_type& s) const { return s.sum; }
  PARASCAN_HD value_type seed(const Acc& g) const { return {false, g}; }
  template <class X, class Y, class G>
  PARASCAN_HD Acc emit(const value_type& s, const X& x, const Y& y, const G& dy) const {
    if (!holds(x, y)) return Acc(0);
    return Exclusive ? s.sum : to_accumulator<Acc>(dy) + s.sum;
  }
};

}  // namespace parascan::ops

namespace parascan {

namespace detail {
/// End gradients need the final value among an inclusive forward's outputs.
template <class Y>
void require_inclusive_for_ends(const backward_options<Y>& opts) {
  if (opts.exclusive && (opts.grad_final != nullptr || opts.grad_initial != nullptr))
    fail(opts.grad_final != nullptr ? "options.grad_final" : "options.grad_initial",
         "null with an exclusive forward (its final value is not among its outputs)");
}
}  // namespace detail

/// dL/dx of y = cumsum(x, opts) from the upstream gradient dy alone: a cumsum of dy in the other
/// direction (exclusive as the forward), from dL/dF, whose final value is dL/d(initial). grad_x may be
/// grad_y itself (in place).
template <class Exec, class G, class D>
void cumsum_backward(const Exec& exec, const sequences<G>& grad_y, const sequences<D>& grad_x,
                     const backward_options<ops::accumulator_t<G>>& opts = {}) {
  options<ops::accumulator_t<G>> scan;
  scan.reverse = !opts.reverse;
  scan.exclusive = opts.exclusive;
  scan.initial = opts.grad_final;
  scan.final = opts.grad_initial;
  cumsum(exec, grad_y, grad_x, scan);
}

/// dL/dx of y = cumprod(x, opts) from x, the forward's outputs y and dy: one reverse scan (exact with
/// zeros among x: no division). opts.initial: the forward's initial values (1 where null).
template <class Exec, class T, class Y, class G, class D>
void cumprod_backward(const Exec& exec, const sequences<T>& x, const sequences<Y>& y, const sequences<G>& grad_y,
                      const sequences<D>& grad_x, const backward_options<ops::accumulator_t<T>>& opts = {}) {
  using Acc = ops::accumulator_t<std::remove_const_t<T>>;
  detail::require_inclusive_for_ends(opts);
  options<Acc> scan = adjoint_options(opts);
  if (opts.exclusive) {
    scan.exclusive = true;
    prefix_scan(exec, ops::exclusive_product_adjoint<Acc>{}, parascan::inputs(x, grad_y, y), grad_x, scan);
    return;
  }
  const auto y_prev = parascan::shifted(y, previous_step(opts), std::remove_const_t<Y>(Acc(1)), opts.initial);
  prefix_scan(exec, ops::product_adjoint<Acc>{}, parascan::inputs(x, grad_y, y_prev), grad_x, scan);
}

namespace detail {
template <class Exec, class T, class Y, class G, class D, class Acc>
void extremum_backward(const Exec& exec, const sequences<T>& x, const sequences<Y>& y, const sequences<G>& grad_y,
                       const sequences<D>& grad_x, const backward_options<Acc>& opts) {
  require_inclusive_for_ends(opts);
  options<Acc> scan = adjoint_options(opts);
  if (opts.exclusive) {
    // The extremum through step t is the output one step on; none past the end (NaN: no step equals it).
    const auto y_next = parascan::shifted(y, -previous_step(opts), std::remove_const_t<Y>(limits<Acc>::quiet_NaN()));
    prefix_scan(exec, ops::extremum_adjoint<Acc, true>{}, parascan::inputs(x, y_next, grad_y), grad_x, scan);
    return;
  }
  prefix_scan(exec, ops::extremum_adjoint<Acc>{}, parascan::inputs(x, y, grad_y), grad_x, scan);
}
}  // namespace detail

/// dL/dx of y = cummax(x, opts) (cummin: the same) from x, the forward's outputs y and dy: each dy[u]
/// goes to the latest step t <= u (< u for an exclusive forward) with x[t] == y[u] (the latest NaN where
/// y[u] is NaN), to the initial value where none holds it. One reverse scan.
template <class Exec, class T, class Y, class G, class D>
void cummax_backward(const Exec& exec, const sequences<T>& x, const sequences<Y>& y, const sequences<G>& grad_y,
                     const sequences<D>& grad_x, const backward_options<ops::accumulator_t<T>>& opts = {}) {
  detail::extremum_backward(exec, x, y, grad_y, grad_x, opts);
}
template <class Exec, class T, class Y, class G, class D>
void cummin_backward(const Exec& exec, const sequences<T>& x, const sequences<Y>& y, const sequences<G>& grad_y,
                     const sequences<D>& grad_x, const backward_options<ops::accumulator_t<T>>& opts = {}) {
  detail::extremum_backward(exec, x, y, grad_y, grad_x, opts);
}

}  // namespace parascan
