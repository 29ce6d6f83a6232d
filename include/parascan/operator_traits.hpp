// The operator concept: what the engine needs from a user functor, with defaults for optional members.
//
//   struct my_op {
//     using value_type = ...;                              // required: the scan state
//     PARASCAN_HD value_type identity() const;             // required: the identity state
//     PARASCAN_HD value_type operator()(value_type earlier, value_type later) const;  // required, associative
//     PARASCAN_HD value_type lift(X0 x0, X1 x1, ...) const;  // optional: one element of each input -> state
//     PARASCAN_HD Y project(value_type s) const;            // optional: what is written per step
//     PARASCAN_HD value_type seed(Y y) const;               // optional: a state that acts like output y
//     PARASCAN_HD value_type step(value_type carry, value_type x) const;  // optional: sequential fast path
//     PARASCAN_HD Z emit(value_type s, X0 x0, X1 x1, ...) const;  // optional: what is written, from the
//                                                                  // state and the step's own inputs
//     bool finite(value_type s) const;                     // optional: no inf or NaN in the state
//   };
//
// Defaults: a single input element converts to the state; project and seed are the identity map; step is
// operator(); emit is project(s).
//
// emit(s, x0, x1, ...) is the epilogue of a step: what prefix_scan writes at step t, computed from the scan
// state there (after step t, or before it when exclusive) and the elements of every input at t (the
// values lift took). A fused backward pass writes dL/db[t] = dL/dx[t] + (the reverse scan's state), a
// state-space model y[t] = C[t] h[t]. project() still gives the final states and reduce_scan's results.
//
// step(carry, x) is for loops that walk a sequence one element at a time and only ever project their
// carry or step it further (never combine it with another state): it must give the same project() as
// operator()(carry, x), also after any number of further steps, and may leave the rest of the state
// stale. The linear recurrence's step, {carry.a, x.a * carry.b + x.b}, skips the running product of the
// gates, which costs a multiply per element and, on CPUs, slow subnormal arithmetic once that product
// underflows (it sticks at the smallest subnormal for gates in (0.5, 1)).
//
// finite(s) lets the host backend keep infinities and NaN independent of its thread count: a long
// sequence split among threads combines chunk totals, whose partial products and sums meet inf and 0
// where a sequential loop never forms them (a gate of inf after gates whose product underflowed to 0:
// inf * 0 = NaN where one thread carries inf on). Where a carry, a chunk's total or their combination is
// not finite(), the host walks that chunk from its carry step by step instead, as one thread does. It
// cannot see an overflow that only the step-by-step walk meets (3e38 carried into a chunk of 3e38 and
// -3e38 whose total is 0: inf on one thread, 3e38 on two). Without finite(), every state counts as finite.
#pragma once

#include <type_traits>
#include <utility>

#include "config.hpp"

namespace parascan {
namespace detail {

template <class, class = void>
struct has_value_type : std::false_type {};
template <class Op>
struct has_value_type<Op, std::void_t<typename Op::value_type>> : std::true_type {};

template <class Op, class = void>
struct has_identity : std::false_type {};
template <class Op>
struct has_identity<Op, std::void_t<decltype(std::declval<const Op&>().identity())>> : std::true_type {};

template <class Op, class S, class = void>
struct has_combine : std::false_type {};
template <class Op, class S>
struct has_combine<Op, S, std::void_t<decltype(std::declval<const Op&>()(std::declval<const S&>(),
                                                                          std::declval<const S&>()))>>
    : std::true_type {};

template <class Void, class Op, class... X>
struct has_lift_impl : std::false_type {};
template <class Op, class... X>
struct has_lift_impl<std::void_t<decltype(std::declval<const Op&>().lift(std::declval<X>()...))>, Op, X...>
    : std::true_type {};
template <class Op, class... X>
using has_lift = has_lift_impl<void, Op, X...>;

template <class Op, class S, class = void>
struct has_project : std::false_type {};
template <class Op, class S>
struct has_project<Op, S, std::void_t<decltype(std::declval<const Op&>().project(std::declval<const S&>()))>>
    : std::true_type {};

template <class Op, class Y, class = void>
struct has_seed : std::false_type {};
template <class Op, class Y>
struct has_seed<Op, Y, std::void_t<decltype(std::declval<const Op&>().seed(std::declval<const Y&>()))>>
    : std::true_type {};

template <class Void, class Op, class S, class... X>
struct has_emit_impl : std::false_type {};
template <class Op, class S, class... X>
struct has_emit_impl<std::void_t<decltype(std::declval<const Op&>().emit(std::declval<const S&>(), std::declval<X>()...))>,
                     Op, S, X...> : std::true_type {};

template <class Op, class S, class = void>
struct has_step : std::false_type {};
template <class Op, class S>
struct has_step<Op, S, std::void_t<decltype(std::declval<const Op&>().step(std::declval<const S&>(),
                                                                           std::declval<const S&>()))>>
    : std::true_type {};

template <class Op, class S, class = void>
struct has_finite : std::false_type {};
template <class Op, class S>
struct has_finite<Op, S, std::void_t<decltype(bool(std::declval<const Op&>().finite(std::declval<const S&>())))>>
    : std::true_type {};

}  // namespace detail

/// Compile-time check of the required members, with one readable message per missing member.
template <class Op>
constexpr bool check_operator() {
  static_assert(detail::has_value_type<Op>::value,
                "parascan operator: missing `using value_type = ...;` (the scan state type)");
  if constexpr (detail::has_value_type<Op>::value) {
    using S = typename Op::value_type;
    static_assert(detail::has_identity<Op>::value,
                  "parascan operator: missing `value_type identity() const` (the identity state)");
    static_assert(detail::has_combine<Op, S>::value,
                  "parascan operator: missing `value_type operator()(value_type earlier, value_type later) const`");
    static_assert(std::is_copy_constructible<S>::value && std::is_copy_assignable<S>::value,
                  "parascan operator: value_type must be copyable (it lives in registers)");
  }
  return true;
}

/// The scan state of an operator. An operator without value_type gets a placeholder rather than a
/// substitution failure, so that calls still reach check_operator's readable static_assert instead of
/// "no matching function" (the entry points name options<output_t<Op>> in their signatures).
namespace detail {
struct missing_value_type {};
template <class Op, class = void>
struct state_of {
  using type = missing_value_type;
};
template <class Op>
struct state_of<Op, std::void_t<typename Op::value_type>> {
  using type = typename Op::value_type;
};
}  // namespace detail
template <class Op>
using state_t = typename detail::state_of<Op>::type;

/// Builds a state from one element of each input sequence.
template <class Op, class... X>
PARASCAN_HD PARASCAN_INLINE state_t<Op> lift(const Op& op, const X&... x) {
  if constexpr (detail::has_lift<Op, const X&...>::value) {
    return op.lift(x...);
  } else {
    static_assert(sizeof...(X) == 1,
                  "parascan operator: several inputs need `value_type lift(x0, x1, ...) const`");
    return state_t<Op>(x...);
  }
}

/// What is written for a state: `op.project(s)` when the operator has one, else the state.
template <class Op>
PARASCAN_HD PARASCAN_INLINE auto project(const Op& op, const state_t<Op>& s) {
  if constexpr (detail::has_project<Op, state_t<Op>>::value) {
    return op.project(s);
  } else {
    return s;
  }
}

/// One step of a sequential loop whose carry is only projected or stepped further: `op.step(carry, x)`
/// when the operator has it, else `op(carry, x)`.
template <class Op>
PARASCAN_HD PARASCAN_INLINE state_t<Op> step(const Op& op, const state_t<Op>& carry, const state_t<Op>& x) {
  if constexpr (detail::has_step<Op, state_t<Op>>::value) {
    return op.step(carry, x);
  } else {
    return op(carry, x);
  }
}

/// `op.finite(s)` when the operator has it (no inf or NaN in the state), else true. Host code only.
template <class Op>
inline bool finite_state(const Op& op, const state_t<Op>& s) {
  if constexpr (detail::has_finite<Op, state_t<Op>>::value) {
    return op.finite(s);
  } else {
    return true;
  }
}

/// Whether the operator has an epilogue emit(state, x...) for inputs with elements X...
template <class Op, class... X>
constexpr bool emits = detail::has_emit_impl<void, Op, state_t<Op>, const X&...>::value;

/// What is written at a step from its scan state `s` and its input elements x...: op.emit(s, x...) when
/// the operator has it, else project(s).
template <class Op, class... X>
PARASCAN_HD PARASCAN_INLINE auto emit(const Op& op, const state_t<Op>& s, const X&... x) {
  if constexpr (emits<Op, X...>) {
    return op.emit(s, x...);
  } else {
    return project(op, s);
  }
}

/// The type project() gives: final states, reduce_scan's results, initial states (and what is written
/// per step, for operators without emit).
template <class Op>
using output_t = std::decay_t<decltype(project(std::declval<const Op&>(), std::declval<const state_t<Op>&>()))>;

/// Whether an initial state can be given: the operator has seed(), or its output is its state.
template <class Op>
constexpr bool can_seed = detail::has_seed<Op, output_t<Op>>::value ||
                          std::is_same<output_t<Op>, state_t<Op>>::value;

/// A state that continues a scan whose last output was `y` (for initial states).
template <class Op>
PARASCAN_HD PARASCAN_INLINE state_t<Op> seed(const Op& op, const output_t<Op>& y) {
  static_assert(can_seed<Op>, "parascan operator: an initial state needs `value_type seed(output) const`");
  if constexpr (detail::has_seed<Op, output_t<Op>>::value) {
    return op.seed(y);
  } else {
    return y;
  }
}

/// The state a sequence starts from: its seeded initial output when given, else the identity.
template <class Op>
PARASCAN_HD PARASCAN_INLINE state_t<Op> start_state(const Op& op, const output_t<Op>* initial, index_t sequence) {
  if constexpr (can_seed<Op>) {
    if (initial != nullptr) return seed(op, initial[sequence]);
  }
  return op.identity();
}

}  // namespace parascan
